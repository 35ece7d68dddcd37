//! The few system calls the engine makes outside the network: CPU pinning and per-thread CPU time.

use std::io;

/// Pins the calling thread to one CPU with `sched_setaffinity`.
pub(crate) fn pin_current_thread(cpu: u32) -> io::Result<()> {
    let cpu = usize::try_from(cpu).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    if cpu >= libc::CPU_SETSIZE as usize {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("CPU {cpu} is beyond CPU_SETSIZE")));
    }
    // SAFETY: cpu_set_t is plain data; zeroed is its empty set, and `cpu` is below CPU_SETSIZE.
    let rc = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_ZERO(&mut set);
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set)
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Lets the kernel fire the calling thread's timers this many nanoseconds late at most (the default slack
/// is 50 us), so that the pacer wakes when a request is due rather than up to 50 us after.
pub(crate) fn set_timer_slack(ns: u64) {
    // SAFETY: PR_SET_TIMERSLACK takes its value by argument and touches no memory of ours.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, ns as libc::c_ulong, 0, 0, 0) };
}

/// CPU time the calling thread has used so far: (user, system) seconds.
pub(crate) fn thread_cpu_seconds() -> (f64, f64) {
    // SAFETY: rusage is plain data and getrusage only writes into it.
    let (rc, usage) = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        let rc = libc::getrusage(libc::RUSAGE_THREAD, &mut usage);
        (rc, usage)
    };
    if rc != 0 {
        return (0.0, 0.0);
    }
    let secs = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 / 1e6;
    (secs(usage.ru_utime), secs(usage.ru_stime))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thread_cpu_time_grows_with_work() {
        let (u0, s0) = thread_cpu_seconds();
        let mut x = 0u64;
        let start = std::time::Instant::now();
        while start.elapsed().as_millis() < 30 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
        }
        std::hint::black_box(x);
        let (u1, s1) = thread_cpu_seconds();
        assert!(u1 + s1 > u0 + s0);
    }

    #[test]
    fn pinning_to_an_allowed_cpu_works_and_a_huge_cpu_fails() {
        std::thread::spawn(|| {
            // SAFETY: sched_getcpu has no preconditions.
            let cpu = unsafe { libc::sched_getcpu() };
            assert!(pin_current_thread(u32::try_from(cpu).unwrap()).is_ok());
            assert!(pin_current_thread(100_000).is_err());
        })
        .join()
        .unwrap();
    }
}
