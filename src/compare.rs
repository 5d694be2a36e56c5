//! `coldtrace compare`: several commands in one batch, interleaved round-robin (hyperfine #21),
//! each with its own first run, records, artifacts and summary, plus the comparison: every
//! command's warm median over the first command's, with a bootstrap confidence interval.
#![forbid(unsafe_code)]

use crate::artifacts;
use crate::batch::{BatchError, BatchOutcome, CommandBatch, Progress, Shared, Signals, Slot, Step};
use crate::metrics::METRICS;
use crate::plan::ComparePlan;
use crate::serialize_struct;
use crate::stats::{bootstrap_ratio_ci, SplitMix64, Summary};
use coldtrace_syscalls::Signal;

/// Schema of the comparison document (`DIR/batch.json`).
pub const COMPARE_SCHEMA: &str = "coldtrace.compare/1";
/// Bootstrap resamples per interval.
pub const RESAMPLES: usize = 2000;
/// Confidence level of the intervals.
pub const LEVEL: f64 = 0.95;

/// One metric of one command, relative to the first command.
#[derive(Clone, Debug)]
pub struct Ratio {
    /// The command (index, 0 = the baseline).
    pub command: u64,
    /// This command's warm median.
    pub warm_median: Option<f64>,
    /// Its warm median ÷ the first command's.
    pub ratio_to_first: Option<f64>,
    /// Lower end of the 95 % percentile-bootstrap interval of that ratio.
    pub ci_low: Option<f64>,
    /// Upper end.
    pub ci_high: Option<f64>,
    /// In words, only when the interval excludes 1.
    pub verdict: Option<String>,
}
serialize_struct!(Ratio {
    command,
    warm_median,
    ratio_to_first,
    ci_low,
    ci_high,
    verdict
});

/// One metric across the commands.
#[derive(Clone, Debug)]
pub struct MetricComparison {
    /// Metric name (as in `summary`).
    pub metric: &'static str,
    /// Its unit.
    pub unit: &'static str,
    /// One entry per command.
    pub commands: Vec<Ratio>,
}
serialize_struct!(MetricComparison {
    metric,
    unit,
    commands
});

/// A command of the comparison.
#[derive(Clone, Debug)]
pub struct CommandEntry {
    /// Index (0 = the baseline).
    pub index: u64,
    /// The command as given.
    pub command: String,
    /// Its batch directory, relative to the comparison's.
    pub dir: Option<String>,
    /// Its own exit code as a batch.
    pub exit_code: u8,
    /// Its counts.
    pub counts: crate::batch::Counts,
}
serialize_struct!(CommandEntry {
    index,
    command,
    dir,
    exit_code,
    counts
});

struct CompareDocument<'a> {
    schema: &'static str,
    started_at: &'a str,
    finished_at: String,
    complete: bool,
    interrupted_by: Option<String>,
    order: &'static str,
    shuffle_seed: Option<u64>,
    confidence: String,
    commands: &'a [CommandEntry],
    comparison: &'a [MetricComparison],
}
serialize_struct!(CompareDocument<'_> {
    schema, started_at, finished_at, complete, interrupted_by, order, shuffle_seed, confidence,
    commands, comparison,
});

/// What a comparison hands back for rendering.
pub struct CompareOutcome {
    /// Process exit code.
    pub exit_code: u8,
    /// The comparison document (for `--json`).
    pub json: String,
    /// Each command's own outcome.
    pub batches: Vec<BatchOutcome>,
    /// The commands.
    pub commands: Vec<CommandEntry>,
    /// Per metric.
    pub comparison: Vec<MetricComparison>,
    /// The signal that interrupted it.
    pub interrupted_by: Option<Signal>,
}

/// The order of commands in `round` (seeded shuffle, or as given).
pub fn round_order(commands: usize, round: u64, seed: Option<u64>) -> Vec<usize> {
    let mut order: Vec<usize> = (0..commands).collect();
    if let Some(seed) = seed {
        SplitMix64::new(seed ^ round.wrapping_mul(0x9E37_79B9_7F4A_7C15)).shuffle(&mut order);
    }
    order
}

fn verdict(metric: &str, ratio: f64, lo: f64, hi: f64, name: &str, base: &str) -> Option<String> {
    let what = match metric {
        "wall_ns" => "wall time",
        "user_us" => "user CPU time",
        "sys_us" => "system CPU time",
        "max_rss_kib" => "max RSS",
        other => other,
    };
    if lo > 1.0 {
        Some(format!(
            "{name}: {what} {ratio:.2}× that of {base} (95% CI {lo:.2}–{hi:.2}): higher"
        ))
    } else if hi < 1.0 {
        Some(format!(
            "{name}: {what} {ratio:.2}× that of {base} (95% CI {lo:.2}–{hi:.2}): lower"
        ))
    } else {
        None
    }
}

/// Compares the commands' warm runs metric by metric.
pub fn compare_metrics(batches: &[BatchOutcome], names: &[String]) -> Vec<MetricComparison> {
    METRICS
        .iter()
        .enumerate()
        .map(|(m, metric)| {
            let base = batches
                .first()
                .map(|b| b.warm_values[m].as_slice())
                .unwrap_or(&[]);
            let base_median = Summary::of(base).map(|s| s.median);
            let commands = batches
                .iter()
                .enumerate()
                .map(|(c, batch)| {
                    let values = batch.warm_values[m].as_slice();
                    let warm_median = Summary::of(values).map(|s| s.median);
                    let ratio_to_first = crate::stats::ratio(warm_median, base_median);
                    let ci = if c == 0 {
                        None
                    } else {
                        bootstrap_ratio_ci(
                            base,
                            values,
                            RESAMPLES,
                            LEVEL,
                            0x5EED ^ (m as u64) << 8 ^ c as u64,
                        )
                    };
                    let verdict = match (ratio_to_first, ci) {
                        (Some(r), Some((lo, hi))) => {
                            verdict(metric.name, r, lo, hi, &names[c], &names[0])
                        }
                        _ => None,
                    };
                    Ratio {
                        command: c as u64,
                        warm_median,
                        ratio_to_first,
                        ci_low: ci.map(|(lo, _)| lo),
                        ci_high: ci.map(|(_, hi)| hi),
                        verdict,
                    }
                })
                .collect();
            MetricComparison {
                metric: metric.name,
                unit: metric.unit.name(),
                commands,
            }
        })
        .collect()
}

/// Runs every command interleaved: round r runs each command once, in `round_order`.
pub fn run(plan: &ComparePlan, signals: &Signals) -> Result<CompareOutcome, BatchError> {
    if let Some(dir) = &plan.out_dir {
        artifacts::create_empty_dir(dir)?;
    }
    let mut shared = Shared::new(signals)?;
    let mut batches = Vec::with_capacity(plan.plans.len());
    for p in &plan.plans {
        batches.push(CommandBatch::new(p, p.out_dir.as_deref(), &shared)?);
    }
    let started_at = crate::time::rfc3339_utc_now();
    let rounds = plan.plans[0].total_runs();
    let progress = Progress::new(rounds * batches.len() as u64, plan.quiet);
    let mut interrupted_by = None;
    let mut done = 0u64;
    'rounds: for round in 0..rounds {
        for (position, command) in round_order(batches.len(), round, plan.shuffle_seed)
            .into_iter()
            .enumerate()
        {
            if let Some(sig) = shared.pending_interrupt() {
                interrupted_by = Some(sig);
                break 'rounds;
            }
            let slot = Slot {
                command: command as u64,
                round,
                position: position as u64,
            };
            let step = batches[command].run_next(&mut shared, Some(slot))?;
            done += 1;
            progress.update(done, batches[command].last_wall_ns());
            if step == Step::Stop {
                break 'rounds;
            }
        }
    }
    progress.finish();
    let names: Vec<String> = plan
        .plans
        .iter()
        .map(|p| {
            crate::words::quote(
                &p.argv
                    .iter()
                    .map(|a| a.to_string_lossy().into_owned())
                    .collect::<Vec<_>>(),
            )
        })
        .collect();
    // A signal seen during one command's run stops every command's batch.
    let interrupted_by =
        interrupted_by.or_else(|| batches.iter().find_map(CommandBatch::interrupted_by));
    let mut outcomes = Vec::with_capacity(batches.len());
    for mut batch in batches {
        if let Some(sig) = interrupted_by {
            batch.interrupt(sig);
        }
        outcomes.push(batch.finish()?);
    }
    let commands: Vec<CommandEntry> = outcomes
        .iter()
        .enumerate()
        .map(|(i, o)| CommandEntry {
            index: i as u64,
            command: names[i].clone(),
            dir: plan.out_dir.as_ref().map(|_| format!("commands/{i:02}")),
            exit_code: o.exit_code,
            counts: o.counts,
        })
        .collect();
    let comparison = compare_metrics(&outcomes, &names);
    let complete = interrupted_by.is_none() && outcomes.iter().all(|o| o.stopped_reason.is_none());
    let document = CompareDocument {
        schema: COMPARE_SCHEMA,
        started_at: &started_at,
        finished_at: crate::time::rfc3339_utc_now(),
        complete,
        interrupted_by: interrupted_by.map(|s| s.to_string()),
        order: if plan.shuffle_seed.is_some() { "shuffled within each round" } else { "round-robin" },
        shuffle_seed: plan.shuffle_seed,
        confidence: format!(
            "{:.0}% percentile bootstrap of the ratio of warm medians, {RESAMPLES} resamples of each command's warm runs",
            LEVEL * 100.0
        ),
        commands: &commands,
        comparison: &comparison,
    };
    let json = serde_json::to_string_pretty(&document).unwrap_or_default();
    if let Some(dir) = &plan.out_dir {
        let mut bytes = json.clone().into_bytes();
        bytes.push(b'\n');
        artifacts::write_atomic(dir, "batch.json", &bytes)?;
    }
    let exit_code = if let Some(sig) = interrupted_by {
        128u8.saturating_add(sig.raw() as u8)
    } else {
        outcomes.iter().map(|o| o.exit_code).max().unwrap_or(0)
    };
    Ok(CompareOutcome {
        exit_code,
        json,
        batches: outcomes,
        commands,
        comparison,
        interrupted_by,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_robin_without_a_seed_and_a_permutation_with_one() {
        assert_eq!(round_order(3, 5, None), vec![0, 1, 2]);
        let shuffled = round_order(5, 1, Some(9));
        let mut sorted = shuffled.clone();
        sorted.sort();
        assert_eq!(sorted, vec![0, 1, 2, 3, 4]);
        assert_eq!(round_order(5, 1, Some(9)), shuffled);
        let differs = (0..20).any(|r| round_order(5, r, Some(9)) != vec![0, 1, 2, 3, 4]);
        assert!(differs);
    }
}
