//! The picture of `report --svg FILE` and `--html FILE`: per batch its runs in order and their
//! distribution, the first-run penalty's parts, and a comparison's commands side by side.
//! Hand-written SVG, self-contained (no script, no font or style fetched); it draws series that
//! the record reader built and reads nothing itself.
//!
//! Layout: one panel per batch or comparison, stacked, [`WIDTH`] pixels wide. Text never
//! relies on the browser to fit: labels are shortened to a width estimated from their length.
#![forbid(unsafe_code)]

mod boots;
mod cold;
mod compare;
pub mod html;
mod panel;
mod penalty;
mod scale;
mod strip;
mod summary;
pub mod svg;

pub use panel::WIDTH;

use crate::record::boots::BootSeries;
use crate::record::series::Picture;
use svg::Svg;

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
.cold{fill:#D55E00}.cold-r{stroke:#D55E00;fill:none;stroke-width:1.5}\
.warmup{fill:#fff;stroke:#888;stroke-width:1.2}.warmup-r{stroke:#888;fill:none}\
.disturbed{fill:#E69F00;stroke:#8a5f00;stroke-width:.8}.disturbed-r{stroke:#E69F00;fill:none;stroke-width:2}\
.rejected{stroke:#CC79A7;stroke-width:2.4;fill:none}.rejected-r{stroke:#CC79A7;fill:none;stroke-width:2}\
.first{fill:#D55E00;stroke:#6b2f00;stroke-width:1}\
.first-x{stroke:#D55E00;stroke-width:3;fill:none}\
.median{stroke:#0072B2;stroke-dasharray:6 4;stroke-width:1.2}\
.bar{fill:#9ecae1}.box{fill:#c6dbef;stroke:#0072B2;stroke-width:1.2}.whisker{stroke:#0072B2}\
.mid{stroke:#08306b;stroke-width:2.5}\
.cpu{fill:#009E73}.runqueue{fill:#E69F00}.blocked{fill:#56B4E9}.asleep{fill:#B8A9D9}\
.total{fill:#666}.paged{fill:#D55E00;fill-opacity:.55}\
.zero{stroke:#333;stroke-width:1.2}.one{stroke:#333;stroke-dasharray:3 3}\
.ci{stroke:#222;stroke-width:2}.ratio{fill:#222}";

/// The SVG of every picture, stacked, then the boots of each armed plan.
pub fn render_svg(pictures: &[Picture], boots: &[BootSeries]) -> String {
    let (mut body, mut height) = panels(pictures);
    for series in boots {
        body.open(height);
        height += boots::boots(&mut body, series) + GAP;
        body.close();
    }
    body.document(WIDTH, height, "coldtrace report", STYLE)
}

/// Each armed plan's boots as its own SVG document (for the HTML page).
pub fn render_boots(all: &[BootSeries]) -> Vec<String> {
    all.iter()
        .map(|series| {
            let mut svg = Svg::default();
            svg.open(8.0);
            let height = boots::boots(&mut svg, series) + 16.0;
            svg.close();
            svg.document(WIDTH, height, &series.dir, STYLE)
        })
        .collect()
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

/// The summary of every picture (one bar per batch and per command compared) as its own SVG
/// document, for the top of the HTML page; `None` with nothing to summarise.
pub fn render_summary(pictures: &[Picture]) -> Option<String> {
    let mut svg = Svg::default();
    svg.open(8.0);
    let height = summary::summary(&mut svg, pictures);
    svg.close();
    (height > 0.0).then(|| svg.document(WIDTH, height + 16.0, "summary", STYLE))
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
