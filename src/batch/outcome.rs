//! What a finished (or stopped) batch hands to rendering and `main`, and how a run's outcome
//! maps to words and exit codes. Data and pure mappings; nothing here runs or prints.
#![forbid(unsafe_code)]

use crate::batch::program::exit_code_for_failed_start;
use crate::measure::cache::{PagedIn, Stayed};
use crate::measure::runner::Outcome;
use crate::plan::ColdWhen;
use crate::record::anomaly::{Noise, RunAnomaly};
use crate::record::batch::{BatchContext, Counts};
use crate::record::cause::ColdCause;
use crate::record::columns::FirstRun;
use crate::record::cycles::CyclesSummary;
use crate::record::failed::FailedRuns;
use crate::record::metrics::Metric;
use crate::record::summary::MetricSummary;
use crate::record::verdict::penalty::FirstPenalty;
use coldtrace_syscalls::Signal;

/// What a finished (or stopped) batch hands to rendering and `main`.
pub struct BatchOutcome {
    /// The process exit code.
    pub exit_code: u8,
    /// `--json` output: the single run's record, or the batch document.
    pub json: String,
    /// The batch document (`batch.json`), also for a single run.
    pub document: String,
    /// Every run's record line, when an export asked for them.
    pub records: Option<crate::record::kept::KeptRecords>,
    /// The batch's metrics (field metrics, then its perf events), in summary order.
    pub metrics: Vec<Metric>,
    /// Per-metric summaries.
    pub summaries: Vec<MetricSummary>,
    /// Wall times of counted runs, in order.
    pub walls_ns: Vec<f64>,
    /// The counted runs' values, read back one column at a time (for comparisons).
    pub columns: crate::record::columns::Columns,
    /// The run with role `first`, counted or rejected (its figures, for the table).
    pub first: Option<FirstRun>,
    /// Files are watched (`--watch`/`--evict`): the residency rows are always shown.
    pub watching: bool,
    /// Why some watched files' residency is unknown (the first time it was), in words.
    pub cache_unknown: Option<String>,
    /// What stayed cached after the first eviction, and the evicted paths.
    pub first_stayed: Option<(Stayed, Vec<String>)>,
    /// What the first run brought into the page cache (with `--watch`/`--evict`).
    pub first_paged_in: Option<FirstPagedIn>,
    /// The processes runs left running when their commands exited.
    pub survivors: SurvivorsSeen,
    /// The first run's penalty over the reference warm run, or why there is none.
    pub first_penalty: Result<FirstPenalty, &'static str>,
    /// The verdict on the first run (see [`crate::record::verdict`]): what every view says.
    pub verdict: crate::record::verdict::Verdict,
    /// What made the first run cold (`None` without a counted first run).
    pub first_cold_cause: Option<ColdCause>,
    /// The first run's working set cached before the later runs.
    pub working_set: Option<crate::record::working_set::WorkingSetSummary>,
    /// What stood out about warm runs, over the whole series.
    pub anomalies: Vec<RunAnomaly>,
    /// Why the warm wall times are noisy, if they are.
    pub warm_noise: Option<Noise>,
    /// With `--cold-cycles`: the runs by position after the cold action, and the cold penalty.
    pub cycles: Option<CyclesSummary>,
    /// When the cold action happened (`None`: no cold action).
    pub cold_when: Option<ColdWhen>,
    /// Failed runs.
    pub failed: FailedRuns,
    /// Counts.
    pub counts: Counts,
    /// The context.
    pub context: BatchContext,
    /// Signal that interrupted the batch.
    pub interrupted_by: Option<Signal>,
    /// Why the batch stopped early (prepare failed, cannot start).
    pub stopped_reason: Option<String>,
    /// The batch directory, if any.
    pub out_dir: Option<std::path::PathBuf>,
    /// A note to show once (e.g. output discarded).
    pub notices: Vec<String>,
    /// What the batch's spawner cost (`None` when coldtrace cloned every child itself).
    pub spawner: Option<crate::measure::spawner::SpawnerUsage>,
    /// For a single run: how it ended, in words.
    pub single_outcome: Option<String>,
    /// The program could not be started (`execve` failed): the one-line reason.
    pub start_failure: Option<String>,
    /// coldtrace could not wait for or reap a run ([`cannot_wait`]): the one-line reason.
    pub wait_failure: Option<String>,
    /// A single run's own figures (what `coldtrace time` reports); `None` for a batch.
    pub single_run: Option<SingleRun>,
    /// The batch stopped because its first counted run (or first warm-up) failed.
    pub failure_stop: Option<FailureStop>,
}

/// The failing run that stopped a batch (its first counted run, or its first warm-up, that
/// `-i` did not count), as hyperfine stops.
#[derive(Clone, Debug)]
pub struct FailureStop {
    /// Its index in the batch.
    pub index: u64,
    /// It was a warm-up.
    pub warmup: bool,
    /// How it ended, in words (`exited with code 2`).
    pub how: String,
    /// Its exit code, when it exited (for the `-i=CODE` hint).
    pub exit_code: Option<i32>,
    /// The last lines of its stderr, when they were kept (not with `--output inherit`).
    pub stderr_tail: Option<String>,
    /// Its output went to the terminal (`--output inherit`): it was seen there.
    pub output_shown: bool,
}

/// What the first run brought into the page cache, for the table.
#[derive(Clone, Debug, Default)]
pub struct FirstPagedIn {
    /// Its top files and totals.
    pub paged: PagedIn,
    /// `runs/NNN/paged_in.tsv`, relative to the batch directory, when written.
    pub artifact: Option<String>,
    /// Bytes the first run read from storage (`/proc/PID/io`, else rusage's blocks).
    pub read_bytes: u64,
    /// Its gains are the page-in ledger's, exact; else the watched files' residency after it
    /// less before, a net change, which misses pages evicted while it ran and read back.
    pub from_ledger: bool,
}

/// How a single run ended, its wall time and its usage.
#[derive(Clone, Copy, Debug)]
pub struct SingleRun {
    /// How it ended.
    pub outcome: Outcome,
    /// Spawn to exit seen; `None` if it never started.
    pub wall_ns: Option<u64>,
    /// Its own wait4 usage; `None` if it never started or could not be reaped.
    pub rusage: Option<coldtrace_syscalls::ResourceUsage>,
}

/// Whether the batch goes on after a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// Run the next one.
    Continue,
    /// Stop: interrupted, or the program cannot start, or `--prepare` failed.
    Stop,
}

/// How a run ended, in words: `exited with code 0`, `timed out (sent SIGTERM), killed by SIGTERM`.
pub(crate) fn describe(outcome: &Outcome) -> String {
    match outcome {
        Outcome::Finished(status) => status.to_string(),
        Outcome::TimedOut { status, sent, to } => {
            format!("timed out (sent {sent} to the {}), {status}", to.name())
        }
        Outcome::FailedToStart { errno, .. } => format!("failed to start: {errno}"),
        Outcome::WaitFailed { errno, .. } => format!("waiting failed ({errno}); killed"),
        Outcome::Unreaped { errno } => format!("could not be reaped: {errno}"),
        Outcome::Traced { stop, .. } => format!(
            "stopped by {stop} for a tracer (it called PTRACE_TRACEME; coldtrace is none): \
             killed with SIGKILL"
        ),
        Outcome::Unmeasured { status } => {
            format!("ran but was not measured (the spawner ended while starting it), {status}")
        }
    }
}

/// Why coldtrace stops when it cannot wait for or reap its own child (`None` for any other
/// outcome): not the command's failure, so `-i` cannot help — something around coldtrace
/// (a seccomp filter, a container's profile) refuses the calls it waits with. See
/// [wait4(2)](https://man7.org/linux/man-pages/man2/wait4.2.html) and
/// [waitid(2)](https://man7.org/linux/man-pages/man2/waitid.2.html).
pub fn cannot_wait(outcome: &Outcome) -> Option<String> {
    let what = match outcome {
        Outcome::Unreaped { errno } => {
            format!("the command ran but coldtrace could not reap it: {errno}")
        }
        Outcome::WaitFailed { errno, .. } => {
            format!("coldtrace could not wait for the command (it was killed): {errno}")
        }
        _ => return None,
    };
    Some(format!(
        "{what}; something here refuses wait4 or waitid (a seccomp filter, a container's \
         profile?), which coldtrace needs to measure a run: allow them, or run coldtrace \
         outside that sandbox"
    ))
}

/// The processes the runs of a batch left running when their commands exited, counted, the
/// first runs' named (bounded: a command that leaves a daemon every run holds no more).
#[derive(Clone, Debug, Default)]
pub struct SurvivorsSeen {
    /// Runs that left any.
    pub runs: u64,
    /// Processes, over all runs, by what became of them: left, killed, waited for.
    pub left: u64,
    /// Killed (`--survivors kill`, or a wait cut short).
    pub killed: u64,
    /// Waited for (`--survivors wait`).
    pub waited: u64,
    /// The first [`SURVIVING_RUNS_NAMED`] runs that left any: index, and the processes.
    pub first: Vec<(u64, Vec<crate::measure::descendants::Proc>)>,
}

/// Runs named in [`SurvivorsSeen::first`].
pub const SURVIVING_RUNS_NAMED: usize = 3;

impl SurvivorsSeen {
    /// Counts the survivors of run `index`.
    pub fn add(&mut self, index: u64, survivors: &crate::measure::survivors::Survivors) {
        use crate::measure::survivors::SurvivorAction;
        let n = survivors.count() as u64;
        let Some(action) = survivors.action.filter(|_| n > 0) else {
            return;
        };
        self.runs += 1;
        match action {
            SurvivorAction::Left => self.left += n,
            SurvivorAction::Killed => self.killed += n,
            SurvivorAction::Waited => self.waited += n,
        }
        if self.first.len() < SURVIVING_RUNS_NAMED {
            let named = survivors.processes.iter().take(5).cloned().collect();
            self.first.push((index, named));
        }
    }
}

/// `N processes` / `1 process`.
pub fn processes_count(n: usize) -> String {
    if n == 1 {
        "1 process".into()
    } else {
        format!("{n} processes")
    }
}

/// The first `most` of `processes` as `1234 (sleep), 1240 (sh)` (names escaped), and how many
/// more; `None` for none.
pub fn named_processes(
    processes: &[crate::measure::descendants::Proc],
    most: usize,
) -> Option<String> {
    if processes.is_empty() {
        return None;
    }
    let mut named: Vec<String> = processes
        .iter()
        .take(most)
        .map(|p| format!("{} ({})", p.pid, crate::text::escape_controls(&p.comm)))
        .collect();
    if processes.len() > most {
        named.push(format!("{} more", processes.len() - most));
    }
    Some(named.join(", "))
}

/// The exit code of a single run: the child's code, 128+N for signal N.
pub(crate) fn single_exit_code(outcome: &Outcome) -> u8 {
    match outcome {
        Outcome::Finished(status)
        | Outcome::TimedOut { status, .. }
        | Outcome::Unmeasured { status } => {
            if let Some(code) = status.code() {
                code as u8
            } else if let Some(sig) = status.signal() {
                128u8.saturating_add(sig as u8)
            } else {
                1
            }
        }
        Outcome::FailedToStart { stage, errno } => exit_code_for_failed_start(*stage, *errno),
        Outcome::WaitFailed { .. } | Outcome::Unreaped { .. } => 125,
        // GNU time's code for a command it saw stopped: 128 + the stopping signal.
        Outcome::Traced { stop, .. } => 128u8.saturating_add(stop.raw() as u8),
    }
}
