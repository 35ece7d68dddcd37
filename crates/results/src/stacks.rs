//! A bounded table of sampled call stacks ([`Stacks`]), the folded format profilers and flame graph tools share,
//! and the names frames are matched by.
//!
//! **The table.** Frame names are interned; a stack is its frames root first with a count (samples, or whatever
//! unit the profile counts: bytes allocated, contentions). Distinct stacks are capped ([`Stacks::with_max_stacks`],
//! [`DEFAULT_MAX_STACKS`] by default): a sample of a new stack once the table is full goes to a counted overflow
//! bucket, so totals stay right and memory stays bounded however long the run. A stack deeper than [`MAX_DEPTH`]
//! keeps its root-most frames and ends in [`TRUNCATED`]; a name longer than [`MAX_NAME_BYTES`] is cut.
//!
//! **Names in the table** are cleaned once, when they enter it, so that what the folded file, the tables and the
//! analysis show is the same text: `;` (the folded format's separator) becomes `,`, line breaks and tabs become
//! spaces, leading and trailing whitespace goes, an empty name becomes `[empty]`. Nothing else is changed.
//!
//! **Folded I/O.** [`Stacks::write_folded`] writes one line per stack, `root;caller;leaf COUNT` (flamegraph.pl,
//! inferno and speedscope read it), the overflow bucket as one `[other stacks]` stack. [`parse_folded`] reads what
//! external profilers write: async-profiler `-o collapsed`, py-spy `record --format raw`, `perf script |
//! stackcollapse-perf.pl`, inferno's collapse tools. The count is the text after a line's last space (frames may
//! contain spaces: `void Foo.bar(int, long)`); blank lines are skipped; empty frames (`a;;b`) are dropped. Garbage
//! is an error naming the line and what is wrong, never a panic. The input is bounded ([`FoldedLimits`]: 64 MiB and
//! 4,000,000 lines by default) and so is the table it fills.
//!
//! **Matching names** ([`match_key`]): two builds name one function differently; the analysis matches frames by a
//! key with the differences that mean nothing taken out. Mangled Rust symbols are demangled, Rust's hash suffix
//! (`::h0123456789abcdef`) is dropped, async-profiler's frame type annotations (`_[j]` JIT-compiled, `_[i]`
//! inlined, `_[k]` kernel, `_[0]` interpreted, `_[1]` C1-compiled) are dropped, and py-spy's line numbers
//! (`handle (app.py:42)` becomes `handle (app.py)`) are dropped, since an edit above a function moves them.

use std::collections::HashMap;
use std::fmt;
use std::io::{self, Write};

use serde::{Deserialize, Serialize};

/// The distinct stacks a table keeps by default; samples of further stacks are counted in its overflow.
pub const DEFAULT_MAX_STACKS: usize = 50_000;
/// The frames a stack keeps, root first; a deeper stack ends in [`TRUNCATED`].
pub const MAX_DEPTH: usize = 1024;
/// The bytes of a frame name kept (cut at a character boundary).
pub const MAX_NAME_BYTES: usize = 1024;
/// The last frame of a stack cut at [`MAX_DEPTH`].
pub const TRUNCATED: &str = "[truncated]";
/// The stack the overflow bucket is written as in a folded file.
pub const OVERFLOW_FRAME: &str = "[other stacks]";

/// A bounded table of call stacks with counts. See the [module](self) documentation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "StacksRepr", into = "StacksRepr")]
pub struct Stacks {
    names: Vec<Box<str>>,
    ids: HashMap<Box<str>, u32>,
    stacks: Vec<(Box<[u32]>, u64)>,
    index: HashMap<Box<[u32]>, usize>,
    overflow: u64,
    max_stacks: usize,
}

impl Default for Stacks {
    fn default() -> Self {
        Stacks::with_max_stacks(DEFAULT_MAX_STACKS)
    }
}

impl Stacks {
    /// An empty table that keeps up to [`DEFAULT_MAX_STACKS`] distinct stacks.
    pub fn new() -> Self {
        Stacks::default()
    }

    /// An empty table that keeps up to `max_stacks` distinct stacks (at least 1).
    pub fn with_max_stacks(max_stacks: usize) -> Self {
        Stacks {
            names: Vec::new(),
            ids: HashMap::new(),
            stacks: Vec::new(),
            index: HashMap::new(),
            overflow: 0,
            max_stacks: max_stacks.max(1),
        }
    }

    /// Adds `count` samples of the stack `frames` (root first). An empty stack, or a count of 0, adds nothing.
    pub fn add<S: AsRef<str>>(&mut self, frames: &[S], count: u64) {
        if count == 0 || frames.is_empty() {
            return;
        }
        let mut ids: Vec<u32> = Vec::with_capacity(frames.len().min(MAX_DEPTH));
        for frame in frames.iter().take(MAX_DEPTH) {
            ids.push(self.intern(frame.as_ref()));
        }
        if frames.len() > MAX_DEPTH {
            if let Some(last) = ids.last_mut() {
                *last = self.intern(TRUNCATED);
            }
        }
        self.add_ids(ids.into_boxed_slice(), count);
    }

    fn add_ids(&mut self, ids: Box<[u32]>, count: u64) {
        if let Some(&i) = self.index.get(&ids) {
            if let Some(entry) = self.stacks.get_mut(i) {
                entry.1 = entry.1.saturating_add(count);
            }
        } else if self.stacks.len() < self.max_stacks {
            self.index.insert(ids.clone(), self.stacks.len());
            self.stacks.push((ids, count));
        } else {
            self.overflow = self.overflow.saturating_add(count);
        }
    }

    fn intern(&mut self, name: &str) -> u32 {
        let clean = clean_frame(name);
        if let Some(&id) = self.ids.get(clean.as_str()) {
            return id;
        }
        let id = self.names.len() as u32;
        let boxed: Box<str> = clean.into_boxed_str();
        self.ids.insert(boxed.clone(), id);
        self.names.push(boxed);
        id
    }

    /// Adds every stack of `other` (and its overflow) to this table, within this table's cap.
    pub fn merge(&mut self, other: &Stacks) {
        for (frames, count) in other.iter() {
            self.add(&frames, count);
        }
        self.overflow = self.overflow.saturating_add(other.overflow);
    }

    /// Each stack (its frames root first) with its count, in the order first seen; the overflow is not included.
    pub fn iter(&self) -> impl Iterator<Item = (Vec<&str>, u64)> + '_ {
        self.stacks.iter().map(|(ids, count)| (ids.iter().map(|&id| self.name(id)).collect(), *count))
    }

    fn name(&self, id: u32) -> &str {
        self.names.get(id as usize).map_or("[unknown]", |n| n)
    }

    /// The number of distinct stacks kept.
    pub fn len(&self) -> usize {
        self.stacks.len()
    }

    /// Whether the table holds no sample at all (no stack and no overflow).
    pub fn is_empty(&self) -> bool {
        self.stacks.is_empty() && self.overflow == 0
    }

    /// The counts of samples of stacks beyond the cap.
    pub fn overflow(&self) -> u64 {
        self.overflow
    }

    /// The most distinct stacks this table keeps.
    pub fn max_stacks(&self) -> usize {
        self.max_stacks
    }

    /// Every count, the overflow included.
    pub fn total(&self) -> u64 {
        self.stacks.iter().fold(self.overflow, |t, (_, c)| t.saturating_add(*c))
    }

    /// Writes the folded format: one `root;...;leaf COUNT` line per stack, the overflow as `[other stacks]`.
    pub fn write_folded<W: Write>(&self, out: &mut W) -> io::Result<()> {
        let mut line = String::new();
        for (ids, count) in &self.stacks {
            line.clear();
            for (i, &id) in ids.iter().enumerate() {
                if i > 0 {
                    line.push(';');
                }
                line.push_str(self.name(id));
            }
            writeln!(out, "{line} {count}")?;
        }
        if self.overflow > 0 {
            writeln!(out, "{OVERFLOW_FRAME} {}", self.overflow)?;
        }
        Ok(())
    }

    /// The folded format as a string ([`Stacks::write_folded`]).
    pub fn to_folded(&self) -> String {
        let mut out = Vec::new();
        // Writing to a Vec cannot fail.
        let _ = self.write_folded(&mut out);
        String::from_utf8_lossy(&out).into_owned()
    }

    /// Sample-weighted figures of the table: how many samples, how many have an unknown leaf, how deep stacks are.
    pub fn shape(&self) -> StacksShape {
        let mut depths: Vec<(usize, u64)> = self.stacks.iter().map(|(ids, c)| (ids.len(), *c)).collect();
        depths.sort_unstable();
        let counted: u64 = depths.iter().map(|(_, c)| c).sum();
        let at = |q: f64| -> usize {
            let rank = ((counted as f64) * q).ceil().max(1.0) as u64;
            let mut seen = 0u64;
            for &(d, c) in &depths {
                seen += c;
                if seen >= rank {
                    return d;
                }
            }
            depths.last().map_or(0, |d| d.0)
        };
        let unknown: u64 = self
            .stacks
            .iter()
            .filter(|(ids, _)| ids.last().is_some_and(|&l| is_unknown(self.name(l))))
            .map(|s| s.1)
            .sum();
        StacksShape {
            samples: self.total(),
            distinct_stacks: self.stacks.len(),
            overflow: self.overflow,
            unknown_leaf: unknown,
            depth_p50: at(0.5),
            depth_p90: at(0.9),
            depth_max: depths.last().map_or(0, |d| d.0),
        }
    }
}

/// What [`Stacks::shape`] reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StacksShape {
    pub samples: u64,
    pub distinct_stacks: usize,
    pub overflow: u64,
    /// Samples whose leaf frame is unknown (`[unknown]`, or a bare hex address).
    pub unknown_leaf: u64,
    pub depth_p50: usize,
    pub depth_p90: usize,
    pub depth_max: usize,
}

/// Whether a frame name says the profiler could not name it: `[unknown]`, a bare address `0x7f..`, or only the
/// file the address is in (`[nginx]`, `[libc.so.6]`, `[kernel]`: loadgate's sampler writes that for a stripped
/// binary without its debug file, as perf writes `[unknown]` beside the file).
pub fn is_unknown(name: &str) -> bool {
    let file_only = name.len() > 2
        && name.starts_with('[')
        && name.ends_with(']')
        && !name[1..name.len() - 1].contains(|c: char| c.is_whitespace() || matches!(c, '[' | ']' | '='));
    file_only
        || name.strip_prefix("0x").is_some_and(|hex| !hex.is_empty() && hex.bytes().all(|b| b.is_ascii_hexdigit()))
}

impl<S: AsRef<str>> FromIterator<(Vec<S>, u64)> for Stacks {
    fn from_iter<I: IntoIterator<Item = (Vec<S>, u64)>>(iter: I) -> Self {
        let mut stacks = Stacks::new();
        stacks.extend(iter);
        stacks
    }
}

impl<S: AsRef<str>> Extend<(Vec<S>, u64)> for Stacks {
    fn extend<I: IntoIterator<Item = (Vec<S>, u64)>>(&mut self, iter: I) {
        for (frames, count) in iter {
            self.add(&frames, count);
        }
    }
}

/// The serialized form: interned names once, each stack as `[[frame ids, root first], count]`.
#[derive(Serialize, Deserialize)]
struct StacksRepr {
    frames: Vec<String>,
    stacks: Vec<(Vec<u32>, u64)>,
    #[serde(default)]
    overflow: u64,
    #[serde(default = "default_max")]
    max_stacks: usize,
}

fn default_max() -> usize {
    DEFAULT_MAX_STACKS
}

impl From<Stacks> for StacksRepr {
    fn from(s: Stacks) -> Self {
        StacksRepr {
            frames: s.names.iter().map(|n| n.to_string()).collect(),
            stacks: s.stacks.into_iter().map(|(ids, c)| (ids.into_vec(), c)).collect(),
            overflow: s.overflow,
            max_stacks: s.max_stacks,
        }
    }
}

impl TryFrom<StacksRepr> for Stacks {
    type Error = String;

    fn try_from(r: StacksRepr) -> Result<Self, Self::Error> {
        let mut out = Stacks::with_max_stacks(r.max_stacks.max(r.stacks.len()));
        for (i, (ids, count)) in r.stacks.iter().enumerate() {
            let mut frames = Vec::with_capacity(ids.len());
            for &id in ids {
                match r.frames.get(id as usize) {
                    Some(name) => frames.push(name.as_str()),
                    None => {
                        return Err(format!("stack {i} names frame {id}, but there are only {} frames", r.frames.len()))
                    }
                }
            }
            out.add(&frames, *count);
        }
        out.overflow = r.overflow;
        out.max_stacks = r.max_stacks.max(1);
        Ok(out)
    }
}

/// A frame name as the table keeps it: no `;`, no line break, never empty, at most [`MAX_NAME_BYTES`].
fn clean_frame(name: &str) -> String {
    let name = name.trim();
    if name.is_empty() {
        return "[empty]".to_owned();
    }
    let mut cut = name.len().min(MAX_NAME_BYTES);
    while !name.is_char_boundary(cut) {
        cut -= 1;
    }
    let clean: String = name[..cut]
        .chars()
        .map(|c| match c {
            ';' => ',',
            c if c.is_whitespace() => ' ',
            c => c,
        })
        .collect();
    clean.trim().to_owned()
}

/// The key frames are matched by across builds: demangled, without Rust's hash suffix, async-profiler's
/// annotations or py-spy's line numbers. See the [module](self) documentation.
pub fn match_key(name: &str) -> String {
    let mut key = match rustc_demangle::try_demangle(name) {
        Ok(d) if name.starts_with("_ZN") || name.starts_with("_R") || name.starts_with("__ZN") => format!("{d:#}"),
        _ => name.to_owned(),
    };
    strip_rust_hash(&mut key);
    strip_annotation(&mut key);
    strip_line_number(&mut key);
    key
}

/// `foo::bar::h0123456789abcdef` -> `foo::bar`.
fn strip_rust_hash(key: &mut String) {
    let bytes = key.as_bytes();
    let n = bytes.len();
    if n >= 19
        && &bytes[n - 19..n - 16] == b"::h"
        && bytes[n - 16..].iter().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    {
        key.truncate(n - 19);
    }
}

/// `Foo.bar_[j]` -> `Foo.bar` (async-profiler's frame types).
fn strip_annotation(key: &mut String) {
    for suffix in ["_[j]", "_[i]", "_[k]", "_[0]", "_[1]"] {
        if key.len() > suffix.len() && key.ends_with(suffix) {
            key.truncate(key.len() - suffix.len());
            return;
        }
    }
}

/// `handle (app.py:42)` -> `handle (app.py)` (py-spy's line numbers).
fn strip_line_number(key: &mut String) {
    if !key.ends_with(')') {
        return;
    }
    let inner = &key[..key.len() - 1];
    let Some(colon) = inner.rfind(':') else { return };
    let digits = &inner[colon + 1..];
    if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) && inner[..colon].contains(" (") {
        key.replace_range(colon..key.len() - 1, "");
    }
}

/// How much folded input [`parse_folded`] reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FoldedLimits {
    /// The largest input, in bytes (64 MiB by default: an hour of a busy server at 1 kHz folds to a few MB).
    pub max_bytes: usize,
    /// The most lines (4,000,000 by default).
    pub max_lines: usize,
    /// The distinct stacks the table keeps ([`DEFAULT_MAX_STACKS`]); further stacks go to its overflow.
    pub max_stacks: usize,
}

impl Default for FoldedLimits {
    fn default() -> Self {
        FoldedLimits { max_bytes: 64 << 20, max_lines: 4_000_000, max_stacks: DEFAULT_MAX_STACKS }
    }
}

/// Why folded input could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FoldedError {
    #[error("the folded input has {size} bytes, more than the {max} it may have")]
    TooLarge { size: usize, max: usize },
    #[error("the folded input has more than {max} lines")]
    TooManyLines { max: usize },
    #[error("line {line}: {problem}")]
    Line { line: usize, problem: FoldedProblem },
}

/// What is wrong with one line of folded input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FoldedProblem {
    /// No space, so no count: `main;foo`.
    NoCount { text: String },
    /// The text after the last space is not a whole number: `main;foo 1.5`, `main;foo abc`.
    BadCount { count: String },
    /// Nothing but a count, or only empty frames: ` 12`, `;; 3`.
    NoFrames,
}

impl fmt::Display for FoldedProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FoldedProblem::NoCount { text } => {
                write!(f, "no count: a folded line is `frame;frame;... COUNT` (collapsed stacks), found `{text}`")
            }
            FoldedProblem::BadCount { count } => {
                write!(f, "the count `{count}` (after the line's last space) is not a whole number of samples")
            }
            FoldedProblem::NoFrames => f.write_str("no frames before the count"),
        }
    }
}

/// Reads folded stacks (`root;...;leaf COUNT` per line). See the [module](self) documentation.
pub fn parse_folded(input: &[u8], limits: FoldedLimits) -> Result<Stacks, FoldedError> {
    if input.len() > limits.max_bytes {
        return Err(FoldedError::TooLarge { size: input.len(), max: limits.max_bytes });
    }
    let mut stacks = Stacks::with_max_stacks(limits.max_stacks);
    for (i, raw) in input.split(|&b| b == b'\n').enumerate() {
        if i >= limits.max_lines {
            if raw.is_empty() && i == limits.max_lines {
                break;
            }
            return Err(FoldedError::TooManyLines { max: limits.max_lines });
        }
        let text = String::from_utf8_lossy(raw);
        let line = text.trim_end_matches('\r').trim();
        if line.is_empty() {
            continue;
        }
        let located = |problem| FoldedError::Line { line: i + 1, problem };
        let Some((stack, count)) = line.rsplit_once([' ', '\t']) else {
            return Err(located(FoldedProblem::NoCount { text: snippet(line) }));
        };
        let count: u64 = count.parse().map_err(|_| {
            // A number that is not whole is a bad count; a word means the line has no count at all.
            if count.parse::<f64>().is_ok() {
                located(FoldedProblem::BadCount { count: snippet(count) })
            } else {
                located(FoldedProblem::NoCount { text: snippet(line) })
            }
        })?;
        let frames: Vec<&str> = stack.trim_end().split(';').filter(|f| !f.is_empty()).collect();
        if frames.is_empty() {
            return Err(located(FoldedProblem::NoFrames));
        }
        stacks.add(&frames, count);
    }
    Ok(stacks)
}

/// At most 60 characters of a line, for an error message; control characters escaped (`\u{1b}`), so that what
/// a profiler wrote never drives the terminal that shows the message.
fn snippet(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars().take(60) {
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    if text.chars().nth(60).is_some() {
        out.push_str("...");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(frames: &str) -> Vec<String> {
        frames.split(';').map(str::to_owned).collect()
    }

    #[test]
    fn stacks_add_up_by_their_frames_root_first() {
        let s: Stacks = [(v("main;a;b"), 3), (v("main;a"), 2), (v("main;a;b"), 4)].into_iter().collect();
        assert_eq!(s.len(), 2);
        assert_eq!(s.total(), 9);
        let all: Vec<(Vec<&str>, u64)> = s.iter().collect();
        assert_eq!(all, vec![(vec!["main", "a", "b"], 7), (vec!["main", "a"], 2)]);
    }

    #[test]
    fn a_full_table_counts_new_stacks_in_its_overflow() {
        let mut s = Stacks::with_max_stacks(2);
        s.add(&v("a;b"), 1);
        s.add(&v("a;c"), 1);
        s.add(&v("a;d"), 5);
        s.add(&v("a;b"), 1);
        assert_eq!((s.len(), s.overflow(), s.total()), (2, 5, 8));
        assert!(s.to_folded().ends_with("[other stacks] 5\n"));
    }

    #[test]
    fn merge_adds_stacks_and_overflow() {
        let mut a: Stacks = [(v("x;y"), 1)].into_iter().collect();
        let mut b = Stacks::with_max_stacks(1);
        b.add(&v("x;y"), 2);
        b.add(&v("x;z"), 3);
        a.merge(&b);
        assert_eq!(a.total(), 6);
        assert_eq!(a.overflow(), 3);
    }

    #[test]
    fn names_that_would_break_the_folded_format_are_cleaned() {
        let s: Stacks =
            [(vec!["main".to_owned(), "a;b".into(), "line\nbreak".into(), String::new()], 2)].into_iter().collect();
        assert_eq!(s.to_folded(), "main;a,b;line break;[empty] 2\n");
        let back = parse_folded(s.to_folded().as_bytes(), FoldedLimits::default()).unwrap();
        assert_eq!(back, s);
    }

    #[test]
    fn very_deep_stacks_and_long_names_are_cut() {
        let deep: Vec<String> = (0..MAX_DEPTH + 10).map(|i| format!("f{i}")).collect();
        let long = "x".repeat(MAX_NAME_BYTES * 2);
        let s: Stacks = [(deep, 1), (vec![long], 1)].into_iter().collect();
        let all: Vec<(Vec<&str>, u64)> = s.iter().collect();
        assert_eq!(all[0].0.len(), MAX_DEPTH);
        assert_eq!(all[0].0.last(), Some(&TRUNCATED));
        assert_eq!(all[1].0[0].len(), MAX_NAME_BYTES);
    }

    #[test]
    fn serde_is_compact_and_round_trips() {
        let s: Stacks = [(v("main;a;b"), 3), (v("main;c"), 1)].into_iter().collect();
        let json = serde_json::to_string(&s).unwrap();
        assert_eq!(
            json,
            r#"{"frames":["main","a","b","c"],"stacks":[[[0,1,2],3],[[0,3],1]],"overflow":0,"max_stacks":50000}"#
        );
        assert_eq!(serde_json::from_str::<Stacks>(&json).unwrap(), s);
        let bad = r#"{"frames":["main"],"stacks":[[[0,7],3]]}"#;
        let err = serde_json::from_str::<Stacks>(bad).unwrap_err().to_string();
        assert!(err.contains("stack 0 names frame 7, but there are only 1 frames"), "{err}");
    }

    #[test]
    fn folded_output_of_real_profilers_is_read() {
        let async_profiler = "java/lang/Thread.run;Handler.handle_[j];Dao.query_[i] 98\n\
            java/lang/Thread.run;java/util/concurrent/LinkedBlockingQueue.take_[j] 1\n";
        let py_spy = "process 4242:\"python app.py\";<module> (app.py:40);handle (app.py:12) 17\n";
        let perf = "nginx;[unknown];ngx_http_process_request;ngx_http_handler 5\r\nnginx;__libc_start_main;main 2\n";
        let inferno = "main;void Foo::bar(int, long) 3\n\n";
        for (text, total) in [(async_profiler, 99), (py_spy, 17), (perf, 7), (inferno, 3)] {
            let s = parse_folded(text.as_bytes(), FoldedLimits::default()).unwrap();
            assert_eq!(s.total(), total, "{text}");
        }
        let s = parse_folded(inferno.as_bytes(), FoldedLimits::default()).unwrap();
        assert_eq!(s.iter().next().unwrap().0, vec!["main", "void Foo::bar(int, long)"]);
    }

    #[test]
    fn garbage_is_an_error_naming_its_line() {
        let err = |text: &str| parse_folded(text.as_bytes(), FoldedLimits::default()).unwrap_err().to_string();
        assert_eq!(
            err("a;b 1\nSegmentation fault\n"),
            "line 2: no count: a folded line is `frame;frame;... COUNT` (collapsed stacks), found `Segmentation fault`"
        );
        assert_eq!(
            err("a;b 1.5\n"),
            "line 1: the count `1.5` (after the line's last space) is not a whole number of samples"
        );
        assert_eq!(err("a;b 1\n\n ;; 4\n"), "line 3: no frames before the count");
        assert!(err("<html><body>500 Internal Server Error</body></html>").starts_with("line 1: "));
        // Binary garbage is shown with its control characters escaped: nothing reaches the terminal raw.
        let binary = err("\u{1b}[2J\u{7}\u{0}junk");
        assert!(binary.ends_with("found `\\u{1b}[2J\\u{7}\\u{0}junk`"), "{binary}");
        assert!(!binary.chars().any(char::is_control), "{binary:?}");
    }

    #[test]
    fn input_beyond_the_limits_is_refused() {
        let limits = FoldedLimits { max_bytes: 10, max_lines: 2, max_stacks: 10 };
        assert_eq!(parse_folded(b"a;b 1\na;c 2\nz 1\n", limits), Err(FoldedError::TooLarge { size: 16, max: 10 }));
        let limits = FoldedLimits { max_bytes: 100, ..limits };
        assert_eq!(parse_folded(b"a 1\nb 2\n", limits).map(|s| s.total()), Ok(3));
        assert_eq!(parse_folded(b"a 1\nb 2\nc 3\n", limits), Err(FoldedError::TooManyLines { max: 2 }));
    }

    #[test]
    fn match_keys_leave_out_what_differs_between_builds() {
        assert_eq!(match_key("_ZN4demo9slow_path17h0123456789abcdefE"), "demo::slow_path");
        assert_eq!(match_key("demo::slow_path::h0123456789abcdef"), "demo::slow_path");
        assert_eq!(match_key("com/acme/Dao.query_[j]"), "com/acme/Dao.query");
        assert_eq!(match_key("com/acme/Dao.query_[i]"), "com/acme/Dao.query");
        assert_eq!(match_key("handle (app.py:42)"), "handle (app.py)");
        assert_eq!(match_key("main.slowPath"), "main.slowPath");
        assert_eq!(match_key("_[j]"), "_[j]");
        assert_eq!(match_key("f (x:y)"), "f (x:y)");
    }

    #[test]
    fn unknown_frames_are_recognised() {
        assert!(is_unknown("[unknown]"));
        assert!(is_unknown("0x7f3a2b"));
        assert!(!is_unknown("0x"));
        assert!(!is_unknown("main"));
        let s: Stacks = [(v("a;b;c"), 3), (v("a;[unknown]"), 1)].into_iter().collect();
        let shape = s.shape();
        assert_eq!((shape.samples, shape.unknown_leaf, shape.depth_p50, shape.depth_max), (4, 1, 3, 3));
        // A frame named only by its file is not named; names with brackets inside are.
        let s: Stacks = [(v("nginx;[nginx]"), 2), (v("a;0x7f00"), 1), (v("a;std::vec[i]"), 1), (v("a;[tid=7]"), 1)]
            .into_iter()
            .collect();
        assert_eq!(s.shape().unknown_leaf, 3);
    }

    proptest::proptest! {
        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..400)) {
            let _ = parse_folded(&bytes, FoldedLimits::default());
        }

        #[test]
        fn written_stacks_read_back_the_same(
            stacks in proptest::collection::vec(
                (proptest::collection::vec("[a-z;: \\n]{0,6}", 1..5), 1u64..1000), 0..20)
        ) {
            let s: Stacks = stacks.into_iter().collect();
            let back = parse_folded(s.to_folded().as_bytes(), FoldedLimits::default()).unwrap();
            proptest::prop_assert_eq!(back.total(), s.total());
            proptest::prop_assert_eq!(back.to_folded(), s.to_folded());
        }
    }
}
