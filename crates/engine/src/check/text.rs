//! Streaming body operators (`body_contains`, `body_equals`, `body_size`) and the header lines of a response
//! head, for header checks and header captures.

use memchr::memmem::Finder;

/// `body_contains`: a match may straddle chunks, so the last `needle.len() - 1` bytes are carried over.
#[derive(Debug, Default)]
pub(crate) struct Contains {
    found: bool,
    carry: Vec<u8>,
}

impl Contains {
    pub(crate) fn reset(&mut self, finder: &Finder<'_>) {
        self.found = finder.needle().is_empty();
        self.carry.clear();
    }

    pub(crate) fn found(&self) -> bool {
        self.found
    }

    pub(crate) fn feed(&mut self, finder: &Finder<'_>, chunk: &[u8]) {
        if self.found || chunk.is_empty() {
            return;
        }
        if finder.find(chunk).is_some() {
            self.found = true;
            return;
        }
        let k = finder.needle().len() - 1;
        if k == 0 {
            return;
        }
        if !self.carry.is_empty() {
            let kept = self.carry.len();
            self.carry.extend_from_slice(&chunk[..k.min(chunk.len())]);
            if finder.find(&self.carry).is_some() {
                self.found = true;
                return;
            }
            self.carry.truncate(kept);
        }
        if chunk.len() >= k {
            self.carry.clear();
            self.carry.extend_from_slice(&chunk[chunk.len() - k..]);
        } else {
            self.carry.extend_from_slice(chunk);
            let excess = self.carry.len().saturating_sub(k);
            self.carry.drain(..excess);
        }
    }
}

/// `body_equals`: the body compared as it streams; the first differing byte decides.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Equals {
    /// Body bytes compared so far (all equal while `differs_at` is `None`).
    pos: u64,
    differs_at: Option<u64>,
}

impl Equals {
    pub(crate) fn feed(&mut self, expected: &[u8], chunk: &[u8]) {
        if self.differs_at.is_some() {
            return;
        }
        let start = (self.pos as usize).min(expected.len());
        let exp = &expected[start..];
        let n = chunk.len().min(exp.len());
        if let Some(i) = chunk[..n].iter().zip(exp).position(|(a, b)| a != b) {
            self.differs_at = Some(self.pos + i as u64);
        } else if chunk.len() > exp.len() {
            self.differs_at = Some(self.pos + exp.len() as u64);
        }
        self.pos += chunk.len() as u64;
    }

    /// Whether the whole body equalled `expected`.
    pub(crate) fn holds(&self, expected: &[u8]) -> bool {
        self.differs_at.is_none() && self.pos == expected.len() as u64
    }

    /// The first byte that differs (the body's length when it is a prefix of the expected text).
    pub(crate) fn differs_at(&self) -> u64 {
        self.differs_at.unwrap_or(self.pos)
    }
}

/// `body_size`'s bounds.
pub(crate) fn size_holds(size: u64, min: Option<u64>, max: Option<u64>) -> bool {
    min.is_none_or(|m| size >= m) && max.is_none_or(|m| size <= m)
}

/// The header fields of an HTTP/1.1 response head (already validated by the codec): `(name, value)` with the
/// value trimmed; the status line and the blank line are skipped. Names are as sent: compare them with
/// [`name_is`].
pub(crate) fn fields(head: &[u8]) -> Fields<'_> {
    let rest = match memchr::memchr(b'\n', head) {
        Some(i) => &head[i + 1..],
        None => &[],
    };
    Fields { rest }
}

pub(crate) struct Fields<'h> {
    rest: &'h [u8],
}

impl<'h> Iterator for Fields<'h> {
    type Item = (&'h [u8], &'h [u8]);

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if self.rest.is_empty() {
                return None;
            }
            let (line, rest) = match memchr::memchr(b'\n', self.rest) {
                Some(i) => (&self.rest[..i], &self.rest[i + 1..]),
                None => (self.rest, &[][..]),
            };
            self.rest = rest;
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            if line.is_empty() {
                self.rest = &[];
                return None;
            }
            let Some(colon) = memchr::memchr(b':', line) else { continue };
            return Some((trim(&line[..colon]), trim(&line[colon + 1..])));
        }
    }
}

/// The values of the fields named `lower` (lower-case), in order.
pub(crate) fn values<'h>(head: &'h [u8], lower: &'h [u8]) -> impl Iterator<Item = &'h [u8]> + 'h {
    fields(head).filter(move |(n, _)| name_is(n, lower)).map(|(_, v)| v)
}

/// Whether a header name is `lower` (lower-case), ignoring case.
pub(crate) fn name_is(name: &[u8], lower: &[u8]) -> bool {
    name.len() == lower.len() && name.iter().zip(lower).all(|(a, b)| a.to_ascii_lowercase() == *b)
}

pub(crate) fn trim(b: &[u8]) -> &[u8] {
    let start = b.iter().position(|c| !matches!(c, b' ' | b'\t')).unwrap_or(b.len());
    let end = b.iter().rposition(|c| !matches!(c, b' ' | b'\t')).map_or(start, |e| e + 1);
    &b[start..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn contains_split(hay: &[u8], needle: &[u8], cuts: &[usize]) -> bool {
        let f = Finder::new(needle);
        let mut c = Contains::default();
        c.reset(&f);
        let mut last = 0;
        for &cut in cuts.iter().chain(std::iter::once(&hay.len())) {
            let cut = cut.clamp(last, hay.len());
            c.feed(&f, &hay[last..cut]);
            last = cut;
        }
        c.found()
    }

    #[test]
    fn contains_finds_a_needle_across_any_split() {
        let hay = b"xxabcdefyy";
        for needle in [&b"abcdef"[..], b"a", b"fy", b"xxa", b"zz", b"defyyy", b""] {
            let want = needle.is_empty() || hay.windows(needle.len()).any(|w| w == needle);
            for i in 0..=hay.len() {
                for j in i..=hay.len() {
                    assert_eq!(contains_split(hay, needle, &[i, j]), want, "{needle:?} cut {i} {j}");
                }
            }
            let every: Vec<usize> = (0..=hay.len()).collect();
            assert_eq!(contains_split(hay, needle, &every), want);
        }
    }

    #[test]
    fn equals_compares_positions() {
        let exp = b"Hello, World!";
        for cut in 0..=exp.len() {
            let mut e = Equals::default();
            e.feed(exp, &exp[..cut]);
            e.feed(exp, &exp[cut..]);
            assert!(e.holds(exp));
        }
        let mut e = Equals::default();
        e.feed(exp, b"Hello, Wor");
        assert!(!e.holds(exp));
        assert_eq!(e.differs_at(), 10);
        e.feed(exp, b"LD!");
        assert!(!e.holds(exp));
        assert_eq!(e.differs_at(), 10);
        let mut e = Equals::default();
        e.feed(exp, b"Hello, World!!");
        assert_eq!(e.differs_at(), 13);
        assert!(!e.holds(exp));
    }

    #[test]
    fn sizes() {
        assert!(size_holds(13, Some(13), Some(13)));
        assert!(!size_holds(12, Some(13), None));
        assert!(!size_holds(65537, None, Some(65536)));
        assert!(size_holds(0, None, None));
    }

    #[test]
    fn header_fields_of_a_head() {
        let head = b"HTTP/1.1 200 OK\r\nContent-Type:  application/json \r\nSet-Cookie: a=1\r\nx-empty:\r\nset-cookie: b=2; Path=/\r\n\r\n";
        let all: Vec<(&[u8], &[u8])> = fields(head).collect();
        assert_eq!(all.len(), 4);
        assert_eq!(all[0], (&b"Content-Type"[..], &b"application/json"[..]));
        assert_eq!(all[2], (&b"x-empty"[..], &b""[..]));
        let cookies: Vec<&[u8]> = values(head, b"set-cookie").collect();
        assert_eq!(cookies, vec![&b"a=1"[..], &b"b=2; Path=/"[..]]);
        // LF-only heads too.
        let head = b"HTTP/1.1 204 No Content\nServer: x\n\n";
        assert_eq!(values(head, b"server").collect::<Vec<_>>(), vec![&b"x"[..]]);
    }
}
