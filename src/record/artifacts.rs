//! The batch directory on disk: streaming `runs.jsonl` with whole lines only, the files of a
//! run under `runs/NNN/`, `batch.json` written atomically. Files only; no statistics.
//!
//! The directory is claimed and opened once ([`crate::record::dir`]); every file is created
//! relative to its descriptor with `O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC`, mode 0644
//! under the umask: a file or symlink planted at an artifact path is an error, never written
//! through.
#![forbid(unsafe_code)]

use crate::record::dir::{claim_out_dir, DirHandle};
use std::cell::RefCell;
use std::fmt;
use std::fs::File;
use std::io::{self, Seek, Write};
use std::path::Path;

/// An I/O error with the path it concerns and what to do about it.
#[derive(Debug)]
pub struct ArtifactError {
    /// One line for the user.
    pub message: String,
}

impl fmt::Display for ArtifactError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

/// Describes an I/O error in words a user can act on (of a path read or examined; a file that
/// coldtrace creates is described by [`explain_created`]).
pub fn explain(e: &io::Error) -> String {
    match e.raw_os_error() {
        Some(28) => "no space left on device (ENOSPC); free space or choose another --out".into(),
        Some(27) => {
            "file too large (EFBIG): the file size limit (ulimit -f) or the file system's; raise \
             it or choose another --out"
                .into()
        }
        Some(122) => "disk quota exceeded (EDQUOT)".into(),
        Some(40) => "too many levels of symbolic links: a symlink loop? (ELOOP)".into(),
        Some(17) => "it already exists (EEXIST)".into(),
        Some(13) => "permission denied (EACCES)".into(),
        Some(30) => "read-only file system (EROFS)".into(),
        Some(20) => "a component of the path is not a directory (ENOTDIR)".into(),
        Some(36) => "the path is longer than the system allows (ENAMETOOLONG); name a directory \
             nearer to it"
            .into(),
        _ => e.to_string(),
    }
}

/// As [`explain`], for a file that coldtrace creates with `O_NOFOLLOW`,
/// where `ELOOP` means that a symlink sits at the path.
pub fn explain_created(e: &io::Error) -> String {
    match e.raw_os_error() {
        Some(40) => "it is a symlink, which coldtrace never writes through (ELOOP)".into(),
        _ => explain(e),
    }
}

fn error(what: &str, path: &Path, e: &io::Error) -> ArtifactError {
    ArtifactError {
        message: format!("{what} {}: {}", path.display(), explain(e)),
    }
}

/// An open batch directory.
pub struct BatchDir {
    dir: DirHandle,
    runs_jsonl: File,
    /// The length of `runs.jsonl` after its last whole line.
    records_len: u64,
    /// `runs/`, once made.
    runs: RefCell<Option<DirHandle>>,
}

impl BatchDir {
    /// Claims `root` (see [`claim_out_dir`]: a new directory, or an empty one of the user's
    /// own) and creates its `runs.jsonl`.
    pub fn create(root: &Path) -> Result<BatchDir, ArtifactError> {
        BatchDir::open(claim_out_dir(root)?)
    }

    /// Makes `dir` a batch directory: creates its `runs.jsonl` (`O_EXCL`: a batch running in
    /// it already is an error).
    pub fn open(dir: DirHandle) -> Result<BatchDir, ArtifactError> {
        let runs_jsonl = dir.create_file("runs.jsonl").map_err(|e| ArtifactError {
            message: if e.message.contains("EEXIST") {
                format!(
                    "--out {}: another batch has started in it; choose a new directory",
                    dir.path().display()
                )
            } else {
                e.message
            },
        })?;
        Ok(BatchDir {
            dir,
            runs_jsonl,
            records_len: 0,
            runs: RefCell::new(None),
        })
    }

    /// The directory.
    pub fn root(&self) -> &Path {
        self.dir.path()
    }

    /// `runs/NNN`, made when it does not exist yet (only for a run that has an artifact), and
    /// its path relative to the batch directory.
    fn run_dir(&self, index: u64) -> Result<(DirHandle, String), ArtifactError> {
        let mut slot = self.runs.borrow_mut();
        let runs = match slot.take() {
            Some(runs) => runs,
            None => self.dir.subdir("runs", false)?,
        };
        let name = format!("{index:03}");
        let dir = runs.subdir(&name, false);
        *slot = Some(runs);
        let dir = dir?;
        Ok((dir, format!("runs/{name}")))
    }

    /// Creates `runs/NNN/NAME` (and its directory) for writing; returns the file and its path
    /// relative to the batch directory.
    pub fn create_run_file(&self, index: u64, name: &str) -> Result<(File, String), ArtifactError> {
        let (dir, rel) = self.run_dir(index)?;
        let file = dir.create_file(name)?;
        Ok((file, format!("{rel}/{name}")))
    }

    /// Writes `runs/NNN/NAME` (creating `runs/NNN/` when the run has no other artifact) and
    /// returns its path relative to the batch directory.
    pub fn write_run_file(
        &self,
        index: u64,
        name: &str,
        bytes: &[u8],
    ) -> Result<String, ArtifactError> {
        let (mut file, rel) = self.create_run_file(index, name)?;
        file.write_all(bytes)
            .map_err(|e| error("cannot write", &self.root().join(&rel), &e))?;
        Ok(rel)
    }

    /// Appends one record line to `runs.jsonl` with a single `write(2)` of the whole line, so a
    /// crash of coldtrace leaves only complete lines (or, at worst, one cut last line). A
    /// write that fails part-way (a full disk, the file size limit) is cut back off: the file
    /// ends with the last whole line.
    pub fn append_record(&mut self, line: &[u8]) -> Result<(), ArtifactError> {
        match self.runs_jsonl.write_all(line) {
            Ok(()) => {
                self.records_len += line.len() as u64;
                Ok(())
            }
            Err(e) => {
                let _ = self.runs_jsonl.set_len(self.records_len);
                let _ = self.runs_jsonl.seek(io::SeekFrom::Start(self.records_len));
                Err(error(
                    "cannot append to",
                    &self.root().join("runs.jsonl"),
                    &e,
                ))
            }
        }
    }

    /// Flushes `runs.jsonl` to stable storage (`fdatasync`).
    pub fn sync_records(&self) -> Result<(), ArtifactError> {
        self.runs_jsonl
            .sync_data()
            .map_err(|e| error("cannot sync", &self.root().join("runs.jsonl"), &e))
    }

    /// Writes `name` in the batch directory atomically (see [`DirHandle::write_atomic_with`]).
    pub fn write_atomic(&self, name: &str, bytes: &[u8]) -> Result<(), ArtifactError> {
        self.dir.write_atomic_with(name, |w| w.write_all(bytes))
    }
}

/// The last `max_lines` lines of at most the last 4 KiB of a file (for a failed run's stderr).
pub fn tail(file: &mut File, max_lines: usize) -> String {
    use std::io::{Read, Seek, SeekFrom};
    let Ok(len) = file.seek(SeekFrom::End(0)) else {
        return String::new();
    };
    let start = len.saturating_sub(4096);
    if file.seek(SeekFrom::Start(start)).is_err() {
        return String::new();
    }
    let mut buf = Vec::with_capacity(4096);
    if file.take(4096).read_to_end(&mut buf).is_err() {
        return String::new();
    }
    let text = String::from_utf8_lossy(&buf);
    let lines: Vec<&str> = text.trim_end().lines().collect();
    lines[lines.len().saturating_sub(max_lines)..].join("\n")
}
