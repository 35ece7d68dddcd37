//! `loadgate_results::stats` against reference values, and properties that hold by construction.
//!
//! Reference values come from scipy 1.17.1 and statsmodels 0.15.0 (Python 3, a venv); the call that produced
//! each is named beside it. Hodges-Lehmann estimates and intervals were computed by the textbook definition
//! (median of the sorted Walsh averages or pairwise differences of `np.log` values; bounds at order statistics
//! `k` and `N + 1 - k`, `k` the largest with `P(X <= k-1) <= (1 - conf) / 2`), with `P(X <= c)` taken from
//! `scipy.stats.wilcoxon(d, alternative='less', method='exact').pvalue` / `scipy.stats.mannwhitneyu(x, y,
//! alternative='less', method='exact').pvalue` on samples built to have statistic `c` (exact sizes), or
//! `scipy.stats.norm.cdf((c + 0.5 - N/2) / sd)` above 50.
//!
//! The data sets are per-repetition p99 latencies in milliseconds (seeded lognormal noise, numpy
//! `default_rng(11)`), rounded to 4 decimals, with no ties in `|ln b - ln a|` nor across samples.

use loadgate_results::stats::{
    self, holm, holm_alphas, median, median_ci, min_repetitions, rank_sum_counts, rank_sum_test, ratio, sign_test,
    signed_rank_counts, signed_rank_test, summary, verdict, verdicts, Alternative, Check, Design, Goal, Lean, Method,
    Sample, StatsError, Verdict3, EXACT_MAX,
};

const P5_A: [f64; 5] = [2.031, 2.112, 1.987, 2.245, 2.068];
const P5_B: [f64; 5] = [2.214, 2.301, 2.15, 2.398, 2.297];
const P8_A: [f64; 8] = [2.0523, 2.1678, 2.3694, 1.895, 1.9813, 1.8895, 2.0933, 2.0166];
const P8_B: [f64; 8] = [2.2628, 2.5052, 2.4753, 2.134, 2.0804, 1.9943, 2.3567, 2.1441];
const P12_A: [f64; 12] = [1.6777, 1.9022, 1.8968, 1.7323, 1.7408, 2.0223, 2.2611, 1.88, 1.8202, 2.0269, 2.0398, 1.9483];
const P12_B: [f64; 12] =
    [1.7104, 1.8393, 2.0294, 1.8557, 1.7906, 2.0723, 2.2964, 1.9149, 1.929, 2.1588, 2.0785, 2.0004];
const P20_A: [f64; 20] = [
    1.8925, 2.2457, 1.843, 2.0306, 2.1522, 1.7464, 2.1042, 1.9029, 2.1164, 1.9865, 2.369, 2.0144, 1.9311, 2.1759,
    2.3786, 2.4227, 1.671, 2.2042, 2.0942, 1.9692,
];
const P20_B: [f64; 20] = [
    2.0988, 2.4066, 2.125, 2.1899, 2.2616, 1.9392, 2.3019, 2.2573, 2.2979, 1.9999, 2.5526, 2.3747, 2.3023, 2.3479,
    2.4611, 2.5197, 1.9558, 2.5957, 2.2487, 2.1375,
];
const P60_A: [f64; 60] = [
    2.1238, 1.873, 1.8705, 1.9834, 1.9926, 2.1828, 1.9926, 2.1557, 1.9346, 2.0314, 1.564, 1.6867, 2.2526, 1.8879,
    2.0465, 2.112, 2.1786, 2.2888, 2.1151, 2.0064, 1.8958, 1.7798, 1.922, 1.8406, 1.9202, 1.9971, 2.1102, 1.9427,
    1.6667, 1.9781, 2.0847, 2.167, 2.1699, 1.8471, 1.8005, 2.4723, 2.2696, 2.4723, 2.4366, 1.8819, 2.0504, 2.086,
    2.1208, 1.9696, 2.0526, 1.9732, 1.6854, 1.8821, 1.7734, 1.9689, 1.9565, 2.2367, 2.1691, 2.1314, 2.048, 1.9061,
    1.921, 1.9938, 1.879, 2.0981,
];
const P60_B: [f64; 60] = [
    2.2676, 1.8833, 1.9554, 2.0144, 2.1272, 2.3183, 2.1679, 2.4244, 1.9886, 2.216, 1.7443, 1.8558, 2.3466, 1.9567,
    2.2753, 2.3559, 2.4554, 2.2356, 2.3676, 2.1568, 1.9802, 1.9191, 2.0947, 1.8066, 2.0184, 2.0796, 2.0778, 2.1057,
    1.7507, 2.0132, 2.187, 2.3104, 2.1015, 1.9288, 1.9689, 2.6171, 2.2763, 2.5255, 2.6353, 1.9228, 2.2609, 2.2083,
    2.2405, 2.2532, 2.076, 2.0919, 1.8918, 2.0864, 1.9323, 2.1485, 1.9753, 2.2527, 2.2342, 2.1838, 2.0673, 2.206,
    1.9774, 1.97, 1.9851, 2.1589,
];
const U7X9_A: [f64; 7] = [2.0245, 1.8249, 2.0646, 2.6725, 1.8055, 2.0548, 1.9509];
const U7X9_B: [f64; 9] = [2.3357, 1.9897, 2.0977, 2.3862, 2.2929, 2.6215, 2.1739, 2.3323, 2.9036];
const U12X10_A: [f64; 12] =
    [1.8812, 1.8605, 1.9944, 1.9929, 2.1397, 2.0208, 1.8825, 2.0341, 2.47, 2.2142, 1.6009, 1.9774];
const U12X10_B: [f64; 10] = [1.8648, 2.1021, 1.9725, 2.3344, 2.1547, 2.1477, 2.0301, 1.9936, 2.0552, 2.2184];
const U30X25_A: [f64; 30] = [
    2.0874, 1.9446, 2.2148, 2.031, 1.9876, 1.8773, 1.9115, 1.9008, 1.5996, 2.1695, 2.0927, 1.966, 2.1746, 2.0713,
    2.0603, 1.6408, 1.9631, 2.087, 2.2749, 2.3172, 2.2417, 1.8225, 1.6775, 2.0934, 2.0044, 2.1601, 1.98, 2.0355,
    1.7738, 2.073,
];
const U30X25_B: [f64; 25] = [
    2.0845, 2.2213, 2.2409, 2.1398, 2.2154, 2.1576, 2.2953, 2.2485, 2.0675, 2.0608, 2.4833, 2.1425, 2.3384, 2.2291,
    2.0647, 2.0344, 2.1809, 2.2048, 2.2688, 1.9518, 2.0596, 2.1437, 2.4551, 1.7884, 2.2372,
];
const U60X55_A: [f64; 60] = [
    1.9154, 2.0702, 1.9228, 2.0592, 2.2667, 2.0575, 2.0706, 2.0606, 1.8835, 2.0888, 1.9669, 1.8743, 1.9938, 1.964,
    2.1243, 1.9932, 1.9171, 2.2471, 2.1646, 2.2138, 2.0996, 1.9825, 1.9341, 1.9558, 2.1575, 2.018, 1.7763, 1.9937,
    1.7858, 2.0267, 1.8164, 1.8077, 2.0191, 1.9875, 1.751, 2.1234, 2.3778, 1.7765, 2.3134, 1.8929, 1.9225, 1.9716,
    1.7816, 2.219, 2.0804, 1.8833, 1.9562, 1.7715, 1.9451, 2.1555, 1.7436, 1.9314, 2.0236, 2.175, 2.228, 1.9282, 1.885,
    2.0734, 1.9427, 1.951,
];
const U60X55_B: [f64; 55] = [
    2.2459, 2.3582, 2.1043, 2.0286, 2.1563, 1.7713, 2.057, 1.8924, 2.4939, 2.1822, 2.0834, 2.0282, 1.6846, 2.1809,
    2.3468, 1.9433, 2.1758, 2.1826, 1.82, 2.2201, 2.2958, 2.098, 2.0496, 2.194, 1.8211, 2.0754, 2.2413, 1.8651, 2.2302,
    1.9922, 1.7441, 2.0426, 1.9059, 2.1133, 1.8756, 2.2406, 1.9418, 2.1196, 1.9644, 2.0075, 2.2661, 2.0958, 1.9959,
    1.8637, 2.2603, 2.1844, 2.0069, 2.1005, 1.8971, 1.8994, 1.9283, 2.1191, 2.1093, 1.9408, 2.1852,
];
const M9: [f64; 9] = [102.7549, 96.6569, 105.3951, 92.3089, 93.9323, 99.6001, 94.6771, 102.8495, 83.8148];
const M25: [f64; 25] = [
    109.5579, 87.8604, 93.4482, 82.7747, 100.8767, 107.9062, 105.7398, 103.2563, 81.3013, 87.8526, 90.7057, 86.5224,
    106.2874, 96.7689, 94.7677, 99.7464, 86.3764, 86.751, 86.9846, 99.847, 98.3012, 100.6537, 105.8174, 82.9424,
    89.8218,
];

#[track_caller]
fn assert_close(got: f64, want: f64, rel: f64, what: &str) {
    assert!((got - want).abs() <= rel * want.abs().max(f64::MIN_POSITIVE), "{what}: got {got}, reference {want}");
}

fn signed_rank_cdf(n: usize, c: usize) -> f64 {
    let counts = signed_rank_counts(n).expect("exact size");
    counts[..=c].iter().sum::<u64>() as f64 / 2f64.powi(n as i32)
}

fn rank_sum_cdf(m: usize, n: usize, c: usize) -> f64 {
    let counts = rank_sum_counts(m, n).expect("exact sizes");
    let total: u128 = counts.iter().sum();
    counts[..=c].iter().sum::<u128>() as f64 / total as f64
}

// ---- Null distributions ----------------------------------------------------------------------------------------

#[test]
fn signed_rank_null_matches_scipy() {
    // scipy.stats.wilcoxon(d, alternative='less', method='exact').pvalue with d = +-1..n signed so that T+ = c.
    let cases = [
        (10, 8, 0.0244140625),
        (10, 9, 0.0322265625),
        (5, 0, 0.03125),
        (6, 0, 0.015625),
        (20, 52, 0.02422046661376953),
        (50, 434, 0.024723203400300875),
    ];
    for (n, c, want) in cases {
        assert_close(signed_rank_cdf(n, c), want, 1e-12, &format!("P(T+ <= {c}), n = {n}"));
    }
}

#[test]
fn rank_sum_null_matches_scipy() {
    // scipy.stats.mannwhitneyu(x, y, alternative='less', method='exact').pvalue with |x| = m, |y| = n built so
    // that U = #{x > y} = c.
    let cases = [
        (10, 10, 23, 0.021628526272489117),
        (10, 10, 24, 0.02621295113555175),
        (4, 4, 0, 0.014285714285714285),
        (3, 3, 0, 0.05),
        (7, 9, 12, 0.020891608391608394),
        (30, 25, 250, 0.01729172506623885),
        (50, 50, 1000, 0.04272560775913553),
    ];
    for (m, n, c, want) in cases {
        assert_close(rank_sum_cdf(m, n, c), want, 1e-12, &format!("P(U <= {c}), m = {m}, n = {n}"));
    }
}

#[test]
fn published_critical_values() {
    // Standard tables (e.g. Hollander & Wolfe): two-sided 5%, the largest c with 2 P(X <= c) <= 0.05 is
    // T = 8 for the signed-rank test with n = 10 and U = 23 for Mann-Whitney with n1 = n2 = 10.
    let critical = |cdf: &dyn Fn(usize) -> f64| (0..).take_while(|&c| 2.0 * cdf(c) <= 0.05).last();
    assert_eq!(critical(&|c| signed_rank_cdf(10, c)), Some(8));
    assert_eq!(critical(&|c| rank_sum_cdf(10, 10, c)), Some(23));
    // n = 5 pairs: no two-sided 5% test exists (2 / 2^5 = 0.0625).
    assert_eq!(critical(&|c| signed_rank_cdf(5, c)), None);
}

#[test]
fn exact_null_distributions_sum_to_one_and_are_symmetric() {
    for n in 0..=EXACT_MAX {
        let counts = signed_rank_counts(n).expect("exact size");
        assert_eq!(counts.len(), n * (n + 1) / 2 + 1);
        assert_eq!(counts.iter().sum::<u64>(), 1u64 << n, "n = {n}");
        assert!(counts.iter().eq(counts.iter().rev()), "n = {n} is not symmetric");
    }
    assert_eq!(signed_rank_counts(EXACT_MAX + 1), None);
    let choose = |n: u128, k: u128| (1..=k).fold(1u128, |c, i| c * (n - k + i) / i);
    let mut sizes: Vec<(usize, usize)> = (0..=12).flat_map(|m| (0..=12).map(move |n| (m, n))).collect();
    sizes.extend([(1, 50), (50, 1), (30, 25), (49, 50), (50, 50)]);
    for (m, n) in sizes {
        let counts = rank_sum_counts(m, n).expect("exact sizes");
        assert_eq!(counts.len(), m * n + 1);
        assert_eq!(counts.iter().sum::<u128>(), choose((m + n) as u128, m as u128), "m = {m}, n = {n}");
        assert!(counts.iter().eq(counts.iter().rev()), "m = {m}, n = {n} is not symmetric");
        assert_eq!(Some(&counts), rank_sum_counts(n, m).as_ref());
    }
    assert_eq!(rank_sum_counts(EXACT_MAX + 1, 3), None);
}

// ---- Median and its order-statistic interval -------------------------------------------------------------------

/// (values, confidence, median, lo, hi, achieved, k, reached)
type MedianCase<'a> = (&'a [f64], f64, f64, f64, f64, f64, usize, bool);

#[test]
fn median_interval_matches_scipy_binom() {
    // k = largest with scipy.stats.binom.cdf(k-1, n, 0.5) <= (1 - conf) / 2, achieved = 1 - 2 binom.cdf(k-1, n,
    // 0.5); bounds x(k), x(n+1-k). When no k qualifies, k = 1 and the confidence is not reached.
    let cases: [MedianCase<'_>; 12] = [
        (&M9, 0.95, 96.6569, 92.3089, 102.8495, 0.9609375, 2, true),
        (&M9, 0.90, 96.6569, 92.3089, 102.8495, 0.9609375, 2, true),
        (&M9, 0.99, 96.6569, 83.8148, 105.3951, 0.99609375, 1, true),
        (&M25, 0.95, 94.7677, 87.8526, 100.6537, 0.9567147493362427, 8, true),
        (&M25, 0.90, 94.7677, 87.8526, 100.6537, 0.9567147493362427, 8, true),
        (&M25, 0.99, 94.7677, 86.751, 103.2563, 0.9959226846694946, 6, true),
        (&P5_A, 0.95, 2.068, 1.987, 2.245, 0.9375, 1, false),
        (&P5_A, 0.90, 2.068, 1.987, 2.245, 0.9375, 1, true),
        (&P5_A, 0.99, 2.068, 1.987, 2.245, 0.9375, 1, false),
        (&P8_A, 0.95, 2.0344499999999996, 1.8895, 2.3694, 0.9921875, 1, true),
        (&P8_A, 0.90, 2.0344499999999996, 1.895, 2.1678, 0.9296875, 2, true),
        (&P8_A, 0.99, 2.0344499999999996, 1.8895, 2.3694, 0.9921875, 1, true),
    ];
    for (values, conf, med, lo, hi, achieved, k, reached) in cases {
        let what = format!("{} values at {conf}", values.len());
        let m = median_ci(values, conf).expect("valid");
        assert_eq!(m.median, med, "{what}");
        assert_eq!(median(values), Ok(med));
        assert_eq!((m.interval.lo, m.interval.hi), (lo, hi), "{what}");
        assert_close(m.interval.confidence, achieved, 1e-12, &what);
        assert_eq!(m.interval.ranks, (k, values.len() + 1 - k), "{what}");
        assert_eq!(m.interval.reached, reached, "{what}");
        assert!(m.interval.exact);
        assert_eq!(m.n, values.len());
    }
}

#[test]
fn median_interval_small_and_large_n() {
    // Coverage of [min, max]: 1 - 2 scipy.stats.binom.cdf(0, n, 0.5).
    let widest: [(u32, f64); 8] =
        [(1, 0.0), (2, 0.5), (3, 0.75), (4, 0.875), (5, 0.9375), (6, 0.96875), (7, 0.984375), (10, 0.998046875)];
    for (n, coverage) in widest {
        let values: Vec<f64> = (1..=n).map(f64::from).collect();
        let m = median_ci(&values, 0.999).expect("valid");
        assert_eq!((m.interval.lo, m.interval.hi), (1.0, f64::from(n)));
        assert_close(
            m.interval.confidence.max(f64::MIN_POSITIVE),
            coverage.max(f64::MIN_POSITIVE),
            1e-12,
            "[min, max]",
        );
        assert!(!m.interval.reached);
        // 95% is reached from 6 values on, 90% from 5 (min_repetitions agrees below).
        assert_eq!(median_ci(&values, 0.95).expect("valid").interval.reached, n >= 6, "n = {n}");
        assert_eq!(median_ci(&values, 0.90).expect("valid").interval.reached, n >= 5, "n = {n}");
    }
    // k and achieved coverage from scipy.stats.binom for n above the integer path (120) and large.
    let large: [(u32, f64, u32, f64); 8] = [
        (120, 0.95, 49, 0.9646763174622304),
        (120, 0.99, 46, 0.9921534068775603),
        (121, 0.95, 50, 0.9549482602742639),
        (121, 0.99, 46, 0.9938491918500046),
        (200, 0.95, 86, 0.9599628083866004),
        (200, 0.99, 82, 0.9912774987525529),
        (1000, 0.95, 469, 0.9537088026395019),
        (1000, 0.99, 459, 0.9913600509977395),
    ];
    for (n, conf, k, achieved) in large {
        let values: Vec<f64> = (1..=n).rev().map(|i| f64::from(i) * 0.5).collect();
        let m = median_ci(&values, conf).expect("valid");
        assert_eq!(m.interval.ranks.0, k as usize, "n = {n} at {conf}");
        assert_eq!(m.interval.lo, f64::from(k) * 0.5);
        assert_close(m.interval.confidence, achieved, 1e-10, &format!("n = {n} at {conf}"));
    }
}

#[test]
fn sign_test_matches_scipy_binomtest() {
    // scipy.stats.binomtest(#{x > m0}, n, 0.5, alternative=...).pvalue: (two-sided, less, greater).
    let cases: [(&[f64], f64, f64, [f64; 3]); 12] = [
        (&M9, 95.0, 5.0, [1.0, 0.74609375, 0.5]),
        (&M9, 100.0, 3.0, [0.5078125, 0.25390625, 0.91015625]),
        (&M9, 2.0, 9.0, [0.00390625, 1.0, 0.001953125]),
        (&M25, 95.0, 12.0, [1.0, 0.5, 0.6549810171127319]),
        (&M25, 100.0, 8.0, [0.10775214433670044, 0.05387607216835022, 0.9783573746681213]),
        (&M25, 2.0, 25.0, [5.960464477539063e-08, 1.0, 2.9802322387695312e-08]),
        (&P5_A, 95.0, 0.0, [0.0625, 0.03125, 1.0]),
        (&P5_A, 100.0, 0.0, [0.0625, 0.03125, 1.0]),
        (&P5_A, 2.0, 4.0, [0.375, 0.96875, 0.1875]),
        (&P8_A, 95.0, 0.0, [0.0078125, 0.00390625, 1.0]),
        (&P8_A, 100.0, 0.0, [0.0078125, 0.00390625, 1.0]),
        (&P8_A, 2.0, 5.0, [0.7265625, 0.85546875, 0.36328125]),
    ];
    for (values, m0, above, [two, less, greater]) in cases {
        let what = format!("{} values against {m0}", values.len());
        for (alt, want) in [(Alternative::TwoSided, two), (Alternative::Less, less), (Alternative::Greater, greater)] {
            let t = sign_test(values, m0, alt).expect("valid");
            assert_close(t.p_value, want, 1e-12, &format!("{what}, {alt:?}"));
            assert_eq!(t.statistic, above);
            assert!(t.exact);
        }
    }
}

// ---- Hodges-Lehmann ratios ------------------------------------------------------------------------------------

/// (baseline, candidate, confidence, estimate, lo, hi, achieved, k)
type HlCase<'a> = (&'a [f64], &'a [f64], f64, f64, f64, f64, f64, usize);

#[test]
fn paired_hodges_lehmann_matches_reference() {
    // Textbook HL of d = np.log(b) - np.log(a) (see the file's doc); k from scipy.stats.wilcoxon exact p-values
    // (n <= 50) or scipy.stats.norm.cdf with continuity correction (P60).
    let cases: [HlCase<'_>; 10] = [
        (&P5_A, &P5_B, 0.95, 1.0892351484177085, 1.06815144766147, 1.1107350096711799, 0.9375, 1),
        (&P5_A, &P5_B, 0.90, 1.0892351484177085, 1.06815144766147, 1.1107350096711799, 0.9375, 1),
        (&P8_A, &P8_B, 0.95, 1.08874094726342, 1.050065827449839, 1.1287928711936923, 0.9609375, 4),
        (&P8_A, &P8_B, 0.90, 1.08874094726342, 1.053919319890986, 1.1259756911631125, 0.921875, 6),
        (&P12_A, &P12_B, 0.95, 1.0281406501920614, 1.017290771613601, 1.0481020374028913, 0.95751953125, 14),
        (&P12_A, &P12_B, 0.90, 1.0281406501920614, 1.0187681185466004, 1.0457323687582125, 0.90771484375, 18),
        (&P20_A, &P20_B, 0.95, 1.0972485126552791, 1.0750434997127267, 1.1305649306622105, 0.9515590667724609, 53),
        (&P20_A, &P20_B, 0.90, 1.0972485126552791, 1.0782741255011514, 1.1271511127081741, 0.9026927947998047, 61),
        (&P60_A, &P60_B, 0.95, 1.0560483165690377, 1.0441930802368977, 1.0684029676807214, 0.950222052567406, 649),
        (&P60_A, &P60_B, 0.90, 1.0560483165690377, 1.0460970664824154, 1.0666185987871564, 0.9000958060758072, 692),
    ];
    for (a, b, conf, est, lo, hi, achieved, k) in cases {
        let what = format!("{} pairs at {conf}", a.len());
        let r = ratio(a, b, Design::Paired, conf).expect("valid");
        assert_close(r.ratio, est, 1e-12, &what);
        assert_close(r.interval.lo, lo, 1e-12, &what);
        assert_close(r.interval.hi, hi, 1e-12, &what);
        assert_close(r.interval.confidence, achieved, 1e-10, &what);
        let count = a.len() * (a.len() + 1) / 2;
        assert_eq!((r.interval.ranks, r.interval.count), ((k, count + 1 - k), count), "{what}");
        assert_eq!(r.interval.exact, a.len() <= EXACT_MAX, "{what}");
        assert_eq!(r.interval.reached, achieved >= conf, "{what}");
        assert_eq!((r.n_baseline, r.n_candidate, r.design), (a.len(), b.len(), Design::Paired));
    }
}

#[test]
fn unpaired_hodges_lehmann_matches_reference() {
    // Textbook HL of np.log(b_j) - np.log(a_i); k from scipy.stats.mannwhitneyu exact p-values (sizes <= 50) or
    // scipy.stats.norm.cdf with continuity correction (U60x55).
    let cases: [HlCase<'_>; 10] = [
        (&U7X9_A, &U7X9_B, 0.95, 1.1520375401333662, 1.0198882567020349, 1.293658266408197, 0.9582167832167832, 13),
        (&U7X9_A, &U7X9_B, 0.90, 1.1520375401333662, 1.0529400368110047, 1.2780426324730123, 0.9092657342657342, 16),
        (&U12X10_A, &U12X10_B, 0.95, 1.0512634717890224, 0.9760985748218528, 1.1174250478418033, 0.957429567336688, 30),
        (&U12X10_A, &U12X10_B, 0.90, 1.0512634717890224, 0.9897636609965377, 1.0977830562153603, 0.906910427034266, 35),
        (&U30X25_A, &U30X25_B, 0.95, 1.07531284642551, 1.033526290400386, 1.1214649033570703, 0.9516433194619193, 259),
        (&U30X25_A, &U30X25_B, 0.90, 1.07531284642551, 1.0399620834164838, 1.1121033725803233, 0.9003828569631481, 278),
        (
            &U60X55_A,
            &U60X55_B,
            0.95,
            1.0370292414711455,
            1.0048319439282112,
            1.0669888437612463,
            0.950286772012465,
            1300,
        ),
        (
            &U60X55_A,
            &U60X55_B,
            0.90,
            1.0370292414711455,
            1.0093892073532318,
            1.0627309598918433,
            0.9008284846133852,
            1356,
        ),
        // The paired data of P8 analysed as if unpaired: the round effect stays in, the interval is much wider.
        (&P8_A, &P8_B, 0.95, 1.0846508066503628, 0.9946399932472355, 1.1967706492141592, 0.9501165501165502, 14),
        (&P8_A, &P8_B, 0.90, 1.0846508066503628, 1.0136919553671493, 1.1894715590773735, 0.917016317016317, 16),
    ];
    for (a, b, conf, est, lo, hi, achieved, k) in cases {
        let what = format!("{} x {} at {conf}", a.len(), b.len());
        let r = ratio(a, b, Design::Unpaired, conf).expect("valid");
        assert_close(r.ratio, est, 1e-12, &what);
        assert_close(r.interval.lo, lo, 1e-12, &what);
        assert_close(r.interval.hi, hi, 1e-12, &what);
        assert_close(r.interval.confidence, achieved, 1e-10, &what);
        let count = a.len() * b.len();
        assert_eq!((r.interval.ranks, r.interval.count), ((k, count + 1 - k), count), "{what}");
        assert_eq!(r.interval.exact, a.len() <= EXACT_MAX && b.len() <= EXACT_MAX, "{what}");
        assert!(r.interval.reached);
    }
}

/// (baseline, candidate, null ratio, statistic, [two-sided, less, greater])
type TestCase<'a> = (&'a [f64], &'a [f64], f64, f64, [f64; 3]);

#[test]
fn signed_rank_test_matches_scipy_wilcoxon() {
    // scipy.stats.wilcoxon(np.log(b) - np.log(a) - np.log(r), alternative=..., method='exact') (n <= 50), or
    // method='asymptotic', correction=True for P60. Statistic: T+.
    let cases: [TestCase<'_>; 10] = [
        (&P5_A, &P5_B, 1.0, 15.0, [0.0625, 1.0, 0.03125]),
        (&P5_A, &P5_B, 1.1, 3.0, [0.3125, 0.15625, 0.90625]),
        (&P8_A, &P8_B, 1.0, 36.0, [0.0078125, 1.0, 0.00390625]),
        (&P8_A, &P8_B, 1.1, 13.0, [0.546875, 0.2734375, 0.76953125]),
        (&P12_A, &P12_B, 1.0, 70.0, [0.01220703125, 0.995361328125, 0.006103515625]),
        (&P12_A, &P12_B, 1.1, 0.0, [0.00048828125, 0.000244140625, 1.0]),
        (&P20_A, &P20_B, 1.0, 210.0, [1.9073486328125e-06, 1.0, 9.5367431640625e-07]),
        (&P20_A, &P20_B, 1.1, 102.0, [0.9272785186767578, 0.4636392593383789, 0.5508413314819336]),
        (&P60_A, &P60_B, 1.0, 1770.0, [3.1646591644293055e-10, 0.9999999998491002, 1.5823295822146527e-10]),
        (&P60_A, &P60_B, 1.1, 171.0, [4.416021271483679e-08, 2.2080106357418394e-08, 0.999999978819293]),
    ];
    for (a, b, r, statistic, [two, less, greater]) in cases {
        let what = format!("{} pairs against {r}", a.len());
        for (alt, want) in [(Alternative::TwoSided, two), (Alternative::Less, less), (Alternative::Greater, greater)] {
            let t = signed_rank_test(a, b, r, alt).expect("valid");
            let rel = if t.exact { 1e-12 } else { 1e-9 };
            assert_close(t.p_value, want, rel, &format!("{what}, {alt:?}"));
            assert_eq!(t.statistic, statistic, "{what}");
            assert_eq!(t.exact, a.len() <= EXACT_MAX);
        }
    }
}

#[test]
fn rank_sum_test_matches_scipy_mannwhitneyu() {
    // scipy.stats.mannwhitneyu(b / r, a, alternative=..., method='exact') (sizes <= 50), or
    // method='asymptotic' (default use_continuity=True) for U60x55. Statistic: U of the candidate.
    let cases: [TestCase<'_>; 10] = [
        (&U7X9_A, &U7X9_B, 1.0, 52.0, [0.03111888111888112, 0.988548951048951, 0.01555944055944056]),
        (&U7X9_A, &U7X9_B, 1.1, 42.0, [0.29912587412587416, 0.8738636363636363, 0.14956293706293708]),
        (&U12X10_A, &U12X10_B, 1.0, 80.0, [0.20296731132644447, 0.9099027907077443, 0.10148365566322223]),
        (&U12X10_A, &U12X10_B, 1.1, 34.0, [0.09308957296573396, 0.04654478648286698, 0.9597894365696223]),
        (&U30X25_A, &U30X25_B, 1.0, 568.0, [0.0008644024107883637, 0.9995957261622386, 0.00043220120539418186]),
        (&U30X25_A, &U30X25_B, 1.1, 301.0, [0.21598951251487003, 0.10799475625743502, 0.8951234496498163]),
        (&U60X55_A, &U60X55_B, 1.0, 2050.0, [0.025301338230646744, 0.9875312495393639, 0.012650669115323372]),
        (&U60X55_A, &U60X55_B, 1.1, 950.0, [8.986314518740239e-05, 4.4931572593701194e-05, 0.9999561000772944]),
        (&P8_A, &P8_B, 1.0, 50.0, [0.06495726495726495, 0.975058275058275, 0.032478632478632474]),
        (&P8_A, &P8_B, 1.1, 30.0, [0.8784770784770783, 0.43923853923853917, 0.6007770007770008]),
    ];
    for (a, b, r, statistic, [two, less, greater]) in cases {
        let what = format!("{} x {} against {r}", a.len(), b.len());
        for (alt, want) in [(Alternative::TwoSided, two), (Alternative::Less, less), (Alternative::Greater, greater)] {
            let t = rank_sum_test(a, b, r, alt).expect("valid");
            let rel = if t.exact { 1e-12 } else { 1e-9 };
            assert_close(t.p_value, want, rel, &format!("{what}, {alt:?}"));
            assert_eq!(t.statistic, statistic, "{what}");
        }
    }
}

// ---- Holm ------------------------------------------------------------------------------------------------------

/// (p-values, alpha, rejected, adjusted p-values)
type HolmCase<'a> = (&'a [f64], f64, &'a [bool], &'a [f64]);

#[test]
fn holm_matches_statsmodels() {
    // statsmodels.stats.multitest.multipletests(p, alpha, method='holm'): (reject, pvals_corrected).
    let cases: [HolmCase<'_>; 3] = [
        (&[0.01, 0.04, 0.03, 0.005], 0.05, &[true, false, false, true], &[0.03, 0.06, 0.06, 0.02]),
        (&[0.2, 0.001, 0.012, 0.04, 0.013], 0.05, &[false, true, true, false, true], &[0.2, 0.005, 0.048, 0.08, 0.048]),
        (&[0.5, 0.5, 0.01], 0.10, &[false, false, true], &[1.0, 1.0, 0.03]),
    ];
    for (p, alpha, rejected, adjusted) in cases {
        let h = holm(p, alpha).expect("valid");
        assert_eq!(h.iter().map(|d| d.rejected).collect::<Vec<_>>(), rejected, "{p:?}");
        for (d, &want) in h.iter().zip(adjusted) {
            assert_close(d.adjusted_p, want, 1e-12, &format!("{p:?}"));
        }
    }
    let h = holm(&[0.01, 0.04, 0.03, 0.005], 0.05).expect("valid");
    assert_eq!(h.iter().map(|d| d.step).collect::<Vec<_>>(), [2, 4, 3, 1]);
    assert_eq!(h.iter().map(|d| d.alpha).collect::<Vec<_>>(), [0.05 / 3.0, 0.05, 0.05 / 2.0, 0.05 / 4.0]);
    assert_eq!(holm_alphas(0.05, 4), Ok(vec![0.05 / 4.0, 0.05 / 3.0, 0.05 / 2.0, 0.05]));
    assert_eq!(holm_alphas(0.05, 0), Ok(vec![]));
    assert_eq!(holm(&[], 0.05), Ok(vec![]));
}

// ---- Verdicts --------------------------------------------------------------------------------------------------

fn absolute(values: &[f64], goal: Goal, limit: f64) -> Check<'_> {
    Check::Absolute { values, goal, limit }
}

fn paired<'a>(a: &'a [f64], b: &'a [f64], goal: Goal, limit: f64) -> Check<'a> {
    Check::Relative { baseline: a, candidate: b, design: Design::Paired, goal, limit }
}

#[test]
fn absolute_verdicts() {
    // M9's 95% median interval is [92.3089, 102.8495] (scipy.stats.binom, above); its 50% interval (k = 3,
    // achieved 0.8203125) is [93.9323, 102.7549].
    let v = verdict(&absolute(&M9, Goal::Below, 110.0), 0.95).expect("valid");
    assert_eq!(v.verdict, Verdict3::Pass);
    assert_eq!((v.interval.lo, v.interval.hi, v.estimate, v.limit), (92.3089, 102.8495, 96.6569, 110.0));
    assert_eq!(v.method, Method::Median);
    assert_eq!(v.sample.n, 9);
    assert_eq!(v.baseline, None);
    assert_eq!(v.family_size, 1);
    // numpy: np.std(M9, ddof=1) / np.mean(M9)
    assert_close(v.sample.cv.expect("cv"), 0.068777677548934, 1e-12, "cv");
    assert_close(v.sample.mean, 96.88773333333333, 1e-14, "mean");
    assert_close(v.min_detectable_change.expect("reached"), (102.8495 - 92.3089) / 2.0 / 96.6569, 1e-15, "mdc");
    assert_eq!(verdict(&absolute(&M9, Goal::Below, 90.0), 0.95).expect("valid").verdict, Verdict3::Fail);
    // The bound itself: `< 92.3089` fails only when the limit is not above the whole interval.
    assert_eq!(verdict(&absolute(&M9, Goal::Below, 92.3089), 0.95).expect("valid").verdict, Verdict3::Fail);
    assert_eq!(
        verdict(&absolute(&M9, Goal::AtMost, 92.3089), 0.95).expect("valid").verdict,
        Verdict3::Inconclusive { leaning: Some(Lean::Fail) }
    );
    assert_eq!(verdict(&absolute(&M9, Goal::AtMost, 102.8495), 0.95).expect("valid").verdict, Verdict3::Pass);
    assert_eq!(
        verdict(&absolute(&M9, Goal::Below, 100.0), 0.95).expect("valid").verdict,
        Verdict3::Inconclusive { leaning: None }
    );
    // Throughput-like: higher is better.
    assert_eq!(verdict(&absolute(&M9, Goal::AtLeast, 90.0), 0.95).expect("valid").verdict, Verdict3::Pass);
    assert_eq!(verdict(&absolute(&M9, Goal::Above, 103.0), 0.95).expect("valid").verdict, Verdict3::Fail);
    assert_eq!(
        verdict(&absolute(&M9, Goal::Above, 93.0), 0.95).expect("valid").verdict,
        Verdict3::Inconclusive { leaning: Some(Lean::Pass) }
    );
    // Five repetitions cannot reach 95%: all five on the good side is still INCONCLUSIVE, said by `reached`.
    let v = verdict(&absolute(&P5_A, Goal::Below, 3.0), 0.95).expect("valid");
    assert_eq!(v.verdict, Verdict3::Inconclusive { leaning: Some(Lean::Pass) });
    assert!(!v.interval.reached);
    assert_eq!((v.interval.lo, v.interval.hi, v.interval.confidence), (1.987, 2.245, 0.9375));
    assert_eq!(v.min_detectable_change, None);
    assert_eq!(verdict(&absolute(&P5_A, Goal::Below, 3.0), 0.90).expect("valid").verdict, Verdict3::Pass);
}

#[test]
fn relative_verdicts() {
    // P20's 95% ratio interval is [1.0750434997127267, 1.1305649306622105], estimate 1.0972485126552791; its 50%
    // interval (k = 87, achieved 0.5019912719726562) is [1.0894100445938397, 1.1107370436860318].
    let v = verdict(&paired(&P20_A, &P20_B, Goal::AtMost, 1.10), 0.95).expect("valid");
    assert_eq!(v.verdict, Verdict3::Inconclusive { leaning: None });
    assert_eq!(v.verdict.to_string(), "INCONCLUSIVE (too noisy to tell)");
    assert_close(v.estimate, 1.0972485126552791, 1e-12, "estimate");
    assert_close(v.interval.lo, 1.0750434997127267, 1e-12, "lo");
    assert_eq!((v.method, v.sample.n, v.baseline.map(|b| b.n)), (Method::Paired, 20, Some(20)));
    // p_fail and p_pass are the one-sided signed-rank p-values against 1.10 (scipy, above).
    assert_close(v.p_fail, 0.5508413314819336, 1e-12, "p_fail");
    assert_close(v.p_pass, 0.4636392593383789, 1e-12, "p_pass");
    let mdc = (1.1305649306622105f64 / 1.0750434997127267).sqrt() - 1.0;
    assert_close(v.min_detectable_change.expect("reached"), mdc, 1e-10, "mdc");
    let lean = |limit| verdict(&paired(&P20_A, &P20_B, Goal::AtMost, limit), 0.95).expect("valid").verdict;
    assert_eq!(lean(1.08), Verdict3::Inconclusive { leaning: Some(Lean::Fail) });
    assert_eq!(lean(1.12), Verdict3::Inconclusive { leaning: Some(Lean::Pass) });
    assert_eq!(lean(1.15), Verdict3::Pass);
    assert_eq!(lean(1.05), Verdict3::Fail);
    // Throughput >= baseline * 0.95 with a candidate 9.7% faster passes; >= baseline * 1.2 fails.
    let thr = |limit| verdict(&paired(&P20_A, &P20_B, Goal::AtLeast, limit), 0.95).expect("valid").verdict;
    assert_eq!(thr(0.95), Verdict3::Pass);
    assert_eq!(thr(1.2), Verdict3::Fail);
    // Unpaired P8 straddles 1.0 at 95% ([0.9946, 1.1968]); its 50% interval (k = 25, achieved
    // 0.5581973581973583) is [1.052401055408971, 1.1293993119872983], so it leans fail. Paired, the same data
    // fail outright ([1.0501, 1.1288]).
    let unpaired =
        Check::Relative { baseline: &P8_A, candidate: &P8_B, design: Design::Unpaired, goal: Goal::AtMost, limit: 1.0 };
    let v = verdict(&unpaired, 0.95).expect("valid");
    assert_eq!(v.verdict, Verdict3::Inconclusive { leaning: Some(Lean::Fail) });
    assert_eq!(v.method, Method::Unpaired);
    assert_eq!(verdict(&paired(&P8_A, &P8_B, Goal::AtMost, 1.0), 0.95).expect("valid").verdict, Verdict3::Fail);
}

#[test]
fn family_of_checks_with_holm() {
    // Four checks at a joint 95%: one-sided p-values (scipy.stats.wilcoxon exact, scipy.stats.binomtest)
    //   p_fail = [0.5508413314819336, 0.00390625, 1.0, 0.91015625]
    //   p_pass = [0.4636392593383789, 1.0, 2.9802322387695312e-08, 0.25390625]
    // statsmodels multipletests(..., alpha=0.025, method='holm') rejects p_fail [F, T, F, F] and p_pass
    // [F, F, T, F]. Both procedures stop at step 2 (level 0.025 / 3), so the INCONCLUSIVE intervals are shown at
    // 1 - 2 * 0.025 / 3; the decided ones at step 1 (1 - 2 * 0.025 / 4). Reference intervals at those levels by
    // the textbook definitions above.
    let checks = [
        paired(&P20_A, &P20_B, Goal::AtMost, 1.10),
        paired(&P8_A, &P8_B, Goal::AtMost, 1.0),
        absolute(&M25, Goal::Below, 110.0),
        absolute(&M9, Goal::Below, 100.0),
    ];
    let v: Vec<_> = verdicts(&checks, 0.95).into_iter().map(|v| v.expect("valid")).collect();
    let got: Vec<Verdict3> = v.iter().map(|v| v.verdict).collect();
    assert_eq!(
        got,
        [
            Verdict3::Inconclusive { leaning: None },
            Verdict3::Fail,
            Verdict3::Pass,
            Verdict3::Inconclusive { leaning: None }
        ]
    );
    for (v, p_fail, p_pass) in [
        (&v[0], 0.5508413314819336, 0.4636392593383789),
        (&v[1], 0.00390625, 1.0),
        (&v[2], 1.0, 2.9802322387695312e-08),
        (&v[3], 0.91015625, 0.25390625),
    ] {
        assert_close(v.p_fail, p_fail, 1e-12, "p_fail");
        assert_close(v.p_pass, p_pass, 1e-12, "p_pass");
        assert_eq!(v.family_size, 4);
    }
    let decided = 1.0 - 2.0 * 0.025 / 4.0;
    let stopped = 1.0 - 2.0 * 0.025 / 3.0;
    // (verdict, requested, lo, hi, achieved)
    let intervals = [
        (&v[0], stopped, 1.068008557098031, 1.1334110095648406, 0.9846878051757812),
        (&v[1], decided, 1.0446948594580905, 1.1556416643601806, 0.9921875),
        (&v[2], decided, 86.751, 103.2563, 0.9959226846694946),
        (&v[3], stopped, 83.8148, 105.3951, 0.99609375),
    ];
    for (v, requested, lo, hi, achieved) in intervals {
        assert_close(v.interval.requested, requested, 1e-12, "requested");
        assert_close(v.interval.lo, lo, 1e-12, "lo");
        assert_close(v.interval.hi, hi, 1e-12, "hi");
        assert_close(v.interval.confidence, achieved, 1e-12, "achieved");
    }
    // A family of one is a single verdict.
    assert_eq!(verdicts(&checks[1..2], 0.95), vec![verdict(&checks[1], 0.95)]);
}

#[test]
fn min_repetitions_per_confidence() {
    // Smallest n with 2 / 2^n <= 1 - conf (median, paired) or 2 / C(2n, n) <= 1 - conf (scipy.special.comb).
    for (conf, one_set, balanced) in [(0.95, 6, 4), (0.90, 5, 3), (0.99, 8, 5)] {
        assert_eq!(min_repetitions(Method::Median, conf), Ok(one_set));
        assert_eq!(min_repetitions(Method::Paired, conf), Ok(one_set));
        assert_eq!(min_repetitions(Method::Unpaired, conf), Ok(balanced));
        let values: Vec<f64> = (1..=one_set).map(|i| i as f64 + 1.0).collect();
        assert!(ratio(&values, &values, Design::Paired, conf).expect("valid").interval.reached);
        assert!(!ratio(&values[1..], &values[1..], Design::Paired, conf).expect("valid").interval.reached);
        let values: Vec<f64> = (1..=balanced).map(|i| i as f64).collect();
        assert!(ratio(&values, &values, Design::Unpaired, conf).expect("valid").interval.reached);
        assert!(!ratio(&values[1..], &values[1..], Design::Unpaired, conf).expect("valid").interval.reached);
    }
}

#[test]
fn summaries() {
    // numpy: np.median, np.mean, np.std(x, ddof=1) / np.mean(x).
    for (values, median, mean, cv) in [
        (&M25[..], 94.7677, 94.914724, 0.09234099465459315),
        (&P8_A[..], 2.0344499999999996, 2.05815, 0.07635269158658302),
        (&U7X9_B[..], 2.3323, 2.3481666666666667, 0.11756918541902668),
    ] {
        let s = summary(values).expect("valid");
        assert_eq!((s.n, s.median), (values.len(), median));
        assert_close(s.mean, mean, 1e-14, "mean");
        assert_close(s.cv.expect("cv"), cv, 1e-12, "cv");
        assert_eq!(stats::coefficient_of_variation(values), s.cv);
    }
    assert_eq!(summary(&[3.0]).expect("valid").cv, None);
    assert_eq!(stats::coefficient_of_variation(&[0.0, 0.0]), None);
    assert_eq!(stats::coefficient_of_variation(&[]), None);
}

// ---- Errors and odd inputs -------------------------------------------------------------------------------------

#[test]
fn typed_errors_never_panics() {
    use StatsError as E;
    assert_eq!(median(&[]), Err(E::Empty(Sample::Values)));
    assert!(matches!(median_ci(&[1.0, f64::NAN], 0.95), Err(E::NotFinite { sample: Sample::Values, index: 1, .. })));
    assert!(matches!(median_ci(&[f64::INFINITY], 0.95), Err(E::NotFinite { index: 0, .. })));
    for conf in [0.0, 1.0, -0.5, 1.5, f64::NAN] {
        assert!(matches!(median_ci(&[1.0, 2.0], conf), Err(E::Confidence(_))), "{conf}");
        assert!(matches!(ratio(&[1.0], &[1.0], Design::Paired, conf), Err(E::Confidence(_))));
        assert!(matches!(verdict(&absolute(&[1.0], Goal::Below, 2.0), conf), Err(E::Confidence(_))));
        assert!(matches!(min_repetitions(Method::Median, conf), Err(E::Confidence(_))));
    }
    assert_eq!(
        ratio(&[1.0, 0.0], &[1.0, 1.0], Design::Paired, 0.9),
        Err(E::NotPositive { sample: Sample::Baseline, index: 1, value: 0.0 })
    );
    assert_eq!(
        ratio(&[1.0], &[-2.0], Design::Unpaired, 0.9),
        Err(E::NotPositive { sample: Sample::Candidate, index: 0, value: -2.0 })
    );
    assert_eq!(ratio(&[], &[1.0], Design::Unpaired, 0.9), Err(E::Empty(Sample::Baseline)));
    assert_eq!(ratio(&[1.0], &[], Design::Paired, 0.9), Err(E::Empty(Sample::Candidate)));
    assert_eq!(ratio(&[1.0, 2.0], &[1.0], Design::Paired, 0.9), Err(E::LengthMismatch { baseline: 2, candidate: 1 }));
    let many = vec![1.0; stats::MAX_SAMPLES + 1];
    assert_eq!(
        ratio(&many, &[1.0], Design::Unpaired, 0.9),
        Err(E::TooMany { sample: Sample::Baseline, n: stats::MAX_SAMPLES + 1, max: stats::MAX_SAMPLES })
    );
    assert!(median_ci(&many, 0.9).is_ok(), "the median has no size limit");
    for r in [0.0, -1.0, f64::NAN, f64::INFINITY] {
        assert!(matches!(signed_rank_test(&[1.0], &[1.0], r, Alternative::TwoSided), Err(E::Limit(_))));
        assert!(matches!(rank_sum_test(&[1.0], &[1.0], r, Alternative::TwoSided), Err(E::Limit(_))));
        assert!(matches!(verdict(&paired(&[1.0], &[1.0], Goal::AtMost, r), 0.9), Err(E::Limit(_))));
    }
    assert!(matches!(sign_test(&[1.0], f64::NAN, Alternative::Less), Err(E::Limit(_))));
    assert!(matches!(verdict(&absolute(&[1.0], Goal::Below, f64::NAN), 0.9), Err(E::Limit(_))));
    assert!(verdict(&absolute(&[1.0], Goal::Below, -5.0), 0.9).is_ok(), "absolute limits may be any number");
    for alpha in [0.0, 1.0, f64::NAN] {
        assert!(matches!(holm(&[0.1], alpha), Err(E::Alpha(_))));
        assert!(matches!(holm_alphas(alpha, 3), Err(E::Alpha(_))));
    }
    assert_eq!(holm(&[0.1, 1.5], 0.05), Err(E::PValue { index: 1, value: 1.5 }));
    assert!(matches!(holm(&[f64::NAN], 0.05), Err(E::PValue { index: 0, .. })));
    // An invalid check is an error in its place and leaves the family smaller.
    let v = verdicts(&[absolute(&[], Goal::Below, 1.0), absolute(&M9, Goal::Below, 110.0)], 0.95);
    assert_eq!(v[0], Err(E::Empty(Sample::Values)));
    assert_eq!(v[1].as_ref().map(|v| v.family_size), Ok(1));
    assert!(verdicts(&[], 0.95).is_empty());
    assert!(E::NotPositive { sample: Sample::Candidate, index: 3, value: 0.0 }
        .to_string()
        .contains("candidate value at index 3 is 0"));
}

#[test]
fn degenerate_and_extreme_inputs() {
    // One value, all equal, extreme magnitudes: results, not panics.
    let one = median_ci(&[5.0], 0.95).expect("valid");
    assert_eq!((one.median, one.interval.lo, one.interval.hi, one.interval.confidence), (5.0, 5.0, 5.0, 0.0));
    assert!(!one.interval.reached);
    let r = ratio(&[2.0], &[3.0], Design::Paired, 0.95).expect("valid");
    assert_close(r.ratio, 1.5, 1e-15, "one pair");
    assert!(!r.interval.reached);
    let same = [2.0; 8];
    let r = ratio(&same, &same, Design::Paired, 0.95).expect("valid");
    assert_eq!((r.ratio, r.interval.lo, r.interval.hi), (1.0, 1.0, 1.0));
    // Every Walsh average ties with 1: both one-sided p-values are 1 (ties count against rejection).
    assert_eq!(signed_rank_test(&same, &same, 1.0, Alternative::Less).expect("valid").p_value, 1.0);
    assert_eq!(signed_rank_test(&same, &same, 1.0, Alternative::Greater).expect("valid").p_value, 1.0);
    let v = verdict(&paired(&same, &same, Goal::AtMost, 1.0), 0.95).expect("valid");
    assert_eq!(v.verdict, Verdict3::Pass, "ratio exactly 1 meets <= 1");
    let v = verdict(&paired(&same, &same, Goal::Below, 1.0), 0.95).expect("valid");
    assert_eq!(v.verdict, Verdict3::Fail, "ratio exactly 1 misses < 1");
    let tiny = [f64::MIN_POSITIVE, 1e-300, 1e-200];
    let huge = [f64::MAX, 1e300, 1e200];
    for design in [Design::Paired, Design::Unpaired] {
        let r = ratio(&tiny, &huge, design, 0.5).expect("valid");
        assert!(r.ratio > 1e300 && r.interval.lo <= r.ratio && r.ratio <= r.interval.hi);
    }
    let v = verdict(&absolute(&[0.0, 0.0, 0.0, 0.0, 0.0, 0.0], Goal::AtMost, 0.0), 0.95).expect("valid");
    assert_eq!((v.verdict, v.min_detectable_change, v.sample.cv), (Verdict3::Pass, None, None));
    // The largest accepted sizes run (500,500 Walsh averages; a million ratios, normal approximation).
    let big: Vec<f64> = (0..stats::MAX_SAMPLES).map(|i| 1.0 + (i as f64 * 0.618).fract()).collect();
    let r = ratio(&big, &big, Design::Paired, 0.95).expect("valid");
    assert_eq!((r.ratio, r.interval.exact), (1.0, false));
    let r = ratio(&big, &big, Design::Unpaired, 0.95).expect("valid");
    assert!(r.interval.contains(1.0) && !r.interval.exact);
}

// ---- Properties ------------------------------------------------------------------------------------------------

use loadgate_testkit::Noise as Rng;

/// Latency-like values around `center`, quantised to 3 significant digits now and then (ties happen).
fn sample(rng: &mut Rng, n: usize, center: f64) -> Vec<f64> {
    let quantise = rng.below(3) == 0;
    (0..n)
        .map(|_| {
            let x = center * (0.3 * (rng.unit() - 0.5) + 0.2 * (rng.unit() - 0.5).powi(3)).exp();
            if quantise {
                let scale = 10f64.powf(2.0 - x.log10().floor());
                (x * scale).round() / scale
            } else {
                x
            }
        })
        .collect()
}

const CONFIDENCES: [f64; 6] = [0.5, 0.8, 0.9, 0.95, 0.99, 0.999];

#[test]
fn intervals_contain_the_estimate_and_nest() {
    let mut rng = Rng(11);
    for _ in 0..300 {
        let n = 1 + rng.below(25);
        let m = 1 + rng.below(25);
        let a = sample(&mut rng, n, 2.0);
        let shift = 0.9 + 0.2 * rng.unit();
        let b = sample(&mut rng, n, 2.0 * shift);
        let c = sample(&mut rng, m, 2.1);
        let mut previous: Option<[stats::Interval; 3]> = None;
        for conf in CONFIDENCES {
            let med = median_ci(&a, conf).expect("valid");
            let pai = ratio(&a, &b, Design::Paired, conf).expect("valid");
            let unp = ratio(&a, &c, Design::Unpaired, conf).expect("valid");
            for (estimate, iv) in [(med.median, med.interval), (pai.ratio, pai.interval), (unp.ratio, unp.interval)] {
                assert!(iv.lo <= estimate && estimate <= iv.hi, "{estimate} outside [{}, {}]", iv.lo, iv.hi);
                assert!(iv.ranks.0 <= iv.ranks.1 && iv.ranks.0 + iv.ranks.1 == iv.count + 1);
                if iv.reached {
                    assert!(iv.confidence >= conf - 1e-9, "achieved {} < {conf}", iv.confidence);
                } else {
                    assert_eq!(iv.ranks.0, 1);
                    assert!(iv.confidence < conf);
                }
            }
            let now = [med.interval, pai.interval, unp.interval];
            if let Some(before) = previous {
                for (wide, narrow) in now.iter().zip(&before) {
                    assert!(
                        wide.lo <= narrow.lo && narrow.hi <= wide.hi,
                        "a higher confidence gave a narrower interval"
                    );
                }
            }
            previous = Some(now);
        }
    }
}

#[test]
fn tests_invert_the_intervals() {
    // p <= a exactly when the interval at confidence 1 - 2a reaches its level and lies wholly beyond the null
    // value (with or without ties).
    let mut rng = Rng(12);
    for _ in 0..300 {
        let n = 1 + rng.below(15);
        let a = sample(&mut rng, n, 2.0);
        let shift = 0.9 + 0.2 * rng.unit();
        let b = sample(&mut rng, n, 2.0 * shift);
        let len = 1 + rng.below(15);
        let c = sample(&mut rng, len, 2.0);
        let side = [0.005, 0.025, 0.05, 0.1, 0.25][rng.below(5)];
        let conf = 1.0 - 2.0 * side;
        let probes: Vec<f64> = b.iter().zip(&a).map(|(b, a)| b / a).chain([0.9, 1.0, 1.1]).collect();
        for r in probes {
            for (design, test) in [
                (Design::Paired, signed_rank_test(&a, &b, r, Alternative::Greater)),
                (Design::Unpaired, rank_sum_test(&a, &c, r, Alternative::Greater)),
            ] {
                let cand = if design == Design::Paired { &b } else { &c };
                let iv = ratio(&a, cand, design, conf).expect("valid").interval;
                let p = test.expect("valid").p_value;
                if (p - side).abs() > 1e-9 {
                    assert_eq!(
                        p <= side,
                        iv.reached && iv.lo > r,
                        "{design:?}: p = {p}, interval [{}, {}], r = {r}",
                        iv.lo,
                        iv.hi
                    );
                }
                let less = match design {
                    Design::Paired => signed_rank_test(&a, &b, r, Alternative::Less),
                    Design::Unpaired => rank_sum_test(&a, &c, r, Alternative::Less),
                };
                let p = less.expect("valid").p_value;
                if (p - side).abs() > 1e-9 {
                    assert_eq!(
                        p <= side,
                        iv.reached && iv.hi < r,
                        "{design:?}: p = {p}, interval [{}, {}], r = {r}",
                        iv.lo,
                        iv.hi
                    );
                }
            }
            let iv = median_ci(&a, conf).expect("valid").interval;
            let p = sign_test(&a, r * 2.0, Alternative::Greater).expect("valid").p_value;
            if (p - side).abs() > 1e-9 {
                assert_eq!(p <= side, iv.reached && iv.lo > r * 2.0);
            }
        }
    }
}

#[test]
fn swapping_baseline_and_candidate_inverts_the_ratio() {
    let mut rng = Rng(13);
    for _ in 0..100 {
        let n = 1 + rng.below(20);
        let a = sample(&mut rng, n, 2.0);
        let b = sample(&mut rng, n, 2.2);
        let len = 1 + rng.below(20);
        let c = sample(&mut rng, len, 1.9);
        for (x, y, design) in [(&a, &b, Design::Paired), (&a, &c, Design::Unpaired)] {
            let fwd = ratio(x, y, design, 0.95).expect("valid");
            let back = ratio(y, x, design, 0.95).expect("valid");
            assert_close(fwd.ratio * back.ratio, 1.0, 1e-12, "estimate");
            assert_close(fwd.interval.lo * back.interval.hi, 1.0, 1e-12, "lo");
            assert_close(fwd.interval.hi * back.interval.lo, 1.0, 1e-12, "hi");
            assert_eq!(fwd.interval.confidence, back.interval.confidence);
        }
    }
}

#[test]
fn holm_is_monotone() {
    let mut rng = Rng(14);
    for _ in 0..500 {
        let m = rng.below(12);
        let p: Vec<f64> = (0..m).map(|_| rng.unit().powi(1 + rng.below(4) as i32)).collect();
        let alpha = [0.01, 0.05, 0.1, 0.2][rng.below(4)];
        let h = holm(&p, alpha).expect("valid");
        let mut by_step = h.clone();
        by_step.sort_by_key(|d| d.step);
        assert!(by_step.iter().enumerate().all(|(j, d)| d.step == j + 1));
        for w in by_step.windows(2) {
            assert!(w[0].p_value <= w[1].p_value);
            assert!(w[0].adjusted_p <= w[1].adjusted_p, "adjusted p-values decrease");
            assert!(w[0].alpha < w[1].alpha, "levels do not increase");
            assert!(w[0].rejected || !w[1].rejected, "rejections are not a prefix of the steps");
        }
        for d in &h {
            assert!(d.p_value <= d.adjusted_p && d.adjusted_p <= 1.0);
            assert_eq!(d.alpha, alpha / (m + 1 - d.step) as f64);
            if (d.adjusted_p - alpha).abs() > 1e-12 {
                assert_eq!(d.rejected, d.adjusted_p <= alpha);
            }
        }
        // A larger alpha rejects at least as much; a smaller p-value is rejected no later.
        let more = holm(&p, alpha * 2.0).expect("valid");
        assert!(h.iter().zip(&more).all(|(d, e)| !d.rejected || e.rejected));
        if let Some(i) = (0..m).find(|&i| h[i].rejected) {
            let mut q = p.clone();
            q[i] /= 2.0;
            assert!(holm(&q, alpha).expect("valid")[i].rejected);
        }
        let levels = holm_alphas(alpha, m).expect("valid");
        assert!(levels.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(levels.last().copied(), (m > 0).then_some(alpha));
    }
}

/// (baseline, candidate, limit, goal, kind: absolute, paired or unpaired)
type RandomCheck = (Vec<f64>, Vec<f64>, f64, Goal, usize);

#[test]
fn verdicts_agree_with_their_intervals_and_families_are_stricter() {
    let mut rng = Rng(15);
    for _ in 0..200 {
        let k = 1 + rng.below(5);
        let data: Vec<RandomCheck> = (0..k)
            .map(|_| {
                let n = 1 + rng.below(20);
                let a = sample(&mut rng, n, 2.0);
                let shift = 0.85 + 0.3 * rng.unit();
                let b = sample(&mut rng, n, 2.0 * shift);
                let limit = 0.9 + 0.3 * rng.unit();
                let goal = [Goal::Below, Goal::AtMost, Goal::Above, Goal::AtLeast][rng.below(4)];
                (a, b, limit, goal, rng.below(3))
            })
            .collect();
        let checks: Vec<Check<'_>> = data
            .iter()
            .map(|(a, b, limit, goal, kind)| match kind {
                0 => absolute(b, *goal, limit * 2.0),
                1 => paired(a, b, *goal, *limit),
                _ => Check::Relative {
                    baseline: a,
                    candidate: &b[..1.max(b.len() / 2)],
                    design: Design::Unpaired,
                    goal: *goal,
                    limit: *limit,
                },
            })
            .collect();
        let conf = CONFIDENCES[rng.below(CONFIDENCES.len())];
        let family = verdicts(&checks, conf);
        for (check, joint) in checks.iter().zip(&family) {
            let joint = joint.as_ref().expect("valid");
            let alone = verdict(check, conf).expect("valid");
            let iv = joint.interval;
            let good = |x: f64| joint.goal.holds(x, joint.limit);
            match joint.verdict {
                Verdict3::Pass => assert!(good(iv.lo) && good(iv.hi) && iv.reached),
                Verdict3::Fail => assert!(!good(iv.lo) && !good(iv.hi) && iv.reached),
                // Straddles the limit, or too few repetitions for even [min, max] to reach the level.
                Verdict3::Inconclusive { .. } => assert!(good(iv.lo) != good(iv.hi) || !iv.reached),
            }
            assert!(iv.lo <= joint.estimate && joint.estimate <= iv.hi);
            assert!(joint.p_fail + joint.p_pass >= 1.0 - 1e-12, "both sides cannot be significant");
            // Joining a family never decides more than deciding alone.
            match joint.verdict {
                Verdict3::Pass | Verdict3::Fail => assert_eq!(joint.verdict, alone.verdict),
                Verdict3::Inconclusive { .. } => {}
            }
            assert!(
                alone.interval.lo >= iv.lo && alone.interval.hi <= iv.hi,
                "a family's interval is at least as wide"
            );
        }
    }
}
