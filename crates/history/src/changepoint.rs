//! Change points in a series of runs: E-divisive means with a two-sided Student t-test, as Apache Otava
//! (formerly DataStax Hunter; Fleming et al., "Hunter: Using Change Point Detection to Hunt for Performance
//! Regressions", ICPE 2023) does it. Pure and deterministic: no IO, no randomness, no permutations.
//!
//! [`detect`] runs two passes (`docs/change-points.md` has the details, the defaults' measured detection and
//! false-positive rates, and how the results compare with Otava's and MongoDB's):
//!
//! 1. **Split.** E-divisive (Matteson and James, 2014) in sliding windows of [`Options::window`] points, one
//!    window every `window / 2` points (or from the window's last change point). Within a window the point that
//!    maximises the energy divergence Q̂(τ, κ) (α = 1) of the interval it lies in is a candidate; it is kept when
//!    a two-sided Student t-test between the parts of its interval before and after it gives a p-value at most
//!    the relaxed level [`Options::first_pass_pvalue`], and the window is split again, until a candidate fails.
//!    The union of every window's points are the "weak" change points.
//! 2. **Merge.** Each weak point is tested against its neighbouring segments (from the previous weak point to
//!    the next). The weakest (the highest p-value; when every p-value is below [`Options::max_pvalue`], the
//!    smallest magnitude) is dropped and its two neighbours are tested again against their new segments, until
//!    every point left has p < `max_pvalue` and magnitude ≥ [`Options::min_magnitude`]. A point next to a segment
//!    shorter than [`Options::min_segment`] is dropped before anything else.
//!
//! Cost: the split pass computes, per window of w points, a prefix table of its pairwise distances (w² values,
//! at most [`MAX_WINDOW`]² = 8 MB) and Q̂ over each new interval in O(len²); a window that keeps splitting costs
//! at most O(w³ / min_segment), so the pass is O(n · w² / min_segment) for n points (windows overlap by half).
//! The merge pass is O(k² + k · n) for k weak points (k ≤ n / min_segment). 10,000 points take well under a
//! second at the defaults.

use serde::{Deserialize, Serialize};

/// The largest [`Options::window`] accepted: a window's distance table is `window`² numbers.
pub const MAX_WINDOW: usize = 1000;

/// How [`detect`] looks for change points.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Options {
    /// Points per window of the split pass (Otava's `window_len`); windows start every `window / 2` points.
    /// Between `2 * min_segment` and [`MAX_WINDOW`]. Default 50.
    pub window: usize,
    /// A change point is reported only when its t-test's p-value is below this. In (0, 1]. Default 0.001
    /// (Otava's): 2-4% of noise series of 30-100 runs get a false change point; `docs/change-points.md` has
    /// the measured detection and false-positive rates of other levels.
    pub max_pvalue: f64,
    /// A change point is reported only when its magnitude, `|mean_after / mean_before - 1|`, is at least this.
    /// Finite and ≥ 0. Default 0.0 (any size).
    pub min_magnitude: f64,
    /// The fewest points a segment between two change points (or an end of the series) may have; a lone spike
    /// never becomes a change point when it is 2 or more. At least 1 (1 is Otava's behaviour). Default 3.
    pub min_segment: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options { window: 50, max_pvalue: 0.001, min_magnitude: 0.0, min_segment: 3 }
    }
}

impl Options {
    /// The split pass's relaxed significance level, as Otava's: 10 × `max_pvalue` below 0.05, 2 × below 0.5,
    /// else `max_pvalue` itself.
    pub fn first_pass_pvalue(&self) -> f64 {
        if self.max_pvalue < 0.05 {
            self.max_pvalue * 10.0
        } else if self.max_pvalue < 0.5 {
            self.max_pvalue * 2.0
        } else {
            self.max_pvalue
        }
    }

    /// Checks the options; [`detect`] calls it first.
    pub fn validate(&self) -> Result<(), ChangePointError> {
        let bad = |what: String| Err(ChangePointError::BadOptions(what));
        if !(self.max_pvalue > 0.0 && self.max_pvalue <= 1.0) {
            return bad(format!("max_pvalue must be in (0, 1], not {}", self.max_pvalue));
        }
        if !(self.min_magnitude.is_finite() && self.min_magnitude >= 0.0) {
            return bad(format!("min_magnitude must be a finite number ≥ 0, not {}", self.min_magnitude));
        }
        if self.min_segment == 0 {
            return bad("min_segment must be at least 1".to_string());
        }
        let shortest = self.min_segment.saturating_mul(2).max(2);
        if self.window < shortest || self.window > MAX_WINDOW {
            return bad(format!(
                "window must be between {shortest} (twice min_segment {}) and {MAX_WINDOW}, not {}",
                self.min_segment, self.window
            ));
        }
        Ok(())
    }
}

/// A change point: where a series' distribution changed, with the segments on either side of it (from the
/// previous change point, or the start, to the next one, or the end).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChangePoint {
    /// Index of the first point of the new segment.
    pub index: usize,
    /// Mean of the segment before.
    pub mean_before: f64,
    /// Mean of the segment after.
    pub mean_after: f64,
    /// Standard deviation of the segment before (population form, divided by n, as Otava's `np.std`).
    pub stddev_before: f64,
    /// Standard deviation of the segment after (population form).
    pub stddev_after: f64,
    /// `mean_after / mean_before - 1` (signed); 0.0 when `mean_before` is 0 (as Otava), where a change is
    /// still reported (it counts as larger than any `min_magnitude`): read `mean_before` and `mean_after`.
    /// ±`f64::MAX` when the ratio overflows (a mean near 1e308 after one near 1e-308).
    pub relative_change: f64,
    /// Two-sided Student t-test p-value between the two segments.
    pub p_value: f64,
}

/// Why [`detect`] refused a series.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ChangePointError {
    /// A value of the series is NaN or infinite.
    #[error("value {index} of the series is not a finite number")]
    NotFinite {
        /// Index of the first such value.
        index: usize,
    },
    /// The [`Options`] are out of range.
    #[error("bad change-point options: {0}")]
    BadOptions(String),
}

/// The change points of `series`, sorted by index. An empty, short (fewer than `2 * min_segment` points) or
/// constant series has none; a NaN or infinite value is an error.
pub fn detect(series: &[f64], options: &Options) -> Result<Vec<ChangePoint>, ChangePointError> {
    options.validate()?;
    if let Some(index) = series.iter().position(|v| !v.is_finite()) {
        return Err(ChangePointError::NotFinite { index });
    }
    let Some(scaled) = Scaled::new(series) else { return Ok(Vec::new()) };
    if series.len() < 2 * options.min_segment {
        return Ok(Vec::new());
    }
    let weak = split(&scaled.z, options);
    let kept = merge(&scaled, weak, options);
    Ok(kept.into_iter().map(|(index, t)| scaled.change_point(index, &t)).collect())
}

/// The series moved and scaled into [-0.5, 0.5] (`z = (x - center) / scale`): the divergence's argmax and the
/// t-test are invariant to it, and no sum of distances can overflow, however large the values.
struct Scaled {
    z: Vec<f64>,
    center: f64,
    scale: f64,
    lo: f64,
    hi: f64,
}

impl Scaled {
    /// `None` for an empty or constant series (no change point there).
    fn new(series: &[f64]) -> Option<Scaled> {
        let lo = series.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = series.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        if series.is_empty() || lo >= hi {
            return None;
        }
        let center = lo / 2.0 + hi / 2.0;
        let range = hi - lo;
        let scale = if range.is_finite() { range } else { hi / 2.0 - lo / 2.0 };
        let z = series.iter().map(|&x| (x - center) / scale).collect();
        Some(Scaled { z, center, scale, lo, hi })
    }

    /// A scaled mean in the original units (within the series' range: rounding near ±1.8e308 cannot overflow).
    fn mean(&self, z: f64) -> f64 {
        (self.center + self.scale * z).clamp(self.lo, self.hi)
    }

    /// A scaled standard deviation in the original units.
    fn sd(&self, z: f64) -> f64 {
        (self.scale * z).min(f64::MAX)
    }

    fn change_point(&self, index: usize, t: &TTest) -> ChangePoint {
        let mean_before = self.mean(t.mean_left);
        let mean_after = self.mean(t.mean_right);
        ChangePoint {
            index,
            mean_before,
            mean_after,
            stddev_before: self.sd(t.sd_left),
            stddev_after: self.sd(t.sd_right),
            relative_change: relative_change(mean_before, mean_after),
            p_value: t.p,
        }
    }

    /// `|mean_after / mean_before - 1|` of a test in the original units, infinite for a change away from a
    /// zero mean.
    fn magnitude(&self, t: &TTest) -> f64 {
        magnitude(self.mean(t.mean_left), self.mean(t.mean_right))
    }
}

/// `after / before - 1`; 0.0 when `before` is 0 (as Otava), ±`f64::MAX` when the ratio overflows.
fn relative_change(before: f64, after: f64) -> f64 {
    if before == 0.0 {
        0.0
    } else {
        (after / before - 1.0).clamp(-f64::MAX, f64::MAX)
    }
}

fn magnitude(before: f64, after: f64) -> f64 {
    if before == 0.0 {
        if after == 0.0 {
            0.0
        } else {
            f64::INFINITY
        }
    } else {
        (after / before - 1.0).abs()
    }
}

/// A two-sided Student t-test between two segments of the scaled series (means and population standard
/// deviations in its units).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
struct TTest {
    mean_left: f64,
    mean_right: f64,
    sd_left: f64,
    sd_right: f64,
    p: f64,
}

/// Means closer than this (in units of the series' range) are equal: a segment's mean carries rounding of
/// about 1e-16 of the range, which must not become a change between two constant segments.
const SAME_MEAN: f64 = 1e-12;

fn mean_sd(values: &[f64]) -> (f64, f64) {
    if values.is_empty() {
        return (0.0, 0.0);
    }
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    let var = values.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / n;
    (mean, var.sqrt())
}

/// The t-test Otava makes (`scipy.stats.ttest_ind_from_stats` with its default `equal_var=True`: Student's
/// pooled-variance test, not Welch's), fed, as Otava feeds it, with `np.std`'s population standard deviations.
/// Zero pooled variance gives p = 0 when the means differ and p = 1 when they do not, never NaN.
fn t_test(left: &[f64], right: &[f64]) -> TTest {
    let (mean_left, sd_left) = mean_sd(left);
    let (mean_right, sd_right) = mean_sd(right);
    let (n1, n2) = (left.len() as f64, right.len() as f64);
    let p = if left.is_empty() || right.is_empty() || left.len() + right.len() <= 2 {
        1.0
    } else {
        let df = n1 + n2 - 2.0;
        let pooled = ((n1 - 1.0) * sd_left * sd_left + (n2 - 1.0) * sd_right * sd_right) / df;
        let denominator = (pooled * (1.0 / n1 + 1.0 / n2)).sqrt();
        let difference = mean_left - mean_right;
        if difference.abs() <= SAME_MEAN {
            1.0
        } else if denominator.is_nan() || denominator <= 0.0 {
            0.0
        } else {
            student_t_two_sided_p(difference / denominator, df)
        }
    };
    TTest { mean_left, mean_right, sd_left, sd_right, p }
}

/// The split pass: every window's significant points at the relaxed level, sorted, each once.
fn split(z: &[f64], options: &Options) -> Vec<usize> {
    let n = z.len();
    let step = (options.window / 2).max(1);
    let level = options.first_pass_pvalue();
    let mut weak = std::collections::BTreeSet::new();
    let mut start = 0;
    while start < n {
        let end = (start + options.window).min(n);
        let found = split_window(&z[start..end], options.min_segment, level);
        let last = found.last().map_or(0, |&i| i + start);
        weak.extend(found.into_iter().map(|i| i + start));
        start = last.max(start + step);
    }
    weak.into_iter().collect()
}

/// E-divisive within one window (indices relative to it): split at the best candidate while its t-test
/// passes `level`.
fn split_window(w: &[f64], min_segment: usize, level: f64) -> Vec<usize> {
    if w.len() < 2 * min_segment.max(1) {
        return Vec::new();
    }
    let table = Distances::new(w);
    let mut points: Vec<usize> = Vec::new();
    let mut cache: std::collections::BTreeMap<(usize, usize), Option<(usize, f64)>> = Default::default();
    loop {
        let mut best: Option<(usize, f64, usize, usize)> = None;
        let mut s = 0;
        for e in points.iter().copied().chain([w.len()]) {
            let candidate = *cache.entry((s, e)).or_insert_with(|| table.best_split(s, e, min_segment));
            if let Some((tau, q)) = candidate {
                if best.is_none_or(|(_, b, _, _)| q > b) {
                    best = Some((tau, q, s, e));
                }
            }
            s = e;
        }
        let Some((tau, _, s, e)) = best else { break };
        if t_test(&w[s..tau], &w[tau..e]).p <= level {
            let at = points.partition_point(|&p| p < tau);
            points.insert(at, tau);
        } else {
            break;
        }
    }
    points
}

/// Prefix sums of a window's pairwise distances: `row(y)[a]` is the sum of `|w[i] - w[y]|` for `i < a`.
struct Distances {
    len: usize,
    prefix: Vec<f64>,
}

impl Distances {
    fn new(w: &[f64]) -> Distances {
        let len = w.len();
        let mut prefix = vec![0.0; len * (len + 1)];
        for (y, row) in prefix.chunks_exact_mut(len + 1).enumerate() {
            let mut sum = 0.0;
            for (i, &x) in w.iter().enumerate() {
                sum += (x - w[y]).abs();
                row[i + 1] = sum;
            }
        }
        Distances { len, prefix }
    }

    /// Sum of `|w[i] - w[y]|` for `i` in `a..b`.
    fn sum(&self, y: usize, a: usize, b: usize) -> f64 {
        let row = &self.prefix[y * (self.len + 1)..(y + 1) * (self.len + 1)];
        row[b] - row[a]
    }

    /// The τ in `s..e` that maximises Q̂(τ, κ) over κ in `τ + 1..=e` with at least `min_segment` points on
    /// either side of τ within `s..e`, and that maximum; the first (smallest τ, then κ) on ties, as numpy's
    /// argmax in Otava. Q̂ is Matteson and James' scaled energy divergence (α = 1) between `s..τ` (n points)
    /// and `τ..κ` (m points):
    /// `2/(n+m) Σ|x-y| - 2m/((n+m)(n-1)) Σ_{i<k}|x_i-x_k| - 2n/((n+m)(m-1)) Σ_{j<l}|y_j-y_l|`.
    fn best_split(&self, s: usize, e: usize, min_segment: usize) -> Option<(usize, f64)> {
        let mut best: Option<(usize, f64)> = None;
        // Σ over pairs within s..τ, grown as τ moves right.
        let mut within_left = 0.0;
        for tau in s + 1..e {
            within_left += self.sum(tau - 1, s, tau - 1);
            if tau - s < min_segment || e - tau < min_segment {
                continue;
            }
            let n = (tau - s) as f64;
            let mut between = 0.0;
            let mut within_right = 0.0;
            for kappa in tau + 1..=e {
                let y = kappa - 1;
                between += self.sum(y, s, tau);
                within_right += self.sum(y, tau, y);
                let m = (kappa - tau) as f64;
                let mut q = 2.0 / (n + m) * between;
                if n > 1.0 {
                    q -= 2.0 * m / ((n + m) * (n - 1.0)) * within_left;
                }
                if m > 1.0 {
                    q -= 2.0 * n / ((n + m) * (m - 1.0)) * within_right;
                }
                if best.is_none_or(|(_, b)| q > b) {
                    best = Some((tau, q));
                }
            }
        }
        best
    }
}

/// A weak point in the merge pass: its test against its neighbouring segments and that test's magnitude.
struct Point {
    index: usize,
    test: TTest,
    size: f64,
}

/// The merge pass over the weak points: their tests against their neighbouring segments, the weakest dropped
/// (and its two neighbours tested again) until every point left passes.
fn merge(scaled: &Scaled, weak: Vec<usize>, options: &Options) -> Vec<(usize, TTest)> {
    let z = &scaled.z;
    let n = z.len();
    let bounds = |points: &[Point], k: usize| {
        let from = if k == 0 { 0 } else { points[k - 1].index };
        let to = points.get(k + 1).map_or(n, |p| p.index);
        (from, to)
    };
    let retest = |points: &mut [Point], k: usize| {
        let (from, to) = bounds(points, k);
        let at = points[k].index;
        let test = t_test(&z[from..at], &z[at..to]);
        points[k].size = scaled.magnitude(&test);
        points[k].test = test;
    };
    let mut points: Vec<Point> =
        weak.into_iter().map(|index| Point { index, test: TTest::default(), size: 0.0 }).collect();
    for k in 0..points.len() {
        retest(&mut points, k);
    }
    while !points.is_empty() {
        let short = |k: usize| {
            let (from, to) = bounds(&points, k);
            points[k].index - from < options.min_segment || to - points[k].index < options.min_segment
        };
        // Weaker: the higher p-value, then the smaller magnitude; the first of equals (as Python's max/min).
        let weaker = |a: &Point, b: &Point| a.test.p > b.test.p || (a.test.p == b.test.p && a.size < b.size);
        let violators: Vec<usize> = (0..points.len()).filter(|&k| short(k)).collect();
        let weakest = if let Some(&first) = violators.first() {
            violators.iter().copied().fold(first, |w, k| if weaker(&points[k], &points[w]) { k } else { w })
        } else {
            // Otava's order: the highest p-value; when all pass, the smallest magnitude.
            let by_p = (0..points.len()).fold(0, |w, k| if points[k].test.p > points[w].test.p { k } else { w });
            if points[by_p].test.p < options.max_pvalue {
                let by_size = (0..points.len()).fold(0, |w, k| if points[k].size < points[w].size { k } else { w });
                if points[by_size].size >= options.min_magnitude {
                    break;
                }
                by_size
            } else {
                by_p
            }
        };
        points.remove(weakest);
        if weakest > 0 {
            retest(&mut points, weakest - 1);
        }
        if weakest < points.len() {
            retest(&mut points, weakest);
        }
    }
    points.into_iter().map(|p| (p.index, p.test)).collect()
}

/// The two-sided p-value of Student's t distribution with `df` degrees of freedom at `t`:
/// `P(|T| ≥ |t|) = I_{df/(df+t²)}(df/2, 1/2)`, the regularized incomplete beta function (continued fraction,
/// Lentz's method), within 1e-10 (relative) of scipy's `2 * t.sf(|t|, df)` (tested at df 0.5 to 10,000). 0 for an infinite `t`; NaN
/// when `t` or `df` is NaN or `df` is not positive.
pub fn student_t_two_sided_p(t: f64, df: f64) -> f64 {
    if t.is_nan() || df.is_nan() || df <= 0.0 {
        return f64::NAN;
    }
    if t.is_infinite() {
        return 0.0;
    }
    if df.is_infinite() {
        return erfc_two_sided(t);
    }
    let t2 = t * t;
    // x = df / (df + t²) and its complement, each computed without cancellation.
    let (x, y) = if t2.is_infinite() { (0.0, 1.0) } else { (df / (df + t2), t2 / (df + t2)) };
    regularized_incomplete_beta(df / 2.0, 0.5, x, y).clamp(0.0, 1.0)
}

/// The normal limit of [`student_t_two_sided_p`]: `erfc(|t| / √2)`.
fn erfc_two_sided(t: f64) -> f64 {
    // I_x(a, 1/2) with a huge is out of reach of the continued fraction; the normal tail through the
    // incomplete gamma function Q(1/2, t²/2) = erfc(|t|/√2).
    upper_incomplete_gamma_half(t * t / 2.0)
}

/// Q(1/2, x), the regularized upper incomplete gamma function at a = 1/2 (series below a + 1, continued
/// fraction above).
fn upper_incomplete_gamma_half(x: f64) -> f64 {
    let a = 0.5;
    if x <= 0.0 {
        return 1.0;
    }
    let front = (a * x.ln() - x - ln_gamma(a)).exp();
    if x < a + 1.0 {
        let (mut term, mut sum, mut ap) = (1.0 / a, 1.0 / a, a);
        for _ in 0..10_000 {
            ap += 1.0;
            term *= x / ap;
            sum += term;
            if term.abs() < sum.abs() * 1e-17 {
                break;
            }
        }
        (1.0 - front * sum).clamp(0.0, 1.0)
    } else {
        let tiny = 1e-300;
        let mut b = x + 1.0 - a;
        let mut c = 1.0 / tiny;
        let mut d = 1.0 / b;
        let mut h = d;
        for i in 1..10_000 {
            let an = -(i as f64) * (i as f64 - a);
            b += 2.0;
            d = an * d + b;
            if d.abs() < tiny {
                d = tiny;
            }
            c = b + an / c;
            if c.abs() < tiny {
                c = tiny;
            }
            d = 1.0 / d;
            let delta = d * c;
            h *= delta;
            if (delta - 1.0).abs() < 1e-16 {
                break;
            }
        }
        (front * h).clamp(0.0, 1.0)
    }
}

/// I_x(a, b) with `y = 1 - x` given separately (so that neither loses digits near 0 or 1).
fn regularized_incomplete_beta(a: f64, b: f64, x: f64, y: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if y <= 0.0 {
        return 1.0;
    }
    let ln_front = a * x.ln() + b * y.ln() - ln_beta(a, b);
    if x < (a + 1.0) / (a + b + 2.0) {
        ln_front.exp() / a * beta_continued_fraction(a, b, x)
    } else {
        1.0 - ln_front.exp() / b * beta_continued_fraction(b, a, y)
    }
}

/// The continued fraction of I_x(a, b) (Numerical Recipes' `betacf`, modified Lentz).
fn beta_continued_fraction(a: f64, b: f64, x: f64) -> f64 {
    const TINY: f64 = 1e-300;
    let floor = |v: f64| if v.abs() < TINY { TINY } else { v };
    let (qab, qap, qam) = (a + b, a + 1.0, a - 1.0);
    let mut c = 1.0;
    let mut d = 1.0 / floor(1.0 - qab * x / qap);
    let mut h = d;
    // One step of Lentz's method with the partial numerator `aa`: the factor it multiplies the fraction by.
    let mut step = |aa: f64| {
        d = 1.0 / floor(1.0 + aa * d);
        c = floor(1.0 + aa / c);
        d * c
    };
    for m in 1..100_000 {
        let m = m as f64;
        let m2 = 2.0 * m;
        h *= step(m * (b - m) * x / ((qam + m2) * (a + m2)));
        let delta = step(-(a + m) * (qab + m) * x / ((a + m2) * (qap + m2)));
        h *= delta;
        if (delta - 1.0).abs() < 1e-16 {
            break;
        }
    }
    h
}

fn ln_beta(a: f64, b: f64) -> f64 {
    ln_gamma(a) + ln_gamma(b) - ln_gamma(a + b)
}

/// ln Γ(x) for x > 0 (Lanczos, g = 7, 9 terms: about 1e-15 relative).
fn ln_gamma(x: f64) -> f64 {
    const G: f64 = 7.0;
    const COEFFICIENTS: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        // Reflection: Γ(x) Γ(1 - x) = π / sin(πx).
        return (std::f64::consts::PI / (std::f64::consts::PI * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut sum = COEFFICIENTS[0];
    for (i, c) in COEFFICIENTS.iter().enumerate().skip(1) {
        sum += c / (x + i as f64);
    }
    let t = x + G + 0.5;
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + sum.ln()
}

#[cfg(test)]
mod tests {
    use super::*;

    use loadgate_testkit::Noise;

    /// `n` points around 100 with Gaussian noise of `sd` percent, `step` percent higher from `at` on.
    fn noisy(seed: u64, n: usize, sd: f64, at: usize, step: f64) -> Vec<f64> {
        let mut noise = Noise(seed);
        (0..n)
            .map(|i| {
                let mean = if i >= at { 100.0 * (1.0 + step / 100.0) } else { 100.0 };
                mean + sd * noise.gaussian()
            })
            .collect()
    }

    fn indices(points: &[ChangePoint]) -> Vec<usize> {
        points.iter().map(|p| p.index).collect()
    }

    fn defaults() -> Options {
        Options::default()
    }

    #[test]
    fn the_defaults_are_otavas_with_a_minimum_segment_of_three() {
        let o = Options::default();
        assert_eq!((o.window, o.max_pvalue, o.min_magnitude, o.min_segment), (50, 0.001, 0.0, 3));
        assert!((o.first_pass_pvalue() - 0.01).abs() < 1e-15);
        assert_eq!(Options { max_pvalue: 0.1, ..o }.first_pass_pvalue(), 0.2);
        assert_eq!(Options { max_pvalue: 0.6, ..o }.first_pass_pvalue(), 0.6);
    }

    #[test]
    fn a_clean_step_is_found_where_it_starts() {
        let mut series = vec![10.0; 20];
        series.extend([12.0; 15]);
        let found = detect(&series, &defaults()).unwrap();
        assert_eq!(found.len(), 1, "{found:?}");
        let p = &found[0];
        assert_eq!(p.index, 20);
        assert_eq!((p.mean_before, p.mean_after, p.stddev_before, p.stddev_after), (10.0, 12.0, 0.0, 0.0));
        assert!((p.relative_change - 0.2).abs() < 1e-12);
        assert_eq!(p.p_value, 0.0);
    }

    #[test]
    fn a_noisy_step_is_found_with_its_segments() {
        let series = noisy(7, 60, 1.0, 35, 10.0);
        let found = detect(&series, &defaults()).unwrap();
        assert_eq!(indices(&found), [35]);
        let p = &found[0];
        assert!((p.mean_before - 100.0).abs() < 1.0 && (p.mean_after - 110.0).abs() < 1.0, "{p:?}");
        assert!(p.stddev_before > 0.5 && p.stddev_before < 1.5, "{p:?}");
        assert!(p.p_value < 1e-10 && p.relative_change > 0.08, "{p:?}");
    }

    #[test]
    fn two_steps_are_both_found() {
        let mut series = noisy(11, 90, 1.0, 30, 8.0);
        for v in &mut series[60..] {
            *v -= 15.0;
        }
        let found = detect(&series, &defaults()).unwrap();
        assert_eq!(indices(&found), [30, 60]);
        assert!(found[0].relative_change > 0.0 && found[1].relative_change < 0.0);
        // The second point's segment before is the first point's segment after.
        assert_eq!(found[0].mean_after, found[1].mean_before);
    }

    #[test]
    fn a_single_spike_is_not_a_change_point() {
        for at in [0, 1, 5, 15, 28, 29] {
            let mut series = noisy(3, 30, 0.5, 30, 0.0);
            series[at] = 300.0;
            assert_eq!(detect(&series, &defaults()).unwrap(), [], "spike at {at}");
        }
        // Two points in a row are still too short a segment at the default minimum of 3 ...
        let mut series = vec![1.0; 30];
        series[14] = 5.0;
        series[15] = 5.0;
        assert_eq!(detect(&series, &defaults()).unwrap(), []);
        // ... and a real segment of two points between two steps is one only with a shorter minimum (1 is
        // Otava's).
        let mut series = vec![1.0; 15];
        series.extend([5.0, 5.0]);
        series.extend([9.0; 15]);
        // (at the default minimum of 3 the middle segment takes a point of the last one)
        assert_eq!(indices(&detect(&series, &defaults()).unwrap()), [15, 18]);
        let found = detect(&series, &Options { min_segment: 1, ..defaults() }).unwrap();
        assert_eq!(indices(&found), [15, 17]);
    }

    #[test]
    fn a_constant_series_has_no_change_point() {
        for n in [0, 1, 2, 5, 30, 200] {
            assert_eq!(detect(&vec![42.0; n], &defaults()).unwrap(), [], "{n} points");
            assert_eq!(detect(&vec![0.0; n], &defaults()).unwrap(), [], "{n} points");
        }
        assert_eq!(detect(&[1.0], &Options { min_segment: 1, ..defaults() }).unwrap(), []);
        assert_eq!(detect(&[1.0, 2.0], &Options { min_segment: 1, ..defaults() }).unwrap(), []);
    }

    #[test]
    fn constant_segments_with_rounding_in_their_means_are_not_a_change() {
        // 0.1 summed 7 times is not 0.7: the means of two constant segments of one value differ by rounding.
        let mut series = vec![0.1; 7];
        series.extend([0.1; 13]);
        series.extend([0.3; 10]);
        assert_eq!(indices(&detect(&series, &defaults()).unwrap()), [20]);
    }

    #[test]
    fn nan_and_infinity_are_errors() {
        let mut series = vec![1.0; 10];
        series[4] = f64::NAN;
        assert_eq!(detect(&series, &defaults()), Err(ChangePointError::NotFinite { index: 4 }));
        series[2] = f64::NEG_INFINITY;
        assert_eq!(detect(&series, &defaults()), Err(ChangePointError::NotFinite { index: 2 }));
        let error = detect(&[f64::INFINITY], &defaults()).unwrap_err();
        assert_eq!(error.to_string(), "value 0 of the series is not a finite number");
    }

    #[test]
    fn bad_options_are_errors() {
        let bad = [
            Options { window: 5, ..defaults() },
            Options { window: MAX_WINDOW + 1, ..defaults() },
            Options { min_segment: 0, ..defaults() },
            Options { max_pvalue: 0.0, ..defaults() },
            Options { max_pvalue: f64::NAN, ..defaults() },
            Options { max_pvalue: 1.5, ..defaults() },
            Options { min_magnitude: -0.1, ..defaults() },
            Options { min_magnitude: f64::INFINITY, ..defaults() },
        ];
        for options in bad {
            assert!(matches!(detect(&[1.0, 2.0], &options), Err(ChangePointError::BadOptions(_))), "{options:?}");
        }
        assert!(detect(&[1.0, 2.0], &Options { window: 2, min_segment: 1, ..defaults() }).is_ok());
    }

    #[test]
    fn huge_and_tiny_values_do_not_overflow() {
        let mut series = vec![-1.5e308; 20];
        series.extend([1.6e308; 20]);
        let found = detect(&series, &defaults()).unwrap();
        assert_eq!(indices(&found), [20]);
        assert!((found[0].mean_before / -1.5e308 - 1.0).abs() < 1e-12, "{found:?}");
        assert!((found[0].mean_after / 1.6e308 - 1.0).abs() < 1e-12, "{found:?}");
        let tiny: Vec<f64> = (0..40).map(|i| if i < 25 { 5e-324 } else { 1e-323 }).collect();
        assert_eq!(indices(&detect(&tiny, &defaults()).unwrap()), [25]);
    }

    #[test]
    fn a_change_away_from_zero_is_reported_whatever_the_minimum_magnitude() {
        let mut series = vec![0.0; 20];
        series.extend(noisy(5, 20, 0.5, 0, 0.0).iter().map(|v| v / 100.0));
        let found = detect(&series, &Options { min_magnitude: 1e6, ..defaults() }).unwrap();
        assert_eq!(indices(&found), [20]);
        assert_eq!(found[0].relative_change, 0.0);
        let json = serde_json::to_string(&found[0]).unwrap();
        assert_eq!(serde_json::from_str::<ChangePoint>(&json).unwrap(), found[0]);
    }

    #[test]
    fn a_minimum_magnitude_drops_small_changes() {
        let series = noisy(13, 60, 0.2, 30, 2.0);
        assert_eq!(indices(&detect(&series, &defaults()).unwrap()), [30]);
        assert_eq!(detect(&series, &Options { min_magnitude: 0.05, ..defaults() }).unwrap(), []);
    }

    #[test]
    fn the_same_input_gives_the_same_output() {
        let series = noisy(99, 500, 3.0, 200, 6.0);
        let first = detect(&series, &defaults()).unwrap();
        for _ in 0..3 {
            assert_eq!(detect(&series, &defaults()).unwrap(), first);
        }
        assert!(first.iter().any(|p| p.index.abs_diff(200) <= 2), "{first:?}");
    }

    #[test]
    fn ten_thousand_points_finish() {
        // Noise, a staircase (a change every 4 points: the most splits a window can make) and steps.
        let staircase: Vec<f64> = (0..10_000).map(|i| (i / 4) as f64).collect();
        let mut steps = noisy(1, 10_000, 1.0, 10_000, 0.0);
        for (i, v) in steps.iter_mut().enumerate() {
            *v += ((i / 500) % 2) as f64 * 10.0;
        }
        for series in [noisy(2, 10_000, 3.0, 10_000, 0.0), staircase.clone(), steps.clone()] {
            let started = std::time::Instant::now();
            let found = detect(&series, &defaults()).unwrap();
            eprintln!("10,000 points: {} change points in {:?}", found.len(), started.elapsed());
        }
        assert_eq!(detect(&staircase, &defaults()).unwrap().len(), 2499);
        // Every step is found; 10,000 points of noise also give a few false change points (about one in 1,000
        // points at p < 0.001, see docs/change-points.md).
        let found = indices(&detect(&steps, &defaults()).unwrap());
        assert!((1..20).all(|k| found.contains(&(k * 500))), "{found:?}");
        let started = std::time::Instant::now();
        let found = detect(&steps, &Options { window: MAX_WINDOW, ..defaults() }).unwrap();
        eprintln!("window {MAX_WINDOW}: {} change points in {:?}", found.len(), started.elapsed());
    }

    /// scipy 1.16.3's `2 * scipy.stats.t.sf(abs(t), df)`.
    const SCIPY_T: [(f64, f64, f64); 12] = [
        (0.0, 10.0, 1.0),
        (1.0, 1.0, 0.49999999999999956),
        (2.0, 5.0, 0.10193947882985828),
        (-2.5, 28.0, 0.01855092306954575),
        (4.3, 28.0, 0.00018710216155750598),
        (3.674, 28.0, 0.0009997535415604431),
        (10.0, 3.0, 0.0021283990584141494),
        (0.5, 1000.0, 0.617185080833875),
        (6.0, 10000.0, 2.0416184729226204e-09),
        (20.0, 40.0, 1.949891163329177e-22),
        (0.001, 2.0, 0.99929289339559),
        (3.0, 0.5, 0.3673081559859435),
    ];

    #[test]
    fn t_distribution_p_values_match_scipy() {
        for (t, df, expected) in SCIPY_T {
            let p = student_t_two_sided_p(t, df);
            assert!(
                (p - expected).abs() <= 1e-10 * expected.max(1e-300) || (p - expected).abs() < 1e-13,
                "t = {t}, df = {df}: {p} against scipy's {expected}"
            );
        }
        assert_eq!(student_t_two_sided_p(f64::INFINITY, 5.0), 0.0);
        assert_eq!(student_t_two_sided_p(1e200, 5.0), 0.0);
        assert!(student_t_two_sided_p(f64::NAN, 5.0).is_nan());
        assert!(student_t_two_sided_p(1.0, 0.0).is_nan());
        // The normal limit: 2 * (1 - Φ(1.96)).
        assert!((student_t_two_sided_p(1.959963984540054, f64::INFINITY) - 0.05).abs() < 1e-12);
    }

    /// Detection power and false positives of one setting over `runs` seeded series: the share of series with
    /// a +`step`% step at `at` (noise `sd`% of the mean) where a change point is found within ±2 of it with
    /// p < `max_pvalue`, and the share of pure-noise series with any change point at all.
    fn rates(options: &Options, n: usize, at: usize, sd: f64, step: f64, runs: u64) -> (f64, f64) {
        let mut found = 0;
        let mut false_alarms = 0;
        for seed in 0..runs {
            let series = noisy(seed, n, sd, at, step);
            let points = detect(&series, options).unwrap();
            if points.iter().any(|p| p.index.abs_diff(at) <= 2 && p.p_value < options.max_pvalue) {
                found += 1;
            }
            let quiet = noisy(1_000_000 + seed, n, sd, n, 0.0);
            if !detect(&quiet, options).unwrap().is_empty() {
                false_alarms += 1;
            }
        }
        (found as f64 / runs as f64, false_alarms as f64 / runs as f64)
    }

    #[test]
    fn the_issues_bar_a_five_percent_step_in_thirty_runs_with_three_percent_noise() {
        // The issue asked for >= 90% within ±2 at p < 0.001. That bar is out of reach in 30 points, for any
        // p-value (docs/change-points.md): at p < 0.001 the t-test's power with 20 and 10 points is the limit
        // (the expected t is 4.3, p < 0.001 needs 3.67: an oracle that knew the index reaches 75.7%), and at
        // any level the energy statistic puts about 1 in 7 steps of 1.7 standard deviations 3 or more points
        // away. These are the measured rates (1,000 seeded series each), asserted with margin.
        let (power, fp) = rates(&defaults(), 30, 20, 3.0, 5.0, 1000);
        assert!((0.65..0.75).contains(&power), "detection at the defaults: {power}");
        assert!(fp <= 0.04, "false positives at the defaults: {fp}");
        let (power, fp) = rates(&Options { max_pvalue: 0.01, ..defaults() }, 30, 20, 3.0, 5.0, 1000);
        assert!((0.76..0.85).contains(&power), "detection at p < 0.01: {power}");
        assert!(fp <= 0.18, "false positives at p < 0.01: {fp}");
        // With 2% noise instead of 3% the bar holds at the defaults (96.3% measured).
        let (power, _) = rates(&defaults(), 30, 20, 2.0, 5.0, 1000);
        assert!(power >= 0.93, "detection with 2% noise at the defaults: {power}");
        // With 30 runs after the step (100 in all) the t-test always passes: what is left is the location.
        let (power, fp) = rates(&defaults(), 100, 70, 3.0, 5.0, 1000);
        assert!(power >= 0.83, "detection in 100 points at the defaults: {power}");
        assert!(fp <= 0.06, "false positives in 100 points at the defaults: {fp}");
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 200, ..Default::default() })]

        /// Any series and options: an answer or an error, never a panic; points sorted, apart by at least
        /// `min_segment`, with p-values below `max_pvalue` and finite statistics.
        #[test]
        fn never_panics(
            series in proptest::collection::vec(
                proptest::prop_oneof![
                    8 => -1e3f64..1e3,
                    1 => proptest::num::f64::ANY,
                    1 => proptest::sample::select(vec![0.0, 1.0, -1.0, f64::MAX, f64::MIN, 5e-324]),
                ],
                0..150,
            ),
            window in 1usize..80,
            max_pvalue in proptest::prop_oneof![0.0f64..1.2, proptest::num::f64::ANY],
            min_magnitude in proptest::prop_oneof![0.0f64..0.5, proptest::num::f64::ANY],
            min_segment in 0usize..6,
        ) {
            let options = Options { window, max_pvalue, min_magnitude, min_segment };
            if let Ok(points) = detect(&series, &options) {
                let mut previous = 0;
                for p in &points {
                    proptest::prop_assert!(p.index >= previous + min_segment, "{points:?}");
                    proptest::prop_assert!(p.index + min_segment <= series.len(), "{points:?}");
                    proptest::prop_assert!(p.p_value >= 0.0 && p.p_value < max_pvalue, "{points:?}");
                    proptest::prop_assert!(p.mean_before.is_finite() && p.mean_after.is_finite(), "{points:?}");
                    proptest::prop_assert!(p.stddev_before >= 0.0 && p.stddev_after >= 0.0, "{points:?}");
                    proptest::prop_assert!(p.stddev_before.is_finite() && p.stddev_after.is_finite(), "{points:?}");
                    proptest::prop_assert!(p.relative_change.is_finite(), "{points:?}");
                    previous = p.index;
                }
            }
        }
    }

    /// The table in docs/change-points.md: `cargo test -p loadgate-history --lib changepoint -- --ignored
    /// --nocapture`.
    #[test]
    #[ignore = "prints the measured table of docs/change-points.md (about a minute)"]
    fn print_detection_table() {
        // An oracle: the t-test at the true index of the issue's step, as if the location were known.
        for level in [0.001, 0.01] {
            let passed = (0..1000u64)
                .filter(|&seed| {
                    let series = noisy(seed, 30, 3.0, 20, 5.0);
                    t_test(&series[..20], &series[20..]).p < level
                })
                .count();
            println!("oracle t-test at the step, 30 runs, p<{level}: {:.3}", passed as f64 / 1000.0);
        }
        // Less noise: 2% and 1.5% of the mean, the defaults.
        for sd in [2.0, 1.5] {
            let (power, fp) = rates(&defaults(), 30, 20, sd, 5.0, 1000);
            println!(
                "n=30 step at 20, noise {sd}%, defaults: detection {power:.3}, false positives per series {fp:.3}"
            );
        }
        for (n, at) in [(30, 20), (100, 70)] {
            for max_pvalue in [0.001, 0.005, 0.01, 0.05] {
                for min_segment in [1, 3, 5] {
                    let options = Options { max_pvalue, min_segment, ..defaults() };
                    let (power, fp) = rates(&options, n, at, 3.0, 5.0, 1000);
                    println!("n={n} step at {at} p<{max_pvalue} min_segment={min_segment}: detection {power:.3}, false positives per series {fp:.3}");
                }
            }
        }
    }
}
