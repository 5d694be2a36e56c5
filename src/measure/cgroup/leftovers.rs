//! What earlier batches left below coldtrace's own cgroup, and what is done about it: a group
//! is touched only when coldtrace made it — marked so ([`MARK`], an extended attribute that
//! names the batch) and owned by this user — and only when its batch no longer runs.
//!
//! Whether a batch runs is asked of the process the mark names where that can be known (this
//! process is in the same PID namespace, and its `/proc` shows that namespace: the PID and
//! start time either name a live process or not), else of the lock the batch holds on its
//! group ([flock(2)]): a batch in another PID namespace holds it while it runs, and a lock that
//! anyone else takes on a dead batch's group then keeps it from being cleaned — but never from
//! being cleaned where the batch is known dead.
//!
//! A killed-mid-batch group's processes are killed (`cgroup.kill`) and awaited for up to a
//! second; those still running then (frozen by a cgroup v1 freezer, in an uninterruptible
//! sleep) are said, never called killed, and the group is marked with them ([`UNKILLABLE`]),
//! so that later batches name them without killing and waiting again.
//!
//! [flock(2)]: https://man7.org/linux/man-pages/man2/flock.2.html
#![forbid(unsafe_code)]

use super::{kill_group, lock_group, members, FINISHED, PREFIX};
use crate::measure::descendants::Proc;
use crate::measure::procfs;
use std::path::{Path, PathBuf};

/// The extended attribute that marks a group as made by a coldtrace batch: [`Maker`]'s text.
pub const MARK: &str = "user.coldtrace.batch";
/// The extended attribute that lists a group's processes a kill did not end (`PID:START`…).
pub const UNKILLABLE: &str = "user.coldtrace.unkillable";

/// The batch that made a group: its PID in its own PID namespace, its start time (clock ticks
/// since boot), and that namespace (the inode of `/proc/self/ns/pid`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Maker {
    pid: i32,
    start: u64,
    pidns: u64,
}

impl Maker {
    /// This process, `None` where `/proc` cannot say.
    pub fn this_process() -> Option<Maker> {
        let pid = rustix::process::getpid().as_raw_nonzero().get();
        Some(Maker {
            pid,
            start: own_stat()?.start_ticks,
            pidns: rustix::fs::stat("/proc/self/ns/pid").ok()?.st_ino,
        })
    }

    /// The mark's text: `pid=P start=S pidns=N`.
    pub fn text(&self) -> String {
        format!("pid={} start={} pidns={}", self.pid, self.start, self.pidns)
    }

    /// The maker a mark's text names.
    pub fn parse(text: &str) -> Option<Maker> {
        let mut fields = text.split(' ');
        let mut field = |key: &str| fields.next()?.strip_prefix(key)?.parse::<u64>().ok();
        Some(Maker {
            pid: i32::try_from(field("pid=")?).ok()?,
            start: field("start=")?,
            pidns: field("pidns=")?,
        })
    }

    /// Whether that batch still runs: `None` where this process cannot tell (another PID
    /// namespace, or a `/proc` of another one mounted here).
    pub fn alive(&self) -> Option<bool> {
        let here = Maker::this_process()?;
        let own_proc = own_stat()?.pid == here.pid;
        if here.pidns != self.pidns || !own_proc {
            return None;
        }
        Some(Proc::read(self.pid).is_some_and(|p| p.start_ticks == self.start && !p.is_zombie()))
    }
}

/// This process's `/proc/self/stat` (its PID there is the one of the `/proc` mounted here).
fn own_stat() -> Option<Proc> {
    let mut buf = Vec::with_capacity(512);
    let text = procfs::read_small_once("/proc/self/stat", &mut buf)?;
    let pid = std::str::from_utf8(text)
        .ok()?
        .split(' ')
        .next()?
        .parse()
        .ok()?;
    crate::measure::descendants::parse_stat(pid, text)
}

/// The text of the extended attribute `name` of `path` (at most 4 KiB).
fn read_attribute(path: &Path, name: &str) -> Option<String> {
    let mut buf = vec![0u8; 4096];
    let n = rustix::fs::getxattr(path, name, &mut buf[..]).ok()?;
    buf.truncate(n);
    String::from_utf8(buf).ok()
}

/// What was done with what an earlier batch left running.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LeftoverAction {
    /// Named and left: its batch finished and left it running on purpose.
    Left,
    /// Killed, all of it (its batch was killed mid-batch).
    Killed,
    /// A kill did not end these (still running a second later).
    NotKilled(Vec<Proc>),
    /// An earlier batch's kill did not end them: named, not killed again.
    NotKilledBefore,
}

impl LeftoverAction {
    /// In records: `left`, `killed`, `not_killed`, `not_killed_before`.
    pub fn name(&self) -> &'static str {
        match self {
            LeftoverAction::Left => "left",
            LeftoverAction::Killed => "killed",
            LeftoverAction::NotKilled(_) => "not_killed",
            LeftoverAction::NotKilledBefore => "not_killed_before",
        }
    }
}

/// What an earlier batch left in its group, and what was done about it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Leftover {
    /// The group's directory.
    pub group: String,
    /// The live processes found in it.
    pub processes: Vec<Proc>,
    /// The batch that made it finished and left them on purpose (else it was killed
    /// mid-batch).
    pub finished: bool,
    /// What became of them.
    pub action: LeftoverAction,
}

/// Whose a group is, and whether its batch has ended: what decides whether it may be touched.
pub enum Standing {
    /// No [`MARK`] that reads as one: coldtrace did not make it (or cannot tell it did).
    Unmarked,
    /// Marked, but another user's (its owner's UID).
    Foreign(u32),
    /// Its batch still runs (its PID and start time name a live process, or it holds its
    /// lock).
    Running,
    /// Its batch has ended: the group may be dealt with while the lock held here is kept.
    Ended(Option<rustix::fd::OwnedFd>),
}

/// The [`Standing`] of the group at `dir`. An `Ended` group's lock ([flock(2)]) is taken and
/// held in it, where it could be had: a batch starting meanwhile sees the group as looked at.
///
/// [flock(2)]: https://man7.org/linux/man-pages/man2/flock.2.html
pub fn standing(dir: &Path) -> Standing {
    let Ok(owner) = rustix::fs::stat(dir).map(|s| s.st_uid) else {
        return Standing::Unmarked;
    };
    let Some(maker) = read_attribute(dir, MARK).and_then(|t| Maker::parse(&t)) else {
        return Standing::Unmarked;
    };
    if owner != rustix::process::geteuid().as_raw() {
        return Standing::Foreign(owner);
    }
    // Held while this one looks (and released when it is dropped): a live batch holds it.
    let looking = lock_group(dir, rustix::fs::FlockOperation::NonBlockingLockExclusive);
    let ended = match maker.alive() {
        Some(alive) => !alive,
        None => looking.is_ok(),
    };
    if ended {
        Standing::Ended(looking.ok())
    } else {
        Standing::Running
    }
}

/// The groups earlier batches of this user left below `own`: emptied ones removed without a
/// word; what a batch killed mid-batch left is killed; what a finished batch left running on
/// purpose (and said so) is named and left alone. A group whose batch still runs, and one
/// coldtrace did not make, is not touched.
pub fn leftovers(own: &Path) -> Vec<Leftover> {
    let Ok(entries) = std::fs::read_dir(own) else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for entry in entries.flatten() {
        let dir = entry.path();
        if !entry.file_name().to_string_lossy().starts_with(PREFIX) {
            continue;
        }
        if let Standing::Ended(_looking) = standing(&dir) {
            found.extend(deal_with(&dir));
        }
    }
    found
}

/// What is in the group at `dir` of a batch that has ended, and what [`deal_with`] would do
/// about it: nothing in it (`None`: removed), or the [`Leftover`] it would be.
pub fn survey(dir: &Path) -> Option<Leftover> {
    surveyed(dir).1
}

/// [`survey`], with the group's leaves.
fn surveyed(dir: &Path) -> (Vec<PathBuf>, Option<Leftover>) {
    let finished = dir.join(FINISHED).is_dir();
    let leaves = leaves_of(dir);
    let processes: Vec<Proc> = leaves.iter().flat_map(|l| members(l)).collect();
    if processes.is_empty() {
        return (leaves, None);
    }
    let action = if finished {
        LeftoverAction::Left
    } else if processes
        .iter()
        .all(|p| unkillable(dir).contains(&(p.pid, p.start_ticks)))
    {
        LeftoverAction::NotKilledBefore
    } else {
        LeftoverAction::Killed
    };
    let leftover = Leftover {
        group: dir.display().to_string(),
        processes,
        finished,
        action,
    };
    (leaves, Some(leftover))
}

/// Deals with the group at `dir` of a batch that has ended ([`survey`]): an empty one is
/// removed, a killed-mid-batch one's processes killed and the group removed; returns what it
/// held, if anything.
pub fn deal_with(dir: &Path) -> Option<Leftover> {
    let (leaves, found) = surveyed(dir);
    let Some(mut leftover) = found else {
        remove_below(dir);
        return None;
    };
    if leftover.action == LeftoverAction::Killed {
        leftover.action = kill(dir, &leaves);
    }
    Some(leftover)
}

/// Kills what the leaves hold and awaits it for up to a second: `Killed` and the group
/// removed, or `NotKilled` with what still runs, which the group's [`UNKILLABLE`] then lists.
fn kill(dir: &Path, leaves: &[PathBuf]) -> LeftoverAction {
    for leaf in leaves {
        if kill_group(leaf) == Err(rustix::io::Errno::NOENT) {
            // No cgroup.kill before Linux 5.14: each process, as listed.
            for p in members(leaf) {
                let _ = rustix::process::Pid::from_raw(p.pid)
                    .map(|pid| rustix::process::kill_process(pid, rustix::process::Signal::KILL));
            }
        }
    }
    let mut still: Vec<Proc> = Vec::new();
    for _ in 0..100 {
        still = leaves.iter().flat_map(|l| members(l)).collect();
        if still.is_empty() {
            remove_below(dir);
            return LeftoverAction::Killed;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let listed: Vec<String> = still
        .iter()
        .map(|p| format!("{}:{}", p.pid, p.start_ticks))
        .collect();
    let _ = rustix::fs::setxattr(
        dir,
        UNKILLABLE,
        listed.join(" ").as_bytes(),
        rustix::fs::XattrFlags::empty(),
    );
    LeftoverAction::NotKilled(still)
}

/// The processes (`PID`, start time) the group's [`UNKILLABLE`] lists.
fn unkillable(dir: &Path) -> Vec<(i32, u64)> {
    let text = read_attribute(dir, UNKILLABLE).unwrap_or_default();
    text.split(' ')
        .filter_map(|e| {
            let (pid, start) = e.split_once(':')?;
            Some((pid.parse().ok()?, start.parse().ok()?))
        })
        .collect()
}

/// The leaves (`run-NNN`) of a batch's group.
fn leaves_of(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("run-"))
        .map(|e| e.path())
        .collect()
}

/// Removes `dir` and everything below it, deepest first: the leaves, the mark, and the groups
/// of batches nested in a run (a coldtrace measured by a coldtrace makes its group inside the
/// outer run's leaf). One try: a directory still busy (a killed process not yet gone from it)
/// is left for a later batch.
fn remove_below(dir: &Path) {
    let below = directories_below(dir);
    for _ in 0..10 {
        let busy = below
            .iter()
            .rev()
            .any(|d| rustix::fs::rmdir(d) == Err(rustix::io::Errno::BUSY));
        if !busy {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let _ = rustix::fs::rmdir(dir);
}

/// The directories below `dir`, parents before children (at most 4,096).
fn directories_below(dir: &Path) -> Vec<PathBuf> {
    directories_below_where(dir, |_| true).0
}

/// How many directories [`groups_below`] looks at, at most.
pub const GROUP_WALK_LIMIT: usize = 4096;

/// The groups named as batches' (`coldtrace-…`) anywhere below `root` (a cgroup2 mount),
/// parents before children, at most [`GROUP_WALK_LIMIT`] directories looked at (the second
/// value says the walk stopped there); a group's own directories are not walked (its nested
/// groups go with it).
pub fn groups_below(root: &Path) -> (Vec<PathBuf>, bool) {
    let named = |d: &Path| {
        d.file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with(PREFIX))
    };
    let (mut found, cut) = directories_below_where(root, |d| !named(d));
    found.retain(|d| named(d));
    (found, cut)
}

/// The directories below `dir`, parents before children (at most [`GROUP_WALK_LIMIT`] with
/// `dir`), below those for which `descend` holds; the second value says some were left
/// unread at the limit.
fn directories_below_where(dir: &Path, descend: impl Fn(&Path) -> bool) -> (Vec<PathBuf>, bool) {
    let mut found = vec![dir.to_path_buf()];
    let mut next = 0;
    while next < found.len() && found.len() < GROUP_WALK_LIMIT {
        let walk = next == 0 || descend(&found[next]);
        if let Some(entries) = walk.then(|| std::fs::read_dir(&found[next]).ok()).flatten() {
            let dirs = entries
                .flatten()
                .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                .map(|e| e.path());
            found.extend(dirs);
        }
        next += 1;
    }
    let cut = next < found.len();
    found.remove(0);
    (found, cut)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_walk_cut_at_its_limit_says_so() {
        let dir = std::env::temp_dir().join(format!("coldtrace-walk-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("a").join(format!("{PREFIX}1-2"))).unwrap();
        let (found, cut) = groups_below(&dir);
        assert_eq!((found.len(), cut), (1, false), "{found:?}");
        for i in 0..GROUP_WALK_LIMIT {
            std::fs::create_dir(dir.join("a").join(i.to_string())).unwrap();
        }
        // Breadth first: the group is found, the limit is met before the last directories.
        let (found, cut) = groups_below(&dir);
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(cut, "{} found", found.len());
    }

    #[test]
    fn a_mark_reads_back_and_a_foreign_text_is_no_mark() {
        let maker = Maker {
            pid: 42,
            start: 9876,
            pidns: 4026531836,
        };
        assert_eq!(maker.text(), "pid=42 start=9876 pidns=4026531836");
        assert_eq!(Maker::parse(&maker.text()), Some(maker));
        assert_eq!(Maker::parse("pid=x start=1 pidns=2"), None);
        assert_eq!(Maker::parse("start=1 pid=2 pidns=3"), None);
        assert_eq!(Maker::parse(""), None);
    }

    #[test]
    fn this_process_is_alive_and_a_pid_with_another_start_is_not() {
        let me = Maker::this_process().expect("this process");
        assert_eq!(me.alive(), Some(true));
        let other = Maker {
            start: me.start + 1,
            ..me
        };
        assert_eq!(other.alive(), Some(false));
        let elsewhere = Maker { pidns: 1, ..me };
        assert_eq!(elsewhere.alive(), None);
    }
}
