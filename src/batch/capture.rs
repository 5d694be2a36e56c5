//! A run's stdout and stderr with `-o DIR`: caught in memory while the command runs and made
//! into `runs/NNN/{stdout,stderr}` only when the run wrote something. It moves bytes; it never
//! decides whether a run counts.
//!
//! Why not create the files before the spawn: on this project's ext4 a directory and two
//! files cost 0.2–1.2 ms per run, more than a short command takes, and most runs of a start-up
//! benchmark write nothing. So the child writes into two anonymous in-memory files
//! ([memfd_create(2)]), and after the run what it wrote is copied ([sendfile(2)]) into
//! `runs/NNN/`, which is created then.
//!
//! The two memfds are fresh for a run unless the last run left both empty and left no process
//! alive (coldtrace is a subreaper and has no child left, [`coldtrace_syscalls::OrphanSweep`]):
//! then nothing can write into them any more, and they are used again (`/bin/true` with `-o`
//! on ext4: 679 µs per run against 700 µs with two fresh memfds every run).
//!
//! A command that writes much does not hold it in memory: while it runs, what it wrote is
//! moved to the file [`SPILL_AT`] bytes at a time and punched out of the memfd ([fallocate(2)]
//! `FALLOC_FL_PUNCH_HOLE`), on the waiting loop's tick. The exit of the command is only seen
//! when the tick returns, so the moving stops after the chunk in hand once the command has
//! exited (the rest moves after the reaping): the exit is seen at most one chunk's copy late
//! (~0.5 ms here). Side effects: the child's stdout is a memfd rather than a file under DIR
//! (the same whatever file system DIR is on), and output written after the run ended (by a
//! daemonised descendant still holding the descriptor) is not kept.
//!
//! What is kept is what the command wrote, holes included: only the parts of the memfd that
//! hold data are copied ([lseek(2)] `SEEK_DATA`/`SEEK_HOLE`), each to the same offset of the
//! artifact, so `truncate -s 1T /dev/stdout` makes a 1 TiB file with no block on disk, not
//! a terabyte of zeros. A stream is kept up to [`KEPT_LIMIT`] (its length, holes included): what
//! a run writes beyond it is counted in the record and dropped from the memfd, and the record
//! says where the file was cut.
//!
//! [memfd_create(2)]: https://man7.org/linux/man-pages/man2/memfd_create.2.html
//! [lseek(2)]: https://man7.org/linux/man-pages/man2/lseek.2.html
//! [sendfile(2)]: https://man7.org/linux/man-pages/man2/sendfile.2.html
//! [fallocate(2)]: https://man7.org/linux/man-pages/man2/fallocate.2.html
#![forbid(unsafe_code)]

use crate::record::artifacts::{ArtifactError, BatchDir};
use std::cell::{Cell, RefCell};
use std::fs::File;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};

/// Moved to the artifact file while the command runs, once this much is waiting, and in
/// chunks of this size.
pub const SPILL_AT: u64 = 1024 * 1024;

/// The longest a kept stream of one run gets (4 GiB, holes included): beyond it, output is
/// counted, not kept, so that no command fills the disk under the batch's own records.
pub const KEPT_LIMIT: u64 = 4 << 30;

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
    /// The memfd opened a second time, to find its holes without moving the child's offset.
    prober: RefCell<Option<File>>,
}

/// Where a run's stream ended up.
pub struct Kept {
    /// `runs/NNN/NAME`, relative to the batch directory; `None` when the run wrote nothing.
    pub path: Option<String>,
    /// How many bytes the run wrote to it (the length of what it wrote, holes included).
    pub bytes: u64,
    /// Where the artifact was cut ([`KEPT_LIMIT`]), when the run wrote more.
    pub cut_at: Option<u64>,
    /// The artifact file, for reading a failed run's tail.
    pub file: Option<File>,
}

/// The two empty memfds of a run that left no process behind, for the next run.
pub struct SpareMemfds {
    stdout: File,
    stderr: File,
}

impl RunCapture {
    /// The memfds for run `index`: `spare` ones (empty, and no process left that holds them),
    /// else two fresh ones (so that a descendant still writing to the last run's never mixes
    /// into this run's).
    pub fn new(index: u64, spare: Option<SpareMemfds>) -> Result<RunCapture, ArtifactError> {
        let (stdout, stderr) = match spare {
            Some(SpareMemfds { stdout, stderr }) => (
                Stream::reused("stdout", stdout),
                Stream::reused("stderr", stderr),
            ),
            None => (Stream::new("stdout")?, Stream::new("stderr")?),
        };
        Ok(RunCapture {
            index,
            stdout,
            stderr,
        })
    }

    /// While the command runs: moves what each stream holds, a chunk of [`SPILL_AT`] bytes at a
    /// time, until less than a chunk waits or `exited` says the command has ended.
    pub fn spill(&self, dir: &BatchDir, exited: &dyn Fn() -> bool) {
        for stream in [&self.stdout, &self.stderr] {
            while stream.spill(dir, self.index, SPILL_AT) {
                if exited() {
                    return;
                }
            }
        }
    }

    /// After the run: moves the rest; a stream the run did not write to makes no file. When
    /// `none_left_alive` (no process the run started still holds the memfds) and the run wrote
    /// to neither, the memfds come back for the next run.
    pub fn finish(
        self,
        dir: &BatchDir,
        none_left_alive: bool,
    ) -> Result<(Kept, Kept, Option<SpareMemfds>), ArtifactError> {
        let index = self.index;
        let (out, out_memfd) = self.stdout.finish(dir, index)?;
        let (err, err_memfd) = self.stderr.finish(dir, index)?;
        let spare = match (out_memfd, err_memfd) {
            (Some(stdout), Some(stderr)) if none_left_alive => Some(SpareMemfds { stdout, stderr }),
            _ => None,
        };
        Ok((out, err, spare))
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
        Ok(Stream::reused(name, File::from(memfd)))
    }

    fn reused(name: &'static str, memfd: File) -> Stream {
        Stream {
            name,
            memfd,
            moved: Cell::new(0),
            dest: RefCell::new(None),
            failed: RefCell::new(None),
            prober: RefCell::new(None),
        }
    }

    /// The descriptor the child writes to.
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.memfd.as_fd()
    }

    /// Bytes written so far.
    fn written(&self) -> u64 {
        rustix::fs::fstat(&self.memfd).map_or(0, |st| u64::try_from(st.st_size).unwrap_or(0))
    }

    /// Moves at most `chunk` bytes written beyond `moved` to the artifact, once at least
    /// `chunk` bytes wait (a hole is passed whole); whether it moved any.
    fn spill(&self, dir: &BatchDir, index: u64, chunk: u64) -> bool {
        if self.failed.borrow().is_some() {
            return false;
        }
        let from = self.moved.get();
        let written = self.written();
        if written.saturating_sub(from) < chunk {
            return false;
        }
        let end = match self.segment(from) {
            Some((data, _)) if data > from + chunk => data.min(written),
            Some(_) => from + chunk,
            None => written,
        };
        self.move_and_punch(dir, index, from, end)
    }

    /// The first run of data at or after `offset`, `[start, end)` (`SEEK_DATA`, `SEEK_HOLE`);
    /// `None` when only holes follow. Asked of a second open file description of the memfd
    /// (`/proc/self/fd/N`): the memfd's own offset is the child's, and must not move while it
    /// writes. Without `/proc`, everything is data.
    fn segment(&self, offset: u64) -> Option<(u64, u64)> {
        use rustix::fs::SeekFrom;
        let mut prober = self.prober.borrow_mut();
        if prober.is_none() {
            let path = format!("/proc/self/fd/{}", self.memfd.as_raw_fd());
            // Opened without blocking: only a regular file (the memfd) is kept.
            *prober = crate::measure::procfs::open(&path).map(std::fs::File::from);
        }
        let Some(prober) = prober.as_ref() else {
            return Some((offset, u64::MAX));
        };
        match rustix::fs::seek(prober, SeekFrom::Data(offset)) {
            Err(rustix::io::Errno::NXIO) => None,
            Err(_) => Some((offset, u64::MAX)),
            Ok(data) => {
                let hole = rustix::fs::seek(prober, SeekFrom::Hole(data)).unwrap_or(u64::MAX);
                Some((data, hole))
            }
        }
    }

    /// Moves `[from, end)` to the artifact and frees it from the memfd (the size, the child's
    /// offset, stays); whether it worked (else the error is kept for [`Stream::finish`]).
    fn move_and_punch(&self, dir: &BatchDir, index: u64, from: u64, end: u64) -> bool {
        match self.move_range(dir, index, from, end) {
            Ok(()) => {
                self.moved.set(end);
                let mode =
                    rustix::fs::FallocateFlags::PUNCH_HOLE | rustix::fs::FallocateFlags::KEEP_SIZE;
                let _ = rustix::fs::fallocate(&self.memfd, mode, from, end - from);
                true
            }
            Err(e) => {
                *self.failed.borrow_mut() = Some(e);
                false
            }
        }
    }

    /// Copies the data of `[from, end)` below [`KEPT_LIMIT`] to the same offsets of the
    /// artifact (creating it first): a range of a chunk or more is copied run of data by run
    /// of data, its holes left holes; a smaller one whole.
    fn move_range(
        &self,
        dir: &BatchDir,
        index: u64,
        from: u64,
        end: u64,
    ) -> Result<(), ArtifactError> {
        let stop = end.min(KEPT_LIMIT);
        // Small or large is decided for the whole range: what follows the first run of data in
        // a chunk is less than a chunk, and copied whole it would write that chunk's holes out.
        let whole = stop.saturating_sub(from) < SPILL_AT;
        let mut offset = from;
        // Each turn moves `offset` forward: to the end of a run of data, or to `stop`.
        while offset < stop {
            let (data, hole) = if whole {
                (offset, stop)
            } else {
                match self.segment(offset) {
                    Some((data, hole)) if data < stop => (data, hole.min(stop)),
                    _ => break,
                }
            };
            self.copy(dir, index, data, hole)?;
            offset = hole.max(offset + 1);
        }
        Ok(())
    }

    /// Copies `[from, end)` of the memfd to the same offsets of the artifact.
    fn copy(&self, dir: &BatchDir, index: u64, from: u64, end: u64) -> Result<(), ArtifactError> {
        self.with_dest(dir, index, |file| {
            rustix::fs::seek(file, rustix::fs::SeekFrom::Start(from))?;
            let mut offset = from;
            while offset < end {
                let count = usize::try_from(end - offset).unwrap_or(usize::MAX);
                match rustix::fs::sendfile(file, &self.memfd, Some(&mut offset), count) {
                    Ok(0) => break,
                    Ok(_) | Err(rustix::io::Errno::INTR) => {}
                    Err(e) => return Err(e.into()),
                }
            }
            Ok(())
        })
    }

    /// Moves the rest; the memfd comes back when the run wrote nothing to it (its offset is
    /// then 0 again, whatever the child did with it).
    fn finish(self, dir: &BatchDir, index: u64) -> Result<(Kept, Option<File>), ArtifactError> {
        // The size, by seeking to the end: for an empty memfd that also puts the offset the
        // child shared back at 0, which a reused memfd needs (one call instead of two).
        let sought = rustix::fs::seek(&self.memfd, rustix::fs::SeekFrom::End(0)).ok();
        let end = sought.unwrap_or_else(|| self.written());
        let from = self.moved.get();
        if end > from && self.failed.borrow().is_none() {
            self.move_and_punch(dir, index, from, end);
        }
        if self.failed.borrow().is_none() && end > 0 {
            self.keep_length(dir, index, end.min(KEPT_LIMIT));
        }
        if let Some(e) = self.failed.into_inner() {
            return Err(e);
        }
        let bytes = self.moved.get();
        let cut_at = (bytes > KEPT_LIMIT).then_some(KEPT_LIMIT);
        let empty = (sought == Some(0)).then_some(self.memfd);
        let (path, file, spare) = match self.dest.into_inner() {
            Some((file, rel)) => (Some(rel), Some(file), None),
            None => (None, None, empty),
        };
        let kept = Kept {
            path,
            bytes,
            cut_at,
            file,
        };
        Ok((kept, spare))
    }

    /// The artifact made `length` long (a run that wrote only holes, or ended in one, or was
    /// cut): the rest is a hole, as it was in the memfd.
    fn keep_length(&self, dir: &BatchDir, index: u64, length: u64) {
        let result = self.with_dest(dir, index, |file| {
            if file.metadata()?.len() < length {
                file.set_len(length)?;
            }
            Ok(())
        });
        if let Err(e) = result {
            *self.failed.borrow_mut() = Some(e);
        }
    }

    /// Calls `f` with the artifact, created first if need be; its error names the file.
    fn with_dest(
        &self,
        dir: &BatchDir,
        index: u64,
        f: impl FnOnce(&File) -> std::io::Result<()>,
    ) -> Result<(), ArtifactError> {
        let mut dest = self.dest.borrow_mut();
        if dest.is_none() {
            *dest = Some(dir.create_run_file(index, self.name)?);
        }
        let Some((file, rel)) = dest.as_ref() else {
            return Ok(());
        };
        f(file).map_err(|e| ArtifactError {
            message: format!(
                "cannot write {}: {}",
                dir.root().join(rel).display(),
                crate::record::artifacts::explain(&e)
            ),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// An empty batch directory under the temporary directory, and its path.
    fn fresh_batch_dir(name: &str) -> (std::path::PathBuf, BatchDir) {
        let root = std::env::temp_dir().join(format!("coldtrace-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let dir = BatchDir::create(&root).unwrap();
        (root, dir)
    }

    #[test]
    fn spilling_stops_after_one_chunk_once_the_command_has_exited() {
        let (root, dir) = fresh_batch_dir("capture");
        let capture = RunCapture::new(0, None).unwrap();
        let five = vec![b'x'; 5 * SPILL_AT as usize + 10];
        (&capture.stdout.memfd).write_all(&five).unwrap();
        capture.spill(&dir, &|| true);
        assert_eq!(
            capture.stdout.moved.get(),
            SPILL_AT,
            "one chunk, then it stops"
        );
        capture.spill(&dir, &|| false);
        assert_eq!(
            capture.stdout.moved.get(),
            5 * SPILL_AT,
            "whole chunks while it runs"
        );
        let (out, err, spare) = capture.finish(&dir, true).unwrap();
        assert_eq!(out.bytes, five.len() as u64);
        assert_eq!(std::fs::read(root.join("runs/000/stdout")).unwrap(), five);
        assert_eq!((err.path, err.bytes), (None, 0));
        assert!(
            spare.is_none(),
            "a memfd that was written is not used again"
        );
        let _ = std::fs::remove_dir_all(&root);
    }

    #[test]
    fn a_chunk_moved_while_the_command_runs_keeps_its_holes() {
        use std::os::unix::fs::MetadataExt;
        let (root, dir) = fresh_batch_dir("holes");
        let capture = RunCapture::new(0, None).unwrap();
        // "head", then a seek far past the chunk: the chunk moved while the command runs holds
        // four bytes of data and a hole of a chunk less a page.
        (&capture.stdout.memfd).write_all(b"head").unwrap();
        capture.stdout.memfd.set_len(3 * SPILL_AT).unwrap();
        capture.spill(&dir, &|| false);
        assert!(capture.stdout.moved.get() >= SPILL_AT, "a chunk was moved");
        let (out, _, _) = capture.finish(&dir, true).unwrap();
        assert_eq!(out.bytes, 3 * SPILL_AT);
        let meta = std::fs::metadata(root.join("runs/000/stdout")).unwrap();
        assert_eq!(meta.len(), 3 * SPILL_AT);
        assert!(
            meta.blocks() < 64,
            "{} blocks of 512 B: the hole was written out",
            meta.blocks()
        );
        let _ = std::fs::remove_dir_all(&root);
    }

    #[test]
    fn empty_memfds_come_back_only_when_no_process_is_left_and_start_at_zero() {
        use std::io::{Seek, SeekFrom};
        let (root, dir) = fresh_batch_dir("spare");
        let first = RunCapture::new(0, None).unwrap();
        // A child that seeks without writing moves the shared offset, not the size.
        (&first.stdout.memfd).seek(SeekFrom::Start(100)).unwrap();
        let (out, err, spare) = first.finish(&dir, true).unwrap();
        assert_eq!((out.path, out.bytes, err.path), (None, 0, None));
        let spare = spare.expect("two empty memfds, no process left: used again");
        let kept_alive = RunCapture::new(1, None).unwrap();
        assert!(
            kept_alive.finish(&dir, false).unwrap().2.is_none(),
            "a process may still hold them: not used again"
        );
        let second = RunCapture::new(2, Some(spare)).unwrap();
        (&second.stderr.memfd).write_all(b"abc").unwrap();
        let (out, err, spare) = second.finish(&dir, true).unwrap();
        assert_eq!((out.path, out.bytes), (None, 0));
        assert_eq!(err.bytes, 3);
        assert_eq!(std::fs::read(root.join("runs/002/stderr")).unwrap(), b"abc");
        assert!(spare.is_none(), "one of the two was written");
        let _ = std::fs::remove_dir_all(&root);
    }
}
