//! What the command line and the environment add to a spec.

use std::collections::BTreeMap;

/// What the command line and the environment add to a spec.
#[derive(Debug, Clone)]
pub struct LoadOptions {
    /// `--set name=value`, in order; later ones win.
    pub sets: Vec<(String, String)>,
    /// The process environment (for `{{ env.X }}` and `LOADGATE_VAR_<NAME>`).
    pub env: BTreeMap<String, String>,
    /// Where data files named by `pick_line` and `pick_csv` are found: the spec's directory ([`crate::load_file`]
    /// sets it), or the current directory when unset.
    pub base_dir: Option<std::path::PathBuf>,
    /// Let `pick_line` and `pick_csv` read files outside `base_dir`'s tree (absolute paths, `..`, symbolic links
    /// that lead out). Off by default, so a spec cannot read `/etc/shadow` into a request
    /// (`--allow-data-outside-spec-dir`).
    pub allow_data_outside_spec_dir: bool,
    /// The largest data file `pick_line` and `pick_csv` read, in bytes
    /// ([`DEFAULT_MAX_DATA_FILE_BYTES`](crate::limits::DEFAULT_MAX_DATA_FILE_BYTES) by default).
    pub max_data_file_bytes: u64,
    /// Variables whose values are secret (`--secret NAME=VALUE`), besides the spec's `secrets.vars`.
    pub secret_vars: std::collections::BTreeSet<String>,
}

impl Default for LoadOptions {
    fn default() -> Self {
        LoadOptions {
            sets: Vec::new(),
            env: BTreeMap::new(),
            base_dir: None,
            allow_data_outside_spec_dir: false,
            max_data_file_bytes: crate::limits::DEFAULT_MAX_DATA_FILE_BYTES,
            secret_vars: std::collections::BTreeSet::new(),
        }
    }
}

impl LoadOptions {
    pub fn from_process_env(sets: Vec<(String, String)>) -> Self {
        LoadOptions { sets, env: std::env::vars().collect(), ..LoadOptions::default() }
    }
}
