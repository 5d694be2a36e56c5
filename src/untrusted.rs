//! Paths coldtrace did not create (a user named them, or a tree walk found them): opened
//! without blocking, checked on the open descriptor, read with a bound. A leaf: no crate imports.
//!
//! Anything named by a path may be swapped, between listing and opening, for a FIFO (an
//! `open(2)` that blocks until a writer comes, beyond SIGINT and SIGTERM, which coldtrace
//! takes through a signalfd) or a device (`/dev/zero`: a read without end). So every such open
//! is `O_NONBLOCK | O_NOCTTY | O_CLOEXEC`, the type is checked with [fstat(2)] on the
//! descriptor itself — never on the path, which may change again — and reads stop at a limit.
//! A FIFO is legitimate only as a command's stdin; [`ready_for_child`] waits for its writer
//! while still honouring signals, then clears `O_NONBLOCK` for the child.
//!
//! [fstat(2)]: https://man7.org/linux/man-pages/man2/fstat.2.html
#![forbid(unsafe_code)]

use coldtrace_syscalls::{Errno, Signal, SignalFd};
use rustix::event::{PollFd, PollFlags};
use rustix::fd::{AsFd, OwnedFd};
use rustix::fs::{FileType, Mode, OFlags, CWD};
use std::fmt;
use std::fs::File;
use std::io::Read;
use std::path::Path;

/// What a file turned out to be, from `fstat` on its descriptor.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum FileKind {
    /// A regular file.
    Regular,
    /// A directory.
    Directory,
    /// A FIFO (named pipe).
    Fifo,
    /// A character device (`/dev/zero`, a terminal).
    CharDevice,
    /// A block device.
    BlockDevice,
    /// A socket.
    Socket,
    /// Anything else (a symlink cannot be an open descriptor's type, but the kernel decides).
    Other,
}

impl FileKind {
    fn of(file_type: FileType) -> FileKind {
        match file_type {
            FileType::RegularFile => FileKind::Regular,
            FileType::Directory => FileKind::Directory,
            FileType::Fifo => FileKind::Fifo,
            FileType::CharacterDevice => FileKind::CharDevice,
            FileType::BlockDevice => FileKind::BlockDevice,
            FileType::Socket => FileKind::Socket,
            _ => FileKind::Other,
        }
    }

    /// `a regular file`, `a FIFO`, … for messages.
    pub fn name(self) -> &'static str {
        match self {
            FileKind::Regular => "a regular file",
            FileKind::Directory => "a directory",
            FileKind::Fifo => "a FIFO",
            FileKind::CharDevice => "a character device",
            FileKind::BlockDevice => "a block device",
            FileKind::Socket => "a socket",
            FileKind::Other => "not a file",
        }
    }
}

/// What a path must be.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Want {
    /// A regular file (records, batch documents, files of a tree, a program's `#!` line).
    Regular,
    /// A directory.
    Directory,
    /// A command's stdin: a regular file, a FIFO or a character device.
    Input,
    /// A file coldtrace wrote (a record, a batch document, its state file): a regular file,
    /// and not one of a file system the kernel makes, whose files are made on each read and
    /// may be consumed by it (`/proc/kmsg`, tracefs's `trace_pipe`).
    Record,
}

impl Want {
    fn admits(self, kind: FileKind) -> bool {
        match self {
            Want::Regular | Want::Record => kind == FileKind::Regular,
            Want::Directory => kind == FileKind::Directory,
            Want::Input => matches!(
                kind,
                FileKind::Regular | FileKind::Fifo | FileKind::CharDevice
            ),
        }
    }

    fn name(self) -> &'static str {
        match self {
            Want::Regular | Want::Record => "a regular file",
            Want::Directory => "a directory",
            Want::Input => "a regular file, a FIFO or a character device",
        }
    }
}

/// Why a path could not be opened or read as wanted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum OpenError {
    /// The kernel refused (`open`, `fstat`, `read`).
    Os(Errno),
    /// It is not what it must be.
    Kind {
        /// What it is.
        found: FileKind,
        /// What it had to be.
        want: Want,
    },
    /// It holds more than the limit: not a file coldtrace wrote, or not one to hold in memory.
    TooLarge {
        /// The limit, bytes.
        limit: u64,
    },
    /// A signal asked coldtrace to stop while it waited for a FIFO's writer.
    Interrupted(Signal),
    /// A file of this file system the kernel makes, where a record was wanted: left unread.
    KernelMade(&'static str),
}

impl fmt::Display for OpenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OpenError::Os(e) => write!(f, "{e}"),
            OpenError::Kind { found, want } => {
                write!(f, "it is {}, not {}", found.name(), want.name())
            }
            OpenError::TooLarge { limit } => write!(f, "it holds more than {limit} bytes"),
            OpenError::Interrupted(sig) => write!(f, "interrupted by {sig}"),
            OpenError::KernelMade(fs) => write!(
                f,
                "it is a file {fs} makes as it is read, not a record: left unread"
            ),
        }
    }
}

impl OpenError {
    /// As an `io::Error`: the kernel's own error for [`OpenError::Os`] (so that callers can
    /// explain it as they explain any I/O error), this message for the others.
    pub fn into_io(self) -> std::io::Error {
        match self {
            OpenError::Os(e) => std::io::Error::from_raw_os_error(e.raw()),
            other => std::io::Error::other(other.to_string()),
        }
    }
}

impl From<rustix::io::Errno> for OpenError {
    fn from(e: rustix::io::Errno) -> Self {
        OpenError::Os(Errno::from(e))
    }
}

/// A descriptor opened by [`open_at`], with what `fstat` said about it.
#[derive(Debug)]
pub struct Opened {
    /// The descriptor (still `O_NONBLOCK`; see [`ready_for_child`]).
    pub fd: OwnedFd,
    /// Its type.
    pub kind: FileKind,
    /// Its size, bytes (`st_size`).
    pub size: u64,
}

/// Opens `path` (relative to `dir`) read-only, non-blocking, without becoming the controlling
/// terminal, close-on-exec, plus `extra` flags (`O_NOATIME`), and checks with `fstat` on the
/// descriptor that it is what `want` admits.
///
/// # Errors
/// [`OpenError::Os`] from [openat(2)] or fstat, [`OpenError::Kind`] for the wrong type.
///
/// [openat(2)]: https://man7.org/linux/man-pages/man2/openat.2.html
pub fn open_at<D: AsFd>(
    dir: D,
    path: &Path,
    want: Want,
    extra: OFlags,
) -> Result<Opened, OpenError> {
    let mut flags = OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC | extra;
    if want == Want::Directory {
        flags |= OFlags::DIRECTORY;
    }
    let fd = rustix::fs::openat(dir, path, flags, Mode::empty())?;
    let stat = rustix::fs::fstat(&fd)?;
    let kind = FileKind::of(FileType::from_raw_mode(stat.st_mode));
    if !want.admits(kind) {
        return Err(OpenError::Kind { found: kind, want });
    }
    if want == Want::Record {
        if let Some(fs) = kernel_file_system(rustix::fs::fstatfs(&fd)?.f_type) {
            return Err(OpenError::KernelMade(fs));
        }
    }
    Ok(Opened {
        fd,
        kind,
        size: u64::try_from(stat.st_size).unwrap_or(0),
    })
}

/// [`open_at`] relative to the current directory.
pub fn open(path: &Path, want: Want) -> Result<Opened, OpenError> {
    open_at(CWD, path, want, OFlags::empty())
}

/// What `path` is, from [stat(2)] — without opening it (opening a FIFO's read end would
/// release a writer waiting for its reader) — checked against `want`, and readable
/// ([access(2)] with the effective IDs). For an early, one-line refusal; the later open is
/// checked again on its descriptor.
///
/// # Errors
/// [`OpenError::Os`] from stat or access, [`OpenError::Kind`] for the wrong type.
///
/// [stat(2)]: https://man7.org/linux/man-pages/man2/stat.2.html
/// [access(2)]: https://man7.org/linux/man-pages/man2/access.2.html
pub fn examine(path: &Path, want: Want) -> Result<FileKind, OpenError> {
    let stat = rustix::fs::stat(path)?;
    let kind = FileKind::of(FileType::from_raw_mode(stat.st_mode));
    if !want.admits(kind) {
        return Err(OpenError::Kind { found: kind, want });
    }
    rustix::fs::accessat(
        CWD,
        path,
        rustix::fs::Access::READ_OK,
        rustix::fs::AtFlags::EACCESS,
    )?;
    Ok(kind)
}

/// The whole of a file coldtrace wrote ([`Want::Record`]), if it holds at most `limit` bytes
/// (checked on the size and again while reading: a file that grows meanwhile is cut off, not
/// followed).
///
/// # Errors
/// As [`open`]; [`OpenError::TooLarge`] beyond `limit`.
pub fn read_bounded(path: &Path, limit: u64) -> Result<Vec<u8>, OpenError> {
    let opened = open(path, Want::Record)?;
    if opened.size > limit {
        return Err(OpenError::TooLarge { limit });
    }
    let mut bytes = Vec::with_capacity(opened.size as usize);
    File::from(opened.fd)
        .take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| OpenError::Os(Errno::from_raw(e.raw_os_error().unwrap_or(5))))?;
    if bytes.len() as u64 > limit {
        return Err(OpenError::TooLarge { limit });
    }
    Ok(bytes)
}

/// Makes an opened stdin ready to give to a child: for a FIFO, waits until its writer has
/// written or closed ([poll(2)]; a FIFO given to a child before its writer came would read as
/// empty), returning at once when `signals` has a request to stop (SIGCHLD is dropped); then
/// clears `O_NONBLOCK` ([fcntl(2)]), which the child would otherwise see as `EAGAIN`.
///
/// # Errors
/// [`OpenError::Interrupted`] with the signal; [`OpenError::Os`] if polling or fcntl fails.
///
/// [poll(2)]: https://man7.org/linux/man-pages/man2/poll.2.html
/// [fcntl(2)]: https://man7.org/linux/man-pages/man2/fcntl.2.html
pub fn ready_for_child(opened: &Opened, signals: &SignalFd) -> Result<(), OpenError> {
    if opened.kind == FileKind::Fifo {
        wait_for_writer(&opened.fd, signals)?;
    }
    let flags = rustix::fs::fcntl_getfl(&opened.fd)?;
    rustix::fs::fcntl_setfl(&opened.fd, flags - OFlags::NONBLOCK)?;
    Ok(())
}

/// Polls a FIFO's read end until it has data or its writer closed, or `signals` has a request
/// to stop.
fn wait_for_writer(fifo: &OwnedFd, signals: &SignalFd) -> Result<(), OpenError> {
    loop {
        let mut fds = [
            PollFd::new(fifo, PollFlags::IN),
            PollFd::new(signals, PollFlags::IN),
        ];
        match rustix::event::poll(&mut fds, None) {
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => return Err(e.into()),
            Ok(_) => {}
        }
        if !fds[0].revents().is_empty() {
            return Ok(());
        }
        while let Some(sig) = signals.take().map_err(OpenError::Os)? {
            if sig != Signal::CHLD {
                return Err(OpenError::Interrupted(sig));
            }
        }
    }
}

/// The kernel-made file system that `f_type` ([statfs(2)]) names, if it is one: its
/// directories are kernel objects (a directory made in cgroupfs is a cgroup) and its files are
/// made on each read (`/proc/kmsg` and tracefs's `trace_pipe` are consumed by it), so
/// coldtrace neither writes its files there nor reads them as records.
///
/// [statfs(2)]: https://man7.org/linux/man-pages/man2/statfs.2.html
pub fn kernel_file_system(f_type: rustix::fs::FsWord) -> Option<&'static str> {
    // The magic numbers of <linux/magic.h>.
    const KNOWN: [(rustix::fs::FsWord, &str); 11] = [
        (0x9fa0, "procfs"),
        (0x6265_6572, "sysfs"),
        (0x0027_e0eb, "cgroupfs"),
        (0x6367_7270, "cgroup2"),
        (0x7472_6163, "tracefs"),
        (0x6462_6720, "debugfs"),
        (0x7363_6673, "securityfs"),
        (0xcafe_4a11, "bpffs"),
        (0x6165_676c, "pstore"),
        (0x6265_6570, "configfs"),
        (0xde5e_81e4, "efivarfs"),
    ];
    KNOWN
        .iter()
        .find(|(m, _)| *m == f_type)
        .map(|(_, name)| *name)
}
