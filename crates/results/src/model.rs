//! The versioned results model: what a run measured, how valid the measurement is, and the verdicts.
//!
//! Everything a report shows comes from here; nothing here knows the engine. Latencies are in microseconds.

use std::collections::BTreeMap;

use hdrhistogram::Histogram;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The version of `results.json`. Bump on any change that an older reader would misread.
pub const RESULTS_SCHEMA_VERSION: u32 = 1;

/// Histograms record microseconds from 1 us to one hour with 3 significant digits, as wrk2 does.
pub const HISTOGRAM_MAX_US: u64 = 3_600_000_000;
pub const HISTOGRAM_SIGFIG: u8 = 3;

/// A fresh latency histogram with loadgate's range and precision.
pub fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, HISTOGRAM_MAX_US, HISTOGRAM_SIGFIG).expect("static histogram bounds are valid")
}

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
    /// `scenarios` by [`crate::sweeps`] (see [`crate::knee`](mod@crate::knee) for the rules); empty in files written before it
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

/// The machine fingerprint: what the seeds paste from `lscpu` by hand.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct Machine {
    /// The host name.
    pub hostname: Option<String>,
    /// The CPU model name, as `lscpu` prints it.
    pub cpu_model: Option<String>,
    /// CPU sockets.
    pub sockets: Option<u32>,
    /// Physical cores per socket.
    pub cores_per_socket: Option<u32>,
    /// Hardware threads per core (2 with SMT).
    pub threads_per_core: Option<u32>,
    /// Online CPUs in taskset syntax.
    pub online_cpus: Option<String>,
    /// Logical CPUs online.
    pub logical_cpus: Option<u32>,
    /// The CPU frequency governor (`performance`, `powersave`, ...).
    pub governor: Option<String>,
    /// Physical memory in bytes.
    pub memory_bytes: Option<u64>,
    /// The kernel release (`uname -r`).
    pub kernel: Option<String>,
    /// The hypervisor or container, when detected.
    pub virtualization: Option<String>,
    /// The git commit of the working directory, when it is a repository.
    pub git_commit: Option<String>,
    /// Whether that working tree had uncommitted changes.
    pub git_dirty: Option<bool>,
}

/// CPU pinning, in taskset syntax (`0-7,16-23`).
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct Pinning {
    /// The generator CPUs the spec asked for.
    pub generator_requested: Option<String>,
    /// The generator CPUs applied (`None`: unpinned).
    pub generator_applied: Option<String>,
    /// The target CPUs the spec asked for.
    pub target_requested: Option<String>,
    /// The target CPUs applied (`None`: unpinned).
    pub target_applied: Option<String>,
    /// The CPU each worker thread ran on (`None`: unpinned).
    pub workers: Vec<Option<u32>>,
    /// Why the pinning differs from the spec (`on_mismatch: warn`), or overlaps between generator and target.
    pub warnings: Vec<String>,
    /// `run --pin-within-affinity`: each CPU the spec pins and the CPU of this process's affinity it ran on
    /// instead (the i-th pinned CPU on the i-th allowed one). Empty: the spec's CPU ids were used as they are.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cpu_map: Vec<CpuMapping>,
}

/// One CPU of the spec's pinning and the CPU it was mapped onto (`run --pin-within-affinity`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CpuMapping {
    /// The CPU id the spec names.
    pub spec: u32,
    /// The CPU id used.
    pub cpu: u32,
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

/// The target process ended during the run.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct TargetExit {
    /// Seconds from the start of the run.
    pub at_seconds: f64,
    /// The exit status or signal, as text.
    pub status: String,
}

/// One sample of the target's resource use.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ResourceSample {
    /// Seconds from the start of the run.
    pub t: f64,
    /// CPU use as a fraction of one CPU (1.0 = one core busy).
    pub cpu: f64,
    /// Resident memory of the process tree.
    pub rss_bytes: u64,
}

/// One scenario instance (a phase, or one cell of a matrix) and what it measured.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ScenarioResult {
    /// The position of the instance in the plan, from 0.
    pub index: usize,
    /// `plaintext[connections=256]`.
    pub name: String,
    /// The scenario key, shared by all cells of a matrix.
    pub scenario: String,
    /// The matrix variables of this cell, as `[name, value]` pairs in the spec's order (empty outside a matrix).
    pub matrix: Vec<(String, String)>,
    /// `false` for warmup and primer phases: reported, never gated.
    pub gate: bool,
    /// Seconds from the run's start to this phase's start.
    pub started_at_offset: f64,
    /// Seconds the load ran (first request to the stop condition, plus the drain).
    pub duration: f64,
    /// The load model and the rate asked for and achieved.
    pub load: LoadSummary,
    /// Requests sent, completed, left in flight and never sent.
    pub requests: RequestCounts,
    /// Responses by status class.
    pub status: StatusCounts,
    /// Failed requests by kind.
    pub errors: ErrorCounts,
    /// Connections planned, opened and failed.
    pub connections: ConnectionStats,
    /// Bytes on the wire.
    pub bytes: ByteCounts,
    /// Completed requests per second over `duration`.
    pub throughput: f64,
    /// Latency measured from the intended send time (coordinated-omission corrected in open loads; equal to
    /// the service time in closed loads).
    pub latency: LatencySummary,
    /// Actual send to completion.
    pub service_time: LatencySummary,
    /// Actual send minus intended send (open loads).
    pub send_lag: LatencySummary,
    /// Time to open a TCP connection, per connection opened (reconnects included): from starting the connect to
    /// the socket being writable; the TLS handshake that may follow is in `tls`. Empty in files written before
    /// it was summarised.
    #[serde(default)]
    pub connect_time: LatencySummary,
    /// HTTPS targets: handshakes, resumption, handshake time and TLS errors by class. Absent for plain HTTP.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls: Option<TlsStats>,
    /// HTTP/2 targets (`target.protocol: http2`, or `auto` where ALPN chose h2): connections, streams asked and
    /// granted, GOAWAYs and RST_STREAMs. Absent for HTTP/1.1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http2: Option<Http2Stats>,
    /// The full-resolution histograms behind the summaries.
    pub histograms: Histograms,
    /// One point per second of the phase.
    pub timeline: Vec<TimelinePoint>,
    /// Per generator worker thread: where it ran and how busy it was.
    pub workers: Vec<WorkerStats>,
    /// Whether the generator delivered what the plan asked.
    pub validity: Validity,
    /// When an open or ramp load fell short of its rate: who limited it (the generator, the plan's connections or
    /// the target), with the evidence. Only a generator-limited phase is invalid. See [`crate::limit`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limited_by: Option<Limited>,
    /// One verdict per SLO of the scenario, in the spec's order.
    pub verdicts: Vec<Verdict>,
    /// Set when the phase was cut short: by an `abort_on_fail` SLO, Ctrl-C, or the target dying.
    pub aborted: Option<String>,
    /// For a request mix: the same measurements per named request, in the mix's order. Empty otherwise.
    #[serde(default)]
    pub by_request: Vec<RequestBreakdown>,
    /// With repetitions: each repetition on its own (this result is their merge: histograms added, counts
    /// summed). Empty for a single run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub repetitions: Vec<Repetition>,
    /// With repetitions: the rounds that were invalid as a measurement and were run again
    /// (`gating.rerun_invalid`); they are in neither `repetitions` nor the statistics.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub discarded_rounds: Vec<DiscardedRound>,
    /// In an A/B run: the same scenario instance measured on the baseline target (A), merged over its
    /// repetitions, which it lists; this result is the candidate's (B).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ab_baseline: Option<Box<ScenarioResult>>,
    /// What the generator and the target used while this instance ran (samples taken during it only), the
    /// figures the terminal and report.md show. Absent in results of an older loadgate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<crate::resources::PhaseResources>,
    /// For a capacity search (`load: capacity`): the rate found, every step and why the search stopped. The
    /// measurements above are then those of the step that decided the capacity (the last run at the rate found,
    /// or the first step when no rate held). See [`crate::capacity`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity: Option<Capacity>,
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
    /// For a capacity search: the capacity this repetition's search found (`None` when no rate held).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity: Option<f64>,
}

/// One named request of a mix.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct RequestBreakdown {
    /// The request's name in the spec's `requests:`.
    pub name: String,
    pub requests: RequestCounts,
    pub status: StatusCounts,
    pub errors: ErrorCounts,
    /// Completed requests of this name per second over the phase.
    pub throughput: f64,
    pub latency: LatencySummary,
    /// The full latency histogram of this request (`HISTFAAA...`).
    #[serde(with = "crate::histogram_serde")]
    #[schemars(with = "String", pattern(r"^HISTFAAA"))]
    pub histogram: Histogram<u64>,
}

/// The load a phase applied.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct LoadSummary {
    /// `closed`, `constant`, `ramp` or `users`.
    pub model: String,
    /// The arrival rate the plan asked for, averaged over the phase (open loads).
    pub target_rate: Option<f64>,
    /// The rate at which requests were actually sent (open loads).
    pub achieved_rate: Option<f64>,
    /// Requests pipelined per connection (1: no pipelining).
    pub pipeline: u32,
    /// `batch` when pipelined batches were read whole (`pipeline_reads: batch` took effect: plain HTTP/1.1 with
    /// receive timestamps): each response of such a batch completed when the batch's last bytes arrived, as wrk
    /// records a pipelined batch. Absent when each response was read as it arrived.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pipeline_reads: Option<String>,
    /// `pipeline_reads: batch`: the batches written with their reads held back until the whole batch could be
    /// there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batches_held: Option<u64>,
    /// Of those, the batches that never reached their mark (a response shorter than any before) and were read
    /// after waiting (10-200 ms): their connections wrote their next batch that much later.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batches_forced: Option<u64>,
    /// Whether connections were kept alive between requests.
    pub keep_alive: bool,
    /// Users started and finished (user injection).
    pub users_started: Option<u64>,
    /// Users that finished their requests (user injection).
    pub users_finished: Option<u64>,
    /// The most users active at once (user injection): counted by each worker whenever a user starts (never
    /// sampled), and added over the workers, whose users start at the same planned times.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub users_peak_active: Option<u64>,
}

/// What became of the requests of a phase.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct RequestCounts {
    /// Requests written to a connection.
    pub sent: u64,
    /// Requests that got a complete response.
    pub completed: u64,
    /// Requests still in flight when the phase ended and the drain ran out.
    pub incomplete: u64,
    /// Requests the schedule wanted sent but that never were (open loads ended with a backlog).
    pub unsent: u64,
}

/// Complete responses by status class.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct StatusCounts {
    /// 1xx.
    pub informational: u64,
    /// 2xx.
    pub success: u64,
    /// 3xx.
    pub redirection: u64,
    /// 4xx.
    pub client_error: u64,
    /// 5xx.
    pub server_error: u64,
}

impl StatusCounts {
    /// Adds another count to this one (merging workers, requests of a mix, or repeated runs).
    pub fn add(&mut self, other: &StatusCounts) {
        self.informational += other.informational;
        self.success += other.success;
        self.redirection += other.redirection;
        self.client_error += other.client_error;
        self.server_error += other.server_error;
    }

    /// Responses whose status was not 2xx.
    pub fn non_2xx(&self) -> u64 {
        self.informational + self.redirection + self.client_error + self.server_error
    }
}

/// Requests that failed without a complete response, by kind.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct ErrorCounts {
    /// The connection could not be opened.
    pub connect: u64,
    /// Reading the response failed (reset, EOF before a complete response).
    pub read: u64,
    /// Writing the request failed.
    pub write: u64,
    /// No complete response within the request timeout.
    pub timeout: u64,
    /// The response was not valid HTTP/1.1.
    pub protocol: u64,
}

impl ErrorCounts {
    /// Adds another count to this one.
    pub fn add(&mut self, other: &ErrorCounts) {
        self.connect += other.connect;
        self.read += other.read;
        self.write += other.write;
        self.timeout += other.timeout;
        self.protocol += other.protocol;
    }

    /// Failed requests of every kind.
    pub fn total(&self) -> u64 {
        self.connect + self.read + self.write + self.timeout + self.protocol
    }
}

/// HTTP/2 over a phase's connections.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Http2Stats {
    /// Connections that spoke HTTP/2.
    pub connections: u64,
    /// Concurrent streams per connection the load asked for (`streams`).
    pub streams_asked: u64,
    /// The fewest concurrent streams a server granted a connection: `streams` capped by the server's
    /// `SETTINGS_MAX_CONCURRENT_STREAMS` (0: no server SETTINGS arrived).
    pub streams_granted: u64,
    /// GOAWAY frames received (the server ends the connection; streams above its last stream id are sent again).
    pub goaways: u64,
    /// RST_STREAM frames received, by error code name (`refused_stream`, `cancel`, `internal_error`...). A
    /// `refused_stream` request is sent again; any other fails as a `read` error.
    pub rst_streams: BTreeMap<String, u64>,
    /// Requests sent again: refused by the server (RST_STREAM REFUSED_STREAM) or above a GOAWAY's last stream id.
    pub resent: u64,
}

impl Http2Stats {
    /// Adds another phase's (or worker's) HTTP/2 figures.
    pub fn add(&mut self, other: &Http2Stats) {
        self.connections += other.connections;
        self.streams_asked = self.streams_asked.max(other.streams_asked);
        self.streams_granted = match (self.streams_granted, other.streams_granted) {
            (0, g) | (g, 0) => g,
            (a, b) => a.min(b),
        };
        self.goaways += other.goaways;
        for (code, n) in &other.rst_streams {
            *self.rst_streams.entry(code.clone()).or_default() += n;
        }
        self.resent += other.resent;
    }

    /// The name of an HTTP/2 error code (RFC 9113 section 7).
    pub fn code_name(code: usize) -> &'static str {
        const NAMES: [&str; 14] = [
            "no_error",
            "protocol_error",
            "internal_error",
            "flow_control_error",
            "settings_timeout",
            "stream_closed",
            "frame_size_error",
            "refused_stream",
            "cancel",
            "compression_error",
            "connect_error",
            "enhance_your_calm",
            "inadequate_security",
            "http_1_1_required",
        ];
        NAMES.get(code).copied().unwrap_or("other")
    }
}

/// TLS over a phase's connections.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct TlsStats {
    /// Handshakes that completed.
    pub handshakes: u64,
    /// Of those, the ones that resumed an earlier session (no certificate exchange).
    pub resumed: u64,
    /// Completed handshakes by protocol version: `TLSv1_3`, `TLSv1_2`.
    pub versions: BTreeMap<String, u64>,
    /// The time from the TCP connect to the end of the handshake, in microseconds.
    pub handshake_time: LatencySummary,
    /// TLS failures by class. A failed handshake also counts as a `connect` error; a TLS error after the
    /// handshake (an alert on a request, such as a missing client certificate under TLS 1.3) fails the requests
    /// in flight as `read` errors.
    pub errors: TlsErrorCounts,
    /// The first TLS failure, in words, with what to do about it.
    pub first_error: Option<String>,
    /// Certificates were not checked (`tls.insecure`, `-k`): the run says so wherever it reports.
    pub insecure: bool,
}

impl TlsStats {
    /// Adds another phase's (or worker's) TLS figures; `handshake_time` is recomputed from the histograms by the
    /// caller.
    pub fn add(&mut self, other: &TlsStats) {
        self.handshakes += other.handshakes;
        self.resumed += other.resumed;
        for (v, n) in &other.versions {
            *self.versions.entry(v.clone()).or_default() += n;
        }
        self.errors.add(&other.errors);
        if self.first_error.is_none() {
            self.first_error.clone_from(&other.first_error);
        }
        self.insecure |= other.insecure;
    }
}

/// The class of a TLS failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TlsErrorKind {
    /// The certificate chain leads to no trusted CA.
    UnknownCa,
    /// The certificate does not name the server.
    NameMismatch,
    /// Another certificate problem: expired, not yet valid, revoked, badly signed.
    Certificate,
    /// No complete handshake within the request timeout.
    HandshakeTimeout,
    /// The server sent a fatal alert (a client certificate it requires or refuses, no common cipher).
    Alert,
    /// Anything else: a malformed message, a connection closed mid-handshake.
    Other,
}

/// TLS failures by class.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct TlsErrorCounts {
    /// The server's certificate is not signed by a trusted CA.
    pub unknown_ca: u64,
    /// The server's certificate is not valid for the name asked for (SNI, `tls.server_name`).
    pub name_mismatch: u64,
    /// Another certificate problem (expired, not yet valid, revoked, bad signature).
    pub certificate: u64,
    /// No complete handshake within the request timeout.
    pub handshake_timeout: u64,
    /// A fatal alert from the server.
    pub alert: u64,
    /// Any other TLS failure.
    pub other: u64,
}

impl TlsErrorCounts {
    pub fn count(&mut self, kind: TlsErrorKind) {
        match kind {
            TlsErrorKind::UnknownCa => self.unknown_ca += 1,
            TlsErrorKind::NameMismatch => self.name_mismatch += 1,
            TlsErrorKind::Certificate => self.certificate += 1,
            TlsErrorKind::HandshakeTimeout => self.handshake_timeout += 1,
            TlsErrorKind::Alert => self.alert += 1,
            TlsErrorKind::Other => self.other += 1,
        }
    }

    pub fn add(&mut self, other: &TlsErrorCounts) {
        self.unknown_ca += other.unknown_ca;
        self.name_mismatch += other.name_mismatch;
        self.certificate += other.certificate;
        self.handshake_timeout += other.handshake_timeout;
        self.alert += other.alert;
        self.other += other.other;
    }

    pub fn total(&self) -> u64 {
        self.unknown_ca + self.name_mismatch + self.certificate + self.handshake_timeout + self.alert + self.other
    }

    /// The non-zero classes as `(name, count)`, in a fixed order.
    pub fn nonzero(&self) -> Vec<(&'static str, u64)> {
        [
            ("unknown CA", self.unknown_ca),
            ("name mismatch", self.name_mismatch),
            ("certificate", self.certificate),
            ("handshake timeout", self.handshake_timeout),
            ("alert", self.alert),
            ("other", self.other),
        ]
        .into_iter()
        .filter(|&(_, n)| n > 0)
        .collect()
    }
}

/// Connections of a phase.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct ConnectionStats {
    /// Connections the plan asked for (at once).
    pub planned: u64,
    /// The most connections open at once.
    pub peak_open: u64,
    /// Connections opened in total, reconnects included.
    pub opened: u64,
    /// Connections that failed: connect attempts that failed, and connections the server closed or reset before
    /// answering anything on them.
    pub failed: u64,
    /// Reconnects after the server closed (`Connection: close` or EOF).
    pub reconnects: u64,
    /// Keep-alive loads: how the connections were opened before the phase started measuring (absent for
    /// connection-per-request loads and user injection).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub opening: Option<ConnectionOpening>,
}

/// The opening of a keep-alive phase's connections, paced by `connect_rate` and measured apart from the load:
/// the phase's duration, counts and latencies start once every connection has been tried.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct ConnectionOpening {
    /// `auto`, a rate such as `2000/s`, or `unlimited`.
    pub connect_rate: String,
    /// Connections opened.
    pub opened: u64,
    /// Connections that could not be opened, by cause (each slot tried until refused or its timeout passed).
    pub failed: OpeningFailures,
    /// From the first connect to the last slot's outcome, seconds.
    pub duration_s: f64,
    /// Connections opened per second of the opening.
    pub rate_per_s: f64,
    /// Connects abandoned as stalled (8x the usual connect time, at least 5 ms: a SYN dropped by a full accept
    /// queue) and tried again at once instead of waiting for the kernel's retransmit.
    pub slow_connects: u64,
    /// Times `auto` halved its connect rate after a stalled connect.
    pub backoffs: u64,
    /// The first failure, in words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_error: Option<String>,
}

/// Connections an opening could not open, by cause.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct OpeningFailures {
    /// The target refused (`ECONNREFUSED`).
    pub refused: u64,
    /// Still not connected when the phase's timeout passed.
    pub timed_out: u64,
    /// No local port was free (`EADDRNOTAVAIL`).
    pub address_unavailable: u64,
    /// Anything else.
    pub other: u64,
}

impl OpeningFailures {
    pub fn total(&self) -> u64 {
        self.refused + self.timed_out + self.address_unavailable + self.other
    }
}

/// Bytes on the wire, headers included.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct ByteCounts {
    /// Bytes received.
    pub read: u64,
    /// Bytes sent.
    pub written: u64,
}

/// The `p`-th percentile (0-100) of a histogram, nearest-rank: the value of rank `ceil(p/100 * N)` (at least 1), the
/// highest value of its bucket. The rank is computed so that a product the decimal percentile makes whole (99.9% of
/// 1,000 values is rank 999) stays whole: `99.9 / 100` is `0.9990000000000001` in binary, and HdrHistogram's
/// `value_at_quantile(0.999)` would take rank 1,000, the maximum. (Java's HdrHistogram steps the percentile down by
/// one unit in the last place for the same reason.)
pub fn value_at_percentile(h: &Histogram<u64>, p: f64) -> u64 {
    let n = h.len();
    if n == 0 {
        return 0;
    }
    h.value_at_quantile(quantile_of_rank(nearest_rank(p, n), n))
}

/// The nearest rank (1..=n) of the `p`-th percentile (0-100) of `n` values: `ceil(p/100 * n)`, a product within a
/// few units in the last place of a whole number taken as that number.
pub fn nearest_rank(p: f64, n: u64) -> u64 {
    let x = p.clamp(0.0, 100.0) / 100.0 * n as f64;
    let whole = x.round();
    let rank = if (x - whole).abs() <= 1e-9 * whole.max(1.0) { whole } else { x.ceil() };
    (rank as u64).clamp(1, n.max(1))
}

/// The quantile HdrHistogram's `value_at_quantile` turns back into exactly `rank` of `n` (half a rank below it, so
/// no rounding of the product moves it across a whole number).
fn quantile_of_rank(rank: u64, n: u64) -> f64 {
    ((rank as f64 - 0.5) / n as f64).clamp(0.0, 1.0)
}

/// Summary statistics of a histogram, in microseconds. Percentiles are nearest-rank: the p-th of N values is the
/// value of rank `ceil(p/100 * N)` (at least 1) in sorted order, reported as the highest value of its histogram
/// bucket (3 significant digits), as HdrHistogram's Rust and Java libraries and wrk2 compute them (Python's
/// `hdrhistogram` rounds the rank instead and can differ by one rank on small counts).
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct LatencySummary {
    /// Samples recorded.
    pub count: u64,
    /// The smallest sample.
    pub min_us: u64,
    /// The mean of the samples.
    pub mean_us: f64,
    /// The standard deviation of the samples.
    pub stdev_us: f64,
    /// The largest sample (to the histogram's precision).
    pub max_us: u64,
    /// `p50`, `p75`, `p90`, `p95`, `p99`, `p99.9`, `p99.99` to microseconds, nearest-rank (rank `ceil(p/100 * N)`).
    pub percentiles: BTreeMap<String, u64>,
}

/// The full-resolution histograms, serialized as base64 of the compressed V2 encoding (`HISTFAAA...`).
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Histograms {
    /// Latency from the intended send time, in microseconds (coordinated-omission corrected in open loads).
    #[serde(with = "crate::histogram_serde")]
    #[schemars(with = "String", pattern(r"^HISTFAAA"))]
    pub latency: Histogram<u64>,
    /// Actual send to completion, in microseconds (uncorrected).
    #[serde(with = "crate::histogram_serde")]
    #[schemars(with = "String", pattern(r"^HISTFAAA"))]
    pub service_time: Histogram<u64>,
    /// Actual send minus intended send, in microseconds (open loads).
    #[serde(with = "crate::histogram_serde")]
    #[schemars(with = "String", pattern(r"^HISTFAAA"))]
    pub send_lag: Histogram<u64>,
    /// Time to open a TCP connection, in microseconds.
    #[serde(with = "crate::histogram_serde")]
    #[schemars(with = "String", pattern(r"^HISTFAAA"))]
    pub connect_time: Histogram<u64>,
    /// Time from the TCP connect to the end of the TLS handshake, in microseconds (HTTPS; empty otherwise).
    #[serde(with = "crate::histogram_serde", default = "crate::new_histogram")]
    #[schemars(with = "String", pattern(r"^HISTFAAA"))]
    pub tls_handshake: Histogram<u64>,
}

impl Default for Histograms {
    fn default() -> Self {
        Self {
            latency: new_histogram(),
            service_time: new_histogram(),
            send_lag: new_histogram(),
            connect_time: new_histogram(),
            tls_handshake: new_histogram(),
        }
    }
}

/// One second of a phase.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct TimelinePoint {
    /// Seconds from the phase's start (end of the interval).
    pub t: f64,
    /// Requests sent in this interval.
    pub sent: u64,
    /// Responses completed in this interval.
    pub completed: u64,
    /// Requests failed in this interval.
    pub errors: u64,
    /// Non-2xx responses in this interval.
    pub non_2xx: u64,
    /// The arrival rate the schedule asked for in this interval (open loads).
    pub target_rate: Option<f64>,
    /// The median latency of the responses completed in this interval.
    pub p50_us: u64,
    /// The 99th percentile latency of this interval.
    pub p99_us: u64,
    /// The largest latency of this interval.
    pub max_us: u64,
    /// The most connections open at once during the interval (at the end of the last one they are closing).
    pub connections_open: u64,
    /// The most users active at any moment of the interval (user injection), counted at each change, not sampled.
    pub users_active: Option<u64>,
    /// Requests sent and not yet answered at the end of the interval, with those taken from the schedule but
    /// waiting for their connection (closed and open loads): at the connection count, every connection was busy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub in_flight: Option<u64>,
    /// The median service time of the responses completed in this interval (open loads).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_p50_us: Option<u64>,
}

/// One generator worker thread during a phase.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct WorkerStats {
    /// The worker's number, from 0.
    pub index: usize,
    /// The CPU it was pinned to (`None`: unpinned).
    pub cpu: Option<u32>,
    /// CPU seconds in user mode during the phase.
    pub user_seconds: f64,
    /// CPU seconds in the kernel during the phase.
    pub system_seconds: f64,
    /// (user + system) / wall time of the phase: 1.0 is a saturated core. With `pacing: precise`, the time
    /// spent polling for the next send time is left out (it is `spin_seconds`).
    pub utilization: f64,
    /// Whether the worker's CPU was saturated, so the generator may have been the bottleneck.
    pub saturated: bool,
    /// `pacing: precise`: the CPU seconds the worker spent polling until its requests were due (part of
    /// `user_seconds + system_seconds`, the cost of precise pacing).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spin_seconds: Option<f64>,
}

/// Whether a phase's numbers describe the target or the generator.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct Validity {
    /// `false` when the generator did not deliver what the plan asked: the numbers describe loadgate, not the
    /// target.
    pub valid: bool,
    /// Why the measurement is invalid.
    pub problems: Vec<Problem>,
    /// Problems that did not invalidate the run but that a reader must see.
    pub warnings: Vec<Problem>,
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

/// A problem with a measurement.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Problem {
    /// `rate_not_reached` (a problem when the generator limited the rate, a warning when the plan or the target
    /// did), `connections_missing`, `generator_saturated`, `ephemeral_ports_exhausted`,
    /// `incomplete_requests`, ...
    pub kind: String,
    /// A sentence for people, with the numbers.
    pub message: String,
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

/// The cell of a sweep where the target stopped scaling: see [`crate::knee`](mod@crate::knee).
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

/// The percentiles every summary carries.
pub const SUMMARY_PERCENTILES: [(&str, f64); 7] =
    [("p50", 50.0), ("p75", 75.0), ("p90", 90.0), ("p95", 95.0), ("p99", 99.0), ("p99.9", 99.9), ("p99.99", 99.99)];

impl LatencySummary {
    /// Summarizes a histogram of microseconds. Percentiles come from the histogram itself, never from averages.
    pub fn from_histogram(h: &Histogram<u64>) -> Self {
        if h.is_empty() {
            return LatencySummary::default();
        }
        LatencySummary {
            count: h.len(),
            min_us: h.min(),
            mean_us: h.mean(),
            stdev_us: h.stdev(),
            max_us: h.max(),
            percentiles: SUMMARY_PERCENTILES
                .iter()
                .map(|(name, q)| ((*name).to_owned(), value_at_percentile(h, *q)))
                .collect(),
        }
    }

    /// The value of a percentile such as 99.9, if the summary carries it.
    pub fn percentile(&self, p: f64) -> Option<u64> {
        SUMMARY_PERCENTILES.iter().find(|(_, q)| *q == p).and_then(|(name, _)| self.percentiles.get(*name).copied())
    }
}
