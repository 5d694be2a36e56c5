//! Runs a plan: N runs of one command, or several commands interleaved, each run through the
//! named steps of `step.rs`. It measures and records; it never renders or prints.
//!
//! The loop reads like the list of what happens to a run: `--prepare` (`around.rs`, with
//! `--setup`, `--conclude` and `--cleanup`), the cold
//! action (`cold.rs`), the streams (`wiring.rs`), the measured run and its record (`step.rs`);
//! `finish.rs` writes the batch document. Whoever watches (a progress line) is told through
//! [`Observer`].
//!
//! Imports run one way: the step files extend [`CommandBatch`] (`command.rs`) with `impl`
//! blocks, and `command.rs` imports none of them; what the steps share lives in leaves that
//! import no step: `error.rs`, `outcome.rs` (what a batch hands back), `sink.rs` (a discarded
//! stderr's tail), `shared.rs` (and `group.rs`, its cgroup), `signals.rs`, `program.rs`,
//! `progress.rs`.
#![forbid(unsafe_code)]

mod around;
mod capture;
mod cold;
mod command;
mod compare;
mod created;
mod error;
mod finish;
mod group;
mod outcome;
mod page_ins;
mod program;
mod progress;
mod shared;
mod signals;
mod sink;
mod step;
mod watch;
mod wiring;

pub use command::CommandBatch;
pub use compare::{round_order, run_compare, CompareOutcome};
pub use error::BatchError;
pub use outcome::{
    cannot_wait, named_processes, processes_count, BatchOutcome, FailureStop, FirstPagedIn,
    SingleRun, Step, SurvivorsSeen,
};
pub use program::exit_code_for_start_failure;
pub use progress::{BatchStart, Observer, Preparing, RunEnd, RunStart, Unobserved};
pub use shared::Shared;
pub use signals::{hold_file_size_signal, Signals};
pub use watch::PAGED_IN_TOP;

use crate::plan::Plan;

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
        if let Some(cost_ns) = batch.cost_ns() {
            batch.choose_runs(cost_ns);
        }
        observer.total_runs(batch.total_runs());
        if step == Step::Stop {
            break;
        }
    }
    shared.stop_tree();
    // Before --cleanup: a drop_caches of its own is for the next batch to see.
    shared.mark_end();
    observer.finished();
    batch.cleanup(&mut shared);
    batch.say_notices(observer);
    batch.finish(shared.stop_spawner())
}
