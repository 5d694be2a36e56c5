//! coldtrace under bad input, hostile workloads, interruption, hostile file systems and
//! resource pressure. Every test works in its own temp directory; anything process-wide
//! (umask, rlimits, namespaces, mounts) is changed only inside the processes a test spawns,
//! or on a mount point inside the test's own directory.
#![forbid(unsafe_code)]

mod common;

use common::{ct, read_batch, read_records, write_file, TempDir, BIN};
use serde_json::Value;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::ExitStatusExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn str_at<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_else(|| panic!("{pointer} is not a string in {v:#}"))
}

fn u64_at(v: &Value, pointer: &str) -> u64 {
    v.pointer(pointer)
        .and_then(Value::as_u64)
        .unwrap_or_else(|| panic!("{pointer} is not an unsigned integer in {v:#}"))
}

fn assert_one_line(out: &common::Output) {
    assert_eq!(
        out.stderr_lines().len(),
        1,
        "expected exactly one line on stderr{}",
        out.describe()
    );
    assert!(!out.stderr.contains("panicked"), "{}", out.describe());
}

// ---------------------------------------------------------------- what cannot be started

#[test]
fn empty_command_is_a_usage_error() {
    let dir = TempDir::new("empty");
    let out = ct(dir.path(), ["run", "--", ""]).run();
    out.expect_code(125);
    assert_one_line(&out);
}

#[test]
fn directory_as_command_is_126() {
    let dir = TempDir::new("dircmd");
    std::fs::create_dir(dir.join("sub")).unwrap();
    let sub = dir.join("sub");
    for program in [sub.to_str().unwrap(), "./sub"] {
        let out = ct(dir.path(), ["run", "-n", "1", "--", program]).run();
        out.expect_code(126);
        assert_one_line(&out);
    }
}

#[test]
fn file_without_execute_bit_is_126() {
    let dir = TempDir::new("noexec");
    write_file(&dir.join("script"), b"#!/bin/sh\ntouch MARKER\n", 0o644);
    let out = ct(dir.path(), ["run", "-n", "2", "--", "./script"]).run();
    out.expect_code(126);
    assert_one_line(&out);
    assert!(!dir.join("MARKER").exists(), "{}", out.describe());
}

#[test]
fn bad_interpreter_is_127_with_enoent() {
    let dir = TempDir::new("badinterp");
    write_file(
        &dir.join("script"),
        b"#!/nonexistent/interp\necho hi\n",
        0o755,
    );
    let out = ct(dir.path(), ["run", "-n", "1", "--json", "--", "./script"]).run();
    out.expect_code(127);
    let r = out.json();
    assert_eq!(
        r["outcome"]["kind"],
        "failed_to_start",
        "{}",
        out.describe()
    );
    assert_eq!(r["outcome"]["error"], "ENOENT", "{}", out.describe());
    assert_eq!(r["counted"], false, "{}", out.describe());
    assert!(out.stderr.contains("ENOENT"), "{}", out.describe());
}

#[test]
fn executable_garbage_is_126_with_enoexec() {
    let dir = TempDir::new("garbage");
    let garbage: Vec<u8> = (0..512u32).map(|i| (i * 7 + 3) as u8 | 0x80).collect();
    write_file(&dir.join("garbage"), &garbage, 0o755);
    let out = ct(dir.path(), ["run", "-n", "1", "--json", "--", "./garbage"]).run();
    out.expect_code(126);
    let r = out.json();
    assert_eq!(
        r["outcome"]["kind"],
        "failed_to_start",
        "{}",
        out.describe()
    );
    assert_eq!(r["outcome"]["error"], "ENOEXEC", "{}", out.describe());
    // In a batch the start failure stops the batch with the same code.
    let out = ct(
        dir.path(),
        ["run", "-n", "3", "-o", "out", "--", "./garbage"],
    )
    .run();
    out.expect_code(126);
    let b = read_batch(&dir.join("out"));
    assert_eq!(b["complete"], false, "{}", out.describe());
    assert_eq!(
        read_records(&dir.join("out")).len(),
        1,
        "{}",
        out.describe()
    );
}

#[derive(Debug, PartialEq)]
enum Probe {
    /// coldtrace ran the command.
    Fits,
    /// coldtrace started but the command's execve failed.
    ChildTooBig,
    /// coldtrace itself could not be executed with that many arguments.
    RunnerTooBig,
}

/// An argument list too long for the command but not for coldtrace itself.
///
/// A child inherits coldtrace's stack rlimit and environment and gets fewer argument bytes than
/// coldtrace (no `coldtrace run --`), so "3 MB of arguments" would already be refused at
/// coldtrace's own execve. The only extra bytes the child's execve carries are those the kernel
/// adds for a `#!` script: its full path (here ~3.3 KB long, found through PATH) and its
/// interpreter. So: lower the stack limit to 1 MiB (256 KiB for arguments) inside a shell and
/// search for the argument count at which coldtrace still starts but the script does not.
#[test]
fn argument_list_too_long_is_a_clean_126() {
    let dir = TempDir::new("e2big");
    let mut long = dir.path().to_path_buf();
    for i in 0..16 {
        long.push(format!("{i:02}{}", "d".repeat(198)));
    }
    std::fs::create_dir_all(&long).unwrap();
    write_file(&long.join("s"), b"#!/bin/true\n", 0o755);
    let path_var = format!("{}:/usr/bin:/bin", long.display());
    let arg = "a".repeat(1000);
    let attempt = |n: usize, json: bool| -> common::Output {
        let mut cmd = Command::new("/bin/sh");
        cmd.arg("-c")
            .arg("ulimit -s 1024 && exec \"$@\"")
            .arg("sh")
            .arg(BIN)
            .args(["run", "-n", "1"]);
        if json {
            cmd.arg("--json");
        }
        cmd.arg("--").arg("s");
        for _ in 0..n {
            cmd.arg(&arg);
        }
        cmd.current_dir(dir.path())
            .env("PATH", &path_var)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let shown = format!(
            "PATH=<{} bytes> sh -c 'ulimit -s 1024 && exec \"$@\"' sh coldtrace run -n 1{} -- s <{n} args of 1000 bytes>",
            path_var.len(),
            if json { " --json" } else { "" }
        );
        let started = Instant::now();
        let child = cmd.spawn().expect("spawn sh");
        common::finish(child, shown, started, Duration::from_secs(20))
    };
    let classify = |out: &common::Output| -> Probe {
        if out.code() == Some(0) {
            Probe::Fits
        } else if out.stdout.contains(coldtrace::record::RUN_SCHEMA) {
            Probe::ChildTooBig
        } else {
            Probe::RunnerTooBig
        }
    };
    let (mut lo, mut hi) = (1usize, 600usize);
    assert_eq!(classify(&attempt(lo, true)), Probe::Fits, "1 argument fits");
    assert_ne!(
        classify(&attempt(hi, true)),
        Probe::Fits,
        "600 KB cannot fit"
    );
    while hi - lo > 1 {
        let mid = (lo + hi) / 2;
        if classify(&attempt(mid, true)) == Probe::Fits {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    let out = attempt(hi, true);
    assert_eq!(
        classify(&out),
        Probe::ChildTooBig,
        "with {hi} arguments coldtrace should start and report the child's E2BIG{}",
        out.describe()
    );
    out.expect_code(126);
    let r = out.json();
    assert_eq!(
        r["outcome"]["kind"],
        "failed_to_start",
        "{}",
        out.describe()
    );
    assert_eq!(r["outcome"]["error"], "E2BIG", "{}", out.describe());
    assert!(!out.stderr.contains("panicked"), "{}", out.describe());
    // Without --json: one clean line on stderr, as for any other command that cannot start.
    let out = attempt(hi, false);
    out.expect_code(126);
    assert!(
        out.stderr.contains("E2BIG") || out.stderr.contains("Argument list too long"),
        "{}",
        out.describe()
    );
    assert_one_line(&out);
}

// ---------------------------------------------------------------- where output cannot go

#[test]
fn out_path_that_is_a_file_is_refused() {
    let dir = TempDir::new("outfile");
    std::fs::write(dir.join("file"), b"precious").unwrap();
    let out = ct(
        dir.path(),
        [
            "run",
            "-n",
            "2",
            "-o",
            "file",
            "--",
            "sh",
            "-c",
            "touch MARKER",
        ],
    )
    .run();
    out.expect_code(125);
    assert_one_line(&out);
    assert_eq!(std::fs::read(dir.join("file")).unwrap(), b"precious");
    assert!(!dir.join("MARKER").exists(), "{}", out.describe());
}

#[test]
fn unwritable_out_dir_is_refused() {
    // chmod 0555 does not stop root; /proc and /sys refuse new directories even to root.
    let dir = TempDir::new("unwritable");
    for target in ["/proc/self/out", "/sys/coldtrace-test-x"] {
        let out = ct(
            dir.path(),
            [
                "run",
                "-n",
                "2",
                "-o",
                target,
                "--",
                "sh",
                "-c",
                "touch MARKER",
            ],
        )
        .run();
        out.expect_code(125);
        assert_one_line(&out);
        assert!(
            out.stderr.contains(target),
            "names the path{}",
            out.describe()
        );
        assert!(!dir.join("MARKER").exists(), "{}", out.describe());
    }
}

#[test]
fn out_dir_with_only_a_hidden_file_is_not_empty() {
    let dir = TempDir::new("hidden");
    std::fs::create_dir(dir.join("out")).unwrap();
    std::fs::write(dir.join("out/.keep"), b"").unwrap();
    let out = ct(
        dir.path(),
        [
            "run",
            "-n",
            "2",
            "-o",
            "out",
            "--",
            "sh",
            "-c",
            "touch MARKER",
        ],
    )
    .run();
    out.expect_code(125);
    assert_one_line(&out);
    assert!(!dir.join("out/runs.jsonl").exists(), "{}", out.describe());
    assert!(!dir.join("MARKER").exists(), "{}", out.describe());
}

#[test]
fn out_path_that_is_a_symlink_is_refused() {
    let dir = TempDir::new("symlink");
    std::fs::create_dir(dir.join("real")).unwrap();
    std::os::unix::fs::symlink("real", dir.join("link")).unwrap();
    let out = ct(
        dir.path(),
        [
            "run",
            "-n",
            "2",
            "-o",
            "link",
            "--",
            "sh",
            "-c",
            "touch MARKER",
        ],
    )
    .run();
    out.expect_code(125);
    assert_one_line(&out);
    assert_eq!(
        std::fs::read_dir(dir.join("real")).unwrap().count(),
        0,
        "nothing written through the symlink{}",
        out.describe()
    );
    assert!(!dir.join("MARKER").exists(), "{}", out.describe());
}

#[test]
fn batch_files_are_regular_files_with_mode_0644_under_umask_022() {
    let dir = TempDir::new("modes");
    let mut cmd = Command::new("/bin/sh");
    cmd.args(["-c", "umask 022 && exec \"$@\"", "sh", BIN])
        .args([
            "run",
            "-n",
            "2",
            "-o",
            "out",
            "--keep-output",
            "--",
            "sh",
            "-c",
            "echo x; echo y >&2",
        ])
        .current_dir(dir.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let started = Instant::now();
    let out = common::finish(
        cmd.spawn().unwrap(),
        "sh -c 'umask 022 && exec coldtrace run -n 2 -o out -- sh -c \"echo x; echo y >&2\"'"
            .into(),
        started,
        Duration::from_secs(30),
    );
    out.expect_code(0);
    let root = dir.join("out");
    for rel in [
        "runs.jsonl",
        "batch.json",
        "runs/000/stdout",
        "runs/000/stderr",
        "runs/001/stdout",
        "runs/001/stderr",
    ] {
        let meta = std::fs::symlink_metadata(root.join(rel)).unwrap();
        assert!(meta.file_type().is_file(), "{rel} is a regular file");
        assert_eq!(
            meta.permissions().mode() & 0o7777,
            0o644,
            "{rel} mode {:o}",
            meta.permissions().mode()
        );
    }
    for rel in ["", "runs", "runs/000"] {
        let meta = std::fs::symlink_metadata(root.join(rel)).unwrap();
        assert!(meta.file_type().is_dir(), "{rel:?} is a directory");
        assert_eq!(meta.permissions().mode() & 0o7777, 0o755, "{rel:?}");
    }
    let leftovers: Vec<_> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('.'))
        .collect();
    assert!(leftovers.is_empty(), "temporary files left: {leftovers:?}");
}

// ---------------------------------------------------------------- hostile workloads

const GIB: u64 = 1 << 30;

#[test]
fn gigabyte_of_stdout_goes_to_the_artifact_without_growing_coldtrace() {
    let dir = TempDir::new("gib");
    // coldtrace measuring coldtrace: the outer record's max_rss_kib is the inner coldtrace's
    // peak RSS over the whole run (or head's, whichever is larger).
    let out = ct(
        dir.path(),
        [
            "run",
            "-n",
            "1",
            "--json",
            "--",
            BIN,
            "run",
            "-n",
            "1",
            "-q",
            "-o",
            "out",
            "--keep-output",
            "--",
            "head",
            "-c",
            "1073741824",
            "/dev/zero",
        ],
    )
    .run_within(Duration::from_secs(60));
    let ctx = out.describe();
    out.expect_code(0);
    let outer = out.json();
    let inner = read_records(&dir.join("out"));
    assert_eq!(inner.len(), 1, "{ctx}");
    assert_eq!(inner[0]["outcome"]["kind"], "exited", "{ctx}");
    assert_eq!(inner[0]["outcome"]["code"], 0, "{ctx}");
    let len = std::fs::metadata(dir.join("out/runs/000/stdout"))
        .unwrap()
        .len();
    assert_eq!(len, GIB, "the stdout artifact holds all of it{ctx}");
    assert!(
        u64_at(&inner[0], "/runner/vm_hwm_kib") < 8192,
        "{}",
        inner[0]
    );
    assert!(
        u64_at(&outer, "/rusage/max_rss_kib") < 8192,
        "inner coldtrace's peak RSS: {}{ctx}",
        outer["rusage"]
    );
}

#[test]
fn gigabyte_of_stdout_is_discarded_with_output_null() {
    let dir = TempDir::new("gibnull");
    let out = ct(
        dir.path(),
        [
            "run",
            "--json",
            "-n",
            "1",
            "--output",
            "null",
            "--",
            "head",
            "-c",
            "1073741824",
            "/dev/zero",
        ],
    )
    .run_within(Duration::from_secs(60));
    out.expect_code(0);
    let r = out.json();
    assert_eq!(r["outcome"]["code"], 0, "{}", out.describe());
    assert!(out.stdout.len() < 100_000, "{}", out.describe());
    assert!(u64_at(&r, "/runner/vm_hwm_kib") < 8192, "{r}");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn child_that_closes_its_stdout() {
    let dir = TempDir::new("closed");
    let script = "exec >&-; echo x >&2";
    let out = ct(
        dir.path(),
        [
            "run",
            "-n",
            "2",
            "-o",
            "out",
            "--keep-output",
            "--",
            "sh",
            "-c",
            script,
        ],
    )
    .run();
    out.expect_code(0);
    let records: Vec<serde_json::Value> = std::fs::read_to_string(dir.join("out/runs.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    for (i, r) in records.iter().enumerate() {
        // Nothing written to stdout: no file for it, and the record says so.
        let base = dir.join(format!("out/runs/{i:03}"));
        assert!(!base.join("stdout").exists(), "{i}");
        assert_eq!(r["artifacts"]["stdout"], serde_json::Value::Null, "{r}");
        assert_eq!(r["artifacts"]["stdout_bytes"], 0, "{r}");
        assert_eq!(std::fs::read(base.join("stderr")).unwrap(), b"x\n");
        assert_eq!(r["artifacts"]["stderr_bytes"], 2, "{r}");
    }
    assert_eq!(records.len(), 2);
    // Inherited output too.
    let out = ct(
        dir.path(),
        ["run", "-n", "1", "--json", "--", "sh", "-c", script],
    )
    .run();
    out.expect_code(0);
    assert!(out.stderr.contains("x\n"), "{}", out.describe());
    assert_eq!(out.json()["outcome"]["code"], 0, "{}", out.describe());
}

#[test]
fn daemonised_grandchild_holding_fds_does_not_hang_coldtrace() {
    let dir = TempDir::new("daemon");
    let out = ct(
        dir.path(),
        [
            "run",
            "-n",
            "1",
            "-o",
            "out",
            "--keep-output",
            "--",
            "sh",
            "-c",
            "(sleep 5 &) ; exit 0",
        ],
    )
    .run_within(Duration::from_secs(20));
    assert!(
        out.elapsed < Duration::from_secs(4),
        "coldtrace waited for the daemon{}",
        out.describe()
    );
    out.expect_code(0);
    let records = read_records(&dir.join("out"));
    assert_eq!(records.len(), 1);
    assert_eq!(records[0]["outcome"]["code"], 0, "{}", records[0]);
    assert!(
        records[0]["wall_ns"].as_u64().unwrap() < 2_000_000_000,
        "{}",
        records[0]
    );
    read_batch(&dir.join("out"));
}

/// The memfds a run writes into are used again for the next run only when no process the
/// run started is left (capture.rs): a descendant of run 0 that writes during run 1 must not
/// end up in run 1's artifacts (nor anywhere: what is written after a run ended is not kept).
#[test]
fn a_late_writer_never_lands_in_a_later_runs_output() {
    let dir = TempDir::new("late-writer");
    // Run 0 leaves a writer behind and ends at once; the writer writes during run 1.
    let script = "if [ -e seen ]; then sleep 0.6; else : > seen; \
                  (sleep 0.3; echo late; echo late >&2) & fi";
    let out = ct(
        dir.path(),
        [
            "run",
            "-n",
            "3",
            "-o",
            "out",
            "--keep-output",
            "--",
            "sh",
            "-c",
            script,
        ],
    )
    .run_within(Duration::from_secs(30));
    out.expect_code(0);
    let records = read_records(&dir.join("out"));
    assert_eq!(records.len(), 3, "{}", out.describe());
    for r in &records {
        assert_eq!(r["artifacts"]["stdout_bytes"], 0, "{r}");
        assert_eq!(r["artifacts"]["stderr_bytes"], 0, "{r}");
    }
    assert!(
        !dir.join("out/runs").exists()
            || std::fs::read_dir(dir.join("out/runs")).unwrap().count() == 0,
        "no run wrote, so no artifact file"
    );
}

#[test]
fn child_ignoring_sigterm_is_killed_after_the_grace_period() {
    let dir = TempDir::new("ignterm");
    let out = ct(
        dir.path(),
        [
            "run",
            "-n",
            "1",
            "--json",
            "--timeout",
            "0.3",
            "--kill-after",
            "0.5",
            "--",
            "sh",
            "-c",
            "trap '' TERM; sleep 30",
        ],
    )
    .run_within(Duration::from_secs(20));
    let ctx = out.describe();
    assert!(out.elapsed < Duration::from_secs(10), "{ctx}");
    let r = out.json();
    assert_eq!(r["outcome"]["kind"], "timed_out", "{ctx}");
    assert_eq!(r["outcome"]["sent_signal"], "SIGKILL", "{ctx}");
    assert_eq!(r["outcome"]["signal_name"], "SIGKILL", "{ctx}");
    out.expect_code(137);
    assert!(u64_at(&r, "/wall_ns") >= 800_000_000, "{ctx}");
}

#[test]
fn child_killing_itself_with_sigsegv_reports_core_dumped_as_the_kernel_does() {
    let dir = TempDir::new("segv");
    let pattern = std::fs::read_to_string("/proc/sys/kernel/core_pattern").unwrap_or_default();
    let core = rustix::process::getrlimit(rustix::process::Resource::Core);
    eprintln!(
        "core_pattern {:?}, RLIMIT_CORE soft {:?} hard {:?}",
        pattern.trim(),
        core.current,
        core.maximum
    );
    let mut scripts = vec!["kill -SEGV $$".to_string()];
    if core.maximum != Some(0) {
        // A variant that allows a core dump (the limit is raised in the child only).
        scripts.push(
            "ulimit -c unlimited 2>/dev/null || ulimit -c $(ulimit -H -c); kill -SEGV $$".into(),
        );
    }
    for script in scripts {
        // The oracle: the same command, run directly, as the kernel reports it to std.
        let direct = Command::new("sh")
            .args(["-c", &script])
            .current_dir(dir.path())
            .status()
            .unwrap();
        assert_eq!(direct.signal(), Some(11));
        let kernel_says = direct.core_dumped();
        let out = ct(
            dir.path(),
            ["run", "-n", "1", "--json", "--", "sh", "-c", &script],
        )
        .run();
        let ctx = out.describe();
        out.expect_code(139);
        let r = out.json();
        assert_eq!(r["outcome"]["kind"], "signaled", "{ctx}");
        assert_eq!(r["outcome"]["signal"], 11, "{ctx}");
        assert_eq!(r["outcome"]["signal_name"], "SIGSEGV", "{ctx}");
        assert_eq!(
            r["outcome"]["core_dumped"], kernel_says,
            "kernel said core_dumped={kernel_says} for {script:?}{ctx}"
        );
        if !pattern.starts_with('|') && core.current == Some(0) && !script.contains("ulimit") {
            assert_eq!(r["outcome"]["core_dumped"], false, "RLIMIT_CORE is 0{ctx}");
        }
    }
}

#[test]
fn child_that_stops_itself_is_noticed_and_timed_out() {
    let dir = TempDir::new("stop");
    let out = ct(
        dir.path(),
        [
            "run",
            "-n",
            "1",
            "--json",
            "--timeout",
            "1",
            "--",
            "sh",
            "-c",
            "kill -STOP $$",
        ],
    )
    .run_within(Duration::from_secs(20));
    let ctx = out.describe();
    assert!(out.elapsed < Duration::from_secs(10), "{ctx}");
    let r = out.json();
    assert_eq!(r["outcome"]["kind"], "timed_out", "{ctx}");
    assert_eq!(r["stopped_by"], "SIGSTOP", "{ctx}");
    assert!(
        out.stderr_lines()
            .iter()
            .any(|l| l.contains("stopped") && l.contains("SIGSTOP")),
        "a notice that the command was stopped{ctx}"
    );
    let code = out.code().unwrap();
    assert!(code > 128, "exit 128+N{ctx}");
}

// ---------------------------------------------------------------- interruption

#[test]
fn sigkill_of_coldtrace_mid_batch_leaves_only_parseable_complete_lines() {
    let dir = TempDir::new("kill9");
    let mut c = ct(
        dir.path(),
        ["run", "-n", "20", "-o", "out", "--", "sleep", "0.2"],
    );
    c.cmd.stdout(Stdio::null()).stderr(Stdio::null());
    let mut child = c.cmd.spawn().unwrap();
    std::thread::sleep(Duration::from_millis(1000));
    child.kill().unwrap();
    let status = child.wait().unwrap();
    assert_eq!(
        status.signal(),
        Some(9),
        "coldtrace finished before the kill"
    );
    let text = std::fs::read(dir.join("out/runs.jsonl")).unwrap();
    let complete: Vec<&[u8]> = text
        .split_inclusive(|&b| b == b'\n')
        .filter(|l| l.ends_with(b"\n"))
        .collect();
    assert!(
        !complete.is_empty(),
        "some runs were recorded before the kill"
    );
    assert!(complete.len() < 20);
    for (i, line) in complete.iter().enumerate() {
        let v: Value = serde_json::from_slice(line)
            .unwrap_or_else(|e| panic!("line {} not JSON ({e}): {:?}", i + 1, line));
        assert_eq!(v["schema"], coldtrace::record::RUN_SCHEMA);
        assert_eq!(v["index"], i);
    }
    assert!(!dir.join("out/batch.json").exists());
}

// ---------------------------------------------------------------- resources

#[test]
fn two_thousand_runs_do_not_grow_coldtrace() {
    let dir = TempDir::new("2000");
    let out = ct(
        dir.path(),
        [
            "run",
            "-q",
            "-n",
            "2000",
            "--output",
            "null",
            "-o",
            "out",
            "--",
            "/bin/true",
        ],
    )
    .run_within(Duration::from_secs(60));
    out.expect_code(0);
    let records = read_records(&dir.join("out"));
    assert_eq!(records.len(), 2000, "{}", out.describe());
    let first = u64_at(&records[0], "/runner/vm_hwm_kib");
    let last = u64_at(&records[1999], "/runner/vm_hwm_kib");
    assert!(
        last <= first + 512,
        "coldtrace's peak RSS grew from {first} KiB to {last} KiB over 2000 runs"
    );
    assert_eq!(read_batch(&dir.join("out"))["counts"]["counted"], 2000);
}

/// Unmounts (lazily) on drop, so a failing test does not leave the mount behind.
struct Mount(std::path::PathBuf);

impl Drop for Mount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

#[test]
fn disk_full_is_a_clear_enospc_error() {
    // Always: the message coldtrace gives for ENOSPC.
    let text = coldtrace::record::artifacts::explain(&std::io::Error::from_raw_os_error(28));
    assert!(text.contains("no space left on device"), "{text}");

    let dir = TempDir::new("enospc");
    let mnt = dir.join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    let mounted = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=2m", "tmpfs"])
        .arg(&mnt)
        .output();
    let mounted = match mounted {
        Ok(o) if o.status.success() => Mount(mnt.clone()),
        Ok(o) => {
            eprintln!(
                "NOTE: cannot mount a tmpfs here ({}); only the ENOSPC message was checked",
                String::from_utf8_lossy(&o.stderr).trim()
            );
            return;
        }
        Err(e) => {
            eprintln!("NOTE: cannot run mount ({e}); only the ENOSPC message was checked");
            return;
        }
    };
    let out = ct(
        dir.path(),
        [
            "run",
            "-n",
            "20",
            "-o",
            "mnt/out",
            "--keep-output",
            "--ignore-failure",
            "--",
            "head",
            "-c",
            "1000000",
            "/dev/zero",
        ],
    )
    .run();
    let ctx = out.describe();
    out.expect_code(125);
    assert!(
        out.stderr
            .lines()
            .any(|l| l.starts_with("coldtrace: error:") && l.contains("no space left on device")),
        "{ctx}"
    );
    assert_one_line(&out);
    let root = mnt.join("out");
    let text = std::fs::read(root.join("runs.jsonl")).unwrap();
    let complete: Vec<&[u8]> = text
        .split_inclusive(|&b| b == b'\n')
        .filter(|l| l.ends_with(b"\n"))
        .collect();
    assert!(!complete.is_empty(), "{ctx}");
    for line in &complete {
        let v: Value = serde_json::from_slice(line).expect("complete line parses");
        assert_eq!(v["schema"], coldtrace::record::RUN_SCHEMA);
    }
    match std::fs::read(root.join("batch.json")) {
        Err(e) => assert_eq!(e.kind(), std::io::ErrorKind::NotFound, "{ctx}"),
        Ok(bytes) => {
            let v: Value = serde_json::from_slice(&bytes).expect("batch.json is whole JSON");
            assert_eq!(v["schema"], coldtrace::record::BATCH_SCHEMA);
        }
    }
    drop(mounted);
}

#[test]
fn orphans_are_reaped_as_subreaper_and_as_pid_1() {
    let dir = TempDir::new("orphans");
    let script = "(sleep 0.2 &); sleep 0.5";
    // As a child subreaper (always available).
    let out = ct(
        dir.path(),
        ["run", "-n", "1", "--json", "--", "sh", "-c", script],
    )
    .run();
    out.expect_code(0);
    let r = out.json();
    assert!(
        u64_at(&r, "/orphans_reaped") >= 1,
        "subreaper reaped the orphan{}",
        out.describe()
    );
    // As PID 1 of a new PID namespace.
    let mut cmd = Command::new("unshare");
    cmd.args([
        "--pid",
        "--fork",
        "--mount-proc",
        BIN,
        "run",
        "-n",
        "1",
        "--json",
        "--",
    ])
    .args(["sh", "-c", script])
    .current_dir(dir.path())
    .stdin(Stdio::null())
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let started = Instant::now();
    let out = match cmd.spawn() {
        Ok(child) => common::finish(
            child,
            format!("unshare --pid --fork --mount-proc coldtrace run --json -- sh -c '{script}'"),
            started,
            Duration::from_secs(20),
        ),
        Err(e) => {
            eprintln!("NOTE: cannot run unshare ({e}); checked the subreaper case only");
            return;
        }
    };
    if out.code() != Some(0) && out.stderr.starts_with("unshare:") {
        eprintln!(
            "NOTE: unshare is not permitted here ({}); checked the subreaper case only",
            out.stderr.trim()
        );
        return;
    }
    out.expect_code(0);
    let r = out.json();
    assert_eq!(r["outcome"]["code"], 0, "{}", out.describe());
    assert!(
        u64_at(&r, "/orphans_reaped") >= 1,
        "PID 1 reaped the orphan{}",
        out.describe()
    );
    let _ = str_at(&r, "/schema");
}

// ---------------------------------------------------------------- coldtrace's own stderr

/// Runs coldtrace with its stderr on `/dev/full` (every write fails with ENOSPC).
fn with_full_stderr(dir: &TempDir, args: &[&str]) -> common::Output {
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .expect("/dev/full");
    let mut c = ct(dir.path(), args.iter().copied());
    c.cmd.stderr(Stdio::from(full));
    c.run_within(Duration::from_secs(30))
}

#[test]
fn a_full_stderr_changes_nothing_but_what_is_shown() {
    let dir = TempDir::new("fullerr");
    // A single run: the command's own exit code, not SIGABRT's 134.
    let out = with_full_stderr(&dir, &["run", "-n", "1", "--", "sh", "-c", "exit 3"]);
    assert_eq!(out.status.signal(), None, "{}", out.describe());
    out.expect_code(3);
    // A batch that prints a notice mid-batch (the command stopped itself) and a table: every
    // record and batch.json are written, the exit code means what it always means, and the
    // JSON still reaches stdout (-i=1: the timed-out runs are rejected and the batch goes on).
    let out = with_full_stderr(
        &dir,
        &[
            "run",
            "-i=1",
            "-n",
            "3",
            "-o",
            "d",
            "--json",
            "--timeout",
            "1",
            "--",
            "sh",
            "-c",
            "kill -STOP $$",
        ],
    );
    assert_eq!(out.status.signal(), None, "{}", out.describe());
    out.expect_code(1);
    assert_eq!(read_records(&dir.join("d")).len(), 3, "{}", out.describe());
    assert_eq!(read_batch(&dir.join("d"))["counts"]["rejected"], 3);
    assert_eq!(out.json()["counts"]["recorded"], 3, "{}", out.describe());
    // A usage error and a command that is not found keep their codes.
    with_full_stderr(&dir, &["run", "--bogus", "--", "true"]).expect_code(125);
    with_full_stderr(&dir, &["run", "--", "no-such-command-coldtrace"]).expect_code(127);
}

#[test]
fn a_closed_stderr_pipe_does_not_abort_a_batch() {
    // `coldtrace … 2>&1 | true`: the reader is gone before coldtrace writes its table.
    let dir = TempDir::new("closederr");
    let (reader, writer) = std::io::pipe().expect("pipe");
    drop(reader);
    let mut c = ct(
        dir.path(),
        ["run", "-n", "2", "-o", "d", "--", "sleep", "0.1"],
    );
    c.cmd.stderr(Stdio::from(writer));
    let out = c.run_within(Duration::from_secs(30));
    assert_eq!(out.status.signal(), None, "{}", out.describe());
    out.expect_code(0);
    assert_eq!(read_records(&dir.join("d")).len(), 2);
    assert_eq!(read_batch(&dir.join("d"))["complete"], true);
}
