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

/// A slow step before a run, as far as it has come.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Preparing {
    /// What it does: "walking" (the watched files), "evicting", "checking" (them),
    /// "dropping caches".
    pub what: &'static str,
    /// How long it has taken so far.
    pub for_ns: u64,
    /// Files done so far, and in all when that is known.
    pub files: Option<(u64, Option<u64>)>,
}

/// How often a slow step is said again while it goes on.
const TICK_NS: u64 = 250_000_000;

/// Tells an observer what a slow step is doing, when it begins and then every [`TICK_NS`],
/// from the per-file checks of a walk, an eviction or a probe (which only borrow it).
pub struct Ticker<'o> {
    observer: std::cell::RefCell<&'o mut dyn Observer>,
    began: u64,
    last: std::cell::Cell<Option<u64>>,
}

impl<'o> Ticker<'o> {
    /// A ticker for a step that began at `began` (CLOCK_MONOTONIC).
    pub fn new(observer: &'o mut dyn Observer, began: u64) -> Ticker<'o> {
        Ticker {
            observer: std::cell::RefCell::new(observer),
            began,
            last: std::cell::Cell::new(None),
        }
    }

    /// `what` is under way, `files` done so far (and in all): said at once the first time,
    /// then at most every [`TICK_NS`].
    pub fn tick(&self, what: &'static str, files: Option<(u64, Option<u64>)>) {
        let now = crate::measure::clock::monotonic_ns();
        if self
            .last
            .get()
            .is_none_or(|t| now.saturating_sub(t) >= TICK_NS)
        {
            self.last.set(Some(now));
            if let Ok(mut observer) = self.observer.try_borrow_mut() {
                observer.preparing(&Preparing {
                    what,
                    for_ns: now.saturating_sub(self.began),
                    files,
                });
            }
        }
    }

    /// As [`Ticker::tick`], once the step has taken [`TICK_NS`]: a step that is usually quick
    /// is said only when it is not.
    pub fn tick_if_slow(&self, what: &'static str, files: Option<(u64, Option<u64>)>) {
        let now = crate::measure::clock::monotonic_ns();
        if now.saturating_sub(self.began) >= TICK_NS {
            self.tick(what, files);
        }
    }

    /// `what` begins now.
    pub fn say(&self, what: &'static str) {
        self.last.set(None);
        self.tick(what, None);
    }

    /// A notice, now.
    pub fn notice(&self, text: &str) {
        if let Ok(mut observer) = self.observer.try_borrow_mut() {
            observer.notice(text);
        }
    }
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

    /// Before the run starts, a slow step of its own is under way and has come this far: said
    /// when it begins, then a few times a second while it goes on.
    fn preparing(&mut self, step: &Preparing) {
        let _ = step;
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
