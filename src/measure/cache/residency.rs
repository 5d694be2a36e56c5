//! How much of a file set is in the page cache now: cachestat, or mincore where it tells the
//! truth; a file the kernel will not describe is unknown, never a false figure.
#![forbid(unsafe_code)]

use super::error::Stop;
use super::files::{FileSet, WatchedFile};
use super::open::Opener;
use crate::untrusted::OpenError;
use coldtrace_syscalls::cache as raw;
use coldtrace_syscalls::{Errno, Signal};
use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use rustix::fs::{Access, AtFlags, Mode, OFlags, CWD};
use std::collections::BTreeMap;
use std::fmt;
use std::sync::OnceLock;

impl FileSet {
    /// The page-cache residency of every file, now.
    ///
    /// Each file is probed with the method that tells the truth on its file system (see
    /// [`choose_method`]). Never fails: a file that cannot be probed is unknown, and then the
    /// whole residency is unknown (see [`aggregate`]).
    /// Entries the walk could not read are unknown: the files under them were not measured.
    pub fn residency(&self) -> Residency {
        let mut prober = Prober::new();
        let fallback = prober.default_method();
        let probes = self
            .files
            .iter()
            .map(|file| (file.size_bytes, prober.probe(file, &|| None)))
            .chain(
                (0..self.unreached()).map(|_| (0, FileProbe::Unknown(UnknownReason::Unreadable))),
            );
        aggregate(fallback, page_size(), probes)
    }
}

/// How one file's residency is asked of the kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Method {
    /// [cachestat(2)] over the whole file.
    ///
    /// [cachestat(2)]: https://man7.org/linux/man-pages/man2/cachestat.2.html
    Cachestat,
    /// `mmap` + [mincore(2)], only where it tells the truth (the caller owns or may write the
    /// file).
    ///
    /// [mincore(2)]: https://man7.org/linux/man-pages/man2/mincore.2.html
    Mincore,
}

impl Method {
    /// The name in records.
    pub fn name(self) -> &'static str {
        match self {
            Method::Cachestat => "cachestat",
            Method::Mincore => "mincore",
        }
    }
}

/// `OVERLAYFS_SUPER_MAGIC` from `<linux/magic.h>`.
pub const OVERLAYFS_MAGIC: rustix::fs::FsWord = 0x794c_7630;

/// The method for a file on a file system whose [statfs(2)] `f_type` is `fs_type` (`None`:
/// unknown), given whether the kernel has cachestat.
///
/// On overlayfs — a container's root — cachestat asks the overlay inode, which holds no pages
/// (they belong to the inode of the layer below), so it reports 0 pages for a fully cached file
/// while mincore, through the mapping of the real file, sees them all (verified on 6.18 with an
/// 8 MiB file read through the overlay: cachestat 0 pages, mincore 2,048). mincore is used there.
///
/// [statfs(2)]: https://man7.org/linux/man-pages/man2/statfs.2.html
pub fn choose_method(fs_type: Option<rustix::fs::FsWord>, cachestat: bool) -> Method {
    if fs_type == Some(OVERLAYFS_MAGIC) || !cachestat {
        Method::Mincore
    } else {
        Method::Cachestat
    }
}

/// Probes files one after another: opens each (see [`Opener`]), finds its file system with one
/// [fstatfs(2)] per device (files of one device are consecutive in walk order), and asks with
/// the method that tells the truth there.
///
/// [fstatfs(2)]: https://man7.org/linux/man-pages/man2/fstatfs.2.html
pub struct Prober {
    opener: Opener,
    cachestat: bool,
    fs_types: FsTypes,
    /// The signal that stopped a probe: every later probe is unknown without being made.
    interrupted: Option<Signal>,
}

/// The file system type of each file, from one [fstatfs(2)] per run of files on one device.
///
/// [fstatfs(2)]: https://man7.org/linux/man-pages/man2/fstatfs.2.html
#[derive(Default)]
pub(super) struct FsTypes {
    /// The last device seen and its file system type.
    last: Option<(u64, Option<rustix::fs::FsWord>)>,
}

impl FsTypes {
    /// The `f_type` of the file system holding `file`, open as `fd`.
    pub(super) fn of(&mut self, file: &WatchedFile, fd: &OwnedFd) -> Option<rustix::fs::FsWord> {
        match self.last {
            Some((dev, fs_type)) if dev == file.dev => fs_type,
            _ => {
                let fs_type = rustix::fs::fstatfs(fd).ok().map(|s| s.f_type);
                self.last = Some((file.dev, fs_type));
                fs_type
            }
        }
    }
}

impl Prober {
    /// A prober for this process's credentials and kernel.
    pub fn new() -> Prober {
        Prober {
            opener: Opener::new(),
            cachestat: cachestat_available(),
            fs_types: FsTypes::default(),
            interrupted: None,
        }
    }

    /// The signal that stopped a probe of this prober, if one did.
    pub fn interrupted(&self) -> Option<Signal> {
        self.interrupted
    }

    /// The file system type of the last file probed (`None`: unknown, or nothing probed).
    pub fn last_fs_type(&self) -> Option<rustix::fs::FsWord> {
        self.fs_types.last.and_then(|(_, t)| t)
    }

    /// The method of a file system nothing is known about.
    pub fn default_method(&self) -> &'static str {
        choose_method(None, self.cachestat).name()
    }

    /// The residency of one file, now. A `mincore` probe asks `stop` between pieces of
    /// [`MINCORE_PIECE`] bytes; when it says to stop, this file and every later one are
    /// unknown and [`Prober::interrupted`] has the signal.
    pub fn probe(&mut self, file: &WatchedFile, stop: Stop<'_>) -> FileProbe {
        self.probe_after(file, stop, &mut |_, _| {})
    }

    /// [`Prober::probe`], with `first` given the open descriptor and the method its file
    /// system takes before the probe (an eviction, with one open for both).
    pub(super) fn probe_after(
        &mut self,
        file: &WatchedFile,
        stop: Stop<'_>,
        first: &mut dyn FnMut(BorrowedFd<'_>, Method),
    ) -> FileProbe {
        if let Some(sig) = self.interrupted {
            return FileProbe::Unknown(UnknownReason::Interrupted(sig));
        }
        let fd = match self.opener.open(file) {
            Ok(fd) => fd,
            Err(e) => return FileProbe::Unknown(UnknownReason::Open(e)),
        };
        let method = choose_method(self.fs_types.of(file, &fd), self.cachestat);
        first(fd.as_fd(), method);
        self.probe_open(file, fd.as_fd(), method, stop)
    }

    /// The residency of `file`, open as `fd` (kept open across runs); `None` when the file
    /// was replaced or truncated since it was opened (its descriptor no longer says what the
    /// path holds).
    pub(super) fn probe_fd(
        &mut self,
        file: &WatchedFile,
        fd: &OwnedFd,
        stop: Stop<'_>,
    ) -> FileProbe {
        if let Some(sig) = self.interrupted {
            return FileProbe::Unknown(UnknownReason::Interrupted(sig));
        }
        let method = choose_method(self.fs_types.of(file, fd), self.cachestat);
        self.probe_open(file, fd.as_fd(), method, stop)
    }

    fn probe_open(
        &mut self,
        file: &WatchedFile,
        fd: BorrowedFd<'_>,
        method: Method,
        stop: Stop<'_>,
    ) -> FileProbe {
        let probe = match method {
            Method::Cachestat => probe_cachestat(fd),
            Method::Mincore => probe_mincore(fd, file, self.opener.euid, stop),
        };
        if let FileProbe::Unknown(UnknownReason::Interrupted(sig)) = probe {
            self.interrupted = Some(sig);
        }
        probe
    }

    /// Opens `file` as a probe would (to keep it open across runs).
    pub(super) fn open(&mut self, file: &WatchedFile) -> Result<OwnedFd, OpenError> {
        self.opener.open(file)
    }
}

impl Default for Prober {
    fn default() -> Self {
        Prober::new()
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

fn probe_cachestat(fd: rustix::fd::BorrowedFd<'_>) -> FileProbe {
    match raw::cachestat(fd, 0, 0) {
        Ok(stat) => FileProbe::Known {
            cached_pages: stat.nr_cache,
            dirty_pages: Some(stat.nr_dirty),
            method: Method::Cachestat,
        },
        Err(Errno::PERM) => FileProbe::Unknown(UnknownReason::CachestatDenied),
        Err(e) => FileProbe::Unknown(UnknownReason::Probe(e)),
    }
}

/// `mincore` counts what it maps: a file's holes cost as much as its data, and a 1 TiB sparse
/// file took about 20 s (on overlayfs, where cachestat cannot be used). So only the file's data
/// is probed (`SEEK_DATA`/`SEEK_HOLE`: a hole read as zeros is rarely cached, and is left out),
/// in pieces of this many bytes, `stop` asked between them (a piece takes about 20 ms here).
pub const MINCORE_PIECE: u64 = 1 << 30;

/// The most data of one file `mincore` probes: beyond it the file is unknown.
pub const MINCORE_LIMIT: u64 = 64 << 30;

fn probe_mincore(
    fd: rustix::fd::BorrowedFd<'_>,
    file: &WatchedFile,
    euid: u32,
    stop: Stop<'_>,
) -> FileProbe {
    if !mincore_trustworthy(file, euid) {
        return FileProbe::Unknown(UnknownReason::MincoreUntrustworthy);
    }
    let mut pages = 0u64;
    let mut probed = 0u64;
    for (from, to) in data_segments(fd, file.size_bytes) {
        let mut at = from;
        while at < to {
            if let Some(sig) = stop() {
                return FileProbe::Unknown(UnknownReason::Interrupted(sig));
            }
            let len = (to - at).min(MINCORE_PIECE);
            probed = probed.saturating_add(len);
            if probed > MINCORE_LIMIT {
                return FileProbe::Unknown(UnknownReason::TooMuchData);
            }
            match raw::mincore_resident_pages_in(fd, at, len) {
                Ok(n) => pages = pages.saturating_add(n),
                Err(e) => return FileProbe::Unknown(UnknownReason::Probe(e)),
            }
            at += len;
        }
    }
    FileProbe::Known {
        cached_pages: pages,
        dirty_pages: None,
        method: Method::Mincore,
    }
}

/// The ranges of data of a file of `size` bytes, from `SEEK_DATA`/`SEEK_HOLE` ([lseek(2)]);
/// the whole file where the file system cannot tell. Moves the descriptor's offset.
///
/// [lseek(2)]: https://man7.org/linux/man-pages/man2/lseek.2.html
fn data_segments(fd: rustix::fd::BorrowedFd<'_>, size: u64) -> Vec<(u64, u64)> {
    use rustix::fs::SeekFrom;
    let mut segments = Vec::new();
    let mut at = 0u64;
    // Each round moves past one hole: bounded by the file's size, and by a count as a guard.
    for _ in 0..1_000_000 {
        if at >= size {
            break;
        }
        let from = match rustix::fs::seek(fd, SeekFrom::Data(at)) {
            Ok(from) => from,
            Err(rustix::io::Errno::NXIO) => break,
            Err(_) => {
                segments.push((at, size));
                break;
            }
        };
        let to = rustix::fs::seek(fd, SeekFrom::Hole(from))
            .unwrap_or(size)
            .min(size);
        if to <= from {
            segments.push((from, size));
            break;
        }
        segments.push((from, to));
        at = to;
    }
    segments
}

/// Why one file's residency is unknown.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum UnknownReason {
    /// `cachestat` returned `EPERM`: the caller may not write the file.
    CachestatDenied,
    /// `mincore` (no cachestat, or overlayfs) would claim every page resident: no write
    /// permission.
    MincoreUntrustworthy,
    /// The file could not be opened (or is no longer a regular file).
    Open(OpenError),
    /// An entry of the tree (a directory, a symlink) could not be read during the walk: what
    /// it holds was not probed.
    Unreadable,
    /// The probe failed otherwise.
    Probe(Errno),
    /// `mincore` would have had to map more than [`MINCORE_LIMIT`] bytes of data.
    TooMuchData,
    /// A signal asked coldtrace to stop before this file was probed.
    Interrupted(Signal),
}

impl fmt::Display for UnknownReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            UnknownReason::CachestatDenied => {
                f.write_str("cachestat refused with EPERM (no write permission)")
            }
            UnknownReason::MincoreUntrustworthy => {
                f.write_str("mincore claims every page without write permission")
            }
            UnknownReason::Open(e) => write!(f, "open failed: {e}"),
            UnknownReason::Unreadable => f.write_str("unreadable in the walk (not probed)"),
            UnknownReason::Probe(e) => write!(f, "probe failed: {e}"),
            UnknownReason::TooMuchData => write!(
                f,
                "more than {} GiB of data: too much to probe with mincore",
                MINCORE_LIMIT >> 30
            ),
            UnknownReason::Interrupted(sig) => write!(f, "not probed: interrupted by {sig}"),
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
        /// How it was asked.
        method: Method,
    },
    /// Not known, and why.
    Unknown(UnknownReason),
}

/// Page-cache residency of a [`FileSet`].
#[derive(Clone, Debug, PartialEq)]
pub struct Residency {
    /// `"cachestat"`, `"mincore"` (no cachestat, or overlayfs), or `"cachestat+mincore"` when
    /// the files span both kinds of file system.
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
    /// The files' sizes, each rounded up to whole pages: the most that can be resident (the
    /// ratio's denominator; not in records).
    pub page_rounded_bytes: u64,
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

impl Residency {
    /// `self` as measured before a probe that a signal stopped: every file unknown, and why.
    pub fn interrupted(&self, sig: Signal) -> Residency {
        Residency {
            resident_bytes: None,
            resident_ratio: None,
            dirty_bytes: None,
            unknown_files: self.files,
            unknown_reason: Some(format!(
                "residency unknown for {} files: not probed: interrupted by {sig}",
                self.files
            )),
            ..self.clone()
        }
    }
}

/// Combines per-file probes into a [`Residency`] — pure, so that the "any unknown file means
/// no figure" rule can be tested without a file the kernel refuses to describe.
///
/// `probes` yields each file's size in bytes and its probe; `method` names the method when no
/// file could be probed.
pub fn aggregate(
    method: &'static str,
    page_size: u64,
    probes: impl IntoIterator<Item = (u64, FileProbe)>,
) -> Residency {
    let mut totals = Totals::new(page_size);
    for (size, probe) in probes {
        totals.add(size, probe);
    }
    totals.finish(method)
}

/// A [`Residency`] being summed up one file at a time (so that a file set can be probed as it
/// streams by, without holding the probes).
#[derive(Clone, Debug)]
pub struct Totals {
    page: u64,
    files: u64,
    total_bytes: u64,
    total_page_bytes: u64,
    resident: u64,
    dirty: u64,
    dirty_known: bool,
    by_method: [u64; 2],
    unknown: BTreeMap<UnknownReason, u64>,
}

impl Totals {
    /// Nothing yet; figures in pages of `page_size` bytes.
    pub fn new(page_size: u64) -> Totals {
        Totals {
            page: page_size.max(1),
            files: 0,
            total_bytes: 0,
            total_page_bytes: 0,
            resident: 0,
            dirty: 0,
            dirty_known: true,
            by_method: [0; 2],
            unknown: BTreeMap::new(),
        }
    }

    /// The bytes a file of `size` can have resident: its size rounded up to whole pages.
    pub fn cap(&self, size: u64) -> u64 {
        size.div_ceil(self.page).saturating_mul(self.page)
    }

    /// Resident bytes of a probe (capped at the file's page-rounded size), `None` if unknown.
    pub fn resident_bytes(&self, size: u64, probe: &FileProbe) -> Option<u64> {
        match probe {
            FileProbe::Known { cached_pages, .. } => {
                Some(cached_pages.saturating_mul(self.page).min(self.cap(size)))
            }
            FileProbe::Unknown(_) => None,
        }
    }

    /// Adds one file of `size` bytes.
    pub fn add(&mut self, size: u64, probe: FileProbe) {
        self.files += 1;
        self.total_bytes = self.total_bytes.saturating_add(size);
        let cap = self.cap(size);
        self.total_page_bytes = self.total_page_bytes.saturating_add(cap);
        if let Some(bytes) = self.resident_bytes(size, &probe) {
            self.resident = self.resident.saturating_add(bytes);
        }
        match probe {
            FileProbe::Known {
                dirty_pages,
                method,
                ..
            } => {
                self.by_method[method as usize] += 1;
                match dirty_pages {
                    Some(d) => {
                        self.dirty = self
                            .dirty
                            .saturating_add(d.saturating_mul(self.page).min(cap))
                    }
                    None => self.dirty_known = false,
                }
            }
            FileProbe::Unknown(reason) => *self.unknown.entry(reason).or_insert(0) += 1,
        }
    }

    /// The residency of the files added; `method` names the method when none was probed.
    pub fn finish(self, method: &'static str) -> Residency {
        let method = match self.by_method {
            [0, 0] => method,
            [_, 0] => Method::Cachestat.name(),
            [0, _] => Method::Mincore.name(),
            _ => "cachestat+mincore",
        };
        let unknown_files: u64 = self.unknown.values().sum();
        let mut residency = Residency {
            method,
            files: self.files,
            total_bytes: self.total_bytes,
            resident_bytes: None,
            resident_ratio: None,
            dirty_bytes: None,
            unknown_files,
            unknown_reason: None,
            page_rounded_bytes: self.total_page_bytes,
        };
        if unknown_files > 0 {
            let reasons: Vec<String> = self
                .unknown
                .iter()
                .map(|(r, n)| format!("{n} {r}"))
                .collect();
            residency.unknown_reason = Some(format!(
                "residency unknown for {unknown_files} of {} files: {}",
                self.files,
                reasons.join("; ")
            ));
            return residency;
        }
        residency.resident_bytes = Some(self.resident);
        residency.resident_ratio = (self.total_page_bytes > 0)
            .then(|| self.resident as f64 / self.total_page_bytes as f64);
        residency.dirty_bytes = self.dirty_known.then_some(self.dirty);
        residency
    }
}

/// The system page size (the unit of every residency figure).
pub(super) fn page_size() -> u64 {
    rustix::param::page_size() as u64
}

/// Whether this kernel has `cachestat(2)` (Linux ≥ 6.5). Probed once, on this executable.
///
/// Any answer but `ENOSYS` (even `EPERM`) means the system call exists.
pub fn cachestat_available() -> bool {
    static AVAILABLE: OnceLock<bool> = OnceLock::new();
    *AVAILABLE.get_or_init(|| {
        let flags = OFlags::RDONLY | OFlags::NONBLOCK | OFlags::CLOEXEC;
        let fd = rustix::fs::open("/proc/self/exe", flags, Mode::empty())
            .or_else(|_| rustix::fs::open("/", flags | OFlags::DIRECTORY, Mode::empty()));
        match fd {
            Ok(fd) => !matches!(raw::cachestat(fd.as_fd(), 0, 0), Err(Errno::NOSYS)),
            Err(_) => false,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::FileExt;
    use std::path::PathBuf;

    /// A 3 GiB sparse file (owned by this process's user) with 8 KiB of data at 1 GiB and
    /// 4 KiB at its end.
    fn sparse_file(name: &str) -> (std::fs::File, WatchedFile, PathBuf) {
        let dir = std::env::temp_dir().join(format!("ct-sparse-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("f");
        let file = std::fs::File::options()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)
            .unwrap();
        file.set_len(3 << 30).unwrap();
        file.write_all_at(&[1u8; 8192], 1 << 30).unwrap();
        file.write_all_at(&[2u8; 4096], (3 << 30) - 4096).unwrap();
        let watched = WatchedFile {
            path: path.clone(),
            size_bytes: 3 << 30,
            owner_uid: rustix::process::geteuid().as_raw(),
            dev: 0,
            ino: 0,
            evicted: false,
        };
        (file, watched, dir)
    }

    #[test]
    fn only_the_data_between_the_holes_is_mapped_and_every_piece_may_stop() {
        let (file, watched, dir) = sparse_file("seg");
        let segments = data_segments(file.as_fd(), 3 << 30);
        // ext4, xfs, btrfs and tmpfs report holes; a file system that cannot gives it whole.
        if segments != vec![(0, 3 << 30)] {
            let data: u64 = segments.iter().map(|(a, b)| b - a).sum();
            assert!(data < 1 << 20, "{segments:?}");
            assert_eq!(segments.first().map(|s| s.0), Some(1 << 30));
        }
        // Just written, the data is resident: mincore sees its three pages at least.
        let known = probe_mincore(file.as_fd(), &watched, watched.owner_uid, &|| None);
        assert!(
            matches!(known, FileProbe::Known { cached_pages, .. } if cached_pages >= 3),
            "{known:?}"
        );
        // Asked before each piece: a request to stop is answered before the first one.
        let stopped = probe_mincore(file.as_fd(), &watched, watched.owner_uid, &|| {
            Some(Signal::INT)
        });
        assert_eq!(
            stopped,
            FileProbe::Unknown(UnknownReason::Interrupted(Signal::INT))
        );
        // The prober remembers it: later files are not probed at all.
        let mut prober = Prober::new();
        let first = prober.probe(&watched, &|| Some(Signal::TERM));
        let second = prober.probe(&watched, &|| None);
        if let FileProbe::Unknown(UnknownReason::Interrupted(sig)) = first {
            assert_eq!(sig, Signal::TERM);
            assert_eq!(prober.interrupted(), Some(Signal::TERM));
            assert_eq!(second, first);
        } else {
            // cachestat (not overlayfs) makes no pieces: nothing to interrupt.
            assert_eq!(prober.interrupted(), None, "{first:?}");
        }
        std::fs::remove_dir_all(dir).unwrap();
    }
}
