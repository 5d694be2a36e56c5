//! A metric's summary over the first run, the warm runs and all counted runs, as batch.json
//! writes it. Pure data; computing it is the columns' job.
#![forbid(unsafe_code)]

use crate::record::stats::Summary;
use crate::serialize_struct;
use serde::ser::{SerializeMap, Serializer};
use serde::Serialize;

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
