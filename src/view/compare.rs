//! `compare`'s table: each command's warm median side by side, its ratio to the first
//! command's with the interval, then the verdicts. It renders an outcome; it computes nothing.
#![forbid(unsafe_code)]

use crate::batch::CompareOutcome;
use crate::record::metrics::METRICS;
use crate::view::style::Style;
use crate::view::units::{human, shorten};
use std::fmt::Write;

/// The commands of a comparison side by side: each command's warm median, and its ratio to
/// the first command's with the 95 % interval; then the verdicts.
pub fn compare_table(outcome: &CompareOutcome, colour: bool) -> String {
    let style = Style { on: colour };
    let mut out = String::new();
    let n = outcome.commands.len();
    let _ = writeln!(
        out,
        "{}",
        style.bold(&format!("coldtrace: {n} commands compared, interleaved"))
    );
    for (c, batch) in outcome.commands.iter().zip(&outcome.batches) {
        let _ = writeln!(
            out,
            "  [{}] {}  ({} counted, {} rejected)",
            c.index,
            crate::text::escape_controls(&shorten(&c.command, 100)),
            c.counts.counted,
            c.counts.rejected
        );
        if let Some(text) = crate::view::table::first_rejected_text(batch) {
            let _ = writeln!(out, "      {} {text}", style.warn("✗"));
        }
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
        let _ = writeln!(out, "  {}", style.interrupted(sig));
    }
    out
}
