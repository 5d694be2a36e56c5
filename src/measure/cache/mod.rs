//! Page-cache residency and eviction of a watched set of files: the file set, the table it is
//! walked into once per batch and checked whole from, the working set probed in between,
//! probing, evicting. It measures and acts on the cache; it knows nothing of runs, records or
//! batches.
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

mod error;
mod evict;
mod files;
mod history;
mod open;
mod residency;
mod stayed;
mod table;
mod working_set;

pub use error::{CacheError, Stop};
pub use evict::{check_drop_caches, drop_caches, drop_caches_permitted, is_tmpfs, EvictReport};
pub use files::{FileSet, FileSetIdentity, WatchedFile};
pub use history::{CacheChange, CacheHistory};
pub use residency::{
    aggregate, cachestat_available, choose_method, FileProbe, Method, Prober, Residency, Totals,
    UnknownReason, OVERLAYFS_MAGIC,
};
pub use stayed::{StayReason, Stayed, StayedFile, StayedFiles};
pub use table::{key_of, Check, Checked, FileTable, PagedFile, PagedIn};
pub use working_set::{mapped_by, Gained, WorkingSet, WorkingSetResidency};
