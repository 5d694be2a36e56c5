//! The counted runs' values, one column per metric, kept out of coldtrace's resident set.
//! It stores and reads values back; what they mean is in metrics, their summary in summary.
#![forbid(unsafe_code)]

use crate::record::metrics::{MAX_RSS, METRICS};
use crate::record::run::RunRecord;
use crate::record::stats::{ratio, Summary};
use crate::record::summary::{AtFloor, MetricSummary};

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
