//! [`Plan`]: what to run, how often, where its output goes, and which cold state to set up.
//! A validated description only: nothing here creates, opens or spawns anything.
//!
//! A plan is fully validated: the command has been resolved through PATH, numbers are in range,
//! and combinations make sense. Nothing has been created or spawned yet.
#![forbid(unsafe_code)]

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// The environment variable that turns the tracing of the whole process tree off (`off`) or
/// leaves it on where allowed (unset, empty or `on`): off, every run is split as without the
/// privilege the tracing needs (see docs/tree-explanation.md).
pub const TREE_VAR: &str = "COLDTRACE_TREE";

/// Where the child's stdout and stderr go (`--output`, `--keep-output`). The same with or
/// without `-o DIR`: where records go never changes what is measured.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OutputMode {
    /// The terminal (or whatever coldtrace's own stdout/stderr are): a single run's default.
    Inherit,
    /// stdout to `/dev/null`; stderr to an in-memory file that keeps its last 64 KiB (a failed
    /// run's reason): a batch's default.
    Null,
    /// stdout through a pipe that coldtrace reads and discards (hyperfine's `pipe`); stderr as
    /// with [`OutputMode::Null`].
    Pipe,
    /// stdout to this file, emptied before every run (it ends holding the last run's output,
    /// as hyperfine's `--output FILE`); stderr as with [`OutputMode::Null`].
    File(PathBuf),
    /// Every run's stdout and stderr kept under the batch directory, `runs/NNN/{stdout,stderr}`
    /// (`--keep-output`, with `-o DIR`).
    Keep,
}

impl OutputMode {
    /// The name used in `batch.json` (`config.output`).
    pub fn name(&self) -> &'static str {
        match self {
            OutputMode::Inherit => "inherit",
            OutputMode::Null => "null",
            OutputMode::Pipe => "pipe",
            OutputMode::File(_) => "file",
            OutputMode::Keep => "kept",
        }
    }

    /// Where stdout goes, in a few words for the table's title: `stdout → /dev/null`.
    pub fn shown(&self) -> String {
        match self {
            OutputMode::Inherit => "output inherited".into(),
            OutputMode::Null => "stdout → /dev/null".into(),
            OutputMode::Pipe => "stdout → pipe".into(),
            OutputMode::File(path) => format!("stdout → {}", path.display()),
            OutputMode::Keep => "output kept in runs/".into(),
        }
    }
}

/// Which failing runs are counted (`-i`, `--ignore-failure[=CODES]`, hyperfine 2.0's modes).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum IgnoreFailure {
    /// None: a failing first run (or first warm-up) stops the batch, a later one is rejected.
    #[default]
    No,
    /// Every failing run (`-i`, `-i=all-non-zero`), marked with its failure reason.
    All,
    /// A run that exited with one of these codes (`-i=1,2`), marked; any other failure is
    /// rejected, and none stops the batch.
    Codes(Vec<i32>),
}

impl IgnoreFailure {
    /// Whether a failing run that ended with `exit_code` (`None`: a signal, a timeout, a
    /// failed start) is counted.
    pub fn counts(&self, exit_code: Option<i32>) -> bool {
        match self {
            IgnoreFailure::No => false,
            IgnoreFailure::All => true,
            IgnoreFailure::Codes(codes) => exit_code.is_some_and(|c| codes.contains(&c)),
        }
    }

    /// The exit codes counted, for `batch.json` (`None` unless [`IgnoreFailure::Codes`]).
    pub fn codes(&self) -> Option<&[i32]> {
        match self {
            IgnoreFailure::Codes(codes) => Some(codes),
            _ => None,
        }
    }
}

/// Which metrics the table shows (`--metrics`): every one is recorded whatever it shows.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum MetricView {
    /// Wall time, CPU time, max RSS, major faults, storage read (`record::metrics::COMPACT`),
    /// and what was asked for besides: the residency of watched files, the perf events.
    #[default]
    Compact,
    /// Every metric that has a value (`--metrics all`).
    All,
    /// These metrics (their names in the record), in this order (`--metrics wall,max_rss`).
    List(Vec<&'static str>),
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
    /// Before every counted run: the runs after the first have role `cold`, and there is no
    /// warm series (the summary's runs after the first are cold runs).
    EveryRun,
    /// Before the first counted run only: one cold run, then a warm series.
    FirstOnly,
    /// `--cold-cycles M`: M times { the cold action; `-n` K runs } — every position after the
    /// cold action gets M samples (position 0 cold, 1 lightly cached, the rest warm).
    Cycles(u32),
}

impl ColdWhen {
    /// The number of cycles (`None` unless [`ColdWhen::Cycles`]).
    pub fn cycles(self) -> Option<u32> {
        match self {
            ColdWhen::Cycles(m) => Some(m),
            _ => None,
        }
    }
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

/// The largest `-n` / `--warmup` accepted, and the most runs a time budget may choose: far
/// beyond any real batch, far below overflow.
pub const MAX_RUNS: u32 = 10_000_000;

/// How many counted runs, when the count is chosen by time (hyperfine's rule): as many as fit
/// in `budget_ns` at the cost of the first counted run, but at least `min` and at most `max`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RunBounds {
    /// At least this many (`--min-runs`, default 10).
    pub min: u32,
    /// At most this many (`--max-runs`).
    pub max: Option<u32>,
    /// The time budget (`--max-time`, default 3 s), nanoseconds.
    pub budget_ns: u64,
}

impl RunBounds {
    /// hyperfine's default minimum.
    pub const DEFAULT_MIN: u32 = 10;
    /// hyperfine's default time budget: 3 s.
    pub const DEFAULT_BUDGET_NS: u64 = 3_000_000_000;

    /// The number of counted runs for a first counted run that cost `cost_ns` (its wall time
    /// and the commands around it): ⌊budget ÷ cost⌋, raised to `min`, capped at `max` and at
    /// `ceiling` (coldtrace's largest count).
    pub fn runs_for(&self, cost_ns: u64, ceiling: u32) -> u32 {
        let fit = self.budget_ns / cost_ns.max(1);
        let runs = fit.max(u64::from(self.min));
        let cap = self.max.unwrap_or(ceiling).min(ceiling);
        runs.min(u64::from(cap)).max(1) as u32
    }
}

/// Files the results go to after the runs (`--export-json FILE` and the others).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Exports {
    /// `--export-coldtrace-json`: the batch document and every run's record, in one document
    /// (`coldtrace.export/1`).
    pub coldtrace_json: Option<PathBuf>,
    /// `--export-json`: hyperfine 2.0's export document, over the counted runs.
    pub hyperfine_json: Option<PathBuf>,
    /// hyperfine 2.0's summary CSV: one row per command.
    pub csv: Option<PathBuf>,
    /// One row per run, every number of the record.
    pub csv_runs: Option<PathBuf>,
    /// hyperfine 2.0's Markdown table of the wall time.
    pub markdown: Option<PathBuf>,
}

/// One file named by a flag.
#[derive(Clone, Copy, Debug)]
pub struct Target<'a> {
    /// The flag that named it (`--export-json`), for messages.
    pub flag: &'a str,
    /// The path as given.
    pub path: &'a Path,
}

/// The descriptor a path names when it is one of coldtrace's own standard outputs (1 for
/// `/dev/stdout`, `/dev/fd/1`, `/proc/self/fd/1`; 2 likewise): what decides where else
/// coldtrace may write (an export on stdout shares it with the table or `--json`).
pub fn own_descriptor(path: &Path) -> Option<u8> {
    let text = path.to_str()?;
    let number = match text {
        "/dev/stdout" => return Some(1),
        "/dev/stderr" => return Some(2),
        _ => ["/dev/fd/", "/proc/self/fd/", "/proc/thread-self/fd/"]
            .iter()
            .find_map(|prefix| text.strip_prefix(prefix))?,
    };
    match number {
        "1" => Some(1),
        "2" => Some(2),
        _ => None,
    }
}

impl Exports {
    /// Every export asked for, with the flag that named it.
    pub fn targets(&self) -> Vec<Target<'_>> {
        [
            ("--export-json", &self.hyperfine_json),
            ("--export-coldtrace-json", &self.coldtrace_json),
            ("--export-csv", &self.csv),
            ("--export-csv-runs", &self.csv_runs),
            ("--export-markdown", &self.markdown),
        ]
        .into_iter()
        .filter_map(|(flag, path)| {
            Some(Target {
                flag,
                path: path.as_deref()?,
            })
        })
        .collect()
    }

    /// Whether an export is written to coldtrace's own stdout (`/dev/stdout`, `/dev/fd/1`):
    /// then the table of results leaves stdout to it.
    pub fn on_stdout(&self) -> bool {
        self.targets()
            .iter()
            .any(|t| own_descriptor(t.path) == Some(1))
    }

    /// Whether any export needs every run's record kept until the end (all of them do).
    pub fn needs_records(&self) -> bool {
        !self.targets().is_empty()
    }
}

/// A validated measurement plan.
#[derive(Clone, Debug)]
pub struct Plan {
    /// What to say once before the runs about how the request was read (an option given
    /// twice, and which value is used).
    pub notices: Vec<String>,
    /// The command as given: argv\[0\] and its arguments.
    pub argv: Vec<OsString>,
    /// The command as the user wrote it: `compare`'s string (or `run`'s one string), or the
    /// words quoted as a shell would; parameters replaced, not escaped.
    pub text: String,
    /// The program file, resolved through PATH in the parent (absolute or as given with a `/`).
    pub program_path: PathBuf,
    /// Counted runs: exactly these, or with [`Plan::bounds`] the minimum until the count is
    /// chosen after the first counted run.
    pub runs: u32,
    /// The count is chosen by time (`--min-runs`, `--max-runs`, `--max-time`; the default of a
    /// comparison).
    pub bounds: Option<RunBounds>,
    /// The command's name (`--command-name`), shown instead of its words.
    pub name: Option<String>,
    /// The parameter values this command was made with (`-P`, `-L`), in order.
    pub parameters: Vec<(String, String)>,
    /// The shell the command runs through (`--shell`), as given; `None`: run directly.
    pub shell: Option<String>,
    /// A script without a `#!` line runs through `/bin/sh` in the same child, as `execvp`
    /// (and so GNU time) does: `coldtrace time`. Otherwise it fails to start (126, with a
    /// hint).
    pub scripts_through_sh: bool,
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
    /// What to do with processes the command leaves running when it exits (`--survivors`).
    pub survivors: crate::measure::survivors::SurvivorPolicy,
    /// `--kill-after` was given: this long after a request to stop (SIGTERM, SIGINT…) was
    /// passed on to the command, its whole tree is killed (a second request kills it at once).
    pub escalate_after_ns: Option<u64>,
    /// Shell command run (`/bin/sh -c`, not measured) once before the first run.
    pub setup: Option<std::ffi::OsString>,
    /// Shell command run (`/bin/sh -c`, not measured) before every run.
    pub prepare: Option<std::ffi::OsString>,
    /// Shell command run (`/bin/sh -c`, not measured) after every run.
    pub conclude: Option<std::ffi::OsString>,
    /// Shell command run (`/bin/sh -c`, not measured) once after the last run.
    pub cleanup: Option<std::ffi::OsString>,
    /// Which failing runs are counted too (marked as failed).
    pub ignore_failure: IgnoreFailure,
    /// Which metrics the table shows.
    pub view: MetricView,
    /// `--explain`: every sentence under the table, not only the verdict's line (the table
    /// says everything anyway when there is something to explain).
    pub explain: bool,
    /// Free-text label stored in every record.
    pub label: Option<String>,
    /// No table, no progress, no notices on stderr.
    pub quiet: bool,
    /// Cold-state options.
    pub cold: ColdPlan,
    /// Record only the wall time, rusage and the runner's floor: no /proc reads around runs
    /// (system-wide deltas, the zombie's io/schedstat, boot ID and uptime per run).
    pub minimal: bool,
    /// Trace the whole process tree's states where allowed (not with `COLDTRACE_TREE=off`,
    /// [`TREE_VAR`]).
    pub trace_tree: bool,
    /// Kernel perf counters to read for every run (`--counters`, `--events`); empty: none.
    pub counters: Vec<crate::measure::perf::PerfEvent>,
    /// One command of a comparison: always a batch, even with one run (a failed run is
    /// rejected and the exit code is the batch's, never the command's own as for `time`).
    pub in_comparison: bool,
    /// Where the results are exported after the runs.
    pub exports: Exports,
}

impl Plan {
    /// Total runs, warm-ups included, before the count is chosen by time (see [`RunBounds`]):
    /// with `--cold-cycles M`, M × `-n` counted runs.
    pub fn total_runs(&self) -> u64 {
        u64::from(self.runs) * u64::from(self.cycles()) + u64::from(self.warmup)
    }

    /// Cycles of { cold action; `-n` runs }: 1 without `--cold-cycles`.
    pub fn cycles(&self) -> u32 {
        self.cold.when.and_then(ColdWhen::cycles).unwrap_or(1)
    }

    /// A single measured run with nothing around it: behaves like `time COMMAND`.
    pub fn is_single_run(&self) -> bool {
        self.runs == 1
            && self.warmup == 0
            && self.bounds.is_none()
            && !self.in_comparison
            && self.cycles() == 1
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
    /// Which metrics the table shows.
    pub view: MetricView,
    /// Where the comparison is exported after the runs.
    pub exports: Exports,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_bounds_follow_hyperfines_rule() {
        let b = RunBounds {
            min: 10,
            max: None,
            budget_ns: 3_000_000_000,
        };
        assert_eq!(b.runs_for(100_000_000, 1_000_000), 30, "3 s / 100 ms");
        assert_eq!(b.runs_for(1_000_000_000, 1_000_000), 10, "at least min");
        assert_eq!(b.runs_for(0, 50), 50, "a free run is capped by the ceiling");
        let capped = RunBounds { max: Some(20), ..b };
        assert_eq!(capped.runs_for(1_000_000, 1_000_000), 20, "at most max");
        let one = RunBounds {
            min: 1,
            max: Some(1),
            ..b
        };
        assert_eq!(one.runs_for(1, 1_000_000), 1);
    }
}
