//! The first-run penalty drawn as bars: how much longer the first run took than the warm run
//! with the median wall time, split into the whole process tree's four states (on a CPU,
//! waiting for one, uninterruptible, asleep) or, without them, the main thread's on-CPU,
//! run-queue and blocked time, each a bar from zero (a part can be negative). Above the bars,
//! the verdict in full, every sentence whole ([`crate::view::verdict::full`]); bars only where
//! the verdict found a penalty, its sentences alone where it did not.
#![forbid(unsafe_code)]

use super::panel::{bar_row, fit, signed, time_grid, BAR_ROW as ROW, PLOT_LEFT, PLOT_RIGHT};
use super::scale::{self, Scale};
use super::svg::{Anchor, Svg};
use crate::record::series::{Penalty, Series};
use crate::view::units::human_ns;

/// Where the bars start (the row labels are to the left of it).
const BARS_LEFT: f64 = 330.0;

/// Draws the penalty of `s` from `top`; returns the height used (0 when there is nothing to
/// say: no `first_penalty` in `batch.json`).
pub fn penalty(svg: &mut Svg, s: &Series, top: f64) -> f64 {
    let said = s.verdict.as_ref().map_or(Vec::new(), |v| {
        crate::view::verdict::full(v, None)
            .into_iter()
            .map(|note| note.plain_text())
            .collect()
    });
    // Heights are from where the panel starts, the sentences included.
    let start = top;
    let mut top = top + sentences(svg, top, &said);
    let Some(p) = s.penalty.as_ref().filter(|_| {
        s.verdict
            .as_ref()
            .is_some_and(|v| v.kind == crate::record::verdict::Kind::Penalty)
    }) else {
        if said.is_empty() && s.cycles.is_none() {
            if let Some(why) = &s.penalty_unavailable {
                return sentences(svg, top, &[format!("first-run penalty: none ({why})")]);
            }
        }
        return top - start;
    };
    top -= 4.0;
    let y0 = top + 18.0;
    let tree = match (tree_parts(p), p.tree_tasks) {
        (Some(_), Some(n)) if n > 1 => format!("; the tree: {n} tasks"),
        _ => String::new(),
    };
    let title = format!(
        "first-run penalty: first run #{} {} − warm run #{} (the median) {} = {}{tree}",
        p.first_index,
        human_ns(p.first_wall_ns),
        p.reference_index,
        human_ns(p.reference_wall_ns),
        signed(p.wall_ns)
    );
    svg.text(
        PLOT_LEFT - 70.0,
        y0,
        Anchor::Start,
        "sub",
        &fit(&title, PLOT_RIGHT - PLOT_LEFT + 70.0, 12.0),
    );
    let rows = rows(p);
    let x = bar_scale(&rows);
    let bars_top = y0 + 14.0;
    let bottom = bars_top + rows.len() as f64 * ROW;
    time_grid(svg, &x, bars_top, bottom, "extra time of the first run");
    for (i, &(label, class, value)) in rows.iter().enumerate() {
        let row_top = bars_top + i as f64 * ROW;
        bar_row(svg, &x, BARS_LEFT - 10.0, row_top, (label, class, value));
        let end = x.at(value);
        let (lx, anchor) = if value < 0.0 {
            (end - 4.0, Anchor::End)
        } else {
            (end + 4.0, Anchor::Start)
        };
        svg.text(lx, row_top + 15.0, anchor, "small halo", &signed(value));
    }
    svg.line(x.at(0.0), bars_top, x.at(0.0), bottom, "zero");
    let mut used = bottom - start + 28.0;
    if let Some(note) = unsplit_note(p) {
        svg.text(BARS_LEFT, bottom + 46.0, Anchor::Start, "small", &note);
        used += 18.0;
    }
    used
}

/// Every sentence whole, folded to the panel's width, one text line each; returns the height
/// used (with a gap after them).
fn sentences(svg: &mut Svg, top: f64, said: &[String]) -> f64 {
    match super::panel::paragraphs(svg, top, said) {
        0.0 => 0.0,
        used => used + 8.0,
    }
}

/// The tree's four parts, when the penalty was split by them.
fn tree_parts(p: &Penalty) -> Option<[f64; 4]> {
    p.tree.filter(|_| p.basis == "tree")
}

/// The rows: each part when the penalty was split (the tree's four states, or the main
/// thread's three), then the whole.
fn rows(p: &Penalty) -> Vec<(&'static str, &'static str, f64)> {
    let mut rows = Vec::new();
    if let Some([r, q, d, s]) = tree_parts(p) {
        rows.push(("on a CPU (some task of the tree)", "cpu", r));
        rows.push(("waiting for a CPU (run queue)", "runqueue", q));
        rows.push(("uninterruptible (storage, faults, locks)", "blocked", d));
        rows.push(("asleep (timers, pipes, input)", "asleep", s));
    } else if let (Some(cpu), Some(rq), Some(blocked)) = (p.cpu_ns, p.runqueue_ns, p.blocked_ns) {
        let main = p.basis == "main thread";
        rows.push((
            if main {
                "main thread on CPU"
            } else {
                "on CPU (more work)"
            },
            "cpu",
            cpu,
        ));
        rows.push((
            if main {
                "main thread waiting for a CPU"
            } else {
                "waiting for a CPU (run queue)"
            },
            "runqueue",
            rq,
        ));
        rows.push((
            if main {
                "main thread off CPU (I/O, sleeps, children)"
            } else {
                "blocked (I/O, faults, sleeps)"
            },
            "blocked",
            blocked,
        ));
    }
    rows.push(("first − median warm run", "total", p.wall_ns));
    rows
}

/// Why the penalty was not split (or only the main thread's), in words.
fn unsplit_note(p: &Penalty) -> Option<String> {
    if p.basis == "main thread" {
        let why = p
            .tree_unavailable
            .as_deref()
            .unwrap_or("the tree's states are unknown");
        return Some(format!("main thread only: {why}"));
    }
    if tree_parts(p).is_some()
        || (p.cpu_ns.is_some() && p.runqueue_ns.is_some() && p.blocked_ns.is_some())
    {
        return None;
    }
    Some(match p.basis.as_str() {
        "parallel" => "not split: the run's CPU time (rusage) exceeds its main thread's on-CPU \
                       time — parallel work"
            .into(),
        "unavailable" => "not split: no schedstat for these runs (--minimal, or unreadable)".into(),
        other => format!("not split (basis: {other})"),
    })
}

/// A linear scale through zero that holds every row's value.
fn bar_scale(rows: &[(&str, &str, f64)]) -> Scale {
    let lo = rows.iter().map(|r| r.2).fold(0.0, f64::min);
    let hi = rows.iter().map(|r| r.2).fold(0.0, f64::max);
    let step = scale::nice_step((hi / 6.0 - lo / 6.0).max(1.0));
    let (lo, hi) = ((lo / step).floor() * step, (hi / step).ceil() * step);
    let hi = if hi == lo { lo + step } else { hi };
    // A negative bar's value is written left of its end: leave it room off the row labels.
    let room = if lo < 0.0 { 76.0 } else { 0.0 };
    Scale {
        lo,
        hi,
        log: false,
        px_lo: BARS_LEFT + room,
        px_hi: PLOT_RIGHT - 70.0,
    }
}
