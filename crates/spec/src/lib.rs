//! loadgate's spec reader: load a YAML spec, render its templates, validate it into the typed [`Spec`] of
//! `loadgate-model`. The only crate that sees YAML or templates.

pub mod generate;
mod loader;
pub mod node;
mod parse;
mod read;
pub mod schema;
mod template;

/// The language's types live in `loadgate-model`; re-exported so that a reader of specs needs one crate.
pub use loadgate_model::{diag, slo, suggest, units};
pub use loadgate_model::{BuiltinKind, OnMismatch, PipelineMode, SaturationPolicy};
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
