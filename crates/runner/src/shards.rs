//! A shard's synchronised start (`--start-at`, `--barrier`): one run on several generators.
//!
//! A shard is an ordinary run of its slice of the plan ([`loadgate_plan::shard()`]) through [`crate::run()`]:
//! the only differences are that it waits for the common start before its first phase and records its skew
//! ([`ShardInfo`]). Merging shard results and running local shards is [`crate::merge`].

use std::io::{BufRead as _, BufReader, Write as _};
use std::net::{TcpListener, TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant, SystemTime};

use loadgate_plan::Slice;
use loadgate_results::ShardInfo;

use crate::clock::rfc3339;
use crate::event::{Event, Observer};
use crate::interrupt::Interrupt;

/// The barrier's common start is this far ahead of the moment the last shard arrived, so that the release
/// messages reach every shard before it.
pub const BARRIER_LEAD: Duration = Duration::from_millis(500);

/// How a shard of a run starts its first phase.
#[derive(Debug, Clone)]
pub struct ShardRun {
    pub slice: Slice,
    /// The identity shared by the run's shards.
    pub run_id: String,
    pub start: StartSync,
}

/// When a shard starts its first phase.
#[derive(Debug, Clone)]
pub enum StartSync {
    /// As soon as its target is up (no planned start, no skew).
    Now,
    /// At an absolute time (`--start-at`), by this host's clock.
    At(SystemTime),
    /// When all shards have met at the barrier (`--barrier HOST:PORT`): shard 1 listens on PORT, the others
    /// connect to HOST:PORT, retrying for `timeout`.
    Barrier { addr: String, timeout: Duration },
}

/// Waits for the shard's start and says how it went: the [`ShardInfo`] of its results. `Err` when the barrier
/// could not be met (timeout, a foreign shard, interrupted): the shard then runs no load.
pub fn start(shard: &ShardRun, interrupt: &Interrupt, observer: &mut dyn Observer) -> Result<ShardInfo, String> {
    let planned = match &shard.start {
        StartSync::Now => None,
        StartSync::At(t) => Some(*t),
        StartSync::Barrier { addr, timeout } => {
            observer.event(&Event::Warning(format!(
                "shard {}: waiting at the barrier {addr} for the other shards (up to {}s)",
                shard.slice,
                timeout.as_secs()
            )));
            Some(barrier(addr, shard.slice, &shard.run_id, *timeout, interrupt)?)
        }
    };
    if let Some(at) = planned {
        while let Ok(left) = at.duration_since(SystemTime::now()) {
            if interrupt.is_interrupted() {
                return Err("interrupted while waiting for the common start".to_owned());
            }
            std::thread::sleep(left.min(Duration::from_millis(50)));
        }
    }
    let skew_ms = planned.map(|at| match SystemTime::now().duration_since(at) {
        Ok(late) => late.as_secs_f64() * 1000.0,
        Err(early) => -early.duration().as_secs_f64() * 1000.0,
    });
    let late = skew_ms.is_some_and(loadgate_results::shards::is_late);
    if late {
        observer.event(&Event::Warning(format!(
            "shard {} starts {:.0} ms after the planned start (late beyond {:.0} ms): a merge that includes it is invalid",
            shard.slice,
            skew_ms.unwrap_or(0.0),
            loadgate_results::shards::LATE_AFTER_MS
        )));
    }
    Ok(ShardInfo {
        index: shard.slice.index,
        count: shard.slice.count,
        run_id: shard.run_id.clone(),
        host: loadgate_machine::hardware::fingerprint(None).hostname.unwrap_or_default(),
        planned_start: planned.map(|t| rfc3339(t, true)),
        start_skew_ms: skew_ms,
        late,
        status: None,
        cpus: None,
    })
}

/// Meets the other shards: shard 1 listens and releases everyone, the others connect. Returns the common start:
/// shard 1's clock plus [`BARRIER_LEAD`], sent as microseconds since the epoch (the hosts' clocks are assumed
/// synchronised, as NTP keeps them; each shard's skew is measured by its own clock).
fn barrier(
    addr: &str,
    slice: Slice,
    run_id: &str,
    timeout: Duration,
    interrupt: &Interrupt,
) -> Result<SystemTime, String> {
    let deadline = Instant::now() + timeout;
    let hello = format!("LOADGATE-BARRIER {run_id} {slice}\n");
    if slice.index == 1 {
        let port = addr.rsplit_once(':').map(|(_, p)| p).unwrap_or(addr);
        let listener = TcpListener::bind(format!("0.0.0.0:{port}"))
            .or_else(|_| TcpListener::bind(format!("[::]:{port}")))
            .map_err(|e| format!("the barrier cannot listen on port {port}: {e}"))?;
        listener.set_nonblocking(true).map_err(|e| e.to_string())?;
        let mut arrived: Vec<(u32, TcpStream)> = Vec::new();
        while arrived.len() + 1 < slice.count as usize {
            if interrupt.is_interrupted() {
                return Err("interrupted at the barrier".to_owned());
            }
            if Instant::now() > deadline {
                let here: Vec<String> = arrived.iter().map(|(i, _)| i.to_string()).collect();
                return Err(format!(
                    "the barrier timed out after {}s with {} of {} shards (here: 1{})",
                    timeout.as_secs(),
                    arrived.len() + 1,
                    slice.count,
                    here.iter().map(|i| format!(", {i}")).collect::<String>()
                ));
            }
            match listener.accept() {
                Ok((stream, _)) => {
                    let _ = stream.set_nonblocking(false);
                    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
                    let mut line = String::new();
                    let mut reader = BufReader::new(stream.try_clone().map_err(|e| e.to_string())?);
                    if reader.read_line(&mut line).is_err() {
                        continue;
                    }
                    let mut words = line.split_whitespace();
                    let (magic, id, their) = (words.next(), words.next(), words.next());
                    let their: Option<Slice> = their.and_then(|s| s.parse().ok());
                    let mut stream = stream;
                    match (magic, id, their) {
                        (Some("LOADGATE-BARRIER"), Some(id), Some(s))
                            if id == run_id && s.count == slice.count && s.index != 1 =>
                        {
                            if !arrived.iter().any(|(i, _)| *i == s.index) {
                                arrived.push((s.index, stream));
                            }
                        }
                        _ => {
                            let _ = stream.write_all(
                                format!("REFUSED this barrier is for run {run_id} with {} shards\n", slice.count)
                                    .as_bytes(),
                            );
                        }
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => std::thread::sleep(Duration::from_millis(20)),
                Err(e) => return Err(format!("the barrier: {e}")),
            }
        }
        let start = SystemTime::now() + BARRIER_LEAD;
        let at = start.duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| d.as_micros());
        let go = format!("GO {at}\n");
        for (_, s) in &mut arrived {
            let _ = s.write_all(go.as_bytes());
        }
        return Ok(start);
    }
    let mut last_error = String::from("no attempt");
    while Instant::now() < deadline {
        if interrupt.is_interrupted() {
            return Err("interrupted at the barrier".to_owned());
        }
        let target = addr.to_socket_addrs().ok().and_then(|mut a| a.next());
        let attempt = target
            .ok_or_else(|| format!("cannot resolve {addr}"))
            .and_then(|a| TcpStream::connect_timeout(&a, Duration::from_secs(2)).map_err(|e| e.to_string()));
        match attempt {
            Ok(mut stream) => {
                if let Err(e) = stream.write_all(hello.as_bytes()) {
                    last_error = e.to_string();
                    continue;
                }
                // Wait for the release, waking now and then to notice an interrupt.
                let _ = stream.set_read_timeout(Some(Duration::from_millis(200)));
                let mut reader = BufReader::new(stream);
                let mut line = String::new();
                loop {
                    if interrupt.is_interrupted() {
                        return Err("interrupted at the barrier".to_owned());
                    }
                    if Instant::now() > deadline {
                        return Err(format!("the barrier at {addr} did not release within {}s", timeout.as_secs()));
                    }
                    match reader.read_line(&mut line) {
                        Ok(0) => {
                            return Err(format!("the barrier at {addr} closed without releasing: {}", line.trim()))
                        }
                        Ok(_) if line.ends_with('\n') => break,
                        Ok(_) => {}
                        Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {
                        }
                        Err(e) => return Err(format!("the barrier at {addr}: {e}")),
                    }
                }
                let at = line.strip_prefix("GO ").and_then(|us| us.trim().parse::<u64>().ok());
                return match at {
                    Some(us) => Ok(SystemTime::UNIX_EPOCH + Duration::from_micros(us)),
                    None => Err(format!("the barrier at {addr} refused shard {slice}: {}", line.trim())),
                };
            }
            Err(e) => {
                last_error = e;
                std::thread::sleep(Duration::from_millis(200));
            }
        }
    }
    Err(format!("the barrier at {addr} could not be reached within {}s ({last_error})", timeout.as_secs()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_barrier_releases_every_shard() {
        let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let addr = format!("127.0.0.1:{port}");
        let others: Vec<_> = (2..=3)
            .map(|i| {
                let addr = addr.clone();
                std::thread::spawn(move || {
                    barrier(&addr, Slice { index: i, count: 3 }, "r", Duration::from_secs(20), &Interrupt::new())
                })
            })
            .collect();
        let first = barrier(&addr, Slice { index: 1, count: 3 }, "r", Duration::from_secs(20), &Interrupt::new());
        assert!(first.is_ok(), "{first:?}");
        for o in others {
            let t = o.join().unwrap();
            assert!(t.is_ok(), "{t:?}");
        }
    }
}
