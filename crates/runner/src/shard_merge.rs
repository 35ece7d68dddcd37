//! One run of several shards: the merge of shard results into one run with its reports (`loadgate merge`), and
//! local shards (`loadgate run --shards N`: N processes of loadgate on this machine, started as targets are,
//! then merged).
//!
//! The merge is [`loadgate_results::merge_shards`] (exact: histograms added), then the same reports and the same
//! wrap-up as every run (`ledger::wrap_up`: the step summary is the merged run's, once).

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::time::Duration;

use loadgate_plan::{ExecutionPlan, ShardCommand, ShardOptions, ShardPlace, Slice};
use loadgate_results::{OutcomeStatus, ShardPart};

use crate::event::{Event, Observer};
use crate::reports::ReportWriter;
use crate::request::{RunOutcome, RunRequest};
use crate::RunError;

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
    let MergeOptions { plan, request, interrupted } = options;
    let (baseline, history) = (request.baseline.as_ref(), request.history.as_ref());
    let judged_per_shard = parts.iter().any(|p| p.results.sweeps.iter().any(|s| !s.verdicts.is_empty()));
    let mut results =
        loadgate_results::merge_shards_against(parts, baseline).map_err(|e| RunError::Shards(e.to_string()))?;
    match plan.filter(|p| p.hash == results.spec.plan_hash) {
        Some(plan) => {
            let merged = results.outcome.clone();
            crate::ledger::settle(&mut results, plan);
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
    let mut reports = ReportWriter::new(dir, request.template.clone(), request.secrets.clone());
    let mut failures = Vec::new();
    crate::ledger::write_reports(&mut reports, &mut results, &mut failures, observer);
    Ok(crate::ledger::wrap_up(results, failures, &reports, request, observer))
}

/// How [`merge_and_report`] judges the merge.
#[derive(Debug)]
pub struct MergeOptions<'a> {
    /// The whole plan, when the caller has it (its sweep SLOs and `history:` checks are judged on the merge).
    pub plan: Option<&'a ExecutionPlan>,
    /// The merged run's request: `baseline` (relative SLOs are judged against it), `template` (replaces the
    /// built-in Markdown report), `history` (the merge is recorded, and the plan's `history:` checks judged
    /// against the store), `step_summary` (the merged run's Markdown summary is appended to it).
    pub request: &'a RunRequest,
    /// The run was stopped before its shards finished: it is incomplete.
    pub interrupted: bool,
}

/// `loadgate run SPEC --shards N`: what to start.
#[derive(Debug, Clone)]
pub struct LocalShards {
    /// The loadgate executable.
    pub exe: PathBuf,
    /// The spec file every shard runs.
    pub spec: String,
    /// The spec is the one a run from command-line flags made (`--from-flags`).
    pub from_flags: bool,
    /// What every shard gets of the command line (`--set`, `--pacing`, ...).
    pub options: ShardOptions,
    pub count: u32,
    pub run_id: String,
}

/// Starts `count` shard processes of `exe` on this machine, each in its own process group stopped with
/// loadgate (a watchdog; Ctrl-C stops them all), meeting at a barrier on a free loopback port, waits for them
/// and merges their shard results into `<out_root>/<plan name>/` with [`merge_and_report`], as `request` asks
/// (its `--baseline`, `--template`, `--history` and step summary are the merge's; the shards are never recorded).
pub fn run_local(
    plan: &ExecutionPlan,
    local: &LocalShards,
    request: &RunRequest,
    observer: &mut dyn Observer,
) -> Result<RunOutcome, RunError> {
    let (out_root, interrupt) = (&request.out_root, &request.interrupt);
    let dir = out_root.join(&plan.name);
    if let Some(previous) = crate::prepare::own_output_dir(&dir)? {
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
        let command = ShardCommand {
            spec: local.spec.clone(),
            place: ShardPlace::Slice(slice),
            run_id: Some(local.run_id.clone()),
            barrier: Some(format!("127.0.0.1:{port}")),
            out: out_root.display().to_string(),
            cpus: parts.as_ref().and_then(|(_, p)| p.as_ref()?.get(index as usize - 1)).cloned(),
            quiet: true,
            from_flags: local.from_flags,
            options: local.options.clone(),
        };
        let mut argv = vec![local.exe.display().to_string()];
        argv.extend(command.args());
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
    let options = MergeOptions { plan: Some(plan), request, interrupted: interrupt.is_interrupted() };
    merge_and_report(parts, options, &dir, observer)
}
