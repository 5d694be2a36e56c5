//! Axes: values mapped to pixels on a linear or a logarithmic scale, round tick values, and
//! their labels in one time unit per axis (or, on a log axis, each tick in its own). Pure
//! arithmetic; nothing is drawn here.
#![forbid(unsafe_code)]

use crate::view::units::human_ns;

/// Values from `lo` to `hi` mapped onto pixels `px_lo` to `px_hi` (either direction).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Scale {
    /// The smallest value shown.
    pub lo: f64,
    /// The largest value shown.
    pub hi: f64,
    /// Logarithmic (base 10) rather than linear.
    pub log: bool,
    /// The pixel of `lo`.
    pub px_lo: f64,
    /// The pixel of `hi`.
    pub px_hi: f64,
}

/// Above this ratio of the largest to the smallest value, a time axis is logarithmic: a cold
/// first run of 2 s beside warm runs of 50 ms would otherwise flatten the warm series.
pub const LOG_ABOVE: f64 = 8.0;

impl Scale {
    /// The pixel of `v` (values outside the range land outside the pixel range).
    pub fn at(&self, v: f64) -> f64 {
        let t = if self.log {
            (v.max(f64::MIN_POSITIVE).log10() - self.lo.log10())
                / (self.hi.log10() - self.lo.log10())
        } else {
            (v - self.lo) / (self.hi - self.lo)
        };
        let t = if t.is_finite() { t } else { 0.5 };
        self.px_lo + t * (self.px_hi - self.px_lo)
    }

    /// A scale that shows every value of `values` (positive, finite ones for a log scale),
    /// logarithmic when they span more than [`LOG_ABOVE`]; `None` without any value.
    pub fn fitting(values: impl Iterator<Item = f64>, px_lo: f64, px_hi: f64) -> Option<Scale> {
        let (min, max) = values.filter(|v| v.is_finite()).fold(
            None,
            |acc: Option<(f64, f64)>, v| match acc {
                None => Some((v, v)),
                Some((lo, hi)) => Some((lo.min(v), hi.max(v))),
            },
        )?;
        let log = min > 0.0 && max / min > LOG_ABOVE;
        let (lo, hi) = if log {
            (min / 1.25, max * 1.25)
        } else {
            linear_bounds(min, max)
        };
        Some(Scale {
            lo,
            hi,
            log,
            px_lo,
            px_hi,
        })
    }

    /// Round values inside the range, from `lo` up: 3 to 8 of them.
    pub fn ticks(&self) -> Vec<f64> {
        if self.log {
            log_ticks(self.lo, self.hi)
        } else {
            linear_ticks(self.lo, self.hi)
        }
    }
}

/// 1, 2 or 5 × a power of ten, the nearest at or above `raw`.
pub fn nice_step(raw: f64) -> f64 {
    if !(raw.is_finite() && raw > 0.0) {
        return 1.0;
    }
    let power = 10f64.powf(raw.log10().floor());
    let fraction = raw / power;
    let nice = if fraction <= 1.0 {
        1.0
    } else if fraction <= 2.0 {
        2.0
    } else if fraction <= 5.0 {
        5.0
    } else {
        10.0
    };
    nice * power
}

/// Linear bounds around [min, max]: from 0 when the values are at least half the largest
/// away from it (so that bars and distances read true), else from a round value below the
/// smallest; a flat series gets room around it.
fn linear_bounds(min: f64, max: f64) -> (f64, f64) {
    let (min, max) = if min == max {
        let pad = if min == 0.0 { 1.0 } else { min.abs() * 0.1 };
        (min - pad, max + pad)
    } else {
        (min, max)
    };
    let lo = if min >= 0.0 && min < max * 0.5 {
        0.0
    } else {
        min
    };
    let step = nice_step(max / 5.0 - lo / 5.0);
    ((lo / step).floor() * step, (max / step).ceil() * step)
}

/// The multiples of `step` from `lo` to `hi`, at most 21 of them (none for a step or a range
/// that is not finite). Stepped by a whole-number index: a float stepped by adding may stop
/// moving (1e308 + 1 is 1e308).
fn steps_within(lo: f64, hi: f64, step: f64) -> Vec<f64> {
    let (first, last) = ((lo / step).ceil(), (hi / step).floor());
    if !(first.is_finite() && last.is_finite() && step > 0.0) || last < first {
        return Vec::new();
    }
    let count = (last - first).min(20.0) as u32;
    (0..=count).map(|k| (first + f64::from(k)) * step).collect()
}

/// The round ticks of a linear range: about five, from `lo` up (see [`steps_within`]).
pub fn linear_ticks(lo: f64, hi: f64) -> Vec<f64> {
    steps_within(lo, hi, nice_step(hi / 5.0 - lo / 5.0))
}

/// Round ticks of a log axis: powers of ten, with 2× and 5× (or every digit) when that gives
/// too few; on less than a decade, round linear steps. Decades are counted by their exponent,
/// within what an `f64` holds (10^-323 to 10^308), so the extremes cannot underflow to a power
/// that never grows.
fn log_ticks(lo: f64, hi: f64) -> Vec<f64> {
    let exponent = |v: f64, round: fn(f64) -> f64| round(v.log10()).clamp(-323.0, 308.0) as i32;
    let (from, to) = (exponent(lo, f64::floor), exponent(hi, f64::ceil));
    let within = |digits: &[f64]| -> Vec<f64> {
        (from..=to)
            .flat_map(|e| digits.iter().map(move |d| d * 10f64.powi(e)))
            .filter(|v| *v >= lo && *v <= hi)
            .take(64)
            .collect()
    };
    for digits in [
        &[1.0][..],
        &[1.0, 2.0, 5.0],
        &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0],
    ] {
        let ticks = within(digits);
        if ticks.len() >= 3 {
            return if ticks.len() > 9 && digits.len() == 1 {
                ticks.into_iter().step_by(2).collect()
            } else {
                ticks
            };
        }
    }
    steps_within(lo, hi, nice_step(hi / 4.0 - lo / 4.0))
}

/// The largest time unit of which `ns` holds at least `at_least`: (name, ns per unit).
fn unit_at(ns: f64, at_least: f64) -> (&'static str, f64) {
    [("s", 1e9), ("ms", 1e6), ("µs", 1e3)]
        .into_iter()
        .find(|(_, per)| ns >= per * at_least)
        .unwrap_or(("ns", 1.0))
}

/// The unit of a linear time axis, chosen by its largest value (at least 2 of it, so that
/// ticks read `500, 1000, 1500 ms` rather than `0.5, 1, 1.5 s`): (name, ns per unit).
pub fn time_unit(hi_ns: f64) -> (&'static str, f64) {
    unit_at(hi_ns, 2.0)
}

/// A tick value with the decimals its step needs (`0.5`, `12`, `2.25`).
pub fn plain(v: f64, step: f64) -> String {
    let decimals = if step > 0.0 && step < 1.0 {
        ((-step.log10()).ceil() as usize).min(6)
    } else {
        0
    };
    let text = format!("{v:.decimals$}");
    if text == "-0" {
        "0".into()
    } else {
        text
    }
}

/// The labels of a time axis's ticks and the axis's unit: on a linear axis one unit for all
/// (the title says which); on a log axis each tick in its own (`10 ms`, `1.00 s`).
pub fn time_labels(scale: &Scale, ticks: &[f64]) -> (Vec<String>, Option<&'static str>) {
    if scale.log {
        let labels = ticks.iter().map(|&t| short_ns(t)).collect();
        return (labels, None);
    }
    let (unit, per) = time_unit(scale.hi.abs().max(scale.lo.abs()));
    let step = ticks
        .windows(2)
        .map(|w| w[1] - w[0])
        .next()
        .unwrap_or(scale.hi);
    let labels = ticks.iter().map(|&t| plain(t / per, step / per)).collect();
    (labels, Some(unit))
}

/// A round duration as short as it reads: `20 ms`, `1 s`, `500 µs`, `2.5 s`.
fn short_ns(ns: f64) -> String {
    let (unit, per) = unit_at(ns, 1.0);
    if per == 1.0 {
        return human_ns(ns);
    }
    let text = format!("{:.2}", ns / per);
    let text = text.trim_end_matches('0').trim_end_matches('.');
    format!("{text} {unit}")
}

/// A ratio tick: `1×`, `0.5×`, `20×`.
pub fn ratio_label(v: f64) -> String {
    let text = if v >= 10.0 {
        format!("{v:.0}")
    } else {
        let t = format!("{v:.3}");
        t.trim_end_matches('0').trim_end_matches('.').to_string()
    };
    format!("{text}×")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_are_round() {
        assert_eq!(nice_step(0.3), 0.5);
        assert_eq!(nice_step(13.0), 20.0);
        assert_eq!(nice_step(1.0), 1.0);
        assert_eq!(nice_step(f64::NAN), 1.0);
    }

    #[test]
    fn a_narrow_series_gets_a_linear_axis_that_fits_it() {
        let s = Scale::fitting([243e6, 250e6, 290e6].into_iter(), 300.0, 0.0).unwrap();
        assert!(!s.log);
        assert!(s.lo <= 243e6 && s.hi >= 290e6 && s.lo > 0.0, "{s:?}");
        let ticks = s.ticks();
        assert!((3..=8).contains(&ticks.len()), "{ticks:?}");
        assert!(s.at(s.lo) == 300.0 && s.at(s.hi) == 0.0);
        let (labels, unit) = time_labels(&s, &ticks);
        assert_eq!(unit, Some("ms"));
        assert!(labels.iter().all(|l| !l.contains('.')), "{labels:?}");
    }

    #[test]
    fn a_cold_first_run_makes_the_axis_logarithmic() {
        let s = Scale::fitting([2e9, 50e6, 52e6].into_iter(), 300.0, 0.0).unwrap();
        assert!(s.log);
        let ticks = s.ticks();
        assert!(ticks.len() >= 3, "{ticks:?}");
        let (labels, unit) = time_labels(&s, &ticks);
        assert_eq!(unit, None);
        assert!(labels.contains(&"100 ms".to_string()), "{labels:?}");
        assert!(labels.contains(&"1 s".to_string()), "{labels:?}");
        let mid = s.at(316e6);
        assert!(mid > s.at(2e9) && mid < s.at(50e6));
    }

    #[test]
    fn log_ticks_on_less_than_a_decade_are_still_several() {
        let ticks = log_ticks(0.8, 1.3);
        assert!(ticks.len() >= 3, "{ticks:?}");
        assert!(ticks.iter().all(|t| (0.8..=1.3).contains(t)));
    }

    #[test]
    fn the_extremes_of_an_f64_give_a_few_ticks_and_end() {
        for (lo, hi) in [
            (-1e308, 1e308),
            (-f64::MAX, f64::MAX),
            (5e-324, 1.0),
            (5e-324, 5e-324),
            (0.0, f64::INFINITY),
            (f64::NAN, 1.0),
        ] {
            for log in [false, true] {
                let s = Scale {
                    lo,
                    hi,
                    log,
                    px_lo: 0.0,
                    px_hi: 100.0,
                };
                assert!(s.ticks().len() <= 64, "{lo} {hi} {log}");
            }
            let fitted = Scale::fitting([lo, hi].into_iter(), 0.0, 100.0);
            assert!(fitted.is_none_or(|s| s.ticks().len() <= 64), "{lo} {hi}");
        }
        assert!(log_ticks(5e-324, 1e-300).len() >= 3);
    }

    #[test]
    fn labels_read_naturally() {
        assert_eq!(plain(0.25, 0.05), "0.25");
        assert_eq!(plain(200.0, 50.0), "200");
        assert_eq!(short_ns(2.5e9), "2.5 s");
        assert_eq!(short_ns(20e6), "20 ms");
        assert_eq!(ratio_label(0.05), "0.05×");
        assert_eq!(ratio_label(1.0), "1×");
        assert_eq!(ratio_label(20.0), "20×");
    }
}
