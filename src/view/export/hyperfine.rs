//! `--export-json FILE` (or `--export-hyperfine-json`): hyperfine 2.0's export document, field for field as
//! hyperfine 2.0.0 writes it (its own files are in `tests/golden/hyperfine-2.0.0/`, with the
//! commands that made them): `schema_version` 2, `metadata`, `primary_metric`, and `results`,
//! one per command — `command`, `name` (when it differs), `measurements` (per run: each metric a
//! value with its unit, and `exit_code`), `parameters` (when scanned) and `summary` (per metric:
//! `count`, `mean`, `stddev`, `median`, `min`, `max`, in base units). hyperfine's own scripts
//! (`scripts/*.py` of its crate) read it. It reshapes what was recorded (its statistics through
//! record's [`Summary`]); it measures nothing and opens no file (the caller replaces it).
//!
//! [`Measured`] (the counted runs as hyperfine counts them) and [`METRICS`] also serve the
//! Markdown and summary CSV exports, which 2.0 makes of the same figures.
//!
//! `measurements` holds every counted run, the first one included; warm-ups and rejected runs
//! are left out. `summary` covers what coldtrace's screen covers: the runs after the first
//! where the batch keeps its first run apart, every counted run where it has none (warm-ups
//! ran); `summary_covers` says which — the one key of coldtrace's own. `memory_peak_resident` is each run's own wait4 max RSS; a perf
//! counter (`--counters`) is in a run only where it was counted, and in `summary` only when
//! every run has it, as hyperfine requires. `metadata.hyperfine_version` is `null`: hyperfine
//! did not run.
#![forbid(unsafe_code)]

use crate::record::stats::Summary;
use crate::view::export::part::Part;
use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::Value;
use std::io::{self, Write};

/// hyperfine 2.0's `schema_version`.
const SCHEMA_VERSION: u32 = 2;

/// hyperfine's perf counters and coldtrace's event of the same count.
const COUNTERS: [(&str, &str); 5] = [
    ("cpu_cycles", "cycles"),
    ("instructions", "instructions"),
    ("cache_references", "cache-references"),
    ("cache_misses", "cache-misses"),
    ("branch_misses", "branch-misses"),
];

/// One counted run, as hyperfine 2.0 measures one: seconds, bytes and counts.
#[derive(Clone, Debug, Default)]
pub struct Measured {
    wall_s: f64,
    user_s: f64,
    system_s: f64,
    memory_bytes: Option<f64>,
    /// `COUNTERS`' values, in its order (`None`: not counted).
    counters: [Option<f64>; 5],
    exit_code: Option<i64>,
    /// The batch's first run, kept apart: in `measurements`, not in `summary`.
    first: bool,
    /// In `summary`: a run the screen's figures cover (see
    /// [`crate::record::verdict::Verdict::uncovered`]).
    covered: bool,
}

/// hyperfine 2.0's metrics (`Metric::ALL`, in its order): name, base unit as the JSON names it
/// (`None` for a count), and the value of a run.
pub type MetricOf = (
    &'static str,
    Option<&'static str>,
    fn(&Measured) -> Option<f64>,
);

/// Every metric hyperfine 2.0 knows, in its order.
pub const METRICS: [MetricOf; 10] = [
    ("time_wall_clock", Some("second"), |m| Some(m.wall_s)),
    ("time_cpu", Some("second"), |m| Some(m.user_s + m.system_s)),
    ("time_user", Some("second"), |m| Some(m.user_s)),
    ("time_system", Some("second"), |m| Some(m.system_s)),
    ("memory_peak_resident", Some("byte"), |m| m.memory_bytes),
    ("cpu_cycles", None, |m| m.counters[0]),
    ("instructions", None, |m| m.counters[1]),
    ("cache_references", None, |m| m.counters[2]),
    ("cache_misses", None, |m| m.counters[3]),
    ("branch_misses", None, |m| m.counters[4]),
];

/// The wall time, hyperfine's primary metric.
pub const WALL: MetricOf = METRICS[0];
/// The peak memory, with the wall time hyperfine's default metrics.
pub const MEMORY: MetricOf = METRICS[4];

impl Measured {
    /// A counted run's record, as hyperfine would have measured it (`None`: not counted, or
    /// no wall time).
    fn of(record: &Value, first_index: Option<u64>, uncovered: &[u64]) -> Option<Measured> {
        if record["counted"] != true {
            return None;
        }
        let wall_ns = record["wall_ns"].as_f64()?;
        let rusage = &record["rusage"];
        let seconds = |field: &str| rusage[field].as_f64().map_or(0.0, |us| us / 1e6);
        let counter = |event: &str| {
            record["counters"]
                .as_array()?
                .iter()
                .find(|c| c["event"] == event)?["value"]
                .as_f64()
        };
        Some(Measured {
            wall_s: wall_ns / 1e9,
            user_s: seconds("user_us"),
            system_s: seconds("sys_us"),
            memory_bytes: rusage["max_rss_kib"].as_f64().map(|kib| kib * 1024.0),
            counters: COUNTERS.map(|(_, event)| counter(event)),
            exit_code: match record["outcome"]["kind"].as_str() {
                Some("exited") => record["outcome"]["code"].as_i64(),
                _ => None,
            },
            first: first_index.is_some() && record["index"].as_u64() == first_index,
            covered: record["index"]
                .as_u64()
                .is_some_and(|i| !uncovered.contains(&i)),
        })
    }

    /// The counted runs of `part`, in order; its first run marked when the batch keeps it
    /// apart (the verdict has a first run: no warm-up came before it), and the runs the
    /// screen's figures cover.
    pub fn all(part: &Part<'_>) -> io::Result<Vec<Measured>> {
        let verdict = &part.outcome.verdict;
        let uncovered = verdict.uncovered();
        let mut runs = Vec::new();
        part.each_record(|record| {
            runs.extend(Measured::of(record, verdict.first_index, &uncovered));
            Ok(())
        })?;
        Ok(runs)
    }
}

/// `metric` over the runs the screen's statistics cover, as hyperfine summarises it (only when
/// every one has it): the runs after the first where the batch keeps its first run apart, as
/// the table's columns do, every counted run where it has no first run — less the runs that
/// started cold while others did not.
pub fn summary(metric: &MetricOf, runs: &[Measured]) -> Option<Summary> {
    let values: Option<Vec<f64>> = runs.iter().filter(|m| m.covered).map(metric.2).collect();
    Summary::of(&values?)
}

/// `metric` of the first run, where the batch keeps it apart.
pub fn first_run(metric: &MetricOf, runs: &[Measured]) -> Option<f64> {
    runs.iter().find(|m| m.first).and_then(metric.2)
}

/// What `summary` covers, said in the document (hyperfine's scripts compute their own figures
/// from `measurements`, which hold every counted run).
fn covers(runs: &[Measured]) -> String {
    let mut text = if runs.iter().any(|m| m.first) {
        "the runs after the first (measurements[1..]): the first run, measurements[0], is kept \
         apart, as on coldtrace's screen"
            .to_string()
    } else {
        "every counted run".to_string()
    };
    let left: Vec<String> = (runs.iter().enumerate())
        .filter(|(_, m)| !m.first && !m.covered)
        .map(|(i, _)| format!("measurements[{i}]"))
        .collect();
    if !left.is_empty() {
        text.push_str(&format!(
            ", less the runs that started cold while the others did not ({})",
            left.join(", ")
        ));
    }
    text
}

/// `{"value": V, "unit": U}` (a count has no unit).
struct Quantity(f64, Option<&'static str>);

impl Serialize for Quantity {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(None)?;
        map.serialize_entry("value", &self.0)?;
        if let Some(unit) = self.1 {
            map.serialize_entry("unit", unit)?;
        }
        map.end()
    }
}

impl Serialize for Measured {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(None)?;
        for (name, unit, value) in &METRICS {
            if let Some(v) = value(self) {
                // A count is an integer in hyperfine's file.
                match unit {
                    Some(_) => map.serialize_entry(name, &Quantity(v, *unit))?,
                    None => map.serialize_entry(name, &serde_json::json!({ "value": v as u64 }))?,
                }
            }
        }
        map.serialize_entry("exit_code", &self.exit_code)?;
        map.end()
    }
}

/// One metric's `summary` entry.
struct Stat(Summary, Option<&'static str>);

impl Serialize for Stat {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let Stat(stat, unit) = self;
        let mut map = s.serialize_map(None)?;
        if let Some(unit) = unit {
            map.serialize_entry("unit", unit)?;
        }
        map.serialize_entry("count", &stat.n)?;
        map.serialize_entry("mean", &stat.mean)?;
        map.serialize_entry("stddev", &stat.stddev)?;
        map.serialize_entry("median", &stat.median)?;
        map.serialize_entry("min", &stat.min)?;
        map.serialize_entry("max", &stat.max)?;
        map.end()
    }
}

/// One command's entry of `results`.
struct Entry<'a> {
    part: &'a Part<'a>,
    runs: Vec<Measured>,
}

impl Serialize for Entry<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let part = self.part;
        let mut map = s.serialize_map(None)?;
        map.serialize_entry("command", part.command)?;
        if let Some(name) = part.name.filter(|n| *n != part.command) {
            map.serialize_entry("name", name)?;
        }
        map.serialize_entry("measurements", &self.runs)?;
        if !part.parameters.is_empty() {
            let mut sorted = part.parameters.clone();
            sorted.sort();
            let parameters: serde_json::Map<String, Value> = sorted
                .iter()
                .map(|(k, v)| (k.to_string(), serde_json::json!({ "value": v })))
                .collect();
            map.serialize_entry("parameters", &parameters)?;
        }
        // By name, as hyperfine's BTreeMap has them.
        let mut summary: Vec<(&str, Stat)> = METRICS
            .iter()
            .filter_map(|m| Some((m.0, Stat(self::summary(m, &self.runs)?, m.1))))
            .collect();
        summary.sort_by_key(|(name, _)| *name);
        map.serialize_entry("summary", &ByName(summary))?;
        map.serialize_entry("summary_covers", &covers(&self.runs))?;
        map.end()
    }
}

/// The `summary` object, in the order given.
struct ByName<'a>(Vec<(&'a str, Stat)>);

impl Serialize for ByName<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(self.0.len()))?;
        for (name, stat) in &self.0 {
            map.serialize_entry(name, stat)?;
        }
        map.end()
    }
}

/// `metadata`: hyperfine did not run (its version is `null`); when the first command started
/// (to the second, as hyperfine writes it) and the platform.
struct Metadata {
    start_time: Option<String>,
}

impl Metadata {
    fn of(parts: &[Part<'_>]) -> Metadata {
        let start_time = parts.first().and_then(|p| p.started_at()).map(|t| {
            let seconds = t.split('.').next().unwrap_or(&t).trim_end_matches('Z');
            format!("{seconds}Z")
        });
        Metadata { start_time }
    }
}

impl Serialize for Metadata {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(None)?;
        map.serialize_entry("hyperfine_version", &None::<&str>)?;
        if let Some(time) = &self.start_time {
            map.serialize_entry("start_time", time)?;
        }
        map.serialize_entry("platform", &Platform)?;
        map.end()
    }
}

/// `{"os": "Linux", "architecture": ARCH}` (uname's sysname and machine, on the two targets).
struct Platform;

impl Serialize for Platform {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(2))?;
        map.serialize_entry("os", "Linux")?;
        map.serialize_entry("architecture", std::env::consts::ARCH)?;
        map.end()
    }
}

/// The document, one entry of `results` per command.
pub fn results(w: &mut dyn Write, parts: &[Part<'_>]) -> io::Result<()> {
    let entries = parts
        .iter()
        .map(|part| {
            Ok(Entry {
                part,
                runs: Measured::all(part)?,
            })
        })
        .collect::<io::Result<Vec<Entry<'_>>>>()?;
    let doc = Document {
        metadata: Metadata::of(parts),
        results: entries,
    };
    serde_json::to_writer_pretty(&mut *w, &doc).map_err(io::Error::other)?;
    writeln!(w)
}

/// The whole document, in hyperfine's order.
struct Document<'a> {
    metadata: Metadata,
    results: Vec<Entry<'a>>,
}

impl Serialize for Document<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(4))?;
        map.serialize_entry("schema_version", &SCHEMA_VERSION)?;
        map.serialize_entry("metadata", &self.metadata)?;
        map.serialize_entry("primary_metric", WALL.0)?;
        map.serialize_entry("results", &self.results)?;
        map.end()
    }
}
