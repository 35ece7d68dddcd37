//! The `cpu` kind's work: a set number of CPU microseconds per request, spent in named functions that a profile
//! of the server shows (`parse_request`, `render_response`, `slow_path`), every one of them through the one shared
//! [`spin`]. A regression given as `slow_path` time is spent in `spin` *called from* `slow_path`: `slow_path`'s
//! own (self) time does not change, so only real call chains can tell that it got slower.
//!
//! The time is thread CPU time (`CLOCK_THREAD_CPUTIME_ID`), not wall time: a server preempted mid-request still
//! spends the same CPU per request, which is what `target_cpu_per_request` and a CPU profile measure.

use std::hint::black_box;
use std::time::Duration;

/// The share of `work` spent parsing; the rest renders the response.
const PARSE_SHARE: u32 = 5;

/// Does one request's work: `work` of CPU split between parsing and rendering, then `slow` in the slow path.
#[inline(never)]
pub fn handle_request(work: Duration, slow: Duration) -> u64 {
    let parse = work / PARSE_SHARE;
    let mut acc = parse_request(parse);
    acc ^= render_response(work.saturating_sub(parse));
    acc ^= slow_path(slow);
    black_box(acc)
}

#[inline(never)]
fn parse_request(cpu: Duration) -> u64 {
    black_box(spin(cpu))
}

#[inline(never)]
fn render_response(cpu: Duration) -> u64 {
    black_box(spin(cpu))
}

#[inline(never)]
fn slow_path(cpu: Duration) -> u64 {
    if cpu.is_zero() {
        return 0;
    }
    black_box(spin(cpu))
}

/// Spends `cpu` of this thread's CPU time in arithmetic, reading the thread's CPU clock every few thousand
/// operations (a clock read is a system call: about a microsecond at most).
#[inline(never)]
fn spin(cpu: Duration) -> u64 {
    let Some(start) = thread_cpu() else { return 0 };
    let until = start.saturating_add(cpu);
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    loop {
        for _ in 0..256 {
            x = black_box(x.rotate_left(7) ^ x.wrapping_mul(0x2545_f491_4f6c_dd1d));
        }
        match thread_cpu() {
            Some(now) if now < until => {}
            _ => return x,
        }
    }
}

/// This thread's CPU time.
fn thread_cpu() -> Option<Duration> {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec; the clock id is a constant the kernel knows.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    (rc == 0).then(|| Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_spends_at_least_its_work_in_cpu_time() {
        let before = thread_cpu().expect("thread clock");
        handle_request(Duration::from_micros(500), Duration::from_micros(200));
        let spent = thread_cpu().expect("thread clock") - before;
        assert!(spent >= Duration::from_micros(700), "{spent:?}");
    }

    #[test]
    fn no_slow_path_time_spins_nothing_there() {
        assert_eq!(slow_path(Duration::ZERO), 0);
    }
}
