//! The types a phase's caller and the engine's parts share: where the load goes ([`Target`]), how the caller
//! answers a tick ([`Control`]) and stops a phase ([`StopSignal`]), the opening's progress and the engine's
//! errors. A leaf: it names no other module of the engine but `tls`, which names none of these.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::tls;

/// Where the load goes. Resolved by the CLI (from the plan's `TargetPlan`, after the target is up).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub addr: SocketAddr,
    /// The value of the `Host` header (unless the request sets its own).
    pub host: String,
    /// HTTPS: how to speak TLS to the target (`None`: plain HTTP).
    pub tls: Option<tls::TlsClient>,
    /// The HTTP version to speak (`target.protocol`): HTTP/2 is h2 over TLS (by ALPN with `auto`) or h2c with
    /// prior knowledge over plain TCP.
    pub protocol: loadgate_model::Protocol,
}

/// While a phase's keep-alive connections open, before it measures: how far the opening got, about once a
/// second, and once more (`done`) when every slot has tried, if it was reported before.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpeningProgress {
    /// The connections the phase opens before its start.
    pub connections: u64,
    pub opened: u64,
    /// Connects that failed for good (refused, timed out, no local address, ...).
    pub failed: u64,
    /// Since the workers were started.
    pub elapsed: Duration,
    /// Every slot has tried: the phase starts measuring now.
    pub done: bool,
}

/// The answer of an `on_tick` callback.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Control {
    Continue,
    /// End the phase now; the reason is recorded as the result's `aborted`.
    Abort(String),
}

/// Set from another thread (Ctrl-C, the target died) to end the phase early; checked by each pacer tick, never
/// per request. Clones share the same signal.
#[derive(Debug, Clone, Default)]
pub struct StopSignal {
    inner: Arc<StopInner>,
}

#[derive(Debug, Default)]
struct StopInner {
    stopped: AtomicBool,
    reason: Mutex<Option<String>>,
}

impl StopSignal {
    pub fn new() -> Self {
        Self::default()
    }

    /// Asks the phase to stop. The first reason given is kept.
    pub fn stop(&self, reason: impl Into<String>) {
        if let Ok(mut r) = self.inner.reason.lock() {
            if r.is_none() {
                *r = Some(reason.into());
            }
        }
        self.inner.stopped.store(true, Ordering::Release);
    }

    pub fn is_stopped(&self) -> bool {
        self.inner.stopped.load(Ordering::Acquire)
    }

    /// Why the phase was stopped, once it was.
    pub fn reason(&self) -> Option<String> {
        if !self.is_stopped() {
            return None;
        }
        self.inner.reason.lock().ok().and_then(|r| r.clone())
    }
}

/// Why a phase could not run at all. Anything that happens on the network is a counted result instead.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("cannot start worker thread {worker}: {source}")]
    Spawn { worker: usize, source: std::io::Error },
    #[error("worker {worker} cannot create its event loop (epoll): {source}")]
    Runtime { worker: usize, source: std::io::Error },
    #[error("cannot pin worker {worker} to CPU {cpu}: {source}")]
    Pin { worker: usize, cpu: u32, source: std::io::Error },
    #[error("the phase splits its load over {planned} workers but {given} worker threads were given")]
    WorkerMismatch { planned: usize, given: usize },
    #[error("the plan cannot be run: {0}")]
    InvalidPlan(String),
    #[error("the request cannot be sent: {0}")]
    InvalidRequest(String),
    #[error("{0} is not supported by this engine")]
    Unsupported(String),
    #[error("worker {worker} stopped unexpectedly")]
    WorkerLost { worker: usize },
}
