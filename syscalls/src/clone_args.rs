//! What a clone is made of, in safe code: the proof that every signal is blocked
//! ([`SignalsBlocked`]), the child's stack ([`StackRegion`]), the flags a caller may add
//! ([`CALLER_FLAGS`]), and the system call's arguments built from them ([`CloneRegisters`]).
//! Core only, so that the spawner program (`spawner/main.rs`) compiles this file as it is. The
//! one unsafe call, the trampoline, is in `raw/clone.rs`; its proof rests on the invariants
//! these types keep (private fields, one constructor each), and names them.
#![forbid(unsafe_code)]

use crate::abi::{clone_flags as cf, nr, CloneArgs, MaskHow};
use crate::child_plan::CloneCall;
use crate::raw::sigprocmask;
use core::ffi::c_int;
use core::marker::PhantomData;
use core::sync::atomic::AtomicI32;

/// Every signal is blocked in the calling thread: the rule a clone rests on. The child starts
/// with this thread's mask, so with every signal blocked, a signal aimed at the child stays
/// pending until it has reset its handlers and set its own mask; unblocked, a handler of this
/// process could run in the child before that (with `clone`, which keeps the handlers), on this
/// process's memory. The clone (`raw/clone.rs`) takes this value, and only
/// [`SignalsBlocked::block`], which blocks them, makes one: its fields are private.
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
/// descriptor table, a thread group or signal handlers enters the clone's proof.
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

/// The arguments of the system call that starts one child: `clone3`'s `struct clone_args`
/// (held in this value, whose address the registers then carry) or `clone`'s registers. Made
/// only by [`CloneRegisters::new`] (its fields are private), which always sets `CLONE_VFORK`,
/// takes from the caller's flags only [`CALLER_FLAGS`], and holds the [`StackRegion`] and the
/// slots it names borrowed for `'a`.
pub(crate) struct CloneRegisters<'a> {
    call: CloneCall,
    args: CloneArgs,
    /// `clone`'s flags and its `parent_tid` argument (the tid slot, else the pidfd slot).
    clone_flags: u64,
    clone_slot: usize,
    stack: StackRegion<'a>,
    _slots: PhantomData<(&'a mut c_int, &'a AtomicI32)>,
}

impl<'a> CloneRegisters<'a> {
    /// The arguments of `call` (`clone3` with `CLONE_CLEAR_SIGHAND`, and `CLONE_INTO_CGROUP`
    /// when it names a cgroup; or `clone`), with `CLONE_VFORK` always, `flags` (only
    /// [`CALLER_FLAGS`] are taken), `CLONE_PIDFD` when a pidfd slot is given, and
    /// `CLONE_PARENT_SETTID` when a tid slot is (`clone` then asks for no pidfd: one argument
    /// holds either slot). See [clone(2)], [clone3(2)].
    ///
    /// [clone(2)]: https://man7.org/linux/man-pages/man2/clone.2.html
    /// [clone3(2)]: https://man7.org/linux/man-pages/man2/clone3.2.html
    pub(crate) fn new(
        call: CloneCall,
        stack: StackRegion<'a>,
        flags: u64,
        pidfd_slot: Option<&'a mut c_int>,
        tid_slot: Option<&'a AtomicI32>,
    ) -> CloneRegisters<'a> {
        let base = cf::CLONE_VFORK | (flags & CALLER_FLAGS);
        let slot = pidfd_slot.map_or(0, |s| s as *mut c_int as usize);
        let pidfd_flag = if slot != 0 { cf::CLONE_PIDFD } else { 0 };
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
        // clone(flags, newsp, parent_tid, …): the tid slot, else the pidfd slot, on both arches.
        let (flag, clone_slot) = if tid != 0 {
            (tid_flag, tid)
        } else {
            (pidfd_flag, slot)
        };
        CloneRegisters {
            call,
            args,
            clone_flags: base | flag | cf::SIGCHLD,
            clone_slot,
            stack,
            _slots: PhantomData,
        }
    }

    /// The system call's number and its five arguments; with `clone3`, the first is the
    /// address of the `clone_args` inside `self`, valid while `self` stays where it is.
    pub(crate) fn registers(&self) -> (usize, [usize; 5]) {
        match self.call {
            CloneCall::Clone3 { .. } => {
                let size = core::mem::size_of::<CloneArgs>();
                (
                    nr::CLONE3,
                    [&self.args as *const CloneArgs as usize, size, 0, 0, 0],
                )
            }
            CloneCall::Clone => {
                let flags = self.clone_flags as usize;
                let regs = [flags, self.stack.top, self.clone_slot, 0, 0];
                (nr::CLONE, regs)
            }
        }
    }
}
