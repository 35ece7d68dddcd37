//! Extracting a capture's value from a response: a header (optionally narrowed by a regex), a regex over the
//! buffered body, a cookie of this response's `Set-Cookie`, or what a JSON selector found; and whether a value
//! could break the request it goes into.

use super::expect::Re;
use super::json::Lookup;
use loadgate_model::JsonType;
use regex_automata::meta::Cache;

/// The first field named `lower` (lower-case) whose value the regex matches (group 1, or the whole match); with
/// no regex, the first field's value.
pub(crate) fn from_header<'h>(head: &'h [u8], lower: &[u8], re: Option<(&Re, &mut Cache)>) -> Option<&'h [u8]> {
    let mut fields = super::text::fields(head).filter(|(n, _)| super::text::name_is(n, lower)).map(|(_, v)| v);
    match re {
        None => fields.next(),
        Some((re, cache)) => fields.find_map(|v| re.extract(cache, v)),
    }
}

/// A regex over the body: group 1, or the whole match.
pub(crate) fn from_body<'b>(re: &Re, cache: &mut Cache, body: &'b [u8]) -> Option<&'b [u8]> {
    re.extract(cache, body)
}

/// The value of the first `Set-Cookie` of `name` among a response's `Set-Cookie` values.
pub(crate) fn from_set_cookie<'h>(set_cookies: impl Iterator<Item = &'h [u8]>, name: &[u8]) -> Option<&'h [u8]> {
    set_cookies.filter_map(|v| super::cookie::parse(v, 0)).find(|c| c.name == name).map(|c| c.value)
}

/// What a JSON capture takes: a string's decoded content, or another scalar's text; a container is not a value.
pub(crate) fn from_json(l: Lookup<'_>) -> Option<(&[u8], u64)> {
    match l {
        Lookup::Found { ty: JsonType::Object | JsonType::Array, .. } => None,
        Lookup::Found { value, len, .. } => Some((value, len)),
        _ => None,
    }
}

/// Why a captured value cannot go where a request uses it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Unsafe {
    /// CR, LF or NUL: it would end or split a header line.
    InHeader,
    /// A space or a control byte: it would end the request line's target.
    InPath,
}

impl Unsafe {}

/// What a value may not be used in: `(header, path)`, each `Some` when it would break that place. A body takes
/// any value; a query percent-encodes it.
pub(crate) fn unsafe_in(value: &[u8]) -> (Option<Unsafe>, Option<Unsafe>) {
    let header = value.iter().any(|b| matches!(b, b'\r' | b'\n' | 0)).then_some(Unsafe::InHeader);
    let path = value.iter().any(|b| *b <= b' ' || *b == 0x7f).then_some(Unsafe::InPath);
    (header, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_captures() {
        let head = b"HTTP/1.1 201 Created\r\nLocation: /anything/1000\r\nX: a\r\nx: b7\r\n\r\n";
        assert_eq!(from_header(head, b"location", None), Some(&b"/anything/1000"[..]));
        let re = Re::new(r"/anything/(\d+)$").unwrap();
        let mut cache = re.cache();
        assert_eq!(from_header(head, b"location", Some((&re, &mut cache))), Some(&b"1000"[..]));
        let whole = Re::new(r"[a-z]\d").unwrap();
        let mut c2 = whole.cache();
        // The first field the regex matches.
        assert_eq!(from_header(head, b"x", Some((&whole, &mut c2))), Some(&b"b7"[..]));
        assert_eq!(from_header(head, b"missing", None), None);
    }

    #[test]
    fn body_and_cookie_captures() {
        let re = Re::new(r#"name="csrf" value="([^"]+)""#).unwrap();
        let mut cache = re.cache();
        assert_eq!(from_body(&re, &mut cache, br#"<input name="csrf" value="t0k"/>"#), Some(&b"t0k"[..]));
        assert_eq!(from_body(&re, &mut cache, b"nothing"), None);
        // An optional group that did not take part is nothing found.
        let opt = Re::new(r"a(b)?").unwrap();
        let mut c = opt.cache();
        assert_eq!(from_body(&opt, &mut c, b"xa"), None);
        let cookies = [&b"a=1; Path=/"[..], b"session=s3cr3t; HttpOnly"];
        assert_eq!(from_set_cookie(cookies.iter().copied(), b"session"), Some(&b"s3cr3t"[..]));
        assert_eq!(from_set_cookie(cookies.iter().copied(), b"nope"), None);
    }

    #[test]
    fn json_captures_take_scalars() {
        let found = |ty, value: &'static [u8]| Lookup::Found { ty, value, len: value.len() as u64 };
        assert_eq!(from_json(found(JsonType::String, b"tok")), Some((&b"tok"[..], 3)));
        assert_eq!(from_json(found(JsonType::Number, b"1e3")), Some((&b"1e3"[..], 3)));
        assert_eq!(from_json(found(JsonType::Object, b"")), None);
        assert_eq!(from_json(Lookup::NotFound), None);
    }

    #[test]
    fn unsafe_values() {
        assert_eq!(unsafe_in(b"abc"), (None, None));
        assert_eq!(unsafe_in(b"a b"), (None, Some(Unsafe::InPath)));
        assert_eq!(unsafe_in(b"a\r\nX: y"), (Some(Unsafe::InHeader), Some(Unsafe::InPath)));
        assert_eq!(unsafe_in(b"a\0"), (Some(Unsafe::InHeader), Some(Unsafe::InPath)));
        assert_eq!(unsafe_in(b"a\tb"), (None, Some(Unsafe::InPath)));
    }
}
