//! The parent's side of the vfork-semantics spawn, its unsafe part: the child's stack, the
//! vouching for handled signals, and the clone itself — `clone3(CLONE_VM | CLONE_VFORK |
//! CLONE_PIDFD | CLONE_CLEAR_SIGHAND)`, or `clone` where `clone3` is refused — up to the
//! pidfd it returns. What runs in the child is all in `child.rs`; the steps around the clone
//! (the error pipe, the child's report, the reap of a failed child, the mask restored) are
//! safe code in [`crate::parent_side`].
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

use super::child::ChildInputs;
use crate::child_plan::{ChildPlan, CloneCall, ExecPointers};
pub use crate::clone_args::SignalsBlocked;
use crate::clone_args::StackRegion;
use crate::errno::Errno;
use crate::exec_image::{Cloned, ExecImage, Spawned};
use crate::sigset::SigSet;
use core::ffi::{c_int, c_void};
use rustix::fd::{FromRawFd, OwnedFd};

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
/// asking the kernel about all 64. Only an `unsafe` call makes one (`compile_fail` doc tests
/// at [`crate::SpawnOptions::handled_signals`]).
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

/// Starts `image` on `stack` with vfork semantics through `call` (flags: [`CALLER_FLAGS`]
/// only; `CLONE_PIDFD` when `pidfd`), the child writing a failure to `error_pipe` (-1: none)
/// and expecting `parent_pid` as its parent's PID (0: no parent-death signal). Returns once
/// the child has called `execve` or exited. See [clone(2)], [clone3(2)], [vfork(2)].
///
/// [`CALLER_FLAGS`]: crate::clone_args::CALLER_FLAGS
/// [clone(2)]: https://man7.org/linux/man-pages/man2/clone.2.html
/// [clone3(2)]: https://man7.org/linux/man-pages/man2/clone3.2.html
/// [vfork(2)]: https://man7.org/linux/man-pages/man2/vfork.2.html
#[allow(clippy::too_many_arguments)] // each is one fact of this one clone
pub(crate) fn clone(
    image: &ExecImage<'_>,
    plan: &ChildPlan<'_>,
    stack: &mut ChildStack,
    call: CloneCall,
    flags: u64,
    pidfd: bool,
    error_pipe: c_int,
    parent_pid: usize,
    blocked: &SignalsBlocked,
) -> Cloned {
    let (shell, shell_argv) = image.shell_ptrs();
    let exec = ExecPointers {
        path: image.path_ptr(),
        argv: image.argv_ptr(),
        envp: image.envp_ptr(),
        shell,
        shell_argv,
    };
    let old_mask = blocked.old_mask();
    // SAFETY: the contract of `ChildInputs::new`:
    // - the pointers are an `ExecImage`'s, borrowed by `image` for this whole call: its fields
    //   are private and `new` (with `or_through_shell`) its only constructor, so they are
    //   NUL-terminated strings and null-terminated arrays, never mutated once built;
    // - `plan.vouched` is set from a `HandledSignals` alone (`ExecImage::spawn`), which only
    //   the `unsafe fn HandledSignals::vouch` makes: its caller promised that the set names
    //   every handled signal until the child has exec'd.
    let mut inputs =
        unsafe { ChildInputs::new(exec, plan, call, error_pipe, old_mask, parent_pid) };
    let mut slot: c_int = -1;
    let ret = super::clone::clone_child(
        &mut inputs,
        stack.region(),
        flags,
        pidfd.then_some(&mut slot),
        None,
        blocked,
    );
    let (memory_shared, stage, errno) = inputs.report();
    let started = match crate::abi::errno_of(ret) {
        0 => Ok(Spawned {
            pid: ret as i32,
            pidfd: (pidfd && slot >= 0).then(|| {
                // SAFETY: the clone succeeded (checked above: on a failed clone the slot may
                // hold a number the kernel made and released again), so the kernel stored a
                // new descriptor of this process in the slot ("the PID file descriptor ... is
                // placed at the location pointed to by parent_tid", clone(2); the same for
                // `clone_args.pidfd`, clone3(2)), or left the -1 of a kernel that ignores the
                // flag; no other value owns it, so the `OwnedFd` closes it exactly once.
                unsafe { OwnedFd::from_raw_fd(slot) }
            }),
            pidfd_ignored: pidfd && slot < 0,
            memory_shared,
        }),
        e => Err(Errno::from_raw(e)),
    };
    Cloned {
        started,
        stage,
        errno,
    }
}
