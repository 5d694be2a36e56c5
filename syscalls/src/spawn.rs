//! The safe side of spawning: PATH lookup with execvp semantics, a [`Program`] prepared once and
//! spawned many times, and the [`Child`] handle.
#![forbid(unsafe_code)]

use crate::child_plan::{ChildPlan, CloneCall, Closing};
use crate::errno::Errno;
use crate::exec_image::{SpawnFailure, Spawned};
use crate::owners::{self, Spawning};
use crate::parent_side::{self, ErrorPipe};
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

pub use crate::exec_image::ExecImage;
pub use crate::raw::spawn::{ChildStack, HandledSignals};

/// The default search path when `PATH` is unset (glibc's `confstr(_CS_PATH)`).
pub const DEFAULT_PATH: &[u8] = b"/bin:/usr/bin";

/// Finds `name` as `execvp(3)` would, but in the parent and without running anything.
///
/// A name containing `/` is used as it is. Otherwise each directory of `path` is tried in order
/// (an empty entry means the current directory). The result keeps "not found" apart from "found
/// but not executable": `ENOENT` when no candidate exists, `EACCES` when one exists but is not
/// an executable regular file (a directory, or no execute permission). `ENOEXEC` (a file the
/// kernel cannot run) can only be known from `execve` and comes back from [`Program::spawn`],
/// unless the program asked to run such a file through `/bin/sh` as `execvp` does
/// ([`Program::scripts_through_shell`]).
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
    /// The child had started, then the calling thread's signal mask could not be restored; the
    /// child was killed and reaped.
    RestoreCallerMask = 9,
    /// `prctl(PR_SET_PDEATHSIG)` (see [`SpawnOptions::parent_death_signal`]): EINVAL for a
    /// number that is not a signal.
    ParentDeathSignal = 10,
}

impl ChildStage {
    pub(crate) fn from_raw(raw: u32) -> ChildStage {
        match raw {
            2 => ChildStage::ResetSignals,
            3 => ChildStage::SetProcessGroup,
            4 => ChildStage::ChangeDirectory,
            5 => ChildStage::RedirectStdio,
            6 => ChildStage::CloseDescriptors,
            7 => ChildStage::RestoreMask,
            8 => ChildStage::Exec,
            9 => ChildStage::RestoreCallerMask,
            10 => ChildStage::ParentDeathSignal,
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

    fn from_failure(failure: SpawnFailure) -> SpawnError {
        match failure {
            SpawnFailure::NotStarted(errno) => SpawnError::parent(errno),
            SpawnFailure::Child(stage, errno) => SpawnError {
                stage: ChildStage::from_raw(stage),
                errno,
            },
            SpawnFailure::MaskNotRestored(errno) => SpawnError {
                stage: ChildStage::RestoreCallerMask,
                errno,
            },
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
    /// `pidfd_open` failed with this error (< 5.3, a seccomp filter).
    OpenRefused(Errno),
}

impl fmt::Display for PidfdUnavailable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PidfdUnavailable::Ignored => f.write_str("the kernel ignores CLONE_PIDFD"),
            PidfdUnavailable::Refused(e) => write!(f, "clone with CLONE_PIDFD failed: {e}"),
            PidfdUnavailable::NoWaitid(e) => write!(f, "waitid(P_PIDFD) failed: {e}"),
            PidfdUnavailable::OpenRefused(e) => write!(f, "pidfd_open failed: {e}"),
        }
    }
}

// Detected once per process, at the first spawn that needs it. States: 0 unknown, 1 yes, 2 no.
static PIDFD: AtomicU8 = AtomicU8::new(0);
// The cause when PIDFD = 2: 0 ignored, > 0 refused with that errno, < 0 no waitid (-errno),
// ≤ PIDFD_OPEN_REFUSED pidfd_open refused (PIDFD_OPEN_REFUSED - errno).
static PIDFD_CAUSE: AtomicI32 = AtomicI32::new(0);
const PIDFD_OPEN_REFUSED: i32 = -(1 << 20);
static CLOSE_RANGE: AtomicU8 = AtomicU8::new(0);
// clone3 with CLONE_CLEAR_SIGHAND: 0 unknown, 1 works, > 1 refused with errno (n - 2).
static CLONE3: AtomicI32 = AtomicI32::new(0);
// Whether CLONE_VM really shares memory with the child: 0 unknown, 1 shared, 2 copied
// (valgrind and qemu-user turn CLONE_VM | CLONE_VFORK into a fork).
static MEMORY: AtomicU8 = AtomicU8::new(0);

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
        n if n <= PIDFD_OPEN_REFUSED => {
            PidfdUnavailable::OpenRefused(Errno::from_raw(PIDFD_OPEN_REFUSED - n))
        }
        n => PidfdUnavailable::NoWaitid(Errno::from_raw(n.wrapping_neg())),
    })
}

fn mark_pidfd_unavailable(cause: i32) {
    PIDFD_CAUSE.store(cause, Ordering::Relaxed);
    PIDFD.store(2, Ordering::Release);
}

/// `Some(errno)` once a spawn has found `clone3(2)` (with `CLONE_CLEAR_SIGHAND`, Linux ≥ 5.5)
/// refused here (an old kernel, a seccomp filter, an emulator); children are then started with
/// `clone(2)` and reset handled signals themselves (see [`SpawnOptions::handled_signals`]).
pub fn clone3_unavailable() -> Option<Errno> {
    match CLONE3.load(Ordering::Acquire) {
        0 | 1 => None,
        n => Some(Errno::from_raw(n - 2)),
    }
}

/// `Some(false)` once a spawn has found that a `CLONE_VM` child's writes do not reach this
/// process's memory (valgrind and qemu-user emulate `CLONE_VM | CLONE_VFORK` with a fork):
/// children then report a failure before `execve` through a close-on-exec pipe, as musl's
/// `posix_spawn` always does. `Some(true)`: memory is shared, no pipe is needed. `None`: no
/// child has been started yet (the first spawn uses the pipe and looks).
pub fn clone_vm_shares_memory() -> Option<bool> {
    match MEMORY.load(Ordering::Acquire) {
        1 => Some(true),
        2 => Some(false),
        _ => None,
    }
}

/// `Some(errno)` once a spawn has found `close_range(2)` refused here; children then list
/// `/proc/self/fd` themselves, after the clone, and close what they find.
pub fn close_range_unavailable() -> Option<Errno> {
    match CLOSE_RANGE.load(Ordering::Acquire) {
        0 | 1 => None,
        n => Some(Errno::from_raw(i32::from(n) - 2)),
    }
}

/// Whether children can close their descriptors with `close_range`; probed once.
fn close_range_works() -> bool {
    #[cfg(test)]
    if crate::test_hooks::on(&crate::test_hooks::NO_CLOSE_RANGE) {
        return false;
    }
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

/// A program ready to run: resolved path, argv and envp as C strings. Prepared once, spawned
/// any number of times.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Program {
    path: CString,
    argv: Vec<CString>,
    envp: Vec<CString>,
    through_shell: bool,
}

/// The shell a script without a `#!` line runs through ([`Program::scripts_through_shell`]):
/// glibc's `_PATH_BSHELL`.
pub const SCRIPT_SHELL: &CStr = c"/bin/sh";

impl Program {
    /// A program at `path` (already resolved, e.g. by [`find_program`]) with its full argv
    /// (including argv\[0\]) and environment (`KEY=VALUE` strings, passed exactly).
    pub fn new(path: CString, argv: Vec<CString>, envp: Vec<CString>) -> Program {
        Program {
            path,
            argv,
            envp,
            through_shell: false,
        }
    }

    /// Where the kernel refuses the file as no executable format (`ENOEXEC`: a script without
    /// a `#!` line), the same child runs it with [`SCRIPT_SHELL`] instead (`/bin/sh -- PATH
    /// ARGS…`: see [`ExecImage::or_through_shell`]), as glibc's `execvp` and GNU time do: no
    /// second spawn. Without this, such a
    /// file fails to start with `ENOEXEC`. Only [`Program::spawn`] and [`ExecImage::spawn`]
    /// honour it: a spawner program cannot, and [`crate::spawner::Spawner::spawn`] leaves such
    /// a program to the caller (`Unsupported`).
    pub fn scripts_through_shell(mut self) -> Program {
        self.through_shell = true;
        self
    }

    /// Whether [`Program::scripts_through_shell`] was asked for (a spawner refuses such a
    /// program: the caller spawns it in-process).
    pub fn through_shell(&self) -> bool {
        self.through_shell
    }

    /// The resolved path.
    pub fn path(&self) -> &CStr {
        &self.path
    }

    /// The argument vector, `argv[0]` included.
    pub fn argv(&self) -> &[CString] {
        &self.argv
    }

    /// The environment, `KEY=VALUE` strings.
    pub fn envp(&self) -> &[CString] {
        &self.envp
    }

    /// Starts the program with vfork semantics (see [`crate::raw::spawn`]); safe to call from
    /// any thread of a multi-threaded program. Returns once the child has called `execve`, or
    /// has died before it without reporting a failure (killed by a signal: the wait status
    /// tells, as with `posix_spawn`). On failure the child has been reaped already.
    pub fn spawn(
        &self,
        options: &SpawnOptions<'_>,
        stack: &mut ChildStack,
    ) -> Result<Child, SpawnError> {
        self.image().spawn(options, stack)
    }

    /// The argv/envp pointer arrays `execve` takes, built (allocated) once. A measuring caller
    /// builds them before it starts its clock and calls [`ExecImage::spawn`], so the timed
    /// window holds the spawn and nothing else.
    pub fn image(&self) -> ExecImage<'_> {
        let image = ExecImage::new(
            &self.path,
            self.argv.iter().map(CString::as_c_str),
            self.envp.iter().map(CString::as_c_str),
        );
        if self.through_shell {
            image.or_through_shell(SCRIPT_SHELL)
        } else {
            image
        }
    }
}

impl ExecImage<'_> {
    /// Starts this image: [`Program::spawn`] with the pointer arrays built beforehand.
    pub fn spawn(
        &self,
        options: &SpawnOptions<'_>,
        stack: &mut ChildStack,
    ) -> Result<Child, SpawnError> {
        // Descriptors below 3 are moved up first so that installing one cannot clobber another.
        let lifted = lift_stdio(options)?;
        let requested = [options.stdin, options.stdout, options.stderr];
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
        let ranges;
        let closing = if close_range_works() {
            ranges = crate::exec_image::gaps(&keep);
            Closing::Ranges(&ranges)
        } else {
            Closing::Scan(proc_fd_dir())
        };
        let plan = ChildPlan {
            stdio,
            keep: &keep,
            closing,
            cwd: options.cwd,
            new_process_group: options.new_process_group,
            mask: options.signal_mask.map(SigSet::bits),
            to_default: SigSet::EMPTY.with(Signal::PIPE).bits(),
            vouched: options.handled_signals.map(HandledSignals::bits),
            parent_death_signal: options.parent_death_signal.map(Signal::raw),
        };
        let spawning = Spawning::start();
        let spawned = start(self, &plan, stack, options)?;
        let pidfd = spawned.pidfd.and_then(confirm_pidfd);
        let registered = owners::register(spawned.pid);
        drop(spawning);
        Ok(Child {
            pid: spawned.pid,
            pidfd,
            new_process_group: options.new_process_group,
            registered,
            exited: false,
        })
    }
}

/// Copies of the requested stdio descriptors that are below 3 and not already in place.
fn lift_stdio(options: &SpawnOptions<'_>) -> Result<[Option<OwnedFd>; 3], SpawnError> {
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
    Ok(lifted)
}

/// The directory the child lists when `close_range` is refused.
fn proc_fd_dir() -> &'static CStr {
    #[cfg(test)]
    if crate::test_hooks::on(&crate::test_hooks::NO_PROC) {
        return c"/proc/self/no-such-directory";
    }
    c"/proc/self/fd"
}

/// The errors of `clone3` that mean "not here" (an old kernel, a seccomp filter, an emulator)
/// rather than "not now".
const CLONE3_REFUSED: [Errno; 5] = [
    Errno::NOSYS,
    Errno::PERM,
    Errno::INVAL,
    Errno::TOOBIG,
    Errno::ACCES,
];

/// The clone, with its fallbacks: `clone3` → `clone` (where `clone3` is refused, unless a
/// cgroup was asked for) → `clone` without `CLONE_PIDFD` (where that is refused).
fn start(
    image: &ExecImage<'_>,
    plan: &ChildPlan<'_>,
    stack: &mut ChildStack,
    options: &SpawnOptions<'_>,
) -> Result<Spawned, SpawnError> {
    let cgroup = options.cgroup.map(|fd| fd.as_raw_fd());
    if cgroup.is_some() && options.legacy_clone {
        return Err(SpawnError::parent(Errno::INVAL));
    }
    let clone3_refused = CLONE3.load(Ordering::Acquire) > 1;
    let mut call = if options.legacy_clone || (clone3_refused && cgroup.is_none()) {
        CloneCall::Clone
    } else {
        CloneCall::Clone3 { cgroup }
    };
    let mut pidfd = PIDFD.load(Ordering::Acquire) != 2;
    loop {
        let pipe = error_pipe()?;
        match parent_side::spawn(image, plan, stack, call, pidfd, pipe) {
            Ok(spawned) => {
                if call != CloneCall::Clone {
                    let _ = CLONE3.compare_exchange(0, 1, Ordering::AcqRel, Ordering::Acquire);
                }
                let seen = if spawned.memory_shared { 1 } else { 2 };
                let _ = MEMORY.compare_exchange(0, seen, Ordering::AcqRel, Ordering::Acquire);
                if spawned.pidfd_ignored {
                    mark_pidfd_unavailable(0);
                }
                return Ok(spawned);
            }
            Err(SpawnFailure::NotStarted(e))
                if call == (CloneCall::Clone3 { cgroup: None }) && CLONE3_REFUSED.contains(&e) =>
            {
                CLONE3.store(e.raw().saturating_add(2), Ordering::Release);
                call = CloneCall::Clone;
            }
            Err(SpawnFailure::NotStarted(e))
                if call == CloneCall::Clone && pidfd && PIDFD_REFUSED.contains(&e) =>
            {
                mark_pidfd_unavailable(e.raw());
                pidfd = false;
            }
            Err(failure) => return Err(SpawnError::from_failure(failure)),
        }
    }
}

/// The errors of `clone` with `CLONE_PIDFD` that mean the flag cannot be used here.
const PIDFD_REFUSED: [Errno; 5] = [
    Errno::NOSYS,
    Errno::PERM,
    Errno::INVAL,
    Errno::FAULT,
    Errno::ACCES,
];

/// A close-on-exec pipe for the child's failure report, unless a child's writes are known to
/// reach this process's memory (then the report is read from there: no extra system calls).
fn error_pipe() -> Result<Option<ErrorPipe>, SpawnError> {
    if MEMORY.load(Ordering::Acquire) == 1 {
        return Ok(None);
    }
    let flags = rustix::pipe::PipeFlags::CLOEXEC;
    let (read, write) = rustix::pipe::pipe_with(flags).map_err(|e| SpawnError::parent(e.into()))?;
    let write = if write.as_raw_fd() < 3 {
        rustix::io::fcntl_dupfd_cloexec(&write, 3).map_err(|e| SpawnError::parent(e.into()))?
    } else {
        write
    };
    Ok(Some(ErrorPipe { read, write }))
}

/// Test builds: forgets what the first spawn found about shared memory.
#[cfg(test)]
pub(crate) fn forget_memory_probe() {
    MEMORY.store(0, Ordering::SeqCst);
}

/// Test builds: forgets what a spawn found about `clone3`.
#[cfg(test)]
pub(crate) fn forget_clone3_probe() {
    CLONE3.store(0, Ordering::SeqCst);
}

/// The pidfd, once `waitid(P_PIDFD)` is known to work here (checked on the first one).
fn confirm_pidfd(fd: OwnedFd) -> Option<OwnedFd> {
    match PIDFD.load(Ordering::Acquire) {
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
    /// Only where `clone3` cannot be used (Linux < 5.5, a seccomp filter, an emulator, or
    /// [`SpawnOptions::legacy_clone`]): `None` (the default), the child asks the kernel for
    /// each signal's disposition and resets every handled one — a program embedding this crate
    /// (and Rust's std, for SIGSEGV and SIGBUS) installs handlers this crate does not know
    /// about; `Some`, the child resets just the vouched set and SIGPIPE, saving 62
    /// `rt_sigaction` calls per spawn. A [`HandledSignals`] is made only by an `unsafe` call:
    /// a wrong set would let a parent's handler run in the child on the parent's memory. With
    /// `clone3` the kernel resets every handler itself (`CLONE_CLEAR_SIGHAND`) and this is not
    /// read.
    ///
    /// ```compile_fail,E0133
    /// // Vouching is a promise the compiler cannot check: it must be stated in an `unsafe` block.
    /// let set = coldtrace_syscalls::SigSet::EMPTY;
    /// let vouched = coldtrace_syscalls::HandledSignals::vouch(set);
    /// ```
    ///
    /// ```compile_fail,E0308
    /// // A bare set is not a promise: safe code cannot vouch.
    /// let options = coldtrace_syscalls::SpawnOptions {
    ///     handled_signals: Some(coldtrace_syscalls::SigSet::EMPTY),
    ///     ..Default::default()
    /// };
    /// ```
    pub handled_signals: Option<HandledSignals>,
    /// A cgroup v2 directory (opened `O_RDONLY | O_DIRECTORY`, or `O_PATH`) that the child is
    /// born in (`clone3` with `CLONE_INTO_CGROUP`, Linux ≥ 5.7), so that nothing it does runs
    /// outside it. Where that cannot be done, the spawn fails (stage [`ChildStage::Clone`])
    /// rather than start the child elsewhere.
    pub cgroup: Option<BorrowedFd<'a>>,
    /// The signal the child gets when its parent dies (`prctl(PR_SET_PDEATHSIG)`, asked for
    /// by the child before anything else), e.g. [`Signal::KILL`] so that a killed caller takes
    /// its direct child with it. `None` (the default): the child outlives its parent.
    ///
    /// The kernel's rules, which the caller must know:
    /// - It fires when the **thread** that spawned the child exits, not the process: spawn
    ///   from a thread that outlives the child (the main thread, or one that is joined only
    ///   after the child is reaped), or a finished worker thread kills the child. Through a
    ///   [`crate::spawner::Spawner`] the same holds: the spawner's children are the children
    ///   of the thread that started it, so it refuses the option from any other thread
    ///   (`Unsupported`: spawn that one in-process).
    /// - It reaches the direct child only. A descendant is not covered, and one that left the
    ///   child's process group or session (`setsid`) is reachable only through a cgroup
    ///   ([`SpawnOptions::cgroup`]).
    /// - The kernel clears it when the program execs a set-user-ID or set-group-ID file, or
    ///   one with file capabilities, that changes its credentials.
    /// - The race is handled: if the parent died between the clone and the `prctl` (the kernel
    ///   then never sends the signal), the child sees that its parent is no longer this
    ///   process (`getppid`) and sends the signal to itself, as if the kernel had; SIGKILL
    ///   ends it before `execve`.
    ///
    /// Costs one `getpid` in the parent and a `prctl` and a `getppid` in the child.
    /// See [prctl(2)](https://man7.org/linux/man-pages/man2/prctl.2.html).
    pub parent_death_signal: Option<Signal>,
    /// Start the child with `clone(2)` and the child-side signal reset even where `clone3`
    /// works: the path older kernels take, for tests and benchmarks.
    pub legacy_clone: bool,
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
    /// [`Child::usage_at_exit`] saw it exited: a zombie until [`Child::reap`] takes it.
    exited: bool,
}

impl Child {
    /// A child of this process that another process cloned for it (the spawner's
    /// `CLONE_PARENT` children, [`crate::spawner`]): registered as owned, with `pidfd` (the
    /// one the other process's clone made and handed over) or else one from
    /// [pidfd_open(2)](https://man7.org/linux/man-pages/man2/pidfd_open.2.html), where pidfds
    /// work here. Only for this process's own unreaped child: then nobody else can reap it, so
    /// the PID cannot pass to another process before this `Child` reaps it, and opening the
    /// pidfd by PID is race-free.
    pub(crate) fn adopt(pid: i32, pidfd: Option<OwnedFd>, new_process_group: bool) -> Child {
        let opened = match (
            PIDFD.load(Ordering::Acquire),
            rustix::process::Pid::from_raw(pid),
            pidfd,
        ) {
            (2, _, _) | (_, None, _) => None,
            (_, Some(_), Some(fd)) => confirm_pidfd(fd),
            (_, Some(p), None) => {
                match rustix::process::pidfd_open(p, rustix::process::PidfdFlags::empty()) {
                    Ok(fd) => confirm_pidfd(fd),
                    Err(e) => {
                        mark_pidfd_unavailable(PIDFD_OPEN_REFUSED - e.raw_os_error());
                        None
                    }
                }
            }
        };
        let registered = owners::register(pid);
        Child {
            pid,
            pidfd: opened,
            new_process_group,
            registered,
            exited: false,
        }
    }

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

    /// If the child is stopped, the signal that stopped it (without consuming the report); a
    /// tracing stop for this process as the child's tracer counts (see [`wait::stopped_by`]).
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

    /// The resource usage [`Child::reap`] will return, read from the zombie without reaping it
    /// (`waitid(P_PIDFD, …, WEXITED | WNOHANG | WNOWAIT, &rusage)`): `None` while the child
    /// runs, without a pidfd, or when the kernel refuses. The kernel fills both from the
    /// zombie with `getrusage(RUSAGE_BOTH)`, so they agree; after a `Some`, [`Child::reap`]
    /// skips its own wait for the exit.
    pub fn usage_at_exit(&mut self) -> Option<ResourceUsage> {
        let usage = wait::usage_at_exit(self.pidfd()?).ok()??;
        self.exited = true;
        Some(usage)
    }

    /// Reaps the child with a hand-written `wait4`, blocking until it exits, and returns its
    /// wait status and resource usage (the child's plus its waited-for descendants'). The exit
    /// record is consumed once: on success the `Child` is gone; on failure it comes back in
    /// the [`ReapError`], still registered and still holding its pidfd.
    ///
    /// With a pidfd, the exit is awaited on it (`waitid(P_PIDFD, …, WEXITED | WNOWAIT)`: a
    /// look that leaves the zombie in place), and `wait4(pid)` then reaps it. Nothing in this
    /// crate reaps a PID that a live `Child` owns in between (see [`crate::wait::wait4`] and
    /// [`crate::wait::Subreaper`]), so the PID cannot pass to another process. A host program
    /// that calls `waitpid(-1)` or `wait()` itself can still take the zombie in that window,
    /// and then a new child on the same PID: do not reap by "any child" in a program that
    /// holds `Child` values. `ECHILD` if someone else reaped the child first.
    ///
    /// Why `wait4` and not `waitid(P_PIDFD, …, &rusage)` (which cannot take another process):
    /// the resource usage of `waitid`'s fifth argument is a Linux extension that no C library
    /// exposes, `wait4` is the call the rest of the system (GNU time, shells) measures with,
    /// and it is the only one that works where pidfds do not (Linux < 5.4).
    pub fn reap(self) -> Result<(WaitStatus, ResourceUsage), ReapError> {
        match wait::reap_owned(self.pid, self.pidfd(), self.exited) {
            Ok(done) => Ok(done),
            Err(errno) => Err(ReapError { child: self, errno }),
        }
    }
}

/// Why [`Child::reap`] failed, with the `Child` back.
#[derive(Debug)]
pub struct ReapError {
    /// The child, not reaped.
    pub child: Child,
    /// The kernel's error (`ECHILD`: someone else reaped it).
    pub errno: Errno,
}

impl fmt::Display for ReapError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "cannot reap process {}: {}", self.child.pid, self.errno)
    }
}

#[cfg(feature = "std")]
impl std::error::Error for ReapError {}

impl Drop for Child {
    fn drop(&mut self) {
        owners::unregister(self.pid, self.registered);
    }
}
