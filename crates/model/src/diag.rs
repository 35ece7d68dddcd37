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
        let mut out = String::new();
        let label = match self.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
        };
        let _ = writeln!(out, "{label}: {}", self.message);
        let span = self.span.unwrap_or(Span { line: 1, col: 1 });
        let _ = writeln!(out, "  --> {file}:{}:{}", span.line, span.col);
        if let Some(line_text) = source.lines().nth(span.line.saturating_sub(1)) {
            let line_text = line_text.trim_end();
            let number = span.line.to_string();
            let pad = " ".repeat(number.len());
            let _ = writeln!(out, "{pad} |");
            let _ = writeln!(out, "{number} | {line_text}");
            let col_chars = span.col.saturating_sub(1);
            let prefix: String =
                line_text.chars().take(col_chars).map(|c| if c == '\t' { '\t' } else { ' ' }).collect();
            let width = self.width.unwrap_or_else(|| token_width(line_text, col_chars)).max(1);
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

/// All diagnostics of one spec: errors and warnings, kept apart.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Diagnostics {
    items: Vec<Diagnostic>,
}

impl Diagnostics {
    pub fn push(&mut self, d: Diagnostic) {
        // Matrix cells re-check shared fields; one report per place is enough.
        if !self.items.contains(&d) {
            self.items.push(d);
        }
    }
    pub fn has_errors(&self) -> bool {
        self.items.iter().any(|d| d.severity == Severity::Error)
    }
    pub fn errors(&self) -> impl Iterator<Item = &Diagnostic> {
        self.items.iter().filter(|d| d.severity == Severity::Error)
    }
    pub fn warnings(&self) -> impl Iterator<Item = &Diagnostic> {
        self.items.iter().filter(|d| d.severity == Severity::Warning)
    }
    pub fn error_count(&self) -> usize {
        self.errors().count()
    }
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }
    pub fn into_items(self) -> Vec<Diagnostic> {
        self.items
    }
    pub fn extend(&mut self, other: Diagnostics) {
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
        for d in self.diagnostics.sorted() {
            out.push_str(&d.render(&self.file, &self.source));
            out.push('\n');
        }
        let errors = self.diagnostics.error_count();
        let warnings = self.diagnostics.warnings().count();
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
