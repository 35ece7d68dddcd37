//! Diagnostics: every problem of a spec, located, explained, with a suggested fix.

use std::fmt::{self, Write as _};

use crate::location::{Path, Span};
use crate::secrets::{Redactor, REDACTED};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    Error,
    Warning,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Diagnostic {
    pub severity: Severity,
    /// One sentence: what is wrong.
    pub message: String,
    pub path: Path,
    pub span: Option<Span>,
    /// How long the underlined token is, when known.
    pub width: Option<usize>,
    pub expected: Option<String>,
    pub found: Option<String>,
    pub help: Option<String>,
    /// The matrix cells the problem occurs in, when it does not occur in all of them.
    pub cells: Vec<String>,
}

impl Diagnostic {
    pub fn error(path: &Path, span: Option<Span>, message: impl Into<String>) -> Self {
        Diagnostic {
            severity: Severity::Error,
            message: message.into(),
            path: path.clone(),
            span,
            width: None,
            expected: None,
            found: None,
            help: None,
            cells: Vec::new(),
        }
    }
    pub fn warning(path: &Path, span: Option<Span>, message: impl Into<String>) -> Self {
        Diagnostic { severity: Severity::Warning, ..Diagnostic::error(path, span, message) }
    }
    pub fn expected(mut self, e: impl Into<String>) -> Self {
        self.expected = Some(e.into());
        self
    }
    pub fn found(mut self, f: impl Into<String>) -> Self {
        self.found = Some(f.into());
        self
    }
    pub fn help(mut self, h: impl Into<String>) -> Self {
        self.help = Some(h.into());
        self
    }
    pub fn help_opt(mut self, h: Option<String>) -> Self {
        if h.is_some() {
            self.help = h;
        }
        self
    }
    pub fn width(mut self, w: usize) -> Self {
        self.width = Some(w);
        self
    }

    /// Renders the diagnostic the way a compiler would: header, `file:line:col`, the source line with a caret,
    /// then the path, what was expected and found, and the fix. Control characters are shown escaped (`\n`,
    /// `\u{1b}`), so no input can start a line of its own in a log (a CI system's workflow command).
    pub fn render(&self, file: &str, source: &str) -> String {
        let line = source_line(source, self.span.unwrap_or(Span { line: 1, col: 1 }).line);
        self.render_line(file, line)
    }

    /// Renders the diagnostic with its source line (the line `span` points into) already found.
    fn render_line(&self, file: &str, line_text: Option<&str>) -> String {
        let mut out = String::new();
        let label = match self.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
        };
        let _ = writeln!(out, "{label}: {}", escape_controls(&self.message));
        let span = self.span.unwrap_or(Span { line: 1, col: 1 });
        let _ = writeln!(out, "  --> {}:{}:{}", escape_controls(file), span.line, span.col);
        if let Some(line_text) = line_text {
            let number = span.line.to_string();
            let pad = " ".repeat(number.len());
            let (shown, prefix, caret) = self.snippet(line_text, span.col.saturating_sub(1));
            let _ = writeln!(out, "{pad} |");
            let _ = writeln!(out, "{number} | {shown}");
            let _ = writeln!(out, "{pad} | {prefix}{}", "^".repeat(caret));
        }
        let _ = writeln!(out, "   = at: {}", escape_controls(self.path.as_str()));
        if !self.cells.is_empty() {
            let _ = writeln!(
                out,
                "   = in matrix cell{}: {}",
                if self.cells.len() == 1 { "" } else { "s" },
                escape_controls(&self.cells.join(", "))
            );
        }
        if let Some(e) = &self.expected {
            let _ = writeln!(out, "   = expected: {}", escape_controls(e));
        }
        if let Some(f) = &self.found {
            let _ = writeln!(out, "   = found: {}", escape_controls(f));
        }
        if let Some(h) = &self.help {
            let _ = writeln!(out, "   = help: {}", escape_controls(h));
        }
        out
    }

    /// The source line as shown (a window around the column when it is long; control characters escaped), the
    /// text before the caret (tabs kept, so that a terminal aligns both alike), and the caret's width in columns
    /// of the terminal (a CJK character or an emoji takes two).
    fn snippet(&self, line_text: &str, col: usize) -> (String, String, usize) {
        let chars: Vec<char> = line_text.trim_end().chars().collect();
        let col = col.min(chars.len());
        // A very long line is shown around the column only.
        let (start, end) = if chars.len() > MAX_SHOWN_LINE {
            let start = col.saturating_sub(MAX_SHOWN_LINE / 4);
            (start, (start + MAX_SHOWN_LINE).min(chars.len()))
        } else {
            (0, chars.len())
        };
        let window = &chars[start..end];
        let at = col - start;
        let window_text: String = window.iter().collect();
        let width = self.width.unwrap_or_else(|| token_width(&window_text, at)).clamp(1, MAX_SHOWN_LINE);
        let before = if start > 0 { "..." } else { "" };
        let mut shown = before.to_owned();
        let mut prefix = " ".repeat(before.len());
        let mut caret = 0;
        for (i, c) in window.iter().enumerate() {
            let (text, columns) = shown_char(*c);
            shown.push_str(&text);
            if i < at {
                if *c == '\t' {
                    prefix.push('\t');
                } else {
                    prefix.extend(std::iter::repeat_n(' ', columns));
                }
            } else if i < at + width {
                caret += columns.max(1);
            }
        }
        if end < chars.len() {
            shown.push_str("...");
        }
        (shown, prefix, caret.clamp(1, 2 * MAX_SHOWN_LINE))
    }
}

/// A character of a source line as shown, and the columns it takes in a terminal: a tab stays a tab (the caret
/// line keeps it too), other control characters are escaped.
fn shown_char(c: char) -> (std::borrow::Cow<'static, str>, usize) {
    use unicode_width::UnicodeWidthChar as _;
    if c == '\t' {
        return ("\t".into(), 1);
    }
    if needs_escape(c) {
        let text = escape_char(c);
        let n = text.len();
        return (text.into(), n);
    }
    (c.to_string().into(), c.width().unwrap_or(0))
}

/// Characters never written raw into a diagnostic: control characters (a line break would start a line of its own,
/// which a CI log reads as a command), and the invisible ones that reorder or break lines.
fn needs_escape(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{200b}'..='\u{200f}' | '\u{2028}'..='\u{202e}' | '\u{2060}'..='\u{2069}' | '\u{feff}')
}

fn escape_char(c: char) -> String {
    match c {
        '\n' => "\\n".to_owned(),
        '\r' => "\\r".to_owned(),
        '\t' => "\\t".to_owned(),
        '\0' => "\\0".to_owned(),
        c => format!("\\u{{{:x}}}", c as u32),
    }
}

/// `text` with its control characters (and invisible reordering characters) escaped as Rust writes them:
/// `a\nb`, `\u{1b}[31m`. Every text a diagnostic shows goes through here.
pub fn escape_controls(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.chars().any(needs_escape) {
        return text.into();
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if needs_escape(c) {
            out.push_str(&escape_char(c));
        } else {
            out.push(c);
        }
    }
    out.into()
}

/// How many columns `text` takes in a terminal.
pub fn display_width(text: &str) -> usize {
    unicode_width::UnicodeWidthStr::width(text)
}

/// Line `n` (from 1) of `source`, without its line break. Lines end with `\n`, `\r\n` or a lone `\r`, as YAML
/// counts them.
pub fn source_line(source: &str, n: usize) -> Option<&str> {
    line_starts(source).get(n.checked_sub(1)?).map(|&(start, end)| &source[start..end])
}

/// The byte range of each line of `source`, line breaks excluded (`\n`, `\r\n` and a lone `\r` end a line).
pub fn line_starts(source: &str) -> Vec<(usize, usize)> {
    let bytes = source.as_bytes();
    let mut lines = Vec::new();
    let mut start = 0;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\n' => {
                lines.push((start, i));
                start = i + 1;
            }
            b'\r' => {
                lines.push((start, i));
                if bytes.get(i + 1) == Some(&b'\n') {
                    i += 1;
                }
                start = i + 1;
            }
            _ => {}
        }
        i += 1;
    }
    if start < bytes.len() {
        lines.push((start, bytes.len()));
    }
    lines
}

/// How much of a source line a diagnostic shows.
const MAX_SHOWN_LINE: usize = 200;

/// How many problems a spec reports; past this, the rest are counted, not shown.
pub const MAX_DIAGNOSTICS: usize = 200;

/// The width of the YAML token starting at `col` (in chars): a quoted string to its closing quote, a key to its
/// colon, a plain scalar to the end of the line or a comment.
fn token_width(line: &str, col: usize) -> usize {
    let rest: Vec<char> = line.chars().skip(col).collect();
    let Some(&first) = rest.first() else { return 1 };
    if first == '"' || first == '\'' {
        let mut i = 1;
        while i < rest.len() {
            if rest[i] == first && (first == '\'' || rest[i - 1] != '\\') {
                return i + 1;
            }
            i += 1;
        }
        return rest.len();
    }
    if first == '{' || first == '[' {
        return 1;
    }
    let mut end = rest.len();
    for (i, c) in rest.iter().enumerate() {
        let next_is_space = rest.get(i + 1).is_none_or(|n| n.is_whitespace());
        if (*c == ':' && next_is_space)
            || (*c == '#' && i > 0 && rest[i - 1].is_whitespace())
            || *c == ','
            || *c == '}'
            || *c == ']'
        {
            end = i;
            break;
        }
    }
    let token: String = rest[..end].iter().collect();
    token.trim_end().chars().count().max(1)
}

/// All diagnostics of one spec: errors and warnings, kept apart. At most [`MAX_DIAGNOSTICS`] are kept; the others
/// are counted.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Diagnostics {
    items: Vec<Diagnostic>,
    /// The problems kept, for finding repeats quickly.
    #[expect(clippy::box_collection, reason = "boxed so that `SpecError`, returned by every load, stays small")]
    seen: Box<std::collections::HashSet<Diagnostic>>,
    /// Errors and warnings past the cap.
    omitted_errors: usize,
    omitted_warnings: usize,
}

impl Diagnostics {
    pub fn push(&mut self, d: Diagnostic) {
        // Matrix cells re-check shared fields; one report per place is enough.
        if self.seen.contains(&d) {
            return;
        }
        if self.items.len() >= MAX_DIAGNOSTICS {
            match d.severity {
                Severity::Error => self.omitted_errors += 1,
                Severity::Warning => self.omitted_warnings += 1,
            }
            return;
        }
        self.seen.insert(d.clone());
        self.items.push(d);
    }
    pub fn has_errors(&self) -> bool {
        self.omitted_errors > 0 || self.items.iter().any(|d| d.severity == Severity::Error)
    }
    pub fn errors(&self) -> impl Iterator<Item = &Diagnostic> {
        self.items.iter().filter(|d| d.severity == Severity::Error)
    }
    pub fn warnings(&self) -> impl Iterator<Item = &Diagnostic> {
        self.items.iter().filter(|d| d.severity == Severity::Warning)
    }
    /// Errors, those past the cap included.
    pub fn error_count(&self) -> usize {
        self.errors().count() + self.omitted_errors
    }
    /// Problems past the cap: counted, not kept.
    pub fn omitted(&self) -> usize {
        self.omitted_errors + self.omitted_warnings
    }
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }
    pub fn into_items(self) -> Vec<Diagnostic> {
        self.items
    }
    pub fn extend(&mut self, other: Diagnostics) {
        self.omitted_errors += other.omitted_errors;
        self.omitted_warnings += other.omitted_warnings;
        for d in other.items {
            self.push(d);
        }
    }
    /// Errors first in file order, then warnings in file order.
    pub fn sorted(&self) -> Vec<&Diagnostic> {
        let mut v: Vec<&Diagnostic> = self.items.iter().collect();
        v.sort_by_key(|d| (d.severity, d.span.unwrap_or(Span { line: 0, col: 0 })));
        v
    }
}

/// A spec that could not be loaded: its diagnostics and the text needed to render them.
#[derive(Debug, Clone)]
pub struct SpecError {
    pub file: String,
    pub source: String,
    pub diagnostics: Diagnostics,
    /// The secret values known when reading stopped (`--secret` values, secret variables, whatever a template read
    /// from the environment): the rendering shows `***` in their place, in messages, values and quoted lines alike.
    pub secrets: Box<Redactor>,
}

impl SpecError {
    pub fn render(&self) -> String {
        let mut out = String::new();
        // Where each line starts, found once: a diagnostic shows its line.
        let lines = line_starts(&self.source);
        let line = |n: usize| -> Option<&str> {
            let &(start, end) = lines.get(n.checked_sub(1)?)?;
            Some(&self.source[start..end])
        };
        for d in self.diagnostics.sorted() {
            let hidden = self.hide_short_secret(d);
            let d = hidden.as_ref().unwrap_or(d);
            out.push_str(&d.render_line(&self.file, line(d.span.unwrap_or(Span { line: 1, col: 1 }).line)));
            out.push('\n');
        }
        let omitted = self.diagnostics.omitted();
        if omitted > 0 {
            let _ = writeln!(
                out,
                "note: {omitted} more problem{} not shown; fix the ones above first\n",
                if omitted == 1 { " is" } else { "s are" }
            );
        }
        let errors = self.diagnostics.error_count();
        let warnings = self.diagnostics.warnings().count() + self.diagnostics.omitted_warnings;
        let _ = write!(
            out,
            "{}: {errors} error{}{}",
            escape_controls(&self.file),
            if errors == 1 { "" } else { "s" },
            if warnings > 0 {
                format!(", {warnings} warning{}", if warnings == 1 { "" } else { "s" })
            } else {
                String::new()
            }
        );
        if self.secrets.is_empty() {
            out
        } else {
            self.secrets.scrub(&out)
        }
    }

    /// A diagnostic whose found value is a secret too short to be replaced in free text, with that value hidden.
    fn hide_short_secret(&self, d: &Diagnostic) -> Option<Diagnostic> {
        let found = d.found.as_deref()?;
        let secret = self.secrets.values().iter().any(|v| found == format!("`{v}`"));
        secret.then(|| Diagnostic { found: Some(format!("`{REDACTED}`")), ..d.clone() })
    }
}

impl fmt::Display for SpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.render())
    }
}

impl std::error::Error for SpecError {}
