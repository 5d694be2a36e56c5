//! Kernel performance counters of one run, through [`perf_event_open(2)`].
//! Opening, reading and naming events; the unsafe call itself is in the syscalls crate.
//!
//! # How the child is counted without knowing its PID
//! The spawn has vfork semantics: the runner is suspended until the child has exec'd, so there
//! is no moment at which the child's PID is known and it has not yet run the program. Instead,
//! [`PerfSession::open_before_spawn`] opens every counter **on the calling thread itself**
//! (`pid = 0, cpu = -1`) with `disabled = 1, inherit = 1, enable_on_exec = 1`, right before the
//! spawn:
//! - the runner never execs, so its own events never enable and count nothing (verified in
//!   `tests/perf.rs`: a busy loop between open and spawn does not show);
//! - the child inherits disabled copies at `clone`, and they enable when it calls `execve`, so
//!   the counts start at the program's first instruction (not at the spawn code before exec);
//! - when the child (or any descendant, which inherits in turn) exits, the kernel folds its
//!   counts and enabled/running times into the runner's events (`perf_event_exit_task`, before
//!   the exit is reported), so [`PerfSession::read_after_exit`] after the child has exited —
//!   reaped or still a zombie — returns the child's counts from exec onwards.
//!
//! Caveats for the caller: open the session on the thread that spawns, spawn exactly one child
//! before reading, and read after it exited. A descendant still running when the child exits
//! (an orphan, a daemon) is only counted when it exits itself, so normally not at all.
//!
//! # Privilege
//! Each event is first opened counting user and kernel space. If the kernel refuses that with
//! `EACCES`/`EPERM` (`/proc/sys/kernel/perf_event_paranoid` ≥ 2 for an unprivileged user), it is
//! opened again with `exclude_kernel = 1, exclude_hv = 1` (perf's `:u`), and the reading says
//! so ([`CounterReading::exclude_kernel`]). What that changes, measured unprivileged on Linux
//! 6.18 with paranoid = 2: task-clock is unaffected (it is time on the CPU either way);
//! page-faults loses the faults taken in kernel mode (58 against rusage's 62 for a shell);
//! context-switches and cpu-migrations would always read 0, because the kernel raises them from
//! the scheduler with kernel registers — so those two are not re-opened but reported
//! unavailable with the reason, rather than as a false 0.
//!
//! # Hardware events
//! Each event is opened **individually** (its own group leader), not as one group: a group is
//! all-or-nothing on the PMU, and one unsupported event would lose all of them. The cost is that
//! the kernel may multiplex them when there are more events than hardware counters; then the
//! reading is scaled by `time_enabled / time_running` and marked
//! [`CounterReading::multiplexed`]. On a machine without a PMU (most VMs), hardware events fail
//! with `ENOENT` and are reported as unavailable with that reason; their value is `None`,
//! never 0.
//!
//! [`perf_event_open(2)`]: https://man7.org/linux/man-pages/man2/perf_event_open.2.html
#![forbid(unsafe_code)]

use coldtrace_syscalls::perf::{
    attr_flags, perf_event_open, PerfEventAttr, PerfTarget, PERF_FLAG_FD_CLOEXEC,
    PERF_FORMAT_TOTAL_TIME_ENABLED, PERF_FORMAT_TOTAL_TIME_RUNNING,
};
use coldtrace_syscalls::Errno;
use rustix::fd::OwnedFd;

pub use crate::measure::perf_events::{default_events, Kind, PerfEvent};

/// The attribute for counting `event` in a child from its `execve` on.
fn attr(event: PerfEvent, exclude_kernel: bool) -> PerfEventAttr {
    let (type_, config) = event.type_config();
    let mut attr = PerfEventAttr::counting(type_, config);
    attr.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
    attr.flags = attr_flags::DISABLED | attr_flags::INHERIT | attr_flags::ENABLE_ON_EXEC;
    if exclude_kernel {
        attr.flags |= attr_flags::EXCLUDE_KERNEL | attr_flags::EXCLUDE_HV;
    }
    attr
}

/// `/proc/sys/kernel/perf_event_paranoid`, if readable.
pub fn perf_event_paranoid() -> Option<i32> {
    crate::measure::procfs::read_text("/proc/sys/kernel/perf_event_paranoid", 64)?
        .trim()
        .parse()
        .ok()
}

/// Why an event could not be opened, for people: the errno's name, then what it means here.
fn open_failure_reason(event: PerfEvent, errno: Errno) -> String {
    let name = errno
        .name()
        .map_or_else(|| format!("errno {}", errno.raw()), str::to_owned);
    let meaning = match errno {
        Errno::NOENT | Errno::OPNOTSUPP | Errno::NODEV if event.is_hardware() => {
            "no PMU on this machine (a VM without hardware counters)".to_owned()
        }
        Errno::NOENT | Errno::OPNOTSUPP | Errno::NODEV => {
            "the kernel does not support this event".to_owned()
        }
        Errno::ACCES | Errno::PERM => match perf_event_paranoid() {
            Some(level) => format!("perf_event_paranoid={level} forbids it"),
            None => "perf events are not permitted (perf_event_paranoid unreadable)".to_owned(),
        },
        Errno::MFILE | Errno::NFILE => "out of file descriptors".to_owned(),
        Errno::NOSYS => "perf_event_open is not available in this kernel".to_owned(),
        other => other.message().unwrap_or("unexpected error").to_owned(),
    };
    format!("{name}: {meaning}")
}

/// One event's state between open and read.
#[derive(Debug)]
enum Slot {
    Open { fd: OwnedFd, exclude_kernel: bool },
    Unavailable { reason: String },
}

/// Counters opened on the calling thread, inherited by the next child it spawns, read after
/// that child has exited (see the module documentation). Dropping the session closes every
/// descriptor.
#[derive(Debug)]
pub struct PerfSession {
    slots: Vec<(PerfEvent, Slot)>,
}

impl PerfSession {
    /// Opens `events` (each individually) on the process that will clone the child — the
    /// calling thread (`on = None`), or the spawner (`Some(pid)`) — disabled, inherited and
    /// enabled on exec. Call it right before spawning, on the spawning thread.
    ///
    /// Never fails as a whole: an event that cannot be opened is kept, unavailable, with the
    /// reason (e.g. `"ENOENT: no PMU on this machine (a VM without hardware counters)"`).
    /// Duplicates in `events` are opened once.
    pub fn open_before_spawn(events: &[PerfEvent], on: Option<i32>) -> PerfSession {
        let mut slots: Vec<(PerfEvent, Slot)> = Vec::with_capacity(events.len());
        for &event in events {
            if slots.iter().any(|(e, _)| *e == event) {
                continue;
            }
            slots.push((event, Self::open_one(event, on)));
        }
        PerfSession { slots }
    }

    fn open_one(event: PerfEvent, on: Option<i32>) -> Slot {
        let target = on.map_or(PerfTarget::CallingThread, PerfTarget::Process);
        let open = |exclude_kernel| {
            perf_event_open(
                &attr(event, exclude_kernel),
                target,
                -1,
                None,
                PERF_FLAG_FD_CLOEXEC,
            )
        };
        match open(false) {
            Ok(fd) => Slot::Open {
                fd,
                exclude_kernel: false,
            },
            Err(errno @ (Errno::ACCES | Errno::PERM)) if event.occurs_only_in_kernel() => {
                Slot::Unavailable {
                    reason: format!(
                        "{}; counting user space only would always read 0, because the kernel \
                         raises this event from scheduler code",
                        open_failure_reason(event, errno)
                    ),
                }
            }
            Err(Errno::ACCES | Errno::PERM) => match open(true) {
                Ok(fd) => Slot::Open {
                    fd,
                    exclude_kernel: true,
                },
                Err(errno) => Slot::Unavailable {
                    reason: open_failure_reason(event, errno),
                },
            },
            Err(errno) => Slot::Unavailable {
                reason: open_failure_reason(event, errno),
            },
        }
    }

    /// The events of this session and whether each was opened.
    pub fn events(&self) -> impl Iterator<Item = (PerfEvent, bool)> + '_ {
        self.slots
            .iter()
            .map(|(e, s)| (*e, matches!(s, Slot::Open { .. })))
    }

    /// Reads every counter and closes its descriptor. Call it after the child has exited
    /// (reaped or not): the kernel folds the child's counts into these events at its exit.
    pub fn read_after_exit(self) -> Vec<CounterReading> {
        self.slots
            .into_iter()
            .map(|(event, slot)| match slot {
                Slot::Open { fd, exclude_kernel } => {
                    let mut buf = [0u8; 24];
                    let read = rustix::io::read(&fd, &mut buf);
                    drop(fd);
                    match read {
                        Ok(24) => CounterReading::from_words(event, exclude_kernel, &buf),
                        Ok(n) => CounterReading::unavailable(
                            event,
                            Some(exclude_kernel),
                            format!("short read of the counter: {n} of 24 bytes"),
                        ),
                        Err(e) => CounterReading::unavailable(
                            event,
                            Some(exclude_kernel),
                            format!("reading the counter failed: {}", Errno::from(e)),
                        ),
                    }
                }
                Slot::Unavailable { reason } => CounterReading::unavailable(event, None, reason),
            })
            .collect()
    }
}

/// One counter after the run. Values that were not measured are `None`, never 0.
#[derive(Clone, Debug, PartialEq)]
pub struct CounterReading {
    /// perf's name of the event (`"task-clock"`).
    pub event: &'static str,
    /// The count, scaled by `time_enabled / time_running` when the event was multiplexed;
    /// `None` when not measured.
    pub value: Option<f64>,
    /// The count as the kernel returned it (unscaled).
    pub raw_value: Option<u64>,
    /// Nanoseconds the event was enabled (from the child's exec to its exit, summed over the
    /// child and its descendants).
    pub time_enabled_ns: Option<u64>,
    /// Nanoseconds it was actually counting on the PMU (less than enabled when multiplexed).
    pub time_running_ns: Option<u64>,
    /// Whether the kernel multiplexed the event (`time_running < time_enabled`).
    pub multiplexed: bool,
    /// `"ns"` for task-clock, `"count"` otherwise.
    pub unit: &'static str,
    /// Whether kernel space was excluded (the fallback for `perf_event_paranoid`); `None` when
    /// the event was not opened.
    pub exclude_kernel: Option<bool>,
    /// Why `value` is `None`.
    pub unavailable_reason: Option<String>,
}

crate::serialize_struct!(CounterReading {
    event,
    value,
    raw_value,
    time_enabled_ns,
    time_running_ns,
    multiplexed,
    unit,
    exclude_kernel,
    unavailable_reason,
});

impl CounterReading {
    fn unavailable(event: PerfEvent, exclude_kernel: Option<bool>, reason: String) -> Self {
        CounterReading {
            event: event.name(),
            value: None,
            raw_value: None,
            time_enabled_ns: None,
            time_running_ns: None,
            multiplexed: false,
            unit: event.unit(),
            exclude_kernel,
            unavailable_reason: Some(reason),
        }
    }

    /// Decodes the three native-endian words of a `read(2)` with
    /// `read_format = TOTAL_TIME_ENABLED | TOTAL_TIME_RUNNING`: value, enabled, running.
    fn from_words(event: PerfEvent, exclude_kernel: bool, buf: &[u8; 24]) -> Self {
        let word = |i: usize| {
            let mut w = [0u8; 8];
            w.copy_from_slice(&buf[i * 8..i * 8 + 8]);
            u64::from_ne_bytes(w)
        };
        Self::from_counts(event, exclude_kernel, word(0), word(1), word(2))
    }

    /// A reading from the kernel's raw value and times.
    pub(crate) fn from_counts(
        event: PerfEvent,
        exclude_kernel: bool,
        raw: u64,
        enabled_ns: u64,
        running_ns: u64,
    ) -> Self {
        let mut reading = CounterReading {
            event: event.name(),
            value: None,
            raw_value: Some(raw),
            time_enabled_ns: Some(enabled_ns),
            time_running_ns: Some(running_ns),
            multiplexed: running_ns < enabled_ns,
            unit: event.unit(),
            exclude_kernel: Some(exclude_kernel),
            unavailable_reason: None,
        };
        if running_ns == 0 {
            reading.raw_value = None;
            reading.unavailable_reason = Some(if enabled_ns == 0 {
                "never enabled: no child exec'd and exited while the session was open".to_owned()
            } else {
                "never scheduled on the PMU (time_running = 0): multiplexed out".to_owned()
            });
        } else if running_ns < enabled_ns {
            reading.value = Some(raw as f64 * enabled_ns as f64 / running_ns as f64);
        } else {
            reading.value = Some(raw as f64);
        }
        reading
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attr_flags_are_the_documented_bits() {
        let a = attr(PerfEvent::CYCLES, false);
        assert_eq!(a.flags, 0b1_0000_0000_0011); // disabled | inherit | enable_on_exec
        assert_eq!(a.read_format, 0b11);
        let u = attr(PerfEvent::CYCLES, true);
        assert_eq!(u.flags, a.flags | (1 << 5) | (1 << 6));
        assert_eq!((u.type_, u.config), (0, 0));
    }

    #[test]
    fn scaling_and_never_scheduled() {
        let full = CounterReading::from_counts(PerfEvent::CYCLES, false, 1000, 50, 50);
        assert_eq!((full.value, full.multiplexed), (Some(1000.0), false));
        let half = CounterReading::from_counts(PerfEvent::CYCLES, false, 1000, 100, 50);
        assert_eq!((half.value, half.multiplexed), (Some(2000.0), true));
        assert_eq!(half.raw_value, Some(1000));
        let never = CounterReading::from_counts(PerfEvent::CYCLES, false, 0, 100, 0);
        assert_eq!((never.value, never.raw_value), (None, None));
        assert!(never
            .unavailable_reason
            .unwrap()
            .contains("time_running = 0"));
        let off = CounterReading::from_counts(PerfEvent::TASK_CLOCK, true, 0, 0, 0);
        assert_eq!(off.value, None);
        assert!(off.unavailable_reason.unwrap().starts_with("never enabled"));
    }

    #[test]
    fn reasons_name_the_errno_and_the_cause() {
        assert_eq!(
            open_failure_reason(PerfEvent::INSTRUCTIONS, Errno::NOENT),
            "ENOENT: no PMU on this machine (a VM without hardware counters)"
        );
        assert!(open_failure_reason(PerfEvent::TASK_CLOCK, Errno::ACCES).starts_with("EACCES: "));
        assert_eq!(
            open_failure_reason(PerfEvent::CYCLES, Errno::from_raw(9999)),
            "errno 9999: unexpected error"
        );
    }

    #[test]
    fn serialises_none_as_null() {
        let r = CounterReading::unavailable(PerfEvent::INSTRUCTIONS, None, "ENOENT: x".into());
        let text = serde_json::to_string(&r).unwrap();
        assert_eq!(
            text,
            r#"{"event":"instructions","value":null,"raw_value":null,"time_enabled_ns":null,"time_running_ns":null,"multiplexed":false,"unit":"count","exclude_kernel":null,"unavailable_reason":"ENOENT: x"}"#
        );
    }
}
