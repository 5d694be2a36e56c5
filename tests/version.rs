//! `coldtrace --version` on the binary: the version, the commit it was built from (checked
//! against git), the target triple (checked against the directory cargo built it in) and the
//! build; and the build script's rule for the commit, on repositories made here.
#![forbid(unsafe_code)]

mod common;

// The build script itself, for its `commit` rule (its `main` is cargo's business).
#[allow(dead_code)]
#[path = "../src/build.rs"]
mod build_script;

use common::{ct, TempDir};
use std::path::Path;
use std::process::Command;

/// `git -C dir ARGS`'s first line, which must succeed.
fn git(dir: &Path, args: &[&str]) -> String {
    build_script::git(dir, args).unwrap_or_else(|| {
        panic!(
            "git {args:?} failed in {} (is git installed? `apt-get install git`)",
            dir.display()
        )
    })
}

/// The triple cargo built the binary for: the name of the directory above its profile's, as
/// cargo lays out a `--target` build, or the host's when it built for the host.
fn built_for() -> String {
    let exe = Path::new(env!("CARGO_BIN_EXE_coldtrace"));
    let above_profile = exe
        .parent()
        .and_then(Path::parent)
        .and_then(Path::file_name);
    match above_profile.map(|n| n.to_string_lossy().into_owned()) {
        Some(name) if name.contains("-linux-") => name,
        _ => {
            let out = Command::new("rustc")
                .arg("-vV")
                .output()
                .expect("run rustc -vV");
            let text = String::from_utf8(out.stdout).unwrap();
            let host = text.lines().find_map(|l| l.strip_prefix("host: "));
            host.expect("rustc -vV names the host").to_string()
        }
    }
}

#[test]
fn version_line_names_version_commit_target_and_build() {
    let dir = TempDir::new("version");
    let manifest_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let commit = if manifest_dir.join(".git").exists() {
        git(manifest_dir, &["rev-parse", "--short", "HEAD"])
    } else {
        "unknown".to_string()
    };
    let build = if cfg!(feature = "full") {
        "full build"
    } else {
        "runner-only build"
    };
    let expected = format!(
        "coldtrace {} (commit {commit}, {}, {build})\n",
        env!("CARGO_PKG_VERSION"),
        built_for()
    );
    for args in [
        &["--version"][..],
        &["-V"],
        &["run", "-V"],
        &["time", "--version"],
    ] {
        let out = ct(dir.path(), args).run();
        out.expect_code(0);
        assert_eq!(out.stdout, expected, "{}", out.describe());
        assert!(out.stderr.is_empty(), "{}", out.describe());
    }
}

#[test]
fn the_commit_is_read_only_from_a_checkout_of_its_own() {
    let repo = TempDir::new("version-repo");
    git(repo.path(), &["init", "-q"]);
    assert_eq!(build_script::commit(repo.path()), None, "no commit yet");
    git(
        repo.path(),
        &[
            "-c",
            "user.name=coldtrace",
            "-c",
            "user.email=coldtrace@localhost",
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            "first",
        ],
    );
    let head = git(repo.path(), &["rev-parse", "--short", "HEAD"]);
    assert_eq!(build_script::commit(repo.path()), Some(head));
    // A source copy inside another repository (vendored, unpacked in a checkout) has no .git
    // of its own: its commit is unknown, not the surrounding repository's.
    let copy = repo.join("vendor/coldtrace");
    std::fs::create_dir_all(&copy).unwrap();
    assert_eq!(build_script::commit(&copy), None);
    let unpacked = TempDir::new("version-tarball");
    assert_eq!(build_script::commit(unpacked.path()), None);
}
