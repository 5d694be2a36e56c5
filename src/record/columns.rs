//! The counted runs' values, one row per run and one column per metric, kept out of coldtrace's
//! resident set. It stores and reads values back; what they mean is in metrics, their summary in
//! summary, the first-run penalty and anomalies in penalty and anomaly.
#![forbid(unsafe_code)]

use crate::record::metrics::{Metric, MAX_RSS, METRICS};
use crate::record::run::{Anomaly, Role, RunRecord};
use crate::record::stats::{ratio, Summary};
use crate::record::summary::{AtFloor, MetricSummary};
use crate::record::tree::TreeRecord;

/// Values kept per run beside the [`METRICS`]: not summarised, but needed to name the reference
/// warm run and to split a first-run penalty.
const EXTRAS: &[fn(&RunRecord<'_>) -> Option<f64>] = &[
    |r| Some(r.index as f64),
    |r| r.sched.and_then(|s| s.on_cpu_ns).map(|v| v as f64),
    |r| fell(r).map(|a| a.reference),
    |r| fell(r).map(|a| a.value),
    |r| r.cycle.map(|c| c.cycle as f64),
    |r| r.cycle.map(|c| c.position as f64),
    |r| {
        let ws = r.cache.as_ref()?.working_set_before.as_ref()?;
        ws.resident_ratio
    },
    |r| tree(r, |t| t.on_cpu_ns),
    |r| tree(r, |t| t.queued_ns),
    |r| tree(r, |t| t.uninterruptible_ns),
    |r| tree(r, |t| t.sleeping_ns),
    |r| tree(r, |t| t.tasks),
    |r| tree(r, |t| t.source.map(|_| 1)),
    |r| tree(r, |t| t.other_threads_cpu_ns),
    |r| tree(r, |t| t.children_cpu_ns),
    |r| tree(r, |t| t.steal_ns),
    |r| r.max_rss_at_floor.map(|at| f64::from(u8::from(at))),
];

/// A figure of the record's `tree`, if it has one.
fn tree(r: &RunRecord<'_>, get: fn(&TreeRecord) -> Option<u64>) -> Option<f64> {
    r.tree.as_ref().and_then(get).map(|v| v as f64)
}

/// The record's `cached_before_fell` anomaly, if it has one.
fn fell<'r>(r: &'r RunRecord<'_>) -> Option<&'r Anomaly> {
    r.anomalies.iter().find(|a| a.kind == "cached_before_fell")
}
/// Column of the run's index in a [`Row`].
pub const INDEX: usize = METRICS.len();
/// Column of the main thread's on-CPU time (schedstat) in a [`Row`].
pub const ON_CPU_NS: usize = METRICS.len() + 1;
/// Column of the watched bytes resident at the end of the previous run, when this run started
/// with fewer (a `cached_before_fell` anomaly).
pub const FELL_FROM_BYTES: usize = METRICS.len() + 2;
/// Column of the watched bytes resident at the start of such a run.
pub const FELL_TO_BYTES: usize = METRICS.len() + 3;
/// Column of the run's cycle with `--cold-cycles`.
pub const CYCLE: usize = METRICS.len() + 4;
/// Column of the run's position in its cycle (0: right after the cold action).
pub const POSITION: usize = METRICS.len() + 5;
/// Column of the share of the first run's working set cached right before the run.
pub const WORKING_SET_RATIO: usize = METRICS.len() + 6;
/// Columns of the tree's figures ([`crate::record::tree::TreeRecord`]), from here in this
/// order: R, Q, D, S (ns), tasks, 1 when the run was traced, other threads' and children's CPU
/// (ns), the hypervisor's steal from the tasks' turns on a CPU (ns).
pub const TREE: usize = METRICS.len() + 7;
/// Column of 1 when the run's max RSS is at or below coldtrace's own floor.
pub const AT_FLOOR: usize = METRICS.len() + 16;
/// Values per row before the batch's perf events.
const WIDTH: usize = METRICS.len() + EXTRAS.len();

/// One run's values: every metric of [`METRICS`], then the extras ([`INDEX`], [`ON_CPU_NS`]),
/// then the batch's perf events (metric `METRICS.len() + j` is column `WIDTH + j`).
#[derive(Clone, Debug, PartialEq)]
pub struct Row(Vec<f64>);

impl Row {
    /// The row of `record` for the batch's `metrics` ([`crate::record::metrics::metrics_for`]);
    /// an absent value is stored as NaN.
    pub fn of(record: &RunRecord<'_>, metrics: &[Metric]) -> Row {
        let fields = metrics[..METRICS.len()].iter().map(|m| m.get(record));
        let extras = EXTRAS.iter().map(|get| get(record));
        let counters = metrics[METRICS.len()..].iter().map(|m| m.get(record));
        Row(fields
            .chain(extras)
            .chain(counters)
            .map(|v| v.unwrap_or(f64::NAN))
            .collect())
    }

    /// The value of metric `i` (in the batch's metric order), `None` when absent.
    pub fn metric(&self, i: usize) -> Option<f64> {
        self.get(Row::column_of_metric(i))
    }

    /// The column of metric `i` (the batch's metric order: the extras sit between the fixed
    /// metrics and the counters).
    pub fn column_of_metric(i: usize) -> usize {
        if i < METRICS.len() {
            i
        } else {
            i + EXTRAS.len()
        }
    }

    /// A row from its values (tests and readers), padded with absent values.
    pub fn from_values(mut values: Vec<f64>) -> Row {
        values.resize(WIDTH, f64::NAN);
        Row(values)
    }

    /// Column `i`, `None` when absent.
    pub fn get(&self, i: usize) -> Option<f64> {
        self.0.get(i).copied().filter(|v| !v.is_nan())
    }

    /// Column `i` as a whole number, `None` when absent.
    pub fn get_u64(&self, i: usize) -> Option<u64> {
        self.get(i).map(|v| v as u64)
    }

    /// The run's index in the batch.
    pub fn index(&self) -> Option<u64> {
        self.get_u64(INDEX)
    }
}

/// The run with role `first`, whatever became of it: a rejected first run keeps its figures
/// (shown, marked) but is in no statistic, and no warm run takes its place.
#[derive(Clone, Debug)]
pub struct FirstRun {
    /// Its values.
    pub row: Row,
    /// Index in the batch.
    pub index: u64,
    /// Whether it is in the statistics (a rejected run is not).
    pub counted: bool,
    /// Why it failed (rejected, or counted with `--ignore-failure`), if it failed.
    pub failure_reason: Option<String>,
    /// Its max RSS is at or below the runner's floor.
    pub at_floor: bool,
}

/// The counted runs' values.
///
/// The warm runs' rows are appended, 8-byte floats, to an anonymous in-memory file
/// (`memfd_create(2)`) rather than kept in coldtrace's heap: written with `write(2)`, never
/// mapped, those pages are not in coldtrace's resident set, so the floor under a child's max RSS
/// stays flat however long the batch (10,000 runs would otherwise add ~2 MiB). They are read
/// back after the last run one column (or one block of rows) at a time ([`WarmSeries`]): the
/// end of a batch of N runs holds one metric's N values, never all of them (which grew
/// coldtrace by ~0.5 KiB per run: 13.7 MiB at 20,000 runs).
pub struct Columns {
    metrics: Vec<Metric>,
    first: Option<FirstRun>,
    warm: WarmRows,
}

enum WarmRows {
    File {
        file: std::fs::File,
        row: Vec<u8>,
        rows: usize,
    },
    Memory(Vec<Row>),
}

impl Columns {
    /// Empty columns for the batch's `metrics` ([`crate::record::metrics::metrics_for`]: the
    /// [`METRICS`], then its perf events).
    pub fn new(metrics: Vec<Metric>) -> Self {
        let width = WIDTH + metrics.len().saturating_sub(METRICS.len());
        let warm =
            match rustix::fs::memfd_create("coldtrace-metrics", rustix::fs::MemfdFlags::CLOEXEC) {
                Ok(fd) => WarmRows::File {
                    file: std::fs::File::from(fd),
                    row: Vec::with_capacity(width * 8),
                    rows: 0,
                },
                Err(_) => WarmRows::Memory(Vec::new()),
            };
        Columns {
            metrics,
            first: None,
            warm,
        }
    }

    /// The batch's metrics, in column order.
    pub fn metrics(&self) -> &[Metric] {
        &self.metrics
    }

    /// Adds a run: the run with role `first` (counted or rejected) and every counted run after
    /// it (warm, or cold: a later cycle's cold run, or any run of a batch with a cold action
    /// before every counted run). Warm-ups and rejected runs after the first are ignored.
    pub fn push(&mut self, record: &RunRecord<'_>) {
        let at_floor = record.max_rss_at_floor == Some(true);
        match record.role {
            Role::First => {
                self.first = Some(FirstRun {
                    row: Row::of(record, &self.metrics),
                    index: record.index,
                    counted: record.counted,
                    failure_reason: record.failure_reason.clone(),
                    at_floor,
                });
            }
            // A cold run (a later cycle's, or any of a batch with a cold action before every
            // counted run) is stored beside the warm runs; the verdict says which runs the
            // summaries cover ([`Columns::summarise`]).
            Role::Warm | Role::Cold if record.counted => {
                self.push_warm(Row::of(record, &self.metrics));
            }
            Role::Warm | Role::Cold | Role::Warmup => {}
        }
    }

    fn push_warm(&mut self, values: Row) {
        match &mut self.warm {
            WarmRows::File { file, row, rows } => {
                use std::io::Write;
                row.clear();
                for v in &values.0 {
                    row.extend_from_slice(&v.to_le_bytes());
                }
                // A failed write loses one row of statistics, never a record (runs.jsonl has it).
                if file.write_all(row).is_ok() {
                    *rows += 1;
                }
            }
            WarmRows::Memory(rows) => rows.push(values),
        }
    }

    /// Values per row: the fields, the extras, the perf events.
    fn width(&self) -> usize {
        WIDTH + self.metrics.len().saturating_sub(METRICS.len())
    }

    /// The run with role `first`, counted or rejected (`None` when there was none).
    pub fn first(&self) -> Option<&FirstRun> {
        self.first.as_ref()
    }

    /// The first run, when it is in the statistics.
    pub fn counted_first(&self) -> Option<&FirstRun> {
        self.first.as_ref().filter(|f| f.counted)
    }

    /// The wall times of the counted runs, in order (for the strip in the table).
    pub fn walls_ns(&self) -> Vec<f64> {
        let first = self.counted_first().and_then(|f| f.row.metric(0));
        let mut walls: Vec<f64> = first.into_iter().collect();
        walls.extend(AllRows(self).metric(0));
        walls
    }

    /// Summaries of every metric, one metric's values in memory at a time: `first` over the
    /// first run where the batch keeps it apart, `warm` over the counted runs but those
    /// `uncovered` names (see [`crate::record::verdict::Verdict::uncovered`]: what the table's
    /// columns, compare and the exports are over), `all` over every counted run. A rejected
    /// first run is in none of them. A first/warm ratio is left out when the warm median is
    /// within [`crate::record::metrics::NEAR_ZERO_STEPS`] steps of its source's resolution
    /// from 0 (`tick_ns`: the scheduler tick that samples the user/sys split).
    pub fn summarise(
        &self,
        tick_ns: u64,
        first_apart: bool,
        uncovered: &[u64],
    ) -> Vec<MetricSummary> {
        let counted_first = self.counted_first();
        let first = counted_first.filter(|_| first_apart);
        let covered = Covered {
            columns: self,
            first_apart,
            uncovered,
        };
        let floor = |rows: &dyn WarmSeries| rows.column(AT_FLOOR).iter().sum::<f64>() as u64;
        let at_floor = |f: Option<&FirstRun>| u64::from(f.is_some_and(|f| f.at_floor));
        self.metrics
            .iter()
            .enumerate()
            .map(|(i, metric)| {
                let first_value = first.and_then(|f| f.row.metric(i));
                let first_summary = first_value.and_then(|v| Summary::of(&[v]));
                let warm = Summary::of(&covered.metric(i));
                let mut values = AllRows(self).metric(i);
                if let Some(v) = counted_first.and_then(|f| f.row.metric(i)) {
                    values.insert(0, v);
                }
                let at_floor = (i == MAX_RSS).then(|| AtFloor {
                    first: at_floor(first),
                    warm: floor(&covered),
                    all: floor(&AllRows(self)) + at_floor(counted_first),
                });
                MetricSummary {
                    name: metric.name,
                    unit: metric.unit.name(),
                    first_to_warm_median: ratio(
                        first_summary.map(|s| s.median),
                        warm.map(|s| s.median)
                            .filter(|&m| !metric.near_zero(m, tick_ns)),
                    ),
                    first: first_summary,
                    warm,
                    all: Summary::of(&values),
                    runs_at_floor: at_floor,
                }
            })
            .collect()
    }
}

/// The warm runs' values, read back a column, a row, or a block of rows at a time.
pub trait WarmSeries {
    /// Each row in run order (streamed: one block in memory at a time).
    fn each_row(&self, f: &mut dyn FnMut(&Row));

    /// Column `i`'s present values ([`Row::get`]), in run order: one column in memory.
    fn column(&self, i: usize) -> Vec<f64> {
        let mut values = Vec::new();
        self.each_row(&mut |row| values.extend(row.get(i)));
        values
    }

    /// Metric `m`'s present values ([`Row::metric`], the batch's metric order), in run order.
    fn metric(&self, m: usize) -> Vec<f64> {
        let mut values = Vec::new();
        self.each_row(&mut |row| values.extend(row.metric(m)));
        values
    }

    /// Row `k` (0-based, run order).
    fn row(&self, k: usize) -> Option<Row> {
        let (mut n, mut found) = (0, None);
        self.each_row(&mut |row| {
            if n == k {
                found = Some(row.clone());
            }
            n += 1;
        });
        found
    }
}

impl WarmSeries for [Row] {
    fn each_row(&self, f: &mut dyn FnMut(&Row)) {
        self.iter().for_each(f);
    }
}

impl<const N: usize> WarmSeries for [Row; N] {
    fn each_row(&self, f: &mut dyn FnMut(&Row)) {
        self.iter().for_each(f);
    }
}

impl WarmSeries for Vec<Row> {
    fn each_row(&self, f: &mut dyn FnMut(&Row)) {
        self.iter().for_each(f);
    }
}

/// The runs after the first but the cycles' cold runs (position 0): the series whose
/// anomalies are judged before the verdict is decided.
impl WarmSeries for Columns {
    fn each_row(&self, f: &mut dyn FnMut(&Row)) {
        AllRows(self).each_row(&mut |row| {
            if row.get(POSITION) != Some(0.0) {
                f(row)
            }
        });
    }

    fn column(&self, i: usize) -> Vec<f64> {
        self.column_where(i, POSITION, &|position| position != 0.0)
    }

    fn metric(&self, m: usize) -> Vec<f64> {
        self.column(Row::column_of_metric(m))
    }
}

impl Columns {
    /// Column `i`'s present values of the stored rows whose column `key` (NaN when absent)
    /// `keep` holds, decoding only those two cells of each.
    fn column_where(&self, i: usize, key: usize, keep: &dyn Fn(f64) -> bool) -> Vec<f64> {
        match &self.warm {
            WarmRows::File { file, rows, .. } => {
                stored_column(file, *rows, self.width(), (i, key), keep)
            }
            WarmRows::Memory(rows) => rows
                .iter()
                .filter(|row| keep(row.0.get(key).copied().unwrap_or(f64::NAN)))
                .filter_map(|row| row.get(i))
                .collect(),
        }
    }
}

/// The counted runs a batch's figures cover, in run order: the first run where it is not kept
/// apart, then the runs after it, but those `uncovered` names (see [`Columns::summarise`]).
pub struct Covered<'c> {
    /// The batch's runs.
    pub columns: &'c Columns,
    /// The batch keeps its first run apart.
    pub first_apart: bool,
    /// The runs left out.
    pub uncovered: &'c [u64],
}

impl Covered<'_> {
    fn covers(&self, index: f64) -> bool {
        !self.uncovered.contains(&(index as u64))
    }

    fn first(&self) -> Option<&Row> {
        let first = self.columns.counted_first().filter(|_| !self.first_apart)?;
        self.covers(first.index as f64).then_some(&first.row)
    }
}

impl WarmSeries for Covered<'_> {
    fn each_row(&self, f: &mut dyn FnMut(&Row)) {
        self.first().into_iter().for_each(&mut *f);
        AllRows(self.columns).each_row(&mut |row| {
            if row.get(INDEX).is_some_and(|i| self.covers(i)) {
                f(row)
            }
        });
    }

    fn column(&self, i: usize) -> Vec<f64> {
        let mut values: Vec<f64> = self.first().and_then(|r| r.get(i)).into_iter().collect();
        values.extend(self.columns.column_where(i, INDEX, &|at| self.covers(at)));
        values
    }

    fn metric(&self, m: usize) -> Vec<f64> {
        self.column(Row::column_of_metric(m))
    }
}

/// Every counted run after the first, in run order: the warm runs and, with `--cold-cycles`,
/// the later cycles' cold runs.
pub struct AllRows<'c>(pub &'c Columns);

impl WarmSeries for AllRows<'_> {
    fn each_row(&self, f: &mut dyn FnMut(&Row)) {
        match &self.0.warm {
            WarmRows::Memory(rows) => rows.iter().for_each(f),
            WarmRows::File { file, rows, .. } => each_stored_row(file, *rows, self.0.width(), f),
        }
    }

    fn column(&self, i: usize) -> Vec<f64> {
        match &self.0.warm {
            WarmRows::File { file, rows, .. } => {
                stored_column(file, *rows, self.0.width(), (i, i), &|_| true)
            }
            WarmRows::Memory(rows) => rows.iter().filter_map(|row| row.get(i)).collect(),
        }
    }

    fn metric(&self, m: usize) -> Vec<f64> {
        self.column(Row::column_of_metric(m))
    }
}

/// Rows of `width` values read from the memfd in blocks of 256 ([pread(2)]), decoded into one
/// reused row.
///
/// [pread(2)]: https://man7.org/linux/man-pages/man2/pread.2.html
fn each_stored_row(file: &std::fs::File, rows: usize, width: usize, f: &mut dyn FnMut(&Row)) {
    let mut row = Row(vec![f64::NAN; width]);
    each_stored_block(file, rows, width, &mut |stored| {
        for (value, cell) in row.0.iter_mut().zip(stored.chunks_exact(8)) {
            *value = decode(cell);
        }
        f(&row);
    });
}

/// Column `i`'s present values from the memfd, in run order, of the rows whose column `key`
/// `keep` holds, decoding only those two cells of each row. The summary asks for one metric at
/// a time; with whole rows decoded for each, and a `memcpy` call per value (see [`decode`]),
/// `run --minimal` made 1,002 `memcpy` calls per run of the batch (counted with a uprobe on
/// `memcpy`); now 53.
fn stored_column(
    file: &std::fs::File,
    rows: usize,
    width: usize,
    (i, key): (usize, usize),
    keep: &dyn Fn(f64) -> bool,
) -> Vec<f64> {
    let mut values = Vec::with_capacity(rows);
    if i >= width {
        return values;
    }
    each_stored_block(file, rows, width, &mut |stored| {
        let value = decode(&stored[i * 8..i * 8 + 8]);
        if !value.is_nan() && keep(decode(&stored[key * 8..key * 8 + 8])) {
            values.push(value);
        }
    });
    values
}

/// Each stored row's bytes, read from the memfd in blocks of 256 rows.
fn each_stored_block(file: &std::fs::File, rows: usize, width: usize, f: &mut dyn FnMut(&[u8])) {
    use std::os::unix::fs::FileExt;
    const BLOCK: usize = 256;
    let mut bytes = vec![0u8; BLOCK * width * 8];
    let mut done = 0;
    while done < rows {
        let n = (rows - done).min(BLOCK);
        let block = &mut bytes[..n * width * 8];
        if file
            .read_exact_at(block, (done * width * 8) as u64)
            .is_err()
        {
            return;
        }
        block.chunks_exact(width * 8).for_each(&mut *f);
        done += n;
    }
}

/// One stored value (8 bytes, little-endian). Built byte by byte so that it compiles to one
/// load: a `copy_from_slice` into an array was a call to `memcpy` per value at this crate's
/// `opt-level = "z"`.
fn decode(cell: &[u8]) -> f64 {
    f64::from_le_bytes([
        cell[0], cell[1], cell[2], cell[3], cell[4], cell[5], cell[6], cell[7],
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rows with gaps (NaN: absent), cold runs of later cycles (POSITION 0) and warm runs.
    fn rows() -> Vec<Row> {
        (0..600)
            .map(|k| {
                let mut values: Vec<f64> = (0..WIDTH).map(|i| (k * WIDTH + i) as f64).collect();
                values[POSITION] = match k % 7 {
                    0 => 0.0,
                    1 => f64::NAN,
                    _ => 1.0,
                };
                if k % 5 == 0 {
                    values[3] = f64::NAN;
                }
                Row::from_values(values)
            })
            .collect()
    }

    fn filled(mut columns: Columns) -> Columns {
        for row in rows() {
            columns.push_warm(row);
        }
        columns
    }

    #[test]
    fn a_column_read_alone_is_the_column_of_the_rows() {
        let metrics = crate::record::metrics::metrics_for(&[]);
        let stored = filled(Columns::new(metrics.clone()));
        assert!(matches!(stored.warm, WarmRows::File { .. }), "a memfd here");
        let mut in_memory = Columns::new(metrics);
        in_memory.warm = WarmRows::Memory(Vec::new());
        let in_memory = filled(in_memory);
        for i in [0, 3, POSITION, WIDTH - 1] {
            let mut warm = Vec::new();
            stored.each_row(&mut |row| warm.extend(row.get(i)));
            let mut all = Vec::new();
            AllRows(&stored).each_row(&mut |row| all.extend(row.get(i)));
            assert!(
                warm.len() < all.len(),
                "cold runs are left out of the warm series"
            );
            assert_eq!(stored.column(i), warm, "column {i}");
            assert_eq!(in_memory.column(i), warm, "column {i} in memory");
            assert_eq!(AllRows(&stored).column(i), all, "all rows, column {i}");
            assert_eq!(
                AllRows(&in_memory).column(i),
                all,
                "all rows in memory, column {i}"
            );
        }
        assert!(stored.column(WIDTH + 5).is_empty(), "no such column");
    }
}
