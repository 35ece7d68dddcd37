//! `loadgate compare` and `loadgate history`: parse the arguments, call the libraries (`loadgate_results::compare`,
//! `loadgate_history`), print and write what they render.

use std::path::Path;

use loadgate_history::series::{self, Selection};
use loadgate_history::store::{Query, Store};
use loadgate_model::{Detection, Metric};
use loadgate_results::compare::{self, Against, CompareOptions};
use loadgate_results::history::HistorySeries;
use loadgate_results::StatisticalStatus;
use loadgate_runner::memory::{AddedFile, HistoryRequest, MemoryError};

use crate::args::{
    AgainstArg, ColorChoice, CompareArgs, DetectionArgs, HistoryArgs, HistoryCheckArgs, HistoryCommand,
    HistoryShowArgs, RunMetaArgs, TableFormat,
};
use crate::exit::Exit;
use crate::output::Output;

/// Prints `error: ...` and gives `exit`.
fn fail(out: &Output, exit: Exit) -> impl FnOnce(String) -> Exit + '_ {
    move |message| {
        out.error(&format!("error: {message}"));
        exit
    }
}

/// A history command's error, printed, as its exit code: bad input exits 2, a store that failed 3.
fn failed(out: &Output) -> impl FnOnce(MemoryError) -> Exit + '_ {
    move |e| match e {
        MemoryError::Input(m) => fail(out, Exit::InvalidInput)(m),
        MemoryError::Store(m) => fail(out, Exit::RunFailed)(m),
    }
}

/// What `--history STORE` and its `--branch`, `--label`, `--commit` ask of a run.
pub fn history_request(store: Option<&str>, meta: &RunMetaArgs) -> Option<HistoryRequest> {
    store.filter(|s| !s.trim().is_empty()).map(|store| HistoryRequest {
        store: store.to_owned(),
        branch: meta.branch.clone(),
        label: meta.label.clone(),
        commit: meta.commit.clone(),
    })
}

/// Writes `files` into `dir` (created), each atomically.
fn write_files(out: &Output, dir: &Path, files: &[(String, String)]) -> Result<(), Exit> {
    std::fs::create_dir_all(dir)
        .map_err(|e| fail(out, Exit::RunFailed)(format!("cannot create {}: {e}", dir.display())))?;
    for (name, content) in files {
        let path = dir.join(name);
        loadgate_runner::reports::write_atomic(&path, content)
            .map_err(|e| fail(out, Exit::RunFailed)(format!("cannot write {}: {e}", path.display())))?;
    }
    let names: Vec<&str> = files.iter().map(|(n, _)| n.as_str()).collect();
    out.info(&format!("wrote {} into {}", names.join(", "), dir.display()));
    Ok(())
}

/// `loadgate compare RESULTS...`.
pub fn compare(out: &Output, args: CompareArgs) -> Result<Exit, Exit> {
    let mut runs = Vec::new();
    for path in &args.results {
        runs.push(
            loadgate_runner::source::read_results(path).map_err(|e| fail(out, Exit::InvalidInput)(e.to_string()))?,
        );
    }
    if args.labels.len() > runs.len() {
        return Err(fail(out, Exit::InvalidInput)(format!(
            "{} labels for {} runs: give at most one `--label` per results file",
            args.labels.len(),
            runs.len()
        )));
    }
    let options = CompareOptions {
        metrics: Metric::parse_list(&args.metrics).map_err(fail(out, Exit::InvalidInput))?,
        labels: args.labels.clone(),
        files: args.results.iter().map(|p| p.display().to_string()).collect(),
        against: match args.against {
            AgainstArg::First => Against::First,
            AgainstArg::Previous => Against::Previous,
        },
        confidence: args.confidence,
        noise: args.noise,
    };
    let c = compare::compare(&runs, &options).map_err(|e| fail(out, Exit::InvalidInput)(e.to_string()))?;
    // The text carries the warnings under its header; on stderr too, a terminal would show each twice.
    if !matches!(args.format, TableFormat::Text) {
        for w in &c.warnings {
            out.error(&format!("warning: {w}"));
        }
    }
    match args.format {
        TableFormat::Text => out.data(&loadgate_report::compare_text(&c)),
        TableFormat::Markdown => out.data(&loadgate_report::compare_markdown(&c)),
        TableFormat::Json => out.data(&serde_json::to_string_pretty(&c).unwrap_or_default()),
        TableFormat::Html => {
            let files = loadgate_report::compare_files(&c).map_err(|e| fail(out, Exit::RunFailed)(e.to_string()))?;
            let html = files.iter().find(|(n, _)| n == "compare.html").map_or("", |(_, h)| h.as_str());
            out.data(html);
        }
    }
    if let Some(dir) = &args.out {
        let files = loadgate_report::compare_files(&c).map_err(|e| fail(out, Exit::RunFailed)(e.to_string()))?;
        write_files(out, dir, &files)?;
    }
    let regressions = c.regressions();
    if args.fail_on_regression && !regressions.is_empty() {
        out.error(&format!("error: {} regression(s): {}", regressions.len(), regressions.join("; ")));
        return Ok(Exit::SloFailed);
    }
    Ok(Exit::Pass)
}

/// `loadgate history ...`.
pub fn history(out: &Output, args: HistoryArgs, _color: ColorChoice, _verbose: u8) -> Result<Exit, Exit> {
    match args.command {
        HistoryCommand::Add(a) => {
            let request = history_request(Some(&a.store.store), &a.meta).unwrap_or_default();
            let mut store = open(out, &a.store.store)?;
            let added = loadgate_runner::memory::add_files(&mut store, &a.results, &request).map_err(failed(out))?;
            for (path, file) in a.results.iter().zip(added) {
                let (record, what) = match file {
                    AddedFile::Skipped(reason) => {
                        out.error(&format!("warning: {} not added: {reason}", path.display()));
                        continue;
                    }
                    AddedFile::Added { record, new } => (record, if new { "added" } else { "already there" }),
                };
                let n = record.instances.len();
                out.info(&format!(
                    "{}: {what} (spec {}, {n} instance{}, branch {}, commit {})",
                    path.display(),
                    record.spec,
                    if n == 1 { "" } else { "s" },
                    record.branch.as_deref().unwrap_or("unknown"),
                    record.commit.as_deref().map_or("unknown".to_owned(), |c| c.chars().take(12).collect())
                ));
            }
            Ok(Exit::Pass)
        }
        HistoryCommand::Show(a) => show(out, a),
        HistoryCommand::Check(a) => check(out, a),
        HistoryCommand::Export(a) => {
            let mut store = open(out, &a.store.store)?;
            let written = loadgate_runner::memory::export(&mut store, a.out.as_deref()).map_err(failed(out))?;
            out.error(&format!("exported {written} run{}", if written == 1 { "" } else { "s" }));
            Ok(Exit::Pass)
        }
        HistoryCommand::Import(a) => {
            let mut store = open(out, &a.store.store)?;
            let imported = loadgate_runner::memory::import(&mut store, &a.file).map_err(failed(out))?;
            out.info(&format!(
                "imported {} run{} ({} already there) into {}",
                imported.added,
                if imported.added == 1 { "" } else { "s" },
                imported.already_there,
                store.describe()
            ));
            Ok(Exit::Pass)
        }
    }
}

fn open(out: &Output, location: &str) -> Result<Store, Exit> {
    Store::open(location).map_err(|e| fail(out, Exit::RunFailed)(e.to_string()))
}

fn detection(d: &DetectionArgs) -> Result<Detection, String> {
    let detection =
        Detection { p_value: d.p_value, min_magnitude: d.min_magnitude, min_segment: d.min_segment, window: d.window };
    series::options(&detection).validate().map_err(|e| e.to_string())?;
    Ok(detection)
}

/// `loadgate history show`.
fn show(out: &Output, a: HistoryShowArgs) -> Result<Exit, Exit> {
    let detection = detection(&a.detection).map_err(fail(out, Exit::InvalidInput))?;
    let names: Vec<String> = Metric::parse_list(&a.metrics)
        .map_err(fail(out, Exit::InvalidInput))?
        .iter()
        .map(ToString::to_string)
        .collect();
    let mut store = open(out, &a.store.store)?;
    let query = Query {
        spec: a.spec.clone(),
        branch: a.branch.clone(),
        unbranched: false,
        machine: a.machine.clone(),
        since: a.since.clone(),
        limit: a.last,
    };
    let records = store.runs(&query).map_err(|e| fail(out, Exit::InvalidInput)(e.to_string()))?;
    let selection = Selection {
        spec: a.spec.clone(),
        instances: a.instances.clone(),
        metrics: names,
        gated_only: a.instances.is_empty(),
        branch: a.branch.clone(),
        unbranched: false,
        machine: a.machine.clone(),
    };
    let mut all = series::series(&records, &selection);
    let options = series::options(&detection);
    for s in &mut all {
        series::analyse(s, &options)
            .map_err(|e| fail(out, Exit::InvalidInput)(format!("{} {}: {e}", s.instance, s.metric)))?;
    }
    print_series(out, &all, a.format)?;
    if let Some(dir) = &a.out {
        let files = loadgate_report::history_files(&all).map_err(|e| fail(out, Exit::RunFailed)(e.to_string()))?;
        write_files(out, dir, &files)?;
    }
    Ok(Exit::Pass)
}

fn print_series(out: &Output, all: &[HistorySeries], format: TableFormat) -> Result<(), Exit> {
    match format {
        TableFormat::Text => out.data(&loadgate_report::history_text(all)),
        TableFormat::Markdown => out.data(&loadgate_report::history_markdown(all, false)),
        TableFormat::Json => out.data(&serde_json::to_string_pretty(all).unwrap_or_default()),
        TableFormat::Html => {
            let plots: Vec<String> = all.iter().map(loadgate_report::history::trend_svg).collect();
            out.data(
                &loadgate_report::history_html(all, &plots).map_err(|e| fail(out, Exit::RunFailed)(e.to_string()))?,
            );
        }
    }
    Ok(())
}

/// `loadgate history check SPEC`: the spec's `history:` checks on the newest run of the spec in the store.
fn check(out: &Output, a: HistoryCheckArgs) -> Result<Exit, Exit> {
    let loaded = crate::specs::load_all(out, std::slice::from_ref(&a.spec), &a.vars).map_err(|_| Exit::InvalidInput)?;
    let Some(loaded) = loaded.into_iter().next() else { return Err(Exit::InvalidInput) };
    let Some(checks) = &loaded.spec.history else {
        return Err(fail(out, Exit::InvalidInput)(format!(
            "{} has no `history:` section: nothing to check (add `history: {{ drift: {{ p99: 10% }} }}`)",
            loaded.file
        )));
    };
    let mut store = open(out, &a.store.store)?;
    let name = &loaded.spec.name;
    let (current, judgement) = loadgate_runner::memory::check_newest(&mut store, name, checks)
        .map_err(|e| fail(out, Exit::InvalidInput)(e.to_string()))?
        .ok_or_else(|| {
            let on = checks.branch.as_ref().map_or_else(String::new, |b| format!(" on {b}"));
            fail(out, Exit::Inconclusive)(format!("the history has no run of `{name}`{on}: nothing to judge"))
        })?;
    let (branch, judged) = (judgement.branch, judgement.judged);
    let mut exit = Exit::Pass;
    out.data(&format!(
        "history checks of {} on {} ({} runs, newest {})",
        loaded.spec.name,
        loadgate_history::gate::branch_words(branch.as_deref()),
        judgement.runs,
        loadgate_results::history::HistoryPoint {
            run_id: current.run_id.clone(),
            started_at: current.started_at.clone(),
            commit: current.commit.clone(),
            label: current.label.clone(),
            value: 0.0,
            current: true,
            profile: None,
        }
        .name()
    ));
    for j in &judged {
        let v = &j.verdict;
        let inconclusive = v.statistics.as_ref().is_some_and(|s| s.status == StatisticalStatus::Inconclusive);
        let word = if v.passed {
            "pass"
        } else if inconclusive {
            exit = exit.worst(Exit::Inconclusive);
            "INCONCLUSIVE"
        } else {
            exit = exit.worst(Exit::SloFailed);
            "FAIL"
        };
        out.data(&format!("  {word:<12} {}: {} ({})", j.instance, v.slo, v.explain()));
    }
    if let Some(dir) = &a.out {
        let all: Vec<HistorySeries> = judged.iter().map(|j| j.series.clone()).collect();
        let files = loadgate_report::history_files(&all).map_err(|e| fail(out, Exit::RunFailed)(e.to_string()))?;
        write_files(out, dir, &files)?;
    }
    Ok(exit)
}
