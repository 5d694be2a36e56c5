//! A run's standard streams: its captured output (`capture.rs`), its stdin, /dev/null and the
//! in-memory stderr sink, wired into spawn options. It opens and resets descriptors; it spawns
//! nothing.
#![forbid(unsafe_code)]

use crate::batch::capture::{Kept, RunCapture};
use crate::batch::command::CommandBatch;
use crate::batch::error::{stdin_error, NotRun};
use crate::batch::shared::Shared;
use crate::batch::signals::Signals;
use crate::batch::sink::StderrSink;
use crate::plan::{OutputMode, Plan, StdinMode};
use crate::untrusted::{self, OpenError, Want};
use coldtrace_syscalls::{SignalFd, SpawnOptions};
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
        let capture = match (&self.dir, plan.output) {
            (Some(_), OutputMode::File) => Some(RunCapture::new(index, self.spare_memfds.take())?),
            _ => None,
        };
        if plan.stdin == StdinMode::Null {
            shared.open_dev_null_in()?;
        }
        if let Some(sink) = &mut self.stderr_sink {
            sink.reset();
        }
        if capture.is_none() && plan.output == OutputMode::Null {
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

/// The streams and process settings a run is spawned with.
pub(super) fn spawn_options<'a>(
    plan: &Plan,
    io: &'a RunIo,
    dev_null_in: Option<&'a File>,
    dev_null_out: Option<&'a File>,
    stderr_sink: Option<&'a StderrSink>,
    signals: &Signals,
) -> SpawnOptions<'a> {
    let dev_null = dev_null_out.map(|f| f.as_fd());
    let (stdout, stderr) = match (&io.capture, plan.output) {
        (Some(c), _) => (Some(c.stdout.fd()), Some(c.stderr.fd())),
        (None, OutputMode::Null) => (dev_null, stderr_sink.map(|s| s.file.as_fd()).or(dev_null)),
        // With --json, stdout is the JSON document's: the command's own output goes to the
        // terminal through stderr (fd 2), so `coldtrace run --json -- cmd | jq` parses.
        (None, _) if plan.json => (Some(rustix::stdio::stderr()), None),
        (None, _) => (None, None),
    };
    SpawnOptions {
        stdin: match plan.stdin {
            StdinMode::Null => dev_null_in.map(|f| f.as_fd()),
            _ => io.stdin_file.as_ref().map(|f| f.as_fd()),
        },
        stdout,
        stderr,
        new_process_group: plan.timeout_ns.is_some(),
        signal_mask: Some(signals.child_mask),
        handled_signals: signals.handled,
        ..SpawnOptions::default()
    }
}
