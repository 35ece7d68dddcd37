//! loadgate's own YAML tree: values with the place they came from.

pub use loadgate_model::location::{Path, Span};

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
    /// The value under `key` when this is a mapping that has it.
    pub fn get(&self, key: &str) -> Option<&Node> {
        match &self.kind {
            NodeKind::Map(entries) => entries.iter().find(|(k, _)| k.name == key).map(|(_, v)| v),
            _ => None,
        }
    }

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
