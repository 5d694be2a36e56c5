//! No hang that only SIGKILL ends: every wait of coldtrace's outside its wait for the command
//! watches its signals too, or does not wait at all. A spawner that is stopped or frozen
//! (before, during or after a run) is found or given up, and a request to stop is acted on at
//! once; a cgroup leaf that a command froze is thawed before the next run is born in it; and a
//! batch's group is never one another process holds — under `unshare --pid` with the host's
//! `/proc`, where every batch once took the same name, nor between two such batches.

use super::common::{read_batch, Output, TempDir, BIN};
use super::recorded::{executions, sh, signal_in_clone, spawner_of, start};
use super::{assert_no_raw_controls, assert_records_whole, DEADLINE};
use rustix::process::{Pid, Signal};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Records in `dir/runs.jsonl` so far (0 before it exists).
fn recorded(dir: &Path) -> usize {
    executions(&dir.join("runs.jsonl"))
}

/// Waits up to 10 s until `dir` holds at least `n` records.
fn until_recorded(dir: &Path, n: usize) {
    let until = Instant::now() + Duration::from_secs(10);
    while recorded(dir) < n {
        assert!(
            Instant::now() < until,
            "{} never held {n} records",
            dir.display()
        );
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Sends `signal` to process `pid`.
fn signal(pid: i32, signal: Signal) {
    let _ = rustix::process::kill_process(Pid::from_raw(pid).unwrap(), signal);
}

/// The cgroup v2 hierarchy's root and coldtrace's own cgroup directory (this test's), where
/// this test may change cgroups (as root): `None`, said, elsewhere.
fn cgroups(what: &str) -> Option<(PathBuf, PathBuf)> {
    use coldtrace::measure::cgroup::own_directory;
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    let own = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let root = own_directory(&mountinfo, "0::/\n").ok();
    let own = own_directory(&mountinfo, &own).ok();
    let usable = rustix::process::geteuid().is_root()
        && own.as_ref().is_some_and(|o| {
            rustix::fs::access(o.join("cgroup.procs"), rustix::fs::Access::WRITE_OK).is_ok()
        });
    if !usable {
        eprintln!("skipped {what}: it needs root and a writable cgroup v2 (CI runs as root)");
        return None;
    }
    root.zip(own)
}

/// `coldtrace run -n RUNS -o b -- sh -c 'echo x >> count; BODY'` in `dir`, started.
fn batch(dir: &TempDir, runs: usize, body: &str) -> (Child, String) {
    let count = dir.join("count");
    let args: Vec<String> = ["run", "-n", &runs.to_string(), "-o", "b", "--"]
        .iter()
        .map(|s| s.to_string())
        .chain(sh(&format!("echo x >> {}; {body}", count.display())))
        .collect();
    start(dir, &args)
}

/// The batch in `dir/b` is whole and its command ran once per record that says it ran.
fn assert_each_run_recorded(dir: &TempDir, out: &Output) -> Vec<serde_json::Value> {
    let records = assert_records_whole(&dir.join("b"), true);
    let ran = records
        .iter()
        .filter(|r| r["outcome"]["kind"] != "failed_to_start")
        .count();
    assert_eq!(executions(&dir.join("count")), ran, "{}", out.describe());
    records
}

/// What `batch.json` of `dir/b` says of the spawner.
fn spawner_said(dir: &TempDir) -> String {
    let doc = read_batch(&dir.join("b"));
    doc["spawner"]["unavailable"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

#[test]
fn a_spawner_stopped_between_runs_is_found_and_the_batch_goes_on() {
    let dir = TempDir::new("hangstop");
    let (child, shown) = batch(&dir, 20, "sleep 0.05");
    let spawner = spawner_of(child.id()).expect("the spawner");
    until_recorded(&dir.join("b"), 2);
    signal(spawner, Signal::STOP);
    let out = super::common::finish(child, shown, Instant::now(), DEADLINE);
    assert_no_raw_controls(&out);
    let records = assert_each_run_recorded(&dir, &out);
    assert_eq!(records.len(), 20, "{}", out.describe());
    // Stopped between two runs: found so, killed. Stopped in a clone: it stops once its child
    // has exec'd, before it answers; found so, killed, and that run ran, unmeasured.
    let lost = records
        .iter()
        .filter(|r| r["outcome"]["kind"] == "unmeasured")
        .count();
    let (said, code) = match lost {
        0 => ("found stopped", 0),
        _ => ("ended while starting a run", 1),
    };
    assert!(spawner_said(&dir).contains(said), "{}", out.describe());
    out.expect_code(code);
}

#[test]
fn a_spawner_stopped_while_its_child_is_before_execve_is_killed_and_the_run_recorded() {
    let dir = TempDir::new("hangstopclone");
    for _ in 0..20 {
        let _ = std::fs::remove_dir_all(dir.join("b"));
        let _ = std::fs::remove_file(dir.join("count"));
        let (child, shown) = batch(&dir, 8, "true");
        let landed = signal_in_clone(&child, Signal::STOP);
        let out = super::common::finish(child, shown, Instant::now(), DEADLINE);
        assert_no_raw_controls(&out);
        let records = assert_each_run_recorded(&dir, &out);
        assert_eq!(records.len(), 8, "{}", out.describe());
        if landed {
            let lost = records
                .iter()
                .filter(|r| r["outcome"]["kind"] == "unmeasured")
                .count();
            assert_eq!(lost, 1, "{}", out.describe());
            assert!(spawner_said(&dir).contains("ended while starting a run"));
            out.expect_code(1);
            return;
        }
    }
    panic!("no stop of the spawner landed while its child was before execve in 20 batches");
}

#[test]
fn a_spawner_stopped_during_the_last_run_is_reaped_at_the_end() {
    let dir = TempDir::new("hangstopend");
    let (child, shown) = batch(&dir, 1, "sleep 0.4");
    let spawner = spawner_of(child.id()).expect("the spawner");
    // The run's command sleeps: the spawner waits for the next request, which never comes.
    let until = Instant::now() + Duration::from_secs(10);
    while executions(&dir.join("count")) == 0 {
        assert!(Instant::now() < until, "the command never ran");
        std::thread::sleep(Duration::from_millis(2));
    }
    signal(spawner, Signal::STOP);
    let out = super::common::finish(child, shown, Instant::now(), DEADLINE);
    assert_no_raw_controls(&out);
    out.expect_code(0);
    assert!(out.elapsed < Duration::from_secs(5), "{}", out.describe());
    assert_each_run_recorded(&dir, &out);
    assert!(
        !Path::new(&format!("/proc/{spawner}")).exists(),
        "the spawner was left behind{}",
        out.describe()
    );
}

/// A cgroup made by this test below the hierarchy's root, removed when dropped (its
/// processes, if any are left, killed first).
struct TestGroup(PathBuf);

impl TestGroup {
    fn new(root: &Path, tag: &str) -> TestGroup {
        let path = root.join(format!("hostile-{tag}-{}", std::process::id()));
        std::fs::create_dir(&path).expect("make a test cgroup");
        TestGroup(path)
    }

    fn write(&self, file: &str, value: &str) {
        std::fs::write(self.0.join(file), value)
            .unwrap_or_else(|e| panic!("write {value} to {file}: {e}"));
    }
}

impl Drop for TestGroup {
    fn drop(&mut self) {
        let _ = std::fs::write(self.0.join("cgroup.kill"), "1");
        let _ = std::fs::write(self.0.join("cgroup.freeze"), "0");
        for _ in 0..100 {
            if std::fs::remove_dir(&self.0).is_ok() {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

#[test]
fn a_frozen_spawner_does_not_hold_a_request_to_stop() {
    let Some((root, _)) = cgroups("the frozen spawner") else {
        return;
    };
    let dir = TempDir::new("hangfrozen");
    let frozen = TestGroup::new(&root, "frozen");
    frozen.write("cgroup.freeze", "1");
    let (child, shown) = batch(&dir, 200, "true");
    let spawner = spawner_of(child.id()).expect("the spawner");
    until_recorded(&dir.join("b"), 2);
    frozen.write("cgroup.procs", &spawner.to_string());
    // Frozen between two requests, or in a clone: either way no answer comes.
    std::thread::sleep(Duration::from_millis(300));
    let before = recorded(&dir.join("b"));
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(
        recorded(&dir.join("b")),
        before,
        "the frozen spawner still answers"
    );
    signal(child.id() as i32, Signal::TERM);
    let sent = Instant::now();
    let out = super::common::finish(child, shown, Instant::now(), DEADLINE);
    assert_no_raw_controls(&out);
    out.expect_code(143);
    assert!(
        sent.elapsed() < Duration::from_secs(3),
        "{}",
        out.describe()
    );
    assert_each_run_recorded(&dir, &out);
}

#[test]
fn a_leaf_its_command_froze_is_thawed_before_the_next_run_is_born_in_it() {
    let Some((root, _)) = cgroups("the frozen leaf") else {
        return;
    };
    let dir = TempDir::new("hangleaf");
    // The command leaves its leaf for the root, freezes the leaf, and exits: the leaf is empty
    // and frozen, and a child born in it would be frozen before its execve.
    let body = format!(
        "leaf={root}$(sed -n 's/^0:://p' /proc/self/cgroup); echo $$ > {root}/cgroup.procs; \
         echo 1 > $leaf/cgroup.freeze",
        root = root.display()
    );
    let (child, shown) = batch(&dir, 4, &body);
    let out = super::common::finish(child, shown, Instant::now(), DEADLINE);
    assert_no_raw_controls(&out);
    out.expect_code(0);
    let records = assert_each_run_recorded(&dir, &out);
    assert_eq!(records.len(), 4, "{}", out.describe());
    // It froze its leaf indeed (born in a leaf of the batch's group).
    let leaf = records[0]["cgroup"]["path"].as_str().unwrap_or_default();
    assert!(leaf.contains("/run-"), "{}", records[0]);
}

/// `unshare --pid --fork coldtrace ARGS` in `dir` (the host's `/proc` stays mounted: every
/// PID coldtrace reads there is the host's, but `getpid()` says 1), started.
fn in_pid_namespace(dir: &TempDir, args: &[&str]) -> (Child, String) {
    let mut cmd = Command::new("unshare");
    cmd.args(["--pid", "--fork", BIN])
        .args(args)
        .current_dir(dir.path())
        .env("COLDTRACE_STATE_DIR", "")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let shown = format!("unshare --pid --fork coldtrace {}", args.join(" "));
    (cmd.spawn().expect("spawn unshare"), shown)
}

/// The start time of the host's PID 1 (field 22 of `/proc/1/stat`).
fn start_of_pid_1() -> u64 {
    let stat = std::fs::read_to_string("/proc/1/stat").unwrap();
    let (_, rest) = stat.rsplit_once(") ").unwrap();
    rest.split(' ').nth(19).unwrap().parse().unwrap()
}

/// The cgroup path `batch.json` of `dir` records.
fn group_of(dir: &Path) -> String {
    let doc = read_batch(dir);
    doc["context"]["cgroup"]["path"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

#[test]
fn a_group_directory_another_process_holds_never_holds_a_batch_in_a_pid_namespace() {
    let Some((_, own)) = cgroups("the held group directory") else {
        return;
    };
    let dir = TempDir::new("hangheld");
    // The name every batch took under `unshare --pid` with the host's /proc: held, shared,
    // by another process (any user may lock a directory it can read).
    let held = own.join(format!("coldtrace-1-{}", start_of_pid_1()));
    std::fs::create_dir(&held).expect("make the held directory");
    let mut holder = Command::new("flock")
        .args(["--shared"])
        .arg(&held)
        .args(["sleep", "60"])
        .spawn()
        .expect("spawn flock");
    std::thread::sleep(Duration::from_millis(200));
    let (child, shown) = in_pid_namespace(&dir, &["run", "-n", "2", "-o", "b", "--", "true"]);
    let out = super::common::finish(child, shown, Instant::now(), Duration::from_secs(15));
    let _ = holder.kill();
    let _ = holder.wait();
    let _ = std::fs::remove_dir(&held);
    assert_no_raw_controls(&out);
    out.expect_code(0);
    let group = group_of(&dir.join("b"));
    assert!(!group.is_empty(), "no group{}", out.describe());
    assert_ne!(group, held.display().to_string(), "{}", out.describe());
}

#[test]
fn two_batches_in_pid_namespaces_with_the_hosts_proc_never_wait_for_each_other() {
    let Some(_) = cgroups("two batches in PID namespaces") else {
        return;
    };
    let dir = TempDir::new("hangtwo");
    let (first, first_shown) =
        in_pid_namespace(&dir, &["run", "-n", "1", "-o", "a", "--", "sleep", "3"]);
    // Once the first batch's command sleeps in its leaf, the second starts.
    let until = Instant::now() + Duration::from_secs(10);
    while !super::common::processes_running(&["sleep", "3"])
        .iter()
        .any(|p| std::fs::read_to_string(p.join("cgroup")).is_ok_and(|c| c.contains("/run-")))
    {
        assert!(
            Instant::now() < until,
            "the first batch never ran its command"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let (second, second_shown) =
        in_pid_namespace(&dir, &["run", "-n", "1", "-o", "b", "--", "true"]);
    let second = super::common::finish(second, second_shown, Instant::now(), DEADLINE);
    let first = super::common::finish(first, first_shown, Instant::now(), DEADLINE);
    assert_no_raw_controls(&second);
    second.expect_code(0);
    first.expect_code(0);
    // The second never waited for the first's 3 s.
    assert!(
        second.elapsed < Duration::from_secs(2),
        "{}",
        second.describe()
    );
    let (a, b) = (group_of(&dir.join("a")), group_of(&dir.join("b")));
    assert!(
        !a.is_empty() && !b.is_empty(),
        "{}{}",
        first.describe(),
        second.describe()
    );
    assert_ne!(a, b, "one group for two batches");
}
