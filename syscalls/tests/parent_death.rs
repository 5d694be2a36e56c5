//! `SpawnOptions::parent_death_signal` against real deaths: a helper process (this test binary
//! run again) spawns `sleep 60` and is then killed with SIGKILL. With the option the sleep dies
//! of SIGKILL too; without it, it keeps running, adopted by this process (a subreaper). And the
//! kernel's rule that the documentation states: the signal follows the *thread* that spawned
//! the child, so a child spawned from a thread that exits dies although the process lives.
#![forbid(unsafe_code)]

mod common;

use coldtrace_syscalls::{ChildStack, Signal, SpawnOptions, WaitEvent, WaitStatusKind};
use common::program;
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// The helper's switch: "with" or "without" the option.
const HELPER: &str = "COLDTRACE_PARENT_DEATH_HELPER";

static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    SERIAL
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// When run as the helper (the variable set): spawns `sleep 60` with or without the option,
/// prints its PID, and waits to be killed. Otherwise returns at once.
#[test]
fn helper_spawn_sleep_and_wait() {
    let Some(mode) = std::env::var_os(HELPER) else {
        return;
    };
    let options = SpawnOptions {
        parent_death_signal: (mode == "with").then_some(Signal::KILL),
        ..SpawnOptions::default()
    };
    let mut stack = ChildStack::new().expect("map a child stack");
    let child = program("/bin/sleep", &["sleep", "60"], &[])
        .spawn(&options, &mut stack)
        .expect("spawn sleep");
    let mut out = std::io::stdout();
    // libtest's "test NAME ... " precedes it on the same line.
    writeln!(out, "spawned {}", child.pid()).expect("write the PID");
    out.flush().expect("flush the PID");
    std::thread::sleep(Duration::from_secs(60));
    std::process::exit(3);
}

/// The PID's state letter and parent from `/proc/PID/stat`, or `None` once it is reaped.
fn state_and_parent(pid: i32) -> Option<(char, i32)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after_name = &stat[stat.rfind(')')? + 2..];
    let mut fields = after_name.split(' ');
    let state = fields.next()?.chars().next()?;
    Some((state, fields.next()?.parse().ok()?))
}

/// Waits (up to 10 s) for `pid`, a child of this process, to end: its raw wait status.
fn wait_for(pid: i32) -> Option<rustix::process::WaitStatus> {
    let pid = rustix::process::Pid::from_raw(pid).expect("a positive PID");
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        let options = rustix::process::WaitOptions::NOHANG;
        match rustix::process::waitpid(Some(pid), options).expect("waitpid") {
            Some((_, status)) => return Some(status),
            None => std::thread::sleep(Duration::from_millis(10)),
        }
    }
    None
}

/// Starts the helper, reads the PID of its `sleep`, kills the helper with SIGKILL and reaps
/// it: the `sleep`'s PID, now this process's child (a subreaper adopts orphans).
fn kill_a_parent(mode: &str) -> i32 {
    rustix::process::set_child_subreaper(Some(rustix::process::getpid()))
        .expect("become a subreaper");
    let mut helper = Command::new(std::env::current_exe().expect("this test binary"))
        .args(["--exact", "helper_spawn_sleep_and_wait", "--nocapture"])
        .args(["--test-threads=1"])
        .env(HELPER, mode)
        .stdout(Stdio::piped())
        .spawn()
        .expect("start the helper");
    let lines = BufReader::new(helper.stdout.take().expect("the helper's stdout")).lines();
    let pid = lines
        .map_while(Result::ok)
        .find_map(|line| line.rsplit_once("spawned ")?.1.parse::<i32>().ok())
        .expect("the helper prints its child's PID");
    helper.kill().expect("SIGKILL the helper");
    let status = helper.wait().expect("reap the helper");
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&status),
        Some(9)
    );
    pid
}

#[test]
fn with_the_option_a_child_dies_when_its_parent_is_killed() {
    let _serial = serial();
    let pid = kill_a_parent("with");
    let status = wait_for(pid).expect("the sleep ended within 10 s of its parent's death");
    assert_eq!(status.terminating_signal(), Some(9), "{status:?}");
}

#[test]
fn without_it_the_child_outlives_its_killed_parent() {
    let _serial = serial();
    let pid = kill_a_parent("without");
    // The kernel sends the parent-death signal while the parent exits, before it can be
    // reaped; after that, nothing more is coming. Give a signal in flight time to land.
    std::thread::sleep(Duration::from_millis(300));
    let seen = state_and_parent(pid);
    let me = std::process::id() as i32;
    let _ = rustix::process::kill_process(
        rustix::process::Pid::from_raw(pid).expect("a positive PID"),
        rustix::process::Signal::KILL,
    );
    let status = wait_for(pid);
    assert!(
        matches!(seen, Some((state, parent)) if state != 'Z' && parent == me),
        "the sleep should run on, adopted by this process ({me}): {seen:?}"
    );
    assert_eq!(status.and_then(|s| s.terminating_signal()), Some(9));
}

/// The kernel's rule: the signal fires when the spawning thread exits, not the process.
#[test]
fn the_signal_follows_the_spawning_thread_not_the_process() {
    let _serial = serial();
    let spawner = std::thread::spawn(|| {
        let options = SpawnOptions {
            parent_death_signal: Some(Signal::KILL),
            ..SpawnOptions::default()
        };
        let mut stack = ChildStack::new().expect("map a child stack");
        program("/bin/sleep", &["sleep", "60"], &[])
            .spawn(&options, &mut stack)
            .expect("spawn sleep")
    });
    let child = spawner.join().expect("the spawning thread");
    let deadline = coldtrace_syscalls::wait::monotonic_ns() + 10_000_000_000;
    let event = child.wait(None, Some(deadline)).expect("wait");
    assert_eq!(
        event,
        WaitEvent::Exited,
        "the sleep should die with its thread"
    );
    let (status, _) = child.reap().expect("reap");
    assert!(
        matches!(status.kind(), WaitStatusKind::Signaled { signal, .. } if signal == Signal::KILL),
        "{status:?}"
    );
}
