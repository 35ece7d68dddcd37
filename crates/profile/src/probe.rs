//! What sampling this process may do, found by opening (never enabling) a `cpu-clock` sampling event on this
//! process itself: a process may sample its own children exactly as it may sample itself (same user, and a
//! parent may trace its children under Yama's `ptrace_scope` 1).

use std::fs;

use crate::sys;

/// What sampling is allowed here.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Access {
    /// User and kernel stacks.
    Full,
    /// User stacks only; `advice` says what would allow kernel stacks.
    UserOnly {
        /// `kernel.perf_event_paranoid` when readable.
        paranoid: Option<i32>,
        advice: String,
    },
    /// No sampling at all; `advice` names the sysctl, capability or filter that refuses it.
    Denied { errno: i32, paranoid: Option<i32>, advice: String },
}

impl Access {
    /// The one-sentence warning to show, if sampling is restricted.
    pub fn warning(&self) -> Option<&str> {
        match self {
            Access::Full => None,
            Access::UserOnly { advice, .. } | Access::Denied { advice, .. } => Some(advice),
        }
    }
}

/// `kernel.perf_event_paranoid`, when readable.
pub fn paranoid() -> Option<i32> {
    fs::read_to_string("/proc/sys/kernel/perf_event_paranoid").ok()?.trim().parse().ok()
}

/// Tries a kernel+user event, then a user-only one, on this process.
pub fn probe() -> Access {
    let level = paranoid();
    match sys::open_probe(0, false) {
        Ok(_) => return Access::Full,
        Err(e) if !matches!(e.raw_os_error(), Some(libc::EACCES) | Some(libc::EPERM)) => {
            let errno = e.raw_os_error().unwrap_or(0);
            return Access::Denied { errno, paranoid: level, advice: advice(errno, false, level) };
        }
        Err(_) => {}
    }
    match sys::open_probe(0, true) {
        Ok(_) => Access::UserOnly {
            paranoid: level,
            advice: match level {
                Some(p) => format!(
                    "kernel stacks are not sampled: kernel.perf_event_paranoid is {p}; set it to 1 or lower \
                     (sysctl kernel.perf_event_paranoid=1) or grant CAP_PERFMON to sample them"
                ),
                None => "kernel stacks are not sampled: the kernel refused them; lower \
                         kernel.perf_event_paranoid to 1 or grant CAP_PERFMON to sample them"
                    .to_owned(),
            },
        },
        Err(e) => {
            let errno = e.raw_os_error().unwrap_or(0);
            Access::Denied { errno, paranoid: level, advice: advice(errno, true, level) }
        }
    }
}

/// The sentence for a refusal of `perf_event_open` with `errno` (`user_only`: even a user-only event failed).
pub fn refusal_advice(errno: i32, user_only: bool) -> String {
    advice(errno, user_only, paranoid())
}

fn advice(errno: i32, user_only: bool, level: Option<i32>) -> String {
    match errno {
        libc::ENOSYS => "perf_event_open is blocked (ENOSYS): a seccomp filter forbids it (Docker's default \
                         profile does); allow the perf_event_open system call, e.g. `--security-opt \
                         seccomp=unconfined` or `--cap-add PERFMON` on a recent Docker"
            .to_owned(),
        libc::EACCES | libc::EPERM if user_only => match level {
            Some(p) if p >= 3 => format!(
                "kernel.perf_event_paranoid is {p}, which forbids perf events to unprivileged processes \
                 (Debian's and Ubuntu's default); set it to 2 (sysctl kernel.perf_event_paranoid=2) or grant \
                 CAP_PERFMON"
            ),
            Some(p) => format!(
                "perf_event_open was refused ({}) although kernel.perf_event_paranoid is {p}: a seccomp filter \
                 or security module blocks it (Docker's default seccomp profile does), or the target belongs \
                 to another user; allow perf_event_open or grant CAP_PERFMON",
                if errno == libc::EPERM { "EPERM" } else { "EACCES" }
            ),
            None => "perf_event_open was refused and kernel.perf_event_paranoid is unreadable: grant \
                     CAP_PERFMON or allow perf events"
                .to_owned(),
        },
        libc::EACCES | libc::EPERM => "kernel stacks were refused; lower kernel.perf_event_paranoid to 1 or \
                                       grant CAP_PERFMON"
            .to_owned(),
        libc::ENOENT | libc::EOPNOTSUPP | libc::ENODEV => {
            format!("this kernel has no cpu-clock sampling event (errno {errno}); it needs CONFIG_PERF_EVENTS")
        }
        _ => format!("perf_event_open failed: {}", std::io::Error::from_raw_os_error(errno)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_refusal_names_the_sysctl_or_capability_to_change() {
        assert!(advice(libc::EACCES, true, Some(3)).contains("kernel.perf_event_paranoid is 3"));
        assert!(advice(libc::EACCES, true, Some(4)).contains("CAP_PERFMON"));
        assert!(advice(libc::ENOSYS, true, Some(2)).contains("seccomp"));
        assert!(advice(libc::EPERM, true, Some(2)).contains("seccomp"));
        assert!(advice(libc::EACCES, false, Some(2)).contains("kernel.perf_event_paranoid to 1"));
    }

    #[test]
    fn this_machine_allows_at_least_user_stacks_or_says_why_not() {
        match probe() {
            Access::Full => {}
            Access::UserOnly { advice, .. } => assert!(advice.contains("perf_event_paranoid")),
            Access::Denied { advice, .. } => assert!(!advice.is_empty()),
        }
    }
}
