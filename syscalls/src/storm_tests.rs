//! The spawn storm: spawning from several threads at once while signals with real handlers
//! rain on the parent and on every child the storm can find, before and after their exec.
//! Shows that [`crate::Program::spawn`] is safe to call from a multi-threaded program: no
//! handler ever runs in a child (it would share the parent's memory), and no zombie is left.
#![forbid(unsafe_code)]

use crate::raw::test_support::{install_handler, vouch_for_the_storm};
use crate::{ChildStack, Program, Signal, SpawnOptions, WaitStatusKind};
use alloc::ffi::CString;
use alloc::vec::Vec;
use core::ffi::c_int;
use core::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use rustix::process::{pidfd_open, pidfd_send_signal, PidfdFlags};

static PARENT: AtomicI32 = AtomicI32::new(0);
static RUNS_IN_PARENT: AtomicU64 = AtomicU64::new(0);
static RUNS_ELSEWHERE: AtomicU64 = AtomicU64::new(0);

/// Async-signal-safe: one raw getpid and an atomic addition. With CLONE_VM the counters are
/// the parent's memory, so a run in a child would be counted here too.
extern "C" fn probe(_signum: c_int) {
    let me = rustix::process::getpid().as_raw_nonzero().get();
    if me == PARENT.load(Ordering::Relaxed) {
        RUNS_IN_PARENT.fetch_add(1, Ordering::Relaxed);
    } else {
        RUNS_ELSEWHERE.fetch_add(1, Ordering::Relaxed);
    }
}

/// The PIDs in every `/proc/self/task/*/children` file: our children, exec'd or not yet.
fn children() -> Vec<i32> {
    let mut pids = Vec::new();
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return pids;
    };
    for task in tasks.flatten() {
        let list = std::fs::read_to_string(task.path().join("children")).unwrap_or_default();
        pids.extend(
            list.split_whitespace()
                .filter_map(|p| p.parse::<i32>().ok()),
        );
    }
    pids
}

/// Signals `pid` through a pidfd, only if the process behind the pidfd is still our child.
fn signal_child(pid: i32, signal: rustix::process::Signal) -> bool {
    let Some(raw) = rustix::process::Pid::from_raw(pid) else {
        return false;
    };
    let Ok(fd) = pidfd_open(raw, PidfdFlags::empty()) else {
        return false;
    };
    let status = std::fs::read_to_string(std::format!("/proc/{pid}/status")).unwrap_or_default();
    let me = std::format!("{}", PARENT.load(Ordering::Relaxed));
    let ours = status
        .lines()
        .any(|l| l.strip_prefix("PPid:").map(str::trim) == Some(&me));
    // If the PID was reused after pidfd_open, the fd still names the old (dead) process, and
    // the signal fails with ESRCH: no other process is ever signalled.
    ours && pidfd_send_signal(&fd, signal).is_ok()
}

#[test]
fn spawn_storm_runs_no_handler_in_a_child_and_leaves_no_zombie() {
    // clone3: the kernel clears the handlers (CLONE_CLEAR_SIGHAND).
    storm(&SpawnOptions::default(), "clone3");
}

#[test]
fn spawn_storm_through_clone_runs_no_handler_in_a_child() {
    // clone: the child asks the kernel about each signal and resets the handled ones.
    let options = SpawnOptions {
        legacy_clone: true,
        ..SpawnOptions::default()
    };
    storm(&options, "clone, 64 queries");
}

#[test]
fn spawn_storm_through_clone_with_a_true_vouch_runs_no_handler_in_a_child() {
    // clone with the handled set vouched for: true here, since the storm installs its two
    // handlers before reading the set, and nothing installs one during it.
    let _serial = crate::test_hooks::serial();
    assert!(install_handler(Signal::USR1.raw(), probe, true));
    assert!(install_handler(Signal::USR2.raw(), probe, true));
    let options = SpawnOptions {
        legacy_clone: true,
        handled_signals: Some(vouch_for_the_storm()),
        ..SpawnOptions::default()
    };
    drop(_serial);
    storm(&options, "clone, vouched");
}

fn storm(options: &SpawnOptions<'_>, what: &str) {
    const THREADS: usize = 4;
    const SPAWNS: usize = 250;
    let _serial = crate::test_hooks::serial();
    RUNS_IN_PARENT.store(0, Ordering::Relaxed);
    RUNS_ELSEWHERE.store(0, Ordering::Relaxed);
    let me = rustix::process::getpid();
    PARENT.store(me.as_raw_nonzero().get(), Ordering::Relaxed);
    assert!(install_handler(Signal::USR1.raw(), probe, true));
    assert!(install_handler(Signal::USR2.raw(), probe, true));
    let program = Program::new(
        CString::new("/bin/true").unwrap(),
        std::vec![CString::new("true").unwrap()],
        Vec::new(),
    );
    let stop = AtomicBool::new(false);
    let hit_children = AtomicU64::new(0);
    let (mut exited, mut killed) = (0, 0);
    std::thread::scope(|s| {
        s.spawn(|| {
            use rustix::process::Signal as S;
            while !stop.load(Ordering::Relaxed) {
                let _ = rustix::process::kill_process(me, S::USR1);
                for pid in children() {
                    if signal_child(pid, S::USR2) {
                        hit_children.fetch_add(1, Ordering::Relaxed);
                    }
                }
                let _ = rustix::process::kill_process(me, S::USR2);
            }
        });
        let spawners: Vec<_> = (0..THREADS)
            .map(|_| {
                s.spawn(|| {
                    let mut stack = ChildStack::new().expect("map a child stack");
                    let mut kinds = Vec::with_capacity(SPAWNS);
                    for _ in 0..SPAWNS {
                        let child = program.spawn(options, &mut stack);
                        let (status, _) = child.expect("spawn").reap().expect("reap");
                        kinds.push(status.kind());
                    }
                    kinds
                })
            })
            .collect();
        for spawner in spawners {
            for kind in spawner.join().expect("a spawning thread") {
                match kind {
                    WaitStatusKind::Exited { code: 0 } => exited += 1,
                    WaitStatusKind::Signaled { signal, .. } if signal == Signal::USR2 => {
                        killed += 1
                    }
                    other => panic!("unexpected status {other:?}"),
                }
            }
        }
        stop.store(true, Ordering::Relaxed);
    });
    let in_parent = RUNS_IN_PARENT.load(Ordering::Relaxed);
    let elsewhere = RUNS_ELSEWHERE.load(Ordering::Relaxed);
    std::eprintln!(
        "storm ({what}): {exited} exited, {killed} killed by SIGUSR2, {} child signals sent, \
         handler runs: {in_parent} in the parent, {elsewhere} elsewhere",
        hit_children.load(Ordering::Relaxed)
    );
    assert_eq!(exited + killed, THREADS * SPAWNS);
    assert!(
        in_parent > 0,
        "the storm never reached the parent's handler"
    );
    assert!(killed > 0, "the storm never reached a child");
    assert_eq!(elsewhere, 0, "a handler ran in a child");
    let leftover = crate::raw::wait4(-1, crate::abi::WNOHANG as i32);
    assert_eq!(
        leftover
            .map(|r| r.map(|(pid, status, _)| (pid, status)))
            .err(),
        Some(crate::Errno::CHILD),
        "a zombie or child is left"
    );
}
