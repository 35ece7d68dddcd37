//! The streaming JSON selector evaluator: no tree. A [`Program`] holds up to 16 selectors (every `json` check and
//! capture of one request); a [`Scanner`] is fed the body in any chunk split and answers, for each selector, the
//! **first** value in document order whose path matches it (a string's decoded content, a number's or a literal's
//! text, a container's type only), "not found", or why the body is not JSON.
//!
//! The scanner tokenizes byte by byte except inside strings, which it skips (or copies) in runs found with
//! `memchr2(b'"', b'\\')`. A key is decoded only when a selector could match it at that level. A selector
//! resolves at its first match; once all have, the scanner is done and ignores the rest of the body (which is
//! then not validated). "Not found" is decided when the root value ends. Malformed JSON before a selector
//! resolved is that selector's answer. Buffers are reused: after the first responses, nothing allocates.

use loadgate_model::{JsonStep, JsonType};
use memchr::memchr2;
use std::fmt;

/// The deepest nesting the scanner follows.
pub(crate) const MAX_DEPTH: usize = 128;
/// The most selectors of one program.
pub(crate) const MAX_SELECTORS: usize = 16;
/// The value bytes kept for a check (a capture keeps up to its `max_length`).
pub(crate) const DEFAULT_VALUE_LIMIT: usize = 4096;
/// Array indexes are tracked this deep; no selector has more steps.
const INDEXED: usize = loadgate_model::check::MAX_SELECTOR_STEPS;

#[derive(Debug, Clone, PartialEq)]
enum Step {
    Key(Box<[u8]>),
    Index(u32),
    AnyKey,
    AnyIndex,
}

#[derive(Debug, Clone, PartialEq)]
struct Sel {
    steps: Box<[Step]>,
    /// Value bytes kept.
    limit: usize,
}

/// Up to 16 selectors, compiled once per request template and shared (immutable).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Program {
    sels: Box<[Sel]>,
    /// The longest key of any step: a longer key in the document matches none.
    max_key: usize,
}

/// More than [`MAX_SELECTORS`] selectors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TooManySelectors;

impl Program {
    /// One selector per item: its steps and the value bytes to keep.
    pub(crate) fn new<'a>(
        selectors: impl IntoIterator<Item = (&'a [JsonStep], usize)>,
    ) -> Result<Program, TooManySelectors> {
        let mut sels = Vec::new();
        let mut max_key = 0;
        for (steps, limit) in selectors {
            if sels.len() == MAX_SELECTORS {
                return Err(TooManySelectors);
            }
            let steps: Box<[Step]> = steps
                .iter()
                .take(INDEXED)
                .map(|s| match s {
                    JsonStep::Key(k) => {
                        max_key = max_key.max(k.len());
                        Step::Key(k.as_bytes().into())
                    }
                    JsonStep::Index(i) => Step::Index(*i),
                    JsonStep::AnyKey => Step::AnyKey,
                    JsonStep::AnyIndex => Step::AnyIndex,
                })
                .collect();
            sels.push(Sel { steps, limit });
        }
        Ok(Program { sels: sels.into(), max_key })
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.sels.len()
    }
}

/// Why the body is not (or not yet) JSON, found before a selector resolved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum JsonError {
    /// The byte at this offset (0-based) is not what JSON allows there.
    Unexpected {
        at: u64,
        expected: &'static str,
    },
    /// The body ended (after this many bytes) inside the document.
    Ended {
        at: u64,
        expected: &'static str,
    },
    TooDeep,
}

impl fmt::Display for JsonError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            JsonError::Unexpected { at, expected } => {
                write!(f, "the body is not JSON at byte {at}: expected {expected}")
            }
            JsonError::Ended { at, expected } => {
                write!(f, "the body is not JSON: it ended at byte {at}, expected {expected}")
            }
            JsonError::TooDeep => write!(f, "the body's JSON is nested deeper than {MAX_DEPTH}"),
        }
    }
}

/// A selector's answer.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Lookup<'a> {
    /// The body has not been finished and the selector is unresolved.
    Pending,
    /// `value` is the kept bytes (a string's decoded content, a number's or literal's text, empty for a
    /// container); `len` the whole value's length (larger than `value.len()` when it was cut).
    Found {
        ty: JsonType,
        value: &'a [u8],
        len: u64,
    },
    NotFound,
    Error(JsonError),
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Res {
    Pending,
    Found(JsonType),
    NotFound,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Num {
    /// After `-`: a digit.
    Minus,
    /// After a leading `0`.
    Zero,
    Int,
    /// After `.`: a digit.
    Dot,
    Frac,
    /// After `e`: a sign or a digit.
    Exp,
    /// After the exponent's sign: a digit.
    ExpSign,
    ExpDigits,
}

impl Num {
    fn may_end(self) -> bool {
        matches!(self, Num::Zero | Num::Int | Num::Frac | Num::ExpDigits)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// A value (at the top, after `:`, after `,` in an array).
    Value,
    /// After `[`: a value or `]`.
    ArrayFirst,
    /// After `{`: a key or `}`.
    ObjectFirst,
    /// After `,` in an object: a key.
    Key,
    Colon,
    /// After a value: `,`, or the container's end.
    After,
    Str,
    /// After a `\` in a string.
    Escape,
    /// In a `\u` escape: `n` of its four hex digits read.
    Hex {
        n: u8,
        acc: u16,
    },
    /// After a high surrogate's escape: `\` then `u` of the low one.
    LowBackslash,
    LowU,
    Number(Num),
    /// `lit` indexes [`LITERALS`]; `at` bytes matched.
    Literal {
        lit: u8,
        at: u8,
    },
    Done,
    Failed,
}

const LITERALS: [(&[u8], JsonType); 3] =
    [(b"true", JsonType::Boolean), (b"false", JsonType::Boolean), (b"null", JsonType::Null)];

/// Where a string's decoded bytes go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sink {
    Skip,
    Key,
    Value,
}

/// The per-connection tokenizer state, reset per response.
#[derive(Debug)]
pub(crate) struct Scanner {
    state: State,
    sink: Sink,
    /// Open containers.
    depth: usize,
    /// A bit per level (`level - 1`): set for an object.
    objects: [u64; 2],
    /// The current element's index of the array at each level (1-based levels up to 16).
    index: [u32; INDEXED + 1],
    /// Per selector: how many leading path elements of the current position match its steps.
    matched: [u8; MAX_SELECTORS],
    res: [Res; MAX_SELECTORS],
    lens: [u64; MAX_SELECTORS],
    vals: Vec<Vec<u8>>,
    /// Selectors not yet resolved, and those whose value is being read.
    unresolved: u16,
    capturing: u16,
    n: usize,
    key: Vec<u8>,
    key_over: bool,
    /// The string being read is a key.
    in_key: bool,
    high: u16,
    /// Bytes fed before the current chunk.
    pos: u64,
    err: Option<JsonError>,
}

impl Default for Scanner {
    fn default() -> Self {
        Scanner::new()
    }
}

impl Scanner {
    pub(crate) fn new() -> Scanner {
        Scanner {
            state: State::Done,
            sink: Sink::Skip,
            depth: 0,
            objects: [0; 2],
            index: [0; INDEXED + 1],
            matched: [0; MAX_SELECTORS],
            res: [Res::Pending; MAX_SELECTORS],
            lens: [0; MAX_SELECTORS],
            vals: Vec::new(),
            unresolved: 0,
            capturing: 0,
            n: 0,
            key: Vec::new(),
            key_over: false,
            in_key: false,
            high: 0,
            pos: 0,
            err: None,
        }
    }

    /// Starts a response's body for `p`. Allocates only the first times (a value buffer per selector).
    pub(crate) fn reset(&mut self, p: &Program) {
        self.n = p.sels.len();
        while self.vals.len() < self.n {
            self.vals.push(Vec::new());
        }
        for v in &mut self.vals[..self.n] {
            v.clear();
        }
        self.state = if self.n == 0 { State::Done } else { State::Value };
        self.sink = Sink::Skip;
        self.depth = 0;
        self.objects = [0; 2];
        self.matched = [0; MAX_SELECTORS];
        self.res = [Res::Pending; MAX_SELECTORS];
        self.lens = [0; MAX_SELECTORS];
        self.unresolved = if self.n == 16 { u16::MAX } else { (1u16 << self.n) - 1 };
        self.capturing = 0;
        self.key.clear();
        self.key_over = false;
        self.in_key = false;
        self.high = 0;
        self.pos = 0;
        self.err = None;
    }

    /// Whether every selector is resolved (or the body failed): the rest of the body need not be fed.
    pub(crate) fn done(&self) -> bool {
        matches!(self.state, State::Done | State::Failed)
    }

    /// A selector's answer so far (final after [`Scanner::finish`]).
    pub(crate) fn get(&self, s: usize) -> Lookup<'_> {
        match self.res[s] {
            Res::Found(ty) => Lookup::Found { ty, value: &self.vals[s], len: self.lens[s] },
            Res::NotFound => Lookup::NotFound,
            Res::Pending => match self.err {
                Some(e) => Lookup::Error(e),
                None => Lookup::Pending,
            },
        }
    }

    /// The body ended.
    pub(crate) fn finish(&mut self, p: &Program) {
        let at = self.pos;
        let expected = match self.state {
            State::Done | State::Failed => return,
            State::Number(n) if n.may_end() => {
                self.value_done(p, JsonType::Number);
                if self.done() {
                    return;
                }
                self.expected_after()
            }
            s => expected_in(s, self),
        };
        self.err = Some(JsonError::Ended { at, expected });
        self.state = State::Failed;
    }

    fn expected_after(&self) -> &'static str {
        if self.depth == 0 {
            "the end"
        } else if self.is_object(self.depth) {
            "`,` or `}`"
        } else {
            "`,` or `]`"
        }
    }

    fn fail(&mut self, at: u64, expected: &'static str) {
        self.err = Some(JsonError::Unexpected { at, expected });
        self.state = State::Failed;
    }

    fn is_object(&self, level: usize) -> bool {
        let b = level - 1;
        self.objects[b / 64] & (1 << (b % 64)) != 0
    }

    /// Feeds the next bytes of the body.
    pub(crate) fn feed(&mut self, p: &Program, data: &[u8]) {
        let mut i = 0;
        while i < data.len() {
            match self.state {
                State::Done | State::Failed => break,
                State::Str => {
                    i = self.string_run(p, data, i);
                    i = self.chain(p, data, i);
                }
                _ => {
                    if self.byte(p, data[i], self.pos + i as u64) {
                        i += 1;
                    }
                }
            }
        }
        self.pos += data.len() as u64;
    }

    /// After a string: reads the common continuations of minified JSON (`":"` then a value, `","` then a key)
    /// in straight-line code rather than through the state dispatch, as long as they come; returns the next
    /// index. Anything else (whitespace, an escape, a number, a container) goes back to the dispatch.
    #[inline]
    fn chain(&mut self, p: &Program, data: &[u8], mut i: usize) -> usize {
        while i < data.len() {
            let b = data[i];
            match self.state {
                State::Colon if b == b':' => self.state = State::Value,
                State::Value if b == b'"' => {
                    self.begin_value(p, b, self.pos + i as u64);
                    if self.state != State::Str {
                        return i + 1;
                    }
                    i = self.string_run(p, data, i + 1);
                    continue;
                }
                State::After if b == b',' && self.depth > 0 && self.is_object(self.depth) => self.state = State::Key,
                State::Key if b == b'"' => {
                    self.begin_key(p);
                    i = self.string_run(p, data, i + 1);
                    continue;
                }
                _ => return i,
            }
            i += 1;
        }
        i
    }

    /// Reads a string's bytes from `data[i..]` up to its end or an escape; returns the next index.
    #[inline]
    fn string_run(&mut self, p: &Program, data: &[u8], i: usize) -> usize {
        let rest = &data[i..];
        match memchr2(b'"', b'\\', rest) {
            None => {
                self.emit(p, rest);
                data.len()
            }
            Some(k) => {
                self.emit(p, &rest[..k]);
                if rest[k] == b'"' {
                    self.string_end(p);
                } else {
                    self.state = State::Escape;
                }
                i + k + 1
            }
        }
    }

    fn emit(&mut self, p: &Program, bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
        match self.sink {
            Sink::Skip => {}
            Sink::Key => {
                if !self.key_over {
                    if self.key.len() + bytes.len() > p.max_key {
                        self.key_over = true;
                    } else {
                        self.key.extend_from_slice(bytes);
                    }
                }
            }
            Sink::Value => self.capture(p, bytes),
        }
    }

    fn capture(&mut self, p: &Program, bytes: &[u8]) {
        let mut m = self.capturing;
        while m != 0 {
            let s = m.trailing_zeros() as usize;
            m &= m - 1;
            let v = &mut self.vals[s];
            let room = p.sels[s].limit.saturating_sub(v.len());
            v.extend_from_slice(&bytes[..bytes.len().min(room)]);
            self.lens[s] += bytes.len() as u64;
        }
    }

    fn emit_char(&mut self, p: &Program, c: u32) {
        let c = char::from_u32(c).unwrap_or(char::REPLACEMENT_CHARACTER);
        let mut b = [0u8; 4];
        self.emit(p, c.encode_utf8(&mut b).as_bytes());
    }

    fn string_end(&mut self, p: &Program) {
        if self.in_key {
            self.in_key = false;
            self.enter_key(p);
            self.state = State::Colon;
        } else {
            self.value_done(p, JsonType::String);
        }
    }

    /// One byte outside a string's runs; false when the byte ends a number and must be read again.
    fn byte(&mut self, p: &Program, b: u8, at: u64) -> bool {
        match self.state {
            State::Value | State::ArrayFirst | State::ObjectFirst | State::Key | State::Colon | State::After
                if is_space(b) =>
            {
                true
            }
            State::Value => {
                self.begin_value(p, b, at);
                true
            }
            State::ArrayFirst => {
                if b == b']' {
                    self.close(p, b, at);
                } else {
                    self.enter_index(p, 0);
                    self.begin_value(p, b, at);
                }
                true
            }
            State::ObjectFirst | State::Key => {
                if b == b'"' {
                    self.begin_key(p);
                } else if b == b'}' && self.state == State::ObjectFirst {
                    self.close(p, b, at);
                } else {
                    let expected = if self.state == State::ObjectFirst { "a key or `}`" } else { "a key" };
                    self.fail(at, expected);
                }
                true
            }
            State::Colon => {
                if b == b':' {
                    self.state = State::Value;
                } else {
                    self.fail(at, "`:`");
                }
                true
            }
            State::After => {
                if b == b',' && self.depth > 0 {
                    if self.is_object(self.depth) {
                        self.state = State::Key;
                    } else {
                        let d = self.depth;
                        let i = if d <= INDEXED {
                            self.index[d] = self.index[d].saturating_add(1);
                            self.index[d]
                        } else {
                            0
                        };
                        self.enter_index(p, i);
                        self.state = State::Value;
                    }
                } else if b == b'}' || b == b']' {
                    self.close(p, b, at);
                } else {
                    let e = self.expected_after();
                    self.fail(at, e);
                }
                true
            }
            State::Escape => {
                let c = match b {
                    b'"' => b'"',
                    b'\\' => b'\\',
                    b'/' => b'/',
                    b'b' => 0x08,
                    b'f' => 0x0c,
                    b'n' => b'\n',
                    b'r' => b'\r',
                    b't' => b'\t',
                    b'u' => {
                        self.state = State::Hex { n: 0, acc: 0 };
                        return true;
                    }
                    _ => {
                        self.fail(
                            at,
                            "an escape (`\\\"`, `\\\\`, `\\/`, `\\b`, `\\f`, `\\n`, `\\r`, `\\t` or `\\u` and four hex digits)",
                        );
                        return true;
                    }
                };
                if self.high != 0 {
                    self.fail(at, "the low surrogate `\\uDC00`-`\\uDFFF` of a pair");
                    return true;
                }
                self.emit(p, &[c]);
                self.state = State::Str;
                true
            }
            State::Hex { n, acc } => {
                let Some(d) = (b as char).to_digit(16) else {
                    self.fail(at, "a hex digit");
                    return true;
                };
                let acc = acc << 4 | d as u16;
                if n < 3 {
                    self.state = State::Hex { n: n + 1, acc };
                    return true;
                }
                if self.high != 0 {
                    if !(0xDC00..=0xDFFF).contains(&acc) {
                        self.fail(at, "the low surrogate `\\uDC00`-`\\uDFFF` of a pair");
                        return true;
                    }
                    let c = 0x10000 + ((self.high as u32 - 0xD800) << 10) + (acc as u32 - 0xDC00);
                    self.high = 0;
                    self.emit_char(p, c);
                    self.state = State::Str;
                } else if (0xD800..=0xDBFF).contains(&acc) {
                    self.high = acc;
                    self.state = State::LowBackslash;
                } else if (0xDC00..=0xDFFF).contains(&acc) {
                    self.fail(at, "a high surrogate `\\uD800`-`\\uDBFF` before a low one");
                } else {
                    self.emit_char(p, acc as u32);
                    self.state = State::Str;
                }
                true
            }
            State::LowBackslash | State::LowU => {
                let want = if self.state == State::LowBackslash { b'\\' } else { b'u' };
                if b != want {
                    self.fail(at, "the low surrogate `\\uDC00`-`\\uDFFF` of a pair");
                } else if want == b'u' {
                    self.state = State::Hex { n: 0, acc: 0 };
                } else {
                    self.state = State::LowU;
                }
                true
            }
            State::Number(n) => self.number(p, n, b, at),
            State::Literal { lit, at: k } => {
                let (text, ty) = LITERALS[lit as usize];
                if b != text[k as usize] {
                    self.fail(at, LITERAL_NAMES[lit as usize]);
                    return true;
                }
                if k as usize + 1 == text.len() {
                    if self.capturing != 0 {
                        self.capture(p, text);
                    }
                    self.value_done(p, ty);
                } else {
                    self.state = State::Literal { lit, at: k + 1 };
                }
                true
            }
            State::Str | State::Done | State::Failed => true,
        }
    }

    fn number(&mut self, p: &Program, n: Num, b: u8, at: u64) -> bool {
        let digit = b.is_ascii_digit();
        let next = match (n, b) {
            (Num::Minus, b'0') => Num::Zero,
            (Num::Minus, _) if digit => Num::Int,
            (Num::Int, _) if digit => Num::Int,
            (Num::Zero | Num::Int, b'.') => Num::Dot,
            (Num::Zero | Num::Int | Num::Frac, b'e' | b'E') => Num::Exp,
            (Num::Dot | Num::Frac, _) if digit => Num::Frac,
            (Num::Exp, b'+' | b'-') => Num::ExpSign,
            (Num::Exp | Num::ExpSign | Num::ExpDigits, _) if digit => Num::ExpDigits,
            _ => {
                if n.may_end() {
                    self.value_done(p, JsonType::Number);
                    return false;
                }
                self.fail(at, "a digit");
                return true;
            }
        };
        if self.capturing != 0 {
            self.capture(p, &[b]);
        }
        self.state = State::Number(next);
        true
    }

    /// The selectors (unresolved) whose steps the value starting here completes.
    fn hits(&self, p: &Program) -> u16 {
        let mut hits = 0;
        let mut m = self.unresolved;
        while m != 0 {
            let s = m.trailing_zeros() as usize;
            m &= m - 1;
            if self.matched[s] as usize == self.depth && p.sels[s].steps.len() == self.depth {
                hits |= 1 << s;
            }
        }
        hits
    }

    fn begin_value(&mut self, p: &Program, b: u8, at: u64) {
        let hits = if self.depth <= INDEXED { self.hits(p) } else { 0 };
        match b {
            b'{' | b'[' => {
                let ty = if b == b'{' { JsonType::Object } else { JsonType::Array };
                if hits != 0 {
                    self.resolve(hits, Res::Found(ty));
                    if self.done() {
                        return;
                    }
                }
                if self.depth == MAX_DEPTH {
                    self.err = Some(JsonError::TooDeep);
                    self.state = State::Failed;
                    return;
                }
                self.depth += 1;
                let bit = self.depth - 1;
                if b == b'{' {
                    self.objects[bit / 64] |= 1 << (bit % 64);
                    self.state = State::ObjectFirst;
                } else {
                    self.objects[bit / 64] &= !(1 << (bit % 64));
                    if self.depth <= INDEXED {
                        self.index[self.depth] = 0;
                    }
                    self.state = State::ArrayFirst;
                }
            }
            b'"' => {
                self.capturing = hits;
                self.sink = if hits != 0 { Sink::Value } else { Sink::Skip };
                self.in_key = false;
                self.state = State::Str;
            }
            b'-' | b'0'..=b'9' => {
                self.capturing = hits;
                if hits != 0 {
                    self.capture(p, &[b]);
                }
                self.state = State::Number(match b {
                    b'-' => Num::Minus,
                    b'0' => Num::Zero,
                    _ => Num::Int,
                });
            }
            b't' | b'f' | b'n' => {
                self.capturing = hits;
                let lit = match b {
                    b't' => 0,
                    b'f' => 1,
                    _ => 2,
                };
                self.state = State::Literal { lit, at: 1 };
            }
            _ => {
                let expected = if self.state == State::ArrayFirst { "a value or `]`" } else { "a value" };
                self.fail(at, expected);
            }
        }
    }

    fn resolve(&mut self, mask: u16, r: Res) {
        let mut m = mask & self.unresolved;
        while m != 0 {
            let s = m.trailing_zeros() as usize;
            m &= m - 1;
            self.res[s] = r;
        }
        self.unresolved &= !mask;
        if self.unresolved == 0 {
            self.state = State::Done;
        }
    }

    /// A scalar or a container ended.
    fn value_done(&mut self, _p: &Program, ty: JsonType) {
        self.state = State::After;
        if self.capturing != 0 {
            let c = self.capturing;
            self.capturing = 0;
            self.sink = Sink::Skip;
            self.resolve(c, Res::Found(ty));
        }
        if self.depth == 0 && !self.done() {
            let u = self.unresolved;
            self.resolve(u, Res::NotFound);
        }
    }

    fn close(&mut self, p: &Program, b: u8, at: u64) {
        let object = self.depth > 0 && self.is_object(self.depth);
        if self.depth == 0 || object != (b == b'}') {
            let e = self.expected_after();
            self.fail(at, e);
            return;
        }
        self.depth -= 1;
        let d = self.depth as u8;
        for m in &mut self.matched[..self.n] {
            *m = (*m).min(d);
        }
        let ty = if object { JsonType::Object } else { JsonType::Array };
        self.value_done(p, ty);
    }

    fn begin_key(&mut self, p: &Program) {
        self.in_key = true;
        self.sink = Sink::Skip;
        self.key_over = true;
        let d = self.depth;
        if d <= INDEXED {
            let mut m = self.unresolved;
            while m != 0 {
                let s = m.trailing_zeros() as usize;
                m &= m - 1;
                let steps = &p.sels[s].steps;
                if self.matched[s] as usize + 1 >= d && steps.len() >= d && matches!(steps[d - 1], Step::Key(_)) {
                    self.sink = Sink::Key;
                    self.key.clear();
                    self.key_over = false;
                    break;
                }
            }
        }
        self.state = State::Str;
    }

    /// A child of the innermost container starts at `depth`: `matches` says whether step `depth - 1` matches.
    #[inline]
    fn enter(&mut self, p: &Program, matches: impl Fn(&Step) -> bool) {
        let d = self.depth;
        if d > INDEXED + 1 {
            return;
        }
        let mut m = self.unresolved;
        while m != 0 {
            let s = m.trailing_zeros() as usize;
            m &= m - 1;
            if self.matched[s] as usize + 1 >= d {
                let steps = &p.sels[s].steps;
                self.matched[s] = (d - 1) as u8;
                if steps.len() >= d && matches(&steps[d - 1]) {
                    self.matched[s] = d as u8;
                }
            }
        }
    }

    fn enter_key(&mut self, p: &Program) {
        let key = std::mem::take(&mut self.key);
        let over = self.key_over;
        self.enter(p, |st| match st {
            Step::Key(k) => !over && **k == *key,
            Step::AnyKey => true,
            _ => false,
        });
        self.key = key;
    }

    fn enter_index(&mut self, p: &Program, i: u32) {
        self.enter(p, |st| match st {
            Step::Index(k) => *k == i,
            Step::AnyIndex => true,
            _ => false,
        });
    }
}

fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

const LITERAL_NAMES: [&str; 3] = ["`true`", "`false`", "`null`"];

/// What the body still needed when it ended in `state`.
fn expected_in(state: State, sc: &Scanner) -> &'static str {
    match state {
        State::Value => "a value",
        State::ArrayFirst => "a value or `]`",
        State::ObjectFirst => "a key or `}`",
        State::Key => "a key",
        State::Colon => "`:`",
        State::After => sc.expected_after(),
        State::Str | State::Escape | State::Hex { .. } | State::LowBackslash | State::LowU => {
            "the string's closing `\"`"
        }
        State::Number(_) => "a digit",
        State::Literal { lit, .. } => LITERAL_NAMES[lit as usize],
        State::Done | State::Failed => "nothing",
    }
}

// ---- operators on the value a selector found ----

/// A compiled `JsonOp`; a regex is an index into the entry's regexes.
#[derive(Debug, Clone)]
pub(crate) enum Op {
    Exists(bool),
    EqNumber(f64),
    EqBool(bool),
    EqNull,
    /// Literal text matches only a string; text with variables a string's content or another scalar's text.
    EqText {
        expected: loadgate_model::Expected,
        any_scalar: bool,
    },
    Contains(Box<memchr::memmem::Finder<'static>>),
    Matches(usize),
    Compare(loadgate_model::Comparison, f64),
    Type(JsonType),
}

/// The text of a found scalar (a string's content, a number's or literal's text); `None` for a container.
fn scalar(ty: JsonType, value: &[u8]) -> Option<&[u8]> {
    match ty {
        JsonType::Object | JsonType::Array => None,
        _ => Some(value),
    }
}

fn number(ty: JsonType, value: &[u8]) -> Option<f64> {
    if ty != JsonType::Number {
        return None;
    }
    std::str::from_utf8(value).ok()?.parse::<f64>().ok()
}

/// Whether `op` holds for what the selector found.
pub(crate) fn holds(
    op: &Op,
    l: Lookup<'_>,
    vars: &(impl super::expect::Vars + ?Sized),
    regexes: &[super::expect::Re],
    caches: &mut [regex_automata::meta::Cache],
) -> bool {
    let (ty, value, len) = match l {
        Lookup::Found { ty, value, len } => (ty, value, len),
        Lookup::NotFound => return matches!(op, Op::Exists(false)),
        Lookup::Error(_) | Lookup::Pending => return false,
    };
    let whole = len == value.len() as u64;
    match op {
        Op::Exists(e) => *e,
        Op::EqNumber(x) => number(ty, value) == Some(*x),
        Op::EqBool(b) => ty == JsonType::Boolean && value == if *b { &b"true"[..] } else { b"false" },
        Op::EqNull => ty == JsonType::Null,
        Op::EqText { expected, any_scalar } => {
            let text_ok = ty == JsonType::String || (*any_scalar && scalar(ty, value).is_some());
            text_ok && whole && super::expect::expected_eq(expected, vars, value) == Ok(true)
        }
        Op::Contains(f) => scalar(ty, value).is_some_and(|v| f.find(v).is_some()),
        Op::Matches(r) => scalar(ty, value).is_some_and(|v| regexes[*r].is_match(&mut caches[*r], v)),
        Op::Compare(cmp, x) => number(ty, value).is_some_and(|n| cmp.holds(n, *x)),
        Op::Type(t) => ty == *t,
    }
}

/// Writes a found value for a failure example: `0`, `"x" (string)`, `an object`, cut after 64 bytes.
fn show_value(out: &mut String, ty: JsonType, value: &[u8], len: u64, typed: bool) {
    use std::fmt::Write;
    match ty {
        JsonType::Object => out.push_str("an object"),
        JsonType::Array => out.push_str("an array"),
        JsonType::String => {
            let cut = &value[..value.len().min(64)];
            let _ = write!(out, "{:?}", String::from_utf8_lossy(cut));
            if (cut.len() as u64) < len {
                out.insert(out.len() - 1, '…');
            }
            if typed {
                out.push_str(" (string)");
            }
        }
        _ => {
            out.push_str(&String::from_utf8_lossy(&value[..value.len().min(64)]));
            if typed {
                let _ = write!(out, " ({})", ty.name());
            }
        }
    }
}

/// Writes why `op` failed, after the selector's text: `$.token not found`, `$.total was 0, expected >= 1`,
/// `$.a was "x" (string), expected 1`.
pub(crate) fn describe(
    out: &mut String,
    selector: &str,
    op: &Op,
    l: Lookup<'_>,
    vars: &(impl super::expect::Vars + ?Sized),
    regexes: &[super::expect::Re],
) {
    use std::fmt::Write;
    let (ty, value, len) = match l {
        Lookup::Found { ty, value, len } => (ty, value, len),
        Lookup::NotFound => {
            let _ = write!(out, "{selector} not found");
            return;
        }
        Lookup::Error(e) => {
            let _ = write!(out, "{selector} not read: {e}");
            return;
        }
        Lookup::Pending => {
            let _ = write!(out, "{selector} not read: the body did not end");
            return;
        }
    };
    let typed = match op {
        Op::EqNumber(_) | Op::Compare(..) => ty != JsonType::Number,
        Op::EqBool(_) => ty != JsonType::Boolean,
        Op::EqText { any_scalar: false, .. } => ty != JsonType::String,
        Op::Type(_) | Op::EqNull => true,
        _ => false,
    };
    let _ = write!(out, "{selector} was ");
    show_value(out, ty, value, len, typed);
    out.push_str(", expected ");
    let _ = match op {
        Op::Exists(_) => write!(out, "no value"),
        Op::EqNumber(x) => write!(out, "{x}"),
        Op::EqBool(b) => write!(out, "{b}"),
        Op::EqNull => write!(out, "null"),
        Op::EqText { expected, .. } => {
            let mut text = Vec::new();
            match super::expect::write_expected(expected, vars, &mut text) {
                Ok(()) => write!(out, "{:?}", String::from_utf8_lossy(&text)),
                Err(slot) => write!(out, "{expected} (variable {slot} was not captured)"),
            }
        }
        Op::Contains(f) => write!(out, "text containing {:?}", String::from_utf8_lossy(f.needle())),
        Op::Matches(r) => write!(out, "text matching `{}`", regexes[*r].source),
        Op::Compare(cmp, x) => write!(out, "{} {x}", cmp.as_str()),
        Op::Type(t) => write!(out, "type {}", t.name()),
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use loadgate_model::JsonSelector;
    use proptest::prelude::*;
    use serde_json::Value;

    fn program(sels: &[&str]) -> Program {
        let parsed: Vec<JsonSelector> = sels.iter().map(|s| JsonSelector::parse(s).unwrap()).collect();
        Program::new(parsed.iter().map(|s| (&s.steps[..], 1 << 16))).unwrap()
    }

    /// Answers as comparable text: `string:..`, `number:..`, `object`, `not found`, `error:..`.
    fn answers(p: &Program, chunks: &[&[u8]]) -> Vec<String> {
        let mut sc = Scanner::new();
        sc.reset(p);
        for c in chunks {
            sc.feed(p, c);
        }
        sc.finish(p);
        (0..p.len()).map(|i| show(sc.get(i))).collect()
    }

    fn show(l: Lookup<'_>) -> String {
        match l {
            Lookup::Found { ty, value, .. } => format!("{}:{}", ty.name(), String::from_utf8_lossy(value)),
            Lookup::NotFound => "not found".into(),
            Lookup::Error(e) => format!("error: {e}"),
            Lookup::Pending => "pending".into(),
        }
    }

    fn one(sel: &str, doc: &str) -> String {
        answers(&program(&[sel]), &[doc.as_bytes()]).remove(0)
    }

    #[test]
    fn first_match_in_document_order() {
        let doc =
            r#"{"a": {"b": [10, {"c": "x"}, true]}, "d": null, "e": [[1], [2, 3]], "k\"ey": "\u00e9\ud83d\ude00"}"#;
        assert_eq!(one("$.a.b[0]", doc), "number:10");
        assert_eq!(one("$.a.b[1].c", doc), "string:x");
        assert_eq!(one("$.a.b[2]", doc), "boolean:true");
        assert_eq!(one("$.a.b[3]", doc), "not found");
        assert_eq!(one("$.d", doc), "null:null");
        assert_eq!(one("$.a", doc), "object:");
        assert_eq!(one("$.e[1][1]", doc), "number:3");
        assert_eq!(one("$.e[*][1]", doc), "number:3");
        assert_eq!(one("$.*", doc), "object:");
        assert_eq!(one("$.*[*]", doc), "array:");
        assert_eq!(one("$.*.b[*].c", doc), "string:x");
        assert_eq!(one("$['k\"ey']", doc), "string:é😀");
        assert_eq!(one("$", doc), "object:");
        assert_eq!(one("$", " -1.5e+3 "), "number:-1.5e+3");
        assert_eq!(one("$", "12"), "number:12");
        assert_eq!(one("$.x", "12"), "not found");
    }

    #[test]
    fn malformed_bodies_say_where() {
        assert_eq!(one("$.b", r#"{"a": 1 "b": 2}"#), "error: the body is not JSON at byte 8: expected `,` or `}`");
        assert_eq!(one("$.b", r#"{"a": 1,"#), "error: the body is not JSON: it ended at byte 8, expected a key");
        assert_eq!(one("$.b", ""), "error: the body is not JSON: it ended at byte 0, expected a value");
        assert_eq!(one("$.b", "<html>"), "error: the body is not JSON at byte 0: expected a value");
        assert_eq!(one("$.b", r#"{"b": tru"#), "error: the body is not JSON: it ended at byte 9, expected `true`");
        assert_eq!(one("$.b", r#"{"b": 01}"#), "number:0"); // resolved at the byte that ends it
        assert_eq!(one("$.c", r#"{"b": 01}"#), "error: the body is not JSON at byte 7: expected `,` or `}`");
        assert_eq!(one("$.b", r#"{"b": "\x"}"#).split(':').next(), Some("error"));
        assert!(one("$.b", r#"{"b": "\ud800x"}"#).contains("low surrogate"));
        assert!(one("$.b", r#"{"b": "\udc00"}"#).contains("high surrogate"));
        assert_eq!(one("$.c", r#"{"b": [1}"#), "error: the body is not JSON at byte 8: expected `,` or `]`");
        // Found before the error: the answer stands, and the rest is never read.
        assert_eq!(one("$.a", r#"{"a": 1, garbage"#), "number:1");
        assert_eq!(one("$.a", r#"{"a": "x"} trailing"#), "string:x");
    }

    #[test]
    fn early_stop_leaves_the_rest_unread() {
        let p = program(&["$.a", "$.b"]);
        let mut sc = Scanner::new();
        sc.reset(&p);
        sc.feed(&p, br#"{"a": 1, "b": {"#);
        assert!(sc.done());
        sc.feed(&p, b"anything at all");
        sc.finish(&p);
        assert_eq!(show(sc.get(0)), "number:1");
        assert_eq!(show(sc.get(1)), "object:");
        // A number ends only at the byte after it.
        sc.reset(&p);
        sc.feed(&p, br#"{"b": 2, "a": 12"#);
        assert!(!sc.done());
        sc.feed(&p, b"3}");
        assert!(sc.done());
        assert_eq!(show(sc.get(0)), "number:123");
    }

    #[test]
    fn nesting_deeper_than_128_is_refused() {
        let ok = format!("{}{}", "[".repeat(128), "]".repeat(128));
        assert_eq!(one("$.x", &ok), "not found");
        let deep = format!("{}{}", "[".repeat(129), "]".repeat(129));
        assert_eq!(one("$.x", &deep), "error: the body's JSON is nested deeper than 128");
        // Resolved before the depth: the answer stands.
        let deep = format!("[1,{}{}]", "[".repeat(200), "]".repeat(200));
        assert_eq!(one("$[0]", &deep), "number:1");
        // A selector 16 levels deep.
        let doc = format!("{}7{}", "[".repeat(16), "]".repeat(16));
        assert_eq!(one(&format!("${}", "[0]".repeat(16)), &doc), "number:7");
        assert_eq!(one(&format!("${}", "[0]".repeat(15)), &doc), "array:");
    }

    #[test]
    fn values_are_bounded_and_keep_their_length() {
        let sel = JsonSelector::parse("$.a").unwrap();
        let p = Program::new([(&sel.steps[..], 4)]).unwrap();
        let mut sc = Scanner::new();
        sc.reset(&p);
        sc.feed(&p, br#"{"a": "abcdefgh"}"#);
        sc.finish(&p);
        assert_eq!(sc.get(0), Lookup::Found { ty: JsonType::String, value: b"abcd", len: 8 });
    }

    #[test]
    fn more_than_16_selectors_are_refused() {
        let sel = JsonSelector::parse("$.a").unwrap();
        assert!(Program::new((0..17).map(|_| (&sel.steps[..], 1))).is_err());
        assert!(Program::new((0..16).map(|_| (&sel.steps[..], 1))).is_ok());
    }

    #[test]
    fn steady_state_reuses_its_buffers() {
        let p = program(&["$.token", "$.name"]);
        let mut sc = Scanner::new();
        let body = br#"{"name": "Ada Lovelace", "token": "eyJhbGciOiJIUzI1NiJ9"}"#;
        sc.reset(&p);
        sc.feed(&p, body);
        sc.finish(&p);
        let ptrs: Vec<*const u8> = sc.vals.iter().map(|v| v.as_ptr()).collect();
        for _ in 0..10 {
            sc.reset(&p);
            sc.feed(&p, body);
            sc.finish(&p);
        }
        assert_eq!(ptrs, sc.vals.iter().map(|v| v.as_ptr()).collect::<Vec<_>>());
        assert_eq!(show(sc.get(0)), "string:eyJhbGciOiJIUzI1NiJ9");
    }

    // ---- the property: equal to serde_json's first match, for every split ----

    #[derive(Debug, Clone)]
    enum Doc {
        Num(&'static str),
        Str(String),
        Lit(&'static str),
        Arr(Vec<Doc>),
        Obj(Vec<(String, Doc)>),
    }

    const NUMS: [&str; 10] = ["0", "-1", "1.0", "1e0", "12.5e-3", "1E+2", "-0.0", "4711", "99.99", "123456789012"];

    fn text() -> impl Strategy<Value = String> {
        prop::collection::vec(
            prop::sample::select(vec!['a', 'b', 'k', '"', '\\', '/', '\n', '\t', '\u{1}', 'é', '😀', ' ', '\u{2028}']),
            0..6,
        )
        .prop_map(|v| v.into_iter().collect())
    }

    fn doc() -> impl Strategy<Value = Doc> {
        let leaf = prop_oneof![
            prop::sample::select(NUMS.to_vec()).prop_map(Doc::Num),
            text().prop_map(Doc::Str),
            prop::sample::select(vec!["true", "false", "null"]).prop_map(Doc::Lit),
        ];
        leaf.prop_recursive(6, 48, 5, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..5).prop_map(Doc::Arr),
                prop::collection::vec((text(), inner), 0..5).prop_map(|kv| {
                    let mut seen = std::collections::HashSet::new();
                    Doc::Obj(kv.into_iter().filter(|(k, _)| seen.insert(k.clone())).collect())
                }),
            ]
        })
    }

    /// Writes a string with escapes chosen by `style` bits: raw where allowed, short escapes or `\u` with four hex digits.
    fn write_str(out: &mut String, s: &str, style: &mut u64) {
        out.push('"');
        for c in s.chars() {
            *style = style.rotate_left(7) ^ 0x9e37_79b9_7f4a_7c15;
            let escape_u = *style & 3 == 0;
            match c {
                '"' if !escape_u => out.push_str("\\\""),
                '\\' if !escape_u => out.push_str("\\\\"),
                '\n' if !escape_u => out.push_str("\\n"),
                '\t' if !escape_u => out.push_str("\\t"),
                '/' if !escape_u => out.push_str(if *style & 4 == 0 { "\\/" } else { "/" }),
                c if escape_u || (c as u32) < 0x20 => {
                    let mut units = [0u16; 2];
                    for u in c.encode_utf16(&mut units) {
                        out.push_str(&format!("\\u{:04X}", u));
                    }
                }
                c => out.push(c),
            }
        }
        out.push('"');
    }

    fn write(d: &Doc, out: &mut String, style: &mut u64) {
        *style = style.rotate_left(13) ^ 0x1234_5678_9abc_def1;
        let ws = ["", " ", "\n  ", "\t"][(*style % 4) as usize];
        match d {
            Doc::Num(n) => out.push_str(n),
            Doc::Lit(l) => out.push_str(l),
            Doc::Str(s) => write_str(out, s, style),
            Doc::Arr(items) => {
                out.push('[');
                for (i, it) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(ws);
                    write(it, out, style);
                }
                out.push_str(ws);
                out.push(']');
            }
            Doc::Obj(kv) => {
                out.push('{');
                for (i, (k, v)) in kv.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(ws);
                    write_str(out, k, style);
                    out.push_str(ws);
                    out.push(':');
                    write(v, out, style);
                }
                out.push_str(ws);
                out.push('}');
            }
        }
    }

    /// Every path of the document, as steps.
    fn paths(d: &Doc, prefix: &mut Vec<JsonStep>, out: &mut Vec<Vec<JsonStep>>) {
        out.push(prefix.clone());
        if prefix.len() == 16 {
            return;
        }
        match d {
            Doc::Arr(items) => {
                for (i, it) in items.iter().enumerate() {
                    prefix.push(JsonStep::Index(i as u32));
                    paths(it, prefix, out);
                    prefix.pop();
                }
            }
            Doc::Obj(kv) => {
                for (k, v) in kv {
                    prefix.push(JsonStep::Key(k.clone()));
                    paths(v, prefix, out);
                    prefix.pop();
                }
            }
            _ => {}
        }
    }

    /// A near miss of a path: a step made a wildcard, changed or added.
    fn near(path: &[JsonStep], how: u8, at: usize) -> Vec<JsonStep> {
        let mut p = path.to_vec();
        if p.is_empty() {
            return vec![JsonStep::Key("a".into())];
        }
        let at = at % p.len();
        p[at] = match (&p[at], how % 5) {
            (JsonStep::Key(_), 0) => JsonStep::AnyKey,
            (JsonStep::Key(k), 1) => JsonStep::Key(format!("{k}a")),
            (JsonStep::Key(k), 2) => JsonStep::Key(k.chars().skip(1).collect()),
            (JsonStep::Key(_), _) => JsonStep::Index(0),
            (JsonStep::Index(_), 0 | 1) => JsonStep::AnyIndex,
            (JsonStep::Index(i), 2) => JsonStep::Index(i + 1),
            (JsonStep::Index(_), _) => JsonStep::AnyKey,
            (s, _) => s.clone(),
        };
        if how % 7 == 6 && p.len() < 16 {
            p.push(JsonStep::AnyIndex);
        }
        p
    }

    fn reference<'a>(v: &'a Value, steps: &[JsonStep]) -> Option<&'a Value> {
        let Some((first, rest)) = steps.split_first() else { return Some(v) };
        match (first, v) {
            (JsonStep::Key(k), Value::Object(m)) => m.get(k).and_then(|c| reference(c, rest)),
            (JsonStep::AnyKey, Value::Object(m)) => m.values().find_map(|c| reference(c, rest)),
            (JsonStep::Index(i), Value::Array(a)) => a.get(*i as usize).and_then(|c| reference(c, rest)),
            (JsonStep::AnyIndex, Value::Array(a)) => a.iter().find_map(|c| reference(c, rest)),
            _ => None,
        }
    }

    fn agrees(ours: Lookup<'_>, theirs: Option<&Value>) -> bool {
        match (ours, theirs) {
            (Lookup::NotFound, None) => true,
            (Lookup::Found { ty, value, len }, Some(v)) => {
                len == value.len() as u64
                    && match (ty, v) {
                        (JsonType::String, Value::String(s)) => value == s.as_bytes(),
                        (JsonType::Number, Value::Number(n)) => {
                            std::str::from_utf8(value).unwrap().parse::<f64>().ok() == n.as_f64()
                        }
                        (JsonType::Boolean, Value::Bool(b)) => value == if *b { &b"true"[..] } else { b"false" },
                        (JsonType::Null, Value::Null) => value == b"null",
                        (JsonType::Object, Value::Object(_)) | (JsonType::Array, Value::Array(_)) => value.is_empty(),
                        _ => false,
                    }
            }
            _ => false,
        }
    }

    fn all_splits_equal(p: &Program, bytes: &[u8], chunks: &[usize]) -> Result<Vec<String>, TestCaseError> {
        let whole = answers(p, &[bytes]);
        for k in 0..=bytes.len() {
            prop_assert_eq!(&answers(p, &[&bytes[..k], &bytes[k..]]), &whole, "split at {}", k);
        }
        let singles: Vec<&[u8]> = bytes.chunks(1).collect();
        prop_assert_eq!(&answers(p, &singles), &whole, "byte by byte");
        let mut parts = Vec::new();
        let mut rest = bytes;
        for c in chunks.iter().cycle().take(bytes.len() + 1) {
            let (a, b) = rest.split_at((*c).min(rest.len()));
            parts.push(a);
            rest = b;
            if rest.is_empty() {
                break;
            }
        }
        parts.push(rest);
        prop_assert_eq!(&answers(p, &parts), &whole, "random chunks");
        Ok(whole)
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

        #[test]
        fn equals_serde_json_first_match(
            d in doc(), style in any::<u64>(), picks in prop::collection::vec((any::<prop::sample::Index>(), 0u8..10, any::<usize>()), 1..6),
            chunks in prop::collection::vec(1usize..40, 1..8),
        ) {
            let mut text = String::new();
            let mut st = style;
            write(&d, &mut text, &mut st);
            let value: Value = serde_json::from_str(&text).expect("the generator writes JSON");
            let mut all = Vec::new();
            paths(&d, &mut Vec::new(), &mut all);
            let sels: Vec<Vec<JsonStep>> = picks.iter().map(|(i, how, at)| {
                let p = i.get(&all);
                if *how < 5 { p.clone() } else { near(p, *how, *at) }
            }).collect();
            let p = Program::new(sels.iter().map(|s| (&s[..], 1 << 16))).unwrap();
            all_splits_equal(&p, text.as_bytes(), &chunks)?;
            let mut sc = Scanner::new();
            sc.reset(&p);
            sc.feed(&p, text.as_bytes());
            sc.finish(&p);
            for (i, s) in sels.iter().enumerate() {
                let theirs = reference(&value, s);
                prop_assert!(agrees(sc.get(i), theirs), "{:?} in {}: ours {:?}, serde_json {:?}", s, text, sc.get(i), theirs);
            }
            // Early stop: once every selector resolved, the bytes after are never read.
            let whole = answers(&p, &[text.as_bytes()]);
            let mut sc = Scanner::new();
            sc.reset(&p);
            let stop = (0..text.len()).find(|&k| {
                sc.feed(&p, &text.as_bytes()[k..k + 1]);
                sc.done()
            });
            if let Some(k) = stop {
                let mut cut = text.as_bytes()[..=k].to_vec();
                cut.extend_from_slice(b"\x00 not json ]]");
                prop_assert_eq!(answers(&p, &[&cut]), whole);
            }
        }

        #[test]
        fn malformed_input_answers_the_same_for_every_split(
            d in doc(), style in any::<u64>(), picks in prop::collection::vec((any::<prop::sample::Index>(), 0u8..10, any::<usize>()), 1..4),
            cut in any::<prop::sample::Index>(), with in prop::sample::select(vec![b'}', b']', b',', b':', b'"', b'\\', b'x', b'1', b'[', b'{']),
            truncate in any::<bool>(), chunks in prop::collection::vec(1usize..40, 1..8),
        ) {
            let mut text = String::new();
            let mut st = style;
            write(&d, &mut text, &mut st);
            let mut bytes = text.into_bytes();
            let at = cut.index(bytes.len());
            if truncate { bytes.truncate(at) } else { bytes[at] = with }
            let mut all = Vec::new();
            paths(&d, &mut Vec::new(), &mut all);
            let sels: Vec<Vec<JsonStep>> = picks.iter().map(|(i, how, at)| {
                let p = i.get(&all);
                if *how < 5 { p.clone() } else { near(p, *how, *at) }
            }).collect();
            let p = Program::new(sels.iter().map(|s| (&s[..], 1 << 16))).unwrap();
            all_splits_equal(&p, &bytes, &chunks)?;
            if let Ok(value) = serde_json::from_slice::<Value>(&bytes) {
                let mut sc = Scanner::new();
                sc.reset(&p);
                sc.feed(&p, &bytes);
                sc.finish(&p);
                for (i, s) in sels.iter().enumerate() {
                    let theirs = reference(&value, s);
                    prop_assert!(agrees(sc.get(i), theirs), "{:?}: ours {:?}, serde_json {:?}", s, sc.get(i), theirs);
                }
            }
        }
    }

    /// The cost of one JSON check on the benchmark's 330-byte body (the design's `check-json` case: the last
    /// key, so the whole document is tokenized). `cargo test --release -p loadgate-engine --lib json_check_cost
    /// -- --ignored --nocapture`.
    #[test]
    #[ignore = "a measurement, run by hand in release"]
    fn json_check_cost() {
        let body = br#"{"id":4711,"name":"Ada Lovelace","email":"ada@example.com","active":true,"roles":["admin","editor"],"address":{"street":"12 St James's Square","city":"London","zip":"SW1Y 4JH"},"orders":[{"id":1,"total":12.5},{"id":2,"total":99.99}],"token":"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiI0NzExIn0.c2lnbmF0dXJl"}"#;
        let p = program(&["$.token"]);
        let mut sc = Scanner::new();
        let n = 1_000_000;
        let t = std::time::Instant::now();
        for _ in 0..n {
            sc.reset(&p);
            sc.feed(&p, std::hint::black_box(body));
            sc.finish(&p);
            assert!(matches!(sc.get(0), Lookup::Found { .. }));
        }
        let ns = t.elapsed().as_nanos() as f64 / n as f64;
        println!("{} bytes: {ns:.0} ns per body, {:.2} ns per byte", body.len(), ns / body.len() as f64);
        // For scale on the same machine: serde_json parsing the body into a tree.
        let t = std::time::Instant::now();
        for _ in 0..n {
            let v: serde_json::Value = serde_json::from_slice(std::hint::black_box(body)).unwrap();
            std::hint::black_box(v);
        }
        let ns = t.elapsed().as_nanos() as f64 / n as f64;
        println!("serde_json::Value: {ns:.0} ns per body");
    }
}
