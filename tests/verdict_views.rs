//! One batch and one comparison through every view and export: the table under `run`, `report`
//! (its group line, its penalty column, `--json`), the picture (`--svg`, `--html`), and the
//! Markdown, CSV and hyperfine-shaped JSON exports say the same verdict, stored once in
//! `batch.json`, and the same figures — the warm runs' where the batch keeps its first run
//! apart, with the first run in columns of its own.
#![forbid(unsafe_code)]

mod common;

use coldtrace::record::verdict::{Kind, Verdict};
use common::{ct, prose, read_batch, TempDir};
use serde_json::Value;

/// The text of an SVG or HTML document, tags dropped, entities read, whitespace made one space.
fn page_text(doc: &str) -> String {
    let mut text = String::new();
    let mut in_tag = false;
    for c in doc.chars() {
        match c {
            '<' => in_tag = true,
            '>' => {
                in_tag = false;
                text.push(' ');
            }
            _ if !in_tag => text.push(c),
            _ => {}
        }
    }
    let text = text
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&apos;", "'")
        .replace("&amp;", "&");
    prose(&text)
}

/// The verdict's sentences in full, as every view says them, one line each.
fn full_sentences(verdict: &Verdict) -> Vec<String> {
    coldtrace::view::verdict::full(verdict, None)
        .iter()
        .map(|n| prose(&n.plain_text().replace('\u{a0}', " ")))
        .collect()
}

#[test]
fn one_batch_says_one_verdict_and_one_set_of_figures_in_every_view_and_export() {
    let tmp = TempDir::new("verdict-views");
    let data = tmp.join("data");
    std::fs::write(&data, vec![3u8; 8 << 20]).unwrap();
    let d = data.display().to_string();
    let out = ct(
        tmp.path(),
        [
            "run",
            "-n",
            "5",
            "-o",
            "b",
            "--evict",
            &d,
            "--cold-first-only",
            "--export-markdown",
            "b.md",
            "--export-csv",
            "b.csv",
            "--export-json",
            "b.json",
            "--",
            "cat",
            &d,
        ],
    )
    .run_within(std::time::Duration::from_secs(120));
    out.expect_code(0);
    let batch = read_batch(&tmp.join("b"));
    let verdict = Verdict::from_json(&batch["verdict"]).expect("batch.json has a verdict");
    assert_eq!(verdict.first_index, Some(0), "{batch:#}");
    let sentences = full_sentences(&verdict);
    assert!(!sentences.is_empty(), "{verdict:?}");

    // The table under `run`: every sentence of the verdict, whole.
    let shown = prose(&out.shown());
    for s in &sentences {
        assert!(
            shown.contains(s.as_str()),
            "run's table lacks «{s}»:\n{}",
            out.shown()
        );
    }

    // report: the group line says the one line; the penalty column the same decision.
    let report = ct(tmp.path(), ["report", "b"]).env("COLUMNS", "200").run();
    report.expect_code(0);
    let one_line = coldtrace::view::verdict::one_line(&verdict)
        .unwrap()
        .replace('\u{a0}', " ");
    assert!(
        prose(&report.stdout).contains(&one_line),
        "{}",
        report.stdout
    );
    let row_line = report.stdout.lines().find(|l| l.starts_with("b ")).unwrap();
    match verdict.kind {
        Kind::Penalty => assert!(row_line.contains(" +"), "{row_line}"),
        _ => assert!(row_line.contains(" n.d. "), "{row_line}"),
    }
    let json = ct(tmp.path(), ["report", "--json", "b"]).run();
    let row = &json.json()["batches"][0];
    assert_eq!(row["verdict"]["kind"], batch["verdict"]["kind"], "{row}");
    assert_eq!(
        row["verdict"]["states"], batch["verdict"]["states"],
        "{row}"
    );

    // The picture: every sentence whole, in the SVG and in the HTML.
    for flag in ["--svg", "--html"] {
        let file = tmp.join(format!("picture{flag}"));
        ct(tmp.path(), ["report", flag, file.to_str().unwrap(), "b"])
            .run()
            .expect_code(0);
        let text = page_text(&std::fs::read_to_string(&file).unwrap());
        for s in &sentences {
            assert!(text.contains(s.as_str()), "{flag} lacks «{s}»:\n{text}");
        }
    }

    // The exports: the warm runs' figures, as the table's columns, and the first run apart.
    let wall = &batch["summary"]["wall_ns"];
    let (warm_mean_s, first_s) = (
        wall["warm"]["mean"].as_f64().unwrap() / 1e9,
        wall["first"]["median"].as_f64().unwrap() / 1e9,
    );
    let hf: Value =
        serde_json::from_str(&std::fs::read_to_string(tmp.join("b.json")).unwrap()).unwrap();
    let result = &hf["results"][0];
    let summary = &result["summary"]["time_wall_clock"];
    assert!(
        (summary["mean"].as_f64().unwrap() - warm_mean_s).abs() < 1e-9,
        "{result}"
    );
    assert_eq!(summary["count"], 4, "{result}");
    let measurements = result["measurements"].as_array().unwrap();
    assert_eq!(
        measurements.len(),
        5,
        "every run's times are kept: {result}"
    );
    let first_measured = measurements[0]["time_wall_clock"]["value"]
        .as_f64()
        .unwrap();
    assert!((first_measured - first_s).abs() < 1e-9, "{result}");
    let csv = std::fs::read_to_string(tmp.join("b.csv")).unwrap();
    let (head, row) = csv.split_once('\n').unwrap();
    // The command (`cat PATH`) has no comma: one field per header.
    let cells: Vec<(&str, &str)> = head.split(',').zip(row.trim_end().split(',')).collect();
    let cell = |name: &str| -> f64 {
        let found = cells.iter().find(|(h, _)| *h == name);
        found
            .unwrap_or_else(|| panic!("{name}: {csv}"))
            .1
            .parse()
            .unwrap()
    };
    assert!(
        (cell("time_wall_clock_mean") - warm_mean_s).abs() < 1e-9,
        "{csv}"
    );
    assert!(
        (cell("first_run_time_wall_clock") - first_s).abs() < 1e-9,
        "{csv}"
    );
    let md = std::fs::read_to_string(tmp.join("b.md")).unwrap();
    let line = md.lines().nth(2).unwrap();
    let unit = md.lines().next().unwrap();
    let scale = if unit.contains("[ms]") {
        1e-3
    } else if unit.contains("[s]") {
        1.0
    } else {
        1e-6
    };
    let digits = if scale == 1.0 { 3 } else { 1 };
    assert!(
        line.contains(&format!(" {:.digits$} ± ", warm_mean_s / scale))
            && line
                .trim_end()
                .ends_with(&format!(" {:.digits$} |", first_s / scale)),
        "{md}"
    );
}

#[test]
fn a_comparison_says_the_same_warm_figures_on_screen_and_in_its_exports() {
    let tmp = TempDir::new("verdict-views-compare");
    let out = ct(
        tmp.path(),
        [
            "compare",
            "-n",
            "6",
            "-o",
            "c",
            "--export-markdown",
            "c.md",
            "--export-json",
            "c.json",
            "sleep 0.02",
            "sleep 0.04",
        ],
    )
    .run_within(std::time::Duration::from_secs(120));
    out.expect_code(0);
    let hf: Value =
        serde_json::from_str(&std::fs::read_to_string(tmp.join("c.json")).unwrap()).unwrap();
    let md = std::fs::read_to_string(tmp.join("c.md")).unwrap();
    let shown = prose(&out.shown());
    // The screen's line under the table: each command's warm mean ± σ.
    let at = shown
        .find("wall time of the warm runs, mean ± σ:")
        .unwrap_or_else(|| panic!("{shown}"));
    let means = &shown[at..];
    for (i, result) in hf["results"].as_array().unwrap().iter().enumerate() {
        let summary = &result["summary"]["time_wall_clock"];
        assert_eq!(summary["count"], 5, "the first run kept apart: {result}");
        let mean_ms = summary["mean"].as_f64().unwrap() * 1e3;
        // The screen's figure, in ms, to its own precision.
        let figure: f64 = means
            .split(&format!("[{i}] "))
            .nth(1)
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|f| f.parse().ok())
            .unwrap_or_else(|| panic!("[{i}] in {means}"));
        assert!(
            (figure - mean_ms).abs() < 0.1,
            "[{i}] {figure} vs {mean_ms}: {means}"
        );
        let md_line = md.lines().nth(2 + i).unwrap();
        assert!(
            md_line.contains(&format!(" {mean_ms:.1} ± ")),
            "[{i}] {mean_ms:.1} in {md}"
        );
    }
    // The ratio and its interval: one computation (the comparison's, in c/batch.json), the
    // screen's table and the Markdown's change, factor and interval say it.
    let doc = read_batch(&tmp.join("c"));
    let wall = doc["comparison"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["metric"] == "wall_ns")
        .unwrap();
    let r = &wall["commands"][1];
    let ratio = r["ratio_to_first"].as_f64().unwrap();
    let (lo, hi) = (
        r["ci_low"].as_f64().unwrap(),
        r["ci_high"].as_f64().unwrap(),
    );
    let interval = coldtrace::record::compare::interval_text(lo, hi);
    let screen = out.shown();
    let row = screen
        .lines()
        .find(|l| l.trim_start().starts_with("wall "))
        .unwrap_or_else(|| panic!("{screen}"));
    assert!(
        row.contains(&coldtrace::view::units::ratio(ratio)) && row.contains(&interval),
        "{ratio} {interval} on the screen: {row}"
    );
    let cells: Vec<&str> = md.lines().nth(3).unwrap().split(" | ").collect();
    assert_eq!(cells[2], format!("{:+.1}%", 100.0 * (ratio - 1.0)), "{md}");
    assert_eq!(cells[3].is_empty(), (0.7..1.3).contains(&ratio), "{md}");
    if !cells[3].is_empty() {
        let by = if ratio < 1.0 { 1.0 / ratio } else { ratio };
        assert!(cells[3].starts_with(&format!("({by:.1}x ")), "{md}");
    }
    assert_eq!(cells[4], interval, "{md}");
    assert!(
        md.lines().next().unwrap().contains(" | Factor | 95% CI | "),
        "{md}"
    );
}

/// A file of 8 MiB, written and synced so that its pages can be dropped, and a `--prepare`
/// command that drops them (`posix_fadvise(POSIX_FADV_DONTNEED)` through GNU dd, which needs no
/// root): every run it comes before starts cold, as after hyperfine's `-p 'sync; echo 3 >
/// /proc/sys/vm/drop_caches'`. `every` drops them before every run; otherwise every other run.
fn cold_file(tmp: &TempDir, every: bool) -> (String, String) {
    let data = tmp.join("data");
    std::fs::write(&data, vec![7u8; 8 << 20]).unwrap();
    std::fs::File::open(&data).unwrap().sync_all().unwrap();
    let d = data.display().to_string();
    let drop = format!("dd if={d} iflag=nocache count=0 status=none");
    let prepare = if every {
        drop
    } else {
        // Before runs 0, 2, 4, …: a mark left by one run is taken by the next.
        std::fs::write(tmp.join("mark"), "").unwrap();
        format!("if [ -e mark ]; then rm mark; {drop}; else : > mark; fi")
    };
    (d, prepare)
}

#[test]
fn runs_that_all_start_cold_are_titled_and_compared_as_cold_runs() {
    let tmp = TempDir::new("verdict-views-all-cold");
    let (d, prepare) = cold_file(&tmp, true);
    for (dir, warmups) in [("b", "0"), ("w", "1")] {
        let out = ct(
            tmp.path(),
            [
                "run",
                "-n",
                "5",
                "-w",
                warmups,
                "-o",
                dir,
                "-p",
                &prepare,
                "--export-json",
                &format!("{dir}.json"),
                "--export-markdown",
                &format!("{dir}.md"),
                "--",
                "cat",
                &d,
            ],
        )
        .run_within(std::time::Duration::from_secs(120));
        out.expect_code(0);
        let batch = read_batch(&tmp.join(dir));
        let v = &batch["verdict"];
        assert_eq!(v["kind"], "every_run_cold", "{batch:#}");
        let shown = out.shown();
        let header: String = shown.lines().skip(1).take(2).collect::<Vec<_>>().join("\n");
        assert!(
            header.contains("cold") && !header.contains("warm"),
            "{shown}"
        );
        assert!(
            prose(&shown).contains("every counted run started cold (after --prepare)"),
            "{shown}"
        );
        assert!(!shown.contains("faster than"), "{shown}");
        // The cold runs compared with each other: the table's columns, batch.json's summary
        // and the exports cover the same runs.
        let (runs, first) = if warmups == "0" {
            (4, true)
        } else {
            (5, false)
        };
        assert_eq!(header.contains("first"), first, "{shown}");
        let wall = &batch["summary"]["wall_ns"];
        assert_eq!(wall["warm"]["n"], runs, "{batch:#}");
        assert_eq!(wall["first"].is_null(), !first, "{batch:#}");
        let hf: Value = serde_json::from_str(
            &std::fs::read_to_string(tmp.join(format!("{dir}.json"))).unwrap(),
        )
        .unwrap();
        let summary = &hf["results"][0]["summary"]["time_wall_clock"];
        assert_eq!(summary["count"], runs, "{hf}");
        let mean = wall["warm"]["mean"].as_f64().unwrap();
        assert!(
            (summary["mean"].as_f64().unwrap() * 1e9 - mean).abs() < 1.0,
            "{hf}"
        );
    }
}

#[test]
fn runs_the_verdict_finds_cold_are_in_no_warm_figure() {
    let tmp = TempDir::new("verdict-views-some-cold");
    let (d, prepare) = cold_file(&tmp, false);
    let out = ct(
        tmp.path(),
        [
            "run",
            "-n",
            "6",
            "-o",
            "b",
            "-p",
            &prepare,
            "--export-json",
            "b.json",
            "--export-csv",
            "b.csv",
            "--",
            "cat",
            &d,
        ],
    )
    .run_within(std::time::Duration::from_secs(120));
    out.expect_code(0);
    let batch = read_batch(&tmp.join("b"));
    let cold: Vec<u64> = batch["verdict"]["cold_runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["index"].as_u64().unwrap())
        .collect();
    assert_eq!(cold, [2, 4], "{batch:#}");
    // The warm figures are of runs 1, 3 and 5 only, on the screen, in batch.json and in the
    // exports; every run's time is still in the hyperfine-shaped JSON's measurements.
    let hf: Value =
        serde_json::from_str(&std::fs::read_to_string(tmp.join("b.json")).unwrap()).unwrap();
    let result = &hf["results"][0];
    let walls: Vec<f64> = result["measurements"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["time_wall_clock"]["value"].as_f64().unwrap())
        .collect();
    assert_eq!(walls.len(), 6, "{result}");
    let warm: Vec<f64> = [1, 3, 5].iter().map(|&i| walls[i]).collect();
    let mean = warm.iter().sum::<f64>() / 3.0;
    let summary = &result["summary"]["time_wall_clock"];
    assert_eq!(summary["count"], 3, "{result}");
    assert!(
        (summary["mean"].as_f64().unwrap() - mean).abs() < 1e-12,
        "{result}"
    );
    assert!(
        result["summary_covers"]
            .as_str()
            .unwrap()
            .contains("measurements[2], measurements[4]"),
        "{result}"
    );
    let wall = &batch["summary"]["wall_ns"];
    assert_eq!(wall["warm"]["n"], 3, "{batch:#}");
    assert!((wall["warm"]["mean"].as_f64().unwrap() / 1e9 - mean).abs() < 1e-12);
    let csv = std::fs::read_to_string(tmp.join("b.csv")).unwrap();
    let (head, row) = csv.split_once('\n').unwrap();
    let at = head
        .split(',')
        .position(|h| h == "time_wall_clock_mean")
        .unwrap();
    let cell: f64 = row.split(',').nth(at).unwrap().parse().unwrap();
    assert!((cell - mean).abs() < 1e-12, "{csv}");
    // The table's warm median, read back in its unit: within its rounding of batch.json's.
    let median = wall["warm"]["median"].as_f64().unwrap();
    let shown = out.shown();
    let row: Vec<&str> = shown
        .lines()
        .find(|l| l.trim_start().starts_with("wall "))
        .unwrap()
        .split_whitespace()
        .collect();
    let unit = match row[1] {
        "s" => 1e9,
        "ms" => 1e6,
        "µs" => 1e3,
        other => panic!("{other}: {shown}"),
    };
    let cell: f64 = row[3].parse().unwrap();
    assert!(
        (cell * unit - median).abs() <= 0.005 * median,
        "{median}: {shown}"
    );
}
