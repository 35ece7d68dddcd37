//! Why the built-in server cannot serve.

/// Why the built-in server cannot serve.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// The built-in server's configuration cannot be served.
    #[error("the built-in server cannot start: {0}")]
    InvalidServer(String),

    /// `loadgate serve` arguments that do not parse.
    #[error("invalid `serve` arguments: {0}")]
    InvalidArgs(String),

    /// The built-in server could not listen on the requested address.
    #[error("the built-in server cannot listen on {addr}: {source}")]
    Bind {
        addr: std::net::SocketAddr,
        #[source]
        source: std::io::Error,
    },

    /// An OS-level failure inside the built-in server (runtime, threads, signals).
    #[error("the built-in server failed: {0}")]
    Server(String),
}
