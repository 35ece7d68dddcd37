//! What the store's code needs of a database ([`Engine`]) and the values it binds and reads: what the SQLite and
//! PostgreSQL engines implement, apart from the store above them.

/// A value bound to or read from a statement.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// A 64-bit integer (`BIGINT`).
    Int(i64),
    /// A double (`DOUBLE PRECISION`).
    Real(f64),
    /// Text that is never NULL.
    Text(String),
    /// Text that may be NULL.
    OptText(Option<String>),
}

/// What a column is read as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// [`Value::Int`].
    Int,
    /// [`Value::Real`].
    Real,
    /// [`Value::Text`].
    Text,
    /// [`Value::OptText`].
    OptText,
}

/// What the store's code needs of a database: statements with `?` placeholders, typed rows, transactions. Each
/// error is the database's message.
pub trait Engine {
    /// Starts a read-only transaction that sees one snapshot.
    fn begin_read(&mut self) -> Result<(), String>;
    /// Starts a write transaction (SQLite: takes the write lock now, waiting for other writers).
    fn begin_write(&mut self) -> Result<(), String>;
    /// Commits the transaction.
    fn commit(&mut self) -> Result<(), String>;
    /// Rolls the transaction back; errors are ignored (the transaction is gone either way).
    fn rollback(&mut self);
    /// Runs statements without parameters or rows (schema steps).
    fn batch(&mut self, sql: &str) -> Result<(), String>;
    /// Runs one statement, returning the rows it changed.
    fn execute(&mut self, sql: &str, params: &[Value]) -> Result<u64, String>;
    /// Runs one query, reading each row's columns as `kinds` says.
    fn query(&mut self, sql: &str, params: &[Value], kinds: &[Kind]) -> Result<Vec<Vec<Value>>, String>;
    /// The tables of the database (PostgreSQL: of the current schema).
    fn tables(&mut self) -> Result<Vec<String>, String>;
    /// Inside a write transaction: waits until no other writer is changing the schema (PostgreSQL's advisory
    /// lock; SQLite's `BEGIN IMMEDIATE` already holds the only write lock).
    fn lock_schema(&mut self) -> Result<(), String>;
    /// What an auto-numbered primary key is in a `CREATE TABLE`.
    fn id_column(&self) -> &'static str;
    /// Whether the whole database is the history's, so that any other table in it means a wrong file (SQLite),
    /// or only tables of the history's names matter (PostgreSQL, a database others may share).
    fn owns_database(&self) -> bool;
    /// Settings a store that is (or is to become) a history gets once checked: SQLite's WAL journal.
    fn settle(&mut self) -> Result<(), String>;
}
