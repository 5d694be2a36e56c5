//! When a run's rings are read while the command runs: the first read after
//! [`DRAIN_FIRST_NS`], then at an interval adapted to how full the fullest ring was at the last
//! read (halved above half full, doubled below an eighth), between [`DRAIN_MIN_NS`] and
//! [`DRAIN_MAX_NS`]. A short run is never read before its end.
#![forbid(unsafe_code)]

/// The first read, this long after the spawn.
pub const DRAIN_FIRST_NS: u64 = 100_000_000;
/// The shortest interval between reads.
pub const DRAIN_MIN_NS: u64 = 10_000_000;
/// The longest interval between reads.
pub const DRAIN_MAX_NS: u64 = 400_000_000;

/// The schedule of one run's reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Drains {
    next_ns: u64,
    every_ns: u64,
}

impl Default for Drains {
    fn default() -> Drains {
        Drains {
            next_ns: u64::MAX,
            every_ns: DRAIN_FIRST_NS,
        }
    }
}

impl Drains {
    /// The command was spawned at `start_ns` (CLOCK_MONOTONIC).
    pub fn start(&mut self, start_ns: u64) {
        self.next_ns = start_ns.saturating_add(self.every_ns);
    }

    /// When the next read is due.
    pub fn next_ns(&self) -> u64 {
        self.next_ns
    }

    /// The rings were read at `now_ns`, the fullest `fullest` full (0–1).
    pub fn read_at(&mut self, now_ns: u64, fullest: f64) {
        let every = match fullest {
            f if f > 0.5 => self.every_ns / 2,
            f if f < 0.125 => self.every_ns * 2,
            _ => self.every_ns,
        };
        self.every_ns = every.clamp(DRAIN_MIN_NS, DRAIN_MAX_NS);
        self.next_ns = now_ns.saturating_add(self.every_ns);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_come_sooner_as_the_rings_fill_and_later_as_they_stay_empty() {
        let mut d = Drains::default();
        assert_eq!(d.next_ns(), u64::MAX, "no read before the spawn");
        d.start(1_000);
        assert_eq!(d.next_ns(), 1_000 + DRAIN_FIRST_NS);
        d.read_at(0, 0.9);
        assert_eq!(d.next_ns(), DRAIN_FIRST_NS / 2);
        for _ in 0..10 {
            d.read_at(0, 0.9);
        }
        assert_eq!(d.next_ns(), DRAIN_MIN_NS);
        d.read_at(0, 0.3);
        assert_eq!(d.next_ns(), DRAIN_MIN_NS);
        for _ in 0..10 {
            d.read_at(0, 0.0);
        }
        assert_eq!(d.next_ns(), DRAIN_MAX_NS);
    }
}
