//! Making files cold: eviction of a file set (posix_fadvise DONTNEED, no root) and dropping the
//! whole page cache (root). It acts; measuring what it achieved is residency's job.
#![forbid(unsafe_code)]

use super::error::{CacheError, Stop, DROP_CACHES};
use super::files::{FileSet, WatchedFile};
use super::open::Opener;
use super::residency::{cachestat_available, choose_method, FsTypes, Method};
use coldtrace_syscalls::cache as raw;
use coldtrace_syscalls::{Errno, Signal};
use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use rustix::fs::Advice;
use std::path::Path;

impl FileSet {
    /// Evicts every file from the page cache: dirty pages are written back first (a dirty page
    /// cannot be dropped), then `POSIX_FADV_DONTNEED` over the whole file. Works without root.
    ///
    /// Pages that another process has mapped stay resident, and so do dirty pages of a lower
    /// layer of an overlayfs (the overlay writes back its upper layer only: verified on 6.18,
    /// a freshly written lower file stayed fully cached after `fdatasync` + `DONTNEED` through
    /// the overlay, and was dropped once written back below it); measure
    /// [`FileSet::residency`] afterwards to know what was actually dropped.
    pub fn evict(&self) -> EvictReport {
        match self.evict_until(&|| None) {
            Ok(report) | Err((report, _)) => report,
        }
    }

    /// [`FileSet::evict`], asking `stop` every 64 files whether to give up (writing back and
    /// advising a large tree takes seconds). Entries the walk could not read count as failed:
    /// whatever they hold was not evicted.
    ///
    /// # Errors
    /// The report so far and the signal, when `stop` said so.
    pub fn evict_until(&self, stop: Stop<'_>) -> Result<EvictReport, (EvictReport, Signal)> {
        let cachestat = cachestat_available();
        let mut opener = Opener::new();
        let mut fs_types = FsTypes::default();
        let mut report = EvictReport {
            files: 0,
            bytes: 0,
            failed: self.unreached(),
            first_error: self.first_unreached().map(|e| format!("cannot read {e}")),
        };
        for (n, file) in self.files.iter().enumerate() {
            if n % 64 == 63 {
                if let Some(sig) = stop() {
                    return Err((report, sig));
                }
            }
            match evict_one(&mut opener, &mut fs_types, file, cachestat) {
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
        Ok(report)
    }
}

fn evict_one(
    opener: &mut Opener,
    fs_types: &mut FsTypes,
    file: &WatchedFile,
    cachestat: bool,
) -> Result<(), String> {
    let fd = opener.open(file).map_err(|e| format!("open: {e}"))?;
    evict_open(fd.as_fd(), choose_method(fs_types.of(file, &fd), cachestat))
}

/// Evicts the file open as `fd`, whose file system takes `method`: writes back its dirty pages,
/// then `POSIX_FADV_DONTNEED` over it. `Err` says which step failed.
pub(super) fn evict_open(fd: BorrowedFd<'_>, method: Method) -> Result<(), String> {
    // fdatasync on a clean file can still cost a journal round trip, so only when needed;
    // where cachestat cannot tell (no cachestat; overlayfs, where it sees no pages) write back
    // unconditionally.
    let dirty = method != Method::Cachestat
        || match raw::cachestat(fd, 0, 0) {
            Ok(stat) => stat.nr_dirty + stat.nr_writeback > 0,
            Err(_) => true,
        };
    if dirty {
        rustix::fs::fdatasync(fd).map_err(|e| format!("fdatasync: {}", Errno::from(e)))?;
    }
    rustix::fs::fadvise(fd, 0, None, Advice::DontNeed)
        .map_err(|e| format!("fadvise(DONTNEED): {}", Errno::from(e)))
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
impl EvictReport {
    /// Nothing evicted, nothing failed.
    pub fn none() -> EvictReport {
        EvictReport {
            files: 0,
            bytes: 0,
            failed: 0,
            first_error: None,
        }
    }
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
    check_drop_caches().is_ok()
}

/// As [`drop_caches_permitted`], with why not: not root, a read-only `/proc/sys`, no `/proc`.
///
/// # Errors
/// As [`drop_caches`].
pub fn check_drop_caches() -> Result<(), CacheError> {
    open_drop_caches().map(drop)
}

fn open_drop_caches() -> Result<OwnedFd, CacheError> {
    crate::measure::procfs::open_for_writing(DROP_CACHES).map_err(drop_caches_error)
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
