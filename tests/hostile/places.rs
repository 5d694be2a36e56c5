//! Writes and reads where they do not belong: the state directory (the boot marker's
//! `last-boot`) is reached without following a symlink and must be the user's own or root's —
//! coldtrace run as root with a user's `HOME` (`sudo -E`) writes nothing where that user
//! points it, and makes nothing in that user's directories; `report` leaves the files a
//! kernel file system makes unread (a symlinked `trace_pipe` or `/proc/kmsg` would be consumed
//! by reading it); and no export is written into such a file system.

use super::common::{ct, read_batch, Output, TempDir};
use super::{assert_no_raw_controls, assert_one_escaped_line, listing, script, DEADLINE};
use std::path::{Path, PathBuf};
use std::time::Duration;

fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

/// `coldtrace run -q -n 1 -o b -- true` in `dir` with the boot marker on (the test harness
/// turns it off), `HOME` and `XDG_STATE_HOME` as given (`None`: unset).
fn batch_with_state(dir: &TempDir, home: &Path, xdg: Option<&Path>) -> Output {
    let _ = std::fs::remove_dir_all(dir.join("b"));
    let mut c = ct(
        dir.path(),
        ["run", "-q", "-n", "1", "-o", "b", "--", "true"],
    );
    c.cmd.env_remove("COLDTRACE_STATE_DIR").env("HOME", home);
    match xdg {
        Some(xdg) => c.cmd.env("XDG_STATE_HOME", xdg),
        None => c.cmd.env_remove("XDG_STATE_HOME"),
    };
    let out = c.run_within(DEADLINE);
    assert_no_raw_controls(&out);
    out.expect_code(0);
    out
}

/// The boot marker's note in `dir/b`.
fn marker_note(dir: &TempDir) -> String {
    let doc = read_batch(&dir.join("b"));
    let marker = &doc["context"]["boot_marker"];
    assert!(marker["first_batch_since_boot"].is_null(), "{marker}");
    marker["note"].as_str().unwrap_or_default().to_string()
}

/// Gives `path` and everything below it to user nobody.
fn give_to_nobody(path: &Path) {
    let status = std::process::Command::new("chown")
        .args(["-R", "65534:65534"])
        .arg(path)
        .status()
        .expect("run chown");
    assert!(status.success());
}

/// Every name below `dir`, recursively, sorted.
fn everything_below(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(e.path());
            }
            found.push(e.path());
        }
    }
    found.sort();
    found
}

#[test]
fn as_root_with_a_users_home_no_symlink_leads_the_state_file_elsewhere() {
    if !is_root() {
        eprintln!("skipped the symlinked state directory: it is root's risk (CI runs as root)");
        return;
    }
    let dir = TempDir::new("plsymlink");
    let home = dir.join("home");
    let elsewhere = dir.join("elsewhere");
    std::fs::create_dir_all(home.join(".local/state")).unwrap();
    std::fs::create_dir(&elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, home.join(".local/state/coldtrace")).unwrap();
    give_to_nobody(&home);
    batch_with_state(&dir, &home, None);
    assert_eq!(everything_below(&elsewhere), Vec::<PathBuf>::new());
    assert!(
        marker_note(&dir).contains("symlink"),
        "{}",
        marker_note(&dir)
    );
}

#[test]
fn as_root_a_state_directory_another_user_owns_is_neither_read_nor_written() {
    if !is_root() {
        eprintln!("skipped another user's state directory: it is root's risk (CI runs as root)");
        return;
    }
    let dir = TempDir::new("plforeign");
    let home = dir.join("home");
    let state = home.join(".local/state/coldtrace");
    std::fs::create_dir_all(&state).unwrap();
    std::fs::write(state.join("last-boot"), "not this boot\n").unwrap();
    give_to_nobody(&home);
    batch_with_state(&dir, &home, None);
    let file = std::fs::read_to_string(state.join("last-boot")).unwrap();
    assert_eq!(
        file, "not this boot\n",
        "root rewrote another user's state file"
    );
    assert_eq!(listing(&state), ["last-boot"]);
    let note = marker_note(&dir);
    assert!(note.contains("belongs to uid 65534"), "{note}");
}

#[test]
fn as_root_no_state_directory_is_made_inside_another_users_home() {
    if !is_root() {
        eprintln!("skipped another user's home: it is root's risk (CI runs as root)");
        return;
    }
    let dir = TempDir::new("plhome");
    let home = dir.join("home");
    std::fs::create_dir(&home).unwrap();
    give_to_nobody(&home);
    batch_with_state(&dir, &home, None);
    assert_eq!(everything_below(&home), Vec::<PathBuf>::new());
    let note = marker_note(&dir);
    assert!(note.contains("another user's"), "{note}");
}

#[test]
fn a_symlink_on_the_way_to_the_state_directory_is_not_followed() {
    let dir = TempDir::new("pllink");
    let real = dir.join("real");
    std::fs::create_dir(&real).unwrap();
    std::os::unix::fs::symlink(&real, dir.join("link")).unwrap();
    batch_with_state(&dir, &dir.join("nohome"), Some(&dir.join("link")));
    assert_eq!(everything_below(&real), Vec::<PathBuf>::new());
    assert!(
        marker_note(&dir).contains("symlink"),
        "{}",
        marker_note(&dir)
    );
}

/// Kernel-made files that `report` must leave unread, each with its file system's name; the
/// ones a reader would consume (`trace_pipe`, `/proc/kmsg`) where they can be opened here.
fn kernel_files() -> Vec<(&'static str, &'static str)> {
    let mut files = vec![
        ("/proc/self/status", "procfs"),
        ("/sys/kernel/uevent_seqnum", "sysfs"),
    ];
    for (path, fs) in [
        ("/sys/kernel/tracing/trace_pipe", "tracefs"),
        ("/proc/kmsg", "procfs"),
    ] {
        if std::fs::File::open(path).is_ok() {
            files.push((path, fs));
        }
    }
    files
}

#[test]
fn report_leaves_the_files_a_kernel_file_system_makes_unread() {
    let dir = TempDir::new("plreport");
    let out = ct(
        dir.path(),
        ["run", "-q", "-n", "2", "-o", "good", "--", "true"],
    )
    .run();
    out.expect_code(0);
    let files = kernel_files();
    for (k, (path, _)) in files.iter().enumerate() {
        // One batch whose records are the kernel's file, one whose document is.
        let records = dir.join(format!("records{k}"));
        std::fs::create_dir(&records).unwrap();
        std::fs::copy(dir.join("good/batch.json"), records.join("batch.json")).unwrap();
        std::os::unix::fs::symlink(path, records.join("runs.jsonl")).unwrap();
        let document = dir.join(format!("document{k}"));
        std::fs::create_dir(&document).unwrap();
        std::fs::copy(dir.join("good/runs.jsonl"), document.join("runs.jsonl")).unwrap();
        std::os::unix::fs::symlink(path, document.join("batch.json")).unwrap();
    }
    let out = ct(dir.path(), ["report", "."]).run_within(Duration::from_secs(20));
    assert_no_raw_controls(&out);
    for (k, (_, fs)) in files.iter().enumerate() {
        for batch in [
            format!("records{k}/runs.jsonl"),
            format!("document{k}/batch.json"),
        ] {
            let said = format!("{batch}: it is a file {fs} makes as it is read, not a record");
            assert!(
                out.stderr.contains(&said),
                "not said: {said}{}",
                out.describe()
            );
        }
    }
    assert!(out.stdout.contains("good"), "{}", out.describe());
}

#[test]
fn an_export_into_a_kernel_file_system_is_refused_before_any_run() {
    let dir = TempDir::new("plexport");
    let marker = script(&dir, "pe", "touch MARKER");
    let mut targets = vec!["/sys/kernel/uevent_seqnum", "/proc/self/comm"];
    if Path::new("/sys/kernel/tracing/trace_marker").exists() {
        targets.push("/sys/kernel/tracing/trace_marker");
    }
    for target in targets {
        let m = marker.to_str().unwrap();
        let out = ct(
            dir.path(),
            ["run", "-n", "1", "--export-csv", target, "--", m],
        )
        .run();
        out.expect_code(125);
        assert_one_escaped_line(&out);
        assert!(
            out.stderr.contains("a file system the kernel makes"),
            "{}",
            out.describe()
        );
        assert!(
            !dir.join("MARKER").exists(),
            "the command ran{}",
            out.describe()
        );
    }
}
