//! Hostile conditions: coldtrace never panics, never hangs, never does nothing silently, and
//! writes nothing where it was not asked. Every case runs under a deadline and checks the exit
//! code, that a one-line error stays one escaped line, that no process of the command survives
//! (running or as a zombie), and that the records are whole. The cases of this file come first;
//! each class with its own file below `tests/hostile/` follows (address_space, cleanup,
//! crashes, files, hangs, markup, memory, processes, recorded, side_effects, signals,
//! time_fifo, truth).
#![forbid(unsafe_code)]

#[path = "hostile/address_space.rs"]
mod address_space;
#[path = "hostile/cleanup.rs"]
mod cleanup;
mod common;
#[path = "hostile/crashes.rs"]
mod crashes;
#[path = "hostile/files.rs"]
mod files;
#[path = "hostile/groups.rs"]
mod groups;
#[path = "hostile/hangs.rs"]
mod hangs;
#[path = "hostile/markup.rs"]
mod markup;
#[path = "hostile/memory.rs"]
mod memory;
#[path = "hostile/places.rs"]
mod places;
#[path = "hostile/processes.rs"]
mod processes;
#[path = "hostile/recorded.rs"]
mod recorded;
#[path = "hostile/side_effects.rs"]
mod side_effects;
#[path = "hostile/signals.rs"]
mod signals;
#[path = "hostile/time_fifo.rs"]
mod time_fifo;
#[path = "hostile/truth.rs"]
mod truth;

use common::{ct, read_batch, read_records, write_file, Output, TempDir, BIN};
use serde_json::Value;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

const DEADLINE: Duration = Duration::from_secs(30);

/// Exactly one line on stderr, no panic, no raw control character (escapes only).
fn assert_one_escaped_line(out: &common::Output) {
    assert_eq!(
        out.stderr_lines().len(),
        1,
        "expected exactly one line on stderr{}",
        out.describe()
    );
    assert_no_raw_controls(out);
}

/// No panic, no SIGABRT, and stderr holds no control character but the newlines ending lines.
fn assert_no_raw_controls(out: &common::Output) {
    assert!(!out.stderr.contains("panicked"), "{}", out.describe());
    assert_eq!(out.status.signal(), None, "{}", out.describe());
    let raw = out
        .stderr
        .chars()
        .find(|&c| (c.is_control() && c != '\n') || ('\u{202a}'..='\u{202e}').contains(&c));
    assert_eq!(
        raw,
        None,
        "a raw control character on stderr{}",
        out.describe()
    );
}

/// A short, unique command name: the kernel's `comm` of a process running it (15 bytes at most),
/// so that a survivor — running or a zombie — can be found in `/proc`.
fn unique_name(tag: &str) -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    format!(
        "h{}{}{n}",
        &tag[..tag.len().min(4)],
        std::process::id() % 100_000
    )
}

/// An executable `#!/bin/sh` script named [`unique_name`] in `dir`; returns its path.
fn script(dir: &TempDir, tag: &str, body: &str) -> std::path::PathBuf {
    let path = dir.join(unique_name(tag));
    write_file(&path, format!("#!/bin/sh\n{body}\n").as_bytes(), 0o755);
    path
}

/// No process runs `path` any more, not even as a zombie (waits up to 3 s for a kill to land).
fn assert_no_survivor(path: &Path) {
    let name = path.file_name().unwrap().to_string_lossy().into_owned();
    let until = Instant::now() + Duration::from_secs(3);
    loop {
        let found = processes_of(path);
        if found.is_empty() {
            return;
        }
        if Instant::now() > until {
            panic!("a process of {name} survived coldtrace: {found:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The `/proc/PID/stat` lines of the processes running `path` (found by its file name),
/// zombies included.
fn processes_of(path: &Path) -> Vec<String> {
    let name = path.file_name().unwrap().to_string_lossy().into_owned();
    let needle = format!("({name})");
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok())
        .filter_map(|e| std::fs::read_to_string(e.path().join("stat")).ok())
        .filter(|stat| stat.contains(&needle))
        .collect()
}

/// Whether a live process (no zombie) runs `path`.
fn running(path: &Path) -> bool {
    processes_of(path).iter().any(|stat| {
        stat.rsplit_once(") ")
            .is_some_and(|(_, rest)| !rest.starts_with('Z'))
    })
}

/// Every line of `runs.jsonl` is a whole record, numbered from 0; `batch.json`, if `finished`,
/// is a whole document. Returns the records.
fn assert_records_whole(dir: &Path, finished: bool) -> Vec<Value> {
    let records = read_records(dir);
    for (i, r) in records.iter().enumerate() {
        assert_eq!(r["schema"], coldtrace::record::RUN_SCHEMA, "{r}");
        assert_eq!(r["index"], i as u64, "{r}");
    }
    if finished {
        let doc = read_batch(dir);
        let schema = doc["schema"].as_str().unwrap_or_default();
        assert!(schema.starts_with("coldtrace.batch/"), "{doc:#}");
    }
    records
}

/// The names in `dir`, sorted.
fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

// ---------------------------------------------------------------- nothing where it was not asked

#[test]
fn an_empty_out_path_is_refused_before_anything_runs() {
    let dir = TempDir::new("emptyout");
    std::fs::write(dir.join("keep"), b"x").unwrap();
    let marker = script(&dir, "eo", "touch MARKER");
    let m = marker.to_str().unwrap();
    for args in [
        vec!["run", "-n", "2", "-o", "", "--", m],
        vec!["run", "--out=", "--", m],
        vec!["compare", "-n", "1", "-o", "", m, "true"],
    ] {
        let out = ct(dir.path(), &args).run_within(DEADLINE);
        out.expect_code(125);
        assert_one_escaped_line(&out);
        assert!(out.stderr.contains("-o/--out"), "{}", out.describe());
        let names = listing(dir.path());
        assert_eq!(
            names.len(),
            2,
            "nothing written: {names:?}{}",
            out.describe()
        );
        assert_no_survivor(&marker);
    }
}

/// `PREFIX… coldtrace ARGS` in `dir` under the deadline (`PREFIX` is a launcher: a shell that
/// changes something before `exec "$@"`, or setpriv).
fn launch(dir: &TempDir, prefix: &[&str], args: &[&str]) -> std::io::Result<common::Output> {
    let mut cmd = Command::new(prefix[0]);
    cmd.args(&prefix[1..])
        .arg(BIN)
        .args(args)
        .current_dir(dir.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let shown = format!("{} coldtrace {}", prefix.join(" "), args.join(" "));
    let child = cmd.spawn()?;
    Ok(common::finish(child, shown, Instant::now(), DEADLINE))
}

/// `sh -c "SETUP; exec coldtrace ARGS"`.
fn after_sh(dir: &TempDir, setup: &str, args: &[&str]) -> common::Output {
    let script = format!("{setup}; exec \"$@\"");
    launch(dir, &["/bin/sh", "-c", &script, "sh"], args).expect("spawn /bin/sh")
}

/// `coldtrace ARGS` started from `dir/gone`, a directory removed just before the exec.
fn in_deleted_cwd(dir: &TempDir, args: &[&str]) -> common::Output {
    std::fs::create_dir(dir.join("gone")).unwrap();
    after_sh(dir, "cd gone && rmdir ../gone", args)
}

#[test]
fn a_deleted_working_directory_is_recorded_as_null() {
    let dir = TempDir::new("gonecwd");
    let out = in_deleted_cwd(
        &dir,
        &["run", "-n", "1", "--json", "--output", "null", "--", "true"],
    );
    out.expect_code(0);
    assert_eq!(out.json()["cwd"], Value::Null, "{}", out.describe());
    let out = in_deleted_cwd(&dir, &["run", "-n", "2", "--json", "-q", "--", "true"]);
    out.expect_code(0);
    assert_eq!(out.json()["counts"]["counted"], 2, "{}", out.describe());
}

#[test]
fn a_not_found_command_of_a_comparison_leaves_no_directory() {
    let dir = TempDir::new("cmpnf");
    let marker = script(&dir, "cn", "touch MARKER");
    write_file(&dir.join("plain"), b"#!/bin/sh\n", 0o644);
    for (second, code) in [("no-such-command-coldtrace", 127), ("./plain", 126)] {
        let out = ct(
            dir.path(),
            [
                "compare",
                "-n",
                "2",
                "-o",
                "cmp",
                marker.to_str().unwrap(),
                second,
            ],
        )
        .run_within(DEADLINE);
        out.expect_code(code);
        assert_one_escaped_line(&out);
        assert!(
            !dir.join("cmp").exists(),
            "{:?}{}",
            listing(dir.path()),
            out.describe()
        );
        assert!(!dir.join("MARKER").exists());
    }
}

// ---------------------------------------------------------------- a comparison is a batch

#[test]
fn compare_with_one_run_rejects_a_failing_command_and_exits_1() {
    let dir = TempDir::new("cmpn1");
    let failing = script(&dir, "c1", "exit 3");
    let killed = script(&dir, "c9", "kill -9 $$");
    for bad in [&failing, &killed] {
        let out = ct(
            dir.path(),
            [
                "compare",
                "-n",
                "1",
                "-o",
                "cmp",
                "--json",
                bad.to_str().unwrap(),
                "true",
            ],
        )
        .run_within(DEADLINE);
        out.expect_code(1);
        let doc = out.json();
        assert_eq!(doc["commands"][0]["counts"]["counted"], 0, "{doc:#}");
        assert_eq!(doc["commands"][0]["counts"]["rejected"], 1, "{doc:#}");
        assert_eq!(doc["commands"][0]["exit_code"], 1, "{doc:#}");
        // The failing first run stopped the comparison (as hyperfine stops).
        assert_eq!(doc["commands"][1]["counts"]["counted"], 0, "{doc:#}");
        let records = assert_records_whole(&dir.join("cmp/commands/00"), true);
        assert_eq!(records[0]["counted"], false);
        assert_no_raw_controls(&out);
        assert_no_survivor(bad);
        std::fs::remove_dir_all(dir.join("cmp")).unwrap();
    }
}

// ---------------------------------------------------------------- what is echoed stays one line

#[test]
fn control_characters_in_names_and_paths_are_escaped_in_errors() {
    let dir = TempDir::new("ctrl");
    write_file(&dir.join("not\u{1b}[2Jexec"), b"#!/bin/sh\n", 0o644);
    let cases: Vec<(Vec<&str>, i32)> = vec![
        (vec!["run", "--", "no\nsuch\u{1b}[31mcommand"], 127),
        (vec!["run", "--", "./not\u{1b}[2Jexec"], 126),
        (
            vec![
                "run",
                "-n",
                "2",
                "-o",
                "/proc/bad\n\u{1b}]0;x\u{7}/d",
                "--",
                "true",
            ],
            125,
        ),
        (
            vec![
                "run",
                "-n",
                "2",
                "--stdin",
                "no\u{202e}such\nfile",
                "--",
                "true",
            ],
            125,
        ),
        (
            vec!["run", "--evict", "/no\u{1b}[2Jsuch", "--", "true"],
            125,
        ),
        (vec!["report", "no\nsuch\u{1b}[1mdir"], 125),
    ];
    for (args, code) in cases {
        let out = ct(dir.path(), &args).run_within(DEADLINE);
        out.expect_code(code);
        assert_one_escaped_line(&out);
        assert!(
            out.stderr.contains("\\u{1b}") || out.stderr.contains("\\n"),
            "{}",
            out.describe()
        );
    }
    // A file in the out directory that cannot be created names the path, escaped.
    std::fs::create_dir(dir.join("o\u{1b}[2J")).unwrap();
    std::os::unix::fs::symlink("/nonexistent", dir.join("o\u{1b}[2J/runs.jsonl")).unwrap();
    let out = ct(
        dir.path(),
        ["run", "-n", "2", "-o", "o\u{1b}[2J", "--", "true"],
    );
    let out = out.run_within(DEADLINE);
    out.expect_code(125);
    assert_one_escaped_line(&out);
}

#[test]
fn a_label_and_the_command_s_stderr_reach_the_table_escaped() {
    let dir = TempDir::new("ctrltab");
    let noisy = script(&dir, "nz", "printf 'a\\033[2Jb\\r\\n' >&2; exit 1");
    let out = ct(
        dir.path(),
        [
            "run",
            "-n",
            "2",
            "--label",
            "lab\u{1b}[31mel\u{202e}\nx",
            "--",
            noisy.to_str().unwrap(),
        ],
    )
    .run_within(DEADLINE);
    out.expect_code(1);
    assert_no_raw_controls(&out);
    assert!(out.stderr.contains("a\\u{1b}[2Jb"), "{}", out.describe());
    assert!(
        out.stderr.contains("lab\\u{1b}[31mel\\u{202e}\\nx"),
        "{}",
        out.describe()
    );
    assert_no_survivor(&noisy);
}

#[test]
fn a_symlink_loop_given_to_report_is_called_a_loop() {
    let dir = TempDir::new("loop");
    std::os::unix::fs::symlink("loop", dir.join("loop")).unwrap();
    let out = ct(dir.path(), ["report", "loop"]).run_within(DEADLINE);
    out.expect_code(125);
    assert_one_escaped_line(&out);
    assert!(out.stderr.contains("ELOOP"), "{}", out.describe());
    assert!(!out.stderr.contains("writes through"), "{}", out.describe());
    let out = ct(dir.path(), ["report", ""]).run_within(DEADLINE);
    out.expect_code(125);
    assert_one_escaped_line(&out);
}

// ---------------------------------------------------------------- opening what coldtrace did not create

fn mkfifo(path: &Path) {
    rustix::fs::mknodat(
        rustix::fs::CWD,
        path,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
        0,
    )
    .expect("mkfifo");
}

/// Starts coldtrace, sends it `signal` once `ready` (given its PID) returns, and collects it
/// under the deadline; also how long it took to end after the signal.
fn signal_when(
    c: common::Ct,
    signal: rustix::process::Signal,
    ready: impl FnOnce(u32),
) -> (common::Output, Duration) {
    let shown = c.shown();
    let mut cmd = c.cmd;
    let started = Instant::now();
    let child = cmd.spawn().expect("spawn coldtrace");
    ready(child.id());
    let signalled = Instant::now();
    let pid = rustix::process::Pid::from_raw(child.id() as i32).unwrap();
    rustix::process::kill_process(pid, signal).expect("signal coldtrace");
    let out = common::finish(child, shown, started, DEADLINE);
    (out, signalled.elapsed())
}

/// Waits up to 10 s until process `pid` holds a descriptor of `path` (`/proc/PID/fd`).
fn wait_until_open(pid: u32, path: &Path) {
    let until = Instant::now() + Duration::from_secs(10);
    let holds = || {
        std::fs::read_dir(format!("/proc/{pid}/fd"))
            .into_iter()
            .flatten()
            .flatten()
            .any(|fd| std::fs::read_link(fd.path()).is_ok_and(|p| p == path))
    };
    while !holds() {
        assert!(
            Instant::now() < until,
            "{pid} never opened {}",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn a_fifo_as_stdin_waits_for_its_writer_and_signals_still_stop_coldtrace() {
    use rustix::process::Signal as S;
    let dir = TempDir::new("fifostdin");
    mkfifo(&dir.join("f"));
    let reader = script(&dir, "fi", "cat");
    let r = reader.to_str().unwrap();
    for (signal, code) in [(S::INT, 130), (S::TERM, 143)] {
        let _ = std::fs::remove_dir_all(dir.join("d"));
        let c = ct(
            dir.path(),
            ["run", "-n2", "-od", "--keep-output", "--stdin=f", "--", r],
        );
        // Signalled once coldtrace has taken the signals over and waits for the FIFO's writer
        // (it holds the FIFO open), not after a time a loaded machine may need more than.
        let fifo = std::fs::canonicalize(dir.join("f")).unwrap();
        let out = signal_when(c, signal, |pid| {
            wait_until_blocking_sigint(pid);
            wait_until_open(pid, &fifo);
        })
        .0;
        out.expect_code(code);
        assert!(out.elapsed < Duration::from_secs(5), "{}", out.describe());
        assert_no_raw_controls(&out);
        let records = assert_records_whole(&dir.join("d"), true);
        assert!(records.is_empty(), "no run was started: {records:?}");
        assert_eq!(read_batch(&dir.join("d"))["complete"], false);
        assert!(
            !dir.join("d/runs").exists(),
            "no artifacts of a run that never started"
        );
        assert_no_survivor(&reader);
    }
    // With a writer that comes late (once coldtrace holds the FIFO open and waits), the
    // command reads what it wrote (it did not get an early EOF from a FIFO opened without
    // blocking).
    let fifo = std::fs::canonicalize(dir.join("f")).unwrap();
    let _ = std::fs::remove_dir_all(dir.join("d"));
    let c = ct(
        dir.path(),
        [
            "run",
            "-n",
            "1",
            "-od",
            "--keep-output",
            "--stdin=f",
            "--",
            r,
        ],
    );
    let shown = c.shown();
    let mut cmd = c.cmd;
    let started = Instant::now();
    let child = cmd.spawn().expect("spawn coldtrace");
    wait_until_open(child.id(), &fifo);
    std::thread::sleep(Duration::from_millis(400));
    std::fs::write(&fifo, b"late words\n").unwrap();
    let out = common::finish(child, shown, started, DEADLINE);
    out.expect_code(0);
    assert_eq!(
        std::fs::read(dir.join("d/runs/000/stdout")).unwrap(),
        b"late words\n"
    );
    assert_records_whole(&dir.join("d"), true);
}

#[test]
fn stdin_must_be_a_file_a_fifo_or_a_device_never_a_directory() {
    let dir = TempDir::new("stdindir");
    let marker = script(&dir, "sd", "touch MARKER");
    for args in [
        vec![
            "run",
            "-n",
            "1",
            "--stdin",
            "/tmp",
            "--",
            marker.to_str().unwrap(),
        ],
        vec![
            "run",
            "-n",
            "3",
            "--stdin",
            ".",
            "--",
            marker.to_str().unwrap(),
        ],
        vec!["compare", "--stdin", "/", marker.to_str().unwrap(), "true"],
    ] {
        let out = ct(dir.path(), &args).run_within(DEADLINE);
        out.expect_code(125);
        assert_one_escaped_line(&out);
        assert!(
            out.stderr.contains("it is a directory"),
            "{}",
            out.describe()
        );
        assert!(!dir.join("MARKER").exists(), "{}", out.describe());
    }
    // A character device is a legitimate stdin (and reaches the child blocking as usual).
    let out = ct(
        dir.path(),
        [
            "run",
            "-n",
            "1",
            "--json",
            "--stdin",
            "/dev/zero",
            "--output",
            "null",
            "--",
            "head",
            "-c",
            "3",
        ],
    )
    .run_within(DEADLINE);
    out.expect_code(0);
    assert_eq!(out.json()["outcome"]["code"], 0);
}

/// A finished batch of two runs in `dir/name`.
fn a_batch(dir: &TempDir, name: &str) -> std::path::PathBuf {
    let out = ct(
        dir.path(),
        ["run", "-q", "-n", "2", "-o", name, "--", "true"],
    )
    .run_within(DEADLINE);
    out.expect_code(0);
    dir.join(name)
}

#[test]
fn report_refuses_fifos_devices_and_directories_planted_in_a_batch() {
    let dir = TempDir::new("reportplant");
    let batch = a_batch(&dir, "b");
    for name in ["batch.json", "runs.jsonl"] {
        let real = batch.join(name);
        let saved = dir.join(format!("saved-{name}"));
        std::fs::rename(&real, &saved).unwrap();
        for (plant, what) in [
            ("fifo", "a FIFO"),
            ("zero", "a character device"),
            ("dir", "a directory"),
        ] {
            match plant {
                "fifo" => mkfifo(&real),
                "zero" => std::os::unix::fs::symlink("/dev/zero", &real).unwrap(),
                _ => std::fs::create_dir(&real).unwrap(),
            }
            let out = ct(dir.path(), ["report", "b"]).run_within(Duration::from_secs(10));
            out.expect_code(125);
            assert_one_escaped_line(&out);
            assert!(
                out.stderr.contains(what) && out.stderr.contains(name),
                "{}",
                out.describe()
            );
            if plant == "dir" {
                std::fs::remove_dir(&real).unwrap();
            } else {
                std::fs::remove_file(&real).unwrap();
            }
        }
        std::fs::rename(&saved, &real).unwrap();
    }
    ct(dir.path(), ["report", "b"])
        .run_within(DEADLINE)
        .expect_code(0);
}

#[test]
fn report_reads_within_bounds_whatever_a_file_claims() {
    let dir = TempDir::new("reportbound");
    let batch = a_batch(&dir, "b");
    // A batch.json of 1 GiB (sparse): left unread, with a note; the records still count.
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(batch.join("batch.json"))
        .unwrap();
    f.set_len(1 << 30).unwrap();
    let out = ct(dir.path(), ["report", "--json", "b"]).run_within(Duration::from_secs(10));
    out.expect_code(0);
    let rows = out.json()["batches"].clone();
    assert_eq!(rows[0]["counted"], 2, "{rows:#}");
    let notes = rows[0]["notes"].to_string();
    assert!(notes.contains("larger than 64 MiB"), "{notes}");
    // A runs.jsonl whose first line never ends: an error at the bound, not an endless read.
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(batch.join("runs.jsonl"))
        .unwrap();
    f.set_len(0).unwrap();
    f.set_len(1 << 30).unwrap();
    let out = ct(dir.path(), ["report", "b"]).run_within(Duration::from_secs(20));
    out.expect_code(125);
    assert_one_escaped_line(&out);
    assert!(
        out.stderr.contains("line 1: longer than 64 MiB"),
        "{}",
        out.describe()
    );
}

#[test]
fn a_tree_file_swapped_for_a_fifo_after_the_walk_is_neither_opened_blocking_nor_counted() {
    use coldtrace::measure::cache::FileSet;
    let dir = TempDir::new("swapfifo");
    std::fs::create_dir(dir.join("tree")).unwrap();
    std::fs::write(dir.join("tree/a"), vec![7u8; 8192]).unwrap();
    std::fs::write(dir.join("tree/b"), vec![7u8; 8192]).unwrap();
    let set = FileSet::collect(&[dir.join("tree")]).unwrap();
    assert_eq!(set.len(), 2);
    std::fs::remove_file(dir.join("tree/b")).unwrap();
    mkfifo(&dir.join("tree/b"));
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let residency = set.residency();
        let evicted = set.evict();
        let _ = tx.send((residency, evicted));
    });
    let (residency, evicted) = rx
        .recv_timeout(Duration::from_secs(10))
        .expect("residency and eviction return (a FIFO must not block them)");
    assert_eq!(residency.unknown_files, 1, "{residency:?}");
    assert_eq!(residency.resident_ratio, None, "{residency:?}");
    assert_eq!((evicted.files, evicted.failed), (1, 1), "{evicted:?}");
    let why = evicted.first_error.unwrap_or_default();
    assert!(why.contains("FIFO"), "{why}");
    // Keep `dir` alive until the probe thread is done with its paths.
    drop(dir);
}

// ---------------------------------------------------------------- signals at the wrong moment

/// A signal mask of `/proc/PID/status` (`field` is e.g. `SigBlk:`); `None` once `pid` is gone.
fn signal_mask(pid: u32, field: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|hex| u64::from_str_radix(hex.trim(), 16).ok())
}

/// Waits until process `pid` blocks SIGINT (coldtrace has set up its signalfd).
fn wait_until_blocking_sigint(pid: u32) {
    let until = Instant::now() + Duration::from_secs(10);
    while signal_mask(pid, "SigBlk:").unwrap_or(0) & 0b10 == 0 {
        assert!(Instant::now() < until, "coldtrace never blocked SIGINT");
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// A tree of `dirs` × `per_dir` small files.
fn tree(dir: &TempDir, dirs: usize, per_dir: usize) -> std::path::PathBuf {
    let root = dir.join("tree");
    for d in 0..dirs {
        let sub = root.join(format!("{d:03}"));
        std::fs::create_dir_all(&sub).unwrap();
        for f in 0..per_dir {
            std::fs::write(sub.join(format!("{f:04}")), b"x").unwrap();
        }
    }
    root
}

#[test]
fn sigint_during_the_walk_or_the_eviction_of_a_large_tree_stops_before_any_run() {
    let dir = TempDir::new("sigtree");
    let root = tree(&dir, 30, 1000);
    let sleeper = script(&dir, "st", "sleep 5");
    let args = |out: &str| -> Vec<String> {
        [
            "run",
            "-n",
            "2",
            "-o",
            out,
            "--evict",
            root.to_str().unwrap(),
            "--",
        ]
        .iter()
        .map(|s| s.to_string())
        .chain([sleeper.to_str().unwrap().to_string()])
        .collect()
    };
    // 1. As soon as coldtrace takes the signals over: while the roots are checked (nothing is
    //    created then), or after the batch directory was made (no run yet: none is recorded).
    let sigint = rustix::process::Signal::INT;
    let (out, took) = signal_when(
        ct(dir.path(), args("early")),
        sigint,
        wait_until_blocking_sigint,
    );
    out.expect_code(130);
    assert!(took < Duration::from_secs(3), "{}", out.describe());
    assert_no_raw_controls(&out);
    if dir.join("early").exists() {
        let records = assert_records_whole(&dir.join("early"), true);
        assert!(records.is_empty(), "no run was started{}", out.describe());
        assert_eq!(read_batch(&dir.join("early"))["interrupted_by"], "SIGINT");
    } else {
        assert_one_escaped_line(&out);
        assert!(
            out.stderr.contains("interrupted by SIGINT"),
            "{}",
            out.describe()
        );
    }
    // 2. During the walk and the eviction at the first run (the batch directory exists by
    //    then).
    let exists = |_| {
        let started = Instant::now();
        while !dir.join("late/runs.jsonl").exists() {
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "no batch directory"
            );
            std::thread::sleep(Duration::from_millis(1));
        }
    };
    let (out, took) = signal_when(ct(dir.path(), args("late")), sigint, exists);
    out.expect_code(130);
    assert!(
        took < Duration::from_secs(3),
        "acted on at once, not after a run{}",
        out.describe()
    );
    assert_no_raw_controls(&out);
    let records = assert_records_whole(&dir.join("late"), true);
    assert!(records.is_empty(), "no run was started{}", out.describe());
    assert_eq!(read_batch(&dir.join("late"))["interrupted_by"], "SIGINT");
    assert!(!dir.join("late/runs/000").exists());
    assert_no_survivor(&sleeper);
}

/// `sh -c "trap '' SIG; exec coldtrace ARGS"`: coldtrace inherits SIG ignored.
fn with_ignored(dir: &TempDir, signal: &str, args: &[&str]) -> common::Output {
    after_sh(dir, &format!("trap '' {signal}"), args)
}

#[test]
fn signals_inherited_as_ignored_stay_ignored_by_coldtrace_and_its_command() {
    let dir = TempDir::new("ignored");
    // The command signals coldtrace (its parent), then records its own ignored set.
    for (signal, bit) in [("HUP", 0), ("INT", 1)] {
        let body = format!("kill -{signal} $PPID; sleep 0.2; grep SigIgn /proc/$$/status");
        let cmd = script(&dir, signal, &body);
        let out_dir = format!("d{signal}");
        let out = with_ignored(
            &dir,
            signal,
            &[
                "run",
                "-n",
                "3",
                "-o",
                &out_dir,
                "--keep-output",
                "--",
                cmd.to_str().unwrap(),
            ],
        );
        out.expect_code(0);
        let records = assert_records_whole(&dir.join(&out_dir), true);
        assert_eq!(records.len(), 3, "{}", out.describe());
        assert!(records
            .iter()
            .all(|r| r["counted"] == true && r["interrupted_by"].is_null()));
        let shown = std::fs::read_to_string(dir.join(&out_dir).join("runs/000/stdout")).unwrap();
        let mask = shown.trim().trim_start_matches("SigIgn:").trim();
        let mask = u64::from_str_radix(mask, 16).unwrap();
        assert_ne!(
            mask & (1 << bit),
            0,
            "the command inherits SIG{signal} ignored: {shown}"
        );
        assert_no_survivor(&cmd);
    }
    // Not ignored, the same signal still interrupts the batch.
    let cmd = script(&dir, "hup", "kill -HUP $PPID; sleep 0.2");
    let out = ct(
        dir.path(),
        [
            "run",
            "-n",
            "3",
            "-o",
            "dd",
            "--keep-output",
            "--",
            cmd.to_str().unwrap(),
        ],
    )
    .run_within(DEADLINE);
    out.expect_code(129);
    assert_eq!(assert_records_whole(&dir.join("dd"), true).len(), 1);
}

/// `coldtrace ARGS` as user nobody (setpriv) when the tests run as root; as ourselves otherwise.
fn unprivileged(dir: &TempDir, args: &[&str]) -> Option<common::Output> {
    let setpriv = [
        "setpriv",
        "--reuid=65534",
        "--regid=65534",
        "--clear-groups",
    ];
    if !rustix::process::geteuid().is_root() {
        return Some(ct(dir.path(), args).run_within(DEADLINE));
    }
    match launch(dir, &setpriv, args) {
        Ok(out) => Some(out),
        Err(e) => {
            eprintln!("NOTE: cannot run setpriv ({e}); the unprivileged case was not checked");
            None
        }
    }
}

#[test]
fn evicting_what_cannot_be_read_is_said_and_counted_never_silently_cold() {
    use std::os::unix::fs::PermissionsExt;
    let dir = TempDir::new("evictperm");
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::create_dir_all(dir.join("t/open")).unwrap();
    std::fs::create_dir_all(dir.join("t/closed")).unwrap();
    std::fs::write(dir.join("t/open/a"), b"a").unwrap();
    std::fs::write(dir.join("t/closed/b"), b"b").unwrap();
    std::fs::create_dir(dir.join("shut")).unwrap();
    for p in ["t/closed", "shut"] {
        std::fs::set_permissions(dir.join(p), std::fs::Permissions::from_mode(0o700)).unwrap();
    }
    let unreadable_by_us = std::fs::read_dir(dir.join("shut")).is_err();
    if rustix::process::geteuid().is_root() || unreadable_by_us {
        // A root directory that cannot be listed: refused before anything runs.
        let Some(out) = unprivileged(&dir, &["run", "-n", "2", "--evict", "shut", "--", "true"])
        else {
            return;
        };
        out.expect_code(125);
        assert_one_escaped_line(&out);
        assert!(
            out.stderr.contains("cannot list the directory shut"),
            "{}",
            out.describe()
        );
        // A tree with an unreadable part: runs, says so once, counts it in every record.
        std::fs::create_dir(dir.join("w")).unwrap();
        std::fs::set_permissions(dir.join("w"), std::fs::Permissions::from_mode(0o777)).unwrap();
        let args = ["run", "-n", "2", "-o", "w/d", "--evict", "t", "--", "true"];
        let out = unprivileged(&dir, &args).unwrap();
        out.expect_code(0);
        assert_no_raw_controls(&out);
        // Said once (a notice may be folded over several lines).
        let said = out.stderr.replace('\n', " ");
        assert_eq!(said.matches("--evict:").count(), 1, "{}", out.describe());
        assert!(said.contains("could not be evicted"), "{}", out.describe());
        assert!(said.contains("closed"), "{}", out.describe());
        for r in assert_records_whole(&dir.join("w/d"), true) {
            assert_eq!(r["cold_action"]["evict_failed_files"], 1, "{r:#}");
            assert_eq!(r["cache"]["before"]["resident_ratio"], Value::Null, "{r:#}");
            assert!(
                r["cache"]["before"]["unknown_files"].as_u64() >= Some(1),
                "{r:#}"
            );
        }
    }
    // Neither a file nor a directory, and a directory without files: said, never a silent 0.
    let out = ct(dir.path(), ["run", "--evict", "/dev/null", "--", "true"]).run_within(DEADLINE);
    out.expect_code(125);
    assert_one_escaped_line(&out);
    assert!(
        out.stderr.contains("is a character device"),
        "{}",
        out.describe()
    );
    std::fs::create_dir(dir.join("empty")).unwrap();
    let out = ct(
        dir.path(),
        [
            "run", "-n", "2", "-o", "e", "--evict", "empty", "--", "true",
        ],
    )
    .run_within(DEADLINE);
    out.expect_code(0);
    assert!(
        out.stderr.contains("nothing is evicted"),
        "{}",
        out.describe()
    );
    let records = assert_records_whole(&dir.join("e"), true);
    assert_eq!(records[0]["cold_action"]["evicted_files"], 0);
}

// ---------------------------------------------------------------- every kill reaches the child

#[test]
fn a_command_that_leaves_its_process_group_is_still_timed_out() {
    let dir = TempDir::new("escape");
    // The command moves itself into coldtrace's process group (perl's setpgrp), where the
    // --timeout's group kill cannot find it.
    let leave = "setpgrp(0, getpgrp(getppid())) or die \"setpgrp: $!\"";
    let cases = [
        (format!("{leave}; sleep 20"), "SIGTERM", 143),
        (
            format!("$SIG{{TERM}} = 'IGNORE'; {leave}; sleep 20"),
            "SIGKILL",
            137,
        ),
    ];
    for (body, sent, code) in cases {
        // A perl script of its own name: the name a survivor would be found by.
        let cmd = dir.join(unique_name("esc"));
        write_file(&cmd, format!("#!/usr/bin/perl\n{body}\n").as_bytes(), 0o755);
        let _ = std::fs::remove_dir_all(dir.join("d"));
        let out = ct(
            dir.path(),
            [
                "run",
                "-n",
                "1",
                "--json",
                "-o",
                "d",
                "--timeout",
                "0.3",
                "--kill-after",
                "0.3",
                "--",
                cmd.to_str().unwrap(),
            ],
        )
        .run_within(DEADLINE);
        assert!(out.elapsed < Duration::from_secs(5), "{}", out.describe());
        out.expect_code(code);
        let r = out.json();
        assert_eq!(r["outcome"]["kind"], "timed_out", "{r:#}");
        assert_eq!(r["outcome"]["sent_signal"], sent, "{r:#}");
        assert_eq!(r["outcome"]["sent_to"], "process", "{r:#}");
        assert_records_whole(&dir.join("d"), true);
        assert_no_raw_controls(&out);
        assert_no_survivor(&cmd);
    }
    // A command that stays in its group is killed through the group, as before.
    let out = ct(
        dir.path(),
        [
            "run",
            "-n",
            "1",
            "--json",
            "--timeout",
            "0.3",
            "--",
            "sleep",
            "20",
        ],
    )
    .run_within(DEADLINE);
    out.expect_code(143);
    assert_eq!(out.json()["outcome"]["sent_to"], "process group");
}

// ---------------------------------------------------------------- memory bounded by what is used

/// The number a script wrote to `path`.
fn number_in(path: &Path) -> u64 {
    let text = std::fs::read_to_string(path).unwrap();
    text.trim()
        .parse()
        .unwrap_or_else(|e| panic!("{}: {text:?}: {e}", path.display()))
}

#[test]
fn a_discarded_stderr_keeps_only_its_tail_while_the_command_writes() {
    let dir = TempDir::new("sinkbound");
    // 256 MiB of stderr, then the command looks at how much of its stderr file is allocated.
    let body = format!(
        "yes | head -c 268435456 >&2; sleep 0.3; stat -L -c %b /proc/$$/fd/2 > {}; \
         echo the-last-line >&2; exit 1",
        dir.join("blocks").display()
    );
    let noisy = script(&dir, "sink", &body);
    let out = ct(
        dir.path(),
        ["run", "-n", "2", "--", noisy.to_str().unwrap()],
    )
    .run_within(Duration::from_secs(60));
    out.expect_code(1);
    assert_no_raw_controls(&out);
    assert!(
        out.stderr.contains("the-last-line"),
        "the tail is still shown{}",
        out.describe()
    );
    let blocks = number_in(&dir.join("blocks"));
    assert!(
        blocks * 512 < 4 << 20,
        "the discarded stderr holds {} KiB of 256 MiB written",
        blocks / 2
    );
    assert_no_survivor(&noisy);
}

#[test]
fn a_captured_output_is_moved_to_its_artifact_while_the_command_writes() {
    let dir = TempDir::new("capturebound");
    // 256 MiB to stdout with -o; then the command looks at how much of its stdout (a memfd
    // until the run ends) is still allocated, and writes one more line.
    let body = format!(
        "yes | head -c 268435456; sleep 0.3; stat -L -c %b /proc/$$/fd/1 > {}; \
         echo the-last-line",
        dir.join("blocks").display()
    );
    let writer = script(&dir, "capture", &body);
    let out = ct(
        dir.path(),
        [
            "run",
            "-q",
            "-n",
            "1",
            "-o",
            "out",
            "--keep-output",
            "--",
            writer.to_str().unwrap(),
        ],
    )
    .run_within(Duration::from_secs(60));
    out.expect_code(0);
    assert_no_raw_controls(&out);
    let blocks = number_in(&dir.join("blocks"));
    assert!(
        blocks * 512 < 4 << 20,
        "the captured stdout holds {} KiB of 256 MiB written",
        blocks / 2
    );
    let records = assert_records_whole(&dir.join("out"), true);
    let total = 268_435_456 + "the-last-line\n".len() as u64;
    assert_eq!(records[0]["artifacts"]["stdout_bytes"], total);
    let stdout = dir.join("out/runs/000/stdout");
    assert_eq!(std::fs::metadata(&stdout).unwrap().len(), total);
    let mut file = std::fs::File::open(&stdout).unwrap();
    use std::io::{Read, Seek, SeekFrom};
    let mut head = [0u8; 4];
    file.read_exact(&mut head).unwrap();
    assert_eq!(
        &head, b"y\ny\n",
        "the start was moved too, not only the end"
    );
    file.seek(SeekFrom::End(-20)).unwrap();
    let mut end = String::new();
    file.read_to_string(&mut end).unwrap();
    assert!(end.ends_with("y\nthe-last-line\n"), "{end:?}");
    assert_no_survivor(&writer);
}

/// coldtrace's own peak RSS (KiB) over `coldtrace run -q ARGS`, measured by coldtrace.
fn peak_rss_kib(dir: &TempDir, args: &[&str]) -> u64 {
    let mut all = vec![
        "run", "-n", "1", "--json", "--output", "null", "--", BIN, "run", "-q",
    ];
    all.extend_from_slice(args);
    let out = ct(dir.path(), &all).run_within(Duration::from_secs(120));
    let r = out.json();
    assert_eq!(r["outcome"]["kind"], "exited", "{}", out.describe());
    r["rusage"]["max_rss_kib"].as_u64().unwrap()
}

#[test]
fn the_end_of_a_long_batch_does_not_grow_with_its_runs() {
    let dir = TempDir::new("summarybound");
    // The summary reads one metric's values at a time, never every run's row.
    let few = peak_rss_kib(&dir, &["-n", "500", "--minimal", "--", "true"]);
    let many = peak_rss_kib(&dir, &["-n", "8000", "--minimal", "--", "true"]);
    eprintln!("coldtrace's peak RSS: {few} KiB over 500 runs, {many} KiB over 8000 runs");
    assert!(
        many < few + 2048,
        "{few} KiB over 500 runs, {many} KiB over 8000"
    );
    // Failed runs keep their last stderr lines only for the most recent ones.
    let failing = script(
        &dir,
        "f5k",
        "printf '%1000s\\n%1000s\\n%1000s\\n%1000s\\n%1000s\\n' a b c d e >&2; exit 1",
    );
    let f = failing.to_str().unwrap();
    let few = peak_rss_kib(&dir, &["-n", "100", "--minimal", "--", f]);
    let many = peak_rss_kib(&dir, &["-n", "1500", "--minimal", "--", f]);
    eprintln!("coldtrace's peak RSS: {few} KiB over 100 failed runs, {many} KiB over 1500");
    assert!(
        many < few + 2048,
        "{few} KiB over 100 failed runs, {many} KiB over 1500"
    );
}

#[test]
fn a_label_longer_than_65535_characters_renders_everywhere() {
    let dir = TempDir::new("longlabel");
    let label = "L".repeat(70_000);
    let out = ct(
        dir.path(),
        ["run", "-n", "2", "-o", "b", "--label", &label, "--", "true"],
    )
    .run_within(DEADLINE);
    out.expect_code(0);
    assert!(
        out.stderr.lines().all(|l| l.chars().count() <= 200),
        "{}",
        out.describe()
    );
    for args in [
        vec!["report", "b"],
        vec!["report", "--markdown", "b"],
        vec!["report", "--json", "b"],
    ] {
        let out = ct(dir.path(), &args).run_within(DEADLINE);
        out.expect_code(0);
        assert_no_raw_controls(&out);
        assert!(out.stdout.contains("LLLL"), "{}", out.describe());
    }
}

// ---------------------------------------------------------------- arguments byte for byte

#[test]
fn invalid_utf8_reaches_the_command_and_prepare_byte_for_byte() {
    use std::ffi::OsString;
    use std::os::unix::ffi::OsStringExt;
    let dir = TempDir::new("bytes");
    let log = dir.join("argv");
    let show = script(
        &dir,
        "show",
        &format!("for a; do printf '%s|' \"$a\"; done >> {}", log.display()),
    );
    let show = show.to_str().unwrap().as_bytes().to_vec();
    let os = |parts: &[&[u8]]| OsString::from_vec(parts.concat());
    let prepare_log = dir.join("prepare");
    let prepare = format!("printf 'P\\377' >> {}", prepare_log.display());
    let cases: Vec<(Vec<OsString>, &[u8])> = vec![
        // compare: each command one argument, split into words without being decoded.
        (
            vec![
                "compare".into(),
                "-n".into(),
                "1".into(),
                "-p".into(),
                prepare.clone().into(),
                os(&[&show, b" a\xff\xfeb 'c d'"]),
                os(&[&show, b" \xc3"]),
            ],
            b"a\xff\xfeb|c d|\xc3|",
        ),
        // run with a parameter scan: {n} replaced in words that are not UTF-8.
        (
            vec![
                "run".into(),
                "-n".into(),
                "1".into(),
                "-P".into(),
                "n".into(),
                "1".into(),
                "2".into(),
                "--".into(),
                OsString::from_vec(show.clone()),
                os(&[b"{n}\x80"]),
            ],
            b"1\x80|2\x80|",
        ),
        // run through the shell: the script is handed to it as given.
        (
            vec![
                "run".into(),
                "-n".into(),
                "1".into(),
                "--shell".into(),
                "sh".into(),
                "--".into(),
                os(&[&show, b" '\xfe'"]),
            ],
            b"\xfe|",
        ),
    ];
    for (args, expected) in cases {
        let _ = std::fs::remove_file(&log);
        let out = ct(dir.path(), args).run_within(DEADLINE);
        out.expect_code(0);
        assert_no_raw_controls(&out);
        assert_eq!(
            String::from_utf8_lossy(&std::fs::read(&log).unwrap()),
            String::from_utf8_lossy(expected),
            "{}",
            out.describe()
        );
        assert_eq!(std::fs::read(&log).unwrap(), expected, "{}", out.describe());
    }
    // --prepare ran before each of the comparison's two runs, byte for byte.
    assert_eq!(std::fs::read(&prepare_log).unwrap(), b"P\xffP\xff");
}

#[test]
fn a_fifo_or_a_device_planted_as_the_state_file_neither_blocks_nor_is_read_without_end() {
    let dir = TempDir::new("statefifo");
    std::fs::create_dir(dir.join("state")).unwrap();
    let state = dir.join("state/last-boot");
    // A symlink to /dev/zero is not followed at all.
    for (plant, what) in [("fifo", "a FIFO"), ("zero", "a symlink")] {
        match plant {
            "fifo" => mkfifo(&state),
            _ => std::os::unix::fs::symlink("/dev/zero", &state).unwrap(),
        }
        let _ = std::fs::remove_dir_all(dir.join("d"));
        let mut c = ct(
            dir.path(),
            ["run", "-q", "-n", "2", "-o", "d", "--", "true"],
        );
        c.cmd.env("COLDTRACE_STATE_DIR", dir.join("state"));
        let out = c.run_within(Duration::from_secs(20));
        out.expect_code(0);
        let doc = read_batch(&dir.join("d"));
        let note = doc["context"]["boot_marker"]["note"]
            .as_str()
            .unwrap_or_default();
        assert!(note.contains(what), "{note}{}", out.describe());
        assert_eq!(
            doc["context"]["boot_marker"]["first_batch_since_boot"],
            Value::Null
        );
        std::fs::remove_file(&state).unwrap();
    }
}

// ---------------------------------------------------------------- more cases of the same classes
// Beyond the issue's own list: each asserts the exit code, the one escaped line (where there
// is an error), no survivor and whole records.

#[test]
fn an_evict_root_that_is_a_fifo_is_refused_before_any_run() {
    let dir = TempDir::new("evictfifo");
    let fifo = dir.join("pipe");
    mkfifo(&fifo);
    let marker = script(&dir, "ef", "touch MARKER");
    let out = ct(
        dir.path(),
        [
            "run",
            "-n",
            "2",
            "--evict",
            fifo.to_str().unwrap(),
            "--",
            marker.to_str().unwrap(),
        ],
    )
    .run_within(DEADLINE);
    out.expect_code(125);
    assert_one_escaped_line(&out);
    assert!(out.stderr.contains("FIFO"), "{}", out.describe());
    assert!(!dir.join("MARKER").exists(), "the command ran");
    assert_no_survivor(&marker);
}

#[test]
fn an_out_path_under_a_file_is_one_line_and_creates_nothing() {
    let dir = TempDir::new("outfile");
    std::fs::write(dir.join("plain"), b"x").unwrap();
    let marker = script(&dir, "of", "touch MARKER");
    let out = ct(
        dir.path(),
        [
            "run",
            "-n",
            "2",
            "-o",
            "plain/batch",
            "--",
            marker.to_str().unwrap(),
        ],
    )
    .run_within(DEADLINE);
    out.expect_code(125);
    assert_one_escaped_line(&out);
    assert!(out.stderr.contains("not a directory"), "{}", out.describe());
    assert!(!dir.join("MARKER").exists());
    assert_eq!(std::fs::read(dir.join("plain")).unwrap(), b"x");
}

#[test]
fn a_state_directory_that_is_a_file_leaves_the_batch_whole() {
    let dir = TempDir::new("statefile");
    std::fs::write(dir.join("state"), b"not a directory").unwrap();
    let mut cmd = Command::new(BIN);
    cmd.args(["run", "-q", "-n", "3", "-o", "b", "--", "true"])
        .current_dir(dir.path())
        .env("COLDTRACE_STATE_DIR", dir.join("state"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let out = common::finish(
        cmd.spawn().unwrap(),
        "COLDTRACE_STATE_DIR=state coldtrace run -q -n 3 -o b -- true".into(),
        Instant::now(),
        DEADLINE,
    );
    out.expect_code(0);
    assert_no_raw_controls(&out);
    let records = assert_records_whole(&dir.join("b"), true);
    assert_eq!(records.len(), 3);
    let marker = &read_batch(&dir.join("b"))["context"]["boot_marker"];
    assert_eq!(marker["first_batch_since_boot"], Value::Null, "{marker}");
    assert_eq!(
        std::fs::read(dir.join("state")).unwrap(),
        b"not a directory"
    );
}

#[test]
fn records_of_the_wrong_types_are_read_without_a_panic() {
    let dir = TempDir::new("wrongtypes");
    let batch = dir.join("b");
    std::fs::create_dir(&batch).unwrap();
    std::fs::write(
        batch.join("runs.jsonl"),
        concat!(
            r#"{"schema":"coldtrace.run/1","role":"first","counted":true,"wall_ns":"fast","label":7}"#,
            "\n",
            r#"{"schema":"coldtrace.run/1","role":"warm","counted":"yes","anomalies":{"a":1}}"#,
            "\n",
            r#"{"schema":"coldtrace.run/1","role":["warm"],"counted":true,"wall_ns":-5}"#,
            "\n"
        ),
    )
    .unwrap();
    std::fs::write(
        batch.join("batch.json"),
        r#"{"schema":"coldtrace.batch/2","complete":"yes","context":5,"anomalies":{},"label":[]}"#,
    )
    .unwrap();
    for format in [&[][..], &["--json"], &["--markdown"]] {
        let mut args = vec!["report"];
        args.extend_from_slice(format);
        args.push("b");
        let out = ct(dir.path(), &args).run_within(DEADLINE);
        out.expect_code(0);
        assert_no_raw_controls(&out);
        assert!(out.stdout.contains('b'), "{}", out.describe());
    }
}

#[test]
fn a_record_line_with_invalid_utf8_is_one_line_naming_it() {
    let dir = TempDir::new("badutf8");
    let batch = dir.join("b");
    std::fs::create_dir(&batch).unwrap();
    let mut bytes =
        br#"{"schema":"coldtrace.run/1","role":"first","counted":true,"wall_ns":1}"#.to_vec();
    bytes.push(b'\n');
    bytes.extend_from_slice(
        b"{\"schema\":\"coldtrace.run/1\",\"label\":\"\xff\x1b[2J\",\"role\":\"warm\"}\n",
    );
    std::fs::write(batch.join("runs.jsonl"), bytes).unwrap();
    let out = ct(dir.path(), ["report", "b"]).run_within(DEADLINE);
    out.expect_code(125);
    assert_one_escaped_line(&out);
    assert!(out.stderr.contains("line 2"), "{}", out.describe());
}

#[test]
fn a_character_device_is_a_valid_stdin_for_a_batch() {
    let dir = TempDir::new("chardev");
    let out = ct(
        dir.path(),
        [
            "run",
            "-q",
            "-n",
            "2",
            "-o",
            "b",
            "--keep-output",
            "--stdin",
            "/dev/zero",
            "--",
            "head",
            "-c",
            "1000",
        ],
    )
    .run_within(DEADLINE);
    out.expect_code(0);
    assert_no_raw_controls(&out);
    for r in assert_records_whole(&dir.join("b"), true) {
        assert_eq!(r["artifacts"]["stdout_bytes"], 1000, "{r}");
    }
    assert_eq!(
        std::fs::read(dir.join("b/runs/001/stdout")).unwrap(),
        vec![0u8; 1000]
    );
}

#[test]
fn a_failing_command_that_floods_its_stdout_keeps_its_output_and_its_tail() {
    let dir = TempDir::new("flood");
    let flood = script(
        &dir,
        "fl",
        "head -c 5000000 /dev/zero; echo 'the reason it failed' >&2; exit 2",
    );
    let out = ct(
        dir.path(),
        [
            "run",
            "-n",
            "2",
            "-o",
            "b",
            "--keep-output",
            "--keep-output",
            "--",
            flood.to_str().unwrap(),
        ],
    )
    .run_within(DEADLINE);
    out.expect_code(1);
    assert_no_raw_controls(&out);
    assert!(
        out.stderr.contains("the reason it failed"),
        "{}",
        out.describe()
    );
    let records = assert_records_whole(&dir.join("b"), true);
    for (i, r) in records.iter().enumerate() {
        assert_eq!(r["counted"], false, "{r}");
        assert_eq!(r["artifacts"]["stdout_bytes"], 5_000_000, "{r}");
        let len = std::fs::metadata(dir.join(format!("b/runs/{i:03}/stdout")))
            .unwrap()
            .len();
        assert_eq!(len, 5_000_000);
    }
    assert_no_survivor(&flood);
}

#[test]
fn a_timeout_kills_every_process_of_a_group_that_ignores_sigterm() {
    let dir = TempDir::new("tgroup");
    let child = script(&dir, "tc", "trap '' TERM; sleep 30 & wait");
    let parent = script(
        &dir,
        "tp",
        &format!("trap '' TERM; {c} & {c} & {c} & wait", c = child.display()),
    );
    let started = Instant::now();
    let out = ct(
        dir.path(),
        [
            "run",
            "-n",
            "1",
            "-q",
            "--timeout",
            "0.5",
            "--kill-after",
            "0.5",
            "--",
            parent.to_str().unwrap(),
        ],
    )
    .run_within(DEADLINE);
    assert_eq!(
        out.code(),
        Some(137),
        "SIGKILL after the grace period{}",
        out.describe()
    );
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{}",
        out.describe()
    );
    assert_no_raw_controls(&out);
    assert_no_survivor(&parent);
    assert_no_survivor(&child);
}

#[test]
fn a_not_executable_path_with_a_newline_is_one_escaped_line() {
    let dir = TempDir::new("nlpath");
    let path = dir.join("two\nlines");
    write_file(&path, b"#!/bin/sh\ntrue\n", 0o644);
    let out = ct(dir.path(), ["run", "-n", "1", "--", path.to_str().unwrap()]).run_within(DEADLINE);
    out.expect_code(126);
    assert_one_escaped_line(&out);
    assert!(out.stderr.contains("two\\nlines"), "{}", out.describe());
}

#[test]
fn a_comparison_with_a_directory_as_a_command_creates_nothing() {
    let dir = TempDir::new("cmpdir");
    std::fs::create_dir(dir.join("sub")).unwrap();
    let out = ct(
        dir.path(),
        ["compare", "-n", "1", "-o", "c", "true", "./sub"],
    )
    .run_within(DEADLINE);
    out.expect_code(126);
    assert_one_escaped_line(&out);
    assert!(
        !dir.join("c").exists(),
        "the comparison directory was created"
    );
}

#[test]
fn output_that_cannot_be_kept_stops_the_batch_after_the_run_is_recorded() {
    let dir = TempDir::new("unkept");
    // The command plants a file where the batch's runs/ directory would go.
    let planter = script(
        &dir,
        "pl",
        &format!("echo some output; : > {}", dir.join("b/runs").display()),
    );
    let out = ct(
        dir.path(),
        [
            "run",
            "-n",
            "3",
            "-o",
            "b",
            "--keep-output",
            "--",
            planter.to_str().unwrap(),
        ],
    )
    .run_within(DEADLINE);
    out.expect_code(125);
    assert_one_escaped_line(&out);
    assert!(out.stderr.contains("runs"), "{}", out.describe());
    let records = assert_records_whole(&dir.join("b"), false);
    assert_eq!(records.len(), 1, "the run that happened is recorded");
    assert_eq!(records[0]["artifacts"], Value::Null, "{}", records[0]);
    assert_eq!(records[0]["counted"], true);
    assert_no_survivor(&planter);
}

/// Whether this test may mount (root); says why not when it may not.
pub(crate) fn may_mount(what: &str) -> bool {
    let root = rustix::process::geteuid().is_root();
    if !root {
        eprintln!("skipped {what}: mounting needs root (CI runs as root)");
    }
    root
}

/// `unshare -m sh -c 'SETUP; exec coldtrace ARGS'` in `dir`, not started: a private mount
/// namespace, so the mounts of SETUP are seen by coldtrace alone and vanish with it.
pub(crate) fn in_private_mounts(dir: &TempDir, setup: &str, args: &[&str]) -> Command {
    let script = format!("set -e; {setup}; exec \"$@\"");
    let mut cmd = Command::new("unshare");
    cmd.args([
        "-m",
        "--propagation",
        "private",
        "/bin/sh",
        "-c",
        &script,
        "sh",
    ])
    .arg(common::BIN)
    .args(args)
    .current_dir(dir.path())
    .stdin(std::process::Stdio::null())
    .stdout(std::process::Stdio::piped())
    .stderr(std::process::Stdio::piped());
    cmd
}

/// [`in_private_mounts`], run to its end.
pub(crate) fn run_in_private_mounts(dir: &TempDir, setup: &str, args: &[&str]) -> Output {
    let child = in_private_mounts(dir, setup, args)
        .spawn()
        .expect("spawn unshare");
    let shown = format!("unshare -m … coldtrace {}", args.join(" "));
    common::finish(child, shown, Instant::now(), DEADLINE)
}
