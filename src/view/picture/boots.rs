//! The boots of an armed plan in the picture: one bar per boot for its first-after-boot
//! penalty (and one for its control batch's), then the mean across the boots with its 95 %
//! interval, and the words that say whether the interval is too wide to lean on.
#![forbid(unsafe_code)]

use super::panel::{bar_row, fit, header, legend, signed, time_grid, whisker, Key, BAR_ROW};
use super::panel::{PLOT_LEFT, PLOT_RIGHT};
use super::scale::{self, Scale};
use super::svg::{Anchor, Shape, Svg};
use crate::record::boots::{AcrossBoots, BootSeries};
use crate::record::verdict::{Kind, Verdict};

/// Where the bars start (right of their labels).
const BARS_LEFT: f64 = PLOT_LEFT + 60.0;

/// Every value the panel shows, for its scale.
fn values(s: &BootSeries) -> Vec<f64> {
    let mut v: Vec<f64> = s
        .rows
        .iter()
        .flat_map(|r| [r.penalty_ns, r.control_penalty_ns])
        .flatten()
        .collect();
    for a in [&s.penalty, &s.control_penalty].into_iter().flatten() {
        v.extend([Some(a.mean_ns), a.low_ns, a.high_ns].into_iter().flatten());
    }
    v
}

fn bar_scale(values: &[f64]) -> Scale {
    let lo = values.iter().copied().fold(0.0, f64::min);
    let hi = values.iter().copied().fold(0.0, f64::max);
    let step = scale::nice_step((hi / 6.0 - lo / 6.0).max(1.0));
    let (lo, hi) = ((lo / step).floor() * step, (hi / step).ceil() * step);
    Scale {
        lo,
        hi: if hi == lo { lo + step } else { hi },
        log: false,
        px_lo: BARS_LEFT + if lo < 0.0 { 76.0 } else { 0.0 },
        px_hi: PLOT_RIGHT - 70.0,
    }
}

/// `mean +280 ms, 95 % +… to +… — wide: …`.
fn words(a: &AcrossBoots) -> String {
    let interval = match (a.low_ns, a.high_ns) {
        (Some(l), Some(h)) => format!(", 95 % interval {} to {}", signed(l), signed(h)),
        _ => String::new(),
    };
    let wide = a
        .wide
        .as_deref()
        .map_or(String::new(), |w| format!(" — {w}"));
    format!("mean {}{interval}{wide}", signed(a.mean_ns))
}

/// `(n.d.)` beside a bar whose verdict finds nothing standing out.
fn nd(v: Option<&Verdict>) -> &'static str {
    match v.map(|v| v.kind == Kind::Penalty) {
        Some(false) => " (n.d.)",
        _ => "",
    }
}

/// The bars: each boot's penalty, and its control batch's.
fn bars(s: &BootSeries) -> Vec<(String, &'static str, f64)> {
    let mut rows = Vec::new();
    for r in &s.rows {
        if let Some(p) = r.penalty_ns {
            rows.push((
                format!("boot {}{}", r.boot, nd(r.verdict.as_ref())),
                "cold",
                p,
            ));
        }
        if let Some(p) = r.control_penalty_ns {
            let label = format!("control {}{}", r.boot, nd(r.control_verdict.as_ref()));
            rows.push((label, "warm", p));
        }
    }
    rows
}

/// The title, subtitle and legend; returns the height used.
fn top(svg: &mut Svg, s: &BootSeries) -> f64 {
    let title = format!("boots of {}: the first run after each boot", s.dir);
    let subtitle =
        s.penalty
            .as_ref()
            .map_or("no first-after-boot penalty measured".to_string(), |a| {
                let plain = AcrossBoots {
                    wide: None,
                    ..a.clone()
                };
                format!("penalty across {} boots: {}", a.boots, words(&plain))
            });
    let y = header(svg, &title, &subtitle);
    let mut keys = vec![(Key::Swatch("cold"), "first-after-boot penalty")];
    if s.control_penalty.is_some() {
        keys.push((
            Key::Swatch("warm"),
            "control batch's penalty, later on the same boot",
        ));
    }
    keys.push((
        Key::Marker(Shape::Diamond, "ratio"),
        "mean, with its 95 % interval",
    ));
    legend(svg, 16.0, y + 6.0, &keys);
    y + 16.0
}

/// The lines under the plot (why the interval is wide, why the plan disarmed) from `y`;
/// returns where the next would go.
fn notes(svg: &mut Svg, s: &BootSeries, mut y: f64) -> f64 {
    let wide = s.penalty.as_ref().and_then(|a| a.wide.as_deref());
    let lines = [
        wide.map(|w| format!("the interval: {w}")),
        s.disarmed.as_ref().map(|why| format!("disarmed: {why}")),
    ];
    for line in lines.into_iter().flatten() {
        let text = fit(&line, PLOT_RIGHT - 16.0, 11.0);
        svg.text(16.0, y, Anchor::Start, "small", &text);
        y += 14.0;
    }
    y
}

/// The panel of one series at the current origin; returns its height.
pub fn boots(svg: &mut Svg, s: &BootSeries) -> f64 {
    let y = top(svg, s);
    let x = bar_scale(&values(s));
    let rows = bars(s);
    let summaries: Vec<(&str, &AcrossBoots)> =
        [("mean", &s.penalty), ("control", &s.control_penalty)]
            .into_iter()
            .filter_map(|(n, a)| Some((n, a.as_ref()?)))
            .collect();
    let bottom = y + (rows.len() + summaries.len()) as f64 * BAR_ROW;
    let what = "extra time of the first run over the warm runs";
    time_grid(svg, &x, y, bottom, what);
    for (i, (label, class, value)) in rows.iter().enumerate() {
        let top = y + i as f64 * BAR_ROW;
        bar_row(svg, &x, BARS_LEFT - 10.0, top, (label, class, *value));
        let (at, shown) = (x.at(*value) + 4.0, signed(*value));
        svg.text(at, top + 15.0, Anchor::Start, "small halo", &shown);
    }
    for (i, (label, a)) in summaries.iter().enumerate() {
        let top = y + (rows.len() + i) as f64 * BAR_ROW;
        let mid = top + BAR_ROW / 2.0;
        svg.text(BARS_LEFT - 10.0, top + 15.0, Anchor::End, "small", label);
        if let (Some(l), Some(h)) = (a.low_ns, a.high_ns) {
            whisker(svg, &x, (l, h), mid, 5.0);
        }
        svg.marker(Shape::Diamond, x.at(a.mean_ns), mid, "ratio", &words(a));
    }
    svg.line(x.at(0.0), y, x.at(0.0), bottom, "zero");
    notes(svg, s, bottom + 36.0)
}
