//! The child's signal reset, before `execve`: safe code that runs in the vfork child, inlined
//! into `raw::child::child_entry`. It must not allocate, lock, panic or call into `core`
//! (wrapping arithmetic only); `tests/child_disassembly.rs` checks the inlined result.
#![forbid(unsafe_code)]

use crate::abi::{KernelSigaction, SIG_DFL, SIG_IGN};
use crate::raw::{sigaction_default, sigaction_query};

/// Resets every handled signal, and SIGPIPE, to `SIG_DFL`; ignored ones stay ignored (as
/// `posix_spawn` and shells do). With `Some(set)`, only those in the set (the caller vouches
/// for it) and SIGPIPE, without asking the kernel for each of the 64.
#[inline(always)]
pub(crate) fn reset_signals(handled: Option<u64>) -> i32 {
    let (mut sig, mut bit) = (1usize, 1u64);
    while sig <= 64 {
        let mut reset = sig == 13;
        if sig != 9 && sig != 19 {
            match handled {
                Some(set) => reset = reset || set & bit != 0,
                None => {
                    let mut old = KernelSigaction::DEFAULT;
                    let e = sigaction_query(sig, &mut old);
                    if e != 0 {
                        return e;
                    }
                    reset = reset || (old.handler != SIG_DFL && old.handler != SIG_IGN);
                }
            }
            let e = if reset { sigaction_default(sig) } else { 0 };
            if e != 0 {
                return e;
            }
        }
        sig = sig.wrapping_add(1);
        bit = bit.wrapping_add(bit);
    }
    0
}
