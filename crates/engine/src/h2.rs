//! HTTP/2 framing for the engine's own HTTP/2 driver (`worker::http2`): frame headers, the client's connection
//! preface and settings, and the HPACK encoding of requests.
//!
//! Requests reach the driver as the HTTP/1.1 bytes the request module serializes (the static request once, or a
//! built request per send); [`RequestHead`] reads them back (httparse, no allocation) and [`write_fields`] turns
//! them into an HPACK header block. A connection's static request is encoded once: its first block inserts every
//! field into the server's dynamic table (literal with incremental indexing), every later block is one indexed
//! field per header, a few bytes per request. Built requests go out as literals without indexing (they differ
//! from request to request).
//!
//! Responses: the client announces an HPACK table of size 0 (`SETTINGS_HEADER_TABLE_SIZE`), so a server keeps
//! nothing in it and every field of a response is a static-table index or a literal. [`response_status`] walks
//! a block for `:status` without decoding anything else: no table, no allocation, no Huffman decoding beyond
//! the status's three digits. (A general HPACK decoder was measured first: `loona-hpack` rebuilds its Huffman
//! table for every string and cost 4x h2load's CPU per request.) A block that refers to the dynamic table is a
//! compression error.

/// The client connection preface (RFC 9113 section 3.4).
pub(crate) const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
pub(crate) const FRAME_HEADER: usize = 9;

pub(crate) const DATA: u8 = 0x0;
pub(crate) const HEADERS: u8 = 0x1;
pub(crate) const RST_STREAM: u8 = 0x3;
pub(crate) const SETTINGS: u8 = 0x4;
pub(crate) const PUSH_PROMISE: u8 = 0x5;
pub(crate) const PING: u8 = 0x6;
pub(crate) const GOAWAY: u8 = 0x7;
pub(crate) const WINDOW_UPDATE: u8 = 0x8;
pub(crate) const CONTINUATION: u8 = 0x9;

pub(crate) const END_STREAM: u8 = 0x1;
pub(crate) const ACK: u8 = 0x1;
pub(crate) const END_HEADERS: u8 = 0x4;
pub(crate) const PADDED: u8 = 0x8;
pub(crate) const PRIORITY_FLAG: u8 = 0x20;

pub(crate) const SETTINGS_HEADER_TABLE_SIZE: u16 = 0x1;
pub(crate) const SETTINGS_ENABLE_PUSH: u16 = 0x2;
pub(crate) const SETTINGS_MAX_CONCURRENT_STREAMS: u16 = 0x3;
pub(crate) const SETTINGS_INITIAL_WINDOW_SIZE: u16 = 0x4;
pub(crate) const SETTINGS_MAX_FRAME_SIZE: u16 = 0x5;

/// The RST_STREAM error code the driver acts on (the request is sent again).
pub(crate) const REFUSED_STREAM: u32 = 0x7;

/// The largest window HTTP/2 allows; the client announces it for every stream and for the connection.
pub(crate) const MAX_WINDOW: u32 = 0x7fff_ffff;
/// The window both sides start with.
pub(crate) const DEFAULT_WINDOW: u32 = 65_535;
pub(crate) const DEFAULT_MAX_FRAME: usize = 16_384;
pub(crate) const DEFAULT_TABLE_SIZE: usize = 4_096;
/// Received bytes after which the driver hands the window back (a WINDOW_UPDATE), for the connection and a stream.
pub(crate) const WINDOW_REFILL: u32 = 1 << 30;

/// A frame's 9-byte header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FrameHeader {
    pub len: usize,
    pub kind: u8,
    pub flags: u8,
    pub stream: u32,
}

impl FrameHeader {
    /// Reads a frame header from the first 9 bytes of `b` (`None` when fewer arrived).
    pub fn parse(b: &[u8]) -> Option<FrameHeader> {
        let h = b.get(..FRAME_HEADER)?;
        Some(FrameHeader {
            len: (usize::from(h[0]) << 16) | (usize::from(h[1]) << 8) | usize::from(h[2]),
            kind: h[3],
            flags: h[4],
            stream: u32::from_be_bytes([h[5], h[6], h[7], h[8]]) & MAX_WINDOW,
        })
    }
}

/// Appends a frame header.
pub(crate) fn put_header(out: &mut Vec<u8>, len: usize, kind: u8, flags: u8, stream: u32) {
    let len = u32::try_from(len).unwrap_or(u32::MAX).to_be_bytes();
    out.extend_from_slice(&[len[1], len[2], len[3], kind, flags]);
    out.extend_from_slice(&(stream & MAX_WINDOW).to_be_bytes());
}

/// The client's first bytes: the preface, SETTINGS (no push, the largest stream window) and a WINDOW_UPDATE that
/// opens the connection's window as far as it goes.
pub(crate) fn put_preface(out: &mut Vec<u8>) {
    out.extend_from_slice(PREFACE);
    let settings =
        [(SETTINGS_HEADER_TABLE_SIZE, 0u32), (SETTINGS_ENABLE_PUSH, 0), (SETTINGS_INITIAL_WINDOW_SIZE, MAX_WINDOW)];
    put_header(out, 6 * settings.len(), SETTINGS, 0, 0);
    for (id, value) in settings {
        out.extend_from_slice(&id.to_be_bytes());
        out.extend_from_slice(&value.to_be_bytes());
    }
    put_window_update(out, 0, MAX_WINDOW - DEFAULT_WINDOW);
}

pub(crate) fn put_window_update(out: &mut Vec<u8>, stream: u32, increment: u32) {
    put_header(out, 4, WINDOW_UPDATE, 0, stream);
    out.extend_from_slice(&(increment & MAX_WINDOW).to_be_bytes());
}

/// An HPACK integer with an `n`-bit prefix (RFC 7541 section 5.1): the one encoder, `hpack`'s.
pub(crate) use crate::hpack::put_int;

/// An HPACK string literal, without Huffman coding.
fn put_string(out: &mut Vec<u8>, s: &[u8]) {
    put_int(out, 0, 7, s.len());
    out.extend_from_slice(s);
}

/// How a header field is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Repr {
    /// Literal, new name, added to the dynamic table.
    Insert,
    /// Literal, new name, not indexed.
    Literal,
}

/// Writes one header field as a literal with a new name (the name lowercased, as HTTP/2 wants).
pub(crate) fn put_field(out: &mut Vec<u8>, repr: Repr, name: &[u8], value: &[u8]) {
    out.push(if repr == Repr::Insert { 0x40 } else { 0x00 });
    put_int(out, 0, 7, name.len());
    out.extend(name.iter().map(u8::to_ascii_lowercase));
    put_string(out, value);
}

/// The size a field takes in a dynamic table (RFC 7541 section 4.1).
pub(crate) fn entry_size(name: &[u8], value: &[u8]) -> usize {
    name.len() + value.len() + 32
}

/// Headers HTTP/2 forbids (connection-specific, RFC 9113 section 8.2.2), and `Host`, which becomes `:authority`.
fn dropped(name: &[u8]) -> bool {
    ["connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade", "host"]
        .iter()
        .any(|d| name.eq_ignore_ascii_case(d.as_bytes()))
}

/// The most header fields of a request the driver can carry over.
const MAX_FIELDS: usize = 128;

/// An HTTP/1.1 request (as the request module serializes it) read back: its fields in HTTP/2's order and where
/// its body lies.
pub(crate) struct RequestHead<'a> {
    fields: [(&'a [u8], &'a [u8]); MAX_FIELDS],
    count: usize,
    /// The body's range within the request bytes.
    pub body: std::ops::Range<usize>,
}

impl<'a> RequestHead<'a> {
    /// Reads one request from the start of `bytes` (`None`: not a complete request of the engine's own making).
    pub fn parse(bytes: &'a [u8], scheme: &'a [u8]) -> Option<RequestHead<'a>> {
        let mut headers = [httparse::EMPTY_HEADER; MAX_FIELDS];
        let mut req = httparse::Request::new(&mut headers);
        let httparse::Status::Complete(head_len) = req.parse(bytes).ok()? else {
            return None;
        };
        let mut fields: [(&'a [u8], &'a [u8]); MAX_FIELDS] = [(&[], &[]); MAX_FIELDS];
        fields[0] = (b":method", req.method?.as_bytes());
        fields[1] = (b":scheme", scheme);
        fields[2] = (b":authority", b"");
        fields[3] = (b":path", req.path?.as_bytes());
        let mut count = 4;
        let mut body_len = 0usize;
        for h in req.headers.iter() {
            if h.name.eq_ignore_ascii_case("host") {
                fields[2].1 = h.value;
            }
            if h.name.eq_ignore_ascii_case("content-length") {
                body_len = std::str::from_utf8(h.value).ok()?.trim().parse().ok()?;
            }
            if dropped(h.name.as_bytes()) || (h.name.eq_ignore_ascii_case("te") && h.value != b"trailers") {
                continue;
            }
            *fields.get_mut(count)? = (h.name.as_bytes(), h.value);
            count += 1;
        }
        if fields[2].1.is_empty() {
            // No Host: the pseudo-header goes (a request without an authority).
            fields.copy_within(3..count, 2);
            count -= 1;
        }
        let end = head_len.checked_add(body_len)?;
        if end > bytes.len() {
            return None;
        }
        Some(RequestHead { fields, count, body: head_len..end })
    }

    pub fn fields(&self) -> &[(&'a [u8], &'a [u8])] {
        &self.fields[..self.count]
    }

    /// The dynamic table space the fields take once inserted.
    pub fn table_size(&self) -> usize {
        self.fields().iter().map(|(n, v)| entry_size(n, v)).sum()
    }
}

/// Writes every field of `head` as `repr`.
pub(crate) fn write_fields(out: &mut Vec<u8>, head: &RequestHead<'_>, repr: Repr) {
    for (name, value) in head.fields() {
        put_field(out, repr, name, value);
    }
}

/// The block that refers to `count` fields inserted in order by one block (the last inserted is index 62).
pub(crate) fn write_indexed(out: &mut Vec<u8>, count: usize) {
    for i in 0..count {
        put_int(out, 0x80, 7, 62 + (count - 1 - i));
    }
}

/// A response header block that cannot be read under a table of size 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CompressionError;

/// Reads an HPACK integer with an `n`-bit prefix at the start of `b`: the value and the bytes it took.
fn get_int(b: &[u8], n: u32) -> Result<(usize, usize), CompressionError> {
    let max = (1usize << n) - 1;
    let first = usize::from(*b.first().ok_or(CompressionError)?) & max;
    if first < max {
        return Ok((first, 1));
    }
    let mut value = max;
    for (i, &byte) in b.iter().enumerate().skip(1) {
        // Nothing in a header block needs more than 28 bits.
        if i > 4 {
            return Err(CompressionError);
        }
        value += usize::from(byte & 0x7f) << (7 * (i - 1));
        if byte & 0x80 == 0 {
            return Ok((value, i + 1));
        }
    }
    Err(CompressionError)
}

/// A string literal at the start of `b`: whether it is Huffman-coded, its bytes, and the bytes it took.
fn get_string(b: &[u8]) -> Result<(bool, &[u8], usize), CompressionError> {
    let huffman = b.first().ok_or(CompressionError)? & 0x80 != 0;
    let (len, n) = get_int(b, 7)?;
    let s = b.get(n..n + len).ok_or(CompressionError)?;
    Ok((huffman, s, n + len))
}

/// The `:status` of the static table's entries 8 to 14.
fn static_status(index: usize) -> Option<u16> {
    match index {
        8 => Some(200),
        9 => Some(204),
        10 => Some(206),
        11 => Some(304),
        12 => Some(400),
        13 => Some(404),
        14 => Some(500),
        _ => None,
    }
}

/// A status code's digits, Huffman-coded (RFC 7541 appendix B: `0`-`2` take 5 bits, `3`-`9` take 6).
fn huffman_digits(s: &[u8]) -> Option<u16> {
    let mut bits = 0u64;
    let mut have = 0u32;
    let mut value = 0u16;
    let mut digits = 0;
    let mut rest = s.iter();
    loop {
        while have < 6 {
            match rest.next() {
                Some(&b) => {
                    bits = (bits << 8) | u64::from(b);
                    have += 8;
                }
                None => break,
            }
        }
        if have < 5 {
            // Padding: the most significant bits of EOS, all ones.
            return (bits & ((1 << have) - 1) == (1 << have) - 1 && digits == 3).then_some(value);
        }
        let five = (bits >> (have - 5)) & 0x1f;
        let (digit, len) = if five <= 2 {
            (five, 5)
        } else if have >= 6 && (0x19..=0x1f).contains(&((bits >> (have - 6)) & 0x3f)) {
            (((bits >> (have - 6)) & 0x3f) - 0x19 + 3, 6)
        } else if five == 0x1f && digits == 3 && have < 8 {
            // Padding of 5 to 7 bits.
            return ((bits & ((1 << have) - 1)) == (1 << have) - 1).then_some(value);
        } else {
            return None;
        };
        if digits == 3 {
            return None;
        }
        value = value * 10 + digit as u16;
        digits += 1;
        have -= len;
        bits &= (1 << have) - 1;
    }
}

fn status_value(huffman: bool, s: &[u8]) -> u16 {
    if huffman {
        huffman_digits(s).unwrap_or(0)
    } else {
        std::str::from_utf8(s).ok().and_then(|v| v.parse().ok()).unwrap_or(0)
    }
}

/// The `:status` of a response header block encoded for a dynamic table of size 0 (0 when it has none, as
/// trailers).
pub(crate) fn response_status(block: &[u8]) -> Result<u16, CompressionError> {
    let mut status = 0;
    let mut i = 0;
    while let Some(&b) = block.get(i) {
        let rest = &block[i..];
        if b & 0x80 != 0 {
            // Indexed: the static table only.
            let (index, n) = get_int(rest, 7)?;
            if index == 0 || index > 61 {
                return Err(CompressionError);
            }
            if let Some(s) = static_status(index) {
                status = s;
            }
            i += n;
        } else if b & 0xe0 == 0x20 {
            // A dynamic table size update: never above the 0 announced.
            let (size, n) = get_int(rest, 5)?;
            if size != 0 {
                return Err(CompressionError);
            }
            i += n;
        } else {
            // A literal: with incremental indexing (6-bit name index; the entry is evicted at once in a table of
            // size 0), without indexing or never indexed (4-bit).
            let prefix = if b & 0xc0 == 0x40 { 6 } else { 4 };
            let (index, mut n) = get_int(rest, prefix)?;
            let is_status = if index == 0 {
                let (huffman, name, used) = get_string(&rest[n..])?;
                n += used;
                !huffman && name == b":status"
            } else if index > 61 {
                return Err(CompressionError);
            } else {
                static_status(index).is_some()
            };
            let (huffman, value, used) = get_string(rest.get(n..).ok_or(CompressionError)?)?;
            if is_status {
                status = status_value(huffman, value);
            }
            i += n + used;
        }
    }
    Ok(status)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(block: &[u8], dec: &mut loona_hpack::Decoder<'_>) -> Vec<(String, String)> {
        let mut out = Vec::new();
        dec.decode_with_cb(block, |n, v| {
            out.push((String::from_utf8_lossy(&n).into_owned(), String::from_utf8_lossy(&v).into_owned()))
        })
        .unwrap();
        out
    }

    #[test]
    fn integers_follow_rfc7541_examples() {
        let mut out = Vec::new();
        put_int(&mut out, 0, 5, 10);
        assert_eq!(out, [10]);
        out.clear();
        put_int(&mut out, 0, 5, 1337);
        assert_eq!(out, [31, 154, 10]);
        out.clear();
        put_int(&mut out, 0x80, 7, 62);
        assert_eq!(out, [0x80 | 62]);
    }

    #[test]
    fn a_request_reads_back_into_pseudo_headers_and_indexes_after_its_first_block() {
        let req = b"POST /v0/entity?id=1 HTTP/1.1\r\nHost: example.com:8080\r\nConnection: close\r\nX-Trace: on\r\n\
                    Content-Length: 3\r\n\r\nabc";
        let head = RequestHead::parse(req, b"https").unwrap();
        assert_eq!(&req[head.body.clone()], b"abc");
        assert_eq!(head.body.end, req.len());
        let mut first = Vec::new();
        write_fields(&mut first, &head, Repr::Insert);
        let mut next = Vec::new();
        write_indexed(&mut next, head.fields().len());
        let mut dec = loona_hpack::Decoder::new();
        let want: Vec<(String, String)> = [
            (":method", "POST"),
            (":scheme", "https"),
            (":authority", "example.com:8080"),
            (":path", "/v0/entity?id=1"),
            ("x-trace", "on"),
            ("content-length", "3"),
        ]
        .iter()
        .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
        .collect();
        assert_eq!(decode(&first, &mut dec), want);
        assert_eq!(decode(&next, &mut dec), want);
        assert_eq!(decode(&next, &mut dec), want);
        assert_eq!(next.len(), want.len());
    }

    #[test]
    fn literals_leave_the_table_alone() {
        let req = b"GET / HTTP/1.1\r\nHost: h\r\n\r\n";
        let head = RequestHead::parse(req, b"http").unwrap();
        let mut block = Vec::new();
        write_fields(&mut block, &head, Repr::Literal);
        let mut dec = loona_hpack::Decoder::new();
        assert_eq!(decode(&block, &mut dec).len(), 4);
        assert!(dec.decode(&[0x80 | 62]).is_err(), "nothing was inserted");
    }

    #[test]
    fn status_is_read_from_static_indexes_and_literals() {
        // Indexed :status 200, then nginx's `server` literal with incremental indexing (Huffman).
        assert_eq!(response_status(&[0x88, 0x76, 0x84, 0xaa, 0x63, 0x55, 0xe7]), Ok(200));
        assert_eq!(response_status(&[0x20, 0x8d]), Ok(404));
        // :status 201 as a literal without indexing, name index 8, raw value.
        assert_eq!(response_status(&[0x08, 0x03, b'2', b'0', b'1']), Ok(201));
        // A new-name literal.
        let mut b = vec![0x00, 0x07];
        b.extend_from_slice(b":status");
        b.extend_from_slice(&[0x03, b'5', b'0', b'3']);
        assert_eq!(response_status(&b), Ok(503));
        // No status (trailers).
        assert_eq!(response_status(&[0x00, 0x01, b'x', 0x01, b'y']), Ok(0));
        // The dynamic table, or a size above 0, is an error.
        assert_eq!(response_status(&[0xbe]), Err(CompressionError));
        assert_eq!(response_status(&[0x3f, 0xe1, 0x1f]), Err(CompressionError));
        assert_eq!(response_status(&[0x48, 0x83]), Err(CompressionError));
    }

    #[test]
    fn huffman_coded_statuses_decode_as_a_full_decoder_does() {
        // Every three-digit code, Huffman-coded with the digits' codes, reads back the same here and in a
        // general Huffman decoder (which checks the codes used).
        let code = |d: u8| if d <= 2 { (u32::from(d), 5) } else { (0x19 + u32::from(d) - 3, 6) };
        let mut general = loona_hpack::huffman::HuffmanDecoder::new();
        for status in 100u16..=999 {
            let (mut bits, mut len) = (0u64, 0u32);
            for d in status.to_string().bytes() {
                let (c, l) = code(d - b'0');
                bits = (bits << l) | u64::from(c);
                len += l;
            }
            let pad = (8 - len % 8) % 8;
            bits = (bits << pad) | ((1 << pad) - 1);
            let bytes: Vec<u8> = (0..(len + pad) / 8).rev().map(|i| (bits >> (8 * i)) as u8).collect();
            assert_eq!(general.decode(&bytes).unwrap(), status.to_string().as_bytes(), "{status}");
            assert_eq!(huffman_digits(&bytes), Some(status), "{status}");
        }
        // RFC 7541 example C.6.1: "302" Huffman-coded is 0x64 0x02.
        assert_eq!(huffman_digits(&[0x64, 0x02]), Some(302));
        // "200" (5+5+5 bits = 15, one bit of padding).
        assert_eq!(huffman_digits(&[0x10, 0x01]), Some(200));
        // "307": 011001 00000 011101 = 17 bits, 7 of padding.
        assert_eq!(huffman_digits(&[0x64, 0x0e, 0xff]), Some(307));
        assert_eq!(huffman_digits(&[0x64]), None);
    }

    #[test]
    fn frame_headers_round_trip() {
        let mut out = Vec::new();
        put_header(&mut out, 70_000, HEADERS, END_HEADERS | END_STREAM, 0x8000_0003);
        assert_eq!(
            FrameHeader::parse(&out),
            Some(FrameHeader { len: 70_000, kind: HEADERS, flags: END_HEADERS | END_STREAM, stream: 3 })
        );
        assert_eq!(FrameHeader::parse(&out[..8]), None);
    }
}
