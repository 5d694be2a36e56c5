//! `coldtrace report`'s table and Markdown: one row per batch read back. It renders rows;
//! reading batch directories is [`crate::record::reader`]'s job.
#![forbid(unsafe_code)]

use crate::record::reader::BatchRow;
use crate::view::units::{human_ns, human_uptime};
use std::fmt::Write;

fn one_line(text: &str) -> String {
    crate::text::escape_controls(text)
}

fn cell_ns(v: Option<f64>) -> String {
    v.map_or("—".into(), human_ns)
}

fn cells(row: &BatchRow) -> [String; 12] {
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
    [
        one_line(row.label.as_deref().unwrap_or(&row.dir)),
        one_line(row.kernel.as_deref().unwrap_or("?")),
        row.boot_id.as_deref().map_or("?".into(), |b| {
            one_line(&b.chars().take(8).collect::<String>())
        }),
        row.uptime_s.map_or("?".into(), human_uptime),
        match &row.first_rejected {
            Some(_) => format!("{} ✗", cell_ns(row.first_wall_ns)),
            None => cell_ns(row.first_wall_ns),
        },
        cell_ns(row.warm_median_wall_ns),
        row.first_to_warm.map_or("—".into(), |r| format!("{r:.2}×")),
        row.first_major_faults.map_or("—".into(), |v| v.to_string()),
        row.first_block_in.map_or("—".into(), |v| v.to_string()),
        row.first_resident_ratio_before
            .map_or("—".into(), |r| format!("{:.0}%", r * 100.0)),
        row.rejected.to_string(),
        flags.join(", "),
    ]
}

const HEADERS: [&str; 12] = [
    "batch",
    "kernel",
    "boot",
    "uptime",
    "first",
    "warm median",
    "first/warm",
    "major faults",
    "block in",
    "cached before",
    "rejected",
    "flags",
];

/// The human table.
pub fn render_table(rows: &[BatchRow]) -> String {
    let all: Vec<[String; 12]> = rows.iter().map(cells).collect();
    let widths: Vec<usize> = (0..12)
        .map(|c| {
            all.iter()
                .map(|r| r[c].chars().count())
                .chain([HEADERS[c].len()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    let line = |cols: Vec<&str>| -> String {
        cols.iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect::<Vec<_>>()
            .join("  ")
            .trim_end()
            .to_string()
    };
    let _ = writeln!(out, "{}", line(HEADERS.to_vec()));
    for r in &all {
        let _ = writeln!(out, "{}", line(r.iter().map(String::as_str).collect()));
    }
    for row in rows {
        if let Some(why) = &row.first_rejected {
            let _ = writeln!(
                out,
                "note: {}: ✗ the first run was rejected ({why})",
                row.dir
            );
        }
        for note in &row.notes {
            let _ = writeln!(out, "note: {}: {}", one_line(&row.dir), one_line(note));
        }
    }
    out
}

/// A Markdown table.
pub fn render_markdown(rows: &[BatchRow]) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "| {} |", HEADERS.join(" | "));
    let _ = writeln!(out, "|{}", "---|".repeat(HEADERS.len()));
    for row in rows {
        let c = cells(row);
        let _ = writeln!(
            out,
            "| {} |",
            c.iter()
                .map(|s| s.replace('|', "\\|"))
                .collect::<Vec<_>>()
                .join(" | ")
        );
    }
    out
}
