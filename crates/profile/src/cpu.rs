//! CPU time of a process tree, read at a round's edges from each thread's `schedstat` (nanoseconds of
//! `sum_exec_runtime`; not the tick-sampled `utime`), with the process-level totals of `/proc/PID/stat` to
//! account for threads and processes that exited between two readings.
//!
//! Between two readings `a` and `b` the CPU time of the tree is:
//! - for each thread alive at both: its schedstat difference (exact);
//! - for each thread born after `a` and alive at `b`: its schedstat value (exact);
//! - for threads that exited between the readings (or were born and exited between them), per process: the
//!   growth of the process's exited-thread time (`utime + stime` of `/proc/PID/stat`: the whole thread group,
//!   exited threads included, in clock ticks, minus the sum of its live threads' schedstat), less what the
//!   threads gone since `a` had used by `a`;
//! - for processes that exited between the readings and were reaped by a parent in the tree: the growth of the
//!   parent's `cutime + cstime` minus what those processes had used by `a`.
//!
//! Residual error: each estimate from `/proc/PID/stat` is off by at most about two clock ticks (20 ms at
//! `CLK_TCK` 100: the value is truncated to ticks at each reading); `CpuDelta::error_bound_ns` adds that up for
//! every process where an estimate was used and is 0 when every thread lived through both readings. CPU of a
//! process that exited unreaped by a parent in the tree (the root itself, or one whose parent left the tree)
//! after `a` is not seen.

use std::collections::HashMap;
use std::fs;
use std::time::Instant;

use crate::error::ProfileError;
use crate::tree;

/// The process-level figures of one process at a reading.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct ProcessCpu {
    ppid: u32,
    starttime: u64,
    /// `utime + stime` in nanoseconds (tick resolution).
    total_ns: u64,
    /// `cutime + cstime` in nanoseconds (tick resolution).
    children_ns: u64,
    /// The sum of the live threads' schedstat.
    live_ns: u64,
}

/// The CPU time of a process tree at one instant.
#[derive(Clone, Debug)]
pub struct CpuReading {
    /// When the reading was taken.
    pub at: Instant,
    /// Per thread: (process, schedstat nanoseconds).
    threads: HashMap<u32, (u32, u64)>,
    processes: HashMap<u32, ProcessCpu>,
}

/// The CPU time of a tree between two readings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CpuDelta {
    /// CPU nanoseconds used by the tree between the readings.
    pub ns: u64,
    /// How far `ns` may be off (0 when every thread lived through both readings; see the module doc).
    pub error_bound_ns: u64,
}

/// Reads the CPU time of process trees.
pub struct TreeCpu;

fn tick_ns() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if hz > 0 {
        1_000_000_000 / hz as u64
    } else {
        10_000_000
    }
}

/// A thread's CPU nanoseconds: schedstat's first field, or its `stat` ticks when schedstat is absent.
fn thread_ns(pid: u32, tid: u32, tick: u64) -> Option<u64> {
    if let Ok(s) = fs::read_to_string(format!("/proc/{pid}/task/{tid}/schedstat")) {
        if let Some(ns) = s.split_whitespace().next().and_then(|f| f.parse().ok()) {
            return Some(ns);
        }
    }
    let st = tree::parse_stat(&fs::read_to_string(format!("/proc/{pid}/task/{tid}/stat")).ok()?)?;
    Some((st.utime + st.stime) * tick)
}

impl TreeCpu {
    /// Reads the tree of `root_pid` now (`NoProcess` when the root is gone).
    pub fn read(root_pid: u32) -> Result<CpuReading, ProfileError> {
        let tick = tick_ns();
        let mut threads = HashMap::new();
        let mut processes = HashMap::new();
        for pid in tree::process_tree(root_pid) {
            let Some(st) = tree::stat(pid) else { continue };
            let mut live_ns = 0;
            for tid in tree::threads(pid) {
                if let Some(ns) = thread_ns(pid, tid, tick) {
                    threads.insert(tid, (pid, ns));
                    live_ns += ns;
                }
            }
            processes.insert(
                pid,
                ProcessCpu {
                    ppid: st.ppid,
                    starttime: st.starttime,
                    total_ns: (st.utime + st.stime) * tick,
                    children_ns: (st.cutime + st.cstime) * tick,
                    live_ns,
                },
            );
        }
        if !processes.contains_key(&root_pid) {
            return Err(ProfileError::NoProcess { pid: root_pid });
        }
        Ok(CpuReading { at: Instant::now(), threads, processes })
    }
}

impl CpuReading {
    /// The CPU nanoseconds of the live threads at this reading (since they started).
    pub fn live_ns(&self) -> u64 {
        self.threads.values().map(|t| t.1).sum()
    }

    /// The CPU time used between `earlier` and this reading.
    pub fn since(&self, earlier: &CpuReading) -> CpuDelta {
        delta(earlier, self, tick_ns())
    }
}

fn delta(a: &CpuReading, b: &CpuReading, tick: u64) -> CpuDelta {
    let mut ns: u64 = 0;
    let mut bound: u64 = 0;
    for (tid, &(pid, now)) in &b.threads {
        ns += match a.threads.get(tid) {
            Some(&(old_pid, then)) if old_pid == pid && now >= then => now - then,
            // New, or a reused thread id.
            _ => now,
        };
    }
    for (pid, pb) in &b.processes {
        let same = a.processes.get(pid).filter(|pa| pa.starttime == pb.starttime);
        let dead_b = pb.total_ns.saturating_sub(pb.live_ns);
        match same {
            Some(pa) => {
                let dead_a = pa.total_ns.saturating_sub(pa.live_ns);
                // Threads gone since `a` move what they had used by then from `live` to `dead`.
                let (exited, exited_then) = a
                    .threads
                    .iter()
                    .filter(|(tid, t)| t.0 == *pid && !b.threads.contains_key(tid))
                    .fold((false, 0u64), |(_, sum), (_, t)| (true, sum + t.1));
                let grown = dead_b.saturating_sub(dead_a).saturating_sub(exited_then);
                if exited || grown > 2 * tick {
                    ns += grown;
                    bound += 2 * tick;
                }
                let reaped = pb.children_ns.saturating_sub(pa.children_ns);
                if reaped > 0 {
                    let had: u64 = a
                        .processes
                        .iter()
                        .filter(|(p, q)| q.ppid == *pid && !b.processes.contains_key(p))
                        .map(|(_, q)| q.total_ns.max(q.live_ns))
                        .sum();
                    ns += reaped.saturating_sub(had);
                    bound += 2 * tick;
                }
            }
            None if dead_b > tick => {
                ns += dead_b;
                bound += tick;
            }
            None => {}
        }
    }
    CpuDelta { ns, error_bound_ns: bound }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TICK: u64 = 10_000_000;

    fn reading(threads: &[(u32, u32, u64)], procs: &[(u32, u32, u64, u64)]) -> CpuReading {
        let threads: HashMap<u32, (u32, u64)> = threads.iter().map(|&(t, p, ns)| (t, (p, ns))).collect();
        let processes = procs
            .iter()
            .map(|&(pid, ppid, total, children)| {
                let live = threads.values().filter(|t| t.0 == pid).map(|t| t.1).sum();
                (pid, ProcessCpu { ppid, starttime: 1, total_ns: total, children_ns: children, live_ns: live })
            })
            .collect();
        CpuReading { at: Instant::now(), threads, processes }
    }

    #[test]
    fn threads_alive_at_both_readings_count_their_exact_difference() {
        let a = reading(&[(10, 10, 1_000), (11, 10, 5_000)], &[(10, 1, 0, 0)]);
        let b = reading(&[(10, 10, 4_000), (11, 10, 6_000), (12, 10, 700)], &[(10, 1, 0, 0)]);
        assert_eq!(delta(&a, &b, TICK), CpuDelta { ns: 4_700, error_bound_ns: 0 });
    }

    #[test]
    fn a_thread_that_exited_between_readings_is_counted_from_the_process_total() {
        let a = reading(&[(10, 10, 100 * TICK), (11, 10, 50 * TICK)], &[(10, 1, 150 * TICK, 0)]);
        // Thread 11 ran 30 more ticks and exited; thread 10 ran 20 more.
        let b = reading(&[(10, 10, 120 * TICK)], &[(10, 1, 200 * TICK, 0)]);
        let d = delta(&a, &b, TICK);
        assert_eq!(d.ns, 20 * TICK + 30 * TICK);
        assert_eq!(d.error_bound_ns, 2 * TICK);
    }

    #[test]
    fn a_child_reaped_between_readings_counts_what_it_used_after_the_first() {
        let a = reading(&[(10, 10, 10 * TICK), (20, 20, 40 * TICK)], &[(10, 1, 10 * TICK, 0), (20, 10, 40 * TICK, 0)]);
        // The child used 100 ticks in all (60 after `a`) and was reaped by 10.
        let b = reading(&[(10, 10, 10 * TICK)], &[(10, 1, 10 * TICK, 100 * TICK)]);
        assert_eq!(delta(&a, &b, TICK).ns, 60 * TICK);
    }
}
