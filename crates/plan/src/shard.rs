//! Slices of a plan for several generators (`loadgate run SPEC --shard I/N`).
//!
//! Slice `I` of `N` keeps every phase and splits each worker of the whole plan into `N` stripes, one per shard:
//! worker `w`'s connections split evenly over the shards ([`split_even`]), its request quota in proportion to
//! them ([`split_weighted`]), its share of the arrival rate in proportion to them too (evenly when the phase
//! has no connections to count). The stripes are ordered `w * N + (I - 1)`: each stripe knows the shares of the
//! stripes before it (its [`Stripe::prefix`]), so the engine's striping of arrivals (stripe `g` of equal shares
//! sends global arrivals `g, g + G, g + 2G, ...`) interleaves the shards' arrivals and the union of the shards'
//! schedules is exactly the one-generator schedule: every arrival once, none twice. `seq()` values stripe the
//! same way (the stripe's index and count), so no two shards send the same value. Counts sum exactly; shares
//! are exact fractions. This is k6's execution-segment idea, applied to the plan's own per-worker split.
//!
//! Random values (`uuid()`, `random_int()`, mix choices) are seeded per stripe: they differ from the one-generator
//! run's, with the same distribution.

use crate::compile::{split_even, split_weighted};
use crate::model::{ExecutionPlan, Share, Slice, StopCondition, Stripe, WorkerShare};

/// Why a plan cannot be sliced.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ShardError {
    #[error("`{0}` is not a slice: write I/N with 1 <= I <= N, for example `--shard 2/4`")]
    Syntax(String),
    #[error("shard {index} of {count} does not exist: the index runs from 1 to {count}")]
    Index { index: u32, count: u32 },
    #[error("the plan is already shard {0}; slice the whole plan")]
    AlreadySliced(Slice),
    #[error("phase `{phase}`: its shares cannot be written as exact fractions over {count} shards")]
    Overflow { phase: String, count: u32 },
    /// `gating.detect` / `gating.budget`: the rounds are planned from the pilot one generator measures, and each
    /// shard would plan (and stop) on its own.
    #[error(
        "`gating.{0}` plans the rounds from what one generator measures, and each shard would plan and stop on \
         its own: a sharded run takes fixed rounds (`gating.repeat`)"
    )]
    Planned(&'static str),
    /// A profile of the target's process (`profile.cpu`, `profile.command`): each shard's generator starts no
    /// target of its own to profile; a pprof endpoint can be profiled from anywhere.
    #[error(
        "phase `{0}` profiles the target's process, which a shard does not own: profile a sharded run through \
         `profile: {{ pprof: {{ url: ... }} }}`, or run it unsharded"
    )]
    Profiled(String),
}

impl std::str::FromStr for Slice {
    type Err = ShardError;

    /// `I/N`, 1-based: `2/4`.
    fn from_str(s: &str) -> Result<Slice, ShardError> {
        let syntax = || ShardError::Syntax(s.to_owned());
        let (i, n) = s.trim().split_once('/').ok_or_else(syntax)?;
        let index: u32 = i.trim().parse().map_err(|_| syntax())?;
        let count: u32 = n.trim().parse().map_err(|_| syntax())?;
        Slice::new(index, count)
    }
}

impl Slice {
    /// Slice `index` (1-based) of `count`.
    pub fn new(index: u32, count: u32) -> Result<Slice, ShardError> {
        if count == 0 || index == 0 || index > count {
            return Err(ShardError::Index { index, count });
        }
        Ok(Slice { index, count })
    }

    /// The file a shard's result is written to: `shard-2-of-4.json`.
    pub fn file_name(&self) -> String {
        format!("shard-{}-of-{}.json", self.index, self.count)
    }
}

/// An exact fraction while the stripes are computed.
#[derive(Debug, Clone, Copy)]
struct Frac {
    num: u128,
    den: u128,
}

fn gcd(mut a: u128, mut b: u128) -> u128 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

impl Frac {
    const ZERO: Frac = Frac { num: 0, den: 1 };

    fn new(num: u128, den: u128) -> Frac {
        if den == 0 || num == 0 {
            return Frac::ZERO;
        }
        let g = gcd(num, den);
        Frac { num: num / g, den: den / g }
    }

    fn of(share: Share) -> Frac {
        Frac::new(u128::from(share.numerator), u128::from(share.denominator))
    }

    fn add(self, other: Frac) -> Option<Frac> {
        let g = gcd(self.den, other.den);
        let den = (self.den / g).checked_mul(other.den)?;
        let num = self.num.checked_mul(other.den / g)?.checked_add(other.num.checked_mul(self.den / g)?)?;
        Some(Frac::new(num, den))
    }

    fn scale(self, num: u64, den: u64) -> Option<Frac> {
        Some(Frac::new(self.num.checked_mul(u128::from(num))?, self.den.checked_mul(u128::from(den))?))
    }

    /// `share * num / den`, over `share`'s own denominator when that is exact (shard 1 of 1 keeps the whole
    /// plan's shares as they are written).
    fn part(share: Share, num: u64, den: u64) -> Option<Share> {
        let scaled = u128::from(share.numerator).checked_mul(u128::from(num))?;
        if den > 0 && scaled % u128::from(den) == 0 {
            return Some(Share {
                numerator: u64::try_from(scaled / u128::from(den)).ok()?,
                denominator: share.denominator,
            });
        }
        Frac::of(share).scale(num, den)?.share()
    }

    fn share(self) -> Option<Share> {
        Some(Share { numerator: u64::try_from(self.num).ok()?, denominator: u64::try_from(self.den).ok()? })
    }
}

/// One worker's stripes over `count` shards: connections, request quota and share of each.
fn stripes(w: &WorkerShare, count: u32) -> Option<Vec<(u64, Option<u64>, Share)>> {
    let n = count as usize;
    let conns = split_even(w.connections, n);
    let requests = w.requests.map(|r| if w.connections > 0 { split_weighted(r, &conns) } else { split_even(r, n) });
    (0..n)
        .map(|i| {
            let part = if w.connections > 0 {
                Frac::part(w.share, conns[i], w.connections)?
            } else {
                Frac::part(w.share, 1, u64::from(count))?
            };
            Some((conns[i], requests.as_ref().map(|r| r[i]), part))
        })
        .collect()
}

/// Slice `slice` of `plan`: the same phases, each worker's load striped over the shards (see the module
/// documentation). `hash` stays the whole plan's; `shard` says which slice this is. Shard 1 of 1 runs what the
/// whole plan runs.
pub fn shard(plan: &ExecutionPlan, slice: Slice) -> Result<ExecutionPlan, ShardError> {
    if let Some(s) = plan.shard {
        return Err(ShardError::AlreadySliced(s));
    }
    if plan.gating.detect.is_some() {
        return Err(ShardError::Planned("detect"));
    }
    if plan.gating.budget.is_some() {
        return Err(ShardError::Planned("budget"));
    }
    if let Some(p) = plan.phases.iter().find(|p| p.profile.as_ref().is_some_and(|pr| pr.needs_pid())) {
        return Err(ShardError::Profiled(p.name.clone()));
    }
    let Slice { index, count } = Slice::new(slice.index, slice.count)?;
    let mut out = plan.clone();
    out.shard = Some(slice);
    let me = (index - 1) as usize;
    for phase in &mut out.phases {
        let overflow = || ShardError::Overflow { phase: phase.name.clone(), count };
        let streams = (phase.workers.len() as u64).checked_mul(u64::from(count)).ok_or_else(overflow)?;
        let mut prefix = Frac::ZERO;
        let mut mine = Vec::with_capacity(phase.workers.len());
        for (w, worker) in phase.workers.iter().enumerate() {
            let parts = stripes(worker, count).ok_or_else(overflow)?;
            for (i, (connections, requests, share)) in parts.into_iter().enumerate() {
                if i == me {
                    mine.push(WorkerShare {
                        worker: worker.worker,
                        connections,
                        requests,
                        share,
                        stripe: Some(Stripe {
                            stream: w as u64 * u64::from(count) + i as u64,
                            streams,
                            prefix: prefix.share().ok_or_else(overflow)?,
                        }),
                    });
                }
                prefix = prefix.add(Frac::of(share)).ok_or_else(overflow)?;
            }
        }
        phase.workers = mine;
        // A request-count phase stops after its own quota.
        if let StopCondition::Requests { .. } = phase.load.stop {
            let total: u64 = phase.workers.iter().filter_map(|w| w.requests).sum();
            phase.load.stop = StopCondition::Requests { requests: total };
        }
        phase.load.connections.connections = phase.workers.iter().map(|w| w.connections).sum();
    }
    Ok(out)
}
