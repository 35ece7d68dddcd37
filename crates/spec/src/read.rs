//! Typed reading of a node tree: every accessor reports what it could not read as a located diagnostic and
//! carries on, so a spec's errors are all found in one pass.

use std::str::FromStr;

use crate::diag::{Diagnostic, Diagnostics};
use crate::node::{Key, Node, NodeKind, Path};
use crate::suggest::did_you_mean;
use crate::template::Templates;
use crate::units::UnitError;

/// The reading context: where diagnostics go and which variables templates see.
pub(crate) struct Cx<'a> {
    pub diags: &'a mut Diagnostics,
    pub templates: &'a Templates,
    /// Matrix bindings of the current cell, on top of the spec's variables.
    pub bindings: &'a [(String, minijinja::Value)],
    /// Per-request generators (`seq()`, ...) are allowed: only in a request's path, query, headers and body.
    pub dynamic: bool,
    /// The session's variables a session step's templates see (bound in `bindings` to their markers).
    pub vars: &'a [SessionVar],
    /// Captured values work here but generators do not (a check's expected value).
    pub vars_only: bool,
}

/// A session variable as one step sees it: its name, its slot, and the step that first captures it.
#[derive(Debug, Clone)]
pub(crate) struct SessionVar {
    pub name: String,
    pub slot: u16,
    /// The step that captures it first: its name and line.
    pub step: String,
    pub line: Option<usize>,
    /// Captured by the step being read itself.
    pub here: bool,
}

/// A mapping whose keys were checked against the allowed ones.
pub(crate) struct Fields<'n> {
    pub entries: &'n [(Key, Node)],
    pub path: Path,
    pub node: &'n Node,
    /// The keys `map` reported as unknown (each with its own error).
    pub unknown: Vec<&'n str>,
}

impl<'n> Fields<'n> {
    pub fn get(&self, key: &str) -> Option<(&'n Node, Path)> {
        self.entries.iter().find(|(k, _)| k.name == key).map(|(_, v)| (v, self.path.key(key)))
    }
    pub fn has(&self, key: &str) -> bool {
        self.entries.iter().any(|(k, _)| k.name == key)
    }
    pub fn key_span(&self, key: &str) -> Option<crate::node::Span> {
        self.entries.iter().find(|(k, _)| k.name == key).and_then(|(k, _)| k.span)
    }
}

impl Cx<'_> {
    pub fn error(&mut self, d: Diagnostic) {
        self.diags.push(d);
    }

    /// Renders a templated string node; other nodes come back unchanged.
    pub fn render(&mut self, node: &Node, path: &Path) -> Option<Node> {
        match &node.kind {
            NodeKind::Str(s) if Templates::is_template(s) => {
                match self.templates.render(s, self.bindings, self.dynamic) {
                    Ok(text) => {
                        if !self.vars.is_empty() && !self.vars_whole(s, &text, node, path) {
                            return None;
                        }
                        if !crate::generate::has_marks(&text) {
                            return Some(Node {
                                kind: crate::loader::parse_scalar(&text),
                                span: node.span,
                                from_template: true,
                            });
                        }
                        self.marked(s, text, node, path)
                    }
                    Err(e) if e.outside_request => {
                        self.outside_request(node, path);
                        None
                    }
                    Err(e) => {
                        self.diags.push(
                            Diagnostic::error(path, node.span, e.message).found(node.describe()).help_opt(e.help),
                        );
                        None
                    }
                }
            }
            _ => Some(node.clone()),
        }
    }

    /// Rendered text with markers: kept where its generators and variables work, refused elsewhere.
    fn marked(&mut self, template: &str, text: String, node: &Node, path: &Path) -> Option<Node> {
        use crate::generate::Part;
        let Some(parts) = crate::generate::parse_marks(&text) else {
            self.used_whole(template, node, path);
            return None;
        };
        if let Some(slot) = parts.iter().find_map(|p| match p {
            Part::Later(slot) => Some(*slot),
            _ => None,
        }) {
            self.used_before(slot, node, path);
            return None;
        }
        let generated = parts.iter().any(|p| matches!(p, Part::Gen(_)));
        let captured = parts.iter().any(|p| matches!(p, Part::Var(_)));
        if generated && !self.dynamic {
            self.outside_request(node, path);
            return None;
        }
        if captured && !self.dynamic && !self.vars_only {
            self.diags.push(
                Diagnostic::error(path, node.span, "a captured value cannot be used here")
                    .found(node.describe())
                    .expected("a value fixed for the whole phase")
                    .help(
                        "captured values work in a later step's `path`, `query`, `headers` and `body`, and in a \
                         check's `equals`",
                    ),
            );
            return None;
        }
        Some(Node { kind: NodeKind::Str(text), span: node.span, from_template: true })
    }

    /// A template that reads a session variable must keep its marker whole (`{{ token }}`, `'Bearer ' ~ token`):
    /// a filter or a test on it would run on the marker, not on the value captured at run time.
    fn vars_whole(&mut self, template: &str, text: &str, node: &Node, path: &Path) -> bool {
        let read = self.templates.names_used(template);
        let parts = crate::generate::parse_marks(text).unwrap_or_default();
        for v in self.vars.iter().filter(|v| read.contains(&v.name)) {
            let kept = parts
                .iter()
                .any(|p| matches!(p, crate::generate::Part::Var(s) | crate::generate::Part::Later(s) if *s == v.slot));
            if !kept {
                self.used_whole(template, node, path);
                return false;
            }
        }
        true
    }

    fn used_whole(&mut self, template: &str, node: &Node, path: &Path) {
        let read = self.templates.names_used(template);
        let d = match self.vars.iter().find(|v| read.contains(&v.name)) {
            Some(v) => Diagnostic::error(
                path,
                node.span,
                format!("a captured value is used only whole: `{}` changes `{}`", template.trim(), v.name),
            )
            .found(node.describe())
            .help(format!(
                "the value is known only when the request is sent: write `{{{{ {} }}}}`, or join text to it with \
                 `~` (`{{{{ 'Bearer ' ~ {} }}}}`)",
                v.name, v.name
            )),
            None => Diagnostic::error(path, node.span, "a generated value is used only whole")
                .found(node.describe())
                .help("a generator's value is made per request: write `{{ seq() }}`, or join text to it with `~`"),
        };
        self.diags.push(d);
    }

    fn used_before(&mut self, slot: u16, node: &Node, path: &Path) {
        let Some(v) = self.vars.iter().find(|v| v.slot == slot) else { return };
        let at = v.line.map(|l| format!(" (line {l})")).unwrap_or_default();
        let d = if v.here {
            Diagnostic::error(
                path,
                node.span,
                format!("`{}` is used before it is captured: this step (`{}`) captures it", v.name, v.step),
            )
            .found(node.describe())
            .help("a step's request and checks see only what earlier steps captured: use it in a later step")
        } else {
            Diagnostic::error(
                path,
                node.span,
                format!("`{}` is used before it is captured: step `{}`{at} captures it", v.name, v.step),
            )
            .found(node.describe())
            .help(format!("move step `{}` before this one, or use `{}` in a later step", v.step, v.name))
        };
        self.diags.push(d);
    }

    fn outside_request(&mut self, node: &Node, path: &Path) {
        if self.vars_only {
            self.diags.push(
                Diagnostic::error(path, node.span, "a check's expected value cannot use generators")
                    .found(node.describe())
                    .expected("text, variables, or values captured by earlier steps")
                    .help(format!(
                        "{}() make a new value per request, which a response cannot be checked against; capture the \
                         value sent back instead",
                        crate::generate::GENERATORS.join("(), ")
                    )),
            );
            return;
        }
        self.diags.push(
            Diagnostic::error(path, node.span, "per-request generators only work in a request")
                .found(node.describe())
                .expected("a value fixed for the whole phase")
                .help(format!(
                    "{}() make a value per request in `path`, `query`, `headers` and `body`; use a variable or a \
                     matrix here",
                    crate::generate::GENERATORS.join("(), ")
                )),
        );
    }

    /// A mapping with only `allowed` keys; unknown keys are reported with a suggestion.
    pub fn map<'n>(&mut self, node: &'n Node, path: &Path, allowed: &[&str], what: &str) -> Option<Fields<'n>> {
        let NodeKind::Map(entries) = &node.kind else {
            self.diags.push(
                Diagnostic::error(path, node.span, format!("{what} must be a mapping"))
                    .expected(format!("a mapping with keys {}", list(allowed)))
                    .found(node.type_name()),
            );
            return None;
        };
        let mut unknown = Vec::new();
        for (key, _) in entries {
            if !allowed.contains(&key.name.as_str()) {
                unknown.push(key.name.as_str());
                let d =
                    Diagnostic::error(&path.key(&key.name), key.span, format!("unknown key `{}` in {what}", key.name))
                        .width(key.name.chars().count())
                        .expected(format!("one of {}", list(allowed)));
                let d = match did_you_mean(&key.name, allowed.iter().copied()) {
                    Some(s) => d.help(format!("did you mean `{s}`?")),
                    None => d,
                };
                self.diags.push(d);
            }
        }
        Some(Fields { entries, path: path.clone(), node, unknown })
    }

    pub fn required<'n>(&mut self, fields: &Fields<'n>, key: &str, what: &str) -> Option<(&'n Node, Path)> {
        let found = fields.get(key);
        // A misspelling of `key` already has its error ("unknown key `conections`... did you mean `connections`?"):
        // one error for one mistake.
        let misspelt = || fields.unknown.iter().any(|k| did_you_mean(k, [key]).is_some());
        if found.is_none() && !misspelt() {
            let example = example_for(key);
            self.diags.push(
                Diagnostic::error(&fields.path, fields.node.span, format!("{what} is missing `{key}`"))
                    .expected(format!("the `{key}` key"))
                    .help(format!("add `{key}: {example}`")),
            );
        }
        found
    }

    pub fn string(&mut self, node: &Node, path: &Path, what: &str) -> Option<String> {
        let node = self.render(node, path)?;
        match node.scalar_text() {
            Some(s) => Some(s),
            None => {
                self.diags.push(
                    Diagnostic::error(path, node.span, format!("{what} must be text"))
                        .expected("a string")
                        .found(node.type_name()),
                );
                None
            }
        }
    }

    pub fn boolean(&mut self, node: &Node, path: &Path, what: &str) -> Option<bool> {
        let node = self.render(node, path)?;
        match &node.kind {
            NodeKind::Bool(b) => Some(*b),
            _ => {
                let help = match node.scalar_text().as_deref() {
                    Some("yes" | "on" | "1") => Some("write `true`".to_owned()),
                    Some("no" | "off" | "0") => Some("write `false`".to_owned()),
                    _ => None,
                };
                self.diags.push(
                    Diagnostic::error(path, node.span, format!("{what} must be `true` or `false`"))
                        .expected("`true` or `false`")
                        .found(node.describe())
                        .help_opt(help),
                );
                None
            }
        }
    }

    /// A whole number of at least `min`.
    pub fn uint(&mut self, node: &Node, path: &Path, what: &str, min: u64) -> Option<u64> {
        let node = self.render(node, path)?;
        let expected = if min == 0 { "a whole number".to_owned() } else { format!("a whole number of at least {min}") };
        let value = match &node.kind {
            NodeKind::Int(i) => *i,
            NodeKind::Float(f) if f.fract() == 0.0 && f.abs() < 9.0e15 => *f as i64,
            NodeKind::Str(s) => {
                let help = s
                    .strip_suffix('k')
                    .and_then(|d| d.parse::<u64>().ok())
                    .map(|d| format!("write the number in full: `{}`", d * 1000));
                self.diags.push(
                    Diagnostic::error(path, node.span, format!("{what} must be a whole number"))
                        .expected(expected)
                        .found(node.describe())
                        .help_opt(help),
                );
                return None;
            }
            _ => {
                self.diags.push(
                    Diagnostic::error(path, node.span, format!("{what} must be a whole number"))
                        .expected(expected)
                        .found(node.describe()),
                );
                return None;
            }
        };
        if value < 0 || (value as u64) < min {
            let help = if value < 0 { Some(format!("{what} cannot be negative")) } else { None };
            self.diags.push(
                Diagnostic::error(path, node.span, format!("{what} must be at least {min}"))
                    .expected(expected)
                    .found(node.describe())
                    .help_opt(help),
            );
            return None;
        }
        Some(value as u64)
    }

    /// A unit value (duration, rate, size, CPU list, percentage) from its text.
    pub fn unit<T: FromStr<Err = UnitError>>(&mut self, node: &Node, path: &Path, what: &str) -> Option<T> {
        let node = self.render(node, path)?;
        let Some(text) = node.scalar_text() else {
            self.diags.push(
                Diagnostic::error(path, node.span, format!("{what} must be a single value")).found(node.type_name()),
            );
            return None;
        };
        match text.parse::<T>() {
            Ok(v) => Some(v),
            Err(e) => {
                self.diags.push(
                    Diagnostic::error(path, node.span, format!("{what} is not valid"))
                        .expected(e.expected)
                        .found(node.describe())
                        .help_opt(e.help),
                );
                None
            }
        }
    }

    /// A list of nodes (a single value stands for a list of one when `single_ok`).
    pub fn list<'n>(&mut self, node: &'n Node, path: &Path, what: &str) -> Option<&'n [Node]> {
        match &node.kind {
            NodeKind::Seq(items) => Some(items),
            _ => {
                self.diags.push(
                    Diagnostic::error(path, node.span, format!("{what} must be a list"))
                        .expected("a list")
                        .found(node.type_name()),
                );
                None
            }
        }
    }

    /// Exactly one of `keys` is present; returns which.
    pub fn one_of<'k>(&mut self, fields: &Fields<'_>, keys: &[&'k str], what: &str) -> Option<&'k str> {
        let present: Vec<&'k str> = keys.iter().copied().filter(|k| fields.has(k)).collect();
        match present.as_slice() {
            [one] => Some(one),
            [] => {
                self.diags.push(
                    Diagnostic::error(&fields.path, fields.node.span, format!("{what} needs one of {}", list(keys)))
                        .expected(format!("exactly one of {}", list(keys)))
                        .found("none of them"),
                );
                None
            }
            [_, second, ..] => {
                self.diags.push(
                    Diagnostic::error(
                        &fields.path.key(second),
                        fields.key_span(second),
                        format!("{what} takes only one of {}", list(keys)),
                    )
                    .expected(format!("exactly one of {}", list(keys)))
                    .found(list(&present))
                    .help(format!("keep one of {} and remove the others", list(&present))),
                );
                None
            }
        }
    }
}

pub(crate) fn list(keys: &[&str]) -> String {
    keys.iter().map(|k| format!("`{k}`")).collect::<Vec<_>>().join(", ")
}

fn example_for(key: &str) -> &'static str {
    match key {
        "version" => "1",
        "name" => "my-benchmark",
        "scenarios" => "{ main: { request: { path: / }, load: { closed: { connections: 64, duration: 10s } } } }",
        "load" => "{ closed: { connections: 64, duration: 10s } }",
        "connections" => "64",
        "rate" => "1000/s",
        "duration" => "10s",
        "over" => "30s",
        "during" => "30s",
        "to" => "1000/s",
        "stages" => "[{ to: 1000/s, over: 30s }]",
        "command" => "[./my-server, --port, '8080']",
        "base_url" => "http://127.0.0.1:8080",
        "path" => "/",
        "expr" => "p99 < 100ms",
        _ => "...",
    }
}
