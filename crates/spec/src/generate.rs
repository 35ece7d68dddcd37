//! Per-request data: `{{ seq() }}`, `{{ random_int(1, 100000) }}`, `{{ random_string(16) }}`,
//! `{{ random_hex(32) }}`, `{{ uuid() }}`, `{{ pick(['a', 'b']) }}`, `{{ pick_line('keys.txt') }}`,
//! `{{ pick_csv('users.csv', 'id') }}`.
//!
//! At load time a generator call renders to a marker; the rendered field is then split into literal text and
//! generator slots, compiled once. The engine fills the slots per request from a seeded random source, so a
//! static request costs nothing and a dynamic one only the values it generates.

use std::sync::{Arc, Mutex};

pub use loadgate_model::generate::{Generator, Segment};

/// The generator calls met while rendering, by marker index.
#[derive(Debug, Clone, Default)]
pub(crate) struct Registry(pub Arc<Mutex<Vec<Generator>>>);

const MARK: char = '\u{1}';

impl Registry {
    fn push(&self, g: Generator) -> String {
        let mut list = self.0.lock().unwrap_or_else(|p| p.into_inner());
        list.push(g);
        format!("{MARK}{}{MARK}", list.len() - 1)
    }

    pub fn get(&self, index: usize) -> Option<Generator> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).get(index).cloned()
    }
}

/// Whether rendered text holds generator slots.
pub(crate) fn has_marks(text: &str) -> bool {
    text.contains(MARK)
}

/// Splits rendered text into literal and generator segments (marker indexes as rendered).
pub(crate) fn split_marks(text: &str) -> Vec<(bool, String)> {
    let mut out = Vec::new();
    let mut parts = text.split(MARK);
    let mut is_mark = false;
    for part in parts.by_ref() {
        if !part.is_empty() || is_mark {
            out.push((is_mark, part.to_owned()));
        }
        is_mark = !is_mark;
    }
    out
}

fn arg_err(msg: impl Into<String>) -> minijinja::Error {
    minijinja::Error::new(minijinja::ErrorKind::InvalidOperation, msg.into())
}

/// Registers the generator functions on a template environment. `base_dir` resolves file names.
pub(crate) fn register(
    env: &mut minijinja::Environment<'static>,
    reg: &Registry,
    base_dir: Option<std::path::PathBuf>,
) {
    let r = reg.clone();
    env.add_function("seq", move |start: Option<i64>, step: Option<i64>| -> Result<String, minijinja::Error> {
        let step = step.unwrap_or(1);
        if step == 0 {
            return Err(arg_err("seq(start, step): step cannot be 0"));
        }
        Ok(r.push(Generator::Seq { start: start.unwrap_or(0), step }))
    });
    let r = reg.clone();
    env.add_function("random_int", move |min: i64, max: i64| -> Result<String, minijinja::Error> {
        if min > max {
            return Err(arg_err(format!("random_int({min}, {max}): the minimum is above the maximum")));
        }
        Ok(r.push(Generator::RandomInt { min, max }))
    });
    let r = reg.clone();
    env.add_function("random_string", move |len: u32| -> Result<String, minijinja::Error> {
        if len == 0 || len > 1 << 20 {
            return Err(arg_err(format!("random_string({len}): the length must be between 1 and 1048576")));
        }
        Ok(r.push(Generator::RandomString { len }))
    });
    let r = reg.clone();
    env.add_function("random_hex", move |len: u32| -> Result<String, minijinja::Error> {
        if len == 0 || len > 1 << 20 {
            return Err(arg_err(format!("random_hex({len}): the length must be between 1 and 1048576")));
        }
        Ok(r.push(Generator::RandomHex { len }))
    });
    let r = reg.clone();
    env.add_function("random_bytes", move |len: u32| -> Result<String, minijinja::Error> {
        // Printable, so the value is safe in a path, a header or a body.
        if len == 0 || len > 1 << 20 {
            return Err(arg_err(format!("random_bytes({len}): the length must be between 1 and 1048576")));
        }
        Ok(r.push(Generator::RandomString { len }))
    });
    let r = reg.clone();
    env.add_function("uuid", move || -> String { r.push(Generator::Uuid) });
    let r = reg.clone();
    env.add_function("pick", move |values: Vec<minijinja::Value>| -> Result<String, minijinja::Error> {
        if values.is_empty() {
            return Err(arg_err("pick([...]): the list is empty"));
        }
        Ok(r.push(Generator::Pick { values: values.iter().map(|v| v.to_string()).collect() }))
    });
    let r = reg.clone();
    let dir = base_dir.clone();
    env.add_function("pick_line", move |file: String| -> Result<String, minijinja::Error> {
        let text = read_data_file(dir.as_deref(), &file)?;
        let values: Vec<String> =
            text.lines().map(str::trim_end).filter(|l| !l.is_empty()).map(str::to_owned).collect();
        if values.is_empty() {
            return Err(arg_err(format!("pick_line('{file}'): the file has no lines")));
        }
        Ok(r.push(Generator::Pick { values }))
    });
    let r = reg.clone();
    let dir = base_dir;
    env.add_function("pick_csv", move |file: String, column: String| -> Result<String, minijinja::Error> {
        let text = read_data_file(dir.as_deref(), &file)?;
        let mut lines = text.lines().filter(|l| !l.trim().is_empty());
        let header: Vec<&str> = lines.next().map(|h| h.split(',').map(str::trim).collect()).unwrap_or_default();
        let col = header.iter().position(|h| *h == column).ok_or_else(|| {
            arg_err(format!(
                "pick_csv('{file}', '{column}'): no column `{column}`; the header has: {}",
                header.join(", ")
            ))
        })?;
        let values: Vec<String> =
            lines.filter_map(|l| l.split(',').nth(col).map(|v| v.trim().trim_matches('"').to_owned())).collect();
        if values.is_empty() {
            return Err(arg_err(format!("pick_csv('{file}', '{column}'): the file has no rows")));
        }
        Ok(r.push(Generator::Pick { values }))
    });
}

fn read_data_file(base: Option<&std::path::Path>, file: &str) -> Result<String, minijinja::Error> {
    let path = match base {
        Some(b) if std::path::Path::new(file).is_relative() => b.join(file),
        _ => std::path::PathBuf::from(file),
    };
    std::fs::read_to_string(&path).map_err(|e| arg_err(format!("cannot read {}: {e}", path.display())))
}

/// The names of the generator functions, for documentation and messages.
pub const GENERATORS: &[&str] =
    &["seq", "random_int", "random_string", "random_hex", "random_bytes", "uuid", "pick", "pick_line", "pick_csv"];
