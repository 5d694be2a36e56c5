//! The runner's own memory: the floor under a vfork child's `max_rss_kib`.
//! It resets and reads coldtrace's own high-water RSS, or reads the spawner's resident set; it
//! never looks at the child.
//!
//! A child started by the spawner (`measure/spawner.rs`) inherits the spawner's address space
//! at `execve`, not coldtrace's: its floor is the spawner's exact resident set
//! (`/proc/PID/statm`, read right after the child's `execve`), a few dozen KiB. The spawner's
//! memory never shrinks, so the kernel's approximate figure that the fold reads never exceeds
//! that exact one.
//!
//! At `execve` the kernel folds the old address space's high-water RSS into the child's
//! `ru_maxrss` (`exec_mmap` → `setmax_mm_hiwater_rss`); after a vfork-style spawn that address
//! space is coldtrace's. So before every spawn coldtrace resets its own high-water mark to its
//! current RSS (`echo 5 > /proc/self/clear_refs`, [proc_pid_clear_refs(5)]) and reads the floor
//! (`VmHWM`/`VmRSS` from `/proc/self/status`, [proc_pid_status(5)]). A child whose max RSS is not
//! above that floor is reported as "at or below the floor", not as its own peak.
//!
//! [proc_pid_clear_refs(5)]: https://man7.org/linux/man-pages/man5/proc_pid_clear_refs.5.html
//! [proc_pid_status(5)]: https://man7.org/linux/man-pages/man5/proc_pid_status.5.html
#![forbid(unsafe_code)]

use std::fs::File;
use std::io::Write;

/// Which process cloned the child: whose memory is the floor.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SpawnedBy {
    /// coldtrace itself (`--minimal`, or where the spawner cannot run).
    #[default]
    Coldtrace,
    /// The spawner.
    Spawner,
}

impl SpawnedBy {
    /// The name in records.
    pub fn name(self) -> &'static str {
        match self {
            SpawnedBy::Coldtrace => "coldtrace",
            SpawnedBy::Spawner => "spawner",
        }
    }
}

impl serde::Serialize for SpawnedBy {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

/// What the runner's memory was when the child was started.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FloorReading {
    /// Who cloned the child: coldtrace, or the spawner.
    pub spawned_by: SpawnedBy,
    /// The cloning process's resident set, KiB: coldtrace's right before the spawn (`VmRSS`),
    /// or the spawner's right after the child's `execve` (`statm`).
    pub vm_rss_kib: Option<u64>,
    /// Its high-water RSS, KiB (`VmHWM`; the spawner's equals its resident set): the floor.
    pub vm_hwm_kib: Option<u64>,
    /// Whether coldtrace's high-water mark was reset first (false where clear_refs is not
    /// writable, and for the spawner, whose memory never shrinks).
    pub hwm_reset: bool,
}

crate::serialize_struct!(FloorReading {
    spawned_by,
    vm_rss_kib,
    vm_hwm_kib,
    hwm_reset
});

impl FloorReading {
    /// The floor a child's max RSS can inherit: `VmHWM` (which equals `VmRSS` after a reset).
    pub fn floor_kib(&self) -> Option<u64> {
        self.vm_hwm_kib.or(self.vm_rss_kib)
    }

    /// Whether `max_rss_kib` is at or below this floor (so it may be the runner's, not the
    /// child's). `None` when either is unknown.
    pub fn at_floor(&self, max_rss_kib: Option<u64>) -> Option<bool> {
        Some(max_rss_kib? <= self.floor_kib()?)
    }
}

/// Keeps `/proc/self/clear_refs` open so that resetting costs one `write(2)` per run.
///
/// Right after a reset the high-water mark *is* the resident set (the kernel sets it to the
/// current RSS, and nothing runs in between), so the floor is read from the short
/// `/proc/self/statm` ([proc_pid_statm(5)], ~20 bytes, 2 µs here) instead of `status`
/// (~1.4 KiB, 11 µs here); without a reset the lifetime `VmHWM` from `status` is the floor.
///
/// [proc_pid_statm(5)]: https://man7.org/linux/man-pages/man5/proc_pid_statm.5.html
pub struct Floor {
    clear_refs: Option<File>,
    unavailable_reason: Option<String>,
    status: crate::measure::procfs::ProcFile,
    statm: crate::measure::procfs::ProcFile,
    page_kib: u64,
}

impl Floor {
    /// Opens `/proc/self/clear_refs` for writing (some containers forbid it).
    pub fn open() -> Floor {
        let (clear_refs, unavailable_reason) =
            match crate::measure::procfs::open_for_writing("/proc/self/clear_refs") {
                Ok(fd) => (Some(File::from(fd)), None),
                Err(e) => (
                    None,
                    Some(format!(
                        "/proc/self/clear_refs is not writable ({})",
                        std::io::Error::from(e)
                    )),
                ),
            };
        Floor {
            clear_refs,
            unavailable_reason,
            status: crate::measure::procfs::ProcFile::open("/proc/self/status"),
            statm: crate::measure::procfs::ProcFile::open("/proc/self/statm"),
            page_kib: (rustix::param::page_size() / 1024) as u64,
        }
    }

    /// Why the high-water mark cannot be reset, if it cannot (say it once, then record it).
    pub fn unavailable_reason(&self) -> Option<&str> {
        self.unavailable_reason.as_deref()
    }

    /// Resets the high-water mark to the current RSS (where possible) and reads the floor.
    pub fn reset_and_read(&mut self) -> FloorReading {
        let hwm_reset = match &mut self.clear_refs {
            Some(f) => f.write_all(b"5").is_ok(),
            None => false,
        };
        if hwm_reset {
            let resident = self.statm.read_small().and_then(statm_resident_pages);
            if let Some(pages) = resident {
                let kib = pages * self.page_kib;
                return FloorReading {
                    vm_rss_kib: Some(kib),
                    vm_hwm_kib: Some(kib),
                    hwm_reset,
                    ..FloorReading::default()
                };
            }
        }
        let Some(status) = self.status.read_small() else {
            return FloorReading {
                hwm_reset,
                ..FloorReading::default()
            };
        };
        FloorReading {
            vm_rss_kib: status_field_kib(status, b"VmRSS:"),
            vm_hwm_kib: status_field_kib(status, b"VmHWM:"),
            hwm_reset,
            ..FloorReading::default()
        }
    }
}

/// The second field of `/proc/PID/statm`: resident pages.
pub fn statm_resident_pages(statm: &[u8]) -> Option<u64> {
    let field = statm.split(|&b| b == b' ').nth(1)?;
    crate::measure::procfs::parse_u64(field)
}

/// Finds `Key:   1234 kB` in `/proc/PID/status` text.
pub fn status_field_kib(status: &[u8], key: &[u8]) -> Option<u64> {
    let line = status
        .split(|&b| b == b'\n')
        .find(|line| line.starts_with(key))?;
    let text = std::str::from_utf8(&line[key.len()..]).ok()?;
    text.trim().trim_end_matches("kB").trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_status_fields() {
        let text = b"Name:\tx\nVmHWM:\t    1234 kB\nVmRSS:\t  1000 kB\n";
        assert_eq!(status_field_kib(text, b"VmHWM:"), Some(1234));
        assert_eq!(status_field_kib(text, b"VmRSS:"), Some(1000));
        assert_eq!(status_field_kib(text, b"VmSwap:"), None);
    }

    #[test]
    fn reset_brings_the_high_water_mark_down() {
        let mut floor = Floor::open();
        let big: Vec<u8> = vec![1; 64 << 20];
        let grown = floor.reset_and_read();
        drop(big);
        let after = floor.reset_and_read();
        if floor.unavailable_reason().is_none() {
            assert!(after.hwm_reset);
            assert!(after.vm_hwm_kib.unwrap() + 32 * 1024 < grown.vm_hwm_kib.unwrap());
        } else {
            assert!(!after.hwm_reset);
        }
    }

    #[test]
    fn the_floor_after_a_reset_is_the_resident_set_that_status_shows() {
        let mut floor = Floor::open();
        if floor.unavailable_reason().is_some() {
            return assert!(!floor.reset_and_read().hwm_reset);
        }
        // The test harness's other threads share this process's resident set and may allocate
        // or free megabytes at any moment (a loaded machine stretches the moment between two
        // reads): compare only a reset and read that `status` shows the same resident set
        // before and after, which nothing else moved in between.
        let mut status = crate::measure::procfs::ProcFile::open("/proc/self/status");
        let vm = |status: &mut crate::measure::procfs::ProcFile| {
            let text = status.read().unwrap();
            (
                status_field_kib(text, b"VmRSS:").unwrap(),
                status_field_kib(text, b"VmHWM:").unwrap(),
            )
        };
        let (floor_kib, rss, hwm) = (0..10_000)
            .find_map(|_| {
                let (before, _) = vm(&mut status);
                let fast = floor.reset_and_read();
                let (rss, hwm) = vm(&mut status);
                (before == rss).then(|| (fast.vm_hwm_kib.unwrap(), rss, hwm))
            })
            .expect("the resident set held still for one reset and read in 10,000 tries");
        // Pages touched and given back between the two reads escape the check: a few at most.
        assert!(
            floor_kib.abs_diff(rss) <= 256,
            "statm {floor_kib} vs VmRSS {rss}"
        );
        assert!(floor_kib <= hwm + 256, "statm {floor_kib} vs VmHWM {hwm}");
        assert_eq!(statm_resident_pages(b"100 25 10 1 0 50 0\n"), Some(25));
        assert_eq!(statm_resident_pages(b"100"), None);
    }

    #[test]
    fn at_floor_compares_with_the_high_water_mark() {
        let r = FloorReading {
            vm_rss_kib: Some(900),
            vm_hwm_kib: Some(1000),
            hwm_reset: true,
            ..FloorReading::default()
        };
        assert_eq!(r.at_floor(Some(1000)), Some(true));
        assert_eq!(r.at_floor(Some(1001)), Some(false));
        assert_eq!(r.at_floor(None), None);
    }
}
