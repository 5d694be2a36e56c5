//! The parent's side of one spawn, around the clone: every signal blocked, the clone through
//! the unsafe room ([`crate::raw::spawn::clone`]), the child's report of a failure before
//! `execve` (from this process's memory, or from a close-on-exec pipe where that memory may be
//! a copy), the reap of a child that failed, and the mask restored last.
#![forbid(unsafe_code)]

use crate::abi::{clone_flags as cf, MaskHow};
use crate::child_plan::{ChildPlan, CloneCall};
use crate::errno::{zero_or, Errno};
use crate::exec_image::{ExecImage, SpawnFailure, Spawned};
use crate::raw::spawn::{ChildStack, SignalsBlocked};
use rustix::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};

/// How the child reports a failure before `execve`: in the parent's memory, or through a
/// close-on-exec pipe where that memory may be a copy.
pub(crate) struct ErrorPipe {
    pub read: OwnedFd,
    /// The write end, numbered ≥ 3 so that the child's `dup3` onto 0/1/2 cannot clobber it.
    pub write: OwnedFd,
}

/// Starts `image` on `stack` with vfork semantics through `call`. Returns once the child has
/// called `execve`, or has died before it without reporting a failure (killed by a signal: its
/// wait status tells, as with `posix_spawn`). A reported failure comes back with the child
/// reaped. See [clone(2)], [clone3(2)], [vfork(2)].
///
/// [clone(2)]: https://man7.org/linux/man-pages/man2/clone.2.html
/// [clone3(2)]: https://man7.org/linux/man-pages/man2/clone3.2.html
/// [vfork(2)]: https://man7.org/linux/man-pages/man2/vfork.2.html
pub(crate) fn spawn(
    image: &ExecImage<'_>,
    plan: &ChildPlan<'_>,
    stack: &mut ChildStack,
    call: CloneCall,
    pidfd: bool,
    pipe: Option<ErrorPipe>,
) -> Result<Spawned, SpawnFailure> {
    let blocked =
        SignalsBlocked::block().map_err(|e| SpawnFailure::NotStarted(Errno::from_raw(e)))?;
    let error_pipe = pipe.as_ref().map_or(-1, |p| p.write.as_raw_fd());
    let parent = plan.parent_death_signal.map_or(0, |_| parent_pid());
    let cloned = match clone3_refused_for_tests(call) {
        Some(errno) => crate::exec_image::Cloned {
            started: Err(errno),
            stage: 0,
            errno: 0,
        },
        None => crate::raw::spawn::clone(
            image,
            plan,
            stack,
            call,
            clone_flags(),
            pidfd,
            error_pipe,
            parent,
            &blocked,
        ),
    };
    // The parent's copy of the write end goes first, so that the read sees end-of-file once
    // the child has exec'd (or exited) and closed its own.
    let read = pipe.map(|p| p.read);
    let outcome = match cloned.started {
        Err(errno) => Err(SpawnFailure::NotStarted(errno)),
        Ok(spawned) => {
            let report = match read.as_ref() {
                Some(read) => read_report(read.as_fd()),
                None => (cloned.stage, cloned.errno),
            };
            finish(spawned, report)
        }
    };
    // Restored last: a failed child is reaped above while every signal is still blocked, so
    // no handler can interrupt that wait.
    let restored = zero_or(blocked.restore(restore_how()));
    match (outcome, restored) {
        (outcome, Ok(())) => outcome,
        (Err(_), Err(e)) => Err(SpawnFailure::MaskNotRestored(e)),
        (Ok(spawned), Err(e)) => {
            reap_failed(spawned.pid, spawned.pidfd.as_ref().map(AsFd::as_fd), true);
            Err(SpawnFailure::MaskNotRestored(e))
        }
    }
}

/// This process's PID, which the child expects as its parent's (`getpid(2)`); in test builds
/// a PID no process has while `WRONG_PARENT_PID` is set, as if the parent had died.
fn parent_pid() -> usize {
    #[cfg(test)]
    if crate::test_hooks::on(&crate::test_hooks::WRONG_PARENT_PID) {
        return u32::MAX as usize;
    }
    rustix::process::getpid().as_raw_nonzero().get() as usize
}

/// `SIG_SETMASK`, or in test builds an invalid `how` while `FAIL_MASK_RESTORE` is set.
fn restore_how() -> MaskHow {
    #[cfg(test)]
    if crate::test_hooks::on(&crate::test_hooks::FAIL_MASK_RESTORE) {
        return MaskHow::Invalid;
    }
    MaskHow::SetMask
}

/// The flags of this process's spawns: `CLONE_VM`, which test builds drop while `NO_CLONE_VM`
/// is set (the child then gets a copy of the memory, as under valgrind or qemu-user).
fn clone_flags() -> u64 {
    #[cfg(test)]
    if crate::test_hooks::on(&crate::test_hooks::NO_CLONE_VM) {
        return 0;
    }
    cf::CLONE_VM
}

/// Test builds: the errno `CLONE3_REFUSED_WITH` holds, for a `clone3` it refuses before the
/// system call (as an old kernel, a seccomp filter or an emulator does); else `None`.
fn clone3_refused_for_tests(call: CloneCall) -> Option<Errno> {
    #[cfg(test)]
    if let CloneCall::Clone3 { .. } = call {
        use core::sync::atomic::Ordering::SeqCst;
        let errno = crate::test_hooks::CLONE3_REFUSED_WITH.load(SeqCst);
        if errno > 0 {
            crate::test_hooks::CLONE3_REFUSALS.fetch_add(1, SeqCst);
            return Some(Errno::from_raw(errno));
        }
    }
    let _ = call;
    None
}

/// After a clone that started a child: its reported failure (`report`: the stage and errno,
/// 0 and 0 without one), with the child reaped; else the child.
fn finish(spawned: Spawned, report: (u32, i32)) -> Result<Spawned, SpawnFailure> {
    let (stage, errno) = report;
    if stage == 0 {
        return Ok(spawned);
    }
    // The child exited with 127 after reporting: reap it so no zombie remains.
    reap_failed(spawned.pid, spawned.pidfd.as_ref().map(AsFd::as_fd), false);
    Err(SpawnFailure::Child(stage, Errno::from_raw(errno)))
}

/// Reads the child's 8-byte report from the pipe: (0, 0) at end-of-file (the child exec'd, or
/// died without reporting). A short report reads as a failure of stage 1, EIO.
fn read_report(read: BorrowedFd<'_>) -> (u32, i32) {
    let mut bytes = [0u8; 8];
    let mut got = 0;
    while got < bytes.len() {
        match rustix::io::read(read, &mut bytes[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(rustix::io::Errno::INTR) => {}
            Err(_) => break,
        }
    }
    match got {
        0 => (0, 0),
        8 => {
            let [s0, s1, s2, s3, e0, e1, e2, e3] = bytes;
            let stage = u32::from_ne_bytes([s0, s1, s2, s3]);
            (stage.max(1), i32::from_ne_bytes([e0, e1, e2, e3]))
        }
        _ => (1, Errno::IO.raw()),
    }
}

/// Reaps a child this spawn started and will not hand over (killing it first when `kill`),
/// retrying on EINTR. Through its pidfd when there is one (`waitid(P_PIDFD)` can take no
/// other process); else by PID, which is safe inside this crate: the child is not registered
/// yet, and the orphan sweep leaves every child alone while a spawn is in progress.
fn reap_failed(pid: i32, pidfd: Option<BorrowedFd<'_>>, kill: bool) {
    use rustix::process::{WaitId, WaitIdOptions};
    if kill {
        let sent = pidfd.map(|fd| crate::raw::pidfd_send_signal(fd, 9, 0));
        if !matches!(sent, Some(Ok(()))) {
            let _ = crate::raw::kill(pid, 9);
        }
    }
    loop {
        let done = match pidfd {
            Some(fd) => rustix::process::waitid(WaitId::PidFd(fd), WaitIdOptions::EXITED)
                .map(|_| ())
                .map_err(Errno::from),
            None => crate::raw::wait4(pid, 0).map(|_| ()),
        };
        if done != Err(Errno::INTR) {
            return;
        }
    }
}
