//! Response checks, captures and cookies (issue 30; the design is `docs/design/checks.md` section 4.3): the
//! pure, socket-free pieces the connection loop calls.
//!
//! # API
//!
//! - [`compile`] turns one request's `check:` and `capture:` (a single request, a mix entry or a session step)
//!   into an immutable [`EntryChecks`], built at `configure` and shared. [`EntryChecks::needs`] says what a
//!   response must keep; [`EntryChecks::caches`] makes the entry's regex caches, once per worker (a
//!   `meta::Cache` serves one regex, so a worker keeps one [`Caches`] per entry).
//! - An [`Inspector`] per connection (or HTTP/2 stream slot), made once and reused: nothing allocates after a
//!   connection's first responses. Per response:
//!   - [`Inspector::head`]`(entry, caches, status, head_bytes, vars)` once per **final** response head (the
//!     codec's `&data[..used]`: status line, fields, blank line), before any body byte. It resets the
//!     inspector, evaluates status and header checks, copies `Content-Type`, takes header and cookie captures
//!     and keeps the `Set-Cookie` values (for the jar: [`Inspector::set_cookies`]).
//!   - [`Inspector::body`]`(entry, bytes)` with the body's bytes only (never chunk framing), any split. Call it
//!     for every entry with checks: it keeps the body's start and size for examples and `body_size`; the rest
//!     of its work is skipped when `needs().body` is false. The JSON scanner ignores the bytes after its early
//!     stop by itself.
//!   - [`Inspector::finish`]`(entry, caches, vars) -> `[`Outcome`] after the response completed: whole-body
//!     checks, JSON checks, body captures. The outcome says which checks failed and whether the response failed.
//!   - Then, still before the next `head`: [`Inspector::observe`] writes a failed check's observed text for an
//!     example, [`Inspector::captured`] gives each capture's value (or why there is none), and
//!     [`Inspector::content_type`], [`Inspector::body_start`] and [`Inspector::body_bytes`] fill the example.
//! - A user's [`cookie::Jar`] takes the `Set-Cookie` values with the request's path and writes the `Cookie`
//!   header of the next requests. [`capture::unsafe_in`] says where a captured value cannot go.
//!
//! `tests::usage` shows the whole sequence.

pub(crate) mod capture;
pub(crate) mod cookie;
pub(crate) mod expect;
pub(crate) mod json;
pub(crate) mod text;

use expect::{Re, Vars};
use loadgate_model::{Capture, CaptureSource, Check, CheckKind, Expected, JsonExpected, JsonOp, StatusSet, TextOp};
use memchr::memmem::Finder;
use regex_automata::meta::Cache;
use std::fmt::Write;

#[cfg(test)]
/// The body bytes kept for body regexes by default (`defaults.check_body_limit`).
pub(crate) const DEFAULT_BODY_LIMIT: usize = 64 * 1024;
/// The body start kept for examples, and the `Content-Type`.
pub(crate) const BODY_START: usize = 160;
pub(crate) const CONTENT_TYPE: usize = 96;

/// What a response must keep for an entry's checks and captures.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Needs {
    /// Header checks or header/cookie captures read the head's fields.
    pub(crate) head: bool,
    /// A check or capture reads the body (the codec may skip `body()` otherwise; the size is still counted).
    pub(crate) body: bool,
    pub(crate) json: bool,
    /// A body regex (`body_matches`, a `regex` capture): the body is buffered up to the limit.
    pub(crate) buffer_body: bool,
    /// A `cookie` capture reads this response's `Set-Cookie`.
    pub(crate) set_cookie: bool,
}

/// Why an entry's checks could not be compiled (the reader validated them: this is a plan from elsewhere).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub(crate) struct CompileError(String);

#[derive(Debug, Clone)]
enum HeaderOp {
    Exists(bool),
    Equals(Expected),
    Contains(Box<Finder<'static>>),
    Matches(usize),
}

#[derive(Debug, Clone)]
enum Compiled {
    Status(StatusSet),
    Header {
        name: Box<[u8]>,
        display: String,
        ops: Box<[HeaderOp]>,
    },
    /// `state` indexes the inspector's streaming states of this kind.
    BodyContains {
        finder: Box<Finder<'static>>,
        state: usize,
    },
    BodyMatches {
        re: usize,
    },
    BodyEquals {
        expected: Expected,
        literal: Option<Box<[u8]>>,
        state: usize,
    },
    BodySize {
        min: Option<u64>,
        max: Option<u64>,
    },
    Json {
        sel: usize,
        text: String,
        ops: Box<[json::Op]>,
    },
}

#[derive(Debug, Clone)]
enum Source {
    Json(usize),
    Header { name: Box<[u8]>, re: Option<usize> },
    Regex(usize),
    Cookie(Box<[u8]>),
}

#[derive(Debug, Clone)]
struct CompiledCapture {
    slot: u16,
    max_len: usize,
    default: Option<Box<[u8]>>,
    source: Source,
    what: String,
}

/// One request's compiled checks and captures: immutable, shared by the workers.
#[derive(Debug, Clone)]
pub(crate) struct EntryChecks {
    checks: Box<[Compiled]>,
    names: Box<[String]>,
    captures: Box<[CompiledCapture]>,
    regexes: Box<[Re]>,
    json: Option<json::Program>,
    needs: Needs,
    has_status: bool,
    contains: usize,
    equals: usize,
}

/// The regex caches of one entry, one set per worker.
#[derive(Debug)]
pub(crate) struct Caches(Box<[Cache]>);

/// Compiles one request's checks and captures.
pub(crate) fn compile(checks: &[Check], captures: &[Capture]) -> Result<EntryChecks, CompileError> {
    let mut regexes: Vec<Re> = Vec::new();
    let mut re = |p: &loadgate_model::Pattern| -> Result<usize, CompileError> {
        regexes.push(Re::new(&p.0).map_err(CompileError)?);
        Ok(regexes.len() - 1)
    };
    // JSON selectors, shared when equal (a check and a capture of one path): (steps, kept bytes).
    let sel_of =
        |steps: &[loadgate_model::JsonStep], limit: usize, sels: &mut Vec<(Vec<loadgate_model::JsonStep>, usize)>| {
            match sels.iter().position(|(s, _)| s == steps) {
                Some(i) => {
                    sels[i].1 = sels[i].1.max(limit);
                    i
                }
                None => {
                    sels.push((steps.to_vec(), limit));
                    sels.len() - 1
                }
            }
        };
    let mut sels: Vec<(Vec<loadgate_model::JsonStep>, usize)> = Vec::new();
    let mut needs = Needs::default();
    let (mut contains, mut equals) = (0, 0);
    let mut out = Vec::with_capacity(checks.len());
    for c in checks {
        out.push(match &c.kind {
            CheckKind::Status { set } => Compiled::Status(*set),
            CheckKind::Header { name, ops } => {
                needs.head = true;
                let ops = ops
                    .iter()
                    .map(|op| {
                        Ok(match op {
                            TextOp::Exists(e) => HeaderOp::Exists(*e),
                            TextOp::Equals(e) => HeaderOp::Equals(e.clone()),
                            TextOp::Contains(t) => HeaderOp::Contains(Box::new(Finder::new(t.as_bytes()).into_owned())),
                            TextOp::Matches(p) => HeaderOp::Matches(re(p)?),
                        })
                    })
                    .collect::<Result<_, CompileError>>()?;
                Compiled::Header { name: name.to_ascii_lowercase().into_bytes().into(), display: name.clone(), ops }
            }
            CheckKind::BodyContains { text } => {
                needs.body = true;
                contains += 1;
                Compiled::BodyContains {
                    finder: Box::new(Finder::new(text.as_bytes()).into_owned()),
                    state: contains - 1,
                }
            }
            CheckKind::BodyMatches { pattern } => {
                needs.body = true;
                needs.buffer_body = true;
                Compiled::BodyMatches { re: re(pattern)? }
            }
            CheckKind::BodyEquals { expected } => {
                needs.body = true;
                equals += 1;
                let literal = expected.as_literal().map(|t| t.into_bytes().into_boxed_slice());
                Compiled::BodyEquals { expected: expected.clone(), literal, state: equals - 1 }
            }
            CheckKind::BodySize { min, max } => Compiled::BodySize { min: *min, max: *max },
            CheckKind::Json { selector, ops } => {
                needs.body = true;
                needs.json = true;
                let sel = sel_of(&selector.steps, json::DEFAULT_VALUE_LIMIT, &mut sels);
                // No operator: `exists: true`, the default.
                let implicit = [JsonOp::Exists(true)];
                let ops = if ops.is_empty() { &implicit[..] } else { &ops[..] };
                let ops = ops
                    .iter()
                    .map(|op| {
                        Ok(match op {
                            JsonOp::Exists(e) => json::Op::Exists(*e),
                            JsonOp::Equals(JsonExpected::Number(x)) => json::Op::EqNumber(*x),
                            JsonOp::Equals(JsonExpected::Bool(b)) => json::Op::EqBool(*b),
                            JsonOp::Equals(JsonExpected::Null) => json::Op::EqNull,
                            JsonOp::Equals(JsonExpected::Text(e)) => {
                                json::Op::EqText { expected: e.clone(), any_scalar: expect::has_vars(e) }
                            }
                            JsonOp::Contains(t) => json::Op::Contains(Box::new(Finder::new(t.as_bytes()).into_owned())),
                            JsonOp::Matches(p) => json::Op::Matches(re(p)?),
                            JsonOp::Compare { cmp, value } => json::Op::Compare(*cmp, *value),
                            JsonOp::Type(t) => json::Op::Type(*t),
                        })
                    })
                    .collect::<Result<_, CompileError>>()?;
                Compiled::Json { sel, text: selector.text.clone(), ops }
            }
        });
    }
    let mut caps = Vec::with_capacity(captures.len());
    for c in captures {
        let max_len = c.max_len as usize;
        let (source, what) = match &c.source {
            CaptureSource::Json { selector } => {
                needs.body = true;
                needs.json = true;
                (Source::Json(sel_of(&selector.steps, max_len, &mut sels)), selector.text.clone())
            }
            CaptureSource::Header { name, regex } => {
                needs.head = true;
                let r = regex.as_ref().map(&mut re).transpose()?;
                let what = match regex {
                    Some(p) => format!("header {name} matching `{}`", p.0),
                    None => format!("header {name}"),
                };
                (Source::Header { name: name.to_ascii_lowercase().into_bytes().into(), re: r }, what)
            }
            CaptureSource::Regex { pattern } => {
                needs.body = true;
                needs.buffer_body = true;
                (Source::Regex(re(pattern)?), format!("`{}`", pattern.0))
            }
            CaptureSource::Cookie { name } => {
                needs.head = true;
                needs.set_cookie = true;
                (Source::Cookie(name.as_bytes().into()), format!("cookie {name}"))
            }
        };
        caps.push(CompiledCapture {
            slot: c.slot,
            max_len,
            default: c.default.as_ref().map(|d| d.as_bytes().into()),
            source,
            what,
        });
    }
    let json =
        if sels.is_empty() {
            None
        } else {
            Some(json::Program::new(sels.iter().map(|(s, l)| (&s[..], *l))).map_err(|_| {
                CompileError(format!("more than {} JSON selectors in one request", json::MAX_SELECTORS))
            })?)
        };
    if checks.len() > 32 {
        return Err(CompileError("more than 32 checks in one request".into()));
    }
    Ok(EntryChecks {
        has_status: out.iter().any(|c| matches!(c, Compiled::Status(_))),
        checks: out.into(),
        names: checks.iter().map(|c| c.name.clone()).collect(),
        captures: caps.into(),
        regexes: regexes.into(),
        json,
        needs,
        contains,
        equals,
    })
}

impl EntryChecks {
    #[cfg(test)]
    pub(crate) fn needs(&self) -> Needs {
        self.needs
    }

    /// The checks' names, by index (the bits of [`Outcome::failed`]).
    pub(crate) fn names(&self) -> &[String] {
        &self.names
    }

    pub(crate) fn captures(&self) -> usize {
        self.captures.len()
    }

    /// A capture's variable slot.
    pub(crate) fn capture_slot(&self, i: usize) -> u16 {
        self.captures[i].slot
    }

    /// This entry's regex caches, made once per worker.
    pub(crate) fn caches(&self) -> Caches {
        Caches(self.regexes.iter().map(Re::cache).collect())
    }
}

/// A response's verdict.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Outcome {
    /// A bit per check (by index) that failed.
    pub(crate) failed: u32,
    /// A bit per capture that found nothing and has no default (a failed check `capture:<name>`).
    pub(crate) captures_failed: u64,
    /// The status failed: the `status` check, or not 2xx without one.
    pub(crate) status_failed: bool,
}

impl Outcome {
    #[cfg(test)]
    /// Whether the response failed (its status, a check, or a capture).
    pub(crate) fn response_failed(&self) -> bool {
        self.status_failed || self.failed != 0 || self.captures_failed != 0
    }
}

/// A capture's result after [`Inspector::finish`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Captured<'a> {
    /// The value (found, or the default).
    Value(&'a [u8]),
    /// Nothing found and no default: `what` says where it looked (`$.json.token`, `header Location`).
    Missing { what: &'a str },
    /// Longer than the capture's `max_length`.
    TooLong { len: u64, max: usize },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CapState {
    Pending,
    Value,
    Missing,
    TooLong(u64),
}

/// A header check's failure, for its example: the first field's value (cut) and how many fields had the name.
#[derive(Debug, Clone, Copy, Default)]
struct HeaderSeen {
    start: u32,
    len: u32,
    fields: u32,
}

/// The per-connection state of the response being read. See the module's documentation for the sequence.
#[derive(Debug)]
pub(crate) struct Inspector {
    body_limit: usize,
    /// Keep `Set-Cookie` values for the jar (the phase's `cookies`).
    cookies: bool,
    status: u16,
    outcome: Outcome,
    content_type: [u8; CONTENT_TYPE],
    content_type_len: usize,
    body_start: [u8; BODY_START],
    body_start_len: usize,
    body_bytes: u64,
    body: Vec<u8>,
    body_over: bool,
    scanner: json::Scanner,
    contains: Vec<text::Contains>,
    equals: Vec<text::Equals>,
    /// Expected bodies with variables, resolved at `head` (ranges by `equals` state); `Err(slot)` unset.
    expected: Vec<u8>,
    expected_at: Vec<Result<(u32, u32), u16>>,
    /// Header values seen by failed header checks (for examples), and `Set-Cookie` values (`\n`-separated).
    seen: Vec<u8>,
    header_seen: Vec<HeaderSeen>,
    set_cookie: Vec<u8>,
    /// Per capture: its state and value.
    caps: Vec<CapState>,
    cap_values: Vec<Vec<u8>>,
}

impl Inspector {
    /// `body_limit`: the body bytes kept for body regexes; `cookies`: keep `Set-Cookie` for the user's jar.
    pub(crate) fn new(body_limit: usize, cookies: bool) -> Inspector {
        Inspector {
            body_limit,
            cookies,
            status: 0,
            outcome: Outcome::default(),
            content_type: [0; CONTENT_TYPE],
            content_type_len: 0,
            body_start: [0; BODY_START],
            body_start_len: 0,
            body_bytes: 0,
            body: Vec::new(),
            body_over: false,
            scanner: json::Scanner::new(),
            contains: Vec::new(),
            equals: Vec::new(),
            expected: Vec::new(),
            expected_at: Vec::new(),
            seen: Vec::new(),
            header_seen: Vec::new(),
            set_cookie: Vec::new(),
            caps: Vec::new(),
            cap_values: Vec::new(),
        }
    }

    /// A final response head (status line, fields, blank line): resets the inspector for this response.
    pub(crate) fn head(
        &mut self,
        e: &EntryChecks,
        caches: &mut Caches,
        status: u16,
        head: &[u8],
        vars: &(impl Vars + ?Sized),
    ) {
        self.status = status;
        self.outcome = Outcome::default();
        self.body_bytes = 0;
        self.body_start_len = 0;
        self.body.clear();
        self.body_over = false;
        self.seen.clear();
        self.set_cookie.clear();
        self.header_seen.clear();
        self.header_seen.resize(e.checks.len(), HeaderSeen::default());
        self.caps.clear();
        self.caps.resize(e.captures.len(), CapState::Pending);
        while self.cap_values.len() < e.captures.len() {
            self.cap_values.push(Vec::new());
        }
        while self.contains.len() < e.contains {
            self.contains.push(text::Contains::default());
        }
        self.equals.clear();
        self.equals.resize(e.equals, text::Equals::default());
        self.expected.clear();
        self.expected_at.clear();
        if let Some(p) = &e.json {
            self.scanner.reset(p);
        }
        // Content-Type for examples, and Set-Cookie for the jar and cookie captures.
        self.content_type_len = 0;
        let keep_cookies = self.cookies || e.needs.set_cookie;
        for (name, value) in text::fields(head) {
            if text::name_is(name, b"content-type") && self.content_type_len == 0 {
                let n = value.len().min(CONTENT_TYPE);
                self.content_type[..n].copy_from_slice(&value[..n]);
                self.content_type_len = n;
            } else if keep_cookies && text::name_is(name, b"set-cookie") {
                self.set_cookie.extend_from_slice(value);
                self.set_cookie.push(b'\n');
            }
        }
        let status_ok = (200..300).contains(&status);
        self.outcome.status_failed = !e.has_status && !status_ok;
        for (i, c) in e.checks.iter().enumerate() {
            let pass = match c {
                Compiled::Status(set) => {
                    let ok = set.contains(status);
                    if !ok {
                        self.outcome.status_failed = true;
                    }
                    ok
                }
                Compiled::Header { name, ops, .. } => self.header_check(i, name, ops, head, e, caches, vars),
                Compiled::BodyContains { finder, state } => {
                    self.contains[*state].reset(finder);
                    true
                }
                Compiled::BodyEquals { expected, literal: None, .. } => {
                    let start = self.expected.len() as u32;
                    let r = expect::write_expected(expected, vars, &mut self.expected)
                        .map(|()| (start, self.expected.len() as u32 - start));
                    self.expected_at.push(r);
                    true
                }
                _ => true,
            };
            if !pass {
                self.outcome.failed |= 1 << i;
            }
        }
        for (i, c) in e.captures.iter().enumerate() {
            let found = match &c.source {
                Source::Header { name, re } => {
                    let re = re.map(|r| (&e.regexes[r], &mut caches.0[r]));
                    capture::from_header(head, name, re)
                }
                Source::Cookie(name) => {
                    capture::from_set_cookie(self.set_cookie.split(|b| *b == b'\n').filter(|l| !l.is_empty()), name)
                }
                _ => continue,
            };
            take(&mut self.caps, &mut self.cap_values, &mut self.outcome, c, i, found.map(|v| (v, v.len() as u64)));
        }
    }

    #[expect(clippy::too_many_arguments)]
    fn header_check(
        &mut self,
        i: usize,
        name: &[u8],
        ops: &[HeaderOp],
        head: &[u8],
        e: &EntryChecks,
        caches: &mut Caches,
        vars: &(impl Vars + ?Sized),
    ) -> bool {
        let absent_wanted = ops.iter().any(|o| matches!(o, HeaderOp::Exists(false)));
        let mut fields = 0u32;
        let mut pass = false;
        let mut first: Option<&[u8]> = None;
        for v in text::values(head, name) {
            fields += 1;
            first.get_or_insert(v);
            if pass || absent_wanted {
                continue;
            }
            pass = ops.iter().all(|op| match op {
                HeaderOp::Exists(x) => *x,
                HeaderOp::Equals(exp) => expect::expected_eq(exp, vars, v) == Ok(true),
                HeaderOp::Contains(f) => f.find(v).is_some(),
                HeaderOp::Matches(r) => e.regexes[*r].is_match(&mut caches.0[*r], v),
            });
        }
        if absent_wanted {
            pass = fields == 0;
        }
        if !pass {
            let v = first.unwrap_or_default();
            let v = &v[..v.len().min(BODY_START)];
            let start = self.seen.len() as u32;
            self.seen.extend_from_slice(v);
            self.header_seen[i] = HeaderSeen { start, len: v.len() as u32, fields };
        }
        pass
    }

    /// Body bytes (never chunk framing), in any split.
    pub(crate) fn body(&mut self, e: &EntryChecks, bytes: &[u8]) {
        if self.body_start_len < BODY_START {
            let n = bytes.len().min(BODY_START - self.body_start_len);
            self.body_start[self.body_start_len..self.body_start_len + n].copy_from_slice(&bytes[..n]);
            self.body_start_len += n;
        }
        self.body_bytes += bytes.len() as u64;
        if !e.needs.body {
            return;
        }
        if e.needs.buffer_body && !self.body_over {
            if self.body.len() + bytes.len() > self.body_limit {
                self.body_over = true;
            } else {
                if self.body.capacity() == 0 {
                    self.body.reserve(self.body_limit.min(16 * 1024));
                }
                self.body.extend_from_slice(bytes);
            }
        }
        if let Some(p) = &e.json {
            if !self.scanner.done() {
                self.scanner.feed(p, bytes);
            }
        }
        let mut eq = 0;
        for c in e.checks.iter() {
            match c {
                Compiled::BodyContains { finder, state } => self.contains[*state].feed(finder, bytes),
                Compiled::BodyEquals { literal, state, .. } => {
                    let exp = match literal {
                        Some(l) => &l[..],
                        None => match self.expected_at[eq] {
                            Ok((s, n)) => &self.expected[s as usize..(s + n) as usize],
                            Err(_) => &[],
                        },
                    };
                    if literal.is_none() {
                        eq += 1;
                    }
                    self.equals[*state].feed(exp, bytes);
                }
                _ => {}
            }
        }
    }

    /// The expected body of a `body_equals` with variables (by its order among those), or the unset slot.
    fn expected_body<'a>(&'a self, literal: &'a Option<Box<[u8]>>, nth: usize) -> Result<&'a [u8], u16> {
        match literal {
            Some(l) => Ok(&l[..]),
            None => self.expected_at[nth].map(|(s, n)| &self.expected[s as usize..(s + n) as usize]),
        }
    }

    /// The response completed: evaluates the whole-body and JSON checks and takes the body captures.
    pub(crate) fn finish(&mut self, e: &EntryChecks, caches: &mut Caches, vars: &(impl Vars + ?Sized)) -> Outcome {
        debug_assert!(self.caps.len() == e.captures.len(), "finish() without head() for this entry");
        if let Some(p) = &e.json {
            self.scanner.finish(p);
        }
        let mut nth = 0;
        for (i, c) in e.checks.iter().enumerate() {
            let pass = match c {
                Compiled::BodyContains { state, .. } => self.contains[*state].found(),
                Compiled::BodyMatches { re } => {
                    !self.body_over && e.regexes[*re].is_match(&mut caches.0[*re], &self.body)
                }
                Compiled::BodyEquals { literal, state, .. } => {
                    let r = self.expected_body(literal, nth);
                    if literal.is_none() {
                        nth += 1;
                    }
                    r.is_ok_and(|exp| self.equals[*state].holds(exp))
                }
                Compiled::BodySize { min, max } => text::size_holds(self.body_bytes, *min, *max),
                Compiled::Json { sel, ops, .. } => {
                    let l = self.scanner.get(*sel);
                    ops.iter().all(|op| json::holds(op, l, vars, &e.regexes, &mut caches.0))
                }
                _ => continue,
            };
            if !pass {
                self.outcome.failed |= 1 << i;
            }
        }
        for (i, c) in e.captures.iter().enumerate() {
            let found = match &c.source {
                Source::Json(sel) => capture::from_json(self.scanner.get(*sel)),
                Source::Regex(r) if !self.body_over => {
                    capture::from_body(&e.regexes[*r], &mut caches.0[*r], &self.body).map(|v| (v, v.len() as u64))
                }
                Source::Regex(_) => None,
                _ => continue,
            };
            take(&mut self.caps, &mut self.cap_values, &mut self.outcome, c, i, found);
        }
        self.outcome
    }

    pub(crate) fn status(&self) -> u16 {
        self.status
    }

    /// The response's `Content-Type` (cut at 96 bytes), empty without one.
    pub(crate) fn content_type(&self) -> &[u8] {
        &self.content_type[..self.content_type_len]
    }

    /// The body's first 160 bytes.
    pub(crate) fn body_start(&self) -> &[u8] {
        &self.body_start[..self.body_start_len]
    }

    pub(crate) fn body_bytes(&self) -> u64 {
        self.body_bytes
    }

    /// The response's `Set-Cookie` values (kept when the inspector keeps cookies or a cookie capture needs them),
    /// for [`cookie::Jar::set`].
    pub(crate) fn set_cookies(&self) -> impl Iterator<Item = &[u8]> {
        self.set_cookie.split(|b| *b == b'\n').filter(|l| !l.is_empty())
    }

    /// A capture's result.
    pub(crate) fn captured<'a>(&'a self, e: &'a EntryChecks, i: usize) -> Captured<'a> {
        match self.caps[i] {
            CapState::Value => Captured::Value(&self.cap_values[i]),
            CapState::TooLong(len) => Captured::TooLong { len, max: e.captures[i].max_len },
            CapState::Missing | CapState::Pending => Captured::Missing { what: &e.captures[i].what },
        }
    }

    /// Writes why check `i` failed (`out` is cleared first): `$.total was 0, expected >= 1`,
    /// `content-type was "application/xml"`, `status was 404, expected 200`.
    pub(crate) fn observe(
        &self,
        e: &EntryChecks,
        caches: &mut Caches,
        i: usize,
        vars: &(impl Vars + ?Sized),
        out: &mut String,
    ) {
        out.clear();
        let mut nth = 0;
        for c in &e.checks[..i] {
            if let Compiled::BodyEquals { literal: None, .. } = c {
                nth += 1;
            }
        }
        let _ = match &e.checks[i] {
            Compiled::Status(set) => write!(out, "status was {}, expected {set}", self.status),
            Compiled::Header { display, ops, .. } => {
                let s = self.header_seen[i];
                if s.fields == 0 {
                    write!(out, "no {display} header")
                } else {
                    let v = String::from_utf8_lossy(&self.seen[s.start as usize..(s.start + s.len) as usize]);
                    let _ = write!(out, "{display} was {v:?}");
                    if s.fields > 1 {
                        let _ = write!(out, " (and {} more)", s.fields - 1);
                    }
                    let _ = match ops.iter().find(|o| !matches!(o, HeaderOp::Exists(true))) {
                        Some(HeaderOp::Exists(false)) => write!(out, ", expected no {display} header"),
                        Some(HeaderOp::Equals(exp)) => {
                            let mut t = Vec::new();
                            match expect::write_expected(exp, vars, &mut t) {
                                Ok(()) => write!(out, ", expected {:?}", String::from_utf8_lossy(&t)),
                                Err(slot) => write!(out, ", expected {exp} (variable {slot} was not captured)"),
                            }
                        }
                        Some(HeaderOp::Contains(f)) => {
                            write!(out, ", expected text containing {:?}", String::from_utf8_lossy(f.needle()))
                        }
                        Some(HeaderOp::Matches(r)) => {
                            write!(out, ", expected text matching `{}`", e.regexes[*r].source)
                        }
                        _ => Ok(()),
                    };
                    Ok(())
                }
            }
            Compiled::BodyContains { finder, .. } => {
                write!(
                    out,
                    "the body ({} bytes) does not contain {:?}",
                    self.body_bytes,
                    String::from_utf8_lossy(finder.needle())
                )
            }
            Compiled::BodyMatches { re } => {
                if self.body_over {
                    write!(
                        out,
                        "the body ({} bytes) is over the {} bytes that body regexes read (`defaults.check_body_limit`)",
                        self.body_bytes, self.body_limit
                    )
                } else {
                    write!(out, "the body ({} bytes) does not match `{}`", self.body_bytes, e.regexes[*re].source)
                }
            }
            Compiled::BodyEquals { literal, state, expected } => match self.expected_body(literal, nth) {
                Ok(exp) => write!(
                    out,
                    "the body ({} bytes) differs from the expected {} bytes at byte {}",
                    self.body_bytes,
                    exp.len(),
                    self.equals[*state].differs_at()
                ),
                Err(slot) => write!(out, "the expected body {expected} uses variable {slot}, which was not captured"),
            },
            Compiled::BodySize { min, max } => {
                let _ = write!(out, "the body was {} bytes, expected", self.body_bytes);
                match (min, max) {
                    (Some(a), Some(b)) => write!(out, " {a} to {b} bytes"),
                    (Some(a), None) => write!(out, " at least {a} bytes"),
                    (None, Some(b)) => write!(out, " at most {b} bytes"),
                    (None, None) => Ok(()),
                }
            }
            Compiled::Json { sel, text, ops } => {
                let l = self.scanner.get(*sel);
                let failing = ops.iter().find(|op| !json::holds(op, l, vars, &e.regexes, &mut caches.0));
                let failing = failing.unwrap_or(&json::Op::Exists(true));
                json::describe(out, text, failing, l, vars, &e.regexes);
                Ok(())
            }
        };
    }
}

/// Records a capture's value, its default, or that nothing was found.
fn take(
    caps: &mut [CapState],
    values: &mut [Vec<u8>],
    outcome: &mut Outcome,
    c: &CompiledCapture,
    i: usize,
    found: Option<(&[u8], u64)>,
) {
    let (value, len) = match found {
        Some(v) => v,
        None => match &c.default {
            Some(d) => (&d[..], d.len() as u64),
            None => {
                caps[i] = CapState::Missing;
                outcome.captures_failed |= 1 << i;
                return;
            }
        },
    };
    if len > c.max_len as u64 {
        caps[i] = CapState::TooLong(len);
        outcome.captures_failed |= 1 << i;
        return;
    }
    let v = &mut values[i];
    v.clear();
    v.extend_from_slice(value);
    caps[i] = CapState::Value;
}

#[cfg(test)]
mod tests {
    use super::*;
    use expect::NoVars;
    use loadgate_model::check::default_name;
    use loadgate_model::generate::Segment;
    use loadgate_model::{Comparison, JsonSelector, JsonType, Pattern};

    fn check(kind: CheckKind) -> Check {
        Check { name: default_name(&kind), kind }
    }

    fn json(sel: &str, ops: Vec<JsonOp>) -> Check {
        check(CheckKind::Json { selector: JsonSelector::parse(sel).unwrap(), ops })
    }

    fn capture(name: &str, slot: u16, source: CaptureSource) -> Capture {
        Capture { name: name.into(), slot, source, default: None, max_len: 4096 }
    }

    const USER: &str = r#"{"id":4711,"name":"Ada Lovelace","email":"ada@example.com","active":true,"roles":["admin","editor"],"address":{"street":"12 St James's Square","city":"London","zip":"SW1Y 4JH"},"orders":[{"id":1,"total":12.5},{"id":2,"total":99.99}],"token":"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiI0NzExIn0.c2lnbmF0dXJl"}"#;

    fn head(status: u16, ct: &str, extra: &str) -> Vec<u8> {
        format!("HTTP/1.1 {status} X\r\nContent-Type: {ct}\r\n{extra}Content-Length: 1\r\n\r\n").into_bytes()
    }

    /// The sequence the codec and the worker follow, once per response.
    #[test]
    fn usage() {
        // At `configure`: one EntryChecks per request template; per worker: its caches; per connection: an
        // inspector; per user: a jar.
        let checks = vec![
            check(CheckKind::Status { set: StatusSet::parse_item("2xx").unwrap() }),
            check(CheckKind::Header {
                name: "content-type".into(),
                ops: vec![TextOp::Matches(Pattern("^application/json".into()))],
            }),
            json("$.orders[*].total", vec![JsonOp::Compare { cmp: Comparison::Ge, value: 1.0 }]),
        ];
        let captures = vec![
            capture("token", 0, CaptureSource::Json { selector: JsonSelector::parse("$.token").unwrap() }),
            capture("sid", 1, CaptureSource::Cookie { name: "sid".into() }),
        ];
        let entry = compile(&checks, &captures).unwrap();
        assert_eq!(entry.needs(), Needs { head: true, body: true, json: true, buffer_body: false, set_cookie: true });
        let mut caches = entry.caches();
        let mut inspector = Inspector::new(DEFAULT_BODY_LIMIT, true);
        let mut jar = cookie::Jar::new();

        // The codec: the final head, then the body's bytes in whatever reads they came.
        let h = head(200, "application/json", "Set-Cookie: sid=s1; Path=/\r\n");
        inspector.head(&entry, &mut caches, 200, &h, &NoVars);
        for chunk in USER.as_bytes().chunks(7) {
            inspector.body(&entry, chunk);
        }
        // The response completed: the verdict, the captures, the cookies.
        let outcome = inspector.finish(&entry, &mut caches, &NoVars);
        assert!(!outcome.response_failed(), "{outcome:?}");
        assert_eq!(
            inspector.captured(&entry, 0),
            Captured::Value(b"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiI0NzExIn0.c2lnbmF0dXJl")
        );
        assert_eq!(inspector.captured(&entry, 1), Captured::Value(b"s1"));
        for v in inspector.set_cookies() {
            jar.set(v, b"/login", 0);
        }
        let mut cookie = Vec::new();
        assert!(jar.write_header(b"/me", &mut cookie));
        assert_eq!(cookie, b"sid=s1");

        // A failing response: the outcome's bits, then the example's parts.
        let h = head(200, "application/xml", "");
        inspector.head(&entry, &mut caches, 200, &h, &NoVars);
        inspector.body(&entry, br#"{"orders":[{"total":0}]}"#);
        let outcome = inspector.finish(&entry, &mut caches, &NoVars);
        assert_eq!(outcome.failed, 0b110);
        assert_eq!(outcome.captures_failed, 0b11);
        assert!(outcome.response_failed() && !outcome.status_failed);
        let mut observed = String::with_capacity(160);
        inspector.observe(&entry, &mut caches, 1, &NoVars, &mut observed);
        assert_eq!(observed, r#"content-type was "application/xml", expected text matching `^application/json`"#);
        inspector.observe(&entry, &mut caches, 2, &NoVars, &mut observed);
        assert_eq!(observed, "$.orders[*].total was 0, expected >= 1");
        assert_eq!(inspector.captured(&entry, 0), Captured::Missing { what: "$.token" });
        assert_eq!(inspector.content_type(), b"application/xml");
        assert_eq!(inspector.body_start(), br#"{"orders":[{"total":0}]}"#);
        assert_eq!(inspector.body_bytes(), 24);
    }

    fn run(
        checks: &[Check],
        status: u16,
        head_extra: &str,
        body: &[&[u8]],
        vars: &[Option<Vec<u8>>],
    ) -> (Outcome, Vec<String>) {
        let entry = compile(checks, &[]).unwrap();
        let mut caches = entry.caches();
        let mut ins = Inspector::new(64, false);
        let h = head(status, "application/json", head_extra);
        ins.head(&entry, &mut caches, status, &h, vars);
        for b in body {
            ins.body(&entry, b);
        }
        let o = ins.finish(&entry, &mut caches, vars);
        let observed = (0..checks.len())
            .filter(|i| o.failed & (1 << i) != 0)
            .map(|i| {
                let mut s = String::new();
                ins.observe(&entry, &mut caches, i, vars, &mut s);
                s
            })
            .collect();
        (o, observed)
    }

    #[test]
    fn status_decides_success() {
        let (o, _) = run(&[], 404, "", &[], &[]);
        assert!(o.status_failed && o.response_failed());
        let accept_404 = [check(CheckKind::Status { set: StatusSet::parse_item("404").unwrap() })];
        let (o, _) = run(&accept_404, 404, "", &[], &[]);
        assert!(!o.response_failed());
        let (o, obs) = run(&accept_404, 200, "", &[], &[]);
        assert!(o.status_failed);
        assert_eq!(obs, vec!["status was 200, expected 404"]);
    }

    #[test]
    fn header_checks() {
        let h = |ops| check(CheckKind::Header { name: "x-a".into(), ops });
        let extra = "X-A:  one \r\nx-a: two\r\n";
        let (o, _) = run(
            &[h(vec![TextOp::Exists(true)]), h(vec![TextOp::Equals(Expected::literal("two"))])],
            200,
            extra,
            &[],
            &[],
        );
        assert_eq!(o.failed, 0);
        let (o, obs) = run(&[h(vec![TextOp::Contains("three".into())])], 200, extra, &[], &[]);
        assert_eq!(o.failed, 1);
        assert_eq!(obs, vec![r#"x-a was "one" (and 1 more), expected text containing "three""#]);
        let (o, obs) = run(&[h(vec![TextOp::Exists(false)])], 200, extra, &[], &[]);
        assert_eq!((o.failed, obs[0].as_str()), (1, r#"x-a was "one" (and 1 more), expected no x-a header"#));
        let (o, obs) = run(&[h(vec![TextOp::Exists(true)])], 200, "", &[], &[]);
        assert_eq!((o.failed, obs[0].as_str()), (1, "no x-a header"));
        let (o, _) = run(&[h(vec![TextOp::Exists(false)])], 200, "", &[], &[]);
        assert_eq!(o.failed, 0);
        // Expected text with a captured variable.
        let var = Expected(vec![Segment::Text("t".into()), Segment::Var { slot: 0, encode: false }]);
        let vars = [Some(b"wo".to_vec())];
        let (o, _) = run(&[h(vec![TextOp::Equals(var.clone())])], 200, extra, &[], &vars);
        assert_eq!(o.failed, 0);
        let (o, obs) = run(&[h(vec![TextOp::Equals(var)])], 200, extra, &[], &[None]);
        assert_eq!(o.failed, 1);
        assert!(obs[0].contains("variable 0 was not captured"), "{}", obs[0]);
    }

    #[test]
    fn body_checks_stream() {
        let checks = [
            check(CheckKind::BodyContains { text: "World".into() }),
            check(CheckKind::BodyEquals { expected: Expected::literal("Hello, World!") }),
            check(CheckKind::BodySize { min: Some(13), max: Some(13) }),
            check(CheckKind::BodyMatches { pattern: Pattern("W.rld!$".into()) }),
        ];
        let (o, _) = run(&checks, 200, "", &[b"Hello, Wo", b"rld!"], &[]);
        assert_eq!(o.failed, 0);
        let (o, obs) = run(&checks, 200, "", &[b"Hello, Bob!"], &[]);
        assert_eq!(o.failed, 0b1111);
        assert_eq!(obs[0], r#"the body (11 bytes) does not contain "World""#);
        assert_eq!(obs[1], "the body (11 bytes) differs from the expected 13 bytes at byte 7");
        assert_eq!(obs[2], "the body was 11 bytes, expected 13 to 13 bytes");
        assert_eq!(obs[3], "the body (11 bytes) does not match `W.rld!$`");
        // Over the buffer limit (64 bytes here), body regexes fail and say why.
        let big = vec![b'x'; 100];
        let (o, obs) = run(&checks[3..], 200, "", &[&big], &[]);
        assert_eq!(o.failed, 1);
        assert!(obs[0].contains("over the 64 bytes that body regexes read"), "{}", obs[0]);
        // body_equals with a variable.
        let var = Expected(vec![Segment::Text("id=".into()), Segment::Var { slot: 0, encode: false }]);
        let eq = [check(CheckKind::BodyEquals { expected: var })];
        let (o, _) = run(&eq, 200, "", &[b"id", b"=42"], &[Some(b"42".to_vec())]);
        assert_eq!(o.failed, 0);
        let (o, _) = run(&eq, 200, "", &[b"id=43"], &[Some(b"42".to_vec())]);
        assert_eq!(o.failed, 1);
    }

    #[test]
    fn json_operators_and_observations() {
        let body: &[&[u8]] = &[br#"{"a": "x", "n": 1.0, "b": false, "z": null, "o": {}, "s": "1"}"#];
        let eq = |sel: &str, e: JsonExpected| json(sel, vec![JsonOp::Equals(e)]);
        let holds = [
            eq("$.n", JsonExpected::Number(1.0)),
            eq("$.b", JsonExpected::Bool(false)),
            eq("$.z", JsonExpected::Null),
            eq("$.a", JsonExpected::Text(Expected::literal("x"))),
            eq("$.s", JsonExpected::Text(Expected::literal("1"))),
            json("$.a", vec![JsonOp::Contains("x".into()), JsonOp::Matches(Pattern("^x$".into()))]),
            json("$.o", vec![JsonOp::Type(JsonType::Object)]),
            json("$.nope", vec![JsonOp::Exists(false)]),
            json("$.n", vec![JsonOp::Compare { cmp: Comparison::Lt, value: 2.0 }]),
        ];
        let (o, obs) = run(&holds, 200, "", body, &[]);
        assert_eq!(o.failed, 0, "{obs:?}");
        let fails = [
            eq("$.a", JsonExpected::Number(1.0)),
            eq("$.s", JsonExpected::Number(1.0)),
            json("$.token", vec![]),
            json("$.n", vec![JsonOp::Compare { cmp: Comparison::Ge, value: 2.0 }]),
            json("$.o", vec![JsonOp::Type(JsonType::Array)]),
            eq("$.n", JsonExpected::Text(Expected::literal("1.0"))),
        ];
        let fails: Vec<Check> = fails
            .into_iter()
            .map(|mut c| {
                if let CheckKind::Json { ops, .. } = &mut c.kind {
                    if ops.is_empty() {
                        ops.push(JsonOp::Exists(true));
                    }
                }
                c
            })
            .collect();
        let (o, _) = run(&[json("$.a", vec![])], 200, "", body, &[]);
        assert_eq!(o.failed, 0);
        let (o, obs) = run(&fails, 200, "", body, &[]);
        assert_eq!(o.failed, 0b111111);
        assert_eq!(
            obs,
            vec![
                r#"$.a was "x" (string), expected 1"#,
                r#"$.s was "1" (string), expected 1"#,
                "$.token not found",
                "$.n was 1.0, expected >= 2",
                "$.o was an object, expected type array",
                "$.n was 1.0 (number), expected \"1.0\"",
            ]
        );
        // With a variable, text compares any scalar's text.
        let var = Expected(vec![Segment::Var { slot: 0, encode: false }]);
        let (o, _) = run(&[eq("$.n", JsonExpected::Text(var))], 200, "", body, &[Some(b"1.0".to_vec())]);
        assert_eq!(o.failed, 0);
        // Not JSON.
        let (o, obs) = run(&[json("$.a", vec![JsonOp::Exists(true)])], 200, "", &[b"<html>"], &[]);
        assert_eq!(o.failed, 1);
        assert_eq!(obs[0], "$.a not read: the body is not JSON at byte 0: expected a value");
    }

    #[test]
    fn captures_with_defaults_bounds_and_sources() {
        let mut caps = vec![
            capture(
                "loc",
                0,
                CaptureSource::Header { name: "location".into(), regex: Some(Pattern(r"/(\d+)$".into())) },
            ),
            capture("csrf", 1, CaptureSource::Regex { pattern: Pattern(r#"value="([^"]+)""#.into()) }),
            capture("missing", 2, CaptureSource::Json { selector: JsonSelector::parse("$.nope").unwrap() }),
            capture("long", 3, CaptureSource::Json { selector: JsonSelector::parse("$.long").unwrap() }),
        ];
        caps[2].default = Some("dflt".into());
        caps[3].max_len = 4;
        let entry = compile(&[], &caps).unwrap();
        let mut caches = entry.caches();
        let mut ins = Inspector::new(1024, false);
        let h = head(201, "text/html", "Location: /items/17\r\n");
        ins.head(&entry, &mut caches, 201, &h, &NoVars);
        // Not JSON after all: the JSON captures fall back to their default or fail.
        ins.body(&entry, br#"<input value="tok"> {"long": "#);
        let o = ins.finish(&entry, &mut caches, &NoVars);
        assert_eq!(ins.captured(&entry, 0), Captured::Value(b"17"));
        assert_eq!(ins.captured(&entry, 1), Captured::Value(b"tok"));
        assert_eq!(ins.captured(&entry, 2), Captured::Value(b"dflt"));
        assert_eq!(ins.captured(&entry, 3), Captured::Missing { what: "$.long" });
        assert_eq!(o.captures_failed, 0b1000);
        ins.head(&entry, &mut caches, 201, &h, &NoVars);
        ins.body(&entry, br#"{"long": "12345"}"#);
        let o = ins.finish(&entry, &mut caches, &NoVars);
        assert_eq!(ins.captured(&entry, 3), Captured::TooLong { len: 5, max: 4 });
        assert_eq!(o.captures_failed, 0b1010);
    }

    #[test]
    fn a_selector_shared_by_a_check_and_a_capture_is_scanned_once() {
        let sel = JsonSelector::parse("$.token").unwrap();
        let entry = compile(
            &[json("$.token", vec![JsonOp::Exists(true)])],
            &[capture("t", 0, CaptureSource::Json { selector: sel })],
        )
        .unwrap();
        assert_eq!(entry.json.as_ref().unwrap().len(), 1);
    }

    #[test]
    fn shared_between_workers() {
        fn shared<T: Send + Sync>() {}
        fn owned<T: Send>() {}
        shared::<EntryChecks>();
        owned::<Inspector>();
        owned::<Caches>();
        owned::<cookie::Jar>();
    }

    #[test]
    fn steady_state_allocates_nothing_new() {
        let checks =
            [json("$.token", vec![JsonOp::Exists(true)]), check(CheckKind::BodyContains { text: "London".into() })];
        let entry = compile(
            &checks,
            &[capture("t", 0, CaptureSource::Json { selector: JsonSelector::parse("$.token").unwrap() })],
        )
        .unwrap();
        let mut caches = entry.caches();
        let mut ins = Inspector::new(DEFAULT_BODY_LIMIT, false);
        let h = head(200, "application/json", "");
        let mut once = || {
            ins.head(&entry, &mut caches, 200, &h, &NoVars);
            for c in USER.as_bytes().chunks(50) {
                ins.body(&entry, c);
            }
            assert_eq!(ins.finish(&entry, &mut caches, &NoVars).failed, 0);
            (ins.cap_values[0].as_ptr(), ins.contains[0].found())
        };
        let first = once();
        for _ in 0..20 {
            assert_eq!(once(), first);
        }
    }
}
