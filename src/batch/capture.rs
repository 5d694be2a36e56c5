//! A run's stdout and stderr with `-o DIR`: caught in memory while the command runs and made
//! into `runs/NNN/{stdout,stderr}` only when the run wrote something. It moves bytes; it never
//! decides whether a run counts.
//!
//! Why not create the files before the spawn: on this project's ext4 a directory and two
//! files cost 0.2–1.2 ms per run, more than a short command takes, and most runs of a start-up
//! benchmark write nothing. So the child writes into two anonymous in-memory files
//! ([memfd_create(2)], fresh for every run), and after the run what it wrote is copied
//! ([sendfile(2)]) into `runs/NNN/`, which is created then. A command that writes much does not
//! hold it in memory: while it runs, every [`SPILL_AT`] bytes are moved to the file and punched
//! out of the memfd ([fallocate(2)] `FALLOC_FL_PUNCH_HOLE`, on the waiting loop's tick, outside
//! the timed window's own work). Side effects: the child's stdout is a memfd rather than a file
//! under DIR (the same whatever file system DIR is on), and output written after the run ended
//! (by a daemonised descendant still holding the descriptor) is not kept.
//!
//! [memfd_create(2)]: https://man7.org/linux/man-pages/man2/memfd_create.2.html
//! [sendfile(2)]: https://man7.org/linux/man-pages/man2/sendfile.2.html
//! [fallocate(2)]: https://man7.org/linux/man-pages/man2/fallocate.2.html
#![forbid(unsafe_code)]

use crate::record::artifacts::{ArtifactError, BatchDir};
use std::cell::{Cell, RefCell};
use std::fs::File;
use std::os::fd::{AsFd, BorrowedFd};

/// Moved to the artifact file while the command runs, once this much is waiting.
pub const SPILL_AT: u64 = 1024 * 1024;

/// The two streams of one run.
pub struct RunCapture {
    index: u64,
    /// The child's stdout.
    pub stdout: Stream,
    /// The child's stderr.
    pub stderr: Stream,
}

/// One stream: the memfd the child writes, and how much of it is already in the artifact.
pub struct Stream {
    name: &'static str,
    memfd: File,
    /// Bytes `[0, moved)` are in `dest` (and punched out of the memfd).
    moved: Cell<u64>,
    /// `runs/NNN/NAME`, once created, and its path relative to the batch directory.
    dest: RefCell<Option<(File, String)>>,
    /// The first error while moving bytes during the run (said after it).
    failed: RefCell<Option<ArtifactError>>,
}

/// Where a run's stream ended up.
pub struct Kept {
    /// `runs/NNN/NAME`, relative to the batch directory; `None` when the run wrote nothing.
    pub path: Option<String>,
    /// How many bytes the run wrote to it.
    pub bytes: u64,
    /// The artifact file, for reading a failed run's tail.
    pub file: Option<File>,
}

impl RunCapture {
    /// Two fresh memfds for run `index` (fresh, so that a descendant still writing to the
    /// last run's never mixes into this run's).
    pub fn new(index: u64) -> Result<RunCapture, ArtifactError> {
        Ok(RunCapture {
            index,
            stdout: Stream::new("stdout")?,
            stderr: Stream::new("stderr")?,
        })
    }

    /// While the command runs: moves what each stream holds beyond [`SPILL_AT`].
    pub fn spill(&self, dir: &BatchDir) {
        for stream in [&self.stdout, &self.stderr] {
            stream.spill(dir, self.index, SPILL_AT);
        }
    }

    /// After the run: moves the rest; a stream the run did not write to makes no file.
    pub fn finish(self, dir: &BatchDir) -> Result<(Kept, Kept), ArtifactError> {
        let index = self.index;
        Ok((
            self.stdout.finish(dir, index)?,
            self.stderr.finish(dir, index)?,
        ))
    }
}

impl Stream {
    fn new(name: &'static str) -> Result<Stream, ArtifactError> {
        let memfd =
            rustix::fs::memfd_create(name, rustix::fs::MemfdFlags::CLOEXEC).map_err(|e| {
                ArtifactError {
                    message: format!("cannot create an in-memory file for the run's {name}: {e}"),
                }
            })?;
        Ok(Stream {
            name,
            memfd: File::from(memfd),
            moved: Cell::new(0),
            dest: RefCell::new(None),
            failed: RefCell::new(None),
        })
    }

    /// The descriptor the child writes to.
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.memfd.as_fd()
    }

    /// Bytes written so far.
    fn written(&self) -> u64 {
        rustix::fs::fstat(&self.memfd).map_or(0, |st| u64::try_from(st.st_size).unwrap_or(0))
    }

    /// Moves what was written beyond `moved` to the artifact once at least `min` bytes wait.
    fn spill(&self, dir: &BatchDir, index: u64, min: u64) {
        if self.failed.borrow().is_some() {
            return;
        }
        let end = self.written();
        let from = self.moved.get();
        if end <= from || end - from < min {
            return;
        }
        match self.move_range(dir, index, from, end) {
            Ok(()) => {
                self.moved.set(end);
                // Free what is in the file now; the size (the child's offset) stays.
                let mode =
                    rustix::fs::FallocateFlags::PUNCH_HOLE | rustix::fs::FallocateFlags::KEEP_SIZE;
                let _ = rustix::fs::fallocate(&self.memfd, mode, from, end - from);
            }
            Err(e) => *self.failed.borrow_mut() = Some(e),
        }
    }

    /// Copies `[from, end)` of the memfd to the end of the artifact, creating it first.
    fn move_range(
        &self,
        dir: &BatchDir,
        index: u64,
        from: u64,
        end: u64,
    ) -> Result<(), ArtifactError> {
        let mut dest = self.dest.borrow_mut();
        if dest.is_none() {
            *dest = Some(dir.create_run_file(index, self.name)?);
        }
        let Some((file, rel)) = dest.as_ref() else {
            return Ok(());
        };
        let mut offset = from;
        while offset < end {
            let count = usize::try_from(end - offset).unwrap_or(usize::MAX);
            match rustix::fs::sendfile(file, &self.memfd, Some(&mut offset), count) {
                Ok(0) => break,
                Ok(_) => {}
                Err(rustix::io::Errno::INTR) => {}
                Err(e) => {
                    return Err(ArtifactError {
                        message: format!(
                            "cannot write {}: {}",
                            dir.root().join(rel).display(),
                            crate::record::artifacts::explain(&e.into())
                        ),
                    })
                }
            }
        }
        Ok(())
    }

    fn finish(self, dir: &BatchDir, index: u64) -> Result<Kept, ArtifactError> {
        self.spill(dir, index, 1);
        if let Some(e) = self.failed.into_inner() {
            return Err(e);
        }
        let bytes = self.moved.get();
        Ok(match self.dest.into_inner() {
            Some((file, rel)) => Kept {
                path: Some(rel),
                bytes,
                file: Some(file),
            },
            None => Kept {
                path: None,
                bytes,
                file: None,
            },
        })
    }
}
