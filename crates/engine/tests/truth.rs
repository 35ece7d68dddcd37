//! Truth tests: the engine's numbers against servers that know the truth.
//!
//! Every bound here is one a slow, loaded machine still meets: counts are exact, latencies have lower bounds,
//! nothing asserts how fast the engine is.

mod common;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::{describe, ok_body, refused_addr, serve, PhaseBuilder, Reply, Stall};
use loadgate_engine::{run_phase, Control, StopSignal, Target};
use loadgate_model::units::{Duration as SpecDuration, Rate};
use loadgate_plan::PipelineMode;
use loadgate_plan::{Arrival, RampStage, RequestPlan, UserStep};

const HELLO: &[u8] = b"Hello, World!";

fn hello_server() -> common::Server {
    serve(|_| Reply::Bytes(ok_body(HELLO)))
}

/// The engine's completed count equals the server's, with nothing lost or left over.
fn assert_counts_match(r: &loadgate_measure::PhaseMeasurement, server: &common::Server) {
    let info = describe(r);
    assert!(r.requests.completed > 0, "{info}");
    assert_eq!(r.requests.completed, server.answered(), "{info}");
    assert_eq!(r.requests.sent, r.requests.completed, "{info}");
    assert_eq!(r.requests.incomplete, 0, "{info}");
    assert_eq!(r.errors.total(), 0, "{info}");
    assert_eq!(r.status.success, r.requests.completed, "{info}");
    assert_eq!(r.histograms.latency.len(), r.requests.completed, "{info}");
    assert!(r.bytes.read >= r.requests.completed * (HELLO.len() as u64 + 38), "{info}");
    let timeline: u64 = r.timeline.iter().map(|p| p.completed).sum();
    assert_eq!(timeline, r.requests.completed, "{info}\ntimeline {:?}", r.timeline);
}

#[test]
fn closed_loop_count_equals_server_count() {
    let server = hello_server();
    let r = PhaseBuilder::closed(4).workers(2).run(&server.target());
    assert_counts_match(&r, &server);
    assert_eq!(r.connections.opened, 4, "{}", describe(&r));
    assert_eq!(r.connections.planned, 4);
    assert!(r.validity.problems.is_empty(), "{}", describe(&r));
    assert_eq!(r.load.model, "closed");
    assert!(r.aborted.is_none());
    // Closed loop: latency is service time.
    assert_eq!(r.histograms.latency.len(), r.histograms.service_time.len());
    assert_eq!(r.histograms.connect_time.len(), 4);
    assert_eq!(r.workers.len(), 2);
    assert!(r.workers.iter().all(|w| w.user_seconds + w.system_seconds > 0.0));
}

#[test]
fn closed_loop_pipelined_batch_and_window_counts_match() {
    for mode in [PipelineMode::Batch, PipelineMode::Window] {
        let server = hello_server();
        let r = PhaseBuilder::closed(3).pipeline(8, mode).run(&server.target());
        assert_counts_match(&r, &server);
        assert_eq!(r.load.pipeline, 8);
    }
}

#[test]
fn open_loop_count_equals_server_count() {
    let server = hello_server();
    let r = PhaseBuilder::open(2000, 8).workers(2).run(&server.target());
    assert_counts_match(&r, &server);
    assert_eq!(r.load.model, "constant");
    let target = r.load.target_rate.unwrap();
    assert!((target - 2000.0).abs() < 1.0, "{target}");
    assert!(r.load.achieved_rate.unwrap() > 0.0);
    assert_eq!(r.histograms.send_lag.len(), r.requests.completed);
    let planned: f64 = r.timeline.iter().filter_map(|p| p.target_rate).next().unwrap();
    assert!((planned - 2000.0).abs() < 1.0, "{planned}");
}

#[test]
fn open_loop_pipelined_window_count_matches() {
    let server = hello_server();
    let r = PhaseBuilder::open(3000, 2).pipeline(4, PipelineMode::Window).run(&server.target());
    assert_counts_match(&r, &server);
}

#[test]
fn request_count_is_exact_in_every_mode() {
    let cases = [
        PhaseBuilder::closed(3).workers(2).requests(1001),
        PhaseBuilder::closed(3).workers(2).requests(1001).pipeline(4, PipelineMode::Batch),
        PhaseBuilder::closed(5).requests(1003).pipeline(16, PipelineMode::Window),
        PhaseBuilder::open(5000, 4).workers(2).requests(501),
        PhaseBuilder::open(5000, 2).requests(499).pipeline(4, PipelineMode::Window),
        PhaseBuilder::closed(4).requests(2),
    ];
    for case in cases {
        let StopCondition::Requests { requests } = case.stop else { unreachable!() };
        let server = hello_server();
        let r = case.run(&server.target());
        assert_counts_match(&r, &server);
        assert_eq!(r.requests.completed, requests, "{}", describe(&r));
    }
}

use loadgate_plan::StopCondition;

#[test]
fn keep_alive_off_opens_a_connection_per_request() {
    let server = hello_server();
    let r = PhaseBuilder::closed(4).keep_alive(false).requests(200).run(&server.target());
    assert_counts_match(&r, &server);
    assert_eq!(r.requests.completed, 200);
    assert_eq!(r.connections.opened, 200, "{}", describe(&r));
    assert_eq!(server.connections.load(Ordering::SeqCst), 200);
    assert_eq!(r.histograms.connect_time.len(), 200);
    assert_eq!(r.connections.reconnects, 0, "our own closes are not reconnects");
    assert!(!r.load.keep_alive);
}

#[test]
fn a_20ms_server_gives_p50_of_at_least_20ms() {
    let server = serve(|_| {
        std::thread::sleep(Duration::from_millis(20));
        Reply::Bytes(ok_body(HELLO))
    });
    let r = PhaseBuilder::closed(2).run(&server.target());
    assert_counts_match(&r, &server);
    assert!(r.latency.percentile(50.0).unwrap() >= 20_000, "{}", describe(&r));
    assert!(r.latency.min_us >= 20_000, "{}", describe(&r));

    let r = PhaseBuilder::open(40, 4).run(&server.target());
    assert!(r.latency.percentile(50.0).unwrap() >= 20_000, "{}", describe(&r));
    assert!(r.service_time.percentile(50.0).unwrap() >= 20_000, "{}", describe(&r));
}

#[test]
fn a_stall_shows_in_corrected_latency_not_in_service_time() {
    let stall = Stall::new();
    let s = stall.clone();
    let server = serve(move |req| {
        if req.seq == 100 {
            s.start(Duration::from_millis(500));
        }
        s.wait();
        Reply::Bytes(ok_body(HELLO))
    });
    let r = PhaseBuilder::open(200, 4).duration(Duration::from_millis(1500)).run(&server.target());
    let info = describe(&r);
    assert_eq!(r.requests.completed, server.answered(), "{info}");
    let p99 = r.latency.percentile(99.0).unwrap();
    let service_p50 = r.service_time.percentile(50.0).unwrap();
    assert!(p99 >= 400_000, "corrected p99 {p99}us\n{info}");
    assert!(service_p50 * 4 < p99, "service p50 {service_p50}us vs p99 {p99}us\n{info}");
    // Requests waited for a free connection: the send lag shows it.
    assert!(r.send_lag.max_us >= 300_000, "{info}");
}

#[test]
fn chunked_bodies_are_framed() {
    let server = serve(|req| {
        let extra = if req.seq % 2 == 0 { "3;x=y\r\nabc\r\n" } else { "" };
        let resp = format!(
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nd\r\nHello, World!\r\n{extra}0\r\nX-T: 1\r\n\r\n"
        );
        Reply::Bytes(resp.into_bytes())
    });
    let r = PhaseBuilder::closed(2).requests(300).pipeline(4, PipelineMode::Window).run(&server.target());
    assert_counts_match(&r, &server);
}

#[test]
fn head_responses_have_no_body() {
    let server = serve(|req| {
        assert_eq!(req.method, "HEAD");
        Reply::Bytes(b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n".to_vec())
    });
    let r = PhaseBuilder::closed(2).requests(100).method("HEAD").pipeline(2, PipelineMode::Batch).run(&server.target());
    let info = describe(&r);
    assert_eq!(r.requests.completed, 100, "{info}");
    assert_eq!(server.answered(), 100);
    assert_eq!(r.errors.total(), 0, "{info}");
}

#[test]
fn no_content_and_not_modified_have_no_body() {
    let server = serve(|req| {
        if req.seq % 2 == 0 {
            Reply::Bytes(b"HTTP/1.1 204 No Content\r\n\r\n".to_vec())
        } else {
            Reply::Bytes(b"HTTP/1.1 304 Not Modified\r\nContent-Length: 50\r\n\r\n".to_vec())
        }
    });
    let r = PhaseBuilder::closed(1).requests(100).pipeline(4, PipelineMode::Batch).run(&server.target());
    let info = describe(&r);
    assert_eq!(r.requests.completed, 100, "{info}");
    assert_eq!(r.status.success, 50, "{info}");
    assert_eq!(r.status.redirection, 50, "{info}");
    assert_eq!(r.status.non_2xx(), 50);
    assert_eq!(r.errors.total(), 0, "{info}");
}

#[test]
fn connection_close_reconnects_and_loses_nothing() {
    let close = |_: &common::Request| {
        Reply::BytesThenClose(b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok".to_vec())
    };
    let server = serve(close);
    let r = PhaseBuilder::closed(2).requests(100).run(&server.target());
    let info = describe(&r);
    assert_eq!(r.requests.completed, 100, "{info}");
    assert_eq!(server.answered(), 100);
    assert_eq!(r.errors.total(), 0, "{info}");
    assert!(r.connections.reconnects >= 98, "{info}");
    assert!(r.connections.opened >= 100, "{info}");

    // Pipelined requests behind a `Connection: close` answer are sent again on the next connection.
    let server = serve(close);
    let r = PhaseBuilder::closed(2).requests(100).pipeline(4, PipelineMode::Window).run(&server.target());
    let info = describe(&r);
    assert_eq!(r.requests.completed, 100, "{info}");
    assert_eq!(r.requests.sent, 100, "{info}");
    assert_eq!(server.answered(), 100);
    assert_eq!(r.errors.total(), 0, "{info}");
}

#[test]
fn a_one_megabyte_body_is_read_and_counted() {
    let body = vec![b'x'; 1 << 20];
    let server = serve(move |_| Reply::Bytes(ok_body(&body)));
    let r = PhaseBuilder::closed(2).requests(20).pipeline(2, PipelineMode::Window).run(&server.target());
    let info = describe(&r);
    assert_eq!(r.requests.completed, 20, "{info}");
    assert_eq!(r.errors.total(), 0, "{info}");
    assert!(r.bytes.read >= 20 << 20, "{info}");
}

#[test]
fn a_server_closing_mid_response_counts_read_errors() {
    let server = serve(|_| Reply::BytesThenClose(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly ten b".to_vec()));
    let r = PhaseBuilder::closed(2).requests(10).run(&server.target());
    let info = describe(&r);
    assert_eq!(r.requests.completed, 0, "{info}");
    assert_eq!(r.errors.read, 10, "{info}");
    assert_eq!(r.errors.total(), 10, "{info}");

    // Closing without any answer is a read error too.
    let server = serve(|_| Reply::Close);
    let r = PhaseBuilder::closed(2).requests(10).run(&server.target());
    assert_eq!(r.errors.read, 10, "{}", describe(&r));
}

#[test]
fn garbage_is_a_protocol_error() {
    let server = serve(|_| Reply::Bytes(b"SSH-2.0-OpenSSH_9.6\r\n\r\n".to_vec()));
    let r = PhaseBuilder::closed(1).requests(5).run(&server.target());
    let info = describe(&r);
    assert_eq!(r.errors.protocol, 5, "{info}");
    assert_eq!(r.requests.completed, 0, "{info}");
}

#[test]
fn connection_refused_is_counted_and_invalidates() {
    let target =
        Target { addr: refused_addr(), host: "nowhere".into(), tls: None, protocol: loadgate_model::Protocol::Http1 };
    let r = PhaseBuilder::closed(2).duration(Duration::from_millis(500)).run(&target);
    let info = describe(&r);
    assert!(r.errors.connect > 0, "{info}");
    assert_eq!(r.connections.failed, r.errors.connect);
    assert_eq!(r.requests.completed, 0, "{info}");
    assert!(!r.validity.valid, "{info}");
    let missing = r.validity.problems.iter().find(|p| p.kind == "connections_missing").expect("connections_missing");
    assert!(missing.message.contains("refused"), "{}", missing.message);

    // A request-count run against a dead target still ends: every failed attempt uses up a request.
    let r = PhaseBuilder::closed(2).requests(6).run(&target);
    assert_eq!(r.errors.connect, 6, "{}", describe(&r));
    let r = PhaseBuilder::open(1000, 2).requests(6).run(&target);
    assert_eq!(r.errors.connect, 6, "{}", describe(&r));
    let r = PhaseBuilder::closed(2).keep_alive(false).requests(6).run(&target);
    assert_eq!(r.errors.connect, 6, "{}", describe(&r));
}

#[test]
fn timeouts_are_counted_once_per_request() {
    let server = serve(|_| Reply::Hang);
    let r = PhaseBuilder::closed(3).requests(6).timeout(Duration::from_millis(200)).run(&server.target());
    let info = describe(&r);
    assert_eq!(r.errors.timeout, 6, "{info}");
    assert_eq!(r.requests.sent, 6, "{info}");
    assert_eq!(r.requests.completed, 0, "{info}");
}

#[test]
fn requests_in_flight_at_the_end_are_incomplete_not_lost() {
    let server = serve(|_| Reply::Hang);
    // The drain lasts min(timeout, 2 s): with a 5 s timeout the requests are still in flight when it ends.
    let r = PhaseBuilder::closed(3).duration(Duration::from_millis(300)).run(&server.target());
    let info = describe(&r);
    assert_eq!(r.requests.sent, 3, "{info}");
    assert_eq!(r.requests.incomplete, 3, "{info}");
    assert_eq!(r.errors.total(), 0, "{info}");
    assert!(r.duration >= 2.3, "the drain ran: {info}");
    assert!(r.validity.warnings.iter().any(|w| w.kind == "incomplete_requests"), "{info}");
}

#[test]
fn users_each_get_a_connection() {
    let server = hello_server();
    let mut b = PhaseBuilder::closed(16).workers(2).duration(Duration::from_millis(1500));
    b.arrival = Arrival::Users {
        steps: vec![
            UserStep::AtOnce { users: 21 },
            UserStep::Pause { during: SpecDuration::from_millis(200) },
            UserStep::PerSecond { rate: Rate::from_per_sec(50), during: SpecDuration::from_secs(1) },
        ],
    };
    let r = b.run(&server.target());
    let info = describe(&r);
    assert_eq!(r.requests.completed, 71, "{info}");
    assert_eq!(server.answered(), 71);
    assert_eq!(server.connections.load(Ordering::SeqCst), 71);
    assert_eq!(r.load.model, "users");
    assert_eq!(r.load.users_started, Some(71));
    assert_eq!(r.load.users_finished, Some(71));
}

#[test]
fn ramp_follows_the_schedule() {
    let server = hello_server();
    let mut b = PhaseBuilder::closed(4).duration(Duration::from_secs(1));
    b.arrival = Arrival::Ramp {
        start: Rate::from_per_sec(0),
        stages: vec![RampStage { to: Rate::from_per_sec(2000), over: SpecDuration::from_secs(1) }],
    };
    let r = b.run(&server.target());
    assert_counts_match(&r, &server);
    assert_eq!(r.load.model, "ramp");
    assert!((r.load.target_rate.unwrap() - 1000.0).abs() < 1.0);
}

#[test]
fn on_tick_sees_every_second_and_can_abort() {
    let server = hello_server();
    let (phase, workers) = PhaseBuilder::closed(2).workers(2).duration(Duration::from_secs(30)).build();
    let ticks = Arc::new(AtomicU64::new(0));
    let seen = ticks.clone();
    let r = run_phase(&phase, &workers, &server.target(), &StopSignal::new(), &mut |tick| {
        seen.fetch_add(1, Ordering::SeqCst);
        assert_eq!(tick.elapsed, Duration::from_secs(1));
        assert_eq!(tick.interval_latency.len(), tick.point.completed);
        assert_eq!(tick.total_latency.len(), tick.point.completed);
        Control::Abort("enough".into())
    })
    .unwrap();
    assert_eq!(ticks.load(Ordering::SeqCst), 1);
    assert_eq!(r.aborted.as_deref(), Some("enough"));
    assert!(r.duration < 29.0, "{}", describe(&r));
    assert_eq!(r.requests.completed, server.answered());
}

#[test]
fn stop_signal_from_another_thread_ends_the_phase() {
    let server = hello_server();
    let (phase, workers) = PhaseBuilder::open(500, 2).duration(Duration::from_secs(30)).build();
    let stop = StopSignal::new();
    let s = stop.clone();
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(300));
        s.stop("ctrl-c");
    });
    let r = run_phase(&phase, &workers, &server.target(), &stop, &mut |_| Control::Continue).unwrap();
    assert_eq!(r.aborted.as_deref(), Some("ctrl-c"));
    assert_eq!(r.requests.completed, server.answered());
    assert!(r.requests.completed > 0);
}

#[test]
fn an_unreachable_rate_is_invalid() {
    // One connection to a 20 ms server cannot carry 500 requests a second.
    let server = serve(|_| {
        std::thread::sleep(Duration::from_millis(20));
        Reply::Bytes(ok_body(HELLO))
    });
    let r = PhaseBuilder::open(500, 1).run(&server.target());
    let info = describe(&r);
    assert!(!r.validity.valid, "{info}");
    assert!(r.validity.problems.iter().any(|p| p.kind == "rate_not_reached"), "{info}");
    assert!(r.requests.unsent > 0, "{info}");
}

#[test]
fn mismatched_workers_and_bad_requests_are_engine_errors() {
    let server = hello_server();
    let (phase, mut workers) = PhaseBuilder::closed(2).workers(2).build();
    workers.pop();
    let e = run_phase(&phase, &workers, &server.target(), &StopSignal::new(), &mut |_| Control::Continue);
    assert!(matches!(e, Err(loadgate_engine::EngineError::WorkerMismatch { .. })));
    let (mut phase, workers) = PhaseBuilder::closed(2).build();
    phase.request.headers.push(("X-Evil".into(), "a\r\nb: c".into()));
    let e = run_phase(&phase, &workers, &server.target(), &StopSignal::new(), &mut |_| Control::Continue);
    assert!(matches!(e, Err(loadgate_engine::EngineError::InvalidRequest(_))));
}

#[test]
fn precise_pacing_sends_every_request_and_reports_its_polling() {
    let server = hello_server();
    let r = PhaseBuilder::open(2000, 8)
        .pacing(loadgate_plan::Pacing::Precise)
        .duration(Duration::from_millis(500))
        .run(&server.target());
    let info = describe(&r);
    assert_counts_match(&r, &server);
    assert_eq!(r.histograms.send_lag.len(), r.requests.completed, "{info}");
    let w = &r.workers[0];
    let spin = w.spin_seconds.unwrap_or_else(|| panic!("no spin_seconds\n{info}"));
    assert!(spin > 0.0, "{spin} {w:?}");
    // The default pacing does not poll.
    let r = PhaseBuilder::open(2000, 8).duration(Duration::from_millis(300)).run(&server.target());
    assert!(r.workers[0].spin_seconds.is_none(), "{}", describe(&r));
}

/// `pipeline_reads: batch` reads each batch whole and counts exactly as reading each response does: a timed run,
/// a request count whose last batch is short, several workers.
#[test]
fn batch_reads_count_every_request_once() {
    let cases = [
        PhaseBuilder::closed(3).pipeline(8, PipelineMode::Batch).batch_reads(),
        PhaseBuilder::closed(3).workers(2).requests(1001).pipeline(16, PipelineMode::Batch).batch_reads(),
        PhaseBuilder::closed(1).requests(5).pipeline(4, PipelineMode::Batch).batch_reads(),
    ];
    for case in cases {
        let server = hello_server();
        let r = case.run(&server.target());
        assert_counts_match(&r, &server);
        if let StopCondition::Requests { requests } = case.stop {
            assert_eq!(r.requests.completed, requests, "{}", describe(&r));
        }
        assert_eq!(r.load.pipeline_reads.as_deref(), Some("batch"), "{}", describe(&r));
    }
    // Reading each response as it comes is the default, and says nothing.
    let server = hello_server();
    let r = PhaseBuilder::closed(2).pipeline(8, PipelineMode::Batch).run(&server.target());
    assert_counts_match(&r, &server);
    assert_eq!(r.load.pipeline_reads, None);
}

/// Responses of changing length: some longer (the mark is reached before the batch is in: read in parts), and now
/// and then one shorter than any before (the mark is never reached: the batch is read by force). Nothing is
/// lost, nothing times out.
#[test]
fn batch_reads_take_responses_of_any_length() {
    let server = serve(|r| {
        let body: Vec<u8> = match r.seq % 23 {
            22 => Vec::new(),
            n if n % 3 == 0 => vec![b'x'; 40 + n as usize],
            _ => HELLO.to_vec(),
        };
        Reply::Bytes(ok_body(&body))
    });
    let r = PhaseBuilder::closed(2)
        .requests(600)
        .pipeline(8, PipelineMode::Batch)
        .batch_reads()
        .timeout(Duration::from_secs(30))
        .run(&server.target());
    let info = describe(&r);
    assert_eq!(r.requests.completed, 600, "{info}");
    assert_eq!(r.requests.completed, server.answered(), "{info}");
    assert_eq!(r.errors.total(), 0, "{info}");
}

/// A server that closes after some responses (`Connection: close`, as nginx's `keepalive_requests`): the batch's
/// unanswered requests go again on a new connection, and the new connection learns its lengths again.
#[test]
fn batch_reads_survive_a_server_that_closes_mid_batch() {
    let server = serve(|r| {
        if r.seq % 37 == 36 {
            Reply::BytesThenClose(
                b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 13\r\n\r\nHello, World!".to_vec(),
            )
        } else {
            Reply::Bytes(ok_body(HELLO))
        }
    });
    let r = PhaseBuilder::closed(2).requests(500).pipeline(8, PipelineMode::Batch).batch_reads().run(&server.target());
    let info = describe(&r);
    assert_eq!(r.requests.completed, 500, "{info}");
    assert_eq!(r.requests.completed, server.answered(), "{info}");
    assert_eq!(r.errors.total(), 0, "{info}");
    assert!(r.connections.reconnects > 0, "{info}");
}

/// A server that answers part of a batch and then hangs: the answered responses complete (they are read by force
/// although the batch never reaches its mark), only the rest time out.
#[test]
fn batch_reads_complete_what_arrived_before_the_rest_times_out() {
    let server = serve(|r| if r.seq < 6 { Reply::Bytes(ok_body(HELLO)) } else { Reply::Hang });
    let r = PhaseBuilder::closed(1)
        .requests(8)
        .pipeline(4, PipelineMode::Batch)
        .batch_reads()
        .timeout(Duration::from_millis(500))
        .run(&server.target());
    let info = describe(&r);
    assert_eq!(r.requests.completed, 6, "{info}");
    assert_eq!(r.errors.timeout, 2, "{info}");
}

/// What each read policy means for latency, against a server that takes 10 ms or more before each response of a
/// batch of 4: read as they come, a batch's responses complete 10 ms or more apart; read whole, a batch completes
/// when its last response is in, 4 x 10 ms or more after it went out (the first batch of a connection is read as it
/// comes: it shows the response length).
#[test]
fn reading_each_response_or_the_batch_whole_is_what_latency_measures() {
    let gap = Duration::from_millis(10);
    let slow = move || {
        serve(move |_| {
            std::thread::sleep(gap);
            Reply::Bytes(ok_body(HELLO))
        })
    };
    let server = slow();
    let r = PhaseBuilder::closed(1).requests(20).pipeline(4, PipelineMode::Batch).run(&server.target());
    let h = &r.histograms.latency;
    assert_eq!(h.len(), 20, "{}", describe(&r));
    // Within a batch the responses are 10 ms or more apart: the fastest is 30 ms or more below the slowest.
    assert!(h.max() >= h.min() + 30_000 - 1_000, "min {} max {}", h.min(), h.max());

    let server = slow();
    let r = PhaseBuilder::closed(1).requests(20).pipeline(4, PipelineMode::Batch).batch_reads().run(&server.target());
    let h = &r.histograms.latency;
    assert_eq!(h.len(), 20, "{}", describe(&r));
    let whole: u64 = h.iter_recorded().filter(|v| v.value_iterated_to() >= 39_000).map(|v| v.count_at_value()).sum();
    // The 16 responses of the 4 batches read whole, and the first batch's last one.
    assert!(whole >= 17, "{whole} of 20 completed with their batch:\n{}", describe(&r));
}

/// Heads and bodies written apart, of two lengths: a read often ends inside a response, and the mark then counts
/// only what is left of it (it once asked for a whole response more, which never came, so nearly every batch
/// waited to be read by force). Batches are read by force only when a response shorter than any before comes.
#[test]
fn batch_reads_of_responses_sent_in_pieces_are_not_held_back() {
    let server = serve(|r| {
        let body: &[u8] = if r.target == "/long" { &[b'x'; 300] } else { HELLO };
        let head = format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n", body.len()).into_bytes();
        Reply::Pieces(vec![head, body.to_vec()])
    });
    let request = |path: &str| RequestPlan {
        method: "GET".into(),
        path: path.into(),
        headers: vec![],
        body: None,
        dynamic: None,
        checks: vec![],
        captures: vec![],
    };
    let r = PhaseBuilder::closed(2)
        .requests(2000)
        .pipeline(8, PipelineMode::Batch)
        .batch_reads()
        .mix(&[("long", 1, request("/long")), ("short", 3, request("/short"))])
        .run(&server.target());
    let info = describe(&r);
    assert_eq!(r.requests.completed, 2000, "{info}");
    assert_eq!(r.requests.completed, server.answered(), "{info}");
    assert_eq!(r.errors.total(), 0, "{info}");
    let (held, forced) = (r.load.batches_held.unwrap_or(0), r.load.batches_forced.unwrap_or(0));
    assert!(held > 100, "{info}");
    // Each connection learns the shortest length from its first batch; only a shorter one can be waited for.
    assert!(forced <= 2, "{forced} of {held} batches were read by force:\n{info}");
    assert!(!r.validity.warnings.iter().any(|w| w.kind == "pipeline_batches_forced"), "{info}");
}

/// A response shorter than any before, now and then: its batch never reaches its mark and is read by force;
/// the run counts those batches and, when they are a measurable share, says they held the load back.
#[test]
fn batches_read_by_force_are_counted_and_warned_about() {
    let server = serve(|r| {
        // Every 8th batch of a connection ends with an empty body: shorter than any response before it.
        let body: &[u8] = if r.seq % 64 == 63 { b"" } else { HELLO };
        Reply::Bytes(ok_body(body))
    });
    let r = PhaseBuilder::closed(1).requests(640).pipeline(8, PipelineMode::Batch).batch_reads().run(&server.target());
    let info = describe(&r);
    assert_eq!(r.requests.completed, 640, "{info}");
    assert_eq!(r.errors.total(), 0, "{info}");
    let forced = r.load.batches_forced.unwrap_or(0);
    assert!(forced >= 1, "{info}");
    let warning = r.validity.warnings.iter().find(|w| w.kind == "pipeline_batches_forced");
    assert!(warning.is_some_and(|w| w.message.contains("pipeline_reads: each")), "{info}");
    assert!(r.validity.valid, "a warning, not an invalid measurement: {info}");
}
