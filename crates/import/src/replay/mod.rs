//! Replay of production traffic (issue 44), the pure half: access logs and HAR files read into a schedule of
//! requests at their logged START times, with secrets marked, and the schedule's summary. The spec's
//! `load: { replay: ... }` and the engine's sending call [`parse_log`] and [`build`] (or [`replay`]).
//!
//! Formats and their time semantics ([`LogFormat`]):
//!
//! | format | start of a request | resolution |
//! | --- | --- | --- |
//! | nginx `combined` | `$time_local` (the WRITE time: an approximation, late by the request's duration) | 1 s |
//! | nginx `log_format` | `$msec - $request_time` (or `$time_local - $request_time`; without `$request_time` the write time) | 1 ms (1 s) |
//! | Apache common, combined, `LogFormat` | `%t`, the arrival | 1 s |
//! | JSON lines | the mapped field, a start or an end (less the mapped duration) | as written |
//! | AWS ALB | `request_creation_time` | 1 us |
//! | HAR 1.2 | `startedDateTime` | 1 ms |
//!
//! Times to the second are spread within their second, uniformly by a seeded hash of the line number
//! ([`spread_offset`]; see the `schedule` module for why). Starts out of order go through a reorder buffer
//! of [`ReplayOptions::reorder_window`] (10 s); a start beyond it is a located error. Reading is bounded by
//! [`Limits`]: lines, bytes, a line's bytes, a HAR's bytes, the share of lines that may fail.
//!
//! Secrets ([`SecretRules`]): credential headers and named query parameters are [`Secret`]s that print as `***`;
//! [`ReplayRequest::redacted`] is what may be written anywhere.

mod alb;
mod error;
mod fidelity;
mod har;
mod json;
mod load;
mod read;
mod record;
mod schedule;
mod secret;
mod synth;
mod text;
mod time;

use std::io::BufRead;

pub use error::{LineError, ReplayError};
pub use fidelity::{summarize, ScheduleSummary};
pub use har::origin_of;
pub use json::{DurationUnit, JsonMapping, TimeFormat, TimeIs};
pub use load::{
    json_mapping, log_format, open, options, stream, summarize_file, window_of, Windows, REPLAY_SEED, WINDOW,
};
pub use read::{parse_log, Limits, LogFormat, ParsedLog, Records};
pub use record::{ClientKey, LogRecord, Micros, Resolution, SkipReason, Skips, StartFrom};
pub use schedule::{
    build, parse_speed, spread_offset, EnvLookup, MethodPolicy, RedactedRequest, ReplayOptions, ReplayRequest,
    Schedule, StatusPattern, Stream, StreamEnd, WindowBound,
};
pub use secret::{Header, QueryParam, Secret, SecretRules, Value, DEFAULT_SECRET_QUERY};
pub use synth::{synthesize, SynthSource, Synthesized, MAX_MIX};
pub use text::{LineFormat, APACHE_COMBINED, APACHE_COMMON, NGINX_COMBINED};

/// Reads a log and builds its schedule: [`parse_log`] then [`build`]. `env` looks up environment variables
/// (`|v| std::env::var(v).ok()`).
pub fn replay<R: BufRead>(
    input: R,
    format: &LogFormat,
    limits: &Limits,
    options: &ReplayOptions,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Schedule, ReplayError> {
    let options = ReplayOptions { max_reorder: options.max_reorder.min(limits.max_reorder), ..options.clone() };
    build(parse_log(input, format, limits)?, &options, env)
}
