//! `coldtrace cleanup` removes what coldtrace left, and only that, and says what it did: a
//! killed batch's marked group (its processes killed), never an unmarked look-alike, another
//! user's group or a running batch's; the tracefs mount it recorded making, never one it did
//! not make; nothing at all under --dry-run; and, as a user, what needs root is said.
//!
//! Groups are crafted in a cgroup of the test's own ([`TestGroup`], root only) and cleanup is
//! pointed at it (`--cgroup`), so that it never touches what other tests or batches made.

use super::common::{ct, Output, TempDir, BIN};
use super::groups::{crafted_named, dead_batch_mark, Sleeper};
use super::processes::{assert_says, TestGroup};
use super::{assert_no_raw_controls, may_mount, DEADLINE};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A test's cgroup with a killed batch's group in it (marked, its batch dead), holding a
/// sleeper, and a directory for the test; `None`, said, where no cgroup can be made.
fn killed_batch(tag: &str) -> Option<(TestGroup, TempDir, Sleeper, PathBuf)> {
    let group = TestGroup::new(tag)?;
    let sleeper = Sleeper::new();
    let mark = dead_batch_mark();
    let made = crafted_named(&group, "coldtrace-999999-1", Some(&mark), &sleeper);
    Some((group, TempDir::new(tag), sleeper, made))
}

/// `coldtrace cleanup ARGS --cgroup GROUP` in `dir`, with the state directory `state` (none:
/// off).
fn cleanup(dir: &TempDir, group: &TestGroup, state: Option<&Path>, args: &[&str]) -> Output {
    let mut all = vec!["cleanup"];
    all.extend_from_slice(args);
    let cgroup = group.path.to_str().unwrap();
    all.extend_from_slice(&["--cgroup", cgroup]);
    let state = state.map_or(String::new(), |s| s.display().to_string());
    let out = ct(dir.path(), &all)
        .env("COLDTRACE_STATE_DIR", &state)
        .run_within(DEADLINE);
    assert_no_raw_controls(&out);
    out
}

/// Waits up to 3 s for `sleeper` to end.
fn await_end(sleeper: &mut Sleeper) {
    let until = Instant::now() + Duration::from_secs(3);
    while sleeper.runs() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn a_killed_batchs_marked_group_is_killed_removed_and_said() {
    let Some((group, dir, mut sleeper, made)) = killed_batch("clkilled") else {
        return;
    };
    let out = cleanup(&dir, &group, None, &[]);
    out.expect_code(0);
    await_end(&mut sleeper);
    assert!(!sleeper.runs(), "its process was left{}", out.describe());
    assert!(!made.exists(), "the group was left{}", out.describe());
    assert_says(&out, &format!("removed: group {}", made.display()));
    assert_says(&out, &format!("killed {} (sleep)", sleeper.pid()));
    assert_says(&out, "removed 1, left ");
}

#[test]
fn an_unmarked_look_alike_and_another_users_group_are_left_and_said() {
    let Some(group) = TestGroup::new("clforeign") else {
        return;
    };
    let dir = TempDir::new("clforeign");
    let (mut a, mut b) = (Sleeper::new(), Sleeper::new());
    let unmarked = crafted_named(&group, "coldtrace-999999-1", None, &a);
    let foreign = crafted_named(&group, "coldtrace-999999-2", Some(&dead_batch_mark()), &b);
    std::os::unix::fs::chown(&foreign, Some(65534), Some(65534)).expect("chown to nobody");
    let out = cleanup(&dir, &group, None, &[]);
    out.expect_code(0);
    assert!(
        a.runs() && b.runs(),
        "a process was killed{}",
        out.describe()
    );
    assert!(unmarked.is_dir() && foreign.is_dir(), "{}", out.describe());
    assert_says(
        &out,
        &format!(
            "left: group {}: not marked as coldtrace's",
            unmarked.display()
        ),
    );
    assert_says(
        &out,
        &format!(
            "left: group {}: another user's (UID 65534)",
            foreign.display()
        ),
    );
}

#[test]
fn a_running_batchs_group_is_untouched() {
    let Some(group) = TestGroup::new("cllive") else {
        return;
    };
    let dir = TempDir::new("cllive");
    let procs = group.path.join("cgroup.procs");
    let script = format!("echo $$ > {} && exec \"$@\"", procs.display());
    let mut batch = Command::new("/bin/sh")
        .args(["-c", &script, "sh", BIN, "run", "-q", "-n", "1", "-o", "b"])
        .args(["--", "sleep", "3"])
        .current_dir(dir.path())
        .env("COLDTRACE_STATE_DIR", "")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start a batch");
    // The batch's group, once its run is in it.
    let until = Instant::now() + Duration::from_secs(10);
    let live = loop {
        let found = std::fs::read_dir(&group.path).unwrap().flatten().find(|e| {
            let leaf = e.path().join("run-000/cgroup.procs");
            std::fs::read_to_string(leaf).is_ok_and(|p| !p.trim().is_empty())
        });
        if let Some(entry) = found {
            break entry.path();
        }
        assert!(Instant::now() < until, "the batch made no group");
        std::thread::sleep(Duration::from_millis(20));
    };
    let out = cleanup(&dir, &group, None, &[]);
    out.expect_code(0);
    assert_says(
        &out,
        &format!("left: group {}: its batch is still running", live.display()),
    );
    assert!(live.join("run-000").is_dir(), "{}", out.describe());
    let status = batch.wait().unwrap();
    assert_eq!(
        status.code(),
        Some(0),
        "the batch was disturbed{}",
        out.describe()
    );
}

#[test]
fn a_dry_run_removes_nothing_and_says_what_it_would() {
    let Some((group, dir, mut sleeper, made)) = killed_batch("cldry") else {
        return;
    };
    let state = dir.join("state");
    std::fs::create_dir(&state).unwrap();
    std::fs::write(state.join("last-boot"), "{\"boot_id\":\"x\"}\n").unwrap();
    for flag in ["--dry-run", "-n"] {
        let out = cleanup(&dir, &group, Some(&state), &[flag]);
        out.expect_code(0);
        assert!(sleeper.runs(), "{flag} killed{}", out.describe());
        assert!(made.join("run-000").is_dir(), "{}", out.describe());
        assert!(state.join("last-boot").is_file(), "{}", out.describe());
        assert_says(&out, &format!("would remove: group {}", made.display()));
        assert_says(&out, &format!("would kill {} (sleep)", sleeper.pid()));
        assert_says(
            &out,
            &format!("would remove: state {}: last-boot", state.display()),
        );
        assert_says(&out, "would remove 2");
    }
    // The same without --dry-run removes both.
    let out = cleanup(&dir, &group, Some(&state), &[]);
    out.expect_code(0);
    await_end(&mut sleeper);
    assert!(!made.exists() && !state.exists(), "{}", out.describe());
    assert_says(&out, "removed 2, left ");
}

#[test]
fn a_state_directory_holding_more_is_emptied_of_coldtraces_files_and_they_are_counted() {
    let Some(group) = TestGroup::new("clstate") else {
        return;
    };
    let dir = TempDir::new("clstate");
    let state = dir.join("state");
    std::fs::create_dir(&state).unwrap();
    std::fs::write(state.join("last-boot"), "{\"boot_id\":\"x\"}\n").unwrap();
    std::fs::write(state.join("notes.txt"), "the user's own\n").unwrap();
    let out = cleanup(&dir, &group, Some(&state), &[]);
    out.expect_code(0);
    assert!(!state.join("last-boot").exists(), "{}", out.describe());
    assert!(state.join("notes.txt").is_file(), "{}", out.describe());
    assert_says(
        &out,
        &format!(
            "removed: state {}: last-boot; the directory stays: it holds notes.txt",
            state.display()
        ),
    );
    assert_says(&out, "removed 1, left ");
}

/// `unshare -m sh -c SCRIPT` in `dir` with the state directory `state`: a private mount
/// namespace where `$CT` is coldtrace.
fn in_private_mounts(dir: &TempDir, state: &Path, script: &str) -> Output {
    let child = Command::new("unshare")
        .args(["-m", "--propagation", "private", "/bin/sh", "-c", script])
        .current_dir(dir.path())
        .env("CT", BIN)
        .env("COLDTRACE_STATE_DIR", state)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn unshare");
    super::common::finish(
        child,
        format!("unshare -m sh -c '{script}'"),
        Instant::now(),
        DEADLINE,
    )
}

/// Unmounts every tracefs mount at /sys/kernel/tracing, then has a batch mount it again.
const BATCH_MOUNTS: &str = "while umount /sys/kernel/tracing 2>/dev/null; do :; done; \
                            rm -rf b; $CT run -q -n 1 -o b -- true >/dev/null || exit 9";
/// How many tracefs mounts are at /sys/kernel/tracing.
const COUNT: &str =
    "echo mounts=$(grep -c ' /sys/kernel/tracing .* - tracefs ' /proc/self/mountinfo)";

#[test]
fn the_tracefs_mount_coldtrace_made_is_unmounted_and_one_it_did_not_make_is_left() {
    if !may_mount("the tracefs mount cleanup") {
        return;
    }
    let dir = TempDir::new("cltracefs");
    let state = dir.join("state");
    let script = format!("{BATCH_MOUNTS}; {COUNT}; $CT cleanup; echo rc=$?; {COUNT}");
    let out = in_private_mounts(&dir, &state, &script);
    assert_says(&out, "mounts=1");
    assert_says(
        &out,
        "removed: tracefs /sys/kernel/tracing: unmounted: coldtrace mounted it",
    );
    assert_says(&out, "rc=0");
    assert!(out.stdout.ends_with("mounts=0\n"), "{}", out.describe());
    assert!(!state.exists(), "the state stayed{}", out.describe());
    // Mounted again by hand after coldtrace's was removed: not coldtrace's, though the record
    // of its own is still there.
    let script = format!(
        "{BATCH_MOUNTS}; umount /sys/kernel/tracing; mount -t tracefs nodev /sys/kernel/tracing; \
         $CT cleanup; echo rc=$?; {COUNT}"
    );
    let out = in_private_mounts(&dir, &state, &script);
    assert_says(
        &out,
        "left: tracefs /sys/kernel/tracing: not the mount coldtrace made",
    );
    assert_says(&out, "rc=0");
    assert!(out.stdout.ends_with("mounts=1\n"), "{}", out.describe());
}

#[test]
fn a_user_is_told_what_needs_root() {
    let Some((group, dir, mut sleeper, made)) = killed_batch("clnobody") else {
        return;
    };
    // A batch as root mounts tracefs and records it in a state directory given to nobody.
    let state = dir.join("state");
    let script = format!(
        "{BATCH_MOUNTS}; chown -R 65534:65534 {state}; setpriv --reuid=65534 --regid=65534 \
         --clear-groups $CT cleanup --cgroup {cgroup}; echo rc=$?; {COUNT}",
        state = state.display(),
        cgroup = group.path.display()
    );
    std::fs::set_permissions(
        dir.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let out = in_private_mounts(&dir, &state, &script);
    assert!(
        sleeper.runs(),
        "a user's cleanup killed root's{}",
        out.describe()
    );
    assert!(made.is_dir(), "{}", out.describe());
    assert_says(
        &out,
        &format!(
            "left: group {}: root's: `sudo coldtrace cleanup`",
            made.display()
        ),
    );
    assert_says(
        &out,
        "not removed: tracefs /sys/kernel/tracing: coldtrace mounted it; unmounting needs root",
    );
    assert_says(&out, "rc=1");
    assert!(out.stdout.ends_with("mounts=1\n"), "{}", out.describe());
    let errors: Vec<&str> = out.stderr.lines().filter(|l| l.contains("error")).collect();
    assert_eq!(errors.len(), 1, "{}", out.describe());
    assert!(
        errors[0].contains("sudo coldtrace cleanup"),
        "{}",
        out.describe()
    );
    // Its record stays for root's cleanup.
    assert!(state.join("tracefs-mount").is_file(), "{}", out.describe());
}

#[test]
fn an_armed_boot_plan_is_said_and_never_disarmed() {
    if !may_mount("the armed boot plan") {
        return;
    }
    let dir = TempDir::new("clboot");
    std::fs::create_dir(dir.join("units")).unwrap();
    std::fs::create_dir(dir.join("no-groups")).unwrap();
    // A tmpfs over /var/lib in the test's mount namespace: the plan is armed where boot arm
    // arms by default, and nowhere else.
    let script = format!(
        "mount -t tmpfs tmpfs /var/lib; $CT boot arm --unit-dir {units} -o {out} -- true \
         >/dev/null || exit 9; $CT cleanup --cgroup {none}; echo rc=$?; $CT boot status \
         --unit-dir {units}",
        units = dir.join("units").display(),
        out = dir.join("out").display(),
        none = dir.join("no-groups").display(),
    );
    let out = in_private_mounts(&dir, &dir.join("state"), &script);
    assert_says(
        &out,
        "left: boot plan /var/lib/coldtrace/boot: armed for the next boots: cleanup never \
         disarms it (`coldtrace boot disarm` does)",
    );
    assert_says(&out, "rc=0");
    assert_says(&out, "armed on ");
    assert!(
        dir.join("units/coldtrace-boot.service").is_file(),
        "{}",
        out.describe()
    );
    // Armed with --state-dir elsewhere: found through the installed unit's ExecStart.
    let plan = dir.join("plan");
    let script = format!(
        "mount -t tmpfs tmpfs /var/lib; mount -t tmpfs tmpfs /etc/systemd/system; $CT boot arm \
         --state-dir {plan} --unit-dir /etc/systemd/system -o {out} -- true >/dev/null || exit \
         9; $CT cleanup --cgroup {none}; echo rc=$?",
        plan = plan.display(),
        out = dir.join("out").display(),
        none = dir.join("no-groups").display(),
    );
    let out = in_private_mounts(&dir, &dir.join("state"), &script);
    assert_says(
        &out,
        &format!(
            "left: boot plan {p}: armed for the next boots: cleanup never disarms it (`coldtrace \
             boot disarm --state-dir {p}` does)",
            p = plan.display()
        ),
    );
    assert_says(&out, "rc=0");
    assert!(plan.join("state.json").is_file(), "{}", out.describe());
}
