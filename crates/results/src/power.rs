//! Planning for the change a gate must catch (`gating.detect`, `gating.budget`): from the pilot rounds, the round
//! length and the number of rounds that tell the change at the confidence and power asked, within the budget.
//! Pure: no sockets, no clock; the runner gives it the pilot's results and follows the plan.
//!
//! **The model.** Each gated check over repetitions takes one value per round: the log-ratio `ln(B/A)` of its
//! statistic in an A/B round, `ln x` otherwise. Its spread between rounds has two parts: the environment's (a
//! neighbour, a stall, a throttled CPU: the same whatever the round's length) and the statistic's own sampling
//! error, which for a percentile read from `m` samples shrinks as `1 / sqrt(m)`, so as `1 / sqrt(k)` when a round
//! is `k` times as long: `sigma^2(k) = env + sampling / k`. The sampling part is measured in each pilot round from
//! its own histogram: the order statistics `m (p -+ 1.96 sqrt(p (1 - p) / m))` bound the percentile's 95%
//! interval, whose width on the log scale is `2 x 1.96` standard errors. A mean or a throughput has no such term
//! here: its rounds keep their length.
//!
//! **The rounds.** To FAIL a change `detect` beyond a limit with probability `power`, a one-sided rank test at level
//! `alpha` needs, by Noether's formula (1987), `n = (z_alpha + z_power)^2 / (K (p' - 1/2)^2)` rounds, where `p'` is
//! the probability that one item of the test lies on the FAIL side of the limit when the change is `detect`:
//!
//! - paired rounds (Wilcoxon signed-rank), `K = 3`: `p' = P(e + e' > -2 margin)` for two rounds' residuals, the
//!   probability that a Walsh average of two rounds lands beyond the limit;
//! - the median of one set (the sign test), `K = 4`: `p' = P(e > -margin)`;
//! - against a stored baseline (Mann-Whitney, as many rounds as the baseline's), `K = 6` per set:
//!   `p' = P(e - e' > -margin)`.
//!
//! `margin` ([`margin`]) is the distance on the log scale between the change and the limit. The residuals `e` are
//! the pilot's values less their centre (the Hodges-Lehmann estimate, the median of the Walsh averages, for paired
//! rounds; the median otherwise), so the plan reads the pilot's shape and never where it lies. The signs, where
//! lower is better (`<`, `<=`): the test FAILs when the centre lies above the limit `L`, the change to tell puts it
//! at `L + margin`, and a Walsh average `(d + d') / 2` lies above `L` when `e + e' > -2 margin`. Where higher is
//! better (`>`, `>=`): the test FAILs below `L`, the change puts the centre at `L - margin`, and `(d + d') / 2 < L`
//! when `(-e) + (-e') > -2 margin`. So `e` is taken as `d - centre` where lower is better and `centre - d` where
//! higher is, a positive residual pointing towards FAIL; the sign test's `p' = P(e > -margin)` reads them so (a
//! latency's stalls against an absolute limit are all upwards). The signed-rank test takes each round's value as
//! symmetric about its centre (its exact null rests on it), and under that a pair's residuals are as likely with
//! either sign: `p'` counts all four sums `+-e_i +- e_j` of each pair `i < j`, the same in both directions, and a
//! stall on either side of one pilot round counts for both (the rounds after the pilot will meet stalls on both
//! sides). Against a stored baseline the differences `e_i - e_j`, `i != j`, are symmetric by construction. Each
//! item is smoothed by a normal kernel, Silverman's bandwidth `h = 0.9 sigma n^(-1/5)` from the robust spread below
//! (`sqrt 2 h` for a sum or difference of two), with the residuals shrunk by `1 / sqrt(1 + (h / sigma)^2)` so that
//! the smoothed ones keep their spread (Silverman's shrunk smoothed bootstrap): a handful of rounds gives a
//! continuous `p'`. A stall moves one round's residual by tens of percent; the pairs it enters fall short of the
//! limit, `p'` drops and the rounds rise, where a robust spread would not have seen it. On normal data with a
//! small margin `p' - 1/2 = margin / (sigma sqrt pi)` (paired) and the formula is the familiar
//! `((z_alpha + z_power) sigma / margin)^2 / ARE` with Wilcoxon's efficiency 3/pi (2/pi for the sign test). A pilot
//! whose `p'` at the change is at most 1/2 + 0.01 cannot tell it at any number of rounds: the plan expects
//! INCONCLUSIVE and says what change the budget could tell instead. Noether's `n` is never below
//! `4 (z_alpha + z_power)^2 / K` (every item beyond the limit), nor below the fewest rounds for which the exact test
//! can decide at all ([`loadgate_model::fewest_rounds`]). `alpha` is the last look's share of the one-sided error
//! over the checks of the instance (Holm's first step), so the plan holds for the run that needs every round. A
//! few pilot rounds give `p'` loosely, and a plan from an estimate that came out high falls short of its power: the
//! residuals are widened by the spread's one-sided 80% upper confidence factor (1.35 for 8 rounds) before `p'` is
//! read. The spread itself (1.4826 x the median absolute deviation) is what the plan shows and what is split into
//! the environment's and the sampling's share; a round `k` times as long shrinks the residuals by
//! `sigma(k) / sigma(1)`, and a pilot round counts as `(sigma(k) / sigma(1))^2` rounds of that length.
//!
//! **The length.** Among round lengths of `k` = 1, 2, 3, 4, 6, 8, 12 or 16 pilot rounds (a round of at most
//! [`MAX_ROUND_SECONDS`]), the plan takes the one whose load is least within the budget; when no length fits, the
//! one that tells the smallest change at the budget's end, and says which change that is.

use loadgate_model::{fewest_rounds, Metric, Sampling, Slo, Threshold};

use crate::model::{PowerPlan, ScenarioResult};
use crate::stats::Goal;

/// The longest round a plan makes (one side): longer rounds leave too few looks to stop early.
pub const MAX_ROUND_SECONDS: f64 = 60.0;

/// The round lengths a plan considers, in pilot round lengths.
const SCALES: [u32; 8] = [1, 2, 3, 4, 6, 8, 12, 16];

/// At most this `p'` the change is as likely to fall short of the limit as beyond it: no number of rounds tells it.
const UNTELLABLE: f64 = 0.51;

/// One gated check's pilot: its per-round log statistic and how it would be judged.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckPilot {
    /// The check's metric, as reports name it (`p99`).
    pub metric: String,
    /// One value per pilot round: `ln(B/A)` (A/B), `ln x` (otherwise).
    pub values: Vec<f64>,
    /// The mean sampling variance of a pilot round's value (0 when the statistic has no tail term).
    pub sampling_variance: f64,
    /// The limit on the log scale: `ln factor` for a relative check, 0 for an absolute one (measured from it).
    pub limit: f64,
    /// Whether a lower value is better (`<`, `<=`).
    pub lower_is_better: bool,
    /// How the check's rounds are compared.
    pub design: PilotDesign,
}

/// How a check's rounds are compared, for its test's efficiency and its fewest rounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PilotDesign {
    /// A/B paired rounds (Wilcoxon signed-rank on the log-ratios).
    Paired,
    /// The median of one set against an absolute limit (the sign test).
    Median,
    /// Against a stored baseline (Mann-Whitney; the spread counts both sets).
    Unpaired,
}

/// What the plan is asked for.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Asked {
    /// The change to tell (0.10 for 10%); `None` with `budget` alone.
    pub detect: Option<f64>,
    /// The two-sided confidence of the last look (its share of the run's), from [`loadgate_model::Gating`].
    pub last_look_confidence: f64,
    /// The power to FAIL a change of `detect` ([`loadgate_model::DEFAULT_POWER`]).
    pub power: f64,
}

/// What the rounds may cost.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Cost {
    /// One pilot round's load on one side, in seconds.
    pub round_seconds: f64,
    /// 2 in an A/B run, else 1.
    pub sides: u32,
    /// The pilot rounds (each one unit of load).
    pub pilot: u32,
    /// The load the budget allows, in pilot rounds (`ExecutionPlan::budget_units`).
    pub budget_units: u32,
    /// Whether the round may be made longer (a load bounded by time, in an A/B run).
    pub scalable: bool,
    /// The budget as the spec gave it, in seconds (what the plan's sentence names).
    pub budget_seconds: f64,
    /// What a round costs beyond its planned duration, in seconds per side (the drain of the requests in flight
    /// at its end, measured in the pilot): a longer round pays it less often.
    pub overhead_seconds: f64,
}

/// The plan for one instance from its checks' pilots; `None` when no check has a spread to plan from.
pub fn plan(checks: &[CheckPilot], asked: Asked, cost: Cost) -> Option<PowerPlan> {
    let cost = Cost { budget_units: cost.budget_units.max(cost.pilot), ..cost };
    let family = checks.len().max(1);
    let spreads: Vec<(usize, Spread)> =
        checks.iter().enumerate().filter_map(|(i, c)| Some((i, Spread::of(c)?))).collect();
    if spreads.is_empty() {
        return None;
    }
    let alpha = (1.0 - asked.last_look_confidence) / 2.0 / family as f64;
    let z = normal_quantile(1.0 - alpha) + normal_quantile(asked.power);
    let options: Vec<Choice> =
        scales(cost).filter_map(|k| Choice::at(k, &spreads, checks, asked.detect, z, alpha, cost)).collect();
    let fits = |c: &&Choice| c.units_needed.is_some_and(|u| u <= cost.budget_units);
    let best = options
        .iter()
        .filter(fits)
        .min_by(|a, b| a.load.unwrap_or(f64::MAX).total_cmp(&b.load.unwrap_or(f64::MAX)).then(a.scale.cmp(&b.scale)))
        .or_else(|| options.iter().min_by(|a, b| a.detectable.total_cmp(&b.detectable)))?;
    Some(best.statement(checks, asked.detect, cost))
}

/// The scales a plan considers: 1 alone when the round cannot be made longer.
fn scales(cost: Cost) -> impl Iterator<Item = u32> {
    SCALES
        .into_iter()
        .filter(move |k| *k == 1 || (cost.scalable && f64::from(*k) * cost.round_seconds <= MAX_ROUND_SECONDS))
}

/// One check's spread, split into the environment's and the sampling's, and the pilot's items for Noether's `p'`.
#[derive(Debug, Clone)]
struct Spread {
    env: f64,
    sampling: f64,
    sampling_kind: Sampling,
    /// The whole spread at the pilot's length (robust).
    total: f64,
    items: Items,
}

impl Spread {
    fn of(c: &CheckPilot) -> Option<Spread> {
        let finite: Vec<f64> = c.values.iter().copied().filter(|v| v.is_finite()).collect();
        let robust = robust_sd(&finite)?;
        let upper = upper_sd_factor(finite.len());
        // Against a stored baseline the difference of two sets carries both sets' spread.
        let (total, kind) = match c.design {
            PilotDesign::Paired | PilotDesign::Median => (robust * upper, Sampling::OneSetOrPaired),
            PilotDesign::Unpaired => (robust * upper * std::f64::consts::SQRT_2, Sampling::Unpaired { baseline: None }),
        };
        let sampling = c.sampling_variance.max(0.0).min(total * total);
        let items = Items::of(c, &finite, robust, upper)?;
        Some(Spread { env: total * total - sampling, sampling, sampling_kind: kind, total, items })
    }

    fn sd(&self, k: u32) -> f64 {
        (self.env + self.sampling / f64::from(k)).sqrt()
    }
}

/// The pilot's items for Noether's `p'` (see the module doc): each pair's four sums `+-e_i +- e_j`, `i < j`, of the
/// residuals (paired), the oriented residuals `e_i` (median), the differences `e_i - e_j`, `i != j` (unpaired);
/// widened by the spread's upper confidence factor, each smoothed by a normal kernel of width `bandwidth`.
#[derive(Debug, Clone)]
struct Items {
    items: Vec<f64>,
    bandwidth: f64,
    /// How many margins an item may fall short of the limit and still count for FAIL: 2 for sums, else 1.
    margins: f64,
    /// Noether's `K`: 3 (signed-rank), 4 (sign test), 6 (Mann-Whitney, per set).
    constant: f64,
}

impl Items {
    /// `None` below two values or when the centre cannot be taken.
    fn of(c: &CheckPilot, finite: &[f64], robust: f64, upper: f64) -> Option<Items> {
        let n = finite.len();
        if n < 2 {
            return None;
        }
        // A positive residual points towards FAIL: above the limit where lower is better, below it otherwise.
        let towards_fail = if c.lower_is_better { 1.0 } else { -1.0 };
        let centre = match c.design {
            PilotDesign::Paired => crate::stats::shift(finite, 0.5).ok()?.median,
            PilotDesign::Median | PilotDesign::Unpaired => crate::stats::median(finite).ok()?,
        };
        // Silverman's rule of thumb on the robust spread, for one residual; the residuals shrunk so that the smoothed
        // ones keep the spread (Silverman's shrunk smoothed bootstrap).
        let width = 0.9 * (n as f64).powf(-0.2);
        let h = width * robust * upper;
        let shrink = upper / (1.0 + width * width).sqrt();
        let e: Vec<f64> = finite.iter().map(|v| towards_fail * (v - centre) * shrink).collect();
        let pairs = (0..n).flat_map(|i| (i + 1..n).map(move |j| (i, j)));
        let sqrt2 = std::f64::consts::SQRT_2;
        let (items, bandwidth, margins, constant) = match c.design {
            // The signed-rank test takes each round symmetric about the centre: under that, a pair's residuals are
            // as likely with either sign, and all four sums count (a stall on either side of a pilot round counts
            // for both).
            PilotDesign::Paired => {
                let sums = pairs.flat_map(|(i, j)| [e[i] + e[j], -e[i] - e[j], e[i] - e[j], e[j] - e[i]]);
                (sums.collect(), h * sqrt2, 2.0, 3.0)
            }
            PilotDesign::Median => (e, h, 1.0, 4.0),
            PilotDesign::Unpaired => {
                let differences = pairs.flat_map(|(i, j)| [e[i] - e[j], e[j] - e[i]]);
                (differences.collect(), h * sqrt2, 1.0, 6.0)
            }
        };
        Some(Items { items, bandwidth, margins, constant })
    }

    /// `p'`: the share of the items, their residuals scaled by `scale`, that a change `margin` beyond the limit
    /// puts beyond it.
    fn p(&self, margin: f64, scale: f64) -> f64 {
        let reach = self.margins * margin / scale;
        let h = self.bandwidth;
        // Beyond 8 bandwidths the kernel's tail (6e-16) is nothing.
        let share = |x: f64| match (x + reach) / h {
            t if t > 8.0 => 1.0,
            t if t < -8.0 => 0.0,
            t if t.is_nan() => 0.5,
            t => crate::stats::normal_cdf(t),
        };
        self.items.iter().map(|x| share(*x)).sum::<f64>() / self.items.len().max(1) as f64
    }

    /// Noether's rounds for `p'`; `None` when `p'` is at most [`UNTELLABLE`].
    fn rounds(&self, z: f64, p: f64) -> Option<u32> {
        (p > UNTELLABLE).then(|| {
            let n = z * z / (self.constant * (p - 0.5).powi(2));
            n.ceil().clamp(1.0, f64::from(u32::MAX / 2)) as u32
        })
    }

    /// The smallest margin that `worth` rounds of residuals scaled by `scale` tell (Noether's formula solved for
    /// `p'`, then for the margin). Fewer rounds than Noether's least (`4 z^2 / K`, every item beyond the limit)
    /// tell the margin that puts 99% of the items beyond it.
    fn reach(&self, z: f64, worth: f64, scale: f64) -> f64 {
        let target = (0.5 + z / (self.constant * worth).sqrt()).clamp(UNTELLABLE, 0.99);
        if self.p(0.0, scale) >= target {
            return 0.0;
        }
        let spread = self.items.iter().fold(self.bandwidth, |m, x| m.max(x.abs()));
        let mut hi = (spread * scale / self.margins).max(f64::MIN_POSITIVE);
        while self.p(hi, scale) < target && hi < 1e6 {
            hi *= 2.0;
        }
        let mut lo = 0.0;
        for _ in 0..30 {
            let mid = (lo + hi) / 2.0;
            if self.p(mid, scale) >= target {
                hi = mid;
            } else {
                lo = mid;
            }
        }
        hi
    }
}

/// What a check needs at one round length.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Need {
    /// No change to tell (`budget` alone), or one within the check's own limit.
    Nothing,
    /// This many rounds (pilot included), in these units of load and seconds.
    Rounds { rounds: u32, units: u32, load: f64 },
    /// No number of rounds: `p'` is at most [`UNTELLABLE`].
    Never,
}

/// One round length's needs and reach.
#[derive(Debug, Clone)]
struct Choice {
    scale: u32,
    /// The deciding check (the most demanding at this length).
    check: usize,
    rounds_needed: Option<u32>,
    units_needed: Option<u32>,
    /// The load of `rounds_needed` in seconds, both sides, each round's overhead counted.
    load: Option<f64>,
    rounds_allowed: u32,
    /// The smallest change (relative) the budget's rounds tell, on the deciding check.
    detectable: f64,
    /// The deciding check's `p'` at the change asked and this length.
    p_prime: Option<f64>,
    need: Need,
    total: f64,
    sampling: f64,
}

impl Choice {
    fn at(
        k: u32,
        spreads: &[(usize, Spread)],
        checks: &[CheckPilot],
        detect: Option<f64>,
        z: f64,
        alpha: f64,
        cost: Cost,
    ) -> Option<Choice> {
        let allowed = cost.pilot.min(cost.budget_units) + cost.budget_units.saturating_sub(cost.pilot) / k;
        let mut worst: Option<Choice> = None;
        for (i, s) in spreads {
            let c = &checks[*i];
            let least = fewest_rounds(s.sampling_kind, alpha).unwrap_or(u32::MAX);
            // A round of this length shrinks the residuals; a pilot round is worth fewer of them.
            let scale = s.sd(k) / s.sd(1);
            let pilot_worth = f64::from(cost.pilot) * scale.powi(2);
            let p_prime = detect.and_then(|d| margin(c, d)).map(|m| s.items.p(m, scale));
            let need = match p_prime.map(|p| s.items.rounds(z, p)) {
                None => Need::Nothing,
                Some(None) => Need::Never,
                Some(Some(n)) => {
                    let later =
                        ((f64::from(n) - pilot_worth).max(0.0).ceil() as u32).max(least.saturating_sub(cost.pilot));
                    let t = cost.round_seconds;
                    let load = f64::from(cost.sides)
                        * (f64::from(cost.pilot) * (t + cost.overhead_seconds)
                            + f64::from(later) * (f64::from(k) * t + cost.overhead_seconds));
                    Need::Rounds { rounds: cost.pilot + later, units: cost.pilot + later.saturating_mul(k), load }
                }
            };
            // Fewer rounds than any verdict needs at the last look's level tell no change at all.
            let worth = pilot_worth + f64::from(allowed.saturating_sub(cost.pilot));
            let detectable = if allowed < least { f64::INFINITY } else { change_at(c, s.items.reach(z, worth, scale)) };
            let (rounds_needed, units_needed, load) = match need {
                Need::Rounds { rounds, units, load } => (Some(rounds), Some(units), Some(load)),
                Need::Nothing | Need::Never => (None, None, None),
            };
            let this = Choice {
                scale: k,
                check: *i,
                rounds_needed,
                units_needed,
                load,
                rounds_allowed: allowed,
                detectable,
                p_prime,
                need,
                total: s.total,
                sampling: s.sampling,
            };
            if worst.as_ref().is_none_or(|w| this.demands_more_than(w)) {
                worst = Some(this);
            }
        }
        worst
    }

    /// Whether this check is more demanding than `other` at the same length: a change no number of rounds tells
    /// before any number of rounds, more load before less, anything before nothing; else the larger change told.
    fn demands_more_than(&self, other: &Choice) -> bool {
        let rank = |c: &Choice| match c.need {
            Need::Never => 2,
            Need::Rounds { .. } => 1,
            Need::Nothing => 0,
        };
        match (self.need, other.need) {
            (Need::Rounds { load: a, .. }, Need::Rounds { load: b, .. }) => a > b,
            _ if rank(self) != rank(other) => rank(self) > rank(other),
            _ => self.detectable > other.detectable,
        }
    }

    fn statement(&self, checks: &[CheckPilot], detect: Option<f64>, cost: Cost) -> PowerPlan {
        let check = &checks[self.check];
        let round_seconds = cost.round_seconds * f64::from(self.scale);
        let plan = PowerPlan {
            metric: check.metric.clone(),
            detect,
            pilot_rounds: cost.pilot,
            round_scale: self.scale,
            round_seconds,
            rounds_needed: self.rounds_needed,
            load_needed_seconds: self.load,
            rounds_allowed: self.rounds_allowed,
            budget_seconds: cost.budget_seconds,
            detectable: Some(self.detectable).filter(|d| d.is_finite()),
            spread: self.total,
            sampling_spread: self.sampling.sqrt(),
            p_prime: self.p_prime,
            sentence: String::new(),
        };
        PowerPlan { sentence: sentence(&plan, check), ..plan }
    }
}

/// How far beyond the check's limit a change of `detect` lies on the log scale; `None` when it does not (a
/// change that small meets the limit).
pub fn margin(c: &CheckPilot, detect: f64) -> Option<f64> {
    let m = if c.lower_is_better { (1.0 + detect).ln() - c.limit } else { c.limit - (1.0 - detect).max(1e-9).ln() };
    (m > 1e-9).then_some(m)
}

/// The relative change a check tells when it can tell `reach` beyond its limit on the log scale.
fn change_at(c: &CheckPilot, reach: f64) -> f64 {
    if c.lower_is_better {
        (c.limit + reach).exp() - 1.0
    } else {
        1.0 - (c.limit - reach).exp()
    }
}

/// The plan in words: "to tell 10% on p99 here needs about 40 rounds of 2 s (2.7 min of load); the budget allows
/// 45".
fn sentence(p: &PowerPlan, check: &CheckPilot) -> String {
    let pct = |x: f64| format!("{}%", trim(x * 100.0));
    let rounds = |n: u32| if n == 1 { "1 round".to_owned() } else { format!("{n} rounds") };
    let length = if p.round_scale == 1 {
        format!("{} s", trim(p.round_seconds))
    } else {
        format!("{} s ({}x the pilot's)", trim(p.round_seconds), p.round_scale)
    };
    let expect = p.detectable.map(|x| format!("expect INCONCLUSIVE unless the change is larger than {}", pct(x)));
    match (p.detect, p.rounds_needed, p.load_needed_seconds) {
        (Some(d), Some(n), Some(load)) if n <= p.rounds_allowed => format!(
            "to tell {} on {} here needs about {} of {length} ({} of load); the budget ({}) allows {}",
            pct(d),
            p.metric,
            rounds(n),
            duration(load),
            duration(p.budget_seconds),
            p.rounds_allowed
        ),
        (Some(d), Some(n), Some(load)) => {
            format!(
                "to tell {} on {} here needs about {} of {length} ({} of load); the budget ({}) allows {}; {}",
                pct(d),
                p.metric,
                rounds(n),
                duration(load),
                duration(p.budget_seconds),
                p.rounds_allowed,
                expect.unwrap_or_else(
                    || "expect INCONCLUSIVE whatever the change: too few rounds for any verdict".to_owned()
                )
            )
        }
        (Some(d), None, _) if p.p_prime.is_some() => format!(
            "to tell {} on {} here no number of rounds of {length} suffices: with the pilot's spread a change of {} \
             lies beyond the limit with probability {} per {} (p'), no better than a coin; the budget ({}) allows {}; {}",
            pct(d),
            p.metric,
            pct(d),
            p.p_prime.map(trim_ratio).unwrap_or_default(),
            match check.design {
                PilotDesign::Median => "round",
                PilotDesign::Paired | PilotDesign::Unpaired => "pair of rounds",
            },
            duration(p.budget_seconds),
            p.rounds_allowed,
            expect.unwrap_or_else(|| "expect INCONCLUSIVE whatever the change: too few rounds for any verdict".to_owned())
        ),
        (Some(d), _, _) => format!(
            "a change of {} is within {}'s own limit (x{}): it passes by the spec's limit; the budget ({}) allows {} \
             of {length}",
            pct(d),
            p.metric,
            trim_ratio(check.limit.exp()),
            duration(p.budget_seconds),
            rounds(p.rounds_allowed)
        ),
        (None, _, _) => format!(
            "the budget ({}) allows {} of {length}; with the pilot's spread on {} it can tell a change of {} or more",
            duration(p.budget_seconds),
            rounds(p.rounds_allowed),
            p.metric,
            p.detectable.map_or_else(|| "no change (too few rounds for any verdict)".to_owned(), pct)
        ),
    }
}

fn trim(x: f64) -> String {
    let text = format!("{x:.1}");
    text.trim_end_matches(".0").to_owned()
}

fn trim_ratio(x: f64) -> String {
    let text = format!("{x:.3}");
    text.trim_end_matches('0').trim_end_matches('.').to_owned()
}

/// `45 s`, `2.7 min`.
fn duration(seconds: f64) -> String {
    if seconds < 120.0 {
        format!("{} s", trim(seconds))
    } else {
        format!("{} min", trim(seconds / 60.0))
    }
}

/// A few pilot rounds estimate a spread loosely, and a plan from an estimate that came out low falls short of its
/// power: plan from its one-sided 80% upper confidence limit (Browne 1995), `sqrt((n - 1) / chi2_0.2(n - 1))`,
/// with the chi-square quantile by Wilson and Hilferty (1.35 for 8 rounds, 1.21 for 16).
fn upper_sd_factor(n: usize) -> f64 {
    if n < 2 {
        return 1.0;
    }
    let k = (n - 1) as f64;
    let z = normal_quantile(0.2);
    let chi2 = k * (1.0 - 2.0 / (9.0 * k) + z * (2.0 / (9.0 * k)).sqrt()).powi(3);
    if chi2 > 0.0 {
        (k / chi2).sqrt().max(1.0)
    } else {
        1.0
    }
}

/// 1.4826 x the median absolute deviation from the median (the standard deviation of normal data); the sample
/// standard deviation when that is 0 (ties) or below three values. `None` below two values.
fn robust_sd(values: &[f64]) -> Option<f64> {
    let finite: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
    if finite.len() < 2 {
        return None;
    }
    let mid = median(&finite);
    let deviations: Vec<f64> = finite.iter().map(|v| (v - mid).abs()).collect();
    let mad = 1.4826 * median(&deviations);
    if finite.len() >= 3 && mad > 0.0 {
        return Some(mad);
    }
    let mean = finite.iter().sum::<f64>() / finite.len() as f64;
    let var = finite.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (finite.len() - 1) as f64;
    (var > 0.0).then(|| var.sqrt())
}

fn median(values: &[f64]) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// The standard normal quantile (Acklam's rational approximation, relative error below 1.2e-9).
pub fn normal_quantile(p: f64) -> f64 {
    const A: [f64; 6] = [
        -3.969_683_028_665_376e1,
        2.209_460_984_245_205e2,
        -2.759_285_104_469_687e2,
        1.383_577_518_672_69e2,
        -3.066_479_806_614_716e1,
        2.506_628_277_459_239,
    ];
    const B: [f64; 5] = [
        -5.447_609_879_822_406e1,
        1.615_858_368_580_409e2,
        -1.556_989_798_598_866e2,
        6.680_131_188_771_972e1,
        -1.328_068_155_288_572e1,
    ];
    const C: [f64; 6] = [
        -7.784_894_002_430_293e-3,
        -3.223_964_580_411_365e-1,
        -2.400_758_277_161_838,
        -2.549_732_539_343_734,
        4.374_664_141_464_968,
        2.938_163_982_698_783,
    ];
    const D: [f64; 4] =
        [7.784_695_709_041_462e-3, 3.224_671_290_700_398e-1, 2.445_134_137_142_996, 3.754_408_661_907_416];
    let p = p.clamp(1e-300, 1.0 - 1e-16);
    let tail = |q: f64| {
        (((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    };
    if p < 0.02425 {
        tail((-2.0 * p.ln()).sqrt())
    } else if p > 1.0 - 0.02425 {
        -tail((-2.0 * (1.0 - p).ln()).sqrt())
    } else {
        let q = p - 0.5;
        let r = q * q;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    }
}

/// The pilots of an instance's checks judged over repetitions, from its rounds: `mine` (the candidate's, in
/// A/B), `paired` (the baseline side's, A/B), `stored` (a stored baseline's median, when judged against one).
pub fn pilots(slos: &[Slo], mine: &[ScenarioResult], paired: Option<&[ScenarioResult]>) -> Vec<CheckPilot> {
    slos.iter()
        .filter(|s| loadgate_model::judged_over_repetitions(s))
        .filter_map(|slo| pilot(slo, mine, paired))
        .collect()
}

fn pilot(slo: &Slo, mine: &[ScenarioResult], paired: Option<&[ScenarioResult]>) -> Option<CheckPilot> {
    let goal = Goal::from_comparison(slo.comparison)?;
    let lower_is_better = matches!(goal, Goal::Below | Goal::AtMost);
    let ln = |r: &ScenarioResult| crate::measure(slo.metric, r).filter(|v| *v > 0.0).map(f64::ln);
    let (values, variance, limit, design) = match (slo.threshold, paired) {
        (Threshold::Baseline { factor }, Some(a)) => {
            let values = mine.iter().zip(a).filter_map(|(b, a)| Some(ln(b)? - ln(a)?)).collect();
            let var = mean(
                mine.iter().zip(a).map(|(b, a)| sampling_variance(slo.metric, b) + sampling_variance(slo.metric, a)),
            );
            (values, var, factor.ln(), PilotDesign::Paired)
        }
        (Threshold::Baseline { factor }, None) => {
            let var = mean(mine.iter().map(|r| sampling_variance(slo.metric, r)));
            (mine.iter().filter_map(ln).collect(), var, factor.ln(), PilotDesign::Unpaired)
        }
        _ => {
            let var = mean(mine.iter().map(|r| sampling_variance(slo.metric, r)));
            (mine.iter().filter_map(ln).collect(), var, 0.0, PilotDesign::Median)
        }
    };
    Some(CheckPilot {
        metric: slo.metric.to_string(),
        values,
        sampling_variance: variance,
        limit,
        lower_is_better,
        design,
    })
}

fn mean(values: impl Iterator<Item = f64>) -> f64 {
    let (sum, n) = values.fold((0.0, 0u32), |(s, n), v| (s + v, n + 1));
    if n == 0 {
        0.0
    } else {
        sum / f64::from(n)
    }
}

/// The sampling variance of `ln` of a percentile read from one round's histogram: its 95% order-statistic
/// interval's width on the log scale over `2 x 1.96`. 0 for statistics without a tail term (means, rates).
pub fn sampling_variance(metric: Metric, r: &ScenarioResult) -> f64 {
    let (q, at): (f64, fn(f64) -> Metric) = match metric {
        Metric::Percentile(q) => (q / 100.0, Metric::Percentile),
        Metric::ConnectPercentile(q) => (q / 100.0, Metric::ConnectPercentile),
        _ => return 0.0,
    };
    let m = r.requests.completed as f64;
    if m < 1.0 || !(0.0..1.0).contains(&q) {
        return 0.0;
    }
    let half = 1.96 * (q * (1.0 - q) / m).sqrt();
    let value = |p: f64| {
        let p = p.clamp(0.0001, 1.0);
        let metric = if p >= 1.0 {
            if matches!(metric, Metric::Percentile(_)) {
                Metric::Max
            } else {
                Metric::ConnectMax
            }
        } else {
            at(p * 100.0)
        };
        crate::measure(metric, r).filter(|v| *v > 0.0).map(f64::ln)
    };
    match (value(q - half), value(q + half)) {
        (Some(lo), Some(hi)) if hi >= lo => ((hi - lo) / (2.0 * 1.96)).powi(2),
        _ => 0.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Eight paired pilot rounds whose robust spread is `sd`, centred on `centre`.
    fn values(sd: f64, centre: f64) -> Vec<f64> {
        let a = sd / 1.4826;
        [-a, -a, -a, 0.0, 0.0, a, a, a].iter().map(|v| centre + v).collect()
    }

    fn p99(sd: f64, sampling_sd: f64) -> CheckPilot {
        CheckPilot {
            metric: "p99".into(),
            values: values(sd, 0.0),
            sampling_variance: sampling_sd * sampling_sd,
            limit: 1.05f64.ln(),
            lower_is_better: true,
            design: PilotDesign::Paired,
        }
    }

    fn asked(detect: f64) -> Asked {
        Asked { detect: Some(detect), last_look_confidence: 0.95, power: 0.90 }
    }

    /// 0.5 s rounds on two sides, 8 of them a pilot, a budget of 3 minutes: 180 units.
    fn cost(budget_units: u32) -> Cost {
        Cost {
            round_seconds: 0.5,
            sides: 2,
            pilot: 8,
            budget_units,
            scalable: true,
            budget_seconds: f64::from(budget_units),
            overhead_seconds: 0.0,
        }
    }

    #[test]
    fn a_short_pilot_plans_from_the_upper_limit_of_its_spread() {
        // chi2_0.2(7) = 3.822: sqrt(7 / 3.822) = 1.353; chi2_0.2(15) = 10.307: 1.206.
        assert!((upper_sd_factor(8) - 1.353).abs() < 0.005, "{}", upper_sd_factor(8));
        assert!((upper_sd_factor(16) - 1.206).abs() < 0.005, "{}", upper_sd_factor(16));
        assert!(upper_sd_factor(16) < upper_sd_factor(8) && upper_sd_factor(16) > 1.0);
        assert_eq!(upper_sd_factor(1), 1.0);
    }

    #[test]
    fn the_normal_quantile_matches_the_tables() {
        assert!((normal_quantile(0.975) - 1.959_964).abs() < 1e-6);
        assert!((normal_quantile(0.90) - 1.281_552).abs() < 1e-6);
        assert!((normal_quantile(0.995) - 2.575_829).abs() < 1e-6);
        assert!((normal_quantile(0.001) + 3.090_232).abs() < 1e-6);
    }

    #[test]
    fn the_rounds_follow_from_noethers_formula_with_p_prime_from_the_pilots_walsh_pairs() {
        let pilot = p99(0.05, 0.0);
        let plan = plan(std::slice::from_ref(&pilot), asked(0.10), cost(180)).unwrap();
        // One-sided 2.5% at the last look, 90% power; margin ln(1.10 / 1.05).
        let z = normal_quantile(0.975) + normal_quantile(0.90);
        let margin = (1.10f64 / 1.05).ln();
        // The pilot is centred on 0 (its Hodges-Lehmann estimate) with a robust spread of 0.05: its residuals
        // widened by the upper factor and shrunk for the kernel, each pair's four sums +-e_i +-e_j, smoothed.
        let width = 0.9 * 8f64.powf(-0.2);
        let upper = upper_sd_factor(8);
        let e: Vec<f64> = pilot.values.iter().map(|v| v * upper / (1.0 + width * width).sqrt()).collect();
        let h = width * 0.05 * upper * std::f64::consts::SQRT_2;
        let mut shares = Vec::new();
        for i in 0..8 {
            for j in i + 1..8 {
                for x in [e[i] + e[j], -e[i] - e[j], e[i] - e[j], e[j] - e[i]] {
                    shares.push(crate::stats::normal_cdf((x + 2.0 * margin) / h));
                }
            }
        }
        let p = shares.iter().sum::<f64>() / shares.len() as f64;
        assert!((plan.p_prime.unwrap() - p).abs() < 1e-12, "{plan:?} vs {p}");
        assert!(p > 0.8 && p < 0.95, "{p}");
        // The pilot's 8 rounds count as 8 of the same length.
        let expected = (z * z / (3.0 * (p - 0.5).powi(2))).ceil() as u32;
        assert_eq!(plan.rounds_needed, Some(expected));
        assert_eq!(plan.round_scale, 1, "no sampling share: a longer round buys nothing");
        assert!(plan.rounds_needed.unwrap() <= plan.rounds_allowed);
        assert_eq!(plan.load_needed_seconds, Some(f64::from(expected) * 0.5 * 2.0));
        assert!(
            plan.sentence.starts_with(&format!("to tell 10% on p99 here needs about {expected} rounds of 0.5 s")),
            "{}",
            plan.sentence
        );
        assert!(!plan.sentence.contains("INCONCLUSIVE"), "{}", plan.sentence);
    }

    #[test]
    fn the_looks_error_split_and_the_family_ask_for_more_rounds() {
        // The last look of several keeps half the one-sided error: 2.5% of 5%; one look keeps it all.
        let g = loadgate_model::Gating::default();
        let looks = loadgate_model::looks_between(8, 180);
        let last = loadgate_model::share_of_confidence(g.confidence, looks.len() - 1, looks.len());
        assert!((last - 0.95).abs() < 1e-12);
        let one_look = Asked { last_look_confidence: 0.90, ..asked(0.10) };
        let split = plan(&[p99(0.05, 0.0)], asked(0.10), cost(180)).unwrap().rounds_needed.unwrap();
        let whole = plan(&[p99(0.05, 0.0)], one_look, cost(180)).unwrap().rounds_needed.unwrap();
        assert!(split > whole, "sharing the error over looks costs rounds: {split} vs {whole}");
        // Two checks share the false-FAIL budget (Holm's first step): more rounds again.
        let two = plan(&[p99(0.05, 0.0), p99(0.05, 0.0)], asked(0.10), cost(180)).unwrap().rounds_needed.unwrap();
        assert!(two > split, "{two} vs {split}");
    }

    #[test]
    fn a_noisy_percentile_gets_longer_rounds_when_each_round_costs_an_overhead() {
        // Nearly all of p99's spread is its sampling error at 0.5 s (the upper limit of the spread, 0.135, against
        // 0.13 from sampling): a round twice as long halves it, so the load per unit of precision is the same, and
        // what a longer round saves is each round's overhead (0.1 s of drain per side here). That holds for a change
        // close to the limit (6% against x1.05, p' = 0.55), where Noether's rounds go as the spread squared; for a
        // change farther beyond it (10%, p' = 0.73) rounds half as noisy need more than half as many (the formula
        // saturates towards p' = 1), and the longer rounds cost more load than the overhead saves.
        let noisy = p99(0.10, 0.13);
        let costly = Cost { overhead_seconds: 0.1, ..cost(5000) };
        let plan = plan(std::slice::from_ref(&noisy), asked(0.06), costly).unwrap();
        assert!(plan.round_scale > 1, "{plan:?}");
        assert_eq!(plan.round_seconds, 0.5 * f64::from(plan.round_scale));
        let fixed = super::plan(std::slice::from_ref(&noisy), asked(0.06), Cost { scalable: false, ..costly }).unwrap();
        assert_eq!(fixed.round_scale, 1);
        assert!(plan.load_needed_seconds.unwrap() < fixed.load_needed_seconds.unwrap(), "{plan:?} vs {fixed:?}");
        assert!(plan.rounds_needed.unwrap() < fixed.rounds_needed.unwrap());
        assert!(plan.sentence.contains("x the pilot's"), "{}", plan.sentence);
        // Without an overhead, or where the environment's share dominates, the rounds keep their length.
        assert_eq!(super::plan(std::slice::from_ref(&noisy), asked(0.06), cost(5000)).unwrap().round_scale, 1);
        assert_eq!(super::plan(&[p99(0.10, 0.02)], asked(0.06), costly).unwrap().round_scale, 1);
        assert_eq!(super::plan(std::slice::from_ref(&noisy), asked(0.10), costly).unwrap().round_scale, 1);
    }

    #[test]
    fn a_budget_too_small_says_what_it_can_tell_instead() {
        let plan = plan(&[p99(0.10, 0.0)], asked(0.10), cost(40)).unwrap();
        let needed = plan.rounds_needed.unwrap();
        assert!(needed > plan.rounds_allowed, "{plan:?}");
        assert_eq!(plan.rounds_allowed, 40);
        let x = plan.detectable.unwrap();
        assert!(x > 0.10, "the budget tells only a larger change: {x}");
        assert!(
            plan.sentence.contains(&format!(
                "the budget (40 s) allows 40; expect INCONCLUSIVE unless the change is larger than {}%",
                trim(x * 100.0)
            )),
            "{}",
            plan.sentence
        );
    }

    #[test]
    fn a_budget_below_the_fewest_rounds_says_no_verdict_can_come() {
        // 5 rounds where the last look (one-sided 2.5%) needs 6 pairs.
        let plan = plan(&[p99(0.05, 0.0)], asked(0.10), Cost { pilot: 3, ..cost(5) }).unwrap();
        assert_eq!(plan.rounds_allowed, 5);
        assert_eq!(plan.detectable, None);
        assert!(
            plan.sentence.ends_with("expect INCONCLUSIVE whatever the change: too few rounds for any verdict"),
            "{}",
            plan.sentence
        );
    }

    /// `n` paired rounds at the normal scores of a spread `sd` around 0: a normal pilot without sampling error.
    fn normal_pilot(n: usize, sd: f64) -> CheckPilot {
        let values = (0..n).map(|i| sd * normal_quantile((i as f64 + 0.5) / n as f64)).collect();
        CheckPilot { values, ..p99(sd, 0.0) }
    }

    /// The rounds the plan asked for before Noether's formula: `((z sd / margin)^2 / (3 / pi))` from the pilot's
    /// robust spread at its upper limit, never fewer than the pilot's rounds nor the exact test's fewest.
    fn are_rounds(values: &[f64], margin: f64, z: f64, alpha: f64) -> u32 {
        let sd = robust_sd(values).unwrap() * upper_sd_factor(values.len());
        let n = ((z * sd / margin).powi(2) * std::f64::consts::PI / 3.0).ceil() as u32;
        n.max(values.len() as u32).max(fewest_rounds(Sampling::OneSetOrPaired, alpha).unwrap())
    }

    fn z_and_alpha(asked: Asked) -> (f64, f64) {
        let alpha = (1.0 - asked.last_look_confidence) / 2.0;
        (normal_quantile(1.0 - alpha) + normal_quantile(asked.power), alpha)
    }

    #[test]
    fn noether_agrees_with_the_are_formula_for_small_shifts_on_normal_pilots() {
        // 60 normal rounds of spread 0.05, a change 0.01 beyond the limit on the log scale (a fifth of the spread).
        let pilot = normal_pilot(60, 0.05);
        let detect = 1.05 * 0.01f64.exp() - 1.0;
        let costly = Cost { pilot: 60, scalable: false, ..cost(100_000) };
        let plan = plan(std::slice::from_ref(&pilot), asked(detect), costly).unwrap();
        let noether = f64::from(plan.rounds_needed.unwrap());
        let (z, alpha) = z_and_alpha(asked(detect));
        let are = f64::from(are_rounds(&pilot.values, 0.01, z, alpha));
        assert!(are > 200.0, "a small shift: {are}");
        assert!((noether / are - 1.0).abs() < 0.15, "Noether {noether}, ARE {are}, {plan:?}");
        // Where higher is better the same pilot gives the same p' (the residuals are taken as symmetric).
        let higher = CheckPilot { limit: 0.95f64.ln(), lower_is_better: false, ..pilot };
        let mirrored = super::plan(&[higher], asked(1.0 - 0.95 * (-0.01f64).exp()), costly).unwrap();
        assert!((mirrored.p_prime.unwrap() - plan.p_prime.unwrap()).abs() < 1e-9, "{mirrored:?}");
    }

    #[test]
    fn a_stalled_pilot_round_raises_the_planned_rounds() {
        let clean = normal_pilot(8, 0.05);
        let mut stalled = clean.clone();
        // The round with the highest log-ratio had its B side stalled as well: +0.4 (p99 x1.5). The median and the
        // median absolute deviation stay where they were.
        stalled.values[7] += 0.4;
        let rounds = |c: &CheckPilot| plan(std::slice::from_ref(c), asked(0.10), cost(180)).unwrap();
        let (a, b) = (rounds(&clean), rounds(&stalled));
        assert!(b.p_prime < a.p_prime, "{a:?} vs {b:?}");
        let (a, b) = (a.rounds_needed.unwrap(), b.rounds_needed.unwrap());
        assert!(f64::from(b) >= 1.3 * f64::from(a), "{a} clean, {b} with the stall");
        // The robust spread did not see it: the old plan stayed where it was.
        let (z, alpha) = z_and_alpha(asked(0.10));
        let margin = (1.10f64 / 1.05).ln();
        let old = |c: &CheckPilot| are_rounds(&c.values, margin, z, alpha);
        assert_eq!(old(&stalled), old(&clean));
        // A stall on the A side of the lowest round (the log-ratio -0.4) counts the same: the test will face stalls
        // on both sides.
        let mut other = clean.clone();
        other.values[0] -= 0.4;
        assert_eq!(rounds(&other).rounds_needed, Some(b));
    }

    /// A standard normal draw (Box-Muller) and a uniform one from the workspace's SplitMix64.
    fn uniform(state: &mut u64) -> f64 {
        ((loadgate_model::splitmix64(state) >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }

    fn normal(state: &mut u64) -> f64 {
        let (a, b) = (uniform(state), uniform(state));
        (-2.0 * a.ln()).sqrt() * (std::f64::consts::TAU * b).cos()
    }

    #[test]
    fn planned_rounds_fail_a_change_of_detect_in_90_percent_of_simulated_heavy_tailed_runs() {
        // Each round's log-ratio: the change to tell (10%), normal noise (0.03), and in 15% of the rounds a stall
        // on one side or the other that moves it by U(0.1, 0.4).
        let round = |s: &mut u64| {
            let mut d = 1.10f64.ln() + 0.03 * normal(s);
            if uniform(s) < 0.15 {
                let size = 0.1 + 0.3 * uniform(s);
                d += if uniform(s) < 0.5 { size } else { -size };
            }
            d
        };
        let (z, alpha) = z_and_alpha(asked(0.10));
        let margin = (1.10f64 / 1.05).ln();
        // The last look's signed-rank test at the plan's alpha: FAIL when B/A lies above x1.05.
        let fails = |d: &[f64]| {
            let a = vec![1.0; d.len()];
            let b: Vec<f64> = d.iter().map(|x| x.exp()).collect();
            crate::stats::signed_rank_test(&a, &b, 1.05, crate::stats::Alternative::Greater).unwrap().p_value <= alpha
        };
        let mut state = 46;
        let runs = 200;
        let (mut new, mut old) = ((0, 0), (0, 0));
        for _ in 0..runs {
            // The pilot's rounds are the run's first rounds.
            let mut rounds: Vec<f64> = (0..8).map(|_| round(&mut state)).collect();
            let pilot = CheckPilot { values: rounds.clone(), ..p99(0.05, 0.0) };
            let planned = plan(&[pilot], asked(0.10), Cost { scalable: false, ..cost(100_000) }).unwrap();
            let n = planned.rounds_needed.unwrap() as usize;
            let m = are_rounds(&rounds, margin, z, alpha) as usize;
            while rounds.len() < n.max(m) {
                rounds.push(round(&mut state));
            }
            new = (new.0 + usize::from(fails(&rounds[..n])), new.1 + n);
            old = (old.0 + usize::from(fails(&rounds[..m])), old.1 + m);
        }
        let rate = |(f, _): (usize, usize)| f as f64 / f64::from(runs);
        let mean = |(_, n): (usize, usize)| n as f64 / f64::from(runs);
        eprintln!(
            "FAIL rate: Noether {:.3} over {:.1} rounds on average, the robust spread's plan {:.3} over {:.1}",
            rate(new),
            mean(new),
            rate(old),
            mean(old)
        );
        assert!(rate(new) >= 0.85, "Noether's plan FAILed {:.3} of the runs", rate(new));
        assert!(rate(old) < 0.85, "the robust spread's plan FAILed {:.3} of the runs", rate(old));
    }

    #[test]
    fn a_pilot_whose_walsh_averages_cannot_tell_the_change_expects_inconclusive() {
        // A pilot with a stall on each side, and a change of 5.05% against a limit of x1.05: on the log scale it
        // lies 0.0005 beyond the limit, and half the pairs of rounds fall short of it, whatever their number.
        let mut pilot = normal_pilot(8, 0.05);
        pilot.values[1] -= 0.3;
        pilot.values[6] += 0.3;
        let plan = plan(&[pilot], asked(0.0505), cost(180)).unwrap();
        let p = plan.p_prime.unwrap();
        assert!(p > 0.5 && p <= 0.51, "{plan:?}");
        assert_eq!(plan.rounds_needed, None);
        assert_eq!(plan.load_needed_seconds, None);
        let x = plan.detectable.unwrap();
        assert!(x > 0.0505, "the budget tells only a larger change: {x}");
        assert!(
            plan.sentence.contains("on p99 here no number of rounds of 0.5 s suffices: with the pilot's spread"),
            "{}",
            plan.sentence
        );
        assert!(
            plan.sentence.ends_with(&format!(
                "; the budget (3 min) allows 180; expect INCONCLUSIVE unless the change is larger than {}%",
                trim(x * 100.0)
            )),
            "{}",
            plan.sentence
        );
    }

    #[test]
    fn a_change_within_the_limit_cannot_be_planned_for_and_budget_alone_says_its_reach() {
        let within = plan(&[p99(0.05, 0.0)], asked(0.03), cost(180)).unwrap();
        assert_eq!(within.rounds_needed, None);
        assert!(within.sentence.starts_with("a change of 3% is within p99's own limit (x1.05)"), "{}", within.sentence);
        let reach = plan(&[p99(0.05, 0.0)], Asked { detect: None, ..asked(0.1) }, cost(180)).unwrap();
        assert_eq!(reach.round_scale, 1);
        assert!(
            reach.sentence.starts_with(
                "the budget (3 min) allows 180 rounds of 0.5 s; with the pilot's spread on p99 it can tell a change of"
            ),
            "{}",
            reach.sentence
        );
        assert!(plan(&[], asked(0.1), cost(180)).is_none());
    }

    #[test]
    fn a_throughput_check_plans_a_decrease() {
        let t = CheckPilot {
            metric: "throughput".into(),
            values: values(0.02, 0.0),
            sampling_variance: 0.0,
            limit: 0.95f64.ln(),
            lower_is_better: false,
            design: PilotDesign::Paired,
        };
        assert!((margin(&t, 0.10).unwrap() - (0.95f64.ln() - 0.90f64.ln())).abs() < 1e-12);
        let plan = plan(&[t], asked(0.10), cost(180)).unwrap();
        assert!(plan.rounds_needed.is_some());
    }
}
