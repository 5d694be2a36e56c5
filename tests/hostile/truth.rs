//! Saying something false or nothing: what coldtrace cannot know is unknown, what `report`
//! passes over is named, names and labels never turn into formulas or HTML, and a flag that
//! does nothing says so.

use super::common::{ct, read_batch, Output, TempDir};
use super::{a_batch, assert_no_raw_controls, assert_one_escaped_line, launch, DEADLINE};
use serde_json::Value;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

/// `coldtrace run -q -n 2 -o OUT -- true` as user nobody (when root) with the state directory
/// `state`; `None` (said) when setpriv is missing.
fn as_nobody_with_state(dir: &TempDir, state: &Path, out: &str) -> Option<Output> {
    let state = format!("COLDTRACE_STATE_DIR={}", state.display());
    let prefix: Vec<&str> = if is_root() {
        let setpriv = [
            "setpriv",
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
        ];
        setpriv.into_iter().chain(["env", &state]).collect()
    } else {
        vec!["env", &state]
    };
    match launch(
        dir,
        &prefix,
        &["run", "-q", "-n", "2", "-o", out, "--", "true"],
    ) {
        Ok(out) => Some(out),
        Err(e) => {
            eprintln!("NOTE: cannot run {prefix:?} ({e}): the case was not checked");
            None
        }
    }
}

/// A directory nobody may write: 0755, root's (or ours when not root).
fn read_only_state(dir: &TempDir, boot: Option<&str>) -> std::path::PathBuf {
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let state = dir.join("state");
    std::fs::create_dir(&state).unwrap();
    if let Some(boot) = boot {
        std::fs::write(state.join("last-boot"), format!("{boot}\n")).unwrap();
    }
    let mode = if is_root() { 0o755 } else { 0o555 };
    std::fs::set_permissions(&state, std::fs::Permissions::from_mode(mode)).unwrap();
    state
}

#[test]
fn a_boot_marker_that_cannot_be_written_makes_the_answer_unknown() {
    let dir = TempDir::new("markerro");
    let state = read_only_state(&dir, Some("00000000-0000-0000-0000-000000000000"));
    let Some(out) = as_nobody_with_state(&dir, &state, "b") else {
        return;
    };
    out.expect_code(0);
    assert_no_raw_controls(&out);
    let marker = &read_batch(&dir.join("b"))["context"]["boot_marker"];
    assert_eq!(marker["first_batch_since_boot"], Value::Null, "{marker}");
    let note = marker["note"].as_str().unwrap_or_default();
    assert!(
        note.contains("cannot update") && note.contains("last-boot"),
        "{marker}"
    );
    let names: Vec<_> = std::fs::read_dir(&state).unwrap().collect();
    assert_eq!(names.len(), 1, "nothing left in the state directory");
}

#[test]
fn a_boot_marker_naming_this_boot_is_read_even_when_it_cannot_be_written() {
    let dir = TempDir::new("markerknown");
    let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").unwrap();
    let state = read_only_state(&dir, Some(boot.trim()));
    let Some(out) = as_nobody_with_state(&dir, &state, "b") else {
        return;
    };
    out.expect_code(0);
    let marker = &read_batch(&dir.join("b"))["context"]["boot_marker"];
    assert_eq!(marker["first_batch_since_boot"], false, "{marker}");
    assert_eq!(marker["note"], Value::Null, "{marker}");
}

/// A batch `depth` directories below `root` (each named `name`), made relative to directory
/// descriptors so that its path may be longer than PATH_MAX.
fn deep_batch(root: &Path, depth: usize, name: &str) {
    use rustix::fs::{Mode, OFlags};
    let flags = OFlags::RDONLY | OFlags::DIRECTORY;
    let mut fd = rustix::fs::open(root, flags, Mode::empty()).unwrap();
    for _ in 0..depth {
        rustix::fs::mkdirat(&fd, name, Mode::from_raw_mode(0o755)).unwrap();
        fd = rustix::fs::openat(&fd, name, flags, Mode::empty()).unwrap();
    }
    let file = OFlags::WRONLY | OFlags::CREATE;
    rustix::fs::openat(&fd, "runs.jsonl", file, Mode::from_raw_mode(0o644)).unwrap();
}

/// `coldtrace report ARGS` in `dir`: exit 1, the table on stdout, one `skipped` line per
/// directory passed over on stderr (each saying `says`).
fn report_skipping(dir: &TempDir, args: &[&str], says: &[&str]) -> Output {
    let out = ct(dir.path(), args).run_within(DEADLINE);
    out.expect_code(1);
    assert_no_raw_controls(&out);
    let skipped: Vec<&str> = out
        .stderr_lines()
        .into_iter()
        .filter(|l| l.starts_with("coldtrace: skipped "))
        .collect();
    assert_eq!(skipped.len(), says.len(), "{}", out.describe());
    for (line, says) in skipped.iter().zip(says) {
        assert!(line.contains(says), "{line:?} does not say {says:?}");
    }
    out
}

#[test]
fn report_names_a_batch_too_deep_to_be_searched() {
    let dir = TempDir::new("reportdeep");
    std::fs::create_dir(dir.join("top")).unwrap();
    a_batch(&dir, "top/ok");
    deep_batch(&dir.join("top"), 20, "d");
    let out = report_skipping(&dir, &["report", "top"], &["16 levels below"]);
    assert!(out.stdout.contains("top/ok"), "{}", out.describe());
}

#[test]
fn report_names_a_directory_longer_than_path_max() {
    let dir = TempDir::new("reportlong");
    std::fs::create_dir(dir.join("top")).unwrap();
    a_batch(&dir, "top/ok");
    // 16 levels of 255 characters: past PATH_MAX (4096) at the depth limit.
    deep_batch(&dir.join("top"), 16, &"n".repeat(255));
    let out = report_skipping(&dir, &["report", "top"], &["ENAMETOOLONG"]);
    assert!(out.stdout.contains("top/ok"), "{}", out.describe());
}

#[test]
fn report_shows_the_intact_batches_beside_a_damaged_one() {
    let dir = TempDir::new("reportdamaged");
    for name in ["top/a", "top/b", "top/c"] {
        a_batch(&dir, name);
    }
    let records = dir.join("top/b/runs.jsonl");
    let text = std::fs::read_to_string(&records).unwrap();
    std::fs::write(&records, text.replacen('{', "{\"index\":", 1)).unwrap();
    let out = report_skipping(&dir, &["report", "top"], &["top/b/runs.jsonl: line 1"]);
    assert!(
        out.stdout.contains("top/a") && out.stdout.contains("top/c"),
        "{}",
        out.describe()
    );
    assert!(!out.stdout.contains("top/b"), "{}", out.describe());
    let out = ct(dir.path(), ["report", "--json", "top"]).run_within(DEADLINE);
    out.expect_code(1);
    let doc = out.json();
    assert_eq!(doc["batches"].as_array().map(Vec::len), Some(2));
    assert_eq!(doc["skipped"].as_array().map(Vec::len), Some(1));
    let out = ct(dir.path(), ["report", "--markdown", "top"]).run_within(DEADLINE);
    out.expect_code(1);
    assert!(
        out.stdout.contains("- skipped top/b/runs.jsonl"),
        "{}",
        out.describe()
    );
    // Nothing readable: coldtrace's one-line error.
    super::files::refused(&dir, "report top/b", "top/b/runs.jsonl: line 1");
}

#[test]
fn report_says_when_a_comparison_lost_a_command() {
    let dir = TempDir::new("reportlost");
    let names = "--command-name one --command-name two --command-name three";
    let line = format!("compare -q -n 2 -o c {names} true true true");
    ct(dir.path(), line.split(' '))
        .run_within(DEADLINE)
        .expect_code(0);
    std::fs::remove_dir_all(dir.join("c/commands/01")).unwrap();
    let out = report_skipping(&dir, &["report", "c"], &["c/commands/01: missing"]);
    assert!(out.stderr.contains("(two)"), "{}", out.describe());
    assert!(
        out.stdout.contains("one") && out.stdout.contains("three"),
        "{}",
        out.describe()
    );
}

/// The cells of a CSV file as Python's csv module reads them (RFC 4180).
fn csv_cells(path: &Path) -> Vec<Vec<String>> {
    let script = "import csv, json, sys; print(json.dumps(list(csv.reader(open(sys.argv[1])))))";
    let out = std::process::Command::new("python3")
        .args(["-c", script])
        .arg(path)
        .output()
        .expect("python3 reads the CSV");
    serde_json::from_slice(&out.stdout).expect("the CSV as JSON")
}

#[test]
fn names_and_values_never_become_formulas_in_a_csv() {
    let dir = TempDir::new("csvformula");
    let names = [
        "=HYPERLINK(\"http://x\",\"y\")",
        "@SUM(A1)",
        "+1+cmd|' /C calc'!A0",
    ];
    let mut args = vec!["compare", "-q", "-n", "1", "--export-csv", "x.csv"];
    for name in names {
        args.extend(["--command-name", name]);
    }
    args.extend(["true", "true", "true"]);
    ct(dir.path(), &args).run_within(DEADLINE).expect_code(0);
    let cells = csv_cells(&dir.join("x.csv"));
    let commands: Vec<&str> = cells[1..].iter().map(|row| row[0].as_str()).collect();
    for name in names {
        assert!(
            commands.contains(&format!("'{name}").as_str()),
            "{commands:?}"
        );
    }
    // Parameter values too, and a number stays a number.
    let args = [
        "run",
        "-q",
        "-n",
        "1",
        "-L",
        "v",
        "-x,=1+1",
        "--export-csv",
        "y.csv",
        "--",
        "echo",
        "{v}",
    ];
    ct(dir.path(), args).run_within(DEADLINE).expect_code(0);
    let text = std::fs::read_to_string(dir.join("y.csv")).unwrap();
    assert!(
        !text.lines().any(|l| l.starts_with(['=', '+', '-', '@'])),
        "{text}"
    );
    assert!(!text.contains(",=") && !text.contains(",-x"), "{text}");
}

#[test]
fn html_in_names_and_labels_is_text_in_markdown() {
    let dir = TempDir::new("mdhtml");
    let html = "<img src=x onerror=alert(1)>&amp;";
    let out = ct(
        dir.path(),
        [
            "run",
            "-q",
            "-n",
            "2",
            "-o",
            "b",
            "--label",
            html,
            "--command-name",
            html,
            "--export-markdown",
            "t.md",
            "--",
            "true",
        ],
    )
    .run_within(DEADLINE);
    out.expect_code(0);
    // A code span would show an entity as written: the name is Markdown text, its HTML as
    // entities.
    let exported = std::fs::read_to_string(dir.join("t.md")).unwrap();
    assert!(
        exported.contains("| &lt;img src=x onerror=alert(1)&gt;&amp;amp; |"),
        "{exported}"
    );
    let reported = ct(dir.path(), ["report", "--markdown", "b"]).run_within(DEADLINE);
    reported.expect_code(0);
    let text = &reported.stdout;
    assert!(!text.contains("<img") && !text.contains(">&amp;"), "{text}");
    assert!(
        text.contains("&lt;img src=x onerror=alert(1)&gt;&amp;amp;"),
        "{text}"
    );
}

#[test]
fn kill_after_without_a_timeout_bounds_a_request_to_stop_in_a_comparison_too() {
    // Alone, --kill-after is not ignored: that long after a request to stop was passed on,
    // the command's whole tree is killed (tests/hostile/signals.rs has the single command).
    let dir = TempDir::new("killafter");
    let ready = dir.join("ready");
    let stubborn = dir.join("stubborn");
    super::common::write_file(
        &stubborn,
        format!(
            "#!/bin/sh\ntrap '' TERM\n: > {}\nsleep 30\n",
            ready.display()
        )
        .as_bytes(),
        0o755,
    );
    let s = stubborn.to_str().unwrap();
    let c = ct(
        dir.path(),
        [
            "compare",
            "-n",
            "2",
            "-o",
            "c",
            "--kill-after",
            "0.3",
            s,
            "true",
        ],
    );
    let (out, took) = super::signal_when(c, rustix::process::Signal::TERM, |pid| {
        super::wait_until_blocking_sigint(pid);
        while !ready.exists() {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    });
    out.expect_code(143);
    assert!(!out.stderr.contains("no effect"), "{}", out.describe());
    assert!(
        took < std::time::Duration::from_secs(5),
        "{took:?}{}",
        out.describe()
    );
    let records = super::common::read_records(&dir.join("c/commands/00"));
    assert_eq!(
        records[0]["outcome"]["tree_killed"], "--kill-after",
        "{}",
        records[0]
    );
    assert_eq!(read_batch(&dir.join("c"))["interrupted_by"], "SIGTERM");
}

#[test]
fn drop_caches_on_a_read_only_proc_sys_says_so_not_needs_root() {
    let dir = TempDir::new("dropro");
    if !is_root() {
        let out = ct(
            dir.path(),
            ["run", "-n", "2", "--drop-caches", "--", "true"],
        )
        .run_within(DEADLINE);
        out.expect_code(125);
        assert!(out.stderr.contains("needs root"), "{}", out.describe());
        eprintln!("NOTE: not root: a read-only /proc/sys was not made");
        return;
    }
    // A private mount namespace with /proc/sys bound read-only over itself.
    let setup = "mount --bind /proc/sys /proc/sys && mount -o remount,bind,ro /proc/sys /proc/sys";
    let script = format!("{setup} && exec \"$@\"");
    let prefix = [
        "unshare",
        "--mount",
        "--propagation",
        "private",
        "sh",
        "-c",
        &script,
        "sh",
    ];
    let Ok(out) = launch(
        &dir,
        &prefix,
        &["run", "-n", "2", "--drop-caches", "--", "true"],
    ) else {
        eprintln!("NOTE: cannot run unshare: the read-only case was not checked");
        return;
    };
    if out.stderr.contains("mount:") || out.stderr.contains("unshare:") {
        eprintln!(
            "NOTE: no private read-only /proc/sys here ({}): not checked",
            out.stderr.trim()
        );
        return;
    }
    out.expect_code(125);
    assert_one_escaped_line(&out);
    assert!(out.stderr.contains("read-only"), "{}", out.describe());
    assert!(!out.stderr.contains("needs root"), "{}", out.describe());
}
