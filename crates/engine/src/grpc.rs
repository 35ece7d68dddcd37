//! gRPC over HTTP/2 ("gRPC over HTTP2", grpc/grpc's PROTOCOL-HTTP2.md): the length-prefixed message framing,
//! the request's header fields, `grpc-timeout`, and a call's status from `grpc-status` / `grpc-message`.
//!
//! - A message on the wire is a 1-byte compressed flag (0 or 1), a 4-byte big-endian length and the bytes
//!   ([`put_message`]). [`MessageDecoder`] reads messages from DATA payloads in any split, several per frame or
//!   one over many, within a maximum message size; a flag other than 0 or 1, a length over the maximum, or a
//!   message cut off by the end of the stream is a [`GrpcError`]. It holds at most one message's bytes.
//! - [`put_request_fields`] writes a call's HEADERS block (`:method POST`, `:scheme`, `:path /Service/Method`,
//!   `:authority`, `content-type: application/grpc`, `te: trailers`, `grpc-timeout`, `grpc-accept-encoding`,
//!   then the caller's own metadata) with the engine's HPACK encoder.
//! - [`CallStatus`] collects `grpc-status` and `grpc-message` (percent-decoded; an invalid escape is kept as it
//!   came) from the fields of the trailers or of a trailers-only response, and [`CallStatus::code`] settles the
//!   call's [`Code`]: the `grpc-status` sent, else gRPC's HTTP-to-status mapping for a non-200 response, else
//!   INTERNAL (a stream that ended without a status).

use std::time::Duration;

use thiserror::Error;

use crate::hpack::{encode_field, Huffman};

/// The bytes before each message: compressed flag and length.
pub const PREFIX: usize = 5;

/// gRPC's status codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Code {
    Ok = 0,
    Cancelled = 1,
    Unknown = 2,
    InvalidArgument = 3,
    DeadlineExceeded = 4,
    NotFound = 5,
    AlreadyExists = 6,
    PermissionDenied = 7,
    ResourceExhausted = 8,
    FailedPrecondition = 9,
    Aborted = 10,
    OutOfRange = 11,
    Unimplemented = 12,
    Internal = 13,
    Unavailable = 14,
    DataLoss = 15,
    Unauthenticated = 16,
}

const CODES: [Code; 17] = [
    Code::Ok,
    Code::Cancelled,
    Code::Unknown,
    Code::InvalidArgument,
    Code::DeadlineExceeded,
    Code::NotFound,
    Code::AlreadyExists,
    Code::PermissionDenied,
    Code::ResourceExhausted,
    Code::FailedPrecondition,
    Code::Aborted,
    Code::OutOfRange,
    Code::Unimplemented,
    Code::Internal,
    Code::Unavailable,
    Code::DataLoss,
    Code::Unauthenticated,
];

impl Code {
    /// The code with this number; numbers outside 0..=16 are UNKNOWN, as gRPC's clients read them.
    pub fn from_number(n: u32) -> Code {
        usize::try_from(n).ok().and_then(|i| CODES.get(i).copied()).unwrap_or(Code::Unknown)
    }

    /// The number on the wire.
    pub fn number(self) -> u32 {
        self as u32
    }

    /// The code's name as gRPC writes it (`OK`, `NOT_FOUND`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Code::Ok => "OK",
            Code::Cancelled => "CANCELLED",
            Code::Unknown => "UNKNOWN",
            Code::InvalidArgument => "INVALID_ARGUMENT",
            Code::DeadlineExceeded => "DEADLINE_EXCEEDED",
            Code::NotFound => "NOT_FOUND",
            Code::AlreadyExists => "ALREADY_EXISTS",
            Code::PermissionDenied => "PERMISSION_DENIED",
            Code::ResourceExhausted => "RESOURCE_EXHAUSTED",
            Code::FailedPrecondition => "FAILED_PRECONDITION",
            Code::Aborted => "ABORTED",
            Code::OutOfRange => "OUT_OF_RANGE",
            Code::Unimplemented => "UNIMPLEMENTED",
            Code::Internal => "INTERNAL",
            Code::Unavailable => "UNAVAILABLE",
            Code::DataLoss => "DATA_LOSS",
            Code::Unauthenticated => "UNAUTHENTICATED",
        }
    }

    /// The code for a response's HTTP status when it carries no `grpc-status` (gRPC's
    /// http-grpc-status-mapping.md).
    pub fn from_http_status(status: u16) -> Code {
        match status {
            400 => Code::Internal,
            401 => Code::Unauthenticated,
            403 => Code::PermissionDenied,
            404 => Code::Unimplemented,
            429 | 502 | 503 | 504 => Code::Unavailable,
            _ => Code::Unknown,
        }
    }
}

/// Broken gRPC framing.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum GrpcError {
    #[error("a gRPC message of {len} bytes, over the {max} allowed")]
    MessageTooLarge { len: usize, max: usize },
    #[error("a gRPC message's compressed flag is {0}, neither 0 nor 1")]
    BadFlag(u8),
    #[error("the stream ended inside a gRPC message ({have} of {want} bytes)")]
    Truncated { have: usize, want: usize },
}

/// Appends one message: its prefix and bytes. A message over 4 GiB cannot be framed.
pub fn put_message(out: &mut Vec<u8>, message: &[u8], compressed: bool) -> Result<(), GrpcError> {
    let len = u32::try_from(message.len())
        .map_err(|_| GrpcError::MessageTooLarge { len: message.len(), max: u32::MAX as usize })?;
    out.push(u8::from(compressed));
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(message);
    Ok(())
}

/// A decoded message, borrowed until the callback returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Message<'a> {
    pub compressed: bool,
    pub bytes: &'a [u8],
}

/// Reads length-prefixed messages from a stream's DATA payloads. See the [module documentation](self).
#[derive(Debug, Clone)]
pub struct MessageDecoder {
    max: usize,
    prefix: [u8; PREFIX],
    have_prefix: usize,
    /// The current message's bytes so far (only while it spans payloads).
    body: Vec<u8>,
    want: usize,
    compressed: bool,
    failed: Option<GrpcError>,
    messages: u64,
}

impl MessageDecoder {
    /// A decoder that refuses messages over `max` bytes (gRPC's default receive limit is 4 MiB).
    pub fn new(max: usize) -> MessageDecoder {
        MessageDecoder {
            max,
            prefix: [0; PREFIX],
            have_prefix: 0,
            body: Vec::new(),
            want: 0,
            compressed: false,
            failed: None,
            messages: 0,
        }
    }

    /// Messages decoded so far.
    pub fn messages(&self) -> u64 {
        self.messages
    }

    /// Feeds a DATA payload; `sink` gets each message as it completes. An error stays.
    pub fn feed(&mut self, mut bytes: &[u8], sink: &mut impl FnMut(Message<'_>)) -> Result<(), GrpcError> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        loop {
            if self.have_prefix < PREFIX {
                if bytes.is_empty() {
                    return Ok(());
                }
                let n = (PREFIX - self.have_prefix).min(bytes.len());
                self.prefix[self.have_prefix..self.have_prefix + n].copy_from_slice(&bytes[..n]);
                self.have_prefix += n;
                bytes = &bytes[n..];
                if self.have_prefix < PREFIX {
                    return Ok(());
                }
                let flag = self.prefix[0];
                if flag > 1 {
                    return Err(self.fail(GrpcError::BadFlag(flag)));
                }
                let len = u32::from_be_bytes([self.prefix[1], self.prefix[2], self.prefix[3], self.prefix[4]]);
                let len = usize::try_from(len).unwrap_or(usize::MAX);
                if len > self.max {
                    return Err(self.fail(GrpcError::MessageTooLarge { len, max: self.max }));
                }
                self.compressed = flag == 1;
                self.want = len;
                self.body.clear();
            }
            if self.body.is_empty() && bytes.len() >= self.want {
                // The whole message is in this payload: handed out without a copy.
                let (message, rest) = bytes.split_at(self.want);
                self.done(message, sink);
                bytes = rest;
                continue;
            }
            if bytes.is_empty() {
                return Ok(());
            }
            let n = (self.want - self.body.len()).min(bytes.len());
            self.body.extend_from_slice(&bytes[..n]);
            bytes = &bytes[n..];
            if self.body.len() == self.want {
                let body = std::mem::take(&mut self.body);
                self.done(&body, sink);
                self.body = body;
                self.body.clear();
            }
        }
    }

    fn done(&mut self, message: &[u8], sink: &mut impl FnMut(Message<'_>)) {
        self.have_prefix = 0;
        self.messages += 1;
        sink(Message { compressed: self.compressed, bytes: message });
    }

    fn fail(&mut self, e: GrpcError) -> GrpcError {
        self.failed = Some(e.clone());
        e
    }

    /// The stream ended: an error when it ended inside a message.
    pub fn finish(&self) -> Result<(), GrpcError> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        match self.have_prefix {
            0 => Ok(()),
            PREFIX => Err(GrpcError::Truncated { have: PREFIX + self.body.len(), want: PREFIX + self.want }),
            n => Err(GrpcError::Truncated { have: n, want: PREFIX }),
        }
    }
}

/// Appends a `grpc-timeout` value (`TimeoutValue TimeoutUnit`: at most 8 digits, `n u m S M H`): the finest
/// unit that holds the duration, rounded up, so the server never gets less time than asked.
pub fn put_timeout(out: &mut Vec<u8>, d: Duration) {
    const MAX: u128 = 99_999_999;
    let ns = d.as_nanos();
    let units: [(u128, u8); 6] = [
        (1, b'n'),
        (1_000, b'u'),
        (1_000_000, b'm'),
        (1_000_000_000, b'S'),
        (60_000_000_000, b'M'),
        (3_600_000_000_000, b'H'),
    ];
    for (per, unit) in units {
        let v = ns.div_ceil(per);
        if v <= MAX {
            out.extend_from_slice(v.to_string().as_bytes());
            out.push(unit);
            return;
        }
    }
    out.extend_from_slice(b"99999999H");
}

/// Reads a `grpc-timeout` value (`None` when it is not one).
pub fn parse_timeout(v: &[u8]) -> Option<Duration> {
    let (&unit, digits) = v.split_last()?;
    if digits.is_empty() || digits.len() > 8 || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let n: u64 = std::str::from_utf8(digits).ok()?.parse().ok()?;
    Some(match unit {
        b'n' => Duration::from_nanos(n),
        b'u' => Duration::from_micros(n),
        b'm' => Duration::from_millis(n),
        b'S' => Duration::from_secs(n),
        b'M' => Duration::from_secs(n * 60),
        b'H' => Duration::from_secs(n * 3600),
        _ => return None,
    })
}

/// What a call's HEADERS carry besides the caller's metadata.
#[derive(Debug, Clone, Copy)]
pub struct CallHead<'a> {
    /// `http` or `https`.
    pub scheme: &'a [u8],
    pub authority: &'a [u8],
    /// `/package.Service/Method`.
    pub path: &'a [u8],
    pub timeout: Option<Duration>,
    /// `grpc-accept-encoding` (e.g. `gzip`), when the client takes compressed messages.
    pub accept_encoding: Option<&'a [u8]>,
    /// `grpc-encoding` of the request's messages, when they are compressed.
    pub encoding: Option<&'a [u8]>,
}

/// Appends a call's HEADERS block: the pseudo-headers, gRPC's fields, then `metadata` (names lowercase).
pub fn put_request_fields(out: &mut Vec<u8>, head: &CallHead<'_>, metadata: &[(&[u8], &[u8])]) {
    let h = Huffman::Shorter;
    encode_field(out, b":method", b"POST", false, h);
    encode_field(out, b":scheme", head.scheme, false, h);
    encode_field(out, b":path", head.path, false, h);
    encode_field(out, b":authority", head.authority, false, h);
    encode_field(out, b"content-type", b"application/grpc", false, h);
    encode_field(out, b"te", b"trailers", false, h);
    if let Some(t) = head.timeout {
        let mut v = Vec::with_capacity(9);
        put_timeout(&mut v, t);
        encode_field(out, b"grpc-timeout", &v, false, h);
    }
    if let Some(e) = head.encoding {
        encode_field(out, b"grpc-encoding", e, false, h);
    }
    if let Some(e) = head.accept_encoding {
        encode_field(out, b"grpc-accept-encoding", e, false, h);
    }
    for (n, v) in metadata {
        encode_field(out, n, v, *n == b"authorization", h);
    }
}

/// Percent-decodes a `grpc-message` into `out`; an escape that is not `%` and two hex digits is kept as it came.
pub fn percent_decode(v: &[u8], out: &mut Vec<u8>) {
    let hex = |b: u8| (b as char).to_digit(16).map(|d| d as u8);
    let mut i = 0;
    while i < v.len() {
        if v[i] == b'%' {
            if let (Some(hi), Some(lo)) = (v.get(i + 1).and_then(|&b| hex(b)), v.get(i + 2).and_then(|&b| hex(b))) {
                out.push(hi << 4 | lo);
                i += 3;
                continue;
            }
        }
        out.push(v[i]);
        i += 1;
    }
}

/// A call's status as its header fields tell it: feed it every field of the response's HEADERS and trailers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CallStatus {
    /// `:status` of the response headers (0 until seen).
    pub http_status: u16,
    /// `grpc-status` as sent (a number outside 0..=16, or not a number, reads as UNKNOWN's 2).
    pub grpc_status: Option<u32>,
    /// `grpc-message`, percent-decoded.
    pub message: Vec<u8>,
    /// The message's bytes were cut at this many (a server's message is not unbounded).
    pub max_message: usize,
}

impl CallStatus {
    /// A status that keeps at most `max_message` bytes of `grpc-message`.
    pub fn new(max_message: usize) -> CallStatus {
        CallStatus { max_message, ..CallStatus::default() }
    }

    /// Reads one field.
    pub fn see(&mut self, name: &[u8], value: &[u8]) {
        match name {
            b":status" => self.http_status = std::str::from_utf8(value).ok().and_then(|s| s.parse().ok()).unwrap_or(0),
            b"grpc-status" => {
                self.grpc_status = Some(
                    std::str::from_utf8(value)
                        .ok()
                        .and_then(|s| s.parse::<u32>().ok())
                        .unwrap_or(Code::Unknown.number()),
                )
            }
            b"grpc-message" => {
                self.message.clear();
                percent_decode(value, &mut self.message);
                self.message.truncate(self.max_message);
            }
            _ => {}
        }
    }

    /// The call's code: `grpc-status` when sent; otherwise from a non-200 HTTP status; otherwise INTERNAL (the
    /// stream ended without a status).
    pub fn code(&self) -> Code {
        match (self.grpc_status, self.http_status) {
            (Some(n), _) => Code::from_number(n),
            (None, 200) => Code::Internal,
            (None, s) => Code::from_http_status(s),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hpack::Decoder;
    use proptest::prelude::*;

    type Decoded = (Vec<(bool, Vec<u8>)>, Result<(), GrpcError>);

    fn decode_all(pieces: &[&[u8]], max: usize) -> Decoded {
        let mut d = MessageDecoder::new(max);
        let mut out = Vec::new();
        for p in pieces {
            if let Err(e) = d.feed(p, &mut |m| out.push((m.compressed, m.bytes.to_vec()))) {
                return (out, Err(e));
            }
        }
        let end = d.finish();
        (out, end)
    }

    #[test]
    fn messages_round_trip_several_per_payload_and_split_over_payloads() {
        let mut wire = Vec::new();
        put_message(&mut wire, b"hello", false).unwrap();
        put_message(&mut wire, b"", false).unwrap();
        put_message(&mut wire, b"zipped", true).unwrap();
        assert_eq!(&wire[..5], [0, 0, 0, 0, 5]);
        let want = vec![(false, b"hello".to_vec()), (false, Vec::new()), (true, b"zipped".to_vec())];
        assert_eq!(decode_all(&[&wire], 100), (want.clone(), Ok(())));
        for cut in 0..=wire.len() {
            for cut2 in cut..=wire.len() {
                let got = decode_all(&[&wire[..cut], &wire[cut..cut2], &wire[cut2..]], 100);
                assert_eq!(got, (want.clone(), Ok(())), "{cut} {cut2}");
            }
        }
    }

    #[test]
    fn a_length_over_the_maximum_is_an_error_before_any_byte_is_kept() {
        let (out, end) = decode_all(&[&[0, 0, 0x10, 0, 0]], 1024);
        assert!(out.is_empty());
        assert_eq!(end, Err(GrpcError::MessageTooLarge { len: 0x100000, max: 1024 }));
    }

    #[test]
    fn a_flag_other_than_0_or_1_is_an_error() {
        assert_eq!(decode_all(&[&[2, 0, 0, 0, 0]], 10).1, Err(GrpcError::BadFlag(2)));
    }

    #[test]
    fn a_stream_that_ends_inside_a_message_is_truncated() {
        assert_eq!(decode_all(&[&[0, 0, 0]], 10).1, Err(GrpcError::Truncated { have: 3, want: 5 }));
        assert_eq!(decode_all(&[&[0, 0, 0, 0, 4, 1]], 10).1, Err(GrpcError::Truncated { have: 6, want: 9 }));
    }

    #[test]
    fn grpc_timeout_takes_the_finest_unit_with_at_most_8_digits_rounded_up() {
        let t = |d: Duration| {
            let mut v = Vec::new();
            put_timeout(&mut v, d);
            String::from_utf8(v).unwrap()
        };
        assert_eq!(t(Duration::from_nanos(0)), "0n");
        assert_eq!(t(Duration::from_millis(50)), "50000000n");
        assert_eq!(t(Duration::from_millis(100)), "100000u");
        assert_eq!(t(Duration::from_nanos(100_000_001)), "100001u");
        assert_eq!(t(Duration::from_secs(1000)), "1000000m");
        assert_eq!(t(Duration::from_secs(200_000)), "200000S");
        assert_eq!(t(Duration::from_secs(u64::MAX)), "99999999H");
        assert_eq!(parse_timeout(b"1500m"), Some(Duration::from_millis(1500)));
        assert_eq!(parse_timeout(b"2H"), Some(Duration::from_secs(7200)));
        assert_eq!(parse_timeout(b"123456789n"), None);
        assert_eq!(parse_timeout(b"m"), None);
        assert_eq!(parse_timeout(b"1x"), None);
    }

    #[test]
    fn the_request_block_carries_what_a_grpc_call_needs() {
        let mut out = Vec::new();
        let head = CallHead {
            scheme: b"http",
            authority: b"127.0.0.1:50051",
            path: b"/helloworld.Greeter/SayHello",
            timeout: Some(Duration::from_millis(1500)),
            accept_encoding: Some(b"gzip"),
            encoding: None,
        };
        put_request_fields(&mut out, &head, &[(b"x-user", b"7")]);
        let fields = Decoder::new(4096, 1 << 16).decode_to_vec(&out).unwrap();
        let s = |v: &[u8]| String::from_utf8(v.to_vec()).unwrap();
        let got: Vec<(String, String)> = fields.iter().map(|(n, v)| (s(n), s(v))).collect();
        let want: Vec<(String, String)> = [
            (":method", "POST"),
            (":scheme", "http"),
            (":path", "/helloworld.Greeter/SayHello"),
            (":authority", "127.0.0.1:50051"),
            ("content-type", "application/grpc"),
            ("te", "trailers"),
            ("grpc-timeout", "1500000u"),
            ("grpc-accept-encoding", "gzip"),
            ("x-user", "7"),
        ]
        .iter()
        .map(|(n, v)| (n.to_string(), v.to_string()))
        .collect();
        assert_eq!(got, want);
    }

    #[test]
    fn grpc_message_is_percent_decoded_and_a_bad_escape_is_kept() {
        let mut out = Vec::new();
        percent_decode(b"not%20found%3A %E2%82%AC %zz %4", &mut out);
        assert_eq!(out, "not found: \u{20ac} %zz %4".as_bytes());
    }

    #[test]
    fn a_trailers_only_not_found_reads_its_code_and_message() {
        let mut s = CallStatus::new(1024);
        for (n, v) in [
            (&b":status"[..], &b"200"[..]),
            (b"content-type", b"application/grpc"),
            (b"grpc-status", b"5"),
            (b"grpc-message", b"no%20such%20user"),
        ] {
            s.see(n, v);
        }
        assert_eq!(s.code(), Code::NotFound);
        assert_eq!(s.code().name(), "NOT_FOUND");
        assert_eq!(s.message, b"no such user");
    }

    #[test]
    fn without_grpc_status_the_http_status_maps_and_a_200_is_internal() {
        let code = |http: u16| {
            let mut s = CallStatus::new(0);
            s.see(b":status", http.to_string().as_bytes());
            s.code()
        };
        assert_eq!(code(200), Code::Internal);
        assert_eq!(code(404), Code::Unimplemented);
        assert_eq!(code(503), Code::Unavailable);
        assert_eq!(code(401), Code::Unauthenticated);
        assert_eq!(code(500), Code::Unknown);
        let mut s = CallStatus::new(0);
        s.see(b"grpc-status", b"99");
        assert_eq!(s.code(), Code::Unknown);
        s.see(b"grpc-status", b"x");
        assert_eq!(s.code(), Code::Unknown);
    }

    #[test]
    fn every_code_has_its_number_and_name() {
        for (i, c) in CODES.iter().enumerate() {
            assert_eq!(Code::from_number(i as u32), *c);
            assert_eq!(c.number(), i as u32);
        }
        assert_eq!(Code::Ok.name(), "OK");
        assert_eq!(Code::Unauthenticated.name(), "UNAUTHENTICATED");
        assert_eq!(Code::from_number(17), Code::Unknown);
    }

    proptest! {
        #[test]
        fn random_bytes_in_any_split_never_panic_and_give_the_same_messages(bytes in proptest::collection::vec(any::<u8>(), 0..300), cut in any::<usize>()) {
            let c = cut % (bytes.len() + 1);
            let whole = decode_all(&[&bytes], 64);
            let split = decode_all(&[&bytes[..c], &bytes[c..]], 64);
            prop_assert_eq!(whole, split);
        }
    }
}
