//! `coldtrace time -o FIFO`: the FIFO is opened before the command runs, as GNU time 1.9 opens
//! its `-o` file, so the command runs only once a reader is there — never a command that ran
//! and a report with nowhere to go.

use super::common::{finish, TempDir, BIN};
use super::{mkfifo, DEADLINE};
use rustix::process::Signal;
use std::io::Read;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// `PROGRAM ARGS` in `dir`, started, stdin /dev/null, stdout and stderr piped.
fn start(dir: &TempDir, program: &str, args: &[&str]) -> Child {
    Command::new(program)
        .args(args)
        .current_dir(dir.path())
        .env("COLDTRACE_STATE_DIR", "")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {program}: {e}"))
}

/// Waits `wait` and asserts that `child` still runs and that `marker` was not made.
fn assert_waiting(child: &mut Child, marker: &Path, wait: Duration) {
    std::thread::sleep(wait);
    assert!(
        child.try_wait().unwrap().is_none(),
        "it did not wait for a reader"
    );
    assert!(
        !marker.exists(),
        "the command ran before the FIFO had a reader"
    );
}

/// `-o fifo` (with `extra` before it), the command `touch MARK`.
fn time_into_fifo(dir: &TempDir, extra: &[&str]) -> Child {
    mkfifo(&dir.join("fifo"));
    let mut args = vec!["time"];
    args.extend_from_slice(extra);
    args.extend(["-o", "fifo", "touch", "MARK"]);
    start(dir, BIN, &args)
}

#[test]
fn time_into_a_fifo_runs_the_command_once_a_reader_opens_it() {
    let dir = TempDir::new("tfifo");
    let mut child = time_into_fifo(&dir, &["-f", "%x %C"]);
    assert_waiting(&mut child, &dir.join("MARK"), Duration::from_millis(800));
    let mut report = String::new();
    std::fs::File::open(dir.join("fifo"))
        .unwrap()
        .read_to_string(&mut report)
        .unwrap();
    let out = finish(
        child,
        "coldtrace time -o fifo".into(),
        Instant::now(),
        DEADLINE,
    );
    out.expect_code(0);
    assert_eq!(report, "0 touch MARK\n", "{}", out.describe());
    assert!(dir.join("MARK").exists());
}

#[test]
fn a_signal_while_time_waits_for_a_fifo_reader_ends_it_with_nothing_run() {
    for signal in [Signal::TERM, Signal::INT] {
        let dir = TempDir::new("tfifosig");
        let mut child = time_into_fifo(&dir, &[]);
        assert_waiting(&mut child, &dir.join("MARK"), Duration::from_millis(500));
        let pid = rustix::process::Pid::from_child(&child);
        rustix::process::kill_process(pid, signal).expect("signal coldtrace");
        let out = finish(
            child,
            "coldtrace time -o fifo".into(),
            Instant::now(),
            DEADLINE,
        );
        assert_eq!(
            out.status.signal(),
            Some(signal.as_raw()),
            "{}",
            out.describe()
        );
        assert!(!dir.join("MARK").exists(), "the command ran");
    }
}

#[test]
fn time_into_a_fifo_without_a_reader_does_what_gnu_time_does() {
    // GNU time 1.9 opens its -o file (O_WRONLY|O_CREAT|O_TRUNC) before it forks: with no
    // reader it waits in open, and `timeout` ends it with nothing run.
    for program in ["/usr/bin/time", BIN] {
        let dir = TempDir::new("tfifognu");
        mkfifo(&dir.join("fifo"));
        let mut args = vec!["1", program];
        if program == BIN {
            args.push("time");
        }
        args.extend(["-o", "fifo", "touch", "MARK"]);
        let child = start(&dir, "timeout", &args);
        let out = finish(
            child,
            format!("timeout 1 {program} -o fifo"),
            Instant::now(),
            DEADLINE,
        );
        out.expect_code(124);
        assert!(!dir.join("MARK").exists(), "{program} ran the command");
    }
}
