//! Turns ring records into a `RawProfile`: keeps each process's address space and name from `/proc` at attach
//! time and from mmap2/comm/fork records after, unwinds each sample (DWARF from the copied user stack where it
//! yields a chain, else the kernel's frame-pointer chain), and counts the stack as unresolved frames.

use std::collections::{HashMap, HashSet};
use std::fs::{self, File};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::elf::Image;
use crate::maps::{parse_maps_line, AddressSpace, Backing, Mapping};
use crate::raw::{Counts, Frame, MappedFile, RawProfile, Source, StackKey};
use crate::record::{Record, Sample};
use crate::unwind::{ProcessUnwinder, SharedCache, MAX_FRAMES};

/// Processes tracked at most (a tree that forks without end stops being followed past it).
const MAX_PROCESSES: usize = 16_384;

/// Builds a run's `RawProfile` from records.
pub struct Collector {
    spaces: HashMap<u32, AddressSpace>,
    unwinders: HashMap<u32, ProcessUnwinder>,
    cache: SharedCache,
    files: Vec<MappedFile>,
    file_ids: HashMap<(u64, u64, PathBuf), u32>,
    comms: Vec<String>,
    comm_ids: HashMap<String, u32>,
    process_comm: HashMap<u32, u32>,
    stacks: HashMap<StackKey, u64>,
    max_stacks: usize,
    /// Threads covered by an event: opened directly or inherited (seen in a fork record).
    covered: HashSet<u32>,
    threads: HashSet<u32>,
    counts: Counts,
    vdso: Option<Arc<[u8]>>,
    scratch: Vec<u64>,
    frames: Vec<Frame>,
}

impl Collector {
    pub fn new(max_stacks: usize) -> Self {
        Collector {
            spaces: HashMap::new(),
            unwinders: HashMap::new(),
            cache: SharedCache::new(),
            files: Vec::new(),
            file_ids: HashMap::new(),
            comms: Vec::new(),
            comm_ids: HashMap::new(),
            process_comm: HashMap::new(),
            stacks: HashMap::new(),
            max_stacks,
            covered: HashSet::new(),
            threads: HashSet::new(),
            counts: Counts::default(),
            vdso: read_own_vdso(),
            scratch: Vec::new(),
            frames: Vec::new(),
        }
    }

    /// Whether a process is known (attached or created under an event).
    pub fn knows_process(&self, pid: u32) -> bool {
        self.spaces.contains_key(&pid)
    }

    /// Whether a thread already has an event (its own or an inherited one).
    pub fn is_covered(&self, tid: u32) -> bool {
        self.covered.contains(&tid)
    }

    /// Marks a thread as having its own event.
    pub fn cover(&mut self, tid: u32) {
        self.covered.insert(tid);
        if self.threads.insert(tid) {
            self.counts.threads_seen += 1;
        }
    }

    /// Counts a thread that could not be attached.
    pub fn attach_failed(&mut self) {
        self.counts.attach_failures += 1;
    }

    /// Reads an attached process's mappings and name from `/proc` (its events must be open already, so a
    /// mapping made after this read arrives as a record).
    pub fn attach_process(&mut self, pid: u32) {
        if self.spaces.len() >= MAX_PROCESSES && !self.spaces.contains_key(&pid) {
            return;
        }
        if !self.spaces.contains_key(&pid) {
            self.counts.processes_seen += 1;
        }
        self.spaces.entry(pid).or_default();
        if let Ok(comm) = fs::read_to_string(format!("/proc/{pid}/comm")) {
            let id = self.comm_id(comm.trim_end());
            self.process_comm.insert(pid, id);
        }
        let Ok(maps) = fs::read_to_string(format!("/proc/{pid}/maps")) else {
            return;
        };
        for line in maps.lines() {
            let Some(l) = parse_maps_line(line) else { continue };
            if !l.exec {
                continue;
            }
            self.map(pid, l.start, l.end, l.pgoff, l.dev_ino, l.path.as_bytes());
        }
    }

    /// Applies one record.
    pub fn apply(&mut self, record: &Record<'_>) {
        match *record {
            Record::Sample(ref s) => self.sample(s),
            Record::Mmap { pid, start, len, pgoff, dev_ino, exec, path, .. } => {
                if exec {
                    self.map(pid, start, start.saturating_add(len), pgoff, dev_ino, path);
                }
            }
            Record::Comm { pid, tid, exec, name, .. } => {
                if exec {
                    if let Some(space) = self.spaces.get_mut(&pid) {
                        space.clear();
                    }
                }
                if pid == tid {
                    let id = self.comm_id(&String::from_utf8_lossy(name));
                    self.process_comm.insert(pid, id);
                }
            }
            Record::Fork { pid, ppid, tid, .. } => {
                self.covered.insert(tid);
                if self.threads.insert(tid) {
                    self.counts.threads_seen += 1;
                }
                if pid != ppid && !self.spaces.contains_key(&pid) && self.spaces.len() < MAX_PROCESSES {
                    let parent = self.spaces.get(&ppid).cloned().unwrap_or_default();
                    self.spaces.insert(pid, parent);
                    self.counts.processes_seen += 1;
                    if let Some(&c) = self.process_comm.get(&ppid) {
                        self.process_comm.insert(pid, c);
                    }
                }
            }
            Record::Exit { .. } => {}
            Record::Lost { count, .. } => self.counts.lost += count,
        }
    }

    fn comm_id(&mut self, name: &str) -> u32 {
        if let Some(&id) = self.comm_ids.get(name) {
            return id;
        }
        let id = self.comms.len() as u32;
        self.comms.push(name.to_owned());
        self.comm_ids.insert(name.to_owned(), id);
        id
    }

    fn map(&mut self, pid: u32, start: u64, end: u64, pgoff: u64, dev_ino: (u64, u64), path: &[u8]) {
        // Anonymous memory, `//anon`, `[anon:...]`, `[heap]`, `[stack]`: JIT code at best; the vDSO is a file.
        let anon = path.is_empty() || path.starts_with(b"//anon") || (path.starts_with(b"[") && path != b"[vdso]");
        let backing = if anon { Backing::Anon } else { Backing::File(self.file_id(pid, (start, end), dev_ino, path)) };
        let Some(space) = self.spaces.get_mut(&pid) else {
            return;
        };
        space.insert(Mapping { start, end, pgoff, exec: true, backing });
    }

    fn file_id(&mut self, pid: u32, range: (u64, u64), dev_ino: (u64, u64), path: &[u8]) -> u32 {
        let path = path.strip_suffix(b" (deleted)").unwrap_or(path);
        let path = PathBuf::from(String::from_utf8_lossy(path).into_owned());
        let key = (dev_ino.0, dev_ino.1, path.clone());
        if let Some(&id) = self.file_ids.get(&key) {
            return id;
        }
        let source = if path == Path::new("[vdso]") {
            self.vdso.clone().map_or(Source::Missing, Source::Memory)
        } else {
            open_mapped(pid, range, &path, dev_ino)
        };
        let image = match &source {
            Source::Disk(f) => Image::read_file(f).ok(),
            Source::Memory(b) => Image::read_bytes(b).ok(),
            Source::Missing => None,
        }
        .map(Arc::new);
        let id = self.files.len() as u32;
        self.files.push(MappedFile { path, source, image });
        self.file_ids.insert(key, id);
        id
    }

    fn sample(&mut self, s: &Sample<'_>) {
        self.counts.samples += 1;
        if self.threads.insert(s.tid) {
            self.counts.threads_seen += 1;
        }
        if !self.spaces.contains_key(&s.pid) && self.spaces.len() < MAX_PROCESSES {
            self.spaces.insert(s.pid, AddressSpace::default());
            self.counts.processes_seen += 1;
        }
        let mut frames = std::mem::take(&mut self.frames);
        frames.clear();
        let mut user_fp = Vec::new();
        let mut first_user = true;
        for (kernel, addr) in s.chain() {
            if kernel {
                frames.push(Frame::Kernel(addr));
            } else {
                user_fp.push(if first_user { addr } else { addr.wrapping_sub(1) });
                first_user = false;
            }
        }
        let mut user = std::mem::take(&mut self.scratch);
        user.clear();
        let regs: Vec<u64> = (0..4).map_while(|i| s.reg(i)).collect();
        if !regs.is_empty() && !s.stack.is_empty() {
            self.refresh_unwinder(s.pid);
            if let Some(u) = self.unwinders.get(&s.pid) {
                u.unwind(&mut self.cache, &regs, s.stack, &mut user);
            }
        }
        if user.len() >= 2 || user.len() >= user_fp.len() {
            if !user.is_empty() {
                self.counts.dwarf_unwound += 1;
            }
        } else {
            user.clear();
            user.extend(user_fp.iter().take(MAX_FRAMES));
        }
        let space = self.spaces.get(&s.pid);
        for &addr in &user {
            frames.push(match space.and_then(|sp| sp.find(addr)) {
                Some(m) => match m.backing {
                    Backing::File(file) => Frame::File { file, offset: m.offset_of(addr) },
                    Backing::Anon => Frame::Anon { pid: s.pid, addr },
                },
                None => Frame::Unmapped,
            });
        }
        let comm = match self.process_comm.get(&s.pid) {
            Some(&c) => c,
            None => self.comm_id("[unknown]"),
        };
        let key: StackKey = (comm, frames.as_slice().into());
        if let Some(n) = self.stacks.get_mut(&key) {
            *n += 1;
        } else if self.stacks.len() < self.max_stacks {
            self.stacks.insert(key, 1);
        } else {
            self.counts.dropped_stacks += 1;
        }
        self.frames = frames;
        self.scratch = user;
    }

    fn refresh_unwinder(&mut self, pid: u32) {
        let Some(space) = self.spaces.get(&pid) else { return };
        let stale = self.unwinders.get(&pid).is_none_or(|u| u.generation != space.generation);
        if stale {
            let u = ProcessUnwinder::build(space, &self.files);
            self.unwinders.insert(pid, u);
        }
    }

    /// The profile so far.
    pub fn finish(self, period_ns: u64, kernel_stacks: bool) -> RawProfile {
        RawProfile {
            stacks: self.stacks,
            files: self.files,
            comms: self.comms,
            period_ns,
            kernel_stacks,
            counts: self.counts,
        }
    }
}

/// Opens a mapped file as the process sees it (through its root, for a process in another mount namespace),
/// checking the device and inode when the record gave them, then through `/proc/PID/map_files` (the mapped
/// inode itself, when the path was replaced or deleted; the kernel allows it to root, or with
/// `CAP_CHECKPOINT_RESTORE`); `Missing` when no candidate is the mapped file.
fn open_mapped(pid: u32, (start, end): (u64, u64), path: &Path, dev_ino: (u64, u64)) -> Source {
    let rel = path.strip_prefix("/").unwrap_or(path);
    let candidates = [
        PathBuf::from(format!("/proc/{pid}/root")).join(rel),
        path.to_path_buf(),
        PathBuf::from(format!("/proc/{pid}/map_files/{start:x}-{end:x}")),
    ];
    for c in candidates {
        let Ok(f) = File::open(&c) else { continue };
        let Ok(meta) = f.metadata() else { continue };
        let dev = meta.dev();
        let ours = ((libc::major(dev) as u64) << 32) | libc::minor(dev) as u64;
        if dev_ino == (0, 0) || (ours, meta.ino()) == dev_ino {
            return Source::Disk(f);
        }
    }
    Source::Missing
}

/// A copy of this process's vDSO image (every process of the same ABI maps the same one).
fn read_own_vdso() -> Option<Arc<[u8]>> {
    let maps = fs::read_to_string("/proc/self/maps").ok()?;
    let line = maps.lines().find(|l| l.ends_with("[vdso]"))?;
    let l = parse_maps_line(line)?;
    let len = usize::try_from(l.end - l.start).ok()?;
    if len == 0 || len > 1 << 20 {
        return None;
    }
    // SAFETY: the range is this process's own vDSO mapping, readable and mapped for the process's lifetime.
    let bytes = unsafe { std::slice::from_raw_parts(l.start as *const u8, len) };
    Some(Arc::from(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::CONTEXT_USER;

    const P: u32 = 4_000_000_001;
    const CHILD: u32 = 4_000_000_002;

    fn chain(addrs: &[u64]) -> Vec<u8> {
        std::iter::once(CONTEXT_USER).chain(addrs.iter().copied()).flat_map(u64::to_le_bytes).collect()
    }

    fn sample(c: &mut Collector, pid: u32, addrs: &[u64]) {
        let bytes = chain(addrs);
        c.apply(&Record::Sample(Sample {
            pid,
            tid: pid,
            time: 0,
            ip: addrs[0],
            kernel_mode: false,
            callchain: &bytes,
            regs: None,
            stack: &[],
        }));
    }

    fn stacks(c: Collector) -> Vec<(Vec<Frame>, u64)> {
        let raw = c.finish(1, false);
        let mut v: Vec<_> = raw.stacks.into_iter().map(|((_, f), n)| (f.into_vec(), n)).collect();
        v.sort_by_key(|s| (std::cmp::Reverse(s.1), format!("{:?}", s.0)));
        v
    }

    #[test]
    fn samples_resolve_through_mmaps_forks_copy_them_and_exec_clears_them() {
        let mut c = Collector::new(10);
        c.attach_process(P);
        c.apply(&Record::Mmap {
            pid: P,
            time: 1,
            start: 0x1000,
            len: 0x1000,
            pgoff: 0x3000,
            dev_ino: (0, 0),
            exec: true,
            path: b"/nonexistent/loadgate-test-bin",
        });
        sample(&mut c, P, &[0x1010, 0x1020]);
        sample(&mut c, P, &[0x1010, 0x1020]);
        c.apply(&Record::Fork { pid: CHILD, ppid: P, tid: CHILD, time: 2 });
        assert!(c.is_covered(CHILD), "a forked thread has an inherited event");
        sample(&mut c, CHILD, &[0x1010]);
        c.apply(&Record::Comm { pid: CHILD, tid: CHILD, time: 3, exec: true, name: b"new" });
        sample(&mut c, CHILD, &[0x1010]);
        let file = Frame::File { file: 0, offset: 0x3010 };
        // The return address is looked up one byte back (the call instruction).
        let caller = Frame::File { file: 0, offset: 0x301f };
        assert_eq!(stacks(c), vec![(vec![file, caller], 2), (vec![file], 1), (vec![Frame::Unmapped], 1)]);
    }

    #[test]
    fn stacks_past_the_cap_are_counted_as_dropped_and_lost_records_are_added_up() {
        let mut c = Collector::new(1);
        c.attach_process(P);
        sample(&mut c, P, &[0x10]);
        sample(&mut c, P, &[0x10, 0x20]);
        sample(&mut c, P, &[0x10]);
        c.apply(&Record::Lost { count: 5, time: 0 });
        let raw = c.finish(1, false);
        assert_eq!((raw.counts.samples, raw.counts.dropped_stacks, raw.counts.lost), (3, 1, 5));
        assert_eq!(raw.stacks.len(), 1);
    }
}
