//! The records of a perf ring, parsed from bytes (pure: no system calls). Only the kinds the sampler uses are
//! read; others are skipped by their size. Every read is bounds-checked: a short or corrupt record ends the
//! batch instead of panicking.

use crate::sys::{SAMPLE_CALLCHAIN, SAMPLE_IP, SAMPLE_REGS_USER, SAMPLE_STACK_USER, SAMPLE_TID, SAMPLE_TIME};

const RECORD_LOST: u32 = 2;
const RECORD_COMM: u32 = 3;
const RECORD_EXIT: u32 = 4;
const RECORD_FORK: u32 = 7;
const RECORD_SAMPLE: u32 = 9;
const RECORD_MMAP2: u32 = 10;
const RECORD_LOST_SAMPLES: u32 = 13;
/// `PERF_RECORD_MISC_COMM_EXEC`: the comm change comes from `exec`.
const MISC_COMM_EXEC: u16 = 1 << 13;
/// `PERF_RECORD_MISC_MMAP_BUILD_ID`: the mmap2 record carries a build id instead of device and inode.
const MISC_MMAP_BUILD_ID: u16 = 1 << 14;
/// Callchain entries at or above this value are context markers (`PERF_CONTEXT_*`).
const CONTEXT_MAX: u64 = (-4095i64) as u64;
/// `PERF_CONTEXT_USER`.
pub const CONTEXT_USER: u64 = (-512i64) as u64;
/// `PERF_CONTEXT_KERNEL`.
pub const CONTEXT_KERNEL: u64 = (-128i64) as u64;

/// One record of interest, borrowing from the ring's bytes.
#[derive(Debug, PartialEq)]
pub enum Record<'a> {
    Sample(Sample<'a>),
    /// A new mapping (`PERF_RECORD_MMAP2`).
    Mmap {
        pid: u32,
        time: u64,
        start: u64,
        len: u64,
        pgoff: u64,
        /// Device and inode (0 when the record carried a build id instead).
        dev_ino: (u64, u64),
        exec: bool,
        path: &'a [u8],
    },
    /// A thread's name changed; `exec` when an `exec` replaced the image.
    Comm {
        pid: u32,
        tid: u32,
        time: u64,
        exec: bool,
        name: &'a [u8],
    },
    /// A thread or process was created.
    Fork {
        pid: u32,
        ppid: u32,
        tid: u32,
        time: u64,
    },
    /// A thread exited.
    Exit {
        pid: u32,
        tid: u32,
        time: u64,
    },
    /// The kernel dropped this many records (ring full).
    Lost {
        count: u64,
        time: u64,
    },
}

impl Record<'_> {
    /// The kernel's timestamp of the record (with `sample_id_all`, every kind has one).
    pub fn time(&self) -> u64 {
        match self {
            Record::Sample(s) => s.time,
            Record::Mmap { time, .. }
            | Record::Comm { time, .. }
            | Record::Fork { time, .. }
            | Record::Exit { time, .. }
            | Record::Lost { time, .. } => *time,
        }
    }
}

/// A `PERF_RECORD_SAMPLE` with IP, TID, TIME, CALLCHAIN and optionally REGS_USER and STACK_USER.
#[derive(Debug, PartialEq)]
pub struct Sample<'a> {
    pub pid: u32,
    pub tid: u32,
    pub time: u64,
    pub ip: u64,
    /// The sample was taken in kernel mode.
    pub kernel_mode: bool,
    /// The kernel's callchain, leaf first, with `PERF_CONTEXT_*` markers, as little-endian u64s.
    pub callchain: &'a [u8],
    /// User registers in `REGS_MASK` order, when the thread was in user mode or had a user context.
    pub regs: Option<&'a [u8]>,
    /// The copied user stack, starting at the sampled stack pointer (`dyn_size` bytes valid).
    pub stack: &'a [u8],
}

impl Sample<'_> {
    /// The callchain's addresses, leaf first, each tagged kernel (`true`) or user by the preceding marker.
    pub fn chain(&self) -> impl Iterator<Item = (bool, u64)> + '_ {
        let mut kernel = self.kernel_mode;
        self.callchain.chunks_exact(8).filter_map(move |c| {
            let v = u64::from_le_bytes(c.try_into().unwrap_or([0; 8]));
            if v >= CONTEXT_MAX {
                kernel = v == CONTEXT_KERNEL;
                if v != CONTEXT_USER && v != CONTEXT_KERNEL {
                    kernel = false;
                }
                None
            } else {
                Some((kernel, v))
            }
        })
    }

    /// The `i`-th sampled user register (in `REGS_MASK` bit order).
    pub fn reg(&self, i: usize) -> Option<u64> {
        let r = self.regs?;
        Some(u64::from_le_bytes(r.get(i * 8..i * 8 + 8)?.try_into().ok()?))
    }
}

/// Reads records from a contiguous buffer of whole records.
pub struct Parser<'a> {
    buf: &'a [u8],
    sample_type: u64,
    regs: usize,
}

impl<'a> Parser<'a> {
    /// A parser for records of events with `sample_type` and `regs` user registers per sample.
    pub fn new(buf: &'a [u8], sample_type: u64, regs: usize) -> Self {
        Parser { buf, sample_type, regs }
    }
}

impl<'a> Iterator for Parser<'a> {
    type Item = Record<'a>;

    fn next(&mut self) -> Option<Record<'a>> {
        loop {
            if self.buf.len() < 8 {
                return None;
            }
            let kind = u32::from_le_bytes(self.buf[0..4].try_into().ok()?);
            let misc = u16::from_le_bytes(self.buf[4..6].try_into().ok()?);
            let size = u16::from_le_bytes(self.buf[6..8].try_into().ok()?) as usize;
            if size < 8 || size > self.buf.len() {
                self.buf = &[];
                return None;
            }
            let body = &self.buf[8..size];
            self.buf = &self.buf[size..];
            if let Some(r) = parse(kind, misc, body, self.sample_type, self.regs) {
                return Some(r);
            }
        }
    }
}

/// A cursor over a record's body.
struct Cur<'a>(&'a [u8]);

impl<'a> Cur<'a> {
    fn u64(&mut self) -> Option<u64> {
        let (h, t) = self.0.split_at_checked(8)?;
        self.0 = t;
        Some(u64::from_le_bytes(h.try_into().ok()?))
    }
    fn u32(&mut self) -> Option<u32> {
        let (h, t) = self.0.split_at_checked(4)?;
        self.0 = t;
        Some(u32::from_le_bytes(h.try_into().ok()?))
    }
    fn bytes(&mut self, n: usize) -> Option<&'a [u8]> {
        let (h, t) = self.0.split_at_checked(n)?;
        self.0 = t;
        Some(h)
    }
}

/// A NUL-terminated string padded to 8 bytes, followed by the `sample_id` trailer (pid, tid, time).
fn string_and_time<'a>(c: &mut Cur<'a>) -> Option<(&'a [u8], u64)> {
    let rest = c.0;
    if rest.len() < 16 {
        return None;
    }
    let trailer = &rest[rest.len() - 16..];
    let time = u64::from_le_bytes(trailer[8..16].try_into().ok()?);
    let text = &rest[..rest.len() - 16];
    let end = text.iter().position(|&b| b == 0).unwrap_or(text.len());
    Some((&text[..end], time))
}

fn trailer_time(body: &[u8]) -> u64 {
    body.len().checked_sub(8).and_then(|i| body.get(i..)).and_then(|b| b.try_into().ok()).map_or(0, u64::from_le_bytes)
}

fn parse<'a>(kind: u32, misc: u16, body: &'a [u8], sample_type: u64, regs: usize) -> Option<Record<'a>> {
    let mut c = Cur(body);
    match kind {
        RECORD_SAMPLE => {
            let mut s = Sample {
                pid: 0,
                tid: 0,
                time: 0,
                ip: 0,
                kernel_mode: misc & 7 == 1,
                callchain: &[],
                regs: None,
                stack: &[],
            };
            if sample_type & SAMPLE_IP != 0 {
                s.ip = c.u64()?;
            }
            if sample_type & SAMPLE_TID != 0 {
                s.pid = c.u32()?;
                s.tid = c.u32()?;
            }
            if sample_type & SAMPLE_TIME != 0 {
                s.time = c.u64()?;
            }
            if sample_type & SAMPLE_CALLCHAIN != 0 {
                let n = c.u64()? as usize;
                s.callchain = c.bytes(n.checked_mul(8)?)?;
            }
            if sample_type & SAMPLE_REGS_USER != 0 {
                let abi = c.u64()?;
                if abi != 0 {
                    s.regs = Some(c.bytes(regs * 8)?);
                }
            }
            if sample_type & SAMPLE_STACK_USER != 0 {
                let size = c.u64()? as usize;
                if size > 0 {
                    let data = c.bytes(size)?;
                    let dyn_size = (c.u64()? as usize).min(size);
                    s.stack = &data[..dyn_size];
                }
            }
            Some(Record::Sample(s))
        }
        RECORD_MMAP2 => {
            let pid = c.u32()?;
            let _tid = c.u32()?;
            let start = c.u64()?;
            let len = c.u64()?;
            let pgoff = c.u64()?;
            let dev_ino = if misc & MISC_MMAP_BUILD_ID != 0 {
                c.bytes(24)?;
                (0, 0)
            } else {
                let maj = c.u32()? as u64;
                let min = c.u32()? as u64;
                let ino = c.u64()?;
                let _generation = c.u64()?;
                ((maj << 32) | min, ino)
            };
            let prot = c.u32()?;
            let _flags = c.u32()?;
            let (path, time) = string_and_time(&mut c)?;
            Some(Record::Mmap { pid, time, start, len, pgoff, dev_ino, exec: prot & libc::PROT_EXEC as u32 != 0, path })
        }
        RECORD_COMM => {
            let pid = c.u32()?;
            let tid = c.u32()?;
            let (name, time) = string_and_time(&mut c)?;
            Some(Record::Comm { pid, tid, time, exec: misc & MISC_COMM_EXEC != 0, name })
        }
        RECORD_FORK | RECORD_EXIT => {
            let pid = c.u32()?;
            let ppid = c.u32()?;
            let tid = c.u32()?;
            let _ptid = c.u32()?;
            let time = c.u64()?;
            Some(if kind == RECORD_FORK {
                Record::Fork { pid, ppid, tid, time }
            } else {
                Record::Exit { pid, tid, time }
            })
        }
        RECORD_LOST => {
            let _id = c.u64()?;
            let count = c.u64()?;
            Some(Record::Lost { count, time: trailer_time(body) })
        }
        RECORD_LOST_SAMPLES => {
            let count = c.u64()?;
            Some(Record::Lost { count, time: trailer_time(body) })
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(kind: u32, misc: u16, body: &[u8]) -> Vec<u8> {
        let mut v = Vec::new();
        v.extend_from_slice(&kind.to_le_bytes());
        v.extend_from_slice(&misc.to_le_bytes());
        v.extend_from_slice(&((body.len() + 8) as u16).to_le_bytes());
        v.extend_from_slice(body);
        v
    }

    fn trailer(v: &mut Vec<u8>, pid: u32, tid: u32, time: u64) {
        v.extend_from_slice(&pid.to_le_bytes());
        v.extend_from_slice(&tid.to_le_bytes());
        v.extend_from_slice(&time.to_le_bytes());
    }

    #[test]
    fn a_sample_with_callchain_registers_and_stack_is_read_field_by_field() {
        let mut b = Vec::new();
        b.extend_from_slice(&0x401000u64.to_le_bytes());
        b.extend_from_slice(&7u32.to_le_bytes());
        b.extend_from_slice(&8u32.to_le_bytes());
        b.extend_from_slice(&99u64.to_le_bytes());
        b.extend_from_slice(&3u64.to_le_bytes());
        for v in [CONTEXT_USER, 0x401000, 0x402000] {
            b.extend_from_slice(&v.to_le_bytes());
        }
        b.extend_from_slice(&2u64.to_le_bytes());
        for v in [1u64, 2, 3] {
            b.extend_from_slice(&v.to_le_bytes());
        }
        b.extend_from_slice(&16u64.to_le_bytes());
        b.extend_from_slice(&[0xAA; 16]);
        b.extend_from_slice(&8u64.to_le_bytes());
        let st = SAMPLE_IP | SAMPLE_TID | SAMPLE_TIME | SAMPLE_CALLCHAIN | SAMPLE_REGS_USER | SAMPLE_STACK_USER;
        let buf = header(RECORD_SAMPLE, 2, &b);
        let recs: Vec<_> = Parser::new(&buf, st, 3).collect();
        let Some(Record::Sample(s)) = recs.first() else { panic!("no sample: {recs:?}") };
        assert_eq!((s.pid, s.tid, s.time, s.ip), (7, 8, 99, 0x401000));
        assert_eq!(s.chain().collect::<Vec<_>>(), vec![(false, 0x401000), (false, 0x402000)]);
        assert_eq!((s.reg(0), s.reg(2), s.reg(3)), (Some(1), Some(3), None));
        assert_eq!(s.stack.len(), 8);
    }

    #[test]
    fn kernel_addresses_are_told_from_user_ones_by_the_markers() {
        let mut chain = Vec::new();
        for v in [CONTEXT_KERNEL, 0xffff_8000_0000_1000, CONTEXT_USER, 0x1000] {
            chain.extend_from_slice(&v.to_le_bytes());
        }
        let s = Sample { pid: 1, tid: 1, time: 0, ip: 0, kernel_mode: true, callchain: &chain, regs: None, stack: &[] };
        assert_eq!(s.chain().collect::<Vec<_>>(), vec![(true, 0xffff_8000_0000_1000), (false, 0x1000)]);
    }

    #[test]
    fn an_mmap2_record_gives_its_range_offset_inode_and_path() {
        let mut b = Vec::new();
        b.extend_from_slice(&5u32.to_le_bytes());
        b.extend_from_slice(&5u32.to_le_bytes());
        for v in [0x7000u64, 0x2000, 0x1000] {
            b.extend_from_slice(&v.to_le_bytes());
        }
        b.extend_from_slice(&8u32.to_le_bytes());
        b.extend_from_slice(&1u32.to_le_bytes());
        b.extend_from_slice(&42u64.to_le_bytes());
        b.extend_from_slice(&0u64.to_le_bytes());
        b.extend_from_slice(&5u32.to_le_bytes());
        b.extend_from_slice(&2u32.to_le_bytes());
        b.extend_from_slice(b"/lib/x.so\0\0\0\0\0\0\0");
        trailer(&mut b, 5, 5, 1234);
        let buf = header(RECORD_MMAP2, 2, &b);
        let recs: Vec<_> = Parser::new(&buf, SAMPLE_TID | SAMPLE_TIME, 0).collect();
        assert_eq!(
            recs,
            vec![Record::Mmap {
                pid: 5,
                time: 1234,
                start: 0x7000,
                len: 0x2000,
                pgoff: 0x1000,
                dev_ino: ((8 << 32) | 1, 42),
                exec: true,
                path: b"/lib/x.so",
            }]
        );
    }

    #[test]
    fn a_truncated_record_ends_the_batch_without_a_panic() {
        let mut buf = header(RECORD_SAMPLE, 2, &[1, 2, 3, 4, 5, 6, 7, 8]);
        buf.truncate(12);
        assert_eq!(Parser::new(&buf, SAMPLE_IP | SAMPLE_TID, 0).count(), 0);
        let short = header(RECORD_SAMPLE, 2, &[1, 2, 3, 4, 5, 6, 7, 8]);
        assert_eq!(Parser::new(&short, SAMPLE_IP | SAMPLE_TID, 0).count(), 0);
    }

    #[test]
    fn comm_fork_and_exit_records_carry_their_ids_and_times() {
        let mut b = Vec::new();
        b.extend_from_slice(&9u32.to_le_bytes());
        b.extend_from_slice(&9u32.to_le_bytes());
        b.extend_from_slice(b"burn\0\0\0\0");
        trailer(&mut b, 9, 9, 77);
        let mut buf = header(RECORD_COMM, MISC_COMM_EXEC, &b);
        let mut f = Vec::new();
        for v in [10u32, 9, 10, 9] {
            f.extend_from_slice(&v.to_le_bytes());
        }
        f.extend_from_slice(&78u64.to_le_bytes());
        trailer(&mut f, 10, 10, 78);
        buf.extend(header(RECORD_FORK, 0, &f));
        let recs: Vec<_> = Parser::new(&buf, SAMPLE_TID | SAMPLE_TIME, 0).collect();
        assert_eq!(
            recs,
            vec![
                Record::Comm { pid: 9, tid: 9, time: 77, exec: true, name: b"burn" },
                Record::Fork { pid: 10, ppid: 9, tid: 10, time: 78 }
            ]
        );
    }
}
