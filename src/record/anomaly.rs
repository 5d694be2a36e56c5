//! Disturbed warm runs and noisy warm series: the rules, as pure functions of run figures. It
//! flags; it measures, reads and renders nothing.
//!
//! Two moments. When a run ends, its record can only be judged against what came before it
//! ([`OnlineCheck`]): a warm run that starts with fewer watched bytes cached than the previous
//! run left (something evicted pages between the runs), or that reads from storage while the
//! warm runs before it read nothing. When the batch ends, the whole warm series is known
//! ([`series_anomalies`]): a warm run whose storage reads or major faults are above 0 while the
//! warm median is 0, or beyond hyperfine's outlier bound (|x − median| > 14.826 × MAD, i.e. ten
//! scaled median absolute deviations), and whether the warm wall times are noisy
//! ([`noise`]).
#![forbid(unsafe_code)]

use crate::record::columns::{WarmSeries, FELL_FROM_BYTES, FELL_TO_BYTES};
use crate::record::metrics::metric_index;
use crate::record::run::Anomaly;
use crate::record::stats::Summary;
use crate::serialize_struct;

/// hyperfine's outlier bound on the modified z-score |x − median| / MAD (ten scaled MADs).
pub const OUTLIER_BOUND: f64 = 14.826;
/// The warm wall times' robust spread (1.4826 × MAD over the median) above which the series is
/// called noisy.
pub const NOISY_SPREAD: f64 = 0.10;

/// The rule that flagged `cached_before_fell`.
pub const RULE_FELL: &str = "fewer watched bytes cached at its start than at the end of the \
                             run before it, with no cold action between";
/// The rule that flagged storage reads while the warm runs so far (or in all) read nothing.
pub const RULE_ABOVE_ZERO: &str = "above 0 while the warm median is 0";
/// The share of the first run's working set cached before a run made cold from which that run
/// was not cold.
pub const NOT_COLD_CACHED: f64 = 0.5;
/// The rule that flagged a run made cold that started with its working set cached.
pub const RULE_NOT_COLD_CACHED: &str = "a run made cold that started with at least half of \
                                        what the first run brought into the page cache cached";
/// The rule that flagged a run made cold that read nothing from storage.
pub const RULE_NOT_COLD_NO_READ: &str =
    "a run made cold that read nothing from storage while the first run did";
/// The rule that flagged an outlier.
pub const RULE_OUTLIER: &str = "beyond hyperfine's outlier bound: |x − median| > 14.826 × MAD";

/// An anomaly of the run with index `index`, as `batch.json` lists it.
#[derive(Clone, Debug, PartialEq)]
pub struct RunAnomaly {
    /// The run.
    pub index: u64,
    /// What stood out.
    pub anomaly: Anomaly,
}
serialize_struct!(RunAnomaly { index, anomaly });

/// What [`OnlineCheck`] needs to know of a run.
#[derive(Clone, Copy, Debug, Default)]
pub struct RunFacts {
    /// A counted warm run (judged against the warm runs before it).
    pub counted_warm: bool,
    /// The counted run with role `first`.
    pub counted_first: bool,
    /// A counted run after the first that a cold action preceded (judged: was it cold?).
    pub counted_cold: bool,
    /// Bytes it read from storage (`/proc/PID/io`, else rusage blocks × 512).
    pub read_bytes: Option<u64>,
    /// The share of the first run's working set cached right before it.
    pub working_set_ratio: Option<f64>,
    /// A cold action came right before it.
    pub cold_action: bool,
    /// Watched bytes resident and their total, right before the run.
    pub before: Option<(u64, u64)>,
    /// The same right after it.
    pub after: Option<(u64, u64)>,
    /// rusage block input.
    pub block_in: Option<u64>,
    /// rusage major faults.
    pub major_faults: Option<u64>,
}

impl RunFacts {
    /// The facts of a record.
    pub fn of(record: &crate::record::run::RunRecord<'_>) -> RunFacts {
        let resident = |r: &crate::measure::cache::Residency| {
            r.resident_bytes.map(|bytes| (bytes, r.total_bytes))
        };
        use crate::record::run::Role;
        let read_bytes = record.child_io.as_ref().and_then(|io| io.read_bytes);
        RunFacts {
            counted_warm: record.counted && record.role == Role::Warm,
            counted_first: record.counted && record.role == Role::First,
            counted_cold: record.counted && record.role == Role::Cold,
            read_bytes: read_bytes.or(record.rusage.map(|u| u.0.block_in * 512)),
            working_set_ratio: record
                .cache
                .as_ref()
                .and_then(|c| c.working_set_before.as_ref())
                .and_then(|w| w.resident_ratio),
            cold_action: record.cold_action.is_some(),
            before: record.cache.as_ref().and_then(|c| resident(&c.before)),
            after: record.cache.as_ref().and_then(|c| resident(&c.after)),
            block_in: record.rusage.map(|u| u.0.block_in),
            major_faults: record.rusage.map(|u| u.0.major_faults),
        }
    }
}

/// The judgment of each run as it ends, from the runs before it (a few counters, nothing per
/// run is kept).
#[derive(Clone, Debug, Default)]
pub struct OnlineCheck {
    previous_after: Option<(u64, u64)>,
    /// What the first run read from storage.
    first_read_bytes: Option<u64>,
    warm: u64,
    warm_without_block_in: u64,
    warm_without_major_faults: u64,
}

impl OnlineCheck {
    /// The anomalies of the run that just ended (then remembers it).
    pub fn check(&mut self, run: &RunFacts) -> Vec<Anomaly> {
        let mut found = Vec::new();
        if run.counted_first {
            self.first_read_bytes = run.read_bytes;
        }
        if run.counted_cold {
            found.extend(self.not_cold(run));
        }
        if run.counted_warm {
            if let (false, Some((before, total)), Some((after, previous_total))) =
                (run.cold_action, run.before, self.previous_after)
            {
                if before < after && total == previous_total {
                    found.push(Anomaly {
                        kind: "cached_before_fell",
                        metric: "resident_bytes_before",
                        value: before as f64,
                        reference: after as f64,
                        rule: RULE_FELL,
                        mapped_by: None,
                    });
                }
            }
            // More than half of the warm runs so far had none: their median is 0.
            let median_zero = |zeros: u64| self.warm > 0 && 2 * zeros > self.warm;
            for (metric, value, zeros) in [
                ("block_in", run.block_in, self.warm_without_block_in),
                (
                    "major_faults",
                    run.major_faults,
                    self.warm_without_major_faults,
                ),
            ] {
                if value.is_some_and(|v| v > 0) && median_zero(zeros) {
                    found.push(storage_reads(
                        metric,
                        value.unwrap_or(0) as f64,
                        0.0,
                        RULE_ABOVE_ZERO,
                    ));
                }
            }
            self.warm += 1;
            self.warm_without_block_in += u64::from(run.block_in == Some(0));
            self.warm_without_major_faults += u64::from(run.major_faults == Some(0));
        }
        self.previous_after = run.after;
        found
    }
}

impl OnlineCheck {
    /// Whether a run made cold was not: it started with most of the first run's working set
    /// cached, or (when that was not measured or not enough) it read nothing from storage
    /// while the first run did.
    fn not_cold(&self, run: &RunFacts) -> Option<Anomaly> {
        let anomaly = |metric, value, reference, rule| Anomaly {
            kind: "not_cold",
            metric,
            value,
            reference,
            rule,
            mapped_by: None,
        };
        if let Some(ratio) = run.working_set_ratio.filter(|&r| r >= NOT_COLD_CACHED) {
            return Some(anomaly(
                "working_set_ratio_before",
                ratio,
                NOT_COLD_CACHED,
                RULE_NOT_COLD_CACHED,
            ));
        }
        match (run.read_bytes, self.first_read_bytes) {
            (Some(0), Some(first)) if first > 0 => Some(anomaly(
                "read_bytes",
                0.0,
                first as f64,
                RULE_NOT_COLD_NO_READ,
            )),
            _ => None,
        }
    }
}

fn storage_reads(metric: &'static str, value: f64, reference: f64, rule: &'static str) -> Anomaly {
    Anomaly {
        kind: "storage_reads",
        metric,
        value,
        reference,
        rule,
        mapped_by: None,
    }
}

/// Median and median absolute deviation of `values` (`None` when empty).
pub fn median_and_mad(values: &[f64]) -> Option<(f64, f64)> {
    let m = Summary::of(values)?.median;
    let deviations: Vec<f64> = values.iter().map(|v| (v - m).abs()).collect();
    Some((m, Summary::of(&deviations)?.median))
}

/// Whether `value` stands out of a series with `median` and `mad` by the rules above.
fn stands_out(value: f64, median: f64, mad: f64) -> Option<&'static str> {
    if median == 0.0 && value > 0.0 {
        Some(RULE_ABOVE_ZERO)
    } else if mad > 0.0 && (value - median) / mad > OUTLIER_BOUND {
        Some(RULE_OUTLIER)
    } else {
        None
    }
}

/// Every anomaly of the warm series `warm` (rows in run order), judged over the whole series:
/// storage reads and major faults against the warm median, and the cached-before falls the
/// records flagged when they ended.
pub fn series_anomalies<W: WarmSeries + ?Sized>(warm: &W) -> Vec<RunAnomaly> {
    let mut found = Vec::new();
    let columns = ["block_in", "major_faults"].map(|m| (m, metric_index(m)));
    // One column in memory at a time, then the rows streamed.
    let stats = columns.map(|(_, i)| median_and_mad(&warm.column(i)));
    warm.each_row(&mut |row| {
        let index = row.index().unwrap_or(0);
        if let (Some(from), Some(to)) = (row.get(FELL_FROM_BYTES), row.get(FELL_TO_BYTES)) {
            found.push(RunAnomaly {
                index,
                anomaly: Anomaly {
                    kind: "cached_before_fell",
                    metric: "resident_bytes_before",
                    value: to,
                    reference: from,
                    rule: RULE_FELL,
                    mapped_by: None,
                },
            });
        }
        for ((metric, i), stat) in columns.iter().zip(&stats) {
            let (Some(value), Some((m, mad))) = (row.get(*i), stat) else {
                continue;
            };
            if let Some(rule) = stands_out(value, *m, *mad) {
                found.push(RunAnomaly {
                    index,
                    anomaly: storage_reads(metric, value, *m, rule),
                });
            }
        }
    });
    found
}

/// Why the warm wall times are noisy, if they are.
#[derive(Clone, Debug, PartialEq)]
pub struct Noise {
    /// Warm runs whose wall time is beyond the outlier bound.
    pub outliers: u64,
    /// 1.4826 × MAD over the median of the warm wall times.
    pub spread: f64,
    /// The rule that fired, in words.
    pub rule: String,
}
serialize_struct!(Noise {
    outliers,
    spread,
    rule
});

/// Whether the warm wall times `walls` are noisy: a wall time beyond hyperfine's outlier bound,
/// or a robust spread above [`NOISY_SPREAD`] of the median. `None` with fewer than 3 runs.
pub fn noise(walls: &[f64]) -> Option<Noise> {
    let (m, mad) = median_and_mad(walls).filter(|_| walls.len() >= 3)?;
    let outliers = walls
        .iter()
        .filter(|&&w| mad > 0.0 && ((w - m) / mad).abs() > OUTLIER_BOUND)
        .count() as u64;
    let spread = if m > 0.0 { 1.4826 * mad / m } else { 0.0 };
    let rule = if outliers > 0 {
        format!("{outliers} warm wall time(s) {RULE_OUTLIER}")
    } else if spread > NOISY_SPREAD {
        // A spread that rounds to the bound is said with a decimal: never "10 % (> 10 %)".
        let decimals = usize::from((spread * 100.0).round() <= NOISY_SPREAD * 100.0);
        format!(
            "robust spread (1.4826 × MAD) {:.*} % of the median wall time (> {:.0} %)",
            decimals,
            spread * 100.0,
            NOISY_SPREAD * 100.0
        )
    } else {
        return None;
    };
    Some(Noise {
        outliers,
        spread,
        rule,
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_spread_just_above_the_bound_is_never_said_as_the_bound() {
        // Median 100, MAD 6.8: 1.4826 × 6.8 = 10.08 % of the median.
        let walls = [93.2, 100.0, 106.8, 100.0, 93.2, 106.8, 100.0];
        let rule = noise(&walls).expect("noisy").rule;
        assert!(
            rule.contains("10.1 % of the median wall time (> 10 %)"),
            "{rule}"
        );
        let wider = [80.0, 100.0, 120.0, 100.0, 80.0, 120.0, 100.0];
        let rule = noise(&wider).expect("noisy").rule;
        assert!(rule.contains("30 % of the median"), "{rule}");
    }

    use super::*;
    use crate::record::columns::Row;

    fn warm(before: u64, after: u64, block_in: u64) -> RunFacts {
        RunFacts {
            counted_warm: true,
            cold_action: false,
            before: Some((before, 1000)),
            after: Some((after, 1000)),
            block_in: Some(block_in),
            major_faults: Some(0),
            ..RunFacts::default()
        }
    }

    #[test]
    fn a_fall_between_runs_and_reads_after_quiet_warm_runs_are_flagged_as_they_end() {
        let mut check = OnlineCheck::default();
        let first = RunFacts {
            cold_action: true,
            after: Some((890, 1000)),
            ..RunFacts::default()
        };
        assert!(check.check(&first).is_empty());
        assert!(check.check(&warm(890, 890, 0)).is_empty());
        assert!(check.check(&warm(890, 890, 0)).is_empty());
        let disturbed = check.check(&warm(850, 890, 6440));
        let kinds: Vec<(&str, &str)> = disturbed.iter().map(|a| (a.kind, a.metric)).collect();
        assert_eq!(
            kinds,
            [
                ("cached_before_fell", "resident_bytes_before"),
                ("storage_reads", "block_in")
            ]
        );
        assert_eq!((disturbed[0].value, disturbed[0].reference), (850.0, 890.0));
        // The run after a cold action is not judged for a fall, however low it starts.
        let mut after_cold = warm(0, 890, 0);
        after_cold.cold_action = true;
        assert!(check.check(&after_cold).is_empty());
    }

    #[test]
    fn a_run_made_cold_that_starts_cached_or_reads_nothing_was_not_cold() {
        let mut check = OnlineCheck::default();
        let first = RunFacts {
            counted_first: true,
            cold_action: true,
            read_bytes: Some(12 << 20),
            ..RunFacts::default()
        };
        assert!(check.check(&first).is_empty());
        let cold = |ratio: Option<f64>, read: u64| RunFacts {
            counted_cold: true,
            cold_action: true,
            read_bytes: Some(read),
            working_set_ratio: ratio,
            ..RunFacts::default()
        };
        assert!(check.check(&cold(Some(0.0), 12 << 20)).is_empty(), "cold");
        let cached = check.check(&cold(Some(1.0), 0));
        assert_eq!(cached.len(), 1, "one anomaly for one run: {cached:?}");
        assert_eq!(
            (cached[0].kind, cached[0].metric, cached[0].value),
            ("not_cold", "working_set_ratio_before", 1.0)
        );
        // Without a working-set figure (no --watch), reading nothing says it.
        let quiet = check.check(&cold(None, 0));
        assert_eq!(
            (quiet[0].metric, quiet[0].reference),
            ("read_bytes", (12 << 20) as f64)
        );
        // A first run that read nothing itself sets no such expectation.
        let mut check = OnlineCheck::default();
        check.check(&RunFacts {
            read_bytes: Some(0),
            ..first
        });
        assert!(check.check(&cold(None, 0)).is_empty());
    }

    #[test]
    fn the_first_warm_run_has_no_earlier_warm_run_to_be_judged_against() {
        let mut check = OnlineCheck::default();
        assert!(check.check(&warm(0, 890, 500)).is_empty());
    }

    fn row(index: u64, block_in: f64) -> Row {
        let mut values = vec![f64::NAN; crate::record::metrics::METRICS.len()];
        values[metric_index("block_in")] = block_in;
        values[metric_index("major_faults")] = 0.0;
        values.push(index as f64);
        Row::from_values(values)
    }

    #[test]
    fn over_the_whole_series_reads_above_a_zero_median_or_beyond_the_bound_stand_out() {
        let quiet = [row(1, 0.0), row(2, 0.0), row(3, 6440.0), row(4, 0.0)];
        let found = series_anomalies(&quiet);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].index, 3);
        assert_eq!(found[0].anomaly.rule, RULE_ABOVE_ZERO);
        let busy: Vec<Row> = (1..=9)
            .map(|i| row(i, if i == 5 { 100_000.0 } else { 100.0 + i as f64 }))
            .collect();
        let found = series_anomalies(&busy);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!((found[0].index, found[0].anomaly.rule), (5, RULE_OUTLIER));
        let steady: Vec<Row> = (1..=9).map(|i| row(i, 100.0 + i as f64)).collect();
        assert!(series_anomalies(&steady).is_empty());
    }

    #[test]
    fn a_noisy_series_says_which_rule_fired() {
        assert_eq!(noise(&[10.0, 10.1, 9.9, 10.0]), None);
        let outlier = noise(&[10.0, 10.1, 9.9, 10.0, 30.0]).unwrap();
        assert_eq!(outlier.outliers, 1);
        let spread = noise(&[10.0, 14.0, 7.0, 12.0, 9.0]).unwrap();
        assert_eq!(spread.outliers, 0);
        assert!(spread.rule.contains("robust spread"), "{}", spread.rule);
        assert_eq!(noise(&[1.0, 100.0]), None, "too few runs");
    }
}
