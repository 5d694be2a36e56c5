//! The first run's working set: the watched files it brought into the page cache, and how much
//! of what it brought in is cached again before a later run. A share of a whole tree says
//! little (0.4 % of a Python installation was 41 % of libpython); a share of what the command
//! itself reads says whether the run can be cold. It measures; judging a run is record's job.
//!
//! Per file, the bytes counted as cached are at most the bytes the first run brought in (its
//! resident bytes otherwise: other pages of a large file may be cached and are not the run's),
//! so "100 %" means every file holds at least as much as the first run read of it. The set is
//! kept like the ledger's entries, in an unmapped memfd, not in coldtrace's heap.
#![forbid(unsafe_code)]

use super::error::Stop;
use super::files::WatchedFile;
use super::ledger::{encode, EntryReader};
use super::residency::{page_size, Prober, Totals};
use std::fs::File;
use std::io::Write;
use std::path::PathBuf;

/// The first run's working set, file by file with the bytes it brought in.
pub struct WorkingSet {
    file: File,
    /// Buffered entries not written yet.
    pending: Vec<u8>,
    /// Whether every entry reached the memfd.
    complete: bool,
    files: u64,
    paged_bytes: u64,
}

/// The working set's residency now.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct WorkingSetResidency {
    /// Files in the set.
    pub files: u64,
    /// Bytes the first run brought into the page cache (the denominator).
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

impl WorkingSet {
    /// An empty set (`None` when no memfd can be created).
    pub fn new() -> Option<WorkingSet> {
        rustix::fs::memfd_create("coldtrace-working-set", rustix::fs::MemfdFlags::CLOEXEC)
            .ok()
            .map(|fd| WorkingSet {
                file: File::from(fd),
                pending: Vec::new(),
                complete: true,
                files: 0,
                paged_bytes: 0,
            })
    }

    /// Adds `file`, into which the first run brought `bytes`.
    pub fn add(&mut self, file: &WatchedFile, bytes: u64) {
        encode(&mut self.pending, file, bytes);
        self.files += 1;
        self.paged_bytes = self.paged_bytes.saturating_add(bytes);
        if self.pending.len() >= 64 * 1024 {
            self.flush();
        }
    }

    fn flush(&mut self) {
        self.complete = self.complete && self.file.write_all(&self.pending).is_ok();
        self.pending = Vec::new();
    }

    /// Files in the set, and the bytes the first run brought into them.
    pub fn size(&self) -> (u64, u64) {
        (self.files, self.paged_bytes)
    }

    /// Whether the set holds no file (the first run brought nothing in).
    pub fn is_empty(&self) -> bool {
        self.files == 0
    }

    /// The set's residency now; `None` when its entries could not all be kept. The probes give
    /// up as soon as `stop` says (the files not probed are unknown).
    pub fn residency(&mut self, stop: Stop<'_>) -> Option<WorkingSetResidency> {
        if !self.pending.is_empty() {
            self.flush();
        }
        if !self.complete {
            return None;
        }
        let mut prober = Prober::new();
        let totals = Totals::new(page_size());
        let mut seen = WorkingSetResidency {
            files: self.files,
            paged_bytes: self.paged_bytes,
            ..WorkingSetResidency::default()
        };
        let mut resident = 0u64;
        let mut reader = EntryReader::new(&mut self.file);
        while let Some((file, paged)) = reader.next_entry() {
            let probe = prober.probe(&file, stop);
            let Some(now) = totals.resident_bytes(file.size_bytes, &probe) else {
                seen.unknown_files += 1;
                continue;
            };
            let counted = now.min(paged);
            resident = resident.saturating_add(counted);
            if counted > 0 && seen.largest.as_ref().is_none_or(|l| counted > l.3) {
                seen.largest = Some((file.path, file.dev, file.ino, counted));
            }
        }
        if seen.unknown_files == 0 {
            seen.resident_bytes = Some(resident);
            seen.resident_ratio =
                (seen.paged_bytes > 0).then(|| resident as f64 / seen.paged_bytes as f64);
        }
        Some(seen)
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
        let mut ws = WorkingSet::new().expect("memfd");
        assert!(ws.is_empty());
        // The first run brought 8 KiB of the (now fully cached, just written) 64 KiB file.
        ws.add(&set.files()[0], 8192);
        let r = ws.residency(&|| None).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!((r.files, r.paged_bytes), (1, 8192));
        // A file the test wrote is its own: its residency is known.
        assert_eq!(r.unknown_files, 0);
        assert_eq!(r.resident_bytes, Some(8192), "capped at what the run read");
        assert_eq!(r.resident_ratio, Some(1.0));
        assert_eq!(r.largest.as_ref().map(|l| l.3), Some(8192));
    }
}
