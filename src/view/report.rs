//! `coldtrace report`'s table and Markdown: one row per batch read back, one unit per column,
//! the flags and the kernel under the table, and the reader's notes apart (for stderr, or as a
//! Markdown list). It renders rows; reading batch directories is [`crate::record::reader`]'s.
#![forbid(unsafe_code)]

use crate::record::metrics::Unit;
use crate::record::reader::BatchRow;
use crate::view::grid::{Align, Grid};
use crate::view::units::{fold, human_uptime, shorten, signed_ns, Scale};
use std::fmt::Write;

fn one_line(text: &str) -> String {
    crate::text::escape_controls(text)
}

/// A batch as the lines under the table name it: its label, else its directory.
fn name(row: &BatchRow) -> String {
    one_line(row.label.as_deref().unwrap_or(&row.dir))
}

/// Each row's name in the batch column: its label (a comparison's command), else its
/// directory; a label that more than one row has is preceded by where the row is (`cmp[0]`
/// for the first command of the comparison in `cmp`, the directory of a batch).
fn names(rows: &[BatchRow]) -> Vec<String> {
    let shared = |label: &str| {
        rows.iter()
            .filter(|r| r.label.as_deref() == Some(label))
            .count()
            > 1
    };
    rows.iter()
        .map(|row| match row.label.as_deref() {
            Some(label) if shared(label) => format!("{} {}", short_id(&row.dir), one_line(label)),
            _ => name(row),
        })
        .collect()
}

/// `cmp[0]` for `cmp/commands/00` (a comparison's first command), else the directory.
fn short_id(dir: &str) -> String {
    let command = dir.rsplit_once("/commands/").and_then(|(parent, nn)| {
        let n: u32 = nn.trim_end_matches('/').parse().ok()?;
        Some(format!("{parent}[{n}]"))
    });
    one_line(&command.unwrap_or_else(|| dir.to_string()))
}

fn count(v: Option<u64>) -> String {
    v.map_or("—".into(), |v| v.to_string())
}

/// The anomalies column's label: hyphenated onto two lines in the terminal's table (narrow),
/// one word in Markdown, whose headers are one line.
fn anomalies_label(markdown: bool) -> &'static str {
    if markdown {
        "anomalies"
    } else {
        "anoma-\nlies"
    }
}

/// The warm median's label: in the terminal two words on two lines, in the unit of the first
/// run's and the penalty's columns beside it (said under them); in Markdown with its unit.
fn warm_label(markdown: bool, unit: &str) -> String {
    if markdown {
        format!("warm median {unit}")
    } else {
        "warm\nmedian".to_string()
    }
}

/// The rejected column's label, hyphenated like [`anomalies_label`].
fn rejected_label(markdown: bool) -> &'static str {
    if markdown {
        "rejected"
    } else {
        "rejec-\nted"
    }
}

/// The table: wall times in one unit for both time columns, counts, residency; labels for
/// Markdown when `markdown`.
fn grid(rows: &[BatchRow], markdown: bool) -> Grid {
    let walls = rows
        .iter()
        .flat_map(|r| [r.first_wall_ns, r.warm_median_wall_ns])
        .flatten();
    let wall = Scale::for_values(Unit::Ns, walls);
    let cached = Scale::for_values(
        Unit::Ratio,
        rows.iter().filter_map(|r| r.first_resident_ratio_before),
    );
    let blocks = Scale::for_values(
        Unit::Blocks512,
        rows.iter()
            .filter_map(|r| r.first_block_in.map(|b| b as f64)),
    );
    let mut grid = Grid::new(0)
        .shrinkable_distinct("batch", Align::Left, 8)
        .optional("uptime", Align::Right, 0)
        .column(&format!("first\n{}", wall.unit), Align::Right)
        .column(warm_label(markdown, wall.unit).as_str(), Align::Right)
        .optional("first/\nwarm", Align::Right, 1)
        .column(&format!("penalty\n{}", wall.unit), Align::Right)
        .column("major\nfaults", Align::Right)
        .column(&format!("block\nin {}", blocks.unit), Align::Right)
        .column("cached\nbefore %", Align::Right)
        .column(rejected_label(markdown), Align::Right)
        .column(anomalies_label(markdown), Align::Right);
    for (row, name) in rows.iter().zip(names(rows)) {
        grid.row(vec![
            name,
            row.uptime_s.map_or("?".into(), human_uptime),
            match &row.first_rejected {
                Some(_) => format!(
                    "{} ✗",
                    row.first_wall_ns.map_or("—".into(), |v| wall.cell(v))
                ),
                None => row.first_wall_ns.map_or("—".into(), |v| wall.cell(v)),
            },
            row.warm_median_wall_ns.map_or("—".into(), |v| wall.cell(v)),
            row.first_to_warm
                .map_or("—".into(), crate::view::units::ratio),
            penalty_cell(row, &wall),
            count(row.first_major_faults),
            row.first_block_in
                .map_or("—".into(), |b| blocks.cell(b as f64)),
            row.first_resident_ratio_before.map_or("—".into(), |r| {
                format!("{}{}", cached.cell(r), set_mark(rows, row))
            }),
            row.rejected.to_string(),
            count(row.anomalies),
        ]);
    }
    grid
}

/// The distinct watched file sets of the listed batches, in order of appearance.
fn file_sets(rows: &[BatchRow]) -> Vec<&BatchRow> {
    let mut sets: Vec<&BatchRow> = Vec::new();
    for row in rows.iter().filter(|r| r.file_set.is_some()) {
        if !sets.iter().any(|s| s.file_set == row.file_set) {
            sets.push(row);
        }
    }
    sets
}

/// ` [a]` after a residency figure when the listed batches watched different file sets.
fn set_mark(rows: &[BatchRow], row: &BatchRow) -> String {
    let sets = file_sets(rows);
    match sets.iter().position(|s| s.file_set == row.file_set) {
        Some(i) if sets.len() > 1 => format!(" [{}]", set_letter(i)),
        _ => String::new(),
    }
}

fn set_letter(i: usize) -> char {
    char::from(b'a' + (i % 26) as u8)
}

/// One line per watched file set when the batches watched different ones: "cached before" is
/// then not one column of comparable figures, and this says so.
fn file_set_lines(rows: &[BatchRow]) -> Vec<String> {
    let sets = file_sets(rows);
    if sets.len() < 2 {
        return Vec::new();
    }
    let mut lines = vec![format!(
        "cached before covers {} different file sets: not comparable across them",
        sets.len()
    )];
    for (i, s) in sets.iter().enumerate() {
        let files = match s.file_set_files {
            Some(1) => "1 file".to_string(),
            Some(n) => format!("{n} files"),
            None => "? files".into(),
        };
        lines.push(format!(
            "[{}] {} ({files}, fingerprint {})",
            set_letter(i),
            s.file_set_roots.join(", "),
            s.file_set.as_deref().unwrap_or("?")
        ));
    }
    lines
}

/// The penalty column: the verdict's penalty where it found one (or a `--cold-cycles`
/// batch's measured penalty), `n.d.` where the first run is not distinguishable from the warm
/// runs, `—` where there is no first-run verdict.
fn penalty_cell(row: &BatchRow, wall: &Scale) -> String {
    use crate::record::verdict::Kind;
    match (row.first_penalty_ns, row.verdict.as_ref().map(|v| v.kind)) {
        (Some(v), _) => signed(wall.cell(v), v),
        (None, Some(Kind::NotDistinguishable | Kind::TooFewWarmRuns)) => "n.d.".into(),
        _ => "—".into(),
    }
}

/// `+0.036` for a positive difference (a negative one has its sign already).
fn signed(cell: String, value: f64) -> String {
    if value > 0.0 {
        format!("+{cell}")
    } else {
        cell
    }
}

/// The line above a group of batches on one boot and one kernel: what coldtrace knows about
/// the boot — a batch recorded as the first since boot, or else only the earliest listed — and
/// that batch's first-run penalty.
pub fn group_line(group: &[BatchRow]) -> String {
    let Some(head) = group.first() else {
        return String::new();
    };
    let boot = head.boot_id.as_deref().map_or("?".into(), |b| {
        one_line(&b.chars().take(8).collect::<String>())
    });
    let kernel = head.kernel.as_deref().map_or("?".into(), one_line);
    let changed = if head.kernel_changed {
        " (kernel changed)"
    } else {
        ""
    };
    let up = |r: &BatchRow| r.uptime_s.map_or("?".into(), human_uptime);
    let penalty = |r: &BatchRow| {
        r.verdict
            .as_ref()
            .and_then(crate::view::verdict::one_line)
            .or_else(|| {
                let p = r.first_penalty_ns?;
                Some(format!("cold penalty {}", signed_ns(p as i64)))
            })
            .map_or(String::new(), |line| format!(", {line}"))
    };
    let known = group
        .iter()
        .find(|r| r.first_batch_since_boot == Some(true));
    let what = match known {
        Some(r) => format!(
            "first batch since boot: {} (up {}){}",
            name(r),
            up(r),
            penalty(r)
        ),
        None if head.earliest_listed_on_boot => format!(
            "earliest listed on boot {boot}: {}, up {}{} ({})",
            name(head),
            up(head),
            penalty(head),
            match head.first_batch_since_boot {
                Some(false) => "not the first coldtrace batch since boot",
                _ => "whether it was the first since boot is not recorded",
            }
        ),
        None => format!("earliest listed here: {}, up {}", name(head), up(head)),
    };
    let host = head
        .host
        .as_deref()
        .map_or(String::new(), |h| format!("host {} · ", one_line(h)));
    format!("{host}boot {boot} · kernel {kernel}{changed} — {what}")
}

/// What the table has no column for: each batch's flags and rejected first run.
fn under_table(rows: &[BatchRow]) -> Vec<String> {
    let mut lines = file_set_lines(rows);
    for (row, name) in rows.iter().zip(names(rows)) {
        if !row.complete {
            lines.push(format!("{name}: incomplete"));
        }
        if let Some(why) = &row.first_rejected {
            lines.push(format!(
                "{name}: ✗ the first run was rejected ({})",
                one_line(why)
            ));
        }
    }
    lines
}

/// The rows of each group, in order (the reader has grouped them).
fn groups(rows: &[BatchRow]) -> Vec<&[BatchRow]> {
    rows.chunk_by(|a, b| a.group == b.group).collect()
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
    let lines = grid(rows, false).lines(width);
    let header = lines.len() - rows.len();
    for line in &lines[..header] {
        let _ = writeln!(out, "{line}");
    }
    let mut at = header;
    for group in groups(rows) {
        for folded in fold(&group_line(group), width, "", "    ") {
            let _ = writeln!(out, "{}", shorten(&folded, width));
        }
        for line in &lines[at..at + group.len()] {
            let _ = writeln!(out, "{line}");
        }
        at += group.len();
    }
    for line in under_table(rows) {
        for folded in fold(&line, width, "  ", "    ") {
            let _ = writeln!(out, "{}", shorten(&folded, width));
        }
    }
    out
}

/// The Markdown table, with the flags, the kernel and the notes as a list under it.
pub fn render_markdown(rows: &[BatchRow], skipped: &[String]) -> String {
    let mut out = grid(rows, true).markdown();
    let items: Vec<String> = groups(rows)
        .into_iter()
        .map(group_line)
        .chain(under_table(rows))
        .chain(notes(rows).into_iter().map(|n| format!("note: {n}")))
        .chain(
            skipped_lines(skipped)
                .into_iter()
                .map(|s| format!("skipped {s}")),
        )
        .collect();
    if !items.is_empty() {
        out.push('\n');
    }
    for item in items {
        let _ = writeln!(out, "- {}", crate::text::markdown_text(&item));
    }
    out
}

/// The most directories named one by one as not read; the rest are counted.
pub const SKIPPED_SHOWN: usize = 20;

/// What `report` could not read, one line each (escaped), the first [`SKIPPED_SHOWN`] named.
pub fn skipped_lines(skipped: &[String]) -> Vec<String> {
    let mut lines: Vec<String> = skipped
        .iter()
        .take(SKIPPED_SHOWN)
        .map(|s| one_line(s))
        .collect();
    if skipped.len() > SKIPPED_SHOWN {
        lines.push(format!(
            "{} more directories (report --json lists every one)",
            skipped.len() - SKIPPED_SHOWN
        ));
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_group_names_its_first_batchs_verdict_in_one_line() {
        let verdict = |kind: &str, states: &[&str]| {
            let states: Vec<String> = states.iter().map(|s| s.to_string()).collect();
            crate::record::verdict::Verdict::brief(
                kind,
                5,
                Some(424e6),
                &states,
                (Some(86.0 * 1048576.0), Some(500e6)),
            )
        };
        let row = BatchRow {
            dir: "b".into(),
            boot_id: Some("203aa1c8-89fc".into()),
            kernel: Some("6.18".into()),
            uptime_s: Some(95.0),
            first_batch_since_boot: Some(true),
            first_penalty_ns: Some(424e6),
            verdict: verdict("penalty", &["storage"]),
            ..BatchRow::default()
        };
        let line = group_line(std::slice::from_ref(&row)).replace('\u{a0}', " ");
        assert!(
            line.ends_with(
                "first batch since boot: b (up 1m35s), first-run penalty +424 ms: storage \
                 (86 MiB read)"
            ),
            "{line}"
        );
        // A first run that does not stand out is said so, with no figure of a penalty.
        let noise = BatchRow {
            first_penalty_ns: None,
            verdict: verdict("not_distinguishable", &[]),
            ..row.clone()
        };
        let line = group_line(std::slice::from_ref(&noise));
        assert!(
            line.ends_with("first run not distinguishable from the warm runs at n = 5"),
            "{line}"
        );
        let wall = Scale::for_values(Unit::Ns, [424e6]);
        assert_eq!(penalty_cell(&noise, &wall), "n.d.");
        assert_eq!(penalty_cell(&row, &wall), "+424");
    }

    #[test]
    fn the_batch_column_tells_every_row_apart_at_80_columns() {
        let row = |dir: &str, label: Option<&str>| BatchRow {
            dir: dir.into(),
            label: label.map(str::to_string),
            first_wall_ns: Some(123.9e6),
            warm_median_wall_ns: Some(126.3e6),
            first_major_faults: Some(0),
            first_block_in: Some(382_256),
            complete: true,
            ..BatchRow::default()
        };
        let rows = [
            row("cmp2/commands/00", Some("gzip -1 -c data-file.bin")),
            row("cmp2/commands/01", Some("gzip -9 -c data-file.bin")),
            row("cmp3/commands/00", Some("gzip -1 -c data-file.bin")),
            row("cmp3/commands/01", Some("gzip -9 -c data-file.bin")),
            row("a", Some("gzip -c data-file-1.bin")),
            row("b", Some("gzip -c data-file-2.bin")),
        ];
        let text = render_table(&rows, 80);
        let lines: Vec<&str> = text.lines().filter(|l| l.contains("123.9")).collect();
        assert_eq!(lines.len(), 6, "{text}");
        for (i, line) in lines.iter().enumerate() {
            assert!(crate::view::units::display_width(line) <= 80, "{line}");
            let name = line.split("  ").next().unwrap_or_default().trim();
            let others = lines.iter().enumerate().filter(|(j, _)| *j != i);
            assert!(
                others.clone().all(|(_, l)| !l.starts_with(name)),
                "{name:?} names two rows:\n{text}"
            );
            // The last column is whole: nothing was cut to make room.
            assert!(line.ends_with(" —"), "{line}");
        }
        assert!(lines[0].starts_with("cmp2[0] gzip -1"), "{text}");
        // 382,256 blocks of 512 bytes are shown as what run shows storage in, MiB.
        assert!(text.contains("in MiB") && text.contains("186.6"), "{text}");
    }
}
