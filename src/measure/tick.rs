//! The kernel's scheduler tick: the period at which rusage's user/sys split is sampled. With
//! tick-based CPU accounting (`CONFIG_TICK_CPU_ACCOUNTING`, the usual configuration) each tick
//! charges the running task's tick to user or system time; the sum is then scaled to the
//! precise runtime, so user + sys is exact and the split between them is known to about a tick.
//! It reads the tick; what to say with it is the explanation's business.
//!
//! Nothing in procfs names `CONFIG_HZ`. Two sources are read, in order:
//! - `/proc/timer_list` (root only): `jiffies` against `now at … nsecs` (CLOCK_MONOTONIC). The
//!   kernel starts jiffies at `INITIAL_JIFFIES`, 2³² − 300 × HZ on 64-bit, and adds HZ a
//!   second, so of the HZ values Linux offers (100, 250, 300, 1000) one fits the pair
//!   (verified here: 4,296,045,279 jiffies at 4,612.165 s is HZ = 250 to 58 jiffies, the next
//!   candidate 215,000 off);
//! - `/boot/config-RELEASE`, `CONFIG_HZ=`.
//!
//! Without either the tick is unknown, and callers assume the coarsest, 10 ms (HZ = 100).
//!
//! See [proc_timer_list(5)](https://man7.org/linux/man-pages/man5/proc_timer_list.5.html) and
//! [time(7)](https://man7.org/linux/man-pages/man7/time.7.html) ("The software clock, HZ, and
//! jiffies").
#![forbid(unsafe_code)]

/// The HZ values the kernel's configuration offers.
const HZ_CHOICES: [u64; 4] = [100, 250, 300, 1000];
/// The coarsest tick, assumed when it cannot be read.
pub const COARSEST_TICK_NS: u64 = 10_000_000;

/// The tick and where it was read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tick {
    /// The tick's period.
    pub ns: u64,
    /// `timer_list`, `kernel config`, or `assumed` (neither could be read: the coarsest).
    pub source: &'static str,
}

impl Tick {
    /// The tick of this kernel, read once.
    pub fn read() -> Tick {
        let from_timer_list = crate::measure::procfs::read_text("/proc/timer_list", usize::MAX)
            .and_then(|t| hz_from_timer_list(t.as_bytes()))
            .map(|hz| (hz, "timer_list"));
        let from_config = || {
            let release = rustix::system::uname().release().to_str().ok()?.to_owned();
            let text = std::fs::read(format!("/boot/config-{release}")).ok()?;
            hz_from_config(&text).map(|hz| (hz, "kernel config"))
        };
        match from_timer_list.or_else(from_config) {
            Some((hz, source)) => Tick {
                ns: 1_000_000_000 / hz,
                source,
            },
            None => Tick {
                ns: COARSEST_TICK_NS,
                source: "assumed",
            },
        }
    }
}

/// The number after `key` on the first line that starts with it.
fn number_after(text: &[u8], key: &[u8]) -> Option<u64> {
    text.split(|&b| b == b'\n').find_map(|line| {
        let rest = line.strip_prefix(key)?;
        let digits: Vec<u8> = rest
            .iter()
            .copied()
            .skip_while(|b| *b == b' ')
            .take_while(u8::is_ascii_digit)
            .collect();
        std::str::from_utf8(&digits).ok()?.parse().ok()
    })
}

/// HZ from `/proc/timer_list`: the candidate whose `INITIAL_JIFFIES + HZ × seconds` is nearest
/// the jiffies read, when it is within a second's worth of the next nearest's error.
pub fn hz_from_timer_list(text: &[u8]) -> Option<u64> {
    let now_ns = number_after(text, b"now at")?;
    let jiffies = number_after(text, b"jiffies:")? as f64;
    let seconds = now_ns as f64 / 1e9;
    let mut errors: Vec<(f64, u64)> = HZ_CHOICES
        .iter()
        .map(|&hz| {
            let initial = 4_294_967_296.0 - 300.0 * hz as f64;
            ((jiffies - initial - hz as f64 * seconds).abs(), hz)
        })
        .collect();
    errors.sort_by(|a, b| a.0.total_cmp(&b.0));
    let ((best, hz), (next, _)) = (errors[0], errors[1]);
    // A clear winner: within a second of its own rate, and far from every other candidate.
    (best < hz as f64 && next > 10.0 * best.max(1.0)).then_some(hz)
}

/// HZ from a kernel configuration file (`CONFIG_HZ=250`).
pub fn hz_from_config(text: &[u8]) -> Option<u64> {
    number_after(text, b"CONFIG_HZ=").filter(|hz| HZ_CHOICES.contains(hz))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hz_is_read_from_jiffies_and_the_monotonic_clock() {
        let text = b"Timer List Version: v0.10\nHRTIMER_MAX_CLOCK_BASES: 8\n\
                     now at 4612165053407 nsecs\n\ncpu: 0\n jiffies: 1\njiffies: 4296045279\n";
        // " jiffies: 1" is indented: only a line that starts with the key counts.
        assert_eq!(hz_from_timer_list(text), Some(250));
        // Right after boot: jiffies near their initial value, 2^32 − 300 × HZ.
        let boot = format!(
            "now at 2000000000 nsecs\njiffies: {}\n",
            4_294_967_296u64 - 298_010
        );
        assert_eq!(hz_from_timer_list(boot.as_bytes()), Some(1000));
        assert_eq!(hz_from_timer_list(b"now at 5 nsecs\n"), None);
        // Jiffies that fit no candidate.
        let odd = b"now at 4612165053407 nsecs\njiffies: 4000000000\n";
        assert_eq!(hz_from_timer_list(odd), None);
    }

    #[test]
    fn hz_is_read_from_a_kernel_config() {
        assert_eq!(
            hz_from_config(b"# CONFIG_HZ_100 is not set\nCONFIG_HZ_250=y\nCONFIG_HZ=250\n"),
            Some(250)
        );
        assert_eq!(hz_from_config(b"CONFIG_HZ=123\n"), None);
    }

    #[test]
    fn this_kernels_tick_is_one_of_linuxs() {
        let tick = Tick::read();
        assert!(
            [1_000_000, 3_333_333, 4_000_000, 10_000_000].contains(&tick.ns),
            "{tick:?}"
        );
    }
}
