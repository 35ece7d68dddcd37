//! Runs on several generators: a shard's synchronised start (`--start-at`, `--barrier`), the merge of shard
//! results into one run with its reports (`loadgate merge`), and local shards (`loadgate run --shards N`: N
//! processes of loadgate on this machine, started as targets are, then merged).
//!
//! A shard is an ordinary run of its slice of the plan ([`loadgate_plan::shard()`]) through [`crate::run()`]:
//! the only differences are that it waits for the common start before its first phase and records its skew
//! ([`ShardInfo`]). The merge is [`loadgate_results::merge_shards`] (exact: histograms added), then the same
//! report writer as every run.

use std::io::{BufRead as _, BufReader, Write as _};
use std::net::{TcpListener, TcpStream, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use loadgate_plan::{ExecutionPlan, Slice};
use loadgate_results::{OutcomeStatus, ShardInfo, ShardPart};

use crate::event::{Event, Observer};
use crate::interrupt::Interrupt;
use crate::reports::ReportWriter;
use crate::run::RunOutcome;
use crate::RunError;

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

/// Merges shard results into one run and writes its reports into `dir` (results.json, junit.xml, report.md,
/// ...), as `loadgate run` does. `Err` when nothing can be merged (no shard result at all).
///
/// `interrupted`: the run was stopped (Ctrl-C) before its shards finished; it is then incomplete (exit 3), as
/// any interrupted run.
///
/// `plan`: the whole plan, when the caller has it (`run --shards N`, or rebuilt from the spec the shard results
/// embed): the sweep SLOs are then judged once, on the merged cells, as `loadgate run` judges them. Without it
/// the merged sweeps carry their knees but no sweep SLO verdicts, and a warning says so.
pub fn merge_and_report(
    parts: Vec<ShardPart>,
    options: MergeOptions<'_>,
    dir: &Path,
    observer: &mut dyn Observer,
) -> Result<RunOutcome, RunError> {
    let MergeOptions { plan, baseline, template, interrupted, history } = options;
    let judged_per_shard = parts.iter().any(|p| p.results.sweeps.iter().any(|s| !s.verdicts.is_empty()));
    let mut results =
        loadgate_results::merge_shards_against(parts, baseline).map_err(|e| RunError::Shards(e.to_string()))?;
    match plan.filter(|p| p.hash == results.spec.plan_hash) {
        Some(plan) => {
            let merged = results.outcome.clone();
            crate::run::settle(&mut results, plan);
            // A problem of the merge itself (a missing or late shard) outranks an SLO verdict.
            if matches!(merged.status, OutcomeStatus::RunFailed | OutcomeStatus::InvalidMeasurement) {
                results.outcome = merged;
            }
        }
        None if judged_per_shard => {
            observer.event(&Event::Warning(
                "the shards' plan could not be rebuilt, so the sweep SLOs (`sweep:`) were not judged on the merge"
                    .to_owned(),
            ));
        }
        None => {}
    }
    if interrupted {
        results.finished_at = None;
        results.outcome = loadgate_results::outcome(&results);
    }
    crate::memory::remember(&mut results, plan.and_then(|p| p.history.as_ref()), history, None, observer);
    std::fs::create_dir_all(dir).map_err(|source| RunError::OutputDir { path: dir.to_path_buf(), source })?;
    let mut reports = ReportWriter::new(dir, template, Default::default());
    let mut failures = Vec::new();
    for f in reports.write_all(&mut results) {
        observer.event(&Event::ReportNotWritten { failure: &f });
        failures.push(f);
    }
    observer.event(&Event::RunFinished { results: &results, dir });
    Ok(RunOutcome { dir: dir.to_path_buf(), results: Some(results), skipped: None, write_failures: failures })
}

/// How [`merge_and_report`] judges the merge.
#[derive(Debug, Default)]
pub struct MergeOptions<'a> {
    /// The whole plan, when the caller has it (its sweep SLOs and `history:` checks are judged on the merge).
    pub plan: Option<&'a ExecutionPlan>,
    /// `--baseline`: relative SLOs are judged against it.
    pub baseline: Option<&'a loadgate_results::RunResults>,
    /// A minijinja template that replaces the built-in Markdown report.
    pub template: Option<String>,
    /// The run was stopped before its shards finished: it is incomplete.
    pub interrupted: bool,
    /// `--history STORE`: the merge is recorded, and the plan's `history:` checks judged against the store.
    pub history: Option<&'a crate::memory::HistoryRequest>,
}

/// `loadgate run SPEC --shards N`: what to start.
#[derive(Debug, Clone)]
pub struct LocalShards {
    /// The loadgate executable.
    pub exe: PathBuf,
    /// The arguments of `loadgate run` that every shard gets (the spec, `--set`, ...), without `--out`.
    pub args: Vec<String>,
    pub count: u32,
    pub run_id: String,
    /// `--baseline`: relative SLOs are judged against it on the merge.
    pub baseline: Option<loadgate_results::RunResults>,
    /// `--history STORE`: the merge is recorded (the shards never are).
    pub history: Option<crate::memory::HistoryRequest>,
}

/// Starts `count` shard processes of `exe` on this machine, each in its own process group stopped with
/// loadgate (a watchdog; Ctrl-C stops them all), meeting at a barrier on a free loopback port, waits for them
/// and merges their shard results into `<out_root>/<plan name>/` with [`merge_and_report`].
pub fn run_local(
    plan: &ExecutionPlan,
    local: &LocalShards,
    out_root: &Path,
    template: Option<String>,
    interrupt: &Interrupt,
    observer: &mut dyn Observer,
) -> Result<RunOutcome, RunError> {
    let dir = out_root.join(&plan.name);
    if let Some(previous) = crate::run::own_output_dir(&dir)? {
        observer.event(&Event::Warning(format!(
            "the reports of an earlier run in {} were moved to {}",
            dir.display(),
            previous.display()
        )));
    }
    std::fs::create_dir_all(&dir).map_err(|source| RunError::OutputDir { path: dir.clone(), source })?;
    let port = TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| RunError::Shards(format!("no free port for the barrier: {e}")))?;
    // Each shard on its own part of the spec's generator CPUs, when the spec pins enough of them.
    let parts =
        plan.hardware.generator_cpus.as_ref().map(|g| (g, loadgate_machine::hardware::shard_parts(g, local.count)));
    if let Some((cpus, None)) = &parts {
        observer.event(&Event::Warning(format!(
            "the spec pins the generator to {} CPU{} ({cpus}) for {} shards: the shards share CPUs; pin at least \
             {} generator CPUs to give each shard its own",
            cpus.len(),
            if cpus.len() == 1 { "" } else { "s" },
            local.count,
            local.count
        )));
    }
    let mut shards = Vec::new();
    for index in 1..=local.count {
        let slice = Slice { index, count: local.count };
        let mut argv = vec![local.exe.display().to_string(), "run".to_owned()];
        argv.extend(local.args.iter().cloned());
        argv.extend([
            "--shard".to_owned(),
            slice.to_string(),
            "--run-id".to_owned(),
            local.run_id.clone(),
            "--barrier".to_owned(),
            format!("127.0.0.1:{port}"),
            "--out".to_owned(),
            out_root.display().to_string(),
        ]);
        if let Some(part) = parts.as_ref().and_then(|(_, p)| p.as_ref()?.get(index as usize - 1)) {
            argv.extend(["--shard-cpus".to_owned(), part.to_string()]);
        }
        let mut spec = loadgate_target::launch::LaunchSpec::new(argv, &dir);
        spec.log_name = format!("shard-{index}-of-{}", local.count);
        spec.stop_grace = Duration::from_secs(30);
        match loadgate_target::launch::Target::start(&spec) {
            Ok(t) => shards.push((slice, t)),
            Err(e) => {
                observer.event(&Event::Warning(format!("shard {slice} could not start: {e}")));
            }
        }
    }
    // Wait for every shard; an interrupt stops them all (SIGTERM: each writes what it has).
    let mut stopping = false;
    loop {
        if shards.iter().all(|(_, t)| t.exited().is_some()) {
            break;
        }
        if interrupt.is_interrupted() && !stopping {
            stopping = true;
            for (_, t) in &shards {
                let _ = t.stop();
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let mut parts = Vec::new();
    for (slice, t) in &shards {
        if let Some(exit) = t.exited().filter(|e| e.code != Some(0)) {
            observer.event(&Event::Warning(format!(
                "shard {slice} {} (its log: {})",
                exit.status,
                dir.join(format!("shard-{}-of-{}.stderr.log", slice.index, slice.count)).display()
            )));
        }
        let file = dir.join(slice.file_name());
        match std::fs::read_to_string(&file) {
            Ok(text) => match loadgate_results::shards::read_shards(&file.display().to_string(), &text) {
                Ok(p) => parts.extend(p),
                Err(e) => observer.event(&Event::Warning(e.to_string())),
            },
            Err(_) => observer.event(&Event::Warning(format!("shard {slice} wrote no result ({})", file.display()))),
        }
    }
    if parts.is_empty() {
        return Err(RunError::Shards(format!("no shard wrote a result (their logs are in {})", dir.display())));
    }
    // A shard that never reported is missing from the merge: `merge_shards` says so.
    let options = MergeOptions {
        plan: Some(plan),
        baseline: local.baseline.as_ref(),
        template,
        interrupted: interrupt.is_interrupted(),
        history: local.history.as_ref(),
    };
    merge_and_report(parts, options, &dir, observer)
}

/// `t` as RFC 3339 UTC (`2026-11-23T10:00:00Z`, or `2026-11-23T10:00:00.250Z` with `millis`).
pub fn rfc3339(t: SystemTime, millis: bool) -> String {
    let format = if millis { chrono::SecondsFormat::Millis } else { chrono::SecondsFormat::Secs };
    chrono::DateTime::<chrono::Utc>::from(t).to_rfc3339_opts(format, true)
}

/// Reads an RFC 3339 time: `2026-11-23T10:00:00Z`, with optional fractional seconds and a `+HH:MM` or `-HH:MM`
/// offset instead of `Z`. A date that does not exist (`2026-02-31`) is refused, not rolled into the next month.
pub fn parse_rfc3339(text: &str) -> Result<SystemTime, String> {
    let t = text.trim();
    let parsed = chrono::DateTime::parse_from_rfc3339(t)
        .map_err(|e| format!("`{text}` is not an RFC 3339 time such as 2026-11-23T10:00:00Z ({e})"))?;
    Ok(parsed.into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_round_trips() {
        let t = SystemTime::UNIX_EPOCH + Duration::from_millis(1_795_000_000_250);
        let s = rfc3339(t, true);
        assert_eq!(parse_rfc3339(&s).unwrap(), t);
        assert_eq!(parse_rfc3339("1970-01-01T01:00:00+01:00").unwrap(), SystemTime::UNIX_EPOCH);
        assert!(parse_rfc3339("yesterday").is_err());
        assert!(parse_rfc3339("2026-13-01T00:00:00Z").is_err());
        assert!(parse_rfc3339("2026-02-31T00:00:00Z").is_err(), "no such day: not rolled into March");
        assert!(parse_rfc3339("2028-02-29T00:00:00Z").is_ok());
        assert_eq!(rfc3339(SystemTime::UNIX_EPOCH, false), "1970-01-01T00:00:00Z");
    }

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
