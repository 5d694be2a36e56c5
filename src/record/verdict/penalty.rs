//! The first-run penalty, decomposed: the first run against one reference warm run (the one with
//! the median wall time), split into on-CPU, run-queue and blocked time with the evidence beside
//! it. Pure arithmetic on two rows; it reads no record file, measures and renders nothing.
//!
//! Why one reference run and not the warm medians: medians of parts do not add up to the median
//! of the whole, so the parts are differences between the same two records. Why schedstat:
//! rusage's user/sys are tick-sampled in their split, but their sum equals the main thread's
//! schedstat on-CPU time to the microsecond for a single-threaded command (verified on 6.18:
//! `sleep`, a shell busy loop, `dd`: |user+sys − on-CPU| < 1 µs); run-queue wait comes from the
//! same file; blocked time is the rest of the wall time. schedstat covers the main thread only,
//! so when rusage CPU (all threads, waited-for descendants) exceeds it by more than
//! [`PARALLEL_SLACK_NS`] the wall time cannot be split this way (a pyenv shim's helper processes
//! made 47–51 ms of such CPU per `python3 -c 'import json'`).
//!
//! A difference of two runs is also there when nothing was cold: one run alone is noise. So a
//! penalty is *claimed* only when the first run stands out of the whole warm distribution by
//! [`RULE`] ([`stands_out`]); otherwise the difference and its parts are kept (with
//! `significant: false`) but not presented as an explanation. The rule was chosen by its error
//! rates over seeded synthetic batches (the tests below print them): with 19 warm runs, a first
//! run drawn from the warm runs' own distribution passes it in at most 0.6 % of batches for
//! uniform, normal, log-normal, exponential and two-mode distributions (the rule "above the
//! slowest warm run" passes 5 %, 1 in n + 1), while a first run 300 ms above warm runs of
//! 10–50 ms always passes.
#![forbid(unsafe_code)]

use crate::measure::tick::Tick;
use crate::record::columns::{FirstRun, Row, WarmSeries, ON_CPU_NS};
use crate::record::metrics::metric_index;
use crate::record::verdict::tree_penalty::{
    minus, tree_penalty, TreeFigures, TreePenalty, BY_TREE,
};
use crate::serialize_struct;

/// rusage CPU above schedstat's on-CPU time beyond which the work was parallel or spread over
/// processes (the µs truncation of rusage alone is below 2 µs).
pub const PARALLEL_SLACK_NS: i64 = 1_000_000;

/// When a first run stands out of the warm runs, in words (`first_penalty.rule`).
pub const RULE: &str = "first > warm median + 3 × (slowest warm − warm median), \
                        with at least 2 warm runs";
/// The multiple of the warm runs' spread above their median (slowest − median) that the first
/// run must exceed the median by.
pub const SPREAD_FACTOR: f64 = 3.0;
/// Warm runs needed before any first run can stand out (one run has no spread).
pub const MIN_WARM_RUNS: usize = 2;

/// Whether the first run stands out of the warm runs' wall times, by [`RULE`], and the figures
/// the rule used.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StandsOut {
    /// The first run's wall time is above [`StandsOut::threshold_wall_ns`].
    pub significant: bool,
    /// Warm runs with a wall time.
    pub warm_runs: u64,
    /// Their fastest wall time (`None` without warm runs).
    pub warm_min_wall_ns: Option<f64>,
    /// Their median.
    pub warm_median_wall_ns: Option<f64>,
    /// Their slowest.
    pub warm_max_wall_ns: Option<f64>,
    /// Median + 3 × (slowest − median); `None` with fewer than [`MIN_WARM_RUNS`].
    pub threshold_wall_ns: Option<f64>,
}

/// Whether a first run of `first_wall_ns` stands out of the warm wall times `warm` by [`RULE`].
pub fn stands_out(first_wall_ns: f64, warm: &[f64]) -> StandsOut {
    let summary = crate::record::stats::Summary::of(warm);
    let threshold = summary
        .filter(|s| s.n as usize >= MIN_WARM_RUNS)
        .map(|s| s.median + SPREAD_FACTOR * (s.max - s.median));
    StandsOut {
        significant: threshold.is_some_and(|t| first_wall_ns > t),
        warm_runs: summary.map_or(0, |s| s.n),
        warm_min_wall_ns: summary.map(|s| s.min),
        warm_median_wall_ns: summary.map(|s| s.median),
        warm_max_wall_ns: summary.map(|s| s.max),
        threshold_wall_ns: threshold,
    }
}

/// One run's figures that the penalty uses, from its row.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct RunFigures {
    /// Index in the batch.
    pub index: u64,
    /// Wall time.
    pub wall_ns: Option<i64>,
    /// rusage user time.
    pub user_us: Option<i64>,
    /// rusage system time.
    pub sys_us: Option<i64>,
    /// schedstat on-CPU time of the main thread.
    pub on_cpu_ns: Option<i64>,
    /// schedstat run-queue wait of the main thread.
    pub runqueue_ns: Option<i64>,
    /// `/proc/PID/io` read_bytes.
    pub read_bytes: Option<i64>,
    /// rusage block input.
    pub block_in: Option<i64>,
    /// rusage major faults.
    pub major_faults: Option<i64>,
    /// rusage voluntary context switches.
    pub voluntary_switches: Option<i64>,
    /// System-wide PSI io "some" stall over the run.
    pub psi_io_some_us: Option<i64>,
    /// The run's own cgroup: PSI io and memory "some" stall of its tree, ns.
    pub io_stall_ns: Option<i64>,
    /// See [`RunFigures::io_stall_ns`].
    pub memory_stall_ns: Option<i64>,
}

impl RunFigures {
    /// The figures of a row.
    pub fn of(row: &Row) -> RunFigures {
        let at = |name: &str| row.get(metric_index(name)).map(|v| v as i64);
        RunFigures {
            index: row.index().unwrap_or(0),
            wall_ns: at("wall_ns"),
            user_us: at("user_us"),
            sys_us: at("sys_us"),
            on_cpu_ns: row.get(ON_CPU_NS).map(|v| v as i64),
            runqueue_ns: at("runqueue_wait_ns"),
            read_bytes: at("read_bytes"),
            block_in: at("block_in"),
            major_faults: at("major_faults"),
            voluntary_switches: at("voluntary_switches"),
            psi_io_some_us: at("psi_io_some_us"),
            io_stall_ns: at("io_stall_some_ns"),
            memory_stall_ns: at("memory_stall_some_ns"),
        }
    }

    /// rusage CPU (user + sys), ns.
    pub fn cpu_ns(&self) -> Option<i64> {
        Some((self.user_us? + self.sys_us?) * 1000)
    }

    /// Wall time neither on a CPU nor waiting for one.
    fn blocked_ns(&self) -> Option<i64> {
        Some(self.wall_ns? - self.on_cpu_ns? - self.runqueue_ns?)
    }

    /// Whether the main thread's schedstat is known.
    fn has_schedstat(&self) -> bool {
        self.cpu_ns().is_some() && self.blocked_ns().is_some()
    }

    /// Whether the tree did more than the main thread: rusage CPU (all threads, waited-for
    /// descendants) beyond the main thread's on-CPU time by more than [`PARALLEL_SLACK_NS`].
    fn beyond_main_thread(&self) -> bool {
        let (Some(cpu), Some(on_cpu), Some(blocked)) =
            (self.cpu_ns(), self.on_cpu_ns, self.blocked_ns())
        else {
            return false;
        };
        cpu - on_cpu > PARALLEL_SLACK_NS || blocked < -PARALLEL_SLACK_NS
    }
}

/// How the penalty's wall time was split.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Basis {
    /// By the whole tree's states in both runs (`first_penalty.tree`: R, Q, D, S); the main
    /// thread's split is beside it.
    Tree,
    /// By both runs' schedstat (on-CPU, run-queue, blocked): the main thread was the whole tree.
    Schedstat,
    /// By the main thread's schedstat only: the tree did more than the main thread (rusage CPU
    /// beyond its on-CPU time) and its states are not known; `first_penalty.tree` says why and
    /// how much CPU went elsewhere.
    MainThread,
    /// No schedstat (`--minimal`, or unreadable): no split.
    Unavailable,
}

impl Basis {
    /// The name in `batch.json`.
    pub fn name(self) -> &'static str {
        match self {
            Basis::Tree => "tree",
            Basis::Schedstat => "schedstat",
            Basis::MainThread => "main thread",
            Basis::Unavailable => "unavailable",
        }
    }
}

impl serde::Serialize for Basis {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

/// What the first run did more than the reference warm run, beside the time: each the first
/// run's figure minus the reference's (`null` when either is unknown).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Evidence {
    /// Extra bytes read from storage (`/proc/PID/io`).
    pub read_bytes: Option<i64>,
    /// Extra 512-byte blocks of storage input (rusage).
    pub block_in: Option<i64>,
    /// Extra major faults.
    pub major_faults: Option<i64>,
    /// Extra voluntary context switches (waits).
    pub voluntary_switches: Option<i64>,
    /// Extra system-wide I/O stall (PSI io "some"), µs.
    pub psi_io_some_us: Option<i64>,
    /// Extra I/O stall of the run's own tree (its cgroup's PSI io "some"), ns; `null` without
    /// a cgroup or PSI.
    pub io_stall_ns: Option<i64>,
    /// Extra memory stall of the run's own tree (its cgroup's PSI memory "some"), ns.
    pub memory_stall_ns: Option<i64>,
}
serialize_struct!(Evidence {
    read_bytes,
    block_in,
    major_faults,
    voluntary_switches,
    psi_io_some_us,
    io_stall_ns,
    memory_stall_ns
});

/// The first run's penalty over the reference warm run.
#[derive(Clone, Debug, PartialEq)]
pub struct FirstPenalty {
    /// The first run's index.
    pub first_index: u64,
    /// The reference: the warm run with the median wall time (the lower of the two middle
    /// runs for an even count).
    pub reference_index: u64,
    /// `median` (an odd count of warm runs: the reference's wall time is their median) or
    /// `lower middle` (an even count: the lower of the two runs around the median).
    pub reference: &'static str,
    /// The first run's wall time.
    pub first_wall_ns: i64,
    /// The reference run's wall time.
    pub reference_wall_ns: i64,
    /// How the wall time was split.
    pub basis: Basis,
    /// First minus reference wall time.
    pub wall_ns: i64,
    /// Extra on-CPU time of the main thread (schedstat); `null` without schedstat.
    pub cpu_ns: Option<i64>,
    /// Extra time the main thread waited for a CPU; `null` without schedstat.
    pub runqueue_ns: Option<i64>,
    /// Extra time the main thread was off CPU and not waiting for one (I/O, sleeps, page
    /// faults, waiting for its children); `null` without schedstat.
    /// `cpu_ns + runqueue_ns + blocked_ns == wall_ns`.
    pub blocked_ns: Option<i64>,
    /// Extra rusage CPU (user + sys, all threads and waited-for descendants).
    pub rusage_cpu_ns: Option<i64>,
    /// Extra rusage system time (tick-sampled split).
    pub sys_us: Option<i64>,
    /// What else the first run did more.
    pub evidence: Evidence,
    /// Whether the first run stands out of the warm runs by [`RULE`], with the figures.
    pub stands_out: StandsOut,
    /// The scheduler tick that samples `sys_us` (the user/sys split), and where it was read.
    pub cpu_tick: Tick,
    /// The penalty split by the whole tree's states, or why not.
    pub tree: TreePenalty,
}
impl serde::Serialize for FirstPenalty {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let o = &self.stands_out;
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("significant", &o.significant)?;
        m.serialize_entry("rule", RULE)?;
        m.serialize_entry("warm_runs", &o.warm_runs)?;
        m.serialize_entry("warm_min_wall_ns", &o.warm_min_wall_ns)?;
        m.serialize_entry("warm_median_wall_ns", &o.warm_median_wall_ns)?;
        m.serialize_entry("warm_max_wall_ns", &o.warm_max_wall_ns)?;
        m.serialize_entry("threshold_wall_ns", &o.threshold_wall_ns)?;
        m.serialize_entry("first_index", &self.first_index)?;
        m.serialize_entry("reference_index", &self.reference_index)?;
        m.serialize_entry("reference", self.reference)?;
        m.serialize_entry("first_wall_ns", &self.first_wall_ns)?;
        m.serialize_entry("reference_wall_ns", &self.reference_wall_ns)?;
        m.serialize_entry("basis", &self.basis)?;
        m.serialize_entry("wall_ns", &self.wall_ns)?;
        m.serialize_entry("cpu_ns", &self.cpu_ns)?;
        m.serialize_entry("runqueue_ns", &self.runqueue_ns)?;
        m.serialize_entry("blocked_ns", &self.blocked_ns)?;
        m.serialize_entry("rusage_cpu_ns", &self.rusage_cpu_ns)?;
        m.serialize_entry("sys_us", &self.sys_us)?;
        m.serialize_entry("cpu_tick_ns", &self.cpu_tick.ns)?;
        m.serialize_entry("cpu_tick_source", self.cpu_tick.source)?;
        m.serialize_entry("evidence", &self.evidence)?;
        m.serialize_entry("tree", &self.tree)?;
        m.end()
    }
}

/// The warm run with the median wall time: the middle one of an odd count, the lower of the
/// two middle ones of an even count (ties by index), and how many warm runs had a wall time.
/// `None` without a warm wall time.
pub fn reference_run<W: WarmSeries + ?Sized>(warm: &W) -> Option<(Row, usize)> {
    // Wall time, index and position of each warm run: 24 bytes a run, not the rows.
    let mut timed: Vec<(f64, u64, usize)> = Vec::new();
    let mut k = 0;
    warm.each_row(&mut |r| {
        if let (Some(wall), Some(index)) = (r.get(0), r.index()) {
            timed.push((wall, index, k));
        }
        k += 1;
    });
    timed.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    let n = timed.len();
    let k = (n > 0).then(|| timed[(n - 1) / 2].2)?;
    warm.row(k).map(|row| (row, n))
}

/// How the penalty of `first` over `reference` is split: by the tree's states when both runs
/// have them, else by the main thread's schedstat (labelled when the tree did more).
fn basis(first: &RunFigures, reference: &RunFigures, tree: &TreePenalty) -> Basis {
    if tree.source == BY_TREE {
        Basis::Tree
    } else if !first.has_schedstat() || !reference.has_schedstat() {
        Basis::Unavailable
    } else if first.beyond_main_thread() || reference.beyond_main_thread() {
        Basis::MainThread
    } else {
        Basis::Schedstat
    }
}

/// The penalty of `first` over `reference`, judged by [`RULE`] against the warm wall times
/// `warm_walls` (the reference's among them), with the tree's share `tree`. `None` when either
/// wall time is unknown.
pub fn first_penalty(
    first: &RunFigures,
    reference: &RunFigures,
    warm_walls: &[f64],
    tree: TreePenalty,
) -> Option<FirstPenalty> {
    let (first_wall, reference_wall) = (first.wall_ns?, reference.wall_ns?);
    let basis = basis(first, reference, &tree);
    let split = basis != Basis::Unavailable;
    let cpu_ns = minus(first.on_cpu_ns, reference.on_cpu_ns).filter(|_| split);
    let runqueue_ns = minus(first.runqueue_ns, reference.runqueue_ns).filter(|_| split);
    let wall_ns = first_wall - reference_wall;
    let blocked_ns = match (cpu_ns, runqueue_ns) {
        (Some(cpu), Some(rq)) => Some(wall_ns - cpu - rq),
        _ => None,
    };
    Some(FirstPenalty {
        first_index: first.index,
        reference_index: reference.index,
        reference: "median",
        first_wall_ns: first_wall,
        reference_wall_ns: reference_wall,
        basis,
        wall_ns,
        blocked_ns,
        cpu_ns,
        runqueue_ns,
        rusage_cpu_ns: minus(first.cpu_ns(), reference.cpu_ns()),
        sys_us: minus(first.sys_us, reference.sys_us),
        evidence: Evidence {
            read_bytes: minus(first.read_bytes, reference.read_bytes),
            block_in: minus(first.block_in, reference.block_in),
            major_faults: minus(first.major_faults, reference.major_faults),
            voluntary_switches: minus(first.voluntary_switches, reference.voluntary_switches),
            psi_io_some_us: minus(first.psi_io_some_us, reference.psi_io_some_us),
            io_stall_ns: minus(first.io_stall_ns, reference.io_stall_ns),
            memory_stall_ns: minus(first.memory_stall_ns, reference.memory_stall_ns),
        },
        stands_out: stands_out(first_wall as f64, warm_walls),
        cpu_tick: Tick {
            ns: crate::measure::tick::COARSEST_TICK_NS,
            source: "assumed",
        },
        tree,
    })
}

/// A batch's first-run split, or why it has none: `first` is the run with role `first`,
/// `warm` the verdict's reference warm runs' rows (whether there is a warm series at all is
/// the verdict's to say), `tick` the scheduler tick of this kernel, `no_tree` why the batch
/// has no tree source (when it has none).
pub fn batch_penalty(
    first: Option<&FirstRun>,
    warm: &(impl WarmSeries + ?Sized),
    tick: Tick,
    no_tree: Option<&str>,
) -> Result<FirstPenalty, &'static str> {
    let first = first.ok_or("no first run")?;
    if !first.counted {
        return Err("the first run was rejected");
    }
    let (reference, n) = reference_run(warm).ok_or("no warm run to compare with")?;
    let walls = warm.column(0);
    let (first_figures, reference_figures) =
        (RunFigures::of(&first.row), RunFigures::of(&reference));
    let tree = tree_penalty(
        (&TreeFigures::of(&first.row), first_figures.index),
        (&TreeFigures::of(&reference), reference_figures.index),
        no_tree,
    );
    let mut penalty = first_penalty(&first_figures, &reference_figures, &walls, tree)
        .ok_or("the first run has no wall time")?;
    if n % 2 == 0 {
        penalty.reference = "lower middle";
    }
    penalty.cpu_tick = tick;
    Ok(penalty)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(index: u64, wall_ms: i64, cpu_ms: i64, rq_ms: i64, rusage_cpu_ms: i64) -> RunFigures {
        RunFigures {
            index,
            wall_ns: Some(wall_ms * 1_000_000),
            user_us: Some(rusage_cpu_ms * 1000 / 2),
            sys_us: Some(rusage_cpu_ms * 1000 - rusage_cpu_ms * 1000 / 2),
            on_cpu_ns: Some(cpu_ms * 1_000_000),
            runqueue_ns: Some(rq_ms * 1_000_000),
            read_bytes: Some(0),
            ..RunFigures::default()
        }
    }

    /// No tree states: the main thread's split, with `why`.
    fn untraced() -> TreePenalty {
        let none = TreeFigures::default();
        tree_penalty((&none, 0), (&none, 1), Some("needs root"))
    }

    #[test]
    fn the_parts_add_up_to_the_penalty() {
        let first = run(0, 305, 2, 3, 2);
        let warm = run(2, 5, 1, 1, 1);
        let p = first_penalty(&first, &warm, &[5e6], untraced()).unwrap();
        assert_eq!(p.basis, Basis::Schedstat);
        assert_eq!(p.wall_ns, 300_000_000);
        assert_eq!(p.cpu_ns, Some(1_000_000));
        assert_eq!(p.runqueue_ns, Some(2_000_000));
        assert_eq!(p.blocked_ns, Some(297_000_000));
        assert_eq!(
            p.cpu_ns.unwrap() + p.runqueue_ns.unwrap() + p.blocked_ns.unwrap(),
            p.wall_ns
        );
        assert_eq!((p.first_index, p.reference_index), (0, 2));
    }

    #[test]
    fn parallel_work_without_tree_states_is_the_main_threads_split_labelled() {
        // Two threads: 600 ms of CPU in 310 ms of wall time, the main thread on CPU 300 ms.
        let first = run(0, 310, 300, 0, 600);
        let warm = run(1, 10, 5, 0, 5);
        let p = first_penalty(&first, &warm, &[5e6], untraced()).unwrap();
        assert_eq!(p.basis, Basis::MainThread);
        assert_eq!(p.basis.name(), "main thread");
        assert_eq!(
            (p.cpu_ns, p.runqueue_ns, p.blocked_ns),
            (Some(295_000_000), Some(0), Some(5_000_000))
        );
        assert_eq!(p.rusage_cpu_ns, Some(595_000_000));
        assert_eq!(p.tree.unavailable.as_deref(), Some("needs root"));
        // Also when only the reference run was parallel.
        let p = first_penalty(&warm, &first, &[310e6], untraced()).unwrap();
        assert_eq!(p.basis, Basis::MainThread);
    }

    #[test]
    fn tree_states_of_both_runs_split_any_tree() {
        let first = run(0, 310, 300, 0, 600);
        let warm = run(1, 10, 5, 0, 5);
        let figures = |states: [i64; 4]| TreeFigures {
            states: Some(states),
            tasks: Some(2),
            traced: true,
            ..TreeFigures::default()
        };
        let tree = tree_penalty(
            (&figures([300, 5, 0, 5]), 0),
            (&figures([5, 0, 0, 5]), 1),
            None,
        );
        let p = first_penalty(&first, &warm, &[10e6], tree).unwrap();
        assert_eq!(p.basis, Basis::Tree);
        assert_eq!((p.tree.on_cpu_ns, p.tree.queued_ns), (Some(295), Some(5)));
        assert_eq!(
            p.cpu_ns,
            Some(295_000_000),
            "the main thread's split is beside it"
        );
    }

    #[test]
    fn without_schedstat_there_is_no_split() {
        let mut first = run(0, 20, 5, 0, 5);
        first.on_cpu_ns = None;
        let p = first_penalty(&first, &run(1, 10, 5, 0, 5), &[10e6], untraced()).unwrap();
        assert_eq!(p.basis, Basis::Unavailable);
        assert_eq!(p.blocked_ns, None);
        assert_eq!(p.wall_ns, 10_000_000);
    }

    #[test]
    fn every_figure_is_read_from_a_known_metric() {
        let metrics = crate::record::metrics::METRICS.len();
        for name in [
            "wall_ns",
            "user_us",
            "sys_us",
            "runqueue_wait_ns",
            "read_bytes",
            "block_in",
            "major_faults",
            "voluntary_switches",
            "psi_io_some_us",
            "io_stall_some_ns",
            "memory_stall_some_ns",
        ] {
            assert!(metric_index(name) < metrics, "{name}");
        }
    }

    #[test]
    fn the_reference_is_the_median_run_named_by_index() {
        let row = |index: u64, wall: f64| {
            let mut values = vec![f64::NAN; crate::record::metrics::METRICS.len()];
            values[0] = wall;
            values.push(index as f64);
            Row::from_values(values)
        };
        let odd = [row(1, 30.0), row(2, 10.0), row(3, 20.0)];
        assert_eq!(reference_run(&odd).unwrap().0.index(), Some(3));
        let even = [row(1, 40.0), row(2, 10.0), row(3, 30.0), row(4, 20.0)];
        assert_eq!(
            reference_run(&even).unwrap().0.index(),
            Some(4),
            "lower middle"
        );
        assert!(reference_run(&[]).is_none());
        // The batch's penalty says which: an even count has no run at the median itself.
        let first = FirstRun {
            row: row(0, 50.0),
            index: 0,
            counted: true,
            failure_reason: None,
            at_floor: false,
        };
        let odd_penalty = batch_penalty(Some(&first), &odd, Tick::read(), None).unwrap();
        assert_eq!((odd_penalty.reference, odd_penalty.wall_ns), ("median", 30));
        let even_penalty = batch_penalty(Some(&first), &even, Tick::read(), None).unwrap();
        assert_eq!(
            (even_penalty.reference, even_penalty.reference_index),
            ("lower middle", 4)
        );
    }

    /// A seeded source of wall times, ms.
    struct Draw(crate::record::stats::SplitMix64);

    impl Draw {
        fn unit(&mut self) -> f64 {
            // 53 random bits in (0, 1).
            ((self.0.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64
        }

        fn normal(&mut self) -> f64 {
            let (u, v) = (self.unit(), self.unit());
            (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
        }
    }

    /// The null distributions: what a command's warm wall times look like on a quiet or a
    /// loaded machine (ms). The first run of a null batch is drawn from the same one.
    /// A named source of wall times.
    type Distribution = (&'static str, fn(&mut Draw) -> f64);

    const NULLS: [Distribution; 6] = [
        ("uniform 10–50 ms", |d| 10.0 + 40.0 * d.unit()),
        ("normal 30 ± 5 ms", |d| 30.0 + 5.0 * d.normal()),
        ("log-normal, median 30 ms, σ 0.5", |d| {
            30.0 * (0.5 * d.normal()).exp()
        }),
        ("20 ms + exponential, mean 5 ms", |d| {
            20.0 - 5.0 * d.unit().ln()
        }),
        ("85 % 30 ± 2 ms, 15 % 45 ± 5 ms", |d| {
            if d.unit() < 0.85 {
                30.0 + 2.0 * d.normal()
            } else {
                45.0 + 5.0 * d.normal()
            }
        }),
        ("whole 4 ms ticks of 0–12 ms", |d| {
            4.0 * (d.unit() * 3.999).floor()
        }),
    ];

    /// Rules a first run could be judged by: (name, first ms, warm ms → claims a penalty).
    type Rule = (&'static str, fn(f64, &[f64]) -> bool);

    fn candidates() -> [Rule; 4] {
        fn mad(w: &[f64], m: f64) -> f64 {
            let d: Vec<f64> = w.iter().map(|v| (v - m).abs()).collect();
            crate::record::stats::Summary::of(&d).unwrap().median
        }
        [
            ("chosen: median + 3 × (slowest − median)", |f, w| {
                stands_out(f, w).significant
            }),
            ("above the slowest warm run", |f, w| {
                f > w.iter().copied().fold(f64::MIN, f64::max)
            }),
            ("median + 3 × 1.4826 MAD", |f, w| {
                let m = crate::record::stats::Summary::of(w).unwrap().median;
                f > m + 3.0 * 1.4826 * mad(w, m)
            }),
            (
                "median + 3 MAD and above the 99 % CI of the median",
                |f, w| {
                    let m = crate::record::stats::Summary::of(w).unwrap().median;
                    let mut sorted = w.to_vec();
                    sorted.sort_by(f64::total_cmp);
                    f > m + 3.0 * mad(w, m) && f > sorted[median_upper_rank(w.len()) - 1]
                },
            ),
        ]
    }

    /// The rank (1-based) of the upper end of the distribution-free 99 % interval of a median
    /// of `n` values: the smallest k with P(Binomial(n, ½) ≥ k) ≤ 0.5 %.
    fn median_upper_rank(n: usize) -> usize {
        let mut tail = 1.0; // P(X ≥ k), from k = 0 up
        let mut pmf = 0.5f64.powi(n as i32); // P(X = k)
        for k in 0..=n {
            if tail <= 0.005 {
                return k;
            }
            tail -= pmf;
            pmf *= (n - k) as f64 / (k + 1) as f64;
        }
        n
    }

    /// Batches of `-n 20` (a first run and 19 warm runs): how many of `batches` claim a penalty
    /// by `rule`, each run drawn by `draw`, the first run `shift` ms more.
    fn claims(rule: fn(f64, &[f64]) -> bool, draw: fn(&mut Draw) -> f64, shift: f64) -> usize {
        claims_of(rule, draw, shift, 200, 19, 0x5EED)
    }

    fn claims_of(
        rule: fn(f64, &[f64]) -> bool,
        draw: fn(&mut Draw) -> f64,
        shift: f64,
        batches: usize,
        warm_runs: usize,
        seed: u64,
    ) -> usize {
        let mut d = Draw(crate::record::stats::SplitMix64::new(seed));
        (0..batches)
            .filter(|_| {
                let first = draw(&mut d) + shift;
                let warm: Vec<f64> = (0..warm_runs).map(|_| draw(&mut d)).collect();
                rule(first, &warm)
            })
            .count()
    }

    #[test]
    fn the_rule_claims_at_most_one_percent_of_null_batches_and_every_real_penalty() {
        let chosen = candidates()[0].1;
        for (name, draw) in NULLS {
            let false_claims = claims(chosen, draw, 0.0);
            println!("null, {name}: {false_claims} of 200 batches claim a penalty");
            assert!(false_claims <= 2, "{name}: {false_claims} of 200");
        }
        let uniform = NULLS[0].1;
        let found = claims(chosen, uniform, 300.0);
        println!("+300 ms over runs of 10–50 ms: {found} of 200 batches claim it");
        assert!(found >= 198, "{found} of 200");
    }

    #[test]
    fn error_rates_of_the_candidate_rules() {
        // The figures the rule was chosen by (`cargo test error_rates -- --nocapture`): 5,000
        // batches per distribution and warm count.
        assert_eq!(median_upper_rank(19), 16);
        for warm_runs in [19, 9, 4] {
            println!("{warm_runs} warm runs: % of null batches claiming a penalty");
            for (name, rule) in candidates() {
                let rates: Vec<String> = NULLS
                    .iter()
                    .map(|(_, draw)| {
                        let n = claims_of(rule, *draw, 0.0, 5_000, warm_runs, 7);
                        format!("{:.2}", n as f64 / 50.0)
                    })
                    .collect();
                println!("  {name:<52} {}", rates.join(" "));
            }
        }
        // A slow mode rarer than 19 warm runs show: 5 % of runs twice as slow. Said as a limit.
        let rare: fn(&mut Draw) -> f64 = |d| {
            let slow = if d.unit() < 0.05 { 2.0 } else { 1.0 };
            slow * (30.0 + 2.0 * d.normal())
        };
        let n = claims_of(candidates()[0].1, rare, 0.0, 5_000, 19, 7);
        println!(
            "19 warm runs, 5 % of runs twice as slow: {:.2} %",
            n as f64 / 50.0
        );
        // What the docs say of the chosen rule at 19 warm runs: at most 0.6 % of null batches.
        for (name, draw) in NULLS {
            let n = claims_of(candidates()[0].1, draw, 0.0, 20_000, 19, 7);
            assert!(n <= 120, "{name}: {n} of 20,000");
        }
    }

    #[test]
    fn a_first_run_inside_the_warm_range_or_near_its_top_does_not_stand_out() {
        let warm = [278.5, 300.0, 310.0, 320.0, 393.4];
        let inside = stands_out(365.6, &warm);
        assert!(!inside.significant);
        assert_eq!(
            (inside.warm_min_wall_ns, inside.warm_max_wall_ns),
            (Some(278.5), Some(393.4))
        );
        // Above the slowest warm run, but by less than their spread: not claimed either.
        let t = 310.0 + 3.0 * (393.4 - 310.0);
        assert_eq!(stands_out(400.0, &warm).threshold_wall_ns, Some(t));
        assert!(!stands_out(t, &warm).significant);
        assert!(stands_out(t + 1.0, &warm).significant);
        // One warm run has no spread: nothing can stand out of it.
        assert!(!stands_out(1e9, &[10.0]).significant);
        assert_eq!(stands_out(1e9, &[10.0]).threshold_wall_ns, None);
        assert!(!stands_out(1e9, &[]).significant);
    }
}
