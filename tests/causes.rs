//! What made the first run cold, on the built binary, in each way a first run is made cold:
//! coldtrace's own `--evict` (and without the privilege the page-in ledger needs), its own
//! `--drop-caches`, a `drop_caches` by hand before the batch (with the state directory of the
//! batch before it, and with a new one), a `--prepare` command that drops caches, reclaim by a
//! memory hog, `--evict` of a file the command barely reads while the rest is cold, a first
//! run that writes `__pycache__`, an output every run writes again (no cache), and nothing at
//! all. Each checks `first_cold_cause` in `batch.json` and the sentence a person reads.
//!
//! Dropping caches, a memory cgroup and the page-in ledger need root: off root each test says
//! why it is skipped (CI runs as root). They run one at a time: each drops or evicts pages the
//! others read.
#![forbid(unsafe_code)]

mod common;

use common::{ct, data_file, prose, read_batch, Output, TempDir};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::Duration;

const DEADLINE: Duration = Duration::from_secs(120);

static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The lock that keeps these tests apart, or `None` (with why) off root.
fn alone_as_root() -> Option<std::sync::MutexGuard<'static, ()>> {
    if !rustix::process::geteuid().is_root() {
        eprintln!("skipped: drop_caches, memory cgroups and the page-in ledger need root");
        return None;
    }
    Some(ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner()))
}

/// A temporary directory on a disk (a cold read from tmpfs reads nothing).
fn disk_dir(tag: &str) -> TempDir {
    let tmp = TempDir::new(tag);
    assert_eq!(
        coldtrace::measure::cache::is_tmpfs(tmp.path()),
        Some(false),
        "{} is on tmpfs: cold reads need a disk-backed temporary directory",
        tmp.path().display()
    );
    tmp
}

/// `sync; echo 3 > /proc/sys/vm/drop_caches`, as a person would type it.
fn drop_caches_by_hand() {
    let status = std::process::Command::new("sh")
        .args(["-c", "sync; echo 3 > /proc/sys/vm/drop_caches"])
        .status()
        .unwrap();
    assert!(status.success());
}

/// Drops `path`'s clean pages from the page cache, as `vmtouch -e` does.
fn evict_outside(path: &str) {
    let f = std::fs::File::open(path).unwrap();
    rustix::fs::fadvise(&f, 0, None, rustix::fs::Advice::DontNeed).unwrap();
}

/// `coldtrace ARGS` in `dir`, ARGS split at white space (the paths here have none), with the
/// state directory `state`, expecting success.
fn batch(dir: &Path, state: &Path, args: &str) -> Output {
    batch_args(dir, state, &args.split_whitespace().collect::<Vec<_>>())
}

/// `coldtrace ARGS` in `dir`, with the state directory `state`, expecting success.
fn batch_args(dir: &Path, state: &Path, args: &[&str]) -> Output {
    let out = ct(dir, args)
        .env("COLDTRACE_STATE_DIR", state.to_str().unwrap())
        .run_within(DEADLINE);
    out.expect_code(0);
    out
}

/// `batch.json`'s `first_cold_cause` of the batch in `dir`.
fn cause_of(dir: &Path) -> Value {
    read_batch(dir)["first_cold_cause"].clone()
}

/// The cause's sentence as a person reads it: the note under the table that starts with one
/// of `starts`, its folded lines joined.
fn sentence(out: &Output, start: &str) -> String {
    let text = prose(&out.shown());
    let at = text
        .find(start)
        .unwrap_or_else(|| panic!("no sentence starting {start:?}{}", out.describe()));
    text[at..].to_string()
}

#[test]
fn own_evict_is_named_and_credited_with_the_evicted_files() {
    let Some(_alone) = alone_as_root() else {
        return;
    };
    let tmp = disk_dir("cause-evict");
    let f = data_file(&tmp, "data.bin", 16);
    let out = batch(
        tmp.path(),
        &tmp.join("state"),
        &format!("run -n 3 --cold-first-only --evict {f} -o b -- cat {f}"),
    );
    let cause = cause_of(&tmp.join("b"));
    assert_eq!(cause["cause"], "evict", "{cause}");
    assert_eq!(cause["verified"], true, "{cause}");
    assert!(
        cause["from_evicted_bytes"].as_u64().unwrap() >= 16 << 20,
        "{cause}"
    );
    assert_eq!(cause["second"], Value::Null, "{cause}");
    let said = sentence(&out, "the first run was made cold by coldtrace's --evict");
    assert!(
        said.contains("(verified: 0.0 % of the evicted files stayed cached); it read 16"),
        "{said}"
    );
}

#[test]
fn evict_without_the_ledger_says_the_split_is_unknown() {
    let Some(_alone) = alone_as_root() else {
        return;
    };
    let tmp = disk_dir("cause-evict-nobody");
    let f = data_file(&tmp, "data.bin", 4);
    // nobody writes the batch and the state there, and owns the file (residency needs it).
    for p in [tmp.path(), Path::new(&f)] {
        std::os::unix::fs::chown(p, Some(65534), Some(65534)).unwrap();
    }
    let args = format!("run -n 3 --cold-first-only --evict {f} -o b -- cat {f}");
    let out = ct(tmp.path(), args.split_whitespace())
        .env("COLDTRACE_STATE_DIR", tmp.join("state").to_str().unwrap())
        .run_as_nobody()
        .run_within(DEADLINE);
    out.expect_code(0);
    let cause = cause_of(&tmp.join("b"));
    assert_eq!(cause["cause"], "evict", "{cause}");
    assert_eq!(cause["from_evicted_bytes"], Value::Null, "{cause}");
    // Without root there is neither the tracepoint nor a cgroup of the run to trace it in.
    let why = cause["split_unknown_reason"].as_str().unwrap_or_default();
    assert!(!why.is_empty(), "{cause}");
    let said = sentence(&out, "the first run was made cold by coldtrace's --evict");
    assert!(
        said.contains(&format!(
            "; which of what it read came from the evicted files is not known ({})",
            prose(why)
        )),
        "{said}"
    );
}

#[test]
fn own_drop_caches_is_named_and_verified() {
    let Some(_alone) = alone_as_root() else {
        return;
    };
    let tmp = disk_dir("cause-drop");
    let f = data_file(&tmp, "data.bin", 16);
    let out = batch(
        tmp.path(),
        &tmp.join("state"),
        &format!("run -n 3 --cold-first-only --drop-caches --watch {f} -o b -- cat {f}"),
    );
    let cause = cause_of(&tmp.join("b"));
    assert_eq!(cause["cause"], "drop_caches", "{cause}");
    assert_eq!(cause["verified"], true, "{cause}");
    assert_eq!(cause["dropped_since"], Value::Null, "{cause}");
    sentence(
        &out,
        "the first run was made cold by coldtrace's --drop-caches (verified",
    );
}

#[test]
fn a_drop_caches_by_hand_since_the_last_batch_is_named() {
    let Some(_alone) = alone_as_root() else {
        return;
    };
    let tmp = disk_dir("cause-hand");
    let f = data_file(&tmp, "data.bin", 16);
    let state = tmp.join("state");
    batch(tmp.path(), &state, "run -n 2 -o a -- true");
    drop_caches_by_hand();
    let out = batch(tmp.path(), &state, &format!("run -n 3 -o b -- cat {f}"));
    let cause = cause_of(&tmp.join("b"));
    assert_eq!(cause["cause"], "drop_caches_outside", "{cause}");
    assert_eq!(cause["dropped_since"], "last_batch", "{cause}");
    assert!(
        cause["since_last_batch"]["drop_pagecache"].as_u64() >= Some(1),
        "{cause}"
    );
    assert_eq!(cause["first_batch_since_boot"], false, "{cause}");
    let said = sentence(&out, "the page cache, dentries and inodes were dropped");
    assert!(
        said.starts_with(
            "the page cache, dentries and inodes were dropped outside coldtrace: drop_caches \
             was written since the last coldtrace batch of this boot ended,"
        ),
        "{said}"
    );
}

#[test]
fn a_new_state_directory_after_a_drop_by_hand_is_no_first_batch_since_boot_cause() {
    let Some(_alone) = alone_as_root() else {
        return;
    };
    let tmp = disk_dir("cause-fresh");
    let f = data_file(&tmp, "data.bin", 16);
    drop_caches_by_hand();
    // A container, a CI job, a new user: a state directory that knows of no batch.
    let out = batch(
        tmp.path(),
        &tmp.join("new-state"),
        &format!("run -n 3 -o b -- cat {f}"),
    );
    let cause = cause_of(&tmp.join("b"));
    assert_eq!(cause["first_batch_since_boot"], true, "{cause}");
    assert_eq!(cause["cause"], "drop_caches_outside", "{cause}");
    assert_eq!(cause["dropped_since"], "boot", "{cause}");
    assert_eq!(cause["since_last_batch"], Value::Null, "{cause}");
    assert!(
        cause["since_boot"]["drop_pagecache"].as_u64() >= Some(1),
        "{cause}"
    );
    let said = sentence(&out, "the page cache, dentries and inodes were dropped");
    assert!(
        said.contains("since boot")
            && said.contains(
                "ago, when is not known: no coldtrace batch of this boot is recorded in the state \
             directory"
            ),
        "{said}"
    );
    assert!(!said.contains("first coldtrace batch"), "{said}");
}

#[test]
fn a_prepare_command_that_drops_caches_is_named_for_it() {
    let Some(_alone) = alone_as_root() else {
        return;
    };
    let tmp = disk_dir("cause-prepare");
    let f = data_file(&tmp, "data.bin", 16);
    // Before the first run only: the later runs are warm.
    let prepare = "[ -e m ] || { : > m; sync; echo 3 > /proc/sys/vm/drop_caches; }";
    let args = [
        "run",
        "-n",
        "3",
        "-o",
        "b",
        "--prepare",
        prepare,
        "--",
        "cat",
        &f,
    ];
    let out = batch_args(tmp.path(), &tmp.join("state"), &args);
    let cause = cause_of(&tmp.join("b"));
    assert_eq!(cause["cause"], "prepare", "{cause}");
    assert_eq!(cause["verified"], true, "{cause}");
    assert!(
        cause["before_first_run"]["drop_pagecache"].as_u64() >= Some(1),
        "{cause}"
    );
    // The file the hook made before the first run is not one the run created.
    assert_eq!(cause["wrote_caches"]["files"], 0, "{cause}");
    let said = sentence(&out, "the first run followed a --prepare command");
    assert!(
        said.starts_with(
            "the first run followed a --prepare command that wrote drop_caches: the page \
             cache, dentries and inodes (drop_pagecache +"
        ),
        "{said}"
    );
}

/// A memory cgroup to hold a hog: cgroup v1's memory hierarchy, or a cgroup v2 whose parent
/// has the memory controller (enabled here if need be); its directory, made.
fn memory_cgroup(name: &str) -> PathBuf {
    let v1 = Path::new("/sys/fs/cgroup/memory");
    if v1.join("memory.limit_in_bytes").exists() {
        let dir = v1.join(name);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("memory.limit_in_bytes"), "50331648").unwrap();
        return dir;
    }
    let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap();
    let v2 = mounts
        .lines()
        .find(|l| l.split(' ').nth(2) == Some("cgroup2"))
        .and_then(|l| l.split(' ').nth(1))
        .map(PathBuf::from)
        .expect("neither cgroup v1's memory hierarchy nor a cgroup2 file system is mounted");
    let controllers = std::fs::read_to_string(v2.join("cgroup.controllers")).unwrap();
    assert!(
        controllers.split_whitespace().any(|c| c == "memory"),
        "cgroup2 at {} has no memory controller ({controllers:?}) and cgroup v1 has no memory \
         hierarchy: this machine cannot hold a memory hog in a group",
        v2.display()
    );
    let _ = std::fs::write(v2.join("cgroup.subtree_control"), "+memory");
    let dir = v2.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("memory.max"), "50331648").unwrap();
    dir
}

#[test]
fn reclaim_by_a_memory_hog_is_named_by_its_refaults() {
    let Some(_alone) = alone_as_root() else {
        return;
    };
    let tmp = disk_dir("cause-reclaim");
    let f = data_file(&tmp, "data.bin", 32);
    let state = tmp.join("state");
    batch(tmp.path(), &state, "run -n 2 -o a -- true");
    // The file read in a group limited to 48 MiB, then 40 MiB of anonymous memory there: the
    // kernel reclaims the group's page cache (no swap here; with swap it may take some
    // of each), leaving a shadow entry for each page.
    evict_outside(&f);
    let group = memory_cgroup(&format!("coldtrace-test-hog-{}", std::process::id()));
    let hog = format!(
        "echo $$ > {}/cgroup.procs && cat '{f}' > /dev/null && \
         dd if=/dev/zero of=/dev/null bs=40M count=1 status=none",
        group.display()
    );
    let status = std::process::Command::new("sh")
        .args(["-c", &hog])
        .status()
        .unwrap();
    assert!(status.success(), "{hog}");
    let out = batch(
        tmp.path(),
        &state,
        &format!("run -n 3 --watch {f} -o b -- cat {f}"),
    );
    let _ = std::fs::remove_dir(&group);
    let first = &common::read_records(&tmp.join("b"))[0];
    let cached = first["cache"]["before"]["resident_ratio"].as_f64().unwrap();
    assert!(
        cached < 0.5,
        "the hog left {cached} of the file cached{}",
        out.describe()
    );
    let cause = cause_of(&tmp.join("b"));
    assert_eq!(cause["cause"], "reclaim", "{cause}");
    let reclaimed = cause["since_last_batch"]["pgsteal_file"]
        .as_u64()
        .unwrap_or(0);
    assert!(
        reclaimed >= 16 << 8,
        "16 MiB of file pages or more: {cause}"
    );
    let said = sentence(&out, "the machine had reclaimed the first run's pages:");
    assert!(
        said.contains("file pages refaulted system-wide during it (workingset_refault_file); ")
            && said.contains(
                "file pages were reclaimed since the last coldtrace batch (pgsteal_file)"
            ),
        "{said}"
    );
}

#[test]
fn evict_of_a_file_barely_read_while_the_rest_is_cold_names_the_rest() {
    let Some(_alone) = alone_as_root() else {
        return;
    };
    let tmp = disk_dir("cause-elsewhere");
    let small = tmp.join("small.txt");
    std::fs::write(&small, b"a few bytes\n").unwrap();
    let small = small.to_str().unwrap().to_string();
    let big = data_file(&tmp, "big.bin", 16);
    evict_outside(&big);
    let out = batch(
        tmp.path(),
        &tmp.join("state"),
        &format!("run -n 3 --cold-first-only --evict {small} -o b -- cat {small} {big}"),
    );
    let cause = cause_of(&tmp.join("b"));
    assert_eq!(cause["cause"], "evict", "{cause}");
    assert_eq!(cause["second"], "elsewhere", "{cause}");
    assert!(
        cause["from_evicted_bytes"].as_u64().unwrap() <= 4096,
        "{cause}"
    );
    assert!(
        cause["from_elsewhere_bytes"].as_u64().unwrap() >= 16 << 20,
        "{cause}"
    );
    let said = sentence(&out, "the first run was made cold by coldtrace's --evict");
    assert!(
        said.contains("came from the evicted files and 16")
            && said.contains(
                "from files coldtrace did not evict: something else had made those cold too"
            ),
        "{said}"
    );
}

#[test]
fn evict_of_a_small_file_after_a_drop_by_hand_names_the_drop_for_the_rest() {
    let Some(_alone) = alone_as_root() else {
        return;
    };
    let tmp = disk_dir("cause-elsewhere-dropped");
    let small = tmp.join("small.txt");
    std::fs::write(&small, b"a few bytes\n").unwrap();
    let small = small.to_str().unwrap().to_string();
    let big = data_file(&tmp, "big.bin", 16);
    let state = tmp.join("state");
    batch(tmp.path(), &state, "run -n 2 -o a -- true");
    drop_caches_by_hand();
    let out = batch(
        tmp.path(),
        &state,
        &format!("run -n 3 --cold-first-only --evict {small} -o b -- cat {small} {big}"),
    );
    let cause = cause_of(&tmp.join("b"));
    assert_eq!(cause["cause"], "evict", "{cause}");
    assert_eq!(cause["second"], "elsewhere", "{cause}");
    assert_eq!(cause["second_cause"], "drop_caches_outside", "{cause}");
    assert_eq!(cause["dropped_since"], "last_batch", "{cause}");
    let said = sentence(&out, "the first run was made cold by coldtrace's --evict");
    assert!(
        said.contains(
            "something else had made those cold too — the page cache, dentries and inodes were \
             dropped outside coldtrace: drop_caches was written since the last coldtrace batch \
             of this boot ended,"
        ),
        "{said}"
    );
}

#[test]
fn nothing_at_all_names_nothing() {
    let Some(_alone) = alone_as_root() else {
        return;
    };
    let tmp = disk_dir("cause-none");
    let f = tmp.join("small.txt");
    std::fs::write(&f, b"cached\n").unwrap();
    let f = f.to_str().unwrap().to_string();
    // Warm: read just before. Another test on the machine may drop caches in between: then the
    // first run read from storage, and the premise is awaited again.
    for attempt in 0.. {
        std::fs::read(&f).unwrap();
        let b = format!("b{attempt}");
        let out = batch(
            tmp.path(),
            &tmp.join("state"),
            &format!("run -n 3 --explain -o {b} -- cat {f}"),
        );
        let cause = cause_of(&tmp.join(&b));
        if cause["read_bytes"].as_f64() != Some(0.0) && attempt < 5 {
            continue;
        }
        assert_eq!(cause["cause"], "none", "{cause}");
        // Looked for, and nothing created: the batch's own directory is not the command's.
        let wrote = &cause["wrote_caches"];
        assert_eq!(
            (&wrote["files"], &wrote["rewritten_files"]),
            (&Value::from(0), &Value::from(0)),
            "{cause}"
        );
        let text = prose(&out.shown());
        for words in [
            "made cold",
            "dropped outside",
            "reclaimed",
            "what made the first run",
            "wrote caches",
        ] {
            assert!(!text.contains(words), "{words}{}", out.describe());
        }
        break;
    }
}

/// `coldtrace run -n 5 --explain -o b -- ARGV` in `dir`, Python free to write its bytecode
/// caches (this machine's environment may forbid them).
fn batch_writing(dir: &Path, argv: &[&str]) -> Output {
    let mut args = vec!["run", "-n", "5", "--explain", "-o", "b", "--"];
    args.extend(argv);
    let mut c = ct(dir, &args).env("COLDTRACE_STATE_DIR", dir.join("state").to_str().unwrap());
    c.cmd
        .env_remove("PYTHONDONTWRITEBYTECODE")
        .env_remove("PYTHONPYCACHEPREFIX");
    let out = c.run_within(DEADLINE);
    out.expect_code(0);
    out
}

#[test]
fn a_first_run_that_writes_pycache_is_named_for_the_caches_it_wrote() {
    let Some(_alone) = alone_as_root() else {
        return;
    };
    // Warm: the interpreter read just before. Another test on the machine may drop caches in
    // between: then the first run read from storage too, and the premise is awaited again.
    for attempt in 0.. {
        let tmp = disk_dir(&format!("cause-pycache-{attempt}"));
        std::fs::write(tmp.join("mymod.py"), b"import json\nX = 1\n").unwrap();
        let warm = std::process::Command::new("python3")
            .args(["-B", "-c", "import json"])
            .status()
            .unwrap();
        assert!(warm.success());
        let out = batch_writing(tmp.path(), &["python3", "-c", "import mymod"]);
        let cause = cause_of(&tmp.join("b"));
        let wrote = &cause["wrote_caches"];
        assert_eq!(wrote["files"], 1, "{cause}");
        assert_eq!(wrote["rewritten_files"], 0, "{cause}");
        let pyc = wrote["paths"][0].as_str().unwrap_or_default();
        assert!(
            pyc.starts_with("__pycache__/mymod.") && pyc.ends_with(".pyc"),
            "{cause}"
        );
        let size = std::fs::metadata(tmp.join(pyc)).unwrap().len();
        assert_eq!(wrote["bytes"], size, "{cause}");
        let verdict = &read_batch(&tmp.join("b"))["verdict"];
        assert_eq!(verdict["first_wrote_caches"], 1, "{verdict}");
        let created = format!(
            "wrote caches the later runs found: it created {pyc} (1 file, {size} B) under {}, \
             and no later run wrote it again: work of its own the later runs did not repeat, \
             not a cold page cache",
            tmp.path().display()
        );
        if cause["read_bytes"].as_f64() != Some(0.0) && attempt < 5 {
            // Said beside what made it cold.
            let text = prose(&out.shown());
            assert!(text.contains(&format!("it also {created}")), "{text}");
            continue;
        }
        assert_eq!(cause["cause"], "wrote_caches", "{cause}");
        let said = sentence(&out, "the first run wrote caches");
        assert!(
            said.starts_with(&format!(
                "the first run {created}; it read nothing from storage"
            )),
            "{said}"
        );
        break;
    }
}

#[test]
fn an_output_every_run_writes_again_is_no_cache() {
    let Some(_alone) = alone_as_root() else {
        return;
    };
    let tmp = disk_dir("cause-output");
    for attempt in 0.. {
        let _ = std::fs::remove_dir_all(tmp.join("b"));
        let _ = std::fs::remove_file(tmp.join("out.txt"));
        // Each run writes out.txt anew: the first creates it, every later one rewrites it.
        let out = batch_writing(tmp.path(), &["sh", "-c", "echo $$ > out.txt"]);
        let cause = cause_of(&tmp.join("b"));
        if cause["read_bytes"].as_f64() != Some(0.0) && attempt < 5 {
            continue;
        }
        let wrote = &cause["wrote_caches"];
        assert_eq!(
            (&wrote["files"], &wrote["rewritten_files"]),
            (&Value::from(0), &Value::from(1)),
            "{cause}"
        );
        assert_eq!(cause["cause"], "none", "{cause}");
        let text = prose(&out.shown());
        assert!(!text.contains("wrote caches"), "{}", out.describe());
        break;
    }
}
