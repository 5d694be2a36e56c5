//! `report` over a fleet's records: 10,000 batch directories gathered under one
//! directory, found by walking it or listed on stdin, read with memory that does not grow with
//! the records. No timing is asserted (tests/bench/compare.sh measures the speed).
#![forbid(unsafe_code)]

mod common;

use common::{ct, TempDir, BIN};
use serde_json::Value;
use std::path::Path;
use std::time::Duration;

/// One real batch of `runs` runs, as a template.
fn template(dir: &TempDir, runs: u32) -> std::path::PathBuf {
    let out = dir.join(format!("template-{runs}"));
    ct(
        dir.path(),
        [
            "run",
            "-q",
            "-n",
            &runs.to_string(),
            "-o",
            out.to_str().unwrap(),
            "--",
            "true",
        ],
    )
    .run()
    .expect_code(0);
    out
}

/// `count` batch directories under `root/hostH/bNNNNN`, spread over `hosts` hosts: hard links
/// of the template's `runs.jsonl`, and one batch.json per host naming it.
fn fleet(root: &Path, template: &Path, hosts: usize, count: usize) {
    let doc = std::fs::read_to_string(template.join("batch.json")).unwrap();
    let mut value: Value = serde_json::from_str(&doc).unwrap();
    for h in 0..hosts {
        value["context"]["system"]["hostname"] = Value::from(format!("host{h:02}"));
        let host_doc = root.join(format!("host{h:02}.batch.json"));
        std::fs::create_dir_all(root.join(format!("host{h:02}"))).unwrap();
        std::fs::write(&host_doc, serde_json::to_vec(&value).unwrap()).unwrap();
    }
    for i in 0..count {
        let h = i % hosts;
        let dir = root.join(format!("host{h:02}/b{i:05}"));
        std::fs::create_dir(&dir).unwrap();
        std::fs::hard_link(template.join("runs.jsonl"), dir.join("runs.jsonl")).unwrap();
        std::fs::hard_link(
            root.join(format!("host{h:02}.batch.json")),
            dir.join("batch.json"),
        )
        .unwrap();
    }
}

/// coldtrace measuring `coldtrace report ARGS` (its own max RSS, KiB), and report's stdout.
fn measured_report(cwd: &Path, args: &[&str], stdin: Option<&Path>) -> (u64, String) {
    let out_dir = cwd.join(format!("measure-{}", args.join("-").replace('/', "_")));
    let _ = std::fs::remove_dir_all(&out_dir);
    let mut all = vec![
        "run",
        "-n",
        "1",
        "--json",
        "-q",
        "-o",
        out_dir.to_str().unwrap(),
        "--keep-output",
    ];
    if let Some(list) = stdin {
        all.extend(["--stdin", list.to_str().unwrap()]);
    }
    all.extend(["--", BIN, "report"]);
    all.extend_from_slice(args);
    let out = ct(cwd, &all).run_within(Duration::from_secs(300));
    let record = out.json();
    assert_eq!(record["outcome"]["code"], 0, "{}", out.describe());
    let stdout = std::fs::read_to_string(out_dir.join("runs/000/stdout")).unwrap_or_default();
    (record["rusage"]["max_rss_kib"].as_u64().unwrap(), stdout)
}

#[test]
fn ten_thousand_batch_directories_are_found_grouped_by_host_and_read_in_bounded_memory() {
    let dir = TempDir::new("fleet");
    let one = template(&dir, 1);
    let hundred = template(&dir, 100);
    // The same 1,000 directories with 1 record each and with 100: memory is per batch, not
    // per record.
    let small = dir.join("small");
    let large = dir.join("large");
    fleet(&small, &one, 4, 1000);
    fleet(&large, &hundred, 4, 1000);
    let (small_kib, small_out) = measured_report(dir.path(), &["--json", "small"], None);
    let (large_kib, _) = measured_report(dir.path(), &["--json", "large"], None);
    eprintln!(
        "report: 1,000 batches: {small_kib} KiB with 1 record each, {large_kib} KiB with 100"
    );
    assert!(
        large_kib < small_kib + 2048,
        "100× the records should not grow report: {small_kib} KiB vs {large_kib} KiB"
    );
    let doc: Value = serde_json::from_str(&small_out).unwrap();
    let rows = doc["batches"].as_array().unwrap();
    assert_eq!(rows.len(), 1000);
    // Grouped by host: each host's rows together, four hosts.
    let hosts: Vec<&str> = rows.iter().map(|r| r["host"].as_str().unwrap()).collect();
    let mut changes = hosts.windows(2).filter(|w| w[0] != w[1]).count();
    changes += 1;
    assert_eq!(changes, 4, "rows grouped by host: {:?}", &hosts[..8]);

    // 10,000 directories: found by the walk, and by a list on stdin; the bound is per batch.
    let many = dir.join("many");
    fleet(&many, &one, 10, 10_000);
    let (many_kib, many_out) = measured_report(dir.path(), &["--json", "many"], None);
    eprintln!("report: 10,000 batches: {many_kib} KiB");
    let rows = serde_json::from_str::<Value>(&many_out).unwrap()["batches"]
        .as_array()
        .unwrap()
        .len();
    assert_eq!(rows, 10_000);
    assert!(
        many_kib < 64 * 1024,
        "10,000 batches in {many_kib} KiB: more than 64 MiB"
    );
    let list = dir.join("list.txt");
    let mut names = String::new();
    for i in (0..10_000).step_by(10) {
        names.push_str(&format!("many/host{:02}/b{i:05}\n", i % 10));
    }
    std::fs::write(&list, names).unwrap();
    let (_, listed) = measured_report(dir.path(), &["--json", "-"], Some(&list));
    let rows = serde_json::from_str::<Value>(&listed).unwrap()["batches"]
        .as_array()
        .unwrap()
        .len();
    assert_eq!(rows, 1000, "the 1,000 listed on stdin");
}

#[test]
fn a_directory_without_batches_and_a_bad_list_are_one_line_each() {
    let dir = TempDir::new("fleet-bad");
    std::fs::create_dir_all(dir.join("empty/a/b")).unwrap();
    let out = ct(dir.path(), ["report", "empty"]).run();
    out.expect_code(125);
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.describe());
    assert!(
        out.stderr.contains("no batch directory found"),
        "{}",
        out.describe()
    );
    std::fs::write(dir.join("blank.txt"), "\n\n").unwrap();
    let out = ct(dir.path(), ["report", "-"])
        .stdin_from(&dir.join("blank.txt"))
        .run();
    out.expect_code(125);
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.describe());
    assert!(
        out.stderr.contains("names no directory"),
        "{}",
        out.describe()
    );
}
