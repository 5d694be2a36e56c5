//! The set of files a cold action or a residency probe covers: every regular file under some
//! roots, each once (walking only; opening and probing are elsewhere).
#![forbid(unsafe_code)]

use super::error::{CacheError, Stop};
use coldtrace_syscalls::Signal;
use rustix::fs::Dir;
use std::borrow::Cow;
use std::collections::hash_map::DefaultHasher;
use std::hash::BuildHasherDefault;
use std::os::unix::ffi::OsStrExt;
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
    /// Found under an `--evict` root (see [`FileSet::collect_watched`]).
    pub(super) evicted: bool,
}

impl WatchedFile {
    /// Found under an `--evict` root (see [`FileSet::collect_watched`]).
    pub fn under_evict(&self) -> bool {
        self.evicted
    }
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
    /// Of those, under an `--evict` root, and the first of them.
    unreached_evicted: u64,
    first_unreached_evicted: Option<String>,
    skipped_dir_symlinks: u64,
    /// The files being added are under an `--evict` root.
    walking_evicted: bool,
    /// Every directory walked, with its last modification (s, ns) when it was found.
    pub(super) dirs: Vec<(PathBuf, (i64, i64))>,
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
        FileSet::collect_watched(&[], roots, stop, &|_| {})
    }

    /// [`FileSet::collect_until`] over the `watch` roots, marking the files found under the
    /// `evict` ones (walk them first: a file is marked by the first root it is found under),
    /// and telling `found` how many files were found so far, as often as `stop` is asked.
    ///
    /// # Errors
    /// As [`FileSet::collect_until`].
    pub fn collect_watched(
        evict: &[PathBuf],
        watch: &[PathBuf],
        stop: Stop<'_>,
        found: &dyn Fn(u64),
    ) -> Result<FileSet, CacheError> {
        let mut set = FileSet::default();
        let mut seen = Seen::default();
        // Directories too, so that overlapping roots are walked once.
        let mut seen_dirs = Seen::default();
        let mut dirs: Vec<PathBuf> = Vec::new();
        for root in watch {
            let meta = check_root(root)?;
            set.walking_evicted = evict.contains(root);
            if meta.is_file() {
                set.add(&mut seen, root.clone(), Found::of_metadata(&meta));
            } else if seen_dirs.insert((meta.dev(), meta.ino())) {
                set.dirs
                    .push((root.clone(), Found::of_metadata(&meta).mtime));
                dirs.push(root.clone());
            }
            while let Some(dir) = dirs.pop() {
                found(set.files.len() as u64);
                if let Some(sig) = stop() {
                    return Err(CacheError::Interrupted(sig));
                }
                set.walk_dir(&dir, &mut seen, &mut seen_dirs, &mut dirs, stop)
                    .map_err(CacheError::Interrupted)?;
            }
        }
        Ok(set)
    }

    /// Checks each root as [`FileSet::collect`] would, without walking below it.
    ///
    /// # Errors
    /// As [`FileSet::collect`].
    pub fn check_roots(roots: &[PathBuf]) -> Result<(), CacheError> {
        roots.iter().try_for_each(|root| check_root(root).map(drop))
    }

    /// Lists `dir` and examines each entry relative to the directory's descriptor
    /// ([fstatat(2)]): the kernel resolves one name per entry, not the whole path again.
    ///
    /// [fstatat(2)]: https://man7.org/linux/man-pages/man2/fstatat.2.html
    fn walk_dir(
        &mut self,
        dir: &Path,
        seen: &mut Seen,
        seen_dirs: &mut Seen,
        dirs: &mut Vec<PathBuf>,
        stop: Stop<'_>,
    ) -> Result<(), Signal> {
        use rustix::fs::{AtFlags, FileType, Mode, OFlags};
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
        let mut entries = match rustix::fs::open(dir, flags, Mode::empty()).and_then(Dir::new) {
            Ok(entries) => entries,
            Err(e) => {
                self.note_unreadable(dir, &e.into());
                return Ok(());
            }
        };
        let mut n = 0u64;
        while let Some(entry) = entries.read() {
            n += 1;
            if n % 1024 == 0 {
                if let Some(sig) = stop() {
                    return Err(sig);
                }
            }
            let entry = match entry {
                Ok(entry) => entry,
                Err(e) => {
                    self.note_unreadable(dir, &e.into());
                    continue;
                }
            };
            let name = entry.file_name();
            if matches!(name.to_bytes(), b"." | b"..") {
                continue;
            }
            let path = dir.join(std::ffi::OsStr::from_bytes(name.to_bytes()));
            let Ok(fd) = entries.fd() else { break };
            let stat = |follow: bool| {
                let flags = if follow {
                    AtFlags::empty()
                } else {
                    AtFlags::SYMLINK_NOFOLLOW
                };
                rustix::fs::statat(fd, name, flags).map(|s| Found::of(&s))
            };
            let kind = match entry.file_type() {
                FileType::Unknown => stat(false).map(|f| f.kind),
                known => Ok(known),
            };
            let found = match kind {
                Ok(FileType::Directory | FileType::RegularFile) => stat(false),
                Ok(FileType::Symlink) => stat(true),
                Ok(_) => continue,
                Err(e) => Err(e),
            };
            match found {
                Ok(f) if f.kind == FileType::RegularFile => self.add(seen, path, f),
                Ok(f) if f.kind != FileType::Directory => {}
                Ok(_) if kind == Ok(FileType::Symlink) => self.skipped_dir_symlinks += 1,
                Ok(f) => {
                    if seen_dirs.insert((f.dev, f.ino)) {
                        self.dirs.push((path.clone(), f.mtime));
                        dirs.push(path);
                    }
                }
                Err(e) => self.note_unreadable(&path, &e.into()),
            }
        }
        Ok(())
    }

    fn add(&mut self, seen: &mut Seen, path: PathBuf, found: Found) {
        if seen.insert((found.dev, found.ino)) {
            self.files.push(WatchedFile {
                path,
                size_bytes: found.size,
                owner_uid: found.uid,
                dev: found.dev,
                ino: found.ino,
                evicted: self.walking_evicted,
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
            if self.walking_evicted {
                self.unreached_evicted += 1;
                if self.first_unreached_evicted.is_none() {
                    self.first_unreached_evicted = Some(format!("{}: {error}", path.display()));
                }
            }
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
        let mut keyed: Vec<(Cow<'_, [u8]>, u64)> = self
            .files
            .iter()
            .map(|f| {
                let bytes = f.path.as_os_str().as_bytes();
                // Most paths are absolute and normal already: kept as they are.
                let normal = f.path.is_absolute()
                    && !bytes.windows(2).any(|w| w == b"//")
                    && !bytes.windows(3).any(|w| w == b"/./")
                    && !bytes.ends_with(b"/.");
                let path = if normal {
                    Cow::Borrowed(bytes)
                } else {
                    let path = std::path::absolute(&f.path).unwrap_or_else(|_| f.path.clone());
                    Cow::Owned(path.into_os_string().into_encoded_bytes())
                };
                (path, f.size_bytes)
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

    /// Of [`FileSet::unreached`], those under an `--evict` root ([`FileSet::collect_watched`]).
    pub fn unreached_evicted(&self) -> (u64, Option<&str>) {
        (
            self.unreached_evicted,
            self.first_unreached_evicted.as_deref(),
        )
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

/// What the walk keeps of an entry's status.
#[derive(Clone, Copy)]
struct Found {
    kind: rustix::fs::FileType,
    size: u64,
    uid: u32,
    dev: u64,
    ino: u64,
    /// Last modification, s and ns.
    mtime: (i64, i64),
}

impl Found {
    fn of(stat: &rustix::fs::Stat) -> Found {
        Found {
            kind: rustix::fs::FileType::from_raw_mode(stat.st_mode),
            size: stat.st_size.max(0) as u64,
            uid: stat.st_uid,
            dev: stat.st_dev,
            ino: stat.st_ino,
            mtime: (stat.st_mtime, stat.st_mtime_nsec as i64),
        }
    }

    fn of_metadata(meta: &std::fs::Metadata) -> Found {
        Found {
            kind: rustix::fs::FileType::RegularFile,
            size: meta.len(),
            uid: meta.uid(),
            dev: meta.dev(),
            ino: meta.ino(),
            mtime: (meta.mtime(), meta.mtime_nsec()),
        }
    }
}

/// A root's metadata: a regular file, or a directory that can be listed.
fn check_root(root: &Path) -> Result<std::fs::Metadata, CacheError> {
    let meta = std::fs::metadata(root).map_err(|error| {
        if error.kind() == std::io::ErrorKind::NotFound {
            CacheError::MissingRoot {
                path: root.to_path_buf(),
            }
        } else {
            CacheError::Root {
                path: root.to_path_buf(),
                error,
            }
        }
    })?;
    if meta.is_dir() {
        if let Err(error) = std::fs::read_dir(root) {
            return Err(CacheError::RootUnreadable {
                path: root.to_path_buf(),
                error,
            });
        }
    } else if !meta.is_file() {
        return Err(CacheError::RootKind {
            path: root.to_path_buf(),
            kind: kind_name(&meta),
        });
    }
    Ok(meta)
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
