//! How a run takes part in a run on several generators, from the shard options of the command line (plain
//! values, no argument parser): the whole plan, one slice (`--shard I/N`, or `--shard-count N` with the index a
//! Kubernetes Indexed Job sets in `JOB_COMPLETION_INDEX`) with its synchronised start, or local shard processes.

use std::path::Path;

use loadgate_plan::{ShardOptions, Slice};

use crate::job::Distribution;
use crate::shards::StartSync;

/// The shard options of `loadgate run`, as given.
#[derive(Debug, Clone, Default)]
pub struct ShardFlags {
    /// `--shard I/N`.
    pub shard: Option<Slice>,
    /// `--shard-count N`.
    pub shard_count: Option<u32>,
    /// `--shards N`.
    pub shards: Option<u32>,
    pub run_id: Option<String>,
    /// `--start-at TIME` (RFC 3339).
    pub start_at: Option<String>,
    /// `--barrier HOST:PORT`.
    pub barrier: Option<String>,
    /// `--barrier-timeout`.
    pub barrier_timeout: String,
    /// `--metrics-listen` was given (one process's series: refused with `--shards N`).
    pub metrics_listen: bool,
}

/// The [`Distribution`] the flags describe, checked. `exe` and `options`: what `--shards N` starts (local shard
/// processes of `exe`, each given `options`).
pub fn distribution(flags: &ShardFlags, exe: &Path, options: ShardOptions) -> Result<Distribution, String> {
    if let Some(count) = flags.shards {
        if flags.metrics_listen {
            return Err(format!(
                "--metrics-listen serves one process's series, and --shards {count} runs {count} processes: give \
                 --output prometheus=URL (each shard pushes its own series, labelled `shard`), or run without --shards"
            ));
        }
        return Ok(Distribution::Local { count, exe: exe.to_path_buf(), options, run_id: flags.run_id.clone() });
    }
    let slice = match (flags.shard, flags.shard_count) {
        (Some(s), _) => s,
        (None, Some(n)) => {
            let raw = std::env::var("JOB_COMPLETION_INDEX").map_err(|_| {
                "--shard-count needs the shard's index in JOB_COMPLETION_INDEX (from 0, as a Kubernetes Indexed Job sets it), or give --shard I/N".to_owned()
            })?;
            let index: u32 = raw.trim().parse().map_err(|_| format!("JOB_COMPLETION_INDEX=`{raw}` is not a number"))?;
            Slice::new(index.saturating_add(1), n).map_err(|_| {
                format!("JOB_COMPLETION_INDEX={index} is out of range for --shard-count {n} (0 to {})", n - 1)
            })?
        }
        (None, None) => return Ok(Distribution::Whole),
    };
    let start = match (&flags.start_at, &flags.barrier) {
        (Some(t), _) => StartSync::At(crate::clock::parse_rfc3339(t).map_err(|e| format!("--start-at: {e}"))?),
        (None, Some(addr)) => {
            let timeout = flags
                .barrier_timeout
                .parse::<loadgate_model::units::Duration>()
                .map_err(|e| format!("--barrier-timeout `{}` is not {}", flags.barrier_timeout, e.expected))?;
            if !addr.contains(':') {
                return Err(format!("--barrier `{addr}` is not HOST:PORT"));
            }
            StartSync::Barrier { addr: addr.clone(), timeout: timeout.as_std() }
        }
        (None, None) => StartSync::Now,
    };
    Ok(Distribution::Slice { slice, start, run_id: flags.run_id.clone() })
}
