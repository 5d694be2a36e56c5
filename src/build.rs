//! Build script: hands `coldtrace --version` what only the build knows, and builds the spawner
//! (std only).
//!
//! - `COLDTRACE_COMMIT`: `git rev-parse --short HEAD` of the checkout being built, or `unknown`
//!   when the package directory has no `.git` of its own (a source tarball, `cargo install` from
//!   a copy, a copy vendored inside another repository) or git cannot answer.
//! - `COLDTRACE_TARGET`: the target triple the binary is built for (cargo's `TARGET`).
//!
//! - `COLDTRACE_SPAWNER`: the path of the spawner program (`syscalls/src/spawner/main.rs`)
//!   built into `OUT_DIR` by one `rustc` call for `<arch>-unknown-linux-musl` (`no_std`, static,
//!   non-PIE, about 18 KB), which `src/measure/spawner.rs` embeds, linked by the linker cargo
//!   uses for the target (`RUSTC_LINKER`, e.g. rust-lld for `.ci/release`'s cross build). Where it cannot be built
//!   (no musl standard library for the arch, no linker for it), the file is empty, cargo prints
//!   a warning, and coldtrace starts every child in-process; with `COLDTRACE_REQUIRE_SPAWNER=1`
//!   (`.ci/release` sets it) the build fails instead.
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
    let out_dir = PathBuf::from(std::env::var_os("OUT_DIR").unwrap_or_default());
    let spawner = out_dir.join("coldtrace-spawner");
    println!("cargo:rerun-if-env-changed=COLDTRACE_REQUIRE_SPAWNER");
    if let Err(why) = build_spawner(&manifest_dir, &spawner) {
        if std::env::var_os("COLDTRACE_REQUIRE_SPAWNER").is_some_and(|v| v == "1") {
            eprintln!("error: COLDTRACE_REQUIRE_SPAWNER=1 and the spawner cannot be built: {why}");
            std::process::exit(1);
        }
        println!("cargo:warning=no spawner ({why}): coldtrace will start children in-process");
        let _ = std::fs::write(&spawner, b"");
    }
    println!("cargo:rustc-env=COLDTRACE_SPAWNER={}", spawner.display());
}

/// The files the spawner is compiled from (its own and the library's it includes).
const SPAWNER_SOURCES: [&str; 10] = [
    "syscalls/src/spawner/main.rs",
    "syscalls/src/spawner/image.rs",
    "syscalls/src/spawner/protocol.rs",
    "syscalls/src/abi/mod.rs",
    "syscalls/src/abi/perf.rs",
    "syscalls/src/child_plan.rs",
    "syscalls/src/clone_args.rs",
    "syscalls/src/raw/spawner.rs",
    "syscalls/src/raw/child.rs",
    "syscalls/src/raw/clone.rs",
];

/// `rustc` on the spawner's root for the musl target of this architecture, into `out`.
fn build_spawner(dir: &Path, out: &Path) -> Result<(), String> {
    for source in SPAWNER_SOURCES {
        println!("cargo:rerun-if-changed={}", dir.join(source).display());
    }
    let arch = std::env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default();
    if !matches!(arch.as_str(), "x86_64" | "aarch64") {
        return Err(format!("no spawner for {arch}"));
    }
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let mut command = Command::new(rustc);
    // The linker cargo was told to use for this target (a cross build names rust-lld).
    if let Some(linker) = std::env::var_os("RUSTC_LINKER") {
        command
            .arg("-C")
            .arg(format!("linker={}", linker.to_string_lossy()));
    }
    let output = command
        .args(["--edition", "2021", "--crate-type", "bin", "--crate-name"])
        .arg("coldtrace_spawner")
        .arg("--target")
        .arg(format!("{arch}-unknown-linux-musl"))
        .args(["-C", "opt-level=z", "-C", "panic=abort", "-C", "lto=fat"])
        .args([
            "-C",
            "codegen-units=1",
            "-C",
            "strip=symbols",
            "-C",
            "debuginfo=0",
        ])
        .args(["-C", "relocation-model=static", "-D", "warnings", "-l", "c"])
        .arg("-o")
        .arg(out)
        .arg(dir.join("syscalls/src/spawner/main.rs"))
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .output()
        .map_err(|e| format!("cannot run rustc: {e}"))?;
    if output.status.success() {
        return Ok(());
    }
    let stderr = String::from_utf8_lossy(&output.stderr);
    let first = stderr
        .lines()
        .find(|l| l.starts_with("error"))
        .unwrap_or("rustc failed");
    Err(first.to_string())
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
