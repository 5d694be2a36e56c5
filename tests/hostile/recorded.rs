//! Every run is recorded: the command never runs more often than the records say. The spawner
//! (the small program that clones each run's child) may die — or be killed — at any moment,
//! also while it waits in a clone for its child to reach `execve`; that child then runs on, and
//! is coldtrace's own. It is never started a second time: it is awaited, reaped and recorded as
//! a run that ran but was not measured (`unmeasured`, not counted); a request that made no
//! child is started again by coldtrace itself and measured.
//!
//! The moment of a kill is found, not timed: the spawner is coldtrace's child whose
//! `/proc/PID/exe` is its memfd, and a child before `execve` still runs in the spawner's memory
//! (its `exe` is that memfd until `execve` replaces the memory, which is also when the
//! spawner's wait in the clone ends). A kill of the spawner while such a child is seen before,
//! and still in that memory after it, landed in that wait.
//! coldtrace is given 800 KB of environment, so that its commands' `execve` (which copies it)
//! takes long enough to be seen.

use super::common::{ct, read_batch, Output, TempDir};
use super::{assert_no_raw_controls, assert_no_survivor, assert_records_whole, script, DEADLINE};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Child;
use std::time::{Duration, Instant};

/// The children of process `pid` (of every thread).
pub(super) fn children(pid: u32) -> Vec<i32> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for task in tasks.flatten() {
        let list = std::fs::read_to_string(task.path().join("children")).unwrap_or_default();
        found.extend(
            list.split_whitespace()
                .filter_map(|c| c.parse::<i32>().ok()),
        );
    }
    found
}

/// Whether process `pid` runs in the spawner's memory: the spawner itself, or a child of it
/// before `execve` (its executable is the spawner's memfd until `execve` replaces its memory,
/// which is also when the spawner's wait in the clone ends).
pub(super) fn in_spawner_memory(pid: i32) -> bool {
    std::fs::read_link(format!("/proc/{pid}/exe"))
        .is_ok_and(|exe| exe.to_string_lossy().contains("coldtrace-spawner"))
}

/// The spawner of coldtrace `pid`: its child in the spawner's memory while it is the only
/// one (a child before `execve` exists only while the spawner waits in the clone). `None` once
/// coldtrace has ended, or after 10 s.
pub(super) fn spawner_of(pid: u32) -> Option<i32> {
    let until = Instant::now() + Duration::from_secs(10);
    while Instant::now() < until && Path::new(&format!("/proc/{pid}")).exists() {
        let found: Vec<i32> = children(pid)
            .into_iter()
            .filter(|&c| in_spawner_memory(c))
            .collect();
        if let [only] = found[..] {
            return Some(only);
        }
        std::thread::sleep(Duration::from_micros(200));
    }
    None
}

/// A child of coldtrace `pid` before its `execve`: in the spawner's memory, not the spawner.
pub(super) fn child_before_exec(pid: u32, spawner: i32) -> Option<i32> {
    children(pid)
        .into_iter()
        .find(|&c| c != spawner && in_spawner_memory(c))
}

/// Sends `signal` to the spawner of coldtrace `ct` while a child of it is before `execve`,
/// watching for up to 20 s: whether that child was still before `execve` after the signal
/// (so the signal certainly came while the spawner waited in the clone).
pub(super) fn signal_in_clone(ct: &Child, signal: rustix::process::Signal) -> bool {
    let Some(spawner) = spawner_of(ct.id()) else {
        return false;
    };
    let until = Instant::now() + Duration::from_secs(20);
    while Instant::now() < until && in_spawner_memory(spawner) {
        let Some(child) = child_before_exec(ct.id(), spawner) else {
            continue;
        };
        let pid = rustix::process::Pid::from_raw(spawner).unwrap();
        let _ = rustix::process::kill_process(pid, signal);
        return in_spawner_memory(child);
    }
    false
}

/// `sh -c BODY`, as coldtrace's words after `--`.
pub(super) fn sh(body: &str) -> Vec<String> {
    vec!["sh".into(), "-c".into(), body.into()]
}

/// `coldtrace ARGS…` in `dir`, started (stdout and stderr piped), with eight variables of
/// 100,000 bytes in its environment, which its commands inherit: their `execve` copies them,
/// which keeps a child before `execve` long enough to be seen.
pub(super) fn start(dir: &TempDir, args: &[String]) -> (Child, String) {
    let c = ct(dir.path(), args);
    let shown = format!("HEAVY1..8=<100000 bytes> {}", c.shown());
    let mut cmd = c.cmd;
    for k in 1..=8 {
        cmd.env(format!("HEAVY{k}"), "y".repeat(100_000));
    }
    (cmd.spawn().expect("spawn coldtrace"), shown)
}

/// Lines in `path` (0 when it does not exist): the command's executions.
pub(super) fn executions(path: &Path) -> usize {
    std::fs::read_to_string(path).map_or(0, |t| t.lines().count())
}

/// The records of `dir` whose command ran (every outcome but `failed_to_start`).
fn ran(records: &[Value]) -> usize {
    records
        .iter()
        .filter(|r| r["outcome"]["kind"] != "failed_to_start")
        .count()
}

/// The records of `dir` whose outcome is `unmeasured`.
fn unmeasured(records: &[Value]) -> Vec<&Value> {
    records
        .iter()
        .filter(|r| r["outcome"]["kind"] == "unmeasured")
        .collect()
}

/// `coldtrace run -o b ARGS -- sh -c 'echo x >> count' sh HEAVY…` in `dir`, the spawner
/// killed while a child of it is before `execve`; retried (a fresh batch) until a kill is
/// seen to land there, at most 20 times. The output, the batch directory, and the count file.
fn killed_in_clone(dir: &TempDir, args: &[&str], body: &str) -> (Output, PathBuf, PathBuf) {
    for attempt in 0..20 {
        let b = dir.join(format!("b{attempt}"));
        let count = dir.join(format!("count{attempt}"));
        let mut words: Vec<String> = ["run", "-o", b.to_str().unwrap()]
            .iter()
            .chain(args)
            .map(|s| s.to_string())
            .collect();
        words.push("--".into());
        words.extend(sh(&body.replace("COUNT", count.to_str().unwrap())));
        let (child, shown) = start(dir, &words);
        let landed = signal_in_clone(&child, rustix::process::Signal::KILL);
        let out = super::common::finish(child, shown, Instant::now(), DEADLINE);
        assert_no_raw_controls(&out);
        if landed {
            return (out, b, count);
        }
    }
    panic!("no kill of the spawner landed while its child was before execve in 20 batches");
}

#[test]
fn a_run_whose_spawner_died_before_its_execve_is_recorded_once_as_not_measured() {
    let dir = TempDir::new("unrecorded");
    let (out, b, count) = killed_in_clone(&dir, &["-n", "30"], "echo x >> COUNT");
    // One rejected run: it ran, and nothing of it was measured.
    out.expect_code(1);
    let records = assert_records_whole(&b, true);
    assert_eq!(records.len(), 30, "{}", out.describe());
    assert_eq!(executions(&count), 30, "{}", out.describe());
    let lost = unmeasured(&records);
    assert_eq!(lost.len(), 1, "{}", out.describe());
    let r = lost[0];
    assert_eq!(r["outcome"]["status_kind"], "exited", "{r}");
    assert_eq!(r["outcome"]["code"], 0, "{r}");
    assert_eq!(r["counted"], false, "{r}");
    assert!(r["wall_ns"].is_null(), "{r}");
    assert!(
        r["failure_reason"]
            .as_str()
            .unwrap_or_default()
            .contains("ran but not measured"),
        "{r}"
    );
    // The runs after it were cloned by coldtrace itself, and measured.
    let after = &records[r["index"].as_u64().unwrap() as usize + 1..];
    assert!(
        after.iter().all(|r| r["outcome"]["kind"] == "exited"
            && r["counted"] == true
            && r["runner"]["spawned_by"] == "coldtrace"),
        "{}",
        out.describe()
    );
    let said = out.shown().replace("\n    ", " ");
    assert!(said.contains("ran but not measured"), "{}", out.describe());
    let spawner = &read_batch(&b)["spawner"];
    assert!(
        spawner["unavailable"]
            .as_str()
            .unwrap_or_default()
            .contains("ended while starting a run"),
        "{spawner}"
    );
}

#[test]
fn a_first_run_that_was_not_measured_does_not_stop_the_batch() {
    let dir = TempDir::new("unrecfirst");
    // Until the kill lands in the first run's clone.
    for _ in 0..10 {
        let (out, b, count) = killed_in_clone(&dir, &["-n", "3"], "echo x >> COUNT");
        let records = assert_records_whole(&b, true);
        assert_eq!(records.len(), 3, "{}", out.describe());
        assert_eq!(executions(&count), 3, "{}", out.describe());
        let lost = unmeasured(&records);
        assert_eq!(lost.len(), 1, "{}", out.describe());
        out.expect_code(1);
        if lost[0]["index"] == 0 {
            assert_eq!(lost[0]["role"], "first", "{}", lost[0]);
            let said = out.shown().replace("\n    ", " ");
            assert!(
                said.contains("#0 ran but not measured"),
                "{}",
                out.describe()
            );
            return;
        }
    }
    panic!("no kill landed in the first run's clone in 10 batches");
}

#[test]
fn a_run_that_was_not_measured_is_still_ended_by_its_timeout() {
    let dir = TempDir::new("unrectimeout");
    let sleeper = script(&dir, "ut", "sleep 30");
    let body = format!("echo x >> COUNT; exec {}", sleeper.display());
    let (out, b, count) = killed_in_clone(&dir, &["-n", "2", "-i", "--timeout", "0.5"], &body);
    assert!(out.elapsed < Duration::from_secs(15), "{}", out.describe());
    assert_no_survivor(&sleeper);
    let records = assert_records_whole(&b, true);
    assert_eq!(records.len(), 2, "{}", out.describe());
    assert_eq!(executions(&count), 2, "{}", out.describe());
    let lost = unmeasured(&records);
    assert_eq!(lost.len(), 1, "{}", out.describe());
    // Ended by the timeout's SIGTERM to its process group (the shell exec'd the script).
    assert_eq!(lost[0]["outcome"]["status_kind"], "signaled", "{}", lost[0]);
    assert_eq!(lost[0]["outcome"]["signal_name"], "SIGTERM", "{}", lost[0]);
}

#[test]
fn time_runs_its_command_once_when_the_spawner_dies_before_its_execve() {
    let dir = TempDir::new("unrectime");
    for attempt in 0..20 {
        let count = dir.join(format!("count{attempt}"));
        let body = format!("echo x >> {}; exit 3", count.display());
        let mut words = vec!["time".to_string(), "--".into()];
        words.extend(sh(&body));
        let (child, shown) = start(&dir, &words);
        let landed = signal_in_clone(&child, rustix::process::Signal::KILL);
        let out = super::common::finish(child, shown, Instant::now(), DEADLINE);
        assert_no_raw_controls(&out);
        // The command's own exit code, whether it was measured or not.
        out.expect_code(3);
        assert_eq!(executions(&count), 1, "{}", out.describe());
        if landed {
            return;
        }
    }
    panic!("no kill of the spawner landed while its child was before execve in 20 tries");
}

#[test]
fn a_comparison_runs_each_command_as_often_as_it_records_when_the_spawner_dies() {
    let dir = TempDir::new("unreccompare");
    for attempt in 0..20 {
        let b = dir.join(format!("b{attempt}"));
        let [one, two] = [1, 2].map(|k| dir.join(format!("count{attempt}-{k}")));
        let quote = |words: Vec<String>| coldtrace::text::quote(&words);
        let words = vec![
            "compare".to_string(),
            "-n".into(),
            "8".into(),
            "-o".into(),
            b.display().to_string(),
            quote(sh(&format!("echo x >> {}", one.display()))),
            quote(sh(&format!("echo x >> {}", two.display()))),
        ];
        let (child, shown) = start(&dir, &words);
        let landed = signal_in_clone(&child, rustix::process::Signal::KILL);
        let out = super::common::finish(child, shown, Instant::now(), DEADLINE);
        assert_no_raw_controls(&out);
        for (k, count) in [one, two].iter().enumerate() {
            let records = assert_records_whole(&b.join(format!("commands/{k:02}")), true);
            assert_eq!(executions(count), ran(&records), "{}", out.describe());
            assert_eq!(records.len(), 8, "{}", out.describe());
        }
        if landed {
            return;
        }
    }
    panic!("no kill of the spawner landed while its child was before execve in 20 tries");
}

/// A small pseudo-random sequence (xorshift64*), seeded from the clock and said.
struct Moments(u64);

impl Moments {
    fn next_below(&mut self, bound: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) % bound.max(1)
    }
}

#[test]
fn killing_the_spawner_at_random_moments_never_runs_a_command_more_often_than_recorded() {
    const TRIES: usize = 300;
    const RUNS: usize = 6;
    let dir = TempDir::new("unrecrandom");
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(1, |d| d.as_nanos() as u64)
        | 1;
    let mut moments = Moments(seed);
    let (mut killed, mut total_runs, mut total_records, mut total_lost) = (0, 0, 0, 0);
    // The kills are spread over about one batch's time, measured on the first batch.
    let mut batch_us = 0;
    for attempt in 0..TRIES {
        let b = dir.join(format!("b{attempt}"));
        let count = dir.join(format!("count{attempt}"));
        let mut words: Vec<String> = ["run", "-n", &RUNS.to_string(), "-o", b.to_str().unwrap()]
            .iter()
            .map(|s| s.to_string())
            .collect();
        words.push("--".into());
        words.extend(sh(&format!("echo x >> {}", count.display())));
        let started = Instant::now();
        let (child, shown) = start(&dir, &words);
        if batch_us > 0 {
            let spawner = spawner_of(child.id());
            std::thread::sleep(Duration::from_micros(moments.next_below(batch_us)));
            if let Some(pid) = spawner.and_then(rustix::process::Pid::from_raw) {
                killed += usize::from(
                    rustix::process::kill_process(pid, rustix::process::Signal::KILL).is_ok(),
                );
            }
        }
        let out = super::common::finish(child, shown, started, DEADLINE);
        assert_no_raw_controls(&out);
        if batch_us == 0 {
            batch_us = out.elapsed.as_micros() as u64;
        }
        let records = assert_records_whole(&b, true);
        let runs = executions(&count);
        assert_eq!(
            runs,
            ran(&records),
            "try {attempt} (seed {seed}): the command ran {runs} times{}",
            out.describe()
        );
        assert_eq!(records.len(), RUNS, "{}", out.describe());
        total_runs += runs;
        total_records += records.len();
        total_lost += unmeasured(&records).len();
        let _ = std::fs::remove_dir_all(&b);
    }
    eprintln!(
        "{TRIES} tries (seed {seed}): spawner killed in {killed}; {total_runs} executions, \
         {total_records} records, {total_lost} of them ran but not measured"
    );
    // Some kills landed in a clone's wait, or this test proved nothing about them.
    assert!(
        total_lost > 0,
        "no kill landed in a clone's wait (seed {seed})"
    );
}
