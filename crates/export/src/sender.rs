//! One output's sender: a thread that POSTs payloads from a bounded queue. Offering a payload never waits: a
//! full queue drops it, counted. A payload that fails (no connection, a timeout, 429 or 5xx) is retried with
//! backoff; one the endpoint refuses (another 4xx) is not. Payloads are cumulative, so a dropped one loses
//! resolution, never counts.

use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::http::{post, Endpoint};

/// How a sender behaves.
#[derive(Debug, Clone)]
pub struct SendOptions {
    /// Payloads waiting at most; more are dropped.
    pub queue: usize,
    /// Each connect, write and read.
    pub timeout: Duration,
    /// Tries per payload (the first and the retries).
    pub attempts: u32,
    /// The first retry's wait, doubled for each next one.
    pub backoff: Duration,
}

impl Default for SendOptions {
    fn default() -> Self {
        SendOptions { queue: 64, timeout: Duration::from_secs(2), attempts: 4, backoff: Duration::from_millis(100) }
    }
}

/// What a sender did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SendStats {
    pub offered: u64,
    /// Accepted by the endpoint (2xx).
    pub sent: u64,
    /// Dropped because the queue was full, or still queued when the final flush ran out of time.
    pub dropped: u64,
    /// Given up on after the retries, or refused by the endpoint.
    pub failed: u64,
    pub retries: u64,
    /// The last failure, in words.
    pub last_error: Option<String>,
}

/// A running sender.
pub struct Sender {
    tx: Option<SyncSender<Vec<u8>>>,
    stats: Arc<Mutex<SendStats>>,
    done: Receiver<()>,
    thread: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for Sender {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sender").finish_non_exhaustive()
    }
}

impl Sender {
    /// Starts the thread; `headers` go with every request.
    pub fn start(endpoint: Endpoint, headers: Vec<(String, String)>, opts: SendOptions) -> std::io::Result<Sender> {
        let (tx, rx) = mpsc::sync_channel::<Vec<u8>>(opts.queue.max(1));
        let (done_tx, done) = mpsc::channel();
        let stats = Arc::new(Mutex::new(SendStats::default()));
        let thread = {
            let stats = Arc::clone(&stats);
            std::thread::Builder::new().name("loadgate-export".to_owned()).spawn(move || {
                while let Ok(body) = rx.recv() {
                    let outcome = deliver(&endpoint, &headers, &body, &opts, &stats);
                    if let Ok(mut s) = stats.lock() {
                        match outcome {
                            Ok(()) => s.sent += 1,
                            Err(e) => {
                                s.failed += 1;
                                s.last_error = Some(e);
                            }
                        }
                    }
                }
                let _ = done_tx.send(());
            })?
        };
        Ok(Sender { tx: Some(tx), stats, done, thread: Some(thread) })
    }

    /// Queues a payload, or drops it when the queue is full. Never waits.
    pub fn offer(&self, body: Vec<u8>) {
        let Some(tx) = &self.tx else { return };
        let full = matches!(tx.try_send(body), Err(TrySendError::Full(_) | TrySendError::Disconnected(_)));
        if let Ok(mut s) = self.stats.lock() {
            s.offered += 1;
            if full {
                s.dropped += 1;
            }
        }
    }

    /// Sends what is queued within `within`; what is left then counts as dropped (the thread is left to end
    /// on its own).
    pub fn finish(mut self, within: Duration) -> SendStats {
        self.tx = None;
        let finished = match self.done.recv_timeout(within) {
            Ok(()) | Err(RecvTimeoutError::Disconnected) => true,
            Err(RecvTimeoutError::Timeout) => false,
        };
        if finished {
            if let Some(t) = self.thread.take() {
                let _ = t.join();
            }
        }
        let mut s = self.stats.lock().map(|s| s.clone()).unwrap_or_default();
        let settled = s.sent + s.failed + s.dropped;
        if settled < s.offered {
            s.dropped += s.offered - settled;
            s.last_error.get_or_insert_with(|| "the final flush ran out of time".to_owned());
        }
        s
    }
}

fn deliver(
    endpoint: &Endpoint,
    headers: &[(String, String)],
    body: &[u8],
    opts: &SendOptions,
    stats: &Mutex<SendStats>,
) -> Result<(), String> {
    let mut wait = opts.backoff;
    let mut last = String::new();
    for attempt in 0..opts.attempts.max(1) {
        if attempt > 0 {
            if let Ok(mut s) = stats.lock() {
                s.retries += 1;
            }
            std::thread::sleep(wait);
            wait = (wait * 2).min(Duration::from_secs(5));
        }
        let started = Instant::now();
        match post(endpoint, headers, body, opts.timeout) {
            Ok(r) if (200..300).contains(&r.status) => return Ok(()),
            Ok(r) if r.status == 429 || r.status >= 500 => last = format!("HTTP {}: {}", r.status, r.body),
            Ok(r) => return Err(format!("HTTP {}: {}", r.status, r.body)),
            Err(e) => last = e,
        }
        // An endpoint that takes the whole timeout each time is not retried into a backlog.
        if started.elapsed() >= opts.timeout {
            break;
        }
    }
    Err(last)
}
