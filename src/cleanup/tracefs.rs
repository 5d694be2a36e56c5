//! The tracefs mount a batch made: unmounted only when the state directory's record names that
//! very mount ([`crate::measure::tree::mounted`]); a tracefs mounted at boot, by hand or by
//! another tool is left and said, and so is one still in use ([umount(2)] `EBUSY`).
//!
//! [umount(2)]: https://man7.org/linux/man-pages/man2/umount.2.html
#![forbid(unsafe_code)]

use super::{root, Fate, Thing};
use crate::measure::tree::mounted::{self, MountAt, Standing, RECORD_NAME};
use crate::measure::tree::tracefs::DEFAULT_MOUNT;
use std::path::Path;

/// What was found and done, and whether the record must stay (its mount is still there).
pub fn tracefs(state_dir: Option<&Path>, dry_run: bool) -> (Vec<Thing>, bool) {
    let record = state_dir.and_then(|dir| {
        let bytes = crate::untrusted::read_bounded(&dir.join(RECORD_NAME), 4096).ok()?;
        MountAt::parse(&String::from_utf8_lossy(&bytes))
    });
    let Some(record) = record else {
        return (unrecorded(Path::new(DEFAULT_MOUNT), state_dir), false);
    };
    let path = record.path.display().to_string();
    let thing = |fate, why: &str| vec![Thing::new("tracefs", path.clone(), fate, why.into())];
    match mounted::standing(&record, MountAt::now(&record.path).as_ref()) {
        Standing::Ours if dry_run => (thing(Fate::WouldRemove, "coldtrace mounted it"), false),
        Standing::Ours => unmount(&record.path),
        Standing::Replaced => (
            thing(
                Fate::Left,
                "not the mount coldtrace made (that one is gone; this was mounted since)",
            ),
            false,
        ),
        // The record is of a mount gone with its boot or its namespace: nothing to unmount.
        Standing::Gone | Standing::EarlierBoot | Standing::OtherNamespace => {
            (unrecorded(&record.path, state_dir), false)
        }
    }
}

/// Unmounts coldtrace's mount at `path`.
fn unmount(path: &Path) -> (Vec<Thing>, bool) {
    let shown = path.display().to_string();
    let (fate, why) = match rustix::mount::unmount(path, rustix::mount::UnmountFlags::empty()) {
        Ok(()) => (Fate::Removed, "unmounted: coldtrace mounted it".to_string()),
        Err(rustix::io::Errno::BUSY) => (
            Fate::NotRemoved,
            "coldtrace mounted it, and it is in use (busy): run cleanup again once nothing \
             reads it"
                .to_string(),
        ),
        Err(rustix::io::Errno::PERM) if !root() => (
            Fate::NotRemoved,
            "coldtrace mounted it; unmounting needs root: `sudo coldtrace cleanup`".to_string(),
        ),
        Err(e) => (
            Fate::NotRemoved,
            format!(
                "coldtrace mounted it; unmounting failed: {}",
                std::io::Error::from(e)
            ),
        ),
    };
    let kept = fate != Fate::Removed;
    (vec![Thing::new("tracefs", shown, fate, why)], kept)
}

/// A tracefs at `path` that no record names as coldtrace's: left, and said (nothing when none
/// is mounted there). `state_dir` `None`: the state is off, so coldtrace cannot know.
fn unrecorded(path: &Path, state_dir: Option<&Path>) -> Vec<Thing> {
    let is_tracefs = rustix::fs::statfs(path)
        .is_ok_and(|s| crate::untrusted::kernel_file_system(s.f_type) == Some("tracefs"));
    if !is_tracefs || MountAt::now(path).is_none() {
        return Vec::new();
    }
    let why = match state_dir {
        None => {
            "no state directory (COLDTRACE_STATE_DIR is empty, or no home): coldtrace \
                 cannot tell whether it mounted it"
        }
        Some(_) => {
            "not recorded as mounted by coldtrace (mounted at boot, by hand or by \
                    another tool)"
        }
    };
    vec![Thing::new(
        "tracefs",
        path.display().to_string(),
        Fate::Left,
        why.to_string(),
    )]
}
