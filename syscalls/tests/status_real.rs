//! Wait statuses of real processes started through `Program::spawn` and reaped with `wait4`:
//! every exit code, death by every standard signal whose default action terminates, a core
//! dump, and a stop/continue cycle.
//!
//! Every test here waits for its own children by PID only, so they may run in parallel.
#![forbid(unsafe_code)]

mod common;

use coldtrace_syscalls::{ChildStack, Signal, SpawnOptions, WaitStatus, WaitStatusKind};
use common::{run, run_in, sh, TempDir};
use std::os::fd::AsFd;

#[test]
fn exit_codes_0_to_255() {
    let dir = TempDir::new("exit");
    let mut stack = ChildStack::new().unwrap();
    for code in 0..=255u8 {
        let out = run_in(
            &dir,
            &sh(&format!("exit {code}"), &[]),
            &SpawnOptions::default(),
            &mut stack,
        )
        .unwrap();
        let status = out.status;
        assert_eq!(status.code(), Some(i32::from(code)), "{}", out.describe());
        assert_eq!(status.kind(), WaitStatusKind::Exited { code });
        assert_eq!(status.signal(), None);
        assert!(!status.core_dumped());
        assert_eq!(status.to_raw(), i32::from(code) << 8);
        assert_eq!(status.to_string(), format!("exited with code {code}"));
    }
}

/// The standard signals whose default action is to terminate ("Term" or "Core" in signal(7)).
/// SIGCHLD, SIGCONT, SIGURG and SIGWINCH are ignored by default, and SIGSTOP, SIGTSTP, SIGTTIN
/// and SIGTTOU stop rather than kill, so a shell sending them to itself would not die. SIGKILL
/// is not catchable but does kill, so it is included.
const TERMINATING: [i32; 23] = [
    1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 24, 25, 26, 27, 29, 30, 31,
];

#[test]
fn death_by_each_terminating_signal() {
    let dir = TempDir::new("signals");
    let cwd = dir.cpath();
    let mut stack = ChildStack::new().unwrap();
    // In a temp dir, with no core dumps, so the Core-action signals leave nothing behind.
    let options = SpawnOptions {
        cwd: Some(&cwd),
        ..SpawnOptions::default()
    };
    for n in TERMINATING {
        let out = run_in(
            &dir,
            &sh(&format!("ulimit -c 0; kill -{n} $$; exit 99"), &[]),
            &options,
            &mut stack,
        )
        .unwrap();
        let status = out.status;
        let name = common::signal_7_name(n);
        assert_eq!(status.signal(), Some(n), "{name}: {}", out.describe());
        assert_eq!(status.code(), None, "{name}");
        // RLIMIT_CORE is 0, so no signal may report a dump.
        assert!(!status.core_dumped(), "{name}: {status:?}");
        assert_eq!(
            status.kind(),
            WaitStatusKind::Signaled {
                signal: Signal::from_raw(n),
                core_dumped: false
            }
        );
        assert_eq!(status.to_string(), format!("killed by {name}"));
    }
}

/// What `/proc/sys/kernel/core_pattern` and RLIMIT_CORE let us expect of a SIGSEGV.
enum CoreExpectation {
    /// A plain pattern without a directory: the core lands in the child's cwd.
    InCwd { prefix: String },
    /// An absolute path: the kernel writes it there (we do not go looking for it).
    Elsewhere(String),
    /// A pipe to a helper: whether the dump "succeeds" is up to the helper.
    Piped(String),
    /// No dump is possible, with the reason.
    Impossible(String),
}

fn core_expectation() -> CoreExpectation {
    let pattern = match std::fs::read_to_string("/proc/sys/kernel/core_pattern") {
        Ok(p) => p.trim_end_matches('\n').to_string(),
        Err(e) => return CoreExpectation::Impossible(format!("cannot read core_pattern: {e}")),
    };
    let hard = rustix::process::getrlimit(rustix::process::Resource::Core).maximum;
    if pattern.starts_with('|') {
        // The kernel ignores RLIMIT_CORE for pipes (apart from the special value 1).
        return CoreExpectation::Piped(pattern);
    }
    if pattern.is_empty() {
        return CoreExpectation::Impossible("core_pattern is empty".into());
    }
    if hard == Some(0) {
        return CoreExpectation::Impossible("the hard RLIMIT_CORE is 0".into());
    }
    if pattern.contains('/') {
        return CoreExpectation::Elsewhere(pattern);
    }
    let prefix = pattern.split('%').next().unwrap_or("").to_string();
    CoreExpectation::InCwd { prefix }
}

#[test]
fn core_dump_of_sigsegv() {
    let dir = TempDir::new("core");
    let cwd = dir.cpath();
    let mut stack = ChildStack::new().unwrap();
    let options = SpawnOptions {
        cwd: Some(&cwd),
        ..SpawnOptions::default()
    };
    let before: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert!(before.is_empty());
    let out = run_in(
        &dir,
        &sh("ulimit -c unlimited; kill -SEGV $$; exit 99", &[]),
        &options,
        &mut stack,
    )
    .unwrap();
    let status = out.status;
    // Whatever the machine allows, the child died of SIGSEGV.
    assert_eq!(status.signal(), Some(11), "{}", out.describe());
    assert_eq!(status.code(), None);
    assert_eq!(
        status.kind(),
        WaitStatusKind::Signaled {
            signal: Signal::SEGV,
            core_dumped: status.core_dumped()
        }
    );
    let cores: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    match core_expectation() {
        CoreExpectation::InCwd { prefix } => {
            assert!(
                status.core_dumped(),
                "core dumps are allowed here, yet {status:?}"
            );
            assert_eq!(status.to_string(), "killed by SIGSEGV (core dumped)");
            assert!(
                cores.iter().any(|name| name.starts_with(&prefix)),
                "no core file {prefix:?}* in the child's cwd: {cores:?}"
            );
            eprintln!("core dump written to the child's cwd as {cores:?} (removed)");
        }
        CoreExpectation::Elsewhere(pattern) => {
            assert!(
                status.core_dumped(),
                "core_pattern {pattern:?} allows dumps, yet {status:?}"
            );
            eprintln!("core dump written per core_pattern {pattern:?} (outside the test's dir)");
        }
        CoreExpectation::Piped(pattern) => eprintln!(
            "core_pattern pipes dumps to a helper ({pattern:?}): core_dumped() = {} is the \
             helper's business; only the signal is asserted",
            status.core_dumped()
        ),
        CoreExpectation::Impossible(why) => {
            eprintln!(
                "this machine does not allow core dumps ({why}): only the signal is asserted"
            );
            assert!(
                !status.core_dumped(),
                "no dump was possible, yet {status:?}"
            );
        }
    }
    // The TempDir's drop removes any core file.
}

/// `waitpid(pid, options)`: the PID and raw status word of the report, decoded by this crate.
fn report(pid: i32, options: rustix::process::WaitOptions) -> (i32, WaitStatus) {
    let id = rustix::process::Pid::from_raw(pid).unwrap();
    let (who, status) = rustix::process::waitpid(Some(id), options)
        .unwrap()
        .expect("a report");
    (
        who.as_raw_nonzero().get(),
        WaitStatus::from_raw(status.as_raw()),
    )
}

#[test]
fn stop_and_continue_are_reported() {
    let (read_end, write_end) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC).unwrap();
    let mut stack = ChildStack::new().unwrap();
    // The shell stops itself, then blocks on its stdin until we close the pipe, so it cannot
    // have exited before we see it continued.
    let program = sh("kill -STOP $$; read line; exit 3", &[]);
    let options = SpawnOptions {
        stdin: Some(read_end.as_fd()),
        ..SpawnOptions::default()
    };
    let child = program.spawn(&options, &mut stack).unwrap();
    drop(read_end);
    let pid = child.pid();

    // Block until it has stopped without consuming the report (WNOWAIT), so that `stopped_by`
    // must see it, and then wait4 must still get it.
    let pid_id = rustix::process::Pid::from_raw(pid).unwrap();
    let seen = rustix::process::waitid(
        rustix::process::WaitId::Pid(pid_id),
        rustix::process::WaitIdOptions::STOPPED | rustix::process::WaitIdOptions::NOWAIT,
    )
    .unwrap()
    .expect("a blocking waitid reports");
    assert_eq!(seen.stopping_signal(), Some(19));
    assert_eq!(child.stopped_by(), Ok(Some(Signal::STOP)));

    // The reports are taken as a host program would, by waitpid on the PID (not a reap: the
    // child is still alive); this crate's `wait4` leaves a PID a `Child` owns to that `Child`.
    let (who, status) = report(pid, rustix::process::WaitOptions::UNTRACED);
    assert_eq!(who, pid);
    assert_eq!(
        status.kind(),
        WaitStatusKind::Stopped {
            signal: Signal::STOP
        }
    );
    assert_eq!(status.stopped_signal(), Some(19));
    assert_eq!(status.to_string(), "stopped by SIGSTOP");
    assert_eq!(child.has_exited(), Ok(false));
    // wait4 consumed the stop report; the child is still stopped but nothing is left to see.
    assert_eq!(child.stopped_by(), Ok(None));

    child.signal(Signal::CONT).unwrap();
    let (who, status) = report(pid, rustix::process::WaitOptions::CONTINUED);
    assert_eq!(who, pid);
    assert_eq!(status.kind(), WaitStatusKind::Continued);
    assert!(status.continued());
    assert_eq!(status.to_string(), "continued");

    drop(write_end);
    let (status, _) = child.reap().unwrap();
    assert_eq!(status.kind(), WaitStatusKind::Exited { code: 3 });
}

#[test]
fn run_helper_reports_a_plain_exit() {
    // The helper itself: a child that prints and exits is seen with its output.
    let out = run(&sh("printf '%s' \"$1\"; exit 7", &["hello"]));
    assert_eq!(out.status.code(), Some(7), "{}", out.describe());
    assert_eq!(out.stdout, b"hello");
}
