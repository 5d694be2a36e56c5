//! `report`'s boots side by side: per boot of an armed plan its first run after boot, the
//! warm runs, the control batch and how busy the machine was; under them the first-after-boot
//! penalty across the boots with its interval (and whether it is too wide to lean on), and
//! what changed between boots. It renders what [`crate::record::boots`] decided.
#![forbid(unsafe_code)]

use crate::record::boots::{AcrossBoots, BootRow, BootSeries};
use crate::record::metrics::Unit;
use crate::record::verdict::{Kind, Verdict};
use crate::view::grid::{Align, Grid};
use crate::view::units::{fold, human_bytes, human_kib, human_uptime, shorten, Scale};
use std::fmt::Write;

fn signed(scale: &Scale, ns: f64) -> String {
    let cell = scale.cell(ns);
    if ns > 0.0 {
        format!("+{cell}")
    } else {
        cell
    }
}

fn grid(series: &BootSeries) -> Grid {
    let rows = &series.rows;
    let walls = rows.iter().flat_map(|r| {
        [r.first_wall_ns, r.warm_median_wall_ns, r.penalty_ns]
            .into_iter()
            .flatten()
    });
    let wall = Scale::for_values(Unit::Ns, walls);
    let control = rows.iter().any(|r| r.control_first_wall_ns.is_some());
    let mut grid = Grid::new(2)
        .column("boot", Align::Right)
        .column("boot ID", Align::Left)
        .column("up at\nfirst", Align::Right)
        .optional("page\ncache", Align::Right, 1)
        .column(&format!("first\n{}", wall.unit), Align::Right)
        .column(&format!("warm\n{}", wall.unit), Align::Right)
        .column(&format!("penalty\n{}", wall.unit), Align::Right)
        .column("verdict", Align::Left)
        .column("read", Align::Right)
        .optional("CPU\nwait", Align::Right, 2);
    if control {
        grid = grid.column(&format!("control\n{}", wall.unit), Align::Right);
    }
    let dash = || "—".to_string();
    for r in rows {
        let mut cells = vec![
            r.boot.to_string(),
            r.boot_id.chars().take(8).collect(),
            r.uptime_s.map_or_else(dash, human_uptime),
            r.page_cache_kib.map_or_else(dash, |k| human_kib(k as f64)),
            r.first_wall_ns.map_or_else(dash, |v| wall.cell(v)),
            r.warm_median_wall_ns.map_or_else(dash, |v| wall.cell(v)),
            r.penalty_ns.map_or_else(dash, |v| signed(&wall, v)),
            r.verdict.as_ref().map_or_else(dash, short_verdict),
            r.first_read_bytes
                .map_or_else(dash, |b| human_bytes(b as f64)),
            r.first_cpu_wait_share
                .map_or("?".into(), |s| format!("{:.0} %", s * 100.0)),
        ];
        if control {
            cells.push(r.control_penalty_ns.map_or_else(dash, |v| signed(&wall, v)));
        }
        grid.row(cells);
    }
    grid
}

/// The verdict in a cell: `penalty` (its states are said under the table), `n.d.` (not
/// distinguishable from the warm runs at this count), or why there is no test.
fn short_verdict(v: &Verdict) -> String {
    match v.kind {
        Kind::Penalty => "penalty".into(),
        Kind::NotDistinguishable | Kind::TooFewWarmRuns => "n.d.".into(),
        other => other.name().replace('_', " "),
    }
}

/// `mean +116.5 ms, 95 % interval +23.7 ms to +209.4 ms (3 boots, Student's t)`.
fn across_text(what: &str, a: &AcrossBoots) -> String {
    let ns = |v: f64| crate::view::units::signed_ns(v as i64);
    let interval = match (a.low_ns, a.high_ns) {
        (Some(low), Some(high)) => format!(
            ", 95 % interval {} to {} ({} boots, Student's t)",
            ns(low),
            ns(high),
            a.boots
        ),
        _ => String::new(),
    };
    let wide = a
        .wide
        .as_deref()
        .map_or(String::new(), |w| format!(" — {w}"));
    format!("{what}: mean {}{interval}{wide}", ns(a.mean_ns))
}

/// The lines under the table: the penalty across boots, the control's, the changes, busy
/// boots, why it disarmed.
fn lines(series: &BootSeries) -> Vec<String> {
    let mut lines = Vec::new();
    match &series.penalty {
        Some(a) => lines.push(across_text("first-after-boot penalty across boots", a)),
        None => lines.push("first-after-boot penalty: none measured (no warm runs?)".into()),
    }
    if let Some(a) = &series.control_penalty {
        lines.push(across_text(
            "control batches' penalty (a settled system)",
            a,
        ));
    }
    for r in &series.rows {
        if let Some(line) = r.verdict.as_ref().and_then(crate::view::verdict::one_line) {
            lines.push(format!("boot {}: {line}", r.boot));
        }
    }
    let changed: Vec<&BootRow> = series
        .rows
        .iter()
        .filter(|r| !r.changes.is_empty())
        .collect();
    if changed.is_empty() && series.rows.len() > 1 {
        lines.push(
            "no change between boots: the same kernel, executable and libraries (inode, size, \
             mtime)"
                .into(),
        );
    }
    for r in changed {
        lines.push(format!(
            "changed before boot {}: {}",
            r.boot,
            r.changes.join("; ")
        ));
    }
    if series.rows.iter().all(|r| r.first_cpu_wait_share.is_none()) {
        lines.push("CPU wait: unknown (no PSI on this kernel, or psi=0)".into());
    }
    for r in series.rows.iter() {
        if let Some(share) = r.busy_share() {
            lines.push(format!(
                "boot {}: some task waited for a CPU during {:.0} % of the first run \
                 (system-wide PSI): the machine was busy",
                r.boot,
                share * 100.0
            ));
        }
    }
    if let Some(why) = &series.disarmed {
        lines.push(format!("disarmed: {why}"));
    }
    lines
}

fn heading(series: &BootSeries) -> String {
    let armed = series.rows.first().map_or(0, |r| r.boots);
    format!(
        "boots of {}: {} boot{} of {armed} armed",
        crate::text::escape_controls(&series.dir),
        series.rows.len(),
        if series.rows.len() == 1 { "" } else { "s" }
    )
}

/// The boots of each series, side by side, in `width` columns.
pub fn render_text(all: &[BootSeries], width: usize) -> String {
    let mut out = String::new();
    for series in all {
        let _ = writeln!(out, "\n{}", shorten(&heading(series), width));
        for line in grid(series).lines(width) {
            let _ = writeln!(out, "{line}");
        }
        for line in lines(series) {
            for folded in fold(&line, width, "  ", "    ") {
                let _ = writeln!(out, "{}", shorten(&folded, width));
            }
        }
    }
    out
}

/// The same in Markdown.
pub fn render_markdown(all: &[BootSeries]) -> String {
    let mut out = String::new();
    for series in all {
        let _ = writeln!(
            out,
            "\n**{}**\n",
            crate::text::markdown_text(&heading(series))
        );
        out.push_str(&grid(series).markdown());
        out.push('\n');
        for line in lines(series) {
            let _ = writeln!(out, "- {}", crate::text::markdown_text(&line));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_boots_fit_80_columns_and_say_the_interval_and_its_width() {
        let row = |boot: u64, first: f64, busy: f64| BootRow {
            boot,
            boots: 3,
            boot_id: format!("{boot}5ca9040-6e6f-4c1e-9b44-e85e9da1e474"),
            dir: format!("/r/ct/boot-0{boot}"),
            kernel_release: Some("6.1.0-57-cloud-amd64".into()),
            uptime_s: Some(6.2),
            page_cache_kib: Some(11_000),
            first_wall_ns: Some(first),
            warm_median_wall_ns: Some(9.6e6),
            penalty_ns: Some(first - 9.6e6),
            first_read_bytes: Some(5_750_000),
            first_major_faults: Some(16),
            first_cpu_wait_share: Some(busy),
            ..BootRow::default()
        };
        let rows = vec![
            row(1, 145.9e6, 0.05),
            row(2, 147.2e6, 0.31),
            row(3, 78.7e6, 0.0),
        ];
        let penalty = crate::record::boots::across(
            &rows.iter().filter_map(|r| r.penalty_ns).collect::<Vec<_>>(),
        );
        let series = BootSeries {
            dir: "/r/ct".into(),
            rows,
            penalty,
            control_penalty: None,
            disarmed: Some("all 3 boots have run".into()),
        };
        let text = render_text(std::slice::from_ref(&series), 80);
        for line in text.lines() {
            assert!(crate::view::units::display_width(line) <= 80, "{line}");
        }
        assert!(
            text.contains("boots of /r/ct: 3 boots of 3 armed"),
            "{text}"
        );
        assert!(text.contains("95 % interval"), "{text}");
        assert!(text.contains("wide: 3 boots are 3 samples"), "{text}");
        assert!(
            text.contains("boot 2: some task waited for a CPU during 31 %"),
            "{text}"
        );
        assert!(text.contains("no change between boots"), "{text}");
        assert!(text.contains("disarmed: all 3 boots have run"), "{text}");
        assert!(render_markdown(&[series]).contains("| boot |"));
    }
}
