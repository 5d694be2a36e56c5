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
}
