//! Verdicts over repetitions: distribution-free estimates, exact rank-based intervals, Holm, PASS / FAIL /
//! INCONCLUSIVE.
//!
//! **The repetition is the sample, never the request.** Every function takes one number per repetition (each
//! repetition's p99 read from its own histogram, its throughput, ...); nothing here looks at requests. The
//! methods assume only that repetitions are independent draws from a continuous distribution (values from
//! 3-significant-digit histograms can tie; see *Ties* below). Results are reported the way criterion and
//! benchstat report them: an estimate, an interval with its achieved confidence, and a verdict.
//!
//! - **Median of one set** ([`median_ci`]): the interval `[x(k), x(n+1-k)]` between order statistics covers the true
//!   median with probability `1 - 2 P(Bin(n, 1/2) <= k-1)` whatever the distribution; `k` is the largest whose coverage
//!   reaches the requested confidence. That coverage is discrete: `[min, max]` covers with `1 - 2^(1-n)`, so a
//!   two-sided 95% interval needs `n >= 6` (90% needs 5). Below that the widest interval is returned with its achieved
//!   confidence and [`Interval::reached`] is false, never a pretended 95%. Its test is the sign test ([`sign_test`]).
//! - **Ratio of two sets, paired** ([`ratio`] with [`Design::Paired`]; round `i` ran baseline `a_i` and candidate
//!   `b_i`): on the log scale `d_i = ln b_i - ln a_i`, the Hodges-Lehmann estimate is the median of the `n(n+1)/2`
//!   Walsh averages `(d_i + d_j) / 2, i <= j`, and the interval is a pair of their order statistics with `k` from the
//!   exact Wilcoxon signed-rank distribution (dynamic programming, `n <=` [`EXACT_MAX`]; a normal approximation with
//!   continuity correction above). Assumes the `d_i` are symmetric about their centre. Same small-n bound as the
//!   median: 95% needs `n >= 6` pairs. Its test is [`signed_rank_test`].
//! - **Ratio of two sets, unpaired** ([`Design::Unpaired`]): the estimate is the median of the `m n` differences
//!   `ln b_j - ln a_i`, the interval a pair of their order statistics with `k` from the exact Mann-Whitney distribution
//!   (Gaussian binomial coefficients, both sizes `<=` [`EXACT_MAX`]; normal above). Assumes the two sets differ by a
//!   factor (a shift on the log scale), not in shape. 95% needs `m = n >= 4`. Its test is [`rank_sum_test`]. Estimates
//!   and intervals are reported as ratios `B / A` (`exp` of the log values).
//! - **p-values** are the tests these intervals invert, computed from the same sorted items: a one-sided p-value is
//!   `P(X <= c)` where `c` counts the items (order statistics, Walsh averages, pairwise ratios) that do *not* lie
//!   beyond the null value, so `p <= a` exactly when the interval at confidence `1 - 2a` reaches its level and excludes
//!   the null value. Without ties they equal the exact signed-rank, rank-sum and sign tests (scipy's `wilcoxon`,
//!   `mannwhitneyu`, `binomtest`); two-sided is `min(1, 2 min(p_less, p_greater))`.
//! - **Ties**: items equal to the null value count against rejection (in both one-sided p-values), and zero differences
//!   are kept, not dropped (scipy's default drops them): ties can only raise a p-value, and the intervals are closed,
//!   so a tied bound counts as inside.
//! - **Holm** ([`holm`], [`holm_alphas`]): the `j`-th smallest of `m` p-values is compared with `alpha / (m-j+1)`,
//!   stepping down until one is not rejected; the family-wise error is at most `alpha` for any dependence.
//! - **Verdicts** ([`verdict`], [`verdicts`]): PASS when the whole interval satisfies the limit, FAIL when the whole
//!   interval violates it, INCONCLUSIVE otherwise. With confidence `c`, a false FAIL (a good metric judged failed) and
//!   a false PASS each have probability at most `(1-c)/2` under the method's assumptions; [`verdicts`] keeps that for a
//!   family of checks together by Holm over the one-sided p-values of each side, and shows every interval at the level
//!   its verdict was decided at, so interval and verdict always agree. An INCONCLUSIVE verdict *leans* towards a side
//!   when the central [`LEAN_CONFIDENCE`] (50%) interval lies wholly on that side, else it is "too noisy to tell".
//! - **Smallest detectable change** ([`CheckVerdict::min_detectable_change`]): the half-width of the shown interval
//!   relative to its estimate; `sqrt(hi / lo) - 1` for ratios, `(hi - lo) / (2 |estimate|)` for absolute values. A true
//!   value must lie about that fraction beyond the limit for an interval of this width to clear it. `None` when the
//!   interval did not reach its confidence.
//!
//! Everything is pure and panics on no input: empty sets, non-finite values, values `<= 0` where a ratio needs
//! logarithms, mismatched pairs, or invalid confidences are a [`StatsError`].

use std::fmt;

use loadgate_model::Comparison;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The largest sample size (pairs for the signed-rank distribution, each set for Mann-Whitney) for which null
/// distributions are computed exactly; above it they are normal approximations with continuity correction.
pub const EXACT_MAX: usize = 50;

/// The most values per set the rank methods take: they sort all `n(n+1)/2` Walsh averages or `m n` pairwise
/// ratios. Repetitions are counted in tens; more is an error, not an allocation of gigabytes.
pub const MAX_SAMPLES: usize = 1000;

/// The confidence of the central interval that decides whether an INCONCLUSIVE verdict leans one way.
pub const LEAN_CONFIDENCE: f64 = 0.5;

/// The relative tolerance of `p <= alpha` comparisons (coverage sums are rounded; `1 - 0.9` is not `0.1`).
const FUZZ: f64 = 1e-9;

/// Which set of values an error is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Sample {
    /// The values of a one-set function ([`median_ci`], an absolute check).
    Values,
    /// The baseline (A) of a comparison.
    Baseline,
    /// The candidate (B) of a comparison.
    Candidate,
}

impl fmt::Display for Sample {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Sample::Values => "values",
            Sample::Baseline => "baseline",
            Sample::Candidate => "candidate",
        })
    }
}

/// Why a statistic could not be computed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum StatsError {
    #[error("no {0} values")]
    Empty(Sample),
    #[error("{sample} value at index {index} is {value}, not a finite number")]
    NotFinite { sample: Sample, index: usize, value: f64 },
    #[error("{sample} value at index {index} is {value}: a ratio needs values above zero")]
    NotPositive { sample: Sample, index: usize, value: f64 },
    #[error("paired sets differ in length: {baseline} baseline values, {candidate} candidate values")]
    LengthMismatch { baseline: usize, candidate: usize },
    #[error("{sample} has {n} values, more than the {max} the rank methods take")]
    TooMany { sample: Sample, n: usize, max: usize },
    #[error("confidence {0} is not strictly between 0 and 1")]
    Confidence(f64),
    #[error("alpha {0} is not strictly between 0 and 1")]
    Alpha(f64),
    #[error("p-value at index {index} is {value}, not between 0 and 1")]
    PValue { index: usize, value: f64 },
    #[error("limit {0} is not a finite number (above zero for a ratio)")]
    Limit(f64),
}

/// A confidence interval between two order statistics of `count` sorted items.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Interval {
    pub lo: f64,
    pub hi: f64,
    /// The achieved coverage: exact (discrete, at least `requested` when [`Interval::reached`]), or from the
    /// normal approximation when `exact` is false.
    pub confidence: f64,
    /// The confidence that was asked for.
    pub requested: f64,
    /// Whether the achieved confidence reaches the requested one. False only when `count` is too small for any
    /// pair of order statistics to reach it; the interval is then the widest, `[min, max]`.
    pub reached: bool,
    /// The 1-based ranks `(k, count + 1 - k)` of the bounds among the sorted items.
    pub ranks: (usize, usize),
    /// How many items the bounds were chosen from: `n` values, `n(n+1)/2` Walsh averages or `m n` ratios.
    pub count: usize,
    /// Whether the coverage comes from the exact null distribution.
    pub exact: bool,
}

impl Interval {
    /// Whether `x` lies in the closed interval.
    pub fn contains(&self, x: f64) -> bool {
        self.lo <= x && x <= self.hi
    }
}

/// The median of one set with its order-statistic interval ([`median_ci`]).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct MedianEstimate {
    pub median: f64,
    pub interval: Interval,
    pub n: usize,
}

/// How two sets of repetitions relate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Design {
    /// Rounds interleave A and B: pair `i` is round `i` (Wilcoxon signed-rank).
    Paired,
    /// Independent sets, of any sizes (Mann-Whitney).
    Unpaired,
}

/// The Hodges-Lehmann ratio `B / A` with its exact rank-based interval ([`ratio`]).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RatioEstimate {
    /// `exp` of the Hodges-Lehmann estimate of `ln(B / A)`.
    pub ratio: f64,
    pub interval: Interval,
    pub design: Design,
    pub n_baseline: usize,
    pub n_candidate: usize,
}

/// The alternative hypothesis of a test.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Alternative {
    TwoSided,
    /// The median (or the ratio `B / A`) is below the null value.
    Less,
    /// The median (or the ratio `B / A`) is above the null value.
    Greater,
}

/// A rank test's result ([`sign_test`], [`signed_rank_test`], [`rank_sum_test`]).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TestResult {
    /// The number of items above the null value, ties counting one half: the sign test's count of values above
    /// it, Wilcoxon's `T+` (sum of the ranks of positive differences), or Mann-Whitney's `U` of the candidate.
    pub statistic: f64,
    pub p_value: f64,
    /// Whether the p-value comes from the exact null distribution.
    pub exact: bool,
}

/// Which side of a limit is good, as in the SLO `metric < limit`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Goal {
    /// `value < limit` (latency under a limit).
    Below,
    /// `value <= limit`.
    AtMost,
    /// `value > limit` (throughput over a limit).
    Above,
    /// `value >= limit`.
    AtLeast,
}

impl Goal {
    /// The goal of an SLO's comparison; `None` for `==`, which no interval can establish.
    pub fn from_comparison(c: Comparison) -> Option<Goal> {
        match c {
            Comparison::Lt => Some(Goal::Below),
            Comparison::Le => Some(Goal::AtMost),
            Comparison::Gt => Some(Goal::Above),
            Comparison::Ge => Some(Goal::AtLeast),
            Comparison::Eq => None,
        }
    }

    /// Whether `value` satisfies the goal.
    pub fn holds(self, value: f64, limit: f64) -> bool {
        match self {
            Goal::Below => value < limit,
            Goal::AtMost => value <= limit,
            Goal::Above => value > limit,
            Goal::AtLeast => value >= limit,
        }
    }
}

/// Which side an INCONCLUSIVE verdict leans to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Lean {
    /// Probably meets the limit, not yet at the requested confidence.
    Pass,
    /// Probably misses the limit (a regression, for a relative check), not yet at the requested confidence.
    Fail,
}

/// A three-way verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "verdict", rename_all = "snake_case")]
pub enum Verdict3 {
    /// The whole interval meets the limit.
    Pass,
    /// The whole interval misses the limit.
    Fail,
    /// The interval straddles the limit. `leaning` is the side the central [`LEAN_CONFIDENCE`] interval lies
    /// on wholly; `None` is "too noisy to tell".
    Inconclusive { leaning: Option<Lean> },
}

impl fmt::Display for Verdict3 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Verdict3::Pass => "PASS",
            Verdict3::Fail => "FAIL",
            Verdict3::Inconclusive { leaning: Some(Lean::Pass) } => "INCONCLUSIVE (leans pass)",
            Verdict3::Inconclusive { leaning: Some(Lean::Fail) } => "INCONCLUSIVE (leans fail)",
            Verdict3::Inconclusive { leaning: None } => "INCONCLUSIVE (too noisy to tell)",
        })
    }
}

/// One check of a family: an absolute limit on the median of a metric over repetitions, or a limit on the
/// ratio `candidate / baseline`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Check<'a> {
    /// `p99 < 100ms` over N repetitions: the median's order-statistic interval against `limit`.
    Absolute { values: &'a [f64], goal: Goal, limit: f64 },
    /// `p99 <= baseline * 1.10`: the Hodges-Lehmann ratio interval against `limit` (`1.10`).
    Relative { baseline: &'a [f64], candidate: &'a [f64], design: Design, goal: Goal, limit: f64 },
}

/// The method behind a [`CheckVerdict`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Method {
    /// Median with its order-statistic interval (sign test).
    Median,
    /// Hodges-Lehmann ratio, Wilcoxon signed-rank.
    Paired,
    /// Hodges-Lehmann ratio, Mann-Whitney.
    Unpaired,
}

/// The spread of one set of repetitions.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SampleSummary {
    pub n: usize,
    pub median: f64,
    pub min: f64,
    pub max: f64,
    pub mean: f64,
    /// Sample standard deviation (`n - 1`) over the mean; `None` below two values or for a mean `<= 0`.
    pub cv: Option<f64>,
}

/// The verdict of one check, with what it rests on.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CheckVerdict {
    pub verdict: Verdict3,
    pub method: Method,
    /// The median (absolute) or the ratio `B / A` (relative).
    pub estimate: f64,
    /// The interval at the level the verdict was decided at: `confidence` for one check; Holm's level of its
    /// step, or of the step where Holm stopped, in a family ([`verdicts`]).
    pub interval: Interval,
    pub goal: Goal,
    pub limit: f64,
    /// The values (absolute) or the candidate (relative).
    pub sample: SampleSummary,
    pub baseline: Option<SampleSummary>,
    /// See the module doc: `sqrt(hi / lo) - 1` for ratios, `(hi - lo) / (2 |estimate|)` for absolute values;
    /// `None` when the interval did not reach its confidence or the estimate is zero.
    pub min_detectable_change: Option<f64>,
    /// One-sided p-value against "meets the limit" (small: the metric misses it); unadjusted.
    pub p_fail: f64,
    /// One-sided p-value against "misses the limit" (small: the metric meets it); unadjusted.
    pub p_pass: f64,
    /// How many checks shared the family's error rate (Holm's `m`).
    pub family_size: usize,
}

/// One p-value's place in Holm's procedure ([`holm`]).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HolmDecision {
    pub p_value: f64,
    /// Its 1-based rank among the p-values, smallest first (ties in input order).
    pub step: usize,
    /// The level it is compared with at its step: `alpha / (m - step + 1)`.
    pub alpha: f64,
    /// Holm's adjusted p-value, `min(1, max over steps i <= step of (m - i + 1) p(i))`.
    pub adjusted_p: f64,
    pub rejected: bool,
}

/// The median; the mean of the two middle values for an even count.
pub fn median(values: &[f64]) -> Result<f64, StatsError> {
    check_values(values, Sample::Values, false)?;
    Ok(median_sorted(&sorted(values)))
}

/// The spread of one set: median, min, max, mean, coefficient of variation.
pub fn summary(values: &[f64]) -> Result<SampleSummary, StatsError> {
    check_values(values, Sample::Values, false)?;
    Ok(summarize(values))
}

/// The coefficient of variation (sample standard deviation over the mean); `None` below two values, for a mean
/// `<= 0`, or for invalid values.
pub fn coefficient_of_variation(values: &[f64]) -> Option<f64> {
    summary(values).ok()?.cv
}

/// The median with its distribution-free order-statistic interval at `confidence` (two-sided, e.g. `0.95`).
///
/// The interval's achieved confidence is exact; when `values` are too few to reach `confidence` (fewer than 6
/// for 95%), the interval is `[min, max]` and [`Interval::reached`] is false.
pub fn median_ci(values: &[f64], confidence: f64) -> Result<MedianEstimate, StatsError> {
    check_confidence(confidence)?;
    check_values(values, Sample::Values, false)?;
    let ranked = Ranked::median(values);
    Ok(MedianEstimate { median: ranked.estimate, interval: ranked.interval(confidence), n: values.len() })
}

/// The Hodges-Lehmann estimate of `candidate / baseline` with its exact rank-based interval at `confidence`.
///
/// [`Design::Paired`] needs equal lengths (pair `i` is round `i`); all values must be finite and above zero.
pub fn ratio(
    baseline: &[f64],
    candidate: &[f64],
    design: Design,
    confidence: f64,
) -> Result<RatioEstimate, StatsError> {
    check_confidence(confidence)?;
    let ranked = Ranked::ratio(baseline, candidate, design)?;
    Ok(RatioEstimate {
        ratio: ranked.estimate,
        interval: ranked.interval(confidence),
        design,
        n_baseline: baseline.len(),
        n_candidate: candidate.len(),
    })
}

/// The Hodges-Lehmann estimate of the centre of paired differences `d_i = b_i - a_i` (an absolute shift, not a
/// ratio: values may be zero or negative) with its exact signed-rank interval at `confidence`: the median of the
/// Walsh averages and a pair of their order statistics, as [`ratio`] with [`Design::Paired`] does on the log
/// scale. At most [`MAX_SAMPLES`] differences.
pub fn shift(differences: &[f64], confidence: f64) -> Result<MedianEstimate, StatsError> {
    check_confidence(confidence)?;
    check_values(differences, Sample::Values, false)?;
    if differences.len() > MAX_SAMPLES {
        return Err(StatsError::TooMany { sample: Sample::Values, n: differences.len(), max: MAX_SAMPLES });
    }
    let d = differences;
    let walsh = d.iter().enumerate().flat_map(|(i, di)| d[i..].iter().map(move |dj| (di + dj) / 2.0));
    let items = sorted(&walsh.collect::<Vec<f64>>());
    let estimate = median_sorted(&items);
    let ranked = Ranked { items, estimate, null: Null::signed_rank(d.len()) };
    Ok(MedianEstimate { median: ranked.estimate, interval: ranked.interval(confidence), n: d.len() })
}

/// The sign test of `median == null_median`, consistent with [`median_ci`] (exact binomial).
pub fn sign_test(values: &[f64], null_median: f64, alternative: Alternative) -> Result<TestResult, StatsError> {
    check_values(values, Sample::Values, false)?;
    if !null_median.is_finite() {
        return Err(StatsError::Limit(null_median));
    }
    Ok(Ranked::median(values).test(null_median, alternative))
}

/// Wilcoxon's signed-rank test of `candidate / baseline == null_ratio` on paired log-differences, consistent
/// with [`ratio`] (exact for up to [`EXACT_MAX`] pairs).
pub fn signed_rank_test(
    baseline: &[f64],
    candidate: &[f64],
    null_ratio: f64,
    alternative: Alternative,
) -> Result<TestResult, StatsError> {
    check_ratio_limit(null_ratio)?;
    Ok(Ranked::ratio(baseline, candidate, Design::Paired)?.test(null_ratio, alternative))
}

/// The Mann-Whitney (Wilcoxon rank-sum) test of `candidate / baseline == null_ratio`, consistent with [`ratio`]
/// (exact for sets of up to [`EXACT_MAX`] values).
pub fn rank_sum_test(
    baseline: &[f64],
    candidate: &[f64],
    null_ratio: f64,
    alternative: Alternative,
) -> Result<TestResult, StatsError> {
    check_ratio_limit(null_ratio)?;
    Ok(Ranked::ratio(baseline, candidate, Design::Unpaired)?.test(null_ratio, alternative))
}

/// Holm's per-step levels for `m` checks at family-wise `alpha`: `[alpha/m, alpha/(m-1), ..., alpha]`; the
/// smallest p-value is compared with the first.
pub fn holm_alphas(alpha: f64, m: usize) -> Result<Vec<f64>, StatsError> {
    check_alpha(alpha)?;
    Ok((0..m).map(|j| alpha / (m - j) as f64).collect())
}

/// Holm's step-down procedure over `p_values` at family-wise `alpha`, one decision per p-value in input order.
pub fn holm(p_values: &[f64], alpha: f64) -> Result<Vec<HolmDecision>, StatsError> {
    check_alpha(alpha)?;
    if let Some((index, &value)) = p_values.iter().enumerate().find(|(_, p)| !(0.0..=1.0).contains(*p)) {
        return Err(StatsError::PValue { index, value });
    }
    Ok(holm_steps(p_values, alpha))
}

/// The smallest number of repetitions for which an interval at `confidence` exists: per set for the median
/// and the paired design (pairs), per set of a balanced unpaired design. In a family of `m` checks, ask for
/// `1 - (1 - confidence) / m` (Holm's first step).
pub fn min_repetitions(method: Method, confidence: f64) -> Result<usize, StatsError> {
    check_confidence(confidence)?;
    let side = (1.0 - confidence) / 2.0;
    // The widest interval's one-sided miss is 1 / 2^n (median, paired) or 1 / C(2n, n) (unpaired).
    let mut n = 1usize;
    loop {
        let tail = match method {
            Method::Median | Method::Paired => 0.5f64.powi(n as i32),
            Method::Unpaired => 1.0 / central_binomial(n),
        };
        if at_most(tail, side) || n >= 1100 {
            return Ok(n);
        }
        n += 1;
    }
}

/// The verdict of one check at `confidence` (two-sided: a false FAIL and a false PASS each have probability at
/// most `(1 - confidence) / 2`).
pub fn verdict(check: &Check<'_>, confidence: f64) -> Result<CheckVerdict, StatsError> {
    verdicts(std::slice::from_ref(check), confidence).pop().unwrap_or(Err(StatsError::Confidence(confidence)))
}

/// The verdicts of a family of checks (the SLOs of one run) at a joint `confidence`: over all checks together,
/// the probability of any false FAIL is at most `(1 - confidence) / 2`, and so is that of any false PASS.
///
/// Holm's procedure runs on the checks' `p_fail` (deciding FAILs) and separately on their `p_pass` (deciding
/// PASSes), each at `(1 - confidence) / 2`; every other check is INCONCLUSIVE. Each interval is shown at
/// confidence `1 - 2 a`, `a` the Holm level its verdict was decided at (or, for INCONCLUSIVE, the stricter level
/// where either procedure stopped), so it lies wholly on the verdict's side, or straddles the limit. A check
/// that cannot be computed is an error in its place and does not count in `m`. With one check this is
/// [`verdict`].
pub fn verdicts(checks: &[Check<'_>], confidence: f64) -> Vec<Result<CheckVerdict, StatsError>> {
    if let Err(e) = check_confidence(confidence) {
        return checks.iter().map(|_| Err(e.clone())).collect();
    }
    let prepared: Vec<Result<Prepared, StatsError>> = checks.iter().map(Prepared::new).collect();
    let ok = || prepared.iter().filter_map(|p| p.as_ref().ok());
    let family_size = ok().count();
    let side = (1.0 - confidence) / 2.0;
    let fails = holm_steps(&ok().map(|p| p.p_fail).collect::<Vec<_>>(), side);
    let passes = holm_steps(&ok().map(|p| p.p_pass).collect::<Vec<_>>(), side);
    let stop = |ds: &[HolmDecision]| ds.iter().filter(|d| !d.rejected).map(|d| d.alpha).fold(side, f64::min);
    let stop = stop(&fails).min(stop(&passes));
    let mut decided = fails.iter().zip(&passes);
    prepared
        .into_iter()
        .map(|p| {
            let p = p?;
            let (fail, pass) = decided.next().ok_or(StatsError::Confidence(confidence))?;
            Ok(p.decide(fail, pass, stop, family_size))
        })
        .collect()
}

/// A check's sorted items and its two one-sided p-values, before Holm.
struct Prepared {
    ranked: Ranked,
    method: Method,
    goal: Goal,
    limit: f64,
    sample: SampleSummary,
    baseline: Option<SampleSummary>,
    p_fail: f64,
    p_pass: f64,
}

impl Prepared {
    fn new(check: &Check<'_>) -> Result<Prepared, StatsError> {
        let (ranked, method, goal, limit, sample, baseline) = match *check {
            Check::Absolute { values, goal, limit } => {
                check_values(values, Sample::Values, false)?;
                if !limit.is_finite() {
                    return Err(StatsError::Limit(limit));
                }
                (Ranked::median(values), Method::Median, goal, limit, summarize(values), None)
            }
            Check::Relative { baseline, candidate, design, goal, limit } => {
                check_ratio_limit(limit)?;
                let ranked = Ranked::ratio(baseline, candidate, design)?;
                let method = match design {
                    Design::Paired => Method::Paired,
                    Design::Unpaired => Method::Unpaired,
                };
                (ranked, method, goal, limit, summarize(candidate), Some(summarize(baseline)))
            }
        };
        let (good, bad) = ranked.good_bad(goal, limit);
        // FAIL at level a <=> interval's far bound is bad <=> at most k-1 items good <=> cdf(good) <= a.
        let p_fail = ranked.null.cdf(good);
        let p_pass = ranked.null.cdf(bad);
        Ok(Prepared { ranked, method, goal, limit, sample, baseline, p_fail, p_pass })
    }

    fn decide(self, fail: &HolmDecision, pass: &HolmDecision, stop: f64, family_size: usize) -> CheckVerdict {
        let (verdict, level) = if fail.rejected {
            (Verdict3::Fail, fail.alpha)
        } else if pass.rejected {
            (Verdict3::Pass, pass.alpha)
        } else {
            let lean = self.ranked.interval(LEAN_CONFIDENCE);
            let leaning = if !lean.reached {
                None
            } else if self.wholly(&lean, true) {
                Some(Lean::Pass)
            } else if self.wholly(&lean, false) {
                Some(Lean::Fail)
            } else {
                None
            };
            (Verdict3::Inconclusive { leaning }, stop)
        };
        let interval = self.ranked.interval_at(level, 1.0 - 2.0 * level);
        let estimate = self.ranked.estimate;
        let min_detectable_change = if !interval.reached {
            None
        } else if self.method == Method::Median {
            (estimate != 0.0).then(|| (interval.hi - interval.lo) / (2.0 * estimate.abs()))
        } else {
            Some((interval.hi / interval.lo).sqrt() - 1.0)
        };
        CheckVerdict {
            verdict,
            method: self.method,
            estimate,
            interval,
            goal: self.goal,
            limit: self.limit,
            sample: self.sample,
            baseline: self.baseline,
            min_detectable_change,
            p_fail: self.p_fail,
            p_pass: self.p_pass,
            family_size,
        }
    }

    /// Whether both bounds of `interval` meet (`good`) or miss the limit.
    fn wholly(&self, interval: &Interval, good: bool) -> bool {
        self.goal.holds(interval.lo, self.limit) == good && self.goal.holds(interval.hi, self.limit) == good
    }
}

/// Sorted items whose order statistics bound the estimate, with the null distribution of the number of items
/// on one side of the true value.
struct Ranked {
    /// Ascending, on the reported scale (values, or ratios `B / A`).
    items: Vec<f64>,
    estimate: f64,
    null: Null,
}

impl Ranked {
    /// Order statistics of one set, Bin(n, 1/2).
    fn median(values: &[f64]) -> Ranked {
        let items = sorted(values);
        let estimate = median_sorted(&items);
        let null = Null::binomial(items.len());
        Ranked { items, estimate, null }
    }

    /// Walsh averages of log-differences (paired) or pairwise log-differences (unpaired), as ratios.
    fn ratio(baseline: &[f64], candidate: &[f64], design: Design) -> Result<Ranked, StatsError> {
        check_values(baseline, Sample::Baseline, true)?;
        check_values(candidate, Sample::Candidate, true)?;
        for (sample, n) in [(Sample::Baseline, baseline.len()), (Sample::Candidate, candidate.len())] {
            if n > MAX_SAMPLES {
                return Err(StatsError::TooMany { sample, n, max: MAX_SAMPLES });
            }
        }
        let (logs, null) = match design {
            Design::Paired => {
                if baseline.len() != candidate.len() {
                    return Err(StatsError::LengthMismatch { baseline: baseline.len(), candidate: candidate.len() });
                }
                let d: Vec<f64> = baseline.iter().zip(candidate).map(|(a, b)| b.ln() - a.ln()).collect();
                let walsh = d.iter().enumerate().flat_map(|(i, di)| d[i..].iter().map(move |dj| (di + dj) / 2.0));
                (walsh.collect::<Vec<f64>>(), Null::signed_rank(d.len()))
            }
            Design::Unpaired => {
                let la: Vec<f64> = baseline.iter().map(|a| a.ln()).collect();
                let diffs = candidate.iter().flat_map(|b| la.iter().map(move |la| b.ln() - la));
                (diffs.collect(), Null::rank_sum(baseline.len(), candidate.len()))
            }
        };
        let logs = sorted(&logs);
        let estimate = median_sorted(&logs).exp();
        Ok(Ranked { items: logs.into_iter().map(f64::exp).collect(), estimate, null })
    }

    /// The two-sided interval at `confidence`.
    fn interval(&self, confidence: f64) -> Interval {
        self.interval_at((1.0 - confidence) / 2.0, confidence)
    }

    /// The interval between order statistics `k` and `count + 1 - k`, `k` the largest that leaves at most `a`
    /// outside on each side (coverage at least `1 - 2a`), or 1 when none does.
    fn interval_at(&self, a: f64, requested: f64) -> Interval {
        let count = self.items.len();
        let found = self.null.k_for(a);
        let k = found.unwrap_or(1);
        let achieved = (1.0 - 2.0 * self.null.cdf(k - 1)).max(0.0);
        let at = |rank: usize| self.items.get(rank.saturating_sub(1)).copied().unwrap_or(f64::NAN);
        Interval {
            lo: at(k),
            hi: at(count + 1 - k),
            confidence: achieved,
            requested,
            reached: found.is_some(),
            ranks: (k, count + 1 - k),
            count,
            exact: self.null.is_exact(),
        }
    }

    /// The counts of items that meet and miss `goal`.
    fn good_bad(&self, goal: Goal, limit: f64) -> (usize, usize) {
        let n = self.items.len();
        let below = match goal {
            Goal::Below | Goal::AtLeast => self.items.partition_point(|&x| x < limit),
            Goal::AtMost | Goal::Above => self.items.partition_point(|&x| x <= limit),
        };
        match goal {
            Goal::Below | Goal::AtMost => (below, n - below),
            Goal::Above | Goal::AtLeast => (n - below, below),
        }
    }

    fn test(&self, null_value: f64, alternative: Alternative) -> TestResult {
        let n = self.items.len();
        let at_most = self.items.partition_point(|&x| x <= null_value);
        let below = self.items.partition_point(|&x| x < null_value);
        let greater = self.null.cdf(at_most);
        let less = self.null.cdf(n - below);
        let p_value = match alternative {
            Alternative::Greater => greater,
            Alternative::Less => less,
            Alternative::TwoSided => (2.0 * greater.min(less)).min(1.0),
        };
        let statistic = (n - at_most) as f64 + (at_most - below) as f64 / 2.0;
        TestResult { statistic, p_value, exact: self.null.is_exact() }
    }
}

/// A null distribution symmetric on `0..=max`: the number of items (order statistics, Walsh averages, pairwise
/// differences) below the true value.
#[derive(Debug, Clone)]
enum Null {
    /// `cdf[c] = P(X <= c)`.
    Exact(Vec<f64>),
    /// Normal with mean `max / 2` and standard deviation `sd`, continuity-corrected.
    Normal { max: usize, sd: f64 },
}

impl Null {
    /// Bin(n, 1/2): exact in integers up to n = 120, in logarithms above.
    fn binomial(n: usize) -> Null {
        let mut cdf = Vec::with_capacity(n + 1);
        if n <= 120 {
            let total = 2f64.powi(n as i32);
            let (mut c, mut cum) = (1u128, 0u128);
            for k in 0..=n {
                cum += c;
                cdf.push(cum as f64 / total);
                c = c * (n - k) as u128 / (k + 1) as u128;
            }
        } else {
            let mut ln_pmf = -(n as f64) * std::f64::consts::LN_2;
            let mut cum = 0.0;
            for k in 0..=n {
                cum += ln_pmf.exp();
                cdf.push(cum.min(1.0));
                ln_pmf += ((n - k) as f64).ln() - ((k + 1) as f64).ln();
            }
        }
        Null::Exact(cdf)
    }

    /// Wilcoxon's signed-rank statistic for `n` pairs.
    fn signed_rank(n: usize) -> Null {
        match signed_rank_counts(n) {
            Some(counts) => {
                let total = 2f64.powi(n as i32);
                let mut cum = 0u64;
                Null::Exact(
                    counts
                        .iter()
                        .map(|c| {
                            cum += c;
                            cum as f64 / total
                        })
                        .collect(),
                )
            }
            None => {
                let nf = n as f64;
                Null::Normal { max: signed_rank_max(n), sd: (nf * (nf + 1.0) * (2.0 * nf + 1.0) / 24.0).sqrt() }
            }
        }
    }

    /// Mann-Whitney's U for sets of `m` and `n` values.
    fn rank_sum(m: usize, n: usize) -> Null {
        match rank_sum_counts(m, n) {
            Some(counts) => {
                let total: u128 = counts.iter().sum();
                let mut cum = 0u128;
                Null::Exact(
                    counts
                        .iter()
                        .map(|c| {
                            cum += c;
                            cum as f64 / total as f64
                        })
                        .collect(),
                )
            }
            None => {
                let (mf, nf) = (m as f64, n as f64);
                Null::Normal { max: m * n, sd: (mf * nf * (mf + nf + 1.0) / 12.0).sqrt() }
            }
        }
    }

    fn max(&self) -> usize {
        match self {
            Null::Exact(cdf) => cdf.len().saturating_sub(1),
            Null::Normal { max, .. } => *max,
        }
    }

    fn is_exact(&self) -> bool {
        matches!(self, Null::Exact(_))
    }

    /// `P(X <= c)`.
    fn cdf(&self, c: usize) -> f64 {
        match self {
            Null::Exact(cdf) => cdf.get(c).copied().unwrap_or(1.0),
            Null::Normal { max, sd } => {
                if c >= *max {
                    1.0
                } else {
                    normal_cdf((c as f64 + 0.5 - *max as f64 / 2.0) / sd)
                }
            }
        }
    }

    /// The largest `k` in `1..=(count + 1) / 2` with `P(X <= k - 1) <= a`: the interval between order statistics
    /// `k` and `count + 1 - k` covers with `1 - 2 P(X <= k - 1) >= 1 - 2a`. `None` when even `k = 1` misses.
    fn k_for(&self, a: f64) -> Option<usize> {
        if !at_most(self.cdf(0), a) {
            return None;
        }
        // Items number `max` (there are `max + 1` outcomes); cdf is non-decreasing in k.
        let (mut good, mut bad) = (1usize, self.max().div_ceil(2) + 1);
        if bad <= good {
            return Some(good);
        }
        while bad - good > 1 {
            let mid = good + (bad - good) / 2;
            if at_most(self.cdf(mid - 1), a) {
                good = mid;
            } else {
                bad = mid;
            }
        }
        Some(good)
    }
}

/// The number of subsets of `{1, ..., n}` with each sum `0..=n(n+1)/2`: `2^n` times the exact null distribution
/// of Wilcoxon's signed-rank statistic. `None` above [`EXACT_MAX`].
pub fn signed_rank_counts(n: usize) -> Option<Vec<u64>> {
    if n > EXACT_MAX {
        return None;
    }
    let max = signed_rank_max(n);
    let mut counts = vec![0u64; max + 1];
    counts[0] = 1;
    for rank in 1..=n {
        // Add `rank` to every subset of {1..rank-1}: iterate down so each subset takes it at most once.
        for t in (rank..=signed_rank_max(rank)).rev() {
            counts[t] += counts[t - rank];
        }
    }
    Some(counts)
}

/// The number of ways `m` baseline and `n` candidate values can order so that `U` (pairs with the candidate
/// above) is each of `0..=m n`: `C(m + n, m)` times the exact null distribution of Mann-Whitney's U (the
/// coefficients of the Gaussian binomial coefficient). `None` when `m` or `n` exceeds [`EXACT_MAX`].
pub fn rank_sum_counts(m: usize, n: usize) -> Option<Vec<u128>> {
    if m > EXACT_MAX || n > EXACT_MAX {
        return None;
    }
    // prod_{i=1..m} (1 - q^(n+i)) / (1 - q^i); every partial product is a polynomial with integer coefficients
    // below C(m+n, m) <= C(100, 50) < 2^97.
    let mut poly = vec![0i128; m * n + m + 2];
    poly[0] = 1;
    for i in 1..=m {
        let top = (i - 1) * n + n + i;
        for t in (n + i..=top).rev() {
            poly[t] -= poly[t - (n + i)];
        }
        for t in i..=top {
            poly[t] += poly[t - i];
        }
    }
    Some(poly[..=m * n].iter().map(|&c| c.max(0) as u128).collect())
}

fn signed_rank_max(n: usize) -> usize {
    n * (n + 1) / 2
}

/// C(2n, n) as a float (infinite beyond ~n = 510, which is only compared with).
fn central_binomial(n: usize) -> f64 {
    (1..=n).fold(1.0, |c, k| c * (n + k) as f64 / k as f64)
}

/// Holm over valid p-values and `0 < alpha < 1`.
fn holm_steps(p_values: &[f64], alpha: f64) -> Vec<HolmDecision> {
    let m = p_values.len();
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&i, &j| p_values[i].total_cmp(&p_values[j]).then(i.cmp(&j)));
    let mut out = vec![HolmDecision { p_value: 0.0, step: 0, alpha, adjusted_p: 0.0, rejected: false }; m];
    let (mut adjusted, mut rejecting) = (0.0f64, true);
    for (j, &i) in order.iter().enumerate() {
        let p = p_values[i];
        let left = (m - j) as f64;
        let level = alpha / left;
        adjusted = adjusted.max((left * p).min(1.0));
        rejecting = rejecting && at_most(p, level);
        out[i] = HolmDecision { p_value: p, step: j + 1, alpha: level, adjusted_p: adjusted, rejected: rejecting };
    }
    out
}

/// `p <= a`, with a relative tolerance for rounded coverage sums.
fn at_most(p: f64, a: f64) -> bool {
    p <= a * (1.0 + FUZZ)
}

/// The standard normal distribution function: Marsaglia's series (|x| <= 3) or Laplace's continued fraction for
/// the tail, both to about 1e-15.
pub(crate) fn normal_cdf(x: f64) -> f64 {
    const FRAC_1_SQRT_2PI: f64 = 0.398_942_280_401_432_7;
    if x.is_nan() {
        return f64::NAN;
    }
    let density = |t: f64| FRAC_1_SQRT_2PI * (-0.5 * t * t).exp();
    if x.abs() <= 3.0 {
        let q = x * x;
        let (mut sum, mut term, mut i) = (x, x, 1.0);
        for _ in 0..200 {
            i += 2.0;
            term *= q / i;
            let next = sum + term;
            if next == sum {
                break;
            }
            sum = next;
        }
        0.5 + sum * density(x)
    } else {
        let t = x.abs();
        let mut f = t;
        for k in (1..=300).rev() {
            f = t + k as f64 / f;
        }
        let tail = density(t) / f;
        if x < 0.0 {
            tail
        } else {
            1.0 - tail
        }
    }
}

fn sorted(values: &[f64]) -> Vec<f64> {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    v
}

/// The median of sorted, non-empty values.
fn median_sorted(v: &[f64]) -> f64 {
    let n = v.len();
    match (v.get((n.max(1) - 1) / 2), v.get(n / 2)) {
        (Some(&a), Some(&b)) if n % 2 == 0 => a / 2.0 + b / 2.0,
        (Some(&a), _) => a,
        _ => f64::NAN,
    }
}

fn summarize(values: &[f64]) -> SampleSummary {
    let v = sorted(values);
    let n = v.len();
    let mean = v.iter().sum::<f64>() / n as f64;
    let cv = (n >= 2 && mean > 0.0).then(|| {
        let var = v.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / (n - 1) as f64;
        var.sqrt() / mean
    });
    SampleSummary {
        n,
        median: median_sorted(&v),
        min: v.first().copied().unwrap_or(f64::NAN),
        max: v.last().copied().unwrap_or(f64::NAN),
        mean,
        cv,
    }
}

fn check_values(values: &[f64], sample: Sample, positive: bool) -> Result<(), StatsError> {
    if values.is_empty() {
        return Err(StatsError::Empty(sample));
    }
    for (index, &value) in values.iter().enumerate() {
        if !value.is_finite() {
            return Err(StatsError::NotFinite { sample, index, value });
        }
        if positive && value <= 0.0 {
            return Err(StatsError::NotPositive { sample, index, value });
        }
    }
    Ok(())
}

fn check_confidence(confidence: f64) -> Result<(), StatsError> {
    if confidence > 0.0 && confidence < 1.0 {
        Ok(())
    } else {
        Err(StatsError::Confidence(confidence))
    }
}

fn check_alpha(alpha: f64) -> Result<(), StatsError> {
    if alpha > 0.0 && alpha < 1.0 {
        Ok(())
    } else {
        Err(StatsError::Alpha(alpha))
    }
}

fn check_ratio_limit(limit: f64) -> Result<(), StatsError> {
    if limit.is_finite() && limit > 0.0 {
        Ok(())
    } else {
        Err(StatsError::Limit(limit))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// scipy.stats.norm.cdf(x) (scipy 1.17.1) for x in [-8, -3.5, -3, -1.96, -0.5, 0, 1, 3, 3.01, 6].
    #[test]
    fn normal_cdf_matches_scipy() {
        let cases = [
            (-8.0, 6.22096057427174e-16),
            (-3.5, 0.00023262907903552502),
            (-3.0, 0.0013498980316300933),
            (-1.96, 0.024997895148220435),
            (-0.5, 0.3085375387259869),
            (0.0, 0.5),
            (1.0, 0.8413447460685429),
            (3.0, 0.9986501019683699),
            (3.01, 0.9986937615512306),
            (6.0, 0.9999999990134123),
        ];
        for (x, want) in cases {
            let got = normal_cdf(x);
            assert!((got - want).abs() <= 1e-15 + 1e-12 * want, "Phi({x}) = {got}, scipy {want}");
        }
    }

    #[test]
    fn normal_approximation_is_close_to_exact_at_the_switch() {
        let exact = Null::signed_rank(EXACT_MAX);
        let n = EXACT_MAX as f64;
        let normal =
            Null::Normal { max: signed_rank_max(EXACT_MAX), sd: (n * (n + 1.0) * (2.0 * n + 1.0) / 24.0).sqrt() };
        for c in (0..=exact.max()).step_by(7) {
            assert!((exact.cdf(c) - normal.cdf(c)).abs() < 2e-3, "c = {c}");
        }
        let exact = Null::rank_sum(EXACT_MAX, EXACT_MAX);
        let normal = Null::Normal { max: EXACT_MAX * EXACT_MAX, sd: (n * n * (2.0 * n + 1.0) / 12.0).sqrt() };
        for c in (0..=exact.max()).step_by(11) {
            assert!((exact.cdf(c) - normal.cdf(c)).abs() < 2e-3, "c = {c}");
        }
    }

    #[test]
    fn k_for_is_the_largest_reaching_rank() {
        for null in [Null::binomial(9), Null::signed_rank(12), Null::rank_sum(7, 9), Null::binomial(300)] {
            for a in [0.001, 0.005, 0.025, 0.05, 0.25, 0.49] {
                if let Some(k) = null.k_for(a) {
                    assert!(null.cdf(k - 1) <= a * (1.0 + FUZZ));
                    assert!(2 * k <= null.max() + 1);
                    assert!(2 * (k + 1) > null.max() + 1 || null.cdf(k) > a * (1.0 + FUZZ));
                } else {
                    assert!(null.cdf(0) > a);
                }
            }
        }
    }
}
