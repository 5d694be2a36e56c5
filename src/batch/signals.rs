//! The signals coldtrace takes over while a batch runs (into a signalfd), and the mask its
//! children start with. It only receives signals; deciding what a signal means is the loop's.
#![forbid(unsafe_code)]

use crate::batch::error::BatchError;
use coldtrace_syscalls::signal::Disposition;
use coldtrace_syscalls::{SigSet, Signal, SignalFd, Subreaper};

/// The signals coldtrace takes over while it runs, and the mask children start with.
pub struct Signals {
    pub(crate) fd: SignalFd,
    pub(crate) child_mask: SigSet,
    /// The signals with a handler at start-up (Rust's std installs SIGSEGV and SIGBUS ones);
    /// coldtrace is single-threaded and installs none later, so children reset just these.
    pub(crate) handled: Option<SigSet>,
    /// The right to reap adopted orphans after each run.
    pub(crate) subreaper: Subreaper,
}

impl Signals {
    /// Resets SIGCHLD to its default (an inherited `SIG_IGN` would auto-reap children and lose
    /// their usage), becomes a child subreaper (orphaned descendants are reaped, not left to
    /// init), and blocks SIGINT, SIGQUIT, SIGTERM, SIGHUP and SIGCHLD into a signalfd: the
    /// terminal's SIGINT still reaches a child in our process group, and coldtrace notices it
    /// without a handler.
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
        let handled = coldtrace_syscalls::signal::handled_signals().ok();
        let mut set = SigSet::EMPTY.with(Signal::CHLD);
        for sig in [Signal::INT, Signal::QUIT, Signal::TERM, Signal::HUP] {
            if coldtrace_syscalls::signal::disposition(sig) != Ok(Disposition::Ignore) {
                set = set.with(sig);
            }
        }
        let (fd, child_mask) = SignalFd::block(set)
            .map_err(|e| BatchError::own(format!("cannot set up signal handling: {e}")))?;
        Ok(Signals {
            fd,
            child_mask,
            handled,
            subreaper,
        })
    }

    /// A pending request to stop (SIGINT, SIGQUIT, SIGTERM, SIGHUP), if any; SIGCHLD is dropped.
    pub fn pending_interrupt(&self) -> Option<Signal> {
        while let Ok(Some(sig)) = self.fd.take() {
            if sig != Signal::CHLD {
                return Some(sig);
            }
        }
        None
    }
}
