//! The sampler: a software `cpu-clock` event per thread of the tree and CPU, the events of a CPU sharing one
//! ring (`PERF_EVENT_IOC_SET_OUTPUT`, as `perf record` does), `inherit` set so threads and children created
//! later are sampled from their first instruction, and a background thread that drains the rings, applies the
//! records in time order and rescans the tree (a thread that raced the attach is opened when it is seen
//! uncovered on two scans in a row: a thread created under an inherited event is covered by its fork record,
//! which may lag its `/proc` entry by a moment). Only threads that existed before their creator was covered
//! can be missed, so the rescans back off (doubling up to 2 s) while they find nothing: a scan reads every
//! `/proc/PID/stat`, about 10 µs per process on the machine.

use std::collections::{HashMap, HashSet};
use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::collect::Collector;
use crate::error::ProfileError;
use crate::probe::refusal_advice;
use crate::raw::RawProfile;
use crate::record::{Parser, Record};
use crate::sys::{self, EventConfig, Ring, REGS_MASK};
use crate::tree;

/// How a run samples. `Default` gives 997 samples per CPU second, DWARF unwinding with 32 KiB of user stack,
/// kernel stacks where allowed, 65,536 distinct stacks, 4 MiB rings and a rescan every 100 ms (backing off).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SamplerOptions {
    /// CPU time between two samples of a thread (`cpu-clock`'s fixed period; 997 Hz is 1,003,009 ns).
    pub period: Duration,
    /// Copy the user stack and registers with each sample and unwind with DWARF CFI (else frame pointers only).
    pub dwarf: bool,
    /// Bytes of user stack copied per sample when `dwarf` (a multiple of 8, at most 65,528). `perf`'s default,
    /// 8 KiB, completed 28% of the stacks of loadgate's debug-built tokio server (async frames are large) and
    /// 32 KiB all of them; the kernel copies the full size per sample (about 3 µs of the target's CPU).
    pub stack_bytes: u32,
    /// Sample kernel frames when the kernel allows it (else user stacks only, `exclude_kernel`).
    pub kernel: bool,
    /// Distinct stacks kept; samples of further stacks are counted as dropped.
    pub max_stacks: usize,
    /// How often the tree is rescanned for threads and children no event covers yet, at first and after a
    /// scan that found one (the interval doubles, up to 2 s, while scans find none).
    pub rescan: Duration,
    /// Data pages of each CPU's ring (a power of two; at most 64 MiB over all CPUs; halved down to 8 when the
    /// kernel refuses the size, as it does past `kernel.perf_event_mlock_kb` and `RLIMIT_MEMLOCK` without
    /// `CAP_IPC_LOCK`). The default, 1,024 pages (4 MiB), holds 128 samples with 32 KiB of stack: at 997 Hz
    /// per CPU, 128 ms for the sampler's thread to drain it (256 pages lost 16% of the samples of a saturated
    /// server on a loaded two-core machine).
    pub ring_pages: usize,
}

impl Default for SamplerOptions {
    fn default() -> Self {
        SamplerOptions {
            period: Duration::from_nanos(1_003_009),
            dwarf: true,
            stack_bytes: 32_768,
            kernel: true,
            max_stacks: 65_536,
            rescan: Duration::from_millis(100),
            ring_pages: 1024,
        }
    }
}

/// A running sampler of one process tree. `stop` ends it and returns the samples; dropping it without `stop`
/// stops the thread and discards them.
pub struct Sampler {
    root: u32,
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<RawProfile>>,
    kernel_stacks: bool,
}

/// The events and rings of a run.
struct Events {
    config: EventConfig,
    cpus: Vec<i32>,
    rings: HashMap<i32, Ring>,
    fds: Vec<OwnedFd>,
    ring_pages: usize,
}

impl Events {
    /// Opens one event per CPU on `tid`, each into its CPU's ring. `Ok(false)`: the thread is gone.
    fn attach(&mut self, tid: u32) -> io::Result<bool> {
        let mut opened = Vec::with_capacity(self.cpus.len());
        for &cpu in &self.cpus {
            match sys::open(&self.config, tid as i32, cpu) {
                Ok(fd) => opened.push((cpu, fd)),
                Err(e) if e.raw_os_error() == Some(libc::ESRCH) => return Ok(false),
                Err(e) => return Err(e),
            }
        }
        for (cpu, fd) in opened {
            match self.rings.get(&cpu) {
                Some(ring) => {
                    sys::set_output(&fd, ring.fd())?;
                    self.fds.push(fd);
                }
                None => {
                    let ring = self.map_ring(fd, tid, cpu)?;
                    self.rings.insert(cpu, ring);
                }
            }
        }
        Ok(true)
    }

    /// Maps `fd`'s ring; when the kernel refuses the size (locked-memory limits), halves it and opens the
    /// event again so that its wake-up mark (a quarter of the ring) fits the smaller ring.
    fn map_ring(&mut self, mut fd: OwnedFd, tid: u32, cpu: i32) -> io::Result<Ring> {
        loop {
            match Ring::map(fd, self.ring_pages) {
                Ok(r) => return Ok(r),
                Err(e) if self.ring_pages > 8 && matches!(e.raw_os_error(), Some(libc::EPERM) | Some(libc::ENOMEM)) => {
                    self.ring_pages /= 2;
                    self.config.wakeup_bytes = wakeup_bytes(self.ring_pages);
                    fd = sys::open(&self.config, tid as i32, cpu)?;
                }
                Err(e) => return Err(e),
            }
        }
    }

    fn ring_fds(&self) -> Vec<RawFd> {
        self.rings.values().map(|r| r.fd().as_raw_fd()).collect()
    }

    fn disable(&self) {
        for r in self.rings.values() {
            sys::disable(r.fd());
        }
        for fd in &self.fds {
            sys::disable(fd);
        }
    }
}

/// Most pages of all rings together (64 MiB).
const MAX_RING_PAGES_TOTAL: usize = 16_384;

/// The data pages of each CPU's ring: the asked number as a power of two, within 8 and an even share of
/// `MAX_RING_PAGES_TOTAL`.
fn ring_pages(asked: usize, cpus: usize) -> usize {
    let share = (MAX_RING_PAGES_TOTAL / cpus.max(1)).max(8);
    let share = 1 << share.ilog2();
    asked.clamp(8, 1 << 20).next_power_of_two().min(share)
}

/// The wake-up mark of a ring: a quarter of it.
fn wakeup_bytes(pages: usize) -> u32 {
    u32::try_from(pages * 4096 / 4).unwrap_or(u32::MAX)
}

/// Raises the soft limit of open files to the hard limit (a tree of many threads needs a descriptor per thread
/// and CPU, as for `perf record`).
fn raise_file_limit() {
    let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: valid pointers to an `rlimit` for the duration of the calls.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) == 0 && lim.rlim_cur < lim.rlim_max {
            lim.rlim_cur = lim.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
        }
    }
}

impl Sampler {
    /// Starts sampling the process tree of `root_pid` (the process, its threads, and its descendants).
    /// Kernel stacks are sampled when `opts.kernel` and the kernel allows them; otherwise user stacks only
    /// (`kernel_stacks()` tells which). Errors: the kernel refused (`Denied`, with the setting to change), the
    /// process is gone (`NoProcess`), or a system call failed.
    pub fn start(root_pid: u32, opts: &SamplerOptions) -> Result<Sampler, ProfileError> {
        raise_file_limit();
        let period_ns = u64::try_from(opts.period.as_nanos()).unwrap_or(u64::MAX).max(10_000);
        let stack_bytes = if opts.dwarf && REGS_MASK != 0 { opts.stack_bytes.clamp(8, 65_528) & !7 } else { 0 };
        let cpus = sys::online_cpus();
        let ring_pages = ring_pages(opts.ring_pages, cpus.len());
        let mut events = Events {
            config: EventConfig {
                period_ns,
                exclude_kernel: !opts.kernel,
                stack_bytes,
                side_records: true,
                wakeup_bytes: wakeup_bytes(ring_pages),
            },
            cpus,
            rings: HashMap::new(),
            fds: Vec::new(),
            ring_pages,
        };
        let mut collector = Collector::new(opts.max_stacks.max(1));
        let procs = tree::process_tree(root_pid);
        let mut attached_any = false;
        for &pid in &procs {
            for tid in tree::threads(pid) {
                match attach_first(&mut events, tid, root_pid) {
                    Ok(true) => {
                        attached_any = true;
                        collector.cover(tid);
                    }
                    Ok(false) => collector.attach_failed(),
                    Err(e) => {
                        if attached_any {
                            collector.attach_failed();
                        } else {
                            return Err(e);
                        }
                    }
                }
            }
            collector.attach_process(pid);
        }
        if !attached_any {
            return Err(ProfileError::NoProcess { pid: root_pid });
        }
        let kernel_stacks = !events.config.exclude_kernel;
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let rescan = opts.rescan.max(Duration::from_millis(10));
        let handle = std::thread::Builder::new()
            .name("profile-sampler".into())
            .spawn(move || {
                away_from(root_pid);
                run(root_pid, events, collector, flag, rescan, period_ns)
            })
            .map_err(|source| ProfileError::Io { pid: root_pid, what: "starting the sampler thread", source })?;
        Ok(Sampler { root: root_pid, stop, handle: Some(handle), kernel_stacks })
    }

    /// Whether kernel frames are being sampled (false: user stacks only).
    pub fn kernel_stacks(&self) -> bool {
        self.kernel_stacks
    }

    /// Stops sampling and returns what was sampled (symbolize it with `RawProfile::symbolize`).
    pub fn stop(mut self) -> Result<RawProfile, ProfileError> {
        self.stop.store(true, Ordering::Release);
        let handle = self.handle.take().ok_or(ProfileError::Thread { pid: self.root })?;
        handle.join().map_err(|_| ProfileError::Thread { pid: self.root })
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

/// Attaches a thread; the first refusal of kernel sampling switches the run to user stacks only.
fn attach_first(events: &mut Events, tid: u32, root: u32) -> Result<bool, ProfileError> {
    match events.attach(tid) {
        Ok(ok) => Ok(ok),
        Err(e) if !events.config.exclude_kernel && is_refusal(&e) => {
            events.config.exclude_kernel = true;
            events.attach(tid).map_err(|e| refused(root, e))
        }
        Err(e) => Err(refused(root, e)),
    }
}

fn is_refusal(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::EACCES) | Some(libc::EPERM))
}

fn refused(pid: u32, e: io::Error) -> ProfileError {
    match e.raw_os_error() {
        Some(errno @ (libc::EACCES | libc::EPERM | libc::ENOSYS | libc::ENOENT | libc::EOPNOTSUPP)) => {
            ProfileError::Denied { pid, errno, advice: refusal_advice(errno, true) }
        }
        _ => ProfileError::Io { pid, what: "perf_event_open", source: e },
    }
}

/// Moves the calling thread (the sampler's) off the CPUs the target is pinned to, when this process may run
/// elsewhere: the sampler's reading of the rings would otherwise take CPU time the target counts on (measured: a
/// sampler thread seen on a pinned target's CPU in 61 of 87 looks). Unpinned targets, or nowhere else to go: left
/// where it is.
fn away_from(target: u32) {
    let size = std::mem::size_of::<libc::cpu_set_t>();
    // SAFETY: all-zero cpu_set_t values are valid empty sets; sched_getaffinity writes at most `size` bytes into
    // each, and sched_setaffinity reads one; pid 0 is the calling thread.
    unsafe {
        let (mut theirs, mut mine, mut rest): (libc::cpu_set_t, libc::cpu_set_t, libc::cpu_set_t) =
            (std::mem::zeroed(), std::mem::zeroed(), std::mem::zeroed());
        let pid = libc::pid_t::try_from(target).unwrap_or(0);
        if pid == 0
            || libc::sched_getaffinity(pid, size, &mut theirs) != 0
            || libc::sched_getaffinity(0, size, &mut mine) != 0
        {
            return;
        }
        let mut any = false;
        for cpu in 0..libc::CPU_SETSIZE as usize {
            if libc::CPU_ISSET(cpu, &mine) && !libc::CPU_ISSET(cpu, &theirs) {
                libc::CPU_SET(cpu, &mut rest);
                any = true;
            }
        }
        if any {
            libc::sched_setaffinity(0, size, &rest);
        }
    }
}

/// The sampler thread: drain, apply in time order, rescan; at stop, disable and drain once more.
fn run(
    root: u32,
    mut events: Events,
    mut collector: Collector,
    stop: Arc<AtomicBool>,
    rescan: Duration,
    period_ns: u64,
) -> RawProfile {
    let sample_type = events.config.sample_type();
    let regs = REGS_MASK.count_ones() as usize;
    let mut bufs: Vec<Vec<u8>> = Vec::new();
    let mut pending: HashSet<u32> = HashSet::new();
    let mut last_scan = Instant::now();
    let mut interval = rescan;
    loop {
        let stopping = stop.load(Ordering::Acquire);
        if stopping {
            events.disable();
        } else {
            sys::wait(&events.ring_fds(), 20);
        }
        drain(&mut events, &mut bufs, &mut collector, sample_type, regs);
        if stopping {
            break;
        }
        if last_scan.elapsed() >= interval {
            last_scan = Instant::now();
            let found = scan(root, &mut events, &mut collector, &mut pending);
            interval = if found { rescan } else { interval.saturating_mul(2).min(MAX_RESCAN.max(rescan)) };
        }
    }
    let kernel_stacks = !events.config.exclude_kernel;
    drop(events);
    collector.finish(period_ns, kernel_stacks)
}

fn drain(events: &mut Events, bufs: &mut Vec<Vec<u8>>, collector: &mut Collector, sample_type: u64, regs: usize) {
    bufs.resize_with(events.rings.len(), Vec::new);
    for (buf, ring) in bufs.iter_mut().zip(events.rings.values_mut()) {
        buf.clear();
        ring.drain(buf);
    }
    let mut records: Vec<Record<'_>> = bufs.iter().flat_map(|b| Parser::new(b, sample_type, regs)).collect();
    records.sort_by_key(Record::time);
    for r in &records {
        collector.apply(r);
    }
}

/// The longest interval between two rescans.
const MAX_RESCAN: Duration = Duration::from_secs(2);

/// Opens events on threads of the tree that no event covers, once seen uncovered on two scans in a row;
/// true when it saw any uncovered thread.
fn scan(root: u32, events: &mut Events, collector: &mut Collector, pending: &mut HashSet<u32>) -> bool {
    let mut still = HashSet::new();
    for pid in tree::process_tree(root) {
        let new_process = !collector.knows_process(pid);
        let mut attached = false;
        for tid in tree::threads(pid) {
            if collector.is_covered(tid) {
                continue;
            }
            if !pending.contains(&tid) {
                still.insert(tid);
                continue;
            }
            match events.attach(tid) {
                Ok(true) => {
                    collector.cover(tid);
                    attached = true;
                }
                _ => collector.attach_failed(),
            }
        }
        if new_process && attached {
            collector.attach_process(pid);
        }
    }
    let found = !still.is_empty() || !pending.is_empty();
    *pending = still;
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rings_are_a_power_of_two_of_pages_within_an_even_share_of_the_total() {
        assert_eq!(ring_pages(1024, 2), 1024);
        assert_eq!(ring_pages(1000, 2), 1024);
        assert_eq!(ring_pages(1024, 64), 256);
        assert_eq!(ring_pages(1024, 3000), 8);
        assert_eq!(ring_pages(0, 1), 8);
        assert_eq!(wakeup_bytes(8), 8192);
    }
}
