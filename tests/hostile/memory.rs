//! Memory that grows with the batch: what coldtrace keeps of failed runs is bounded (the first
//! and the most recent, counted; every one in `runs.jsonl`), so its floor — the RSS a child's
//! max RSS inherits — stays flat however many runs fail, and `batch.json` stays small enough to
//! read back.

use super::common::{compile, ct, finish, read_batch, read_records, shipped_binary, TempDir};
use super::{assert_records_whole, script, signal_when, DEADLINE};
use serde_json::Value;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A program that exits with status 1 at once: no C library, no start-up code (about 0.2 ms a
/// run here, so that 100,000 failures take seconds, not minutes).
const FAIL_FAST: &str = r#"
void _start(void) {
#if defined(__x86_64__)
    __asm__ volatile("mov $60, %eax\n mov $1, %edi\n syscall");
#elif defined(__aarch64__)
    __asm__ volatile("mov x8, #93\n mov x0, #1\n svc #0");
#endif
    for (;;) {}
}
"#;

fn fail_fast(dir: &TempDir) -> PathBuf {
    compile(dir.path(), "failfast", FAIL_FAST, &["-static", "-nostdlib"])
}

/// The shipped binary (its floor is the one a measurement inherits) with the words of `line`
/// (split at spaces) in `dir`.
fn shipped(dir: &TempDir, line: &str, limit: Duration) -> super::common::Output {
    let args: Vec<&str> = line.split(' ').collect();
    let mut cmd = Command::new(shipped_binary());
    cmd.args(&args)
        .current_dir(dir.path())
        .env("COLDTRACE_STATE_DIR", "")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let shown = format!("coldtrace {}", args.join(" "));
    finish(cmd.spawn().unwrap(), shown, Instant::now(), limit)
}

/// `coldtrace LINE` (words split at spaces) in `dir`, exit 0, and the batch document in
/// `dir/OUT`.
fn failing_batch(dir: &TempDir, line: &str, out: &str) -> Value {
    let run = ct(dir.path(), line.split(' ')).run_within(Duration::from_secs(120));
    run.expect_code(0);
    read_batch(&dir.join(out))
}

/// `LINE` (with `--json`) through the shipped binary: exit 0, and the runs' max RSS flat
/// within 512 KiB; the document.
fn assert_flat_floor(dir: &TempDir, line: &str) -> Value {
    let out = shipped(dir, line, Duration::from_secs(600));
    out.expect_code(0);
    let doc = out.json();
    let (min, max) = max_rss_spread(&doc);
    eprintln!("{line}: the runs' max RSS (the floor) {min}–{max} KiB");
    assert!(
        max <= min + 512,
        "the floor grew from {min} to {max} KiB: {line}"
    );
    doc
}

/// `(min, max)` of the runs' max RSS in a batch document: a program this small is at
/// coldtrace's floor, so the spread is the floor's.
fn max_rss_spread(doc: &Value) -> (u64, u64) {
    let all = &doc["summary"]["max_rss_kib"]["all"];
    let at = |k: &str| all[k].as_f64().unwrap_or_else(|| panic!("{all}")) as u64;
    (at("min"), at("max"))
}

#[test]
fn the_floor_stays_flat_over_100000_failing_runs() {
    let dir = TempDir::new("floor100k");
    let fail = fail_fast(&dir);
    let started = Instant::now();
    let line = format!("run -q -i --minimal -n 100000 --json -- {}", fail.display());
    // Before the failed runs were bounded the floor climbed past 12 MiB here.
    let doc = assert_flat_floor(&dir, &line);
    eprintln!("100,000 failing runs in {:.1?}", started.elapsed());
    assert_eq!(doc["counts"]["failed_counted"], 100_000);
    assert_eq!(doc["failed_runs"].as_array().map(Vec::len), Some(105));
    assert_eq!(doc["failed_runs_omitted"], 100_000 - 105);
    assert!(
        doc.to_string().len() < 256 << 10,
        "batch.json grew with the failures"
    );
}

#[test]
fn batch_json_lists_the_first_and_the_last_failures_and_runs_jsonl_every_one() {
    let dir = TempDir::new("failedlist");
    let fail = fail_fast(&dir);
    let line = format!("run -q -i -n 300 -o b -- {}", fail.display());
    let doc = failing_batch(&dir, &line, "b");
    let records = assert_records_whole(&dir.join("b"), true);
    let failures = records.iter().filter(|r| r["failure_reason"].is_string());
    assert_eq!(failures.count(), 300);
    let listed: Vec<u64> = doc["failed_runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["index"].as_u64().unwrap())
        .collect();
    let expected: Vec<u64> = (0..5).chain(200..300).collect();
    assert_eq!(listed, expected);
    assert_eq!(doc["failed_runs_omitted"], 195);
    assert_eq!(doc["counts"]["failed_counted"], 300);
}

#[test]
fn only_the_last_sixteen_failures_keep_their_stderr_tail() {
    let dir = TempDir::new("failedtails");
    let noisy = script(&dir, "ft", "echo \"failure $$\" >&2; exit 3");
    let line = format!("run -q -i -n 40 -o b --keep-output -- {}", noisy.display());
    let doc = failing_batch(&dir, &line, "b");
    let tails: Vec<bool> = doc["failed_runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["stderr_tail"].is_string())
        .collect();
    assert_eq!(tails.len(), 40);
    let (old, recent) = tails.split_at(24);
    assert!(
        old.iter().all(|t| !t) && recent.iter().all(|t| *t),
        "{tails:?}"
    );
    // Every run's whole stderr is still its artifact.
    for index in [0, 23, 39] {
        let path = dir.join(format!("b/runs/{index:03}/stderr"));
        assert!(std::fs::read_to_string(path)
            .unwrap()
            .starts_with("failure "));
    }
}

#[test]
fn the_table_names_the_first_failures_and_points_to_the_records() {
    let dir = TempDir::new("failedtable");
    let fail = fail_fast(&dir);
    for (out_dir, says) in [
        ("-o b ", "every one in b/runs.jsonl"),
        ("", "--out DIR keeps every one in runs.jsonl"),
    ] {
        let line = format!("run -i -n 200 {out_dir}-- {}", fail.display());
        let out = ct(dir.path(), line.split(' ')).run_within(DEADLINE);
        out.expect_code(0);
        // The table, wherever it goes.
        let text = format!("{}{}", out.stdout, out.stderr).replace("\n    ", " ");
        assert!(
            text.contains("200 of 200 — #0 exited with code 1"),
            "{}",
            out.describe()
        );
        assert!(text.contains("and 195 more"), "{}", out.describe());
        assert!(text.contains(says), "{}", out.describe());
        assert!(!text.contains("#5 "), "{}", out.describe());
    }
}

#[test]
fn report_reads_back_a_batch_of_many_failures() {
    let dir = TempDir::new("failedreport");
    let fail = fail_fast(&dir);
    let line = format!("run -q -i --minimal -n 20000 -o b -- {}", fail.display());
    shipped(&dir, &line, Duration::from_secs(300)).expect_code(0);
    let size = std::fs::metadata(dir.join("b/batch.json")).unwrap().len();
    assert!(size < 256 << 10, "batch.json is {size} bytes");
    let out = ct(dir.path(), ["report", "--json", "b"]).run_within(DEADLINE);
    out.expect_code(0);
    let rows = out.json();
    assert_eq!(rows["batches"][0]["counted"], 20_000, "{rows}");
}

#[test]
fn a_comparison_bounds_each_command_s_failures() {
    let dir = TempDir::new("failedcompare");
    let fail = fail_fast(&dir);
    let line = format!("compare -q -i -n 150 -o c {} true", fail.display());
    failing_batch(&dir, &line, "c");
    let doc = read_batch(&dir.join("c/commands/00"));
    assert_eq!(doc["failed_runs"].as_array().map(Vec::len), Some(105));
    assert_eq!(doc["failed_runs_omitted"], 45);
    let other = read_batch(&dir.join("c/commands/01"));
    assert_eq!(other["failed_runs"].as_array().map(Vec::len), Some(0));
    assert_eq!(other["failed_runs_omitted"], 0);
}

#[test]
fn failures_kept_for_an_export_stay_out_of_the_floor() {
    let dir = TempDir::new("failedexport");
    let fail = fail_fast(&dir);
    let line = format!(
        "run -q -i --minimal -n 20000 --json --export-csv-runs x.csv -- {}",
        fail.display()
    );
    assert_flat_floor(&dir, &line);
    let rows = std::fs::read_to_string(dir.join("x.csv"))
        .unwrap()
        .lines()
        .count();
    assert_eq!(rows, 20_001, "a header and every run");
}

#[test]
fn an_interrupted_batch_of_failures_writes_its_bounded_document() {
    let dir = TempDir::new("failedint");
    let slow = script(&dir, "fi", "sleep 0.01; exit 2");
    let line = format!("run -q -i -n 100000 -o b -- {}", slow.display());
    let c = ct(dir.path(), line.split(' '));
    // Interrupted once more runs have failed than the document lists, however slowly a loaded
    // machine runs them (not after a fixed time, which might see fewer, or none).
    let runs = dir.join("b/runs.jsonl");
    let (out, _) = signal_when(c, rustix::process::Signal::INT, |_| {
        let until = Instant::now() + Duration::from_secs(120);
        let recorded =
            || std::fs::read(&runs).map_or(0, |r| r.iter().filter(|&&b| b == b'\n').count());
        while recorded() < 120 {
            assert!(
                Instant::now() < until,
                "{} runs recorded in 120 s",
                recorded()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    });
    out.expect_code(130);
    let records = read_records(&dir.join("b"));
    let doc = read_batch(&dir.join("b"));
    assert_eq!(doc["complete"], false);
    let listed = doc["failed_runs"].as_array().unwrap().len() as u64;
    let omitted = doc["failed_runs_omitted"].as_u64().unwrap();
    assert_eq!(listed + omitted, records.len() as u64);
    assert_eq!(listed, 105, "{} runs", records.len());
    super::assert_no_survivor(&slow);
}

#[test]
fn timed_out_runs_are_failures_bounded_like_any_other() {
    let dir = TempDir::new("failedtimeout");
    let sleeper = script(&dir, "fs", "exec sleep 5");
    let line = format!(
        "run -q -i -n 120 --timeout 0.005 --kill-after 0.1 -o b -- {}",
        sleeper.display()
    );
    let doc = failing_batch(&dir, &line, "b");
    assert_eq!(doc["failed_runs"].as_array().map(Vec::len), Some(105));
    assert_eq!(doc["failed_runs_omitted"], 15);
    let reason = doc["failed_runs"][0]["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("timed out") || reason.contains("timeout"),
        "{reason}"
    );
    super::assert_no_survivor(&sleeper);
}

#[test]
fn the_stderr_tails_of_failures_stay_out_of_the_floor() {
    let dir = TempDir::new("failedstderr");
    // 4 KiB of stderr a run, the most a tail keeps.
    let noisy = script(
        &dir,
        "fn",
        "head -c 4096 /dev/zero | tr '\\0' x >&2; exit 1",
    );
    let line = format!("run -q -i --minimal -n 3000 --json -- {}", noisy.display());
    assert_flat_floor(&dir, &line);
}
