//! What an imported command line means, tool-independently, and its rendering as a commented YAML spec.

use std::fmt::Write as _;

use crate::shell::one_line;
use crate::tool::Tool;
use crate::values::{format_cpus, Dur, TargetUrl};
use loadgate_model::yaml::quote;

/// The JSON Schema the generated spec names in its modeline.
pub const SCHEMA_URL: &str = "https://loadgate.dev/schemas/loadgate.schema.json";

const STANDARD_METHODS: &[&str] = &["GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "TRACE", "CONNECT"];

/// A value and whether it is the tool's default (the command line did not give it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Val<T> {
    pub v: T,
    pub default: bool,
}

impl<T> Val<T> {
    pub fn given(v: T) -> Self {
        Val { v, default: false }
    }
    pub fn default(v: T) -> Self {
        Val { v, default: true }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stop {
    Duration(Val<Dur>),
    Requests(Val<u64>),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Load {
    /// `batch_reads`: `pipeline_reads: batch` (a pipelined batch's responses complete together, as wrk records them).
    Closed {
        connections: Val<u64>,
        stop: Stop,
        pipeline: u32,
        keep_alive: bool,
        batch_reads: bool,
    },
    Open {
        rate_millis: u64,
        duration: Val<Dur>,
        connections: Val<u64>,
    },
}

#[derive(Debug, Clone)]
pub(crate) struct Draft {
    pub tool: Tool,
    pub command_line: String,
    /// Generator CPUs, and the prefix that pinned them (`taskset -c 16-31`).
    pub cpus: Option<(Vec<u32>, String)>,
    pub threads: Option<Val<u32>>,
    pub url: TargetUrl,
    pub method: String,
    pub headers: Vec<(String, String)>,
    pub body: Option<String>,
    pub timeout: Option<Val<Dur>>,
    pub load: Load,
    /// A warmup phase before the measured one (apib `-w`).
    pub warmup: Option<Dur>,
    /// `https://` without certificate checks (oha `--insecure`).
    pub insecure: bool,
    /// The tool speaks HTTP/2 (h2load without `--h1`, oha `--http2`): `target.protocol`, and its streams per
    /// connection (h2load `-m`, oha `-p`).
    pub http2: bool,
    pub streams: u32,
    pub notes: Vec<String>,
    /// Credentials typed on the command line (`-A user:password`, a URL's `user:password@`): sent base64-encoded
    /// in a Basic `Authorization` header, so the secrets scrubber, which knows the header's value, would not find
    /// them in the command line the spec's first comment quotes. They are written there as `***`.
    pub credentials: Vec<String>,
}

impl Draft {
    pub fn note(&mut self, text: impl Into<String>) {
        let text = one_line(&text.into());
        if !self.notes.contains(&text) {
            self.notes.push(text);
        }
    }

    /// Sends `user:password` as a Basic `Authorization` header, and keeps it out of the quoted command line.
    pub fn set_basic_auth(&mut self, user_pass: &str) {
        self.set_header("Authorization", &crate::flags::basic_auth(user_pass));
        if !user_pass.is_empty() && !self.credentials.iter().any(|c| c == user_pass) {
            self.credentials.push(user_pass.to_owned());
        }
    }

    /// The command line as the spec quotes it: one line, the credentials typed on it written as `***`.
    fn quoted_command_line(&self) -> String {
        let mut line = one_line(self.command_line.trim());
        // The longest first, so that a credential containing another is replaced whole.
        let header_values = self
            .headers
            .iter()
            .filter(|(k, v)| loadgate_model::secrets::is_credential_header(k, &[]) && !v.is_empty())
            .map(|(_, v)| v);
        let mut credentials: Vec<&String> = self.credentials.iter().chain(header_values).collect();
        credentials.sort_by_key(|c| std::cmp::Reverse(c.len()));
        for c in credentials {
            line = line.replace(c.as_str(), "***");
        }
        line
    }

    /// Adds a header, replacing an earlier one of the same name (HTTP names ignore case).
    pub fn set_header(&mut self, name: &str, value: &str) {
        if let Some(pos) = self.headers.iter().position(|(n, _)| n.eq_ignore_ascii_case(name)) {
            let (old_name, old) = self.headers.remove(pos);
            if old != value && loadgate_model::secrets::is_credential_header(name, &[]) {
                self.note(format!("header `{old_name}` was given again; only the last value is kept"));
            } else if old != value {
                self.note(format!("header `{old_name}: {old}` was given again; only `{name}: {value}` is kept"));
            }
        }
        self.headers.push((name.to_owned(), value.to_owned()));
    }

    /// The spec's `name`: the tool and the request path, file-name-safe.
    fn name(&self) -> String {
        let path = self.url.path.split('?').next().unwrap_or_default();
        let mut stem: String = path
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() || matches!(c, '_' | '.') { c.to_ascii_lowercase() } else { '-' })
            .collect();
        if stem.trim_matches(['-', '.']).is_empty() {
            stem = self.url.host.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '-' }).collect();
        }
        let mut name = format!("{}-{stem}", self.tool);
        while name.contains("--") {
            name = name.replace("--", "-");
        }
        let mut name: String = name.trim_matches(['-', '.']).chars().take(64).collect();
        while name.ends_with(['-', '.']) {
            name.pop();
        }
        name
    }

    pub fn render(&self) -> String {
        let mut y = String::new();
        let tool = self.tool;
        let _ = writeln!(y, "# yaml-language-server: $schema={SCHEMA_URL}");
        let _ = writeln!(y, "# imported from: {}", self.quoted_command_line());
        if !self.notes.is_empty() {
            let _ = writeln!(y, "#\n# Not carried over, or carried over differently:");
            for n in &self.notes {
                let _ = writeln!(y, "#   - {n}");
            }
        }
        let _ = writeln!(y, "version: 1");
        let _ = writeln!(y, "name: {}", self.name());
        let article = if matches!(tool, Tool::Ab | Tool::Oha | Tool::Apib | Tool::H2load) { "an" } else { "a" };
        let _ = writeln!(y, "description: Imported from {article} {tool} command line.");
        if self.cpus.is_some() || self.threads.is_some() {
            let _ = writeln!(y, "hardware:\n  generator:");
            if let Some((cpus, source)) = &self.cpus {
                let _ = writeln!(y, "    cpus: {}  # from `{}`", quote(&format_cpus(cpus)), one_line(source));
            }
            if let Some(t) = self.threads {
                let _ = writeln!(y, "    threads: {}{}", t.v, default_comment(t.default, tool));
            }
            if self.cpus.is_some() {
                let _ = writeln!(y, "  on_mismatch: warn  # run unpinned, and say so, where these CPUs do not exist");
            }
        }
        let _ = writeln!(y, "target:");
        let _ = writeln!(y, "  base_url: {}", quote(&self.url.base));
        if self.url.https && self.insecure {
            let _ = writeln!(y, "  tls: {{ insecure: true }}  # from `--insecure`: the certificate is not checked");
        }
        if self.http2 {
            let how = if self.url.https { "h2 by ALPN" } else { "h2c with prior knowledge" };
            let _ = writeln!(y, "  protocol: http2  # {tool} speaks HTTP/2 here ({how})");
        }
        let _ = writeln!(y, "scenarios:");
        if let Some(w) = self.warmup {
            let _ = writeln!(y, "  warmup:  # {tool}'s warmup: measured and reported, never gated");
            let _ = writeln!(y, "    gate: false");
            self.render_request(&mut y);
            let mut load = self.load.clone();
            match &mut load {
                Load::Closed { stop, .. } => *stop = Stop::Duration(Val::given(w)),
                Load::Open { duration, .. } => *duration = Val::given(w),
            }
            render_load(&mut y, &load, tool, self.streams);
        }
        let _ = writeln!(y, "  main:");
        self.render_request(&mut y);
        render_load(&mut y, &self.load, tool, self.streams);
        let _ = writeln!(y, "    slo:");
        let _ = writeln!(
            y,
            "      # added by `loadgate import`: {tool} reports errors but never fails on them; add latency and"
        );
        let _ = writeln!(y, "      # throughput objectives (`p99 < 100ms`, `throughput >= 10000/s`) to gate on them");
        let _ = writeln!(y, "      - error_rate < 1%");
        y
    }

    fn render_request(&self, y: &mut String) {
        let _ = writeln!(y, "    request:");
        let method =
            if STANDARD_METHODS.contains(&self.method.as_str()) { self.method.clone() } else { quote(&self.method) };
        let _ = writeln!(y, "      method: {method}");
        let _ = writeln!(y, "      path: {}", scalar(&self.url.path));
        if !self.headers.is_empty() {
            let _ = writeln!(y, "      headers:");
            for (k, v) in &self.headers {
                // A credential is never written into a spec meant to be committed: a reference to the environment.
                if loadgate_model::secrets::is_credential_header(k, &[]) {
                    let env = crate::credential::credential_env_name(k);
                    let reference = quote(&crate::credential::credential_reference(k));
                    let _ = writeln!(y, "        {}: {reference}  # export {env} with the value", key(k));
                } else {
                    let _ = writeln!(y, "        {}: {}", key(k), quote(&literal(v)));
                }
            }
        }
        if let Some(b) = &self.body {
            let _ = writeln!(y, "      body: {}", quote(&literal(b)));
        }
        if let Some(t) = self.timeout {
            let _ = writeln!(y, "    timeout: {}{}", t.v, default_comment(t.default, self.tool));
        }
    }
}

fn render_load(y: &mut String, load: &Load, tool: Tool, streams: u32) {
    let _ = writeln!(y, "    load:");
    match load {
        Load::Closed { connections, stop, pipeline, keep_alive, batch_reads } => {
            let _ = writeln!(y, "      closed:");
            let _ = writeln!(y, "        connections: {}{}", connections.v, default_comment(connections.default, tool));
            match stop {
                Stop::Duration(d) => {
                    let _ = writeln!(y, "        duration: {}{}", d.v, default_comment(d.default, tool));
                }
                Stop::Requests(n) => {
                    let _ = writeln!(y, "        requests: {}{}", n.v, default_comment(n.default, tool));
                }
            }
            if *pipeline > 1 {
                let _ = writeln!(y, "        pipeline: {pipeline}");
                if *batch_reads {
                    let _ = writeln!(
                        y,
                        "        pipeline_reads: batch  # as {} records a pipelined batch: one latency, when its last response is in",
                        tool.name()
                    );
                }
            }
            if !keep_alive {
                let _ = writeln!(y, "        keep_alive: false");
            }
            if streams > 1 {
                let _ = writeln!(y, "        streams: {streams}");
            }
        }
        Load::Open { rate_millis, duration, connections } => {
            let _ = writeln!(y, "      open:");
            let _ = writeln!(y, "        rate: {}", rate_text(*rate_millis));
            let _ = writeln!(y, "        duration: {}{}", duration.v, default_comment(duration.default, tool));
            let _ = writeln!(y, "        connections: {}{}", connections.v, default_comment(connections.default, tool));
            if streams > 1 {
                let _ = writeln!(y, "        streams: {streams}");
            }
        }
    }
}

fn default_comment(default: bool, tool: Tool) -> String {
    if default {
        format!("  # {tool}'s default")
    } else {
        String::new()
    }
}

/// A rate in thousandths of a request per second, as loadgate writes rates: `32000/s`, `12.5/s`.
pub(crate) fn rate_text(millis: u64) -> String {
    if millis % 1000 == 0 {
        format!("{}/s", millis / 1000)
    } else {
        let s = format!("{}.{:03}", millis / 1000, millis % 1000);
        format!("{}/s", s.trim_end_matches('0'))
    }
}

/// Keeps text literal through loadgate's template rendering: `{{`, `{%` and `{#` would start a template, so
/// each such `{` is written as the expression `{{ '{' }}`. Text without them is returned unchanged.
pub(crate) fn literal(s: &str) -> String {
    if !(s.contains("{{") || s.contains("{%")) {
        return s.to_owned();
    }
    let chars: Vec<char> = s.chars().collect();
    let mut out = String::with_capacity(s.len() + 16);
    for (i, &c) in chars.iter().enumerate() {
        if c == '{' && matches!(chars.get(i + 1), Some('{' | '%' | '#')) {
            out.push_str("{{ '{' }}");
        } else {
            out.push(c);
        }
    }
    out
}

/// A YAML scalar: plain when that is unambiguous (`/api/orders?i=1`), double-quoted otherwise.
fn scalar(s: &str) -> String {
    let plain = s.starts_with('/')
        && s.chars().all(|c| c.is_ascii_alphanumeric() || "/_.-=&?%+,;~@!$()*'".contains(c))
        && !(s.contains("{{") || s.contains("{%"));
    if plain {
        s.to_owned()
    } else {
        quote(&literal(s))
    }
}

/// A mapping key: plain for ordinary header names (`Accept`, `X-Request-Id`), quoted otherwise.
fn key(s: &str) -> String {
    let plain = s.starts_with(|c: char| c.is_ascii_alphabetic())
        && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
        && !matches!(
            s.to_ascii_lowercase().as_str(),
            "true" | "false" | "null" | "yes" | "no" | "on" | "off" | "y" | "n"
        );
    if plain {
        s.to_owned()
    } else {
        quote(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literal_escapes_template_starts_only() {
        assert_eq!(literal("a{b}"), "a{b}");
        assert_eq!(literal("{{x}}"), "{{ '{' }}{x}}");
        assert_eq!(literal("{%x{#"), "{{ '{' }}%x{{ '{' }}#");
    }

    #[test]
    fn rates() {
        assert_eq!(rate_text(32_000_000), "32000/s");
        assert_eq!(rate_text(12_500), "12.5/s");
        assert_eq!(rate_text(1), "0.001/s");
    }

    #[test]
    fn quoting() {
        assert_eq!(quote("a\"b\\c\n\u{1}"), r#""a\"b\\c\n\x01""#);
        assert_eq!(scalar("/api/orders?i=1"), "/api/orders?i=1");
        assert_eq!(scalar("/a:b"), "\"/a:b\"");
        assert_eq!(scalar("/a#b"), "\"/a#b\"");
    }
}
