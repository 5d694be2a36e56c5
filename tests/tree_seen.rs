//! The first run's penalty of a process tree as a person sees it, at 80 columns: the sentence
//! under the table names the tree and its parts (the largest first), or, where the tree is not
//! traced (`COLDTRACE_TREE=off`, as without privilege), the main thread's split labelled, with
//! the CPU the rest of the tree used and where; `report` names the parts beside the penalty and
//! its picture draws them.
#![forbid(unsafe_code)]

mod common;

use common::{ct, read_batch, Output, TempDir};
use serde_json::Value;
use std::time::Duration;

/// One batch at a time: two spinning first runs would queue each other for the CPUs.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The command: a shell that forks the program (it is not the shell's last command), which
/// spins 300 ms of CPU in the first run only: two tasks, the penalty in the child.
fn command(tmp: &TempDir) -> Vec<String> {
    let program = common::compile(tmp.path(), "spin-first", common::SPIN_FIRST, &[]);
    let marker = tmp.join("marker");
    std::fs::write(&marker, b"first").unwrap();
    vec![
        "sh".into(),
        "-c".into(),
        "\"$0\" \"$1\" 300; true".into(),
        program.display().to_string(),
        marker.display().to_string(),
    ]
}

/// `coldtrace run -n 5 -o b -- CMD…` at 80 columns, `COLDTRACE_TREE` set to `tree` when
/// given; the output and batch.json.
fn batch(tmp: &TempDir, tree: Option<&str>) -> (Output, Value) {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let mut args: Vec<String> = ["run", "-n", "10", "-o", "b", "--"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    args.extend(command(tmp));
    // In a session of its own at autogroup nice -20 (root): a loaded machine's other sessions
    // would make the spinning first run mostly a wait for a CPU.
    let mut run = ct(tmp.path(), &args)
        .ahead_of_other_sessions()
        .env("COLUMNS", "80");
    if let Some(value) = tree {
        run = run.env("COLDTRACE_TREE", value);
    }
    let out = run.run_within(Duration::from_secs(120));
    out.expect_code(0);
    let doc = read_batch(&tmp.join("b"));
    (out, doc)
}

/// Every line fits 80 columns.
fn fits(what: &str, text: &str) {
    for line in text.lines() {
        assert!(
            line.chars().count() <= 80,
            "{what}: a line wider than 80 columns:\n{line}\n\n{text}"
        );
    }
}

/// The sentence under the table, its folded lines joined.
fn sentence(shown: &str) -> String {
    let unfolded = shown.replace("\n    ", " ");
    let line = unfolded
        .lines()
        .find(|l| l.trim_start().starts_with("first run"))
        .unwrap_or_else(|| panic!("no sentence about the first run:\n{shown}"));
    line.trim().to_string()
}

fn ms(v: &Value) -> f64 {
    v.as_f64().unwrap_or(f64::NAN) / 1e6
}

/// The first run stands out (300 ms of CPU over runs of a few ms), whatever the load.
fn standing_out(doc: &Value) -> &Value {
    let p = &doc["first_penalty"];
    assert_eq!(p["significant"], true, "{p:#}");
    p
}

#[test]
fn the_sentence_names_the_tree_and_its_parts_the_largest_first() {
    if !rustix::process::geteuid().is_root() {
        println!("skipped: the tree's states need root (CI runs as root)");
        return;
    }
    let tmp = TempDir::new("seen-tree");
    let (out, doc) = batch(&tmp, None);
    fits("the table", &out.shown());
    let p = standing_out(&doc);
    assert_eq!(p["basis"], "tree", "{p:#}");
    let t = &p["tree"];
    assert_eq!(t["tasks"], 2, "the shell and the program: {p:#}");
    assert!(ms(&t["on_cpu_ns"]) >= 280.0, "300 ms of CPU: {p:#}");
    let said = sentence(&out.shown());
    println!("{said}");
    assert!(said.contains("; the tree (2 tasks) was "), "{said}");
    // The parts in the order of their size, as batch.json has them.
    let mut parts = [
        ("on a CPU +", ms(&t["on_cpu_ns"])),
        (
            "uninterruptible (storage, faults, kernel locks) ",
            ms(&t["uninterruptible_ns"]),
        ),
        ("waiting for a CPU ", ms(&t["queued_ns"])),
        ("asleep ", ms(&t["sleeping_ns"])),
    ];
    parts.sort_by(|a, b| b.1.abs().total_cmp(&a.1.abs()));
    let at: Vec<usize> = parts
        .iter()
        .map(|(words, _)| {
            said.find(words)
                .unwrap_or_else(|| panic!("{words:?} is not said: {said}"))
        })
        .collect();
    assert!(at.windows(2).all(|w| w[0] < w[1]), "largest first: {said}");
    assert!(!said.contains("main thread"), "{said}");

    // report: the group line says the verdict in one line, at 80 columns.
    let report = ct(tmp.path(), ["report", "b"]).env("COLUMNS", "80").run();
    report.expect_code(0);
    fits("report", &report.stdout);
    let joined = report
        .stdout
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert!(
        joined.contains("first-run penalty +")
            && (joined.contains(": time") || joined.contains(", time")),
        "{}",
        report.stdout
    );

    // The picture's penalty panel draws the four parts.
    let svg = tmp.join("b.svg");
    let picture = ct(tmp.path(), ["report", "--svg", "b.svg", "b"]).run();
    picture.expect_code(0);
    let drawn = std::fs::read_to_string(&svg).expect("the picture");
    for part in ["on a CPU", "waiting for a CPU", "uninterruptible", "asleep"] {
        assert!(drawn.contains(part), "{part} is not drawn");
    }
}

#[test]
fn untraced_the_main_threads_split_is_labelled_with_the_trees_cpu_elsewhere() {
    let tmp = TempDir::new("seen-main-thread");
    let (out, doc) = batch(&tmp, Some("off"));
    fits("the table", &out.shown());
    let p = standing_out(&doc);
    assert_eq!(p["basis"], "main thread", "{p:#}");
    let t = &p["tree"];
    let why = t["unavailable"].as_str().unwrap_or_default();
    assert!(why.contains("COLDTRACE_TREE=off"), "{p:#}");
    assert!(t["on_cpu_ns"].is_null(), "{p:#}");
    // The shell and the program it forks, from perf's task records, in both runs.
    assert_eq!(
        (&t["tasks"], &t["reference_tasks"]),
        (&2.into(), &2.into()),
        "{p:#}"
    );
    // The program's 300 ms ran in a child process of the shell (rounded to 10 ms ticks).
    assert!(ms(&t["children_cpu_ns"]) >= 270.0, "{p:#}");
    assert!(ms(&t["cpu_elsewhere_ns"]) >= 270.0, "{p:#}");
    let said = sentence(&out.shown());
    println!("{said}");
    assert!(
        said.contains("; main thread only (the tree ran 2 tasks; COLDTRACE_TREE=off): "),
        "{said}"
    );
    for words in [" off CPU", " on a CPU", " waiting for a CPU"] {
        assert!(said.contains(words), "{words:?}: {said}");
    }
    let rest = said
        .split_once("; the rest of the tree used +")
        .map(|(_, rest)| rest)
        .unwrap_or_else(|| panic!("the tree's CPU elsewhere is not said: {said}"));
    assert!(
        rest.contains(" in child processes)") || rest.contains(" in child processes; "),
        "{said}"
    );
    // rusage's system time is the whole tree's: never beside the main thread's CPU.
    if let Some((before, _)) = said.split_once("sys ≈") {
        assert!(
            before.contains("; the rest of the tree used +"),
            "sys is the tree's: {said}"
        );
    }
}

#[test]
fn a_tree_value_other_than_off_is_refused_with_one_line() {
    let tmp = TempDir::new("seen-bad-value");
    let out = ct(tmp.path(), ["run", "-n", "1", "--", "true"])
        .env("COLDTRACE_TREE", "of")
        .run();
    out.expect_code(125);
    let lines = out.stderr_lines();
    assert_eq!(lines.len(), 1, "{}", out.stderr);
    assert!(
        lines[0].contains("COLDTRACE_TREE") && lines[0].contains("off"),
        "{}",
        out.stderr
    );
}
