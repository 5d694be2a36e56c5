//! Waiting with a deadline, looking at a finished child before reaping it, reaping with
//! `wait4`, and reaping adopted orphans.
//!
//! The wait is `poll(2)` on a pidfd (readable once the child has exited) and, optionally, a
//! signalfd: it cannot miss an exit that happens before the call, and it works from any thread.
//! Without pidfds it is `poll(2)` on the signalfd, each SIGCHLD followed by
//! `waitid(P_PID, pid, WEXITED | WNOHANG | WNOWAIT)`, with the same deadline.
#![forbid(unsafe_code)]

pub use crate::abi::Wait4Options;
use crate::errno::Errno;
use crate::raw;
use crate::rusage::ResourceUsage;
use crate::signal::{SigSet, Signal};
use crate::status::WaitStatus;
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

/// `wait4(pid, &status, options, &rusage)` — wait for one child and collect its resource
/// usage.
///
/// For a child this crate did not start (e.g. with `std::process::Command`): `pid` must be a
/// PID, and not one that a live [`crate::Child`] owns — that child is reaped with
/// [`crate::Child::reap`], its one owner. Waiting for "any child" (`-1`, `0`, `-pgid`) is not
/// offered: it could take a child that a `Child` is about to reap. Retries on `EINTR`. Returns
/// `Ok(None)` only with [`Wait4Options::NOHANG`] when the child has not changed state. The
/// usage covers the child and its descendants that were waited for.
///
/// # Errors
/// `EINVAL` for a `pid` ≤ 0 or bad options; `EBUSY` for a PID a live `Child` owns, and for
/// every PID while a spawn of this crate is between its clone and the registration of its
/// `Child` (the new PID is not known until then) or while more than 64 `Child` values are
/// alive (when ownership cannot be told): try again later; `ECHILD` when there is no such
/// child (or SIGCHLD is ignored, so children are auto-reaped).
///
/// # References
/// [wait4(2)](https://man7.org/linux/man-pages/man2/wait4.2.html)
pub fn wait4(
    pid: i32,
    options: Wait4Options,
) -> Result<Option<(i32, WaitStatus, ResourceUsage)>, Errno> {
    if pid <= 0 {
        return Err(Errno::INVAL);
    }
    if crate::owners::may_be_owned(pid) {
        return Err(Errno::BUSY);
    }
    wait4_retrying(pid, options)
}

/// `wait4` on one PID, retried on `EINTR`.
fn wait4_retrying(
    pid: i32,
    options: Wait4Options,
) -> Result<Option<(i32, WaitStatus, ResourceUsage)>, Errno> {
    loop {
        match raw::wait4(pid, options.bits()) {
            Err(Errno::INTR) => continue,
            Err(e) => return Err(e),
            Ok(None) => return Ok(None),
            Ok(Some((child, status, usage))) => {
                let usage = ResourceUsage::from_kernel(&usage);
                return Ok(Some((child, WaitStatus::from_raw(status), usage)));
            }
        }
    }
}

/// [`crate::Child::reap`]: with a pidfd, awaits the exit on it (leaving the zombie), then
/// reaps the PID; without, blocks in `wait4(pid)`.
pub(crate) fn reap_owned(
    pid: i32,
    pidfd: Option<BorrowedFd<'_>>,
    exited: bool,
) -> Result<(WaitStatus, ResourceUsage), Errno> {
    let options = match pidfd {
        // Seen exited, so a zombie that only this process can reap: no need to wait again.
        _ if exited => Wait4Options::NOHANG,
        Some(fd) => {
            await_exit_by_pidfd(fd)?;
            Wait4Options::NOHANG
        }
        None => Wait4Options::BLOCK,
    };
    #[cfg(test)]
    crate::test_hooks::hold_reap_window();
    match wait4_retrying(pid, options)? {
        Some((_, status, usage)) => Ok((status, usage)),
        None => Err(Errno::CHILD),
    }
}

/// A signalfd for a set of signals that the calling thread blocks (see [`SignalFd::block`]).
#[derive(Debug)]
pub struct SignalFd {
    fd: OwnedFd,
    set: SigSet,
}

impl SignalFd {
    /// Blocks `set` in the calling thread and opens a signalfd for it. Returns the fd and the
    /// mask the thread had before, which is the mask a spawned program should start with.
    ///
    /// Signals are process-directed: for them to queue here, every thread of the process must
    /// block them (call this before starting threads).
    ///
    /// # References
    /// [signalfd(2)](https://man7.org/linux/man-pages/man2/signalfd.2.html)
    pub fn block(set: SigSet) -> Result<(SignalFd, SigSet), Errno> {
        let old = crate::signal::sigprocmask(crate::signal::MaskHow::Block, Some(set))?;
        let fd = raw::signalfd(set.bits())?;
        Ok((SignalFd { fd, set }, old))
    }

    /// The signals this fd reads.
    pub fn set(&self) -> SigSet {
        self.set
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

/// The poll timeout until `deadline_ns`, capped at `cap_ns`; `None` waits forever.
fn timeout(deadline_ns: Option<u64>, cap_ns: Option<u64>) -> Option<rustix::time::Timespec> {
    let left = match (
        deadline_ns.map(|d| d.saturating_sub(monotonic_ns())),
        cap_ns,
    ) {
        (Some(left), Some(cap)) => left.min(cap),
        (left, cap) => left.or(cap)?,
    };
    Some(rustix::time::Timespec {
        tv_sec: (left / 1_000_000_000) as i64,
        tv_nsec: (left % 1_000_000_000) as i64,
    })
}

/// Polls the pidfd (and signalfd) until exit, a signal, or the deadline. An exit seen in the
/// same poll as a signal wins; the signal stays queued for the next call.
pub(crate) fn wait_exit(
    pidfd: BorrowedFd<'_>,
    signals: Option<&SignalFd>,
    deadline_ns: Option<u64>,
) -> Result<WaitEvent, Errno> {
    loop {
        let mut fds = [
            PollFd::from_borrowed_fd(pidfd, PollFlags::IN),
            PollFd::from_borrowed_fd(signals.map_or(pidfd, |s| s.as_fd()), PollFlags::IN),
        ];
        let used = if signals.is_some() { 2 } else { 1 };
        match rustix::event::poll(&mut fds[..used], timeout(deadline_ns, None).as_ref()) {
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => return Err(e.into()),
            Ok(0) => return Ok(WaitEvent::TimedOut),
            Ok(_) => {}
        }
        if !fds[0].revents().is_empty() {
            return Ok(WaitEvent::Exited);
        }
        if let Some(signal) = signals.map(SignalFd::take).transpose()?.flatten() {
            return Ok(WaitEvent::Signal(signal));
        }
    }
}

/// The same contract as [`wait_exit`] without a pidfd: the exit is checked with `waitid(P_PID,
/// WNOWAIT)` before each poll and after each SIGCHLD; with no SIGCHLD watched, every 1 ms.
pub(crate) fn wait_exit_by_pid(
    pid: i32,
    signals: Option<&SignalFd>,
    deadline_ns: Option<u64>,
) -> Result<WaitEvent, Errno> {
    let watches_chld = signals.is_some_and(|s| s.set().contains(Signal::CHLD));
    let tick_ns = (!watches_chld).then_some(1_000_000);
    loop {
        if has_exited(pid)? {
            return Ok(WaitEvent::Exited);
        }
        if deadline_ns.is_some_and(|d| monotonic_ns() >= d) {
            return Ok(WaitEvent::TimedOut);
        }
        let left = timeout(deadline_ns, tick_ns);
        let polled = match signals {
            Some(s) => rustix::event::poll(&mut [PollFd::new(s, PollFlags::IN)], left.as_ref()),
            None => rustix::event::poll(&mut [], left.as_ref()),
        };
        match polled {
            Err(rustix::io::Errno::INTR) | Ok(0) => continue,
            Err(e) => return Err(e.into()),
            Ok(_) => {}
        }
        match signals.map(SignalFd::take).transpose()?.flatten() {
            Some(Signal::CHLD) if has_exited(pid)? => return Ok(WaitEvent::Exited),
            Some(signal) => return Ok(WaitEvent::Signal(signal)),
            None => {}
        }
    }
}

/// `waitid(P_PID, pid, WEXITED | WNOHANG | WNOWAIT)`: has the child exited? Leaves it waitable.
pub(crate) fn has_exited(pid: i32) -> Result<bool, Errno> {
    let pid = Pid::from_raw(pid).ok_or(Errno::SRCH)?;
    let options = WaitIdOptions::EXITED | WaitIdOptions::NOHANG | WaitIdOptions::NOWAIT;
    Ok(rustix::process::waitid(WaitId::Pid(pid), options)?.is_some())
}

/// `waitid(P_PIDFD, pidfd, WEXITED | WNOHANG | WNOWAIT)`: the same through a pidfd (≥ 5.4).
pub(crate) fn exited_by_pidfd(pidfd: BorrowedFd<'_>) -> Result<bool, Errno> {
    let options = WaitIdOptions::EXITED | WaitIdOptions::NOHANG | WaitIdOptions::NOWAIT;
    Ok(rustix::process::waitid(WaitId::PidFd(pidfd), options)?.is_some())
}

/// `waitid(P_PIDFD, pidfd, WEXITED | WNOWAIT)`: blocks until the child has exited; `ECHILD`
/// once it has been reaped (by anyone).
pub(crate) fn await_exit_by_pidfd(pidfd: BorrowedFd<'_>) -> Result<(), Errno> {
    loop {
        let options = WaitIdOptions::EXITED | WaitIdOptions::NOWAIT;
        match rustix::process::waitid(WaitId::PidFd(pidfd), options) {
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => return Err(e.into()),
            Ok(_) => return Ok(()),
        }
    }
}

/// `waitid(P_PIDFD, pidfd, WEXITED | WNOHANG | WNOWAIT, &rusage)`: the exited child's resource
/// usage, left waitable (`None` while it runs).
pub(crate) fn usage_at_exit(pidfd: BorrowedFd<'_>) -> Result<Option<ResourceUsage>, Errno> {
    loop {
        match raw::waitid_pidfd_usage(pidfd) {
            Err(Errno::INTR) => continue,
            other => return other.map(|u| u.map(|u| ResourceUsage::from_kernel(&u))),
        }
    }
}

/// `ESRCH` unless the child is still ours and unreaped (running, stopped or a zombie).
pub(crate) fn still_unreaped(pid: i32, pidfd: Option<BorrowedFd<'_>>) -> Result<(), Errno> {
    let options = WaitIdOptions::EXITED
        | WaitIdOptions::STOPPED
        | WaitIdOptions::CONTINUED
        | WaitIdOptions::NOHANG
        | WaitIdOptions::NOWAIT;
    let id = match pidfd {
        Some(fd) => WaitId::PidFd(fd),
        None => WaitId::Pid(Pid::from_raw(pid).ok_or(Errno::SRCH)?),
    };
    match rustix::process::waitid(id, options) {
        Ok(_) => Ok(()),
        Err(rustix::io::Errno::CHILD) => Err(Errno::SRCH),
        Err(e) => Err(e.into()),
    }
}

/// `waitid(WSTOPPED | WNOHANG | WNOWAIT)`: the stopping signal, if stopped — by a signal
/// (`CLD_STOPPED`) or in a tracing stop for this process as its tracer (`CLD_TRAPPED`: a child
/// that called `PTRACE_TRACEME` stops with SIGTRAP at its exec).
pub(crate) fn stopped_by(pid: i32, pidfd: Option<BorrowedFd<'_>>) -> Result<Option<Signal>, Errno> {
    let id = match pidfd {
        Some(fd) => WaitId::PidFd(fd),
        None => WaitId::Pid(Pid::from_raw(pid).ok_or(Errno::SRCH)?),
    };
    let options = WaitIdOptions::STOPPED | WaitIdOptions::NOHANG | WaitIdOptions::NOWAIT;
    Ok(rustix::process::waitid(id, options)?
        .and_then(|status| status.stopping_signal().or(status.trapping_signal()))
        .map(Signal::from_raw))
}

/// The right to reap adopted orphans: a child subreaper (`PR_SET_CHILD_SUBREAPER`), or PID 1.
///
/// Orphaned descendants become this process's children, and a subreaper must reap them or they
/// stay zombies. [`Subreaper::reap_orphans`] reaps every exited child that no live
/// [`crate::Child`] owns — so it also reaps children that other code in the program started
/// (e.g. with `std::process::Command`, whose `wait` would then fail with `ECHILD`). Becoming a
/// subreaper is therefore a whole-program decision: claim it only in a program whose every
/// child is a [`crate::Child`], as coldtrace's CLI does. A library should never call it.
///
/// One value at a time owns the sweep: a second [`Subreaper::claim`] while one is alive gets
/// `EBUSY` and reaps nothing, and the value is not `Sync` (it can move to another thread, not
/// be shared between two), so two sweeps never run at once: one could otherwise reap an
/// orphan whose PID the other was about to reap, after a new `Child` took that PID.
#[derive(Debug)]
pub struct Subreaper {
    claimed: Result<(), Errno>,
    not_sync: core::marker::PhantomData<core::cell::Cell<()>>,
}

/// Whether a [`Subreaper`] that owns the sweep is alive.
static SWEEP_OWNED: core::sync::atomic::AtomicBool = core::sync::atomic::AtomicBool::new(false);

impl Subreaper {
    /// Makes this process a child subreaper. The result says whether the kernel agreed (a
    /// PID 1 adopts orphans anyway), or `EBUSY` when another `Subreaper` is alive.
    ///
    /// # References
    /// [PR_SET_CHILD_SUBREAPER](https://man7.org/linux/man-pages/man2/PR_SET_CHILD_SUBREAPER.2const.html)
    pub fn claim() -> Subreaper {
        use core::sync::atomic::Ordering;
        if SWEEP_OWNED.swap(true, Ordering::AcqRel) {
            return Subreaper {
                claimed: Err(Errno::BUSY),
                not_sync: core::marker::PhantomData,
            };
        }
        let pid = rustix::process::getpid();
        let claimed = rustix::process::set_child_subreaper(Some(pid)).map_err(Errno::from);
        Subreaper {
            claimed,
            not_sync: core::marker::PhantomData,
        }
    }

    /// Whether the kernel made this process a subreaper.
    pub fn claimed(&self) -> Result<(), Errno> {
        self.claimed
    }

    /// Reaps exited children that no live [`crate::Child`] owns, without blocking. It looks at
    /// one exited child at a time (`waitid(P_ALL, WNOWAIT)`), and stops at one that a `Child`
    /// may own (or while a spawn is registering its child): that one is left to its owner, and
    /// the children behind it to the next call.
    pub fn reap_orphans(&self) -> OrphanSweep {
        if self.claimed == Err(Errno::BUSY) {
            return OrphanSweep {
                reaped: 0,
                no_descendant_left: false,
            };
        }
        let mut reaped = 0;
        let none_left = loop {
            match raw::waitid_exited_any() {
                Ok(Some(pid)) => {
                    if crate::owners::may_be_owned(pid) {
                        break false;
                    }
                    match wait4_retrying(pid, Wait4Options::NOHANG) {
                        Ok(Some(_)) => reaped += 1,
                        _ => break false,
                    }
                }
                // Children left, none of them exited.
                Ok(None) => break false,
                Err(e) => break e == Errno::CHILD,
            }
        };
        OrphanSweep {
            reaped,
            // Orphans come to this process only when it is a subreaper (or PID 1): otherwise
            // "no child" says nothing of the descendants that went to another reaper.
            no_descendant_left: none_left && self.claimed.is_ok(),
        }
    }
}

impl Drop for Subreaper {
    fn drop(&mut self) {
        if self.claimed != Err(Errno::BUSY) {
            SWEEP_OWNED.store(false, core::sync::atomic::Ordering::Release);
        }
    }
}

/// What [`Subreaper::reap_orphans`] did and saw.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OrphanSweep {
    /// Orphans reaped.
    pub reaped: usize,
    /// This process, a subreaper, has no child left: every process started under it has exited
    /// and been reaped, so none still holds a descriptor it was given. (A process that got a
    /// descriptor passed over a socket, or reopened one through `/proc`, is not a descendant;
    /// that is outside what this can see.)
    pub no_descendant_left: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kill_refuses_the_callers_group_and_every_process() {
        // Signal 0 only probes, so even a broken refusal could not hurt anything.
        assert_eq!(raw::kill(0, 0), Err(Errno::INVAL));
        assert_eq!(raw::kill(-1, 0), Err(Errno::INVAL));
        assert_eq!(raw::kill(-42, 0), Err(Errno::INVAL));
        assert_eq!(raw::kill_group(0, 0), Err(Errno::INVAL));
        assert_eq!(raw::kill_group(1, 0), Err(Errno::INVAL));
        assert_eq!(raw::kill_group(-5, 0), Err(Errno::INVAL));
        let me = rustix::process::getpid().as_raw_nonzero().get();
        assert_eq!(raw::kill(me, 0), Ok(()));
    }

    /// Between a spawn's clone and the registration of its `Child`, the new PID is in no slot
    /// yet: a caller that guessed it (the next PID, or one read from `/proc`) must not reap
    /// it, or the `Child` that comes out of the spawn would own a PID another process can take.
    #[test]
    #[allow(clippy::zombie_processes)] // reaped by the crate's own wait4, the point of the test
    fn wait4_leaves_alone_a_pid_a_spawn_may_be_registering() {
        let _serial = crate::test_hooks::serial();
        let exited = std::process::Command::new("true")
            .spawn()
            .expect("spawn true");
        let pid = exited.id() as i32;
        // Exited (a zombie), yet not reaped: a look that leaves it waitable.
        while !has_exited(pid).expect("look at the child") {
            std::thread::sleep(core::time::Duration::from_millis(1));
        }
        let spawning = crate::owners::Spawning::start();
        assert_eq!(
            wait4(pid, Wait4Options::NOHANG).map(|r| r.is_some()),
            Err(Errno::BUSY)
        );
        drop(spawning);
        let reaped = wait4(pid, Wait4Options::NOHANG).expect("reap once no spawn is running");
        assert_eq!(
            reaped.map(|(p, status, _)| (p, status.code())),
            Some((pid, Some(0)))
        );
    }
}
