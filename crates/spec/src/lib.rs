//! loadgate's spec reader: load a YAML spec, render its templates, validate it into the typed [`Spec`] of
//! `loadgate-model`. The only crate that sees YAML or templates.

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
    BuiltinKind, ConnectRate, Gating, OnInconclusive, OnMismatch, Pacing, PipelineMode, Protocol, Restart, RoundOrder,
    SaturationPolicy,
};
/// The validated spec's types.
pub mod model {
    pub use loadgate_model::spec::*;
}

pub use diag::{Diagnostic, Diagnostics, Severity, SpecError};
pub use generate::{Generator, Segment};
pub use loader::yaml_to_json;
pub use model::*;
pub use parse::{LoadOptions, DEFAULT_MAX_USER_CONNECTIONS, DEFAULT_TIMEOUT};
pub use slo::{AbortOnFail, Comparison, Metric, MetricKind, Slo, SloError, Threshold};

/// Reads, templates and validates a spec from text. `file` names it in diagnostics.
///
/// Every problem is reported at once in the returned [`SpecError`]; warnings of a valid spec are in
/// [`Spec::warnings`]. Whatever the text, reading it stays within the bounds of [`limits`].
pub fn load_str(file: &str, text: &str, opts: &LoadOptions) -> Result<Spec, SpecError> {
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
    let spec = match loader::parse(text) {
        Ok(root) => parse::read_spec(&root, opts, &mut diags),
        Err(e) => {
            diags.push(
                Diagnostic::error(&node::Path::root(), e.span.or(Some(node::Span { line: 1, col: 1 })), e.message)
                    .help(e.help),
            );
            None
        }
    };
    match spec {
        Some(mut spec) if !diags.has_errors() => {
            spec.warnings = diags.warnings().cloned().collect();
            Ok(spec)
        }
        _ => Err(SpecError { file: file.to_owned(), source: text.to_owned(), diagnostics: diags }),
    }
}

fn file_error(file: &str, message: String, help: &str) -> SpecError {
    let mut diags = Diagnostics::default();
    diags.push(Diagnostic::error(&node::Path::root(), Some(node::Span { line: 1, col: 1 }), message).help(help));
    SpecError { file: file.to_owned(), source: String::new(), diagnostics: diags }
}

/// Reads a spec file. A file that cannot be read or is not UTF-8 is reported like any other spec error. Data files
/// (`pick_line`, `pick_csv`) are found in the spec's directory unless `opts.base_dir` says otherwise.
pub fn load_file(path: &std::path::Path, opts: &LoadOptions) -> Result<Spec, SpecError> {
    use std::io::Read as _;
    let file = path.display().to_string();
    let fail = |message: String, help: &str| file_error(&file, message, help);
    let cannot_read =
        |e: std::io::Error| fail(format!("cannot read the spec: {e}"), "check the path and its permissions");
    let handle = std::fs::File::open(path).map_err(cannot_read)?;
    if !handle.metadata().map_err(cannot_read)?.is_file() {
        return Err(fail("the spec is not a regular file".to_owned(), "name a YAML file"));
    }
    // Never read more than one byte past the limit, whatever the file is.
    let mut bytes = Vec::new();
    handle.take(limits::MAX_SPEC_BYTES as u64 + 1).read_to_end(&mut bytes).map_err(cannot_read)?;
    if bytes.len() > limits::MAX_SPEC_BYTES {
        return Err(fail(
            format!("the spec is longer than the {} a spec may be", limits::human_bytes(limits::MAX_SPEC_BYTES as u64)),
            "a spec is a few kilobytes; generate sweeps with a scenario's `matrix` rather than writing them out",
        ));
    }
    let text = String::from_utf8(bytes).map_err(|e| {
        fail(
            format!("the spec is not UTF-8 text (invalid byte at offset {})", e.utf8_error().valid_up_to()),
            "save the file as UTF-8",
        )
    })?;
    if opts.base_dir.is_some() {
        return load_str(&file, &text, opts);
    }
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => std::path::PathBuf::from("."),
    };
    let opts = LoadOptions { base_dir: Some(dir), ..opts.clone() };
    load_str(&file, &text, &opts)
}
