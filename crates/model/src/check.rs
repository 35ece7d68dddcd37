//! Response checks, captures and verification (issue 30; the design is `docs/design/checks.md`): what a request
//! expects of its response (`check:`), what a session step takes from it for later steps (`capture:`), and
//! whether the run verifies its requests before the load (`verify:`). Plain types: the reader builds them, the
//! plan carries them, the engine compiles and runs them.

use serde::{Deserialize, Serialize};
use std::fmt;

/// The most checks one request may have.
pub const MAX_CHECKS: usize = 32;
/// The most steps of a JSON selector.
pub const MAX_SELECTOR_STEPS: usize = 16;
/// The most variables (capture names) of one session.
pub const MAX_VARIABLES: usize = 64;
/// A capture's value length by default, and the largest `max_length`.
pub const DEFAULT_CAPTURE_LEN: u32 = 4096;
pub const MAX_CAPTURE_LEN: u32 = 64 * 1024;
/// The largest regex source.
pub const MAX_REGEX_LEN: usize = 1024;

/// One check of a response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Check {
    /// Unique among one request's checks: the default name of its subject (`status`, `header:content-type`,
    /// `json:$.a`) or the spec's `name:`.
    pub name: String,
    pub kind: CheckKind,
}

// Checks hold no NaN (the reader refuses it), so equality is an equivalence.
impl Eq for Check {}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "subject", rename_all = "snake_case")]
pub enum CheckKind {
    /// The status is one of the set.
    Status {
        set: StatusSet,
    },
    /// A header (name lower-cased); every operator must hold for one field of that name.
    Header {
        name: String,
        ops: Vec<TextOp>,
    },
    BodyContains {
        text: String,
    },
    BodyMatches {
        pattern: Pattern,
    },
    BodyEquals {
        expected: Expected,
    },
    BodySize {
        min: Option<u64>,
        max: Option<u64>,
    },
    /// The first value the selector finds, in document order; every operator must hold.
    Json {
        selector: JsonSelector,
        ops: Vec<JsonOp>,
    },
}

impl CheckKind {
    /// Whether the check reads the response's body (refused on `HEAD`).
    pub fn reads_body(&self) -> bool {
        !matches!(self, CheckKind::Status { .. } | CheckKind::Header { .. })
    }
}

/// An operator on text (a header's value).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", content = "value", rename_all = "snake_case")]
pub enum TextOp {
    Exists(bool),
    Equals(Expected),
    Contains(String),
    Matches(Pattern),
}

/// An operator on the JSON value a selector found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", content = "value", rename_all = "snake_case")]
pub enum JsonOp {
    Exists(bool),
    Equals(JsonExpected),
    /// A string's decoded content (or another value's text) contains this.
    Contains(String),
    Matches(Pattern),
    /// A number compared with this one.
    Compare {
        cmp: crate::Comparison,
        value: f64,
    },
    Type(JsonType),
}

/// What a JSON `equals` expects, typed by the YAML scalar the spec wrote.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", content = "value", rename_all = "snake_case")]
pub enum JsonExpected {
    /// Equal as numbers: `1` matches `1`, `1.0` and `1e0`.
    Number(f64),
    Bool(bool),
    Null,
    /// A string's decoded content, or (with captures) the raw text of another value.
    Text(Expected),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JsonType {
    String,
    Number,
    Boolean,
    Null,
    Object,
    Array,
}

impl JsonType {
    pub const NAMES: [&'static str; 6] = ["string", "number", "boolean", "null", "object", "array"];

    pub fn parse(s: &str) -> Option<JsonType> {
        Some(match s {
            "string" => JsonType::String,
            "number" => JsonType::Number,
            "boolean" => JsonType::Boolean,
            "null" => JsonType::Null,
            "object" => JsonType::Object,
            "array" => JsonType::Array,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        Self::NAMES[self as usize]
    }
}

/// Expected text: literal text and captured variables (`Segment::Text` and `Segment::Var` only).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Expected(pub Vec<crate::generate::Segment>);

impl Expected {
    pub fn literal(text: &str) -> Expected {
        Expected(vec![crate::generate::Segment::Text(text.to_string())])
    }

    /// The text when no variable is in it.
    pub fn as_literal(&self) -> Option<String> {
        let mut out = String::new();
        for s in &self.0 {
            match s {
                crate::generate::Segment::Text(t) => out.push_str(t),
                _ => return None,
            }
        }
        Some(out)
    }
}

impl fmt::Display for Expected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for s in &self.0 {
            match s {
                crate::generate::Segment::Text(t) => f.write_str(t)?,
                crate::generate::Segment::Var { slot, .. } => write!(f, "{{{{ var{slot} }}}}")?,
                crate::generate::Segment::Gen { index, .. } => write!(f, "{{gen{index}}}")?,
            }
        }
        Ok(())
    }
}

/// A regex's source; the reader checks that it compiles within the limits, the engine compiles it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Pattern(pub String);

/// A set of statuses, 100 to 599.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct StatusSet([u64; 8]);

impl StatusSet {
    pub const EMPTY: StatusSet = StatusSet([0; 8]);

    pub fn contains(&self, status: u16) -> bool {
        (100..600).contains(&status) && {
            let i = (status - 100) as usize;
            self.0[i / 64] & (1 << (i % 64)) != 0
        }
    }

    pub fn insert(&mut self, status: u16) {
        if (100..600).contains(&status) {
            let i = (status - 100) as usize;
            self.0[i / 64] |= 1 << (i % 64);
        }
    }

    /// Adds a whole class: 2 for `2xx`.
    pub fn insert_class(&mut self, class: u16) {
        for s in class * 100..class * 100 + 100 {
            self.insert(s);
        }
    }

    /// Reads `200`, `2xx` (or `2XX`); `None` outside 100-599 or classes 1-5.
    pub fn parse_item(text: &str) -> Option<StatusSet> {
        let mut set = StatusSet::EMPTY;
        let t = text.trim();
        if t.len() == 3 && t[1..].eq_ignore_ascii_case("xx") {
            let class = t[..1].parse::<u16>().ok().filter(|c| (1..=5).contains(c))?;
            set.insert_class(class);
            return Some(set);
        }
        let code = t.parse::<u16>().ok().filter(|c| (100..600).contains(c))?;
        set.insert(code);
        Some(set)
    }

    pub fn union(mut self, other: StatusSet) -> StatusSet {
        for (a, b) in self.0.iter_mut().zip(other.0) {
            *a |= b;
        }
        self
    }

    /// Items as written back: whole classes as `2xx`, other codes one by one.
    pub fn items(&self) -> Vec<String> {
        let mut out = Vec::new();
        for class in 1..=5u16 {
            let all = (class * 100..class * 100 + 100).all(|s| self.contains(s));
            if all {
                out.push(format!("{class}xx"));
            } else {
                out.extend((class * 100..class * 100 + 100).filter(|s| self.contains(*s)).map(|s| s.to_string()));
            }
        }
        out
    }
}

impl fmt::Display for StatusSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.items().join(", "))
    }
}

impl fmt::Debug for StatusSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "StatusSet[{self}]")
    }
}

impl Serialize for StatusSet {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.items().serialize(s)
    }
}

impl<'de> Deserialize<'de> for StatusSet {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let items = Vec::<String>::deserialize(d)?;
        let mut set = StatusSet::EMPTY;
        for i in items {
            let one =
                StatusSet::parse_item(&i).ok_or_else(|| serde::de::Error::custom(format!("`{i}` is not a status")))?;
            set = set.union(one);
        }
        Ok(set)
    }
}

/// A JSON selector of the supported subset: `$`, `.name`, `['name']`, `[0]`, `.*`, `[*]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JsonSelector {
    /// As the spec wrote it.
    pub text: String,
    pub steps: Vec<JsonStep>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "step", content = "value", rename_all = "snake_case")]
pub enum JsonStep {
    Key(String),
    Index(u32),
    AnyKey,
    AnyIndex,
}

/// Why a selector was refused: the message and the (1-based) character it points at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SelectorError {
    pub message: String,
    pub help: Option<String>,
    pub at: usize,
}

impl fmt::Display for SelectorError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl JsonSelector {
    /// Parses the subset; every refusal names the character and, for the unsupported forms, the workaround.
    pub fn parse(text: &str) -> Result<JsonSelector, SelectorError> {
        let chars: Vec<char> = text.chars().collect();
        let err = |at: usize, message: String, help: Option<&str>| SelectorError {
            message: format!("`{text}` is not a JSON selector: {message}"),
            help: help.map(str::to_string),
            at: at + 1,
        };
        if chars.first() != Some(&'$') {
            return Err(err(
                0,
                "it must start with `$`".into(),
                Some("write `$.name`, `$.items[0].id` or `$['a key']`"),
            ));
        }
        let mut i = 1;
        let mut steps = Vec::new();
        let name_char = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-' || !c.is_ascii();
        while i < chars.len() {
            if steps.len() == MAX_SELECTOR_STEPS {
                return Err(err(i, format!("more than {MAX_SELECTOR_STEPS} steps"), None));
            }
            match chars[i] {
                '.' => {
                    if chars.get(i + 1) == Some(&'.') {
                        return Err(err(
                            i,
                            format!("recursive descent `..` at character {} needs the whole document", i + 1),
                            Some("name the path from the root: `$.a.b`"),
                        ));
                    }
                    if chars.get(i + 1) == Some(&'*') {
                        steps.push(JsonStep::AnyKey);
                        i += 2;
                        continue;
                    }
                    let start = i + 1;
                    let mut j = start;
                    while j < chars.len() && name_char(chars[j]) {
                        j += 1;
                    }
                    if j == start {
                        let found = chars.get(start).map_or("the end".to_string(), |c| format!("`{c}`"));
                        return Err(err(
                            start,
                            format!("a name must follow the `.` at character {}, found {found}", i + 1),
                            Some("quote other names: `$['a key']`"),
                        ));
                    }
                    steps.push(JsonStep::Key(chars[start..j].iter().collect()));
                    i = j;
                }
                '[' => {
                    let open = i;
                    let Some(&next) = chars.get(i + 1) else {
                        return Err(err(open, format!("the `[` at character {} is not closed", open + 1), None));
                    };
                    if next == '\'' || next == '"' {
                        let quote = next;
                        let mut j = i + 2;
                        let mut key = String::new();
                        loop {
                            match chars.get(j) {
                                None => {
                                    return Err(err(
                                        open,
                                        format!("the `[` at character {} is not closed", open + 1),
                                        None,
                                    ))
                                }
                                Some('\\') => match chars.get(j + 1) {
                                    Some(c @ ('\'' | '"' | '\\')) => {
                                        key.push(*c);
                                        j += 2;
                                    }
                                    _ => {
                                        return Err(err(
                                            j,
                                            format!(
                                                "the `\\` at character {} escapes only a quote or a backslash",
                                                j + 1
                                            ),
                                            None,
                                        ))
                                    }
                                },
                                Some(c) if *c == quote => {
                                    j += 1;
                                    break;
                                }
                                Some(c) => {
                                    key.push(*c);
                                    j += 1;
                                }
                            }
                        }
                        if chars.get(j) != Some(&']') {
                            return Err(err(open, format!("the `[` at character {} is not closed", open + 1), None));
                        }
                        steps.push(JsonStep::Key(key));
                        i = j + 1;
                        continue;
                    }
                    let close = chars[i + 1..].iter().position(|c| *c == ']').map(|p| p + i + 1);
                    let Some(close) = close else {
                        return Err(err(open, format!("the `[` at character {} is not closed", open + 1), None));
                    };
                    let inner: String = chars[i + 1..close].iter().collect();
                    let inner = inner.trim();
                    if inner == "*" {
                        steps.push(JsonStep::AnyIndex);
                    } else if !inner.is_empty() && inner.chars().all(|c| c.is_ascii_digit()) {
                        let n = inner
                            .parse::<u32>()
                            .map_err(|_| err(i + 1, format!("the index `{inner}` is too large"), None))?;
                        steps.push(JsonStep::Index(n));
                    } else if inner.starts_with('?') {
                        return Err(err(
                            i + 1,
                            "filters `[?(...)]` need the whole document".into(),
                            Some("select by position (`[0]`) or every element (`[*]`)"),
                        ));
                    } else if inner.starts_with('-') {
                        return Err(err(
                            i + 1,
                            "negative indexes are known only when the array closes".into(),
                            Some("count from the start: `[0]`"),
                        ));
                    } else if inner.contains(':') {
                        return Err(err(
                            i + 1,
                            "slices `[a:b]` select several values; a check reads one".into(),
                            Some("select one element: `[0]`"),
                        ));
                    } else if inner.contains(',') {
                        return Err(err(
                            i + 1,
                            "unions `[a,b]` select several values; a check reads one".into(),
                            Some("make them two checks"),
                        ));
                    } else {
                        return Err(err(
                            i + 1,
                            format!("`[{inner}]` is neither an index, `*` nor a quoted name"),
                            Some("write `[0]`, `[*]` or `['name']`"),
                        ));
                    }
                    i = close + 1;
                }
                c => {
                    return Err(err(
                        i,
                        format!("expected `.` or `[` at character {}, found `{c}`", i + 1),
                        Some("write `$.a.b`, `$.items[0].id` or `$['a key']`"),
                    ));
                }
            }
        }
        Ok(JsonSelector { text: text.to_string(), steps })
    }
}

impl fmt::Display for JsonSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// A value a session step takes from its response for later steps.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Capture {
    pub name: String,
    /// The variable's slot in its session (`Variable`s are indexed by it).
    pub slot: u16,
    pub source: CaptureSource,
    /// Used when nothing matches; without it, nothing found is a failed check `capture:<name>`.
    pub default: Option<String>,
    pub max_len: u32,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "from", rename_all = "snake_case")]
pub enum CaptureSource {
    /// The first value the selector finds: a string's decoded content, else the value's text.
    Json { selector: JsonSelector },
    /// A header's value (name lower-cased), optionally narrowed by a regex (group 1, or the whole match).
    Header { name: String, regex: Option<Pattern> },
    /// A regex over the body: group 1, or the whole match.
    Regex { pattern: Pattern },
    /// This response's `Set-Cookie` of that name.
    Cookie { name: String },
}

impl CaptureSource {
    pub fn reads_body(&self) -> bool {
        matches!(self, CaptureSource::Json { .. } | CaptureSource::Regex { .. })
    }
}

/// A session's variable: index = slot.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Variable {
    pub name: String,
    pub max_len: u32,
}

/// Whether a response that failed a check is a failed response in `error_rate`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailedChecks {
    /// A failed check makes the response failed (Gatling's KO, Artillery's default).
    #[default]
    Errors,
    /// Failed checks show only in `checks` and `check_failures` (k6's rule).
    Separate,
}

/// Which scenarios are verified before the load.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum VerifyScenarios {
    /// Those whose requests have checks.
    #[default]
    Auto,
    /// All, requests without checks by the 2xx rule.
    All,
    Off,
}

/// The spec's `verify:`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Verify {
    pub scenarios: VerifyScenarios,
    /// Requests (or sessions) sent per verified scenario: 1 by default, at most 100.
    pub requests: u32,
}

impl Default for Verify {
    fn default() -> Self {
        Verify { scenarios: VerifyScenarios::Auto, requests: 1 }
    }
}

/// The default name of a check (before `name:`).
pub fn default_name(kind: &CheckKind) -> String {
    match kind {
        CheckKind::Status { .. } => "status".into(),
        CheckKind::Header { name, .. } => format!("header:{name}"),
        CheckKind::BodyContains { .. } => "body_contains".into(),
        CheckKind::BodyMatches { .. } => "body_matches".into(),
        CheckKind::BodyEquals { .. } => "body_equals".into(),
        CheckKind::BodySize { .. } => "body_size".into(),
        CheckKind::Json { selector, .. } => format!("json:{}", selector.text),
    }
}

/// What a check expects, in words, for reports: `status in 2xx, 304`, `Content-Type matches ^application/json`,
/// `$.total >= 1`, `body is 13 B to 64 KiB`.
pub fn describe(kind: &CheckKind) -> String {
    fn text_ops(subject: &str, ops: &[TextOp]) -> String {
        // `exists` goes without saying beside another operator.
        let others = ops.iter().any(|op| !matches!(op, TextOp::Exists(true)));
        let parts: Vec<String> = ops
            .iter()
            .filter(|op| !(others && matches!(op, TextOp::Exists(true))))
            .map(|op| match op {
                TextOp::Exists(true) => format!("{subject} exists"),
                TextOp::Exists(false) => format!("{subject} is absent"),
                TextOp::Equals(e) => format!("{subject} equals \"{e}\""),
                TextOp::Contains(t) => format!("{subject} contains \"{t}\""),
                TextOp::Matches(p) => format!("{subject} matches {}", p.0),
            })
            .collect();
        if parts.is_empty() {
            format!("{subject} exists")
        } else {
            parts.join(", ")
        }
    }
    match kind {
        CheckKind::Status { set } => format!("status in {set}"),
        CheckKind::Header { name, ops } => text_ops(&header_case(name), ops),
        CheckKind::BodyContains { text } => format!("body contains \"{text}\""),
        CheckKind::BodyMatches { pattern } => format!("body matches {}", pattern.0),
        CheckKind::BodyEquals { expected } => format!("body equals \"{expected}\""),
        CheckKind::BodySize { min, max } => match (min, max) {
            (Some(a), Some(b)) if a == b => format!("body is {a} bytes"),
            (Some(a), Some(b)) => format!("body is {a} to {b} bytes"),
            (Some(a), None) => format!("body is at least {a} bytes"),
            (None, Some(b)) => format!("body is at most {b} bytes"),
            (None, None) => "a body of any size".into(),
        },
        CheckKind::Json { selector, ops } => {
            let s = &selector.text;
            let others = ops.iter().any(|op| !matches!(op, JsonOp::Exists(true)));
            let parts: Vec<String> = ops
                .iter()
                .filter(|op| !(others && matches!(op, JsonOp::Exists(true))))
                .map(|op| match op {
                    JsonOp::Exists(true) => format!("{s} exists"),
                    JsonOp::Exists(false) => format!("{s} is absent"),
                    JsonOp::Equals(JsonExpected::Number(n)) => format!("{s} == {n}"),
                    JsonOp::Equals(JsonExpected::Bool(b)) => format!("{s} == {b}"),
                    JsonOp::Equals(JsonExpected::Null) => format!("{s} is null"),
                    JsonOp::Equals(JsonExpected::Text(e)) => format!("{s} == \"{e}\""),
                    JsonOp::Contains(t) => format!("{s} contains \"{t}\""),
                    JsonOp::Matches(p) => format!("{s} matches {}", p.0),
                    JsonOp::Compare { cmp, value } => format!("{s} {} {value}", cmp.as_str()),
                    JsonOp::Type(t) => format!("{s} is a {}", t.name()),
                })
                .collect();
            if parts.is_empty() {
                format!("{s} exists")
            } else {
                parts.join(", ")
            }
        }
    }
}

/// `content-type` as `Content-Type`, for reading.
fn header_case(name: &str) -> String {
    name.split('-')
        .map(|w| {
            let mut c = w.chars();
            c.next().map(|f| f.to_uppercase().chain(c).collect::<String>()).unwrap_or_default()
        })
        .collect::<Vec<_>>()
        .join("-")
}

/// What a capture expects, in words: `$.json.token found`, `Location matches ^/anything/(\d+)$`.
pub fn describe_capture(source: &CaptureSource) -> String {
    match source {
        CaptureSource::Json { selector } => format!("{} found", selector.text),
        CaptureSource::Header { name, regex: None } => format!("{} present", header_case(name)),
        CaptureSource::Header { name, regex: Some(p) } => format!("{} matches {}", header_case(name), p.0),
        CaptureSource::Regex { pattern } => format!("body matches {}", pattern.0),
        CaptureSource::Cookie { name } => format!("Set-Cookie {name}"),
    }
}

/// Whether a check's name can be written in an SLO filter (`check_failures{check=NAME}`).
pub fn name_is_filterable(name: &str) -> bool {
    !name.is_empty() && !name.chars().any(|c| c.is_whitespace() || matches!(c, '{' | '}' | ',' | '='))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn steps(s: &str) -> Vec<JsonStep> {
        JsonSelector::parse(s).unwrap().steps
    }

    #[test]
    fn selectors_of_the_subset() {
        assert_eq!(steps("$"), vec![]);
        assert_eq!(steps("$.a.b"), vec![JsonStep::Key("a".into()), JsonStep::Key("b".into())]);
        assert_eq!(
            steps("$.items[0].id"),
            vec![JsonStep::Key("items".into()), JsonStep::Index(0), JsonStep::Key("id".into())]
        );
        assert_eq!(steps("$['a key'][\"b\\\"c\"]"), vec![JsonStep::Key("a key".into()), JsonStep::Key("b\"c".into())]);
        assert_eq!(steps("$.*[*]"), vec![JsonStep::AnyKey, JsonStep::AnyIndex]);
        assert_eq!(steps("$.ünï-c_0"), vec![JsonStep::Key("ünï-c_0".into())]);
    }

    #[test]
    fn refused_selectors_name_the_character() {
        let e = JsonSelector::parse("$.items[").unwrap_err();
        assert_eq!(e.message, "`$.items[` is not a JSON selector: the `[` at character 8 is not closed");
        assert_eq!(e.at, 8);
        let e = JsonSelector::parse("$..a").unwrap_err();
        assert!(e.message.contains("recursive descent"), "{}", e.message);
        assert!(JsonSelector::parse("$.a[?(@.x)]").unwrap_err().message.contains("filters"));
        assert!(JsonSelector::parse("$.a[-1]").unwrap_err().message.contains("negative"));
        assert!(JsonSelector::parse("$.a[1:3]").unwrap_err().message.contains("slices"));
        assert!(JsonSelector::parse("$.a[0,1]").unwrap_err().message.contains("unions"));
        assert!(JsonSelector::parse("a.b").unwrap_err().message.contains("start with `$`"));
        assert!(JsonSelector::parse("$.").unwrap_err().message.contains("a name must follow"));
        let long = format!("${}", ".a".repeat(17));
        assert!(JsonSelector::parse(&long).unwrap_err().message.contains("more than 16"));
    }

    #[test]
    fn status_sets() {
        let s = StatusSet::parse_item("2xx").unwrap().union(StatusSet::parse_item("304").unwrap());
        assert!(s.contains(200) && s.contains(299) && s.contains(304) && !s.contains(300) && !s.contains(404));
        assert_eq!(s.items(), vec!["2xx".to_string(), "304".to_string()]);
        assert!(StatusSet::parse_item("6xx").is_none());
        assert!(StatusSet::parse_item("700").is_none());
        assert!(StatusSet::parse_item("99").is_none());
        let json = serde_json::to_string(&s).unwrap();
        assert_eq!(serde_json::from_str::<StatusSet>(&json).unwrap(), s);
    }

    #[test]
    fn names() {
        assert!(name_is_filterable("json:$.a[0]"));
        assert!(!name_is_filterable("json:$['a key']"));
        assert!(!name_is_filterable("a=b"));
    }
}
