//! The spec language's types, without YAML or templates: what a validated spec is, shared by the reader
//! (`loadgate-spec`), the plan, the engine, the results and the machine checks.
//!
//! | module | what |
//! | --- | --- |
//! | [`units`] | durations, rates, byte sizes, CPU lists, percentages: parsed from what users write, shown back |
//! | [`mod@spec`] | the validated [`Spec`]: every template rendered, every unit parsed, every matrix cell expanded |
//! | [`slo`] | SLO expressions (`p99 < 100ms`): metric, comparison, threshold |
//! | [`generate`] | per-request values (`seq()`, `uuid()`, ...) compiled into literal text and generator slots |
//! | [`diag`], [`location`] | located diagnostics (`file:line:col`, YAML path, expected/found, fix) |
//! | [`secrets`] | which values are secret, and the [`secrets::Redactor`] every artifact is written through |

pub mod diag;
pub mod generate;
pub mod location;
pub mod secrets;
pub mod slo;
pub mod spec;
pub mod suggest;
pub mod units;

pub use diag::{Diagnostic, Diagnostics, Severity, SpecError};
pub use generate::{Generator, Segment};
pub use slo::{AbortOnFail, Comparison, Metric, MetricKind, Slo, SloError, Threshold};
pub use spec::*;

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
