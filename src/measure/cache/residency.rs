//! How much of a file set is in the page cache now: cachestat, or mincore where it tells the
//! truth; a file the kernel will not describe is unknown, never a false figure.
#![forbid(unsafe_code)]

use super::open::Opener;
use super::{FileSet, WatchedFile};
use coldtrace_syscalls::cache as raw;
use coldtrace_syscalls::Errno;
use rustix::fd::AsFd;
use rustix::fs::{Access, AtFlags, Mode, OFlags, CWD};
use std::collections::BTreeMap;
use std::fmt;
use std::sync::OnceLock;

impl FileSet {
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
