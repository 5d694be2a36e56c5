//! The container recipe, tested: the image of `docs/lean-runner.md` ("A container image") is
//! `FROM scratch` plus the static runner-only binary, so its file tree is one file. The test
//! builds that binary (`cargo build --release --no-default-features`, its own target
//! directory), lays out the tree, and runs it from that empty root with `chroot`: without
//! `/proc` (a bare root: coldtrace cannot start its spawner, says so once, and clones the
//! children itself) and with `/proc` mounted in a new mount and PID namespace (as a container
//! runtime mounts it: the spawner clones them). The command it measures is the binary itself,
//! the only program in the image. The runner-only build is smaller than the full one, refuses
//! what it leaves out, and says which build it is.
//!
//! Needs root (chroot, mount): skipped with a printed reason otherwise. CI runs as root.
#![forbid(unsafe_code)]

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

mod common;
use common::TempDir;

/// The runner-only release binary, built once.
fn runner_only() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let target_dir = root.join("target").join("runner-only");
    let status = Command::new(env!("CARGO"))
        .current_dir(root)
        .args([
            "build",
            "--release",
            "--locked",
            "--quiet",
            "--bin",
            "coldtrace",
        ])
        .args(["--no-default-features", "--target-dir"])
        .arg(&target_dir)
        .env_remove("RUSTFLAGS")
        .status()
        .expect("run cargo");
    assert!(status.success(), "cargo build --no-default-features failed");
    let arch = std::env::consts::ARCH;
    let binary = target_dir.join(format!("{arch}-unknown-linux-musl/release/coldtrace"));
    assert!(binary.is_file(), "no {}", binary.display());
    binary
}

/// The image's file tree: `/coldtrace`, and an empty `/proc` where a runtime mounts one.
fn image_tree(dir: &TempDir) -> PathBuf {
    let root = dir.join("rootfs");
    std::fs::create_dir_all(root.join("proc")).expect("mkdir rootfs/proc");
    std::fs::copy(runner_only(), root.join("coldtrace")).expect("copy the binary");
    root
}

/// `coldtrace run -n 2 -q --json -- /coldtrace --version` inside `root`, through `how`. The
/// streams are inherited: the bare root has no `/dev/null` (a runtime would provide `/dev`).
fn run_inside(how: &[&str], root: &Path) -> Output {
    let inner =
        "/coldtrace run -n 2 -q --json --output inherit --stdin inherit -- /coldtrace --version";
    let mut cmd = Command::new(how[0]);
    cmd.args(&how[1..]);
    if how[0] == "chroot" {
        cmd.arg(root).args(inner.split(' '));
    } else {
        let root = root.display();
        cmd.arg(format!(
            "mount -t proc proc {root}/proc && exec chroot {root} {inner}"
        ));
    }
    cmd.output().expect("run chroot")
}

fn batch(out: &Output) -> Value {
    let text = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(&text).unwrap_or_else(|e| {
        panic!(
            "no batch document ({e}): stdout {text:?}, stderr {:?}",
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

#[test]
fn the_image_tree_runs_from_an_empty_root_with_and_without_proc() {
    let dir = TempDir::new("container");
    let root = image_tree(&dir);
    let entries: Vec<_> = std::fs::read_dir(&root)
        .expect("read the tree")
        .map(|e| e.expect("an entry").file_name())
        .collect();
    assert_eq!(
        entries.len(),
        2,
        "the image holds the binary (and /proc): {entries:?}"
    );
    let size = std::fs::metadata(root.join("coldtrace"))
        .expect("stat")
        .len();
    eprintln!("container: the image's one file is {size} bytes");

    let bare = run_inside(&["chroot"], &root);
    let stderr = String::from_utf8_lossy(&bare.stderr);
    if bare.status.code() == Some(125) && stderr.contains("chroot:") {
        eprintln!("NOTE: chroot is not permitted here ({stderr}); skipped");
        return;
    }
    assert_eq!(bare.status.code(), Some(0), "bare root: {stderr}");
    let doc = batch(&bare);
    assert_eq!(doc["counts"]["counted"], 2, "{doc}");
    let why = doc["spawner"]["unavailable"].as_str().unwrap_or_default();
    assert!(why.contains("ENOENT"), "no /proc, no spawner: {doc}");
    assert_eq!(doc["spawner"]["runs"], 0, "{doc}");

    let unshare = ["unshare", "--mount", "--pid", "--fork", "sh", "-c"];
    let with_proc = run_inside(&unshare, &root);
    let stderr = String::from_utf8_lossy(&with_proc.stderr);
    if with_proc.status.code() != Some(0) && stderr.starts_with("unshare:") {
        eprintln!("NOTE: unshare is not permitted here ({stderr}); checked the bare root only");
        return;
    }
    assert_eq!(with_proc.status.code(), Some(0), "with /proc: {stderr}");
    let doc = batch(&with_proc);
    assert_eq!(doc["counts"]["counted"], 2, "{doc}");
    assert_eq!(doc["spawner"]["runs"], 2, "the spawner cloned both: {doc}");
    assert!(doc["spawner"]["unavailable"].is_null(), "{doc}");
}

#[test]
fn the_runner_only_build_is_smaller_and_refuses_what_it_leaves_out() {
    let binary = runner_only();
    let size = std::fs::metadata(&binary).expect("stat").len();
    let full = std::fs::metadata(common::shipped_binary())
        .expect("stat")
        .len();
    eprintln!("container: runner-only build {size} bytes, full build {full} bytes");
    assert!(size < full, "runner-only {size} bytes, full {full} bytes");
    let run = |args: &[&str]| Command::new(&binary).args(args).output().expect("run it");
    let version = run(&["--version"]);
    assert!(String::from_utf8_lossy(&version.stdout).contains("runner-only build"));
    for args in [
        &["report", "b"][..],
        &["man"][..],
        &["run", "-n", "2", "--export-json", "x.json", "--", "true"][..],
    ] {
        let out = run(args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(125), "{args:?}: {stderr}");
        assert!(stderr.contains("runner-only build"), "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
    }
}
