//! A run's `tree` object: the states of the command's whole process tree over the run's wall
//! time (R, Q, D, S, from the scheduler's tracepoints), how much of the tasks' time on a CPU
//! the hypervisor stole (their turns by the tracepoints against the kernel's CPU time), and
//! where the tree's CPU time went by the zombie's own accounting (the main thread, its other
//! threads, the descendants it waited for), which needs no privilege. Serialize-only; every
//! figure is `null` when unknown.
#![forbid(unsafe_code)]

use crate::measure::tree::replay::TreeStates;
use crate::measure::tree::source::TreeResult;
use crate::measure::tree::tasks::SOURCE_TASK_RECORDS;
use crate::measure::zombie::{ChildSched, ChildStat};
use crate::serialize_struct;
use coldtrace_syscalls::ResourceUsage;

/// The source of the states, as records name it.
pub const SOURCE_TRACEPOINTS: &str = "sched tracepoints";

/// The `tree` object of a run record.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TreeRecord {
    /// [`SOURCE_TRACEPOINTS`] when the run was traced, `null` when no tree source was allowed.
    pub source: Option<&'static str>,
    /// Why the four states are `null`: no tree source here, or this run's records may be
    /// incomplete (records lost, a CPU came online), and, after it, why `tasks` is `null`
    /// when perf's task records could not count them; `null` when the states are known.
    pub unavailable: Option<String>,
    /// R: some task of the tree on a CPU, ns.
    pub on_cpu_ns: Option<u64>,
    /// Q: none on a CPU, some waiting for one, ns.
    pub queued_ns: Option<u64>,
    /// D: none runnable, some in uninterruptible sleep (storage, page faults, kernel locks),
    /// ns.
    pub uninterruptible_ns: Option<u64>,
    /// S: all asleep (or none left), ns. R + Q + D + S = `wall_ns`.
    pub sleeping_ns: Option<u64>,
    /// Of S, the time after the tree's last task had exited until coldtrace saw the exit
    /// (its wake-up: longer on a busy machine), ns.
    pub after_exit_ns: Option<u64>,
    /// Of R, Q and D, the time before the command's first process existed: coldtrace creating
    /// it (the spawner's work, not the command's), ns.
    pub spawn_ns: Option<u64>,
    /// The tree's tasks' turns on a CPU by the scheduler's switches, summed over the tasks
    /// (R counts an instant once however many ran in it): the hypervisor's steal included,
    /// as in R, ns.
    pub on_cpu_sum_ns: Option<u64>,
    /// The kernel's CPU time of the same tasks, which excludes the steal, ns: the run's cgroup
    /// leaf's (every task of the tree, waited for or not), or, without one, the main thread's
    /// schedstat where it was the whole tree; `null` otherwise, and where the run left
    /// processes running (the leaf then counts them after the run).
    pub cpu_ns: Option<u64>,
    /// `on_cpu_sum_ns` − `cpu_ns` (0 when below): time the tasks held a CPU that the kernel
    /// did not count as theirs — the hypervisor's steal (and interrupts, on kernels built with
    /// `CONFIG_IRQ_TIME_ACCOUNTING`), ns. `null` with `cpu_ns`.
    pub steal_ns: Option<u64>,
    /// Tasks (processes and threads) the tree had: the command's first process and every task
    /// a task of the tree created (an exec chain is one task).
    pub tasks: Option<u64>,
    /// Where `tasks` came from: [`SOURCE_TRACEPOINTS`], or [`SOURCE_TASK_RECORDS`] where the
    /// tracepoints are not allowed; `null` when neither could be had.
    pub tasks_source: Option<&'static str>,
    /// Scheduler records read during the run (every process on every CPU).
    pub records: Option<u64>,
    /// Records the kernel said it dropped.
    pub lost_records: Option<u64>,
    /// CPU time of the main thread (schedstat), ns.
    pub main_thread_cpu_ns: Option<u64>,
    /// CPU time of the process's other threads: `/proc/PID/stat` utime + stime (10 ms ticks)
    /// less the main thread's, ns ([`cpu_by_place`]).
    pub other_threads_cpu_ns: Option<u64>,
    /// CPU time of the descendants it waited for: rusage CPU less the process's own, ns
    /// ([`cpu_by_place`]).
    pub children_cpu_ns: Option<u64>,
}
serialize_struct!(TreeRecord {
    source,
    unavailable,
    on_cpu_ns,
    queued_ns,
    uninterruptible_ns,
    sleeping_ns,
    after_exit_ns,
    spawn_ns,
    on_cpu_sum_ns,
    cpu_ns,
    steal_ns,
    tasks,
    tasks_source,
    records,
    lost_records,
    main_thread_cpu_ns,
    other_threads_cpu_ns,
    children_cpu_ns
});

/// Where a process's CPU went, ns: the main thread, its other threads, its waited-for
/// descendants. The three add up to rusage user + sys; the split between the last two is to
/// the 10 ms of `/proc/PID/stat`'s ticks.
///
/// Both ticked figures are truncated, so each gives a lower bound: the other threads used at
/// least `(utime + stime) ticks − main`, the descendants at least `(cutime + cstime) ticks`;
/// what neither bound covers (less than four ticks) goes to the descendants, unless only the
/// threads' bound says they ran: a process with threads and no children (a JVM, numpy's
/// OpenBLAS) then shows no child CPU at all, rather than its tick remainder, which differs
/// from run to run (−10 ms "in child processes" in a first-run penalty).
pub fn cpu_by_place(
    sched: Option<ChildSched>,
    stat: Option<ChildStat>,
    rusage: Option<ResourceUsage>,
) -> (Option<u64>, Option<u64>, Option<u64>) {
    let main = sched.and_then(|s| s.on_cpu_ns);
    let total = rusage.map(|u| (u.user_us + u.sys_us) * 1000);
    let (Some(main), Some(total)) = (main, total) else {
        return (main, None, None);
    };
    let elsewhere = total.saturating_sub(main);
    // Nothing beyond the main thread: both parts are 0 whatever the ticks say (the zombie's
    // `stat` is not read then).
    if elsewhere == 0 {
        return (Some(main), Some(0), Some(0));
    }
    let Some(stat) = stat else {
        return (Some(main), None, None);
    };
    let tick_ns = 1_000_000_000 / rustix::param::clock_ticks_per_second().max(1);
    let threads_at_least = ((stat.utime_ticks + stat.stime_ticks) * tick_ns)
        .saturating_sub(main)
        .min(elsewhere);
    let children_at_least =
        ((stat.cutime_ticks + stat.cstime_ticks) * tick_ns).min(elsewhere - threads_at_least);
    let threads = if children_at_least == 0 && threads_at_least > 0 {
        elsewhere
    } else {
        threads_at_least
    };
    (Some(main), Some(threads), Some(elsewhere - threads))
}

/// The kernel's CPU time of a traced tree whose turns on a CPU sum to `states.on_cpu_sum_ns`:
/// its cgroup leaf's `cgroup_ns`, else the main thread's `main_ns` where it was the only task;
/// and the steal, what the turns hold beyond it.
///
/// The cgroup's `cpu.stat` usage and the schedstat runtime are the scheduler's own runtime,
/// which leaves out what the hypervisor stole (`CONFIG_PARAVIRT_TIME_ACCOUNTING`); the turns
/// are timed by the switches' timestamps, which do not. The cgroup counts every task of the
/// tree from its birth in the leaf, as the turns do; rusage would miss the descendants never
/// waited for.
pub fn steal(
    states: &TreeStates,
    cgroup_ns: Option<u64>,
    main_ns: Option<u64>,
) -> (Option<u64>, Option<u64>) {
    let cpu = cgroup_ns.or(main_ns.filter(|_| states.tasks == 1));
    (cpu, cpu.map(|c| states.on_cpu_sum_ns.saturating_sub(c)))
}

impl TreeRecord {
    /// The record of a run: its tree source's reading (`None` when it had none, then
    /// `why_not` says why), the zombie's figures, and the CPU time its cgroup leaf counted
    /// (`None` without one, or where processes outlived the run).
    pub fn of(
        result: Option<&TreeResult>,
        why_not: Option<&str>,
        cpu: (Option<u64>, Option<u64>, Option<u64>),
        cgroup_cpu_ns: Option<u64>,
    ) -> TreeRecord {
        let (main_thread_cpu_ns, other_threads_cpu_ns, children_cpu_ns) = cpu;
        let mut record = TreeRecord {
            main_thread_cpu_ns,
            other_threads_cpu_ns,
            children_cpu_ns,
            ..TreeRecord::default()
        };
        let why_not = why_not.unwrap_or("not traced");
        let reading = match result {
            None => {
                record.unavailable = Some(why_not.to_string());
                return record;
            }
            Some(TreeResult::Counted(count)) => {
                record.tasks_source = Some(SOURCE_TASK_RECORDS);
                record.unavailable = Some(match &count.tasks {
                    Ok(n) => {
                        record.tasks = Some(*n);
                        why_not.to_string()
                    }
                    Err(why) => format!("{why_not}; tasks unknown: {why}"),
                });
                return record;
            }
            Some(TreeResult::Traced(reading)) => reading,
        };
        record.source = Some(SOURCE_TRACEPOINTS);
        record.records = Some(reading.records);
        record.lost_records = Some(reading.lost);
        match &reading.states {
            Ok(s) => {
                record.on_cpu_ns = Some(s.on_cpu_ns);
                record.queued_ns = Some(s.queued_ns);
                record.uninterruptible_ns = Some(s.uninterruptible_ns);
                record.sleeping_ns = Some(s.sleeping_ns);
                record.after_exit_ns = Some(s.after_exit_ns);
                record.spawn_ns = Some(s.spawn_ns);
                record.on_cpu_sum_ns = Some(s.on_cpu_sum_ns);
                (record.cpu_ns, record.steal_ns) = steal(s, cgroup_cpu_ns, main_thread_cpu_ns);
                record.tasks = Some(s.tasks);
                record.tasks_source = Some(SOURCE_TRACEPOINTS);
            }
            Err(why) => record.unavailable = Some(why.clone()),
        }
        record
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::tree::session::TreeReading;
    use crate::measure::tree::tasks::TaskReading;

    #[test]
    fn the_cpu_splits_into_places_that_add_up_to_rusage() {
        let sched = ChildSched {
            on_cpu_ns: Some(30_000_000),
            ..ChildSched::default()
        };
        let stat = ChildStat {
            utime_ticks: 4,
            stime_ticks: 1,
            cutime_ticks: 2,
            cstime_ticks: 0,
        };
        let usage = ResourceUsage {
            user_us: 60_000,
            sys_us: 12_000,
            ..ResourceUsage::default()
        };
        let tick = 1_000_000_000 / rustix::param::clock_ticks_per_second();
        let (main, threads, children) = cpu_by_place(Some(sched), Some(stat), Some(usage));
        assert_eq!(main, Some(30_000_000));
        assert_eq!(threads, Some(5 * tick - 30_000_000));
        assert_eq!(
            main.unwrap() + threads.unwrap() + children.unwrap(),
            72_000_000
        );
        // (own ticks, descendants' ticks) → (other threads, child processes): threads and no
        // waited-for descendant give all the CPU beyond the main thread to the threads, the
        // tick remainder included; descendants and no other thread (own ticks below the main
        // thread's CPU) give it to the descendants.
        for ((own, theirs), split) in [((5, 0), (42_000_000, 0)), ((2, 3), (0, 42_000_000))] {
            let stat = ChildStat {
                utime_ticks: own,
                cutime_ticks: theirs,
                ..ChildStat::default()
            };
            let (_, threads, children) = cpu_by_place(Some(sched), Some(stat), Some(usage));
            assert_eq!((threads, children), (Some(split.0), Some(split.1)));
        }
        // Without the stat file: the main thread only.
        assert_eq!(
            cpu_by_place(Some(sched), None, Some(usage)),
            (Some(30_000_000), None, None)
        );
        // Nothing beyond the main thread (rusage's µs truncate below schedstat's ns): no
        // other place ran, with or without the stat file.
        let alone = ResourceUsage {
            user_us: 29_000,
            sys_us: 1_000,
            ..ResourceUsage::default()
        };
        for stat in [None, Some(stat)] {
            assert_eq!(
                cpu_by_place(Some(sched), stat, Some(alone)),
                (Some(30_000_000), Some(0), Some(0))
            );
        }
    }

    #[test]
    fn a_reading_fills_the_states_or_says_why_not() {
        let states = TreeStates {
            on_cpu_ns: 1,
            queued_ns: 2,
            uninterruptible_ns: 3,
            sleeping_ns: 4,
            after_exit_ns: 1,
            spawn_ns: 1,
            tasks: 5,
            on_cpu_sum_ns: 8,
        };
        let ok = TreeResult::Traced(TreeReading {
            states: Ok(states),
            records: 10,
            lost: 0,
        });
        let r = TreeRecord::of(Some(&ok), None, (None, None, None), Some(6));
        assert_eq!(
            (r.source, r.uninterruptible_ns, r.tasks, r.tasks_source),
            (
                Some(SOURCE_TRACEPOINTS),
                Some(3),
                Some(5),
                Some(SOURCE_TRACEPOINTS)
            )
        );
        assert_eq!(
            (r.on_cpu_sum_ns, r.cpu_ns, r.steal_ns),
            (Some(8), Some(6), Some(2))
        );
        // Without a cgroup, five tasks' CPU time is not known (rusage misses the descendants
        // not waited for): the turns, and no steal said to be 0.
        let r = TreeRecord::of(Some(&ok), None, (Some(5), None, None), None);
        assert_eq!(
            (r.on_cpu_sum_ns, r.cpu_ns, r.steal_ns),
            (Some(8), None, None)
        );
        let lost = TreeResult::Traced(TreeReading {
            states: Err("the kernel dropped 4 scheduler records".into()),
            records: 10,
            lost: 4,
        });
        let r = TreeRecord::of(Some(&lost), None, (None, None, None), Some(6));
        assert_eq!((r.tasks, r.tasks_source), (None, None));
        assert_eq!((r.on_cpu_sum_ns, r.cpu_ns, r.steal_ns), (None, None, None));
        assert_eq!(r.lost_records, Some(4));
        assert!(r.unavailable.unwrap().contains("dropped 4"));
        let r = TreeRecord::of(None, Some("needs root"), (Some(1), None, None), Some(1));
        assert_eq!(
            (r.source, r.unavailable.as_deref(), r.tasks_source),
            (None, Some("needs root"), None)
        );
        // Untraced, the tasks come from perf's task records, or say why they do not.
        let counted = |tasks| {
            let count = TreeResult::Counted(TaskReading { tasks, lost: 0 });
            TreeRecord::of(Some(&count), Some("needs root"), (None, None, None), None)
        };
        let r = counted(Ok(7));
        assert_eq!(
            (r.source, r.tasks, r.tasks_source, r.unavailable.as_deref()),
            (None, Some(7), Some(SOURCE_TASK_RECORDS), Some("needs root"))
        );
        let r = counted(Err("the kernel dropped 2 task records".into()));
        assert_eq!((r.tasks, r.on_cpu_ns), (None, None));
        assert_eq!(
            r.unavailable.as_deref(),
            Some("needs root; tasks unknown: the kernel dropped 2 task records")
        );
    }

    #[test]
    fn steal_is_the_turns_beyond_the_kernels_cpu_time() {
        let states = |tasks, on_cpu_sum_ns| TreeStates {
            tasks,
            on_cpu_sum_ns,
            ..TreeStates::default()
        };
        // The cgroup's CPU time, for a tree of any size: 3 ms of 40 stolen.
        let ms = 1_000_000;
        assert_eq!(
            steal(&states(9, 40 * ms), Some(37 * ms), Some(10 * ms)),
            (Some(37 * ms), Some(3 * ms))
        );
        // Without a cgroup, the main thread's where it was the only task.
        assert_eq!(
            steal(&states(1, 40 * ms), None, Some(38 * ms)),
            (Some(38 * ms), Some(2 * ms))
        );
        assert_eq!(
            steal(&states(2, 40 * ms), None, Some(38 * ms)),
            (None, None)
        );
        // The kernel's µs above the turns (a clock read after the window): no steal, not less.
        assert_eq!(
            steal(&states(1, 40 * ms), Some(40 * ms + 3_000), None),
            (Some(40 * ms + 3_000), Some(0))
        );
    }

    #[test]
    fn steal_injected_into_replayed_records_is_found_and_r_never_exceeds_cpu_unsaid() {
        use crate::measure::tree::decode::{OffCpu, SchedEvent, SchedKind};
        use crate::measure::tree::replay::Replay;
        let ms = 1_000_000;
        let switch = |t: u64, cpu, prev, prev_state, next| SchedEvent {
            time_ns: t * ms,
            cpu,
            kind: SchedKind::Switch {
                prev,
                prev_state,
                next,
            },
        };
        let fork = |t: u64, parent, child| SchedEvent {
            time_ns: t * ms,
            cpu: 0,
            kind: SchedKind::Fork { parent, child },
        };
        // A shell (100) runs 0–10 ms and 40–45, its child (101) 10–40 on the same CPU, and a
        // grandchild (102, never waited for) 20–30 on the other: R 45 ms, turns 55 ms. The
        // hypervisor took 12 ms of them (2 of the shell's, 8 of the child's, 2 of the
        // grandchild's), so the kernel counted 43: 13 + 22 + 8.
        let events = [
            fork(0, 1, 100),
            switch(0, 0, 1, OffCpu::Uninterruptible, 100),
            fork(9, 100, 101),
            switch(10, 0, 100, OffCpu::Sleeping, 101),
            fork(19, 101, 102),
            switch(20, 1, 0, OffCpu::Runnable, 102),
            switch(30, 1, 102, OffCpu::Dead, 0),
            switch(40, 0, 101, OffCpu::Dead, 100),
            switch(45, 0, 100, OffCpu::Dead, 0),
        ];
        let mut replay = Replay::new(100, 0);
        events.iter().for_each(|e| replay.apply(e));
        let states = replay.finish(45 * ms).unwrap();
        let traced = TreeResult::Traced(TreeReading {
            states: Ok(states),
            records: 9,
            lost: 0,
        });
        // rusage has the shell's 13 ms and the waited-for child's 22, not the grandchild's.
        let by_place = (Some(13 * ms), Some(0), Some(22 * ms));
        let r = TreeRecord::of(Some(&traced), None, by_place, Some(43 * ms));
        assert_eq!(
            (r.on_cpu_ns, r.on_cpu_sum_ns, r.cpu_ns, r.steal_ns),
            (Some(45 * ms), Some(55 * ms), Some(43 * ms), Some(12 * ms))
        );
        // R is 10 ms above rusage (8 of them the grandchild's CPU, not steal) and 2 ms above
        // the kernel's CPU time: within the steal said.
        let r_ns = r.on_cpu_ns.unwrap();
        assert!(r_ns > r.cpu_ns.unwrap());
        assert!(r_ns <= r.cpu_ns.unwrap() + r.steal_ns.unwrap() + states.spawn_ns);
        // Without a cgroup, three tasks: the steal is unknown, not 0 and not R − rusage.
        let r = TreeRecord::of(Some(&traced), None, by_place, None);
        assert_eq!((r.cpu_ns, r.steal_ns), (None, None));
    }
}
