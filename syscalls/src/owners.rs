//! Which children belong to a live [`crate::Child`]: one owner for every wait. A `Child` is
//! registered from its spawn until it is dropped; the orphan sweep
//! ([`crate::wait::Subreaper::reap_orphans`]) and the public [`crate::wait::wait4`] never reap
//! a child that may be registered, so the `wait4(pid)` of [`crate::Child::reap`] cannot find
//! its PID taken by another process through anything in this crate.
//!
//! Lock-free: 64 slots, and a count of children that found no slot (while it is not 0, every
//! child counts as owned). `SPAWNING` counts spawns between clone and registration.
#![forbid(unsafe_code)]

use core::sync::atomic::{AtomicI32, AtomicUsize, Ordering};

static SLOTS: [AtomicI32; 64] = [const { AtomicI32::new(0) }; 64];
static OVERFLOW: AtomicUsize = AtomicUsize::new(0);
static SPAWNING: AtomicUsize = AtomicUsize::new(0);

/// Records `pid`; returns whether it found a slot.
pub(crate) fn register(pid: i32) -> bool {
    for slot in &SLOTS {
        if slot
            .compare_exchange(0, pid, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
        {
            return true;
        }
    }
    OVERFLOW.fetch_add(1, Ordering::SeqCst);
    false
}

/// Forgets `pid` (`had_slot`: what [`register`] returned).
pub(crate) fn unregister(pid: i32, had_slot: bool) {
    if !had_slot {
        OVERFLOW.fetch_sub(1, Ordering::SeqCst);
        return;
    }
    for slot in &SLOTS {
        if slot
            .compare_exchange(pid, 0, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
        {
            return;
        }
    }
}

/// Whether `pid` may belong to a live `Child` (or to one more than 64 live ones).
pub(crate) fn owned(pid: i32) -> bool {
    OVERFLOW.load(Ordering::SeqCst) != 0
        || SLOTS.iter().any(|slot| slot.load(Ordering::SeqCst) == pid)
}

/// [`owned`], or being registered right now (a spawn is between its clone and registration).
pub(crate) fn may_be_owned(pid: i32) -> bool {
    SPAWNING.load(Ordering::SeqCst) != 0 || owned(pid)
}

/// Counts a spawn in progress for as long as it lives.
pub(crate) struct Spawning;

impl Spawning {
    pub(crate) fn start() -> Spawning {
        SPAWNING.fetch_add(1, Ordering::SeqCst);
        Spawning
    }
}

impl Drop for Spawning {
    fn drop(&mut self) {
        SPAWNING.fetch_sub(1, Ordering::SeqCst);
    }
}
