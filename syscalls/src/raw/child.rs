//! The vfork-semantics spawn: `clone(CLONE_VM | CLONE_VFORK | SIGCHLD)` on a private stack, and
//! the code that runs in the child until `execve`.
//!
//! # The shape (after musl's `posix_spawn`)
//! - Every input the child needs is prepared by the parent, before `clone`, in one
//!   [`ChildInputs`] value in the parent's stack frame. The parent is suspended by the kernel
//!   until the child has called `execve` or exited (`CLONE_VFORK`), so that frame outlives every
//!   access the child makes.
//! - The trampoline is the C library's `clone`: it switches to [`ChildStack`], calls
//!   [`child_entry`] and would exit if it returned — it never does, so nothing returns twice into
//!   Rust code (the reason `vfork()` itself cannot be called soundly from Rust).
//! - The child makes raw system calls only ([`super::syscall6`]): no allocation, lock, panic,
//!   `Drop`, unwinding, TLS or `errno`. It ends in `execve` or `exit_group(127)`.
//! - The parent blocks every signal around `clone`. The child resets every handled signal (and
//!   SIGPIPE) to `SIG_DFL` — otherwise a parent's handler could run in the child while it shares
//!   the parent's memory — then installs the requested mask right before `execve`.
//! - A failure in the child is written to two atomics in [`ChildInputs`] (the shared memory
//!   is the channel; no pipe is needed), the child exits 127, and the parent reaps it before
//!   returning the error, so no zombie is left.
#![allow(unsafe_code)]

use super::{check, nr, syscall6};
use crate::errno::Errno;
use crate::signal::{SigSet, Signal, MAX_SIGNAL};
use alloc::vec::Vec;
use core::ffi::{c_char, c_int, c_void, CStr};
use core::marker::PhantomData;
use core::sync::atomic::{AtomicI32, AtomicU32, Ordering};
use rustix::fd::{AsRawFd, BorrowedFd};

extern "C" {
    /// glibc and musl: `int clone(int (*fn)(void *), void *stack, int flags, void *arg, ...)`.
    /// Declared by hand: the crate links against the platform C library, not the `libc` crate.
    fn clone(
        func: extern "C" fn(*mut c_void) -> c_int,
        stack: *mut c_void,
        flags: c_int,
        arg: *mut c_void,
        ...
    ) -> c_int;

    /// glibc and musl: the address of the calling thread's `errno`.
    fn __errno_location() -> *mut c_int;
}

const CLONE_VM: c_int = 0x0000_0100;
const CLONE_VFORK: c_int = 0x0000_4000;
const SIGCHLD: c_int = 17;

/// The child's private stack: an anonymous mapping with a `PROT_NONE` guard page below it.
///
/// Reused across spawns: its top pages are touched once, here, so that children do not take
/// (and get billed for) page faults on memory the runner provides.
pub struct ChildStack {
    base: *mut c_void,
    len: usize,
}

impl ChildStack {
    /// Usable bytes above the guard page. The child's frames need a few KiB; 64 KiB leaves room
    /// for unoptimised debug builds.
    pub const USABLE_BYTES: usize = 64 * 1024;
    const PRETOUCHED_BYTES: usize = 16 * 1024;

    /// Maps a new stack.
    ///
    /// # References
    /// [mmap(2)](https://man7.org/linux/man-pages/man2/mmap.2.html),
    /// [mprotect(2)](https://man7.org/linux/man-pages/man2/mprotect.2.html)
    pub fn new() -> Result<ChildStack, Errno> {
        use rustix::mm::{MapFlags, MprotectFlags, ProtFlags};
        let page = rustix::param::page_size();
        let len = Self::USABLE_BYTES + page;
        // SAFETY:
        // - A null hint lets the kernel pick fresh addresses; no existing mapping or Rust-owned
        //   memory is replaced. The new mapping is owned by the returned `ChildStack` alone.
        let base = unsafe {
            rustix::mm::mmap_anonymous(
                core::ptr::null_mut(),
                len,
                ProtFlags::READ | ProtFlags::WRITE,
                MapFlags::PRIVATE | MapFlags::STACK,
            )
        }
        .map_err(Errno::from)?;
        let stack = ChildStack { base, len };
        // SAFETY: `base..base+page` is the lowest page of the mapping owned by `stack`; nothing
        // refers to it, so making it inaccessible (the guard page) breaks no reference.
        unsafe { rustix::mm::mprotect(base, page, MprotectFlags::empty()) }.map_err(Errno::from)?;
        let touched = stack
            .top()
            .wrapping_sub(Self::PRETOUCHED_BYTES)
            .cast::<u8>();
        // SAFETY: `touched..top` lies inside the writable part of the mapping (16 KiB < 64 KiB),
        // is page aligned, owned by `stack`, and not borrowed by anything; bytes are plain `u8`.
        unsafe { core::ptr::write_bytes(touched, 0, Self::PRETOUCHED_BYTES) };
        Ok(stack)
    }

    /// The highest address: the initial stack pointer (page aligned, so 16-byte aligned).
    fn top(&self) -> *mut c_void {
        self.base.wrapping_byte_add(self.len)
    }
}

impl Drop for ChildStack {
    fn drop(&mut self) {
        // SAFETY: `base`/`len` is exactly the mapping created in `new`, owned by `self` and no
        // longer used (a spawn borrows the stack mutably, so none is running).
        let _ = unsafe { rustix::mm::munmap(self.base, self.len) };
    }
}

/// The program image to execute: path, argv and envp as NUL-terminated pointer arrays whose
/// strings are borrowed for `'a`.
pub struct ExecImage<'a> {
    path: &'a CStr,
    argv: Vec<*const c_char>,
    envp: Vec<*const c_char>,
    _strings: PhantomData<&'a CStr>,
}

impl<'a> ExecImage<'a> {
    /// Builds the pointer arrays (in the parent, before any clone).
    pub fn new<A, E>(path: &'a CStr, argv: A, envp: E) -> ExecImage<'a>
    where
        A: IntoIterator<Item = &'a CStr>,
        E: IntoIterator<Item = &'a CStr>,
    {
        let arrays = |it: &mut dyn Iterator<Item = &'a CStr>| {
            let mut v: Vec<*const c_char> = it.map(CStr::as_ptr).collect();
            v.push(core::ptr::null());
            v
        };
        ExecImage {
            path,
            argv: arrays(&mut argv.into_iter()),
            envp: arrays(&mut envp.into_iter()),
            _strings: PhantomData,
        }
    }
}

/// Everything about the child's process state apart from the image.
#[derive(Clone, Copy, Default)]
pub struct ChildSetup<'a> {
    /// Descriptors to install as 0, 1, 2 (`None`: inherit the parent's). Each must be ≥ 3 or
    /// equal to its own slot, so that installing one can never clobber another.
    pub stdio: [Option<BorrowedFd<'a>>; 3],
    /// Further descriptors (≥ 3) to keep open under their own numbers; every other descriptor
    /// above 2 is closed in the child.
    pub keep_fds: &'a [BorrowedFd<'a>],
    /// Directory to change to before `execve`.
    pub cwd: Option<&'a CStr>,
    /// Put the child in a new process group of its own (`setpgid(0, 0)`).
    pub new_process_group: bool,
    /// The signal mask the program starts with; `None` keeps the caller's mask.
    pub signal_mask: Option<SigSet>,
}

/// The step of the child's set-up that failed.
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
    /// Closing inherited descriptors.
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

/// A spawn that did not reach the new program: which step failed, with which error.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChildFailure {
    /// The failed step.
    pub stage: ChildStage,
    /// The kernel's error.
    pub errno: Errno,
}

/// What the child reads, prepared by the parent before `clone` and alive (in the suspended
/// parent's frame) for as long as the child runs before `execve`.
struct ChildInputs<'a> {
    image: &'a ExecImage<'a>,
    stdio: [c_int; 3],
    keep: &'a [c_int],
    cwd: Option<&'a CStr>,
    new_process_group: bool,
    mask: SigSet,
    failed_stage: AtomicU32,
    failed_errno: AtomicI32,
}

/// Starts `image` with `setup` on `stack`, with vfork semantics. Returns the child's PID once
/// it has called `execve` successfully; the parent is suspended until then.
///
/// On failure the child has already been reaped: no zombie is left.
///
/// # References
/// [clone(2)](https://man7.org/linux/man-pages/man2/clone.2.html),
/// [execve(2)](https://man7.org/linux/man-pages/man2/execve.2.html)
pub fn spawn(
    image: &ExecImage<'_>,
    setup: &ChildSetup<'_>,
    stack: &mut ChildStack,
) -> Result<i32, ChildFailure> {
    let invalid = ChildFailure {
        stage: ChildStage::Clone,
        errno: Errno::INVAL,
    };
    let mut stdio = [-1 as c_int; 3];
    for (slot, (target, fd)) in stdio.iter_mut().zip(setup.stdio.iter().enumerate()) {
        if let Some(fd) = fd {
            let raw = fd.as_raw_fd();
            if raw < 3 && raw != target as c_int {
                return Err(invalid);
            }
            // Installing a descriptor on its own slot is inheriting it.
            *slot = if raw == target as c_int { -1 } else { raw };
        }
    }
    let mut keep: Vec<c_int> = setup.keep_fds.iter().map(|fd| fd.as_raw_fd()).collect();
    keep.sort_unstable();
    keep.dedup();
    if keep.first().is_some_and(|&fd| fd < 3) {
        return Err(invalid);
    }

    let old_mask =
        super::sigprocmask(super::MaskHow::SetMask, Some(SigSet::FULL)).map_err(|errno| {
            ChildFailure {
                stage: ChildStage::Clone,
                errno,
            }
        })?;
    let inputs = ChildInputs {
        image,
        stdio,
        keep: &keep,
        cwd: setup.cwd,
        new_process_group: setup.new_process_group,
        mask: setup.signal_mask.unwrap_or(old_mask),
        failed_stage: AtomicU32::new(0),
        failed_errno: AtomicI32::new(0),
    };
    // SAFETY:
    // - `child_entry` never returns (it ends in execve or exit_group): nothing returns twice.
    // - `stack.top()`: 16-byte-aligned top of a live, writable 64 KiB mapping, borrowed mutably.
    // - `arg` is `&inputs` in this frame; CLONE_VFORK suspends us until the child has exec'd or
    //   exited, so it outlives every access; the child only reads it and stores two atomics.
    // - All signals are blocked: no handler of ours can run in the child before it resets them.
    let pid = unsafe {
        clone(
            child_entry,
            stack.top(),
            CLONE_VM | CLONE_VFORK | SIGCHLD,
            &inputs as *const ChildInputs<'_> as *mut c_void,
        )
    };
    let clone_errno = if pid < 0 {
        // SAFETY: `__errno_location` has no preconditions; it returns this thread's errno slot.
        let slot = unsafe { __errno_location() };
        // SAFETY: `slot` is the valid, aligned, live `int` of this thread's errno, which the
        // failed `clone` has just set; nothing writes it between that call and this read.
        Some(Errno::from_raw(unsafe { *slot }))
    } else {
        None
    };
    let restored = super::sigprocmask(super::MaskHow::SetMask, Some(old_mask));
    if let Some(errno) = clone_errno {
        return Err(ChildFailure {
            stage: ChildStage::Clone,
            errno,
        });
    }
    let stage = inputs.failed_stage.load(Ordering::Acquire);
    if stage != 0 {
        let errno = Errno::from_raw(inputs.failed_errno.load(Ordering::Relaxed));
        // The child has exited with 127 (CLONE_VFORK resumed us): reap it so no zombie remains.
        let _ = super::wait4(pid, super::Wait4Options::BLOCK);
        return Err(ChildFailure {
            stage: ChildStage::from_raw(stage),
            errno,
        });
    }
    restored.map_err(|errno| ChildFailure {
        stage: ChildStage::Clone,
        errno,
    })?;
    Ok(pid)
}

/// The child's entry point, called by the C library's `clone` on [`ChildStack`].
extern "C" fn child_entry(arg: *mut c_void) -> c_int {
    // SAFETY: `arg` is the `&ChildInputs` that `spawn` passed to clone: non-null, aligned, and
    // alive for as long as this child runs (the parent is suspended in that frame). It is only
    // read, apart from its atomics, so a shared reference is sound.
    let inputs = unsafe { &*(arg as *const ChildInputs<'_>) };
    let Err((stage, errno)) = prepare_and_exec(inputs);
    inputs.failed_errno.store(errno.raw(), Ordering::Relaxed);
    inputs.failed_stage.store(stage as u32, Ordering::Release);
    exit_group(127)
}

// Everything below runs in the child, on `ChildStack`, sharing the parent's memory: raw system
// calls only, no allocation, no panic path (no indexing, no overflowing arithmetic), no TLS.
// The child has its own copy of the descriptor table and of the signal dispositions (no
// CLONE_FILES, no CLONE_SIGHAND), so closing descriptors or resetting handlers here cannot
// affect the parent or any Rust value that owns a descriptor there.

/// Returns only on failure; on success `execve` replaces the image.
fn prepare_and_exec(c: &ChildInputs<'_>) -> Result<core::convert::Infallible, (ChildStage, Errno)> {
    let at = |stage: ChildStage| move |errno: Errno| (stage, errno);
    reset_signals().map_err(at(ChildStage::ResetSignals))?;
    if c.new_process_group {
        setpgid_self().map_err(at(ChildStage::SetProcessGroup))?;
    }
    if let Some(dir) = c.cwd {
        chdir(dir).map_err(at(ChildStage::ChangeDirectory))?;
    }
    for (target, &fd) in (0..).zip(c.stdio.iter()) {
        if fd >= 0 {
            dup3(fd, target).map_err(at(ChildStage::RedirectStdio))?;
        }
    }
    close_descriptors(c.keep).map_err(at(ChildStage::CloseDescriptors))?;
    super::sigprocmask(super::MaskHow::SetMask, Some(c.mask))
        .map_err(at(ChildStage::RestoreMask))?;
    Err((ChildStage::Exec, execve(c.image)))
}

/// Resets every signal with a handler, and SIGPIPE, to `SIG_DFL`; ignored signals stay ignored
/// (as `posix_spawn` and shells do); SIGKILL and SIGSTOP cannot be changed.
fn reset_signals() -> Result<(), Errno> {
    use super::Disposition;
    for sig in 1..=MAX_SIGNAL {
        let signal = Signal::from_raw(sig);
        if signal == Signal::KILL || signal == Signal::STOP {
            continue;
        }
        let handled = super::disposition(signal)? == Disposition::Handler;
        if handled || signal == Signal::PIPE {
            super::set_default_disposition(signal)?;
        }
    }
    Ok(())
}

/// Closes every descriptor above 2 except `keep` (sorted, each ≥ 3), whose close-on-exec flag
/// is cleared so that they survive `execve`.
fn close_descriptors(keep: &[c_int]) -> Result<(), Errno> {
    let mut from: u32 = 3;
    for &fd in keep.iter() {
        let fd = fd as u32;
        if fd > from {
            close_range(from, fd - 1)?;
        }
        clear_cloexec(fd as c_int)?;
        from = fd.saturating_add(1);
    }
    close_range(from, u32::MAX)
}

/// `setpgid(0, 0)`: a new process group led by the child.
fn setpgid_self() -> Result<(), Errno> {
    // SAFETY: integer arguments only; changing the child's own process group touches no memory.
    check(unsafe { syscall6(nr::SETPGID, [0; 6]) }).map(|_| ())
}

/// `chdir(dir)`.
fn chdir(dir: &CStr) -> Result<(), Errno> {
    // SAFETY: `dir` is a NUL-terminated string borrowed for the call (it lives in the suspended
    // parent's frame); the kernel only reads it.
    check(unsafe { syscall6(nr::CHDIR, [dir.as_ptr() as usize, 0, 0, 0, 0, 0]) }).map(|_| ())
}

/// `dup3(fd, target, 0)`: installs `fd` (≥ 3, checked by `spawn`) as `target` (0, 1 or 2).
fn dup3(fd: c_int, target: c_int) -> Result<(), Errno> {
    // SAFETY: integer arguments only; replacing 0/1/2 in the child's own descriptor table
    // cannot close a descriptor that a Rust value in the parent owns.
    check(unsafe { syscall6(nr::DUP3, [fd as usize, target as usize, 0, 0, 0, 0]) }).map(|_| ())
}

/// `fcntl(fd, F_SETFD, 0)`: clears close-on-exec so `fd` survives `execve`.
fn clear_cloexec(fd: c_int) -> Result<(), Errno> {
    const F_SETFD: usize = 2;
    // SAFETY: integer arguments only; changes a flag of the child's own descriptor.
    check(unsafe { syscall6(nr::FCNTL, [fd as usize, F_SETFD, 0, 0, 0, 0]) }).map(|_| ())
}

/// `close_range(first, last, 0)` (Linux ≥ 5.9), falling back to closing one by one up to 4095.
fn close_range(first: u32, last: u32) -> Result<(), Errno> {
    // SAFETY: integer arguments only; closes descriptors of the child's own table, none of which
    // is used by code running in the child.
    match check(unsafe { syscall6(nr::CLOSE_RANGE, [first as usize, last as usize, 0, 0, 0, 0]) }) {
        Err(Errno::NOSYS) => {
            let mut fd = first;
            while fd <= last && fd < 4096 {
                // SAFETY: as above, for one descriptor; EBADF for unused numbers is ignored.
                let _ = unsafe { syscall6(nr::CLOSE, [fd as usize, 0, 0, 0, 0, 0]) };
                fd += 1;
            }
            Ok(())
        }
        other => other.map(|_| ()),
    }
}

/// `execve(path, argv, envp)`: returns only on failure, with the error.
fn execve(image: &ExecImage<'_>) -> Errno {
    let (path, argv, envp) = (
        image.path.as_ptr(),
        image.argv.as_ptr(),
        image.envp.as_ptr(),
    );
    // SAFETY: `path` is NUL-terminated; `argv` and `envp` are NUL-pointer-terminated arrays of
    // NUL-terminated strings, all borrowed for `'a` by the `ExecImage` (built by `new`, never
    // mutated), which lives in the suspended parent's frame. The kernel only reads them.
    let ret = unsafe {
        syscall6(
            nr::EXECVE,
            [path as usize, argv as usize, envp as usize, 0, 0, 0],
        )
    };
    check(ret).err().unwrap_or(Errno::INVAL)
}

/// `exit_group(status)`: ends the child without running any Rust code.
fn exit_group(status: c_int) -> ! {
    // SAFETY: integer argument only; the call does not return.
    let _ = unsafe { syscall6(nr::EXIT_GROUP, [status as usize, 0, 0, 0, 0, 0]) };
    #[allow(clippy::empty_loop)]
    loop {}
}
