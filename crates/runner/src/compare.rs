//! `loadgate compare`: results files read and checked ([`crate::source::read_results`]), then put side by side by
//! [`loadgate_results::compare`] (pure; single runs are shown, changes over repetitions judged). The binary
//! prints the comparison in the format asked and writes its files.

use std::path::PathBuf;

use loadgate_results::compare::CompareOptions;
pub use loadgate_results::compare::{Against, Comparison};

use crate::error::JobError;

/// What to compare of the runs, and how, as the command line gives it.
#[derive(Debug, Clone)]
pub struct CompareRequest {
    /// A label per run, in order (at most one per file).
    pub labels: Vec<String>,
    /// As an SLO names them; empty: throughput, p50, p99.
    pub metrics: Vec<String>,
    pub against: Against,
    /// The confidence of the intervals over repetitions, from 0 to 1.
    pub confidence: f64,
    /// The band of `no change`, a fraction.
    pub noise: f64,
}

/// The runs of the results files at `paths`, every one read first, compared in that order (the first is the
/// reference of every change).
pub fn compare_files(paths: &[PathBuf], request: CompareRequest) -> Result<Comparison, JobError> {
    let runs = paths.iter().map(|p| crate::source::read_results(p)).collect::<Result<Vec<_>, _>>()?;
    if request.labels.len() > runs.len() {
        return Err(JobError::Invalid(format!(
            "{} labels for {} runs: give at most one `--label` per results file",
            request.labels.len(),
            runs.len()
        )));
    }
    let options = CompareOptions {
        metrics: loadgate_model::Metric::parse_list(&request.metrics).map_err(JobError::Invalid)?,
        labels: request.labels,
        files: paths.iter().map(|p| p.display().to_string()).collect(),
        against: request.against,
        confidence: request.confidence,
        noise: request.noise,
    };
    loadgate_results::compare::compare(&runs, &options).map_err(|e| JobError::Invalid(e.to_string()))
}
