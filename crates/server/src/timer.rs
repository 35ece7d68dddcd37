//! The server's precise sleep: one timer thread per process, waking tasks at their exact deadline.

use std::time::Instant;

/// Sleeps until `until` to within tens of microseconds. tokio's timer rounds every sleep up to its next
/// millisecond tick, so a 2.0 ms and a 2.2 ms delay would both answer after about 3 ms; one timer thread per
/// process waits on a futex with the exact deadline instead and wakes the task.
pub(crate) async fn precise_sleep_until(until: Instant) {
    let (tx, rx) = tokio::sync::oneshot::channel();
    if precise_timer().send((until, tx)).is_err() {
        tokio::time::sleep_until(until.into()).await;
        return;
    }
    let _ = rx.await;
}

pub(crate) type TimerRequest = (Instant, tokio::sync::oneshot::Sender<()>);

pub(crate) fn precise_timer() -> std::sync::mpsc::Sender<TimerRequest> {
    static TIMER: std::sync::OnceLock<std::sync::Mutex<std::sync::mpsc::Sender<TimerRequest>>> =
        std::sync::OnceLock::new();
    let sender = TIMER.get_or_init(|| {
        let (tx, rx) = std::sync::mpsc::channel::<TimerRequest>();
        let spawned = std::thread::Builder::new().name("loadgate-serve-timer".to_owned()).spawn(move || {
            let mut due: std::collections::BinaryHeap<std::cmp::Reverse<(Instant, u64)>> = Default::default();
            let mut waiting: std::collections::HashMap<u64, tokio::sync::oneshot::Sender<()>> = Default::default();
            let mut next_id = 0u64;
            loop {
                let now = Instant::now();
                while let Some(std::cmp::Reverse((at, id))) = due.peek().copied() {
                    if at > now {
                        break;
                    }
                    due.pop();
                    if let Some(tx) = waiting.remove(&id) {
                        let _ = tx.send(());
                    }
                }
                let received = match due.peek() {
                    Some(std::cmp::Reverse((at, _))) => rx.recv_timeout(at.saturating_duration_since(now)),
                    None => rx.recv().map_err(|_| std::sync::mpsc::RecvTimeoutError::Disconnected),
                };
                match received {
                    Ok((at, tx)) => {
                        due.push(std::cmp::Reverse((at, next_id)));
                        waiting.insert(next_id, tx);
                        next_id += 1;
                    }
                    Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
                    Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => return,
                }
            }
        });
        let (fallback_tx, _) = std::sync::mpsc::channel();
        std::sync::Mutex::new(if spawned.is_ok() { tx } else { fallback_tx })
    });
    sender.lock().unwrap_or_else(|p| p.into_inner()).clone()
}
