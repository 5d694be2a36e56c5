//! The picture of `report --svg FILE` and `--html FILE`: per batch its runs in order and their
//! distribution, the first-run penalty's parts, and a comparison's commands side by side.
//! Hand-written SVG, self-contained (no script, no font or style fetched); it draws series that
//! the record reader built and reads nothing itself.
//!
//! Layout: one panel per batch or comparison, stacked, [`WIDTH`] pixels wide. Text never
//! relies on the browser to fit: labels are shortened to a width estimated from their length.
#![forbid(unsafe_code)]

mod compare;
pub mod html;
mod penalty;
mod scale;
mod strip;
pub mod svg;

use crate::record::series::Picture;
use svg::{Anchor, Shape, Svg};

/// The picture's width in pixels.
pub const WIDTH: f64 = 960.0;
/// Left edge of the plots (room for the tick labels and the axis title).
const PLOT_LEFT: f64 = 86.0;
/// Right edge of the rightmost plot.
const PLOT_RIGHT: f64 = 936.0;
/// Space between panels.
const GAP: f64 = 28.0;

/// The style sheet: colours of the Okabe–Ito palette (distinct for colour-blind readers too),
/// and system fonts only.
pub const STYLE: &str = "\
text{font-family:'DejaVu Sans','Liberation Sans',Arial,Helvetica,sans-serif;font-size:12px;fill:#222}\
.page{fill:#fff}.frame{fill:#fafafa;stroke:#bbb}.grid{stroke:#e3e3e3}.axis{stroke:#555}\
.title{font-size:16px;font-weight:bold}.sub{fill:#555}.small{font-size:11px;fill:#555}\
.halo{paint-order:stroke;stroke:#fff;stroke-width:3px;stroke-linejoin:round}\
.warm{fill:#0072B2}.warm-r{stroke:#0072B2;fill:none;stroke-width:1.5}\
.cold{fill:#E69F00}.cold-r{stroke:#E69F00;fill:none;stroke-width:1.5}\
.warmup{fill:#fff;stroke:#888;stroke-width:1.2}.warmup-r{stroke:#888;fill:none}\
.disturbed{fill:#E69F00;stroke:#8a5f00;stroke-width:.8}.disturbed-r{stroke:#E69F00;fill:none;stroke-width:2}\
.rejected{stroke:#CC79A7;stroke-width:2.4;fill:none}.rejected-r{stroke:#CC79A7;fill:none;stroke-width:2}\
.first{fill:#D55E00;stroke:#6b2f00;stroke-width:1}\
.first-x{stroke:#D55E00;stroke-width:3;fill:none}\
.median{stroke:#0072B2;stroke-dasharray:6 4;stroke-width:1.2}\
.bar{fill:#9ecae1}.box{fill:#c6dbef;stroke:#0072B2;stroke-width:1.2}.whisker{stroke:#0072B2}\
.mid{stroke:#08306b;stroke-width:2.5}\
.cpu{fill:#009E73}.runqueue{fill:#E69F00}.blocked{fill:#56B4E9}.total{fill:#666}\
.zero{stroke:#333;stroke-width:1.2}.one{stroke:#333;stroke-dasharray:3 3}\
.ci{stroke:#222;stroke-width:2}.ratio{fill:#222}";

/// About how wide `text` is at `size` pixels in the fonts above (DejaVu Sans averages 0.6 em
/// a character over labels like these; a little over is safe, under is not).
fn text_width(text: &str, size: f64) -> f64 {
    text.chars().count() as f64 * size * 0.6
}

/// `text` cut with `…` so that it fits `width` pixels at `size`.
fn fit(text: &str, width: f64, size: f64) -> String {
    let room = (width / (size * 0.6)).floor().max(1.0) as usize;
    crate::view::units::shorten(text, room.saturating_sub(1).max(1))
        .chars()
        .take(room)
        .collect()
}

/// A panel's title and subtitle; returns the height used.
fn header(svg: &mut Svg, title: &str, subtitle: &str) -> f64 {
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
enum Key<'a> {
    Marker(Shape, &'a str),
    Line(&'a str),
    Swatch(&'a str),
}

/// A row of legend entries from `x` at baseline `y`, each as wide as its words.
fn legend<S: AsRef<str>>(svg: &mut Svg, mut x: f64, y: f64, keys: &[(Key<'_>, S)]) {
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
fn time_axis(svg: &mut Svg, y: &scale::Scale, left: f64, right: f64, what: &str) {
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
fn x_ticks(svg: &mut Svg, bottom: f64, ticks: impl Iterator<Item = (f64, String)>) {
    for (px, label) in ticks {
        svg.line(px, bottom, px, bottom + 4.0, "axis");
        svg.text(px, bottom + 17.0, Anchor::Middle, "small", &label);
    }
}

/// The SVG of every picture, stacked.
pub fn render_svg(pictures: &[Picture]) -> String {
    let (body, height) = panels(pictures);
    body.document(WIDTH, height, "coldtrace report", STYLE)
}

/// Every panel into one [`Svg`], and the total height.
fn panels(pictures: &[Picture]) -> (Svg, f64) {
    let mut svg = Svg::default();
    let mut y = 8.0;
    for picture in pictures {
        y += one_picture(&mut svg, picture, y) + GAP;
    }
    (svg, y)
}

/// One directory's panels at `y`; returns their height.
fn one_picture(svg: &mut Svg, picture: &Picture, y: f64) -> f64 {
    let mut used = 0.0;
    match picture {
        Picture::Batch(series) => {
            svg.open(y);
            used += strip::batch(svg, series);
            svg.close();
        }
        Picture::Comparison(c) => {
            svg.open(y);
            used += compare::comparison(svg, c);
            svg.close();
            if c.commands.len() <= crate::record::reader::PICTURE_COMMAND_STRIPS {
                for command in &c.commands {
                    used += GAP;
                    svg.open(y + used);
                    used += strip::batch(svg, &command.series);
                    svg.close();
                }
            }
        }
    }
    used
}

/// Each picture as its own SVG document (for the HTML page, one figure each).
pub fn render_figures(pictures: &[Picture]) -> Vec<String> {
    pictures
        .iter()
        .map(|p| {
            let mut svg = Svg::default();
            let height = one_picture(&mut svg, p, 8.0) + 16.0;
            let title = match p {
                Picture::Batch(s) => s.title.as_str(),
                Picture::Comparison(c) => c.dir.as_str(),
            };
            svg.document(WIDTH, height, title, STYLE)
        })
        .collect()
}
