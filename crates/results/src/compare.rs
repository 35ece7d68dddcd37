//! Several runs side by side (`loadgate compare`): seed 003's table of commits x cells, generated.
//!
//! [`compare`]`(runs, options) -> Comparison` matches the runs' scenario instances by name (a matrix cell's name
//! carries its values: `plaintext[connections=256]`), reads the chosen metrics of each (any metric an SLO can
//! name, measured as [`crate::measure`] measures it for a verdict), and states the change of every run against
//! the first (and, with [`Against::Previous`], against the run before it).
//!
//! - Where both runs of a change have repetitions, the change is the Hodges-Lehmann ratio of their repetitions
//!   with its exact Mann-Whitney interval ([`crate::stats::ratio`], the gate's own statistics), and a word:
//!   `faster`/`slower` (latency, throughput, capacity) or `better`/`worse` (errors) when the interval excludes
//!   1 and leaves the noise band, `no change` when the interval lies within the band (`--noise`, 2% by
//!   default), `can't tell` when it straddles 1 and leaves the band, or too few repetitions reach the
//!   confidence.
//! - A run of one repetition gives one number: its change is shown, never judged (no word), as one sample per
//!   side cannot tell a change from the run-to-run noise.
//! - Runs of different plans (`spec.plan_hash`), specs or machines (the fingerprint's fields, not the host name)
//!   are compared all the same, with a warning that names the difference.
//!
//! Pure: no I/O. The renderers (terminal, Markdown, HTML) and the plots read the [`Comparison`].

use std::collections::BTreeMap;

use loadgate_model::{Metric, MetricKind};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::model::{Machine, RunResults, ScenarioResult};
use crate::stats::{self, Design};

/// The version of `compare.json`.
pub const COMPARE_SCHEMA_VERSION: u32 = 1;

/// What [`compare`] reads and how it judges.
#[derive(Debug, Clone)]
pub struct CompareOptions {
    /// The metrics, in the order shown. Empty: throughput, p50 and p99.
    pub metrics: Vec<Metric>,
    /// Labels of the runs, in order (`--label`); a run without one is labelled by its git commit, else by its
    /// file name.
    pub labels: Vec<String>,
    /// The file each run was read from, in order (used for labels and warnings).
    pub files: Vec<String>,
    /// Which changes to show besides each run against the first.
    pub against: Against,
    /// The confidence of the ratio intervals (the gate's default, 0.95).
    pub confidence: f64,
    /// A change whose whole interval lies within `1 +/- noise` is `no change`.
    pub noise: f64,
}

impl Default for CompareOptions {
    fn default() -> Self {
        CompareOptions {
            metrics: Vec::new(),
            labels: Vec::new(),
            files: Vec::new(),
            against: Against::First,
            confidence: 0.95,
            noise: 0.02,
        }
    }
}

/// Which changes a comparison states.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Against {
    /// Every run against the first.
    First,
    /// Every run against the first and against the run before it.
    Previous,
}

/// Why runs could not be compared.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CompareError {
    #[error("nothing to compare: give at least two results files")]
    TooFew,
    #[error("confidence {0} is not strictly between 0 and 1")]
    Confidence(f64),
    #[error("noise {0} is not a fraction between 0 and 1")]
    Noise(f64),
    #[error("the runs share no scenario instance: nothing to put side by side")]
    NothingInCommon,
}

/// N runs side by side: `compare.json`, and what every rendering of it reads.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(title = "loadgate compare")]
pub struct Comparison {
    /// The version of this format, 1.
    pub schema_version: u32,
    /// The runs, in the order given (columns).
    pub runs: Vec<ComparedRun>,
    /// The metrics compared, as an SLO names them (`throughput`, `p99`), in order.
    pub metrics: Vec<String>,
    /// Which changes are stated.
    pub against: Against,
    /// The confidence of the intervals.
    pub confidence: f64,
    /// The noise band of `no change`, as a fraction.
    pub noise: f64,
    /// The scenario instances, matched by name: those of the first run in its order, then any other run's
    /// instances the first does not have.
    pub cells: Vec<ComparedCell>,
    /// The columns of changes: `(run, reference)` index pairs, in the order shown.
    pub changes: Vec<(usize, usize)>,
    /// The knee of each run's sweeps (matrix scenarios), where it has one: the plots mark them.
    #[serde(default)]
    pub knees: Vec<ComparedKnee>,
    /// What differs between the runs beyond the code under test (plan, spec, machine, missing instances).
    pub warnings: Vec<String>,
}

impl Comparison {
    /// Every change judged a regression: `get p99: pr-123 vs main`.
    pub fn regressions(&self) -> Vec<String> {
        let mut out = Vec::new();
        for cell in &self.cells {
            for m in &cell.metrics {
                for ch in m.changes.iter().flatten().filter(|ch| ch.word.is_some_and(|w| w.is_regression())) {
                    let (run, reference) = (&self.runs[ch.run].label, &self.runs[ch.reference].label);
                    out.push(format!("{} {}: {run} vs {reference}", cell.name, m.metric));
                }
            }
        }
        out
    }
}

/// Where one run's sweep stopped scaling.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ComparedKnee {
    /// The run (index into [`Comparison::runs`]).
    pub run: usize,
    /// The matrix scenario.
    pub scenario: String,
    /// The instance name of the knee cell.
    pub name: String,
    /// `saturation` or `collapse`.
    pub kind: crate::model::KneeKind,
    /// The knee's sentence.
    pub explanation: String,
}

/// One run of a comparison.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ComparedRun {
    /// What the tables call it: `--label`, else the short git commit, else the file name.
    pub label: String,
    /// The file it was read from.
    pub file: String,
    /// The spec's name.
    pub spec: String,
    pub plan_hash: String,
    /// The git commit of the working directory the run started in, when known.
    pub commit: Option<String>,
    /// RFC 3339 UTC.
    pub started_at: String,
    /// The machine in one line.
    pub machine: String,
    /// Repetitions per gated instance (1 for a single run).
    pub repetitions: u32,
}

/// One scenario instance across the runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ComparedCell {
    /// `plaintext[connections=256]`.
    pub name: String,
    /// The scenario key.
    pub scenario: String,
    /// The matrix variables of the cell (empty outside a matrix).
    pub matrix: Vec<(String, String)>,
    /// One entry per metric of [`Comparison::metrics`], in that order.
    pub metrics: Vec<CellMetric>,
}

/// One metric of one cell across the runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CellMetric {
    /// As an SLO names it: `p99`.
    pub metric: String,
    /// `latency` (microseconds), `rate` (per second), `ratio` (fraction) or `count`.
    pub kind: String,
    /// Whether a higher value is better (throughput, capacity); lower is better for latencies and errors.
    pub higher_is_better: bool,
    /// One per run: the value, or `None` when the run lacks the instance or it measured nothing.
    pub values: Vec<Option<RunValue>>,
    /// One per column of [`Comparison::changes`], in that order; `None` where either side has no value.
    pub changes: Vec<Option<Change>>,
}

/// A metric's value in one run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RunValue {
    /// On the merged instance (histograms added, counts summed), in the metric's unit.
    pub value: f64,
    /// Formatted with its unit: `1.25ms`, `94,737/s`.
    pub text: String,
    /// The value of each repetition (empty for a single run, or when a repetition measured nothing).
    pub repetitions: Vec<f64>,
}

/// The change of one run against a reference run, for one metric of one cell.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Change {
    /// The run (index into [`Comparison::runs`]).
    pub run: usize,
    /// The reference run.
    pub reference: usize,
    /// `value / reference - 1` on the merged values: `+0.0767` is 7.67% higher.
    pub relative: f64,
    /// With repetitions on both sides: the Hodges-Lehmann ratio of the repetitions and its interval.
    pub estimate: Option<RatioInterval>,
    /// The judgement, with repetitions on both sides; `None` for single runs (shown, never judged).
    pub word: Option<Word>,
}

/// The Hodges-Lehmann ratio `run / reference` over the repetitions, with its exact rank interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RatioInterval {
    pub ratio: f64,
    pub lower: f64,
    pub upper: f64,
    /// The confidence the interval achieves.
    pub confidence: f64,
    /// Whether it reaches the confidence asked (too few repetitions otherwise).
    pub reached: bool,
}

/// What a change means for the reader.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Word {
    /// Lower latency, higher throughput or capacity, beyond the noise band.
    Faster,
    Slower,
    /// Fewer errors (error metrics), beyond the noise band.
    Better,
    Worse,
    /// The interval lies within the noise band.
    NoChange,
    /// The interval straddles 1 and leaves the band, or the repetitions are too few to reach the confidence.
    CantTell,
}

impl Word {
    /// `faster`, `slower`, `better`, `worse`, `no change`, `can't tell`.
    pub fn text(self) -> &'static str {
        match self {
            Word::Faster => "faster",
            Word::Slower => "slower",
            Word::Better => "better",
            Word::Worse => "worse",
            Word::NoChange => "no change",
            Word::CantTell => "can't tell",
        }
    }

    /// Whether the word reports a change for the worse.
    pub fn is_regression(self) -> bool {
        matches!(self, Word::Slower | Word::Worse)
    }
}

/// The metrics shown when none are asked for.
pub fn default_metrics() -> Vec<Metric> {
    vec![Metric::Throughput, Metric::Percentile(50.0), Metric::Percentile(99.0)]
}

/// Whether a higher value of the metric is better.
pub fn higher_is_better(metric: Metric) -> bool {
    matches!(metric, Metric::Throughput | Metric::Capacity)
}

/// The name of a metric kind in `compare.json`.
pub fn kind_name(kind: MetricKind) -> &'static str {
    match kind {
        MetricKind::Latency => "latency",
        MetricKind::Rate => "rate",
        MetricKind::Ratio => "ratio",
        MetricKind::Count => "count",
    }
}

/// Puts `runs` side by side. The runs are in the order given; the first is the reference of every change.
pub fn compare(runs: &[RunResults], options: &CompareOptions) -> Result<Comparison, CompareError> {
    if runs.len() < 2 {
        return Err(CompareError::TooFew);
    }
    if !(options.confidence > 0.0 && options.confidence < 1.0) {
        return Err(CompareError::Confidence(options.confidence));
    }
    if !(options.noise >= 0.0 && options.noise < 1.0) {
        return Err(CompareError::Noise(options.noise));
    }
    let metrics = if options.metrics.is_empty() { default_metrics() } else { options.metrics.clone() };
    let compared: Vec<ComparedRun> = runs.iter().enumerate().map(|(i, r)| compared_run(r, i, options)).collect();
    let changes = change_columns(runs.len(), options.against);
    let names = instance_names(runs);
    let cells: Vec<ComparedCell> = names
        .iter()
        .map(|name| {
            let found: Vec<Option<&ScenarioResult>> =
                runs.iter().map(|r| r.scenarios.iter().find(|s| &s.name == name)).collect();
            cell(name, &found, &metrics, &changes, options)
        })
        .collect();
    if !cells.iter().any(|c| c.metrics.iter().any(|m| m.changes.iter().any(Option::is_some))) {
        return Err(CompareError::NothingInCommon);
    }
    let warnings = warnings(runs, &compared, &names);
    let knees = runs
        .iter()
        .enumerate()
        .flat_map(|(run, r)| {
            let sweeps = if r.sweeps.is_empty() { crate::sweeps(r) } else { r.sweeps.clone() };
            sweeps.into_iter().filter_map(move |sw| {
                sw.knee.map(|k| ComparedKnee {
                    run,
                    scenario: sw.scenario.clone(),
                    name: k.name,
                    kind: k.kind,
                    explanation: k.explanation,
                })
            })
        })
        .collect();
    Ok(Comparison {
        schema_version: COMPARE_SCHEMA_VERSION,
        runs: compared,
        metrics: metrics.iter().map(ToString::to_string).collect(),
        against: options.against,
        confidence: options.confidence,
        noise: options.noise,
        cells,
        changes,
        knees,
        warnings,
    })
}

/// The `(run, reference)` columns: every run against the first, then (against previous) every run from the
/// third against the one before it.
fn change_columns(n: usize, against: Against) -> Vec<(usize, usize)> {
    let mut columns: Vec<(usize, usize)> = (1..n).map(|i| (i, 0)).collect();
    if against == Against::Previous {
        columns.extend((2..n).map(|i| (i, i - 1)));
    }
    columns
}

/// The instance names of all runs: the first run's in its order, then the others' new ones in theirs.
fn instance_names(runs: &[RunResults]) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for r in runs {
        for s in &r.scenarios {
            if !names.contains(&s.name) {
                names.push(s.name.clone());
            }
        }
    }
    names
}

fn compared_run(r: &RunResults, i: usize, options: &CompareOptions) -> ComparedRun {
    let file = options.files.get(i).cloned().unwrap_or_else(|| format!("run {}", i + 1));
    let commit = r.machine.git_commit.clone();
    let label = match options.labels.get(i) {
        Some(l) => l.clone(),
        None => match &commit {
            Some(c) => {
                let short: String = c.chars().take(7).collect();
                if r.machine.git_dirty == Some(true) {
                    format!("{short}-dirty")
                } else {
                    short
                }
            }
            None => std::path::Path::new(&file)
                .parent()
                .and_then(|p| p.file_name())
                .map(|n| n.to_string_lossy().into_owned())
                .filter(|n| !n.is_empty() && n != ".")
                .unwrap_or_else(|| format!("run {}", i + 1)),
        },
    };
    let repetitions = r.scenarios.iter().filter(|s| s.gate).map(|s| s.repetitions.len().max(1)).max().unwrap_or(1);
    ComparedRun {
        label,
        file,
        spec: r.spec.name.clone(),
        plan_hash: r.spec.plan_hash.clone(),
        commit,
        started_at: r.started_at.clone(),
        machine: machine_line(&r.machine),
        repetitions: u32::try_from(repetitions).unwrap_or(u32::MAX),
    }
}

/// The kernel for people: `Linux 6.1.0 x86_64`. The machine records `uname`'s system name, release and
/// architecture (`Linux 6.1.0 x86_64`); older results, the release alone (`6.1.0`), which gets the system name.
pub fn kernel_text(kernel: &str) -> String {
    let k = kernel.trim();
    if k.split_whitespace().next().is_some_and(|w| w.chars().next().is_some_and(char::is_alphabetic)) {
        k.to_owned()
    } else {
        format!("Linux {k}")
    }
}

/// The machine in one line, without its host name: `AMD EPYC 7B13, 2 CPUs, 23.4GiB, Linux 6.1.0, kvm`.
pub fn machine_line(m: &Machine) -> String {
    let mut parts = Vec::new();
    if let Some(cpu) = &m.cpu_model {
        parts.push(cpu.clone());
    }
    if let Some(n) = m.logical_cpus {
        parts.push(format!("{n} CPUs"));
    }
    if let Some(bytes) = m.memory_bytes {
        parts.push(crate::format::bytes(bytes));
    }
    if let Some(k) = &m.kernel {
        parts.push(kernel_text(k));
    }
    if let Some(v) = &m.virtualization {
        parts.push(v.clone());
    }
    if parts.is_empty() {
        "unknown machine".to_owned()
    } else {
        parts.join(", ")
    }
}

fn cell(
    name: &str,
    found: &[Option<&ScenarioResult>],
    metrics: &[Metric],
    columns: &[(usize, usize)],
    options: &CompareOptions,
) -> ComparedCell {
    let any = found.iter().flatten().next();
    let metrics = metrics
        .iter()
        .map(|&metric| {
            let values: Vec<Option<RunValue>> = found.iter().map(|s| s.and_then(|s| run_value(metric, s))).collect();
            let changes = columns
                .iter()
                .map(|&(run, reference)| {
                    let (Some(v), Some(r)) = (&values[run], &values[reference]) else { return None };
                    Some(change(metric, run, reference, v, r, options))
                })
                .collect();
            CellMetric {
                metric: metric.to_string(),
                kind: kind_name(metric.kind()).to_owned(),
                higher_is_better: higher_is_better(metric),
                values,
                changes,
            }
        })
        .collect();
    ComparedCell {
        name: name.to_owned(),
        scenario: any.map_or_else(String::new, |s| s.scenario.clone()),
        matrix: any.map_or_else(Vec::new, |s| s.matrix.clone()),
        metrics,
    }
}

fn run_value(metric: Metric, s: &ScenarioResult) -> Option<RunValue> {
    let value = crate::measure(metric, s).filter(|v| v.is_finite())?;
    let repetitions: Vec<f64> = if s.repetitions.len() >= 2 {
        let values: Vec<Option<f64>> =
            crate::gate::repetition_parts(s).iter().map(|p| crate::measure(metric, p)).collect();
        // A repetition that measured nothing leaves the set whole or not at all: a partial set would judge
        // the rounds that happened to measure.
        values.into_iter().collect::<Option<Vec<f64>>>().unwrap_or_default()
    } else {
        Vec::new()
    };
    Some(RunValue { value, text: crate::verdict::format_value(metric.kind(), value), repetitions })
}

fn change(
    metric: Metric,
    run: usize,
    reference: usize,
    v: &RunValue,
    r: &RunValue,
    options: &CompareOptions,
) -> Change {
    let relative = if r.value == 0.0 {
        if v.value == 0.0 {
            0.0
        } else {
            f64::INFINITY
        }
    } else {
        v.value / r.value - 1.0
    };
    let (estimate, word) = if v.repetitions.len() >= 2 && r.repetitions.len() >= 2 {
        judge(metric, &r.repetitions, &v.repetitions, options)
    } else {
        (None, None)
    };
    Change { run, reference, relative, estimate, word }
}

/// The ratio of the repetitions with its interval, and the word it earns.
fn judge(
    metric: Metric,
    reference: &[f64],
    run: &[f64],
    options: &CompareOptions,
) -> (Option<RatioInterval>, Option<Word>) {
    // Counts of zero (no errors on either side) have no ratio; equal sets of zeros are no change.
    if reference.iter().chain(run).any(|x| *x <= 0.0) {
        let all_zero = reference.iter().chain(run).all(|x| *x == 0.0);
        return (None, Some(if all_zero { Word::NoChange } else { Word::CantTell }));
    }
    let Ok(est) = stats::ratio(reference, run, Design::Unpaired, options.confidence) else {
        return (None, Some(Word::CantTell));
    };
    let interval = RatioInterval {
        ratio: est.ratio,
        lower: est.interval.lo,
        upper: est.interval.hi,
        confidence: est.interval.confidence,
        reached: est.interval.reached,
    };
    (Some(interval), Some(word_for(metric, &interval, options.noise)))
}

/// The word for a ratio interval `run / reference`.
pub fn word_for(metric: Metric, interval: &RatioInterval, noise: f64) -> Word {
    if !interval.reached {
        return Word::CantTell;
    }
    let (lo, hi) = (interval.lower, interval.upper);
    if lo >= 1.0 - noise && hi <= 1.0 + noise {
        return Word::NoChange;
    }
    if lo <= 1.0 && hi >= 1.0 {
        return Word::CantTell;
    }
    let higher = lo > 1.0;
    let better = higher == higher_is_better(metric);
    let speed = matches!(metric.kind(), MetricKind::Latency | MetricKind::Rate);
    match (better, speed) {
        (true, true) => Word::Faster,
        (false, true) => Word::Slower,
        (true, false) => Word::Better,
        (false, false) => Word::Worse,
    }
}

fn warnings(runs: &[RunResults], compared: &[ComparedRun], names: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    let first = &runs[0];
    let label = |i: usize| &compared[i].label;
    for (i, r) in runs.iter().enumerate().skip(1) {
        if r.spec.name != first.spec.name {
            out.push(format!(
                "{} ran spec `{}`, {} ran `{}`: different specs",
                label(i),
                r.spec.name,
                label(0),
                first.spec.name
            ));
        }
        if r.spec.plan_hash != first.spec.plan_hash {
            out.push(format!(
                "{} ran another plan than {} (plan hash {} against {}): the load, the target or the SLOs differ",
                label(i),
                label(0),
                short_hash(&r.spec.plan_hash),
                short_hash(&first.spec.plan_hash)
            ));
        }
        let differences = machine_differences(&first.machine, &r.machine);
        if !differences.is_empty() {
            let list: Vec<String> =
                differences.iter().map(|(field, a, b)| format!("{field} {b} against {a}")).collect();
            out.push(format!("{} ran on another machine than {}: {}", label(i), label(0), list.join("; ")));
        }
    }
    let mut missing: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (i, r) in runs.iter().enumerate() {
        for name in names {
            if !r.scenarios.iter().any(|s| &s.name == name) {
                missing.entry(label(i).as_str()).or_default().push(name);
            }
        }
    }
    for (run, names) in missing {
        out.push(format!("{run} has no {}: its cells are empty", names.join(", ")));
    }
    out
}

fn short_hash(h: &str) -> String {
    h.trim_start_matches("sha256:").chars().take(12).collect()
}

/// The fingerprint fields that differ between two machines: `(field, a's, b's)`. The host name and the git
/// state are not a machine's nature and are left out.
pub fn machine_differences(a: &Machine, b: &Machine) -> Vec<(&'static str, String, String)> {
    fn show<T: ToString>(v: &Option<T>) -> String {
        v.as_ref().map_or_else(|| "unknown".to_owned(), ToString::to_string)
    }
    let fields = [
        ("CPU model", show(&a.cpu_model), show(&b.cpu_model)),
        ("sockets", show(&a.sockets), show(&b.sockets)),
        ("cores per socket", show(&a.cores_per_socket), show(&b.cores_per_socket)),
        ("threads per core", show(&a.threads_per_core), show(&b.threads_per_core)),
        ("logical CPUs", show(&a.logical_cpus), show(&b.logical_cpus)),
        ("governor", show(&a.governor), show(&b.governor)),
        (
            "memory",
            a.memory_bytes.map_or_else(|| "unknown".to_owned(), crate::format::bytes),
            b.memory_bytes.map_or_else(|| "unknown".to_owned(), crate::format::bytes),
        ),
        ("kernel", show(&a.kernel), show(&b.kernel)),
        ("virtualization", show(&a.virtualization), show(&b.virtualization)),
    ];
    fields.into_iter().filter(|(_, x, y)| x != y).collect()
}

/// The JSON Schema of `compare.json`.
pub fn json_schema() -> serde_json::Value {
    serde_json::to_value(schemars::schema_for!(Comparison)).unwrap_or(serde_json::Value::Null)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixture::sample_run;

    /// The fixture run with every throughput scaled by `factor` and every latency percentile divided by it.
    fn scaled(factor: f64, commit: &str) -> RunResults {
        let mut r = sample_run();
        r.machine.git_commit = Some(commit.to_owned());
        r.machine.git_dirty = Some(false);
        for s in &mut r.scenarios {
            s.throughput *= factor;
            for v in s.latency.percentiles.values_mut() {
                *v = (*v as f64 / factor).round() as u64;
            }
        }
        r
    }

    #[test]
    fn three_builds_side_by_side_state_every_change_against_the_first_and_the_previous() {
        let runs = [scaled(1.0, "aaaaaaa1111"), scaled(1.0767, "bbbbbbb2222"), scaled(1.1241, "ccccccc3333")];
        let options = CompareOptions {
            metrics: vec![Metric::Throughput],
            against: Against::Previous,
            ..CompareOptions::default()
        };
        let c = compare(&runs, &options).expect("compares");
        assert_eq!(c.runs.iter().map(|r| r.label.as_str()).collect::<Vec<_>>(), ["aaaaaaa", "bbbbbbb", "ccccccc"]);
        assert_eq!(c.changes, vec![(1, 0), (2, 0), (2, 1)]);
        let first = &c.cells[0].metrics[0];
        let rel: Vec<f64> = first.changes.iter().map(|ch| ch.as_ref().expect("a change").relative).collect();
        assert!((rel[0] - 0.0767).abs() < 1e-9, "{rel:?}");
        assert!((rel[1] - 0.1241).abs() < 1e-9, "{rel:?}");
        assert!((rel[2] - (1.1241 / 1.0767 - 1.0)).abs() < 1e-9, "{rel:?}");
        // Single runs: shown, never judged.
        assert!(first.changes.iter().all(|ch| ch.as_ref().is_some_and(|ch| ch.word.is_none())));
        assert!(c.warnings.is_empty(), "{:?}", c.warnings);
    }

    #[test]
    fn words_follow_the_interval_and_the_metric_direction() {
        let iv = |lower, upper| RatioInterval { ratio: 1.0, lower, upper, confidence: 0.95, reached: true };
        let tp = Metric::Throughput;
        let p99 = Metric::Percentile(99.0);
        assert_eq!(word_for(tp, &iv(1.05, 1.10), 0.02), Word::Faster);
        assert_eq!(word_for(p99, &iv(1.05, 1.10), 0.02), Word::Slower);
        assert_eq!(word_for(p99, &iv(0.90, 0.95), 0.02), Word::Faster);
        assert_eq!(word_for(Metric::Errors, &iv(1.5, 2.0), 0.02), Word::Worse);
        assert_eq!(word_for(p99, &iv(0.99, 1.01), 0.02), Word::NoChange);
        assert_eq!(word_for(p99, &iv(0.95, 1.08), 0.02), Word::CantTell);
        let short = RatioInterval { reached: false, ..iv(1.5, 2.0) };
        assert_eq!(word_for(p99, &short, 0.02), Word::CantTell);
    }

    #[test]
    fn repetitions_give_an_interval_and_a_word() {
        let mut a = sample_run();
        let mut b = sample_run();
        let reps = |s: &mut ScenarioResult, scale: f64| {
            let base = s.clone();
            s.repetitions = (0..8)
                .map(|i| crate::model::Repetition {
                    round: i + 1,
                    started_at_offset: 0.0,
                    duration: base.duration,
                    throughput: base.throughput * scale * (1.0 + f64::from(i) * 0.002),
                    requests: base.requests.clone(),
                    status: base.status.clone(),
                    errors: base.errors.clone(),
                    latency: base.latency.clone(),
                    valid: true,
                    histograms: base.histograms.clone(),
                    checked: Default::default(),
                    capacity: None,
                    target_cpu: None,
                })
                .collect();
        };
        reps(&mut a.scenarios[0], 1.0);
        reps(&mut b.scenarios[0], 1.2);
        let options = CompareOptions { metrics: vec![Metric::Throughput], ..CompareOptions::default() };
        let c = compare(&[a, b], &options).expect("compares");
        let ch = c.cells[0].metrics[0].changes[0].as_ref().expect("a change");
        let est = ch.estimate.expect("an interval");
        assert!(est.lower > 1.15 && est.upper < 1.25, "{est:?}");
        assert_eq!(ch.word, Some(Word::Faster));
    }

    #[test]
    fn different_plans_and_machines_are_named() {
        let a = sample_run();
        let mut b = sample_run();
        b.spec.plan_hash = "sha256:ffff".to_owned();
        b.machine.kernel = Some("6.12.0".to_owned());
        b.scenarios.truncate(1);
        let c = compare(&[a, b], &CompareOptions::default()).expect("compares");
        let all = c.warnings.join("\n");
        assert!(all.contains("another plan"), "{all}");
        assert!(all.contains("kernel 6.12.0 against"), "{all}");
        assert!(all.contains("has no"), "{all}");
    }

    #[test]
    fn one_run_is_refused() {
        assert_eq!(compare(&[sample_run()], &CompareOptions::default()), Err(CompareError::TooFew));
    }
}

#[cfg(test)]
mod kernel_tests {
    use super::*;

    #[test]
    fn the_kernel_is_named_once_whether_the_system_name_was_recorded_or_not() {
        assert_eq!(kernel_text("Linux 6.18.44-cloud x86_64"), "Linux 6.18.44-cloud x86_64");
        assert_eq!(kernel_text("6.8.0-45-generic"), "Linux 6.8.0-45-generic");
        let mut m = crate::fixture::sample_run().machine;
        m.kernel = Some("Linux 6.18.44 x86_64".into());
        let line = machine_line(&m);
        assert!(line.contains(", Linux 6.18.44 x86_64") && !line.contains("Linux Linux"), "{line}");
    }
}
