//! The state directory of `coldtrace boot` (default [`DEFAULT_STATE_DIR`]): `state.json`, the
//! armed state, and `lock`, held by a `boot run` while it runs. What runs at boot runs as root,
//! so nothing here trusts a path: the directory is opened once with
//! [openat2(2)] `RESOLVE_NO_SYMLINKS` (no symlink anywhere on its path; `O_NOFOLLOW` on the
//! last component where the kernel predates openat2), must belong to the user running
//! coldtrace and be writable by no one else, and every file is reached relative to that
//! descriptor, never followed through a symlink, and checked to be a regular file of the same
//! owner. `state.json` is replaced atomically and durably: a new file, [fsync(2)], [rename(2)]
//! over the old one, fsync of the directory — a power cut leaves the old state or the new one.
//!
//! [openat2(2)]: https://man7.org/linux/man-pages/man2/openat2.2.html
//! [fsync(2)]: https://man7.org/linux/man-pages/man2/fsync.2.html
//! [rename(2)]: https://man7.org/linux/man-pages/man2/rename.2.html
#![forbid(unsafe_code)]

use crate::record::boot::BootState;
use rustix::fs::{AtFlags, FlockOperation, Mode, OFlags, ResolveFlags, CWD};
use rustix::io::Errno;
use std::io::Read;
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};

/// Where the state lives unless `--state-dir` says otherwise: persistent, root's.
pub const DEFAULT_STATE_DIR: &str = "/var/lib/coldtrace/boot";
/// The armed state.
pub const STATE_FILE: &str = "state.json";
/// Held (flock) by a `boot run` while it runs.
pub const LOCK_FILE: &str = "lock";
/// The largest state read: a plan with its environment is a few KiB.
const STATE_LIMIT: u64 = 16 << 20;

/// The state directory, opened and checked.
pub struct StateDir {
    /// The path, as given.
    pub path: PathBuf,
    fd: OwnedFd,
}

/// The state file as found.
pub enum Found {
    /// No `state.json`: not armed.
    Missing,
    /// Read and whole.
    Armed(Box<BootState>),
    /// There, but not a state this coldtrace can use: why.
    Damaged(String),
}

fn describe(path: &Path, e: Errno) -> String {
    let is_link = || std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
    match e {
        Errno::LOOP | Errno::XDEV => format!(
            "{}: a symlink is on its path; the state directory must be reached without one",
            path.display()
        ),
        Errno::NOTDIR if is_link() => format!(
            "{}: a symlink; the state directory must be reached without one",
            path.display()
        ),
        e => format!("{}: {}", path.display(), std::io::Error::from(e)),
    }
}

/// Opens `path` as a directory with no symlink on its way.
fn open_no_symlinks(path: &Path) -> Result<OwnedFd, Errno> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC | OFlags::NOFOLLOW;
    match rustix::fs::openat2(CWD, path, flags, Mode::empty(), ResolveFlags::NO_SYMLINKS) {
        Err(Errno::NOSYS) => rustix::fs::openat(CWD, path, flags, Mode::empty()),
        other => other,
    }
}

impl StateDir {
    /// Opens the state directory; `Ok(None)` when it does not exist.
    ///
    /// # Errors
    /// One line: a symlink on the way, another owner, writable by others, unreadable.
    pub fn open(path: &Path) -> Result<Option<StateDir>, String> {
        match open_no_symlinks(path) {
            Ok(fd) => Self::checked(path, fd).map(Some),
            Err(Errno::NOENT) => Ok(None),
            Err(e) => Err(describe(path, e)),
        }
    }

    /// Opens the state directory, making it (mode 0700; missing parents 0755) when missing.
    ///
    /// # Errors
    /// As [`StateDir::open`], or why it cannot be made.
    pub fn create(path: &Path) -> Result<StateDir, String> {
        if let Some(dir) = Self::open(path)? {
            return Ok(dir);
        }
        if let Some(parent) = path.parent() {
            use std::os::unix::fs::DirBuilderExt;
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o755)
                .create(parent)
                .map_err(|e| format!("{}: {e}", parent.display()))?;
        }
        match rustix::fs::mkdirat(CWD, path, Mode::from_raw_mode(0o700)) {
            Ok(()) | Err(Errno::EXIST) => {}
            Err(e) => return Err(describe(path, e)),
        }
        Self::open(path)?.ok_or_else(|| format!("{}: vanished once made", path.display()))
    }

    fn checked(path: &Path, fd: OwnedFd) -> Result<StateDir, String> {
        let stat = rustix::fs::fstat(&fd).map_err(|e| describe(path, e))?;
        let me = rustix::process::geteuid().as_raw();
        if stat.st_uid != me {
            return Err(format!(
                "{}: owned by uid {}, not by uid {me} who runs coldtrace: refused (a state \
                 another user can write would choose what runs at boot); give another \
                 --state-dir or fix its owner",
                path.display(),
                stat.st_uid
            ));
        }
        if stat.st_mode & 0o022 != 0 {
            return Err(format!(
                "{}: writable by its group or others (mode {:o}): refused; chmod go-w it or \
                 give another --state-dir",
                path.display(),
                stat.st_mode & 0o7777
            ));
        }
        Ok(StateDir {
            path: path.to_path_buf(),
            fd,
        })
    }

    /// The path of `name` in the directory, for messages.
    pub fn shown(&self, name: &str) -> String {
        self.path.join(name).display().to_string()
    }

    /// Reads `state.json`.
    pub fn read(&self) -> Found {
        let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
        let fd = match rustix::fs::openat(&self.fd, STATE_FILE, flags, Mode::empty()) {
            Ok(fd) => fd,
            Err(Errno::NOENT) => return Found::Missing,
            Err(Errno::LOOP) => return Found::Damaged("a symlink, not a file".into()),
            Err(e) => return Found::Damaged(std::io::Error::from(e).to_string()),
        };
        match Self::regular_of_mine(&fd) {
            Ok(()) => {}
            Err(why) => return Found::Damaged(why),
        }
        let mut bytes = Vec::new();
        let read = std::fs::File::from(fd)
            .take(STATE_LIMIT + 1)
            .read_to_end(&mut bytes);
        if let Err(e) = read {
            return Found::Damaged(e.to_string());
        }
        if bytes.len() as u64 > STATE_LIMIT {
            return Found::Damaged(format!("larger than {} MiB", STATE_LIMIT >> 20));
        }
        match BootState::parse(&bytes) {
            Ok(state) => Found::Armed(Box::new(state)),
            Err(why) => Found::Damaged(why),
        }
    }

    fn regular_of_mine(fd: &OwnedFd) -> Result<(), String> {
        let stat = rustix::fs::fstat(fd).map_err(|e| std::io::Error::from(e).to_string())?;
        let kind = rustix::fs::FileType::from_raw_mode(stat.st_mode);
        if kind != rustix::fs::FileType::RegularFile {
            return Err(format!("not a regular file ({kind:?})"));
        }
        let me = rustix::process::geteuid().as_raw();
        if stat.st_uid != me {
            return Err(format!("owned by uid {}, not {me}", stat.st_uid));
        }
        Ok(())
    }

    /// Replaces `state.json` with `state`, durably (see the module's documentation).
    ///
    /// # Errors
    /// One line naming the file.
    pub fn write(&self, state: &BootState) -> Result<(), String> {
        let text = serde_json::to_string_pretty(state).unwrap_or_default() + "\n";
        crate::measure::boot_marker::write_atomically(&self.fd, STATE_FILE, &text)
            .and_then(|()| rustix::fs::fsync(&self.fd).map_err(Into::into))
            .map_err(|e| format!("{}: {e}", self.shown(STATE_FILE)))
    }

    /// Takes the lock a running `boot run` holds; `Ok(None)` when another holds it.
    ///
    /// # Errors
    /// The lock file cannot be made or locked for another reason.
    pub fn lock(&self) -> Result<Option<OwnedFd>, String> {
        let flags = OFlags::RDWR | OFlags::CREATE | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let fd = rustix::fs::openat(&self.fd, LOCK_FILE, flags, Mode::from_raw_mode(0o600))
            .map_err(|e| describe(&self.path.join(LOCK_FILE), e))?;
        match rustix::fs::flock(&fd, FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => Ok(Some(fd)),
            Err(Errno::WOULDBLOCK) => Ok(None),
            Err(e) => Err(describe(&self.path.join(LOCK_FILE), e)),
        }
    }

    /// Removes every file coldtrace keeps in the directory (the state, the lock, a temporary
    /// state left by a crash), then the directory if it is then empty. Returns what was
    /// removed, one path each, and what could not be.
    pub fn remove_all(self) -> (Vec<String>, Vec<String>) {
        let (mut removed, mut failed) = (Vec::new(), Vec::new());
        let mut names: Vec<String> = vec![STATE_FILE.into(), LOCK_FILE.into()];
        if let Ok(entries) = std::fs::read_dir(format!("/proc/self/fd/{}", fd_number(&self.fd))) {
            names.extend(
                entries
                    .filter_map(|e| e.ok()?.file_name().into_string().ok())
                    .filter(|n| n.starts_with(&format!(".{STATE_FILE}.")) && n.ends_with(".tmp")),
            );
        }
        for name in names {
            match rustix::fs::unlinkat(&self.fd, name.as_str(), AtFlags::empty()) {
                Ok(()) => removed.push(self.shown(&name)),
                Err(Errno::NOENT) => {}
                Err(e) => failed.push(describe(&self.path.join(&name), e)),
            }
        }
        let _ = rustix::fs::fsync(&self.fd);
        drop(self.fd);
        match rustix::fs::unlinkat(CWD, &self.path, AtFlags::REMOVEDIR) {
            Ok(()) => removed.push(format!("{}/", self.path.display())),
            Err(Errno::NOENT) => {}
            // Files of someone else's are left, and said.
            Err(Errno::NOTEMPTY) => failed.push(format!(
                "{}: holds files coldtrace did not make; left as it is",
                self.path.display()
            )),
            Err(e) => failed.push(describe(&self.path, e)),
        }
        (removed, failed)
    }
}

/// The number of a descriptor (to list the directory it holds through `/proc/self/fd`).
fn fd_number(fd: &OwnedFd) -> i32 {
    use std::os::fd::AsRawFd;
    fd.as_fd().as_raw_fd()
}
