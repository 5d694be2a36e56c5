//! The exports, round-tripped: the per-run CSV parsed by Python's `csv` module, every cell equal
//! to the record in `runs.jsonl` at the place its header names, no column empty (and the warm
//! medians of its columns equal to batch.json's summary); the JSON export equal to batch.json
//! and runs.jsonl; hyperfine's document, Markdown and summary CSV from the counted runs (their
//! shape against hyperfine's own files is `hyperfine_exports.rs`'s); a bad export path refused
//! before any run; `run --json` never mixed with the command's stdout; schema fields on every
//! document.
#![forbid(unsafe_code)]

mod common;

use common::{ct, read_batch, read_records, TempDir};
use serde_json::Value;
use std::path::Path;
use std::process::Command;

/// Checks `csv_path` against `jsonl_paths` (one per command, in order) with Python's csv module;
/// prints a JSON verdict: rows, columns, mismatches, and each metric's warm median per command.
const CHECK_CSV: &str = r#"
import csv, json, statistics, sys
csv_path, jsonl_paths = sys.argv[1], sys.argv[2:]
records = [[json.loads(l) for l in open(p)] for p in jsonl_paths]
with open(csv_path, newline="") as f:
    rows = list(csv.reader(f))
header, body = rows[0], rows[1:]
def at(record, path):
    keys = path.split(".")
    if keys[0] == "counters":
        for c in record.get("counters") or []:
            if c["event"] == keys[1]:
                return c[keys[2] if len(keys) > 2 else "value"]
        return None
    v = record
    for k in keys:
        v = v.get(k) if isinstance(v, dict) else None
    return v
# Every numeric leaf of a record, by its place: keys through objects; a perf reading by its
# event (`counters.EVENT` its value, `counters.EVENT.FIELD` its other numbers). The other lists
# (argv, the files paged in, anomalies, the files that stayed cached) are named, not columns.
LISTS = {"argv", "paged_in", "page_ins.top", "page_ins.written.top", "anomalies", "cold_action.stayed_cached.top", "survivors.processes"}
def leaves(v, path, out, lists):
    if isinstance(v, dict):
        for k, x in v.items():
            leaves(x, f"{path}.{k}" if path else k, out, lists)
    elif path == "counters" and isinstance(v, list):
        for c in v:
            for k, x in c.items():
                if isinstance(x, (int, float)) and not isinstance(x, bool):
                    out[f"counters.{c['event']}" + ("" if k == "value" else f".{k}")] = x
    elif isinstance(v, list):
        lists.add(path)
    elif isinstance(v, (int, float)) and not isinstance(v, bool):
        out[path] = v
RUN_COLUMNS = {"command", "index", "role", "counted", "failure_reason", "started_at"}
metric_cols = [i for i, h in enumerate(header) if h not in RUN_COLUMNS]
paths = {header[j]: j for j in metric_cols}
empty_columns = [h for j, h in enumerate(header) if all(row[j] == "" for row in body)]
missing, lists, leaf_count = [], set(), 0
mismatches, medians, i = [], {}, 0
commands = []
for row in body:
    if not commands or commands[-1][0] != row[0]:
        commands.append((row[0], len(commands)))
    c = commands[-1][1]
    rec = next(r for r in records[c] if str(r["index"]) == row[1])
    for k in ("role", "started_at"):
        if row[header.index(k)] != rec[k]:
            mismatches.append((row[1], k))
    if row[header.index("counted")] != ("true" if rec["counted"] else "false"):
        mismatches.append((row[1], "counted"))
    for j in metric_cols:
        path = header[j]
        want = at(rec, path)
        got = None if row[j] == "" else float(row[j])
        if (want is None) != (got is None) or (want is not None and float(want) != got):
            mismatches.append((row[1], header[j], row[j], want))
        if rec["role"] == "warm" and rec["counted"] and got is not None:
            medians.setdefault(f"{c}|{path}", []).append(got)
    found = {}
    leaves(rec, "", found, lists)
    leaf_count += len(found)
    for path, want in found.items():
        if path == "index":
            continue
        j = paths.get(path)
        if j is None:
            missing.append(path)
        elif row[j] == "" or float(row[j]) != float(want):
            mismatches.append((row[1], path, row[j], want))
print(json.dumps({
    "rows": len(body), "columns": len(header), "header": header, "mismatches": mismatches[:10],
    "empty_columns": empty_columns,
    "missing": sorted(set(missing)), "leaves": leaf_count, "other_lists": sorted(lists - LISTS),
    "warm_medians": {k: statistics.median(v) for k, v in medians.items()},
}))
"#;

fn check_csv(dir: &Path, csv: &str, jsonl: &[&str]) -> Value {
    let out = Command::new("python3")
        .arg("-c")
        .arg(CHECK_CSV)
        .arg(csv)
        .args(jsonl)
        .current_dir(dir)
        .output()
        .expect("python3 runs");
    assert!(
        out.status.success(),
        "python3 failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("the checker's verdict")
}

/// The verdict says every row matches its record and every numeric leaf of every record has
/// its column.
fn assert_csv_complete(v: &Value, rows: usize) {
    assert_eq!(v["rows"], rows, "{v}");
    assert_eq!(v["mismatches"], Value::Array(vec![]), "{v}");
    assert_eq!(
        v["missing"],
        Value::Array(vec![]),
        "leaves without a column: {v}"
    );
    assert_eq!(
        v["other_lists"],
        Value::Array(vec![]),
        "a new list in the record: {v}"
    );
    assert!(v["leaves"].as_u64().unwrap() > 0, "{v}");
    assert_eq!(
        v["empty_columns"],
        Value::Array(vec![]),
        "all-empty columns: {v}"
    );
}

/// The same figure, read back: serde_json's default float parser may land one unit in the
/// last place off the number written.
fn same(a: f64, b: f64) -> bool {
    (a - b).abs() <= a.abs().max(b.abs()) * 1e-15
}

fn doc(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).expect("the export")).expect("JSON")
}

#[test]
fn every_export_of_a_batch_round_trips_to_its_records() {
    let tmp = TempDir::new("exports");
    std::fs::write(tmp.join("data"), vec![7u8; 16 * 1024]).unwrap();
    let out = ct(
        tmp.path(),
        [
            "run",
            "-n",
            "5",
            "--warmup",
            "1",
            "-o",
            "b",
            "--keep-output",
            "--counters",
            "--evict",
            "data",
            "--cold-first-only",
            "--export-csv-runs",
            "runs.csv",
            "--export-csv",
            "summary.csv",
            "--export-coldtrace-json",
            "all.json",
            "--export-json",
            "hf.json",
            "--export-markdown",
            "table.md",
            "--",
            "sh",
            "-c",
            "echo 'a, \"quoted\" line'; exit 0",
        ],
    )
    .run();
    out.expect_code(0);
    let records = read_records(&tmp.join("b"));
    let batch = read_batch(&tmp.join("b"));

    let v = check_csv(tmp.path(), "runs.csv", &["b/runs.jsonl"]);
    assert_csv_complete(&v, records.len());
    let header: Vec<&str> = v["header"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h.as_str().unwrap())
        .collect();
    for plain in [
        "wall_ns",
        "rusage.user_us",
        "rusage.max_rss_kib",
        "rusage.block_in",
        "counters.task-clock",
        "counters.task-clock.time_running_ns",
        "sched.on_cpu_ns",
        "sched.timeslices",
        "child_io.write_bytes",
        "system_delta.window_ns",
        "cache.before.resident_bytes",
        "cache.paged_in_bytes",
        "cold_action.took_ns",
        "artifacts.stdout_bytes",
        "runner.vm_hwm_kib",
    ] {
        assert!(header.contains(&plain), "{plain} in {header:?}");
    }
    // No run failed: no failure_reason column.
    assert!(!header.contains(&"failure_reason"), "{header:?}");
    // Every metric column's warm median is batch.json's: the export reads the same values the
    // summary was made of.
    let mut checked = 0;
    for (key, median) in v["warm_medians"].as_object().unwrap() {
        let path: Vec<&str> = key.split('|').nth(1).unwrap().split('.').collect();
        let name = match path.as_slice() {
            ["cache", when, "resident_ratio"] => format!("resident_ratio_{when}"),
            [name] | [_, name] => name.to_string(),
            _ => continue,
        };
        if batch["summary"].get(&name).is_none() {
            continue; // not a summarised metric
        }
        let summary = &batch["summary"][&name]["warm"]["median"];
        assert_eq!(
            summary.as_f64(),
            median.as_f64(),
            "{name}: {summary} vs {median}"
        );
        checked += 1;
    }
    assert!(checked >= 10, "{v}");

    let all = doc(&tmp.join("all.json"));
    assert_eq!(all["schema"], "coldtrace.export/1");
    assert_eq!(all["batch"], batch);
    assert_eq!(all["runs"], Value::Array(records.clone()));

    let hf = doc(&tmp.join("hf.json"));
    assert_eq!(hf["schema_version"], 2);
    let result = &hf["results"][0];
    let counted: Vec<&Value> = records.iter().filter(|r| r["counted"] == true).collect();
    let walls: Vec<f64> = counted
        .iter()
        .map(|r| r["wall_ns"].as_f64().unwrap() / 1e9)
        .collect();
    let measured: Vec<f64> = result["measurements"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["time_wall_clock"]["value"].as_f64().unwrap())
        .collect();
    assert_eq!(measured.len(), walls.len(), "{result}");
    for (m, w) in measured.iter().zip(&walls) {
        assert!(same(*m, *w), "{m} vs {w}: {result}");
    }
    let codes: Vec<&Value> = result["measurements"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| &m["exit_code"])
        .collect();
    assert_eq!(codes, [&Value::from(0); 5]);
    let user_s = counted[0]["rusage"]["user_us"].as_f64().unwrap() / 1e6;
    let first = &result["measurements"][0];
    assert!(same(first["time_user"]["value"].as_f64().unwrap(), user_s));
    let kib = counted[0]["rusage"]["max_rss_kib"].as_f64().unwrap();
    assert_eq!(
        first["memory_peak_resident"]["value"].as_f64(),
        Some(kib * 1024.0)
    );
    // The summary covers the runs after the first, which the batch keeps apart (a cold action
    // made it first, after the warm-up), as the screen's columns do; measurements keep it.
    let warm = &walls[1..];
    let mean = warm.iter().sum::<f64>() / warm.len() as f64;
    let wall = &result["summary"]["time_wall_clock"];
    assert!(
        (wall["mean"].as_f64().unwrap() - mean).abs() < 1e-12,
        "{result}"
    );
    assert_eq!(wall["count"], 4);
    assert!(result["summary_covers"]
        .as_str()
        .unwrap()
        .starts_with("the runs after the first (measurements[1..])"));
    assert_eq!(
        result["command"],
        "sh -c 'echo '\\''a, \"quoted\" line'\\''; exit 0'"
    );

    // hyperfine's Markdown and summary CSV, of the same figures.
    let md = std::fs::read_to_string(tmp.join("table.md")).unwrap();
    let mut lines = md.lines();
    assert!(
        lines
            .next()
            .unwrap()
            .starts_with("| Command | Mean Wall Time ["),
        "{md}"
    );
    // hyperfine's columns, then the first run's own.
    assert_eq!(lines.next(), Some("|:---|---:|---:|:---|---:|"), "{md}");
    let row = lines.next().unwrap();
    assert!(
        row.starts_with("| `` sh -c 'echo ") || row.starts_with("| `sh -c"),
        "{md}"
    );
    assert!(
        row.contains(" |  |  | "),
        "the first command has no change: {md}"
    );
    let summary = std::fs::read_to_string(tmp.join("summary.csv")).unwrap();
    let rows: Vec<&str> = summary.lines().collect();
    assert_eq!(rows.len(), 2, "{summary}");
    assert!(rows[0].starts_with("command,time_wall_clock_unit,time_wall_clock_mean,"));
    assert!(
        rows[0].ends_with(",first_run_time_wall_clock,first_run_memory_peak_resident"),
        "{summary}"
    );
    let first_cell: f64 = rows[1].split(',').rev().nth(1).unwrap().parse().unwrap();
    assert!(same(first_cell, walls[0]), "{first_cell}: {summary}");
    let mean_cell: f64 = rows[1].split(',').rev().nth(12).unwrap().parse().unwrap();
    // The same figure (serde_json's default parser may read it one unit in the last place off).
    let json_mean = wall["mean"].as_f64().unwrap();
    assert!(
        same(mean_cell, json_mean),
        "{mean_cell} vs {json_mean}: {summary}"
    );
}

#[test]
fn a_comparison_exports_every_command() {
    let tmp = TempDir::new("exports-cmp");
    let out = ct(
        tmp.path(),
        [
            "compare",
            "-n",
            "3",
            "-o",
            "c",
            "--export-csv-runs",
            "c.csv",
            "--export-coldtrace-json",
            "c.json",
            "--export-markdown",
            "c.md",
            "--export-json",
            "hf.json",
            "true",
            "sh -c true",
        ],
    )
    .run();
    out.expect_code(0);
    let v = check_csv(
        tmp.path(),
        "c.csv",
        &["c/commands/00/runs.jsonl", "c/commands/01/runs.jsonl"],
    );
    assert_csv_complete(&v, 6);
    assert!(v["header"]
        .as_array()
        .unwrap()
        .contains(&Value::from("slot.round")));
    let all = doc(&tmp.join("c.json"));
    assert_eq!(all["schema"], "coldtrace.export/1");
    assert_eq!(all["comparison"], read_batch(&tmp.join("c")));
    assert_eq!(
        all["commands"][1]["batch"],
        read_batch(&tmp.join("c/commands/01"))
    );
    assert_eq!(
        all["commands"][1]["runs"],
        Value::Array(read_records(&tmp.join("c/commands/01")))
    );
    let hf = doc(&tmp.join("hf.json"));
    let names: Vec<&str> = hf["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["command"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["true", "sh -c true"]);
    let md = std::fs::read_to_string(tmp.join("c.md")).unwrap();
    let commands: Vec<&str> = md
        .lines()
        .skip(2)
        .map(|l| l.split(" | ").next().unwrap())
        .collect();
    assert_eq!(commands, ["| `true`", "| `sh -c true`"], "{md}");
}

#[test]
fn an_export_that_cannot_be_written_is_refused_before_any_run() {
    let tmp = TempDir::new("exports-bad");
    std::fs::create_dir(tmp.join("a-dir")).unwrap();
    for (flag, path, says) in [
        (
            "--export-csv",
            "missing/dir/x.csv",
            "its directory does not exist",
        ),
        ("--export-json", "a-dir", "is a directory"),
        ("--export-markdown", "", "expected a file name"),
    ] {
        let out = ct(
            tmp.path(),
            ["run", "-n", "2", "-o", "b", flag, path, "--", "true"],
        )
        .run();
        out.expect_code(125);
        assert!(
            out.stderr.contains(flag) && out.stderr.contains(says),
            "{}",
            out.describe()
        );
        assert_eq!(out.stderr.lines().count(), 1, "{}", out.describe());
        assert!(!tmp.join("b").exists(), "nothing ran");
    }
}

#[test]
fn run_json_never_mixes_the_commands_stdout_into_the_json() {
    let tmp = TempDir::new("json-stdout");
    let out = ct(tmp.path(), ["run", "-n", "1", "--json", "--", "echo", "hi"]).run();
    out.expect_code(0);
    let record = out.json();
    assert_eq!(record["schema"], coldtrace::record::RUN_SCHEMA);
    assert!(out.stderr.starts_with("hi\n"), "{}", out.describe());
    let batch = ct(
        tmp.path(),
        [
            "run", "-n", "2", "--json", "--output", "inherit", "--", "echo", "hi",
        ],
    )
    .run();
    batch.expect_code(0);
    assert_eq!(batch.json()["schema"], coldtrace::record::BATCH_SCHEMA);
    let his = batch.stderr.lines().filter(|l| *l == "hi").count();
    assert_eq!(his, 2, "{}", batch.describe());
}

#[test]
fn every_json_document_names_its_schema() {
    let tmp = TempDir::new("schemas");
    ct(
        tmp.path(),
        ["run", "-n", "2", "-q", "-o", "b", "--", "true"],
    )
    .run()
    .expect_code(0);
    let report = ct(tmp.path(), ["report", "--json", "b"]).run();
    report.expect_code(0);
    assert_eq!(report.json()["schema"], "coldtrace.report/1");
    assert_eq!(report.json()["batches"][0]["counted"], 2);
    let context = ct(tmp.path(), ["context", "--json"]).run();
    context.expect_code(0);
    assert_eq!(context.json()["schema"], "coldtrace.context/1");
    let batch = read_batch(&tmp.join("b"));
    assert_eq!(batch["summary"]["block_in"]["unit"], "512-byte blocks");
    assert_eq!(batch["summary"]["minor_faults"]["unit"], "count");
}
