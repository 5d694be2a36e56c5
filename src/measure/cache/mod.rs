//! Page-cache residency and eviction of a watched set of files: the file set, probing, evicting.
//! It measures and acts on the cache; it knows nothing of runs, records or batches.
//!
//! A "cold" run is only cold if the files it reads are not in the page cache, so coldtrace
//! measures residency before a run and can evict the files without root. Residency comes from
//! [cachestat(2)] (Linux ≥ 6.5), with [mincore(2)] on older kernels and on overlayfs (where
//! cachestat sees no pages) — but only for files the caller may write: without write
//! permission the kernel (≥ 5.2) reports every page resident through `mincore` and refuses
//! `cachestat` with `EPERM`. Such files are reported as unknown, and a set with any unknown
//! file has no residency figure at all, never a false 0 % or 100 %.
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

mod evict;
mod files;
mod ledger;
mod open;
mod residency;
mod stayed;

pub use evict::{drop_caches, drop_caches_permitted, is_tmpfs, EvictReport};
pub use files::{FileSet, FileSetIdentity, WatchedFile};
pub use ledger::{Ledger, PagedFile, PagedIn};
pub use residency::{
    aggregate, cachestat_available, choose_method, FileProbe, Method, Prober, Residency, Totals,
    UnknownReason, OVERLAYFS_MAGIC,
};
pub use stayed::{StayReason, Stayed, StayedFile};

use coldtrace_syscalls::{Errno, Signal};
use std::fmt;

/// Asked between the steps of a long walk, eviction or probe: `Some(signal)` to give up now
/// (the batch passes its pending-signal check; `&|| None` never stops).
pub type Stop<'a> = &'a dyn Fn() -> Option<Signal>;
use std::path::PathBuf;

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
    /// A root directory cannot be listed (e.g. `/root` for a user): nothing under it could be
    /// evicted or measured.
    RootUnreadable {
        /// The root as given.
        path: PathBuf,
        /// Why listing it failed.
        error: std::io::Error,
    },
    /// A root is neither a regular file nor a directory (a FIFO, a device).
    RootKind {
        /// The root as given.
        path: PathBuf,
        /// What it is.
        kind: &'static str,
    },
    /// The walk was given up because a signal asked coldtrace to stop.
    Interrupted(Signal),
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
            CacheError::RootUnreadable { path, error } => write!(
                f,
                "cannot list the directory {}: {error}; nothing under it could be made cold or \
                 measured",
                path.display()
            ),
            CacheError::RootKind { path, kind } => write!(
                f,
                "{} is {kind}, not a regular file or a directory",
                path.display()
            ),
            CacheError::Interrupted(sig) => write!(f, "interrupted by {sig}"),
            CacheError::DropCachesNotPermitted => f.write_str(
                "--drop-caches needs root (it writes /proc/sys/vm/drop_caches); \
                 use --evict PATH to evict specific files without root",
            ),
            CacheError::DropCachesReadOnly => f.write_str(
                "--drop-caches: /proc/sys is read-only here (EROFS); \
                 use --evict PATH to evict specific files",
            ),
            CacheError::DropCaches(e) => write!(f, "--drop-caches: {}: {e}", evict::DROP_CACHES),
        }
    }
}

impl std::error::Error for CacheError {}
