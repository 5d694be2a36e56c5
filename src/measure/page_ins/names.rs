//! Names for files the ledger knows only by device and inode, and whether each was created
//! during a run.
//!
//! A file a run created (a `.pyc` under `__pycache__`, a cache entry) is in no walk made before
//! the run. It is looked for under given roots by directory entries alone: each directory is
//! read once ([getdents64(2)], which gives every entry's inode number), and only directories
//! are opened — no file is examined. The search stops when every file is found or after a
//! bounded number of entries, so a root as large as a home directory costs at most that.
//! Symbolic links are not followed, a mount point is crossed only into a file system that
//! holds a wanted file (not into /proc, /sys or a tmpfs), and a root given as a file is itself
//! the only candidate.
//!
//! [getdents64(2)]: https://man7.org/linux/man-pages/man2/getdents64.2.html
#![forbid(unsafe_code)]

use super::{FileKey, FileKeys};
use rustix::fs::{AtFlags, Dir, FileType, Mode, OFlags, StatxFlags};
use std::collections::hash_map::DefaultHasher;
use std::collections::{HashMap, HashSet, VecDeque};
use std::ffi::OsStr;
use std::hash::BuildHasherDefault;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// The most directory entries one search reads: 24–86 ms on the 2-CPU AMD EPYC VM (kernel
/// 6.18.44, 2026-12-06, shared with other work) from `/`, `/root` and a Python prefix.
pub const ENTRIES: u64 = 20_000;

/// Files found: each one's path and the index of the root it was found under.
pub type Found = HashMap<FileKey, (PathBuf, usize), BuildHasherDefault<DefaultHasher>>;

/// What a search found, and whether it read every entry under its roots.
#[derive(Debug, Default)]
pub struct Search {
    /// The files found.
    pub found: Found,
    /// Directory entries read.
    pub entries: u64,
    /// The bound on entries stopped it before every directory was read.
    pub cut: bool,
}

fn key(dev: u64, ino: u64) -> FileKey {
    FileKey {
        major: rustix::fs::major(dev),
        minor: rustix::fs::minor(dev),
        ino,
    }
}

/// Looks for `wanted` under `roots`, in their order (a file under two roots is found under
/// the first), reading at most `budget` directory entries.
pub fn find(wanted: &FileKeys, roots: &[PathBuf], budget: u64) -> Search {
    let mut searcher = Searcher {
        wanted,
        devices: wanted.iter().map(|k| (k.major, k.minor)).collect(),
        budget,
        seen_dirs: HashSet::default(),
        dirs: VecDeque::new(),
        search: Search::default(),
    };
    for (at, root) in roots.iter().enumerate() {
        if searcher.done() {
            break;
        }
        let Ok(stat) = rustix::fs::stat(root) else {
            continue;
        };
        if FileType::from_raw_mode(stat.st_mode) != FileType::Directory {
            searcher.candidate(key(stat.st_dev, stat.st_ino), || root.clone(), at);
            continue;
        }
        searcher.dirs = VecDeque::from([(root.clone(), None)]);
        while !searcher.done() {
            let Some((dir, parent_dev)) = searcher.dirs.pop_front() else {
                break;
            };
            searcher.read_dir(&dir, parent_dev, at);
        }
        // A directory left unread: the bound cut the search.
        searcher.search.cut |= !searcher.dirs.is_empty() && !searcher.all_found();
    }
    searcher.search
}

/// One search's state: what is wanted, what was found, the directories still to read.
struct Searcher<'w> {
    wanted: &'w FileKeys,
    /// The devices of the wanted files.
    devices: HashSet<(u32, u32), BuildHasherDefault<DefaultHasher>>,
    budget: u64,
    seen_dirs: HashSet<(u64, u64), BuildHasherDefault<DefaultHasher>>,
    /// Directories to read, each with its parent's device (`None`: a root).
    dirs: VecDeque<(PathBuf, Option<u64>)>,
    search: Search,
}

impl Searcher<'_> {
    fn all_found(&self) -> bool {
        self.search.found.len() == self.wanted.len()
    }

    /// Every file found, or the bound reached.
    fn done(&self) -> bool {
        self.all_found() || self.search.entries >= self.budget
    }

    /// The file `file` at `path` (under root `at`): found, if wanted.
    fn candidate(&mut self, file: FileKey, path: impl FnOnce() -> PathBuf, at: usize) {
        if self.wanted.contains(&file) {
            self.search
                .found
                .entry(file)
                .or_insert_with(|| (path(), at));
        }
    }

    /// Reads `dir` (found under root `at`, in a directory on `parent_dev`): its wanted files
    /// are found, its directories queued. A directory reached twice (a root inside another)
    /// is read once; a mount point into a file system of no wanted file is not read.
    fn read_dir(&mut self, dir: &Path, parent_dev: Option<u64>, at: usize) {
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC | OFlags::NOFOLLOW;
        let Ok(fd) = rustix::fs::open(dir, flags, Mode::empty()) else {
            return;
        };
        let Ok(stat) = rustix::fs::fstat(&fd) else {
            return;
        };
        let dev = stat.st_dev;
        let device = (rustix::fs::major(dev), rustix::fs::minor(dev));
        if parent_dev.is_some_and(|p| p != dev) && !self.devices.contains(&device) {
            return;
        }
        if !self.seen_dirs.insert((dev, stat.st_ino)) {
            return;
        }
        let Ok(mut entries) = Dir::new(fd) else {
            return;
        };
        while let Some(Ok(entry)) = entries.read() {
            let name = entry.file_name().to_bytes();
            if matches!(name, b"." | b"..") {
                continue;
            }
            if self.done() {
                // An entry left unread.
                self.search.cut = !self.all_found();
                return;
            }
            self.search.entries += 1;
            let path = || dir.join(OsStr::from_bytes(name));
            let kind = match entry.file_type() {
                // A file system that does not say the kind in its entries (rare): asked.
                FileType::Unknown => entries
                    .fd()
                    .and_then(|fd| {
                        rustix::fs::statat(fd, entry.file_name(), AtFlags::SYMLINK_NOFOLLOW)
                    })
                    .map_or(FileType::Unknown, |s| FileType::from_raw_mode(s.st_mode)),
                known => known,
            };
            match kind {
                // A mount point's entry holds the inode below it: its directory is opened (and
                // its own device read) when its turn comes.
                FileType::Directory => self.dirs.push_back((path(), Some(dev))),
                _ => self.candidate(key(dev, entry.ino()), path, at),
            }
        }
    }
}

/// Whether the file at `path` was born at or after `unix_ns` (nanoseconds since the Unix
/// epoch): `None` where its file system keeps no birth time ([statx(2)]'s `STATX_BTIME`) or
/// it is gone.
///
/// [statx(2)]: https://man7.org/linux/man-pages/man2/statx.2.html
pub fn born_since(path: &Path, unix_ns: u64) -> Option<bool> {
    let flags = AtFlags::SYMLINK_NOFOLLOW;
    let x = rustix::fs::statx(rustix::fs::CWD, path, flags, StatxFlags::BTIME).ok()?;
    if !StatxFlags::from_bits_retain(x.stx_mask).contains(StatxFlags::BTIME) {
        return None;
    }
    let born = (x.stx_btime.tv_sec.max(0) as u64)
        .saturating_mul(1_000_000_000)
        .saturating_add(u64::from(x.stx_btime.tv_nsec));
    Some(born >= unix_ns)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;

    fn key_of(path: &Path) -> FileKey {
        let m = std::fs::symlink_metadata(path).unwrap();
        key(m.dev(), m.ino())
    }

    fn tree(name: &str) -> PathBuf {
        let root =
            std::env::temp_dir().join(format!("coldtrace-names-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(root.join("a/b/__pycache__")).unwrap();
        std::fs::create_dir_all(root.join("c")).unwrap();
        for f in ["a/x", "a/b/__pycache__/m.pyc", "c/y", "top"] {
            std::fs::write(root.join(f), f).unwrap();
        }
        root
    }

    #[test]
    fn files_are_found_by_inode_under_the_first_root_that_holds_them() {
        let root = tree("found");
        let pyc = root.join("a/b/__pycache__/m.pyc");
        let wanted: FileKeys = [key_of(&pyc), key_of(&root.join("c/y"))]
            .into_iter()
            .collect();
        let roots = [root.join("c"), root.clone()];
        let s = find(&wanted, &roots, ENTRIES);
        assert_eq!(s.found.len(), 2, "{s:?}");
        assert_eq!(s.found[&key_of(&pyc)], (pyc.clone(), 1));
        assert_eq!(s.found[&key_of(&root.join("c/y"))], (root.join("c/y"), 0));
        assert!(!s.cut);
        // A root given as a file is its own only candidate.
        let s = find(&wanted, std::slice::from_ref(&pyc), ENTRIES);
        assert_eq!(s.found[&key_of(&pyc)], (pyc, 0));
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn the_bound_on_entries_stops_the_search_and_says_so() {
        let root = tree("bound");
        let pyc = root.join("a/b/__pycache__/m.pyc");
        let wanted: FileKeys = [key_of(&pyc)].into_iter().collect();
        // Breadth first: the root's three entries, then a's two, c's one, b's one,
        // __pycache__'s one.
        let s = find(&wanted, std::slice::from_ref(&root), 3);
        assert!(s.cut && s.found.is_empty(), "{s:?}");
        let s = find(&wanted, std::slice::from_ref(&root), 8);
        assert!(!s.cut && s.found.len() == 1, "{s:?}");
        let absent: FileKeys = [FileKey {
            major: 0,
            minor: 0,
            ino: 1,
        }]
        .into_iter()
        .collect();
        let s = find(&absent, std::slice::from_ref(&root), ENTRIES);
        assert_eq!((s.found.len(), s.entries, s.cut), (0, 8, false));
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn a_file_born_after_a_moment_is_told_from_an_older_one() {
        let root = tree("born");
        let old = root.join("top");
        let now = rustix::time::clock_gettime(rustix::time::ClockId::RealtimeCoarse);
        let now_ns = now.tv_sec as u64 * 1_000_000_000 + now.tv_nsec as u64;
        std::thread::sleep(std::time::Duration::from_millis(30));
        let new = root.join("new");
        std::fs::write(&new, b"new").unwrap();
        match born_since(&new, now_ns) {
            // tmpfs and ext4 keep a birth time; some file systems do not.
            Some(born) => {
                assert!(born);
                assert_eq!(born_since(&old, now_ns + 20_000_000), Some(false));
            }
            None => eprintln!("{} keeps no birth time", root.display()),
        }
        assert_eq!(born_since(&root.join("gone"), now_ns), None);
        std::fs::remove_dir_all(&root).unwrap();
    }
}
