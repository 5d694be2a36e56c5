//! Which numbers of a run are summarised, under which name, label and unit ([`METRICS`]).
//! It only names and reads metrics; holding and summarising their values is elsewhere.
#![forbid(unsafe_code)]

use crate::measure::perf::PerfEvent;
use crate::record::run::RunRecord;

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
    /// A count of 512-byte blocks (`ru_inblock`/`ru_oublock` on Linux, whatever the unit of
    /// the underlying device).
    Blocks512,
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
            Unit::Blocks512 => "512-byte blocks",
            Unit::Ratio => "ratio",
        }
    }
}

/// Where a metric's value is read from.
#[derive(Clone, Copy)]
pub enum Source {
    /// A field of the record.
    Field(fn(&RunRecord<'_>) -> Option<f64>),
    /// The reading of the perf event named like the metric.
    Counter,
}

/// One summarised number of a run.
#[derive(Clone, Copy)]
pub struct Metric {
    /// Key in `summary` (the record's field name, or the perf event's name).
    pub name: &'static str,
    /// Label in the human table.
    pub label: &'static str,
    /// Its unit.
    pub unit: Unit,
    /// Where it is read from.
    pub source: Source,
}

impl Metric {
    /// The metric of the perf event `event`: its name, labelled and summarised like any other.
    pub fn counter(event: PerfEvent) -> Metric {
        Metric {
            name: event.name(),
            label: event.name(),
            unit: if event.unit() == "ns" {
                Unit::Ns
            } else {
                Unit::Count
            },
            source: Source::Counter,
        }
    }

    /// The value of this metric in `record`, if it was measured.
    pub fn get(&self, record: &RunRecord<'_>) -> Option<f64> {
        match self.source {
            Source::Field(read) => read(record),
            Source::Counter => {
                record
                    .counters
                    .as_ref()?
                    .iter()
                    .find(|c| c.event == self.name)?
                    .value
            }
        }
    }
}

/// A first/warm ratio needs a warm median at least this many resolution steps from 0
/// ([`Metric::resolution`]): below, the ratio is the quantisation's, not the command's (a
/// first run's 83 voluntary switches over a warm median of 1, or 0 ms of user time over one
/// 4 ms tick).
pub const NEAR_ZERO_STEPS: f64 = 2.0;

impl Metric {
    /// The smallest step this metric's source resolves, in the metric's unit: the scheduler
    /// tick for rusage's user/sys split (`tick_ns`; see [`crate::measure::tick`]), one for
    /// counts, blocks and KiB, a 512-byte sector for storage reads, 0 for clocks read to the
    /// nanosecond or microsecond.
    pub fn resolution(&self, tick_ns: u64) -> f64 {
        match (self.name, self.unit) {
            ("user_us" | "sys_us", _) => tick_ns as f64 / 1000.0,
            ("read_bytes", _) => 512.0,
            (_, Unit::Count | Unit::Blocks512 | Unit::Kib | Unit::Bytes) => 1.0,
            (_, Unit::Ns | Unit::Us | Unit::Ratio) => 0.0,
        }
    }

    /// Whether `value` is within [`NEAR_ZERO_STEPS`] steps of 0 (exactly 0 for a clock).
    pub fn near_zero(&self, value: f64, tick_ns: u64) -> bool {
        value == 0.0 || value.abs() < NEAR_ZERO_STEPS * self.resolution(tick_ns)
    }
}

/// The metrics of a batch counting `events`: every field metric, then one per event.
pub fn metrics_for(events: &[PerfEvent]) -> Vec<Metric> {
    METRICS
        .iter()
        .copied()
        .chain(events.iter().map(|e| Metric::counter(*e)))
        .collect()
}

macro_rules! rusage_metric {
    ($name:ident, $label:expr, $unit:expr) => {
        Metric {
            name: stringify!($name),
            label: $label,
            unit: $unit,
            source: Source::Field(|r| r.rusage.map(|u| u.0.$name as f64)),
        }
    };
}

/// Every summarised metric that is a field of the record, in table order; the perf events a
/// batch counts follow them ([`metrics_for`]).
/// A figure of the run's cgroup leaf (`cgroup.NAME` in the record): the whole tree's.
macro_rules! cgroup_metric {
    ($name:ident, $label:expr, $i:expr, $field:ident) => {
        Metric {
            name: stringify!($name),
            label: $label,
            unit: Unit::Ns,
            source: Source::Field(|r| {
                r.cgroup
                    .0
                    .as_ref()
                    .and_then(|g| g.$field[$i])
                    .map(|v| v as f64)
            }),
        }
    };
}

pub const METRICS: &[Metric] = &[
    Metric {
        name: "wall_ns",
        label: "wall",
        unit: Unit::Ns,
        source: Source::Field(|r| r.wall_ns.map(|v| v as f64)),
    },
    rusage_metric!(user_us, "user", Unit::Us),
    rusage_metric!(sys_us, "sys", Unit::Us),
    rusage_metric!(max_rss_kib, "max RSS", Unit::Kib),
    rusage_metric!(minor_faults, "minor faults", Unit::Count),
    rusage_metric!(major_faults, "major faults", Unit::Count),
    rusage_metric!(block_in, "block in", Unit::Blocks512),
    rusage_metric!(block_out, "block out", Unit::Blocks512),
    rusage_metric!(voluntary_switches, "voluntary cs", Unit::Count),
    rusage_metric!(involuntary_switches, "involuntary cs", Unit::Count),
    Metric {
        name: "read_bytes",
        label: "read_bytes (child)",
        unit: Unit::Bytes,
        source: Source::Field(|r| {
            r.child_io
                .as_ref()
                .and_then(|io| io.read_bytes)
                .map(|v| v as f64)
        }),
    },
    Metric {
        name: "rchar",
        label: "rchar (child)",
        unit: Unit::Bytes,
        source: Source::Field(|r| {
            r.child_io
                .as_ref()
                .and_then(|io| io.rchar)
                .map(|v| v as f64)
        }),
    },
    Metric {
        name: "runqueue_wait_ns",
        label: "run-queue wait",
        unit: Unit::Ns,
        source: Source::Field(|r| {
            r.sched
                .as_ref()
                .and_then(|s| s.runqueue_wait_ns)
                .map(|v| v as f64)
        }),
    },
    Metric {
        name: "resident_ratio_before",
        label: "cached before",
        unit: Unit::Ratio,
        source: Source::Field(|r| r.cache.as_ref().and_then(|c| c.before.resident_ratio)),
    },
    Metric {
        name: "resident_ratio_after",
        label: "cached after",
        unit: Unit::Ratio,
        source: Source::Field(|r| r.cache.as_ref().and_then(|c| c.after.resident_ratio)),
    },
    Metric {
        name: "pgmajfault",
        label: "pgmajfault (sys)",
        unit: Unit::Count,
        source: Source::Field(|r| {
            r.system_delta
                .as_ref()
                .and_then(|d| d.pgmajfault)
                .map(|v| v as f64)
        }),
    },
    Metric {
        name: "psi_io_some_us",
        label: "I/O pressure (sys)",
        unit: Unit::Us,
        source: Source::Field(|r| {
            r.system_delta
                .as_ref()
                .and_then(|d| d.psi_io_some_us)
                .map(|v| v as f64)
        }),
    },
    cgroup_metric!(cpu_usage_ns, "CPU (cgroup)", 0, cpu_ns),
    cgroup_metric!(io_stall_some_ns, "I/O stall (cgroup)", 1, stall_ns),
    cgroup_metric!(memory_stall_some_ns, "memory stall (cgroup)", 3, stall_ns),
    // user + sys: the kernel's CPU time of the run, exact where its split is tick-sampled.
    Metric {
        name: "cpu_us",
        label: "CPU",
        unit: Unit::Us,
        source: Source::Field(|r| r.rusage.map(|u| (u.0.user_us + u.0.sys_us) as f64)),
    },
];

/// The rows of the default table, in order: wall time, CPU time, max RSS, major faults and
/// what was read from storage (`read_bytes`; `block_in` where the child's I/O is not read).
pub const COMPACT: [&str; 5] = [
    "wall_ns",
    "cpu_us",
    "max_rss_kib",
    "major_faults",
    "read_bytes",
];

/// A metric's short name (`--metrics wall,max_rss`): its name without the unit at its end.
pub fn short_name(name: &str) -> &str {
    ["_ns", "_us", "_kib"]
        .iter()
        .find_map(|unit| name.strip_suffix(unit))
        .unwrap_or(name)
}

/// The metric of `metrics` named `given`: by its short name, its full name, or for a perf
/// event its name.
pub fn find<'m>(metrics: &'m [Metric], given: &str) -> Option<&'m Metric> {
    metrics
        .iter()
        .find(|m| m.name == given || short_name(m.name) == given)
}

/// Every metric's short name, then every perf event's: what `--metrics` takes.
pub fn every_name() -> Vec<&'static str> {
    METRICS
        .iter()
        .map(|m| short_name(m.name))
        .chain(PerfEvent::names())
        .collect()
}

/// Where `metric` is in a record as `runs.jsonl` writes it: the keys from the top, e.g.
/// `["rusage", "user_us"]`; a perf event's is `["counters", EVENT]`, the `value` of the reading
/// whose `event` is EVENT. What the exports read; [`Metric::get`] reads the same value from the
/// record before it is written (a test holds them together).
pub fn record_path(metric: &Metric) -> Option<Vec<&'static str>> {
    let name = metric.name;
    let parent = match (metric.source, name) {
        // A sum of two fields, in no single place.
        (_, "cpu_us") => return None,
        (Source::Counter, _) => Some("counters"),
        (_, "wall_ns") => None,
        (_, "read_bytes" | "rchar") => Some("child_io"),
        (_, "runqueue_wait_ns") => Some("sched"),
        (_, "resident_ratio_before") => return Some(vec!["cache", "before", "resident_ratio"]),
        (_, "resident_ratio_after") => return Some(vec!["cache", "after", "resident_ratio"]),
        (_, "pgmajfault" | "psi_io_some_us") => Some("system_delta"),
        (_, "cpu_usage_ns" | "io_stall_some_ns" | "memory_stall_some_ns") => Some("cgroup"),
        _ => Some("rusage"),
    };
    Some(parent.into_iter().chain([name]).collect())
}

/// The number at [`record_path`] in a record read back as JSON (`None`: absent or null).
pub fn json_at<'a>(
    record: &'a serde_json::Value,
    metric: &Metric,
) -> Option<&'a serde_json::Value> {
    number_at(record, &record_path(metric)?)
}

/// The number at `path` in a record read back as JSON (`None`: absent, null or not a number).
/// `["counters", EVENT]` is the `value` of the reading whose `event` is EVENT, and
/// `["counters", EVENT, FIELD]` its FIELD.
pub fn number_at<'a>(
    record: &'a serde_json::Value,
    path: &[&str],
) -> Option<&'a serde_json::Value> {
    let found = match path {
        ["counters", event, rest @ ..] => {
            let reading = record["counters"]
                .as_array()?
                .iter()
                .find(|c| c["event"] == *event)?;
            match rest {
                [] => reading.get("value")?,
                [field] => reading.get(field)?,
                _ => return None,
            }
        }
        _ => path.iter().try_fold(record, |v, key| v.get(key))?,
    };
    found.is_number().then_some(found)
}

/// Every other number of a run record as `runs.jsonl` writes it — where it is (keys from the
/// top, dotted) and its unit — in record order. With the [`METRICS`] and each perf reading's
/// [`COUNTER_NUMBERS`], these are all the numeric leaves of a record outside its lists (`argv`,
/// `paged_in`, `page_ins.top`, `page_ins.written.top`, `anomalies`, `cold_action.stayed_cached.top`,
/// `survivors.processes`): what `--export-csv` writes
/// beside the metrics. A path the [`METRICS`] already have is skipped there.
pub const RECORD_NUMBERS: &[(&str, &str)] = &[
    ("uptime_s", "s"),
    ("outcome.code", "exit code"),
    ("outcome.signal", "signal number"),
    ("outcome.stop_signal", "signal number"),
    ("outcome.raw_status", "wait status"),
    ("outcome.errno", "errno"),
    ("runner.vm_rss_kib", "KiB"),
    ("runner.vm_hwm_kib", "KiB"),
    ("child_io.write_bytes", "bytes"),
    ("child_io.wchar", "bytes"),
    ("child_io.syscr", "count"),
    ("child_io.syscw", "count"),
    ("sched.on_cpu_ns", "ns"),
    ("sched.timeslices", "count"),
    ("tree.on_cpu_ns", "ns"),
    ("tree.queued_ns", "ns"),
    ("tree.uninterruptible_ns", "ns"),
    ("tree.sleeping_ns", "ns"),
    ("tree.after_exit_ns", "ns"),
    ("tree.spawn_ns", "ns"),
    ("tree.on_cpu_sum_ns", "ns"),
    ("tree.cpu_ns", "ns"),
    ("tree.steal_ns", "ns"),
    ("tree.tasks", "count"),
    ("tree.records", "count"),
    ("tree.lost_records", "count"),
    ("tree.main_thread_cpu_ns", "ns"),
    ("tree.other_threads_cpu_ns", "ns"),
    ("tree.children_cpu_ns", "ns"),
    ("cache.before.files", "count"),
    ("cache.before.total_bytes", "bytes"),
    ("cache.before.resident_bytes", "bytes"),
    ("cache.before.dirty_bytes", "bytes"),
    ("cache.before.unknown_files", "count"),
    ("cache.after.files", "count"),
    ("cache.after.total_bytes", "bytes"),
    ("cache.after.resident_bytes", "bytes"),
    ("cache.after.dirty_bytes", "bytes"),
    ("cache.after.unknown_files", "count"),
    ("cache.paged_in_bytes", "bytes"),
    ("cache.paged_in_files", "count"),
    ("cache.tree_checked_at_run", "run index"),
    ("page_ins.bytes", "bytes"),
    ("page_ins.files", "count"),
    ("page_ins.evicted.files", "count"),
    ("page_ins.evicted.bytes", "bytes"),
    ("page_ins.watched.files", "count"),
    ("page_ins.watched.bytes", "bytes"),
    ("page_ins.elsewhere.files", "count"),
    ("page_ins.elsewhere.bytes", "bytes"),
    ("page_ins.written.bytes", "bytes"),
    ("page_ins.written.files", "count"),
    ("page_ins.written.evicted.files", "count"),
    ("page_ins.written.evicted.bytes", "bytes"),
    ("page_ins.written.watched.files", "count"),
    ("page_ins.written.watched.bytes", "bytes"),
    ("page_ins.written.cwd.files", "count"),
    ("page_ins.written.cwd.bytes", "bytes"),
    ("page_ins.written.elsewhere.files", "count"),
    ("page_ins.written.elsewhere.bytes", "bytes"),
    ("page_ins.written.created.files", "count"),
    ("page_ins.written.created.bytes", "bytes"),
    ("cold_action.evicted_files", "count"),
    ("cold_action.evicted_bytes", "bytes"),
    ("cold_action.evict_failed_files", "count"),
    ("cold_action.took_ns", "ns"),
    ("cold_action.stayed_cached.resident_bytes", "bytes"),
    ("cold_action.stayed_cached.resident_ratio", "ratio"),
    ("cold_action.stayed_cached.total_bytes", "bytes"),
    ("cold_action.stayed_cached.files", "count"),
    ("cold_action.stayed_cached.unknown_files", "count"),
    ("system_delta.pgpgin", "KiB"),
    ("system_delta.pgpgout", "KiB"),
    ("system_delta.pswpin", "pages"),
    ("system_delta.pswpout", "pages"),
    ("system_delta.workingset_refault_file", "pages"),
    ("system_delta.psi_cpu_some_us", "us"),
    ("system_delta.psi_cpu_full_us", "us"),
    ("system_delta.psi_io_full_us", "us"),
    ("system_delta.psi_memory_some_us", "us"),
    ("system_delta.psi_memory_full_us", "us"),
    ("system_delta.window_ns", "ns"),
    ("orphans_reaped", "count"),
    ("cgroup.cpu_user_ns", "ns"),
    ("cgroup.cpu_system_ns", "ns"),
    ("cgroup.cpu_stall_some_ns", "ns"),
    ("cgroup.io_stall_full_ns", "ns"),
    ("cgroup.memory_stall_full_ns", "ns"),
    ("survivors.count", "count"),
    ("survivors.waited_ns", "ns"),
    ("artifacts.stdout_bytes", "bytes"),
    ("artifacts.stderr_bytes", "bytes"),
    ("artifacts.stdout_cut_at", "bytes"),
    ("artifacts.stderr_cut_at", "bytes"),
    ("slot.command", "index"),
    ("slot.round", "index"),
    ("slot.position", "index"),
    ("cycle.cycle", "index"),
    ("cycle.position", "index"),
];

/// The numbers of a perf reading besides its `value` (the event's metric), and their unit
/// (`None`: the event's own).
pub const COUNTER_NUMBERS: &[(&str, Option<&str>)] = &[
    ("raw_value", None),
    ("time_enabled_ns", Some("ns")),
    ("time_running_ns", Some("ns")),
];

/// Index of `max_rss_kib` in [`METRICS`] (it has an at-the-floor count).
pub const MAX_RSS: usize = 3;

/// The position of the metric named `name` in [`METRICS`] (a name from the table itself; an
/// unknown one is a bug, and gives a position past the end, whose values are absent).
pub fn metric_index(name: &str) -> usize {
    METRICS
        .iter()
        .position(|m| m.name == name)
        .unwrap_or(usize::MAX)
}

/// Whether a metric is the residency of the watched files: shown whenever files are watched,
/// 0 % included, and "unknown" where the kernel would not say.
pub fn is_residency(name: &str) -> bool {
    matches!(name, "resident_ratio_before" | "resident_ratio_after")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn named(name: &str) -> &'static Metric {
        METRICS.iter().find(|m| m.name == name).unwrap()
    }

    #[test]
    fn a_value_within_two_steps_of_its_resolution_is_near_zero() {
        let tick_ns = 4_000_000;
        let (sys, cs, wall) = (
            named("sys_us"),
            named("voluntary_switches"),
            named("wall_ns"),
        );
        // One 4 ms tick of system time; a median of one voluntary switch.
        assert!(sys.near_zero(4000.0, tick_ns) && !sys.near_zero(8000.0, tick_ns));
        assert!(cs.near_zero(1.0, tick_ns) && !cs.near_zero(2.0, tick_ns));
        assert!(wall.near_zero(0.0, tick_ns) && !wall.near_zero(1.0, tick_ns));
        assert_eq!(named("read_bytes").resolution(tick_ns), 512.0);
    }
}
