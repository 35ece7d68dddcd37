//! The one module that knows YAML libraries.
//!
//! serde_yaml parses the document (it resolves scalars, rejects duplicate keys and caps alias expansion, which
//! defuses alias bombs); a marked event stream from yaml-rust2 then locates every key and value so diagnostics
//! can point at `line:column`. Both are turned into loadgate's own [`Node`] tree here, so replacing serde_yaml
//! with a maintained fork touches this file only.

use std::collections::HashMap;

use yaml_rust2::parser::{Event, MarkedEventReceiver, Parser};
use yaml_rust2::scanner::Marker;

use crate::node::{Key, Node, NodeKind, Span};

/// Why a document could not be read as YAML at all.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyntaxError {
    pub message: String,
    pub span: Option<Span>,
    pub help: &'static str,
}

/// Parses `text` into a located node tree.
pub fn parse(text: &str) -> Result<Node, SyntaxError> {
    let value: serde_yaml::Value = serde_yaml::from_str(text).map_err(|e| {
        let span = e.location().map(|l| Span { line: l.line(), col: l.column() });
        let mut message = e.to_string();
        // serde_yaml appends " at line X column Y"; the location is shown separately.
        if let Some(pos) = message.find(" at line ") {
            message.truncate(pos);
        }
        let mut help = "check indentation, quotes and brackets near this place";
        if message == "repetition limit exceeded" {
            message = "the document expands too many aliases (a YAML alias bomb?)".to_owned();
            help = "a spec never needs aliases nested this deep; write the values out or use `vars` and templates";
        } else if message == "recursion limit exceeded" {
            message = "the document nests too deeply".to_owned();
            help = "a spec nests a few levels at most; look for a runaway bracket or alias";
        } else if message.contains("duplicate entry") {
            help = "each key may appear once in a mapping; rename or remove one of them";
        }
        SyntaxError { message, span, help }
    })?;
    let spans = SpanIndex::build(text);
    let mut path = Vec::new();
    let mut root = convert(&value, &spans, &mut path, None);
    anchor_block_mappings(&mut root, text);
    Ok(root)
}

/// Parses a single scalar as YAML would (`64` -> integer, `true` -> boolean, `1.5` -> float, anything else ->
/// string). Used for template output and `--set` values.
pub fn parse_scalar(text: &str) -> NodeKind {
    match serde_yaml::from_str::<serde_yaml::Value>(text) {
        Ok(serde_yaml::Value::Bool(b)) => NodeKind::Bool(b),
        Ok(serde_yaml::Value::Number(n)) => number_kind(&n),
        Ok(serde_yaml::Value::Null) if text.trim().is_empty() => NodeKind::Str(String::new()),
        _ => NodeKind::Str(text.to_owned()),
    }
}

fn number_kind(n: &serde_yaml::Number) -> NodeKind {
    if let Some(i) = n.as_i64() {
        NodeKind::Int(i)
    } else if let Some(u) = n.as_u64() {
        NodeKind::Float(u as f64)
    } else {
        NodeKind::Float(n.as_f64().unwrap_or(f64::NAN))
    }
}

/// A block mapping's start is reported where its first value begins; diagnostics about the mapping as a whole
/// read better at its first key, which is where a reader looks.
fn anchor_block_mappings(node: &mut Node, text: &str) {
    match &mut node.kind {
        NodeKind::Map(entries) => {
            let is_flow = node.span.is_some_and(|sp| {
                text.lines().nth(sp.line.saturating_sub(1)).and_then(|l| l.chars().nth(sp.col.saturating_sub(1)))
                    == Some('{')
            });
            if !is_flow {
                if let Some(first) = entries.first().and_then(|(k, _)| k.span) {
                    node.span = Some(first);
                }
            }
            for (_, v) in entries.iter_mut() {
                anchor_block_mappings(v, text);
            }
        }
        NodeKind::Seq(items) => items.iter_mut().for_each(|i| anchor_block_mappings(i, text)),
        _ => {}
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Seg {
    Key(String),
    Index(usize),
}

fn convert(value: &serde_yaml::Value, spans: &SpanIndex, path: &mut Vec<Seg>, inherited: Option<Span>) -> Node {
    let span = spans.values.get(path.as_slice()).copied().or(inherited);
    let kind = match value {
        serde_yaml::Value::Null => NodeKind::Null,
        serde_yaml::Value::Bool(b) => NodeKind::Bool(*b),
        serde_yaml::Value::Number(n) => number_kind(n),
        serde_yaml::Value::String(s) => NodeKind::Str(s.clone()),
        serde_yaml::Value::Sequence(items) => {
            let mut out = Vec::with_capacity(items.len());
            for (i, item) in items.iter().enumerate() {
                path.push(Seg::Index(i));
                out.push(convert(item, spans, path, span));
                path.pop();
            }
            NodeKind::Seq(out)
        }
        serde_yaml::Value::Mapping(map) => {
            let mut out = Vec::with_capacity(map.len());
            for (k, v) in map {
                let name = match k {
                    serde_yaml::Value::String(s) => s.clone(),
                    serde_yaml::Value::Number(n) => n.to_string(),
                    serde_yaml::Value::Bool(b) => b.to_string(),
                    serde_yaml::Value::Null => "~".to_owned(),
                    _ => "<complex key>".to_owned(),
                };
                path.push(Seg::Key(name.clone()));
                let key_span = spans.keys.get(path.as_slice()).copied().or(span);
                let node = convert(v, spans, path, key_span);
                path.pop();
                out.push((Key { name, span: key_span }, node));
            }
            NodeKind::Map(out)
        }
        serde_yaml::Value::Tagged(t) => return convert(&t.value, spans, path, span),
    };
    Node { kind, span, from_template: false }
}

/// Where each key and value of a document starts, by path.
#[derive(Default)]
struct SpanIndex {
    keys: HashMap<Vec<Seg>, Span>,
    values: HashMap<Vec<Seg>, Span>,
}

enum Frame {
    Map { expecting_key: bool, current_key: Option<String> },
    Seq { next: usize },
}

struct Builder {
    index: SpanIndex,
    path: Vec<Seg>,
    stack: Vec<Frame>,
}

impl Builder {
    /// Called when a node (scalar, alias, or collection start) begins; returns true when it was a mapping key.
    fn begin_node(&mut self, mark: Span, key_text: Option<&str>) -> bool {
        match self.stack.last_mut() {
            Some(Frame::Map { expecting_key: true, current_key }) => {
                let name = key_text.unwrap_or("<complex key>").to_owned();
                *current_key = Some(name.clone());
                self.path.push(Seg::Key(name));
                self.index.keys.insert(self.path.clone(), mark);
                self.path.pop();
                if let Some(Frame::Map { expecting_key, .. }) = self.stack.last_mut() {
                    *expecting_key = false;
                }
                true
            }
            Some(Frame::Map { expecting_key: false, current_key }) => {
                let name = current_key.clone().unwrap_or_default();
                self.path.push(Seg::Key(name));
                if let Some(Frame::Map { expecting_key, .. }) = self.stack.last_mut() {
                    *expecting_key = true;
                }
                false
            }
            Some(Frame::Seq { next }) => {
                let i = *next;
                *next += 1;
                self.path.push(Seg::Index(i));
                false
            }
            None => false,
        }
    }

    fn record_value(&mut self, mark: Span) {
        self.index.values.insert(self.path.clone(), mark);
    }

    fn end_value(&mut self) {
        if !self.stack.is_empty() || !self.path.is_empty() {
            self.path.pop();
        }
    }
}

impl MarkedEventReceiver for Builder {
    fn on_event(&mut self, ev: Event, mark: Marker) {
        // yaml-rust2 counts lines from 1 and columns from 0; diagnostics count both from 1.
        let span = Span { line: mark.line(), col: mark.col() + 1 };
        match ev {
            Event::Scalar(text, ..) => {
                if self.begin_node(span, Some(&text)) {
                    return;
                }
                self.record_value(span);
                self.end_value();
            }
            Event::Alias(_) => {
                if self.begin_node(span, None) {
                    return;
                }
                self.record_value(span);
                self.end_value();
            }
            Event::MappingStart(..) | Event::SequenceStart(..) => {
                let is_map = matches!(ev, Event::MappingStart(..));
                if self.begin_node(span, None) {
                    // A complex key: index nothing inside it, but keep the stack balanced.
                    self.path.push(Seg::Key("<complex key>".into()));
                }
                self.record_value(span);
                self.stack.push(if is_map {
                    Frame::Map { expecting_key: true, current_key: None }
                } else {
                    Frame::Seq { next: 0 }
                });
            }
            Event::MappingEnd | Event::SequenceEnd => {
                self.stack.pop();
                self.end_value();
            }
            _ => {}
        }
    }
}

impl SpanIndex {
    fn build(text: &str) -> SpanIndex {
        let mut builder = Builder { index: SpanIndex::default(), path: Vec::new(), stack: Vec::new() };
        let mut parser = Parser::new_from_str(text);
        // Only the first document is a spec; locations are best-effort and never fail the load.
        let _ = parser.load(&mut builder, false);
        builder.index
    }
}

/// Converts a YAML document to JSON (for checking specs against the JSON Schema).
pub fn yaml_to_json(text: &str) -> Result<serde_json::Value, String> {
    let value: serde_yaml::Value = serde_yaml::from_str(text).map_err(|e| e.to_string())?;
    serde_json::to_value(value).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn find<'a>(node: &'a Node, key: &str) -> &'a Node {
        match &node.kind {
            NodeKind::Map(entries) => &entries.iter().find(|(k, _)| k.name == key).unwrap().1,
            _ => panic!("not a map"),
        }
    }

    #[test]
    fn locates_keys_and_values() {
        let text = "a: 1\nb:\n  c: [x, y]\n  d: {e: 5}\n";
        let root = parse(text).unwrap();
        let b = find(&root, "b");
        let c = find(b, "c");
        assert_eq!(c.span, Some(Span { line: 3, col: 6 }));
        let NodeKind::Seq(items) = &c.kind else { panic!() };
        assert_eq!(items[1].span, Some(Span { line: 3, col: 10 }));
        let d = find(b, "d");
        let e = find(d, "e");
        assert_eq!(e.span, Some(Span { line: 4, col: 10 }));
        let NodeKind::Map(entries) = &d.kind else { panic!() };
        assert_eq!(entries[0].0.span, Some(Span { line: 4, col: 7 }));
    }

    #[test]
    fn syntax_errors_are_located() {
        let e = parse("a: [1, 2\nb: 3\n").unwrap_err();
        assert!(e.span.is_some(), "{e:?}");
    }

    #[test]
    fn alias_bombs_are_refused() {
        let mut text = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
        for i in 1..10 {
            let p = i - 1;
            text.push_str(&format!(
                "a{i}: &a{i} [*a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}]\n"
            ));
        }
        let e = parse(&text).unwrap_err();
        assert!(e.message.contains("alias"), "{e:?}");
    }
}
