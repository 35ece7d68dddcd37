//! What can go wrong with a history store. Every location in an error is the store's description, with any
//! password replaced by `***`.

/// An error of a history store.
#[derive(Debug, thiserror::Error)]
pub enum HistoryError {
    /// The store could not be opened or connected to.
    #[error("cannot open the history {location}: {message}")]
    Open {
        /// The store, password hidden.
        location: String,
        /// Why.
        message: String,
    },
    /// The file is not a SQLite database.
    #[error("{location} is not a SQLite database, so not a loadgate history; give a new file or a history's")]
    NotADatabase {
        /// The store.
        location: String,
    },
    /// The database holds tables but no loadgate history.
    #[error(
        "{location} is not a loadgate history: it has the tables {tables} but no `loadgate_schema`; give a new \
         file or an empty database"
    )]
    Foreign {
        /// The store, password hidden.
        location: String,
        /// The tables found, comma separated.
        tables: String,
    },
    /// The store was written by a newer loadgate, with a schema this build does not know. It was left as it was.
    #[error(
        "the history {location} has schema version {found}, newer than this loadgate knows ({known}); use a newer \
         loadgate with it (nothing was changed)"
    )]
    NewerSchema {
        /// The store, password hidden.
        location: String,
        /// The store's schema version.
        found: u32,
        /// The newest this build knows.
        known: u32,
    },
    /// The store's schema is damaged (a version table without a valid version).
    #[error("the history {location} has a damaged schema: {message}")]
    Schema {
        /// The store, password hidden.
        location: String,
        /// What is wrong.
        message: String,
    },
    /// A statement failed.
    #[error("the history {location}: {doing}: {message}")]
    Sql {
        /// The store, password hidden.
        location: String,
        /// What the store was doing (`adding run ...`).
        doing: String,
        /// The database's message.
        message: String,
    },
    /// A row of the store cannot be read back as a run.
    #[error("the history {location} holds a damaged run {run}: {message}")]
    Corrupt {
        /// The store, password hidden.
        location: String,
        /// The run's `run_id`, or its row id when that is unreadable.
        run: String,
        /// What is wrong.
        message: String,
    },
    /// A record or a query the store cannot take (a start time that is not RFC 3339, an unknown record version).
    #[error("{message}")]
    Invalid {
        /// What is wrong.
        message: String,
    },
    /// A line of an import is not a run record; nothing was imported.
    #[error("line {line}: {message}")]
    Import {
        /// The line, from 1.
        line: usize,
        /// What is wrong with it.
        message: String,
    },
    /// Writing an export or reading an import failed.
    #[error("{doing}: {source}")]
    Io {
        /// `writing the export`, `reading the import`.
        doing: String,
        /// The error.
        source: std::io::Error,
    },
}
