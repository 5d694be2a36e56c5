//! The safe side of spawning: PATH lookup with execvp semantics, a [`Program`] prepared once and
//! spawned many times, and the [`Child`] handle.
#![forbid(unsafe_code)]

use crate::errno::Errno;
use crate::raw::child::{self, ChildFailure, ChildSetup, ExecImage};
use crate::rusage::ResourceUsage;
use crate::signal::{SigSet, Signal};
use crate::status::WaitStatus;
use crate::wait::{self, SignalFd, WaitEvent};
use alloc::ffi::CString;
use alloc::vec::Vec;
use core::ffi::CStr;
use rustix::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};

pub use crate::raw::child::{ChildStack, ChildStage};

/// Why a spawn did not reach the program: the failed step and the kernel's error.
pub type SpawnError = ChildFailure;

/// The default search path when `PATH` is unset (glibc's `confstr(_CS_PATH)`).
pub const DEFAULT_PATH: &[u8] = b"/bin:/usr/bin";

/// Finds `name` as `execvp(3)` would, but in the parent and without running anything.
///
/// A name containing `/` is used as it is. Otherwise each directory of `path` is tried in order
/// (an empty entry means the current directory). The result keeps "not found" apart from "found
/// but not executable": `ENOENT` when no candidate exists, `EACCES` when one exists but is not
/// an executable regular file (a directory, or no execute permission). `ENOEXEC` (a file the
/// kernel cannot run) can only be known from `execve` and comes back from [`Program::spawn`].
/// Unlike `execvp`, a file that fails with `ENOEXEC` is never retried through `/bin/sh`.
///
/// # References
/// [execvp(3)](https://man7.org/linux/man-pages/man3/execvp.3.html)
pub fn find_program(name: &[u8], path: Option<&[u8]>) -> Result<CString, Errno> {
    if name.is_empty() {
        return Err(Errno::NOENT);
    }
    if name.contains(&b'/') {
        let candidate = CString::new(name).map_err(|_| Errno::INVAL)?;
        return check_executable(&candidate).map(|()| candidate);
    }
    let mut denied = false;
    for dir in path.unwrap_or(DEFAULT_PATH).split(|&b| b == b':') {
        let mut full = Vec::with_capacity(dir.len() + 1 + name.len());
        if dir.is_empty() {
            full.extend_from_slice(b".");
        } else {
            full.extend_from_slice(dir);
        }
        full.push(b'/');
        full.extend_from_slice(name);
        let Ok(candidate) = CString::new(full) else {
            continue;
        };
        match check_executable(&candidate) {
            Ok(()) => return Ok(candidate),
            Err(Errno::ACCES) => denied = true,
            Err(_) => {}
        }
    }
    Err(if denied { Errno::ACCES } else { Errno::NOENT })
}

/// `Ok` for an executable regular file; `EACCES` for one that exists but cannot be executed.
fn check_executable(path: &CStr) -> Result<(), Errno> {
    use rustix::fs::{Access, FileType};
    let stat = rustix::fs::stat(path)?;
    if FileType::from_raw_mode(stat.st_mode) != FileType::RegularFile {
        return Err(Errno::ACCES);
    }
    rustix::fs::access(path, Access::EXEC_OK).map_err(|e| match Errno::from(e) {
        Errno::NOENT => Errno::NOENT,
        _ => Errno::ACCES,
    })
}

/// A program ready to run: resolved path, argv and envp as C strings. Prepared once, spawned
/// any number of times.
#[derive(Clone, Debug)]
pub struct Program {
    path: CString,
    argv: Vec<CString>,
    envp: Vec<CString>,
}

impl Program {
    /// A program at `path` (already resolved, e.g. by [`find_program`]) with its full argv
    /// (including argv\[0\]) and environment (`KEY=VALUE` strings, passed exactly).
    pub fn new(path: CString, argv: Vec<CString>, envp: Vec<CString>) -> Program {
        Program { path, argv, envp }
    }

    /// The resolved path.
    pub fn path(&self) -> &CStr {
        &self.path
    }

    /// Starts the program with vfork semantics (see [`crate::raw::child`]). Returns once the
    /// child has called `execve`; on failure the child has been reaped already.
    pub fn spawn(
        &self,
        options: &SpawnOptions<'_>,
        stack: &mut ChildStack,
    ) -> Result<Child, SpawnError> {
        self.spawn_image(&self.image(), options, stack)
    }

    /// The argv/envp pointer arrays `execve` takes, built (allocated) once. A measuring caller
    /// builds them before it starts its clock and passes them to [`Program::spawn_image`], so
    /// the timed window holds the spawn and nothing else.
    pub fn image(&self) -> ExecImage<'_> {
        ExecImage::new(
            &self.path,
            self.argv.iter().map(CString::as_c_str),
            self.envp.iter().map(CString::as_c_str),
        )
    }

    /// [`Program::spawn`] with an image from [`Program::image`].
    pub fn spawn_image(
        &self,
        image: &ExecImage<'_>,
        options: &SpawnOptions<'_>,
        stack: &mut ChildStack,
    ) -> Result<Child, SpawnError> {
        // Descriptors below 3 are moved up first so that installing one cannot clobber another.
        let mut lifted: [Option<OwnedFd>; 3] = [None, None, None];
        let mut stdio: [Option<BorrowedFd<'_>>; 3] =
            [options.stdin, options.stdout, options.stderr];
        for (target, (slot, keep)) in stdio.iter_mut().zip(lifted.iter_mut()).enumerate() {
            if let Some(fd) = *slot {
                let raw = fd.as_raw_fd();
                if raw < 3 && raw != target as i32 {
                    let copy =
                        rustix::io::fcntl_dupfd_cloexec(fd, 3).map_err(|e| ChildFailure {
                            stage: ChildStage::Clone,
                            errno: e.into(),
                        })?;
                    *keep = Some(copy);
                }
            }
        }
        for (slot, keep) in stdio.iter_mut().zip(lifted.iter()) {
            if let Some(copy) = keep {
                *slot = Some(copy.as_fd());
            }
        }
        let setup = ChildSetup {
            stdio,
            keep_fds: options.keep_fds,
            cwd: options.cwd,
            new_process_group: options.new_process_group,
            signal_mask: options.signal_mask,
        };
        let pid = child::spawn(image, &setup, stack)?;
        Ok(Child {
            pid,
            pidfd: None,
            new_process_group: options.new_process_group,
        })
    }
}

/// How to set up the child's process state. `Default` inherits everything.
#[derive(Clone, Copy, Default)]
pub struct SpawnOptions<'a> {
    /// Descriptor for the child's stdin (`None`: inherit).
    pub stdin: Option<BorrowedFd<'a>>,
    /// Descriptor for the child's stdout (`None`: inherit).
    pub stdout: Option<BorrowedFd<'a>>,
    /// Descriptor for the child's stderr (`None`: inherit).
    pub stderr: Option<BorrowedFd<'a>>,
    /// Descriptors (≥ 3) to keep open under their numbers; all others above 2 are closed.
    pub keep_fds: &'a [BorrowedFd<'a>],
    /// Working directory for the child.
    pub cwd: Option<&'a CStr>,
    /// Put the child in a new process group (so it and its descendants can be signalled
    /// together; it then no longer receives the terminal's SIGINT).
    pub new_process_group: bool,
    /// The signal mask the program starts with; `None` keeps the caller's.
    pub signal_mask: Option<SigSet>,
}

/// A running (or exited, not yet reaped) child. Reap it with [`Child::reap`]: a child that is
/// dropped unreaped stays a zombie until the process exits.
#[must_use = "a child must be reaped with `reap`, or it stays a zombie"]
#[derive(Debug)]
pub struct Child {
    pid: i32,
    pidfd: Option<OwnedFd>,
    new_process_group: bool,
}

impl Child {
    /// The child's process ID.
    pub fn pid(&self) -> i32 {
        self.pid
    }

    /// Waits until the child exits, a signal arrives on `signals`, or the CLOCK_MONOTONIC
    /// `deadline_ns` passes. The child is not reaped: look at it, then call [`Child::reap`].
    pub fn wait(
        &mut self,
        signals: Option<&SignalFd>,
        deadline_ns: Option<u64>,
    ) -> Result<WaitEvent, Errno> {
        if self.pidfd.is_none() {
            self.pidfd = Some(wait::pidfd_open(self.pid)?);
        }
        match &self.pidfd {
            Some(fd) => wait::wait_exit(fd.as_fd(), signals, deadline_ns),
            None => Err(Errno::BADF),
        }
    }

    /// Whether the child has exited (a zombie waiting to be reaped), without reaping it.
    pub fn has_exited(&self) -> Result<bool, Errno> {
        wait::has_exited(self.pid)
    }

    /// If the child is stopped, the signal that stopped it (without consuming the report).
    pub fn stopped_by(&self) -> Result<Option<Signal>, Errno> {
        wait::stopped_by(self.pid)
    }

    /// Sends `signal` to the child (safe until it is reaped: its PID cannot be reused before).
    pub fn signal(&self, signal: Signal) -> Result<(), Errno> {
        wait::kill(self.pid, signal)
    }

    /// Sends `signal` to the child's process group if the child leads one of its own, else to
    /// the child alone.
    pub fn signal_group(&self, signal: Signal) -> Result<(), Errno> {
        if self.new_process_group {
            wait::kill_group(self.pid, signal)
        } else {
            wait::kill(self.pid, signal)
        }
    }

    /// Reaps the child with [`crate::raw::wait4`], blocking until it exits, and returns its wait
    /// status and resource usage (the child's plus its waited-for descendants').
    pub fn reap(self) -> Result<(WaitStatus, ResourceUsage), Errno> {
        match crate::raw::wait4(self.pid, crate::raw::Wait4Options::BLOCK)? {
            Some((_, status, usage)) => Ok((status, usage)),
            None => Err(Errno::CHILD),
        }
    }
}
