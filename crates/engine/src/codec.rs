//! HTTP/1.1 response framing, written for a load generator.
//!
//! The parser is fed whatever a read returned (often a shared per-worker scratch buffer) and reports each
//! complete response. It never stores a body: body bytes are only counted down. The only bytes it keeps are a
//! response head split across two reads, in a small buffer that exists only while that happens, so an idle
//! connection costs no buffer at all.
//!
//! Framing follows RFC 9112 section 6: no body for responses to HEAD and for 1xx, 204 and 304; otherwise
//! `Transfer-Encoding: chunked`, then `Content-Length`, then "until the server closes".

use std::mem::MaybeUninit;

/// A head larger than this is a protocol error rather than a reason to keep buffering.
const MAX_HEAD_BYTES: usize = 64 * 1024;
/// Response headers we can look at; more than this is a protocol error.
const MAX_HEADERS: usize = 64;

/// One complete response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Completed {
    pub status: u16,
    /// The server will close the connection after this response (`Connection: close`, HTTP/1.0 without
    /// keep-alive, a body delimited by the close, or 101).
    pub close: bool,
}

/// What sees a response's head and body bytes as the parser frames them (response checks). `()` sees nothing
/// and compiles away, so [`ResponseParser::feed`] is the plain parser.
pub(crate) trait Inspect {
    /// A final (non-1xx) response head, whole: status line and header lines, up to the empty line.
    fn head(&mut self, status: u16, head: &[u8]);
    /// Body bytes, in order, without chunk framing or trailers.
    fn body(&mut self, bytes: &[u8]);
}

impl Inspect for () {
    #[inline(always)]
    fn head(&mut self, _: u16, _: &[u8]) {}
    #[inline(always)]
    fn body(&mut self, _: &[u8]) {}
}

/// A response the parser could not frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ProtocolError(pub String);

/// What the end of the stream meant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Eof {
    /// Between responses: nothing was lost.
    Clean,
    /// It ended a close-delimited body: the response is complete.
    Completed(Completed),
    /// The server closed in the middle of a response.
    MidResponse,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Head,
    /// Bytes of a Content-Length body still to come.
    Fixed(u64),
    Chunked(Chunk),
    /// The body runs until the server closes the connection.
    UntilEof,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Chunk {
    /// Reading the hex size; `digits` counts the digits seen.
    Size {
        value: u64,
        digits: u8,
    },
    /// Skipping chunk extensions up to the end of the size line.
    Extension {
        value: u64,
    },
    /// Saw CR at the end of the size line.
    SizeLf {
        value: u64,
    },
    Data(u64),
    DataCr,
    DataLf,
    /// In the trailer section after the last chunk; `empty` while the current line has no bytes yet.
    Trailer {
        empty: bool,
    },
    TrailerLf {
        empty: bool,
    },
}

/// The incremental response parser of one connection.
#[derive(Debug)]
pub(crate) struct ResponseParser {
    state: State,
    /// A head split across reads; empty (and unallocated) otherwise.
    partial: Vec<u8>,
    /// The head of the response whose body is being read.
    current: Completed,
}

impl Default for ResponseParser {
    fn default() -> Self {
        Self::new()
    }
}

impl ResponseParser {
    pub fn new() -> Self {
        Self { state: State::Head, partial: Vec::new(), current: Completed { status: 0, close: false } }
    }

    /// Forgets any response in progress (the connection is being replaced).
    pub fn reset(&mut self) {
        self.state = State::Head;
        self.partial = Vec::new();
    }

    /// True between responses, with no partial head kept.
    #[cfg(test)]
    pub fn is_idle(&self) -> bool {
        self.state == State::Head && self.partial.is_empty()
    }

    /// Consumes bytes from `data` and stops after at most one complete response. Returns how many bytes were
    /// used and the response if one completed. When no response completes, all of `data` is used.
    ///
    /// `head_request` says whether the response being parsed answers a HEAD request.
    #[inline]
    pub fn feed(&mut self, data: &[u8], head_request: bool) -> Result<(usize, Option<Completed>), ProtocolError> {
        self.feed_with(data, head_request, &mut ())
    }

    /// [`feed`](Self::feed), showing the response's head and body bytes to `inspect`.
    pub fn feed_with<I: Inspect>(
        &mut self,
        data: &[u8],
        head_request: bool,
        inspect: &mut I,
    ) -> Result<(usize, Option<Completed>), ProtocolError> {
        let mut used = 0;
        while used < data.len() {
            let rest = &data[used..];
            match self.state {
                State::Head => {
                    let (n, done) = self.feed_head(rest, head_request, inspect)?;
                    used += n;
                    if done.is_some() {
                        return Ok((used, done));
                    }
                }
                State::Fixed(left) => {
                    let take = left.min(rest.len() as u64);
                    inspect.body(&rest[..take as usize]);
                    used += take as usize;
                    if take == left {
                        self.state = State::Head;
                        return Ok((used, Some(self.current)));
                    }
                    self.state = State::Fixed(left - take);
                }
                State::UntilEof => {
                    inspect.body(rest);
                    return Ok((data.len(), None));
                }
                State::Chunked(chunk) => {
                    let (n, done) = self.feed_chunked(chunk, rest, inspect)?;
                    used += n;
                    if done {
                        self.state = State::Head;
                        return Ok((used, Some(self.current)));
                    }
                }
            }
        }
        Ok((used, None))
    }

    /// The connection reached end of stream.
    pub fn eof(&mut self) -> Eof {
        let outcome = match self.state {
            State::Head if self.partial.is_empty() => Eof::Clean,
            State::UntilEof => Eof::Completed(self.current),
            _ => Eof::MidResponse,
        };
        self.reset();
        outcome
    }

    fn feed_head<I: Inspect>(
        &mut self,
        data: &[u8],
        head_request: bool,
        inspect: &mut I,
    ) -> Result<(usize, Option<Completed>), ProtocolError> {
        let already = self.partial.len();
        let parsed = if already == 0 {
            parse_head(data)?
        } else {
            let room = MAX_HEAD_BYTES.saturating_sub(already);
            let take = data.len().min(room.max(1));
            self.partial.extend_from_slice(&data[..take]);
            parse_head(&self.partial)?
        };
        let Some(head) = parsed else {
            if already == 0 {
                if data.len() > MAX_HEAD_BYTES {
                    return Err(ProtocolError(format!("response head larger than {MAX_HEAD_BYTES} bytes")));
                }
                self.partial.extend_from_slice(data);
            } else if self.partial.len() >= MAX_HEAD_BYTES {
                return Err(ProtocolError(format!("response head larger than {MAX_HEAD_BYTES} bytes")));
            }
            return Ok((data.len(), None));
        };
        let used = head.len - already;
        let status = head.status;
        if (100..200).contains(&status) && status != 101 {
            // An interim response (100 Continue, 103 Early Hints): the final one follows.
            if already > 0 {
                self.partial = Vec::new();
            }
            return Ok((used, None));
        }
        if already > 0 {
            inspect.head(status, &self.partial[..head.len]);
            self.partial = Vec::new();
        } else {
            inspect.head(status, &data[..head.len]);
        }
        let close = head.close || status == 101;
        self.current = Completed { status, close };
        if status == 101 || head_request || status == 204 || status == 304 {
            return Ok((used, Some(self.current)));
        }
        if head.chunked {
            self.state = State::Chunked(Chunk::Size { value: 0, digits: 0 });
            return Ok((used, None));
        }
        match head.content_length {
            Some(0) => Ok((used, Some(self.current))),
            Some(n) => {
                self.state = State::Fixed(n);
                Ok((used, None))
            }
            None => {
                self.current.close = true;
                self.state = State::UntilEof;
                Ok((used, None))
            }
        }
    }

    /// Walks chunked framing; returns the bytes used and whether the body (with its trailers) ended.
    fn feed_chunked<I: Inspect>(
        &mut self,
        mut chunk: Chunk,
        data: &[u8],
        inspect: &mut I,
    ) -> Result<(usize, bool), ProtocolError> {
        let mut i = 0;
        while i < data.len() {
            if let Chunk::Data(left) = chunk {
                let take = left.min((data.len() - i) as u64);
                inspect.body(&data[i..i + take as usize]);
                i += take as usize;
                chunk = if take == left { Chunk::DataCr } else { Chunk::Data(left - take) };
                continue;
            }
            let b = data[i];
            i += 1;
            chunk = match chunk {
                Chunk::Size { value, digits } => match hex_value(b) {
                    Some(d) => {
                        if digits >= 15 {
                            return Err(ProtocolError("chunk size too large".into()));
                        }
                        Chunk::Size { value: value * 16 + u64::from(d), digits: digits + 1 }
                    }
                    None if digits == 0 => return Err(ProtocolError("chunk size is not hexadecimal".into())),
                    None => match b {
                        b'\r' => Chunk::SizeLf { value },
                        b'\n' => end_of_size_line(value),
                        b';' | b' ' | b'\t' => Chunk::Extension { value },
                        _ => return Err(ProtocolError("chunk size is not hexadecimal".into())),
                    },
                },
                Chunk::Extension { value } => match b {
                    b'\r' => Chunk::SizeLf { value },
                    b'\n' => end_of_size_line(value),
                    _ => Chunk::Extension { value },
                },
                Chunk::SizeLf { value } => {
                    if b != b'\n' {
                        return Err(ProtocolError("chunk size line not ended by CRLF".into()));
                    }
                    end_of_size_line(value)
                }
                Chunk::DataCr => match b {
                    b'\r' => Chunk::DataLf,
                    b'\n' => Chunk::Size { value: 0, digits: 0 },
                    _ => return Err(ProtocolError("chunk data not followed by CRLF".into())),
                },
                Chunk::DataLf => {
                    if b != b'\n' {
                        return Err(ProtocolError("chunk data not followed by CRLF".into()));
                    }
                    Chunk::Size { value: 0, digits: 0 }
                }
                Chunk::Trailer { empty } => match b {
                    b'\r' => Chunk::TrailerLf { empty },
                    b'\n' if empty => {
                        self.state = State::Head;
                        return Ok((i, true));
                    }
                    b'\n' => Chunk::Trailer { empty: true },
                    _ => Chunk::Trailer { empty: false },
                },
                Chunk::TrailerLf { empty } => {
                    if b != b'\n' {
                        return Err(ProtocolError("trailer line not ended by CRLF".into()));
                    }
                    if empty {
                        self.state = State::Head;
                        return Ok((i, true));
                    }
                    Chunk::Trailer { empty: true }
                }
                Chunk::Data(_) => chunk,
            };
        }
        self.state = State::Chunked(chunk);
        Ok((i, false))
    }
}

fn end_of_size_line(value: u64) -> Chunk {
    if value == 0 {
        Chunk::Trailer { empty: true }
    } else {
        Chunk::Data(value)
    }
}

fn hex_value(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

struct Head {
    len: usize,
    status: u16,
    close: bool,
    chunked: bool,
    content_length: Option<u64>,
}

/// Parses a response head: `None` while it is incomplete. The common head (CRLF line ends, a reason phrase, at
/// most `MAX_HEADERS` plain `name: value` lines) goes through [`plain_head`], a single pass over the bytes that
/// accepts only what httparse accepts and reads the same fields; anything else (a bare LF, a missing reason,
/// an incomplete head, an error) is left to httparse, which decides.
fn parse_head(buf: &[u8]) -> Result<Option<Head>, ProtocolError> {
    if let Some(head) = plain_head(buf) {
        return head.map(Some);
    }
    let mut headers: [MaybeUninit<httparse::Header<'_>>; MAX_HEADERS] = [const { MaybeUninit::uninit() }; MAX_HEADERS];
    let mut response = httparse::Response::new(&mut []);
    let config = httparse::ParserConfig::default();
    let len = match config.parse_response_with_uninit_headers(&mut response, buf, &mut headers) {
        Ok(httparse::Status::Complete(len)) => len,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(e) => return Err(ProtocolError(format!("invalid response head: {e}"))),
    };
    let mut fields = Fields::new(response.version == Some(0));
    for h in response.headers.iter() {
        fields.header(h.name.as_bytes(), h.value)?;
    }
    Ok(Some(fields.head(len, response.code.unwrap_or(0))))
}

/// What a response's headers say about its framing.
struct Fields {
    close: bool,
    chunked: bool,
    content_length: Option<u64>,
}

impl Fields {
    fn new(http10: bool) -> Self {
        Fields { close: http10, chunked: false, content_length: None }
    }

    fn header(&mut self, name: &[u8], value: &[u8]) -> Result<(), ProtocolError> {
        // The name's length rules out most headers before any byte is compared.
        match name.len() {
            14 if name.eq_ignore_ascii_case(b"content-length") => {
                let n = parse_length(value).ok_or_else(|| {
                    ProtocolError(format!("invalid Content-Length `{}`", String::from_utf8_lossy(value)))
                })?;
                if self.content_length.is_some_and(|m| m != n) {
                    return Err(ProtocolError("conflicting Content-Length headers".into()));
                }
                self.content_length = Some(n);
            }
            17 if name.eq_ignore_ascii_case(b"transfer-encoding") && has_token(value, b"chunked") => {
                self.chunked = true;
            }
            10 if name.eq_ignore_ascii_case(b"connection") => {
                if value.eq_ignore_ascii_case(b"keep-alive") {
                    self.close = false;
                } else if has_token(value, b"close") {
                    self.close = true;
                } else if has_token(value, b"keep-alive") {
                    self.close = false;
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn head(self, len: usize, status: u16) -> Head {
        Head { len, status, close: self.close, chunked: self.chunked, content_length: self.content_length }
    }
}

/// Byte classes of a response head (RFC 9110 section 5.6.2 tokens, and httparse's field-value bytes).
const TOKEN: u8 = 1;
/// A byte of a reason phrase or a field value: HTAB, SP, visible ASCII, obs-text.
const TEXT: u8 = 2;

static CLASS: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        if c == b'\t' || (c >= 0x20 && c != 0x7f) {
            t[b] = TEXT;
        }
        if c.is_ascii_alphanumeric()
            || matches!(
                c,
                b'!' | b'#' | b'$' | b'%' | b'&' | b'\'' | b'*' | b'+' | b'-' | b'.' | b'^' | b'_' | b'`' | b'|' | b'~'
            )
        {
            t[b] |= TOKEN;
        }
        b += 1;
    }
    t
};

/// The common response head in one pass: `Some` only for a complete head that httparse would accept with the
/// same result (status line `HTTP/1.x DDD reason`, CRLF line ends, at most `MAX_HEADERS` `token: value` lines);
/// `None` hands the buffer to httparse.
fn plain_head(buf: &[u8]) -> Option<Result<Head, ProtocolError>> {
    let http10 = match buf.get(..9)? {
        b"HTTP/1.1 " => false,
        b"HTTP/1.0 " => true,
        _ => return None,
    };
    let code = buf.get(9..13)?;
    if !code[..3].iter().all(u8::is_ascii_digit) || code[3] != b' ' {
        return None;
    }
    let status = code[..3].iter().fold(0u16, |n, d| n * 10 + u16::from(d - b'0'));
    let mut i = scan_text(buf, 13)?;
    if buf.get(i..i + 2)? != b"\r\n" {
        return None;
    }
    i += 2;
    let mut fields = Fields::new(http10);
    // A header's meaning is judged as it comes, but (as after httparse) only a complete, well-formed head
    // reports it.
    let mut wrong = None;
    let mut count = 0;
    loop {
        let name_start = i;
        i = scan(buf, i, TOKEN)?;
        if i == name_start {
            // Not a header line: the blank line that ends the head, or something httparse must judge.
            if buf.get(i..i + 2)? != b"\r\n" {
                return None;
            }
            return Some(match wrong {
                Some(e) => Err(e),
                None => Ok(fields.head(i + 2, status)),
            });
        }
        if buf[i] != b':' || count == MAX_HEADERS {
            return None;
        }
        let name = &buf[name_start..i];
        i += 1;
        while matches!(*buf.get(i)?, b' ' | b'\t') {
            i += 1;
        }
        let value_start = i;
        i = scan_text(buf, i)?;
        if buf.get(i..i + 2)? != b"\r\n" {
            return None;
        }
        let value = buf[value_start..i].trim_ascii_end();
        i += 2;
        count += 1;
        if wrong.is_none() {
            wrong = fields.header(name, value).err();
        }
    }
}

/// The first index from `i` on whose byte is not of `class`; `None` when the buffer ends first.
#[inline]
fn scan(buf: &[u8], i: usize, class: u8) -> Option<usize> {
    buf.get(i..)?.iter().position(|&b| CLASS[usize::from(b)] & class == 0).map(|n| i + n)
}

/// `scan(buf, i, TEXT)`, skipping 8 bytes at a time while none of them is a control byte or DEL (HTAB, the
/// only control byte of TEXT, and the CR that ends the line are then looked at one by one).
#[inline]
fn scan_text(buf: &[u8], mut i: usize) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    while let Some(chunk) = buf.get(i..i + 8) {
        let x = u64::from_le_bytes(chunk.try_into().ok()?);
        // Some byte below 0x20, or some byte equal to 0x7f (bit tricks valid for unsigned bytes below 0x80).
        let control = x.wrapping_sub(ONES * 0x20) & !x & HIGH;
        let y = x ^ (ONES * 0x7f);
        let del = y.wrapping_sub(ONES) & !y & HIGH;
        if control | del != 0 {
            break;
        }
        i += 8;
    }
    scan(buf, i, TEXT)
}

/// A Content-Length value: decimal digits, optionally surrounded by whitespace, that fit a u64.
fn parse_length(value: &[u8]) -> Option<u64> {
    let digits = value.trim_ascii();
    if digits.is_empty() {
        return None;
    }
    digits.iter().try_fold(0u64, |n, &b| {
        let d = b.checked_sub(b'0').filter(|d| *d <= 9)?;
        n.checked_mul(10)?.checked_add(u64::from(d))
    })
}

/// Whether a comma-separated header value contains `token` (case-insensitive).
fn has_token(value: &[u8], token: &[u8]) -> bool {
    value.split(|&b| b == b',').any(|part| part.trim_ascii().eq_ignore_ascii_case(token))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What an inspector saw: each response's status, head and body.
    #[derive(Default)]
    struct Seen {
        heads: Vec<(u16, Vec<u8>)>,
        bodies: Vec<Vec<u8>>,
    }

    impl Inspect for Seen {
        fn head(&mut self, status: u16, head: &[u8]) {
            self.heads.push((status, head.to_vec()));
            self.bodies.push(Vec::new());
        }
        fn body(&mut self, bytes: &[u8]) {
            self.bodies.last_mut().expect("a body after its head").extend_from_slice(bytes);
        }
    }

    fn inspect(input: &[u8], step: usize) -> Seen {
        let mut p = ResponseParser::new();
        let mut seen = Seen::default();
        for piece in input.chunks(step) {
            let mut off = 0;
            while off < piece.len() {
                let (n, _) = p.feed_with(&piece[off..], false, &mut seen).unwrap();
                off += n;
            }
        }
        let _ = p.eof();
        seen
    }

    #[test]
    fn the_inspector_sees_heads_and_bodies_without_framing_at_any_split() {
        let input: &[u8] = b"HTTP/1.1 100 Continue\r\n\r\n\
HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Type: text/plain\r\n\r\nhello\
HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n3;ext=1\r\nabc\r\n2\r\nde\r\n0\r\nTrailer: x\r\n\r\n\
HTTP/1.1 204 No Content\r\n\r\n\
HTTP/1.1 500 Oops\r\n\r\nuntil the end";
        for step in 1..=input.len() {
            let seen = inspect(input, step);
            let statuses: Vec<u16> = seen.heads.iter().map(|(s, _)| *s).collect();
            assert_eq!(statuses, vec![200, 201, 204, 500], "step {step}");
            assert!(seen.heads[0].1.starts_with(b"HTTP/1.1 200 OK\r\n") && seen.heads[0].1.ends_with(b"\r\n\r\n"));
            assert_eq!(
                seen.bodies,
                vec![b"hello".to_vec(), b"abcde".to_vec(), vec![], b"until the end".to_vec()],
                "step {step}"
            );
        }
    }

    /// Feeds `input` in pieces of `step` bytes and collects every completed response.
    fn run(input: &[u8], step: usize, head: bool) -> Result<Vec<Completed>, ProtocolError> {
        let mut p = ResponseParser::new();
        let mut out = Vec::new();
        for piece in input.chunks(step) {
            let mut off = 0;
            while off < piece.len() {
                let (n, done) = p.feed(&piece[off..], head)?;
                off += n;
                out.extend(done);
                assert!(n > 0 || done.is_some(), "no progress");
            }
        }
        assert!(p.is_idle(), "parser left mid-response");
        Ok(out)
    }

    fn every_split(input: &[u8], head: bool) -> Vec<Completed> {
        let whole = run(input, input.len(), head).unwrap();
        for step in 1..input.len() {
            assert_eq!(run(input, step, head).unwrap(), whole, "split every {step} bytes");
        }
        whole
    }

    #[test]
    fn content_length_is_digits_only() {
        assert_eq!(parse_length(b"13"), Some(13));
        assert_eq!(parse_length(b" 0 "), Some(0));
        assert_eq!(parse_length(b"18446744073709551615"), Some(u64::MAX));
        for bad in [&b""[..], b" ", b"+5", b"-1", b"1a", b"1 2", b"18446744073709551616"] {
            assert_eq!(parse_length(bad), None, "{}", String::from_utf8_lossy(bad));
        }
        let err = run(b"HTTP/1.1 200 OK\r\nContent-Length: 1x\r\n\r\n", 64, false).unwrap_err();
        assert!(err.0.contains("invalid Content-Length `1x`"), "{}", err.0);
    }

    #[test]
    fn content_length_and_pipelined_responses() {
        let one = b"HTTP/1.1 200 OK\r\nContent-Length: 13\r\n\r\nHello, World!";
        let input = [&one[..], &one[..], b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n"].concat();
        let got = every_split(&input, false);
        let statuses: Vec<u16> = got.iter().map(|c| c.status).collect();
        assert_eq!(statuses, vec![200, 200, 404]);
        assert!(got.iter().all(|c| !c.close));
    }

    #[test]
    fn chunked_with_extensions_and_trailers() {
        let input = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nHello\r\n8\r\n, World!\r\n0\r\nX-Trailer: yes\r\n\r\nHTTP/1.1 201 Created\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n";
        let got = every_split(input, false);
        assert_eq!(got.iter().map(|c| c.status).collect::<Vec<_>>(), vec![200, 201]);
    }

    #[test]
    fn no_body_for_head_204_304_and_interim_responses_are_skipped() {
        let head = every_split(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n", true);
        assert_eq!(head.len(), 1);
        let input = b"HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\nHTTP/1.1 304 Not Modified\r\n\r\nHTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
        let got = every_split(input, false);
        assert_eq!(got.iter().map(|c| c.status).collect::<Vec<_>>(), vec![204, 304, 200]);
    }

    #[test]
    fn connection_close_and_http10_and_eof_delimited() {
        let got = every_split(b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok", false);
        assert!(got[0].close);
        let got = every_split(b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok", false);
        assert!(got[0].close);
        let got = every_split(b"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\nok", false);
        assert!(!got[0].close);

        let mut p = ResponseParser::new();
        let (n, done) = p.feed(b"HTTP/1.1 200 OK\r\n\r\nbody until close", false).unwrap();
        assert_eq!((n, done), (35, None));
        assert_eq!(p.eof(), Eof::Completed(Completed { status: 200, close: true }));
    }

    /// A parsed head's fields (length, status, close, chunked, Content-Length), `Ok(None)` while incomplete.
    type Parsed = Result<Option<(usize, u16, bool, bool, Option<u64>)>, ()>;

    /// httparse alone, as `parse_head` was before the plain path: the reference the plain path must agree with.
    fn httparse_head(buf: &[u8]) -> Parsed {
        let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let mut response = httparse::Response::new(&mut headers);
        let len = match response.parse(buf) {
            Ok(httparse::Status::Complete(len)) => len,
            Ok(httparse::Status::Partial) => return Ok(None),
            Err(_) => return Err(()),
        };
        let mut fields = Fields::new(response.version == Some(0));
        for h in response.headers.iter() {
            fields.header(h.name.as_bytes(), h.value).map_err(|_| ())?;
        }
        let h = fields.head(len, response.code.unwrap_or(0));
        Ok(Some((h.len, h.status, h.close, h.chunked, h.content_length)))
    }

    fn both(buf: &[u8]) -> Parsed {
        let got =
            parse_head(buf).map(|h| h.map(|h| (h.len, h.status, h.close, h.chunked, h.content_length))).map_err(|_| ());
        assert_eq!(got, httparse_head(buf), "{:?}", String::from_utf8_lossy(buf));
        got
    }

    /// The plain path takes the usual heads itself and agrees with httparse on every prefix of them, on every
    /// byte value at every position, and on the unusual shapes it leaves to httparse.
    #[test]
    fn the_plain_head_path_agrees_with_httparse() {
        let nginx = b"HTTP/1.1 200 OK\r\nServer: nginx/1.22.1\r\nDate: Tue, 24 Nov 2026 20:00:00 GMT\r\nContent-Type: text/plain\r\nContent-Length: 13\r\nConnection: keep-alive\r\n\r\nHello, World!";
        assert!(plain_head(nginx).is_some_and(|h| h.is_ok()), "the usual head takes the plain path");
        assert_eq!(both(nginx), Ok(Some((nginx.len() - 13, 200, false, false, Some(13)))));
        let shapes: [&[u8]; 16] = [
            nginx,
            b"HTTP/1.0 404 Not Found\r\nConnection: keep-alive, x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
            b"HTTP/1.1 200\r\nContent-Length: 2\r\n\r\nok",
            b"HTTP/1.1 200 OK\nContent-Length: 2\n\nok",
            b"HTTP/1.1 200 OK\r\nContent-Length:\t 7 \t\r\nX-Empty:\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nContent-Length : 2\r\n\r\n",
            b"HTTP/1.1 200 OK\r\n: no name\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nX-A: 1\r\n folded\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nContent-Length: x\r\nBad Header\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
            b"HTTP/1.1  200 OK\r\n\r\n",
            b"HTTP/1.2 200 OK\r\n\r\n",
            b"HTTP/1.1 20x OK\r\n\r\n",
            b"HTTP/1.1 200 OK \xff\tfine\r\nX-Obs: caf\xe9\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nX-A: a\rb\r\n\r\n",
            b"HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade, close\r\n\r\n",
        ];
        for shape in shapes {
            for end in 0..=shape.len() {
                both(&shape[..end]).ok();
            }
            for at in 0..shape.len() {
                for b in 0..=255u8 {
                    let mut v = shape.to_vec();
                    v[at] = b;
                    both(&v).ok();
                }
            }
        }
        let mut many = b"HTTP/1.1 200 OK\r\n".to_vec();
        for n in 0..=MAX_HEADERS + 1 {
            assert_eq!(both(&[&many[..], b"\r\n"].concat()).is_ok(), n <= MAX_HEADERS, "{n} headers");
            many.extend_from_slice(b"X-N: 1\r\n");
        }
    }

    #[test]
    fn the_word_at_a_time_scan_stops_where_the_byte_scan_does() {
        for b in 0..=255u8 {
            for at in 0..24 {
                let mut v = vec![b'a'; 24];
                v[at] = b;
                for from in 0..24 {
                    assert_eq!(scan_text(&v, from), scan(&v, from, TEXT), "byte {b:#x} at {at} from {from}");
                }
            }
        }
    }

    #[test]
    fn eof_mid_response_and_garbage() {
        let mut p = ResponseParser::new();
        p.feed(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc", false).unwrap();
        assert_eq!(p.eof(), Eof::MidResponse);
        let mut p = ResponseParser::new();
        p.feed(b"HTTP/1.1 200 O", false).unwrap();
        assert_eq!(p.eof(), Eof::MidResponse);
        assert_eq!(ResponseParser::new().eof(), Eof::Clean);

        assert!(ResponseParser::new().feed(b"SSH-2.0-OpenSSH\r\n\r\n", false).is_err());
        assert!(ResponseParser::new().feed(b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n", false).is_err());
        let bad_chunk = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n";
        assert!(ResponseParser::new().feed(bad_chunk, false).is_err());
        let mut huge = b"HTTP/1.1 200 OK\r\n".to_vec();
        while huge.len() <= MAX_HEAD_BYTES {
            huge.extend_from_slice(b"X-Filler: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n");
        }
        let mut p = ResponseParser::new();
        let result = huge.chunks(1000).try_for_each(|c| p.feed(c, false).map(|_| ()));
        assert!(result.is_err());
    }
}
