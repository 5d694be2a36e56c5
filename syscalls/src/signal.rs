//! Signal masks and dispositions: the safe fronts of `rt_sigprocmask` and `rt_sigaction`, with
//! [`Signal`] and [`SigSet`].
#![forbid(unsafe_code)]

pub use crate::sigset::{SigSet, Signal, MAX_SIGNAL};

pub use crate::abi::MaskHow;

/// `rt_sigprocmask(how, set, &old)` — change the calling thread's signal mask; returns the old
/// one. With `set = None` only reads the mask.
///
/// # References
/// [sigprocmask(2)](https://man7.org/linux/man-pages/man2/sigprocmask.2.html)
#[doc(alias = "rt_sigprocmask")]
pub fn sigprocmask(how: MaskHow, set: Option<SigSet>) -> Result<SigSet, crate::Errno> {
    let (new, mut old) = (set.map(SigSet::bits), 0u64);
    crate::errno::zero_or(crate::raw::sigprocmask(how, new.as_ref(), &mut old))?;
    Ok(SigSet::from_bits(old))
}

/// What a signal's disposition is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Disposition {
    /// `SIG_DFL`.
    Default,
    /// `SIG_IGN`.
    Ignore,
    /// A handler function is installed.
    Handler,
}

/// `rt_sigaction(sig, NULL, &old)` — read a signal's disposition.
///
/// # References
/// [sigaction(2)](https://man7.org/linux/man-pages/man2/sigaction.2.html)
pub fn disposition(signal: Signal) -> Result<Disposition, crate::Errno> {
    let mut old = crate::abi::KernelSigaction::DEFAULT;
    crate::errno::zero_or(crate::raw::sigaction_query(signal.raw() as usize, &mut old))?;
    Ok(match old.handler {
        crate::abi::SIG_DFL => Disposition::Default,
        crate::abi::SIG_IGN => Disposition::Ignore,
        _ => Disposition::Handler,
    })
}

/// `rt_sigaction(sig, SIG_DFL, NULL)` — restore a signal's default disposition.
///
/// Used at start-up for SIGCHLD: an inherited `SIG_IGN` makes the kernel auto-reap children,
/// and `wait4` would then fail with `ECHILD` and lose the child's usage.
///
/// # References
/// [sigaction(2)](https://man7.org/linux/man-pages/man2/sigaction.2.html)
pub fn set_default_disposition(signal: Signal) -> Result<(), crate::Errno> {
    crate::errno::zero_or(crate::raw::sigaction_default(signal.raw() as usize))
}

/// The signals that have a handler right now (64 `rt_sigaction` queries). A single-threaded
/// program that installs no handler afterwards can pass this to
/// [`crate::SpawnOptions::handled_signals`], so that its children skip the same 64 queries.
pub fn handled_signals() -> Result<SigSet, crate::Errno> {
    let mut set = SigSet::EMPTY;
    for n in 1..=MAX_SIGNAL {
        let signal = Signal::from_raw(n);
        if signal != Signal::KILL
            && signal != Signal::STOP
            && disposition(signal)? == Disposition::Handler
        {
            set = set.with(signal);
        }
    }
    Ok(set)
}
