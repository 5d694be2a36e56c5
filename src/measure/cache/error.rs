//! What can go wrong in the cache module that the caller must act on ([`CacheError`]), and how
//! a long walk, eviction or probe is asked to stop ([`Stop`]). Types only; nothing here walks,
//! probes or evicts.
#![forbid(unsafe_code)]

use coldtrace_syscalls::{Errno, Signal};
use std::fmt;
use std::path::PathBuf;

/// The file whose write drops the clean page cache, dentries and inodes system-wide.
pub(super) const DROP_CACHES: &str = "/proc/sys/vm/drop_caches";

/// Asked between the steps of a long walk, eviction or probe: `Some(signal)` to give up now
/// (the batch passes its pending-signal check; `&|| None` never stops).
pub type Stop<'a> = &'a dyn Fn() -> Option<Signal>;

/// What can go wrong in this module that the caller must act on.
#[derive(Debug)]
pub enum CacheError {
    /// A root given to [`FileSet::collect`](super::FileSet::collect) does not exist.
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
            CacheError::DropCaches(e) => write!(f, "--drop-caches: {}: {e}", DROP_CACHES),
        }
    }
}

impl std::error::Error for CacheError {}
