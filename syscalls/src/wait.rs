//! Waiting with a deadline, looking at a finished child before reaping it, and signalling.
//!
//! The wait is `poll(2)` on a pidfd (readable once the child has exited) and, optionally, a
//! signalfd: it cannot miss an exit that happens before the call, and it works from any thread.
#![forbid(unsafe_code)]

use crate::errno::Errno;
use crate::raw::{self, MaskHow};
use crate::signal::{SigSet, Signal};
use rustix::event::{PollFd, PollFlags};
use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use rustix::process::{Pid, WaitId, WaitIdOptions};

/// What ended a [`crate::Child::wait`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaitEvent {
    /// The child has exited and waits to be reaped.
    Exited,
    /// A signal from the watched set arrived for this process.
    Signal(Signal),
    /// The deadline passed first.
    TimedOut,
}

/// A signalfd for a set of signals that the calling thread blocks (see [`SignalFd::block`]).
#[derive(Debug)]
pub struct SignalFd {
    fd: OwnedFd,
}

impl SignalFd {
    /// Blocks `set` in the calling thread and opens a signalfd for it. Returns the fd and the
    /// mask the thread had before, which is the mask a spawned program should start with.
    ///
    /// Signals are process-directed: for them to queue here, every thread of the process must
    /// block them (call this before starting threads).
    pub fn block(set: SigSet) -> Result<(SignalFd, SigSet), Errno> {
        let old = raw::sigprocmask(MaskHow::Block, Some(set))?;
        let fd = raw::signalfd(set)?;
        Ok((SignalFd { fd }, old))
    }

    /// Takes one pending signal, if any (non-blocking).
    pub fn take(&self) -> Result<Option<Signal>, Errno> {
        let mut info = [0u8; 128];
        match rustix::io::read(&self.fd, &mut info) {
            Ok(n) if n >= 4 => {
                let signo = u32::from_ne_bytes([info[0], info[1], info[2], info[3]]);
                Ok(Some(Signal::from_raw(signo as i32)))
            }
            Ok(_) => Err(Errno::IO),
            Err(e) if e == rustix::io::Errno::AGAIN => Ok(None),
            Err(e) => Err(e.into()),
        }
    }
}

impl AsFd for SignalFd {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

/// Now on CLOCK_MONOTONIC, in nanoseconds.
pub fn monotonic_ns() -> u64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
    (t.tv_sec as u64)
        .saturating_mul(1_000_000_000)
        .saturating_add(t.tv_nsec as u64)
}

pub(crate) fn pidfd_open(pid: i32) -> Result<OwnedFd, Errno> {
    let pid = Pid::from_raw(pid).ok_or(Errno::SRCH)?;
    Ok(rustix::process::pidfd_open(
        pid,
        rustix::process::PidfdFlags::empty(),
    )?)
}

/// Polls the pidfd (and signalfd) until exit, a signal, or the deadline. An exit seen in the
/// same poll as a signal wins; the signal stays queued for the next call.
pub(crate) fn wait_exit(
    pidfd: BorrowedFd<'_>,
    signals: Option<&SignalFd>,
    deadline_ns: Option<u64>,
) -> Result<WaitEvent, Errno> {
    loop {
        let timeout = match deadline_ns {
            Some(deadline) => {
                let left = deadline.saturating_sub(monotonic_ns());
                Some(rustix::time::Timespec {
                    tv_sec: (left / 1_000_000_000) as i64,
                    tv_nsec: (left % 1_000_000_000) as i64,
                })
            }
            None => None,
        };
        let mut fds = [
            PollFd::from_borrowed_fd(pidfd, PollFlags::IN),
            PollFd::from_borrowed_fd(signals.map_or(pidfd, |s| s.as_fd()), PollFlags::IN),
        ];
        let used = if signals.is_some() { 2 } else { 1 };
        match rustix::event::poll(&mut fds[..used], timeout.as_ref()) {
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => return Err(e.into()),
            Ok(0) => return Ok(WaitEvent::TimedOut),
            Ok(_) => {}
        }
        if !fds[0].revents().is_empty() {
            return Ok(WaitEvent::Exited);
        }
        if let Some(signals) = signals {
            if let Some(signal) = signals.take()? {
                return Ok(WaitEvent::Signal(signal));
            }
        }
    }
}

/// `waitid(P_PID, pid, WEXITED | WNOHANG | WNOWAIT)`: has the child exited? Leaves it waitable.
pub(crate) fn has_exited(pid: i32) -> Result<bool, Errno> {
    let pid = Pid::from_raw(pid).ok_or(Errno::SRCH)?;
    let options = WaitIdOptions::EXITED | WaitIdOptions::NOHANG | WaitIdOptions::NOWAIT;
    Ok(rustix::process::waitid(WaitId::Pid(pid), options)?.is_some())
}

/// `waitid(P_PID, pid, WSTOPPED | WNOHANG | WNOWAIT)`: the stopping signal, if stopped.
pub(crate) fn stopped_by(pid: i32) -> Result<Option<Signal>, Errno> {
    let pid = Pid::from_raw(pid).ok_or(Errno::SRCH)?;
    let options = WaitIdOptions::STOPPED | WaitIdOptions::NOHANG | WaitIdOptions::NOWAIT;
    Ok(rustix::process::waitid(WaitId::Pid(pid), options)?
        .and_then(|status| status.stopping_signal())
        .map(Signal::from_raw))
}

pub(crate) fn kill(pid: i32, signal: Signal) -> Result<(), Errno> {
    if pid <= 0 {
        return Err(Errno::SRCH);
    }
    raw::kill(pid, signal.raw())
}

pub(crate) fn kill_group(pgid: i32, signal: Signal) -> Result<(), Errno> {
    if pgid <= 1 {
        return Err(Errno::SRCH);
    }
    raw::kill(-pgid, signal.raw())
}

/// Reaps any exited child without blocking (for orphans adopted as a subreaper or PID 1).
/// Returns how many were reaped.
pub fn reap_orphans() -> usize {
    let mut reaped = 0;
    while let Ok(Some(_)) = raw::wait4(-1, raw::Wait4Options::NOHANG) {
        reaped += 1;
    }
    reaped
}
