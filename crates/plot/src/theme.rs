//! Colours that read in a light and a dark theme, and the wrapping that makes an SVG of plotters' follow the
//! reader's theme.
//!
//! plotters writes colours as attributes (`fill="#0969DA"`). Every colour a plot uses is one of the light
//! theme's colours below, all distinct, so the SVG reads as it is where CSS is off; a `<style>` inside the SVG
//! maps each of them, by attribute selector, to a CSS custom property (`--lg-s1`) whose value follows
//! `prefers-color-scheme`. A page that embeds the SVG inline (report.html) can force either theme by setting
//! the same properties on a more specific selector.

pub use plotters::style::RGBColor;

/// A colour of the palette: its light-theme value (what the SVG's attributes carry), its CSS property and its
/// dark-theme value.
struct Swatch {
    light: RGBColor,
    property: &'static str,
    dark: &'static str,
}

/// The page behind a plot.
pub const BG: RGBColor = RGBColor(0xFF, 0xFF, 0xFF);
/// Text and axes.
pub const FG: RGBColor = RGBColor(0x1F, 0x23, 0x28);
/// Secondary text (phase names, notes).
pub const MUTED: RGBColor = RGBColor(0x59, 0x63, 0x6E);
/// Major grid lines.
pub const GRID: RGBColor = RGBColor(0xD0, 0xD7, 0xDE);
/// Minor grid lines.
pub const GRID_LIGHT: RGBColor = RGBColor(0xEA, 0xEE, 0xF2);
/// Latency, throughput: the first series.
pub const BLUE: RGBColor = RGBColor(0x09, 0x69, 0xDA);
/// p99, service time: the second series.
pub const ORANGE: RGBColor = RGBColor(0xBC, 0x4C, 0x00);
/// Send lag; a passing check.
pub const GREEN: RGBColor = RGBColor(0x1A, 0x7F, 0x37);
/// Connections and users.
pub const PURPLE: RGBColor = RGBColor(0x82, 0x50, 0xDF);
/// Errors; a failing check; the knee.
pub const RED: RGBColor = RGBColor(0xCF, 0x22, 0x2E);
/// Non-2xx responses; an inconclusive check; warmup shading.
pub const AMBER: RGBColor = RGBColor(0x9A, 0x67, 0x00);
/// The baseline (A) of an A/B run; a target rate.
pub const SLATE: RGBColor = RGBColor(0x6E, 0x77, 0x81);
/// Users active.
pub const TEAL: RGBColor = RGBColor(0x1B, 0x7C, 0x83);

const PALETTE: [Swatch; 13] = [
    Swatch { light: BG, property: "--lg-bg", dark: "#0D1117" },
    Swatch { light: FG, property: "--lg-fg", dark: "#E6EDF3" },
    Swatch { light: MUTED, property: "--lg-muted", dark: "#9198A1" },
    Swatch { light: GRID, property: "--lg-grid", dark: "#3D444D" },
    Swatch { light: GRID_LIGHT, property: "--lg-grid-light", dark: "#262C36" },
    Swatch { light: BLUE, property: "--lg-blue", dark: "#4493F8" },
    Swatch { light: ORANGE, property: "--lg-orange", dark: "#F0883E" },
    Swatch { light: GREEN, property: "--lg-green", dark: "#3FB950" },
    Swatch { light: PURPLE, property: "--lg-purple", dark: "#AB7DF8" },
    Swatch { light: RED, property: "--lg-red", dark: "#F85149" },
    Swatch { light: AMBER, property: "--lg-amber", dark: "#D29922" },
    Swatch { light: SLATE, property: "--lg-slate", dark: "#8B949E" },
    Swatch { light: TEAL, property: "--lg-teal", dark: "#39C5CF" },
];

/// The font family of every text.
pub const FONT: &str = "sans-serif";

fn hex(c: RGBColor) -> String {
    format!("#{:02X}{:02X}{:02X}", c.0, c.1, c.2)
}

/// The custom properties of one theme: `--lg-bg:#FFFFFF;--lg-fg:...;`.
fn properties(dark: bool) -> String {
    PALETTE.iter().map(|s| format!("{}:{};", s.property, if dark { s.dark.to_owned() } else { hex(s.light) })).collect()
}

/// The CSS that makes a page force the light theme on the plots it embeds inline, for `selector`.
pub fn light_properties() -> String {
    properties(false)
}

/// The CSS custom properties of the dark theme, for a page that forces it.
pub fn dark_properties() -> String {
    properties(true)
}

/// The stylesheet inside every SVG: the properties of both themes, and each colour attribute mapped to its
/// property.
fn stylesheet() -> String {
    let mut css =
        format!(":root{{{}}}@media (prefers-color-scheme: dark){{:root{{{}}}}}", properties(false), properties(true));
    for s in &PALETTE {
        let h = hex(s.light);
        css.push_str(&format!("[fill=\"{h}\"]{{fill:var({p})}}[stroke=\"{h}\"]{{stroke:var({p})}}", p = s.property));
    }
    css
}

/// Escapes text for XML content and attributes.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c if (c as u32) < 0x20 && c != '\n' && c != '\t' => out.push(' '),
            // Not characters XML allows.
            '\u{FFFE}' | '\u{FFFF}' => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

/// Wraps what plotters drew: the root element gets a class, `role="img"`, a `<title>` and `<desc>` for screen
/// readers and file browsers, and the theme's stylesheet.
pub fn finish(svg: &str, title: &str, description: &str, kind: &str) -> String {
    let Some(open_end) = svg.find('>') else { return svg.to_owned() };
    let (open, rest) = svg.split_at(open_end);
    let rest = &rest[1..];
    format!(
        "{open} class=\"loadgate-plot\" data-plot=\"{kind}\" role=\"img\" font-family=\"{FONT}\">\n<title>{}</title>\n<desc>{}</desc>\n<style>{}</style>\n{rest}",
        escape(title),
        escape(description),
        stylesheet()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn palette_colours_are_distinct_so_each_maps_to_one_property() {
        for (i, a) in PALETTE.iter().enumerate() {
            for b in &PALETTE[i + 1..] {
                assert_ne!(hex(a.light), hex(b.light), "{} and {}", a.property, b.property);
            }
        }
    }
}
