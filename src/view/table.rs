//! The table of one batch (or a single run) on stderr: first run against the warm runs, metric
//! by metric, then what was rejected and the context. It renders an outcome; it computes nothing.
#![forbid(unsafe_code)]

use crate::batch::BatchOutcome;
use crate::plan::ColdWhen;
use crate::record::metrics::{is_residency, Metric, MAX_RSS, METRICS};
use crate::record::summary::MetricSummary;
use crate::text::escape_controls;
use crate::view::lines;
use crate::view::style::Style;
use crate::view::units::{human, human_uptime};
use std::fmt::Write;

/// Eight-level bars for a series, bucketed to at most `width` columns (bucket maximum).
pub fn sparkline(values: &[f64], width: usize) -> String {
    const BARS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
    if values.is_empty() || width == 0 {
        return String::new();
    }
    let per = values.len().div_ceil(width);
    let buckets: Vec<f64> = values
        .chunks(per)
        .map(|c| c.iter().copied().fold(f64::MIN, f64::max))
        .collect();
    let lo = buckets.iter().copied().fold(f64::MAX, f64::min);
    let hi = buckets.iter().copied().fold(f64::MIN, f64::max);
    buckets
        .iter()
        .map(|&v| {
            let level = if hi > lo {
                ((v - lo) / (hi - lo) * 7.0).round() as usize
            } else {
                0
            };
            BARS[level.min(7)]
        })
        .collect()
}

fn row_visible(summary: &MetricSummary, rejected_first: Option<f64>, watching: bool) -> bool {
    if watching && is_residency(summary.name) {
        return true;
    }
    let any = |s: &Option<crate::record::stats::Summary>| s.is_some_and(|s| s.max > 0.0);
    let always = matches!(
        summary.name,
        "wall_ns" | "user_us" | "sys_us" | "max_rss_kib" | "major_faults" | "block_in"
    );
    (summary.all.is_some() || rejected_first.is_some())
        && (always || any(&summary.all) || rejected_first.is_some_and(|v| v > 0.0))
}

/// The figure of a rejected first run, shown with this mark: it is in no statistic.
const REJECTED_MARK: &str = " ✗";

/// The table for a batch (or a single run), with its context lines.
pub fn table(outcome: &BatchOutcome, title: &str, colour: bool) -> String {
    let style = Style { on: colour };
    let mut out = String::new();
    let _ = writeln!(out, "{}", style.bold(title));
    metric_rows(&mut out, outcome, &style);
    strip_and_floor(&mut out, outcome);
    crate::view::explain::explain(&mut out, outcome, &style);
    rejected_lines(&mut out, outcome, &style);
    first_rejected_line(&mut out, outcome, &style);
    cache_unknown_line(&mut out, outcome, &style);
    context_lines(&mut out, outcome, &style);
    out
}

/// The header and one row per visible metric.
fn metric_rows(out: &mut String, outcome: &BatchOutcome, style: &Style) {
    let has_warm = outcome.summaries.iter().any(|s| s.warm.is_some());
    let rejected_first = outcome.first.as_ref().is_some_and(|f| !f.counted);
    let first = if rejected_first { "first ✗" } else { "first" };
    if has_warm {
        let _ = writeln!(
            out,
            "  {:<20} {:>11} {:>12} {:>25} {:>8}",
            "metric", first, "warm median", "warm min … max", "first/warm"
        );
    } else {
        let value = if rejected_first { first } else { "value" };
        let _ = writeln!(out, "  {:<20} {:>11}", "metric", value);
    }
    let rejected = outcome.first.as_ref().filter(|f| !f.counted);
    for (i, (summary, metric)) in outcome.summaries.iter().zip(METRICS).enumerate() {
        let rejected_value = rejected.and_then(|f| f.row.get(i));
        if !row_visible(summary, rejected_value, outcome.watching) {
            continue;
        }
        let absent = if outcome.watching && is_residency(metric.name) {
            "unknown"
        } else {
            "—"
        };
        let first = match rejected {
            Some(_) => rejected_value.map_or(format!("{absent}{REJECTED_MARK}"), |v| {
                format!("{}{REJECTED_MARK}", human(metric.unit, v))
            }),
            None => first_cell(summary, metric, absent),
        };
        let line = metric_row(summary, metric, first, has_warm, absent, style);
        let _ = writeln!(out, "{line}");
    }
}

fn floor_note(count: u64) -> &'static str {
    if count > 0 {
        " ≤ floor"
    } else {
        ""
    }
}

/// The first run's cell: its value, marked when at the runner's floor.
fn first_cell(summary: &MetricSummary, metric: &Metric, absent: &str) -> String {
    let first = summary
        .first
        .map_or(absent.into(), |s| human(metric.unit, s.median));
    let at = summary.runs_at_floor;
    format!("{first}{}", at.map_or("", |a| floor_note(a.first)))
}

fn metric_row(
    summary: &MetricSummary,
    metric: &Metric,
    first: String,
    has_warm: bool,
    absent: &str,
    style: &Style,
) -> String {
    let at = summary.runs_at_floor;
    if !has_warm {
        return format!("  {:<20} {:>11}", metric.label, first);
    }
    let (median, range) = match summary.warm {
        Some(w) => (
            format!(
                "{}{}",
                human(metric.unit, w.median),
                at.map_or("", |a| floor_note(a.warm))
            ),
            format!(
                "{} … {}",
                human(metric.unit, w.min),
                human(metric.unit, w.max)
            ),
        ),
        None => (absent.into(), absent.into()),
    };
    // A ratio of two residencies says nothing the two figures do not.
    let ratio = summary
        .first_to_warm_median
        .filter(|_| !is_residency(metric.name))
        .map_or("—".into(), |r| format!("{r:.2}×"));
    let ratio = if ratio != "—" && summary.first_to_warm_median.is_some_and(|r| r >= 1.5) {
        style.warn(&ratio)
    } else {
        ratio
    };
    format!(
        "  {:<20} {:>11} {:>12} {:>25} {:>8}",
        metric.label, first, median, range, ratio
    )
}

/// The strip of wall times, and the runs whose max RSS is at the runner's floor.
fn strip_and_floor(out: &mut String, outcome: &BatchOutcome) {
    if outcome.walls_ns.len() > 1 {
        let _ = writeln!(
            out,
            "  wall per run         {}",
            sparkline(&outcome.walls_ns, 60)
        );
    }
    if let Some(at) = outcome.summaries.get(MAX_RSS).and_then(|s| s.runs_at_floor) {
        if at.all > 0 {
            let _ = writeln!(
                out,
                "  ≤ floor: {} of {} runs' max RSS is not above coldtrace's own peak RSS, so it may be the runner's, not the command's",
                at.all, outcome.counts.counted
            );
        }
    }
}

/// How a single run ended, or which runs of a batch were rejected (with the last stderr lines).
fn rejected_lines(out: &mut String, outcome: &BatchOutcome, style: &Style) {
    let failed = &outcome.failed;
    if let Some(single) = &outcome.single_outcome {
        let _ = writeln!(out, "  outcome: {single}");
        return;
    }
    if failed.is_empty() {
        let _ = writeln!(out, "  rejected: none");
        return;
    }
    let rejected: Vec<String> = failed
        .iter()
        .map(|f| format!("#{} {}", f.index, escape_controls(&f.reason)))
        .collect();
    let verb = if failed.iter().all(|f| f.counted) {
        "failed (counted, --ignore-failure)"
    } else {
        "rejected"
    };
    let _ = writeln!(
        out,
        "  {}: {} of {} — {}",
        style.warn(verb),
        failed.len(),
        outcome.counts.recorded,
        rejected.join("; ")
    );
    if let Some(tail) = failed.iter().rev().find_map(|f| f.stderr_tail.as_deref()) {
        let _ = writeln!(out, "  last lines of the failed run's stderr:");
        for line in tail.lines() {
            // The command's own bytes: shown, never interpreted by the terminal.
            let _ = writeln!(out, "    | {}", escape_controls(line));
        }
    }
}

/// One line when the run with role `first` was rejected: its figures stay in the first column,
/// marked, and no warm run takes its place.
fn first_rejected_line(out: &mut String, outcome: &BatchOutcome, style: &Style) {
    if let Some(text) = first_rejected_text(outcome) {
        lines::marked(out, "✗", &text, style);
    }
}

/// `✗ the cold run was rejected (#0: exited with code 1); no warm run replaces it`, when the
/// run with role `first` was rejected (`compare` shows it under its command too).
pub fn first_rejected_text(outcome: &BatchOutcome) -> Option<String> {
    let first = outcome.first.as_ref().filter(|f| !f.counted)?;
    let reason = first.failure_reason.as_deref().unwrap_or("not counted");
    let what = if outcome.cold_when == Some(ColdWhen::FirstOnly) {
        "the cold run was rejected"
    } else {
        "the first run was rejected"
    };
    Some(format!(
        "{what} (#{}: {reason}); no warm run replaces it",
        first.index
    ))
}

/// Why "cached before/after" says unknown, and what attribution needs.
fn cache_unknown_line(out: &mut String, outcome: &BatchOutcome, style: &Style) {
    if let Some(why) = &outcome.cache_unknown {
        let text = format!("{why}; attribution needs write access to the files, or root");
        lines::warning(out, "cached before/after", &text, style);
    }
}

/// The machine, interruption or early stop, and where the records are.
fn context_lines(out: &mut String, outcome: &BatchOutcome, style: &Style) {
    let sys = &outcome.context.system;
    let boot = sys
        .boot_id
        .as_deref()
        .map_or("?".to_string(), |b| b.chars().take(8).collect());
    let uptime = sys.uptime_s.map_or("?".to_string(), human_uptime);
    let _ = writeln!(
        out,
        "  context: boot {boot}, up {uptime}, kernel {}, {} CPUs",
        sys.kernel_release.as_deref().unwrap_or("?"),
        sys.cpu_count.map_or("?".to_string(), |n| n.to_string())
    );
    if let Some(sig) = outcome.interrupted_by {
        let _ = writeln!(out, "  {}", style.interrupted(sig));
    }
    if let Some(reason) = &outcome.stopped_reason {
        let reason = escape_controls(reason);
        let _ = writeln!(out, "  {}", style.warn(&format!("stopped: {reason}")));
    }
    if let Some(dir) = &outcome.out_dir {
        let dir = escape_controls(&dir.display().to_string());
        let _ = writeln!(
            out,
            "  records: {dir}/runs.jsonl, summary: {dir}/batch.json"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sparkline_marks_the_slow_first_run() {
        let s = sparkline(&[10.0, 1.0, 1.0, 1.0], 60);
        assert_eq!(s, "█▁▁▁");
        assert_eq!(sparkline(&[1.0; 200], 50).chars().count(), 50);
        assert_eq!(sparkline(&[], 10), "");
    }
}
