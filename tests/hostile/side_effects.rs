//! What coldtrace does to the system around it is said, and what it cannot do is said right:
//! the tracefs it mounts stays mounted and the note says so; a sandbox that refuses the calls
//! coldtrace waits with is named as the cause (exit 125, one line), not blamed on the command
//! with advice (`-i`) that cannot help; the spawner is found by `pgrep coldtrace`.

use super::common::{compile, ct, finish, read_records, Output, TempDir, BIN};
use super::{assert_one_escaped_line, assert_records_whole, launch, may_mount, DEADLINE};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// `SCRIPT` run by `sh` in a private mount namespace where neither tracefs nor debugfs is
/// mounted (coldtrace is `$CT`); panics if they cannot be unmounted there.
fn without_tracefs(dir: &TempDir, script: &str) -> Output {
    let unmount = "umount -R /sys/kernel/debug 2>/dev/null; \
                   umount -R /sys/kernel/tracing 2>/dev/null; \
                   if grep -qE ' - (tracefs|debugfs) ' /proc/self/mountinfo; then \
                   echo 'tracefs or debugfs is still mounted' >&2; exit 90; fi";
    let child = Command::new("unshare")
        .args(["-m", "--propagation", "private", "/bin/sh", "-c"])
        .arg(format!("{unmount}; {script}"))
        .current_dir(dir.path())
        .env("CT", BIN)
        .env("COLDTRACE_STATE_DIR", "")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn unshare");
    let out = finish(
        child,
        format!("unshare -m sh -c '{script}'"),
        Instant::now(),
        DEADLINE,
    );
    assert_ne!(out.code(), Some(90), "{}", out.describe());
    out
}

/// How many of `stderr`'s lines are the note that coldtrace mounted tracefs, and that every
/// one says it stays mounted and how to remove it.
fn mount_notes(out: &Output) -> usize {
    let notes: Vec<&str> = out
        .stderr
        .lines()
        .filter(|l| l.starts_with("coldtrace: note: mounted tracefs at /sys/kernel/tracing"))
        .collect();
    for note in &notes {
        assert!(
            note.contains(
                "; it stays mounted (`coldtrace cleanup` or `umount /sys/kernel/tracing` \
                 removes it)"
            ),
            "{note}{}",
            out.describe()
        );
    }
    notes.len()
}

#[test]
fn the_tracefs_a_batch_mounts_is_said_to_stay_mounted_and_does() {
    if !may_mount("the tracefs mount") {
        return;
    }
    let dir = TempDir::new("tracefsnote");
    let out = without_tracefs(
        &dir,
        "\"$CT\" run -q -n 2 -o b -- true; echo \"rc=$?\"; \
         grep -c ' /sys/kernel/tracing .* - tracefs ' /proc/self/mountinfo",
    );
    assert_eq!(out.stdout, "rc=0\n1\n", "{}", out.describe());
    assert_eq!(mount_notes(&out), 1, "{}", out.describe());
    assert_records_whole(&dir.join("b"), true);
}

#[test]
fn the_next_batch_finds_the_mount_and_says_nothing_more() {
    if !may_mount("the tracefs mount") {
        return;
    }
    let dir = TempDir::new("tracefsonce");
    let out = without_tracefs(
        &dir,
        "\"$CT\" run -q -n 2 -- true && \"$CT\" compare -q -n 2 true echo && \
         \"$CT\" run -q -n 2 -- true",
    );
    out.expect_code(0);
    assert_eq!(mount_notes(&out), 1, "{}", out.describe());
}

#[test]
fn the_page_in_ledger_says_so_when_it_is_the_one_that_mounts_tracefs() {
    if !may_mount("the tracefs mount") {
        return;
    }
    let dir = TempDir::new("tracefsledger");
    // Without the tree tracer, the page-in ledger is the first to need tracefs.
    let out = without_tracefs(&dir, "COLDTRACE_TREE=off \"$CT\" run -q -n 2 -o b -- true");
    out.expect_code(0);
    assert_eq!(mount_notes(&out), 1, "{}", out.describe());
    assert!(
        out.stderr
            .contains("to read the page cache's tracepoint format;"),
        "{}",
        out.describe()
    );
}

/// `nowait ERRNO CALL PROGRAM ARGS…`: runs PROGRAM with `CALL` (`wait4` or `waitid`) failing
/// with ERRNO, as a container's seccomp profile could.
const NO_WAIT: &str = r#"
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>
int main(int argc, char **argv) {
    if (argc < 4) return 120;
    unsigned nr = strcmp(argv[2], "waitid") == 0 ? SYS_waitid : SYS_wait4;
    struct sock_filter filter[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, nr, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (atoi(argv[1]) & SECCOMP_RET_DATA)),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog program = {sizeof filter / sizeof filter[0], filter};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ||
        prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program))
        return 120;
    execv(argv[3], argv + 3);
    return 121;
}
"#;

/// coldtrace `ARGS` with `call` failing with `errno` (a number).
fn refused(dir: &TempDir, errno: &str, call: &str, args: &[&str]) -> Output {
    let launcher = dir.join("nowait");
    if !launcher.exists() {
        compile(dir.path(), "nowait", NO_WAIT, &[]);
    }
    let launcher = launcher.to_str().unwrap().to_string();
    let prefix = [
        "/usr/bin/env",
        "COLDTRACE_STATE_DIR=",
        &launcher,
        errno,
        call,
    ];
    launch(dir, &prefix, args).expect("start the launcher")
}

/// Exit 125, one escaped line that names the calls and what to do, and no `-i` advice.
fn assert_the_sandbox_is_named(out: &Output, errno_name: &str) {
    out.expect_code(125);
    assert_one_escaped_line(out);
    let line = out.stderr_lines()[0];
    for words in [
        "coldtrace: error: ",
        errno_name,
        "refuses wait4 or waitid (a seccomp filter",
        "allow them, or run coldtrace outside that sandbox",
    ] {
        assert!(line.contains(words), "{words:?} not said{}", out.describe());
    }
    assert!(!line.contains("-i"), "{}", out.describe());
}

#[test]
fn a_filter_that_fails_wait4_stops_the_batch_with_its_cause_not_use_i() {
    let dir = TempDir::new("nowait4");
    let out = refused(
        &dir,
        "1",
        "wait4",
        &["run", "-n", "3", "-o", "b", "--", "true"],
    );
    assert_the_sandbox_is_named(&out, "(EPERM)");
    let records = assert_records_whole(&dir.join("b"), true);
    assert_eq!(records.len(), 1, "{records:?}");
    assert_eq!(records[0]["counted"], false);
}

#[test]
fn ignoring_failures_does_not_run_on_where_no_run_can_be_reaped() {
    let dir = TempDir::new("nowait4i");
    let out = refused(
        &dir,
        "38",
        "wait4",
        &["run", "-i", "-n", "5", "-o", "b", "--", "true"],
    );
    assert_the_sandbox_is_named(&out, "(ENOSYS)");
    assert_eq!(read_records(&dir.join("b")).len(), 1);
}

#[test]
fn a_filter_that_fails_waitid_is_named_too() {
    let dir = TempDir::new("nowaitid");
    let out = refused(&dir, "1", "waitid", &["run", "-n", "3", "--", "true"]);
    assert_the_sandbox_is_named(&out, "(EPERM)");
}

#[test]
fn a_comparison_where_wait4_fails_stops_with_one_line() {
    let dir = TempDir::new("nowaitcmp");
    let out = refused(
        &dir,
        "13",
        "wait4",
        &["compare", "-n", "2", "-o", "c", "true", "echo"],
    );
    assert_the_sandbox_is_named(&out, "(EACCES)");
}

#[test]
fn time_where_wait4_fails_names_the_sandbox() {
    let dir = TempDir::new("nowaittime");
    let out = refused(&dir, "1", "wait4", &["time", "true"]);
    assert_the_sandbox_is_named(&out, "(EPERM)");
}

#[test]
fn the_spawner_is_found_by_pgrep_coldtrace() {
    let dir = TempDir::new("spawnername");
    let mut c = ct(dir.path(), ["run", "-q", "-n", "1", "--", "sleep", "3"]);
    let mut child = c.cmd.spawn().expect("spawn coldtrace");
    let me = child.id().to_string();
    let until = Instant::now() + Duration::from_secs(10);
    let found = loop {
        let out = Command::new("pgrep")
            .args(["-P", &me, "coldtrace"])
            .output()
            .expect("run pgrep");
        let pids = String::from_utf8_lossy(&out.stdout).into_owned();
        if !pids.trim().is_empty() || Instant::now() > until {
            break pids;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let pid = found.lines().next().unwrap_or_else(|| {
        let _ = child.kill();
        panic!("pgrep -P {me} coldtrace found no child of coldtrace")
    });
    let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    let out = finish(child, c.shown(), Instant::now(), DEADLINE);
    out.expect_code(0);
    assert_eq!(comm, "coldtrace-spawn\n");
    assert!(cmdline.starts_with(b"coldtrace-spawner\0"), "{cmdline:?}");
}
