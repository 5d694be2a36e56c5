//! `--cold-cycles` on the built binary: M cycles of { evict; K runs } give every position after
//! the cold action M samples and the cold penalty an interval; in a comparison the cycles, not
//! the runs, are interleaved; the flag's misuses are one-line errors.
#![forbid(unsafe_code)]

mod common;

use common::{ct, data_file, read_batch, read_records, TempDir};
use serde_json::Value;

#[test]
fn five_cycles_of_three_cold_cats_give_five_samples_per_position_and_an_interval() {
    let tmp = TempDir::new("cycles");
    assert_eq!(
        coldtrace::measure::cache::is_tmpfs(tmp.path()),
        Some(false),
        "eviction needs a disk-backed temporary directory"
    );
    let f = data_file(&tmp, "data.bin", 16);
    let out = ct(
        tmp.path(),
        [
            "run",
            "-n",
            "3",
            "--cold-cycles",
            "5",
            "-o",
            "b",
            "--evict",
            &f,
            "--",
            "cat",
            &f,
        ],
    )
    .run_within(std::time::Duration::from_secs(120));
    out.expect_code(0);
    let runs = read_records(&tmp.join("b"));
    assert_eq!(runs.len(), 15);
    for (i, r) in runs.iter().enumerate() {
        let (cycle, position) = (i / 3, i % 3);
        assert_eq!(r["cycle"]["cycle"], cycle as u64, "{r}");
        assert_eq!(r["cycle"]["position"], position as u64, "{r}");
        let role = match (cycle, position) {
            (0, 0) => "first",
            (_, 0) => "cold",
            _ => "warm",
        };
        assert_eq!(r["role"], role, "run {i}");
        assert_eq!(
            r["cold_action"].is_null(),
            position != 0,
            "run {i}: evicted at position 0"
        );
    }
    let batch = read_batch(&tmp.join("b"));
    let cycles = &batch["cycles"];
    assert_eq!(
        (cycles["cycles"].as_u64(), cycles["runs_per_cycle"].as_u64()),
        (Some(5), Some(3))
    );
    let positions = cycles["positions"].as_array().unwrap();
    let ns: Vec<u64> = positions.iter().map(|p| p["n"].as_u64().unwrap()).collect();
    assert_eq!(ns, [5, 5, 5], "five samples per position");
    let labels: Vec<&str> = positions
        .iter()
        .map(|p| p["label"].as_str().unwrap())
        .collect();
    assert_eq!(labels, ["cold", "lightly cached", "warm"]);
    // Position 0 read the file from storage every cycle (16 MiB = 32,768 blocks).
    let cold_blocks = positions[0]["block_in"]["min"].as_f64().unwrap();
    assert!(cold_blocks * 512.0 >= (15 << 20) as f64, "{}", positions[0]);
    let penalty = &cycles["penalty"];
    assert_eq!(penalty["warm_positions"], serde_json::json!([2]));
    let (lo, hi) = (penalty["ci_low"].as_f64(), penalty["ci_high"].as_f64());
    let ratio = penalty["ratio"].as_f64().unwrap();
    assert!(
        lo.is_some_and(|lo| lo <= ratio) && hi.is_some_and(|hi| ratio <= hi),
        "an interval around the ratio: {penalty}"
    );
    // The cold runs are summarised apart: the warm summary has the ten warm runs only.
    assert_eq!(batch["summary"]["wall_ns"]["warm"]["n"], 10);
    assert_eq!(batch["summary"]["wall_ns"]["all"]["n"], 15);
    let text = out.shown().split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        text.contains("5 cycles of { cold action; 3 runs }"),
        "{}",
        out.describe()
    );
    assert!(
        text.contains("[95% CI") || text.contains("95% CI"),
        "{}",
        out.describe()
    );
    // The measured penalty is per cycle: each cold run minus its own cycle's warm run (#2).
    let d = &penalty["per_cycle"];
    let wall = |i: usize| runs[i]["wall_ns"].as_f64().unwrap();
    let mean = (0..5).map(|c| wall(3 * c) - wall(3 * c + 2)).sum::<f64>() / 5.0;
    assert_eq!(d["cycles"], 5, "{d}");
    assert!(
        (d["mean_wall_ns"].as_f64().unwrap() - mean).abs() < 1.0,
        "{mean}: {d}"
    );
    if d["basis"] == "schedstat" {
        let part = |k: &str| d[k].as_f64().unwrap();
        let sum = part("cpu_ns") + part("runqueue_ns") + part("blocked_ns");
        assert!((sum - mean).abs() < 1.0, "the parts add up: {d}");
    }
    // One penalty in the output: the cycles'. The first run is cycle 0's cold run.
    assert!(batch["first_penalty"].is_null(), "{batch:#}");
    assert!(batch["first_penalty_unavailable"]
        .as_str()
        .unwrap()
        .contains("cycle 0's cold run"));
    assert!(!text.contains("first run +"), "{}", out.describe());
    let headline = if d["significant"] == true {
        "cold penalty, measured over 5 cycles: "
    } else {
        "no cold penalty measured over 5 cycles: "
    };
    assert!(text.contains(headline), "{headline} in {}", out.describe());
}

#[test]
fn fewer_than_five_cycles_say_why_there_is_no_interval() {
    let tmp = TempDir::new("cycles-few");
    let f = data_file(&tmp, "d", 1);
    let out = ct(
        tmp.path(),
        [
            "run",
            "-n",
            "2",
            "--cold-cycles",
            "3",
            "-o",
            "b",
            "--evict",
            &f,
            "--",
            "cat",
            &f,
        ],
    )
    .run();
    out.expect_code(0);
    let penalty = &read_batch(&tmp.join("b"))["cycles"]["penalty"];
    assert!(penalty["ci_low"].is_null(), "{penalty}");
    assert_eq!(
        penalty["no_interval"],
        "3 cycles: an interval needs at least 5"
    );
    assert_eq!(penalty["warm_positions"], serde_json::json!([1]));
}

#[test]
fn a_comparison_interleaves_whole_cycles() {
    let tmp = TempDir::new("cycles-compare");
    let f = data_file(&tmp, "d", 1);
    let out = ct(
        tmp.path(),
        [
            "compare",
            "-q",
            "-n",
            "2",
            "--cold-cycles",
            "2",
            "-o",
            "c",
            "--evict",
            &f,
            &format!("cat {f}"),
            "true",
        ],
    )
    .run();
    out.expect_code(0);
    // Every run of both commands, in the order they ran (their rounds and positions).
    let mut order: Vec<(u64, u64, u64, Value)> = Vec::new();
    for command in 0..2u64 {
        for r in read_records(&tmp.join(format!("c/commands/{command:02}"))) {
            let slot = &r["slot"];
            order.push((
                slot["round"].as_u64().unwrap(),
                slot["position"].as_u64().unwrap(),
                r["index"].as_u64().unwrap(),
                r["cycle"].clone(),
            ));
        }
    }
    order.sort_by_key(|(round, position, index, _)| (*round, *position, *index));
    let commands: Vec<u64> = order.iter().map(|(_, p, ..)| *p).collect();
    assert_eq!(
        commands,
        [0, 0, 1, 1, 0, 0, 1, 1],
        "a cycle per turn: {order:?}"
    );
}

#[test]
fn cold_cycles_misuse_is_one_line_each() {
    let tmp = TempDir::new("cycles-usage");
    for (args, says) in [
        (
            vec!["run", "-n", "2", "--cold-cycles", "3", "--", "true"],
            "needs --evict PATH or --drop-caches",
        ),
        (
            vec![
                "run",
                "-n",
                "2",
                "--cold-cycles",
                "3",
                "--evict",
                ".",
                "--cold-first-only",
                "--",
                "true",
            ],
            "choose one",
        ),
        (
            vec![
                "run",
                "-n",
                "2",
                "--cold-cycles",
                "0",
                "--evict",
                ".",
                "--",
                "true",
            ],
            "--cold-cycles",
        ),
        (
            vec![
                "run",
                "--max-time",
                "1",
                "--cold-cycles",
                "2",
                "--evict",
                ".",
                "--",
                "true",
            ],
            "needs -n K",
        ),
    ] {
        let out = ct(tmp.path(), args.clone()).run();
        out.expect_code(125);
        assert_eq!(out.shown_lines().len(), 1, "{}", out.describe());
        assert!(out.shown().contains(says), "{args:?}: {}", out.describe());
    }
}
