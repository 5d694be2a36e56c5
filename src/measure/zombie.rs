//! The exited child's own counters, read from its zombie before wait4 reaps it: I/O
//! ([`ChildIo`]) and scheduler times ([`ChildSched`]). Nothing here is system-wide.
//!
//! Read after `waitid(WEXITED | WNOWAIT)`, the zombie's [proc_pid_io(5)] and
//! [proc_pid_schedstat(5)] stay readable and meaningful (verified on Linux 6.18 in
//! `tests/counters.rs`), but they cover different things: `io` is the whole process **plus the
//! descendants it reaped** (the kernel folds a reaped child's counters into its parent's, like
//! wait4's rusage), never descendants that were not reaped; `schedstat` is the main thread
//! alone: no other threads, no descendants.
//!
//! [proc_pid_io(5)]: https://man7.org/linux/man-pages/man5/proc_pid_io.5.html
//! [proc_pid_schedstat(5)]: https://man7.org/linux/man-pages/man5/proc_pid_schedstat.5.html
#![forbid(unsafe_code)]

use crate::measure::procfs::{parse_u64, read_pid_file};

/// The largest zombie file read here: `/proc/PID/stat`'s 52 fields stay well under it.
const PID_FILE_MAX: usize = 4096;

/// Reads the zombie's file `name` once into a buffer on the stack.
fn read_with<T>(pid: i32, name: &str, parse: impl FnOnce(&[u8]) -> T) -> Option<T> {
    let mut buf = [0u8; PID_FILE_MAX];
    read_pid_file(pid, name, &mut buf).map(parse)
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
        read_with(pid, "io", ChildIo::parse)
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
        read_with(pid, "schedstat", ChildSched::parse)
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

/// The child's CPU times from `/proc/PID/stat` ([proc_pid_stat(5)]), read from the zombie: in
/// clock ticks (`USER_HZ`, 100 a second), so to 10 ms.
///
/// `utime + stime` is the whole process: every thread, those already exited included;
/// `cutime + cstime` the descendants it waited for. With [`ChildSched`]'s main thread they say
/// where a tree's CPU went when nothing better is allowed.
///
/// [proc_pid_stat(5)]: https://man7.org/linux/man-pages/man5/proc_pid_stat.5.html
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ChildStat {
    /// User time of every thread, ticks.
    pub utime_ticks: u64,
    /// System time of every thread, ticks.
    pub stime_ticks: u64,
    /// User time of the waited-for descendants, ticks.
    pub cutime_ticks: u64,
    /// System time of the waited-for descendants, ticks.
    pub cstime_ticks: u64,
}

impl ChildStat {
    /// Reads `/proc/PID/stat`. `None` when it cannot be read or parsed.
    pub fn read(pid: i32) -> Option<ChildStat> {
        read_with(pid, "stat", ChildStat::parse)?
    }

    /// Parses `/proc/PID/stat`: fields 14–17, counted after the command name, which is in
    /// parentheses and may hold spaces and parentheses itself (the last `)` ends it).
    pub fn parse(text: &[u8]) -> Option<ChildStat> {
        let after_name = &text[text.iter().rposition(|&b| b == b')')? + 1..];
        let mut fields = after_name
            .split(|b| b.is_ascii_whitespace())
            .filter(|w| !w.is_empty());
        // After the name: state (3), ppid, pgrp, session, tty, tpgid, flags, minflt,
        // cminflt, majflt, cmajflt (13), then utime (14).
        fields.nth(10)?;
        let mut next = || fields.next().and_then(parse_u64);
        Some(ChildStat {
            utime_ticks: next()?,
            stime_ticks: next()?,
            cutime_ticks: next()?,
            cstime_ticks: next()?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let stat = ChildStat::parse(
            b"812 (a) b (c)) Z 1 812 812 0 -1 4227084 600 0 3 0 12 5 40 2 20 0 1 0 4000 0 0\n",
        )
        .unwrap();
        assert_eq!(
            stat,
            ChildStat {
                utime_ticks: 12,
                stime_ticks: 5,
                cutime_ticks: 40,
                cstime_ticks: 2
            }
        );
        assert_eq!(ChildStat::parse(b"812 (x) Z 1 2"), None);
    }
}
