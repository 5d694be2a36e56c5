//! The parent's side of the vfork-semantics spawn: the child's stack, the vouching for handled
//! signals, and the clone itself — `clone3(CLONE_VM | CLONE_VFORK | CLONE_PIDFD |
//! CLONE_CLEAR_SIGHAND)`, or `clone` where `clone3` is refused — with what follows it in the
//! parent. What runs in the child is all in `child.rs`.
//!
//! # Safe to call from a multi-threaded program (the proof the clone block refers to)
//! - No handler of the parent can run in the child. With `clone3`, `CLONE_CLEAR_SIGHAND` makes
//!   the kernel reset every handled signal to `SIG_DFL` before the child runs
//!   (`copy_sighand()` in kernel/fork.c calls `flush_signal_handlers`); ignored ones stay
//!   ignored. With `clone`, the child asks the
//!   kernel about every signal (or trusts a [`HandledSignals`] the caller vouched for, an
//!   `unsafe` promise) and resets each handled one while all are blocked: signals aimed at the
//!   child stay pending meanwhile. Synchronous SIGSEGV/SIGBUS/SIGILL/SIGFPE/SIGSYS cannot be
//!   blocked, but the kernel resets a blocked synchronous signal to `SIG_DFL` before
//!   delivering it (`force_sig_info_to_task()` in kernel/signal.c): it kills the child rather
//!   than run a handler. (Both read in Linux 6.1.192 and 6.12.118.)
//! - Signals aimed at the parent never reach the child (a new process).
//! - The child keeps the calling thread's `sigaltstack` (cleared only for `CLONE_VM` without
//!   `CLONE_VFORK`); no handler runs, so it is never used.
//! - Other threads keep running on the same memory, but cannot reach `ChildInputs` (a local
//!   of the suspended frame) nor the stack (borrowed mutably); the image is borrowed shared.
//! - The vfork wait is `TASK_KILLABLE`: a fatal signal may end the parent meanwhile, but then
//!   no parent code runs again, and the child holds its own reference to the memory.
#![allow(unsafe_code)]

use super::child::{ChildInputs, ExecPointers};
pub use super::clone::SignalsBlocked;
use super::clone::StackRegion;
use crate::abi::{clone_flags as cf, MaskHow};
use crate::child_plan::{ChildPlan, CloneCall};
use crate::errno::{zero_or, Errno};
use crate::exec_image::{ExecImage, SpawnFailure, Spawned};
use crate::sigset::SigSet;
use core::ffi::{c_int, c_void};
use rustix::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

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

    /// The writable part above the guard page, borrowed exclusively for a clone.
    fn region(&mut self) -> StackRegion<'_> {
        let low = self.top().cast::<u8>().wrapping_sub(Self::USABLE_BYTES);
        // SAFETY: `low..top` is the writable part of the mapping owned by `self` (above the
        // guard page), page aligned (an array of `u8` needs 1), initialised (anonymous memory
        // reads as zeros), and borrowed exclusively through `&mut self` for as long as the
        // array reference lives.
        let memory = unsafe { &mut *low.cast::<[u8; Self::USABLE_BYTES]>() };
        StackRegion::new(memory)
    }
}

impl Drop for ChildStack {
    fn drop(&mut self) {
        // SAFETY: `base`/`len` is exactly the mapping created in `new`, owned by `self` and no
        // longer used (a spawn borrows the stack mutably, so none is running).
        let _ = unsafe { rustix::mm::munmap(self.base, self.len) };
    }
}

/// A promise about which signals have handlers, for [`crate::SpawnOptions::handled_signals`]:
/// where `clone3` cannot be used, the child then resets just these (and SIGPIPE) instead of
/// asking the kernel about all 64. Only an `unsafe` call makes one:
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
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HandledSignals(u64);

impl HandledSignals {
    /// Vouches that no signal outside `set` has a handler in this process now, and that none
    /// will be given one until every child spawned with this value has called `execve`.
    ///
    /// # Safety
    /// The promise above must hold. A signal outside `set` with a handler lets that handler
    /// run in a child that shares this process's memory (`CLONE_VM`), on the child's stack,
    /// racing with the parent's threads: undefined behaviour. A single-threaded program that
    /// read the set with [`crate::signal::handled_signals`] and installs no handler afterwards
    /// (Rust's std installs its SIGSEGV and SIGBUS handlers before `main`) can promise it.
    pub unsafe fn vouch(set: SigSet) -> HandledSignals {
        HandledSignals(set.bits())
    }

    /// The vouched set.
    pub fn set(self) -> SigSet {
        SigSet::from_bits(self.0)
    }

    pub(crate) fn bits(self) -> u64 {
        self.0
    }
}

/// How the child reports a failure before `execve`: in the parent's memory, or through a
/// close-on-exec pipe where that memory may be a copy.
pub(crate) struct ErrorPipe {
    pub read: OwnedFd,
    /// The write end, numbered ≥ 3 so that the child's `dup3` onto 0/1/2 cannot clobber it.
    pub write: OwnedFd,
}

/// Starts `image` on `stack` with vfork semantics through `call`. Returns once the child has
/// called `execve`, or has died before it without reporting a failure (killed by a signal: its
/// wait status tells, as with `posix_spawn`). A reported failure comes back with the child
/// reaped. See [clone(2)], [clone3(2)], [vfork(2)].
///
/// [clone(2)]: https://man7.org/linux/man-pages/man2/clone.2.html
/// [clone3(2)]: https://man7.org/linux/man-pages/man2/clone3.2.html
/// [vfork(2)]: https://man7.org/linux/man-pages/man2/vfork.2.html
pub(crate) fn spawn(
    image: &ExecImage<'_>,
    plan: &ChildPlan<'_>,
    stack: &mut ChildStack,
    call: CloneCall,
    pidfd: bool,
    pipe: Option<ErrorPipe>,
) -> Result<Spawned, SpawnFailure> {
    let blocked = SignalsBlocked::block()
        .map_err(|e| SpawnFailure::NotStarted(crate::errno::Errno::from_raw(e)))?;
    let (shell, shell_argv) = image.shell_ptrs();
    let exec = ExecPointers {
        path: image.path_ptr(),
        argv: image.argv_ptr(),
        envp: image.envp_ptr(),
        shell,
        shell_argv,
    };
    let error_pipe = pipe.as_ref().map_or(-1, |p| p.write.as_raw_fd());
    let parent = plan.parent_death_signal.map_or(0, |_| parent_pid());
    let old_mask = blocked.old_mask();
    // SAFETY: the contract of `ChildInputs::new`:
    // - the pointers are an `ExecImage`'s, borrowed by `image` for this whole call: its fields
    //   are private and `new` (with `or_through_shell`) its only constructor, so they are
    //   NUL-terminated strings and null-terminated arrays, never mutated once built;
    // - `plan.vouched` is set from a `HandledSignals` alone (`ExecImage::spawn`), which only
    //   the `unsafe fn HandledSignals::vouch` makes: its caller promised that the set names
    //   every handled signal until the child has exec'd.
    let mut inputs = unsafe { ChildInputs::new(exec, plan, call, error_pipe, old_mask, parent) };
    let mut pidfd_slot: c_int = -1;
    let slot = pidfd.then_some(&mut pidfd_slot);
    let ret = clone_child(&mut inputs, stack, slot, &blocked);
    let started = started(ret, pidfd, pidfd_slot, &inputs);
    // The parent's copy of the write end goes first, so that the read sees end-of-file once
    // the child has exec'd (or exited) and closed its own.
    let read = pipe.map(|p| p.read);
    let outcome = match started {
        Err(errno) => Err(SpawnFailure::NotStarted(errno)),
        Ok(spawned) => finish(spawned, &inputs, read.as_ref().map(AsFd::as_fd)),
    };
    // Restored last: a failed child is reaped above while every signal is still blocked, so
    // no handler can interrupt that wait.
    let restored = zero_or(blocked.restore(restore_how()));
    match (outcome, restored) {
        (outcome, Ok(())) => outcome,
        (Err(_), Err(e)) => Err(SpawnFailure::MaskNotRestored(e)),
        (Ok(spawned), Err(e)) => {
            reap_failed(spawned.pid, spawned.pidfd.as_ref().map(AsFd::as_fd), true);
            Err(SpawnFailure::MaskNotRestored(e))
        }
    }
}

/// This process's PID, which the child expects as its parent's (`getpid(2)`); in test builds
/// a PID no process has while `WRONG_PARENT_PID` is set, as if the parent had died.
fn parent_pid() -> usize {
    #[cfg(test)]
    if crate::test_hooks::on(&crate::test_hooks::WRONG_PARENT_PID) {
        return u32::MAX as usize;
    }
    rustix::process::getpid().as_raw_nonzero().get() as usize
}

/// `SIG_SETMASK`, or in test builds an invalid `how` while `FAIL_MASK_RESTORE` is set.
fn restore_how() -> MaskHow {
    #[cfg(test)]
    if crate::test_hooks::on(&crate::test_hooks::FAIL_MASK_RESTORE) {
        return MaskHow::Invalid;
    }
    MaskHow::SetMask
}

/// The clone itself: the flags of this process's spawns (the test hook may drop `CLONE_VM`),
/// through the shared clone call. In test builds a `clone3` is refused with the errno
/// `CLONE3_REFUSED_WITH` holds, when it holds one.
fn clone_child(
    inputs: &mut ChildInputs<'_>,
    stack: &mut ChildStack,
    pidfd_slot: Option<&mut c_int>,
    blocked: &SignalsBlocked,
) -> usize {
    #[cfg(test)]
    if let CloneCall::Clone3 { .. } = inputs.call() {
        use core::sync::atomic::Ordering::SeqCst;
        let errno = crate::test_hooks::CLONE3_REFUSED_WITH.load(SeqCst);
        if errno > 0 {
            crate::test_hooks::CLONE3_REFUSALS.fetch_add(1, SeqCst);
            return (errno as isize).wrapping_neg() as usize;
        }
    }
    let flags = cf::CLONE_VM;
    #[cfg(test)]
    let flags = if crate::test_hooks::on(&crate::test_hooks::NO_CLONE_VM) {
        0
    } else {
        flags
    };
    super::clone::clone_child(inputs, stack.region(), flags, pidfd_slot, blocked)
}

/// The clone's result: the started child, or why none was started.
fn started(
    ret: usize,
    pidfd: bool,
    slot: c_int,
    inputs: &ChildInputs<'_>,
) -> Result<Spawned, Errno> {
    match super::child::errno_of(ret) {
        0 => {}
        e => return Err(Errno::from_raw(e)),
    }
    let owned = (pidfd && slot >= 0).then(|| {
        // SAFETY: the clone succeeded (checked above: on a failed clone the slot may hold a
        // number the kernel made and released again), so the kernel stored a new descriptor of
        // this process in the slot ("the PID file descriptor ... is placed at the location
        // pointed to by parent_tid", clone(2); the same for `clone_args.pidfd`, clone3(2)), or
        // left the -1 of a kernel that ignores the flag; no other value owns it, so the
        // `OwnedFd` closes it exactly once.
        unsafe { OwnedFd::from_raw_fd(slot) }
    });
    Ok(Spawned {
        pid: ret as i32,
        pidfd: owned,
        pidfd_ignored: pidfd && slot < 0,
        memory_shared: inputs.report().0,
    })
}

/// After a clone that started a child: its reported failure, if any (from the pipe, or from
/// `inputs` when memory is shared), with the child reaped; else the child.
fn finish(
    spawned: Spawned,
    inputs: &ChildInputs<'_>,
    pipe: Option<BorrowedFd<'_>>,
) -> Result<Spawned, SpawnFailure> {
    let (stage, errno) = match pipe {
        Some(read) => read_report(read),
        None => {
            let (_, stage, errno) = inputs.report();
            (stage, errno)
        }
    };
    if stage == 0 {
        return Ok(spawned);
    }
    // The child exited with 127 after reporting: reap it so no zombie remains.
    reap_failed(spawned.pid, spawned.pidfd.as_ref().map(AsFd::as_fd), false);
    Err(SpawnFailure::Child(stage, Errno::from_raw(errno)))
}

/// Reads the child's 8-byte report from the pipe: (0, 0) at end-of-file (the child exec'd, or
/// died without reporting). A short report reads as a failure of stage 1, EIO.
fn read_report(read: BorrowedFd<'_>) -> (u32, i32) {
    let mut bytes = [0u8; 8];
    let mut got = 0;
    while got < bytes.len() {
        match rustix::io::read(read, &mut bytes[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(rustix::io::Errno::INTR) => {}
            Err(_) => break,
        }
    }
    match got {
        0 => (0, 0),
        8 => {
            let [s0, s1, s2, s3, e0, e1, e2, e3] = bytes;
            let stage = u32::from_ne_bytes([s0, s1, s2, s3]);
            (stage.max(1), i32::from_ne_bytes([e0, e1, e2, e3]))
        }
        _ => (1, Errno::IO.raw()),
    }
}

/// Reaps a child this spawn started and will not hand over (killing it first when `kill`),
/// retrying on EINTR. Through its pidfd when there is one (`waitid(P_PIDFD)` can take no
/// other process); else by PID, which is safe inside this crate: the child is not registered
/// yet, and the orphan sweep leaves every child alone while a spawn is in progress.
fn reap_failed(pid: i32, pidfd: Option<BorrowedFd<'_>>, kill: bool) {
    use rustix::process::{WaitId, WaitIdOptions};
    if kill {
        let sent = pidfd.map(|fd| super::pidfd_send_signal(fd, 9, 0));
        if !matches!(sent, Some(Ok(()))) {
            let _ = super::kill(pid, 9);
        }
    }
    loop {
        let done = match pidfd {
            Some(fd) => rustix::process::waitid(WaitId::PidFd(fd), WaitIdOptions::EXITED)
                .map(|_| ())
                .map_err(Errno::from),
            None => super::wait4(pid, 0).map(|_| ()),
        };
        if done != Err(Errno::INTR) {
            return;
        }
    }
}
