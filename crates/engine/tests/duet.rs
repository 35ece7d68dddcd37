//! Duet phases: one phase loads two targets from the same workers, at the same intended instants.
//!
//! Counts are exact; latencies have lower bounds only.

mod common;

use std::time::{Duration, Instant};

use common::{describe, ok_body, serve, serve_logged, PhaseBuilder, Reply};

fn delayed(ms: u64) -> common::Server {
    serve(move |_| {
        std::thread::sleep(Duration::from_millis(ms));
        Reply::Bytes(ok_body(b"ok"))
    })
}

#[test]
fn every_instant_reaches_both_targets_and_counts_match_each_server() {
    let (a, b) = (serve(|_| Reply::Bytes(ok_body(b"a"))), serve(|_| Reply::Bytes(ok_body(b"b"))));
    let results = PhaseBuilder::open(1000, 4).workers(2).requests(600).run_together(&[&a.target(), &b.target()]);
    assert_eq!(results.len(), 2);
    for (r, server) in results.iter().zip([&a, &b]) {
        assert_eq!(r.requests.sent, 600, "{}", describe(r));
        assert_eq!(r.requests.completed, 600, "{}", describe(r));
        assert_eq!(server.answered(), 600);
        let target = r.load.target_rate.unwrap();
        assert!((target - 1000.0).abs() < 1.0, "each side gets the whole rate: {target}");
        assert_eq!(r.connections.peak_open, 4, "each side gets the whole connections: {}", describe(r));
    }
}

#[test]
fn a_duration_bound_duet_sends_each_side_the_same_schedule() {
    let (a, b) = (serve(|_| Reply::Bytes(ok_body(b"a"))), serve(|_| Reply::Bytes(ok_body(b"b"))));
    let results =
        PhaseBuilder::open(500, 4).duration(Duration::from_millis(1500)).run_together(&[&a.target(), &b.target()]);
    let (ra, rb) = (&results[0], &results[1]);
    // The same intended instants on both sides: what one side was due to send, the other was too.
    let due = |r: &loadgate_measure::PhaseMeasurement| r.requests.sent + r.requests.unsent;
    assert_eq!(due(ra), due(rb), "A {}\nB {}", describe(ra), describe(rb));
    assert!(ra.requests.completed > 0 && rb.requests.completed > 0);
}

#[test]
fn each_side_measures_its_own_server() {
    let (fast, slow) = (delayed(20), delayed(40));
    let results = PhaseBuilder::open(100, 16)
        .duration(Duration::from_millis(1200))
        .run_together(&[&fast.target(), &slow.target()]);
    let p50 = |r: &loadgate_measure::PhaseMeasurement| r.latency.percentile(50.0).unwrap();
    let (a, b) = (&results[0], &results[1]);
    assert!(a.requests.completed > 50 && b.requests.completed > 50, "A {}\nB {}", describe(a), describe(b));
    assert!(p50(a) >= 20_000, "A's own server: {}", describe(a));
    assert!(p50(b) >= 40_000, "B's own server: {}", describe(b));
}

#[test]
fn a_stalled_target_does_not_hold_back_the_other_sides_sends() {
    let stalled_from = Instant::now() + Duration::from_millis(400);
    let stall = Duration::from_millis(400);
    let b = serve(move |_| {
        let now = Instant::now();
        if now >= stalled_from && now < stalled_from + stall {
            std::thread::sleep(stalled_from + stall - now);
        }
        Reply::Bytes(ok_body(b"b"))
    });
    let a = serve_logged(|_| Reply::Bytes(ok_body(b"a")));
    let results =
        PhaseBuilder::open(200, 64).duration(Duration::from_millis(1500)).run_together(&[&a.target(), &b.target()]);
    let during = a
        .log()
        .iter()
        .filter(|l| l.arrived >= stalled_from + Duration::from_millis(50) && l.arrived < stalled_from + stall)
        .count();
    // 200/s over the 350 ms inside B's stall is 70 requests to A; a generator held back by B would send none.
    assert!(during >= 20, "A received {during} requests during B's stall\nA {}", describe(&results[0]));
}
