//! How many tasks a run's tree ran, where the scheduler's tracepoints are not allowed (an
//! unprivileged user under `perf_event_paranoid` 2, or `COLDTRACE_TREE=off`): perf's task
//! records, which need no privilege.
//!
//! A dummy software event with `task` and `inherit` ([`task_records_attr`]) is opened once per
//! batch on the processes that clone the measured children — the spawner, and coldtrace itself
//! for what it spawns in-process — one per online CPU (`cpu = N`: an inherited event on every CPU
//! cannot be mapped), each with its ring. Every task that process creates from then on, and
//! every task those create, inherits the events, so the kernel writes a `PERF_RECORD_FORK` for
//! each creation and a `PERF_RECORD_EXIT` for each exit into the ring of the CPU it happened
//! on, with its time on `CLOCK_MONOTONIC`. The rings are emptied right before each spawn, read
//! while a long run goes on, and at its end the records up to the moment the exit was seen are
//! put in time order and counted ([`count_tasks`]).
//!
//! The count is the number of distinct tasks, processes and threads, of the run's tree: the
//! command's first process, and every task created by a task of the tree (an `execve` keeps
//! the task, so an exec chain is one). It is the traced tree's `tasks`, from another source.
//!
//! Never a guess: a `PERF_RECORD_LOST` (other than one found first in a ring emptied before the
//! spawn, which counts records from before it), a ring found within [`FULL_MARGIN_BYTES`] of
//! full (a loss is only reported with the ring's next record), a CPU that came online, a failed
//! read, or no record of the command's creation leave the count unknown, and say why.
#![forbid(unsafe_code)]

use crate::measure::tree::drains::Drains;
use crate::measure::tree::tracefs::OnlineCpus;
use coldtrace_syscalls::perf::PerfTarget;
use coldtrace_syscalls::ring::{
    lost_count, task_record, task_records_attr, PerfRing, Record, TaskRecord,
};
use coldtrace_syscalls::Errno;
use std::collections::HashMap;

/// The source of a count, as records name it.
pub const SOURCE_TASK_RECORDS: &str = "perf task records";

/// Pages of ring per CPU at most (128 KiB: 4,096 records, a creation and an exit for each of
/// 2,048 tasks between two reads), halved while the locked-memory limit refuses it.
const PAGES: usize = 32;
/// A ring this close to full when read may have dropped records (a record here is 32 bytes).
pub const FULL_MARGIN_BYTES: u64 = 256;

/// What the task records said of one run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskReading {
    /// The tasks of the run's tree, or why the count is unknown.
    pub tasks: Result<u64, String>,
    /// Records the kernel said it dropped during the run.
    pub lost: u64,
}

/// Why [`count_tasks`] gave no count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Uncounted {
    /// No record shows the creation of the command's first process.
    RootNeverCreated,
}

/// The distinct tasks of the tree whose first process is `root`, from the task records
/// `records` (any order; sorted here by time) up to `until_ns`: the root, from the record of
/// its creation, and every task created afterwards by a task of the tree.
///
/// A task belongs to the tree while its process does: a process is followed from its creation
/// until its last thread has exited, by how many of its threads live (an `execve` by a thread
/// other than the leader ends the leader and the others, and the thread goes on under the
/// leader's ID, so each exit is still written once under the process's ID). A process ID that
/// a process of the tree freed and another process reuses is not the tree's.
pub fn count_tasks(root: u32, records: &mut [TaskRecord], until_ns: u64) -> Result<u64, Uncounted> {
    records.sort_by_key(|r| r.time_ns);
    let mut live: HashMap<u32, u32> = HashMap::new();
    let mut tasks = 0u64;
    let mut created = false;
    for r in records.iter().take_while(|r| r.time_ns <= until_ns) {
        if r.fork {
            let is_root = !created && r.pid == root && r.tid == root;
            if is_root || live.contains_key(&r.ppid) {
                created = true;
                *live.entry(r.pid).or_insert(0) += 1;
                tasks += 1;
            }
        } else if let Some(threads) = live.get_mut(&r.pid) {
            *threads -= 1;
            if *threads == 0 {
                live.remove(&r.pid);
            }
        }
    }
    if created {
        Ok(tasks)
    } else {
        Err(Uncounted::RootNeverCreated)
    }
}

/// One run being counted.
struct RunCount {
    root: Option<u32>,
    records: Vec<TaskRecord>,
    lost: u64,
    /// Why the count is unknown (the first reason found).
    problem: Option<String>,
    drains: Drains,
}

impl RunCount {
    fn new() -> RunCount {
        RunCount {
            root: None,
            records: Vec::new(),
            lost: 0,
            problem: None,
            drains: Drains::default(),
        }
    }

    fn flag(&mut self, why: impl FnOnce() -> String) {
        if self.problem.is_none() {
            self.problem = Some(why());
        }
    }

    /// Keeps a task record, counts a lost one (unless it is the first record of a ring
    /// emptied before the spawn: `before_the_run`), passes over any other.
    fn take(&mut self, record: &Record<'_>, before_the_run: bool) {
        if let Some(task) = task_record(record) {
            self.records.push(task);
        } else if let Some(lost) = lost_count(record).filter(|&n| n > 0) {
            if !before_the_run {
                self.lost += lost;
                let all = self.lost;
                self.problem = Some(format!("the kernel dropped {all} task records"));
            }
        }
    }

    /// The count up to `end_ns`, or why there is none.
    fn finish(mut self, end_ns: u64) -> TaskReading {
        let tasks = match (self.problem, self.root) {
            (Some(why), _) => Err(why),
            (None, None) => Err("the command was never started".into()),
            (None, Some(root)) => {
                count_tasks(root, &mut self.records, end_ns).map_err(|e| match e {
                    Uncounted::RootNeverCreated => {
                        "no task record shows the command's creation".to_string()
                    }
                })
            }
        };
        TaskReading {
            tasks,
            lost: self.lost,
        }
    }
}

/// One CPU's event and its ring.
struct CpuRing {
    cpu: u32,
    ring: PerfRing,
    /// Nothing was read from the ring since it was emptied at a run's start: a lost record
    /// found first counts records dropped before that.
    emptied: bool,
}

/// The task counter of a batch (see the module's note).
pub struct TaskCounter {
    rings: Vec<CpuRing>,
    online: OnlineCpus,
    cpus: Vec<u32>,
    run: Option<RunCount>,
}

impl TaskCounter {
    /// Opens the events on the process that clones the measured children: the spawner (`on`,
    /// its PID) and the calling thread, which clones those the spawner does not (a script
    /// run through the shell, options the spawner does not carry, a spawner that stopped
    /// answering); the calling thread alone without a spawner. `Err` says why there is no
    /// count.
    pub fn open(on: Option<i32>) -> Result<TaskCounter, String> {
        let mut online = OnlineCpus::open();
        let cpus = online.read().ok_or("cannot read the online CPUs")?;
        let mut rings = Vec::with_capacity(2 * cpus.len());
        let mut pages = PAGES;
        if let Some(pid) = on {
            rings = open_rings(PerfTarget::Process(pid), &cpus, &mut pages)?;
        }
        match open_rings(PerfTarget::CallingThread, &cpus, &mut pages) {
            Ok(own) => rings.extend(own),
            // The spawner's alone: a run coldtrace clones itself then has no count.
            Err(_) if !rings.is_empty() => {}
            Err(why) => return Err(why),
        }
        Ok(TaskCounter {
            rings,
            online,
            cpus,
            run: None,
        })
    }

    /// Right before a run's spawn: empties every ring.
    pub fn begin(&mut self) {
        for r in &mut self.rings {
            let unread = r.ring.unread().map_or(0, |u| u.len());
            r.ring.consume(unread as u64);
            r.emptied = true;
        }
        self.run = Some(RunCount::new());
    }

    /// Whether the online CPUs are not those the rings were opened on (checked at each run's
    /// end: a CPU that came online since has no ring, so its records are missed).
    fn online_changed(&mut self) -> bool {
        self.online.read().as_deref() != Some(&self.cpus[..])
    }

    /// The command's first process is `root`, spawned at `start_ns` (CLOCK_MONOTONIC).
    pub fn started(&mut self, root: i32, start_ns: u64) {
        if let Some(run) = &mut self.run {
            run.root = u32::try_from(root).ok();
            run.drains.start(start_ns);
        }
    }

    /// When the rings should next be read while the command runs (`None`: no run counted).
    pub fn next_drain_ns(&self) -> Option<u64> {
        self.run
            .as_ref()
            .filter(|r| r.root.is_some())
            .map(|r| r.drains.next_ns())
    }

    /// Reads the rings if a read is due.
    pub fn drain_if_due(&mut self) {
        let now = crate::measure::clock::monotonic_ns();
        if self.next_drain_ns().is_none_or(|t| now < t) {
            return;
        }
        let fullest = self.read();
        if let Some(run) = &mut self.run {
            run.drains.read_at(now, fullest);
        }
    }

    /// After the exit was seen at `end_ns`: the run's count (`None` when no run was begun).
    pub fn end(&mut self, end_ns: u64) -> Option<TaskReading> {
        self.read();
        let mut run = self.run.take()?;
        if self.online_changed() {
            run.flag(|| "the online CPUs are not those the task records follow".into());
        }
        Some(run.finish(end_ns))
    }

    /// The spawn failed, or waiting did: forgets the run (the next run empties the rings).
    pub fn abandon(&mut self) {
        self.run = None;
    }

    /// Moves every record from the rings into the run's list; how full the fullest ring was
    /// (0–1).
    fn read(&mut self) -> f64 {
        let Some(run) = self.run.as_mut() else {
            return 0.0;
        };
        let mut fullest = 0.0f64;
        for r in &mut self.rings {
            let (cpu, size) = (r.cpu, r.ring.data_bytes());
            let unread = r.ring.unread().map_or(0, |u| u.len() as u64);
            fullest = fullest.max(unread as f64 / size.max(1) as f64);
            if unread + FULL_MARGIN_BYTES > size {
                run.flag(|| {
                    format!(
                        "the task records' ring of CPU {cpu} filled up ({} KiB): records may \
                         have been lost",
                        size / 1024
                    )
                });
            }
            let emptied = &mut r.emptied;
            let read = r.ring.read(|record| {
                let before_the_run = std::mem::replace(emptied, false);
                run.take(&record, before_the_run);
            });
            match read {
                Ok(framed) if framed.malformed => {
                    run.flag(|| format!("a malformed task record in the ring of CPU {cpu}"))
                }
                Ok(_) => {}
                Err(e) => run.flag(|| format!("reading the task records of CPU {cpu} failed: {e}")),
            }
        }
        fullest
    }
}

/// One event and its ring per CPU of `cpus`, on `target`, with `pages` pages of ring each
/// (halved while the locked-memory limit refuses them; the size reached is kept).
fn open_rings(
    target: PerfTarget<'_>,
    cpus: &[u32],
    pages: &mut usize,
) -> Result<Vec<CpuRing>, String> {
    let mut rings = Vec::with_capacity(cpus.len());
    for &cpu in cpus {
        let ring = loop {
            match PerfRing::open(&[task_records_attr()], target, cpu as i32, *pages) {
                Ok(ring) => break ring,
                Err(Errno::PERM | Errno::NOMEM) if *pages > 1 => *pages /= 2,
                Err(e) => return Err(format!("perf task records cannot be had: {e}")),
            }
        };
        rings.push(CpuRing {
            cpu,
            ring,
            emptied: false,
        });
    }
    Ok(rings)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fork(time_ns: u64, pid: u32, tid: u32, ppid: u32) -> TaskRecord {
        TaskRecord {
            fork: true,
            pid,
            tid,
            ppid,
            time_ns,
        }
    }

    fn exit(time_ns: u64, pid: u32, tid: u32) -> TaskRecord {
        TaskRecord {
            fork: false,
            pid,
            tid,
            ppid: 0,
            time_ns,
        }
    }

    #[test]
    fn forks_threads_and_exec_chains_count_once_each_and_strangers_not_at_all() {
        // The spawner (10) creates the root (100), a shell that forks 101 and 102; 102 starts
        // two threads and execs from one of them (no record: same task); 101 forks 103 after
        // the shell exited. An earlier run's survivor (50) forks 60, which is no one's here,
        // and after 100 exits, a stranger reuses its ID.
        let mut records = vec![
            fork(5, 50, 50, 10),
            fork(10, 100, 100, 10),
            fork(20, 101, 101, 100),
            fork(30, 102, 102, 100),
            fork(31, 102, 104, 102),
            fork(32, 102, 105, 102),
            fork(33, 60, 60, 50),
            // 105 execs: the others end, and it goes on as 102.
            exit(40, 102, 104),
            exit(41, 102, 102),
            exit(50, 100, 100),
            fork(55, 100, 100, 60),
            fork(56, 103, 103, 101),
            fork(57, 106, 106, 100),
            exit(60, 102, 102),
            fork(900, 107, 107, 101),
        ];
        records.reverse(); // from several rings, in any order
        assert_eq!(count_tasks(100, &mut records, 800), Ok(6));
        // Up to the end of the window only: 107 came after.
        assert_eq!(count_tasks(100, &mut records, 1000), Ok(7));
        // A thread of the tree forks after its process's exec: still the tree's.
        let mut records = vec![
            fork(1, 100, 100, 10),
            fork(2, 100, 101, 100),
            exit(3, 100, 100),
            fork(4, 200, 200, 100),
        ];
        assert_eq!(count_tasks(100, &mut records, 10), Ok(3));
    }

    /// A record as the kernel writes it: header, then `words`, then a `u64`.
    fn raw(kind: u32, words: &[u32], last: u64) -> Vec<u8> {
        let size = (8 + 4 * words.len() + 8) as u16;
        let mut bytes = kind.to_ne_bytes().to_vec();
        bytes.extend_from_slice(&0u16.to_ne_bytes());
        bytes.extend_from_slice(&size.to_ne_bytes());
        bytes.extend(words.iter().flat_map(|w| w.to_ne_bytes()));
        bytes.extend_from_slice(&last.to_ne_bytes());
        bytes
    }

    /// Replays `bytes` (records as a ring holds them) into a run whose root is 100.
    fn replay(bytes: &[u8], emptied: bool, end_ns: u64) -> TaskReading {
        let mut run = RunCount::new();
        run.root = Some(100);
        let mut first = emptied;
        let mut scratch = Vec::new();
        coldtrace_syscalls::ring::frame(bytes, &[], &mut scratch, |record| {
            run.take(&record, std::mem::replace(&mut first, false));
        });
        run.finish(end_ns)
    }

    #[test]
    fn records_replayed_from_a_ring_count_and_a_lost_one_makes_the_count_unknown() {
        use coldtrace_syscalls::perf::{PERF_RECORD_EXIT, PERF_RECORD_FORK, PERF_RECORD_LOST};
        // The root (a shell) forks a child, which starts a thread; both exit; a stranger forks.
        let tree: Vec<u8> = [
            raw(PERF_RECORD_FORK, &[100, 10, 100, 10], 10),
            raw(PERF_RECORD_FORK, &[101, 100, 101, 100], 20),
            raw(PERF_RECORD_FORK, &[101, 101, 102, 101], 30),
            raw(PERF_RECORD_EXIT, &[101, 100, 102, 100], 40),
            raw(PERF_RECORD_EXIT, &[101, 100, 101, 100], 50),
            raw(PERF_RECORD_FORK, &[300, 299, 300, 299], 55),
            raw(PERF_RECORD_EXIT, &[100, 10, 100, 10], 60),
        ]
        .concat();
        assert_eq!(replay(&tree, false, 100).tasks, Ok(3));
        // The kernel dropped records during the run: unknown, never a guess.
        let lost = raw(PERF_RECORD_LOST, &[0, 0], 7);
        let reading = replay(&[tree.clone(), lost.clone()].concat(), false, 100);
        assert_eq!(reading.lost, 7);
        assert_eq!(
            reading.tasks,
            Err("the kernel dropped 7 task records".to_string())
        );
        // A lost record first in a ring emptied before the spawn counts earlier records.
        let reading = replay(&[lost, tree].concat(), true, 100);
        assert_eq!((reading.tasks, reading.lost), (Ok(3), 0));
    }

    #[test]
    fn without_the_roots_creation_there_is_no_count() {
        let mut records = vec![fork(20, 101, 101, 100), exit(30, 101, 101)];
        assert_eq!(
            count_tasks(100, &mut records, 100),
            Err(Uncounted::RootNeverCreated)
        );
        let mut late = vec![fork(200, 100, 100, 10)];
        assert_eq!(
            count_tasks(100, &mut late, 100),
            Err(Uncounted::RootNeverCreated)
        );
    }
}
