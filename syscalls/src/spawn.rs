//! The safe side of spawning: PATH lookup with execvp semantics, a [`Program`] prepared once and
//! spawned many times, and the [`Child`] handle.
#![forbid(unsafe_code)]

use crate::child_plan::{ChildPlan, Closing};
use crate::errno::Errno;
use crate::raw::child;
use crate::rusage::ResourceUsage;
use crate::signal::{SigSet, Signal};
use crate::status::WaitStatus;
use crate::wait::{self, SignalFd, WaitEvent};
use alloc::ffi::CString;
use alloc::vec::Vec;
use core::ffi::{c_int, CStr};
use core::fmt;
use core::sync::atomic::{AtomicI32, AtomicU8, Ordering};
use rustix::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};

pub use crate::raw::child::{ChildStack, ExecImage};

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

/// The step of a spawn that failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum ChildStage {
    /// The parent could not start the child (`clone` failed, or the setup was invalid).
    Clone = 1,
    /// Resetting signal dispositions.
    ResetSignals = 2,
    /// `setpgid(0, 0)`.
    SetProcessGroup = 3,
    /// `chdir(cwd)`.
    ChangeDirectory = 4,
    /// `dup3` onto 0, 1 or 2.
    RedirectStdio = 5,
    /// Closing inherited descriptors (or, in the parent, listing them for the fallback).
    CloseDescriptors = 6,
    /// Restoring the signal mask.
    RestoreMask = 7,
    /// `execve` itself.
    Exec = 8,
}

impl ChildStage {
    fn from_raw(raw: u32) -> ChildStage {
        match raw {
            2 => ChildStage::ResetSignals,
            3 => ChildStage::SetProcessGroup,
            4 => ChildStage::ChangeDirectory,
            5 => ChildStage::RedirectStdio,
            6 => ChildStage::CloseDescriptors,
            7 => ChildStage::RestoreMask,
            8 => ChildStage::Exec,
            _ => ChildStage::Clone,
        }
    }
}

/// Why a spawn did not reach the program: the failed step and the kernel's error.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SpawnError {
    /// The failed step.
    pub stage: ChildStage,
    /// The kernel's error.
    pub errno: Errno,
}

impl SpawnError {
    fn parent(errno: Errno) -> SpawnError {
        SpawnError {
            stage: ChildStage::Clone,
            errno,
        }
    }
}

/// Why children are watched without pidfds (see [`pidfd_unavailable`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PidfdUnavailable {
    /// `clone` returned without storing a pidfd: the kernel ignores `CLONE_PIDFD` (< 5.2).
    Ignored,
    /// `clone` with `CLONE_PIDFD` failed with this error (a seccomp filter, an old C library).
    Refused(Errno),
    /// `waitid(P_PIDFD)` is unknown to the kernel (< 5.4).
    NoWaitid(Errno),
}

impl fmt::Display for PidfdUnavailable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PidfdUnavailable::Ignored => f.write_str("the kernel ignores CLONE_PIDFD"),
            PidfdUnavailable::Refused(e) => write!(f, "clone with CLONE_PIDFD failed: {e}"),
            PidfdUnavailable::NoWaitid(e) => write!(f, "waitid(P_PIDFD) failed: {e}"),
        }
    }
}

// Detected once per process, at the first spawn that needs it. States: 0 unknown, 1 yes, 2 no.
static PIDFD: AtomicU8 = AtomicU8::new(0);
// The cause when PIDFD = 2: 0 ignored, > 0 refused with that errno, < 0 no waitid (-errno).
static PIDFD_CAUSE: AtomicI32 = AtomicI32::new(0);
static CLOSE_RANGE: AtomicU8 = AtomicU8::new(0);

/// `Some` once a spawn has found that pidfds cannot be used in this process; children are then
/// watched through SIGCHLD and `waitid(P_PID, …, WNOWAIT)` (see [`Child::wait`]). Detected
/// once; a caller that reports it should report it once.
pub fn pidfd_unavailable() -> Option<PidfdUnavailable> {
    if PIDFD.load(Ordering::Acquire) != 2 {
        return None;
    }
    Some(match PIDFD_CAUSE.load(Ordering::Relaxed) {
        0 => PidfdUnavailable::Ignored,
        n if n > 0 => PidfdUnavailable::Refused(Errno::from_raw(n)),
        n => PidfdUnavailable::NoWaitid(Errno::from_raw(n.wrapping_neg())),
    })
}

fn mark_pidfd_unavailable(cause: i32) {
    PIDFD_CAUSE.store(cause, Ordering::Relaxed);
    PIDFD.store(2, Ordering::Release);
}

/// `Some(errno)` once a spawn has found `close_range(2)` refused here; children then close
/// exactly the descriptors the parent listed in `/proc/self/fd` just before the clone.
pub fn close_range_unavailable() -> Option<Errno> {
    match CLOSE_RANGE.load(Ordering::Acquire) {
        0 | 1 => None,
        n => Some(Errno::from_raw(i32::from(n) - 2)),
    }
}

/// The open descriptors ≥ 3 of this process that are not in `keep`, from `/proc/self/fd`.
fn open_descriptors(keep: &[c_int]) -> Result<Vec<c_int>, Errno> {
    use rustix::fs::{Dir, Mode, OFlags};
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
    let dir_fd = rustix::fs::open("/proc/self/fd", flags, Mode::empty())?;
    let own = dir_fd.as_raw_fd();
    let mut list = Vec::new();
    for entry in Dir::read_from(&dir_fd)? {
        let entry = entry?;
        let name = entry.file_name().to_bytes();
        let Some(fd) = core::str::from_utf8(name)
            .ok()
            .and_then(|n| n.parse::<c_int>().ok())
        else {
            continue;
        };
        if fd >= 3 && fd != own && keep.binary_search(&fd).is_err() {
            list.push(fd);
        }
    }
    Ok(list)
}

/// Whether children can close their descriptors with `close_range`; probed once.
fn close_range_works() -> bool {
    match CLOSE_RANGE.load(Ordering::Acquire) {
        1 => true,
        0 => match crate::raw::close_range_probe() {
            Ok(()) => {
                CLOSE_RANGE.store(1, Ordering::Release);
                true
            }
            Err(e) => {
                let code = u8::try_from(e.raw().saturating_add(2)).unwrap_or(u8::MAX);
                CLOSE_RANGE.store(code.max(2), Ordering::Release);
                false
            }
        },
        _ => false,
    }
}

/// The PIDs of live [`Child`] values, so that [`wait::Subreaper::reap_orphans`] leaves them to
/// their owners. Lock-free: 64 slots, and a count of children that found no slot (while it is
/// not 0, no unowned child is reaped). `SPAWNING` counts spawns between clone and registration.
pub(crate) mod registry {
    use core::sync::atomic::{AtomicI32, AtomicUsize, Ordering};

    static SLOTS: [AtomicI32; 64] = [const { AtomicI32::new(0) }; 64];
    pub(crate) static OVERFLOW: AtomicUsize = AtomicUsize::new(0);
    pub(crate) static SPAWNING: AtomicUsize = AtomicUsize::new(0);

    /// Records `pid`; returns whether it found a slot.
    pub(crate) fn register(pid: i32) -> bool {
        for slot in &SLOTS {
            if slot
                .compare_exchange(0, pid, Ordering::SeqCst, Ordering::SeqCst)
                .is_ok()
            {
                return true;
            }
        }
        OVERFLOW.fetch_add(1, Ordering::SeqCst);
        false
    }

    pub(crate) fn unregister(pid: i32, had_slot: bool) {
        if !had_slot {
            OVERFLOW.fetch_sub(1, Ordering::SeqCst);
            return;
        }
        for slot in &SLOTS {
            if slot
                .compare_exchange(pid, 0, Ordering::SeqCst, Ordering::SeqCst)
                .is_ok()
            {
                return;
            }
        }
    }

    /// Whether `pid` may belong to a `Child` (registered, or being registered right now).
    pub(crate) fn may_be_owned(pid: i32) -> bool {
        SPAWNING.load(Ordering::SeqCst) != 0
            || OVERFLOW.load(Ordering::SeqCst) != 0
            || SLOTS.iter().any(|slot| slot.load(Ordering::SeqCst) == pid)
    }
}

/// Counts a spawn in progress for as long as it lives.
struct Spawning;

impl Spawning {
    fn start() -> Spawning {
        registry::SPAWNING.fetch_add(1, Ordering::SeqCst);
        Spawning
    }
}

impl Drop for Spawning {
    fn drop(&mut self) {
        registry::SPAWNING.fetch_sub(1, Ordering::SeqCst);
    }
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

    /// Starts the program with vfork semantics (see [`crate::raw::child`]); safe to call from
    /// any thread of a multi-threaded program. Returns once the child has called `execve`, or
    /// has died before it without reporting a failure (killed by a signal: the wait status
    /// tells, as with `posix_spawn`). On failure the child has been reaped already.
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
        let requested = [options.stdin, options.stdout, options.stderr];
        for (target, (fd, keep)) in requested.iter().zip(lifted.iter_mut()).enumerate() {
            if let Some(fd) = fd {
                let raw = fd.as_raw_fd();
                if raw < 3 && raw != target as i32 {
                    let copy = rustix::io::fcntl_dupfd_cloexec(fd, 3)
                        .map_err(|e| SpawnError::parent(e.into()))?;
                    *keep = Some(copy);
                }
            }
        }
        let mut stdio = [-1 as c_int; 3];
        for (target, (slot, (fd, copy))) in stdio
            .iter_mut()
            .zip(requested.iter().zip(lifted.iter()))
            .enumerate()
        {
            let fd = copy.as_ref().map(|c| c.as_fd()).or(*fd);
            // Installing a descriptor on its own slot is inheriting it.
            *slot = match fd.map(|fd| fd.as_raw_fd()) {
                Some(raw) if raw != target as c_int => raw,
                _ => -1,
            };
        }
        let mut keep: Vec<c_int> = options.keep_fds.iter().map(|fd| fd.as_raw_fd()).collect();
        keep.sort_unstable();
        keep.dedup();
        if keep.first().is_some_and(|&fd| fd < 3) {
            return Err(SpawnError::parent(Errno::INVAL));
        }
        let (ranges, list) = if close_range_works() {
            (crate::child_plan::gaps(&keep), Vec::new())
        } else {
            let list = open_descriptors(&keep).map_err(|errno| SpawnError {
                stage: ChildStage::CloseDescriptors,
                errno,
            })?;
            (Vec::new(), list)
        };
        let closing = if ranges.is_empty() {
            Closing::Each(&list)
        } else {
            Closing::Ranges(&ranges)
        };
        let mut plan = ChildPlan {
            stdio,
            keep: &keep,
            closing,
            cwd: options.cwd,
            new_process_group: options.new_process_group,
            handled: options.handled_signals.map(SigSet::bits),
            mask: options.signal_mask.map(SigSet::bits),
            pidfd: PIDFD.load(Ordering::Acquire) != 2,
        };
        let spawning = Spawning::start();
        let mut spawned = child::spawn(image, &plan, stack);
        if let Err((1, errno)) = spawned {
            let refusal = [
                Errno::NOSYS,
                Errno::PERM,
                Errno::INVAL,
                Errno::FAULT,
                Errno::ACCES,
            ];
            if plan.pidfd && refusal.contains(&errno) {
                mark_pidfd_unavailable(errno.raw());
                plan.pidfd = false;
                spawned = child::spawn(image, &plan, stack);
            }
        }
        let spawned = spawned.map_err(|(stage, errno)| SpawnError {
            stage: ChildStage::from_raw(stage),
            errno,
        })?;
        if spawned.pidfd_ignored {
            mark_pidfd_unavailable(0);
        }
        let pidfd = spawned
            .pidfd
            .and_then(|fd| match PIDFD.load(Ordering::Acquire) {
                1 => Some(fd),
                _ => match wait::exited_by_pidfd(fd.as_fd()) {
                    Err(e) if e == Errno::INVAL || e == Errno::NOSYS => {
                        mark_pidfd_unavailable(e.raw().wrapping_neg());
                        None
                    }
                    _ => {
                        PIDFD.store(1, Ordering::Release);
                        Some(fd)
                    }
                },
            });
        let registered = registry::register(spawned.pid);
        drop(spawning);
        Ok(Child {
            pid: spawned.pid,
            pidfd,
            new_process_group: options.new_process_group,
            registered,
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
    /// `None` (the default): the child asks the kernel for each signal's disposition and resets
    /// every handled one — a program embedding this crate (and Rust's std, for SIGSEGV and
    /// SIGBUS) installs handlers this crate does not know about. `Some(set)`: the caller vouches
    /// that no signal outside `set` has a handler now (e.g. a single-threaded program that read
    /// them with [`crate::signal::handled_signals`] and installs none later); the child then
    /// resets `set` and SIGPIPE without asking. A wrong set lets a parent's handler run in the
    /// child on the parent's memory.
    pub handled_signals: Option<SigSet>,
}

/// A running (or exited, not yet reaped) child, holding its pidfd when the kernel gave one.
///
/// Every operation goes through the pidfd, so none can act on another process that reuses the
/// PID after an outside reap. Without pidfds ([`pidfd_unavailable`]) the PID is used, and is safe
/// as long as nobody else in the process reaps this child (this crate never does: see
/// [`wait::Subreaper`]). Reap it with [`Child::reap`]: a child dropped unreaped stays a zombie.
#[must_use = "a child must be reaped with `reap`, or it stays a zombie"]
#[derive(Debug)]
pub struct Child {
    pid: i32,
    pidfd: Option<OwnedFd>,
    new_process_group: bool,
    registered: bool,
}

impl Child {
    /// The child's process ID.
    pub fn pid(&self) -> i32 {
        self.pid
    }

    /// The child's pidfd, if the kernel gave one (close-on-exec).
    pub fn pidfd(&self) -> Option<BorrowedFd<'_>> {
        self.pidfd.as_ref().map(|fd| fd.as_fd())
    }

    /// Waits until the child exits, a signal arrives on `signals`, or the CLOCK_MONOTONIC
    /// `deadline_ns` passes. The child is not reaped: look at it, then call [`Child::reap`].
    ///
    /// With a pidfd this polls it; without, it polls `signals` (which should watch SIGCHLD:
    /// each one triggers `waitid(P_PID, pid, WEXITED | WNOHANG | WNOWAIT)`) with the same
    /// deadline, and checks every millisecond when `signals` does not watch SIGCHLD.
    pub fn wait(
        &self,
        signals: Option<&SignalFd>,
        deadline_ns: Option<u64>,
    ) -> Result<WaitEvent, Errno> {
        match &self.pidfd {
            Some(fd) => wait::wait_exit(fd.as_fd(), signals, deadline_ns),
            None => wait::wait_exit_by_pid(self.pid, signals, deadline_ns),
        }
    }

    /// Whether the child has exited (a zombie waiting to be reaped), without reaping it.
    pub fn has_exited(&self) -> Result<bool, Errno> {
        match &self.pidfd {
            Some(fd) => wait::exited_by_pidfd(fd.as_fd()),
            None => wait::has_exited(self.pid),
        }
    }

    /// If the child is stopped, the signal that stopped it (without consuming the report).
    pub fn stopped_by(&self) -> Result<Option<Signal>, Errno> {
        wait::stopped_by(self.pid, self.pidfd())
    }

    /// Sends `signal` to the child through its pidfd (`pidfd_send_signal`). Without a pidfd,
    /// or where that call is refused (ENOSYS, EPERM from a seccomp filter), `kill` after
    /// checking that the child is still unreaped: `ESRCH` rather than another process.
    pub fn signal(&self, signal: Signal) -> Result<(), Errno> {
        if let Some(fd) = &self.pidfd {
            match crate::raw::pidfd_send_signal(fd.as_fd(), signal.raw(), 0) {
                Err(Errno::NOSYS | Errno::PERM) => {}
                other => return other,
            }
        }
        wait::still_unreaped(self.pid, self.pidfd())?;
        crate::raw::kill(self.pid, signal.raw())
    }

    /// Sends `signal` to the child's process group if the child leads one of its own, else to
    /// the child alone. The group is addressed through the pidfd where the kernel can (≥ 6.9,
    /// `PIDFD_SIGNAL_PROCESS_GROUP`), else by `kill(-pgid)` after checking that the leader is
    /// still unreaped (while it is, its PID, and so the group's ID, cannot be reused).
    pub fn signal_group(&self, signal: Signal) -> Result<(), Errno> {
        if !self.new_process_group {
            return self.signal(signal);
        }
        if let Some(fd) = &self.pidfd {
            let flag = crate::abi::PIDFD_SIGNAL_PROCESS_GROUP;
            match crate::raw::pidfd_send_signal(fd.as_fd(), signal.raw(), flag) {
                Err(Errno::INVAL | Errno::NOSYS | Errno::PERM) => {}
                other => return other,
            }
        }
        wait::still_unreaped(self.pid, self.pidfd())?;
        crate::raw::kill_group(self.pid, signal.raw())
    }

    /// Reaps the child with a hand-written `wait4`, blocking until it exits, and returns its
    /// wait status and resource usage (the child's plus its waited-for descendants').
    ///
    /// With a pidfd, the exit is awaited on it (`waitid(P_PIDFD, …, WEXITED | WNOWAIT)`), so
    /// `wait4` then reaps this very zombie; `ECHILD` if someone else reaped the child first.
    pub fn reap(self) -> Result<(WaitStatus, ResourceUsage), Errno> {
        let options = match &self.pidfd {
            Some(fd) => {
                wait::await_exit_by_pidfd(fd.as_fd())?;
                crate::abi::Wait4Options::NOHANG
            }
            None => crate::abi::Wait4Options::BLOCK,
        };
        match wait::wait4(self.pid, options)? {
            Some((_, status, usage)) => Ok((status, usage)),
            None => Err(Errno::CHILD),
        }
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        registry::unregister(self.pid, self.registered);
    }
}
