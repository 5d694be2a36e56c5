//! The batch directory on disk: refusing to overwrite, creating files without following
//! symlinks, streaming `runs.jsonl`, writing `batch.json` atomically. Files only; no statistics.
//!
//! Every file is created with `O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC`, mode 0644 under the
//! umask: a file or symlink planted at an artifact path is an error, never written through.
#![forbid(unsafe_code)]

use std::fmt;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

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
        Some(122) => "disk quota exceeded (EDQUOT)".into(),
        Some(40) => "too many levels of symbolic links: a symlink loop? (ELOOP)".into(),
        Some(17) => "it already exists (EEXIST)".into(),
        Some(13) => "permission denied (EACCES)".into(),
        Some(30) => "read-only file system (EROFS)".into(),
        Some(20) => "a component of the path is not a directory (ENOTDIR)".into(),
        _ => e.to_string(),
    }
}

/// As [`explain`], for a file that coldtrace creates with `O_NOFOLLOW` (see [`create_new`]),
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

fn created_error(path: &Path, e: &io::Error) -> ArtifactError {
    ArtifactError {
        message: format!("cannot create {}: {}", path.display(), explain_created(e)),
    }
}

/// Creates a new file for writing (and reading back, e.g. a failed run's stderr tail): never
/// follows a symlink, never reuses an existing file.
pub fn create_new(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .mode(0o644)
        .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
        .open(path)
}

/// Makes sure `root` is a new or empty directory (creating it and its parents).
///
/// An existing non-empty directory is refused: a previous batch is never overwritten.
pub fn create_empty_dir(root: &Path) -> Result<(), ArtifactError> {
    if root.as_os_str().is_empty() {
        // "" joined with a file name is that name in the current directory.
        return Err(ArtifactError {
            message: "--out: the path is empty; give a new or empty directory".into(),
        });
    }
    match fs::symlink_metadata(root) {
        Ok(meta) if meta.file_type().is_symlink() => {
            return Err(ArtifactError {
                message: format!(
                    "--out {}: is a symlink; give the real directory path",
                    root.display()
                ),
            })
        }
        Ok(meta) if !meta.is_dir() => {
            return Err(ArtifactError {
                message: format!(
                    "--out {}: exists and is not a directory; choose a new path",
                    root.display()
                ),
            })
        }
        Ok(_) => {
            let mut entries = fs::read_dir(root).map_err(|e| error("--out", root, &e))?;
            if entries.next().is_some() {
                return Err(ArtifactError {
                        message: format!(
                            "--out {}: exists and is not empty; coldtrace never overwrites a batch, choose a new directory",
                            root.display()
                        ),
                    });
            }
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            fs::DirBuilder::new()
                .recursive(true)
                .mode(0o755)
                .create(root)
                .map_err(|e| error("cannot create --out", root, &e))?;
        }
        Err(e) => return Err(error("--out", root, &e)),
    }
    Ok(())
}

/// Writes `dir/name` atomically: a new temporary file, fsync, rename over `name`, fsync of the
/// directory. A reader sees the old file or the whole new one, never a part.
pub fn write_atomic(dir: &Path, name: &str, bytes: &[u8]) -> Result<(), ArtifactError> {
    write_atomic_with(dir, name, |w| w.write_all(bytes))
}

/// [`write_atomic`] with the contents streamed by `write` (through a buffer), not held whole.
pub fn write_atomic_with(
    dir: &Path,
    name: &str,
    write: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> Result<(), ArtifactError> {
    let tmp = dir.join(format!(".{name}.tmp"));
    let dest = dir.join(name);
    let result = (|| -> io::Result<()> {
        let mut out = io::BufWriter::new(create_new(&tmp)?);
        write(&mut out)?;
        let file = out.into_inner().map_err(io::IntoInnerError::into_error)?;
        file.sync_all()?;
        fs::rename(&tmp, &dest)?;
        // The directory is the user's path: opened without blocking, and it must still be one.
        let opened = crate::untrusted::open(dir, crate::untrusted::Want::Directory)
            .map_err(crate::untrusted::OpenError::into_io)?;
        File::from(opened.fd).sync_all()
    })();
    result.map_err(|e| {
        let _ = fs::remove_file(&tmp);
        ArtifactError {
            message: format!("cannot write {}: {}", dest.display(), explain_created(&e)),
        }
    })
}

/// A file the user named (`--svg FILE`, `--export-csv FILE`) replaced atomically with what
/// `write` streams: see [`write_atomic`].
pub fn replace_file(
    path: &Path,
    write: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> Result<(), ArtifactError> {
    let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else {
        return Err(ArtifactError {
            message: format!("{}: not a file name", path.display()),
        });
    };
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    write_atomic_with(dir, &name.to_string_lossy(), write)
}

/// An open batch directory.
pub struct BatchDir {
    root: PathBuf,
    runs_jsonl: File,
}

impl BatchDir {
    /// Creates (or takes over an empty) batch directory and its `runs.jsonl`.
    ///
    /// An existing non-empty directory is refused: a previous batch is never overwritten.
    pub fn create(root: &Path) -> Result<BatchDir, ArtifactError> {
        create_empty_dir(root)?;
        let path = root.join("runs.jsonl");
        let runs_jsonl = create_new(&path).map_err(|e| created_error(&path, &e))?;
        Ok(BatchDir {
            root: root.to_path_buf(),
            runs_jsonl,
        })
    }

    /// The directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Creates `runs/` and `runs/NNN/` when they do not exist yet, and returns `runs/NNN`
    /// (relative to the batch directory). Made only for a run that has an artifact.
    fn run_dir(&self, index: u64) -> Result<PathBuf, ArtifactError> {
        let rel = PathBuf::from("runs").join(format!("{index:03}"));
        for dir in [self.root.join("runs"), self.root.join(&rel)] {
            match fs::DirBuilder::new().mode(0o755).create(&dir) {
                Err(e) if !(e.kind() == io::ErrorKind::AlreadyExists && dir.is_dir()) => {
                    return Err(error("cannot create", &dir, &e))
                }
                _ => {}
            }
        }
        Ok(rel)
    }

    /// Creates `runs/NNN/NAME` (and its directory) for writing; returns the file and its path
    /// relative to the batch directory.
    pub fn create_run_file(&self, index: u64, name: &str) -> Result<(File, String), ArtifactError> {
        let rel = self.run_dir(index)?.join(name);
        let path = self.root.join(&rel);
        let file = create_new(&path).map_err(|e| created_error(&path, &e))?;
        Ok((file, rel.display().to_string()))
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
            .map_err(|e| error("cannot write", &self.root.join(&rel), &e))?;
        Ok(rel)
    }

    /// Appends one record line to `runs.jsonl` with a single `write(2)` of the whole line, so a
    /// crash of coldtrace leaves only complete lines (or, at worst, one cut last line).
    pub fn append_record(&mut self, line: &[u8]) -> Result<(), ArtifactError> {
        let path = self.root.join("runs.jsonl");
        self.runs_jsonl
            .write_all(line)
            .map_err(|e| error("cannot append to", &path, &e))
    }

    /// Flushes `runs.jsonl` to stable storage (`fdatasync`).
    pub fn sync_records(&self) -> Result<(), ArtifactError> {
        let path = self.root.join("runs.jsonl");
        self.runs_jsonl
            .sync_data()
            .map_err(|e| error("cannot sync", &path, &e))
    }

    /// Writes `name` in the batch directory atomically (see [`write_atomic`]).
    pub fn write_atomic(&self, name: &str, bytes: &[u8]) -> Result<(), ArtifactError> {
        write_atomic(&self.root, name, bytes)
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
