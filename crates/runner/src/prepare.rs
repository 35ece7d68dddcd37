//! What a run decides before its first phase: its output directory, the pinning and the workers' CPUs, the file
//! limit, the warnings about a stored baseline, and the results it starts from.

use std::path::PathBuf;

use loadgate_machine::hardware::{self, AppliedPinning, PinningDecision};
use loadgate_plan::{ExecutionPlan, WorkerPlan};
use loadgate_results::{RunResults, SpecInfo};

use crate::clock::now_rfc3339;
use crate::event::{Event, Observer};
use crate::request::RunRequest;
use crate::RunError;

/// The machine this run measures on, for comparing with a baseline's.
pub(crate) fn results_machine(request: &RunRequest) -> loadgate_results::Machine {
    hardware::fingerprint(request.source_dir.as_deref())
}

/// What a reader must know before trusting a comparison with a stored baseline: another plan, or another
/// machine (whose noise and speed differ, so only a limit wider than the two runs' spread means anything).
pub fn baseline_warnings(
    baseline: &RunResults,
    plan: &ExecutionPlan,
    machine: &loadgate_results::Machine,
) -> Vec<String> {
    let mut warnings = Vec::new();
    if baseline.spec.plan_hash != plan.hash {
        warnings.push(format!(
            "the baseline ran plan {} and this run is plan {}: the load differs, so relative SLOs compare different things",
            baseline.spec.plan_hash, plan.hash
        ));
    }
    let b = &baseline.machine;
    if b.hostname != machine.hostname || b.cpu_model != machine.cpu_model || b.logical_cpus != machine.logical_cpus {
        warnings.push(format!(
            "the baseline comes from another machine ({} / {}; this one is {} / {}): its numbers carry that machine's speed and noise, so a relative limit tighter than the spread of both runs cannot be supported (see each check's smallest detectable change); an A/B run in one job (`candidate:`) avoids this",
            b.hostname.as_deref().unwrap_or("?"),
            b.cpu_model.as_deref().unwrap_or("?"),
            machine.hostname.as_deref().unwrap_or("?"),
            machine.cpu_model.as_deref().unwrap_or("?"),
        ));
    }
    if baseline.scenarios.iter().all(|s| s.repetitions.is_empty()) {
        warnings.push(
            "the baseline has no repetitions: relative SLOs compare with one run of it, which cannot show its noise; save baselines from runs with `--repeat`".to_owned(),
        );
    }
    warnings
}

/// A run owns its directory: the files of an earlier run there are moved aside to `<dir>.previous` (replacing
/// an older one), never left beside this run's reports to be mistaken for them. Returns where they went.
pub fn own_output_dir(dir: &std::path::Path) -> Result<Option<PathBuf>, RunError> {
    let fail = |source| RunError::OutputDir { path: dir.to_owned(), source };
    let mut moved = None;
    if std::fs::read_dir(dir).is_ok_and(|mut entries| entries.next().is_some()) {
        let mut previous = dir.as_os_str().to_owned();
        previous.push(".previous");
        let previous = PathBuf::from(previous);
        if previous.is_dir() {
            std::fs::remove_dir_all(&previous).map_err(fail)?;
        } else if previous.exists() {
            std::fs::remove_file(&previous).map_err(fail)?;
        }
        std::fs::rename(dir, &previous).map_err(fail)?;
        moved = Some(previous);
    }
    std::fs::create_dir_all(dir).map_err(fail)?;
    Ok(moved)
}

/// Checks the spec's pinning on this machine: the pinning to apply, or (`on_mismatch: skip`) why the spec is
/// skipped.
///
/// `within_affinity` (`run --pin-within-affinity`) first maps the spec's pinned CPUs onto the CPUs this
/// process may use, the i-th onto the i-th ([`hardware::map_within_affinity`]), and refuses the run (exit 3)
/// when fewer are allowed than the spec pins; results.json's `pinning.cpu_map` records the mapping. The target's
/// CPUs count only for a target loadgate starts (a `base_url` server is never pinned).
pub fn decide_pinning(plan: &ExecutionPlan, within_affinity: bool) -> Result<Result<AppliedPinning, String>, RunError> {
    let topo = hardware::CpuTopology::read().map_err(RunError::Topology)?;
    let hw = &plan.hardware;
    let (generator, target) = (hw.generator_cpus.as_ref(), hw.target_cpus.as_ref());
    let decision = if within_affinity {
        // A server loadgate does not start is never pinned: its CPUs take none of this process's.
        let started = !matches!(plan.target, loadgate_plan::TargetPlan::Url { .. });
        let mut decision =
            hardware::check_pinning_within_affinity(&topo, generator, target.filter(|_| started), hw.on_mismatch);
        if let PinningDecision::Run(p) = &mut decision {
            p.target_requested = target.cloned();
        }
        decision
    } else {
        hardware::check_pinning(&topo, generator, target, hw.on_mismatch)
    };
    match decision {
        PinningDecision::Run(p) => Ok(Ok(p)),
        PinningDecision::Fail { message } => Err(RunError::Pinning(message)),
        PinningDecision::Skip { message } => Ok(Err(message)),
    }
}

/// The pinning of a local shard given `part` of the spec's generator CPUs (`run --shard-cpus`): the spec's
/// generator CPUs folded onto the part round-robin (`hardware::check_pinning_on_part`), the plan unchanged.
pub fn decide_pinning_on_part(
    plan: &ExecutionPlan,
    part: &loadgate_model::units::CpuList,
) -> Result<Result<AppliedPinning, String>, RunError> {
    let topo = hardware::CpuTopology::read().map_err(RunError::Topology)?;
    let hw = &plan.hardware;
    let decision = hardware::check_pinning_on_part(
        &topo,
        hw.generator_cpus.as_ref(),
        hw.target_cpus.as_ref(),
        part,
        hw.on_mismatch,
    );
    match decision {
        PinningDecision::Run(p) => Ok(Ok(p)),
        PinningDecision::Fail { message } => Err(RunError::Pinning(message)),
        PinningDecision::Skip { message } => Ok(Err(message)),
    }
}

/// One worker per planned worker, each on the CPU the pinning gives it.
pub fn worker_plans(plan: &ExecutionPlan, pinning: &AppliedPinning) -> Vec<WorkerPlan> {
    let planned: Vec<Option<u32>> = plan.hardware.workers.iter().map(|w| w.cpu).collect();
    let cpus = pinning.worker_cpus(&planned);
    plan.hardware
        .workers
        .iter()
        .zip(cpus)
        .map(|(w, cpu)| WorkerPlan { index: w.index, cpu, pacing: w.pacing })
        .collect()
}

/// Warns when the phases need more connections than this process may open files.
pub(crate) fn warn_about_file_limit(plan: &ExecutionPlan, observer: &mut dyn Observer) {
    // A duet round opens each gated phase's connections once per target.
    let duet = plan.candidate.is_some() && plan.gating.order == loadgate_plan::RoundOrder::Duet;
    let most = plan
        .phases
        .iter()
        .map(|p| p.load.connections.connections * if duet && p.gate { 2 } else { 1 })
        .max()
        .unwrap_or(0);
    if let Some(limit) = loadgate_machine::limits::raise_open_file_limit().filter(|l| most.saturating_add(64) > *l) {
        observer.event(&Event::Warning(format!(
            "{} needs up to {most} connections but this process may open only {limit} files; raise the limit \
             (`ulimit -n`) or the phases will report connections that never opened",
            plan.name
        )));
    }
}

/// The results a run starts from: the spec, the machine, the pinning, no scenario yet.
pub(crate) fn new_results(
    plan: &ExecutionPlan,
    request: &RunRequest,
    pinning: &AppliedPinning,
    workers: &[WorkerPlan],
) -> RunResults {
    let mut pinning = pinning.to_results(workers.iter().map(|w| w.cpu).collect());
    pinning.warnings.extend(request.spec_warnings.iter().map(|w| format!("spec: {w}")));
    let mut vars = plan.vars.iter().map(|(k, v)| (k.clone(), v.value.clone())).collect();
    request.secrets.redact_vars(&mut vars);
    let mut results = RunResults::new(
        request.loadgate_version.clone(),
        SpecInfo {
            name: plan.name.clone(),
            description: plan.description.clone(),
            file: request.spec_file.clone(),
            plan_hash: plan.hash.clone(),
            vars,
            seed: plan.seed,
            source: request.source.clone(),
        },
        now_rfc3339(),
        hardware::fingerprint(request.source_dir.as_deref()),
        pinning,
    );
    // The run's own identity, made as it starts (issue 45).
    results.id = Some(loadgate_results::identity::new());
    results
}
