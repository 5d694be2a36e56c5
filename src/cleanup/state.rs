//! The state directory (`COLDTRACE_STATE_DIR`, else `$XDG_STATE_HOME/coldtrace`, else
//! `~/.local/state/coldtrace`): the files coldtrace writes there — `last-boot`, the
//! `tracefs-mount` record, a temporary file a write cut short left — are removed, then the
//! directory when nothing else is in it. It is only reached when it is a directory of this
//! user (no symlink on its path); a file coldtrace did not write is left, and so is the directory holding
//! it. The record of a mount still mounted (busy, or needing root) is kept with it.
#![forbid(unsafe_code)]

use super::{Fate, Thing};
use crate::measure::boot_marker::{self, FILE_NAME};
use crate::measure::tree::mounted::RECORD_NAME;
use rustix::fd::OwnedFd;
use rustix::fs::AtFlags;
use std::path::{Path, PathBuf};

/// What was found and done in the state directory `dir` (`Err`: there is none: off, or no
/// home); `keep_record`: the tracefs record names a mount still there.
pub fn state(dir: Result<PathBuf, &str>, keep_record: bool, dry_run: bool) -> Vec<Thing> {
    let Ok(dir) = dir else {
        return Vec::new();
    };
    let shown = dir.display().to_string();
    let thing = |fate, why: String| vec![Thing::new("state", shown.clone(), fate, why)];
    if std::fs::symlink_metadata(&dir).is_err() {
        return Vec::new();
    }
    let fd = match opened(&dir) {
        Ok(fd) => fd,
        Err(why) => return thing(Fate::Left, why),
    };
    let (ours, others): (Vec<String>, Vec<String>) = names(&fd)
        .into_iter()
        .partition(|n| written_by_coldtrace(n) && !(keep_record && n == RECORD_NAME));
    let removed: Vec<String> = ours
        .iter()
        .filter(|name| {
            dry_run || rustix::fs::unlinkat(&fd, name.as_str(), AtFlags::empty()).is_ok()
        })
        .cloned()
        .collect();
    let evidence = "the next batch will not know the last one's boot and kernel counts (what \
                    dropped the page cache since)";
    let listed = |names: &[String]| names.join(", ");
    if dry_run {
        return thing(
            Fate::WouldRemove,
            format!("{}; {evidence}", listed(&removed)),
        );
    }
    if removed.len() < ours.len() {
        return thing(
            Fate::NotRemoved,
            "a file of coldtrace's in it could not be removed".into(),
        );
    }
    if others.is_empty() && remove_directory(&dir) {
        return thing(Fate::Removed, format!("{}; {evidence}", listed(&removed)));
    }
    let holds = match others.is_empty() {
        true => "it could not be removed".to_string(),
        false => format!("it holds {}", listed(&others)),
    };
    if keep_record {
        let why = match removed.is_empty() {
            true => holds,
            false => format!("removed {} from it; {holds}", listed(&removed)),
        };
        return thing(Fate::NotRemoved, why);
    }
    if removed.is_empty() {
        return thing(Fate::Left, holds);
    }
    // Files of coldtrace's were removed: that is what the line and the count say, though the
    // directory stays for what else it holds.
    thing(
        Fate::Removed,
        format!(
            "{}; the directory stays: {holds}; {evidence}",
            listed(&removed)
        ),
    )
}

/// The state directory, opened as a batch opens it (no symlink anywhere on its path,
/// `boot_marker::open_state_dir`) and this user's own; `Err` says why it is left.
fn opened(dir: &Path) -> Result<OwnedFd, String> {
    let fd = boot_marker::open_state_dir(dir)?;
    match rustix::fs::fstat(&fd).map(|st| st.st_uid) {
        Ok(uid) if uid == rustix::process::geteuid().as_raw() => Ok(fd),
        Ok(uid) => Err(format!("another user's (UID {uid})")),
        Err(e) => Err(std::io::Error::from(e).to_string()),
    }
}

/// The names in the open directory `fd`, sorted.
fn names(fd: &OwnedFd) -> Vec<String> {
    let Ok(dir) = rustix::fs::Dir::read_from(fd) else {
        return Vec::new();
    };
    let mut names: Vec<String> = dir
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n != "." && n != "..")
        .collect();
    names.sort();
    names
}

/// Removes the (empty) directory `dir`, reached from its parent opened as the directory itself
/// was.
fn remove_directory(dir: &Path) -> bool {
    let (Some(parent), Some(name)) = (dir.parent(), dir.file_name()) else {
        return false;
    };
    boot_marker::open_state_dir(parent)
        .is_ok_and(|at| rustix::fs::unlinkat(&at, name, AtFlags::REMOVEDIR).is_ok())
}

/// Whether coldtrace writes a file of this name in the state directory.
fn written_by_coldtrace(name: &str) -> bool {
    let temporary = |base: &str| {
        name.strip_prefix(&format!(".{base}."))
            .and_then(|rest| rest.strip_suffix(".tmp"))
            .is_some_and(|pid| !pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit()))
    };
    name == FILE_NAME || name == RECORD_NAME || temporary(FILE_NAME) || temporary(RECORD_NAME)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_files_coldtrace_writes_are_its() {
        for name in [
            "last-boot",
            "tracefs-mount",
            ".last-boot.42.tmp",
            ".tracefs-mount.7.tmp",
        ] {
            assert!(written_by_coldtrace(name), "{name}");
        }
        for name in [
            "notes",
            ".last-boot..tmp",
            ".last-boot.x.tmp",
            "last-boot.bak",
            "boot",
        ] {
            assert!(!written_by_coldtrace(name), "{name}");
        }
    }
}
