//! Descriptive statistics: pure functions over the counted runs' values.
//! Numbers in, numbers out; no records, no units, no rendering.
//!
//! The standard deviation is the *sample* standard deviation (divisor n − 1), as hyperfine
//! reports it — not the standard error of the mean that `perf stat -r` prints after ±.
#![forbid(unsafe_code)]

/// n, min, max, mean, median and sample standard deviation of a list of values.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Summary {
    /// Number of values.
    pub n: u64,
    /// Smallest value.
    pub min: f64,
    /// Largest value.
    pub max: f64,
    /// Arithmetic mean.
    pub mean: f64,
    /// Median (mean of the two middle values for an even count).
    pub median: f64,
    /// Sample standard deviation (n − 1); `None` for fewer than two values.
    pub stddev: Option<f64>,
}

crate::serialize_struct!(Summary {
    n,
    min,
    max,
    mean,
    median,
    stddev
});

impl Summary {
    /// Summarises `values`; `None` when empty. NaNs are ignored.
    pub fn of(values: &[f64]) -> Option<Summary> {
        let mut sorted: Vec<f64> = values.iter().copied().filter(|v| !v.is_nan()).collect();
        if sorted.is_empty() {
            return None;
        }
        sorted.sort_by(f64::total_cmp);
        let n = sorted.len();
        let mean = sorted.iter().sum::<f64>() / n as f64;
        let median = if n % 2 == 1 {
            sorted[n / 2]
        } else {
            // Halve first: the sum of two large finite values can overflow to infinity.
            // (Halving is exact for normal numbers, so the result is the same otherwise.)
            sorted[n / 2 - 1] / 2.0 + sorted[n / 2] / 2.0
        };
        let stddev = (n >= 2).then(|| {
            let ss: f64 = sorted.iter().map(|v| (v - mean) * (v - mean)).sum();
            (ss / (n - 1) as f64).sqrt()
        });
        Some(Summary {
            n: n as u64,
            min: sorted[0],
            max: sorted[n - 1],
            mean,
            median,
            stddev,
        })
    }
}

/// `first / warm_median`, when both exist, the median is not zero and the quotient is finite
/// (a huge value over a tiny one overflows to infinity, which is no ratio to show).
pub fn ratio(first: Option<f64>, warm_median: Option<f64>) -> Option<f64> {
    match (first, warm_median) {
        (Some(f), Some(w)) if w != 0.0 && f.is_finite() && w.is_finite() => {
            Some(f / w).filter(|r| r.is_finite())
        }
        _ => None,
    }
}

/// The `p` quantile (0 ≤ p ≤ 1) of `sorted` (ascending, not empty), interpolated linearly
/// between the two nearest values (Hyndman and Fan's type 7, as R's and NumPy's default).
pub fn quantile(sorted: &[f64], p: f64) -> f64 {
    let Some(&last) = sorted.last() else {
        return f64::NAN;
    };
    let h = (sorted.len() - 1) as f64 * p.clamp(0.0, 1.0);
    let below = h.floor() as usize;
    match sorted.get(below + 1) {
        Some(&above) => sorted[below] + (h - below as f64) * (above - sorted[below]),
        None => last,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn small_known_cases() {
        let s = Summary::of(&[3.0, 1.0, 2.0, 10.0]).unwrap();
        assert_eq!(
            (s.n, s.min, s.max, s.mean, s.median),
            (4, 1.0, 10.0, 4.0, 2.5)
        );
        let sd = s.stddev.unwrap();
        assert!((sd - (50.0f64 / 3.0).sqrt()).abs() < 1e-12);
        assert_eq!(Summary::of(&[]), None);
        assert_eq!(Summary::of(&[5.0]).unwrap().stddev, None);
        assert_eq!(ratio(Some(3.0), Some(2.0)), Some(1.5));
        assert_eq!(ratio(Some(3.0), Some(0.0)), None);
        assert_eq!(ratio(Some(1e300), Some(1e-300)), None);
        assert_eq!(Summary::of(&[f64::MAX, f64::MAX]).unwrap().median, f64::MAX);
        assert_eq!(quantile(&[1.0, 2.0, 3.0, 4.0, 5.0], 0.25), 2.0);
        assert_eq!(quantile(&[1.0, 2.0, 3.0, 4.0], 0.5), 2.5);
        assert_eq!(quantile(&[1.0, 2.0], 0.75), 1.75);
        assert_eq!(quantile(&[7.0], 0.9), 7.0);
        assert_eq!(quantile(&[1.0, 9.0], 1.0), 9.0);
        assert!(quantile(&[], 0.5).is_nan());
    }

    proptest! {
        #[test]
        fn order_invariants(values in proptest::collection::vec(-1e12f64..1e12, 1..200)) {
            let s = Summary::of(&values).unwrap();
            prop_assert_eq!(s.n as usize, values.len());
            prop_assert!(s.min <= s.median && s.median <= s.max);
            prop_assert!(s.min <= s.mean + 1e-3 && s.mean <= s.max + 1e-3);
            if let Some(sd) = s.stddev { prop_assert!(sd >= 0.0); }
            let mut reversed = values.clone();
            reversed.reverse();
            prop_assert_eq!(Summary::of(&reversed).unwrap().median, s.median);
        }

        #[test]
        fn constant_series_has_zero_spread(v in -1e9f64..1e9, n in 2usize..50) {
            let s = Summary::of(&vec![v; n]).unwrap();
            prop_assert_eq!(s.median, v);
            prop_assert!(s.stddev.unwrap().abs() < 1e-6 * v.abs().max(1.0));
        }
    }
}

/// SplitMix64: a small, seedable generator (for resampling and shuffling; not cryptographic).
#[derive(Clone, Debug)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// A generator from `seed`.
    pub fn new(seed: u64) -> Self {
        SplitMix64(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A uniform index below `n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        ((u128::from(self.next_u64()) * n as u128) >> 64) as usize
    }

    /// Shuffles `items` in place (Fisher–Yates).
    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = self.below(i + 1);
            items.swap(i, j);
        }
    }
}

fn median_of(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    }
}

/// Bootstrap resamples per interval (a comparison's and a cold-cycle batch's).
pub const RESAMPLES: usize = 2000;
/// Confidence level of the intervals.
pub const LEVEL: f64 = 0.95;

/// Why a bootstrap interval of a ratio of medians was not computed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NoInterval {
    /// A side has fewer than two values (or no resample was asked for).
    TooFew,
    /// The observed median of the base side is 0: there is no ratio to bound.
    ZeroMedian,
}

/// The ratio of one resample's medians. Equal medians are 1 — both 0 included: the two
/// resamples do not differ — and a non-zero median over a zero one is +∞ (−∞ below zero): that
/// resample leaves the ratio unbounded, which the interval then says rather than being dropped.
fn resampled_ratio(numerator: f64, denominator: f64) -> f64 {
    if numerator == denominator {
        1.0
    } else if denominator == 0.0 {
        f64::INFINITY.copysign(numerator)
    } else {
        numerator / denominator
    }
}

/// A percentile-bootstrap confidence interval for `median(other) / median(base)`: each of the
/// `resamples` rounds draws both samples with replacement (independently), and the interval is
/// the (1−level)/2 and (1+level)/2 quantiles of the resampled ratios.
///
/// Only the observed statistic can make the interval meaningless: a base whose own median is 0
/// has no ratio ([`NoInterval::ZeroMedian`]). A resample whose base median is 0 — common with
/// tick-sampled CPU times, where single runs are often 0 — is kept as an unbounded ratio (or 1
/// when both of its medians are 0), so the upper end is +∞ when more than (1−level)/2 of the
/// resamples are unbounded: the data then bound the ratio from below only.
///
/// # Errors
/// [`NoInterval::TooFew`] with fewer than two values on a side, [`NoInterval::ZeroMedian`] when
/// the base's median is 0.
pub fn bootstrap_ratio_ci(
    base: &[f64],
    other: &[f64],
    resamples: usize,
    level: f64,
    seed: u64,
) -> Result<(f64, f64), NoInterval> {
    if base.len() < 2 || other.len() < 2 || resamples == 0 {
        return Err(NoInterval::TooFew);
    }
    if median_of(&mut base.to_vec()) == 0.0 {
        return Err(NoInterval::ZeroMedian);
    }
    let mut rng = SplitMix64::new(seed);
    let mut a = vec![0.0; base.len()];
    let mut b = vec![0.0; other.len()];
    let mut ratios = Vec::with_capacity(resamples);
    for _ in 0..resamples {
        for slot in a.iter_mut() {
            *slot = base[rng.below(base.len())];
        }
        for slot in b.iter_mut() {
            *slot = other[rng.below(other.len())];
        }
        ratios.push(resampled_ratio(median_of(&mut b), median_of(&mut a)));
    }
    Ok(percentile_interval(ratios, level))
}

/// The (1−level)/2 and (1+level)/2 quantiles of resampled statistics (not empty).
fn percentile_interval(mut resampled: Vec<f64>, level: f64) -> (f64, f64) {
    resampled.sort_by(f64::total_cmp);
    let last = resampled.len() - 1;
    let quantile = |q: f64| resampled[((q * last as f64).round() as usize).min(last)];
    (quantile((1.0 - level) / 2.0), quantile((1.0 + level) / 2.0))
}

/// A percentile-bootstrap confidence interval for the mean of `values` (paired differences,
/// say): the (1−level)/2 and (1+level)/2 quantiles of `resamples` resampled means. `None` with
/// fewer than two values.
pub fn bootstrap_mean_ci(
    values: &[f64],
    resamples: usize,
    level: f64,
    seed: u64,
) -> Option<(f64, f64)> {
    if values.len() < 2 || resamples == 0 {
        return None;
    }
    let mut rng = SplitMix64::new(seed);
    let n = values.len();
    let means: Vec<f64> = (0..resamples)
        .map(|_| (0..n).map(|_| values[rng.below(n)]).sum::<f64>() / n as f64)
        .collect();
    Some(percentile_interval(means, level))
}

/// The distribution-free interval of the median of `sorted` (ascending, finite) at `level`:
/// the order statistics x(j) and x(k), 1-based, with j = ⌊(n − z·√n) / 2⌋ and k = ⌈(n + z·√n)
/// / 2⌉ + 1 — the normal approximation to the binomial(n, ½) count of values below the median
/// (Conover, *Practical Nonparametric Statistics*, 3rd ed., §3.2). No resampling, so it scales
/// to any batch. `None` with fewer than 6 values (even [min, max] holds the median with less
/// than 95 % then).
pub fn median_interval(sorted: &[f64], level: f64) -> Option<(f64, f64)> {
    let n = sorted.len();
    if n < 6 {
        return None;
    }
    let z = normal_quantile((1.0 + level) / 2.0);
    let half = z * (n as f64).sqrt();
    let j = ((n as f64 - half) / 2.0).floor().max(1.0) as usize;
    let k = (((n as f64 + half) / 2.0).ceil() as usize + 1).min(n);
    Some((sorted[j - 1], sorted[k - 1]))
}

/// The standard normal quantile at `p` for the levels intervals use (0.975 → 1.96), by
/// Acklam's rational approximation's central region (|error| < 1.2e-9 for 0.02 ≤ p ≤ 0.98).
fn normal_quantile(p: f64) -> f64 {
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
    let q = p.clamp(0.02, 0.98) - 0.5;
    let r = q * q;
    let num = A.iter().fold(0.0, |acc, a| acc * r + a);
    let den = B.iter().fold(0.0, |acc, b| acc * r + b) * r + 1.0;
    num * q / den
}

#[cfg(test)]
mod bootstrap_tests {
    use super::*;

    #[test]
    fn the_median_interval_is_of_order_statistics_and_holds_the_median() {
        assert!((normal_quantile(0.975) - 1.959_964).abs() < 1e-5);
        assert!(normal_quantile(0.5).abs() < 1e-12);
        let sorted: Vec<f64> = (1..=100).map(f64::from).collect();
        // n = 100: j = ⌊(100 − 19.6) / 2⌋ = 40, k = ⌈(100 + 19.6) / 2⌉ + 1 = 61.
        assert_eq!(median_interval(&sorted, 0.95), Some((40.0, 61.0)));
        assert_eq!(median_interval(&sorted[..5], 0.95), None);
        let (lo, hi) = median_interval(&sorted[..6], 0.95).unwrap();
        assert_eq!((lo, hi), (1.0, 6.0));
        // Coverage, counted: of 2,000 samples of 25 from a skewed distribution, about 95 %
        // of the intervals hold the true median (ln 2 for an exponential of mean 1).
        let mut rng = SplitMix64::new(3);
        let mut held = 0;
        for _ in 0..2000 {
            let mut v: Vec<f64> = (0..25)
                .map(|_| -((rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64 + 1e-18).ln())
                .collect();
            v.sort_by(f64::total_cmp);
            let (lo, hi) = median_interval(&v, 0.95).unwrap();
            held += usize::from(lo <= 2f64.ln() && 2f64.ln() <= hi);
        }
        assert!((1860..=1990).contains(&held), "{held} of 2000");
    }

    #[test]
    fn a_doubled_sample_has_an_interval_around_two() {
        let base: Vec<f64> = (0..20).map(|i| 50.0 + (i % 5) as f64).collect();
        let other: Vec<f64> = base.iter().map(|v| v * 2.0).collect();
        let (lo, hi) = bootstrap_ratio_ci(&base, &other, 2000, 0.95, 1).unwrap();
        assert!(lo > 1.8 && hi < 2.2 && lo <= 2.0 && 2.0 <= hi, "{lo}..{hi}");
    }

    #[test]
    fn the_same_sample_has_an_interval_containing_one() {
        let base: Vec<f64> = (0..20).map(|i| 50.0 + (i * 7 % 11) as f64).collect();
        let (lo, hi) = bootstrap_ratio_ci(&base, &base, 2000, 0.95, 7).unwrap();
        assert!(lo <= 1.0 && 1.0 <= hi, "{lo}..{hi}");
    }

    #[test]
    fn too_few_values_or_a_zero_median_give_no_interval() {
        assert_eq!(
            bootstrap_ratio_ci(&[1.0], &[1.0, 2.0], 100, 0.95, 1),
            Err(NoInterval::TooFew)
        );
        let mostly_zero = [0.0, 0.0, 0.0, 4000.0, 8000.0];
        assert_eq!(
            bootstrap_ratio_ci(&mostly_zero, &[4000.0, 4000.0], 100, 0.95, 1),
            Err(NoInterval::ZeroMedian)
        );
    }

    /// System times as rusage gives them for short runs: whole ticks of 4 ms, often 0.
    fn ticks(seed: u64, n: usize, p_zero: f64) -> Vec<f64> {
        let mut rng = SplitMix64::new(seed);
        (0..n)
            .map(|_| {
                let u = rng.next_u64() as f64 / u64::MAX as f64;
                if u < p_zero {
                    0.0
                } else {
                    4000.0 * (1 + rng.below(2)) as f64
                }
            })
            .collect()
    }

    #[test]
    fn tick_quantised_samples_with_zero_runs_still_have_an_interval() {
        // 40 % of the runs saw no tick in the kernel: the median is 4 ms, but a resample's
        // median is 0 about one time in eight — which once abandoned the whole interval.
        let mut checked = 0;
        for seed in 0..50 {
            let base = ticks(seed, 20, 0.4);
            let other = ticks(seed + 1000, 20, 0.4);
            if median_of(&mut base.clone()) == 0.0 {
                continue;
            }
            let (lo, hi) = bootstrap_ratio_ci(&base, &other, 2000, 0.95, seed)
                .unwrap_or_else(|e| panic!("seed {seed}: {e:?} for {base:?}"));
            assert!(lo <= 1.0 && 1.0 <= hi, "seed {seed}: {lo}..{hi}");
            assert!(lo >= 0.0 && !lo.is_nan() && !hi.is_nan(), "{lo}..{hi}");
            checked += 1;
        }
        assert!(
            checked >= 40,
            "only {checked} samples had a non-zero median"
        );
        // Never zero: a bounded interval around the true ratio of 2.
        let base: Vec<f64> = (0..20).map(|i| 4000.0 * (2 + i % 2) as f64).collect();
        let other: Vec<f64> = base.iter().map(|v| v * 2.0).collect();
        let (lo, hi) = bootstrap_ratio_ci(&base, &other, 2000, 0.95, 3).unwrap();
        assert!(lo > 1.0 && hi.is_finite(), "{lo}..{hi}");
    }

    #[test]
    fn a_resample_over_a_zero_median_is_unbounded_and_equal_medians_are_one() {
        assert_eq!(resampled_ratio(4.0, 0.0), f64::INFINITY);
        assert_eq!(resampled_ratio(0.0, 0.0), 1.0);
        assert_eq!(resampled_ratio(4.0, 4.0), 1.0);
        assert_eq!(resampled_ratio(2.0, 4.0), 0.5);
        // Half the base runs are 0 (median 2 ms): many resamples have a zero base median, so
        // the upper end is unbounded while the lower end still bounds the ratio.
        let base = [
            0.0, 0.0, 0.0, 0.0, 0.0, 4000.0, 4000.0, 4000.0, 4000.0, 4000.0,
        ];
        let other = [8000.0; 10];
        let (lo, hi) = bootstrap_ratio_ci(&base, &other, 2000, 0.95, 9).unwrap();
        assert_eq!(hi, f64::INFINITY);
        assert!(lo >= 2.0, "{lo}");
    }

    #[test]
    fn a_mean_interval_holds_the_mean_and_excludes_0_only_for_a_clear_shift() {
        let shifted: Vec<f64> = (0..12).map(|i| 30.0 + (i % 5) as f64 * 4.0).collect();
        let (lo, hi) = bootstrap_mean_ci(&shifted, 2000, 0.95, 1).unwrap();
        assert!(
            lo > 30.0 && hi < 46.0 && lo < 38.0 && 38.0 < hi,
            "{lo}..{hi}"
        );
        let noise = [-20.0, 15.0, 3.0, -8.0, 12.0, -1.0, 7.0, -14.0];
        let (lo, hi) = bootstrap_mean_ci(&noise, 2000, 0.95, 1).unwrap();
        assert!(lo < 0.0 && 0.0 < hi, "{lo}..{hi}");
        assert_eq!(bootstrap_mean_ci(&[1.0], 100, 0.95, 1), None);
    }

    #[test]
    fn shuffle_is_a_seeded_permutation() {
        let mut a: Vec<u32> = (0..10).collect();
        let mut b = a.clone();
        SplitMix64::new(42).shuffle(&mut a);
        SplitMix64::new(42).shuffle(&mut b);
        assert_eq!(a, b);
        let mut sorted = a.clone();
        sorted.sort();
        assert_eq!(sorted, (0..10).collect::<Vec<_>>());
    }
}
