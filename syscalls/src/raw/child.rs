//! The vfork-semantics spawn: `clone(CLONE_VM | CLONE_VFORK | CLONE_PIDFD | SIGCHLD)` on a
//! private stack, and the code that runs in the child until `execve`.
//!
//! The shape, after musl's `posix_spawn` (walked through in `syscalls/README.md`): every input
//! is prepared before `clone` in one `ChildInputs` in the parent's frame; the C library's
//! `clone` is the trampoline onto [`ChildStack`], so nothing returns twice into Rust; the child
//! makes raw system calls only — no allocation, lock, panic path, `Drop`, TLS, `errno`, nor any
//! call into `core` (wrapping arithmetic, slice patterns, no indexing), which
//! `syscalls/tests/child_disassembly.rs` checks — and ends in `execve` or `exit_group(127)`.
//! The pidfd comes from the clone itself, so nothing can fail between spawn and wait.
//!
//! # Safe to call from a multi-threaded program (the proof the clone block refers to)
//! - Signals aimed at the parent never reach the child (a new process); signals aimed at the
//!   child stay pending — the calling thread blocked them all — until it has reset every
//!   handled one. Synchronous SIGSEGV/SIGBUS/SIGILL/SIGFPE/SIGSYS cannot be blocked, but the
//!   kernel resets a blocked synchronous signal to `SIG_DFL` before delivering it
//!   (`force_sig_info_to_task`): it kills the child rather than run a handler.
//! - The child keeps the calling thread's `sigaltstack` (cleared only for `CLONE_VM` without
//!   `CLONE_VFORK`); no handler runs, so it is never used.
//! - Other threads keep running on the same memory, but cannot reach `ChildInputs` (a local
//!   of the suspended frame) nor the stack (borrowed mutably); the image is borrowed shared.
//! - The vfork wait is `TASK_KILLABLE`: a fatal signal may end the parent meanwhile, but then
//!   no parent code runs again, and the child holds its own reference to the memory.
#![allow(unsafe_code)]

use super::{sigprocmask, syscall6};
use crate::abi::{clone_flags as cf, nr, MaskHow, F_SETFD};
pub use crate::child_plan::ExecImage;
use crate::child_plan::{ChildPlan, Closing, Spawned};
use crate::errno::{errno_of, Errno};
use core::ffi::{c_char, c_int, c_void, CStr};
use core::marker::PhantomData;
use rustix::fd::{FromRawFd, OwnedFd};

extern "C" {
    /// glibc and musl: `int clone(int (*fn)(void *), void *stack, int flags, void *arg,
    /// ... /* pid_t *parent_tid, void *tls, pid_t *child_tid */)`. Both read `parent_tid` when
    /// `CLONE_PIDFD` is set (musl ≥ 1.2.4 through its flag test, glibc always).
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

/// The child's private stack: an anonymous mapping with a `PROT_NONE` guard page below it.
///
/// Reused across spawns: its top pages are touched once, here, so that children do not take
/// (and get billed for) page faults on memory the runner provides.
pub struct ChildStack {
    base: *mut c_void,
    len: usize,
}

impl ChildStack {
    /// Usable bytes above the guard page; 64 KiB leaves room for unoptimised debug builds.
    pub const USABLE_BYTES: usize = 64 * 1024;
    const PRETOUCHED_BYTES: usize = 16 * 1024;

    /// Maps a new stack ([mmap(2)](https://man7.org/linux/man-pages/man2/mmap.2.html)).
    pub fn new() -> Result<ChildStack, Errno> {
        use rustix::mm::{MapFlags, MprotectFlags, ProtFlags};
        let page = rustix::param::page_size();
        let len = Self::USABLE_BYTES + page;
        let rw = ProtFlags::READ | ProtFlags::WRITE;
        let flags = MapFlags::PRIVATE | MapFlags::STACK;
        // SAFETY: a null hint lets the kernel pick fresh addresses; no existing mapping or
        // Rust-owned memory is replaced. The mapping is owned by the returned value alone.
        let base = unsafe { rustix::mm::mmap_anonymous(core::ptr::null_mut(), len, rw, flags) }
            .map_err(Errno::from)?;
        let stack = ChildStack { base, len };
        // SAFETY: `base..base+page` is the lowest page of the mapping owned by `stack`; nothing
        // refers to it, so making it inaccessible (the guard page) breaks no reference.
        unsafe { rustix::mm::mprotect(base, page, MprotectFlags::empty()) }.map_err(Errno::from)?;
        let touched = stack
            .top()
            .cast::<u8>()
            .wrapping_sub(Self::PRETOUCHED_BYTES);
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

/// What the child reads, and the one place it writes (`failed_*`), in the parent's frame.
struct ChildInputs<'a> {
    path: *const c_char,
    argv: *const *const c_char,
    envp: *const *const c_char,
    cwd: *const c_char,
    plan: &'a ChildPlan<'a>,
    mask: u64,
    failed_stage: u32,
    failed_errno: i32,
    _image: PhantomData<&'a ExecImage<'a>>,
}

/// Starts `image` on `stack` with vfork semantics. Returns once the child has called `execve`,
/// or has died before it without reporting a failure (killed by a signal: its wait status
/// tells, as with `posix_spawn`). On a reported failure the child is reaped: `Err((stage,
/// errno))`, stage 1 for the parent's own calls. See [clone(2)], [vfork(2)].
///
/// [clone(2)]: https://man7.org/linux/man-pages/man2/clone.2.html
/// [vfork(2)]: https://man7.org/linux/man-pages/man2/vfork.2.html
pub(crate) fn spawn(
    image: &ExecImage<'_>,
    plan: &ChildPlan<'_>,
    stack: &mut ChildStack,
) -> Result<Spawned, (u32, Errno)> {
    let mut old_mask = 0u64;
    let blocked = sigprocmask(MaskHow::SetMask, Some(&!0), &mut old_mask);
    crate::errno::zero_or(blocked).map_err(|e| (1, e))?;
    let mut inputs = ChildInputs {
        path: image.path_ptr(),
        argv: image.argv_ptr(),
        envp: image.envp_ptr(),
        cwd: plan.cwd.map_or(core::ptr::null(), CStr::as_ptr),
        plan,
        mask: plan.mask.unwrap_or(old_mask),
        failed_stage: 0,
        failed_errno: 0,
        _image: PhantomData,
    };
    let pidfd_flag = if plan.pidfd { cf::CLONE_PIDFD } else { 0 };
    let flags = cf::CLONE_VM | cf::CLONE_VFORK | pidfd_flag | cf::SIGCHLD;
    let arg = &mut inputs as *mut ChildInputs<'_> as *mut c_void;
    let mut pidfd: c_int = -1;
    let (top, slot) = (stack.top(), &mut pidfd as *mut c_int);
    // SAFETY:
    // - Nothing returns twice: `child_entry` ends in execve or exit_group, never returns.
    // - Stack valid and aligned: `stack.top()` is the 16-byte-aligned top of a live, writable
    //   64 KiB mapping borrowed mutably for this call.
    // - Lives long enough: `arg` and `slot` point into this frame, and CLONE_VFORK
    //   suspends this thread until the child has exec'd or exited.
    // - No aliasing: this frame does not touch `inputs` until clone returns; the child's
    //   `&mut` is the only reference meanwhile. The kernel writes `pidfd` (an `int`) before the
    //   child runs. The vfork completion orders the child's writes before clone returns here.
    // - Signals: all are blocked in this thread; see "Safe to call from a multi-threaded
    //   program" above for why no handler can run in the child.
    let pid = unsafe { clone(child_entry, top, flags, arg, slot) };
    let clone_errno = (pid < 0).then(|| {
        // SAFETY: `__errno_location` has no preconditions; it returns this thread's errno slot.
        let slot = unsafe { __errno_location() };
        // SAFETY: `slot` is the valid, aligned, live `int` errno of this thread, set by the
        // failed `clone` just now; nothing runs between that call and this read.
        Errno::from_raw(unsafe { *slot })
    });
    let restored = sigprocmask(MaskHow::SetMask, Some(&old_mask), &mut 0);
    if let Some(errno) = clone_errno {
        return Err((1, errno));
    }
    let owned = (plan.pidfd && pidfd >= 0).then(|| {
        // SAFETY: the kernel stored a new descriptor of this process in `pidfd` ("the PID file
        // descriptor ... is placed at the location pointed to by parent_tid", clone(2)); no
        // other value owns it, so the `OwnedFd` closes it exactly once.
        unsafe { OwnedFd::from_raw_fd(pidfd) }
    });
    if inputs.failed_stage != 0 {
        // The child exited with 127 (CLONE_VFORK resumed us): reap it so no zombie remains.
        let _ = super::wait4(pid, 0);
        return Err((inputs.failed_stage, Errno::from_raw(inputs.failed_errno)));
    }
    crate::errno::zero_or(restored).map_err(|e| (1, e))?;
    let pidfd_ignored = plan.pidfd && owned.is_none();
    Ok(Spawned {
        pid,
        pidfd: owned,
        pidfd_ignored,
    })
}

// Everything below runs in the child, on `ChildStack`, sharing the parent's memory. The child
// has its own descriptor table and signal dispositions (no CLONE_FILES, no CLONE_SIGHAND), so
// closing descriptors or resetting handlers here cannot affect the parent. Errors are plain
// errno numbers (0 = success); every function is inlined into `child_entry`.

/// The child's entry point, called by the C library's `clone` on [`ChildStack`].
extern "C" fn child_entry(arg: *mut c_void) -> c_int {
    // SAFETY: `arg` is the `&mut ChildInputs` that `spawn` passed to clone: non-null, aligned,
    // alive while this child runs (the parent is suspended in that frame), and the only
    // reference to it meanwhile. `transmute` rather than `&mut *`: a debug build inserts a
    // null check with a panic path at a raw-pointer reborrow, and the child must have none.
    #[allow(clippy::transmute_ptr_to_ref)]
    let c = unsafe { core::mem::transmute::<*mut c_void, &mut ChildInputs<'_>>(arg) };
    let (stage, errno) = prepare_and_exec(c);
    c.failed_errno = errno;
    c.failed_stage = stage;
    exit_group(127)
}

/// `stage!(n, errno)`: returns `(n, errno)` from `prepare_and_exec` unless `errno` is 0.
macro_rules! stage {
    ($n:expr, $errno:expr) => {
        let e = $errno;
        if e != 0 {
            return ($n, e);
        }
    };
}

/// Returns only on failure, with (stage, errno); on success `execve` replaces the image.
/// Stages as in `spawn::ChildStage`: 2 signals, 3 setpgid, 4 chdir, 5 dup3, 6 descriptors,
/// 7 mask, 8 execve.
#[inline(always)]
fn prepare_and_exec(c: &ChildInputs<'_>) -> (u32, i32) {
    stage!(2, crate::child_signals::reset_signals(c.plan.handled));
    if c.plan.new_process_group {
        // SAFETY: integer arguments only; moves the child alone into a new process group.
        stage!(3, errno_of(unsafe { syscall6(nr::SETPGID, [0; 6]) }));
    }
    if c.cwd as usize != 0 {
        let args = [c.cwd as usize, 0, 0, 0, 0, 0];
        // SAFETY: `cwd` is the pointer of a NUL-terminated `&CStr` of the plan, which the
        // suspended parent's frame borrows for the spawn; the kernel only reads it.
        stage!(4, errno_of(unsafe { syscall6(nr::CHDIR, args) }));
    }
    let [fd0, fd1, fd2] = c.plan.stdio;
    stage!(5, dup3(fd0, 0));
    stage!(5, dup3(fd1, 1));
    stage!(5, dup3(fd2, 2));
    stage!(6, close_descriptors(c.plan.keep, &c.plan.closing));
    stage!(7, sigprocmask(MaskHow::SetMask, Some(&c.mask), &mut 0));
    let args = [c.path as usize, c.argv as usize, c.envp as usize, 0, 0, 0];
    // SAFETY: `path` is NUL-terminated; `argv` and `envp` are NULL-terminated arrays of
    // NUL-terminated strings, all owned or borrowed by the `ExecImage` (built only by `new`,
    // never mutated) that the suspended parent's frame borrows. The kernel only reads them.
    (8, errno_of(unsafe { syscall6(nr::EXECVE, args) }))
}

/// `dup3(fd, target, 0)` when `fd >= 0`: installs `fd` (≥ 3, checked by the parent) as 0/1/2.
#[inline(always)]
fn dup3(fd: c_int, target: usize) -> i32 {
    if fd < 0 {
        return 0;
    }
    // SAFETY: integer arguments only; replaces 0/1/2 in the child's own descriptor table.
    errno_of(unsafe { syscall6(nr::DUP3, [fd as usize, target, 0, 0, 0, 0]) })
}

/// Clears close-on-exec on every kept descriptor, then closes the others as the parent planned:
/// `close_range` over the gaps between kept ones, or `close` on each listed open one.
#[inline(always)]
fn close_descriptors(keep: &[c_int], closing: &Closing<'_>) -> i32 {
    let mut rest = keep;
    while let [fd, tail @ ..] = rest {
        // SAFETY: integer arguments only; clears a flag of the child's own descriptor.
        let e = errno_of(unsafe { syscall6(nr::FCNTL, [*fd as usize, F_SETFD, 0, 0, 0, 0]) });
        if e != 0 {
            return e;
        }
        rest = tail;
    }
    match *closing {
        Closing::Ranges(mut rest) => {
            while let [[from, to], tail @ ..] = rest {
                // SAFETY: integer arguments only; closes descriptors of the child's own table,
                // none of which code running in the child uses.
                let e = errno_of(unsafe { syscall6(nr::CLOSE_RANGE, [*from, *to, 0, 0, 0, 0]) });
                if e != 0 {
                    return e;
                }
                rest = tail;
            }
        }
        Closing::Each(mut rest) => {
            while let [fd, tail @ ..] = rest {
                // SAFETY: integer argument only; closes a descriptor of the child's own table
                // (EBADF for one closed meanwhile is harmless and ignored).
                let _ = unsafe { syscall6(nr::CLOSE, [*fd as usize, 0, 0, 0, 0, 0]) };
                rest = tail;
            }
        }
    }
    0
}

/// `exit_group(status)`: ends the child without running any Rust code.
#[inline(always)]
fn exit_group(status: c_int) -> ! {
    // SAFETY: integer argument only; the call does not return.
    let _ = unsafe { syscall6(nr::EXIT_GROUP, [status as usize, 0, 0, 0, 0, 0]) };
    #[allow(clippy::empty_loop)]
    loop {}
}
