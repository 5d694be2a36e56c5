//! Hostile conditions, round two (issue 17): coldtrace never panics, never hangs, never does
//! nothing silently, and writes nothing where it was not asked. Every case runs under a
//! deadline and checks the exit code, that a one-line error stays one escaped line, that no
//! process of the command survives (running or as a zombie), and that the records are whole.
#![forbid(unsafe_code)]

mod common;

use common::{ct, read_batch, read_records, write_file, TempDir, BIN};
use serde_json::Value;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

const DEADLINE: Duration = Duration::from_secs(30);

/// Exactly one line on stderr, no panic, no raw control character (escapes only).
fn assert_one_escaped_line(out: &common::Output) {
    assert_eq!(
        out.stderr_lines().len(),
        1,
        "expected exactly one line on stderr{}",
        out.describe()
    );
    assert_no_raw_controls(out);
}

/// No panic, no SIGABRT, and stderr holds no control character but the newlines ending lines.
fn assert_no_raw_controls(out: &common::Output) {
    assert!(!out.stderr.contains("panicked"), "{}", out.describe());
    assert_eq!(out.status.signal(), None, "{}", out.describe());
    let raw = out
        .stderr
        .chars()
        .find(|&c| (c.is_control() && c != '\n') || ('\u{202a}'..='\u{202e}').contains(&c));
    assert_eq!(
        raw,
        None,
        "a raw control character on stderr{}",
        out.describe()
    );
}

/// A short, unique command name: the kernel's `comm` of a process running it (15 bytes at most),
/// so that a survivor — running or a zombie — can be found in `/proc`.
fn unique_name(tag: &str) -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    format!(
        "h{}{}{n}",
        &tag[..tag.len().min(4)],
        std::process::id() % 100_000
    )
}

/// An executable `#!/bin/sh` script named [`unique_name`] in `dir`; returns its path.
fn script(dir: &TempDir, tag: &str, body: &str) -> std::path::PathBuf {
    let path = dir.join(unique_name(tag));
    write_file(&path, format!("#!/bin/sh\n{body}\n").as_bytes(), 0o755);
    path
}

/// No process runs `path` any more, not even as a zombie (waits up to 3 s for a kill to land).
fn assert_no_survivor(path: &Path) {
    let name = path.file_name().unwrap().to_string_lossy().into_owned();
    let needle = format!("({name})");
    let until = Instant::now() + Duration::from_secs(3);
    loop {
        let found: Vec<String> = std::fs::read_dir("/proc")
            .unwrap()
            .filter_map(|e| e.ok())
            .filter_map(|e| std::fs::read_to_string(e.path().join("stat")).ok())
            .filter(|stat| stat.contains(&needle))
            .collect();
        if found.is_empty() {
            return;
        }
        if Instant::now() > until {
            panic!("a process of {name} survived coldtrace: {found:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Every line of `runs.jsonl` is a whole record, numbered from 0; `batch.json`, if `finished`,
/// is a whole document. Returns the records.
fn assert_records_whole(dir: &Path, finished: bool) -> Vec<Value> {
    let records = read_records(dir);
    for (i, r) in records.iter().enumerate() {
        assert_eq!(r["schema"], "coldtrace.run/1", "{r}");
        assert_eq!(r["index"], i as u64, "{r}");
    }
    if finished {
        let doc = read_batch(dir);
        let schema = doc["schema"].as_str().unwrap_or_default();
        assert!(schema.starts_with("coldtrace.batch/"), "{doc:#}");
    }
    records
}

/// The names in `dir`, sorted.
fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

// ---------------------------------------------------------------- nothing where it was not asked

#[test]
fn an_empty_out_path_is_refused_before_anything_runs() {
    let dir = TempDir::new("emptyout");
    std::fs::write(dir.join("keep"), b"x").unwrap();
    let marker = script(&dir, "eo", "touch MARKER");
    let m = marker.to_str().unwrap();
    for args in [
        vec!["run", "-n", "2", "-o", "", "--", m],
        vec!["run", "--out=", "--", m],
        vec!["compare", "-n", "1", "-o", "", m, "true"],
    ] {
        let out = ct(dir.path(), &args).run_within(DEADLINE);
        out.expect_code(125);
        assert_one_escaped_line(&out);
        assert!(out.stderr.contains("-o/--out"), "{}", out.describe());
        let names = listing(dir.path());
        assert_eq!(
            names.len(),
            2,
            "nothing written: {names:?}{}",
            out.describe()
        );
        assert_no_survivor(&marker);
    }
}

/// `coldtrace ARGS` started from `dir/gone`, a directory removed just before the exec.
fn in_deleted_cwd(dir: &TempDir, args: &[&str]) -> common::Output {
    std::fs::create_dir(dir.join("gone")).unwrap();
    let mut cmd = Command::new("/bin/sh");
    cmd.args(["-c", "cd gone && rmdir ../gone && exec \"$@\"", "sh", BIN])
        .args(args)
        .current_dir(dir.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let shown = format!("cd gone && rmdir ../gone && coldtrace {}", args.join(" "));
    common::finish(cmd.spawn().unwrap(), shown, Instant::now(), DEADLINE)
}

#[test]
fn a_deleted_working_directory_is_recorded_as_null() {
    let dir = TempDir::new("gonecwd");
    let out = in_deleted_cwd(&dir, &["run", "--json", "--output", "null", "--", "true"]);
    out.expect_code(0);
    assert_eq!(out.json()["cwd"], Value::Null, "{}", out.describe());
    let out = in_deleted_cwd(&dir, &["run", "-n", "2", "--json", "-q", "--", "true"]);
    out.expect_code(0);
    assert_eq!(out.json()["counts"]["counted"], 2, "{}", out.describe());
}

#[test]
fn a_not_found_command_of_a_comparison_leaves_no_directory() {
    let dir = TempDir::new("cmpnf");
    let marker = script(&dir, "cn", "touch MARKER");
    write_file(&dir.join("plain"), b"#!/bin/sh\n", 0o644);
    for (second, code) in [("no-such-command-coldtrace", 127), ("./plain", 126)] {
        let out = ct(
            dir.path(),
            [
                "compare",
                "-n",
                "2",
                "-o",
                "cmp",
                marker.to_str().unwrap(),
                second,
            ],
        )
        .run_within(DEADLINE);
        out.expect_code(code);
        assert_one_escaped_line(&out);
        assert!(
            !dir.join("cmp").exists(),
            "{:?}{}",
            listing(dir.path()),
            out.describe()
        );
        assert!(!dir.join("MARKER").exists());
    }
}

// ---------------------------------------------------------------- a comparison is a batch

#[test]
fn compare_with_one_run_rejects_a_failing_command_and_exits_1() {
    let dir = TempDir::new("cmpn1");
    let failing = script(&dir, "c1", "exit 3");
    let killed = script(&dir, "c9", "kill -9 $$");
    for bad in [&failing, &killed] {
        let out = ct(
            dir.path(),
            [
                "compare",
                "-n",
                "1",
                "-o",
                "cmp",
                "--json",
                bad.to_str().unwrap(),
                "true",
            ],
        )
        .run_within(DEADLINE);
        out.expect_code(1);
        let doc = out.json();
        assert_eq!(doc["commands"][0]["counts"]["counted"], 0, "{doc:#}");
        assert_eq!(doc["commands"][0]["counts"]["rejected"], 1, "{doc:#}");
        assert_eq!(doc["commands"][0]["exit_code"], 1, "{doc:#}");
        assert_eq!(doc["commands"][1]["counts"]["counted"], 1, "{doc:#}");
        let records = assert_records_whole(&dir.join("cmp/commands/00"), true);
        assert_eq!(records[0]["counted"], false);
        assert_no_raw_controls(&out);
        assert_no_survivor(bad);
        std::fs::remove_dir_all(dir.join("cmp")).unwrap();
    }
}

// ---------------------------------------------------------------- what is echoed stays one line

#[test]
fn control_characters_in_names_and_paths_are_escaped_in_errors() {
    let dir = TempDir::new("ctrl");
    write_file(&dir.join("not\u{1b}[2Jexec"), b"#!/bin/sh\n", 0o644);
    let cases: Vec<(Vec<&str>, i32)> = vec![
        (vec!["run", "--", "no\nsuch\u{1b}[31mcommand"], 127),
        (vec!["run", "--", "./not\u{1b}[2Jexec"], 126),
        (
            vec![
                "run",
                "-n",
                "2",
                "-o",
                "/proc/bad\n\u{1b}]0;x\u{7}/d",
                "--",
                "true",
            ],
            125,
        ),
        (
            vec![
                "run",
                "-n",
                "2",
                "--stdin",
                "no\u{202e}such\nfile",
                "--",
                "true",
            ],
            125,
        ),
        (
            vec!["run", "--evict", "/no\u{1b}[2Jsuch", "--", "true"],
            125,
        ),
        (vec!["report", "no\nsuch\u{1b}[1mdir"], 125),
    ];
    for (args, code) in cases {
        let out = ct(dir.path(), &args).run_within(DEADLINE);
        out.expect_code(code);
        assert_one_escaped_line(&out);
        assert!(
            out.stderr.contains("\\u{1b}") || out.stderr.contains("\\n"),
            "{}",
            out.describe()
        );
    }
    // A file in the out directory that cannot be created names the path, escaped.
    std::fs::create_dir(dir.join("o\u{1b}[2J")).unwrap();
    std::os::unix::fs::symlink("/nonexistent", dir.join("o\u{1b}[2J/runs.jsonl")).unwrap();
    let out = ct(
        dir.path(),
        ["run", "-n", "2", "-o", "o\u{1b}[2J", "--", "true"],
    );
    let out = out.run_within(DEADLINE);
    out.expect_code(125);
    assert_one_escaped_line(&out);
}

#[test]
fn a_label_and_the_command_s_stderr_reach_the_table_escaped() {
    let dir = TempDir::new("ctrltab");
    let noisy = script(&dir, "nz", "printf 'a\\033[2Jb\\r\\n' >&2; exit 1");
    let out = ct(
        dir.path(),
        [
            "run",
            "-n",
            "2",
            "--label",
            "lab\u{1b}[31mel\u{202e}\nx",
            "--",
            noisy.to_str().unwrap(),
        ],
    )
    .run_within(DEADLINE);
    out.expect_code(1);
    assert_no_raw_controls(&out);
    assert!(out.stderr.contains("a\\u{1b}[2Jb"), "{}", out.describe());
    assert!(
        out.stderr.contains("lab\\u{1b}[31mel\\u{202e}\\nx"),
        "{}",
        out.describe()
    );
    assert_no_survivor(&noisy);
}

#[test]
fn a_symlink_loop_given_to_report_is_called_a_loop() {
    let dir = TempDir::new("loop");
    std::os::unix::fs::symlink("loop", dir.join("loop")).unwrap();
    let out = ct(dir.path(), ["report", "loop"]).run_within(DEADLINE);
    out.expect_code(125);
    assert_one_escaped_line(&out);
    assert!(out.stderr.contains("ELOOP"), "{}", out.describe());
    assert!(!out.stderr.contains("writes through"), "{}", out.describe());
    let out = ct(dir.path(), ["report", ""]).run_within(DEADLINE);
    out.expect_code(125);
    assert_one_escaped_line(&out);
}

// ---------------------------------------------------------------- opening what coldtrace did not create

fn mkfifo(path: &Path) {
    rustix::fs::mknodat(
        rustix::fs::CWD,
        path,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
        0,
    )
    .expect("mkfifo");
}

/// Starts coldtrace, sends `signal` after `after`, and collects it under the deadline.
fn signalled_after(
    c: common::Ct,
    after: Duration,
    signal: rustix::process::Signal,
) -> common::Output {
    let shown = c.shown();
    let mut cmd = c.cmd;
    let started = Instant::now();
    let child = cmd.spawn().expect("spawn coldtrace");
    let pid = rustix::process::Pid::from_raw(child.id() as i32).unwrap();
    std::thread::sleep(after);
    rustix::process::kill_process(pid, signal).expect("signal coldtrace");
    common::finish(child, shown, started, DEADLINE)
}

#[test]
fn a_fifo_as_stdin_waits_for_its_writer_and_signals_still_stop_coldtrace() {
    use rustix::process::Signal as S;
    let dir = TempDir::new("fifostdin");
    mkfifo(&dir.join("f"));
    let reader = script(&dir, "fi", "cat");
    let r = reader.to_str().unwrap();
    for (signal, code) in [(S::INT, 130), (S::TERM, 143)] {
        let _ = std::fs::remove_dir_all(dir.join("d"));
        let c = ct(dir.path(), ["run", "-n2", "-od", "--stdin=f", "--", r]);
        let out = signalled_after(c, Duration::from_millis(500), signal);
        out.expect_code(code);
        assert!(out.elapsed < Duration::from_secs(5), "{}", out.describe());
        assert_no_raw_controls(&out);
        let records = assert_records_whole(&dir.join("d"), true);
        assert!(records.is_empty(), "no run was started: {records:?}");
        assert_eq!(read_batch(&dir.join("d"))["complete"], false);
        assert!(
            !dir.join("d/runs").exists(),
            "no artifacts of a run that never started"
        );
        assert_no_survivor(&reader);
    }
    // With a writer that comes late, the command reads what it wrote (it did not get an
    // early EOF from a FIFO opened without blocking).
    let fifo = dir.join("f");
    let writer = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(400));
        std::fs::write(fifo, b"late words\n").unwrap();
    });
    let _ = std::fs::remove_dir_all(dir.join("d"));
    let out = ct(dir.path(), ["run", "-od", "--stdin=f", "--", r]).run_within(DEADLINE);
    writer.join().unwrap();
    out.expect_code(0);
    assert_eq!(
        std::fs::read(dir.join("d/runs/000/stdout")).unwrap(),
        b"late words\n"
    );
    assert_records_whole(&dir.join("d"), true);
}

#[test]
fn stdin_must_be_a_file_a_fifo_or_a_device_never_a_directory() {
    let dir = TempDir::new("stdindir");
    let marker = script(&dir, "sd", "touch MARKER");
    for args in [
        vec!["run", "--stdin", "/tmp", "--", marker.to_str().unwrap()],
        vec![
            "run",
            "-n",
            "3",
            "--stdin",
            ".",
            "--",
            marker.to_str().unwrap(),
        ],
        vec!["compare", "--stdin", "/", marker.to_str().unwrap(), "true"],
    ] {
        let out = ct(dir.path(), &args).run_within(DEADLINE);
        out.expect_code(125);
        assert_one_escaped_line(&out);
        assert!(
            out.stderr.contains("it is a directory"),
            "{}",
            out.describe()
        );
        assert!(!dir.join("MARKER").exists(), "{}", out.describe());
    }
    // A character device is a legitimate stdin (and reaches the child blocking as usual).
    let out = ct(
        dir.path(),
        [
            "run",
            "--json",
            "--stdin",
            "/dev/zero",
            "--output",
            "null",
            "--",
            "head",
            "-c",
            "3",
        ],
    )
    .run_within(DEADLINE);
    out.expect_code(0);
    assert_eq!(out.json()["outcome"]["code"], 0);
}

/// A finished batch of two runs in `dir/name`.
fn a_batch(dir: &TempDir, name: &str) -> std::path::PathBuf {
    let out = ct(
        dir.path(),
        ["run", "-q", "-n", "2", "-o", name, "--", "true"],
    )
    .run_within(DEADLINE);
    out.expect_code(0);
    dir.join(name)
}

#[test]
fn report_refuses_fifos_devices_and_directories_planted_in_a_batch() {
    let dir = TempDir::new("reportplant");
    let batch = a_batch(&dir, "b");
    for name in ["batch.json", "runs.jsonl"] {
        let real = batch.join(name);
        let saved = dir.join(format!("saved-{name}"));
        std::fs::rename(&real, &saved).unwrap();
        for (plant, what) in [
            ("fifo", "a FIFO"),
            ("zero", "a character device"),
            ("dir", "a directory"),
        ] {
            match plant {
                "fifo" => mkfifo(&real),
                "zero" => std::os::unix::fs::symlink("/dev/zero", &real).unwrap(),
                _ => std::fs::create_dir(&real).unwrap(),
            }
            let out = ct(dir.path(), ["report", "b"]).run_within(Duration::from_secs(10));
            out.expect_code(125);
            assert_one_escaped_line(&out);
            assert!(
                out.stderr.contains(what) && out.stderr.contains(name),
                "{}",
                out.describe()
            );
            if plant == "dir" {
                std::fs::remove_dir(&real).unwrap();
            } else {
                std::fs::remove_file(&real).unwrap();
            }
        }
        std::fs::rename(&saved, &real).unwrap();
    }
    ct(dir.path(), ["report", "b"])
        .run_within(DEADLINE)
        .expect_code(0);
}

#[test]
fn report_reads_within_bounds_whatever_a_file_claims() {
    let dir = TempDir::new("reportbound");
    let batch = a_batch(&dir, "b");
    // A batch.json of 1 GiB (sparse): left unread, with a note; the records still count.
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(batch.join("batch.json"))
        .unwrap();
    f.set_len(1 << 30).unwrap();
    let out = ct(dir.path(), ["report", "--json", "b"]).run_within(Duration::from_secs(10));
    out.expect_code(0);
    let rows = out.json();
    assert_eq!(rows[0]["counted"], 2, "{rows:#}");
    let notes = rows[0]["notes"].to_string();
    assert!(notes.contains("larger than 64 MiB"), "{notes}");
    // A runs.jsonl whose first line never ends: an error at the bound, not an endless read.
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(batch.join("runs.jsonl"))
        .unwrap();
    f.set_len(0).unwrap();
    f.set_len(1 << 30).unwrap();
    let out = ct(dir.path(), ["report", "b"]).run_within(Duration::from_secs(20));
    out.expect_code(125);
    assert_one_escaped_line(&out);
    assert!(
        out.stderr.contains("line 1: longer than 64 MiB"),
        "{}",
        out.describe()
    );
}

#[test]
fn a_tree_file_swapped_for_a_fifo_after_the_walk_is_neither_opened_blocking_nor_counted() {
    use coldtrace::measure::cache::FileSet;
    let dir = TempDir::new("swapfifo");
    std::fs::create_dir(dir.join("tree")).unwrap();
    std::fs::write(dir.join("tree/a"), vec![7u8; 8192]).unwrap();
    std::fs::write(dir.join("tree/b"), vec![7u8; 8192]).unwrap();
    let set = FileSet::collect(&[dir.join("tree")]).unwrap();
    assert_eq!(set.len(), 2);
    std::fs::remove_file(dir.join("tree/b")).unwrap();
    mkfifo(&dir.join("tree/b"));
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let residency = set.residency();
        let evicted = set.evict();
        let _ = tx.send((residency, evicted));
    });
    let (residency, evicted) = rx
        .recv_timeout(Duration::from_secs(10))
        .expect("residency and eviction return (a FIFO must not block them)");
    assert_eq!(residency.unknown_files, 1, "{residency:?}");
    assert_eq!(residency.resident_ratio, None, "{residency:?}");
    assert_eq!((evicted.files, evicted.failed), (1, 1), "{evicted:?}");
    let why = evicted.first_error.unwrap_or_default();
    assert!(why.contains("FIFO"), "{why}");
    // Keep `dir` alive until the probe thread is done with its paths.
    drop(dir);
}
