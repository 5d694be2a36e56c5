//! System-wide counters around a run, and the finished child's own counters.
//!
//! [`SystemSnapshot`] is read before and after every run from [proc_vmstat(5)] and the PSI files
//! [proc_pressure(5)]; [`SystemDelta`] is the difference. Those figures are **system-wide**:
//! they include every other process on the machine, and serve to tell a quiet run from a
//! disturbed one (swapping, I/O pressure), not to measure the child.
//!
//! [`ChildIo`] ([proc_pid_io(5)]) and [`ChildSched`] ([proc_pid_schedstat(5)]) are read from the
//! child after it exited but before it is reaped (a zombie, after `waitid(WEXITED | WNOWAIT)`).
//! Verified on Linux 6.18 (`tests/counters.rs`): both files stay readable and meaningful for a
//! zombie, but they cover different things. `io` is the whole process **plus the descendants
//! it reaped** (the kernel folds a reaped child's counters into its parent's, like wait4's
//! rusage), and never descendants that were not reaped (orphans, daemons). `schedstat` is the
//! main thread alone: no other threads, no descendants.
//!
//! [proc_vmstat(5)]: https://man7.org/linux/man-pages/man5/proc_vmstat.5.html
//! [proc_pressure(5)]: https://man7.org/linux/man-pages/man5/proc_pressure.5.html
//! [proc_pid_io(5)]: https://man7.org/linux/man-pages/man5/proc_pid_io.5.html
//! [proc_pid_schedstat(5)]: https://man7.org/linux/man-pages/man5/proc_pid_schedstat.5.html
#![forbid(unsafe_code)]

use std::cell::RefCell;

/// Reads a whole (small, /proc) file into `buf`, reusing its allocation. `None` on any error.
fn read_into<'b>(path: &str, buf: &'b mut Vec<u8>) -> Option<&'b [u8]> {
    crate::procfs::read_once(path, buf)
}

thread_local! {
    /// One buffer per thread for the snapshots taken around every run: no allocation after the
    /// first snapshot.
    static BUFFER: RefCell<Vec<u8>> = RefCell::new(Vec::with_capacity(16 * 1024));
}

/// Values of the `/proc/vmstat` counters coldtrace watches.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct VmStat {
    pgmajfault: Option<u64>,
    pgpgin: Option<u64>,
    pgpgout: Option<u64>,
    pswpin: Option<u64>,
    pswpout: Option<u64>,
    workingset_refault_file: Option<u64>,
}

fn parse_vmstat(text: &[u8]) -> VmStat {
    let mut v = VmStat::default();
    for line in text.split(|&b| b == b'\n') {
        let mut words = line.split(|&b| b == b' ');
        let (Some(name), Some(value)) = (words.next(), words.next()) else {
            continue;
        };
        let slot = match name {
            b"pgmajfault" => &mut v.pgmajfault,
            b"pgpgin" => &mut v.pgpgin,
            b"pgpgout" => &mut v.pgpgout,
            b"pswpin" => &mut v.pswpin,
            b"pswpout" => &mut v.pswpout,
            b"workingset_refault_file" => &mut v.workingset_refault_file,
            _ => continue,
        };
        *slot = parse_u64(value);
    }
    v
}

fn parse_u64(bytes: &[u8]) -> Option<u64> {
    std::str::from_utf8(bytes).ok()?.trim().parse().ok()
}

/// The `total=` (µs) of the `some` and `full` lines of a PSI file.
fn parse_psi(text: &[u8]) -> (Option<u64>, Option<u64>) {
    let (mut some, mut full) = (None, None);
    for line in text.split(|&b| b == b'\n') {
        let slot = if line.starts_with(b"some ") {
            &mut some
        } else if line.starts_with(b"full ") {
            &mut full
        } else {
            continue;
        };
        *slot = line
            .split(|&b| b == b' ')
            .find_map(|w| w.strip_prefix(b"total="))
            .and_then(parse_u64);
    }
    (some, full)
}

/// System-wide counters at one instant. Every field is `None` when its file or line is
/// missing (no PSI before Linux 4.20 or with `psi=0`, a counter renamed by the kernel).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SystemSnapshot {
    /// Major page faults, all processes ([proc_vmstat(5)]).
    ///
    /// [proc_vmstat(5)]: https://man7.org/linux/man-pages/man5/proc_vmstat.5.html
    pub pgmajfault: Option<u64>,
    /// KiB paged in from block devices.
    pub pgpgin: Option<u64>,
    /// KiB paged out to block devices.
    pub pgpgout: Option<u64>,
    /// Pages swapped in.
    pub pswpin: Option<u64>,
    /// Pages swapped out.
    pub pswpout: Option<u64>,
    /// File pages read again soon after eviction (cache thrashing).
    pub workingset_refault_file: Option<u64>,
    /// `/proc/pressure/cpu` `some total=`, µs.
    pub psi_cpu_some_us: Option<u64>,
    /// `/proc/pressure/cpu` `full total=`, µs. Always `None`: the kernel defines CPU "full" as
    /// undefined at the system level and prints zeros (or no line before Linux 5.13).
    pub psi_cpu_full_us: Option<u64>,
    /// `/proc/pressure/io` `some total=`, µs.
    pub psi_io_some_us: Option<u64>,
    /// `/proc/pressure/io` `full total=`, µs.
    pub psi_io_full_us: Option<u64>,
    /// `/proc/pressure/memory` `some total=`, µs.
    pub psi_memory_some_us: Option<u64>,
    /// `/proc/pressure/memory` `full total=`, µs.
    pub psi_memory_full_us: Option<u64>,
}
crate::serialize_struct!(SystemSnapshot {
    pgmajfault,
    pgpgin,
    pgpgout,
    pswpin,
    pswpout,
    workingset_refault_file,
    psi_cpu_some_us,
    psi_cpu_full_us,
    psi_io_some_us,
    psi_io_full_us,
    psi_memory_some_us,
    psi_memory_full_us,
});

/// `/proc/vmstat` and `/proc/pressure/*` kept open, for the snapshots around every run
/// (see [`crate::procfs`]: one `pread` pass per file instead of open/read/close).
pub struct SystemSampler {
    vmstat: crate::procfs::ProcFile,
    cpu: crate::procfs::ProcFile,
    io: crate::procfs::ProcFile,
    memory: crate::procfs::ProcFile,
}

impl Default for SystemSampler {
    fn default() -> Self {
        use crate::procfs::ProcFile;
        SystemSampler {
            vmstat: ProcFile::open("/proc/vmstat"),
            cpu: ProcFile::open("/proc/pressure/cpu"),
            io: ProcFile::open("/proc/pressure/io"),
            memory: ProcFile::open("/proc/pressure/memory"),
        }
    }
}

impl SystemSampler {
    /// A snapshot, as [`SystemSnapshot::read`] takes it.
    pub fn sample(&mut self) -> SystemSnapshot {
        let vm = self.vmstat.read().map(parse_vmstat).unwrap_or_default();
        let (psi_cpu_some_us, _cpu_full) = self.cpu.read().map(parse_psi).unwrap_or_default();
        let (psi_io_some_us, psi_io_full_us) = self.io.read().map(parse_psi).unwrap_or_default();
        let (psi_memory_some_us, psi_memory_full_us) =
            self.memory.read().map(parse_psi).unwrap_or_default();
        SystemSnapshot::from_parts(
            vm,
            psi_cpu_some_us,
            psi_io_some_us,
            psi_io_full_us,
            psi_memory_some_us,
            psi_memory_full_us,
        )
    }
}

/// Runs `f` with the per-thread read buffer (a fresh one if it is already in use).
fn with_buffer<T>(f: impl FnOnce(&mut Vec<u8>) -> T) -> T {
    BUFFER.with(|buf| match buf.try_borrow_mut() {
        Ok(mut buf) => f(&mut buf),
        Err(_) => f(&mut Vec::new()),
    })
}

impl SystemSnapshot {
    /// Reads `/proc/vmstat` and `/proc/pressure/{cpu,io,memory}`, one read pass per file into a
    /// reused per-thread buffer. Never fails; what cannot be read is `None`.
    pub fn read() -> SystemSnapshot {
        BUFFER.with(|buf| match buf.try_borrow_mut() {
            Ok(mut buf) => SystemSnapshot::read_with(&mut buf),
            Err(_) => SystemSnapshot::read_with(&mut Vec::new()),
        })
    }

    /// As [`SystemSnapshot::read`], with a caller-owned buffer.
    pub fn read_with(buf: &mut Vec<u8>) -> SystemSnapshot {
        let vm = read_into("/proc/vmstat", buf)
            .map(parse_vmstat)
            .unwrap_or_default();
        let (psi_cpu_some_us, _cpu_full) = read_into("/proc/pressure/cpu", buf)
            .map(parse_psi)
            .unwrap_or_default();
        let (psi_io_some_us, psi_io_full_us) = read_into("/proc/pressure/io", buf)
            .map(parse_psi)
            .unwrap_or_default();
        let (psi_memory_some_us, psi_memory_full_us) = read_into("/proc/pressure/memory", buf)
            .map(parse_psi)
            .unwrap_or_default();
        SystemSnapshot::from_parts(
            vm,
            psi_cpu_some_us,
            psi_io_some_us,
            psi_io_full_us,
            psi_memory_some_us,
            psi_memory_full_us,
        )
    }

    fn from_parts(
        vm: VmStat,
        psi_cpu_some_us: Option<u64>,
        psi_io_some_us: Option<u64>,
        psi_io_full_us: Option<u64>,
        psi_memory_some_us: Option<u64>,
        psi_memory_full_us: Option<u64>,
    ) -> SystemSnapshot {
        SystemSnapshot {
            pgmajfault: vm.pgmajfault,
            pgpgin: vm.pgpgin,
            pgpgout: vm.pgpgout,
            pswpin: vm.pswpin,
            pswpout: vm.pswpout,
            workingset_refault_file: vm.workingset_refault_file,
            psi_cpu_some_us,
            // Undefined at the system level (kernel/sched/psi.c prints 0): not a measurement.
            psi_cpu_full_us: None,
            psi_io_some_us,
            psi_io_full_us,
            psi_memory_some_us,
            psi_memory_full_us,
        }
    }
}

/// The change of the system-wide counters over a run: **system-wide**, every process on the
/// machine contributes, not only the child. Each field is the saturating difference, `None`
/// when either snapshot lacks it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SystemDelta {
    /// Major page faults, system-wide.
    pub pgmajfault: Option<u64>,
    /// KiB paged in, system-wide.
    pub pgpgin: Option<u64>,
    /// KiB paged out, system-wide.
    pub pgpgout: Option<u64>,
    /// Pages swapped in, system-wide.
    pub pswpin: Option<u64>,
    /// Pages swapped out, system-wide.
    pub pswpout: Option<u64>,
    /// File refaults, system-wide.
    pub workingset_refault_file: Option<u64>,
    /// Time some task waited for CPU, µs.
    pub psi_cpu_some_us: Option<u64>,
    /// Always `None` (undefined at the system level).
    pub psi_cpu_full_us: Option<u64>,
    /// Time some task waited for I/O, µs.
    pub psi_io_some_us: Option<u64>,
    /// Time all non-idle tasks waited for I/O, µs.
    pub psi_io_full_us: Option<u64>,
    /// Time some task waited for memory (reclaim, refaults), µs.
    pub psi_memory_some_us: Option<u64>,
    /// Time all non-idle tasks waited for memory, µs.
    pub psi_memory_full_us: Option<u64>,
}
crate::serialize_struct!(SystemDelta {
    pgmajfault,
    pgpgin,
    pgpgout,
    pswpin,
    pswpout,
    workingset_refault_file,
    psi_cpu_some_us,
    psi_cpu_full_us,
    psi_io_some_us,
    psi_io_full_us,
    psi_memory_some_us,
    psi_memory_full_us,
});

impl SystemDelta {
    /// `after − before`, field by field.
    pub fn between(before: &SystemSnapshot, after: &SystemSnapshot) -> SystemDelta {
        let d = |b: Option<u64>, a: Option<u64>| Some(a?.saturating_sub(b?));
        SystemDelta {
            pgmajfault: d(before.pgmajfault, after.pgmajfault),
            pgpgin: d(before.pgpgin, after.pgpgin),
            pgpgout: d(before.pgpgout, after.pgpgout),
            pswpin: d(before.pswpin, after.pswpin),
            pswpout: d(before.pswpout, after.pswpout),
            workingset_refault_file: d(
                before.workingset_refault_file,
                after.workingset_refault_file,
            ),
            psi_cpu_some_us: d(before.psi_cpu_some_us, after.psi_cpu_some_us),
            psi_cpu_full_us: d(before.psi_cpu_full_us, after.psi_cpu_full_us),
            psi_io_some_us: d(before.psi_io_some_us, after.psi_io_some_us),
            psi_io_full_us: d(before.psi_io_full_us, after.psi_io_full_us),
            psi_memory_some_us: d(before.psi_memory_some_us, after.psi_memory_some_us),
            psi_memory_full_us: d(before.psi_memory_full_us, after.psi_memory_full_us),
        }
    }
}

/// The child's own I/O counters from `/proc/PID/io` ([proc_pid_io(5)]), read from the zombie.
///
/// They cover the child process (all its threads) **and the descendants it waited for**: the
/// kernel adds a reaped child's counters to its parent's (`wait_task_zombie`), so a shell's
/// zombie includes the commands it ran; descendants that were not reaped (daemonised,
/// orphaned, or still running) are missing. `read_bytes`/`write_bytes` are storage I/O (cache
/// misses, and pages dirtied — counted before writeback); `rchar`/`wchar` are bytes passed to
/// read/write-like calls, cache hits included. `None` per field when the line is absent.
///
/// [proc_pid_io(5)]: https://man7.org/linux/man-pages/man5/proc_pid_io.5.html
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ChildIo {
    /// Bytes the child caused to be fetched from storage.
    pub read_bytes: Option<u64>,
    /// Bytes the child caused to be sent to storage (counted when pages are dirtied).
    pub write_bytes: Option<u64>,
    /// Bytes returned by read(2)-like calls, including cache hits, pipes and ttys.
    pub rchar: Option<u64>,
    /// Bytes passed to write(2)-like calls.
    pub wchar: Option<u64>,
    /// Number of read-like system calls.
    pub syscr: Option<u64>,
    /// Number of write-like system calls.
    pub syscw: Option<u64>,
}
crate::serialize_struct!(ChildIo {
    read_bytes,
    write_bytes,
    rchar,
    wchar,
    syscr,
    syscw
});

impl ChildIo {
    /// Reads `/proc/PID/io`. `None` when the file cannot be read (no such process, no task I/O
    /// accounting, or not permitted: it needs ptrace-read access).
    pub fn read(pid: i32) -> Option<ChildIo> {
        with_buffer(|buf| read_into(&format!("/proc/{pid}/io"), buf).map(ChildIo::parse))
    }

    /// Parses the text of `/proc/PID/io`.
    pub fn parse(text: &[u8]) -> ChildIo {
        let mut io = ChildIo::default();
        for line in text.split(|&b| b == b'\n') {
            let Some(colon) = line.iter().position(|&b| b == b':') else {
                continue;
            };
            let slot = match &line[..colon] {
                b"read_bytes" => &mut io.read_bytes,
                b"write_bytes" => &mut io.write_bytes,
                b"rchar" => &mut io.rchar,
                b"wchar" => &mut io.wchar,
                b"syscr" => &mut io.syscr,
                b"syscw" => &mut io.syscw,
                _ => continue,
            };
            *slot = parse_u64(&line[colon + 1..]);
        }
        io
    }
}

/// The child's scheduler statistics from `/proc/PID/schedstat` ([proc_pid_schedstat(5)]), read
/// from the zombie.
///
/// This is the **main thread alone**: other threads (already released in a zombie) and all
/// descendants are missing. For a single-threaded child `on_cpu_ns` equals wait4's user + sys
/// (measured to the microsecond on Linux 6.18); for a multi-threaded one it is a lower bound,
/// and `runqueue_wait_ns` is the main thread's wait only.
///
/// [proc_pid_schedstat(5)]: https://man7.org/linux/man-pages/man5/proc_pid_schedstat.5.html
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ChildSched {
    /// Time spent on a CPU, ns (precise, unlike the tick-sampled user/sys of rusage).
    pub on_cpu_ns: Option<u64>,
    /// Time spent runnable but waiting for a CPU, ns.
    pub runqueue_wait_ns: Option<u64>,
    /// Number of times it was scheduled onto a CPU.
    pub timeslices: Option<u64>,
}
crate::serialize_struct!(ChildSched {
    on_cpu_ns,
    runqueue_wait_ns,
    timeslices
});

impl ChildSched {
    /// Reads `/proc/PID/schedstat`. `None` when it cannot be read (no such process, or a kernel
    /// without `CONFIG_SCHED_INFO`).
    pub fn read(pid: i32) -> Option<ChildSched> {
        with_buffer(|buf| read_into(&format!("/proc/{pid}/schedstat"), buf).map(ChildSched::parse))
    }

    /// Parses the three numbers of `/proc/PID/schedstat`.
    pub fn parse(text: &[u8]) -> ChildSched {
        let mut fields = text
            .split(|b| b.is_ascii_whitespace())
            .filter(|w| !w.is_empty());
        let mut next = || fields.next().and_then(parse_u64);
        ChildSched {
            on_cpu_ns: next(),
            runqueue_wait_ns: next(),
            timeslices: next(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn psi_lines() {
        let text = b"some avg10=1.00 avg60=0.50 avg300=0.10 total=12939573\n\
                     full avg10=0.00 avg60=0.00 avg300=0.00 total=42\n";
        assert_eq!(parse_psi(text), (Some(12939573), Some(42)));
        assert_eq!(
            parse_psi(b"some avg10=0.00 avg60=0.00 avg300=0.00 total=7\n"),
            (Some(7), None)
        );
        assert_eq!(parse_psi(b""), (None, None));
    }

    #[test]
    fn vmstat_lines() {
        let v = parse_vmstat(b"nr_free_pages 5\npgpgin 10\npgmajfault 3\npswpin x\n");
        assert_eq!(v.pgpgin, Some(10));
        assert_eq!(v.pgmajfault, Some(3));
        assert_eq!(v.pswpin, None);
        assert_eq!(v.workingset_refault_file, None);
    }

    #[test]
    fn delta_saturates_and_propagates_none() {
        let before = SystemSnapshot {
            pgmajfault: Some(10),
            pgpgin: Some(5),
            ..Default::default()
        };
        let after = SystemSnapshot {
            pgmajfault: Some(15),
            pgpgin: Some(3),
            ..Default::default()
        };
        let d = SystemDelta::between(&before, &after);
        assert_eq!(d.pgmajfault, Some(5));
        assert_eq!(d.pgpgin, Some(0));
        assert_eq!(d.pswpin, None);
    }

    #[test]
    fn pid_files() {
        let io = ChildIo::parse(
            b"rchar: 100\nwchar: 20\nsyscr: 3\nsyscw: 2\nread_bytes: 4096\nwrite_bytes: 0\n\
              cancelled_write_bytes: 0\n",
        );
        assert_eq!(io.rchar, Some(100));
        assert_eq!(io.read_bytes, Some(4096));
        assert_eq!(io.write_bytes, Some(0));
        let s = ChildSched::parse(b"123 456 7\n");
        assert_eq!(
            (s.on_cpu_ns, s.runqueue_wait_ns, s.timeslices),
            (Some(123), Some(456), Some(7))
        );
        assert_eq!(ChildSched::parse(b"").on_cpu_ns, None);
    }
}
