//! Response checks, captures and cookies on the worker's connections (issue 30, `docs/design/checks.md` 4.3): the
//! worker's side of [`crate::check`].
//!
//! A phase's checks compile once into a [`CheckPlan`] (one [`EntryChecks`] per request entry: the single request,
//! a mix entry or a session step), shared by the workers. A worker keeps one set of regex caches per entry
//! ([`WorkerCaches`]); each connection that checks has one [`Inspector`], made at its first checked response and
//! reused. The codec shows the inspector the response's head and body bytes as it frames them ([`Inspecting`],
//! the codec's `Inspect`), and [`judge`] counts the response into the worker's [`CheckTally`] once it completed,
//! with an example of each failure (bounded), and stores the captured values in the user's variables and its
//! `Set-Cookie`s in the user's jar.

use std::time::{SystemTime, UNIX_EPOCH};

use loadgate_measure::CheckExample;
use loadgate_plan::RequestPlan;

use super::tally::CheckTally;
use crate::check::cookie::Jar;
use crate::check::expect::{NoVars, Vars as CheckVars};
use crate::check::{self, Caches, Captured, EntryChecks, Inspector};
use crate::codec::Inspect;
use crate::vars::Vars;

/// A phase's checks, compiled: one entry per request the workers tell apart.
#[derive(Debug)]
pub(crate) struct CheckPlan {
    entries: Box<[EntryChecks]>,
    /// The users keep cookie jars (`cookies:`, sessions only).
    pub cookies: bool,
    /// The body bytes kept for body regexes (`defaults.check_body_limit`).
    body_limit: usize,
}

impl CheckPlan {
    /// The plan of a phase's entries (see `loadgate_plan::verify::entries`); `None` when no entry checks or
    /// captures anything and no jar is kept: the connections then run the plain parser.
    pub fn new(entries: &[&RequestPlan], body_limit: u64, cookies: bool) -> Result<Option<CheckPlan>, String> {
        if !cookies && entries.iter().all(|r| r.checks.is_empty() && r.captures.is_empty()) {
            return Ok(None);
        }
        let compiled = entries
            .iter()
            .map(|r| check::compile(&r.checks, &r.captures).map_err(|e| e.to_string()))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Some(CheckPlan {
            entries: compiled.into(),
            cookies,
            body_limit: usize::try_from(body_limit).unwrap_or(usize::MAX),
        }))
    }

    /// How many checks (captures included) each entry has: what the tally counts.
    pub fn counts(&self) -> Vec<usize> {
        self.entries.iter().map(|e| e.names().len() + e.captures()).collect()
    }

    /// Entry `e`'s checks.
    pub fn entry(&self, e: u32) -> Option<&EntryChecks> {
        self.entries.get(e as usize)
    }

    /// Whether responses of entry `e` go through an inspector: it checks or captures, or users keep cookies.
    #[inline]
    pub fn inspects(&self, e: u32) -> bool {
        self.cookies || self.entries.get(e as usize).is_some_and(|c| !c.names().is_empty() || c.captures() > 0)
    }

    /// A connection's inspector.
    pub fn inspector(&self) -> Inspector {
        Inspector::new(self.body_limit, self.cookies)
    }

    /// A worker's regex caches, one set per entry.
    pub fn caches(&self) -> WorkerCaches {
        WorkerCaches(self.entries.iter().map(EntryChecks::caches).collect())
    }
}

/// One worker's regex caches (a cache serves one regex, and a worker runs one response at a time).
#[derive(Debug)]
pub(crate) struct WorkerCaches(Vec<Caches>);

impl WorkerCaches {
    pub fn entry(&mut self, e: u32) -> Option<&mut Caches> {
        self.0.get_mut(e as usize)
    }
}

/// The user's variables as checks read them.
impl CheckVars for Vars {
    fn var(&self, slot: u16) -> Option<&[u8]> {
        self.get(slot)
    }
}

fn vars_of(vars: Option<&Vars>) -> &dyn CheckVars {
    match vars {
        Some(v) => v,
        None => &NoVars,
    }
}

/// The codec's view of an inspector while one response of `checks` is read.
pub(crate) struct Inspecting<'a> {
    pub inspector: &'a mut Inspector,
    pub checks: &'a EntryChecks,
    pub caches: &'a mut Caches,
    pub vars: Option<&'a Vars>,
}

impl Inspect for Inspecting<'_> {
    #[inline]
    fn head(&mut self, status: u16, head: &[u8]) {
        self.inspector.head(self.checks, self.caches, status, head, vars_of(self.vars));
    }

    #[inline]
    fn body(&mut self, bytes: &[u8]) {
        self.inspector.body(self.checks, bytes);
    }
}

/// What a user keeps from response to response: its variables and its cookie jar, and the path of its request
/// in flight (a cookie without a `Path` belongs to the request's directory).
pub(crate) struct UserSide<'a> {
    pub vars: Option<&'a mut Vars>,
    pub jar: Option<&'a mut Jar>,
    pub request_path: &'a [u8],
}

/// Judges the response the inspector has just read for entry `entry`: each check and capture counted into
/// `tally` (a failure with its example), the captured values set in the user's variables, its `Set-Cookie`s
/// stored in the user's jar.
pub(crate) fn judge(
    inspector: &mut Inspector,
    checks: &EntryChecks,
    caches: &mut Caches,
    entry: u32,
    user: UserSide<'_>,
    tally: &mut CheckTally,
) {
    let e = entry as usize;
    let outcome = inspector.finish(checks, caches, vars_of(user.vars.as_deref()));
    let mut observed = String::new();
    for i in 0..checks.names().len() {
        let passed = outcome.failed & (1 << i) == 0;
        tally.count(e, i, passed, || {
            inspector.observe(checks, caches, i, vars_of(user.vars.as_deref()), &mut observed);
            example(inspector, std::mem::take(&mut observed))
        });
    }
    let base = checks.names().len();
    let mut vars = user.vars;
    let mut capture_failed = false;
    for c in 0..checks.captures() {
        let verdict = match inspector.captured(checks, c) {
            Captured::Value(v) => {
                if let Some(vars) = vars.as_deref_mut() {
                    vars.set(checks.capture_slot(c), v);
                }
                Ok(())
            }
            Captured::Missing { what } => Err(format!("{what} not found")),
            Captured::TooLong { len, max } => Err(format!("the value is {len} bytes, over `max_length` ({max})")),
        };
        capture_failed |= verdict.is_err();
        tally.count(e, base + c, verdict.is_ok(), || example(inspector, verdict.err().unwrap_or_default()));
    }
    if let Some(jar) = user.jar {
        let now = now_unix();
        for v in inspector.set_cookies() {
            jar.set(v, user.request_path, now);
        }
    }
    let status = inspector.status();
    let is_2xx = (200..300).contains(&status);
    let accepted_non_2xx = !is_2xx && !outcome.status_failed;
    let check_failed = outcome.failed != 0 || capture_failed;
    // A failed check fails a response its status does not already fail (2xx, or accepted by a status check;
    // a 2xx refused by a status check fails by that check).
    let failed = check_failed && (is_2xx || accepted_non_2xx);
    tally.response(e, failed, accepted_non_2xx);
}

/// A failure example: what came back, as much as a reader needs.
fn example(i: &Inspector, observed: String) -> CheckExample {
    CheckExample {
        status: i.status(),
        content_type: String::from_utf8_lossy(i.content_type()).into_owned(),
        observed,
        body_start: String::from_utf8_lossy(i.body_start()).into_owned(),
        body_len: i.body_bytes(),
    }
}

fn now_unix() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// The path of a serialized request (`METHOD PATH HTTP/1.1`): what cookies are matched against.
pub(crate) fn request_path(request: &[u8]) -> &[u8] {
    let line = &request[..request.iter().position(|&b| b == b'\r').unwrap_or(request.len())];
    let mut parts = line.splitn(3, |&b| b == b' ');
    parts.next();
    parts.next().unwrap_or(b"/")
}

impl crate::request::CookieHeader for Jar {
    fn write_header(&self, path: &[u8], out: &mut Vec<u8>) {
        let mark = out.len();
        out.extend_from_slice(b"Cookie: ");
        if Jar::write_header(self, path, out) {
            out.extend_from_slice(b"\r\n");
        } else {
            out.truncate(mark);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use loadgate_model::{Capture, CaptureSource, Check, CheckKind, JsonSelector, StatusSet};

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

    /// Feeds a whole response through the codec in pieces of `step`, then judges it.
    fn run(r: &RequestPlan, response: &[u8], step: usize, vars: &mut Vars, jar: &mut Jar) -> CheckTally {
        let plan = CheckPlan::new(&[r], 64 * 1024, true).unwrap().unwrap();
        let mut caches = plan.caches();
        let mut tally = CheckTally::new(&plan.counts());
        let mut inspector = plan.inspector();
        let mut parser = crate::codec::ResponseParser::new();
        let checks = plan.entry(0).unwrap();
        {
            let mut seeing =
                Inspecting { inspector: &mut inspector, checks, caches: caches.entry(0).unwrap(), vars: Some(vars) };
            for piece in response.chunks(step) {
                let mut off = 0;
                while off < piece.len() {
                    let (n, _) = parser.feed_with(&piece[off..], false, &mut seeing).unwrap();
                    off += n;
                }
            }
        }
        let user = UserSide { vars: Some(vars), jar: Some(jar), request_path: b"/login" };
        judge(&mut inspector, checks, caches.entry(0).unwrap(), 0, user, &mut tally);
        tally
    }

    const JSON: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nLocation: /anything/1042\r\n\
Set-Cookie: sid=u7; Path=/\r\nContent-Length: 36\r\n\r\n{\"json\": {\"token\": \"tok-1\"}, \"n\": 3}";

    #[test]
    fn captures_reach_the_users_variables_and_jar_at_any_split() {
        let r = request(
            vec![CheckKind::Status { set: StatusSet::parse_item("2xx").unwrap() }],
            vec![
                (0, CaptureSource::Json { selector: JsonSelector::parse("$.json.token").unwrap() }),
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
            let mut jar = Jar::new();
            let tally = run(&r, JSON, step, &mut vars, &mut jar);
            assert!(tally.entry(0).iter().all(|c| c.failed == 0 && c.passed == 1), "step {step}: {:?}", tally.entry(0));
            assert_eq!(vars.get(0), Some(&b"tok-1"[..]));
            assert_eq!(vars.get(1), Some(&b"1042"[..]));
            assert_eq!(vars.get(2), Some(&b"u7"[..]));
            let mut out = Vec::new();
            crate::request::CookieHeader::write_header(&jar, b"/cookies", &mut out);
            assert_eq!(out, b"Cookie: sid=u7\r\n");
            assert_eq!(tally.checked[0].responses, 1);
            assert_eq!(tally.checked[0].failed, 0);
        }
    }

    #[test]
    fn failures_count_with_what_came_back() {
        let r = request(
            vec![
                CheckKind::Status { set: StatusSet::parse_item("201").unwrap() },
                CheckKind::Json { selector: JsonSelector::parse("$.missing").unwrap(), ops: vec![] },
            ],
            vec![(0, CaptureSource::Json { selector: JsonSelector::parse("$.nope").unwrap() })],
        );
        let mut vars = Vars::new(1);
        let tally = run(&r, JSON, 5, &mut vars, &mut Jar::new());
        let failed: Vec<u64> = tally.entry(0).iter().map(|c| c.failed).collect();
        assert_eq!(failed, [1, 1, 1]);
        let e = &tally.entry(0)[0].examples[0];
        assert_eq!((e.status, e.content_type.as_str(), e.body_len), (200, "application/json", 36));
        assert!(e.observed.contains("status was 200"), "{}", e.observed);
        assert!(e.body_start.starts_with("{\"json\""));
        assert!(tally.entry(0)[2].examples[0].observed.contains("not found"));
        assert_eq!(vars.get(0), None);
        // A 2xx that a status check refused fails as a response (counted here, not in non-2xx).
        assert_eq!(tally.checked[0].failed, 1);
    }

    #[test]
    fn a_status_check_accepts_a_non_2xx() {
        let r = request(vec![CheckKind::Status { set: StatusSet::parse_item("404").unwrap() }], vec![]);
        let tally =
            run(&r, b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n", 9, &mut Vars::new(0), &mut Jar::new());
        assert_eq!(tally.checked[0].accepted_non_2xx, 1);
        assert_eq!(tally.checked[0].failed, 0);
    }

    #[test]
    fn request_paths() {
        assert_eq!(request_path(b"GET /a/b?x=1 HTTP/1.1\r\nHost: h\r\n\r\n"), b"/a/b?x=1");
        assert_eq!(request_path(b""), b"/");
    }
}
