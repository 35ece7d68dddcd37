//! Request bytes, serialized once per phase.

use loadgate_plan::RequestPlan;

/// A phase's request, serialized once, and repeated so that a write of `n` pipelined requests starting at any
/// byte offset is a single contiguous slice.
#[derive(Debug)]
pub(crate) struct RequestBytes {
    /// The request `copies` times over.
    repeated: Box<[u8]>,
    /// The length of one request.
    len: usize,
    /// The method is HEAD: responses carry no body.
    pub head: bool,
}

impl RequestBytes {
    /// `pipeline` is the most requests ever unwritten on one connection at once.
    pub fn new(one: Vec<u8>, pipeline: usize, head: bool) -> Self {
        let copies = pipeline.max(1) + 1;
        let len = one.len();
        Self { repeated: one.repeat(copies).into_boxed_slice(), len, head }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    /// The next bytes to write: `unwritten` bytes of the endless stream of requests, starting `offset` bytes
    /// into a request (`offset < len`). May return fewer bytes than asked; never more.
    pub fn slice(&self, offset: usize, unwritten: usize) -> &[u8] {
        let end = self.repeated.len().min(offset + unwritten);
        &self.repeated[offset.min(end)..end]
    }
}

/// Why a request cannot be put on the wire.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct InvalidRequest(pub String);

/// Serializes the request: request line, `Host` (unless the plan sets one), the plan's headers in order,
/// `Content-Length` for a body (unless set), and `Connection: close` when connections are not kept alive
/// (unless the plan sets `Connection`).
pub(crate) fn serialize(plan: &RequestPlan, host: &str, keep_alive: bool) -> Result<Vec<u8>, InvalidRequest> {
    let method = plan.method.trim();
    if method.is_empty() || !method.bytes().all(is_token_byte) {
        return Err(InvalidRequest(format!("the method `{}` is not a valid HTTP token", plan.method)));
    }
    let path = if plan.path.is_empty() { "/" } else { plan.path.as_str() };
    if path.bytes().any(|b| b <= b' ' || b == 0x7f) {
        return Err(InvalidRequest(format!("the path `{path}` contains spaces or control characters")));
    }
    check_value("Host", host)?;
    let mut has_host = false;
    let mut has_length = false;
    let mut has_connection = false;
    for (name, value) in &plan.headers {
        if name.is_empty() || !name.bytes().all(is_token_byte) {
            return Err(InvalidRequest(format!("the header name `{name}` is not a valid HTTP token")));
        }
        check_value(name, value)?;
        has_host |= name.eq_ignore_ascii_case("host");
        has_length |= name.eq_ignore_ascii_case("content-length") || name.eq_ignore_ascii_case("transfer-encoding");
        has_connection |= name.eq_ignore_ascii_case("connection");
    }

    let mut out = Vec::with_capacity(64 + path.len() + plan.body.as_ref().map_or(0, String::len));
    out.extend_from_slice(method.as_bytes());
    out.push(b' ');
    out.extend_from_slice(path.as_bytes());
    out.extend_from_slice(b" HTTP/1.1\r\n");
    if !has_host {
        out.extend_from_slice(b"Host: ");
        out.extend_from_slice(host.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    for (name, value) in &plan.headers {
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(value.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    if let Some(body) = &plan.body {
        if !has_length {
            out.extend_from_slice(format!("Content-Length: {}\r\n", body.len()).as_bytes());
        }
    }
    if !keep_alive && !has_connection {
        out.extend_from_slice(b"Connection: close\r\n");
    }
    out.extend_from_slice(b"\r\n");
    if let Some(body) = &plan.body {
        out.extend_from_slice(body.as_bytes());
    }
    Ok(out)
}

fn check_value(name: &str, value: &str) -> Result<(), InvalidRequest> {
    if value.bytes().any(|b| b == b'\r' || b == b'\n' || b == 0) {
        return Err(InvalidRequest(format!("the value of header `{name}` contains a line break or NUL")));
    }
    Ok(())
}

/// RFC 9110 `tchar`.
fn is_token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(method: &str, headers: &[(&str, &str)], body: Option<&str>) -> RequestPlan {
        RequestPlan {
            method: method.into(),
            path: "/p?q=1".into(),
            headers: headers.iter().map(|(k, v)| ((*k).into(), (*v).into())).collect(),
            body: body.map(Into::into),
            dynamic: None,
        }
    }

    #[test]
    fn serializes_in_order_with_host_length_and_close() {
        let bytes =
            serialize(&plan("PUT", &[("X-A", "1"), ("Accept", "*/*")], Some("hello")), "h:8080", false).unwrap();
        assert_eq!(
            String::from_utf8(bytes).unwrap(),
            "PUT /p?q=1 HTTP/1.1\r\nHost: h:8080\r\nX-A: 1\r\nAccept: */*\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello"
        );
        let bytes = serialize(&plan("GET", &[("host", "other")], None), "h", true).unwrap();
        assert_eq!(String::from_utf8(bytes).unwrap(), "GET /p?q=1 HTTP/1.1\r\nhost: other\r\n\r\n");
    }

    #[test]
    fn rejects_header_injection() {
        assert!(serialize(&plan("GET", &[("X", "a\r\nEvil: 1")], None), "h", true).is_err());
        assert!(serialize(&plan("GE T", &[], None), "h", true).is_err());
        assert!(serialize(&plan("GET", &[("Bad Name", "v")], None), "h", true).is_err());
    }

    #[test]
    fn slices_cover_any_offset() {
        let r = RequestBytes::new(b"abc".to_vec(), 2, false);
        assert_eq!(r.slice(0, 6), b"abcabc");
        assert_eq!(r.slice(2, 4), b"cabc");
        assert_eq!(r.slice(2, 100), b"cabcabc");
    }
}
