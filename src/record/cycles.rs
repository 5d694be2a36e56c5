//! `--cold-cycles`: the runs summarised by their position after the cold action (position 0
//! cold, 1 lightly cached, the rest warm), and the cold penalty with a bootstrap interval.
//! Pure: rows in, summaries out; it runs, reads and renders nothing.
//!
//! One cold first run per batch is one sample. M cycles of { cold action; K runs } give every
//! position M samples, and the penalty of position 0 over the warm positions an interval: the
//! ratio of medians with the same 95 % percentile bootstrap as `compare` (2,000 resamples of
//! each side, seeded), only with at least [`MIN_CYCLES_FOR_INTERVAL`] cycles.
//!
//! The measured penalty is per cycle ([`PerCycle`]): each cycle's cold run minus the same
//! cycle's warm run with the median wall time, split into on-CPU, run-queue and blocked time
//! as the first-run penalty is (`penalty::first_penalty`), then averaged over the cycles — the
//! means of the parts add up to the mean of the whole, which medians would not — with a
//! bootstrap interval of the mean. Pairing a cold run with its own cycle's warm runs cancels
//! what drifts between cycles (the machine's load).
#![forbid(unsafe_code)]

use crate::record::columns::{FirstRun, Row, WarmSeries, CYCLE, POSITION};
use crate::record::metrics::metric_index;
use crate::record::stats::{
    bootstrap_mean_ci, bootstrap_ratio_ci, ratio, NoInterval, Summary, LEVEL, RESAMPLES,
};
use crate::record::verdict::penalty::{first_penalty, Basis, FirstPenalty, RunFigures};
use crate::record::verdict::tree_penalty::{tree_penalty, TreeFigures, TreeParts};
use crate::serialize_struct;
use std::collections::BTreeMap;

/// Why a `--cold-cycles` batch has no first-run penalty (`first_penalty_unavailable`).
pub const FIRST_IS_A_CYCLE: &str = "--cold-cycles: the first run is cycle 0's cold run; the \
                                    measured penalty is cycles.penalty.per_cycle";

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
    /// The measured penalty: the cycles' own differences, averaged.
    pub per_cycle: Option<PerCycle>,
}
serialize_struct!(CyclePenalty {
    warm_positions,
    cold_median_wall_ns,
    warm_median_wall_ns,
    difference_ns,
    ratio,
    ci_low,
    ci_high,
    no_interval,
    per_cycle
});

/// Each cycle's cold run minus its own median warm run, averaged over the cycles.
#[derive(Clone, Debug, PartialEq)]
pub struct PerCycle {
    /// Cycles with a counted cold run and a counted warm run.
    pub cycles: u64,
    /// The mean of their wall-time differences.
    pub mean_wall_ns: f64,
    /// Lower end of the 95 % percentile-bootstrap interval of that mean.
    pub ci_low_ns: Option<f64>,
    /// Upper end.
    pub ci_high_ns: Option<f64>,
    /// Why there is no interval, when there is none.
    pub no_interval: Option<String>,
    /// The interval lies above 0: a cold run costs more than a warm one. The parts are an
    /// explanation only then.
    pub significant: bool,
    /// How the differences were split: `schedstat` when every cycle's was, else why not.
    pub basis: Basis,
    /// Mean extra on-CPU time (schedstat); `null` unless every cycle was split.
    pub cpu_ns: Option<f64>,
    /// Mean extra time waiting for a CPU.
    pub runqueue_ns: Option<f64>,
    /// Mean extra blocked time. `cpu_ns + runqueue_ns + blocked_ns == mean_wall_ns`.
    pub blocked_ns: Option<f64>,
    /// Mean extra rusage CPU (all threads and waited-for descendants).
    pub rusage_cpu_ns: Option<f64>,
    /// Mean extra bytes read from storage.
    pub read_bytes: Option<f64>,
    /// Mean extra major faults.
    pub major_faults: Option<f64>,
    /// Mean extra voluntary context switches.
    pub voluntary_switches: Option<f64>,
    /// Mean extra R, Q, D, S of the whole tree (`basis` `tree`: every cycle's were known).
    pub tree: Option<TreeParts>,
}
serialize_struct!(PerCycle {
    cycles,
    mean_wall_ns,
    ci_low_ns,
    ci_high_ns,
    no_interval,
    significant,
    basis,
    cpu_ns,
    runqueue_ns,
    blocked_ns,
    rusage_cpu_ns,
    read_bytes,
    major_faults,
    voluntary_switches,
    tree
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
    let pairs = cycle_pairs(counted_first, rows, &warm);
    let penalty = penalty(&values(&[0], 0), &values(&warm, 0), warm, m).map(|p| CyclePenalty {
        per_cycle: per_cycle(&pairs),
        ..p
    });
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
        per_cycle: None,
    })
}

/// Each cycle's cold run and its own warm run with the median wall time (the lower middle of
/// an even count), as the penalty's figures: `first` (cycle 0's cold run) and the later rows,
/// grouped by their cycle.
fn cycle_pairs(
    first: Option<&Row>,
    rows: &dyn WarmSeries,
    warm: &[u64],
) -> Vec<(Figures, Figures)> {
    let mut by_cycle: BTreeMap<u64, (Option<Figures>, Vec<Figures>)> = BTreeMap::new();
    let mut take = |row: &Row| {
        let (Some(cycle), Some(position)) = (row.get_u64(CYCLE), row.get_u64(POSITION)) else {
            return;
        };
        let entry = by_cycle.entry(cycle).or_default();
        if position == 0 {
            entry.0 = Some((RunFigures::of(row), TreeFigures::of(row)));
        } else if warm.contains(&position) {
            entry.1.push((RunFigures::of(row), TreeFigures::of(row)));
        }
    };
    if let Some(row) = first {
        take(row);
    }
    rows.each_row(&mut take);
    by_cycle
        .into_values()
        .filter_map(|(cold, mut warm)| {
            warm.retain(|w| w.0.wall_ns.is_some());
            warm.sort_by_key(|w| (w.0.wall_ns, w.0.index));
            let reference = *warm.get(warm.len().checked_sub(1)? / 2)?;
            Some((cold?, reference))
        })
        .collect()
}

/// A run's figures for a penalty: its own and its tree's.
type Figures = (RunFigures, TreeFigures);

/// The mean of the cycles' differences and its interval, split when every cycle's was.
fn per_cycle(pairs: &[(Figures, Figures)]) -> Option<PerCycle> {
    let diffs: Vec<FirstPenalty> = pairs
        .iter()
        .filter_map(|((cold, cold_tree), (reference, reference_tree))| {
            let tree = tree_penalty(
                (cold_tree, cold.index),
                (reference_tree, reference.index),
                None,
            );
            first_penalty(cold, reference, &[], tree)
        })
        .collect();
    let n = diffs.len();
    let mean_of = |f: &dyn Fn(&FirstPenalty) -> Option<i64>| -> Option<f64> {
        let values: Vec<f64> = diffs
            .iter()
            .map(|d| f(d).map(|v| v as f64))
            .collect::<Option<_>>()?;
        (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
    };
    let walls: Vec<f64> = diffs.iter().map(|d| d.wall_ns as f64).collect();
    let mean_wall_ns = mean_of(&|d| Some(d.wall_ns))?;
    let ci = if (n as u32) < MIN_CYCLES_FOR_INTERVAL {
        Err(format!(
            "{n} cycle{} with a cold and a warm run: an interval needs at least \
             {MIN_CYCLES_FOR_INTERVAL}",
            if n == 1 { "" } else { "s" }
        ))
    } else {
        bootstrap_mean_ci(&walls, RESAMPLES, LEVEL, 0xC7C1E)
            .ok_or_else(|| "too few cycles".to_string())
    };
    // The weakest split of any cycle is the split of their mean.
    let basis = [Basis::Unavailable, Basis::MainThread, Basis::Schedstat]
        .into_iter()
        .find(|b| diffs.iter().any(|d| d.basis == *b))
        .unwrap_or(Basis::Tree);
    let tree_part = |k: usize| {
        mean_of(&|d: &FirstPenalty| {
            let t = &d.tree;
            [
                t.on_cpu_ns,
                t.queued_ns,
                t.uninterruptible_ns,
                t.sleeping_ns,
            ][k]
        })
    };
    Some(PerCycle {
        cycles: n as u64,
        mean_wall_ns,
        ci_low_ns: ci.as_ref().ok().map(|c| c.0),
        ci_high_ns: ci.as_ref().ok().map(|c| c.1),
        significant: ci.as_ref().is_ok_and(|c| c.0 > 0.0),
        no_interval: ci.err(),
        basis,
        cpu_ns: mean_of(&|d| d.cpu_ns),
        runqueue_ns: mean_of(&|d| d.runqueue_ns),
        blocked_ns: mean_of(&|d| d.blocked_ns),
        rusage_cpu_ns: mean_of(&|d| d.rusage_cpu_ns),
        read_bytes: mean_of(&|d| d.evidence.read_bytes),
        major_faults: mean_of(&|d| d.evidence.major_faults),
        voluntary_switches: mean_of(&|d| d.evidence.voluntary_switches),
        tree: Some(TreeParts {
            on_cpu_ns: tree_part(0),
            queued_ns: tree_part(1),
            uninterruptible_ns: tree_part(2),
            sleeping_ns: tree_part(3),
            tasks: None,
        })
        .filter(|t| basis == Basis::Tree && t.all().is_some()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::columns::{Row, INDEX};
    use crate::record::verdict::penalty::Basis;

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

    /// A run of cycle `c` at `position`: `wall` ms, of which `cpu` ms on a CPU (all of it
    /// rusage CPU, single-threaded) and 1 ms waiting for one.
    fn timed(c: u64, position: u64, wall: f64, cpu: f64) -> Row {
        let mut values = vec![f64::NAN; POSITION + 1];
        values[0] = wall * 1e6;
        values[metric_index("user_us")] = cpu * 1e3;
        values[metric_index("sys_us")] = 0.0;
        values[metric_index("runqueue_wait_ns")] = 1e6;
        values[crate::record::columns::ON_CPU_NS] = cpu * 1e6;
        values[INDEX] = (c * 4 + position) as f64;
        values[CYCLE] = c as f64;
        values[POSITION] = position as f64;
        Row::from_values(values)
    }

    #[test]
    fn each_cycle_is_paired_with_its_own_warm_runs_and_the_parts_add_up() {
        // Six cycles of four runs; the machine drifts 10 ms a cycle, which pairing cancels:
        // every cold run is 30 ms slower than its own cycle's warm runs, 5 ms of it on a CPU.
        let mut rows = Vec::new();
        for c in 0..6u64 {
            let drift = 10.0 * c as f64;
            for p in 1..4u64 {
                rows.push(timed(c, p, 50.0 + drift + p as f64, 10.0));
            }
            if c > 0 {
                rows.push(timed(c, 0, 80.0 + drift + 2.0, 15.0));
            }
        }
        let first = FirstRun {
            row: timed(0, 0, 82.0, 15.0),
            index: 0,
            counted: true,
            failure_reason: None,
            at_floor: false,
        };
        let s = summarise(Some(&first), &rows, 6, 4);
        let d = s.penalty.clone().unwrap().per_cycle.unwrap();
        assert_eq!(d.cycles, 6);
        // The warm positions are #2 and #3; the lower middle of the two is #2: 52 ms + drift.
        assert!((d.mean_wall_ns - 30e6).abs() < 1.0, "{}", d.mean_wall_ns);
        assert_eq!(d.basis, Basis::Schedstat);
        assert!((d.cpu_ns.unwrap() - 5e6).abs() < 1.0);
        let sum = d.cpu_ns.unwrap() + d.runqueue_ns.unwrap() + d.blocked_ns.unwrap();
        assert!((sum - d.mean_wall_ns).abs() < 1.0, "{sum}");
        // Every cycle differs by exactly 30 ms: the interval is that point, above 0.
        assert!(d.significant && d.ci_low_ns == Some(30e6), "{d:?}");
        // Unpaired, the drift leaves the ratio of medians far less sure.
        let p = s.penalty.unwrap();
        assert!(p.ci_high.unwrap() / p.ci_low.unwrap() > 1.1, "{p:?}");
    }
}
