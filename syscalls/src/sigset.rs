//! [`Signal`] numbers with their names, and [`SigSet`], the kernel's signal set: plain values
//! that both the unsafe room and the safe fronts use (re-exported by [`crate::signal`]).
#![forbid(unsafe_code)]

use core::fmt;

/// A signal number, as the kernel reports it (1..=64 on Linux).
#[repr(transparent)]
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
pub struct Signal(i32);

/// The standard signals of Linux on x86_64 and aarch64 (`signal(7)`), by number.
const STANDARD_NAMES: [&str; 31] = [
    "SIGHUP",
    "SIGINT",
    "SIGQUIT",
    "SIGILL",
    "SIGTRAP",
    "SIGABRT",
    "SIGBUS",
    "SIGFPE",
    "SIGKILL",
    "SIGUSR1",
    "SIGSEGV",
    "SIGUSR2",
    "SIGPIPE",
    "SIGALRM",
    "SIGTERM",
    "SIGSTKFLT",
    "SIGCHLD",
    "SIGCONT",
    "SIGSTOP",
    "SIGTSTP",
    "SIGTTIN",
    "SIGTTOU",
    "SIGURG",
    "SIGXCPU",
    "SIGXFSZ",
    "SIGVTALRM",
    "SIGPROF",
    "SIGWINCH",
    "SIGIO",
    "SIGPWR",
    "SIGSYS",
];

/// The kernel's first real-time signal; glibc reserves 32 and 33, so its `SIGRTMIN` is 34.
const KERNEL_SIGRTMIN: i32 = 32;
/// The highest signal number on Linux (`_NSIG - 1`).
pub const MAX_SIGNAL: i32 = 64;

impl Signal {
    /// SIGHUP (1).
    pub const HUP: Signal = Signal(1);
    /// SIGINT (2).
    pub const INT: Signal = Signal(2);
    /// SIGQUIT (3).
    pub const QUIT: Signal = Signal(3);
    /// SIGABRT (6).
    pub const ABRT: Signal = Signal(6);
    /// SIGKILL (9).
    pub const KILL: Signal = Signal(9);
    /// SIGSEGV (11).
    pub const SEGV: Signal = Signal(11);
    /// SIGPIPE (13).
    pub const PIPE: Signal = Signal(13);
    /// SIGALRM (14).
    pub const ALRM: Signal = Signal(14);
    /// SIGTERM (15).
    pub const TERM: Signal = Signal(15);
    /// SIGUSR1 (10).
    pub const USR1: Signal = Signal(10);
    /// SIGUSR2 (12).
    pub const USR2: Signal = Signal(12);
    /// SIGBUS (7).
    pub const BUS: Signal = Signal(7);
    /// SIGCHLD (17).
    pub const CHLD: Signal = Signal(17);
    /// SIGCONT (18).
    pub const CONT: Signal = Signal(18);
    /// SIGSTOP (19).
    pub const STOP: Signal = Signal(19);
    /// SIGTSTP (20).
    pub const TSTP: Signal = Signal(20);
    /// SIGXFSZ (25).
    pub const XFSZ: Signal = Signal(25);

    /// Wraps a signal number without checking it (any `i32` is representable).
    pub const fn from_raw(raw: i32) -> Self {
        Signal(raw)
    }

    /// The signal number.
    pub const fn raw(self) -> i32 {
        self.0
    }

    /// The C name of a standard signal (`"SIGSEGV"`); `None` for real-time and unknown numbers.
    pub fn name(self) -> Option<&'static str> {
        let index = usize::try_from(self.0.checked_sub(1)?).ok()?;
        STANDARD_NAMES.get(index).copied()
    }
}

impl fmt::Display for Signal {
    /// `SIGSEGV`, `SIGRT+3` for real-time signals (counted from the kernel's 32), or `signal 99`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(name) = self.name() {
            f.write_str(name)
        } else if (KERNEL_SIGRTMIN..=MAX_SIGNAL).contains(&self.0) {
            write!(f, "SIGRT+{}", self.0 - KERNEL_SIGRTMIN)
        } else {
            write!(f, "signal {}", self.0)
        }
    }
}

/// The kernel's signal set: one bit per signal, bit `n - 1` for signal `n` (`sigset_t` as the
/// `rt_sig*` system calls take it, 8 bytes on Linux).
#[repr(transparent)]
#[derive(Clone, Copy, PartialEq, Eq, Default)]
pub struct SigSet(u64);

impl SigSet {
    /// No signal.
    pub const EMPTY: SigSet = SigSet(0);
    /// Every signal (the kernel silently keeps SIGKILL and SIGSTOP unblockable).
    pub const FULL: SigSet = SigSet(!0);

    /// Builds a set from the raw kernel bits.
    pub const fn from_bits(bits: u64) -> Self {
        SigSet(bits)
    }

    /// The raw kernel bits.
    pub const fn bits(self) -> u64 {
        self.0
    }

    /// This set with `signal` added; numbers outside 1..=64 are ignored.
    pub const fn with(self, signal: Signal) -> Self {
        match Self::bit(signal) {
            Some(bit) => SigSet(self.0 | bit),
            None => self,
        }
    }

    /// Whether `signal` is in the set.
    pub const fn contains(self, signal: Signal) -> bool {
        match Self::bit(signal) {
            Some(bit) => self.0 & bit != 0,
            None => false,
        }
    }

    const fn bit(signal: Signal) -> Option<u64> {
        if signal.0 >= 1 && signal.0 <= MAX_SIGNAL {
            Some(1u64 << (signal.0 - 1))
        } else {
            None
        }
    }
}

impl fmt::Debug for SigSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut list = f.debug_set();
        for n in 1..=MAX_SIGNAL {
            if self.contains(Signal(n)) {
                list.entry(&format_args!("{}", Signal(n)));
            }
        }
        list.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;

    #[test]
    fn every_standard_signal_has_its_name() {
        let expected = [
            (1, "SIGHUP"),
            (2, "SIGINT"),
            (3, "SIGQUIT"),
            (6, "SIGABRT"),
            (9, "SIGKILL"),
            (11, "SIGSEGV"),
            (13, "SIGPIPE"),
            (15, "SIGTERM"),
            (17, "SIGCHLD"),
            (19, "SIGSTOP"),
            (31, "SIGSYS"),
        ];
        for (n, name) in expected {
            assert_eq!(Signal::from_raw(n).to_string(), name);
        }
        assert_eq!(Signal::from_raw(34).to_string(), "SIGRT+2");
        assert_eq!(Signal::from_raw(0).to_string(), "signal 0");
        assert_eq!(Signal::from_raw(-5).to_string(), "signal -5");
        assert_eq!(Signal::from_raw(i32::MIN).name(), None);
    }

    #[test]
    fn sigset_bits_follow_the_kernel_layout() {
        let set = SigSet::EMPTY.with(Signal::INT).with(Signal::CHLD);
        assert_eq!(set.bits(), (1 << 1) | (1 << 16));
        assert!(set.contains(Signal::INT));
        assert!(!set.contains(Signal::TERM));
        assert_eq!(SigSet::EMPTY.with(Signal::from_raw(65)), SigSet::EMPTY);
        assert_eq!(SigSet::EMPTY.with(Signal::from_raw(64)).bits(), 1 << 63);
    }
}
