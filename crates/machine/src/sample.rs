//! Resource sampling from `/proc` on a background thread: CPU and RSS of the target's process tree, CPU of
//! the generator's worker threads.
//!
//! CPU use is a fraction of one CPU over the interval (`2.0` = two cores busy). For the tree it is the growth
//! of the sum of `utime + stime + cutime + cstime` over the tree's live processes, so a child that exits and
//! is reaped inside the tree keeps counting (through its parent's `cutime`) and a short-lived child started
//! between two samples counts in full. RSS is the sum over the tree's processes (shared pages count once per
//! process, as `ps` shows them).

use std::collections::BTreeMap;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use loadgate_measure::ResourceSample;

use crate::procfs;

/// A worker thread's CPU is at or above this fraction of one CPU: the generator was saturated.
pub const SATURATION: f64 = 0.9;
/// The warning a saturated generator carries.
pub const SATURATION_WARNING: &str = "the generator was saturated: these numbers may describe loadgate, not the target";

/// What to sample.
#[derive(Debug, Clone, PartialEq)]
pub struct SamplerConfig {
    /// Usually one second.
    pub interval: Duration,
    /// Sample times are seconds from this instant (the run's start).
    pub origin: Instant,
    /// The target's main pid (`None`: no target tree, e.g. a target given by URL).
    pub target_pid: Option<u32>,
    /// The target's process group (the launcher makes it equal to its pid).
    pub target_pgid: Option<u32>,
    /// Thread ids in this process to follow (the generator's workers); see [`procfs::current_tid`].
    pub worker_tids: Vec<u32>,
}

impl SamplerConfig {
    /// Once a second from now, for a target started in its own process group (pgid = pid), as `loadgate-target` starts one.
    pub fn for_target(pid: Option<u32>) -> Self {
        SamplerConfig {
            interval: Duration::from_secs(1),
            origin: Instant::now(),
            target_pid: pid,
            target_pgid: pid,
            worker_tids: Vec::new(),
        }
    }
}

/// One worker thread's samples; `rss_bytes` is always 0 (a thread has no memory of its own).
#[derive(Debug, Clone, Default)]
pub struct WorkerSeries {
    pub tid: u32,
    pub samples: Vec<ResourceSample>,
}

impl WorkerSeries {
    /// The highest CPU fraction seen, 0 when there is no sample.
    pub fn peak_cpu(&self) -> f64 {
        self.samples.iter().map(|s| s.cpu).fold(0.0, f64::max)
    }
}

/// Everything sampled so far.
#[derive(Debug, Clone, Default)]
pub struct Samples {
    pub target: Vec<ResourceSample>,
    /// One series per worker tid, in the order the tids were given.
    pub workers: Vec<WorkerSeries>,
}

impl Samples {
    /// The tids of workers with a sample at or above [`SATURATION`].
    pub fn saturated_workers(&self) -> Vec<u32> {
        self.workers.iter().filter(|w| w.peak_cpu() >= SATURATION).map(|w| w.tid).collect()
    }
}

/// CPU ticks and memory of a process tree at one instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TreeUsage {
    /// Sum of `utime + stime + cutime + cstime` in clock ticks.
    pub ticks: u64,
    pub rss_bytes: u64,
    /// Live (non-zombie) processes.
    pub processes: usize,
}

/// Reads the current usage of a target's tree.
pub fn tree_usage(pid: Option<u32>, pgid: Option<u32>) -> TreeUsage {
    let page = procfs::page_size();
    let mut u = TreeUsage::default();
    for p in procfs::process_tree(pid, pgid) {
        if p.is_zombie() {
            continue;
        }
        u.ticks += p.total_ticks();
        u.rss_bytes += p.rss_pages * page;
        u.processes += 1;
    }
    u
}

fn thread_ticks(tid: u32) -> Option<u64> {
    procfs::read_stat(&procfs::thread_stat_path(tid)).ok().map(|s| s.utime + s.stime)
}

struct Shared {
    samples: Mutex<Samples>,
    tids: Mutex<Vec<u32>>,
    stop: Mutex<bool>,
    wake: Condvar,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A running sampler. [`Sampler::stop`] (or dropping it) ends the thread.
#[derive(Debug)]
pub struct Sampler {
    shared: Arc<Shared>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared").finish_non_exhaustive()
    }
}

impl Sampler {
    /// Takes a baseline now and a sample every `interval` after it.
    pub fn start(cfg: SamplerConfig) -> std::io::Result<Sampler> {
        let shared = Arc::new(Shared {
            samples: Mutex::new(Samples {
                target: Vec::new(),
                workers: cfg.worker_tids.iter().map(|&tid| WorkerSeries { tid, samples: Vec::new() }).collect(),
            }),
            tids: Mutex::new(cfg.worker_tids.clone()),
            stop: Mutex::new(false),
            wake: Condvar::new(),
        });
        let thread_shared = shared.clone();
        let thread =
            std::thread::Builder::new().name("loadgate-sampler".to_owned()).spawn(move || run(cfg, &thread_shared))?;
        Ok(Sampler { shared, thread: Some(thread) })
    }

    /// Follows these worker threads from the next sample on (workers usually start after the target).
    pub fn set_worker_tids(&self, tids: Vec<u32>) {
        *lock(&self.shared.tids) = tids;
    }

    /// A copy of the samples so far (for a live display).
    pub fn snapshot(&self) -> Samples {
        lock(&self.shared.samples).clone()
    }

    /// Stops the thread (taking a last, shorter sample when at least 200 ms passed since the previous one) and
    /// returns every sample.
    pub fn stop(mut self) -> Samples {
        self.halt();
        self.snapshot()
    }

    fn halt(&mut self) {
        *lock(&self.shared.stop) = true;
        self.shared.wake.notify_all();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        self.halt();
    }
}

fn run(cfg: SamplerConfig, shared: &Shared) {
    let hz = procfs::clock_ticks_per_sec();
    let has_target = cfg.target_pid.is_some() || cfg.target_pgid.is_some();
    let mut last_at = Instant::now();
    let mut last_tree = if has_target { tree_usage(cfg.target_pid, cfg.target_pgid).ticks } else { 0 };
    let mut last_threads: BTreeMap<u32, u64> =
        lock(&shared.tids).iter().filter_map(|&tid| Some((tid, thread_ticks(tid)?))).collect();
    let mut next = last_at + cfg.interval;
    loop {
        let stopping = {
            let guard = lock(&shared.stop);
            let (guard, _) = shared
                .wake
                .wait_timeout_while(guard, next.saturating_duration_since(Instant::now()), |stop| {
                    !*stop && Instant::now() < next
                })
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            *guard
        };
        let now = Instant::now();
        let elapsed = now.saturating_duration_since(last_at).as_secs_f64();
        if stopping && elapsed < 0.2 {
            return;
        }
        let t = now.saturating_duration_since(cfg.origin).as_secs_f64();
        let cpu_of = |ticks: u64| {
            if elapsed > 0.0 {
                ticks as f64 / hz / elapsed
            } else {
                0.0
            }
        };
        let target_sample = has_target.then(|| {
            let u = tree_usage(cfg.target_pid, cfg.target_pgid);
            let delta = u.ticks.saturating_sub(last_tree);
            last_tree = u.ticks;
            ResourceSample { t, cpu: cpu_of(delta), rss_bytes: u.rss_bytes }
        });
        let tids = lock(&shared.tids).clone();
        let mut thread_samples = Vec::new();
        let mut current: BTreeMap<u32, u64> = BTreeMap::new();
        for &tid in &tids {
            if let Some(ticks) = thread_ticks(tid) {
                current.insert(tid, ticks);
                if let Some(prev) = last_threads.get(&tid) {
                    thread_samples
                        .push((tid, ResourceSample { t, cpu: cpu_of(ticks.saturating_sub(*prev)), rss_bytes: 0 }));
                }
            }
        }
        last_threads = current;
        {
            let mut s = lock(&shared.samples);
            if let Some(ts) = target_sample {
                push_bounded(&mut s.target, ts);
            }
            for (tid, sample) in thread_samples {
                match s.workers.iter_mut().find(|w| w.tid == tid) {
                    Some(w) => push_bounded(&mut w.samples, sample),
                    None => s.workers.push(WorkerSeries { tid, samples: vec![sample] }),
                }
            }
        }
        if stopping {
            return;
        }
        last_at = now;
        while next <= now {
            next += cfg.interval.max(Duration::from_millis(10));
        }
    }
}

/// The most samples a series keeps (two hours of seconds).
pub const MAX_SAMPLES: usize = 7200;

/// Appends a sample; a series that reaches [`MAX_SAMPLES`] merges its samples two by two (the later time, the
/// mean CPU, the larger memory), so that a run of hours or days keeps a bounded series.
fn push_bounded(series: &mut Vec<ResourceSample>, sample: ResourceSample) {
    series.push(sample);
    if series.len() >= MAX_SAMPLES {
        let mut old = std::mem::take(series).into_iter();
        while let Some(a) = old.next() {
            series.push(match old.next() {
                Some(b) => {
                    ResourceSample { t: b.t, cpu: (a.cpu + b.cpu) / 2.0, rss_bytes: a.rss_bytes.max(b.rss_bytes) }
                }
                None => a,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_series_of_days_stays_bounded() {
        let mut series = Vec::new();
        for i in 0..100_000u64 {
            push_bounded(&mut series, ResourceSample { t: i as f64, cpu: 0.5, rss_bytes: i });
            assert!(series.len() < MAX_SAMPLES);
        }
        assert!(series.windows(2).all(|w| w[0].t < w[1].t));
        assert!(series.iter().all(|s| (s.cpu - 0.5).abs() < 1e-9));
        assert_eq!(series.last().map(|s| (s.t, s.rss_bytes)), Some((99_999.0, 99_999)));
    }

    #[test]
    fn samples_a_busy_thread() {
        let (tid_tx, tid_rx) = std::sync::mpsc::channel();
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let stop2 = stop.clone();
        let busy = std::thread::spawn(move || {
            tid_tx.send(procfs::current_tid()).unwrap();
            let mut x = 0u64;
            while !stop2.load(std::sync::atomic::Ordering::Relaxed) {
                x = x.wrapping_mul(31).wrapping_add(7);
                std::hint::black_box(x);
            }
        });
        let tid = tid_rx.recv().unwrap();
        let cfg = SamplerConfig {
            interval: Duration::from_millis(300),
            origin: Instant::now(),
            target_pid: Some(std::process::id()),
            target_pgid: None,
            worker_tids: vec![tid],
        };
        let sampler = Sampler::start(cfg).unwrap();
        std::thread::sleep(Duration::from_millis(1000));
        let samples = sampler.stop();
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        busy.join().unwrap();
        assert!(samples.target.len() >= 3, "{samples:?}");
        assert!(samples.target.iter().all(|s| s.rss_bytes > 0));
        assert!(samples.target.windows(2).all(|w| w[0].t < w[1].t));
        let w = &samples.workers[0];
        assert_eq!(w.tid, tid);
        assert!(w.samples.len() >= 3);
        // A spinning thread uses a large share of a CPU even on a loaded machine.
        assert!(w.peak_cpu() > 0.05, "{w:?}");
    }
}
