//! The versioned results model: what a run measured, how valid the measurement is, and the verdicts.
//!
//! Everything a report shows comes from here; nothing here knows the engine. Latencies are in microseconds.

use std::collections::BTreeMap;

use hdrhistogram::Histogram;
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

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunResults {
    pub schema_version: u32,
    pub loadgate_version: String,
    pub spec: SpecInfo,
    /// RFC 3339 UTC.
    pub started_at: String,
    /// RFC 3339 UTC; `None` while the run is still going (results are written after every phase).
    pub finished_at: Option<String>,
    pub machine: Machine,
    pub pinning: Pinning,
    pub target: TargetInfo,
    /// One entry per scenario instance that ran (or started), in run order.
    pub scenarios: Vec<ScenarioResult>,
    pub outcome: Outcome,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SpecInfo {
    pub name: String,
    pub description: Option<String>,
    /// The spec file as given on the command line.
    pub file: String,
    pub plan_hash: String,
    /// Resolved variables.
    pub vars: BTreeMap<String, String>,
    pub seed: u64,
}

/// The machine fingerprint: what the seeds paste from `lscpu` by hand.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Machine {
    pub hostname: Option<String>,
    pub cpu_model: Option<String>,
    pub sockets: Option<u32>,
    pub cores_per_socket: Option<u32>,
    pub threads_per_core: Option<u32>,
    /// Online CPUs in taskset syntax.
    pub online_cpus: Option<String>,
    pub logical_cpus: Option<u32>,
    pub governor: Option<String>,
    pub memory_bytes: Option<u64>,
    pub kernel: Option<String>,
    pub virtualization: Option<String>,
    pub git_commit: Option<String>,
    pub git_dirty: Option<bool>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Pinning {
    /// The generator CPUs the spec asked for, and those applied.
    pub generator_requested: Option<String>,
    pub generator_applied: Option<String>,
    pub target_requested: Option<String>,
    pub target_applied: Option<String>,
    /// The CPU each worker thread ran on (`None`: unpinned).
    pub workers: Vec<Option<u32>>,
    pub warnings: Vec<String>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct TargetInfo {
    /// `url`, `command` or `builtin`.
    pub kind: String,
    pub base_url: String,
    pub pid: Option<u32>,
    /// Set when the target exited during the run: when (seconds from the run's start) and how.
    pub exited: Option<TargetExit>,
    /// CPU and memory of the target's process tree, one sample a second.
    pub samples: Vec<ResourceSample>,
    /// Where the target's stdout and stderr were captured.
    pub log_files: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TargetExit {
    pub at_seconds: f64,
    pub status: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ResourceSample {
    /// Seconds from the start of the run.
    pub t: f64,
    /// CPU use as a fraction of one CPU (1.0 = one core busy).
    pub cpu: f64,
    pub rss_bytes: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ScenarioResult {
    pub index: usize,
    /// `plaintext[connections=256]`.
    pub name: String,
    /// The scenario key, shared by all cells of a matrix.
    pub scenario: String,
    pub matrix: Vec<(String, String)>,
    /// `false` for warmup and primer phases: reported, never gated.
    pub gate: bool,
    /// Seconds from the run's start to this phase's start.
    pub started_at_offset: f64,
    /// Seconds the load ran (first request to the stop condition, plus the drain).
    pub duration: f64,
    pub load: LoadSummary,
    pub requests: RequestCounts,
    pub status: StatusCounts,
    pub errors: ErrorCounts,
    pub connections: ConnectionStats,
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
    pub histograms: Histograms,
    pub timeline: Vec<TimelinePoint>,
    pub workers: Vec<WorkerStats>,
    pub validity: Validity,
    pub verdicts: Vec<Verdict>,
    /// Set when the phase was cut short: by an `abort_on_fail` SLO, Ctrl-C, or the target dying.
    pub aborted: Option<String>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct LoadSummary {
    /// `closed`, `constant`, `ramp` or `users`.
    pub model: String,
    /// The arrival rate the plan asked for, averaged over the phase (open loads).
    pub target_rate: Option<f64>,
    /// The rate at which requests were actually sent (open loads).
    pub achieved_rate: Option<f64>,
    pub pipeline: u32,
    pub keep_alive: bool,
    /// Users started and finished (user injection).
    pub users_started: Option<u64>,
    pub users_finished: Option<u64>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
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

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct StatusCounts {
    pub informational: u64,
    pub success: u64,
    pub redirection: u64,
    pub client_error: u64,
    pub server_error: u64,
}

impl StatusCounts {
    pub fn non_2xx(&self) -> u64 {
        self.informational + self.redirection + self.client_error + self.server_error
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ErrorCounts {
    pub connect: u64,
    pub read: u64,
    pub write: u64,
    pub timeout: u64,
    pub protocol: u64,
}

impl ErrorCounts {
    pub fn total(&self) -> u64 {
        self.connect + self.read + self.write + self.timeout + self.protocol
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ConnectionStats {
    /// Connections the plan asked for (at once).
    pub planned: u64,
    /// The most connections open at once.
    pub peak_open: u64,
    /// Connections opened in total, reconnects included.
    pub opened: u64,
    /// Connect attempts that failed.
    pub failed: u64,
    /// Reconnects after the server closed (`Connection: close` or EOF).
    pub reconnects: u64,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ByteCounts {
    pub read: u64,
    pub written: u64,
}

/// Summary statistics of a histogram, in microseconds.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct LatencySummary {
    pub count: u64,
    pub min_us: u64,
    pub mean_us: f64,
    pub stdev_us: f64,
    pub max_us: u64,
    /// `p50`, `p75`, `p90`, `p95`, `p99`, `p99.9`, `p99.99` to microseconds.
    pub percentiles: BTreeMap<String, u64>,
}

/// The full-resolution histograms, serialized as base64 of the compressed V2 encoding (`HISTFAAA...`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Histograms {
    #[serde(with = "crate::histogram_serde")]
    pub latency: Histogram<u64>,
    #[serde(with = "crate::histogram_serde")]
    pub service_time: Histogram<u64>,
    #[serde(with = "crate::histogram_serde")]
    pub send_lag: Histogram<u64>,
    #[serde(with = "crate::histogram_serde")]
    pub connect_time: Histogram<u64>,
}

impl Default for Histograms {
    fn default() -> Self {
        Self {
            latency: new_histogram(),
            service_time: new_histogram(),
            send_lag: new_histogram(),
            connect_time: new_histogram(),
        }
    }
}

/// One second of a phase.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct TimelinePoint {
    /// Seconds from the phase's start (end of the interval).
    pub t: f64,
    pub sent: u64,
    pub completed: u64,
    pub errors: u64,
    pub non_2xx: u64,
    /// The arrival rate the schedule asked for in this interval (open loads).
    pub target_rate: Option<f64>,
    pub p50_us: u64,
    pub p99_us: u64,
    pub max_us: u64,
    pub connections_open: u64,
    pub users_active: Option<u64>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct WorkerStats {
    pub index: usize,
    pub cpu: Option<u32>,
    pub user_seconds: f64,
    pub system_seconds: f64,
    /// (user + system) / wall time of the phase: 1.0 is a saturated core.
    pub utilization: f64,
    pub saturated: bool,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Validity {
    /// `false` when the generator did not deliver what the plan asked: the numbers describe loadgate, not the
    /// target.
    pub valid: bool,
    pub problems: Vec<Problem>,
    /// Problems that did not invalidate the run but that a reader must see.
    pub warnings: Vec<Problem>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Problem {
    /// `rate_not_reached`, `connections_missing`, `generator_saturated`, `ephemeral_ports_exhausted`,
    /// `incomplete_requests`, ...
    pub kind: String,
    pub message: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Verdict {
    /// The SLO as written: `p99 < 100ms`.
    pub slo: String,
    pub metric: String,
    pub comparison: String,
    /// The threshold as written (`100ms`, `baseline * 1.1`).
    pub threshold: String,
    /// The threshold in the metric's unit (microseconds, requests/s, fraction, count).
    pub threshold_value: f64,
    /// The observed value in the same unit; `None` when it could not be measured (no baseline, no samples).
    pub observed: Option<f64>,
    /// Observed, formatted with its unit: `83.2ms`.
    pub observed_text: String,
    pub passed: bool,
    /// Set when the SLO was not gated (`gate: false`) or could not be evaluated.
    pub note: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
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
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Outcome {
    pub status: OutcomeStatus,
    /// The process exit code this outcome maps to.
    pub exit_code: i32,
    /// Human sentences: why the run failed or is invalid.
    pub reasons: Vec<String>,
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
                .map(|(name, q)| ((*name).to_owned(), h.value_at_quantile(q / 100.0)))
                .collect(),
        }
    }

    /// The value of a percentile such as 99.9, if the summary carries it.
    pub fn percentile(&self, p: f64) -> Option<u64> {
        SUMMARY_PERCENTILES.iter().find(|(_, q)| *q == p).and_then(|(name, _)| self.percentiles.get(*name).copied())
    }
}
