//! What stayed cached after an eviction, and why: the resident pages of a just-evicted file set,
//! the files that hold most of them, and for each the reason the kernel kept it. It measures;
//! wording it for a person is the view's job.
//!
//! `posix_fadvise(DONTNEED)` cannot drop pages that a process has mapped, nor pages of tmpfs or
//! ramfs (they are the file), nor a lower overlayfs layer's dirty pages; a file it could not
//! open was not evicted at all. So a cold action that did not make the files cold is said,
//! never silent. Mappings are found in [proc_pid_maps(5)] by device and inode.
//!
//! [proc_pid_maps(5)]: https://man7.org/linux/man-pages/man5/proc_pid_maps.5.html
#![forbid(unsafe_code)]

use super::files::{FileSet, WatchedFile};
use super::residency::Residency;
use super::residency::{page_size, FileProbe, Prober, Totals, OVERLAYFS_MAGIC};
use crate::measure::procfs::read_text;
use std::path::PathBuf;

/// `TMPFS_MAGIC` and `RAMFS_MAGIC` from `<linux/magic.h>`.
const IN_MEMORY: [rustix::fs::FsWord; 2] = [0x0102_1994, 0x8584_58f6];

/// Why a file's pages stayed in the page cache after it was evicted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StayReason {
    /// On tmpfs or ramfs: the pages are the file, nothing can be evicted.
    InMemoryFs,
    /// Mapped by another process (its PID and name, the first one found).
    Mapped {
        /// The process.
        pid: u32,
        /// Its `comm`.
        name: String,
    },
    /// On overlayfs, not mapped by any process coldtrace can inspect: a lower layer's dirty
    /// pages are not written back through the overlay, so they cannot be dropped.
    Overlay,
    /// None of the above that coldtrace can see (mapped by a process it may not inspect, or
    /// read again by another process since).
    Unknown,
}

impl std::fmt::Display for StayReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StayReason::InMemoryFs => {
                f.write_str("on tmpfs or ramfs, where nothing can be evicted")
            }
            StayReason::Mapped { pid, name } => {
                write!(f, "mapped by another process (pid {pid}, {name})")
            }
            StayReason::Overlay => f.write_str(
                "on overlayfs, whose lower layer's dirty pages cannot be written back through it",
            ),
            StayReason::Unknown => f.write_str(
                "not known: mapped by a process coldtrace cannot inspect, or read again since",
            ),
        }
    }
}

/// A file that stayed (partly) cached.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StayedFile {
    /// Its path.
    pub path: PathBuf,
    /// Its resident bytes.
    pub bytes: u64,
    /// Why.
    pub reason: StayReason,
}

/// What stayed cached of an evicted set.
#[derive(Clone, Debug, PartialEq)]
pub struct Stayed {
    /// The set's residency right after the eviction.
    pub residency: Residency,
    /// Files with resident pages.
    pub files: u64,
    /// The ones holding the most, largest first, each with its reason.
    pub top: Vec<StayedFile>,
}

impl FileSet {
    /// Probes the set right after its eviction: what stayed, and why, for the `top` largest.
    /// `stop` is asked as [`Prober::probe`] asks it (the files not probed are unknown).
    pub fn stayed_cached(&self, top: usize, stop: super::error::Stop<'_>) -> Stayed {
        let mut prober = Prober::new();
        let mut stayed = StayedFiles::new(top);
        for file in &self.files {
            let probe = prober.probe(file, stop);
            stayed.add(file, probe, prober.last_fs_type());
        }
        stayed.finish(prober.default_method())
    }
}

/// What stayed cached, gathered one just-evicted file at a time (the files holding the most
/// are kept with their file system, their reasons found at the end).
pub struct StayedFiles {
    totals: Totals,
    files: u64,
    top: usize,
    largest: Vec<(u64, WatchedFile, Option<rustix::fs::FsWord>)>,
}

impl StayedFiles {
    /// Nothing yet; the `top` files holding the most will be named.
    pub fn new(top: usize) -> StayedFiles {
        StayedFiles {
            totals: Totals::new(page_size()),
            files: 0,
            top,
            largest: Vec::new(),
        }
    }

    /// One evicted file, probed right after its eviction, on a file system of `fs_type`.
    pub fn add(
        &mut self,
        file: &WatchedFile,
        probe: FileProbe,
        fs_type: Option<rustix::fs::FsWord>,
    ) {
        let bytes = self
            .totals
            .resident_bytes(file.size_bytes, &probe)
            .unwrap_or(0);
        self.totals.add(file.size_bytes, probe);
        if bytes == 0 {
            return;
        }
        self.files += 1;
        let at = self.largest.partition_point(|(b, ..)| *b >= bytes);
        if at < self.top {
            self.largest.truncate(self.top.saturating_sub(1));
            let at = at.min(self.largest.len());
            self.largest.insert(at, (bytes, file.clone(), fs_type));
        }
    }

    /// What stayed, with a reason for each file named (`/proc/*/maps` read once, only when
    /// something stayed); `fallback` names the method when no file was probed.
    pub fn finish(self, fallback: &'static str) -> Stayed {
        let wanted: Vec<(u64, u64)> = self
            .largest
            .iter()
            .map(|(_, f, _)| (f.dev, f.ino))
            .collect();
        let mapped = mapping_processes(&wanted);
        let top = self
            .largest
            .into_iter()
            .zip(mapped)
            .map(|((bytes, file, fs_type), mapper)| StayedFile {
                path: file.path,
                bytes,
                reason: reason(fs_type, mapper),
            })
            .collect();
        Stayed {
            residency: self.totals.finish(fallback),
            files: self.files,
            top,
        }
    }
}

/// The reason a file stayed, from its file system type and a process that maps it.
pub fn reason(fs_type: Option<rustix::fs::FsWord>, mapper: Option<(u32, String)>) -> StayReason {
    match (fs_type, mapper) {
        (Some(t), _) if IN_MEMORY.contains(&t) => StayReason::InMemoryFs,
        (_, Some((pid, name))) => StayReason::Mapped { pid, name },
        (Some(OVERLAYFS_MAGIC), None) => StayReason::Overlay,
        _ => StayReason::Unknown,
    }
}

/// `major:minor` of a `st_dev`, as `/proc/PID/maps` writes it (glibc's `gnu_dev_major/minor`).
pub fn dev_major_minor(dev: u64) -> (u64, u64) {
    let major = ((dev >> 8) & 0xfff) | ((dev >> 32) & !0xfff);
    let minor = (dev & 0xff) | ((dev >> 12) & !0xff);
    (major, minor)
}

/// The device (`major:minor`, hex) and inode of one line of `/proc/PID/maps`.
pub fn parse_maps_line(line: &str) -> Option<((u64, u64), u64)> {
    let mut fields = line.split_ascii_whitespace();
    let dev = fields.nth(3)?;
    let inode: u64 = fields.next()?.parse().ok()?;
    let (major, minor) = dev.split_once(':')?;
    let major = u64::from_str_radix(major, 16).ok()?;
    let minor = u64::from_str_radix(minor, 16).ok()?;
    Some(((major, minor), inode))
}

/// For each `(st_dev, inode)`, the first other process found that maps it (every readable
/// `/proc/PID/maps` is read once; only called when something stayed after an eviction).
pub(super) fn mapping_processes(wanted: &[(u64, u64)]) -> Vec<Option<(u32, String)>> {
    let mut found: Vec<Option<(u32, String)>> = vec![None; wanted.len()];
    if wanted.is_empty() {
        return found;
    }
    let keys: Vec<((u64, u64), u64)> = wanted
        .iter()
        .map(|&(dev, ino)| (dev_major_minor(dev), ino))
        .collect();
    let me = std::process::id();
    let Ok(proc_dir) = std::fs::read_dir("/proc") else {
        return found;
    };
    for entry in proc_dir.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        let Some(maps) = read_text(&format!("/proc/{pid}/maps"), 64 << 20) else {
            continue;
        };
        if pid == me {
            continue;
        }
        for key in maps.lines().filter_map(parse_maps_line) {
            for (slot, wanted) in found.iter_mut().zip(&keys) {
                if slot.is_none() && key == *wanted && key.1 != 0 {
                    let comm = read_text(&format!("/proc/{pid}/comm"), 64)
                        .map(|c| c.trim().to_string())
                        .unwrap_or_default();
                    *slot = Some((pid, comm));
                }
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_lines_give_device_and_inode() {
        let line = "7f0c1c000000-7f0c1c021000 r--p 00000000 fd:01 1845032  /usr/lib/libc.so.6";
        assert_eq!(parse_maps_line(line), Some(((0xfd, 1), 1_845_032)));
        assert_eq!(
            parse_maps_line("7f0-7f1 rw-p 00000000 00:00 0"),
            Some(((0, 0), 0))
        );
        assert_eq!(parse_maps_line("garbage"), None);
        // st_dev 0xfe00 is 254:0 (the root of this project's VM); 0x10302 is 259:2 (nvme).
        assert_eq!(dev_major_minor(0xfe00), (254, 0));
        assert_eq!(dev_major_minor(0x10302), (259, 2));
    }

    #[test]
    fn tmpfs_comes_first_then_a_mapping_then_overlayfs() {
        let mapper = Some((42, "python3".to_string()));
        assert_eq!(
            reason(Some(0x0102_1994), mapper.clone()),
            StayReason::InMemoryFs
        );
        assert_eq!(
            reason(Some(0xEF53), mapper),
            StayReason::Mapped {
                pid: 42,
                name: "python3".into()
            }
        );
        assert_eq!(reason(Some(OVERLAYFS_MAGIC), None), StayReason::Overlay);
        assert_eq!(reason(Some(0xEF53), None), StayReason::Unknown);
    }
}
