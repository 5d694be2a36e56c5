//! The human view: a compact table on stderr, human units, a strip of wall times.
#![forbid(unsafe_code)]

use crate::batch::BatchOutcome;
use crate::metrics::{MetricSummary, Unit, MAX_RSS, METRICS};
use std::fmt::Write;

/// `1.23 ms`, `845 µs`, `2.50 s`.
pub fn human_ns(ns: f64) -> String {
    if ns >= 1e9 {
        format!("{:.2} s", ns / 1e9)
    } else if ns >= 1e6 {
        format!("{:.2} ms", ns / 1e6)
    } else if ns >= 1e3 {
        format!("{:.0} µs", ns / 1e3)
    } else {
        format!("{ns:.0} ns")
    }
}

/// `12.3 MiB`, `900 KiB`.
pub fn human_kib(kib: f64) -> String {
    if kib >= 1024.0 * 1024.0 {
        format!("{:.2} GiB", kib / (1024.0 * 1024.0))
    } else if kib >= 1024.0 {
        format!("{:.1} MiB", kib / 1024.0)
    } else {
        format!("{kib:.0} KiB")
    }
}

/// `1.5 MiB` for bytes.
pub fn human_bytes(bytes: f64) -> String {
    if bytes < 1024.0 {
        format!("{bytes:.0} B")
    } else {
        human_kib(bytes / 1024.0)
    }
}

/// A value in its metric's unit.
pub fn human(unit: Unit, v: f64) -> String {
    match unit {
        Unit::Ns => human_ns(v),
        Unit::Us => human_ns(v * 1e3),
        Unit::Kib => human_kib(v),
        Unit::Bytes => human_bytes(v),
        Unit::Count => format!("{v:.0}"),
        Unit::Ratio if v > 0.0 && v < 0.1 => format!("{:.1}%", v * 100.0),
        Unit::Ratio => format!("{:.0}%", v * 100.0),
    }
}

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

/// Whether to colour stderr: a terminal, and `NO_COLOR` unset or empty.
pub fn use_colour() -> bool {
    use std::io::IsTerminal;
    std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

struct Style {
    on: bool,
}

impl Style {
    fn bold(&self, s: &str) -> String {
        if self.on {
            format!("\x1b[1m{s}\x1b[0m")
        } else {
            s.to_string()
        }
    }
    fn warn(&self, s: &str) -> String {
        if self.on {
            format!("\x1b[33m{s}\x1b[0m")
        } else {
            s.to_string()
        }
    }
}

fn row_visible(summary: &MetricSummary) -> bool {
    let any = |s: &Option<crate::stats::Summary>| s.is_some_and(|s| s.max > 0.0);
    summary.all.is_some()
        && (matches!(
            summary.name,
            "wall_ns" | "user_us" | "sys_us" | "max_rss_kib" | "major_faults" | "block_in"
        ) || any(&summary.all))
}

/// The table for a batch (or a single run), with its context lines.
pub fn table(outcome: &BatchOutcome, title: &str, colour: bool) -> String {
    let style = Style { on: colour };
    let mut out = String::new();
    let _ = writeln!(out, "{}", style.bold(title));
    let has_warm = outcome.summaries.iter().any(|s| s.warm.is_some());
    if has_warm {
        let _ = writeln!(
            out,
            "  {:<20} {:>11} {:>12} {:>25} {:>8}",
            "metric", "first", "warm median", "warm min … max", "first/warm"
        );
    } else {
        let _ = writeln!(out, "  {:<20} {:>11}", "metric", "value");
    }
    for (summary, metric) in outcome.summaries.iter().zip(METRICS) {
        if !row_visible(summary) {
            continue;
        }
        let first = summary
            .first
            .map_or("—".into(), |s| human(metric.unit, s.median));
        let floor_note = |count: u64| if count > 0 { " ≤ floor" } else { "" };
        let at = summary.runs_at_floor;
        let first = format!("{first}{}", at.map_or("", |a| floor_note(a.first)));
        if has_warm {
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
                None => ("—".into(), "—".into()),
            };
            let ratio = summary
                .first_to_warm_median
                .map_or("—".into(), |r| format!("{r:.2}×"));
            let ratio = if summary.first_to_warm_median.is_some_and(|r| r >= 1.5) {
                style.warn(&ratio)
            } else {
                ratio
            };
            let _ = writeln!(
                out,
                "  {:<20} {:>11} {:>12} {:>25} {:>8}",
                metric.label, first, median, range, ratio
            );
        } else {
            let _ = writeln!(out, "  {:<20} {:>11}", metric.label, first);
        }
    }
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
    let failed = &outcome.failed;
    if let Some(single) = &outcome.single_outcome {
        let _ = writeln!(out, "  outcome: {single}");
    } else if failed.is_empty() {
        let _ = writeln!(out, "  rejected: none");
    } else {
        let rejected: Vec<String> = failed
            .iter()
            .map(|f| format!("#{} {}", f.index, f.reason))
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
                let _ = writeln!(out, "    | {line}");
            }
        }
    }
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
        let _ = writeln!(
            out,
            "  {}",
            style.warn(&format!(
                "interrupted by {sig}: the summary covers the runs that finished"
            ))
        );
    }
    if let Some(reason) = &outcome.stopped_reason {
        let _ = writeln!(out, "  {}", style.warn(&format!("stopped: {reason}")));
    }
    if let Some(dir) = &outcome.out_dir {
        let _ = writeln!(
            out,
            "  records: {}/runs.jsonl, summary: {}/batch.json",
            dir.display(),
            dir.display()
        );
    }
    out
}

/// The commands of a comparison side by side: each command's warm median, and its ratio to
/// the first command's with the 95 % interval; then the verdicts.
pub fn compare_table(outcome: &crate::compare::CompareOutcome, colour: bool) -> String {
    let style = Style { on: colour };
    let mut out = String::new();
    let n = outcome.commands.len();
    let _ = writeln!(
        out,
        "{}",
        style.bold(&format!("coldtrace: {n} commands compared, interleaved"))
    );
    for c in &outcome.commands {
        let _ = writeln!(
            out,
            "  [{}] {}  ({} counted, {} rejected)",
            c.index,
            crate::app::shorten(&c.command, 100),
            c.counts.counted,
            c.counts.rejected
        );
    }
    let mut header = format!("  {:<20}", "warm median");
    for c in &outcome.commands {
        let _ = write!(header, " {:>30}", format!("[{}]", c.index));
    }
    let _ = writeln!(out, "{header}");
    for (cmp, metric) in outcome.comparison.iter().zip(METRICS) {
        if cmp
            .commands
            .iter()
            .all(|r| r.warm_median.is_none_or(|v| v == 0.0))
            && !matches!(metric.name, "wall_ns")
        {
            continue;
        }
        let mut line = format!("  {:<20}", metric.label);
        for r in &cmp.commands {
            let value = r.warm_median.map_or("—".into(), |v| human(metric.unit, v));
            let cell = match (r.command, r.ratio_to_first, r.ci_low, r.ci_high) {
                (0, _, _, _) => value,
                (_, Some(x), Some(lo), Some(hi)) => format!("{value} {x:.2}× [{lo:.2}–{hi:.2}]"),
                (_, Some(x), _, _) => format!("{value} {x:.2}×"),
                _ => value,
            };
            let _ = write!(line, " {cell:>30}");
        }
        let _ = writeln!(out, "{line}");
    }
    let verdicts: Vec<&str> = outcome
        .comparison
        .iter()
        .filter(|c| matches!(c.metric, "wall_ns" | "user_us" | "sys_us" | "max_rss_kib"))
        .flat_map(|c| c.commands.iter().filter_map(|r| r.verdict.as_deref()))
        .collect();
    if verdicts.is_empty() {
        let _ = writeln!(
            out,
            "  no difference in wall, CPU or max RSS: every 95% interval includes 1"
        );
    }
    for v in verdicts {
        let _ = writeln!(out, "  {v}");
    }
    if let Some(sig) = outcome.interrupted_by {
        let _ = writeln!(
            out,
            "  {}",
            style.warn(&format!(
                "interrupted by {sig}: the summary covers the runs that finished"
            ))
        );
    }
    out
}

/// `2h13m`, `95s`.
pub fn human_uptime(s: f64) -> String {
    let s = s as u64;
    if s >= 86_400 {
        format!("{}d{}h", s / 86_400, (s % 86_400) / 3600)
    } else if s >= 3600 {
        format!("{}h{:02}m", s / 3600, (s % 3600) / 60)
    } else if s >= 60 {
        format!("{}m{:02}s", s / 60, s % 60)
    } else {
        format!("{s}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_read_naturally() {
        assert_eq!(human_ns(1_234_567.0), "1.23 ms");
        assert_eq!(human_ns(845_000.0), "845 µs");
        assert_eq!(human_kib(2048.0), "2.0 MiB");
        assert_eq!(human(Unit::Ratio, 0.031), "3.1%");
        assert_eq!(human(Unit::Ratio, 0.5), "50%");
        assert_eq!(human_uptime(7980.0), "2h13m");
    }

    #[test]
    fn sparkline_marks_the_slow_first_run() {
        let s = sparkline(&[10.0, 1.0, 1.0, 1.0], 60);
        assert_eq!(s, "█▁▁▁");
        assert_eq!(sparkline(&[1.0; 200], 50).chars().count(), 50);
        assert_eq!(sparkline(&[], 10), "");
    }
}
