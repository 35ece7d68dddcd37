//! Interruption: a flag that Ctrl-C, SIGTERM or a library user sets, and that a run checks between and during
//! phases. A run that is interrupted stops its phase, writes what it measured and reports `incomplete`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// The exit status of a process that gets a second Ctrl-C (or SIGTERM) while the first is being handled: the
/// shell's convention for death by SIGINT (128 + 2).
pub const SECOND_SIGNAL_EXIT: i32 = 130;

/// A shared "stop now" flag. Clones share it.
#[derive(Debug, Clone, Default)]
pub struct Interrupt {
    flag: Arc<AtomicBool>,
}

impl Interrupt {
    /// A flag nothing sets except [`Interrupt::interrupt`].
    pub fn new() -> Self {
        Self::default()
    }

    /// A flag that SIGINT and SIGTERM set. A second signal ends the process at once with
    /// [`SECOND_SIGNAL_EXIT`], for a user who does not want to wait for the reports. Meant for binaries:
    /// it installs process-wide signal handlers.
    pub fn from_signals() -> Self {
        let interrupt = Self::new();
        for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
            let _ =
                signal_hook::flag::register_conditional_shutdown(sig, SECOND_SIGNAL_EXIT, Arc::clone(&interrupt.flag));
            let _ = signal_hook::flag::register(sig, Arc::clone(&interrupt.flag));
        }
        interrupt
    }

    /// Asks every run that watches this flag to stop.
    pub fn interrupt(&self) {
        self.flag.store(true, Ordering::SeqCst);
    }

    pub fn is_interrupted(&self) -> bool {
        self.flag.load(Ordering::SeqCst)
    }
}
