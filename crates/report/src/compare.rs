//! `loadgate compare`'s renderings of a [`Comparison`]: the terminal table ([`compare_text`]), Markdown
//! ([`compare_markdown`], seed 003's table generated: the runs' values per cell, then each change) and the
//! self-contained HTML page ([`compare_html`]) with a plot per metric. All read one [`CompareView`], so the
//! three say the same numbers.

use std::fmt::Write as _;

use loadgate_results::compare::{Change, Comparison, Word};
use minijinja::{Environment, UndefinedBehavior, Value};
use serde::Serialize;

use crate::ReportError;

const TEMPLATE: &str = include_str!("../templates/compare.html.j2");

/// What every rendering of a comparison shows, as text.
#[derive(Debug, Clone, Serialize)]
pub struct CompareView {
    /// `tfb-plaintext`, or `tfb-plaintext, other-spec` when the runs ran different specs.
    pub title: String,
    pub runs: Vec<RunRow>,
    /// One table per metric.
    pub tables: Vec<MetricTable>,
    pub warnings: Vec<String>,
    /// How changes are judged, in one paragraph.
    pub method: String,
}

/// A run as the header table lists it.
#[derive(Debug, Clone, Serialize)]
pub struct RunRow {
    pub label: String,
    pub commit: String,
    pub started_at: String,
    pub machine: String,
    pub repetitions: u32,
    pub file: String,
}

/// The table of one metric: a row per instance.
#[derive(Debug, Clone, Serialize)]
pub struct MetricTable {
    /// `p99`.
    pub metric: String,
    /// `p99 latency (lower is better)`.
    pub heading: String,
    /// The run labels, then `B vs A` per change column.
    pub columns: Vec<String>,
    /// How many of `columns` are runs' values (the rest are changes).
    pub value_columns: usize,
    pub rows: Vec<MetricRow>,
}

/// One instance's row of a metric table.
#[derive(Debug, Clone, Serialize)]
pub struct MetricRow {
    pub instance: String,
    /// The runs' values (`—` where a run lacks the instance).
    pub values: Vec<String>,
    pub changes: Vec<ChangeCell>,
}

/// One change as the tables show it.
#[derive(Debug, Clone, Serialize)]
pub struct ChangeCell {
    /// `+7.67%`.
    pub relative: String,
    /// `faster`, `slower`, `no change`, `can't tell`; empty for single runs.
    pub word: String,
    /// `1.077x [1.05x, 1.10x]` with repetitions; empty otherwise.
    pub interval: String,
    /// `good`, `bad`, `same`, `unknown` (a single run): the colour of the cell.
    pub class: &'static str,
}

/// `+7.67%`, `-0.50%`, `+inf%`.
fn percent(relative: f64) -> String {
    if relative.is_finite() {
        format!("{:+.2}%", relative * 100.0)
    } else {
        "new".to_owned()
    }
}

fn change_cell(change: Option<&Change>, higher_is_better: bool) -> ChangeCell {
    let Some(ch) = change else {
        return ChangeCell {
            relative: "—".to_owned(), word: String::new(), interval: String::new(), class: "unknown"
        };
    };
    let interval = ch.estimate.map_or_else(String::new, |e| {
        format!(
            "{:.3}x [{:.3}x, {:.3}x]{}",
            e.ratio,
            e.lower,
            e.upper,
            if e.reached { "" } else { " (too few repetitions)" }
        )
    });
    let class = match ch.word {
        Some(Word::Faster | Word::Better) => "good",
        Some(Word::Slower | Word::Worse) => "bad",
        Some(Word::NoChange) => "same",
        Some(Word::CantTell) => "unknown",
        // A single run's change is not judged; its sign still reads as a direction.
        None if ch.relative == 0.0 => "same",
        None if (ch.relative > 0.0) == higher_is_better => "lean-good",
        None => "lean-bad",
    };
    ChangeCell {
        relative: percent(ch.relative),
        word: ch.word.map_or_else(String::new, |w| w.text().to_owned()),
        interval,
        class,
    }
}

impl CompareView {
    /// Prepares the text of every rendering.
    pub fn new(c: &Comparison) -> CompareView {
        let mut specs: Vec<&str> = Vec::new();
        let runs = c
            .runs
            .iter()
            .map(|r| {
                if !specs.contains(&r.spec.as_str()) {
                    specs.push(&r.spec);
                }
                RunRow {
                    label: r.label.clone(),
                    commit: r.commit.as_deref().map_or_else(|| "unknown".to_owned(), |c| c.chars().take(12).collect()),
                    started_at: r.started_at.clone(),
                    machine: r.machine.clone(),
                    repetitions: r.repetitions,
                    file: r.file.clone(),
                }
            })
            .collect();
        let tables = c
            .metrics
            .iter()
            .enumerate()
            .map(|(m, metric)| {
                let mut columns: Vec<String> = c.runs.iter().map(|r| r.label.clone()).collect();
                columns.extend(
                    c.changes
                        .iter()
                        .map(|&(run, reference)| format!("{} vs {}", c.runs[run].label, c.runs[reference].label)),
                );
                let higher = c.cells.first().and_then(|cell| cell.metrics.get(m)).is_some_and(|x| x.higher_is_better);
                let kind = c.cells.first().and_then(|cell| cell.metrics.get(m)).map_or("", |x| x.kind.as_str());
                let what = match kind {
                    "latency" => format!("{metric} latency"),
                    "rate" => metric.clone(),
                    "ratio" => format!("{metric} (fraction of requests)"),
                    _ => format!("{metric} (count)"),
                };
                let rows = c
                    .cells
                    .iter()
                    .filter_map(|cell| {
                        let x = cell.metrics.get(m)?;
                        Some(MetricRow {
                            instance: cell.name.clone(),
                            values: x
                                .values
                                .iter()
                                .map(|v| v.as_ref().map_or_else(|| "—".to_owned(), |v| v.text.clone()))
                                .collect(),
                            changes: x.changes.iter().map(|ch| change_cell(ch.as_ref(), x.higher_is_better)).collect(),
                        })
                    })
                    .collect();
                MetricTable {
                    metric: metric.clone(),
                    heading: format!("{what} ({} is better)", if higher { "higher" } else { "lower" }),
                    columns,
                    value_columns: c.runs.len(),
                    rows,
                }
            })
            .collect();
        let judged = c.runs.iter().filter(|r| r.repetitions >= 2).count();
        let method = format!(
            "Changes are the merged value of each run against its reference. {} Where both runs have repetitions, \
             the change is also the Hodges-Lehmann ratio of their repetitions with its exact {:.0}% interval \
             (Mann-Whitney): faster/slower (better/worse for errors) when the interval leaves 1 +/- {:.0}%, no \
             change when it stays within it, can't tell when it straddles 1 or the repetitions are too few.",
            if judged < 2 { "A run of one repetition is shown, never judged: one sample per side cannot tell a change from the noise." } else { "" },
            c.confidence * 100.0,
            c.noise * 100.0
        )
        .replace("  ", " ");
        CompareView { title: specs.join(", "), runs, tables, warnings: c.warnings.clone(), method }
    }
}

/// A change as one table cell of text: `+7.67% faster 1.077x [1.05x, 1.10x]`.
fn change_text(ch: &ChangeCell) -> String {
    let mut out = ch.relative.clone();
    if !ch.word.is_empty() {
        out.push(' ');
        out.push_str(&ch.word);
    }
    if !ch.interval.is_empty() {
        out.push(' ');
        out.push_str(&ch.interval);
    }
    out
}

/// The terminal's tables: the runs, then per metric a row per instance, values then changes.
pub fn compare_text(c: &Comparison) -> String {
    let view = CompareView::new(c);
    let mut out = String::new();
    let _ = writeln!(out, "Comparing {} runs of {}", view.runs.len(), view.title);
    for r in &view.runs {
        let reps = if r.repetitions >= 2 { format!(", {} repetitions", r.repetitions) } else { String::new() };
        let _ = writeln!(out, "  {}: {} ({}, commit {}{reps})", r.label, r.file, r.started_at, r.commit);
    }
    for w in &view.warnings {
        let _ = writeln!(out, "warning: {w}");
    }
    for t in &view.tables {
        let _ = writeln!(out, "\n{}", t.heading);
        let mut grid: Vec<Vec<String>> = Vec::new();
        let mut header = vec!["instance".to_owned()];
        header.extend(t.columns.iter().cloned());
        grid.push(header);
        for row in &t.rows {
            let mut line = vec![row.instance.clone()];
            line.extend(row.values.iter().cloned());
            line.extend(row.changes.iter().map(change_text));
            grid.push(line);
        }
        let widths: Vec<usize> = (0..grid[0].len())
            .map(|i| grid.iter().map(|l| l.get(i).map_or(0, |x| x.chars().count())).max().unwrap_or(0))
            .collect();
        for line in &grid {
            let cells: Vec<String> = line
                .iter()
                .enumerate()
                .map(|(i, x)| {
                    let pad = widths[i].saturating_sub(x.chars().count());
                    if i == 0 || i > t.value_columns {
                        format!("{x}{}", " ".repeat(pad))
                    } else {
                        format!("{}{x}", " ".repeat(pad))
                    }
                })
                .collect();
            let _ = writeln!(out, "  {}", cells.join("  ").trim_end());
        }
    }
    let _ = writeln!(out, "\n{}", view.method);
    out
}

/// Escapes a table cell of GitHub-flavoured Markdown.
fn md(text: &str) -> String {
    text.replace('\\', "\\\\").replace('|', "\\|").replace('\n', " ").replace('<', "&lt;").replace('>', "&gt;")
}

/// The Markdown: the runs, the warnings, and one table per metric (values, then each change).
pub fn compare_markdown(c: &Comparison) -> String {
    let view = CompareView::new(c);
    let mut out = String::new();
    let _ = writeln!(out, "# Comparison: {}\n", md(&view.title));
    let _ = writeln!(out, "| Run | Commit | Started | Repetitions | Machine |");
    let _ = writeln!(out, "| :-- | :-- | :-- | --: | :-- |");
    for r in &view.runs {
        let _ = writeln!(
            out,
            "| {} | `{}` | {} | {} | {} |",
            md(&r.label),
            md(&r.commit),
            md(&r.started_at),
            r.repetitions,
            md(&r.machine)
        );
    }
    out.push('\n');
    for w in &view.warnings {
        let _ = writeln!(out, "> **Warning:** {}\n", md(w));
    }
    for t in &view.tables {
        let _ = writeln!(out, "## {}\n", md(&t.heading));
        let mut header = String::from("| Instance |");
        let mut rule = String::from("| :-- |");
        for col in &t.columns {
            let _ = write!(header, " {} |", md(col));
            rule.push_str(" --: |");
        }
        let _ = writeln!(out, "{header}\n{rule}");
        for row in &t.rows {
            let mut line = format!("| {} |", md(&row.instance));
            for v in &row.values {
                let _ = write!(line, " {} |", md(v));
            }
            for ch in &row.changes {
                let word = match ch.class {
                    "good" | "bad" => format!(" **{}**", ch.word),
                    _ if ch.word.is_empty() => String::new(),
                    _ => format!(" {}", ch.word),
                };
                let interval = if ch.interval.is_empty() { String::new() } else { format!(" ({})", ch.interval) };
                let _ = write!(line, " {}{}{} |", md(&ch.relative), md(&word), md(&interval));
            }
            let _ = writeln!(out, "{line}");
        }
        out.push('\n');
    }
    let _ = writeln!(out, "{}", md(&view.method));
    out
}

/// A plot as the page embeds it.
#[derive(Debug, Serialize)]
struct Embedded<'a> {
    title: &'a str,
    file: &'a str,
    metric: &'a str,
    svg: &'a str,
}

/// The self-contained HTML page (inline CSS and SVG, no script, nothing fetched) with the tables and the plots
/// (`(figure, SVG)` pairs as drawn by `loadgate-plot`).
pub fn compare_html(c: &Comparison, plots: &[(loadgate_plot::CompareFigure, String)]) -> Result<String, ReportError> {
    let mut env = Environment::new();
    env.set_trim_blocks(true);
    env.set_lstrip_blocks(true);
    env.set_undefined_behavior(UndefinedBehavior::Strict);
    env.add_template("compare.html", TEMPLATE).map_err(|e| ReportError::Html(e.to_string()))?;
    let tmpl = env.get_template("compare.html").map_err(|e| ReportError::Html(e.to_string()))?;
    let figures: Vec<Embedded<'_>> = plots
        .iter()
        .map(|(f, svg)| Embedded {
            title: &f.title,
            file: &f.file,
            metric: c.metrics.get(f.metric).map_or("", String::as_str),
            svg: crate::html::without_xml_declaration(svg),
        })
        .collect();
    let view = CompareView::new(c);
    let ctx = minijinja::context! {
        view => Value::from_serialize(&view),
        figures => Value::from_serialize(&figures),
        css => Value::from_safe_string(crate::html::stylesheet()),
        version => env!("CARGO_PKG_VERSION"),
    };
    tmpl.render(ctx).map_err(|e| ReportError::Html(e.to_string()))
}

/// Every file `loadgate compare --out DIR` writes, as `(file name, content)`: `compare.md`, `compare.html`,
/// `compare.json` and one SVG per plot. A plot that cannot be drawn is left out of the page and the files.
pub fn compare_files(c: &Comparison) -> Result<Vec<(String, String)>, ReportError> {
    let plots: Vec<(loadgate_plot::CompareFigure, String)> = loadgate_plot::compare_figures(c)
        .into_iter()
        .filter_map(|f| loadgate_plot::compare_plot(c, &f).ok().map(|svg| (f, svg)))
        .collect();
    let json = serde_json::to_string_pretty(c).map_err(|e| ReportError::Html(format!("compare.json: {e}")))?;
    let mut files = vec![
        ("compare.md".to_owned(), compare_markdown(c)),
        ("compare.html".to_owned(), compare_html(c, &plots)?),
        ("compare.json".to_owned(), json + "\n"),
    ];
    files.extend(plots.into_iter().map(|(f, svg)| (f.file, svg)));
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;
    use loadgate_results::compare::{compare, Against, CompareOptions};
    use loadgate_results::fixture::sample_run;

    fn three() -> Comparison {
        let runs: Vec<_> = [1.0, 1.0767, 1.1241]
            .iter()
            .map(|f| {
                let mut r = sample_run();
                for s in &mut r.scenarios {
                    s.throughput *= f;
                }
                r
            })
            .collect();
        compare(
            &runs,
            &CompareOptions {
                labels: vec!["baseline".into(), "perf-pass-1".into(), "domain-split".into()],
                files: vec!["a/results.json".into(), "b/results.json".into(), "c/results.json".into()],
                against: Against::Previous,
                ..CompareOptions::default()
            },
        )
        .expect("compares")
    }

    #[test]
    fn markdown_is_seed_003s_table() {
        let md = compare_markdown(&three());
        insta::assert_snapshot!(md);
    }

    #[test]
    fn the_terminal_table_lines_up() {
        insta::assert_snapshot!(compare_text(&three()));
    }

    #[test]
    fn the_html_page_is_well_formed_and_embeds_the_plots() {
        let c = three();
        let plots: Vec<_> = loadgate_plot::compare_figures(&c)
            .into_iter()
            .map(|f| {
                let svg = loadgate_plot::compare_plot(&c, &f).expect("draws");
                (f, svg)
            })
            .collect();
        let html = compare_html(&c, &plots).expect("renders");
        let doc = roxmltree::Document::parse_with_options(
            html.trim_start_matches("<!DOCTYPE html>"),
            roxmltree::ParsingOptions { allow_dtd: true, ..Default::default() },
        )
        .expect("well-formed");
        let svgs = doc.descendants().filter(|n| n.has_tag_name("svg")).count();
        assert_eq!(svgs, plots.len());
        assert!(html.contains("perf-pass-1 vs baseline"));
        assert!(html.contains("+7.67%"));
    }
}
