//! What every run of a batch (and every command of a comparison) shares: the signals, the child
//! stack, the floor, /dev/null, `--output pipe`'s pipe and the system sampler. It holds resources; it runs nothing.
#![forbid(unsafe_code)]

use crate::batch::error::BatchError;
use crate::batch::group::GroupState;
use crate::batch::signals::Signals;
use crate::batch::sink::DrainedPipe;
use crate::measure::boot_marker::{self, BootMarker};
use crate::measure::cache::CacheHistory;
use crate::measure::cgroup::Leftover;
use crate::measure::context;
use crate::measure::descendants::OWN_UNREAPED_CHILD;
use crate::measure::floor::Floor;
use crate::measure::spawner::{BatchSpawner, SpawnerUsage};
use crate::measure::system::SystemSampler;
use crate::measure::tree::session::TreeTracer;
use crate::measure::tree::source::TreeSource;
use crate::measure::tree::tasks::TaskCounter;
use coldtrace_syscalls::{ChildStack, Errno, Signal};
use std::cell::RefCell;
use std::fs::File;
use std::os::fd::{AsFd, BorrowedFd};

/// What is shared by every command of a batch: the signals, the child stack, the floor, and
/// the /dev/null used for discarded output.
pub struct Shared<'s> {
    pub(crate) signals: &'s Signals,
    pub(crate) stack: ChildStack,
    pub(crate) floor: Floor,
    /// The spawner that clones measured children, started at the first run that wants one
    /// (not with `--minimal`); `None` before, and where it cannot run.
    pub(crate) spawner: Option<BatchSpawner>,
    spawner_asked: bool,
    /// What the spawner cost, once it has been stopped.
    spawner_usage: Option<SpawnerUsage>,
    /// Opened on first use: a single run that inherits its stdio needs no /dev/null (a bare
    /// container root may not have one).
    pub(crate) dev_null_out: Option<File>,
    /// `/dev/null` for reading (a child's stdin), opened on first use.
    pub(crate) dev_null_in: Option<File>,
    /// `--output pipe`: the pipe every run's stdout goes through, made on first use.
    pub(crate) stdout_pipe: Option<DrainedPipe>,
    /// System-wide counters, read before and after every run.
    pub(crate) sampler: SystemSampler,
    /// Read once: a boot ID cannot change while this process lives.
    pub(crate) boot_id: Option<String>,
    /// Processes that runs left running (PID and start time), never signalled by later runs.
    pub(crate) spared: Vec<(i32, u64)>,
    /// The batch's cgroup, made at the first run that can use one.
    pub(crate) group: GroupState,
    /// What earlier batches left in their groups (found when this batch made its own).
    pub(crate) leftover: Vec<Leftover>,
    /// Whether this is the first coldtrace batch since boot (the state file is consulted once,
    /// when the first command's checks have passed).
    boot_marker: std::cell::OnceCell<BootMarker>,
    /// The tree tracer, opened before the first traced run ([`Shared::open_tree`]), or why
    /// there is none.
    pub(crate) tree: Option<Result<RefCell<TreeTracer>, String>>,
    /// Where there is no tree tracer: the count of the tree's tasks from perf's task records,
    /// opened with it on the process that clones the children, or why there is none.
    pub(crate) tasks: Option<Result<RefCell<TaskCounter>, String>>,
    /// The page-in ledger's events on the current cgroup leaf, or why there are none
    /// (`None`: not tried yet, or `--minimal`).
    pub(crate) page_ins: Option<crate::batch::page_ins::PageInEvents>,
    /// Whether the reach of a cold action (every process's page cache) has been said.
    pub(crate) cold_reach_said: bool,
    /// Writes of `3` to `drop_caches` that coldtrace made itself (`--drop-caches`), so far: a
    /// first run's cause takes them out of the kernel's count.
    pub(crate) own_drops: u64,
}

/// Why the child stack could not be mapped. Under an address-space limit (`ulimit -v`) the
/// kernel's `ENOMEM` is the limit's doing, and is said as coldtrace's allocator says it.
fn stack_refused(e: Errno) -> BatchError {
    let limit = rustix::process::getrlimit(rustix::process::Resource::As).current;
    match limit {
        Some(bytes) if e == Errno::NOMEM => BatchError::own(format!(
            "out of memory: the child stack ({} KiB) could not be mapped under an address-space \
             limit of {} KiB (ulimit -v): raise it",
            ChildStack::USABLE_BYTES / 1024,
            bytes / 1024
        )),
        _ => BatchError::own(format!("cannot map the child stack: {e}")),
    }
}

impl<'s> Shared<'s> {
    /// Maps the child stack and opens what every run needs.
    pub fn new(signals: &'s Signals) -> Result<Shared<'s>, BatchError> {
        Ok(Shared {
            signals,
            stack: ChildStack::new().map_err(stack_refused)?,
            floor: Floor::open(),
            spawner: None,
            spawner_asked: false,
            spawner_usage: None,
            dev_null_out: None,
            dev_null_in: None,
            stdout_pipe: None,
            sampler: SystemSampler::default(),
            boot_id: context::read_boot_id(),
            spared: Vec::new(),
            group: GroupState::NotYet,
            leftover: Vec::new(),
            boot_marker: std::cell::OnceCell::new(),
            tree: None,
            tasks: None,
            page_ins: None,
            cold_reach_said: false,
            own_drops: 0,
        })
    }

    /// Starts the spawner on the first call. Where it cannot run, the reason is kept for the
    /// batch's records and table (children are then cloned by coldtrace itself, and its own
    /// memory is their floor).
    pub(crate) fn want_spawner(&mut self) {
        if std::mem::replace(&mut self.spawner_asked, true) {
            return;
        }
        match BatchSpawner::start(&mut self.stack) {
            Ok(spawner) => {
                // A child that no run started: never a survivor, never signalled.
                self.spared.push((spawner.pid(), OWN_UNREAPED_CHILD));
                self.spawner = Some(spawner);
            }
            Err(why) => self.spawner_usage = Some(SpawnerUsage::refused(why)),
        }
    }

    /// Stops the spawner, if one runs: what it cost over the batch, or why there was none
    /// (`None`: none was asked for). Kept for later calls.
    pub(crate) fn stop_spawner(&mut self) -> Option<SpawnerUsage> {
        if let Some(spawner) = self.spawner.take() {
            let pid = spawner.pid();
            self.spawner_usage = Some(spawner.stop());
            // Reaped: its PID may now name another process.
            self.spared
                .retain(|&entry| entry != (pid, OWN_UNREAPED_CHILD));
        }
        self.spawner_usage.clone()
    }

    /// `/dev/null` for writing, opened on first use.
    pub(crate) fn dev_null(&mut self) -> Result<BorrowedFd<'_>, BatchError> {
        if self.dev_null_out.is_none() {
            self.dev_null_out = Some(open_null(true)?);
        }
        match &self.dev_null_out {
            Some(f) => Ok(f.as_fd()),
            None => Err(BatchError::own("cannot open /dev/null")),
        }
    }

    /// `--output pipe`'s pipe, made (with the thread that empties it) on first use.
    pub(crate) fn open_stdout_pipe(&mut self) -> Result<(), BatchError> {
        if self.stdout_pipe.is_none() {
            let pipe = DrainedPipe::create().map_err(|e| {
                BatchError::own(format!("--output pipe: cannot make the pipe: {e}"))
            })?;
            self.stdout_pipe = Some(pipe);
        }
        Ok(())
    }

    /// `/dev/null` for reading, opened on first use.
    pub(crate) fn open_dev_null_in(&mut self) -> Result<(), BatchError> {
        if self.dev_null_in.is_none() {
            self.dev_null_in = Some(open_null(false)?);
        }
        Ok(())
    }

    /// Whether this is the first coldtrace batch since boot; the first call records this boot
    /// in the state file (see [`crate::measure::boot_marker`]).
    pub(crate) fn boot_marker(&self) -> &BootMarker {
        self.boot_marker.get_or_init(|| {
            boot_marker::check_and_mark(self.boot_id.as_deref(), CacheHistory::read())
        })
    }

    /// Records the kernel's counts in the state file as the batch (or comparison) ends, when
    /// the state file was consulted.
    pub(crate) fn mark_end(&self) {
        if let Some(marker) = self.boot_marker.get() {
            boot_marker::mark_end(marker, self.boot_id.as_deref(), &CacheHistory::read());
        }
    }

    /// Opens the tree tracer unless it was tried already (then `tree` holds it, or why there
    /// is none); `allowed` false (`COLDTRACE_TREE=off`) opens none, and says so. Without a
    /// tracer, opens the task counter on the spawner, or on this thread when there is none.
    pub(crate) fn open_tree(&mut self, allowed: bool) {
        let tree = self.tree.get_or_insert_with(|| {
            if !allowed {
                return Err(format!("{}=off", crate::plan::TREE_VAR));
            }
            let tracer = TreeTracer::open()?;
            if let Some(dir) = &tracer.mounted {
                let what = "the scheduler's tracepoint formats";
                eprintln!("{}", crate::measure::tree::tracefs::mounted_note(dir, what));
            }
            Ok(RefCell::new(tracer))
        });
        if tree.is_err() && self.tasks.is_none() {
            let on = self.spawner.as_ref().map(BatchSpawner::pid);
            self.tasks = Some(TaskCounter::open(on).map(RefCell::new));
        }
    }

    /// After the batch's last run: stops the tree tracer's rings (they stay on from the first
    /// traced run to here).
    pub(crate) fn stop_tree(&mut self) {
        if let Some(Ok(tracer)) = &self.tree {
            tracer.borrow_mut().stop();
        }
    }

    /// Why there is no tree tracer (`None`: there is one, or none was asked for yet).
    pub(crate) fn tree_why(&self) -> Option<&str> {
        self.tree.as_ref()?.as_ref().err().map(String::as_str)
    }

    /// A pending request to stop, if any.
    pub fn pending_interrupt(&self) -> Option<Signal> {
        self.signals.pending_interrupt()
    }
}

/// The tree source of a run, from [`Shared::tree`] and [`Shared::tasks`] (borrowed apart from
/// the rest of [`Shared`]): the tracer, else the task counter (`None`: neither).
pub(crate) fn tree_source<'t>(
    tree: &'t Option<Result<RefCell<TreeTracer>, String>>,
    tasks: &'t Option<Result<RefCell<TaskCounter>, String>>,
) -> Option<TreeSource<'t>> {
    match (tree, tasks) {
        (Some(Ok(tracer)), _) => Some(TreeSource::Traced(tracer)),
        (_, Some(Ok(counter))) => Some(TreeSource::Counted(counter)),
        _ => None,
    }
}

fn open_null(write: bool) -> Result<File, BatchError> {
    File::options()
        .read(!write)
        .write(write)
        .open("/dev/null")
        .map_err(|e| BatchError::own(format!("cannot open /dev/null: {e}")))
}

impl Drop for Shared<'_> {
    /// A spawner still running is stopped and reaped: no process of the batch outlives it.
    fn drop(&mut self) {
        self.stop_spawner();
    }
}
