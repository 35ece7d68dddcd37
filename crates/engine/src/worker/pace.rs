//! The worker's pacing: its shared state (`Ctx`), the open load's request source, how slots take requests and
//! wait for them, the per-second snapshot and the final totals, and the ticker task that checks the stop and the
//! deadline, wakes idle slots when requests are due and sends the snapshots.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::future::{poll_fn, Future};
use std::pin::Pin;
use std::rc::Rc;
use std::sync::mpsc::Sender;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use loadgate_measure::new_histogram;

use crate::opening::Opened;
use crate::replay::{ReplayPart, ReplayTally};
use crate::request::{Blocked, Built, UserValues};
use crate::rt::{self, Rt};
use crate::schedule::WorkerSchedule;
use crate::tls::{TlsClient, WorkerTls};
use crate::transport::TcpConn;
use crate::vars::Vars;

use super::batch::Stall;
use super::inspect;
use super::shared::{
    error_delta, status_delta, Counters, EntryStats, Msg, SessionOp, Snapshot, TlsCounters, WorkerConfig, WorkerFinal,
};
use super::tally;

/// How long past an open load's deadline its last requests (due before the deadline) may still be handed out.
const LAST_SENDS: Duration = Duration::from_millis(5);

/// The shared read buffer of a worker: one read takes as much as the socket holds, up to this.
const SCRATCH_BYTES: usize = 64 * 1024;
const SNAPSHOT_EVERY: Duration = Duration::from_secs(1);

/// The worker's shared state, owned by its thread.
pub(super) struct Ctx {
    /// The worker's event loop, shared by its lanes (a duet's two targets).
    pub(super) rt: Rc<Rt>,
    /// The task of this lane's slot 0 (slot `i` is task `first_task + i`; task 0 is the ticker).
    pub(super) first_task: rt::TaskId,
    pub(super) cfg: WorkerConfig,
    pub(super) start: Instant,
    pub(super) deadline: Option<Instant>,
    pub(super) stopping: Cell<bool>,
    pub(super) stop_at: Cell<Option<Instant>>,
    pub(super) live_slots: Cell<usize>,
    pub(super) main_waker: RefCell<Option<Waker>>,
    pub(super) stats: RefCell<Stats>,
    pub(super) scratch: RefCell<Box<[u8]>>,
    pub(super) open: Option<RefCell<OpenSource>>,
    /// Slots waiting for an open-loop request to become due, in the order they started waiting.
    pub(super) idle: RefCell<VecDeque<(usize, Waker)>>,
    pub(super) idle_flag: RefCell<Vec<bool>>,
    pub(super) open_loop: bool,
    /// Requests built one at a time (taken from the config).
    pub(super) built: Option<RefCell<Built>>,
    /// Per mix entry of `built`: the method is HEAD.
    pub(super) heads: Box<[bool]>,
    /// HTTPS: the worker's TLS client (its own session cache).
    pub(super) tls: Option<WorkerTls>,
    /// Per slot: the connection opened before the start, taken by the slot's first connect.
    pub(super) pre_opened: RefCell<Vec<Option<TcpConn>>>,
    /// Connections read their batches whole (`pipeline_reads: batch`, `worker/batch.rs`): a closed keep-alive
    /// HTTP/1.1 load pipelined in batches.
    pub(super) batching: bool,
    /// Per slot: when its batch, held back by a low-water mark, is read by force, or that it was.
    pub(super) stall: Box<[Cell<Stall>]>,
    /// A connection held its reads back for a whole batch.
    pub(super) held: Cell<bool>,
    /// Phases with checks: the worker's regex caches, per entry.
    pub(super) caches: RefCell<Option<inspect::WorkerCaches>>,
    /// A replay: the worker's requests and what it sent of them.
    pub(super) replay: Option<Replaying>,
}

/// A replay worker's requests (serialized before the phase) and its tally: the index of the request taken last
/// (its entry), sends per 10 ms window, responses by (logged, seen) status class.
pub(super) struct Replaying {
    pub(super) part: ReplayPart,
    pub(super) entry: Cell<u32>,
    pub(super) tally: RefCell<ReplayTally>,
}

impl Replaying {
    fn new(part: ReplayPart, end: Duration) -> Self {
        // Sends are counted per window up to a second past the phase's end (later ones in the last).
        let windows = loadgate_import::replay::window_of(end) as usize + 101;
        let tally = ReplayTally { windows: vec![0; windows], ..ReplayTally::default() };
        Replaying { part, entry: Cell::new(0), tally: RefCell::new(tally) }
    }

    /// A request was taken at `now`, `since` after the phase start.
    fn sent(&self, entry: u32, since: Duration) {
        self.entry.set(entry);
        let mut t = self.tally.borrow_mut();
        t.taken = t.taken.max(u64::from(entry) + 1);
        let last = t.windows.len().saturating_sub(1);
        let w = (loadgate_import::replay::window_of(since) as usize).min(last);
        if let Some(n) = t.windows.get_mut(w) {
            *n += 1;
        }
    }

    /// A response of `status` (0: none came) to request `entry`.
    pub(super) fn answered(&self, entry: u32, status: u16) {
        let logged = self.part.logged.get(entry as usize).copied().map_or(0, usize::from);
        let seen = if status == 0 { 0 } else { crate::replay::class(status) };
        self.tally.borrow_mut().statuses[logged][seen] += 1;
    }
}

pub(super) struct Stats {
    pub(super) c: Counters,
    pub(super) latency: Histogram<u64>,
    pub(super) service_time: Histogram<u64>,
    pub(super) send_lag: Histogram<u64>,
    pub(super) connect_time: Histogram<u64>,
    pub(super) tls_handshake: Histogram<u64>,
    pub(super) tls: TlsCounters,
    pub(super) interval: Histogram<u64>,
    /// The interval's service times (open loads), for the timeline.
    pub(super) interval_service: Histogram<u64>,
    /// The interval's send lags (open loads), added to `send_lag` at each snapshot.
    pub(super) interval_send_lag: Histogram<u64>,
    /// Requests written whose outcome is not known yet.
    pub(super) in_flight: u64,
    /// Requests taken from the source that wait for their connection (keep-alive off).
    pub(super) acquired_unsent: u64,
    /// Session users in a think time (active users with nothing in flight).
    pub(super) thinking: u64,
    pub(super) conns_open: u64,
    pub(super) peak_open: u64,
    /// The most connections open at once during the current snapshot interval.
    pub(super) interval_peak_open: u64,
    /// The most users active at once (in flight + waiting for a connection + thinking): over the phase, and over
    /// the current snapshot interval. Active users only grow when one is acquired, so that is where they count.
    pub(super) peak_active: u64,
    pub(super) interval_peak_active: u64,
    pub(super) slots_connected: u64,
    /// Per mix entry (empty without a mix).
    pub(super) by_entry: Vec<EntryStats>,
    /// Response checks' counts (phases with checks or captures).
    pub(super) checks: Option<tally::CheckTally>,
}

impl Stats {
    pub(super) fn active(&self) -> u64 {
        self.in_flight + self.acquired_unsent + self.thinking
    }

    /// A user (or a request of a connection-per-request load) was taken: the active count may peak here.
    pub(super) fn note_active(&mut self) {
        let active = self.active();
        self.peak_active = self.peak_active.max(active);
        self.interval_peak_active = self.interval_peak_active.max(active);
    }

    /// The entry's measurements, when the phase has a mix.
    pub(super) fn entry(&mut self, entry: u32) -> Option<&mut EntryStats> {
        self.by_entry.get_mut(entry as usize)
    }
}

pub(super) struct OpenSource {
    pub(super) sched: WorkerSchedule,
    pub(super) next_j: u64,
    pub(super) next_at: Option<Instant>,
    pub(super) quota: Option<u64>,
    /// Requests given back by a connection the server closed before answering them, with their intended times
    /// and entries (a replay's: the request's index in the worker's part).
    pub(super) retry: VecDeque<(Instant, u32)>,
    /// The index of the request taken last (a replay's entry: its index in the worker's part).
    pub(super) taken: u32,
    pub(super) start: Instant,
    /// The intended time of the request last taken from the schedule.
    pub(super) last_taken: Option<Instant>,
}

impl OpenSource {
    pub(super) fn new(sched: WorkerSchedule, quota: Option<u64>, start: Instant) -> Self {
        let mut s = OpenSource {
            sched,
            next_j: 0,
            next_at: None,
            quota,
            retry: VecDeque::new(),
            taken: 0,
            start,
            last_taken: None,
        };
        s.advance();
        s
    }

    pub(super) fn advance(&mut self) {
        self.next_at = self
            .sched
            .time_of(self.next_j)
            .and_then(|secs| Duration::try_from_secs_f64(secs).ok())
            .and_then(|d| self.start.checked_add(d));
    }

    pub(super) fn take(&mut self, now: Instant, deadline: Option<Instant>) -> Option<Instant> {
        if let Some((t, entry)) = self.retry.pop_front() {
            self.taken = entry;
            return Some(t);
        }
        let t = self.next_at?;
        if t > now || deadline.is_some_and(|d| t >= d) || self.quota == Some(0) {
            return None;
        }
        if let Some(q) = &mut self.quota {
            *q -= 1;
        }
        self.taken = u32::try_from(self.next_j).unwrap_or(u32::MAX);
        self.next_j += 1;
        self.advance();
        self.last_taken = Some(t);
        Some(t)
    }

    /// The next request's intended time, when it is due `gap` or more after the request taken last (and no
    /// request given back waits, which the tick takes at once).
    pub(super) fn paced(&self, gap: Duration) -> Option<Instant> {
        if !self.retry.is_empty() {
            return None;
        }
        self.next_at.filter(|&t| self.last_taken.is_none_or(|last| t >= last + gap))
    }

    /// Nothing more will ever become due.
    pub(super) fn exhausted(&self, deadline: Option<Instant>) -> bool {
        self.retry.is_empty()
            && (self.quota == Some(0) || self.next_at.is_none_or(|t| deadline.is_some_and(|d| t >= d)))
    }

    /// Requests due now (at most `cap`).
    pub(super) fn due_count(&self, now: Instant, deadline: Option<Instant>, cap: usize) -> usize {
        let mut n = self.retry.len() as u64;
        if self.quota != Some(0) {
            let until = deadline.map_or(now, |d| now.min(d));
            let secs = until.saturating_duration_since(self.start).as_secs_f64();
            let mut due = self.sched.due_before(secs).saturating_sub(self.next_j);
            if due == 0 && self.next_at.is_some_and(|t| t <= now && deadline.is_none_or(|d| t < d)) {
                due = 1;
            }
            n += self.quota.map_or(due, |q| due.min(q));
        }
        usize::try_from(n).unwrap_or(usize::MAX).min(cap)
    }

    /// Requests the schedule wanted sent before `until` that were never taken.
    pub(super) fn backlog(&self, until: Instant) -> u64 {
        if self.quota == Some(0) {
            return self.retry.len() as u64;
        }
        let secs = until.saturating_duration_since(self.start).as_secs_f64();
        let due = self.sched.due_before(secs).saturating_sub(self.next_j);
        self.retry.len() as u64 + self.quota.map_or(due, |q| due.min(q))
    }

    /// A request-count run lost a request to a failed connect: use it up so that the run still ends.
    pub(super) fn forfeit(&mut self) {
        if let Some(q) = &mut self.quota {
            if *q > 0 {
                *q -= 1;
                self.next_j += 1;
                self.advance();
            }
        }
    }
}

pub(super) enum Acquired {
    Got(usize),
    /// Nothing due yet.
    Wait,
    /// Nothing more for this slot.
    Done,
}

impl Ctx {
    pub(super) fn new(
        mut cfg: WorkerConfig,
        start: Instant,
        rt: Rc<Rt>,
        first_task: rt::TaskId,
        opened: Option<Opened>,
    ) -> Self {
        let (pre_opened, opening_connects) = match opened {
            Some(o) => (o.conns, o.connect_time),
            None => (Vec::new(), new_histogram()),
        };
        let deadline = cfg.duration.and_then(|d| start.checked_add(d));
        let open = cfg.open.clone().map(|(sched, quota)| RefCell::new(OpenSource::new(sched, quota, start)));
        let stats = Stats {
            c: Counters::default(),
            latency: new_histogram(),
            service_time: new_histogram(),
            send_lag: new_histogram(),
            connect_time: opening_connects,
            tls_handshake: new_histogram(),
            tls: TlsCounters::default(),
            interval: new_histogram(),
            interval_service: new_histogram(),
            interval_send_lag: new_histogram(),
            in_flight: 0,
            acquired_unsent: 0,
            thinking: 0,
            conns_open: 0,
            interval_peak_open: 0,
            peak_open: 0,
            peak_active: 0,
            interval_peak_active: 0,
            slots_connected: 0,
            by_entry: (0..cfg.mix_entries).map(|_| EntryStats::new()).collect(),
            checks: cfg.checks.as_ref().map(|p| tally::CheckTally::new(&p.counts())),
        };
        let built = cfg.built.take();
        let end = cfg.duration.unwrap_or_default();
        let replay = cfg.replay.take().map(|part| Replaying::new(part, end));
        let heads = match &replay {
            Some(r) => r.part.heads.clone(),
            None => built.as_ref().map(Built::heads).unwrap_or_default(),
        }
        .into_boxed_slice();
        let slots = cfg.slots;
        let tls = cfg.tls.as_ref().map(TlsClient::for_worker);
        let batching = cfg.batch_reads
            && open.is_none()
            && cfg.keep_alive
            && cfg.pipeline > 1
            && !cfg.window
            && cfg.session.is_empty()
            && !cfg.http2;
        Ctx {
            tls,
            pre_opened: RefCell::new(pre_opened),
            batching,
            stall: (0..slots).map(|_| Cell::new(Stall::None)).collect(),
            held: Cell::new(false),
            caches: RefCell::new(cfg.checks.as_ref().map(|p| p.caches())),
            rt,
            first_task,
            deadline,
            start,
            stopping: Cell::new(false),
            stop_at: Cell::new(None),
            live_slots: Cell::new(0),
            main_waker: RefCell::new(None),
            stats: RefCell::new(stats),
            scratch: RefCell::new(vec![0u8; SCRATCH_BYTES].into_boxed_slice()),
            open_loop: open.is_some(),
            open,
            idle: RefCell::new(VecDeque::new()),
            idle_flag: RefCell::new(vec![false; slots]),
            built: built.map(RefCell::new),
            heads,
            replay,
            cfg,
        }
    }

    pub(super) fn begin_stop(&self, at: Instant) {
        if self.stopping.replace(true) {
            return;
        }
        self.stop_at.set(Some(at));
        let idle = std::mem::take(&mut *self.idle.borrow_mut());
        self.idle_flag.borrow_mut().fill(false);
        for (_, waker) in idle {
            waker.wake();
        }
    }

    /// Reads by force the batches held back by a low-water mark past their time (`None`: every one): their
    /// slots find their sockets readable. Whether any was.
    pub(super) fn force_stalled(&self, now: Option<Instant>) -> bool {
        let mut any = false;
        for (i, stall) in self.stall.iter().enumerate() {
            if matches!(stall.get(), Stall::At(t) if now.is_none_or(|now| now >= t)) {
                stall.set(Stall::Forced);
                self.rt.force_readable(self.first_task + i as rt::TaskId);
                any = true;
            }
        }
        any
    }

    /// Takes up to `room` requests for a slot, calling `push(intended)` for each.
    pub(super) fn acquire(
        &self,
        quota: &mut Option<u64>,
        room: usize,
        now: Instant,
        mut push: impl FnMut(Instant),
    ) -> Acquired {
        if self.stopping.get() {
            return Acquired::Done;
        }
        // A closed load stops issuing at the deadline; an open one still sends what was due before it (below).
        if let Some(d) = self.deadline.filter(|d| now >= *d && self.open.is_none()) {
            self.begin_stop(d);
            return Acquired::Done;
        }
        match &self.open {
            None => {
                let n = quota.map_or(room, |q| room.min(usize::try_from(q).unwrap_or(usize::MAX)));
                if n == 0 {
                    return Acquired::Done;
                }
                if let Some(q) = quota {
                    *q -= n as u64;
                }
                for _ in 0..n {
                    push(now);
                }
                Acquired::Got(n)
            }
            Some(src) => {
                let mut src = src.borrow_mut();
                let mut n = 0;
                while n < room {
                    let Some(t) = src.take(now, self.deadline) else {
                        break;
                    };
                    if let Some(r) = &self.replay {
                        r.sent(src.taken, now.saturating_duration_since(self.start));
                    }
                    push(t);
                    n += 1;
                }
                if n > 0 {
                    Acquired::Got(n)
                } else if let Some(d) = self.deadline.filter(|d| now >= *d) {
                    drop(src);
                    self.begin_stop(d);
                    Acquired::Done
                } else if src.exhausted(self.deadline) {
                    Acquired::Done
                } else {
                    Acquired::Wait
                }
            }
        }
    }

    /// Whether a slot has anything left to do (without taking it).
    pub(super) fn has_more(&self, quota: &Option<u64>) -> bool {
        if self.stopping.get() || *quota == Some(0) {
            return false;
        }
        if self.deadline.is_some_and(|d| Instant::now() >= d) {
            return false;
        }
        self.open.as_ref().is_none_or(|src| !src.borrow().exhausted(self.deadline))
    }

    /// Serializes the next built request into `out`; returns its mix entry.
    pub(super) fn build(&self, out: &mut Vec<u8>) -> u32 {
        if let Some(r) = &self.replay {
            let entry = r.entry.get();
            out.extend_from_slice(r.part.request(entry as usize));
            return entry;
        }
        self.built.as_ref().map_or(0, |b| b.borrow_mut().next(out))
    }

    /// Serializes the request of `entry` (a session step) into `out`, with the user's variables.
    pub(super) fn build_entry(&self, entry: u32, user: UserValues<'_>, out: &mut Vec<u8>) {
        if let Some(b) = &self.built {
            b.borrow_mut().next_of(entry, user, out);
        }
    }

    /// Whether a session step cannot be sent with the user's variables.
    pub(super) fn blocked(&self, entry: u32, vars: Option<&Vars>) -> Option<Blocked> {
        let (b, vars) = (self.built.as_ref()?, vars?);
        b.borrow().blocked(entry, vars)
    }

    /// The session's request step after step `after` (or its first with `None`), and the think time before it.
    /// `None` for the step when the session has no more requests (the think time then ends it).
    pub(super) fn next_step(&self, after: Option<usize>) -> (Option<(usize, u32)>, Duration) {
        let from = after.map_or(0, |a| a + 1);
        let mut think = Duration::ZERO;
        for (i, op) in self.cfg.session.iter().enumerate().skip(from) {
            match *op {
                SessionOp::Think(d) => think += d,
                SessionOp::Request(entry) => return (Some((i, entry)), think),
            }
        }
        (None, think)
    }

    /// Whether the response to a request of `entry` has no body (the request was HEAD).
    pub(super) fn is_head(&self, entry: Option<u32>) -> bool {
        match &self.cfg.request {
            Some(bytes) => bytes.head,
            None => entry.and_then(|e| self.heads.get(e as usize).copied()).unwrap_or(false),
        }
    }

    /// The intended send time of an open load's next request, when an idle connection waits for it and the
    /// request taken last was intended at least `gap` earlier: the pacer then wakes at that moment rather than
    /// at its next tick. (Where requests are due more often, the tick takes them together.)
    pub(super) fn pace_at(&self, gap: Duration) -> Option<Instant> {
        if self.stopping.get() || self.idle.borrow().is_empty() {
            return None;
        }
        self.open.as_ref()?.borrow().paced(gap)
    }

    pub(super) fn wait_for_work(&self, slot: usize, cx: &Context<'_>) {
        let mut flags = self.idle_flag.borrow_mut();
        if let Some(flag) = flags.get_mut(slot) {
            if !*flag {
                *flag = true;
                let mut idle = self.idle.borrow_mut();
                idle.push_back((slot, cx.waker().clone()));
                // The pacer sleeps to its tick while no connection is free: with one free now, it wakes to
                // compute the next request's send time.
                if idle.len() == 1 && self.open.is_some() {
                    if let Some(w) = self.main_waker.borrow().as_ref() {
                        w.wake_by_ref();
                    }
                }
            }
        }
    }

    pub(super) fn wake_idle(&self, n: usize) {
        for _ in 0..n {
            let Some((slot, waker)) = self.idle.borrow_mut().pop_front() else {
                break;
            };
            if let Some(flag) = self.idle_flag.borrow_mut().get_mut(slot) {
                *flag = false;
            }
            waker.wake();
        }
    }

    pub(super) fn slot_ended(&self) {
        let live = self.live_slots.get().saturating_sub(1);
        self.live_slots.set(live);
        if live == 0 {
            if self.stop_at.get().is_none() {
                self.stop_at.set(Some(Instant::now()));
            }
            if let Some(w) = self.main_waker.borrow_mut().take() {
                w.wake();
            }
        }
    }

    /// The interval's measurements; its latencies and service times join the phase's totals here (a response is
    /// recorded once, in its interval, and the intervals are added once a second: histograms merge by adding).
    pub(super) fn snapshot(&self, interval: u64, full: bool, last: &mut Counters) -> Snapshot {
        let mut guard = self.stats.borrow_mut();
        let stats = &mut *guard;
        let c = stats.c.clone();
        add_into(&mut stats.latency, &stats.interval);
        let latency = std::mem::replace(&mut stats.interval, new_histogram());
        let service_time = if stats.interval_service.is_empty() {
            new_histogram()
        } else {
            add_into(&mut stats.service_time, &stats.interval_service);
            std::mem::replace(&mut stats.interval_service, new_histogram())
        };
        let send_lag = if stats.interval_send_lag.is_empty() {
            new_histogram()
        } else {
            add_into(&mut stats.send_lag, &stats.interval_send_lag);
            std::mem::replace(&mut stats.interval_send_lag, new_histogram())
        };
        let snap = Snapshot {
            interval,
            service_time,
            sent: c.sent.saturating_sub(last.sent),
            completed: c.completed - last.completed,
            errors: c.errors.total() - last.errors.total(),
            non_2xx: c.non_2xx() - last.non_2xx(),
            latency,
            // The most open at once in the interval: at its end, the last second's connections are closing.
            connections_open: stats.interval_peak_open.max(stats.conns_open),
            in_flight: stats.interval_peak_active.max(stats.active()),
            full,
            error_kinds: error_delta(&c.errors, &last.errors),
            status: status_delta(&c.status, &last.status),
            send_lag,
            totals: c.clone(),
        };
        stats.interval_peak_active = stats.active();
        stats.interval_peak_open = stats.conns_open;
        *last = c;
        snap
    }

    /// A closed keep-alive load sends each request when its connection takes it: its latency is its service
    /// time, recorded once.
    pub(super) fn service_is_latency(&self) -> bool {
        !self.open_loop && self.cfg.keep_alive
    }

    pub(super) fn finish(&self) -> WorkerFinal {
        let stop_at = self.stop_at.get().unwrap_or_else(Instant::now);
        let unsent_backlog = self.open.as_ref().map_or(0, |src| src.borrow().backlog(stop_at));
        let mut stats = self.stats.borrow_mut();
        let slots_expected = match &self.cfg.slot_quotas {
            Some(q) => q.iter().filter(|&&n| n > 0).count() as u64,
            None => self.cfg.slots as u64,
        };
        let latency = std::mem::replace(&mut stats.latency, new_histogram());
        let service_time = if self.service_is_latency() {
            latency.clone()
        } else {
            std::mem::replace(&mut stats.service_time, new_histogram())
        };
        WorkerFinal {
            counters: stats.c.clone(),
            latency,
            service_time,
            send_lag: std::mem::replace(&mut stats.send_lag, new_histogram()),
            connect_time: std::mem::replace(&mut stats.connect_time, new_histogram()),
            tls_handshake: std::mem::replace(&mut stats.tls_handshake, new_histogram()),
            tls: std::mem::take(&mut stats.tls),
            peak_open: stats.peak_open,
            peak_active: stats.peak_active,
            slots_connected: stats.slots_connected,
            slots_expected,
            incomplete: stats.in_flight,
            unsent: stats.acquired_unsent + unsent_backlog,
            stop_at,
            end: Instant::now(),
            user_seconds: 0.0,
            system_seconds: 0.0,
            spin_seconds: self.cfg.precise.then(|| self.rt.spun().as_secs_f64()),
            by_entry: std::mem::take(&mut stats.by_entry),
            batches_read_whole: self.held.get(),
            checks: stats.checks.take(),
            replay: self.replay.as_ref().map(|r| r.tally.take()),
        }
    }
}

/// What the ticker keeps of one lane between its wakes.
#[derive(Default)]
struct Lane {
    interval: u64,
    last: Counters,
    /// The intended time the pacer last woke idle slots for: once they ran, the next wake is computed from the
    /// request after it (a slot woken for a due request takes it only when the pacer yields).
    handed: Option<Instant>,
    /// Its slots all ended, or its drain did: nothing more to do for it.
    over: bool,
}

/// The worker's ticker (task 0): checks the stop and the deadline, wakes idle slots when requests are due, and
/// sends the snapshots, for each of the worker's lanes (one target, or a duet's two, which share the start, the
/// schedule and therefore every intended instant), until every lane's work is done or its drain ended.
pub(super) async fn run(lanes: Vec<Rc<Ctx>>, tx: Sender<Msg>) {
    let Some(ctx) = lanes.first().cloned() else { return };
    let tick = if ctx.open_loop { Duration::from_millis(1) } else { Duration::from_millis(10) };
    let mut next_tick = ctx.start + tick;
    // I/O may wait for the pacer only in open keep-alive loads of single requests without pipelining (see the
    // module docs): a read's timestamp is that of its last bytes, so a deferred read must hold one response.
    let may_defer = ctx.open_loop
        && ctx.cfg.keep_alive
        && ctx.cfg.pipeline == 1
        && ctx.cfg.streams == 1
        && ctx.cfg.session.is_empty()
        && !ctx.cfg.precise;
    // Precise pacing wakes for every request a connection waits for; the default at most once a tick for that.
    let gap = if ctx.cfg.precise { Duration::ZERO } else { tick };
    let mut next_snapshot = ctx.start + SNAPSHOT_EVERY;
    let drain = ctx.cfg.drain;
    let mut books: Vec<Lane> = lanes.iter().map(|_| Lane::default()).collect();
    let mut wakes = vec![0usize; lanes.len()];
    loop {
        if books.iter().any(|b| b.handed.is_some()) {
            yield_now().await;
        }
        // A request still untaken after the slots ran (they found the load stopping) waits for the tick.
        let paced = lanes
            .iter()
            .zip(&mut books)
            .filter(|(_, b)| !b.over)
            .filter_map(|(c, b)| {
                let due = b.handed.take();
                c.pace_at(gap).filter(|&t| Some(t) != due)
            })
            .min()
            .filter(|&t| t < next_tick);
        let mut sleep = ctx.rt.sleep_until(paced.unwrap_or(next_tick));
        poll_fn(|cx| {
            if lanes.iter().all(|c| c.live_slots.get() == 0) {
                return Poll::Ready(());
            }
            for c in &lanes {
                let mut w = c.main_waker.borrow_mut();
                if !w.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                    *w = Some(cx.waker().clone());
                }
            }
            Pin::new(&mut sleep).poll(cx)
        })
        .await;
        let now = Instant::now();
        for (c, b) in lanes.iter().zip(&mut books) {
            b.over |= c.live_slots.get() == 0;
        }
        if books.iter().all(|b| b.over) {
            break;
        }
        // Ticks keep their grid whatever wakes between them; missed ticks are skipped, not caught up.
        if now >= next_tick {
            next_tick += tick;
            if next_tick <= now {
                let behind = now.saturating_duration_since(next_tick).as_nanos() / tick.as_nanos();
                next_tick += tick * (u32::try_from(behind).unwrap_or(u32::MAX - 1) + 1);
            }
        }
        let mut defer = may_defer;
        for ((c, b), wake) in lanes.iter().zip(&mut books).zip(&mut wakes) {
            *wake = 0;
            if b.over {
                defer = false;
                continue;
            }
            match c.tick(now, drain) {
                Tick::Over => {
                    // What arrived of batches held back by a low-water mark is read before the lane ends.
                    if c.batching && c.force_stalled(None) {
                        yield_now().await;
                    }
                    b.over = true;
                    defer = false;
                }
                Tick::Wake { idle, deferrable } => {
                    *wake = idle;
                    defer &= deferrable;
                }
            }
        }
        if books.iter().all(|b| b.over) {
            break;
        }
        match (&lanes[..], &wakes[..]) {
            ([one], [n]) => one.wake_idle(*n),
            _ => {
                for lane in pair_wakes(&wakes, ctx.next_index(), |k| ctx.cfg.pair.is_some_and(|p| p.second_first(k))) {
                    lanes[lane].wake_idle(1);
                }
            }
        }
        for ((c, b), &wake) in lanes.iter().zip(&mut books).zip(&wakes) {
            if wake > 0 {
                b.handed = c.open.as_ref().and_then(|src| src.borrow().next_at);
            }
        }
        ctx.rt.set_defer_io(defer);
        while now >= next_snapshot {
            for (c, b) in lanes.iter().zip(&mut books).filter(|(_, b)| !b.over) {
                let snap = c.snapshot(b.interval, true, &mut b.last);
                let _ = tx.send(Msg::Interval(c.cfg.index, c.cfg.lane, Box::new(snap)));
                b.interval += 1;
            }
            next_snapshot += SNAPSHOT_EVERY;
        }
    }
    // The final, partial interval travels with each lane's totals.
    for (c, b) in lanes.iter().zip(&mut books) {
        let snap = c.snapshot(b.interval, false, &mut b.last);
        let _ = tx.send(Msg::Interval(c.cfg.index, c.cfg.lane, Box::new(snap)));
    }
}

/// What a lane's tick found.
enum Tick {
    /// Its drain ended.
    Over,
    /// Wake `idle` of its waiting slots for the requests due (all when its schedule has nothing more);
    /// `deferrable`: every due request has a free connection, so nothing waits for a response to be read.
    Wake { idle: usize, deferrable: bool },
}

/// The order in which a duet worker wakes its lanes' slots at one tick, given how many each lane wakes: pair
/// `k` (the `k`-th request due on each lane, from the worker's request `first`) goes to both lanes, the second
/// lane first when `second_first(first + k)`. The run queue is FIFO, so the wake order is the send order.
pub(super) fn pair_wakes(wakes: &[usize], first: u64, second_first: impl Fn(u64) -> bool) -> Vec<usize> {
    let most = wakes.iter().copied().max().unwrap_or(0);
    let mut order = Vec::with_capacity(wakes.iter().sum());
    for k in 0..most {
        let flip = second_first(first + k as u64);
        for i in 0..wakes.len() {
            let lane = if flip { wakes.len() - 1 - i } else { i };
            if k < wakes[lane] {
                order.push(lane);
            }
        }
    }
    order
}

impl Ctx {
    /// The worker's index of the next request its schedule gives (0 in a closed load).
    fn next_index(&self) -> u64 {
        self.open.as_ref().map_or(0, |src| src.borrow().next_j)
    }

    /// A tick of this lane: begins the stop when asked or at the deadline, ends the lane when its drain did,
    /// reads overdue held-back batches, and counts the slots to wake for the requests due.
    fn tick(&self, now: Instant, drain: Duration) -> Tick {
        if !self.stopping.get() {
            if self.cfg.stop.is_stopped() {
                self.begin_stop(now);
            } else if let Some(d) = self.deadline.filter(|&d| now >= d) {
                // The requests of the last tick's interval that were due before the deadline still go out (the
                // default pacing hands each millisecond's requests out at the tick after them) when a connection
                // is free for them, for a few ticks at most; what then still waits is counted as never sent.
                let hand_out = now < d + LAST_SENDS
                    && !self.idle.borrow().is_empty()
                    && self.open.as_ref().is_some_and(|src| src.borrow().due_count(now, Some(d), 1) > 0);
                if !hand_out {
                    self.begin_stop(d);
                }
            }
        }
        if self.stopping.get() && self.stop_at.get().is_some_and(|at| now >= at + drain) {
            return Tick::Over;
        }
        if self.batching {
            self.force_stalled(Some(now));
        }
        if self.stopping.get() {
            return Tick::Wake { idle: 0, deferrable: false };
        }
        let Some(src) = &self.open else {
            return Tick::Wake { idle: 0, deferrable: false };
        };
        let idle = self.idle.borrow().len();
        let src = src.borrow();
        let due = src.due_count(now, self.deadline, usize::MAX);
        // Once the schedule has nothing more (the last user step is over), the waiting slots end instead of
        // waiting for the deadline.
        let wake = if idle == 0 {
            0
        } else if src.exhausted(self.deadline) {
            idle
        } else {
            due.min(idle)
        };
        Tick::Wake { idle: wake, deferrable: due <= idle }
    }
}

/// Lets every task woken so far run before this one continues.
pub(super) async fn yield_now() {
    let mut yielded = false;
    poll_fn(|cx| {
        if yielded {
            Poll::Ready(())
        } else {
            yielded = true;
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    })
    .await;
}

/// Adds `from` into `into` (both from `new_histogram`, so every value fits).
fn add_into(into: &mut Histogram<u64>, from: &Histogram<u64>) {
    if !from.is_empty() {
        // Same bounds on both sides: adding cannot fail.
        let _ = into.add(from);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn source(rate: u64) -> (OpenSource, Instant) {
        let arrival = loadgate_plan::Arrival::Constant { rate: loadgate_model::units::Rate::from_per_sec(rate) };
        let schedule = crate::schedule::Schedule::from_arrival(&arrival).unwrap();
        let start = Instant::now();
        (OpenSource::new(WorkerSchedule::new(schedule, 1.0, 0.0), None, start), start)
    }

    /// Take every request due by `now`; returns their intended times.
    fn take_due(src: &mut OpenSource, now: Instant) -> Vec<Instant> {
        std::iter::from_fn(|| src.take(now, None)).collect()
    }

    #[test]
    fn the_pacer_wakes_for_each_request_a_millisecond_or_more_apart() {
        let ms = Duration::from_millis(1);
        // 500/s: every request is 2 ms after the one before, so the pacer wakes at each intended time.
        let (mut src, start) = source(500);
        let first = src.paced(ms).expect("the first request");
        assert_eq!(take_due(&mut src, first), vec![first]);
        let second = src.paced(ms).expect("2 ms later");
        assert_eq!(second.duration_since(first), Duration::from_millis(2));
        assert!(first >= start);

        // 4,000/s: the next request is 250 us after the one taken: the tick takes it with the others.
        let (mut src, _) = source(4000);
        let first = src.paced(ms).expect("the first request");
        assert_eq!(take_due(&mut src, first).len(), 1);
        assert_eq!(src.paced(ms), None);
        // A millisecond on, four are due; after them, the next is again too close.
        assert_eq!(take_due(&mut src, first + ms).len(), 4);
        assert_eq!(src.paced(ms), None);

        // A request given back waits for the tick, which takes it at once.
        let (mut src, _) = source(500);
        let t = src.paced(ms).unwrap();
        src.retry.push_back((t, 0));
        assert_eq!(src.paced(ms), None);
    }

    #[test]
    fn pair_wakes_interleave_the_lanes_by_pair_and_the_keyed_bit_picks_who_goes_first() {
        // Pairs 10, 11, 12: the second lane first at 11 only.
        assert_eq!(pair_wakes(&[3, 3], 10, |k| k == 11), vec![0, 1, 1, 0, 0, 1]);
        // A lane with fewer free slots wakes fewer: the other's extra requests follow in order.
        assert_eq!(pair_wakes(&[1, 3], 0, |_| true), vec![1, 0, 1, 1]);
        assert_eq!(pair_wakes(&[0, 0], 0, |_| true), Vec::<usize>::new());
        assert_eq!(pair_wakes(&[2], 0, |_| true), vec![0, 0]);
    }

    #[test]
    fn the_pair_bit_depends_on_the_global_index_not_the_worker() {
        use super::super::shared::PairKey;
        // Worker 1 of 2 sends global requests 1, 3, 5, ...; the only worker of 1 sends them all.
        let one = PairKey { seed: 7, stream: 0, streams: 1 };
        let second_of_two = PairKey { seed: 7, stream: 1, streams: 2 };
        for k in 0..64 {
            assert_eq!(second_of_two.second_first(k), one.second_first(1 + 2 * k));
        }
        let firsts = (0..10_000).filter(|&k| one.second_first(k)).count();
        assert!((4_700..5_300).contains(&firsts), "about half: {firsts}");
    }
}
