//! A user's cookie jar (`cookies:`): `Set-Cookie` stores `name=value` under its `Path`, replacing the same name
//! and path; `Max-Age<=0` or an IMF-fixdate `Expires` in the past deletes it; `Domain`, `Secure`, `HttpOnly`
//! and `SameSite` are ignored (one origin). A request whose path path-matches a cookie's (RFC 6265 5.1.4) sends
//! it. At most [`MAX_COOKIES`] cookies and [`MAX_BYTES`] bytes (names, values and paths) per user: beyond, a
//! cookie is dropped and counted. The jar's buffers are reserved once and reused: no allocation per request.

use std::ops::Range;

pub(crate) const MAX_COOKIES: usize = 32;
pub(crate) const MAX_BYTES: usize = 4096;

#[derive(Debug, Clone)]
struct Entry {
    name: Range<u16>,
    value: Range<u16>,
    path: Range<u16>,
}

#[derive(Debug, Default)]
pub(crate) struct Jar {
    /// Names, values and paths, packed.
    bytes: Vec<u8>,
    entries: Vec<Entry>,
    /// Cookies dropped for the limits since the counter was last taken.
    dropped: u64,
    scratch: Vec<u8>,
}

/// What one `Set-Cookie` did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stored {
    Kept,
    Deleted,
    /// Over the jar's limits: counted in `dropped`.
    Dropped,
    /// Not a cookie (no `=`, an empty name).
    Ignored,
}

impl Jar {
    pub(crate) fn new() -> Jar {
        Jar {
            bytes: Vec::with_capacity(MAX_BYTES),
            entries: Vec::with_capacity(MAX_COOKIES),
            dropped: 0,
            scratch: Vec::with_capacity(MAX_BYTES),
        }
    }

    /// Empties the jar for a new user (the capacity stays).
    pub(crate) fn clear(&mut self) {
        self.bytes.clear();
        self.entries.clear();
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    #[cfg(test)]
    /// The cookies dropped since the last call.
    pub(crate) fn take_dropped(&mut self) -> u64 {
        std::mem::take(&mut self.dropped)
    }

    fn get(&self, r: &Range<u16>) -> &[u8] {
        &self.bytes[r.start as usize..r.end as usize]
    }

    #[cfg(test)]
    /// The value of a cookie `name` (any path).
    pub(crate) fn value(&self, name: &[u8]) -> Option<&[u8]> {
        self.entries.iter().find(|e| self.get(&e.name) == name).map(|e| self.get(&e.value))
    }

    /// Applies one `Set-Cookie` field's value, received for `request_path` (its query is ignored) at `now`
    /// (seconds since the Unix epoch).
    pub(crate) fn set(&mut self, set_cookie: &[u8], request_path: &[u8], now: u64) -> Stored {
        let Some(c) = parse(set_cookie, now) else { return Stored::Ignored };
        let path = c.path.unwrap_or_else(|| default_path(request_path));
        let existing = self.entries.iter().position(|e| self.get(&e.name) == c.name && self.get(&e.path) == path);
        if c.delete {
            if let Some(i) = existing {
                self.remove(i);
            }
            return Stored::Deleted;
        }
        let size = c.name.len() + c.value.len() + path.len();
        let freed = existing.map_or(0, |i| {
            let e = &self.entries[i];
            e.name.len() + e.value.len() + e.path.len()
        });
        if self.live_bytes() - freed + size > MAX_BYTES || (existing.is_none() && self.entries.len() == MAX_COOKIES) {
            self.dropped += 1;
            return Stored::Dropped;
        }
        if self.bytes.len() + size > MAX_BYTES {
            if let Some(i) = existing {
                self.entries[i] = Entry { name: 0..0, value: 0..0, path: 0..0 };
            }
            self.compact();
        }
        let start = self.bytes.len() as u16;
        self.bytes.extend_from_slice(c.name);
        let name = start..start + c.name.len() as u16;
        self.bytes.extend_from_slice(c.value);
        let value = name.end..name.end + c.value.len() as u16;
        self.bytes.extend_from_slice(path);
        let path = value.end..value.end + path.len() as u16;
        let entry = Entry { name, value, path };
        match existing {
            // Replacing keeps the cookie's place (its creation order).
            Some(i) => self.entries[i] = entry,
            None => self.entries.push(entry),
        }
        Stored::Kept
    }

    fn live_bytes(&self) -> usize {
        self.entries.iter().map(|e| e.name.len() + e.value.len() + e.path.len()).sum()
    }

    fn remove(&mut self, i: usize) {
        self.entries.remove(i);
    }

    /// Packs the live cookies' bytes to the start of the arena.
    fn compact(&mut self) {
        self.scratch.clear();
        for e in &mut self.entries {
            let moved = |r: &Range<u16>, scratch: &mut Vec<u8>| {
                let start = scratch.len() as u16;
                scratch.extend_from_slice(&self.bytes[r.start as usize..r.end as usize]);
                start..scratch.len() as u16
            };
            e.name = moved(&e.name, &mut self.scratch);
            e.value = moved(&e.value, &mut self.scratch);
            e.path = moved(&e.path, &mut self.scratch);
        }
        std::mem::swap(&mut self.bytes, &mut self.scratch);
    }

    /// Appends the `Cookie` header's value for a request to `request_path` (`a=1; b=2`, in the cookies' order of
    /// creation); false (nothing written) when no cookie matches.
    pub(crate) fn write_header(&self, request_path: &[u8], out: &mut Vec<u8>) -> bool {
        let path = strip_query(request_path);
        let mut any = false;
        for e in &self.entries {
            if path_matches(path, self.get(&e.path)) {
                if any {
                    out.extend_from_slice(b"; ");
                }
                out.extend_from_slice(self.get(&e.name));
                out.push(b'=');
                out.extend_from_slice(self.get(&e.value));
                any = true;
            }
        }
        any
    }
}

/// One parsed `Set-Cookie`.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct SetCookie<'a> {
    pub(crate) name: &'a [u8],
    pub(crate) value: &'a [u8],
    pub(crate) path: Option<&'a [u8]>,
    pub(crate) delete: bool,
}

/// Parses a `Set-Cookie` value; `None` when it holds no `name=value` with a name.
pub(crate) fn parse(field: &[u8], now: u64) -> Option<SetCookie<'_>> {
    let mut parts = field.split(|b| *b == b';');
    let pair = parts.next()?;
    let eq = memchr::memchr(b'=', pair)?;
    let name = super::text::trim(&pair[..eq]);
    let value = super::text::trim(&pair[eq + 1..]);
    if name.is_empty() {
        return None;
    }
    let mut path = None;
    let mut max_age: Option<i64> = None;
    let mut expired = false;
    for attr in parts {
        let (key, val) = match memchr::memchr(b'=', attr) {
            Some(i) => (super::text::trim(&attr[..i]), super::text::trim(&attr[i + 1..])),
            None => (super::text::trim(attr), &b""[..]),
        };
        if key.eq_ignore_ascii_case(b"path") {
            path = if val.first() == Some(&b'/') { Some(val) } else { None };
        } else if key.eq_ignore_ascii_case(b"max-age") {
            let digits = val.strip_prefix(b"-").unwrap_or(val);
            if !digits.is_empty() && digits.iter().all(u8::is_ascii_digit) {
                let n = std::str::from_utf8(digits).ok().and_then(|d| d.parse::<i64>().ok()).unwrap_or(i64::MAX);
                max_age = Some(if val.starts_with(b"-") { -n } else { n });
            }
        } else if key.eq_ignore_ascii_case(b"expires") {
            if let Some(t) = imf_fixdate(val) {
                expired = t <= now;
            }
        }
    }
    // Max-Age wins over Expires (RFC 6265 5.3 step 3).
    let delete = match max_age {
        Some(n) => n <= 0,
        None => expired,
    };
    Some(SetCookie { name, value, path, delete })
}

/// RFC 6265 5.1.4's default path: the request path up to (not including) its last `/`, or `/`.
pub(crate) fn default_path(request_path: &[u8]) -> &[u8] {
    let p = strip_query(request_path);
    if p.first() != Some(&b'/') {
        return b"/";
    }
    match memchr::memrchr(b'/', p) {
        Some(0) | None => b"/",
        Some(i) => &p[..i],
    }
}

fn strip_query(path: &[u8]) -> &[u8] {
    match memchr::memchr2(b'?', b'#', path) {
        Some(i) => &path[..i],
        None => path,
    }
}

/// RFC 6265 5.1.4 path-match.
pub(crate) fn path_matches(request: &[u8], cookie: &[u8]) -> bool {
    request == cookie
        || (request.starts_with(cookie) && (cookie.ends_with(b"/") || request.get(cookie.len()) == Some(&b'/')))
}

/// An IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`) as seconds since the Unix epoch (negative before 1970 are
/// clamped to 0).
pub(crate) fn imf_fixdate(s: &[u8]) -> Option<u64> {
    let s = std::str::from_utf8(s).ok()?;
    let mut it = s.split_ascii_whitespace();
    let _weekday = it.next()?.strip_suffix(',')?;
    let day: u32 = it.next()?.parse().ok()?;
    let month = it.next()?;
    let year: i64 = it.next()?.parse().ok()?;
    let time = it.next()?;
    if it.next()? != "GMT" {
        return None;
    }
    const MONTHS: [&str; 12] = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
    let month = MONTHS.iter().position(|m| m.eq_ignore_ascii_case(month))? as i64 + 1;
    let mut hms = time.split(':').map(|p| p.parse::<i64>().ok());
    let (h, m, sec) = (hms.next()??, hms.next()??, hms.next()??);
    if !(1..=31).contains(&day) || h > 23 || m > 59 || sec > 60 {
        return None;
    }
    // The date through chrono: a day the month does not have is no date.
    let date = chrono::NaiveDate::from_ymd_opt(i32::try_from(year).ok()?, u32::try_from(month).ok()?, day)?;
    let days = date.signed_duration_since(chrono::DateTime::UNIX_EPOCH.date_naive()).num_days();
    Some((days * 86_400 + h * 3600 + m * 60 + sec).max(0) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: u64 = 1_790_000_000; // 2026

    fn header(jar: &Jar, path: &str) -> String {
        let mut out = Vec::new();
        jar.write_header(path.as_bytes(), &mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn parses_set_cookie() {
        let c = parse(b"sid=abc; Path=/app; HttpOnly; Secure; SameSite=Lax; Domain=x.org", NOW).unwrap();
        assert_eq!(c, SetCookie { name: b"sid", value: b"abc", path: Some(b"/app"), delete: false });
        assert!(parse(b"sid=x; Max-Age=0", NOW).unwrap().delete);
        assert!(parse(b"sid=x; max-age=-5", NOW).unwrap().delete);
        assert!(!parse(b"sid=x; Max-Age=60", NOW).unwrap().delete);
        assert!(parse(b"sid=x; Expires=Thu, 01 Jan 1970 00:00:00 GMT", NOW).unwrap().delete);
        assert!(!parse(b"sid=x; Expires=Fri, 01 Jan 2100 00:00:00 GMT", NOW).unwrap().delete);
        // Max-Age wins over Expires.
        assert!(!parse(b"sid=x; Max-Age=60; Expires=Thu, 01 Jan 1970 00:00:00 GMT", NOW).unwrap().delete);
        assert_eq!(parse(b"sid=x; Path=relative", NOW).unwrap().path, None);
        assert_eq!(parse(b" a = b=c ", NOW).unwrap().value, b"b=c");
        assert!(parse(b"novalue", NOW).is_none());
        assert!(parse(b"=x", NOW).is_none());
        assert_eq!(imf_fixdate(b"Sun, 06 Nov 1994 08:49:37 GMT"), Some(784_111_777));
        assert_eq!(imf_fixdate(b"Sun, 06 Nov 1994 08:49:37 PST"), None);
    }

    #[test]
    fn default_paths_and_path_match() {
        assert_eq!(default_path(b"/"), b"/");
        assert_eq!(default_path(b"/login"), b"/");
        assert_eq!(default_path(b"/a/b/c?x=/y"), b"/a/b");
        assert_eq!(default_path(b"*"), b"/");
        assert!(path_matches(b"/a/b", b"/a"));
        assert!(path_matches(b"/a", b"/a"));
        assert!(path_matches(b"/a/", b"/a/"));
        assert!(!path_matches(b"/ab", b"/a"));
        assert!(path_matches(b"/anything", b"/"));
    }

    #[test]
    fn stores_replaces_deletes_and_matches_paths() {
        let mut jar = Jar::new();
        assert_eq!(jar.set(b"a=1", b"/login", NOW), Stored::Kept);
        assert_eq!(jar.set(b"b=2; Path=/api", b"/login", NOW), Stored::Kept);
        assert_eq!(jar.set(b"c=3", b"/api/v1/x", NOW), Stored::Kept); // path /api/v1
        assert_eq!(header(&jar, "/"), "a=1");
        assert_eq!(header(&jar, "/api/items?q=1"), "a=1; b=2");
        assert_eq!(header(&jar, "/api/v1/items"), "a=1; b=2; c=3");
        assert_eq!(header(&jar, "/apix"), "a=1");
        // Replacing keeps the place; another path is another cookie.
        assert_eq!(jar.set(b"a=one", b"/", NOW), Stored::Kept);
        assert_eq!(jar.set(b"a=two; Path=/api", b"/", NOW), Stored::Kept);
        assert_eq!(header(&jar, "/api/x"), "a=one; b=2; a=two");
        assert_eq!(jar.set(b"a=; Max-Age=0", b"/", NOW), Stored::Deleted);
        assert_eq!(header(&jar, "/api/x"), "b=2; a=two");
        assert_eq!(jar.set(b"b=x; Expires=Thu, 01 Jan 1970 00:00:00 GMT; Path=/api", b"/", NOW), Stored::Deleted);
        assert_eq!(header(&jar, "/api/x"), "a=two");
        assert_eq!(jar.value(b"a"), Some(&b"two"[..]));
        let mut out = Vec::new();
        assert!(!jar.write_header(b"/other", &mut out));
        assert!(out.is_empty());
        jar.clear();
        assert_eq!(jar.len(), 0);
    }

    #[test]
    fn limits_drop_and_count() {
        let mut jar = Jar::new();
        for i in 0..MAX_COOKIES {
            assert_eq!(jar.set(format!("c{i}=v").as_bytes(), b"/", NOW), Stored::Kept);
        }
        assert_eq!(jar.set(b"one=more", b"/", NOW), Stored::Dropped);
        // Replacing one at the count limit is fine.
        assert_eq!(jar.set(b"c0=w", b"/", NOW), Stored::Kept);
        assert_eq!(jar.take_dropped(), 1);
        assert_eq!(jar.take_dropped(), 0);
        jar.clear();
        let big = format!("big={}", "x".repeat(3000));
        assert_eq!(jar.set(big.as_bytes(), b"/", NOW), Stored::Kept);
        assert_eq!(jar.set(big.replace("big", "two").as_bytes(), b"/", NOW), Stored::Dropped);
        assert_eq!(jar.take_dropped(), 1);
        // Replacing the big one many times compacts the arena rather than growing it.
        let cap = jar.bytes.capacity();
        for i in 0..50 {
            let v = format!("big={}{i}", "y".repeat(3000));
            assert_eq!(jar.set(v.as_bytes(), b"/", NOW), Stored::Kept);
        }
        assert_eq!(jar.bytes.capacity(), cap);
        assert!(header(&jar, "/").ends_with("y49"));
    }
}
