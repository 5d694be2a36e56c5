//! Descriptive statistics: pure functions over the counted runs' values.
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
            (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
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

/// `first / warm_median`, when both exist and the median is not zero.
pub fn ratio(first: Option<f64>, warm_median: Option<f64>) -> Option<f64> {
    match (first, warm_median) {
        (Some(f), Some(w)) if w != 0.0 && f.is_finite() && w.is_finite() => Some(f / w),
        _ => None,
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
