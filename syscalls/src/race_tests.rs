//! Races and failure paths of spawning and reaping, each forced open with a switch of
//! `test_hooks` (or a signal storm), so that what could go wrong is seen to go right.
#![forbid(unsafe_code)]

use crate::raw::test_support::{install_handler, signal_thread};
use crate::spawn::ChildStage;
use crate::test_hooks::{self as hooks, Switch};
use crate::{ChildStack, Errno, Program, Signal, SpawnError, SpawnOptions};
use alloc::ffi::CString;
use alloc::vec::Vec;
use core::ffi::c_int;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

fn program(path: &str, argv: &[&str]) -> Program {
    let c = |s: &str| CString::new(s).expect("no NUL");
    Program::new(c(path), argv.iter().map(|a| c(a)).collect(), Vec::new())
}

fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

/// Reaps every child left (zombie or not yet exited, waiting for those): how many there were.
fn reap_leftovers() -> usize {
    let mut n = 0;
    while crate::raw::wait4(-1, 0).is_ok() {
        n += 1;
    }
    n
}

/// Starts `sh -c 'exit 42'` (a `std::process` child) on exactly `pid`, or `None`.
fn exit_42_on_pid(pid: i32) -> Option<std::process::Child> {
    for _ in 0..20 {
        std::fs::write("/proc/sys/kernel/ns_last_pid", std::format!("{}", pid - 1)).ok()?;
        let other = std::process::Command::new("/bin/sh")
            .args(["-c", "exit 42"])
            .spawn()
            .ok()?;
        if other.id() as i32 == pid {
            return Some(other);
        }
        let mut other = other;
        let _ = other.wait();
    }
    None
}

#[test]
fn reap_returns_its_own_child_while_another_reaper_races_it() {
    let _serial = hooks::serial();
    let mut stack = ChildStack::new().expect("map a child stack");
    let child = program("/bin/true", &["true"])
        .spawn(&SpawnOptions::default(), &mut stack)
        .expect("spawn true");
    let pid = child.pid();
    hooks::REAP_PEEKED.store(false, Ordering::SeqCst);
    hooks::REAP_WINDOW_HELD.store(true, Ordering::SeqCst);
    let reaping = std::thread::spawn(move || {
        child
            .reap()
            .map(|(status, _)| status.code())
            .map_err(|e| e.errno)
    });
    while !hooks::REAP_PEEKED.load(Ordering::SeqCst) {
        std::thread::sleep(Duration::from_millis(1));
    }
    // Another reaper in the process, between the look at the zombie and the wait4: this
    // crate's own wait4, for any child and then for this PID.
    let any = crate::wait::wait4(-1, crate::wait::Wait4Options::NOHANG);
    let by_pid = crate::wait::wait4(pid, crate::wait::Wait4Options::NOHANG);
    // If either took the child, its PID is free: a new child exiting 42 is put on it.
    let other = exit_42_on_pid(pid);
    if let Some(other) = &other {
        // It must be a zombie before the reap's wait4, or the wait4 could not take it.
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while std::fs::read_to_string(std::format!("/proc/{}/stat", other.id()))
            .is_ok_and(|s| !s.contains(") Z "))
            && std::time::Instant::now() < deadline
        {
            std::thread::sleep(Duration::from_millis(5));
        }
    }
    // The window closes only now: however slow the machine, every other reaper above ran in it.
    hooks::REAP_WINDOW_HELD.store(false, Ordering::SeqCst);
    let reaped = reaping.join().expect("the reaping thread");
    let leftovers = reap_leftovers();
    std::eprintln!(
        "wait4(-1): {:?}; wait4({pid}): {:?}; PID reused: {}; reap: {reaped:?}",
        any.map(|r| r.map(|(p, s, _)| (p, s))),
        by_pid.map(|r| r.map(|(p, s, _)| (p, s))),
        other.is_some()
    );
    assert_eq!(
        reaped,
        Ok(Some(0)),
        "reap returned another process's status"
    );
    assert!(any.is_err(), "wait4(-1) reaped a child that a Child owns");
    assert!(
        by_pid.is_err(),
        "wait4(pid) reaped a child that a Child owns"
    );
    assert_eq!(leftovers, 0);
    assert!(other.is_none() || !is_root() || any.is_ok() || by_pid.is_ok());
}

static HANDLER_RUNS: AtomicU64 = AtomicU64::new(0);

extern "C" fn count(_signum: c_int) {
    HANDLER_RUNS.fetch_add(1, Ordering::Relaxed);
}

#[test]
fn failed_spawns_under_interrupting_signals_leave_no_zombie() {
    const SPAWNS: usize = 20_000;
    let _serial = hooks::serial();
    assert!(install_handler(Signal::USR1.raw(), count, false));
    let missing = CString::new("/nonexistent-directory").expect("no NUL");
    let options = SpawnOptions {
        cwd: Some(&missing),
        ..SpawnOptions::default()
    };
    let prog = program("/bin/true", &["true"]);
    let (done, tid) = (
        AtomicBool::new(false),
        core::sync::atomic::AtomicI32::new(0),
    );
    let mut failures = 0;
    std::thread::scope(|s| {
        s.spawn(|| {
            while !done.load(Ordering::Relaxed) {
                let t = tid.load(Ordering::Relaxed);
                if t != 0 {
                    signal_thread(t, Signal::USR1.raw());
                }
                std::thread::yield_now();
            }
        });
        tid.store(
            rustix::thread::gettid().as_raw_nonzero().get(),
            Ordering::Relaxed,
        );
        let mut stack = ChildStack::new().expect("map a child stack");
        for _ in 0..SPAWNS {
            match prog.spawn(&options, &mut stack) {
                Err(SpawnError {
                    stage: ChildStage::ChangeDirectory,
                    errno: Errno::NOENT,
                }) => failures += 1,
                other => panic!("expected a chdir failure, got {other:?}"),
            }
        }
        done.store(true, Ordering::Relaxed);
    });
    let zombies = reap_leftovers();
    std::eprintln!(
        "{failures} failed spawns, {} handler runs, {zombies} zombies",
        HANDLER_RUNS.load(Ordering::Relaxed)
    );
    assert!(
        HANDLER_RUNS.load(Ordering::Relaxed) > 0,
        "no signal arrived"
    );
    assert_eq!(zombies, 0, "failed spawns left zombies");
}

/// The child's own descriptors, as `ls /proc/self/fd` lists them (its own listing fd included).
fn child_fds(
    prog: &Program,
    stack: &mut ChildStack,
    out: &std::fs::File,
) -> Result<usize, SpawnError> {
    use rustix::fd::AsFd;
    let options = SpawnOptions {
        stdout: Some(out.as_fd()),
        ..SpawnOptions::default()
    };
    let len_before = out.metadata().expect("stat").len();
    let (status, _) = prog.spawn(&options, stack)?.reap().expect("reap ls");
    assert_eq!(status.code(), Some(0));
    let text = std::fs::read_to_string(std::format!("/proc/self/fd/{}", {
        use rustix::fd::AsRawFd;
        out.as_raw_fd()
    }))
    .expect("read the listing");
    Ok(text[len_before as usize..].lines().count())
}

/// A fresh file, readable and writable, for children's listings.
fn listing_file(path: &std::path::Path) -> std::fs::File {
    std::fs::File::options()
        .create(true)
        .truncate(true)
        .read(true)
        .write(true)
        .open(path)
        .expect("create the listing file")
}

#[test]
fn without_close_range_no_descriptor_opened_meanwhile_leaks_into_a_child() {
    const SPAWNS: usize = 300;
    let _serial = hooks::serial();
    let _fallback = Switch::on(&hooks::NO_CLOSE_RANGE);
    let dir = std::env::temp_dir().join(std::format!("coldtrace-fdrace-{}", std::process::id()));
    let out = listing_file(&dir);
    let ls = program("/bin/ls", &["ls", "/proc/self/fd"]);
    let done = AtomicBool::new(false);
    let mut leaks = Vec::new();
    std::thread::scope(|s| {
        s.spawn(|| {
            use rustix::fs::{Mode, OFlags};
            while !done.load(Ordering::Relaxed) {
                // Inheritable (no O_CLOEXEC): only the child's own closing keeps it out.
                let fd = rustix::fs::open("/dev/null", OFlags::RDONLY, Mode::empty());
                drop(fd);
            }
        });
        let mut stack = ChildStack::new().expect("map a child stack");
        for _ in 0..SPAWNS {
            match child_fds(&ls, &mut stack, &out) {
                Ok(4) => {}
                other => leaks.push(other),
            }
        }
        done.store(true, Ordering::Relaxed);
    });
    let _ = std::fs::remove_file(&dir);
    assert!(
        leaks.is_empty(),
        "children saw extra descriptors: {leaks:?} (0, 1, 2 and ls's own expected)"
    );
    let _no_proc = Switch::on(&hooks::NO_PROC);
    let out = listing_file(&dir);
    let spare = rustix::fs::open(
        "/dev/null",
        rustix::fs::OFlags::RDONLY,
        rustix::fs::Mode::empty(),
    )
    .expect("an inheritable descriptor");
    let n = child_fds(&ls, &mut ChildStack::new().expect("stack"), &out);
    drop(spare);
    let _ = std::fs::remove_file(&dir);
    assert_eq!(
        n,
        Ok(4),
        "without /proc the child still closes what it must not inherit"
    );
}

#[test]
fn exec_failures_are_reported_when_the_child_does_not_share_memory() {
    let _serial = hooks::serial();
    crate::spawn::forget_memory_probe();
    let copied = Switch::on(&hooks::NO_CLONE_VM);
    let mut stack = ChildStack::new().expect("map a child stack");
    let missing = program("/nonexistent/prog", &["prog"]);
    let result = missing.spawn(&SpawnOptions::default(), &mut stack);
    let seen = result.map(|c| c.reap().map(|(s, _)| s.code()).map_err(|e| e.errno));
    assert_eq!(
        seen.err(),
        Some(SpawnError {
            stage: ChildStage::Exec,
            errno: Errno::NOENT
        })
    );
    let bad_cwd = CString::new("/nonexistent-directory").expect("no NUL");
    let options = SpawnOptions {
        cwd: Some(&bad_cwd),
        ..SpawnOptions::default()
    };
    let result = program("/bin/true", &["true"]).spawn(&options, &mut stack);
    let seen = result.map(|c| c.reap().map(|(s, _)| s.code()).map_err(|e| e.errno));
    assert_eq!(
        seen.err(),
        Some(SpawnError {
            stage: ChildStage::ChangeDirectory,
            errno: Errno::NOENT
        })
    );
    let ok = program("/bin/true", &["true"]).spawn(&SpawnOptions::default(), &mut stack);
    let status = ok.expect("spawn true").reap().map(|(s, _)| s.code());
    assert_eq!(status.ok(), Some(Some(0)));
    assert_eq!(crate::spawn::clone_vm_shares_memory(), Some(false));
    drop(copied);
    crate::spawn::forget_memory_probe();
    let ok = program("/bin/true", &["true"]).spawn(&SpawnOptions::default(), &mut stack);
    assert!(ok.expect("spawn true").reap().is_ok());
    assert_eq!(crate::spawn::clone_vm_shares_memory(), Some(true));
    assert_eq!(reap_leftovers(), 0);
}

#[test]
fn a_started_child_is_never_started_twice_nor_left_behind() {
    let _serial = hooks::serial();
    let dir = std::env::temp_dir().join(std::format!("coldtrace-twice-{}", std::process::id()));
    let _ = std::fs::remove_file(&dir);
    let script = std::format!("echo ran >> {}", dir.display());
    let sh = program("/bin/sh", &["sh", "-c", &script]);
    let mask = crate::signal::sigprocmask(crate::signal::MaskHow::Block, None).expect("mask");
    let result = {
        let _failing = Switch::on(&hooks::FAIL_MASK_RESTORE);
        sh.spawn(
            &SpawnOptions::default(),
            &mut ChildStack::new().expect("stack"),
        )
    };
    let restored = crate::signal::sigprocmask(crate::signal::MaskHow::SetMask, Some(mask));
    std::thread::sleep(Duration::from_millis(200));
    let runs = std::fs::read_to_string(&dir)
        .unwrap_or_default()
        .lines()
        .count();
    let _ = std::fs::remove_file(&dir);
    let leftovers = reap_leftovers();
    let stage = result.as_ref().map(|_| ()).map_err(|e| e.stage);
    if let Ok(child) = result {
        let _ = child.reap();
    }
    assert!(restored.is_ok());
    assert!(runs <= 1, "the command ran {runs} times");
    assert_eq!(leftovers, 0, "a started child was left behind");
    assert_ne!(
        stage,
        Err(ChildStage::Clone),
        "a started child reported as a failed clone"
    );
}

#[test]
fn a_parent_that_died_before_the_prctl_still_sends_its_signal() {
    let _serial = hooks::serial();
    let mut stack = ChildStack::new().expect("map a child stack");
    let dead_parent = Switch::on(&hooks::WRONG_PARENT_PID);
    // SIGKILL ends the child at once; SIGTERM, blocked until the child sets the caller's mask,
    // ends it there, as a signal the kernel had sent would: either way before `execve`, so
    // `sleep 60` never runs and the spawn returns a child killed by the signal.
    for signal in [Signal::KILL, Signal::TERM] {
        let options = SpawnOptions {
            parent_death_signal: Some(signal),
            ..SpawnOptions::default()
        };
        let started = std::time::Instant::now();
        let child = program("/bin/sleep", &["sleep", "60"])
            .spawn(&options, &mut stack)
            .expect("the spawn returns the child, killed before execve");
        let (status, _) = child.reap().expect("reap");
        assert_eq!(status.signal(), Some(signal.raw()), "{status:?}");
        assert!(started.elapsed() < Duration::from_secs(30));
    }
    drop(dead_parent);
    let options = SpawnOptions {
        parent_death_signal: Some(Signal::KILL),
        ..SpawnOptions::default()
    };
    let child = program("/bin/sh", &["sh", "-c", "exit 7"]).spawn(&options, &mut stack);
    let status = child.expect("spawn sh").reap().map(|(s, _)| s.code());
    assert_eq!(status.ok(), Some(Some(7)), "with its parent alive it runs");
    let bad = SpawnOptions {
        parent_death_signal: Some(Signal::from_raw(65)),
        ..SpawnOptions::default()
    };
    let refused = program("/bin/true", &["true"]).spawn(&bad, &mut stack);
    assert_eq!(
        refused.err(),
        Some(SpawnError {
            stage: ChildStage::ParentDeathSignal,
            errno: Errno::INVAL
        })
    );
    assert_eq!(reap_leftovers(), 0);
}

/// How many of this process's descriptors are pipes (the spawn's error pipes among them).
fn open_pipes() -> usize {
    let dir = std::fs::read_dir("/proc/self/fd").expect("list /proc/self/fd");
    dir.filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
        .filter(|target| target.to_string_lossy().starts_with("pipe:"))
        .count()
}

/// Refuses every `clone3` with `errno` for as long as the value lives.
struct RefuseClone3;

impl RefuseClone3 {
    fn with(errno: Errno) -> RefuseClone3 {
        hooks::CLONE3_REFUSALS.store(0, Ordering::SeqCst);
        hooks::CLONE3_REFUSED_WITH.store(errno.raw(), Ordering::SeqCst);
        RefuseClone3
    }
}

impl Drop for RefuseClone3 {
    fn drop(&mut self) {
        hooks::CLONE3_REFUSED_WITH.store(0, Ordering::SeqCst);
        crate::spawn::forget_clone3_probe();
    }
}

#[test]
fn a_refused_clone3_falls_back_to_clone_once_and_the_child_still_runs() {
    let _serial = hooks::serial();
    let mut stack = ChildStack::new().expect("map a child stack");
    let exit_7 = program("/bin/sh", &["sh", "-c", "exit 7"]);
    let cgroup_dir = std::fs::File::open("/").expect("open /");
    let cgroup = SpawnOptions {
        cgroup: Some(rustix::fd::AsFd::as_fd(&cgroup_dir)),
        ..SpawnOptions::default()
    };
    // As an old kernel (ENOSYS, EINVAL for CLONE_CLEAR_SIGHAND, E2BIG for the struct's
    // size), a seccomp filter (EPERM, EACCES) or an emulator refuses it.
    for errno in [
        Errno::NOSYS,
        Errno::PERM,
        Errno::INVAL,
        Errno::TOOBIG,
        Errno::ACCES,
    ] {
        crate::spawn::forget_clone3_probe();
        crate::spawn::forget_memory_probe(); // an error pipe at every attempt
        let pipes = open_pipes();
        let refused = RefuseClone3::with(errno);
        for run in 0..3 {
            let child = exit_7.spawn(&SpawnOptions::default(), &mut stack);
            let child = child.unwrap_or_else(|e| panic!("{errno:?}, run {run}: {e:?}"));
            assert!(child.pidfd().is_some(), "clone gives a pidfd here");
            let status = child.reap().map(|(s, _)| s.code());
            assert_eq!(status.ok(), Some(Some(7)), "{errno:?}, run {run}");
        }
        // Tried once, then `clone` straight away; said with its errno.
        assert_eq!(
            hooks::CLONE3_REFUSALS.load(Ordering::SeqCst),
            1,
            "{errno:?}"
        );
        assert_eq!(crate::spawn::clone3_unavailable(), Some(errno));
        // Only clone3 can place a child in a cgroup: that spawn fails, with the errno.
        let in_cgroup = program("/bin/true", &["true"]).spawn(&cgroup, &mut stack);
        assert_eq!(
            in_cgroup.err(),
            Some(SpawnError {
                stage: ChildStage::Clone,
                errno
            })
        );
        assert_eq!(
            hooks::CLONE3_REFUSALS.load(Ordering::SeqCst),
            2,
            "{errno:?}"
        );
        drop(refused);
        assert_eq!(
            open_pipes(),
            pipes,
            "{errno:?}: an error pipe was left open"
        );
    }
    // "Not now" rather than "not here": no fallback, and clone3 is tried again next time.
    let refused = RefuseClone3::with(Errno::AGAIN);
    let busy = exit_7.spawn(&SpawnOptions::default(), &mut stack);
    assert_eq!(
        busy.err(),
        Some(SpawnError {
            stage: ChildStage::Clone,
            errno: Errno::AGAIN
        })
    );
    assert_eq!(crate::spawn::clone3_unavailable(), None);
    drop(refused);
    let child = exit_7.spawn(&SpawnOptions::default(), &mut stack);
    let status = child.expect("spawn sh").reap().map(|(s, _)| s.code());
    assert_eq!(status.ok(), Some(Some(7)));
    assert_eq!(hooks::CLONE3_REFUSALS.load(Ordering::SeqCst), 1);
    assert_eq!(reap_leftovers(), 0);
}

#[test]
fn a_clone_refused_after_its_pidfd_was_made_leaves_no_descriptor_behind() {
    let _serial = hooks::serial();
    let mut stack = ChildStack::new().expect("map a child stack");
    // Not a cgroup: clone3 makes the pidfd, writes its number into the slot, then fails at the
    // cgroup (EBADF) and releases the number. The spawn must report that and own nothing.
    let not_a_cgroup = std::fs::File::open("/").expect("open /");
    let options = SpawnOptions {
        cgroup: Some(rustix::fd::AsFd::as_fd(&not_a_cgroup)),
        ..SpawnOptions::default()
    };
    let listed = || std::fs::read_dir("/proc/self/fd").expect("list").count();
    let before = listed();
    for _ in 0..100 {
        let refused = program("/bin/true", &["true"]).spawn(&options, &mut stack);
        assert_eq!(
            refused.err(),
            Some(SpawnError {
                stage: ChildStage::Clone,
                errno: Errno::BADF
            })
        );
    }
    assert_eq!(listed(), before, "a descriptor was left open");
    assert_eq!(reap_leftovers(), 0);
}

#[test]
fn usage_at_exit_is_what_the_reap_returns_and_leaves_the_zombie_to_it() {
    let _serial = hooks::serial();
    let mut stack = ChildStack::new().expect("map a child stack");
    let script = "i=0; while [ $i -lt 30000 ]; do i=$((i+1)); done; sleep 0.2";
    let mut child = program("/bin/sh", &["sh", "-c", script])
        .spawn(&SpawnOptions::default(), &mut stack)
        .expect("spawn sh");
    if child.pidfd().is_none() {
        std::println!("skipped: no pidfds here, so no look at the zombie's usage");
        let _ = child.reap();
        return;
    }
    // Still running (its loop, then its sleep): nothing yet, and nothing reaped.
    assert_eq!(child.usage_at_exit(), None);
    let pid = child.pid();
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let seen = loop {
        if let Some(usage) = child.usage_at_exit() {
            break usage;
        }
        assert!(std::time::Instant::now() < deadline, "sh never exited");
        std::thread::sleep(Duration::from_millis(5));
    };
    assert!(seen.user_us + seen.sys_us > 0, "the loop ran on a CPU");
    // Looking twice leaves it a zombie, and the reap finds the same figures.
    assert_eq!(child.usage_at_exit(), Some(seen));
    let (status, reaped) = child.reap().expect("reap the zombie");
    assert_eq!(status.code(), Some(0));
    assert_eq!((reaped.user_us, reaped.sys_us), (seen.user_us, seen.sys_us));
    assert_eq!(reaped.max_rss_kib, seen.max_rss_kib);
    assert_eq!(
        crate::wait::wait4(pid, crate::wait::Wait4Options::NOHANG).err(),
        Some(Errno::CHILD)
    );
}
