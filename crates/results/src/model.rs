//! The versioned results model: what a run measured, how valid the measurement is, and the verdicts.
//!
//! Everything a report shows comes from here; nothing here knows the engine. The engine's records (counts,
//! histograms, summaries, the timeline, ...) are `loadgate_measure`'s, re-exported here. Latencies are in
//! microseconds.

use std::collections::BTreeMap;
use std::ops::{Deref, DerefMut};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub use loadgate_measure::{
    nearest_rank, new_histogram, value_at_percentile, ByteCounts, CheckExample, CheckStats, CheckedResponses,
    ConnectionOpening, ConnectionStats, CpuMapping, ErrorCounts, Histograms, HistogramsAddError, Http2Stats,
    LatencySummary, LoadSummary, Machine, OpeningFailures, PhaseMeasurement, Pinning, Problem, RequestBreakdown,
    RequestCounts, ResourceSample, StatusCounts, TargetExit, TimelinePoint, TlsErrorCounts, TlsErrorKind, TlsStats,
    Validity, WorkerStats, HISTOGRAM_MAX_US, HISTOGRAM_SIGFIG, SUMMARY_PERCENTILES,
};

/// The version of `results.json`. Bump on any change that an older reader would misread.
pub const RESULTS_SCHEMA_VERSION: u32 = 1;

/// The contents of `results.json`: everything one run of one spec measured, and its outcome.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[schemars(title = "loadgate results")]
pub struct RunResults {
    /// The version of this format, 1; readers refuse versions they do not know.
    #[schemars(extend("const" = 1))]
    pub schema_version: u32,
    /// The version of loadgate that wrote the file.
    pub loadgate_version: String,
    /// The spec that ran.
    pub spec: SpecInfo,
    /// The run's own identity, made when it started: a UUIDv7 (`0193a1b2-...`); a merged run's is a UUIDv8
    /// derived from its shards' ids in sorted order ([`crate::identity::merged`]), so merging the same shards
    /// twice gives the same id. The history keys runs by it. Absent in files written before it existed (the
    /// history then derives an identity from the plan hash, the start and the host).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// RFC 3339 UTC.
    pub started_at: String,
    /// RFC 3339 UTC; `None` while the run is still going (results are written after every phase).
    pub finished_at: Option<String>,
    /// The machine the generator ran on.
    pub machine: Machine,
    /// The CPU pinning asked for and applied.
    pub pinning: Pinning,
    /// The server under test.
    pub target: TargetInfo,
    /// One entry per scenario instance that ran (or started), in run order.
    pub scenarios: Vec<ScenarioResult>,
    /// The verdict on the whole run and the exit code it maps to.
    pub outcome: Outcome,
    /// One entry per matrix scenario with two cells or more, in run order, with its knee. Derived from
    /// `scenarios` by [`crate::sweeps`] (see `results::knee` for the rules); empty in files written before it
    /// existed, in which case reports derive it themselves.
    #[serde(default)]
    pub sweeps: Vec<Sweep>,
    /// How gated scenarios were repeated and judged; absent for a run of single repetitions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gating: Option<GatingInfo>,
    /// The scenario instances of the plan that never ran because the run stopped before them (an
    /// `abort_on_fail` SLO, Ctrl-C, the target's death), in plan order, each with the reason. Empty when every
    /// instance ran.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_run: Vec<NotRun>,
    /// A shard result (`loadgate run SPEC --shard I/N`): which slice of the plan this generator ran, and when
    /// it started. `loadgate merge` adds the shard results of one run into one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<ShardInfo>,
    /// A run merged from shard results (`loadgate merge`, `loadgate run --shards N`): every shard's slice and
    /// start, in slice order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub shards: Vec<ShardInfo>,
    /// A run judged against its history (`history:` in the spec, `run --history STORE`): the series behind
    /// each history verdict, this run last, with their change points. Empty otherwise.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub history: Vec<crate::history::HistorySeries>,
    /// The verification before the load (`verify:`): each verified scenario, in plan order, with its requests
    /// sent once and checked and the first failure. Empty when nothing was verified.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub verification: Vec<VerifiedScenario>,
    /// Set in a checkpoint (`results.partial.json`, written every `run --checkpoint` interval while the run
    /// goes): the results the run had when it was written, the instance in progress with what it had measured
    /// so far. A run that finishes writes `results.json` without it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint: Option<Checkpoint>,
}

/// When and where in the run a checkpoint was written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Checkpoint {
    /// RFC 3339 UTC.
    pub written_at: String,
    /// Seconds from the run's start.
    pub run_seconds: f64,
    /// The scenario instance that was running (its entry in `scenarios` is what it had measured by then:
    /// counts, latency histograms and the timeline of its full seconds, `aborted` saying it was still running);
    /// `None` between instances.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub in_progress: Option<String>,
}

/// One verified scenario: how many requests it sent, how many held every check, and why it failed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct VerifiedScenario {
    /// The scenario (the phase's name).
    pub name: String,
    /// Requests sent (a session's steps each count).
    pub sent: u64,
    /// Responses that held every check (or, without checks, were 2xx).
    pub passed: u64,
    /// The first failure, for people: `GET /html returned 200 text/html; charset=utf-8, expected Content-Type
    /// matching `^application/json`; body starts: <!DOCTYPE html>...`. `None` when every check held.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

impl RunResults {
    /// A run that has just started: which loadgate, which spec, when, on which machine, pinned how; no scenario
    /// yet, no target, the outcome `incomplete` and every optional part empty. Every place that starts a
    /// `RunResults` goes through here, so a new field gets its starting value in one place.
    pub fn new(
        loadgate_version: String,
        spec: SpecInfo,
        started_at: String,
        machine: Machine,
        pinning: Pinning,
    ) -> Self {
        RunResults {
            schema_version: RESULTS_SCHEMA_VERSION,
            loadgate_version,
            spec,
            id: None,
            started_at,
            finished_at: None,
            machine,
            pinning,
            target: TargetInfo::default(),
            scenarios: Vec::new(),
            outcome: Outcome::in_progress(),
            sweeps: Vec::new(),
            gating: None,
            not_run: Vec::new(),
            shard: None,
            shards: Vec::new(),
            history: Vec::new(),
            checkpoint: None,
            verification: Vec::new(),
        }
    }
}

/// One shard of a run on several generators.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ShardInfo {
    /// The slice, from 1.
    pub index: u32,
    /// How many shards the run has.
    pub count: u32,
    /// The identity shared by the shards of one run (`--run-id`, `LOADGATE_RUN_ID`).
    pub run_id: String,
    /// The host the shard ran on.
    #[serde(default)]
    pub host: String,
    /// When the shards were to start their first phase (RFC 3339 UTC, milliseconds): `--start-at`, or the
    /// barrier's common start; `None` when the shard started on its own.
    #[serde(default)]
    pub planned_start: Option<String>,
    /// The shard's first phase started this long after `planned_start`, in milliseconds, by this host's clock
    /// (negative: early).
    #[serde(default)]
    pub start_skew_ms: Option<f64>,
    /// The skew exceeded [`crate::shards::LATE_AFTER_MS`]: the shard's load did not overlap the others' as
    /// planned, and a merge that includes it is invalid as a measurement.
    #[serde(default)]
    pub late: bool,
    /// The shard's own outcome (`passed`, `invalid_measurement`, ...), judged on its slice alone.
    #[serde(default)]
    pub status: Option<OutcomeStatus>,
    /// The generator CPUs the shard's workers ran on (its `pinning.generator_applied`; `run --shards N` gives
    /// each local shard a disjoint part of the spec's); absent when unpinned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpus: Option<String>,
}

/// A scenario instance of the plan that did not run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct NotRun {
    /// The position of the instance in the plan, from 0.
    pub index: usize,
    /// `plaintext[connections=256]`.
    pub name: String,
    /// The scenario key.
    pub scenario: String,
    /// `false` for warmup and primer phases.
    pub gate: bool,
    /// Why it did not run: `the run stopped after warmup breached an abort_on_fail SLO`.
    pub reason: String,
}

/// How a run repeated and judged its gated scenarios (the spec's `gating`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct GatingInfo {
    /// Repetitions planned per gated scenario instance (more may have run in sequential mode).
    pub repeat: u32,
    /// The most repetitions sequential mode may run.
    pub max_repeat: u32,
    /// Sequential mode's looks: the repetition counts after which the verdicts were judged (and the run could
    /// stop), each at its share of `confidence` so that all looks together keep it. One entry without
    /// sequential mode.
    #[serde(default)]
    pub looks: Vec<u32>,
    /// The two-sided confidence asked of every interval, as a fraction; the family of a scenario's checks keeps
    /// it jointly (Holm).
    pub confidence: f64,
    /// What an inconclusive verdict makes of the run: `inconclusive` (exit 5), `fail` (exit 1) or `pass`.
    pub on_inconclusive: String,
    /// `never` or `each_round`.
    pub restart: String,
    /// Rounds of a gated instance that were invalid as a measurement and were discarded (with their A/B pair)
    /// and run again, at most this many per instance; each instance lists its own in `discarded_rounds`.
    #[serde(default)]
    pub rerun_invalid: u32,
    /// For an A/B run: the order of the sides in each round (`abba` or `shuffle`) and the candidate's URL.
    pub order: Option<String>,
    pub candidate: Option<String>,
    /// `gating.detect`: the smallest change the verdicts must tell (0.10 for 10%).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detect: Option<f64>,
    /// `gating.budget` in seconds: the most load one gated instance's verdict may take.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget_seconds: Option<f64>,
}

/// Which spec ran, compiled into which plan.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct SpecInfo {
    /// The spec's `name`.
    pub name: String,
    /// The spec's `description`.
    pub description: Option<String>,
    /// The spec file as given on the command line.
    pub file: String,
    /// The hash of the compiled execution plan: two runs with the same hash ran the same plan.
    pub plan_hash: String,
    /// Resolved variables.
    pub vars: BTreeMap<String, String>,
    /// The seed of the random request data.
    pub seed: u64,
    /// What `loadgate repro` needs to rebuild the plan: the spec's text and the files it read. Absent in files
    /// of an older loadgate and for a run built from command-line flags.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<SpecSource>,
}

/// The spec as it ran, embedded so that the run can be reproduced from results.json alone (`loadgate repro`).
///
/// Secret values never reach it: the text is scrubbed like every artifact (a secret written in the spec
/// becomes `***`, and `loadgate repro` asks for it with `--secret`), `secret_vars` keeps the names only.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SpecSource {
    /// The spec file's text, as read.
    pub text: String,
    /// The variables whose values are secret (the spec's `secrets.vars` and `--secret` names): their values
    /// in `vars` are `***`, and `loadgate repro` needs them again with `--secret NAME=VALUE`.
    #[serde(default)]
    pub secret_vars: Vec<String>,
    /// The `--repeat`, `--on-inconclusive`, `--pacing` and `--connect-rate` given to `loadgate run`, which change
    /// the plan.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeat: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_inconclusive: Option<String>,
    /// The `--pacing` given to `loadgate run` (`default` or `precise`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pacing: Option<String>,
    /// The `--connect-rate` given to `loadgate run` (`auto`, `unlimited` or a rate).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connect_rate: Option<String>,
    /// Every file the spec read besides itself, in the order first read.
    #[serde(default)]
    pub files: Vec<SourceFile>,
}

/// A file a spec read: a data file of `pick_line`/`pick_csv`, or a `target.tls` PEM file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SourceFile {
    /// The name as the spec gives it (relative to the spec's directory).
    pub name: String,
    /// `data` (pick_line, pick_csv) or `tls` (a certificate or key).
    pub kind: String,
    /// Hex SHA-256 of the file's bytes when it was read.
    pub sha256: String,
    /// The file's text: data files up to 1 MiB. Absent for TLS files (a key never reaches an artifact) and
    /// larger data files: `loadgate repro` then reads the file where the spec named it and checks its digest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
}

/// The server under test.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct TargetInfo {
    /// `url`, `command` or `builtin`.
    pub kind: String,
    /// The URL requests were sent to.
    pub base_url: String,
    /// The process id of a target loadgate started.
    pub pid: Option<u32>,
    /// Set when the target exited during the run: when (seconds from the run's start) and how.
    pub exited: Option<TargetExit>,
    /// CPU and memory of the target's process tree, one sample a second.
    pub samples: Vec<ResourceSample>,
    /// Where the target's stdout and stderr were captured.
    pub log_files: Vec<String>,
}

// In Rust: the engine's record of the phase with this result's judgement in its slot (`measured.judged`), and what
// is added after the phase. The record's fields read as this result's own through `Deref` (`result.latency`,
// `result.judged.verdicts`); in JSON they are the result's own keys, in the order they always had.
/// One scenario instance (a phase, or one cell of a matrix) and what it measured.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ScenarioResult {
    /// What the engine measured, and the verdicts and the limit in their place among the measurements.
    #[serde(flatten)]
    pub measured: PhaseMeasurement<Judgement>,
    /// Whether a response that failed a check counts as failed in `error_rate` (`errors`, the default) or only
    /// in the check metrics (`separate`).
    #[serde(default, skip_serializing_if = "is_errors")]
    #[schemars(with = "FailedChecksSchema")]
    pub failed_checks: FailedChecks,
    /// With repetitions: each repetition on its own (this result is their merge: histograms added, counts
    /// summed). Empty for a single run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub repetitions: Vec<Repetition>,
    /// With repetitions: the rounds that were invalid as a measurement and were run again
    /// (`gating.rerun_invalid`); they are in neither `repetitions` nor the statistics.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub discarded_rounds: Vec<DiscardedRound>,
    /// With `gating.detect` or `gating.budget`: the plan made from the pilot rounds (the round length, the rounds
    /// the change needs, what the budget allows), as the terminal showed it before the rounds that followed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub power_plan: Option<PowerPlan>,
    /// In duet rounds (`gating.order: duet`): what loading both sides at once cost this side, from the solo
    /// round it ran alone before the duet rounds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duet: Option<DuetPenalty>,
    /// In an A/B run: the same scenario instance measured on the baseline target (A), merged over its
    /// repetitions, which it lists; this result is the candidate's (B).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ab_baseline: Option<Box<ScenarioResult>>,
    /// What the generator and the target used while this instance ran (samples taken during it only), the
    /// figures the terminal and report.md show. Absent in results of an older loadgate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<PhaseResources>,
    /// For a capacity search (`load: capacity`): the rate found, every step and why the search stopped. The
    /// measurements above are then those of the step that decided the capacity (the last run at the rate found,
    /// or the first step when no rate held). See [`crate::capacity`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity: Option<Capacity>,
    /// The CPU time the target's process tree spent while this instance ran, and the requests completed in it:
    /// `target_cpu_per_request`. Absent where the target is not a process loadgate started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_cpu: Option<TargetCpuTime>,
    /// With `profile:`: the target's profile during this instance's measured rounds on this side (the
    /// baseline's is in `ab_baseline`). See [`ScenarioProfile`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<ScenarioProfile>,
}

/// The CPU time a target spent over a phase, read from the kernel's per-thread accounting (`schedstat`, in
/// nanoseconds) at the phase's edges, not from the once-a-tick sampler.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TargetCpuTime {
    /// CPU nanoseconds of the target's process tree between the phase's start and end.
    pub cpu_ns: u64,
    /// Requests completed in the same span.
    pub requests: u64,
}

impl TargetCpuTime {
    /// CPU microseconds per completed request; `None` without a completed request.
    pub fn per_request_us(&self) -> Option<f64> {
        (self.requests > 0).then(|| self.cpu_ns as f64 / 1_000.0 / self.requests as f64)
    }

    /// Two spans together (repetitions back to back, or shards of one target).
    pub fn and(self, other: TargetCpuTime) -> TargetCpuTime {
        TargetCpuTime {
            cpu_ns: self.cpu_ns.saturating_add(other.cpu_ns),
            requests: self.requests.saturating_add(other.requests),
        }
    }
}

pub use loadgate_model::FailedChecks;

fn is_errors(f: &FailedChecks) -> bool {
    *f == FailedChecks::Errors
}

/// The schema of [`FailedChecks`] (the model's type has no schema of its own).
#[derive(JsonSchema)]
#[serde(rename_all = "snake_case")]
#[expect(dead_code, reason = "only its schema is used")]
enum FailedChecksSchema {
    /// A failed check makes the response failed in `error_rate`.
    Errors,
    /// Failed checks show only in `checks` and `check_failures`.
    Separate,
}

impl From<PhaseMeasurement> for ScenarioResult {
    /// The result of a phase as the engine measured it, not judged yet: no verdicts, no limit, no repetitions,
    /// resources or capacity; failed checks count as errors until the caller sets the phase's `failed_checks`.
    fn from(m: PhaseMeasurement) -> Self {
        ScenarioResult {
            measured: m.judged(Judgement::default()),
            failed_checks: FailedChecks::default(),
            repetitions: Vec::new(),
            discarded_rounds: Vec::new(),
            duet: None,
            power_plan: None,
            ab_baseline: None,
            resources: None,
            capacity: None,
            target_cpu: None,
            profile: None,
        }
    }
}

impl Deref for ScenarioResult {
    type Target = PhaseMeasurement<Judgement>;

    fn deref(&self) -> &Self::Target {
        &self.measured
    }
}

impl DerefMut for ScenarioResult {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.measured
    }
}

/// What is judged of a phase after it ran, kept in the phase's record where results.json has always had it
/// (after `validity`).
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct Judgement {
    /// When an open or ramp load fell short of its rate: who limited it (the generator, the plan's connections or
    /// the target), with the evidence. Only a generator-limited phase is invalid. See [`crate::limit`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limited_by: Option<Limited>,
    /// One verdict per SLO of the scenario, in the spec's order.
    pub verdicts: Vec<Verdict>,
}

/// Resource use during one scenario instance.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PhaseResources {
    /// The busiest generator worker's CPU use, as a fraction of one CPU.
    pub generator_peak: Option<f64>,
    /// The target's average and peak CPU use (fractions of one CPU, summed over its process tree) over the
    /// samples taken during the phase.
    pub target_cpu_mean: Option<f64>,
    pub target_cpu_peak: Option<f64>,
    /// The target tree's largest resident set during the phase, in bytes.
    pub target_rss_peak: Option<u64>,
    /// How many target samples fell in the phase.
    pub samples: usize,
}

/// A duet side's penalty: its p50 in the duet rounds (merged) against its p50 in a solo round, loaded alone just
/// before them. Two CPU-bound servers that share CPUs slow each other, and the change measured in duet may then
/// differ from the change alone: above [`DUET_PENALTY_WARNING`] the result carries a `duet_penalty` warning.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct DuetPenalty {
    /// The solo round's p50 latency, in microseconds.
    pub solo_p50_us: u64,
    /// The duet rounds' p50 latency (their merged histogram), in microseconds.
    pub duet_p50_us: u64,
    /// `duet_p50_us / solo_p50_us`.
    pub penalty: f64,
}

/// The duet penalty above which a result warns that the sides slow each other.
pub const DUET_PENALTY_WARNING: f64 = 1.10;

impl DuetPenalty {
    /// A side's penalty from its solo round and its duet rounds' merge; `None` when either has no latency.
    pub fn of(solo: &ScenarioResult, duet: &ScenarioResult) -> Option<DuetPenalty> {
        let solo_p50_us = solo.latency.percentile(50.0).filter(|&v| v > 0)?;
        let duet_p50_us = duet.latency.percentile(50.0)?;
        Some(DuetPenalty { solo_p50_us, duet_p50_us, penalty: duet_p50_us as f64 / solo_p50_us as f64 })
    }
}

/// A round discarded because a side's run of it was invalid as a measurement, and run again.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct DiscardedRound {
    /// The round (from 1).
    pub round: u32,
    /// The sides whose run was invalid (`A`, `B`); empty in a run without a candidate.
    pub sides: Vec<String>,
    /// Why, as the invalid run said it.
    pub reasons: Vec<String>,
}

/// What a capacity search found: the highest rate at which the scenario's SLOs held, between which rates, how
/// sure, every step on the way and why it stopped.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Capacity {
    /// The capacity: the highest rate (requests per second asked) whose steps held, confirmed unless
    /// `confirmed` says otherwise; `None` when no rate held, not even `from`.
    pub capacity: Option<f64>,
    /// The lowest rate above the capacity that failed; `None` when none failed (the search passed `to`).
    pub failed_at: Option<f64>,
    /// The generator's ceiling: the least rate it sent at a step it could not send (invalid as a measurement),
    /// never below a rate it sent at a step before; rates above it were not judged. `None` when the generator
    /// sent every step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generator_limit: Option<f64>,
    /// Whether the capacity held its confirmations (`confirm` more runs at that rate).
    pub confirmed: bool,
    /// Why the search stopped.
    pub stop: CapacityStop,
    /// One sentence for people: why the search stopped, with the rates.
    pub stop_reason: String,
    /// The lowest rate the search tries (`from`), requests per second.
    pub from: f64,
    /// The highest rate the search tries (`to`), requests per second.
    pub to: f64,
    /// How close the highest rate that held and the lowest that failed had to get, relative to the former, as a
    /// fraction (`precision`).
    pub precision: f64,
    /// The factor between two steps up (`step`).
    pub step_factor: f64,
    /// The runs of the rate found asked, each of which had to hold (`confirm`).
    pub confirm: u32,
    /// The search's time budget in seconds (`max_duration`).
    pub max_duration: f64,
    /// Each step's load, in seconds (`duration`).
    pub step_duration: f64,
    /// Seconds from the first step's start to the last step's end.
    pub elapsed: f64,
    /// Every step, in the order it ran.
    pub steps: Vec<CapacityStep>,
}

/// Why a capacity search stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CapacityStop {
    /// The highest rate that held and the lowest that failed are within the precision, and the former held its
    /// confirmations.
    PrecisionReached,
    /// `to` held (and its confirmations): the capacity is at least the upper bound, which the search does not
    /// go past.
    UpperBoundPassed,
    /// `from` failed: the capacity is below the lowest rate the search tries.
    LowerBoundFailed,
    /// The next step could not have ended within `max_duration`.
    TimeBudget,
    /// No step could be judged: the first was invalid as a measurement (the generator could not send its rate).
    InvalidStep,
    /// The highest rate that held is within the precision of the generator's ceiling (`generator_limit`): the
    /// capacity is at least that rate, and the search cannot tell what lies above.
    GeneratorLimit,
    /// The run was interrupted (Ctrl-C) or the target exited.
    Interrupted,
}

impl CapacityStop {
    pub fn as_str(self) -> &'static str {
        match self {
            CapacityStop::PrecisionReached => "precision reached",
            CapacityStop::UpperBoundPassed => "upper bound passed",
            CapacityStop::LowerBoundFailed => "lower bound failed",
            CapacityStop::TimeBudget => "time budget spent",
            CapacityStop::InvalidStep => "invalid step",
            CapacityStop::GeneratorLimit => "generator limit",
            CapacityStop::Interrupted => "interrupted",
        }
    }
}

/// Where a step stands in a capacity search.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CapacityStage {
    /// From `from`, `step` times faster while the steps hold.
    StepUp,
    /// Halfway between the highest rate that held and the lowest that failed.
    Bisect,
    /// The rate found, once more.
    Confirm,
}

impl CapacityStage {
    pub fn as_str(self) -> &'static str {
        match self {
            CapacityStage::StepUp => "step up",
            CapacityStage::Bisect => "bisect",
            CapacityStage::Confirm => "confirm",
        }
    }
}

/// How one step of a capacity search fared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StepVerdict {
    /// Every SLO of the scenario held and the rate was sent in full.
    Pass,
    /// An SLO failed, or the target or the plan's connections held the rate back.
    Fail,
    /// The step is invalid as a measurement (the generator could not send the rate): it says nothing of the
    /// target.
    Invalid,
}

impl StepVerdict {
    pub fn as_str(self) -> &'static str {
        match self {
            StepVerdict::Pass => "PASS",
            StepVerdict::Fail => "FAIL",
            StepVerdict::Invalid => "INVALID",
        }
    }
}

/// One step of a capacity search: an open-loop run at one rate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CapacityStep {
    /// The step's number, from 1.
    pub step: u32,
    /// Stepping up, bisecting or confirming.
    pub stage: CapacityStage,
    /// The rate asked, requests per second.
    pub rate: f64,
    /// The rate requests were sent at.
    pub achieved_rate: f64,
    /// Completed requests per second.
    pub throughput: f64,
    /// The median latency from the intended send time, microseconds; `None` without completed requests.
    pub p50_us: Option<u64>,
    /// The 99th percentile latency from the intended send time, microseconds.
    pub p99_us: Option<u64>,
    /// Failed requests and non-2xx responses.
    pub errors: u64,
    /// Whether the step held.
    pub verdict: StepVerdict,
    /// Why it failed or is invalid, one sentence each (the SLOs that failed with what was observed, who held the
    /// rate back, the validity problems); empty for a pass.
    pub reasons: Vec<String>,
    /// Who held the rate back, when it fell short.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limited_by: Option<LimitCause>,
    /// Seconds from the run's start to the step's start.
    pub started_at_offset: f64,
    /// Seconds the step's load ran (with its drain).
    pub duration: f64,
}

/// One repetition of a scenario instance, with its own histograms: the sample that statistics compare.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Repetition {
    /// The round it ran in, from 1.
    pub round: u32,
    /// Seconds from the run's start to this repetition's start.
    pub started_at_offset: f64,
    pub duration: f64,
    /// Completed requests per second.
    pub throughput: f64,
    pub requests: RequestCounts,
    pub status: StatusCounts,
    pub errors: ErrorCounts,
    pub latency: LatencySummary,
    /// Whether the generator delivered what the plan asked in this repetition.
    pub valid: bool,
    pub histograms: Histograms,
    /// This repetition's checked responses (for its own `error_rate`); empty without checks.
    #[serde(default, skip_serializing_if = "CheckedResponses::is_empty")]
    pub checked: CheckedResponses,
    /// For a capacity search: the capacity this repetition's search found (`None` when no rate held).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity: Option<f64>,
    /// The target's CPU time over this repetition (`target_cpu_per_request` per round).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_cpu: Option<TargetCpuTime>,
}

/// Who held an open or ramp load below its rate, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Limited {
    /// `generator` (invalid: the numbers describe loadgate), `plan` (too few connections for the rate at the
    /// target's service time) or `target` (it slowed down, failed or ran out of CPU).
    pub cause: LimitCause,
    /// The arrival rate the plan asked for, averaged over the phase.
    pub target_rate: f64,
    /// The rate requests were sent at.
    pub achieved_rate: f64,
    /// One sentence for people: the cause, its evidence and what to do.
    pub message: String,
    /// The measurements behind the cause, one sentence each.
    pub evidence: Vec<String>,
    /// For a plan-limited load: the connections that would carry the rate (target rate x mean service time).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connections_needed: Option<u64>,
}

/// What limited a load that fell short of its rate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum LimitCause {
    /// The generator: a saturated worker, or requests not sent while connections were free.
    Generator,
    /// The plan: every connection busy at a steady service time (rate > connections / service time).
    Plan,
    /// The target: its service time or errors rose, or its CPU was saturated.
    Target,
}

impl LimitCause {
    pub fn as_str(self) -> &'static str {
        match self {
            LimitCause::Generator => "generator",
            LimitCause::Plan => "plan",
            LimitCause::Target => "target",
        }
    }
}

/// The evaluation of one SLO against one scenario instance.
///
/// `passed` is the gate's view: it is `false` only when this verdict fails the run. A verdict that was not
/// gated (`gate: false`) or could not be evaluated (no baseline, a per-request SLO) passes and says why in
/// `note`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Verdict {
    /// The SLO as written: `p99 < 100ms`.
    pub slo: String,
    /// The metric: `p99`, `max`, `mean`, `throughput`, `error_rate`, `errors`, `non_2xx` or `timeouts`.
    pub metric: String,
    /// `<`, `<=`, `>` or `>=`.
    pub comparison: String,
    /// The threshold as written (`100ms`, `baseline * 1.1`).
    pub threshold: String,
    /// The threshold in the metric's unit (microseconds, requests/s, fraction, count).
    /// 0 when it could not be computed (no baseline).
    pub threshold_value: f64,
    /// The observed value in the same unit; `None` when it could not be measured (no baseline, no samples).
    pub observed: Option<f64>,
    /// Observed, formatted with its unit: `83.2ms`.
    pub observed_text: String,
    /// `false` only when this verdict fails the gate.
    pub passed: bool,
    /// Set when the SLO was not gated (`gate: false`) or could not be evaluated.
    pub note: Option<String>,
    /// With repetitions or an A/B comparison: the statistical verdict behind `passed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub statistics: Option<VerdictStatistics>,
}

/// A check judged over repetitions: an estimate with its confidence interval against the limit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct VerdictStatistics {
    /// `pass` (the whole interval on the good side), `fail` (the whole interval on the bad side) or
    /// `inconclusive` (the interval straddles the limit).
    pub status: StatisticalStatus,
    /// Why, for people: `too noisy to tell`, `leans regression`, ...
    pub reason: String,
    /// How the estimate and interval were computed.
    pub method: String,
    /// The estimate in the metric's unit, or a ratio (candidate / baseline) for relative checks.
    pub estimate: f64,
    /// The confidence interval, same unit as `estimate`.
    pub lower: f64,
    pub upper: f64,
    /// The limit it was compared with, same unit.
    pub limit: f64,
    /// The confidence the interval achieves (exact, so at or above the one asked where the sample allows).
    pub confidence: f64,
    /// Repetitions (pairs, for a paired comparison) the check used.
    pub repetitions: u32,
    /// Coefficient of variation of the metric over the repetitions (the candidate's, in A/B); `None` below two.
    pub cv: Option<f64>,
    /// The baseline's coefficient of variation, for a relative check.
    pub baseline_cv: Option<f64>,
    /// The smallest relative change this run could have told apart: the interval's half-width relative to the
    /// estimate (`sqrt(upper / lower) - 1` for a ratio). `None` when the interval could not reach its
    /// confidence with this many repetitions.
    pub smallest_detectable: Option<f64>,
    /// How many checks of the scenario shared the error rate (Holm).
    pub family_size: u32,
    /// `gating.detect`: the change asked to be told apart, beside `smallest_detectable`, the one this run could.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detect: Option<f64>,
    /// With `detect`: the change this run's interval could tell, in the asked sense (from the baseline for a
    /// relative check, beyond the limit for an absolute one): where the interval of this width would clear the
    /// limit, `limit x (1 + smallest_detectable) - 1` for `p99 <= baseline * limit` (a drop of
    /// `1 - limit / (1 + smallest_detectable)` for a higher-is-better check). `None` without `detect`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tellable: Option<f64>,
    /// Why an INCONCLUSIVE verdict is one, for machines: `leans_fail`, `leans_pass`, `at_the_limit`,
    /// `too_noisy` or `budget` (`gating.budget` ended the rounds first). `None` for PASS and FAIL (and history
    /// checks).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cause: Option<InconclusiveCause>,
}

/// Why a verdict over repetitions is INCONCLUSIVE.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum InconclusiveCause {
    /// The central 50% interval misses the limit: probably a failure (a regression), not yet at the confidence.
    LeansFail,
    /// The central 50% interval meets the limit.
    LeansPass,
    /// A precise run whose estimate sits on the limit: more rounds would rarely decide it.
    AtTheLimit,
    /// Neither: the rounds' spread is too wide for this many.
    TooNoisy,
    /// `gating.budget` ended the rounds before the verdict was decided.
    Budget,
}

/// The plan `gating.detect` / `gating.budget` makes for one gated instance from its pilot rounds
/// (`results::power::plan`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PowerPlan {
    /// The check whose needs decided the plan (`p99`), the most demanding of the instance's.
    pub metric: String,
    /// The change asked (`gating.detect`, 0.10 for 10%); `None` with `budget` alone.
    pub detect: Option<f64>,
    /// The pilot rounds the plan was made from.
    pub pilot_rounds: u32,
    /// The round length after the pilot: this many pilot round lengths (1 keeps it).
    pub round_scale: u32,
    /// One round's load on one side after the pilot, in seconds.
    pub round_seconds: f64,
    /// The rounds (pilot included) that tell `detect` at the confidence and power planned for; `None` when it
    /// cannot be planned (no `detect`, or `detect` within the check's own limit).
    pub rounds_needed: Option<u32>,
    /// Their load, both sides, in seconds.
    pub load_needed_seconds: Option<f64>,
    /// The rounds (pilot included) the budget allows at this round length.
    pub rounds_allowed: u32,
    /// `gating.budget` in seconds.
    pub budget_seconds: f64,
    /// The smallest change the budget's rounds can be expected to tell (relative, 0.23 for 23%).
    pub detectable: Option<f64>,
    /// The deciding check's per-round spread in the pilot (a robust standard deviation of its log statistic).
    pub spread: f64,
    /// The part of that spread that comes from the samples per round (a percentile's sampling error), which a
    /// longer round shrinks.
    pub sampling_spread: f64,
    /// Noether's `p'` of the deciding check at the change asked and the plan's round length: the chance that a
    /// pair of rounds' Walsh average (A/B), a round (against an absolute limit), or a round against a stored
    /// baseline's lies beyond the limit when the change is `detect`, from the pilot's residuals. At most 0.51, no
    /// number of rounds tells the change. `None` without `detect`, or when `detect` is within the check's limit.
    pub p_prime: Option<f64>,
    /// The plan in one sentence, as the terminal and the reports show it.
    pub sentence: String,
}

/// The three verdicts of a statistical check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StatisticalStatus {
    Pass,
    Fail,
    Inconclusive,
}

/// The verdict on a run. Precedence, highest first: `run_failed`, `incomplete`, `invalid_measurement`,
/// `slo_failed`, `inconclusive`, `passed`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum OutcomeStatus {
    /// Every gated SLO held.
    Passed,
    /// An SLO failed.
    SloFailed,
    /// The run could not be carried out.
    RunFailed,
    /// The generator did not deliver what the plan asked.
    InvalidMeasurement,
    /// Still running, or interrupted (Ctrl-C).
    Incomplete,
    /// No SLO failed, but some check over repetitions could not tell (its interval straddles the limit).
    Inconclusive,
}

/// The verdict on a run and the exit code of `loadgate run`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Outcome {
    /// What happened.
    pub status: OutcomeStatus,
    /// The process exit code this outcome maps to.
    pub exit_code: i32,
    /// Human sentences: why the run failed or is invalid.
    pub reasons: Vec<String>,
}

/// The cells of one matrix scenario, in run order, and where its throughput stopped growing or fell.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Sweep {
    /// The scenario key, shared by all its cells.
    pub scenario: String,
    /// The matrix variables, in the spec's order.
    pub variables: Vec<String>,
    /// The names of the cells (scenario instances), in run order.
    pub cells: Vec<String>,
    /// The knee of the sweep, if it has one. Looked for only when exactly one variable varies across the cells
    /// and its values are numbers (`connections`, `rate`, `pipeline`, `body_size: 1kb`).
    pub knee: Option<Knee>,
    /// The variable the sweep SLOs order the cells by (the spec's `sweep.over`); absent without sweep SLOs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub over: Option<String>,
    /// One verdict per sweep SLO (`knee >= 256`, `throughput_drop <= 10%`, ...), in the spec's order: see
    /// [`crate::sweep`]. A failed gated one fails the run (exit 1).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub verdicts: Vec<Verdict>,
}

/// The cell of a sweep where the target stopped scaling: see `results::knee`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Knee {
    /// The position of the knee cell among the sweep's cells, from 0 (not the instance's `index`).
    pub index: usize,
    /// The instance name of the knee cell: `plaintext[connections=32]`.
    pub name: String,
    /// The cell's matrix values: `connections=32`.
    pub cell: String,
    /// `saturation` or `collapse`.
    pub kind: KneeKind,
    /// Requests per second at the knee.
    pub throughput: f64,
    /// The cell the knee is measured against (the one before it): `connections=31`.
    pub reference_cell: String,
    /// Requests per second of that cell.
    pub reference_throughput: f64,
    /// One sentence for people, with the numbers: `throughput collapsed at connections=32: 820/s, down 39% from
    /// 1,343/s at connections=31 ...`.
    pub explanation: String,
}

/// How a sweep stopped scaling.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum KneeKind {
    /// Throughput stopped growing while latency kept rising.
    Saturation,
    /// Throughput fell well below its best so far and did not come back.
    Collapse,
}

/// Gatling's response-time distribution of a scenario instance: the requests that got a 2xx response by
/// latency, and the failed ones. The four counts add up to `total`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ResponseTimeBuckets {
    /// `t < 800 ms`.
    pub below_800ms: u64,
    /// `800 ms <= t < 1200 ms`.
    pub from_800ms_to_1200ms: u64,
    /// `t >= 1200 ms`.
    pub at_least_1200ms: u64,
    /// Requests that failed without a complete response, and non-2xx responses.
    pub failed: u64,
    /// All four together.
    pub total: u64,
}

/// A scenario instance's profile of the target on one side (issue 41): what the samples were, where the time went
/// and, on the candidate of an A/B run, which frames changed. The stacks themselves are not here: they are
/// written beside `results.json` as a folded file (`folded_file`), which flame graph tools read; a table of up to
/// 50,000 stacks would make results.json tens of MB. See `results::frames` for the rules.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ScenarioProfile {
    /// Where the stacks came from: `cpu` (loadgate's sampler), `command` (an external profiler), `pprof`.
    pub source: String,
    /// What a sample counts: `cpu`, or the external profiler's or pprof's sample type (`alloc_space`,
    /// `contentions`, ...).
    pub sample_type: String,
    /// Samples over the measured rounds (the overflow included).
    pub samples: u64,
    /// CPU nanoseconds a sample stands for; absent when samples are not CPU time (allocations, locks).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ns_per_sample: Option<f64>,
    /// Requests completed while the samples were taken.
    pub requests: u64,
    /// Distinct stacks kept, and samples of stacks beyond the table's cap (counted, not kept).
    pub distinct_stacks: usize,
    pub overflow_samples: u64,
    /// The share of samples, 0 to 1, whose leaf frame has no name (`[unknown]` or a bare address).
    pub unknown_share: f64,
    /// Sample-weighted stack depth: median, 90th percentile and deepest.
    pub depth_p50: usize,
    pub depth_p90: usize,
    pub depth_max: usize,
    /// The folded stacks beside `results.json` (`profile-<instance>[-<side>].folded`), when written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub folded_file: Option<String>,
    /// Where the time went: the top frames by self and by total time.
    pub table: TimeTable,
    /// On the candidate of an A/B run: the frames tested over the paired rounds and those named.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub differential: Option<FrameDifferential>,
    /// What the samples cover and what went wrong taking them, one sentence each ("covers user time only: the
    /// kernel refuses kernel stacks here", "round 3: the profiler failed: ...").
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// The stacks merged over the measured rounds, for the folded file and the flame graphs written beside
    /// results.json; never in results.json itself.
    #[serde(skip)]
    #[schemars(skip)]
    pub stacks: Option<crate::stacks::Stacks>,
}

/// "Where the time went" for one side: the top frames by self time and by total (inclusive) time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TimeTable {
    /// The samples the shares are of (the overflow included).
    pub samples: u64,
    /// CPU microseconds per request of all samples; absent when samples are not CPU time or no request completed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_us_per_request: Option<f64>,
    /// By self time (the frame is the leaf), largest first.
    pub by_self: Vec<FrameTime>,
    /// By total time (the frame is anywhere in the stack, counted once per stack), largest first.
    pub by_total: Vec<FrameTime>,
}

/// One frame's time (names are the match keys of `results::stacks::match_key`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FrameTime {
    pub name: String,
    /// Percent of all samples with the frame as leaf, and anywhere in the stack.
    pub self_pct: f64,
    pub total_pct: f64,
    /// The same in CPU microseconds per request (absent when samples are not CPU time).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub self_us_per_request: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_us_per_request: Option<f64>,
}

/// Which frames changed between baseline and candidate over paired rounds (`results::frames::differential`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FrameDifferential {
    /// Paired rounds.
    pub rounds: usize,
    /// The family-wise error rate the frames were tested at (0.01).
    pub alpha: f64,
    /// The confidence of the intervals (0.95).
    pub confidence: f64,
    /// Sign flips of the Westfall-Young max-T test, and whether they were all `2^rounds` of them.
    pub randomisations: usize,
    pub exact: bool,
    /// The smallest adjusted p-value these rounds can give (`2 / 2^rounds` when exact): above `alpha`, nothing
    /// can be named however large the change.
    pub smallest_p: f64,
    /// Frames whose inclusive time rose, each the deepest that explains its parent's rise, largest first.
    pub named: Vec<NamedFrame>,
    /// Frames whose inclusive time fell, by the same rule, largest fall first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub faster: Vec<NamedFrame>,
    /// Frames with samples on one side only (a function inlined or renamed between the builds), largest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub one_sided: Vec<OneSidedFrame>,
    /// Every frame tested (at most 30), by adjusted p-value.
    pub tested: Vec<TestedFrame>,
}

/// A frame the gate names: its change in CPU microseconds per request, candidate minus baseline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct NamedFrame {
    pub name: String,
    /// The Hodges-Lehmann estimate of the per-round differences, and its interval (signed-rank, exact).
    pub estimate_us: f64,
    pub interval_us: crate::stats::Interval,
    /// The estimate and interval bounds in percent of the baseline's mean inclusive time in the frame (absent
    /// when the baseline had none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub estimate_pct: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval_pct: Option<(f64, f64)>,
    /// The Westfall-Young step-down adjusted p-value.
    pub p_adjusted: f64,
    /// The call chain from the first changed frame the search started at down to this one, root-most first
    /// (frames whose time was the same in every round and side as a neighbour's are listed too).
    pub path: Vec<String>,
}

/// A frame sampled on one side only.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct OneSidedFrame {
    pub name: String,
    /// `baseline` or `candidate`.
    pub side: String,
    /// Its mean inclusive CPU microseconds per request over the rounds of that side.
    pub us_per_request: f64,
}

/// A frame tested over the paired rounds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TestedFrame {
    pub name: String,
    /// The baseline's mean inclusive CPU microseconds per request.
    pub baseline_us: f64,
    /// The Hodges-Lehmann estimate of candidate minus baseline, in microseconds per request.
    pub estimate_us: f64,
    /// The paired t statistic of the per-round differences.
    pub t: f64,
    pub p_adjusted: f64,
}
