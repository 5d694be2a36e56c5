//! What every panel of the picture shares: the page's width and plot edges, text fitted to a
//! width, a panel's header and legend, the time axis and the x ticks. Drawing parts only; it
//! lays out no panel and reads no series.
#![forbid(unsafe_code)]

use super::scale::{self, Scale};
use super::svg::{Anchor, Shape, Svg};
use crate::view::units::human_ns;

/// The picture's width in pixels.
pub const WIDTH: f64 = 960.0;
/// Left edge of the plots (room for the tick labels and the axis title).
pub(super) const PLOT_LEFT: f64 = 86.0;
/// Right edge of the rightmost plot.
pub(super) const PLOT_RIGHT: f64 = 936.0;
/// About how wide `text` is at `size` pixels in the fonts above (DejaVu Sans averages 0.6 em
/// a character over labels like these; a little over is safe, under is not).
fn text_width(text: &str, size: f64) -> f64 {
    text.chars().count() as f64 * size * 0.6
}

/// `text` cut with `…` so that it fits `width` pixels at `size`.
pub(super) fn fit(text: &str, width: f64, size: f64) -> String {
    let room = (width / (size * 0.6)).floor().max(1.0) as usize;
    crate::view::units::shorten(text, room.saturating_sub(1).max(1))
        .chars()
        .take(room)
        .collect()
}

/// Every sentence whole, folded to the plot's width from `top` (a line each at 11 px, the
/// folded rest indented), never cut: returns the height used.
pub(super) fn paragraphs(svg: &mut Svg, top: f64, said: &[String]) -> f64 {
    const SIZE: f64 = 11.0;
    const LINE: f64 = 15.0;
    let room = ((PLOT_RIGHT - PLOT_LEFT) / (SIZE * 0.6)).floor().max(20.0) as usize;
    let mut y = top;
    for sentence in said {
        for line in crate::view::units::fold(sentence, room, "", "  ") {
            y += LINE;
            svg.text(PLOT_LEFT, y, Anchor::Start, "small", &line);
        }
    }
    y - top
}

/// A panel's title and subtitle; returns the height used.
pub(super) fn header(svg: &mut Svg, title: &str, subtitle: &str) -> f64 {
    svg.text(
        16.0,
        22.0,
        Anchor::Start,
        "title",
        // Bold letters are wider: fit as if the size were 17.5 px.
        &fit(title, WIDTH - 32.0, 17.5),
    );
    svg.text(
        16.0,
        40.0,
        Anchor::Start,
        "sub",
        &fit(subtitle, WIDTH - 32.0, 12.0),
    );
    48.0
}

/// One legend entry: a marker or a swatch, then its words.
pub(super) enum Key<'a> {
    Marker(Shape, &'a str),
    Line(&'a str),
    Swatch(&'a str),
}

/// A row of legend entries from `x` at baseline `y`, each as wide as its words.
pub(super) fn legend<S: AsRef<str>>(svg: &mut Svg, mut x: f64, y: f64, keys: &[(Key<'_>, S)]) {
    for (key, words) in keys {
        let words = words.as_ref();
        match key {
            Key::Marker(shape, class) => svg.marker(*shape, x + 6.0, y - 4.0, class, words),
            Key::Line(class) => svg.line(x - 2.0, y - 4.0, x + 14.0, y - 4.0, class),
            Key::Swatch(class) => svg.rect(x, y - 10.0, 12.0, 12.0, class),
        }
        svg.text(x + 18.0, y, Anchor::Start, "small", words);
        x += 18.0 + text_width(words, 11.0) + 18.0;
    }
}

/// A vertical time axis on `y`'s pixel range, from `left` to `right`: frame, grid, tick
/// labels and its title (`what` and the unit, or "log scale" where each tick has its own).
pub(super) fn time_axis(svg: &mut Svg, y: &scale::Scale, left: f64, right: f64, what: &str) {
    let (top, bottom) = (y.px_hi.min(y.px_lo), y.px_hi.max(y.px_lo));
    svg.rect(left, top, right - left, bottom - top, "frame");
    let ticks = y.ticks();
    let (labels, unit) = scale::time_labels(y, &ticks);
    for (t, label) in ticks.iter().zip(&labels) {
        let py = y.at(*t);
        svg.line(left, py, right, py, "grid");
        svg.text(left - 6.0, py + 4.0, Anchor::End, "small", label);
    }
    let title = match unit {
        Some(unit) => format!("{what} ({unit})"),
        None => format!("{what} (log scale)"),
    };
    svg.vertical_text(20.0, (top + bottom) / 2.0, "sub", &title);
}

/// Tick marks and their labels under a horizontal axis at `bottom`: (pixel, label) each.
pub(super) fn x_ticks(svg: &mut Svg, bottom: f64, ticks: impl Iterator<Item = (f64, String)>) {
    for (px, label) in ticks {
        svg.line(px, bottom, px, bottom + 4.0, "axis");
        svg.text(px, bottom + 17.0, Anchor::Middle, "small", &label);
    }
}

/// `+12.98 ms`, `−3.10 ms`.
pub(super) fn signed(ns: f64) -> String {
    if ns < 0.0 {
        format!("−{}", human_ns(-ns))
    } else {
        format!("+{}", human_ns(ns))
    }
}

/// A linear time axis along `x` between `top` and `bottom`: grid lines, round labels in one
/// unit, and its title (`what` and the unit) under them.
pub(super) fn time_grid(svg: &mut Svg, x: &Scale, top: f64, bottom: f64, what: &str) {
    let ticks = scale::linear_ticks(x.lo, x.hi);
    let step = ticks.windows(2).map(|w| w[1] - w[0]).next().unwrap_or(1.0);
    let (unit, per) = scale::time_unit(x.hi.abs().max(x.lo.abs()));
    for t in ticks {
        let px = x.at(t);
        svg.line(px, top, px, bottom, "grid");
        let label = scale::plain(t / per, step / per);
        svg.text(px, bottom + 14.0, Anchor::Middle, "small", &label);
    }
    svg.text(
        (x.px_lo + x.px_hi) / 2.0,
        bottom + 28.0,
        Anchor::Middle,
        "small",
        &format!("{what} ({unit})"),
    );
}

/// An interval along `x` at height `mid`: a line from `lo` to `hi` with an end mark at each,
/// `half` pixels up and down.
pub(super) fn whisker(svg: &mut Svg, x: &Scale, (lo, hi): (f64, f64), mid: f64, half: f64) {
    svg.line(x.at(lo), mid, x.at(hi), mid, "ci");
    svg.line(x.at(lo), mid - half, x.at(lo), mid + half, "ci");
    svg.line(x.at(hi), mid - half, x.at(hi), mid + half, "ci");
}

/// One row of signed bars from zero, [`BAR_ROW`] pixels tall at `top`: its label ending at
/// `labels_right`, its bar (`class`) from 0 to `value`.
pub(super) fn bar_row(
    svg: &mut Svg,
    x: &Scale,
    labels_right: f64,
    top: f64,
    (label, class, value): (&str, &str, f64),
) {
    svg.text(labels_right, top + 15.0, Anchor::End, "small", label);
    let (zero, end) = (x.at(0.0), x.at(value));
    svg.rect(zero, top + 4.0, end - zero, BAR_ROW - 8.0, class);
}

/// The height of a row of [`bar_row`].
pub(super) const BAR_ROW: f64 = 22.0;
