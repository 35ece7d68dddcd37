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
//! **The rounds.** To FAIL a change `detect` beyond a limit with probability `power`, a one-sided test at level
//! `alpha` needs `n = ((z_alpha + z_power) sigma / margin)^2 / ARE` rounds, where `margin` is the distance on the
//! log scale between the change and the limit, and `ARE` the rank test's efficiency relative to a t-test on normal
//! data (Wilcoxon 3/pi, the sign test of a median 2/pi). `alpha` is the last look's share of the one-sided error
//! over the checks of the instance (Holm's first step), so the plan holds for the run that needs every round. The
//! spread is a robust one (1.4826 x the median absolute deviation), so a stall that hits one pilot round does not
//! decide the plan; the rank tests are robust to it as well.
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

/// The Wilcoxon signed-rank (and Mann-Whitney) test's efficiency relative to a t-test on normal data.
const ARE_RANK: f64 = 3.0 / std::f64::consts::PI;
/// The sign test's (the median of one set).
const ARE_SIGN: f64 = 2.0 / std::f64::consts::PI;

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
    let spreads: Vec<Spread> = checks.iter().filter_map(Spread::of).collect();
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

/// One check's spread, split into the environment's and the sampling's.
#[derive(Debug, Clone, Copy)]
struct Spread {
    env: f64,
    sampling: f64,
    /// The rank test's efficiency and the rounds it needs at the least.
    are: f64,
    sampling_kind: Sampling,
    /// The whole spread at the pilot's length (robust).
    total: f64,
}

impl Spread {
    fn of(c: &CheckPilot) -> Option<Spread> {
        let robust = robust_sd(&c.values)? * upper_sd_factor(c.values.len());
        // Against a stored baseline the difference of two sets carries both sets' spread.
        let (total, are, kind) = match c.design {
            PilotDesign::Paired => (robust, ARE_RANK, Sampling::OneSetOrPaired),
            PilotDesign::Median => (robust, ARE_SIGN, Sampling::OneSetOrPaired),
            PilotDesign::Unpaired => {
                (robust * std::f64::consts::SQRT_2, ARE_RANK, Sampling::Unpaired { baseline: None })
            }
        };
        let sampling = c.sampling_variance.max(0.0).min(total * total);
        Some(Spread { env: total * total - sampling, sampling, are, sampling_kind: kind, total })
    }

    fn sd(&self, k: u32) -> f64 {
        (self.env + self.sampling / f64::from(k)).sqrt()
    }
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
    spread: Spread,
}

impl Choice {
    fn at(
        k: u32,
        spreads: &[Spread],
        checks: &[CheckPilot],
        detect: Option<f64>,
        z: f64,
        alpha: f64,
        cost: Cost,
    ) -> Option<Choice> {
        let allowed = cost.pilot.min(cost.budget_units) + cost.budget_units.saturating_sub(cost.pilot) / k;
        let mut worst: Option<Choice> = None;
        for (i, (s, c)) in spreads.iter().zip(checks).enumerate() {
            let least = fewest_rounds(s.sampling_kind, alpha).unwrap_or(u32::MAX);
            // A pilot round is worth fewer rounds of this length: its value is noisier.
            let pilot_worth = f64::from(cost.pilot) * (s.sd(k) / s.sd(1)).powi(2);
            let later = detect.and_then(|d| margin(c, d)).map(|m| {
                let n = rounds_for(z, s.sd(k), m, s.are);
                let later = (f64::from(n) - pilot_worth).max(0.0).ceil() as u32;
                later.max(least.saturating_sub(cost.pilot))
            });
            let needed = later.map(|l| cost.pilot + l);
            let units = later.map(|l| cost.pilot + l.saturating_mul(k));
            let load = later.map(|l| {
                let t = cost.round_seconds;
                f64::from(cost.sides)
                    * (f64::from(cost.pilot) * (t + cost.overhead_seconds)
                        + f64::from(l) * (f64::from(k) * t + cost.overhead_seconds))
            });
            // Fewer rounds than any verdict needs at the last look's level tell no change at all.
            let worth = pilot_worth + f64::from(allowed.saturating_sub(cost.pilot));
            let reach = z * s.sd(k) / (worth * s.are).sqrt();
            let detectable = if allowed < least { f64::INFINITY } else { change_at(c, reach) };
            let this = Choice {
                scale: k,
                check: i,
                rounds_needed: needed,
                units_needed: units,
                load,
                rounds_allowed: allowed,
                detectable,
                spread: *s,
            };
            let more = match &worst {
                None => true,
                Some(w) => match (this.load, w.load) {
                    (Some(a), Some(b)) => a > b,
                    (Some(_), None) => true,
                    (None, Some(_)) => false,
                    (None, None) => this.detectable > w.detectable,
                },
            };
            if more {
                worst = Some(this);
            }
        }
        worst
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
            spread: self.spread.total,
            sampling_spread: self.spread.sampling.sqrt(),
            sentence: String::new(),
        };
        PowerPlan { sentence: sentence(&plan, check), ..plan }
    }
}

/// The rounds a one-sided rank test needs to reach `margin` with a spread `sd`.
fn rounds_for(z: f64, sd: f64, margin: f64, are: f64) -> u32 {
    let n = (z * sd / margin).powi(2) / are;
    if n.is_finite() {
        n.ceil().clamp(1.0, f64::from(u32::MAX / 2)) as u32
    } else {
        u32::MAX / 2
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
    fn the_rounds_follow_from_the_spread_the_margin_and_the_last_looks_share() {
        let plan = plan(&[p99(0.05, 0.0)], asked(0.10), cost(180)).unwrap();
        // One-sided 2.5% at the last look, 90% power; margin ln(1.10 / 1.05); Wilcoxon's 3/pi.
        let z = normal_quantile(0.975) + normal_quantile(0.90);
        let margin = (1.10f64 / 1.05).ln();
        let sd = 0.05 * upper_sd_factor(8);
        // The pilot's 8 rounds count as 8 of the same length.
        let expected = ((z * sd / margin).powi(2) / ARE_RANK).ceil() as u32;
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
        // what a longer round saves is each round's overhead (0.1 s of drain per side here).
        let noisy = p99(0.10, 0.13);
        let costly = Cost { overhead_seconds: 0.1, ..cost(180) };
        let plan = plan(std::slice::from_ref(&noisy), asked(0.10), costly).unwrap();
        assert!(plan.round_scale > 1, "{plan:?}");
        assert_eq!(plan.round_seconds, 0.5 * f64::from(plan.round_scale));
        let fixed = super::plan(std::slice::from_ref(&noisy), asked(0.10), Cost { scalable: false, ..costly }).unwrap();
        assert_eq!(fixed.round_scale, 1);
        assert!(plan.load_needed_seconds.unwrap() < fixed.load_needed_seconds.unwrap(), "{plan:?} vs {fixed:?}");
        assert!(plan.rounds_needed.unwrap() < fixed.rounds_needed.unwrap());
        assert!(plan.sentence.contains("x the pilot's"), "{}", plan.sentence);
        // Without an overhead, or where the environment's share dominates, the rounds keep their length.
        assert_eq!(super::plan(std::slice::from_ref(&noisy), asked(0.10), cost(180)).unwrap().round_scale, 1);
        assert_eq!(super::plan(&[p99(0.10, 0.02)], asked(0.10), costly).unwrap().round_scale, 1);
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

    #[test]
    fn a_stall_in_one_pilot_round_does_not_decide_the_plan() {
        let clean = p99(0.05, 0.0);
        let mut stalled = clean.clone();
        // One round's p99 taken by a 60 ms stall: 3x the other side's.
        stalled.values[3] = 3.0f64.ln();
        let a = plan(&[clean], asked(0.10), cost(180)).unwrap().rounds_needed.unwrap();
        let b = plan(&[stalled.clone()], asked(0.10), cost(180)).unwrap().rounds_needed.unwrap();
        assert!(f64::from(b) <= f64::from(a) * 1.5, "robust spread: {a} clean, {b} with the stall");
        // A standard deviation would have asked for far more.
        let m = stalled.values.iter().sum::<f64>() / 8.0;
        let sd = (stalled.values.iter().map(|v| (v - m).powi(2)).sum::<f64>() / 7.0).sqrt();
        assert!(sd > 0.3, "{sd}");
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
