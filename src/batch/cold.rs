//! The cold action before a run: evict the `--evict` files and/or drop the page cache, when
//! the plan says this run is due. It acts and reports what it did; it measures no run.
#![forbid(unsafe_code)]

use crate::batch::command::CommandBatch;
use crate::batch::error::{BatchError, NotRun};
use crate::batch::progress::{Observer, Ticker};
use crate::batch::shared::Shared;
use crate::batch::signals::Signals;
use crate::measure::cache::{self, EvictReport, FileTable, StayedFiles};
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
        // The first cold action walks the watched trees: evicting them takes the walk.
        let began = crate::measure::clock::monotonic_ns();
        self.walk_watched(signals, observer)?;
        let mut action = ColdAction::default();
        let ticker = Ticker::new(observer, began);
        if !plan.cold.evict.is_empty() {
            // Each file under an --evict root is evicted, then probed, with one open: the check
            // of the whole tree that follows the eviction is the one before this run.
            let mut stayed = StayedFiles::new(STAYED_TOP);
            let checked = self
                .check_watched(true, signals, &ticker, &mut |c| {
                    if c.file.under_evict() {
                        stayed.add(c.file, c.probe, c.fs_type);
                    }
                })
                .map_err(NotRun::Interrupted)?;
            let Some(check) = checked else {
                return Err(BatchError::own("--evict: the paths were not walked").into());
            };
            let report = check.evicted.unwrap_or_else(EvictReport::none);
            let files = self.table.as_ref().map_or(0, FileTable::evicted_files);
            self.say_evict_shortfall(files == 0, &report);
            self.say_slow("evicting", files, began, &ticker);
            let stayed = stayed.finish(check.residency.method);
            if self.first_stayed.is_none() {
                self.first_stayed = Some(stayed.clone());
            }
            action.stayed_cached = Some(StayedRecord(stayed));
            action.evicted_files = Some(report.files);
            action.evicted_bytes = Some(report.bytes);
            action.evict_failed_files = Some(report.failed);
            self.fresh_check = Some(check.residency);
        }
        if plan.cold.drop_caches {
            ticker.say("dropping caches");
            cache::drop_caches().map_err(|e| NotRun::from(BatchError::own(e.to_string())))?;
            action.dropped_caches = true;
            // What the eviction's check found is no longer so.
            self.fresh_check = None;
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
