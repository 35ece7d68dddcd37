//! `loadgate compare` and `loadgate history`: the arguments into a request of [`loadgate_runner::compare`] or
//! [`loadgate_runner::memory`], what comes back printed (and written with `--out DIR`).

use std::path::Path;

use loadgate_results::history::HistorySeries;
use loadgate_runner::compare::{Against, CompareRequest};
use loadgate_runner::memory::{AddedFile, HistoryRequest, ShowRequest};

use crate::args::{AgainstArg, CompareArgs, HistoryArgs, HistoryCheckArgs, HistoryCommand, RunMetaArgs, TableFormat};
use crate::exit::{fail, job_failed, memory_failed, Exit};
use crate::output::Output;

/// What `--history STORE` and its `--branch`, `--label`, `--commit` ask of a run.
pub fn history_request(store: Option<&str>, meta: &RunMetaArgs) -> Option<HistoryRequest> {
    store.filter(|s| !s.trim().is_empty()).map(|store| HistoryRequest {
        store: store.to_owned(),
        branch: meta.branch.clone(),
        label: meta.label.clone(),
        commit: meta.commit.clone(),
    })
}

/// Writes `files` into `dir`, and says so.
fn write_files(out: &Output, dir: &Path, files: &[(String, String)]) -> Result<(), Exit> {
    loadgate_runner::memory::write_files(dir, files).map_err(memory_failed(out))?;
    let names: Vec<&str> = files.iter().map(|(n, _)| n.as_str()).collect();
    out.info(&format!("wrote {} into {}", names.join(", "), dir.display()));
    Ok(())
}

/// `loadgate compare RESULTS...`.
pub fn compare(out: &Output, args: CompareArgs) -> Result<Exit, Exit> {
    let request = CompareRequest {
        labels: args.labels,
        metrics: args.metrics,
        against: match args.against {
            AgainstArg::First => Against::First,
            AgainstArg::Previous => Against::Previous,
        },
        confidence: args.confidence,
        noise: args.noise,
    };
    let c = loadgate_runner::compare::compare_files(&args.results, request).map_err(job_failed(out))?;
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
pub fn history(out: &Output, args: HistoryArgs) -> Result<Exit, Exit> {
    let failed = memory_failed(out);
    match args.command {
        HistoryCommand::Add(a) => {
            let meta = a.meta;
            let request =
                HistoryRequest { store: a.store.store, branch: meta.branch, label: meta.label, commit: meta.commit };
            let added = loadgate_runner::memory::add_files(&request, &a.results).map_err(failed)?;
            for (path, file) in a.results.iter().zip(added) {
                match file {
                    AddedFile::Skipped(_) => out.error(&file.line(path)),
                    AddedFile::Added { .. } => out.info(&file.line(path)),
                }
            }
        }
        HistoryCommand::Show(a) => {
            let d = a.detection;
            let request = ShowRequest {
                store: a.store.store,
                spec: a.spec,
                instances: a.instances,
                metrics: a.metrics,
                branch: a.branch,
                machine: a.machine,
                since: a.since,
                last: a.last,
                detection: loadgate_model::Detection {
                    p_value: d.p_value,
                    min_magnitude: d.min_magnitude,
                    min_segment: d.min_segment,
                    window: d.window,
                },
            };
            let all = loadgate_runner::memory::show(&request).map_err(failed)?;
            print_series(out, &all, a.format)?;
            write_history(out, a.out.as_deref(), &all)?;
        }
        HistoryCommand::Check(a) => return check(out, a),
        HistoryCommand::Export(a) => {
            let written = loadgate_runner::memory::export(&a.store.store, a.out.as_deref()).map_err(failed)?;
            out.error(&format!("exported {written} run{}", if written == 1 { "" } else { "s" }));
        }
        HistoryCommand::Import(a) => {
            out.info(&loadgate_runner::memory::import(&a.store.store, &a.file).map_err(failed)?);
        }
    }
    Ok(Exit::Pass)
}

/// `--out DIR` of `history show` and `history check`: history.md, history.html, history.json and the plots.
fn write_history(out: &Output, dir: Option<&Path>, all: &[HistorySeries]) -> Result<(), Exit> {
    let Some(dir) = dir else { return Ok(()) };
    let files = loadgate_report::history_files(all).map_err(|e| fail(out, Exit::RunFailed)(e.to_string()))?;
    write_files(out, dir, &files)
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
    let name = &loaded.spec.name;
    let checked =
        loadgate_runner::memory::check(&a.store.store, &loaded.spec, &loaded.file).map_err(memory_failed(out))?;
    out.data(&format!(
        "history checks of {name} on {} ({} runs, newest {})",
        checked.branch, checked.runs, checked.newest
    ));
    let mut exit = Exit::Pass;
    for j in &checked.judged {
        out.data(&loadgate_report::history_check_line(&j.instance, &j.verdict));
        exit = exit.worst(Exit::of(j.verdict.outcome()));
    }
    let all: Vec<HistorySeries> = checked.judged.into_iter().map(|j| j.series).collect();
    write_history(out, a.out.as_deref(), &all)?;
    Ok(exit)
}
