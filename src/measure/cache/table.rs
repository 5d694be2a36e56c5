//! The watched trees of a batch, walked once: every regular file under the `--evict` and
//! `--watch` roots, each with its residency at the last whole check, kept outside the heap. A
//! whole check ([`FileTable::check`]) probes every file (evicting those under an `--evict`
//! root first, with one open for both, when asked) and gives each file's residency at the check
//! before and now — what a run brought in, file by file, without walking the tree again. The
//! files a run reads are few: the working set ([`super::WorkingSet`]) is checked between whole
//! checks, and the rest of the tree is as the last whole check found it.
//!
//! Holding 46,000 paths across the spawn would raise the floor under every child's max RSS by
//! megabytes when coldtrace clones the child itself, so nothing per file stays in coldtrace's
//! heap: the entries go to an anonymous in-memory file ([memfd_create(2)], written with
//! `write(2)`, never mapped: its pages are not in coldtrace's resident set) and are read back in
//! one fixed buffer.
//!
//! [memfd_create(2)]: https://man7.org/linux/man-pages/man2/memfd_create.2.html
#![forbid(unsafe_code)]

use super::error::{CacheError, Stop};
use super::evict::{evict_open, EvictReport};
use super::files::{FileSet, FileSetIdentity, WatchedFile};
use super::residency::{page_size, FileProbe, Prober, Residency, Totals, UnknownReason};
use super::stayed::dev_major_minor;
use crate::measure::page_ins::FileKey;
use crate::untrusted::OpenError;
use coldtrace_syscalls::{Errno, Signal};
use std::ffi::OsStr;
use std::fs::File;
use std::io::{Cursor, Read, Seek, SeekFrom, Write};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// Bytes buffered per `write(2)` / `read(2)` of the entries (allocated per pass, then freed).
const CHUNK: usize = 256 * 1024;
/// The "unknown" marker in an entry's page count.
const UNKNOWN: u64 = u64::MAX;
/// Fixed part of an entry: dev, size, pages, inode (u64 each), owner, flags, path length (u32).
const HEAD: usize = 8 * 4 + 4 * 3;
/// The entry's flag: the file is under an `--evict` root.
const EVICTED: u32 = 1;

/// One file that gained pages during a run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PagedFile {
    /// The path under which it was watched.
    pub path: PathBuf,
    /// Bytes that came into the page cache.
    pub bytes: u64,
}

/// What came into the page cache during a run, over the watched files.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PagedIn {
    /// The files that gained the most, largest first (at most the `top` asked for).
    pub top: Vec<PagedFile>,
    /// Files that gained pages.
    pub files: u64,
    /// Bytes they gained, in all.
    pub bytes: u64,
    /// Files whose gain is known (the ones this covers).
    pub known_files: u64,
}

impl PagedIn {
    /// Counts `file` (gained `bytes`) and keeps it if it is among the `top` largest.
    pub fn add(&mut self, path: &Path, bytes: u64, top: usize) {
        self.files += 1;
        self.bytes = self.bytes.saturating_add(bytes);
        let at = self.top.partition_point(|f| f.bytes >= bytes);
        if at < top {
            if self.top.len() == top {
                self.top.pop();
            }
            self.top.insert(
                at,
                PagedFile {
                    path: path.to_path_buf(),
                    bytes,
                },
            );
        }
    }
}

/// Where the entries are: a memfd, or the heap where no memfd can be made.
enum Store {
    Memfd(File),
    Heap(Cursor<Vec<u8>>),
}

impl Store {
    fn new() -> Store {
        match rustix::fs::memfd_create("coldtrace-files", rustix::fs::MemfdFlags::CLOEXEC) {
            Ok(fd) => Store::Memfd(File::from(fd)),
            Err(_) => Store::Heap(Cursor::new(Vec::new())),
        }
    }

    fn io(&mut self) -> &mut dyn ReadWriteSeek {
        match self {
            Store::Memfd(f) => f,
            Store::Heap(c) => c,
        }
    }
}

trait ReadWriteSeek: Read + Write + Seek {}
impl<T: Read + Write + Seek> ReadWriteSeek for T {}

/// One file of a whole check.
pub struct Checked<'a> {
    /// The file.
    pub file: &'a WatchedFile,
    /// Its resident bytes at the whole check before (`None`: unknown, or none before).
    pub before: Option<u64>,
    /// Its resident bytes now (`None`: unknown).
    pub now: Option<u64>,
    /// Its probe.
    pub probe: FileProbe,
    /// Its file system's type (`None`: unknown).
    pub fs_type: Option<rustix::fs::FsWord>,
}

/// What a whole check found.
pub struct Check {
    /// The residency of every file.
    pub residency: Residency,
    /// What the eviction before it did, when one was asked for.
    pub evicted: Option<EvictReport>,
}

/// The walked files of a batch (see the module's note).
pub struct FileTable {
    store: Store,
    /// Every directory walked and its last modification then (s, ns): what says whether the
    /// tree changed since ([`FileTable::changed`]).
    dirs: Store,
    /// The devices of the walked files, as the page cache names them (major, minor).
    devices: Vec<(u32, u32)>,
    identity: FileSetIdentity,
    evicted_files: u64,
    unreached: u64,
    unreached_evicted: (u64, Option<String>),
    /// Every entry reached the store.
    complete: bool,
}

impl FileTable {
    /// Walks the `watch` roots once (the `evict` ones first, their files marked), telling
    /// `seen` how many files were found so far, and keeps every file outside the heap.
    ///
    /// # Errors
    /// Those of [`FileSet::collect_watched`].
    pub fn walk(
        evict: &[PathBuf],
        watch: &[PathBuf],
        stop: Stop<'_>,
        seen: &dyn Fn(u64),
    ) -> Result<FileTable, CacheError> {
        let set = FileSet::collect_watched(evict, watch, stop, seen)?;
        let mut devices: Vec<(u32, u32)> = set
            .files()
            .iter()
            .map(|f| {
                let k = key_of(f);
                (k.major, k.minor)
            })
            .collect();
        devices.sort_unstable();
        devices.dedup();
        let mut table = FileTable {
            store: Store::new(),
            dirs: Store::new(),
            devices,
            identity: set.identity(watch),
            evicted_files: set.files().iter().filter(|f| f.evicted).count() as u64,
            unreached: set.unreached(),
            unreached_evicted: {
                let (n, first) = set.unreached_evicted();
                (n, first.map(str::to_string))
            },
            complete: true,
        };
        let mut out = Vec::with_capacity(CHUNK);
        for file in set.files() {
            encode(&mut out, file, UNKNOWN);
            if out.len() >= CHUNK {
                table.complete &= table.store.io().write_all(&out).is_ok();
                out.clear();
            }
        }
        table.complete &= table.store.io().write_all(&out).is_ok();
        out.clear();
        for (path, (secs, nanos)) in &set.dirs {
            let path = path.as_os_str().as_bytes();
            out.extend_from_slice(&secs.to_le_bytes());
            out.extend_from_slice(&nanos.to_le_bytes());
            out.extend_from_slice(&(path.len() as u32).to_le_bytes());
            out.extend_from_slice(path);
        }
        table.complete &= table.dirs.io().write_all(&out).is_ok();
        Ok(table)
    }

    /// Whether the tree may have changed since the walk: a walked directory that was modified
    /// (an entry added, removed or renamed in it) or that is gone. One `stat` per directory
    /// (8,264 for a Python installation of 46,526 files), so asked only when something says
    /// so. A table whose directories could not be kept has always changed.
    pub fn changed(&mut self) -> bool {
        if !self.complete {
            return true;
        }
        let mut bytes = Vec::new();
        let io = self.dirs.io();
        if io.seek(SeekFrom::Start(0)).is_err() || io.read_to_end(&mut bytes).is_err() {
            return true;
        }
        let mut rest = &bytes[..];
        while rest.len() >= 20 {
            let number =
                |at: usize| i64::from_le_bytes(rest[at..at + 8].try_into().unwrap_or_default());
            let len = u32::from_le_bytes(rest[16..20].try_into().unwrap_or_default()) as usize;
            let Some(path) = rest.get(20..20 + len) else {
                return true;
            };
            let then = (number(0), number(8));
            match rustix::fs::stat(OsStr::from_bytes(path)) {
                Ok(s) if (s.st_mtime, s.st_mtime_nsec as i64) == then => {}
                _ => return true,
            }
            rest = &rest[20 + len..];
        }
        false
    }

    /// Whether the page cache's `key` names a file on a device that holds walked files.
    pub fn on_watched_device(&self, key: &FileKey) -> bool {
        self.devices.binary_search(&(key.major, key.minor)).is_ok()
    }

    /// What names the walked set across batches.
    pub fn identity(&self) -> &FileSetIdentity {
        &self.identity
    }

    /// Regular files walked.
    pub fn files(&self) -> u64 {
        self.identity.files
    }

    /// Of those, under an `--evict` root.
    pub fn evicted_files(&self) -> u64 {
        self.evicted_files
    }

    /// Probes every file now (with `evict`, evicting each file under an `--evict` root first)
    /// and remembers each one's residency for the next check; `each` sees every file with its
    /// residency at the check before and now, `done` how many files were checked so far (every
    /// 256). Entries the walk could not read are unknown (and not evicted).
    ///
    /// # Errors
    /// The signal, when `stop` said so: nothing is remembered of this check.
    pub fn check(
        &mut self,
        evict: bool,
        stop: Stop<'_>,
        each: &mut dyn FnMut(&Checked<'_>),
        done: &dyn Fn(u64),
    ) -> Result<Check, Signal> {
        let mut prober = Prober::new();
        let mut totals = Totals::new(page_size());
        let fallback = prober.default_method();
        let mut report = evict.then(|| self.evict_report());
        let mut next = Store::new();
        let mut out = Vec::with_capacity(CHUNK);
        let mut complete = self.complete;
        let mut reader = EntryReader::new(self.store.io());
        let mut n = 0u64;
        while let Some((file, before_pages)) = reader.next_entry() {
            n += 1;
            if n % 256 == 0 {
                done(n);
                if let Some(sig) = prober.interrupted().or_else(stop) {
                    return Err(sig);
                }
            }
            let mut evicted = None;
            let probe = prober.probe_after(&file, stop, &mut |fd, method| {
                if evict && file.evicted {
                    evicted = Some(evict_open(fd, method));
                }
            });
            if is_gone(&probe) {
                // Removed since the walk (a temporary file, a rebuilt cache): no longer watched.
                continue;
            }
            if let (Some(report), true) = (report.as_mut(), file.evicted) {
                report.count(&file, evicted, &probe);
            }
            let now = totals.resident_bytes(file.size_bytes, &probe);
            let cap = totals.cap(file.size_bytes);
            let before = (before_pages != UNKNOWN)
                .then(|| before_pages.saturating_mul(page_size()).min(cap));
            let pages = match probe {
                FileProbe::Known { cached_pages, .. } => cached_pages.min(UNKNOWN - 1),
                FileProbe::Unknown(_) => UNKNOWN,
            };
            each(&Checked {
                file: &file,
                before,
                now,
                probe,
                fs_type: prober.last_fs_type(),
            });
            totals.add(file.size_bytes, probe);
            encode(&mut out, &file, pages);
            if out.len() >= CHUNK {
                complete &= next.io().write_all(&out).is_ok();
                out.clear();
            }
        }
        if let Some(sig) = prober.interrupted() {
            return Err(sig);
        }
        complete &= next.io().write_all(&out).is_ok();
        for _ in 0..self.unreached {
            totals.add(0, FileProbe::Unknown(UnknownReason::Unreadable));
        }
        if !self.complete {
            // Entries the memfd could not take were never checked: no figure stands.
            totals.add(0, FileProbe::Unknown(UnknownReason::Probe(Errno::NOMEM)));
        }
        self.store = next;
        self.complete = complete;
        Ok(Check {
            residency: totals.finish(fallback),
            evicted: report,
        })
    }

    /// An eviction's report before any file: the entries under an `--evict` root the walk could
    /// not read count as failed (whatever they hold was not evicted).
    fn evict_report(&self) -> EvictReport {
        let (failed, first) = &self.unreached_evicted;
        EvictReport {
            files: 0,
            bytes: 0,
            failed: *failed,
            first_error: first.as_ref().map(|e| format!("cannot read {e}")),
        }
    }

    /// The files among `wanted` (as the page cache names them), each with its resident bytes
    /// at the last whole check: one pass over the entries.
    pub fn find(&mut self, wanted: &[FileKey]) -> Vec<(FileKey, WatchedFile, Option<u64>)> {
        let mut found = Vec::new();
        if wanted.is_empty() {
            return found;
        }
        let wanted: std::collections::HashSet<FileKey, FixedHasher> =
            wanted.iter().copied().collect();
        let page = page_size();
        let mut reader = EntryReader::new(self.store.io());
        while let Some((file, pages)) = reader.next_entry() {
            let key = key_of(&file);
            if wanted.contains(&key) {
                let cap = file.size_bytes.div_ceil(page).saturating_mul(page);
                let at_check = (pages != UNKNOWN).then(|| pages.saturating_mul(page).min(cap));
                found.push((key, file, at_check));
            }
        }
        found
    }
}

/// Whether a probe found the file removed since the walk (`ENOENT` at its open).
pub(super) fn is_gone(probe: &FileProbe) -> bool {
    matches!(
        probe,
        FileProbe::Unknown(UnknownReason::Open(OpenError::Os(Errno::NOENT)))
    )
}

impl EvictReport {
    /// Counts one file under an `--evict` root: advised (`Some(Ok)`), failed (`Some(Err)`), or
    /// not opened (`None`: the probe says why).
    fn count(
        &mut self,
        file: &WatchedFile,
        evicted: Option<Result<(), String>>,
        probe: &FileProbe,
    ) {
        let error = match (evicted, probe) {
            (Some(Ok(())), _) => {
                self.files += 1;
                self.bytes = self.bytes.saturating_add(file.size_bytes);
                return;
            }
            (Some(Err(e)), _) => e,
            (None, FileProbe::Unknown(UnknownReason::Open(e))) => format!("open: {e}"),
            (None, _) => "not opened".to_string(),
        };
        self.failed += 1;
        if self.first_error.is_none() {
            self.first_error = Some(format!("{}: {error}", file.path.display()));
        }
    }
}

/// How the page cache names `file`: its device's major and minor numbers and its inode.
pub fn key_of(file: &WatchedFile) -> FileKey {
    let (major, minor) = dev_major_minor(file.dev);
    FileKey {
        major: major as u32,
        minor: minor as u32,
        ino: file.ino,
    }
}

/// A hasher with fixed keys (std's `RandomState` needs random bytes from the kernel).
pub(super) type FixedHasher =
    std::hash::BuildHasherDefault<std::collections::hash_map::DefaultHasher>;

/// One entry: the file and a number (its resident pages at a check).
fn encode(out: &mut Vec<u8>, file: &WatchedFile, pages: u64) {
    let path = file.path.as_os_str().as_bytes();
    out.extend_from_slice(&file.dev.to_le_bytes());
    out.extend_from_slice(&file.size_bytes.to_le_bytes());
    out.extend_from_slice(&pages.to_le_bytes());
    out.extend_from_slice(&file.ino.to_le_bytes());
    out.extend_from_slice(&file.owner_uid.to_le_bytes());
    let flags = if file.evicted { EVICTED } else { 0 };
    out.extend_from_slice(&flags.to_le_bytes());
    out.extend_from_slice(&(path.len() as u32).to_le_bytes());
    out.extend_from_slice(path);
}

/// Reads the entries back in order, through one buffer.
struct EntryReader<'f> {
    file: &'f mut dyn ReadWriteSeek,
    buf: Vec<u8>,
    at: usize,
}

impl<'f> EntryReader<'f> {
    fn new(file: &'f mut dyn ReadWriteSeek) -> EntryReader<'f> {
        let _ = file.seek(SeekFrom::Start(0));
        EntryReader {
            file,
            buf: Vec::with_capacity(CHUNK),
            at: 0,
        }
    }

    /// Makes at least `n` unread bytes available; false at the end of the entries.
    fn fill(&mut self, n: usize) -> bool {
        if self.buf.len() - self.at >= n {
            return true;
        }
        self.buf.drain(..self.at);
        self.at = 0;
        while self.buf.len() < n {
            let want = CHUNK.max(n - self.buf.len()) as u64;
            match (&mut *self.file).take(want).read_to_end(&mut self.buf) {
                Ok(0) | Err(_) => return false,
                Ok(_) => {}
            }
        }
        true
    }

    fn u64_at(&self, offset: usize) -> u64 {
        let mut b = [0u8; 8];
        b.copy_from_slice(&self.buf[self.at + offset..self.at + offset + 8]);
        u64::from_le_bytes(b)
    }

    fn u32_at(&self, offset: usize) -> u32 {
        let mut b = [0u8; 4];
        b.copy_from_slice(&self.buf[self.at + offset..self.at + offset + 4]);
        u32::from_le_bytes(b)
    }

    fn next_entry(&mut self) -> Option<(WatchedFile, u64)> {
        if !self.fill(HEAD) {
            return None;
        }
        let len = self.u32_at(40) as usize;
        if !self.fill(HEAD + len) {
            return None;
        }
        let path = OsStr::from_bytes(&self.buf[self.at + HEAD..self.at + HEAD + len]);
        let file = WatchedFile {
            path: PathBuf::from(path),
            size_bytes: self.u64_at(8),
            owner_uid: self.u32_at(32),
            dev: self.u64_at(0),
            ino: self.u64_at(24),
            evicted: self.u32_at(36) & EVICTED != 0,
        };
        let pages = self.u64_at(16);
        self.at += HEAD + len;
        Some((file, pages))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_top_files_stay_sorted_and_bounded() {
        let mut p = PagedIn::default();
        for (name, bytes) in [("a", 5), ("b", 50), ("c", 20), ("d", 50), ("e", 1)] {
            p.add(Path::new(name), bytes, 3);
        }
        let top: Vec<(&str, u64)> = p
            .top
            .iter()
            .map(|f| (f.path.to_str().unwrap(), f.bytes))
            .collect();
        assert_eq!(top, [("b", 50), ("d", 50), ("c", 20)]);
        assert_eq!((p.files, p.bytes), (5, 126));
    }

    #[test]
    fn entries_read_back_as_written_across_buffer_refills_in_either_store() {
        let files: Vec<WatchedFile> = (0..3000u64)
            .map(|i| WatchedFile {
                path: PathBuf::from(format!(
                    "/some/dir/{}/file-{i}",
                    "x".repeat((i % 97) as usize)
                )),
                size_bytes: i * 4096,
                owner_uid: (i % 7) as u32,
                dev: 2049 + i % 3,
                ino: i * 7,
                evicted: i % 3 == 0,
            })
            .collect();
        let mut bytes = Vec::new();
        for (i, f) in files.iter().enumerate() {
            encode(&mut bytes, f, if i % 5 == 0 { UNKNOWN } else { i as u64 });
        }
        for mut store in [Store::new(), Store::Heap(Cursor::new(Vec::new()))] {
            store.io().write_all(&bytes).unwrap();
            let mut reader = EntryReader::new(store.io());
            for (i, f) in files.iter().enumerate() {
                let (got, pages) = reader.next_entry().expect("an entry");
                assert_eq!(&got, f);
                assert_eq!(pages, if i % 5 == 0 { UNKNOWN } else { i as u64 });
            }
            assert!(reader.next_entry().is_none());
        }
    }

    #[test]
    fn a_check_gives_each_files_residency_at_the_check_before_and_now() {
        let dir = std::env::temp_dir().join(format!("coldtrace-table-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        std::fs::write(dir.join("a"), vec![1u8; 8192]).unwrap();
        std::fs::write(dir.join("sub/b"), vec![2u8; 100]).unwrap();
        let roots = [dir.clone()];
        let counted = std::cell::Cell::new(0);
        let mut table = FileTable::walk(&[], &roots, &|| None, &|n| counted.set(n)).unwrap();
        assert_eq!((table.files(), table.evicted_files()), (2, 0));
        let mut seen = Vec::new();
        let check = |table: &mut FileTable, seen: &mut Vec<(String, Option<u64>, Option<u64>)>| {
            table
                .check(
                    false,
                    &|| None,
                    &mut |c| {
                        let name = c.file.path.file_name().unwrap().to_string_lossy().into();
                        seen.push((name, c.before, c.now));
                    },
                    &|_| {},
                )
                .unwrap()
        };
        let first = check(&mut table, &mut seen);
        assert_eq!(first.residency.files, 2);
        assert!(first.evicted.is_none());
        // Just written, both files are cached (and the test's own, so known): nothing before.
        seen.sort();
        assert_eq!(
            seen,
            [
                ("a".into(), None, Some(8192)),
                ("b".into(), None, Some(4096))
            ]
        );
        seen.clear();
        check(&mut table, &mut seen);
        seen.sort();
        assert_eq!(seen[0], ("a".into(), Some(8192), Some(8192)), "remembered");
        // A file removed since the walk is no longer watched: not unknown, not counted.
        std::fs::remove_file(dir.join("a")).unwrap();
        seen.clear();
        let gone = check(&mut table, &mut seen);
        assert_eq!(seen.len(), 1, "{seen:?}");
        assert_eq!((gone.residency.files, gone.residency.unknown_files), (1, 0));
        assert_eq!(gone.residency.resident_bytes, Some(4096));
        let b = table.find(&[key_of(
            &FileSet::collect(&[dir.join("sub/b")]).unwrap().files()[0],
        )]);
        assert_eq!(b.len(), 1);
        assert_eq!(
            (b[0].1.path.clone(), b[0].2),
            (dir.join("sub/b"), Some(4096))
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
