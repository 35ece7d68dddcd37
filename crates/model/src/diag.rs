//! Diagnostics: every problem of a spec, located, explained, with a suggested fix.

use std::fmt::{self, Write as _};

use crate::location::{Path, Span};

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
    /// then the path, what was expected and found, and the fix.
    pub fn render(&self, file: &str, source: &str) -> String {
        let line = source.lines().nth(self.span.unwrap_or(Span { line: 1, col: 1 }).line.saturating_sub(1));
        self.render_line(file, line)
    }

    /// Renders the diagnostic with its source line (the line `span` points into) already found.
    fn render_line(&self, file: &str, line_text: Option<&str>) -> String {
        let mut out = String::new();
        let label = match self.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
        };
        let _ = writeln!(out, "{label}: {}", self.message);
        let span = self.span.unwrap_or(Span { line: 1, col: 1 });
        let _ = writeln!(out, "  --> {file}:{}:{}", span.line, span.col);
        if let Some(line_text) = line_text {
            let line_text = line_text.trim_end();
            let number = span.line.to_string();
            let pad = " ".repeat(number.len());
            let mut col_chars = span.col.saturating_sub(1);
            // A very long line is shown around the column only.
            let chars = line_text.chars().count();
            let shown: String = if chars > MAX_SHOWN_LINE {
                let start = col_chars.min(chars).saturating_sub(MAX_SHOWN_LINE / 4);
                let window: String = line_text.chars().skip(start).take(MAX_SHOWN_LINE).collect();
                col_chars = col_chars.min(chars) - start + if start > 0 { 3 } else { 0 };
                let before = if start > 0 { "..." } else { "" };
                let after = if start + MAX_SHOWN_LINE < chars { "..." } else { "" };
                format!("{before}{window}{after}")
            } else {
                line_text.to_owned()
            };
            let _ = writeln!(out, "{pad} |");
            let _ = writeln!(out, "{number} | {shown}");
            let prefix: String = shown.chars().take(col_chars).map(|c| if c == '\t' { '\t' } else { ' ' }).collect();
            let width = self.width.unwrap_or_else(|| token_width(&shown, col_chars)).clamp(1, MAX_SHOWN_LINE);
            let _ = writeln!(out, "{pad} | {prefix}{}", "^".repeat(width));
        }
        let _ = writeln!(out, "   = at: {}", self.path);
        if !self.cells.is_empty() {
            let _ = writeln!(
                out,
                "   = in matrix cell{}: {}",
                if self.cells.len() == 1 { "" } else { "s" },
                self.cells.join(", ")
            );
        }
        if let Some(e) = &self.expected {
            let _ = writeln!(out, "   = expected: {e}");
        }
        if let Some(f) = &self.found {
            let _ = writeln!(out, "   = found: {f}");
        }
        if let Some(h) = &self.help {
            let _ = writeln!(out, "   = help: {h}");
        }
        out
    }
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
}

impl SpecError {
    pub fn render(&self) -> String {
        let mut out = String::new();
        // Where each line starts, found once: a diagnostic shows its line.
        let starts: Vec<usize> =
            std::iter::once(0).chain(self.source.match_indices('\n').map(|(i, _)| i + 1)).collect();
        let line = |n: usize| -> Option<&str> {
            let start = *starts.get(n.checked_sub(1)?)?;
            let end = starts.get(n).map_or(self.source.len(), |next| next - 1);
            if start >= self.source.len() {
                return None;
            }
            let text = &self.source[start..end.max(start)];
            Some(text.strip_suffix('\r').unwrap_or(text))
        };
        for d in self.diagnostics.sorted() {
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
            self.file,
            if errors == 1 { "" } else { "s" },
            if warnings > 0 {
                format!(", {warnings} warning{}", if warnings == 1 { "" } else { "s" })
            } else {
                String::new()
            }
        );
        out
    }
}

impl fmt::Display for SpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.render())
    }
}

impl std::error::Error for SpecError {}
