//! Per-request generated values and request mixes, checked by servers that record what they received.
//!
//! Counts are exact and statistical bounds generous; latencies have lower bounds only.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{describe, ok_body, serve, PhaseBuilder, Reply};
use loadgate_model::units::{Duration as SpecDuration, Rate};
use loadgate_plan::{Arrival, RequestPlan, UserStep};
use loadgate_plan::{DynamicRequest, Generator, PipelineMode, Segment};

/// What a recording server saw of one request.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Seen {
    method: String,
    target: String,
    headers: Vec<(String, String)>,
    body: String,
}

/// A server that answers 200 and records every request.
fn recording_server() -> (common::Server, Arc<Mutex<Vec<Seen>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    let server = serve(move |r| {
        log.lock().unwrap().push(Seen {
            method: r.method.clone(),
            target: r.target.clone(),
            headers: r.headers.clone(),
            body: String::from_utf8_lossy(&r.body).into_owned(),
        });
        Reply::Bytes(ok_body(b"ok"))
    });
    (server, seen)
}

fn text(s: &str) -> Segment {
    Segment::Text(s.into())
}

fn gen(index: usize, encode: bool) -> Segment {
    Segment::Gen { index, encode }
}

/// A request whose path, headers and body are segments over `generators`.
fn dynamic(
    method: &str,
    path: Vec<Segment>,
    headers: Vec<(&str, Vec<Segment>)>,
    body: Option<Vec<Segment>>,
    generators: Vec<Generator>,
) -> RequestPlan {
    RequestPlan {
        method: method.into(),
        path: "/shown-for-display-only".into(),
        headers: headers.iter().map(|(k, _)| ((*k).into(), "{shown}".into())).collect(),
        body: body.as_ref().map(|_| "{shown}".into()),
        dynamic: Some(DynamicRequest {
            path,
            headers: headers.into_iter().map(|(k, v)| (k.into(), v)).collect(),
            body,
            generators,
        }),
        checks: vec![],
        captures: vec![],
    }
}

fn static_request(method: &str, path: &str, body: Option<&str>) -> RequestPlan {
    RequestPlan {
        method: method.into(),
        path: path.into(),
        headers: vec![],
        body: body.map(Into::into),
        dynamic: None,
        checks: vec![],
        captures: vec![],
    }
}

/// `PUT /v0/entity?id={seq(100, 3)}&n={random_int(5, 9)}&p={pick(['a b', 'c'])}` with a UUID and a hex header
/// and a 256-character random body.
fn every_generator() -> RequestPlan {
    dynamic(
        "PUT",
        vec![text("/v0/entity?id="), gen(0, true), text("&n="), gen(1, true), text("&p="), gen(2, true)],
        vec![("X-Id", vec![gen(3, false)]), ("X-Hex", vec![text("h-"), gen(4, false)])],
        Some(vec![gen(5, false)]),
        vec![
            Generator::Seq { start: 100, step: 3 },
            Generator::RandomInt { min: 5, max: 9 },
            Generator::Pick { values: vec!["a b".into(), "c".into()] },
            Generator::Uuid,
            Generator::RandomHex { len: 8 },
            Generator::RandomString { len: 256 },
        ],
    )
}

fn query(target: &str) -> BTreeMap<String, String> {
    let q = target.split_once('?').map_or("", |(_, q)| q);
    q.split('&').filter_map(|kv| kv.split_once('=')).map(|(k, v)| (k.to_owned(), v.to_owned())).collect()
}

fn is_uuid_v4(u: &str) -> bool {
    let parts: Vec<&str> = u.split('-').collect();
    parts.iter().map(|p| p.len()).collect::<Vec<_>>() == [8, 4, 4, 4, 12]
        && u.bytes().all(|b| b == b'-' || b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        && parts[2].starts_with('4')
        && parts[3].starts_with(['8', '9', 'a', 'b'])
}

/// Checks every generator's contract over what the server saw; `n` requests of `every_generator`.
fn check_contracts(seen: &[Seen], n: u64) {
    assert_eq!(seen.len() as u64, n);
    let mut ids = BTreeSet::new();
    let mut ints = BTreeSet::new();
    let mut picks = BTreeSet::new();
    let mut uuids = BTreeSet::new();
    for s in seen {
        assert_eq!(s.method, "PUT");
        assert!(s.target.starts_with("/v0/entity?id="), "{s:?}");
        let q = query(&s.target);
        let id: i64 = q["id"].parse().unwrap();
        assert!(id >= 100 && (id - 100) % 3 == 0, "{s:?}");
        assert!(ids.insert(id), "seq value {id} sent twice");
        let int: i64 = q["n"].parse().unwrap();
        assert!((5..=9).contains(&int), "{s:?}");
        ints.insert(int);
        picks.insert(q["p"].clone());
        let uuid = s.headers.iter().find(|(k, _)| k == "x-id").map(|(_, v)| v.clone()).unwrap();
        assert!(is_uuid_v4(&uuid), "{uuid}");
        uuids.insert(uuid);
        let hex = s.headers.iter().find(|(k, _)| k == "x-hex").map(|(_, v)| v.as_str()).unwrap();
        let hex = hex.strip_prefix("h-").unwrap();
        assert!(hex.len() == 8 && hex.bytes().all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()), "{hex}");
        assert_eq!(s.body.len(), 256, "{s:?}");
        assert!(s.body.bytes().all(|b| b.is_ascii_alphanumeric()));
        let length = s.headers.iter().find(|(k, _)| k == "content-length").map(|(_, v)| v.as_str());
        assert_eq!(length, Some("256"));
    }
    // Unique and in range across workers: exactly the first `n` values of the sequence.
    assert_eq!(ids, (0..n as i64).map(|k| 100 + 3 * k).collect::<BTreeSet<_>>());
    assert_eq!(ints, (5..=9).collect::<BTreeSet<_>>(), "every value of the range comes up");
    assert_eq!(picks, ["a%20b".to_owned(), "c".to_owned()].into_iter().collect(), "the space is encoded");
    assert_eq!(uuids.len() as u64, n, "UUIDs do not repeat");
}

#[test]
fn generated_values_follow_each_generators_contract() {
    for pipeline in [1, 8] {
        let (server, seen) = recording_server();
        let r = PhaseBuilder::closed(4)
            .workers(2)
            .pipeline(pipeline, PipelineMode::Window)
            .requests(1000)
            .request(every_generator())
            .run(&server.target());
        let info = describe(&r);
        assert_eq!(r.requests.completed, 1000, "{info}");
        assert_eq!(r.errors.total(), 0, "{info}");
        check_contracts(&seen.lock().unwrap(), 1000);
        assert!(r.by_request.is_empty(), "no mix, no breakdown");
    }
}

#[test]
fn generated_values_in_open_loads_and_user_injection() {
    let (server, seen) = recording_server();
    let r = PhaseBuilder::open(2000, 4).workers(2).requests(300).request(every_generator()).run(&server.target());
    assert_eq!(r.requests.completed, 300, "{}", describe(&r));
    check_contracts(&seen.lock().unwrap(), 300);

    // Every user opens its own connection with its own request.
    let (server, seen) = recording_server();
    let mut b = PhaseBuilder::closed(8).workers(2).duration(Duration::from_secs(5)).request(every_generator());
    b.arrival = Arrival::Users { steps: vec![UserStep::AtOnce { users: 40 }] };
    let r = b.run(&server.target());
    assert_eq!(r.requests.completed, 40, "{}", describe(&r));
    assert_eq!(server.connections.load(std::sync::atomic::Ordering::SeqCst), 40);
    check_contracts(&seen.lock().unwrap(), 40);
}

/// The request lines and bodies a run sent, as a sorted multiset.
fn sent_values(seed: u64, mix: bool) -> Vec<Seen> {
    let (server, seen) = recording_server();
    let mut b = PhaseBuilder::closed(6).workers(3).pipeline(4, PipelineMode::Window).requests(900).seed(seed);
    b = if mix {
        b.mix(&[("put", 1, every_generator()), ("get", 3, static_request("GET", "/get", None))])
    } else {
        b.request(every_generator())
    };
    let r = b.run(&server.target());
    assert_eq!(r.requests.completed, 900, "{}", describe(&r));
    let mut v = seen.lock().unwrap().clone();
    for s in &mut v {
        // Each run has its own server port.
        s.headers.retain(|(k, _)| k != "host");
    }
    v.sort();
    v
}

#[test]
fn the_same_seed_sends_the_same_values() {
    for mix in [false, true] {
        let a = sent_values(42, mix);
        let b = sent_values(42, mix);
        let differ = a.iter().zip(&b).filter(|(x, y)| x != y).count();
        assert!(a.len() == b.len() && differ == 0, "same seed: {differ} of {} requests differ", a.len());
        let c = sent_values(43, mix);
        assert!(a != c, "another seed, other values");
    }
}

/// A server that counts requests per path and delays `/slow` by `delay`.
fn counting_server(delay: Duration) -> (common::Server, Arc<Mutex<BTreeMap<String, u64>>>) {
    let counts = Arc::new(Mutex::new(BTreeMap::new()));
    let c = counts.clone();
    let server = serve(move |r| {
        let path = r.target.split('?').next().unwrap_or("").to_owned();
        if path == "/slow" {
            std::thread::sleep(delay);
        }
        *c.lock().unwrap().entry(path).or_insert(0) += 1;
        Reply::Bytes(ok_body(b"ok"))
    });
    (server, counts)
}

#[test]
fn a_mix_follows_its_weights_and_counts_per_request() {
    for (pipeline, open) in [(1, false), (8, false), (1, true)] {
        let (server, counts) = counting_server(Duration::ZERO);
        let put = dynamic(
            "PUT",
            vec![text("/put?id="), gen(0, true)],
            vec![],
            Some(vec![gen(1, false)]),
            vec![Generator::Seq { start: 0, step: 1 }, Generator::RandomString { len: 32 }],
        );
        let b = if open { PhaseBuilder::open(4000, 8) } else { PhaseBuilder::closed(4) };
        let r = b
            .workers(2)
            .pipeline(pipeline, PipelineMode::Window)
            .requests(2000)
            .mix(&[("put", 1, put), ("get", 9, static_request("GET", "/get", None))])
            .run(&server.target());
        let info = describe(&r);
        assert_eq!(r.requests.completed, 2000, "{info}");
        assert_eq!(r.errors.total(), 0, "{info}");
        let counts = counts.lock().unwrap().clone();
        assert_eq!(r.by_request.len(), 2);
        let (p, g) = (&r.by_request[0], &r.by_request[1]);
        assert_eq!((p.name.as_str(), g.name.as_str()), ("put", "get"));
        assert_eq!(p.requests.completed, counts["/put"], "{counts:?}");
        assert_eq!(g.requests.completed, counts["/get"], "{counts:?}");
        assert_eq!(p.requests.sent, p.requests.completed);
        assert_eq!(p.status.success + g.status.success, r.status.success);
        assert_eq!(p.histogram.len() + g.histogram.len(), r.histograms.latency.len());
        assert_eq!(p.histogram.len(), p.requests.completed);
        let share = p.requests.completed as f64 / 2000.0;
        assert!((0.05..=0.15).contains(&share), "put share {share} for weight 1 of 10");
        assert!(p.throughput > 0.0 && g.throughput > p.throughput);
        assert_eq!(p.requests.incomplete + g.requests.incomplete, 0);
    }
}

#[test]
fn each_request_of_a_mix_has_its_own_latency() {
    let (server, counts) = counting_server(Duration::from_millis(20));
    let r = PhaseBuilder::closed(8)
        .workers(2)
        .requests(300)
        .mix(&[("slow", 1, static_request("GET", "/slow", None)), ("fast", 1, static_request("GET", "/fast", None))])
        .run(&server.target());
    let info = describe(&r);
    assert_eq!(r.requests.completed, 300, "{info}");
    let slow = &r.by_request[0];
    let fast = &r.by_request[1];
    assert_eq!(slow.requests.completed, counts.lock().unwrap()["/slow"]);
    let p50 = |b: &loadgate_measure::RequestBreakdown| b.histogram.value_at_quantile(0.5);
    assert!(p50(slow) >= 20_000, "slow p50 {}us", p50(slow));
    assert!(p50(fast) * 4 < p50(slow), "fast p50 {}us vs slow {}us", p50(fast), p50(slow));
    assert_eq!(slow.latency.percentiles.get("p50").copied(), Some(p50(slow)));
}

#[test]
fn user_injection_ends_after_its_last_step() {
    let server = serve(|_| Reply::Bytes(ok_body(b"ok")));
    // The deadline is far beyond the steps: the phase must end when the last user has finished.
    let mut b = PhaseBuilder::closed(8).workers(2).duration(Duration::from_secs(60)).timeout(Duration::from_secs(3));
    b.arrival = Arrival::Users {
        steps: vec![
            UserStep::PerSecond { rate: Rate::from_per_sec(100), during: SpecDuration::from_millis(300) },
            UserStep::Ramp { users: 10, over: SpecDuration::from_millis(100) },
            UserStep::RampPerSecond {
                from: Rate::from_per_sec(10),
                to: Rate::from_per_sec(100),
                during: SpecDuration::from_millis(200),
            },
        ],
    };
    let r = b.run(&server.target());
    let info = describe(&r);
    assert_eq!(r.requests.completed, 30 + 10 + 11, "{info}");
    assert!(r.duration < 30.0, "ended with the last user, not at the 60 s deadline: {info}");
    assert!(r.validity.problems.is_empty(), "{info}");
}

#[test]
fn invalid_generated_values_are_refused_before_the_load() {
    let (server, _) = recording_server();
    // A picked value with a space, unencoded, in the path would break the request line.
    let bad = dynamic(
        "GET",
        vec![text("/x/"), gen(0, false)],
        vec![],
        None,
        vec![Generator::Pick { values: vec!["a b".into()] }],
    );
    let (phase, workers) = PhaseBuilder::closed(1).requests(1).request(bad).build();
    let e = loadgate_engine::run_phase(
        &phase,
        &workers,
        &server.target(),
        &loadgate_engine::StopSignal::new(),
        &mut |_| loadgate_engine::Control::Continue,
    )
    .unwrap_err();
    assert!(e.to_string().contains("a b"), "{e}");
}
