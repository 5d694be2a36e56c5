//! The page-in ledger on the built binary: a first run's page-ins split, file by file and to the
//! page, into the evicted tree, the watched one and elsewhere (root: the tracepoint); the pages
//! a run creates by writing told from those it reads in, file by file, and named where the run
//! created them; no figure but the reason without the privilege; none asked for with
//! `--minimal`.
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
    let tmp = disk_dir("page-ins-split");
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
    assert_eq!(runs[0]["schema"], "coldtrace.run/8");
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
    assert_eq!(lines[0], "bytes\thow\tdevice\tinode\tunder\tcreated\tpath");
    assert_eq!(
        lines[1],
        format!(
            "{}\tread\t{}\t{}\tevict\t-\t{evicted}",
            4 << 20,
            device(&found.key),
            named(&evicted).unwrap().key.ino
        )
    );
    assert!(
        lines.contains(
            &format!("{}\tread\t{}\t{ino}\t-\t-\t-", 1 << 20, device(&found.key)).as_str()
        ),
        "{tsv}"
    );
    let written = first.written.as_ref().expect("a written part").files;
    assert_eq!(
        lines.len() as u64,
        1 + first.files.unwrap() + written,
        "{tsv}"
    );
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
    // Walked at the first run, before the file existed: the pages it wrote there are in no
    // walk, and the search after the first run names the file under the watched root.
    assert_eq!(files(&runs[0], "after"), Some(1), "{}", runs[0]["cache"]);
    let first = PageInsRecord::read(&runs[0]).unwrap();
    let written = first.written.expect("a written part");
    assert!(written.watched.unwrap().bytes >= 65536, "{written:?}");
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

/// The bytes a record's `top` list gives the file with inode `ino` (0 where it is not listed).
fn listed(list: &Value, ino: u64) -> u64 {
    list.as_array()
        .into_iter()
        .flatten()
        .filter(|f| f["inode"] == ino)
        .map(|f| f["bytes"].as_u64().unwrap_or(0))
        .sum()
}

/// The entry of a record's `top` list for the file with inode `ino`.
fn entry(list: &Value, ino: u64) -> Option<&Value> {
    list.as_array()?.iter().find(|f| f["inode"] == ino)
}

/// A fresh directory for the tests that write: on a file system whose pages go through the page
/// cache (not tmpfs).
fn disk_dir(tag: &str) -> TempDir {
    let tmp = TempDir::new(tag);
    assert_eq!(
        is_tmpfs(tmp.path()),
        Some(false),
        "{} is on tmpfs: its pages are not inserted into the page cache",
        tmp.path().display()
    );
    tmp
}

/// The records of `coldtrace run -q -o b ARGS` in `tmp` (which must succeed).
fn batch(tmp: &TempDir, args: &[&str]) -> Vec<Value> {
    let all = ["run", "-q", "-o", "b"].iter().chain(args);
    ct(tmp.path(), all)
        .run_within(Duration::from_secs(120))
        .expect_code(0);
    read_records(&tmp.join("b"))
}

/// The first run's `page_ins.tsv`, as lines of cells.
fn tsv_rows(tmp: &TempDir) -> Vec<Vec<String>> {
    let tsv = std::fs::read_to_string(tmp.join("b/runs/000/page_ins.tsv")).unwrap();
    let rows: Vec<Vec<String>> = tsv
        .lines()
        .map(|l| l.split('\t').map(str::to_string).collect())
        .collect();
    assert_eq!(
        rows[0].join("\t"),
        "bytes\thow\tdevice\tinode\tunder\tcreated\tpath"
    );
    rows
}

/// The bytes of the row saying `how` the file with inode `ino` gained pages.
fn tsv_bytes(rows: &[Vec<String>], how: &str, ino: u64) -> Option<u64> {
    let row = rows
        .iter()
        .find(|r| r[1] == how && r[3] == ino.to_string())?;
    row[0].parse().ok()
}

fn skip_unless_root() -> bool {
    if !is_root() {
        eprintln!("SKIP: the page-in tracepoint needs root (or CAP_PERFMON)");
    }
    !is_root()
}

#[test]
fn a_run_that_only_writes_a_new_file_reads_nothing_in_and_writes_its_pages() {
    if skip_unless_root() {
        return;
    }
    let tmp = disk_dir("page-ins-write");
    // The warm-up leaves dd and sh cached: a counted run reads nothing from storage, unless
    // another process evicted them meanwhile (its child_io.read_bytes says so).
    let script = "rm -f w; exec dd if=/dev/zero of=w bs=1M count=8 status=none";
    let runs = batch(&tmp, &["-w", "1", "-n", "3", "--", "sh", "-c", script]);
    let mut read_nothing = 0;
    for run in runs.iter().filter(|r| r["counted"] == true) {
        let p = &run["page_ins"];
        assert_eq!(p["unknown_reason"], Value::Null, "{p}");
        // Each run wrote a new w: its 8 MiB written, none of it read.
        let eight_mib = |list: &Value| {
            let list = list.as_array().unwrap_or_else(|| panic!("no list: {p}"));
            list.iter().filter(|f| f["bytes"] == 8 << 20).count()
        };
        assert_eq!(eight_mib(&p["written"]["top"]), 1, "{p}");
        assert_eq!(eight_mib(&p["top"]), 0, "{p}");
        if run["child_io"]["read_bytes"] == 0 {
            read_nothing += 1;
            assert_eq!((&p["bytes"], &p["files"]), (&0.into(), &0.into()), "{p}");
        }
    }
    assert!(
        read_nothing > 0,
        "every counted run read from storage: {runs:?}"
    );
    // The last run's w is the file on disk.
    let ino = std::fs::metadata(tmp.join("w")).unwrap().ino();
    let last = &runs.last().unwrap()["page_ins"];
    assert_eq!(listed(&last["written"]["top"], ino), 8 << 20, "{last}");
}

#[test]
fn a_run_that_reads_a_cold_file_records_it_read_and_nothing_written() {
    if skip_unless_root() {
        return;
    }
    let tmp = disk_dir("page-ins-read");
    let cold = data_file(&tmp, "cold.bin", 4);
    let ino = std::fs::metadata(&cold).unwrap().ino();
    let args = [
        "-n",
        "2",
        "--evict",
        &cold,
        "--cold-first-only",
        "--",
        "cat",
        &cold,
    ];
    let runs = batch(&tmp, &args);
    let p = &runs[0]["page_ins"];
    assert_eq!(listed(&p["top"], ino), 4 << 20, "{p}");
    assert_eq!(p["evicted"]["bytes"], 4 << 20, "{p}");
    let written = &p["written"];
    assert_eq!(
        (&written["files"], &written["bytes"]),
        (&0.into(), &0.into()),
        "{p}"
    );
    let rows = tsv_rows(&tmp);
    assert_eq!(tsv_bytes(&rows, "read", ino), Some(4 << 20));
    assert_eq!(
        rows.iter().find(|r| r[3] == ino.to_string()).unwrap()[6],
        cold
    );
    assert!(rows.iter().all(|r| r[1] != "written"), "{rows:?}");
}

#[test]
fn a_run_that_appends_to_a_cached_file_and_reads_a_cold_one_records_each_right() {
    if skip_unless_root() {
        return;
    }
    let tmp = disk_dir("page-ins-append");
    let cold = data_file(&tmp, "cold.bin", 4);
    let log = tmp.join("log");
    // Two whole pages, cached (just written): the append adds pages from the third on.
    std::fs::write(&log, vec![b'l'; 8192]).unwrap();
    let script = format!(
        "head -c 1048576 /dev/zero >> '{}'; cat '{cold}' > /dev/null",
        log.display()
    );
    let runs = batch(
        &tmp,
        &["-n", "1", "--evict", &cold, "--", "sh", "-c", &script],
    );
    let p = &runs[0]["page_ins"];
    let (cold_ino, log_ino) = (
        std::fs::metadata(&cold).unwrap().ino(),
        std::fs::metadata(&log).unwrap().ino(),
    );
    assert_eq!(listed(&p["top"], cold_ino), 4 << 20, "{p}");
    assert_eq!(listed(&p["top"], log_ino), 0, "{p}");
    assert_eq!(listed(&p["written"]["top"], log_ino), 1 << 20, "{p}");
    assert_eq!(listed(&p["written"]["top"], cold_ino), 0, "{p}");
    // The log is under the command's working directory, and was not created by the run.
    let log_entry = entry(&p["written"]["top"], log_ino).unwrap();
    assert_eq!(
        (
            log_entry["under"].as_str(),
            log_entry["path"].as_str(),
            &log_entry["created"]
        ),
        (Some("cwd"), log.to_str(), &Value::Bool(false)),
        "{p}"
    );
    let rows = tsv_rows(&tmp);
    assert_eq!(tsv_bytes(&rows, "read", cold_ino), Some(4 << 20));
    assert_eq!(tsv_bytes(&rows, "written", log_ino), Some(1 << 20));
    assert_eq!(tsv_bytes(&rows, "written", cold_ino), None);
    assert_eq!(tsv_bytes(&rows, "read", log_ino), None);
}

#[test]
fn a_python_import_that_writes_its_pycache_shows_the_pyc_as_written() {
    if skip_unless_root() {
        return;
    }
    let tmp = disk_dir("page-ins-pycache");
    std::fs::write(tmp.join("mod_a.py"), "X = 1\n").unwrap();
    let import =
        "unset PYTHONDONTWRITEBYTECODE PYTHONPYCACHEPREFIX; exec python3 -c 'import mod_a'";
    let runs = batch(&tmp, &["-n", "2", "--", "sh", "-c", import]);
    let pyc = std::fs::read_dir(tmp.join("__pycache__"))
        .expect("python wrote its __pycache__")
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().ends_with(".pyc"))
        .expect("a .pyc");
    let ino = std::fs::metadata(&pyc).unwrap().ino();
    let first = &runs[0]["page_ins"];
    let pyc_entry = entry(&first["written"]["top"], ino)
        .unwrap_or_else(|| panic!("the .pyc is not among the pages written: {first}"));
    assert_eq!(
        (
            pyc_entry["path"].as_str(),
            pyc_entry["under"].as_str(),
            &pyc_entry["created"]
        ),
        (pyc.to_str(), Some("cwd"), &Value::Bool(true)),
        "{first}"
    );
    assert_eq!(listed(&first["top"], ino), 0, "{first}");
    assert!(
        first["written"]["cwd"]["files"].as_u64() >= Some(1),
        "{first}"
    );
    assert!(
        first["written"]["created"]["files"].as_u64() >= Some(1),
        "{first}"
    );
    // The second run reads the .pyc the first wrote and writes nothing of it.
    assert_eq!(listed(&runs[1]["page_ins"]["written"]["top"], ino), 0);
    let rows = tsv_rows(&tmp);
    let row = rows.iter().find(|r| r[3] == ino.to_string()).unwrap();
    assert_eq!(
        (
            row[1].as_str(),
            row[4].as_str(),
            row[5].as_str(),
            row[6].as_str()
        ),
        ("written", "cwd", "yes", pyc.to_str().unwrap()),
    );
}
