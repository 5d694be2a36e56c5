//! The page-in ledger on the built binary: a first run's page-ins split, file by file and to the
//! page, into the evicted tree, the watched one and elsewhere (root: the tracepoint); no figure
//! but the reason without the privilege; none asked for with `--minimal`.
#![forbid(unsafe_code)]

mod common;

use coldtrace::measure::cache::{is_tmpfs, FileSet};
use coldtrace::record::page_ins::{PageInsRecord, Under};
use common::{ct, data_file, read_records, TempDir};
use serde_json::Value;
use std::os::unix::fs::MetadataExt;
use std::time::Duration;

fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

#[test]
fn a_first_runs_page_ins_are_split_exactly_into_evicted_watched_and_elsewhere() {
    if !is_root() {
        eprintln!("SKIP: the page-in tracepoint needs root (or CAP_PERFMON)");
        return;
    }
    let tmp = TempDir::new("page-ins-split");
    assert_eq!(
        is_tmpfs(tmp.path()),
        Some(false),
        "{} is on tmpfs: its pages are not inserted into the page cache",
        tmp.path().display()
    );
    let evicted = data_file(&tmp, "evicted.bin", 4);
    let watched = data_file(&tmp, "watched.bin", 2);
    let outside = data_file(&tmp, "outside.bin", 1);
    // Only --evict is evicted by coldtrace: the other two are made cold here.
    let report = FileSet::collect(&[watched.clone().into(), outside.clone().into()])
        .unwrap()
        .evict();
    assert_eq!(report.failed, 0, "{report:?}");
    let script = format!("cat '{evicted}' '{watched}' '{outside}' > /dev/null");
    let out = ct(
        tmp.path(),
        [
            "run",
            "-n",
            "2",
            "-q",
            "-o",
            "b",
            "--evict",
            &evicted,
            "--watch",
            &watched,
            "--cold-first-only",
            "--",
            "sh",
            "-c",
            &script,
        ],
    )
    .run_within(Duration::from_secs(120));
    out.expect_code(0);
    let runs = read_records(&tmp.join("b"));
    assert_eq!(runs[0]["schema"], "coldtrace.run/7");
    let first = PageInsRecord::read(&runs[0]).expect("a page_ins object");
    assert_eq!(first.unknown_reason, None, "{}", runs[0]["page_ins"]);
    let part = |p: Option<coldtrace::record::page_ins::PageInPart>| p.map(|p| (p.files, p.bytes));
    // Each file was cold and read whole: every one of its pages was added, none twice.
    assert_eq!(
        part(first.evicted),
        Some((1, 4 << 20)),
        "{}",
        runs[0]["page_ins"]
    );
    assert_eq!(
        part(first.watched),
        Some((1, 2 << 20)),
        "{}",
        runs[0]["page_ins"]
    );
    let elsewhere = first.elsewhere.expect("a split");
    assert!(elsewhere.bytes >= 1 << 20, "{elsewhere:?}");
    let ino = std::fs::metadata(&outside).unwrap().ino();
    let found = first
        .top
        .iter()
        .find(|f| f.key.ino == ino)
        .expect("the outside file is listed");
    assert_eq!(
        (found.bytes, found.under, &found.path),
        (1 << 20, None, &None)
    );
    let named = |path: &str| {
        first
            .top
            .iter()
            .find(|f| f.path.as_deref() == Some(path.as_ref()))
    };
    assert_eq!(named(&evicted).map(|f| f.under), Some(Some(Under::Evict)));
    assert_eq!(named(&watched).map(|f| f.under), Some(Some(Under::Watch)));
    // The residency of the watched files says the same of them.
    assert_eq!(runs[0]["cache"]["paged_in_bytes"], 6 << 20);
    // Every file, largest first, beside the first run's outputs.
    let tsv = std::fs::read_to_string(tmp.join("b/runs/000/page_ins.tsv")).unwrap();
    let lines: Vec<&str> = tsv.lines().collect();
    assert_eq!(lines[0], "bytes\tdevice\tinode\tunder\tpath");
    assert_eq!(
        lines[1],
        format!(
            "{}\t{}\t{}\tevict\t{evicted}",
            4 << 20,
            device(&found.key),
            named(&evicted).unwrap().key.ino
        )
    );
    assert!(
        lines.contains(&format!("{}\t{}\t{ino}\t-\t-", 1 << 20, device(&found.key)).as_str()),
        "{tsv}"
    );
    assert_eq!(lines.len() as u64, 1 + first.files.unwrap(), "{tsv}");
}

fn device(key: &coldtrace::measure::page_ins::FileKey) -> String {
    format!("{}:{}", key.major, key.minor)
}

#[test]
fn without_the_privilege_the_ledger_says_why_and_has_no_figure() {
    if !is_root() {
        eprintln!("SKIP: runs coldtrace as nobody, which needs root");
        return;
    }
    let tmp = TempDir::new("page-ins-nobody");
    let _ = std::process::Command::new("chmod")
        .args(["0777", tmp.path().to_str().unwrap()])
        .status();
    let out = ct(
        tmp.path(),
        ["run", "-n", "2", "-q", "-o", "b", "--", "true"],
    )
    .run_as_nobody()
    .run_within(Duration::from_secs(60));
    out.expect_code(0);
    for r in read_records(&tmp.join("b")) {
        let p = &r["page_ins"];
        assert_eq!(
            (&p["bytes"], &p["files"], &p["elsewhere"]),
            (&Value::Null, &Value::Null, &Value::Null),
            "{p}"
        );
        let why = p["unknown_reason"].as_str().unwrap_or_default();
        assert!(why.contains("cgroup") || why.contains("CAP_PERFMON"), "{p}");
    }
}

#[test]
fn minimal_runs_have_no_ledger() {
    let tmp = TempDir::new("page-ins-minimal");
    let out = ct(
        tmp.path(),
        ["run", "-n", "2", "-q", "--minimal", "-o", "b", "--", "true"],
    )
    .run();
    out.expect_code(0);
    for r in read_records(&tmp.join("b")) {
        assert_eq!(r["page_ins"], Value::Null, "{r}");
    }
}

#[test]
fn a_file_a_run_creates_in_a_watched_tree_is_watched_from_the_next_run() {
    if !is_root() {
        eprintln!("SKIP: the page-in ledger that says the tree changed needs root");
        return;
    }
    let tmp = TempDir::new("page-ins-rewalk");
    assert_eq!(
        is_tmpfs(tmp.path()),
        Some(false),
        "tmpfs pages are not page-ins"
    );
    let dir = tmp.join("tree");
    std::fs::create_dir(&dir).unwrap();
    data_file(&tmp, "tree/old.bin", 1);
    let new = dir.join("new.bin");
    // The first run writes a file into the tree; every run reads it.
    let script = format!(
        "[ -e '{0}' ] || head -c 65536 /dev/zero > '{0}'; cat '{0}' > /dev/null",
        new.display()
    );
    let out = ct(
        tmp.path(),
        [
            "run",
            "-n",
            "3",
            "-o",
            "b",
            "--watch",
            dir.to_str().unwrap(),
            "--",
            "sh",
            "-c",
            &script,
        ],
    )
    .run_within(Duration::from_secs(60));
    out.expect_code(0);
    let runs = read_records(&tmp.join("b"));
    let files = |r: &Value, when: &str| r["cache"][when]["files"].as_u64();
    // Walked at the first run, before the file existed: it pages in elsewhere.
    assert_eq!(files(&runs[0], "after"), Some(1), "{}", runs[0]["cache"]);
    let first = PageInsRecord::read(&runs[0]).unwrap();
    assert!(first.elsewhere.unwrap().bytes >= 65536, "{:?}", first);
    // The ledger saw pages of a file the walk did not find, a walked directory changed: walked
    // again, and checked whole before the next run.
    for r in &runs[1..] {
        assert_eq!(files(r, "before"), Some(2), "{}", r["cache"]);
        assert_eq!(
            r["cache"]["tree_checked_at_run"], r["index"],
            "{}",
            r["cache"]
        );
    }
}
