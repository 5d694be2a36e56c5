//! The cold action before a run: evict the `--evict` files and/or drop the page cache, when
//! the plan says this run is due. It acts and reports what it did; it measures no run.
#![forbid(unsafe_code)]

use crate::batch::command::CommandBatch;
use crate::batch::BatchError;
use crate::measure::cache::{self, FileSet};
use crate::plan::ColdWhen;
use crate::record::run::{ColdAction, Role};

impl CommandBatch<'_> {
    /// Establishes the cold state before a run of `role`, when due.
    pub(super) fn cold_action(&self, role: Role) -> Result<Option<ColdAction>, BatchError> {
        let plan = self.plan;
        let due = match plan.cold.when {
            Some(ColdWhen::EveryRun) => role != Role::Warmup,
            Some(ColdWhen::FirstOnly) => role == Role::First,
            None => false,
        };
        if !due {
            return Ok(None);
        }
        let began = crate::measure::clock::monotonic_ns();
        let mut action = ColdAction::default();
        if !plan.cold.evict.is_empty() {
            let set = FileSet::collect(&plan.cold.evict)
                .map_err(|e| BatchError::own(format!("--evict: {e}")))?;
            let report = set.evict();
            action.evicted_files = Some(report.files);
            action.evicted_bytes = Some(report.bytes);
            action.evict_failed_files = Some(report.failed);
        }
        if plan.cold.drop_caches {
            cache::drop_caches().map_err(|e| BatchError::own(e.to_string()))?;
            action.dropped_caches = true;
        }
        action.took_ns = crate::measure::clock::monotonic_ns().saturating_sub(began);
        Ok(Some(action))
    }
}
