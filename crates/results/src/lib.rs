//! loadgate's results model: measurements, validity, verdicts, and their versioned JSON form.
//!
//! Nothing here knows the engine: the engine measures a [`PhaseMeasurement`] per scenario instance (its records,
//! counts, histograms, timeline and the like, are `loadgate_measure`'s, re-exported here at their old paths), which
//! becomes a [`ScenarioResult`] (`From`) to judge; the runner collects them into [`RunResults`], and every report
//! reads only this model.
//!
//! The API:
//!
//! - the model ([`RunResults`], [`ScenarioResult`], [`Verdict`], [`Outcome`], ...), latencies in microseconds,
//!   histograms serialized as base64 of the compressed V2 encoding (`HISTFAAA...`, see [`histogram_serde`]);
//! - [`evaluate`]`(slos, result, baseline) -> Vec<Verdict>` turns a scenario's SLOs into verdicts, and
//!   [`baseline_for`] finds the baseline instance to compare with; the rules (error rate, baselines, per-request
//!   SLOs, `gate: false`) are in [`verdict`];
//! - [`outcome()`]`(results) -> Outcome` derives the run's outcome and exit code; the precedence and the exit
//!   codes ([`exit_codes`]) are in [`mod@outcome`];
//! - [`to_json`] / [`from_json`] write and read `results.json`, refusing an unknown `schema_version`;
//!   [`json_schema`] is the JSON Schema committed as `schemas/results.schema.json`;
//! - [`hgrm()`]`(histogram) -> String` prints wrk2's percentile spectrum (`.hgrm`), in milliseconds;
//! - [`sweeps`]`(results) -> Vec<Sweep>` groups a run's matrix cells into sweeps and names each sweep's knee
//!   ([`knee()`]`(cells) -> Option<Knee>`: where throughput stopped growing while latency rose, or collapsed);
//!   the CLI stores it in [`RunResults::sweeps`] after every phase, and the rules are in [`mod@knee`];
//! - [`who_limited`]`(scenario, context) -> Option<Limited>`: when an open or ramp load fell short of its rate,
//!   whether the generator, the plan's connections or the target limited it (rules in [`mod@limit`]);
//! - [`sweeps_judged`]`(results, objectives) -> Vec<Sweep>`: the sweeps with their sweep SLOs judged
//!   (`knee >= 256`, `throughput_drop <= 10%`, `p99@largest <= 3 * p99@smallest`); the rules are in [`mod@sweep`];
//! - [`response_time_buckets`]`(scenario) -> ResponseTimeBuckets`: Gatling's `t < 800 ms` / `800 ms <= t < 1200
//!   ms` / `t >= 1200 ms` / `failed` distribution, and [`peak_users_active`], for user injection (computed on
//!   render, see [`mod@users`]);
//! - [`capacity::judge_step`]`(step) -> (StepVerdict, reasons)`: how one step of a capacity search fared (pass,
//!   fail, or invalid as a measurement), and the search's outcome in [`Capacity`] (the rate found, every step,
//!   why it stopped); the `capacity` SLO metric reads it (rules in [`mod@capacity`]);
//! - [`merge_scenarios`] and [`Histograms::add`] combine measurements without averaging percentiles;
//! - [`fixture::sample_run`] is a realistic hand-built run for tests of anything that reads results;
//! - [`stats`]: verdicts over repetitions (one number per repetition): the median's order-statistic interval,
//!   Hodges-Lehmann ratios with exact Wilcoxon / Mann-Whitney intervals, Holm, and PASS / FAIL / INCONCLUSIVE
//!   ([`stats::verdicts`]`(checks, confidence) -> Vec<Result<CheckVerdict, StatsError>>`);
//! - [`compare::compare`]`(runs, options) -> Comparison`: several runs side by side, matched by scenario instance,
//!   with each change against the first (or the previous) run and, over repetitions, its interval and a word;
//! - [`history`]: a metric's series over a history store's runs with its change points ([`history::HistorySeries`]),
//!   carried in [`RunResults::history`] by a run judged against its history;
//! - [`checks`]: response checks (`check:`): their merge, the `checks_failed_ungated` warning and their words;
//!   the `checks` and `check_failures` SLOs are judged in [`verdict`], and [`verify::judge`] turns a
//!   verification's result into a pass or a message;
//! - profiles of the target (issue 41): [`stacks::Stacks`], a bounded table of call stacks with the folded format
//!   ([`stacks::parse_folded`], [`stacks::Stacks::write_folded`]) and the names frames are matched by
//!   ([`stacks::match_key`]); [`pprof::decode`] reads Go's pprof profiles into it; [`frames::differential`] names
//!   the frames whose CPU time per request changed over paired A/B rounds (Westfall-Young max-T) and
//!   [`frames::time_table`] says where one side's time went; results.json carries them as
//!   [`ScenarioProfile`] (`ScenarioResult::profile`, made by [`frames::scenario_profile`]; the stacks go to a
//!   folded file beside it, [`frames::folded_file_name`]);
//! - [`mod@format`] formats numbers for people (`1.25ms`, `94,737/s`), shared by every report.

pub mod capacity;
pub mod checks;
pub mod compare;
pub mod fixture;
pub mod format;
pub mod frames;
pub mod gate;
pub mod hgrm;
pub mod history;
pub mod identity;
pub mod json;
pub mod knee;
pub mod limit;
pub mod merge;
pub mod model;
pub mod outcome;
pub mod power;
pub mod pprof;
pub mod resources;
pub mod shards;
pub mod stacks;
pub mod stats;
pub mod sweep;
pub mod users;
pub mod verdict;
pub mod verify;

pub use hgrm::hgrm;
pub use json::{from_json, json_schema, to_json, write_json, ResultsError};
pub use knee::{knee, sweeps};
pub use limit::{who_limited, LimitContext, TargetCpu};
pub use merge::{merge_concurrent, merge_scenarios};
pub use model::*;
pub use outcome::{each_kind_once, exit_codes, outcome, unreachable_over_tls};
pub use resources::phase_resources;
pub use shards::{merge_shards, merge_shards_against, ShardPart};
pub use stats::{Check, CheckVerdict, Design, Goal, Lean, StatsError, Verdict3};
pub use sweep::{judge_sweep, sweeps_judged, SweepObjectives};
pub use users::{peak_users_active, response_time_buckets};
pub use verdict::{baseline_for, error_rate, evaluate, measure, measure_checks};

pub use loadgate_measure::histogram_serde;
