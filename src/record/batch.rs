//! The batch document as `batch.json` writes it (schema [`crate::record::BATCH_SCHEMA`]): context,
//! configuration, counts, failed runs and the summary. Wire types only; no batch logic.
#![forbid(unsafe_code)]

use crate::measure::boot_marker::BootMarker;
use crate::measure::cache::FileSetIdentity;
use crate::measure::context::{Capabilities, EnvMarkers, ProgramInfo, SystemContext};
use crate::plan::{ColdWhen, Plan, StdinMode};
use crate::record::anomaly::{Noise, RunAnomaly};
use crate::record::cause::ColdCause;
use crate::record::cycles::CyclesSummary;
use crate::record::summary::SummaryMap;
use crate::record::verdict::penalty::FirstPenalty;
use crate::record::working_set::WorkingSetSummary;
use crate::serialize_struct;

/// The configuration part of `batch.json`.
pub struct ConfigRecord<'a> {
    pub argv: &'a [String],
    pub name: Option<&'a str>,
    pub parameters: Vec<ParameterRecord<'a>>,
    pub shell: Option<&'a str>,
    /// The counted runs asked for: exactly `-n`, or as chosen by time within `run_bounds`.
    pub runs: u32,
    pub run_bounds: Option<RunBoundsRecord>,
    pub warmup: u32,
    pub output: &'static str,
    /// `--output FILE`: the file.
    pub output_file: Option<String>,
    pub stdin: String,
    pub timeout_ns: Option<u64>,
    pub kill_after_ns: u64,
    /// `--survivors`: `leave`, `kill` or `wait`.
    pub survivors: &'static str,
    pub setup: Option<String>,
    pub prepare: Option<String>,
    pub conclude: Option<String>,
    pub cleanup: Option<String>,
    pub ignore_failure: bool,
    /// `-i=CODES`: the exit codes counted (`null`: every failure with `-i`, or none).
    pub ignore_exit_codes: Option<&'a [i32]>,
    pub evict: Vec<String>,
    pub drop_caches: bool,
    pub cold_when: Option<&'static str>,
    pub watch: Vec<String>,
}
serialize_struct!(ConfigRecord<'_> {
    argv, name, parameters, shell, runs, run_bounds, warmup, output, output_file, stdin, timeout_ns,
    kill_after_ns, survivors, setup, prepare, conclude, cleanup, ignore_failure, ignore_exit_codes, evict,
    drop_caches, cold_when, watch,
});

/// A parameter of a scan (`-P`, `-L`) and the value this command was made with.
pub struct ParameterRecord<'a> {
    pub name: &'a str,
    pub value: &'a str,
}
serialize_struct!(ParameterRecord<'_> { name, value });

/// How the count was chosen by time (hyperfine's rule).
pub struct RunBoundsRecord {
    pub min_runs: u32,
    pub max_runs: Option<u32>,
    pub max_time_ns: u64,
}
serialize_struct!(RunBoundsRecord {
    min_runs,
    max_runs,
    max_time_ns
});

/// The context part of `batch.json`: recorded once.
pub struct BatchContext {
    /// Kernel, boot, CPU, memory, load.
    pub system: SystemContext,
    /// What can be measured here.
    pub capabilities: Capabilities,
    /// `VIRTUAL_ENV` / `CONDA_PREFIX`.
    pub environment: EnvMarkers,
    /// The resolved program.
    pub program: ProgramInfo,
    /// coldtrace's version.
    pub coldtrace_version: &'static str,
    /// Why coldtrace's high-water RSS could not be reset, if it could not.
    pub floor_reset_unavailable: Option<String>,
    /// Whether this is the first coldtrace batch since boot (with `system.boot_id` and
    /// `system.uptime_s`, all coldtrace knows about the boot).
    pub boot_marker: BootMarker,
    /// The watched file set (`--evict` and `--watch` paths) that the residency figures cover:
    /// its roots, files, size and fingerprint; `null` without one.
    pub file_set: Option<FileSetIdentity>,
    /// The batch's cgroup, or why it has none; what earlier batches left (`null` until the
    /// first run).
    pub cgroup: Option<CgroupContext>,
}
serialize_struct!(BatchContext {
    system,
    capabilities,
    environment,
    program,
    coldtrace_version,
    floor_reset_unavailable,
    boot_marker,
    file_set,
    cgroup
});

/// The batch's cgroup v2 (see [`crate::measure::cgroup`]): `path`, or `unavailable_reason`;
/// `psi_unavailable_reason` when its stall figures cannot be read; `leftover`: the groups of
/// earlier batches that still held processes, and what this batch did about them.
#[derive(Clone, Debug, Default)]
pub struct CgroupContext {
    /// Its directory.
    pub path: Option<String>,
    /// Why there is none.
    pub unavailable_reason: Option<String>,
    /// Why its PSI files cannot be read.
    pub psi_unavailable_reason: Option<String>,
    /// What earlier batches left running in their groups.
    pub leftover: Vec<LeftoverRecord>,
}
serialize_struct!(CgroupContext {
    path,
    unavailable_reason,
    psi_unavailable_reason,
    leftover
});

/// An earlier batch's group that still held processes: `group`, `processes` (`pid`, `comm`),
/// whether that batch had `finished` (and left them on purpose), and `action`: `killed`, `left`
/// (a finished batch's, without `--survivors kill`), `not_killed` (a kill did not end
/// `still_running`), or `not_killed_before` (an earlier batch's kill did not: not tried again).
#[derive(Clone, Debug)]
pub struct LeftoverRecord(pub crate::measure::cgroup::Leftover);

impl serde::Serialize for LeftoverRecord {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use crate::measure::cgroup::LeftoverAction;
        use serde::ser::SerializeMap;
        let l = &self.0;
        let named = |processes: &[crate::measure::descendants::Proc]| -> Vec<serde_json::Value> {
            processes
                .iter()
                .take(20)
                .map(|p| serde_json::json!({"pid": p.pid, "comm": p.comm}))
                .collect()
        };
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("group", &l.group)?;
        m.serialize_entry("processes", &named(&l.processes))?;
        m.serialize_entry("finished", &l.finished)?;
        m.serialize_entry("action", l.action.name())?;
        if let LeftoverAction::NotKilled(still) = &l.action {
            m.serialize_entry("still_running", &named(still))?;
        }
        m.end()
    }
}

/// A rejected (or, with `--ignore-failure`, counted but failed) run.
#[derive(Clone, Debug)]
pub struct FailedRun {
    /// Index in the batch.
    pub index: u64,
    /// Why it failed.
    pub reason: String,
    /// The last lines of its stderr, when they could be kept.
    pub stderr_tail: Option<String>,
    /// Whether it was counted anyway (`--ignore-failure`).
    pub counted: bool,
}
serialize_struct!(FailedRun {
    index,
    reason,
    stderr_tail,
    counted
});

/// The run with role `first`, rejected: in no statistic, and no warm run promoted in its place.
#[derive(Clone, Debug)]
pub struct FirstRejected {
    /// Its index in the batch.
    pub index: u64,
    /// Why it was rejected.
    pub reason: String,
}
serialize_struct!(FirstRejected { index, reason });

/// Run counts.
#[derive(Clone, Copy, Debug, Default)]
pub struct Counts {
    /// Records written (warm-ups included).
    pub recorded: u64,
    /// Warm-ups.
    pub warmup: u64,
    /// Runs in the statistics.
    pub counted: u64,
    /// Runs left out because they failed.
    pub rejected: u64,
    /// Failed runs counted anyway (`--ignore-failure`).
    pub failed_counted: u64,
}
serialize_struct!(Counts {
    recorded,
    warmup,
    counted,
    rejected,
    failed_counted
});

/// The whole batch document (`batch.json`).
pub struct BatchDocument<'a> {
    pub schema: &'static str,
    pub label: Option<&'a str>,
    pub started_at: &'a str,
    pub finished_at: String,
    pub complete: bool,
    pub interrupted_by: Option<String>,
    pub stopped_reason: Option<&'a str>,
    pub context: &'a BatchContext,
    pub config: ConfigRecord<'a>,
    pub counts: Counts,
    pub failed_runs: &'a crate::record::failed::FailedRuns,
    /// Failed runs between the listed ones, in `runs.jsonl` only.
    pub failed_runs_omitted: u64,
    pub first_rejected: Option<FirstRejected>,
    pub first_penalty: Option<&'a FirstPenalty>,
    pub first_penalty_unavailable: Option<&'a str>,
    /// The verdict on the first run: what every view renders.
    pub verdict: &'a crate::record::verdict::Verdict,
    pub first_cold_cause: Option<&'a ColdCause>,
    pub working_set: Option<&'a WorkingSetSummary>,
    pub anomalies: &'a [RunAnomaly],
    pub warm_noise: Option<&'a Noise>,
    pub cycles: Option<&'a CyclesSummary>,
    /// The spawner that cloned the measured children (`null` when coldtrace cloned them): how
    /// many it started, its CPU time (coldtrace's own work, not the command's) and its
    /// resident set, the floor. In a comparison, for all its commands together.
    pub spawner: Option<&'a crate::measure::spawner::SpawnerUsage>,
    pub stddev: &'static str,
    pub summary: SummaryMap<'a>,
}
serialize_struct!(BatchDocument<'_> {
    schema, label, started_at, finished_at, complete, interrupted_by, stopped_reason, context,
    config, counts, failed_runs, failed_runs_omitted, first_rejected, first_penalty, first_penalty_unavailable, verdict, first_cold_cause, working_set, anomalies, warm_noise, cycles, spawner, stddev, summary,
});

impl<'a> ConfigRecord<'a> {
    /// The configuration of `plan`, as recorded, with the `runs` it ended up asking for.
    pub fn of(plan: &'a Plan, argv: &'a [String], runs: u32) -> ConfigRecord<'a> {
        let paths =
            |list: &[std::path::PathBuf]| list.iter().map(|p| p.display().to_string()).collect();
        ConfigRecord {
            argv,
            name: plan.name.as_deref(),
            parameters: plan
                .parameters
                .iter()
                .map(|(name, value)| ParameterRecord { name, value })
                .collect(),
            shell: plan.shell.as_deref(),
            runs,
            run_bounds: plan.bounds.map(|b| RunBoundsRecord {
                min_runs: b.min,
                max_runs: b.max,
                max_time_ns: b.budget_ns,
            }),
            warmup: plan.warmup,
            output: plan.output.name(),
            output_file: match &plan.output {
                crate::plan::OutputMode::File(path) => Some(path.display().to_string()),
                _ => None,
            },
            stdin: match &plan.stdin {
                StdinMode::Null => "null".into(),
                StdinMode::Inherit => "inherit".into(),
                StdinMode::File(p) => p.display().to_string(),
            },
            timeout_ns: plan.timeout_ns,
            kill_after_ns: plan.kill_after_ns,
            survivors: plan.survivors.name(),
            setup: lossy(&plan.setup),
            prepare: lossy(&plan.prepare),
            conclude: lossy(&plan.conclude),
            cleanup: lossy(&plan.cleanup),
            ignore_failure: plan.ignore_failure != crate::plan::IgnoreFailure::No,
            ignore_exit_codes: plan.ignore_failure.codes(),
            evict: paths(&plan.cold.evict),
            drop_caches: plan.cold.drop_caches,
            cold_when: plan.cold.when.map(|w| match w {
                ColdWhen::EveryRun => "every_counted_run",
                ColdWhen::FirstOnly => "first_counted_run",
                ColdWhen::Cycles(_) => "first_run_of_each_cycle",
            }),
            watch: paths(&plan.cold.watch),
        }
    }
}

/// A shell command as text for the document (it was passed to `sh -c` byte for byte).
fn lossy(command: &Option<std::ffi::OsString>) -> Option<String> {
    command.as_ref().map(|c| c.to_string_lossy().into_owned())
}
