//! What the waiting loop tells its caller while the child runs: that it was stopped, and, for a
//! long run, a periodic tick (for a progress line). Callbacks and their schedule only.
//!
//! A tick is coldtrace's work while the child runs, so it is kept rare and short: none in the
//! first [`TICKS_AFTER_NS`] of a run (a shorter run is never interrupted), then at most one per
//! [`TICK_EVERY_NS`]. The only way it can touch a measurement is an exit that happens during
//! the tick's work: that exit is seen when the tick returns, so the run's wall time includes
//! what is left of the tick (one short `write(2)` for a progress line).
#![forbid(unsafe_code)]

use coldtrace_syscalls::Signal;

/// No tick in the first second of a run.
pub const TICKS_AFTER_NS: u64 = 1_000_000_000;
/// Then at most four ticks a second.
pub const TICK_EVERY_NS: u64 = 250_000_000;

/// Receives what happens while the runner waits for the child.
pub trait WhileWaiting {
    /// The child was stopped by `signal` (said once per run).
    fn stopped(&mut self, signal: Signal) {
        let _ = signal;
    }

    /// Whether to be woken while the child runs ([`WhileWaiting::tick`]).
    fn wants_ticks(&self) -> bool {
        false
    }

    /// The child has been running for `running_ns` (at most every [`TICK_EVERY_NS`], never in
    /// the first [`TICKS_AFTER_NS`]). Keep it short: see the module's note.
    fn tick(&mut self, running_ns: u64) {
        let _ = running_ns;
    }
}

/// Nothing to tell.
pub struct Quietly;

impl WhileWaiting for Quietly {}

/// When the next tick is due, on CLOCK_MONOTONIC.
pub(crate) struct TickSchedule {
    start_ns: u64,
    next_ns: Option<u64>,
}

impl TickSchedule {
    /// The schedule of a run that started at `start_ns` (no ticks unless `wanted`).
    pub(crate) fn new(start_ns: u64, wanted: bool) -> TickSchedule {
        TickSchedule {
            start_ns,
            next_ns: wanted.then(|| start_ns.saturating_add(TICKS_AFTER_NS)),
        }
    }

    /// When the next tick is due (`None`: never).
    pub(crate) fn next_ns(&self) -> Option<u64> {
        self.next_ns
    }

    /// Gives `watcher` its tick if one is due now, and schedules the next one.
    pub(crate) fn fire_if_due(&mut self, watcher: &mut dyn WhileWaiting) {
        let now = crate::measure::clock::monotonic_ns();
        if self.next_ns.is_some_and(|t| t <= now) {
            watcher.tick(now.saturating_sub(self.start_ns));
            self.next_ns = Some(now.saturating_add(TICK_EVERY_NS));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_wait_a_second_and_come_at_most_every_quarter_second() {
        struct Count(u32);
        impl WhileWaiting for Count {
            fn tick(&mut self, _: u64) {
                self.0 += 1;
            }
        }
        assert_eq!(TickSchedule::new(100, false).next_ns(), None);
        let now = crate::measure::clock::monotonic_ns();
        let mut s = TickSchedule::new(now, true);
        assert_eq!(s.next_ns(), Some(now + TICKS_AFTER_NS));
        let mut count = Count(0);
        s.fire_if_due(&mut count);
        assert_eq!(count.0, 0, "not in the first second");
        // A run that started two seconds ago: one tick now, the next a quarter second later.
        let mut s = TickSchedule::new(now.saturating_sub(2_000_000_000), true);
        s.fire_if_due(&mut count);
        s.fire_if_due(&mut count);
        assert_eq!(count.0, 1);
        assert!(s.next_ns().unwrap() >= now + TICK_EVERY_NS);
    }
}
