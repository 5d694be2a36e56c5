//! Cold state on the built binary: a real cold/warm batch over an evicted file, `--drop-caches`
//! without permission, `report` over good, cut and garbage batch directories, and `context`.
#![forbid(unsafe_code)]

mod common;

use common::{ct, TempDir};
use serde_json::Value;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

fn records(path: &Path) -> Vec<Value> {
    fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).expect("record"))
        .collect()
}

/// A disk-backed scratch directory (eviction does nothing on tmpfs), or `None` with the reason.
fn disk_dir(tag: &str) -> Result<TempDirOn, String> {
    for base in ["/var/tmp", env!("CARGO_TARGET_TMPDIR")] {
        let base = Path::new(base);
        if coldtrace::measure::cache::is_tmpfs(base) == Some(false) {
            let dir = base.join(format!("coldtrace-cold-{tag}-{}", std::process::id()));
            if fs::create_dir_all(&dir).is_ok() {
                return Ok(TempDirOn(dir));
            }
        }
    }
    Err(
        "no writable disk-backed directory (/var/tmp and the target dir are tmpfs or read-only)"
            .into(),
    )
}

struct TempDirOn(PathBuf);
impl Drop for TempDirOn {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

#[test]
fn an_evicted_file_makes_a_cold_first_run_and_warm_runs_after_it() {
    let scratch = match disk_dir("cat") {
        Ok(dir) => dir,
        Err(why) => {
            // Eviction does not apply to tmpfs: the issue asks to skip with a message here.
            eprintln!("SKIP: {why}");
            return;
        }
    };
    let file = scratch.0.join("data.bin");
    {
        let mut f = fs::File::create(&file).unwrap();
        let block = vec![0x5au8; 1 << 20];
        for _ in 0..64 {
            f.write_all(&block).unwrap();
        }
        f.sync_all().unwrap();
    }
    let tmp = TempDir::new("cold-cat");
    let script = format!("cat '{}' > /dev/null", file.display());
    let out = ct(
        tmp.path(),
        [
            "run",
            "-n",
            "3",
            "-q",
            "-o",
            "b",
            "--evict",
            file.to_str().unwrap(),
            "--cold-first-only",
            "--",
            "sh",
            "-c",
            &script,
        ],
    )
    .run();
    out.expect_code(0);
    let runs = records(&tmp.join("b/runs.jsonl"));
    assert_eq!(runs.len(), 3);
    let ratio = |r: &Value| {
        r["cache"]["before"]["resident_ratio"]
            .as_f64()
            .expect("residency measured")
    };
    assert!(
        ratio(&runs[0]) < 0.05,
        "first run starts cold: {}",
        runs[0]["cache"]
    );
    assert_eq!(runs[0]["cold_action"]["evicted_files"], 1);
    for warm in &runs[1..] {
        assert!(
            ratio(warm) > 0.95,
            "warm runs start cached: {}",
            warm["cache"]
        );
        assert!(
            warm["cold_action"].is_null(),
            "--cold-first-only evicts before the first run only"
        );
    }
    let block_in = |r: &Value| r["rusage"]["block_in"].as_u64().unwrap();
    let read_bytes = |r: &Value| r["child_io"]["read_bytes"].as_u64().unwrap();
    for warm in &runs[1..] {
        assert!(
            block_in(&runs[0]) > block_in(warm),
            "block_in first {} vs warm {}",
            block_in(&runs[0]),
            block_in(warm)
        );
        assert!(read_bytes(&runs[0]) > read_bytes(warm));
    }
    // The storage reads of the cold run cover the file (512-byte blocks).
    assert!(
        block_in(&runs[0]) * 512 >= 60 << 20,
        "block_in {}",
        block_in(&runs[0])
    );
    let batch: Value =
        serde_json::from_slice(&fs::read(tmp.join("b/batch.json")).unwrap()).unwrap();
    let summary = &batch["summary"]["resident_ratio_before"];
    assert!(summary["first"]["median"].as_f64().unwrap() < 0.05);
    assert!(summary["warm"]["median"].as_f64().unwrap() > 0.95);
}

#[test]
fn drop_caches_without_permission_is_one_line_and_runs_nothing() {
    let tmp = TempDir::new("drop-caches");
    // Let the unprivileged user reach the directory and the marker path.
    let _ = std::process::Command::new("chmod")
        .args(["0777", tmp.path().to_str().unwrap()])
        .status();
    let marker = tmp.join("ran");
    let script = format!("touch '{}'", marker.display());
    let as_nobody = std::process::Command::new("setpriv")
        .args(["--reuid=nobody", "--regid=nogroup", "--clear-groups", "--"])
        .arg(common::BIN)
        .args(["run", "-n", "1", "--drop-caches", "--", "sh", "-c", &script])
        .current_dir(tmp.path())
        .output();
    match as_nobody {
        Ok(out) if !String::from_utf8_lossy(&out.stderr).contains("setpriv:") => {
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(125), "stderr: {stderr}");
            assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
            assert!(
                stderr.contains("needs root") && stderr.contains("--evict"),
                "{stderr}"
            );
            assert!(!marker.exists(), "nothing was run");
        }
        other => {
            // setpriv is missing or may not switch users here: the same check via the module.
            eprintln!(
                "setpriv unavailable ({other:?}); checking the message and the permission probe"
            );
            let text = coldtrace::measure::cache::CacheError::DropCachesNotPermitted.to_string();
            assert!(
                text.contains("needs root") && text.contains("--evict") && !text.contains('\n')
            );
        }
    }
}

#[test]
fn report_reads_good_cut_and_garbage_batches() {
    let tmp = TempDir::new("report");
    for (dir, label) in [("a", "first"), ("b", "second")] {
        ct(
            tmp.path(),
            [
                "run", "-n", "3", "-q", "-o", dir, "--label", label, "--", "true",
            ],
        )
        .run()
        .expect_code(0);
    }
    // b: cut the last line in the middle and drop batch.json, as a kill -9 mid-write would.
    let runs = tmp.join("b/runs.jsonl");
    let text = fs::read_to_string(&runs).unwrap();
    fs::write(&runs, &text[..text.len() - 40]).unwrap();
    fs::remove_file(tmp.join("b/batch.json")).unwrap();
    let out = ct(tmp.path(), ["report", "--json", "a", "b"]).run();
    out.expect_code(0);
    let rows = out.json()["batches"].clone();
    assert_eq!(rows[0]["label"], "first");
    assert_eq!(rows[0]["counted"], 3);
    assert_eq!(rows[0]["complete"], true);
    assert_eq!(rows[1]["counted"], 2, "the cut third line is skipped");
    assert_eq!(rows[1]["complete"], false);
    let notes = rows[1]["notes"].to_string();
    assert!(
        notes.contains("line 3 is cut short") && notes.contains("no batch.json"),
        "{notes}"
    );
    assert_eq!(rows[0]["earliest_listed_on_boot"], true);
    assert!(
        rows[0]["first_batch_since_boot"].is_null(),
        "the marker is off in tests"
    );
    // Human and Markdown renderings of the same rows.
    // The reader's notes go to stderr (the table stays pipeable), and under the Markdown table.
    let table = ct(tmp.path(), ["report", "a", "b"]).run();
    assert!(
        table.stdout.contains("first")
            && !table.stdout.contains("note:")
            && table
                .stderr
                .contains("note: b: runs.jsonl line 3 is cut short"),
        "{}",
        table.describe()
    );
    let md = ct(tmp.path(), ["report", "--markdown", "a", "b"]).run();
    let md_lines: Vec<&str> = md.stdout.lines().collect();
    assert!(
        md.stdout.starts_with("| batch |")
            && md_lines[..4].iter().all(|l| l.starts_with('|'))
            && md_lines[4].is_empty()
            && md_lines[5..].iter().all(|l| l.starts_with("- "))
            && md
                .stdout
                .contains("- note: b: runs.jsonl line 3 is cut short"),
        "{}",
        md.stdout
    );

    // A damaged line in the middle: that batch is passed over, named with its file and line,
    // the intact one shown, and the exit status says some input was bad.
    let c = tmp.join("c");
    fs::create_dir(&c).unwrap();
    fs::write(
        c.join("runs.jsonl"),
        format!(
            "{}\nthis is not json\n{}\n",
            text.lines().next().unwrap(),
            text.lines().next().unwrap()
        ),
    )
    .unwrap();
    let out = ct(tmp.path(), ["report", "a", "c"]).run();
    out.expect_code(1);
    assert_eq!(out.stderr_lines().len(), 1, "{}", out.describe());
    assert!(
        out.stderr.contains("skipped c/runs.jsonl: line 2"),
        "{}",
        out.stderr
    );
    assert!(out.stdout.contains("first"), "{}", out.describe());
    // A garbage batch.json likewise.
    let d = tmp.join("d");
    fs::create_dir(&d).unwrap();
    fs::write(d.join("batch.json"), b"\x00\xffgarbage").unwrap();
    fs::write(d.join("runs.jsonl"), b"").unwrap();
    let out = ct(tmp.path(), ["report", "d"]).run();
    out.expect_code(125);
    assert!(out.stderr.contains("batch.json: line 1"), "{}", out.stderr);
    // A file given as a batch directory.
    let out = ct(tmp.path(), ["report", "a/runs.jsonl"]).run();
    out.expect_code(125);
    assert!(
        out.stderr.contains("not a batch directory"),
        "{}",
        out.stderr
    );
}

#[test]
fn context_prints_the_machine_and_its_capabilities() {
    let tmp = TempDir::new("context");
    let out = ct(tmp.path(), ["context", "--json"]).run();
    out.expect_code(0);
    let c = out.json();
    let release = String::from_utf8(
        std::process::Command::new("uname")
            .arg("-r")
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    assert_eq!(c["system"]["kernel_release"], release.trim());
    assert_eq!(c["system"]["boot_id"].as_str().unwrap().len(), 36);
    for key in [
        "cachestat",
        "psi",
        "drop_caches_permitted",
        "task_io_accounting",
        "clear_refs_writable",
    ] {
        assert!(
            c["capabilities"][key].is_boolean(),
            "{key}: {}",
            c["capabilities"]
        );
    }
    let human = ct(tmp.path(), ["context"]).run();
    assert!(
        human.stdout.contains("kernel") && human.stdout.contains("cachestat"),
        "{}",
        human.stdout
    );
}
