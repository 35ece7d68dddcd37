//! The gate names what got slower: which frames' CPU time per request changed between baseline and candidate
//! over paired A/B rounds ([`differential`]), and where one side's time went ([`time_table`]). Pure: stacks in,
//! records of [`crate::model`] out.
//!
//! **The measure.** Per round and side, each frame's *inclusive* CPU microseconds per request: the samples of every
//! stack the frame is in, times the sample period, over the requests the round completed. A frame is counted once
//! per stack however often it recurses in it. Frames are matched between builds by [`match_key`].
//!
//! **Which frames are tested.** Frames sampled on one side only (a function inlined, renamed or new) cannot be
//! paired: they are reported apart ([`OneSidedFrame`], those with at least [`FrameOptions::min_one_sided_share`] of
//! the side's time). Root frames and thread or process start-up frames (`main`, `_start`, `start_thread`,
//! `runtime.goexit`, ...) are never tested or named: they rise with everything. Frames whose per-round values are
//! identical on both sides in every round (a chain of frames with no time of their own) are one test, kept as the
//! deepest of them. Of the rest, at most [`FrameOptions::max_frames`] (30) are tested: those with the largest sum
//! of squared paired differences `sum_i d_i^2`. That sum does not change when the sides of a round are swapped, so
//! the selection does not look at the sign of a change and the randomisation test below stays exact for the
//! frames it selects.
//!
//! **The test.** Westfall and Young's step-down max-T (Westfall & Young 1993, algorithm 2.8) over sign flips of
//! whole rounds: for frame `j` the paired differences `d_ij = cand_ij - base_ij` (microseconds per request) give
//! `t_j = mean / (sd / sqrt(n))`. Under the null hypothesis that the sides of each round are exchangeable, flipping
//! the signs of a round's differences (every frame's at once, which keeps the dependence between frames) is as
//! likely as the observed sign; the adjusted p-value of the frame with the `r`-th largest `|t|` is the share of
//! flips whose largest `|t*|` among frames ranked `r` and below reaches its `|t|`, made monotone. All `2^n` flips
//! are enumerated up to [`FrameOptions::exact_max_rounds`] rounds (16), else [`FrameOptions::flips`] seeded
//! random flips (the seed is a hash of the data, so the same data gives the same answer). The family-wise error
//! is at most [`FrameOptions::alpha`] (1%). With exact enumeration the smallest p-value is `2 / 2^n`: fewer than 8
//! rounds can name nothing at 1% ([`FrameDifferential::smallest_p`] says so).
//!
//! **What is named.** Significant frames, shallowest first, start a walk down the call graph. A callee of a tested
//! frame is a tested frame whose nearest tested frame above it in a stack is that one; the change *under* a caller
//! is the change of the stacks where the callee sits below it (per round, each stack once). The walk goes from a
//! frame to the significant callee with the largest change under it, when that change is at least
//! [`FrameOptions::explain_share`] (half) of the frame's own *and* the frame owns the callee (at least
//! [`FrameOptions::owned_share`], half, of the callee's time is under this caller); it names the frame where it
//! stops. So a change in a function's own work names it; a change in a callee only it calls names that callee (its
//! path shows the caller); and a change in a shared callee (`memcpy`, a hash, a `burn` every handler calls) that
//! happened under one caller names the caller, whose code changed. Significant frames on a finished walk, and
//! callees whose change happened mostly (`explain_share`) under the named frame, start no walk of their own.
//! Rises are [`FrameDifferential::named`], falls [`FrameDifferential::faster`], each with the Hodges-Lehmann
//! estimate of the `d_i` and its exact signed-rank interval ([`crate::stats::shift`]). A walk also stops at a
//! frame whose rise new work explains: a function under it sampled in the candidate only (the slow path the
//! baseline never ran), with at least `explain_share` of the rise and `owned_share` of its own time under the
//! frame; that function is named, with the frame's adjusted p-value and the estimate of its own per-round time.
//! Nothing is named when nothing is significant.

use std::collections::{BTreeMap, HashMap, HashSet};

use crate::model::{FrameDifferential, FrameTime, NamedFrame, OneSidedFrame, ScenarioProfile, TestedFrame, TimeTable};
use crate::stacks::{match_key, Stacks, OVERFLOW_FRAME};
use crate::stats::{self, StatsError};

/// One side of one round: its stacks, what a sample stands for, and the requests it completed.
#[derive(Debug, Clone, PartialEq)]
pub struct RoundProfile {
    pub stacks: Stacks,
    /// CPU nanoseconds per sample (the sample period).
    pub ns_per_sample: f64,
    /// Requests completed while the stacks were sampled.
    pub requests: u64,
}

/// One paired A/B round.
#[derive(Debug, Clone, PartialEq)]
pub struct PairedRound {
    pub baseline: RoundProfile,
    pub candidate: RoundProfile,
}

/// The knobs of [`differential`]; [`Default`] is what the gate uses.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FrameOptions {
    /// The most frames tested (30).
    pub max_frames: usize,
    /// The family-wise error rate (0.01).
    pub alpha: f64,
    /// The confidence of the estimates' intervals (0.95).
    pub confidence: f64,
    /// Random sign flips when the rounds are too many to enumerate (10,000).
    pub flips: usize,
    /// Up to this many rounds every sign flip is enumerated (16: 65,536 flips).
    pub exact_max_rounds: usize,
    /// A callee is walked into when it carries this share of its caller's change (0.5).
    pub explain_share: f64,
    /// ... and at least this share of the callee's time is under that caller (0.5).
    pub owned_share: f64,
    /// One-sided frames are listed from this share of their side's time (0.01: below, a frame seen a few times
    /// on one side is as likely sampling noise as a change).
    pub min_one_sided_share: f64,
}

impl Default for FrameOptions {
    fn default() -> Self {
        FrameOptions {
            max_frames: 30,
            alpha: 0.01,
            confidence: 0.95,
            flips: 10_000,
            exact_max_rounds: 16,
            explain_share: 0.5,
            owned_share: 0.5,
            min_one_sided_share: 0.01,
        }
    }
}

/// The most paired rounds [`differential`] takes (as the rank methods of [`crate::stats`]).
pub const MAX_ROUNDS: usize = stats::MAX_SAMPLES;

/// Why frames could not be compared.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum FramesError {
    #[error("{rounds} paired rounds: comparing frames needs at least 2")]
    TooFewRounds { rounds: usize },
    #[error("{rounds} paired rounds: more than the {max} compared")]
    TooManyRounds { rounds: usize, max: usize },
    #[error("round {round}'s {side} completed no request: its CPU per request is unknown")]
    NoRequests { round: usize, side: &'static str },
    #[error("round {round}'s {side} has a sample period of {value} ns, not a positive number")]
    Period { round: usize, side: &'static str, value: f64 },
    #[error("option {name} is {value}, out of range")]
    Option { name: &'static str, value: f64 },
    #[error(transparent)]
    Stats(#[from] StatsError),
}

/// Frame names never tested nor named: process and thread start-up, whose time is everyone's.
const STRUCTURAL: &[&str] = &[
    "main",
    "_start",
    "__libc_start_main",
    "__libc_start_call_main",
    "start_thread",
    "clone",
    "clone3",
    "thread_start",
    "runtime.main",
    "runtime.goexit",
    "runtime.mstart",
    "java/lang/Thread.run",
    "java/lang/Thread.runWith",
    "[unknown]",
    OVERFLOW_FRAME,
];

fn is_structural(key: &str) -> bool {
    STRUCTURAL.contains(&key)
        || key.starts_with("std::rt::lang_start")
        || key.starts_with("std::sys::") && key.contains("thread") && key.ends_with("thread_start")
        || key.starts_with("<<std::thread::Builder>::spawn_unchecked_")
        || key.starts_with("core::ops::function::FnOnce::call_once")
        || key.starts_with("std::sys::backtrace::__rust_begin_short_backtrace")
}

/// A stack as its frames' match keys (interned), root first, with its microseconds per request.
type KeyedStack = (Vec<usize>, f64);

/// Everything the analysis reads from the stacks of all rounds, by interned match key (dense: a key is an index).
struct Pooled {
    keys: Vec<String>,
    /// `[round][side][key]`: inclusive microseconds per request.
    inclusive: Vec<[Vec<f64>; 2]>,
    /// `[side][key]`: pooled inclusive microseconds per request.
    totals: [Vec<f64>; 2],
    /// Pooled microseconds per request of each side (every sample).
    side_total: [f64; 2],
    /// Sample-weighted mean depth by key (root 0).
    depth: Vec<f64>,
    /// Keys seen as a stack's root.
    roots: HashSet<usize>,
    /// `[round][side]`: each stack as its keys, root first, with its microseconds per request.
    stacks: Vec<[Vec<KeyedStack>; 2]>,
}

impl Pooled {
    fn of(rounds: &[PairedRound]) -> Pooled {
        let mut ids: HashMap<String, usize> = HashMap::new();
        let mut keys: Vec<String> = Vec::new();
        let mut key_of_name: HashMap<String, usize> = HashMap::new();
        let mut side_total = [0.0; 2];
        let mut roots = HashSet::new();
        let mut all_stacks = Vec::with_capacity(rounds.len());
        for round in rounds {
            let mut round_stacks: [Vec<KeyedStack>; 2] = [Vec::new(), Vec::new()];
            for (s, side) in [&round.baseline, &round.candidate].into_iter().enumerate() {
                let us_per_sample = side.ns_per_sample / 1_000.0 / side.requests as f64;
                side_total[s] += side.stacks.total() as f64 * us_per_sample;
                for (frames, count) in side.stacks.iter() {
                    let mut key_ids = Vec::with_capacity(frames.len());
                    for name in &frames {
                        let id = match key_of_name.get(*name) {
                            Some(&id) => id,
                            None => {
                                let key = match_key(name);
                                let id = *ids.entry(key.clone()).or_insert_with(|| {
                                    keys.push(key);
                                    keys.len() - 1
                                });
                                key_of_name.insert((*name).to_owned(), id);
                                id
                            }
                        };
                        key_ids.push(id);
                    }
                    if let Some(&root) = key_ids.first() {
                        roots.insert(root);
                    }
                    round_stacks[s].push((key_ids, count as f64 * us_per_sample));
                }
            }
            all_stacks.push(round_stacks);
        }
        let k = keys.len();
        let mut inclusive = vec![[vec![0.0; k], vec![0.0; k]]; rounds.len()];
        let mut totals = [vec![0.0; k], vec![0.0; k]];
        let mut depth_sum = vec![(0.0, 0.0); k];
        // The last stack each key was counted in: a key counts once per stack, however often it recurses.
        let mut stamp = vec![usize::MAX; k];
        let mut serial = 0usize;
        for (i, sides) in all_stacks.iter().enumerate() {
            for (s, side) in sides.iter().enumerate() {
                for (key_ids, us) in side {
                    serial += 1;
                    for (d, &id) in key_ids.iter().enumerate() {
                        if stamp[id] != serial {
                            stamp[id] = serial;
                            inclusive[i][s][id] += us;
                            totals[s][id] += us;
                            depth_sum[id].0 += d as f64 * us;
                            depth_sum[id].1 += us;
                        }
                    }
                }
            }
        }
        let depth = depth_sum.into_iter().map(|(s, w)| if w > 0.0 { s / w } else { 0.0 }).collect();
        Pooled { keys, inclusive, totals, side_total, depth, roots, stacks: all_stacks }
    }

    fn value(&self, round: usize, side: usize, key: usize) -> f64 {
        self.inclusive.get(round).and_then(|r| r[side].get(key)).copied().unwrap_or(0.0)
    }

    fn total(&self, side: usize, key: usize) -> f64 {
        self.totals[side].get(key).copied().unwrap_or(0.0)
    }

    fn depth(&self, key: usize) -> f64 {
        self.depth.get(key).copied().unwrap_or(0.0)
    }
}

/// One tested frame (a representative of frames with identical values).
struct Candidate {
    key: usize,
    /// Keys of the frames it stands for, root-most first (itself included).
    group: Vec<usize>,
    d: Vec<f64>,
    baseline_mean: f64,
}

/// Compares the frames of `rounds` (paired A/B rounds): see the [module](self) documentation.
pub fn differential(rounds: &[PairedRound], options: &FrameOptions) -> Result<FrameDifferential, FramesError> {
    check_options(options)?;
    let n = rounds.len();
    if n < 2 {
        return Err(FramesError::TooFewRounds { rounds: n });
    }
    if n > MAX_ROUNDS {
        return Err(FramesError::TooManyRounds { rounds: n, max: MAX_ROUNDS });
    }
    for (i, r) in rounds.iter().enumerate() {
        for (side, p) in [("baseline", &r.baseline), ("candidate", &r.candidate)] {
            if p.requests == 0 {
                return Err(FramesError::NoRequests { round: i + 1, side });
            }
            if !(p.ns_per_sample.is_finite() && p.ns_per_sample > 0.0) {
                return Err(FramesError::Period { round: i + 1, side, value: p.ns_per_sample });
            }
        }
    }
    let pooled = Pooled::of(rounds);
    let one_sided = one_sided(&pooled, n, options);
    let candidates = candidates(&pooled, n, options);
    let (flips, exact) =
        if n <= options.exact_max_rounds { (1usize << n, true) } else { (options.flips.max(1), false) };
    let table: Vec<&[f64]> = candidates.iter().map(|c| c.d.as_slice()).collect();
    let p_adjusted = max_t(&table, flips, exact, seed(&table));
    let mut tested = Vec::with_capacity(candidates.len());
    let mut estimates = Vec::with_capacity(candidates.len());
    for (c, &p) in candidates.iter().zip(&p_adjusted) {
        let hl = stats::shift(&c.d, options.confidence)?;
        tested.push(TestedFrame {
            name: pooled.keys[c.key].clone(),
            baseline_us: c.baseline_mean,
            estimate_us: hl.median,
            t: t_statistic(&c.d, None),
            p_adjusted: p,
        });
        estimates.push(hl);
    }
    let significant: Vec<usize> = (0..candidates.len()).filter(|&j| p_adjusted[j] <= options.alpha).collect();
    let edges = Edges::of(&pooled, &candidates);
    let walk = |sign: f64| -> Result<Vec<NamedFrame>, StatsError> {
        let chosen: Vec<usize> = significant.iter().copied().filter(|&j| estimates[j].median * sign > 0.0).collect();
        name_frames(&pooled, &candidates, &edges, &chosen, sign, options)
            .into_iter()
            .map(|(j, path, new)| {
                let c = &candidates[j];
                let path: Vec<String> = path.iter().map(|&k| pooled.keys[k].clone()).collect();
                // New work under the frame: named in its stead, with the frame's p-value (its rise is what was
                // tested) and its own per-round time (the baseline's being none).
                if let Some((key, values)) = new {
                    let hl = stats::shift(&values, options.confidence)?;
                    let mut path = path;
                    path.push(pooled.keys[key].clone());
                    return Ok(NamedFrame {
                        name: pooled.keys[key].clone(),
                        estimate_us: hl.median,
                        interval_us: hl.interval,
                        estimate_pct: None,
                        interval_pct: None,
                        p_adjusted: p_adjusted[j],
                        path,
                    });
                }
                let hl = &estimates[j];
                let pct = |x: f64| (c.baseline_mean > 0.0).then(|| 100.0 * x / c.baseline_mean);
                Ok(NamedFrame {
                    name: pooled.keys[c.key].clone(),
                    estimate_us: hl.median,
                    interval_us: hl.interval,
                    estimate_pct: pct(hl.median),
                    interval_pct: pct(hl.interval.lo).zip(pct(hl.interval.hi)),
                    p_adjusted: p_adjusted[j],
                    path,
                })
            })
            .collect::<Result<Vec<_>, StatsError>>()
    };
    let mut named = walk(1.0)?;
    named.sort_by(|a, b| b.estimate_us.total_cmp(&a.estimate_us).then_with(|| a.name.cmp(&b.name)));
    let mut faster = walk(-1.0)?;
    faster.sort_by(|a, b| a.estimate_us.total_cmp(&b.estimate_us).then_with(|| a.name.cmp(&b.name)));
    tested.sort_by(|a, b| a.p_adjusted.total_cmp(&b.p_adjusted).then_with(|| a.name.cmp(&b.name)));
    Ok(FrameDifferential {
        rounds: n,
        alpha: options.alpha,
        confidence: options.confidence,
        randomisations: flips,
        exact,
        smallest_p: if exact { (2.0 / flips as f64).min(1.0) } else { 1.0 / flips as f64 },
        named,
        faster,
        one_sided,
        tested,
    })
}

fn check_options(o: &FrameOptions) -> Result<(), FramesError> {
    let unit = |name, value: f64| {
        if value > 0.0 && value < 1.0 {
            Ok(())
        } else {
            Err(FramesError::Option { name, value })
        }
    };
    unit("alpha", o.alpha)?;
    unit("confidence", o.confidence)?;
    unit("explain_share", o.explain_share)?;
    unit("owned_share", o.owned_share)?;
    if !(0.0..1.0).contains(&o.min_one_sided_share) {
        return Err(FramesError::Option { name: "min_one_sided_share", value: o.min_one_sided_share });
    }
    if o.exact_max_rounds > 20 {
        return Err(FramesError::Option { name: "exact_max_rounds", value: o.exact_max_rounds as f64 });
    }
    if o.flips > 1_000_000 {
        return Err(FramesError::Option { name: "flips", value: o.flips as f64 });
    }
    Ok(())
}

fn one_sided(pooled: &Pooled, n: usize, options: &FrameOptions) -> Vec<OneSidedFrame> {
    let mut out = Vec::new();
    for (s, side) in [(0usize, "baseline"), (1, "candidate")] {
        let other = 1 - s;
        for (key, &us) in pooled.totals[s].iter().enumerate() {
            let absent = pooled.total(other, key) <= 0.0;
            if absent && us > 0.0 && us >= options.min_one_sided_share * pooled.side_total[s] {
                out.push(OneSidedFrame {
                    name: pooled.keys[key].clone(),
                    side: side.to_owned(),
                    us_per_request: us / n as f64,
                });
            }
        }
    }
    out.sort_by(|a, b| b.us_per_request.total_cmp(&a.us_per_request).then_with(|| a.name.cmp(&b.name)));
    out.truncate(options.max_frames);
    out
}

/// The frames to test: paired, not structural, identical chains merged, the largest `sum d^2` first.
fn candidates(pooled: &Pooled, n: usize, options: &FrameOptions) -> Vec<Candidate> {
    let mut groups: BTreeMap<Vec<u64>, Vec<usize>> = BTreeMap::new();
    for key in (0..pooled.keys.len()).filter(|&k| pooled.total(0, k) > 0.0 && pooled.total(1, k) > 0.0) {
        if is_structural(&pooled.keys[key]) || pooled.roots.contains(&key) {
            continue;
        }
        let bits: Vec<u64> =
            (0..n).flat_map(|i| [pooled.value(i, 0, key).to_bits(), pooled.value(i, 1, key).to_bits()]).collect();
        groups.entry(bits).or_default().push(key);
    }
    let mut out: Vec<(f64, Candidate)> = groups
        .into_values()
        .map(|mut group| {
            group.sort_by(|&a, &b| {
                pooled.depth(a).total_cmp(&pooled.depth(b)).then_with(|| pooled.keys[a].cmp(&pooled.keys[b]))
            });
            let key = *group.last().unwrap_or(&0);
            let d: Vec<f64> = (0..n).map(|i| pooled.value(i, 1, key) - pooled.value(i, 0, key)).collect();
            let baseline_mean = (0..n).map(|i| pooled.value(i, 0, key)).sum::<f64>() / n as f64;
            let score = d.iter().map(|x| x * x).sum::<f64>();
            (score, Candidate { key, group, d, baseline_mean })
        })
        .collect();
    out.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| pooled.keys[a.1.key].cmp(&pooled.keys[b.1.key])));
    out.truncate(options.max_frames);
    out.into_iter().map(|(_, c)| c).collect()
}

/// `mean / (sd / sqrt n)` of `d` with signs flipped where `flip`'s bits are set (`None`: as they are). Zero
/// differences give 0; constant non-zero ones an infinite statistic.
fn t_statistic(d: &[f64], flip: Option<&[bool]>) -> f64 {
    let n = d.len() as f64;
    let (mut sum, mut sq) = (0.0, 0.0);
    for (i, &x) in d.iter().enumerate() {
        let x = if flip.is_some_and(|f| f.get(i).copied().unwrap_or(false)) { -x } else { x };
        sum += x;
        sq += x * x;
    }
    let mean = sum / n;
    let var = ((sq - n * mean * mean) / (n - 1.0)).max(0.0);
    // Below rounding error of the sum of squares, the spread is zero.
    if var <= sq * 1e-12 {
        return if mean == 0.0 { 0.0 } else { f64::INFINITY.copysign(mean) };
    }
    mean / (var / n).sqrt()
}

/// Westfall-Young step-down max-T adjusted p-values of each row of `d` (frames x rounds).
fn max_t(d: &[&[f64]], flips: usize, exact: bool, seed: u64) -> Vec<f64> {
    let m = d.len();
    if m == 0 {
        return Vec::new();
    }
    let n = d[0].len();
    let observed: Vec<f64> = d.iter().map(|row| t_statistic(row, None).abs()).collect();
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&a, &b| observed[b].total_cmp(&observed[a]).then(a.cmp(&b)));
    let mut counts = vec![0usize; m];
    let mut flip = vec![false; n];
    let mut rng = SplitMix(seed);
    let mut star = vec![0.0; m];
    for b in 0..flips {
        if exact {
            for (i, f) in flip.iter_mut().enumerate() {
                *f = (b >> i) & 1 == 1;
            }
        } else if b == 0 {
            flip.iter_mut().for_each(|f| *f = false);
        } else {
            let mut bits = rng.next();
            for (i, f) in flip.iter_mut().enumerate() {
                if i % 64 == 0 && i > 0 {
                    bits = rng.next();
                }
                *f = (bits >> (i % 64)) & 1 == 1;
            }
        }
        for (j, row) in d.iter().enumerate() {
            star[j] = t_statistic(row, Some(&flip)).abs();
        }
        let mut running = 0.0f64;
        for r in (0..m).rev() {
            let j = order[r];
            running = running.max(star[j]);
            // The flip that changes nothing reaches exactly; rounding of the sums must not make a mirrored one miss.
            if running >= observed[j] * (1.0 - 1e-12) {
                counts[r] += 1;
            }
        }
    }
    let mut out = vec![1.0; m];
    let mut adjusted = 0.0f64;
    for (r, &j) in order.iter().enumerate() {
        adjusted = adjusted.max(counts[r] as f64 / flips as f64);
        out[j] = adjusted.min(1.0);
    }
    out
}

/// A seed from the data, so the same rounds give the same random flips (FNV-1a over the values' bits).
fn seed(d: &[&[f64]]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for row in d {
        for x in row.iter() {
            for byte in x.to_bits().to_le_bytes() {
                h ^= u64::from(byte);
                h = h.wrapping_mul(0x0000_0100_0000_01b3);
            }
        }
    }
    h
}

/// SplitMix64 (Steele, Lea and Flood 2014): small, fast, good enough for sign flips.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

/// Per caller-callee pair of tested frames (the callee's nearest tested frame above it in a stack), per round, the
/// baseline's and candidate's microseconds per request of the stacks with that pair, each stack counted once.
struct Edges {
    values: HashMap<(usize, usize), Vec<[f64; 2]>>,
    /// Per pair of tested frames, the time of the callee anywhere under the caller, per round and side.
    below: HashMap<(usize, usize), Vec<[f64; 2]>>,
}

impl Edges {
    fn of(pooled: &Pooled, candidates: &[Candidate]) -> Edges {
        let n = pooled.stacks.len();
        let mut rep: Vec<Option<usize>> = vec![None; pooled.keys.len()];
        for (j, c) in candidates.iter().enumerate() {
            for &k in &c.group {
                if let Some(r) = rep.get_mut(k) {
                    *r = Some(j);
                }
            }
        }
        let mut values: HashMap<(usize, usize), Vec<[f64; 2]>> = HashMap::new();
        let mut below: HashMap<(usize, usize), Vec<[f64; 2]>> = HashMap::new();
        let mut pairs: Vec<(usize, usize)> = Vec::new();
        let mut seen: Vec<usize> = Vec::new();
        let mut deep: Vec<(usize, usize)> = Vec::new();
        for (i, sides) in pooled.stacks.iter().enumerate() {
            for (s, side) in sides.iter().enumerate() {
                for (ids, us) in side {
                    pairs.clear();
                    seen.clear();
                    deep.clear();
                    let mut above: Option<usize> = None;
                    for k in ids.iter() {
                        let Some(j) = rep.get(*k).copied().flatten() else { continue };
                        // Every candidate above this one, at any depth, once per stack.
                        for &a in seen.iter().filter(|&&a| a != j) {
                            if !deep.contains(&(a, j)) {
                                deep.push((a, j));
                                if let Some(v) = below.entry((a, j)).or_insert_with(|| vec![[0.0; 2]; n]).get_mut(i) {
                                    v[s] += us;
                                }
                            }
                        }
                        if !seen.contains(&j) {
                            seen.push(j);
                        }
                        if let Some(p) = above.filter(|&p| p != j) {
                            if !pairs.contains(&(p, j)) {
                                pairs.push((p, j));
                                if let Some(v) = values.entry((p, j)).or_insert_with(|| vec![[0.0; 2]; n]).get_mut(i) {
                                    v[s] += us;
                                }
                            }
                        }
                        above = Some(j);
                    }
                }
            }
        }
        Edges { values, below }
    }

    /// Like [`Edges::rise_and_time`], for `callee` anywhere under `caller`, not only its nearest tested caller.
    fn rise_and_time_below(&self, caller: usize, callee: usize) -> Option<(f64, f64)> {
        let v = self.below.get(&(caller, callee))?;
        let n = v.len().max(1) as f64;
        Some((v.iter().map(|r| r[1] - r[0]).sum::<f64>() / n, v.iter().map(|r| r[0] + r[1]).sum::<f64>()))
    }

    /// The mean change (candidate - baseline) of the pair, and its time on both sides together.
    fn rise_and_time(&self, caller: usize, callee: usize) -> Option<(f64, f64)> {
        let v = self.values.get(&(caller, callee))?;
        let n = v.len().max(1) as f64;
        Some((v.iter().map(|r| r[1] - r[0]).sum::<f64>() / n, v.iter().map(|r| r[0] + r[1]).sum::<f64>()))
    }
}

/// A frame named: its candidate index, its path of keys, and the new work under it that explains its rise (a key
/// sampled in the candidate only, and its time under the frame per round).
type Named = (usize, Vec<usize>, Option<(usize, Vec<f64>)>);

/// The frames to name among `chosen` (candidate indices changed in `sign`'s direction), each with its path of keys.
/// A walk also stops at a frame whose rise new work explains: a function under it sampled in the candidate only
/// (the work `slow_path` does and the baseline's never did), with at least `explain_share` of the frame's rise and
/// `owned_share` of its time under it ([`new_work`]); that function is where the time went.
fn name_frames(
    pooled: &Pooled,
    candidates: &[Candidate],
    edges: &Edges,
    chosen: &[usize],
    sign: f64,
    options: &FrameOptions,
) -> Vec<Named> {
    let mean = |d: &[f64]| d.iter().sum::<f64>() / d.len().max(1) as f64;
    let rise = |j: usize| sign * mean(&candidates[j].d);
    let time = |j: usize| -> f64 { (0..2).map(|s| pooled.total(s, candidates[j].key)).sum() };
    // The callees of `p` among the chosen frames that carry at least `share` of `of`'s change under `p`.
    let callees = |p: usize| -> Vec<(usize, f64, f64)> {
        chosen
            .iter()
            .filter(|&&c| c != p)
            .filter_map(|&c| edges.rise_and_time(p, c).map(|(r, t)| (c, sign * r, t)))
            .collect()
    };
    let in_chosen: HashSet<usize> = chosen.iter().copied().collect();
    let mut order = chosen.to_vec();
    order.sort_by(|&a, &b| {
        pooled
            .depth(candidates[a].key)
            .total_cmp(&pooled.depth(candidates[b].key))
            .then_with(|| rise(b).total_cmp(&rise(a)))
    });
    let mut covered: HashSet<usize> = HashSet::new();
    let mut named: Vec<Named> = Vec::new();
    for &start in &order {
        if covered.contains(&start) {
            continue;
        }
        let mut path = vec![start];
        let mut current = start;
        let mut new = None;
        loop {
            if sign > 0.0 {
                new = new_work(pooled, &candidates[current], rise(current), options);
                if new.is_some() {
                    break;
                }
            }
            let next = callees(current)
                .into_iter()
                .filter(|&(c, r, t)| {
                    !path.contains(&c)
                        && r >= options.explain_share * rise(current)
                        && t >= options.owned_share * time(c)
                })
                .max_by(|a, b| a.1.total_cmp(&b.1).then(b.0.cmp(&a.0)));
            match next {
                Some((c, _, _)) => {
                    path.push(c);
                    current = c;
                }
                None => break,
            }
        }
        covered.extend(path.iter().copied());
        // Callees whose change happened mostly under the named frame are explained by it.
        let mut stack = vec![current];
        while let Some(p) = stack.pop() {
            for (c, r, _) in callees(p) {
                if in_chosen.contains(&c) && !covered.contains(&c) && r >= options.explain_share * rise(c) {
                    covered.insert(c);
                    stack.push(c);
                }
            }
        }
        if !named.iter().any(|(j, _, _)| *j == current) {
            let keys: Vec<usize> = path.iter().flat_map(|&j| candidates[j].group.iter().copied()).collect();
            named.push((current, keys, new));
        }
    }
    // A named frame whose rise another named frame, deeper under it and owned by it, explains (a runtime's
    // `catch_unwind` above the handler's `slow_path`) is not named: the deeper one says where.
    let explained = |a: usize| {
        named.iter().any(|&(b, _, _)| {
            b != a
                && edges.rise_and_time_below(a, b).is_some_and(|(r, t)| {
                    sign * r >= options.explain_share * rise(a) && t >= options.owned_share * time(b)
                })
        })
    };
    // A named frame whose rise happened mostly under another named frame, at any depth, and is only a minor part of
    // it (a kernel `do_syscall_64` under a noisy user `clock_gettime` under `slow_path`), is that frame's detail.
    let detail = |b: usize| {
        named.iter().any(|&(a, _, _)| {
            a != b
                && edges.rise_and_time_below(a, b).is_some_and(|(r, _)| {
                    sign * r >= options.explain_share * rise(b) && sign * r < options.explain_share * rise(a)
                })
        })
    };
    let keep: Vec<bool> = named.iter().map(|(a, _, _)| !explained(*a) && !detail(*a)).collect();
    named.into_iter().zip(keep).filter_map(|(n, k)| k.then_some(n)).collect()
}

/// New work under a frame whose time rose by `rise` (microseconds per request): the deepest function under it in
/// the candidate's stacks that the baseline never sampled, with at least `explain_share` of the rise (its mean
/// time under the frame) and at least `owned_share` of its own time under the frame; with its time under the frame
/// in each round.
fn new_work(pooled: &Pooled, c: &Candidate, rise: f64, options: &FrameOptions) -> Option<(usize, Vec<f64>)> {
    if rise <= 0.0 {
        return None;
    }
    let n = pooled.stacks.len().max(1);
    let mut under: HashMap<usize, Vec<f64>> = HashMap::new();
    let mut seen: Vec<usize> = Vec::new();
    for (i, sides) in pooled.stacks.iter().enumerate() {
        for (ids, us) in &sides[1] {
            let Some(at) = ids.iter().position(|k| c.group.contains(k)) else { continue };
            seen.clear();
            for &k in &ids[at + 1..] {
                if pooled.total(0, k) <= 0.0 && !seen.contains(&k) && !is_structural(&pooled.keys[k]) {
                    seen.push(k);
                    if let Some(v) = under.entry(k).or_insert_with(|| vec![0.0; n]).get_mut(i) {
                        *v += us;
                    }
                }
            }
        }
    }
    under
        .into_iter()
        .filter(|(k, v)| {
            let sum = v.iter().sum::<f64>();
            sum / n as f64 >= options.explain_share * rise && sum >= options.owned_share * pooled.total(1, *k)
        })
        .max_by(|a, b| pooled.depth(a.0).total_cmp(&pooled.depth(b.0)).then(b.0.cmp(&a.0)))
}

/// The rows the "where the time went" table of results.json keeps per side ([`scenario_profile`]).
pub const TABLE_ROWS: usize = 20;

/// One side's [`ScenarioProfile`] from its stacks merged over the measured rounds: the samples' shape, the table
/// of [`TABLE_ROWS`] rows, no differential (the candidate's is [`differential`]'s, set by the caller) and the
/// folded file's name when it was written. `ns_per_sample` is `None` when samples are not CPU time.
pub fn scenario_profile(
    source: &str,
    sample_type: &str,
    stacks: &Stacks,
    ns_per_sample: Option<f64>,
    requests: u64,
    folded_file: Option<String>,
) -> ScenarioProfile {
    let shape = stacks.shape();
    ScenarioProfile {
        source: source.to_owned(),
        sample_type: sample_type.to_owned(),
        samples: shape.samples,
        ns_per_sample,
        requests,
        distinct_stacks: shape.distinct_stacks,
        overflow_samples: shape.overflow,
        unknown_share: if shape.samples > 0 { shape.unknown_leaf as f64 / shape.samples as f64 } else { 0.0 },
        depth_p50: shape.depth_p50,
        depth_p90: shape.depth_p90,
        depth_max: shape.depth_max,
        folded_file,
        table: time_table(stacks, ns_per_sample, requests, TABLE_ROWS),
        differential: None,
        notes: Vec::new(),
        stacks: None,
    }
}

/// The folded file of an instance's profile beside results.json: `profile-<instance>[-<side>].folded`, with every
/// character but letters, digits, `-`, `_`, `.`, `[`, `]`, `=` and `,` of the instance's name made `_`.
pub fn folded_file_name(instance: &str, side: Option<&str>) -> String {
    let clean = |t: &str| -> String {
        t.chars().map(|c| if c.is_ascii_alphanumeric() || "-_.[]=,".contains(c) { c } else { '_' }).collect()
    };
    match side {
        Some(side) => format!("profile-{}-{}.folded", clean(instance), clean(side)),
        None => format!("profile-{}.folded", clean(instance)),
    }
}

/// Where one side's time went: the `top` frames by self and by total time, by match key.
/// `ns_per_sample` is `None` when samples are not CPU time (then no microseconds are given).
pub fn time_table(stacks: &Stacks, ns_per_sample: Option<f64>, requests: u64, top: usize) -> TimeTable {
    let samples = stacks.total();
    let mut self_counts: HashMap<String, u64> = HashMap::new();
    let mut total_counts: HashMap<String, u64> = HashMap::new();
    let mut key_of: HashMap<&str, String> = HashMap::new();
    let mut seen: Vec<String> = Vec::new();
    for (frames, count) in stacks.iter() {
        seen.clear();
        for name in &frames {
            let key = key_of.entry(*name).or_insert_with(|| match_key(name)).clone();
            if !seen.contains(&key) {
                seen.push(key);
            }
        }
        if let Some(leaf) = frames.last() {
            let key = key_of.entry(*leaf).or_insert_with(|| match_key(leaf)).clone();
            *self_counts.entry(key).or_default() += count;
        }
        for key in seen.drain(..) {
            *total_counts.entry(key).or_default() += count;
        }
    }
    if stacks.overflow() > 0 {
        *self_counts.entry(OVERFLOW_FRAME.to_owned()).or_default() += stacks.overflow();
        *total_counts.entry(OVERFLOW_FRAME.to_owned()).or_default() += stacks.overflow();
    }
    let us_per_sample =
        ns_per_sample.filter(|ns| ns.is_finite() && *ns > 0.0 && requests > 0).map(|ns| ns / 1_000.0 / requests as f64);
    let pct = |c: u64| if samples > 0 { 100.0 * c as f64 / samples as f64 } else { 0.0 };
    let row = |name: &str| FrameTime {
        name: name.to_owned(),
        self_pct: pct(self_counts.get(name).copied().unwrap_or(0)),
        total_pct: pct(total_counts.get(name).copied().unwrap_or(0)),
        self_us_per_request: us_per_sample.map(|u| u * self_counts.get(name).copied().unwrap_or(0) as f64),
        total_us_per_request: us_per_sample.map(|u| u * total_counts.get(name).copied().unwrap_or(0) as f64),
    };
    let ranked = |counts: &HashMap<String, u64>| -> Vec<FrameTime> {
        let mut v: Vec<(&String, &u64)> = counts.iter().collect();
        v.sort_by(|a, b| b.1.cmp(a.1).then_with(|| a.0.cmp(b.0)));
        v.into_iter().take(top).map(|(name, _)| row(name)).collect()
    };
    TimeTable {
        samples,
        total_us_per_request: us_per_sample.map(|u| u * samples as f64),
        by_self: ranked(&self_counts),
        by_total: ranked(&total_counts),
    }
}

/// The unit of a profile's per-request figures: CPU microseconds, or the profiler's own counts (samples, bytes)
/// for profiles whose samples are not time.
pub fn per_request_unit(p: &ScenarioProfile) -> &'static str {
    if p.sample_type == "cpu" || p.sample_type == "wall" {
        "us/request"
    } else {
        "units/request"
    }
}

/// `where: slow_path +14.6 us/request (+12.9..+16.1, p 0.002); ...`: the frames an A/B profile named as slower,
/// with their estimates, intervals and adjusted p-values (at most `most`); `where: no frame changed ...` when the
/// test named none; `None` without a differential.
pub fn where_text(p: &ScenarioProfile, most: usize) -> Option<String> {
    let d = p.differential.as_ref()?;
    let unit = per_request_unit(p);
    // Frames sampled on one side only (new, gone, or inlined differently) are not tested: said apart.
    let mut apart: Vec<&crate::model::OneSidedFrame> = d.one_sided.iter().collect();
    apart.sort_by(|a, b| b.us_per_request.total_cmp(&a.us_per_request));
    let apart: Vec<String> = apart
        .iter()
        .take(3)
        .map(|f| format!("{} {:.1} {unit} only in the {}", f.name, f.us_per_request, f.side))
        .collect();
    let apart = if apart.is_empty() { String::new() } else { format!("; not tested: {}", apart.join(", ")) };
    if d.named.is_empty() {
        return Some(format!(
            "where: no frame changed significantly ({} frames tested over {} paired rounds, family-wise {}%){apart}",
            d.tested.len(),
            d.rounds,
            d.alpha * 100.0
        ));
    }
    Some(format!("where: {}{apart}", named_text(d, unit, most)))
}

/// The frames named, with estimates, intervals and adjusted p-values: at most `most`, then how many more.
fn named_text(d: &FrameDifferential, unit: &str, most: usize) -> String {
    let parts: Vec<String> = d
        .named
        .iter()
        .take(most)
        .map(|f| {
            format!(
                "{} {:+.1} {unit} ({:+.1}..{:+.1}, p {:.3})",
                f.name, f.estimate_us, f.interval_us.lo, f.interval_us.hi, f.p_adjusted
            )
        })
        .collect();
    let more = d.named.len().saturating_sub(most);
    let more = if more > 0 { format!("; and {more} more") } else { String::new() };
    format!("{}{more}", parts.join("; "))
}

/// What a failed verdict of an A/B instance adds to its line: `where: slow_path +14.6 us/request (+12.9..+16.1,
/// p 0.002)`, the frames the candidate's profile named as changed (at most two); when none was named, the frames
/// sampled in the candidate only (`sampled in the candidate only (not tested): main.slowPath 190.0 us/request`),
/// which have no pairs to test; `None` for a verdict that passed or was inconclusive, and when there is neither
/// (nothing is named without significance).
pub fn verdict_where(s: &crate::ScenarioResult, v: &crate::Verdict) -> Option<String> {
    let failed = match &v.statistics {
        Some(st) => st.status == crate::StatisticalStatus::Fail,
        None => !v.passed && v.evaluated(),
    };
    let p = s.profile.as_ref().filter(|_| failed)?;
    let d = p.differential.as_ref()?;
    let unit = per_request_unit(p);
    if !d.named.is_empty() {
        return Some(format!("where: {}", named_text(d, unit, 2)));
    }
    // A function the candidate runs and the baseline never did (new code, or inlined differently) is not tested
    // (it has no pairs), but it is where to look: said as such, without a significance it does not have.
    let mut new: Vec<&OneSidedFrame> = d.one_sided.iter().filter(|f| f.side == "candidate").collect();
    new.sort_by(|a, b| b.us_per_request.total_cmp(&a.us_per_request));
    let parts: Vec<String> = new.iter().take(2).map(|f| format!("{} {:.1} {unit}", f.name, f.us_per_request)).collect();
    (!parts.is_empty()).then(|| format!("sampled in the candidate only (not tested): {}", parts.join(", ")))
}

/// The most characters of a profile's mark in the history.
const MAX_MARK_CHARS: usize = 400;

/// How the history marks a profiled instance: `profiled (cpu from cpu, 2,236 samples); where: slow_path +18.3
/// us/request (+16.0..+20.0, p 0.008)`, the frames named (at most three) when the profile named any; at most
/// 400 characters.
pub fn history_mark(p: &ScenarioProfile) -> String {
    let mut mark =
        format!("profiled ({} from {}, {} samples)", p.sample_type, p.source, crate::format::count(p.samples));
    if let Some(d) = p.differential.as_ref().filter(|d| !d.named.is_empty()) {
        mark.push_str(&format!("; where: {}", named_text(d, per_request_unit(p), 3)));
    }
    if mark.chars().count() > MAX_MARK_CHARS {
        mark = mark.chars().take(MAX_MARK_CHARS - 3).chain("...".chars()).collect();
    }
    mark
}

/// One line on what a profile holds: samples, the share unnamed, the stack depth, and its notes.
pub fn profile_line(p: &ScenarioProfile) -> String {
    let mut line = format!(
        "{} samples ({} from {}), {:.0}% of leaves unnamed, stack depth p50 {} (p90 {}, max {})",
        p.samples,
        p.sample_type,
        p.source,
        p.unknown_share * 100.0,
        p.depth_p50,
        p.depth_p90,
        p.depth_max
    );
    if let Some(us) = p.table.total_us_per_request {
        line.push_str(&format!(", {us:.1} us/request sampled"));
    }
    for n in &p.notes {
        line.push_str("; ");
        line.push_str(n);
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small deterministic generator for the synthetic rounds.
    struct Rng(SplitMix);

    impl Rng {
        fn uniform(&mut self) -> f64 {
            (self.0.next() >> 11) as f64 / (1u64 << 53) as f64
        }

        fn normal(&mut self) -> f64 {
            let (u, v) = (self.uniform().max(1e-300), self.uniform());
            (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
        }

        /// Poisson counts: Knuth's product for small means, a rounded normal above.
        fn poisson(&mut self, mean: f64) -> u64 {
            if mean < 30.0 {
                let (limit, mut k, mut p) = ((-mean).exp(), 0u64, 1.0);
                loop {
                    p *= self.uniform();
                    if p <= limit {
                        return k;
                    }
                    k += 1;
                }
            }
            (mean + mean.sqrt() * self.normal()).round().max(0.0) as u64
        }
    }

    const PERIOD_NS: f64 = 250_000.0;
    const REQUESTS: f64 = 4_000.0;

    /// A server's stacks under 2,000 requests/s for 2 s: a 65 us handler, a shared `burn` called by the handler
    /// and by `slow_path`, forty small library frames, a per-round CPU noise of 3% on each side, and sampling
    /// noise at a 250 us period. `extra_us` more under `slow_path -> burn` on the candidate; `owned` makes `burn`
    /// called by `slow_path` only (`sha256` takes the handler's share).
    fn side(rng: &mut Rng, extra_us: f64, owned: bool) -> RoundProfile {
        let requests = (REQUESTS * (1.0 + 0.01 * rng.normal())).round() as u64;
        let noise = 1.0 + 0.03 * rng.normal();
        let top =
            "start_thread;std::sys::pal::unix::thread::Thread::new::thread_start;main;server::run;server::handler";
        let shared = if owned { "sha256" } else { "burn" };
        let mut leaves: Vec<(String, f64)> = vec![
            (format!("{top};parse;memchr"), 12.0),
            (format!("{top};parse"), 8.0),
            (format!("{top};{shared}"), 30.0),
            (format!("{top};slow_path"), 2.0),
            (format!("{top};slow_path;burn"), 3.0 + extra_us),
            (format!("{top};respond;write"), 10.0),
        ];
        for k in 0..40 {
            leaves.push((format!("{top};respond;lib::f{k}::h0123456789abcdef"), 0.1 + 0.02 * k as f64));
        }
        leaves.push(("main;rt::timer".to_owned(), 1.0));
        let mut stacks = Stacks::new();
        for (stack, us) in leaves {
            let mean = us * noise * 1_000.0 * requests as f64 / PERIOD_NS;
            let frames: Vec<&str> = stack.split(';').collect();
            stacks.add(&frames, rng.poisson(mean));
        }
        RoundProfile { stacks, ns_per_sample: PERIOD_NS, requests }
    }

    fn rounds(seed: u64, n: usize, extra_us: f64, owned: bool) -> Vec<PairedRound> {
        let mut rng = Rng(SplitMix(seed));
        (0..n)
            .map(|_| PairedRound { baseline: side(&mut rng, 0.0, owned), candidate: side(&mut rng, extra_us, owned) })
            .collect()
    }

    #[test]
    fn fifteen_microseconds_more_under_slow_path_names_slow_path() {
        let mut named_first = 0;
        for seed in 0..20 {
            let d = differential(&rounds(seed, 10, 15.0, false), &FrameOptions::default()).unwrap();
            if d.named.first().is_some_and(|f| f.name == "slow_path" && f.p_adjusted < 0.01) {
                named_first += 1;
            }
            if seed == 0 {
                let first = &d.named[0];
                assert_eq!(first.name, "slow_path", "{d:#?}");
                assert!(first.interval_us.lo > 10.0 && first.interval_us.hi < 20.0, "{first:?}");
                assert!((first.estimate_us - 15.0).abs() < 3.0, "{first:?}");
                assert_eq!(first.path, vec!["server::run", "server::handler", "slow_path"]);
                assert!(first.estimate_pct.unwrap() > 200.0, "{first:?}");
                assert!(d.exact && d.randomisations == 1024);
            }
        }
        eprintln!("A/B: slow_path named first in {named_first} of 20 trials");
        assert!(named_first >= 19, "slow_path named first in {named_first} of 20");
    }

    #[test]
    fn new_work_under_a_slow_path_the_baseline_never_ran_names_the_slow_path() {
        // The baseline's `slow_path` returns at once (never sampled); the candidate's spends 20 us there.
        let mut named_first = 0;
        for seed in 0..20 {
            let mut r = rounds(40 + seed, 10, 15.0, false);
            for round in &mut r {
                let kept: Vec<(Vec<String>, u64)> = round
                    .baseline
                    .stacks
                    .iter()
                    .filter(|(frames, _)| !frames.contains(&"slow_path"))
                    .map(|(frames, n)| (frames.iter().map(|f| (*f).to_owned()).collect(), n))
                    .collect();
                round.baseline.stacks = kept.into_iter().collect();
            }
            let d = differential(&r, &FrameOptions::default()).unwrap();
            if d.named.first().is_some_and(|f| f.name == "slow_path" && f.p_adjusted < 0.01) {
                named_first += 1;
            }
            if seed == 0 {
                let first = &d.named[0];
                assert_eq!(first.path, vec!["server::run", "server::handler", "slow_path"], "{d:#?}");
                assert!((first.estimate_us - 20.0).abs() < 3.0, "{first:?}");
                assert!(first.interval_us.lo > 15.0 && first.interval_us.hi < 25.0, "{first:?}");
                assert!(d.one_sided.iter().any(|f| f.name == "slow_path"), "still said apart: {d:#?}");
            }
        }
        assert!(named_first >= 19, "slow_path named first in {named_first} of 20");
    }

    #[test]
    fn a_kernel_frame_whose_rise_is_under_the_named_frame_is_not_named_again() {
        // `slow_path` burns 15 us more and calls a clock 4 us more often; the clock's user frame is noisy (its own
        // time under `parse` swings by half from round to round), so only its kernel callee is significant: that
        // rise happened under `slow_path`, which says where.
        let mut twice = 0;
        for seed in 0..10 {
            let mut rng = Rng(SplitMix(500 + seed));
            let mut side = |extra: f64| {
                let requests = 4_000u64;
                let noise = 1.0 + 0.02 * rng.normal();
                let clock_self = 10.0 * (1.0 + 0.5 * rng.normal()).max(0.05);
                let top = "main;server::handler";
                let leaves = [
                    (format!("{top};parse;clock"), clock_self),
                    (format!("{top};parse;clock;do_syscall_64"), 10.0),
                    (format!("{top};respond"), 30.0),
                    (format!("{top};slow_path"), 3.0 + extra),
                    (format!("{top};slow_path;clock;do_syscall_64"), 1.0 + extra * 4.0 / 15.0),
                ];
                let mut stacks = Stacks::new();
                for (stack, us) in leaves {
                    let frames: Vec<&str> = stack.split(';').collect();
                    stacks.add(&frames, rng.poisson(us * noise * 1_000.0 * requests as f64 / PERIOD_NS));
                }
                RoundProfile { stacks, ns_per_sample: PERIOD_NS, requests }
            };
            let r: Vec<PairedRound> =
                (0..10).map(|_| PairedRound { baseline: side(0.0), candidate: side(15.0) }).collect();
            let d = differential(&r, &FrameOptions::default()).unwrap();
            assert_eq!(d.named.first().map(|f| f.name.as_str()), Some("slow_path"), "{d:#?}");
            if d.named.iter().any(|f| f.name == "do_syscall_64") {
                twice += 1;
            }
        }
        assert_eq!(twice, 0, "do_syscall_64 named beside slow_path in {twice} of 10");
    }

    #[test]
    fn a_change_in_a_callee_only_one_caller_calls_names_the_callee_with_its_caller_in_the_path() {
        let d = differential(&rounds(7, 10, 15.0, true), &FrameOptions::default()).unwrap();
        assert_eq!(d.named[0].name, "burn", "{d:#?}");
        assert_eq!(d.named[0].path, vec!["server::run", "server::handler", "slow_path", "burn"]);
    }

    #[test]
    fn a_a_rounds_name_nothing_in_nearly_every_trial() {
        let trials = 200;
        let named = (0..trials)
            .filter(|&seed| {
                let d = differential(&rounds(1_000 + seed, 10, 0.0, false), &FrameOptions::default()).unwrap();
                !d.named.is_empty() || !d.faster.is_empty()
            })
            .count();
        eprintln!("A/A: a frame was named in {named} of {trials} trials");
        assert!(named * 100 <= 2 * trials as usize, "a frame was named in {named} of {trials} A/A trials");
    }

    #[test]
    fn too_few_rounds_can_name_nothing_and_say_so() {
        let d = differential(&rounds(3, 6, 15.0, false), &FrameOptions::default()).unwrap();
        assert!(d.named.is_empty());
        assert_eq!(d.smallest_p, 2.0 / 64.0);
        assert!(matches!(
            differential(&rounds(3, 1, 1.0, false), &FrameOptions::default()),
            Err(FramesError::TooFewRounds { rounds: 1 })
        ));
    }

    #[test]
    fn many_rounds_use_seeded_random_flips_and_give_the_same_answer_twice() {
        let r = rounds(11, 20, 15.0, false);
        let a = differential(&r, &FrameOptions::default()).unwrap();
        let b = differential(&r, &FrameOptions::default()).unwrap();
        assert!(!a.exact);
        assert_eq!(a.randomisations, 10_000);
        assert_eq!(a, b);
        assert_eq!(a.named[0].name, "slow_path");
    }

    #[test]
    fn frames_on_one_side_only_are_reported_apart() {
        let mut r = rounds(5, 10, 0.0, false);
        for round in &mut r {
            round.candidate.stacks.add(&["main", "server::run", "server::handler", "new_fast_path"], 400);
            round.baseline.stacks.add(&["main", "server::run", "server::handler", "old_inlined_path"], 300);
        }
        let d = differential(&r, &FrameOptions::default()).unwrap();
        let sides: Vec<(&str, &str)> = d.one_sided.iter().map(|f| (f.name.as_str(), f.side.as_str())).collect();
        assert_eq!(sides, vec![("new_fast_path", "candidate"), ("old_inlined_path", "baseline")]);
        assert!(d.tested.iter().all(|f| f.name != "new_fast_path" && f.name != "old_inlined_path"));
    }

    #[test]
    fn recursion_counts_a_frame_once_per_stack() {
        let stacks: Stacks =
            [(vec!["main", "walk", "walk", "walk", "leaf"], 10u64), (vec!["main", "other"], 10)].into_iter().collect();
        let table = time_table(&stacks, Some(1_000_000.0), 1_000, 10);
        let walk = table.by_total.iter().find(|f| f.name == "walk").unwrap();
        assert_eq!(walk.total_pct, 50.0);
        assert_eq!(walk.total_us_per_request, Some(10.0));
        let r = |extra: u64| RoundProfile {
            stacks: [(vec!["main", "walk", "walk", "leaf"], 100 + extra), (vec!["main", "x"], 100)]
                .into_iter()
                .collect(),
            ns_per_sample: 100_000.0,
            requests: 100,
        };
        let pooled = Pooled::of(&[PairedRound { baseline: r(0), candidate: r(50) }]);
        let walk = pooled.keys.iter().position(|k| k == "walk").unwrap();
        assert_eq!((pooled.value(0, 0, walk), pooled.value(0, 1, walk)), (100.0, 150.0));
    }

    #[test]
    fn root_and_start_up_frames_are_never_named() {
        // Every stack's time rises 10%: the change is everyone's; whatever is named, never the start-up frames.
        let mut r = rounds(9, 10, 0.0, false);
        for round in &mut r {
            let mut scaled = Stacks::new();
            for (frames, count) in round.candidate.stacks.iter() {
                scaled.add(&frames, count + count / 10);
            }
            round.candidate.stacks = scaled;
        }
        let d = differential(&r, &FrameOptions::default()).unwrap();
        assert!(d.named.iter().all(|f| !is_structural(&f.name) && f.name != "server::run" && f.name != "start_thread"));
        assert!(d.tested.iter().all(|f| !is_structural(&f.name)));
    }

    #[test]
    fn the_max_t_adjustment_is_exact_on_a_tiny_example() {
        // One frame, 3 rounds all +1, +2, +3: only the identity and the full flip reach |t|: p = 2/8.
        let p = max_t(&[&[1.0, 2.0, 3.0]], 8, true, 0);
        assert_eq!(p, vec![0.25]);
        // A frame that never changes is not significant.
        let p = max_t(&[&[0.0, 0.0, 0.0], &[1.0, 2.0, 3.0]], 8, true, 0);
        assert_eq!(p, vec![1.0, 0.25]);
    }

    #[test]
    fn a_side_s_profile_summarises_its_stacks_and_names_its_folded_file() {
        let stacks: Stacks = [(vec!["main", "a", "b"], 6u64), (vec!["main", "[unknown]"], 2), (vec!["main", "c"], 2)]
            .into_iter()
            .collect();
        let p = scenario_profile("cpu", "cpu", &stacks, Some(1_000_000.0), 100, None);
        assert_eq!((p.samples, p.distinct_stacks, p.depth_p50, p.depth_max), (10, 3, 3, 3));
        assert_eq!(p.unknown_share, 0.2);
        assert_eq!(p.table.total_us_per_request, Some(100.0));
        assert_eq!(
            folded_file_name("api/users[conns=8]", Some("baseline")),
            "profile-api_users[conns=8]-baseline.folded"
        );
        assert_eq!(folded_file_name("plaintext", None), "profile-plaintext.folded");
    }

    #[test]
    fn a_failed_verdict_says_where_only_with_what_the_profile_can_stand_behind() {
        let stacks: Stacks = [(vec!["main", "a"], 10u64)].into_iter().collect();
        let mut s = crate::fixture::sample_ab_run().scenarios[0].clone();
        let mut v = s.judged.verdicts[0].clone();
        v.passed = false;
        v.statistics = None;
        v.note = None;
        let mut p = scenario_profile("cpu", "cpu", &stacks, Some(1_000_000.0), 100, None);
        let differential = |named: Vec<NamedFrame>, one_sided: Vec<OneSidedFrame>| FrameDifferential {
            rounds: 10,
            alpha: 0.01,
            confidence: 0.95,
            randomisations: 1024,
            exact: true,
            smallest_p: 2.0 / 1024.0,
            named,
            faster: Vec::new(),
            one_sided,
            tested: Vec::new(),
        };
        let slow = NamedFrame {
            name: "slow_path".into(),
            estimate_us: 14.6,
            interval_us: crate::stats::Interval {
                lo: 12.9,
                hi: 16.1,
                confidence: 0.95,
                requested: 0.95,
                reached: true,
                ranks: (9, 47),
                count: 55,
                exact: true,
            },
            estimate_pct: None,
            interval_pct: None,
            p_adjusted: 0.002,
            path: Vec::new(),
        };
        let new = OneSidedFrame { name: "main.slowPath".into(), side: "candidate".into(), us_per_request: 190.0 };
        // Without a differential (one side), nothing.
        s.profile = Some(p.clone());
        assert_eq!(verdict_where(&s, &v), None);
        p.differential = Some(differential(vec![slow], vec![new.clone()]));
        s.profile = Some(p.clone());
        assert_eq!(verdict_where(&s, &v).as_deref(), Some("where: slow_path +14.6 us/request (+12.9..+16.1, p 0.002)"));
        p.differential = Some(differential(Vec::new(), vec![new]));
        s.profile = Some(p.clone());
        assert_eq!(
            verdict_where(&s, &v).as_deref(),
            Some("sampled in the candidate only (not tested): main.slowPath 190.0 us/request")
        );
        // A verdict that passed says nothing of it.
        v.passed = true;
        assert_eq!(verdict_where(&s, &v), None);
    }

    #[test]
    fn the_table_ranks_frames_by_self_and_total_time() {
        let stacks: Stacks =
            [(vec!["main", "a", "b"], 6u64), (vec!["main", "a"], 3), (vec!["main", "c"], 1)].into_iter().collect();
        let t = time_table(&stacks, Some(2_000.0), 4, 2);
        assert_eq!(t.samples, 10);
        assert_eq!(t.total_us_per_request, Some(5.0));
        let names = |rows: &[FrameTime]| rows.iter().map(|r| r.name.clone()).collect::<Vec<_>>();
        assert_eq!(names(&t.by_self), vec!["b", "a"]);
        assert_eq!(names(&t.by_total), vec!["main", "a"]);
        assert_eq!(t.by_self[0].self_pct, 60.0);
        assert_eq!(t.by_self[0].self_us_per_request, Some(3.0));
        let no_cpu = time_table(&stacks, None, 4, 2);
        assert_eq!(no_cpu.total_us_per_request, None);
        assert_eq!(no_cpu.by_self[0].self_us_per_request, None);
    }
}
