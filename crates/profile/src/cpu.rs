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
//! When the tree is alone in its cgroup (every process of the cgroup and its sub-cgroups is in the tree, and it
//! is not the root cgroup), the cgroup's own counter is used instead: `usage_usec` of `cpu.stat` (cgroup v2) or
//! `cpuacct.usage` in nanoseconds (v1 `cpuacct`), which counts every thread and process of the cgroup, exited
//! ones included, with no estimate.
//!
//! Residual error: each estimate from `/proc/PID/stat` is off by at most about two clock ticks (20 ms at
//! `CLK_TCK` 100: the value is truncated to ticks at each reading); `CpuDelta::error_bound_ns` adds that up for
//! every process where an estimate was used and is 0 when every thread lived through both readings. CPU of a
//! process that exited unreaped by a parent in the tree (the root itself, or one whose parent left the tree)
//! after `a` is not seen.

use std::collections::{HashMap, HashSet};
use std::fs;
use std::path::{Path, PathBuf};
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
    /// The tree's own cgroup and its CPU nanoseconds, when the tree is alone in it.
    cgroup: Option<(PathBuf, u64)>,
}

/// Where a `CpuDelta` came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CpuSource {
    /// The tree's own cgroup's counter (exact to a microsecond).
    Cgroup,
    /// Per-thread schedstat, with process totals for what exited (see the module doc).
    Threads,
}

/// The CPU time of a tree between two readings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CpuDelta {
    /// CPU nanoseconds used by the tree between the readings.
    pub ns: u64,
    /// How far `ns` may be off (0 when every thread lived through both readings; see the module doc).
    pub error_bound_ns: u64,
    pub source: CpuSource,
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
    Some(st.utime.saturating_add(st.stime).saturating_mul(tick))
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
                    total_ns: st.utime.saturating_add(st.stime).saturating_mul(tick),
                    children_ns: st.cutime.saturating_add(st.cstime).saturating_mul(tick),
                    live_ns,
                },
            );
        }
        if !processes.contains_key(&root_pid) {
            return Err(ProfileError::NoProcess { pid: root_pid });
        }
        let tree: HashSet<u32> = processes.keys().copied().collect();
        let cgroup = own_cgroup(root_pid, &tree);
        Ok(CpuReading { at: Instant::now(), threads, processes, cgroup })
    }
}

/// The cgroup paths of a `/proc/PID/cgroup` text: the unified (v2) one and the v1 `cpuacct` one.
fn cgroup_paths(text: &str) -> (Option<&str>, Option<&str>) {
    let (mut v2, mut v1) = (None, None);
    for line in text.lines() {
        let mut it = line.splitn(3, ':');
        let (Some(_), Some(controllers), Some(path)) = (it.next(), it.next(), it.next()) else { continue };
        if controllers.is_empty() {
            v2 = Some(path);
        } else if controllers.split(',').any(|c| c == "cpuacct") {
            v1 = Some(path);
        }
    }
    (v2, v1)
}

/// The pids of a cgroup folder and its sub-cgroups (`None` past 10,000 or when unreadable).
fn cgroup_pids(dir: &Path, out: &mut Vec<u32>, depth: u32) -> Option<()> {
    let procs = fs::read_to_string(dir.join("cgroup.procs")).ok()?;
    out.extend(procs.lines().filter_map(|l| l.trim().parse::<u32>().ok()));
    if out.len() > 10_000 || depth > 8 {
        return None;
    }
    for e in fs::read_dir(dir).ok()?.flatten() {
        if e.file_type().is_ok_and(|t| t.is_dir()) {
            cgroup_pids(&e.path(), out, depth + 1)?;
        }
    }
    Some(())
}

/// The CPU nanoseconds of the root's cgroup, when the tree is alone in it.
fn own_cgroup(root: u32, tree: &HashSet<u32>) -> Option<(PathBuf, u64)> {
    let text = fs::read_to_string(format!("/proc/{root}/cgroup")).ok()?;
    let (v2, v1) = cgroup_paths(&text);
    let mut found = None;
    if let Some(p) = v2.filter(|p| *p != "/") {
        let dir = Path::new("/sys/fs/cgroup").join(p.trim_start_matches('/'));
        let stat = fs::read_to_string(dir.join("cpu.stat")).ok();
        let usec = stat.as_deref().and_then(|s| {
            s.lines().find_map(|l| l.strip_prefix("usage_usec ")).and_then(|v| v.trim().parse::<u64>().ok())
        });
        found = usec.map(|u| (dir, u.saturating_mul(1000)));
    }
    if found.is_none() {
        if let Some(p) = v1.filter(|p| *p != "/") {
            found = ["/sys/fs/cgroup/cpuacct", "/sys/fs/cgroup/cpu,cpuacct"].iter().find_map(|base| {
                let dir = Path::new(base).join(p.trim_start_matches('/'));
                let ns = fs::read_to_string(dir.join("cpuacct.usage")).ok()?.trim().parse::<u64>().ok()?;
                Some((dir, ns))
            });
        }
    }
    let (dir, ns) = found?;
    let mut pids = Vec::new();
    cgroup_pids(&dir, &mut pids, 0)?;
    pids.iter().all(|p| tree.contains(p)).then_some((dir, ns))
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
    if let (Some((pa, na)), Some((pb, nb))) = (&a.cgroup, &b.cgroup) {
        if pa == pb {
            return CpuDelta { ns: nb.saturating_sub(*na), error_bound_ns: 1_000, source: CpuSource::Cgroup };
        }
    }
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
                    .fold((false, 0u64), |(_, sum), (_, t)| (true, sum.saturating_add(t.1)));
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
    CpuDelta { ns, error_bound_ns: bound, source: CpuSource::Threads }
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
        CpuReading { at: Instant::now(), threads, processes, cgroup: None }
    }

    #[test]
    fn threads_alive_at_both_readings_count_their_exact_difference() {
        let a = reading(&[(10, 10, 1_000), (11, 10, 5_000)], &[(10, 1, 0, 0)]);
        let b = reading(&[(10, 10, 4_000), (11, 10, 6_000), (12, 10, 700)], &[(10, 1, 0, 0)]);
        assert_eq!(delta(&a, &b, TICK), CpuDelta { ns: 4_700, error_bound_ns: 0, source: CpuSource::Threads });
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

    #[test]
    fn the_cgroup_paths_are_the_unified_one_and_the_cpuacct_one() {
        let text = "12:cpu,cpuacct:/a/b\n4:memory:/m\n0::/svc/x\n";
        assert_eq!(cgroup_paths(text), (Some("/svc/x"), Some("/a/b")));
        assert_eq!(cgroup_paths("garbage"), (None, None));
    }

    #[test]
    fn a_tree_alone_in_its_cgroup_takes_the_cgroup_counter() {
        let mut a = reading(&[(10, 10, 1_000)], &[(10, 1, 0, 0)]);
        let mut b = reading(&[(10, 10, 2_000)], &[(10, 1, 0, 0)]);
        a.cgroup = Some((PathBuf::from("/sys/fs/cgroup/x"), 5_000));
        b.cgroup = Some((PathBuf::from("/sys/fs/cgroup/x"), 9_000));
        assert_eq!(delta(&a, &b, TICK), CpuDelta { ns: 4_000, error_bound_ns: 1_000, source: CpuSource::Cgroup });
        b.cgroup = Some((PathBuf::from("/sys/fs/cgroup/y"), 9_000));
        assert_eq!(delta(&a, &b, TICK).source, CpuSource::Threads);
    }
}
