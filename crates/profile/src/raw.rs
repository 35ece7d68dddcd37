//! What a sampling run keeps until it is symbolized: stacks of unresolved frames (a file and an offset in it,
//! a kernel address, or an address in anonymous memory), the files they point into (held open, so a binary
//! replaced or deleted after the run still symbolizes), the process names, and the run's counters.

use std::collections::HashMap;
use std::fs::File;
use std::path::PathBuf;
use std::sync::Arc;

use crate::elf::Image;

/// One unresolved frame. Return addresses are stored minus one (the call instruction), so a call that is the
/// last instruction of a function resolves to that function.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Frame {
    /// A kernel address (resolved through `/proc/kallsyms`).
    Kernel(u64),
    /// An offset in a mapped file (index into `RawProfile::files`).
    File { file: u32, offset: u64 },
    /// An address in anonymous executable memory of a process (JIT code: `/tmp/perf-PID.map`).
    Anon { pid: u32, addr: u64 },
    /// An address in no known mapping.
    Unmapped,
}

/// Where the bytes of a mapped file are read from after the run.
#[derive(Debug)]
pub(crate) enum Source {
    /// The file, open since it was first seen (the same inode even if the path changed since).
    Disk(File),
    /// An image copied from memory (the vDSO).
    Memory(Arc<[u8]>),
    /// The file could not be opened or was not the mapped one (its frames stay unresolved).
    Missing,
}

/// A file that samples point into.
#[derive(Debug)]
pub(crate) struct MappedFile {
    /// The path as the kernel reported it.
    pub path: PathBuf,
    /// Where to read it.
    pub source: Source,
    /// Its segments, unwind sections, build id and debug link (`None`: unreadable or not ELF).
    pub image: Option<Arc<Image>>,
}

/// Counters of a run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// Samples taken (kept in a stack or dropped for the stack cap).
    pub samples: u64,
    /// Records the kernel dropped because a ring was full.
    pub lost: u64,
    /// Samples not kept because the table of distinct stacks was full.
    pub dropped_stacks: u64,
    /// Samples unwound with DWARF from the copied user stack (the rest used the kernel's frame-pointer chain).
    pub dwarf_unwound: u64,
    /// Distinct threads and processes seen in the tree (attached, created while sampling, or sampled).
    pub threads_seen: u64,
    pub processes_seen: u64,
    /// Threads the sampler could not attach to (they exited first, or the kernel refused).
    pub attach_failures: u64,
}

/// A stack: the process name (index into `RawProfile::comms`) and the frames, leaf first.
pub(crate) type StackKey = (u32, Box<[Frame]>);

/// The samples of a run, before symbolization.
#[derive(Debug)]
pub struct RawProfile {
    /// Sample counts per distinct stack.
    pub(crate) stacks: HashMap<StackKey, u64>,
    pub(crate) files: Vec<MappedFile>,
    pub(crate) comms: Vec<String>,
    /// CPU nanoseconds between two samples of a thread.
    pub(crate) period_ns: u64,
    /// Whether kernel frames were sampled (false: the kernel allowed user stacks only, or they were not asked).
    pub(crate) kernel_stacks: bool,
    pub(crate) counts: Counts,
}

impl RawProfile {
    /// The run's counters.
    pub fn counts(&self) -> &Counts {
        &self.counts
    }

    /// The number of distinct stacks kept.
    pub fn distinct_stacks(&self) -> usize {
        self.stacks.len()
    }

    /// Whether kernel frames were sampled.
    pub fn kernel_stacks(&self) -> bool {
        self.kernel_stacks
    }

    /// CPU nanoseconds a sample stands for.
    pub fn period_ns(&self) -> u64 {
        self.period_ns
    }
}
