//! [`Plan`]: what to run, how often, where its output goes, and which cold state to set up.
//! A validated description only: nothing here creates, opens or spawns anything.
//!
//! A plan is fully validated: the command has been resolved through PATH, numbers are in range,
//! and combinations make sense. Nothing has been created or spawned yet.
#![forbid(unsafe_code)]

use std::ffi::OsString;
use std::path::PathBuf;

/// Where the child's stdout and stderr go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutputMode {
    /// The terminal (or whatever coldtrace's own stdout/stderr are).
    Inherit,
    /// Discarded (`/dev/null`; stderr is kept in memory so a failed run can show its last lines).
    Null,
    /// Files under the batch directory: `runs/NNN/stdout` and `runs/NNN/stderr`.
    File,
}

impl OutputMode {
    /// The name used in `--output` and in `batch.json`.
    pub fn name(self) -> &'static str {
        match self {
            OutputMode::Inherit => "inherit",
            OutputMode::Null => "null",
            OutputMode::File => "file",
        }
    }
}

/// Where the child's stdin comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StdinMode {
    /// `/dev/null`.
    Null,
    /// coldtrace's own stdin.
    Inherit,
    /// A file, opened afresh for every run.
    File(PathBuf),
}

/// When a cold-state action (eviction, dropping caches) happens.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ColdWhen {
    /// Before every counted run.
    EveryRun,
    /// Before the first counted run only: one cold run, then a warm series.
    FirstOnly,
}

/// The cold state to establish before runs, and what to watch.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ColdPlan {
    /// Paths whose page-cache pages are dropped with `posix_fadvise(DONTNEED)`.
    pub evict: Vec<PathBuf>,
    /// `sync; echo 3 > /proc/sys/vm/drop_caches` (root only).
    pub drop_caches: bool,
    /// When eviction / dropping happens (`None` when neither is asked for).
    pub when: Option<ColdWhen>,
    /// Paths whose residency is measured before and after every run (evicted paths included).
    pub watch: Vec<PathBuf>,
}

/// A validated measurement plan.
#[derive(Clone, Debug)]
pub struct Plan {
    /// What to say once before the runs about how the request was read (an option given
    /// twice, and which value is used).
    pub notices: Vec<String>,
    /// The command as given: argv\[0\] and its arguments.
    pub argv: Vec<OsString>,
    /// The program file, resolved through PATH in the parent (absolute or as given with a `/`).
    pub program_path: PathBuf,
    /// Counted runs.
    pub runs: u32,
    /// Warm-up runs before the counted ones (recorded, never counted).
    pub warmup: u32,
    /// Batch directory for records and artifacts.
    pub out_dir: Option<PathBuf>,
    /// Print the record (single run) or the batch summary as JSON on stdout.
    pub json: bool,
    /// Where the child's stdout/stderr go.
    pub output: OutputMode,
    /// Where the child's stdin comes from.
    pub stdin: StdinMode,
    /// Per-run time limit, nanoseconds.
    pub timeout_ns: Option<u64>,
    /// Grace period between SIGTERM and SIGKILL after a timeout, nanoseconds.
    pub kill_after_ns: u64,
    /// Shell command run (`/bin/sh -c`, not measured) before every run.
    pub prepare: Option<String>,
    /// Count failed runs too (marked as failed).
    pub ignore_failure: bool,
    /// Free-text label stored in every record.
    pub label: Option<String>,
    /// No table, no progress, no notices on stderr.
    pub quiet: bool,
    /// Cold-state options.
    pub cold: ColdPlan,
    /// Record only the wall time, rusage and the runner's floor: no /proc reads around runs
    /// (system-wide deltas, the zombie's io/schedstat, boot ID and uptime per run).
    pub minimal: bool,
    /// Kernel perf counters to read for every run (`--counters`, `--events`); empty: none.
    pub counters: Vec<crate::measure::perf::PerfEvent>,
    /// One command of a comparison: always a batch, even with one run (a failed run is
    /// rejected and the exit code is the batch's, never the command's own as for `time`).
    pub in_comparison: bool,
}

impl Plan {
    /// Total runs, warm-ups included.
    pub fn total_runs(&self) -> u64 {
        u64::from(self.runs) + u64::from(self.warmup)
    }

    /// A single measured run with nothing around it: behaves like `time COMMAND`.
    pub fn is_single_run(&self) -> bool {
        self.runs == 1 && self.warmup == 0 && !self.in_comparison
    }
}

/// Several commands measured in one batch, interleaved round-robin.
#[derive(Clone, Debug)]
pub struct ComparePlan {
    /// What to say once before the runs about how the request was read.
    pub notices: Vec<String>,
    /// One plan per command, in the order given (the first is the baseline). Each plan's
    /// `out_dir` is its own directory under the comparison's.
    pub plans: Vec<Plan>,
    /// The comparison's batch directory.
    pub out_dir: Option<PathBuf>,
    /// Seed for a random order within each round (`None`: A B C, A B C, …).
    pub shuffle_seed: Option<u64>,
    /// Print the comparison document as JSON on stdout.
    pub json: bool,
    /// No table, no progress, no notices on stderr.
    pub quiet: bool,
}
