//! Runs a plan: N runs of one command, or several commands interleaved, each run through the
//! named steps of `step.rs`. It measures and records; it never renders or prints.
//!
//! The loop reads like the list of what happens to a run: `--prepare` (`around.rs`, with
//! `--setup`, `--conclude` and `--cleanup`), the cold
//! action (`cold.rs`), the streams (`wiring.rs`), the measured run and its record (`step.rs`);
//! `finish.rs` writes the batch document. Whoever watches (a progress line) is told through
//! [`Observer`].
#![forbid(unsafe_code)]

mod around;
mod capture;
mod cold;
mod command;
mod compare;
mod finish;
mod outcome;
mod program;
mod progress;
mod shared;
mod signals;
mod step;
mod watch;
mod wiring;

pub use command::CommandBatch;
pub use compare::{round_order, run_compare, CompareOutcome};
pub use outcome::{BatchOutcome, SingleRun, Step};
pub use program::exit_code_for_start_failure;
pub use progress::{BatchStart, Observer, RunEnd, RunStart, Unobserved};
pub use shared::Shared;
pub use signals::Signals;
pub use watch::{FirstPagedIn, PAGED_IN_TOP};

use crate::plan::Plan;
use crate::record::artifacts::ArtifactError;

/// A batch that could not run: one line and the exit code it maps to.
#[derive(Debug)]
pub struct BatchError {
    /// One line for the user.
    pub message: String,
    /// 125 (coldtrace's own error), 126 (not executable) or 127 (not found).
    pub exit_code: u8,
    /// The kernel's error when the program was not found or is not executable.
    pub cannot_start: Option<coldtrace_syscalls::Errno>,
}

impl BatchError {
    /// coldtrace's own error (exit code 125).
    pub(crate) fn own(message: impl Into<String>) -> BatchError {
        BatchError {
            message: message.into(),
            exit_code: 125,
            cannot_start: None,
        }
    }
}

impl From<ArtifactError> for BatchError {
    fn from(e: ArtifactError) -> Self {
        BatchError::own(e.message)
    }
}

/// Runs one command's plan to the end (or until interrupted).
pub fn run(
    plan: &Plan,
    signals: &Signals,
    observer: &mut dyn Observer,
) -> Result<BatchOutcome, BatchError> {
    let mut shared = Shared::new(signals)?;
    let mut batch = CommandBatch::new(plan, plan.out_dir.as_deref(), &shared)?;
    batch.say_notices(observer);
    observer.batch_started(&BatchStart {
        commands: &[batch.shown_command()],
        total_runs: batch.total_runs(),
    });
    while !batch.is_done() {
        if let Some(sig) = shared.pending_interrupt() {
            batch.interrupt(sig);
            break;
        }
        let step = batch.run_next(&mut shared, None, observer)?;
        if let Some(cost_ns) = batch.first_cost_ns() {
            batch.choose_runs(cost_ns);
        }
        observer.total_runs(batch.total_runs());
        if step == Step::Stop {
            break;
        }
    }
    observer.finished();
    batch.cleanup(&mut shared);
    batch.say_notices(observer);
    batch.finish()
}
