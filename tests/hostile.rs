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
