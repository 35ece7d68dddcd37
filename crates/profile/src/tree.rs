//! A process tree read from `/proc`: the root and every process whose parent is in the tree, their threads,
//! and the fields of `/proc/PID/stat` this crate uses.

use std::collections::{HashMap, HashSet};
use std::fs;

/// The fields of `/proc/PID/stat` (or `/proc/PID/task/TID/stat`) this crate reads.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stat {
    pub ppid: u32,
    /// User and system time of the process (the whole thread group, exited threads included), in clock ticks.
    pub utime: u64,
    pub stime: u64,
    /// User and system time of children the process waited for, in clock ticks.
    pub cutime: u64,
    pub cstime: u64,
    /// Start time after boot in clock ticks (tells a reused pid apart).
    pub starttime: u64,
}

/// Parses the text of a `stat` file; the command name (field 2) may hold spaces and parentheses, so fields
/// are counted after its last `)`.
pub fn parse_stat(text: &str) -> Option<Stat> {
    let rest = &text[text.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // After the name: state(3) ppid(4) ... utime(14) stime(15) cutime(16) cstime(17) ... starttime(22).
    let field = |n: usize| -> Option<u64> { f.get(n - 3)?.parse().ok() };
    Some(Stat {
        ppid: field(4)? as u32,
        utime: field(14)?,
        stime: field(15)?,
        cutime: field(16)?,
        cstime: field(17)?,
        starttime: field(22)?,
    })
}

/// Reads `/proc/PID/stat`.
pub fn stat(pid: u32) -> Option<Stat> {
    parse_stat(&fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

/// The parent in the text of a `stat` file (field 4, after the name's last `)`).
fn parse_ppid(text: &str) -> Option<u32> {
    text[text.rfind(')')? + 1..].split_ascii_whitespace().nth(1)?.parse().ok()
}

/// Every process on the machine with its parent.
pub fn all_processes() -> Vec<(u32, u32)> {
    let Ok(dir) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut buf = String::with_capacity(512);
    dir.filter_map(|e| {
        let pid: u32 = e.ok()?.file_name().to_str()?.parse().ok()?;
        buf.clear();
        let mut f = fs::File::open(format!("/proc/{pid}/stat")).ok()?;
        std::io::Read::read_to_string(&mut f, &mut buf).ok()?;
        Some((pid, parse_ppid(&buf)?))
    })
    .collect()
}

/// The root and its descendants among `(pid, ppid)` pairs (the root first; the root even when not listed).
pub fn descendants(root: u32, procs: &[(u32, u32)]) -> Vec<u32> {
    let mut children: HashMap<u32, Vec<u32>> = HashMap::new();
    for &(pid, ppid) in procs {
        if pid != ppid {
            children.entry(ppid).or_default().push(pid);
        }
    }
    let mut out = vec![root];
    let mut seen: HashSet<u32> = HashSet::from([root]);
    let mut i = 0;
    while i < out.len() {
        if let Some(kids) = children.get(&out[i]) {
            for &k in kids {
                if seen.insert(k) {
                    out.push(k);
                }
            }
        }
        i += 1;
    }
    out
}

/// The process tree of `root` now.
pub fn process_tree(root: u32) -> Vec<u32> {
    descendants(root, &all_processes())
}

/// The thread ids of a process (empty when it is gone).
pub fn threads(pid: u32) -> Vec<u32> {
    let Ok(dir) = fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stat_line_with_spaces_and_parentheses_in_the_name_is_read_after_the_last_parenthesis() {
        let line = "42 (a (b) c) R 7 42 42 0 -1 4194560 100 0 0 0 150 25 3 4 20 0 1 0 9999 1000 10";
        assert_eq!(
            parse_stat(line),
            Some(Stat { ppid: 7, utime: 150, stime: 25, cutime: 3, cstime: 4, starttime: 9999 })
        );
        assert_eq!(parse_stat("garbage"), None);
        assert_eq!(parse_ppid(line), Some(7));
    }

    #[test]
    fn the_tree_holds_children_and_grandchildren_but_not_siblings_of_the_root() {
        let procs = [(1, 0), (10, 1), (11, 10), (12, 11), (20, 1), (13, 10)];
        let mut t = descendants(10, &procs);
        t.sort_unstable();
        assert_eq!(t, vec![10, 11, 12, 13]);
        assert_eq!(descendants(99, &procs), vec![99]);
    }
}
