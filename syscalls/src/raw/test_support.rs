//! Test builds only: installing a signal handler, which coldtrace itself never does (it reads
//! signals from a signalfd). The spawn-storm test needs real handlers to show that none runs
//! in a child.
#![allow(unsafe_code)]

use core::ffi::c_int;

extern "C" {
    /// glibc and musl: `sighandler_t signal(int signum, sighandler_t handler)`.
    fn signal(signum: c_int, handler: extern "C" fn(c_int)) -> usize;
}

/// Installs `handler` for `signum` with the C library's `signal` (SA_RESTART semantics on
/// glibc and musl). `handler` must be async-signal-safe.
pub(crate) fn install_handler(signum: c_int, handler: extern "C" fn(c_int)) -> bool {
    // SAFETY: `signal` takes an integer and a function pointer with the C signature the C
    // library expects; the C library fills the `sigaction` (and the x86_64 restorer) itself.
    // The handlers the test passes only make raw syscalls and atomic additions.
    let old = unsafe { signal(signum, handler) };
    old != usize::MAX
}
