//! The files a run created under given roots (the command's working directory and the watched
//! trees): a `.pyc` under `__pycache__`, a ccache or JIT cache entry. A first run that writes
//! such a cache is slower for its own writes, and the later runs find the cache: a cause of
//! its penalty beside, or instead of, a cold page cache.
//!
//! Found after the run, never before it (a walk before the first run would bring the roots'
//! directories into the caches it is about to measure cold): a bounded walk of the roots reads
//! every directory's entries ([getdents64(2)]) and its own times ([fstat(2)]); only a
//! directory changed since the run began can have gained an entry during it (creating an
//! entry sets its directory's modification time), and only that directory's entries are asked
//! their birth time ([statx(2)]'s `STATX_BTIME`). A file born in the run's window, from the
//! real-time clock read right before the run to the same read right after it, was created
//! during the run — by it, or by another process in the same trees at the same time, which
//! this cannot tell. Births are stamped from the coarse clock, up to one tick behind: a file
//! born before the window is never in it (a hook's, the state file coldtrace wrote as the
//! batch started), and one the run created in its first tick (4 ms at 250 Hz) is missed.
//! Symbolic links are not followed and no mount point is crossed.
//!
//! After the batch, [`unchanged`] tells a cache (the later runs left it as the first run wrote
//! it) from an output every run writes again (recreated, or rewritten: its inode, size or
//! times changed). A rewrite to the same size within the same tick of the clock the file
//! system stamps its times with is not told.
//!
//! [getdents64(2)]: https://man7.org/linux/man-pages/man2/getdents64.2.html
//! [fstat(2)]: https://man7.org/linux/man-pages/man2/fstat.2.html
//! [statx(2)]: https://man7.org/linux/man-pages/man2/statx.2.html
#![forbid(unsafe_code)]

use rustix::fs::{AtFlags, Dir, FileType, Mode, OFlags, StatxFlags};
use std::collections::VecDeque;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// The most directory entries one search reads (the same bound as the search for the files
/// the page-in ledger saw written: 24–86 ms from `/`, `/root` and a Python prefix).
pub const ENTRIES: u64 = crate::measure::page_ins::names::ENTRIES;

/// The most created files a search keeps (beyond them, only counted).
pub const KEPT: usize = 1000;

/// A file created during the run, as it was right after it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CreatedFile {
    /// Its path.
    pub path: PathBuf,
    /// Its size, bytes.
    pub bytes: u64,
    /// Its device, inode, modification and change times (ns): what a later rewrite changes.
    identity: (u64, u64, u64, u64),
}

/// What a search found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Created {
    /// The files born in the window, at most [`KEPT`].
    pub files: Vec<CreatedFile>,
    /// Files born in the window beyond [`KEPT`].
    pub more: u64,
    /// Directory entries read.
    pub entries: u64,
    /// The bound on entries stopped the walk before every directory was read.
    pub cut: bool,
    /// A changed directory's file system keeps no birth time: what it created is not known.
    pub no_birth_time: bool,
}

/// Now on the real-time clock, ns since the Unix epoch. A birth time is stamped from the
/// coarse real-time clock (at most one tick behind this one), so a file born before this
/// reading is never born after it, and one born in the tick after it may be stamped before it.
pub fn now_ns() -> u64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::Realtime);
    ns(t.tv_sec, nsec(t.tv_nsec))
}

/// A stat's nanoseconds field, whose type differs between C libraries.
fn nsec<T: TryInto<u64>>(field: T) -> u64 {
    field.try_into().unwrap_or(0)
}

fn ns(sec: i64, nsec: u64) -> u64 {
    (sec.max(0) as u64)
        .saturating_mul(1_000_000_000)
        .saturating_add(nsec)
}

/// (device, inode) pairs. The hasher has fixed keys: std's default asks getrandom(2) for its
/// keys and panics where a sandbox refuses it, and coldtrace needs no random source.
type Keys = std::collections::HashSet<
    (u64, u64),
    std::hash::BuildHasherDefault<std::collections::hash_map::DefaultHasher>,
>;

/// The files born under `roots` from `began` to `ended` ([`now_ns`]), reading at most
/// `budget` directory entries over all roots; `skip` (coldtrace's own output directory and
/// state file) is neither read nor kept.
pub fn created_between(
    roots: &[PathBuf],
    skip: &[&Path],
    (began, ended): (u64, u64),
    budget: u64,
) -> Created {
    let mut found = Created::default();
    let skipped: Keys = skip
        .iter()
        .filter_map(|d| rustix::fs::stat(*d).ok())
        .map(|s| (s.st_dev, s.st_ino))
        .collect();
    let mut seen = skipped.clone();
    let walk = Walk {
        window: (began, ended),
        budget,
        skipped: &skipped,
    };
    for root in roots {
        let mut dirs = VecDeque::from([(root.clone(), None)]);
        while let Some((dir, parent_dev)) = dirs.pop_front() {
            if found.entries >= budget {
                found.cut = true;
                break;
            }
            walk.read_dir(&dir, parent_dev, &mut seen, &mut dirs, &mut found);
        }
    }
    found
}

struct Walk<'s> {
    window: (u64, u64),
    budget: u64,
    skipped: &'s Keys,
}

impl Walk<'_> {
    /// Reads `dir`: its directories queued, and where it changed since the window began, its
    /// entries born in the window kept.
    fn read_dir(
        &self,
        dir: &Path,
        parent_dev: Option<u64>,
        seen: &mut Keys,
        dirs: &mut VecDeque<(PathBuf, Option<u64>)>,
        found: &mut Created,
    ) {
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC | OFlags::NOFOLLOW;
        let Ok(fd) = rustix::fs::open(dir, flags, Mode::empty()) else {
            return;
        };
        let Ok(stat) = rustix::fs::fstat(&fd) else {
            return;
        };
        if parent_dev.is_some_and(|p| p != stat.st_dev) || !seen.insert((stat.st_dev, stat.st_ino))
        {
            return;
        }
        let changed = ns(stat.st_mtime, nsec(stat.st_mtime_nsec)) >= self.window.0;
        let Ok(mut entries) = Dir::new(fd) else {
            return;
        };
        while let Some(Ok(entry)) = entries.read() {
            let name = entry.file_name();
            if matches!(name.to_bytes(), b"." | b"..") {
                continue;
            }
            if found.entries >= self.budget {
                found.cut = true;
                return;
            }
            found.entries += 1;
            let path = || dir.join(OsStr::from_bytes(name.to_bytes()));
            if entry.file_type() == FileType::Directory {
                dirs.push_back((path(), Some(stat.st_dev)));
                continue;
            }
            if !changed {
                continue;
            }
            let Some(fd) = entries.fd().ok() else {
                continue;
            };
            let asked = StatxFlags::BTIME | StatxFlags::BASIC_STATS;
            let Ok(x) = rustix::fs::statx(fd, name, AtFlags::SYMLINK_NOFOLLOW, asked) else {
                continue;
            };
            if FileType::from_raw_mode(u32::from(x.stx_mode)) == FileType::Directory {
                // An entry that did not say its kind, and is a directory.
                dirs.push_back((path(), Some(stat.st_dev)));
                continue;
            }
            if !StatxFlags::from_bits_retain(x.stx_mask).contains(StatxFlags::BTIME) {
                found.no_birth_time = true;
                continue;
            }
            let born = ns(x.stx_btime.tv_sec, u64::from(x.stx_btime.tv_nsec));
            let dev = rustix::fs::makedev(x.stx_dev_major, x.stx_dev_minor);
            let outside = born < self.window.0 || born > self.window.1;
            if outside || self.skipped.contains(&(dev, x.stx_ino)) {
                continue;
            }
            if found.files.len() >= KEPT {
                found.more += 1;
                continue;
            }
            let times = |t: &rustix::fs::StatxTimestamp| ns(t.tv_sec, u64::from(t.tv_nsec));
            found.files.push(CreatedFile {
                path: path(),
                bytes: x.stx_size,
                identity: (dev, x.stx_ino, times(&x.stx_mtime), times(&x.stx_ctime)),
            });
        }
    }
}

/// Whether `file` is still as it was when found: the same inode, size, modification and
/// change times (`false`: removed, recreated or rewritten since).
pub fn unchanged(file: &CreatedFile) -> bool {
    let Ok(s) = rustix::fs::lstat(&file.path) else {
        return false;
    };
    let now = (
        s.st_dev,
        s.st_ino,
        ns(s.st_mtime, nsec(s.st_mtime_nsec)),
        ns(s.st_ctime, nsec(s.st_ctime_nsec)),
    );
    now == file.identity && s.st_size as u64 == file.bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(name: &str) -> PathBuf {
        let root =
            std::env::temp_dir().join(format!("coldtrace-created-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(root.join("old/deep")).unwrap();
        std::fs::write(root.join("old/deep/kept.py"), b"x = 1\n").unwrap();
        root
    }

    #[test]
    fn files_born_in_the_window_are_found_and_a_rewrite_is_told() {
        let root = tree("window");
        // Born before the window: not in it, though within a tick of it.
        std::fs::write(root.join("before.txt"), b"x").unwrap();
        let began = now_ns();
        // Births are stamped a tick late at most: a file made after a tick is in.
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::create_dir(root.join("old/deep/__pycache__")).unwrap();
        std::fs::write(root.join("old/deep/__pycache__/kept.pyc"), b"0123456789").unwrap();
        std::fs::write(root.join("out.txt"), b"out").unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        let ended = now_ns();
        let found = created_between(std::slice::from_ref(&root), &[], (began, ended), ENTRIES);
        if found.no_birth_time {
            eprintln!("{} keeps no birth time", root.display());
            return;
        }
        let mut names: Vec<_> = found
            .files
            .iter()
            .map(|f| f.path.strip_prefix(&root).unwrap().to_path_buf())
            .collect();
        names.sort();
        assert_eq!(
            names,
            [
                PathBuf::from("old/deep/__pycache__/kept.pyc"),
                PathBuf::from("out.txt")
            ],
            "{found:?}"
        );
        assert!(!found.cut);
        // Nothing was born after the window.
        let after = created_between(
            std::slice::from_ref(&root),
            &[],
            (ended + 1, u64::MAX),
            ENTRIES,
        );
        assert!(after.files.is_empty(), "{after:?}");
        // The cache stays as written; an output written again does not.
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::write(root.join("out.txt"), b"out2").unwrap();
        let still: Vec<bool> = found.files.iter().map(unchanged).collect();
        let pyc = found
            .files
            .iter()
            .position(|f| f.path.ends_with("kept.pyc"))
            .unwrap();
        assert!(still[pyc]);
        assert!(!still[1 - pyc]);
        // The bound is said.
        let small = created_between(std::slice::from_ref(&root), &[], (began, ended), 2);
        assert!(small.cut && small.entries == 2, "{small:?}");
        let _ = std::fs::remove_dir_all(&root);
    }
}
