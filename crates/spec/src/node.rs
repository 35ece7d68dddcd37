//! loadgate's own YAML tree: values with the place they came from.

use std::fmt;

/// A position in the spec file, both counted from 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Span {
    pub line: usize,
    pub col: usize,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Key {
    pub name: String,
    pub span: Option<Span>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    pub kind: NodeKind,
    pub span: Option<Span>,
    /// The value was produced by rendering a template (so `"64"` may stand for the integer 64).
    pub from_template: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub enum NodeKind {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    Seq(Vec<Node>),
    Map(Vec<(Key, Node)>),
}

impl Node {
    /// What a user would call this value's type, for "expected X, found Y" messages.
    pub fn type_name(&self) -> &'static str {
        match self.kind {
            NodeKind::Null => "nothing (null)",
            NodeKind::Bool(_) => "a boolean",
            NodeKind::Int(_) => "an integer",
            NodeKind::Float(_) => "a number",
            NodeKind::Str(_) => "a string",
            NodeKind::Seq(_) => "a list",
            NodeKind::Map(_) => "a mapping",
        }
    }

    /// The value as a short text for messages: `64`, `"abc"`, `a list`.
    pub fn describe(&self) -> String {
        match &self.kind {
            NodeKind::Null => "nothing (null)".to_owned(),
            NodeKind::Bool(b) => format!("`{b}`"),
            NodeKind::Int(i) => format!("`{i}`"),
            NodeKind::Float(f) => format!("`{f}`"),
            NodeKind::Str(s) => {
                let short: String = s.chars().take(60).collect();
                if short.len() < s.len() {
                    format!("`{short}...`")
                } else {
                    format!("`{s}`")
                }
            }
            NodeKind::Seq(_) => "a list".to_owned(),
            NodeKind::Map(_) => "a mapping".to_owned(),
        }
    }

    /// A scalar as the text a user wrote (numbers and booleans included); `None` for collections and null.
    pub fn scalar_text(&self) -> Option<String> {
        match &self.kind {
            NodeKind::Bool(b) => Some(b.to_string()),
            NodeKind::Int(i) => Some(i.to_string()),
            NodeKind::Float(f) => Some(f.to_string()),
            NodeKind::Str(s) => Some(s.clone()),
            _ => None,
        }
    }
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
