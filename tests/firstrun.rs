//! The first run explained, on the built binary: a rejected first run stays the first run
//! (shown, marked, never replaced), in `run`, `compare` and `report`, and old batch documents.
#![forbid(unsafe_code)]

mod common;

use common::{ct, figure_after, prose, read_batch, read_records, write_file, TempDir};
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
    // -i=CODES never stops the batch: the first run's exit with code 1 is rejected, the
    // batch goes on (without -i it would stop there, as hyperfine does).
    let out = ct(
        tmp.path(),
        [
            "run",
            "-i=2",
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
    assert_eq!(batch["schema"], coldtrace::record::BATCH_SCHEMA);
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
        .shown_lines()
        .into_iter()
        .find(|l| l.trim_start().starts_with("wall "))
        .expect("a wall row")
        .to_string();
    assert!(wall_row.contains('✗'), "{}", out.describe());
    // `wall  ms  253.4 ✗  …`: the row's unit, then the first cell. The row has one unit and
    // precision, chosen from its largest value (a slow warm run on a loaded machine gives the
    // first cell fewer digits), so the cell must be the first run's wall time rounded to the
    // digits it shows: within half a unit of its last digit.
    let cells: Vec<&str> = wall_row.split_whitespace().collect();
    let per_unit = match cells[1] {
        "s" => 1e9,
        "ms" => 1e6,
        "µs" => 1e3,
        _ => 1.0,
    };
    let shown: f64 = cells[2].parse().expect("the first cell is a number");
    let decimals = cells[2].split_once('.').map_or(0, |(_, d)| d.len());
    let half_a_digit = 0.5 * 10f64.powi(-(decimals as i32)) * per_unit;
    assert!(
        (shown * per_unit - first_wall).abs() <= half_a_digit * (1.0 + 1e-9),
        "{first_wall} ns shown as {} {} in {wall_row}",
        cells[2],
        cells[1]
    );
    let said: Vec<String> = out
        .shown_lines()
        .into_iter()
        .filter(|l| l.contains("the cold run was rejected"))
        .collect();
    assert_eq!(said.len(), 1, "{}", out.describe());
    assert!(said[0].contains("#0: exited with code 1"), "{}", said[0]);

    // report: the same run in the first column, marked rejected, no ratio.
    let report = ct(tmp.path(), ["report", "--json", "f3"]).run();
    report.expect_code(0);
    let row = &report.json()["batches"][0];
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
        ["run", "-i=2", "-n", "3", "-q", "-o", "b", "--", &script],
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
    let row = &report.json()["batches"][0];
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
    let row = &report.json()["batches"][0];
    assert_eq!(row["batch_schema"], coldtrace::record::BATCH_SCHEMA);
    assert_eq!(row["notes"], Value::Array(vec![]), "{row}");
}

#[test]
fn compare_says_which_command_lost_its_first_run() {
    let tmp = TempDir::new("compare-fails-first");
    let script = fails_first(tmp.path());
    let out = ct(
        tmp.path(),
        [
            "compare",
            "-i=2",
            "-n",
            "3",
            "-o",
            "cmp",
            "true",
            script.as_str(),
        ],
    )
    .run();
    out.expect_code(1);
    let lines: Vec<String> = out
        .shown_lines()
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

/// The real Python interpreter (the `python3` on PATH may be a pyenv shim, a shell script that
/// runs helper processes, whose CPU time would make every run "spread over processes").
fn python() -> String {
    let out = std::process::Command::new("python3")
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
        .expect("python3 runs");
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// A Python script that does `first` on its first invocation only (a marker file remembers).
fn python_first(dir: &Path, name: &str, first: &str) -> String {
    let path = dir.join(name);
    let marker = dir.join(format!(".{name}.ran"));
    let text = format!(
        "import os, sys, time, threading\nm = {marker:?}\nif not os.path.exists(m):\n    \
         open(m, 'w').close()\n{first}\n"
    );
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

fn penalty_of(dir: &Path, argv: &[&str]) -> (Value, String) {
    let mut args = vec!["run", "-n", "10", "-o", "b", "--"];
    args.extend_from_slice(argv);
    let out = ct(dir, args).run_within(std::time::Duration::from_secs(120));
    out.expect_code(0);
    let batch = read_batch(&dir.join("b"));
    let p = batch["first_penalty"].clone();
    assert!(p.is_object(), "{batch:#}{}", out.describe());
    (p, out.shown())
}

/// stderr with every run of whitespace made one space: sentences under the table are wrapped.
fn ns(p: &Value, key: &str) -> i64 {
    p[key]
        .as_i64()
        .unwrap_or_else(|| panic!("{key} is not a number: {p}"))
}

#[test]
fn a_first_run_that_sleeps_is_penalised_in_blocked_time() {
    let tmp = TempDir::new("penalty-sleep");
    // No external command before the sleep: the shell's own test and redirection only.
    let script = tmp.join("sleep-first.sh");
    write_file(
        &script,
        b"#!/bin/sh\nm=\"${0%/*}/.slept\"\nif [ ! -e \"$m\" ]; then : > \"$m\"; exec sleep 1; fi\n",
        0o755,
    );
    let (p, stderr) = penalty_of(tmp.path(), &[script.to_str().unwrap()]);
    // As root the whole tree's states split it (one task here: the shell execs sleep).
    let traced = p["basis"] == "tree";
    assert!(traced || p["basis"] == "schedstat", "{p}");
    assert_eq!(
        p["significant"], true,
        "1 s over runs of a few ms (a warm run would need ~330 ms to hide it): {p}"
    );
    assert!(p["rule"].as_str().unwrap().contains("slowest warm"), "{p}");
    assert!(ns(&p, "first_wall_ns") as f64 > p["threshold_wall_ns"].as_f64().unwrap());
    assert_eq!(p["first_index"], 0);
    let (wall, cpu, rq, blocked) = (
        ns(&p, "wall_ns"),
        ns(&p, "cpu_ns"),
        ns(&p, "runqueue_ns"),
        ns(&p, "blocked_ns"),
    );
    assert_eq!(cpu + rq + blocked, wall, "the parts add up: {p}");
    assert!(blocked >= 280_000_000, "mostly blocked: {p}");
    assert!(cpu.abs() < 50_000_000, "CPU near 0: {p}");
    // The reference is a warm run, named by index, with its own wall time.
    let runs = read_records(&tmp.join("b"));
    let reference = &runs[p["reference_index"].as_u64().unwrap() as usize];
    assert_eq!(reference["role"], "warm");
    assert_eq!(reference["wall_ns"], p["reference_wall_ns"]);
    assert_eq!(
        ns(&p, "wall_ns"),
        runs[0]["wall_ns"].as_i64().unwrap() - reference["wall_ns"].as_i64().unwrap()
    );
    let said = if traced {
        let asleep = ns(&p["tree"], "sleeping_ns");
        assert!(asleep >= 280_000_000, "mostly asleep: {p}");
        format!(
            "it was asleep +{}",
            coldtrace::view::units::human_ns(asleep as f64)
        )
    } else {
        format!(
            "+{} blocked",
            coldtrace::view::units::human_ns(blocked as f64)
        )
    };
    assert!(
        prose(&stderr).contains("over the warm median") && prose(&stderr).contains(&said),
        "{said} in {stderr}"
    );
}

#[test]
fn a_first_run_inside_the_warm_range_claims_no_penalty() {
    let tmp = TempDir::new("penalty-inside");
    // Each run sleeps the next duration of a list: the first 30 ms, the warm runs 10 to 80 ms,
    // so the first run lies strictly inside the warm runs' range.
    let script = tmp.join("in-range.sh");
    write_file(
        &script,
        b"#!/bin/sh\nc=\"${0%/*}/.count\"\nn=0\n[ -e \"$c\" ] && read n < \"$c\"\n\
          echo $((n + 1)) > \"$c\"\nset -- 0.03 0.01 0.08 0.02 0.05 0.04\n\
          shift $((n % 6))\nexec sleep \"$1\"\n",
        0o755,
    );
    let out = ct(
        tmp.path(),
        [
            "run",
            "-n",
            "20",
            "-o",
            "b",
            "--explain",
            "--",
            script.to_str().unwrap(),
        ],
    )
    .run_within(std::time::Duration::from_secs(120));
    out.expect_code(0);
    let p = read_batch(&tmp.join("b"))["first_penalty"].clone();
    let first = p["first_wall_ns"].as_f64().unwrap();
    let (lo, hi) = (
        p["warm_min_wall_ns"].as_f64().unwrap(),
        p["warm_max_wall_ns"].as_f64().unwrap(),
    );
    assert!(lo < first && first < hi, "strictly inside: {p}");
    assert_eq!(p["significant"], false, "{p}");
    assert_eq!(p["warm_runs"], 19, "{p}");
    let said = prose(&out.shown());
    assert!(
        said.contains("not distinguishable from the warm runs at n = 20 (19 warm runs")
            && said.contains("-n 40, or --cold-cycles 5 would decide"),
        "{}",
        out.shown()
    );
    assert_eq!(
        read_batch(&tmp.join("b"))["verdict"]["kind"],
        "not_distinguishable"
    );
    assert!(
        !said.contains("blocked"),
        "no parts as an explanation: {}",
        out.shown()
    );
}

#[test]
fn a_first_run_that_computes_is_penalised_in_cpu_time() {
    let tmp = TempDir::new("penalty-cpu");
    // 0.3 s of CPU time, however long the wall time on a loaded machine.
    let script = python_first(
        tmp.path(),
        "busy.py",
        "    while time.process_time() < 0.3:\n        pass",
    );
    let (p, _) = penalty_of(tmp.path(), &[&python(), &script]);
    assert!(p["basis"] == "tree" || p["basis"] == "schedstat", "{p}");
    let (cpu, blocked) = (ns(&p, "cpu_ns"), ns(&p, "blocked_ns"));
    assert!(cpu >= 200_000_000, "mostly CPU: {p}");
    assert!(cpu > blocked, "{p}");
    assert_eq!(
        cpu + ns(&p, "runqueue_ns") + blocked,
        ns(&p, "wall_ns"),
        "{p}"
    );
}

#[test]
fn a_two_thread_first_run_is_split_by_the_tree_or_by_its_main_thread_labelled() {
    let tmp = TempDir::new("penalty-threads");
    let script = python_first(
        tmp.path(),
        "threads.py",
        "    def spin():\n        while time.thread_time() < 0.2:\n            pass\n    \
         ts = [threading.Thread(target=spin) for _ in range(2)]\n    \
         [t.start() for t in ts]\n    [t.join() for t in ts]",
    );
    let (p, stderr) = penalty_of(tmp.path(), &[&python(), &script]);
    assert!(ns(&p, "rusage_cpu_ns") >= 300_000_000, "{p}");
    let said = prose(&stderr);
    if p["basis"] == "tree" {
        // As root: the two spinning threads are on a CPU (or wait for one) 200 ms or more.
        let busy = ns(&p["tree"], "on_cpu_ns") + ns(&p["tree"], "queued_ns");
        assert!(busy >= 190_000_000, "{p}");
        assert_eq!(p["tree"]["tasks"], 3, "the main thread and two: {p}");
    } else {
        // Without privilege: the main thread's parts, labelled, and the CPU of the rest.
        assert_eq!(p["basis"], "main thread", "{p}");
        assert!(ns(&p["tree"], "cpu_elsewhere_ns") >= 300_000_000, "{p}");
    }
    let total: i64 = ["cpu_ns", "runqueue_ns", "blocked_ns"]
        .iter()
        .map(|k| ns(&p, k))
        .sum();
    assert_eq!(
        total,
        ns(&p, "wall_ns"),
        "the main thread's parts add up: {p}"
    );
    // Said only of a first run that stands out (a loaded machine can hide 200 ms of wall time).
    if p["significant"] == true {
        let label = if p["basis"] == "tree" {
            "on a CPU"
        } else {
            "main thread only"
        };
        assert!(said.contains(label), "{stderr}");
    } else {
        assert!(
            said.contains("not distinguishable from the warm runs"),
            "{stderr}"
        );
    }
}

#[test]
fn without_a_warm_series_the_penalty_is_null_with_the_reason() {
    let tmp = TempDir::new("penalty-none");
    let data = tmp.join("DATA");
    std::fs::write(&data, vec![1u8; 4096]).unwrap();
    let out = ct(
        tmp.path(),
        [
            "run",
            "-n",
            "3",
            "-o",
            "b",
            "--evict",
            data.to_str().unwrap(),
            "--",
            "true",
        ],
    )
    .run();
    out.expect_code(0);
    let batch = read_batch(&tmp.join("b"));
    assert!(batch["first_penalty"].is_null());
    assert!(
        batch["first_penalty_unavailable"]
            .as_str()
            .unwrap()
            .contains("every counted run started cold"),
        "{batch:#}"
    );
    assert_eq!(batch["verdict"]["kind"], "every_run_cold", "{batch:#}");
    assert!(
        out.shown().contains("no first-run penalty"),
        "{}",
        out.describe()
    );
}

#[test]
fn a_cold_cat_of_64_mib_names_the_file_it_read_and_the_read_in_its_penalty() {
    let tmp = TempDir::new("paged-in");
    let file = tmp.join("data.bin");
    let mut bytes = vec![0u8; 64 << 20];
    for (i, b) in bytes.iter_mut().enumerate() {
        *b = (i * 7 + i / 4096) as u8;
    }
    std::fs::write(&file, &bytes).unwrap();
    std::fs::File::open(&file).unwrap().sync_all().unwrap();
    drop(bytes);
    let other = tmp.join("other.txt");
    std::fs::write(&other, b"not read").unwrap();
    let f = file.to_str().unwrap();
    let out = ct(
        tmp.path(),
        [
            "run",
            "-n",
            "3",
            "-o",
            "b",
            "--evict",
            f,
            "--watch",
            other.to_str().unwrap(),
            "--cold-first-only",
            "--",
            "cat",
            f,
        ],
    )
    .run_within(std::time::Duration::from_secs(120));
    out.expect_code(0);
    if coldtrace::measure::cache::is_tmpfs(tmp.path()) == Some(true) {
        panic!(
            "{} is on tmpfs: nothing can be evicted there",
            tmp.path().display()
        );
    }
    let runs = read_records(&tmp.join("b"));
    let top = &runs[0]["paged_in"][0];
    assert_eq!(top["path"], f, "{}", runs[0]["paged_in"]);
    assert!(top["bytes"].as_u64().unwrap() >= 60 << 20, "{top}");
    assert_eq!(
        runs[0]["paged_in"].as_array().unwrap().len(),
        1,
        "other.txt not read"
    );
    assert_eq!(runs[0]["cache"]["paged_in_files"], 1);
    // Warm runs read from the cache — unless something outside evicted pages (a shared
    // machine; another process may drop caches), which the batch then flags.
    let batch = read_batch(&tmp.join("b"));
    for warm in &runs[1..] {
        let disturbed = batch["anomalies"]
            .as_array()
            .unwrap()
            .iter()
            .any(|a| a["index"] == warm["index"]);
        if !disturbed {
            assert_eq!(warm["paged_in"], Value::Array(vec![]), "{warm}");
            assert_eq!(warm["cache"]["paged_in_bytes"], 0, "{warm}");
        }
    }
    // The whole list, largest first, beside the first run's outputs.
    let tsv = std::fs::read_to_string(tmp.join("b/runs/000/paged_in.tsv")).unwrap();
    let lines: Vec<&str> = tsv.lines().collect();
    assert_eq!(lines[0], "bytes\tpath");
    assert_eq!(lines[1], format!("{}\t{f}", top["bytes"]));
    assert_eq!(lines.len(), 2, "{tsv}");
    // The penalty's evidence shows the read; the table names the file.
    let evidence = &batch["first_penalty"]["evidence"];
    assert!(
        evidence["read_bytes"].as_i64().unwrap() >= 60 << 20,
        "{evidence}"
    );
    assert!(evidence["block_in"].as_i64().unwrap() * 512 >= 60 << 20);
    let text = prose(&out.shown());
    assert!(
        text.contains("into the page cache (1 file): data.bin 64 MiB"),
        "{}",
        out.describe()
    );
    // The read is part of an explanation only when the first run stands out of the warm runs
    // (on this VM a cold read is often served from the host's cache, as fast as a warm one).
    if batch["first_penalty"]["significant"] == true {
        assert!(text.contains("read from storage"), "{}", out.describe());
    }
    // What made it cold is named either way: coldtrace's own eviction, verified.
    let cause = &batch["first_cold_cause"];
    assert_eq!(cause["cause"], "evict", "{cause}");
    assert_eq!(cause["verified"], true, "{cause}");
    // The file's 64 MiB, and at most a few pages more (cat's own, or metadata).
    let read = figure_after(
        &text,
        "the first run was made cold by coldtrace's --evict (verified: 0.0 % of the evicted \
         files stayed cached); it read",
    );
    assert!(
        read.is_some_and(|b| (64.0 * 1048576.0..65.0 * 1048576.0).contains(&b)),
        "{}",
        out.describe()
    );
}

#[test]
fn a_warm_run_after_the_watched_file_was_evicted_between_runs_is_flagged() {
    let tmp = TempDir::new("disturbed");
    let file = tmp.join("F");
    std::fs::write(&file, vec![5u8; 8 << 20]).unwrap();
    std::fs::File::open(&file).unwrap().sync_all().unwrap();
    let f = file.to_str().unwrap();
    // --prepare counts its calls and, before the fourth run (#3) only, drops the file's
    // pages from outside coldtrace (GNU dd: "iflag=nocache count=0" drops the whole file).
    let prepare = format!(
        "n=$(cat {0}/count 2>/dev/null || echo 0); echo $((n+1)) > {0}/count; \
         [ \"$n\" = 3 ] && dd if='{f}' iflag=nocache count=0 status=none; true",
        tmp.path().display()
    );
    let out = ct(
        tmp.path(),
        [
            "run",
            "-n",
            "5",
            "-o",
            "b",
            "--watch",
            f,
            "--prepare",
            &prepare,
            "--",
            "cat",
            f,
        ],
    )
    .run_within(std::time::Duration::from_secs(60));
    out.expect_code(0);
    let runs = read_records(&tmp.join("b"));
    let kinds = |r: &Value| -> Vec<String> {
        r["anomalies"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| {
                format!(
                    "{}/{}",
                    a["kind"].as_str().unwrap(),
                    a["metric"].as_str().unwrap()
                )
            })
            .collect()
    };
    assert_eq!(
        kinds(&runs[3]),
        [
            "cached_before_fell/resident_bytes_before",
            "storage_reads/block_in"
        ],
        "{}",
        runs[3]
    );
    for i in [0, 1, 2, 4] {
        assert_eq!(
            kinds(&runs[i]),
            Vec::<String>::new(),
            "run {i}: {}",
            runs[i]
        );
    }
    let batch = read_batch(&tmp.join("b"));
    let listed: Vec<(u64, String)> = batch["anomalies"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            (
                a["index"].as_u64().unwrap(),
                a["anomaly"]["kind"].as_str().unwrap().into(),
            )
        })
        .collect();
    assert_eq!(
        listed,
        [
            (3, "cached_before_fell".into()),
            (3, "storage_reads".into())
        ],
        "{batch:#}"
    );
    let report = ct(tmp.path(), ["report", "--json", "b"]).run();
    assert_eq!(
        report.json()["batches"][0]["anomalies"],
        2,
        "{}",
        report.describe()
    );
    // Each fact once: the cached files that fell, as the run's anomaly; the read, where the
    // verdict says the run started cold, not again as an anomaly.
    let text = prose(&out.shown());
    assert!(
        text.contains("disturbed: warm run #3 started with")
            && text.contains("started cold: run #3: read 8.0 MiB from storage")
            && !text.contains("warm run #3 read"),
        "{}",
        out.describe()
    );
}

/// Rewrites `DIR/batch.json` with `edit`.
fn edit_batch(dir: &Path, edit: impl FnOnce(&mut Value)) {
    let mut doc = read_batch(dir);
    edit(&mut doc);
    std::fs::write(dir.join("batch.json"), doc.to_string()).unwrap();
}

#[test]
fn report_decides_an_older_batchs_verdict_by_the_same_function_and_never_makes_one_up() {
    let tmp = TempDir::new("report-penalty");
    for dir in ["v6", "v1"] {
        ct(
            tmp.path(),
            ["run", "-q", "-n", "3", "-o", dir, "--", "true"],
        )
        .run()
        .expect_code(0);
    }
    let own = |dir: &str| read_batch(&tmp.join(dir))["verdict"].clone();
    let (own_v6, own_v1) = (own("v6"), own("v1"));
    // Documents written before the verdict was stored: report decides it from the records.
    edit_batch(&tmp.join("v6"), |doc| {
        doc["schema"] = "coldtrace.batch/6".into();
        doc.as_object_mut().unwrap().remove("verdict");
    });
    edit_batch(&tmp.join("v1"), |doc| {
        doc["schema"] = "coldtrace.batch/1".into();
        let doc = doc.as_object_mut().unwrap();
        for key in ["verdict", "first_penalty", "first_penalty_unavailable"] {
            doc.remove(key);
        }
    });
    let out = ct(tmp.path(), ["report", "--json", "v6", "v1"]).run();
    out.expect_code(0);
    let rows = out.json()["batches"].clone();
    let row = |dir: &str| {
        rows.as_array()
            .unwrap()
            .iter()
            .find(|r| r["dir"] == dir)
            .unwrap_or_else(|| panic!("no row {dir}: {rows:#}"))
            .clone()
    };
    for (dir, own) in [("v6", own_v6), ("v1", own_v1)] {
        let decided = row(dir)["verdict"].clone();
        for key in [
            "kind",
            "states",
            "first_wall_ns",
            "counted",
            "reference_runs",
        ] {
            assert_eq!(
                decided[key], own[key],
                "{dir} {key}: {decided:#} against {own:#}"
            );
        }
        // A penalty only where the verdict found one.
        let penalty = row(dir)["first_penalty_ns"].clone();
        assert_eq!(
            penalty.is_null(),
            own["kind"] != "penalty",
            "{dir}: {penalty}"
        );
    }
}

#[test]
fn with_a_cold_action_before_every_run_the_runs_after_the_first_are_cold_not_warm() {
    let tmp = TempDir::new("every-run-cold");
    let data = tmp.join("DATA");
    std::fs::write(&data, vec![1u8; 64 << 10]).unwrap();
    let d = data.to_str().unwrap();
    let out = ct(
        tmp.path(),
        [
            "run", "-n", "3", "-o", "every", "--evict", d, "--", "cat", d,
        ],
    )
    .run_within(std::time::Duration::from_secs(60));
    out.expect_code(0);
    let roles: Vec<Value> = read_records(&tmp.join("every"))
        .iter()
        .map(|r| r["role"].clone())
        .collect();
    assert_eq!(roles, ["first", "cold", "cold"], "{}", out.describe());
    // The table's columns after "first" are titled cold; the ratio is first/cold.
    let header: Vec<String> = out
        .shown_lines()
        .into_iter()
        .skip_while(|l| !l.contains("first/"))
        .take(2)
        .collect();
    assert!(
        header.len() == 2
            && header.iter().all(|l| !l.contains("warm"))
            && header[0]
                .split_whitespace()
                .filter(|w| *w == "cold")
                .count()
                >= 2
            && header[1].trim_end().ends_with("cold"),
        "{}",
        out.describe()
    );
    assert!(
        prose(&out.shown()).contains(
            "every counted run started cold (coldtrace's cold action came before each): there \
             is no warm series to compare the first run with"
        ) && prose(&out.shown()).contains(", the 2 cold runs after it "),
        "{}",
        out.describe()
    );
    let batch = read_batch(&tmp.join("every"));
    assert!(batch["first_penalty"].is_null(), "{batch:#}");
    assert!(batch["first_penalty_unavailable"].is_string(), "{batch:#}");
    // report: no warm median, no ratio, no penalty, and a note that says why.
    let report = ct(tmp.path(), ["report", "--json", "every"]).run();
    report.expect_code(0);
    let row = &report.json()["batches"][0];
    for key in ["warm_median_wall_ns", "first_to_warm", "first_penalty_ns"] {
        assert!(row[key].is_null(), "{key}: {row}");
    }
    assert!(row["notes"].to_string().contains("no warm run"), "{row}");
    // A batch written before these runs had role cold (they said warm): batch.json's
    // cold_when still tells report that none of them was warm.
    let runs = tmp.join("every/runs.jsonl");
    let old = std::fs::read_to_string(&runs)
        .unwrap()
        .replace("\"role\":\"cold\"", "\"role\":\"warm\"");
    std::fs::write(&runs, old).unwrap();
    let report = ct(tmp.path(), ["report", "--json", "every"]).run();
    let row = &report.json()["batches"][0];
    assert!(row["warm_median_wall_ns"].is_null(), "{row}");
    assert!(row["first_penalty_ns"].is_null(), "{row}");
    // --cold-first-only keeps a warm series.
    let out = ct(
        tmp.path(),
        [
            "run",
            "-q",
            "-n",
            "3",
            "-o",
            "once",
            "--evict",
            d,
            "--cold-first-only",
            "--",
            "cat",
            d,
        ],
    )
    .run_within(std::time::Duration::from_secs(60));
    out.expect_code(0);
    let roles: Vec<Value> = read_records(&tmp.join("once"))
        .iter()
        .map(|r| r["role"].clone())
        .collect();
    assert_eq!(roles, ["first", "warm", "warm"]);
}
