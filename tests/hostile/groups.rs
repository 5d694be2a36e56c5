//! Whose group is it: a batch touches only the groups coldtrace made — marked with the
//! extended attribute `user.coldtrace.batch` that names their batch, and owned by the user —
//! and only once their batch has ended; what it could not kill it says, and does not wait for
//! again at every start; a lock that another process holds on a dead batch's group does not
//! keep it from being cleaned; and no batch directory is made in a file system the kernel
//! makes (a directory made in cgroupfs is a cgroup).
//!
//! Groups are made in a cgroup of the test's own ([`TestGroup`], root only), crafted as a
//! coldtrace killed mid-batch leaves them: `coldtrace-PID-START` with a leaf `run-000` that
//! holds a process. The batch they name is dead: no process has PID 999999 (above `pid_max`).

use super::common::{read_batch, TempDir};
use super::processes::{assert_says, TestGroup};
use super::{assert_no_raw_controls, assert_one_escaped_line, listing};
use rustix::process::{Pid, Signal};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

/// A process of the test's, `sleep 60`, killed (and reaped) when dropped.
pub(super) struct Sleeper(Child);

impl Sleeper {
    pub(super) fn new() -> Sleeper {
        Sleeper(
            Command::new("sleep")
                .arg("60")
                .spawn()
                .expect("spawn sleep"),
        )
    }

    pub(super) fn pid(&self) -> u32 {
        self.0.id()
    }

    /// Whether it still runs (not even a zombie: it is this test's child, reaped by `try_wait`).
    pub(super) fn runs(&mut self) -> bool {
        self.0.try_wait().expect("try_wait").is_none()
    }
}

impl Drop for Sleeper {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The mark of a batch that ended: PID 999999 in this PID namespace.
pub(super) fn dead_batch_mark() -> String {
    let pidns = std::fs::metadata("/proc/self/ns/pid").unwrap().ino();
    format!("pid=999999 start=1 pidns={pidns}")
}

/// A group as a coldtrace killed mid-batch leaves it, below `group`: `coldtrace-999999-1`,
/// marked with `mark` (none: unmarked), its leaf `run-000` holding `sleeper`.
fn crafted(group: &TestGroup, mark: Option<&str>, sleeper: &Sleeper) -> PathBuf {
    crafted_named(group, "coldtrace-999999-1", mark, sleeper)
}

/// [`crafted`], named `name`.
pub(super) fn crafted_named(
    group: &TestGroup,
    name: &str,
    mark: Option<&str>,
    sleeper: &Sleeper,
) -> PathBuf {
    let dir = group.path.join(name);
    std::fs::create_dir_all(dir.join("run-000")).expect("make the crafted group");
    if let Some(mark) = mark {
        rustix::fs::setxattr(
            &dir,
            "user.coldtrace.batch",
            mark.as_bytes(),
            rustix::fs::XattrFlags::empty(),
        )
        .expect("mark the crafted group");
    }
    std::fs::write(dir.join("run-000/cgroup.procs"), sleeper.pid().to_string())
        .expect("move the sleeper into the crafted group");
    dir
}

/// What `batch.json` of `dir/b` records of earlier batches' groups.
fn leftover(dir: &TempDir) -> serde_json::Value {
    read_batch(&dir.join("b"))["context"]["cgroup"]["leftover"].clone()
}

#[test]
fn a_directory_named_like_a_group_but_not_marked_is_left_alone() {
    let Some(group) = TestGroup::new("grunmarked") else {
        return;
    };
    let dir = TempDir::new("grunmarked");
    let mut sleeper = Sleeper::new();
    let crafted = crafted(&group, None, &sleeper);
    let out = group.run(&dir, "run -n 1 -o b -- true");
    out.expect_code(0);
    assert!(
        sleeper.runs(),
        "a process in a group coldtrace never made was killed"
    );
    assert!(crafted.is_dir(), "{}", out.describe());
    assert_eq!(leftover(&dir), serde_json::json!([]), "{}", out.describe());
}

#[test]
fn a_group_another_user_owns_is_left_alone() {
    let Some(group) = TestGroup::new("grforeign") else {
        return;
    };
    let dir = TempDir::new("grforeign");
    let mut sleeper = Sleeper::new();
    let crafted = crafted(&group, Some(&dead_batch_mark()), &sleeper);
    std::os::unix::fs::chown(&crafted, Some(65534), Some(65534)).expect("chown to nobody");
    let out = group.run(&dir, "run -n 1 -o b -- true");
    out.expect_code(0);
    assert!(
        sleeper.runs(),
        "a process in another user's group was killed"
    );
    assert!(crafted.is_dir(), "{}", out.describe());
    assert_eq!(leftover(&dir), serde_json::json!([]), "{}", out.describe());
}

#[test]
fn a_dead_batchs_group_that_another_process_locks_is_still_emptied() {
    let Some(group) = TestGroup::new("grlocked") else {
        return;
    };
    let dir = TempDir::new("grlocked");
    let mut sleeper = Sleeper::new();
    let crafted = crafted(&group, Some(&dead_batch_mark()), &sleeper);
    // Any user may lock a directory it can read: this lock once kept the group from ever
    // being cleaned, without a word.
    let mut holder = Command::new("flock")
        .arg("--shared")
        .arg(&crafted)
        .args(["sleep", "60"])
        .spawn()
        .expect("spawn flock");
    std::thread::sleep(Duration::from_millis(200));
    let out = group.run(&dir, "run -n 1 -o b -- true");
    let _ = holder.kill();
    let _ = holder.wait();
    out.expect_code(0);
    let until = Instant::now() + Duration::from_secs(3);
    while sleeper.runs() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(
        !sleeper.runs(),
        "the dead batch's process was left{}",
        out.describe()
    );
    assert_says(&out, &format!("running in {}:", crafted.display()));
    assert_says(&out, "(sleep); killed");
    assert_eq!(leftover(&dir)[0]["action"], "killed", "{}", out.describe());
}

/// The cgroup v1 freezer's mount point, where there is one (a hybrid layout), else `None`, said.
fn v1_freezer(what: &str) -> Option<PathBuf> {
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    let found = mountinfo.lines().find_map(|l| {
        let (fields, rest) = l.split_once(" - ")?;
        let mut rest = rest.split(' ');
        let v1_freezer =
            rest.next() == Some("cgroup") && rest.nth(1)?.split(',').any(|o| o == "freezer");
        v1_freezer.then(|| PathBuf::from(fields.split(' ').nth(4).unwrap_or_default()))
    });
    if found.is_none() {
        eprintln!("skipped {what}: it needs the cgroup v1 freezer (a hybrid layout), absent here");
    }
    found
}

/// A cgroup of the v1 freezer that holds `pid`, frozen; thawed and removed when dropped.
struct Frozen(PathBuf);

impl Frozen {
    fn new(freezer: &Path, pid: u32) -> Frozen {
        let path = freezer.join(format!("hostile-frozen-{}", std::process::id()));
        std::fs::create_dir(&path).expect("make a freezer cgroup");
        std::fs::write(path.join("cgroup.procs"), pid.to_string()).expect("move into it");
        std::fs::write(path.join("freezer.state"), "FROZEN").expect("freeze it");
        Frozen(path)
    }
}

impl Drop for Frozen {
    fn drop(&mut self) {
        let _ = std::fs::write(self.0.join("freezer.state"), "THAWED");
        for _ in 0..300 {
            let procs = std::fs::read_to_string(self.0.join("cgroup.procs")).unwrap_or_default();
            for pid in procs.split_whitespace().filter_map(|p| p.parse().ok()) {
                let _ = rustix::process::kill_process(Pid::from_raw(pid).unwrap(), Signal::KILL);
            }
            if std::fs::remove_dir(&self.0).is_ok() {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

#[test]
fn a_leftover_a_kill_cannot_end_is_said_so_and_not_killed_again_by_the_next_batch() {
    let Some(group) = TestGroup::new("grfrozen") else {
        return;
    };
    let Some(freezer) = v1_freezer("the unkillable leftover") else {
        return;
    };
    let dir = TempDir::new("grfrozen");
    let mut sleeper = Sleeper::new();
    let crafted = crafted(&group, Some(&dead_batch_mark()), &sleeper);
    let frozen = Frozen::new(&freezer, sleeper.pid());
    let first = group.run(&dir, "run -n 1 -o b -- true");
    first.expect_code(0);
    assert!(sleeper.runs(), "a frozen process cannot die");
    assert_says(&first, "a kill did not end");
    let l = &leftover(&dir)[0];
    assert_eq!(l["action"], "not_killed", "{}", first.describe());
    assert_eq!(l["still_running"][0]["pid"], sleeper.pid(), "{l}");
    assert!(crafted.is_dir(), "{}", first.describe());
    // The next batch names it without killing it (and waiting for it) again.
    let second = group.run(&dir, "run -n 1 -o b -- true");
    second.expect_code(0);
    assert_eq!(
        leftover(&dir)[0]["action"],
        "not_killed_before",
        "{}",
        second.describe()
    );
    assert_says(&second, "an earlier kill did not end them");
    eprintln!(
        "a batch beside an unkillable leftover: {:?} the first time (a kill and a 1 s wait), {:?} \
         the next",
        first.elapsed, second.elapsed
    );
    drop(frozen);
    let until = Instant::now() + Duration::from_secs(3);
    while sleeper.runs() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn an_out_directory_on_a_file_system_the_kernel_makes_is_refused_and_nothing_is_made() {
    let Some(group) = TestGroup::new("grout") else {
        return;
    };
    let dir = TempDir::new("grout");
    let before = listing(&group.path);
    for out_dir in [group.path.join("b"), PathBuf::from("/proc/coldtrace-out")] {
        let line = format!("run -n 1 -o {} -- true", out_dir.display());
        let out = group.run(&dir, &line);
        out.expect_code(125);
        assert_one_escaped_line(&out);
        assert_no_raw_controls(&out);
        assert!(
            out.stderr.contains("a file system the kernel makes"),
            "{}",
            out.describe()
        );
        assert!(!out_dir.exists(), "{}", out.describe());
    }
    // Nothing new in the test's cgroup (no cgroup made for a batch directory, no group).
    assert_eq!(listing(&group.path), before);
}
