//! [`WaitStatus`]: a total, pure decoder of the status word that `wait4(2)` and `waitpid(2)`
//! store.
//!
//! The accessors follow the C library's macros bit for bit (`WIFEXITED`, `WEXITSTATUS`,
//! `WIFSIGNALED`, `WTERMSIG`, `WCOREDUMP`, `WIFSTOPPED`, `WSTOPSIG`, `WIFCONTINUED`), so they
//! agree with `std::os::unix::process::ExitStatusExt` on every `i32`. The classification into
//! [`WaitStatusKind`] is stricter: only the exact words the kernel produces get a named variant,
//! everything else is [`WaitStatusKind::Unknown`], so decoding is total, never panics, and
//! `from_raw(raw).to_raw() == raw` for every `i32`.
#![forbid(unsafe_code)]

use crate::signal::Signal;
use core::fmt;

/// A wait status, as stored by the kernel. Every `i32` is a valid `WaitStatus`.
#[repr(transparent)]
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct WaitStatus(i32);

/// What a [`WaitStatus`] says happened, for the exact words the kernel produces.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum WaitStatusKind {
    /// The child called `exit` or returned from `main`: status word `code << 8`.
    Exited {
        /// The low 8 bits of the exit code.
        code: u8,
    },
    /// The child was killed by a signal: status word `signal | 0x80 if core dumped`.
    Signaled {
        /// The terminating signal, 1..=126.
        signal: Signal,
        /// Whether the kernel wrote a core dump.
        core_dumped: bool,
    },
    /// The child was stopped (reported with `WUNTRACED`): status word `signal << 8 | 0x7f`.
    Stopped {
        /// The stopping signal, 1..=255.
        signal: Signal,
    },
    /// The child was resumed by SIGCONT (reported with `WCONTINUED`): status word `0xffff`.
    Continued,
    /// A word that none of the above produces (ptrace event bits, stray high bits, …).
    Unknown {
        /// The word as given.
        raw: i32,
    },
}

impl WaitStatus {
    /// Wraps a raw status word. Total: every value is accepted.
    pub const fn from_raw(raw: i32) -> Self {
        WaitStatus(raw)
    }

    /// The raw status word; `WaitStatus::from_raw(raw).to_raw() == raw` always.
    pub const fn to_raw(self) -> i32 {
        self.0
    }

    /// The exit code if the child exited (`WIFEXITED` → `WEXITSTATUS`).
    pub const fn code(self) -> Option<i32> {
        if self.0 & 0x7f == 0 {
            Some((self.0 >> 8) & 0xff)
        } else {
            None
        }
    }

    /// The terminating signal if the child was killed (`WIFSIGNALED` → `WTERMSIG`).
    pub const fn signal(self) -> Option<i32> {
        if self.is_signaled() {
            Some(self.0 & 0x7f)
        } else {
            None
        }
    }

    /// Whether the child was killed and dumped core (`WIFSIGNALED && WCOREDUMP`).
    pub const fn core_dumped(self) -> bool {
        self.is_signaled() && self.0 & 0x80 != 0
    }

    /// The stopping signal if the child is stopped (`WIFSTOPPED` → `WSTOPSIG`).
    pub const fn stopped_signal(self) -> Option<i32> {
        if self.0 & 0xff == 0x7f {
            Some((self.0 >> 8) & 0xff)
        } else {
            None
        }
    }

    /// Whether the child was continued (`WIFCONTINUED`).
    pub const fn continued(self) -> bool {
        self.0 == 0xffff
    }

    /// `WIFSIGNALED`: the low 7 bits are neither 0 (exited) nor 0x7f (stopped).
    const fn is_signaled(self) -> bool {
        let low = self.0 & 0x7f;
        low != 0 && low != 0x7f
    }

    /// Classifies the word; exact kernel encodings get a named variant, the rest `Unknown`.
    pub const fn kind(self) -> WaitStatusKind {
        let raw = self.0;
        if raw & !0xff00 == 0 {
            WaitStatusKind::Exited {
                code: (raw >> 8) as u8,
            }
        } else if raw & !0xff == 0 && self.is_signaled() {
            WaitStatusKind::Signaled {
                signal: Signal::from_raw(raw & 0x7f),
                core_dumped: raw & 0x80 != 0,
            }
        } else if raw & !0xffff == 0 && raw & 0xff == 0x7f && raw >> 8 != 0 {
            WaitStatusKind::Stopped {
                signal: Signal::from_raw(raw >> 8),
            }
        } else if raw == 0xffff {
            WaitStatusKind::Continued
        } else {
            WaitStatusKind::Unknown { raw }
        }
    }
}

impl WaitStatusKind {
    /// The kernel's status word for this kind (the inverse of [`WaitStatus::kind`]).
    ///
    /// Fields outside the kernel's ranges are masked into them, so this never panics; for kinds
    /// built by [`WaitStatus::kind`], `WaitStatus::from_raw(k.to_raw()).kind() == k`.
    pub const fn to_raw(self) -> i32 {
        match self {
            WaitStatusKind::Exited { code } => (code as i32) << 8,
            WaitStatusKind::Signaled {
                signal,
                core_dumped,
            } => (signal.raw() & 0x7f) | if core_dumped { 0x80 } else { 0 },
            WaitStatusKind::Stopped { signal } => ((signal.raw() & 0xff) << 8) | 0x7f,
            WaitStatusKind::Continued => 0xffff,
            WaitStatusKind::Unknown { raw } => raw,
        }
    }
}

impl fmt::Debug for WaitStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "WaitStatus({:#x}: {})", self.0, self)
    }
}

impl fmt::Display for WaitStatus {
    /// `exited with code 3`, `killed by SIGSEGV (core dumped)`, `stopped by SIGSTOP`, …
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind() {
            WaitStatusKind::Exited { code } => write!(f, "exited with code {code}"),
            WaitStatusKind::Signaled {
                signal,
                core_dumped,
            } => {
                write!(f, "killed by {signal}")?;
                if core_dumped {
                    f.write_str(" (core dumped)")?;
                }
                Ok(())
            }
            WaitStatusKind::Stopped { signal } => write!(f, "stopped by {signal}"),
            WaitStatusKind::Continued => f.write_str("continued"),
            WaitStatusKind::Unknown { raw } => write!(f, "unknown wait status {raw:#x}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_encodings_decode_to_their_kind() {
        assert_eq!(
            WaitStatus::from_raw(0).kind(),
            WaitStatusKind::Exited { code: 0 }
        );
        assert_eq!(
            WaitStatus::from_raw(3 << 8).kind(),
            WaitStatusKind::Exited { code: 3 }
        );
        assert_eq!(
            WaitStatus::from_raw(0x8b).kind(),
            WaitStatusKind::Signaled {
                signal: Signal::SEGV,
                core_dumped: true
            }
        );
        assert_eq!(
            WaitStatus::from_raw(0x137f).kind(),
            WaitStatusKind::Stopped {
                signal: Signal::STOP
            }
        );
        assert_eq!(
            WaitStatus::from_raw(0xffff).kind(),
            WaitStatusKind::Continued
        );
        assert_eq!(
            WaitStatus::from_raw(0x7f).kind(),
            WaitStatusKind::Unknown { raw: 0x7f }
        );
        assert_eq!(
            WaitStatus::from_raw(0x80).kind(),
            WaitStatusKind::Unknown { raw: 0x80 }
        );
        assert_eq!(
            WaitStatus::from_raw(-1).kind(),
            WaitStatusKind::Unknown { raw: -1 }
        );
    }

    #[test]
    fn display_names_the_signal() {
        use alloc::string::ToString;
        assert_eq!(
            WaitStatus::from_raw(0x8b).to_string(),
            "killed by SIGSEGV (core dumped)"
        );
        assert_eq!(
            WaitStatus::from_raw(7 << 8).to_string(),
            "exited with code 7"
        );
    }
}
