//! loadgate's spec reader: load a YAML spec, render its templates, validate it into the typed [`Spec`] of
//! `loadgate-model`. The only crate that sees YAML or templates.

mod files;
pub mod generate;
pub mod limits;
mod loader;
pub mod node;
mod parse;
mod read;
mod sandbox;
pub mod schema;
mod template;

/// The language's types live in `loadgate-model`; re-exported so that a reader of specs needs one crate.
pub use loadgate_model::{diag, slo, suggest, units};
pub use loadgate_model::{
    BuiltinKind, ConnectRate, Gating, OnInconclusive, OnMismatch, Pacing, PipelineMode, PipelineReads, Protocol,
    Restart, RoundOrder, SaturationPolicy,
};
/// The validated spec's types.
pub mod model {
    pub use loadgate_model::spec::*;
}

pub use diag::{Diagnostic, Diagnostics, Severity, SpecError};
pub use files::head as file_head;
pub use generate::{Generator, Segment};
pub use loader::yaml_to_json;
pub use model::*;
pub use parse::{LoadOptions, DEFAULT_MAX_USER_CONNECTIONS, DEFAULT_TIMEOUT};
pub use slo::{AbortOnFail, Comparison, Metric, MetricKind, Slo, SloError, Threshold};

/// Reads, templates and validates a spec from text. `file` names it in diagnostics.
///
/// Every problem is reported at once in the returned [`SpecError`]; warnings of a valid spec are in
/// [`Spec::warnings`]. Whatever the text, reading it stays within the bounds of [`limits`]. A leading byte order
/// mark is ignored.
pub fn load_str(file: &str, text: &str, opts: &LoadOptions) -> Result<Spec, SpecError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    if text.len() > limits::MAX_SPEC_BYTES {
        return Err(file_error(
            file,
            format!(
                "the spec is {} long, longer than the {} a spec may be",
                limits::human_bytes(text.len() as u64),
                limits::human_bytes(limits::MAX_SPEC_BYTES as u64)
            ),
            "a spec is a few kilobytes; generate sweeps with a scenario's `matrix` rather than writing them out",
        ));
    }
    let mut diags = Diagnostics::default();
    let (spec, secrets) = match loader::parse(text) {
        Ok(root) => parse::read_spec(&root, opts, &mut diags),
        Err(e) => {
            diags.push(
                Diagnostic::error(
                    &e.path.unwrap_or_default(),
                    e.span.or(Some(node::Span { line: 1, col: 1 })),
                    e.message,
                )
                .help(e.help),
            );
            (None, parse::command_line_secrets(opts))
        }
    };
    match spec {
        Some(mut spec) if !diags.has_errors() => {
            spec.warnings = diags.warnings().cloned().collect();
            Ok(spec)
        }
        _ => Err(SpecError {
            file: file.to_owned(),
            source: text.to_owned(),
            diagnostics: diags,
            secrets: Box::new(secrets),
        }),
    }
}

fn file_error(file: &str, message: String, help: &str) -> SpecError {
    let mut diags = Diagnostics::default();
    diags.push(Diagnostic::error(&node::Path::root(), Some(node::Span { line: 1, col: 1 }), message).help(help));
    SpecError { file: file.to_owned(), source: String::new(), diagnostics: diags, secrets: Default::default() }
}

/// Reads a spec file's text: a regular file (a symbolic link to one is followed) of at most
/// [`limits::MAX_SPEC_BYTES`], UTF-8. A FIFO, a device or a file of `/proc` is refused without being read (nor
/// waited on). A file that cannot be read or is not UTF-8 is reported like any other spec error.
pub fn read_spec_file(path: &std::path::Path) -> Result<String, SpecError> {
    let file = path.display().to_string();
    let max = limits::MAX_SPEC_BYTES as u64;
    let bytes = files::read_regular(path, max).map_err(|e| {
        let help = match e {
            files::ReadError::TooLarge(_) => {
                "a spec is a few kilobytes; generate sweeps with a scenario's `matrix` rather than writing them out"
            }
            files::ReadError::Io(_) => "check the path and its permissions",
            _ => "name a YAML file",
        };
        let (message, _) = e.explain(&file, max, "a spec");
        let message = match e {
            files::ReadError::Io(e) => format!("cannot read the spec: {e}"),
            // Worded as `load_str` words a text over the bound.
            files::ReadError::TooLarge(Some(size)) => format!(
                "the spec is {} long, longer than the {} a spec may be",
                limits::human_bytes(size),
                limits::human_bytes(max)
            ),
            files::ReadError::TooLarge(None) => {
                format!("the spec is longer than the {} a spec may be", limits::human_bytes(max))
            }
            _ => message.replacen(&format!("`{file}`"), "the spec", 1),
        };
        file_error(&file, message, help)
    })?;
    String::from_utf8(bytes).map_err(|e| {
        // Where the invalid byte is, as a line and column of the text before it (which is valid).
        let valid = &e.as_bytes()[..e.utf8_error().valid_up_to()];
        let valid = std::str::from_utf8(valid).unwrap_or_default();
        let lines = diag::line_starts(valid);
        let line = if valid.ends_with(['\n', '\r']) { lines.len() + 1 } else { lines.len().max(1) };
        let col = match lines.get(line - 1) {
            Some(&(start, end)) => valid[start..end].chars().count() + 1,
            None => 1,
        };
        let mut diags = Diagnostics::default();
        diags.push(
            Diagnostic::error(
                &node::Path::root(),
                Some(node::Span { line, col }),
                format!("the spec is not UTF-8 text (invalid byte at offset {})", valid.len()),
            )
            .help("save the file as UTF-8"),
        );
        let shown = String::from_utf8_lossy(e.as_bytes()).into_owned();
        SpecError { file: file.clone(), source: shown, diagnostics: diags, secrets: Default::default() }
    })
}

/// Reads, templates and validates the text of the spec file at `path` (as [`read_spec_file`] read it). Data files
/// (`pick_line`, `pick_csv`) are found in the spec's directory unless `opts.base_dir` says otherwise.
pub fn load_file_text(path: &std::path::Path, text: &str, opts: &LoadOptions) -> Result<Spec, SpecError> {
    let file = path.display().to_string();
    if opts.base_dir.is_some() {
        return load_str(&file, text, opts);
    }
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => std::path::PathBuf::from("."),
    };
    let opts = LoadOptions { base_dir: Some(dir), ..opts.clone() };
    load_str(&file, text, &opts)
}

/// Reads a spec file ([`read_spec_file`]) and loads it ([`load_file_text`]).
pub fn load_file(path: &std::path::Path, opts: &LoadOptions) -> Result<Spec, SpecError> {
    let text = read_spec_file(path)?;
    load_file_text(path, &text, opts)
}
