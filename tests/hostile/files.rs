//! Files: coldtrace writes only its batch directory and the exports it was given, and an export
//! never replaces what it does not own — a device, a FIFO, a symlink, another user's file, the
//! batch's own records — nor lands where it was not asked.

use super::common::{ct, read_batch, Output, TempDir};
use super::{
    a_batch, assert_no_survivor, assert_one_escaped_line, assert_records_whole, mkfifo, script,
    unprivileged, DEADLINE,
};
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::path::Path;

/// Every path below `dir` (relative, sorted), symlinks not followed.
fn tree(dir: &Path) -> Vec<String> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(at) = stack.pop() {
        for entry in std::fs::read_dir(&at).unwrap().map(Result::unwrap) {
            let path = entry.path();
            found.push(path.strip_prefix(dir).unwrap().display().to_string());
            if entry.file_type().unwrap().is_dir() {
                stack.push(path);
            }
        }
    }
    found.sort();
    found
}

/// What appeared below `dir` since `before`, leaving out the paths under `allowed`.
fn written_outside(dir: &Path, before: &[String], allowed: &[&str]) -> Vec<String> {
    tree(dir)
        .into_iter()
        .filter(|p| !before.contains(p))
        .filter(|p| {
            !allowed
                .iter()
                .any(|a| p == a || p.starts_with(&format!("{a}/")))
        })
        .collect()
}

/// A character device to export to: as root a node of its own in `dir` (`mknod`, the same
/// major and minor as `/dev/NAME`), so that a regression could never replace the machine's
/// `/dev/null` or `/dev/full`; otherwise `/dev/NAME` itself (which only root could replace).
fn char_device(dir: &TempDir, name: &str) -> String {
    let real = format!("/dev/{name}");
    if !is_root() {
        return real;
    }
    let rdev = std::fs::metadata(&real).unwrap().rdev();
    let node = dir.join(name);
    rustix::fs::mknodat(
        rustix::fs::CWD,
        &node,
        rustix::fs::FileType::CharacterDevice,
        rustix::fs::Mode::from_raw_mode(0o666),
        rdev,
    )
    .expect("mknod");
    node.display().to_string()
}

fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

/// `coldtrace LINE` (its words split at spaces) in `dir`, refused before anything runs: exit
/// 125, one escaped line that says `says`, nothing new below `dir`.
pub(crate) fn refused(dir: &TempDir, line: &str, says: &str) -> Output {
    let before = tree(dir.path());
    let out = ct(dir.path(), line.split(' ')).run_within(DEADLINE);
    out.expect_code(125);
    assert_one_escaped_line(&out);
    assert!(out.stderr.contains(says), "{}", out.describe());
    let new = written_outside(dir.path(), &before, &[]);
    assert_eq!(new, Vec::<String>::new(), "{}", out.describe());
    out
}

/// coldtrace's own stdout under the names that reach it through `/proc` (the literal
/// `/dev/stdout` is recognised the same way, see `export_file.rs`; it is not written here,
/// where a regression as root would replace the machine's `/dev/stdout` link).
#[test]
fn an_export_to_its_own_stdout_is_printed_and_nothing_is_replaced() {
    let dir = TempDir::new("xstdout");
    let before = tree(dir.path());
    for path in ["/dev/fd/1", "/proc/self/fd/1"] {
        let line = format!("run -q -n 2 --export-coldtrace-json {path} -- true");
        let out = ct(dir.path(), line.split(' ')).run_within(DEADLINE);
        out.expect_code(0);
        assert_eq!(out.json()["schema"], "coldtrace.export/1", "{path}");
        assert!(out.stderr.is_empty(), "{}", out.describe());
    }
    assert_eq!(
        written_outside(dir.path(), &before, &[]),
        Vec::<String>::new()
    );
}

#[test]
fn a_character_device_and_a_fifo_are_written_through_never_replaced() {
    let dir = TempDir::new("xdevs");
    let null = char_device(&dir, "null");
    mkfifo(&dir.join("fifo"));
    let reader = std::thread::spawn({
        let fifo = dir.join("fifo");
        move || std::fs::read_to_string(fifo).unwrap()
    });
    let line = format!("run -q -n 2 -o b --export-csv {null} --export-markdown fifo -- true");
    let out = ct(dir.path(), line.split(' ')).run_within(DEADLINE);
    out.expect_code(0);
    assert!(out.stderr.is_empty(), "{}", out.describe());
    assert!(reader
        .join()
        .unwrap()
        .contains("| Command | Mean Wall Time"));
    let kind = |p: &Path| std::fs::metadata(p).unwrap().file_type();
    assert!(kind(Path::new(&null)).is_char_device());
    assert!(kind(&dir.join("fifo")).is_fifo());
    assert_records_whole(&dir.join("b"), true);
}

#[test]
fn a_fifo_without_a_reader_is_one_line_and_the_records_stay() {
    let dir = TempDir::new("xfifo");
    mkfifo(&dir.join("fifo"));
    let before = tree(dir.path());
    let line = "run -n 2 -o b --export-csv fifo -- true";
    let out = ct(dir.path(), line.split(' ')).run_within(DEADLINE);
    out.expect_code(125);
    let last = out.stderr_lines().last().copied().unwrap_or_default();
    assert!(last.contains("no reader"), "{}", out.describe());
    let fifo = std::fs::metadata(dir.join("fifo")).unwrap();
    assert!(fifo.file_type().is_fifo());
    assert_eq!(assert_records_whole(&dir.join("b"), true).len(), 2);
    let new = written_outside(dir.path(), &before, &["b"]);
    assert_eq!(new, Vec::<String>::new());
}

#[test]
fn a_stale_temporary_file_of_someone_else_is_left_alone() {
    let dir = TempDir::new("xstale");
    // The fixed temporary name an export once used, made by someone else.
    std::fs::write(dir.join(".x.csv.tmp"), b"not coldtrace's").unwrap();
    let line = "run -q -n 2 --export-csv x.csv -- true";
    ct(dir.path(), line.split(' '))
        .run_within(DEADLINE)
        .expect_code(0);
    assert_eq!(
        std::fs::read(dir.join(".x.csv.tmp")).unwrap(),
        b"not coldtrace's"
    );
    assert_eq!(
        tree(dir.path()),
        [".x.csv.tmp", "x.csv"],
        "none of its own left"
    );
    // A full device is one line: it is written through, so nothing temporary is made at all.
    let full = char_device(&dir, "full");
    let line = format!("run -q -n 2 --export-csv {full} -- true");
    let out = ct(dir.path(), line.split(' ')).run_within(DEADLINE);
    out.expect_code(125);
    assert_one_escaped_line(&out);
    assert!(out.stderr.contains("ENOSPC"), "{}", out.describe());
    let names = tree(dir.path());
    assert!(
        !names
            .iter()
            .any(|n| n.ends_with(".tmp") && n != ".x.csv.tmp"),
        "{names:?}"
    );
}

#[test]
fn a_replaced_export_keeps_its_mode_and_its_owner() {
    let dir = TempDir::new("xkeep");
    let file = dir.join("private.md");
    std::fs::write(&file, b"old").unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    let owner = if is_root() {
        rustix::fs::chown(&file, Some(rustix::fs::Uid::from_raw(65534)), None).unwrap();
        65534
    } else {
        eprintln!("NOTE: not root: the owner kept is our own");
        rustix::process::geteuid().as_raw()
    };
    let out = ct(
        dir.path(),
        "run -q -n 2 --export-markdown private.md -- true".split(' '),
    )
    .run_within(DEADLINE);
    out.expect_code(0);
    let meta = std::fs::metadata(&file).unwrap();
    assert_eq!(meta.mode() & 0o7777, 0o600);
    assert_eq!(meta.uid(), owner);
    assert!(std::fs::read_to_string(&file)
        .unwrap()
        .contains("| Command | Mean Wall Time"));
    assert_eq!(tree(dir.path()), ["private.md"]);
}

#[test]
fn a_symlink_is_followed_to_its_file_and_one_to_nothing_is_refused() {
    let dir = TempDir::new("xlink");
    std::fs::create_dir(dir.join("real")).unwrap();
    std::fs::write(dir.join("real/r.json"), b"old").unwrap();
    std::os::unix::fs::symlink("real/r.json", dir.join("latest.json")).unwrap();
    std::os::unix::fs::symlink("nowhere/x.json", dir.join("dangling.json")).unwrap();
    let marker = script(&dir, "xl", "touch MARKER");
    let m = marker.to_str().unwrap();
    let line = format!("run -q -n 2 --export-coldtrace-json latest.json -- {m}");
    ct(dir.path(), line.split(' '))
        .run_within(DEADLINE)
        .expect_code(0);
    let link = std::fs::symlink_metadata(dir.join("latest.json")).unwrap();
    assert!(link.file_type().is_symlink());
    let text = std::fs::read_to_string(dir.join("real/r.json")).unwrap();
    assert!(text.contains("coldtrace.export/1"));
    std::fs::remove_file(dir.join("MARKER")).unwrap();
    let line = format!("run -n 2 --export-coldtrace-json dangling.json -- {m}");
    refused(&dir, &line, "symlink to nothing");
    assert!(!dir.join("nowhere").exists());
    assert_no_survivor(&marker);
}

#[test]
fn an_export_over_the_batch_s_own_files_is_refused_before_any_run() {
    let dir = TempDir::new("xself");
    std::fs::create_dir(dir.join("b")).unwrap();
    let marker = script(&dir, "xs", "touch MARKER");
    let m = marker.to_str().unwrap();
    for line in [
        format!("run -n 2 -o b --export-csv b/runs.jsonl -- {m}"),
        format!("run -n 2 -o b --export-json ./b/../b/batch.json -- {m}"),
        format!("run -n 2 -o new --export-markdown new/t.md -- {m}"),
        format!("compare -n 1 -o c --export-csv c/commands/00/runs.jsonl {m} {m}"),
    ] {
        refused(&dir, &line, "inside the batch directory");
        assert_no_survivor(&marker);
    }
}

#[test]
fn report_never_draws_over_a_batch_it_reads() {
    let dir = TempDir::new("xreport");
    a_batch(&dir, "b");
    let records = std::fs::read(dir.join("b/runs.jsonl")).unwrap();
    let document = std::fs::read(dir.join("b/batch.json")).unwrap();
    for line in [
        "report --svg b/runs.jsonl b",
        "report --html b/batch.json b",
        "report --svg b/runs/pic.svg .",
    ] {
        refused(&dir, line, "inside the batch directory");
        assert_eq!(std::fs::read(dir.join("b/runs.jsonl")).unwrap(), records);
        assert_eq!(std::fs::read(dir.join("b/batch.json")).unwrap(), document);
    }
    assert_eq!(tree(&dir.join("b")), ["batch.json", "runs.jsonl"]);
}

#[test]
fn two_exports_to_one_file_are_refused_whatever_the_spelling() {
    let dir = TempDir::new("xtwice");
    std::fs::create_dir(dir.join("sub")).unwrap();
    let marker = script(&dir, "xt", "touch MARKER");
    let m = marker.to_str().unwrap();
    for (a, b) in [
        ("x", "x"),
        ("x", "./x"),
        ("sub/../x", "x"),
        ("/dev/fd/1", "/proc/self/fd/1"),
    ] {
        let line = format!("run -n 2 --export-csv {a} --export-markdown {b} -- {m}");
        refused(&dir, &line, "both name");
    }
    a_batch(&dir, "b");
    refused(&dir, "report --svg p --html ./p b", "both name");
    assert_no_survivor(&marker);
}

#[test]
fn an_export_that_cannot_be_written_is_found_before_the_first_run() {
    let dir = TempDir::new("xrdonly");
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    std::fs::create_dir(dir.join("ro")).unwrap();
    std::fs::set_permissions(dir.join("ro"), std::fs::Permissions::from_mode(0o555)).unwrap();
    std::fs::write(dir.join("theirs.csv"), b"old").unwrap();
    std::fs::set_permissions(
        dir.join("theirs.csv"),
        std::fs::Permissions::from_mode(0o644),
    )
    .unwrap();
    let marker = script(&dir, "xr", "touch MARKER");
    let m = marker.to_str().unwrap();
    let before = tree(dir.path());
    for (flag, path, says) in [
        ("--export-csv", "ro/x.csv", "not writable"),
        ("--export-json", "theirs.csv", "another user"),
        ("--export-markdown", "/dev/sda-no-such/x", "does not exist"),
    ] {
        let Some(out) = unprivileged(&dir, &["run", "-n", "3", flag, path, "--", m]) else {
            return;
        };
        if !is_root() && says == "another user" {
            continue; // the file is our own
        }
        out.expect_code(125);
        assert_one_escaped_line(&out);
        assert!(out.stderr.contains(says), "{}", out.describe());
        let new = written_outside(dir.path(), &before, &[]);
        assert_eq!(new, Vec::<String>::new(), "{}", out.describe());
    }
    assert_eq!(std::fs::read(dir.join("theirs.csv")).unwrap(), b"old");
}

#[test]
fn an_out_directory_in_use_or_not_our_own_is_refused_with_a_free_name() {
    let dir = TempDir::new("xoutdir");
    std::fs::create_dir(dir.join("b")).unwrap();
    std::fs::write(dir.join("b/notes"), b"keep").unwrap();
    std::fs::create_dir(dir.join("b-2")).unwrap();
    std::fs::write(dir.join("b-2/x"), b"").unwrap();
    let marker = script(&dir, "xo", "touch MARKER");
    let m = marker.to_str().unwrap();
    let out = refused(&dir, &format!("run -n 2 -o b -- {m}"), "not empty");
    assert!(
        out.stderr.trim_end().ends_with("-o b-3"),
        "{}",
        out.describe()
    );
    assert_eq!(std::fs::read(dir.join("b/notes")).unwrap(), b"keep");
    if is_root() {
        let theirs = dir.join("theirs");
        std::fs::create_dir(&theirs).unwrap();
        let nobody = rustix::fs::Uid::from_raw(65534);
        rustix::fs::chown(&theirs, Some(nobody), None).unwrap();
        std::fs::set_permissions(&theirs, std::fs::Permissions::from_mode(0o777)).unwrap();
        let line = format!("run -n 2 -o theirs -- {m}");
        let out = refused(&dir, &line, "another user (uid 65534)");
        assert!(out.stderr.contains("-o theirs-2"), "{}", out.describe());
    } else {
        eprintln!("NOTE: not root: a directory of another user was not made");
    }
    assert!(!dir.join("MARKER").exists());
    assert_no_survivor(&marker);
}

#[test]
fn swapping_the_batch_directory_for_a_symlink_mid_batch_moves_nothing() {
    let dir = TempDir::new("xswap");
    std::fs::create_dir(dir.join("victim")).unwrap();
    // Run 0 writes output (runs/000 is made); run 1 swaps runs/ for a link to victim, run 2
    // the batch directory itself; every later run writes output again.
    let swap = script(
        &dir,
        "xw",
        "n=$(cat COUNT 2>/dev/null || echo 0); echo $((n+1)) > COUNT; echo out$n; \
         if [ $n = 1 ]; then mv b/runs b/runs.moved && ln -s ../victim b/runs; fi; \
         if [ $n = 2 ]; then mv b b.moved && ln -s victim b; fi",
    );
    let out = ct(
        dir.path(),
        [
            "run",
            "-q",
            "-n",
            "4",
            "-o",
            "b",
            "--keep-output",
            "--",
            swap.to_str().unwrap(),
        ],
    )
    .run_within(DEADLINE);
    out.expect_code(0);
    assert_eq!(
        tree(&dir.join("victim")),
        Vec::<String>::new(),
        "nothing went through a link"
    );
    let records = assert_records_whole(&dir.join("b.moved"), true);
    assert_eq!(records.len(), 4);
    let runs = tree(&dir.join("b.moved/runs.moved"));
    for n in ["000", "001", "002", "003"] {
        assert!(runs.contains(&format!("{n}/stdout")), "{runs:?}");
    }
    assert_eq!(read_batch(&dir.join("b.moved"))["counts"]["counted"], 4);
    assert_no_survivor(&swap);
}

#[test]
fn report_pictures_and_exports_are_written_by_the_same_rules() {
    let dir = TempDir::new("xpicture");
    a_batch(&dir, "b");
    let picture = dir.join("pic.svg");
    std::fs::write(&picture, b"old").unwrap();
    std::fs::set_permissions(&picture, std::fs::Permissions::from_mode(0o640)).unwrap();
    let null = char_device(&dir, "null");
    let line = format!("report --svg pic.svg --html {null} b");
    ct(dir.path(), line.split(' '))
        .run_within(DEADLINE)
        .expect_code(0);
    assert_eq!(std::fs::metadata(&picture).unwrap().mode() & 0o777, 0o640);
    assert!(std::fs::read_to_string(&picture)
        .unwrap()
        .starts_with("<svg"));
    assert!(std::fs::metadata(&null)
        .unwrap()
        .file_type()
        .is_char_device());
    let names = tree(dir.path());
    assert!(!names.iter().any(|n| n.ends_with(".tmp")), "{names:?}");
}
