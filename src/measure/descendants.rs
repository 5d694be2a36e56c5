//! coldtrace's live descendants, read from `/proc`, named, and signalled one by one.
//!
//! coldtrace is a child subreaper, so every process a run starts stays its descendant until it
//! exits: one that daemonises (`setsid`, a double fork) is reparented to coldtrace, never to
//! init. Walking `/proc/PID/task/TID/children` down from coldtrace itself therefore finds every
//! process the runs left behind — the survivors of a run without a cgroup, and what a
//! `--timeout` must kill beyond the command's process group. ([proc_pid_children(5)] lists the
//! children of one thread; every thread is read.)
//!
//! A PID read from `/proc` may be reused before it is signalled. So each kill opens a pidfd
//! first ([pidfd_open(2)]), then checks through `/proc/PID/stat` that the process under that
//! PID still has the start time the walk saw: the pidfd then names that very process (had it
//! been reaped and its PID reused between the two steps, the pidfd would name the dead one and
//! the signal would fail with `ESRCH`), and the signal goes through the pidfd
//! ([pidfd_send_signal(2)]).
//!
//! [proc_pid_children(5)]: https://man7.org/linux/man-pages/man5/proc_pid_task.5.html
//! [pidfd_open(2)]: https://man7.org/linux/man-pages/man2/pidfd_open.2.html
//! [pidfd_send_signal(2)]: https://man7.org/linux/man-pages/man2/pidfd_send_signal.2.html
#![forbid(unsafe_code)]

use crate::measure::procfs::read_small_once;
use coldtrace_syscalls::Signal;

/// Walks give up beyond this many processes (a fork bomb is not listed whole).
pub const WALK_LIMIT: usize = 4096;

/// A process, as `/proc/PID/stat` showed it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Proc {
    /// Its process ID.
    pub pid: i32,
    /// Its parent's.
    pub ppid: i32,
    /// Its process group's.
    pub pgid: i32,
    /// When it started, in clock ticks after boot (with the PID, it names the process).
    pub start_ticks: u64,
    /// Its name (`comm`, at most 15 bytes), control characters as they are.
    pub comm: String,
    /// Its state letter (`R`, `S`, `D`, `T`, `t` for a tracing stop, `Z`…).
    pub state: char,
}

impl Proc {
    /// Reads `/proc/PID/stat`.
    pub fn read(pid: i32) -> Option<Proc> {
        let mut buf = Vec::with_capacity(512);
        read_small_once(&format!("/proc/{pid}/stat"), &mut buf)
            .and_then(|text| parse_stat(pid, text))
    }

    /// Whether it is a zombie (dead, waiting for its parent).
    pub fn is_zombie(&self) -> bool {
        self.state == 'Z' || self.state == 'X'
    }
}

/// Parses the text of `/proc/PID/stat`: `pid (comm) state ppid …`, the 22nd field the start
/// time. The name may hold spaces and parentheses: it ends at the last `)`.
pub fn parse_stat(pid: i32, text: &[u8]) -> Option<Proc> {
    let open = text.iter().position(|&b| b == b'(')?;
    let close = text.iter().rposition(|&b| b == b')')?;
    let comm = String::from_utf8_lossy(text.get(open + 1..close)?).into_owned();
    let rest = std::str::from_utf8(text.get(close + 1..)?).ok()?;
    let mut fields = rest.split_ascii_whitespace();
    let state = fields.next()?.chars().next()?;
    let ppid = fields.next()?.parse().ok()?;
    let pgid = fields.next()?.parse().ok()?;
    // Fields 6 to 21 lie between the process group and the start time.
    let start_ticks = fields.nth(16)?.parse().ok()?;
    Some(Proc {
        pid,
        ppid,
        pgid,
        start_ticks,
        comm,
        state,
    })
}

/// The children of process `pid` (of all its threads), from `/proc/PID/task/*/children`.
fn children_of(pid: i32, buf: &mut Vec<u8>) -> Vec<i32> {
    let mut found = Vec::new();
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return found;
    };
    for task in tasks.flatten() {
        let name = task.file_name();
        let Some(tid) = name.to_str() else { continue };
        let path = format!("/proc/{pid}/task/{tid}/children");
        if let Some(text) = read_small_once(&path, buf) {
            let text = String::from_utf8_lossy(text);
            found.extend(
                text.split_ascii_whitespace()
                    .filter_map(|p| p.parse::<i32>().ok()),
            );
        }
    }
    found
}

/// The start time of a `skip` entry that names one of this process's own children by PID
/// alone, while it is unreaped (the spawner): its PID cannot pass to another process before
/// this process reaps it, so its `/proc/PID/stat` is not read on every walk. Such an entry
/// must leave `skip` when the child is reaped.
pub const OWN_UNREAPED_CHILD: u64 = u64::MAX;

/// The live descendants of this process, parents before their children, at most
/// [`WALK_LIMIT`]; zombies and the subtrees below `skip` (processes named by PID and start
/// time: survivors of earlier runs, left running; or a direct child by PID alone, see
/// [`OWN_UNREAPED_CHILD`]) are left out.
pub fn walk(skip: &[(i32, u64)]) -> Vec<Proc> {
    let me = rustix::process::getpid().as_raw_nonzero().get();
    let mut buf = Vec::with_capacity(4096);
    let mut found = Vec::new();
    let mut queue = children_of(me, &mut buf);
    let direct = queue.len();
    let mut at = 0;
    while at < queue.len() && found.len() < WALK_LIMIT {
        let pid = queue[at];
        at += 1;
        if at <= direct && skip.contains(&(pid, OWN_UNREAPED_CHILD)) {
            continue;
        }
        let Some(proc) = Proc::read(pid) else {
            continue;
        };
        if skip.contains(&(proc.pid, proc.start_ticks)) {
            continue;
        }
        queue.extend(children_of(pid, &mut buf));
        if !proc.is_zombie() {
            found.push(proc);
        }
    }
    found
}

/// Sends `signal` to `proc` if the process under its PID is still the one the walk saw (see
/// the module's note); `false` when it is gone or could not be signalled.
pub fn signal(proc: &Proc, signal: Signal) -> bool {
    use rustix::process::{pidfd_open, pidfd_send_signal, Pid, PidfdFlags};
    let Some(pid) = Pid::from_raw(proc.pid) else {
        return false;
    };
    let Ok(pidfd) = pidfd_open(pid, PidfdFlags::empty()) else {
        return false;
    };
    if Proc::read(proc.pid).map(|p| p.start_ticks) != Some(proc.start_ticks) {
        return false;
    }
    let Some(sig) = rustix::process::Signal::from_named_raw(signal.raw()) else {
        return false;
    };
    pidfd_send_signal(&pidfd, sig).is_ok()
}

/// Sends `sig` to every live descendant outside `skip`; how many it reached.
pub fn signal_all(sig: Signal, skip: &[(i32, u64)]) -> usize {
    walk(skip).iter().filter(|p| signal(p, sig)).count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_with_spaces_and_parentheses_ends_at_the_last_one() {
        let text = b"4242 (a) b (c)) S 17 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 98765 \
                     1000 50 18446744073709551615\n";
        let p = parse_stat(4242, text).unwrap();
        assert_eq!(p.comm, "a) b (c)");
        assert_eq!(
            (p.state, p.ppid, p.pgid, p.start_ticks),
            ('S', 17, 4242, 98765)
        );
        assert!(parse_stat(1, b"1 (init").is_none());
        assert!(parse_stat(1, b"1 (x) S").is_none());
    }

    #[test]
    fn this_process_reads_as_itself_and_a_child_is_found_and_signalled() {
        let me = rustix::process::getpid().as_raw_nonzero().get();
        let own = Proc::read(me).unwrap();
        assert_eq!(own.pid, me);
        assert!(own.start_ticks > 0);
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let pid = child.id() as i32;
        let seen = walk(&[]);
        let found = seen
            .iter()
            .find(|p| p.pid == pid)
            .expect("the child is listed");
        assert_eq!(found.ppid, me);
        // Skipped by its identity: neither listed nor signalled.
        let key = (found.pid, found.start_ticks);
        assert!(walk(&[key]).iter().all(|p| p.pid != pid));
        // A stale start time is refused: it would be another process under a reused PID.
        let stale = Proc {
            start_ticks: found.start_ticks + 1,
            ..found.clone()
        };
        assert!(!signal(&stale, Signal::KILL));
        assert!(signal(found, Signal::KILL));
        let status = child.wait().unwrap();
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(status.signal(), Some(9));
    }
}
