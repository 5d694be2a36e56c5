//! The allocator a program may install (`#[global_allocator]`) so that running out of memory
//! ends it with its own line and exit code instead of std's abort (SIGABRT after "memory
//! allocation of N bytes failed"): the system allocator, and where it returns null, `say(size)`
//! then `exit_group(code)`. std's own hook for that moment (`std::alloc::set_alloc_error_hook`)
//! is unstable; this wrapper sees every null, including those std would have turned into an
//! error (`Vec::try_reserve`, `read_to_end`'s growth): they end the program the same way.

use super::child::exit_group;
use core::alloc::{GlobalAlloc, Layout};
use core::sync::atomic::{AtomicBool, Ordering};
use std::alloc::System;

/// The system allocator, ending the program on a null block.
pub struct ExitOnNull {
    say: fn(usize),
    code: u8,
}

/// Set by the first null: a `say` that allocates, and fails, ends the program at once instead
/// of calling itself again.
static SAID: AtomicBool = AtomicBool::new(false);

impl ExitOnNull {
    /// An allocator that, on a null block of `size` bytes, calls `say(size)` once (it should
    /// write its line without allocating) and exits with `code`, running no destructor.
    pub const fn new(say: fn(usize), code: u8) -> Self {
        ExitOnNull { say, code }
    }

    #[inline]
    fn checked(&self, block: *mut u8, size: usize) -> *mut u8 {
        if block.is_null() {
            if !SAID.swap(true, Ordering::SeqCst) {
                (self.say)(size);
            }
            exit_group(i32::from(self.code));
        }
        block
    }
}

// SAFETY: every method hands its arguments unchanged to `System` and returns what `System`
// returned, or does not return at all (`exit_group`): a block it returns is one `System` made
// for that layout, and it frees or resizes only blocks its callers got from it, which are
// `System`'s. `GlobalAlloc`'s contract is therefore `System`'s, which keeps it.
unsafe impl GlobalAlloc for ExitOnNull {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's `alloc` contract (a layout of non-zero size) is `System`'s.
        self.checked(unsafe { System.alloc(layout) }, layout.size())
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's `alloc_zeroed` contract (non-zero size) is `System`'s.
        self.checked(unsafe { System.alloc_zeroed(layout) }, layout.size())
    }

    unsafe fn dealloc(&self, block: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract: `block` came from this allocator with `layout`, so
        // from `System` with `layout`.
        unsafe { System.dealloc(block, layout) }
    }

    unsafe fn realloc(&self, block: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller's contract: `block` came from this allocator (so from `System`)
        // with `layout`, and `new_size` is non-zero and fits `isize` once aligned. On null the
        // old block is still the caller's, and the program ends without touching it.
        self.checked(unsafe { System.realloc(block, layout, new_size) }, new_size)
    }
}
