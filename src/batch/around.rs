//! The commands around a command's runs: `--setup` once before its first run, `--prepare`
//! before and `--conclude` after every run, `--cleanup` once after its last run. Each is
//! `/bin/sh -c CMD` through the same runner, outside every measured run's timed window. It runs
//! them and keeps why one failed; it never records them (they have no line in `runs.jsonl`) and
//! never runs one inside a measured run's timed window.
#![forbid(unsafe_code)]

use crate::batch::command::CommandBatch;
use crate::batch::outcome::Step;
use crate::batch::shared::Shared;
use crate::measure::runner::{self, RunLimits};
use crate::measure::survivors::Survivors;
use coldtrace_syscalls::{Program, Signal, SpawnOptions};
use std::os::fd::AsFd;

/// Which of the commands around the runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Around {
    /// `--setup`: once, before the first run (warm-ups included).
    Setup,
    /// `--prepare`: before every run.
    Prepare,
    /// `--conclude`: after every run.
    Conclude,
    /// `--cleanup`: once, after the last run.
    Cleanup,
}

impl Around {
    /// The flag that asked for it.
    pub(crate) fn flag(self) -> &'static str {
        match self {
            Around::Setup => "--setup",
            Around::Prepare => "--prepare",
            Around::Conclude => "--conclude",
            Around::Cleanup => "--cleanup",
        }
    }

    /// When it ran, for the message that says it failed.
    fn when(self, index: u64) -> String {
        match self {
            Around::Setup => "before the first run".into(),
            Around::Prepare => format!("before run {index}"),
            Around::Conclude => format!("after run {index}"),
            Around::Cleanup => "after the last run".into(),
        }
    }
}

impl CommandBatch<'_> {
    /// The program of `around` and its text, if the plan has one.
    fn around_program(&self, around: Around) -> Option<(&Program, String)> {
        let (program, text) = match around {
            Around::Setup => (&self.around.setup, &self.plan.setup),
            Around::Prepare => (&self.around.prepare, &self.plan.prepare),
            Around::Conclude => (&self.around.conclude, &self.plan.conclude),
            Around::Cleanup => (&self.around.cleanup, &self.plan.cleanup),
        };
        let shown = text.as_deref().unwrap_or_default().to_string_lossy();
        Some((program.as_ref()?, shown.into_owned()))
    }

    /// Runs `around` (if the plan has it) next to run `index`; `Some(Stop)` when the batch must
    /// stop: it failed (the reason is kept) or coldtrace was asked to stop meanwhile. Its wall
    /// time counts towards the run's cost when the count is chosen by time.
    pub(super) fn around_step(
        &mut self,
        shared: &mut Shared<'_>,
        around: Around,
        index: u64,
    ) -> Option<Step> {
        let (program, text) = self.around_program(around)?;
        let (ran, survivors) = run_around(program, shared);
        if let Some(named) = crate::batch::outcome::named_processes(&survivors.processes, 5) {
            self.notices.push(format!(
                "{} left {} running: {named}; later runs leave {} alone",
                around.flag(),
                crate::batch::outcome::processes_count(survivors.count()),
                if survivors.count() == 1 { "it" } else { "them" },
            ));
        }
        let failure = match ran {
            Ok(wall_ns) => {
                self.around_ns = self.around_ns.saturating_add(wall_ns);
                return None;
            }
            Err(failure) => failure,
        };
        let message = format!(
            "{} failed {} ({}): {text}",
            around.flag(),
            around.when(index),
            failure.reason
        );
        if let Some(sig) = failure.interrupted {
            // Ctrl-C during one of them: an interruption, not a failing command.
            self.interrupted_by = Some(sig);
        } else if around == Around::Cleanup {
            // The runs are all recorded: the batch is complete, but not clean.
            self.notices.push(message.clone());
            self.cleanup_failure = Some(message);
        } else {
            self.stopped_reason = Some(format!("{message}; the batch stops"));
        }
        Some(Step::Stop)
    }

    /// `--setup`, once, before the first run.
    pub fn setup(&mut self, shared: &mut Shared<'_>) -> Step {
        self.setup_done = true;
        self.around_step(shared, Around::Setup, 0)
            .unwrap_or(Step::Continue)
    }

    /// `--cleanup`, once, after the last run — not after an interruption or a failed setup.
    pub fn cleanup(&mut self, shared: &mut Shared<'_>) {
        let setup_failed = self
            .stopped_reason
            .as_deref()
            .is_some_and(|r| r.starts_with("--setup"));
        if self.interrupted_by.is_none() && self.setup_done && !setup_failed {
            let index = self.next_index;
            self.around_step(shared, Around::Cleanup, index);
        }
    }
}

/// Why a command around the runs failed.
struct Failure {
    reason: String,
    interrupted: Option<Signal>,
}

/// Runs one of them through `/bin/sh -c`, unmeasured; its stdout is discarded, its stderr
/// shown. Its wall time, or why it failed (and the signal if coldtrace was asked to stop); and
/// the processes it left running (spared by the runs from now on).
fn run_around(program: &Program, shared: &mut Shared<'_>) -> (Result<u64, Failure>, Survivors) {
    // A hook command moves system-wide counters: the next run's delta must not include it.
    shared.sampler.forget();
    if let Err(e) = shared.dev_null() {
        let failure = Failure {
            reason: e.message,
            interrupted: None,
        };
        return (Err(failure), Survivors::default());
    }
    let options = SpawnOptions {
        stdout: shared.dev_null_out.as_ref().map(|f| f.as_fd()),
        signal_mask: Some(shared.signals.child_mask),
        parent_death_signal: Some(Signal::KILL),
        ..SpawnOptions::default()
    };
    let limits = RunLimits {
        timeout_ns: None,
        kill_after_ns: 0,
        escalate_after_ns: None,
        spared: &shared.spared,
        // A command around the runs may start a server on purpose: it is left running,
        // and spared by the runs.
        survivors: crate::measure::survivors::SurvivorPolicy::Leave,
        group: None,
        signals: Some(&shared.signals.fd),
        counters: &[],
        inspect_child: false,
        orphans: Some(&shared.signals.subreaper),
        tick: None,
        tree: None,
    };
    // Never measured: cloned by coldtrace itself, whatever the batch's runs use.
    let via = runner::Via {
        stack: &mut shared.stack,
        floor: &mut shared.floor,
        spawner: &mut None,
    };
    let result = runner::measure(
        program,
        &options,
        via,
        &limits,
        &mut crate::measure::waiting::Quietly,
    );
    shared.spared.extend(result.survivors.keys());
    let ran = match (result.outcome.failure_reason(), result.interrupted_by) {
        (None, None) => Ok(result.wall_ns.unwrap_or(0)),
        (reason, interrupted) => Err(Failure {
            reason: reason.unwrap_or_else(|| "interrupted".into()),
            interrupted,
        }),
    };
    (ran, result.survivors)
}
