//! The states of a whole process tree over a run's wall time, replayed from its scheduler
//! events. Pure: events in, four durations out.
//!
//! For each instant of the window the tree is in exactly one state: **R** when some task of
//! the tree is on a CPU; else **Q** when some task is runnable, waiting for a CPU; else **D**
//! when some task is in uninterruptible sleep; else **S** (all asleep, or none left). So the
//! four add up to the window exactly, for any tree, serial or parallel; for a single task they
//! are its on-CPU, run-queue and off-CPU time, the last split into D and S.
//!
//! The tree is every task descended from the root by `fork`/`clone` (threads included; an exec
//! keeps the ID, and a thread that execs takes its leader's). Before the root exists, the
//! window belongs to the thread that creates it (the spawner: whoever calls `clone` — it is the
//! root's fork event that names it), which is running when the window opens.
//!
//! Where each task is: on a CPU from the switch that puts it there until the switch that takes
//! it off *that* CPU (tracked per CPU, so that a migration whose two switches carry
//! timestamps a hair out of order across CPUs cannot leave it "off" while it runs); off a CPU
//! in the state its switch-out gave (`prev_state`) until a wake-up makes it runnable.
//!
//! Beside R, the replay sums each task's turns on a CPU over the tree's tasks: the time they
//! held a CPU by the switches' timestamps, which (unlike R) counts an instant once per task on
//! a CPU in it, and which (unlike the scheduler's runtime) includes what the hypervisor stole
//! from those CPUs meanwhile. Against the kernel's CPU time of the same tasks it gives that
//! steal (the run record's `tree.steal_ns`).
#![forbid(unsafe_code)]

use crate::measure::tree::decode::{OffCpu, SchedEvent, SchedKind};

/// The tree's four states over a window, and how many tasks it had.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TreeStates {
    /// R: some task of the tree on a CPU.
    pub on_cpu_ns: u64,
    /// Q: none on a CPU, some runnable and waiting for one.
    pub queued_ns: u64,
    /// D: none runnable, some in uninterruptible sleep.
    pub uninterruptible_ns: u64,
    /// S: all asleep (or none left).
    pub sleeping_ns: u64,
    /// Of S, the time after the tree's last task had exited, until the exit was seen.
    pub after_exit_ns: u64,
    /// The time before the root existed, while the spawner created it (in R, Q or D).
    pub spawn_ns: u64,
    /// Tasks (processes and threads) the tree had, the root included.
    pub tasks: u64,
    /// The tree's tasks' turns on a CPU, summed over the tasks (the spawner's before the
    /// root existed left out): R counts an instant once however many ran in it, this once per
    /// task. Like R, it includes the time the hypervisor stole from those CPUs.
    pub on_cpu_sum_ns: u64,
}

impl TreeStates {
    /// R + Q + D + S: the window.
    pub fn total_ns(&self) -> u64 {
        self.on_cpu_ns + self.queued_ns + self.uninterruptible_ns + self.sleeping_ns
    }
}

/// A CPU number standing for "on some CPU, not known which": the spawner when the window
/// opens.
const SOME_CPU: u32 = u32::MAX;

/// The tree's state classes, in priority order: R, Q, D, S.
const CLASSES: usize = 4;

#[derive(Clone, Copy, Debug)]
struct Task {
    /// The CPU it runs on, if it is on one.
    on_cpu: Option<u32>,
    /// Since when, while it is on one.
    since_ns: u64,
    /// Its state while off a CPU.
    off: OffCpu,
    /// It passed `sched_process_exit`: a switch out asleep is its last where the kernel does
    /// not say `X` or `Z` of it. Preempted (runnable) or in uninterruptible sleep on its way
    /// out, it runs again to finish exiting.
    exiting: bool,
}

impl Task {
    /// A task off any CPU, in `off`.
    fn off(off: OffCpu) -> Task {
        Task {
            on_cpu: None,
            since_ns: 0,
            off,
            exiting: false,
        }
    }

    /// It takes `cpu` at `t`; returns the turn it still had on another CPU (a migration whose
    /// switches were stamped out of order), which ends here.
    fn take(&mut self, cpu: u32, t: u64) -> u64 {
        let turn = self.leave(t);
        self.on_cpu = Some(cpu);
        self.since_ns = t;
        turn
    }

    /// It leaves its CPU at `t`; returns the turn that ends (0 when it was on none).
    fn leave(&mut self, t: u64) -> u64 {
        match self.on_cpu.take() {
            Some(_) => t.saturating_sub(self.since_ns),
            None => 0,
        }
    }

    /// 0 R, 1 Q, 2 D, 3 S.
    fn class(&self) -> usize {
        match (self.on_cpu, self.off) {
            (Some(_), _) => 0,
            (None, OffCpu::Runnable) => 1,
            (None, OffCpu::Uninterruptible) => 2,
            (None, OffCpu::Sleeping | OffCpu::Dead) => 3,
        }
    }
}

/// A map kept as a list: a tree has few tasks alive at once, and a list keeps the code that
/// runs between two spawns small (every page of it is on the next child's max RSS floor).
#[derive(Debug)]
struct SmallMap<K, V>(Vec<(K, V)>);

impl<K, V> Default for SmallMap<K, V> {
    fn default() -> Self {
        SmallMap(Vec::new())
    }
}

impl<K: PartialEq + Copy, V> SmallMap<K, V> {
    fn position(&self, key: &K) -> Option<usize> {
        self.0.iter().position(|(k, _)| k == key)
    }

    fn get(&self, key: &K) -> Option<&V> {
        self.position(key).map(|i| &self.0[i].1)
    }

    fn get_mut(&mut self, key: &K) -> Option<&mut V> {
        let i = self.position(key)?;
        Some(&mut self.0[i].1)
    }

    fn contains_key(&self, key: &K) -> bool {
        self.position(key).is_some()
    }

    fn insert(&mut self, key: K, value: V) {
        match self.position(&key) {
            Some(i) => self.0[i].1 = value,
            None => self.0.push((key, value)),
        }
    }

    fn remove(&mut self, key: &K) -> Option<V> {
        self.position(key).map(|i| self.0.swap_remove(i).1)
    }

    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// Why no states came out of a replay.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unreplayable {
    /// No event created the root: it was lost, or the root was never spawned.
    RootNeverCreated,
    /// More events came before the root's creation than a spawn can take (a bound on memory).
    TooManyBeforeTheRoot,
}

/// Events before the root's fork, kept until it names the spawner: a spawn takes
/// microseconds, so this many means the fork event is missing.
const MAX_BEFORE_ROOT: usize = 100_000;

/// The replay of one run's window.
#[derive(Debug)]
pub struct Replay {
    root: i32,
    start_ns: u64,
    /// Events before the root's fork (then the spawner is unknown).
    before_root: Option<Vec<SchedEvent>>,
    tasks: SmallMap<i32, Task>,
    /// The tree's task on each CPU.
    running: SmallMap<u32, i32>,
    /// Tasks per class.
    counts: [u32; CLASSES],
    /// Time per class.
    totals: [u64; CLASSES],
    /// Up to when time has been given to a class.
    now_ns: u64,
    /// Time with no task of the tree left (after the root's creation).
    after_exit_ns: u64,
    /// From the window's start to the root's creation.
    spawn_ns: u64,
    seen: u64,
    overflowed: bool,
    /// The tree's tasks' turns on a CPU that have ended, summed.
    turns_ns: u64,
}

impl Replay {
    /// A replay of the tree of `root` over a window opening at `start_ns`.
    pub fn new(root: i32, start_ns: u64) -> Replay {
        Replay {
            root,
            start_ns,
            before_root: Some(Vec::new()),
            tasks: SmallMap::default(),
            running: SmallMap::default(),
            counts: [0; CLASSES],
            totals: [0; CLASSES],
            now_ns: start_ns,
            after_exit_ns: 0,
            spawn_ns: 0,
            seen: 0,
            overflowed: false,
            turns_ns: 0,
        }
    }

    /// Applies one event; events come in time order. Events before the window are ignored.
    pub fn apply(&mut self, event: &SchedEvent) {
        if event.time_ns < self.start_ns {
            return;
        }
        if let Some(waiting) = &mut self.before_root {
            match event.kind {
                SchedKind::Fork { parent, child } if child == self.root => {
                    let before = std::mem::take(waiting);
                    self.before_root = None;
                    self.spawner_until_fork(parent, &before, event.time_ns);
                }
                _ if waiting.len() >= MAX_BEFORE_ROOT => self.overflowed = true,
                _ => waiting.push(*event),
            }
            return;
        }
        self.advance(event.time_ns);
        self.step(event);
    }

    /// The window up to `end_ns`, in the four states. `Err` when the root's creation was
    /// never seen.
    pub fn finish(mut self, end_ns: u64) -> Result<TreeStates, Unreplayable> {
        if self.overflowed {
            return Err(Unreplayable::TooManyBeforeTheRoot);
        }
        if self.before_root.is_some() {
            return Err(Unreplayable::RootNeverCreated);
        }
        self.advance(end_ns);
        for (_, task) in &mut self.tasks.0 {
            self.turns_ns += task.leave(end_ns);
        }
        let [r, q, d, s] = self.totals;
        Ok(TreeStates {
            on_cpu_ns: r,
            queued_ns: q,
            uninterruptible_ns: d,
            sleeping_ns: s,
            after_exit_ns: self.after_exit_ns,
            spawn_ns: self.spawn_ns,
            tasks: self.seen,
            on_cpu_sum_ns: self.turns_ns,
        })
    }

    /// The CPUs the tree's tasks are on after the events applied so far, when every task left
    /// is on one (empty: none is left); `None` when one is off a CPU, where a record written on
    /// any CPU could change its state, or before the root's creation.
    pub fn only_on_cpus(&self) -> Option<Vec<u32>> {
        if self.before_root.is_some() {
            return None;
        }
        self.tasks
            .0
            .iter()
            .map(|(_, t)| t.on_cpu.filter(|&c| c != SOME_CPU))
            .collect()
    }

    /// The spawner is the tree from the window's start (running) until it forks the root at
    /// `fork_ns`: replay what it did meanwhile, then hand the tree to the root, runnable.
    fn spawner_until_fork(&mut self, spawner: i32, before: &[SchedEvent], fork_ns: u64) {
        let running = Task {
            on_cpu: Some(SOME_CPU),
            since_ns: self.start_ns,
            ..Task::off(OffCpu::Runnable)
        };
        self.insert_existing(spawner, running);
        for e in before {
            self.advance(e.time_ns);
            self.step(e);
        }
        self.advance(fork_ns);
        self.spawn_ns = fork_ns - self.start_ns;
        // The spawner is not part of the tree: from here on it only waits for it. Its turns
        // were coldtrace's, not the tree's: they leave no sum.
        self.remove(spawner);
        self.turns_ns = 0;
        self.insert(self.root, Task::off(OffCpu::Runnable));
    }

    /// Gives the time since the last event to the tree's state until `t`.
    fn advance(&mut self, t: u64) {
        if t <= self.now_ns {
            return;
        }
        let class = self.counts.iter().position(|&n| n > 0).unwrap_or(3);
        self.totals[class] += t - self.now_ns;
        if self.tasks.is_empty() {
            self.after_exit_ns += t - self.now_ns;
        }
        self.now_ns = t;
    }

    fn step(&mut self, event: &SchedEvent) {
        match event.kind {
            SchedKind::Fork { parent, child } => {
                if self.tasks.contains_key(&parent) {
                    self.insert(child, Task::off(OffCpu::Runnable));
                }
            }
            SchedKind::Wakeup { pid } => {
                self.update(pid, |t| t.off = OffCpu::Runnable);
            }
            SchedKind::Exit { pid } => {
                self.update(pid, |t| t.exiting = true);
            }
            SchedKind::Exec { pid, old_pid } if pid != old_pid => {
                if let Some(task) = self.remove(old_pid) {
                    self.drop_task(pid);
                    self.insert_existing(pid, task);
                }
            }
            SchedKind::Exec { .. } => {}
            SchedKind::Switch {
                prev,
                prev_state,
                next,
            } => self.switch(event.time_ns, event.cpu, prev, prev_state, next),
            SchedKind::Arrive { pid } => self.arrive(event.time_ns, event.cpu, pid),
        }
    }

    /// Whatever of the tree ran on `cpu` left it at `t`.
    fn vacate(&mut self, t: u64, cpu: u32) {
        if let Some(was) = self.running.remove(&cpu) {
            let turn = self.update(was, |task| match task.on_cpu {
                Some(c) if c == cpu => task.leave(t),
                _ => 0,
            });
            self.turns_ns += turn.unwrap_or(0);
        }
    }

    /// `pid` took `cpu` at `t`, if it is of the tree.
    fn occupy(&mut self, t: u64, cpu: u32, pid: i32) {
        if let Some(turn) = self.update(pid, |task| task.take(cpu, t)) {
            self.turns_ns += turn;
            self.running.insert(cpu, pid);
        }
    }

    /// `pid` is on `cpu`: nothing changes when its `sched_switch` said so already. Otherwise
    /// that record was never written, and the task of the tree that the replay had there (if
    /// any) has left it.
    fn arrive(&mut self, t: u64, cpu: u32, pid: i32) {
        if self.tasks.get(&pid).is_some_and(|t| t.on_cpu == Some(cpu)) {
            return;
        }
        self.vacate(t, cpu);
        self.occupy(t, cpu, pid);
    }

    /// `prev` leaves `cpu` in `state` at `t`, `next` takes it.
    fn switch(&mut self, t: u64, cpu: u32, prev: i32, state: OffCpu, next: i32) {
        // Whatever of the tree ran here is off it now (normally `prev`).
        self.vacate(t, cpu);
        if let Some(task) = self.tasks.get(&prev) {
            if state == OffCpu::Dead || (task.exiting && state == OffCpu::Sleeping) {
                self.drop_task(prev);
            } else {
                let turn = self.update(prev, |task| {
                    task.off = state;
                    match task.on_cpu {
                        Some(SOME_CPU) => task.leave(t),
                        _ => 0,
                    }
                });
                self.turns_ns += turn.unwrap_or(0);
            }
        }
        self.occupy(t, cpu, next);
    }

    fn insert(&mut self, pid: i32, task: Task) {
        self.drop_task(pid);
        self.seen += 1;
        self.insert_existing(pid, task);
    }

    /// Removes a task that leaves the tree now, ending a turn it still had (on another CPU,
    /// its switch there stamped after this one).
    fn drop_task(&mut self, pid: i32) {
        if let Some(mut task) = self.remove(pid) {
            self.turns_ns += task.leave(self.now_ns);
        }
    }

    fn insert_existing(&mut self, pid: i32, task: Task) {
        self.counts[task.class()] += 1;
        if let Some(cpu) = task.on_cpu.filter(|&c| c != SOME_CPU) {
            self.running.insert(cpu, pid);
        }
        self.tasks.insert(pid, task);
    }

    fn remove(&mut self, pid: i32) -> Option<Task> {
        let task = self.tasks.remove(&pid)?;
        self.counts[task.class()] -= 1;
        if let Some(cpu) = task.on_cpu {
            if self.running.get(&cpu) == Some(&pid) {
                self.running.remove(&cpu);
            }
        }
        Some(task)
    }

    /// Changes a task of the tree (nothing for a task outside it: `None`), keeping the counts.
    fn update<R>(&mut self, pid: i32, change: impl FnOnce(&mut Task) -> R) -> Option<R> {
        let task = self.tasks.get_mut(&pid)?;
        self.counts[task.class()] -= 1;
        let out = change(task);
        self.counts[task.class()] += 1;
        Some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    fn at(ms: u64, cpu: u32, kind: SchedKind) -> SchedEvent {
        SchedEvent {
            time_ns: ms * MS,
            cpu,
            kind,
        }
    }

    fn fork(ms: u64, parent: i32, child: i32) -> SchedEvent {
        at(ms, 0, SchedKind::Fork { parent, child })
    }

    fn switch(ms: u64, cpu: u32, prev: i32, prev_state: OffCpu, next: i32) -> SchedEvent {
        at(
            ms,
            cpu,
            SchedKind::Switch {
                prev,
                prev_state,
                next,
            },
        )
    }

    fn wake(ms: u64, pid: i32) -> SchedEvent {
        at(ms, 0, SchedKind::Wakeup { pid })
    }

    fn replay(events: &[SchedEvent], end_ms: u64) -> TreeStates {
        let mut r = Replay::new(100, 0);
        for e in events {
            r.apply(e);
        }
        r.finish(end_ms * MS).unwrap()
    }

    fn ms(s: TreeStates) -> [u64; 5] {
        [
            s.on_cpu_ns / MS,
            s.queued_ns / MS,
            s.uninterruptible_ns / MS,
            s.sleeping_ns / MS,
            s.tasks,
        ]
    }

    use OffCpu::{Dead, Runnable, Sleeping, Uninterruptible};

    #[test]
    fn one_task_runs_reads_waits_for_a_cpu_and_exits() {
        // Spawner 1 runs 0–1 ms and forks 100; 100 runs 2–10, reads 10–50 (D), is woken at 50,
        // waits for the CPU until 53, runs until 60 and exits; the exit is seen at 61.
        let events = [
            fork(1, 1, 100),
            wake(1, 100),
            switch(2, 0, 1, Uninterruptible, 100),
            switch(10, 0, 100, Uninterruptible, 0),
            wake(50, 100),
            switch(53, 0, 7, Runnable, 100),
            at(60, 0, SchedKind::Exit { pid: 100 }),
            switch(60, 0, 100, Dead, 0),
        ];
        let s = replay(&events, 61);
        // R: 0–1 (spawner) + 2–10 + 53–60; Q: 1–2 + 50–53; D: 10–50; S: 60–61, after the exit.
        assert_eq!(ms(s), [16, 4, 40, 1, 1]);
        assert_eq!(s.after_exit_ns, MS);
        assert_eq!(s.total_ns(), 61 * MS);
    }

    #[test]
    fn a_shell_waiting_on_two_parallel_readers_is_uninterruptible_not_asleep() {
        // sh (100) forks 101 and 102 on two CPUs and sleeps in wait4 (S) while they read (D).
        let events = [
            fork(0, 1, 100),
            switch(0, 0, 1, Uninterruptible, 100),
            fork(1, 100, 101),
            fork(1, 100, 102),
            switch(2, 0, 100, Sleeping, 101),
            switch(2, 1, 0, Runnable, 102),
            switch(3, 0, 101, Uninterruptible, 0),
            switch(3, 1, 102, Uninterruptible, 0),
            wake(40, 101),
            switch(40, 0, 0, Runnable, 101),
            switch(41, 0, 101, Dead, 0),
            wake(70, 102),
            switch(70, 1, 0, Runnable, 102),
            switch(71, 1, 102, Dead, 100),
            switch(72, 1, 100, Dead, 0),
        ];
        let s = replay(&events, 72);
        // R: 0–3, 40–41, 70–72 = 6; Q: none; D: 3–40, 41–70 = 66; S: 0.
        assert_eq!(ms(s), [6, 0, 66, 0, 3]);
    }

    #[test]
    fn a_wake_up_from_outside_the_tree_ends_a_sleep() {
        // 100 blocks on a FIFO (S) at 5; a writer outside the tree wakes it at 305.
        let events = [
            fork(0, 1, 100),
            switch(0, 0, 1, Uninterruptible, 100),
            switch(5, 0, 100, Sleeping, 0),
            switch(100, 1, 0, Runnable, 555),
            wake(305, 100),
            switch(306, 0, 0, Runnable, 100),
            switch(307, 0, 100, Dead, 0),
        ];
        assert_eq!(ms(replay(&events, 307)), [6, 1, 0, 300, 1]);
    }

    #[test]
    fn threads_count_and_a_migration_seen_out_of_order_stays_on_a_cpu() {
        let events = [
            fork(0, 1, 100),
            switch(0, 0, 1, Uninterruptible, 100),
            fork(1, 100, 200),               // a thread
            switch(2, 1, 0, Runnable, 200),  // it runs on CPU 1
            switch(5, 0, 100, Sleeping, 0),  // the main thread sleeps
            switch(9, 0, 0, Runnable, 200),  // the thread on CPU 0 (stamped early) …
            switch(10, 1, 200, Runnable, 0), // … before it left CPU 1
            switch(20, 0, 200, Dead, 0),     // it exits
            wake(30, 100),
            switch(30, 0, 0, Runnable, 100),
            switch(31, 0, 100, Dead, 0),
        ];
        // R: 0–20 and 30–31; S: 20–30.
        assert_eq!(ms(replay(&events, 31)), [21, 0, 0, 10, 2]);
    }

    #[test]
    fn a_thread_that_execs_takes_its_leaders_id() {
        let events = [
            fork(0, 1, 100),
            switch(0, 0, 1, Uninterruptible, 100),
            fork(1, 100, 101),
            switch(1, 1, 0, Runnable, 101),
            switch(2, 0, 100, Dead, 0), // the leader dies in de_thread
            at(
                3,
                1,
                SchedKind::Exec {
                    pid: 100,
                    old_pid: 101,
                },
            ),
            switch(20, 1, 100, Dead, 0), // the exec'd program, now 100, exits
        ];
        assert_eq!(ms(replay(&events, 20)), [20, 0, 0, 0, 2]);
    }

    #[test]
    fn outsiders_pid_reuse_and_events_before_the_window_change_nothing() {
        let events = [
            fork(0, 1, 100),
            switch(0, 0, 1, Uninterruptible, 100),
            fork(1, 999, 500), // not ours
            switch(2, 1, 0, Runnable, 500),
            switch(4, 0, 100, Sleeping, 0),
            wake(8, 100),
            switch(8, 0, 0, Runnable, 100),
            switch(9, 0, 100, Dead, 0),
            fork(9, 999, 100), // its ID reused by an outsider after it died
            switch(9, 0, 0, Runnable, 100),
        ];
        assert_eq!(ms(replay(&events, 12)), [5, 0, 0, 7, 1]);
        let mut late = Replay::new(100, 10 * MS);
        late.apply(&fork(5, 1, 100));
        assert_eq!(late.finish(20 * MS), Err(Unreplayable::RootNeverCreated));
    }

    #[test]
    fn an_arrival_without_its_switch_puts_the_task_on_the_cpu() {
        // 100 is preempted at 10 by 73, a task whose records the kernel does not write: the
        // switch from 73 back to 100 at 11 is missing, only 100's arrival says it. Without
        // it, 100 would wait for a CPU until its next switch at 30.
        let arrive = |ms, pid| at(ms, 0, SchedKind::Arrive { pid });
        let events = [
            fork(0, 1, 100),
            switch(0, 0, 1, Uninterruptible, 100),
            arrive(0, 100),
            switch(10, 0, 100, Runnable, 73),
            arrive(10, 73),
            arrive(11, 100),
            switch(30, 0, 100, Dead, 0),
        ];
        assert_eq!(ms(replay(&events, 30)), [29, 1, 0, 0, 1]);
        // The arrival of another task takes a task of the tree off the CPU all the same.
        let events = [
            fork(0, 1, 100),
            switch(0, 0, 1, Uninterruptible, 100),
            arrive(5, 555),
            switch(9, 1, 0, Runnable, 100),
            switch(12, 1, 100, Dead, 0),
        ];
        assert_eq!(ms(replay(&events, 12)), [8, 4, 0, 0, 1]);
    }

    #[test]
    fn the_spawner_is_the_tree_until_the_fork_and_may_be_preempted() {
        // Spawner 1 preempted 1–3 ms before it forks at 4.
        let events = [
            switch(1, 0, 1, Runnable, 77),
            switch(3, 0, 77, Sleeping, 1),
            fork(4, 1, 100),
            switch(5, 0, 1, Uninterruptible, 100),
            switch(6, 0, 100, Dead, 1),
        ];
        // R: 0–1, 3–4, 5–6; Q: 1–3, 4–5 (the new root waits for the CPU the spawner holds).
        assert_eq!(ms(replay(&events, 6)), [3, 3, 0, 0, 1]);
        let mut r = Replay::new(100, 0);
        events.iter().for_each(|e| r.apply(e));
        assert_eq!(r.finish(6 * MS).unwrap().spawn_ns, 4 * MS);
    }

    #[test]
    fn where_the_tree_is_known_only_while_every_task_is_on_a_cpu_or_gone() {
        let mut r = Replay::new(100, 0);
        let cpus = |r: &Replay| r.only_on_cpus();
        assert_eq!(cpus(&r), None, "before the root exists");
        r.apply(&fork(1, 1, 100));
        assert_eq!(cpus(&r), None, "the new root waits for a CPU");
        r.apply(&switch(2, 3, 1, Sleeping, 100));
        assert_eq!(cpus(&r), Some(vec![3]));
        r.apply(&switch(4, 3, 100, Sleeping, 0));
        assert_eq!(cpus(&r), None, "asleep: any CPU's wake-up could change it");
        r.apply(&wake(5, 100));
        r.apply(&switch(6, 1, 0, Runnable, 100));
        r.apply(&at(7, 1, SchedKind::Exit { pid: 100 }));
        assert_eq!(cpus(&r), Some(vec![1]), "exiting, still on CPU 1");
        r.apply(&switch(8, 1, 100, Dead, 0));
        assert_eq!(cpus(&r), Some(vec![]), "gone");
    }

    #[test]
    fn turns_are_summed_per_task_where_r_counts_each_instant_once() {
        // 100 and its child 101 run side by side on CPUs 0 and 1, 10–30 ms: R is their union
        // (30 ms), their turns add up to 50 ms. The spawner's 0–1 ms before the fork is R, and
        // no task's turn.
        let events = [
            fork(1, 1, 100),
            switch(1, 0, 1, Uninterruptible, 100),
            fork(2, 100, 101),
            switch(10, 1, 0, Runnable, 101),
            switch(30, 1, 101, Dead, 0),
            switch(31, 0, 100, Dead, 0),
        ];
        let s = replay(&events, 31);
        assert_eq!((s.on_cpu_ns, s.on_cpu_sum_ns), (31 * MS, 50 * MS));
        // A migration stamped out of order counts its time once; a task still on a CPU when
        // the window closes counts up to there.
        let events = [
            fork(0, 1, 100),
            switch(0, 0, 1, Uninterruptible, 100),
            switch(5, 1, 0, Runnable, 100), // on CPU 1 (stamped early) …
            switch(6, 0, 100, Runnable, 0), // … before it left CPU 0
            switch(20, 1, 100, Sleeping, 0), // asleep
            wake(25, 100),
            switch(26, 0, 0, Runnable, 100), // running at the end, 40
        ];
        let s = replay(&events, 40);
        assert_eq!((s.on_cpu_ns, s.on_cpu_sum_ns), (34 * MS, 34 * MS));
    }

    #[test]
    fn an_exiting_task_preempted_or_blocked_on_its_way_out_runs_again() {
        // 100 passes sched_process_exit at 5, is preempted at 6 and finishes exiting 8–9: that
        // last turn is the tree's (dropping the task at its first switch after the exit made
        // it 2 ms of S here, and left the turn out of the sum). A third of a pyenv shim's 41
        // exiting tasks were preempted so; one in 750 blocked in D and came back.
        let events = [
            fork(0, 1, 100),
            switch(0, 0, 1, Uninterruptible, 100),
            at(5, 0, SchedKind::Exit { pid: 100 }),
            switch(6, 0, 100, Runnable, 15),
            switch(8, 0, 15, Sleeping, 100),
            switch(9, 0, 100, Dead, 0),
        ];
        let s = replay(&events, 10);
        assert_eq!(ms(s), [7, 2, 0, 1, 1]);
        assert_eq!((s.on_cpu_sum_ns, s.after_exit_ns), (7 * MS, MS));
        let blocked = [
            fork(0, 1, 100),
            switch(0, 0, 1, Uninterruptible, 100),
            at(5, 0, SchedKind::Exit { pid: 100 }),
            switch(6, 0, 100, Uninterruptible, 0),
            wake(7, 100),
            switch(8, 0, 0, Runnable, 100),
            switch(9, 0, 100, Dead, 0),
        ];
        let s = replay(&blocked, 10);
        assert_eq!(ms(s), [7, 1, 1, 1, 1]);
        assert_eq!(s.on_cpu_sum_ns, 7 * MS);
    }
}
