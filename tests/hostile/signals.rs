//! Signals: every request to stop ends the batch — a second one, or `--kill-after` after the
//! first, kills the command's whole tree; a forwarded signal reaches a stopped command; a
//! command that stops for a tracer is seen, reported and killed, never waited on; nothing
//! coldtrace opens blocks (a FIFO planted over a /proc file), and a huge sparse file is probed
//! in bounded time.

use super::common::{compile, ct, read_batch, Ct, Output, TempDir};
use super::{
    assert_no_raw_controls, assert_no_survivor, assert_records_whole, in_private_mounts, listing,
    may_mount, run_in_private_mounts, script, signal_mask, wait_until_blocking_sigint, DEADLINE,
};
use rustix::process::Signal;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// Waits until `path` exists (the command got as far as creating it).
fn wait_for(path: &Path) {
    let until = Instant::now() + Duration::from_secs(10);
    while !path.exists() {
        assert!(Instant::now() < until, "{} never appeared", path.display());
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Starts coldtrace; once `ready` exists and `settled` holds, sends each signal after its
/// pause, each once coldtrace has taken the one before (two requests pending at once would be
/// one); collects it. Returns the output and how long coldtrace took to end after the last
/// signal.
fn signals_once(
    c: Ct,
    ready: &Path,
    settled: &dyn Fn() -> bool,
    signals: &[(Duration, Signal)],
) -> (Output, Duration) {
    let shown = c.shown();
    let mut cmd = c.cmd;
    let started = Instant::now();
    let child = cmd.spawn().expect("spawn coldtrace");
    let pid = rustix::process::Pid::from_raw(child.id() as i32).unwrap();
    wait_until_blocking_sigint(child.id());
    wait_for(ready);
    let until = Instant::now() + Duration::from_secs(10);
    while !settled() {
        assert!(Instant::now() < until, "the command never settled: {shown}");
        std::thread::sleep(Duration::from_millis(5));
    }
    let mut last = Instant::now();
    for &(pause, sig) in signals {
        std::thread::sleep(pause);
        rustix::process::kill_process(pid, sig).expect("signal coldtrace");
        last = Instant::now();
        wait_until_taken(child.id(), sig);
    }
    let out = super::common::finish(child, shown, started, DEADLINE);
    (out, last.elapsed())
}

/// Waits up to 10 s until `sig` is no longer pending for `pid` (read from its signalfd), or
/// `pid` has ended (gone, or a zombie, whose pending signals stay).
fn wait_until_taken(pid: u32, sig: Signal) {
    let bit = 1u64 << (sig.as_raw() - 1);
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let zombie = stat
            .rsplit_once(") ")
            .is_some_and(|(_, s)| s.starts_with('Z'));
        if zombie || signal_mask(pid, "ShdPnd:").is_none_or(|p| p & bit == 0) {
            return;
        }
        assert!(Instant::now() < until, "coldtrace never took {sig:?}");
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// A script that creates `dir/ready` once its traps are set, then runs `body`.
fn ready_script(dir: &TempDir, tag: &str, traps: &str, body: &str) -> PathBuf {
    let ready = dir.join("ready");
    script(
        dir,
        tag,
        &format!("{traps}\n: > {}\n{body}", ready.display()),
    )
}

/// The batch in `dir/b` stopped by `signal`: whole records, `batch.json` written and marked.
fn assert_interrupted(dir: &TempDir, signal: &str) -> Vec<Value> {
    let records = assert_records_whole(&dir.join("b"), true);
    let doc = read_batch(&dir.join("b"));
    assert_eq!(doc["complete"], false, "{doc:#}");
    assert_eq!(doc["interrupted_by"], signal, "{doc:#}");
    records
}

/// What the test directory holds besides the batch and the scripts: nothing new.
fn assert_nothing_else_written(dir: &TempDir, before: &[String]) {
    let now: Vec<String> = listing(dir.path())
        .into_iter()
        .filter(|n| n != "b" && n != "ready" && !before.contains(n))
        .collect();
    assert!(now.is_empty(), "written outside the batch: {now:?}");
}

/// `coldtrace run -n 3 -o b EXTRA -- CMD` in `dir` (no `b` or `ready` left from before),
/// sent `signals` once the command is ready; it must end with `code` within 5 s of the last.
fn interrupt(
    dir: &TempDir,
    extra: &[&str],
    cmd: &Path,
    signals: &[(Duration, Signal)],
    code: i32,
) -> Output {
    interrupt_when(dir, extra, cmd, &|| true, signals, code)
}

/// [`interrupt`], the signals sent once `settled` also holds.
fn interrupt_when(
    dir: &TempDir,
    extra: &[&str],
    cmd: &Path,
    settled: &dyn Fn() -> bool,
    signals: &[(Duration, Signal)],
    code: i32,
) -> Output {
    let _ = std::fs::remove_dir_all(dir.join("b"));
    let _ = std::fs::remove_file(dir.join("ready"));
    let mut args = vec!["run", "-n", "3", "-o", "b"];
    args.extend_from_slice(extra);
    args.extend(["--", cmd.to_str().unwrap()]);
    let ready = dir.join("ready");
    let (out, took) = signals_once(ct(dir.path(), &args), &ready, settled, signals);
    out.expect_code(code);
    assert!(took < Duration::from_secs(5), "{took:?}{}", out.describe());
    assert_no_raw_controls(&out);
    out
}

/// A request to stop now, and another `after` it.
fn twice(sig: Signal, after: Duration) -> [(Duration, Signal); 2] {
    [(Duration::ZERO, sig), (after, sig)]
}

#[test]
fn a_second_request_to_stop_kills_a_command_that_ignores_the_first() {
    let dir = TempDir::new("sig2nd");
    let term = ready_script(&dir, "st", "trap '' TERM", "sleep 30; sleep 30");
    let int = ready_script(&dir, "si", "trap '' INT", "sleep 30; sleep 30");
    let before = listing(dir.path());
    // SIGTERM is passed on. Without --timeout the command shares coldtrace's process group,
    // where a terminal's SIGINT reaches both: the first SIGINT is not passed on again.
    for (stubborn, sig, name, code) in [
        (&term, Signal::TERM, "SIGTERM", 143),
        (&int, Signal::INT, "SIGINT", 130),
    ] {
        let pause = Duration::from_millis(300);
        interrupt(&dir, &[], stubborn, &twice(sig, pause), code);
        let records = assert_interrupted(&dir, name);
        assert_eq!(records.len(), 1);
        let outcome = &records[0]["outcome"];
        assert_eq!(outcome["signal_name"], "SIGKILL", "{outcome}");
        assert_eq!(
            outcome["tree_killed"],
            format!("second {name}"),
            "{outcome}"
        );
        assert_eq!(records[0]["interrupted_by"], name);
        assert_no_survivor(stubborn);
        assert_nothing_else_written(&dir, &before);
    }
}

#[test]
fn kill_after_without_timeout_ends_a_command_that_ignores_the_forwarded_signal() {
    let dir = TempDir::new("sigkillafter");
    let stubborn = ready_script(&dir, "ka", "trap '' TERM HUP", "sleep 30");
    for (sig, name, code) in [(Signal::TERM, "SIGTERM", 143), (Signal::HUP, "SIGHUP", 129)] {
        let once = [(Duration::ZERO, sig)];
        let out = interrupt(&dir, &["--kill-after", "0.3"], &stubborn, &once, code);
        eprintln!("{name} then --kill-after 0.3: {:?} in all", out.elapsed);
        let outcome = &assert_interrupted(&dir, name)[0]["outcome"];
        assert_eq!(outcome["signal_name"], "SIGKILL", "{outcome}");
        assert_eq!(outcome["tree_killed"], "--kill-after", "{outcome}");
        assert_no_survivor(&stubborn);
    }
}

#[test]
fn sigusr1_sigusr2_and_sigalrm_end_the_batch_as_sigterm_does() {
    let dir = TempDir::new("sigusr");
    let sleeper = ready_script(&dir, "us", "", "sleep 30");
    for (sig, name, n) in [
        (Signal::USR1, "SIGUSR1", 10),
        (Signal::USR2, "SIGUSR2", 12),
        (Signal::ALARM, "SIGALRM", 14),
    ] {
        let once = [(Duration::ZERO, sig)];
        let out = interrupt(&dir, &["--timeout", "20"], &sleeper, &once, 128 + n);
        let said = format!("interrupted by {name}");
        assert!(out.shown().contains(&said), "{}", out.describe());
        // Passed on to the command's group, where it kills the shell at its default action.
        let outcome = &assert_interrupted(&dir, name)[0]["outcome"];
        assert_eq!(outcome["signal_name"], name, "{outcome}");
        assert_no_survivor(&sleeper);
    }
}

#[test]
fn a_signal_passed_on_to_a_stopped_command_is_followed_by_sigcont() {
    let dir = TempDir::new("sigstopped");
    // The command stops itself; SIGTERM to coldtrace must still end it.
    let stops = ready_script(&dir, "sp", "", "kill -STOP $$; sleep 30");
    // Sent once the command has stopped, not while it is on its way there.
    let stopped = || {
        super::processes_of(&stops).iter().any(|stat| {
            stat.rsplit_once(") ")
                .is_some_and(|(_, s)| s.starts_with('T'))
        })
    };
    for (sig, name, code) in [(Signal::TERM, "SIGTERM", 143), (Signal::HUP, "SIGHUP", 129)] {
        let once = [(Duration::ZERO, sig)];
        interrupt_when(&dir, &[], &stops, &stopped, &once, code);
        let records = assert_interrupted(&dir, name);
        assert_eq!(records[0]["stopped_by"], "SIGSTOP", "{}", records[0]);
        assert_eq!(records[0]["outcome"]["signal_name"], name);
        assert_no_survivor(&stops);
    }
}

/// A directory with a program that asks to be traced by its parent (`PTRACE_TRACEME`), then
/// execs its arguments (the kernel stops it with SIGTRAP at the exec), and a script that
/// sleeps for it to exec.
fn traced(tag: &str) -> (TempDir, PathBuf, PathBuf) {
    let dir = TempDir::new(tag);
    let sleeper = script(&dir, tag, "sleep 30");
    let traceme = compile(
        dir.path(),
        "traceme",
        "#include <sys/ptrace.h>\n#include <unistd.h>\n\
         int main(int argc, char **argv) {\n\
           (void)argc;\n\
           ptrace(PTRACE_TRACEME, 0, 0, 0);\n\
           execvp(argv[1], argv + 1);\n\
           return 127;\n\
         }\n",
        &[],
    );
    (dir, traceme, sleeper)
}

#[test]
fn a_command_that_stops_for_a_tracer_is_reported_and_killed_never_waited_on() {
    let (dir, traceme, sleeper) = traced("trac");
    let (t, s) = (traceme.to_str().unwrap(), sleeper.to_str().unwrap());
    // One run: GNU time's exit code for a stopped command, 128 + SIGTRAP.
    let out = ct(dir.path(), ["run", "-n", "1", "--json", "--", t, s]).run_within(DEADLINE);
    out.expect_code(133);
    assert!(out.elapsed < Duration::from_secs(5), "{}", out.describe());
    let r = out.json();
    assert_eq!(r["outcome"]["kind"], "traced", "{r:#}");
    assert_eq!(r["outcome"]["stop_signal_name"], "SIGTRAP", "{r:#}");
    assert_eq!(r["outcome"]["signal_name"], "SIGKILL", "{r:#}");
    assert_eq!(r["outcome"]["tree_killed"], "traced", "{r:#}");
    assert_no_survivor(&sleeper);
    // A batch rejects it and stops after it, one line saying why.
    let out = ct(dir.path(), ["run", "-n", "3", "-o", "b", "--", t, s]).run_within(DEADLINE);
    out.expect_code(1);
    assert!(out.stderr.contains("PTRACE_TRACEME"), "{}", out.describe());
    let records = assert_records_whole(&dir.join("b"), true);
    assert_eq!(records.len(), 1);
    assert_eq!(records[0]["counted"], false);
    assert_no_survivor(&sleeper);
}

/// The tracer's stop comes at the command's `execve`, often while coldtrace still awaits the
/// spawner's reply, whose wait takes the SIGCHLD: the stop must still be seen, every time (one
/// start in about seven hung until the stopped command was killed from outside).
#[test]
fn a_tracer_stop_whose_sigchld_comes_before_the_spawners_reply_is_seen_every_time() {
    let (dir, traceme, sleeper) = traced("trrace");
    let (t, s) = (traceme.to_str().unwrap(), sleeper.to_str().unwrap());
    for attempt in 0..30 {
        let out = ct(dir.path(), ["time", "-f", "x=%x", t, s]).run_within(Duration::from_secs(10));
        assert_eq!(
            out.code(),
            Some(133),
            "attempt {attempt}: {}",
            out.describe()
        );
        assert_no_survivor(&sleeper);
    }
}

#[test]
fn time_reports_a_command_stopped_for_a_tracer_as_gnu_time_does() {
    let (dir, traceme, sleeper) = traced("trti");
    let (t, s) = (traceme.to_str().unwrap(), sleeper.to_str().unwrap());
    let out = ct(dir.path(), ["time", "-f", "x=%x", t, s]).run_within(DEADLINE);
    out.expect_code(133);
    assert_eq!(
        out.stderr,
        "Command stopped by signal 5\nx=5\n",
        "{}",
        out.describe()
    );
    assert_no_survivor(&sleeper);
    if !Path::new("/usr/bin/time").exists() {
        eprintln!("skipped the side-by-side part: /usr/bin/time (GNU time) is not installed");
        return;
    }
    let gnu = Command::new("/usr/bin/time")
        .args(["-f", "x=%x", t, s])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert_eq!(gnu.status.code(), Some(133));
    assert_eq!(String::from_utf8_lossy(&gnu.stderr), out.stderr);
    // GNU time leaves its stopped command to run on, untraced: end it here.
    let _ = Command::new("pkill").args(["-KILL", "-f", s]).status();
    assert_no_survivor(&sleeper);
}

#[test]
fn a_fifo_bind_mounted_over_proc_files_neither_blocks_nor_hides_a_signal() {
    if !may_mount("the FIFO over /proc files") {
        return;
    }
    let dir = TempDir::new("sigprocfifo");
    super::mkfifo(&dir.join("fifo"));
    let fifo = dir.join("fifo");
    let f = fifo.display();
    // Files read before and after every run, by the runner and for the context.
    let setup = format!(
        "for p in /proc/vmstat /proc/pressure/io /proc/pressure/cpu /proc/loadavg \
         /proc/sys/kernel/perf_event_paranoid /proc/$$/status /proc/$$/statm; do \
         mount --bind {f} $p; done"
    );
    let marker = script(&dir, "pf", "echo ran");
    let args = format!("run -q -n 3 -o b -- {}", marker.display());
    let args: Vec<&str> = args.split(' ').collect();
    let out = run_in_private_mounts(&dir, &setup, &args);
    out.expect_code(0);
    assert!(out.elapsed < Duration::from_secs(10), "{}", out.describe());
    assert_no_raw_controls(&out);
    let records = assert_records_whole(&dir.join("b"), true);
    assert_eq!(records.len(), 3);
    // What could not be read is null, never a figure read from the FIFO.
    assert_eq!(
        records[0]["system_delta"]["pgmajfault"],
        Value::Null,
        "{}",
        records[0]
    );
}

/// As root: a directory with a 1 TiB sparse file holding 1 MiB of data at 100 GiB (synced),
/// the command that mounts an overlay over it, and the file's path in that overlay.
fn sparse_overlay(tag: &str) -> Option<(TempDir, String, PathBuf)> {
    if !may_mount("the overlayfs probe") {
        return None;
    }
    let dir = TempDir::new(tag);
    for d in ["lower", "upper", "work", "merged"] {
        std::fs::create_dir(dir.join(d)).unwrap();
    }
    let big = std::fs::File::create(dir.join("lower/big")).unwrap();
    big.set_len(1 << 40).unwrap();
    use std::os::unix::fs::FileExt;
    big.write_all_at(&[7u8; 1 << 20], 100 << 30).unwrap();
    big.sync_all().unwrap();
    let mount = format!(
        "mount -t overlay overlay -o lowerdir={d}/lower,upperdir={d}/upper,workdir={d}/work \
         {d}/merged",
        d = dir.path().display()
    );
    let path = dir.join("merged/big");
    Some((dir, mount, path))
}

#[test]
fn a_terabyte_sparse_file_on_overlayfs_is_probed_in_bounded_time_data_counted() {
    let Some((dir, mount, big)) = sparse_overlay("sigsparse") else {
        return;
    };
    // Evicted before each run, the file's 1 MiB of data (100 GiB into it) is read by the
    // command: the probe after the run must find it between the holes.
    let reader = script(
        &dir,
        "sr",
        &format!(
            "dd if={} bs=1M skip=102400 count=1 of=/dev/null 2>/dev/null",
            big.display()
        ),
    );
    let args = format!(
        "run -q -n 2 -o b --evict {} -- {}",
        big.display(),
        reader.display()
    );
    let args: Vec<&str> = args.split(' ').collect();
    let out = run_in_private_mounts(&dir, &mount, &args);
    out.expect_code(0);
    eprintln!(
        "two runs evicting a 1 TiB sparse file on overlayfs: {:?}",
        out.elapsed
    );
    assert!(out.elapsed < Duration::from_secs(10), "{}", out.describe());
    let records = assert_records_whole(&dir.join("b"), true);
    let first = &records[0]["cache"];
    assert_eq!(first["after"]["method"], "mincore", "{first:#}");
    assert!(
        first["paged_in_bytes"].as_u64().unwrap() >= 1 << 20,
        "the data between the holes is counted: {first:#}"
    );
}

#[test]
fn sigint_while_a_huge_sparse_file_is_watched_ends_the_batch_at_once() {
    let Some((dir, mount, big)) = sparse_overlay("sigsparseint") else {
        return;
    };
    let args = format!("run -q -n 100000 -o b --watch {} -- true", big.display());
    let args: Vec<&str> = args.split(' ').collect();
    let mut cmd = in_private_mounts(&dir, &mount, &args);
    let started = Instant::now();
    let child = cmd.spawn().unwrap();
    // The shell execs coldtrace under the same PID; runs are under way once a record is
    // written (the file itself is made before the first run and its probes).
    let runs = dir.join("b/runs.jsonl");
    let until = Instant::now() + Duration::from_secs(20);
    while !std::fs::read(&runs).is_ok_and(|r| r.contains(&b'\n')) {
        assert!(Instant::now() < until, "no run was recorded");
        std::thread::sleep(Duration::from_millis(5));
    }
    std::thread::sleep(Duration::from_millis(300));
    let pid = rustix::process::Pid::from_raw(child.id() as i32).unwrap();
    rustix::process::kill_process(pid, Signal::INT).unwrap();
    let signalled = Instant::now();
    let out = super::common::finish(child, "coldtrace --watch 1 TiB".into(), started, DEADLINE);
    let took = signalled.elapsed();
    eprintln!("SIGINT to the end of a batch watching a 1 TiB sparse file: {took:?}");
    out.expect_code(130);
    assert!(took < Duration::from_secs(2), "{took:?}{}", out.describe());
    assert_records_whole(&dir.join("b"), true);
}

#[test]
fn a_second_sigterm_during_a_prepare_command_that_ignores_it_ends_the_batch() {
    let dir = TempDir::new("sigprepare");
    let ready = dir.join("ready");
    let prepare = format!("trap '' TERM; : > {}; sleep 30; sleep 30", ready.display());
    let marker = script(&dir, "pr", "echo ran");
    let pause = Duration::from_millis(300);
    interrupt(
        &dir,
        &["--prepare", &prepare],
        &marker,
        &twice(Signal::TERM, pause),
        143,
    );
    let records = assert_interrupted(&dir, "SIGTERM");
    assert!(records.is_empty(), "the run never started: {records:?}");
}

/// Waits up to 3 s until `pid` no longer runs (gone, or a zombie whose new parent has not
/// reaped it yet); panics otherwise.
fn assert_ended(pid: i32, what: &str) {
    let until = Instant::now() + Duration::from_secs(3);
    loop {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let state = stat
            .rfind(')')
            .and_then(|i| stat[i + 1..].split_whitespace().next());
        if matches!(state, None | Some("Z")) {
            return;
        }
        assert!(Instant::now() < until, "{what} survived: {stat}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_coldtrace_killed_with_sigkill_takes_its_command_with_it() {
    // A killed coldtrace can forward nothing: the kernel's parent-death signal, which every
    // child asks for, kills the command, also one in a process group of its own (--timeout).
    let dir = TempDir::new("sigkilled");
    let pid_file = dir.join("pid");
    let write_pid = format!("echo $$ > {}", pid_file.display());
    let command = ready_script(&dir, "kd", &write_pid, "exec sleep 30");
    for extra in [&[][..], &["--timeout", "20"]] {
        let _ = std::fs::remove_file(&pid_file);
        let _ = std::fs::remove_dir_all(dir.join("b"));
        let _ = std::fs::remove_file(dir.join("ready"));
        let mut args = vec!["run", "-n", "3", "-o", "b"];
        args.extend_from_slice(extra);
        args.extend(["--", command.to_str().unwrap()]);
        let kill = [(Duration::ZERO, Signal::KILL)];
        let (out, _) = signals_once(ct(dir.path(), &args), &dir.join("ready"), &|| true, &kill);
        assert_eq!(
            std::os::unix::process::ExitStatusExt::signal(&out.status),
            Some(9),
            "{}",
            out.describe()
        );
        let pid = std::fs::read_to_string(&pid_file).expect("the command wrote its PID");
        let pid: i32 = pid.trim().parse().expect("a PID");
        assert_ended(pid, &format!("the command of `{}`", args.join(" ")));
    }
}

#[test]
fn a_second_sigterm_kills_a_grandchild_in_a_session_of_its_own_that_ignores_it() {
    let dir = TempDir::new("sig2ndsetsid");
    let sleep = ["/bin/sleep", "/usr/bin/sleep"]
        .into_iter()
        .find(|p| Path::new(p).exists())
        .expect("sleep(1)");
    let link = dir.join(super::unique_name("g2"));
    std::os::unix::fs::symlink(sleep, &link).unwrap();
    let name = link.file_name().unwrap().to_string_lossy().into_owned();
    // Command and grandchild both ignore SIGTERM; the grandchild left the command's session.
    let start = format!(
        "trap '' TERM\nsetsid sh -c \"trap '' TERM; exec {} 30\" >/dev/null 2>&1 &\n\
         i=0; until pgrep -x {name} >/dev/null || [ $i -ge 1000 ]; do sleep 0.01; \
         i=$((i+1)); done",
        link.display()
    );
    let stubborn = ready_script(&dir, "g2s", &start, "sleep 30");
    let out = interrupt(
        &dir,
        &["--timeout", "60"],
        &stubborn,
        &twice(Signal::TERM, Duration::from_millis(300)),
        143,
    );
    let records = assert_interrupted(&dir, "SIGTERM");
    assert_eq!(
        records[0]["outcome"]["tree_killed"],
        "second SIGTERM",
        "{}",
        out.describe()
    );
    assert_no_survivor(&link);
    assert_no_survivor(&stubborn);
}
