//! Small readers of `/proc`: process and thread stats, process groups and trees.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use crate::MachineError;

/// The fields of `/proc/PID/stat` loadgate uses. CPU times are in clock ticks ([`clock_ticks_per_sec`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcStat {
    pub pid: u32,
    /// The command name, without the parentheses.
    pub comm: String,
    /// `R`, `S`, `D`, `Z`, ...
    pub state: char,
    pub ppid: u32,
    pub pgrp: u32,
    pub utime: u64,
    pub stime: u64,
    /// CPU time of waited-for children.
    pub cutime: u64,
    pub cstime: u64,
    pub num_threads: u64,
    /// Resident set size in pages.
    pub rss_pages: u64,
}

impl ProcStat {
    /// Own CPU time plus that of reaped children, in ticks: a tree's sum of these only grows (until a process
    /// is reaped by someone outside the tree).
    pub fn total_ticks(&self) -> u64 {
        self.utime + self.stime + self.cutime + self.cstime
    }

    pub fn is_zombie(&self) -> bool {
        matches!(self.state, 'Z' | 'X' | 'x')
    }
}

/// Parses the text of a `stat` file; `None` if it is malformed.
pub fn parse_stat(text: &str) -> Option<ProcStat> {
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let pid = text[..open].trim().parse().ok()?;
    let comm = text.get(open + 1..close)?.to_owned();
    let fields: Vec<&str> = text.get(close + 1..)?.split_whitespace().collect();
    // fields[0] is field 3 of proc(5).
    let num = |field: usize| -> Option<u64> { fields.get(field - 3)?.parse().ok() };
    let signed = |field: usize| -> Option<u64> { Some(fields.get(field - 3)?.parse::<i64>().ok()?.max(0) as u64) };
    Some(ProcStat {
        pid,
        comm,
        state: fields.first()?.chars().next()?,
        ppid: u32::try_from(num(4)?).ok()?,
        pgrp: u32::try_from(num(5)?).ok()?,
        utime: num(14)?,
        stime: num(15)?,
        cutime: signed(16)?,
        cstime: signed(17)?,
        num_threads: signed(20)?,
        rss_pages: signed(24)?,
    })
}

/// Reads and parses one `stat` file.
pub fn read_stat(path: &Path) -> Result<ProcStat, MachineError> {
    let text = std::fs::read_to_string(path).map_err(|source| MachineError::Read { path: path.to_owned(), source })?;
    parse_stat(&text)
        .ok_or_else(|| MachineError::Parse { path: path.to_owned(), detail: "not a proc stat line".to_owned() })
}

/// The stat of every process visible in `/proc`; processes that vanish while being read are skipped.
pub fn all_processes() -> Vec<ProcStat> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(Result::ok)
        .filter(|e| e.file_name().to_str().is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit())))
        .filter_map(|e| read_stat(&e.path().join("stat")).ok())
        .collect()
}

/// The processes of a process group, zombies included.
pub fn process_group(pgid: u32) -> Vec<ProcStat> {
    all_processes().into_iter().filter(|p| p.pgrp == pgid).collect()
}

/// The pids of a process group's members that are still running (zombies excluded: they hold no resources
/// and only wait to be reaped).
pub fn live_group_members(pgid: u32) -> Vec<u32> {
    if pgid == 0 {
        return Vec::new();
    }
    // kill(-pgid, 0) fails with ESRCH when the group has no member at all, zombies included: the fast path.
    // SAFETY: signal 0 performs only the existence and permission check.
    let rc = unsafe { libc::kill(-(pgid as libc::pid_t), 0) };
    if rc != 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH) {
        return Vec::new();
    }
    process_group(pgid).into_iter().filter(|p| !p.is_zombie()).map(|p| p.pid).collect()
}

/// The target's process tree: `root` (when given), the members of process group `pgid` (when given), and every
/// descendant of any of them (a descendant may have moved to another process group).
pub fn process_tree(root: Option<u32>, pgid: Option<u32>) -> Vec<ProcStat> {
    tree_of(all_processes(), root, pgid)
}

fn tree_of(all: Vec<ProcStat>, root: Option<u32>, pgid: Option<u32>) -> Vec<ProcStat> {
    let mut children: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
    for p in &all {
        children.entry(p.ppid).or_default().push(p.pid);
    }
    let mut members: BTreeSet<u32> = BTreeSet::new();
    let mut stack: Vec<u32> =
        all.iter().filter(|p| Some(p.pid) == root || Some(p.pgrp) == pgid).map(|p| p.pid).collect();
    while let Some(pid) = stack.pop() {
        if members.insert(pid) {
            if let Some(kids) = children.get(&pid) {
                stack.extend(kids.iter().copied());
            }
        }
    }
    all.into_iter().filter(|p| members.contains(&p.pid)).collect()
}

/// Clock ticks per second (`_SC_CLK_TCK`), the unit of CPU times in `stat` files.
pub fn clock_ticks_per_sec() -> f64 {
    // SAFETY: sysconf has no preconditions.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 {
        t as f64
    } else {
        100.0
    }
}

/// The page size in bytes, the unit of `rss` in `stat` files.
pub fn page_size() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if p > 0 {
        p as u64
    } else {
        4096
    }
}

/// The calling thread's kernel thread id (what `/proc/self/task/TID` names). Generator workers report theirs
/// so the sampler can follow them.
pub fn current_tid() -> u32 {
    // SAFETY: gettid has no preconditions and cannot fail.
    unsafe { libc::gettid() as u32 }
}

/// The stat path of a thread of this process.
pub fn thread_stat_path(tid: u32) -> PathBuf {
    PathBuf::from(format!("/proc/self/task/{tid}/stat"))
}

/// User and system CPU seconds a thread of this process has used so far.
pub fn thread_cpu_seconds(tid: u32) -> Result<(f64, f64), MachineError> {
    let s = read_stat(&thread_stat_path(tid))?;
    let hz = clock_ticks_per_sec();
    Ok((s.utime as f64 / hz, s.stime as f64 / hz))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_stat_with_odd_comm() {
        let line = "1234 (my (odd) srv) S 1 1234 1234 0 -1 4194560 100 0 0 0 150 25 3 4 20 0 7 0 5000 123456789 2048 \
                    18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0";
        let s = parse_stat(line).unwrap();
        assert_eq!(s.pid, 1234);
        assert_eq!(s.comm, "my (odd) srv");
        assert_eq!(s.state, 'S');
        assert_eq!((s.ppid, s.pgrp), (1, 1234));
        assert_eq!((s.utime, s.stime, s.cutime, s.cstime), (150, 25, 3, 4));
        assert_eq!(s.num_threads, 7);
        assert_eq!(s.rss_pages, 2048);
        assert_eq!(s.total_ticks(), 182);
        assert!(parse_stat("garbage").is_none());
    }

    #[test]
    fn tree_follows_group_and_descendants() {
        let p = |pid, ppid, pgrp| ProcStat {
            pid,
            comm: String::new(),
            state: 'S',
            ppid,
            pgrp,
            utime: 0,
            stime: 0,
            cutime: 0,
            cstime: 0,
            num_threads: 1,
            rss_pages: 0,
        };
        let all =
            vec![p(1, 0, 1), p(10, 1, 10), p(11, 10, 10), p(12, 11, 99), p(13, 12, 99), p(20, 1, 20), p(21, 1, 10)];
        let mut pids: Vec<u32> = tree_of(all, Some(10), Some(10)).iter().map(|p| p.pid).collect();
        pids.sort_unstable();
        assert_eq!(pids, vec![10, 11, 12, 13, 21]);
    }

    #[test]
    fn own_thread_is_readable() {
        let (user, system) = thread_cpu_seconds(current_tid()).unwrap();
        assert!(user >= 0.0 && system >= 0.0);
        let me = read_stat(Path::new("/proc/self/stat")).unwrap();
        assert_eq!(me.pid, std::process::id());
    }
}
