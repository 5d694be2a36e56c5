//! `--cold-cycles`: the runs summarised by their position after the cold action (position 0
//! cold, 1 lightly cached, the rest warm), and the cold penalty with a bootstrap interval.
//! Pure: rows in, summaries out; it runs, reads and renders nothing.
//!
//! One cold first run per batch is one sample. M cycles of { cold action; K runs } give every
//! position M samples, and the penalty of position 0 over the warm positions an interval: the
//! ratio of medians with the same 95 % percentile bootstrap as `compare` (2,000 resamples of
//! each side, seeded), only with at least [`MIN_CYCLES_FOR_INTERVAL`] cycles.
#![forbid(unsafe_code)]

use crate::record::columns::{FirstRun, WarmSeries, POSITION};
use crate::record::metrics::metric_index;
use crate::record::stats::{bootstrap_ratio_ci, ratio, NoInterval, Summary, LEVEL, RESAMPLES};
use crate::serialize_struct;

/// Fewer cycles than this give a ratio, but no interval.
pub const MIN_CYCLES_FOR_INTERVAL: u32 = 5;

/// What the runs at one position after the cold action did.
#[derive(Clone, Debug, PartialEq)]
pub struct PositionSummary {
    /// 0: right after the cold action.
    pub position: u64,
    /// `cold`, `lightly cached` or `warm`.
    pub label: &'static str,
    /// Counted runs at this position (at most one per cycle).
    pub n: u64,
    /// Their wall times.
    pub wall_ns: Option<Summary>,
    /// Their block input (512-byte blocks).
    pub block_in: Option<Summary>,
    /// Their bytes read from storage.
    pub read_bytes: Option<Summary>,
    /// Their major faults.
    pub major_faults: Option<Summary>,
}
serialize_struct!(PositionSummary {
    position,
    label,
    n,
    wall_ns,
    block_in,
    read_bytes,
    major_faults
});

/// Position 0's wall time over the warm positions'.
#[derive(Clone, Debug, PartialEq)]
pub struct CyclePenalty {
    /// The positions counted as warm.
    pub warm_positions: Vec<u64>,
    /// Median wall time at position 0.
    pub cold_median_wall_ns: f64,
    /// Median wall time over the warm positions.
    pub warm_median_wall_ns: f64,
    /// The difference of the two medians.
    pub difference_ns: f64,
    /// Their ratio.
    pub ratio: Option<f64>,
    /// Lower end of the 95 % percentile-bootstrap interval of the ratio.
    pub ci_low: Option<f64>,
    /// Upper end.
    pub ci_high: Option<f64>,
    /// Why there is no interval, when there is none.
    pub no_interval: Option<String>,
}
serialize_struct!(CyclePenalty {
    warm_positions,
    cold_median_wall_ns,
    warm_median_wall_ns,
    difference_ns,
    ratio,
    ci_low,
    ci_high,
    no_interval
});

/// The `cycles` object of `batch.json`.
#[derive(Clone, Debug, PartialEq)]
pub struct CyclesSummary {
    /// M, as asked for.
    pub cycles: u32,
    /// K (`-n`), the runs in each cycle.
    pub runs_per_cycle: u32,
    /// One summary per position.
    pub positions: Vec<PositionSummary>,
    /// The cold penalty, or `None` with [`CyclesSummary::penalty_unavailable`].
    pub penalty: Option<CyclePenalty>,
    /// Why there is no penalty.
    pub penalty_unavailable: Option<&'static str>,
    /// `confidence` as `compare` words it.
    pub confidence: String,
}
serialize_struct!(CyclesSummary {
    cycles,
    runs_per_cycle,
    positions,
    penalty,
    penalty_unavailable,
    confidence
});

/// The label of `position` in a cycle of `k` runs.
pub fn label(position: u64, k: u32) -> &'static str {
    match (position, k) {
        (0, _) => "cold",
        (1, k) if k >= 3 => "lightly cached",
        _ => "warm",
    }
}

/// The positions counted as warm: 2 and after when there are three or more, else 1.
pub fn warm_positions(k: u32) -> Vec<u64> {
    match k {
        0 | 1 => Vec::new(),
        2 => vec![1],
        k => (2..u64::from(k)).collect(),
    }
}

/// The summary of `m` cycles of `k` runs from the first run and every later counted run
/// (`rows`: warm and cold, streamed once per figure).
pub fn summarise(first: Option<&FirstRun>, rows: &dyn WarmSeries, m: u32, k: u32) -> CyclesSummary {
    let counted_first = first.filter(|f| f.counted).map(|f| &f.row);
    // Column `i`'s values of the runs at `positions`: one column in memory at a time.
    let values = |positions: &[u64], i: usize| -> Vec<f64> {
        let mut out: Vec<f64> = counted_first
            .filter(|_| positions.contains(&0))
            .and_then(|r| r.get(i))
            .into_iter()
            .collect();
        rows.each_row(&mut |r| {
            let at = r.get(POSITION).map(|p| p as u64);
            if at.is_some_and(|p| positions.contains(&p)) {
                out.extend(r.get(i));
            }
        });
        out
    };
    let positions = (0..u64::from(k))
        .map(|p| {
            let of = |name: &str| Summary::of(&values(&[p], metric_index(name)));
            let wall_ns = of("wall_ns");
            PositionSummary {
                position: p,
                label: label(p, k),
                n: wall_ns.map_or(0, |s| s.n),
                wall_ns,
                block_in: of("block_in"),
                read_bytes: of("read_bytes"),
                major_faults: of("major_faults"),
            }
        })
        .collect();
    let warm = warm_positions(k);
    let penalty = penalty(&values(&[0], 0), &values(&warm, 0), warm, m);
    CyclesSummary {
        cycles: m,
        runs_per_cycle: k,
        positions,
        penalty_unavailable: penalty.as_ref().err().copied(),
        penalty: penalty.ok(),
        confidence: format!(
            "{:.0}% percentile bootstrap of the ratio of medians, {RESAMPLES} resamples of each \
             position's runs",
            LEVEL * 100.0
        ),
    }
}

fn penalty(
    cold: &[f64],
    warm: &[f64],
    warm_positions: Vec<u64>,
    m: u32,
) -> Result<CyclePenalty, &'static str> {
    if warm_positions.is_empty() {
        return Err("one run per cycle (-n 1): no warm position to compare with");
    }
    let cold_median = Summary::of(cold).ok_or("no counted cold run")?.median;
    let warm_median = Summary::of(warm).ok_or("no counted warm run")?.median;
    let ci = if m < MIN_CYCLES_FOR_INTERVAL {
        Err(format!(
            "{m} cycle{}: an interval needs at least {MIN_CYCLES_FOR_INTERVAL}",
            if m == 1 { "" } else { "s" }
        ))
    } else {
        bootstrap_ratio_ci(warm, cold, RESAMPLES, LEVEL, 0xC01D).map_err(|e| match e {
            NoInterval::TooFew => "too few counted runs".to_string(),
            NoInterval::ZeroMedian => "the warm positions' median is 0 (no ratio)".to_string(),
        })
    };
    Ok(CyclePenalty {
        warm_positions,
        cold_median_wall_ns: cold_median,
        warm_median_wall_ns: warm_median,
        difference_ns: cold_median - warm_median,
        ratio: ratio(Some(cold_median), Some(warm_median)),
        ci_low: ci.as_ref().ok().map(|c| c.0),
        ci_high: ci.as_ref().ok().map(|c| c.1),
        no_interval: ci.err(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::columns::{Row, INDEX};

    fn row(index: u64, position: u64, wall: f64, block_in: f64) -> Row {
        let mut values = vec![f64::NAN; POSITION + 1];
        values[0] = wall;
        values[metric_index("block_in")] = block_in;
        values[INDEX] = index as f64;
        values[POSITION] = position as f64;
        Row::from_values(values)
    }

    fn first(wall: f64) -> FirstRun {
        FirstRun {
            row: row(0, 0, wall, 1000.0),
            index: 0,
            counted: true,
            failure_reason: None,
            at_floor: false,
        }
    }

    #[test]
    fn positions_are_labelled_and_the_rest_are_warm() {
        assert_eq!(
            (0..4).map(|p| label(p, 4)).collect::<Vec<_>>(),
            ["cold", "lightly cached", "warm", "warm"]
        );
        assert_eq!(label(1, 2), "warm");
        assert_eq!(warm_positions(4), [2, 3]);
        assert_eq!(warm_positions(2), [1]);
        assert!(warm_positions(1).is_empty());
    }

    #[test]
    fn five_cycles_of_three_give_five_samples_per_position_and_an_interval() {
        let mut rows = Vec::new();
        for c in 0..5u64 {
            for p in 0..3u64 {
                if (c, p) != (0, 0) {
                    let wall = [100.0, 20.0, 10.0][p as usize] + c as f64;
                    rows.push(row(c * 3 + p, p, wall, if p == 0 { 1000.0 } else { 0.0 }));
                }
            }
        }
        let s = summarise(Some(&first(100.0)), &rows, 5, 3);
        let ns: Vec<u64> = s.positions.iter().map(|p| p.n).collect();
        assert_eq!(ns, [5, 5, 5]);
        assert_eq!(s.positions[0].block_in.unwrap().median, 1000.0);
        let p = s.penalty.unwrap();
        assert_eq!(p.warm_positions, [2]);
        assert_eq!(
            (p.cold_median_wall_ns, p.warm_median_wall_ns),
            (102.0, 12.0)
        );
        let (lo, hi) = (p.ci_low.unwrap(), p.ci_high.unwrap());
        assert!(
            lo <= p.ratio.unwrap() && p.ratio.unwrap() <= hi,
            "{lo} {hi}"
        );
        assert!(lo > 1.0, "cold is slower: {lo}");
    }

    #[test]
    fn fewer_than_five_cycles_say_why_there_is_no_interval() {
        let rows = [
            row(1, 1, 20.0, 0.0),
            row(2, 0, 90.0, 9.0),
            row(3, 1, 21.0, 0.0),
        ];
        let s = summarise(Some(&first(100.0)), &rows, 2, 2);
        let p = s.penalty.unwrap();
        assert_eq!(
            p.no_interval.as_deref(),
            Some("2 cycles: an interval needs at least 5")
        );
        assert_eq!(p.ci_low, None);
        assert_eq!(p.ratio, Some(95.0 / 20.5));
        let one = summarise(Some(&first(100.0)), &[], 3, 1);
        assert!(one.penalty.is_none() && one.penalty_unavailable.unwrap().contains("-n 1"));
    }
}
