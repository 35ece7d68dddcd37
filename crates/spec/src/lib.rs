//! loadgate's spec language: load a YAML spec, render its templates, validate it into a typed [`Spec`].

pub mod slo;
pub mod suggest;
pub mod units;

pub use slo::{AbortOnFail, Comparison, Metric, MetricKind, Slo, SloError, Threshold};

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
