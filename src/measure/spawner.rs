//! The spawner as coldtrace runs it: the program embedded at build time
//! (`syscalls/src/spawner/main.rs`, built by `src/build.rs`), started once per batch, asked to
//! clone each measured child, and stopped at the end with its own CPU time read from its
//! `wait4`. It measures nothing itself; it hands [`crate::measure::runner`] a started child, the
//! clock before the clone and the floor (the spawner's resident set right after the child's
//! `execve`).
//!
//! Why: at `execve` the kernel folds the old address space's high-water RSS into the child's
//! `ru_maxrss`, and after a vfork-style clone from coldtrace that address space is coldtrace's
//! (about 1 MiB here). From the spawner it is the spawner's, a few dozen KiB.
//! `docs/lean-runner.md` has the measurements.
#![forbid(unsafe_code)]

use crate::measure::floor::{statm_resident_pages, FloorReading, SpawnedBy};
use crate::measure::procfs::ProcFile;
use coldtrace_syscalls::spawn::SpawnError;
use coldtrace_syscalls::spawner::{ReplyWatch, Spawner, SpawnerFailure, StartError};
use coldtrace_syscalls::{Child, ChildStack, Errno, Program, SpawnOptions};

/// The spawner program, as the build made it (empty where it could not).
const EXECUTABLE: &[u8] = include_bytes!(env!("COLDTRACE_SPAWNER"));

/// A spawner running for a batch.
pub struct BatchSpawner {
    spawner: Spawner,
    statm: ProcFile,
    page_kib: u64,
    /// Children it started.
    runs: u64,
    /// Its largest resident set seen after a child's `execve`, KiB.
    resident_kib: Option<u64>,
    /// Why it no longer starts children (it stopped answering), if it does not.
    broken: Option<String>,
}

/// What the spawner cost over a batch (its own CPU is coldtrace's own work).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SpawnerUsage {
    /// Children it started.
    pub runs: u64,
    /// Its user + system CPU time from its `wait4`, ns (`None` when it could not be reaped).
    pub cpu_ns: Option<u64>,
    /// Its largest resident set after a child's `execve`, KiB: the floor of its children.
    pub resident_kib: Option<u64>,
    /// Why it could not be started, or stopped answering (coldtrace then cloned the children
    /// itself, and its own memory was their floor).
    pub unavailable: Option<String>,
}

crate::serialize_struct!(SpawnerUsage {
    runs,
    cpu_ns,
    resident_kib,
    unavailable
});

impl SpawnerUsage {
    /// A spawner that could not be started, and why.
    pub fn refused(why: String) -> SpawnerUsage {
        SpawnerUsage {
            unavailable: Some(why),
            ..SpawnerUsage::default()
        }
    }
}

/// What a spawn through the spawner gave.
pub enum Started {
    /// A started child, the clock before the clone, and the floor. The clock is `None` for a
    /// child the spawner made but did not answer for (it ended in the clone's vfork wait): the
    /// child is coldtrace's own and may have run; the run cannot be measured, and must not be
    /// started again ([`BatchSpawner::failed_before_exec`] tells, once it has exited, whether
    /// it reached `execve`).
    Child(Child, Option<u64>, FloorReading),
    /// The program did not start (the spawner is fine).
    Failed(SpawnError, FloorReading),
    /// Start this one in-process (options the spawner does not carry, or the spawner is gone:
    /// then every later child too, and [`BatchSpawner::stop`] says why).
    InProcess,
}

impl BatchSpawner {
    /// Starts the spawner; `Err(why)` (one line) when it cannot run here.
    pub fn start(stack: &mut ChildStack) -> Result<BatchSpawner, String> {
        if EXECUTABLE.is_empty() {
            return Err("this build has no spawner".into());
        }
        let spawner = Spawner::start(EXECUTABLE, stack).map_err(|e| match e {
            StartError::Memfd(errno) => format!("cannot make its memfd ({errno})"),
            StartError::Socket(errno) => format!("cannot make its socket ({errno})"),
            StartError::Spawn(e) => format!("cannot execute it from a memfd ({})", e.errno),
        })?;
        let statm = ProcFile::open(&format!("/proc/{}/statm", spawner.pid()));
        Ok(BatchSpawner {
            spawner,
            statm,
            page_kib: (rustix::param::page_size() / 1024) as u64,
            runs: 0,
            resident_kib: None,
            broken: None,
        })
    }

    /// The spawner's process ID (perf counters that children inherit are opened on it).
    pub fn pid(&self) -> i32 {
        self.spawner.pid()
    }

    /// Starts `program` through the spawner, watching `watch` while it waits for the reply.
    pub fn spawn(
        &mut self,
        program: &Program,
        options: &SpawnOptions<'_>,
        watch: &mut ReplyWatch<'_>,
    ) -> Started {
        // The spawner has no shell fallback for a script without #! (`coldtrace time`'s).
        if self.broken.is_some() || program.through_shell() {
            return Started::InProcess;
        }
        match self.spawner.spawn(program, options, watch) {
            Ok(spawned) if spawned.start_ns.is_none() => {
                self.broken = Some("it ended while starting a run".into());
                let floor = FloorReading {
                    spawned_by: SpawnedBy::Spawner,
                    ..FloorReading::default()
                };
                Started::Child(spawned.child, None, floor)
            }
            Ok(spawned) => {
                self.runs += 1;
                Started::Child(spawned.child, spawned.start_ns, self.floor())
            }
            Err(SpawnerFailure::Program(e)) => Started::Failed(e, self.floor()),
            Err(SpawnerFailure::Unsupported) => Started::InProcess,
            Err(SpawnerFailure::Broken(errno)) => {
                self.broken = Some(match errno {
                    Errno::AGAIN => "it was found stopped, and killed".into(),
                    Errno::INTR => "a request to stop came while it started a run".into(),
                    errno => format!("it stopped answering ({errno})"),
                });
                Started::InProcess
            }
        }
    }

    /// For the child of a [`Started::Child`] without a clock, once it has exited: the step
    /// that failed before `execve`, if one did.
    pub fn failed_before_exec(&self) -> Option<SpawnError> {
        self.spawner.failed_before_exec()
    }

    /// The spawner's resident set now (after the child's `execve`): the child's floor.
    fn floor(&mut self) -> FloorReading {
        let kib = self
            .statm
            .read_small()
            .and_then(statm_resident_pages)
            .map(|pages| pages * self.page_kib);
        self.resident_kib = self.resident_kib.max(kib);
        FloorReading {
            spawned_by: SpawnedBy::Spawner,
            vm_rss_kib: kib,
            vm_hwm_kib: kib,
            hwm_reset: false,
        }
    }

    /// Stops and reaps the spawner: what it cost.
    pub fn stop(self) -> SpawnerUsage {
        let cpu_ns = self.spawner.stop().ok().map(|(_, usage)| {
            usage
                .user_us
                .saturating_add(usage.sys_us)
                .saturating_mul(1000)
        });
        SpawnerUsage {
            runs: self.runs,
            cpu_ns,
            resident_kib: self.resident_kib,
            unavailable: self.broken,
        }
    }
}
