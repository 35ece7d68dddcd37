//! A profile's "where the time went" table for `report.html`: a row per frame, its own (self) and total
//! (inclusive) share of the samples and, when the profile gives the conversion, CPU microseconds per request.
//!
//! Takes plain rows, in the order the caller ranks them, and gives an HTML fragment: every name escaped (C++
//! templates, Java lambdas and hostile input show as written and stay text), the page still well-formed XML.
//! A name longer than [`MAX_FRAME_CHARS`] is cut, its full text in the cell's tooltip.

use loadgate_plot::theme::escape;
use loadgate_results::format;

/// The longest frame name a cell shows in full.
pub const MAX_FRAME_CHARS: usize = 160;

/// One frame of the table.
#[derive(Debug, Clone, PartialEq)]
pub struct TimeRow {
    /// The frame's name, as the profile gives it.
    pub frame: String,
    /// Samples that end in the frame, as a share of all samples (0..=1).
    pub self_share: f64,
    /// Samples through the frame, as a share of all samples (0..=1).
    pub total_share: f64,
    /// CPU microseconds per request spent in the frame itself.
    pub self_us_per_request: Option<f64>,
    /// CPU microseconds per request spent in the frame and its callees.
    pub total_us_per_request: Option<f64>,
}

/// Microseconds per request: three decimals below 10, then as the reports write numbers; `-` when unknown.
fn us(v: Option<f64>) -> String {
    match v {
        Some(v) if v.is_finite() && v.abs() < 10.0 => format!("{v:.3}"),
        Some(v) => format::number(v),
        None => "-".to_owned(),
    }
}

/// The table as an HTML fragment; columns of CPU per request only when some row has them, and a sentence
/// instead of an empty table.
pub fn where_time_went_html(rows: &[TimeRow]) -> String {
    if rows.is_empty() {
        return "<p class=\"muted\">No frames: the profile has no samples.</p>\n".to_owned();
    }
    let per_request = rows.iter().any(|r| r.self_us_per_request.is_some() || r.total_us_per_request.is_some());
    let mut out = String::from(
        "<table class=\"profile\">\n<thead><tr><th>frame</th><th class=\"n\">self</th><th class=\"n\">total</th>",
    );
    if per_request {
        out.push_str("<th class=\"n\">self us/request</th><th class=\"n\">total us/request</th>");
    }
    out.push_str("</tr></thead>\n<tbody>\n");
    for r in rows {
        let count = r.frame.chars().count();
        let cell = if count > MAX_FRAME_CHARS {
            let cut: String = r.frame.chars().take(MAX_FRAME_CHARS - 1).collect();
            format!("<td title=\"{}\"><code>{}…</code></td>", escape(&r.frame), escape(&cut))
        } else {
            format!("<td><code>{}</code></td>", escape(&r.frame))
        };
        out.push_str(&format!(
            "<tr>{cell}<td class=\"n\">{}</td><td class=\"n\">{}</td>",
            format::ratio(r.self_share),
            format::ratio(r.total_share)
        ));
        if per_request {
            out.push_str(&format!(
                "<td class=\"n\">{}</td><td class=\"n\">{}</td>",
                us(r.self_us_per_request),
                us(r.total_us_per_request)
            ));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody>\n</table>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(frame: &str, self_share: f64, total_share: f64, us: Option<(f64, f64)>) -> TimeRow {
        TimeRow {
            frame: frame.to_owned(),
            self_share,
            total_share,
            self_us_per_request: us.map(|u| u.0),
            total_us_per_request: us.map(|u| u.1),
        }
    }

    #[test]
    fn the_table_shows_shares_and_cpu_per_request_with_names_escaped() {
        let rows = [
            row("slow_path", 0.02, 0.31, Some((1.0, 15.5))),
            row("sha256_block", 0.28, 0.28, Some((14.0, 14.0))),
            row("std::map<std::string, int>::find", 0.05, 0.09, Some((2.5, 4.5))),
            row("com.example.Dao.lambda$find$0 & \"friends\"", 0.0001, 0.004, Some((0.005, 0.2))),
            row("</td><script>alert(1)</script>", 0.0, 0.0, None),
            row(&"deep::".repeat(40), 0.0, 0.001, Some((0.0, 123.0))),
        ];
        let html = where_time_went_html(&rows);
        insta::assert_snapshot!(html);
        assert!(!html.contains("<script>"));
        roxmltree::Document::parse(&format!("<div>{html}</div>")).expect("well-formed");
    }

    #[test]
    fn without_a_conversion_there_are_no_cpu_columns_and_without_rows_a_sentence() {
        let html = where_time_went_html(&[row("main", 0.0, 1.0, None)]);
        assert!(!html.contains("us/request"), "{html}");
        assert!(where_time_went_html(&[]).contains("no samples"));
    }
}
