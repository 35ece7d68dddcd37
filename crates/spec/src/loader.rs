//! The one module that knows a YAML library.
//!
//! yaml-rust2's event parser is driven one event at a time into loadgate's own located [`Node`] tree, so the
//! document is read once, in time linear in its size, and every key and value keeps the `line:column` it came
//! from. While reading, the document is held to the bounds of [`crate::limits`]: nesting depth, values and text
//! once aliases are expanded (an absolute budget, so an alias bomb is refused after a bounded amount of work,
//! whatever the size of the file). Duplicate keys are refused at the duplicate. Scalars are resolved as YAML 1.2's
//! core schema says (`64` an integer, `true` a boolean, `1.5` a number, `~` null), with the tags `!!str`,
//! `!!int`, `!!float`, `!!bool` and `!!null` honoured.

use std::collections::HashMap;

use yaml_rust2::parser::{Event, Parser, Tag};
use yaml_rust2::scanner::{Marker, TScalarStyle};

use crate::limits::{MAX_DEPTH, MAX_NODES, MAX_TEXT_BYTES};
use crate::node::{Key, Node, NodeKind, Span};

/// Why a document could not be read: the message, where, and a fix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyntaxError {
    pub message: String,
    pub span: Option<Span>,
    pub help: String,
    /// The YAML path of the value the error is about, when the parser got that far.
    pub path: Option<crate::node::Path>,
}

impl SyntaxError {
    fn new(message: impl Into<String>, span: Span, help: impl Into<String>) -> Self {
        SyntaxError { message: message.into(), span: Some(span), help: help.into(), path: None }
    }
}

const NESTS_TOO_DEEPLY: &str = "a spec nests a few levels at most; look for a runaway bracket or alias";

/// Parses `text` into a located node tree.
pub fn parse(text: &str) -> Result<Node, SyntaxError> {
    if let Some(e) = control_bytes(text) {
        return Err(e);
    }
    Builder::new(text).run()
}

/// The first line holding bytes that no YAML text may hold (C0 controls other than tab, line feed and carriage
/// return, DEL, C1 controls), named with their values: a binary file is named as such, not read as a spec
/// missing its keys.
fn control_bytes(text: &str) -> Option<SyntaxError> {
    let bad = |c: char| c.is_control() && !matches!(c, '\t' | '\n' | '\r');
    let (line_index, line) = text.split('\n').enumerate().find(|(_, l)| l.chars().any(bad))?;
    let col = line.chars().position(bad).unwrap_or(0) + 1;
    let mut bytes: Vec<String> = Vec::new();
    for c in line.chars().filter(|c| bad(*c)) {
        let name = format!("0x{:02X}", c as u32);
        if !bytes.contains(&name) {
            bytes.push(name);
        }
    }
    let count = line.chars().filter(|c| bad(*c)).count();
    let shown = if bytes.len() > 8 { format!("{}, ...", bytes[..8].join(", ")) } else { bytes.join(", ") };
    Some(SyntaxError::new(
        format!(
            "line {} holds {count} control byte{} ({shown}) that a YAML text cannot hold",
            line_index + 1,
            if count == 1 { "" } else { "s" }
        ),
        Span { line: line_index + 1, col },
        "a spec is a text file: is this a binary file, or a text saved in another encoding (UTF-16)? Save it as \
         UTF-8 text",
    ))
}

/// Parses a single scalar as YAML would (`64` -> integer, `true` -> boolean, `1.5` -> float, anything else ->
/// string). Used for template output and `--set` values.
pub fn parse_scalar(text: &str) -> NodeKind {
    // Most values are a word, a number or a path: a plain scalar that needs no YAML parser.
    // (No `:`, `#`, quotes, brackets or other indicators; no space at either end, which YAML would trim.)
    let simple = text.chars().all(|c| {
        c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '/' | '+' | '-' | '<' | '>' | '=' | '(' | ')' | ' ')
    }) && !text.starts_with(' ')
        && !text.ends_with(' ')
        && text
            .chars()
            .next()
            .is_some_and(|c| c != '-' || text[1..].starts_with(|n: char| n.is_ascii_digit() || n == '.'));
    let parsed = if simple {
        resolve(text, TScalarStyle::Plain, None).map_err(|_| ())
    } else {
        parse(text).map(|n| n.kind).map_err(|_| ())
    };
    match parsed {
        Ok(kind @ (NodeKind::Bool(_) | NodeKind::Int(_) | NodeKind::Float(_))) => kind,
        Ok(NodeKind::Null) if text.trim().is_empty() => NodeKind::Str(String::new()),
        _ => NodeKind::Str(text.to_owned()),
    }
}

/// Converts a YAML document to JSON (for checking specs against the JSON Schema).
pub fn yaml_to_json(text: &str) -> Result<serde_json::Value, String> {
    fn convert(node: &Node) -> serde_json::Value {
        match &node.kind {
            NodeKind::Null => serde_json::Value::Null,
            NodeKind::Bool(b) => (*b).into(),
            NodeKind::Int(i) => (*i).into(),
            NodeKind::Float(f) => serde_json::Number::from_f64(*f).map_or(serde_json::Value::Null, Into::into),
            NodeKind::Str(s) => s.clone().into(),
            NodeKind::Seq(items) => items.iter().map(convert).collect(),
            NodeKind::Map(entries) => entries.iter().map(|(k, v)| (k.name.clone(), convert(v))).collect(),
        }
    }
    let root = parse(text).map_err(|e| e.message)?;
    Ok(convert(&root))
}

/// A collection being read.
enum Frame {
    Seq {
        items: Vec<Node>,
        span: Span,
        anchor: usize,
        /// Written as `[ ... ]` rather than as `- ` lines.
        flow: bool,
    },
    Map {
        entries: Vec<(Key, Node)>,
        span: Span,
        anchor: usize,
        /// Written as `{ ... }` rather than as indented lines.
        flow: bool,
        /// The key read, waiting for its value.
        key: Option<Key>,
        /// Where each key was first written, for reporting a duplicate.
        seen: HashMap<String, Span>,
    },
}

/// An anchored value, with what expanding one alias of it costs.
struct Anchored {
    node: Node,
    nodes: usize,
    bytes: usize,
    height: usize,
}

struct Builder<'t> {
    text: &'t str,
    /// The characters of a text that is not ASCII, so a marker's character index can be looked up.
    chars: Option<Vec<char>>,
    stack: Vec<Frame>,
    root: Option<Node>,
    documents: usize,
    anchors: HashMap<usize, Anchored>,
    /// Values and text bytes so far, aliases expanded.
    nodes: usize,
    bytes: usize,
    expanded_alias: bool,
}

impl<'t> Builder<'t> {
    fn new(text: &'t str) -> Self {
        Builder {
            text,
            chars: (!text.is_ascii()).then(|| text.chars().collect()),
            stack: Vec::new(),
            root: None,
            documents: 0,
            anchors: HashMap::new(),
            nodes: 0,
            bytes: 0,
            expanded_alias: false,
        }
    }

    fn run(mut self) -> Result<Node, SyntaxError> {
        let mut parser = Parser::new_from_str(self.text);
        loop {
            let (event, mark) = parser.next_token().map_err(|e| self.scan_error(e.info(), *e.marker()))?;
            let span = span_of(mark);
            match event {
                Event::StreamEnd => break,
                Event::DocumentStart => {
                    self.documents += 1;
                    if self.documents > 1 {
                        return Err(SyntaxError::new(
                            "the file holds more than one YAML document",
                            span,
                            "a spec is one document: remove the `---` that starts another, or split the file",
                        ));
                    }
                }
                Event::Scalar(text, style, anchor, tag) => {
                    self.charge(1, text.len(), span)?;
                    let kind = resolve(&text, style, tag.as_ref()).map_err(|m| self.scalar_error(m, &text, span))?;
                    let node = Node { kind, span: Some(span), from_template: false };
                    self.finish(node, Some(text), anchor, span)?;
                }
                Event::Alias(id) => {
                    let Some(anchored) = self.anchors.get(&id) else {
                        return Err(SyntaxError::new(
                            "an alias names an anchor that is not defined before it",
                            span,
                            "define the anchor (`&name`) before its aliases (`*name`), outside the value it names",
                        ));
                    };
                    if self.stack.len() + anchored.height > MAX_DEPTH {
                        return Err(SyntaxError::new("the document nests too deeply", span, NESTS_TOO_DEEPLY));
                    }
                    let (nodes, bytes) = (anchored.nodes, anchored.bytes);
                    self.expanded_alias = true;
                    self.charge(nodes, bytes, span)?;
                    let mut node = self.anchors[&id].node.clone();
                    node.span = Some(span);
                    let key_text = node.scalar_text();
                    self.finish(node, key_text, 0, span)?;
                }
                Event::SequenceStart(anchor, _) | Event::MappingStart(anchor, _) => {
                    if self.stack.len() >= MAX_DEPTH {
                        return Err(SyntaxError::new("the document nests too deeply", span, NESTS_TOO_DEEPLY));
                    }
                    self.charge(1, 0, span)?;
                    self.stack.push(if matches!(event, Event::SequenceStart(..)) {
                        let flow = self.char_at(mark.index()) == Some('[');
                        Frame::Seq { items: Vec::new(), span, anchor, flow }
                    } else {
                        let flow = self.char_at(mark.index()) == Some('{');
                        Frame::Map { entries: Vec::new(), span, anchor, flow, key: None, seen: HashMap::new() }
                    });
                }
                Event::SequenceEnd | Event::MappingEnd => {
                    let (node, anchor) = match self.stack.pop() {
                        Some(Frame::Seq { items, span, anchor, .. }) => {
                            (Node { kind: NodeKind::Seq(items), span: Some(span), from_template: false }, anchor)
                        }
                        Some(Frame::Map { entries, span, anchor, flow, .. }) => {
                            // A block mapping is reported at its first key, which is where a reader looks.
                            let first = if flow { None } else { entries.first().and_then(|(k, _)| k.span) };
                            let span = first.unwrap_or(span);
                            (Node { kind: NodeKind::Map(entries), span: Some(span), from_template: false }, anchor)
                        }
                        None => continue,
                    };
                    self.finish(node, None, anchor, span)?;
                }
                Event::Nothing | Event::StreamStart | Event::DocumentEnd => {}
            }
        }
        Ok(self.root.unwrap_or(Node { kind: NodeKind::Null, span: None, from_template: false }))
    }

    /// Counts values and text against the document's budget.
    fn charge(&mut self, nodes: usize, bytes: usize, span: Span) -> Result<(), SyntaxError> {
        self.nodes = self.nodes.saturating_add(nodes);
        self.bytes = self.bytes.saturating_add(bytes);
        if self.nodes <= MAX_NODES && self.bytes <= MAX_TEXT_BYTES {
            return Ok(());
        }
        let what = if self.nodes > MAX_NODES {
            format!("more than {MAX_NODES} values")
        } else {
            format!("more than {} of text", crate::limits::human_bytes(MAX_TEXT_BYTES as u64))
        };
        Err(if self.expanded_alias {
            SyntaxError::new(
                format!("the document expands too many aliases (a YAML alias bomb?): {what}"),
                span,
                "a spec never needs aliases nested this deep; write the values out or use `vars` and templates",
            )
        } else {
            SyntaxError::new(
                format!("the document holds {what}"),
                span,
                "a spec holds a few hundred values; generate sweeps with a scenario's `matrix`",
            )
        })
    }

    /// A complete value: the root, an item of the list being read, or a key or value of the mapping being read.
    fn finish(&mut self, node: Node, key_text: Option<String>, anchor: usize, span: Span) -> Result<(), SyntaxError> {
        if anchor != 0 {
            let (nodes, bytes, height) = measure(&node);
            // Keeping a copy costs as much as expanding it once.
            self.charge(nodes, bytes, span)?;
            self.anchors.insert(anchor, Anchored { node: node.clone(), nodes, bytes, height });
        }
        // A key of a mapping written a second time, reported where it repeats.
        if let Some(Frame::Map { key: None, seen, .. }) = self.stack.last() {
            if !matches!(node.kind, NodeKind::Seq(_) | NodeKind::Map(_)) {
                let name = key_name(&node, key_text.clone());
                if let Some(first) = seen.get(&name) {
                    return Err(SyntaxError {
                        path: Some(self.path_of_pending_key(&name)),
                        ..SyntaxError::new(
                            format!("the key `{name}` appears twice in this mapping"),
                            node.span.unwrap_or(span),
                            format!(
                                "each key may appear once in a mapping; the first `{name}` is at line {}: rename or \
                                 remove one of them",
                                first.line
                            ),
                        )
                    });
                }
            }
        }
        match self.stack.last_mut() {
            None => self.root = Some(node),
            Some(Frame::Seq { items, .. }) => items.push(node),
            Some(Frame::Map { entries, key, seen, .. }) => match key.take() {
                Some(k) => entries.push((k, node)),
                None => {
                    let name = key_name(&node, key_text);
                    let key_span = node.span.unwrap_or(span);
                    if !matches!(node.kind, NodeKind::Seq(_) | NodeKind::Map(_)) {
                        seen.insert(name.clone(), key_span);
                    }
                    *key = Some(Key { name, span: Some(key_span) });
                }
            },
        }
        Ok(())
    }

    /// The YAML path of a key `name` of the innermost mapping being read.
    fn path_of_pending_key(&self, name: &str) -> crate::node::Path {
        let mut path = crate::node::Path::root();
        let outer = self.stack.len().saturating_sub(1);
        for frame in &self.stack[..outer] {
            path = match frame {
                Frame::Seq { items, .. } => path.index(items.len()),
                Frame::Map { key: Some(k), .. } => path.key(&k.name),
                Frame::Map { key: None, .. } => path,
            };
        }
        path.key(name)
    }

    fn char_at(&self, index: usize) -> Option<char> {
        match &self.chars {
            Some(chars) => chars.get(index).copied(),
            None => self.text.as_bytes().get(index).map(|b| *b as char),
        }
    }

    fn scalar_error(&self, message: String, text: &str, span: Span) -> SyntaxError {
        let short: String = text.chars().take(40).collect();
        let help = if message.contains("too large") {
            format!("whole numbers go up to {}; if it is text, quote it: `\"{short}\"`", i64::MAX)
        } else {
            "remove the tag, or write a value of the tagged type".to_owned()
        };
        SyntaxError::new(message, span, help)
    }

    /// The innermost `[` or `{` still open when the parser failed at `at`, and where it opens, when the failure is on
    /// a later line indented no further than the bracket's own line: the block structure resumed, so the bracket
    /// was never closed. (An error inside a multi-line flow collection is indented further and stays where it is.)
    fn unclosed_flow(&self, at: Span) -> Option<(char, Span)> {
        let (span, open) = match self.stack.last()? {
            Frame::Seq { span, flow: true, .. } => (*span, '['),
            Frame::Map { span, flow: true, .. } => (*span, '{'),
            _ => return None,
        };
        let indent = |line: usize| {
            self.text.lines().nth(line.checked_sub(1)?).map(|l| l.chars().take_while(|c| *c == ' ').count())
        };
        // Past the last line (the end of the file) nothing is indented.
        let failed = indent(at.line).unwrap_or(0);
        (at.line > span.line && failed <= indent(span.line)?).then_some((open, span))
    }

    /// A syntax error, told in words a spec author recognizes.
    fn scan_error(&self, info: &str, mark: Marker) -> SyntaxError {
        let mut span = span_of(mark);
        // A tab in the indentation of the failing line or the line before it is the usual cause of an error there.
        let tab = [span.line, span.line.saturating_sub(1)].into_iter().filter(|l| *l > 0).find_map(|l| {
            let line = self.text.lines().nth(l - 1)?;
            let indent: String = line.chars().take_while(|c| *c == ' ' || *c == '\t').collect();
            indent.find('\t').map(|col| Span { line: l, col: col + 1 })
        });
        if info.contains("tab") || tab.is_some() {
            return SyntaxError::new(
                "the file is not valid YAML: a tab indents this line, and YAML indents with spaces only",
                tab.unwrap_or(span),
                "replace the tab with spaces",
            );
        }
        if info.contains("recursion limit") {
            return SyntaxError::new("the document nests too deeply", span, NESTS_TOO_DEEPLY);
        }
        // "while parsing a block mapping, did not find expected key" -> "did not find expected key".
        let mut message = info.strip_prefix("while ").and_then(|r| r.split_once(", ")).map_or(info, |(_, m)| m);
        if message.starts_with("did not find expected key") {
            // Point at the key that is out of line, not past it.
            if let Some(line) = self.text.lines().nth(span.line.saturating_sub(1)) {
                let indent = line.chars().take_while(|c| c.is_whitespace()).count();
                if indent < span.col {
                    span.col = indent + 1;
                }
            }
        }
        if message.is_empty() {
            message = info;
        }
        // A quote or a bracket left open: the parser notices only where the text stops making sense, often a line
        // or more later. Point at the opening and say where the parser stopped.
        if info.contains("quoted scalar") {
            let quote = self.text.lines().nth(span.line.saturating_sub(1)).and_then(|l| l.chars().nth(span.col - 1));
            if let Some(q @ ('"' | '\'')) = quote {
                return SyntaxError::new(
                    format!("the file is not valid YAML: the quoted text that starts here is never closed ({message})"),
                    span,
                    format!("end it with `{q}`; a quoted value may go on over lines only if they are indented further"),
                );
            }
        }
        if let Some((open, at)) = self.unclosed_flow(span) {
            let close = if open == '[' { ']' } else { '}' };
            return SyntaxError::new(
                format!("the file is not valid YAML: the `{open}` opened here is never closed"),
                at,
                format!(
                    "close it with `{close}`; the parser stopped at line {}, column {}: {message}",
                    span.line, span.col
                ),
            );
        }
        SyntaxError::new(
            format!("the file is not valid YAML: {message}"),
            span,
            "check indentation, quotes and brackets near this place",
        )
    }
}

/// yaml-rust2 counts lines from 1 and columns from 0; diagnostics count both from 1.
/// The text of a mapping's key, as a duplicate is named.
fn key_name(node: &Node, key_text: Option<String>) -> String {
    match (&node.kind, key_text) {
        (NodeKind::Null, _) => "~".to_owned(),
        (NodeKind::Bool(b), _) => b.to_string(),
        (NodeKind::Int(i), _) => i.to_string(),
        (NodeKind::Str(s), _) => s.clone(),
        (NodeKind::Float(_), Some(text)) => text,
        (NodeKind::Float(f), None) => f.to_string(),
        (NodeKind::Seq(_) | NodeKind::Map(_), _) => "<complex key>".to_owned(),
    }
}

fn span_of(mark: Marker) -> Span {
    Span { line: mark.line().max(1), col: mark.col() + 1 }
}

/// The values, text bytes and height of a tree.
fn measure(node: &Node) -> (usize, usize, usize) {
    match &node.kind {
        NodeKind::Str(s) => (1, s.len(), 0),
        NodeKind::Seq(items) => items.iter().fold((1, 0, 1), |(n, b, h), i| {
            let (n2, b2, h2) = measure(i);
            (n + n2, b + b2, h.max(h2 + 1))
        }),
        NodeKind::Map(entries) => entries.iter().fold((1, 0, 1), |(n, b, h), (k, v)| {
            let (n2, b2, h2) = measure(v);
            (n + n2 + 1, b + b2 + k.name.len(), h.max(h2 + 1))
        }),
        _ => (1, 0, 0),
    }
}

/// A scalar's value: its tag when it has one of YAML's own, else the core schema for plain scalars.
fn resolve(text: &str, style: TScalarStyle, tag: Option<&Tag>) -> Result<NodeKind, String> {
    if let Some(tag) = tag {
        if tag.handle == "tag:yaml.org,2002:" {
            let typed = |kind: Option<NodeKind>, what: &str| {
                kind.ok_or_else(|| format!("`{text}` is not {what}, although it is tagged `!!{}`", tag.suffix))
            };
            return match tag.suffix.as_str() {
                "bool" => typed(parse_bool(text).map(NodeKind::Bool), "a boolean"),
                "int" => match parse_int(text) {
                    Some(Ok(kind)) => Ok(kind),
                    Some(Err(e)) => Err(e),
                    None => typed(None, "an integer"),
                },
                "float" => typed(parse_f64(text).map(NodeKind::Float), "a number"),
                "null" => typed(is_null(text).then_some(NodeKind::Null), "null"),
                _ => Ok(NodeKind::Str(text.to_owned())),
            };
        }
    }
    if style != TScalarStyle::Plain {
        return Ok(NodeKind::Str(text.to_owned()));
    }
    if text.is_empty() || is_null(text) {
        return Ok(NodeKind::Null);
    }
    if let Some(b) = parse_bool(text) {
        return Ok(NodeKind::Bool(b));
    }
    if let Some(int) = parse_int(text) {
        return int;
    }
    if !digits_but_not_number(text) {
        if let Some(f) = parse_f64(text) {
            return Ok(NodeKind::Float(f));
        }
    }
    Ok(NodeKind::Str(text.to_owned()))
}

fn is_null(text: &str) -> bool {
    matches!(text, "null" | "Null" | "NULL" | "~")
}

fn parse_bool(text: &str) -> Option<bool> {
    match text {
        "true" | "True" | "TRUE" => Some(true),
        "false" | "False" | "FALSE" => Some(false),
        _ => None,
    }
}

/// An integer (decimal, `0x`, `0o` or `0b`, optionally signed): `None` when the text is not one, an error when it
/// is one too large to hold. Integers above `i64::MAX` that fit in 64 bits unsigned become numbers.
fn parse_int(text: &str) -> Option<Result<NodeKind, String>> {
    let (negative, unsigned) = match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    let (radix, digits) = if let Some(d) = unsigned.strip_prefix("0x") {
        (16, d)
    } else if let Some(d) = unsigned.strip_prefix("0o") {
        (8, d)
    } else if let Some(d) = unsigned.strip_prefix("0b") {
        (2, d)
    } else {
        (10, unsigned)
    };
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    // Leading zeros followed by digits make a string in YAML 1.2 (`0123`).
    if radix == 10 && digits_but_not_number(text) {
        return None;
    }
    let too_large = || Err(format!("the number `{}` is too large", text.chars().take(40).collect::<String>()));
    Some(match u64::from_str_radix(digits, radix) {
        Ok(u) if negative => match i64::try_from(u) {
            Ok(i) => Ok(NodeKind::Int(-i)),
            Err(_) if u == i64::MIN.unsigned_abs() => Ok(NodeKind::Int(i64::MIN)),
            Err(_) => too_large(),
        },
        Ok(u) => Ok(i64::try_from(u).map_or(NodeKind::Float(u as f64), NodeKind::Int)),
        Err(_) => too_large(),
    })
}

fn parse_f64(text: &str) -> Option<f64> {
    let unsigned = match text.strip_prefix('+') {
        Some(rest) if rest.starts_with(['+', '-']) => return None,
        Some(rest) => rest,
        None => text,
    };
    match unsigned {
        ".inf" | ".Inf" | ".INF" => return Some(f64::INFINITY),
        _ => {}
    }
    match text {
        "-.inf" | "-.Inf" | "-.INF" => return Some(f64::NEG_INFINITY),
        ".nan" | ".NaN" | ".NAN" => return Some(f64::NAN),
        _ => {}
    }
    unsigned.parse::<f64>().ok().filter(|f| f.is_finite())
}

/// Leading zeros followed by digits: a string according to YAML 1.2.
fn digits_but_not_number(text: &str) -> bool {
    let text = text.strip_prefix(['-', '+']).unwrap_or(text);
    text.len() > 1 && text.starts_with('0') && text[1..].bytes().all(|b| b.is_ascii_digit())
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
        assert_eq!(b.span, Some(Span { line: 3, col: 3 }), "a block mapping is located at its first key");
    }

    #[test]
    fn syntax_errors_are_located() {
        let e = parse("a: [1, 2\nb: 3\n").unwrap_err();
        assert!(e.span.is_some(), "{e:?}");
    }

    #[test]
    fn an_unclosed_bracket_is_blamed_not_the_line_where_the_parser_stopped() {
        let e = parse("a:\n  b: [1, 2\n  c: 3\n").unwrap_err();
        assert_eq!(e.message, "the file is not valid YAML: the `[` opened here is never closed");
        assert_eq!(e.span, Some(Span { line: 2, col: 6 }));
        assert!(e.help.starts_with("close it with `]`; the parser stopped at line 3"), "{e:?}");
        let e = parse("a: {x: {y: 1}\n").unwrap_err();
        assert_eq!(e.span, Some(Span { line: 1, col: 4 }), "the end of the file: {e:?}");
        let e = parse("a: {x: 1\nb: 3\n").unwrap_err();
        assert_eq!(e.span, Some(Span { line: 1, col: 4 }), "{e:?}");
        assert!(e.help.starts_with("close it with `}`"), "{e:?}");
        // A mistake inside a bracket that does span lines stays where the parser found it.
        let e = parse("a: [\n    1,\n    b: c: d\n  ]\n").unwrap_err();
        assert_ne!(e.span, Some(Span { line: 1, col: 4 }), "{e:?}");
        assert!(!e.message.contains("never closed"), "{e:?}");
    }

    #[test]
    fn an_unclosed_quote_is_named_at_its_start() {
        let e = parse("a:\n  b: \"http://x/\n  c: 3\n").unwrap_err();
        assert!(e.message.contains("the quoted text that starts here is never closed"), "{e:?}");
        assert_eq!(e.span, Some(Span { line: 2, col: 6 }));
        assert!(e.help.starts_with("end it with `\"`"), "{e:?}");
        let e = parse("a: 'x\n").unwrap_err();
        assert!(e.message.contains("never closed"), "{e:?}");
        assert!(e.help.starts_with("end it with `'`"), "{e:?}");
    }

    #[test]
    fn scalars_resolve_as_yaml_1_2_core() {
        let kinds = |text: &str| parse(text).unwrap().kind;
        assert_eq!(kinds("64"), NodeKind::Int(64));
        assert_eq!(kinds("-64"), NodeKind::Int(-64));
        assert_eq!(kinds("+64"), NodeKind::Int(64));
        assert_eq!(kinds("0x10"), NodeKind::Int(16));
        assert_eq!(kinds("0o10"), NodeKind::Int(8));
        assert_eq!(kinds("0123"), NodeKind::Str("0123".into()));
        assert_eq!(kinds("1.5"), NodeKind::Float(1.5));
        assert_eq!(kinds("1e3"), NodeKind::Float(1000.0));
        assert_eq!(kinds("1e400"), NodeKind::Str("1e400".into()));
        assert_eq!(kinds("true"), NodeKind::Bool(true));
        assert_eq!(kinds("yes"), NodeKind::Str("yes".into()));
        assert_eq!(kinds("~"), NodeKind::Null);
        assert_eq!(kinds("'64'"), NodeKind::Str("64".into()));
        assert_eq!(kinds("!!str 64"), NodeKind::Str("64".into()));
        assert_eq!(kinds("!!int '64'"), NodeKind::Int(64));
        assert_eq!(kinds("!local 64"), NodeKind::Int(64));
        assert_eq!(kinds("-9223372036854775808"), NodeKind::Int(i64::MIN));
        assert_eq!(kinds("18446744073709551615"), NodeKind::Float(18446744073709551615.0));
        assert_eq!(kinds(""), NodeKind::Null);
    }

    #[test]
    fn numbers_too_large_are_named() {
        let e = parse("a: 99999999999999999999999\n").unwrap_err();
        assert_eq!(e.message, "the number `99999999999999999999999` is too large");
        assert_eq!(e.span, Some(Span { line: 1, col: 4 }));
        assert!(parse("a: !!int abc\n").unwrap_err().message.contains("not an integer"));
    }

    #[test]
    fn duplicate_keys_are_reported_where_they_repeat() {
        let e = parse("a: 1\nb:\n  c: 1\n  c: 2\n").unwrap_err();
        assert_eq!(e.message, "the key `c` appears twice in this mapping");
        assert_eq!(e.span, Some(Span { line: 4, col: 3 }));
        assert!(e.help.contains("line 3"), "{e:?}");
    }

    #[test]
    fn tabs_are_named() {
        let e = parse("a:\n\tb: 1\n").unwrap_err();
        assert!(e.message.contains("tab"), "{e:?}");
        assert_eq!(e.span, Some(Span { line: 2, col: 1 }));
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

    #[test]
    fn aliases_expand_and_keep_their_use_site() {
        let root = parse("a: &x {b: 1}\nc: *x\n").unwrap();
        let c = find(&root, "c");
        assert_eq!(c.span, Some(Span { line: 2, col: 4 }));
        assert_eq!(find(c, "b").kind, NodeKind::Int(1));
    }

    #[test]
    fn nesting_is_bounded_without_quadratic_work() {
        for text in ["[".repeat(100_000), "{a: ".repeat(40_000), "- ".repeat(10_000)] {
            let e = parse(&text).unwrap_err();
            assert!(e.message.contains("nests too deeply"), "{e:?}");
        }
        let ok = format!("{}1{}", "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH));
        assert!(parse(&ok).is_ok());
        let deep = format!("{}1{}", "[".repeat(MAX_DEPTH + 1), "]".repeat(MAX_DEPTH + 1));
        assert!(parse(&deep).is_err());
    }

    #[test]
    fn a_second_document_is_refused() {
        let e = parse("a: 1\n---\nb: 2\n").unwrap_err();
        assert!(e.message.contains("more than one YAML document"), "{e:?}");
        assert!(parse("---\na: 1\n").is_ok());
    }

    #[test]
    fn template_output_and_set_values_read_as_scalars() {
        assert_eq!(parse_scalar("64"), NodeKind::Int(64));
        assert_eq!(parse_scalar(" 64 "), NodeKind::Int(64));
        assert_eq!(parse_scalar("a: b"), NodeKind::Str("a: b".into()));
        assert_eq!(parse_scalar(""), NodeKind::Str(String::new()));
        assert_eq!(parse_scalar("null"), NodeKind::Str("null".into()));
        assert_eq!(parse_scalar("99999999999999999999999"), NodeKind::Str("99999999999999999999999".into()));
    }
}
