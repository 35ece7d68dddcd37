//! The history's stores: one SQLite file, or a PostgreSQL database, with the same schema and the same code
//! above a small [`Engine`] of statements and transactions.
//!
//! - Schema: a version table (`loadgate_schema`) and [`MIGRATIONS`], applied in order inside one transaction; a
//!   store whose version is newer than this build knows is refused and never written.
//! - Concurrent writers lose nothing: every write is one transaction (SQLite: WAL, a busy timeout and
//!   `BEGIN IMMEDIATE`; PostgreSQL: the schema created under an advisory lock), and the unique `run_id` turns a
//!   second add of the same run, racing or not, into [`Added::AlreadyThere`].
//! - Stores are untrusted: a row that is not a run gives [`HistoryError::Corrupt`], never a panic, and an export
//!   streams runs page by page.

mod engine;
mod location;
pub mod postgres;
pub mod sqlite;

use std::collections::BTreeMap;
use std::io::{BufRead, Read, Write};

pub use crate::error::HistoryError;
use crate::record::{InstanceRecord, RunRecord};
pub use engine::{Engine, Kind, Value};
pub use location::{is_postgres, redact};

/// The newest schema version this build knows: the last of [`MIGRATIONS`].
pub const SCHEMA_VERSION: u32 = 3;

/// The table holding the schema's version (one row per migration applied).
pub const VERSION_TABLE: &str = "loadgate_schema";

/// The tables of the schema, the version table first.
pub const TABLES: [&str; 5] = [VERSION_TABLE, "runs", "instances", "metrics", "repetition_metrics"];

/// The longest line an import reads (a run record with its histograms is a few hundred kilobytes).
pub const MAX_IMPORT_LINE: u64 = 64 * 1024 * 1024;

/// The most repetitions a stored instance may claim (a damaged count must not allocate without bound).
const MAX_REPETITIONS: usize = 100_000;

/// Runs read per page by an export.
const EXPORT_PAGE: i64 = 64;

/// One step of the schema: the statements that take a store from the version before to `version`. `{id}` in a
/// statement is the engine's auto-numbered primary key (`INTEGER PRIMARY KEY` in SQLite, an identity column in
/// PostgreSQL); everything else is SQL both engines read alike.
#[derive(Debug)]
pub struct Migration {
    /// The version this step makes.
    pub version: u32,
    /// The statements, in order.
    pub statements: &'static [&'static str],
}

/// Every schema step, in order: a store at version `n` gets the steps after `n`, in one transaction.
pub const MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        statements: &[
            "CREATE TABLE loadgate_schema (version BIGINT PRIMARY KEY, written_by TEXT NOT NULL)",
            "CREATE TABLE runs (
            id {id},
            run_id TEXT NOT NULL UNIQUE,
            spec TEXT NOT NULL,
            spec_file TEXT NOT NULL,
            plan_hash TEXT NOT NULL,
            git_commit TEXT,
            branch TEXT,
            label TEXT,
            started_at TEXT NOT NULL,
            started_key TEXT NOT NULL,
            machine TEXT NOT NULL,
            machine_summary TEXT NOT NULL,
            loadgate_version TEXT NOT NULL,
            outcome TEXT NOT NULL,
            record_version BIGINT NOT NULL
        )",
            "CREATE TABLE instances (
            run BIGINT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
            ord BIGINT NOT NULL,
            idx BIGINT NOT NULL,
            name TEXT NOT NULL,
            scenario TEXT NOT NULL,
            matrix TEXT NOT NULL,
            gate BIGINT NOT NULL,
            repetitions BIGINT NOT NULL,
            histogram TEXT,
            PRIMARY KEY (run, ord)
        )",
            "CREATE TABLE metrics (
            run BIGINT NOT NULL,
            ord BIGINT NOT NULL,
            metric TEXT NOT NULL,
            value DOUBLE PRECISION NOT NULL,
            PRIMARY KEY (run, ord, metric),
            FOREIGN KEY (run, ord) REFERENCES instances (run, ord) ON DELETE CASCADE
        )",
            "CREATE TABLE repetition_metrics (
            run BIGINT NOT NULL,
            ord BIGINT NOT NULL,
            repetition BIGINT NOT NULL,
            metric TEXT NOT NULL,
            value DOUBLE PRECISION NOT NULL,
            PRIMARY KEY (run, ord, repetition, metric),
            FOREIGN KEY (run, ord) REFERENCES instances (run, ord) ON DELETE CASCADE
        )",
            "CREATE INDEX runs_series ON runs (spec, branch, machine, started_key)",
            "CREATE INDEX runs_started ON runs (started_key, id)",
            "CREATE INDEX metrics_by_name ON metrics (metric, run)",
        ],
    },
    Migration {
        version: 2,
        // Whether an instance was profiled, and what its profile named.
        statements: &["ALTER TABLE instances ADD COLUMN profile TEXT"],
    },
    Migration {
        version: 3,
        // How an A/B run loaded its sides when it changes what its numbers mean (`duet`).
        statements: &["ALTER TABLE runs ADD COLUMN design TEXT"],
    },
];

/// Whether an add stored the run or found it there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Added {
    /// The run was stored under this id.
    New {
        /// The row id of the run.
        id: i64,
    },
    /// A run with the same `run_id` was there already, under this id; nothing was written.
    AlreadyThere {
        /// The row id of the run found.
        id: i64,
    },
}

/// What an import did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Imported {
    /// Runs stored.
    pub added: usize,
    /// Runs that were there already (same `run_id`).
    pub already_there: usize,
}

/// Which runs to read: every filter given must hold.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Query {
    /// The spec's name.
    pub spec: Option<String>,
    /// The branch.
    pub branch: Option<String>,
    /// Only runs recorded on no branch (with `branch` `None`): the series of runs made outside git and CI
    /// without `--branch`.
    pub unbranched: bool,
    /// The machine fingerprint ([`RunRecord::machine`]).
    pub machine: Option<String>,
    /// Runs started at or after this time, RFC 3339 (`2025-01-01`, `2025-01-01T12:00:00Z`, `...+02:00`).
    pub since: Option<String>,
    /// Only the newest N runs (still returned oldest first).
    pub limit: Option<usize>,
}

/// A history store.
pub enum Store {
    /// One SQLite file.
    Sqlite(sqlite::SqliteStore),
    /// A PostgreSQL database (boxed: its client is much larger than a SQLite connection).
    Postgres(Box<postgres::PostgresStore>),
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.describe())
    }
}

impl Query {
    /// The runs of `spec` on `branch` (`None`: on no branch), on `machine` when given: a series.
    pub fn series(spec: &str, branch: Option<String>, machine: Option<String>) -> Query {
        Query { spec: Some(spec.to_owned()), unbranched: branch.is_none(), branch, machine, since: None, limit: None }
    }
}
impl Store {
    /// Opens a store: `postgres://...` or `postgresql://...` is a PostgreSQL database (without TLS), anything else
    /// a SQLite file, created when missing (its directory must exist). A new store gets the schema; an older one
    /// is migrated; a newer one, a file that is not SQLite, or a database with other tables is refused.
    pub fn open(location: &str) -> Result<Store, HistoryError> {
        let mut store = if is_postgres(location) {
            Store::Postgres(Box::new(postgres::PostgresStore::connect(location)?))
        } else {
            Store::Sqlite(sqlite::SqliteStore::open(location)?)
        };
        store.prepare()?;
        Ok(store)
    }

    /// Where the store is, for people: `SQLite file history.db`, `PostgreSQL at db.example:5432/loadgate`. Never a
    /// password.
    pub fn describe(&self) -> String {
        match self {
            Store::Sqlite(s) => s.describe(),
            Store::Postgres(s) => s.describe(),
        }
    }

    fn parts(&mut self) -> (&mut dyn Engine, String) {
        let location = self.describe();
        match self {
            Store::Sqlite(s) => (s as &mut dyn Engine, location),
            Store::Postgres(s) => (&mut **s as &mut dyn Engine, location),
        }
    }

    /// Adds a run; a run with the same `run_id` is found instead, and nothing is written.
    pub fn add(&mut self, record: &RunRecord) -> Result<Added, HistoryError> {
        let key = start_key(record)?;
        let (engine, location) = self.parts();
        let mut db = Db { engine, location };
        db.in_transaction(true, |db| db.add(record, &key))
    }

    /// The runs that match a query, oldest first (by start time, then by the order they were added).
    pub fn runs(&mut self, query: &Query) -> Result<Vec<RunRecord>, HistoryError> {
        let since = match &query.since {
            Some(text) => Some(time_key(text).ok_or_else(|| HistoryError::Invalid {
                message: format!("since `{text}` is not an RFC 3339 time (2025-01-31 or 2025-01-31T12:00:00Z)"),
            })?),
            None => None,
        };
        let (engine, location) = self.parts();
        let mut db = Db { engine, location };
        db.in_transaction(false, |db| {
            let mut filters = Vec::new();
            let mut params = Vec::new();
            for (column, value) in [("spec", &query.spec), ("branch", &query.branch), ("machine", &query.machine)] {
                if let Some(v) = value {
                    filters.push(format!("{column} = ?"));
                    params.push(Value::Text(v.clone()));
                }
            }
            if query.unbranched && query.branch.is_none() {
                filters.push("branch IS NULL".to_owned());
            }
            if let Some(key) = since {
                filters.push("started_key >= ?".to_owned());
                params.push(Value::Text(key));
            }
            let mut sql = format!("SELECT {RUN_COLUMNS} FROM runs");
            if !filters.is_empty() {
                sql.push_str(" WHERE ");
                sql.push_str(&filters.join(" AND "));
            }
            match query.limit {
                Some(n) => {
                    sql.push_str(" ORDER BY started_key DESC, id DESC LIMIT ?");
                    params.push(Value::Int(i64::try_from(n).unwrap_or(i64::MAX)));
                }
                None => sql.push_str(" ORDER BY started_key, id"),
            }
            let rows = db.query("reading runs", &sql, &params, &RUN_KINDS)?;
            let mut runs = Vec::with_capacity(rows.len());
            for row in rows {
                runs.push(db.run_from_row(&row)?);
            }
            if query.limit.is_some() {
                runs.reverse();
            }
            Ok(runs)
        })
    }

    /// Writes every run as JSON lines, one [`RunRecord`] per line, oldest first, reading the store page by page
    /// (in one snapshot). Returns the number of runs written.
    pub fn export(&mut self, out: &mut dyn Write) -> Result<usize, HistoryError> {
        let (engine, location) = self.parts();
        let mut db = Db { engine, location };
        db.in_transaction(false, |db| {
            let mut written = 0;
            let mut after: Option<(String, i64)> = None;
            loop {
                let (sql, params) = match &after {
                    None => (
                        format!("SELECT {RUN_COLUMNS}, started_key FROM runs ORDER BY started_key, id LIMIT ?"),
                        vec![Value::Int(EXPORT_PAGE)],
                    ),
                    Some((key, id)) => (
                        format!(
                            "SELECT {RUN_COLUMNS}, started_key FROM runs WHERE started_key > ? OR (started_key = ? \
                             AND id > ?) ORDER BY started_key, id LIMIT ?"
                        ),
                        vec![
                            Value::Text(key.clone()),
                            Value::Text(key.clone()),
                            Value::Int(*id),
                            Value::Int(EXPORT_PAGE),
                        ],
                    ),
                };
                let mut kinds = RUN_KINDS.to_vec();
                kinds.push(Kind::Text);
                let rows = db.query("exporting runs", &sql, &params, &kinds)?;
                let page = rows.len();
                for row in rows {
                    let record = db.run_from_row(&row)?;
                    let id = int_at(&row, 0).unwrap_or(i64::MAX);
                    let key = text_at(&row, RUN_KINDS.len()).unwrap_or_default();
                    let io = |source| HistoryError::Io { doing: "writing the export".to_owned(), source };
                    serde_json::to_writer(&mut *out, &record).map_err(|e| io(e.into()))?;
                    out.write_all(b"\n").map_err(io)?;
                    written += 1;
                    after = Some((key, id));
                }
                if page < EXPORT_PAGE as usize {
                    break;
                }
            }
            out.flush().map_err(|source| HistoryError::Io { doing: "writing the export".to_owned(), source })?;
            Ok(written)
        })
    }

    /// Reads JSON lines of [`RunRecord`]s (an [`export`](Store::export)) and adds them, all in one transaction:
    /// a line that is not a run record is an [`HistoryError::Import`] naming it, and nothing is imported. Empty
    /// lines are skipped.
    pub fn import(&mut self, input: &mut dyn BufRead) -> Result<Imported, HistoryError> {
        let (engine, location) = self.parts();
        let mut db = Db { engine, location };
        db.in_transaction(true, |db| {
            let mut imported = Imported::default();
            let mut buf = Vec::new();
            let mut line = 0;
            loop {
                buf.clear();
                let read = (&mut *input)
                    .take(MAX_IMPORT_LINE + 1)
                    .read_until(b'\n', &mut buf)
                    .map_err(|source| HistoryError::Io { doing: "reading the import".to_owned(), source })?;
                if read == 0 {
                    break;
                }
                line += 1;
                let fail = |message: String| HistoryError::Import { line, message };
                if buf.len() as u64 > MAX_IMPORT_LINE {
                    return Err(fail(format!("longer than {MAX_IMPORT_LINE} bytes")));
                }
                let text = std::str::from_utf8(&buf).map_err(|e| fail(format!("not UTF-8: {e}")))?;
                if text.trim().is_empty() {
                    continue;
                }
                let record: RunRecord =
                    serde_json::from_str(text).map_err(|e| fail(format!("not a run record: {e}")))?;
                record.validate().map_err(fail)?;
                let key = start_key(&record).map_err(|e| fail(e.to_string()))?;
                match db.add(&record, &key).map_err(|e| fail(e.to_string()))? {
                    Added::New { .. } => imported.added += 1,
                    Added::AlreadyThere { .. } => imported.already_there += 1,
                }
            }
            Ok(imported)
        })
    }

    /// The store's schema version.
    pub fn schema_version(&mut self) -> Result<u32, HistoryError> {
        let (engine, location) = self.parts();
        let mut db = Db { engine, location };
        db.in_transaction(false, |db| match db.version()? {
            Some(v) => Ok(v),
            None => Err(HistoryError::Schema { location: db.location.clone(), message: "it has no version".into() }),
        })
    }

    /// Checks the store's schema and brings it to [`SCHEMA_VERSION`]: a first look without writing (a newer or
    /// foreign store is refused untouched), then the missing steps under the write lock, looking again there (a
    /// concurrent opener may have made them).
    fn prepare(&mut self) -> Result<(), HistoryError> {
        let (engine, location) = self.parts();
        let mut db = Db { engine, location };
        let found = db.in_transaction(false, |db| db.version())?;
        if found == Some(SCHEMA_VERSION) {
            return db.engine.settle().map_err(|m| db.sql("setting the store up", m));
        }
        db.engine.settle().map_err(|m| db.sql("setting the store up", m))?;
        db.in_transaction(true, |db| {
            db.engine.lock_schema().map_err(|m| db.sql("locking the schema", m))?;
            let found = db.version()?.unwrap_or(0);
            let id = db.engine.id_column();
            for migration in MIGRATIONS.iter().filter(|m| m.version > found) {
                for statement in migration.statements {
                    db.engine
                        .batch(&statement.replace("{id}", id))
                        .map_err(|m| db.sql(&format!("migrating to schema version {}", migration.version), m))?;
                }
                db.execute(
                    "recording the schema version",
                    "INSERT INTO loadgate_schema (version, written_by) VALUES (?, ?)",
                    &[
                        Value::Int(i64::from(migration.version)),
                        Value::Text(format!("loadgate {}", env!("CARGO_PKG_VERSION"))),
                    ],
                )?;
            }
            Ok(())
        })
    }
}

/// The columns of a run's row, in the order [`Db::run_from_row`] reads them.
const RUN_COLUMNS: &str = "id, run_id, spec, spec_file, plan_hash, git_commit, branch, label, started_at, machine, \
                           machine_summary, loadgate_version, outcome, record_version, design";
const RUN_KINDS: [Kind; 15] = [
    Kind::Int,
    Kind::Text,
    Kind::Text,
    Kind::Text,
    Kind::Text,
    Kind::OptText,
    Kind::OptText,
    Kind::OptText,
    Kind::Text,
    Kind::Text,
    Kind::Text,
    Kind::Text,
    Kind::Text,
    Kind::Int,
    Kind::OptText,
];

fn int_at(row: &[Value], i: usize) -> Option<i64> {
    match row.get(i) {
        Some(Value::Int(v)) => Some(*v),
        _ => None,
    }
}

fn real_at(row: &[Value], i: usize) -> Option<f64> {
    match row.get(i) {
        Some(Value::Real(v)) => Some(*v),
        _ => None,
    }
}

fn text_at(row: &[Value], i: usize) -> Option<String> {
    match row.get(i) {
        Some(Value::Text(v)) => Some(v.clone()),
        _ => None,
    }
}

fn opt_text_at(row: &[Value], i: usize) -> Option<Option<String>> {
    match row.get(i) {
        Some(Value::OptText(v)) => Some(v.clone()),
        _ => None,
    }
}

/// The sortable key of a record's start time.
fn start_key(record: &RunRecord) -> Result<String, HistoryError> {
    time_key(&record.started_at).ok_or_else(|| HistoryError::Invalid {
        message: format!("run {}: started_at `{}` is not an RFC 3339 time", record.run_id, record.started_at),
    })
}

/// An engine with the store's description, for errors.
struct Db<'a> {
    engine: &'a mut dyn Engine,
    location: String,
}

impl Db<'_> {
    fn sql(&self, doing: &str, message: String) -> HistoryError {
        HistoryError::Sql { location: self.location.clone(), doing: doing.to_owned(), message }
    }

    fn corrupt(&self, run: &str, message: impl Into<String>) -> HistoryError {
        HistoryError::Corrupt { location: self.location.clone(), run: run.to_owned(), message: message.into() }
    }

    fn execute(&mut self, doing: &str, sql: &str, params: &[Value]) -> Result<u64, HistoryError> {
        self.engine.execute(sql, params).map_err(|m| self.sql(doing, m))
    }

    fn query(
        &mut self,
        doing: &str,
        sql: &str,
        params: &[Value],
        kinds: &[Kind],
    ) -> Result<Vec<Vec<Value>>, HistoryError> {
        self.engine.query(sql, params, kinds).map_err(|m| self.sql(doing, m))
    }

    /// Runs `f` in a transaction, committed when it succeeds and rolled back when it fails.
    fn in_transaction<T>(
        &mut self,
        write: bool,
        f: impl FnOnce(&mut Self) -> Result<T, HistoryError>,
    ) -> Result<T, HistoryError> {
        let begun = if write { self.engine.begin_write() } else { self.engine.begin_read() };
        begun.map_err(|m| self.sql("starting a transaction", m))?;
        match f(self) {
            Ok(value) => {
                if let Err(m) = self.engine.commit() {
                    self.engine.rollback();
                    return Err(self.sql("committing", m));
                }
                Ok(value)
            }
            Err(e) => {
                self.engine.rollback();
                Err(e)
            }
        }
    }

    /// The schema version, `None` for an empty store; a store with other tables and no version table is foreign.
    fn version(&mut self) -> Result<Option<u32>, HistoryError> {
        let tables = self.engine.tables().map_err(|m| self.sql("listing tables", m))?;
        if !tables.iter().any(|t| t == VERSION_TABLE) {
            let foreign: Vec<&String> = if self.engine.owns_database() {
                tables.iter().collect()
            } else {
                tables.iter().filter(|t| TABLES.contains(&t.as_str())).collect()
            };
            if foreign.is_empty() {
                return Ok(None);
            }
            let tables = foreign.iter().map(|t| format!("`{t}`")).collect::<Vec<_>>().join(", ");
            return Err(HistoryError::Foreign { location: self.location.clone(), tables });
        }
        let rows = self.query(
            "reading the schema version",
            "SELECT version FROM loadgate_schema ORDER BY version DESC LIMIT 1",
            &[],
            &[Kind::Int],
        )?;
        let schema = |message: String| HistoryError::Schema { location: self.location.clone(), message };
        let Some(version) = rows.first().and_then(|r| int_at(r, 0)) else {
            return Err(schema(format!("`{VERSION_TABLE}` has no version")));
        };
        let version =
            u32::try_from(version).map_err(|_| schema(format!("schema version {version} is not a version")))?;
        if version > SCHEMA_VERSION {
            return Err(HistoryError::NewerSchema {
                location: self.location.clone(),
                found: version,
                known: SCHEMA_VERSION,
            });
        }
        if version == 0 {
            return Err(schema("schema version 0 is not a version".to_owned()));
        }
        Ok(Some(version))
    }

    /// Adds a run inside the current write transaction.
    fn add(&mut self, record: &RunRecord, key: &str) -> Result<Added, HistoryError> {
        let doing = format!("adding run {}", record.run_id);
        let rows = self.query(
            &doing,
            "INSERT INTO runs (run_id, spec, spec_file, plan_hash, git_commit, branch, label, started_at, started_key, \
             machine, machine_summary, loadgate_version, outcome, record_version, design) \
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (run_id) DO NOTHING RETURNING id",
            &[
                Value::Text(record.run_id.clone()),
                Value::Text(record.spec.clone()),
                Value::Text(record.spec_file.clone()),
                Value::Text(record.plan_hash.clone()),
                Value::OptText(record.commit.clone()),
                Value::OptText(record.branch.clone()),
                Value::OptText(record.label.clone()),
                Value::Text(record.started_at.clone()),
                Value::Text(key.to_owned()),
                Value::Text(record.machine.clone()),
                Value::Text(record.machine_summary.clone()),
                Value::Text(record.loadgate_version.clone()),
                Value::Text(record.outcome.clone()),
                Value::Int(i64::from(record.record_version)),
                Value::OptText(record.design.clone()),
            ],
            &[Kind::Int],
        )?;
        let Some(id) = rows.first().and_then(|r| int_at(r, 0)) else {
            let rows = self.query(
                &doing,
                "SELECT id FROM runs WHERE run_id = ?",
                &[Value::Text(record.run_id.clone())],
                &[Kind::Int],
            )?;
            return match rows.first().and_then(|r| int_at(r, 0)) {
                Some(id) => Ok(Added::AlreadyThere { id }),
                None => Err(self.sql(&doing, "the run was neither added nor found".to_owned())),
            };
        };
        let count = |n: usize| i64::try_from(n).unwrap_or(i64::MAX);
        for (ord, instance) in record.instances.iter().enumerate() {
            let matrix = serde_json::to_string(&instance.matrix).unwrap_or_else(|_| "[]".to_owned());
            self.execute(
                &doing,
                "INSERT INTO instances (run, ord, idx, name, scenario, matrix, gate, repetitions, histogram, \
                 profile) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                &[
                    Value::Int(id),
                    Value::Int(count(ord)),
                    Value::Int(count(instance.index)),
                    Value::Text(instance.name.clone()),
                    Value::Text(instance.scenario.clone()),
                    Value::Text(matrix),
                    Value::Int(i64::from(instance.gate)),
                    Value::Int(count(instance.repetitions.len())),
                    Value::OptText(instance.histogram.clone()),
                    Value::OptText(instance.profile.clone()),
                ],
            )?;
            for (metric, value) in &instance.metrics {
                self.execute(
                    &doing,
                    "INSERT INTO metrics (run, ord, metric, value) VALUES (?, ?, ?, ?)",
                    &[Value::Int(id), Value::Int(count(ord)), Value::Text(metric.clone()), Value::Real(*value)],
                )?;
            }
            for (repetition, values) in instance.repetitions.iter().enumerate() {
                for (metric, value) in values {
                    self.execute(
                        &doing,
                        "INSERT INTO repetition_metrics (run, ord, repetition, metric, value) VALUES (?, ?, ?, ?, ?)",
                        &[
                            Value::Int(id),
                            Value::Int(count(ord)),
                            Value::Int(count(repetition)),
                            Value::Text(metric.clone()),
                            Value::Real(*value),
                        ],
                    )?;
                }
            }
        }
        Ok(Added::New { id })
    }

    /// A run from its row ([`RUN_COLUMNS`]) and its instances' rows.
    fn run_from_row(&mut self, row: &[Value]) -> Result<RunRecord, HistoryError> {
        let id = int_at(row, 0).ok_or_else(|| self.corrupt("?", "its id is not a number"))?;
        let run_id = text_at(row, 1).ok_or_else(|| self.corrupt(&format!("#{id}"), "its run_id is not text"))?;
        let bad = |what: &str| format!("its {what} is not readable");
        let text = |i: usize, what: &str| text_at(row, i).ok_or_else(|| bad(what));
        let opt = |i: usize, what: &str| opt_text_at(row, i).ok_or_else(|| bad(what));
        let read = || -> Result<RunRecord, String> {
            let version = int_at(row, 13).ok_or_else(|| bad("record_version"))?;
            Ok(RunRecord {
                record_version: u32::try_from(version)
                    .ok()
                    .filter(|v| (1..=crate::record::RECORD_VERSION).contains(v))
                    .ok_or_else(|| format!("record_version {version} is not one this build knows"))?,
                run_id: run_id.clone(),
                spec: text(2, "spec")?,
                spec_file: text(3, "spec_file")?,
                plan_hash: text(4, "plan_hash")?,
                commit: opt(5, "git_commit")?,
                branch: opt(6, "branch")?,
                label: opt(7, "label")?,
                started_at: text(8, "started_at")?,
                machine: text(9, "machine")?,
                machine_summary: text(10, "machine_summary")?,
                loadgate_version: text(11, "loadgate_version")?,
                outcome: text(12, "outcome")?,
                design: opt(14, "design")?,
                instances: Vec::new(),
            })
        };
        let mut record = read().map_err(|m| self.corrupt(&run_id, m))?;
        record.instances = self.instances_of(id, &run_id)?;
        Ok(record)
    }

    /// The instances of run `id`, with their metrics.
    fn instances_of(&mut self, id: i64, run_id: &str) -> Result<Vec<InstanceRecord>, HistoryError> {
        let doing = format!("reading run {run_id}");
        let rows = self.query(
            &doing,
            "SELECT ord, idx, name, scenario, matrix, gate, repetitions, histogram, profile FROM instances \
             WHERE run = ? ORDER BY ord",
            &[Value::Int(id)],
            &[
                Kind::Int,
                Kind::Int,
                Kind::Text,
                Kind::Text,
                Kind::Text,
                Kind::Int,
                Kind::Int,
                Kind::OptText,
                Kind::OptText,
            ],
        )?;
        let mut instances = Vec::with_capacity(rows.len());
        let mut by_ord = BTreeMap::new();
        for row in &rows {
            let read = || -> Result<(i64, InstanceRecord), String> {
                let ord = int_at(row, 0).ok_or("an instance's ord is not a number")?;
                let idx = int_at(row, 1)
                    .and_then(|v| usize::try_from(v).ok())
                    .ok_or("an instance's index is not an index")?;
                let name = text_at(row, 2).ok_or("an instance's name is not text")?;
                let matrix_text = text_at(row, 4).ok_or("an instance's matrix is not text")?;
                let matrix: Vec<(String, String)> = serde_json::from_str(&matrix_text)
                    .map_err(|e| format!("instance `{name}`: its matrix is not a list of [name, value] pairs: {e}"))?;
                let gate = match int_at(row, 5) {
                    Some(0) => false,
                    Some(1) => true,
                    _ => return Err(format!("instance `{name}`: gate is neither 0 nor 1")),
                };
                let repetitions = int_at(row, 6)
                    .and_then(|v| usize::try_from(v).ok())
                    .filter(|n| *n <= MAX_REPETITIONS)
                    .ok_or_else(|| format!("instance `{name}`: its repetition count is not a count"))?;
                Ok((
                    ord,
                    InstanceRecord {
                        index: idx,
                        scenario: text_at(row, 3).ok_or("an instance's scenario is not text")?,
                        name,
                        matrix,
                        gate,
                        metrics: BTreeMap::new(),
                        repetitions: vec![BTreeMap::new(); repetitions],
                        histogram: opt_text_at(row, 7).ok_or("an instance's histogram is not text")?,
                        profile: opt_text_at(row, 8).ok_or("an instance's profile is not text")?,
                    },
                ))
            };
            let (ord, instance) = read().map_err(|m| self.corrupt(run_id, m))?;
            if by_ord.insert(ord, instances.len()).is_some() {
                return Err(self.corrupt(run_id, format!("two instances at ord {ord}")));
            }
            instances.push(instance);
        }
        let rows = self.query(
            &doing,
            "SELECT ord, metric, value FROM metrics WHERE run = ? ORDER BY ord, metric",
            &[Value::Int(id)],
            &[Kind::Int, Kind::Text, Kind::Real],
        )?;
        for row in &rows {
            let (ord, metric, value) = metric_row(row, [0, 1, 2]).map_err(|m| self.corrupt(run_id, m))?;
            let instance = by_ord.get(&ord).and_then(|i| instances.get_mut(*i)).ok_or_else(|| {
                self.corrupt(run_id, format!("metric {metric} of an instance that is not there ({ord})"))
            })?;
            instance.metrics.insert(metric, value);
        }
        let rows = self.query(
            &doing,
            "SELECT ord, repetition, metric, value FROM repetition_metrics WHERE run = ? ORDER BY ord, repetition, metric",
            &[Value::Int(id)],
            &[Kind::Int, Kind::Int, Kind::Text, Kind::Real],
        )?;
        for row in &rows {
            let repetition = int_at(row, 1).and_then(|r| usize::try_from(r).ok());
            let (ord, metric, value) = metric_row(row, [0, 2, 3]).map_err(|m| self.corrupt(run_id, m))?;
            let slot = by_ord
                .get(&ord)
                .and_then(|i| instances.get_mut(*i))
                .and_then(|instance| instance.repetitions.get_mut(repetition?))
                .ok_or_else(|| {
                    self.corrupt(
                        run_id,
                        format!("metric {metric} of a repetition that is not there ({ord}, {repetition:?})"),
                    )
                })?;
            slot.insert(metric, value);
        }
        Ok(instances)
    }
}

/// `(ord, metric, value)` from the columns `at` of a metric row, the metric's name and value checked.
fn metric_row(row: &[Value], at: [usize; 3]) -> Result<(i64, String, f64), String> {
    let ord = int_at(row, at[0]).ok_or("a metric's instance is not a number")?;
    let metric = text_at(row, at[1]).ok_or("a metric's name is not text")?;
    if metric.parse::<loadgate_model::Metric>().is_err() {
        return Err(format!("`{metric}` is not a metric"));
    }
    let value = real_at(row, at[2]).ok_or_else(|| format!("the value of {metric} is not a number"))?;
    if !value.is_finite() {
        return Err(format!("the value of {metric} is {value}"));
    }
    Ok((ord, metric, value))
}

/// A time as a key that sorts as the time does: `YYYY-MM-DDTHH:MM:SS.nnnnnnnnnZ` in UTC, from RFC 3339
/// (`2025-01-31T12:00:00Z`, `...00.25+02:00`, lower case `t`/`z` or a space as the separator), or a date alone
/// (midnight UTC). A time without an offset is taken as UTC. `None` for anything else.
pub fn time_key(text: &str) -> Option<String> {
    let s = text.trim().as_bytes();
    let digits = |from: usize, n: usize| -> Option<i64> {
        let part = s.get(from..from + n)?;
        part.iter().all(u8::is_ascii_digit).then(|| part.iter().fold(0i64, |acc, d| acc * 10 + i64::from(d - b'0')))
    };
    let year = digits(0, 4)?;
    let month = digits(5, 2)?;
    let day = digits(8, 2)?;
    if s.get(4) != Some(&b'-') || s.get(7) != Some(&b'-') || !(1..=12).contains(&month) {
        return None;
    }
    let days = days_since_epoch(year, month, day)?;
    let (mut hour, mut minute, mut second, mut nanos, mut offset) = (0, 0, 0, 0i64, 0i64);
    if s.len() > 10 {
        if !matches!(s[10], b'T' | b't' | b' ') {
            return None;
        }
        hour = digits(11, 2)?;
        minute = digits(14, 2)?;
        if s.get(13) != Some(&b':') || hour > 23 || minute > 59 {
            return None;
        }
        let mut i = 16;
        if s.get(i) == Some(&b':') {
            second = digits(17, 2)?;
            if second > 60 {
                return None;
            }
            second = second.min(59);
            i = 19;
            if s.get(i) == Some(&b'.') {
                i += 1;
                let start = i;
                while s.get(i).is_some_and(u8::is_ascii_digit) {
                    if i - start < 9 {
                        nanos = nanos * 10 + i64::from(s[i] - b'0');
                    }
                    i += 1;
                }
                if i == start {
                    return None;
                }
                for _ in (i - start)..9 {
                    nanos *= 10;
                }
            }
        }
        match s.get(i) {
            None => {}
            Some(b'Z' | b'z') if i + 1 == s.len() => {}
            Some(sign @ (b'+' | b'-')) if i + 6 == s.len() && s[i + 3] == b':' => {
                let (h, m) = (digits(i + 1, 2)?, digits(i + 4, 2)?);
                if h > 23 || m > 59 {
                    return None;
                }
                offset = (h * 60 + m) * 60 * if *sign == b'+' { 1 } else { -1 };
            }
            _ => return None,
        }
    }
    let seconds = days * 86_400 + hour * 3600 + minute * 60 + second - offset;
    let (y, m, d) = date_of_day(seconds.div_euclid(86_400))?;
    if !(0..=9999).contains(&y) {
        return None;
    }
    let rest = seconds.rem_euclid(86_400);
    Some(format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{nanos:09}Z", rest / 3600, rest / 60 % 60, rest % 60))
}

/// The time key ([`time_key`]) of `seconds` before `text`: `since` for "the last 30 days" of a run. `None` when
/// `text` is not a time.
pub fn time_key_before(text: &str, seconds: u64) -> Option<String> {
    let key = time_key(text)?;
    let field = |from: usize, n: usize| key.get(from..from + n).and_then(|x| x.parse::<i64>().ok());
    let (y, m, d) = (field(0, 4)?, field(5, 2)?, field(8, 2)?);
    let (h, mi, se) = (field(11, 2)?, field(14, 2)?, field(17, 2)?);
    let at = days_since_epoch(y, m, d)? * 86_400 + h * 3600 + mi * 60 + se - i64::try_from(seconds).ok()?;
    let (y, m, d) = date_of_day(at.div_euclid(86_400))?;
    if !(0..=9999).contains(&y) {
        return None;
    }
    let rest = at.rem_euclid(86_400);
    Some(format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{}Z",
        rest / 3600,
        rest / 60 % 60,
        rest % 60,
        key.get(20..29)?
    ))
}

/// Days from 1970-01-01 to a date of the proleptic Gregorian calendar, through chrono; `None` when the month has
/// no such day.
fn days_since_epoch(y: i64, m: i64, d: i64) -> Option<i64> {
    let date = chrono::NaiveDate::from_ymd_opt(i32::try_from(y).ok()?, u32::try_from(m).ok()?, u32::try_from(d).ok()?)?;
    Some(date.signed_duration_since(chrono::DateTime::UNIX_EPOCH.date_naive()).num_days())
}

/// The date (year, month, day) of a day counted from 1970-01-01, through chrono.
fn date_of_day(days: i64) -> Option<(i64, i64, i64)> {
    use chrono::Datelike;
    let date = chrono::DateTime::UNIX_EPOCH.date_naive().checked_add_signed(chrono::TimeDelta::try_days(days)?)?;
    Some((i64::from(date.year()), i64::from(date.month()), i64::from(date.day())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_sort_as_keys() {
        assert_eq!(time_key("2025-01-01T12:00:00Z").as_deref(), Some("2025-01-01T12:00:00.000000000Z"));
        assert_eq!(time_key("2025-01-01").as_deref(), Some("2025-01-01T00:00:00.000000000Z"));
        assert_eq!(
            time_key_before("2025-03-01T12:00:00.25Z", 86_400 * 30).as_deref(),
            Some("2025-01-30T12:00:00.250000000Z")
        );
        assert_eq!(time_key("2025-01-01T12:00:00.5Z").as_deref(), Some("2025-01-01T12:00:00.500000000Z"));
        assert_eq!(time_key("2025-01-01T01:30:00+02:00").as_deref(), Some("2024-12-31T23:30:00.000000000Z"));
        assert_eq!(
            time_key("2024-02-29t23:59:59.123456789123-00:30").as_deref(),
            Some("2024-03-01T00:29:59.123456789Z")
        );
        assert_eq!(time_key("2025-01-01 12:00").as_deref(), Some("2025-01-01T12:00:00.000000000Z"));
        for bad in [
            "",
            "2025",
            "2025-13-01",
            "2025-02-29",
            "2025-01-01T25:00:00Z",
            "2025-01-01T12:00:00+2",
            "yesterday",
            "2025-01-01T12:00:00.Z",
            "2025-01-01T12:00:00Zjunk",
        ] {
            assert_eq!(time_key(bad), None, "{bad}");
        }
        let a = time_key("2025-01-01T12:00:00Z").unwrap();
        let b = time_key("2025-01-01T12:00:00.5Z").unwrap();
        assert!(a < b, "the text compares the wrong way round, the key does not");
        for days in [-1000, 0, 1, 59, 365, 10_957, 20_000, 2_932_896] {
            let (y, m, d) = date_of_day(days).unwrap();
            assert_eq!(days_since_epoch(y, m, d), Some(days));
        }
    }

    #[test]
    fn passwords_never_show() {
        assert_eq!(redact("postgres://me:s3cret@db:5432/h"), "postgres://me:***@db:5432/h");
        assert_eq!(
            redact("postgresql://me@db/h?password=s3cret&sslmode=disable"),
            "postgresql://me@db/h?password=***&sslmode=disable"
        );
        assert_eq!(redact("postgres://me:p@ss:w@rd@db/h"), "postgres://me:***@db/h");
        assert_eq!(redact("history.db"), "history.db");
    }
}
