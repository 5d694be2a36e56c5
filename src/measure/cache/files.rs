//! The set of files a cold action or a residency probe covers: every regular file under some
//! roots, each once (walking only; opening and probing are elsewhere).
#![forbid(unsafe_code)]

use super::error::{CacheError, Stop};
use coldtrace_syscalls::Signal;
use std::collections::hash_map::DefaultHasher;
use std::hash::BuildHasherDefault;
use std::os::unix::fs::FileTypeExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// Device and inode numbers already seen. Hashed with fixed keys: std's `RandomState` asks
/// the kernel for random bytes (getrandom(2)) and panics when it cannot have them (a seccomp
/// filter that fails the call), and this runs before the first run. Inode numbers are not
/// chosen by whoever made the files, so fixed keys cost nothing.
type Seen = std::collections::HashSet<(u64, u64), BuildHasherDefault<DefaultHasher>>;

/// One regular file of a [`FileSet`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WatchedFile {
    /// The first path under which the file was found (possibly through a symlink).
    pub path: PathBuf,
    /// Its size at collection time.
    pub size_bytes: u64,
    /// Its owner, which decides whether `O_NOATIME` and the `mincore` fallback are allowed.
    pub(super) owner_uid: u32,
    /// Its device: files of one device share a file system (and so a residency method).
    pub(super) dev: u64,
    /// Its inode (with `dev`, how `/proc/PID/maps` names a mapped file).
    pub(super) ino: u64,
}

/// The identity of a watched file set (see [`FileSet::identity`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileSetIdentity {
    /// The roots as given (`--evict` and `--watch` paths, each once).
    pub roots: Vec<String>,
    /// Regular files under them.
    pub files: u64,
    /// Their total size when the batch started.
    pub total_bytes: u64,
    /// FNV-1a 64 of the sorted absolute paths with each file's size, 16 hex digits.
    pub fingerprint: String,
}
crate::serialize_struct!(FileSetIdentity {
    roots,
    files,
    total_bytes,
    fingerprint
});

/// The regular files under some roots, each once.
///
/// Collected once per batch; residency and eviction then only open files, never walk.
#[derive(Clone, Debug, Default)]
pub struct FileSet {
    pub(super) files: Vec<WatchedFile>,
    unreadable: u64,
    first_unreadable: Option<String>,
    unreached: u64,
    first_unreached: Option<String>,
    skipped_dir_symlinks: u64,
}

impl FileSet {
    /// Every regular file under each root, recursively.
    ///
    /// A root may itself be a file, and a root that is a symlink is followed (it was named on
    /// purpose). Below a root, symlinks to files are followed but symlinked directories are not
    /// descended (no cycles, no escaping the tree). Files are de-duplicated by (device, inode).
    /// Entries that cannot be read (an unreadable directory, a dangling symlink) are counted in
    /// [`FileSet::unreadable`], not fatal.
    ///
    /// # Errors
    /// [`CacheError::MissingRoot`] naming the path when a root does not exist;
    /// [`CacheError::Root`] when it cannot be examined; [`CacheError::RootUnreadable`] when a
    /// root directory cannot be listed (nothing under it could be evicted or measured);
    /// [`CacheError::RootKind`] when a root is neither a regular file nor a directory.
    pub fn collect(roots: &[PathBuf]) -> Result<FileSet, CacheError> {
        FileSet::collect_until(roots, &|| None)
    }

    /// [`FileSet::collect`], asking `stop` before every directory and every 1,024 entries
    /// whether to give up (a tree of 100,000 files takes a second or more to walk).
    ///
    /// # Errors
    /// As [`FileSet::collect`]; [`CacheError::Interrupted`] when `stop` said so.
    pub fn collect_until(roots: &[PathBuf], stop: Stop<'_>) -> Result<FileSet, CacheError> {
        let mut set = FileSet::default();
        let mut seen = Seen::default();
        // Directories too, so that overlapping roots are walked once.
        let mut seen_dirs = Seen::default();
        let mut dirs: Vec<PathBuf> = Vec::new();
        for root in roots {
            let meta = std::fs::metadata(root).map_err(|error| {
                if error.kind() == std::io::ErrorKind::NotFound {
                    CacheError::MissingRoot { path: root.clone() }
                } else {
                    CacheError::Root {
                        path: root.clone(),
                        error,
                    }
                }
            })?;
            if meta.is_file() {
                set.add(&mut seen, root.clone(), &meta);
            } else if meta.is_dir() {
                if let Err(error) = std::fs::read_dir(root) {
                    return Err(CacheError::RootUnreadable {
                        path: root.clone(),
                        error,
                    });
                }
                if seen_dirs.insert((meta.dev(), meta.ino())) {
                    dirs.push(root.clone());
                }
            } else {
                return Err(CacheError::RootKind {
                    path: root.clone(),
                    kind: kind_name(&meta),
                });
            }
            while let Some(dir) = dirs.pop() {
                if let Some(sig) = stop() {
                    return Err(CacheError::Interrupted(sig));
                }
                set.walk_dir(&dir, &mut seen, &mut seen_dirs, &mut dirs, stop)
                    .map_err(CacheError::Interrupted)?;
            }
        }
        Ok(set)
    }

    fn walk_dir(
        &mut self,
        dir: &Path,
        seen: &mut Seen,
        seen_dirs: &mut Seen,
        dirs: &mut Vec<PathBuf>,
        stop: Stop<'_>,
    ) -> Result<(), Signal> {
        let entries = match std::fs::read_dir(dir) {
            Ok(entries) => entries,
            Err(e) => {
                self.note_unreadable(dir, &e);
                return Ok(());
            }
        };
        for (n, entry) in entries.enumerate() {
            if n % 1024 == 1023 {
                if let Some(sig) = stop() {
                    return Err(sig);
                }
            }
            let entry = match entry {
                Ok(entry) => entry,
                Err(e) => {
                    self.note_unreadable(dir, &e);
                    continue;
                }
            };
            let path = entry.path();
            let file_type = match entry.file_type() {
                Ok(t) => t,
                Err(e) => {
                    self.note_unreadable(&path, &e);
                    continue;
                }
            };
            if file_type.is_dir() {
                match entry.metadata() {
                    Ok(meta) if seen_dirs.insert((meta.dev(), meta.ino())) => dirs.push(path),
                    Ok(_) => {}
                    Err(e) => self.note_unreadable(&path, &e),
                }
            } else if file_type.is_file() {
                match entry.metadata() {
                    Ok(meta) => self.add(seen, path, &meta),
                    Err(e) => self.note_unreadable(&path, &e),
                }
            } else if file_type.is_symlink() {
                match std::fs::metadata(&path) {
                    Ok(meta) if meta.is_file() => self.add(seen, path, &meta),
                    Ok(meta) if meta.is_dir() => self.skipped_dir_symlinks += 1,
                    Ok(_) => {}
                    Err(e) => self.note_unreadable(&path, &e),
                }
            }
        }
        Ok(())
    }

    fn add(&mut self, seen: &mut Seen, path: PathBuf, meta: &std::fs::Metadata) {
        if seen.insert((meta.dev(), meta.ino())) {
            self.files.push(WatchedFile {
                path,
                size_bytes: meta.len(),
                owner_uid: meta.uid(),
                dev: meta.dev(),
                ino: meta.ino(),
            });
        }
    }

    fn note_unreadable(&mut self, path: &Path, error: &std::io::Error) {
        self.unreadable += 1;
        if self.first_unreadable.is_none() {
            self.first_unreadable = Some(format!("{}: {error}", path.display()));
        }
        // A dangling symlink (or an entry gone since it was listed) holds no file; anything
        // else (EACCES on a directory) may hide files that are then neither evicted nor probed.
        if error.kind() != std::io::ErrorKind::NotFound {
            self.unreached += 1;
            if self.first_unreached.is_none() {
                self.first_unreached = Some(format!("{}: {error}", path.display()));
            }
        }
    }

    /// What names this set across batches: the roots as given, the number of files, their
    /// total size, and a fingerprint (FNV-1a 64 over each file's absolute path and size,
    /// sorted by path, so the walk order does not matter). Relative paths are made absolute
    /// against the working directory (lexically: the last component is not followed), so
    /// `DATA` in two directories is two sets; the size tells apart a file that was replaced by
    /// another of a different size at the same path (a file that grows is then a new set).
    pub fn identity(&self, roots: &[PathBuf]) -> FileSetIdentity {
        let mut keyed: Vec<(Vec<u8>, u64)> = self
            .files
            .iter()
            .map(|f| {
                let path = std::path::absolute(&f.path).unwrap_or_else(|_| f.path.clone());
                (path.into_os_string().into_encoded_bytes(), f.size_bytes)
            })
            .collect();
        keyed.sort_unstable();
        let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
        for (path, size) in &keyed {
            let size = size.to_le_bytes();
            for byte in path.iter().chain(&[0u8]).chain(&size) {
                hash ^= u64::from(*byte);
                hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
            }
        }
        FileSetIdentity {
            roots: roots.iter().map(|r| r.display().to_string()).collect(),
            files: self.files.len() as u64,
            total_bytes: self.total_bytes(),
            fingerprint: format!("{hash:016x}"),
        }
    }

    /// The files, in walk order.
    pub fn files(&self) -> &[WatchedFile] {
        &self.files
    }

    /// Number of distinct files.
    pub fn len(&self) -> usize {
        self.files.len()
    }

    /// No file at all.
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// Sum of the file sizes at collection time.
    pub fn total_bytes(&self) -> u64 {
        self.files.iter().map(|f| f.size_bytes).sum()
    }

    /// Entries skipped because they could not be read (directories, dangling symlinks, …).
    pub fn unreadable(&self) -> u64 {
        self.unreadable
    }

    /// The first unreadable entry and why, for a message.
    pub fn first_unreadable(&self) -> Option<&str> {
        self.first_unreadable.as_deref()
    }

    /// Unreadable entries that may hold files (a directory that cannot be listed; not a
    /// dangling symlink): what is under them can be neither evicted nor measured.
    pub fn unreached(&self) -> u64 {
        self.unreached
    }

    /// The first of [`FileSet::unreached`] and why, for a message.
    pub fn first_unreached(&self) -> Option<&str> {
        self.first_unreached.as_deref()
    }

    /// Symlinks to directories below a root that were deliberately not descended.
    pub fn skipped_dir_symlinks(&self) -> u64 {
        self.skipped_dir_symlinks
    }
}

/// What a root that is neither a file nor a directory is, for the message.
fn kind_name(meta: &std::fs::Metadata) -> &'static str {
    let t = meta.file_type();
    if t.is_fifo() {
        "a FIFO"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_socket() {
        "a socket"
    } else {
        "not a file"
    }
}
