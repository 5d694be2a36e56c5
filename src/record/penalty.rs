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
#![forbid(unsafe_code)]

use crate::record::columns::{FirstRun, Row, WarmSeries, ON_CPU_NS};
use crate::record::metrics::metric_index;
use crate::serialize_struct;

/// rusage CPU above schedstat's on-CPU time beyond which the work was parallel or spread over
/// processes (the µs truncation of rusage alone is below 2 µs).
pub const PARALLEL_SLACK_NS: i64 = 1_000_000;

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

    /// Why this run's wall time cannot be split (parallel work, or no schedstat), if it cannot.
    fn not_decomposable(&self) -> Option<Basis> {
        let (Some(cpu), Some(on_cpu), Some(blocked)) =
            (self.cpu_ns(), self.on_cpu_ns, self.blocked_ns())
        else {
            return Some(Basis::Unavailable);
        };
        (cpu - on_cpu > PARALLEL_SLACK_NS || blocked < -PARALLEL_SLACK_NS)
            .then_some(Basis::Parallel)
    }
}

/// How the penalty's wall time was split.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Basis {
    /// From both runs' schedstat: on-CPU, run-queue, blocked.
    Schedstat,
    /// rusage CPU exceeds the main thread's on-CPU time: parallel work or work spread over
    /// processes; no split.
    Parallel,
    /// No schedstat (`--minimal`, or unreadable): no split.
    Unavailable,
}

impl Basis {
    /// The name in `batch.json`.
    pub fn name(self) -> &'static str {
        match self {
            Basis::Schedstat => "schedstat",
            Basis::Parallel => "parallel",
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
}
serialize_struct!(Evidence {
    read_bytes,
    block_in,
    major_faults,
    voluntary_switches,
    psi_io_some_us
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
    /// Extra on-CPU time of the main thread (schedstat); `null` unless split.
    pub cpu_ns: Option<i64>,
    /// Extra time waiting for a CPU; `null` unless split.
    pub runqueue_ns: Option<i64>,
    /// Extra time off CPU and not waiting for one (I/O, sleeps, page faults); `null` unless
    /// split. `cpu_ns + runqueue_ns + blocked_ns == wall_ns`.
    pub blocked_ns: Option<i64>,
    /// Extra rusage CPU (user + sys, all threads and waited-for descendants).
    pub rusage_cpu_ns: Option<i64>,
    /// Extra rusage system time (tick-sampled split).
    pub sys_us: Option<i64>,
    /// What else the first run did more.
    pub evidence: Evidence,
}
serialize_struct!(FirstPenalty {
    first_index,
    reference_index,
    reference,
    first_wall_ns,
    reference_wall_ns,
    basis,
    wall_ns,
    cpu_ns,
    runqueue_ns,
    blocked_ns,
    rusage_cpu_ns,
    sys_us,
    evidence
});

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

fn minus(a: Option<i64>, b: Option<i64>) -> Option<i64> {
    Some(a? - b?)
}

/// The penalty of `first` over `reference`. `None` when either wall time is unknown.
pub fn first_penalty(first: &RunFigures, reference: &RunFigures) -> Option<FirstPenalty> {
    let (first_wall, reference_wall) = (first.wall_ns?, reference.wall_ns?);
    let basis = first
        .not_decomposable()
        .or_else(|| reference.not_decomposable())
        .unwrap_or(Basis::Schedstat);
    let split = basis == Basis::Schedstat;
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
        },
    })
}

/// A batch's first-run penalty, or why it has none: `first` is the run with role `first`,
/// `warm` the counted warm runs' rows, `cold_every_run` whether a cold action preceded every
/// counted run (then no run is warm).
pub fn batch_penalty(
    first: Option<&FirstRun>,
    warm: &(impl WarmSeries + ?Sized),
    cold_every_run: bool,
) -> Result<FirstPenalty, &'static str> {
    if cold_every_run {
        return Err("a cold action before every counted run: there is no warm series");
    }
    let first = first.ok_or("no first run")?;
    if !first.counted {
        return Err("the first run was rejected");
    }
    let (reference, n) = reference_run(warm).ok_or("no warm run to compare with")?;
    let mut penalty = first_penalty(&RunFigures::of(&first.row), &RunFigures::of(&reference))
        .ok_or("the first run has no wall time")?;
    if n % 2 == 0 {
        penalty.reference = "lower middle";
    }
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

    #[test]
    fn the_parts_add_up_to_the_penalty() {
        let first = run(0, 305, 2, 3, 2);
        let warm = run(2, 5, 1, 1, 1);
        let p = first_penalty(&first, &warm).unwrap();
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
    fn parallel_work_is_not_split_and_has_no_negative_part() {
        // Two threads: 600 ms of CPU in 310 ms of wall time, the main thread on CPU 300 ms.
        let first = run(0, 310, 300, 0, 600);
        let warm = run(1, 10, 5, 0, 5);
        let p = first_penalty(&first, &warm).unwrap();
        assert_eq!(p.basis, Basis::Parallel);
        assert_eq!((p.cpu_ns, p.runqueue_ns, p.blocked_ns), (None, None, None));
        assert_eq!(p.rusage_cpu_ns, Some(595_000_000));
        // Also when only the reference run was parallel.
        let p = first_penalty(&warm, &first).unwrap();
        assert_eq!(p.basis, Basis::Parallel);
    }

    #[test]
    fn without_schedstat_there_is_no_split() {
        let mut first = run(0, 20, 5, 0, 5);
        first.on_cpu_ns = None;
        let p = first_penalty(&first, &run(1, 10, 5, 0, 5)).unwrap();
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
        let odd_penalty = batch_penalty(Some(&first), &odd, false).unwrap();
        assert_eq!((odd_penalty.reference, odd_penalty.wall_ns), ("median", 30));
        let even_penalty = batch_penalty(Some(&first), &even, false).unwrap();
        assert_eq!(
            (even_penalty.reference, even_penalty.reference_index),
            ("lower middle", 4)
        );
    }
}
