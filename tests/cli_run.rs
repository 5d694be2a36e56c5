//! `coldtrace run` from the outside: single runs, batches, records, artifacts, exit codes,
//! bad input, failures, timeouts and interruption. Each test works in its own temp directory.
#![forbid(unsafe_code)]

mod common;

use common::{ct, read_batch, read_records, write_file, TempDir};
use serde_json::Value;
use std::time::{Duration, Instant};

const RUSAGE_FIELDS: [&str; 9] = [
    "user_us",
    "sys_us",
    "max_rss_kib",
    "minor_faults",
    "major_faults",
    "block_in",
    "block_out",
    "voluntary_switches",
    "involuntary_switches",
];

/// A shell snippet that counts its own runs in `./COUNT` (the batch's cwd) and prints the run
/// number (1-based) on stdout and on stderr.
const COUNTING: &str = "n=$(cat COUNT 2>/dev/null || echo 0); n=$((n+1)); echo $n > COUNT; \
                        echo \"out $n\"; echo \"err $n\" >&2";

fn u64_at(v: &Value, pointer: &str) -> u64 {
    v.pointer(pointer)
        .and_then(Value::as_u64)
        .unwrap_or_else(|| panic!("{pointer} is not an unsigned integer in {v:#}"))
}

fn str_at<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_else(|| panic!("{pointer} is not a string in {v:#}"))
}

#[test]
fn single_run_json_record_has_the_documented_fields() {
    let dir = TempDir::new("single");
    let out = ct(
        dir.path(),
        ["run", "-n", "1", "--json", "--", "sh", "-c", "exit 0"],
    )
    .run();
    out.expect_code(0);
    let r = out.json();
    let ctx = out.describe();
    assert_eq!(r["schema"], coldtrace::record::RUN_SCHEMA, "{ctx}");
    assert_eq!(r["index"], 0, "{ctx}");
    assert_eq!(r["role"], "first", "{ctx}");
    assert_eq!(r["counted"], true, "{ctx}");
    assert_eq!(
        r["outcome"],
        serde_json::json!({"kind": "exited", "code": 0}),
        "{ctx}"
    );
    assert!(u64_at(&r, "/wall_ns") > 0, "{ctx}");
    for field in RUSAGE_FIELDS {
        u64_at(&r, &format!("/rusage/{field}"));
    }
    assert_eq!(
        r["rusage"].as_object().map(|m| m.len()),
        Some(RUSAGE_FIELDS.len()),
        "rusage has exactly the documented fields{ctx}"
    );
    assert!(u64_at(&r, "/runner/vm_hwm_kib") > 0, "{ctx}");
    let started = str_at(&r, "/started_at");
    assert!(
        common::is_rfc3339_utc(started),
        "started_at {started:?} is not RFC 3339 UTC{ctx}"
    );
    assert_eq!(
        r["argv"],
        serde_json::json!(["sh", "-c", "exit 0"]),
        "{ctx}"
    );
    let cwd = std::fs::canonicalize(dir.path()).unwrap();
    assert_eq!(str_at(&r, "/cwd"), cwd.to_str().unwrap(), "{ctx}");
    assert!(r["failure_reason"].is_null(), "{ctx}");
    // Stand-in modules: present, contents not asserted.
    for field in ["child_io", "sched", "cache", "system_delta", "program"] {
        assert!(r.get(field).is_some(), "field {field} missing{ctx}");
    }
}

#[test]
fn json_single_run_prints_exactly_one_json_object() {
    let dir = TempDir::new("json1");
    let out = ct(dir.path(), ["run", "-n", "1", "--json", "--", "true"]).run();
    out.expect_code(0);
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(lines.len(), 1, "one line on stdout{}", out.describe());
    let v: Value = serde_json::from_str(lines[0]).expect("stdout line is JSON");
    assert!(v.is_object(), "{}", out.describe());
    assert_eq!(
        v["schema"],
        coldtrace::record::RUN_SCHEMA,
        "{}",
        out.describe()
    );
}

#[test]
fn single_run_exit_codes_follow_the_command() {
    let dir = TempDir::new("codes");
    for code in [0, 3, 255] {
        let script = format!("exit {code}");
        let out = ct(
            dir.path(),
            ["run", "-n", "1", "--json", "--", "sh", "-c", &script],
        )
        .run();
        out.expect_code(code);
        let r = out.json();
        assert_eq!(r["outcome"]["kind"], "exited", "{}", out.describe());
        assert_eq!(r["outcome"]["code"], code, "{}", out.describe());
    }
}

#[test]
fn single_run_killed_by_a_signal_exits_128_plus_n() {
    let dir = TempDir::new("sig");
    let out = ct(
        dir.path(),
        [
            "run",
            "-n",
            "1",
            "--json",
            "--",
            "sh",
            "-c",
            "kill -TERM $$",
        ],
    )
    .run();
    out.expect_code(143);
    let r = out.json();
    let ctx = out.describe();
    assert_eq!(r["outcome"]["kind"], "signaled", "{ctx}");
    assert_eq!(r["outcome"]["signal"], 15, "{ctx}");
    assert_eq!(r["outcome"]["signal_name"], "SIGTERM", "{ctx}");
}

#[test]
fn not_executable_is_126_and_not_found_is_127() {
    let dir = TempDir::new("126");
    write_file(&dir.join("noexec"), b"#!/bin/sh\ntouch MARKER\n", 0o644);
    std::fs::create_dir(dir.join("adir")).unwrap();
    for (program, code) in [
        ("./noexec", 126),
        ("./adir", 126),
        ("./does-not-exist", 127),
        ("no-such-command-coldtrace-test", 127),
    ] {
        let out = ct(dir.path(), ["run", "-n", "1", "--", program]).run();
        out.expect_code(code);
        let name = program.trim_start_matches("./");
        assert!(
            out.stderr.contains(name),
            "the error names the program{}",
            out.describe()
        );
        assert!(!dir.join("MARKER").exists(), "{}", out.describe());
    }
}

#[test]
fn batch_of_five_writes_records_artifacts_and_summary() {
    let dir = TempDir::new("batch5");
    let out = ct(
        dir.path(),
        [
            "run",
            "-n",
            "5",
            "-o",
            "out",
            "--keep-output",
            "--",
            "sh",
            "-c",
            COUNTING,
        ],
    )
    .run();
    out.expect_code(0);
    let ctx = out.describe();
    let batch_dir = dir.join("out");
    let records = read_records(&batch_dir);
    assert_eq!(records.len(), 5, "{ctx}");
    for (i, r) in records.iter().enumerate() {
        assert_eq!(r["schema"], coldtrace::record::RUN_SCHEMA, "{ctx}");
        assert_eq!(r["index"], i, "{ctx}");
        assert_eq!(r["role"], if i == 0 { "first" } else { "warm" }, "{ctx}");
        assert_eq!(r["counted"], true, "{ctx}");
        assert_eq!(r["outcome"]["kind"], "exited", "{ctx}");
        let rel_out = format!("runs/{i:03}/stdout");
        let rel_err = format!("runs/{i:03}/stderr");
        assert_eq!(str_at(r, "/artifacts/stdout"), rel_out, "{ctx}");
        assert_eq!(str_at(r, "/artifacts/stderr"), rel_err, "{ctx}");
        let stdout = std::fs::read_to_string(batch_dir.join(&rel_out)).unwrap();
        let stderr = std::fs::read_to_string(batch_dir.join(&rel_err)).unwrap();
        assert_eq!(stdout, format!("out {}\n", i + 1), "{rel_out}{ctx}");
        assert_eq!(stderr, format!("err {}\n", i + 1), "{rel_err}{ctx}");
    }
    let b = read_batch(&batch_dir);
    assert_eq!(b["schema"], coldtrace::record::BATCH_SCHEMA, "{ctx}");
    assert_eq!(b["complete"], true, "{ctx}");
    assert_eq!(
        b["counts"],
        serde_json::json!({"recorded": 5, "warmup": 0, "counted": 5, "rejected": 0,
                           "failed_counted": 0}),
        "{ctx}"
    );
    let wall = &b["summary"]["wall_ns"];
    for (part, n) in [("first", 1), ("warm", 4), ("all", 5)] {
        let s = &wall[part];
        assert_eq!(s["n"], n, "summary.wall_ns.{part}: {s}");
        for key in ["min", "max", "mean", "median", "stddev"] {
            assert!(
                s.get(key).is_some(),
                "summary.wall_ns.{part}.{key} missing: {s}"
            );
        }
        let (min, max, med) = (
            s["min"].as_f64().unwrap(),
            s["max"].as_f64().unwrap(),
            s["median"].as_f64().unwrap(),
        );
        assert!(0.0 < min && min <= med && med <= max, "{part}: {s}");
    }
    assert!(wall["all"]["stddev"].is_number(), "{wall}");
    let ratio = wall["first_to_warm_median"].as_f64().expect("ratio number");
    assert!(ratio > 0.0, "{wall}");
    // batch.json agrees with the records.
    let first_wall = records[0]["wall_ns"].as_f64().unwrap();
    assert_eq!(wall["first"]["median"].as_f64(), Some(first_wall), "{wall}");
}

#[test]
fn warmup_runs_are_recorded_but_never_counted() {
    let dir = TempDir::new("warmup");
    let out = ct(
        dir.path(),
        ["run", "-n", "3", "--warmup", "2", "-o", "out", "--", "true"],
    )
    .run();
    out.expect_code(0);
    let ctx = out.describe();
    let records = read_records(&dir.join("out"));
    let roles: Vec<&str> = records
        .iter()
        .map(|r| r["role"].as_str().unwrap())
        .collect();
    assert_eq!(
        roles,
        ["warmup", "warmup", "first", "warm", "warm"],
        "{ctx}"
    );
    let counted: Vec<bool> = records
        .iter()
        .map(|r| r["counted"].as_bool().unwrap())
        .collect();
    assert_eq!(counted, [false, false, true, true, true], "{ctx}");
    let b = read_batch(&dir.join("out"));
    assert_eq!(b["counts"]["recorded"], 5, "{ctx}");
    assert_eq!(b["counts"]["warmup"], 2, "{ctx}");
    assert_eq!(b["counts"]["counted"], 3, "{ctx}");
    assert_eq!(b["summary"]["wall_ns"]["all"]["n"], 3, "{ctx}");
}

#[test]
fn bad_input_is_one_line_exit_125_and_spawns_nothing() {
    let dir = TempDir::new("bad");
    let cmd = ["--", "sh", "-c", "touch MARKER"];
    let with_cmd = |flags: &[&str]| -> Vec<String> {
        let mut v = vec!["run".to_string()];
        v.extend(flags.iter().map(|s| s.to_string()));
        v.extend(cmd.iter().map(|s| s.to_string()));
        v
    };
    let cases: Vec<Vec<String>> = vec![
        with_cmd(&["-n", "0"]),
        with_cmd(&["-n", "abc"]),
        with_cmd(&["-n", "-1"]),
        with_cmd(&["-n", "99999999999999999999"]),
        with_cmd(&["--timeout", "-1"]),
        with_cmd(&["--bogus"]),
        with_cmd(&["-n"]),
        with_cmd(&["--timeout"]),
        with_cmd(&["-o", "out", "--output"]),
        vec!["run".into(), "--".into()],
        vec!["run".into(), "-n".into(), "2".into(), "--".into()],
    ];
    for args in cases {
        let out = ct(dir.path(), &args).run();
        out.expect_code(125);
        assert_eq!(
            out.stderr_lines().len(),
            1,
            "exactly one stderr line{}",
            out.describe()
        );
        assert!(out.stdout.is_empty(), "{}", out.describe());
        assert!(
            !dir.join("MARKER").exists(),
            "the command was run{}",
            out.describe()
        );
        assert!(
            !dir.join("out").exists(),
            "a batch dir was created{}",
            out.describe()
        );
    }
}

#[test]
fn existing_non_empty_batch_dir_is_refused_and_left_alone() {
    let dir = TempDir::new("exists");
    let batch_dir = dir.join("out");
    std::fs::create_dir(&batch_dir).unwrap();
    std::fs::write(batch_dir.join("runs.jsonl"), b"old records\n").unwrap();
    std::fs::write(batch_dir.join("notes"), b"keep me").unwrap();
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
    assert_eq!(out.stderr_lines().len(), 1, "{}", out.describe());
    assert!(!dir.join("MARKER").exists(), "{}", out.describe());
    assert_eq!(
        std::fs::read(batch_dir.join("runs.jsonl")).unwrap(),
        b"old records\n"
    );
    assert_eq!(std::fs::read(batch_dir.join("notes")).unwrap(), b"keep me");
    let mut names: Vec<_> = std::fs::read_dir(&batch_dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    names.sort();
    assert_eq!(names, ["notes", "runs.jsonl"], "{}", out.describe());
}

/// Run 3 of 5 fails with a Python-like error on stderr.
const THIRD_FAILS: &str = "n=$(cat COUNT 2>/dev/null || echo 0); n=$((n+1)); echo $n > COUNT; \
    if [ $n = 3 ]; then echo 'Traceback (most recent call last):' >&2; \
    echo \"ModuleNotFoundError: No module named 'x'\" >&2; exit 1; fi";

fn check_failed_batch(dir: &TempDir, extra: &[&str], ignore_failure: bool) {
    let mut args = vec!["run", "-n", "5"];
    args.extend_from_slice(extra);
    if ignore_failure {
        args.push("--ignore-failure");
    }
    args.extend_from_slice(&["--", "sh", "-c", THIRD_FAILS]);
    let out = ct(dir.path(), &args).run();
    let ctx = out.describe();
    out.expect_code(if ignore_failure { 0 } else { 1 });
    let batch_dir = dir.join("out");
    if batch_dir.exists() {
        let records = read_records(&batch_dir);
        assert_eq!(records.len(), 5, "{ctx}");
        let bad = &records[2];
        assert_eq!(bad["counted"], ignore_failure, "{ctx}");
        assert!(
            str_at(bad, "/failure_reason").contains('1'),
            "failure_reason names the exit code: {bad}"
        );
        for (i, r) in records.iter().enumerate().filter(|(i, _)| *i != 2) {
            assert_eq!(r["counted"], true, "run {i}{ctx}");
            assert!(r["failure_reason"].is_null(), "run {i}{ctx}");
        }
    }
    let b = if batch_dir.exists() {
        read_batch(&batch_dir)
    } else {
        out.json()
    };
    let counts = &b["counts"];
    if ignore_failure {
        assert_eq!(counts["counted"], 5, "{counts}{ctx}");
        assert_eq!(counts["rejected"], 0, "{counts}{ctx}");
        assert_eq!(counts["failed_counted"], 1, "{counts}{ctx}");
    } else {
        assert_eq!(counts["counted"], 4, "{counts}{ctx}");
        assert_eq!(counts["rejected"], 1, "{counts}{ctx}");
        assert_eq!(counts["failed_counted"], 0, "{counts}{ctx}");
        // The title says every run made, not the 4 counted as if -n were 4.
        let shown = format!("{}{}", out.stdout, out.stderr);
        assert!(
            shown.contains("coldtrace: 5 runs (1 rejected) of sh -c"),
            "{ctx}"
        );
    }
    let failed = b["failed_runs"].as_array().expect("failed_runs array");
    assert_eq!(failed.len(), 1, "{b:#}");
    assert_eq!(failed[0]["index"], 2, "{b:#}");
    assert_eq!(failed[0]["counted"], ignore_failure, "{b:#}");
    let tail = failed[0]["stderr_tail"].as_str().unwrap_or_else(|| {
        panic!(
            "failed_runs[0].stderr_tail should hold the child's stderr, got {}{ctx}",
            failed[0]["stderr_tail"]
        )
    });
    assert!(
        tail.contains("ModuleNotFoundError: No module named 'x'"),
        "stderr_tail {tail:?}{ctx}"
    );
}

#[test]
fn failed_run_with_out_dir_is_rejected_with_its_stderr_tail() {
    let dir = TempDir::new("fail-out");
    check_failed_batch(&dir, &["-o", "out"], false);
}

#[test]
fn failed_run_with_out_dir_and_ignore_failure_is_counted_and_marked() {
    let dir = TempDir::new("fail-out-ign");
    check_failed_batch(&dir, &["-o", "out"], true);
}

#[test]
fn failed_run_without_out_dir_is_rejected_with_its_stderr_tail() {
    let dir = TempDir::new("fail-null");
    check_failed_batch(&dir, &["--json"], false);
}

#[test]
fn timeout_stops_a_sleeping_command() {
    let dir = TempDir::new("timeout");
    let started = Instant::now();
    let out = ct(
        dir.path(),
        [
            "run",
            "-n",
            "1",
            "--json",
            "--timeout",
            "0.3",
            "--",
            "sleep",
            "60",
        ],
    )
    .run_within(Duration::from_secs(20));
    let ctx = out.describe();
    assert!(started.elapsed() < Duration::from_secs(10), "{ctx}");
    let r = out.json();
    assert_eq!(r["outcome"]["kind"], "timed_out", "{ctx}");
    assert_eq!(r["outcome"]["sent_signal"], "SIGTERM", "{ctx}");
    assert_eq!(r["outcome"]["signal_name"], "SIGTERM", "{ctx}");
    out.expect_code(143);
    assert!(u64_at(&r, "/wall_ns") >= 300_000_000, "{ctx}");
}

#[test]
fn failing_prepare_stops_the_batch() {
    let dir = TempDir::new("prepare");
    let out = ct(
        dir.path(),
        [
            "run",
            "-n",
            "3",
            "-o",
            "out",
            "--prepare",
            "false",
            "--",
            "sh",
            "-c",
            "touch MARKER",
        ],
    )
    .run();
    out.expect_code(1);
    let ctx = out.describe();
    assert!(!dir.join("MARKER").exists(), "{ctx}");
    assert!(out.shown().contains("--prepare"), "a clear message{ctx}");
    let b = read_batch(&dir.join("out"));
    assert_eq!(b["complete"], false, "{ctx}");
    assert!(
        str_at(&b, "/stopped_reason").contains("--prepare failed"),
        "{b:#}"
    );
    assert_eq!(b["counts"]["recorded"], 0, "{ctx}");
    assert!(read_records(&dir.join("out")).is_empty(), "{ctx}");
}

#[test]
fn sigint_to_the_process_group_interrupts_the_batch() {
    use std::os::unix::process::CommandExt;
    let dir = TempDir::new("sigint");
    // The first run ends by itself; each later one sleeps until the signal comes.
    let command = "test -e ran && exec sleep 30; : > ran";
    let mut c = ct(
        dir.path(),
        ["run", "-n", "5", "-o", "out", "--", "sh", "-c", command],
    );
    c.cmd.process_group(0);
    let shown = c.shown();
    let started = Instant::now();
    let child = c.cmd.spawn().expect("spawn coldtrace");
    let pgid = rustix::process::Pid::from_raw(child.id() as i32).expect("pid");
    // The signal goes to the group once the second run sleeps in it: not between two runs,
    // not before the first, however slowly a loaded machine gets there.
    let until = Instant::now() + Duration::from_secs(20);
    while !sleeping_in_group(child.id() as i32, &["sleep", "30"]) {
        assert!(
            Instant::now() < until,
            "the second run never slept: {shown}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    rustix::process::kill_process_group(pgid, rustix::process::Signal::INT)
        .expect("kill -INT -PGID");
    let out = common::finish(child, shown, started, Duration::from_secs(20));
    let ctx = out.describe();
    out.expect_code(130);
    let batch_dir = dir.join("out");
    let b = read_batch(&batch_dir);
    assert_eq!(b["complete"], false, "{ctx}");
    assert_eq!(b["interrupted_by"], "SIGINT", "{ctx}");
    let records = read_records(&batch_dir);
    assert_eq!(records.len(), 2, "{ctx}");
    let last = records.last().unwrap();
    assert_eq!(last["outcome"]["kind"], "signaled", "{last}");
    assert_eq!(last["outcome"]["signal_name"], "SIGINT", "{last}");
    assert_eq!(last["interrupted_by"], "SIGINT", "{last}");
    for r in &records[..records.len() - 1] {
        assert_eq!(r["outcome"]["kind"], "exited", "{r}");
    }
}

/// Whether a process of process group `pgid` runs exactly `argv` (it has exec'd) and sleeps
/// (state `S`).
fn sleeping_in_group(pgid: i32, argv: &[&str]) -> bool {
    common::processes_running(argv).iter().any(|p| {
        let stat = std::fs::read_to_string(p.join("stat")).unwrap_or_default();
        // After the `(comm)`: state, ppid, pgrp.
        let fields: Vec<&str> = stat
            .rsplit_once(") ")
            .map_or(vec![], |(_, rest)| rest.split(' ').take(3).collect());
        fields.first() == Some(&"S") && fields.get(2) == Some(&pgid.to_string().as_str())
    })
}

#[test]
fn sigterm_to_coldtrace_alone_is_forwarded_to_the_child() {
    use std::os::unix::process::CommandExt;
    let dir = TempDir::new("sigterm");
    let c = ct(
        dir.path(),
        ["run", "-n", "3", "-o", "out", "--", "sleep", "5"],
    );
    let shown = c.shown();
    let mut cmd = c.cmd;
    // A group of its own, where its command is found.
    cmd.process_group(0);
    let child = cmd.spawn().expect("spawn coldtrace");
    let pid = rustix::process::Pid::from_raw(child.id() as i32).expect("pid");
    // Signalled once the first run's command sleeps: not before coldtrace has taken SIGTERM
    // over, not between two runs, however slowly a loaded machine gets there.
    let until = Instant::now() + Duration::from_secs(20);
    while !sleeping_in_group(child.id() as i32, &["sleep", "5"]) {
        assert!(Instant::now() < until, "the first run never slept: {shown}");
        std::thread::sleep(Duration::from_millis(10));
    }
    // Only coldtrace gets it (not its process group): the child can only see it if forwarded.
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).expect("kill -TERM PID");
    // Timed from the signal: the batch's start on a loaded machine is not what is checked.
    let started = Instant::now();
    let out = common::finish(child, shown, started, Duration::from_secs(20));
    let ctx = out.describe();
    out.expect_code(143);
    assert!(
        out.elapsed < Duration::from_secs(4),
        "the child was not left to sleep{ctx}"
    );
    let records = read_records(&dir.join("out"));
    assert_eq!(records.len(), 1, "{ctx}");
    assert_eq!(
        records[0]["outcome"]["signal_name"], "SIGTERM",
        "{}",
        records[0]
    );
    assert_eq!(records[0]["interrupted_by"], "SIGTERM");
    let b = read_batch(&dir.join("out"));
    assert_eq!(b["interrupted_by"], "SIGTERM", "{ctx}");
}

#[test]
fn quiet_successful_run_prints_nothing_on_stderr() {
    let dir = TempDir::new("quiet");
    for args in [
        &["run", "-n", "1", "-q", "--", "true"][..],
        &["run", "--quiet", "-n", "3", "--", "true"][..],
        &["run", "-q", "-n", "2", "-o", "out", "--", "true"][..],
    ] {
        let out = ct(dir.path(), args).run();
        out.expect_code(0);
        assert_eq!(out.stderr, "", "{}", out.describe());
    }
}

#[test]
fn a_batch_names_where_the_output_goes_and_shows_none_of_it() {
    let dir = TempDir::new("discard");
    let out = ct(
        dir.path(),
        // The output text differs from the argv text, which the table shows.
        [
            "run",
            "-n",
            "4",
            "--",
            "sh",
            "-c",
            "printf 'vis%sble' i; printf 'vis%sble' i >&2",
        ],
    )
    .run();
    out.expect_code(0);
    // The table is the result: on stdout, its title naming the sink.
    let title = out.stdout.lines().next().unwrap_or_default();
    assert!(
        title.starts_with("coldtrace: 4 runs of sh -c 'printf '")
            && title.ends_with(" · stdout → /dev/null"),
        "{}",
        out.describe()
    );
    assert!(!out.stdout.contains("visible"), "{}", out.describe());
    assert!(!out.stderr.contains("visible"), "{}", out.describe());
}
