//! A run's standard streams: its kept output (`capture.rs`), its stdin, /dev/null, the sinks
//! of `sink.rs` (stderr's tail, `--output pipe`, `--output FILE`), wired into spawn options. It opens and resets descriptors; it spawns
//! nothing.
#![forbid(unsafe_code)]

use crate::batch::capture::{Kept, RunCapture};
use crate::batch::command::CommandBatch;
use crate::batch::error::{stdin_error, BatchError, NotRun};
use crate::batch::shared::Shared;
use crate::batch::signals::Signals;
use crate::batch::sink::{DrainedPipe, StderrSink, StdoutFile};
use crate::plan::{OutputMode, Plan, StdinMode};
use crate::untrusted::{self, OpenError, Want};
use coldtrace_syscalls::{Signal, SignalFd, SpawnOptions};
use std::fs::File;
use std::os::fd::AsFd;
use std::path::Path;

/// The descriptors one run owns: its captured output and its stdin file.
pub(super) struct RunIo {
    /// stdout and stderr on their way to `runs/NNN/` when outputs go to files.
    pub(super) capture: Option<RunCapture>,
    /// `--stdin FILE`, opened afresh for this run.
    pub(super) stdin_file: Option<File>,
}

impl CommandBatch<'_> {
    /// Says once in a batch that a run's kept output was cut (see [`crate::batch::capture::KEPT_LIMIT`]).
    pub(super) fn note_cut_output(&mut self, index: u64, out: &Kept, err: &Kept) {
        for (name, kept) in [("stdout", out), ("stderr", err)] {
            if let (Some(cut), false) = (kept.cut_at, self.cut_said) {
                self.cut_said = true;
                self.notices.push(format!(
                    "run #{index} wrote {} bytes to its {name}: the kept file was cut at {} GiB, \
                     the most coldtrace keeps of one stream of a run",
                    kept.bytes,
                    cut >> 30
                ));
            }
        }
    }

    /// Opens what run `index` reads from and writes to, and empties the stderr sink. A signal
    /// that asks to stop while a FIFO given as `--stdin` waits for its writer ends the run
    /// before anything of it was created.
    pub(super) fn wire_io(&mut self, shared: &mut Shared<'_>, index: u64) -> Result<RunIo, NotRun> {
        let plan = self.plan;
        let stdin_file = match &self.stdin_file_path {
            Some(path) => match open_stdin(path, &shared.signals.fd) {
                Ok(file) => Some(file),
                Err(OpenError::Interrupted(sig)) => return Err(NotRun::Interrupted(sig)),
                Err(e) => return Err(stdin_error(path, &e).into()),
            },
            None => None,
        };
        let capture = match (&self.dir, &plan.output) {
            (Some(_), OutputMode::Keep) => Some(RunCapture::new(index, self.spare_memfds.take())?),
            _ => None,
        };
        if plan.stdin == StdinMode::Null {
            shared.open_dev_null_in()?;
        }
        if let Some(sink) = &mut self.stderr_sink {
            sink.reset();
        }
        match &plan.output {
            OutputMode::Pipe => shared.open_stdout_pipe()?,
            OutputMode::File(path) => {
                if let Some(file) = &mut self.stdout_file {
                    file.empty().map_err(|e| {
                        BatchError::own(format!(
                            "--output {}: cannot empty it: {e}",
                            crate::text::escape_controls(&path.display().to_string())
                        ))
                    })?;
                }
            }
            _ => {}
        }
        // stdout's /dev/null, and stderr's when there is no in-memory sink (no memfds).
        let discarded = matches!(
            plan.output,
            OutputMode::Null | OutputMode::Pipe | OutputMode::File(_)
        );
        if discarded {
            shared.dev_null()?;
        }
        Ok(RunIo {
            capture,
            stdin_file,
        })
    }
}

/// `--stdin PATH` for one run: opened without blocking, checked on its descriptor, and for a
/// FIFO its writer waited for (signals still stop coldtrace meanwhile).
fn open_stdin(path: &Path, signals: &SignalFd) -> Result<File, OpenError> {
    let opened = untrusted::open(path, Want::Input)?;
    untrusted::ready_for_child(&opened, signals)?;
    Ok(File::from(opened.fd))
}

/// Where a run's output goes when it is not kept: what the batch and its runs share.
pub(super) struct Sinks<'a> {
    pub(super) dev_null_in: Option<&'a File>,
    pub(super) dev_null_out: Option<&'a File>,
    pub(super) stdout_pipe: Option<&'a DrainedPipe>,
    pub(super) stdout_file: Option<&'a StdoutFile>,
    pub(super) stderr_sink: Option<&'a StderrSink>,
}

/// The streams and process settings a run is spawned with.
pub(super) fn spawn_options<'a>(
    plan: &Plan,
    io: &'a RunIo,
    sinks: Sinks<'a>,
    signals: &Signals,
) -> SpawnOptions<'a> {
    let dev_null = sinks.dev_null_out.map(|f| f.as_fd());
    let tail = sinks.stderr_sink.map(|s| s.file.as_fd()).or(dev_null);
    let (stdout, stderr) = match (&io.capture, &plan.output) {
        (Some(c), _) => (Some(c.stdout.fd()), Some(c.stderr.fd())),
        (None, OutputMode::Null) => (dev_null, tail),
        (None, OutputMode::Pipe) => (sinks.stdout_pipe.map(|p| p.write.as_fd()), tail),
        (None, OutputMode::File(_)) => (sinks.stdout_file.map(|f| f.file.as_fd()), tail),
        // With --json, stdout is the JSON document's: the command's own output goes to the
        // terminal through stderr (fd 2), so `coldtrace run --json -- cmd | jq` parses.
        (None, _) if plan.json => (Some(rustix::stdio::stderr()), None),
        (None, _) => (None, None),
    };
    SpawnOptions {
        stdin: match plan.stdin {
            StdinMode::Null => sinks.dev_null_in.map(|f| f.as_fd()),
            _ => io.stdin_file.as_ref().map(|f| f.as_fd()),
        },
        stdout,
        stderr,
        new_process_group: plan.timeout_ns.is_some(),
        signal_mask: Some(signals.child_mask),
        // A coldtrace killed outright (SIGKILL, a crash) takes its command with it.
        parent_death_signal: Some(Signal::KILL),
        ..SpawnOptions::default()
    }
}
