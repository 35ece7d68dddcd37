//! HTTP/1.1 over one connection: a slot's per-connection state (`SlotIo`) and its loop (`SlotIo::drive`: take due
//! requests, write them, read and parse responses, time out, record), the `Driver` both protocols implement, and
//! `SlotIo::record`, through which every completion goes.

use std::collections::VecDeque;
use std::task::{Context, Poll};
use std::time::Instant;

use loadgate_measure::StatusCounts;

use crate::check::cookie::Jar;
use crate::check::Inspector;
use crate::codec::{Completed, Eof, ResponseParser};
use crate::transport::Stream;
use crate::vars::Vars;

use super::batch::{Batching, Stall};
use super::inspect;
use super::pace::{Acquired, Ctx, Stats};
use super::shared::{count_failure, micros, End, Failure, InFlight, WorkerConfig};

/// How requests go over a connection: HTTP/1.1 ([`Http1`]) or HTTP/2 ([`http2::H2`]), each generic over the
/// transport. `drive` makes all the progress it can and says how the connection ends, if it does.
pub(super) trait Driver {
    fn drive(&mut self, cx: &mut Context<'_>, ctx: &Ctx, io: &mut SlotIo, quota: &mut Option<u64>) -> Poll<End>;
}

/// HTTP/1.1 over a transport: the slot's own loop ([`SlotIo::drive`]).
pub(super) struct Http1<S>(pub(super) S);

impl<S: Stream> Driver for Http1<S> {
    #[inline(always)]
    fn drive(&mut self, cx: &mut Context<'_>, ctx: &Ctx, io: &mut SlotIo, quota: &mut Option<u64>) -> Poll<End> {
        io.drive(cx, ctx, &mut self.0, quota)
    }
}

/// A connection slot's per-connection state.
pub(super) struct SlotIo {
    pub(super) id: usize,
    /// Sessions: the step of the user's request in flight.
    pub(super) step: usize,
    /// Requests in flight, oldest first.
    pub(super) in_flight: VecDeque<InFlight>,
    /// The static request: bytes of requests not yet written.
    pub(super) unwritten: usize,
    /// The static request: offset into a request where the next write starts.
    pub(super) write_off: usize,
    /// Built requests: their bytes, reused from request to request, and how much of them is written.
    pub(super) out: Vec<u8>,
    pub(super) out_pos: usize,
    pub(super) parser: ResponseParser,
    /// The lazy timeout timer: when it fires (if armed).
    pub(super) timer_at: Instant,
    pub(super) armed: bool,
    /// A response completed on the current connection.
    pub(super) answered: bool,
    /// The server closed or reset the current connection (EOF, a failed read or write).
    pub(super) peer_closed: bool,
    /// Batched reads of the current connection (pipelined batches only).
    pub(super) batch: Batching,
    /// Sessions with variables: the user's captured values (allocated once per slot, reused by its users).
    pub(super) vars: Option<Box<Vars>>,
    /// Sessions with cookies: the user's jar.
    pub(super) jar: Option<Box<Jar>>,
    /// Sessions with cookies: the path of the user's request in flight (a cookie without `Path` belongs to it).
    pub(super) path: Vec<u8>,
    /// Phases with checks: what the response being read is found to be (made at the first checked response).
    pub(super) inspector: Option<Box<Inspector>>,
}

impl SlotIo {
    pub(super) fn new(id: usize, cfg: &WorkerConfig) -> Self {
        let variables = cfg.variables;
        let cookies = cfg.checks.as_ref().is_some_and(|c| c.cookies);
        SlotIo {
            vars: (variables > 0).then(|| Box::new(Vars::new(variables))),
            jar: cookies.then(|| Box::new(Jar::new())),
            path: Vec::new(),
            inspector: None,
            id,
            step: 0,
            in_flight: VecDeque::new(),
            unwritten: 0,
            write_off: 0,
            out: Vec::new(),
            out_pos: 0,
            parser: ResponseParser::new(),
            timer_at: Instant::now(),
            armed: false,
            answered: false,
            peer_closed: false,
            batch: Batching::new(),
        }
    }

    /// Sessions with cookies: keeps the path of the request just built (in `out`), for its response's cookies.
    pub(super) fn remember_path(&mut self) {
        if self.jar.is_some() {
            self.path.clear();
            self.path.extend_from_slice(inspect::request_path(&self.out));
        }
    }

    /// A request is on its way: `len` bytes of the static request, or already in `out` when built.
    pub(super) fn push(&mut self, intended: Instant, sent: Instant, entry: u32, len: usize) {
        self.in_flight.push_back(InFlight { intended, sent, entry });
        self.unwritten += len;
    }

    pub(super) fn reset(&mut self) {
        self.in_flight.clear();
        self.unwritten = 0;
        self.write_off = 0;
        self.out.clear();
        self.out_pos = 0;
        self.parser.reset();
        self.batch.reset();
    }

    /// The stream broke: every request in flight fails with `kind`, and a TLS failure is counted by its class.
    #[cold]
    pub(super) fn fail_stream<S: Stream>(&mut self, ctx: &Ctx, stream: &mut S, kind: Failure) {
        let mut stats = ctx.stats.borrow_mut();
        if let Some(f) = stream.take_tls_failure() {
            stats.tls.failed(f);
        }
        self.fail_all(&mut stats, kind);
    }

    /// Every request in flight fails with `kind` (each counted once).
    pub(super) fn fail_all(&mut self, stats: &mut Stats, kind: Failure) {
        let n = self.in_flight.len() as u64;
        count_failure(&mut stats.c.errors, &kind, n);
        if !stats.by_entry.is_empty() {
            for f in &self.in_flight {
                if let Some(e) = stats.entry(f.entry) {
                    count_failure(&mut e.errors, &kind, 1);
                }
            }
        }
        stats.in_flight -= n;
        self.reset();
    }

    /// Drives the connection until it must be replaced or the slot is done. Each call makes all the progress it
    /// can: takes due requests, writes them in one write, reads everything available and parses it.
    pub(super) fn drive<S: Stream>(
        &mut self,
        cx: &mut Context<'_>,
        ctx: &Ctx,
        stream: &mut S,
        quota: &mut Option<u64>,
    ) -> Poll<End> {
        let cfg = &ctx.cfg;
        let req_len = cfg.request.as_ref().map_or(0, |r| r.len());
        let mut now = Instant::now();
        // A batched connection's read owed before a timeout is called (once per call).
        let mut forced = false;
        loop {
            let mut progress = false;
            // 1. Take new requests.
            if cfg.keep_alive {
                let room = if cfg.window {
                    cfg.pipeline.saturating_sub(self.in_flight.len())
                } else if self.in_flight.is_empty() {
                    cfg.pipeline
                } else {
                    0
                };
                if room > 0 {
                    let in_flight = &mut self.in_flight;
                    let acquired = if cfg.request.is_some() {
                        ctx.acquire(quota, room, now, |t| {
                            in_flight.push_back(InFlight { intended: t, sent: now, entry: 0 })
                        })
                    } else {
                        // Built one at a time, into this connection's buffer.
                        let out = &mut self.out;
                        let mut stats = ctx.stats.borrow_mut();
                        ctx.acquire(quota, room, now, |t| {
                            let entry = ctx.build(out);
                            if let Some(e) = stats.entry(entry) {
                                e.sent += 1;
                            }
                            in_flight.push_back(InFlight { intended: t, sent: now, entry });
                        })
                    };
                    match acquired {
                        Acquired::Got(n) => {
                            self.unwritten += n * req_len;
                            {
                                let mut s = ctx.stats.borrow_mut();
                                s.c.sent += n as u64;
                                s.in_flight += n as u64;
                            }
                            if ctx.batching {
                                // The batch's mark is set before it is written: no response arrives under the old.
                                self.batch.sent(now);
                                self.mark_batch(ctx, stream);
                                if self.batch.holding() {
                                    ctx.stats.borrow_mut().c.batches_held += 1;
                                }
                            }
                        }
                        Acquired::Wait => ctx.wait_for_work(self.id, cx),
                        Acquired::Done => {
                            if self.in_flight.is_empty() {
                                return Poll::Ready(End::Finished);
                            }
                        }
                    }
                }
            } else if self.in_flight.is_empty() {
                // One request per connection, or the next step of a session.
                let end = if cfg.session.is_empty() { End::Reconnect { server_closed: false } } else { End::Step };
                return Poll::Ready(end);
            }

            // 2. Write everything unwritten (and what the stream itself still holds).
            if stream.try_flush(&ctx.rt).is_err() {
                self.fail_stream(ctx, stream, Failure::Write);
                return Poll::Ready(End::Reconnect { server_closed: false });
            }
            loop {
                let buf = match &cfg.request {
                    Some(bytes) if self.unwritten > 0 => bytes.slice(self.write_off, self.unwritten),
                    None if self.out_pos < self.out.len() => &self.out[self.out_pos..],
                    _ => break,
                };
                match stream.try_write(&ctx.rt, buf) {
                    Ok(Some(n)) if n > 0 => {
                        if cfg.request.is_some() {
                            self.unwritten -= n;
                            self.write_off = (self.write_off + n) % req_len.max(1);
                        } else {
                            self.out_pos += n;
                            if self.out_pos >= self.out.len() {
                                self.out.clear();
                                self.out_pos = 0;
                            }
                        }
                        ctx.stats.borrow_mut().c.bytes_written += n as u64;
                    }
                    Ok(None) => break,
                    Ok(Some(_)) | Err(_) => {
                        self.peer_closed = true;
                        self.fail_stream(ctx, stream, Failure::Write);
                        return Poll::Ready(End::Reconnect { server_closed: false });
                    }
                }
            }

            // 3. Read whatever has arrived.
            let mut scratch = ctx.scratch.borrow_mut();
            match stream.try_read(&ctx.rt, &mut scratch[..]) {
                Ok(None) => {}
                Err(_) => {
                    drop(scratch);
                    self.peer_closed = true;
                    self.fail_stream(ctx, stream, Failure::Read);
                    return Poll::Ready(End::Reconnect { server_closed: false });
                }
                Ok(Some(read)) => {
                    let n = read.len;
                    let mut stats = ctx.stats.borrow_mut();
                    if n == 0 {
                        return Poll::Ready(self.on_eof(ctx, &mut stats, quota));
                    }
                    now = Instant::now();
                    // The bytes' arrival (the kernel's timestamp), never later than now.
                    let arrived = read.arrived.map_or(now, |t| t.min(now));
                    stats.c.bytes_read += n as u64;
                    if let Some(end) = self.consume(ctx, &mut stats, quota, &scratch[..n], arrived) {
                        return Poll::Ready(end);
                    }
                    progress = true;
                }
            }
            drop(scratch);
            if ctx.batching {
                self.tend_batch(ctx, stream, now);
            }

            // 4. The lazy per-connection timeout.
            if !self.in_flight.is_empty() && !self.armed {
                let oldest = self.in_flight[0].sent;
                if let Some(at) = oldest.checked_add(cfg.timeout) {
                    self.timer_at = at;
                    self.armed = true;
                    ctx.rt.add_timer(at, ctx.rt.current());
                }
            }
            if self.armed && now >= self.timer_at {
                self.armed = false;
                if let Some(&InFlight { sent, .. }) = self.in_flight.front() {
                    now = Instant::now();
                    if now >= sent + cfg.timeout {
                        if self.batch.holding() && !forced {
                            // What arrived of a batch held back by its low-water mark is read before the rest
                            // times out.
                            forced = true;
                            ctx.rt.mark_readable(ctx.rt.current());
                        } else {
                            self.fail_all(&mut ctx.stats.borrow_mut(), Failure::Timeout);
                            return Poll::Ready(End::Reconnect { server_closed: false });
                        }
                    }
                    progress = true;
                }
            }
            if !progress {
                return Poll::Pending;
            }
        }
    }

    /// Parses the bytes of one read (or one message of a split read), which arrived at `arrived`, completing the
    /// responses they end; returns how the connection ends if it does.
    #[inline]
    pub(super) fn consume(
        &mut self,
        ctx: &Ctx,
        stats: &mut Stats,
        quota: &mut Option<u64>,
        data: &[u8],
        arrived: Instant,
    ) -> Option<End> {
        let n = data.len();
        let mut off = 0;
        while off < n {
            let entry = self.in_flight.front().map(|f| f.entry);
            let head = ctx.is_head(entry);
            let checks = match (&ctx.cfg.checks, entry) {
                (Some(plan), Some(e)) if plan.inspects(e) => plan.entry(e),
                _ => None,
            };
            let fed = match (checks, ctx.cfg.checks.as_ref()) {
                (Some(checks), Some(plan)) => {
                    let inspector = self.inspector.get_or_insert_with(|| Box::new(plan.inspector()));
                    let mut caches = ctx.caches.borrow_mut();
                    let caches = caches.as_mut().and_then(|c| c.entry(entry.unwrap_or(0)));
                    match caches {
                        Some(caches) => {
                            let vars = self.vars.as_deref();
                            let mut seeing = inspect::Inspecting { inspector, checks, caches, vars };
                            self.parser.feed_with(&data[off..], head, &mut seeing)
                        }
                        None => self.parser.feed(&data[off..], head),
                    }
                }
                _ => self.parser.feed(&data[off..], head),
            };
            match fed {
                Err(_) => {
                    self.fail_all(stats, Failure::Protocol);
                    return Some(End::Reconnect { server_closed: false });
                }
                Ok((used, done)) => {
                    off += used;
                    if ctx.batching {
                        self.batch.bytes(used);
                    }
                    if let Some(done) = done {
                        if ctx.batching {
                            self.batch.response();
                        }
                        if let Some(end) = self.complete(ctx, stats, quota, done, arrived) {
                            return Some(end);
                        }
                    }
                }
            }
        }
        None
    }

    /// After a read: the socket's low-water mark follows the responses still outstanding, and a batch it holds back
    /// gets a time to be read by force.
    pub(super) fn tend_batch<S: Stream>(&mut self, ctx: &Ctx, stream: &mut S, now: Instant) {
        let stall = &ctx.stall[self.id];
        // A read by force that completed the batch: the batch could never reach its mark. One that left responses
        // outstanding met a slow server.
        if stall.get() == Stall::Forced {
            stall.set(Stall::None);
            if self.in_flight.is_empty() {
                self.batch.forced();
                ctx.stats.borrow_mut().c.batches_forced += 1;
            }
        }
        if self.in_flight.is_empty() {
            self.batch.done(now);
            stall.set(Stall::None);
        }
        self.mark_batch(ctx, stream);
        if self.batch.holding() && !self.in_flight.is_empty() && stall.get() == Stall::None {
            stall.set(Stall::At(now + self.batch.stall_bound()));
        }
    }

    /// Sets the socket's low-water mark to what the responses outstanding need, when that changed.
    pub(super) fn mark_batch<S: Stream>(&mut self, ctx: &Ctx, stream: &mut S) {
        if !stream.holds_reads() {
            return;
        }
        if let Some(bytes) = self.batch.low_water_for(self.in_flight.len(), ctx.rt.reads_stamped()) {
            if stream.set_read_low_water(bytes).is_ok() {
                self.batch.set_low_water(bytes);
                if bytes > 1 {
                    ctx.held.set(true);
                }
            } else {
                self.batch.refused();
            }
        }
    }

    /// A response completed; returns how the connection ends if it does.
    pub(super) fn complete(
        &mut self,
        ctx: &Ctx,
        stats: &mut Stats,
        quota: &mut Option<u64>,
        done: Completed,
        now: Instant,
    ) -> Option<End> {
        let Some(request) = self.in_flight.pop_front() else {
            // A response nobody asked for.
            self.fail_all(stats, Failure::Protocol);
            return Some(End::Reconnect { server_closed: false });
        };
        let entry = request.entry;
        self.record(ctx, stats, request, done.status, now);
        if let (Some(plan), Some(inspector), Some(tally)) =
            (&ctx.cfg.checks, self.inspector.as_deref_mut(), stats.checks.as_mut())
        {
            let mut caches = ctx.caches.borrow_mut();
            let caches = caches.as_mut().and_then(|c| c.entry(entry));
            if let (Some(checks), Some(caches)) = (plan.entry(entry).filter(|_| plan.inspects(entry)), caches) {
                let user = inspect::UserSide {
                    vars: self.vars.as_deref_mut(),
                    jar: self.jar.as_deref_mut(),
                    request_path: &self.path,
                };
                inspect::judge(inspector, checks, caches, entry, user, tally);
            }
        }
        if done.close {
            self.close_after_response(ctx, stats, quota);
            return Some(End::Reconnect { server_closed: ctx.cfg.keep_alive });
        }
        None
    }

    /// Records a completed request: its latency, service time, send lag and status.
    pub(super) fn record(&mut self, ctx: &Ctx, stats: &mut Stats, request: InFlight, status: u16, now: Instant) {
        let InFlight { intended, sent, entry } = request;
        // A kernel timestamp can precede the actual send only by clock noise: never count that.
        let now = now.max(sent);
        let latency = micros(now.saturating_duration_since(intended));
        // Recorded once, in the interval's histograms; each snapshot adds them to the phase's totals.
        stats.interval.saturating_record(latency);
        if ctx.open_loop {
            stats.interval_service.saturating_record(micros(now.saturating_duration_since(sent)));
            stats.interval_send_lag.saturating_record(micros(sent.saturating_duration_since(intended)));
        } else if !ctx.service_is_latency() {
            stats.service_time.saturating_record(micros(now.saturating_duration_since(sent)));
        }
        stats.c.completed += 1;
        stats.in_flight -= 1;
        self.answered = true;
        if let Some(r) = &ctx.replay {
            r.answered(entry, status);
        }
        count_status(&mut stats.c.status, status);
        if let Some(e) = stats.entry(entry) {
            e.completed += 1;
            e.latency.saturating_record(latency);
            count_status(&mut e.status, status);
        }
    }

    /// The server said it closes: requests pipelined behind the last response were never read by it.
    pub(super) fn close_after_response(&mut self, ctx: &Ctx, stats: &mut Stats, quota: &mut Option<u64>) {
        if !self.in_flight.is_empty() {
            let back: Vec<(Instant, u32)> = self.in_flight.iter().map(|f| (f.intended, f.entry)).collect();
            for f in self.in_flight.drain(..) {
                if let Some(e) = stats.by_entry.get_mut(f.entry as usize) {
                    e.sent -= 1;
                }
            }
            let n = back.len() as u64;
            stats.c.sent -= n;
            stats.in_flight -= n;
            match &ctx.open {
                None => {
                    if let Some(q) = quota {
                        *q += n;
                    }
                }
                Some(src) => {
                    let mut src = src.borrow_mut();
                    for b in back.into_iter().rev() {
                        src.retry.push_front(b);
                    }
                }
            }
        }
        self.reset();
    }

    pub(super) fn on_eof(&mut self, ctx: &Ctx, stats: &mut Stats, quota: &mut Option<u64>) -> End {
        self.peer_closed = true;
        match self.parser.eof() {
            Eof::Completed(done) => {
                let now = Instant::now();
                if self.complete(ctx, stats, quota, done, now).is_none() {
                    self.close_after_response(ctx, stats, quota);
                }
            }
            Eof::MidResponse => self.fail_all(stats, Failure::Read),
            Eof::Clean => self.fail_all(stats, Failure::Read),
        }
        End::Reconnect { server_closed: ctx.cfg.keep_alive }
    }
}

fn count_status(status: &mut StatusCounts, code: u16) {
    match code {
        100..=199 => status.informational += 1,
        200..=299 => status.success += 1,
        300..=399 => status.redirection += 1,
        400..=499 => status.client_error += 1,
        _ => status.server_error += 1,
    }
}
