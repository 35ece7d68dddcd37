//! loadgate's memory: every run kept in a store (one SQLite file, or a team's PostgreSQL), read back as series
//! per spec, scenario instance, metric, branch and machine, and searched for change points.
//!
//! - [`record`]: what the history keeps of a run ([`record::RunRecord`], built from a `results.json`).
//! - [`store`]: the SQLite and PostgreSQL stores: schema versions and migrations, concurrent writers, export and
//!   import as JSON lines.
//! - [`changepoint`]: E-divisive means with a two-sided t-test (as Apache Otava), pure and deterministic.
//! - [`series`]: a metric of a scenario instance over the runs (`loadgate_results::history::HistorySeries`), its
//!   change points marked as regressions or improvements in the metric's direction.
//! - [`gate`]: the spec's `history:` checks (drift since a reference, the newest change point) judged into
//!   verdicts, with the series behind each.

pub mod changepoint;
pub mod error;
pub mod gate;
pub mod record;
pub mod series;
pub mod store;
