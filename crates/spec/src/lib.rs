//! loadgate's spec language: load a YAML spec, render its templates, validate it into a typed [`Spec`].

pub mod diag;
pub mod generate;
mod loader;
pub mod model;
pub mod node;
mod parse;
mod read;
pub mod schema;
pub mod slo;
pub mod suggest;
mod template;
/// The unit types, re-exported so that spec readers need not name the units crate.
pub use loadgate_units as units;

pub use diag::{Diagnostic, Diagnostics, Severity, SpecError};
pub use generate::{Generator, Segment};
pub use loader::yaml_to_json;
pub use model::*;
pub use parse::{LoadOptions, DEFAULT_MAX_USER_CONNECTIONS, DEFAULT_TIMEOUT};
pub use slo::{AbortOnFail, Comparison, Metric, MetricKind, Slo, SloError, Threshold};

/// Reads, templates and validates a spec from text. `file` names it in diagnostics.
///
/// Every problem is reported at once in the returned [`SpecError`]; warnings of a valid spec are in
/// [`Spec::warnings`].
pub fn load_str(file: &str, text: &str, opts: &LoadOptions) -> Result<Spec, SpecError> {
    let mut diags = Diagnostics::default();
    let spec = match loader::parse(text) {
        Ok(root) => parse::read_spec(&root, opts, &mut diags),
        Err(e) => {
            diags.push(
                Diagnostic::error(
                    &node::Path::root(),
                    e.span.or(Some(node::Span { line: 1, col: 1 })),
                    format!("the file is not valid YAML: {}", e.message),
                )
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

/// Reads a spec file. A file that cannot be read or is not UTF-8 is reported like any other spec error.
pub fn load_file(path: &std::path::Path, opts: &LoadOptions) -> Result<Spec, SpecError> {
    let file = path.display().to_string();
    let fail = |message: String, help: &str| {
        let mut diags = Diagnostics::default();
        diags.push(Diagnostic::error(&node::Path::root(), Some(node::Span { line: 1, col: 1 }), message).help(help));
        SpecError { file: file.clone(), source: String::new(), diagnostics: diags }
    };
    let bytes = std::fs::read(path)
        .map_err(|e| fail(format!("cannot read the spec: {e}"), "check the path and its permissions"))?;
    let text = String::from_utf8(bytes).map_err(|e| {
        fail(
            format!("the spec is not UTF-8 text (invalid byte at offset {})", e.utf8_error().valid_up_to()),
            "save the file as UTF-8",
        )
    })?;
    load_str(&file, &text, opts)
}

use serde::{Deserialize, Serialize};

/// What to do when this machine cannot honour the spec's CPU pinning.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OnMismatch {
    /// Refuse to run (exit 3).
    Fail,
    /// Run unpinned or with the CPUs that exist, and say so in every report.
    #[default]
    Warn,
    /// Skip the run and exit 0 with a note: the spec does not apply to this machine.
    Skip,
}

/// Whether a saturated generator worker (90% CPU or more) invalidates a phase.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SaturationPolicy {
    /// Invalid (exit 4) for open loads, whose latency a late generator inflates; a warning for closed loads.
    #[default]
    Auto,
    /// Always invalid.
    Invalid,
    /// Always a warning.
    Warn,
}

/// The built-in reference server's behaviours.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BuiltinKind {
    /// TechEmpower's plaintext: `Hello, World!` (13 bytes).
    Plaintext,
    /// Echoes the request body back.
    Echo,
    /// Answers after a fixed delay.
    Delay,
}

/// How pipelined requests are kept in flight on a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PipelineMode {
    /// wrk's `pipeline.lua`: write `pipeline` requests, wait for all their responses, repeat.
    #[default]
    Batch,
    /// Keep `pipeline` requests in flight: send a new one as each response arrives.
    Window,
}
