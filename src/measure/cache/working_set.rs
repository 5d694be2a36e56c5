//! The files a command reads: the first run's working set (the watched files it brought into
//! the page cache), grown by any file a later run brings in. Between whole checks of the tree
//! only these files are probed — a command reads a few dozen files of a tree of tens of
//! thousands — and the tree's total is the last whole check's, with these files as they are now
//! ([`WorkingSet::tree_now`]).
//!
//! A share of a whole tree says little (0.4 % of a Python installation was 41 % of libpython);
//! a share of what the first run itself read says whether a later run can be cold
//! ([`WorkingSetResidency`]). Per file, the bytes counted as cached are at most the bytes the
//! first run brought in (its resident bytes otherwise: other pages of a large file may be cached
//! and are not the run's), so "100 %" means every file holds at least as much as the first run
//! read of it.
//!
//! The files' descriptors can be kept open across runs ([`WorkingSet::new`] with `keep_open`,
//! when coldtrace does not clone the children itself: a clone copies the descriptor table), so
//! that a check is one `cachestat` (or `mincore`) per file — no path walked, no open, no close.
//! The soft `RLIMIT_NOFILE` is raised to the hard one for them ([getrlimit(2)]); past it, files
//! are opened at each check.
//!
//! [getrlimit(2)]: https://man7.org/linux/man-pages/man2/getrlimit.2.html
#![forbid(unsafe_code)]

use super::error::Stop;
use super::files::WatchedFile;
use super::residency::{page_size, Prober, Residency, Totals};
use super::table::{key_of, FixedHasher};
use crate::measure::page_ins::FileKey;
use rustix::fd::OwnedFd;
use std::collections::HashMap;
use std::path::PathBuf;

/// Descriptors left free for everything else coldtrace opens.
const SPARE_DESCRIPTORS: u64 = 256;

/// One file of the set.
struct SetFile {
    file: WatchedFile,
    fd: Option<OwnedFd>,
    /// The bytes the first run brought in (0 for a file a later run brought in).
    paged: u64,
    /// Brought in by the first run (it counts in [`WorkingSetResidency`]).
    first: bool,
    /// Resident bytes at the last whole check (`None`: unknown).
    at_check: Option<u64>,
    /// Resident bytes at the last probe (`None`: unknown, or not probed yet).
    now: Option<u64>,
}

/// The first run's working set, grown by later runs' (see the module's note).
pub struct WorkingSet {
    files: Vec<SetFile>,
    index: HashMap<FileKey, usize, FixedHasher>,
    /// Descriptors may still be kept open.
    keep_open: bool,
    first_files: u64,
    first_paged: u64,
}

/// The working set's residency now.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct WorkingSetResidency {
    /// Files the first run brought into the page cache.
    pub files: u64,
    /// Bytes it brought in (the denominator).
    pub paged_bytes: u64,
    /// Of those, cached now (per file at most what the first run brought in); `None` when a
    /// file's residency is unknown.
    pub resident_bytes: Option<u64>,
    /// `resident_bytes / paged_bytes`.
    pub resident_ratio: Option<f64>,
    /// Files whose residency is unknown.
    pub unknown_files: u64,
    /// The file holding the most of the set's cached bytes: its path, device and inode (to find
    /// a process that maps it), and those bytes.
    pub largest: Option<(PathBuf, u64, u64, u64)>,
}

/// A file of the set that gained pages between two probes.
pub struct Gained<'a> {
    /// The file.
    pub file: &'a WatchedFile,
    /// The bytes it gained.
    pub bytes: u64,
}

impl WorkingSet {
    /// An empty set; `keep_open`: keep each file's descriptor open across runs.
    pub fn new(keep_open: bool) -> WorkingSet {
        if keep_open {
            raise_descriptor_limit();
        }
        WorkingSet {
            files: Vec::new(),
            index: HashMap::default(),
            keep_open,
            first_files: 0,
            first_paged: 0,
        }
    }

    /// Adds `file` (resident `at_check` bytes at the last whole check, `now` bytes now), into
    /// which a run brought `paged` bytes; `first`: that run was the first.
    pub fn add(
        &mut self,
        file: &WatchedFile,
        paged: u64,
        first: bool,
        at_check: Option<u64>,
        now: Option<u64>,
    ) {
        let key = key_of(file);
        if self.index.contains_key(&key) {
            return;
        }
        let fd = self.keep_open.then(|| self.open(file)).flatten();
        if first {
            self.first_files += 1;
            self.first_paged = self.first_paged.saturating_add(paged);
        }
        self.index.insert(key, self.files.len());
        self.files.push(SetFile {
            file: file.clone(),
            fd,
            paged: if first { paged } else { 0 },
            first,
            at_check,
            now,
        });
    }

    /// A descriptor kept open for `file`, while the limit allows.
    fn open(&mut self, file: &WatchedFile) -> Option<OwnedFd> {
        let limit = rustix::process::getrlimit(rustix::process::Resource::Nofile).current;
        if limit.is_some_and(|l| self.files.len() as u64 + SPARE_DESCRIPTORS >= l) {
            self.keep_open = false;
            return None;
        }
        let fd = Prober::new().open(file).ok();
        self.keep_open = fd.is_some();
        fd
    }

    /// Whether the set holds the file the page cache names `key`.
    pub fn contains(&self, key: &FileKey) -> bool {
        self.index.contains_key(key)
    }

    /// The file of the set the page cache names `key`.
    pub fn file(&self, key: &FileKey) -> Option<&WatchedFile> {
        self.index.get(key).map(|&i| &self.files[i].file)
    }

    /// A whole check found `file` resident `bytes` now.
    pub fn checked(&mut self, file: &WatchedFile, bytes: Option<u64>) {
        if let Some(&i) = self.index.get(&key_of(file)) {
            self.files[i].at_check = bytes;
            self.files[i].now = bytes;
        }
    }

    /// Files the first run brought in, and the bytes.
    pub fn first_run(&self) -> (u64, u64) {
        (self.first_files, self.first_paged)
    }

    /// Files in the set, the first run's and the later runs'.
    pub fn len(&self) -> usize {
        self.files.len()
    }

    /// Whether the set holds no file.
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// Probes every file of the set now; `each` sees every file that gained pages since the
    /// last probe or whole check, with the bytes it gained. The probes give up as soon as
    /// `stop` says (the files not probed are unknown).
    pub fn probe(&mut self, stop: Stop<'_>, each: &mut dyn FnMut(Gained<'_>)) {
        let mut prober = Prober::new();
        let totals = Totals::new(page_size());
        for f in &mut self.files {
            let probe = match &f.fd {
                Some(fd) => prober.probe_fd(&f.file, fd, stop),
                None => prober.probe(&f.file, stop),
            };
            // A file removed since holds nothing under its path any more.
            let now = match super::table::is_gone(&probe) {
                true => Some(0),
                false => totals.resident_bytes(f.file.size_bytes, &probe),
            };
            if let (Some(was), Some(is)) = (f.now, now) {
                if is > was {
                    each(Gained {
                        file: &f.file,
                        bytes: is - was,
                    });
                }
            }
            f.now = now;
        }
    }

    /// The first run's files as the last probe found them.
    pub fn residency(&self) -> WorkingSetResidency {
        let mut seen = WorkingSetResidency {
            files: self.first_files,
            paged_bytes: self.first_paged,
            ..WorkingSetResidency::default()
        };
        let mut resident = 0u64;
        for f in self.files.iter().filter(|f| f.first) {
            let Some(now) = f.now else {
                seen.unknown_files += 1;
                continue;
            };
            let counted = now.min(f.paged);
            resident = resident.saturating_add(counted);
            if counted > 0 && seen.largest.as_ref().is_none_or(|l| counted > l.3) {
                seen.largest = Some((f.file.path.clone(), f.file.dev, f.file.ino, counted));
            }
        }
        if seen.unknown_files == 0 {
            seen.resident_bytes = Some(resident);
            seen.resident_ratio =
                (seen.paged_bytes > 0).then(|| resident as f64 / seen.paged_bytes as f64);
        }
        seen
    }

    /// The tree's residency now, from `checked` (the last whole check's): the set's files as
    /// the last probe found them, the others as that check did. Dirty bytes are not followed
    /// between whole checks (`None`).
    pub fn tree_now(&self, checked: &Residency) -> Residency {
        let mut now = checked.clone();
        now.dirty_bytes = None;
        let Some(mut resident) = checked.resident_bytes else {
            return now;
        };
        let mut unknown = 0u64;
        for f in &self.files {
            match (f.at_check, f.now) {
                (Some(then), Some(is)) => {
                    resident = resident.saturating_sub(then).saturating_add(is)
                }
                (Some(_), None) => unknown += 1,
                (None, _) => {}
            }
        }
        if unknown > 0 {
            now.resident_bytes = None;
            now.resident_ratio = None;
            now.unknown_files = unknown;
            now.unknown_reason = Some(format!(
                "residency unknown for {unknown} of the {} files read by the runs",
                self.files.len()
            ));
            return now;
        }
        now.resident_bytes = Some(resident);
        now.resident_ratio = (checked.page_rounded_bytes > 0)
            .then(|| resident as f64 / checked.page_rounded_bytes as f64);
        now
    }
}

/// Raises the soft limit on open descriptors to the hard one (no privilege needed), so that a
/// working set's descriptors can stay open.
fn raise_descriptor_limit() {
    use rustix::process::{getrlimit, setrlimit, Resource};
    let limit = getrlimit(Resource::Nofile);
    if limit.current != limit.maximum {
        let raised = rustix::process::Rlimit {
            current: limit.maximum,
            maximum: limit.maximum,
        };
        let _ = setrlimit(Resource::Nofile, raised);
    }
}

/// The first other process found that maps the file with this device and inode, as
/// `pid 812 (python3)`: reads every readable `/proc/PID/maps`, so it is asked only once a run
/// has been found not cold.
pub fn mapped_by(dev: u64, ino: u64) -> Option<String> {
    super::stayed::mapping_processes(&[(dev, ino)])
        .pop()
        .flatten()
        .map(|(pid, name)| format!("pid {pid} ({name})"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_the_first_run_read_is_the_denominator_and_caps_each_file() {
        let dir = std::env::temp_dir().join(format!("coldtrace-ws-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("f");
        std::fs::write(&path, vec![3u8; 64 * 1024]).unwrap();
        let set = super::super::FileSet::collect(std::slice::from_ref(&path)).unwrap();
        for keep_open in [false, true] {
            let mut ws = WorkingSet::new(keep_open);
            assert!(ws.is_empty());
            // The first run brought 8 KiB of the (now fully cached, just written) 64 KiB file.
            ws.add(&set.files()[0], 8192, true, Some(8192), Some(8192));
            let mut gained = 0;
            ws.probe(&|| None, &mut |g| gained += g.bytes);
            assert_eq!(
                gained,
                64 * 1024 - 8192,
                "the rest of the file was cached since"
            );
            let r = ws.residency();
            assert_eq!((r.files, r.paged_bytes), (1, 8192));
            // A file the test wrote is its own: its residency is known.
            assert_eq!(r.unknown_files, 0);
            assert_eq!(r.resident_bytes, Some(8192), "capped at what the run read");
            assert_eq!(r.resident_ratio, Some(1.0));
            assert_eq!(r.largest.as_ref().map(|l| l.3), Some(8192));
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_trees_total_moves_with_the_set_and_stays_as_last_checked_elsewhere() {
        let dir = std::env::temp_dir().join(format!("coldtrace-ws-tree-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("f");
        std::fs::write(&path, vec![3u8; 16 * 1024]).unwrap();
        let set = super::super::FileSet::collect(std::slice::from_ref(&path)).unwrap();
        let mut ws = WorkingSet::new(false);
        // At the check: the file held 4 KiB of 16, the tree 1 MiB of 2 MiB.
        ws.add(&set.files()[0], 4096, true, Some(4096), Some(4096));
        let checked = Residency {
            method: "cachestat",
            files: 10,
            total_bytes: 2 << 20,
            resident_bytes: Some(1 << 20),
            resident_ratio: Some(0.5),
            dirty_bytes: Some(0),
            unknown_files: 0,
            unknown_reason: None,
            page_rounded_bytes: 2 << 20,
        };
        ws.probe(&|| None, &mut |_| {});
        let now = ws.tree_now(&checked);
        // Just written: the whole file is cached now, 12 KiB more than at the check.
        assert_eq!(now.resident_bytes, Some((1 << 20) + 12 * 1024));
        assert_eq!(now.dirty_bytes, None);
        assert_eq!((now.files, now.total_bytes), (10, 2 << 20));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
