//! The cold action before a run: evict the `--evict` files and/or drop the page cache, when
//! the plan says this run is due. It acts and reports what it did; it measures no run.
#![forbid(unsafe_code)]

use crate::batch::command::CommandBatch;
use crate::batch::error::{BatchError, NotRun};
use crate::batch::progress::Observer;
use crate::batch::shared::Shared;
use crate::batch::signals::Signals;
use crate::measure::cache::{self, CacheError, EvictReport, FileSet};
use crate::plan::ColdWhen;
use crate::record::run::{ColdAction, Role, StayedRecord};

/// Files named, with their reason, when some evicted pages stayed cached.
const STAYED_TOP: usize = 5;

/// What `--drop-caches` says at its first drop (a line of at most 80 columns after
/// `coldtrace: `).
pub const DROP_CACHES_REACH: &str =
    "--drop-caches empties the page cache for every process on this host";
/// What `--evict` says at its first eviction.
pub const EVICT_REACH: &str = "--evict drops the files' cached pages for every process on the host";

/// How often a slow step is said again while it goes on.
const TICK_NS: u64 = 250_000_000;

/// Tells an observer what a slow step is doing, when it begins and then every [`TICK_NS`],
/// from the per-file checks of the walk and the eviction (which only borrow it).
struct Ticker<'o> {
    observer: std::cell::RefCell<&'o mut dyn Observer>,
    began: u64,
    last: std::cell::Cell<Option<u64>>,
}

impl<'o> Ticker<'o> {
    fn new(observer: &'o mut dyn Observer, began: u64) -> Ticker<'o> {
        Ticker {
            observer: std::cell::RefCell::new(observer),
            began,
            last: std::cell::Cell::new(None),
        }
    }

    /// `what` is under way: said at once the first time, then at most every [`TICK_NS`].
    fn tick(&self, what: &'static str) {
        let now = crate::measure::clock::monotonic_ns();
        if self
            .last
            .get()
            .is_none_or(|t| now.saturating_sub(t) >= TICK_NS)
        {
            self.last.set(Some(now));
            if let Ok(mut observer) = self.observer.try_borrow_mut() {
                observer.preparing(what, now.saturating_sub(self.began));
            }
        }
    }

    /// `what` begins now.
    fn say(&self, what: &'static str) {
        self.last.set(None);
        self.tick(what);
    }
}

impl CommandBatch<'_> {
    /// Whether a run of `role` starts cold (the plan evicts or drops before it). Every run
    /// after a cold action is the first or has role `cold` ([`CommandBatch::role_of`]).
    pub(super) fn cold_due(&self, role: Role) -> bool {
        match self.plan.cold.when {
            Some(ColdWhen::FirstOnly) => role == Role::First,
            Some(ColdWhen::EveryRun | ColdWhen::Cycles(_)) => {
                matches!(role, Role::First | Role::Cold)
            }
            None => false,
        }
    }

    /// Establishes the cold state before a run of `role`, when due, telling `observer` what it
    /// is doing while it takes time. The walk and the eviction give up at once when a signal
    /// asks coldtrace to stop (the run then does not happen).
    pub(super) fn cold_action(
        &mut self,
        role: Role,
        signals: &Signals,
        observer: &mut dyn Observer,
    ) -> Result<Option<ColdAction>, NotRun> {
        let plan = self.plan;
        if !self.cold_due(role) {
            return Ok(None);
        }
        let began = crate::measure::clock::monotonic_ns();
        let mut action = ColdAction::default();
        let ticker = Ticker::new(observer, began);
        let stop = || {
            ticker.tick("evicting");
            signals.pending_interrupt()
        };
        if !plan.cold.evict.is_empty() {
            let set = match FileSet::collect_until(&plan.cold.evict, &stop) {
                Ok(set) => set,
                Err(CacheError::Interrupted(sig)) => return Err(NotRun::Interrupted(sig)),
                Err(e) => return Err(BatchError::own(format!("--evict: {e}")).into()),
            };
            let report = set
                .evict_until(&stop)
                .map_err(|(_, sig)| NotRun::Interrupted(sig))?;
            self.say_evict_shortfall(set.is_empty(), &report);
            // A signal during the probe that follows stops the batch before the run, as one
            // during the eviction does.
            let caught = std::cell::Cell::new(None);
            let stop_and_keep = || {
                let sig = stop();
                caught.set(caught.get().or(sig));
                sig
            };
            let stayed = set.stayed_cached(STAYED_TOP, &stop_and_keep);
            if let Some(sig) = caught.get() {
                return Err(NotRun::Interrupted(sig));
            }
            if self.first_stayed.is_none() {
                self.first_stayed = Some(stayed.clone());
            }
            action.stayed_cached = Some(StayedRecord(stayed));
            action.evicted_files = Some(report.files);
            action.evicted_bytes = Some(report.bytes);
            action.evict_failed_files = Some(report.failed);
        }
        if plan.cold.drop_caches {
            ticker.say("dropping caches");
            cache::drop_caches().map_err(|e| NotRun::from(BatchError::own(e.to_string())))?;
            action.dropped_caches = true;
        }
        action.took_ns = crate::measure::clock::monotonic_ns().saturating_sub(began);
        Ok(Some(action))
    }

    /// Says once per invocation, at the first cold action, that the page cache is the
    /// machine's: what `--drop-caches` or `--evict` drops, every process on the host (another
    /// tenant of a shared one) loses too.
    pub(super) fn say_cold_reach(&mut self, shared: &mut Shared<'_>) {
        if std::mem::replace(&mut shared.cold_reach_said, true) {
            return;
        }
        self.notices.push(match self.plan.cold.drop_caches {
            true => DROP_CACHES_REACH.into(),
            false => EVICT_REACH.into(),
        });
    }

    /// Says once that a run is not as cold as asked: files (or unreadable entries) were not
    /// evicted, or there was nothing to evict. Each run's record counts its own failures.
    fn say_evict_shortfall(&mut self, empty: bool, report: &EvictReport) {
        if self.evict_said || (!empty && report.failed == 0) {
            return;
        }
        self.evict_said = true;
        self.notices.push(match &report.first_error {
            Some(first) => format!(
                "--evict: {} of {} files or entries could not be evicted (first: {first}); \
                 those runs are not fully cold (cold_action.evict_failed_files)",
                report.failed,
                report.failed + report.files
            ),
            None => "--evict: no regular file under the given paths; nothing is evicted".into(),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reach_of_a_cold_action_is_one_line() {
        for notice in [DROP_CACHES_REACH, EVICT_REACH] {
            assert!(
                "coldtrace: ".len() + notice.chars().count() <= 80,
                "{notice}"
            );
        }
    }
}
