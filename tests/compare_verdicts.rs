//! `compare` that never misleads, on the binary: a default that yields warm runs, a verdict
//! only from an interval, "no difference" only when every interval exists, why when none does,
//! and `report` saying the same from the comparison's batch.json.
#![forbid(unsafe_code)]

mod common;

use common::{ct, read_batch, TempDir};

/// The lines of the conclusion (after the grid), as `compare` or `report` printed them.
fn conclusion_lines(text: &str) -> Vec<String> {
    let mut lines = Vec::new();
    for line in text.lines() {
        if line.starts_with("    ") && !lines.is_empty() {
            let last: &mut String = lines.last_mut().unwrap();
            last.push(' ');
            last.push_str(line.trim());
        } else if line.contains("too few for an interval")
            || line.contains("no difference in")
            || line.contains("no interval for")
            || line.contains(" that of ")
        {
            lines.push(line.trim().to_string());
        }
    }
    lines
}

#[test]
fn two_runs_per_command_give_a_ratio_but_no_verdict_and_say_why() {
    let dir = TempDir::new("n2");
    let out = ct(
        dir.path(),
        ["compare", "-n", "2", "-o", "c", "sleep 0.01", "sleep 0.02"],
    )
    .run();
    out.expect_code(0);
    let ctx = out.describe();
    assert!(
        !out.stderr.contains("no difference"),
        "a false 'no difference'{ctx}"
    );
    assert!(
        !out.stderr.contains(" that of "),
        "a verdict from one warm run{ctx}"
    );
    assert_eq!(
        conclusion_lines(&out.stderr),
        ["1 warm run per command: too few for an interval (5 are needed: -n 6 or more, or a longer --max-time); no verdict"],
        "{ctx}"
    );
    let doc = read_batch(&dir.join("c"));
    let wall = doc["comparison"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["metric"] == "wall_ns")
        .unwrap();
    assert!(
        wall["commands"][1]["ratio_to_first"].as_f64().unwrap() > 1.2,
        "{wall}"
    );
    assert!(wall["commands"][1]["ci_low"].is_null());
    assert!(wall["commands"][1]["verdict"].is_null());
    assert_eq!(wall["commands"][1]["warm_runs"], 1);
    assert!(wall["commands"][1]["no_interval"]
        .as_str()
        .unwrap()
        .starts_with("too few warm runs (1 and 1)"));
}

#[test]
fn without_dash_n_the_count_is_chosen_by_time_and_yields_warm_runs() {
    let dir = TempDir::new("default");
    // -M caps the time budget's thousands of `true` runs; the minimum stays hyperfine's 10.
    let out = ct(
        dir.path(),
        ["compare", "-q", "-M", "12", "-o", "c", "true", "true"],
    )
    .run();
    out.expect_code(0);
    let doc = read_batch(&dir.join("c"));
    for c in doc["commands"].as_array().unwrap() {
        assert_eq!(c["counts"]["counted"], 12, "{c}");
    }
    let config = &read_batch(&dir.join("c/commands/00"))["config"];
    assert_eq!(config["run_bounds"]["min_runs"], 10, "{config}");
    assert_eq!(config["run_bounds"]["max_time_ns"], 3_000_000_000u64);
    let wall = &doc["comparison"][0];
    assert_eq!(wall["metric"], "wall_ns");
    assert!(
        wall["commands"][1]["ci_low"].is_f64(),
        "11 warm runs give an interval: {wall}"
    );
}

#[test]
fn report_shows_the_comparisons_ratios_intervals_and_the_same_conclusion() {
    let dir = TempDir::new("report");
    let out = ct(
        dir.path(),
        ["compare", "-n", "8", "-o", "c", "sleep 0.01", "sleep 0.03"],
    )
    .run();
    out.expect_code(0);
    let said = conclusion_lines(&out.stderr);
    assert!(
        said.iter().any(|l| l.starts_with("sleep 0.03: wall time")),
        "{}",
        out.describe()
    );
    let report = ct(dir.path(), ["report", "c"]).run();
    report.expect_code(0);
    let ctx = report.describe();
    assert!(
        report
            .stdout
            .contains("comparison c: 2 commands, interleaved"),
        "{ctx}"
    );
    let doc = read_batch(&dir.join("c"));
    let wall = &doc["comparison"][0]["commands"][1];
    let interval = format!(
        "{:.2}–{:.2}",
        wall["ci_low"].as_f64().unwrap(),
        wall["ci_high"].as_f64().unwrap()
    );
    assert!(
        report.stdout.contains(&interval),
        "{interval} not shown{ctx}"
    );
    assert_eq!(conclusion_lines(&report.stdout), said, "{ctx}");
    let markdown = ct(dir.path(), ["report", "--markdown", "c"]).run();
    assert!(
        markdown.stdout.contains(&format!("| {interval} |")),
        "{}",
        markdown.describe()
    );
}
