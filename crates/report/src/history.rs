//! `loadgate history show`'s renderings of series ([`HistorySeries`]): the terminal ([`history_text`]), Markdown
//! ([`history_markdown`], also what a run's job summary appends) and the self-contained HTML page
//! ([`history_html`]) with a trend plot per series. All read one [`SeriesView`] per series.

use std::fmt::Write as _;
use std::str::FromStr;

use loadgate_model::Metric;
use loadgate_results::history::{p_clause, p_text, time_text, HistorySeries};
use minijinja::{Environment, UndefinedBehavior, Value};
use serde::Serialize;

use crate::ReportError;

const TEMPLATE: &str = include_str!("../templates/history.html.j2");

/// How many of the newest runs the tables list.
pub const RECENT_RUNS: usize = 12;

/// One series as text.
#[derive(Debug, Clone, Serialize)]
pub struct SeriesView {
    /// `api / get / p99`.
    pub title: String,
    /// `30 runs on main (machine 3f2a...), 2026-10-01 to 2026-10-30; lower is better`.
    pub subtitle: String,
    /// The newest value, formatted.
    pub latest: String,
    /// One line per change point, oldest first: `p99 +6.1% at 1a2b3c4 (2026-11-20), p = 0.0001: regression`.
    pub change_points: Vec<ChangeRow>,
    /// The newest [`RECENT_RUNS`] runs, newest first.
    pub recent: Vec<RunRow>,
    /// The file of its trend plot.
    pub plot_file: String,
}

/// A change point as the tables show it.
#[derive(Debug, Clone, Serialize)]
pub struct ChangeRow {
    /// The run of the new level: `2026-11-28 18:37:56 (run 3f2a9c01, commit 1a2b3c4)`.
    pub at: String,
    pub before: String,
    pub after: String,
    pub change: String,
    /// `0.0004`, `< 1e-12`.
    pub p_value: String,
    /// `p = 0.0004`, `p < 1e-12`.
    pub p: String,
    /// `regression` or `improvement`.
    pub kind: &'static str,
    /// The run's profile when it was profiled (what the profile held and named), else empty.
    pub profile: String,
}

/// A run as the tables show it.
#[derive(Debug, Clone, Serialize)]
pub struct RunRow {
    /// `2026-11-28 18:37:56 (run 3f2a9c01, commit 1a2b3c4)`.
    pub run: String,
    pub value: String,
    /// `change point` on the first run of a new level.
    pub mark: String,
}

fn format_value(s: &HistorySeries, v: f64) -> String {
    Metric::from_str(&s.metric)
        .map(|m| loadgate_results::verdict::format_value(m.kind(), v))
        .unwrap_or_else(|()| loadgate_results::format::number(v))
}

impl SeriesView {
    /// Prepares the text of a series.
    pub fn new(s: &HistorySeries) -> SeriesView {
        let n = s.points.len();
        let date = |t: &str| t.chars().take(10).collect::<String>();
        let span = match (s.points.first(), s.points.last()) {
            (Some(a), Some(b)) => format!(", {} to {}", date(&a.started_at), date(&b.started_at)),
            _ => String::new(),
        };
        let subtitle = format!(
            "{n} run{}{}{}{span}; {} is better",
            if n == 1 { "" } else { "s" },
            s.on_branch(),
            s.machine.as_ref().map_or_else(String::new, |m| format!(" (machine {m})")),
            if s.higher_is_better { "higher" } else { "lower" }
        );
        let change_points = s
            .change_points
            .iter()
            .map(|c| ChangeRow {
                at: s.points.get(c.index).map_or_else(|| time_text(&c.started_at), |p| p.name()),
                before: format_value(s, c.mean_before),
                after: format_value(s, c.mean_after),
                change: format!("{:+.1}%", c.relative_change * 100.0),
                p_value: p_text(c.p_value),
                p: p_clause(c.p_value),
                kind: if c.regression { "regression" } else { "improvement" },
                profile: s.points.get(c.index).and_then(|p| p.profile.clone()).unwrap_or_default(),
            })
            .collect();
        let recent = s
            .points
            .iter()
            .enumerate()
            .rev()
            .take(RECENT_RUNS)
            .map(|(i, p)| RunRow {
                run: p.name(),
                value: format_value(s, p.value),
                mark: {
                    let mark = match (s.change_points.iter().find(|c| c.index == i), p.current) {
                        (Some(c), _) => {
                            format!("change point ({})", if c.regression { "regression" } else { "improvement" })
                        }
                        (None, true) => "this run".to_owned(),
                        (None, false) => String::new(),
                    };
                    match (&p.profile, mark.is_empty()) {
                        (Some(profile), true) => profile.clone(),
                        (Some(profile), false) => format!("{mark}; {profile}"),
                        (None, _) => mark,
                    }
                },
            })
            .collect();
        SeriesView {
            // A duet's series is its own (each side measured beside the other's load): its title says so.
            title: match &s.design {
                Some(design) => format!("{} / {} ({design}) / {}", s.spec, s.instance, s.metric),
                None => format!("{} / {} / {}", s.spec, s.instance, s.metric),
            },
            subtitle,
            latest: s.points.last().map_or_else(|| "n/a".to_owned(), |p| format_value(s, p.value)),
            change_points,
            recent,
            plot_file: loadgate_plot::trend_file(s),
        }
    }
}

/// The terminal: per series its span, its change points and its newest runs.
pub fn history_text(series: &[HistorySeries]) -> String {
    let mut out = String::new();
    if series.is_empty() {
        out.push_str("no runs in the history match\n");
        return out;
    }
    for s in series {
        let v = SeriesView::new(s);
        let _ = writeln!(out, "{}\n  {}; latest {}", v.title, v.subtitle, v.latest);
        if let Some(profile) = s.points.last().and_then(|p| p.profile.as_ref()) {
            let _ = writeln!(out, "  the newest run was {profile}");
        }
        if v.change_points.is_empty() {
            let _ = writeln!(out, "  no change point");
        }
        for c in &v.change_points {
            let profile = if c.profile.is_empty() { String::new() } else { format!("; that run {}", c.profile) };
            let _ = writeln!(
                out,
                "  change point at {}: {} -> {} ({}), {}: {}{profile}",
                c.at, c.before, c.after, c.change, c.p, c.kind
            );
        }
        let _ = writeln!(out);
    }
    out
}

fn md(text: &str) -> String {
    text.replace('\\', "\\\\").replace('|', "\\|").replace('\n', " ").replace('<', "&lt;").replace('>', "&gt;")
}

/// The Markdown: per series its span, a table of its change points and its newest runs, and a link to its
/// trend plot (`plots` says whether the SVG files are written beside it).
pub fn history_markdown(series: &[HistorySeries], plots: bool) -> String {
    let mut out = String::from("# History\n\n");
    if series.is_empty() {
        out.push_str("No runs in the history match.\n");
        return out;
    }
    for s in series {
        let v = SeriesView::new(s);
        let _ = writeln!(out, "## {}\n\n{}; latest **{}**.\n", md(&v.title), md(&v.subtitle), md(&v.latest));
        if plots {
            let _ = writeln!(out, "![trend of {}]({})\n", md(&v.title), v.plot_file);
        }
        if v.change_points.is_empty() {
            out.push_str("No change point.\n\n");
        } else {
            out.push_str(
                "| Change point at | Before | After | Change | p | |\n| :-- | --: | --: | --: | --: | :-- |\n",
            );
            for c in &v.change_points {
                let kind = if c.kind == "regression" { "**regression**" } else { "improvement" };
                let kind = if c.profile.is_empty() { kind.to_owned() } else { format!("{kind}; {}", md(&c.profile)) };
                let _ = writeln!(
                    out,
                    "| {} | {} | {} | {} | {} | {kind} |",
                    md(&c.at),
                    md(&c.before),
                    md(&c.after),
                    c.change,
                    md(&c.p_value)
                );
            }
            out.push('\n');
        }
        out.push_str("| Run | Value | |\n| :-- | --: | :-- |\n");
        for r in &v.recent {
            let _ = writeln!(out, "| {} | {} | {} |", md(&r.run), md(&r.value), md(&r.mark));
        }
        out.push('\n');
    }
    out
}

/// The self-contained HTML page with a trend plot per series (`plots`: the SVGs in the order of `series`;
/// a series whose plot could not be drawn has an empty string).
pub fn history_html(series: &[HistorySeries], plots: &[String]) -> Result<String, ReportError> {
    let mut env = Environment::new();
    env.set_trim_blocks(true);
    env.set_lstrip_blocks(true);
    env.set_undefined_behavior(UndefinedBehavior::Strict);
    env.add_template("history.html", TEMPLATE).map_err(|e| ReportError::Html(e.to_string()))?;
    let tmpl = env.get_template("history.html").map_err(|e| ReportError::Html(e.to_string()))?;
    #[derive(Serialize)]
    struct Item<'a> {
        view: SeriesView,
        svg: &'a str,
    }
    let items: Vec<Item<'_>> = series
        .iter()
        .enumerate()
        .map(|(i, s)| Item {
            view: SeriesView::new(s),
            svg: plots.get(i).map_or("", |svg| crate::html::without_xml_declaration(svg)),
        })
        .collect();
    let ctx = minijinja::context! {
        items => Value::from_serialize(&items),
        css => Value::from_safe_string(crate::html::stylesheet()),
        version => env!("CARGO_PKG_VERSION"),
    };
    tmpl.render(ctx).map_err(|e| ReportError::Html(e.to_string()))
}

/// The trend plot of a series, or an empty string when it cannot be drawn.
pub fn trend_svg(s: &HistorySeries) -> String {
    loadgate_plot::trend(s).unwrap_or_default()
}

/// Every file `loadgate history show --out DIR` writes, as `(file name, content)`: `history.md`,
/// `history.html`, `history.json` (the series with their change points) and a trend plot per series.
pub fn history_files(series: &[HistorySeries]) -> Result<Vec<(String, String)>, ReportError> {
    let plots: Vec<String> = series.iter().map(trend_svg).collect();
    let json = serde_json::to_string_pretty(series).map_err(|e| ReportError::Html(format!("history.json: {e}")))?;
    let mut files = vec![
        ("history.md".to_owned(), history_markdown(series, true)),
        ("history.html".to_owned(), history_html(series, &plots)?),
        ("history.json".to_owned(), json + "\n"),
    ];
    let mut seen: Vec<String> = Vec::new();
    for (s, svg) in series.iter().zip(plots) {
        let file = loadgate_plot::trend_file(s);
        if !svg.is_empty() && !seen.contains(&file) {
            seen.push(file.clone());
            files.push((file, svg));
        }
    }
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn series() -> HistorySeries {
        loadgate_results::fixture::history_series()
    }

    #[test]
    fn markdown_lists_change_points_and_the_newest_runs() {
        insta::assert_snapshot!(history_markdown(&[series()], true));
    }

    #[test]
    fn a_profiled_run_says_so_and_at_a_change_point_what_its_profile_named() {
        let mut s = series();
        let mark = "profiled (cpu from cpu, 2,236 samples); where: slow_path +18.3 us/request (+16.0..+20.0, p 0.008)";
        s.points[20].profile = Some(mark.to_owned());
        s.points[29].profile = Some("profiled (cpu from cpu, 1,992 samples)".to_owned());
        let text = history_text(&[s.clone()]);
        assert!(text.contains(&format!("regression; that run {mark}")), "{text}");
        assert!(text.contains("the newest run was profiled (cpu from cpu, 1,992 samples)"), "{text}");
        let md = history_markdown(&[s], false);
        assert!(md.contains("this run; profiled (cpu from cpu, 1,992 samples)"), "{md}");
        assert!(md.contains("**regression**; profiled (cpu from cpu"), "{md}");
    }

    #[test]
    fn the_terminal_names_each_change_point() {
        insta::assert_snapshot!(history_text(&[series()]));
    }

    #[test]
    fn the_html_page_is_well_formed_and_embeds_the_trend() {
        let s = series();
        let svg = loadgate_plot::trend(&s).expect("draws");
        let html = history_html(&[s], &[svg]).expect("renders");
        let doc = roxmltree::Document::parse_with_options(
            html.trim_start_matches("<!DOCTYPE html>"),
            roxmltree::ParsingOptions { allow_dtd: true, ..Default::default() },
        )
        .expect("well-formed");
        assert_eq!(doc.descendants().filter(|n| n.has_tag_name("svg")).count(), 1);
        assert!(html.contains("regression"));
    }
}
