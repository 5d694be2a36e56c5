//! What a running batch tells whoever watches it: the batch starts, a run starts (its role, and
//! whether it is cold), a slow step before it (an eviction) is under way, a long run is still
//! running, a run ended, a notice that cannot wait.
//! The batch only reports these events; drawing them (or not) is the view's job.
#![forbid(unsafe_code)]

use crate::record::run::Role;

/// The batch about to run.
pub struct BatchStart<'a> {
    /// Each command as shown (one for `run`, several for `compare`).
    pub commands: &'a [String],
    /// Runs in all, warm-ups included, over every command.
    pub total_runs: u64,
}

/// A run about to start: which command, which run of it, and what it is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RunStart {
    /// The command (0 for `run`; its index in `compare`).
    pub command: usize,
    /// The run's index in its command's batch, warm-ups included.
    pub index: u64,
    /// Warm-up, the first counted run, or a warm one.
    pub role: Role,
    /// The page cache is evicted or dropped before it (`--evict`, `--drop-caches`).
    pub cold: bool,
}

/// A run that ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RunEnd {
    /// The run, as it started.
    pub run: RunStart,
    /// Its wall time (`None` if it never started).
    pub wall_ns: Option<u64>,
    /// Whether it is in the statistics.
    pub counted: bool,
}

/// Receives a batch's events as they happen: between runs, and (`running`) from the waiting
/// loop of a long run, never between the clock reads of a short one (see
/// [`crate::measure::waiting`]).
pub trait Observer {
    /// Before the first run (after the checks that can refuse the batch).
    fn batch_started(&mut self, batch: &BatchStart<'_>) {
        let _ = batch;
    }

    /// A run is about to start: its `--prepare`, cold action and spawn come next.
    fn run_started(&mut self, run: &RunStart) {
        let _ = run;
    }

    /// Whether [`Observer::running`] is wanted.
    fn wants_ticks(&self) -> bool {
        false
    }

    /// The current run has been running for `running_ns` (long runs only, a few times a second).
    fn running(&mut self, running_ns: u64) {
        let _ = running_ns;
    }

    /// Before the run starts, a slow step of its own is under way (`what`: "evicting",
    /// "dropping caches") and has taken `for_ns` so far: said when it begins, then a few times
    /// a second while it goes on.
    fn preparing(&mut self, what: &'static str, for_ns: u64) {
        let _ = (what, for_ns);
    }

    /// A run ended and is recorded.
    fn run_finished(&mut self, end: &RunEnd) {
        let _ = end;
    }

    /// The runs in all, once more (the count may be chosen by time after the first run).
    fn total_runs(&mut self, total: u64) {
        let _ = total;
    }

    /// Something the user should know now, in one line (e.g. the command was stopped).
    fn notice(&mut self, text: &str) {
        let _ = text;
    }

    /// The runs are over: whatever was drawn can be cleared.
    fn finished(&mut self) {}
}

/// An observer that shows nothing.
pub struct Unobserved;

impl Observer for Unobserved {}
