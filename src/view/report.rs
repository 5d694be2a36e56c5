//! `coldtrace report`'s table and Markdown: one row per batch read back, one unit per column,
//! the flags and the kernel under the table, and the reader's notes apart (for stderr, or as a
//! Markdown list). It renders rows; reading batch directories is [`crate::record::reader`]'s.
#![forbid(unsafe_code)]

use crate::record::metrics::Unit;
use crate::record::reader::BatchRow;
use crate::view::grid::{Align, Grid};
use crate::view::units::{fold, human_uptime, shorten, Scale};
use std::fmt::Write;

fn one_line(text: &str) -> String {
    crate::text::escape_controls(text)
}

fn name(row: &BatchRow) -> String {
    one_line(row.label.as_deref().unwrap_or(&row.dir))
}

fn count(v: Option<u64>) -> String {
    v.map_or("—".into(), |v| v.to_string())
}

/// The table: wall times in one unit for both time columns, counts, residency.
fn grid(rows: &[BatchRow]) -> Grid {
    let walls = rows
        .iter()
        .flat_map(|r| [r.first_wall_ns, r.warm_median_wall_ns])
        .flatten();
    let wall = Scale::for_values(Unit::Ns, walls);
    let cached = Scale::for_values(
        Unit::Ratio,
        rows.iter().filter_map(|r| r.first_resident_ratio_before),
    );
    let mut grid = Grid::new(0)
        .shrinkable("batch", Align::Left, 8)
        .optional("boot", Align::Left, 1)
        .optional("uptime", Align::Right, 0)
        .column(&format!("first\n{}", wall.unit), Align::Right)
        .column(&format!("warm median\n{}", wall.unit), Align::Right)
        .column("first/\nwarm", Align::Right)
        .column("major\nfaults", Align::Right)
        .column("block in\n×512 B", Align::Right)
        .column("cached\nbefore %", Align::Right)
        .column("rejected", Align::Right)
        .column("anom-\nalies", Align::Right);
    for row in rows {
        grid.row(vec![
            name(row),
            row.boot_id.as_deref().map_or("?".into(), |b| {
                one_line(&b.chars().take(8).collect::<String>())
            }),
            row.uptime_s.map_or("?".into(), human_uptime),
            match &row.first_rejected {
                Some(_) => format!(
                    "{} ✗",
                    row.first_wall_ns.map_or("—".into(), |v| wall.cell(v))
                ),
                None => row.first_wall_ns.map_or("—".into(), |v| wall.cell(v)),
            },
            row.warm_median_wall_ns.map_or("—".into(), |v| wall.cell(v)),
            row.first_to_warm.map_or("—".into(), |r| format!("{r:.2}×")),
            count(row.first_major_faults),
            count(row.first_block_in),
            row.first_resident_ratio_before
                .map_or("—".into(), |r| cached.cell(r)),
            row.rejected.to_string(),
            count(row.anomalies),
        ]);
    }
    grid
}

/// What the table has no column for: each batch's flags, and the kernel (one line when every
/// batch ran on the same one).
fn under_table(rows: &[BatchRow]) -> Vec<String> {
    let mut lines = Vec::new();
    let kernels: Vec<&str> = rows.iter().filter_map(|r| r.kernel.as_deref()).collect();
    match kernels.first() {
        Some(k) if kernels.iter().all(|o| o == k) && kernels.len() == rows.len() => {
            lines.push(format!("kernel {} (every batch)", one_line(k)));
        }
        _ => {
            for row in rows {
                let kernel = row.kernel.as_deref().map_or("?".into(), one_line);
                lines.push(format!("{}: kernel {kernel}", name(row)));
            }
        }
    }
    for row in rows {
        let mut flags = Vec::new();
        if row.first_on_boot {
            flags.push("first on boot");
        }
        if row.kernel_changed {
            flags.push("kernel changed");
        }
        if !row.complete {
            flags.push("incomplete");
        }
        if !flags.is_empty() {
            lines.push(format!("{}: {}", name(row), flags.join(", ")));
        }
        if let Some(why) = &row.first_rejected {
            lines.push(format!(
                "{}: ✗ the first run was rejected ({})",
                name(row),
                one_line(why)
            ));
        }
    }
    lines
}

/// The reader's notes (a cut last line, a missing batch.json), one per line, for stderr.
pub fn notes(rows: &[BatchRow]) -> Vec<String> {
    rows.iter()
        .flat_map(|row| {
            row.notes
                .iter()
                .map(move |note| format!("{}: {}", one_line(&row.dir), one_line(note)))
        })
        .collect()
}

/// The human table in `width` columns, with the flags and the kernel under it.
pub fn render_table(rows: &[BatchRow], width: usize) -> String {
    let mut out = String::new();
    for line in grid(rows).lines(width) {
        let _ = writeln!(out, "{line}");
    }
    for line in under_table(rows) {
        for folded in fold(&line, width, "  ", "    ") {
            let _ = writeln!(out, "{}", shorten(&folded, width));
        }
    }
    out
}

/// The Markdown table, with the flags, the kernel and the notes as a list under it.
pub fn render_markdown(rows: &[BatchRow]) -> String {
    let mut out = grid(rows).markdown();
    let items: Vec<String> = under_table(rows)
        .into_iter()
        .chain(notes(rows).into_iter().map(|n| format!("note: {n}")))
        .collect();
    if !items.is_empty() {
        out.push('\n');
    }
    for item in items {
        let _ = writeln!(out, "- {}", item.replace('|', "\\|"));
    }
    out
}
