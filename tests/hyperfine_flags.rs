//! hyperfine's vocabulary on the binary: the commands around the runs and their order,
//! parameter scans as interleaved comparisons, the run count chosen by time, names, the shell,
//! and every perf event name.
#![forbid(unsafe_code)]

mod common;

use common::{ct, prose, read_batch, read_records, TempDir};
use serde_json::Value;

/// Appends `WORD` to ./log (the batch's cwd).
fn log(word: &str) -> String {
    format!("echo {word} >> log")
}

fn logged(dir: &TempDir) -> Vec<String> {
    std::fs::read_to_string(dir.join("log"))
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

#[test]
fn setup_prepare_conclude_and_cleanup_run_in_hyperfines_order() {
    let dir = TempDir::new("order");
    let (setup, prepare, conclude, cleanup) = (
        log("setup"),
        log("prepare"),
        log("conclude"),
        log("cleanup"),
    );
    let out = ct(
        dir.path(),
        [
            "run",
            "-n",
            "2",
            "-w",
            "1",
            "-s",
            &setup,
            "-p",
            &prepare,
            "-C",
            &conclude,
            "-c",
            &cleanup,
            "--",
            "sh",
            "-c",
            "echo run >> log",
        ],
    )
    .run();
    out.expect_code(0);
    let mut expected = vec!["setup"];
    for _ in 0..3 {
        expected.extend(["prepare", "run", "conclude"]);
    }
    expected.push("cleanup");
    assert_eq!(logged(&dir), expected, "{}", out.describe());
}

#[test]
fn in_a_comparison_every_setup_comes_first_and_every_cleanup_last() {
    let dir = TempDir::new("order-compare");
    let out = ct(
        dir.path(),
        [
            "compare",
            "-n",
            "2",
            "-q",
            "-s",
            "echo setup {c} >> log",
            "-p",
            "echo prepare {c} >> log",
            "-C",
            "echo conclude {c} >> log",
            "-c",
            "echo cleanup {c} >> log",
            "-L",
            "c",
            "a,b",
            "sh -c 'echo run {c} >> log'",
        ],
    )
    .run();
    out.expect_code(0);
    let round = |c: &str| -> Vec<String> {
        ["prepare", "run", "conclude"]
            .iter()
            .map(|w| format!("{w} {c}"))
            .collect()
    };
    let mut expected: Vec<String> = vec!["setup a".into(), "setup b".into()];
    for _ in 0..2 {
        expected.extend(round("a"));
        expected.extend(round("b"));
    }
    expected.extend(["cleanup a".to_string(), "cleanup b".to_string()]);
    assert_eq!(logged(&dir), expected, "{}", out.describe());
}

#[test]
fn the_commands_around_a_run_are_outside_its_timed_window() {
    let dir = TempDir::new("window");
    let out = ct(
        dir.path(),
        [
            "run",
            "-n",
            "3",
            "-o",
            "b",
            "-s",
            "sleep 0.3",
            "-p",
            "sleep 0.3",
            "-C",
            "sleep 0.3",
            "-c",
            "sleep 0.3",
            "--",
            "true",
        ],
    )
    .ahead_of_other_sessions()
    .run();
    out.expect_code(0);
    let records = read_records(&dir.join("b"));
    assert_eq!(records.len(), 3, "{}", out.describe());
    for r in &records {
        let wall = r["wall_ns"].as_u64().expect("wall_ns");
        // `true` takes about a millisecond; a window that held any one of the sleeps would be
        // at least its 300 ms, however loaded the machine (load only adds).
        assert!(
            wall < 300_000_000,
            "a surrounding command was timed: {wall} ns{}",
            out.describe()
        );
    }
    let config = &read_batch(&dir.join("b"))["config"];
    assert_eq!(config["setup"], "sleep 0.3");
    assert_eq!(config["conclude"], "sleep 0.3");
    assert_eq!(config["cleanup"], "sleep 0.3");
}

#[test]
fn a_failing_setup_or_conclude_stops_the_batch_and_a_failing_cleanup_exits_1() {
    let dir = TempDir::new("around-fail");
    let out = ct(
        dir.path(),
        ["run", "-n", "3", "-o", "s", "-s", "exit 3", "--", "true"],
    )
    .run();
    out.expect_code(1);
    assert!(
        out.shown()
            .contains("--setup failed before the first run (exited with code 3): exit 3"),
        "{}",
        out.describe()
    );
    assert_eq!(read_records(&dir.join("s")).len(), 0);
    let out = ct(
        dir.path(),
        ["run", "-n", "3", "-o", "c", "-C", "exit 4", "--", "true"],
    )
    .run();
    out.expect_code(1);
    assert_eq!(read_records(&dir.join("c")).len(), 1, "{}", out.describe());
    let out = ct(
        dir.path(),
        ["run", "-n", "2", "-o", "k", "-c", "exit 5", "--", "true"],
    )
    .run();
    out.expect_code(1);
    assert!(
        out.shown()
            .contains("--cleanup failed after the last run (exited with code 5)"),
        "{}",
        out.describe()
    );
    assert_eq!(read_batch(&dir.join("k"))["complete"], true);
}

#[test]
fn a_parameter_scan_is_an_interleaved_comparison_with_a_ratio_against_the_first() {
    let dir = TempDir::new("scan");
    let out = ct(
        dir.path(),
        [
            "compare",
            "-n",
            "6",
            "-o",
            "cmp",
            "-P",
            "n",
            "1",
            "3",
            // A tenth of a second apart: a loaded machine adds tens of milliseconds to a sleep,
            // never takes any away, so the ratios stay clear of 1.
            "sleep 0.{n}",
        ],
    )
    .ahead_of_other_sessions()
    .run();
    out.expect_code(0);
    let doc = read_batch(&dir.join("cmp"));
    let commands: Vec<&str> = doc["commands"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["command"].as_str().unwrap())
        .collect();
    assert_eq!(
        commands,
        ["sleep 0.1", "sleep 0.2", "sleep 0.3"],
        "{}",
        out.describe()
    );
    assert_eq!(doc["commands"][2]["parameters"][0]["value"], "3");
    let wall = doc["comparison"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["metric"] == "wall_ns")
        .unwrap();
    for c in 1..3 {
        let ratio = wall["commands"][c]["ratio_to_first"]
            .as_f64()
            .expect("a ratio");
        assert!(ratio > 1.2, "sleep 0.{} over sleep 0.1: {ratio}", c + 1);
        assert!(wall["commands"][c]["ci_low"].is_f64(), "{wall}");
    }
    // Interleaved: round r runs command 0, 1, 2 in turn.
    let slots: Vec<(u64, u64)> = (0..3)
        .flat_map(|c| read_records(&dir.join(format!("cmp/commands/{c:02}"))))
        .map(|r| {
            (
                r["slot"]["round"].as_u64().unwrap(),
                r["slot"]["command"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(slots.len(), 18);
    assert!(
        out.stdout.contains("3 commands compared"),
        "{}",
        out.describe()
    );
    // `run` with a scan is the same comparison.
    let out = ct(
        dir.path(),
        [
            "run", "-n", "2", "-q", "-o", "r", "-P", "n", "1", "2", "--", "sleep", "0.0{n}",
        ],
    )
    .run();
    out.expect_code(0);
    assert_eq!(
        read_batch(&dir.join("r"))["commands"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
}

fn counted(dir: &std::path::Path) -> usize {
    read_records(dir)
        .iter()
        .filter(|r| r["counted"] == Value::Bool(true))
        .count()
}

#[test]
fn min_runs_max_runs_and_max_time_choose_the_count_as_hyperfine_does() {
    let dir = TempDir::new("bounds");
    // A budget far below one run's cost: the minimum.
    let out = ct(
        dir.path(),
        [
            "run",
            "-q",
            "-o",
            "a",
            "-m",
            "3",
            "--max-time",
            "0.000001",
            "--",
            "true",
        ],
    )
    .run();
    out.expect_code(0);
    assert_eq!(counted(&dir.join("a")), 3, "{}", out.describe());
    // -M below the default minimum of 10 lowers it; 3 s of `true` would be thousands of runs.
    let out = ct(
        dir.path(),
        ["run", "-q", "-o", "b", "-M", "4", "--", "true"],
    )
    .run();
    out.expect_code(0);
    assert_eq!(counted(&dir.join("b")), 4, "{}", out.describe());
    let bounds = &read_batch(&dir.join("b"))["config"]["run_bounds"];
    assert_eq!(
        (bounds["min_runs"].as_u64(), bounds["max_runs"].as_u64()),
        (Some(4), Some(4))
    );
    let out = ct(dir.path(), ["run", "-n", "3", "-m", "2", "--", "true"]).run();
    out.expect_code(125);
    assert!(
        out.stderr.contains("fixes the number of runs"),
        "{}",
        out.describe()
    );
    let out = ct(dir.path(), ["run", "-m", "5", "-M", "2", "--", "true"]).run();
    out.expect_code(125);
    assert!(
        out.stderr.contains("no count satisfies both"),
        "{}",
        out.describe()
    );
}

/// The count chosen by time for a run that cost `wall_ns`: hyperfine's ⌊budget ÷ cost⌋, at
/// least `min`.
fn fitted(budget_ns: u64, wall_ns: &Value, min: u64) -> u64 {
    (budget_ns / wall_ns.as_u64().expect("wall_ns")).max(min)
}

#[test]
fn a_first_run_made_cold_alone_does_not_choose_the_count_a_warm_run_does() {
    let dir = TempDir::new("budget");
    common::write_file(&dir.join("evicted"), &[7; 4096], 0o644);
    // Slow (0.4 s) on the run whose number is $1, 0.05 s on every other: the slow one stands
    // for a cold run, whatever the page cache holds.
    let script = "n=$(cat count 2>/dev/null || echo 0); echo $((n+1)) > count; \
                  if [ $n = $1 ]; then sleep 0.4; else sleep 0.05; fi";
    let batch = |out_dir: &str, extra: &[&str], slow: &str| {
        let _ = std::fs::remove_file(dir.join("count"));
        let mut args = vec!["run", "-q", "-o", out_dir, "-m", "2", "--max-time", "1"];
        args.extend_from_slice(extra);
        args.extend_from_slice(&["--", "sh", "-c", script, "sh", slow]);
        ct(dir.path(), args).run().expect_code(0);
        read_records(&dir.join(out_dir))
    };
    let cold_first = ["--evict", "evicted", "--cold-first-only"];
    // Cold first run, no warm-up: fitted to the first warm run (#1), not to the first.
    let runs = batch("a", &cold_first, "0");
    let counted = runs.iter().filter(|r| r["counted"] == true).count() as u64;
    assert_eq!(
        counted,
        fitted(1_000_000_000, &runs[1]["wall_ns"], 2),
        "{runs:?}"
    );
    assert_eq!(fitted(1_000_000_000, &runs[0]["wall_ns"], 2), 2);
    // With a warm-up (#0, fast) before the cold first run (#1, slow): fitted to the warm-up.
    let mut extra = cold_first.to_vec();
    extra.extend_from_slice(&["-w", "1"]);
    let runs = batch("b", &extra, "1");
    assert_eq!(runs[0]["role"], "warmup");
    let counted = runs.iter().filter(|r| r["counted"] == true).count() as u64;
    assert_eq!(
        counted,
        fitted(1_000_000_000, &runs[0]["wall_ns"], 2),
        "{runs:?}"
    );
    // Without a cold action the first counted run fits the count, as in hyperfine.
    let runs = batch("c", &[], "0");
    assert_eq!(runs.len(), 2, "{runs:?}");
}

#[test]
fn names_and_the_shell_are_shown_and_recorded() {
    let dir = TempDir::new("names");
    let out = ct(
        dir.path(),
        [
            "compare",
            "-n",
            "2",
            "-o",
            "c",
            "--command-name",
            "fast",
            "--command-name",
            "slow",
            "-S",
            "true",
            "sleep 0.01; true",
        ],
    )
    .run();
    out.expect_code(0);
    let ctx = out.describe();
    assert!(
        out.stdout.contains("[0] fast") && out.stdout.contains("[1] slow"),
        "{ctx}"
    );
    assert!(
        out.stderr.contains("coldtrace does not subtract them"),
        "{ctx}"
    );
    assert_eq!(
        out.stderr.matches("does not subtract").count(),
        1,
        "said once{ctx}"
    );
    let doc = read_batch(&dir.join("c"));
    assert_eq!(doc["commands"][1]["name"], "slow");
    let argv = &read_records(&dir.join("c/commands/01"))[0]["argv"];
    assert_eq!(
        argv,
        &serde_json::json!(["sh", "-c", "sleep 0.01; true"]),
        "{ctx}"
    );
    let out = ct(dir.path(), ["run", "-n", "1", "-N", "-q", "--", "true"]).run();
    out.expect_code(0);
}

#[test]
fn every_perf_event_name_is_taken_and_hardware_without_a_pmu_is_null_with_a_reason() {
    let dir = TempDir::new("events");
    let out = ct(
        dir.path(),
        [
            "run",
            "-n",
            "2",
            "-o",
            "e",
            "--events",
            "major-faults,minor-faults,alignment-faults,cpu-clock,cs,cycles,L1-dcache-load-misses",
            "--",
            "true",
        ],
    )
    .run();
    out.expect_code(0);
    let record = &read_records(&dir.join("e"))[0];
    let counters = record["counters"].as_array().expect("counters");
    let names: Vec<&str> = counters
        .iter()
        .map(|c| c["event"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "major-faults",
            "minor-faults",
            "alignment-faults",
            "cpu-clock",
            "context-switches",
            "cycles",
            "L1-dcache-load-misses"
        ]
    );
    for c in counters {
        match (&c["value"], &c["unavailable_reason"]) {
            (Value::Number(_), Value::Null) => {}
            (Value::Null, Value::String(reason)) => assert!(!reason.is_empty()),
            other => panic!("neither a value nor a reason: {other:?} in {c}"),
        }
    }
    assert!(
        counters[1]["value"].as_f64().unwrap() > 0.0,
        "minor-faults of `true`"
    );
    let summary = &read_batch(&dir.join("e"))["summary"];
    assert!(
        summary["minor-faults"]["all"]["n"].as_u64() == Some(2),
        "{summary}"
    );
    assert!(
        summary.get("instructions").is_none(),
        "only the events asked for are summarised"
    );
    let out = ct(dir.path(), ["run", "--events", "majorfaults", "--", "true"]).run();
    out.expect_code(125);
    assert!(
        out.stderr.contains("did you mean major-faults?"),
        "{}",
        out.describe()
    );
}

#[test]
fn a_failing_first_run_or_first_warm_up_stops_the_batch_as_hyperfine_does() {
    let dir = TempDir::new("stop");
    // 50 runs asked for: the first one fails, the batch stops after it, says why and how to
    // go on, and keeps what it recorded.
    let out = ct(
        dir.path(),
        [
            "run",
            "-n",
            "50",
            "-o",
            "a",
            "--",
            "ls",
            "/nonexistent-coldtrace",
        ],
    )
    .run();
    out.expect_code(1);
    assert_eq!(read_records(&dir.join("a")).len(), 1, "{}", out.describe());
    let said = prose(&out.stderr);
    for want in [
        "coldtrace: ls /nonexistent-coldtrace: stopped",
        "the first counted run (#0) exited with code 2; the last lines of its stderr:",
        "| ls: cannot access '/nonexistent-coldtrace'",
        "use -i/--ignore-failure to count failing runs (-i=2: exit code 2 only)",
        "--output inherit to see the command's output",
        "records: a/runs.jsonl",
    ] {
        assert!(said.contains(want), "{want:?} in{}", out.describe());
    }
    let batch = read_batch(&dir.join("a"));
    assert_eq!(batch["complete"], false);
    assert!(
        batch["stopped_reason"]
            .as_str()
            .is_some_and(|r| r.starts_with("the first counted run (#0) exited with code 2")),
        "{batch:#}"
    );
    // -q keeps it: it is the error that explains exit 1.
    let out = ct(dir.path(), ["run", "-q", "-n", "5", "--", "false"]).run();
    out.expect_code(1);
    assert!(out.stderr.contains("false: stopped"), "{}", out.describe());
    // The first warm-up fails: nothing is counted.
    let out = ct(
        dir.path(),
        [
            "run", "-w", "2", "-n", "5", "-o", "w", "--", "sh", "-c", "exit 4",
        ],
    )
    .run();
    out.expect_code(1);
    assert_eq!(read_records(&dir.join("w")).len(), 1, "{}", out.describe());
    assert!(
        prose(&out.stderr).contains("the first warm-up (#0) exited with code 4"),
        "{}",
        out.describe()
    );
    // A comparison stops as a whole, whichever command failed.
    let out = ct(
        dir.path(),
        ["compare", "-n", "5", "-o", "c", "true", "false"],
    )
    .run();
    out.expect_code(1);
    assert!(out.stderr.contains("false: stopped"), "{}", out.describe());
    let runs = read_records(&dir.join("c/commands/00")).len()
        + read_records(&dir.join("c/commands/01")).len();
    assert_eq!(runs, 2, "one round, then the stop{}", out.describe());
}

#[test]
fn ignore_failure_takes_hyperfines_exit_code_list_and_never_stops() {
    let dir = TempDir::new("ignore");
    std::fs::write(dir.join("words"), "cold\ntrace\n").unwrap();
    let grep = ["grep", "no-such-word", "words"];
    let batch = |flag: &str, out: &str| {
        let mut args = vec!["run", flag, "-n", "3", "-o", out, "--"];
        args.extend(grep);
        ct(dir.path(), args).run()
    };
    // hyperfine's -i, and its two spellings of every code: grep's "no match" (1) counted.
    for (flag, out) in [
        ("-i", "all"),
        ("--ignore-failure=all-non-zero", "named"),
        ("-i=1", "one"),
        ("--ignore-failure=2,1", "list"),
    ] {
        let done = batch(flag, out);
        done.expect_code(0);
        assert_eq!(counted(&dir.join(out)), 3, "{flag}{}", done.describe());
    }
    assert_eq!(
        read_batch(&dir.join("list"))["config"]["ignore_exit_codes"],
        serde_json::json!([2, 1])
    );
    // A code not in the list: the run is rejected, and the batch goes on.
    let done = batch("-i=2", "other");
    done.expect_code(1);
    assert_eq!(read_records(&dir.join("other")).len(), 3);
    assert_eq!(read_batch(&dir.join("other"))["counts"]["rejected"], 3);
    // Bundled with another switch, and a bad list.
    let done = ct(dir.path(), ["run", "-qi=1", "-n", "2", "--", "false"]).run();
    done.expect_code(0);
    for bad in ["-i=x", "-i=1,,2", "-i=256"] {
        let done = ct(dir.path(), ["run", bad, "-n", "2", "--", "false"]).run();
        done.expect_code(125);
        assert!(
            done.stderr
                .contains("expected all-non-zero or exit codes 0-255"),
            "{bad}{}",
            done.describe()
        );
    }
    // A switch that takes no value still says so.
    let done = ct(dir.path(), ["run", "-q=1", "--", "true"]).run();
    done.expect_code(125);
}

#[test]
fn run_chooses_its_count_by_time_unless_n_is_given_and_n_1_is_times_one_run() {
    let dir = TempDir::new("defaults");
    // hyperfine's defaults: at least 10 runs, as many as fit in 3 s. Of a 0.1 s sleep, about
    // 30 whatever the load (a slower first run fits fewer): of `true`, thousands, each with
    // coldtrace's own work around it, which a loaded machine stretched past 30 s.
    let out = ct(dir.path(), ["run", "-q", "-o", "a", "--", "sleep", "0.1"]).run();
    out.expect_code(0);
    let bounds = &read_batch(&dir.join("a"))["config"]["run_bounds"];
    assert_eq!(
        (bounds["min_runs"].as_u64(), bounds["max_time_ns"].as_u64()),
        (Some(10), Some(3_000_000_000)),
        "{bounds}"
    );
    assert!(counted(&dir.join("a")) >= 10, "{}", out.describe());
    // A slow command gets the minimum; warm-ups never make "1 runs".
    let out = ct(
        dir.path(),
        ["run", "--max-time", "0.1", "-o", "b", "--", "sleep", "0.02"],
    )
    .run();
    out.expect_code(0);
    assert_eq!(counted(&dir.join("b")), 10, "{}", out.describe());
    assert!(out.stdout.contains("coldtrace: 10 runs of sleep 0.02 · "));
    let out = ct(dir.path(), ["run", "-n", "1", "-w", "2", "--", "true"]).run();
    out.expect_code(0);
    assert!(
        out.stdout
            .contains("coldtrace: 1 counted run of true · stdout → /dev/null\n"),
        "{}",
        out.describe()
    );
    // -n 1 is `time`'s single run: the command's exit code, stdin and stdout inherited.
    let out = ct(dir.path(), ["run", "-n", "1", "--", "sh", "-c", "exit 7"]).run();
    out.expect_code(7);
    std::fs::write(dir.join("in"), "from stdin\n").unwrap();
    let out = ct(dir.path(), ["run", "-q", "-n", "1", "--", "cat"])
        .stdin_from(&dir.join("in"))
        .run();
    out.expect_code(0);
    assert_eq!(out.stdout, "from stdin\n", "{}", out.describe());
}
