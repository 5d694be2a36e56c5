//! The clone itself, core only: the library's spawn (`spawn.rs`) and the spawner program
//! (`../spawner/main.rs`) both start their children through [`clone_child`]. It makes the one
//! unsafe call of the trampoline, with the arguments `crate::clone_args` builds.
#![allow(unsafe_code)]

use super::child::{clone_into_child, ChildInputs};
use crate::clone_args::{CloneRegisters, SignalsBlocked, StackRegion};
use core::ffi::c_int;
use core::sync::atomic::AtomicI32;

/// Starts a child with vfork semantics on `stack`, through the call `inputs` was made for,
/// with the arguments [`CloneRegisters::new`] builds from `flags` and the slots. `_blocked` is
/// the proof that every signal is blocked in this thread. Returns the raw return register: the
/// child's PID or `-errno`.
///
/// The proof of its one unsafe call takes `clone_into_child`'s contract point by point.
/// `request`, `stack` and `_blocked` are types of `crate::clone_args` whose fields are private,
/// each made by one constructor that keeps the invariant the proof names.
pub(crate) fn clone_child(
    inputs: &mut ChildInputs<'_>,
    stack: StackRegion<'_>,
    flags: u64,
    pidfd_slot: Option<&mut c_int>,
    tid_slot: Option<&AtomicI32>,
    _blocked: &SignalsBlocked,
) -> usize {
    let request = CloneRegisters::new(inputs.call(), stack, flags, pidfd_slot, tid_slot);
    let (nr, regs) = request.registers();
    let inputs = inputs as *mut ChildInputs<'_>;
    // SAFETY: the contract of `clone_into_child` (the types' invariants: see the doc above).
    // - Nothing returns twice: the child runs `child_entry` into execve or exit_group.
    // - Stack valid, aligned, large enough: the registers name the stack of a `StackRegion`,
    //   made only from a `&mut [u8; N]` (so borrowed exclusively, for this call, by
    //   `request`), top 16-byte aligned, at least MIN_STACK_BYTES (compile time), above the
    //   child's deepest frame (disassembly test), as no guard page lies below it.
    // - Lives long enough: `inputs`, the pidfd slot and `request` (holding `clone3`'s
    //   `clone_args`, whose address the registers carry; not moved before the call) are in this
    //   thread's frames, and CLONE_VFORK, always set by `CloneRegisters::new`, suspends it until
    //   the child has exec'd or exited; the tid slot, borrowed for the call, is set before it runs.
    // - No aliasing: this thread leaves `inputs` alone until the return (the child's `&mut` is
    //   the only reference); the vfork completion orders the child's writes before it resumes.
    //   The kernel may write the pidfd slot on a clone that then fails (a refused cgroup), so
    //   callers read it only after a successful return. The tid slot is an `AtomicI32`: the
    //   kernel's aligned store through a shared borrow is interior mutability.
    // - Only CALLER_FLAGS from `flags` (`CloneRegisters::new`): own descriptors and handlers.
    // - No handler runs in the child: every signal is blocked in this thread (`_blocked`, made
    //   only by blocking them); handlers are reset by the kernel with clone3, by the child with
    //   clone (`ChildInputs::new` derives which from the call; see `spawn.rs`, "Safe to call
    //   from a multi-threaded program").
    unsafe { clone_into_child(nr, regs, inputs) }
}
