//! Processes: nothing a run starts outlives its `--timeout`, however it left the command's
//! process group or session; what outlives a command that exited normally is named in the
//! record and the table, and left, killed or waited for as `--survivors` says; a process left
//! running by one run is never counted or signalled by the next.

use super::common::{ct, read_batch, Output, TempDir};
use super::{assert_no_raw_controls, assert_no_survivor, assert_records_whole, script, DEADLINE};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// A daemon: one process of its own name (a link to sleep(1) named by `unique_name`),
/// sleeping `seconds`, ignoring SIGTERM when `stubborn`.
struct Daemon {
    /// The link: the name its process is found by.
    link: PathBuf,
    /// The shell words that start it.
    start: String,
}

fn daemon(dir: &TempDir, tag: &str, seconds: &str, stubborn: bool) -> Daemon {
    let sleep = ["/bin/sleep", "/usr/bin/sleep"]
        .into_iter()
        .find(|p| Path::new(p).exists())
        .expect("sleep(1)");
    let link = dir.join(super::unique_name(tag));
    std::os::unix::fs::symlink(sleep, &link).unwrap();
    let l = link.display();
    let start = if stubborn {
        format!("sh -c \"trap '' TERM; exec {l} {seconds}\"")
    } else {
        format!("{l} {seconds}")
    };
    Daemon { link, start }
}

/// A command that starts `daemon` in a session of its own (`setsid`), through a double fork,
/// or as a background job of its own process group (`bg`), waits until it runs under its
/// name, then sleeps `then` seconds and exits 0.
fn starter(dir: &TempDir, tag: &str, daemon: &Daemon, how: &str, then: &str) -> PathBuf {
    // Its output goes nowhere: a daemon holding the test's pipes would hold the test.
    let d = format!("{} >/dev/null 2>&1", daemon.start);
    let start = match how {
        "setsid" => format!("setsid {d} &"),
        "double fork" => format!("( setsid {d} & ) &"),
        _ => format!("{d} &"),
    };
    let name = name(&daemon.link);
    let settle = format!(
        "i=0; until pgrep -x {name} >/dev/null || [ $i -ge 1000 ]; do sleep 0.01; i=$((i+1)); done"
    );
    script(dir, tag, &format!("{start}\n{settle}\nsleep {then}"))
}

/// Kills every process running `path` (a survivor the test asked to be left), then checks
/// that none is left.
fn end_left(path: &Path) {
    let _ = std::process::Command::new("pkill")
        .args(["-KILL", "-f", path.to_str().unwrap()])
        .status();
    assert_no_survivor(path);
}

/// `coldtrace LINE` (its words split at spaces) in `dir` (a fresh `b`), under the deadline.
fn run(dir: &TempDir, line: &str) -> Output {
    let _ = std::fs::remove_dir_all(dir.join("b"));
    let out = ct(dir.path(), line.split(' ')).run_within(DEADLINE);
    assert_no_raw_controls(&out);
    out
}

/// Stderr says `text` (its continuation lines joined back).
fn assert_says(out: &Output, text: &str) {
    let joined = out.stderr.replace("\n    ", " ").replace("\n  ", " ");
    assert!(joined.contains(text), "not said: {text}{}", out.describe());
}

/// The names (`comm`) of the processes a `survivors` object lists.
fn names(survivors: &Value) -> Vec<String> {
    let listed = survivors["processes"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    listed
        .iter()
        .filter_map(|p| p["comm"].as_str().map(str::to_owned))
        .collect()
}

/// The file name of `path` (the `comm` of a process running the script).
fn name(path: &Path) -> String {
    path.file_name().unwrap().to_string_lossy().into_owned()
}

/// `survivors` lists `daemon`, and only it.
fn assert_settled(survivors: &Value, daemon: &Path) {
    assert_eq!(names(survivors), [name(daemon)], "{survivors}");
    assert_eq!(survivors["count"], 1, "{survivors}");
}

/// The `survivors` object of record `i` of `dir/b`.
fn survivors_of(dir: &TempDir, i: usize) -> Value {
    assert_records_whole(&dir.join("b"), true)[i]["survivors"].clone()
}

#[test]
fn a_timeout_reaches_a_grandchild_that_left_the_session() {
    let dir = TempDir::new("prsetsid");
    for (how, tag) in [("setsid", "ts"), ("double fork", "td")] {
        let d = daemon(&dir, tag, "30", false);
        let cmd = starter(&dir, &format!("{tag}s"), &d, how, "30");
        let c = cmd.to_str().unwrap();
        let out = run(&dir, &format!("run -n 2 -o b --timeout 0.5 -- {}", c));
        out.expect_code(1);
        assert!(out.elapsed < Duration::from_secs(10), "{}", out.describe());
        assert_no_survivor(&d.link);
        assert_no_survivor(&cmd);
        let records = assert_records_whole(&dir.join("b"), true);
        assert_eq!(records[0]["outcome"]["kind"], "timed_out", "{}", records[0]);
        // It was sent SIGTERM with the command's group, though it was in none of them.
        let s = &records[0]["survivors"];
        // Dead of it by the time the command was reaped, or right after: never left.
        assert_ne!(s["action"], "left", "{how}: {s}");
        assert_eq!(s["seen_by"], "descendants", "{s}");
    }
}

#[test]
fn a_timeout_kills_a_grandchild_that_left_the_session_and_ignores_sigterm() {
    let dir = TempDir::new("prstubborn");
    let d = daemon(&dir, "st", "30", true);
    let cmd = starter(&dir, "sts", &d, "double fork", "30");
    let line = format!(
        "run -n 1 --json -o b --timeout 0.4 --kill-after 0.4 -- {}",
        cmd.display()
    );
    let out = run(&dir, &line);
    out.expect_code(143);
    assert!(out.elapsed < Duration::from_secs(10), "{}", out.describe());
    assert_no_survivor(&d.link);
    let r = out.json();
    assert_eq!(r["outcome"]["tree_killed"], "timeout", "{r:#}");
    assert_eq!(r["survivors"]["action"], "killed", "{r:#}");
    assert!(names(&r["survivors"]).contains(&name(&d.link)), "{r:#}");
}

#[test]
fn a_background_job_that_outlives_the_command_is_named_in_the_record_and_the_table() {
    let dir = TempDir::new("prbg");
    let d = daemon(&dir, "bg", "30", false);
    let cmd = starter(&dir, "bgs", &d, "bg", "0");
    let out = run(&dir, &format!("run -n 2 -o b -- {}", cmd.to_str().unwrap()));
    out.expect_code(0);
    // The job, each run's.
    let s = survivors_of(&dir, 0);
    assert_eq!(s["action"], "left", "{s}");
    assert_settled(&s, &d.link);
    let pid = s["processes"][0]["pid"].as_i64().unwrap();
    let text = out.stderr.replace("\n    ", " ");
    let said = format!(
        "survivors of 2 runs (first #0): {} processes left running: {pid} ({})",
        s["count"].as_u64().unwrap() + survivors_of(&dir, 1)["count"].as_u64().unwrap(),
        name(&d.link)
    );
    assert!(text.contains(&said), "{}", out.describe());
    // Still running, as the record says: the test ends it.
    assert!(Path::new(&format!("/proc/{pid}")).exists());
    end_left(&d.link);
}

#[test]
fn survivors_kill_ends_every_process_a_run_left() {
    let dir = TempDir::new("prkill");
    let d = daemon(&dir, "kl", "30", true);
    let cmd = starter(&dir, "kls", &d, "double fork", "0");
    let c = cmd.to_str().unwrap();
    let out = run(&dir, &format!("run -n 3 -o b --survivors kill -- {}", c));
    out.expect_code(0);
    assert_no_survivor(&d.link);
    for i in 0..3 {
        let s = survivors_of(&dir, i);
        assert_eq!(s["count"], 1, "{s}");
        assert_eq!(s["action"], "killed", "{s}");
    }
    assert_says(&out, "3 processes killed");
}

#[test]
fn survivors_wait_waits_for_them_and_the_timeout_bounds_the_wait() {
    let dir = TempDir::new("prwait");
    let quick = daemon(&dir, "wq", "0.4", false);
    let cmd = starter(&dir, "wqs", &quick, "setsid", "0");
    let c = cmd.to_str().unwrap();
    let out = run(&dir, &format!("run -n 2 -o b --survivors wait -- {}", c));
    out.expect_code(0);
    let s = survivors_of(&dir, 1);
    assert_eq!(s["action"], "waited", "{s}");
    assert!(s["waited_ns"].as_u64().unwrap() >= 300_000_000, "{s}");
    assert_no_survivor(&quick.link);
    // One that would sleep for ever is killed at the run's limit; the run itself succeeded.
    let slow = daemon(&dir, "ws", "30", true);
    let cmd = starter(&dir, "wss", &slow, "setsid", "0");
    let c = cmd.to_str().unwrap();
    let out = run(
        &dir,
        &format!("run -n 2 -o b --survivors wait --timeout 0.5 -- {c}"),
    );
    out.expect_code(0);
    assert!(out.elapsed < Duration::from_secs(10), "{}", out.describe());
    let s = survivors_of(&dir, 0);
    assert_eq!(s["action"], "killed", "{s}");
    assert_no_survivor(&slow.link);
}

#[test]
fn sigterm_while_survivors_are_awaited_kills_them_and_ends_the_batch() {
    let dir = TempDir::new("prwaitterm");
    let slow = daemon(&dir, "wt", "30", true);
    let ready = dir.join("ready");
    let cmd = script(
        &dir,
        "wts",
        &format!(
            "setsid {} >/dev/null 2>&1 &\n: > {}",
            slow.start,
            ready.display()
        ),
    );
    let line = format!("run -n 3 -o b --survivors wait -- {}", cmd.display());
    let c = ct(dir.path(), line.split(' '));
    let (out, took) = super::signal_when(c, rustix::process::Signal::TERM, |_| {
        let until = Instant::now() + Duration::from_secs(10);
        while !ready.exists() && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(5));
        }
        std::thread::sleep(Duration::from_millis(300));
    });
    out.expect_code(143);
    assert!(took < Duration::from_secs(5), "{took:?}{}", out.describe());
    assert_no_survivor(&slow.link);
    let records = assert_records_whole(&dir.join("b"), true);
    assert_eq!(records.len(), 1);
    assert_eq!(
        records[0]["survivors"]["action"], "killed",
        "{}",
        records[0]
    );
    assert_eq!(records[0]["interrupted_by"], "SIGTERM");
    assert_eq!(read_batch(&dir.join("b"))["interrupted_by"], "SIGTERM");
}

#[test]
fn a_process_left_by_one_run_is_neither_counted_nor_signalled_by_the_next() {
    let dir = TempDir::new("prspared");
    let d = daemon(&dir, "sp", "30", false);
    let cmd = starter(&dir, "sps", &d, "setsid", "0");
    let c = cmd.to_str().unwrap();
    // Each run leaves one; the later runs' own timeouts and kills never touch the earlier ones.
    let out = run(&dir, &format!("run -n 3 -o b --timeout 5 -- {c}"));
    out.expect_code(0);
    let pids: Vec<i64> = (0..3)
        .map(|i| {
            let s = survivors_of(&dir, i);
            // The daemon and its sleep: none of the earlier runs' counted again.
            assert_settled(&s, &d.link);
            s["processes"][0]["pid"].as_i64().unwrap()
        })
        .collect();
    assert!(pids[0] != pids[1] && pids[1] != pids[2], "{pids:?}");
    for pid in &pids {
        assert!(
            Path::new(&format!("/proc/{pid}")).exists(),
            "{pid} was signalled"
        );
    }
    end_left(&d.link);
}

#[test]
fn a_daemon_started_by_prepare_is_said_and_spared_by_the_runs() {
    let dir = TempDir::new("prprepare");
    let d = daemon(&dir, "pp", "30", false);
    let prepare = format!("setsid {} >/dev/null 2>&1 &", d.start);
    let args = ["run", "-n", "2", "-o", "b", "--prepare", &prepare];
    let out = ct(
        dir.path(),
        [&args[..], &["--survivors", "kill", "--", "true"]].concat(),
    )
    .run_within(DEADLINE);
    out.expect_code(0);
    assert_says(&out, "--prepare left 1 process running");
    // --survivors is about the measured command: the prepare's daemon is no run's survivor.
    for i in 0..2 {
        assert_eq!(survivors_of(&dir, i)["count"], 0);
    }
    end_left(&d.link);
}

#[test]
fn a_tree_that_keeps_forking_is_killed_whole_at_its_timeout() {
    let dir = TempDir::new("prforks");
    let d = daemon(&dir, "fk", "30", true);
    // New sessions, one after another, for as long as it lives (at most 300).
    let cmd = script(
        &dir,
        "fks",
        &format!(
            "trap '' TERM; i=0; while [ $i -lt 300 ]; do setsid {} >/dev/null 2>&1 & \
             i=$((i+1)); sleep 0.01; done; wait",
            d.start
        ),
    );
    let c = cmd.to_str().unwrap();
    let out = run(
        &dir,
        &format!("run -n 1 -o b --timeout 0.5 --kill-after 0.3 -- {c}"),
    );
    out.expect_code(137);
    assert!(out.elapsed < Duration::from_secs(15), "{}", out.describe());
    assert_no_survivor(&d.link);
    assert_no_survivor(&cmd);
    let r = &assert_records_whole(&dir.join("b"), true)[0];
    assert_eq!(r["outcome"]["tree_killed"], "timeout", "{r}");
}

#[test]
fn a_stopped_grandchild_in_a_session_of_its_own_is_continued_and_ended_by_the_timeout() {
    let dir = TempDir::new("prstopped");
    let stops = script(&dir, "so", "kill -STOP $$; sleep 30");
    let d = Daemon {
        start: stops.display().to_string(),
        link: stops,
    };
    let cmd = starter(&dir, "sos", &d, "setsid", "30");
    let c = cmd.to_str().unwrap();
    let out = run(&dir, &format!("run -n 1 -o b --timeout 0.5 -- {}", c));
    out.expect_code(143);
    assert!(out.elapsed < Duration::from_secs(10), "{}", out.describe());
    assert_no_survivor(&d.link);
}

#[test]
fn time_says_nothing_of_survivors_and_leaves_them_as_gnu_time_does() {
    let dir = TempDir::new("prtime");
    let d = daemon(&dir, "tm", "30", false);
    let cmd = starter(&dir, "tms", &d, "setsid", "0");
    let out = ct(dir.path(), ["time", "-f", "%x", cmd.to_str().unwrap()]).run_within(DEADLINE);
    out.expect_code(0);
    assert_eq!(out.stderr, "0\n", "{}", out.describe());
    end_left(&d.link);
}
