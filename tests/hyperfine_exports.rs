//! The hyperfine exports against what hyperfine 2.0.0 itself writes (`tests/golden/
//! hyperfine-2.0.0/`, with the commands that made them): the same commands measured by
//! coldtrace give `--export-json`, `--export-markdown` and `--export-csv` files of the same
//! shape, field for field, whose figures agree with each other; and hyperfine 2.0.0's own
//! scripts (`scripts/*.py` of its crate source) read coldtrace's `--export-json`.
#![forbid(unsafe_code)]

mod common;

use common::{ct, TempDir};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

fn golden(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/hyperfine-2.0.0");
    std::fs::read_to_string(path.join(name)).unwrap()
}

/// Every key path of `v` with the kind of value there (`.results[].summary.time_cpu.mean:
/// number`), array elements sharing one `[]`, in document order, each once.
fn shape(v: &Value, prefix: &str, out: &mut Vec<String>) {
    let kind = match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    };
    let line = format!("{prefix}: {kind}");
    if !out.contains(&line) {
        out.push(line);
    }
    match v {
        Value::Object(map) => map
            .iter()
            .for_each(|(k, c)| shape(c, &format!("{prefix}.{k}"), out)),
        Value::Array(items) => items
            .iter()
            .for_each(|c| shape(c, &format!("{prefix}[]"), out)),
        _ => {}
    }
}

fn shape_of(v: &Value) -> Vec<String> {
    let mut out = Vec::new();
    shape(v, "", &mut out);
    out
}

/// The two batches of the golden files, measured by coldtrace: (tag, coldtrace's arguments).
const CASES: [(&str, &[&str]); 2] = [
    (
        "scan",
        &[
            "run",
            "-q",
            "-n",
            "5",
            "-w",
            "1",
            "-P",
            "n",
            "1",
            "2",
            "--command-name",
            "sleep {n}0 ms",
            "--",
            "sleep",
            "0.0{n}",
        ],
    ),
    (
        "failing",
        &["compare", "-q", "-n", "3", "-i", "sh -c \"exit 3\"", "true"],
    ),
];

/// coldtrace's three hyperfine exports of `case`, in `dir`.
fn exported(dir: &TempDir, tag: &str, args: &[&str]) -> (Value, String, String) {
    let (json, md, csv) = (
        format!("{tag}.json"),
        format!("{tag}.md"),
        format!("{tag}.csv"),
    );
    let mut all: Vec<&str> = args.to_vec();
    let at = all.iter().position(|a| *a == "--").unwrap_or(all.len() - 2);
    let exports = [
        "--export-json",
        &json,
        "--export-markdown",
        &md,
        "--export-csv",
        &csv,
    ];
    all.splice(at..at, exports);
    let out = ct(dir.path(), all).run();
    out.expect_code(0);
    let read = |f: &str| std::fs::read_to_string(dir.join(f)).unwrap();
    (
        serde_json::from_str(&read(&json)).unwrap(),
        read(&md),
        read(&csv),
    )
}

/// How many measurements come before the ones `summary` covers: 1 where the batch keeps its
/// first run apart (`summary_covers` says so, as coldtrace's screen does), else 0.
fn kept_apart(result: &Value) -> usize {
    let covers = result["summary_covers"].as_str().unwrap();
    usize::from(covers.starts_with("the runs after the first"))
}

/// The mean of `metric` over the measurements a result's `summary` covers, recomputed.
fn mean_of(result: &Value, metric: &str) -> f64 {
    let values: Vec<f64> = result["measurements"]
        .as_array()
        .unwrap()
        .iter()
        .skip(kept_apart(result))
        .map(|m| m[metric]["value"].as_f64().unwrap())
        .collect();
    values.iter().sum::<f64>() / values.len() as f64
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1e-12)
}

fn check_json(tag: &str, ours: &Value, theirs: &Value) {
    // Field for field: the same key paths with the same kinds of value, but for the version
    // of hyperfine, which did not run, and the one key of coldtrace's own, which says what
    // `summary` covers.
    let drop_version = |s: Vec<String>| -> Vec<String> {
        s.into_iter()
            .filter(|l| {
                !l.starts_with(".metadata.hyperfine_version")
                    && !l.starts_with(".results[].summary_covers")
            })
            .collect()
    };
    assert_eq!(
        drop_version(shape_of(ours)),
        drop_version(shape_of(theirs)),
        "{tag}: coldtrace's shape, then hyperfine 2.0.0's"
    );
    assert_eq!(ours["metadata"]["hyperfine_version"], Value::Null);
    for key in ["schema_version", "primary_metric"] {
        assert_eq!(ours[key], theirs[key], "{tag}: {key}");
    }
    let (a, b) = (
        ours["results"].as_array().unwrap(),
        theirs["results"].as_array().unwrap(),
    );
    assert_eq!(a.len(), b.len(), "{tag}");
    for (ours, theirs) in a.iter().zip(b) {
        for key in ["command", "name", "parameters"] {
            assert_eq!(ours[key], theirs[key], "{tag}: {key}");
        }
        let codes = |r: &Value| -> Vec<Value> {
            r["measurements"]
                .as_array()
                .unwrap()
                .iter()
                .map(|m| m["exit_code"].clone())
                .collect()
        };
        assert_eq!(codes(ours), codes(theirs), "{tag}: exit codes");
        // Every run's times are kept; the summary covers the runs the screen's figures cover.
        let apart = kept_apart(ours) as u64;
        assert_eq!(
            apart,
            u64::from(tag == "failing"),
            "{tag}: no warm-up, a first run"
        );
        for (metric, stat) in ours["summary"].as_object().unwrap() {
            let count = theirs["summary"][metric]["count"].as_u64().unwrap();
            assert_eq!(stat["count"], count - apart, "{tag}");
            assert_eq!(stat["unit"], theirs["summary"][metric]["unit"], "{tag}");
            let mean = stat["mean"].as_f64().unwrap();
            assert!(close(mean, mean_of(ours, metric)), "{tag}: {metric} {stat}");
        }
    }
}

/// `| `sleep 10 ms` | 14.2 ± 3.4 |  |  |` → its four cells.
fn cells(line: &str) -> Vec<String> {
    let inner = line.trim().trim_start_matches('|').trim_end_matches('|');
    inner.split(" | ").map(|c| c.trim().to_string()).collect()
}

fn check_markdown(tag: &str, ours: &str, theirs: &str, doc: &Value) {
    let (a, b): (Vec<&str>, Vec<&str>) = (ours.lines().collect(), theirs.lines().collect());
    assert_eq!(a.len(), b.len(), "{tag}:\n{ours}\n{theirs}");
    // The header (up to its unit, which follows the figures) and the divider.
    let unit_at = |l: &str| l.find('[').unwrap();
    assert_eq!(&a[0][..unit_at(a[0])], &b[0][..unit_at(b[0])], "{tag}");
    // hyperfine's columns, then a comparison's interval, then the first run's own where a
    // command keeps it apart.
    assert!(a[1].starts_with(b[1]), "{tag}: {}", a[1]);
    let apart = doc["results"]
        .as_array()
        .unwrap()
        .iter()
        .any(|r| kept_apart(r) == 1);
    assert_eq!(
        a[0].ends_with(" | First Run [ms] |")
            || a[0].ends_with(" | First Run [s] |")
            || a[0].ends_with(" | First Run [µs] |"),
        apart,
        "{tag}: {}",
        a[0]
    );
    let unit = &a[0][unit_at(a[0]) + 1..a[0].find(']').unwrap()];
    let scale = match unit {
        "s" => 1.0,
        "ms" => 1e-3,
        "µs" => 1e-6,
        other => panic!("{tag}: unit {other}"),
    };
    let results = doc["results"].as_array().unwrap();
    // A comparison's change and factor are of the ratio its screen gives: the medians of the
    // runs each summary covers, with that ratio's interval in a column of its own.
    let median = |r: &Value| r["summary"]["time_wall_clock"]["median"].as_f64().unwrap();
    let reference = median(&results[0]);
    let compared = results.len() > 1;
    assert_eq!(a[0].contains(" | 95% CI |"), compared, "{tag}: {}", a[0]);
    for ((line, theirs), result) in a[2..].iter().zip(&b[2..]).zip(results) {
        let (ours, theirs) = (cells(line), cells(theirs));
        assert_eq!(ours[0], theirs[0], "{tag}: the command cell");
        let wall = &result["summary"]["time_wall_clock"];
        let (mean, sd) = (
            wall["mean"].as_f64().unwrap(),
            wall["stddev"].as_f64().unwrap(),
        );
        let digits = if unit == "s" { 3 } else { 1 };
        let expected = format!("{:.digits$} ± {:.digits$}", mean / scale, sd / scale);
        assert_eq!(ours[1], expected, "{tag}: {line}");
        if kept_apart(result) == 1 {
            let first = result["measurements"][0]["time_wall_clock"]["value"].as_f64();
            let first = format!("{:.digits$}", first.unwrap() / scale);
            let at = 4 + usize::from(compared);
            assert_eq!(ours[at], first, "{tag}: the first run's own column: {line}");
        }
        // The first row has no change, factor or interval, as hyperfine's; the others say how
        // far from the first, in its words.
        if ours[0] == cells(a[2])[0] {
            assert_eq!((&ours[2][..], &ours[3][..]), ("", ""), "{tag}");
            assert!(!compared || ours[4].is_empty(), "{tag}: {line}");
        } else {
            let ratio = median(result) / reference;
            // A change that rounds to zero is written unsigned, whichever side of 1 the ratio
            // fell on (two runs of one command: "-0.0%" beside "+0.0%" says nothing).
            let change = format!("{:+.1}%", 100.0 * (ratio - 1.0));
            let change = match change.as_str() {
                "+0.0%" | "-0.0%" => "0.0%".to_string(),
                _ => change,
            };
            assert_eq!(ours[2], change, "{tag}");
            let far = ratio >= 1.3 || ratio <= 0.7;
            assert_eq!(!ours[3].is_empty(), far, "{tag}: {line}");
            // The words are hyperfine's (the figures are this run's).
            for factor in [&ours[3], &theirs[3]].into_iter().filter(|f| !f.is_empty()) {
                assert!(
                    factor.starts_with('(')
                        && (factor.ends_with("x slower)") || factor.ends_with("x faster)")),
                    "{tag}: {factor}"
                );
            }
            // Fewer than 5 runs each have no interval: a dash, as on the screen.
            let runs = wall["count"].as_u64().unwrap();
            let interval = &ours[4];
            assert_eq!(interval == "—", runs < 5, "{tag}: {line}");
            if runs >= 5 {
                let (lo, hi) = interval.split_once('–').unwrap();
                let (lo, hi): (f64, f64) = (lo.parse().unwrap(), hi.parse().unwrap());
                assert!(lo <= hi, "{tag}: {line}");
            }
        }
    }
}

fn check_csv(tag: &str, ours: &str, theirs: &str, doc: &Value) {
    let (a, b): (Vec<&str>, Vec<&str>) = (ours.lines().collect(), theirs.lines().collect());
    // hyperfine's header, then the first run's own columns where a command keeps it apart.
    assert!(a[0].starts_with(b[0]), "{tag}: the header");
    assert_eq!(a.len(), b.len(), "{tag}");
    let head: Vec<&str> = a[0].split(',').collect();
    let results = doc["results"].as_array().unwrap();
    for (row, result) in a[1..].iter().zip(results) {
        // The command may be quoted (RFC 4180); the figures are its last fields.
        let fields: Vec<&str> = row.rsplitn(head.len(), ',').collect::<Vec<_>>();
        let fields: Vec<&str> = fields.into_iter().rev().collect();
        for (name, value) in head.iter().zip(&fields).skip(1) {
            let Some((metric, stat)) = name.rsplit_once('_') else {
                continue;
            };
            if let Some(metric) = name.strip_prefix("first_run_") {
                let first = &result["measurements"][0][metric]["value"];
                let got: f64 = value.parse().unwrap();
                assert!(kept_apart(result) == 1 && close(got, first.as_f64().unwrap()));
                continue;
            }
            match (metric, stat) {
                ("parameter", _) | (_, "unit") => {}
                _ if metric.starts_with("parameter") => {
                    let key = name.trim_start_matches("parameter_");
                    assert_eq!(result["parameters"][key]["value"], *value, "{tag}");
                }
                _ => {
                    let want = result["summary"][metric][stat].as_f64().unwrap();
                    let got: f64 = value.parse().unwrap();
                    assert!(close(got, want), "{tag}: {name} {got} vs {want}");
                }
            }
        }
    }
}

#[test]
fn the_exports_are_hyperfine_2_0_s_field_for_field() {
    let dir = TempDir::new("hyperfine-golden");
    for (tag, args) in CASES {
        let (json, md, csv) = exported(&dir, tag, args);
        let theirs: Value = serde_json::from_str(&golden(&format!("{tag}.json"))).unwrap();
        check_json(tag, &json, &theirs);
        check_markdown(tag, &md, &golden(&format!("{tag}.md")), &json);
        check_csv(tag, &csv, &golden(&format!("{tag}.csv")), &json);
    }
}

/// hyperfine 2.0.0's `scripts/` in the crate source cargo keeps (`$CARGO_HOME/registry/src`),
/// fetched by cargo when it is not there yet (a throwaway package that depends on it).
fn hyperfine_scripts() -> PathBuf {
    let home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cargo")))
        .expect("CARGO_HOME or HOME");
    let find = || {
        std::fs::read_dir(home.join("registry/src"))
            .ok()?
            .find_map(|index| {
                let scripts = index.ok()?.path().join("hyperfine-2.0.0/scripts");
                scripts.join("plot_utils.py").is_file().then_some(scripts)
            })
    };
    if let Some(found) = find() {
        return found;
    }
    let tmp = TempDir::new("fetch-hyperfine");
    std::fs::create_dir(tmp.join("src")).unwrap();
    std::fs::write(tmp.join("src/lib.rs"), "").unwrap();
    std::fs::write(
        tmp.join("Cargo.toml"),
        "[package]\nname = \"fetch-hyperfine\"\nversion = \"0.0.0\"\nedition = \"2021\"\n\
         [workspace]\n[dependencies]\nhyperfine = \"=2.0.0\"\n",
    )
    .unwrap();
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let fetched = Command::new(cargo)
        .arg("fetch")
        .current_dir(tmp.path())
        .output()
        .expect("run cargo fetch");
    assert!(
        fetched.status.success(),
        "cargo could not fetch hyperfine 2.0.0's source (its scripts are what this test runs): {}",
        String::from_utf8_lossy(&fetched.stderr)
    );
    find().expect("hyperfine 2.0.0's scripts after cargo fetch")
}

/// A Python 3 that has the modules hyperfine's scripts import, or why there is none.
fn python() -> Result<&'static str, String> {
    let modules = "import numpy, matplotlib, scipy";
    let mut tried = Vec::new();
    for candidate in ["python3", "/usr/bin/python3"] {
        match Command::new(candidate).args(["-c", modules]).output() {
            Ok(out) if out.status.success() => return Ok(candidate),
            Ok(out) => tried.push(format!(
                "{candidate}: {}",
                String::from_utf8_lossy(&out.stderr)
                    .lines()
                    .last()
                    .unwrap_or("")
            )),
            Err(e) => tried.push(format!("{candidate}: {e}")),
        }
    }
    Err(tried.join("; "))
}

#[test]
fn hyperfine_s_own_scripts_read_the_export() {
    let python = match python() {
        Ok(python) => python,
        Err(why) => {
            println!("skipped: no python3 with numpy, matplotlib and scipy ({why})");
            return;
        }
    };
    let scripts = hyperfine_scripts();
    let dir = TempDir::new("hyperfine-scripts");
    let (_, args) = CASES[0];
    exported(&dir, "scan", args);
    let runs: [(&str, &[&str]); 7] = [
        ("advanced_statistics.py", &[]),
        ("welch_ttest.py", &[]),
        ("plot_whisker.py", &["-o", "whisker.png"]),
        ("plot_histogram.py", &["-o", "histogram.png"]),
        ("plot_progression.py", &["-o", "progression.png"]),
        ("plot_parametrized.py", &["-o", "parametrized.png"]),
        ("plot_benchmark_comparison.py", &["-o", "comparison.png"]),
    ];
    for (script, extra) in runs {
        let out = Command::new(python)
            .arg(scripts.join(script))
            .arg("scan.json")
            .args(extra)
            .env("MPLBACKEND", "Agg")
            .current_dir(dir.path())
            .output()
            .unwrap();
        let said = format!(
            "{script}: {:?}\n{}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out.status.success(), "{said}");
        if let Some(png) = extra.get(1) {
            let bytes = std::fs::read(dir.join(png)).unwrap_or_default();
            assert!(
                bytes.starts_with(b"\x89PNG") && bytes.len() > 5000,
                "{said}"
            );
        }
        if script == "advanced_statistics.py" {
            // It names every command and its figures (both are coldtrace's).
            assert!(
                said.contains("sleep 10 ms") && said.contains("sleep 20 ms"),
                "{said}"
            );
        }
    }
}

#[test]
fn export_json_is_hyperfine_s_and_says_once_where_coldtrace_s_own_went() {
    let dir = TempDir::new("export-json-flags");
    let export = |flag: &str, file: &str| {
        let out = ct(dir.path(), ["run", "-n", "2", flag, file, "--", "true"]).run();
        out.expect_code(0);
        let doc: Value = serde_json::from_str(&std::fs::read_to_string(dir.join(file)).unwrap())
            .unwrap_or_else(|e| panic!("{file}: {e}{}", out.describe()));
        (doc, out)
    };
    let notice = "coldtrace: --export-json is hyperfine's now, coldtrace's --export-coldtrace-json";
    assert!(notice.chars().count() <= 80);
    let (doc, out) = export("--export-json", "a.json");
    assert_eq!(
        doc["results"][0]["measurements"].as_array().map(Vec::len),
        Some(2)
    );
    let said = out.stderr_lines().iter().filter(|l| **l == notice).count();
    assert_eq!(said, 1, "{}", out.describe());
    // hyperfine's document under its older name too, without the notice.
    let (alias, out) = export("--export-hyperfine-json", "b.json");
    assert_eq!(shape_of(&alias), shape_of(&doc));
    assert!(
        !out.stderr.contains("--export-coldtrace-json"),
        "{}",
        out.describe()
    );
    let (own, out) = export("--export-coldtrace-json", "c.json");
    assert_eq!(own["schema"], "coldtrace.export/1", "{}", out.describe());
    assert!(
        !out.stderr.contains("hyperfine's now"),
        "{}",
        out.describe()
    );
}
