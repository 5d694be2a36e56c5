//! Test builds only: installing a signal handler, which coldtrace itself never does (it reads
//! signals from a signalfd), and aiming a signal at one thread. The spawn-storm tests need real
//! handlers to show that none runs in a child, and interrupted calls to show none is lost.
#![allow(unsafe_code)]

use super::syscall6;
use crate::abi::nr;
use core::ffi::c_int;

extern "C" {
    /// glibc and musl: `sighandler_t signal(int signum, sighandler_t handler)`.
    fn signal(signum: c_int, handler: extern "C" fn(c_int)) -> usize;
    /// glibc and musl: `int siginterrupt(int sig, int flag)`.
    fn siginterrupt(sig: c_int, flag: c_int) -> c_int;
}

/// Installs `handler` for `signum` with the C library's `signal` (SA_RESTART semantics on
/// glibc and musl), or, with `restart = false`, without SA_RESTART (an interrupted system call
/// then fails with EINTR). `handler` must be async-signal-safe.
pub(crate) fn install_handler(signum: c_int, handler: extern "C" fn(c_int), restart: bool) -> bool {
    // SAFETY: `signal` takes an integer and a function pointer with the C signature the C
    // library expects; the C library fills the `sigaction` (and the x86_64 restorer) itself.
    // The handlers the tests pass only make raw syscalls and atomic additions.
    let old = unsafe { signal(signum, handler) };
    // SAFETY: integer arguments only; clears or sets SA_RESTART of the handler just installed.
    let flag = unsafe { siginterrupt(signum, c_int::from(!restart)) };
    old != usize::MAX && flag == 0
}

/// `tgkill(getpid(), tid, sig)`: `sig` to one thread of this process.
pub(crate) fn signal_thread(tid: i32, sig: c_int) -> bool {
    let pid = rustix::process::getpid().as_raw_nonzero().get();
    let args = [pid as usize, tid as usize, sig as usize, 0, 0, 0];
    // SAFETY: integer arguments only; a signal to a thread of this process runs its handler,
    // which the tests install (async-signal-safe), and touches no memory here.
    crate::abi::errno_of(unsafe { syscall6(nr::TGKILL, args) }) == 0
}

/// The storm's handled set, vouched for: the signals that have a handler right now.
pub(crate) fn vouch_for_the_storm() -> crate::HandledSignals {
    let set = crate::signal::handled_signals().expect("read the dispositions");
    // SAFETY: the promise of `HandledSignals::vouch`: `set` is every signal with a handler
    // now (just read, after the storm installed its two), and no test of this binary installs
    // a handler for a signal outside it: the storms and the interrupted-spawn test install
    // theirs for SIGUSR1 and SIGUSR2 only, which are in `set` from then on.
    unsafe { crate::HandledSignals::vouch(set) }
}
