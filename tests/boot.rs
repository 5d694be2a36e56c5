//! What coldtrace knows about the boot, on the built binary: the boot marker (the first batch
//! after the state file is removed says so, the next does not), and `report` grouping batches
//! by boot and kernel with each group's first-run penalty, from fixtures of three boots' worth.
#![forbid(unsafe_code)]

mod common;

use common::{ct, read_batch, TempDir};
use serde_json::Value;
use std::path::Path;

fn since_boot(dir: &Path) -> Value {
    read_batch(dir)["context"]["boot_marker"]["first_batch_since_boot"].clone()
}

#[test]
fn the_first_batch_after_the_marker_is_removed_says_so_and_the_next_does_not() {
    let tmp = TempDir::new("boot-marker");
    let state = tmp.join("state");
    let run = |out: &str| {
        let mut c = ct(
            tmp.path(),
            ["run", "-q", "-n", "2", "-o", out, "--", "true"],
        );
        c.cmd.env("COLDTRACE_STATE_DIR", &state);
        c.run().expect_code(0);
    };
    run("a");
    assert_eq!(since_boot(&tmp.join("a")), true, "no state file yet");
    let boot_id = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").unwrap();
    let kept: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(state.join("last-boot")).unwrap()).unwrap();
    assert_eq!(kept["boot_id"], boot_id.trim(), "this boot's ID: {kept}");
    // And the kernel's counts as the batch ended, for the next batch to compare with its own.
    for count in ["drop_pagecache", "drop_slab", "pgsteal_file"] {
        assert!(kept[count].is_u64(), "{count}: {kept}");
    }
    assert!(kept["uptime_s"].as_f64().unwrap() > 0.0, "{kept}");
    run("b");
    assert_eq!(since_boot(&tmp.join("b")), false, "the same boot");
    let marker = &read_batch(&tmp.join("b"))["context"]["boot_marker"];
    assert_eq!(
        marker["last_batch"]["boot_id"],
        serde_json::Value::Null,
        "{marker}"
    );
    assert!(marker["last_batch"]["drop_pagecache"].is_u64(), "{marker}");
    // A state file an older coldtrace wrote (the boot ID alone): the same boot, no counts.
    std::fs::write(state.join("last-boot"), &boot_id).unwrap();
    run("b2");
    assert_eq!(since_boot(&tmp.join("b2")), false, "the same boot");
    let marker = &read_batch(&tmp.join("b2"))["context"]["boot_marker"];
    assert!(marker["last_batch"].is_null(), "{marker}");
    std::fs::remove_file(state.join("last-boot")).unwrap();
    run("c");
    assert_eq!(since_boot(&tmp.join("c")), true, "the marker was removed");
    // Another boot's ID in the file: this batch is the first of this boot.
    std::fs::write(
        state.join("last-boot"),
        "00000000-0000-0000-0000-000000000000\n",
    )
    .unwrap();
    run("d");
    assert_eq!(since_boot(&tmp.join("d")), true);
    assert_eq!(since_boot(&tmp.join("b")), false);
    // Off: nothing read or written, the answer unknown with the reason.
    let mut off = ct(
        tmp.path(),
        ["run", "-q", "-n", "2", "-o", "e", "--", "true"],
    );
    off.cmd.env("COLDTRACE_STATE_DIR", "");
    off.run().expect_code(0);
    let marker = &read_batch(&tmp.join("e"))["context"]["boot_marker"];
    assert!(marker["first_batch_since_boot"].is_null(), "{marker}");
    assert!(marker["note"].as_str().unwrap().contains("off"), "{marker}");
}

/// Makes `dir` look as if it ran on another boot and kernel, `uptime_s` after that boot, at
/// `started_at`, recorded (or not) as the first batch since that boot.
fn move_to_boot(
    dir: &Path,
    boot: &str,
    kernel: &str,
    uptime_s: f64,
    started_at: &str,
    first: Option<bool>,
) {
    let runs = dir.join("runs.jsonl");
    let text: String = std::fs::read_to_string(&runs)
        .unwrap()
        .lines()
        .map(|line| {
            let mut r: Value = serde_json::from_str(line).unwrap();
            r["boot_id"] = boot.into();
            r["uptime_s"] = uptime_s.into();
            r["started_at"] = started_at.into();
            format!("{r}\n")
        })
        .collect();
    std::fs::write(&runs, text).unwrap();
    let mut batch = read_batch(dir);
    batch["context"]["system"]["boot_id"] = boot.into();
    batch["context"]["system"]["kernel_release"] = kernel.into();
    batch["context"]["system"]["uptime_s"] = uptime_s.into();
    batch["context"]["boot_marker"]["first_batch_since_boot"] =
        first.map_or(Value::Null, Value::from);
    std::fs::write(dir.join("batch.json"), batch.to_string()).unwrap();
}

#[test]
fn report_groups_batches_by_boot_and_kernel_and_says_only_what_was_recorded() {
    let tmp = TempDir::new("report-boots");
    let batch = |out: &str, label: &str, cmd: &[&str]| {
        let mut args = vec!["run", "-q", "-n", "3", "-o", out, "--label", label, "--"];
        args.extend_from_slice(cmd);
        ct(tmp.path(), args).run();
    };
    batch("pre", "pre-reboot", &["true"]);
    batch("failed", "failed-workload", &["sh", "-c", "exit 3"]);
    batch("post", "post-reboot", &["true"]);
    let (old, new) = (
        "aaaaaaaa-1111-2222-3333-444444444444",
        "bbbbbbbb-5555-6666-7777-888888888888",
    );
    // Listed out of time order on purpose: report orders and groups them.
    move_to_boot(
        &tmp.join("post"),
        new,
        "6.19.2-new",
        41.0,
        "2026-12-04T09:00:00.000Z",
        Some(true),
    );
    move_to_boot(
        &tmp.join("pre"),
        old,
        "6.18.44-old",
        1932.0,
        "2026-12-03T08:00:00.000Z",
        None,
    );
    move_to_boot(
        &tmp.join("failed"),
        old,
        "6.18.44-old",
        2400.0,
        "2026-12-03T08:08:00.000Z",
        None,
    );

    let out = ct(tmp.path(), ["report", "--json", "post", "failed", "pre"]).run();
    out.expect_code(0);
    let rows = out.json()["batches"].clone();
    let seen: Vec<(String, u64, bool, bool)> = rows
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["label"].as_str().unwrap().to_string(),
                r["group"].as_u64().unwrap(),
                r["earliest_listed_on_boot"].as_bool().unwrap(),
                r["kernel_changed"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        seen,
        [
            ("pre-reboot".into(), 0, true, false),
            ("failed-workload".into(), 0, false, false),
            ("post-reboot".into(), 1, true, true),
        ]
    );
    assert!(
        rows[0]["first_batch_since_boot"].is_null(),
        "not recorded for pre-reboot"
    );
    assert_eq!(rows[2]["first_batch_since_boot"], true);
    // The failing batch stopped after its first run, as hyperfine stops.
    assert_eq!(rows[1]["rejected"], 1);
    // Each group's verdict is the batch's own, said in its one line; a penalty figure only
    // where the verdict found one.
    let own = read_batch(&tmp.join("post"))["verdict"].clone();
    let verdict = coldtrace::record::verdict::Verdict::from_json(&own).unwrap();
    let penalty = (verdict.kind == coldtrace::record::verdict::Kind::Penalty)
        .then_some(verdict.penalty_ns)
        .flatten();
    assert_eq!(rows[2]["first_penalty_ns"].as_f64(), penalty);

    let table = ct(tmp.path(), ["report", "post", "failed", "pre"]).run();
    table.expect_code(0);
    let text = table
        .stdout
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    let shown = coldtrace::view::verdict::one_line(&verdict)
        .unwrap()
        .replace('\u{a0}', " ");
    assert!(
        text.contains(&format!(
            "boot bbbbbbbb · kernel 6.19.2-new (kernel changed) — first batch since boot: \
             post-reboot (up 41s), {shown}"
        )),
        "{}",
        table.stdout
    );
    assert!(
        text.contains("boot aaaaaaaa · kernel 6.18.44-old — earliest listed on boot aaaaaaaa: pre-reboot, up 32m12s")
            && text.contains("whether it was the first since boot is not recorded"),
        "{}",
        table.stdout
    );
    assert!(
        !text.contains("first on boot"),
        "never claimed: {}",
        table.stdout
    );
    assert!(
        text.contains("failed-workload: ✗ the first run was rejected"),
        "{}",
        table.stdout
    );
    // The groups come in time order, each above its own rows (whose names the batch column
    // may shorten to 8 columns when the figures beside them are wide).
    let at = |needle: &str| table.stdout.find(needle).unwrap_or(usize::MAX);
    assert!(at("boot aaaaaaaa") < at("\npre-re") && at("\nfailed-") < at("boot bbbbbbbb"));
}

#[test]
fn report_keeps_the_boot_and_uptime_of_a_minimal_batch() {
    let tmp = TempDir::new("report-minimal");
    ct(
        tmp.path(),
        ["run", "-q", "-n", "2", "--minimal", "-o", "m", "--", "true"],
    )
    .run()
    .expect_code(0);
    let records = common::read_records(&tmp.join("m"));
    assert!(
        records[0]["boot_id"].is_null(),
        "--minimal records have no boot ID"
    );
    let out = ct(tmp.path(), ["report", "--json", "m"]).run();
    let row = &out.json()["batches"][0];
    let boot_id = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").unwrap();
    assert_eq!(row["boot_id"], boot_id.trim(), "from batch.json: {row}");
    assert!(row["uptime_s"].as_f64().is_some(), "{row}");
}

#[test]
fn report_says_not_the_first_batch_since_boot_only_when_recorded_so() {
    let tmp = TempDir::new("report-not-first");
    for dir in ["later", "unknown"] {
        ct(
            tmp.path(),
            ["run", "-q", "-n", "2", "-o", dir, "--", "true"],
        )
        .run()
        .expect_code(0);
    }
    // Each alone on its boot: the earliest listed there, recorded as not the first since
    // boot, or with nothing recorded.
    move_to_boot(
        &tmp.join("later"),
        "cccccccc-1111-2222-3333-444444444444",
        "6.18.44-a",
        600.0,
        "2026-12-03T08:00:00.000Z",
        Some(false),
    );
    move_to_boot(
        &tmp.join("unknown"),
        "dddddddd-1111-2222-3333-444444444444",
        "6.18.44-a",
        700.0,
        "2026-12-04T08:00:00.000Z",
        None,
    );
    let out = ct(tmp.path(), ["report", "later", "unknown"]).run();
    out.expect_code(0);
    let text = out.stdout.split_whitespace().collect::<Vec<_>>().join(" ");
    // `earliest listed on boot cccccccc: later, up 10m00s, first-run penalty +… (…)`.
    let said = |boot: &str| {
        let at = text
            .find(&format!("earliest listed on boot {boot}: "))
            .unwrap_or_else(|| panic!("no group line for {boot}: {}", out.stdout));
        let rest = &text[at..];
        rest[..rest.find(')').unwrap_or(rest.len()) + 1].to_string()
    };
    let later = said("cccccccc");
    assert!(
        later.starts_with("earliest listed on boot cccccccc: later, up 10m00s")
            && later.ends_with("(not the first coldtrace batch since boot)"),
        "{later}"
    );
    let unknown = said("dddddddd");
    assert!(
        unknown.starts_with("earliest listed on boot dddddddd: unknown, up 11m40s")
            && unknown.ends_with("(whether it was the first since boot is not recorded)"),
        "{unknown}"
    );
}
