//! The first run explained, on the built binary: a rejected first run stays the first run
//! (shown, marked, never replaced), in `run`, `compare` and `report`, and old batch documents.
#![forbid(unsafe_code)]

mod common;

use common::{ct, read_batch, read_records, write_file, TempDir};
use serde_json::Value;
use std::path::Path;

/// A script that fails on its first invocation only (a marker file beside it remembers).
fn fails_first(dir: &Path) -> String {
    let path = dir.join("fails-first.sh");
    write_file(
        &path,
        b"#!/bin/sh\nm=\"$(dirname \"$0\")/.ran\"\n\
          if [ ! -e \"$m\" ]; then touch \"$m\"; echo 'first call fails' >&2; exit 1; fi\nexit 0\n",
        0o755,
    );
    path.display().to_string()
}

#[test]
fn a_rejected_first_run_is_shown_as_the_first_run_and_no_warm_run_is_promoted() {
    let tmp = TempDir::new("fails-first");
    let script = fails_first(tmp.path());
    let data = tmp.join("DATA");
    std::fs::write(&data, vec![1u8; 1 << 20]).unwrap();
    let out = ct(
        tmp.path(),
        [
            "run",
            "-n",
            "4",
            "-o",
            "f3",
            "--evict",
            data.to_str().unwrap(),
            "--cold-first-only",
            "--",
            &script,
        ],
    )
    .run();
    out.expect_code(1);
    let runs = read_records(&tmp.join("f3"));
    assert_eq!(runs[0]["role"], "first");
    assert_eq!(runs[0]["counted"], false);
    let batch = read_batch(&tmp.join("f3"));
    assert_eq!(batch["schema"], "coldtrace.batch/2");
    assert_eq!(batch["first_rejected"]["index"], 0, "{batch:#}");
    assert_eq!(batch["first_rejected"]["reason"], "exited with code 1");
    let wall = &batch["summary"]["wall_ns"];
    assert!(wall["first"].is_null(), "no promoted first: {wall}");
    assert!(wall["first_to_warm_median"].is_null(), "{wall}");
    assert_eq!(
        wall["warm"]["n"], 3,
        "the three warm runs stay warm: {wall}"
    );
    assert_eq!(wall["all"]["n"], 3, "{wall}");
    // The first column holds the rejected run's own wall time, marked.
    let first_wall = runs[0]["wall_ns"].as_f64().unwrap();
    let wall_row = out
        .stderr_lines()
        .into_iter()
        .find(|l| l.trim_start().starts_with("wall "))
        .expect("a wall row")
        .to_string();
    assert!(wall_row.contains('✗'), "{}", out.describe());
    let shown = coldtrace::view::units::human_ns(first_wall);
    assert!(wall_row.contains(&shown), "{shown} in {wall_row}");
    let said: Vec<&str> = out
        .stderr_lines()
        .into_iter()
        .filter(|l| l.contains("the cold run was rejected"))
        .collect();
    assert_eq!(said.len(), 1, "{}", out.describe());
    assert!(said[0].contains("#0: exited with code 1"), "{}", said[0]);

    // report: the same run in the first column, marked rejected, no ratio.
    let report = ct(tmp.path(), ["report", "--json", "f3"]).run();
    report.expect_code(0);
    let row = &report.json()[0];
    assert_eq!(row["first_wall_ns"].as_f64(), Some(first_wall), "{row}");
    assert_eq!(row["first_rejected"], "#0: exited with code 1");
    assert!(row["first_to_warm"].is_null());
}

#[test]
fn report_reads_a_version_1_batch_and_says_its_first_may_be_promoted() {
    let tmp = TempDir::new("batch-v1");
    let script = fails_first(tmp.path());
    ct(
        tmp.path(),
        ["run", "-n", "3", "-q", "-o", "b", "--", &script],
    )
    .run()
    .expect_code(1);
    // Rewrite the document as version 1 wrote it: no first_rejected, schema /1.
    let path = tmp.join("b/batch.json");
    let mut doc: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    doc["schema"] = "coldtrace.batch/1".into();
    doc.as_object_mut().unwrap().remove("first_rejected");
    std::fs::write(&path, serde_json::to_string(&doc).unwrap()).unwrap();
    let report = ct(tmp.path(), ["report", "--json", "b"]).run();
    report.expect_code(0);
    let row = &report.json()[0];
    assert_eq!(row["batch_schema"], "coldtrace.batch/1");
    assert!(
        row["notes"]
            .to_string()
            .contains("promoted over the rejected first run"),
        "{row}"
    );
    // A version-2 document of a batch whose first run succeeded says nothing of the kind.
    ct(
        tmp.path(),
        ["run", "-n", "2", "-q", "-o", "ok", "--", "true"],
    )
    .run()
    .expect_code(0);
    let report = ct(tmp.path(), ["report", "--json", "ok"]).run();
    let row = &report.json()[0];
    assert_eq!(row["batch_schema"], "coldtrace.batch/2");
    assert_eq!(row["notes"], Value::Array(vec![]), "{row}");
}

#[test]
fn compare_says_which_command_lost_its_first_run() {
    let tmp = TempDir::new("compare-fails-first");
    let script = fails_first(tmp.path());
    let out = ct(
        tmp.path(),
        ["compare", "-n", "3", "-o", "cmp", "true", script.as_str()],
    )
    .run();
    out.expect_code(1);
    let lines: Vec<&str> = out
        .stderr_lines()
        .into_iter()
        .filter(|l| l.contains("the first run was rejected"))
        .collect();
    assert_eq!(lines.len(), 1, "{}", out.describe());
    let member = read_batch(&tmp.join("cmp/commands/01"));
    assert_eq!(member["first_rejected"]["index"], 0, "{member:#}");
    assert!(member["summary"]["wall_ns"]["first"].is_null());
    let ok = read_batch(&tmp.join("cmp/commands/00"));
    assert!(ok["first_rejected"].is_null());
    assert!(ok["summary"]["wall_ns"]["first"]["n"] == 1);
}
