//! The page-in ledger: which files a run's processes brought into the page cache, and how many
//! pages each, exactly — from the kernel's own record of every insertion, the
//! `filemap:mm_filemap_add_to_page_cache` tracepoint (one record per folio added: its file's
//! device and inode, and its order, 2^order pages), with `writeback:writeback_dirty_folio` and
//! `block:block_bio_queue` beside it to tell the pages read in from those created by writing.
//! It is measured once per run and serves both the verdict (how much of a first run's page-ins
//! came from the evicted trees, how much from elsewhere, what it wrote) and the residency
//! bookkeeping (which files a later run brought in that the first did not).
//!
//! Whose page-ins: the tracepoints fire in the context of the task that adds the page, and the
//! events are opened in cgroup mode on the run's cgroup leaf (`PERF_FLAG_PID_CGROUP`, one per
//! online CPU, see [perf_event_open(2)]): they count only while a task of the leaf runs on their
//! CPU. So the ledger holds the command's whole tree and nothing else — not coldtrace, not the
//! spawner, not another process reading the same files at the same time.
//!
//! What counts: a page added to the page cache, told apart by how it came ([`origin`]): read
//! in (a `read`, a page fault on a mapping, and readahead, which may bring in pages the
//! command never touches), or created by writing a part of a file that was not cached (a new
//! file, an append). Pages of tmpfs and shared memory are not inserted this way and are not
//! counted. A page inserted and evicted again during the run counts: it was paged in.
//!
//! It needs root or CAP_PERFMON (and tracefs, for the tracepoint's layout), and the batch's
//! cgroup (so never with `--minimal`); without them there is no ledger, and the reason says why.
//! Never silently wrong: a record the kernel dropped, a ring that came near full between two
//! reads, or a CPU that came online makes the run's ledger incomplete: it then has no figures,
//! only the reason.
//!
//! [perf_event_open(2)]: https://man7.org/linux/man-pages/man2/perf_event_open.2.html
#![forbid(unsafe_code)]

pub mod layout;
pub mod names;
pub mod origin;
pub mod tracer;

use std::collections::hash_map::DefaultHasher;
use std::collections::HashMap;
use std::hash::BuildHasherDefault;

/// A file as the page cache names it: its file system's device and its inode number.
///
/// The device is the superblock's (`s_dev`), split into major and minor numbers: on most file
/// systems the same as a `stat` of the file gives, but not on btrfs (a subvolume's files report
/// a device of their own) nor through overlayfs (the pages belong to the file of the layer
/// below).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FileKey {
    /// The device's major number.
    pub major: u32,
    /// The device's minor number.
    pub minor: u32,
    /// The inode number.
    pub ino: u64,
}

/// Pages per file. Hashed with fixed keys, as the walk's table is: std's `RandomState` asks the
/// kernel for random bytes and panics where it cannot have them.
pub type PagesByFile = HashMap<FileKey, u64, BuildHasherDefault<DefaultHasher>>;

/// A set of files, hashed as [`PagesByFile`] is.
pub type FileKeys = std::collections::HashSet<FileKey, BuildHasherDefault<DefaultHasher>>;

/// What one run's processes brought into the page cache.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PageIns {
    /// Pages added, per file: read in and created by writing.
    pub files: PagesByFile,
    /// Of those, the pages created by writing, per file (files with none are absent).
    pub written: PagesByFile,
    /// When the ledger began counting, in nanoseconds since the Unix epoch on the kernel's
    /// coarse real-time clock (the one it stamps a new inode's birth time with): a file born
    /// at or after it was created during the run.
    pub began_unix_ns: u64,
}

impl PageIns {
    /// Counts `pages` more pages of `file`.
    pub fn add(&mut self, file: FileKey, pages: u64) {
        let slot = self.files.entry(file).or_insert(0);
        *slot = slot.saturating_add(pages);
    }

    /// Of the pages of `file` counted, `pages` were created by writing.
    pub fn add_written(&mut self, file: FileKey, pages: u64) {
        let slot = self.written.entry(file).or_insert(0);
        *slot = slot.saturating_add(pages);
    }

    /// Pages added over all files.
    pub fn pages(&self) -> u64 {
        self.files.values().fold(0u64, |a, &p| a.saturating_add(p))
    }

    /// Pages of `file` read in (added, and not created by writing).
    pub fn read_pages(&self, file: &FileKey) -> u64 {
        let all = self.files.get(file).copied().unwrap_or(0);
        all.saturating_sub(self.written.get(file).copied().unwrap_or(0))
    }

    /// Pages of `file` created by writing.
    pub fn written_pages(&self, file: &FileKey) -> u64 {
        self.written.get(file).copied().unwrap_or(0)
    }
}

/// A run's ledger, or why there is none for it (no privilege, records lost, …).
pub type Ledger = Result<PageIns, String>;
