//! The spec language's types, without YAML or templates: what a validated spec is, shared by the reader
//! (`loadgate-spec`), the plan, the engine, the results and the machine checks.
//!
//! | module | what |
//! | --- | --- |
//! | [`units`] | durations, rates, byte sizes, CPU lists, percentages: parsed from what users write, shown back |
//! | [`mod@spec`] | the validated [`Spec`]: every template rendered, every unit parsed, every matrix cell expanded |
//! | [`slo`] | SLO expressions (`p99 < 100ms`): metric, comparison, threshold |
//! | [`mod@sweep`] | sweep SLOs over a matrix scenario's cells (`knee >= 256`, `throughput_drop <= 10%`) |
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
pub mod sweep;
pub mod units;

pub use diag::{Diagnostic, Diagnostics, Severity, SpecError};
pub use generate::{Generator, Segment};
pub use slo::{AbortOnFail, Comparison, Metric, MetricKind, Slo, SloError, Threshold};
pub use spec::*;
pub use sweep::{AxisUnit, AxisValue, CellRef, CellThreshold, KneeWhich, SweepCheck, SweepSlo, SweepSpec};

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

/// Whether the target is started afresh between rounds of repetitions (`gating.restart`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Restart {
    /// One target process for the whole run.
    #[default]
    Never,
    /// A new target process for each round, so that one bad start does not decide the verdict.
    EachRound,
}

/// What an inconclusive verdict (the data cannot tell) makes of the run (`gating.on_inconclusive`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OnInconclusive {
    /// Its own outcome and exit code (5), so that CI can tell it apart.
    #[default]
    Inconclusive,
    /// Counted as an SLO failure (exit 1).
    Fail,
    /// Counted as a pass (exit 0), with the verdict still reported as inconclusive.
    Pass,
}

/// The order of the two sides in each round of an A/B comparison (`gating.order`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RoundOrder {
    /// A B, B A, A B, ...: each side goes first in half of the rounds.
    #[default]
    Abba,
    /// A seeded random order per round.
    Shuffle,
}

/// The default two-sided confidence of a verdict's interval: 90%, so that a false FAIL and a false PASS each
/// have probability at most 5% (a one-sided 95% decision), and 5 repetitions can decide a check.
pub const DEFAULT_CONFIDENCE: f64 = 0.90;

/// How gated scenario instances are repeated and judged (`gating:` in the spec).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Gating {
    /// Repetitions (rounds) of every gated scenario instance; 1 is a single run judged as before.
    pub repeat: u32,
    /// With more than `repeat`: rounds are added while a verdict is inconclusive, up to this many.
    pub max_repeat: u32,
    pub restart: Restart,
    /// The two-sided confidence of every interval, as a fraction (0.95).
    pub confidence: f64,
    pub on_inconclusive: OnInconclusive,
    pub order: RoundOrder,
}

impl Default for Gating {
    fn default() -> Self {
        Gating {
            repeat: 1,
            max_repeat: 1,
            restart: Restart::Never,
            confidence: DEFAULT_CONFIDENCE,
            on_inconclusive: OnInconclusive::Inconclusive,
            order: RoundOrder::Abba,
        }
    }
}

impl Gating {
    /// Whether this is the default (one run, no statistics): plans without a `gating` block stay as they were.
    pub fn is_default(&self) -> bool {
        self == &Gating::default()
    }
}
