//! A comparison's panel (or a parameter scan's): each command's warm runs side by side on one
//! wall-time axis (dots and a box), and under them each command's warm median over the first
//! command's with its 95 % interval. Draws a [`Comparison`]; reads nothing.
#![forbid(unsafe_code)]

use super::panel::{fit, header, legend, Key, PLOT_LEFT, PLOT_RIGHT};
use super::scale::{self, Scale};
use super::strip::box_plot;
use super::svg::{Anchor, Shape, Svg};
use crate::record::series::{Compared, Comparison};
use crate::view::units::human_ns;

const TOP: f64 = 72.0;
const BOTTOM: f64 = 292.0;
/// The ratio chart, under the command names.
const RATIO_TOP: f64 = 342.0;
const RATIO_BOTTOM: f64 = 492.0;
/// Columns narrower than this show no dots, only the box.
const DOTS_MIN_WIDTH: f64 = 14.0;
/// Columns narrower than this share a label with their neighbours.
const LABEL_MIN_WIDTH: f64 = 56.0;

/// Draws `c` and returns the height used.
pub fn comparison(svg: &mut Svg, c: &Comparison) -> f64 {
    let n = c.commands.len();
    let confidence = c.confidence.as_deref().unwrap_or("no intervals");
    header(svg, &title(c), &format!("{} · {confidence}", c.dir));
    legend(
        svg,
        PLOT_LEFT,
        62.0,
        &[
            (Key::Marker(Shape::Dot, "warm"), "warm run"),
            (Key::Swatch("box"), "quartiles (whiskers: min, max)"),
            (Key::Line("mid"), "median"),
            (Key::Line("ci"), "95% interval of the ratio"),
        ],
    );
    let values = c
        .commands
        .iter()
        .flat_map(|m| m.series.warm_wall_ns.iter().copied());
    let Some(y) = Scale::fitting(values, BOTTOM, TOP) else {
        svg.text(
            PLOT_LEFT,
            TOP + 20.0,
            Anchor::Start,
            "sub",
            "no command has a warm run: nothing to draw",
        );
        return TOP + 32.0;
    };
    let width = (PLOT_RIGHT - PLOT_LEFT) / n.max(1) as f64;
    super::panel::time_axis(svg, &y, PLOT_LEFT, PLOT_RIGHT, "warm wall time");
    let every = (LABEL_MIN_WIDTH / width).ceil().max(1.0) as usize;
    for (i, command) in c.commands.iter().enumerate() {
        let left = PLOT_LEFT + i as f64 * width;
        column(svg, &y, command, left, width);
        if i % every == 0 {
            let room = width * every as f64 - 6.0;
            let label = fit(&column_label(command), room, 11.0);
            svg.text(
                left + width / 2.0,
                BOTTOM + 16.0,
                Anchor::Middle,
                "small",
                &label,
            );
            let runs = format!("n = {}", command.series.warm_wall_ns.len());
            svg.text(
                left + width / 2.0,
                BOTTOM + 30.0,
                Anchor::Middle,
                "small",
                &fit(&runs, room, 11.0),
            );
        }
    }
    ratios(svg, c, width, every);
    let used = RATIO_BOTTOM + 40.0;
    used + super::panel::paragraphs(svg, used - 15.0, &c.notes)
}

/// The panel's title: how many commands, or which parameters a scan varied.
fn title(c: &Comparison) -> String {
    let n = c.commands.len();
    let scanned: Vec<&str> = c
        .commands
        .first()
        .map(|m| m.parameters.iter().map(|(k, _)| k.as_str()).collect())
        .unwrap_or_default();
    if scanned.is_empty() || c.commands.iter().any(|m| m.parameters.is_empty()) {
        format!("{n} commands, their warm runs side by side")
    } else {
        format!(
            "a scan of {}: {n} values, their warm runs side by side",
            scanned.join(", ")
        )
    }
}

/// What a column is called: its parameter values in a scan, else its name.
fn column_label(c: &Compared) -> String {
    if c.parameters.is_empty() {
        c.name.clone()
    } else {
        c.parameters
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// A spread of `i` over [-1, 1], the same for the same index (no randomness in a picture).
fn jitter(i: usize) -> f64 {
    let h = (i as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40;
    (h as f64 / (1u64 << 24) as f64) * 2.0 - 1.0
}

/// One command's column: its box, then its warm runs as dots spread across the column.
fn column(svg: &mut Svg, y: &Scale, c: &Compared, left: f64, width: f64) {
    let mut sorted: Vec<f64> = c
        .series
        .warm_wall_ns
        .iter()
        .copied()
        .filter(|v| v.is_finite())
        .collect();
    if sorted.is_empty() {
        svg.text(
            left + width / 2.0,
            (TOP + BOTTOM) / 2.0,
            Anchor::Middle,
            "small",
            "no warm run",
        );
        return;
    }
    sorted.sort_by(f64::total_cmp);
    let mid = left + width / 2.0;
    let half_box = (width * 0.2).clamp(2.0, 24.0);
    box_plot(svg, y, &sorted, mid - half_box, mid + half_box);
    if width < DOTS_MIN_WIDTH {
        return;
    }
    let spread = (width * 0.32).min(60.0);
    for (i, &wall) in c.series.warm_wall_ns.iter().enumerate() {
        let tip = format!("{}: warm run {}: {}", c.name, i + 1, human_ns(wall));
        svg.marker(
            Shape::Dot,
            mid + jitter(i) * spread,
            y.at(wall),
            "warm dot",
            &tip,
        );
    }
}

/// The ratio chart: each command's warm median over the first's, on a log axis through 1.
fn ratios(svg: &mut Svg, c: &Comparison, width: f64, every: usize) {
    let values = c
        .commands
        .iter()
        .flat_map(|m| [m.ratio, m.interval.map(|i| i.0), m.interval.map(|i| i.1)])
        .flatten()
        .filter(|v| *v > 0.0)
        .chain([1.0]);
    let (lo, hi) = values.fold((1.0f64, 1.0f64), |(lo, hi), v| (lo.min(v), hi.max(v)));
    let y = Scale {
        lo: lo / 1.6,
        hi: hi * 1.6,
        log: true,
        px_lo: RATIO_BOTTOM,
        px_hi: RATIO_TOP,
    };
    svg.rect(
        PLOT_LEFT,
        RATIO_TOP,
        PLOT_RIGHT - PLOT_LEFT,
        RATIO_BOTTOM - RATIO_TOP,
        "frame",
    );
    for t in y.ticks() {
        let py = y.at(t);
        svg.line(PLOT_LEFT, py, PLOT_RIGHT, py, "grid");
        svg.text(
            PLOT_LEFT - 6.0,
            py + 4.0,
            Anchor::End,
            "small",
            &scale::ratio_label(t),
        );
    }
    svg.line(PLOT_LEFT, y.at(1.0), PLOT_RIGHT, y.at(1.0), "one");
    svg.vertical_text(
        20.0,
        (RATIO_TOP + RATIO_BOTTOM) / 2.0,
        "sub",
        "ratio to the first",
    );
    for (i, m) in c.commands.iter().enumerate() {
        let mid = PLOT_LEFT + (i as f64 + 0.5) * width;
        let text = ratio_text(i, m);
        if let Some((lo, hi)) = m.interval {
            svg.line(mid, y.at(lo), mid, y.at(hi), "ci");
            svg.line(mid - 5.0, y.at(lo), mid + 5.0, y.at(lo), "ci");
            svg.line(mid - 5.0, y.at(hi), mid + 5.0, y.at(hi), "ci");
        }
        if let Some(r) = m.ratio {
            svg.marker(
                Shape::Dot,
                mid,
                y.at(r),
                "ratio",
                &format!("{}: {text}", m.name),
            );
        }
        if i % every == 0 {
            let room = width * every as f64 - 6.0;
            svg.text(
                mid,
                RATIO_BOTTOM + 16.0,
                Anchor::Middle,
                "small",
                &fit(&text, room, 11.0),
            );
        }
    }
}

/// `0.06× [0.05–0.07]`, `baseline`, or `no interval`.
fn ratio_text(i: usize, m: &Compared) -> String {
    if i == 0 {
        return "baseline (1×)".into();
    }
    match (m.ratio, m.interval) {
        (Some(r), Some((lo, hi))) => format!("{}× [{}–{}]", number(r), number(lo), number(hi)),
        (Some(r), None) => format!("{}× (no interval)", number(r)),
        _ => "no ratio".into(),
    }
}

/// A ratio with two significant digits at least (`0.0045`, `0.060`, `1.23`, `14.2`).
fn number(v: f64) -> String {
    let decimals = if v > 0.0 && v < 0.1 {
        (1.0 - v.log10().floor()).min(8.0) as usize
    } else if v >= 10.0 {
        1
    } else {
        2
    };
    format!("{v:.decimals$}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ratios_keep_two_significant_digits() {
        assert_eq!(number(0.0045), "0.0045");
        assert_eq!(number(0.06), "0.060");
        assert_eq!(number(1.234), "1.23");
        assert_eq!(number(14.25), "14.2");
    }

    #[test]
    fn jitter_is_spread_and_repeatable() {
        let spread: Vec<f64> = (0..100).map(jitter).collect();
        assert!(spread.iter().all(|j| (-1.0..=1.0).contains(j)));
        assert!(spread.iter().any(|j| *j < -0.5) && spread.iter().any(|j| *j > 0.5));
        assert_eq!(jitter(7), jitter(7));
    }
}
