//! Which numbers of a run are summarised, in which unit, and the per-batch columns that hold
//! them (8 bytes per metric per counted run; records themselves are streamed, never held).
#![forbid(unsafe_code)]

use crate::record::RunRecord;
use crate::serialize_struct;
use crate::stats::{ratio, Summary};
use serde::ser::{SerializeMap, Serializer};
use serde::Serialize;

/// The unit of a metric, for rendering.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    /// Nanoseconds.
    Ns,
    /// Microseconds.
    Us,
    /// KiB.
    Kib,
    /// Bytes.
    Bytes,
    /// A plain count.
    Count,
    /// A fraction 0..=1.
    Ratio,
}

impl Unit {
    /// The unit's short name as stored in `batch.json`.
    pub fn name(self) -> &'static str {
        match self {
            Unit::Ns => "ns",
            Unit::Us => "us",
            Unit::Kib => "KiB",
            Unit::Bytes => "bytes",
            Unit::Count => "count",
            Unit::Ratio => "ratio",
        }
    }
}

/// One summarised number of a run.
pub struct Metric {
    /// Key in `summary` (the record's field name).
    pub name: &'static str,
    /// Label in the human table.
    pub label: &'static str,
    /// Its unit.
    pub unit: Unit,
    /// Reads it from a record.
    pub get: fn(&RunRecord<'_>) -> Option<f64>,
}

macro_rules! rusage_metric {
    ($name:ident, $label:expr, $unit:expr) => {
        Metric {
            name: stringify!($name),
            label: $label,
            unit: $unit,
            get: |r| r.rusage.map(|u| u.0.$name as f64),
        }
    };
}

macro_rules! counter_metric {
    ($event:literal, $label:expr, $unit:expr) => {
        Metric {
            name: $event,
            label: $label,
            unit: $unit,
            get: |r| {
                r.counters
                    .as_ref()?
                    .iter()
                    .find(|c| c.event == $event)?
                    .value
            },
        }
    };
}

/// Every summarised metric, in table order.
pub const METRICS: &[Metric] = &[
    Metric {
        name: "wall_ns",
        label: "wall",
        unit: Unit::Ns,
        get: |r| r.wall_ns.map(|v| v as f64),
    },
    rusage_metric!(user_us, "user", Unit::Us),
    rusage_metric!(sys_us, "sys", Unit::Us),
    rusage_metric!(max_rss_kib, "max RSS", Unit::Kib),
    rusage_metric!(minor_faults, "minor faults", Unit::Count),
    rusage_metric!(major_faults, "major faults", Unit::Count),
    rusage_metric!(block_in, "block in (512 B)", Unit::Count),
    rusage_metric!(block_out, "block out (512 B)", Unit::Count),
    rusage_metric!(voluntary_switches, "voluntary cs", Unit::Count),
    rusage_metric!(involuntary_switches, "involuntary cs", Unit::Count),
    Metric {
        name: "read_bytes",
        label: "read_bytes (child)",
        unit: Unit::Bytes,
        get: |r| {
            r.child_io
                .as_ref()
                .and_then(|io| io.read_bytes)
                .map(|v| v as f64)
        },
    },
    Metric {
        name: "rchar",
        label: "rchar (child)",
        unit: Unit::Bytes,
        get: |r| {
            r.child_io
                .as_ref()
                .and_then(|io| io.rchar)
                .map(|v| v as f64)
        },
    },
    Metric {
        name: "runqueue_wait_ns",
        label: "run-queue wait",
        unit: Unit::Ns,
        get: |r| {
            r.sched
                .as_ref()
                .and_then(|s| s.runqueue_wait_ns)
                .map(|v| v as f64)
        },
    },
    Metric {
        name: "resident_ratio_before",
        label: "cached before",
        unit: Unit::Ratio,
        get: |r| r.cache.as_ref().and_then(|c| c.before.resident_ratio),
    },
    Metric {
        name: "pgmajfault",
        label: "pgmajfault (sys)",
        unit: Unit::Count,
        get: |r| {
            r.system_delta
                .as_ref()
                .and_then(|d| d.pgmajfault)
                .map(|v| v as f64)
        },
    },
    Metric {
        name: "psi_io_some_us",
        label: "I/O pressure (sys)",
        unit: Unit::Us,
        get: |r| {
            r.system_delta
                .as_ref()
                .and_then(|d| d.psi_io_some_us)
                .map(|v| v as f64)
        },
    },
    counter_metric!("task-clock", "task-clock", Unit::Ns),
    counter_metric!("page-faults", "page-faults", Unit::Count),
    counter_metric!("context-switches", "context-switches", Unit::Count),
    counter_metric!("cpu-migrations", "cpu-migrations", Unit::Count),
    counter_metric!("instructions", "instructions", Unit::Count),
    counter_metric!("cycles", "cycles", Unit::Count),
    counter_metric!("cache-references", "cache-references", Unit::Count),
    counter_metric!("cache-misses", "cache-misses", Unit::Count),
    counter_metric!("branch-misses", "branch-misses", Unit::Count),
];

/// Index of `max_rss_kib` in [`METRICS`] (it has an at-the-floor count).
pub const MAX_RSS: usize = 3;

/// The counted runs' values, one column per metric.
///
/// The warm runs' values are appended, one row of 8-byte floats per run, to an anonymous
/// in-memory file (`memfd_create(2)`) rather than kept in coldtrace's heap: written with
/// `write(2)`, never mapped, those pages are not in coldtrace's resident set, so the floor under
/// a child's max RSS stays flat however long the batch (10,000 runs would otherwise add ~1 MiB).
/// They are read back once, after the last run.
pub struct Columns {
    first: Vec<Option<f64>>,
    first_at_floor: bool,
    warm_at_floor: u64,
    have_first: bool,
    warm: WarmRows,
}

enum WarmRows {
    File {
        file: std::fs::File,
        rows: u64,
        row: Vec<u8>,
    },
    Memory(Vec<Vec<f64>>),
}

impl Default for Columns {
    fn default() -> Self {
        let warm =
            match rustix::fs::memfd_create("coldtrace-metrics", rustix::fs::MemfdFlags::CLOEXEC) {
                Ok(fd) => WarmRows::File {
                    file: std::fs::File::from(fd),
                    rows: 0,
                    row: Vec::with_capacity(METRICS.len() * 8),
                },
                Err(_) => WarmRows::Memory((0..METRICS.len()).map(|_| Vec::new()).collect()),
            };
        Columns {
            first: vec![None; METRICS.len()],
            first_at_floor: false,
            warm_at_floor: 0,
            have_first: false,
            warm,
        }
    }
}

impl Columns {
    /// Adds a counted run; the first one added is "the first run".
    pub fn push(&mut self, record: &RunRecord<'_>) {
        let at_floor = record.max_rss_at_floor == Some(true);
        if !self.have_first {
            self.have_first = true;
            self.first_at_floor = at_floor;
            for (slot, metric) in self.first.iter_mut().zip(METRICS) {
                *slot = (metric.get)(record);
            }
            return;
        }
        self.warm_at_floor += u64::from(at_floor);
        let values = METRICS.iter().map(|metric| (metric.get)(record));
        match &mut self.warm {
            WarmRows::File { file, rows, row } => {
                use std::io::Write;
                row.clear();
                for v in values {
                    row.extend_from_slice(&v.unwrap_or(f64::NAN).to_le_bytes());
                }
                if file.write_all(row).is_ok() {
                    *rows += 1;
                }
            }
            WarmRows::Memory(columns) => {
                for (column, v) in columns.iter_mut().zip(values) {
                    if let Some(v) = v {
                        column.push(v);
                    }
                }
            }
        }
    }

    /// Reads the values back (once, after the last run).
    pub fn load(&self) -> Loaded {
        let warm = match &self.warm {
            WarmRows::Memory(columns) => columns.clone(),
            WarmRows::File { file, rows, .. } => {
                use std::io::{Read, Seek};
                let mut columns: Vec<Vec<f64>> = (0..METRICS.len())
                    .map(|_| Vec::with_capacity(*rows as usize))
                    .collect();
                let mut bytes = Vec::new();
                let mut reader: &std::fs::File = file;
                if reader.rewind().is_ok() && reader.read_to_end(&mut bytes).is_ok() {
                    for row in bytes.chunks_exact(METRICS.len() * 8) {
                        for (column, cell) in columns.iter_mut().zip(row.chunks_exact(8)) {
                            let mut b = [0u8; 8];
                            b.copy_from_slice(cell);
                            let v = f64::from_le_bytes(b);
                            if !v.is_nan() {
                                column.push(v);
                            }
                        }
                    }
                }
                columns
            }
        };
        Loaded {
            first: self.first.clone(),
            first_at_floor: self.first_at_floor,
            warm_at_floor: self.warm_at_floor,
            warm,
        }
    }
}

/// The counted runs' values, read back.
pub struct Loaded {
    first: Vec<Option<f64>>,
    first_at_floor: bool,
    warm_at_floor: u64,
    /// Every metric's warm values, in run order.
    pub warm: Vec<Vec<f64>>,
}

impl Loaded {
    /// The wall times of the counted runs, in order (for the strip in the table).
    pub fn walls_ns(&self) -> Vec<f64> {
        self.first[0]
            .into_iter()
            .chain(self.warm[0].iter().copied())
            .collect()
    }

    /// Summaries of every metric.
    pub fn summarise(&self) -> Vec<MetricSummary> {
        METRICS
            .iter()
            .enumerate()
            .map(|(i, metric)| {
                let first = self.first[i].and_then(|v| Summary::of(&[v]));
                let warm = Summary::of(&self.warm[i]);
                let all_values: Vec<f64> = self.first[i]
                    .into_iter()
                    .chain(self.warm[i].iter().copied())
                    .collect();
                let all = Summary::of(&all_values);
                let at_floor = (i == MAX_RSS).then(|| AtFloor {
                    first: u64::from(self.first_at_floor),
                    warm: self.warm_at_floor,
                    all: u64::from(self.first_at_floor) + self.warm_at_floor,
                });
                MetricSummary {
                    name: metric.name,
                    unit: metric.unit.name(),
                    first_to_warm_median: ratio(first.map(|s| s.median), warm.map(|s| s.median)),
                    first,
                    warm,
                    all,
                    runs_at_floor: at_floor,
                }
            })
            .collect()
    }
}

/// How many runs' max RSS was at or below coldtrace's own floor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AtFloor {
    /// The first run (0 or 1).
    pub first: u64,
    /// Warm runs.
    pub warm: u64,
    /// All counted runs.
    pub all: u64,
}
serialize_struct!(AtFloor { first, warm, all });

/// One metric's summary for the first run, the warm runs and all counted runs.
#[derive(Clone, Debug)]
pub struct MetricSummary {
    /// Metric name.
    pub name: &'static str,
    /// Its unit.
    pub unit: &'static str,
    /// The first counted run (n = 1).
    pub first: Option<Summary>,
    /// The counted runs after the first.
    pub warm: Option<Summary>,
    /// All counted runs.
    pub all: Option<Summary>,
    /// First run ÷ warm median.
    pub first_to_warm_median: Option<f64>,
    /// For max RSS only: runs at or below the runner's floor.
    pub runs_at_floor: Option<AtFloor>,
}

impl Serialize for MetricSummary {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("unit", self.unit)?;
        m.serialize_entry("first", &self.first)?;
        m.serialize_entry("warm", &self.warm)?;
        m.serialize_entry("all", &self.all)?;
        m.serialize_entry("first_to_warm_median", &self.first_to_warm_median)?;
        if let Some(at) = &self.runs_at_floor {
            m.serialize_entry("runs_at_floor", at)?;
        }
        m.end()
    }
}

/// The `summary` object: metric name → its summary, in table order.
pub struct SummaryMap<'a>(pub &'a [MetricSummary]);

impl Serialize for SummaryMap<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for summary in self.0 {
            m.serialize_entry(summary.name, summary)?;
        }
        m.end()
    }
}
