//! One measured run: the timed window is spawn → exit observed, nothing else inside it.
//! It measures one run and returns the numbers; it never decides whether the run counts.
//!
//! Order: read the floor (outside the window) → clock → spawn → wait (deadline, signals,
//! progress ticks of a long run: `waiting.rs`) → clock → look at the zombie (per-child /proc
//! figures) → reap with wait4 (rusage) → reap adopted orphans. [`measure`] reads as that list;
//! `Waiting` holds the child from the spawn to its reaping, one method per step.
#![forbid(unsafe_code)]

use crate::measure::cgroup::Leaf;
use crate::measure::descendants;
use crate::measure::floor::{Floor, FloorReading};
use crate::measure::perf::{CounterReading, PerfEvent, PerfSession};
use crate::measure::spawner::{BatchSpawner, Started};
use crate::measure::survivors::{Members, SurvivorAction, SurvivorPolicy, Survivors, Sweep};
use crate::measure::tree::source::{TreeResult, TreeSource};
use crate::measure::waiting::{TickSchedule, WhileWaiting};
use crate::measure::zombie::{ChildIo, ChildSched, ChildStat};
use coldtrace_syscalls::spawn::{ChildStage, SpawnError};
use coldtrace_syscalls::spawner::ReplyWatch;
use coldtrace_syscalls::{
    Child, ChildStack, Errno, Program, ResourceUsage, Signal, SignalFd, SpawnOptions, Subreaper,
    WaitEvent, WaitStatus,
};
use std::ops::ControlFlow;
use std::sync::atomic::{AtomicBool, Ordering};

/// Whom a signal of coldtrace's (a `--timeout`, a forwarded signal) was sent to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SignalTarget {
    /// The child's own process group (the child and the descendants that stayed in it).
    Group,
    /// The group, and the child itself, which had left it (`setpgid`).
    GroupAndProcess,
    /// The child alone: it had left its group and nothing was left in it, or the child was
    /// never given a group of its own.
    Process,
}

impl SignalTarget {
    /// The name in records.
    pub fn name(self) -> &'static str {
        match self {
            SignalTarget::Group => "process group",
            SignalTarget::GroupAndProcess => "process group and process",
            SignalTarget::Process => "process",
        }
    }
}

/// Sends `signal` so that it reaches the child whatever process group it is in now: to its
/// own group when it was started in one, then — when the group kill found no one ([kill(2)]
/// `ESRCH`) or the child is no longer in that group ([getpgid(2)]) — to the child itself. A
/// child that moved into coldtrace's group escaped the group kill, and with it `--timeout`.
///
/// [kill(2)]: https://man7.org/linux/man-pages/man2/kill.2.html
/// [getpgid(2)]: https://man7.org/linux/man-pages/man2/getpgid.2.html
fn send(child: &Child, signal: Signal, own_group: bool) -> SignalTarget {
    if !own_group {
        let _ = child.signal(signal);
        return SignalTarget::Process;
    }
    let reached_group = child.signal_group(signal).is_ok();
    let pid = rustix::process::Pid::from_raw(child.pid());
    let in_group = pid.is_some_and(|p| rustix::process::getpgid(Some(p)) == Ok(p));
    if reached_group && in_group {
        return SignalTarget::Group;
    }
    let _ = child.signal(signal);
    if reached_group {
        SignalTarget::GroupAndProcess
    } else {
        SignalTarget::Process
    }
}

/// How the run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The child exited with a status word (exited or killed by a signal).
    Finished(WaitStatus),
    /// The child was killed after `--timeout`; the status word is what wait4 reported.
    TimedOut {
        /// The final wait status (normally killed by SIGTERM or SIGKILL).
        status: WaitStatus,
        /// The last signal coldtrace sent.
        sent: Signal,
        /// Whom it reached: the group, or also (or only) the child that had left it.
        to: SignalTarget,
    },
    /// Waiting for the child failed; its process group (or the child) was killed with
    /// SIGKILL so that no `--timeout` or forwarded signal is lost, then reaped.
    WaitFailed {
        /// The error of the wait.
        errno: Errno,
        /// The wait status after the kill.
        status: WaitStatus,
    },
    /// The child ran but `wait4` could not reap it (someone else did: no status, no usage).
    Unreaped {
        /// wait4's error (ECHILD).
        errno: Errno,
    },
    /// The child stopped for a tracer that is coldtrace itself (it called `PTRACE_TRACEME`,
    /// then exec'd: the kernel stops it with SIGTRAP and waits for its debugger, which
    /// coldtrace is not). Seen at once, never waited on: coldtrace killed its tree with SIGKILL.
    Traced {
        /// The signal of the tracing stop (SIGTRAP after an exec).
        stop: Signal,
        /// The final wait status (killed by SIGKILL).
        status: WaitStatus,
    },
    /// The child ran (it reached `execve`) but was not measured: the spawner ended while it
    /// started it, before saying when (see `measure/spawner.rs`). The status is wait4's.
    Unmeasured {
        /// The final wait status.
        status: WaitStatus,
    },
    /// The program never started.
    FailedToStart {
        /// The failed step.
        stage: ChildStage,
        /// The kernel's error.
        errno: Errno,
    },
}

impl Outcome {
    /// Whether the run succeeded: exited with code 0.
    pub fn succeeded(&self) -> bool {
        matches!(self, Outcome::Finished(s) if s.code() == Some(0))
    }

    /// Why a run is rejected (`None` when it succeeded).
    pub fn failure_reason(&self) -> Option<String> {
        match self {
            _ if self.succeeded() => None,
            Outcome::Finished(status) => Some(status.to_string()),
            Outcome::TimedOut { sent, .. } => Some(format!("timed out (sent {sent})")),
            Outcome::FailedToStart { errno, .. } => Some(format!("failed to start: {errno}")),
            Outcome::WaitFailed { errno, .. } => {
                Some(format!("waiting failed ({errno}); killed with SIGKILL"))
            }
            Outcome::Unreaped { errno } => Some(format!("could not be reaped: {errno}")),
            Outcome::Traced { stop, .. } => Some(format!(
                "stopped by {stop} for a tracer (PTRACE_TRACEME); killed"
            )),
            Outcome::Unmeasured { status } => Some(format!(
                "ran but not measured (the spawner ended while starting it); {status}"
            )),
        }
    }
}

/// Why coldtrace killed a run's whole tree with SIGKILL (beyond a `--timeout`'s own SIGKILL
/// to the command's process group, which [`Outcome::TimedOut`] tells).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TreeKill {
    /// The `--timeout`: its grace period ended, or the command ended within it and left
    /// processes behind.
    Timeout,
    /// A second request to stop (SIGTERM, SIGINT…) arrived while the first was being acted on.
    SecondRequest(Signal),
    /// `--kill-after` passed after the first request to stop.
    KillAfter,
    /// The command stopped for coldtrace as its tracer ([`Outcome::Traced`]).
    Traced,
}

impl TreeKill {
    /// In words, for records: `timeout`, `second SIGTERM`, `--kill-after`, `traced`.
    pub fn name(self) -> String {
        match self {
            TreeKill::Timeout => "timeout".into(),
            TreeKill::SecondRequest(sig) => format!("second {sig}"),
            TreeKill::KillAfter => "--kill-after".into(),
            TreeKill::Traced => "traced".into(),
        }
    }
}

/// Per-run limits and signal policy.
pub struct RunLimits<'a> {
    /// Per-run time limit.
    pub timeout_ns: Option<u64>,
    /// Grace period after SIGTERM before SIGKILL.
    pub kill_after_ns: u64,
    /// After a request to stop was forwarded to the command, SIGKILL to its whole tree this
    /// long after (`--kill-after` given); a second request kills it at once either way.
    pub escalate_after_ns: Option<u64>,
    /// Processes left running by earlier runs (PID and start time): never signalled, and
    /// neither are their descendants.
    pub spared: &'a [(i32, u64)],
    /// What to do with processes the command leaves running when it exits normally.
    pub survivors: SurvivorPolicy,
    /// The cgroup leaf the command is born in (the spawn options name it too), if any.
    pub group: Option<&'a Leaf>,
    /// The signals coldtrace watches while waiting (SIGINT, SIGQUIT, SIGTERM, SIGHUP, SIGCHLD).
    pub signals: Option<&'a SignalFd>,
    /// Perf events to count (empty: none).
    pub counters: &'a [PerfEvent],
    /// Read the zombie's `/proc/PID/io` and `schedstat` before reaping (off with `--minimal`).
    pub inspect_child: bool,
    /// Reap adopted orphans after the run (coldtrace is a subreaper; `None`: do not).
    pub orphans: Option<&'a Subreaper>,
    /// Called every [`TICK_NS`] while the child runs, to bound what grows with the child's
    /// output; `None`: the wait sleeps until something happens. It is given a check of
    /// whether the child has exited: an exit is only seen when the tick returns, so a tick that
    /// does much (moving output to a file) must stop at once when the check says so, or the
    /// wall time would include its work.
    pub tick: Option<&'a Tick<'a>>,
    /// The tree's states from the scheduler's tracepoints, or its tasks from perf's task
    /// records (`None`: neither).
    pub tree: Option<TreeSource<'a>>,
}

impl<'a> RunLimits<'a> {
    /// The run's processes: its cgroup leaf's members, or coldtrace's descendants.
    fn members(&self) -> Members<'a> {
        Members {
            spared: self.spared,
            group: self.group,
        }
    }
}

/// What [`RunLimits::tick`] calls, given a check of whether the child has exited.
pub type Tick<'a> = dyn Fn(&dyn Fn() -> bool) + 'a;

/// How often [`RunLimits::tick`] is called while a child runs.
pub const TICK_NS: u64 = 20_000_000;

/// What one run produced.
#[derive(Clone, Debug)]
pub struct RunResult {
    /// How it ended.
    pub outcome: Outcome,
    /// CLOCK_MONOTONIC from just before the spawn to the moment the exit was seen.
    pub wall_ns: Option<u64>,
    /// wait4's usage for this child and its waited-for descendants.
    pub rusage: Option<ResourceUsage>,
    /// coldtrace's own memory right before the spawn.
    pub floor: FloorReading,
    /// `/proc/PID/io` of the zombie (the child alone).
    pub child_io: Option<ChildIo>,
    /// `/proc/PID/schedstat` of the zombie (the child alone).
    pub sched: Option<ChildSched>,
    /// `/proc/PID/stat`'s CPU times of the zombie (its threads; its waited-for descendants).
    pub stat: Option<ChildStat>,
    /// A signal that asked coldtrace to stop (SIGINT, SIGQUIT, SIGTERM, SIGHUP) during the run.
    pub interrupted_by: Option<Signal>,
    /// The first signal that stopped the child while coldtrace waited, if any.
    pub stopped_by: Option<Signal>,
    /// Orphans (adopted as subreaper or PID 1) reaped after the run.
    pub orphans_reaped: u64,
    /// After the run, coldtrace (a subreaper) had no child left: nothing the run started still
    /// holds the descriptors it was given (see [`coldtrace_syscalls::OrphanSweep`]). `false`
    /// when unknown (orphans not reaped, no subreaper).
    pub no_descendant_left: bool,
    /// Kernel perf counters, from the child's exec to its exit (`None` unless asked for).
    pub counters: Option<Vec<CounterReading>>,
    /// Why coldtrace killed the run's whole tree, if it did.
    pub tree_killed: Option<TreeKill>,
    /// The processes the run left running when its command exited, and what became of them.
    pub survivors: Survivors,
    /// What the run's cgroup leaf counted for its whole tree (filled in by the caller, which
    /// owns the leaf).
    pub cgroup: Option<crate::measure::cgroup::RunGroup>,
    /// The tree's states over the wall time, or its tasks (`None`: no tree source).
    pub tree: Option<TreeResult>,
}

/// Where a run's child is cloned: coldtrace's own child stack and floor, and the batch's
/// spawner when it has one (`None`: in-process, as with `--minimal`).
pub struct Via<'a> {
    /// The child stack of an in-process spawn.
    pub stack: &'a mut ChildStack,
    /// coldtrace's own floor, for an in-process spawn.
    pub floor: &'a mut Floor,
    /// The spawner, when the batch runs one.
    pub spawner: &'a mut Option<BatchSpawner>,
}

/// Runs `program` once and measures it: the steps of the module's note, in that order.
///
/// A child the spawner made but did not answer for (it ended in the clone's vfork wait) is
/// this run's all the same: it is never started again, it is awaited and reaped as any other
/// (its `--timeout` counted from the request), and the run is [`Outcome::Unmeasured`] — or
/// [`Outcome::FailedToStart`] when the exec pipe says it failed before `execve`.
pub fn measure(
    program: &Program,
    options: &SpawnOptions<'_>,
    mut via: Via<'_>,
    limits: &RunLimits<'_>,
    watcher: &mut dyn WhileWaiting,
) -> RunResult {
    // Before the floor: starting the rings may grow coldtrace's memory, never after it.
    let tree = limits.tree;
    if let Some(t) = tree {
        t.begin();
    }
    let requested_ns = crate::measure::clock::monotonic_ns();
    let mut watch = ReplyWatch {
        signals: limits.signals,
        ..ReplyWatch::default()
    };
    let (spawned, start_ns, floor_reading, session) =
        spawn(program, options, &mut via, limits, &mut watch);
    let unmeasured = start_ns.is_none();
    let start_ns = start_ns.unwrap_or(requested_ns);
    let child = match spawned {
        Ok(child) => child,
        Err(failure) => {
            if let Some(t) = tree {
                t.abandon();
            }
            let mut result = not_started(failure, floor_reading, session);
            result.interrupted_by = watch.requests[0];
            return result;
        }
    };
    if let Some(t) = tree {
        t.started(child.pid(), start_ns);
    }
    let group = options.new_process_group;
    let mut waiting = Waiting::new(child, limits, group, start_ns, watcher.wants_ticks());
    waiting.after_reply(&watch, watcher);
    waiting.until_exit(watcher);
    let end_ns = waiting.end_ns.filter(|_| !unmeasured);
    let wall_ns = end_ns.map(|end| end.saturating_sub(start_ns));
    let tree = tree.and_then(|t| t.end_or_abandon(end_ns));
    waiting.attribute_queued_signals();
    let (child_io, sched, stat) = waiting.inspect();
    let (interrupted_by, stopped_by) = (waiting.interrupted_by, waiting.stopped_by);
    let mut tree_killed = waiting.tree_killed;
    let grace_ns = waiting.grace_deadline();
    let (mut outcome, rusage) = waiting.reap();
    say_fallbacks_once();
    if unmeasured {
        outcome = unmeasured_outcome(outcome, via.spawner.as_ref());
    }
    let sweep = limits.orphans.map(Subreaper::reap_orphans);
    let orphans_reaped = sweep.map_or(0, |s| s.reaped as u64);
    let no_descendant_left = sweep.is_some_and(|s| s.no_descendant_left);
    let survivors = survivors_of(limits, &outcome, &mut tree_killed, grace_ns, start_ns)
        .after_exit(no_descendant_left);
    if survivors.action == Some(SurvivorAction::Killed) && grace_ns.is_some() {
        tree_killed.get_or_insert(TreeKill::Timeout);
    }
    let counters = session.map(PerfSession::read_after_exit);
    RunResult {
        outcome,
        wall_ns,
        rusage,
        floor: floor_reading,
        child_io,
        sched,
        stat,
        interrupted_by,
        stopped_by,
        orphans_reaped,
        no_descendant_left,
        counters,
        tree_killed,
        survivors,
        cgroup: None,
        tree,
    }
}

/// The outcome of a run whose child the spawner did not answer for: [`Outcome::FailedToStart`]
/// when the child wrote a failure before `execve` to the exec pipe, else it ran:
/// [`Outcome::Unmeasured`] with its status.
fn unmeasured_outcome(reaped: Outcome, spawner: Option<&BatchSpawner>) -> Outcome {
    if let Some(e) = spawner.and_then(BatchSpawner::failed_before_exec) {
        return Outcome::FailedToStart {
            stage: e.stage,
            errno: e.errno,
        };
    }
    match reaped {
        Outcome::Finished(status)
        | Outcome::TimedOut { status, .. }
        | Outcome::WaitFailed { status, .. }
        | Outcome::Traced { status, .. } => Outcome::Unmeasured { status },
        other => other,
    }
}

/// How the processes left after the command's reap are dealt with. After a kill of the whole
/// tree, what it could not reach (a descendant in a session or group of its own, reparented
/// to coldtrace when its parent died) is killed at once; after a `--timeout` whose command
/// ended within the grace period, the rest of the tree (sent SIGTERM with it) has until the
/// end of that period; otherwise `--survivors` decides, a wait bounded by `--timeout`.
fn survivors_of<'a>(
    limits: &RunLimits<'a>,
    outcome: &Outcome,
    tree_killed: &mut Option<TreeKill>,
    grace_ns: Option<u64>,
    start_ns: u64,
) -> Sweep<'a> {
    let now = crate::measure::clock::monotonic_ns();
    let (policy, deadline_ns) = match (tree_killed, outcome) {
        (Some(_), _) => (SurvivorPolicy::Wait, Some(now)),
        (None, Outcome::TimedOut { .. }) => (SurvivorPolicy::Wait, Some(grace_ns.unwrap_or(now))),
        (None, _) => (
            limits.survivors,
            limits.timeout_ns.map(|t| start_ns.saturating_add(t)),
        ),
    };
    Sweep {
        policy,
        members: limits.members(),
        signals: limits.signals,
        orphans: limits.orphans,
        deadline_ns,
    }
}

/// The spawn step: the child (or why none), the clock right before the clone, the floor, and
/// the perf counters opened for the child. Counters are opened with inherit + enable_on_exec
/// on the process that clones (the spawner, or coldtrace itself): they only start counting in
/// the child, at its exec, and the kernel folds the child's counts back in when it exits.
fn spawn(
    program: &Program,
    options: &SpawnOptions<'_>,
    via: &mut Via<'_>,
    limits: &RunLimits<'_>,
    watch: &mut ReplyWatch<'_>,
) -> (
    Result<Child, SpawnError>,
    Option<u64>,
    FloorReading,
    Option<PerfSession>,
) {
    let counters = |on: Option<i32>| {
        (!limits.counters.is_empty()).then(|| PerfSession::open_before_spawn(limits.counters, on))
    };
    if let Some(spawner) = via.spawner.as_mut() {
        let session = counters(Some(spawner.pid()));
        match spawner.spawn(program, options, watch) {
            Started::Child(child, start_ns, floor) => return (Ok(child), start_ns, floor, session),
            Started::Failed(e, floor) => return (Err(e), Some(0), floor, session),
            // Asked to stop while the spawner was awaited, and it started nothing: nor does
            // coldtrace.
            Started::InProcess if watch.requests[0].is_some() => {
                let e = SpawnError {
                    stage: ChildStage::Clone,
                    errno: Errno::INTR,
                };
                return (Err(e), Some(0), FloorReading::default(), session);
            }
            Started::InProcess => {}
        }
    }
    let session = counters(None);
    let image = program.image();
    let floor_reading = via.floor.reset_and_read();
    let start_ns = crate::measure::clock::monotonic_ns();
    (
        image.spawn(options, via.stack),
        Some(start_ns),
        floor_reading,
        session,
    )
}

/// The result of a run whose program never started: the failed step, and nothing measured.
fn not_started(
    failure: SpawnError,
    floor: FloorReading,
    session: Option<PerfSession>,
) -> RunResult {
    RunResult {
        outcome: Outcome::FailedToStart {
            stage: failure.stage,
            errno: failure.errno,
        },
        wall_ns: None,
        rusage: None,
        floor,
        child_io: None,
        sched: None,
        stat: None,
        interrupted_by: None,
        stopped_by: None,
        orphans_reaped: 0,
        no_descendant_left: false,
        counters: session.map(PerfSession::read_after_exit),
        tree_killed: None,
        survivors: Survivors::default(),
        cgroup: None,
        tree: None,
    }
}

/// A spawned child from its spawn to its reaping, and what coldtrace saw and did meanwhile.
struct Waiting<'w> {
    child: Child,
    limits: &'w RunLimits<'w>,
    /// The child was started in a process group of its own.
    group: bool,
    /// When `--timeout` (then its grace period) runs out.
    deadline: Option<u64>,
    /// When `--kill-after` runs out after a request to stop was forwarded.
    escalate_at: Option<u64>,
    /// Why the whole tree was killed, if it was.
    tree_killed: Option<TreeKill>,
    /// The stop of a tracing stop for coldtrace (the child called `PTRACE_TRACEME`).
    traced: Option<Signal>,
    /// The last signal of a `--timeout`, and whom it reached.
    sent: Option<(Signal, SignalTarget)>,
    interrupted_by: Option<Signal>,
    stopped_by: Option<Signal>,
    /// When the exit was seen (`None`: waiting failed).
    end_ns: Option<u64>,
    wait_error: Option<Errno>,
    ticks: TickSchedule,
}

impl<'w> Waiting<'w> {
    fn new(
        child: Child,
        limits: &'w RunLimits<'w>,
        group: bool,
        start_ns: u64,
        wants_ticks: bool,
    ) -> Waiting<'w> {
        Waiting {
            child,
            limits,
            group,
            deadline: limits.timeout_ns.map(|t| start_ns.saturating_add(t)),
            escalate_at: None,
            tree_killed: None,
            traced: None,
            sent: None,
            interrupted_by: None,
            stopped_by: None,
            end_ns: None,
            wait_error: None,
            ticks: TickSchedule::new(start_ns, wants_ticks),
        }
    }

    /// What came while the spawner's reply was awaited, acted on before the wait: requests to
    /// stop (the first is passed on, a second kills the tree, as in the wait), and a SIGCHLD
    /// the reply's wait took, which may have been this child's stop (a tracer's stop at its
    /// `execve`): no other comes for it, so the child is looked at once.
    fn after_reply(&mut self, watch: &ReplyWatch<'_>, watcher: &mut dyn WhileWaiting) {
        for sig in watch.requests.into_iter().flatten() {
            self.on_stop_request(sig);
        }
        if watch.child_changed {
            self.on_child_changed(watcher);
        }
    }

    /// Waits until the child exits (or waiting fails), handling every wake-up on the way.
    fn until_exit(&mut self, watcher: &mut dyn WhileWaiting) {
        loop {
            let wake = self.next_wake();
            let event = self.child.wait(self.limits.signals, wake);
            if self.on_event(event, watcher).is_break() {
                break;
            }
        }
    }

    /// The wait wakes for the deadline, the bounding tick, the progress tick (see
    /// `waiting.rs` for what it may cost) and the tree tracer's next read of its rings,
    /// whichever comes first; a wake-up before the deadline is a tick.
    fn next_wake(&self) -> Option<u64> {
        let trim_at = self
            .limits
            .tick
            .map(|_| crate::measure::clock::monotonic_ns().saturating_add(TICK_NS));
        let drain_at = self.limits.tree.and_then(TreeSource::next_drain_ns);
        [
            self.deadline,
            self.escalate_at,
            trim_at,
            self.ticks.next_ns(),
            drain_at,
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// One wake-up of the wait; `Break` once the child has exited or waiting failed.
    fn on_event(
        &mut self,
        event: Result<WaitEvent, Errno>,
        watcher: &mut dyn WhileWaiting,
    ) -> ControlFlow<()> {
        let now = crate::measure::clock::monotonic_ns();
        match event {
            Ok(WaitEvent::TimedOut) if self.escalate_at.is_some_and(|at| at <= now) => {
                self.escalate_at = None;
                self.kill_tree(TreeKill::KillAfter);
            }
            Ok(WaitEvent::TimedOut) if self.deadline.is_none_or(|d| now < d) => {
                if let Some(tick) = self.limits.tick {
                    let child = &self.child;
                    tick(&|| child.has_exited().unwrap_or(true));
                }
                self.ticks.fire_if_due(watcher);
                // The tree's rings are read only while the command runs: its exit is seen
                // when this tick returns, so a read begun after it would be counted in the
                // wall time; the read after the exit takes what is left.
                if let Some(tree) = self.limits.tree {
                    let due = tree.next_drain_ns().is_some_and(|t| t <= now);
                    if due && !self.child.has_exited().unwrap_or(true) {
                        tree.drain_if_due();
                    }
                }
            }
            Ok(WaitEvent::Exited) => {
                self.end_ns = Some(now);
                return ControlFlow::Break(());
            }
            Ok(WaitEvent::Signal(sig)) if sig == Signal::CHLD => self.on_child_changed(watcher),
            Ok(WaitEvent::Signal(sig)) => {
                // A stop whose SIGCHLD is queued behind this request (a signalfd gives the
                // lowest signal first) is seen now, before the SIGCONT passed on ends it.
                self.on_child_changed(watcher);
                self.on_stop_request(sig);
            }
            Ok(WaitEvent::TimedOut) => self.time_out(),
            Err(errno) => {
                // Never lose a --timeout or a forwarded signal: end the command now.
                self.wait_error = Some(errno);
                send(&self.child, Signal::KILL, self.group);
                return ControlFlow::Break(());
            }
        }
        ControlFlow::Continue(())
    }

    /// A SIGCHLD: the child may have stopped. A tracing stop for coldtrace itself (the child
    /// called `PTRACE_TRACEME` and exec'd) would last for ever: the tree is killed at once and
    /// the stop is the run's outcome. Any other stop is told once and waited out.
    fn on_child_changed(&mut self, watcher: &mut dyn WhileWaiting) {
        let Ok(Some(stop)) = self.child.stopped_by() else {
            return;
        };
        if self.traced.is_none() && traced_by_us(self.child.pid()) {
            self.end_ns = Some(crate::measure::clock::monotonic_ns());
            self.traced = Some(stop);
            self.kill_tree(TreeKill::Traced);
            return;
        }
        if self.stopped_by.is_none() {
            self.stopped_by = Some(stop);
            watcher.stopped(stop);
        }
    }

    /// A request to stop (SIGTERM, SIGINT…). The first is passed on to the command, followed
    /// by SIGCONT for a command that is stopped (a stopped process acts on nothing else); the
    /// terminal's SIGINT and SIGQUIT already reached a command in coldtrace's process group.
    /// A second request, or `--kill-after` after the first, kills the whole tree.
    fn on_stop_request(&mut self, sig: Signal) {
        if self.interrupted_by.is_some() {
            self.kill_tree(TreeKill::SecondRequest(sig));
            return;
        }
        self.interrupted_by = Some(sig);
        if (sig != Signal::INT && sig != Signal::QUIT) || self.group {
            send(&self.child, sig, self.group);
            send(&self.child, Signal::CONT, self.group);
        }
        self.escalate_at = self
            .limits
            .escalate_after_ns
            .map(|after| crate::measure::clock::monotonic_ns().saturating_add(after));
    }

    /// SIGKILL to the command, its group, and every descendant of coldtrace but the spared
    /// ones (the rest, reparented when their parents die, after the reap: [`measure`]).
    fn kill_tree(&mut self, why: TreeKill) {
        send(&self.child, Signal::KILL, self.group);
        self.limits.members().kill();
        self.tree_killed.get_or_insert(why);
        self.escalate_at = None;
    }

    /// The deadline passed: SIGTERM (and SIGCONT) first, SIGKILL after the grace period.
    fn time_out(&mut self) {
        let next = if self.sent.is_none() {
            Signal::TERM
        } else {
            Signal::KILL
        };
        let to = send(&self.child, next, self.group);
        if next == Signal::TERM {
            // A stopped child cannot act on SIGTERM until it is continued. Descendants that
            // left the command's group (setsid, setpgid) get both as well.
            send(&self.child, Signal::CONT, self.group);
            let pgid = if self.group { self.child.pid() } else { 0 };
            for sig in [Signal::TERM, Signal::CONT] {
                self.limits.members().signal_outside_group(sig, pgid);
            }
            self.deadline = Some(
                crate::measure::clock::monotonic_ns().saturating_add(self.limits.kill_after_ns),
            );
        } else {
            self.deadline = None;
            self.kill_tree(TreeKill::Timeout);
        }
        self.sent = Some((next, to));
    }

    /// A terminal's SIGINT reaches the child and coldtrace together; when the child dies of it
    /// first, the exit and the signal arrive in one wake-up (the exit wins). Attribute a signal
    /// still queued to this run.
    fn attribute_queued_signals(&mut self) {
        if let Some(signals) = self.limits.signals {
            while let Ok(Some(sig)) = signals.take() {
                if sig != Signal::CHLD {
                    self.interrupted_by.get_or_insert(sig);
                }
            }
        }
    }

    /// When the grace period of a `--timeout` ends (`None`: no timeout fired, or its SIGKILL
    /// was sent already).
    fn grace_deadline(&self) -> Option<u64> {
        self.sent.and(self.deadline)
    }

    /// The zombie's own `/proc` figures, read before it is reaped (when asked for).
    ///
    /// `stat` is read only where it can change the record: its ticks split the CPU that
    /// rusage counts beyond the main thread's (`cpu_by_place`), and where rusage's user + sys
    /// (the zombie's, as `wait4` will return it) is no more than the main thread's
    /// `schedstat` time there is nothing to split: both parts are 0 whatever the ticks say.
    /// A single-threaded command that started nothing (most short ones) costs one `/proc`
    /// file less per run.
    fn inspect(&mut self) -> (Option<ChildIo>, Option<ChildSched>, Option<ChildStat>) {
        if !self.limits.inspect_child {
            return (None, None, None);
        }
        let pid = self.child.pid();
        let (io, sched) = (ChildIo::read(pid), ChildSched::read(pid));
        let main_ns = sched.and_then(|s| s.on_cpu_ns);
        let total_ns = self
            .child
            .usage_at_exit()
            .map(|u| u.user_us.saturating_add(u.sys_us).saturating_mul(1000));
        let stat = match (main_ns, total_ns) {
            (None, _) => None,
            (Some(main), Some(total)) if total <= main => None,
            _ => ChildStat::read(pid),
        };
        (io, sched, stat)
    }

    /// Reaps the child with wait4: how the run ended, and its usage.
    fn reap(self) -> (Outcome, Option<ResourceUsage>) {
        match self.child.reap() {
            Ok((status, usage)) => {
                let outcome = match (self.wait_error, self.traced, self.sent) {
                    (Some(errno), _, _) => Outcome::WaitFailed { errno, status },
                    (None, Some(stop), _) => Outcome::Traced { stop, status },
                    (None, None, Some((sent, to))) => Outcome::TimedOut { status, sent, to },
                    (None, None, None) => Outcome::Finished(status),
                };
                (outcome, Some(usage))
            }
            Err(e) => (Outcome::Unreaped { errno: e.errno }, None),
        }
    }
}

/// Whether process `pid` is in a tracing stop (`t`) with coldtrace as its tracer
/// (`TracerPid`, [proc_pid_status(5)]): a debugger that attached to it on its own is left to
/// do its work.
///
/// [proc_pid_status(5)]: https://man7.org/linux/man-pages/man5/proc_pid_status.5.html
fn traced_by_us(pid: i32) -> bool {
    let in_tracing_stop = descendants::Proc::read(pid).is_some_and(|p| p.state == 't');
    let me = rustix::process::getpid().as_raw_nonzero().get();
    in_tracing_stop
        && crate::measure::procfs::read_text(&format!("/proc/{pid}/status"), 1 << 16).and_then(
            |text| {
                text.lines()
                    .find_map(|l| l.strip_prefix("TracerPid:"))
                    .and_then(|v| v.trim().parse::<i32>().ok())
            },
        ) == Some(me)
}

/// Says once per process that children are watched without pidfds or close fds one by one:
/// after the reap, never between the clock reads (a write to a terminal is no part of a run).
fn say_fallbacks_once() {
    static SAID_PIDFD: AtomicBool = AtomicBool::new(false);
    static SAID_CLOSE: AtomicBool = AtomicBool::new(false);
    if let Some(why) = coldtrace_syscalls::spawn::pidfd_unavailable() {
        if !SAID_PIDFD.swap(true, Ordering::Relaxed) {
            eprintln!("coldtrace: note: no pidfds here ({why}); waiting through SIGCHLD");
        }
    }
    if let Some(errno) = coldtrace_syscalls::spawn::close_range_unavailable() {
        if !SAID_CLOSE.swap(true, Ordering::Relaxed) {
            eprintln!("coldtrace: note: close_range is refused ({errno}); closing fds one by one");
        }
    }
}
