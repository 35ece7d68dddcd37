//! The PostgreSQL engine: a `postgres://` or `postgresql://` URL, without TLS. The schema is created under a
//! transaction-scoped advisory lock so that jobs opening a new database at once do not collide; runs race through
//! the unique `run_id` (`ON CONFLICT DO NOTHING`).
//!
//! The password of the URL is used to connect and then dropped: the store keeps only its description
//! (`PostgreSQL at host:port/db`), and error messages show the URL with the password as `***`.

use std::collections::HashMap;
use std::error::Error as _;
use std::time::Duration;

use ::postgres::types::ToSql;
use ::postgres::{Client, Config, NoTls, Statement};

use super::engine::{Engine, Kind, Value};
use super::location::redact;
use crate::error::HistoryError;

/// The advisory lock that serialises schema changes: `loadgate` in ASCII.
const SCHEMA_LOCK: i64 = 0x6c6f_6164_6761_7465;

/// How long connecting may take when the URL does not say (`connect_timeout=`).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// A history in a PostgreSQL database.
pub struct PostgresStore {
    client: Client,
    description: String,
    statements: HashMap<String, Statement>,
}

impl PostgresStore {
    /// Connects to the database of a `postgres://` URL. The schema is [`super::Store::open`]'s.
    pub fn connect(url: &str) -> Result<PostgresStore, HistoryError> {
        let location = redact(url);
        let mut config: Config = url
            .parse()
            .map_err(|e: ::postgres::Error| HistoryError::Open { location: location.clone(), message: message(&e) })?;
        let password = config.get_password().map(|p| String::from_utf8_lossy(p).into_owned());
        let scrub = |text: String| match &password {
            Some(p) if p.len() >= 4 => text.replace(p.as_str(), "***"),
            _ => text,
        };
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(CONNECT_TIMEOUT);
        }
        let description = describe(&config);
        let client = config
            .connect(NoTls)
            .map_err(|e| HistoryError::Open { location: location.clone(), message: scrub(message(&e)) })?;
        Ok(PostgresStore { client, description, statements: HashMap::new() })
    }

    /// `PostgreSQL at host:port/db`.
    pub fn describe(&self) -> String {
        self.description.clone()
    }

    /// The connection, for tests and tools that read the database directly.
    pub fn client(&mut self) -> &mut Client {
        &mut self.client
    }

    fn statement(&mut self, sql: &str) -> Result<Statement, String> {
        if let Some(statement) = self.statements.get(sql) {
            return Ok(statement.clone());
        }
        let statement = self.client.prepare(&numbered(sql)).map_err(|e| message(&e))?;
        self.statements.insert(sql.to_owned(), statement.clone());
        Ok(statement)
    }
}

/// `PostgreSQL at host:port/db` from a connection's configuration, without its user or password.
fn describe(config: &Config) -> String {
    let port = |i: usize| config.get_ports().get(i).or(config.get_ports().first()).copied().unwrap_or(5432);
    let hosts: Vec<String> = config
        .get_hosts()
        .iter()
        .enumerate()
        .map(|(i, host)| match host {
            ::postgres::config::Host::Tcp(h) => format!("{h}:{}", port(i)),
            ::postgres::config::Host::Unix(p) => format!("{}:{}", p.display(), port(i)),
        })
        .collect();
    let hosts = if hosts.is_empty() { format!("localhost:{}", port(0)) } else { hosts.join(",") };
    let db = config.get_dbname().or(config.get_user()).unwrap_or("postgres");
    format!("PostgreSQL at {hosts}/{db}")
}

/// The database's message (with its detail and hint), or the client's with its causes.
fn message(e: &::postgres::Error) -> String {
    if let Some(db) = e.as_db_error() {
        return db.to_string().replace('\n', "; ");
    }
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// `?` placeholders as PostgreSQL's `$1`, `$2`, ... (the store's statements have no `?` in literals).
fn numbered(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len() + 16);
    let mut n = 0;
    for c in sql.chars() {
        if c == '?' {
            n += 1;
            out.push('$');
            out.push_str(&n.to_string());
        } else {
            out.push(c);
        }
    }
    out
}

fn params(values: &[Value]) -> Vec<&(dyn ToSql + Sync)> {
    values
        .iter()
        .map(|v| match v {
            Value::Int(i) => i as &(dyn ToSql + Sync),
            Value::Real(r) => r as &(dyn ToSql + Sync),
            Value::Text(t) => t as &(dyn ToSql + Sync),
            Value::OptText(t) => t as &(dyn ToSql + Sync),
        })
        .collect()
}

impl Engine for PostgresStore {
    fn begin_read(&mut self) -> Result<(), String> {
        self.client.batch_execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY").map_err(|e| message(&e))
    }

    fn begin_write(&mut self) -> Result<(), String> {
        self.client.batch_execute("BEGIN").map_err(|e| message(&e))
    }

    fn commit(&mut self) -> Result<(), String> {
        self.client.batch_execute("COMMIT").map_err(|e| message(&e))
    }

    fn rollback(&mut self) {
        let _ = self.client.batch_execute("ROLLBACK");
    }

    fn batch(&mut self, sql: &str) -> Result<(), String> {
        self.client.batch_execute(sql).map_err(|e| message(&e))
    }

    fn execute(&mut self, sql: &str, values: &[Value]) -> Result<u64, String> {
        let statement = self.statement(sql)?;
        self.client.execute(&statement, &params(values)).map_err(|e| message(&e))
    }

    fn query(&mut self, sql: &str, values: &[Value], kinds: &[Kind]) -> Result<Vec<Vec<Value>>, String> {
        let statement = self.statement(sql)?;
        let rows = self.client.query(&statement, &params(values)).map_err(|e| message(&e))?;
        let mut out = Vec::with_capacity(rows.len());
        for row in rows {
            let mut values = Vec::with_capacity(kinds.len());
            for (i, kind) in kinds.iter().enumerate() {
                let value = match kind {
                    Kind::Int => row.try_get::<_, i64>(i).map(Value::Int),
                    Kind::Real => row.try_get::<_, f64>(i).map(Value::Real),
                    Kind::Text => row.try_get::<_, String>(i).map(Value::Text),
                    Kind::OptText => row.try_get::<_, Option<String>>(i).map(Value::OptText),
                };
                values.push(value.map_err(|e| format!("column {i}: {}", message(&e)))?);
            }
            out.push(values);
        }
        Ok(out)
    }

    fn tables(&mut self) -> Result<Vec<String>, String> {
        let rows = self
            .client
            .query(
                "SELECT table_name::text FROM information_schema.tables WHERE table_schema = current_schema() \
                 ORDER BY 1",
                &[],
            )
            .map_err(|e| message(&e))?;
        rows.iter().map(|row| row.try_get::<_, String>(0).map_err(|e| message(&e))).collect()
    }

    fn lock_schema(&mut self) -> Result<(), String> {
        self.client.execute("SELECT pg_advisory_xact_lock($1)", &[&SCHEMA_LOCK]).map(|_| ()).map_err(|e| message(&e))
    }

    fn id_column(&self) -> &'static str {
        "BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY"
    }

    fn owns_database(&self) -> bool {
        false
    }

    fn settle(&mut self) -> Result<(), String> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_numbered() {
        assert_eq!(
            numbered("SELECT a FROM t WHERE b = ? AND c > ? LIMIT ?"),
            "SELECT a FROM t WHERE b = $1 AND c > $2 LIMIT $3"
        );
    }

    #[test]
    fn descriptions_have_no_user_nor_password() {
        let config: Config = "postgres://me:s3cret@db.example:5433/loadgate".parse().unwrap();
        assert_eq!(describe(&config), "PostgreSQL at db.example:5433/loadgate");
        let config: Config = "postgresql://me@db.example".parse().unwrap();
        assert_eq!(describe(&config), "PostgreSQL at db.example:5432/me");
    }
}
