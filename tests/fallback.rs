//! The fallbacks, shown under a seccomp filter (`tests/fallback/seccomp_deny.c`, built with
//! cc) that makes `clone` with `CLONE_PIDFD`, `pidfd_open` and `close_range` fail as an old
//! kernel or a container's profile would: a `--timeout` and a forwarded SIGTERM are never
//! lost, the child still gets exactly fds 0, 1, 2, each fallback is said once, and EMFILE at
//! the clone is a per-run failure with exit 125, and a wait that fails kills the command. Before the fix the same filters gave exit 0
//! after the whole sleep (no timeout, no forwarding) and leaked descriptor 5000. And where a
//! memfd may not be executed (`vm.memfd_noexec = 2`), the spawner is not started: coldtrace
//! clones the children itself, records its own floor, and says why once.
#![forbid(unsafe_code)]

mod common;

use common::{read_records, TempDir, BIN};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

const ENOSYS: &str = "38";
const EPERM: &str = "1";

/// The helper, compiled once per test binary into cargo's scratch directory for tests.
fn helper() -> &'static Path {
    static HELPER: OnceLock<PathBuf> = OnceLock::new();
    HELPER.get_or_init(|| {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fallback/seccomp_deny.c");
        let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("seccomp_deny");
        let status = Command::new("cc")
            .args(["-O2", "-Wall", "-o"])
            .arg(&out)
            .arg(&src)
            .status()
            .expect("run cc (gcc; .ci/run installs it)");
        assert!(status.success(), "cc {} failed", src.display());
        out
    })
}

/// `seccomp_deny FILTER... -- coldtrace ARGS...` in `dir`, with piped output.
fn under_filter(dir: &Path, filter: &[&str], args: &[&str]) -> (Command, String) {
    let mut cmd = Command::new(helper());
    cmd.args(filter)
        .arg("--")
        .arg(BIN)
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let shown = format!(
        "seccomp_deny {} -- coldtrace {}",
        filter.join(" "),
        args.join(" ")
    );
    (cmd, shown)
}

fn run(dir: &Path, filter: &[&str], args: &[&str]) -> common::Output {
    let (mut cmd, shown) = under_filter(dir, filter, args);
    let started = Instant::now();
    let child = cmd.spawn().expect("spawn the helper");
    common::finish(child, shown, started, Duration::from_secs(60))
}

fn notes(out: &common::Output, what: &str) -> usize {
    // What the terminal shows: notices on stderr, the table's notes on stdout.
    out.shown_lines()
        .iter()
        .filter(|l| l.contains(what))
        .count()
}

const NO_PIDFDS: [&str; 4] = ["--clone-pidfd", ENOSYS, "--pidfd-open", ENOSYS];

#[test]
fn timeout_is_kept_without_pidfds_and_the_fallback_is_said_once() {
    let dir = TempDir::new("fallback-timeout");
    let out = run(
        dir.path(),
        &NO_PIDFDS,
        &[
            "run",
            "-n",
            "1",
            "-q",
            "--timeout",
            "1",
            "--",
            "sleep",
            "30",
        ],
    );
    let ctx = out.describe();
    out.expect_code(143);
    assert!(
        out.elapsed < Duration::from_secs(15),
        "the timeout was lost{ctx}"
    );
    assert_eq!(notes(&out, "no pidfds here"), 1, "{ctx}");
    // A batch says it once too, and every run is a timed-out one (-i: a failing first run
    // would stop it).
    let args = [
        "run",
        "-i",
        "-n",
        "3",
        "-o",
        "out",
        "--timeout",
        "0.3",
        "--",
        "sleep",
        "30",
    ];
    let out = run(dir.path(), &NO_PIDFDS, &args);
    let ctx = out.describe();
    assert_eq!(notes(&out, "no pidfds here"), 1, "{ctx}");
    let records = read_records(&dir.join("out"));
    assert_eq!(records.len(), 3, "{ctx}");
    for r in &records {
        assert_eq!(r["outcome"]["kind"], "timed_out", "{r}");
        // Cloned by the spawner, which fell back too: clone3, then clone, then no pidfd.
        assert_eq!(r["runner"]["spawned_by"], "spawner", "{r}");
        assert!(
            r["wall_ns"].as_u64().is_some_and(|ns| ns < 10_000_000_000),
            "{r}"
        );
    }
}

#[test]
fn timeout_is_kept_when_pidfd_send_signal_is_refused() {
    // The pidfd still comes from the clone; the signals fall back to kill() on the unreaped
    // child's group.
    let dir = TempDir::new("fallback-send-signal");
    for errno in [ENOSYS, EPERM] {
        let filter = ["--pidfd-send-signal", errno];
        let args = [
            "run",
            "-n",
            "1",
            "-q",
            "--timeout",
            "1",
            "--",
            "sleep",
            "30",
        ];
        let out = run(dir.path(), &filter, &args);
        let ctx = out.describe();
        out.expect_code(143);
        assert!(
            out.elapsed < Duration::from_secs(15),
            "the timeout was lost{ctx}"
        );
    }
}

#[test]
fn pidfd_open_refused_alone_changes_nothing() {
    let dir = TempDir::new("fallback-pidfd-open");
    let filter = ["--pidfd-open", ENOSYS];
    let out = run(
        dir.path(),
        &filter,
        &[
            "run",
            "-n",
            "1",
            "-q",
            "--timeout",
            "1",
            "--",
            "sleep",
            "30",
        ],
    );
    let ctx = out.describe();
    out.expect_code(143);
    assert!(
        out.elapsed < Duration::from_secs(15),
        "the timeout was lost{ctx}"
    );
    assert_eq!(
        out.stderr, "",
        "pidfds from the clone need no pidfd_open{ctx}"
    );
}

#[test]
fn sigterm_is_forwarded_without_pidfds() {
    let dir = TempDir::new("fallback-sigterm");
    let args = ["run", "-n", "3", "-o", "out", "--", "sleep", "5"];
    let (mut cmd, shown) = under_filter(dir.path(), &NO_PIDFDS, &args);
    let started = Instant::now();
    let child = cmd.spawn().expect("spawn the helper");
    // The helper execs coldtrace: same PID.
    let pid = rustix::process::Pid::from_raw(child.id() as i32).expect("pid");
    std::thread::sleep(Duration::from_millis(800));
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).expect("kill -TERM");
    let out = common::finish(child, shown, started, Duration::from_secs(20));
    let ctx = out.describe();
    out.expect_code(143);
    assert!(
        out.elapsed < Duration::from_secs(4),
        "SIGTERM was not forwarded{ctx}"
    );
    let records = read_records(&dir.join("out"));
    assert_eq!(records.len(), 1, "{ctx}");
    assert_eq!(
        records[0]["outcome"]["signal_name"], "SIGTERM",
        "{}",
        records[0]
    );
    assert_eq!(records[0]["interrupted_by"], "SIGTERM");
}

#[test]
fn child_fds_are_exactly_0_1_2_without_close_range() {
    let dir = TempDir::new("fallback-fds");
    let fdlist = helper().to_str().expect("a UTF-8 temp path");
    let setup = ["--nofile", "8192", "--fd", "5000"];
    // The setup is real: without coldtrace, descriptor 5000 reaches the program.
    let direct = Command::new(helper())
        .args(setup)
        .args(["--", fdlist, "fdlist"])
        .output()
        .expect("run the helper");
    let listed = String::from_utf8_lossy(&direct.stdout).into_owned();
    assert!(listed.lines().any(|l| l == "5000"), "{listed}");
    for errno in [ENOSYS, EPERM] {
        let filter = [&setup[..], &["--close-range", errno]].concat();
        let out = run(
            dir.path(),
            &filter,
            &["run", "-n", "1", "-q", "--", fdlist, "fdlist"],
        );
        let ctx = out.describe();
        out.expect_code(0);
        assert_eq!(out.stdout, "0\n1\n2\n", "{ctx}");
        assert_eq!(notes(&out, "close_range is refused"), 1, "{ctx}");
    }
    // And with close_range allowed, the same setup.
    let out = run(
        dir.path(),
        &setup,
        &["run", "-n", "1", "-q", "--", fdlist, "fdlist"],
    );
    out.expect_code(0);
    assert_eq!(out.stdout, "0\n1\n2\n", "{}", out.describe());
}

#[test]
fn emfile_at_the_clone_is_a_per_run_failure_never_a_lost_timeout() {
    // From a descriptor limit too small for coldtrace itself up to one that fits: every limit
    // ends in 125 with one line, or in the timeout's 143 — never exit 0 after the whole sleep.
    let dir = TempDir::new("fallback-emfile");
    let mut clone_failed = false;
    for nofile in 4..64 {
        let n = nofile.to_string();
        let filter = ["--close-from", "3", "--nofile", n.as_str()];
        let args = [
            "run",
            "-n",
            "1",
            "-q",
            "--output",
            "null",
            "--timeout",
            "0.5",
            "--",
            "sleep",
            "30",
        ];
        let out = run(dir.path(), &filter, &args);
        let ctx = out.describe();
        assert!(
            out.elapsed < Duration::from_secs(15),
            "the timeout was lost{ctx}"
        );
        match out.code() {
            Some(125) => {
                assert_eq!(out.stderr.lines().count(), 1, "one line{ctx}");
                clone_failed |= out
                    .stderr
                    .contains("cannot start: Too many open files (EMFILE)");
            }
            Some(143) => {
                assert!(
                    clone_failed,
                    "no limit made the clone fail with EMFILE{ctx}"
                );
                return;
            }
            _ => panic!("neither 125 nor 143{ctx}"),
        }
    }
    panic!("no descriptor limit below 64 let coldtrace run sleep");
}

#[test]
fn a_wait_that_fails_kills_the_command_and_says_why() {
    // ppoll refused: coldtrace cannot wait with a deadline, so it must not wait at all.
    let dir = TempDir::new("fallback-wait-failed");
    let args = [
        "run",
        "-n",
        "1",
        "-o",
        "out",
        "--timeout",
        "20",
        "--",
        "sleep",
        "30",
    ];
    let out = run(dir.path(), &["--ppoll", EPERM], &args);
    let ctx = out.describe();
    out.expect_code(125);
    assert!(
        out.elapsed < Duration::from_secs(10),
        "the command was left to run{ctx}"
    );
    let records = read_records(&dir.join("out"));
    assert_eq!(records.len(), 1, "{ctx}");
    let outcome = &records[0]["outcome"];
    assert_eq!(outcome["kind"], "wait_failed", "{outcome}");
    assert_eq!(outcome["errno"], 1, "{outcome}");
    assert_eq!(outcome["signal_name"], "SIGKILL", "{outcome}");
}

/// `coldtrace ARGS...` in `dir`, in a new PID namespace whose `vm.memfd_noexec` is `noexec`
/// (the setting is per PID namespace and inherited: the machine's own is left alone).
fn with_memfd_noexec(dir: &Path, noexec: &str, args: &[&str]) -> common::Output {
    let script = format!("echo {noexec} > /proc/sys/vm/memfd_noexec && exec \"$0\" \"$@\"");
    let mut cmd = Command::new("unshare");
    cmd.args(["--pid", "--fork", "--mount-proc", "sh", "-c", &script, BIN])
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let shown = format!("vm.memfd_noexec={noexec} coldtrace {}", args.join(" "));
    let started = Instant::now();
    let child = cmd.spawn().expect("spawn unshare");
    common::finish(child, shown, started, Duration::from_secs(60))
}

#[test]
fn memfd_exec_forbidden_clones_in_process_and_says_so_once() {
    if !Path::new("/proc/sys/vm/memfd_noexec").exists() {
        eprintln!("NOTE: no vm.memfd_noexec (a kernel before 6.3): nothing to forbid; skipped");
        return;
    }
    let dir = TempDir::new("fallback-memfd-noexec");
    let by = |out: &str| -> Vec<String> {
        let records = read_records(&dir.join(out));
        records
            .iter()
            .map(|r| {
                r["runner"]["spawned_by"]
                    .as_str()
                    .unwrap_or("?")
                    .to_string()
            })
            .collect()
    };
    // Allowed (0), the spawner clones every run: the control for what follows.
    let args = ["run", "-n", "3", "-o", "allowed", "--", "true"];
    let out = with_memfd_noexec(dir.path(), "0", &args);
    let ctx = out.describe();
    if out.code() != Some(0) && out.stderr.starts_with("unshare:") {
        eprintln!("NOTE: unshare is not permitted here{ctx}; skipped");
        return;
    }
    out.expect_code(0);
    assert_eq!(by("allowed"), ["spawner"; 3], "{ctx}");
    // Forbidden (2: no memfd may be executed): the same batch, cloned by coldtrace itself,
    // whose floor the records name, and the reason said once.
    let args = ["run", "-n", "3", "-o", "forbidden", "--", "true"];
    let out = with_memfd_noexec(dir.path(), "2", &args);
    let ctx = out.describe();
    out.expect_code(0);
    assert_eq!(by("forbidden"), ["coldtrace"; 3], "{ctx}");
    let batch = common::read_batch(&dir.join("forbidden"));
    let why = batch["spawner"]["unavailable"].as_str().unwrap_or_default();
    assert!(why.contains("EACCES"), "{why:?}{ctx}");
    assert_eq!(batch["spawner"]["runs"], 0, "{ctx}");
    assert_eq!(notes(&out, "spawner: none"), 1, "{ctx}");
    for r in read_records(&dir.join("forbidden")) {
        assert!(
            r["runner"]["vm_hwm_kib"].as_u64().is_some_and(|k| k > 0),
            "{r}"
        );
    }
}
