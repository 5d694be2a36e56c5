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

/// A metric's comparison in a comparison's batch.json.
fn metric_of<'a>(doc: &'a serde_json::Value, metric: &str) -> &'a serde_json::Value {
    doc["comparison"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["metric"] == metric)
        .unwrap_or_else(|| panic!("no {metric} in the comparison"))
}

#[test]
fn two_runs_per_command_give_a_ratio_but_no_verdict_and_say_why() {
    let dir = TempDir::new("n2");
    // One warm run each: a ratio of those two runs and no interval. The runs go ahead of
    // other sessions.
    let out = ct(
        dir.path(),
        ["compare", "-n", "2", "-o", "c", "sleep 0.05", "sleep 0.1"],
    )
    .ahead_of_other_sessions()
    .run();
    out.expect_code(0);
    let ctx = out.describe();
    assert!(
        !out.shown().contains("no difference"),
        "a false 'no difference'{ctx}"
    );
    assert!(
        !out.shown().contains(" that of "),
        "a verdict from one warm run{ctx}"
    );
    assert_eq!(
        conclusion_lines(&out.shown()),
        ["1 warm run per command: too few for an interval (5 are needed: -n 6 or more, or a longer --max-time); no verdict"],
        "{ctx}"
    );
    let doc = read_batch(&dir.join("c"));
    let wall = metric_of(&doc, "wall_ns");
    // The ratio is the second command's warm run over the first's, as recorded: not a bound
    // on the sleeps (one run each is as slow as the machine made it).
    let warm_wall = |c: &str| -> Vec<f64> {
        common::read_records(&dir.join("c/commands").join(c))
            .iter()
            .filter(|r| r["role"] == "warm")
            .map(|r| r["wall_ns"].as_f64().unwrap())
            .collect()
    };
    let (first, second) = (warm_wall("00"), warm_wall("01"));
    assert_eq!((first.len(), second.len()), (1, 1), "{ctx}");
    let ratio = wall["commands"][1]["ratio_to_first"].as_f64().unwrap();
    assert!(
        (ratio - second[0] / first[0]).abs() <= 1e-9 * ratio,
        "{ratio} vs {} / {}: {wall}",
        second[0],
        first[0]
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
    // Ten times apart, so that a loaded machine's noise (it only adds) cannot widen the
    // interval over 1: the verdict is there to be compared with the report's.
    let out = ct(
        dir.path(),
        ["compare", "-n", "8", "-o", "c", "sleep 0.01", "sleep 0.1"],
    )
    .ahead_of_other_sessions()
    .run();
    out.expect_code(0);
    let said = conclusion_lines(&out.shown());
    assert!(
        said.iter().any(|l| l.starts_with("sleep 0.1: wall time")),
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

#[test]
fn tick_sampled_system_times_with_zeros_get_an_interval_never_a_median_of_0() {
    // rusage's system time is split by a sampling tick: a run that no tick caught in the
    // kernel shows 0. Each command here spends about 30 ms in the kernel (dd copying 300 MiB
    // from /dev/zero) in 3 of every 5 runs and only starts a shell in the others, so its warm
    // runs mix zeros with figures of several ticks around a median that is not 0: a resample
    // whose median is 0 must not abandon the interval. The shell reads its count with a
    // builtin (no `cat` to fork and exec: half the CPU, so fewer of its runs meet a tick), and
    // whether a tick catches a run is chance (a clean suite once saw 1 zero in 6 such runs,
    // a loaded machine 33 in 40): the comparison is made again, up to 4 times, until the first
    // command's warm runs hold the 2 zeros the case is about; everything is asserted on it.
    let dir = TempDir::new("ticks");
    let script = dir.join("ticks.sh");
    common::write_file(
        &script,
        b"#!/bin/sh\nread n < \"$1\" 2>/dev/null || n=0; echo $((n + 1)) > \"$1\"\n\
          case $((n % 5)) in 0|1) exit 0;; esac\n\
          exec dd if=/dev/zero of=/dev/null bs=1M count=300 status=none\n",
        0o755,
    );
    let s = script.display();
    let zeros_in = |c: &str| {
        common::read_records(&dir.join(c).join("commands/00"))
            .iter()
            .filter(|r| r["role"] == "warm" && r["rusage"]["sys_us"] == 0)
            .count()
    };
    let mut seen = Vec::new();
    let (out, c) = (0..4)
        .find_map(|attempt| {
            let c = format!("c{attempt}");
            let out = ct(
                dir.path(),
                [
                    "compare",
                    "-n",
                    "25",
                    "-o",
                    &c,
                    // The sys row, which the default view leaves out.
                    "--metrics",
                    "wall,sys",
                    &format!("{s} a{attempt}.count"),
                    &format!("{s} b{attempt}.count"),
                ],
            )
            .run_within(std::time::Duration::from_secs(120));
            out.expect_code(0);
            let zeros = zeros_in(&c);
            seen.push(zeros);
            (zeros >= 2).then_some((out, c))
        })
        .unwrap_or_else(|| panic!("the first command's warm runs held zeros: {seen:?}"));
    let ctx = out.describe();
    let doc = read_batch(&dir.join(&c));
    let sys = metric_of(&doc, "sys_us");
    assert!(
        sys["commands"][0]["warm_median"].as_f64().unwrap() > 0.0,
        "{sys}{ctx}"
    );
    let other = &sys["commands"][1];
    assert!(
        other["ci_low"].is_number() && other["no_interval"].is_null(),
        "{sys}{ctx}"
    );
    assert!(!out.shown().contains("median of 0"), "{ctx}");
    // The table's sys row shows the interval, as a person reads it: `0.97–1.04` (an upper end
    // the resamples leave unbounded is `∞`).
    let row = out
        .shown_lines()
        .into_iter()
        .find(|l| l.trim_start().starts_with("sys "))
        .unwrap_or_else(|| panic!("a sys row{ctx}"));
    let last = row.split_whitespace().last().unwrap_or_default();
    assert!(
        last.split_once('–')
            .is_some_and(|(lo, _)| lo.parse::<f64>().is_ok()),
        "{row}"
    );
}

/// The labels of the table's rows (the first column, up to two spaces), as printed.
fn row_labels(text: &str) -> Vec<String> {
    text.lines()
        .skip_while(|l| !(l.contains("metric") && l.contains("unit")))
        .skip(1)
        .take_while(|l| !l.contains("wall time of the warm runs"))
        .filter_map(|l| l.trim_start().split("  ").next())
        .map(str::to_string)
        .collect()
}

#[test]
fn the_conclusion_speaks_only_of_rows_the_table_shows() {
    let dir = TempDir::new("shown");
    // A busy shell loop against a sleep: apart in wall time, CPU time and the parts of CPU time
    // (user, system) that the default table does not show.
    let busy = "sh -c 'i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done'";
    // (the words of a metric in the conclusion, the label of its row)
    let metrics = [
        ("user CPU time", "user"),
        ("system CPU time", "sys"),
        ("wall time", "wall"),
        ("CPU time", "CPU"),
        ("max RSS", "max RSS"),
    ];
    for view in [None, Some("wall"), Some("wall,sys,max_rss")] {
        // Short names, so that each verdict's "that of" stays on its first line.
        let mut args = vec!["compare", "-n", "8"];
        args.extend(["--command-name", "idle", "--command-name", "busy"]);
        args.extend(view.iter().flat_map(|v| ["--metrics", v]));
        args.extend(["sleep 0.01", busy]);
        let out = ct(dir.path(), &args).ahead_of_other_sessions().run();
        out.expect_code(0);
        let shown = out.shown();
        let (rows, said) = (row_labels(&shown), conclusion_lines(&shown));
        assert!(
            rows.contains(&"wall".to_string()) && !said.is_empty(),
            "{}",
            out.describe()
        );
        for line in &said {
            // Each metric named (the longest words first: "user CPU time" is not "CPU time").
            let mut rest = line.clone();
            for (words, label) in metrics {
                if rest.contains(words) {
                    assert!(
                        rows.iter().any(|r| r == label),
                        "--metrics {view:?}: the conclusion speaks of {words}, a row not shown: \
                         {line:?}; rows {rows:?}{}",
                        out.describe()
                    );
                    rest = rest.replace(words, "");
                }
            }
        }
    }
}
