//! What the history keeps of a run: a [`RunRecord`], built from a `results.json` ([`RunResults`]) with
//! [`RunRecord::from_results`].
//!
//! A record keeps, per scenario instance, every metric an SLO can name that the instance measured (the merged
//! instance, and each repetition on its own), its merged latency histogram, and what identifies the run and
//! what makes its numbers comparable with another's (the spec, the plan, the machine's fingerprint, the git
//! commit and branch).

use std::collections::BTreeMap;
use std::str::FromStr;

use loadgate_model::{Metric, MetricKind};
use loadgate_results::{histogram_serde, measure, RunResults, ScenarioResult};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The version of [`RunRecord`]'s form. Bump on any change that an older reader would misread.
pub const RECORD_VERSION: u32 = 1;

/// How many hex digits of the machine fingerprint a record keeps.
const MACHINE_DIGITS: usize = 16;

/// One run as the history keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    /// [`RECORD_VERSION`] when the record was made.
    pub record_version: u32,
    /// The run's stable identity: results.json's own `id` (a UUIDv7 made when the run started; a merge's derived
    /// from its shards'), else, for files written before it existed, hex SHA-256 over the plan hash, the start
    /// time, the host name and the shard (see [`run_id`]). Adding the same `results.json` twice finds the same
    /// identity.
    pub run_id: String,
    /// The spec's `name`.
    pub spec: String,
    /// The spec file as given on the command line.
    pub spec_file: String,
    /// The hash of the compiled plan.
    pub plan_hash: String,
    /// The git commit measured: the one given when the run was added, else the working tree's.
    pub commit: Option<String>,
    /// The git branch, as given when the run was added.
    pub branch: Option<String>,
    /// A free label, as given when the run was added.
    pub label: Option<String>,
    /// When the run started, RFC 3339 UTC, as results.json says.
    pub started_at: String,
    /// A short hex fingerprint of what makes two runs' numbers comparable (see [`machine_fingerprint`]).
    pub machine: String,
    /// The machine for people: `Intel Xeon ... · 2 CPUs · kvm`.
    pub machine_summary: String,
    /// The version of loadgate that ran.
    pub loadgate_version: String,
    /// The run's outcome, snake case (`passed`, `slo_failed`, ...).
    pub outcome: String,
    /// How an A/B run loaded its sides when that changes what a side's numbers mean: `duet` (both at once, each
    /// beside the other's load); `None` for every other run. Series never mix designs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub design: Option<String>,
    /// One entry per scenario instance that ran, in run order.
    pub instances: Vec<InstanceRecord>,
}

/// One scenario instance of a run as the history keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InstanceRecord {
    /// The position of the instance in the plan, from 0.
    pub index: usize,
    /// `plaintext[connections=256]`.
    pub name: String,
    /// The scenario key, shared by all cells of a matrix.
    pub scenario: String,
    /// The matrix variables of this cell, in the spec's order.
    pub matrix: Vec<(String, String)>,
    /// `false` for warmup and primer phases.
    pub gate: bool,
    /// Every metric the instance measured (merged over its repetitions), by the name an SLO writes it with.
    pub metrics: BTreeMap<String, f64>,
    /// The same, one map per repetition, in run order; empty for an instance that ran once.
    pub repetitions: Vec<BTreeMap<String, f64>>,
    /// The merged latency histogram as results.json serializes it (`HISTFAAA...`); `None` when it is empty.
    pub histogram: Option<String>,
    /// When the instance was profiled: what the profile held and what it named
    /// (`loadgate_results::frames::history_mark`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
}

/// What a record takes from outside results.json.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RecordMeta {
    /// The git branch the run measured.
    pub branch: Option<String>,
    /// A free label (`nightly`, `pr-123`).
    pub label: Option<String>,
    /// The git commit, overriding the one results.json recorded.
    pub commit: Option<String>,
}

/// Whether a smaller or a larger value of a metric is the better one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Direction {
    /// Latencies, errors, error rates.
    LowerIsBetter,
    /// Throughput, capacity.
    HigherIsBetter,
}

/// Which way a metric improves: rates (`throughput`, `capacity`) are better higher, everything else (latencies,
/// errors, the error rate, and names that are not metrics) lower.
pub fn direction(metric: &str) -> Direction {
    match Metric::from_str(metric).map(Metric::kind) {
        Ok(MetricKind::Rate) => Direction::HigherIsBetter,
        _ => Direction::LowerIsBetter,
    }
}

impl RunRecord {
    /// The record of a run.
    pub fn from_results(results: &RunResults, meta: &RecordMeta) -> RunRecord {
        RunRecord {
            record_version: RECORD_VERSION,
            run_id: run_id(results),
            spec: results.spec.name.clone(),
            spec_file: results.spec.file.clone(),
            plan_hash: results.spec.plan_hash.clone(),
            commit: meta.commit.clone().or_else(|| results.machine.git_commit.clone()),
            branch: meta.branch.clone(),
            label: meta.label.clone(),
            started_at: results.started_at.clone(),
            machine: machine_fingerprint(&results.machine),
            machine_summary: machine_summary(&results.machine),
            loadgate_version: results.loadgate_version.clone(),
            outcome: serde_json::to_value(results.outcome.status)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default(),
            design: results
                .gating
                .as_ref()
                .and_then(|g| g.order.as_deref())
                .filter(|o| *o == "duet")
                .map(str::to_owned),
            instances: results.scenarios.iter().map(InstanceRecord::from_result).collect(),
        }
    }

    /// Checks what a store cannot take from a record read from outside (an import): a record version this build
    /// does not know, an empty identity, a metric name that is not a metric, a value that is not a number.
    pub fn validate(&self) -> Result<(), String> {
        if self.record_version == 0 || self.record_version > RECORD_VERSION {
            return Err(format!(
                "record_version {} is not one this build knows (1 to {RECORD_VERSION})",
                self.record_version
            ));
        }
        if self.run_id.trim().is_empty() {
            return Err("run_id is empty".to_owned());
        }
        for instance in &self.instances {
            let maps = std::iter::once(&instance.metrics).chain(&instance.repetitions);
            for (name, value) in maps.flat_map(|m| m.iter()) {
                if Metric::from_str(name).is_err() {
                    return Err(format!("instance `{}`: `{name}` is not a metric", instance.name));
                }
                if !value.is_finite() {
                    return Err(format!("instance `{}`: {name} is {value}, not a number", instance.name));
                }
            }
        }
        Ok(())
    }
}

impl InstanceRecord {
    /// The record of one scenario instance: its merged metrics, each repetition's, and its merged histogram.
    pub fn from_result(s: &ScenarioResult) -> InstanceRecord {
        let repetitions = if s.repetitions.is_empty() {
            Vec::new()
        } else {
            // What `measure` reads of a repetition, without copying the instance's timeline and breakdowns once
            // per repetition.
            let mut template = s.clone();
            template.repetitions.clear();
            template.timeline.clear();
            template.by_request.clear();
            template.workers.clear();
            template.ab_baseline = None;
            s.repetitions.iter().map(|r| metrics_of(&loadgate_results::gate::repetition_result(&template, r))).collect()
        };
        InstanceRecord {
            index: s.index,
            name: s.name.clone(),
            scenario: s.scenario.clone(),
            matrix: s.matrix.clone(),
            gate: s.gate,
            metrics: metrics_of(s),
            repetitions,
            histogram: if s.histograms.latency.is_empty() {
                None
            } else {
                histogram_serde::encode(&s.histograms.latency).ok()
            },
            profile: s.profile.as_ref().map(loadgate_results::frames::history_mark),
        }
    }
}

/// Every metric of [`Metric::names`] that `measure` can tell of a result, by name; values that are not finite
/// numbers are left out.
fn metrics_of(s: &ScenarioResult) -> BTreeMap<String, f64> {
    Metric::names()
        .iter()
        .filter_map(|name| {
            let metric = Metric::from_str(name).ok()?;
            let value = measure(metric, s).filter(|v| v.is_finite())?;
            Some(((*name).to_owned(), value))
        })
        .collect()
}

/// The run's identity: its own `id` when results.json has one (issue 45: two runs started in the same second
/// on one host are two runs); else, for a file written before ids existed, hex SHA-256 over its plan hash, start
/// time, host name and shard (a shard result's run id, slice and slice count; a merged run's shared run id), so
/// that the same results.json always finds the same identity and two shards of one run on one host do not.
pub fn run_id(results: &RunResults) -> String {
    match results.id.as_deref().map(str::trim).filter(|id| !id.is_empty()) {
        Some(id) => id.to_ascii_lowercase(),
        None => derived_run_id(results),
    }
}

/// The identity of a run whose results.json has no `id` (see [`run_id`]).
fn derived_run_id(results: &RunResults) -> String {
    let shard = match (&results.shard, results.shards.first()) {
        (Some(s), _) => Some(format!("shard {} {}/{}", s.run_id, s.index, s.count)),
        (None, Some(s)) => Some(format!("merged {}", s.run_id)),
        (None, None) => None,
    };
    let parts = (&results.spec.plan_hash, &results.started_at, &results.machine.hostname, shard);
    hex_sha256(&serde_json::to_vec(&parts).unwrap_or_default())
}

/// A short hex fingerprint of what makes numbers comparable between machines: the CPU model and topology, the
/// memory, the kernel and the virtualization; not the host name, nor the git state.
pub fn machine_fingerprint(m: &loadgate_results::Machine) -> String {
    let parts = (
        &m.cpu_model,
        m.sockets,
        m.cores_per_socket,
        m.threads_per_core,
        m.logical_cpus,
        m.memory_bytes,
        &m.kernel,
        &m.virtualization,
    );
    let mut hex = hex_sha256(&serde_json::to_vec(&parts).unwrap_or_default());
    hex.truncate(MACHINE_DIGITS);
    hex
}

/// `AMD Ryzen 9 7950X 16-Core Processor · 32 CPUs · kvm`: the CPU, the logical CPUs and the virtualization when
/// known.
pub fn machine_summary(m: &loadgate_results::Machine) -> String {
    let mut parts = vec![m.cpu_model.clone().unwrap_or_else(|| "unknown CPU".to_owned())];
    if let Some(n) = m.logical_cpus {
        parts.push(format!("{n} CPU{}", if n == 1 { "" } else { "s" }));
    }
    if let Some(v) = m.virtualization.as_deref().filter(|v| !v.is_empty()) {
        parts.push(v.to_owned());
    }
    parts.join(" · ")
}

fn hex_sha256(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use loadgate_results::fixture;

    #[test]
    fn a_record_keeps_what_measure_says_of_every_instance() {
        let results = fixture::sample_run();
        let record = RunRecord::from_results(&results, &RecordMeta::default());
        assert_eq!(record.spec, "tfb-plaintext");
        assert_eq!(record.commit.as_deref(), Some("2220db2"));
        assert_eq!(record.outcome, serde_json::to_value(results.outcome.status).unwrap().as_str().unwrap());
        assert_eq!(record.machine_summary, "AMD Ryzen 9 7950X 16-Core Processor · 32 CPUs");
        assert_eq!(record.instances.len(), results.scenarios.len());
        for (instance, s) in record.instances.iter().zip(&results.scenarios) {
            assert_eq!(instance.name, s.name);
            for name in Metric::names() {
                let expected = measure(name.parse().unwrap(), s);
                assert_eq!(instance.metrics.get(*name).copied(), expected, "{} {name}", s.name);
            }
            assert!(instance.repetitions.is_empty());
            let h = histogram_serde::decode(instance.histogram.as_deref().unwrap()).unwrap();
            assert_eq!(h, s.histograms.latency);
        }
        let p99 = record.instances[1].metrics["p99"];
        assert_eq!(Some(p99), measure(Metric::Percentile(99.0), &results.scenarios[1]));
        assert!(!record.instances[1].metrics.contains_key("capacity"));
    }

    #[test]
    fn repetitions_are_measured_one_by_one_as_the_gate_measures_them() {
        let results = fixture::sample_ab_run();
        let s = &results.scenarios[0];
        assert_eq!(s.repetitions.len(), 6);
        let record = RunRecord::from_results(&results, &RecordMeta::default());
        let instance = &record.instances[0];
        assert_eq!(instance.repetitions.len(), 6);
        for (values, r) in instance.repetitions.iter().zip(&s.repetitions) {
            let p99 = loadgate_results::value_at_percentile(&r.histograms.latency, 99.0) as f64;
            assert_eq!(values["p99"], p99);
            assert_eq!(values["throughput"], r.throughput);
            assert_eq!(values["errors"], r.errors.total() as f64);
            assert_eq!(values["max"], r.histograms.latency.max() as f64);
            let rate = loadgate_results::error_rate(&loadgate_results::gate::repetition_result(s, r));
            assert_eq!(values.get("error_rate").copied(), rate);
        }
        // The merged values are the instance's, not any repetition's.
        assert_eq!(instance.metrics["p99"], measure(Metric::Percentile(99.0), s).unwrap());
    }

    #[test]
    fn a_capacity_search_keeps_its_capacity_per_repetition_too() {
        let results = fixture::sample_capacity_run();
        let record = RunRecord::from_results(&results, &RecordMeta::default());
        let instance = &record.instances[0];
        assert_eq!(instance.metrics.get("capacity").copied(), measure(Metric::Capacity, &results.scenarios[0]));
        assert!(instance.metrics.contains_key("capacity"));
    }

    #[test]
    fn the_identity_is_stable_and_tells_runs_apart() {
        let results = fixture::sample_run();
        let meta = RecordMeta { branch: Some("main".into()), label: None, commit: Some("abc".into()) };
        let a = RunRecord::from_results(&results, &meta);
        let b = RunRecord::from_results(&results, &RecordMeta::default());
        assert_eq!(a.run_id, b.run_id, "branch, label and commit are not the run");
        assert_eq!(a.commit.as_deref(), Some("abc"));
        assert_eq!(a.run_id.len(), 64);
        let mut later = results.clone();
        later.started_at = "2025-01-01T12:00:01Z".into();
        assert_ne!(RunRecord::from_results(&later, &meta).run_id, a.run_id);
        let mut elsewhere = results.clone();
        elsewhere.machine.hostname = Some("bench-02".into());
        let other = RunRecord::from_results(&elsewhere, &meta);
        assert_ne!(other.run_id, a.run_id);
        assert_eq!(other.machine, a.machine, "the host name is not what makes numbers comparable");
        elsewhere.machine.kernel = Some("6.9.0".into());
        assert_ne!(RunRecord::from_results(&elsewhere, &meta).machine, a.machine);
        assert_eq!(a.machine.len(), MACHINE_DIGITS);
    }

    #[test]
    fn a_run_of_its_own_id_is_that_id_and_one_without_keeps_the_derived_identity() {
        let results = fixture::sample_run();
        let derived = run_id(&results);
        assert_eq!(derived.len(), 64, "a file without an id: today's derivation");
        let mut a = results.clone();
        a.id = Some(loadgate_results::identity::new());
        let mut b = results.clone();
        b.id = Some(loadgate_results::identity::new());
        assert_eq!(run_id(&a), a.id.clone().unwrap());
        assert_ne!(run_id(&a), run_id(&b), "same plan, start and host: still two runs");
        let meta = RecordMeta::default();
        assert_eq!(RunRecord::from_results(&a, &meta).run_id, RunRecord::from_results(&a, &meta).run_id);
        let back = loadgate_results::from_json(&loadgate_results::to_json(&a).unwrap()).unwrap();
        assert_eq!(run_id(&back), run_id(&a), "the id survives results.json");
    }

    #[test]
    fn a_record_survives_results_json() {
        let results = fixture::sample_ab_run();
        let text = loadgate_results::to_json(&results).unwrap();
        let back = loadgate_results::from_json(&text).unwrap();
        let meta = RecordMeta::default();
        let record = RunRecord::from_results(&back, &meta);
        assert_eq!(record, RunRecord::from_results(&results, &meta));
        let line = serde_json::to_string(&record).unwrap();
        assert_eq!(serde_json::from_str::<RunRecord>(&line).unwrap(), record);
        assert_eq!(record.validate(), Ok(()));
    }

    #[test]
    fn directions() {
        assert_eq!(direction("throughput"), Direction::HigherIsBetter);
        assert_eq!(direction("capacity"), Direction::HigherIsBetter);
        for lower in ["p99", "p99.9", "max", "mean", "connect_p50", "error_rate", "errors", "non_2xx", "timeouts"] {
            assert_eq!(direction(lower), Direction::LowerIsBetter, "{lower}");
        }
    }
}
