//! Templates run on a budget, so that no template of a spec can make validation slow or large.
//!
//! minijinja's fuel bounds the instructions of one rendering, but a single instruction can build a huge value
//! (`'x' * 100000000`, or doubling a string in a loop) or compare two large ones. So each template is compiled
//! by minijinja, then its instructions are rewritten before they run (minijinja's `unstable_machinery`, pinned by
//! `Cargo.lock`; the tests of `template.rs` check that rewritten templates render as minijinja renders them, so an
//! upgrade that changes the instruction set fails them):
//!
//! - every instruction whose cost grows with its operands (`+`, `*`, `~`, comparisons, `in`, `[i]`, `[a:b]`)
//!   becomes a call to a function here that measures the operands, charges their size to the [`Meter`] and
//!   refuses a value over [`MAX_VALUE_BYTES`], then performs the operation with minijinja's own semantics;
//! - literal text is emitted through the formatter, like any value, so everything written is counted;
//! - each loop iteration and each macro call is counted against the spec-wide instruction budget;
//! - filters and tests run behind the same measuring, and the few filters whose output is not bounded by their
//!   input (`indent`, `format`, `pprint`, `batch`, `slice`) are not available.
//!
//! minijinja's compiler also folds constant expressions as it compiles (`'x' * 100000000`, `[1] * 10**12 == [1]
//! * 10**12`), before any of that can run, and walks expressions recursively. So before a template is compiled
//! ([`prepare`]), each string and number literal is wrapped in an identity filter, which makes no expression
//! constant, and a tag may hold at most [`MAX_TAG_OPERATORS`] operators.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, Mutex};

use minijinja::machinery::{Instruction, Instructions};
use minijinja::value::{Rest, Value, ValueKind};
use minijinja::{Environment, Error, ErrorKind, Expression, State};

use crate::limits::{
    human_bytes, MAX_VALUE_BYTES, SPEC_TEMPLATE_FUEL, SPEC_TEMPLATE_WORK_BYTES, TEMPLATE_FUEL, TEMPLATE_WORK_BYTES,
};

/// Why a template was stopped (a limit, a data file refused): what to tell the user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Exceeded {
    pub message: String,
    pub help: String,
}

/// What the templates of one spec have cost: per rendering and in total.
#[derive(Debug, Default)]
pub(crate) struct Meter {
    render_work: AtomicU64,
    render_output: AtomicU64,
    spec_work: AtomicU64,
    spec_steps: AtomicU64,
    exceeded: Mutex<Option<Exceeded>>,
    /// Scenario instances and the bytes of their copies (matrix cells, the data their requests carry).
    cells: AtomicU64,
    expanded: AtomicU64,
}

impl Meter {
    /// Starts a rendering of a template of `text_len` bytes with `instructions` instructions.
    pub fn begin(&self, text_len: usize, instructions: usize) -> Result<(), Error> {
        self.reset();
        self.steps(instructions as u64)?;
        self.charge(text_len as u64)
    }

    /// Forgets the last rendering: what it cost and why it stopped.
    pub fn reset(&self) {
        self.take_exceeded();
        self.render_work.store(0, Ordering::Relaxed);
        self.render_output.store(0, Ordering::Relaxed);
    }

    /// Bytes copied, compared or built.
    pub fn charge(&self, bytes: u64) -> Result<(), Error> {
        let render = self.render_work.fetch_add(bytes, Ordering::Relaxed).saturating_add(bytes);
        let spec = self.spec_work.fetch_add(bytes, Ordering::Relaxed).saturating_add(bytes);
        if render > TEMPLATE_WORK_BYTES {
            return Err(self.fail(
                format!(
                    "the template copies, compares or builds more than {} of text",
                    human_bytes(TEMPLATE_WORK_BYTES)
                ),
                "a template computes one value for the spec; build large data outside the spec",
            ));
        }
        if spec > SPEC_TEMPLATE_WORK_BYTES {
            return Err(self.fail(
                format!(
                    "the spec's templates together copy, compare or build more than {} of text",
                    human_bytes(SPEC_TEMPLATE_WORK_BYTES)
                ),
                "use fewer matrix cells, or templates that build less",
            ));
        }
        Ok(())
    }

    /// A value of `bytes` about to be built.
    pub fn produce(&self, bytes: u64) -> Result<(), Error> {
        if bytes > MAX_VALUE_BYTES as u64 {
            return Err(self.too_large());
        }
        self.charge(bytes)
    }

    /// Bytes written to the template's output.
    fn output(&self, bytes: u64) -> Result<(), Error> {
        let total = self.render_output.fetch_add(bytes, Ordering::Relaxed).saturating_add(bytes);
        if total > MAX_VALUE_BYTES as u64 {
            return Err(self.too_large());
        }
        self.charge(bytes)
    }

    /// Instructions executed, against the spec-wide budget.
    pub fn steps(&self, n: u64) -> Result<(), Error> {
        let total = self.spec_steps.fetch_add(n, Ordering::Relaxed).saturating_add(n);
        if total > SPEC_TEMPLATE_FUEL {
            return Err(self.fail(
                format!("the spec's templates together run more than {SPEC_TEMPLATE_FUEL} instructions"),
                "use fewer matrix cells, or templates that loop less",
            ));
        }
        Ok(())
    }

    fn too_large(&self) -> Error {
        self.fail(
            format!("the template builds a value longer than {}", human_bytes(MAX_VALUE_BYTES as u64)),
            "a value in a spec is at most 1 MiB; a large body belongs in a file on the server, or use \
             `random_string(len)` for filler",
        )
    }

    /// Records why the template was stopped and returns the error that stops it.
    pub fn fail(&self, message: String, help: &str) -> Error {
        let err = Error::new(ErrorKind::InvalidOperation, message.clone());
        let mut slot = self.exceeded.lock().unwrap_or_else(|p| p.into_inner());
        slot.get_or_insert(Exceeded { message, help: help.to_owned() });
        err
    }

    /// Counts `cells` more scenario instances and `bytes` more of expanded copies; false past
    /// [`MAX_CELLS`](crate::limits::MAX_CELLS) or [`MAX_EXPANDED_BYTES`](crate::limits::MAX_EXPANDED_BYTES).
    pub fn expand(&self, cells: usize, bytes: u64) -> bool {
        let cells = self.cells.fetch_add(cells as u64, Ordering::Relaxed).saturating_add(cells as u64);
        let bytes = self.expanded.fetch_add(bytes, Ordering::Relaxed).saturating_add(bytes);
        cells <= crate::limits::MAX_CELLS as u64 && bytes <= crate::limits::MAX_EXPANDED_BYTES
    }

    /// The limit the last rendering ran into, if any.
    pub fn take_exceeded(&self) -> Option<Exceeded> {
        self.exceeded.lock().unwrap_or_else(|p| p.into_inner()).take()
    }
}

/// The message for a rendering that ran out of minijinja's fuel.
pub(crate) fn out_of_fuel() -> Exceeded {
    Exceeded {
        message: format!("the template runs more than {TEMPLATE_FUEL} instructions"),
        help: "a template computes one value for the spec; loops over large ranges do not belong in a spec".to_owned(),
    }
}

/// An upper bound of the bytes a value holds or prints as, walking at most `limit` bytes' worth of it: a value
/// larger than `limit` weighs `limit + 1`.
pub(crate) fn weight(value: &Value, limit: u64) -> u64 {
    let mut total = 0u64;
    let mut pending = vec![value.clone()];
    while let Some(v) = pending.pop() {
        total = total.saturating_add(match v.kind() {
            ValueKind::String => v.as_str().map_or(0, str::len) as u64 + 2,
            ValueKind::Bytes => v.as_bytes().map_or(0, <[u8]>::len) as u64 + 2,
            ValueKind::Seq | ValueKind::Iterable | ValueKind::Map => {
                let is_map = v.kind() == ValueKind::Map;
                if let Ok(items) = v.try_iter() {
                    for item in items {
                        total = total.saturating_add(24);
                        if total > limit {
                            return limit.saturating_add(1);
                        }
                        if is_map {
                            if let Ok(value) = v.get_item(&item) {
                                pending.push(value);
                            }
                        }
                        pending.push(item);
                    }
                }
                2
            }
            _ => 24,
        });
        if total > limit {
            return limit.saturating_add(1);
        }
    }
    total
}

// Names of the functions the rewritten instructions call. The space keeps them out of reach of template syntax.
const ADD: &str = "loadgate add";
const MUL: &str = "loadgate mul";
const CONCAT: &str = "loadgate concat";
const EQ: &str = "loadgate eq";
const NE: &str = "loadgate ne";
const LT: &str = "loadgate lt";
const LTE: &str = "loadgate lte";
const GT: &str = "loadgate gt";
const GTE: &str = "loadgate gte";
const IN: &str = "loadgate in";
const GET_ITEM: &str = "loadgate get_item";
const SLICE: &str = "loadgate slice";
const TICK: &str = "loadgate tick";

/// minijinja's own operators, evaluated in a plain environment of their own: the rewritten instructions charge
/// the meter, then defer to these for the semantics.
static OPS: LazyLock<Environment<'static>> = LazyLock::new(|| {
    let mut env = Environment::empty();
    env.set_undefined_behavior(minijinja::UndefinedBehavior::Strict);
    env
});

macro_rules! ops {
    ($($name:ident = $expr:literal;)*) => {
        $(static $name: LazyLock<Option<Expression<'static, 'static>>> = LazyLock::new(|| OPS.compile_expression($expr).ok());)*
    };
}

ops! {
    OP_ADD = "a + b";
    OP_MUL = "a * b";
    OP_CONCAT = "a ~ b";
    OP_EQ = "a == b";
    OP_NE = "a != b";
    OP_LT = "a < b";
    OP_LTE = "a <= b";
    OP_GT = "a > b";
    OP_GTE = "a >= b";
    OP_IN = "a in b";
    OP_GET_ITEM = "a[b]";
    OP_SLICE = "a[b:c:d]";
}

fn eval(expr: &LazyLock<Option<Expression<'static, 'static>>>, args: &[Value]) -> Result<Value, Error> {
    let Some(expr) = expr.as_ref() else {
        return Err(Error::new(ErrorKind::InvalidOperation, "internal: an operator failed to compile"));
    };
    let names = ["a", "b", "c", "d"];
    let ctx: std::collections::BTreeMap<&str, Value> = names.iter().copied().zip(args.iter().cloned()).collect();
    expr.eval(ctx)
}

/// Whether a value is text or a collection (the operands whose size matters).
fn is_bulk(v: &Value) -> bool {
    matches!(v.kind(), ValueKind::String | ValueKind::Bytes | ValueKind::Seq | ValueKind::Iterable | ValueKind::Map)
}

/// Registers the measured operators, filters and tests, and the formatter that counts output, on `env`.
pub(crate) fn install(env: &mut Environment<'static>, meter: &Arc<Meter>) {
    env.set_fuel(Some(TEMPLATE_FUEL));
    let limit = || TEMPLATE_WORK_BYTES;

    let m = meter.clone();
    env.add_function(ADD, move |a: Value, b: Value| -> Result<Value, Error> {
        if is_bulk(&a) && is_bulk(&b) {
            m.produce(weight(&a, limit()).saturating_add(weight(&b, limit())))?;
        }
        eval(&OP_ADD, &[a, b])
    });
    let m = meter.clone();
    env.add_function(MUL, move |a: Value, b: Value| -> Result<Value, Error> {
        let repeated = match (is_bulk(&a), is_bulk(&b)) {
            (true, false) => Some((&a, &b)),
            (false, true) => Some((&b, &a)),
            _ => None,
        };
        if let Some((bulk, times)) = repeated {
            let times = times.as_i64().unwrap_or(0).max(0) as u64;
            m.produce(weight(bulk, limit()).saturating_mul(times))?;
        }
        eval(&OP_MUL, &[a, b])
    });
    let m = meter.clone();
    env.add_function(CONCAT, move |a: Value, b: Value| -> Result<Value, Error> {
        m.produce(weight(&a, limit()).saturating_add(weight(&b, limit())))?;
        let joined = eval(&OP_CONCAT, &[a, b])?;
        m.produce(joined.as_str().map_or(0, str::len) as u64)?;
        Ok(joined)
    });
    for (name, expr) in [
        (EQ, &OP_EQ),
        (NE, &OP_NE),
        (LT, &OP_LT),
        (LTE, &OP_LTE),
        (GT, &OP_GT),
        (GTE, &OP_GTE),
        (IN, &OP_IN),
        (SLICE, &OP_SLICE),
    ] {
        let m = meter.clone();
        env.add_function(name, move |args: Rest<Value>| -> Result<Value, Error> {
            let cost = args.iter().fold(0u64, |sum, v| sum.saturating_add(weight(v, limit())));
            m.charge(cost)?;
            eval(expr, &args)
        });
    }
    let m = meter.clone();
    env.add_function(GET_ITEM, move |a: Value, b: Value| -> Result<Value, Error> {
        // Indexing text walks its characters; indexing a list or a mapping does not walk it.
        if let Some(s) = a.as_str() {
            m.charge(s.len() as u64)?;
        }
        eval(&OP_GET_ITEM, &[a, b])
    });
    let m = meter.clone();
    env.add_function(TICK, move |n: u64| -> Result<Value, Error> {
        m.steps(n)?;
        Ok(Value::from(()))
    });

    // Everything written goes through here: values and literal text alike.
    let m = meter.clone();
    env.set_formatter(move |out, _state, value| {
        if let Some(s) = value.as_str() {
            m.output(s.len() as u64)?;
            return out.write_str(s).map_err(Error::from);
        }
        let mut text = Capped::new(MAX_VALUE_BYTES);
        if std::fmt::Write::write_fmt(&mut text, format_args!("{value}")).is_err() {
            return Err(m.too_large());
        }
        m.output(text.0.len() as u64)?;
        out.write_str(&text.0).map_err(Error::from)
    });

    env.add_filter(LITERAL, |value: Value| value);
    install_filters(env, meter);
    install_tests(env, meter);
    // `debug()` prints the whole context, the process environment included.
    env.remove_global("debug");
}

/// A string that refuses to grow past a limit.
struct Capped(String, usize);

impl Capped {
    fn new(limit: usize) -> Self {
        Capped(String::new(), limit)
    }
}

impl std::fmt::Write for Capped {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        if self.0.len() + s.len() > self.1 {
            return Err(std::fmt::Error);
        }
        self.0.push_str(s);
        Ok(())
    }
}

/// The filters whose output can be far larger than their input, or that print the whole context.
const UNBOUNDED_FILTERS: &[&str] = &["indent", "format", "pprint", "batch", "slice"];

fn install_filters(env: &mut Environment<'static>, meter: &Arc<Meter>) {
    use minijinja::filters as f;
    let filters: Vec<(&str, Value)> = vec![
        ("safe", Value::from_function(f::safe)),
        ("escape", Value::from_function(f::escape)),
        ("e", Value::from_function(f::escape)),
        ("lower", Value::from_function(f::lower)),
        ("upper", Value::from_function(f::upper)),
        ("title", Value::from_function(f::title)),
        ("capitalize", Value::from_function(f::capitalize)),
        ("replace", Value::from_function(f::replace)),
        ("length", Value::from_function(f::length)),
        ("count", Value::from_function(f::length)),
        ("dictsort", Value::from_function(f::dictsort)),
        ("items", Value::from_function(f::items)),
        ("reverse", Value::from_function(f::reverse)),
        ("trim", Value::from_function(f::trim)),
        ("join", Value::from_function(f::join)),
        ("split", Value::from_function(f::split)),
        ("lines", Value::from_function(f::lines)),
        ("default", Value::from_function(f::default)),
        ("d", Value::from_function(f::default)),
        ("round", Value::from_function(f::round)),
        ("abs", Value::from_function(f::abs)),
        ("int", Value::from_function(f::int)),
        ("float", Value::from_function(f::float)),
        ("attr", Value::from_function(f::attr)),
        ("first", Value::from_function(f::first)),
        ("last", Value::from_function(f::last)),
        ("min", Value::from_function(f::min)),
        ("max", Value::from_function(f::max)),
        ("sort", Value::from_function(f::sort)),
        ("list", Value::from_function(f::list)),
        ("string", Value::from_function(f::string)),
        ("bool", Value::from_function(f::bool)),
        ("sum", Value::from_function(f::sum)),
        ("select", Value::from_function(f::select)),
        ("reject", Value::from_function(f::reject)),
        ("selectattr", Value::from_function(f::selectattr)),
        ("rejectattr", Value::from_function(f::rejectattr)),
        ("map", Value::from_function(f::map)),
        ("groupby", Value::from_function(f::groupby)),
        ("unique", Value::from_function(f::unique)),
        ("chain", Value::from_function(f::chain)),
        ("zip", Value::from_function(f::zip)),
    ];
    for (name, func) in filters {
        let m = meter.clone();
        let is_replace = name == "replace";
        let is_join = name == "join";
        env.add_filter(name, move |state: &State<'_, '_>, args: Rest<Value>| -> Result<Value, Error> {
            let input = args.iter().fold(0u64, |sum, v| sum.saturating_add(weight(v, TEMPLATE_WORK_BYTES)));
            m.charge(input)?;
            if is_replace {
                m.produce(replaced_len(&args))?;
            }
            if is_join {
                m.produce(joined_len(&args))?;
            }
            let out = func.call(state, &args)?;
            m.produce(weight(&out, MAX_VALUE_BYTES as u64))?;
            Ok(out)
        });
    }
    for name in UNBOUNDED_FILTERS {
        let m = meter.clone();
        env.add_filter(*name, move |_: Rest<Value>| -> Result<Value, Error> {
            Err(m.fail(
                format!("the filter `{name}` is not available in spec templates"),
                "its output is not bounded by its input; loadgate's templates compute one short value",
            ))
        });
    }
}

/// An upper bound of the length of `items | join(separator)` before it is built: the separator repeats once per
/// item.
fn joined_len(args: &[Value]) -> u64 {
    let limit = MAX_VALUE_BYTES as u64;
    let separator = args.get(1).map_or(0, |s| weight(s, limit));
    let Some(Ok(items)) = args.first().map(Value::try_iter) else { return 0 };
    let mut total = 0u64;
    for item in items {
        total = total.saturating_add(weight(&item, limit)).saturating_add(separator);
        if total > limit {
            break;
        }
    }
    total
}

/// The length of `s | replace(from, to)` before it is built.
fn replaced_len(args: &[Value]) -> u64 {
    let (Some(s), Some(from), Some(to)) = (
        args.first().and_then(Value::as_str),
        args.get(1).and_then(Value::as_str),
        args.get(2).and_then(Value::as_str),
    ) else {
        return 0;
    };
    let times = if from.is_empty() { s.chars().count() as u64 + 1 } else { s.matches(from).count() as u64 };
    (s.len() as u64).saturating_add(times.saturating_mul(to.len() as u64))
}

fn install_tests(env: &mut Environment<'static>, meter: &Arc<Meter>) {
    use minijinja::tests as t;
    // The tests whose cost grows with their operands; the others look at a value's type.
    let tests: Vec<(&str, Value)> = vec![
        ("startingwith", Value::from_function(t::is_startingwith)),
        ("endingwith", Value::from_function(t::is_endingwith)),
        ("lower", Value::from_function(t::is_lower)),
        ("upper", Value::from_function(t::is_upper)),
        ("eq", Value::from_function(t::is_eq)),
        ("equalto", Value::from_function(t::is_eq)),
        ("==", Value::from_function(t::is_eq)),
        ("ne", Value::from_function(t::is_ne)),
        ("!=", Value::from_function(t::is_ne)),
        ("lt", Value::from_function(t::is_lt)),
        ("lessthan", Value::from_function(t::is_lt)),
        ("<", Value::from_function(t::is_lt)),
        ("le", Value::from_function(t::is_le)),
        ("<=", Value::from_function(t::is_le)),
        ("gt", Value::from_function(t::is_gt)),
        ("greaterthan", Value::from_function(t::is_gt)),
        (">", Value::from_function(t::is_gt)),
        ("ge", Value::from_function(t::is_ge)),
        (">=", Value::from_function(t::is_ge)),
        ("in", Value::from_function(t::is_in)),
    ];
    for (name, func) in tests {
        let m = meter.clone();
        env.add_test(name, move |state: &State<'_, '_>, args: Rest<Value>| -> Result<bool, Error> {
            m.charge(args.iter().fold(0u64, |sum, v| sum.saturating_add(weight(v, TEMPLATE_WORK_BYTES))))?;
            Ok(func.call(state, &args)?.is_true())
        });
    }
}

/// The most operators (`+`, `~`, `|`, `.`, `[`, `(`, `and`, ...) one tag (`{{ ... }}`, `{% ... %}`) may hold. Each
/// nests minijinja's syntax tree a level deeper, and its compiler walks the tree recursively.
pub(crate) const MAX_TAG_OPERATORS: usize = 200;

/// The identity filter wrapped around literals; an identifier, so the rewritten template stays valid syntax.
const LITERAL: &str = "loadgate_literal";

/// The template as it is compiled: literals wrapped so that nothing is folded at compile time (see the module's
/// documentation). `Ok(None)` when the text is not a valid template (the compiler will say why); `Err` when a tag
/// holds too many operators.
pub(crate) fn prepare(text: &str) -> Result<Option<String>, String> {
    use minijinja::machinery::{tokenize, Token, WhitespaceConfig};
    let ws = WhitespaceConfig { keep_trailing_newline: true, ..WhitespaceConfig::default() };
    // Byte ranges of literals: a run of adjacent strings is one literal (`'a' 'b'` is `'ab'`).
    let mut literals: Vec<(usize, usize)> = Vec::new();
    let mut previous_was_string = false;
    let mut previous_was_dot = false;
    let mut operators = 0usize;
    for item in tokenize(text, false, Default::default(), ws) {
        let Ok((token, span)) = item else { return Ok(None) };
        let (start, end) = (span.start_offset as usize, span.end_offset as usize);
        let is_string = matches!(token, Token::Str(_) | Token::String(_));
        match token {
            Token::Str(_) | Token::String(_) if previous_was_string => {
                if let Some(last) = literals.last_mut() {
                    last.1 = end;
                }
            }
            Token::Str(_) | Token::String(_) => literals.push((start, end)),
            // `items.0` reads an attribute, not a number.
            Token::Int(_) | Token::Int128(_) | Token::Float(_) if !previous_was_dot => literals.push((start, end)),
            Token::VariableStart | Token::BlockStart | Token::VariableEnd | Token::BlockEnd => operators = 0,
            Token::Plus
            | Token::Minus
            | Token::Mul
            | Token::Div
            | Token::FloorDiv
            | Token::Pow
            | Token::Mod
            | Token::Dot
            | Token::Tilde
            | Token::Pipe
            | Token::Eq
            | Token::Ne
            | Token::Gt
            | Token::Gte
            | Token::Lt
            | Token::Lte
            | Token::BracketOpen
            | Token::ParenOpen
            | Token::BraceOpen
            | Token::Ident("and" | "or" | "not" | "in" | "is" | "if") => {
                operators += 1;
                if operators > MAX_TAG_OPERATORS {
                    return Err(format!(
                        "a tag of the template holds more than {MAX_TAG_OPERATORS} operators; a spec's template \
                         computes one short value"
                    ));
                }
            }
            _ => {}
        }
        previous_was_string = is_string;
        previous_was_dot = matches!(token, Token::Dot);
    }
    let mut out = String::with_capacity(text.len() + literals.len() * (LITERAL.len() + 3));
    let mut at = 0;
    for (start, end) in literals {
        let (Some(before), Some(literal)) = (text.get(at..start), text.get(start..end)) else { return Ok(None) };
        out.push_str(before);
        out.push('(');
        out.push_str(literal);
        out.push('|');
        out.push_str(LITERAL);
        out.push(')');
        at = end;
    }
    out.push_str(text.get(at..).unwrap_or_default());
    Ok(Some(out))
}

/// Rewrites compiled instructions so that they run on the meter (see the module's documentation). `Err` names a
/// construct that cannot be measured.
pub(crate) fn harden<'s>(src: &Instructions<'s>) -> Result<Instructions<'s>, String> {
    use Instruction as I;
    let len = src.len() as u32;
    // Macro bodies start where a `BuildMacro` points; each call is counted there.
    let mut macro_entries = Vec::new();
    for i in 0..len {
        if let Some(I::BuildMacro(_, offset, _)) = src.get(i) {
            macro_entries.push(*offset);
        }
    }
    // Where each old instruction lands: some become several.
    let prefix = |i: u32, instr: &I<'s>| -> u32 {
        let tick = if matches!(instr, I::Iterate(_)) || macro_entries.contains(&i) { 3 } else { 0 };
        tick + if matches!(instr, I::EmitRaw(_)) { 2 } else { 1 }
    };
    let mut map = Vec::with_capacity(len as usize + 1);
    let mut next = 0u32;
    for i in 0..len {
        map.push(next);
        next += src.get(i).map_or(1, |instr| prefix(i, instr));
    }
    map.push(next);
    let at = |target: u32| map.get(target as usize).copied().unwrap_or(next);

    let mut out = Instructions::new(src.name(), src.source());
    for i in 0..len {
        let Some(instr) = src.get(i) else { continue };
        let (span, line) = (src.get_span(i), src.get_line(i));
        let mut push = |new: I<'s>| match (span, line) {
            (Some(span), _) => out.add_with_span(new, span),
            (None, Some(line)) => out.add_with_line(new, u16::try_from(line).unwrap_or(u16::MAX)),
            (None, None) => out.add(new),
        };
        let tick_cost = match instr {
            // One iteration runs at most the loop's body.
            I::Iterate(end) => Some(u64::from(end.saturating_sub(i)) + 3),
            _ if macro_entries.contains(&i) => Some(u64::from(len) + 3),
            _ => None,
        };
        if let Some(cost) = tick_cost {
            push(I::LoadConst(Value::from(cost)));
            push(I::CallFunction(TICK, Some(1)));
            push(I::DiscardTop);
        }
        match instr {
            I::EmitRaw(text) => {
                push(I::LoadConst(Value::from_safe_string((*text).to_owned())));
                push(I::Emit);
            }
            I::Add => _ = push(I::CallFunction(ADD, Some(2))),
            I::Mul => _ = push(I::CallFunction(MUL, Some(2))),
            I::StringConcat => _ = push(I::CallFunction(CONCAT, Some(2))),
            I::Eq => _ = push(I::CallFunction(EQ, Some(2))),
            I::Ne => _ = push(I::CallFunction(NE, Some(2))),
            I::Lt => _ = push(I::CallFunction(LT, Some(2))),
            I::Lte => _ = push(I::CallFunction(LTE, Some(2))),
            I::Gt => _ = push(I::CallFunction(GT, Some(2))),
            I::Gte => _ = push(I::CallFunction(GTE, Some(2))),
            I::In => _ = push(I::CallFunction(IN, Some(2))),
            I::GetItem => _ = push(I::CallFunction(GET_ITEM, Some(2))),
            I::Slice => _ = push(I::CallFunction(SLICE, Some(4))),
            I::Include(_) | I::LoadBlocks | I::ExportLocals => {
                return Err("spec templates cannot include, import or extend other templates".to_owned())
            }
            I::CompareAndPreserve(_) => {
                return Err("chained comparisons such as `a < b < c` are not supported in spec templates; write \
                            `a < b and b < c`"
                    .to_owned())
            }
            I::Jump(t) => _ = push(I::Jump(at(*t))),
            I::JumpIfFalse(t) => _ = push(I::JumpIfFalse(at(*t))),
            I::JumpIfFalseOrPop(t) => _ = push(I::JumpIfFalseOrPop(at(*t))),
            I::JumpIfTrueOrPop(t) => _ = push(I::JumpIfTrueOrPop(at(*t))),
            I::Iterate(t) => _ = push(I::Iterate(at(*t))),
            I::BuildMacro(name, offset, flags) => _ = push(I::BuildMacro(name, at(*offset), *flags)),
            other => _ = push(other.clone()),
        }
    }
    Ok(out)
}
