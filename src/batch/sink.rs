//! The stderr of a batch whose output is discarded, kept as its last 64 KiB in an in-memory
//! file ([`StderrSink`]) for a failed run's tail. It holds and trims bytes; it never wires,
//! spawns or decides whether a run counts.
#![forbid(unsafe_code)]

use std::fs::File;
use std::io::Seek;

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
