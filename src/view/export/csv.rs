//! `--export-csv FILE`: one row per recorded run (warm-ups and rejected runs included, marked),
//! one column per metric. A metric's header is where it is in the record and its unit
//! (`rusage.user_us [us]`), so a column can be checked against `runs.jsonl`; numbers are written
//! as the record has them; an absent value is an empty cell. RFC 4180 quoting.
#![forbid(unsafe_code)]

use crate::record::metrics::{json_at, record_path, Metric};
use crate::view::export::Part;
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

/// A field as RFC 4180 writes it: quoted (quotes doubled) when it holds a comma, a quote or a
/// line break.
fn field(text: &str) -> String {
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_string()
    }
}

/// `rusage.user_us [us]`.
pub fn header(metric: &Metric) -> String {
    format!("{} [{}]", record_path(metric).join("."), metric.unit.name())
}

fn text_of(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn row(command: &str, record: &Value, metrics: &[Metric]) -> String {
    let mut cells = vec![command.to_string()];
    cells.extend(RUN_COLUMNS[1..].iter().map(|k| text_of(&record[*k])));
    cells.extend(
        metrics
            .iter()
            .map(|m| json_at(record, m).map_or(String::new(), Value::to_string)),
    );
    cells.iter().map(|c| field(c)).collect::<Vec<_>>().join(",")
}

/// The header, then one row per run of every command, in the order they were recorded.
pub fn runs(w: &mut dyn Write, parts: &[Part<'_>]) -> io::Result<()> {
    let metrics = parts.first().map_or(&[][..], |p| &p.outcome.metrics[..]);
    let mut head: Vec<String> = RUN_COLUMNS.iter().map(|c| c.to_string()).collect();
    head.extend(metrics.iter().map(header));
    writeln!(
        w,
        "{}",
        head.iter().map(|h| field(h)).collect::<Vec<_>>().join(",")
    )?;
    for part in parts {
        part.each_record(|record| writeln!(w, "{}", row(part.command, record, metrics)))?;
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
}
