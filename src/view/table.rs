//! The table of one batch (or a single run): first run against the warm runs, metric by metric,
//! one unit per row, then the notes under it (the first run explained, rejected runs, the floor,
//! the context), laid out for a width or as Markdown. It renders an outcome; it computes nothing.
#![forbid(unsafe_code)]

use crate::batch::BatchOutcome;
use crate::plan::{ColdWhen, MetricView};
use crate::record::metrics::{is_residency, Metric, MAX_RSS};
use crate::record::stats::Summary;
use crate::record::summary::MetricSummary;
use crate::text::escape_controls;
use crate::view::grid::{Align, Grid};
use crate::view::lines::Note;
use crate::view::rows::{rows, Values};
use crate::view::style::Style;
use crate::view::units::{display_width, human_uptime, shorten, Scale};
use std::fmt::Write;

/// How many rejected runs are named before "and N more".
pub const REJECTED_SHOWN: usize = 5;

/// The figure of a rejected first run, shown with this mark: it is in no statistic.
const REJECTED_MARK: &str = " ✗";

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

/// The first line of a table: `lead`, then `command` shortened so that the line (with `tail`)
/// fits `width`.
pub fn heading(lead: &str, command: &str, tail: &str, width: usize) -> String {
    let room = width.saturating_sub(display_width(lead) + display_width(tail));
    format!("{lead}{}{tail}", shorten(command, room.max(8)))
}

fn row_visible(summary: &MetricSummary, rejected_first: Option<f64>, watching: bool) -> bool {
    if watching && is_residency(summary.name) {
        return true;
    }
    let any = |s: &Option<Summary>| s.is_some_and(|s| s.max > 0.0);
    let always = matches!(
        summary.name,
        "wall_ns" | "user_us" | "sys_us" | "max_rss_kib" | "major_faults" | "block_in"
    );
    (summary.all.is_some() || rejected_first.is_some())
        && (always || any(&summary.all) || rejected_first.is_some_and(|v| v > 0.0))
}

/// Whether there is no table to show: a batch in which no run was counted (a rejected first
/// run alone is not a table either).
fn nothing_to_tabulate(outcome: &BatchOutcome) -> bool {
    outcome.single_outcome.is_none() && outcome.counts.counted == 0
}

/// How much a batch's table says under it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Told {
    /// hyperfine's size of answer, for an ordinary warm batch: the rows that are not 0 in
    /// every run, the verdict in one line, and what must never go unsaid.
    Brief,
    /// Every sentence (`--explain`, `--metrics all`, or a batch with something to explain).
    Everything,
}

impl Told {
    /// What the table of `outcome` says: everything when asked (`explain`, `--metrics all`)
    /// or when the batch has something to explain, else the brief answer.
    pub fn of(outcome: &BatchOutcome, view: &MetricView, explain: bool) -> Told {
        let asked = explain || *view == MetricView::All;
        match asked || crate::view::explain::something_to_explain(outcome) {
            true => Told::Everything,
            false => Told::Brief,
        }
    }
}

/// The table for a batch (or a single run) in `width` columns, its rows as `view` chooses, with
/// the notes under it as `told` (`--metrics all` adds the runs' sparkline and the machine's
/// context).
pub fn table(
    outcome: &BatchOutcome,
    title: &str,
    view: &MetricView,
    told: Told,
    colour: bool,
    width: usize,
) -> String {
    let style = Style { on: colour };
    let full = *view == MetricView::All;
    let mut out = String::new();
    let _ = writeln!(out, "{}", style.bold(&shorten(title, width)));
    if nothing_to_tabulate(outcome) {
        Note::plain(nothing_counted(outcome)).write(&mut out, &style, width);
    } else {
        for line in metric_grid(outcome, view, told, &style).lines(width) {
            let _ = writeln!(out, "{line}");
        }
        if full && outcome.walls_ns.len() > 1 {
            let lead = "  wall per run  ";
            let room = width.saturating_sub(display_width(lead)).min(60);
            let _ = writeln!(out, "{lead}{}", sparkline(&outcome.walls_ns, room));
        }
    }
    let notes = match told {
        Told::Brief => brief_notes(outcome),
        Told::Everything => notes(outcome, full),
    };
    for note in notes {
        note.write(&mut out, &style, width);
    }
    out
}

/// What a batch that stopped on its failing first run (or first warm-up) shows instead of a
/// table, as hyperfine stops (`label` after the command, as in the table's title): the run and
/// how it ended, the last lines of its stderr, how to
/// count such runs or see its output, and where the records are.
pub fn failure_stop(
    outcome: &BatchOutcome,
    command: &str,
    label: &str,
    colour: bool,
    width: usize,
) -> Option<String> {
    let stop = outcome.failure_stop.as_ref()?;
    let style = Style { on: colour };
    let which = if stop.warmup {
        "the first warm-up"
    } else {
        "the first counted run"
    };
    let mut out = String::new();
    let title = heading("coldtrace: ", command, &format!("{label}: stopped"), width);
    let _ = writeln!(out, "{}", style.bold(&shorten(&title, width)));
    let how = format!("{which} (#{}) {}", stop.index, escape_controls(&stop.how));
    let mut notes = vec![match &stop.stderr_tail {
        Some(lines) => Note {
            // The command's own bytes: shown, never interpreted by the terminal.
            quoted: lines.lines().map(escape_controls).collect(),
            ..Note::plain(format!("{how}; the last lines of its stderr:"))
        },
        None => Note::plain(how),
    }];
    let only = stop
        .exit_code
        .map_or(String::new(), |c| format!(" (-i={c}: exit code {c} only)"));
    let mut hint = format!("use -i/--ignore-failure to count failing runs{only}");
    if !stop.output_shown {
        hint.push_str(", --output inherit to see the command's output");
    }
    notes.push(Note::plain(hint));
    notes.extend(outcome.out_dir.as_deref().map(records_note));
    for note in notes {
        note.write(&mut out, &style, width);
    }
    Some(out)
}

/// The batch's table as Markdown: the whole table, then its notes as a list.
pub fn markdown(outcome: &BatchOutcome, title: &str) -> String {
    let style = Style { on: false };
    let mut out = format!("**{}**\n\n", crate::text::markdown_text(title));
    if nothing_to_tabulate(outcome) {
        let _ = writeln!(out, "{}\n", nothing_counted(outcome));
    } else {
        out.push_str(&metric_grid(outcome, &MetricView::All, Told::Everything, &style).markdown());
        out.push('\n');
    }
    for note in notes(outcome, true) {
        note.markdown(&mut out);
    }
    out
}

/// The line shown instead of an empty table when no run was counted.
fn nothing_counted(outcome: &BatchOutcome) -> String {
    let c = &outcome.counts;
    let measured = c.recorded.saturating_sub(c.warmup);
    if measured == 0 {
        "no run was measured".to_string()
    } else if c.rejected == measured {
        format!("all {measured} runs were rejected: there is nothing to summarise")
    } else {
        format!(
            "{} of {measured} runs were rejected and none was counted",
            c.rejected
        )
    }
}

/// One row per shown metric: its unit, the first run, the warm runs' median, mean ± σ and
/// range, and the first run over the warm median (`cold` for all of these when a cold action
/// came before every counted run). Told briefly, a row that is 0 in every run (no major fault,
/// nothing read from storage) is left out, but for wall time, CPU time and max RSS.
fn metric_grid(outcome: &BatchOutcome, view: &MetricView, told: Told, style: &Style) -> Grid {
    let has_warm = outcome.summaries.iter().any(|s| s.warm.is_some());
    let rejected = outcome.first.as_ref().filter(|f| !f.counted);
    let first = if rejected.is_some() {
        "first ✗"
    } else {
        "first"
    };
    let mut grid = Grid::new(2)
        .shrinkable("metric", Align::Left, 10)
        .column("unit", Align::Left);
    // The runs after the first: warm, or cold when a cold action came before every counted
    // run (explained under the table).
    let rest = crate::view::explain::rest_word(outcome);
    // No run was first (warm-ups ran before the counted runs): no first column, no ratio.
    let has_first = rejected.is_some() || outcome.summaries.iter().any(|s| s.first.is_some());
    grid = if has_warm && !has_first {
        grid.column(&format!("{rest}\nmedian"), Align::Right)
            .optional(&format!("{rest}\nmean ± σ"), Align::Right, 1)
            .optional(&format!("{rest}\nmin … max"), Align::Right, 0)
    } else if has_warm {
        grid.column(first, Align::Right)
            .column(&format!("{rest}\nmedian"), Align::Right)
            .optional(&format!("{rest}\nmean ± σ"), Align::Right, 1)
            .optional(&format!("{rest}\nmin … max"), Align::Right, 0)
            .column(&format!("first/\n{rest}"), Align::Right)
    } else {
        grid.column(
            if rejected.is_some() { first } else { "value" },
            Align::Right,
        )
    };
    let worth_a_row = |i: usize| {
        let rejected_value = rejected.and_then(|f| f.row.metric(i));
        let summary = outcome.summaries.get(i);
        summary.is_some_and(|s| row_visible(s, rejected_value, outcome.watching))
    };
    let measured = |i: usize| {
        let rejected_value = rejected.and_then(|f| f.row.metric(i));
        let summary = outcome.summaries.get(i);
        summary.is_some_and(|s| s.all.is_some()) || rejected_value.is_some()
    };
    let values = Values {
        measured: &measured,
        worth_a_row: &worth_a_row,
    };
    for i in rows(&outcome.metrics, view, outcome.watching, &values) {
        let (Some(summary), Some(metric)) = (outcome.summaries.get(i), outcome.metrics.get(i))
        else {
            continue;
        };
        // Measured, and 0 in every run (an unknown value is not a zero).
        let zero = |s: &Option<Summary>| s.is_some_and(|s| s.max == 0.0 && s.min == 0.0);
        let all_zero = zero(&summary.all)
            && rejected
                .and_then(|f| f.row.metric(i))
                .is_none_or(|v| v == 0.0);
        if told == Told::Brief && all_zero && !ALWAYS_TOLD.contains(&metric.name) {
            continue;
        }
        let rejected_value = rejected.and_then(|f| f.row.metric(i));
        let row = Row {
            summary,
            metric,
            below: (i == MAX_RSS)
                .then_some(outcome.context.system.max_rss_resolution_kib)
                .flatten()
                .map(|kib| kib as f64),
            rejected: rejected.map(|_| rejected_value),
            absent: if outcome.watching && is_residency(metric.name) {
                "unknown"
            } else {
                "—"
            },
        };
        let mut cells = row.cells(has_warm, style);
        if has_warm && !has_first {
            // The first column and the ratio: nothing was first.
            cells.remove(2);
            cells.pop();
        }
        grid.row(cells);
    }
    grid
}

/// The rows a brief table keeps whatever their values.
const ALWAYS_TOLD: [&str; 3] = ["wall_ns", "cpu_us", "max_rss_kib"];

/// One metric's row.
struct Row<'a> {
    summary: &'a MetricSummary,
    metric: &'a Metric,
    /// The kernel's resolution of this metric (max RSS), in its unit: a value below it is
    /// shown as `<` the resolution, not as the reading.
    below: Option<f64>,
    /// `Some` when the first run was rejected: its own value (shown marked), if it has one.
    rejected: Option<Option<f64>>,
    /// What an absent value reads as (`—`, or `unknown` for a residency that could not be read).
    absent: &'static str,
}

impl Row<'_> {
    fn cells(&self, has_warm: bool, style: &Style) -> Vec<String> {
        let s = self.summary;
        let first_value = self.rejected.flatten();
        let values = [s.first, s.warm].into_iter().flatten();
        let scale = Scale::for_values(
            self.metric.unit,
            values
                .flat_map(|s| [s.min, s.max, s.mean, s.stddev.unwrap_or(0.0)])
                .chain(first_value)
                .chain(self.below),
        );
        // `≤`: the max RSS is not above coldtrace's own floor, so the command's may be lower;
        // `<`: it is below what the kernel resolves, so it says no more than that bound.
        let cell = |at_floor: Option<u64>, value: f64| match self.below {
            Some(bound) if value < bound => format!("<{}", scale.cell(bound)),
            _ if at_floor > Some(0) => format!("≤{}", scale.cell(value)),
            _ => scale.cell(value),
        };
        let at = s.runs_at_floor;
        let first = match self.rejected {
            Some(v) => format!(
                "{}{REJECTED_MARK}",
                v.map_or(self.absent.into(), |v| scale.cell(v))
            ),
            None => s
                .first
                .map_or(self.absent.into(), |f| cell(at.map(|a| a.first), f.median)),
        };
        // No figure at all (every residency unknown): no unit either.
        let shown = s.first.is_some() || s.warm.is_some() || first_value.is_some();
        let unit = if shown { scale.unit } else { "" };
        let mut row = vec![self.metric.label.to_string(), unit.to_string(), first];
        if !has_warm {
            return row;
        }
        match s.warm {
            Some(w) => {
                row.push(cell(at.map(|a| a.warm), w.median));
                row.push(match w.stddev {
                    Some(sd) => format!("{} ± {}", scale.cell(w.mean), scale.cell(sd)),
                    None => scale.cell(w.mean),
                });
                row.push(format!("{} … {}", scale.cell(w.min), scale.cell(w.max)));
            }
            None => row.extend([self.absent.into(), self.absent.into(), self.absent.into()]),
        }
        // A ratio of two residencies says nothing the two figures do not.
        let ratio = s
            .first_to_warm_median
            .filter(|_| !is_residency(self.metric.name));
        row.push(match ratio {
            Some(r) if r >= 1.5 => style.warn(&crate::view::units::ratio(r)),
            Some(r) => crate::view::units::ratio(r),
            None => "—".into(),
        });
        row
    }
}

/// What a brief table says under it: the verdict in one line (its full form says more), then
/// what is never left unsaid — the floor's mark explained, a noisy warm series, rejected runs,
/// a rejected first run, survivors, an interruption, where the records are.
fn brief_notes(outcome: &BatchOutcome) -> Vec<Note> {
    let mut notes: Vec<Note> = floor_note(outcome).into_iter().collect();
    notes.extend(below_resolution(outcome));
    let v = &outcome.verdict;
    // A verdict whose full form says nothing (a single run) has no line either.
    let said = !crate::view::verdict::full(v, None).is_empty();
    notes.extend(
        crate::view::verdict::one_line(v)
            .filter(|_| said)
            .map(Note::plain),
    );
    notes.extend(crate::view::explain::noise_note(outcome));
    notes.extend(
        rejected(outcome)
            .into_iter()
            .filter(|n| n.text != NONE_REJECTED),
    );
    notes.extend(first_rejected_note(outcome));
    notes.extend(survivors(outcome));
    // No spawner is the floor's cause (coldtrace's own memory): said; its cost is not.
    let without = outcome.spawner.as_ref().filter(|s| s.runs == 0);
    notes.extend(without.and_then(spawner_note));
    notes.extend(context(outcome, false, false));
    notes
}

/// `≤ floor: …`, when a run's max RSS is not above coldtrace's own (the `≤` of the table).
fn floor_note(outcome: &BatchOutcome) -> Option<Note> {
    let at = outcome
        .summaries
        .get(MAX_RSS)
        .and_then(|s| s.runs_at_floor)?;
    // Where every run read below the kernel's resolution, that bound says more.
    (at.all > 0 && !all_below_resolution(outcome)).then(|| {
        Note::plain(format!(
            "≤ floor: {} of {} runs' max RSS is not above coldtrace's own peak RSS, so it may be the runner's, not the command's",
            at.all, outcome.counts.counted
        ))
    })
}

/// `✗ the first run was rejected …`, unless nothing was counted (then "all N runs were
/// rejected" says it).
fn first_rejected_note(outcome: &BatchOutcome) -> Option<Note> {
    let text = first_rejected_text(outcome).filter(|_| !nothing_to_tabulate(outcome))?;
    Some(Note::marked("✗", text))
}

/// Everything said under the table, in order; `full` (`--metrics all`) adds "rejected: none"
/// and the machine's context line.
fn notes(outcome: &BatchOutcome, full: bool) -> Vec<Note> {
    let mut notes: Vec<Note> = floor_note(outcome).into_iter().collect();
    notes.extend(below_resolution(outcome));
    notes.extend(crate::view::explain::notes(outcome));
    notes.extend(
        rejected(outcome)
            .into_iter()
            .filter(|n| full || n.text != NONE_REJECTED),
    );
    notes.extend(first_rejected_note(outcome));
    if let Some(why) = &outcome.cache_unknown {
        let text = format!("{why}; attribution needs write access to the files, or root");
        notes.push(Note::warning("cached before/after", text));
    }
    notes.extend(survivors(outcome));
    notes.extend(context(outcome, full, true));
    notes
}

/// Whether every counted run's max RSS read below the kernel's resolution.
fn all_below_resolution(outcome: &BatchOutcome) -> bool {
    let (Some(bound), Some(s)) = (
        outcome.context.system.max_rss_resolution_kib,
        outcome.summaries.get(MAX_RSS),
    ) else {
        return false;
    };
    let maxima: Vec<f64> = [s.first, s.warm]
        .into_iter()
        .flatten()
        .map(|m| m.max)
        .collect();
    !maxima.is_empty() && maxima.iter().all(|&m| m < bound as f64)
}

/// Why a max RSS is shown as `<` a bound: when the first run's or the warm runs' median reads
/// below what the kernel resolves on this machine.
fn below_resolution(outcome: &BatchOutcome) -> Option<Note> {
    let bound = outcome.context.system.max_rss_resolution_kib?;
    let s = outcome.summaries.get(MAX_RSS)?;
    let below = [s.first, s.warm]
        .into_iter()
        .flatten()
        .any(|m| m.median < bound as f64);
    let cpus = outcome.context.system.cpu_count?;
    let pages = (2 * cpus).max(32) - 1;
    below.then(|| {
        Note::plain(format!(
            "<{bound} KiB: below the kernel's resolution here: its high-water mark leaves out \
             up to {pages} pages per CPU ({cpus} CPUs) of each of the file, anonymous and shared \
             counters, so a max RSS read under {bound} KiB, 0 included, is only known to be \
             under it"
        ))
    })
}

/// What the runs left running when their commands exited: the first run's processes named.
fn survivors(outcome: &BatchOutcome) -> Option<Note> {
    use crate::batch::{named_processes, processes_count};
    let seen = &outcome.survivors;
    let (index, first) = seen.first.first()?;
    let runs = match seen.runs {
        1 => format!("run #{index}"),
        n => format!("{n} runs (first #{index})"),
    };
    let mut what = Vec::new();
    for (n, done) in [
        (seen.left, "left running"),
        (seen.killed, "killed"),
        (seen.waited, "waited for"),
    ] {
        if n > 0 {
            what.push(format!("{} {done}", processes_count(n as usize)));
        }
    }
    let named = named_processes(first, 3).unwrap_or_default();
    let hint = if seen.left > 0 {
        " (--survivors kill or wait ends them)"
    } else {
        ""
    };
    Some(Note::plain(format!(
        "survivors of {runs}: {}: {named}{hint}",
        what.join(", ")
    )))
}

/// What `rejected` says of a batch that rejected nothing.
const NONE_REJECTED: &str = "rejected: none";

/// How a single run ended, or which runs of a batch were rejected (the first few, with the last
/// stderr lines of the last one).
fn rejected(outcome: &BatchOutcome) -> Vec<Note> {
    let failed = &outcome.failed;
    if let Some(single) = &outcome.single_outcome {
        return vec![Note::plain(format!("outcome: {single}"))];
    }
    if failed.is_empty() {
        return vec![Note::plain(NONE_REJECTED)];
    }
    let mut named: Vec<String> = failed
        .iter()
        .take(REJECTED_SHOWN)
        .map(|f| format!("#{} {}", f.index, escape_controls(&f.reason)))
        .collect();
    let total = failed.total();
    if total > REJECTED_SHOWN as u64 {
        let more = total - REJECTED_SHOWN as u64;
        // batch.json lists the first and the most recent; runs.jsonl has every one.
        named.push(match &outcome.out_dir {
            Some(dir) => format!(
                "and {more} more — every one in {}",
                escape_controls(&dir.join("runs.jsonl").display().to_string())
            ),
            None => format!("and {more} more (--out DIR keeps every one in runs.jsonl)"),
        });
    }
    let verb = if failed.iter().all(|f| f.counted) {
        "failed (counted, --ignore-failure)"
    } else {
        "rejected"
    };
    let mut notes = vec![Note::warning(
        verb,
        format!(
            "{} of {} — {}",
            total,
            outcome.counts.recorded,
            named.join("; ")
        ),
    )];
    if let Some((index, tail)) = failed
        .iter()
        .rev()
        .find_map(|f| Some((f.index, f.stderr_tail.as_deref()?)))
    {
        notes.push(Note {
            // The command's own bytes: shown, never interpreted by the terminal.
            quoted: tail.lines().map(escape_controls).collect(),
            ..Note::plain(format!("last lines of the stderr of run #{index}:"))
        });
    }
    notes
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
        "{what} (#{}: {}); no warm run replaces it",
        first.index,
        escape_controls(reason)
    ))
}

/// The machine (`full` only), the spawner's cost (`spawner`), interruption or early stop, and
/// where the records are.
fn context(outcome: &BatchOutcome, full: bool, spawner: bool) -> Vec<Note> {
    let sys = &outcome.context.system;
    let boot = sys.boot_id.as_deref().map_or("?".to_string(), |b| {
        escape_controls(&b.chars().take(8).collect::<String>())
    });
    let uptime = sys.uptime_s.map_or("?".to_string(), human_uptime);
    let since = match outcome.context.boot_marker.first_batch_since_boot {
        Some(true) => " (the first coldtrace batch since boot)",
        _ => "",
    };
    let mut notes = Vec::new();
    if full {
        notes.push(Note::plain(format!(
            "context: boot {boot}{since}, up {uptime}, kernel {}, {} CPUs",
            escape_controls(sys.kernel_release.as_deref().unwrap_or("?")),
            sys.cpu_count.map_or("?".to_string(), |n| n.to_string())
        )));
    }
    if spawner {
        notes.extend(outcome.spawner.as_ref().and_then(spawner_note));
    }
    if let Some(sig) = outcome.interrupted_by {
        notes.push(Note::warning(
            &format!("interrupted by {sig}"),
            "the summary covers the runs that finished",
        ));
    }
    if let Some(reason) = &outcome.stopped_reason {
        notes.push(Note::warning("stopped", escape_controls(reason)));
    }
    notes.extend(outcome.out_dir.as_deref().map(records_note));
    notes
}

/// `spawner: 5 children, 56 KiB resident (their floor), 31.2 µs CPU per child`: its CPU is
/// coldtrace's own work, not the command's.
fn spawner_note(usage: &crate::measure::spawner::SpawnerUsage) -> Option<Note> {
    if let (0, Some(why)) = (usage.runs, &usage.unavailable) {
        return Some(Note::plain(format!(
            "spawner: none ({}): coldtrace cloned the children, so its own memory is their \
             max RSS floor",
            escape_controls(why)
        )));
    }
    if usage.runs == 0 {
        return None;
    }
    let resident = usage.resident_kib.map_or(String::new(), |kib| {
        format!(", {kib} KiB resident (their floor)")
    });
    let cpu = usage.cpu_ns.map_or(String::new(), |ns| {
        format!(
            ", {:.1} µs CPU per child",
            ns as f64 / 1000.0 / usage.runs as f64
        )
    });
    let children = if usage.runs == 1 { "child" } else { "children" };
    let then = usage.unavailable.as_deref().map_or(String::new(), |why| {
        format!("; then {}: coldtrace cloned the rest", escape_controls(why))
    });
    Some(Note::plain(format!(
        "spawner: {} {children}{resident}{cpu}{then}",
        usage.runs
    )))
}

/// `records: DIR/runs.jsonl, summary: DIR/batch.json`.
fn records_note(dir: &std::path::Path) -> Note {
    let at = |file: &str| escape_controls(&dir.join(file).display().to_string());
    Note::plain(format!(
        "records: {}, summary: {}",
        at("runs.jsonl"),
        at("batch.json")
    ))
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

    #[test]
    fn a_heading_shortens_the_command_to_fit() {
        let h = heading("coldtrace: 5 runs of ", &"x".repeat(200), " [cold]", 80);
        assert_eq!(display_width(&h), 80);
        assert!(h.ends_with("x… [cold]"), "{h}");
    }
}
