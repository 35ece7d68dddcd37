//! Per-request data: `{{ seq() }}`, `{{ random_int(1, 100000) }}`, `{{ random_string(16) }}`,
//! `{{ random_hex(32) }}`, `{{ uuid() }}`, `{{ pick(['a', 'b']) }}`, `{{ pick_line('keys.txt') }}`,
//! `{{ pick_csv('users.csv', 'id') }}`.
//!
//! At load time a generator call renders to a marker; the rendered field is then split into literal text and
//! generator slots, compiled once. The engine fills the slots per request from a seeded random source, so a
//! static request costs nothing and a dynamic one only the values it generates.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use minijinja::value::Kwargs;

pub use loadgate_model::generate::{Generator, Segment};

use crate::limits::{human_bytes, MAX_DATA_VALUES};

/// The generator calls met while rendering, by marker index.
#[derive(Debug, Clone, Default)]
pub(crate) struct Registry {
    list: Arc<Mutex<Vec<Generator>>>,
    /// Whether the value being rendered is one where generators work (a request's path, query, headers, body).
    dynamic: Arc<AtomicBool>,
    /// A generator was called where it does not work.
    refused: Arc<AtomicBool>,
    /// The marker of each data file's generator, by file and column: a file is read once per spec.
    files: Arc<Mutex<HashMap<(PathBuf, String), String>>>,
}

const MARK: char = '\u{1}';

impl Registry {
    fn push(&self, g: Generator) -> String {
        let mut list = self.list.lock().unwrap_or_else(|p| p.into_inner());
        list.push(g);
        format!("{MARK}{}{MARK}", list.len() - 1)
    }

    pub fn get(&self, index: usize) -> Option<Generator> {
        self.list.lock().unwrap_or_else(|p| p.into_inner()).get(index).cloned()
    }

    /// Says whether the next rendering is of a value where generators work; clears the refusal flag.
    pub fn set_dynamic(&self, dynamic: bool) {
        self.dynamic.store(dynamic, Ordering::Relaxed);
        self.refused.store(false, Ordering::Relaxed);
    }

    /// Whether the last rendering called a generator where generators do not work.
    pub fn was_refused(&self) -> bool {
        self.refused.load(Ordering::Relaxed)
    }

    /// Generators make a value per request; anywhere else they are refused before they do anything (a data file
    /// is not even opened).
    fn allowed(&self, name: &str) -> Result<(), minijinja::Error> {
        if self.dynamic.load(Ordering::Relaxed) {
            return Ok(());
        }
        self.refused.store(true, Ordering::Relaxed);
        Err(arg_err(format!("{name}() makes a value per request, which only works in a request")))
    }
}

/// Whether rendered text holds generator slots.
pub(crate) fn has_marks(text: &str) -> bool {
    text.contains(MARK)
}

/// A piece of rendered text: literal text, a generator's slot, or a session variable's (captured by an earlier
/// step, or by this step or a later one: a use before the capture).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Part {
    Text(String),
    Gen(usize),
    Var(u16),
    Later(u16),
}

/// The marker a session variable renders to: `set` when an earlier step captures it, else a "later" marker that
/// reading refuses. Mixed case, so that `upper`, `lower`, `capitalize` and `title` change it and the filtered use
/// is refused rather than passed through unfiltered.
pub(crate) fn var_marker(slot: u16, set: bool) -> String {
    if set {
        format!("{MARK}vV{slot}{MARK}")
    } else {
        format!("{MARK}uU{slot}{MARK}")
    }
}

/// Splits rendered text into its parts; `None` when a marker was changed (by a filter or a slice) and cannot be
/// read back.
pub(crate) fn parse_marks(text: &str) -> Option<Vec<Part>> {
    if text.matches(MARK).count() % 2 != 0 {
        return None;
    }
    let mut out = Vec::new();
    for (i, part) in text.split(MARK).enumerate() {
        if i % 2 == 0 {
            if !part.is_empty() {
                out.push(Part::Text(part.to_owned()));
            }
            continue;
        }
        let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
        out.push(if let Some(slot) = part.strip_prefix("vV").filter(|s| digits(s)) {
            Part::Var(slot.parse().ok()?)
        } else if let Some(slot) = part.strip_prefix("uU").filter(|s| digits(s)) {
            Part::Later(slot.parse().ok()?)
        } else if digits(part) {
            Part::Gen(part.parse().ok()?)
        } else {
            return None;
        });
    }
    Some(out)
}

fn arg_err(msg: impl Into<String>) -> minijinja::Error {
    minijinja::Error::new(minijinja::ErrorKind::InvalidOperation, msg.into())
}

/// Where data files come from and how large they may be.
#[derive(Debug, Clone)]
pub(crate) struct DataFiles {
    /// The spec's directory; the current directory when `None`.
    pub base: Option<PathBuf>,
    pub allow_outside: bool,
    pub max_bytes: u64,
    /// The files read so far, shared by the clones the template functions hold.
    pub read: std::sync::Arc<std::sync::Mutex<Vec<loadgate_model::spec::FileRead>>>,
}

impl DataFiles {
    /// Notes a file the spec read (once per path and kind).
    pub(crate) fn note(&self, name: &str, path: &Path, kind: loadgate_model::spec::FileKind) {
        let mut read = self.read.lock().unwrap_or_else(|p| p.into_inner());
        if !read.iter().any(|f| f.path == path && f.kind == kind) {
            read.push(loadgate_model::spec::FileRead { name: name.to_owned(), path: path.to_path_buf(), kind });
        }
    }

    /// The files read, in the order first read.
    pub(crate) fn files_read(&self) -> Vec<loadgate_model::spec::FileRead> {
        self.read.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

/// Registers the generator functions on a template environment.
pub(crate) fn register(
    env: &mut minijinja::Environment<'static>,
    reg: &Registry,
    data: DataFiles,
    meter: &Arc<crate::sandbox::Meter>,
) {
    let r = reg.clone();
    env.add_function(
        "seq",
        move |start: Option<i64>, step: Option<i64>, kw: Kwargs| -> Result<String, minijinja::Error> {
            r.allowed("seq")?;
            let start = param("seq(start, step)", start, &kw, "start")?.unwrap_or(0);
            let step = param("seq(start, step)", step, &kw, "step")?.unwrap_or(1);
            kw.assert_all_used()?;
            if step == 0 {
                return Err(arg_err("seq(start, step): step cannot be 0"));
            }
            Ok(r.push(Generator::Seq { start, step }))
        },
    );
    let r = reg.clone();
    env.add_function(
        "random_int",
        move |min: Option<i64>, max: Option<i64>, kw: Kwargs| -> Result<String, minijinja::Error> {
            r.allowed("random_int")?;
            let min = required("random_int(min, max)", param("random_int(min, max)", min, &kw, "min")?, "min")?;
            let max = required("random_int(min, max)", param("random_int(min, max)", max, &kw, "max")?, "max")?;
            kw.assert_all_used()?;
            if min > max {
                return Err(arg_err(format!("random_int({min}, {max}): the minimum is above the maximum")));
            }
            Ok(r.push(Generator::RandomInt { min, max }))
        },
    );
    for (name, hex) in [("random_string", false), ("random_bytes", false), ("random_hex", true)] {
        let r = reg.clone();
        env.add_function(name, move |len: Option<u32>, kw: Kwargs| -> Result<String, minijinja::Error> {
            r.allowed(name)?;
            let form = format!("{name}(len)");
            let len = required(&form, param(&form, len, &kw, "len")?, "len")?;
            kw.assert_all_used()?;
            if len == 0 || len > 1 << 20 {
                return Err(arg_err(format!("{name}({len}): the length must be between 1 and 1048576")));
            }
            // random_bytes makes printable characters, so the value is safe in a path, a header or a body.
            Ok(r.push(if hex { Generator::RandomHex { len } } else { Generator::RandomString { len } }))
        });
    }
    let r = reg.clone();
    env.add_function("uuid", move || -> Result<String, minijinja::Error> {
        r.allowed("uuid")?;
        Ok(r.push(Generator::Uuid))
    });
    let r = reg.clone();
    let m = meter.clone();
    env.add_function(
        "pick",
        move |values: Option<Vec<minijinja::Value>>, kw: Kwargs| -> Result<String, minijinja::Error> {
            r.allowed("pick")?;
            let values = required("pick(values)", param("pick(values)", values, &kw, "values")?, "values")?;
            kw.assert_all_used()?;
            if values.is_empty() {
                return Err(arg_err("pick([...]): the list is empty"));
            }
            let limit = crate::limits::MAX_VALUE_BYTES as u64;
            m.produce(values.iter().fold(0u64, |sum, v| sum.saturating_add(crate::sandbox::weight(v, limit))))?;
            Ok(r.push(Generator::Pick { values: values.iter().map(|v| v.to_string()).collect() }))
        },
    );
    let r = reg.clone();
    let d = data.clone();
    let m = meter.clone();
    env.add_function("pick_line", move |file: Option<String>, kw: Kwargs| -> Result<String, minijinja::Error> {
        r.allowed("pick_line")?;
        let file = required("pick_line(file)", param("pick_line(file)", file, &kw, "file")?, "file")?;
        kw.assert_all_used()?;
        let what = format!("pick_line('{file}')");
        r.data_file(&d, &m, &file, String::new(), |text| {
            let values: Vec<String> = text
                .lines()
                .map(str::trim_end)
                .filter(|l| !l.is_empty())
                .take(MAX_DATA_VALUES + 1)
                .map(str::to_owned)
                .collect();
            if values.is_empty() {
                return Err(arg_err(format!("{what}: the file has no lines")));
            }
            if values.len() > MAX_DATA_VALUES {
                return Err(arg_err(format!("{what}: the file has more than {MAX_DATA_VALUES} lines")));
            }
            Ok(Generator::Pick { values })
        })
    });
    let r = reg.clone();
    let m = meter.clone();
    env.add_function(
        "pick_csv",
        move |file: Option<String>, column: Option<String>, kw: Kwargs| -> Result<String, minijinja::Error> {
            r.allowed("pick_csv")?;
            let form = "pick_csv(file, column)";
            let file = required(form, param(form, file, &kw, "file")?, "file")?;
            let column = required(form, param(form, column, &kw, "column")?, "column")?;
            kw.assert_all_used()?;
            let what = format!("pick_csv('{file}', '{column}')");
            r.data_file(&data, &m, &file, column.clone(), |text| csv_column(text, &column, &what))
        },
    );
}

/// An argument given by position or by keyword (`seq(100, 2)` or `seq(start=100, step=2)`), never both.
fn param<T>(form: &str, positional: Option<T>, kw: &Kwargs, name: &str) -> Result<Option<T>, minijinja::Error>
where
    T: for<'a> minijinja::value::ArgType<'a, Output = T>,
{
    let keyword: Option<T> = kw.get(name)?;
    match (positional, keyword) {
        (Some(_), Some(_)) => Err(arg_err(format!("{form}: `{name}` is given twice, by position and by keyword"))),
        (p, k) => Ok(p.or(k)),
    }
}

fn required<T>(form: &str, value: Option<T>, name: &str) -> Result<T, minijinja::Error> {
    value.ok_or_else(|| arg_err(format!("{form}: `{name}` is missing")))
}

/// The values of one column of an RFC 4180 CSV table whose first record is the header: fields may be quoted,
/// and a quoted field may hold commas, doubled quotes and line breaks. Header names are matched with surrounding
/// spaces ignored; values are kept as written (quotes removed).
fn csv_column(text: &str, column: &str, what: &str) -> Result<Generator, minijinja::Error> {
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(true)
        .flexible(true)
        .trim(csv::Trim::Headers)
        .from_reader(text.as_bytes());
    let located = |e: &csv::Error| match e.position() {
        Some(p) => format!("{what}: line {}: {e}", p.line()),
        None => format!("{what}: {e}"),
    };
    let header = reader.headers().map_err(|e| arg_err(located(&e)))?.clone();
    let col = header.iter().position(|h| h == column).ok_or_else(|| {
        let names: Vec<&str> = header.iter().collect();
        arg_err(format!("{what}: no column `{column}`; the header has: {}", names.join(", ")))
    })?;
    let mut values = Vec::new();
    for record in reader.records() {
        let record = record.map_err(|e| arg_err(located(&e)))?;
        // A line holding nothing (a trailing blank line) is no row.
        if record.len() == 1 && record.get(0).is_some_and(|f| f.trim().is_empty()) && header.len() > 1 {
            continue;
        }
        let value = record.get(col).ok_or_else(|| {
            let line = record.position().map(|p| p.line()).unwrap_or_default();
            arg_err(format!(
                "{what}: line {line}: the row has {} fields and no `{column}` (field {} of the header)",
                record.len(),
                col + 1
            ))
        })?;
        if values.len() == MAX_DATA_VALUES {
            return Err(arg_err(format!("{what}: the file has more than {MAX_DATA_VALUES} rows")));
        }
        values.push(value.to_owned());
    }
    if values.is_empty() {
        return Err(arg_err(format!("{what}: the file has no rows")));
    }
    Ok(Generator::Pick { values })
}

impl Registry {
    /// The generator of a data file: read (once per file and column) and made by `make`.
    fn data_file(
        &self,
        data: &DataFiles,
        meter: &crate::sandbox::Meter,
        file: &str,
        column: String,
        make: impl FnOnce(&str) -> Result<Generator, minijinja::Error>,
    ) -> Result<String, minijinja::Error> {
        let refused = |(message, help): Refusal| meter.fail(message, &help);
        let path = resolve_data_file(data, file).map_err(refused)?;
        let key = (path.clone(), column);
        if let Some(mark) = self.files.lock().unwrap_or_else(|p| p.into_inner()).get(&key) {
            return Ok(mark.clone());
        }
        let text = read_data_file(&path, file, data.max_bytes).map_err(refused)?;
        data.note(file, &path, loadgate_model::spec::FileKind::Data);
        let mark = self.push(make(&text)?);
        self.files.lock().unwrap_or_else(|p| p.into_inner()).insert(key, mark.clone());
        Ok(mark)
    }
}

/// Why a data file is not read: the message and the fix.
pub(crate) type Refusal = (String, String);

/// The file a data file name stands for: relative to the spec's directory and inside its tree (symbolic links
/// followed), unless the options allow any file.
pub(crate) fn resolve_data_file(data: &DataFiles, file: &str) -> Result<PathBuf, Refusal> {
    let base = match &data.base {
        Some(b) => b.clone(),
        None => {
            std::env::current_dir().map_err(|e| (format!("cannot find the current directory: {e}"), String::new()))?
        }
    };
    let root = base.canonicalize().map_err(|e| {
        (format!("cannot read the spec's directory `{}`: {e}", base.display()), "check that it exists".to_owned())
    })?;
    let name = Path::new(file);
    let outside = || {
        (
            format!("`{file}` is outside the spec's directory (`{}`)", base.display()),
            "data files are read from the spec's directory and below; move the file there, or pass \
             `--allow-data-outside-spec-dir` to read it where it is"
                .to_owned(),
        )
    };
    if !data.allow_outside && (name.is_absolute() || name.components().any(|c| c == std::path::Component::ParentDir)) {
        return Err(outside());
    }
    let path = root.join(name).canonicalize().map_err(|e| {
        (format!("cannot read `{file}`: {e}"), format!("data files are found relative to `{}`", base.display()))
    })?;
    // A symbolic link inside the tree may lead out of it.
    if !data.allow_outside && !path.starts_with(&root) {
        return Err(outside());
    }
    Ok(path)
}

/// Reads a data file: a regular file, at most `max_bytes` long, UTF-8. Never reads more than `max_bytes + 1`.
fn read_data_file(path: &Path, file: &str, max_bytes: u64) -> Result<String, Refusal> {
    use std::io::Read as _;
    let cannot = |e: std::io::Error| (format!("cannot read `{file}`: {e}"), "check its permissions".to_owned());
    let handle = std::fs::File::open(path).map_err(cannot)?;
    let meta = handle.metadata().map_err(cannot)?;
    if !meta.is_file() {
        return Err((
            format!("`{file}` is not a regular file"),
            "a data file is a text file: one value per line for `pick_line`, a CSV table for `pick_csv`".to_owned(),
        ));
    }
    let too_large = |size: String| {
        (
            format!("`{file}` is {size}, more than the {} a data file may be", human_bytes(max_bytes)),
            "raise the limit with `--max-data-file-bytes` (`LoadOptions::max_data_file_bytes`)".to_owned(),
        )
    };
    if meta.len() > max_bytes {
        return Err(too_large(human_bytes(meta.len())));
    }
    let mut bytes = Vec::new();
    handle.take(max_bytes.saturating_add(1)).read_to_end(&mut bytes).map_err(cannot)?;
    if bytes.len() as u64 > max_bytes {
        return Err(too_large("longer than that".to_owned()));
    }
    String::from_utf8(bytes).map_err(|e| {
        (
            format!("`{file}` is not UTF-8 text (invalid byte at offset {})", e.utf8_error().valid_up_to()),
            "save the file as UTF-8".to_owned(),
        )
    })
}

/// The names of the generator functions, for documentation and messages.
pub const GENERATORS: &[&str] =
    &["seq", "random_int", "random_string", "random_hex", "random_bytes", "uuid", "pick", "pick_line", "pick_csv"];
