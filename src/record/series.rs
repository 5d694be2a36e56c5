//! One batch's runs in the order they ran, as the picture draws them: the first run, every
//! other run's wall time by kind (merged into buckets past a cap), the warm runs' wall times
//! and the first-run penalty's parts. Pure: it is filled by the reader; it never reads or draws.
//!
//! Memory is bounded by the cap, not by the batch: past [`Series::cap`] buckets, neighbouring
//! buckets are merged in pairs (each then spans twice as many runs), so a 10-million-run batch
//! holds the same few hundred buckets as a 500-run one, plus its warm wall times (8 bytes a run,
//! as the statistics need them too).
#![forbid(unsafe_code)]

/// What a run other than the first was, as the picture marks it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A warm-up: recorded, never counted.
    Warmup,
    /// A counted run after the first, nothing unusual recorded about it.
    Warm,
    /// A counted run after the first that started cold (role `cold`: a later cycle's cold
    /// run, or any run after the first when every run is made cold). Never in the warm series.
    Cold,
    /// A counted warm run flagged as disturbed (anomalies in its record or in batch.json).
    Disturbed,
    /// A run that was not counted (failed, timed out, could not start).
    Rejected,
}

impl Kind {
    /// Every kind, in the order of [`Bucket::spans`].
    pub const ALL: [Kind; 5] = [
        Kind::Warmup,
        Kind::Warm,
        Kind::Cold,
        Kind::Disturbed,
        Kind::Rejected,
    ];

    /// Its slot in [`Bucket::spans`].
    pub fn slot(self) -> usize {
        self as usize
    }

    /// The word used in legends and tooltips.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Warmup => "warm-up",
            Kind::Warm => "warm",
            Kind::Cold => "cold",
            Kind::Disturbed => "disturbed",
            Kind::Rejected => "rejected",
        }
    }
}

/// The wall times of the runs of one kind inside a bucket.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Span {
    /// The shortest, ns.
    pub low_ns: f64,
    /// The longest, ns.
    pub high_ns: f64,
    /// How many runs.
    pub runs: u64,
}

impl Span {
    fn of(wall_ns: f64) -> Span {
        Span {
            low_ns: wall_ns,
            high_ns: wall_ns,
            runs: 1,
        }
    }

    fn merge(a: Option<Span>, b: Option<Span>) -> Option<Span> {
        match (a, b) {
            (Some(a), Some(b)) => Some(Span {
                low_ns: a.low_ns.min(b.low_ns),
                high_ns: a.high_ns.max(b.high_ns),
                runs: a.runs + b.runs,
            }),
            (a, b) => a.or(b),
        }
    }
}

/// Consecutive runs (by their position in `runs.jsonl`), one span per [`Kind`].
#[derive(Clone, Debug, PartialEq)]
pub struct Bucket {
    /// Position of the bucket's first slot (0 = the first line of `runs.jsonl`).
    pub position: u64,
    /// The index of the first run in it (the record's `index`).
    pub first_index: u64,
    /// The index of the last run in it.
    pub last_index: u64,
    /// Wall times by kind, in [`Kind::ALL`] order.
    pub spans: [Option<Span>; 5],
    /// When its first and its last run started, seconds after the batch's first record's
    /// start (`None` when a record has no `uptime_s`).
    pub started_s: Option<(f64, f64)>,
}

/// The run with role `first`.
#[derive(Clone, Debug, PartialEq)]
pub struct FirstRun {
    /// Its position in `runs.jsonl`.
    pub position: u64,
    /// Its index.
    pub index: u64,
    /// Its wall time (`None` when it has none, e.g. it could not start).
    pub wall_ns: Option<f64>,
    /// Why it was rejected, when it was.
    pub rejected: Option<String>,
    /// When it started, seconds after the batch's first record's start.
    pub started_s: Option<f64>,
}

/// One run as the reader hands it over.
#[derive(Clone, Debug, PartialEq)]
pub struct RunPoint {
    /// The record's `index`.
    pub index: u64,
    /// Role `first`.
    pub first: bool,
    /// Role `warmup`.
    pub warmup: bool,
    /// Role `cold`: started cold, after the first run.
    pub cold: bool,
    /// Counted in the statistics.
    pub counted: bool,
    /// Wall time, ns.
    pub wall_ns: Option<f64>,
    /// Why it looks disturbed (its record's or batch.json's anomalies), if it does.
    pub disturbed: Option<String>,
    /// Why it was not counted.
    pub failure_reason: Option<String>,
    /// `uptime_s` at its start: seconds since boot, to 10 ms (`/proc/uptime`).
    pub uptime_s: Option<f64>,
}

/// The first-run penalty of `batch.json` (`first_penalty`): the first run minus the warm run
/// with the median wall time, split into on-CPU, run-queue and blocked time when it could be.
#[derive(Clone, Debug, PartialEq)]
pub struct Penalty {
    /// The first run's index.
    pub first_index: u64,
    /// The reference warm run's index.
    pub reference_index: u64,
    /// The first run's wall time, ns.
    pub first_wall_ns: f64,
    /// The reference run's wall time, ns.
    pub reference_wall_ns: f64,
    /// First minus reference, ns.
    pub wall_ns: f64,
    /// Extra on-CPU time, ns (`None` unless split).
    pub cpu_ns: Option<f64>,
    /// Extra run-queue wait, ns.
    pub runqueue_ns: Option<f64>,
    /// Extra blocked time (I/O, sleeps, faults), ns.
    pub blocked_ns: Option<f64>,
    /// How it was split: `tree`, `schedstat`, `main thread` (`parallel` before the tree's
    /// states) or `unavailable`.
    pub basis: String,
    /// The tree's parts (`first_penalty.tree`): ΔR, ΔQ, ΔD, ΔS, ns, when both runs had them.
    pub tree: Option<[f64; 4]>,
    /// Tasks of the first run's tree.
    pub tree_tasks: Option<u64>,
    /// Why the tree's states do not split it (`first_penalty.tree.unavailable`).
    pub tree_unavailable: Option<String>,
}

/// A `--cold-cycles` batch's cold penalty (`batch.json`'s `cycles.penalty`): position 0 against
/// the warm positions, as a ratio of medians and as the cycles' own differences averaged, each
/// with its 95 % interval when there is one.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CyclesPenalty {
    /// M cycles of { cold action; K runs }.
    pub cycles: u64,
    /// K.
    pub runs_per_cycle: u64,
    /// Median wall time at position 0 (right after the cold action), ns.
    pub cold_median_ns: f64,
    /// Median wall time over the warm positions, ns.
    pub warm_median_ns: f64,
    /// Their ratio, and its interval.
    pub ratio: Option<f64>,
    pub ratio_interval: Option<(f64, f64)>,
    /// The cycles' own differences (each cold run minus its cycle's median warm run),
    /// averaged, ns; the cycles that had both; and the interval of that mean.
    pub per_cycle_ns: Option<f64>,
    pub per_cycle_n: u64,
    pub per_cycle_interval: Option<(f64, f64)>,
    /// Why there is no interval, when there is none.
    pub no_interval: Option<String>,
    /// The mean's parts — on CPU, waiting for a CPU, blocked — when every cycle was split.
    pub parts: Option<[f64; 3]>,
}

/// The files the first run brought into the page cache (its record's `paged_in`, largest
/// first, as many as the record lists) and the totals (`cache.paged_in_files`, `_bytes`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PagedIn {
    /// (path, bytes), largest first.
    pub files: Vec<(String, u64)>,
    pub total_files: Option<u64>,
    pub total_bytes: Option<u64>,
}

/// One batch, ready to draw.
#[derive(Clone, Debug, Default)]
pub struct Series {
    /// What the batch is called: its label and its command, or its command.
    pub title: String,
    /// The command, quoted (from its first record).
    pub command: String,
    /// The batch directory.
    pub dir: String,
    /// Lines of `runs.jsonl` read (every run, warm-ups included).
    pub runs: u64,
    /// Runs per bucket (a power of two).
    pub per_bucket: u64,
    /// The most buckets kept.
    pub cap: usize,
    /// The runs other than the first, in order.
    pub buckets: Vec<Bucket>,
    /// The run with role `first`.
    pub first: Option<FirstRun>,
    /// Wall times of the counted runs after the first (the warm series), in order.
    pub warm_wall_ns: Vec<f64>,
    /// Runs of each kind, in [`Kind::ALL`] order (the first run not included).
    pub kinds: [u64; 5],
    /// Runs without a wall time (not drawn).
    pub without_wall: u64,
    /// The first-run penalty, when `batch.json` has one.
    pub penalty: Option<Penalty>,
    /// Why `batch.json` says there is none.
    pub penalty_unavailable: Option<String>,
    /// The verdict on the first run: batch.json's, or decided from the records for a batch
    /// written before it was stored.
    pub verdict: Option<crate::record::verdict::Verdict>,
    /// A `--cold-cycles` batch's cold penalty.
    pub cycles: Option<CyclesPenalty>,
    /// What the first run paged in, when files were watched.
    pub paged_in: Option<PagedIn>,
    /// The first record's `uptime_s`: the time axis's 0.
    pub origin_s: Option<f64>,
    /// Whether every run read had a start time (then the runs are drawn on a time axis).
    pub all_timed: bool,
    /// When the last run ended, seconds after the origin.
    pub end_s: f64,
    /// Runs that batch.json flags as disturbed (judged over the whole warm series), and why.
    pub flagged: Vec<(u64, String)>,
    /// Why the disturbed runs look so, in order (the first [`DISTURBED_KEPT`]), for tooltips.
    pub disturbed_why: Vec<(u64, String)>,
    /// batch.json's verdict when the warm wall times are noisy.
    pub noise: Option<String>,
    /// Things noticed while reading.
    pub notes: Vec<String>,
}

/// How many disturbed runs keep their reason for the tooltips (the count is kept for all).
pub const DISTURBED_KEPT: usize = 256;

impl Series {
    /// An empty series that keeps at most `cap` buckets (at least 2).
    pub fn new(dir: String, cap: usize) -> Series {
        Series {
            dir,
            per_bucket: 1,
            cap: cap.max(2),
            all_timed: true,
            ..Series::default()
        }
    }

    /// Adds the next run of `runs.jsonl`.
    pub fn push(&mut self, run: &RunPoint) {
        let position = self.runs;
        self.runs += 1;
        if position == 0 {
            self.origin_s = run.uptime_s;
        }
        let started_s = run.uptime_s.zip(self.origin_s).map(|(at, zero)| at - zero);
        self.all_timed &= started_s.is_some();
        if let Some(at) = started_s {
            let wall_s = run.wall_ns.filter(|w| w.is_finite()).unwrap_or(0.0) / 1e9;
            self.end_s = self.end_s.max(at + wall_s);
        }
        if run.first {
            self.first = Some(FirstRun {
                position,
                index: run.index,
                wall_ns: run.wall_ns,
                rejected: (!run.counted).then(|| {
                    run.failure_reason
                        .clone()
                        .unwrap_or_else(|| "not counted".into())
                }),
                started_s,
            });
            self.without_wall += u64::from(run.wall_ns.is_none());
            return;
        }
        let kind = if run.warmup {
            Kind::Warmup
        } else if !run.counted {
            Kind::Rejected
        } else if run.cold {
            Kind::Cold
        } else if let Some(why) = &run.disturbed {
            if self.disturbed_why.len() < DISTURBED_KEPT {
                self.disturbed_why.push((run.index, why.clone()));
            }
            Kind::Disturbed
        } else {
            Kind::Warm
        };
        self.kinds[kind.slot()] += 1;
        if run.counted && !run.warmup && !run.cold {
            self.warm_wall_ns.extend(run.wall_ns);
        }
        match run.wall_ns {
            Some(wall_ns) if wall_ns.is_finite() => {
                let run = Placed {
                    position,
                    index: run.index,
                    kind,
                    wall_ns,
                    started_s,
                };
                self.place(&run);
            }
            _ => self.without_wall += 1,
        }
    }

    /// Puts a run into the bucket that covers its position, merging buckets first when full.
    fn place(&mut self, run: &Placed) {
        let Placed {
            position,
            index,
            kind,
            wall_ns,
            started_s,
        } = *run;
        loop {
            if let Some(last) = self.buckets.last_mut() {
                if position < last.position + self.per_bucket {
                    last.last_index = index;
                    let slot = &mut last.spans[kind.slot()];
                    *slot = Span::merge(*slot, Some(Span::of(wall_ns)));
                    last.started_s = last.started_s.zip(started_s).map(|(a, b)| (a.0, b));
                    return;
                }
            }
            if self.buckets.len() < self.cap {
                break;
            }
            self.merge_pairs();
        }
        let start = position - position % self.per_bucket;
        let mut spans = [None; 5];
        spans[kind.slot()] = Some(Span::of(wall_ns));
        self.buckets.push(Bucket {
            position: start,
            first_index: index,
            last_index: index,
            spans,
            started_s: started_s.map(|at| (at, at)),
        });
    }

    /// Halves the number of buckets: each pair of neighbours (by position) becomes one.
    fn merge_pairs(&mut self) {
        self.per_bucket *= 2;
        let width = self.per_bucket;
        let mut merged: Vec<Bucket> = Vec::with_capacity(self.cap / 2 + 1);
        for bucket in self.buckets.drain(..) {
            let start = bucket.position - bucket.position % width;
            match merged.last_mut() {
                Some(last) if last.position == start => {
                    last.last_index = bucket.last_index;
                    last.started_s = last
                        .started_s
                        .zip(bucket.started_s)
                        .map(|(a, b)| (a.0, b.1));
                    for (a, b) in last.spans.iter_mut().zip(bucket.spans) {
                        *a = Span::merge(*a, b);
                    }
                }
                _ => merged.push(Bucket {
                    position: start,
                    ..bucket
                }),
            }
        }
        self.buckets = merged;
    }

    /// Every drawn wall time: the first run's and each bucket's spans.
    pub fn drawn_wall_ns(&self) -> impl Iterator<Item = f64> + '_ {
        let first = self.first.as_ref().and_then(|f| f.wall_ns);
        let spans = self
            .buckets
            .iter()
            .flat_map(|b| b.spans.iter().flatten())
            .flat_map(|s| [s.low_ns, s.high_ns]);
        first.into_iter().chain(spans)
    }
}

/// A run other than the first, as [`Series::place`] files it.
struct Placed {
    position: u64,
    index: u64,
    kind: Kind,
    wall_ns: f64,
    started_s: Option<f64>,
}

/// One command of a comparison (or one value of a parameter scan).
#[derive(Clone, Debug)]
pub struct Compared {
    /// Its name (`--command-name`) or the command as given.
    pub name: String,
    /// The parameter values it was made with (`NAME`, value).
    pub parameters: Vec<(String, String)>,
    /// Its batch.
    pub series: Series,
    /// Its warm median wall time ÷ the first command's.
    pub ratio: Option<f64>,
    /// The 95 % interval of that ratio.
    pub interval: Option<(f64, f64)>,
}

/// A comparison directory (`coldtrace compare -o DIR`, or a parameter scan).
#[derive(Clone, Debug, Default)]
pub struct Comparison {
    /// The directory.
    pub dir: String,
    /// The commands, in the order given.
    pub commands: Vec<Compared>,
    /// How the intervals were computed (the document's `confidence`).
    pub confidence: Option<String>,
    /// Things noticed while reading.
    pub notes: Vec<String>,
}

/// What one directory given to `report` is drawn as.
#[derive(Clone, Debug)]
pub enum Picture {
    /// A batch.
    Batch(Box<Series>),
    /// A comparison: its commands side by side, then each command's batch.
    Comparison(Comparison),
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(index: u64, first: bool, counted: bool, wall_ns: f64) -> RunPoint {
        RunPoint {
            index,
            first,
            warmup: false,
            cold: false,
            counted,
            wall_ns: Some(wall_ns),
            disturbed: None,
            failure_reason: None,
            uptime_s: Some(1000.0 + index as f64 * 0.5),
        }
    }

    #[test]
    fn runs_keep_their_start_on_the_batchs_clock_through_merges() {
        let mut s = Series::new("d".into(), 2);
        for i in 0..9 {
            s.push(&run(i, i == 0, true, 0.1e9));
        }
        assert!(s.all_timed);
        assert_eq!(s.first.as_ref().and_then(|f| f.started_s), Some(0.0));
        // Eight runs after the first (positions 1–8) in buckets of eight, two at most: 1–7 and
        // 8, each from its first run's start to its last one's.
        let spans: Vec<_> = s.buckets.iter().map(|b| b.started_s).collect();
        assert_eq!(spans, [Some((0.5, 3.5)), Some((4.0, 4.0))]);
        assert!((s.end_s - 4.1).abs() < 1e-9, "{}", s.end_s);
        s.push(&RunPoint {
            uptime_s: None,
            ..run(9, false, true, 0.1e9)
        });
        assert!(!s.all_timed);
    }

    #[test]
    fn cold_runs_are_their_own_kind_and_never_warm() {
        let mut s = Series::new("d".into(), 16);
        s.push(&run(0, true, true, 100.0));
        s.push(&RunPoint {
            cold: true,
            ..run(1, false, true, 90.0)
        });
        s.push(&run(2, false, true, 10.0));
        assert_eq!(s.kinds[Kind::Cold.slot()], 1);
        assert_eq!(s.kinds[Kind::Warm.slot()], 1);
        assert_eq!(s.warm_wall_ns, vec![10.0]);
    }

    #[test]
    fn kinds_first_run_and_warm_series_are_told_apart() {
        let mut s = Series::new("d".into(), 16);
        s.push(&RunPoint {
            warmup: true,
            ..run(0, false, false, 5.0)
        });
        s.push(&run(1, true, true, 100.0));
        s.push(&run(2, false, true, 10.0));
        s.push(&RunPoint {
            disturbed: Some("storage_reads".into()),
            ..run(3, false, true, 30.0)
        });
        s.push(&RunPoint {
            failure_reason: Some("exit 1".into()),
            ..run(4, false, false, 1.0)
        });
        s.push(&RunPoint {
            wall_ns: None,
            ..run(5, false, false, 0.0)
        });
        assert_eq!(s.runs, 6);
        assert_eq!(s.kinds, [1, 1, 0, 1, 2]);
        assert_eq!(s.warm_wall_ns, vec![10.0, 30.0]);
        assert_eq!(s.without_wall, 1);
        let first = s.first.clone().unwrap();
        assert_eq!(
            (first.position, first.index, first.wall_ns),
            (1, 1, Some(100.0))
        );
        assert_eq!(first.rejected, None);
        assert_eq!(s.buckets.len(), 4);
        assert_eq!(
            s.buckets[2].spans[Kind::Disturbed.slot()].unwrap().high_ns,
            30.0
        );
        let mut drawn: Vec<f64> = s.drawn_wall_ns().collect();
        drawn.sort_by(f64::total_cmp);
        drawn.dedup();
        assert_eq!(drawn, vec![1.0, 5.0, 10.0, 30.0, 100.0]);
    }

    #[test]
    fn a_long_batch_stays_within_the_cap_and_keeps_every_extreme() {
        let mut s = Series::new("d".into(), 8);
        s.push(&run(0, true, true, 500.0));
        for i in 1..1000u64 {
            let wall = if i == 777 {
                9e9
            } else {
                100.0 + (i % 7) as f64
            };
            s.push(&run(i, false, true, wall));
        }
        assert!(s.buckets.len() <= 8, "{}", s.buckets.len());
        assert_eq!(s.per_bucket, 128);
        let runs: u64 = s
            .buckets
            .iter()
            .map(|b| b.spans[Kind::Warm.slot()].map_or(0, |sp| sp.runs))
            .sum();
        assert_eq!(runs, 999);
        let max = s.drawn_wall_ns().fold(0.0, f64::max);
        assert_eq!(max, 9e9);
        let positions: Vec<u64> = s.buckets.iter().map(|b| b.position).collect();
        assert!(positions.windows(2).all(|w| w[1] == w[0] + s.per_bucket));
        assert_eq!(s.buckets[0].first_index, 1);
        assert_eq!(s.buckets.last().unwrap().last_index, 999);
    }

    #[test]
    fn a_rejected_first_run_keeps_its_reason() {
        let mut s = Series::new("d".into(), 4);
        s.push(&RunPoint {
            failure_reason: Some("exited with code 2".into()),
            ..run(0, true, false, 3.0)
        });
        assert_eq!(
            s.first.unwrap().rejected.as_deref(),
            Some("exited with code 2")
        );
        assert!(s.warm_wall_ns.is_empty());
    }
}
