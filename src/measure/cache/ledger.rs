//! Which watched files a run brought into the page cache: each file's residency before the run,
//! written to an unmapped memfd, then compared file by file after it. It measures; keeping the
//! top files in a record, or the whole list in an artifact, is the caller's business.
//!
//! Holding 38,534 paths across the spawn would raise the floor under every child's max RSS by
//! megabytes, so nothing per file stays in coldtrace's heap: the before pass streams one entry
//! per file to an anonymous in-memory file ([memfd_create(2)], written with `write(2)`, never
//! mapped: its pages are not in coldtrace's resident set), and the after pass reads it back in
//! one fixed buffer, probing each path again — without walking the tree a second time.
//!
//! [memfd_create(2)]: https://man7.org/linux/man-pages/man2/memfd_create.2.html
#![forbid(unsafe_code)]

use super::error::Stop;
use super::files::{FileSet, WatchedFile};
use super::residency::{page_size, Prober, Totals};
use super::residency::{FileProbe, Residency, UnknownReason};
use super::stayed::dev_major_minor;
use crate::measure::page_ins::FileKey;
use coldtrace_syscalls::Signal;
use std::ffi::OsStr;
use std::fs::File;
use std::io::{Read, Seek, Write};
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

/// Bytes buffered per `write(2)` / `read(2)` of the ledger (allocated per pass, then freed).
const CHUNK: usize = 256 * 1024;
/// The "unknown" marker in an entry's page count.
const UNKNOWN: u64 = u64::MAX;
/// Fixed part of an entry: dev, size, pages, inode (u64 each), owner (u32), path length (u32).
const HEAD: usize = 8 * 4 + 4 + 4;

/// One file that gained pages during a run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PagedFile {
    /// The path under which it was watched.
    pub path: PathBuf,
    /// Bytes that came into the page cache (net growth of its resident pages).
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
    /// Files whose residency was known both before and after (the ones this covers).
    pub known_files: u64,
}

impl PagedIn {
    /// Counts `file` (gained `bytes`) and keeps it if it is among the `top` largest.
    fn add(&mut self, path: &std::path::Path, bytes: u64, top: usize) {
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

/// The before-run residency of every watched file, kept outside the heap until the run ends.
pub struct Ledger {
    file: File,
    /// Unreadable entries of the walk before the run (unknown before and after it).
    unreached: u64,
}

impl Ledger {
    /// An empty ledger (`None` when no memfd can be created: then there is no per-file figure).
    pub fn new() -> Option<Ledger> {
        rustix::fs::memfd_create("coldtrace-ledger", rustix::fs::MemfdFlags::CLOEXEC)
            .ok()
            .map(|fd| Ledger {
                file: File::from(fd),
                unreached: 0,
            })
    }

    /// Probes every file of `set` now, remembers each one's residency, and returns the set's.
    ///
    /// Asks `stop` every 256 files whether to give up (then the ledger is left empty).
    ///
    /// # Errors
    /// The signal, when `stop` said so.
    pub fn before(&mut self, set: &FileSet, stop: Stop<'_>) -> Result<Residency, Signal> {
        let mut prober = Prober::new();
        let mut totals = Totals::new(page_size());
        let fallback = prober.default_method();
        let mut out = Vec::with_capacity(CHUNK);
        let mut ok = self.file.set_len(0).is_ok() && self.file.rewind().is_ok();
        for (n, file) in set.files().iter().enumerate() {
            let asked = match prober.interrupted() {
                None if n % 256 == 255 => stop(),
                other => other,
            };
            if let Some(sig) = asked {
                let _ = self.file.set_len(0);
                return Err(sig);
            }
            let probe = prober.probe(file, stop);
            let pages = match probe {
                FileProbe::Known { cached_pages, .. } => cached_pages.min(UNKNOWN - 1),
                FileProbe::Unknown(_) => UNKNOWN,
            };
            totals.add(file.size_bytes, probe);
            encode(&mut out, file, pages);
            if out.len() >= CHUNK {
                ok = ok && self.file.write_all(&out).is_ok();
                out.clear();
            }
        }
        if let Some(sig) = prober.interrupted() {
            let _ = self.file.set_len(0);
            return Err(sig);
        }
        ok = ok && self.file.write_all(&out).is_ok();
        if !ok {
            // A ledger that lost entries would misattribute: leave it empty.
            let _ = self.file.set_len(0);
        }
        self.unreached = set.unreached();
        add_unreached(&mut totals, self.unreached);
        Ok(totals.finish(fallback))
    }

    /// Probes the files remembered by [`Ledger::before`] again: their residency now, and what
    /// each gained, keeping the `top` largest; `each` sees every file that gained pages, with
    /// the bytes it gained.
    /// `stop` is asked as [`Prober::probe`] asks it: once it has said to stop, the files not
    /// probed yet are unknown.
    pub fn after(
        &mut self,
        top: usize,
        stop: Stop<'_>,
        each: &mut dyn FnMut(&WatchedFile, u64),
    ) -> (Residency, PagedIn) {
        let mut prober = Prober::new();
        let mut totals = Totals::new(page_size());
        let fallback = prober.default_method();
        let mut paged = PagedIn::default();
        let mut reader = EntryReader::new(&mut self.file);
        while let Some((file, before_pages)) = reader.next_entry() {
            let probe = prober.probe(&file, stop);
            let now = totals.resident_bytes(file.size_bytes, &probe);
            let cap = totals.cap(file.size_bytes);
            let before = (before_pages != UNKNOWN)
                .then(|| before_pages.saturating_mul(page_size()).min(cap));
            totals.add(file.size_bytes, probe);
            if let (Some(before), Some(now)) = (before, now) {
                paged.known_files += 1;
                if now > before {
                    paged.add(&file.path, now - before, top);
                    each(&file, now - before);
                }
            }
        }
        add_unreached(&mut totals, self.unreached);
        (totals.finish(fallback), paged)
    }
}

impl Ledger {
    /// The paths of the files among `wanted` that [`Ledger::before`] remembered (one pass
    /// over its entries; the page cache names a file by the major and minor numbers of its
    /// device and its inode).
    pub fn find(&mut self, wanted: &[FileKey]) -> FoundFiles {
        let mut found = FoundFiles::default();
        if wanted.is_empty() {
            return found;
        }
        let wanted: std::collections::HashSet<FileKey, FixedHasher> =
            wanted.iter().copied().collect();
        let mut reader = EntryReader::new(&mut self.file);
        while let Some((file, _)) = reader.next_entry() {
            let (major, minor) = dev_major_minor(file.dev);
            let key = FileKey {
                major: major as u32,
                minor: minor as u32,
                ino: file.ino,
            };
            if wanted.contains(&key) {
                found.insert(key, file.path);
            }
        }
        found
    }
}

/// Files found by [`Ledger::find`], with the path each was watched under.
pub type FoundFiles = std::collections::HashMap<FileKey, PathBuf, FixedHasher>;

/// A hasher with fixed keys (std's `RandomState` needs random bytes from the kernel).
type FixedHasher = std::hash::BuildHasherDefault<std::collections::hash_map::DefaultHasher>;

/// Entries the walk could not read are unknown: what they hold was not probed.
fn add_unreached(totals: &mut Totals, unreached: u64) {
    for _ in 0..unreached {
        totals.add(0, FileProbe::Unknown(UnknownReason::Unreadable));
    }
}

/// One entry: the file and a number (its resident pages before a run, or what it gained).
pub(super) fn encode(out: &mut Vec<u8>, file: &WatchedFile, pages: u64) {
    let path = file.path.as_os_str().as_bytes();
    out.extend_from_slice(&file.dev.to_le_bytes());
    out.extend_from_slice(&file.size_bytes.to_le_bytes());
    out.extend_from_slice(&pages.to_le_bytes());
    out.extend_from_slice(&file.ino.to_le_bytes());
    out.extend_from_slice(&file.owner_uid.to_le_bytes());
    out.extend_from_slice(&(path.len() as u32).to_le_bytes());
    out.extend_from_slice(path);
}

/// Reads the ledger's entries back in order, through one buffer.
pub(super) struct EntryReader<'f> {
    file: &'f mut File,
    buf: Vec<u8>,
    at: usize,
}

impl<'f> EntryReader<'f> {
    pub(super) fn new(file: &'f mut File) -> EntryReader<'f> {
        let _ = file.rewind();
        EntryReader {
            file,
            buf: Vec::with_capacity(CHUNK),
            at: 0,
        }
    }

    /// Makes at least `n` unread bytes available; false at the end of the ledger.
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

    pub(super) fn next_entry(&mut self) -> Option<(WatchedFile, u64)> {
        if !self.fill(HEAD) {
            return None;
        }
        let len = self.u32_at(36) as usize;
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
            p.add(std::path::Path::new(name), bytes, 3);
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
    fn entries_read_back_as_written_across_buffer_refills() {
        let mut ledger = Ledger::new().expect("memfd");
        let mut bytes = Vec::new();
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
            })
            .collect();
        for (i, f) in files.iter().enumerate() {
            encode(&mut bytes, f, if i % 5 == 0 { UNKNOWN } else { i as u64 });
        }
        ledger.file.write_all(&bytes).unwrap();
        let mut reader = EntryReader::new(&mut ledger.file);
        for (i, f) in files.iter().enumerate() {
            let (got, pages) = reader.next_entry().expect("an entry");
            assert_eq!(&got, f);
            assert_eq!(pages, if i % 5 == 0 { UNKNOWN } else { i as u64 });
        }
        assert!(reader.next_entry().is_none());
    }
}
