//! `report --svg FILE` and `--html FILE` on the built binary: the SVG is well-formed XML (a
//! real parser reads it), every run is one mark with its own tooltip, the first run, warm-ups
//! and rejected runs are marked as such, the first-run penalty's parts are drawn only when
//! batch.json has them, a comparison shows each command with its interval, a long batch stays
//! small, and the HTML page loads nothing from anywhere.
//!
//! Whether a browser shows it is checked outside `cargo test` (`.ci/run`'s picture step, with
//! headless Chromium): this file needs no browser.
#![forbid(unsafe_code)]

mod common;

use coldtrace::view::units::human_ns;
use common::{ct, data_file, read_batch, read_records, write_file, TempDir};
use serde_json::Value;
use std::path::Path;

/// A script that fails on every fourth call (calls 3, 7, …), counting in a file beside it.
fn fails_every_fourth(dir: &Path) -> String {
    let path = dir.join("every-fourth.sh");
    write_file(
        &path,
        b"#!/bin/sh\nc=\"$(dirname \"$0\")/.count\"\nn=$(cat \"$c\" 2>/dev/null || echo 0)\n\
          echo $((n + 1)) > \"$c\"\n[ $((n % 4)) -ne 3 ]\n",
        0o755,
    );
    path.display().to_string()
}

const LABEL: &str = "<odd> & \"label\" 'x' \u{1}";

/// A batch of 2 warm-ups, a first run and 8 more runs of which two are rejected.
fn mixed_batch(tmp: &TempDir) -> std::path::PathBuf {
    let script = fails_every_fourth(tmp.path());
    let out = ct(
        tmp.path(),
        [
            "run", "-n", "9", "--warmup", "2", "-o", "b", "--label", LABEL, "--", &script,
        ],
    )
    .run();
    assert_eq!(
        out.code(),
        Some(1),
        "two runs are rejected{}",
        out.describe()
    );
    tmp.join("b")
}

/// Runs `report ARGS` and returns the SVG it wrote, parsed text kept.
fn report_svg(tmp: &TempDir, dirs: &[&Path]) -> String {
    let svg = tmp.join("picture.svg");
    let _ = std::fs::remove_file(&svg);
    let mut args = vec![
        "report".to_string(),
        "--svg".into(),
        svg.display().to_string(),
    ];
    args.extend(dirs.iter().map(|d| d.display().to_string()));
    let out = ct(tmp.path(), args).run();
    assert_eq!(out.code(), Some(0), "{}", out.describe());
    std::fs::read_to_string(&svg)
        .unwrap_or_else(|e| panic!("no SVG written ({e}){}", out.describe()))
}

/// The texts of every `<title>` (the tooltips) and of every `<text>`.
fn texts(doc: &roxmltree::Document<'_>, tag: &str) -> Vec<String> {
    doc.descendants()
        .filter(|n| n.has_tag_name(tag))
        .map(|n| n.text().unwrap_or("").to_string())
        .collect()
}

fn parse(svg: &str) -> roxmltree::Document<'_> {
    roxmltree::Document::parse(svg)
        .unwrap_or_else(|e| panic!("the SVG is not well-formed XML: {e}\n{svg}"))
}

fn class_count(doc: &roxmltree::Document<'_>, class: &str) -> usize {
    doc.descendants()
        .filter(|n| n.attribute("class") == Some(class))
        .count()
}

#[test]
fn every_run_is_one_mark_of_its_kind_in_well_formed_svg() {
    let tmp = TempDir::new("picture-batch");
    let dir = mixed_batch(&tmp);
    let records = read_records(&dir);
    let svg = report_svg(&tmp, &[&dir]);
    let doc = parse(&svg);
    assert_eq!(doc.root_element().tag_name().name(), "svg");
    assert_eq!(
        doc.root_element().tag_name().namespace(),
        Some("http://www.w3.org/2000/svg")
    );
    let role = |r: &Value| r["role"].as_str().unwrap_or("").to_string();
    let rejected = records
        .iter()
        .filter(|r| role(r) != "warmup" && r["counted"] == false)
        .count();
    let warmups = records.iter().filter(|r| role(r) == "warmup").count();
    assert_eq!((records.len(), warmups, rejected), (11, 2, 2));
    let tips = texts(&doc, "title");
    let run_tips: Vec<&String> = tips.iter().filter(|t| t.starts_with("run #")).collect();
    assert_eq!(
        run_tips.len(),
        records.len() - 1,
        "one tooltip per run but the first: {tips:#?}"
    );
    for r in &records[..] {
        let index = r["index"].as_u64().unwrap();
        let wall = human_ns(r["wall_ns"].as_f64().unwrap());
        let wanted = if role(r) == "first" {
            format!("first run #{index}: ")
        } else {
            format!("run #{index} (")
        };
        let tip = tips.iter().find(|t| t.starts_with(&wanted));
        let tip = tip.unwrap_or_else(|| panic!("no mark for run {index}: {tips:#?}"));
        assert!(tip.ends_with(&format!(": {wall}")), "{tip} vs {wall}");
    }
    assert_eq!(
        class_count(&doc, "rejected"),
        rejected + 1,
        "a cross per rejected run and the legend's"
    );
    assert_eq!(
        class_count(&doc, "warmup"),
        warmups + 1,
        "a ring per warm-up and the legend's"
    );
    assert_eq!(
        class_count(&doc, "first"),
        2,
        "the first run's diamond and the legend's"
    );
    let words = texts(&doc, "text");
    let title = r#"<odd> & "label" 'x' \u{1} — "#;
    assert!(
        words.iter().any(|t| t.starts_with(title)),
        "the label, escaped: {words:#?}"
    );
    assert!(
        words.iter().any(|t| t.starts_with("warm: median ")),
        "{words:#?}"
    );
    assert!(
        words.iter().any(|t| t.starts_with("wall time (")),
        "the axis has a unit: {words:#?}"
    );
}

/// Writes `first_penalty` (and `first_penalty_unavailable`) into `dir`'s batch.json, with the
/// verdict's kind `kind` (`None`: no verdict, as in a batch written before it was stored).
fn with_penalty(dir: &Path, penalty: Value, unavailable: Value, kind: Option<&str>) {
    let mut batch = read_batch(dir);
    batch["first_penalty"] = penalty;
    batch["first_penalty_unavailable"] = unavailable;
    match kind {
        Some(kind) => batch["verdict"]["kind"] = Value::from(kind),
        None => {
            batch.as_object_mut().unwrap().remove("verdict");
        }
    }
    std::fs::write(dir.join("batch.json"), batch.to_string()).unwrap();
}

/// Every text of the picture as one line, folded sentences joined.
fn said(doc: &str) -> String {
    let words = texts(&parse(doc), "text");
    words
        .join(" ")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

#[test]
fn the_first_run_penalty_is_drawn_in_its_parts_when_the_verdict_found_one() {
    let tmp = TempDir::new("picture-penalty");
    let dir = mixed_batch(&tmp);
    // Two warm-ups ran: no counted run was first, and the picture says so whole.
    let batch = read_batch(&dir);
    assert_eq!(batch["verdict"]["kind"], "no_first_run", "{batch:#}");
    assert!(batch["first_penalty"].is_null(), "{batch:#}");
    let svg = report_svg(&tmp, &[&dir]);
    assert!(
        said(&svg).contains(
            "no first run: 2 warm-ups ran before the counted runs: no counted run was first, \
             so every counted run is compared as a warm run"
        ),
        "{}",
        said(&svg)
    );
    assert_eq!(class_count(&parse(&svg), "total"), 0, "no bars");

    let penalty = serde_json::json!({
        "first_index": 2, "reference_index": 5, "first_wall_ns": 60_000_000,
        "reference_wall_ns": 8_750_000, "basis": "schedstat", "wall_ns": 51_250_000,
        "cpu_ns": 12_000_000, "runqueue_ns": -4_200_000, "blocked_ns": 43_450_000,
        "rusage_cpu_ns": 12_100_000, "sys_us": 3000, "evidence": {}, "significant": true
    });
    with_penalty(&dir, penalty.clone(), Value::Null, Some("penalty"));
    let svg = report_svg(&tmp, &[&dir]);
    let doc = parse(&svg);
    let words = texts(&doc, "text");
    let has = |w: &str| words.iter().any(|t| t == w);
    assert!(
        has("first-run penalty: first run #2 60 ms − warm run #5 (the median) 8.75 ms = +51.25 ms"),
        "{words:#?}"
    );
    for value in ["+12 ms", "−4.2 ms", "+43.45 ms", "+51.25 ms"] {
        assert!(has(value), "{value}: {words:#?}");
    }
    for part in ["cpu", "runqueue", "blocked", "total"] {
        assert_eq!(class_count(&doc, part), 1, "one {part} bar");
    }
    // The same penalty where the verdict found none: its sentence, no bars.
    with_penalty(
        &dir,
        penalty.clone(),
        Value::Null,
        Some("not_distinguishable"),
    );
    let doc_text = report_svg(&tmp, &[&dir]);
    assert_eq!(
        class_count(&parse(&doc_text), "total"),
        0,
        "no bars for noise"
    );
    assert!(
        said(&doc_text).contains("not distinguishable from the warm runs at n = 7"),
        "{}",
        said(&doc_text)
    );
    // A document written before the verdict: decided from the records, by the same function
    // (two warm-ups: no first run, so no bars whatever first_penalty says).
    with_penalty(&dir, penalty.clone(), Value::Null, None);
    let doc_text = report_svg(&tmp, &[&dir]);
    assert_eq!(class_count(&parse(&doc_text), "total"), 0);
    assert!(said(&doc_text).contains("no first run: 2 warm-ups"));
    // Split by the tree's four states: four parts and the whole, the tree's size in the title.
    let mut tree = penalty.clone();
    tree["significant"] = Value::from(true);
    tree["basis"] = Value::from("tree");
    tree["tree"] = serde_json::json!({
        "source": "sched tracepoints", "unavailable": null, "on_cpu_ns": 30_000_000,
        "queued_ns": 1_250_000, "uninterruptible_ns": 21_000_000, "sleeping_ns": -1_000_000,
        "tasks": 9
    });
    with_penalty(&dir, tree, Value::Null, Some("penalty"));
    let doc_text = report_svg(&tmp, &[&dir]);
    let doc = parse(&doc_text);
    let words = texts(&doc, "text");
    for part in ["cpu", "runqueue", "blocked", "asleep", "total"] {
        assert_eq!(class_count(&doc, part), 1, "one {part} bar: {words:#?}");
    }
    for w in [
        "+30 ms",
        "+1.25 ms",
        "+21 ms",
        "−1 ms",
        "uninterruptible (storage, faults, locks)",
    ] {
        assert!(words.iter().any(|t| t == w), "{w}: {words:#?}");
    }
    assert!(
        words
            .iter()
            .any(|t| t.ends_with("= +51.25 ms; the tree: 9 tasks")),
        "{words:#?}"
    );
    // Only the main thread's split: its three parts, labelled, and why.
    let mut main = penalty.clone();
    main["significant"] = Value::from(true);
    main["basis"] = Value::from("main thread");
    main["tree"] = serde_json::json!({"source": "main thread", "unavailable": "needs root"});
    with_penalty(&dir, main, Value::Null, Some("penalty"));
    let doc_text = report_svg(&tmp, &[&dir]);
    let doc = parse(&doc_text);
    let words = texts(&doc, "text");
    assert_eq!(class_count(&doc, "asleep"), 0);
    assert!(
        words.iter().any(|t| t == "main thread on CPU"),
        "{words:#?}"
    );
    assert!(
        words.iter().any(|t| t == "main thread only: needs root"),
        "{words:#?}"
    );

    let unsplit = serde_json::json!({
        "first_index": 2, "reference_index": 5, "first_wall_ns": 60_000_000,
        "reference_wall_ns": 8_750_000, "basis": "parallel", "wall_ns": 51_250_000,
        "cpu_ns": null, "runqueue_ns": null, "blocked_ns": null, "significant": true
    });
    with_penalty(&dir, unsplit, Value::Null, Some("penalty"));
    let doc_text = report_svg(&tmp, &[&dir]);
    let doc = parse(&doc_text);
    assert_eq!(
        (class_count(&doc, "cpu"), class_count(&doc, "total")),
        (0, 1)
    );
    assert!(texts(&doc, "text")
        .iter()
        .any(|t| t.contains("parallel work")));

    with_penalty(
        &dir,
        Value::Null,
        Value::from("the first run was rejected"),
        Some("first_rejected"),
    );
    let doc_text = report_svg(&tmp, &[&dir]);
    let doc = parse(&doc_text);
    assert_eq!(class_count(&doc, "total"), 0);
    assert!(texts(&doc, "text")
        .iter()
        .any(|t| t == "first-run penalty: none (the first run was rejected)"));
}

#[test]
fn a_comparison_shows_each_command_with_its_interval_and_the_html_loads_nothing() {
    let tmp = TempDir::new("picture-compare");
    let out = ct(
        tmp.path(),
        ["compare", "-n", "6", "-o", "c", "true", "sh -c true"],
    )
    .run();
    assert_eq!(out.code(), Some(0), "{}", out.describe());
    let doc_json = read_batch(&tmp.join("c"));
    let wall = doc_json["comparison"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["metric"] == "wall_ns")
        .unwrap()
        .clone();
    let ratio = wall["commands"][1]["ratio_to_first"].as_f64().unwrap();
    let html = tmp.join("report.html");
    let dir = tmp.join("c");
    let out = ct(
        tmp.path(),
        [
            "report",
            "--html",
            html.to_str().unwrap(),
            "--svg",
            "c.svg",
            dir.to_str().unwrap(),
        ],
    )
    .run();
    assert_eq!(out.code(), Some(0), "{}", out.describe());
    let svg = std::fs::read_to_string(tmp.join("c.svg")).unwrap();
    let doc = parse(&svg);
    let words = texts(&doc, "text");
    assert!(
        words
            .iter()
            .any(|t| t == "2 commands, their warm runs side by side"),
        "{words:#?}"
    );
    assert!(words.iter().any(|t| t == "sh -c true") && words.iter().any(|t| t == "true"));
    assert!(words.iter().any(|t| t == "baseline (1×)"), "{words:#?}");
    assert!(
        !words.iter().any(|t| t.contains("sh -c true — ")),
        "a member batch labelled with its command is titled once: {words:#?}"
    );
    let shown = words
        .iter()
        .find(|t| t.contains("× ["))
        .unwrap_or_else(|| panic!("no ratio with its interval: {words:#?}"));
    let shown_ratio: f64 = shown.split('×').next().unwrap().parse().unwrap();
    assert!(
        (shown_ratio - ratio).abs() <= ratio * 0.05 + 0.005,
        "{shown} vs {ratio}"
    );
    let dots = texts(&doc, "title")
        .into_iter()
        .filter(|t| t.contains(": warm run "))
        .count();
    assert_eq!(dots, 2 * 5, "each command's 5 warm runs side by side");
    assert!(
        class_count(&doc, "ci") >= 3,
        "an interval for the second command"
    );

    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.starts_with("<!DOCTYPE html>"));
    assert!(page.contains("Content-Security-Policy\" content=\"default-src 'none'"));
    let lower = page.to_lowercase();
    for forbidden in [
        "<script", " src=", "href=", "url(", "@import", "<link", "<img",
    ] {
        assert!(
            !lower.contains(forbidden),
            "the page must load nothing: {forbidden}"
        );
    }
    let without_namespace = page.replace("xmlns=\"http://www.w3.org/2000/svg\"", "");
    assert!(!without_namespace.contains("http:") && !without_namespace.contains("https:"));
    let figures: Vec<&str> = page.split("<svg ").skip(1).collect();
    assert_eq!(
        figures.len(),
        2,
        "the summary, then one figure for one directory"
    );
    // The summary: one bar per command, each with its median (5 warm runs: no interval).
    let end = figures[0].find("</svg>").unwrap() + "</svg>".len();
    let summary_svg = format!("<svg {}", &figures[0][..end]);
    let summary = parse(&summary_svg);
    let bars = texts(&summary, "title");
    for (i, name) in ["true", "sh -c true"].iter().enumerate() {
        let label = format!("{} [{i}] {name}: ", dir.display());
        let bar = bars.iter().find(|t| t.starts_with(&label));
        let bar = bar.unwrap_or_else(|| panic!("no bar for {label}: {bars:#?}"));
        assert!(
            bar.contains("(too few runs for an interval), n = 5, first "),
            "{bar}"
        );
    }
    for figure in figures {
        let end = figure.find("</svg>").unwrap() + "</svg>".len();
        parse(&format!("<svg {}", &figure[..end]));
    }
}

#[test]
fn a_long_batch_is_drawn_in_buckets_and_stays_small() {
    let tmp = TempDir::new("picture-long");
    let dir = tmp.join("long");
    std::fs::create_dir(&dir).unwrap();
    let mut lines = String::new();
    let runs = 20_000u64;
    let wall_of =
        |i: u64| 1_000_000 + (i * 7919) % 50_000 + if i == 12_345 { 9_000_000 } else { 0 };
    for i in 0..runs {
        let role = if i == 0 { "first" } else { "warm" };
        let wall = wall_of(i);
        lines.push_str(&format!(
            "{{\"schema\":\"coldtrace.run/1\",\"index\":{i},\"role\":\"{role}\",\"counted\":true,\
             \"argv\":[\"synthetic\"],\"wall_ns\":{wall}}}\n"
        ));
    }
    std::fs::write(dir.join("runs.jsonl"), lines).unwrap();
    let svg = report_svg(&tmp, &[&dir]);
    assert!(svg.len() < 400_000, "{} bytes", svg.len());
    let doc = parse(&svg);
    let tips = texts(&doc, "title");
    let buckets = tips.iter().filter(|t| t.starts_with("runs #")).count();
    assert!((100..=512).contains(&buckets), "{buckets} buckets");
    let outlier = human_ns(wall_of(12_345) as f64);
    assert!(
        tips.iter()
            .any(|t| t.starts_with("runs #") && t.ends_with(&outlier)),
        "the outlier run stays visible as its bucket's maximum: {:?}",
        &tips[..5]
    );
    let words = texts(&doc, "text");
    assert!(
        words
            .iter()
            .any(|t| t.starts_with("20000 runs: each mark spans 64 consecutive runs")),
        "{words:#?}"
    );
    assert!(
        words.iter().any(|t| t.contains("no batch.json")),
        "{words:#?}"
    );
}

#[test]
fn picture_files_that_cannot_be_written_are_one_clear_error() {
    let tmp = TempDir::new("picture-errors");
    let out = ct(tmp.path(), ["run", "-n", "2", "-o", "b", "--", "true"]).run();
    assert_eq!(out.code(), Some(0), "{}", out.describe());
    let out = ct(tmp.path(), ["report", "--svg", "", "b"]).run();
    assert_eq!(out.code(), Some(125), "{}", out.describe());
    assert_eq!(
        out.stderr.trim(),
        "coldtrace: error: report: --svg needs a file name (got ''), e.g. --svg picture.svg"
    );
    let out = ct(tmp.path(), ["report", "--html", "no/such/dir/p.html", "b"]).run();
    assert_eq!(out.code(), Some(125), "{}", out.describe());
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.describe());
    assert!(
        out.stderr.contains("no/such/dir/p.html"),
        "{}",
        out.describe()
    );
    assert!(!tmp.join("no").exists());
    std::fs::write(tmp.join("old.svg"), "old").unwrap();
    let out = ct(tmp.path(), ["report", "--svg", "old.svg", "b"]).run();
    assert_eq!(out.code(), Some(0), "{}", out.describe());
    let new = std::fs::read_to_string(tmp.join("old.svg")).unwrap();
    assert!(new.starts_with("<svg "), "replaced: {new}");
    let leftovers: Vec<_> = std::fs::read_dir(tmp.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn disturbed_runs_are_marked_from_their_record_and_from_batch_json() {
    let tmp = TempDir::new("picture-disturbed");
    let dir = mixed_batch(&tmp);
    let svg = report_svg(&tmp, &[&dir]);
    assert_eq!(
        class_count(&parse(&svg), "disturbed"),
        0,
        "nothing flagged yet"
    );
    let anomaly = serde_json::json!({"kind": "storage_reads", "metric": "block_in",
        "value": 6440.0, "reference": 0.0, "rule": "above 0 while the warm median is 0"});
    let mut records = read_records(&dir);
    let warm: Vec<u64> = records
        .iter()
        .filter(|r| r["role"] == "warm" && r["counted"] == true)
        .map(|r| r["index"].as_u64().unwrap())
        .collect();
    let (own, judged) = (warm[0], warm[3]);
    records[own as usize]["anomalies"] = Value::from(vec![anomaly.clone()]);
    let lines: String = records.iter().map(|r| format!("{r}\n")).collect();
    std::fs::write(dir.join("runs.jsonl"), lines).unwrap();
    let mut batch = read_batch(&dir);
    batch["anomalies"] = serde_json::json!([{"index": judged, "anomaly": anomaly}]);
    batch["warm_noise"] =
        serde_json::json!({"outliers": 1, "spread": 0.4, "rule": "spread 40% > 10%"});
    std::fs::write(dir.join("batch.json"), batch.to_string()).unwrap();

    let svg = report_svg(&tmp, &[&dir]);
    let doc = parse(&svg);
    assert_eq!(
        class_count(&doc, "disturbed"),
        3,
        "two triangles and the legend's"
    );
    let tips = texts(&doc, "title");
    for index in [own, judged] {
        let tip = tips
            .iter()
            .find(|t| t.starts_with(&format!("run #{index} (disturbed)")))
            .unwrap_or_else(|| panic!("run {index} not marked: {tips:#?}"));
        assert!(
            tip.ends_with("— block_in 6440 (vs 0: above 0 while the warm median is 0)"),
            "{tip}"
        );
    }
    let words = texts(&doc, "text");
    assert!(
        words.iter().any(|t| t == "noisy: spread 40% > 10%"),
        "{words:#?}"
    );
    assert!(
        words.iter().any(|t| t.contains(", 2 disturbed,")),
        "{words:#?}"
    );
}

/// With a cold action before every run, the runs after the first are cold: drawn as cold runs,
/// never as warm ones, and the warm distribution is empty.
#[test]
fn runs_made_cold_before_each_are_drawn_as_cold_never_as_warm() {
    let tmp = TempDir::new("picture-cold");
    let data = tmp.join("data");
    std::fs::write(&data, vec![7u8; 1 << 20]).unwrap();
    let out = ct(
        tmp.path(),
        [
            "run",
            "-q",
            "-n",
            "4",
            "-o",
            "b",
            "--evict",
            data.to_str().unwrap(),
            "--",
            "cat",
            data.to_str().unwrap(),
        ],
    )
    .run();
    assert_eq!(out.code(), Some(0), "{}", out.describe());
    let roles: Vec<String> = read_records(&tmp.join("b"))
        .iter()
        .map(|r| r["role"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(roles, ["first", "cold", "cold", "cold"]);
    let svg = report_svg(&tmp, &[&tmp.join("b")]);
    let doc = parse(&svg);
    assert_eq!(
        class_count(&doc, "cold"),
        3 + 1,
        "three cold runs and the legend's key"
    );
    assert_eq!(
        class_count(&doc, "warm"),
        0,
        "no warm run, no warm key: {svg}"
    );
    assert!(
        texts(&doc, "text").iter().any(|t| t.contains("3 cold")),
        "{svg}"
    );
}

#[test]
fn the_html_opens_with_a_summary_and_cold_cycles_draw_their_penalty_and_paged_in_files() {
    let tmp = TempDir::new("picture-cycles");
    assert_eq!(
        coldtrace::measure::cache::is_tmpfs(tmp.path()),
        Some(false),
        "eviction needs a disk-backed temporary directory"
    );
    let f = data_file(&tmp, "data.bin", 8);
    let out = ct(
        tmp.path(),
        [
            "run",
            "-q",
            "-n",
            "3",
            "--cold-cycles",
            "6",
            "-o",
            "cy",
            "--evict",
            &f,
            "--",
            "cat",
            &f,
        ],
    )
    .run_within(std::time::Duration::from_secs(120));
    out.expect_code(0);
    let batch = read_batch(&tmp.join("cy"));
    let penalty = &batch["cycles"]["penalty"]["per_cycle"];
    let svg = report_svg(&tmp, &[&tmp.join("cy")]);
    let doc = parse(&svg);
    let words = texts(&doc, "text");
    // The cycles' penalty: a bar of the mean difference, its interval drawn and written.
    let (mean, lo, hi) = (
        penalty["mean_wall_ns"].as_f64().unwrap(),
        penalty["ci_low_ns"].as_f64().unwrap(),
        penalty["ci_high_ns"].as_f64().unwrap(),
    );
    let signed = |ns: f64| {
        let text = human_ns(ns.abs());
        if ns < 0.0 {
            format!("−{text}")
        } else {
            format!("+{text}")
        }
    };
    let said = format!("{} [{} to {}]", signed(mean), signed(lo), signed(hi));
    assert!(words.iter().any(|t| t == &said), "{said} not in {words:#?}");
    assert!(
        words
            .iter()
            .any(|t| t.starts_with("cold penalty over 6 cycles of 3 runs: ")),
        "{words:#?}"
    );
    assert!(
        class_count(&doc, "ci") >= 3,
        "the interval and its two ends"
    );
    // The first run paged in the file: one bar, its size from the record.
    let first = &read_records(&tmp.join("cy"))[0];
    let bytes = first["paged_in"][0]["bytes"].as_u64().unwrap();
    assert!(bytes >= 7 << 20, "{first}");
    let tips = texts(&doc, "title");
    let tip = format!("{f}: {}", coldtrace::view::units::human_bytes(bytes as f64));
    assert!(tips.contains(&tip), "{tip} not in {tips:#?}");
    // The runs on a real time axis: its title, and every run's mark inside the strip.
    assert!(
        words
            .iter()
            .any(|t| t == "time since the first run started (s); each run at its start"),
        "{words:#?}"
    );
    // The HTML page opens with the summary: the batch's bar, with the interval of its median
    // over the 12 warm runs.
    let html = tmp.join("r.html");
    let cy = tmp.join("cy");
    let out = ct(
        tmp.path(),
        [
            "report",
            "--html",
            html.to_str().unwrap(),
            cy.to_str().unwrap(),
        ],
    )
    .run();
    out.expect_code(0);
    let page = std::fs::read_to_string(&html).unwrap();
    let first_svg = page.split("<svg ").nth(1).unwrap();
    let end = first_svg.find("</svg>").unwrap() + "</svg>".len();
    let summary_svg = format!("<svg {}", &first_svg[..end]);
    let summary = parse(&summary_svg);
    let words = texts(&summary, "text");
    assert!(
        words
            .iter()
            .any(|t| t == "summary: the warm runs' median wall time, and the first run"),
        "{words:#?}"
    );
    let bar = texts(&summary, "title")
        .into_iter()
        .find(|t| t.contains(", n = 12, first "))
        .unwrap_or_else(|| panic!("no bar over 12 warm runs: {summary_svg}"));
    assert!(
        bar.contains(" [") && bar.contains("–"),
        "an interval: {bar}"
    );
    assert_eq!(
        class_count(&summary, "bar"),
        1 + 1,
        "the batch's bar and the legend's key{summary_svg}"
    );
}

#[test]
fn the_summary_marks_each_first_run_and_names_batches_that_share_a_command() {
    let tmp = TempDir::new("picture-summary");
    // Two batches of one command, one of 5 runs (4 warm: a box, no histogram) and one of 12
    // (11 warm: a histogram).
    for (dir, runs) in [("five", "5"), ("twelve", "12")] {
        let out = ct(
            tmp.path(),
            ["run", "-q", "-n", runs, "-o", dir, "--", "true"],
        )
        .run();
        out.expect_code(0);
    }
    let html = tmp.join("page.html");
    let out = ct(
        tmp.path(),
        ["report", "--html", html.to_str().unwrap(), "five", "twelve"],
    )
    .run();
    out.expect_code(0);
    let page = std::fs::read_to_string(&html).unwrap();
    let svgs: Vec<String> = page
        .split("<svg ")
        .skip(1)
        .map(|f| format!("<svg {}", &f[..f.find("</svg>").unwrap() + "</svg>".len()]))
        .collect();
    assert_eq!(svgs.len(), 3, "the summary, then one figure per batch");
    let summary = parse(&svgs[0]);
    let tips = texts(&summary, "title");
    for dir in ["five", "twelve"] {
        // The same command twice: each bar named by its directory too, with its first run.
        let bar = tips
            .iter()
            .find(|t| t.starts_with(&format!("{dir}: true: ")) && t.contains(", first "));
        assert!(bar.is_some(), "{dir}: {tips:#?}");
        let first = format!("{dir}: true: first run ");
        assert!(tips.iter().any(|t| t.starts_with(&first)), "{tips:#?}");
    }
    // Two first-run marks and the legend's.
    assert_eq!(class_count(&summary, "first"), 2 + 1, "{}", svgs[0]);
    let five = parse(&svgs[1]);
    assert_eq!(
        class_count(&five, "bar"),
        0,
        "no histogram of 4 runs: {}",
        svgs[1]
    );
    assert!(
        texts(&five, "text").contains(&"4 warm runs: a histogram from 10".to_string()),
        "{}",
        svgs[1]
    );
    let twelve = parse(&svgs[2]);
    assert!(class_count(&twelve, "bar") > 0, "{}", svgs[2]);
}
