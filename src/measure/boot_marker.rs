//! What coldtrace knows about the boot, and only that: whether a batch is the first coldtrace
//! batch since the machine booted, from a small state file holding the boot ID of the last
//! batch. It reads and writes that one file; recording the answer is the batch's job.
//!
//! The file is `$COLDTRACE_STATE_DIR/last-boot`, else `$XDG_STATE_HOME/coldtrace/last-boot`,
//! else `~/.local/state/coldtrace/last-boot` — the one file coldtrace writes outside `-o`.
//! `COLDTRACE_STATE_DIR=` (set, empty) turns it off: then nothing is read or written and the
//! answer is unknown. It is compared with `/proc/sys/kernel/random/boot_id` ([proc_sys_kernel(5)]);
//! it does not rely on `/run` being a tmpfs (on this project's machine it is a plain directory on
//! ext4, kept across reboots) nor on `$XDG_RUNTIME_DIR` (removed at logout). The file is
//! replaced atomically: a new file, then [rename(2)] over the old one.
//!
//! [proc_sys_kernel(5)]: https://man7.org/linux/man-pages/man5/proc_sys_kernel.5.html
//! [rename(2)]: https://man7.org/linux/man-pages/man2/rename.2.html
#![forbid(unsafe_code)]

use crate::untrusted::OpenError;
use std::ffi::OsString;
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// The environment variable that chooses the state directory (empty: no state file).
pub const STATE_DIR_VAR: &str = "COLDTRACE_STATE_DIR";
/// The state file's name in its directory.
pub const FILE_NAME: &str = "last-boot";

/// Whether this batch is the first coldtrace batch since boot, as far as coldtrace knows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BootMarker {
    /// `true`: no batch recorded this boot before it; `false`: one did; `None`: unknown.
    pub first_batch_since_boot: Option<bool>,
    /// The state file consulted.
    pub state_file: Option<PathBuf>,
    /// Why the answer is unknown, or why the file could not be updated.
    pub note: Option<String>,
}
crate::serialize_struct!(BootMarker {
    first_batch_since_boot,
    state_file,
    note
});

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

/// Checks the state file against the boot `boot_id` and records this batch's boot in it.
pub fn check_and_mark(boot_id: Option<&str>) -> BootMarker {
    let env = |name: &str| std::env::var_os(name);
    let path = match state_file(env(STATE_DIR_VAR), env("XDG_STATE_HOME"), env("HOME")) {
        Ok(path) => path,
        Err(why) => return unknown(None, why.to_string()),
    };
    let Some(boot_id) = boot_id else {
        return unknown(Some(path), "the boot ID is unreadable".into());
    };
    // The state directory is the user's: a FIFO or a device planted there must neither block
    // nor be read without end (a boot ID is 37 bytes).
    let previous = match crate::untrusted::read_bounded(&path, 4096) {
        Ok(bytes) => Some(String::from_utf8_lossy(&bytes).into_owned()),
        Err(OpenError::Os(e)) if e == coldtrace_syscalls::Errno::NOENT => None,
        Err(e) => return unknown(Some(path.clone()), format!("{}: {e}", path.display())),
    };
    if previous.as_deref().map(str::trim) == Some(boot_id) {
        return BootMarker {
            first_batch_since_boot: Some(false),
            state_file: Some(path),
            note: None,
        };
    }
    // The file names another boot, or none: this batch is the first since boot only if it can
    // say so for the next one. A marker that cannot be written would make every batch "first".
    match write_atomically(&path, boot_id) {
        Ok(()) => BootMarker {
            first_batch_since_boot: Some(true),
            state_file: Some(path),
            note: None,
        },
        Err(e) => {
            let why = format!(
                "cannot update {}: {e}; so no batch of this boot can be told from the first",
                path.display()
            );
            unknown(Some(path), why)
        }
    }
}

fn unknown(state_file: Option<PathBuf>, why: String) -> BootMarker {
    BootMarker {
        first_batch_since_boot: None,
        state_file,
        note: Some(why),
    }
}

/// Replaces `path` with a file holding `boot_id`: a new file beside it (never following a
/// symlink), fsynced, renamed over the old one; the directory is created (0700) if need be.
fn write_atomically(path: &Path, boot_id: &str) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    let tmp = dir.join(format!(".{FILE_NAME}.{}.tmp", std::process::id()));
    // Made here with O_EXCL, or not at all: a failure removes only a file this call made.
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
        .open(&tmp)?;
    let written = (|| {
        file.write_all(format!("{boot_id}\n").as_bytes())?;
        file.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
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
    fn a_batch_is_first_when_the_file_is_missing_or_names_another_boot() {
        assert!(first_since_boot(None, "b"));
        assert!(first_since_boot(Some("a\n"), "b"));
        assert!(!first_since_boot(Some("b\n"), "b"));
    }
}
