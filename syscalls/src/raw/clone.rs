//! The clone itself, core only: the library's spawn (`spawn.rs`) and the spawner program
//! (`../spawner/main.rs`) both start their children through [`clone_child`]. It builds the
//! arguments of `clone3` or `clone` and makes the one unsafe call of the trampoline.
#![allow(unsafe_code)]

use super::child::{clone_into_child, sigprocmask, ChildInputs};
use crate::abi::{clone_flags as cf, nr, CloneArgs, MaskHow};
use crate::child_plan::CloneCall;
use core::ffi::c_int;
use core::marker::PhantomData;
use core::sync::atomic::AtomicI32;

/// Every signal is blocked in the calling thread: the rule a clone rests on. The child starts
/// with this thread's mask, so with every signal blocked, a signal aimed at the child stays
/// pending until it has reset its handlers and set its own mask; unblocked, a handler of this
/// process could run in the child before that (with `clone`, which keeps the handlers), on this
/// process's memory. [`clone_child`] takes this value, and only [`SignalsBlocked::block`],
/// which blocks them, makes one: its fields are private.
///
/// ```compile_fail,E0451
/// // Safe code cannot claim the signals are blocked without blocking them.
/// use coldtrace_syscalls::raw::spawn::SignalsBlocked;
/// let claimed = SignalsBlocked { old_mask: 0, _one_thread: core::marker::PhantomData };
/// ```
///
/// A mask belongs to one thread, so the value is neither `Send` nor `Sync`: it cannot vouch
/// for another thread's mask. Nothing in this crate changes the mask of a thread while it
/// holds one, except [`SignalsBlocked::restore`], which consumes it.
pub struct SignalsBlocked {
    old_mask: u64,
    _one_thread: PhantomData<*const ()>,
}

impl SignalsBlocked {
    /// Blocks every signal in the calling thread (`rt_sigprocmask(SIG_SETMASK, ~0)`); the
    /// errno if the kernel refused.
    pub(crate) fn block() -> Result<SignalsBlocked, i32> {
        let mut old_mask = 0u64;
        match sigprocmask(MaskHow::SetMask, Some(&!0), &mut old_mask) {
            0 => Ok(SignalsBlocked {
                old_mask,
                _one_thread: PhantomData,
            }),
            e => Err(e),
        }
    }

    /// The mask the thread had before [`SignalsBlocked::block`].
    pub(crate) fn old_mask(&self) -> u64 {
        self.old_mask
    }

    /// Puts the old mask back with `how` (`SIG_SETMASK`, or an invalid one in tests) → 0 or
    /// an errno.
    pub(crate) fn restore(self, how: MaskHow) -> i32 {
        sigprocmask(how, Some(&self.old_mask), &mut 0)
    }
}

/// The flags a caller may add to `CLONE_VFORK`: sharing memory (`CLONE_VM`, which the caller
/// leaves out only to test the path where it is emulated by a copy) and giving the child the
/// caller's parent (`CLONE_PARENT`, the spawner's). Nothing else: no flag that shares a
/// descriptor table, a thread group or signal handlers enters the proof below.
pub(crate) const CALLER_FLAGS: u64 = cf::CLONE_VM | cf::CLONE_PARENT;

/// The least stack a child may be given. The child's deepest frame is about 7 KiB in a debug
/// build and under 1 KiB optimised (no recursion, no call it does not own but memcpy/memset);
/// `tests/child_disassembly.rs` checks that it stays below this in every build it disassembles.
/// The spawner's stack has no guard page below it, so this bound, not a fault, is what keeps
/// the child inside its stack there.
pub(crate) const MIN_STACK_BYTES: usize = 16 * 1024;

/// A child's stack: writable memory borrowed exclusively for `'a`, at least
/// [`MIN_STACK_BYTES`], its top rounded down to 16 bytes (both ABIs want a 16-byte aligned
/// stack at a call).
pub(crate) struct StackRegion<'a> {
    low: usize,
    top: usize,
    _memory: PhantomData<&'a mut [u8]>,
}

impl<'a> StackRegion<'a> {
    /// The whole of `memory` as a stack (it grows down from the top). Its size is a type, so
    /// a region smaller than [`MIN_STACK_BYTES`] does not compile.
    pub(crate) fn new<const N: usize>(memory: &'a mut [u8; N]) -> StackRegion<'a> {
        const {
            assert!(
                N >= MIN_STACK_BYTES,
                "a child's stack below MIN_STACK_BYTES"
            )
        };
        let low = memory.as_mut_ptr() as usize;
        let top = low.wrapping_add(memory.len()) & !15;
        StackRegion {
            low,
            top,
            _memory: PhantomData,
        }
    }
}

/// Starts a child with vfork semantics on `stack`, through the call `inputs` was made for:
/// `clone3` (with `CLONE_CLEAR_SIGHAND`, and `CLONE_INTO_CGROUP` when it names a cgroup) or
/// `clone`, with `CLONE_VFORK` always, `flags` (only [`CALLER_FLAGS`] are taken), and
/// `CLONE_PIDFD` when a slot is given. `_blocked` is the proof that every signal is blocked in
/// this thread. Returns the raw return register: the child's PID or `-errno`. See [clone(2)],
/// [clone3(2)].
///
/// With a `tid_slot`, the kernel stores the child's PID there before it runs
/// (`CLONE_PARENT_SETTID`; `clone` then asks for no pidfd: one argument holds either slot).
///
/// [clone(2)]: https://man7.org/linux/man-pages/man2/clone.2.html
/// [clone3(2)]: https://man7.org/linux/man-pages/man2/clone3.2.html
pub(crate) fn clone_child(
    inputs: &mut ChildInputs<'_>,
    stack: StackRegion<'_>,
    flags: u64,
    pidfd_slot: Option<&mut c_int>,
    tid_slot: Option<&AtomicI32>,
    _blocked: &SignalsBlocked,
) -> usize {
    let call = inputs.call();
    let base = cf::CLONE_VFORK | (flags & CALLER_FLAGS);
    let pidfd_flag = if pidfd_slot.is_some() {
        cf::CLONE_PIDFD
    } else {
        0
    };
    let slot = pidfd_slot.map_or(0, |s| s as *mut c_int as usize);
    let tid = tid_slot.map_or(0, |t| t as *const AtomicI32 as usize);
    let tid_flag = if tid != 0 { cf::CLONE_PARENT_SETTID } else { 0 };
    let cgroup = match call {
        CloneCall::Clone3 { cgroup } => cgroup,
        CloneCall::Clone => None,
    };
    let cgroup_flag = if cgroup.is_some() {
        cf::CLONE_INTO_CGROUP
    } else {
        0
    };
    // A CLONE_PARENT child takes its exit signal from the caller; clone3 wants 0 here.
    let exit_signal = if base & cf::CLONE_PARENT != 0 {
        0
    } else {
        cf::SIGCHLD
    };
    let args = CloneArgs {
        flags: base | pidfd_flag | tid_flag | cf::CLONE_CLEAR_SIGHAND | cgroup_flag,
        pidfd: slot as u64,
        parent_tid: tid as u64,
        exit_signal,
        stack: stack.low as u64,
        stack_size: stack.top.wrapping_sub(stack.low) as u64,
        cgroup: cgroup.map_or(0, |fd| fd as u64),
        ..CloneArgs::default()
    };
    let (nr, regs) = match call {
        CloneCall::Clone3 { .. } => {
            let size = core::mem::size_of::<CloneArgs>();
            (
                nr::CLONE3,
                [&args as *const CloneArgs as usize, size, 0, 0, 0],
            )
        }
        // clone(flags, newsp, parent_tid, …): the tid slot, else the pidfd slot, on both arches.
        CloneCall::Clone => {
            let (flag, ptid) = if tid != 0 {
                (tid_flag, tid)
            } else {
                (pidfd_flag, slot)
            };
            (
                nr::CLONE,
                [(base | flag | cf::SIGCHLD) as usize, stack.top, ptid, 0, 0],
            )
        }
    };
    let inputs = inputs as *mut ChildInputs<'_>;
    // SAFETY: the contract of `clone_into_child`, point by point:
    // - Nothing returns twice: the child runs `child_entry` into execve or exit_group.
    // - Stack valid, aligned, large enough: borrowed exclusively (`StackRegion` is made only
    //   from a `&mut [u8; N]`), top 16-byte aligned, at least MIN_STACK_BYTES (compile time),
    //   above the child's deepest frame (disassembly test), as no guard page lies below it.
    // - Lives long enough: `inputs`, `args` and the pidfd slot are in this thread's frames, and
    //   CLONE_VFORK (always set) suspends this thread until the child has exec'd or exited
    //   (the tid slot, borrowed for the call, is written before the child runs).
    // - No aliasing: this thread leaves `inputs` alone until the return (the child's `&mut` is
    //   the only reference); the vfork completion orders the child's writes before it resumes.
    //   The kernel may write the pidfd slot on a clone that then fails (a refused cgroup), so
    //   callers read it only after a successful return. The tid slot is an `AtomicI32`: the
    //   kernel's aligned store through a shared borrow is interior mutability.
    // - No flag beyond CALLER_FLAGS: a process with its own descriptors and signal handlers.
    // - No handler runs in the child: every signal is blocked in this thread (`_blocked`, made
    //   only by blocking them), and the handlers are reset as the call requires: by the kernel
    //   with clone3, by the child with clone (`ChildInputs::new` derives which from the call).
    //   See `spawn.rs`, "Safe to call from a multi-threaded program".
    unsafe { clone_into_child(nr, regs, inputs) }
}
