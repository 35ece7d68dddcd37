//! `report.html`: one self-contained page (inline CSS, the SVG plots inline, no script, no font, nothing
//! fetched) with the summary, the SLO verdicts, the timeline, a section per scenario instance with its table
//! and plots, the sweeps, the A/B comparisons and the machine. It follows the reader's light or dark theme, and
//! offers both (a CSS-only switch at the top).
//!
//! Rendered by minijinja from a template shipped in the binary, with HTML escaping; the page is also
//! well-formed XML, so XML tools can read it. It sees the same [`View`] as the Markdown report.

use loadgate_plot::theme;
use loadgate_results::RunResults;
use minijinja::{Environment, UndefinedBehavior, Value};
use serde::Serialize;

use crate::markdown::View;
use crate::{Figure, ReportError};

const TEMPLATE: &str = include_str!("../templates/report.html.j2");

/// A plot as the page embeds it.
#[derive(Debug, Serialize)]
struct Embedded<'a> {
    title: &'a str,
    file: &'a str,
    kind: &'static str,
    subject: Option<&'a str>,
    /// The SVG document, without an XML declaration.
    svg: &'a str,
}

/// A profiled instance as the page shows it: its lines (what each side's profile holds, what got slower) as plain
/// text, and its "where the time went" tables, already HTML (every name escaped).
#[derive(Debug, Serialize)]
struct ProfileSection {
    instance: String,
    lines: Vec<String>,
    /// `(caption, table)`: by total then by self time, for the candidate (or the only side), then the baseline.
    tables: Vec<(String, Value)>,
}

/// The frames each table shows.
const TABLE_ROWS: usize = 15;

fn profile_sections(results: &RunResults) -> Vec<ProfileSection> {
    use loadgate_results::frames::{profile_line, where_text};
    let rows = |frames: &[loadgate_results::FrameTime]| -> Vec<crate::TimeRow> {
        frames
            .iter()
            .take(TABLE_ROWS)
            .map(|f| crate::TimeRow {
                frame: f.name.clone(),
                self_share: f.self_pct / 100.0,
                total_share: f.total_pct / 100.0,
                self_us_per_request: f.self_us_per_request,
                total_us_per_request: f.total_us_per_request,
            })
            .collect()
    };
    let mut sections = Vec::new();
    for s in &results.scenarios {
        let Some(p) = &s.profile else { continue };
        let base = s.ab_baseline.as_deref().and_then(|b| b.profile.as_ref());
        let mut sides = vec![(if base.is_some() { "B (candidate)" } else { "" }, p)];
        sides.extend(base.map(|b| ("A (baseline)", b)));
        let mut lines: Vec<String> = sides
            .iter()
            .map(|(side, p)| if side.is_empty() { profile_line(p) } else { format!("{side}: {}", profile_line(p)) })
            .collect();
        lines.extend(where_text(p, 5));
        let mut tables = Vec::new();
        for (side, p) in &sides {
            let side = if side.is_empty() { String::new() } else { format!("{side}, ") };
            for (by, frames) in [("total", &p.table.by_total), ("self", &p.table.by_self)] {
                let caption = format!("Where the time went: {side}top frames by {by} time");
                tables.push((caption, Value::from_safe_string(crate::where_time_went_html(&rows(frames)))));
            }
        }
        sections.push(ProfileSection { instance: s.name.clone(), lines, tables });
    }
    sections
}

/// The page's stylesheet: the plots' theme properties for both themes, forced by the switch or following the
/// reader's preference.
pub(crate) fn stylesheet() -> String {
    let (light, dark) = (theme::light_properties(), theme::dark_properties());
    format!(
        ":root{{color-scheme:light;{light}}}\n\
         @media (prefers-color-scheme: dark){{:root{{color-scheme:dark;{dark}}}}}\n\
         :root:has(#theme-light:checked){{color-scheme:light;{light}}}\n\
         :root:has(#theme-dark:checked){{color-scheme:dark;{dark}}}\n{}",
        include_str!("../templates/report.css")
    )
}

/// An SVG document as a page embeds it inline: without its XML declaration.
pub(crate) fn without_xml_declaration(svg: &str) -> &str {
    svg.trim_start_matches(|c: char| c != '<')
        .strip_prefix("<?xml")
        .map_or(svg, |rest| rest.find("?>").map_or(svg, |end| rest[end + 2..].trim_start()))
}

/// Renders the HTML report of a run with its plots (`(figure, SVG)` pairs as drawn by `loadgate-plot`; a plot
/// that could not be drawn is simply left out).
pub fn html(results: &RunResults, plots: &[(Figure, String)]) -> Result<String, ReportError> {
    let mut env = Environment::new();
    env.set_trim_blocks(true);
    env.set_lstrip_blocks(true);
    env.set_undefined_behavior(UndefinedBehavior::Strict);
    env.add_template("report.html", TEMPLATE).map_err(|e| ReportError::Html(e.to_string()))?;
    let tmpl = env.get_template("report.html").map_err(|e| ReportError::Html(e.to_string()))?;
    let figures: Vec<Embedded<'_>> = plots
        .iter()
        .map(|(f, svg)| Embedded {
            title: &f.title,
            file: &f.file,
            kind: f.kind.label(),
            subject: f.subject(),
            svg: without_xml_declaration(svg),
        })
        .collect();
    let view = View::new(results);
    let ctx = minijinja::context! {
        report => Value::from_serialize(&view),
        results => Value::from_serialize(results),
        figures => Value::from_serialize(&figures),
        profiles => Value::from_serialize(profile_sections(results)),
        css => Value::from_safe_string(stylesheet()),
    };
    tmpl.render(ctx).map_err(|e| ReportError::Html(e.to_string()))
}
