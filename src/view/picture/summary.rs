//! The panel that opens the HTML page: one bar per batch, and per command of a comparison, at
//! its warm runs' median wall time, with the 95 % interval of that median as a whisker, and its
//! first run as a mark on the same axis — what a reader compares first, before the panels of
//! each. Draws what the series hold; reads nothing.
#![forbid(unsafe_code)]

use super::panel::{fit, header, legend, time_grid, whisker, Key, PLOT_LEFT, PLOT_RIGHT};
use super::scale::{self, Scale};
use super::svg::{Anchor, Shape, Svg};
use crate::record::series::{Picture, Series};
use crate::record::stats::{median_interval, LEVEL};
use crate::view::units::human_ns;

/// The row labels end here; the bars start after it.
const LABELS_RIGHT: f64 = 300.0;
const BARS_LEFT: f64 = 312.0;
/// The bars' axis ends here; each row's figures are written after its whisker or first run.
const BARS_RIGHT: f64 = 600.0;
const TOP: f64 = 72.0;
const ROW: f64 = 24.0;

/// One bar: a batch's (or a comparison's command's) warm median and its interval.
struct Bar {
    label: String,
    median_ns: Option<f64>,
    interval: Option<(f64, f64)>,
    n: usize,
    /// The first run's wall time, when it was counted.
    first_ns: Option<f64>,
}

impl Bar {
    fn of(label: String, s: &Series) -> Bar {
        let mut sorted: Vec<f64> = s
            .warm_wall_ns
            .iter()
            .copied()
            .filter(|v| v.is_finite())
            .collect();
        sorted.sort_by(f64::total_cmp);
        Bar {
            label,
            median_ns: (!sorted.is_empty()).then(|| crate::record::stats::quantile(&sorted, 0.5)),
            interval: median_interval(&sorted, LEVEL),
            n: sorted.len(),
            first_ns: s
                .first
                .as_ref()
                .filter(|f| f.rejected.is_none())
                .and_then(|f| f.wall_ns)
                .filter(|v| v.is_finite()),
        }
    }

    /// `12.3 ms [11.9–12.8 ms], n = 14, first 40.1 ms`, or why there is no bar.
    fn figures(&self) -> String {
        let Some(m) = self.median_ns else {
            return "no warm run".into();
        };
        let interval = match self.interval {
            Some((lo, hi)) => format!(
                " [{}]",
                crate::view::verdict::range_text(lo, hi).replace('\u{a0}', " ")
            ),
            None => " (too few runs for an interval)".into(),
        };
        let first = self
            .first_ns
            .map_or(String::new(), |f| format!(", first {}", human_ns(f)));
        format!("{}{interval}, n = {}{first}", human_ns(m), self.n)
    }
}

/// Every batch's bar, and every command's of a comparison (its directory before its name); a
/// batch whose title another batch has too is named by its directory as well.
fn bars(pictures: &[Picture]) -> Vec<Bar> {
    let titles: Vec<&str> = pictures
        .iter()
        .filter_map(|p| match p {
            Picture::Batch(s) => Some(s.title.as_str()),
            Picture::Comparison(_) => None,
        })
        .collect();
    let shared = |title: &str| titles.iter().filter(|t| **t == title).count() > 1;
    let mut bars = Vec::new();
    for picture in pictures {
        match picture {
            Picture::Batch(s) if shared(&s.title) => {
                bars.push(Bar::of(format!("{}: {}", s.dir, s.title), s))
            }
            Picture::Batch(s) => bars.push(Bar::of(s.title.clone(), s)),
            Picture::Comparison(c) => {
                for (i, command) in c.commands.iter().enumerate() {
                    let label = format!("{} [{i}] {}", c.dir, command.name);
                    bars.push(Bar::of(label, &command.series));
                }
            }
        }
    }
    bars
}

/// Draws the summary of `pictures`; returns the height used (0 with nothing to summarise).
pub fn summary(svg: &mut Svg, pictures: &[Picture]) -> f64 {
    let bars = bars(pictures);
    if bars.is_empty() {
        return 0.0;
    }
    header(
        svg,
        "summary: the warm runs' median wall time, and the first run",
        "one bar per batch and per command compared; whisker: the 95% interval of the median \
         (order statistics)",
    );
    legend(
        svg,
        PLOT_LEFT,
        62.0,
        &[
            (Key::Swatch("bar"), "warm median"),
            (Key::Line("ci"), "95% interval of the median"),
            (Key::Marker(Shape::Diamond, "first"), "first run"),
        ],
    );
    let hi = bars
        .iter()
        .flat_map(|b| [b.median_ns, b.interval.map(|i| i.1), b.first_ns])
        .flatten()
        .fold(0.0, f64::max);
    let step = scale::nice_step((hi / 5.0).max(1.0));
    let x = Scale {
        lo: 0.0,
        hi: ((hi / step).ceil() * step).max(step),
        log: false,
        px_lo: BARS_LEFT,
        px_hi: BARS_RIGHT,
    };
    let bottom = TOP + bars.len() as f64 * ROW;
    time_grid(svg, &x, TOP, bottom, "wall time");
    for (i, bar) in bars.iter().enumerate() {
        row(svg, &x, bar, TOP + i as f64 * ROW);
    }
    svg.line(x.at(0.0), TOP, x.at(0.0), bottom, "zero");
    bottom - 8.0 + 44.0
}

/// One row at `top`: the label, the bar, the whisker and the figures.
fn row(svg: &mut Svg, x: &Scale, bar: &Bar, top: f64) {
    let label = fit(&bar.label, LABELS_RIGHT - 16.0, 11.0);
    svg.text(LABELS_RIGHT, top + 16.0, Anchor::End, "small", &label);
    let mut end = BARS_LEFT;
    if let Some(m) = bar.median_ns {
        let tip = format!("{}: {}", bar.label, bar.figures());
        svg.titled_rect(
            BARS_LEFT,
            top + 5.0,
            x.at(m) - BARS_LEFT,
            ROW - 10.0,
            "bar",
            &tip,
        );
        end = x.at(m);
    }
    if let Some((lo, hi)) = bar.interval {
        whisker(svg, x, (lo, hi), top + ROW / 2.0, 5.0);
        end = end.max(x.at(hi));
    }
    if let Some(first) = bar.first_ns {
        let tip = format!("{}: first run {}", bar.label, human_ns(first));
        svg.marker(Shape::Diamond, x.at(first), top + ROW / 2.0, "first", &tip);
        end = end.max(x.at(first) + 6.0);
    }
    let room = PLOT_RIGHT - end - 8.0;
    svg.text(
        end + 8.0,
        top + 16.0,
        Anchor::Start,
        "small",
        &fit(&bar.figures(), room, 11.0),
    );
}
