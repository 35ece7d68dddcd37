//! The bounds on what reading a spec may cost, so that a spec in a pull request cannot take down the machine that
//! validates it: validating any input of up to 1 MiB takes well under a second and under 256 MB.
//!
//! Each bound is absolute (it never grows with the size of the file) and each refusal is a located error that
//! names the bound. The size of data files read by `pick_line` and `pick_csv` is the only bound a user may need to
//! raise; it is [`LoadOptions::max_data_file_bytes`](crate::LoadOptions::max_data_file_bytes).

/// The largest spec file: a spec is a few kilobytes; 1 MiB leaves room for generated ones.
pub const MAX_SPEC_BYTES: usize = 1 << 20;

/// How deeply collections may nest. A spec nests eight levels at most.
pub const MAX_DEPTH: usize = 64;

/// How many values (scalars, keys, lists and mappings) a document may hold once its aliases are expanded.
pub const MAX_NODES: usize = 100_000;

/// How many bytes of text a document may hold once its aliases are expanded.
pub const MAX_TEXT_BYTES: usize = 8 << 20;

/// The default cap on a data file read by `pick_line` or `pick_csv`.
pub const DEFAULT_MAX_DATA_FILE_BYTES: u64 = 16 << 20;

/// How many values a data file may hold (lines for `pick_line`, rows for `pick_csv`).
pub const MAX_DATA_VALUES: usize = 1_000_000;

/// The longest value a template may produce, and the longest string it may build on the way.
pub const MAX_VALUE_BYTES: usize = 1 << 20;

/// The instructions one template may execute (minijinja's fuel).
pub const TEMPLATE_FUEL: u64 = 100_000;

/// The instructions all the templates of a spec may execute together, over every matrix cell.
pub const SPEC_TEMPLATE_FUEL: u64 = 2_000_000;

/// The bytes one template may copy, compare or build (strings, lists, output).
pub const TEMPLATE_WORK_BYTES: u64 = 32 << 20;

/// The bytes all the templates of a spec may copy, compare or build together.
pub const SPEC_TEMPLATE_WORK_BYTES: u64 = 256 << 20;

/// The scenario instances a spec may expand to: the cells of every matrix together.
pub const MAX_CELLS: usize = 10_000;

/// The bytes a spec may expand to: each matrix cell is a copy of its scenario, with its data.
pub const MAX_EXPANDED_BYTES: u64 = 64 << 20;

/// The longest spec or scenario name. The spec's name names its output directory and a scenario's name its
/// report files; a file name holds at most 255 bytes, and the rest is left for matrix cells and suffixes.
pub const MAX_NAME_CHARS: usize = 100;

/// `1048576` as `1 MiB`, for messages.
pub(crate) fn human_bytes(n: u64) -> String {
    if n >= 1 << 20 && n % (1 << 20) == 0 {
        format!("{} MiB", n >> 20)
    } else if n >= 1 << 10 && n % (1 << 10) == 0 {
        format!("{} KiB", n >> 10)
    } else {
        format!("{n} bytes")
    }
}
