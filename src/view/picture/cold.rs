//! What a batch's panel shows of its cold runs under the penalty: a `--cold-cycles` batch's
//! cold penalty — the cycles' own differences averaged, as a bar with its 95 % interval, and
//! its parts when they were split — and the files the first run brought into the page cache,
//! the largest as bars. Draws a [`Series`]; reads nothing.
#![forbid(unsafe_code)]

use super::panel::{bar_row, fit, signed, time_grid, whisker, BAR_ROW as ROW};
use super::panel::{PLOT_LEFT, PLOT_RIGHT};
use super::scale::{self, Scale};
use super::svg::{Anchor, Svg};
use crate::record::series::{CyclesPenalty, PagedIn, Series};
use crate::view::units::{human_bytes, human_ns};

/// Where the bars start (the row labels are to the left of it).
const BARS_LEFT: f64 = 330.0;
/// Where the bars' axis ends (each row's figures follow: `+8.452 ms [−1.393 ms to +16.52 ms]`).
const BARS_RIGHT: f64 = PLOT_RIGHT - 240.0;

/// A line of words at `y`, fitted to the plot's width.
fn words(svg: &mut Svg, y: f64, class: &str, text: &str) {
    let room = PLOT_RIGHT - PLOT_LEFT + 70.0;
    svg.text(
        PLOT_LEFT - 70.0,
        y,
        Anchor::Start,
        class,
        &fit(text, room, 12.0),
    );
}

/// Draws the cycles' cold penalty of `s` from `top`; returns the height used (0 for a batch
/// without `--cold-cycles`).
pub fn cycles(svg: &mut Svg, s: &Series, top: f64) -> f64 {
    let Some(c) = &s.cycles else { return 0.0 };
    let ratio = match (c.ratio, c.ratio_interval) {
        (Some(r), Some((lo, hi))) => format!(", {r:.2}× [{lo:.2}–{hi:.2}]"),
        (Some(r), None) => format!(", {r:.2}×"),
        _ => String::new(),
    };
    let title = format!(
        "cold penalty over {} cycles of {} runs: position #0's median {} against the warm \
         positions' {}{ratio}",
        c.cycles,
        c.runs_per_cycle,
        human_ns(c.cold_median_ns),
        human_ns(c.warm_median_ns)
    );
    words(svg, top + 18.0, "sub", &title);
    let Some(mean) = c.per_cycle_ns else {
        let why = c
            .no_interval
            .as_deref()
            .unwrap_or("no cycle had a cold and a warm run");
        words(
            svg,
            top + 36.0,
            "small",
            &format!("not measured per cycle: {why}"),
        );
        return 48.0;
    };
    let rows = rows(c, mean);
    let x = bar_scale(&rows, c.per_cycle_interval);
    let bars_top = top + 32.0;
    let bottom = bars_top + rows.len() as f64 * ROW;
    time_grid(svg, &x, bars_top, bottom, "extra time of a cold run");
    for (i, (label, class, value)) in rows.iter().enumerate() {
        let row_top = bars_top + i as f64 * ROW;
        bar_row(svg, &x, BARS_LEFT - 10.0, row_top, (label, class, *value));
        let mut right = x.at(*value).max(x.at(0.0));
        let mut text = signed(*value);
        // The mean, the last row, with its interval.
        if let (true, Some((lo, hi))) = (i + 1 == rows.len(), c.per_cycle_interval) {
            whisker(svg, &x, (lo, hi), row_top + ROW / 2.0, 6.0);
            right = right.max(x.at(hi));
            text = format!("{text} [{} to {}]", signed(lo), signed(hi));
        }
        let room = PLOT_RIGHT - right - 4.0;
        let text = fit(&text, room, 11.0);
        svg.text(
            right + 4.0,
            row_top + 15.0,
            Anchor::Start,
            "small halo",
            &text,
        );
    }
    svg.line(x.at(0.0), bars_top, x.at(0.0), bottom, "zero");
    let mut used = bottom - top + 34.0;
    if c.per_cycle_interval.is_none() {
        let why = c.no_interval.as_deref().unwrap_or("too few cycles");
        words(svg, bottom + 44.0, "small", &format!("no interval: {why}"));
        used += 18.0;
    }
    used
}

/// Each part of the mean (when split), then the mean itself, over `c.per_cycle_n` cycles.
fn rows(c: &CyclesPenalty, mean: f64) -> Vec<(String, &'static str, f64)> {
    let mut rows = Vec::new();
    if let Some([cpu, runqueue, blocked]) = c.parts {
        rows.push(("on CPU (more work)".into(), "cpu", cpu));
        rows.push(("waiting for a CPU (run queue)".into(), "runqueue", runqueue));
        rows.push(("blocked (I/O, faults, sleeps)".into(), "blocked", blocked));
    }
    let label = format!("cold − warm, mean of {} cycles", c.per_cycle_n);
    rows.push((label, "total", mean));
    rows
}

/// A linear scale through zero that holds every row and the interval.
fn bar_scale(rows: &[(String, &str, f64)], interval: Option<(f64, f64)>) -> Scale {
    let values = rows
        .iter()
        .map(|r| r.2)
        .chain(interval.into_iter().flat_map(|(lo, hi)| [lo, hi]));
    let (lo, hi) = values.fold((0.0f64, 0.0f64), |(lo, hi), v| (lo.min(v), hi.max(v)));
    let step = scale::nice_step(((hi - lo) / 6.0).max(1.0));
    let (lo, hi) = ((lo / step).floor() * step, (hi / step).ceil() * step);
    Scale {
        lo,
        hi: if hi == lo { lo + step } else { hi },
        log: false,
        px_lo: BARS_LEFT,
        px_hi: BARS_RIGHT,
    }
}

/// Draws the files the first run of `s` paged in, the largest as bars, from `top`; returns the
/// height used (0 when its record lists none).
pub fn paged_in(svg: &mut Svg, s: &Series, top: f64) -> f64 {
    let Some(p) = &s.paged_in else { return 0.0 };
    words(svg, top + 18.0, "sub", &paged_title(p));
    let most = p.files.iter().map(|f| f.1).max().unwrap_or(1).max(1) as f64;
    let bars_top = top + 28.0;
    for (i, (path, bytes)) in p.files.iter().enumerate() {
        let row_top = bars_top + i as f64 * ROW;
        // The end of a path says what it is: its name, then as much of its folders as fits.
        let label = crate::view::units::shorten_start(path, 44);
        svg.text(
            BARS_LEFT - 10.0,
            row_top + 15.0,
            Anchor::End,
            "small",
            &label,
        );
        let w = (BARS_RIGHT - BARS_LEFT) * *bytes as f64 / most;
        let tip = format!("{path}: {}", human_bytes(*bytes as f64));
        svg.titled_rect(BARS_LEFT, row_top + 4.0, w, ROW - 8.0, "paged", &tip);
        let text = human_bytes(*bytes as f64);
        svg.text(
            BARS_LEFT + w + 4.0,
            row_top + 15.0,
            Anchor::Start,
            "small",
            &text,
        );
    }
    bars_top + p.files.len() as f64 * ROW - top + 12.0
}

/// `the first run paged in 212 files, 13.6 MiB; the 10 largest:`.
fn paged_title(p: &PagedIn) -> String {
    let files = |n: u64| format!("{n} file{}", if n == 1 { "" } else { "s" });
    let total = match (p.total_files, p.total_bytes) {
        (Some(n), Some(b)) => format!("{}, {}", files(n), human_bytes(b as f64)),
        (Some(n), None) => files(n),
        (None, Some(b)) => human_bytes(b as f64),
        (None, None) => format!("{} listed", files(p.files.len() as u64)),
    };
    let which = match p.files.len() {
        1 => "the largest".to_string(),
        n => format!("the {n} largest"),
    };
    format!("the first run brought into the page cache {total}; {which}:")
}
