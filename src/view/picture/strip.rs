//! A batch's panel: the wall time of every run in order (first run, warm-ups, disturbed and
//! rejected runs marked), beside it the warm runs' distribution on the same axis (histogram
//! and box), and under it the first-run penalty's parts, a cold-cycles batch's penalty and the
//! files the first run paged in. Draws a [`Series`]; reads nothing.
#![forbid(unsafe_code)]

use super::panel::{header, legend, Key, PLOT_LEFT, PLOT_RIGHT};
use super::scale::{self, Scale};
use super::svg::{Anchor, Shape, Svg};
use crate::record::series::{Bucket, FirstRun, Kind, Series, Span};
use crate::record::stats::Summary;
use crate::view::units::human_ns;

/// Top and bottom of the plots, below the header and the legend.
const TOP: f64 = 72.0;
const BOTTOM: f64 = 312.0;
/// The strip's right edge; the distribution takes the rest.
const STRIP_RIGHT: f64 = 676.0;
const HIST_LEFT: f64 = 716.0;
/// Histogram bins over the axis's height.
const BINS: usize = 24;
/// Warm runs a histogram needs: fewer say nothing a box and the strip's own marks do not.
pub const HISTOGRAM_MIN_RUNS: usize = 10;

/// Draws `s` and returns the height used.
pub fn batch(svg: &mut Svg, s: &Series) -> f64 {
    header(svg, &s.title, &subtitle(s));
    legend(svg, PLOT_LEFT, 62.0, &keys(s));
    let values = s.drawn_wall_ns().chain(s.warm_wall_ns.iter().copied());
    let Some(y) = Scale::fitting(values, BOTTOM, TOP) else {
        svg.text(
            PLOT_LEFT,
            TOP + 20.0,
            Anchor::Start,
            "sub",
            "no run has a wall time: nothing to draw",
        );
        return TOP + 32.0;
    };
    let x = RunX::of(s);
    super::panel::time_axis(svg, &y, PLOT_LEFT, STRIP_RIGHT, "wall time");
    run_axis(svg, &x, s);
    let warm = Summary::of(&s.warm_wall_ns);
    if let Some(w) = warm {
        median_line(svg, &y, w.median);
    }
    for bucket in &s.buckets {
        draw_bucket(svg, &x, &y, bucket, s);
    }
    first_run(svg, &x, &y, s);
    distribution(svg, &y, &s.warm_wall_ns);
    let mut used = BOTTOM + 60.0;
    used += footnotes(svg, s, used);
    used += super::penalty::penalty(svg, s, used);
    used += super::cold::cycles(svg, s, used);
    used + super::cold::paged_in(svg, s, used)
}

fn subtitle(s: &Series) -> String {
    let [warmup, warm, cold, disturbed, rejected] = s.kinds;
    let first = match &s.first {
        Some(f) if f.rejected.is_some() => "first run rejected",
        Some(_) => "first run",
        None => "no first run",
    };
    let mut parts = vec![format!("{} runs: {first}", s.runs)];
    if cold > 0 {
        parts.push(format!("{cold} cold"));
    }
    if warm + disturbed > 0 || cold == 0 {
        parts.push(format!("{} warm", warm + disturbed));
    }
    if warmup > 0 {
        parts.push(format!("{warmup} warm-up"));
    }
    if disturbed > 0 {
        parts.push(format!("{disturbed} disturbed"));
    }
    parts.push(format!("{rejected} rejected"));
    format!("{} · {}", parts.join(", "), s.dir)
}

fn keys(s: &Series) -> Vec<(Key<'static>, String)> {
    let mut keys = vec![first_key(s)];
    let present = |k: Kind| s.kinds[k.slot()] > 0;
    let warm = !s.warm_wall_ns.is_empty();
    if warm || !present(Kind::Cold) {
        keys.push((Key::Marker(Shape::Dot, "warm"), "warm run".into()));
    }
    if present(Kind::Cold) {
        keys.push((
            Key::Marker(Shape::Dot, "cold"),
            "cold run (after the first)".into(),
        ));
    }
    if present(Kind::Warmup) {
        keys.push((
            Key::Marker(Shape::Ring, "warmup"),
            "warm-up (not counted)".into(),
        ));
    }
    if present(Kind::Disturbed) {
        keys.push((
            Key::Marker(Shape::Triangle, "disturbed"),
            "disturbed".into(),
        ));
    }
    if present(Kind::Rejected) {
        keys.push((Key::Marker(Shape::Cross, "rejected"), "rejected".into()));
    }
    if warm {
        keys.push((Key::Line("median"), "warm median".into()));
        keys.push((Key::Swatch("box"), "warm quartiles".into()));
    }
    keys
}

/// Where the runs go across the strip: at the time each started, seconds after the batch's
/// first run (every record has `uptime_s`), else at their place in `runs.jsonl`.
struct RunX {
    scale: Scale,
    timed: bool,
}

impl RunX {
    fn of(s: &Series) -> RunX {
        let timed = s.all_timed && s.end_s > 0.0;
        let (lo, hi) = if timed {
            (-s.end_s * 0.01, s.end_s * 1.01)
        } else {
            (-0.5, s.runs.max(1) as f64 - 0.5)
        };
        let scale = Scale {
            lo,
            hi,
            log: false,
            px_lo: PLOT_LEFT + 8.0,
            px_hi: STRIP_RIGHT - 8.0,
        };
        RunX { scale, timed }
    }

    /// A bucket's pixel: the middle of its runs' starts (or places).
    fn bucket(&self, b: &Bucket, per_bucket: u64) -> f64 {
        match b.started_s.filter(|_| self.timed) {
            Some((first, last)) => self.scale.at((first + last) / 2.0),
            None => self
                .scale
                .at(b.position as f64 + (per_bucket as f64 - 1.0) / 2.0),
        }
    }

    /// The first run's pixel.
    fn first(&self, f: &FirstRun) -> f64 {
        match f.started_s.filter(|_| self.timed) {
            Some(at) => self.scale.at(at),
            None => self.scale.at(f.position as f64),
        }
    }
}

/// The axis under the strip: round seconds (or run numbers), and its title.
fn run_axis(svg: &mut Svg, x: &RunX, s: &Series) {
    let (end, title) = if x.timed {
        let title = "time since the first run started (s); each run at its start";
        (s.end_s, title)
    } else {
        (s.runs as f64, "run, in the order run (index in runs.jsonl)")
    };
    let step = scale::nice_step(end.max(1e-3) / 8.0);
    let step = if x.timed { step } else { step.max(1.0) };
    let ticks = (0..)
        .map(|k| k as f64 * step)
        .take_while(|t| *t < end || (x.timed && *t <= end));
    let label = |t: f64| scale::plain(t, if x.timed { step } else { 1.0 });
    super::panel::x_ticks(svg, BOTTOM, ticks.map(|t| (x.scale.at(t), label(t))));
    svg.text(
        (PLOT_LEFT + STRIP_RIGHT) / 2.0,
        BOTTOM + 36.0,
        Anchor::Middle,
        "sub",
        title,
    );
}

fn median_line(svg: &mut Svg, y: &Scale, median_ns: f64) {
    let py = y.at(median_ns);
    svg.line(PLOT_LEFT, py, STRIP_RIGHT, py, "median");
}

/// One bucket: a marker per kind when it holds one run (or runs of one value), else a range.
fn draw_bucket(svg: &mut Svg, x: &RunX, y: &Scale, b: &Bucket, s: &Series) {
    let px = x.bucket(b, s.per_bucket);
    for kind in Kind::ALL {
        let Some(span) = b.spans[kind.slot()] else {
            continue;
        };
        let mut tip = tip(kind, b, &span);
        if kind == Kind::Disturbed && span.runs == 1 {
            let why = s
                .disturbed_why
                .iter()
                .find(|(i, _)| (b.first_index..=b.last_index).contains(i));
            if let Some((_, why)) = why {
                tip.push_str(&format!(" — {why}"));
            }
        }
        let (shape, class) = marker_of(kind);
        if span.runs == 1 || span.low_ns == span.high_ns {
            svg.marker(shape, px, y.at(span.low_ns), class, &tip);
        } else {
            let range_class = format!("{class}-r");
            svg.range(
                px,
                y.at(span.low_ns),
                y.at(span.high_ns),
                &range_class,
                &tip,
            );
        }
    }
}

fn marker_of(kind: Kind) -> (Shape, &'static str) {
    match kind {
        Kind::Warmup => (Shape::Ring, "warmup"),
        Kind::Warm => (Shape::Dot, "warm"),
        Kind::Cold => (Shape::Dot, "cold"),
        Kind::Disturbed => (Shape::Triangle, "disturbed"),
        Kind::Rejected => (Shape::Cross, "rejected"),
    }
}

fn tip(kind: Kind, b: &Bucket, span: &Span) -> String {
    let runs = if b.first_index == b.last_index {
        format!("run #{}", b.first_index)
    } else {
        format!(
            "runs #{}–#{}, {} {}",
            b.first_index,
            b.last_index,
            span.runs,
            kind.name()
        )
    };
    if span.low_ns == span.high_ns {
        format!("{runs} ({}): {}", kind.name(), human_ns(span.low_ns))
    } else {
        format!(
            "{runs}: {} … {}",
            human_ns(span.low_ns),
            human_ns(span.high_ns)
        )
    }
}

/// The first run, on top of everything (its value is in the legend, where it never covers
/// a mark).
fn first_run(svg: &mut Svg, x: &RunX, y: &Scale, s: &Series) {
    let Some(first) = &s.first else { return };
    let Some(wall) = first.wall_ns else { return };
    let (px, py) = (x.first(first), y.at(wall));
    match &first.rejected {
        Some(why) => {
            let tip = format!(
                "first run #{} rejected ({why}): {}",
                first.index,
                human_ns(wall)
            );
            svg.marker(Shape::Cross, px, py, "first-x", &tip);
        }
        None => {
            let tip = format!("first run #{}: {}", first.index, human_ns(wall));
            svg.marker(Shape::Diamond, px, py, "first", &tip);
        }
    }
}

/// The legend's words for the first run: its value, and why it was rejected.
fn first_key(s: &Series) -> (Key<'static>, String) {
    match &s.first {
        Some(f) => {
            let wall = f.wall_ns.map_or("no wall time".into(), human_ns);
            match &f.rejected {
                Some(_) => (
                    Key::Marker(Shape::Cross, "first-x"),
                    format!("first run {wall} (rejected)"),
                ),
                None => (
                    Key::Marker(Shape::Diamond, "first"),
                    format!("first run {wall}"),
                ),
            }
        }
        None => (Key::Marker(Shape::Diamond, "first"), "no first run".into()),
    }
}

/// The warm runs' distribution beside the strip, on the same wall-time axis: a histogram
/// (bins of equal height in pixels, so equal ratios on a log axis) and a box (quartiles,
/// median, whiskers at the minimum and maximum).
fn distribution(svg: &mut Svg, y: &Scale, warm: &[f64]) {
    let left = HIST_LEFT;
    svg.rect(left, TOP, PLOT_RIGHT - left, BOTTOM - TOP, "frame");
    for t in y.ticks() {
        let py = y.at(t);
        svg.line(left, py, PLOT_RIGHT, py, "grid");
    }
    let mut sorted: Vec<f64> = warm.iter().copied().filter(|v| v.is_finite()).collect();
    if sorted.is_empty() {
        svg.text(
            (left + PLOT_RIGHT) / 2.0,
            (TOP + BOTTOM) / 2.0,
            Anchor::Middle,
            "small",
            "no warm run",
        );
        return;
    }
    sorted.sort_by(f64::total_cmp);
    box_plot(svg, y, &sorted, left + 8.0, left + 26.0);
    if sorted.len() < HISTOGRAM_MIN_RUNS {
        let why = format!(
            "{} warm run{}: a histogram from {HISTOGRAM_MIN_RUNS}",
            sorted.len(),
            if sorted.len() == 1 { "" } else { "s" }
        );
        let middle = (left + 34.0 + PLOT_RIGHT) / 2.0;
        svg.text(middle, (TOP + BOTTOM) / 2.0, Anchor::Middle, "small", &why);
        return;
    }
    let counts = bin_counts(y, &sorted);
    let most = counts.iter().copied().max().unwrap_or(1).max(1);
    let bars_left = left + 34.0;
    let bar_room = PLOT_RIGHT - bars_left - 8.0;
    let bin_px = (BOTTOM - TOP) / BINS as f64;
    for (i, &count) in counts.iter().enumerate() {
        if count > 0 {
            let top = TOP + i as f64 * bin_px;
            let w = bar_room * count as f64 / most as f64;
            svg.rect(bars_left, top + 0.5, w, bin_px - 1.0, "bar");
        }
    }
    count_axis(svg, bars_left, bar_room, most, warm.len());
}

/// How many of `sorted` fall in each bin (bin 0 at the top).
fn bin_counts(y: &Scale, sorted: &[f64]) -> [u64; BINS] {
    let mut counts = [0u64; BINS];
    let bin_px = (BOTTOM - TOP) / BINS as f64;
    for &v in sorted {
        let i = ((y.at(v) - TOP) / bin_px).floor();
        let i = if i.is_finite() {
            i.clamp(0.0, BINS as f64 - 1.0)
        } else {
            0.0
        };
        counts[i as usize] += 1;
    }
    counts
}

fn count_axis(svg: &mut Svg, left: f64, room: f64, most: u64, n: usize) {
    let step = scale::nice_step(most as f64 / 3.0).max(1.0);
    let ticks = (0..)
        .map(|k| k as f64 * step)
        .take_while(|t| *t <= most as f64);
    let at = |t: f64| left + room * t / most as f64;
    super::panel::x_ticks(svg, BOTTOM, ticks.map(|t| (at(t), format!("{t:.0}"))));
    let title = format!("warm runs per bin (n = {n})");
    svg.text(
        (HIST_LEFT + PLOT_RIGHT) / 2.0,
        BOTTOM + 36.0,
        Anchor::Middle,
        "sub",
        &title,
    );
}

/// A vertical box between `x0` and `x1`: quartiles, median, whiskers to min and max.
pub(super) fn box_plot(svg: &mut Svg, y: &Scale, sorted: &[f64], x0: f64, x1: f64) {
    let q = |p: f64| crate::record::stats::quantile(sorted, p);
    let (min, q1, med, q3, max) = (
        sorted[0],
        q(0.25),
        q(0.5),
        q(0.75),
        sorted[sorted.len() - 1],
    );
    let mid = (x0 + x1) / 2.0;
    svg.line(mid, y.at(max), mid, y.at(q3), "whisker");
    svg.line(mid, y.at(q1), mid, y.at(min), "whisker");
    svg.line(x0 + 3.0, y.at(max), x1 - 3.0, y.at(max), "whisker");
    svg.line(x0 + 3.0, y.at(min), x1 - 3.0, y.at(min), "whisker");
    svg.rect(x0, y.at(q3), x1 - x0, y.at(q1) - y.at(q3), "box");
    svg.line(x0, y.at(med), x1, y.at(med), "mid");
}

/// Lines under the strip about what is not drawn as it is; returns the height used.
fn footnotes(svg: &mut Svg, s: &Series, top: f64) -> f64 {
    let mut notes: Vec<String> = Vec::new();
    if s.per_bucket > 1 {
        notes.push(format!(
            "{} runs: each mark spans {} consecutive runs (a line from the shortest to the longest)",
            s.runs, s.per_bucket
        ));
    }
    if s.without_wall > 0 {
        notes.push(format!(
            "{} runs have no wall time and are not drawn",
            s.without_wall
        ));
    }
    if let Some(w) = Summary::of(&s.warm_wall_ns) {
        let sd = w
            .stddev
            .map_or(String::new(), |sd| format!(" ± {}", human_ns(sd)));
        notes.push(format!(
            "warm: median {}, mean {}{sd} (σ, n − 1), min {}, max {}",
            human_ns(w.median),
            human_ns(w.mean),
            human_ns(w.min),
            human_ns(w.max)
        ));
    }
    if let Some(why) = s.first.as_ref().and_then(|f| f.rejected.as_ref()) {
        notes.push(format!("the first run was rejected: {why}"));
    }
    if let Some(rule) = &s.noise {
        notes.push(format!("noisy: {rule}"));
    }
    notes.extend(s.notes.iter().cloned());
    // The first line's baseline sits at `top`.
    super::panel::paragraphs(svg, top - 15.0, &notes)
}
