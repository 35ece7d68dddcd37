//! The worker's event loop: one epoll instance, a run queue of tasks and a timer heap, on one thread.
//!
//! A worker's tasks are its connection slots and its pacer (task 0). They are plain futures polled by
//! [`Rt::run`]; their wakers carry nothing but the task's index, and a wake appends that index to a run queue
//! of the worker's own thread. Sockets are registered once, edge-triggered, with the owning task's index as
//! the epoll data, so a readiness event goes straight to the task it concerns: no per-socket waker, no
//! reference counts, no atomics. A socket remembers what epoll said (readable, writable) until a read or a
//! write finds it drained, so a connection makes no system call that would only return `EAGAIN`.
//!
//! This replaced a tokio `current_thread` runtime. tokio's task and readiness layer cost about a tenth of the
//! generator's CPU in the closed loop, and its reactor woke the thread for every response of an open load
//! (26,000 wake-ups in a 5 s run at 20,000 requests/s). Here an open load may **defer I/O to its pacer**
//! ([`Rt::set_defer_io`]): between ticks the thread sleeps instead of waking for each response, and it reads
//! everything that arrived when the tick comes. Latency stays exact because a response's completion time is
//! the kernel's receive timestamp of its last bytes (`SO_TIMESTAMPNS`), converted to the monotonic clock
//! ([`Rt::instant_of`]), not the moment the thread got around to reading it.
//!
//! Deferral is therefore allowed only while this thread's reads carry kernel timestamps: while its latest read
//! had one ([`Rt::note_read`]). Where the kernel or sandbox gives no receive timestamps, the loop never defers,
//! and a completion time is the moment of the read, taken as soon as epoll reports the bytes.

use std::cell::{Cell, RefCell};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::future::Future;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::pin::Pin;
use std::task::{Context, Poll, RawWaker, RawWakerVTable, Waker};
use std::time::{Duration, Instant};

/// A task's index: 0 is the worker's pacer, 1.. its connection slots.
pub(crate) type TaskId = u32;

/// Readiness bits a socket keeps between epoll events.
pub(crate) const READABLE: u8 = 1;
pub(crate) const WRITABLE: u8 = 2;
/// The peer closed (or the socket failed): sticky, as a read then returns the end or the error at once.
pub(crate) const READ_CLOSED: u8 = 4;

/// How long a (monotonic, realtime) pair of the same moment converts receive timestamps before it is taken anew.
const CLOCK_PAIR_AGE: Duration = Duration::from_millis(1);

/// Events fetched per `epoll_wait`.
const EVENTS: usize = 1024;

/// A task to run: boxed, pinned, borrowing nothing shorter than the run.
pub(crate) type Task<'a> = Pin<Box<dyn Future<Output = ()> + 'a>>;

thread_local! {
    /// Tasks woken on this thread since the run queue last took them.
    static WOKEN: RefCell<Vec<TaskId>> = const { RefCell::new(Vec::new()) };
}

static VTABLE: RawWakerVTable = RawWakerVTable::new(waker_clone, waker_wake, waker_wake, waker_drop);

fn waker_clone(data: *const ()) -> RawWaker {
    RawWaker::new(data, &VTABLE)
}

fn waker_wake(data: *const ()) {
    let id = data as usize as TaskId;
    // A wake from another thread (none happens) lands in that thread's list and is dropped there.
    let _ = WOKEN.try_with(|w| w.borrow_mut().push(id));
}

fn waker_drop(_: *const ()) {}

/// The waker of task `id`: its data is the index itself, never dereferenced.
fn waker(id: TaskId) -> Waker {
    // SAFETY: every function of VTABLE ignores or copies the data pointer and none dereferences it; waking is
    // a push to a thread-local list, which is sound from any thread.
    unsafe { Waker::from_raw(RawWaker::new(id as usize as *const (), &VTABLE)) }
}

/// The event loop of one worker thread.
pub(crate) struct Rt {
    epfd: OwnedFd,
    /// Per task: what epoll reported for the task's socket and no read or write has used up yet.
    readiness: Box<[Cell<u8>]>,
    timers: RefCell<BinaryHeap<Reverse<(Instant, TaskId)>>>,
    current: Cell<TaskId>,
    /// A (monotonic, realtime) pair of the same moment: turns kernel receive timestamps into `Instant`s.
    clock: Cell<(Instant, i128)>,
    defer_io: Cell<bool>,
    /// The latest read on this thread carried a kernel receive timestamp (false before the first read).
    stamped: Cell<bool>,
    /// Ask sockets for receive timestamps (only tests turn this off, to exercise the other path).
    want_stamps: Cell<bool>,
    /// Connects in progress (I/O is never deferred while one is).
    connecting: Cell<u32>,
    /// `epoll_pwait2` exists (Linux 5.11); without it waits round up to milliseconds.
    pwait2: Cell<bool>,
    /// Precise pacing: stop sleeping this long before the next timer and poll until it is due.
    ahead: Cell<Option<Duration>>,
    /// The time spent polling ahead of timers.
    spun: Cell<Duration>,
    /// Poll before blocking: the bound of the adaptive window (zero: block at once).
    poll_max: Cell<Duration>,
    /// The current window: how long the loop polls its sockets before it blocks.
    poll_window: Cell<Duration>,
}

impl Rt {
    /// An event loop for `tasks` tasks.
    pub(crate) fn new(tasks: usize) -> io::Result<Rt> {
        // SAFETY: epoll_create1 takes no pointers; a non-negative result is a new descriptor we own.
        let fd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` was just returned by epoll_create1 and nothing else owns it.
        let epfd = unsafe { OwnedFd::from_raw_fd(fd) };
        let rt = Rt {
            epfd,
            readiness: (0..tasks).map(|_| Cell::new(0)).collect(),
            timers: RefCell::new(BinaryHeap::new()),
            current: Cell::new(0),
            clock: Cell::new((Instant::now(), 0)),
            defer_io: Cell::new(false),
            stamped: Cell::new(false),
            want_stamps: Cell::new(true),
            connecting: Cell::new(0),
            pwait2: Cell::new(true),
            ahead: Cell::new(None),
            spun: Cell::new(Duration::ZERO),
            poll_max: Cell::new(Duration::ZERO),
            poll_window: Cell::new(Duration::ZERO),
        };
        rt.sample_clock();
        Ok(rt)
    }

    /// The task being polled.
    pub(crate) fn current(&self) -> TaskId {
        self.current.get()
    }

    /// Registers a socket of task `task` (edge-triggered, read and write); its readiness starts empty.
    pub(crate) fn register(&self, fd: RawFd, task: TaskId) -> io::Result<()> {
        if let Some(r) = self.readiness.get(task as usize) {
            r.set(0);
        }
        let mut ev = libc::epoll_event {
            events: (libc::EPOLLIN | libc::EPOLLOUT | libc::EPOLLRDHUP | libc::EPOLLET) as u32,
            u64: u64::from(task),
        };
        // SAFETY: `ev` is a valid epoll_event for the duration of the call; the descriptors are open.
        let rc = unsafe { libc::epoll_ctl(self.epfd.as_raw_fd(), libc::EPOLL_CTL_ADD, fd, &mut ev) };
        if rc < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    pub(crate) fn readiness(&self, task: TaskId) -> u8 {
        self.readiness.get(task as usize).map_or(0, Cell::get)
    }

    /// Treat the task's socket as readable once, whatever epoll said (a read that is owed: its data is held back
    /// by a low-water mark that may never be reached).
    pub(crate) fn mark_readable(&self, task: TaskId) {
        if let Some(r) = self.readiness.get(task as usize) {
            r.set(r.get() | READABLE);
        }
    }

    /// [`Rt::mark_readable`], and runs the task.
    pub(crate) fn force_readable(&self, task: TaskId) {
        self.mark_readable(task);
        waker(task).wake();
    }

    /// A read or write found the socket drained: wait for epoll's next edge.
    pub(crate) fn clear(&self, task: TaskId, bits: u8) {
        if let Some(r) = self.readiness.get(task as usize) {
            r.set(r.get() & !bits);
        }
    }

    /// Wakes `task` at `at` (or later).
    pub(crate) fn add_timer(&self, at: Instant, task: TaskId) {
        self.timers.borrow_mut().push(Reverse((at, task)));
    }

    /// From now on, wake `ahead` of every timer and poll the sockets until it is due, rather than sleeping
    /// to it (the wake-up of a sleep comes late by the scheduler's and the hypervisor's latency).
    pub(crate) fn spin_ahead(&self, ahead: Duration) {
        self.ahead.set(Some(ahead));
    }

    /// From now on, poll the sockets for up to an adaptive window (at most `max`) before blocking, as the
    /// kernel's `haltpoll` idle driver does for a virtual CPU: where the next event comes within microseconds
    /// (a closed or pipelined load against a busy server), the thread never sleeps, and a sleep's wake-up
    /// costs more CPU than the polling (tens of microseconds in a VM) and an interrupt from the server's CPU.
    /// The window grows (doubling) while blocks end sooner than `max` and shrinks (halving, to zero) while
    /// they last longer, so a load whose events are far apart stops polling. Zero turns it off.
    pub(crate) fn poll_before_block(&self, max: Duration) {
        self.poll_max.set(max);
        self.poll_window.set(max.min(POLL_START));
    }

    /// The time spent polling ahead of timers.
    pub(crate) fn spun(&self) -> Duration {
        self.spun.get()
    }

    /// Forgets every timer (the tasks that armed them are gone: a run over other tasks follows).
    pub(crate) fn clear_timers(&self) {
        self.timers.borrow_mut().clear();
    }

    pub(crate) fn sleep_until(&self, at: Instant) -> Sleep<'_> {
        Sleep { rt: self, deadline: Deadline::at(at) }
    }

    pub(crate) fn sleep(&self, d: Duration) -> Sleep<'_> {
        let now = Instant::now();
        self.sleep_until(now.checked_add(d).unwrap_or(now + Duration::from_secs(86_400 * 365)))
    }

    /// Between timers, sleep instead of waking for socket events (which are all handled at the next timer).
    /// Never in effect while a connect is in progress, nor unless reads carry kernel receive timestamps.
    pub(crate) fn set_defer_io(&self, defer: bool) {
        self.defer_io.set(defer);
    }

    /// Whether I/O waits for the next timer now.
    pub(crate) fn defers_io(&self) -> bool {
        self.defer_io.get() && self.stamped.get() && self.connecting.get() == 0
    }

    /// A read of response bytes did (or did not) carry the kernel's receive timestamp. A read without one turns
    /// deferral off until a read has one again: a deferred read would then move the completion time. (Linux
    /// turns receive timestamps on for the whole system lazily, from a work queue, when the first socket asks
    /// for them: the first responses of a run can come without.)
    pub(crate) fn note_read(&self, stamped: bool) {
        self.stamped.set(stamped);
    }

    /// Whether this thread's latest read carried the kernel's receive timestamp.
    pub(crate) fn reads_stamped(&self) -> bool {
        self.stamped.get()
    }

    /// Whether new sockets should ask for receive timestamps.
    pub(crate) fn wants_timestamps(&self) -> bool {
        self.want_stamps.get()
    }

    /// Sockets opened from now on get no receive timestamps, as on a kernel that has none.
    #[cfg(test)]
    pub(crate) fn without_timestamps(&self) {
        self.want_stamps.set(false);
    }

    pub(crate) fn connect_started(&self) {
        self.connecting.set(self.connecting.get() + 1);
    }

    pub(crate) fn connect_ended(&self) {
        self.connecting.set(self.connecting.get().saturating_sub(1));
    }

    fn sample_clock(&self) {
        self.sample_clock_at(Instant::now());
    }

    /// Pairs `now` (just taken) with the realtime clock.
    fn sample_clock_at(&self, now: Instant) {
        let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
        // SAFETY: `ts` is a valid timespec to write into.
        unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) };
        self.clock.set((now, i128::from(ts.tv_sec) * 1_000_000_000 + i128::from(ts.tv_nsec)));
    }

    /// The monotonic instant of a realtime kernel timestamp (seconds, nanoseconds).
    pub(crate) fn instant_of(&self, sec: i64, nsec: i64) -> Option<Instant> {
        let (inst, real) = self.clock.get();
        let ts = i128::from(sec) * 1_000_000_000 + i128::from(nsec);
        let delta = ts - real;
        let abs = Duration::from_nanos(u64::try_from(delta.unsigned_abs()).ok()?);
        if delta >= 0 {
            inst.checked_add(abs)
        } else {
            inst.checked_sub(abs)
        }
    }

    /// Runs the tasks until task 0 completes; the others are dropped then, wherever they are.
    pub(crate) fn run(&self, tasks: Vec<Task<'_>>) {
        let mut tasks: Vec<Option<Task<'_>>> = tasks.into_iter().map(Some).collect();
        let n = tasks.len();
        let mut queued = vec![true; n];
        let mut ready: VecDeque<TaskId> = (0..n).map(|i| i as TaskId).collect();
        let mut events = vec![libc::epoll_event { events: 0, u64: 0 }; EVENTS];
        WOKEN.with(|w| w.borrow_mut().clear());
        let take_woken = |ready: &mut VecDeque<TaskId>, queued: &mut [bool]| {
            // The list is empty after most polls (a socket's readiness goes to its task directly): a check small
            // enough to be inlined spares the drain's out-of-line call (bench/engine-ab.sh saw it cost 41
            // instructions per request in the closed loop when the compiler stopped inlining `LocalKey::with`).
            if WOKEN.with(|w| w.borrow().is_empty()) {
                return;
            }
            WOKEN.with(|w| {
                for id in w.borrow_mut().drain(..) {
                    if let Some(q) = queued.get_mut(id as usize) {
                        if !*q {
                            *q = true;
                            ready.push_back(id);
                        }
                    }
                }
            });
        };
        loop {
            while let Some(id) = ready.pop_front() {
                let i = id as usize;
                queued[i] = false;
                let Some(task) = tasks[i].as_mut() else { continue };
                self.current.set(id);
                let w = waker(id);
                let mut cx = Context::from_waker(&w);
                if task.as_mut().poll(&mut cx).is_ready() {
                    tasks[i] = None;
                    if i == 0 {
                        return;
                    }
                }
                take_woken(&mut ready, &mut queued);
            }

            let now = Instant::now();
            let next = self.timers.borrow().peek().map(|Reverse((at, _))| *at);
            let timeout = next.map(|at| at.saturating_duration_since(now));
            let ahead = self.ahead.get();
            let got = match wait_policy(timeout, self.defers_io(), ahead) {
                Wait::SleepThenPoll(t) => {
                    std::thread::sleep(t);
                    self.wait(&mut events, Some(Duration::ZERO))
                }
                Wait::Block(t) if !self.poll_max.get().is_zero() && t != Some(Duration::ZERO) => {
                    self.poll_then_block(&mut events, t)
                }
                Wait::Block(t) => self.wait(&mut events, t),
                Wait::Poll => {
                    let got = self.wait(&mut events, Some(Duration::ZERO));
                    self.spun.set(self.spun.get() + now.elapsed());
                    got
                }
            };
            let now = Instant::now();
            // The two clocks drift apart by at most the time daemon's slew (0.05%, 0.5 us a millisecond): a
            // pair a millisecond old converts receive timestamps to within the histograms' microsecond.
            if got > 0 && now.saturating_duration_since(self.clock.get().0) >= CLOCK_PAIR_AGE {
                self.sample_clock_at(now);
            }
            for ev in &events[..got] {
                let id = ev.u64 as TaskId;
                let Some(r) = self.readiness.get(id as usize) else { continue };
                let flags = ev.events as i32;
                let mut bits = 0;
                if flags & (libc::EPOLLIN | libc::EPOLLRDHUP | libc::EPOLLHUP | libc::EPOLLERR) != 0 {
                    bits |= READABLE;
                }
                if flags & (libc::EPOLLRDHUP | libc::EPOLLHUP | libc::EPOLLERR) != 0 {
                    bits |= READ_CLOSED;
                }
                if flags & (libc::EPOLLOUT | libc::EPOLLHUP | libc::EPOLLERR) != 0 {
                    bits |= WRITABLE;
                }
                r.set(r.get() | bits);
                if !queued[id as usize] {
                    queued[id as usize] = true;
                    ready.push_back(id);
                }
            }
            let mut timers = self.timers.borrow_mut();
            while let Some(&Reverse((at, id))) = timers.peek() {
                if at > now {
                    break;
                }
                timers.pop();
                if let Some(q) = queued.get_mut(id as usize) {
                    if !*q {
                        *q = true;
                        ready.push_back(id);
                    }
                }
            }
        }
    }

    /// Polls the sockets for up to the current window (never past `timeout`), then blocks for the rest of
    /// `timeout`; adapts the window to how long the block lasted.
    fn poll_then_block(&self, events: &mut [libc::epoll_event], timeout: Option<Duration>) -> usize {
        let window = self.poll_window.get();
        let start = Instant::now();
        let limit = timeout.map_or(window, |t| t.min(window));
        let mut elapsed = Duration::ZERO;
        while elapsed < limit {
            let got = self.wait(events, Some(Duration::ZERO));
            if got > 0 {
                return got;
            }
            std::hint::spin_loop();
            elapsed = start.elapsed();
        }
        if timeout.is_some_and(|t| elapsed >= t) {
            return 0;
        }
        let before = Instant::now();
        let got = self.wait(events, timeout.map(|t| t.saturating_sub(elapsed)));
        let blocked = before.elapsed();
        self.poll_window.set(adapt_window(window, blocked, self.poll_max.get()));
        got
    }

    /// Waits for socket events at most `timeout` (forever with `None`); returns how many were stored.
    fn wait(&self, events: &mut [libc::epoll_event], timeout: Option<Duration>) -> usize {
        let max = i32::try_from(events.len()).unwrap_or(i32::MAX);
        if self.pwait2.get() {
            let ts = timeout.map(|t| libc::timespec {
                tv_sec: libc::time_t::try_from(t.as_secs()).unwrap_or(libc::time_t::MAX),
                tv_nsec: libc::c_long::from(t.subsec_nanos().min(999_999_999) as i32),
            });
            let tsp = ts.as_ref().map_or(std::ptr::null(), |t| t as *const libc::timespec);
            // SAFETY: `events` has room for `max` entries; `tsp` is null or points at a live timespec.
            let n =
                unsafe { libc::epoll_pwait2(self.epfd.as_raw_fd(), events.as_mut_ptr(), max, tsp, std::ptr::null()) };
            if n >= 0 {
                return n as usize;
            }
            if io::Error::last_os_error().raw_os_error() != Some(libc::ENOSYS) {
                return 0;
            }
            self.pwait2.set(false);
        }
        // Milliseconds, rounded up so that a timer is never woken early.
        let ms = timeout.map_or(-1, |t| {
            let ms = t.as_nanos().div_ceil(1_000_000);
            i32::try_from(ms).unwrap_or(i32::MAX)
        });
        // SAFETY: `events` has room for `max` entries.
        let n = unsafe { libc::epoll_wait(self.epfd.as_raw_fd(), events.as_mut_ptr(), max, ms) };
        usize::try_from(n).unwrap_or(0)
    }
}

/// How the event loop waits for its next timer or socket event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Wait {
    /// Sleep the thread (socket events wait for the timer), then take what arrived.
    SleepThenPoll(Duration),
    /// Block in epoll until an event or the timeout (`None`: no timer).
    Block(Option<Duration>),
    /// Look at the sockets without blocking: the timer is too close to sleep for.
    Poll,
}

/// The wait policy: `timeout` until the next timer (`None`: none), whether I/O is deferred, and how long ahead
/// of a timer precise pacing stops sleeping (`None`: the default pacing, which sleeps to it).
fn wait_policy(timeout: Option<Duration>, defer: bool, ahead: Option<Duration>) -> Wait {
    match (timeout, ahead) {
        (Some(t), _) if t.is_zero() => Wait::Block(Some(t)),
        (Some(t), Some(a)) if t <= a => Wait::Poll,
        (Some(t), Some(a)) => Wait::Block(Some(t - a)),
        (Some(t), None) if defer => Wait::SleepThenPoll(t),
        (t, _) => Wait::Block(t),
    }
}

/// The poll window a wait starts from, and the smallest one kept (below it polling stops).
const POLL_START: Duration = Duration::from_micros(4);

/// The next poll window after a block of `blocked` that followed polling for `window` (haltpoll's rule): a
/// block shorter than `max` would have been caught by a longer window, which doubles (from `POLL_START` when it
/// was zero); a longer block means the polling was wasted, and the window halves (to zero below `POLL_START`).
fn adapt_window(window: Duration, blocked: Duration, max: Duration) -> Duration {
    if blocked < max {
        (window * 2).max(POLL_START).min(max)
    } else {
        let half = window / 2;
        if half < POLL_START {
            Duration::ZERO
        } else {
            half
        }
    }
}

/// Completes at `at`: the task is woken by the timer heap.
pub(crate) struct Sleep<'a> {
    rt: &'a Rt,
    deadline: Deadline,
}

impl Future for Sleep<'_> {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<()> {
        let (rt, task) = (self.rt, self.rt.current());
        if self.deadline.passed(rt, task) {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    }
}

/// A point in time a task waits for beside its sockets (a sleep's end, a connect's or a handshake's timeout):
/// the timer heap wakes the task there, armed once, on the first look that finds it ahead.
pub(crate) struct Deadline {
    at: Option<Instant>,
    armed: bool,
}

impl Deadline {
    pub(crate) fn at(at: Instant) -> Deadline {
        Deadline { at: Some(at), armed: false }
    }

    /// `timeout` from now (never, when that is past what an `Instant` holds).
    pub(crate) fn after(timeout: Duration) -> Deadline {
        Deadline { at: Instant::now().checked_add(timeout), armed: false }
    }

    /// Whether the deadline has passed; if not, makes sure `task` is woken at it.
    pub(crate) fn passed(&mut self, rt: &Rt, task: TaskId) -> bool {
        match self.at {
            Some(at) if Instant::now() >= at => true,
            Some(at) => {
                if !self.armed {
                    rt.add_timer(at, task);
                    self.armed = true;
                }
                false
            }
            None => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::rc::Rc;

    #[test]
    fn the_poll_window_grows_on_short_blocks_and_shrinks_on_long_ones() {
        let us = Duration::from_micros;
        let max = us(50);
        assert_eq!(adapt_window(us(4), us(10), max), us(8));
        assert_eq!(adapt_window(us(32), us(10), max), max);
        assert_eq!(adapt_window(Duration::ZERO, us(10), max), POLL_START);
        assert_eq!(adapt_window(us(50), us(500), max), us(25));
        assert_eq!(adapt_window(us(6), us(500), max), Duration::ZERO);
        assert_eq!(adapt_window(Duration::ZERO, Duration::from_secs(1), max), Duration::ZERO);
    }

    #[test]
    fn the_wait_policy_sleeps_blocks_or_polls() {
        let us = Duration::from_micros;
        // Default pacing: block until the timer, or sleep through it while I/O is deferred.
        assert_eq!(wait_policy(Some(us(500)), false, None), Wait::Block(Some(us(500))));
        assert_eq!(wait_policy(Some(us(500)), true, None), Wait::SleepThenPoll(us(500)));
        assert_eq!(wait_policy(None, true, None), Wait::Block(None));
        // A timer due now: look and go on.
        assert_eq!(wait_policy(Some(Duration::ZERO), true, Some(us(200))), Wait::Block(Some(Duration::ZERO)));
        // Precise pacing: block until 200 us ahead of the timer, then poll until it is due.
        assert_eq!(wait_policy(Some(us(500)), false, Some(us(200))), Wait::Block(Some(us(300))));
        assert_eq!(wait_policy(Some(us(150)), true, Some(us(200))), Wait::Poll);
        assert_eq!(wait_policy(None, false, Some(us(200))), Wait::Block(None));
    }

    #[test]
    fn timers_wake_tasks_in_order_and_the_run_ends_with_task_zero() {
        let rt = Rt::new(3).unwrap();
        let order = Rc::new(RefCell::new(Vec::new()));
        let start = Instant::now();
        let task = |id: u32, ms: u64| -> Task<'_> {
            let order = order.clone();
            let rt = &rt;
            Box::pin(async move {
                rt.sleep_until(start + Duration::from_millis(ms)).await;
                order.borrow_mut().push(id);
            })
        };
        let tasks = vec![task(0, 30), task(1, 10), task(2, 20)];
        rt.run(tasks);
        assert_eq!(*order.borrow(), vec![1, 2, 0]);
        assert!(start.elapsed() >= Duration::from_millis(30));
    }

    #[test]
    fn a_wake_requeues_a_task() {
        let rt = Rt::new(2).unwrap();
        let parked: Rc<RefCell<Option<Waker>>> = Rc::default();
        let polls = Rc::new(Cell::new(0));
        let (p1, n1) = (parked.clone(), polls.clone());
        let waiter: Task<'_> = Box::pin(std::future::poll_fn(move |cx| {
            n1.set(n1.get() + 1);
            if n1.get() == 2 {
                return Poll::Ready(());
            }
            *p1.borrow_mut() = Some(cx.waker().clone());
            Poll::Pending
        }));
        let rt_ref = &rt;
        let waker_side: Task<'_> = Box::pin(async move {
            rt_ref.sleep(Duration::from_millis(5)).await;
            if let Some(w) = parked.borrow_mut().take() {
                w.wake();
            }
        });
        rt.run(vec![waiter, waker_side]);
        assert_eq!(polls.get(), 2);
    }

    #[test]
    fn io_is_deferred_only_while_reads_are_stamped() {
        let rt = Rt::new(1).unwrap();
        rt.set_defer_io(true);
        assert!(!rt.defers_io(), "before any read is known to be stamped");
        rt.note_read(true);
        assert!(rt.defers_io());
        rt.connect_started();
        assert!(!rt.defers_io(), "while a connect is in progress");
        rt.connect_ended();
        rt.note_read(false);
        assert!(!rt.defers_io(), "after a read without a timestamp");
        rt.note_read(true);
        assert!(rt.defers_io(), "once reads have timestamps again");
    }

    #[test]
    fn kernel_timestamps_convert_to_instants() {
        let rt = Rt::new(1).unwrap();
        let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
        // SAFETY: `ts` is a valid timespec to write into.
        unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) };
        let at = rt.instant_of(ts.tv_sec, ts.tv_nsec).unwrap();
        let now = Instant::now();
        // The same moment, within what the conversion and the two clock reads can cost on a loaded machine.
        assert!(at <= now + Duration::from_millis(50) && now <= at + Duration::from_secs(5));
    }
}
