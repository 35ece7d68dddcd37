//! A watchdog process per started target, so that no process of the target outlives loadgate, whatever kills
//! loadgate (SIGKILL, a second Ctrl-C, a crash).
//!
//! `PR_SET_PDEATHSIG` reaches only the direct child: a target started through a wrapper (`sh -c "python3
//! server.py"`) would leave the wrapper's children running and holding their port. So right after the target
//! starts, loadgate forks a small process that holds the read end of a pipe whose write end only loadgate
//! holds. When loadgate ends in any way, the kernel closes the write end, the watchdog's `read` returns 0, and
//! it sends SIGTERM to the target's whole process group, then SIGKILL after the grace period. When loadgate
//! stops the target itself, it writes one byte first: the watchdog exits without signalling anything (the group
//! id may since belong to someone else).
//!
//! The watchdog runs only async-signal-safe system calls after the fork (it is a fork of a multithreaded
//! process), ignores SIGINT, SIGTERM and SIGHUP (a Ctrl-C in the terminal reaches the whole foreground group,
//! and the watchdog must outlive loadgate to do its work), and closes every other descriptor, so that a second
//! target's watchdog cannot keep the first's pipe open.

use std::time::Duration;

/// The parent's side of a watchdog.
#[derive(Debug)]
pub struct Watchdog {
    pid: libc::pid_t,
    /// The write end; closing it (loadgate's exit) fires the watchdog.
    fd: libc::c_int,
}

impl Watchdog {
    /// Forks a watchdog for process group `pgid` that, once loadgate is gone, sends SIGTERM, waits up to `grace`
    /// for the group to go, then sends SIGKILL.
    pub fn arm(pgid: u32, grace: Duration) -> std::io::Result<Watchdog> {
        let mut fds = [0 as libc::c_int; 2];
        // SAFETY: fds is a valid array of two descriptors for pipe2 to fill.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        let (read_fd, write_fd) = (fds[0], fds[1]);
        let pgid = pgid as libc::pid_t;
        let polls = (grace.as_millis() / 50).clamp(1, 1200) as u32;
        // SAFETY: the child only makes async-signal-safe system calls (signal, dup2, close_range/close, read,
        // kill, nanosleep, _exit) on values computed before the fork, and never returns.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            let e = std::io::Error::last_os_error();
            // SAFETY: both descriptors were just created by pipe2 and are closed once.
            unsafe {
                libc::close(read_fd);
                libc::close(write_fd);
            }
            return Err(e);
        }
        if pid == 0 {
            // SAFETY: see above; this is the forked child.
            unsafe { watch(read_fd, pgid, polls) }
        }
        // SAFETY: the read end belongs to the watchdog now; the parent closes its copy once.
        unsafe { libc::close(read_fd) };
        Ok(Watchdog { pid, fd: write_fd })
    }

    /// Tells the watchdog that loadgate stopped the target itself, and reaps it.
    pub fn disarm(self) {
        let byte = [1u8];
        // SAFETY: fd is this watchdog's open write end, written and closed once; pid is our child.
        unsafe {
            libc::write(self.fd, byte.as_ptr().cast(), 1);
            libc::close(self.fd);
            let mut status = 0;
            libc::waitpid(self.pid, &mut status, 0);
        }
        std::mem::forget(self);
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        // Dropped without `disarm` (the target was not stopped): closing the write end fires the watchdog, as
        // loadgate's own exit would.
        // SAFETY: fd is this watchdog's open write end, closed once; pid is our child, reaped once.
        unsafe {
            libc::close(self.fd);
            let mut status = 0;
            libc::waitpid(self.pid, &mut status, 0);
        }
    }
}

/// The watchdog's body, in the forked child.
///
/// # Safety
/// Only in a child of `fork`, with `read_fd` the pipe's read end.
unsafe fn watch(read_fd: libc::c_int, pgid: libc::pid_t, polls: u32) -> ! {
    // SAFETY: signal, dup2, close_range, close, read, kill, nanosleep and _exit are async-signal-safe.
    unsafe {
        for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGPIPE] {
            libc::signal(sig, libc::SIG_IGN);
        }
        // Keep only the pipe (as fd 3): another target's pipe must not stay open here.
        if libc::dup2(read_fd, 3) != 3 {
            libc::_exit(1);
        }
        if libc::syscall(libc::SYS_close_range, 4u32, u32::MAX, 0u32) != 0 {
            let mut fd = 4;
            while fd < 65_536 {
                libc::close(fd);
                fd += 1;
            }
        }
        let mut byte = [0u8; 1];
        let n = loop {
            let n = libc::read(3, byte.as_mut_ptr().cast(), 1);
            if n >= 0 || *libc::__errno_location() != libc::EINTR {
                break n;
            }
        };
        if n == 1 {
            // Disarmed: loadgate stopped the target itself.
            libc::_exit(0);
        }
        libc::kill(-pgid, libc::SIGTERM);
        let pause = libc::timespec { tv_sec: 0, tv_nsec: 50_000_000 };
        for _ in 0..polls {
            if libc::kill(-pgid, 0) != 0 {
                libc::_exit(0);
            }
            libc::nanosleep(&pause, std::ptr::null_mut());
        }
        libc::kill(-pgid, libc::SIGKILL);
        libc::_exit(0);
    }
}
