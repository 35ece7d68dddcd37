//! `results.json`: the versioned serialization of [`RunResults`] and its JSON Schema.

use crate::model::{RunResults, RESULTS_SCHEMA_VERSION};

/// Why results could not be written or read.
#[derive(Debug, thiserror::Error)]
pub enum ResultsError {
    /// The text is not JSON, or not results of this version.
    #[error("cannot read results: {0}")]
    Json(#[from] serde_json::Error),
    /// The JSON is not a loadgate results file.
    #[error("not a loadgate results file: {0}")]
    NotResults(String),
    /// The file was written in a version of the format this loadgate does not read.
    #[error(
        "results have schema_version {found}{written_by}; this loadgate ({reader}) reads schema_version {supported}"
    )]
    UnsupportedVersion {
        /// The version in the file.
        found: u64,
        /// The version this build reads.
        supported: u32,
        /// ` (written by loadgate X)` when the file says.
        written_by: String,
        /// This loadgate's version.
        reader: &'static str,
    },
    /// A histogram could not be encoded.
    #[error("{0}")]
    Histogram(String),
    /// Results that cannot be merged.
    #[error("cannot merge: {0}")]
    Merge(String),
}

/// Serializes results as pretty-printed JSON, ending with a newline.
pub fn to_json(results: &RunResults) -> Result<String, ResultsError> {
    let mut text = serde_json::to_string_pretty(results)?;
    text.push('\n');
    Ok(text)
}

/// [`to_json`]'s text written to `w` as it is made, without holding it in memory (a long run's checkpoint).
pub fn write_json(results: &RunResults, mut w: impl std::io::Write) -> std::io::Result<()> {
    serde_json::to_writer_pretty(&mut w, results)?;
    w.write_all(b"\n")
}

/// Reads `results.json`, refusing a `schema_version` other than [`RESULTS_SCHEMA_VERSION`] with a message that
/// names both versions.
pub fn from_json(text: &str) -> Result<RunResults, ResultsError> {
    /// The two keys read before the rest (the whole document is never held as a `Value`: a results file is
    /// untrusted, and its typed reading buffers what it must already).
    #[derive(serde::Deserialize)]
    struct Header {
        schema_version: Option<serde_json::Value>,
        loadgate_version: Option<serde_json::Value>,
    }
    if !text.trim_start().starts_with('{') {
        serde_json::from_str::<serde::de::IgnoredAny>(text)?;
        return Err(ResultsError::NotResults("the top level is not an object".to_owned()));
    }
    let header: Header = serde_json::from_str(text)?;
    let version = match &header.schema_version {
        None => return Err(ResultsError::NotResults("it has no `schema_version`".to_owned())),
        Some(v) => v
            .as_u64()
            .ok_or_else(|| ResultsError::NotResults(format!("`schema_version` is {v}, not a whole number")))?,
    };
    if version != u64::from(RESULTS_SCHEMA_VERSION) {
        let written_by = header
            .loadgate_version
            .as_ref()
            .and_then(|v| v.as_str())
            .map(|v| format!(" (written by loadgate {v})"))
            .unwrap_or_default();
        return Err(ResultsError::UnsupportedVersion {
            found: version,
            supported: RESULTS_SCHEMA_VERSION,
            written_by,
            reader: env!("CARGO_PKG_VERSION"),
        });
    }
    Ok(serde_json::from_str(text)?)
}

/// The JSON Schema of `results.json`, generated from the Rust types (their doc comments are the descriptions).
/// Committed as `schemas/results.schema.json`.
pub fn json_schema() -> String {
    let schema = schemars::schema_for!(RunResults);
    let mut text = serde_json::to_string_pretty(&schema).unwrap_or_default();
    text.push('\n');
    text
}

#[cfg(test)]
mod tests {
    #[test]
    fn written_as_it_is_made_is_the_same_text() {
        let run = crate::fixture::sample_run();
        let mut streamed = Vec::new();
        super::write_json(&run, &mut streamed).expect("write");
        assert_eq!(String::from_utf8(streamed).expect("utf-8"), super::to_json(&run).expect("json"));
    }
}
