//! The set of files a cold action or a residency probe covers: every regular file under some
//! roots, each once (walking only; opening and probing are elsewhere).
#![forbid(unsafe_code)]

use super::CacheError;
use std::collections::HashSet;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

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
}

/// The regular files under some roots, each once.
///
/// Collected once per batch; residency and eviction then only open files, never walk.
#[derive(Clone, Debug, Default)]
pub struct FileSet {
    pub(super) files: Vec<WatchedFile>,
    unreadable: u64,
    first_unreadable: Option<String>,
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
    /// [`CacheError::Root`] when it cannot be examined.
    pub fn collect(roots: &[PathBuf]) -> Result<FileSet, CacheError> {
        let mut set = FileSet::default();
        let mut seen: HashSet<(u64, u64)> = HashSet::new();
        // Directories too, so that overlapping roots are walked once.
        let mut seen_dirs: HashSet<(u64, u64)> = HashSet::new();
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
            } else if meta.is_dir() && seen_dirs.insert((meta.dev(), meta.ino())) {
                dirs.push(root.clone());
            }
            while let Some(dir) = dirs.pop() {
                set.walk_dir(&dir, &mut seen, &mut seen_dirs, &mut dirs);
            }
        }
        Ok(set)
    }

    fn walk_dir(
        &mut self,
        dir: &Path,
        seen: &mut HashSet<(u64, u64)>,
        seen_dirs: &mut HashSet<(u64, u64)>,
        dirs: &mut Vec<PathBuf>,
    ) {
        let entries = match std::fs::read_dir(dir) {
            Ok(entries) => entries,
            Err(e) => return self.note_unreadable(dir, &e),
        };
        for entry in entries {
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
    }

    fn add(&mut self, seen: &mut HashSet<(u64, u64)>, path: PathBuf, meta: &std::fs::Metadata) {
        if seen.insert((meta.dev(), meta.ino())) {
            self.files.push(WatchedFile {
                path,
                size_bytes: meta.len(),
                owner_uid: meta.uid(),
                dev: meta.dev(),
            });
        }
    }

    fn note_unreadable(&mut self, path: &Path, error: &std::io::Error) {
        self.unreadable += 1;
        if self.first_unreadable.is_none() {
            self.first_unreadable = Some(format!("{}: {error}", path.display()));
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

    /// Symlinks to directories below a root that were deliberately not descended.
    pub fn skipped_dir_symlinks(&self) -> u64 {
        self.skipped_dir_symlinks
    }
}
