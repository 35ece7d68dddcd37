//! The kernel interface: `perf_event_open(2)` for a software `cpu-clock` event, its ioctls, and the mmap'd ring
//! buffer the kernel writes records into. The only module with `unsafe` besides the `prctl` helper.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{fence, Ordering};

/// `PERF_TYPE_SOFTWARE`.
const TYPE_SOFTWARE: u32 = 1;
/// `PERF_COUNT_SW_CPU_CLOCK`.
const SW_CPU_CLOCK: u64 = 0;
/// `PERF_ATTR_SIZE_VER5`: the struct up to `sample_max_stack` (kernels since 4.8 read it).
const ATTR_SIZE: u32 = 112;

pub const SAMPLE_IP: u64 = 1 << 0;
pub const SAMPLE_TID: u64 = 1 << 1;
pub const SAMPLE_TIME: u64 = 1 << 2;
pub const SAMPLE_CALLCHAIN: u64 = 1 << 5;
pub const SAMPLE_REGS_USER: u64 = 1 << 12;
pub const SAMPLE_STACK_USER: u64 = 1 << 13;

/// The x86_64 user registers framehop needs, in `perf_regs.h` bit order: BP (6), SP (7), IP (8). The kernel
/// writes the values in ascending bit order.
#[cfg(target_arch = "x86_64")]
pub const REGS_MASK: u64 = (1 << 6) | (1 << 7) | (1 << 8);
/// aarch64: X29 (frame pointer, 29), LR (30), SP (31), PC (32).
#[cfg(target_arch = "aarch64")]
pub const REGS_MASK: u64 = (1 << 29) | (1 << 30) | (1 << 31) | (1 << 32);
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
pub const REGS_MASK: u64 = 0;

const FLAG_DISABLED: u64 = 1 << 0;
const FLAG_INHERIT: u64 = 1 << 1;
const FLAG_EXCLUDE_KERNEL: u64 = 1 << 5;
const FLAG_EXCLUDE_HV: u64 = 1 << 6;
/// `mmap` must be set beside `mmap2`: the kernel counts mmap listeners by this bit alone.
const FLAG_MMAP: u64 = 1 << 8;
const FLAG_COMM: u64 = 1 << 9;
const FLAG_TASK: u64 = 1 << 13;
const FLAG_WATERMARK: u64 = 1 << 14;
const FLAG_SAMPLE_ID_ALL: u64 = 1 << 18;
const FLAG_MMAP2: u64 = 1 << 23;
const FLAG_COMM_EXEC: u64 = 1 << 24;

/// `struct perf_event_attr` up to `PERF_ATTR_SIZE_VER5`, unions named by the member this crate uses.
#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
struct Attr {
    kind: u32,
    size: u32,
    config: u64,
    sample_period: u64,
    sample_type: u64,
    read_format: u64,
    flags: u64,
    wakeup_watermark: u32,
    bp_type: u32,
    config1: u64,
    config2: u64,
    branch_sample_type: u64,
    sample_regs_user: u64,
    sample_stack_user: u32,
    clockid: i32,
    sample_regs_intr: u64,
    aux_watermark: u32,
    sample_max_stack: u16,
    reserved_2: u16,
}

/// What one event samples.
#[derive(Debug, Clone, Copy)]
pub struct EventConfig {
    /// Nanoseconds of CPU time between samples.
    pub period_ns: u64,
    /// Leave kernel frames and kernel-mode samples out (`exclude_kernel`).
    pub exclude_kernel: bool,
    /// Bytes of user stack copied per sample (0: no DWARF unwinding data).
    pub stack_bytes: u32,
    /// Whether the event carries mmap2/comm/task records (one event per ring is enough, every event is simpler).
    pub side_records: bool,
    /// Bytes of new data that wake a `poll` on the ring.
    pub wakeup_bytes: u32,
}

impl EventConfig {
    /// The `sample_type` bits this configuration asks for (the record parser needs the same value).
    pub fn sample_type(&self) -> u64 {
        let mut t = SAMPLE_IP | SAMPLE_TID | SAMPLE_TIME | SAMPLE_CALLCHAIN;
        if self.stack_bytes > 0 && REGS_MASK != 0 {
            t |= SAMPLE_REGS_USER | SAMPLE_STACK_USER;
        }
        t
    }

    fn attr(&self) -> Attr {
        let mut flags = FLAG_INHERIT | FLAG_EXCLUDE_HV | FLAG_SAMPLE_ID_ALL | FLAG_WATERMARK;
        if self.exclude_kernel {
            flags |= FLAG_EXCLUDE_KERNEL;
        }
        if self.side_records {
            flags |= FLAG_MMAP | FLAG_MMAP2 | FLAG_COMM | FLAG_COMM_EXEC | FLAG_TASK;
        }
        let sample_type = self.sample_type();
        let stack = sample_type & SAMPLE_STACK_USER != 0;
        Attr {
            kind: TYPE_SOFTWARE,
            size: ATTR_SIZE,
            config: SW_CPU_CLOCK,
            sample_period: self.period_ns.max(10_000),
            sample_type,
            flags,
            wakeup_watermark: self.wakeup_bytes.max(1),
            sample_regs_user: if stack { REGS_MASK } else { 0 },
            sample_stack_user: if stack { self.stack_bytes & !7 } else { 0 },
            ..Attr::default()
        }
    }
}

/// `perf_event_open(attr, pid, cpu, -1, PERF_FLAG_FD_CLOEXEC)`.
pub fn open(config: &EventConfig, tid: i32, cpu: i32) -> io::Result<OwnedFd> {
    let attr = config.attr();
    open_attr(&attr, tid, cpu, false)
}

/// A probe event: a counting-capable `cpu-clock` sampler on `tid`, created disabled (nothing is ever sampled).
pub fn open_probe(tid: i32, exclude_kernel: bool) -> io::Result<OwnedFd> {
    let mut attr =
        EventConfig { period_ns: 1_000_000, exclude_kernel, stack_bytes: 0, side_records: false, wakeup_bytes: 1 }
            .attr();
    attr.flags &= !FLAG_INHERIT;
    open_attr(&attr, tid, -1, true)
}

fn open_attr(attr: &Attr, tid: i32, cpu: i32, disabled: bool) -> io::Result<OwnedFd> {
    let mut attr = *attr;
    if disabled {
        attr.flags |= FLAG_DISABLED;
    }
    const PERF_FLAG_FD_CLOEXEC: libc::c_ulong = 8;
    // SAFETY: `attr` is a valid, fully initialised `perf_event_attr` of the declared size that outlives the call;
    // the other arguments are plain integers.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_perf_event_open,
            &attr as *const Attr,
            tid as libc::pid_t,
            cpu as libc::c_int,
            -1 as libc::c_int,
            PERF_FLAG_FD_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the kernel returned a new file descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}

/// `PERF_EVENT_IOC_SET_OUTPUT`: `fd`'s records go to `target`'s ring (same CPU).
pub fn set_output(fd: &OwnedFd, target: &OwnedFd) -> io::Result<()> {
    const SET_OUTPUT: libc::c_ulong = 0x2405;
    // SAFETY: both are open perf event descriptors; the ioctl takes the target descriptor as its argument.
    let r = unsafe { libc::ioctl(fd.as_raw_fd(), SET_OUTPUT as _, target.as_raw_fd()) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// `PERF_EVENT_IOC_DISABLE`.
pub fn disable(fd: &OwnedFd) {
    const DISABLE: libc::c_ulong = 0x2401;
    // SAFETY: an open perf event descriptor; the argument is unused.
    unsafe { libc::ioctl(fd.as_raw_fd(), DISABLE as _, 0) };
}

/// The mmap'd ring of one event: a metadata page and `data_size` bytes of records.
pub struct Ring {
    fd: OwnedFd,
    base: *mut u8,
    len: usize,
    data_offset: usize,
    data_size: usize,
}

// SAFETY: the mapping is owned by this value alone and only read through `&mut self`.
unsafe impl Send for Ring {}

impl Ring {
    /// Maps `1 + pages` pages of `fd` (pages a power of two).
    pub fn map(fd: OwnedFd, pages: usize) -> io::Result<Ring> {
        // SAFETY: sysconf has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as usize;
        let len = page * (pages + 1);
        // SAFETY: a new shared mapping of a perf event descriptor; the kernel validates the size.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(Ring { fd, base: base.cast(), len, data_offset: page, data_size: page * pages })
    }

    /// The event descriptor that owns the ring.
    pub fn fd(&self) -> &OwnedFd {
        &self.fd
    }

    /// Appends every complete record written since the last call to `out` (each record's bytes contiguous, a
    /// record that wraps around the ring is copied straight), and frees the space for the kernel.
    pub fn drain(&mut self, out: &mut Vec<u8>) {
        // SAFETY: offsets 1024 and 1032 of the metadata page are `data_head` and `data_tail` (u64, aligned);
        // the page stays mapped while `self` lives.
        let head_ptr = unsafe { self.base.add(1024) } as *const u64;
        let tail_ptr = unsafe { self.base.add(1032) } as *mut u64;
        // SAFETY: see above; volatile because the kernel writes `data_head` concurrently.
        let head = unsafe { std::ptr::read_volatile(head_ptr) };
        fence(Ordering::Acquire);
        // SAFETY: see above; only this reader writes `data_tail`.
        let tail = unsafe { std::ptr::read_volatile(tail_ptr) };
        let available = head.wrapping_sub(tail) as usize;
        if available > 0 && available <= self.data_size {
            let start = (tail as usize) % self.data_size;
            let first = available.min(self.data_size - start);
            // SAFETY: both ranges lie inside the data area of the mapping.
            unsafe {
                let data = self.base.add(self.data_offset);
                out.extend_from_slice(std::slice::from_raw_parts(data.add(start), first));
                out.extend_from_slice(std::slice::from_raw_parts(data, available - first));
            }
        }
        fence(Ordering::Release);
        // SAFETY: see above.
        unsafe { std::ptr::write_volatile(tail_ptr, head) };
    }
}

impl Drop for Ring {
    fn drop(&mut self) {
        // SAFETY: `base`/`len` are the mapping made in `map`, unmapped once.
        unsafe { libc::munmap(self.base.cast(), self.len) };
    }
}

/// The CPUs the kernel has online (`/sys/devices/system/cpu/online`, e.g. `0-3,6`), or `0..available_parallelism`.
pub fn online_cpus() -> Vec<i32> {
    let parsed = std::fs::read_to_string("/sys/devices/system/cpu/online").ok().and_then(|s| parse_cpu_list(s.trim()));
    parsed.unwrap_or_else(|| {
        let n = std::thread::available_parallelism().map_or(1, |n| n.get());
        (0..n as i32).collect()
    })
}

/// Parses a kernel CPU list (`0-3,6`).
pub fn parse_cpu_list(s: &str) -> Option<Vec<i32>> {
    let mut out = Vec::new();
    for part in s.split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (i32, i32) = (a.parse().ok()?, b.parse().ok()?);
                if b < a || b - a > 65_536 {
                    return None;
                }
                out.extend(a..=b);
            }
            None => out.push(part.parse().ok()?),
        }
    }
    (!out.is_empty()).then_some(out)
}

/// `poll(2)` on the rings' descriptors for readability, at most `timeout_ms`.
pub fn wait(fds: &[RawFd], timeout_ms: i32) {
    let mut polls: Vec<libc::pollfd> =
        fds.iter().map(|&fd| libc::pollfd { fd, events: libc::POLLIN, revents: 0 }).collect();
    if polls.is_empty() {
        std::thread::sleep(std::time::Duration::from_millis(timeout_ms.max(0) as u64));
        return;
    }
    // SAFETY: `polls` is a valid array of `pollfd` of the given length.
    unsafe { libc::poll(polls.as_mut_ptr(), polls.len() as libc::nfds_t, timeout_ms) };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cpu_list_with_ranges_and_singles_is_read_in_order() {
        assert_eq!(parse_cpu_list("0-3,6"), Some(vec![0, 1, 2, 3, 6]));
        assert_eq!(parse_cpu_list("0"), Some(vec![0]));
        assert_eq!(parse_cpu_list("3-1"), None);
        assert_eq!(parse_cpu_list("x"), None);
    }

    #[test]
    fn the_attribute_struct_has_the_size_it_declares() {
        assert_eq!(std::mem::size_of::<Attr>(), ATTR_SIZE as usize);
    }
}
