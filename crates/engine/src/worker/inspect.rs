//! Response checks and captures as a connection runs them (issue 30, `docs/design/checks.md` 4.3).
//!
//! A phase's checks compile once into a [`CheckPlan`] (one [`EntryChecks`] per request entry: the single request,
//! a mix entry or a session step), shared by the worker's connections. Each connection that checks has one
//! [`Inspector`], allocated at its first checked response and reused: the codec shows it the response's head and
//! body bytes as it frames them ([`Inspecting`], the codec's `Inspect`), and [`Inspector::finish`] judges the
//! response once it completed, counts into the worker's [`CheckTally`] and stores the captured values in the
//! user's variables and its cookie jar.
//!
//! Nothing is parsed that no check needs: the head is copied (it is small and already in cache) and read only
//! by header checks, captures, cookies and failure examples; the body is streamed through `contains`, `equals`
//! and size checks and the JSON scanner (no tree, an early stop once every selector resolved), and buffered
//! (up to `check_body_limit`) only for body regexes. After a connection's first responses nothing allocates.

use std::time::{SystemTime, UNIX_EPOCH};

use loadgate_measure::CheckExample;
use loadgate_model::{
    CaptureSource, CheckKind, Comparison, Expected, JsonExpected, JsonOp, JsonType, Segment, StatusSet, TextOp,
};
use loadgate_plan::RequestPlan;
use memchr::memmem;
use regex_automata::meta::{Cache, Regex};
use regex_automata::util::syntax;

use super::tally::CheckTally;
use crate::check::json::{self, Lookup, Program, Scanner};
use crate::codec::Inspect;
use crate::vars::Vars;

/// The body bytes kept for failure examples.
const PREFIX_BYTES: usize = 160;
/// The head bytes kept for header checks, captures and cookies (a larger head is cut here).
const HEAD_BYTES: usize = 16 * 1024;
/// A compiled regex's largest automaton (the reader refuses larger ones).
const REGEX_SIZE: usize = 1 << 20;

/// A phase's checks, compiled: one entry per request the workers tell apart.
#[derive(Debug)]
pub(crate) struct CheckPlan {
    pub entries: Box<[EntryChecks]>,
    /// Whether the phase's users keep cookie jars.
    pub cookies: bool,
}

/// One request's checks and captures, compiled.
#[derive(Debug, Default)]
pub(crate) struct EntryChecks {
    checks: Box<[Compiled]>,
    captures: Box<[CompiledCapture]>,
    /// Every JSON check's and JSON capture's selector, scanned in one pass.
    json: Option<Program>,
    /// Body regexes (checks and captures) read a buffered body.
    buffer_body: bool,
    /// The regexes of this entry, each with its cache in the inspector.
    regexes: Box<[Regex]>,
    /// There is a `status` check.
    has_status: bool,
    body_limit: usize,
}

impl EntryChecks {
    /// Checks and captures, in the order the tally counts them.
    pub fn len(&self) -> usize {
        self.checks.len() + self.captures.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[derive(Debug)]
enum Compiled {
    Status(StatusSet),
    Header { name: Box<str>, ops: Box<[CText]> },
    BodyContains { text: Box<[u8]>, state: usize },
    BodyMatches { regex: usize },
    BodyEquals { expected: Expected, state: usize },
    BodySize { min: Option<u64>, max: Option<u64> },
    Json { sel: usize, ops: Box<[CJson]> },
}

#[derive(Debug)]
enum CText {
    Exists(bool),
    Equals(Expected),
    Contains(Box<str>),
    Matches(usize),
}

#[derive(Debug)]
enum CJson {
    Exists(bool),
    Equals(JsonExpected),
    Contains(Box<str>),
    Matches(usize),
    Compare(Comparison, f64),
    Type(JsonType),
}

#[derive(Debug)]
struct CompiledCapture {
    slot: u16,
    source: CSource,
    default: Option<Box<[u8]>>,
    max_len: usize,
}

#[derive(Debug)]
enum CSource {
    Json { sel: usize, text: Box<str> },
    Header { name: Box<str>, regex: Option<usize> },
    Regex(usize),
    Cookie(Box<str>),
}

/// Why a phase's checks could not compile (the reader refuses these first; a plan written by hand may not).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CompileError(pub String);

fn regex(pattern: &str, regexes: &mut Vec<Regex>) -> Result<usize, CompileError> {
    let r = Regex::builder()
        .syntax(syntax::Config::new().utf8(false))
        .configure(Regex::config().nfa_size_limit(Some(REGEX_SIZE)).hybrid_cache_capacity(REGEX_SIZE))
        .build(pattern)
        .map_err(|e| CompileError(format!("the regex `{pattern}` does not compile: {e}")))?;
    regexes.push(r);
    Ok(regexes.len() - 1)
}

impl CheckPlan {
    /// The plan of a phase's entries (see `phase::entries`); `None` when no entry checks or captures anything
    /// and no jar is kept: the connections then run the plain parser.
    pub fn new(entries: &[&RequestPlan], body_limit: u64, cookies: bool) -> Result<Option<CheckPlan>, CompileError> {
        if !cookies && entries.iter().all(|r| r.checks.is_empty() && r.captures.is_empty()) {
            return Ok(None);
        }
        let body_limit = usize::try_from(body_limit).unwrap_or(usize::MAX);
        let compiled = entries.iter().map(|r| compile(r, body_limit)).collect::<Result<Vec<_>, _>>()?;
        Ok(Some(CheckPlan { entries: compiled.into(), cookies }))
    }

    /// How many checks (captures included) each entry has.
    pub fn counts(&self) -> Vec<usize> {
        self.entries.iter().map(EntryChecks::len).collect()
    }

    /// Entry `e`'s checks.
    pub fn entry(&self, e: u32) -> Option<&EntryChecks> {
        self.entries.get(e as usize)
    }

    /// Whether responses of entry `e` are read by the inspector: it has checks or captures, or users keep
    /// cookies.
    #[inline]
    pub fn inspects(&self, e: u32) -> bool {
        self.cookies || self.entries.get(e as usize).is_some_and(|c| !c.is_empty())
    }
}

fn compile(r: &RequestPlan, body_limit: usize) -> Result<EntryChecks, CompileError> {
    let mut regexes = Vec::new();
    let mut selectors: Vec<(&[loadgate_model::JsonStep], usize)> = Vec::new();
    let (mut contains, mut equals) = (0, 0);
    let mut checks = Vec::new();
    let mut has_status = false;
    let mut buffer_body = false;
    for c in &r.checks {
        checks.push(match &c.kind {
            CheckKind::Status { set } => {
                has_status = true;
                Compiled::Status(*set)
            }
            CheckKind::Header { name, ops } => Compiled::Header {
                name: name.to_ascii_lowercase().into(),
                ops: ops
                    .iter()
                    .map(|op| {
                        Ok(match op {
                            TextOp::Exists(b) => CText::Exists(*b),
                            TextOp::Equals(e) => CText::Equals(e.clone()),
                            TextOp::Contains(t) => CText::Contains(t.as_str().into()),
                            TextOp::Matches(p) => CText::Matches(regex(&p.0, &mut regexes)?),
                        })
                    })
                    .collect::<Result<Vec<_>, CompileError>>()?
                    .into(),
            },
            CheckKind::BodyContains { text } => {
                contains += 1;
                Compiled::BodyContains { text: text.as_bytes().into(), state: contains - 1 }
            }
            CheckKind::BodyMatches { pattern } => {
                buffer_body = true;
                Compiled::BodyMatches { regex: regex(&pattern.0, &mut regexes)? }
            }
            CheckKind::BodyEquals { expected } => {
                equals += 1;
                Compiled::BodyEquals { expected: expected.clone(), state: equals - 1 }
            }
            CheckKind::BodySize { min, max } => Compiled::BodySize { min: *min, max: *max },
            CheckKind::Json { selector, ops } => {
                selectors.push((&selector.steps, json::DEFAULT_VALUE_LIMIT));
                Compiled::Json {
                    sel: selectors.len() - 1,
                    ops: ops
                        .iter()
                        .map(|op| {
                            Ok(match op {
                                JsonOp::Exists(b) => CJson::Exists(*b),
                                JsonOp::Equals(e) => CJson::Equals(e.clone()),
                                JsonOp::Contains(t) => CJson::Contains(t.as_str().into()),
                                JsonOp::Matches(p) => CJson::Matches(regex(&p.0, &mut regexes)?),
                                JsonOp::Compare { cmp, value } => CJson::Compare(*cmp, *value),
                                JsonOp::Type(t) => CJson::Type(*t),
                            })
                        })
                        .collect::<Result<Vec<_>, CompileError>>()?
                        .into(),
                }
            }
        });
    }
    let mut captures = Vec::new();
    for c in &r.captures {
        let max_len = c.max_len as usize;
        let source = match &c.source {
            CaptureSource::Json { selector } => {
                selectors.push((&selector.steps, max_len + 1));
                CSource::Json { sel: selectors.len() - 1, text: selector.text.as_str().into() }
            }
            CaptureSource::Header { name, regex: re } => CSource::Header {
                name: name.to_ascii_lowercase().into(),
                regex: re.as_ref().map(|p| regex(&p.0, &mut regexes)).transpose()?,
            },
            CaptureSource::Regex { pattern } => {
                buffer_body = true;
                CSource::Regex(regex(&pattern.0, &mut regexes)?)
            }
            CaptureSource::Cookie { name } => CSource::Cookie(name.as_str().into()),
        };
        captures.push(CompiledCapture {
            slot: c.slot,
            source,
            default: c.default.as_ref().map(|d| d.as_bytes().into()),
            max_len,
        });
    }
    let json = if selectors.is_empty() {
        None
    } else {
        let n = selectors.len();
        let p =
            Program::new(selectors).map_err(|_| CompileError("more than 16 JSON selectors on one request".into()))?;
        debug_assert_eq!(p.len(), n);
        Some(p)
    };
    Ok(EntryChecks {
        checks: checks.into(),
        captures: captures.into(),
        json,
        buffer_body,
        regexes: regexes.into(),
        has_status,
        body_limit,
    })
}

/// The streaming state of a `body_contains` check.
#[derive(Debug, Default)]
struct ContainsState {
    found: bool,
    /// The last `needle - 1` bytes seen, for a match across two reads.
    carry: Vec<u8>,
}

/// The streaming state of a `body_equals` check.
#[derive(Debug, Default)]
struct EqualsState {
    expected: Vec<u8>,
    pos: usize,
    differs: bool,
}

/// One connection's view of the response being read.
#[derive(Debug, Default)]
pub(crate) struct Inspector {
    status: u16,
    head: Vec<u8>,
    prefix: Vec<u8>,
    body_len: u64,
    body: Vec<u8>,
    body_over: bool,
    contains: Vec<ContainsState>,
    equals: Vec<EqualsState>,
    scanner: Scanner,
    /// Per entry, the caches of its regexes (made at the entry's first response on this connection).
    caches: Vec<Vec<Cache>>,
    /// Scratch for one expected value with variables.
    text: Vec<u8>,
}

/// The codec's view of an inspector while one response of `checks` is read.
pub(crate) struct Inspecting<'a> {
    pub inspector: &'a mut Inspector,
    pub checks: &'a EntryChecks,
    pub vars: Option<&'a Vars>,
}

impl Inspect for Inspecting<'_> {
    fn head(&mut self, status: u16, head: &[u8]) {
        let i = &mut *self.inspector;
        let c = self.checks;
        i.status = status;
        i.head.clear();
        i.head.extend_from_slice(&head[..head.len().min(HEAD_BYTES)]);
        i.prefix.clear();
        i.body_len = 0;
        i.body.clear();
        i.body_over = false;
        let contains = c.checks.iter().filter(|k| matches!(k, Compiled::BodyContains { .. })).count();
        while i.contains.len() < contains {
            i.contains.push(ContainsState::default());
        }
        for s in &mut i.contains[..contains] {
            s.found = false;
            s.carry.clear();
        }
        for k in c.checks.iter() {
            if let Compiled::BodyEquals { expected, state } = k {
                while i.equals.len() <= *state {
                    i.equals.push(EqualsState::default());
                }
                let s = &mut i.equals[*state];
                s.expected.clear();
                render(expected, self.vars, &mut s.expected);
                s.pos = 0;
                s.differs = false;
            }
        }
        if let Some(p) = &c.json {
            i.scanner.reset(p);
        }
    }

    fn body(&mut self, bytes: &[u8]) {
        let i = &mut *self.inspector;
        let c = self.checks;
        i.body_len += bytes.len() as u64;
        if i.prefix.len() < PREFIX_BYTES {
            let take = (PREFIX_BYTES - i.prefix.len()).min(bytes.len());
            i.prefix.extend_from_slice(&bytes[..take]);
        }
        if c.buffer_body && !i.body_over {
            if i.body.len() + bytes.len() <= c.body_limit {
                i.body.extend_from_slice(bytes);
            } else {
                i.body_over = true;
            }
        }
        for k in c.checks.iter() {
            match k {
                Compiled::BodyContains { text, state } => contains_feed(&mut i.contains[*state], text, bytes),
                Compiled::BodyEquals { state, .. } => {
                    let s = &mut i.equals[*state];
                    if !s.differs {
                        let end = s.pos + bytes.len();
                        if end > s.expected.len() || s.expected[s.pos..end] != *bytes {
                            s.differs = true;
                        }
                        s.pos = end;
                    }
                }
                _ => {}
            }
        }
        if let Some(p) = &c.json {
            if !i.scanner.done() {
                i.scanner.feed(p, bytes);
            }
        }
    }
}

fn contains_feed(s: &mut ContainsState, needle: &[u8], bytes: &[u8]) {
    if s.found || needle.is_empty() {
        s.found = true;
        return;
    }
    // Across the previous read's end: its last bytes and this read's first.
    if !s.carry.is_empty() {
        let keep = s.carry.len();
        s.carry.extend_from_slice(&bytes[..bytes.len().min(needle.len() - 1)]);
        if memmem::find(&s.carry, needle).is_some() {
            s.found = true;
            return;
        }
        s.carry.truncate(keep);
    }
    if memmem::find(bytes, needle).is_some() {
        s.found = true;
        return;
    }
    let tail = needle.len() - 1;
    if bytes.len() >= tail {
        s.carry.clear();
        s.carry.extend_from_slice(&bytes[bytes.len() - tail..]);
    } else {
        s.carry.extend_from_slice(bytes);
        let over = s.carry.len().saturating_sub(tail);
        s.carry.drain(..over);
    }
}

/// Appends an expected value's text with the user's variables (an unset variable adds nothing).
fn render(e: &Expected, vars: Option<&Vars>, out: &mut Vec<u8>) {
    for s in &e.0 {
        match s {
            Segment::Text(t) => out.extend_from_slice(t.as_bytes()),
            Segment::Var { slot, .. } => {
                if let Some(v) = vars.and_then(|v| v.get(*slot)) {
                    out.extend_from_slice(v);
                }
            }
            Segment::Gen { .. } => {}
        }
    }
}

/// The header fields of a head: `(name, value)` with the value trimmed; names compared case-insensitively.
fn fields(head: &[u8]) -> impl Iterator<Item = (&[u8], &[u8])> {
    head.split(|&b| b == b'\n').skip(1).filter_map(|line| {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let colon = line.iter().position(|&b| b == b':')?;
        Some((&line[..colon], line[colon + 1..].trim_ascii()))
    })
}

fn header<'h>(head: &'h [u8], name: &str) -> impl Iterator<Item = &'h [u8]> + 'h {
    let name = name.to_owned();
    fields(head).filter(move |(n, _)| n.trim_ascii().eq_ignore_ascii_case(name.as_bytes())).map(|(_, v)| v)
}

/// What one response was found to be, for the worker's counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Judged {
    /// A check (or capture) failed.
    pub failed: bool,
    /// The status is a success: 2xx, or one a `status` check accepted.
    pub success: bool,
    /// A non-2xx status that the status checks accepted.
    pub accepted_non_2xx: bool,
}

/// A user's cookies (`cookies:`), one jar per user: at most [`MAX_COOKIES`] cookies and [`MAX_JAR_BYTES`] bytes.
#[derive(Debug, Default)]
pub(crate) struct Jar {
    cookies: Vec<Cookie>,
    /// Cookies dropped because the jar was full.
    pub dropped: u64,
}

#[derive(Debug, Default)]
struct Cookie {
    name: Vec<u8>,
    value: Vec<u8>,
    path: Vec<u8>,
}

pub(crate) const MAX_COOKIES: usize = 32;
pub(crate) const MAX_JAR_BYTES: usize = 4096;

impl Jar {
    pub fn clear(&mut self) {
        self.cookies.clear();
    }

    fn bytes(&self) -> usize {
        self.cookies.iter().map(|c| c.name.len() + c.value.len() + c.path.len()).sum()
    }

    /// Stores (or replaces, or deletes) the cookie of one `Set-Cookie` field, received for `request_path`.
    pub fn set(&mut self, field: &[u8], now_unix: i64) {
        let mut parts = field.split(|&b| b == b';');
        let Some(pair) = parts.next() else { return };
        let Some(eq) = pair.iter().position(|&b| b == b'=') else { return };
        let name = pair[..eq].trim_ascii();
        let value = pair[eq + 1..].trim_ascii();
        if name.is_empty() {
            return;
        }
        let mut path: &[u8] = b"/";
        let mut delete = false;
        for attr in parts {
            let attr = attr.trim_ascii();
            let (k, v) = match attr.iter().position(|&b| b == b'=') {
                Some(i) => (attr[..i].trim_ascii(), attr[i + 1..].trim_ascii()),
                None => (attr, &b""[..]),
            };
            if k.eq_ignore_ascii_case(b"path") && v.starts_with(b"/") {
                path = v;
            } else if k.eq_ignore_ascii_case(b"max-age") {
                if std::str::from_utf8(v).ok().and_then(|s| s.parse::<i64>().ok()).is_some_and(|n| n <= 0) {
                    delete = true;
                }
            } else if k.eq_ignore_ascii_case(b"expires") && imf_fixdate(v).is_some_and(|t| t <= now_unix) {
                delete = true;
            }
        }
        let at = self.cookies.iter().position(|c| c.name == name && c.path == path);
        match (at, delete) {
            (Some(i), true) => {
                self.cookies.remove(i);
            }
            (None, true) => {}
            (Some(i), false) => {
                let c = &mut self.cookies[i];
                c.value.clear();
                c.value.extend_from_slice(value);
            }
            (None, false) => {
                let size = name.len() + value.len() + path.len();
                if self.cookies.len() >= MAX_COOKIES || self.bytes() + size > MAX_JAR_BYTES {
                    self.dropped += 1;
                    return;
                }
                self.cookies.push(Cookie { name: name.to_vec(), value: value.to_vec(), path: path.to_vec() });
            }
        }
    }
}

/// RFC 6265's path-match.
fn path_matches(request: &[u8], cookie: &[u8]) -> bool {
    let request = &request[..request.iter().position(|&b| b == b'?').unwrap_or(request.len())];
    request == cookie
        || (request.starts_with(cookie) && (cookie.ends_with(b"/") || request.get(cookie.len()) == Some(&b'/')))
}

impl crate::request::CookieHeader for Jar {
    fn matching(&self, path: &[u8]) -> u32 {
        let mut mask = 0;
        for (i, c) in self.cookies.iter().enumerate().take(32) {
            if path_matches(path, &c.path) {
                mask |= 1 << i;
            }
        }
        mask
    }

    fn write_header(&self, mask: u32, out: &mut Vec<u8>) {
        if mask == 0 {
            return;
        }
        out.extend_from_slice(b"Cookie: ");
        let mut first = true;
        for (i, c) in self.cookies.iter().enumerate().take(32) {
            if mask & (1 << i) != 0 {
                if !first {
                    out.extend_from_slice(b"; ");
                }
                first = false;
                out.extend_from_slice(&c.name);
                out.push(b'=');
                out.extend_from_slice(&c.value);
            }
        }
        out.extend_from_slice(b"\r\n");
    }
}

/// Seconds since the epoch of an IMF-fixdate (`Thu, 01 Jan 1970 00:00:00 GMT`; also the RFC 850 and asctime
/// forms' day, month and year in any order of the common cookie dates is not needed: servers send IMF-fixdate).
fn imf_fixdate(v: &[u8]) -> Option<i64> {
    let s = std::str::from_utf8(v).ok()?;
    let parts: Vec<&str> = s.split([' ', '-']).filter(|p| !p.is_empty()).collect();
    // [Thu,] 01 Jan 1970 00:00:00 GMT
    let (day, month, year, time) = match parts.as_slice() {
        [_, d, m, y, t, ..] => (*d, *m, *y, *t),
        _ => return None,
    };
    let day: i64 = day.parse().ok()?;
    const MONTHS: [&str; 12] = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"];
    let month = MONTHS.iter().position(|m| month.len() >= 3 && month[..3].eq_ignore_ascii_case(m))? as i64 + 1;
    let mut year: i64 = year.parse().ok()?;
    if year < 100 {
        year += if year < 70 { 2000 } else { 1900 };
    }
    let hms: Vec<i64> = time.split(':').map(|x| x.parse().ok()).collect::<Option<Vec<_>>>()?;
    let [h, m, sec] = hms.as_slice() else { return None };
    // Days from the civil date (Howard Hinnant's algorithm).
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(days * 86_400 + h * 3600 + m * 60 + sec)
}

fn now_unix() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

/// A failure example's parts.
fn example(i: &Inspector, observed: String) -> CheckExample {
    let content_type =
        header(&i.head, "content-type").next().map(|v| String::from_utf8_lossy(v).into_owned()).unwrap_or_default();
    CheckExample {
        status: i.status,
        content_type,
        observed,
        body_start: String::from_utf8_lossy(&i.prefix).into_owned(),
        body_len: i.body_len,
    }
}

fn shown(v: &[u8]) -> String {
    let s = String::from_utf8_lossy(&v[..v.len().min(120)]);
    if v.len() > 120 {
        format!("\"{s}…\"")
    } else {
        format!("\"{s}\"")
    }
}

impl Inspector {
    /// Judges the response just read for entry `entry` of `checks`: counts each check and capture into
    /// `tally`, stores captured values in `vars` and `Set-Cookie`s in `jar`.
    pub fn finish(
        &mut self,
        checks: &EntryChecks,
        entry: usize,
        mut vars: Option<&mut Vars>,
        jar: Option<&mut Jar>,
        tally: &mut CheckTally,
    ) -> Judged {
        if let Some(p) = &checks.json {
            self.scanner.finish(p);
        }
        if self.caches.len() <= entry {
            self.caches.resize_with(entry + 1, Vec::new);
        }
        if self.caches[entry].len() < checks.regexes.len() {
            self.caches[entry] = checks.regexes.iter().map(Regex::create_cache).collect();
        }
        let mut failed = false;
        let mut status_ok = true;
        for (n, k) in checks.checks.iter().enumerate() {
            let verdict = self.judge(k, checks, entry, vars.as_deref());
            if let Compiled::Status(_) = k {
                status_ok &= verdict.is_ok();
            }
            failed |= verdict.is_err();
            tally.count(entry, n, verdict.is_ok(), || example(self, verdict.err().unwrap_or_default()));
        }
        let base = checks.checks.len();
        for (n, cap) in checks.captures.iter().enumerate() {
            let got = self.capture(cap, checks, entry);
            let verdict = match got {
                Ok(range) => {
                    let value = self.captured(&cap.source, range);
                    if value.len() > cap.max_len {
                        Err(format!("the value is {} bytes, over `max_length` ({} bytes)", value.len(), cap.max_len))
                    } else {
                        if let Some(v) = vars.as_deref_mut() {
                            v.set(cap.slot, value);
                        }
                        Ok(())
                    }
                }
                Err(why) => match &cap.default {
                    Some(d) => {
                        if let Some(v) = vars.as_deref_mut() {
                            v.set(cap.slot, d);
                        }
                        Ok(())
                    }
                    None => Err(why),
                },
            };
            failed |= verdict.is_err();
            tally.count(entry, base + n, verdict.is_ok(), || example(self, verdict.err().unwrap_or_default()));
        }
        if let Some(jar) = jar {
            let now = now_unix();
            for v in header(&self.head, "set-cookie") {
                jar.set(v, now);
            }
        }
        let is_2xx = (200..300).contains(&self.status);
        let accepted_non_2xx = !is_2xx && checks.has_status && status_ok;
        let success = is_2xx && status_ok || accepted_non_2xx;
        tally.response(entry, failed && success, accepted_non_2xx);
        Judged { failed, success, accepted_non_2xx }
    }

    fn judge(&mut self, k: &Compiled, c: &EntryChecks, entry: usize, vars: Option<&Vars>) -> Result<(), String> {
        match k {
            Compiled::Status(set) => {
                if set.contains(self.status) {
                    Ok(())
                } else {
                    Err(format!("status was {}", self.status))
                }
            }
            Compiled::Header { name, ops } => {
                let values: Vec<&[u8]> = header(&self.head, name).collect();
                if ops.is_empty() && values.is_empty() {
                    // Without an operator, a header check asks that the header is there.
                    return Err(format!("`{name}` was absent"));
                }
                let mut last = Ok(());
                for op in ops.iter() {
                    let r = match op {
                        CText::Exists(true) if values.is_empty() => Err(format!("`{name}` was absent")),
                        CText::Exists(false) if !values.is_empty() => Err(format!("`{name}` was {}", shown(values[0]))),
                        CText::Exists(_) => Ok(()),
                        _ if values.is_empty() => Err(format!("`{name}` was absent")),
                        CText::Equals(e) => {
                            self.text.clear();
                            render(e, vars, &mut self.text);
                            let want = &self.text;
                            any(&values, |v| v == want.as_slice(), name)
                        }
                        CText::Contains(t) => any(&values, |v| memmem::find(v, t.as_bytes()).is_some(), name),
                        CText::Matches(r) => {
                            let (re, cache) = (&c.regexes[*r], &mut self.caches[entry][*r]);
                            any(&values, |v| re.search_with(cache, &regex_automata::Input::new(v)).is_some(), name)
                        }
                    };
                    if r.is_err() {
                        last = r;
                        break;
                    }
                }
                last
            }
            Compiled::BodyContains { text, state } => {
                if self.contains[*state].found {
                    Ok(())
                } else {
                    Err(format!("the body ({} bytes) does not contain {}", self.body_len, shown(text)))
                }
            }
            Compiled::BodyMatches { regex } => {
                if self.body_over {
                    return Err(over_limit(self.body_len, c.body_limit));
                }
                let (re, cache) = (&c.regexes[*regex], &mut self.caches[entry][*regex]);
                if re.search_with(cache, &regex_automata::Input::new(&self.body)).is_some() {
                    Ok(())
                } else {
                    Err(format!("the body ({} bytes) does not match", self.body_len))
                }
            }
            Compiled::BodyEquals { state, .. } => {
                let s = &self.equals[*state];
                if !s.differs && s.pos == s.expected.len() {
                    Ok(())
                } else {
                    Err(format!("the body ({} bytes) differs from the {} expected", self.body_len, s.expected.len()))
                }
            }
            Compiled::BodySize { min, max } => {
                let n = self.body_len;
                if min.is_some_and(|m| n < m) || max.is_some_and(|m| n > m) {
                    Err(format!("the body was {n} bytes"))
                } else {
                    Ok(())
                }
            }
            Compiled::Json { sel, ops } => {
                let sel = *sel;
                let Some(p) = &c.json else { return Ok(()) };
                let _ = p;
                self.judge_json(sel, ops, c, entry, vars)
            }
        }
    }

    fn judge_json(
        &mut self,
        sel: usize,
        ops: &[CJson],
        c: &EntryChecks,
        entry: usize,
        vars: Option<&Vars>,
    ) -> Result<(), String> {
        let found = self.scanner.get(sel);
        // Without an operator, a JSON check asks that the value is there.
        let exists = [CJson::Exists(true)];
        let ops = if ops.is_empty() { &exists[..] } else { ops };
        for op in ops {
            match (op, found) {
                (_, Lookup::Error(e)) => return Err(e.to_string()),
                (_, Lookup::Pending) => return Err("the body ended before the value".into()),
                (CJson::Exists(true), Lookup::NotFound) => return Err("not found".into()),
                (CJson::Exists(false), Lookup::Found { .. }) => return Err("found".into()),
                (CJson::Exists(_), _) => {}
                (_, Lookup::NotFound) => return Err("not found".into()),
                (op, Lookup::Found { ty, value, .. }) => {
                    let ok = match op {
                        CJson::Exists(_) => true,
                        CJson::Equals(JsonExpected::Number(n)) => ty == JsonType::Number && number(value) == Some(*n),
                        CJson::Equals(JsonExpected::Bool(b)) => {
                            ty == JsonType::Boolean && value == if *b { &b"true"[..] } else { &b"false"[..] }
                        }
                        CJson::Equals(JsonExpected::Null) => ty == JsonType::Null,
                        CJson::Equals(JsonExpected::Text(e)) => {
                            let literal = e.0.iter().all(|s| matches!(s, Segment::Text(_)));
                            self.text.clear();
                            render(e, vars, &mut self.text);
                            (ty == JsonType::String || !literal && is_scalar(ty)) && value == self.text.as_slice()
                        }
                        CJson::Contains(t) => is_scalar(ty) && memmem::find(value, t.as_bytes()).is_some(),
                        CJson::Matches(r) => {
                            is_scalar(ty)
                                && c.regexes[*r]
                                    .search_with(&mut self.caches[entry][*r], &regex_automata::Input::new(value))
                                    .is_some()
                        }
                        CJson::Compare(cmp, n) => {
                            ty == JsonType::Number && number(value).is_some_and(|v| compare(*cmp, v, *n))
                        }
                        CJson::Type(t) => ty == *t,
                    };
                    if !ok {
                        let what = if is_scalar(ty) {
                            format!("{} ({})", shown(value), ty.name())
                        } else {
                            format!("an {}", ty.name())
                        };
                        return Err(format!("was {what}"));
                    }
                }
            }
        }
        Ok(())
    }

    /// The bytes a capture found (as a range of the head, the body or the JSON value), or why none.
    fn capture(&mut self, cap: &CompiledCapture, c: &EntryChecks, entry: usize) -> Result<Span, String> {
        match &cap.source {
            CSource::Json { sel, text } => match self.scanner.get(*sel) {
                Lookup::Found { ty, len, .. } if is_scalar(ty) || len > 0 => Ok(Span::Json(*sel)),
                Lookup::Found { ty, .. } => Err(format!("`{text}` is an {}, not a value", ty.name())),
                Lookup::NotFound | Lookup::Pending => Err(format!("`{text}` not found")),
                Lookup::Error(e) => Err(e.to_string()),
            },
            CSource::Header { name, regex } => {
                let head = &self.head;
                let Some((start, len)) = header(head, name).next().map(|v| (offset_in(head, v), v.len())) else {
                    return Err(format!("`{name}` was absent"));
                };
                match regex {
                    None => Ok(Span::Head(start, start + len)),
                    Some(r) => {
                        let (re, cache) = (&c.regexes[*r], &mut self.caches[entry][*r]);
                        match group(re, cache, &self.head[start..start + len]) {
                            Some((a, b)) => Ok(Span::Head(start + a, start + b)),
                            None => Err(format!("`{name}` ({}) does not match", shown(&self.head[start..start + len]))),
                        }
                    }
                }
            }
            CSource::Regex(r) => {
                if self.body_over {
                    return Err(over_limit(self.body_len, c.body_limit));
                }
                let (re, cache) = (&c.regexes[*r], &mut self.caches[entry][*r]);
                match group(re, cache, &self.body) {
                    Some((a, b)) => Ok(Span::Body(a, b)),
                    None => Err(format!("the body ({} bytes) does not match", self.body_len)),
                }
            }
            CSource::Cookie(name) => {
                let head = &self.head;
                for v in header(head, "set-cookie") {
                    let pair = v.split(|&b| b == b';').next().unwrap_or(v);
                    if let Some(eq) = pair.iter().position(|&b| b == b'=') {
                        if pair[..eq].trim_ascii() == name.as_bytes() {
                            let value = pair[eq + 1..].trim_ascii();
                            let start = offset_in(head, value);
                            return Ok(Span::Head(start, start + value.len()));
                        }
                    }
                }
                Err(format!("no `Set-Cookie` named `{name}`"))
            }
        }
    }

    fn captured(&self, _source: &CSource, span: Span) -> &[u8] {
        match span {
            Span::Head(a, b) => &self.head[a..b],
            Span::Body(a, b) => &self.body[a..b],
            Span::Json(sel) => match self.scanner.get(sel) {
                Lookup::Found { value, .. } => value,
                _ => &[],
            },
        }
    }
}

/// Where a captured value is.
#[derive(Debug, Clone, Copy)]
enum Span {
    Head(usize, usize),
    Body(usize, usize),
    Json(usize),
}

/// The offset of `part` (a subslice) in `whole`.
fn offset_in(whole: &[u8], part: &[u8]) -> usize {
    (part.as_ptr() as usize).saturating_sub(whole.as_ptr() as usize).min(whole.len())
}

/// A regex's group 1 (or its whole match without groups) in `hay`.
fn group(re: &Regex, cache: &mut Cache, hay: &[u8]) -> Option<(usize, usize)> {
    let mut caps = re.create_captures();
    re.search_captures_with(cache, &regex_automata::Input::new(hay), &mut caps);
    if !caps.is_match() {
        return None;
    }
    caps.get_group(1).or_else(|| caps.get_group(0)).map(|s| (s.start, s.end))
}

fn any(values: &[&[u8]], mut test: impl FnMut(&[u8]) -> bool, name: &str) -> Result<(), String> {
    if values.iter().any(|v| test(v)) {
        Ok(())
    } else {
        Err(format!("`{name}` was {}", shown(values[0])))
    }
}

fn over_limit(len: u64, limit: usize) -> String {
    format!("the body ({len} bytes) is over the {limit} bytes that body regexes read (`defaults.check_body_limit`)")
}

fn is_scalar(t: JsonType) -> bool {
    !matches!(t, JsonType::Object | JsonType::Array)
}

fn number(v: &[u8]) -> Option<f64> {
    std::str::from_utf8(v).ok()?.parse().ok()
}

fn compare(cmp: Comparison, v: f64, n: f64) -> bool {
    match cmp {
        Comparison::Lt => v < n,
        Comparison::Le => v <= n,
        Comparison::Gt => v > n,
        Comparison::Ge => v >= n,
        Comparison::Eq => v == n,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use loadgate_model::{Capture, Check, JsonSelector};

    fn request(checks: Vec<CheckKind>, captures: Vec<(u16, CaptureSource)>) -> RequestPlan {
        RequestPlan {
            method: "GET".into(),
            path: "/".into(),
            headers: vec![],
            body: None,
            dynamic: None,
            checks: checks
                .into_iter()
                .map(|kind| Check { name: loadgate_model::check::default_name(&kind), kind })
                .collect(),
            captures: captures
                .into_iter()
                .map(|(slot, source)| Capture { name: format!("v{slot}"), slot, source, default: None, max_len: 4096 })
                .collect(),
        }
    }

    fn sel(s: &str) -> JsonSelector {
        JsonSelector::parse(s).unwrap()
    }

    /// Feeds a whole response (head, then the body in pieces of `step`) and finishes it.
    fn run(r: &RequestPlan, response: &[u8], step: usize, vars: &mut Vars, jar: &mut Jar) -> (Judged, CheckTally) {
        let plan = CheckPlan::new(&[r], 64 * 1024, true).unwrap().unwrap();
        let mut tally = CheckTally::new(&plan.counts());
        let mut i = Inspector::default();
        let mut p = crate::codec::ResponseParser::new();
        {
            let mut ins = Inspecting { inspector: &mut i, checks: &plan.entries[0], vars: Some(vars) };
            for piece in response.chunks(step) {
                let mut off = 0;
                while off < piece.len() {
                    let (n, _) = p.feed_with(&piece[off..], false, &mut ins).unwrap();
                    off += n;
                }
            }
        }
        let judged = i.finish(&plan.entries[0], 0, Some(vars), Some(jar), &mut tally);
        (judged, tally)
    }

    const JSON: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nLocation: /anything/1042\r\n\
Set-Cookie: sid=u7; Path=/\r\nContent-Length: 58\r\n\r\n{\"json\": {\"token\": \"tok-1\"}, \"total\": 3, \"items\": [1, 2]}\n";

    #[test]
    fn checks_and_captures_hold_at_any_read_split() {
        let r = request(
            vec![
                CheckKind::Status { set: StatusSet::parse_item("2xx").unwrap() },
                CheckKind::Header {
                    name: "content-type".into(),
                    ops: vec![TextOp::Matches(loadgate_model::Pattern("^application/json".into()))],
                },
                CheckKind::BodyContains { text: "tok-1".into() },
                CheckKind::BodySize { min: Some(10), max: Some(100) },
                CheckKind::Json {
                    selector: sel("$.total"),
                    ops: vec![JsonOp::Compare { cmp: Comparison::Ge, value: 1.0 }],
                },
                CheckKind::Json { selector: sel("$.items[1]"), ops: vec![JsonOp::Equals(JsonExpected::Number(2.0))] },
            ],
            vec![
                (0, CaptureSource::Json { selector: sel("$.json.token") }),
                (
                    1,
                    CaptureSource::Header {
                        name: "location".into(),
                        regex: Some(loadgate_model::Pattern(r"^/anything/(\d+)$".into())),
                    },
                ),
                (2, CaptureSource::Cookie { name: "sid".into() }),
            ],
        );
        for step in 1..=JSON.len() {
            let mut vars = Vars::new(3);
            let mut jar = Jar::default();
            let (judged, tally) = run(&r, JSON, step, &mut vars, &mut jar);
            let failures: Vec<_> = tally.entry(0).iter().enumerate().filter(|(_, c)| c.failed > 0).collect();
            assert!(failures.is_empty(), "step {step}: {failures:?}");
            assert_eq!(judged, Judged { failed: false, success: true, accepted_non_2xx: false });
            assert_eq!(vars.get(0), Some(&b"tok-1"[..]));
            assert_eq!(vars.get(1), Some(&b"1042"[..]));
            assert_eq!(vars.get(2), Some(&b"u7"[..]));
            use crate::request::CookieHeader;
            let mut out = Vec::new();
            jar.write_header(jar.matching(b"/cookies"), &mut out);
            assert_eq!(out, b"Cookie: sid=u7\r\n");
        }
    }

    #[test]
    fn failures_are_counted_with_what_came_back() {
        let r = request(
            vec![
                CheckKind::Status { set: StatusSet::parse_item("404").unwrap() },
                CheckKind::Header {
                    name: "content-type".into(),
                    ops: vec![TextOp::Matches(loadgate_model::Pattern("^text/".into()))],
                },
                CheckKind::Json { selector: sel("$.missing"), ops: vec![] },
                CheckKind::Json {
                    selector: sel("$.json.token"),
                    ops: vec![JsonOp::Equals(JsonExpected::Text(Expected::literal("other")))],
                },
            ],
            vec![(0, CaptureSource::Regex { pattern: loadgate_model::Pattern("nothing-like-this".into()) })],
        );
        let mut vars = Vars::new(1);
        let (judged, tally) = run(&r, JSON, 7, &mut vars, &mut Jar::default());
        // The 200 fails the status check: a failed response although 2xx.
        assert_eq!(judged, Judged { failed: true, success: false, accepted_non_2xx: false });
        let observed: Vec<String> = tally.entry(0).iter().map(|c| c.examples[0].observed.clone()).collect();
        assert_eq!(observed[0], "status was 200");
        assert_eq!(observed[1], "`content-type` was \"application/json\"");
        assert_eq!(observed[2], "not found");
        assert_eq!(observed[3], "was \"tok-1\" (string)");
        assert!(observed[4].contains("does not match"), "{}", observed[4]);
        let e = &tally.entry(0)[0].examples[0];
        assert_eq!((e.status, e.content_type.as_str(), e.body_len), (200, "application/json", 58));
        assert!(e.body_start.starts_with("{\"json\""));
        assert_eq!(vars.get(0), None);
        assert_eq!(tally.checked[0].failed, 0, "not a success, so counted by its status, not as a check failure");
    }

    #[test]
    fn a_status_check_decides_success() {
        let r = request(vec![CheckKind::Status { set: StatusSet::parse_item("404").unwrap() }], vec![]);
        let resp = b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n";
        let (judged, tally) = run(&r, resp, 100, &mut Vars::new(0), &mut Jar::default());
        assert_eq!(judged, Judged { failed: false, success: true, accepted_non_2xx: true });
        assert_eq!(tally.checked[0].accepted_non_2xx, 1);
    }

    #[test]
    fn contains_across_reads_and_equals() {
        let r = request(
            vec![
                CheckKind::BodyContains { text: "World".into() },
                CheckKind::BodyEquals { expected: Expected::literal("Hello, World!") },
            ],
            vec![],
        );
        let resp = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nHell\r\n9\r\no, World!\r\n0\r\n\r\n";
        for step in 1..resp.len() {
            let (judged, _) = run(&r, resp, step, &mut Vars::new(0), &mut Jar::default());
            assert!(!judged.failed, "step {step}");
        }
        let other = b"HTTP/1.1 200 OK\r\nContent-Length: 14\r\n\r\nHello, World!!";
        let (judged, tally) = run(&r, other, 3, &mut Vars::new(0), &mut Jar::default());
        assert!(judged.failed);
        assert_eq!(tally.entry(0)[0].failed, 0);
        assert_eq!(tally.entry(0)[1].failed, 1);
    }

    #[test]
    fn jars_replace_delete_and_bound() {
        let mut jar = Jar::default();
        jar.set(b"a=1; Path=/", 0);
        jar.set(b"a=2; Path=/", 0);
        jar.set(b"b=x; Path=/api", 0);
        use crate::request::CookieHeader;
        let header = |jar: &Jar, path: &[u8]| {
            let mut out = Vec::new();
            jar.write_header(jar.matching(path), &mut out);
            String::from_utf8(out).unwrap()
        };
        assert_eq!(header(&jar, b"/api/x?q=1"), "Cookie: a=2; b=x\r\n");
        assert_eq!(header(&jar, b"/apix"), "Cookie: a=2\r\n");
        jar.set(b"a=gone; Max-Age=0", 0);
        jar.set(b"b=gone; Path=/api; Expires=Thu, 01 Jan 1970 00:00:00 GMT", 1_000);
        assert_eq!(header(&jar, b"/api"), "");
        for n in 0..40 {
            jar.set(format!("c{n}=v").as_bytes(), 0);
        }
        assert_eq!(jar.cookies.len(), MAX_COOKIES);
        assert_eq!(jar.dropped, 8);
        assert_eq!(imf_fixdate(b"Sun, 06 Nov 1994 08:49:37 GMT"), Some(784_111_777));
    }
}
