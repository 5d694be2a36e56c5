//! Page-cache residency and eviction of a watched set of files.
//!
//! A "cold" run is only cold if the files it reads are not in the page cache, so coldtrace
//! measures residency before a run and can evict the files without root. Residency comes from
//! [cachestat(2)] (Linux ≥ 6.5), with [mincore(2)] as the fallback on older kernels — but only
//! for files the caller may write: without write permission the kernel (≥ 5.2) reports every
//! page resident through `mincore` and refuses `cachestat` with `EPERM`. Such files are
//! reported as unknown, and a set with any unknown file has no residency figure at all, never
//! a false 100%.
//!
//! Eviction is [posix_fadvise(2)] `POSIX_FADV_DONTNEED` after writing dirty pages back with
//! [fdatasync(2)]; the global alternative is [`drop_caches`] (root only, see
//! [proc_sys_vm(5)]).
//!
//! [cachestat(2)]: https://man7.org/linux/man-pages/man2/cachestat.2.html
//! [mincore(2)]: https://man7.org/linux/man-pages/man2/mincore.2.html
//! [posix_fadvise(2)]: https://man7.org/linux/man-pages/man2/posix_fadvise.2.html
//! [fdatasync(2)]: https://man7.org/linux/man-pages/man2/fdatasync.2.html
//! [proc_sys_vm(5)]: https://man7.org/linux/man-pages/man5/proc_sys_vm.5.html
#![forbid(unsafe_code)]

use coldtrace_syscalls::raw;
use coldtrace_syscalls::Errno;
use rustix::fd::{AsFd, OwnedFd};
use rustix::fs::{Access, Advice, AtFlags, Mode, OFlags, CWD};
use std::collections::{BTreeMap, HashSet};
use std::fmt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The file whose write drops the clean page cache, dentries and inodes system-wide.
const DROP_CACHES: &str = "/proc/sys/vm/drop_caches";

/// What can go wrong in this module that the caller must act on.
#[derive(Debug)]
pub enum CacheError {
    /// A root given to [`FileSet::collect`] does not exist.
    MissingRoot {
        /// The root as given.
        path: PathBuf,
    },
    /// A root exists but could not be examined (e.g. a parent directory is not searchable).
    Root {
        /// The root as given.
        path: PathBuf,
        /// Why `stat` failed.
        error: std::io::Error,
    },
    /// Writing `/proc/sys/vm/drop_caches` was refused: it needs root.
    DropCachesNotPermitted,
    /// `/proc/sys` is mounted read-only here (typical in containers), so even root cannot drop.
    DropCachesReadOnly,
    /// Any other failure to open or write `/proc/sys/vm/drop_caches`.
    DropCaches(Errno),
}

impl fmt::Display for CacheError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CacheError::MissingRoot { path } => {
                write!(f, "cache path {} does not exist", path.display())
            }
            CacheError::Root { path, error } => {
                write!(f, "cannot examine cache path {}: {error}", path.display())
            }
            CacheError::DropCachesNotPermitted => f.write_str(
                "--drop-caches needs root (it writes /proc/sys/vm/drop_caches); \
                 use --evict PATH to evict specific files without root",
            ),
            CacheError::DropCachesReadOnly => f.write_str(
                "--drop-caches: /proc/sys is read-only here (EROFS); \
                 use --evict PATH to evict specific files",
            ),
            CacheError::DropCaches(e) => write!(f, "--drop-caches: {DROP_CACHES}: {e}"),
        }
    }
}

impl std::error::Error for CacheError {}

/// One regular file of a [`FileSet`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WatchedFile {
    /// The first path under which the file was found (possibly through a symlink).
    pub path: PathBuf,
    /// Its size at collection time.
    pub size_bytes: u64,
    /// Its owner, which decides whether `O_NOATIME` and the `mincore` fallback are allowed.
    owner_uid: u32,
}

/// The regular files under some roots, each once.
///
/// Collected once per batch; residency and eviction then only open files, never walk.
#[derive(Clone, Debug, Default)]
pub struct FileSet {
    files: Vec<WatchedFile>,
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

    /// The page-cache residency of every file, now.
    ///
    /// Uses `cachestat` over each whole file; where the kernel lacks it, `mmap` + `mincore`,
    /// but only for files the caller owns or may write (otherwise `mincore` claims every page is
    /// resident). Never fails: a file that cannot be probed is unknown, and then the whole
    /// residency is unknown (see [`aggregate`]).
    pub fn residency(&self) -> Residency {
        let page = page_size();
        let cachestat = cachestat_available();
        let method = if cachestat { "cachestat" } else { "mincore" };
        let mut opener = Opener::new();
        let probes = self
            .files
            .iter()
            .map(|file| (file.size_bytes, probe(&mut opener, file, cachestat)));
        aggregate(method, page, probes)
    }

    /// Evicts every file from the page cache: dirty pages are written back first (a dirty page
    /// cannot be dropped), then `POSIX_FADV_DONTNEED` over the whole file. Works without root.
    ///
    /// Pages that another process has mapped stay resident; measure [`FileSet::residency`]
    /// afterwards to know what was actually dropped.
    pub fn evict(&self) -> EvictReport {
        let cachestat = cachestat_available();
        let mut opener = Opener::new();
        let mut report = EvictReport {
            files: 0,
            bytes: 0,
            failed: 0,
            first_error: None,
        };
        for file in &self.files {
            match evict_one(&mut opener, file, cachestat) {
                Ok(()) => {
                    report.files += 1;
                    report.bytes += file.size_bytes;
                }
                Err(message) => {
                    report.failed += 1;
                    if report.first_error.is_none() {
                        report.first_error = Some(format!("{}: {message}", file.path.display()));
                    }
                }
            }
        }
        report
    }
}

/// Opens the files of a set one after another for probing or advising: read-only,
/// close-on-exec, and `O_NOATIME` where the kernel permits it (owner or `CAP_FOWNER`), so that
/// looking does not change atimes.
///
/// Each parent directory is resolved once (`O_PATH`) and files are opened relative to it
/// ([openat(2)]): files of one directory are consecutive in walk order, and re-walking every
/// component of a deep absolute path was a large part of the per-file cost.
///
/// [openat(2)]: https://man7.org/linux/man-pages/man2/openat.2.html
struct Opener {
    euid: u32,
    dir: Option<(PathBuf, OwnedFd)>,
}

impl Opener {
    fn new() -> Opener {
        Opener {
            euid: rustix::process::geteuid().as_raw(),
            dir: None,
        }
    }

    fn open(&mut self, file: &WatchedFile) -> Result<OwnedFd, Errno> {
        let (Some(parent), Some(name)) = (file.path.parent(), file.path.file_name()) else {
            return self.open_at(CWD, &file.path, file);
        };
        if parent.as_os_str().is_empty() {
            return self.open_at(CWD, &file.path, file);
        }
        if self.dir.as_ref().map(|(p, _)| p.as_path()) != Some(parent) {
            let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC;
            self.dir = rustix::fs::open(parent, flags, Mode::empty())
                .ok()
                .map(|fd| (parent.to_path_buf(), fd));
        }
        match self.dir.take() {
            Some((p, dir)) => {
                let opened = self.open_at(&dir, Path::new(name), file);
                self.dir = Some((p, dir));
                opened
            }
            None => self.open_at(CWD, &file.path, file),
        }
    }

    fn open_at<D: AsFd>(&self, dir: D, path: &Path, file: &WatchedFile) -> Result<OwnedFd, Errno> {
        let base = OFlags::RDONLY | OFlags::CLOEXEC;
        if self.euid == 0 || self.euid == file.owner_uid {
            match rustix::fs::openat(&dir, path, base | OFlags::NOATIME, Mode::empty()) {
                Err(rustix::io::Errno::PERM) => {}
                other => return other.map_err(Errno::from),
            }
        }
        rustix::fs::openat(&dir, path, base, Mode::empty()).map_err(Errno::from)
    }
}

/// Whether `mincore` tells the truth for this file: the kernel only reports real residency to
/// a caller who owns the file or may write it ([mincore(2)] NOTES, Linux ≥ 5.2).
///
/// [mincore(2)]: https://man7.org/linux/man-pages/man2/mincore.2.html
fn mincore_trustworthy(file: &WatchedFile, euid: u32) -> bool {
    euid == file.owner_uid
        || rustix::fs::accessat(CWD, &file.path, Access::WRITE_OK, AtFlags::EACCESS).is_ok()
}

fn probe(opener: &mut Opener, file: &WatchedFile, cachestat: bool) -> FileProbe {
    let euid = opener.euid;
    let fd = match opener.open(file) {
        Ok(fd) => fd,
        Err(e) => return FileProbe::Unknown(UnknownReason::Open(e)),
    };
    if cachestat {
        match raw::cachestat(fd.as_fd(), 0, 0) {
            Ok(stat) => {
                return FileProbe::Known {
                    cached_pages: stat.nr_cache,
                    dirty_pages: Some(stat.nr_dirty),
                }
            }
            Err(Errno::PERM) => return FileProbe::Unknown(UnknownReason::CachestatDenied),
            Err(Errno::NOSYS) => {}
            Err(e) => return FileProbe::Unknown(UnknownReason::Probe(e)),
        }
    }
    if !mincore_trustworthy(file, euid) {
        return FileProbe::Unknown(UnknownReason::MincoreUntrustworthy);
    }
    match raw::mincore_resident_pages(fd.as_fd(), file.size_bytes) {
        Ok(pages) => FileProbe::Known {
            cached_pages: pages,
            dirty_pages: None,
        },
        Err(e) => FileProbe::Unknown(UnknownReason::Probe(e)),
    }
}

fn evict_one(opener: &mut Opener, file: &WatchedFile, cachestat: bool) -> Result<(), String> {
    let fd = opener.open(file).map_err(|e| format!("open: {e}"))?;
    // fdatasync on a clean file can still cost a journal round trip, so only when needed;
    // without cachestat we cannot tell, and write back unconditionally.
    let dirty = !cachestat
        || match raw::cachestat(fd.as_fd(), 0, 0) {
            Ok(stat) => stat.nr_dirty + stat.nr_writeback > 0,
            Err(_) => true,
        };
    if dirty {
        rustix::fs::fdatasync(&fd).map_err(|e| format!("fdatasync: {}", Errno::from(e)))?;
    }
    rustix::fs::fadvise(&fd, 0, None, Advice::DontNeed)
        .map_err(|e| format!("fadvise(DONTNEED): {}", Errno::from(e)))
}

/// Why one file's residency is unknown.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum UnknownReason {
    /// `cachestat` returned `EPERM`: the caller may not write the file.
    CachestatDenied,
    /// No `cachestat`, and `mincore` would claim every page resident (no write permission).
    MincoreUntrustworthy,
    /// The file could not be opened.
    Open(Errno),
    /// The probe failed otherwise.
    Probe(Errno),
}

impl fmt::Display for UnknownReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            UnknownReason::CachestatDenied => {
                f.write_str("cachestat refused with EPERM (no write permission)")
            }
            UnknownReason::MincoreUntrustworthy => {
                f.write_str("no cachestat, and mincore lies without write permission")
            }
            UnknownReason::Open(e) => write!(f, "open failed: {e}"),
            UnknownReason::Probe(e) => write!(f, "probe failed: {e}"),
        }
    }
}

/// The residency of one file, as probed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileProbe {
    /// Pages in the cache, and dirty pages when the method knows them (`mincore` does not).
    Known {
        /// Resident pages.
        cached_pages: u64,
        /// Dirty pages, `None` when not measured.
        dirty_pages: Option<u64>,
    },
    /// Not known, and why.
    Unknown(UnknownReason),
}

/// Page-cache residency of a [`FileSet`].
#[derive(Clone, Debug, PartialEq)]
pub struct Residency {
    /// `"cachestat"` or `"mincore"`.
    pub method: &'static str,
    /// Files probed.
    pub files: u64,
    /// Sum of file sizes.
    pub total_bytes: u64,
    /// Resident pages × page size, each file capped at its size rounded up to a page.
    /// `None` when any file is unknown.
    pub resident_bytes: Option<u64>,
    /// `resident_bytes` over the page-rounded total (the cache holds whole pages), in 0..=1.
    /// `None` when any file is unknown or there is nothing to measure.
    pub resident_ratio: Option<f64>,
    /// Dirty pages × page size; `None` when any file is unknown or the method is `mincore`.
    pub dirty_bytes: Option<u64>,
    /// Files whose residency is unknown.
    pub unknown_files: u64,
    /// How many files are unknown and why, when any are.
    pub unknown_reason: Option<String>,
}
crate::serialize_struct!(Residency {
    method,
    files,
    total_bytes,
    resident_bytes,
    resident_ratio,
    dirty_bytes,
    unknown_files,
    unknown_reason,
});

/// Combines per-file probes into a [`Residency`] — pure, so that the "any unknown file means
/// no figure" rule can be tested without a file the kernel refuses to describe.
///
/// `probes` yields each file's size in bytes and its probe.
pub fn aggregate(
    method: &'static str,
    page_size: u64,
    probes: impl IntoIterator<Item = (u64, FileProbe)>,
) -> Residency {
    let page = page_size.max(1);
    let (mut files, mut total_bytes, mut total_page_bytes) = (0u64, 0u64, 0u64);
    let (mut resident, mut dirty, mut dirty_known) = (0u64, 0u64, true);
    let mut unknown: BTreeMap<UnknownReason, u64> = BTreeMap::new();
    for (size, probe) in probes {
        files += 1;
        total_bytes = total_bytes.saturating_add(size);
        let cap = size.div_ceil(page).saturating_mul(page);
        total_page_bytes = total_page_bytes.saturating_add(cap);
        match probe {
            FileProbe::Known {
                cached_pages,
                dirty_pages,
            } => {
                resident = resident.saturating_add(cached_pages.saturating_mul(page).min(cap));
                match dirty_pages {
                    Some(d) => dirty = dirty.saturating_add(d.saturating_mul(page).min(cap)),
                    None => dirty_known = false,
                }
            }
            FileProbe::Unknown(reason) => *unknown.entry(reason).or_insert(0) += 1,
        }
    }
    let unknown_files: u64 = unknown.values().sum();
    if unknown_files > 0 {
        let reasons: Vec<String> = unknown.iter().map(|(r, n)| format!("{n} {r}")).collect();
        return Residency {
            method,
            files,
            total_bytes,
            resident_bytes: None,
            resident_ratio: None,
            dirty_bytes: None,
            unknown_files,
            unknown_reason: Some(format!(
                "residency unknown for {unknown_files} of {files} files: {}",
                reasons.join("; ")
            )),
        };
    }
    Residency {
        method,
        files,
        total_bytes,
        resident_bytes: Some(resident),
        resident_ratio: (total_page_bytes > 0).then(|| resident as f64 / total_page_bytes as f64),
        dirty_bytes: dirty_known.then_some(dirty),
        unknown_files: 0,
        unknown_reason: None,
    }
}

/// What [`FileSet::evict`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EvictReport {
    /// Files advised successfully.
    pub files: u64,
    /// Sum of their sizes (what was advised, not what the kernel dropped).
    pub bytes: u64,
    /// Files that could not be opened, written back or advised.
    pub failed: u64,
    /// The first failure, naming the file.
    pub first_error: Option<String>,
}
crate::serialize_struct!(EvictReport {
    files,
    bytes,
    failed,
    first_error
});

/// `TMPFS_MAGIC` from `<linux/magic.h>`.
const TMPFS_MAGIC: rustix::fs::FsWord = 0x0102_1994;

/// Whether `path` is on tmpfs ([statfs(2)]), where file pages are the file itself and cannot be
/// evicted (nor are they dropped by `drop_caches`): a "cold" run there is not cold. `None` when
/// `statfs` fails.
///
/// [statfs(2)]: https://man7.org/linux/man-pages/man2/statfs.2.html
pub fn is_tmpfs(path: &Path) -> Option<bool> {
    rustix::fs::statfs(path)
        .ok()
        .map(|s| s.f_type == TMPFS_MAGIC)
}

/// The system page size (the unit of every residency figure).
fn page_size() -> u64 {
    rustix::param::page_size() as u64
}

/// Whether this kernel has `cachestat(2)` (Linux ≥ 6.5). Probed once, on this executable.
///
/// Any answer but `ENOSYS` (even `EPERM`) means the system call exists.
pub fn cachestat_available() -> bool {
    static AVAILABLE: OnceLock<bool> = OnceLock::new();
    *AVAILABLE.get_or_init(|| {
        let flags = OFlags::RDONLY | OFlags::CLOEXEC;
        let fd = rustix::fs::open("/proc/self/exe", flags, Mode::empty())
            .or_else(|_| rustix::fs::open("/", flags | OFlags::DIRECTORY, Mode::empty()));
        match fd {
            Ok(fd) => !matches!(raw::cachestat(fd.as_fd(), 0, 0), Err(Errno::NOSYS)),
            Err(_) => false,
        }
    })
}

/// Writes back all dirty data ([sync(2)]), then drops the clean page cache, dentries and inodes
/// system-wide by writing `3` to `/proc/sys/vm/drop_caches` ([proc_sys_vm(5)]). Root only.
///
/// # Errors
/// [`CacheError::DropCachesNotPermitted`] (one line that points to `--evict`) without root,
/// [`CacheError::DropCachesReadOnly`] when `/proc/sys` is read-only.
///
/// [sync(2)]: https://man7.org/linux/man-pages/man2/sync.2.html
/// [proc_sys_vm(5)]: https://man7.org/linux/man-pages/man5/proc_sys_vm.5.html
pub fn drop_caches() -> Result<(), CacheError> {
    rustix::fs::sync();
    let fd = open_drop_caches()?;
    loop {
        match rustix::io::write(&fd, b"3\n") {
            Ok(_) => return Ok(()),
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => return Err(drop_caches_error(e)),
        }
    }
}

/// Whether [`drop_caches`] would be allowed: opens the file for writing and closes it, without
/// writing (opening drops nothing).
pub fn drop_caches_permitted() -> bool {
    open_drop_caches().is_ok()
}

fn open_drop_caches() -> Result<OwnedFd, CacheError> {
    rustix::fs::open(DROP_CACHES, OFlags::WRONLY | OFlags::CLOEXEC, Mode::empty())
        .map_err(drop_caches_error)
}

fn drop_caches_error(e: rustix::io::Errno) -> CacheError {
    match e {
        rustix::io::Errno::PERM | rustix::io::Errno::ACCESS => CacheError::DropCachesNotPermitted,
        rustix::io::Errno::ROFS => CacheError::DropCachesReadOnly,
        other => CacheError::DropCaches(Errno::from(other)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drop_caches_messages_are_one_line() {
        for e in [
            CacheError::DropCachesNotPermitted,
            CacheError::DropCachesReadOnly,
            CacheError::DropCaches(Errno::IO),
        ] {
            assert!(!e.to_string().contains('\n'), "{e}");
        }
        assert_eq!(
            CacheError::DropCachesNotPermitted.to_string(),
            "--drop-caches needs root (it writes /proc/sys/vm/drop_caches); \
             use --evict PATH to evict specific files without root"
        );
        assert!(matches!(
            drop_caches_error(rustix::io::Errno::ACCESS),
            CacheError::DropCachesNotPermitted
        ));
    }
}
