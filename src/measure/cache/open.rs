//! Opening the files of a set for probing or advising, cheaply and without touching atimes.
//! It only opens; what is done with the descriptor is the caller's.
#![forbid(unsafe_code)]

use super::files::WatchedFile;
use crate::untrusted::{self, OpenError, Want};
use coldtrace_syscalls::Errno;
use rustix::fd::{AsFd, OwnedFd};
use rustix::fs::{Mode, OFlags, CWD};
use std::path::{Path, PathBuf};

/// Opens the files of a set one after another for probing or advising: read-only,
/// close-on-exec, and `O_NOATIME` where the kernel permits it (owner or `CAP_FOWNER`), so that
/// looking does not change atimes. Through [`untrusted::open_at`]: a file swapped for a FIFO
/// or a device since the walk neither blocks nor is probed (it is not a regular file).
///
/// Each parent directory is resolved once (`O_PATH`) and files are opened relative to it
/// ([openat(2)]): files of one directory are consecutive in walk order, and re-walking every
/// component of a deep absolute path was a large part of the per-file cost.
///
/// [openat(2)]: https://man7.org/linux/man-pages/man2/openat.2.html
pub(super) struct Opener {
    pub(super) euid: u32,
    dir: Option<(PathBuf, OwnedFd)>,
}

impl Opener {
    pub(super) fn new() -> Opener {
        Opener {
            euid: rustix::process::geteuid().as_raw(),
            dir: None,
        }
    }

    pub(super) fn open(&mut self, file: &WatchedFile) -> Result<OwnedFd, OpenError> {
        let (Some(parent), Some(name)) = (file.path.parent(), file.path.file_name()) else {
            return self.open_at(CWD, &file.path, file);
        };
        if parent.as_os_str().is_empty() {
            return self.open_at(CWD, &file.path, file);
        }
        if self.dir.as_ref().map(|(p, _)| p.as_path()) != Some(parent) {
            let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC;
            self.dir = rustix::fs::open(parent, flags, Mode::empty())
                .ok()
                .map(|fd| (parent.to_path_buf(), fd));
        }
        match self.dir.take() {
            Some((p, dir)) => {
                let opened = self.open_at(&dir, Path::new(name), file);
                self.dir = Some((p, dir));
                opened
            }
            None => self.open_at(CWD, &file.path, file),
        }
    }

    fn open_at<D: AsFd>(
        &self,
        dir: D,
        path: &Path,
        file: &WatchedFile,
    ) -> Result<OwnedFd, OpenError> {
        if self.euid == 0 || self.euid == file.owner_uid {
            match untrusted::open_at(&dir, path, Want::Regular, OFlags::NOATIME) {
                Err(OpenError::Os(e)) if e == Errno::PERM => {}
                other => return other.map(|o| o.fd),
            }
        }
        untrusted::open_at(&dir, path, Want::Regular, OFlags::empty()).map(|o| o.fd)
    }
}
