//! The load generators a command line may run, and why a command line could not be imported.

use std::fmt;

/// The load generator a command line runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Tool {
    /// wg/wrk: closed load, Lua scripts.
    Wrk,
    /// giltene/wrk2 (also `wrk` given `-R`): constant-rate open load.
    Wrk2,
    /// ApacheBench.
    Ab,
    /// rakyll/hey.
    Hey,
    /// hatoo/oha.
    Oha,
    /// apigee/apib.
    Apib,
    /// nghttp2's h2load: HTTP/2 (or HTTP/1.1 with `--h1`), closed or `--rps` paced load.
    H2load,
}

impl Tool {
    /// The program name.
    pub fn name(self) -> &'static str {
        match self {
            Tool::Wrk => "wrk",
            Tool::Wrk2 => "wrk2",
            Tool::Ab => "ab",
            Tool::Hey => "hey",
            Tool::Oha => "oha",
            Tool::Apib => "apib",
            Tool::H2load => "h2load",
        }
    }
}

impl fmt::Display for Tool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

const KNOWN_TOOLS: &str = "wrk, wrk2, ab, hey, oha, apib or h2load";

/// Why a command line could not be imported.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ImportError {
    #[error("the command line is empty; expected a {KNOWN_TOOLS} command such as `wrk -t2 -c64 -d10s http://127.0.0.1:8080/`")]
    Empty,
    #[error("cannot split the command line like a shell: {message}; expected {expected}")]
    Shell { message: String, expected: String },
    #[error("`{program}` is not a load generator loadgate can import; expected {KNOWN_TOOLS} (optionally after taskset, numactl, sudo, env or time)")]
    UnknownTool { program: String },
    #[error("{tool} has no option `{flag}`")]
    UnknownFlag { tool: Tool, flag: String },
    #[error("{tool} option `{flag}` needs a value, but the command line ends after it")]
    MissingValue { tool: Tool, flag: String },
    #[error("{tool} option `{flag}` expects {expected}, found `{value}`")]
    BadValue { tool: Tool, flag: String, value: String, expected: String },
    #[error("`{prefix}` option `{flag}` expects {expected}, found `{value}`")]
    BadPrefix { prefix: String, flag: String, value: String, expected: String },
    #[error("{tool} needs option `{flag}`: expected {expected}")]
    MissingFlag { tool: Tool, flag: String, expected: String },
    #[error("the {tool} command line has no URL; expected a target such as `http://127.0.0.1:8080/path`")]
    MissingUrl { tool: Tool },
    #[error("`{url}` is not a URL {tool} can load: {reason}; expected a URL such as `http://127.0.0.1:8080/path`")]
    BadUrl { tool: Tool, url: String, reason: String },
    #[error("{tool} takes one URL, but `{argument}` follows it; expected nothing after the URL")]
    ExtraArgument { tool: Tool, argument: String },
    #[error("{tool} options {flags} do not fit together: {problem}")]
    Conflict { tool: Tool, flags: String, problem: String },
    #[error("{tool} option `{flag}` runs no benchmark ({what}); expected a command line that runs one")]
    NoBenchmark { tool: Tool, flag: String, what: String },
}
