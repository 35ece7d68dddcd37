//! A run's memory: after the run, the spec's `history:` checks are judged against the history store
//! (`run --history STORE`) and the run is recorded in it. The checks themselves are pure
//! (`loadgate_history::gate`); this module opens the store, reads the series, puts the verdicts into the
//! instances' verdicts (so every report, JUnit, the annotations and the exit code see them like any SLO) and
//! the series behind them into `results.history`, then adds the run.
//!
//! Only a run that measured what it meant to is recorded: complete, not a shard's slice, and passed, failed
//! an SLO or inconclusive (never invalid as a measurement, failed or interrupted): a history of broken runs
//! would move its own change points.

use std::path::Path;
use std::process::Command;

use loadgate_history::error::HistoryError;
use loadgate_history::gate::{self, Judged};
use loadgate_history::record::{RecordMeta, RunRecord};
use loadgate_history::series::{self, Selection};
use loadgate_history::store::{Added, Query, Store};
use loadgate_model::{Detection, HistoryGate, Metric, Spec};
use loadgate_results::history::{HistoryPoint, HistorySeries};
use loadgate_results::{Outcome, OutcomeStatus, RunResults};

use crate::{Event, Observer};

/// Where a run is recorded, and what identifies it besides its results.
#[derive(Debug, Clone, Default)]
pub struct HistoryRequest {
    /// A SQLite file or a `postgres://` URL.
    pub store: String,
    /// The branch the run measured; `None`: detected ([`detect_branch`]).
    pub branch: Option<String>,
    pub label: Option<String>,
    /// The commit measured, overriding the one results.json records.
    pub commit: Option<String>,
}

/// What [`judge_and_record`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Memory {
    /// Nothing to do: no store and no checks.
    Nothing,
    /// The run was recorded (or was there already) under this id.
    Recorded { store: String, run_id: String, new: bool },
    /// The run was judged but not recorded, and why.
    NotRecorded { reason: String },
}

/// The branch a run measured: CI's variables (GitHub's `GITHUB_HEAD_REF` for a pull request, else
/// `GITHUB_REF_NAME`; GitLab's `CI_COMMIT_REF_NAME`), else the branch checked out in `dir`.
pub fn detect_branch(dir: Option<&Path>) -> Option<String> {
    for var in ["GITHUB_HEAD_REF", "GITHUB_REF_NAME", "CI_COMMIT_REF_NAME"] {
        if let Ok(v) = std::env::var(var) {
            if !v.trim().is_empty() {
                return Some(v.trim().to_owned());
            }
        }
    }
    let dir = dir.unwrap_or(Path::new("."));
    let out = Command::new("git").arg("-C").arg(dir).args(["rev-parse", "--abbrev-ref", "HEAD"]).output().ok()?;
    let name = String::from_utf8(out.stdout).ok()?.trim().to_owned();
    (out.status.success() && !name.is_empty() && name != "HEAD").then_some(name)
}

/// The record of a run as `request` describes it.
pub fn record_of(results: &RunResults, request: &HistoryRequest, dir: Option<&Path>) -> RunRecord {
    let meta = RecordMeta {
        branch: request.branch.clone().or_else(|| detect_branch(dir)),
        label: request.label.clone(),
        commit: request.commit.clone(),
    };
    RunRecord::from_results(results, &meta)
}

/// Whether a run is worth keeping in a history: complete, whole, and a valid measurement.
pub fn recordable(results: &RunResults) -> Result<(), String> {
    if results.shard.is_some() {
        return Err("a shard's slice is not a run: record the merge (`loadgate merge --history STORE`)".to_owned());
    }
    if results.finished_at.is_none() {
        return Err("the run did not finish".to_owned());
    }
    match results.outcome.status {
        OutcomeStatus::Passed | OutcomeStatus::SloFailed | OutcomeStatus::Inconclusive => Ok(()),
        other => Err(format!("the run is {}: it measured nothing a history should keep", other.label())),
    }
}

/// Judges `checks` against the store's series (with this run appended) and puts the verdicts and series into
/// `results`; then records the run. A store that cannot be read or written fails the run (exit 3) with the
/// reason: its measurements and reports are kept.
pub fn judge_and_record(
    results: &mut RunResults,
    checks: Option<&HistoryGate>,
    request: Option<&HistoryRequest>,
    dir: Option<&Path>,
) -> Memory {
    // A shard's slice is judged and recorded on the merge, never on its own.
    if results.shard.is_some() {
        return Memory::Nothing;
    }
    let Some(request) = request else {
        if let Some(g) = checks {
            let current = RunRecord::from_results(results, &RecordMeta::default());
            apply(
                results,
                gate::unjudged(g, &current, "no history store (run with --history STORE or LOADGATE_HISTORY)"),
            );
        }
        return Memory::Nothing;
    };
    let current = record_of(results, request, dir);
    let mut store = match Store::open(&request.store) {
        Ok(s) => s,
        Err(e) => return fail(results, format!("the history store: {e}")),
    };
    if let Some(g) = checks {
        match judge_history(&mut store, g, &current) {
            Ok(judgement) => apply(results, judgement.judged),
            Err(e) => return fail(results, format!("the history store {}: {e}", store.describe())),
        }
    }
    if let Err(reason) = recordable(results) {
        return Memory::NotRecorded { reason };
    }
    // The record keeps the outcome the history checks made.
    let mut current = current;
    current.outcome = status_name(results.outcome.status);
    match store.add(&current) {
        Ok(added) => Memory::Recorded {
            store: store.describe(),
            run_id: current.run_id,
            new: matches!(added, Added::New { .. }),
        },
        Err(e) => {
            fail(results, format!("the run could not be recorded in the history store {}: {e}", store.describe()))
        }
    }
}

/// A run's history checks as judged on its series.
#[derive(Debug)]
pub struct HistoryJudgement {
    /// The branch whose runs the series holds (`None`: the runs on no branch).
    pub branch: Option<String>,
    /// The runs in the series, the judged one included.
    pub runs: usize,
    pub judged: Vec<Judged>,
}

/// The one query of a run's history checks, for `run --history` (the run not yet stored) and `history check`
/// (the newest stored run): `current`'s series in `store` (the branch it is recorded on unless the checks name
/// one; its machine with `same_machine`), judged with `current` last. A series too short on a named branch may
/// be beside runs recorded on none: the verdicts say how many.
pub fn judge_history(
    store: &mut Store,
    checks: &HistoryGate,
    current: &RunRecord,
) -> Result<HistoryJudgement, HistoryError> {
    let branch = gate::series_branch(checks, current);
    let machine = checks.same_machine.then(|| current.machine.clone());
    let past = store.runs(&Query::series(&current.spec, branch.clone(), machine.clone()))?;
    let mut judged = gate::judge(checks, &past, current);
    if branch.is_some() && judged.iter().any(|j| j.too_short) {
        let unbranched = store.runs(&Query::series(&current.spec, None, machine))?;
        gate::note_unbranched(&mut judged, unbranched.iter().filter(|r| r.run_id != current.run_id).count());
    }
    let runs = past.iter().filter(|r| r.run_id != current.run_id).count() + 1;
    Ok(HistoryJudgement { branch, runs, judged })
}

/// What `history check` found: the newest stored run of a spec, judged on its series.
#[derive(Debug)]
pub struct HistoryCheck {
    /// The run judged, as a series names its points (its time, commit and label).
    pub newest: String,
    /// The branch whose runs the series holds, in words (`` `main` ``, `no branch`).
    pub branch: String,
    /// The runs in the series, the judged one included.
    pub runs: usize,
    pub judged: Vec<Judged>,
}

/// `history check`: the spec's `history:` checks on the newest run of the spec in the store at `location` (on
/// the checks' branch when they name one), judged on its series by [`judge_history`], the query `run --history`
/// uses. `file` names the spec in the error of a spec without checks.
pub fn check(location: &str, spec: &Spec, file: &str) -> Result<HistoryCheck, MemoryError> {
    let Some(checks) = &spec.history else {
        return Err(MemoryError::Input(format!(
            "{file} has no `history:` section: nothing to check (add `history: {{ drift: {{ p99: 10% }} }}`)"
        )));
    };
    let mut store = open(location)?;
    let input = |e: HistoryError| MemoryError::Input(e.to_string());
    let newest =
        Query { spec: Some(spec.name.clone()), branch: checks.branch.clone(), limit: Some(1), ..Query::default() };
    let Some(current) = store.runs(&newest).map_err(input)?.pop() else {
        let on = checks.branch.as_ref().map_or_else(String::new, |b| format!(" on {b}"));
        return Err(MemoryError::Nothing(format!("the history has no run of `{}`{on}: nothing to judge", spec.name)));
    };
    let judgement = judge_history(&mut store, checks, &current).map_err(input)?;
    let point = HistoryPoint {
        run_id: current.run_id,
        started_at: current.started_at,
        commit: current.commit,
        label: current.label,
        value: 0.0,
        current: true,
        profile: None,
    };
    Ok(HistoryCheck {
        newest: point.name(),
        branch: gate::branch_words(judgement.branch.as_deref()),
        runs: judgement.runs,
        judged: judgement.judged,
    })
}

/// `history show`'s selection: which runs, instances and metrics, and how change points are found.
#[derive(Debug, Clone)]
pub struct ShowRequest {
    /// A SQLite file or a `postgres://` URL.
    pub store: String,
    pub spec: Option<String>,
    /// Empty: the gated instances.
    pub instances: Vec<String>,
    /// As an SLO names them; empty: throughput, p50, p99.
    pub metrics: Vec<String>,
    pub branch: Option<String>,
    pub machine: Option<String>,
    /// RFC 3339, or a date.
    pub since: Option<String>,
    /// Only the newest N runs.
    pub last: Option<usize>,
    pub detection: Detection,
}

/// `history show`: the series of the runs `request` selects, each with its change points.
pub fn show(request: &ShowRequest) -> Result<Vec<HistorySeries>, MemoryError> {
    let input = |e: String| MemoryError::Input(e);
    let options = series::options(&request.detection);
    options.validate().map_err(|e| input(e.to_string()))?;
    let metrics = Metric::parse_list(&request.metrics).map_err(input)?.iter().map(ToString::to_string).collect();
    let mut store = open(&request.store)?;
    let query = Query {
        spec: request.spec.clone(),
        branch: request.branch.clone(),
        unbranched: false,
        machine: request.machine.clone(),
        since: request.since.clone(),
        limit: request.last,
    };
    let records = store.runs(&query).map_err(|e| input(e.to_string()))?;
    let selection = Selection {
        spec: request.spec.clone(),
        instances: request.instances.clone(),
        metrics,
        gated_only: request.instances.is_empty(),
        branch: request.branch.clone(),
        unbranched: false,
        machine: request.machine.clone(),
    };
    let mut all = series::series(&records, &selection);
    for s in &mut all {
        series::analyse(s, &options).map_err(|e| input(format!("{} {}: {e}", s.instance, s.metric)))?;
    }
    Ok(all)
}

/// The store at `location` (a SQLite file, created when missing, or a `postgres://` URL).
pub fn open(location: &str) -> Result<Store, MemoryError> {
    Store::open(location).map_err(|e| MemoryError::Store(e.to_string()))
}

/// Writes `files` (name, content) into `dir` (created), each atomically: the `--out DIR` of `history show`,
/// `history check` and `compare`.
pub fn write_files(dir: &Path, files: &[(String, String)]) -> Result<(), MemoryError> {
    std::fs::create_dir_all(dir).map_err(|e| MemoryError::Store(format!("cannot create {}: {e}", dir.display())))?;
    for (name, content) in files {
        let path = dir.join(name);
        crate::reports::write_atomic(&path, content)
            .map_err(|e| MemoryError::Store(format!("cannot write {}: {e}", path.display())))?;
    }
    Ok(())
}

/// Why a history command could not do its work: its input (a file, a line of an import, a spec without checks),
/// the store (or a file it writes), or a history that holds nothing to judge.
#[derive(Debug, thiserror::Error)]
pub enum MemoryError {
    #[error("{0}")]
    Input(String),
    #[error("{0}")]
    Store(String),
    #[error("{0}")]
    Nothing(String),
}

/// What `history add` did with one results file.
#[derive(Debug)]
pub enum AddedFile {
    /// Stored (`new`), or found there already.
    Added { record: Box<RunRecord>, new: bool },
    /// Not worth keeping, and why ([`recordable`]).
    Skipped(String),
}

impl AddedFile {
    /// What `history add` says of `path`: `results.json: added (spec api, 3 instances, branch main, commit
    /// 9f2c4e1a0b3d)`, or why it was not added.
    pub fn line(&self, path: &Path) -> String {
        let (record, what) = match self {
            AddedFile::Skipped(reason) => return format!("warning: {} not added: {reason}", path.display()),
            AddedFile::Added { record, new } => (record, if *new { "added" } else { "already there" }),
        };
        let n = record.instances.len();
        let commit = record.commit.as_deref().map_or("unknown".to_owned(), |c| c.chars().take(12).collect());
        format!(
            "{}: {what} (spec {}, {n} instance{}, branch {}, commit {commit})",
            path.display(),
            record.spec,
            if n == 1 { "" } else { "s" },
            record.branch.as_deref().unwrap_or("unknown"),
        )
    }
}

/// `history add`: the store opened, every file read (an unreadable one adds nothing), then each run worth keeping
/// added to the store `request` names.
pub fn add_files(request: &HistoryRequest, paths: &[std::path::PathBuf]) -> Result<Vec<AddedFile>, MemoryError> {
    let mut store = open(&request.store)?;
    let mut read = Vec::with_capacity(paths.len());
    for path in paths {
        let results = crate::source::read_results(path).map_err(|e| MemoryError::Input(e.to_string()))?;
        read.push(match recordable(&results) {
            Ok(()) => Ok(record_of(&results, request, None)),
            Err(reason) => Err(reason),
        });
    }
    let mut done = Vec::with_capacity(read.len());
    for r in read {
        done.push(match r {
            Ok(record) => {
                let added = store.add(&record).map_err(|e| MemoryError::Store(e.to_string()))?;
                AddedFile::Added { record: Box::new(record), new: matches!(added, Added::New { .. }) }
            }
            Err(reason) => AddedFile::Skipped(reason),
        });
    }
    Ok(done)
}

/// `history export`: every run of the store at `location` as JSON lines into `to` (written whole or not at all)
/// or standard output; how many.
pub fn export(location: &str, to: Option<&Path>) -> Result<usize, MemoryError> {
    use std::io::Write as _;
    let mut store = open(location)?;
    let Some(path) = to else {
        let stdout = std::io::stdout();
        let mut w = std::io::BufWriter::new(stdout.lock());
        let n = store.export(&mut w).map_err(|e| MemoryError::Store(e.to_string()))?;
        let _ = w.flush();
        return Ok(n);
    };
    let failed = |p: &Path, e: std::io::Error| MemoryError::Store(format!("cannot write {}: {e}", p.display()));
    let tmp = path.with_extension("jsonl.tmp");
    let file = std::fs::File::create(&tmp).map_err(|e| failed(&tmp, e))?;
    let mut w = std::io::BufWriter::new(file);
    let n = store.export(&mut w).map_err(|e| MemoryError::Store(e.to_string()))?;
    w.flush().map_err(|e| failed(&tmp, e))?;
    std::fs::rename(&tmp, path).map_err(|e| failed(path, e))?;
    Ok(n)
}

/// `history import`: the JSON lines of `from` (`-`: standard input) into the store at `location`, in one
/// transaction; what was added, into which store (as it names itself): `imported 3 runs (1 already there) into
/// sqlite runs.db`.
pub fn import(location: &str, from: &Path) -> Result<String, MemoryError> {
    let mut store = open(location)?;
    let name = from.display();
    let mut reader: Box<dyn std::io::BufRead> = if from.as_os_str() == "-" {
        Box::new(std::io::BufReader::new(std::io::stdin()))
    } else {
        let f = std::fs::File::open(from).map_err(|e| MemoryError::Input(format!("cannot read {name}: {e}")))?;
        Box::new(std::io::BufReader::new(f))
    };
    let imported = store.import(&mut reader).map_err(|e| match e {
        // A line that is not a run record is the input's fault; a store that fails, the store's.
        HistoryError::Import { .. } | HistoryError::Invalid { .. } => MemoryError::Input(format!("{name}: {e}")),
        e => MemoryError::Store(format!("{name}: {e}")),
    })?;
    let n = imported.added;
    let store = store.describe();
    Ok(format!(
        "imported {n} run{} ({} already there) into {store}",
        if n == 1 { "" } else { "s" },
        imported.already_there
    ))
}

/// [`judge_and_record`], telling the observer what became of the record.
pub fn remember(
    results: &mut RunResults,
    checks: Option<&HistoryGate>,
    request: Option<&HistoryRequest>,
    dir: Option<&Path>,
    observer: &mut dyn Observer,
) {
    match judge_and_record(results, checks, request, dir) {
        Memory::Nothing => {}
        Memory::Recorded { store, run_id, new } => observer.event(&Event::Recorded { store, run_id, new }),
        Memory::NotRecorded { reason } => {
            observer.event(&Event::Warning(format!("the run was not recorded in the history: {reason}")));
        }
    }
}

fn status_name(s: OutcomeStatus) -> String {
    serde_json::to_value(s).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_else(|| s.label().to_owned())
}

/// Puts judged history checks into the results: each verdict after its instance's SLOs, each series (once)
/// into `results.history`, then the outcome again.
pub fn apply(results: &mut RunResults, judged: Vec<Judged>) {
    for j in judged {
        if let Some(s) = results.scenarios.iter_mut().find(|s| s.name == j.instance) {
            s.judged.verdicts.push(j.verdict);
        }
        if !j.series.points.is_empty()
            && !results.history.iter().any(|h| h.instance == j.series.instance && h.metric == j.series.metric)
        {
            results.history.push(j.series);
        }
    }
    results.outcome = loadgate_results::outcome(results);
}

fn fail(results: &mut RunResults, reason: String) -> Memory {
    let mut reasons = Vec::new();
    if results.outcome.status == OutcomeStatus::RunFailed {
        reasons.extend(results.outcome.reasons.iter().cloned());
    }
    reasons.push(reason.clone());
    results.outcome = Outcome::run_failed(reasons);
    results.outcome = loadgate_results::outcome(results);
    Memory::NotRecorded { reason }
}
