//! Flame graphs of a server's profile, and the differential flame graph of an A/B run, as self-contained SVG.
//!
//! - [`flame_graph`]`(stacks, options)`: the classic flame graph of flamegraph.pl (root at the bottom, callees
//!   above their callers, so the hottest code forms the tops of the flames): stacks (frames root first, a sample
//!   count each) merged by name along the path, each frame as wide as its samples (inclusive), children in the
//!   order of their names. The classic orientation is the one async-profiler, perf's and inferno's graphs show,
//!   so readers find their way at once.
//! - [`diff_flame_graph`]`(base, candidate, options)`: the differential flame graph of Brendan Gregg's
//!   difffolded and inferno-diff-folded: the candidate's shape, each frame coloured by how much its own (self)
//!   cost changed, red where it grew and blue where it shrank, the deeper the larger the change, near white for
//!   none. The change is in CPU microseconds per request when both sides give their conversion (the gate judges
//!   CPU per request: a side that served more requests has more samples without any frame costing more), else
//!   in shares of each side's samples. [`DiffColour::Total`] colours by the inclusive change instead (every
//!   caller of a grown frame then turns red too, which is why Gregg colours by self). Frames only the baseline
//!   has are listed under the graph, not drawn.
//!
//! Every frame is a `<g>` with a `<title>` (the tooltip: full name, samples, share, self, and CPU
//! microseconds per request when the options carry the conversion), a `<rect>` and, when at least three
//! characters fit, a `<text>` label cut to fit with an ellipsis. Colours are stable, derived from a hash of the
//! name (flamegraph.pl's warm palette); they are written as `rgb(...)`, never as one of the theme's colours, so
//! they stay as they are in the dark theme while the page, title and notes follow it.
//!
//! Output is bounded whatever the input: frames narrower than [`FlameOptions::min_share`] of all samples, deeper
//! than [`FlameOptions::max_depth`] levels, or beyond [`FlameOptions::max_frames`] (the widest are kept) are left
//! out and counted in a note under the graph; names in tooltips are cut at [`MAX_NAME_CHARS`]. A profile without
//! samples gives a graph that says so. The SVG is written by hand, not with plotters: plotters has no per-shape
//! tooltips, and a flame graph needs nothing else than rectangles and text. No script unless
//! [`FlameOptions::zoom`] asks for click-to-zoom: report.html embeds plots inline and runs none.

use std::fmt::Write as _;

use loadgate_results::format;

use crate::flame_tree::{Selection, Tree, ROOT};
use crate::shared::shorten;
use crate::shared::PlotError;
use crate::theme::{escape, finish, RGBColor, BG, FG, GRID, GRID_LIGHT, MUTED};

const PLOT: &str = "the flame graph";
/// The longest frame name a tooltip shows in full.
pub const MAX_NAME_CHARS: usize = 1000;
/// The smallest change a differential graph shows in full colour, as a share of the larger side's whole.
pub const FULL_COLOUR_FLOOR: f64 = 0.05;
/// The most frames of the baseline only that a differential graph lists by name.
const MAX_GONE_LISTED: usize = 8;

/// The click-to-zoom script ([`FlameOptions::zoom`]): it finds its own graph (`document.currentScript`), so
/// several graphs inline in one page stay apart; it names no id and fetches nothing.
const ZOOM_SCRIPT: &str = include_str!("flame/zoom.js");

const PAD: f64 = 10.0;
const TOP: f64 = 56.0;
const ROW: f64 = 17.0;
const FRAME_HEIGHT: f64 = 16.0;
const FONT_SIZE: f64 = 12.0;
/// A generous width of one character of the label font, so labels stay inside their frame.
const CHAR_WIDTH: f64 = 7.0;
const NOTE_LINE: f64 = 16.0;

/// How a flame graph is drawn and labelled.
#[derive(Debug, Clone, PartialEq)]
pub struct FlameOptions {
    /// The heading: `CPU profile: plaintext`.
    pub title: String,
    /// What the graph shows, before the sample count: `CPU, candidate` gives `CPU, candidate, 12,345 samples`.
    pub subtitle: String,
    /// CPU microseconds per request that one sample stands for (sample period / requests of the round); tooltips
    /// then give each frame's CPU per request.
    pub us_per_sample_per_request: Option<f64>,
    /// The width of the SVG in pixels (clamped to 300..=10,000).
    pub width: u32,
    /// Frames with a smaller share of all samples are not drawn (0.001: 0.1%).
    pub min_share: f64,
    /// The deepest level drawn (the root is level 0).
    pub max_depth: usize,
    /// The most frames drawn: the widest are kept.
    pub max_frames: usize,
    /// A small inline script: a click on a frame zooms into it, a click on the root zooms out. Off by default:
    /// report.html runs no script; a flame graph written as a file of its own may have it.
    pub zoom: bool,
}

impl Default for FlameOptions {
    fn default() -> Self {
        FlameOptions {
            title: "Flame graph".to_owned(),
            subtitle: String::new(),
            us_per_sample_per_request: None,
            width: 1200,
            min_share: 0.001,
            max_depth: 256,
            max_frames: 2000,
            zoom: false,
        }
    }
}

/// What colours a frame of a differential flame graph.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DiffColour {
    /// The change of the frame's own (self) cost, as difffolded: the frames that changed stand out.
    #[default]
    Own,
    /// The change of its inclusive cost: a grown frame and all its callers.
    Total,
}

/// How a differential flame graph is drawn: the candidate's options (its title, size, limits and conversion)
/// and the baseline's conversion.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct DiffOptions {
    pub flame: FlameOptions,
    /// The baseline's CPU microseconds per request per sample. With the candidate's, changes are in CPU per
    /// request; without either, in shares of each side's samples.
    pub base_us_per_sample_per_request: Option<f64>,
    pub colour: DiffColour,
}

/// Draws the flame graph of folded stacks (frames root first, samples each).
pub fn flame_graph(stacks: &[(Vec<String>, u64)], options: &FlameOptions) -> Result<String, PlotError> {
    let scale = conversion(options.us_per_sample_per_request)?;
    let tree = Tree::build(stacks);
    let layout = Layout::new(&tree, options);
    let mut subtitle = with_samples(&options.subtitle, tree.total());
    if let (Some(us), true) = (scale, tree.total() > 0) {
        subtitle.push_str(&format!(", {} us CPU/request", us_text(tree.total() as f64 * us)));
    }
    let mut notes = layout.elided_notes(options);
    if tree.total() > 0 {
        notes.push(
            "Root at the bottom, callees above their callers; each frame as wide as its share of the samples. \
             Hover a frame for its numbers."
                .to_owned(),
        );
    }
    let frames = layout.frames(&tree, |node| {
        (hot_colour(tree.name(node)), format!("{}\n{}", tree.name(node), side_line("", &tree, node, scale)))
    });
    Ok(layout.document(options, &subtitle, &frames, &notes, tree.total() == 0, "no samples"))
}

/// Draws the differential flame graph of a candidate against its baseline: the candidate's shape, each frame
/// coloured by its change (see the module's documentation).
pub fn diff_flame_graph(
    base: &[(Vec<String>, u64)],
    cand: &[(Vec<String>, u64)],
    options: &DiffOptions,
) -> Result<String, PlotError> {
    let cand_scale = conversion(options.flame.us_per_sample_per_request)?;
    let base_scale = conversion(options.base_us_per_sample_per_request)?;
    let per_request = cand_scale.zip(base_scale);
    let (cand_tree, base_tree) = (Tree::build(cand), Tree::build(base));
    let layout = Layout::new(&cand_tree, &options.flame);
    // A side's value of a count: CPU us per request, or a share of the side's samples.
    let value = |tree: &Tree, count: u64, us: Option<f64>| match per_request {
        Some(_) => count as f64 * us.unwrap_or(0.0),
        None => share(count, tree.total()),
    };
    let cand_value = |count: u64| value(&cand_tree, count, cand_scale);
    let base_value = |count: u64| value(&base_tree, count, base_scale);
    let matches = cand_tree.matches(&base_tree);
    let delta = |node: usize| -> f64 {
        let n = &cand_tree.nodes[node];
        let b = matches[node].map(|m| &base_tree.nodes[m]);
        match options.colour {
            DiffColour::Own => cand_value(n.own) - base_value(b.map_or(0, |b| b.own)),
            DiffColour::Total => cand_value(n.total) - base_value(b.map_or(0, |b| b.total)),
        }
    };
    // Full colour at the largest change drawn, and never below 5% of the larger side's whole, so that the noise
    // of an A/A pair (a fraction of a percent of the samples) stays pale.
    let floor = FULL_COLOUR_FLOOR * cand_value(cand_tree.total()).max(base_value(base_tree.total()));
    let largest = layout.selection.drawn.iter().filter(|n| **n != ROOT).map(|n| delta(*n).abs()).fold(0.0, f64::max);
    let full = largest.max(floor).max(f64::MIN_POSITIVE);
    let unit = if per_request.is_some() { " us/request" } else { " of samples" };
    let change = |d: f64| -> String {
        if per_request.is_some() {
            format!("{}{}", if d >= 0.0 { "+" } else { "-" }, us_text(d.abs()))
        } else {
            format!("{}{:.2} pp", if d >= 0.0 { "+" } else { "-" }, d.abs() * 100.0)
        }
    };

    let frames = layout.frames(&cand_tree, |node| {
        let d = delta(node);
        let n = &cand_tree.nodes[node];
        let mut tip = format!("{}\n{}", cand_tree.name(node), side_line("candidate: ", &cand_tree, node, cand_scale));
        match matches[node] {
            Some(m) => tip.push_str(&format!("\n{}", side_line("baseline: ", &base_tree, m, base_scale))),
            None => tip.push_str("\nbaseline: not there"),
        }
        let b = matches[node].map(|m| &base_tree.nodes[m]);
        tip.push_str(&format!(
            "\nchange: {} total, {} self{}",
            change(cand_value(n.total) - base_value(b.map_or(0, |b| b.total))),
            change(cand_value(n.own) - base_value(b.map_or(0, |b| b.own))),
            if per_request.is_some() { " (us/request)" } else { " (share of samples)" }
        ));
        (diff_colour(d / full), tip)
    });

    let mut subtitle = with_samples(&options.flame.subtitle, cand_tree.total());
    subtitle.push_str(&format!(" against {} in the baseline", format::count(base_tree.total())));
    let mut notes = layout.elided_notes(&options.flame);
    if cand_tree.total() > 0 {
        let basis = match options.colour {
            DiffColour::Own => "own (self)",
            DiffColour::Total => "total (inclusive)",
        };
        let full_text = if per_request.is_some() {
            format!("{} us/request", us_text(full))
        } else {
            format!("{:.2} pp of samples", full * 100.0)
        };
        notes.push(format!(
            "The candidate's frames, coloured by the change of each frame's {basis} cost{}: red grew, blue shrank, \
             full colour at {full_text}.",
            if per_request.is_some() { " in CPU per request" } else { " as a share of its side's samples" }
        ));
        if base_tree.total() == 0 {
            notes.push("The baseline has no samples: every frame is new.".to_owned());
        }
        let gone = cand_tree.gone(&base_tree);
        if !gone.is_empty() {
            let plural = if gone.len() == 1 { "" } else { "s" };
            notes
                .push(format!("Only in the baseline ({} frame{plural}, not drawn):", format::count(gone.len() as u64)));
            let room = ((layout.width - 2.0 * PAD - 20.0) / CHAR_WIDTH).max(10.0) as usize;
            for node in gone.iter().take(MAX_GONE_LISTED) {
                let count = base_tree.nodes[*node].total;
                let figure = match per_request {
                    Some(_) => format!("{}{unit}", us_text(base_value(count))),
                    None => format::ratio(base_value(count)),
                };
                let tail = format!(": {figure}, {} samples", format::count(count));
                let name = shorten(&path_name(&base_tree, *node), room.saturating_sub(tail.chars().count()).max(10));
                notes.push(format!("  {name}{tail}"));
            }
            if gone.len() > MAX_GONE_LISTED {
                notes.push(format!("  and {} more", format::count((gone.len() - MAX_GONE_LISTED) as u64)));
            }
        }
    }
    Ok(layout.document(
        &options.flame,
        &subtitle,
        &frames,
        &notes,
        cand_tree.total() == 0,
        "no samples in the candidate",
    ))
}

/// Checks a conversion to CPU per request: finite and not negative.
fn conversion(us: Option<f64>) -> Result<Option<f64>, PlotError> {
    match us {
        Some(v) if !v.is_finite() || v < 0.0 => Err(PlotError::Draw {
            plot: PLOT,
            message: format!("CPU microseconds per sample per request must be a finite number >= 0, not {v}"),
        }),
        other => Ok(other),
    }
}

fn share(count: u64, total: u64) -> f64 {
    if total == 0 {
        0.0
    } else {
        count as f64 / total as f64
    }
}

/// `CPU, candidate, 12,345 samples`.
fn with_samples(subtitle: &str, samples: u64) -> String {
    let count = format!("{} sample{}", format::count(samples), if samples == 1 { "" } else { "s" });
    if subtitle.is_empty() {
        count
    } else {
        format!("{subtitle}, {count}")
    }
}

/// Microseconds: three decimals below 10, then as the reports write numbers.
fn us_text(us: f64) -> String {
    if us.abs() < 10.0 {
        format!("{us:.3}")
    } else {
        format::number(us)
    }
}

/// One side's numbers of a frame: `1,234 samples, 12.3% (self 1.1%), 45.600 us/request (self 4.100)`.
fn side_line(label: &str, tree: &Tree, node: usize, us: Option<f64>) -> String {
    let n = &tree.nodes[node];
    let mut line = format!(
        "{label}{} samples, {} (self {})",
        format::count(n.total),
        format::ratio(share(n.total, tree.total())),
        format::ratio(share(n.own, tree.total()))
    );
    if let Some(us) = us {
        line.push_str(&format!(", {} us/request (self {})", us_text(n.total as f64 * us), us_text(n.own as f64 * us)));
    }
    line
}

/// A frame with its callers, for a frame listed apart: `main > handler > slow_path`, the innermost last.
fn path_name(tree: &Tree, node: usize) -> String {
    let mut path = vec![node];
    let mut at = node;
    while tree.nodes[at].depth > 1 {
        at = tree.nodes[at].parent;
        path.push(at);
    }
    let names: Vec<&str> = path.iter().rev().map(|n| tree.name(*n)).collect();
    names.join(" > ")
}

/// FNV-1a: stable across versions and platforms.
fn hash(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}

/// flamegraph.pl's warm palette, the three components chosen by a hash of the name.
fn hot_colour(name: &str) -> String {
    let h = hash(name);
    let part = |shift: u32| ((h >> shift) & 0xFF) as f64 / 255.0;
    let (r, g, b) = (205.0 + 50.0 * part(16), 230.0 * part(0), 55.0 * part(8));
    format!("rgb({},{},{})", r as u8, g as u8, b as u8)
}

/// The colour of a change, `-1` (shrank, at the full scale) to `1` (grew): near white to red or blue.
fn diff_colour(ratio: f64) -> String {
    let t = if ratio.is_finite() { ratio.clamp(-1.0, 1.0) } else { 0.0 };
    let fade = |from: f64, to: f64| (from + (to - from) * t.abs()).round() as u8;
    if t >= 0.0 {
        format!("rgb({},{},{})", fade(248.0, 255.0), fade(248.0, 78.0), fade(248.0, 78.0))
    } else {
        format!("rgb({},{},{})", fade(248.0, 58.0), fade(248.0, 118.0), fade(248.0, 255.0))
    }
}

/// The smallest share of the samples a frame drawn has: the option within 0..=1, or 0.1% when it is no number.
fn min_share(options: &FlameOptions) -> f64 {
    if options.min_share.is_finite() {
        options.min_share.clamp(0.0, 1.0)
    } else {
        0.001
    }
}

/// Where the frames of a tree go.
struct Layout {
    selection: Selection,
    starts: Vec<f64>,
    width: f64,
    total: u64,
}

impl Layout {
    fn new(tree: &Tree, options: &FlameOptions) -> Layout {
        let width = f64::from(options.width.clamp(300, 10_000));
        let min_samples = (tree.total() as f64 * min_share(options)).ceil() as u64;
        let selection = tree.select(min_samples, options.max_depth, options.max_frames);
        let starts = tree.starts(&selection);
        Layout { selection, starts, width, total: tree.total() }
    }

    fn plot_width(&self) -> f64 {
        self.width - 2.0 * PAD
    }

    fn rows(&self) -> usize {
        if self.selection.drawn.is_empty() {
            3
        } else {
            self.selection.max_depth + 1
        }
    }

    /// What was left out, as notes: none when everything is drawn.
    fn elided_notes(&self, options: &FlameOptions) -> Vec<String> {
        let s = &self.selection;
        let mut parts = Vec::new();
        if s.narrow > 0 {
            let pct = format!("{}%", trimmed(min_share(options) * 100.0));
            parts.push(format!("{} frames under {pct} of the samples", format::count(s.narrow)));
        }
        if s.deep > 0 {
            parts.push(format!("{} frames deeper than {} levels", format::count(s.deep), options.max_depth));
        }
        if s.over_budget > 0 {
            parts.push(format!(
                "{} frames beyond the {} widest drawn",
                format::count(s.over_budget),
                format::count(s.drawn.len() as u64)
            ));
        }
        if parts.is_empty() {
            Vec::new()
        } else {
            vec![format!("Not drawn: {}.", parts.join(", "))]
        }
    }

    /// The frames drawn, each as a `<g>` with its tooltip, rectangle and label; `paint` gives a frame's fill and
    /// tooltip text.
    fn frames(&self, tree: &Tree, paint: impl Fn(usize) -> (String, String)) -> String {
        let mut out = String::new();
        let total = self.total.max(1) as f64;
        for node in &self.selection.drawn {
            let n = &tree.nodes[*node];
            let x = PAD + self.starts[*node] * self.plot_width();
            let w = n.total as f64 / total * self.plot_width();
            let y = TOP + (self.selection.max_depth - n.depth) as f64 * ROW;
            let (fill, tip) = paint(*node);
            let tip = cut_name(&tip);
            let _ = write!(
                out,
                "<g class=\"lg-frame\"><title>{}</title><rect x=\"{x:.2}\" y=\"{y:.1}\" width=\"{w:.2}\" height=\"{FRAME_HEIGHT}\" rx=\"2\" fill=\"{fill}\"/>",
                escape(&tip)
            );
            let room = ((w - 6.0) / CHAR_WIDTH).floor();
            if room >= 3.0 {
                let _ = write!(
                    out,
                    "<text x=\"{:.2}\" y=\"{:.1}\" font-size=\"{FONT_SIZE}\" fill=\"rgb(0,0,0)\" stroke=\"none\">{}</text>",
                    x + 3.0,
                    y + FRAME_HEIGHT - 4.0,
                    escape(&shorten(tree.name(*node), room as usize))
                );
            }
            out.push_str("</g>\n");
        }
        out
    }

    /// The whole document: heading, the frames on their panel (or `empty_text` when there are no samples) and
    /// the notes.
    fn document(
        &self,
        options: &FlameOptions,
        subtitle: &str,
        frames: &str,
        notes: &[String],
        empty: bool,
        empty_text: &str,
    ) -> String {
        let w = self.width;
        let zoom = options.zoom && !empty;
        let mut notes = notes.to_vec();
        if zoom {
            notes.push("Click a frame to zoom into it, the root (all) to zoom out.".to_owned());
        }
        let panel = self.rows() as f64 * ROW;
        let notes_top = TOP + panel + 8.0;
        let h = notes_top + notes.len() as f64 * NOTE_LINE + 8.0;
        let mut body = format!(
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\">\n\
             <rect x=\"0\" y=\"0\" width=\"{w}\" height=\"{h}\" fill=\"{}\"/>\n\
             <text x=\"{:.1}\" y=\"24\" text-anchor=\"middle\" font-size=\"17\" fill=\"{}\">{}</text>\n\
             <text x=\"{:.1}\" y=\"42\" text-anchor=\"middle\" font-size=\"12\" fill=\"{}\">{}</text>\n\
             <rect x=\"{PAD}\" y=\"{TOP}\" width=\"{:.2}\" height=\"{panel}\" fill=\"{}\"/>\n",
            hex(BG),
            w / 2.0,
            hex(FG),
            escape(&shorten(&options.title, ((w - 2.0 * PAD) / 9.0) as usize)),
            w / 2.0,
            hex(MUTED),
            escape(&shorten(subtitle, ((w - 2.0 * PAD) / CHAR_WIDTH) as usize)),
            self.plot_width(),
            hex(GRID_LIGHT),
        );
        if empty {
            let _ = writeln!(
                body,
                "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\" font-size=\"14\" fill=\"{}\">{}</text>",
                w / 2.0,
                TOP + panel / 2.0 + 5.0,
                hex(MUTED),
                escape(&format!("{}: nothing to draw", capitalised(empty_text)))
            );
        } else {
            // A thin grid-coloured outline, so neighbours (pale frames of a differential graph above all) stay
            // apart; labels draw none.
            let _ = writeln!(body, "<g class=\"lg-frames\" stroke=\"{}\" stroke-width=\"0.5\">", hex(GRID));
            body.push_str(frames);
            body.push_str("</g>\n");
        }
        for (i, note) in notes.iter().enumerate() {
            let _ = writeln!(
                body,
                "<text x=\"{PAD}\" y=\"{:.1}\" font-size=\"12\" fill=\"{}\" xml:space=\"preserve\">{}</text>",
                notes_top + (i as f64 + 1.0) * NOTE_LINE - 4.0,
                hex(MUTED),
                escape(note)
            );
        }
        if zoom {
            let script = ZOOM_SCRIPT
                .replace("__PAD__", &PAD.to_string())
                .replace("__PLOT_WIDTH__", &format!("{:.2}", self.plot_width()))
                .replace("__CHAR__", &CHAR_WIDTH.to_string());
            let _ = write!(body, "<script type=\"text/javascript\"><![CDATA[\n{script}]]></script>\n");
        }
        body.push_str("</svg>\n");
        let description = if empty {
            format!("Flame graph: {empty_text}.")
        } else {
            format!(
                "Flame graph, root at the bottom: {}, {} frames drawn.",
                subtitle,
                format::count(self.selection.drawn.len() as u64)
            )
        };
        finish(&body, &options.title, &description, "flame")
    }
}

/// A colour of the theme as its attributes write it (`#1F2328`), so the stylesheet maps it to the reader's
/// theme.
fn hex(c: RGBColor) -> String {
    format!("#{:02X}{:02X}{:02X}", c.0, c.1, c.2)
}

/// A number with at most four decimals and no trailing zeros: `0.1`, `2`, `0.0125`.
fn trimmed(v: f64) -> String {
    let text = format!("{v:.4}");
    text.trim_end_matches('0').trim_end_matches('.').to_owned()
}

fn capitalised(text: &str) -> String {
    let mut chars = text.chars();
    chars.next().map_or_else(String::new, |c| c.to_uppercase().chain(chars).collect())
}

/// A tooltip whose first line (the frame's name) is cut at [`MAX_NAME_CHARS`].
fn cut_name(tip: &str) -> String {
    let (name, rest) = tip.split_once('\n').unwrap_or((tip, ""));
    if name.chars().count() <= MAX_NAME_CHARS {
        return tip.to_owned();
    }
    format!("{}\n{rest}", shorten(name, MAX_NAME_CHARS))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colours_are_stable_and_warm() {
        assert_eq!(hot_colour("main"), hot_colour("main"));
        assert_ne!(hot_colour("main"), hot_colour("handler"));
        for name in ["a", "main", "std::vector<int>::push_back", "λ"] {
            let c = hot_colour(name);
            let parts: Vec<u8> =
                c.trim_start_matches("rgb(").trim_end_matches(')').split(',').map(|p| p.parse().unwrap()).collect();
            assert!(parts[0] >= 205 && parts[1] <= 230 && parts[2] <= 55, "{c}");
        }
    }

    #[test]
    fn changes_fade_from_near_white_to_red_or_blue() {
        assert_eq!(diff_colour(0.0), "rgb(248,248,248)");
        assert_eq!(diff_colour(1.0), "rgb(255,78,78)");
        assert_eq!(diff_colour(-1.0), "rgb(58,118,255)");
        assert_eq!(diff_colour(7.0), diff_colour(1.0), "beyond the scale is full colour");
        assert_eq!(diff_colour(f64::NAN), diff_colour(0.0));
    }

    #[test]
    fn long_names_are_cut_in_tooltips_and_the_numbers_kept() {
        let tip = format!("{}\n3 samples", "x".repeat(5000));
        let cut = cut_name(&tip);
        assert!(cut.chars().count() < MAX_NAME_CHARS + 20);
        assert!(cut.ends_with("…\n3 samples"));
    }

    #[test]
    fn conversions_must_be_finite_and_not_negative() {
        assert!(conversion(Some(f64::NAN)).is_err());
        assert!(conversion(Some(-1.0)).is_err());
        assert_eq!(conversion(Some(2.5)).unwrap(), Some(2.5));
        assert_eq!(conversion(None).unwrap(), None);
    }
}
