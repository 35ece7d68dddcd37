//! The SQLite engine: one file, WAL journal, a busy timeout, and `BEGIN IMMEDIATE` for every write so that
//! writers from parallel jobs queue instead of failing.
//!
//! The file is untrusted: the connection is defensive (no writes to the schema's own tables, no functions with
//! side effects from a view or trigger the file defines), and a file that is not SQLite is
//! [`HistoryError::NotADatabase`].

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rusqlite::config::DbConfig;
use rusqlite::types::Value as SqlValue;
use rusqlite::{Connection, ErrorCode, OpenFlags};

use super::engine::{Engine, Kind, Value};
use crate::error::HistoryError;

/// How long a writer waits for another's transaction before giving up: generous, as parallel CI jobs queue.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(120);

/// A history in one SQLite file.
pub struct SqliteStore {
    conn: Connection,
    path: PathBuf,
}

impl SqliteStore {
    /// Opens (or creates) the file and checks that it is a SQLite database. The schema is [`super::Store::open`]'s.
    pub fn open(path: &str) -> Result<SqliteStore, HistoryError> {
        let location = format!("SQLite file {path}");
        let open = |message: String| HistoryError::Open { location: location.clone(), message };
        let file = Path::new(path);
        if file.is_dir() {
            return Err(open("it is a directory".to_owned()));
        }
        if let Some(parent) = file.parent().filter(|p| !p.as_os_str().is_empty()) {
            if !parent.is_dir() {
                return Err(open(format!("its directory {} does not exist", parent.display())));
            }
        }
        // Not SQLITE_OPEN_URI: a path is a path, never `file:...?mode=...`.
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags(file, flags).map_err(|e| open(e.to_string()))?;
        conn.busy_timeout(BUSY_TIMEOUT).map_err(|e| open(e.to_string()))?;
        for (config, on) in [
            (DbConfig::SQLITE_DBCONFIG_DEFENSIVE, true),
            (DbConfig::SQLITE_DBCONFIG_TRUSTED_SCHEMA, false),
            (DbConfig::SQLITE_DBCONFIG_ENABLE_FKEY, true),
        ] {
            conn.set_db_config(config, on).map_err(|e| open(e.to_string()))?;
        }
        // The first read of the file tells a database from anything else.
        let probe: Result<i64, rusqlite::Error> =
            conn.query_row("SELECT count(*) FROM sqlite_master", [], |row| row.get(0));
        match probe {
            Ok(_) => Ok(SqliteStore { conn, path: file.to_path_buf() }),
            Err(e) if e.sqlite_error_code() == Some(ErrorCode::NotADatabase) => {
                Err(HistoryError::NotADatabase { location })
            }
            Err(e) if e.sqlite_error_code() == Some(ErrorCode::DatabaseCorrupt) => {
                Err(open(format!("the file is damaged: {e}")))
            }
            Err(e) => Err(open(e.to_string())),
        }
    }

    /// `SQLite file history.db`.
    pub fn describe(&self) -> String {
        format!("SQLite file {}", self.path.display())
    }

    /// The connection, for tests and tools that read the file directly.
    pub fn connection(&self) -> &Connection {
        &self.conn
    }
}

fn params(values: &[Value]) -> Vec<SqlValue> {
    values
        .iter()
        .map(|v| match v {
            Value::Int(i) => SqlValue::Integer(*i),
            Value::Real(r) => SqlValue::Real(*r),
            Value::Text(t) => SqlValue::Text(t.clone()),
            Value::OptText(Some(t)) => SqlValue::Text(t.clone()),
            Value::OptText(None) => SqlValue::Null,
        })
        .collect()
}

impl Engine for SqliteStore {
    fn begin_read(&mut self) -> Result<(), String> {
        self.conn.execute_batch("BEGIN DEFERRED").map_err(|e| e.to_string())
    }

    fn begin_write(&mut self) -> Result<(), String> {
        self.conn.execute_batch("BEGIN IMMEDIATE").map_err(|e| e.to_string())
    }

    fn commit(&mut self) -> Result<(), String> {
        self.conn.execute_batch("COMMIT").map_err(|e| e.to_string())
    }

    fn rollback(&mut self) {
        if !self.conn.is_autocommit() {
            let _ = self.conn.execute_batch("ROLLBACK");
        }
    }

    fn batch(&mut self, sql: &str) -> Result<(), String> {
        self.conn.execute_batch(sql).map_err(|e| e.to_string())
    }

    fn execute(&mut self, sql: &str, values: &[Value]) -> Result<u64, String> {
        let mut statement = self.conn.prepare_cached(sql).map_err(|e| e.to_string())?;
        let changed = statement.execute(rusqlite::params_from_iter(params(values))).map_err(|e| e.to_string())?;
        Ok(changed as u64)
    }

    fn query(&mut self, sql: &str, values: &[Value], kinds: &[Kind]) -> Result<Vec<Vec<Value>>, String> {
        let mut statement = self.conn.prepare_cached(sql).map_err(|e| e.to_string())?;
        let mut rows = statement.query(rusqlite::params_from_iter(params(values))).map_err(|e| e.to_string())?;
        let mut out = Vec::new();
        while let Some(row) = rows.next().map_err(|e| e.to_string())? {
            let mut values = Vec::with_capacity(kinds.len());
            for (i, kind) in kinds.iter().enumerate() {
                let value = match kind {
                    Kind::Int => row.get::<_, i64>(i).map(Value::Int),
                    Kind::Real => row.get::<_, f64>(i).map(Value::Real),
                    Kind::Text => row.get::<_, String>(i).map(Value::Text),
                    Kind::OptText => row.get::<_, Option<String>>(i).map(Value::OptText),
                };
                values.push(value.map_err(|e| format!("column {i}: {e}"))?);
            }
            out.push(values);
        }
        Ok(out)
    }

    fn tables(&mut self) -> Result<Vec<String>, String> {
        let mut statement = self
            .conn
            .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")
            .map_err(|e| e.to_string())?;
        let names = statement.query_map([], |row| row.get::<_, String>(0)).map_err(|e| e.to_string())?;
        names.collect::<Result<Vec<_>, _>>().map_err(|e| e.to_string())
    }

    fn lock_schema(&mut self) -> Result<(), String> {
        Ok(())
    }

    fn id_column(&self) -> &'static str {
        "INTEGER PRIMARY KEY"
    }

    fn owns_database(&self) -> bool {
        true
    }

    fn settle(&mut self) -> Result<(), String> {
        // Turning WAL on needs the file to itself for a moment: a concurrent opener may hold it, so wait as a
        // writer would.
        let started = Instant::now();
        loop {
            let mode = self.conn.query_row("PRAGMA journal_mode", [], |row| row.get::<_, String>(0));
            let result = match mode {
                Ok(mode) if mode.eq_ignore_ascii_case("wal") => Ok(()),
                Ok(_) => {
                    self.conn.query_row("PRAGMA journal_mode = WAL", [], |row| row.get::<_, String>(0)).map(|_| ())
                }
                Err(e) => Err(e),
            };
            match result {
                Ok(()) => break,
                Err(e)
                    if e.sqlite_error_code() == Some(ErrorCode::DatabaseBusy)
                        || e.sqlite_error_code() == Some(ErrorCode::DatabaseLocked) =>
                {
                    if started.elapsed() > BUSY_TIMEOUT {
                        return Err(e.to_string());
                    }
                    std::thread::sleep(Duration::from_millis(20));
                }
                Err(e) => return Err(e.to_string()),
            }
        }
        self.conn.execute_batch("PRAGMA synchronous = NORMAL").map_err(|e| e.to_string())
    }
}
