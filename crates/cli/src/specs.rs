//! Reading the specs a command names: every one loaded and validated (all errors reported before anything runs),
//! a results.json given in a spec's place named as such.

use std::path::{Path, PathBuf};

use loadgate_runner::job::SpecInput;
use loadgate_spec::Spec;

use crate::args::VarArgs;
use crate::output::Output;

/// A spec that validated: the spec, its file as named, and its directory.
pub struct Loaded {
    pub(crate) spec: Spec,
    pub(crate) file: String,
    pub(crate) dir: Option<PathBuf>,
    /// The spec's text, embedded in results.json for `loadgate repro` (`None` for a spec built from command-line
    /// flags with a credential header: the artifact could only keep it scrubbed).
    pub(crate) text: Option<String>,
    /// The spec a run from command-line flags made of them: what `--shards N` gives its shard processes to run.
    pub(crate) flags_yaml: Option<String>,
}

impl Loaded {
    /// What a [`loadgate_runner::Job`] is built from.
    pub(crate) fn into_input(self) -> SpecInput {
        let Loaded { spec, file, dir, text, flags_yaml } = self;
        SpecInput { spec, file, dir, text, flags_yaml }
    }
}

/// Loads every spec (all of them, so that every error is reported before anything runs), printing warnings and
/// errors. `Err` when one is invalid.
pub fn load_all(out: &Output, paths: &[PathBuf], vars: &VarArgs) -> Result<Vec<Loaded>, Vec<Loaded>> {
    let opts = vars.load_options();
    let mut loaded = Vec::new();
    let mut invalid = false;
    for path in paths {
        let file = path.display().to_string();
        // The file is read once, bounded (a regular file of at most 1 MiB: never a FIFO, a device or /proc), and
        // that text is what is checked, loaded, quoted in messages and embedded in results.json.
        let text = match loadgate_spec::read_spec_file(path) {
            Ok(text) => text,
            Err(e) => {
                if loadgate_spec::file_head(path, 4096).is_some_and(|h| loadgate_repro::looks_like_results(&h)) {
                    out.error(&results_not_spec(&file));
                } else {
                    out.error(&e.render());
                }
                invalid = true;
                continue;
            }
        };
        if loadgate_repro::looks_like_results(&text) {
            out.error(&results_not_spec(&file));
            invalid = true;
            continue;
        }
        match loadgate_spec::load_file_text(path, &text, &opts) {
            Ok(spec) => {
                for w in &spec.warnings {
                    out.error(&spec.secrets.scrub(&w.render(&file, &text)));
                }
                let dir = path.parent().map(|p| if p.as_os_str().is_empty() { Path::new(".") } else { p });
                let dir = dir.and_then(|d| d.canonicalize().ok());
                loaded.push(Loaded { spec, file, dir, text: Some(text), flags_yaml: None });
            }
            Err(e) => {
                out.error(&e.render());
                invalid = true;
            }
        }
    }
    if invalid {
        Err(loaded)
    } else {
        Ok(loaded)
    }
}

fn results_not_spec(file: &str) -> String {
    let file = loadgate_spec::diag::escape_controls(file);
    format!(
        "error: {file} is a results.json, not a spec: `loadgate repro {file}` runs the spec it embeds again and \
         compares the two runs"
    )
}
