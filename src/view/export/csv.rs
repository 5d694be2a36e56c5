//! The CSV exports. `--export-csv FILE`: hyperfine 2.0's summary, as hyperfine 2.0.0 writes it
//! (`tests/golden/hyperfine-2.0.0/*.csv`): one row per command, its wall time and peak memory
//! (hyperfine's default metrics) as `<metric>_unit`, `_mean`, `_stddev`, `_median`, `_min`,
//! `_max` in base units (`s`, `B`) over its counted runs, then `parameter_<name>` per scanned
//! parameter. `--export-csv-runs FILE`: one row per recorded run (warm-ups and rejected runs
//! included, marked by role and counted), one column per number of the record: the metrics
//! first (the table's order, then the perf events), then every other numeric leaf in record
//! order ([`RECORD_NUMBERS`], each perf reading's [`COUNTER_NUMBERS`]), each headed by where it
//! is in the record (`rusage.user_us`; the unit is in the name or the record table of docs/schema.md),
//! a column no run has a value in left out. Numbers are written as the record has them; an
//! absent or null value is an empty cell. RFC 4180 quoting. It copies what the records hold
//! (the summary through [`Measured`]); it opens no file (the caller replaces it).
#![forbid(unsafe_code)]

use crate::record::metrics::{number_at, record_path, Metric, COUNTER_NUMBERS, RECORD_NUMBERS};
use crate::view::export::hyperfine::{first_run, summary as summarise, Measured, MEMORY, WALL};
use crate::view::export::part::Part;
use serde_json::Value;
use std::io::{self, Write};

/// The columns before the metrics.
const RUN_COLUMNS: [&str; 6] = [
    "command",
    "index",
    "role",
    "counted",
    "failure_reason",
    "started_at",
];

/// A field as RFC 4180 writes it, never a formula (see [`crate::text::csv_field`]).
fn field(text: &str) -> String {
    crate::text::csv_field(text)
}

/// A number's column: where it is in the record.
struct Column {
    path: Vec<String>,
}

impl Column {
    /// `rusage.user_us`.
    fn header(&self) -> String {
        self.path.join(".")
    }

    fn cell(&self, record: &Value) -> String {
        let path: Vec<&str> = self.path.iter().map(String::as_str).collect();
        number_at(record, &path).map_or(String::new(), Value::to_string)
    }
}

/// The columns of a batch with `metrics`: the metrics, then every other number of a record.
fn columns(metrics: &[Metric]) -> Vec<Column> {
    // A metric that is in no single place of the record (CPU, user + sys) has its parts.
    let mut columns: Vec<Column> = metrics
        .iter()
        .filter_map(|m| {
            Some(Column {
                path: record_path(m)?.into_iter().map(String::from).collect(),
            })
        })
        .collect();
    for (path, _) in RECORD_NUMBERS {
        let path: Vec<String> = path.split('.').map(String::from).collect();
        if !columns.iter().any(|c| c.path == path) {
            columns.push(Column { path });
        }
    }
    for event in metrics
        .iter()
        .filter(|m| matches!(m.source, crate::record::metrics::Source::Counter))
    {
        for (field, _) in COUNTER_NUMBERS {
            columns.push(Column {
                path: vec!["counters".into(), event.name.into(), field.to_string()],
            });
        }
    }
    columns
}

fn text_of(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// A run's cells: the run's own columns, then one per number.
fn cells(command: &str, record: &Value, columns: &[Column]) -> Vec<String> {
    let mut cells = vec![command.to_string()];
    cells.extend(RUN_COLUMNS[1..].iter().map(|k| text_of(&record[*k])));
    cells.extend(columns.iter().map(|c| c.cell(record)));
    cells
}

/// A line of fields, quoted where needed.
fn line(fields: &[String]) -> String {
    fields
        .iter()
        .map(|f| field(f))
        .collect::<Vec<_>>()
        .join(",")
}

/// `--export-csv-runs`: the header, then one row per run of every command, in the order they
/// were recorded; a column no run has a value in is left out (a first pass finds them).
pub fn runs(w: &mut dyn Write, parts: &[Part<'_>]) -> io::Result<()> {
    let metrics = parts.first().map_or(&[][..], |p| &p.outcome.metrics[..]);
    let columns = columns(metrics);
    let mut head: Vec<String> = RUN_COLUMNS.iter().map(|c| c.to_string()).collect();
    head.extend(columns.iter().map(Column::header));
    let mut used = vec![false; head.len()];
    used[0] = true;
    for part in parts {
        part.each_record(|record| {
            for (u, cell) in used.iter_mut().zip(cells(part.shown(), record, &columns)) {
                *u |= !cell.is_empty();
            }
            Ok(())
        })?;
    }
    let kept = |all: Vec<String>| -> Vec<String> {
        all.into_iter()
            .zip(&used)
            .filter(|(_, u)| **u)
            .map(|(c, _)| c)
            .collect()
    };
    writeln!(w, "{}", line(&kept(head)))?;
    for part in parts {
        part.each_record(|record| {
            writeln!(w, "{}", line(&kept(cells(part.shown(), record, &columns))))
        })?;
    }
    Ok(())
}

/// A float as hyperfine's CSV writes it (Rust's shortest round-trip form).
fn number(value: Option<f64>) -> String {
    value.map_or(String::new(), |v| v.to_string())
}

/// `--export-csv`: hyperfine 2.0's summary, one row per command, over the runs the screen's
/// statistics cover; the first run's figures (`first_run_time_wall_clock`, …) at the end where
/// a command keeps it apart.
pub fn summary(w: &mut dyn Write, parts: &[Part<'_>]) -> io::Result<()> {
    let runs = parts
        .iter()
        .map(Measured::all)
        .collect::<io::Result<Vec<Vec<Measured>>>>()?;
    // A metric no command has is left out, as hyperfine leaves it out.
    let metrics: Vec<_> = [(WALL, "s"), (MEMORY, "B")]
        .into_iter()
        .filter(|(m, _)| runs.iter().any(|r| summarise(m, r).is_some()))
        .collect();
    let mut head = vec!["command".to_string()];
    for (metric, _) in &metrics {
        let fields = ["unit", "mean", "stddev", "median", "min", "max"];
        head.extend(fields.map(|f| format!("{}_{f}", metric.0)));
    }
    let parameters = parts.first().map(|p| {
        let mut names: Vec<&str> = p.parameters.iter().map(|(n, _)| *n).collect();
        names.sort_unstable();
        names
    });
    let parameters = parameters.unwrap_or_default();
    head.extend(parameters.iter().map(|n| format!("parameter_{n}")));
    // The first run, where a command keeps it apart: in columns of its own, after hyperfine's.
    let firsts: Vec<_> = metrics
        .iter()
        .filter(|(m, _)| runs.iter().any(|r| first_run(m, r).is_some()))
        .collect();
    head.extend(firsts.iter().map(|(m, _)| format!("first_run_{}", m.0)));
    writeln!(w, "{}", line(&head))?;
    for (part, runs) in parts.iter().zip(&runs) {
        let mut row = vec![part.shown().to_string()];
        for (metric, unit) in &metrics {
            let s = summarise(metric, runs);
            row.push(unit.to_string());
            row.push(number(s.map(|s| s.mean)));
            row.push(number(s.and_then(|s| s.stddev)));
            row.extend([s.map(|s| s.median), s.map(|s| s.min), s.map(|s| s.max)].map(number));
        }
        for name in &parameters {
            let value = part.parameters.iter().find(|(n, _)| n == name);
            row.push(value.map_or(String::new(), |(_, v)| v.to_string()));
        }
        row.extend(firsts.iter().map(|(m, _)| number(first_run(m, runs))));
        writeln!(w, "{}", line(&row))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_quoted_only_when_needed() {
        assert_eq!(field("plain"), "plain");
        assert_eq!(field("sh -c 'a, b'"), "\"sh -c 'a, b'\"");
        assert_eq!(field("say \"hi\"\nbye"), "\"say \"\"hi\"\"\nbye\"");
    }

    #[test]
    fn every_number_has_one_column_the_metrics_first() {
        use crate::record::metrics::{metrics_for, METRICS};
        let events = crate::measure::perf::default_events();
        let heads: Vec<String> = columns(&metrics_for(&events))
            .iter()
            .map(Column::header)
            .collect();
        assert_eq!(heads[0], "wall_ns");
        assert_eq!(heads[1], "rusage.user_us");
        for (i, h) in heads.iter().enumerate() {
            assert_eq!(heads.iter().position(|o| o == h), Some(i), "{h} twice");
        }
        for want in [
            "sched.on_cpu_ns",
            "child_io.write_bytes",
            "system_delta.window_ns",
            "cache.before.resident_bytes",
            "artifacts.stdout_bytes",
            "runner.vm_hwm_kib",
            "counters.task-clock.time_running_ns",
        ] {
            assert!(heads.iter().any(|h| h == want), "{want} in {heads:?}");
        }
        let in_record = METRICS.iter().filter(|m| record_path(m).is_some()).count();
        assert_eq!(
            heads.len(),
            in_record + RECORD_NUMBERS.len() + events.len() * (1 + COUNTER_NUMBERS.len()),
        );
    }
}
