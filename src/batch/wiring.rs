//! A run's standard streams: its captured output (`capture.rs`), its stdin, /dev/null and the
//! in-memory stderr sink, wired into spawn options. It opens and resets descriptors; it spawns
//! nothing.
#![forbid(unsafe_code)]

use crate::batch::capture::RunCapture;
use crate::batch::command::{stdin_error, CommandBatch};
use crate::batch::step::NotRun;
use crate::batch::Shared;
use crate::batch::Signals;
use crate::plan::{OutputMode, Plan, StdinMode};
use crate::untrusted::{self, OpenError, Want};
use coldtrace_syscalls::{SignalFd, SpawnOptions};
use std::fs::File;
use std::io::Seek;
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
            (Some(_), OutputMode::File) => Some(RunCapture::new(index)?),
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

/// The stderr of a batch whose output is discarded: only its last lines are used (a failed
/// run's tail), so only its end is kept. It is an anonymous in-memory file ([memfd_create(2)])
/// that the child writes at a growing offset; while it runs, [`StderrSink::trim`] punches
/// out everything but the last [`SINK_KEEP`] bytes ([fallocate(2)] `FALLOC_FL_PUNCH_HOLE`).
/// The child sees a file that accepts every write, as `/dev/null` does; 2 GiB of stderr no
/// longer holds 2 GiB of memory.
///
/// [memfd_create(2)]: https://man7.org/linux/man-pages/man2/memfd_create.2.html
/// [fallocate(2)]: https://man7.org/linux/man-pages/man2/fallocate.2.html
pub struct StderrSink {
    pub(super) file: File,
    punched: std::cell::Cell<u64>,
}

/// What a [`StderrSink`] keeps: far more than the 4 KiB a tail reads.
pub const SINK_KEEP: u64 = 64 * 1024;
/// Punch only once this much more has been written (one system call per MiB, at most).
const SINK_SLACK: u64 = 1024 * 1024;

impl StderrSink {
    /// A new sink (`None` without memfds: the output then goes to `/dev/null`, without a tail).
    pub fn create() -> Option<StderrSink> {
        rustix::fs::memfd_create("coldtrace-stderr", rustix::fs::MemfdFlags::CLOEXEC)
            .ok()
            .map(|fd| StderrSink {
                file: File::from(fd),
                punched: std::cell::Cell::new(0),
            })
    }

    /// Empties the sink before a run.
    pub fn reset(&mut self) {
        let _ = self.file.set_len(0);
        let _ = self.file.rewind();
        self.punched.set(0);
    }

    /// Frees all but the last [`SINK_KEEP`] bytes written so far (the size stays: the child's
    /// offset and the tail's position are unchanged).
    pub fn trim(&self) {
        let Ok(stat) = rustix::fs::fstat(&self.file) else {
            return;
        };
        let end = u64::try_from(stat.st_size)
            .unwrap_or(0)
            .saturating_sub(SINK_KEEP);
        let from = self.punched.get();
        if end >= from.saturating_add(SINK_SLACK) {
            let mode =
                rustix::fs::FallocateFlags::PUNCH_HOLE | rustix::fs::FallocateFlags::KEEP_SIZE;
            if rustix::fs::fallocate(&self.file, mode, from, end - from).is_ok() {
                self.punched.set(end);
            }
        }
    }

    /// The last `max_lines` lines (see [`crate::record::artifacts::tail`]).
    pub fn tail(&mut self, max_lines: usize) -> String {
        self.trim();
        crate::record::artifacts::tail(&mut self.file, max_lines)
    }
}
