//! The `--prepare` step before a run: `/bin/sh -c CMD`, unmeasured, through the same runner.
//! It only prepares; its failure stops the batch, a signal during it interrupts it.
#![forbid(unsafe_code)]

use crate::batch::command::CommandBatch;
use crate::batch::{Shared, Step};
use crate::measure::runner::{self, RunLimits};
use coldtrace_syscalls::{Program, Signal, SpawnOptions};
use std::os::fd::AsFd;

impl CommandBatch<'_> {
    /// Runs `--prepare` (if any) before run `index`; `Some(Stop)` when the batch must stop.
    pub(super) fn prepare_step(&mut self, shared: &mut Shared<'_>, index: u64) -> Option<Step> {
        let prepare = self.prepare.as_ref()?;
        let (reason, interrupted) = run_prepare(prepare, shared).err()?;
        if let Some(sig) = interrupted {
            // Ctrl-C during --prepare: an interruption, not a failing prepare.
            self.interrupted_by = Some(sig);
            return Some(Step::Stop);
        }
        self.stopped_reason = Some(format!(
            "--prepare failed before run {index} ({reason}): {}; the batch stops",
            self.plan.prepare.as_deref().unwrap_or_default()
        ));
        Some(Step::Stop)
    }
}

/// Runs `--prepare` through `/bin/sh -c`, unmeasured; its stdout is discarded, its stderr shown.
/// On failure: the reason, and the signal if coldtrace was asked to stop meanwhile.
fn run_prepare(prepare: &Program, shared: &mut Shared<'_>) -> Result<(), (String, Option<Signal>)> {
    shared.dev_null().map_err(|e| (e.message, None))?;
    let options = SpawnOptions {
        stdout: shared.dev_null_out.as_ref().map(|f| f.as_fd()),
        signal_mask: Some(shared.signals.child_mask),
        handled_signals: shared.signals.handled,
        ..SpawnOptions::default()
    };
    let limits = RunLimits {
        timeout_ns: None,
        kill_after_ns: 0,
        signals: Some(&shared.signals.fd),
        counters: &[],
        inspect_child: false,
        orphans: Some(&shared.signals.subreaper),
    };
    let result = runner::measure(
        prepare,
        &options,
        &mut shared.stack,
        &mut shared.floor,
        &limits,
        |_| {},
    );
    match (result.outcome.failure_reason(), result.interrupted_by) {
        (None, None) => Ok(()),
        (reason, interrupted) => Err((reason.unwrap_or_else(|| "interrupted".into()), interrupted)),
    }
}
