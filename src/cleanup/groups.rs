//! The cgroup groups batches left (`coldtrace-PID-START`): each one found below the cgroup v2
//! root (or `--cgroup DIR`) is judged as a starting batch judges its own leftovers
//! ([`crate::measure::cgroup::standing`]) and dealt with by the same code: removed only when
//! marked as coldtrace's, this user's, and its batch has ended — what a batch killed
//! mid-batch left running is killed first; what a finished batch left running on purpose is
//! named and left.
#![forbid(unsafe_code)]

use super::{processes, root, Fate, Thing};
use crate::measure::cgroup::{self, Leftover, LeftoverAction, Standing};
use std::path::{Path, PathBuf};

/// What was found and done below `only` (else the whole cgroup2 hierarchy).
pub fn groups(only: Option<&Path>, dry_run: bool) -> Vec<Thing> {
    let root_dir: Option<PathBuf> = match only {
        Some(dir) => Some(dir.to_path_buf()),
        None => crate::measure::procfs::read_text("/proc/self/mountinfo", usize::MAX)
            .and_then(|m| cgroup::mount_point(&m)),
    };
    let Some(root_dir) = root_dir else {
        return Vec::new();
    };
    let (found, cut) = cgroup::groups_below(&root_dir);
    let mut things: Vec<Thing> = found.iter().map(|dir| group(dir, dry_run)).collect();
    if cut {
        let why = format!(
            "only the first {} directories were looked at: name the part to search with \
             --cgroup DIR",
            cgroup::GROUP_WALK_LIMIT
        );
        things.push(Thing::new(
            "groups below",
            root_dir.display().to_string(),
            Fate::Left,
            why,
        ));
    }
    things
}

/// One group, judged and (unless `dry_run`) dealt with.
fn group(dir: &Path, dry_run: bool) -> Thing {
    let path = dir.display().to_string();
    let (fate, why) = match cgroup::standing(dir) {
        Standing::Unmarked => (
            Fate::Left,
            "not marked as coldtrace's (no user.coldtrace.batch attribute)".to_string(),
        ),
        Standing::Foreign(0) if !root() => (
            Fate::Left,
            "root's: `sudo coldtrace cleanup` removes it if its batch has ended".to_string(),
        ),
        Standing::Foreign(uid) => (
            Fate::Left,
            format!("another user's (UID {uid}): only its owner's cleanup removes it"),
        ),
        Standing::Running => (Fate::Left, "its batch is still running".to_string()),
        Standing::Ended(_lock) if dry_run => would(dir),
        Standing::Ended(_lock) => {
            let dealt = cgroup::deal_with(dir);
            done(dir, dealt)
        }
    };
    Thing::new("group", path, fate, why)
}

/// What [`cgroup::deal_with`] would do with the group of an ended batch.
fn would(dir: &Path) -> (Fate, String) {
    match cgroup::survey(dir) {
        None => (Fate::WouldRemove, "its batch has ended; empty".to_string()),
        Some(l) if l.action == LeftoverAction::Killed => (
            Fate::WouldRemove,
            format!(
                "its batch was killed mid-batch; would kill {}",
                processes(&l.processes)
            ),
        ),
        Some(l) => left(&l),
    }
}

/// What became of the group of an ended batch after [`cgroup::deal_with`].
fn done(dir: &Path, dealt: Option<Leftover>) -> (Fate, String) {
    let gone = !dir.exists();
    match dealt {
        None if gone => (
            Fate::Removed,
            "its batch has ended; it was empty".to_string(),
        ),
        Some(l) if l.action == LeftoverAction::Killed && gone => (
            Fate::Removed,
            format!(
                "its batch was killed mid-batch; killed {}",
                processes(&l.processes)
            ),
        ),
        Some(l) if l.action != LeftoverAction::Killed => left(&l),
        _ => (
            Fate::NotRemoved,
            "its batch has ended, but the group could not be removed (busy, or a directory \
             in it is not coldtrace's): look inside, then run cleanup again"
                .to_string(),
        ),
    }
}

/// Why a group that still holds processes is left.
fn left(l: &Leftover) -> (Fate, String) {
    match &l.action {
        LeftoverAction::Left => (
            Fate::Left,
            format!(
                "its batch finished and left running on purpose: {} (end them, then run \
                 cleanup again)",
                processes(&l.processes)
            ),
        ),
        LeftoverAction::NotKilled(still) => (
            Fate::NotRemoved,
            format!(
                "a kill did not end {} (frozen, or in uninterruptible sleep)",
                processes(still)
            ),
        ),
        _ => (
            Fate::NotRemoved,
            format!(
                "an earlier kill did not end {} (frozen, or in uninterruptible sleep)",
                processes(&l.processes)
            ),
        ),
    }
}
