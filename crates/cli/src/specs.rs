//! Reading the specs a command names, through [`loadgate_runner::source`]: every one loaded and validated (all
//! errors reported before anything runs), its warnings and errors printed.

use std::path::PathBuf;

use loadgate_runner::job::SpecInput;

use crate::args::VarArgs;
use crate::output::Output;

/// Loads every spec, printing warnings and errors. `Err` (with those that loaded) when one is invalid.
pub fn load_all(out: &Output, paths: &[PathBuf], vars: &VarArgs) -> Result<Vec<SpecInput>, Vec<SpecInput>> {
    let files = loadgate_runner::source::load_files(paths, &vars.to_vars().load_options());
    for message in &files.messages {
        out.error(message);
    }
    if files.invalid {
        Err(files.specs)
    } else {
        Ok(files.specs)
    }
}
