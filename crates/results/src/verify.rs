//! The verification before the load (`verify:`): a scenario's requests sent once on one connection and checked,
//! judged into a pass or one sentence that says what came back and what was expected.
//!
//! [`judge`] reads the verification phase's [`ScenarioResult`] (its checks, with their first failing examples,
//! its status and error counts) and the requests it sent, named as its checks name them (`request` for a single
//! request, a mix entry's or a session step's name otherwise). The sentence comes from the first failing check's
//! first example:
//!
//! - `GET /html returned 200 text/html; charset=utf-8, expected Content-Type matching `^application/json`; body
//!   starts: <!DOCTYPE html>…`, with ` (and 2 more checks failed)` when more did;
//! - `` `GET /me` not sent: `token` was not captured `` for a session step that was never sent;
//! - `` `GET /x` failed: could not connect `` for a request that got no response;
//! - `GET /x returned 5xx, expected a 2xx status` for a request without checks (`verify: all`).

use loadgate_plan::RequestPlan;

use crate::model::{CheckExample, ErrorCounts, ScenarioResult, StatusCounts, VerifiedScenario};

/// The request name of a single `request:` in check counts.
pub const SINGLE_REQUEST: &str = "request";

/// Judges a verification phase's result: `name` is the verified scenario, `requests` each request it sent with
/// the name its checks carry ([`SINGLE_REQUEST`] for a single request).
pub fn judge(name: &str, requests: &[(&str, &RequestPlan)], result: &ScenarioResult) -> VerifiedScenario {
    let line = |request: &str| -> String {
        match requests.iter().find(|(n, _)| *n == request).or_else(|| requests.first()) {
            Some((_, r)) => format!("{} {}", r.method, r.path),
            None => format!("`{request}`"),
        }
    };
    let failing: Vec<&crate::model::CheckStats> = result.checks.iter().filter(|c| c.failed > 0).collect();
    let accepted = result.checked.accepted_non_2xx;
    let unaccepted_non_2xx = result.status.non_2xx().saturating_sub(accepted);
    let failed_responses = unaccepted_non_2xx.saturating_add(result.checked.failed);
    let passed = result.requests.completed.saturating_sub(failed_responses);
    let message = if let Some(first) = failing.first() {
        let more = match failing.len() - 1 {
            0 => String::new(),
            1 => " (and 1 more check failed)".to_owned(),
            n => format!(" (and {n} more checks failed)"),
        };
        Some(format!("{}{more}", failure(&line(&first.request), &first.expects, first.examples.first())))
    } else if result.errors.total() > 0 {
        // Which request failed: the first with errors of its own, or the only one.
        let request = result
            .by_request
            .iter()
            .find(|r| r.errors.total() > 0)
            .map_or_else(|| requests.first().map_or(SINGLE_REQUEST, |(n, _)| *n), |r| r.name.as_str());
        Some(format!("`{}` failed: {}", line(request), error_words(&result.errors)))
    } else if unaccepted_non_2xx > 0 {
        let (request, status) =
            result.by_request.iter().find(|r| r.status.non_2xx() > r.checked.accepted_non_2xx).map_or_else(
                || (requests.first().map_or(SINGLE_REQUEST, |(n, _)| *n), &result.status),
                |r| (r.name.as_str(), &r.status),
            );
        Some(format!("{} returned {}, expected a 2xx status", line(request), status_class(status)))
    } else if result.requests.sent == 0 {
        Some("no request was sent".to_owned())
    } else {
        None
    };
    VerifiedScenario { name: name.to_owned(), sent: result.requests.sent, passed, message }
}

/// `GET /html returned 200 text/html, expected ...; body starts: ...`, or `` `GET /me` not sent: ... ``.
fn failure(line: &str, expects: &str, example: Option<&CheckExample>) -> String {
    let Some(e) = example else {
        return format!("{line} failed, expected {expects}");
    };
    if e.status == 0 {
        let why = if e.observed.is_empty() { "a value it uses was not captured" } else { e.observed.as_str() };
        return format!("`{line}` not sent: {why}");
    }
    let content_type = if e.content_type.is_empty() { "(no Content-Type)" } else { e.content_type.as_str() };
    let mut text = format!("{line} returned {} {content_type}, expected {expects}", e.status);
    if !e.body_start.is_empty() {
        text.push_str("; body starts: ");
        text.push_str(&e.body_start);
    } else if e.body_len == 0 {
        text.push_str("; the body was empty");
    } else {
        text.push_str(&format!("; body of {}", crate::format::bytes(e.body_len)));
    }
    text
}

/// What kind of failure a request without a response met: `could not connect`, `timed out`.
fn error_words(e: &ErrorCounts) -> &'static str {
    if e.connect > 0 {
        "could not connect"
    } else if e.timeout > 0 {
        "timed out"
    } else if e.protocol > 0 {
        "the response was not valid HTTP"
    } else if e.read > 0 {
        "the connection failed while reading the response"
    } else if e.write > 0 {
        "the connection failed while writing the request"
    } else {
        "a value it uses was not captured"
    }
}

/// The first non-2xx class that came back: `5xx`.
fn status_class(s: &StatusCounts) -> &'static str {
    if s.server_error > 0 {
        "5xx"
    } else if s.client_error > 0 {
        "4xx"
    } else if s.redirection > 0 {
        "3xx"
    } else {
        "1xx"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixture::sample_run;
    use crate::model::{CheckStats, CheckedResponses, RequestCounts};

    fn request(method: &str, path: &str) -> RequestPlan {
        RequestPlan {
            method: method.to_owned(),
            path: path.to_owned(),
            headers: Vec::new(),
            body: None,
            dynamic: None,
            checks: Vec::new(),
            captures: Vec::new(),
        }
    }

    fn result(checks: Vec<CheckStats>, completed: u64) -> ScenarioResult {
        let mut s = sample_run().scenarios[0].clone();
        s.requests = RequestCounts { sent: completed, completed, incomplete: 0, unsent: 0 };
        s.status = StatusCounts { success: completed, ..Default::default() };
        s.errors = ErrorCounts::default();
        s.by_request.clear();
        let failed = checks.iter().map(|c| c.failed).max().unwrap_or(0);
        s.checked = CheckedResponses { responses: completed, failed, accepted_non_2xx: 0 };
        s.checks = checks;
        s
    }

    fn html_example() -> CheckExample {
        CheckExample {
            status: 200,
            content_type: "text/html; charset=utf-8".to_owned(),
            observed: "Content-Type was \"text/html; charset=utf-8\"".to_owned(),
            body_start: "<!DOCTYPE html>\\n<html>…".to_owned(),
            body_len: 3741,
        }
    }

    #[test]
    fn a_failing_check_says_what_came_back() {
        let html = request("GET", "/html");
        let checks = vec![
            CheckStats {
                request: SINGLE_REQUEST.to_owned(),
                check: "status".to_owned(),
                expects: "status in 200".to_owned(),
                passed: 1,
                failed: 0,
                examples: Vec::new(),
            },
            CheckStats {
                request: SINGLE_REQUEST.to_owned(),
                check: "json-type".to_owned(),
                expects: "Content-Type matching `^application/json`".to_owned(),
                passed: 0,
                failed: 1,
                examples: vec![html_example()],
            },
        ];
        let v = judge("page", &[(SINGLE_REQUEST, &html)], &result(checks, 1));
        assert_eq!((v.name.as_str(), v.sent, v.passed), ("page", 1, 0));
        insta::assert_snapshot!(v.message.unwrap(), @"GET /html returned 200 text/html; charset=utf-8, expected Content-Type matching `^application/json`; body starts: <!DOCTYPE html>\\n<html>…");
    }

    #[test]
    fn every_failing_check_is_counted_and_an_unsent_step_says_why() {
        let (login, me) = (request("POST", "/post"), request("GET", "/bearer"));
        let check = |request: &str, check: &str, example: CheckExample| CheckStats {
            request: request.to_owned(),
            check: check.to_owned(),
            expects: format!("{check} exists"),
            passed: 0,
            failed: 1,
            examples: vec![example],
        };
        let unsent = CheckExample { observed: "`token` was not captured".to_owned(), ..Default::default() };
        let checks = vec![
            check("me", "status", unsent.clone()),
            check("me", "json:$.authenticated", unsent.clone()),
            check("me", "json:$.token", unsent),
        ];
        let mut r = result(checks, 1);
        r.requests.sent = 1;
        let v = judge("login", &[("login", &login), ("me", &me)], &r);
        insta::assert_snapshot!(v.message.unwrap(), @"`GET /bearer` not sent: `token` was not captured (and 2 more checks failed)");
    }

    #[test]
    fn errors_and_non_2xx_without_checks_fail_and_a_clean_run_passes() {
        let x = request("GET", "/x");
        let mut r = result(Vec::new(), 0);
        r.requests.sent = 1;
        r.errors.connect = 1;
        let v = judge("x", &[(SINGLE_REQUEST, &x)], &r);
        assert_eq!(v.message.as_deref(), Some("`GET /x` failed: could not connect"));

        let mut r = result(Vec::new(), 1);
        r.status = StatusCounts { server_error: 1, ..Default::default() };
        let v = judge("x", &[(SINGLE_REQUEST, &x)], &r);
        assert_eq!(v.message.as_deref(), Some("GET /x returned 5xx, expected a 2xx status"));
        assert_eq!(v.passed, 0);

        // A 404 a status check accepted is a pass.
        let mut r = result(Vec::new(), 1);
        r.status = StatusCounts { client_error: 1, ..Default::default() };
        r.checked.accepted_non_2xx = 1;
        let v = judge("x", &[(SINGLE_REQUEST, &x)], &r);
        assert_eq!((v.message, v.passed, v.sent), (None, 1, 1));
    }
}
