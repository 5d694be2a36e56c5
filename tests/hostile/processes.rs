//! Processes: nothing a run starts outlives its `--timeout`, however it left the command's
//! process group or session; what outlives a command that exited normally is named in the
//! record and the table, and left, killed or waited for as `--survivors` says; a process left
//! running by one run is never counted or signalled by the next.

use super::common::{ct, read_batch, Output, TempDir};
use super::{
    assert_no_raw_controls, assert_no_survivor, assert_records_whole, may_mount,
    run_in_private_mounts, script, DEADLINE,
};
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
/// or as a background job of its own process group (`bg`), waits until that daemon (not one an
/// earlier run left under the same name) runs under its name, then sleeps `then` seconds and
/// exits 0.
fn starter(dir: &TempDir, tag: &str, daemon: &Daemon, how: &str, then: &str) -> PathBuf {
    // Its output goes nowhere: a daemon holding the test's pipes would hold the test.
    let d = format!("{} >/dev/null 2>&1", daemon.start);
    // `setsid` (not a group leader here) and `sh -c "…; exec …"` exec in place: the PID of the
    // job is the daemon's.
    let name = name(&daemon.link);
    let settle = format!(
        "p=$!; i=0; until {{ read c </proc/$p/comm; }} 2>/dev/null && [ \"$c\" = {name} ] \
         || [ $i -ge 1000 ]; do sleep 0.01; i=$((i+1)); done"
    );
    let start = match how {
        "setsid" => format!("setsid {d} &\n{settle}"),
        // The subshell ends once its child, orphaned, runs as the daemon.
        "double fork" => format!("( setsid {d} &\n{settle}\n)"),
        _ => format!("{d} &\n{settle}"),
    };
    script(dir, tag, &format!("{start}\nsleep {then}"))
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

/// The terminal says `text` (its continuation lines joined back): a notice on stderr, or the
/// table on stdout.
pub(super) fn assert_says(out: &Output, text: &str) {
    let joined = out.shown().replace("\n    ", " ").replace("\n  ", " ");
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

/// The PIDs of the live processes (no zombies) running `path`.
fn live_pids(path: &Path) -> Vec<i32> {
    super::processes_of(path)
        .iter()
        .filter(|stat| {
            stat.rsplit_once(") ")
                .is_some_and(|(_, rest)| !rest.starts_with('Z'))
        })
        .filter_map(|stat| stat.split(' ').next()?.parse().ok())
        .collect()
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
        // Its cgroup holds it where the batch has one, else coldtrace's descendants do.
        let has_group = !read_batch(&dir.join("b"))["context"]["cgroup"]["path"].is_null();
        let seen_by = if has_group { "cgroup" } else { "descendants" };
        assert_eq!(s["seen_by"], seen_by, "{s}");
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
    let text = out.shown().replace("\n    ", " ");
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
    let quick = daemon(&dir, "wq", "30", false);
    let cmd = starter(&dir, "wqs", &quick, "setsid", "0");
    let line = format!("run -n 2 -o b --survivors wait -- {}", cmd.display());
    let c = ct(dir.path(), line.split(' '));
    let shown = c.shown();
    let mut command = c.cmd;
    let started = Instant::now();
    let child = command.spawn().expect("spawn coldtrace");
    // Each run's daemon is ended 400 ms after its command was reaped, while coldtrace waits
    // for it (not 400 ms after it started, of which a loaded machine may spend most before
    // the command has ended).
    let mut ended = Vec::new();
    for _ in 0..2 {
        let until = Instant::now() + Duration::from_secs(10);
        let left = loop {
            let live = live_pids(&quick.link);
            let new = live.into_iter().find(|pid| !ended.contains(pid));
            match new {
                Some(pid) if super::processes_of(&cmd).is_empty() => break pid,
                _ => {}
            }
            assert!(Instant::now() < until, "no run left its daemon: {shown}");
            std::thread::sleep(Duration::from_millis(5));
        };
        std::thread::sleep(Duration::from_millis(400));
        let pid = rustix::process::Pid::from_raw(left).unwrap();
        let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
        ended.push(left);
    }
    let out = super::common::finish(child, shown, started, DEADLINE);
    assert_no_raw_controls(&out);
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
        // The command has ended and been reaped (not even a zombie is left): what coldtrace
        // does now is look for survivors and wait for them, and the signal comes in that wait.
        let until = Instant::now() + Duration::from_secs(10);
        while !(ready.exists() && super::processes_of(&cmd).is_empty()) {
            assert!(Instant::now() < until, "the command never ended");
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

/// A cgroup v2 of the test's own, below this process's (root only): coldtrace started in it
/// makes its batch's group below it, so what one test leaves there no other batch sees, and
/// what it finds there is the test's. Killed and removed when dropped.
pub(super) struct TestGroup {
    pub(super) path: PathBuf,
}

impl TestGroup {
    /// `None`, said, where none can be made (not root, no cgroup v2, a read-only one).
    pub(super) fn new(tag: &str) -> Option<TestGroup> {
        let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
        let mount = mountinfo.lines().find_map(|l| {
            let (fields, rest) = l.split_once(" - ")?;
            rest.starts_with("cgroup2 ")
                .then(|| fields.split(' ').nth(4))?
        });
        let cgroup = std::fs::read_to_string("/proc/self/cgroup").unwrap();
        let own = cgroup.lines().find_map(|l| l.strip_prefix("0::"));
        let Some((mount, own)) = mount.zip(own) else {
            eprintln!("skipped the cgroup of {tag}: no cgroup v2 here");
            return None;
        };
        let path = Path::new(mount)
            .join(own.trim_start_matches('/'))
            .join(super::unique_name(tag));
        match std::fs::create_dir(&path) {
            Ok(()) => Some(TestGroup { path }),
            Err(e) => {
                eprintln!(
                    "skipped the cgroup of {tag}: cannot make {}: {e}",
                    path.display()
                );
                None
            }
        }
    }

    /// `coldtrace ARGS` in `dir`, started in the group (not waited for).
    fn start(&self, dir: &TempDir, line: &str) -> (std::process::Child, String) {
        self.start_under(dir, "", line)
    }

    /// The same, exec'd through `wrapper` (e.g. `unshare --pid --fork`; "" for none).
    fn start_under(
        &self,
        dir: &TempDir,
        wrapper: &str,
        line: &str,
    ) -> (std::process::Child, String) {
        let procs = self.path.join("cgroup.procs");
        let script = format!("echo $$ > {} && exec {wrapper} \"$@\"", procs.display());
        let child = std::process::Command::new("/bin/sh")
            .args(["-c", &script, "sh", super::common::BIN])
            .args(line.split(' '))
            .current_dir(dir.path())
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        (
            child,
            format!("(in {}) {wrapper} coldtrace {line}", self.path.display()),
        )
    }

    /// `coldtrace ARGS` in `dir`, in the group, to its end.
    pub(super) fn run(&self, dir: &TempDir, line: &str) -> Output {
        let _ = std::fs::remove_dir_all(dir.join("b"));
        let (child, shown) = self.start(dir, line);
        let out = super::common::finish(child, shown, Instant::now(), DEADLINE);
        assert_no_raw_controls(&out);
        out
    }

    /// The groups below it (the batches' groups coldtrace made).
    pub(super) fn batch_groups(&self) -> Vec<PathBuf> {
        let mut found: Vec<PathBuf> = std::fs::read_dir(&self.path)
            .unwrap()
            .flatten()
            .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
            .map(|e| e.path())
            .collect();
        found.sort();
        found
    }
}

impl Drop for TestGroup {
    fn drop(&mut self) {
        let _ = std::fs::write(self.path.join("cgroup.kill"), "1");
        for _ in 0..300 {
            let mut dirs = vec![self.path.clone()];
            let mut i = 0;
            while i < dirs.len() {
                let below = std::fs::read_dir(&dirs[i]).into_iter().flatten().flatten();
                dirs.extend(
                    below
                        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                        .map(|e| e.path()),
                );
                i += 1;
            }
            for d in dirs.iter().rev() {
                let _ = std::fs::remove_dir(d);
            }
            if !self.path.exists() {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

/// The PIDs of the processes in the run leaves of a batch's group, in order.
fn pids_in(group: &Path) -> Vec<i32> {
    let mut pids: Vec<i32> = std::fs::read_dir(group)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("run-"))
        .filter_map(|e| std::fs::read_to_string(e.path().join("cgroup.procs")).ok())
        .flat_map(|text| {
            text.lines()
                .filter_map(|l| l.parse().ok())
                .collect::<Vec<i32>>()
        })
        .collect();
    pids.sort_unstable();
    pids
}

/// The names (`comm`) of the processes in the run leaves of a batch's group, by PID.
fn members_of(group: &Path) -> Vec<String> {
    pids_in(group)
        .iter()
        .filter_map(|pid| std::fs::read_to_string(format!("/proc/{pid}/comm")).ok())
        .map(|comm| comm.trim_end().to_string())
        .collect()
}

/// Whether a process in the run leaves of a batch's group runs exactly `argv`.
fn runs_in(group: &Path, argv: &[&str]) -> bool {
    pids_in(group)
        .iter()
        .any(|pid| super::common::runs_exactly(Path::new(&format!("/proc/{pid}")), argv))
}

/// The line of `/proc/self/cgroup` a command prints: `0::PATH`, as a path below the mount.
fn born_in(out: &str) -> String {
    out.lines()
        .find_map(|l| l.strip_prefix("0::"))
        .unwrap_or_default()
        .to_string()
}

#[test]
fn each_run_is_born_in_the_batchs_cgroup_which_counts_the_whole_trees_cpu_and_is_removed() {
    let Some(group) = TestGroup::new("cgcpu") else {
        return;
    };
    let dir = TempDir::new("prcgcpu");
    // 150 ms of CPU in a child the command never waits for: no rusage of the command holds it.
    let cmd = script(
        &dir,
        "cgc",
        "cat /proc/self/cgroup\n( i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done ) &\n\
         sleep 0.01; kill -0 $! 2>/dev/null && echo busy",
    );
    let out = group.run(
        &dir,
        &format!(
            "run -n 2 -o b --keep-output --survivors wait -- {}",
            cmd.display()
        ),
    );
    out.expect_code(0);
    let batch = read_batch(&dir.join("b"));
    let context = &batch["context"]["cgroup"];
    let path = context["path"]
        .as_str()
        .unwrap_or_else(|| panic!("no cgroup: {context}"));
    assert!(Path::new(path).starts_with(&group.path), "{context}");
    assert_eq!(context["unavailable_reason"], Value::Null, "{context}");
    // Removed at the end: nothing was left in it.
    assert!(!Path::new(path).exists(), "{path} is left");
    assert_eq!(group.batch_groups(), Vec::<PathBuf>::new());
    for (i, r) in assert_records_whole(&dir.join("b"), true)
        .iter()
        .enumerate()
    {
        let leaf = r["cgroup"]["path"].as_str().unwrap();
        assert!(leaf.starts_with(path), "{r}");
        let stdout = std::fs::read_to_string(dir.join(format!("b/runs/{i:03}/stdout"))).unwrap();
        assert!(
            leaf.ends_with(&born_in(&stdout)),
            "born in {stdout}, recorded {leaf}"
        );
        assert!(stdout.contains("busy"), "{stdout}");
        let tree = r["cgroup"]["cpu_usage_ns"].as_u64().unwrap();
        let own =
            r["rusage"]["user_us"].as_u64().unwrap() + r["rusage"]["sys_us"].as_u64().unwrap();
        // The spinning child ran for most of the tree's CPU; the command's own rusage misses it.
        assert!(
            tree > own * 1000 + 50_000_000,
            "tree {tree} ns, command {own} µs: {r}"
        );
        assert_eq!(r["survivors"]["seen_by"], "cgroup", "{r}");
        if context["psi_unavailable_reason"].is_null() {
            assert!(r["cgroup"]["io_stall_some_ns"].is_u64(), "{r}");
            assert!(r["cgroup"]["cpu_stall_some_ns"].is_u64(), "{r}");
        }
    }
}

#[test]
fn without_a_cgroup_the_batch_says_why_and_survivors_are_still_found() {
    if !may_mount("the read-only cgroup file system") {
        return;
    }
    let dir = TempDir::new("prcgro");
    let d = daemon(&dir, "ro", "30", false);
    let cmd = starter(&dir, "ros", &d, "setsid", "0");
    // A container's view: the cgroup2 file system read-only.
    let setup = "for m in $(awk '$9 == \"cgroup2\" {print $5}' /proc/self/mountinfo); do \
                 mount -o remount,bind,ro $m; done";
    let line = format!("run -n 2 -o b -- {}", cmd.display());
    let args: Vec<&str> = line.split(' ').collect();
    let out = run_in_private_mounts(&dir, setup, &args);
    out.expect_code(0);
    let context = &read_batch(&dir.join("b"))["context"]["cgroup"];
    assert_eq!(context["path"], Value::Null, "{context}");
    let why = context["unavailable_reason"].as_str().unwrap();
    assert!(why.contains("read-only"), "{context}");
    let s = survivors_of(&dir, 0);
    assert_eq!(s["seen_by"], "descendants", "{s}");
    assert_settled(&s, &d.link);
    assert_eq!(
        assert_records_whole(&dir.join("b"), true)[0]["cgroup"]["path"],
        Value::Null
    );
    end_left(&d.link);
}

#[test]
fn a_group_left_by_a_coldtrace_killed_mid_batch_is_emptied_and_named_by_the_next_batch() {
    let Some(group) = TestGroup::new("cgkill") else {
        return;
    };
    let dir = TempDir::new("prcgkill");
    let d = daemon(&dir, "ck", "30", false);
    let cmd = starter(&dir, "cks", &d, "setsid", "30");
    let (mut child, shown) = group.start(&dir, &format!("run -n 2 -o first -- {}", cmd.display()));
    let until = Instant::now() + Duration::from_secs(10);
    while !super::running(&d.link) && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(super::running(&d.link), "the daemon never ran: {shown}");
    // The command has left its loop that waits for the daemon (whose `sleep 0.01` ends by
    // itself) and runs its last `sleep 30`: what the group holds is now fixed.
    let running_in_a_batch = || {
        group
            .batch_groups()
            .iter()
            .any(|g| runs_in(g, &["sleep", "30"]))
    };
    while !running_in_a_batch() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(
        running_in_a_batch(),
        "the command never reached its sleep: {shown}"
    );
    child.kill().unwrap();
    let _ = child.wait();
    // The command died with coldtrace (its parent-death signal); the daemon in a session of
    // its own did not, and nor did the command's `sleep`: both are in the killed batch's group.
    let until = Instant::now() + Duration::from_secs(5);
    while super::running(&cmd) && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(!super::running(&cmd), "the command outlived coldtrace");
    assert!(super::running(&d.link));
    let left = group.batch_groups();
    assert_eq!(left.len(), 1, "{left:?}");
    // The parent-death signal reaches the command, not its children.
    let mut held = members_of(&left[0]);
    held.sort();
    let mut expected = vec![name(&d.link), "sleep".to_string()];
    expected.sort();
    assert_eq!(held, expected);
    let out = group.run(&dir, "run -n 1 -o b -- true");
    out.expect_code(0);
    assert_no_survivor(&d.link);
    let named = format!(
        "a coldtrace killed mid-batch left 2 processes running in {}:",
        left[0].display()
    );
    assert_says(&out, &named);
    for comm in &held {
        assert_says(&out, &format!("({comm})"));
    }
    assert_says(&out, "); killed");
    let context = &read_batch(&dir.join("b"))["context"]["cgroup"];
    let l = &context["leftover"][0];
    assert_eq!(l["action"], "killed", "{context}");
    assert_eq!(l["finished"], false, "{context}");
    let mut recorded: Vec<String> = l["processes"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| p["comm"].as_str().map(str::to_string))
        .collect();
    recorded.sort();
    assert_eq!(recorded, held, "{context}");
    // The killed batch's group is gone, and so is this batch's.
    assert_eq!(group.batch_groups(), Vec::<PathBuf>::new());
}

#[test]
fn a_finished_batch_that_left_a_daemon_keeps_its_group_and_the_next_names_it_and_leaves_it() {
    let Some(group) = TestGroup::new("cgleft") else {
        return;
    };
    let dir = TempDir::new("prcgleft");
    let d = daemon(&dir, "cl", "30", false);
    let cmd = starter(&dir, "cls", &d, "setsid", "0");
    let out = group.run(&dir, &format!("run -n 1 -o b -- {}", cmd.display()));
    out.expect_code(0);
    let left = group.batch_groups();
    assert_eq!(left.len(), 1, "{left:?}");
    assert!(left[0].join("finished").is_dir());
    let out = group.run(&dir, "run -n 1 -o b -- true");
    out.expect_code(0);
    // Said by the batch that left it; recorded, not said again, by this one, and left.
    assert!(!out.stderr.contains("left 1 process"), "{}", out.describe());
    assert!(super::running(&d.link));
    let context = &read_batch(&dir.join("b"))["context"]["cgroup"];
    let l = &context["leftover"][0];
    assert_eq!(
        (&l["action"], &l["finished"]),
        (&"left".into(), &true.into()),
        "{context}"
    );
    assert_eq!(l["group"], left[0].display().to_string(), "{context}");
    end_left(&d.link);
    // Emptied: the next batch removes it without a word.
    let out = group.run(&dir, "run -n 1 -o b -- true");
    out.expect_code(0);
    let context = &read_batch(&dir.join("b"))["context"]["cgroup"];
    assert_eq!(context["leftover"], serde_json::json!([]), "{context}");
    assert_eq!(group.batch_groups(), Vec::<PathBuf>::new());
}

#[test]
fn a_batch_in_another_pid_namespace_is_never_taken_for_a_dead_ones_leftovers() {
    let Some(group) = TestGroup::new("cgpidns") else {
        return;
    };
    let dir = TempDir::new("prcgpidns");
    super::common::write_file(
        &dir.join("last-waits"),
        b"#!/bin/sh\nn=$(cat COUNT 2>/dev/null || echo 0); n=$((n+1)); echo $n > COUNT\nsleep 0.4\n\
          if [ $n -ge 4 ]; then until [ -e looked ]; do sleep 0.01; done; fi\n",
        0o755,
    );
    // The same cgroup, another PID namespace: the PID in its group's name is its PID there
    // (1 or 2), which is another process here. Each run sleeps 0.4 s; the last also waits
    // until the looking below is done, so that its group is looked at while it is in use,
    // however slowly a loaded machine looks.
    let (inside, shown) = group.start_under(
        &dir,
        "unshare --pid --fork --mount-proc",
        "run -n 4 -o ns -- ./last-waits",
    );
    let started = Instant::now();
    // Wait for its group, then look for leftovers from this namespace, batch after batch,
    // while its runs go on.
    let until = started + Duration::from_secs(10);
    while group.batch_groups().is_empty() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(10));
    }
    let theirs = group.batch_groups();
    assert_eq!(theirs.len(), 1, "{theirs:?}: {shown}");
    let mut looked = 0;
    while looked < 3 || (Instant::now() < started + Duration::from_millis(1200) && looked < 20) {
        let out = group.run(&dir, "run -n 1 -o b -- true");
        out.expect_code(0);
        let context = &read_batch(&dir.join("b"))["context"]["cgroup"];
        assert_eq!(context["leftover"], serde_json::json!([]), "{context}");
        looked += 1;
    }
    assert!(theirs[0].is_dir(), "{} was removed", theirs[0].display());
    std::fs::write(dir.join("looked"), b"").unwrap();
    let out = super::common::finish(inside, shown, started, DEADLINE);
    if out.code() != Some(0) && out.stderr.starts_with("unshare:") {
        eprintln!(
            "NOTE: unshare is not permitted here{}; skipped",
            out.describe()
        );
        return;
    }
    out.expect_code(0);
    let records = assert_records_whole(&dir.join("ns"), true);
    assert_eq!(records.len(), 4, "{}", out.describe());
    for r in &records {
        assert_eq!(r["outcome"]["kind"], "exited", "{r}");
        assert!(r["cgroup"]["path"].is_string(), "{r}");
    }
}

#[test]
fn an_abandoned_group_with_a_nested_batchs_group_inside_is_removed_whole() {
    let Some(group) = TestGroup::new("cgnest") else {
        return;
    };
    let dir = TempDir::new("prcgnest");
    // A coldtrace measured by a coldtrace made its group in the outer run's leaf; both died.
    let outer = group.path.join("coldtrace-999999-1");
    let inner = outer.join("run-000/coldtrace-999998-2");
    std::fs::create_dir_all(inner.join("run-000")).unwrap();
    std::fs::create_dir(inner.join("finished")).unwrap();
    // Marked as coldtrace marks its groups, with a batch that has ended.
    let mark = super::groups::dead_batch_mark();
    let flags = rustix::fs::XattrFlags::empty();
    rustix::fs::setxattr(&outer, "user.coldtrace.batch", mark.as_bytes(), flags).unwrap();
    let out = group.run(&dir, "run -n 1 -o b -- true");
    out.expect_code(0);
    assert!(!outer.exists(), "{} is still there", outer.display());
    assert_eq!(group.batch_groups(), Vec::<PathBuf>::new());
}
