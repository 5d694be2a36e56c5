//! `coldtrace compare`'s run loop: several commands in one batch, interleaved round-robin
//! (hyperfine #21), each with its own batch. It runs and interleaves; it computes no statistic
//! of the comparison (that is `record/compare.rs`) and renders nothing.
#![forbid(unsafe_code)]

use crate::batch::command::{Checked, CommandBatch};
use crate::batch::error::BatchError;
use crate::batch::outcome::{BatchOutcome, Step};
use crate::batch::progress::{BatchStart, Observer};
use crate::batch::shared::Shared;
use crate::batch::signals::Signals;
use crate::plan::ComparePlan;
use crate::record::artifacts::BatchDir;
use crate::record::columns::{Covered, WarmSeries};
use crate::record::compare::{
    compare_metrics, CommandEntry, CompareDocument, MetricComparison, ParameterEntry,
    COMPARE_SCHEMA,
};
use crate::record::dir::{claim_out_dir, DirHandle};
use crate::record::metrics::Metric;
use crate::record::run::Slot;
use crate::record::stats::{SplitMix64, LEVEL, RESAMPLES};
use coldtrace_syscalls::Signal;

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
    /// The metrics compared (the same for every command), in `comparison` order.
    pub metrics: Vec<Metric>,
    /// Per metric.
    pub comparison: Vec<MetricComparison>,
    /// The signal that interrupted it.
    pub interrupted_by: Option<Signal>,
    /// Where the commands' stdout went, in a few words (`stdout → /dev/null`).
    pub sink: String,
}

/// The order of commands in `round` (seeded shuffle, or as given).
pub fn round_order(commands: usize, round: u64, seed: Option<u64>) -> Vec<usize> {
    let mut order: Vec<usize> = (0..commands).collect();
    if let Some(seed) = seed {
        SplitMix64::new(seed ^ round.wrapping_mul(0x9E37_79B9_7F4A_7C15)).shuffle(&mut order);
    }
    order
}

/// Runs every command interleaved: round r runs each command once, in `round_order`.
pub fn run_compare(
    plan: &ComparePlan,
    signals: &Signals,
    observer: &mut dyn Observer,
) -> Result<CompareOutcome, BatchError> {
    // Every command is checked before anything is created: one that cannot run leaves no
    // directory behind.
    let checked = plan
        .plans
        .iter()
        .map(Checked::check)
        .collect::<Result<Vec<_>, _>>()?;
    crate::batch::command::stopped_before_anything(signals)?;
    // The comparison's directory and each command's under commands/, made relative to the
    // directory's descriptor (see record/dir.rs).
    let root = plan.out_dir.as_deref().map(claim_out_dir).transpose()?;
    let commands = root
        .as_ref()
        .map(|r| r.subdir("commands", true))
        .transpose()?;
    let mut shared = Shared::new(signals)?;
    let mut batches = Vec::with_capacity(plan.plans.len());
    for (i, c) in checked.into_iter().enumerate() {
        let dir = commands
            .as_ref()
            .map(|d| BatchDir::open(d.subdir(&format!("{i:02}"), true)?))
            .transpose()?;
        batches.push(c.open(dir, &shared)?);
    }
    let started_at = crate::measure::clock::rfc3339_utc_now();
    let set_up = setups(&mut batches, &mut shared);
    for batch in batches.iter_mut() {
        batch.say_notices(observer);
    }
    let interrupted_by = match set_up {
        Step::Continue => run_rounds(plan, &mut batches, &mut shared, observer)?,
        Step::Stop => None,
    };
    // A signal seen during one command's run stops every command's batch.
    let interrupted_by =
        interrupted_by.or_else(|| batches.iter().find_map(CommandBatch::interrupted_by));
    let mut outcomes = Vec::with_capacity(batches.len());
    shared.stop_tree();
    // Before --cleanup: a drop_caches of its own is for the next batch to see.
    shared.mark_end();
    let spawner = shared.stop_spawner();
    for mut batch in batches {
        if let Some(sig) = interrupted_by {
            batch.interrupt(sig);
        }
        batch.cleanup(&mut shared);
        batch.say_notices(observer);
        outcomes.push(batch.finish(spawner.clone())?);
    }
    finish_comparison(plan, root.as_ref(), &started_at, outcomes, interrupted_by)
}

/// Every command's `--setup`, in command order, before the first round; `Stop` if one failed.
fn setups(batches: &mut [CommandBatch<'_>], shared: &mut Shared<'_>) -> Step {
    for batch in batches.iter_mut() {
        if batch.setup(shared) == Step::Stop {
            return Step::Stop;
        }
    }
    Step::Continue
}

/// Once every command has made its first counted run, the number of rounds chosen by time
/// for all of them alike, from the slowest command's first run (so that none outruns the
/// budget and every command gets as many warm runs to compare).
fn choose_rounds(batches: &mut [CommandBatch<'_>]) {
    if batches.iter().all(CommandBatch::runs_chosen) {
        return;
    }
    let costs: Option<Vec<u64>> = batches.iter().map(CommandBatch::cost_ns).collect();
    if let Some(slowest) = costs.and_then(|c| c.into_iter().max()) {
        for batch in batches.iter_mut() {
            batch.choose_runs(slowest);
        }
    }
}

/// The rounds: each command once per round, until done, stopped or interrupted (returned).
fn run_rounds(
    plan: &ComparePlan,
    batches: &mut [CommandBatch<'_>],
    shared: &mut Shared<'_>,
    observer: &mut dyn Observer,
) -> Result<Option<Signal>, BatchError> {
    let mut round = 0u64;
    let commands: Vec<String> = batches.iter().map(CommandBatch::shown_command).collect();
    observer.batch_started(&BatchStart {
        commands: &commands,
        total_runs: batches.iter().map(CommandBatch::total_runs).sum(),
    });
    while batches.iter().any(|b| !b.is_done()) {
        for (position, command) in round_order(batches.len(), round, plan.shuffle_seed)
            .into_iter()
            .enumerate()
        {
            if batches[command].is_done() {
                continue;
            }
            if let Some(sig) = shared.pending_interrupt() {
                observer.finished();
                return Ok(Some(sig));
            }
            let slot = Slot {
                command: command as u64,
                round,
                position: position as u64,
            };
            // A turn is one run, or with --cold-cycles one whole cycle: the cycles, not the
            // runs, are interleaved, so another command's cold action never falls inside one.
            loop {
                let step = batches[command].run_next(shared, Some(slot), observer)?;
                if step == Step::Stop {
                    observer.finished();
                    return Ok(None);
                }
                if !batches[command].mid_cycle() {
                    break;
                }
                if let Some(sig) = shared.pending_interrupt() {
                    observer.finished();
                    return Ok(Some(sig));
                }
            }
        }
        choose_rounds(batches);
        observer.total_runs(batches.iter().map(CommandBatch::total_runs).sum());
        round += 1;
    }
    observer.finished();
    Ok(None)
}

/// The comparison document (written atomically) and the outcome for rendering.
fn finish_comparison(
    plan: &ComparePlan,
    root: Option<&DirHandle>,
    started_at: &str,
    outcomes: Vec<BatchOutcome>,
    interrupted_by: Option<Signal>,
) -> Result<CompareOutcome, BatchError> {
    let commands = command_entries(plan, &outcomes);
    // Each command's runs as its own figures cover them (the verdict's), so that the ratios
    // and intervals are of the same runs as the means beside them and every export's.
    let uncovered: Vec<Vec<u64>> = outcomes.iter().map(|o| o.verdict.uncovered()).collect();
    let covered: Vec<Covered<'_>> = outcomes
        .iter()
        .zip(&uncovered)
        .map(|(o, uncovered)| Covered {
            columns: &o.columns,
            first_apart: o.verdict.first_index.is_some(),
            uncovered,
        })
        .collect();
    let warm: Vec<&dyn WarmSeries> = covered.iter().map(|c| c as _).collect();
    let metrics = outcomes
        .first()
        .map(|o| o.metrics.clone())
        .unwrap_or_default();
    // The verdicts name each command as the table does: by its name, else its words.
    let shown: Vec<String> = commands
        .iter()
        .map(|c| c.name.clone().unwrap_or_else(|| c.command.clone()))
        .collect();
    let comparison = compare_metrics(&metrics, &warm, &shown);
    let complete = interrupted_by.is_none() && outcomes.iter().all(|o| o.stopped_reason.is_none());
    let document = CompareDocument {
        schema: COMPARE_SCHEMA,
        started_at,
        finished_at: crate::measure::clock::rfc3339_utc_now(),
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
    if let Some(dir) = root {
        dir.write_atomic_with("batch.json", |w| writeln!(w, "{json}"))?;
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
        metrics,
        comparison,
        interrupted_by,
        sink: plan
            .plans
            .first()
            .map_or(String::new(), |p| p.output.shown()),
    })
}

/// Each command of the comparison as the document lists it.
fn command_entries(plan: &ComparePlan, outcomes: &[BatchOutcome]) -> Vec<CommandEntry> {
    outcomes
        .iter()
        .enumerate()
        .map(|(i, o)| CommandEntry {
            index: i as u64,
            command: plan.plans[i].text.clone(),
            name: plan.plans[i].name.clone(),
            parameters: plan.plans[i]
                .parameters
                .iter()
                .map(|(name, value)| ParameterEntry {
                    name: name.clone(),
                    value: value.clone(),
                })
                .collect(),
            dir: plan.out_dir.as_ref().map(|_| format!("commands/{i:02}")),
            exit_code: o.exit_code,
            counts: o.counts,
        })
        .collect()
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
