//! One worker: an OS thread pinned to its CPU, running its own event loop (the `rt` module) with its own
//! connection slots, counters and histograms.
//!
//! Everything per request stays on the worker thread in plain `Cell`/`RefCell` state: no locks, atomics or
//! channels. The worker talks to the aggregating thread once per second (a snapshot of the interval) and once
//! at the end (its totals and full histograms).
//!
//! # The engine loop
//!
//! A worker runs `slots` connection slots and one ticker task. Every slot runs the same loop, whatever the load
//! model: take requests from the worker's request source, write them (all of a batch in one write), read
//! responses (as much as the socket has, into the worker's shared scratch buffer), record, repeat. What varies
//! is data:
//!
//! - the source: closed (a request is always available, up to the slot's quota) or open (requests become due
//!   at the intended times of the worker's arrival schedule, and wait in order when every slot is busy);
//! - how many requests a slot may have in flight (`pipeline`), and when it may add more (window: whenever one
//!   completes; batch: only when all completed);
//! - whether a connection carries many requests (keep-alive) or one (keep-alive off, and user injection where
//!   every user is a new connection with its request);
//! - where the bytes come from: the phase's one static request repeated, or requests built one at a time (a mix,
//!   generated values) into the connection's own reusable buffer as they are taken.
//!
//! The ticker wakes at least every millisecond in open loads (every 10 ms in closed ones): it checks the stop
//! signal and the deadline, wakes idle slots when requests are due, and sends the per-second snapshot. In an
//! open load it also wakes at the intended send time of the next request when a connection is free for it and
//! it is due a millisecond or more after the request taken last: up to 1,000 requests/s per worker every request
//! leaves on time (within the timer's microsecond slack and the wake-up), above it the requests due in each
//! millisecond go together, without more wake-ups than the plain tick would make (a wake-up costs tens of
//! microseconds of CPU in a VM, more than a request). What a request waits for is its send lag, part of its latency.
//! At an open load's deadline the requests due before it still go out (the last millisecond's, handed out at the
//! tick after the deadline) while a connection is free for them; only what then still waits is never sent. In an
//! open keep-alive load without pipelining whose due requests all found a free connection, the ticker also
//! lets the event loop defer socket I/O to its next wake: responses are then read in one pass instead of
//! waking the thread for each, and their completion time is the kernel's receive timestamp, so latency is as
//! exact as before (a read's timestamp is that of its last bytes, hence one response per connection at a
//! time). As soon as requests wait for a connection (or a connect is in progress, a read came without a
//! timestamp, or the load stops), every response is handled as it arrives again.
//!
//! Per-request timeouts use one lazy timer per connection, armed at the oldest in-flight request's deadline
//! and moved only when it fires, so a busy connection touches its timer about once per timeout period.
//!
//! # Where it lives
//!
//! This module is the worker's thread and its slots' loop (`slot_main`: connect, serve the connection, reconnect;
//! `serve`: drive a connection, a session's steps between its requests). The rest are rooms of their own:
//! `pace` (the worker's shared state `Ctx`: the request source, taking and waiting for requests, snapshots and
//! totals, and the ticker task), `slot` (HTTP/1.1 over one connection: `SlotIo`, and the `Driver` both protocols
//! implement), `http2` (the HTTP/2 driver), `batch` (pipelined batches read whole), `inspect` and `tally`
//! (response checks), and `shared` (the configuration, messages and counters they all use; it uses none of them).

use std::future::poll_fn;
use std::rc::Rc;
use std::sync::mpsc::{Receiver, Sender};
use std::task::Poll;
use std::time::{Duration, Instant};

use crate::check::cookie::Jar;
use crate::control::EngineError;
use crate::opening;
use crate::request::UserValues;
use crate::rt::{Rt, Task, TaskId};
use crate::tls::{self, TlsConn};
use crate::transport::{self, ConnectError, TcpConn};
use crate::vars::Vars;

mod batch;
mod http2;
pub(crate) mod inspect;
mod pace;
mod shared;
mod slot;
pub(crate) mod tally;

use batch::Stall;
use pace::{run, Acquired, Ctx};
use shared::{micros, End};
pub(crate) use shared::{
    Counters, H2Counters, Msg, PairKey, SessionOp, Snapshot, TlsCounters, WorkerConfig, WorkerFinal,
};
use slot::{Driver, Http1, SlotIo};

const BACKOFF_MIN: Duration = Duration::from_millis(1);
const BACKOFF_MAX: Duration = Duration::from_millis(100);
/// `pacing: precise`: how long before a timer the worker stops sleeping and polls its sockets until it is due
/// (this VM's wake-ups come tens of microseconds late, sometimes more).
const PRECISE_AHEAD: Duration = Duration::from_micros(200);
/// Closed keep-alive loads over TLS: the most the event loop polls its sockets before it blocks.
const TLS_POLL_MAX: Duration = Duration::from_micros(20);

/// Starts a worker thread with its lanes (one per target the phase loads: one, or a duet's two, all with the
/// same worker index, CPU and schedule). It pins itself, builds its runtime, opens each lane's connections, reports
/// `Ready` once per lane, then waits for the start instant.
pub(crate) fn spawn(
    lanes: Vec<WorkerConfig>,
    tx: Sender<Msg>,
) -> std::io::Result<(std::thread::JoinHandle<()>, Sender<Instant>)> {
    let (start_tx, start_rx) = std::sync::mpsc::channel();
    let index = lanes.first().map_or(0, |c| c.index);
    let handle = std::thread::Builder::new()
        .name(format!("loadgate-worker-{index}"))
        .spawn(move || worker_thread(lanes, tx, start_rx))?;
    Ok((handle, start_tx))
}

fn worker_thread(lanes: Vec<WorkerConfig>, tx: Sender<Msg>, start_rx: Receiver<Instant>) {
    let Some(first) = lanes.first() else { return };
    let (index, cpu) = (first.index, first.cpu);
    if let Some(cpu) = cpu {
        if let Err(source) = crate::sys::pin_current_thread(cpu) {
            let _ = tx.send(Msg::Failed(EngineError::Pin { worker: index, cpu, source }));
            return;
        }
    }
    // The pacer's timers fire within a microsecond of the intended send time (the kernel's default slack is 50).
    crate::sys::set_timer_slack(1_000);
    let rt = match Rt::new(lanes.iter().map(|c| c.slots).sum::<usize>() + 1) {
        Ok(rt) => Rc::new(rt),
        Err(source) => {
            let _ = tx.send(Msg::Failed(EngineError::Runtime { worker: index, source }));
            return;
        }
    };
    // Keep-alive connections open before the start, paced, and measured apart from the load. Task 0 is the
    // ticker; lane `l`'s slot `i` is task `first_task + i`, its lanes' slots one after the other.
    let mut first_task: TaskId = 1;
    let mut opened = Vec::with_capacity(lanes.len());
    for cfg in &lanes {
        let o = cfg.opens_before_start().then(|| opening::open_all(&rt, cfg.opening_plan(), first_task));
        let counts = o.as_ref().map(|o| o.counts.clone()).unwrap_or_default();
        if tx.send(Msg::Ready(cfg.lane, Box::new(counts))).is_err() {
            return;
        }
        opened.push((first_task, o));
        first_task += TaskId::try_from(cfg.slots).unwrap_or(TaskId::MAX);
    }
    let Ok(start) = start_rx.recv() else { return };
    let first = &lanes[0];
    if first.precise {
        rt.spin_ahead(PRECISE_AHEAD);
    }
    // A closed keep-alive load over TLS against a server that is the bottleneck: a generator that sleeps
    // between responses must be woken by an interrupt from the server's CPU for each, which in a VM costs that
    // CPU (and the generator's) more than polling for a few microseconds (`docs/benchmarks.md`, issue 13).
    // Measured no better for plain HTTP and worse for pipelining and HTTP/2, whose responses come in batches.
    if first.open.is_none() && first.keep_alive && first.tls.is_some() && !first.http2 && first.pipeline == 1 {
        rt.poll_before_block(TLS_POLL_MAX);
    }
    let (user0, sys0) = crate::sys::thread_cpu_seconds();
    let ctxs: Vec<Rc<Ctx>> = lanes
        .into_iter()
        .zip(opened)
        .map(|(cfg, (first_task, o))| Rc::new(Ctx::new(cfg, start, Rc::clone(&rt), first_task, o)))
        .collect();
    let mut tasks: Vec<Task<'_>> = Vec::with_capacity(usize::try_from(first_task).unwrap_or(0));
    tasks.push(Box::pin(run(ctxs.clone(), tx.clone())));
    for ctx in &ctxs {
        let quotas = ctx.cfg.slot_quotas.clone();
        ctx.live_slots.set(ctx.cfg.slots);
        if ctx.cfg.slots == 0 {
            ctx.stop_at.set(Some(Instant::now()));
        }
        for slot in 0..ctx.cfg.slots {
            let quota = quotas.as_ref().map(|q| q.get(slot).copied().unwrap_or(0));
            tasks.push(Box::pin(slot_main(ctx.clone(), slot, quota)));
        }
    }
    rt.run(tasks);
    let fins: Vec<(usize, WorkerFinal)> = ctxs.iter().map(|c| (c.cfg.lane, c.finish())).collect();
    drop(ctxs);
    // The thread's CPU is every lane's: a duet's lanes each report it whole, so that a saturated generator shows
    // on both sides.
    let (user1, sys1) = crate::sys::thread_cpu_seconds();
    for (lane, mut fin) in fins {
        fin.user_seconds = (user1 - user0).max(0.0);
        fin.system_seconds = (sys1 - sys0).max(0.0);
        let _ = tx.send(Msg::Done(index, lane, Box::new(fin)));
    }
}

/// A connection ready for requests. A TLS connection (a kilobyte and more of rustls state) is boxed until
/// it moves into the boxed future that serves it: every slot's future holds a `Conn`, and plain TCP must not
/// pay for TLS (no indirection per read either way: the served future holds the connection inline).
enum Conn {
    Plain(TcpConn),
    Tls(Box<TlsConn>),
}

/// Opens a connection: the TCP connect (timed as `connect_time`) unless the opening made it already (`pre`),
/// then for HTTPS the TLS handshake (timed as `tls_handshake`). Returns the connection and the moment it could
/// carry a request.
async fn open(ctx: &Ctx, began: Instant, pre: Option<TcpConn>) -> Result<(Conn, Instant), ConnectError> {
    let tcp = match pre {
        Some(tcp) => tcp,
        None => {
            let tcp = transport::connect(&ctx.rt, ctx.cfg.addr, ctx.cfg.timeout).await?;
            let took = began.elapsed();
            ctx.stats.borrow_mut().connect_time.saturating_record(micros(took));
            tcp
        }
    };
    let connected = Instant::now();
    let Some(client) = &ctx.tls else {
        return Ok((Conn::Plain(tcp), connected));
    };
    // The handshake's state lives on the heap while it runs: the slot's own future stays small.
    match Box::pin(tls::handshake(&ctx.rt, tcp, client, ctx.cfg.timeout)).await {
        Ok((conn, hs)) => {
            let done = Instant::now();
            let mut s = ctx.stats.borrow_mut();
            s.tls_handshake.saturating_record(micros(done.saturating_duration_since(connected)));
            s.tls.handshakes += 1;
            s.tls.resumed += u64::from(hs.resumed);
            match hs.version {
                Some(rustls::ProtocolVersion::TLSv1_3) => s.tls.tls13 += 1,
                Some(rustls::ProtocolVersion::TLSv1_2) => s.tls.tls12 += 1,
                _ => {}
            }
            Ok((Conn::Tls(Box::new(conn)), done))
        }
        Err(failure) => {
            let message = failure.message.clone();
            ctx.stats.borrow_mut().tls.failed(failure);
            Err(ConnectError::Tls(message))
        }
    }
}

/// Drives requests over one open connection until it must be replaced or the slot is done (a session user's
/// steps included). Generic over the driver and its transport, so each gets its own compiled copy of the loop.
async fn serve<D: Driver>(ctx: &Ctx, io: &mut SlotIo, mut driver: D, quota: &mut Option<u64>) -> End {
    let cfg = &ctx.cfg;
    loop {
        let end = poll_fn(|cx| driver.drive(cx, ctx, io, quota)).await;
        if !matches!(end, End::Step) {
            return end;
        }
        // A session's request completed: the user thinks, then sends its next request on the same connection,
        // or closes once its session is done.
        let (next, think) = ctx.next_step(Some(io.step));
        if !think.is_zero() {
            ctx.stats.borrow_mut().thinking += 1;
            ctx.rt.sleep(think).await;
            ctx.stats.borrow_mut().thinking -= 1;
        }
        let Some((step, entry)) = next.filter(|_| !cfg.stop.is_stopped()) else {
            return End::Reconnect { server_closed: false };
        };
        if ctx.blocked(entry, io.vars.as_deref()).is_some() {
            // A value the step uses was never captured (or would break the request): the step is not sent, and
            // the user's session ends, as it does when a request fails.
            let mut s = ctx.stats.borrow_mut();
            s.c.errors.missing_value += 1;
            if let Some(e) = s.entry(entry) {
                e.errors.missing_value += 1;
            }
            return End::Reconnect { server_closed: false };
        }
        io.step = step;
        ctx.build_entry(entry, user_values(&io.vars, &io.jar), &mut io.out);
        io.remember_path();
        let now = Instant::now();
        let mut s = ctx.stats.borrow_mut();
        s.c.sent += 1;
        s.in_flight += 1;
        if let Some(e) = s.entry(entry) {
            e.sent += 1;
        }
        io.push(now, now, entry, 0);
    }
}

/// One connection slot: connect, drive requests over the connection, reconnect when needed, until done.
async fn slot_main(ctx: Rc<Ctx>, id: usize, mut quota: Option<u64>) {
    let mut io = SlotIo::new(id, &ctx.cfg);
    let mut backoff = BACKOFF_MIN;
    let mut ever_connected = false;
    let cfg = &ctx.cfg;
    loop {
        let mut pre = None;
        if !cfg.keep_alive {
            let got = poll_fn(|cx| {
                let mut got = None;
                match ctx.acquire(&mut quota, 1, Instant::now(), |t| got = Some(t)) {
                    Acquired::Got(_) => {
                        let mut s = ctx.stats.borrow_mut();
                        s.acquired_unsent += 1;
                        s.note_active();
                        Poll::Ready(got)
                    }
                    Acquired::Wait => {
                        ctx.wait_for_work(id, cx);
                        Poll::Pending
                    }
                    Acquired::Done => Poll::Ready(None),
                }
            })
            .await;
            match got {
                // A request built one at a time goes into the connection's buffer now.
                Some(t) if !cfg.session.is_empty() => {
                    // A new user: its session starts with its first request step.
                    let (first, _) = ctx.next_step(None);
                    let (step, entry) = first.unwrap_or((0, 0));
                    io.step = step;
                    if let Some(vars) = io.vars.as_deref_mut() {
                        vars.clear();
                    }
                    if let Some(jar) = io.jar.as_deref_mut() {
                        jar.clear();
                    }
                    ctx.build_entry(entry, user_values(&io.vars, &io.jar), &mut io.out);
                    io.remember_path();
                    ctx.stats.borrow_mut().c.users_started += 1;
                    pre = Some((t, entry));
                }
                Some(t) => pre = Some((t, ctx.build(&mut io.out))),
                None => break,
            }
        } else if !ctx.has_more(&quota) {
            break;
        }

        let began = Instant::now();
        let opened = ctx.pre_opened.borrow_mut().get_mut(id).and_then(Option::take);
        match open(&ctx, began, opened).await {
            Ok((conn, connected)) => {
                // A new connection: nothing answered on it yet (a failure mid-way resets the buffers, not these).
                io.answered = false;
                io.peer_closed = false;
                {
                    let mut s = ctx.stats.borrow_mut();
                    s.c.opened += 1;
                    s.conns_open += 1;
                    s.peak_open = s.peak_open.max(s.conns_open);
                    s.interval_peak_open = s.interval_peak_open.max(s.conns_open);
                    if !ever_connected {
                        s.slots_connected += 1;
                    }
                    if let Some((intended, entry)) = pre {
                        s.acquired_unsent -= 1;
                        s.c.sent += 1;
                        s.in_flight += 1;
                        if let Some(e) = s.entry(entry) {
                            e.sent += 1;
                        }
                        io.push(intended, connected, entry, cfg.request.as_ref().map_or(0, |r| r.len()));
                    }
                }
                ever_connected = true;
                backoff = BACKOFF_MIN;
                // One engine loop, monomorphized per transport: the plain path never looks at TLS.
                // Plain HTTP/1.1 is served inline; TLS and HTTP/2, whose state is kilobytes, from a future boxed
                // per connection, so that a slot's own future (every slot has one) stays the size plain HTTP/1.1
                // needs.
                let end = match conn {
                    Conn::Plain(stream) if cfg.http2 => {
                        Box::pin(serve(&ctx, &mut io, http2::H2::new(stream, false), &mut quota)).await
                    }
                    Conn::Plain(stream) => serve(&ctx, &mut io, Http1(stream), &mut quota).await,
                    Conn::Tls(stream) if cfg.http2 || stream.is_h2() => {
                        // ALPN chose HTTP/2 (`protocol: auto`): polling before blocking is for HTTP/1.1 only.
                        ctx.rt.poll_before_block(Duration::ZERO);
                        Box::pin(serve(&ctx, &mut io, http2::H2::new(*stream, true), &mut quota)).await
                    }
                    Conn::Tls(stream) => Box::pin(serve(&ctx, &mut io, Http1(*stream), &mut quota)).await,
                };
                let refused = io.peer_closed && !io.answered;
                io.reset();
                ctx.stall[id].set(Stall::None);
                let mut s = ctx.stats.borrow_mut();
                s.conns_open -= 1;
                if refused {
                    // Accepted and then closed or reset without a single response: a failed connection.
                    s.c.connect_failed += 1;
                }
                if !cfg.session.is_empty() {
                    s.c.users_finished += 1;
                }
                match end {
                    End::Finished => break,
                    End::Step => {}
                    End::Reconnect { server_closed } => {
                        if server_closed {
                            s.c.reconnects += 1;
                        }
                    }
                }
            }
            Err(e) => {
                {
                    let mut s = ctx.stats.borrow_mut();
                    s.c.errors.connect += 1;
                    s.c.connect_failed += 1;
                    if matches!(e, ConnectError::AddressUnavailable) {
                        s.c.address_unavailable += 1;
                    }
                    if s.c.first_connect_error.is_none() {
                        s.c.first_connect_error = Some(e.to_string());
                    }
                    if let Some((_, entry)) = pre {
                        // The request this connection was for fails with it (and a session user with it).
                        s.acquired_unsent -= 1;
                        if !cfg.session.is_empty() {
                            s.c.users_finished += 1;
                        }
                        if let Some(e) = s.entry(entry) {
                            e.errors.connect += 1;
                        }
                        io.out.clear();
                    }
                }
                if pre.is_none() {
                    // In a request-count run every failed attempt uses up a request, so that the run ends even
                    // when the target is gone.
                    match &ctx.open {
                        None => {
                            if let Some(q) = &mut quota {
                                *q = q.saturating_sub(1);
                            }
                        }
                        Some(src) => src.borrow_mut().forfeit(),
                    }
                }
                ctx.rt.sleep(backoff).await;
                backoff = (backoff * 2).min(BACKOFF_MAX);
            }
        }
    }
    ctx.slot_ended();
}

/// What a user's next request is filled with: its variables and cookies.
fn user_values<'a>(vars: &'a Option<Box<Vars>>, jar: &'a Option<Box<Jar>>) -> UserValues<'a> {
    UserValues { vars: vars.as_deref(), cookies: jar.as_deref().map(|j| j as &dyn crate::request::CookieHeader) }
}

#[cfg(test)]
mod tests {
    use std::future::Future;

    use super::*;

    /// The size of the futures an async fn returns, from the fn itself (no arguments needed).
    fn future_size<A, B, C, F: Future>(_: impl Fn(A, B, C) -> F) -> usize {
        std::mem::size_of::<F>()
    }

    #[test]
    fn a_connection_slot_costs_little_memory() {
        let slot = future_size(slot_main);
        eprintln!(
            "slot future {slot} B; SlotIo {} B; Conn {} B; TcpConn {} B; TlsConn {} B; H2<TcpConn> {} B",
            std::mem::size_of::<SlotIo>(),
            std::mem::size_of::<Conn>(),
            std::mem::size_of::<TcpConn>(),
            std::mem::size_of::<crate::tls::TlsConn>(),
            std::mem::size_of::<http2::H2<TcpConn>>(),
        );
    }
}
