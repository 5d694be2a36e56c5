//! What a run left running once its command exited — its survivors — and what becomes of them:
//! left running and named (the default), killed, or waited for (`--survivors`).
//!
//! coldtrace is a child subreaper, so a process the command started and that outlived it (a
//! daemon: `setsid`, a double fork, a background job of a shell that exited) is still
//! coldtrace's descendant: [`crate::measure::descendants::walk`] finds it. Processes that
//! earlier runs left running are spared: neither counted again nor signalled.
#![forbid(unsafe_code)]

use crate::measure::cgroup::Leaf;
use crate::measure::descendants::{self, Proc};
use coldtrace_syscalls::{Signal, SignalFd, Subreaper};

/// What to do with the processes a run leaves running after its command exited normally.
/// (After a `--timeout`, a second request to stop or `--kill-after`, the whole tree is killed
/// whatever this says.)
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SurvivorPolicy {
    /// Leave them running, and name them (the default).
    #[default]
    Leave,
    /// Kill them with SIGKILL.
    Kill,
    /// Wait until they have exited (`--timeout` bounds the wait: they are killed at the limit).
    Wait,
}

impl SurvivorPolicy {
    /// `leave`, `kill`, `wait`: the option's value and the record's word.
    pub fn name(self) -> &'static str {
        match self {
            SurvivorPolicy::Leave => "leave",
            SurvivorPolicy::Kill => "kill",
            SurvivorPolicy::Wait => "wait",
        }
    }

    /// The policy an option value names.
    pub fn parse(value: &str) -> Option<SurvivorPolicy> {
        match value {
            "leave" => Some(SurvivorPolicy::Leave),
            "kill" => Some(SurvivorPolicy::Kill),
            "wait" => Some(SurvivorPolicy::Wait),
            _ => None,
        }
    }
}

/// What became of a run's survivors.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SurvivorAction {
    /// Left running (and spared by later runs).
    Left,
    /// Killed with SIGKILL.
    Killed,
    /// Waited for until they had all exited.
    Waited,
}

impl SurvivorAction {
    /// `left`, `killed`, `waited`, for records.
    pub fn name(self) -> &'static str {
        match self {
            SurvivorAction::Left => "left",
            SurvivorAction::Killed => "killed",
            SurvivorAction::Waited => "waited",
        }
    }
}

/// The processes a run left running when its command exited, and what became of them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Survivors {
    /// As found right after the command was reaped, parents before children (at most
    /// [`descendants::WALK_LIMIT`]).
    pub processes: Vec<Proc>,
    /// What became of them (`None` when there were none).
    pub action: Option<SurvivorAction>,
    /// How long coldtrace waited for them (`--survivors wait`).
    pub waited_ns: Option<u64>,
    /// A request to stop that ended the wait (the survivors were then killed).
    pub interrupted_by: Option<Signal>,
    /// Where they were looked for: `cgroup`, or `descendants` (coldtrace is a child subreaper);
    /// `None` when they could not be (no cgroup, and no subreaper: a daemonised descendant goes
    /// to init, out of sight).
    pub seen_by: Option<&'static str>,
}

impl Survivors {
    /// Their number.
    pub fn count(&self) -> usize {
        self.processes.len()
    }

    /// Whether they could be looked for.
    pub fn looked(&self) -> bool {
        self.seen_by.is_some()
    }

    /// Their PIDs and start times, to be spared by later runs.
    pub fn keys(&self) -> impl Iterator<Item = (i32, u64)> + '_ {
        self.processes.iter().map(|p| (p.pid, p.start_ticks))
    }
}

/// The processes of one run: the members of its cgroup leaf when it has one (exact: nothing
/// leaves a cgroup by changing session or parent), else coldtrace's descendants (a subreaper's:
/// the same, but for a process that was handed to another reaper), those that earlier runs
/// left running aside either way.
#[derive(Clone, Copy)]
pub struct Members<'a> {
    /// Processes left by earlier runs (PID and start time), and their descendants.
    pub spared: &'a [(i32, u64)],
    /// The run's cgroup leaf.
    pub group: Option<&'a Leaf>,
}

impl Members<'_> {
    /// The live ones now.
    pub fn list(&self) -> Vec<Proc> {
        match self.group {
            Some(leaf) => leaf.processes(),
            None => descendants::walk(self.spared),
        }
    }

    /// Whether none is left.
    pub fn gone(&self) -> bool {
        match self.group {
            Some(leaf) => !leaf.populated() && descendants::walk(self.spared).is_empty(),
            None => descendants::walk(self.spared).is_empty(),
        }
    }

    /// Sends `sig` to each one outside process group `pgid` (which a group kill reaches
    /// already); how many it reached.
    pub fn signal_outside_group(&self, sig: Signal, pgid: i32) -> usize {
        let all = self.list();
        let outside = all.iter().filter(|p| p.pgid != pgid);
        outside.filter(|p| descendants::signal(p, sig)).count()
    }

    /// SIGKILL to all of them, once: `cgroup.kill` (which no fork can outrun), and to each
    /// descendant (a kernel without `cgroup.kill`, a process outside the group). How many
    /// descendants it reached.
    pub fn kill(&self) -> usize {
        if let Some(leaf) = self.group {
            let _ = leaf.kill();
        }
        descendants::signal_all(Signal::KILL, self.spared)
    }

    /// `cgroup` or `descendants`: where they were found.
    pub fn seen_by(&self) -> &'static str {
        if self.group.is_some() {
            "cgroup"
        } else {
            "descendants"
        }
    }
}

/// How the survivors of one run are looked for and dealt with.
pub struct Sweep<'a> {
    /// What to do with them.
    pub policy: SurvivorPolicy,
    /// Where they are.
    pub members: Members<'a>,
    /// The signals coldtrace takes (a request to stop ends a wait).
    pub signals: Option<&'a SignalFd>,
    /// The right to reap what exits.
    pub orphans: Option<&'a Subreaper>,
    /// The run's limit on CLOCK_MONOTONIC: a wait ends there, the survivors killed.
    pub deadline_ns: Option<u64>,
}

impl Sweep<'_> {
    /// The survivors of a run whose command has been reaped (and whose orphans have been), and
    /// what the policy made of them. `nothing_left`: coldtrace has no child at all, so there
    /// is nothing to look for.
    pub fn after_exit(&self, nothing_left: bool) -> Survivors {
        let subreaper = self.orphans.is_some_and(|o| o.claimed().is_ok());
        let looked = subreaper || self.members.group.is_some();
        let none = Survivors {
            seen_by: looked.then(|| self.members.seen_by()),
            ..Survivors::default()
        };
        // No child left at all: nothing can be in the group either (it would have been
        // reparented to coldtrace).
        if (nothing_left && subreaper) || !looked {
            return none;
        }
        let processes = self.members.list();
        if processes.is_empty() {
            return none;
        }
        let mut found = Survivors { processes, ..none };
        match self.policy {
            SurvivorPolicy::Leave => found.action = Some(SurvivorAction::Left),
            SurvivorPolicy::Kill => {
                self.kill_all();
                found.action = Some(SurvivorAction::Killed);
            }
            SurvivorPolicy::Wait => self.wait(&mut found),
        }
        found
    }

    /// SIGKILL to every descendant but the spared ones, until none is left (each round reaps
    /// what died; at most [`KILL_ROUNDS`] rounds of up to 10 ms: what forks while it is being
    /// killed is found in the next round). Whether any was found.
    pub fn kill_all(&self) -> bool {
        let mut any = false;
        for _ in 0..KILL_ROUNDS {
            if let Some(orphans) = self.orphans {
                orphans.reap_orphans();
            }
            if self.members.kill() == 0 && self.members.gone() {
                break;
            }
            any = true;
            pause(10_000_000);
        }
        if let Some(orphans) = self.orphans {
            orphans.reap_orphans();
        }
        any
    }

    /// Waits until no survivor is left, looking again every [`WAIT_POLL_NS`] and at every
    /// SIGCHLD; a request to stop, or the run's limit, kills them instead.
    fn wait(&self, found: &mut Survivors) {
        let began = crate::measure::clock::monotonic_ns();
        loop {
            if let Some(orphans) = self.orphans {
                orphans.reap_orphans();
            }
            if self.members.gone() {
                found.action = Some(SurvivorAction::Waited);
                break;
            }
            let now = crate::measure::clock::monotonic_ns();
            if self.deadline_ns.is_some_and(|d| now >= d) {
                self.kill_all();
                found.action = Some(SurvivorAction::Killed);
                break;
            }
            if let Some(sig) = self.sleep_or_stop(now) {
                found.interrupted_by = Some(sig);
                self.kill_all();
                found.action = Some(SurvivorAction::Killed);
                break;
            }
        }
        found.waited_ns = Some(crate::measure::clock::monotonic_ns().saturating_sub(began));
    }

    /// Sleeps until a signal comes, [`WAIT_POLL_NS`] pass or the deadline; a request to stop,
    /// if that is what came.
    fn sleep_or_stop(&self, now: u64) -> Option<Signal> {
        let until = self
            .deadline_ns
            .map_or(WAIT_POLL_NS, |d| d.saturating_sub(now).min(WAIT_POLL_NS));
        match self.signals {
            Some(signals) => {
                let timeout = timespec(until);
                let mut fds = [rustix::event::PollFd::new(
                    signals,
                    rustix::event::PollFlags::IN,
                )];
                let _ = rustix::event::poll(&mut fds, Some(&timeout));
                while let Ok(Some(sig)) = signals.take() {
                    if sig != Signal::CHLD {
                        return Some(sig);
                    }
                }
                None
            }
            None => {
                pause(until);
                None
            }
        }
    }
}

/// Rounds of [`Sweep::kill_all`].
pub const KILL_ROUNDS: u32 = 100;

/// How often a wait for survivors looks again (a grandchild's exit is told to its parent, not
/// to coldtrace).
pub const WAIT_POLL_NS: u64 = 50_000_000;

fn timespec(ns: u64) -> rustix::time::Timespec {
    rustix::time::Timespec {
        tv_sec: (ns / 1_000_000_000) as i64,
        tv_nsec: (ns % 1_000_000_000) as i64,
    }
}

/// Sleeps `ns` (a poll on nothing: no signal handler is involved).
fn pause(ns: u64) {
    let _ = rustix::event::poll(&mut [], Some(&timespec(ns)));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policies_read_as_written() {
        for p in [
            SurvivorPolicy::Leave,
            SurvivorPolicy::Kill,
            SurvivorPolicy::Wait,
        ] {
            assert_eq!(SurvivorPolicy::parse(p.name()), Some(p));
        }
        assert_eq!(SurvivorPolicy::parse("stay"), None);
        assert_eq!(SurvivorPolicy::default(), SurvivorPolicy::Leave);
    }
}
