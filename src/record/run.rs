//! One run's record as `runs.jsonl` writes it (schema [`crate::record::RUN_SCHEMA`]), and its parts.
//! Serialize-only wire types: they hold measurements and never take them or render them.
//!
//! `report` reads them back as JSON values by field name. Every field name carries its unit; an
//! absent measurement is `null`.
#![forbid(unsafe_code)]

use crate::measure::cache::{PagedFile, Residency, Stayed, StayedFile};
use crate::measure::context::ProgramInfo;
use crate::measure::descendants::Proc;
use crate::measure::floor::FloorReading;
use crate::measure::runner::{Outcome, TreeKill};
use crate::measure::survivors::{SurvivorAction, Survivors};
use crate::measure::system::SystemDelta;
use crate::measure::zombie::{ChildIo, ChildSched};
use crate::serialize_struct;
use coldtrace_syscalls::{ResourceUsage, Signal, WaitStatusKind};
use serde::ser::{SerializeMap, Serializer};
use serde::Serialize;

/// What a run was for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// A warm-up: recorded, never counted.
    Warmup,
    /// The first counted run.
    First,
    /// A counted run after the first (with `--cold-cycles`: after a cycle's cold run).
    Warm,
    /// A counted run after the first that started cold: with `--cold-cycles`, the run right
    /// after a later cycle's cold action (position 0); with a cold action before every run,
    /// every counted run after the first.
    Cold,
}

impl Role {
    /// The name used in records.
    pub fn name(self) -> &'static str {
        match self {
            Role::Warmup => "warmup",
            Role::First => "first",
            Role::Warm => "warm",
            Role::Cold => "cold",
        }
    }
}

impl Serialize for Role {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

/// `ResourceUsage` with the record's field names.
#[derive(Clone, Copy, Debug)]
pub struct RusageRecord(pub ResourceUsage);

impl Serialize for RusageRecord {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let u = &self.0;
        let mut m = s.serialize_map(Some(9))?;
        m.serialize_entry("user_us", &u.user_us)?;
        m.serialize_entry("sys_us", &u.sys_us)?;
        m.serialize_entry("max_rss_kib", &u.max_rss_kib)?;
        m.serialize_entry("minor_faults", &u.minor_faults)?;
        m.serialize_entry("major_faults", &u.major_faults)?;
        m.serialize_entry("block_in", &u.block_in)?;
        m.serialize_entry("block_out", &u.block_out)?;
        m.serialize_entry("voluntary_switches", &u.voluntary_switches)?;
        m.serialize_entry("involuntary_switches", &u.involuntary_switches)?;
        m.end()
    }
}

/// The outcome as its own object, tagged by `kind`; with `tree_killed` when coldtrace killed
/// the command's whole tree with SIGKILL, and why (`second SIGTERM`, `--kill-after`,
/// `timeout`, `traced`).
#[derive(Clone, Copy, Debug)]
pub struct OutcomeRecord(pub Outcome, pub Option<TreeKill>);

fn serialize_status<M: SerializeMap>(m: &mut M, kind: WaitStatusKind) -> Result<(), M::Error> {
    match kind {
        WaitStatusKind::Exited { code } => m.serialize_entry("code", &code),
        WaitStatusKind::Signaled {
            signal,
            core_dumped,
        } => {
            m.serialize_entry("signal", &signal.raw())?;
            m.serialize_entry("signal_name", &signal.to_string())?;
            m.serialize_entry("core_dumped", &core_dumped)
        }
        WaitStatusKind::Stopped { signal } => m.serialize_entry("stop_signal", &signal.raw()),
        WaitStatusKind::Continued => Ok(()),
        WaitStatusKind::Unknown { raw } => m.serialize_entry("raw_status", &raw),
    }
}

fn status_kind_name(kind: WaitStatusKind) -> &'static str {
    match kind {
        WaitStatusKind::Exited { .. } => "exited",
        WaitStatusKind::Signaled { .. } => "signaled",
        WaitStatusKind::Stopped { .. } => "stopped",
        WaitStatusKind::Continued => "continued",
        WaitStatusKind::Unknown { .. } => "unknown",
    }
}

impl Serialize for OutcomeRecord {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(None)?;
        match self.0 {
            Outcome::Finished(status) => {
                m.serialize_entry("kind", status_kind_name(status.kind()))?;
                serialize_status(&mut m, status.kind())?;
            }
            Outcome::TimedOut { status, sent, to } => {
                m.serialize_entry("kind", "timed_out")?;
                m.serialize_entry("sent_signal", &sent.to_string())?;
                m.serialize_entry("sent_to", to.name())?;
                m.serialize_entry("status_kind", status_kind_name(status.kind()))?;
                serialize_status(&mut m, status.kind())?;
            }
            Outcome::WaitFailed { errno, status } => {
                m.serialize_entry("kind", "wait_failed")?;
                m.serialize_entry("errno", &errno.raw())?;
                m.serialize_entry("message", &errno.to_string())?;
                m.serialize_entry("sent_signal", "SIGKILL")?;
                m.serialize_entry("status_kind", status_kind_name(status.kind()))?;
                serialize_status(&mut m, status.kind())?;
            }
            Outcome::Traced { stop, status } => {
                m.serialize_entry("kind", "traced")?;
                m.serialize_entry("stop_signal", &stop.raw())?;
                m.serialize_entry("stop_signal_name", &stop.to_string())?;
                m.serialize_entry("sent_signal", "SIGKILL")?;
                m.serialize_entry("status_kind", status_kind_name(status.kind()))?;
                serialize_status(&mut m, status.kind())?;
            }
            Outcome::Unmeasured { status } => {
                m.serialize_entry("kind", "unmeasured")?;
                m.serialize_entry("status_kind", status_kind_name(status.kind()))?;
                serialize_status(&mut m, status.kind())?;
            }
            Outcome::Unreaped { errno } => {
                m.serialize_entry("kind", "unreaped")?;
                m.serialize_entry("errno", &errno.raw())?;
                m.serialize_entry("message", &errno.to_string())?;
            }
            Outcome::FailedToStart { stage, errno } => {
                m.serialize_entry("kind", "failed_to_start")?;
                m.serialize_entry("errno", &errno.raw())?;
                m.serialize_entry("error", &errno.name())?;
                m.serialize_entry("message", &errno.to_string())?;
                m.serialize_entry("stage", &format!("{stage:?}"))?;
            }
        }
        if let Some(why) = self.1 {
            m.serialize_entry("tree_killed", &why.name())?;
        }
        m.end()
    }
}

/// Residency of the watched files before and after a run.
#[derive(Clone, Debug)]
pub struct CacheRecord {
    /// Right before the spawn (after any eviction).
    pub before: Residency,
    /// Right after the reap (of the files watched before it).
    pub after: Residency,
    /// Bytes the run brought into the page cache, over the files whose residency was known
    /// before and after (net growth per file); `null` when none was.
    pub paged_in_bytes: Option<u64>,
    /// Files that gained pages.
    pub paged_in_files: Option<u64>,
    /// Where `paged_in_*` come from: `page-in ledger` (every watched file, from the run's
    /// page-in ledger), `every watched file` (each one's residency before and after), or
    /// `working set` (the residency of the files earlier runs read; others are not seen).
    pub paged_in_from: Option<&'static str>,
    /// Right before the run, how much of what the first run brought into the page cache was
    /// cached (`null` for the first run, and when it brought nothing in).
    pub working_set_before: Option<WorkingSetRecord>,
    /// The run whose whole check of the watched files the figures come from: this run's index
    /// when every file was probed for it; otherwise only the working set was probed, and the
    /// other files are as that run's check found them.
    pub tree_checked_at_run: Option<u64>,
}
serialize_struct!(CacheRecord {
    before,
    after,
    paged_in_bytes,
    paged_in_files,
    paged_in_from,
    working_set_before,
    tree_checked_at_run
});

/// The first run's working set, cached before a later run, as records write it.
#[derive(Clone, Debug, PartialEq)]
pub struct WorkingSetRecord {
    /// Files the first run brought into the page cache.
    pub files: u64,
    /// The bytes it brought in.
    pub paged_bytes: u64,
    /// Of those, cached (per file at most what the first run brought in); `null` when a file's
    /// residency is unknown.
    pub resident_bytes: Option<u64>,
    /// `resident_bytes / paged_bytes`.
    pub resident_ratio: Option<f64>,
    /// Files whose residency is unknown.
    pub unknown_files: u64,
}
serialize_struct!(WorkingSetRecord {
    files,
    paged_bytes,
    resident_bytes,
    resident_ratio,
    unknown_files
});

impl WorkingSetRecord {
    /// The record of a measured residency.
    pub fn of(r: &crate::measure::cache::WorkingSetResidency) -> WorkingSetRecord {
        WorkingSetRecord {
            files: r.files,
            paged_bytes: r.paged_bytes,
            resident_bytes: r.resident_bytes,
            resident_ratio: r.resident_ratio,
            unknown_files: r.unknown_files,
        }
    }
}

/// A file the run brought into the page cache, as records list it.
pub struct PagedInRecord<'a>(pub &'a PagedFile);

impl Serialize for PagedInRecord<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(2))?;
        m.serialize_entry("path", &self.0.path.to_string_lossy())?;
        m.serialize_entry("bytes", &self.0.bytes)?;
        m.end()
    }
}

/// The files a run brought into the page cache, largest first.
pub struct PagedInList(pub Vec<PagedFile>);

impl Serialize for PagedInList {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter().map(PagedInRecord))
    }
}

/// What stayed cached of the evicted files right after the eviction, as records list it.
#[derive(Clone, Debug)]
pub struct StayedRecord(pub Stayed);

impl Serialize for StayedRecord {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        struct Top<'a>(&'a [StayedFile]);
        impl Serialize for Top<'_> {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_seq(self.0.iter().map(|f| {
                    let mut m = std::collections::BTreeMap::new();
                    m.insert("bytes", serde_json::Value::from(f.bytes));
                    m.insert("path", f.path.to_string_lossy().into_owned().into());
                    m.insert("reason", f.reason.to_string().into());
                    m
                }))
            }
        }
        let r = &self.0.residency;
        let mut m = s.serialize_map(Some(6))?;
        m.serialize_entry("resident_bytes", &r.resident_bytes)?;
        m.serialize_entry("resident_ratio", &r.resident_ratio)?;
        m.serialize_entry("total_bytes", &r.total_bytes)?;
        m.serialize_entry("files", &self.0.files)?;
        m.serialize_entry("unknown_files", &r.unknown_files)?;
        m.serialize_entry("top", &Top(&self.0.top))?;
        m.end()
    }
}

/// What was done to make the run cold.
#[derive(Clone, Debug, Default)]
pub struct ColdAction {
    /// Files whose cached pages were dropped with `posix_fadvise(DONTNEED)`.
    pub evicted_files: Option<u64>,
    /// Their total size.
    pub evicted_bytes: Option<u64>,
    /// Files that could not be evicted.
    pub evict_failed_files: Option<u64>,
    /// Whether `drop_caches` was written.
    pub dropped_caches: bool,
    /// Time spent establishing the state (outside the timed window).
    pub took_ns: u64,
    /// What of the evicted files stayed cached right after the eviction, and why.
    pub stayed_cached: Option<StayedRecord>,
}
serialize_struct!(ColdAction {
    evicted_files,
    evicted_bytes,
    evict_failed_files,
    dropped_caches,
    took_ns,
    stayed_cached
});

/// A run's output as kept with `-o DIR`: paths relative to the batch directory, `null` when the
/// run wrote nothing to that stream (no file is made for it), and how many bytes it wrote.
#[derive(Clone, Debug)]
pub struct ArtifactPaths {
    /// `runs/NNN/stdout`, or `None` when the run wrote nothing there.
    pub stdout: Option<String>,
    /// `runs/NNN/stderr`, or `None` when the run wrote nothing there.
    pub stderr: Option<String>,
    /// Bytes the run wrote to its stdout.
    pub stdout_bytes: u64,
    /// Bytes the run wrote to its stderr.
    pub stderr_bytes: u64,
    /// Where the stdout file was cut (the most kept of one stream), `None` when all was kept.
    pub stdout_cut_at: Option<u64>,
    /// Where the stderr file was cut, `None` when all was kept.
    pub stderr_cut_at: Option<u64>,
}
serialize_struct!(ArtifactPaths {
    stdout,
    stderr,
    stdout_bytes,
    stderr_bytes,
    stdout_cut_at,
    stderr_cut_at
});

/// Where a run sits in an interleaved comparison (absent for a one-command batch).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Slot {
    /// Which command (0-based, in the order given).
    pub command: u64,
    /// The round (0-based): every command runs once per round.
    pub round: u64,
    /// Position within the round (0-based).
    pub position: u64,
}
serialize_struct!(Slot {
    command,
    round,
    position
});

/// Where a run sits in `--cold-cycles`: its cycle and its position after the cold action
/// (0: the cold run).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CyclePosition {
    /// The cycle (0-based).
    pub cycle: u64,
    /// The position within it (0-based; 0 is right after the cold action).
    pub position: u64,
}
serialize_struct!(CyclePosition { cycle, position });

/// One run, as written to `runs.jsonl`.
pub struct RunRecord<'a> {
    /// [`crate::record::RUN_SCHEMA`].
    pub schema: &'static str,
    /// Position in the batch, warm-ups included, from 0.
    pub index: u64,
    /// warmup, first or warm.
    pub role: Role,
    /// `--label`.
    pub label: Option<&'a str>,
    /// Start time, UTC, RFC 3339.
    pub started_at: String,
    /// `/proc/sys/kernel/random/boot_id` at start: a reboot between runs is visible.
    pub boot_id: Option<String>,
    /// `/proc/uptime` at start, seconds.
    pub uptime_s: Option<f64>,
    /// The command as given.
    pub argv: &'a [String],
    /// The program as resolved through PATH (and its `#!` interpreter).
    pub program: &'a ProgramInfo,
    /// Working directory of the run (`null` when it was deleted or cannot be named).
    pub cwd: Option<&'a str>,
    /// How it ended.
    pub outcome: OutcomeRecord,
    /// Whether it is in the statistics.
    pub counted: bool,
    /// Why it failed (`null` when it succeeded).
    pub failure_reason: Option<String>,
    /// CLOCK_MONOTONIC, spawn → exit seen, ns.
    pub wall_ns: Option<u64>,
    /// wait4's usage (the child and its waited-for descendants).
    pub rusage: Option<RusageRecord>,
    /// `rusage.max_rss_kib` is at or below `runner.vm_hwm_kib`: it may be coldtrace's memory.
    pub max_rss_at_floor: Option<bool>,
    /// coldtrace's own memory right before the spawn (the floor).
    pub runner: FloorReading,
    /// `/proc/PID/io` of the exited child (the child alone, not descendants).
    pub child_io: Option<ChildIo>,
    /// `/proc/PID/schedstat` of the exited child (the child alone).
    pub sched: Option<ChildSched>,
    /// The whole process tree's states over the wall time, and where its CPU went (`null`
    /// with `--minimal`).
    pub tree: Option<crate::record::tree::TreeRecord>,
    /// Residency of watched files.
    pub cache: Option<CacheRecord>,
    /// The watched files this run brought into the page cache, the largest first (at most
    /// 20); `null` without `--watch`/`--evict`.
    pub paged_in: Option<PagedInList>,
    /// What the run's processes brought into the page cache, every file counted, split by
    /// watched tree (see [`crate::record::page_ins`]); `null` with `--minimal`.
    pub page_ins: Option<crate::record::page_ins::PageInsRecord>,
    /// Eviction / cache dropping before this run.
    pub cold_action: Option<ColdAction>,
    /// What stood out about this warm run when it ended, judged against the runs before it
    /// (empty when nothing did).
    pub anomalies: Vec<Anomaly>,
    /// System-wide counter deltas over the run (not the child's own).
    pub system_delta: Option<SystemDelta>,
    /// A signal that interrupted the batch during this run.
    pub interrupted_by: Option<String>,
    /// The signal that stopped the child while coldtrace waited.
    pub stopped_by: Option<String>,
    /// Orphaned descendants reaped after the run (subreaper / PID 1 only).
    pub orphans_reaped: u64,
    /// The processes it left running when its command exited, and what became of them.
    pub survivors: SurvivorsRecord,
    /// Its cgroup leaf and what it counted for the whole tree.
    pub cgroup: CgroupRecord,
    /// Where its stdout and stderr were kept.
    pub artifacts: Option<ArtifactPaths>,
    /// Command, round and position in an interleaved comparison (the field is absent for a
    /// one-command batch).
    pub slot: Option<Slot>,
    /// Cycle and position with `--cold-cycles` (the field is absent without).
    pub cycle: Option<CyclePosition>,
    /// Kernel perf counters (the field is absent without `--counters`).
    pub counters: Option<Vec<crate::measure::perf::CounterReading>>,
}

serialize_struct!(RunRecord<'_> {
    schema, index, role, label, started_at, boot_id, uptime_s, argv, program, cwd, outcome,
    counted, failure_reason, wall_ns, rusage, max_rss_at_floor, runner, child_io, sched, tree, cache,
    paged_in, page_ins, cold_action, anomalies, system_delta, interrupted_by, stopped_by, orphans_reaped,
    survivors, cgroup, artifacts,
} optional { slot, cycle, counters });

/// The run's cgroup leaf (see [`crate::measure::cgroup`]) and what it counted for the run's
/// whole tree: `path` (`null` without a cgroup, see the batch's `context.cgroup`), CPU time
/// (`cpu_usage_ns`, `cpu_user_ns`, `cpu_system_ns`, from `cpu.stat`, µs resolution) and stall
/// times from the group's own PSI (`cpu_stall_some_ns`, `io_stall_some_ns`, `io_stall_full_ns`,
/// `memory_stall_some_ns`, `memory_stall_full_ns`: wall time during which some, or all, of the
/// group's tasks waited; `null` when PSI is off).
#[derive(Clone, Debug, Default)]
pub struct CgroupRecord(pub Option<crate::measure::cgroup::RunGroup>);

impl Serialize for CgroupRecord {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let g = self.0.as_ref();
        let cpu = |i: usize| g.and_then(|g| g.cpu_ns[i]);
        let stall = |i: usize| g.and_then(|g| g.stall_ns[i]);
        let mut m = s.serialize_map(Some(9))?;
        m.serialize_entry("path", &g.map(|g| &g.path))?;
        m.serialize_entry("cpu_usage_ns", &cpu(0))?;
        m.serialize_entry("cpu_user_ns", &cpu(1))?;
        m.serialize_entry("cpu_system_ns", &cpu(2))?;
        m.serialize_entry("cpu_stall_some_ns", &stall(0))?;
        m.serialize_entry("io_stall_some_ns", &stall(1))?;
        m.serialize_entry("io_stall_full_ns", &stall(2))?;
        m.serialize_entry("memory_stall_some_ns", &stall(3))?;
        m.serialize_entry("memory_stall_full_ns", &stall(4))?;
        m.end()
    }
}

/// Survivors named per record; the count covers them all.
pub const SURVIVORS_NAMED: usize = 20;

/// The processes a run left running when its command exited (`count`, the first
/// [`SURVIVORS_NAMED`] of them as `processes`: `pid`, `ppid`, `comm`), what became of them
/// (`action`: `left`, `killed`, `waited`, `null` for none), how long they were waited for
/// (`waited_ns`), and how they were found (`seen_by`: `cgroup`, the run's leaf; `descendants`,
/// coldtrace being a child subreaper; `null` when they could not be looked for).
#[derive(Clone, Debug)]
pub struct SurvivorsRecord(pub Survivors);

impl Serialize for SurvivorsRecord {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        struct Listed<'a>(&'a [Proc]);
        impl Serialize for Listed<'_> {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_seq(self.0.iter().take(SURVIVORS_NAMED).map(|p| {
                    let mut m = std::collections::BTreeMap::new();
                    m.insert("pid", serde_json::Value::from(p.pid));
                    m.insert("ppid", serde_json::Value::from(p.ppid));
                    m.insert("comm", serde_json::Value::from(p.comm.as_str()));
                    m
                }))
            }
        }
        let v = &self.0;
        let mut m = s.serialize_map(Some(5))?;
        m.serialize_entry("count", &v.count())?;
        m.serialize_entry("processes", &Listed(&v.processes))?;
        m.serialize_entry("action", &v.action.map(SurvivorAction::name))?;
        m.serialize_entry("waited_ns", &v.waited_ns)?;
        m.serialize_entry("seen_by", &v.seen_by)?;
        m.end()
    }
}

/// One thing that stands out about a warm run.
#[derive(Clone, Debug, PartialEq)]
pub struct Anomaly {
    /// `storage_reads` (block input or major faults), `cached_before_fell`, or `not_cold` (a
    /// run made cold that started with its working set cached or read nothing from storage).
    pub kind: &'static str,
    /// The figure concerned: `block_in`, `major_faults`, `resident_bytes_before`,
    /// `working_set_ratio_before` or `read_bytes`.
    pub metric: &'static str,
    /// Its value in this run.
    pub value: f64,
    /// What it was compared with: the warm median, the previous run's resident bytes after, or
    /// for `not_cold` the threshold ratio or the first run's bytes read.
    pub reference: f64,
    /// The rule, in words.
    pub rule: &'static str,
    /// For a run that was not cold: another process that maps the file holding the most of
    /// the working set's cached pages (`pid 812 (python3)`), when one was found.
    pub mapped_by: Option<String>,
}
serialize_struct!(Anomaly {
    kind,
    metric,
    value,
    reference,
    rule,
    mapped_by
});

/// Signal name for records.
pub fn signal_name(signal: Option<Signal>) -> Option<String> {
    signal.map(|s| s.to_string())
}
