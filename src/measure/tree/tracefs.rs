//! Finding tracefs, reading tracepoints' format files (the `sched` ones, the page cache's),
//! and which CPUs are online. tracefs is where the kernel publishes each tracepoint's ID and raw layout; it is
//! normally mounted at `/sys/kernel/tracing` (and appears as `tracing/` in debugfs), but a
//! minimal system may leave it unmounted: then root mounts it there (`nosuid,nodev,noexec`, as
//! systemd does), says so once, and records which mount it made (`mounted.rs`) for
//! `coldtrace cleanup`.
#![forbid(unsafe_code)]

use crate::measure::procfs::ProcFile;
use crate::measure::tree::decode::TRACEPOINTS;
use crate::measure::tree::format::Format;
use std::path::{Path, PathBuf};

/// Where tracefs is mounted by default.
pub const DEFAULT_MOUNT: &str = "/sys/kernel/tracing";

/// The mount points of `/proc/self/mountinfo` text whose file system is `fs_type`, in order
/// (octal escapes such as `\040` decoded).
pub fn mount_points(mountinfo: &str, fs_type: &str) -> Vec<PathBuf> {
    mountinfo
        .lines()
        .filter_map(|line| {
            let (before, after) = line.split_once(" - ")?;
            let mount_point = before.split(' ').nth(4)?;
            (after.split(' ').next()? == fs_type).then(|| PathBuf::from(unescape(mount_point)))
        })
        .collect()
}

/// `\040` → space, as mountinfo escapes space, tab, newline and backslash.
fn unescape(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut k = 0;
    while k < bytes.len() {
        let octal = bytes
            .get(k + 1..k + 4)
            .filter(|d| bytes[k] == b'\\' && d.iter().all(|c| (b'0'..=b'7').contains(c)));
        match octal {
            Some(d) => {
                let value = (d[0] - b'0') * 64 + (d[1] - b'0') * 8 + (d[2] - b'0');
                out.push(value);
                k += 4;
            }
            None => {
                out.push(bytes[k]);
                k += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The directory holding `events/sched/`: a tracefs mount, else debugfs's `tracing/`, else
/// (as root) tracefs newly mounted at [`DEFAULT_MOUNT`]. The second value says it was mounted
/// here. `Err` says why none could be had.
pub fn find_or_mount() -> Result<(PathBuf, bool), String> {
    let mountinfo =
        crate::measure::procfs::read_text("/proc/self/mountinfo", usize::MAX).unwrap_or_default();
    let candidates = mount_points(&mountinfo, "tracefs").into_iter().chain(
        mount_points(&mountinfo, "debugfs")
            .into_iter()
            .map(|d| d.join("tracing")),
    );
    let mut refused = None;
    for dir in candidates {
        let sched = dir.join("events/sched");
        match std::fs::metadata(&sched) {
            Ok(m) if m.is_dir() => return Ok((dir, false)),
            Ok(_) => {}
            Err(e) => {
                let e = std::io::Error::from_raw_os_error(e.raw_os_error().unwrap_or(0));
                refused.get_or_insert(format!(
                    "cannot read {} ({}): the tree's states need root, or CAP_PERFMON and read \
                     access to tracefs",
                    sched.display(),
                    e.kind()
                ));
            }
        }
    }
    if let Some(why) = refused {
        return Err(why);
    }
    use rustix::mount::{mount, MountFlags};
    let flags = MountFlags::NOSUID | MountFlags::NODEV | MountFlags::NOEXEC;
    match mount("nodev", DEFAULT_MOUNT, "tracefs", flags, None) {
        Ok(()) => {
            super::mounted::remember(Path::new(DEFAULT_MOUNT));
            Ok((PathBuf::from(DEFAULT_MOUNT), true))
        }
        Err(e) => Err(format!(
            "tracefs is not mounted, and mounting it at {DEFAULT_MOUNT} failed ({e}; root can \
             mount it)"
        )),
    }
}

/// What coldtrace says, once, after [`find_or_mount`] mounted tracefs at `dir` to read `what`:
/// the mount outlives it. It is left mounted, as systemd mounts it at boot, because unmounting
/// it after the batch would pull it from under any tool that began to use it meanwhile (perf,
/// bpftrace, another batch); `coldtrace cleanup` unmounts it when asked (it was recorded,
/// `mounted.rs`), and `umount` where the state directory is off.
pub fn mounted_note(dir: &Path, what: &str) -> String {
    format!(
        "coldtrace: note: mounted tracefs at {dir} to read {what}; it stays mounted \
         (`coldtrace cleanup` or `umount {dir}` removes it)",
        dir = dir.display()
    )
}

/// The format files of [`TRACEPOINTS`] under `tracing`. `Err` names the file that could not be
/// read or parsed.
pub fn read_formats(tracing: &Path) -> Result<Vec<Format>, String> {
    TRACEPOINTS
        .iter()
        .map(|name| read_format(tracing, "sched", name))
        .collect()
}

/// The format file of the tracepoint `system`/`name` under `tracing`. `Err` names the file
/// that could not be read or parsed.
pub fn read_format(tracing: &Path, system: &str, name: &str) -> Result<Format, String> {
    let path = tracing
        .join("events")
        .join(system)
        .join(name)
        .join("format");
    let text = std::fs::read_to_string(&path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    Format::parse(&text).map_err(|e| format!("{}: {e}", path.display()))
}

/// `/sys/devices/system/cpu/online`, kept open for the batch: the CPUs a source opened its
/// rings on, read again to see whether they changed.
pub struct OnlineCpus(ProcFile);

impl OnlineCpus {
    /// Opens the file (a failed open makes every read `None`).
    pub fn open() -> OnlineCpus {
        OnlineCpus(ProcFile::open("/sys/devices/system/cpu/online"))
    }

    /// The online CPUs, in order; `None` when the file cannot be read or parsed.
    pub fn read(&mut self) -> Option<Vec<u32>> {
        parse_cpu_list(std::str::from_utf8(self.0.read_small()?).ok()?)
    }
}

/// A CPU list as sysfs writes it (`0-3,5,7-8`), in order; `None` when it is not one.
pub fn parse_cpu_list(text: &str) -> Option<Vec<u32>> {
    let mut cpus = Vec::new();
    for part in text.trim().split(',').filter(|p| !p.is_empty()) {
        let (first, last) = part.split_once('-').unwrap_or((part, part));
        let (first, last): (u32, u32) = (first.parse().ok()?, last.parse().ok()?);
        if last < first || last - first > 65_536 {
            return None;
        }
        cpus.extend(first..=last);
    }
    Some(cpus)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tracefs_and_debugfs_mounts_are_found_with_escapes() {
        let mountinfo = "\
22 27 0:21 / /sys rw,nosuid,nodev,noexec,relatime shared:7 - sysfs sysfs rw
33 22 0:29 / /sys/kernel/debug rw,nosuid shared:13 - debugfs debugfs rw
40 22 0:12 / /sys/kernel/tracing rw,nosuid shared:19 - tracefs tracefs rw
41 22 0:12 / /mnt/my\\040trace rw - tracefs nodev rw
";
        assert_eq!(
            mount_points(mountinfo, "tracefs"),
            [
                PathBuf::from("/sys/kernel/tracing"),
                PathBuf::from("/mnt/my trace")
            ]
        );
        assert_eq!(
            mount_points(mountinfo, "debugfs"),
            [PathBuf::from("/sys/kernel/debug")]
        );
        assert!(mount_points("garbage\n- x", "tracefs").is_empty());
    }

    #[test]
    fn cpu_lists() {
        assert_eq!(parse_cpu_list("0-1\n"), Some(vec![0, 1]));
        assert_eq!(parse_cpu_list("0,2-4,7"), Some(vec![0, 2, 3, 4, 7]));
        assert_eq!(parse_cpu_list("3-1"), None);
        assert_eq!(parse_cpu_list("x"), None);
        assert_eq!(parse_cpu_list(""), Some(vec![]));
    }
}
