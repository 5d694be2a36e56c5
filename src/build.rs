//! Build script: hands `coldtrace --version` what only the build knows (std only, nothing
//! generated on disk).
//!
//! - `COLDTRACE_COMMIT`: `git rev-parse --short HEAD` of the checkout being built, or `unknown`
//!   when the package directory has no `.git` of its own (a source tarball, `cargo install` from
//!   a copy, a copy vendored inside another repository) or git cannot answer.
//! - `COLDTRACE_TARGET`: the target triple the binary is built for (cargo's `TARGET`).
//!
//! The commit is read again when HEAD moves: cargo watches `.git/HEAD` and the branch ref it
//! points at (in a worktree, both live in the main repository's git directory, which git names).
#![forbid(unsafe_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=src/build.rs");
    let manifest_dir = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    let commit = commit(&manifest_dir);
    if commit.is_some() {
        for watched in head_files(&manifest_dir) {
            println!("cargo:rerun-if-changed={}", watched.display());
        }
    }
    println!(
        "cargo:rustc-env=COLDTRACE_COMMIT={}",
        commit.as_deref().unwrap_or("unknown")
    );
    let target = std::env::var("TARGET").unwrap_or_else(|_| "unknown".to_string());
    println!("cargo:rustc-env=COLDTRACE_TARGET={target}");
}

/// The short commit of the checkout at `dir`: only when `dir` itself holds `.git` (a directory,
/// or the file a worktree has), so that a copy inside another repository does not take that
/// repository's commit for its own.
pub fn commit(dir: &Path) -> Option<String> {
    if !dir.join(".git").exists() {
        return None;
    }
    let hash = git(dir, &["rev-parse", "--short", "HEAD"])?;
    let is_hash = !hash.is_empty() && hash.bytes().all(|b| b.is_ascii_hexdigit());
    is_hash.then_some(hash)
}

/// The files whose change means HEAD moved: HEAD itself, the branch it names, and packed-refs
/// (where the branch lives once packed). Only those that exist: cargo reruns the script on every
/// build for a watched path that does not.
fn head_files(dir: &Path) -> Vec<PathBuf> {
    let mut names = vec!["HEAD".to_string(), "packed-refs".to_string()];
    if let Some(branch) = git(dir, &["symbolic-ref", "-q", "HEAD"]).filter(|b| !b.is_empty()) {
        names.push(branch);
    }
    names
        .iter()
        .filter_map(|name| git(dir, &["rev-parse", "--git-path", name]))
        .map(|path| dir.join(path))
        .filter(|path| path.is_file())
        .collect()
}

/// `git -C dir ARGS`'s first line of output (empty if none), when git runs and succeeds.
pub fn git(dir: &Path, args: &[&str]) -> Option<String> {
    // GIT_DIR and GIT_WORK_TREE (set inside git hooks) would point git elsewhere than `dir`.
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8(out.stdout).ok()?;
    Some(text.lines().next().unwrap_or("").trim().to_string())
}
