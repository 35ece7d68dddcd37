//! The spec language's types, without YAML or templates: what a validated spec is, shared by the reader
//! (`loadgate-spec`), the plan, the engine, the results and the machine checks.
//!
//! | module | what |
//! | --- | --- |
//! | [`units`] | durations, rates, byte sizes, CPU lists, percentages: parsed from what users write, shown back |
//! | [`mod@spec`] | the validated [`Spec`]: every template rendered, every unit parsed, every matrix cell expanded |
//! | [`check`] | response checks, captures, session variables and verification (`check:`, `capture:`, `verify:`) |
//! | [`profile`] | the `profile:` section: the built-in sampler, an external profiler or a pprof endpoint |
//! | [`slo`] | SLO expressions (`p99 < 100ms`): metric, comparison, threshold |
//! | [`history`] | the `history:` section: drift and change-point SLOs judged against a store of earlier runs |
//! | [`mod@sweep`] | sweep SLOs over a matrix scenario's cells (`knee >= 256`, `throughput_drop <= 10%`) |
//! | [`generate`] | per-request values (`seq()`, `uuid()`, ...) compiled into literal text and generator slots |
//! | [`diag`], [`location`] | located diagnostics (`file:line:col`, YAML path, expected/found, fix) |
//! | [`replay`] | the `load: { replay: ... }` section: a log or HAR file, its format, speed, window, filters |
//! | [`secrets`] | which values are secret, and the [`secrets::Redactor`] every artifact is written through |
//! | [`yaml`] | YAML scalars for what loadgate writes (imports, `--print-spec`, Kubernetes manifests) |

pub mod check;
pub mod diag;
pub mod generate;
pub mod history;
pub mod location;
pub mod output;
pub mod profile;
pub mod random;
pub mod replay;
pub mod secrets;
pub mod slo;
pub mod spec;
pub mod suggest;
pub mod sweep;
pub mod units;
pub mod url;
pub mod yaml;

pub use check::{
    Capture, CaptureSource, Check, CheckKind, Expected, FailedChecks, JsonExpected, JsonOp, JsonSelector, JsonStep,
    JsonType, Pattern, StatusSet, TextOp, Variable, Verify, VerifyScenarios,
};
pub use diag::{Diagnostic, Diagnostics, Severity, SpecError};
pub use generate::{Generator, Segment};
pub use history::{Detection, HistoryCheckKind, HistoryGate, HistoryLimit, HistoryReference};
pub use random::splitmix64;
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
    /// Spends a set CPU time per request in named functions (`work`, plus `slow_path` in a callee of
    /// `slow_path`): a server whose CPU profile is known, for profiles and CPU-per-request gates.
    Cpu,
}

/// A built-in kind's name as specs and `loadgate serve --kind` write it.
pub fn builtin_kind_name(kind: BuiltinKind) -> &'static str {
    match kind {
        BuiltinKind::Plaintext => "plaintext",
        BuiltinKind::Echo => "echo",
        BuiltinKind::Delay => "delay",
        BuiltinKind::Cpu => "cpu",
    }
}

/// How fast a phase opens its keep-alive connections before it starts measuring (`connect_rate`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ConnectRate {
    /// Paced from what the target takes: 4 connects per millisecond per worker at first, halved each time a
    /// connect stalls (a SYN the target's full accept queue dropped), which is retried at once.
    #[default]
    Auto,
    /// At most this many connects per second over all workers (stalled connects are retried, never slowed).
    Rate(crate::units::Rate),
    /// All at once, as wrk does: stalled connects wait for the kernel's SYN retransmits.
    Unlimited,
}

impl ConnectRate {
    pub fn is_auto(&self) -> bool {
        *self == ConnectRate::Auto
    }
}

impl std::fmt::Display for ConnectRate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ConnectRate::Auto => f.write_str("auto"),
            ConnectRate::Rate(r) => write!(f, "{r}"),
            ConnectRate::Unlimited => f.write_str("unlimited"),
        }
    }
}

impl std::str::FromStr for ConnectRate {
    type Err = crate::units::UnitError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim() {
            "auto" => Ok(ConnectRate::Auto),
            "unlimited" => Ok(ConnectRate::Unlimited),
            other => other.parse().map(ConnectRate::Rate).map_err(|_| crate::units::UnitError {
                expected: "`auto`, `unlimited`, or a rate such as `2000/s`",
                help: Some("`auto` paces connects from what the target takes; a rate caps them".into()),
            }),
        }
    }
}

/// How an open load's pacer waits for a request's intended send time (`hardware.generator.pacing`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Pacing {
    /// Sleep until the time (the kernel's wake-up decides how late), waking at most once a millisecond for it.
    #[default]
    Default,
    /// For a pinned, dedicated generator core: wake ahead of every request's time and poll the sockets until
    /// it is due, at the cost of that core's CPU (reported per worker as `spin_seconds`).
    Precise,
}

impl Pacing {
    pub fn is_default(&self) -> bool {
        *self == Pacing::Default
    }

    /// `default` or `precise`, as the spec and `--pacing` spell it.
    pub fn name(&self) -> &'static str {
        match self {
            Pacing::Default => "default",
            Pacing::Precise => "precise",
        }
    }
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

/// When the responses of a pipelined batch are read (`pipeline_reads`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PipelineReads {
    /// Each response as soon as it arrives: each completes at the arrival of its own last bytes.
    #[default]
    Each,
    /// A batch at once, when all of it can have arrived: one wake-up and one read per batch, and its responses
    /// complete when its last bytes arrived (as wrk records a pipelined batch).
    Batch,
}

impl PipelineReads {
    pub fn is_each(&self) -> bool {
        *self == PipelineReads::Each
    }

    pub fn name(&self) -> &'static str {
        match self {
            PipelineReads::Each => "each",
            PipelineReads::Batch => "batch",
        }
    }
}

/// Which HTTP version the engine speaks to the target (`target.protocol`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Protocol {
    /// HTTP/1.1 (ALPN `http/1.1` over TLS).
    #[default]
    Http1,
    /// HTTP/2: h2 over TLS (ALPN `h2`), h2c with prior knowledge over plain TCP.
    Http2,
    /// Over TLS, whatever the server picks by ALPN (`h2` offered first); HTTP/1.1 over plain TCP.
    Auto,
}

impl Protocol {
    pub fn is_http1(&self) -> bool {
        *self == Protocol::Http1
    }
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
    /// Duet rounds: both sides loaded at once, at the same intended instants, from the same workers, so noise
    /// that hits the machine hits both (Bulej et al., "Duet Benchmarking", ICPE 2020). Which side is the
    /// workers' first lane alternates A B, B A, ... between rounds, and the order of each instant's two sends is
    /// a keyed draw. Open loads only; the generator sends twice the load.
    Duet,
}

impl RoundOrder {
    /// The name the spec writes (`gating.order`).
    pub fn name(self) -> &'static str {
        match self {
            RoundOrder::Abba => "abba",
            RoundOrder::Shuffle => "shuffle",
            RoundOrder::Duet => "duet",
        }
    }
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
    /// Whether the spec wrote `max_repeat` (else it is `repeat`'s default): `--repeat N` then moves it with
    /// `repeat` rather than turning sequential mode on. Not part of the plan (its hash never sees it).
    #[serde(skip)]
    pub max_repeat_given: bool,
    pub restart: Restart,
    /// The two-sided confidence of every interval, as a fraction (0.95).
    pub confidence: f64,
    pub on_inconclusive: OnInconclusive,
    pub order: RoundOrder,
    /// How many rounds of each gated instance that were invalid as a measurement (the generator limited them)
    /// are discarded, with their A/B pair, and run again before the instance is called invalid.
    pub rerun_invalid: u32,
    /// `gating.detect`: the smallest relative change (0.10 for 10%) a gated check must not let pass; the runner
    /// plans the rounds (their length and number) to tell it within `budget`. `None`: rounds as `repeat` and
    /// `max_repeat` say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detect: Option<f64>,
    /// `gating.budget`: the most load time (both sides, warmups included) one gated instance's verdict may take;
    /// sequential mode adds rounds up to it and never past it. [`DEFAULT_BUDGET`] with `detect` alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<units::Duration>,
}

impl Default for Gating {
    fn default() -> Self {
        Gating {
            repeat: 1,
            max_repeat: 1,
            max_repeat_given: false,
            restart: Restart::Never,
            confidence: DEFAULT_CONFIDENCE,
            on_inconclusive: OnInconclusive::Inconclusive,
            order: RoundOrder::Abba,
            rerun_invalid: DEFAULT_RERUN_INVALID,
            detect: None,
            budget: None,
        }
    }
}

/// The budget of `gating.detect` without `gating.budget`: the three minutes of load teams give a CI gate.
pub const DEFAULT_BUDGET: std::time::Duration = std::time::Duration::from_secs(180);

/// The pilot rounds (`gating.repeat`) of `gating.detect` or `gating.budget` when the spec gives no `repeat`:
/// enough for the first look to decide a clear case at its share of the confidence, and for a spread.
pub const DEFAULT_PILOT: u32 = 8;

/// The power the planner of `gating.detect` plans for: a change of `detect` FAILs in 90% of runs.
pub const DEFAULT_POWER: f64 = 0.90;

/// Rounds invalid as a measurement that are run again per gated instance unless `gating.rerun_invalid` says
/// otherwise: enough for a noisy runner's occasional stall, few enough that a generator that cannot carry the
/// load is called out within a few rounds.
pub const DEFAULT_RERUN_INVALID: u32 = 3;

impl Gating {
    /// Whether this is the default (one run, no statistics): plans without a `gating` block stay as they were.
    pub fn is_default(&self) -> bool {
        Gating { max_repeat_given: false, ..self.clone() } == Gating::default()
    }

    /// `--repeat N`: `N` rounds. A `max_repeat` the spec left to its default follows (`N`, no sequential mode);
    /// one the spec wrote stays, and must be at least `N`.
    pub fn set_repeat(&mut self, n: u32) -> Result<(), String> {
        if self.max_repeat_given && self.max_repeat < n {
            return Err(format!(
                "--repeat {n} is above the spec's `gating.max_repeat: {}`: raise `max_repeat` in the spec, or give \
                 --repeat {} or fewer",
                self.max_repeat, self.max_repeat
            ));
        }
        self.repeat = n;
        if !self.max_repeat_given {
            self.max_repeat = n;
        }
        Ok(())
    }

    /// Whether rounds may be added while a verdict is inconclusive (sequential mode): up to `max_repeat`, or
    /// within the `budget`.
    pub fn sequential(&self) -> bool {
        self.max_repeat > self.repeat || self.budgeted()
    }

    /// Whether the rounds are planned within a load-time budget (`gating.detect` or `gating.budget`): looks then
    /// count load in units of one pilot round (per instance: see [`looks_between`]).
    pub fn budgeted(&self) -> bool {
        self.budget.is_some()
    }

    /// The rounds after which a gated instance's verdicts are looked at: `repeat`, then each look about
    /// [`LOOK_GROWTH`] times the one before, then `max_repeat`. Without sequential mode, `repeat` alone.
    pub fn looks(&self) -> Vec<u32> {
        looks(self.repeat.max(1), self.max_repeat.max(self.repeat).max(1))
    }

    /// The two-sided confidence each look is judged at, so that the whole sequence keeps `confidence`: every
    /// look is a new chance of a false verdict, and the chances add up at most (Bonferroni over the looks), so
    /// the one-sided error `(1 - confidence) / 2` is split between them, half to the last look (which decides
    /// the runs that need every round) and half evenly between the earlier ones. One look keeps `confidence`.
    pub fn look_confidence(&self, look: usize) -> f64 {
        let k = self.looks().len();
        1.0 - (1.0 - self.confidence) * look_share(look, k)
    }

    /// The look a verdict after `rounds` rounds is judged at: the last look at or before it (the first look
    /// before `repeat` rounds, when a report is written part way).
    pub fn look_at(&self, rounds: u32) -> usize {
        self.looks().iter().rposition(|l| *l <= rounds).unwrap_or(0)
    }
}

/// Who reads [`Gating::sentence`]: `loadgate plan` before a run (per phase), or a run's report after it (per
/// instance, with the A/B candidate).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GatingReader {
    Plan,
    Report,
}

impl Gating {
    /// The one sentence that says how gated instances are repeated and judged: the repetitions, sequential
    /// mode's `looks` (the rounds after which verdicts are judged), the confidence, what an inconclusive verdict
    /// makes of the run and whether the target restarts each round. The plan's also says how many invalid rounds
    /// are run again (it shows the candidate on a line of its own); the report's names the A/B `candidate` and
    /// the order of its rounds.
    pub fn sentence(&self, looks: &[u32], candidate: Option<&str>, reader: GatingReader) -> String {
        let plan = reader == GatingReader::Plan;
        let mut text = format!(
            "{} repetition{} per gated {}",
            self.repeat,
            if self.repeat == 1 { "" } else { "s" },
            if plan { "phase" } else { "instance" }
        );
        if self.max_repeat > self.repeat {
            text.push_str(&if plan {
                format!(
                    " (up to {} while inconclusive, looking after {} rounds)",
                    self.max_repeat,
                    looks.iter().map(u32::to_string).collect::<Vec<_>>().join(", ")
                )
            } else {
                format!(
                    " (up to {} while a verdict is inconclusive, looking after {} rounds, each look at its share of \
                     the confidence)",
                    self.max_repeat,
                    looks_text(looks)
                )
            });
        }
        if let Some(budget) = self.budget {
            let goal = match self.detect {
                Some(d) => format!("to tell a change of {}%", units::trim_float(d * 100.0)),
                None => "while inconclusive".to_owned(),
            };
            text.push_str(&format!(" as a pilot, then rounds planned {goal} within {budget} of load"));
        }
        let inconclusive = match (self.on_inconclusive, reader) {
            (OnInconclusive::Inconclusive, _) => "exits 5",
            (OnInconclusive::Fail, GatingReader::Plan) => "fails (exit 1)",
            (OnInconclusive::Pass, GatingReader::Plan) => "passes (exit 0)",
            (OnInconclusive::Fail, GatingReader::Report) => "counts as a failure (exit 1)",
            (OnInconclusive::Pass, GatingReader::Report) => "counts as a pass (exit 0)",
        };
        let each_round = self.restart == Restart::EachRound;
        if plan {
            let rerun = match self.rerun_invalid {
                0 => "an invalid round makes the phase invalid".to_owned(),
                1 => "1 invalid round run again".to_owned(),
                n => format!("up to {n} invalid rounds run again"),
            };
            let restart = if each_round { ", target restarted each round" } else { "" };
            let confidence = units::trim_float(self.confidence * 100.0);
            text.push_str(&format!(", {confidence}% confidence, inconclusive {inconclusive}{restart}, {rerun}"));
        } else {
            text.push_str(&format!(
                ", {:.0}% confidence per check (Holm across a scenario's checks); inconclusive {inconclusive}",
                self.confidence * 100.0
            ));
            if let Some(c) = candidate {
                match self.order {
                    RoundOrder::Duet => text.push_str(&format!(
                        "; A/B against the candidate {c} in duet rounds (both loaded at once, the generator sending \
                         twice the load)"
                    )),
                    order => {
                        text.push_str(&format!("; A/B against the candidate {c}, rounds in {} order", order.name()))
                    }
                }
            }
            if each_round {
                text.push_str("; the target restarts for each round");
            }
        }
        text
    }
}

/// `6, 9 and 16`.
fn looks_text(looks: &[u32]) -> String {
    let mut words: Vec<String> = looks.iter().map(u32::to_string).collect();
    match words.len() {
        0 => String::new(),
        1 => words.remove(0),
        _ => {
            let last = words.pop().unwrap_or_default();
            format!("{} and {last}", words.join(", "))
        }
    }
}

/// Whether an SLO is judged over repetitions (one value per repetition, with an interval): latency and
/// throughput of the whole instance with `<`, `<=`, `>` or `>=`. Counts, rates (the check metrics `checks` and
/// `check_failures` among them), `==` and per-request SLOs are judged on the merge, as in one run.
pub fn judged_over_repetitions(slo: &Slo) -> bool {
    slo.request.is_none()
        && slo.comparison != Comparison::Eq
        && matches!(
            slo.metric,
            Metric::Percentile(_)
                | Metric::Max
                | Metric::Mean
                | Metric::ConnectPercentile(_)
                | Metric::ConnectMax
                | Metric::ConnectMean
                | Metric::Throughput
                | Metric::Capacity
                | Metric::TargetCpuPerRequest
        )
}

/// How a check compares its repetitions, for [`fewest_rounds`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sampling {
    /// One set of values (an absolute limit: the median's sign test) or paired rounds (A/B: Wilcoxon's
    /// signed-rank test): the most extreme outcome of `n` has probability `2^-n`.
    OneSetOrPaired,
    /// Against a stored baseline of `baseline` repetitions (Mann-Whitney), or as many as the candidate's when
    /// `None`: the most extreme outcome has probability `1 / C(baseline + n, n)`.
    Unpaired { baseline: Option<u32> },
}

/// The most rounds [`fewest_rounds`] looks at.
const FEWEST_ROUNDS_MAX: u32 = 1100;

/// The fewest rounds whose most extreme outcome has probability at most `alpha` (one-sided) under the check's
/// rank test: with fewer, no interval reaches the confidence `1 - 2 alpha` and no verdict can be reached at that
/// level, however clear the data. A check judged at confidence `c` decides a PASS at `alpha = (1 - c) / 2`; a
/// FAIL among `m` checks of one instance at `(1 - c) / (2 m)` (Holm's first step). `None` when more than
/// 1,100 rounds would be needed (or `alpha` is not in (0, 1)).
pub fn fewest_rounds(sampling: Sampling, alpha: f64) -> Option<u32> {
    if !(alpha > 0.0 && alpha < 1.0) {
        return None;
    }
    // A relative tolerance for rounded levels (`1 - 0.9` is not `0.1`), as the statistics use.
    let reaches = |tail: f64| tail <= alpha * (1.0 + 1e-9);
    (1..=FEWEST_ROUNDS_MAX).find(|&n| {
        let tail = match sampling {
            Sampling::OneSetOrPaired => 0.5f64.powi(n as i32),
            Sampling::Unpaired { baseline } => {
                let m = baseline.unwrap_or(n);
                // 1 / C(m + n, n), as a product that stays finite.
                (1..=n.min(m)).fold(1.0f64, |t, k| t * f64::from(k) / f64::from(m.max(n) + k))
            }
        };
        reaches(tail)
    })
}

/// How much each look of sequential mode grows the rounds: 1.5 times the look before.
pub const LOOK_GROWTH: f64 = 1.5;

/// The looks from `first` to `last` (rounds, or a budgeted instance's units of load): `first`, then each about
/// [`LOOK_GROWTH`] times the one before, then `last`. Fixed before any data, as the error split needs.
pub fn looks_between(first: u32, last: u32) -> Vec<u32> {
    looks(first.max(1), last.max(first).max(1))
}

/// The two-sided confidence look `look` of `k` is judged at, so that all `k` keep `confidence` together (see
/// [`Gating::look_confidence`]).
pub fn share_of_confidence(confidence: f64, look: usize, k: usize) -> f64 {
    1.0 - (1.0 - confidence) * look_share(look, k)
}

fn looks(repeat: u32, max_repeat: u32) -> Vec<u32> {
    let mut out = vec![repeat];
    while let Some(&last) = out.last() {
        if last >= max_repeat {
            break;
        }
        let next = ((f64::from(last) * LOOK_GROWTH).ceil() as u32).max(last + 1);
        // A last step shorter than half a growth step is folded into the final look.
        if f64::from(next) * (1.0 + (LOOK_GROWTH - 1.0) / 2.0) > f64::from(max_repeat) {
            out.push(max_repeat);
        } else {
            out.push(next);
        }
    }
    out
}

/// The share of the error budget look `look` of `k` gets: everything for one look; else half for the last and
/// the other half evenly over the others.
fn look_share(look: usize, k: usize) -> f64 {
    if k <= 1 {
        1.0
    } else if look + 1 >= k {
        0.5
    } else {
        0.5 / (k - 1) as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_gating_sentence_reads_as_the_plan_and_the_report_wrote_it() {
        let g = Gating {
            repeat: 5,
            max_repeat: 20,
            confidence: 0.95,
            on_inconclusive: OnInconclusive::Fail,
            restart: Restart::EachRound,
            order: RoundOrder::Shuffle,
            rerun_invalid: 1,
            ..Gating::default()
        };
        let looks = [5, 8, 12, 20];
        assert_eq!(
            g.sentence(&looks, None, GatingReader::Plan),
            "5 repetitions per gated phase (up to 20 while inconclusive, looking after 5, 8, 12, 20 rounds), 95% \
             confidence, inconclusive fails (exit 1), target restarted each round, 1 invalid round run again"
        );
        assert_eq!(
            g.sentence(&looks, Some("http://b"), GatingReader::Report),
            "5 repetitions per gated instance (up to 20 while a verdict is inconclusive, looking after 5, 8, 12 and \
             20 rounds, each look at its share of the confidence), 95% confidence per check (Holm across a \
             scenario's checks); inconclusive counts as a failure (exit 1); A/B against the candidate http://b, \
             rounds in shuffle order; the target restarts for each round"
        );
        let one = Gating { repeat: 1, max_repeat: 1, on_inconclusive: OnInconclusive::Pass, rerun_invalid: 0, ..g };
        assert_eq!(
            one.sentence(&[1], None, GatingReader::Plan),
            "1 repetition per gated phase, 95% confidence, inconclusive passes (exit 0), target restarted each \
             round, an invalid round makes the phase invalid"
        );
    }

    #[test]
    fn the_gating_sentence_names_the_change_and_the_budget() {
        let g = Gating {
            repeat: 8,
            max_repeat: 8,
            detect: Some(0.1),
            budget: Some(units::Duration(DEFAULT_BUDGET)),
            ..Gating::default()
        };
        let text = g.sentence(&[8], None, GatingReader::Report);
        assert!(
            text.starts_with(
                "8 repetitions per gated instance as a pilot, then rounds planned to tell a change of 10% within 3m of \
                 load"
            ),
            "{text}"
        );
    }

    fn gating(repeat: u32, max_repeat: u32) -> Gating {
        Gating { repeat, max_repeat, ..Gating::default() }
    }

    #[test]
    fn looks_grow_by_half_from_repeat_to_max_repeat() {
        assert_eq!(gating(12, 160).looks(), vec![12, 18, 27, 41, 62, 93, 160]);
        assert_eq!(gating(6, 16).looks(), vec![6, 9, 16]);
        assert_eq!(gating(5, 6).looks(), vec![5, 6]);
        assert_eq!(gating(5, 5).looks(), vec![5]);
        assert_eq!(gating(1, 1).looks(), vec![1]);
        assert_eq!(gating(1, 3).looks(), vec![1, 2, 3]);
    }

    #[test]
    fn the_looks_share_the_error_budget_and_one_look_keeps_it() {
        let one = gating(5, 5);
        assert_eq!(one.look_confidence(0), 0.90);
        let g = gating(12, 160);
        let k = g.looks().len();
        let spent: f64 = (0..k).map(|l| 1.0 - g.look_confidence(l)).sum();
        assert!((spent - 0.10).abs() < 1e-12, "the looks spend exactly the budget: {spent}");
        assert!((g.look_confidence(k - 1) - 0.95).abs() < 1e-12, "half the budget at the last look");
        assert!(g.look_confidence(0) > 0.99);
    }

    #[test]
    fn repeat_moves_an_implicit_max_repeat_and_keeps_a_written_one() {
        let mut g = gating(5, 5);
        g.set_repeat(2).unwrap();
        assert_eq!((g.repeat, g.max_repeat), (2, 2), "no sequential mode from --repeat alone");
        assert!(!g.sequential());
        g.set_repeat(8).unwrap();
        assert_eq!((g.repeat, g.max_repeat), (8, 8));
        let mut g = Gating { max_repeat_given: true, ..gating(5, 12) };
        g.set_repeat(2).unwrap();
        assert_eq!((g.repeat, g.max_repeat), (2, 12));
        let err = g.set_repeat(13).unwrap_err();
        assert!(err.contains("--repeat 13 is above the spec's `gating.max_repeat: 12`"), "{err}");
        assert_eq!((g.repeat, g.max_repeat), (2, 12), "unchanged");
        assert!(Gating { max_repeat_given: true, ..Gating::default() }.is_default());
    }

    #[test]
    fn fewest_rounds_are_where_the_extreme_outcome_reaches_alpha() {
        let one = Sampling::OneSetOrPaired;
        // 90%: 1/32 <= 5%; 95%: 1/64 <= 2.5%; two checks at 90% FAIL at 2.5%.
        assert_eq!(fewest_rounds(one, 0.05), Some(5));
        assert_eq!(fewest_rounds(one, 0.025), Some(6));
        assert_eq!(fewest_rounds(one, 0.05 / 3.0), Some(6));
        assert_eq!(fewest_rounds(one, 0.05 / 4.0), Some(7));
        assert_eq!(fewest_rounds(one, 0.005), Some(8));
        // Balanced Mann-Whitney: C(6, 3) = 20, C(8, 4) = 70.
        let balanced = Sampling::Unpaired { baseline: None };
        assert_eq!(fewest_rounds(balanced, 0.05), Some(3));
        assert_eq!(fewest_rounds(balanced, 0.025), Some(4));
        // Against one stored value: 1 / (n + 1).
        assert_eq!(fewest_rounds(Sampling::Unpaired { baseline: Some(1) }, 0.05), Some(19));
        assert_eq!(fewest_rounds(Sampling::Unpaired { baseline: Some(5) }, 0.05), Some(2), "C(7, 2) = 21");
        assert_eq!(fewest_rounds(one, 0.0), None);
    }

    #[test]
    fn a_verdict_is_judged_at_the_last_look_it_reached() {
        let g = gating(12, 160);
        assert_eq!(g.look_at(3), 0);
        assert_eq!(g.look_at(12), 0);
        assert_eq!(g.look_at(17), 0);
        assert_eq!(g.look_at(18), 1);
        assert_eq!(g.look_at(160), 6);
    }
}
