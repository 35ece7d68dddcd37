//! Opening keep-alive connections before the load: paced, retried when a connect stalls, measured apart.
//!
//! The servers here have an accept queue of 4 and accept slowly, so a burst of connects overflows it and the
//! kernel drops SYNs, as nginx's does under 16,384 connects at once. Nothing asserts how fast anything is.

mod common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::{describe, refused_addr, PhaseBuilder};
use loadgate_engine::Target;
use loadgate_model::units::Rate;
use loadgate_plan::ConnectRate;
use socket2::{Domain, Socket, Type};

/// A keep-alive server with a listen backlog of 4 that accepts one connection every `accept_every`; each
/// connection answers `ok` to every request head it reads. Counts the connections it accepted.
fn narrow_server(accept_every: Duration) -> (Target, Arc<AtomicU64>) {
    let sock = Socket::new(Domain::IPV4, Type::STREAM, None).unwrap();
    let any: SocketAddr = "127.0.0.1:0".parse().unwrap();
    sock.bind(&any.into()).unwrap();
    sock.listen(4).unwrap();
    let listener: std::net::TcpListener = sock.into();
    let addr = listener.local_addr().unwrap();
    let accepted = Arc::new(AtomicU64::new(0));
    let count = accepted.clone();
    std::thread::spawn(move || loop {
        let Ok((stream, _)) = listener.accept() else { continue };
        count.fetch_add(1, Ordering::SeqCst);
        std::thread::spawn(move || answer(stream));
        std::thread::sleep(accept_every);
    });
    (Target { addr, host: "narrow".into(), tls: None, protocol: loadgate_model::Protocol::Http1 }, accepted)
}

fn answer(mut s: TcpStream) {
    let mut buf = [0u8; 4096];
    let mut pending = Vec::new();
    while let Ok(n) = s.read(&mut buf) {
        if n == 0 {
            return;
        }
        pending.extend_from_slice(&buf[..n]);
        while let Some(end) = pending.windows(4).position(|w| w == b"\r\n\r\n") {
            pending.drain(..end + 4);
            if s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok").is_err() {
                return;
            }
        }
    }
}

fn opening(r: &loadgate_measure::PhaseMeasurement) -> &loadgate_measure::ConnectionOpening {
    r.connections.opening.as_ref().unwrap_or_else(|| panic!("no opening\n{}", describe(r)))
}

#[test]
fn auto_opens_every_connection_through_a_backlog_of_4_before_measuring() {
    let (target, accepted) = narrow_server(Duration::from_micros(200));
    let r = PhaseBuilder::closed(300).workers(2).duration(Duration::from_millis(300)).run(&target);
    let info = describe(&r);
    let o = opening(&r);
    assert_eq!(o.connect_rate, "auto", "{info}");
    assert_eq!(o.opened, 300, "{info}");
    assert_eq!(o.failed.total(), 0, "{info}");
    assert!(o.duration_s > 0.0 && o.rate_per_s > 0.0, "{info}");
    // Every connection carried the load: none was opened during it.
    assert_eq!(r.connections.opened, 300, "{info}");
    assert_eq!(r.connections.peak_open, 300, "{info}");
    assert_eq!(r.errors.connect, 0, "{info}");
    assert!(r.validity.valid, "{info}");
    assert!(r.requests.completed > 0, "{info}");
    // The server accepted the connections the engine kept, and those it abandoned as stalled that made it.
    assert!(accepted.load(Ordering::SeqCst) >= 300, "{info}");
    // Every connect is a connect-time sample, the opening's included.
    assert_eq!(r.histograms.connect_time.len(), 300, "{info}");
    // A stall is reported, with the backoffs it caused.
    if o.slow_connects > 0 {
        assert!(r.validity.warnings.iter().any(|w| w.kind == "slow_connects"), "{info}");
    }
}

#[test]
fn a_fixed_connect_rate_paces_the_opening() {
    let (target, _) = narrow_server(Duration::ZERO);
    // 200 connects/s over two workers: 40 connections take at least ~0.2 s.
    let r = PhaseBuilder::closed(40)
        .workers(2)
        .connect_rate(ConnectRate::Rate(Rate::from_per_sec(200)))
        .duration(Duration::from_millis(200))
        .run(&target);
    let info = describe(&r);
    let o = opening(&r);
    assert_eq!(o.connect_rate, "200/s", "{info}");
    assert_eq!(o.opened, 40, "{info}");
    assert!(o.duration_s >= 0.15, "{info}");
    assert!(r.validity.valid, "{info}");
}

#[test]
fn unlimited_opens_everything_at_once_and_open_loads_open_too() {
    let (target, _) = narrow_server(Duration::ZERO);
    let r = PhaseBuilder::open(200, 8)
        .connect_rate(ConnectRate::Unlimited)
        .duration(Duration::from_millis(300))
        .run(&target);
    let info = describe(&r);
    let o = opening(&r);
    assert_eq!(o.connect_rate, "unlimited", "{info}");
    assert_eq!(o.opened, 8, "{info}");
    assert_eq!(o.slow_connects, 0, "{info}");
    assert!(r.requests.completed > 0, "{info}");
}

#[test]
fn connections_refused_while_opening_are_counted_by_cause_and_warned() {
    let target =
        Target { addr: refused_addr(), host: "nowhere".into(), tls: None, protocol: loadgate_model::Protocol::Http1 };
    let r = PhaseBuilder::closed(3).duration(Duration::from_millis(200)).run(&target);
    let info = describe(&r);
    let o = opening(&r);
    assert_eq!(o.opened, 0, "{info}");
    assert_eq!(o.failed.refused, 3, "{info}");
    assert!(o.first_error.as_deref().is_some_and(|e| e.contains("refused")), "{info}");
    let w = r.validity.warnings.iter().find(|w| w.kind == "connections_not_opened").expect("connections_not_opened");
    assert!(w.message.contains("opened 0 of 3") && w.message.contains("refused 3"), "{}", w.message);
    // What makes the run invalid is still the connections missing during the load.
    assert!(r.validity.problems.iter().any(|p| p.kind == "connections_missing"), "{info}");
}

#[test]
fn connection_per_request_loads_have_no_opening() {
    let (target, _) = narrow_server(Duration::ZERO);
    let r = PhaseBuilder::closed(2).keep_alive(false).requests(4).run(&target);
    assert!(r.connections.opening.is_none(), "{}", describe(&r));
}
