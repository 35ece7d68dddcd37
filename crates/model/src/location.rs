//! Where something is in a spec: a line and column, and a YAML path.

use std::fmt;

/// A position in the spec file, both counted from 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Span {
    pub line: usize,
    pub col: usize,
}

/// A YAML path such as `scenarios.plaintext.load.closed.connections` or `scenarios.x.slo[1]`.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Path(String);

impl Path {
    pub fn root() -> Path {
        Path(String::new())
    }
    pub fn key(&self, key: &str) -> Path {
        let needs_quotes = key.is_empty() || key.contains(['.', '[', ']', ' ']);
        let key = if needs_quotes { format!("\"{key}\"") } else { key.to_owned() };
        if self.0.is_empty() {
            Path(key)
        } else {
            Path(format!("{}.{key}", self.0))
        }
    }
    pub fn index(&self, i: usize) -> Path {
        Path(format!("{}[{i}]", self.0))
    }
    pub fn as_str(&self) -> &str {
        if self.0.is_empty() {
            "(the document)"
        } else {
            &self.0
        }
    }
}

impl fmt::Display for Path {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
