//! Every human number coldtrace prints: durations, sizes, counts, ratios, uptimes, and text
//! shortened to a width. Pure formatting of values; no tables, no terminal.
//!
//! A column of numbers gets one [`Scale`]: one unit for every value in it, chosen from the
//! largest, with four significant digits for that largest value and never more decimals than
//! the metric's resolution (a microsecond counter is never printed in nanoseconds).
#![forbid(unsafe_code)]

use crate::record::metrics::Unit;

/// One unit and precision for a set of values of the same metric (a table row or column).
#[derive(Clone, Debug, PartialEq)]
pub struct Scale {
    /// The unit as shown (`ms`, `MiB`, `%`; empty for a plain count).
    pub unit: &'static str,
    divisor: f64,
    decimals: usize,
}

/// Decimals that give `value` four significant digits.
fn four_digits(value: f64) -> usize {
    match value.abs() {
        v if v < 10.0 => 3,
        v if v < 100.0 => 2,
        v if v < 1000.0 => 1,
        _ => 0,
    }
}

/// Decimals that would show finer than `resolution` (in the base unit) at `divisor`.
fn max_decimals(resolution: f64, divisor: f64) -> usize {
    let step = resolution / divisor;
    if step >= 1.0 {
        0
    } else {
        (-step.log10()).round() as usize
    }
}

/// The largest of `steps` (divisor, unit) whose divisor is not above `largest`, else the first.
fn pick(steps: &[(f64, &'static str)], largest: f64) -> (f64, &'static str) {
    steps
        .iter()
        .rev()
        .find(|(d, _)| largest >= *d)
        .copied()
        .unwrap_or(steps[0])
}

const TIME_NS: [(f64, &str); 4] = [(1.0, "ns"), (1e3, "µs"), (1e6, "ms"), (1e9, "s")];
const SIZE_B: [(f64, &str); 4] = [
    (1.0, "B"),
    (1024.0, "KiB"),
    (1024.0 * 1024.0, "MiB"),
    (1024.0 * 1024.0 * 1024.0, "GiB"),
];

impl Scale {
    /// The scale for `values` of a metric in `unit` (NaNs and infinities are ignored).
    pub fn for_values(unit: Unit, values: impl IntoIterator<Item = f64>) -> Scale {
        let values: Vec<f64> = values.into_iter().filter(|v| v.is_finite()).collect();
        let largest = values.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        Scale::for_largest(unit, largest).exact(&values)
    }

    /// Fewer decimals when every value is whole at fewer (`8` and `0` KiB, not `8.000`).
    fn exact(mut self, values: &[f64]) -> Scale {
        let whole_at = |d: usize| {
            let f = 10f64.powi(d as i32);
            values.iter().all(|v| {
                let x = v / self.divisor * f;
                (x - x.round()).abs() < 1e-6
            })
        };
        self.decimals = (0..self.decimals)
            .find(|&d| whole_at(d))
            .unwrap_or(self.decimals);
        self
    }

    fn for_largest(unit: Unit, largest: f64) -> Scale {
        // Every value is turned into the base unit (ns, bytes) first; `resolution` is the
        // metric's own step in that base unit.
        let (steps, base, resolution): (&[(f64, &'static str)], f64, f64) = match unit {
            Unit::Ns => (&TIME_NS, 1.0, 1.0),
            Unit::Us => (&TIME_NS[1..], 1e3, 1e3),
            Unit::Kib => (&SIZE_B[1..], 1024.0, 1024.0),
            Unit::Bytes => (&SIZE_B, 1.0, 1.0),
            // 512-byte blocks in bytes, as every other size: one unit per metric everywhere.
            Unit::Blocks512 => (&SIZE_B, 512.0, 512.0),
            Unit::Count => return Scale::count(largest),
            Unit::Ratio => {
                let decimals = if largest > 0.0 && largest < 0.1 { 1 } else { 0 };
                return Scale {
                    unit: "%",
                    divisor: 0.01,
                    decimals,
                };
            }
        };
        let (divisor, name) = pick(steps, largest * base);
        let decimals = four_digits(largest * base / divisor).min(max_decimals(resolution, divisor));
        Scale {
            unit: name,
            divisor: divisor / base,
            decimals,
        }
    }

    /// Counts stay whole up to seven digits, then go to millions or billions.
    fn count(largest: f64) -> Scale {
        let (divisor, name) = if largest >= 1e10 {
            (1e9, "×10⁹")
        } else if largest >= 1e7 {
            (1e6, "×10⁶")
        } else {
            (1.0, "")
        };
        let decimals = if divisor > 1.0 {
            four_digits(largest / divisor)
        } else {
            0
        };
        Scale {
            unit: name,
            divisor,
            decimals,
        }
    }

    /// `value` in this scale, without the unit (an exact zero is `0`, whatever the decimals).
    pub fn cell(&self, value: f64) -> String {
        if value == 0.0 {
            return "0".to_string();
        }
        format!("{:.*}", self.decimals, value / self.divisor)
    }

    /// `value` in this scale, with the unit (`213.9 ms`).
    pub fn with_unit(&self, value: f64) -> String {
        if self.unit.is_empty() {
            self.cell(value)
        } else {
            format!("{} {}", self.cell(value), self.unit)
        }
    }
}

/// One value with its unit, scaled on its own (`1.230 ms`, `845 µs`, `13.20 MiB`).
pub fn human(unit: Unit, value: f64) -> String {
    Scale::for_values(unit, [value]).with_unit(value)
}

/// A duration in nanoseconds (`1.230 ms`).
pub fn human_ns(ns: f64) -> String {
    human(Unit::Ns, ns)
}

/// `+1.230 ms`, `-845 µs`: a difference of durations, with its sign.
pub fn signed_ns(ns: i64) -> String {
    let sign = if ns < 0 { '-' } else { '+' };
    format!("{sign}{}", human_ns(ns.unsigned_abs() as f64))
}
/// A ratio to three significant figures at most: `1.43×`, `41.5×`, `1234×` (two decimals of a
/// ratio of thousands say nothing the figures do not).
pub fn ratio(r: f64) -> String {
    if r.abs() >= 100.0 {
        format!("{r:.0}×")
    } else if r.abs() >= 10.0 {
        format!("{r:.1}×")
    } else {
        format!("{r:.2}×")
    }
}

/// A size in bytes (`76.69 MiB`, `512 B`).
pub fn human_bytes(bytes: f64) -> String {
    human(Unit::Bytes, bytes)
}

/// A size in KiB (`2 MiB`).
pub fn human_kib(kib: f64) -> String {
    human(Unit::Kib, kib)
}

/// `2h13m`, `95s`.
pub fn human_uptime(s: f64) -> String {
    let s = s as u64;
    if s >= 86_400 {
        format!("{}d{}h", s / 86_400, (s % 86_400) / 3600)
    } else if s >= 3600 {
        format!("{}h{:02}m", s / 3600, (s % 3600) / 60)
    } else if s >= 60 {
        format!("{}m{:02}s", s / 60, s % 60)
    } else {
        format!("{s}s")
    }
}

/// `00:42`, `12:05`, `1:02:03`: a remaining time for the progress line.
pub fn clock_time(ns: f64) -> String {
    let s = (ns / 1e9).round().max(0.0) as u64;
    if s >= 3600 {
        format!("{}:{:02}:{:02}", s / 3600, (s % 3600) / 60, s % 60)
    } else {
        format!("{:02}:{:02}", s / 60, s % 60)
    }
}

/// How many terminal columns `c` takes: 0 for combining marks and zero-width characters, 2 for
/// East Asian wide and emoji blocks, else 1. (Control characters never reach a table: cells are
/// escaped first.)
fn char_width(c: char) -> usize {
    let u = c as u32;
    match u {
        0x0300..=0x036F | 0x200B..=0x200F | 0xFE00..=0xFE0F => 0,
        0x1100..=0x115F
        | 0x2E80..=0xA4CF
        | 0xAC00..=0xD7A3
        | 0xF900..=0xFAFF
        | 0xFE30..=0xFE4F
        | 0xFF00..=0xFF60
        | 0xFFE0..=0xFFE6
        | 0x1F300..=0x1F64F
        | 0x1F900..=0x1F9FF
        | 0x20000..=0x3FFFD => 2,
        _ => 1,
    }
}

/// The columns `text` takes on a terminal; SGR escape sequences (`\x1b[…m`, colour) take none.
pub fn display_width(text: &str) -> usize {
    let mut width = 0;
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\x1b' {
            for e in chars.by_ref() {
                if e.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            width += char_width(c);
        }
    }
    width
}

/// `text` in at most `max` columns, ending in `…` when cut (escape sequences are kept whole,
/// and a colour cut short is reset).
pub fn shorten(text: &str, max: usize) -> String {
    if display_width(text) <= max {
        return text.to_string();
    }
    let mut out = String::new();
    let mut width = 0;
    let mut escaped = false;
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\x1b' {
            escaped = true;
            out.push(c);
            for e in chars.by_ref() {
                out.push(e);
                if e.is_ascii_alphabetic() {
                    break;
                }
            }
            continue;
        }
        let w = char_width(c);
        if width + w + 1 > max {
            break;
        }
        out.push(c);
        width += w;
    }
    let mut out = out.trim_end().to_string();
    out.push('…');
    if escaped {
        out.push_str("\x1b[0m");
    }
    out
}

/// `text` in at most `max` columns, starting with `…` when cut: its end is kept (for paths;
/// `text` holds no escape sequence — paths and labels are escaped before they are shown).
pub fn shorten_start(text: &str, max: usize) -> String {
    if display_width(text) <= max {
        return text.to_string();
    }
    let mut kept: Vec<char> = Vec::new();
    let mut width = 0;
    for c in text.chars().rev() {
        let w = char_width(c);
        if width + w + 1 > max {
            break;
        }
        kept.push(c);
        width += w;
    }
    let mut out = String::from("…");
    out.extend(kept.iter().rev());
    out
}

/// `text` folded at spaces into lines of at most `width` columns: the first line starts with
/// `first`, the following ones with `rest` (a hanging indent). A no-break space (U+00A0, e.g.
/// between a number and its unit, see [`crate::text::unbreakable`]) never breaks and is given
/// back as a plain space. A word longer than a whole line is shortened with `…`, never left to
/// wrap on the terminal.
pub fn fold(text: &str, width: usize, first: &str, rest: &str) -> Vec<String> {
    let mut lines = fold_words(text, width, first, rest);
    for line in &mut lines {
        *line = line.replace('\u{a0}', " ");
    }
    lines
}

fn fold_words(text: &str, width: usize, first: &str, rest: &str) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = first.to_string();
    let mut empty = true;
    for word in text.split([' ', '\n', '\t']).filter(|w| !w.is_empty()) {
        let room = width.saturating_sub(display_width(&line));
        let need = display_width(word) + usize::from(!empty);
        if !empty && need > room {
            lines.push(std::mem::replace(&mut line, rest.to_string()));
            empty = true;
        }
        let room = width.saturating_sub(display_width(&line) + usize::from(!empty));
        if !empty {
            line.push(' ');
        }
        line.push_str(&shorten(word, room.max(1)));
        empty = false;
    }
    lines.push(line);
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_is_shortened_at_its_start_keeping_what_tells_it_apart() {
        assert_eq!(shorten_start("shared/vm/task1", 9), "…vm/task1");
        assert_eq!(shorten_start("shared/vm/task1", 15), "shared/vm/task1");
        assert!(display_width(&shorten_start("日本語のパス/task1", 8)) <= 8);
        assert_eq!(shorten("shared/vm/task1", 9), "shared/v…");
    }

    #[test]
    fn one_value_reads_naturally() {
        assert_eq!(human_ns(1_234_567.0), "1.235 ms");
        assert_eq!(human_ns(213_990_000.0), "214.0 ms");
        assert_eq!(human_ns(845_000.0), "845 µs");
        assert_eq!(human_ns(845_300.0), "845.3 µs");
        assert_eq!(human_kib(2048.0), "2 MiB");
        assert_eq!(human(Unit::Ratio, 0.031), "3.1 %");
        assert_eq!(human(Unit::Ratio, 0.5), "50 %");
        assert_eq!(human_uptime(7980.0), "2h13m");
        assert_eq!(clock_time(65e9), "01:05");
        assert_eq!(clock_time(3723e9), "1:02:03");
    }

    #[test]
    fn a_microsecond_counter_is_never_shown_in_nanoseconds() {
        let zero = Scale::for_values(Unit::Us, [0.0, 0.0]);
        assert_eq!((zero.unit, zero.cell(0.0)), ("µs", "0".to_string()));
        let small = Scale::for_values(Unit::Us, [838.0, 426.0, 0.0]);
        assert_eq!(
            (small.unit, small.cell(838.0), small.cell(0.0)),
            ("µs", "838".into(), "0".into())
        );
        // 1.234 ms of a µs counter: three decimals are whole microseconds, no finer.
        let ms = Scale::for_values(Unit::Us, [1234.0]);
        assert_eq!((ms.unit, ms.cell(1234.0)), ("ms", "1.234".to_string()));
        // A nanosecond clock may show finer steps.
        assert_eq!(Scale::for_values(Unit::Ns, [845.0]).unit, "ns");
    }

    #[test]
    fn a_column_has_one_unit_chosen_from_its_largest_value() {
        let rss = Scale::for_values(Unit::Kib, [1126.0, 1002.0]);
        assert_eq!(rss.unit, "MiB");
        assert_eq!(rss.cell(1002.0), "0.979");
        let wall = Scale::for_values(Unit::Ns, [236.4e6, 191.6e6, 9.5e6]);
        assert_eq!(
            (wall.unit, wall.cell(236.4e6), wall.cell(9.5e6)),
            ("ms", "236.4".into(), "9.5".into())
        );
        let blocks = Scale::for_values(Unit::Blocks512, [27912.0, 0.0]);
        assert_eq!((blocks.unit, blocks.cell(27912.0)), ("MiB", "13.63".into()));
        let big = Scale::for_values(Unit::Count, [1.234e9]);
        assert_eq!((big.unit, big.cell(1.234e9)), ("×10⁶", "1234".into()));
    }

    #[test]
    fn text_is_measured_in_terminal_columns_and_cut_with_an_ellipsis() {
        assert_eq!(display_width("±×…µ█"), 5);
        assert_eq!(display_width("\x1b[33m1.50×\x1b[0m"), 5);
        assert_eq!(display_width("日本"), 4);
        assert_eq!(shorten("python3 -c 'import json'", 10), "python3 -…");
        assert_eq!(display_width(&shorten("日本語のコマンド", 7)), 7);
        assert_eq!(shorten("short", 10), "short");
    }

    #[test]
    fn prose_folds_at_spaces_with_a_hanging_indent() {
        let lines = fold("one two three four five", 12, "  ", "    ");
        assert_eq!(lines, ["  one two", "    three", "    four", "    five"]);
        let figure = format!("read {}", crate::text::unbreakable("12.31 MiB"));
        assert_eq!(fold(&figure, 14, "  ", "    "), ["  read", "    12.31 MiB"]);
        assert!(fold(&"x".repeat(50), 20, "  ", "  ")
            .iter()
            .all(|l| display_width(l) <= 20));
    }
}
