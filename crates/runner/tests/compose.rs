//! The runner as a library: a whole run, and a composition of runs (rounds of one phase merged), against the
//! built-in server on loopback (port 0), in this process.

use std::time::Instant;

use loadgate_plan::ExecutionPlan;
use loadgate_results::OutcomeStatus;
use loadgate_runner::{
    BuiltinServer, Event, Interrupt, RunRequest, RunningTarget, Session, SessionOptions, Silent, TargetOptions,
};

fn plan(requests: u64) -> ExecutionPlan {
    let yaml = format!(
        "version: 1\nname: compose\ntarget: {{ builtin: plaintext }}\nscenarios:\n  main:\n    request: {{ path: /plaintext }}\n    load: {{ closed: {{ connections: 4, requests: {requests} }} }}\n    slo: [\"error_rate == 0%\"]\n"
    );
    let spec = loadgate_spec::load_str("compose.yaml", &yaml, &loadgate_spec::LoadOptions::default()).unwrap();
    loadgate_plan::compile(&spec)
}

fn session(plan: &ExecutionPlan, dir: &std::path::Path) -> Session {
    let pinning = loadgate_runner::prepare::decide_pinning(plan, false).unwrap().unwrap();
    let opts = TargetOptions { cpus: None, log_dir: dir, source_dir: None, builtin: &BuiltinServer::InProcess };
    let target = RunningTarget::start(&plan.target, &opts, &mut Silent).unwrap();
    let workers = loadgate_runner::prepare::worker_plans(plan, &pinning);
    let opts =
        SessionOptions { saturation: plan.hardware.saturation, interrupt: Interrupt::new(), origin: Instant::now() };
    Session::new(target, workers, opts)
}

#[test]
fn two_rounds_merged_count_what_one_longer_phase_counts() {
    let dir = tempfile::tempdir().unwrap();
    let short = plan(300);
    let long = plan(600);
    let mut s = session(&short, dir.path());
    let rounds: Vec<_> = (0..2).map(|_| s.run_phase(&short.phases[0], None, &mut Silent).unwrap()).collect();
    let mut merged = loadgate_runner::merge(&rounds).unwrap();
    merged.judged.verdicts = loadgate_results::evaluate(&short.phases[0].slos, &merged, None);
    let single = s.run_phase(&long.phases[0], None, &mut Silent).unwrap();
    let end = s.finish();
    assert!(end.stop_error.is_none());

    assert_eq!(rounds.len(), 2);
    for r in &rounds {
        assert_eq!(r.requests.completed, 300, "each round runs its own quota on fresh connections");
    }
    assert_eq!(merged.requests.completed, single.requests.completed);
    assert_eq!(merged.requests.completed, 600);
    assert_eq!(merged.requests.sent, single.requests.sent);
    assert_eq!(merged.status.non_2xx(), 0);
    assert_eq!(merged.histograms.latency.len(), single.histograms.latency.len(), "histograms added, not averaged");
    assert_eq!(merged.histograms.latency.len(), 600);
    assert_eq!(merged.connections.opened, rounds[0].connections.opened + rounds[1].connections.opened);
    assert!(
        !merged.judged.verdicts.is_empty() && merged.judged.verdicts.iter().all(|v| v.passed),
        "SLOs judged on the merge"
    );
}

#[test]
fn a_whole_run_reports_its_lifecycle_and_writes_its_reports() {
    let dir = tempfile::tempdir().unwrap();
    let plan = plan(200);
    let mut request = RunRequest::new(dir.path());
    request.spec_file = "compose.yaml".to_owned();
    let mut seen: Vec<String> = Vec::new();
    let outcome = loadgate_runner::run(&plan, &request, &mut |e: &Event<'_>| {
        let name = format!("{e:?}");
        seen.push(name.split([' ', '(', '{']).next().unwrap_or_default().to_owned());
    })
    .unwrap();
    assert_eq!(outcome.status(), OutcomeStatus::Passed, "{:?}", outcome.results.as_ref().map(|r| &r.outcome));
    let order: Vec<&str> = seen.iter().map(String::as_str).filter(|e| *e != "Tick" && *e != "Warning").collect();
    assert_eq!(
        order,
        ["RunStarted", "TargetReady", "InstanceStarting", "PhaseStarted", "PhaseFinished", "RunFinished"]
    );
    for file in ["results.json", "junit.xml", "report.md", "main.hgrm"] {
        assert!(outcome.dir.join(file).is_file(), "{file} written");
    }
    let results = outcome.results.unwrap();
    assert_eq!(results.scenarios[0].requests.completed, 200);
    assert!(results.finished_at.is_some());
}

#[test]
fn an_interrupted_run_is_incomplete_and_keeps_its_reports() {
    let dir = tempfile::tempdir().unwrap();
    let plan = plan(200);
    let request = RunRequest::new(dir.path());
    request.interrupt.interrupt();
    let outcome = loadgate_runner::run(&plan, &request, &mut Silent).unwrap();
    assert_eq!(outcome.status(), OutcomeStatus::Incomplete);
    assert!(outcome.dir.join("results.json").is_file());
    assert!(outcome.results.unwrap().finished_at.is_none());
}
