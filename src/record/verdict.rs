//! The verdict on a batch's first run, decided once from the batch's records and stored in
//! `batch.json` (`verdict`): each counted run's role by its evidence, the reference warm set
//! (disturbed runs left out), and whether the first run has a penalty, in which states, with the
//! figures that made it stand out. Every view renders this; none decides anything of its own.
//! Pure: figures in, a verdict out.
//!
//! A penalty is found by its evidence, state by state, never by the wall time alone
//! (docs/reading-the-verdict.md gives the rules and their error rates):
//! - **storage**: the first run read from storage ([`STORAGE_BYTES`] more than any reference
//!   warm run) and its uninterruptible time (the tree's D, else the main thread's blocked time)
//!   is above the slowest warm run's by more than the warm runs' spread and [`D_FLOOR_NS`];
//! - **kernel CPU**: its system time is above the warm runs' largest by more than their spread
//!   and two scheduler ticks (rusage's split is tick-sampled);
//! - **time**: its wall time less its wait for a CPU and the hypervisor's steal stands out of the warm runs' by
//!   [`crate::record::verdict::penalty::RULE`] (median + 3 × (slowest − median)).
//!
//! Waiting for a CPU is the machine's contention, not a cold penalty: it is said beside the
//! verdict and taken out of the time test.
//!
//! Its figures are its own submodules: [`penalty`], the first run against the reference warm
//! run split by state (and the wall-time rule), and [`tree_penalty`], the same split by the
//! whole process tree's states.
#![forbid(unsafe_code)]

pub mod penalty;
pub mod tree_penalty;

use crate::record::anomaly::RunAnomaly;
use crate::record::columns::{FirstRun, Row, WarmSeries, INDEX, ON_CPU_NS, POSITION, TREE};
use crate::record::metrics::metric_index;
use crate::record::stats::Summary;
use crate::record::verdict::penalty::{batch_penalty, stands_out, FirstPenalty};
use crate::serialize_struct;
use serde_json::Value;

/// Bytes read from storage above which a counted run after the first started cold.
pub const COLD_READ_BYTES: f64 = 1048576.0;
/// Bytes the first run must read from storage beyond every reference warm run for its
/// uninterruptible time to be called storage.
pub const STORAGE_BYTES: f64 = 262144.0;
/// The least uninterruptible time above the slowest warm run's that is called a storage
/// penalty, whatever the warm runs' spread.
pub const D_FLOOR_NS: f64 = 1_000_000.0;
/// Scheduler ticks of system time above the warm runs' largest that a kernel-CPU penalty needs
/// (rusage's user/sys split is sampled at the tick).
pub const SYS_TICKS: f64 = 2.0;
/// Reference warm runs needed for any test (the wall-time rule's: one run has no spread).
pub const MIN_WARM_RUNS: u64 = crate::record::verdict::penalty::MIN_WARM_RUNS as u64;
/// Reference warm runs the kernel-CPU and time tests need: with fewer, a loaded machine's noise
/// (another process's burst, two busy loops starting) passed their thresholds in 17 of 210 warm
/// batches of `-n 5`, one of them 10.6 times its slowest warm run (docs/reading-the-verdict.md),
/// while a storage penalty has its own evidence.
pub const MIN_WARM_RUNS_WITHOUT_EVIDENCE: u64 = 9;

/// What a verdict can be (`verdict.kind`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// The first run stands out of the warm runs in at least one state.
    Penalty,
    /// Nothing of the first run stands out of the warm runs at this count.
    NotDistinguishable,
    /// Every counted run started cold: no warm series; cold runs are compared with each other.
    EveryRunCold,
    /// Warm-ups ran before the counted runs: no counted run was first.
    NoFirstRun,
    /// The first run was rejected.
    FirstRejected,
    /// Fewer than [`MIN_WARM_RUNS`] reference warm runs.
    TooFewWarmRuns,
    /// `--cold-cycles`: the cycles' penalty is the batch's (`cycles.penalty`).
    Cycles,
}

impl Kind {
    /// The name in `batch.json`.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Penalty => "penalty",
            Kind::NotDistinguishable => "not_distinguishable",
            Kind::EveryRunCold => "every_run_cold",
            Kind::NoFirstRun => "no_first_run",
            Kind::FirstRejected => "first_rejected",
            Kind::TooFewWarmRuns => "too_few_warm_runs",
            Kind::Cycles => "cycles",
        }
    }

    fn named(name: &str) -> Option<Kind> {
        [
            Kind::Penalty,
            Kind::NotDistinguishable,
            Kind::EveryRunCold,
            Kind::NoFirstRun,
            Kind::FirstRejected,
            Kind::TooFewWarmRuns,
            Kind::Cycles,
        ]
        .into_iter()
        .find(|k| k.name() == name)
    }
}

impl serde::Serialize for Kind {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

/// A run named by the verdict, and why (`left out: …`, `cold: …`).
#[derive(Clone, Debug, PartialEq)]
pub struct RunNote {
    /// The run's index.
    pub index: u64,
    /// Why, in a few words.
    pub why: String,
}
serialize_struct!(RunNote { index, why });

/// One state's test: the first run's figure against the reference warm runs'.
#[derive(Clone, Debug, PartialEq)]
pub struct StateTest {
    /// `storage`, `kernel_cpu` or `time`.
    pub state: &'static str,
    /// The first run's figure (ns).
    pub first_ns: f64,
    /// The warm runs' median, largest and spread (largest − smallest) of it (ns).
    pub warm_median_ns: f64,
    /// See [`StateTest::warm_median_ns`].
    pub warm_max_ns: f64,
    /// See [`StateTest::warm_median_ns`].
    pub warm_spread_ns: f64,
    /// What the first run had to exceed (ns).
    pub threshold_ns: f64,
    /// The evidence the state needs beside its time was there: for storage, the bytes read;
    /// for kernel CPU and time, which have no evidence of their own, at least
    /// [`MIN_WARM_RUNS_WITHOUT_EVIDENCE`] reference warm runs.
    pub evidence: bool,
    /// It stands out: above the threshold, with its evidence.
    pub stands_out: bool,
}
serialize_struct!(StateTest {
    state,
    first_ns,
    warm_median_ns,
    warm_max_ns,
    warm_spread_ns,
    threshold_ns,
    evidence,
    stands_out
});

/// The verdict (`batch.json`'s `verdict`).
#[derive(Clone, Debug, PartialEq)]
pub struct Verdict {
    /// What it is.
    pub kind: Kind,
    /// Counted runs, the first included.
    pub counted: u64,
    /// The first run's index (`None`: no run was first).
    pub first_index: Option<u64>,
    /// Runs in the reference warm set (or, every run cold, the cold runs after the first).
    pub reference_runs: u64,
    /// Warm runs left out of the reference, and why.
    pub left_out: Vec<RunNote>,
    /// Counted runs after the first that started cold, and what made them so.
    pub cold_runs: Vec<RunNote>,
    /// The tests, in order: storage, kernel CPU, time.
    pub tests: Vec<StateTest>,
    /// The states that stand out.
    pub states: Vec<&'static str>,
    /// The first run's wall time.
    pub first_wall_ns: Option<f64>,
    /// The reference runs' fastest, median and slowest wall time.
    pub reference_wall_ns: Option<[f64; 3]>,
    /// First minus the reference run with the median wall time (`first_penalty.wall_ns`).
    pub penalty_ns: Option<f64>,
    /// Extra time the first run waited for a CPU over that run: contention, not a penalty.
    pub contention_ns: Option<f64>,
    /// Bytes the first run read from storage.
    pub first_read_bytes: Option<f64>,
    /// The most any reference run read.
    pub reference_read_bytes: Option<f64>,
    /// What would decide a verdict that cannot be given (`-n 10`, `--cold-cycles 5`).
    pub decide: Option<String>,
    /// Why there is no test (the kinds other than penalty and not distinguishable).
    pub why: Option<String>,
    /// Files the first run created that every later run left as written: caches it wrote
    /// (`first_cold_cause.wrote_caches`; `None`: not looked for). Set beside the decision,
    /// which it does not change: it says what else the first run did.
    pub first_wrote_caches: Option<u64>,
}
serialize_struct!(Verdict {
    kind,
    counted,
    first_index,
    reference_runs,
    left_out,
    cold_runs,
    tests,
    states,
    first_wall_ns,
    reference_wall_ns,
    penalty_ns,
    contention_ns,
    first_read_bytes,
    reference_read_bytes,
    decide,
    why,
    first_wrote_caches
});

/// One counted run's figures that the verdict uses.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Figures {
    /// Index in the batch.
    pub index: u64,
    /// Wall time.
    pub wall_ns: Option<f64>,
    /// Waiting for a CPU: the tree's Q, else the main thread's run-queue wait.
    pub queued_ns: Option<f64>,
    /// Uninterruptible: the tree's D, else the main thread's blocked time (wall − on CPU −
    /// run queue).
    pub blocked_ns: Option<f64>,
    /// rusage system time, ns.
    pub sys_ns: Option<f64>,
    /// The hypervisor's steal in the tree's turns on a CPU (`tree.steal_ns`): in the wall
    /// time, not the command's.
    pub steal_ns: Option<f64>,
    /// Bytes read from storage (`/proc/PID/io`, else rusage blocks × 512).
    pub read_bytes: Option<f64>,
    /// A cold action came right before it (role `cold`).
    pub cold_action: bool,
}

impl Figures {
    /// The figures of a row.
    pub fn of(row: &Row) -> Figures {
        let at = |name: &str| row.get(metric_index(name));
        let wall = at("wall_ns");
        let tree = |k: usize| row.get(TREE + k);
        let main_blocked = (|| Some(wall? - row.get(ON_CPU_NS)? - at("runqueue_wait_ns")?))();
        Figures {
            index: row.get_u64(INDEX).unwrap_or(0),
            wall_ns: wall,
            queued_ns: tree(1).or(at("runqueue_wait_ns")),
            blocked_ns: tree(2).or(main_blocked),
            sys_ns: at("sys_us").map(|us| us * 1000.0),
            steal_ns: tree(8),
            read_bytes: at("read_bytes").or(at("block_in").map(|b| b * 512.0)),
            cold_action: row.get(POSITION) == Some(0.0),
        }
    }

    /// The figures of a record read back as JSON (`runs.jsonl`).
    pub fn of_json(record: &Value) -> Figures {
        let num = |path: &[&str]| {
            path.iter()
                .try_fold(record, |v, k| v.get(k))
                .and_then(Value::as_f64)
        };
        let wall = num(&["wall_ns"]);
        let rq = num(&["sched", "runqueue_wait_ns"]);
        let on_cpu = num(&["sched", "on_cpu_ns"]);
        Figures {
            index: num(&["index"]).unwrap_or(0.0) as u64,
            wall_ns: wall,
            queued_ns: num(&["tree", "queued_ns"]).or(rq),
            blocked_ns: num(&["tree", "uninterruptible_ns"]).or((|| Some(wall? - on_cpu? - rq?))()),
            sys_ns: num(&["rusage", "sys_us"]).map(|us| us * 1000.0),
            steal_ns: num(&["tree", "steal_ns"]),
            read_bytes: num(&["child_io", "read_bytes"])
                .or(num(&["rusage", "block_in"]).map(|b| b * 512.0)),
            cold_action: record.get("role").and_then(Value::as_str) == Some("cold"),
        }
    }
}

/// What the batch was, beside its runs' figures.
#[derive(Clone, Copy, Debug, Default)]
pub struct Setting {
    /// Warm-ups ran before the counted runs.
    pub warmups: u64,
    /// `--cold-cycles`.
    pub cycles: bool,
    /// A `--prepare` command ran before every run.
    pub prepare: bool,
    /// A cold action came before every counted run.
    pub cold_every_run: bool,
    /// A cold action came right before the first counted run (`--cold-first-only`, or before
    /// every run): after warm-ups too, that run is first.
    pub cold_first: bool,
    /// The scheduler tick, ns (rusage's user/sys split is sampled at it).
    pub tick_ns: u64,
}

/// The first run as the verdict sees it.
#[derive(Clone, Copy, Debug)]
pub struct First {
    /// Its figures.
    pub figures: Figures,
    /// It is in the statistics.
    pub counted: bool,
}

/// The verdict on a batch: `first` (the run with role `first`), `rest` (every counted run
/// after it, in order), the anomalies found over the series. Where warm-ups ran and no cold
/// action made the first counted run first, it is compared as the others are.
pub fn decide(
    first: Option<First>,
    rest: &[Figures],
    anomalies: &[RunAnomaly],
    setting: Setting,
) -> Verdict {
    let apart = first.filter(|_| setting.warmups == 0 || setting.cold_first);
    // References, not copies: a batch of 8,000 runs holds its figures once.
    let not_apart = first.filter(|f| f.counted && apart.is_none());
    let compared: Vec<&Figures> = not_apart.iter().map(|f| &f.figures).chain(rest).collect();
    let mut v = Verdict {
        counted: compared.len() as u64 + u64::from(apart.is_some_and(|f| f.counted)),
        first_index: apart.map(|f| f.figures.index),
        first_wall_ns: apart.and_then(|f| f.figures.wall_ns),
        first_read_bytes: apart.and_then(|f| f.figures.read_bytes),
        ..Verdict::empty()
    };
    v.cold_runs = compared
        .iter()
        .filter_map(|r| {
            started_cold(r, setting).map(|why| RunNote {
                index: r.index,
                why,
            })
        })
        .collect();
    let cold: Vec<u64> = v.cold_runs.iter().map(|c| c.index).collect();
    v.left_out = left_out(anomalies, &cold);
    let excluded =
        |r: &&Figures| cold.contains(&r.index) || v.left_out.iter().any(|l| l.index == r.index);
    let reference: Vec<&Figures> = compared.iter().copied().filter(|r| !excluded(r)).collect();
    v.reference_runs = reference.len() as u64;
    let walls: Vec<f64> = reference.iter().filter_map(|r| r.wall_ns).collect();
    v.reference_wall_ns = Summary::of(&walls).map(|s| [s.min, s.median, s.max]);
    if setting.cycles {
        return unavailable(
            v,
            Kind::Cycles,
            "--cold-cycles: the cycles' penalty is measured",
        );
    }
    if first.is_some_and(|f| !f.counted) {
        return unavailable(v, Kind::FirstRejected, "the first run was rejected");
    }
    if !compared.is_empty() && compared.iter().all(|r| cold.contains(&r.index)) {
        let cold: Vec<f64> = compared.iter().filter_map(|r| r.wall_ns).collect();
        v.reference_runs = cold.len() as u64;
        v.reference_wall_ns = Summary::of(&cold).map(|s| [s.min, s.median, s.max]);
        return unavailable(v, Kind::EveryRunCold, "every counted run started cold");
    }
    let Some(first) = apart else {
        let why = match setting.warmups {
            0 => "no run was counted".to_string(),
            n => format!(
                "{n} warm-up{} ran before the counted runs: no counted run was first",
                if n == 1 { "" } else { "s" }
            ),
        };
        return unavailable(v, Kind::NoFirstRun, &why);
    };
    if (reference.len() as u64) < MIN_WARM_RUNS {
        v.decide = Some(format!("-n {}", v.counted + MIN_WARM_RUNS));
        return unavailable(v, Kind::TooFewWarmRuns, "too few warm runs to tell");
    }
    test_first(&mut v, &first.figures, &reference, setting);
    // Over the median reference run; [`of_rows`] puts the split's own figure in its place.
    v.penalty_ns = v
        .first_wall_ns
        .zip(v.reference_wall_ns)
        .map(|(first, [_, median, _])| first - median);
    v
}

fn unavailable(mut v: Verdict, kind: Kind, why: &str) -> Verdict {
    v.kind = kind;
    v.why = Some(why.to_string());
    v
}

/// A run's `why` when coldtrace's own cold action made it cold (not its own evidence).
const COLD_ACTION_BEFORE: &str = "coldtrace's cold action came before it";
/// The first run's extra wait for a CPU below which it is not worth a sentence: a few
/// scheduler ticks' worth on any busy machine.
const CONTENTION_SAID_NS: f64 = 1e6;

/// Why a counted run after the first started cold: a cold action before it, or
/// [`COLD_READ_BYTES`] read from storage (what made it so, when coldtrace knows).
fn started_cold(r: &Figures, setting: Setting) -> Option<String> {
    if r.cold_action || setting.cold_every_run {
        return Some(COLD_ACTION_BEFORE.into());
    }
    let read = r.read_bytes.filter(|&b| b >= COLD_READ_BYTES)?;
    let by = if setting.prepare {
        "after --prepare"
    } else {
        "something outside coldtrace evicted its pages (another process, or reclaim)"
    };
    Some(format!("read {} from storage; {by}", bytes_words(read)))
}

/// `3.1 MiB`, `12 KiB`, `0 B`: a byte count in the verdict's own words (it is stored; the
/// views have their own units for the figures they lay out).
fn bytes_words(bytes: f64) -> String {
    match bytes.abs() {
        b if b >= 1048576.0 => format!("{:.1} MiB", bytes / 1048576.0),
        b if b >= 1024.0 => format!("{:.0} KiB", bytes / 1024.0),
        _ => format!("{bytes:.0} B"),
    }
}

/// The warm runs an anomaly flagged, once each, other than those already called cold. A read
/// from storage smaller than [`STORAGE_BYTES`] above the warm median leaves no run out: the
/// first run's own read is not called storage below that, and one 4 KiB block read by a warm
/// run (a directory block another process's work evicted) took a dentry-cold `du`'s reference
/// below the 9 warm runs its kernel CPU is claimed from.
fn left_out(anomalies: &[RunAnomaly], cold: &[u64]) -> Vec<RunNote> {
    let mut notes: Vec<RunNote> = Vec::new();
    for a in anomalies {
        if a.anomaly.kind == "not_cold" || cold.contains(&a.index) {
            continue;
        }
        let blocks_read = (a.anomaly.kind, a.anomaly.metric) == ("storage_reads", "block_in");
        if blocks_read && (a.anomaly.value - a.anomaly.reference) * 512.0 < STORAGE_BYTES {
            continue;
        }
        if notes.iter().any(|n| n.index == a.index) {
            continue;
        }
        let (x, median) = (a.anomaly.value, a.anomaly.reference);
        let why = match (a.anomaly.kind, a.anomaly.metric) {
            ("cached_before_fell", _) => format!(
                "it started with {} fewer of the watched files cached than the run before left",
                bytes_words(median - x)
            ),
            (_, "major_faults") => {
                format!("it took {x:.0} major faults, the warm median {median:.0}")
            }
            _ => format!(
                "it read {} from storage, the warm median {}",
                bytes_words(x * 512.0),
                bytes_words(median * 512.0)
            ),
        };
        notes.push(RunNote {
            index: a.index,
            why,
        });
    }
    notes
}

/// The three tests of the first run against the reference warm runs.
fn test_first(v: &mut Verdict, first: &Figures, reference: &[&Figures], setting: Setting) {
    let reads: Vec<f64> = reference.iter().filter_map(|r| r.read_bytes).collect();
    v.reference_read_bytes = reads.iter().copied().reduce(f64::max);
    let read_more = match (first.read_bytes, v.reference_read_bytes) {
        (Some(f), Some(w)) => f - w >= STORAGE_BYTES,
        (Some(f), None) => f >= STORAGE_BYTES,
        _ => false,
    };
    let column = |get: fn(&Figures) -> Option<f64>| -> Vec<f64> {
        reference.iter().filter_map(|r| get(r)).collect()
    };
    let above_max = |state, first: Option<f64>, warm: Vec<f64>, floor: f64, evidence| {
        let s = Summary::of(&warm)?;
        let threshold = s.max + (s.max - s.min).max(floor);
        let first = first?;
        Some(StateTest {
            state,
            first_ns: first,
            warm_median_ns: s.median,
            warm_max_ns: s.max,
            warm_spread_ns: s.max - s.min,
            threshold_ns: threshold,
            evidence,
            stands_out: evidence && first > threshold,
        })
    };
    let storage = above_max(
        "storage",
        first.blocked_ns,
        column(|r| r.blocked_ns),
        D_FLOOR_NS,
        read_more,
    );
    let sys_floor = SYS_TICKS * setting.tick_ns as f64;
    let enough = reference.len() as u64 >= MIN_WARM_RUNS_WITHOUT_EVIDENCE;
    let sys = column(|r| r.sys_ns);
    let kernel = above_max("kernel_cpu", first.sys_ns, sys, sys_floor, enough);
    // The wait for a CPU and the hypervisor's steal are the machine's, not the command's.
    let uncontended =
        |r: &Figures| Some(r.wall_ns? - r.queued_ns.unwrap_or(0.0) - r.steal_ns.unwrap_or(0.0));
    let warm = reference.iter().filter_map(|r| uncontended(r));
    let time = time_test(uncontended(first), warm, enough);
    v.tests = [storage, kernel, time].into_iter().flatten().collect();
    v.states = v
        .tests
        .iter()
        .filter(|t| t.stands_out)
        .map(|t| t.state)
        .collect();
    v.kind = if v.states.is_empty() {
        v.decide = Some(format!(
            "-n {}, or --cold-cycles 5",
            (v.counted * 2).max(10)
        ));
        Kind::NotDistinguishable
    } else {
        Kind::Penalty
    };
}

/// The time test: the first run's wall time less its wait for a CPU against the warm runs' by
/// [`crate::record::verdict::penalty::RULE`].
fn time_test(
    first: Option<f64>,
    warm: impl Iterator<Item = f64>,
    enough: bool,
) -> Option<StateTest> {
    let warm: Vec<f64> = warm.collect();
    let s = Summary::of(&warm)?;
    let first = first?;
    let threshold = stands_out(first, &warm).threshold_wall_ns?;
    Some(StateTest {
        state: "time",
        first_ns: first,
        warm_median_ns: s.median,
        warm_max_ns: s.max,
        warm_spread_ns: s.max - s.min,
        threshold_ns: threshold,
        evidence: enough,
        stands_out: enough && first > threshold,
    })
}

/// The verdict and the first run's split over the reference warm run, from the batch's rows:
/// `first` (role `first`), `rest` (every counted run after it), `anomalies` over the series,
/// `no_tree` why the batch has no tree source.
pub fn of_rows(
    first: Option<&FirstRun>,
    rest: &(impl WarmSeries + ?Sized),
    anomalies: &[RunAnomaly],
    setting: Setting,
    tick: crate::measure::tick::Tick,
    no_tree: Option<&str>,
) -> (Verdict, Result<FirstPenalty, &'static str>) {
    let mut figures = Vec::new();
    rest.each_row(&mut |row| figures.push(Figures::of(row)));
    let verdict = decide(
        first.map(|f| First {
            figures: Figures::of(&f.row),
            counted: f.counted,
        }),
        &figures,
        anomalies,
        setting,
    );
    let excluded: Vec<u64> = verdict
        .left_out
        .iter()
        .chain(&verdict.cold_runs)
        .map(|n| n.index)
        .collect();
    let reference = Reference { rest, excluded };
    let mut split = match verdict.kind {
        Kind::Penalty | Kind::NotDistinguishable => batch_penalty(first, &reference, tick, no_tree),
        _ => Err(verdict_why(&verdict)),
    };
    if let Ok(p) = &mut split {
        p.stands_out.significant = verdict.kind == Kind::Penalty;
    }
    let mut verdict = verdict;
    if let Ok(p) = &split {
        verdict.penalty_ns = Some(p.wall_ns as f64);
        verdict.contention_ns = Some(match (p.tree.queued_ns, p.runqueue_ns) {
            (Some(q), _) | (None, Some(q)) => q as f64,
            (None, None) => 0.0,
        });
    }
    (verdict, split)
}

/// `first_penalty_unavailable` for the verdicts that have no split.
fn verdict_why(v: &Verdict) -> &'static str {
    match v.kind {
        Kind::Cycles => crate::record::cycles::FIRST_IS_A_CYCLE,
        Kind::FirstRejected => "the first run was rejected",
        Kind::NoFirstRun => "warm-ups ran before the counted runs: no counted run was first",
        Kind::EveryRunCold => "every counted run started cold: there is no warm series",
        _ => "no warm run to compare with",
    }
}

/// The counted runs after the first, less those the verdict left out of the reference.
struct Reference<'a, W: WarmSeries + ?Sized> {
    rest: &'a W,
    excluded: Vec<u64>,
}

impl<W: WarmSeries + ?Sized> WarmSeries for Reference<'_, W> {
    fn each_row(&self, f: &mut dyn FnMut(&Row)) {
        self.rest.each_row(&mut |row| {
            if !row.index().is_some_and(|i| self.excluded.contains(&i)) {
                f(row)
            }
        });
    }
}

impl Verdict {
    /// The first run's extra wait for a CPU over the reference run, where it is worth saying
    /// (1 ms or more): the machine's contention, never a cold penalty.
    pub fn contention_to_say(&self) -> Option<f64> {
        self.contention_ns.filter(|&ns| ns >= CONTENTION_SAID_NS)
    }

    /// The counted runs found cold by their own evidence (a read from storage), not by a cold
    /// action of coldtrace's before them.
    pub fn cold_by_evidence(&self) -> impl Iterator<Item = &RunNote> {
        self.cold_runs
            .iter()
            .filter(|c| c.why != COLD_ACTION_BEFORE)
    }

    /// What made every cold run cold, when it is one thing for all of them (the words after a
    /// run's own read, e.g. "after --prepare"; "coldtrace's cold action came before each").
    pub fn one_cold_cause(&self) -> Option<String> {
        let made = |c: &RunNote| {
            c.why
                .rsplit("; ")
                .next()
                .unwrap_or(&c.why)
                .replace("before it", "before each")
        };
        let first = made(self.cold_runs.first()?);
        self.cold_runs
            .iter()
            .all(|c| made(c) == first)
            .then_some(first)
    }

    /// The counted runs the figures beside the first run leave out: the table's warm (or
    /// cold) columns, `summary.*.warm`, compare's ratios and the exports' summaries are over
    /// the counted runs the verdict compares — the runs after the first where it keeps the
    /// first apart, every counted run where none was first — less those that started cold,
    /// unless every one did (then they are the cold runs, compared with each other).
    pub fn uncovered(&self) -> Vec<u64> {
        let cold = self
            .cold_runs
            .iter()
            .filter(|_| self.kind != Kind::EveryRunCold);
        self.first_index
            .into_iter()
            .chain(cold.map(|c| c.index))
            .collect()
    }

    /// The fields of a verdict that its one line says, as a report's row reads them from
    /// `batch.json` (`None`: no such kind). `first` is the first run's read bytes and wall
    /// time.
    pub fn brief(
        kind: &str,
        counted: u64,
        penalty_ns: Option<f64>,
        states: &[String],
        (first_read_bytes, first_wall_ns): (Option<f64>, Option<f64>),
    ) -> Option<Verdict> {
        let states = ["storage", "kernel_cpu", "time"]
            .into_iter()
            .filter(|s| states.iter().any(|t| t == s))
            .collect();
        Some(Verdict {
            kind: Kind::named(kind)?,
            counted,
            penalty_ns,
            states,
            first_read_bytes,
            first_wall_ns,
            ..Verdict::empty()
        })
    }

    /// A verdict with nothing decided: what [`decide`] starts from.
    fn empty() -> Verdict {
        Verdict {
            kind: Kind::NotDistinguishable,
            counted: 0,
            first_index: None,
            reference_runs: 0,
            left_out: Vec::new(),
            cold_runs: Vec::new(),
            tests: Vec::new(),
            states: Vec::new(),
            first_wall_ns: None,
            reference_wall_ns: None,
            penalty_ns: None,
            contention_ns: None,
            first_read_bytes: None,
            reference_read_bytes: None,
            decide: None,
            why: None,
            first_wrote_caches: None,
        }
    }

    /// A verdict read back from `batch.json`'s `verdict` (`None`: absent, or not one).
    pub fn from_json(v: &Value) -> Option<Verdict> {
        let f = |k: &str| v.get(k).and_then(Value::as_f64);
        let s = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
        let notes = |k: &str| -> Vec<RunNote> {
            v.get(k).and_then(Value::as_array).map_or(Vec::new(), |a| {
                a.iter()
                    .filter_map(|n| {
                        Some(RunNote {
                            index: n.get("index")?.as_u64()?,
                            why: n.get("why")?.as_str()?.to_owned(),
                        })
                    })
                    .collect()
            })
        };
        let tests: Vec<StateTest> = v
            .get("tests")
            .and_then(Value::as_array)
            .map_or(Vec::new(), |a| {
                a.iter().filter_map(test_from_json).collect()
            });
        let states = tests
            .iter()
            .filter(|t| t.stands_out)
            .map(|t| t.state)
            .collect();
        let wall = v.get("reference_wall_ns").and_then(Value::as_array);
        let three = wall.and_then(|w| {
            Some([
                w.first()?.as_f64()?,
                w.get(1)?.as_f64()?,
                w.get(2)?.as_f64()?,
            ])
        });
        Some(Verdict {
            kind: Kind::named(v.get("kind")?.as_str()?)?,
            counted: v.get("counted").and_then(Value::as_u64).unwrap_or(0),
            first_index: v.get("first_index").and_then(Value::as_u64),
            reference_runs: v.get("reference_runs").and_then(Value::as_u64).unwrap_or(0),
            left_out: notes("left_out"),
            cold_runs: notes("cold_runs"),
            tests,
            states,
            first_wall_ns: f("first_wall_ns"),
            reference_wall_ns: three,
            penalty_ns: f("penalty_ns"),
            contention_ns: f("contention_ns"),
            first_read_bytes: f("first_read_bytes"),
            reference_read_bytes: f("reference_read_bytes"),
            decide: s("decide"),
            why: s("why"),
            first_wrote_caches: v.get("first_wrote_caches").and_then(Value::as_u64),
        })
    }
}

fn test_from_json(t: &Value) -> Option<StateTest> {
    let f = |k: &str| t.get(k).and_then(Value::as_f64);
    let state = ["storage", "kernel_cpu", "time"]
        .into_iter()
        .find(|s| t.get("state").and_then(Value::as_str) == Some(s))?;
    Some(StateTest {
        state,
        first_ns: f("first_ns")?,
        warm_median_ns: f("warm_median_ns")?,
        warm_max_ns: f("warm_max_ns")?,
        warm_spread_ns: f("warm_spread_ns")?,
        threshold_ns: f("threshold_ns")?,
        evidence: t.get("evidence").and_then(Value::as_bool)?,
        stands_out: t.get("stands_out").and_then(Value::as_bool)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: f64 = 1e6;

    /// A run: wall and uninterruptible ms, bytes read.
    fn run(index: u64, wall_ms: f64, d_ms: f64, read: f64) -> Figures {
        Figures {
            index,
            wall_ns: Some(wall_ms * MS),
            queued_ns: Some(0.0),
            blocked_ns: Some(d_ms * MS),
            sys_ns: Some(4.0 * MS),
            read_bytes: Some(read),
            steal_ns: None,
            cold_action: false,
        }
    }

    fn first(figures: Figures) -> Option<First> {
        Some(First {
            figures,
            counted: true,
        })
    }

    fn setting() -> Setting {
        Setting {
            tick_ns: 4_000_000,
            ..Setting::default()
        }
    }

    /// Four warm runs of 100–140 ms (CPU noise of ±20 ms), none reading from storage.
    fn noisy_warm() -> Vec<Figures> {
        [100.0, 140.0, 110.0, 125.0]
            .iter()
            .enumerate()
            .map(|(i, &w)| run(i as u64 + 1, w, 0.3 + i as f64 * 0.05, 0.0))
            .collect()
    }

    #[test]
    fn a_storage_wait_hidden_in_cpu_noise_is_found_by_its_evidence() {
        // +31 ms over the median, inside the warm runs' range; 86 MiB read, +70 ms waiting.
        let cold = run(0, 148.0, 70.0, 86.0 * 1048576.0);
        let v = decide(first(cold), &noisy_warm(), &[], setting());
        assert_eq!(v.kind, Kind::Penalty, "{v:?}");
        assert_eq!(v.states, ["storage"]);
        let time = v.tests.iter().find(|t| t.state == "time").unwrap();
        assert!(
            !time.stands_out,
            "the wall time alone stays inside the noise"
        );
        // The same read without the wait (it came from a fast device, or was overlapped).
        let fast = run(0, 148.0, 0.4, 86.0 * 1048576.0);
        let v = decide(first(fast), &noisy_warm(), &[], setting());
        assert_eq!(v.kind, Kind::NotDistinguishable, "{v:?}");
        assert_eq!(v.decide.as_deref(), Some("-n 10, or --cold-cycles 5"));
        // A wait without a storage read (a page lock, mmap_lock) is not called storage.
        let locked = run(0, 148.0, 70.0, 0.0);
        let v = decide(first(locked), &noisy_warm(), &[], setting());
        assert!(!v.states.contains(&"storage"), "{v:?}");
    }

    /// Nine warm runs of 100–140 ms, none reading from storage.
    fn many_warm() -> Vec<Figures> {
        (0..9)
            .map(|i| run(i + 1, 100.0 + 5.0 * i as f64, 0.3, 0.0))
            .collect()
    }

    #[test]
    fn waiting_for_a_cpu_is_contention_not_a_penalty() {
        let mut busy = run(0, 300.0, 0.3, 0.0);
        busy.queued_ns = Some(180.0 * MS);
        let v = decide(first(busy), &many_warm(), &[], setting());
        assert_eq!(v.kind, Kind::NotDistinguishable, "{v:?}");
        let mut slow = busy;
        slow.queued_ns = Some(0.0);
        let v = decide(first(slow), &many_warm(), &[], setting());
        assert_eq!(
            (v.kind, v.states.as_slice()),
            (Kind::Penalty, &["time"][..])
        );
        // Four warm runs are too few to tell a slow first run without evidence from noise…
        let v = decide(first(slow), &noisy_warm(), &[], setting());
        assert_eq!(v.kind, Kind::NotDistinguishable, "{v:?}");
        assert_eq!(v.decide.as_deref(), Some("-n 10, or --cold-cycles 5"));
        // … even ten times the slowest of them: a warm batch beside two busy loops had one
        // 10.6 times its slowest warm run, with nothing read.
        let asleep = run(0, 1401.0, 0.3, 0.0);
        let v = decide(first(asleep), &noisy_warm(), &[], setting());
        assert_eq!(v.kind, Kind::NotDistinguishable, "{v:?}");
    }

    #[test]
    fn kernel_cpu_stands_out_beyond_two_ticks_and_the_spread() {
        let mut dentries = run(0, 120.0, 0.3, 0.0);
        dentries.sys_ns = Some(4.0 * MS + 8.0 * MS);
        let v = decide(first(dentries), &many_warm(), &[], setting());
        assert_eq!(v.kind, Kind::NotDistinguishable, "two ticks are not enough");
        dentries.sys_ns = Some(4.0 * MS + 8.5 * MS);
        let v = decide(first(dentries), &many_warm(), &[], setting());
        assert_eq!(v.states, ["kernel_cpu"], "{v:?}");
        let v = decide(first(dentries), &noisy_warm(), &[], setting());
        assert_eq!(
            v.kind,
            Kind::NotDistinguishable,
            "four warm runs are too few"
        );
    }

    #[test]
    fn a_disturbed_warm_run_is_left_out_of_the_reference_and_said_once() {
        let mut warm = noisy_warm();
        // Run #3 was slow because its pages were evicted: it would have hidden the first run.
        warm[2] = run(3, 400.0, 200.0, 0.5 * 1048576.0);
        let flagged = |kind| RunAnomaly {
            index: 3,
            anomaly: crate::record::run::Anomaly {
                kind,
                metric: "read_bytes",
                value: 1.0,
                reference: 0.0,
                rule: "",
                mapped_by: None,
            },
        };
        let anomalies = [flagged("cached_before_fell"), flagged("storage_reads")];
        let cold = run(0, 200.0, 60.0, 20.0 * 1048576.0);
        let v = decide(first(cold), &warm, &anomalies, setting());
        assert_eq!(v.left_out.len(), 1, "{v:?}");
        assert_eq!(v.left_out[0].index, 3);
        assert_eq!(v.reference_runs, 3);
        assert_eq!(v.kind, Kind::Penalty);
        let all_in = decide(first(cold), &warm, &[], setting());
        assert!(!all_in.states.contains(&"time"), "{all_in:?}");
    }

    #[test]
    fn a_warm_run_that_read_one_block_stays_in_the_reference() {
        let read = |blocks: f64| RunAnomaly {
            index: 3,
            anomaly: crate::record::run::Anomaly {
                kind: "storage_reads",
                metric: "block_in",
                value: blocks,
                reference: 0.0,
                rule: crate::record::anomaly::RULE_ABOVE_ZERO,
                mapped_by: None,
            },
        };
        let cold = run(0, 200.0, 60.0, 20.0 * 1048576.0);
        // 8 blocks of 512 B: one 4 KiB page, far below what the first run's read must be.
        let v = decide(first(cold), &many_warm(), &[read(8.0)], setting());
        assert!(v.left_out.is_empty(), "{v:?}");
        assert_eq!(v.reference_runs, 9);
        // 1 MiB is left out, and said.
        let v = decide(first(cold), &many_warm(), &[read(2048.0)], setting());
        assert_eq!(v.left_out.len(), 1, "{v:?}");
        assert!(v.left_out[0].why.contains("1.0 MiB"), "{v:?}");
        assert_eq!(v.reference_runs, 8);
    }

    #[test]
    fn runs_that_started_cold_are_labelled_so_and_all_cold_compares_cold_runs() {
        let mut rest = noisy_warm();
        rest[1].read_bytes = Some(3.0 * 1048576.0);
        let v = decide(first(run(0, 150.0, 40.0, 5e6)), &rest, &[], setting());
        assert_eq!(v.cold_runs.len(), 1);
        assert_eq!(v.cold_runs[0].index, 2);
        assert!(v.cold_runs[0].why.contains("3.0 MiB"), "{v:?}");
        assert_eq!(v.reference_runs, 3);
        // hyperfine's cold recipe: every run read from storage.
        let all: Vec<Figures> = rest
            .iter()
            .map(|r| Figures {
                read_bytes: Some(150.0 * 1048576.0),
                ..*r
            })
            .collect();
        let prepared = Setting {
            prepare: true,
            ..setting()
        };
        let v = decide(first(run(0, 150.0, 40.0, 150e6)), &all, &[], prepared);
        assert_eq!(v.kind, Kind::EveryRunCold);
        assert!(v.cold_runs[0].why.ends_with("after --prepare"), "{v:?}");
        assert_eq!(v.reference_runs, 4);
        // The figures beside the first run are over the cold runs then, and otherwise leave
        // out the one that started cold.
        assert_eq!(v.uncovered(), [0]);
        let v = decide(first(run(0, 150.0, 40.0, 5e6)), &rest, &[], setting());
        assert_eq!(v.uncovered(), [0, 2]);
        // After warm-ups no run is first: the first counted run is one of the cold runs.
        let warm_ups = Setting {
            warmups: 3,
            ..prepared
        };
        let v = decide(first(run(0, 150.0, 40.0, 150e6)), &all, &[], warm_ups);
        assert_eq!((v.kind, v.first_index), (Kind::EveryRunCold, None));
        assert_eq!((v.reference_runs, v.cold_runs.len()), (5, 5));
        assert!(v.uncovered().is_empty());
    }

    #[test]
    fn warm_ups_leave_no_first_run_and_few_warm_runs_decide_nothing() {
        let warm_ups = Setting {
            warmups: 3,
            ..setting()
        };
        let v = decide(
            first(run(3, 150.0, 40.0, 5e6)),
            &noisy_warm(),
            &[],
            warm_ups,
        );
        assert_eq!((v.kind, v.first_index), (Kind::NoFirstRun, None));
        // A cold action right before the first counted run makes it first, warm-ups or not.
        let cold_first = Setting {
            cold_first: true,
            ..warm_ups
        };
        let v = decide(
            first(run(3, 150.0, 40.0, 5e6)),
            &noisy_warm(),
            &[],
            cold_first,
        );
        assert_eq!((v.kind, v.first_index), (Kind::Penalty, Some(3)));
        let v = decide(
            first(run(0, 150.0, 40.0, 5e6)),
            &noisy_warm()[..1],
            &[],
            setting(),
        );
        assert_eq!(v.kind, Kind::TooFewWarmRuns);
        assert_eq!(v.decide.as_deref(), Some("-n 4"));
        let rejected = Some(First {
            figures: run(0, 150.0, 40.0, 5e6),
            counted: false,
        });
        assert_eq!(
            decide(rejected, &noisy_warm(), &[], setting()).kind,
            Kind::FirstRejected
        );
    }

    #[test]
    fn a_stored_verdict_reads_back_whole() {
        let cold = run(0, 148.0, 70.0, 86.0 * 1048576.0);
        let mut rest = noisy_warm();
        rest[3].read_bytes = Some(2e6);
        let v = decide(first(cold), &rest, &[], setting());
        let json = serde_json::to_value(&v).unwrap();
        assert_eq!(Verdict::from_json(&json), Some(v));
    }
}
