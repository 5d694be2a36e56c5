//! A `Child` holds the pidfd that the clone itself returned, so nothing it does can reach a
//! process that reused its PID after someone else reaped it. The reuse is forced: as root,
//! `/proc/sys/kernel/ns_last_pid` picks the next PID, and a new process is started on the very
//! PID of the reaped child.
#![forbid(unsafe_code)]

use coldtrace_syscalls::spawn::pidfd_unavailable;
use coldtrace_syscalls::wait::{wait4, Wait4Options};
use coldtrace_syscalls::{
    Child, ChildStack, Errno, Program, Signal, SpawnOptions, Subreaper, WaitEvent,
};
use std::ffi::CString;
use std::os::unix::process::CommandExt;
use std::process::Command;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

/// These tests look at every child of the process: one at a time.
fn serial() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

fn program(path: &str, argv: &[&str]) -> Program {
    let c = |s: &str| CString::new(s).expect("no NUL");
    Program::new(c(path), argv.iter().map(|a| c(a)).collect(), Vec::new())
}

fn spawn(program: &Program, group: bool) -> Child {
    let mut stack = ChildStack::new().expect("map a child stack");
    let options = SpawnOptions {
        new_process_group: group,
        ..SpawnOptions::default()
    };
    program.spawn(&options, &mut stack).expect("spawn")
}

/// A child that has exited and was reaped behind its `Child`'s back (as a careless
/// `waitpid(-1)` elsewhere in the program would).
fn reaped_behind_its_back(group: bool) -> Child {
    let child = spawn(&program("/bin/true", &["true"]), group);
    assert_eq!(child.wait(None, None), Ok(WaitEvent::Exited));
    // This crate's own wait4 leaves a PID that a `Child` owns alone; a host's waitpid does not.
    assert_eq!(
        wait4(child.pid(), Wait4Options::BLOCK).err(),
        Some(Errno::BUSY)
    );
    let pid = rustix::process::Pid::from_raw(child.pid()).expect("a PID");
    let outside = rustix::process::waitpid(Some(pid), rustix::process::WaitOptions::empty());
    assert!(outside.expect("an outside reap").is_some());
    child
}

/// Starts `sleep 30` (a `std::process` child) on exactly `pid`, or `None` when the next PID
/// cannot be chosen (not root) or another process took it first every time.
fn start_on_pid(pid: i32, group: bool) -> Option<std::process::Child> {
    for _ in 0..20 {
        std::fs::write("/proc/sys/kernel/ns_last_pid", (pid - 1).to_string()).ok()?;
        let mut cmd = Command::new("/bin/sleep");
        cmd.arg("30");
        if group {
            cmd.process_group(0);
        }
        let mut other = cmd.spawn().expect("spawn sleep");
        if other.id() as i32 == pid {
            return Some(other);
        }
        let _ = other.kill();
        let _ = other.wait();
    }
    None
}

fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

/// The other process is alive and unreaped, then cleaned up.
fn assert_untouched(mut other: std::process::Child) {
    std::thread::sleep(Duration::from_millis(50));
    assert!(
        other.try_wait().expect("try_wait").is_none(),
        "the process that reused the PID was signalled or reaped"
    );
    other.kill().expect("kill sleep");
    other.wait().expect("reap sleep");
}

#[test]
fn children_get_their_pidfd_from_the_clone_on_this_kernel() {
    let _serial = serial();
    let child = spawn(&program("/bin/true", &["true"]), false);
    assert!(child.pidfd().is_some(), "{:?}", pidfd_unavailable());
    assert_eq!(pidfd_unavailable(), None);
    assert_eq!(child.reap().expect("reap").0.code(), Some(0));
}

#[test]
fn signal_reap_and_wait_after_an_outside_reap_never_reach_the_pids_new_owner() {
    let _serial = serial();
    let child = reaped_behind_its_back(false);
    let other = start_on_pid(child.pid(), false);
    assert!(
        other.is_some() || !is_root(),
        "as root, the PID reuse must be forced"
    );
    // Through the pidfd: the reaped process is gone, whoever holds its number now.
    assert_eq!(child.signal(Signal::KILL), Err(Errno::SRCH));
    assert_eq!(child.signal_group(Signal::KILL), Err(Errno::SRCH));
    assert_eq!(child.wait(None, Some(0)), Ok(WaitEvent::Exited));
    assert_eq!(child.reap().err().map(|e| e.errno), Some(Errno::CHILD));
    match other {
        Some(other) => assert_untouched(other),
        None => eprintln!("not root: the PID was not reused; ESRCH and ECHILD checked only"),
    }
}

#[test]
fn a_group_signal_after_an_outside_reap_never_reaches_a_new_group_with_the_same_id() {
    let _serial = serial();
    let child = reaped_behind_its_back(true);
    let other = start_on_pid(child.pid(), true);
    assert!(
        other.is_some() || !is_root(),
        "as root, the PID reuse must be forced"
    );
    assert_eq!(child.signal_group(Signal::KILL), Err(Errno::SRCH));
    drop(child);
    if let Some(other) = other {
        assert_untouched(other);
    }
}

#[test]
fn orphans_are_reaped_but_a_live_childs_zombie_is_left_to_its_owner() {
    let _serial = serial();
    let subreaper = Subreaper::claim();
    assert_eq!(subreaper.claimed(), Ok(()));
    // An orphan: sh starts a short sleep and exits; the sleep is reparented to us.
    let sh = program("/bin/sh", &["sh", "-c", "sleep 0.2 & exit 0"]);
    let parent = spawn(&sh, false);
    assert_eq!(parent.reap().expect("reap sh").0.code(), Some(0));
    let while_it_sleeps = subreaper.reap_orphans();
    assert_eq!(while_it_sleeps.reaped, 0);
    assert!(
        !while_it_sleeps.no_descendant_left,
        "the sleeping orphan is a descendant left"
    );
    // A child of ours that has exited and is not reaped yet.
    let owned = spawn(&program("/bin/true", &["true"]), false);
    assert_eq!(owned.wait(None, None), Ok(WaitEvent::Exited));
    std::thread::sleep(Duration::from_millis(400));
    // The owned zombie may come first in the kernel's list: then nothing is reaped yet.
    let first = subreaper.reap_orphans().reaped;
    assert!(owned.has_exited().expect("still ours, still a zombie"));
    let (status, _) = owned.reap().expect("the owner reaps its child");
    assert_eq!(status.code(), Some(0));
    let second = subreaper.reap_orphans();
    assert_eq!(
        first + second.reaped,
        1,
        "the orphan is reaped exactly once"
    );
    assert!(
        second.no_descendant_left,
        "nothing is left after the last reaping"
    );
    let left = rustix::process::wait(rustix::process::WaitOptions::NOHANG);
    assert_eq!(left.err(), Some(rustix::io::Errno::CHILD));
    assert_eq!(wait4(-1, Wait4Options::NOHANG).err(), Some(Errno::INVAL));
}
