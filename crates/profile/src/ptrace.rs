//! Letting an external profiler attach: under Yama's `ptrace_scope` 1 only a process's ancestors may trace
//! it, so a profiler started beside the target (py-spy, `command:` profilers) is refused unless the target
//! allows it. `allow_any_tracer` is meant for the launcher's `pre_exec` hook (between fork and exec).

use std::io;

/// `prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY)` on the calling process: any process of the same user may attach.
/// Async-signal-safe (one system call, no allocation), so it may run in a `pre_exec` hook. A kernel without
/// Yama answers EINVAL, which means there is nothing to allow, and returns `Ok`. The setting survives `exec`.
pub fn allow_any_tracer() -> io::Result<()> {
    // SAFETY: prctl with integer arguments only.
    let r = unsafe { libc::prctl(libc::PR_SET_PTRACER, libc::PR_SET_PTRACER_ANY, 0, 0, 0) };
    if r == 0 {
        return Ok(());
    }
    let e = io::Error::last_os_error();
    if e.raw_os_error() == Some(libc::EINVAL) {
        Ok(())
    } else {
        Err(e)
    }
}
