//! System-wide counters around a run: [`SystemSnapshot`] before and after, [`SystemDelta`] between.
//! Everything here is system-wide (every process on the machine); nothing is the child's own.
//!
//! Read from [proc_vmstat(5)] and the PSI files [proc_pressure(5)]; the figures serve to tell a
//! quiet run from a disturbed one (swapping, I/O pressure), not to measure the child. The child's
//! own counters are in [`super::zombie`].
//!
//! [proc_vmstat(5)]: https://man7.org/linux/man-pages/man5/proc_vmstat.5.html
//! [proc_pressure(5)]: https://man7.org/linux/man-pages/man5/proc_pressure.5.html
#![forbid(unsafe_code)]

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

/// The `/proc/vmstat` counters [`parse_vmstat`] reads.
const VMSTAT_NAMES: [&[u8]; 6] = [
    b"pgmajfault",
    b"pgpgin",
    b"pgpgout",
    b"pswpin",
    b"pswpout",
    b"workingset_refault_file",
];

impl VmStat {
    /// Whether every counter was found.
    fn complete(&self) -> bool {
        [
            self.pgmajfault,
            self.pgpgin,
            self.pgpgout,
            self.pswpin,
            self.pswpout,
            self.workingset_refault_file,
        ]
        .iter()
        .all(Option::is_some)
    }
}

/// The watched counters of `/proc/vmstat` text ("name value" lines). Read after every run, so
/// written as one pass over the bytes: only lines starting with `p` or `w` can be watched
/// counters, and a plain run of digits is read without going through `str`. The iterator
/// version (kept as the tests' reference) was 2.5 % of the default mode's samples of
/// coldtrace's own CPU time in `perf`; this one is 1.4 %.
fn parse_vmstat(text: &[u8]) -> VmStat {
    let mut v = VmStat::default();
    let mut rest = text;
    while !rest.is_empty() {
        let end = rest.iter().position(|&b| b == b'\n').unwrap_or(rest.len());
        let line = &rest[..end];
        rest = rest.get(end + 1..).unwrap_or_default();
        if !matches!(line.first(), Some(b'p' | b'w')) {
            continue;
        }
        let Some(space) = line.iter().position(|&b| b == b' ') else {
            continue;
        };
        let slot = match &line[..space] {
            b"pgmajfault" => &mut v.pgmajfault,
            b"pgpgin" => &mut v.pgpgin,
            b"pgpgout" => &mut v.pgpgout,
            b"pswpin" => &mut v.pswpin,
            b"pswpout" => &mut v.pswpout,
            b"workingset_refault_file" => &mut v.workingset_refault_file,
            _ => continue,
        };
        let value = &line[space + 1..];
        let value = value.split(|&b| b == b' ').next().unwrap_or_default();
        *slot = plain_digits(value).or_else(|| parse_u64(value));
    }
    v
}

/// A non-empty run of ASCII digits that fits in a `u64`; `None` for anything else (which
/// [`parse_u64`] then judges).
fn plain_digits(bytes: &[u8]) -> Option<u64> {
    if bytes.is_empty() {
        return None;
    }
    bytes.iter().try_fold(0u64, |n, &b| {
        let digit = b.checked_sub(b'0').filter(|d| *d <= 9)?;
        n.checked_mul(10)?.checked_add(u64::from(digit))
    })
}

use crate::measure::procfs::parse_u64;

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
/// (see [`crate::measure::procfs`]: one `pread` per file instead of open/read/close).
///
/// Two savings, both measured in `tests/bench/compare.out.md`:
/// - `/proc/vmstat` is ~4 KiB of text printed afresh on every read, and reading it costs about
///   what it prints; the counters coldtrace uses end about half-way. The first read is whole
///   and learns where the last of them ends; later reads ask for that much plus a margin for
///   growing numbers, and read the whole file again whenever a counter is missing.
/// - A run's "after" snapshot is kept ([`SystemSampler::after_run`]) and serves as the next
///   run's "before" ([`SystemSampler::before_run`]) unless something that could move a
///   system-wide counter happened in between — a hook command, a cold action, a walk of the
///   watched files, a write of run artifacts — which calls [`SystemSampler::forget`]. What is
///   left in between is coldtrace's own bookkeeping (a record line appended, the progress
///   line), and the delta then spans it: [`SystemDelta::window_ns`] says how long the window
///   was.
pub struct SystemSampler {
    vmstat: crate::measure::procfs::ProcFile,
    cpu: crate::measure::procfs::ProcFile,
    io: crate::measure::procfs::ProcFile,
    memory: crate::measure::procfs::ProcFile,
    /// How many bytes of `/proc/vmstat` hold every counter used (0: not learned yet).
    vmstat_prefix: usize,
    /// The last run's "after" snapshot and when it was taken, while nothing has happened since.
    carried: Option<(SystemSnapshot, u64)>,
}

/// Bytes read past the end of the last counter used: room for counters that grew digits.
/// The kernel formats every line it is asked for, ~0.6 µs per 100 bytes here (2026-12-06,
/// 2-CPU AMD EPYC VM); 64 bytes is 64 more digits among the ~100 lines before the last
/// counter, more than a batch adds, and a counter pushed out of the prefix is never misread:
/// the prefix is learned again from a whole read.
const VMSTAT_MARGIN: usize = 64;

impl Default for SystemSampler {
    fn default() -> Self {
        use crate::measure::procfs::ProcFile;
        SystemSampler {
            vmstat: ProcFile::open("/proc/vmstat"),
            cpu: ProcFile::open("/proc/pressure/cpu"),
            io: ProcFile::open("/proc/pressure/io"),
            memory: ProcFile::open("/proc/pressure/memory"),
            vmstat_prefix: 0,
            carried: None,
        }
    }
}

impl SystemSampler {
    /// A snapshot now.
    pub fn sample(&mut self) -> SystemSnapshot {
        let vm = self.vmstat();
        let (psi_cpu_some_us, _cpu_full) = self.cpu.read_small().map(parse_psi).unwrap_or_default();
        let (psi_io_some_us, psi_io_full_us) =
            self.io.read_small().map(parse_psi).unwrap_or_default();
        let (psi_memory_some_us, psi_memory_full_us) =
            self.memory.read_small().map(parse_psi).unwrap_or_default();
        SystemSnapshot::from_parts(
            vm,
            psi_cpu_some_us,
            psi_io_some_us,
            psi_io_full_us,
            psi_memory_some_us,
            psi_memory_full_us,
        )
    }

    /// The snapshot a run's delta starts from, and when it was taken (CLOCK_MONOTONIC): the
    /// previous run's "after" when nothing happened since, else a fresh one.
    pub fn before_run(&mut self) -> (SystemSnapshot, u64) {
        match self.carried.take() {
            Some(carried) => carried,
            None => (self.sample(), crate::measure::clock::monotonic_ns()),
        }
    }

    /// The snapshot right after a run, kept for the next run's "before".
    pub fn after_run(&mut self) -> (SystemSnapshot, u64) {
        let after = (self.sample(), crate::measure::clock::monotonic_ns());
        self.carried = Some(after);
        after
    }

    /// Something that may move system-wide counters happened since the last run's "after":
    /// the next run samples afresh.
    pub fn forget(&mut self) {
        self.carried = None;
    }

    /// The counters of `/proc/vmstat`, from as little of the file as holds them.
    fn vmstat(&mut self) -> VmStat {
        if self.vmstat_prefix > 0 {
            let limit = self.vmstat_prefix;
            // Only whole lines: a number cut by the limit must not be read as a smaller one.
            let whole_lines = |text: &[u8]| {
                let end = text.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
                parse_vmstat(&text[..end])
            };
            if let Some(vm) = self.vmstat.read_prefix(limit).map(whole_lines) {
                if vm.complete() {
                    return vm;
                }
            }
        }
        let Some(text) = self.vmstat.read_small() else {
            return VmStat::default();
        };
        let vm = parse_vmstat(text);
        self.vmstat_prefix = if vm.complete() {
            vmstat_end_of_last(text).map_or(0, |end| end + VMSTAT_MARGIN)
        } else {
            0
        };
        vm
    }
}

/// Where the line of the last counter [`parse_vmstat`] uses ends in `text` (`None` when one
/// is missing).
fn vmstat_end_of_last(text: &[u8]) -> Option<usize> {
    let mut end = 0;
    let mut found = 0;
    let mut at = 0;
    for line in text.split(|&b| b == b'\n') {
        let name = line.split(|&b| b == b' ').next().unwrap_or_default();
        at += line.len() + 1;
        if VMSTAT_NAMES.contains(&name) {
            found += 1;
            end = at;
        }
    }
    (found == VMSTAT_NAMES.len()).then_some(end)
}

impl SystemSnapshot {
    /// Reads `/proc/vmstat` and `/proc/pressure/{cpu,io,memory}` once (a batch keeps a
    /// [`SystemSampler`] open instead). Never fails; what cannot be read is `None`.
    pub fn read() -> SystemSnapshot {
        SystemSampler::default().sample()
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
    /// How long the window between the two snapshots was, ns: the run, plus — when the
    /// "before" snapshot is the previous run's "after" (see [`SystemSampler`]) — coldtrace's
    /// bookkeeping since that run ended.
    pub window_ns: Option<u64>,
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
    window_ns,
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
            window_ns: None,
        }
    }

    /// This delta, over a window of `window_ns`.
    pub fn over(self, window_ns: u64) -> SystemDelta {
        SystemDelta {
            window_ns: Some(window_ns),
            ..self
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

    /// The word-splitting parse this module used before: the reference for the one-pass one.
    fn parse_vmstat_by_words(text: &[u8]) -> VmStat {
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

    #[test]
    fn the_machines_vmstat_reads_as_by_words() {
        let text = std::fs::read("/proc/vmstat").unwrap();
        let v = parse_vmstat(&text);
        assert_eq!(v, parse_vmstat_by_words(&text));
        assert!(
            v.complete(),
            "every watched counter is in this kernel's /proc/vmstat"
        );
    }

    proptest::proptest! {
        #[test]
        fn one_pass_parse_agrees_with_words(
            lines in proptest::collection::vec(
                (
                    proptest::sample::select(vec![
                        "pgmajfault", "pgpgin", "pgpgout", "pswpin", "pswpout",
                        "workingset_refault_file", "nr_free_pages", "pgmajfaultx", "", "p",
                    ]),
                    "( |  )?([0-9]{0,21}|\\+[0-9]{1,3}|[0-9a-x ]{0,4})( [0-9]{0,2})?",
                ),
                0..12,
            ),
            trailing_newline in proptest::bool::ANY,
        ) {
            let mut text = String::new();
            for (name, value) in &lines {
                text.push_str(name);
                text.push_str(value);
                text.push('\n');
            }
            if !trailing_newline {
                text.pop();
            }
            proptest::prop_assert_eq!(
                parse_vmstat(text.as_bytes()),
                parse_vmstat_by_words(text.as_bytes()),
                "{:?}", text
            );
        }
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
}
