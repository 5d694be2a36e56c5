//! `--export-markdown FILE`: hyperfine 2.0's Markdown table, as hyperfine 2.0.0 writes it
//! (`tests/golden/hyperfine-2.0.0/*.md`): `Command | Mean Wall Time [UNIT] | Change | Factor`,
//! then, of a comparison, `95% CI`, and `First Run [UNIT]` where a command keeps its first run
//! apart, one row per command — the mean ± σ of the wall time of the runs the screen's figures
//! cover (the runs after the first, where it is kept apart) in one unit for the whole table
//! (chosen by the first command's mean); its change against the first command in per cent and,
//! beyond 1.3× either way, the factor in words, both of the ratio the screen gives (the warm
//! medians', from the comparison) with that ratio's 95 % interval. It lays out figures of the
//! records ([`Measured`]) and the comparison; coldtrace's own table is on the terminal and in
//! `report --markdown`.
#![forbid(unsafe_code)]

use crate::record::compare::{interval_text, MetricComparison};
use crate::record::stats::Summary;
use crate::view::export::hyperfine::{first_run, summary, Measured, WALL};
use crate::view::export::part::Part;
use std::io;

/// A time unit as hyperfine names it, and how many seconds it holds.
const TIME_UNITS: [(&str, f64); 6] = [
    ("ns", 1e-9),
    ("µs", 1e-6),
    ("ms", 1e-3),
    ("s", 1.0),
    ("min", 60.0),
    ("h", 3600.0),
];

/// The largest unit not above `mean` (seconds; `s` for 0).
fn unit_for(mean: f64) -> (&'static str, f64) {
    if mean == 0.0 {
        return ("s", 1.0);
    }
    TIME_UNITS
        .iter()
        .rev()
        .find(|(_, scale)| mean.abs() >= *scale)
        .copied()
        .unwrap_or(TIME_UNITS[0])
}

/// A value in `unit`: three decimals in seconds, one in any other unit (hyperfine's rule).
fn value_in(value: f64, (symbol, scale): (&str, f64)) -> String {
    let precision = if symbol == "s" { 3 } else { 1 };
    format!("{:.precision$}", value / scale)
}

/// `+48.3%`: a ratio to the first command as a change (`N/A` without one).
fn change(ratio: Option<f64>) -> String {
    let Some(ratio) = ratio.filter(|r| r.is_finite()) else {
        return "N/A".into();
    };
    let text = format!("{:+.1}%", 100.0 * (ratio - 1.0));
    match text.as_str() {
        "+0.0%" | "-0.0%" => "0.0%".into(),
        _ => text,
    }
}

/// `(1.5x slower)` beyond 1.3× either way, else nothing.
fn factor(ratio: Option<f64>) -> String {
    let Some(ratio) = ratio.filter(|&r| r >= 1.3 || (0.0..=0.7).contains(&r)) else {
        return String::new();
    };
    let (by, direction) = if ratio < 1.0 {
        (1.0 / ratio, "faster")
    } else {
        (ratio, "slower")
    };
    let by = if by.is_infinite() {
        "∞".to_string()
    } else {
        format!("{by:.1}")
    };
    format!("({by}x {direction})")
}

/// A command as hyperfine shows it: Markdown code, in backticks, more of them than any run
/// inside it, `|` escaped for the table. A code span shows its text as written, so an entity
/// in it would be shown as one: a command holding `<`, `>` or `&` is Markdown text instead
/// ([`crate::text::markdown_text`]), where those are entities and nothing else is markup.
fn command_cell(command: &str) -> String {
    if command.contains(['<', '>', '&']) {
        return crate::text::markdown_text(command);
    }
    let command = command.replace('|', "\\|");
    let longest = command.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    if longest == 0 {
        format!("`{command}`")
    } else {
        let fence = "`".repeat(longest + 1);
        format!("{fence} {command} {fence}")
    }
}

fn row(cells: &[&str]) -> String {
    format!("| {} |\n", cells.join(" | "))
}

/// The table of every command's counted runs: hyperfine's columns over the runs the screen's
/// statistics cover (the runs after the first where the batch keeps its first run apart), the
/// change and factor of the screen's ratio (`wall`: the comparison's wall time, each command's
/// warm median over the first's) with its 95 % interval in a column of its own, and the first
/// run's wall time in a column of its own at the end when a command has one.
pub fn table(parts: &[Part<'_>], wall: Option<&MetricComparison>) -> io::Result<String> {
    let runs: Vec<Vec<Measured>> = parts.iter().map(Measured::all).collect::<io::Result<_>>()?;
    let stats: Vec<Option<Summary>> = runs.iter().map(|r| summary(&WALL, r)).collect();
    let firsts: Vec<Option<f64>> = runs.iter().map(|r| first_run(&WALL, r)).collect();
    // One unit for the table, from the first mean that is not 0.
    let unit = unit_for(
        stats
            .iter()
            .flatten()
            .map(|s| s.mean)
            .find(|m| *m != 0.0)
            .unwrap_or(0.0),
    );
    let with_first = firsts.iter().any(Option::is_some);
    let with_interval = wall.is_some() && parts.len() > 1;
    let mut head = vec![
        "Command".to_string(),
        format!("Mean Wall Time [{}]", unit.0),
        "Change".into(),
        "Factor".into(),
    ];
    let mut divider = "|:---|---:|---:|:---|".to_string();
    if with_interval {
        head.push("95% CI".into());
        divider.push_str("---:|");
    }
    if with_first {
        head.push(format!("First Run [{}]", unit.0));
        divider.push_str("---:|");
    }
    let head: Vec<&str> = head.iter().map(String::as_str).collect();
    let mut out = row(&head);
    out.push_str(&divider);
    out.push('\n');
    for (i, (part, stat)) in parts.iter().zip(&stats).enumerate() {
        let command = command_cell(part.shown());
        let ratio = wall.and_then(|w| w.commands.get(i)).filter(|_| i > 0);
        let mut cells = match stat {
            None => vec![
                command,
                "no counted run".into(),
                String::new(),
                String::new(),
            ],
            Some(stat) => {
                let mean = match stat.stddev {
                    Some(sd) => format!("{} ± {}", value_in(stat.mean, unit), value_in(sd, unit)),
                    None => value_in(stat.mean, unit),
                };
                let (change, factor) = match ratio {
                    Some(r) => (change(r.ratio_to_first), factor(r.ratio_to_first)),
                    None => (String::new(), String::new()),
                };
                vec![command, mean, change, factor]
            }
        };
        if with_interval {
            cells.push(match ratio.map(|r| (r.ci_low, r.ci_high)) {
                Some((Some(lo), Some(hi))) => interval_text(lo, hi),
                Some(_) => "—".into(),
                None => String::new(),
            });
        }
        if with_first {
            cells.push(firsts[i].map_or(String::new(), |v| value_in(v, unit)));
        }
        let cells: Vec<&str> = cells.iter().map(String::as_str).collect();
        out.push_str(&row(&cells));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_follow_hyperfines_rules() {
        assert_eq!(unit_for(0.0155), ("ms", 1e-3));
        assert_eq!(unit_for(2.5).0, "s");
        assert_eq!(unit_for(0.0).0, "s");
        assert_eq!(value_in(0.0155567594, ("ms", 1e-3)), "15.6");
        assert_eq!(value_in(1.23456, ("s", 1.0)), "1.235");
        assert_eq!(change(Some(0.0230772842 / 0.0155567594)), "+48.3%");
        assert_eq!(change(Some(1.0)), "0.0%");
        assert_eq!(change(None), "N/A");
        assert_eq!(factor(Some(0.0230772842 / 0.0155567594)), "(1.5x slower)");
        assert_eq!(factor(Some(0.000737 / 0.0063058)), "(8.6x faster)");
        assert_eq!(factor(Some(1.2)), "");
        assert_eq!(factor(None), "");
        assert_eq!(command_cell("echo `uname`"), "`` echo `uname` ``");
        assert_eq!(command_cell("true"), "`true`");
        assert_eq!(command_cell("a|b"), "`a\\|b`");
        assert_eq!(
            command_cell("sh -c 'make && echo <b>`x`'"),
            "sh -c 'make &amp;&amp; echo &lt;b&gt;\\`x\\`'"
        );
    }
}
