//! The tracefs mount coldtrace made, remembered: when a batch mounts tracefs (no tracefs was
//! mounted, [`super::tracefs::find_or_mount`]), it writes which mount that is into the state
//! directory (`tracefs-mount`, beside `last-boot`), so that `coldtrace cleanup` unmounts that
//! mount and no other — never one mounted at boot, by hand or by another tool.
//!
//! A mount is named by its mount ID ([statx(2)] `STATX_MNT_ID_UNIQUE`, Linux ≥ 6.8: never
//! reused within a boot; else `STATX_MNT_ID`, which the kernel hands out again once a mount is
//! gone, so a mount made at the same place after coldtrace's was removed could carry it), the
//! boot it was made in, and the mount namespace it was made in (a mount in a namespace of
//! `unshare -m` is not seen from outside it). Only an exact match on all of them, at the path
//! recorded and at that mount's root, is coldtrace's.
//!
//! [statx(2)]: https://man7.org/linux/man-pages/man2/statx.2.html
#![forbid(unsafe_code)]

use crate::measure::boot_marker;
use std::path::{Path, PathBuf};

/// The record's name in the state directory.
pub const RECORD_NAME: &str = "tracefs-mount";
/// `STATX_MNT_ID` (Linux ≥ 5.8).
const STATX_MNT_ID: u32 = 0x1000;
/// `STATX_MNT_ID_UNIQUE` (Linux ≥ 6.8).
const STATX_MNT_ID_UNIQUE: u32 = 0x4000;
/// `STATX_ATTR_MOUNT_ROOT`: the path is the root of a mount.
const STATX_ATTR_MOUNT_ROOT: u64 = 0x2000;

/// Which mount is at a path, and where.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MountAt {
    /// The mount point.
    pub path: PathBuf,
    /// Its mount ID.
    pub mount_id: u64,
    /// Whether that is the unique ID (`STATX_MNT_ID_UNIQUE`) or one the kernel reuses.
    pub unique: bool,
    /// The boot it was made in (`/proc/sys/kernel/random/boot_id`).
    pub boot_id: String,
    /// The inode of `/proc/self/ns/mnt` where it was made.
    pub mnt_ns: u64,
}

impl MountAt {
    /// The mount whose root is `path` now, seen from this process (`None`: nothing is
    /// mounted at `path` itself, or it cannot be told).
    pub fn now(path: &Path) -> Option<MountAt> {
        use rustix::fs::{statx, AtFlags, StatxFlags, CWD};
        let asked = StatxFlags::from_bits_retain(STATX_MNT_ID_UNIQUE);
        let st = statx(CWD, path, AtFlags::SYMLINK_NOFOLLOW, asked).ok()?;
        if st.stx_attributes.bits() & STATX_ATTR_MOUNT_ROOT == 0 {
            return None;
        }
        let unique = st.stx_mask & STATX_MNT_ID_UNIQUE != 0;
        if !unique && st.stx_mask & STATX_MNT_ID == 0 {
            return None;
        }
        Some(MountAt {
            path: path.to_path_buf(),
            mount_id: st.stx_mnt_id,
            unique,
            boot_id: crate::measure::context::read_boot_id()?,
            mnt_ns: rustix::fs::stat("/proc/self/ns/mnt").ok()?.st_ino,
        })
    }

    /// The record's text: one line of JSON.
    pub fn text(&self) -> String {
        let json = serde_json::json!({
            "path": self.path,
            "mount_id": self.mount_id,
            "unique": self.unique,
            "boot_id": self.boot_id,
            "mnt_ns": self.mnt_ns,
        });
        format!("{json}\n")
    }

    /// The mount a record's text names (`None`: not a record).
    pub fn parse(text: &str) -> Option<MountAt> {
        let json: serde_json::Value = serde_json::from_str(text.trim()).ok()?;
        Some(MountAt {
            path: PathBuf::from(json.get("path")?.as_str()?),
            mount_id: json.get("mount_id")?.as_u64()?,
            unique: json.get("unique")?.as_bool()?,
            boot_id: json.get("boot_id")?.as_str()?.to_string(),
            mnt_ns: json.get("mnt_ns")?.as_u64()?,
        })
    }
}

/// Where a recorded mount stands now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Standing {
    /// The very mount coldtrace made: it may be unmounted.
    Ours,
    /// Made in an earlier boot: gone with it.
    EarlierBoot,
    /// Made in another mount namespace (gone, or out of sight from here).
    OtherNamespace,
    /// Nothing is mounted at its path any more.
    Gone,
    /// Another mount is at its path (coldtrace's was unmounted, and this one made since; or
    /// it was mounted over).
    Replaced,
}

/// Where the mount `recorded` stands, given the mount at its path now (`None`: none).
pub fn standing(recorded: &MountAt, now: Option<&MountAt>) -> Standing {
    let Some(now) = now else {
        return Standing::Gone;
    };
    if now.boot_id != recorded.boot_id {
        Standing::EarlierBoot
    } else if now.mnt_ns != recorded.mnt_ns {
        Standing::OtherNamespace
    } else if now.mount_id != recorded.mount_id || now.unique != recorded.unique {
        Standing::Replaced
    } else {
        Standing::Ours
    }
}

/// Records in the state directory that coldtrace mounted tracefs at `path`. Nothing where the
/// state is off or cannot be written: `coldtrace cleanup` then leaves that mount, and says
/// it cannot tell it is coldtrace's.
pub fn remember(path: &Path) {
    let (Ok(dir), Some(mount)) = (boot_marker::state_dir(), MountAt::now(path)) else {
        return;
    };
    if let Ok(dir) = boot_marker::open_state_dir(&dir) {
        let _ = boot_marker::write_atomically(&dir, RECORD_NAME, &mount.text());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(mount_id: u64, boot: &str, ns: u64) -> MountAt {
        MountAt {
            path: PathBuf::from("/sys/kernel/tracing"),
            mount_id,
            unique: true,
            boot_id: boot.into(),
            mnt_ns: ns,
        }
    }

    #[test]
    fn a_record_reads_back_and_only_the_same_mount_is_ours() {
        let made = at(7, "b1", 40);
        assert_eq!(MountAt::parse(&made.text()), Some(made.clone()));
        assert_eq!(MountAt::parse("{\"path\":\"/x\"}"), None);
        assert_eq!(standing(&made, Some(&made)), Standing::Ours);
        assert_eq!(standing(&made, None), Standing::Gone);
        assert_eq!(standing(&made, Some(&at(8, "b1", 40))), Standing::Replaced);
        assert_eq!(
            standing(&made, Some(&at(7, "b2", 40))),
            Standing::EarlierBoot
        );
        let elsewhere = at(7, "b1", 41);
        assert_eq!(standing(&made, Some(&elsewhere)), Standing::OtherNamespace);
        let reused = MountAt {
            unique: false,
            ..made.clone()
        };
        assert_eq!(standing(&made, Some(&reused)), Standing::Replaced);
    }
}
