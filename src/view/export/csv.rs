//! `--export-csv FILE`: one row per recorded run (warm-ups and rejected runs included, marked),
//! one column per number of the record: the metrics first (the table's order, then the perf
//! events), then every other numeric leaf in record order ([`RECORD_NUMBERS`], each perf
//! reading's [`COUNTER_NUMBERS`]). A column's header is where it is in the record and its unit
//! (`rusage.user_us [us]`), so a column can be checked against `runs.jsonl`; numbers are written
//! as the record has them; an absent or null value is an empty cell. RFC 4180 quoting. It copies
//! what the records hold: it computes no figure, and opens no file (the caller replaces it).
#![forbid(unsafe_code)]

use crate::record::metrics::{number_at, record_path, Metric, COUNTER_NUMBERS, RECORD_NUMBERS};
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

/// A number's column: where it is in the record and its unit.
struct Column {
    path: Vec<String>,
    unit: String,
}

impl Column {
    /// `rusage.user_us [us]`.
    fn header(&self) -> String {
        format!("{} [{}]", self.path.join("."), self.unit)
    }

    fn cell(&self, record: &Value) -> String {
        let path: Vec<&str> = self.path.iter().map(String::as_str).collect();
        number_at(record, &path).map_or(String::new(), Value::to_string)
    }
}

/// The columns of a batch with `metrics`: the metrics, then every other number of a record.
fn columns(metrics: &[Metric]) -> Vec<Column> {
    let mut columns: Vec<Column> = metrics
        .iter()
        .map(|m| Column {
            path: record_path(m).into_iter().map(String::from).collect(),
            unit: m.unit.name().to_string(),
        })
        .collect();
    for (path, unit) in RECORD_NUMBERS {
        let path: Vec<String> = path.split('.').map(String::from).collect();
        if !columns.iter().any(|c| c.path == path) {
            columns.push(Column {
                path,
                unit: unit.to_string(),
            });
        }
    }
    for event in metrics
        .iter()
        .filter(|m| matches!(m.source, crate::record::metrics::Source::Counter))
    {
        for (field, unit) in COUNTER_NUMBERS {
            columns.push(Column {
                path: vec!["counters".into(), event.name.into(), field.to_string()],
                unit: unit.unwrap_or(event.unit.name()).to_string(),
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

fn row(command: &str, record: &Value, columns: &[Column]) -> String {
    let mut cells = vec![command.to_string()];
    cells.extend(RUN_COLUMNS[1..].iter().map(|k| text_of(&record[*k])));
    cells.extend(columns.iter().map(|c| c.cell(record)));
    cells.iter().map(|c| field(c)).collect::<Vec<_>>().join(",")
}

/// The header, then one row per run of every command, in the order they were recorded.
pub fn runs(w: &mut dyn Write, parts: &[Part<'_>]) -> io::Result<()> {
    let metrics = parts.first().map_or(&[][..], |p| &p.outcome.metrics[..]);
    let columns = columns(metrics);
    let mut head: Vec<String> = RUN_COLUMNS.iter().map(|c| c.to_string()).collect();
    head.extend(columns.iter().map(Column::header));
    writeln!(
        w,
        "{}",
        head.iter().map(|h| field(h)).collect::<Vec<_>>().join(",")
    )?;
    for part in parts {
        part.each_record(|record| writeln!(w, "{}", row(part.command, record, &columns)))?;
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
        assert_eq!(heads[0], "wall_ns [ns]");
        assert_eq!(heads[1], "rusage.user_us [us]");
        for (i, h) in heads.iter().enumerate() {
            assert_eq!(heads.iter().position(|o| o == h), Some(i), "{h} twice");
        }
        for want in [
            "sched.on_cpu_ns [ns]",
            "child_io.write_bytes [bytes]",
            "system_delta.window_ns [ns]",
            "cache.before.resident_bytes [bytes]",
            "artifacts.stdout_bytes [bytes]",
            "runner.vm_hwm_kib [KiB]",
            "counters.task-clock.time_running_ns [ns]",
        ] {
            assert!(heads.iter().any(|h| h == want), "{want} in {heads:?}");
        }
        assert_eq!(
            heads.len(),
            METRICS.len() + RECORD_NUMBERS.len() + events.len() * (1 + COUNTER_NUMBERS.len()),
        );
    }
}
