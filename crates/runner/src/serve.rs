//! `loadgate serve`: the built-in reference server ([`loadgate_server`], what `target: { builtin: ... }` starts)
//! run in the foreground until SIGINT or SIGTERM. Its configuration is built field by field from `serve`'s flags;
//! the runner starts a server process with the flags [`ServeConfig::to_args`] writes.

pub use loadgate_server::{ServeConfig, ServeTls, ServerBehaviour};

/// `--kind`: plaintext, echo, delay or cpu.
pub fn kind(text: &str) -> Result<loadgate_model::BuiltinKind, String> {
    loadgate_server::parse_kind(text).ok_or_else(|| format!("unknown kind `{text}`; use plaintext, echo, delay or cpu"))
}

/// Why the server did not serve.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// A configuration the server refuses (a flag for another kind): a wrong command line.
    #[error("{0}")]
    Invalid(String),
    /// The server could not run (an address in use, a certificate that does not load).
    #[error("{0}")]
    Failed(String),
}

/// Serves `cfg`; `on_listening` gets the one line to print once it listens (`listening on http://ADDR`, read
/// back by whoever started the process).
pub fn serve(cfg: &ServeConfig, on_listening: impl FnOnce(String)) -> Result<(), ServeError> {
    let https = cfg.tls.is_some();
    let listening = |addr| on_listening(loadgate_server::listening_line(addr, https));
    loadgate_server::serve(cfg, listening).map_err(|e| match e {
        e @ loadgate_server::ServerError::InvalidServer(_) => ServeError::Invalid(e.to_string()),
        e => ServeError::Failed(e.to_string()),
    })
}
