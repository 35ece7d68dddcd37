//! `loadgate run`: pin, start the target, run every phase on the engine, gate, and write the reports after
//! each phase so that a crash, a dying target or Ctrl-C loses nothing that finished.

use std::net::{SocketAddr, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use loadgate_engine::{Control, StopSignal, Tick};
use loadgate_plan::{Arrival, ExecutionPlan, Phase, TargetPlan, WorkerPlan};
use loadgate_results::{
    Outcome, OutcomeStatus, Problem, RunResults, ScenarioResult, SpecInfo, TargetInfo, RESULTS_SCHEMA_VERSION,
};
use loadgate_spec::{Metric, SaturationPolicy, Spec, Threshold};
use loadgate_target::hardware::{self, PinningDecision};
use loadgate_target::launch::{self, LaunchSpec};
use loadgate_target::{builtin, sample};

use crate::exit::Exit;
use crate::output::Output;
use crate::progress::Progress;

/// What the command line adds to a run.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Reports go to `<out>/<spec name>/`.
    pub out: PathBuf,
    pub baseline: Option<RunResults>,
    pub template: Option<String>,
    pub color: bool,
    /// The spec file as given (for the reports); `None` for a spec built from flags.
    pub file: String,
    pub source_dir: Option<PathBuf>,
}

/// The files one run writes, all rewritten after every phase.
struct Reports {
    dir: PathBuf,
    template: Option<String>,
    written_hgrm: Vec<String>,
}

impl Reports {
    fn write_file(&self, name: &str, content: &str, out: &Output) -> bool {
        let path = self.dir.join(name);
        let tmp = self.dir.join(format!(".{name}.tmp"));
        let result = std::fs::write(&tmp, content).and_then(|()| std::fs::rename(&tmp, &path));
        if let Err(e) = result {
            let _ = std::fs::remove_file(&tmp);
            out.error(&format!("error: cannot write {}: {e}", path.display()));
            return false;
        }
        true
    }

    /// Writes results.json, junit.xml, report.md and each finished instance's .hgrm. Each file is written on
    /// its own: one that fails (a full disk) does not stop the others.
    fn write_all(&mut self, results: &mut RunResults, out: &Output) -> bool {
        results.sweeps = loadgate_results::sweeps(results);
        let results = &*results;
        let mut ok = true;
        match loadgate_results::to_json(results) {
            Ok(json) => ok &= self.write_file("results.json", &json, out),
            Err(e) => {
                out.error(&format!("error: cannot serialize results.json: {e}"));
                ok = false;
            }
        }
        match loadgate_report::junit(results) {
            Ok(xml) => ok &= self.write_file("junit.xml", &xml, out),
            Err(e) => {
                out.error(&format!("error: cannot render junit.xml: {e}"));
                ok = false;
            }
        }
        match loadgate_report::markdown(results, self.template.as_deref()) {
            Ok(md) => ok &= self.write_file("report.md", &md, out),
            Err(e) => {
                out.error(&format!("error: cannot render report.md: {e}"));
                ok = false;
            }
        }
        for s in &results.scenarios {
            let name = format!("{}.hgrm", loadgate_report::file_stem(&s.name));
            if !self.written_hgrm.contains(&name)
                && self.write_file(&name, &loadgate_results::hgrm(&s.histograms.latency), out)
            {
                self.written_hgrm.push(name);
            }
        }
        ok
    }
}

fn now_rfc3339() -> String {
    let secs = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    let days = secs / 86_400;
    let rem = secs % 86_400;
    let (h, m, s) = (rem / 3600, (rem % 3600) / 60, rem % 60);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let mo = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = if mo <= 2 { y + 1 } else { y };
    format!("{y:04}-{mo:02}-{d:02}T{h:02}:{m:02}:{s:02}Z")
}

/// The target once it is up: where the load goes, and the process if loadgate started one.
struct RunningTarget {
    engine_target: loadgate_engine::Target,
    base_url: String,
    process: Option<launch::Target>,
    kind: &'static str,
}

fn host_header(host: &str, port: u16) -> String {
    if port == 80 {
        host.to_owned()
    } else {
        format!("{host}:{port}")
    }
}

/// Splits `http://host:port/prefix` into host and port.
fn host_port(base_url: &str) -> Option<(String, u16)> {
    let rest = base_url.strip_prefix("http://")?;
    let authority = rest.split(['/', '?', '#']).next()?;
    if let Some(stripped) = authority.strip_prefix('[') {
        let (h, p) = stripped.split_once(']')?;
        let port = p.strip_prefix(':').map(|p| p.parse().ok()).unwrap_or(Some(80))?;
        return Some((format!("[{h}]"), port));
    }
    match authority.rsplit_once(':') {
        Some((h, p)) => Some((h.to_owned(), p.parse().ok()?)),
        None => Some((authority.to_owned(), 80)),
    }
}

fn resolve(base_url: &str) -> Result<(SocketAddr, String), String> {
    let (host, port) = host_port(base_url).ok_or_else(|| format!("`{base_url}` is not an http://host:port URL"))?;
    let lookup = host.trim_start_matches('[').trim_end_matches(']').to_owned();
    let addr = (lookup.as_str(), port)
        .to_socket_addrs()
        .map_err(|e| format!("cannot resolve {host}: {e}"))?
        .next()
        .ok_or_else(|| format!("{host} resolves to no address"))?;
    Ok((addr, host_header(&host, port)))
}

fn start_target(
    plan: &ExecutionPlan,
    target_cpus: Option<&loadgate_spec::units::CpuList>,
    dir: &Path,
    source_dir: Option<&Path>,
    out: &Output,
) -> Result<RunningTarget, String> {
    match &plan.target {
        TargetPlan::Url { base_url } => {
            let (addr, host) = resolve(base_url)?;
            if !launch::tcp_reachable(addr, Duration::from_secs(5)) {
                return Err(format!("the target {base_url} does not accept connections at {addr}"));
            }
            if target_cpus.is_some() {
                out.error("warning: `hardware.target.cpus` applies only to targets loadgate starts; the target given by URL runs as it is");
            }
            Ok(RunningTarget {
                engine_target: loadgate_engine::Target { addr, host },
                base_url: base_url.clone(),
                process: None,
                kind: "url",
            })
        }
        TargetPlan::Command { base_url, command, env, cwd, ready, stop_grace } => {
            let (addr, host) = resolve(base_url)?;
            let mut spec = LaunchSpec::new(command.clone(), dir);
            spec.env = env.clone();
            spec.cwd = cwd.as_ref().map(|c| match source_dir {
                Some(base) if Path::new(c).is_relative() => base.join(c),
                _ => PathBuf::from(c),
            });
            spec.cpus = target_cpus.cloned();
            spec.stop_grace = stop_grace.as_std();
            out.info(&format!("starting the target: {}", command.join(" ")));
            let process = launch::Target::start(&spec).map_err(|e| e.to_string())?;
            let waited = process.wait_ready(base_url, ready).map_err(|e| e.to_string())?;
            out.info(&format!("the target is ready after {:.1}s (pid {})", waited.as_secs_f64(), process.pid()));
            Ok(RunningTarget {
                engine_target: loadgate_engine::Target { addr, host },
                base_url: base_url.clone(),
                process: Some(process),
                kind: "command",
            })
        }
        TargetPlan::Builtin { server } => {
            let exe = std::env::current_exe().map_err(|e| format!("cannot find the loadgate executable: {e}"))?;
            let mut cfg = builtin::ServeConfig::new(server.clone());
            cfg.threads = target_cpus.map(|c| c.len()).unwrap_or(1).max(1);
            let mut spec = LaunchSpec::new(Vec::new(), dir);
            spec.cpus = target_cpus.cloned();
            spec.log_name = "builtin-target".to_owned();
            let (process, addr) =
                launch::Target::start_builtin(&exe, &cfg, &spec, Duration::from_secs(10)).map_err(|e| e.to_string())?;
            let base_url = format!("http://{addr}");
            process
                .wait_ready(&base_url, &launch::builtin_ready_probe(Duration::from_secs(10)))
                .map_err(|e| e.to_string())?;
            Ok(RunningTarget {
                engine_target: loadgate_engine::Target { addr, host: addr.to_string() },
                base_url,
                process: Some(process),
                kind: "builtin",
            })
        }
    }
}

/// Applies the spec's saturation policy to a phase's validity.
fn apply_saturation_policy(result: &mut ScenarioResult, phase: &Phase, policy: SaturationPolicy) {
    let invalidates = match policy {
        SaturationPolicy::Invalid => true,
        SaturationPolicy::Warn => false,
        SaturationPolicy::Auto => !matches!(phase.load.arrival, Arrival::Closed),
    };
    if !invalidates {
        return;
    }
    let (saturated, rest): (Vec<Problem>, Vec<Problem>) =
        result.validity.warnings.drain(..).partition(|p| p.kind == "generator_saturated");
    result.validity.warnings = rest;
    if !saturated.is_empty() {
        result.validity.valid = false;
        result.validity.problems.extend(saturated);
    }
}

/// Checks `abort_on_fail` SLOs once a second: a breach that can no longer be repaired stops the phase.
struct AbortWatch {
    window: Vec<hdrhistogram::Histogram<u64>>,
    completed: u64,
    failed: u64,
    errors: u64,
    non_2xx: u64,
}

const ABORT_WINDOW_SECONDS: usize = 5;

impl AbortWatch {
    fn new() -> Self {
        AbortWatch { window: Vec::new(), completed: 0, failed: 0, errors: 0, non_2xx: 0 }
    }

    fn check(&mut self, tick: &Tick<'_>) -> Control {
        self.window.push(tick.interval_latency.clone());
        if self.window.len() > ABORT_WINDOW_SECONDS {
            self.window.remove(0);
        }
        self.completed += tick.point.completed;
        self.errors += tick.point.errors;
        self.non_2xx += tick.point.non_2xx;
        self.failed += tick.point.errors + tick.point.non_2xx;
        for slo in &tick.phase.slos {
            let Some(abort) = slo.abort_on_fail else { continue };
            if !tick.phase.gate || tick.elapsed < abort.delay.as_std() || slo.request.is_some() {
                continue;
            }
            let observed = match (slo.metric, slo.threshold) {
                (Metric::Percentile(p), Threshold::Latency(_)) => {
                    self.window_latency(|h| h.value_at_quantile(p / 100.0))
                }
                (Metric::Max, Threshold::Latency(_)) => self.window_latency(|h| h.max()),
                (Metric::Mean, Threshold::Latency(_)) => self.window_latency(|h| h.mean() as u64),
                (Metric::ErrorRate, Threshold::Ratio(_)) => {
                    let attempts = self.completed + self.errors;
                    (attempts > 0).then(|| self.failed as f64 / attempts as f64)
                }
                (Metric::Errors, Threshold::Count(_)) => Some(self.errors as f64),
                (Metric::Non2xx, Threshold::Count(_)) => Some(self.non_2xx as f64),
                // Throughput and baselines are judged over the whole phase only.
                _ => None,
            };
            let Some(observed) = observed else { continue };
            let threshold = match slo.threshold {
                Threshold::Latency(d) => d.as_micros() as f64,
                Threshold::Ratio(p) => p.0,
                Threshold::Count(n) => n as f64,
                _ => continue,
            };
            if !slo.comparison.holds(observed, threshold) {
                let shown = match slo.threshold {
                    Threshold::Latency(_) => loadgate_results::format::latency(observed as u64),
                    Threshold::Ratio(_) => loadgate_results::format::ratio(observed),
                    _ => format!("{observed}"),
                };
                return Control::Abort(format!(
                    "abort_on_fail: `{slo}` breached after {:.0}s (observed {shown} over the last {}s)",
                    tick.elapsed.as_secs_f64(),
                    self.window.len()
                ));
            }
        }
        Control::Continue
    }

    fn window_latency(&self, f: impl Fn(&hdrhistogram::Histogram<u64>) -> u64) -> Option<f64> {
        let mut merged = loadgate_results::new_histogram();
        for h in &self.window {
            let _ = merged.add(h);
        }
        (!merged.is_empty()).then(|| f(&merged) as f64)
    }
}

/// Runs one compiled spec end to end and returns its exit code.
pub fn run_spec(
    spec: &Spec,
    plan: &ExecutionPlan,
    opts: &RunOptions,
    out: &Output,
    interrupted: &Arc<AtomicBool>,
) -> Exit {
    let run_start = Instant::now();
    let dir = opts.out.join(&plan.name);
    if let Err(e) = std::fs::create_dir_all(&dir) {
        out.error(&format!("error: cannot create the output directory {}: {e}", dir.display()));
        return Exit::RunFailed;
    }

    // 1. Pinning.
    let topo = match hardware::CpuTopology::read() {
        Ok(t) => t,
        Err(e) => {
            out.error(&format!("error: cannot read this machine's CPUs: {e}"));
            return Exit::RunFailed;
        }
    };
    let hw = &plan.hardware;
    let pinning =
        match hardware::check_pinning(&topo, hw.generator_cpus.as_ref(), hw.target_cpus.as_ref(), hw.on_mismatch) {
            PinningDecision::Run(p) => p,
            PinningDecision::Fail { message } => {
                out.error(&format!("error: {message}"));
                return Exit::RunFailed;
            }
            PinningDecision::Skip { message } => {
                out.info(&format!("skipped: {message}"));
                return Exit::Pass;
            }
        };
    for w in &pinning.warnings {
        out.error(&format!("warning: {w}"));
    }
    let worker_cpus = hardware::effective_worker_cpus(&hw.workers, pinning.generator.as_ref());
    let workers: Vec<WorkerPlan> =
        hw.workers.iter().zip(&worker_cpus).map(|(w, cpu)| WorkerPlan { index: w.index, cpu: *cpu }).collect();

    let mut results = RunResults {
        schema_version: RESULTS_SCHEMA_VERSION,
        loadgate_version: env!("CARGO_PKG_VERSION").to_owned(),
        spec: SpecInfo {
            name: plan.name.clone(),
            description: plan.description.clone(),
            file: opts.file.clone(),
            plan_hash: plan.hash.clone(),
            vars: plan.vars.iter().map(|(k, v)| (k.clone(), v.value.clone())).collect(),
            seed: plan.seed,
        },
        started_at: now_rfc3339(),
        finished_at: None,
        machine: hardware::fingerprint(opts.source_dir.as_deref()),
        pinning: pinning.to_results(worker_cpus.clone()),
        target: TargetInfo::default(),
        scenarios: Vec::new(),
        outcome: Outcome::in_progress(),
        sweeps: Vec::new(),
    };
    let mut reports = Reports { dir: dir.clone(), template: opts.template.clone(), written_hgrm: Vec::new() };
    for w in &spec.warnings {
        results.pinning.warnings.push(format!("spec: {}", w.message));
    }

    // 2. The target.
    let target = match start_target(plan, pinning.target.as_ref(), &dir, opts.source_dir.as_deref(), out) {
        Ok(t) => t,
        Err(message) => {
            out.error(&format!("error: the target could not be started: {message}"));
            results.outcome = Outcome::run_failed(vec![format!("the target could not be started: {message}")]);
            results.outcome = loadgate_results::outcome(&results);
            reports.write_all(&mut results, out);
            return Exit::RunFailed;
        }
    };
    results.target = TargetInfo {
        kind: target.kind.to_owned(),
        base_url: target.base_url.clone(),
        pid: target.process.as_ref().map(|p| p.pid()),
        exited: None,
        samples: Vec::new(),
        log_files: target
            .process
            .as_ref()
            .map(|p| p.log_files().iter().map(|f| f.display().to_string()).collect())
            .unwrap_or_default(),
    };
    out.info(&format!("target {} at {}", target.kind, target.base_url));

    // The current phase's stop signal; the target's death or Ctrl-C stops it.
    let current_stop: Arc<Mutex<StopSignal>> = Arc::new(Mutex::new(StopSignal::new()));
    let target_died = Arc::new(AtomicBool::new(false));
    if let Some(p) = &target.process {
        let stop = Arc::clone(&current_stop);
        let died = Arc::clone(&target_died);
        p.on_exit(move |exit| {
            if !exit.requested {
                died.store(true, Ordering::SeqCst);
                if let Ok(s) = stop.lock() {
                    s.stop(format!("the target exited: {}", exit.status));
                }
            }
        });
    }
    let watcher_done = Arc::new(AtomicBool::new(false));
    let watcher = {
        let stop = Arc::clone(&current_stop);
        let interrupted = Arc::clone(interrupted);
        let done = Arc::clone(&watcher_done);
        std::thread::spawn(move || {
            while !done.load(Ordering::SeqCst) {
                if interrupted.load(Ordering::SeqCst) {
                    if let Ok(s) = stop.lock() {
                        s.stop("interrupted (Ctrl-C)");
                    }
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        })
    };
    let sampler = sample::Sampler::start(sample::SamplerConfig {
        interval: Duration::from_secs(1),
        origin: run_start,
        target_pid: target.process.as_ref().map(|p| p.pid()),
        target_pgid: target.process.as_ref().map(|p| p.pgid()),
        worker_tids: Vec::new(),
    })
    .ok();

    // 3. The phases, in order.
    let mut run_failed: Vec<String> = Vec::new();
    for phase in &plan.phases {
        if interrupted.load(Ordering::SeqCst) || target_died.load(Ordering::SeqCst) {
            break;
        }
        let stop = StopSignal::new();
        if let Ok(mut s) = current_stop.lock() {
            *s = stop.clone();
        }
        let mut progress = Progress::start(phase, opts.color, out.quiet);
        let mut abort = AbortWatch::new();
        let phase_offset = run_start.elapsed().as_secs_f64();
        let outcome = loadgate_engine::run_phase(phase, &workers, &target.engine_target, &stop, &mut |tick| {
            progress.tick(tick);
            abort.check(tick)
        });
        progress.finish();
        match outcome {
            Ok(mut result) => {
                result.started_at_offset = phase_offset;
                apply_saturation_policy(&mut result, phase, plan.hardware.saturation);
                let baseline = opts.baseline.as_ref().and_then(|b| loadgate_results::baseline_for(b, &result));
                result.verdicts = loadgate_results::evaluate(&phase.slos, &result, baseline);
                out.info(&loadgate_report::text_summary(&result));
                let aborted_by_slo = result.aborted.as_deref().is_some_and(|a| a.starts_with("abort_on_fail"));
                results.scenarios.push(result);
                if let Some(s) = &sampler {
                    results.target.samples = s.snapshot().target;
                }
                if let Some(line) =
                    results.scenarios.last().and_then(|s| loadgate_results::phase_resources(&results, s).line())
                {
                    out.info(&format!("  Resources: {line}"));
                }
                results.outcome = loadgate_results::outcome(&results);
                reports.write_all(&mut results, out);
                if aborted_by_slo {
                    out.error(&format!("the run stops: {} breached an abort_on_fail SLO", phase.name));
                    break;
                }
            }
            Err(e) => {
                out.error(&format!("error: {} could not run: {e}", phase.name));
                run_failed.push(format!("{} could not run: {e}", phase.name));
                break;
            }
        }
        if phase.cooldown.as_std() > Duration::ZERO && !interrupted.load(Ordering::SeqCst) {
            std::thread::sleep(phase.cooldown.as_std());
        }
    }

    // 4. Wrap up: stop the target, final reports, exit code.
    watcher_done.store(true, Ordering::SeqCst);
    let _ = watcher.join();
    if let Some(s) = sampler {
        results.target.samples = s.stop().target;
    }
    if let Some(p) = &target.process {
        if let Some(exit) = p.exited().filter(|e| !e.requested) {
            results.target.exited = Some(exit.to_target_exit(run_start));
        }
        if let Err(e) = p.stop() {
            out.error(&format!("warning: stopping the target: {e}"));
        }
    }
    let completed_all = results.scenarios.len() == plan.phases.len()
        || results
            .scenarios
            .last()
            .is_some_and(|s| s.aborted.as_deref().is_some_and(|a| a.starts_with("abort_on_fail")));
    if !run_failed.is_empty() {
        results.outcome = Outcome::run_failed(run_failed.clone());
    }
    if (completed_all || !run_failed.is_empty()) && !interrupted.load(Ordering::SeqCst) {
        results.finished_at = Some(now_rfc3339());
    }
    results.outcome = loadgate_results::outcome(&results);
    let written = reports.write_all(&mut results, out);
    if let Some(path) = std::env::var_os("GITHUB_STEP_SUMMARY").filter(|p| !p.is_empty()) {
        if let Ok(md) = loadgate_report::markdown(&results, opts.template.as_deref()) {
            use std::io::Write as _;
            let appended = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&path)
                .and_then(|mut f| f.write_all(md.as_bytes()).and_then(|()| f.write_all(b"\n")));
            if let Err(e) = appended {
                out.error(&format!("warning: cannot append to GITHUB_STEP_SUMMARY: {e}"));
            }
        }
    }
    out.data(&loadgate_report::summary_table(&results, opts.color));
    out.info(&format!("reports: {}", dir.display()));
    let exit = exit_of(&results.outcome);
    if !written {
        return exit.worst(Exit::RunFailed);
    }
    exit
}

pub fn exit_of(outcome: &Outcome) -> Exit {
    match outcome.status {
        OutcomeStatus::Passed => Exit::Pass,
        OutcomeStatus::SloFailed => Exit::SloFailed,
        OutcomeStatus::RunFailed | OutcomeStatus::Incomplete => Exit::RunFailed,
        OutcomeStatus::InvalidMeasurement => Exit::InvalidMeasurement,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_are_rfc3339() {
        let d = now_rfc3339();
        assert_eq!(d.len(), 20, "{d}");
        assert!(d.ends_with('Z'));
    }

    #[test]
    fn urls_split_into_host_and_port() {
        assert_eq!(host_port("http://127.0.0.1:8080/x"), Some(("127.0.0.1".into(), 8080)));
        assert_eq!(host_port("http://example"), Some(("example".into(), 80)));
        assert_eq!(host_port("http://[::1]:9000"), Some(("[::1]".into(), 9000)));
        assert_eq!(host_header("h", 80), "h");
        assert_eq!(host_header("h", 81), "h:81");
    }
}
