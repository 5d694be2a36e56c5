//! What coldtrace knows about the boot, and only that: whether a batch is the first coldtrace
//! batch since the machine booted, and what the kernel counted — writes to `drop_caches`,
//! reclaim ([`CacheHistory`]) — since the last batch of this boot ended. A small state file
//! holds the last batch's boot ID and those counters; it reads and writes that one file,
//! and recording the answer is the batch's job.
//!
//! The file is `$COLDTRACE_STATE_DIR/last-boot`, else `$XDG_STATE_HOME/coldtrace/last-boot`,
//! else `~/.local/state/coldtrace/last-boot` — the one file coldtrace writes outside `-o`
//! (besides the record of a tracefs mount a batch made, `crate::measure::tree::mounted`);
//! `coldtrace cleanup` removes both.
//! `COLDTRACE_STATE_DIR=` (set, empty) turns it off: then nothing is read or written and the
//! answer is unknown. It is compared with `/proc/sys/kernel/random/boot_id` ([proc_sys_kernel(5)]);
//! it does not rely on `/run` being a tmpfs (on this project's machine it is a plain directory on
//! ext4, kept across reboots) nor on `$XDG_RUNTIME_DIR` (removed at logout). The file is
//! replaced atomically: a new file, then [rename(2)] over the old one. It is written when a
//! batch starts on a new boot (so a batch cut short still marks the boot) and when a batch ends
//! (so its own `--drop-caches` is not taken for another's by the next batch). It holds one
//! line of JSON (`{"boot_id": …, "uptime_s": …, "drop_pagecache": …}`); a file of an older
//! coldtrace holds the boot ID alone, and is read as a boot with no counters. The directory is
//! reached without following a symlink and must be the user's own (`open_state_dir`).
//!
//! An empty or new state directory says nothing of the boot: the batch is then the first
//! *coldtrace batch that directory knows of*, and whether the page cache was dropped since boot
//! is asked of the kernel's own counts (what made a first run cold is decided from those, by
//! the verdict's causes, never from the state directory alone).
//!
//! [proc_sys_kernel(5)]: https://man7.org/linux/man-pages/man5/proc_sys_kernel.5.html
//! [rename(2)]: https://man7.org/linux/man-pages/man2/rename.2.html
#![forbid(unsafe_code)]

use crate::measure::cache::CacheHistory;
use crate::untrusted::OpenError;
use rustix::fd::OwnedFd;
use rustix::fs::{Mode, OFlags, CWD};
use rustix::io::Errno;
use std::ffi::OsString;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

/// The environment variable that chooses the state directory (empty: no state file).
pub const STATE_DIR_VAR: &str = "COLDTRACE_STATE_DIR";
/// The state file's name in its directory.
pub const FILE_NAME: &str = "last-boot";

/// Whether this batch is the first coldtrace batch since boot, as far as coldtrace knows.
#[derive(Clone, Debug, PartialEq)]
pub struct BootMarker {
    /// `true`: no batch recorded this boot before it; `false`: one did; `None`: unknown.
    pub first_batch_since_boot: Option<bool>,
    /// The state file consulted.
    pub state_file: Option<PathBuf>,
    /// Why the answer is unknown, or why the file could not be updated.
    pub note: Option<String>,
    /// The kernel's counts when the last coldtrace batch of this boot ended, as the state file
    /// holds them (`None`: no batch of this boot recorded, or one by an older coldtrace).
    pub last_batch: Option<CacheHistory>,
    /// The same counts when this batch started.
    pub at_start: Option<CacheHistory>,
}
crate::serialize_struct!(BootMarker {
    first_batch_since_boot,
    state_file,
    note,
    last_batch,
    at_start
});

/// What the state file says of the last batch.
#[derive(Clone, Debug, PartialEq)]
pub struct LastBatch {
    /// Its boot.
    pub boot_id: String,
    /// The kernel's counts when it ended (`None`: a file of an older coldtrace).
    pub history: Option<CacheHistory>,
}

/// Reads a state file's text: one line of JSON, or the bare boot ID an older coldtrace wrote.
pub fn parse_state(text: &str) -> LastBatch {
    let text = text.trim();
    // A bare boot ID (a UUID) is no JSON at all; only an object is a state of this coldtrace.
    let json = serde_json::from_str::<serde_json::Value>(text)
        .ok()
        .filter(serde_json::Value::is_object);
    let Some(json) = json else {
        return LastBatch {
            boot_id: text.to_string(),
            history: None,
        };
    };
    let count = |name: &str| json.get(name).and_then(serde_json::Value::as_u64);
    LastBatch {
        boot_id: json
            .get("boot_id")
            .and_then(serde_json::Value::as_str)
            .unwrap_or_default()
            .to_string(),
        history: Some(CacheHistory {
            uptime_s: json.get("uptime_s").and_then(serde_json::Value::as_f64),
            drop_pagecache: count("drop_pagecache"),
            drop_slab: count("drop_slab"),
            pgsteal_file: count("pgsteal_file"),
            pgscan_file: count("pgscan_file"),
        }),
    }
}

/// The state file's text for a batch on `boot_id` whose kernel counts are `history`.
pub fn state_text(boot_id: &str, history: &CacheHistory) -> String {
    let mut json = serde_json::to_value(history).unwrap_or_default();
    if let Some(map) = json.as_object_mut() {
        map.insert("boot_id".into(), boot_id.into());
    }
    format!("{json}\n")
}

/// Where the state file is, from the environment as given (`None` with the reason).
pub fn state_file(
    state_dir: Option<OsString>,
    xdg_state_home: Option<OsString>,
    home: Option<OsString>,
) -> Result<PathBuf, &'static str> {
    if let Some(dir) = state_dir {
        if dir.is_empty() {
            return Err("the boot marker is off (COLDTRACE_STATE_DIR is empty)");
        }
        return Ok(PathBuf::from(dir).join(FILE_NAME));
    }
    let xdg = xdg_state_home
        .map(PathBuf::from)
        .filter(|p| p.is_absolute());
    let home = home.map(PathBuf::from).filter(|p| p.is_absolute());
    match (xdg, home) {
        (Some(xdg), _) => Ok(xdg.join("coldtrace").join(FILE_NAME)),
        (None, Some(home)) => Ok(home.join(".local/state/coldtrace").join(FILE_NAME)),
        (None, None) => Err("no state directory: neither XDG_STATE_HOME nor HOME is set"),
    }
}

/// What the last batch's boot ID (`previous`, `None`: no state file) says about a batch on
/// boot `current`.
pub fn first_since_boot(previous: Option<&str>, current: &str) -> bool {
    previous.map(str::trim) != Some(current)
}

/// The state directory the environment names (`Err` with the reason: off, or no home).
pub fn state_dir() -> Result<PathBuf, &'static str> {
    let env = |name: &str| std::env::var_os(name);
    let file = state_file(env(STATE_DIR_VAR), env("XDG_STATE_HOME"), env("HOME"))?;
    Ok(file.parent().map(Path::to_path_buf).unwrap_or_default())
}

/// Checks the state file against the boot `boot_id` and records this batch's boot in it, with
/// the kernel's counts `now` (read as the batch starts).
pub fn check_and_mark(boot_id: Option<&str>, now: CacheHistory) -> BootMarker {
    let env = |name: &str| std::env::var_os(name);
    let path = match state_file(env(STATE_DIR_VAR), env("XDG_STATE_HOME"), env("HOME")) {
        Ok(path) => path,
        Err(why) => return unknown(None, why.to_string(), now),
    };
    let Some(boot_id) = boot_id else {
        return unknown(Some(path), "the boot ID is unreadable".into(), now);
    };
    let dir = match open_state_dir(path.parent().unwrap_or(Path::new("."))) {
        Ok(dir) => dir,
        Err(why) => return unknown(Some(path), why, now),
    };
    // The state directory is the user's: a FIFO, a device or a symlink planted there must
    // neither block nor be read without end (the state is one short line) nor be followed.
    let previous = match read_state(&dir) {
        Ok(bytes) => Some(parse_state(&String::from_utf8_lossy(&bytes))),
        Err(OpenError::Os(e)) if e == coldtrace_syscalls::Errno::NOENT => None,
        Err(OpenError::Os(e)) if e == coldtrace_syscalls::Errno::LOOP => {
            let why = "is a symlink; coldtrace follows none in its state directory";
            return unknown(
                Some(path.clone()),
                format!("{}: {why}", path.display()),
                now,
            );
        }
        Err(e) => return unknown(Some(path.clone()), format!("{}: {e}", path.display()), now),
    };
    if let Some(last) = previous.filter(|p| p.boot_id == boot_id) {
        return BootMarker {
            first_batch_since_boot: Some(false),
            state_file: Some(path),
            note: None,
            last_batch: last.history,
            at_start: Some(now),
        };
    }
    // The file names another boot, or none: this batch is the first since boot only if it can
    // say so for the next one. A marker that cannot be written would make every batch "first".
    match write_atomically(&dir, FILE_NAME, &state_text(boot_id, &now)) {
        Ok(()) => BootMarker {
            first_batch_since_boot: Some(true),
            state_file: Some(path),
            note: None,
            last_batch: None,
            at_start: Some(now),
        },
        Err(e) => {
            let why = format!(
                "cannot update {}: {e}; so no batch of this boot can be told from the first",
                path.display()
            );
            unknown(Some(path), why, now)
        }
    }
}

/// Records in the state file, as a batch ends, the kernel's counts `now`: the next batch
/// compares its own with these. Nothing when the marker could not be kept (off, unreadable);
/// a failure leaves the file as it was (the next batch then counts from an earlier one).
pub fn mark_end(marker: &BootMarker, boot_id: Option<&str>, now: &CacheHistory) {
    if let (Some(path), Some(boot_id), Some(_)) =
        (&marker.state_file, boot_id, marker.first_batch_since_boot)
    {
        if let Ok(dir) = open_state_dir(path.parent().unwrap_or(Path::new("."))) {
            let _ = write_atomically(&dir, FILE_NAME, &state_text(boot_id, now));
        }
    }
}

fn unknown(state_file: Option<PathBuf>, why: String, now: CacheHistory) -> BootMarker {
    BootMarker {
        first_batch_since_boot: None,
        state_file,
        note: Some(why),
        last_batch: None,
        at_start: Some(now),
    }
}

/// The state directory `dir`, opened one component at a time with `O_NOFOLLOW` (as
/// `openat2`'s `RESOLVE_NO_SYMLINKS` would, on every kernel and under seccomp profiles that
/// refuse `openat2`): a symlink anywhere on the way is refused, so that coldtrace run as root
/// with a user's `HOME` (`sudo -E`) writes nowhere that user points it. A missing component is
/// made (0700) only inside a directory of this user's or root's, and the directory must be
/// this user's own or root's: otherwise the marker is off, and the reason says so.
pub fn open_state_dir(dir: &Path) -> Result<OwnedFd, String> {
    use std::path::Component;
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let me = rustix::process::geteuid().as_raw();
    let ours = |uid: u32| uid == me || uid == 0;
    let open = |at: &OwnedFd, name: &Path| rustix::fs::openat(at, name, flags, Mode::empty());
    let mut at = rustix::fs::openat(CWD, ".", flags, Mode::empty()).map_err(|e| io_said(dir, e))?;
    for part in dir.components() {
        let name = match part {
            Component::RootDir => Path::new("/"),
            Component::ParentDir => Path::new(".."),
            Component::Normal(name) => Path::new(name),
            Component::CurDir | Component::Prefix(_) => continue,
        };
        at = match open(&at, name) {
            Ok(next) => next,
            Err(Errno::NOENT) if owner(&at).is_some_and(ours) => {
                match rustix::fs::mkdirat(&at, name, Mode::from_raw_mode(0o700)) {
                    Ok(()) | Err(Errno::EXIST) => open(&at, name).map_err(|e| io_said(dir, e))?,
                    Err(e) => return Err(io_said(dir, e)),
                }
            }
            Err(Errno::NOENT) => {
                return Err(format!(
                    "{} is missing, and coldtrace makes no state directory inside another \
                     user's; set {STATE_DIR_VAR} to a directory of your own",
                    dir.display()
                ))
            }
            Err(Errno::LOOP | Errno::NOTDIR) => {
                return Err(format!(
                    "{}: {} is a symlink (or no directory); coldtrace follows none to its state \
                     directory: set {STATE_DIR_VAR} to a directory of your own",
                    dir.display(),
                    name.display()
                ))
            }
            Err(e) => return Err(io_said(dir, e)),
        };
    }
    match owner(&at) {
        Some(uid) if ours(uid) => Ok(at),
        Some(uid) => Err(format!(
            "{} belongs to uid {uid}, not to this user (uid {me}); set {STATE_DIR_VAR} to a \
             directory of your own",
            dir.display()
        )),
        None => Err(format!("{}: cannot stat it", dir.display())),
    }
}

/// The owner of an open directory.
fn owner(dir: &OwnedFd) -> Option<u32> {
    rustix::fs::fstat(dir).ok().map(|st| st.st_uid)
}

/// `DIR: the kernel's error`.
fn io_said(dir: &Path, e: Errno) -> String {
    format!("{}: {}", dir.display(), std::io::Error::from(e))
}

/// The state file's bytes (at most 4 KiB), never through a symlink (`ELOOP`).
fn read_state(dir: &OwnedFd) -> Result<Vec<u8>, OpenError> {
    let opened = crate::untrusted::open_at(
        dir,
        Path::new(FILE_NAME),
        crate::untrusted::Want::Record,
        OFlags::NOFOLLOW,
    )?;
    let mut bytes = Vec::with_capacity(256);
    let read = std::fs::File::from(opened.fd)
        .take(4096)
        .read_to_end(&mut bytes);
    read.map_err(|e| {
        OpenError::Os(coldtrace_syscalls::Errno::from_raw(
            e.raw_os_error().unwrap_or(5),
        ))
    })?;
    Ok(bytes)
}

/// Replaces the file `name` in the state directory `dir` with one holding `text`: a new file
/// beside it (`.NAME.PID.tmp`, made with `O_EXCL`, never through a symlink), fsynced, renamed
/// over the old one.
pub fn write_atomically(dir: &OwnedFd, name: &str, text: &str) -> std::io::Result<()> {
    let tmp = format!(".{name}.{}.tmp", std::process::id());
    let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    // Made here with O_EXCL, or not at all: a failure removes only a file this call made.
    let made = rustix::fs::openat(dir, tmp.as_str(), flags, Mode::from_raw_mode(0o600))?;
    let mut file = std::fs::File::from(made);
    let written = (|| {
        file.write_all(text.as_bytes())?;
        file.sync_all()?;
        rustix::fs::renameat(dir, tmp.as_str(), dir, name).map_err(std::io::Error::from)
    })();
    if written.is_err() {
        let _ = rustix::fs::unlinkat(dir, tmp.as_str(), rustix::fs::AtFlags::empty());
    }
    written
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_state_file_follows_the_override_then_xdg_then_home() {
        let os = |s: &str| Some(OsString::from(s));
        assert_eq!(
            state_file(os("/t/s"), os("/x"), os("/h")),
            Ok(PathBuf::from("/t/s/last-boot"))
        );
        assert!(state_file(os(""), os("/x"), os("/h")).is_err(), "off");
        assert_eq!(
            state_file(None, os("/x"), os("/h")),
            Ok(PathBuf::from("/x/coldtrace/last-boot"))
        );
        assert_eq!(
            state_file(None, os("relative"), os("/h")),
            Ok(PathBuf::from("/h/.local/state/coldtrace/last-boot")),
            "a relative XDG_STATE_HOME is ignored, as the spec says"
        );
        assert!(state_file(None, None, None).is_err());
    }

    #[test]
    fn the_state_holds_the_boot_and_the_counts_and_an_older_file_its_boot_alone() {
        let now = CacheHistory {
            uptime_s: Some(660.5),
            drop_pagecache: Some(3),
            drop_slab: Some(4),
            pgsteal_file: Some(7168),
            pgscan_file: None,
        };
        let text = state_text("1a4e1c9d-x", &now);
        assert!(text.ends_with('\n') && text.lines().count() == 1, "{text}");
        assert_eq!(
            parse_state(&text),
            LastBatch {
                boot_id: "1a4e1c9d-x".into(),
                history: Some(now),
            }
        );
        assert_eq!(
            parse_state("1a4e1c9d-x\n"),
            LastBatch {
                boot_id: "1a4e1c9d-x".into(),
                history: None,
            }
        );
        // A damaged file names no boot: the batch is taken as the first, and rewrites it.
        assert!(first_since_boot(Some(&parse_state("{\"boot").boot_id), "b"));
    }

    #[test]
    fn a_batch_is_first_when_the_file_is_missing_or_names_another_boot() {
        assert!(first_since_boot(None, "b"));
        assert!(first_since_boot(Some("a\n"), "b"));
        assert!(!first_since_boot(Some("b\n"), "b"));
    }
}
