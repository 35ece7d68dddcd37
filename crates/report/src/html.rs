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
        css => Value::from_safe_string(stylesheet()),
    };
    tmpl.render(ctx).map_err(|e| ReportError::Html(e.to_string()))
}
