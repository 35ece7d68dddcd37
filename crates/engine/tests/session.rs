//! Sessions: every injected user runs its steps in order on its one connection, thinking between them.
//!
//! Counts are exact; think times are checked as lower bounds, which a loaded machine still meets.

mod common;

use std::collections::BTreeMap;
use std::time::Duration;

use common::{describe, ok_body, serve_logged, PhaseBuilder, Reply};
use loadgate_model::units::Duration as SpecDuration;
use loadgate_plan::{Arrival, RequestPlan, SessionStep, UserStep};

fn step(name: &str, path: &str) -> SessionStep {
    SessionStep::Request {
        name: name.into(),
        request: RequestPlan {
            method: "GET".into(),
            path: path.into(),
            headers: vec![],
            body: None,
            dynamic: None,
            checks: vec![],
            captures: vec![],
        },
    }
}

fn think(ms: u64) -> SessionStep {
    SessionStep::Think { duration: SpecDuration::from_millis(ms) }
}

fn session_phase(users: u64) -> PhaseBuilder {
    let mut b = PhaseBuilder::closed(64).workers(2).duration(Duration::from_millis(500));
    b.arrival = Arrival::Users { steps: vec![UserStep::Ramp { users, over: SpecDuration::from_millis(500) }] };
    b
}

#[test]
fn users_run_their_steps_in_order_with_think_times() {
    let server = serve_logged(|_| Reply::Bytes(ok_body(b"ok")));
    let mut b = session_phase(50);
    b.session = vec![step("home", "/home"), think(100), step("cart", "/cart"), think(100), step("pay", "/pay")];
    let r = b.run(&server.target());
    let info = describe(&r);
    assert_eq!(r.requests.sent, 150, "{info}");
    assert_eq!(r.requests.completed, 150, "{info}");
    assert_eq!(r.errors.total(), 0, "{info}");
    assert_eq!(r.requests.incomplete, 0, "{info}");
    assert_eq!(r.load.users_started, Some(50), "{info}");
    assert_eq!(r.load.users_finished, Some(50), "{info}");

    // One connection per user, each carrying exactly its three steps.
    let log = server.log();
    assert_eq!(server.connections.load(std::sync::atomic::Ordering::SeqCst), 50);
    let mut per_path: BTreeMap<&str, u64> = BTreeMap::new();
    for l in &log {
        *per_path.entry(l.target.as_str()).or_default() += 1;
    }
    assert_eq!(per_path, BTreeMap::from([("/cart", 50), ("/home", 50), ("/pay", 50)]));
    let mut per_conn: BTreeMap<u64, Vec<&common::Logged>> = BTreeMap::new();
    for l in &log {
        per_conn.entry(l.conn).or_default().push(l);
    }
    assert_eq!(per_conn.len(), 50);
    for (conn, mut reqs) in per_conn {
        reqs.sort_by_key(|l| l.arrived);
        let paths: Vec<&str> = reqs.iter().map(|l| l.target.as_str()).collect();
        assert_eq!(paths, ["/home", "/cart", "/pay"], "connection {conn}");
        for pair in reqs.windows(2) {
            let gap = pair[1].arrived.saturating_duration_since(pair[0].answered);
            assert!(gap >= Duration::from_millis(100), "connection {conn}: {gap:?} between steps");
        }
    }

    // Each step is measured under its name.
    let names: Vec<&str> = r.by_request.iter().map(|b| b.name.as_str()).collect();
    assert_eq!(names, ["home", "cart", "pay"], "{info}");
    for b in &r.by_request {
        assert_eq!(b.requests.sent, 50, "{}", b.name);
        assert_eq!(b.requests.completed, 50, "{}", b.name);
        assert_eq!(b.status.success, 50, "{}", b.name);
        assert_eq!(b.histogram.len(), 50, "{}", b.name);
    }
    assert_eq!(r.histograms.latency.len(), 150, "{info}");
}

#[test]
fn a_failed_step_ends_the_users_session() {
    // The server hangs up on `/cart` without answering.
    let server = serve_logged(|req| if req.target == "/cart" { Reply::Close } else { Reply::Bytes(ok_body(b"ok")) });
    let mut b = session_phase(20);
    b.session = vec![step("home", "/home"), think(10), step("cart", "/cart"), step("pay", "/pay")];
    let r = b.run(&server.target());
    let info = describe(&r);
    let by: BTreeMap<&str, &loadgate_measure::RequestBreakdown> =
        r.by_request.iter().map(|b| (b.name.as_str(), b)).collect();
    assert_eq!(by["home"].requests.completed, 20, "{info}");
    assert_eq!(by["cart"].requests.sent, 20, "{info}");
    assert_eq!(by["cart"].errors.read, 20, "{info}");
    assert_eq!(by["pay"].requests.sent, 0, "{info}");
    assert_eq!(r.errors.read, 20, "{info}");
    assert_eq!(r.load.users_started, Some(20), "{info}");
    assert_eq!(r.load.users_finished, Some(20), "{info}");
    assert!(server.log().iter().all(|l| l.target == "/home"));
}
