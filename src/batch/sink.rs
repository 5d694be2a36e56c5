//! Where a batch's output goes when it is not kept: the stderr, kept as its last 64 KiB in an
//! in-memory file ([`StderrSink`]) for a failed run's tail; stdout through a pipe that a thread
//! reads and discards ([`DrainedPipe`], `--output pipe`); stdout into a file emptied before
//! every run ([`StdoutFile`], `--output FILE`). It holds, drains and trims bytes; it never
//! wires, spawns or decides whether a run counts.
#![forbid(unsafe_code)]

use std::fs::File;
use std::io::Seek;
use std::os::fd::OwnedFd;
use std::path::Path;

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

    /// Empties the sink before a run. Most runs write nothing to stderr: seeking to the end
    /// then finds size 0 and leaves the offset at 0, one call instead of a truncate and a seek.
    pub fn reset(&mut self) {
        if rustix::fs::seek(&self.file, rustix::fs::SeekFrom::End(0)) != Ok(0) {
            let _ = self.file.set_len(0);
            let _ = self.file.rewind();
        }
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

/// hyperfine's `--output pipe`: the command's stdout is the write end of a pipe whose read end
/// a thread of coldtrace reads and discards, from the first run to the end of the batch, so a
/// program that looks at its stdout finds a pipe (not `/dev/null`, where GNU grep, for one,
/// skips its work) and one that writes much waits only while the pipe is full.
///
/// The thread inherits coldtrace's blocked signals (they are taken from the signalfd), reads
/// into 16 KiB on its own 64 KiB stack (coldtrace's floor under every child's max RSS grows
/// by that much, not more), and ends at the end of the file: once the batch has dropped the
/// write end and no process it started still holds it.
pub struct DrainedPipe {
    /// What the command writes to.
    pub(super) write: OwnedFd,
}

impl DrainedPipe {
    /// A pipe ([pipe2(2)]) and the thread that empties it.
    ///
    /// [pipe2(2)]: https://man7.org/linux/man-pages/man2/pipe2.2.html
    pub fn create() -> std::io::Result<DrainedPipe> {
        let (read, write) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)?;
        std::thread::Builder::new()
            .name("coldtrace-pipe".into())
            .stack_size(64 * 1024)
            .spawn(move || drain(&read))?;
        Ok(DrainedPipe { write })
    }
}

/// Reads `read` until its end (or an error other than EINTR), keeping nothing.
fn drain(read: &OwnedFd) {
    let mut buffer = [0u8; 16 * 1024];
    loop {
        match rustix::io::read(read, &mut buffer) {
            Ok(0) => return,
            Ok(_) | Err(rustix::io::Errno::INTR) => {}
            Err(_) => return,
        }
    }
}

/// hyperfine's `--output FILE`: the command's stdout, emptied before every run, so that the
/// file ends holding the last run's output. Opened once, before the first run, without
/// following a symbolic link and only if it is (or becomes) a regular file.
pub struct StdoutFile {
    pub(super) file: File,
}

impl StdoutFile {
    /// Opens (creates) `path` for writing.
    pub fn open(path: &Path) -> Result<StdoutFile, String> {
        use std::os::unix::fs::OpenOptionsExt;
        let shown = || crate::text::escape_controls(&path.display().to_string());
        let file = File::options()
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o644)
            .custom_flags(
                (rustix::fs::OFlags::NOFOLLOW | rustix::fs::OFlags::NONBLOCK).bits() as i32,
            )
            .open(path)
            .map_err(|e| format!("--output {}: cannot open it: {e}", shown()))?;
        match file.metadata() {
            Ok(m) if m.is_file() => Ok(StdoutFile { file }),
            _ => Err(format!("--output {}: not a regular file", shown())),
        }
    }

    /// Empties the file before a run (its size and the offset the child shares).
    pub fn empty(&mut self) -> std::io::Result<()> {
        self.file.set_len(0)?;
        self.file.rewind()
    }
}
