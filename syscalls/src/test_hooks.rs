//! Test builds only: switches that hold a race window open or force a fallback path, so that
//! `race_tests.rs` can show each failure mode on this machine. None exists in other builds.
#![forbid(unsafe_code)]

use core::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, Ordering};

/// While set, `Child::reap` waits between its look at the zombie and its `wait4` (at most a
/// minute, so that a failing test cannot hang).
pub(crate) static REAP_WINDOW_HELD: AtomicBool = AtomicBool::new(false);
/// Set by `Child::reap` once it has looked at the zombie (while the window is held).
pub(crate) static REAP_PEEKED: AtomicBool = AtomicBool::new(false);
/// Spawn without `CLONE_VM`: the child gets a copy of the parent's memory, as under valgrind
/// or qemu-user, which turn `CLONE_VM | CLONE_VFORK` into a fork.
pub(crate) static NO_CLONE_VM: AtomicBool = AtomicBool::new(false);
/// Behave as if `close_range` were refused.
pub(crate) static NO_CLOSE_RANGE: AtomicBool = AtomicBool::new(false);
/// Behave as if `/proc` were not mounted.
pub(crate) static NO_PROC: AtomicBool = AtomicBool::new(false);
/// Tell the child a parent PID that is not its parent's, as if the parent had died between
/// the clone and the child's `PR_SET_PDEATHSIG`.
pub(crate) static WRONG_PARENT_PID: AtomicBool = AtomicBool::new(false);
/// Make the parent's restoring of its signal mask after the clone fail (EINVAL).
pub(crate) static FAIL_MASK_RESTORE: AtomicBool = AtomicBool::new(false);
/// Refuse every `clone3` with this errno (0: off), before the system call, as an old kernel, a
/// seccomp filter or an emulator does (none of them makes a child or fills the pidfd slot).
pub(crate) static CLONE3_REFUSED_WITH: AtomicI32 = AtomicI32::new(0);
/// Open perf rings as a kernel before 6.0 does, which refuses `PERF_FORMAT_LOST`.
pub(crate) static NO_PERF_FORMAT_LOST: AtomicBool = AtomicBool::new(false);
/// How many `clone3` calls [`CLONE3_REFUSED_WITH`] refused.
pub(crate) static CLONE3_REFUSALS: AtomicU32 = AtomicU32::new(0);

/// In `Child::reap`, between the look at the zombie and the `wait4`: says it got there and
/// waits while [`REAP_WINDOW_HELD`] is set.
pub(crate) fn hold_reap_window() {
    REAP_PEEKED.store(true, Ordering::SeqCst);
    let until = std::time::Instant::now() + core::time::Duration::from_secs(60);
    while REAP_WINDOW_HELD.load(Ordering::SeqCst) && std::time::Instant::now() < until {
        std::thread::sleep(core::time::Duration::from_millis(1));
    }
}

pub(crate) fn on(switch: &AtomicBool) -> bool {
    switch.load(Ordering::SeqCst)
}

/// The unit tests that spawn children, look at every child of the process or flip a switch
/// above run one at a time.
pub(crate) fn serial() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// Sets a switch for as long as the value lives.
pub(crate) struct Switch(&'static AtomicBool);

impl Switch {
    pub(crate) fn on(switch: &'static AtomicBool) -> Switch {
        switch.store(true, Ordering::SeqCst);
        Switch(switch)
    }
}

impl Drop for Switch {
    fn drop(&mut self) {
        self.0.store(false, Ordering::SeqCst);
    }
}
