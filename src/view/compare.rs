//! `compare`'s table: each command's warm median side by side, one unit per row, its ratio to
//! the first command's and the interval in cells of their own (aligned whether or not an
//! interval exists), then the verdicts. It renders an outcome; it computes nothing.
#![forbid(unsafe_code)]

use crate::batch::CompareOutcome;
use crate::plan::MetricView;
use crate::record::compare::{conclusion, CommandEntry, MetricComparison, Ratio};
use crate::record::metrics::{Metric, Unit};
use crate::view::grid::{Align, Grid};
use crate::view::lines::Note;
use crate::view::rows::{rows, Values};
use crate::view::style::Style;
use crate::view::units::{fold, shorten, Scale};
use std::fmt::Write;

/// A comparison as drawn: its commands, metrics and ratios, from a run (`compare`) or from
/// `DIR/batch.json` read back (`report`).
pub struct CompareView<'a> {
    /// The commands, in order (the first is the reference).
    pub commands: &'a [CommandEntry],
    /// The metrics compared, in `comparison` order.
    pub metrics: &'a [Metric],
    /// Per metric, each command's median, ratio and interval.
    pub comparison: &'a [MetricComparison],
    /// Which metrics it shows (`--metrics`).
    pub rows: MetricView,
}

impl<'a> CompareView<'a> {
    /// The view of a comparison just run.
    pub fn of(outcome: &'a CompareOutcome) -> CompareView<'a> {
        CompareView {
            commands: &outcome.commands,
            metrics: &outcome.metrics,
            comparison: &outcome.comparison,
            rows: MetricView::All,
        }
    }
}

/// The commands of a comparison side by side in `width` columns: each command's warm median,
/// and its ratio to the first command's with the 95 % interval; then the verdicts. When the
/// commands do not fit side by side, they are shown in groups, each beside the first.
pub fn compare_table(
    outcome: &CompareOutcome,
    rows: &MetricView,
    colour: bool,
    width: usize,
) -> String {
    let style = Style { on: colour };
    let view = CompareView {
        rows: rows.clone(),
        ..CompareView::of(outcome)
    };
    let mut out = String::new();
    let n = outcome.commands.len();
    let sink = crate::text::escape_controls(&outcome.sink);
    let title = format!("coldtrace: {n} commands compared, interleaved · {sink}");
    let _ = writeln!(out, "{}", style.bold(&shorten(&title, width)));
    for (i, line) in command_lines(&view).iter().enumerate() {
        let _ = writeln!(out, "  {}", shorten(line, width - 2));
        if let Some(text) = first_rejected(outcome, i) {
            let mut note = String::new();
            Note::marked("✗", text).write(&mut note, &style, width - 4);
            for line in note.lines() {
                let _ = writeln!(out, "    {line}");
            }
        }
    }
    out.push_str(&ratios_and_conclusion(&view, &wall_means(outcome), width));
    if let Some(sig) = outcome.interrupted_by {
        let _ = writeln!(out, "  {}", style.interrupted(sig));
    }
    out
}

/// Under the table, a line per command: the mean ± σ of its warm wall times (beside the
/// medians above, as `run`'s table has them), in one unit; nothing when no command has any.
fn wall_means(outcome: &CompareOutcome) -> Vec<String> {
    let warm: Vec<Option<crate::record::stats::Summary>> = outcome
        .batches
        .iter()
        .map(|b| {
            b.summaries
                .iter()
                .find(|s| s.name == "wall_ns")
                .and_then(|s| s.warm)
        })
        .collect();
    if warm.iter().all(Option::is_none) {
        return Vec::new();
    }
    let scale = Scale::for_values(
        Unit::Ns,
        warm.iter()
            .flatten()
            .flat_map(|s| [s.mean, s.stddev.unwrap_or(0.0)]),
    );
    // (mean, σ): σ is `None` for a single warm run, both for none.
    let cells: Vec<(String, Option<String>)> = warm
        .iter()
        .map(|s| match s {
            Some(s) => (scale.cell(s.mean), s.stddev.map(|sd| scale.cell(sd))),
            None => ("—".into(), None),
        })
        .collect();
    let mean_width = cells.iter().map(|(m, _)| m.chars().count()).max();
    let mean_width = mean_width.unwrap_or(0);
    let sd_width = cells.iter().flat_map(|(_, sd)| sd.as_ref());
    let sd_width = sd_width.map(|sd| sd.chars().count()).max().unwrap_or(0);
    let mut lines = vec!["wall time of the warm runs, mean ± σ:".to_string()];
    for (i, (mean, sd)) in cells.iter().enumerate() {
        let rest = match (sd, warm[i]) {
            (Some(sd), _) => format!(" ± {sd:>sd_width$} {}", scale.unit),
            (None, Some(_)) => format!(" {} (one run)", scale.unit),
            (None, None) => String::new(),
        };
        lines.push(format!("  [{i}] {mean:>mean_width$}{rest}"));
    }
    lines
}

/// A comparison read back (`report DIR`): its commands, the ratios and intervals, the
/// conclusion — the same words `compare` printed.
pub fn comparison_section(
    view: &CompareView<'_>,
    title: &str,
    colour: bool,
    width: usize,
) -> String {
    let style = Style { on: colour };
    let mut out = format!("{}\n", style.bold(&shorten(title, width)));
    for line in command_lines(view) {
        let _ = writeln!(out, "  {}", shorten(&line, width - 2));
    }
    out.push_str(&ratios_and_conclusion(view, &[], width));
    out
}

/// The grid (in groups that fit `width`), the lines `under` it, and the conclusion's lines,
/// folded to `width`.
fn ratios_and_conclusion(view: &CompareView<'_>, under: &[String], width: usize) -> String {
    let mut out = String::new();
    for (i, group) in groups(view, width).iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        for line in grid(view, group).lines(width) {
            let _ = writeln!(out, "{line}");
        }
    }
    for line in under {
        let _ = writeln!(out, "  {}", shorten(line, width - 2));
    }
    for line in verdicts(view) {
        for folded in fold(&line, width, "  ", "    ") {
            let _ = writeln!(out, "{folded}");
        }
    }
    out
}

/// The comparison as Markdown: the commands, the whole table, the verdicts as a list.
pub fn compare_markdown(outcome: &CompareOutcome) -> String {
    let style = Style { on: false };
    let view = CompareView::of(outcome);
    let mut out = format!(
        "**coldtrace: {} commands compared, interleaved · {}**\n\n",
        outcome.commands.len(),
        crate::text::escape_controls(&outcome.sink).replace('|', "\\|")
    );
    for (i, line) in command_lines(&view).iter().enumerate() {
        let _ = writeln!(out, "- {}", crate::text::markdown_text(line));
        if let Some(text) = first_rejected(outcome, i) {
            let _ = writeln!(out, "  - ✗ {}", crate::text::markdown_text(&text));
        }
    }
    out.push_str(&markdown_ratios(&view));
    if let Some(sig) = outcome.interrupted_by {
        let _ = writeln!(out, "- {}", style.interrupted(sig));
    }
    out
}

/// The whole table as Markdown, then the conclusion as a list.
pub fn markdown_ratios(view: &CompareView<'_>) -> String {
    let all: Vec<usize> = (1..view.commands.len()).collect();
    let mut out = format!("\n{}\n", grid(view, &all).markdown());
    for line in verdicts(view) {
        let _ = writeln!(out, "- {}", crate::text::markdown_text(&line));
    }
    out
}

/// Why command `i` has no first run, when its first run was rejected.
fn first_rejected(outcome: &CompareOutcome, i: usize) -> Option<String> {
    crate::view::table::first_rejected_text(outcome.batches.get(i)?)
}

fn command_lines(view: &CompareView<'_>) -> Vec<String> {
    view.commands
        .iter()
        .map(|c| {
            format!(
                "[{}] {}  ({} counted, {} rejected)",
                c.index,
                crate::text::escape_controls(c.name.as_deref().unwrap_or(&c.command)),
                c.counts.counted,
                c.counts.rejected
            )
        })
        .collect()
}

/// The commands beside the first, in groups that fit `width` (all of them when they fit).
fn groups(view: &CompareView<'_>, width: usize) -> Vec<Vec<usize>> {
    let others: Vec<usize> = (1..view.commands.len()).collect();
    let mut per = others.len().max(1);
    while per > 1 && grid(view, &others[..per]).fitted_width(width) > width {
        per -= 1;
    }
    others.chunks(per).map(<[usize]>::to_vec).collect()
}

fn shown(cmp: &MetricComparison, metric: &Metric) -> bool {
    metric.name == "wall_ns"
        || cmp
            .commands
            .iter()
            .any(|r| r.warm_median.is_some_and(|v| v != 0.0))
}

/// The positions of the metrics the table shows, in order (`--metrics`, and the tables' rule
/// of which rows are worth showing).
fn shown_rows(view: &CompareView<'_>) -> Vec<usize> {
    let worth_a_row = |i: usize| {
        let (cmp, metric) = (view.comparison.get(i), view.metrics.get(i));
        cmp.zip(metric).is_some_and(|(c, m)| shown(c, m))
    };
    let measured = |i: usize| {
        let cmp = view.comparison.get(i);
        cmp.is_some_and(|c| c.commands.iter().any(|r| r.warm_median.is_some()))
    };
    let values = Values {
        measured: &measured,
        worth_a_row: &worth_a_row,
    };
    rows(view.metrics, &view.rows, false, &values)
}

/// Metric and unit, the first command's median, then for each command of `others` its median,
/// ratio to the first and interval.
fn grid(view: &CompareView<'_>, others: &[usize]) -> Grid {
    let mut grid = Grid::new(2)
        .shrinkable("metric", Align::Left, 8)
        .column("unit", Align::Left)
        .column("[0]\nmedian", Align::Right);
    for &c in others {
        grid = grid
            .column(&format!("[{c}]\nmedian"), Align::Right)
            .column("\nratio", Align::Right)
            .column("\n95% CI", Align::Right);
    }
    for i in shown_rows(view) {
        let (Some(cmp), Some(metric)) = (view.comparison.get(i), view.metrics.get(i)) else {
            continue;
        };
        let scale = Scale::for_values(
            metric.unit,
            cmp.commands.iter().filter_map(|r| r.warm_median),
        );
        let median = |c: usize| {
            cmp.commands
                .get(c)
                .and_then(|r| r.warm_median)
                .map_or("—".into(), |v| scale.cell(v))
        };
        let mut row = vec![metric.label.to_string(), scale.unit.to_string(), median(0)];
        let first = cmp.commands.first().and_then(|r| r.warm_median);
        for &c in others {
            row.push(median(c));
            row.extend(ratio_cells(first, cmp.commands.get(c)));
        }
        grid.row(row);
    }
    grid
}

/// A command's ratio to the first and its interval, as cells. Where one of the two medians is
/// 0 and the other is not, there is no ratio to speak of (0× or unbounded, and an interval
/// from 0 to ∞): a dash and why.
fn ratio_cells(first: Option<f64>, r: Option<&Ratio>) -> [String; 2] {
    let this = r.and_then(|r| r.warm_median);
    if let (Some(a), Some(b)) = (first, this) {
        if (a == 0.0) != (b == 0.0) {
            return ["—".into(), "one is 0".into()];
        }
    }
    let ratio = r.and_then(|r| r.ratio_to_first);
    let interval = match r.map(|r| (r.ci_low, r.ci_high)) {
        Some((Some(lo), Some(hi))) => crate::record::compare::interval_text(lo, hi),
        _ => String::new(),
    };
    [
        ratio.map_or("—".into(), crate::view::units::ratio),
        interval,
    ]
}

/// The conclusion in words (record's [`conclusion`]): verdicts only where an interval
/// excludes 1, "no difference" only when every compared interval exists, else why not — on
/// the rows the table shows, and no others.
fn verdicts(view: &CompareView<'_>) -> Vec<String> {
    let rows: Vec<&str> = shown_rows(view)
        .into_iter()
        .filter_map(|i| view.metrics.get(i).map(|m| m.name))
        .collect();
    conclusion(view.comparison, &|metric| rows.contains(&metric))
        .iter()
        .map(|v| crate::text::escape_controls(v))
        .collect()
}
