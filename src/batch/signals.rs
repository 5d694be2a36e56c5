//! The signals coldtrace takes over while a batch runs (into a signalfd), and the mask its
//! children start with. It only receives signals; deciding what a signal means is the loop's.
#![forbid(unsafe_code)]

use crate::batch::error::BatchError;
use coldtrace_syscalls::signal::{Disposition, MaskHow};
use coldtrace_syscalls::{SigSet, Signal, SignalFd, Subreaper};
use std::sync::OnceLock;

/// SIGXFSZ: what the kernel sends a process that writes past its file size limit
/// (`ulimit -f`, RLIMIT_FSIZE); by default it kills the process.
const FILE_SIZE: Signal = Signal::from_raw(25);

/// The signal mask coldtrace started with (before SIGXFSZ was held).
static STARTUP_MASK: OnceLock<SigSet> = OnceLock::new();

/// Holds SIGXFSZ blocked in coldtrace, before anything is written: a write past the file size
/// limit then fails with `EFBIG`, which is reported like a full disk (one line, exit 125, the
/// records written before it whole), instead of killing coldtrace mid-line. Blocked rather than
/// ignored: a disposition is inherited across exec, a mask is set for each child
/// ([`Signals::install`] gives children the mask coldtrace started with), so the command's own
/// SIGXFSZ behaves as it would without coldtrace. Call it once, first, single-threaded.
///
/// [setrlimit(2)](https://man7.org/linux/man-pages/man2/setrlimit.2.html)
pub fn hold_file_size_signal() {
    let held = SigSet::EMPTY.with(FILE_SIZE);
    if let Ok(before) = coldtrace_syscalls::signal::sigprocmask(MaskHow::Block, Some(held)) {
        let _ = STARTUP_MASK.set(before);
    }
}

/// `mask` without SIGXFSZ, unless coldtrace started with it blocked.
fn as_started(mask: SigSet) -> SigSet {
    match STARTUP_MASK.get() {
        Some(start) if !start.contains(FILE_SIZE) => {
            SigSet::from_bits(mask.bits() & !SigSet::EMPTY.with(FILE_SIZE).bits())
        }
        _ => mask,
    }
}

/// The signals that ask coldtrace to stop: the batch ends after the run in progress (whose
/// command is sent the same signal, see [`crate::measure::runner`]), its records whole and
/// `batch.json` written, exit 128+N. SIGUSR1, SIGUSR2 and SIGALRM are among them: left at
/// their default action they would kill coldtrace mid-batch with no `batch.json`, and its
/// command would run on.
pub const STOP_REQUESTS: [Signal; 7] = [
    Signal::INT,
    Signal::QUIT,
    Signal::TERM,
    Signal::HUP,
    Signal::USR1,
    Signal::USR2,
    Signal::ALRM,
];

/// The signals coldtrace takes over while it runs, and the mask children start with.
pub struct Signals {
    pub(crate) fd: SignalFd,
    pub(crate) child_mask: SigSet,
    /// The right to reap adopted orphans after each run.
    pub(crate) subreaper: Subreaper,
}

impl Signals {
    /// Resets SIGCHLD to its default (an inherited `SIG_IGN` would auto-reap children and lose
    /// their usage), becomes a child subreaper (orphaned descendants are reaped, not left to
    /// init), and blocks the [`STOP_REQUESTS`] and SIGCHLD into a signalfd: the terminal's
    /// SIGINT still reaches a child in our process group, and coldtrace notices it without a
    /// handler (blocking installs none); children start with the mask from before.
    ///
    /// A stop signal inherited as ignored stays ignored, by coldtrace and by its children (the
    /// child keeps an ignored disposition across exec): `nohup coldtrace …` survives SIGHUP and
    /// a shell's `trap '' INT` survives Ctrl-C, as POSIX wants and GNU time and shells do. It is
    /// left out of the signalfd, because a blocked signal is queued even when ignored. The two
    /// exceptions: SIGCHLD (reset, see above) and SIGPIPE, whose inherited state cannot be seen
    /// (Rust's runtime ignores it before `main`; children get it at its default).
    pub fn install() -> Result<Signals, BatchError> {
        let _ = coldtrace_syscalls::signal::set_default_disposition(Signal::CHLD);
        let subreaper = Subreaper::claim();
        let mut set = SigSet::EMPTY.with(Signal::CHLD);
        for sig in STOP_REQUESTS {
            if coldtrace_syscalls::signal::disposition(sig) != Ok(Disposition::Ignore) {
                set = set.with(sig);
            }
        }
        let (fd, child_mask) = SignalFd::block(set)
            .map_err(|e| BatchError::own(format!("cannot set up signal handling: {e}")))?;
        Ok(Signals {
            fd,
            child_mask: as_started(child_mask),
            subreaper,
        })
    }

    /// A pending request to stop (one of [`STOP_REQUESTS`]), if any; SIGCHLD is dropped.
    pub fn pending_interrupt(&self) -> Option<Signal> {
        while let Ok(Some(sig)) = self.fd.take() {
            if sig != Signal::CHLD {
                return Some(sig);
            }
        }
        None
    }
}
