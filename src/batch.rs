//! N runs of one command: warm-ups, the first run and the warm series, cold-state actions,
//! failure rejection, interruption, and the batch document.
#![forbid(unsafe_code)]

use crate::artifacts::{self, ArtifactError, BatchDir};
use crate::cache::{self, FileSet};
use crate::context::{self, Capabilities, EnvMarkers, ProgramInfo, SystemContext};
use crate::counters::{SystemDelta, SystemSampler};
use crate::floor::Floor;
use crate::metrics::{Columns, MetricSummary, SummaryMap};
use crate::plan::{ColdWhen, OutputMode, Plan, StdinMode};
use crate::record::{
    self, ArtifactPaths, CacheRecord, ColdAction, OutcomeRecord, Role, RunRecord, RusageRecord,
};
use crate::runner::{self, Outcome, RunLimits, RunResult};
use crate::serialize_struct;
use coldtrace_syscalls::{
    find_program, ChildStack, Errno, Program, SigSet, Signal, SignalFd, SpawnOptions,
};
use std::ffi::CString;
use std::fs::File;
use std::io::{IsTerminal, Seek, Write};
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// A batch that could not run: one line and the exit code it maps to.
#[derive(Debug)]
pub struct BatchError {
    /// One line for the user.
    pub message: String,
    /// 125 (coldtrace's own error), 126 (not executable) or 127 (not found).
    pub exit_code: u8,
}

impl BatchError {
    fn own(message: impl Into<String>) -> BatchError {
        BatchError {
            message: message.into(),
            exit_code: 125,
        }
    }
}

impl From<ArtifactError> for BatchError {
    fn from(e: ArtifactError) -> Self {
        BatchError::own(e.message)
    }
}

/// Exit code for a program that cannot be started (GNU time's convention).
pub fn exit_code_for_start_failure(errno: Errno) -> u8 {
    if errno == Errno::NOENT || errno == Errno::NOTDIR {
        127
    } else {
        126
    }
}

/// The signals coldtrace takes over while it runs, and the mask children start with.
pub struct Signals {
    fd: SignalFd,
    child_mask: SigSet,
}

impl Signals {
    /// Resets SIGCHLD to its default (an inherited `SIG_IGN` would auto-reap children and lose
    /// their usage), becomes a child subreaper (orphaned descendants are reaped, not left to
    /// init), and blocks SIGINT, SIGQUIT, SIGTERM, SIGHUP and SIGCHLD into a signalfd: the
    /// terminal's SIGINT still reaches a child in our process group, and coldtrace notices it
    /// without a handler.
    pub fn install() -> Result<Signals, BatchError> {
        let _ = coldtrace_syscalls::raw::set_default_disposition(Signal::CHLD);
        let _ = rustix::process::set_child_subreaper(Some(rustix::process::getpid()));
        let set = SigSet::EMPTY
            .with(Signal::INT)
            .with(Signal::QUIT)
            .with(Signal::TERM)
            .with(Signal::HUP)
            .with(Signal::CHLD);
        let (fd, child_mask) = SignalFd::block(set)
            .map_err(|e| BatchError::own(format!("cannot set up signal handling: {e}")))?;
        Ok(Signals { fd, child_mask })
    }

    /// A pending request to stop (SIGINT, SIGQUIT, SIGTERM, SIGHUP), if any; SIGCHLD is dropped.
    fn pending_interrupt(&self) -> Option<Signal> {
        while let Ok(Some(sig)) = self.fd.take() {
            if sig != Signal::CHLD {
                return Some(sig);
            }
        }
        None
    }
}

/// The configuration part of `batch.json`.
struct ConfigRecord<'a> {
    argv: &'a [String],
    runs: u32,
    warmup: u32,
    output: &'static str,
    stdin: String,
    timeout_ns: Option<u64>,
    kill_after_ns: u64,
    prepare: Option<&'a str>,
    ignore_failure: bool,
    evict: Vec<String>,
    drop_caches: bool,
    cold_when: Option<&'static str>,
    watch: Vec<String>,
}
serialize_struct!(ConfigRecord<'_> {
    argv, runs, warmup, output, stdin, timeout_ns, kill_after_ns, prepare, ignore_failure, evict,
    drop_caches, cold_when, watch,
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
}
serialize_struct!(BatchContext {
    system,
    capabilities,
    environment,
    program,
    coldtrace_version,
    floor_reset_unavailable
});

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
struct BatchDocument<'a> {
    schema: &'static str,
    label: Option<&'a str>,
    started_at: &'a str,
    finished_at: String,
    complete: bool,
    interrupted_by: Option<String>,
    stopped_reason: Option<&'a str>,
    context: &'a BatchContext,
    config: ConfigRecord<'a>,
    counts: Counts,
    failed_runs: &'a [FailedRun],
    stddev: &'static str,
    summary: SummaryMap<'a>,
}
serialize_struct!(BatchDocument<'_> {
    schema, label, started_at, finished_at, complete, interrupted_by, stopped_reason, context,
    config, counts, failed_runs, stddev, summary,
});

/// What a finished (or stopped) batch hands to rendering and `main`.
pub struct BatchOutcome {
    /// The process exit code.
    pub exit_code: u8,
    /// `--json` output: the single run's record, or the batch document.
    pub json: String,
    /// Per-metric summaries.
    pub summaries: Vec<MetricSummary>,
    /// Wall times of counted runs, in order.
    pub walls_ns: Vec<f64>,
    /// Every metric's warm values (for comparisons).
    pub warm_values: Vec<Vec<f64>>,
    /// Failed runs.
    pub failed: Vec<FailedRun>,
    /// Counts.
    pub counts: Counts,
    /// The context.
    pub context: BatchContext,
    /// Signal that interrupted the batch.
    pub interrupted_by: Option<Signal>,
    /// Why the batch stopped early (prepare failed, cannot start).
    pub stopped_reason: Option<String>,
    /// The batch directory, if any.
    pub out_dir: Option<std::path::PathBuf>,
    /// A note to show once (e.g. output discarded).
    pub notices: Vec<String>,
    /// For a single run: how it ended, in words.
    pub single_outcome: Option<String>,
    /// The program could not be started (`execve` failed): the one-line reason.
    pub start_failure: Option<String>,
}

fn lossy(s: &std::ffi::OsStr) -> String {
    s.to_string_lossy().into_owned()
}

fn cstring(bytes: &[u8], what: &str) -> Result<CString, BatchError> {
    CString::new(bytes).map_err(|_| {
        BatchError::own(format!(
            "{what} contains a NUL byte, which no program can receive"
        ))
    })
}

/// Builds the program: resolves argv\[0\] through PATH in the parent.
fn resolve(plan: &Plan) -> Result<Program, BatchError> {
    let name = plan.argv[0].as_bytes();
    let path_var = std::env::var_os("PATH");
    let path = find_program(name, path_var.as_ref().map(|p| p.as_bytes())).map_err(|errno| {
        BatchError {
            message: match errno {
                Errno::NOENT => format!(
                    "{}: command not found (searched PATH)",
                    lossy(&plan.argv[0])
                ),
                Errno::ACCES => format!(
                    "{}: found but not executable (a directory, or no execute permission)",
                    lossy(&plan.argv[0])
                ),
                other => format!("{}: cannot run: {other}", lossy(&plan.argv[0])),
            },
            exit_code: exit_code_for_start_failure(errno),
        }
    })?;
    let mut argv = Vec::with_capacity(plan.argv.len());
    for arg in &plan.argv {
        argv.push(cstring(arg.as_bytes(), "an argument")?);
    }
    Ok(Program::new(path, argv, environment()?))
}

/// coldtrace's own environment, passed to the command exactly, as `KEY=VALUE` C strings.
fn environment() -> Result<Vec<CString>, BatchError> {
    std::env::vars_os()
        .map(|(k, v)| {
            let mut kv = k.as_bytes().to_vec();
            kv.push(b'=');
            kv.extend_from_slice(v.as_bytes());
            cstring(&kv, "an environment variable")
        })
        .collect()
}

fn sh_program(command: &str) -> Result<Program, BatchError> {
    let argv = vec![
        cstring(b"sh", "")?,
        cstring(b"-c", "")?,
        cstring(command.as_bytes(), "--prepare")?,
    ];
    Ok(Program::new(cstring(b"/bin/sh", "")?, argv, environment()?))
}

fn open_null(write: bool) -> Result<File, BatchError> {
    File::options()
        .read(!write)
        .write(write)
        .open("/dev/null")
        .map_err(|e| BatchError::own(format!("cannot open /dev/null: {e}")))
}

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

/// What is shared by every command of a batch: the signals, the child stack, the floor, and
/// the /dev/null used for discarded output.
pub struct Shared<'s> {
    signals: &'s Signals,
    stack: ChildStack,
    floor: Floor,
    /// Opened on first use: a single run that inherits its stdio needs no /dev/null (a bare
    /// container root may not have one).
    dev_null_out: Option<File>,
    /// `/dev/null` for reading (a child's stdin), opened on first use.
    dev_null_in: Option<File>,
    /// System-wide counters, read before and after every run.
    sampler: SystemSampler,
    /// Read once: a boot ID cannot change while this process lives.
    boot_id: Option<String>,
}

impl<'s> Shared<'s> {
    /// Maps the child stack and opens what every run needs.
    pub fn new(signals: &'s Signals) -> Result<Shared<'s>, BatchError> {
        Ok(Shared {
            signals,
            stack: ChildStack::new()
                .map_err(|e| BatchError::own(format!("cannot map the child stack: {e}")))?,
            floor: Floor::open(),
            dev_null_out: None,
            dev_null_in: None,
            sampler: SystemSampler::default(),
            boot_id: context::read_boot_id(),
        })
    }

    /// `/dev/null` for writing, opened on first use.
    fn dev_null(&mut self) -> Result<BorrowedFd<'_>, BatchError> {
        if self.dev_null_out.is_none() {
            self.dev_null_out = Some(open_null(true)?);
        }
        match &self.dev_null_out {
            Some(f) => Ok(f.as_fd()),
            None => Err(BatchError::own("cannot open /dev/null")),
        }
    }

    /// A pending request to stop, if any.
    pub fn pending_interrupt(&self) -> Option<Signal> {
        self.signals.pending_interrupt()
    }
}

/// Whether the batch goes on after a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// Run the next one.
    Continue,
    /// Stop: interrupted, or the program cannot start, or `--prepare` failed.
    Stop,
}

/// One command's batch: its records, artifacts, statistics and document.
pub struct CommandBatch<'p> {
    plan: &'p Plan,
    program: Program,
    prepare: Option<Program>,
    argv: Vec<String>,
    cwd: String,
    stdin_file_path: Option<std::path::PathBuf>,
    dir: Option<BatchDir>,
    context: BatchContext,
    started_at: String,
    stderr_sink: Option<File>,
    columns: Columns,
    counts: Counts,
    failed: Vec<FailedRun>,
    interrupted_by: Option<Signal>,
    stopped_reason: Option<String>,
    start_failure: Option<Errno>,
    single_status: Option<Outcome>,
    /// The current record's JSON line, reused: no allocation per run.
    line: Vec<u8>,
    next_index: u64,
    last_wall_ns: Option<u64>,
    notices: Vec<String>,
}

impl<'p> CommandBatch<'p> {
    /// Checks everything that can be checked before a run (program, cold-state paths, stdin,
    /// `--out`) and creates the batch directory `out_dir`.
    pub fn new(
        plan: &'p Plan,
        out_dir: Option<&Path>,
        shared: &Shared<'_>,
    ) -> Result<Self, BatchError> {
        let program = resolve(plan)?;
        let prepare = plan.prepare.as_deref().map(sh_program).transpose()?;
        let argv: Vec<String> = plan.argv.iter().map(|a| lossy(a)).collect();
        let cwd = std::env::current_dir()
            .map(|p| p.display().to_string())
            .unwrap_or_default();
        let program_path =
            Path::new(std::ffi::OsStr::from_bytes(program.path().to_bytes())).to_path_buf();
        if plan.cold.drop_caches && !cache::drop_caches_permitted() {
            return Err(BatchError::own(
                "--drop-caches needs root (it writes /proc/sys/vm/drop_caches); use --evict PATH to evict specific files without root",
            ));
        }
        // The file sets are walked afresh each time and dropped at once: a tree of 40,000 files
        // held for the whole batch would add megabytes to coldtrace's resident set, and so to
        // the floor under every child's max RSS. Walking them here reports a bad path early.
        for (flag, roots) in [("--evict", &plan.cold.evict), ("--watch", &plan.cold.watch)] {
            if !roots.is_empty() {
                FileSet::collect(roots).map_err(|e| BatchError::own(format!("{flag}: {e}")))?;
            }
        }
        let stdin_file_path = match &plan.stdin {
            StdinMode::File(path) => {
                File::open(path).map_err(|e| stdin_error(path, &e))?;
                Some(path.clone())
            }
            _ => None,
        };
        let dir = out_dir.map(BatchDir::create).transpose()?;
        let mut notices = Vec::new();
        if let Some(reason) = shared.floor.unavailable_reason() {
            notices.push(format!(
                "{reason}: coldtrace's peak RSS cannot be reset before each spawn; the recorded floor is unreset"
            ));
        }
        if plan.output == OutputMode::Null && !plan.is_single_run() && out_dir.is_none() {
            notices.push(
                "the command's stdout and stderr are discarded (use --out DIR to keep them)".into(),
            );
        }
        let context = BatchContext {
            system: SystemContext::read(),
            capabilities: Capabilities::probe(),
            environment: EnvMarkers::read(),
            program: ProgramInfo::inspect(&program_path),
            coldtrace_version: env!("CARGO_PKG_VERSION"),
            floor_reset_unavailable: shared.floor.unavailable_reason().map(str::to_owned),
        };
        let stderr_sink = if plan.output == OutputMode::Null {
            rustix::fs::memfd_create("coldtrace-stderr", rustix::fs::MemfdFlags::CLOEXEC)
                .ok()
                .map(File::from)
        } else {
            None
        };
        Ok(CommandBatch {
            plan,
            program,
            prepare,
            argv,
            cwd,
            stdin_file_path,
            dir,
            context,
            started_at: crate::time::rfc3339_utc_now(),
            stderr_sink,
            columns: Columns::default(),
            counts: Counts::default(),
            failed: Vec::new(),
            interrupted_by: None,
            stopped_reason: None,
            start_failure: None,
            single_status: None,
            line: Vec::with_capacity(16 * 1024),
            next_index: 0,
            last_wall_ns: None,
            notices,
        })
    }

    /// Whether every run of the plan has been done.
    pub fn is_done(&self) -> bool {
        self.next_index >= self.plan.total_runs()
    }

    /// Runs done so far.
    pub fn runs_done(&self) -> u64 {
        self.next_index
    }

    /// The wall time of the last run.
    pub fn last_wall_ns(&self) -> Option<u64> {
        self.last_wall_ns
    }

    /// The signal that interrupted this batch, if any.
    pub fn interrupted_by(&self) -> Option<Signal> {
        self.interrupted_by
    }

    /// Marks the batch as interrupted by `signal` (seen between runs).
    pub fn interrupt(&mut self, signal: Signal) {
        self.interrupted_by.get_or_insert(signal);
    }

    /// Which perf events could not be counted here, and why (said once, after the first run).
    fn unavailable_counters(record: &RunRecord<'_>) -> Vec<String> {
        let mut notes = Vec::new();
        let Some(readings) = &record.counters else {
            return notes;
        };
        let mut by_reason: Vec<(String, Vec<&str>)> = Vec::new();
        for r in readings {
            if let Some(reason) = &r.unavailable_reason {
                match by_reason.iter_mut().find(|(known, _)| known == reason) {
                    Some((_, events)) => events.push(r.event),
                    None => by_reason.push((reason.clone(), vec![r.event])),
                }
            }
        }
        for (reason, events) in by_reason {
            notes.push(format!(
                "perf counters not available here: {} ({reason}); recorded as null",
                events.join(", ")
            ));
        }
        notes
    }

    fn residency(&self) -> Option<crate::cache::Residency> {
        let roots = &self.plan.cold.watch;
        if roots.is_empty() {
            return None;
        }
        FileSet::collect(roots).map(|set| set.residency()).ok()
    }

    fn cold_action(&self, role: Role) -> Result<Option<ColdAction>, BatchError> {
        let plan = self.plan;
        let due = match plan.cold.when {
            Some(ColdWhen::EveryRun) => role != Role::Warmup,
            Some(ColdWhen::FirstOnly) => role == Role::First,
            None => false,
        };
        if !due {
            return Ok(None);
        }
        let began = crate::time::monotonic_ns();
        let mut action = ColdAction::default();
        if !plan.cold.evict.is_empty() {
            let set = FileSet::collect(&plan.cold.evict)
                .map_err(|e| BatchError::own(format!("--evict: {e}")))?;
            let report = set.evict();
            action.evicted_files = Some(report.files);
            action.evicted_bytes = Some(report.bytes);
            action.evict_failed_files = Some(report.failed);
        }
        if plan.cold.drop_caches {
            cache::drop_caches().map_err(|e| BatchError::own(e.to_string()))?;
            action.dropped_caches = true;
        }
        action.took_ns = crate::time::monotonic_ns().saturating_sub(began);
        Ok(Some(action))
    }

    /// Runs the next run of the plan: prepare, cold state, the measured run, its record.
    pub fn run_next(
        &mut self,
        shared: &mut Shared<'_>,
        slot: Option<Slot>,
    ) -> Result<Step, BatchError> {
        let plan = self.plan;
        let index = self.next_index;
        let role = if index < u64::from(plan.warmup) {
            Role::Warmup
        } else if index == u64::from(plan.warmup) {
            Role::First
        } else {
            Role::Warm
        };
        if let Some(prepare) = &self.prepare {
            if let Err((reason, interrupted)) = run_prepare(prepare, shared) {
                if let Some(sig) = interrupted {
                    // Ctrl-C during --prepare: an interruption, not a failing prepare.
                    self.interrupted_by = Some(sig);
                    return Ok(Step::Stop);
                }
                self.stopped_reason = Some(format!(
                    "--prepare failed before run {index} ({reason}): {}; the batch stops",
                    plan.prepare.as_deref().unwrap_or_default()
                ));
                return Ok(Step::Stop);
            }
        }
        let cold_action = self.cold_action(role)?;
        let files = match (&self.dir, plan.output) {
            (Some(d), OutputMode::File) => Some(d.run_files(index)?),
            _ => None,
        };
        let stdin_file = match &self.stdin_file_path {
            Some(path) => Some(File::open(path).map_err(|e| stdin_error(path, &e))?),
            None => None,
        };
        if plan.stdin == StdinMode::Null && shared.dev_null_in.is_none() {
            shared.dev_null_in = Some(open_null(false)?);
        }
        if let Some(sink) = &mut self.stderr_sink {
            let _ = sink.set_len(0);
            let _ = sink.rewind();
        }
        if files.is_none() && plan.output == OutputMode::Null {
            shared.dev_null()?;
        }
        let dev_null = shared.dev_null_out.as_ref().map(|f| f.as_fd());
        let (stdout_fd, stderr_fd) = match (&files, plan.output) {
            (Some(f), _) => (Some(f.stdout.as_fd()), Some(f.stderr.as_fd())),
            (None, OutputMode::Null) => (
                dev_null,
                self.stderr_sink.as_ref().map(|s| s.as_fd()).or(dev_null),
            ),
            (None, _) => (None, None),
        };
        let options = SpawnOptions {
            stdin: match plan.stdin {
                StdinMode::Null => shared.dev_null_in.as_ref().map(|f| f.as_fd()),
                _ => stdin_file.as_ref().map(|f| f.as_fd()),
            },
            stdout: stdout_fd,
            stderr: stderr_fd,
            new_process_group: plan.timeout_ns.is_some(),
            signal_mask: Some(shared.signals.child_mask),
            ..SpawnOptions::default()
        };
        let limits = RunLimits {
            timeout_ns: plan.timeout_ns,
            kill_after_ns: plan.kill_after_ns,
            signals: Some(&shared.signals.fd),
            counters: &plan.counters,
            inspect_child: !plan.minimal,
        };

        let minimal = plan.minimal;
        let boot_id = if minimal {
            None
        } else {
            shared.boot_id.clone()
        };
        // /proc/uptime is CLOCK_BOOTTIME; reading the clock (vDSO) costs no system call.
        let uptime_s = if minimal {
            None
        } else {
            Some(crate::time::boottime_s())
        };
        let run_started_at = crate::time::rfc3339_utc_now();
        let residency_before = self.residency();
        let system_before = (!minimal).then(|| shared.sampler.sample());
        let quiet = plan.quiet;
        let with_timeout = plan.timeout_ns.is_some();
        let result: RunResult = runner::measure(
            &self.program,
            &options,
            &mut shared.stack,
            &mut shared.floor,
            &limits,
            |sig| {
                if !quiet {
                    let or = if with_timeout { " or to time out" } else { "" };
                    eprintln!("coldtrace: the command was stopped by {sig}; waiting for it to be continued (SIGCONT){or}");
                }
            },
        );
        let system_after = (!minimal).then(|| shared.sampler.sample());
        let residency_after = self.residency();

        let succeeded = result.outcome.succeeded();
        // A single run is reported like `time` reports it, success or not; a batch rejects failures.
        let ran =
            result.rusage.is_some() && !matches!(result.outcome, Outcome::FailedToStart { .. });
        let counted = role != Role::Warmup
            && (succeeded || plan.ignore_failure || (plan.is_single_run() && ran));
        let failure_reason = result.outcome.failure_reason();
        let rusage = result.rusage;
        let record = RunRecord {
            schema: record::RUN_SCHEMA,
            index,
            role,
            label: plan.label.as_deref(),
            started_at: run_started_at,
            boot_id,
            uptime_s,
            argv: &self.argv,
            program: &self.context.program,
            cwd: &self.cwd,
            outcome: OutcomeRecord(result.outcome),
            counted,
            failure_reason: failure_reason.clone(),
            wall_ns: result.wall_ns,
            rusage: rusage.map(RusageRecord),
            max_rss_at_floor: result.floor.at_floor(rusage.map(|u| u.max_rss_kib)),
            runner: result.floor,
            child_io: result.child_io,
            sched: result.sched,
            cache: match (residency_before, residency_after) {
                (Some(before), Some(after)) => Some(CacheRecord { before, after }),
                _ => None,
            },
            cold_action,
            system_delta: match (&system_before, &system_after) {
                (Some(before), Some(after)) => Some(SystemDelta::between(before, after)),
                _ => None,
            },
            interrupted_by: record::signal_name(result.interrupted_by),
            stopped_by: record::signal_name(result.stopped_by),
            orphans_reaped: result.orphans_reaped,
            artifacts: files.as_ref().map(|f| ArtifactPaths {
                stdout: f.stdout_rel.display().to_string(),
                stderr: f.stderr_rel.display().to_string(),
            }),
            slot,
            counters: result.counters,
        };
        let counter_notes = if index == 0 {
            Self::unavailable_counters(&record)
        } else {
            Vec::new()
        };
        self.line.clear();
        // Serialising plain data into memory cannot fail.
        let _ = serde_json::to_writer(&mut self.line, &record);
        self.line.push(b'\n');
        if let Some(d) = &mut self.dir {
            d.append_record(&self.line)?;
        }
        self.notices.extend(counter_notes);
        self.next_index += 1;
        self.last_wall_ns = result.wall_ns;
        self.counts.recorded += 1;
        if role == Role::Warmup {
            self.counts.warmup += 1;
        }
        if counted {
            self.columns.push(&record);
            self.counts.counted += 1;
        }
        if let Some(reason) = failure_reason {
            if !plan.is_single_run()
                && (role != Role::Warmup || matches!(result.outcome, Outcome::FailedToStart { .. }))
            {
                let tail = match (files, &mut self.stderr_sink) {
                    (Some(mut f), _) => Some(artifacts::tail(&mut f.stderr, 5)),
                    (None, Some(sink)) => Some(artifacts::tail(sink, 5)),
                    (None, None) => None,
                }
                .filter(|t| !t.is_empty());
                if counted {
                    self.counts.failed_counted += 1;
                } else {
                    self.counts.rejected += 1;
                }
                self.failed.push(FailedRun {
                    index,
                    reason,
                    stderr_tail: tail,
                    counted,
                });
            }
        }
        if plan.is_single_run() {
            self.single_status = Some(result.outcome);
        }
        if let Outcome::FailedToStart { errno, .. } = result.outcome {
            self.start_failure = Some(errno);
            self.stopped_reason = Some(format!(
                "{}: cannot start: {errno}; the batch stops",
                self.argv[0]
            ));
            return Ok(Step::Stop);
        }
        if let Some(sig) = result.interrupted_by {
            self.interrupted_by = Some(sig);
            return Ok(Step::Stop);
        }
        Ok(Step::Continue)
    }

    /// Writes `batch.json` (atomically) and returns what the caller renders.
    pub fn finish(self) -> Result<BatchOutcome, BatchError> {
        let plan = self.plan;
        let loaded = self.columns.load();
        let summaries = loaded.summarise();
        let complete =
            self.interrupted_by.is_none() && self.stopped_reason.is_none() && self.is_done();
        let document = BatchDocument {
            schema: record::BATCH_SCHEMA,
            label: plan.label.as_deref(),
            started_at: &self.started_at,
            finished_at: crate::time::rfc3339_utc_now(),
            complete,
            interrupted_by: record::signal_name(self.interrupted_by),
            stopped_reason: self.stopped_reason.as_deref(),
            context: &self.context,
            config: ConfigRecord::of(plan, &self.argv),
            counts: self.counts,
            failed_runs: &self.failed,
            stddev: "sample (n-1)",
            summary: SummaryMap(&summaries),
        };
        let document_json = serde_json::to_string_pretty(&document).unwrap_or_default();
        if let Some(d) = &self.dir {
            d.sync_records()?;
            let mut bytes = document_json.clone().into_bytes();
            bytes.push(b'\n');
            d.write_atomic("batch.json", &bytes)?;
        }
        let exit_code = if let Some(sig) = self.interrupted_by {
            128u8.saturating_add(sig.raw() as u8)
        } else if let Some(errno) = self.start_failure {
            exit_code_for_start_failure(errno)
        } else if let Some(outcome) = self.single_status.filter(|_| plan.is_single_run()) {
            single_exit_code(&outcome)
        } else if self.counts.rejected > 0 || self.stopped_reason.is_some() {
            1
        } else {
            0
        };
        let json = if plan.is_single_run() && self.counts.recorded == 1 {
            String::from_utf8_lossy(&self.line).trim_end().to_string()
        } else {
            document_json
        };
        Ok(BatchOutcome {
            exit_code,
            json,
            walls_ns: loaded.walls_ns(),
            warm_values: loaded.warm,
            summaries,
            failed: self.failed,
            counts: self.counts,
            context: self.context,
            interrupted_by: self.interrupted_by,
            stopped_reason: self.stopped_reason,
            out_dir: self.dir.map(|d| d.root().to_path_buf()),
            notices: self.notices,
            single_outcome: self.single_status.map(|o| describe(&o)),
            start_failure: self
                .start_failure
                .map(|errno| format!("{}: cannot start: {errno}", self.argv[0])),
        })
    }
}

fn stdin_error(path: &Path, e: &std::io::Error) -> BatchError {
    BatchError::own(format!(
        "--stdin {}: {}",
        path.display(),
        artifacts::explain(e)
    ))
}

impl<'a> ConfigRecord<'a> {
    fn of(plan: &'a Plan, argv: &'a [String]) -> ConfigRecord<'a> {
        let paths =
            |list: &[std::path::PathBuf]| list.iter().map(|p| p.display().to_string()).collect();
        ConfigRecord {
            argv,
            runs: plan.runs,
            warmup: plan.warmup,
            output: plan.output.name(),
            stdin: match &plan.stdin {
                StdinMode::Null => "null".into(),
                StdinMode::Inherit => "inherit".into(),
                StdinMode::File(p) => p.display().to_string(),
            },
            timeout_ns: plan.timeout_ns,
            kill_after_ns: plan.kill_after_ns,
            prepare: plan.prepare.as_deref(),
            ignore_failure: plan.ignore_failure,
            evict: paths(&plan.cold.evict),
            drop_caches: plan.cold.drop_caches,
            cold_when: plan.cold.when.map(|w| match w {
                ColdWhen::EveryRun => "every_counted_run",
                ColdWhen::FirstOnly => "first_counted_run",
            }),
            watch: paths(&plan.cold.watch),
        }
    }
}

/// Shows `run i/N, last wall` on a terminal.
pub struct Progress {
    on: bool,
    total: u64,
}

impl Progress {
    /// Progress for `total` runs, shown only on a terminal and without `--quiet`.
    pub fn new(total: u64, quiet: bool) -> Progress {
        Progress {
            on: !quiet && total > 1 && std::io::stderr().is_terminal(),
            total,
        }
    }

    /// After run `done` (1-based).
    pub fn update(&self, done: u64, last_wall_ns: Option<u64>) {
        if self.on {
            let wall =
                last_wall_ns.map_or("—".to_string(), |ns| crate::render::human_ns(ns as f64));
            eprint!("\rcoldtrace: run {done}/{}  last {wall}   ", self.total);
            let _ = std::io::stderr().flush();
        }
    }

    /// Clears the line.
    pub fn finish(&self) {
        if self.on {
            eprint!("\r\x1b[2K");
        }
    }
}

/// Runs one command's plan to the end (or until interrupted).
pub fn run(plan: &Plan, signals: &Signals) -> Result<BatchOutcome, BatchError> {
    let mut shared = Shared::new(signals)?;
    let mut batch = CommandBatch::new(plan, plan.out_dir.as_deref(), &shared)?;
    let progress = Progress::new(plan.total_runs(), plan.quiet);
    while !batch.is_done() {
        if let Some(sig) = shared.pending_interrupt() {
            batch.interrupt(sig);
            break;
        }
        let step = batch.run_next(&mut shared, None)?;
        progress.update(batch.runs_done(), batch.last_wall_ns());
        if step == Step::Stop {
            break;
        }
    }
    progress.finish();
    batch.finish()
}

/// How a run ended, in words: `exited with code 0`, `timed out (sent SIGTERM), killed by SIGTERM`.
fn describe(outcome: &Outcome) -> String {
    match outcome {
        Outcome::Finished(status) => status.to_string(),
        Outcome::TimedOut { status, sent } => format!("timed out (sent {sent}), {status}"),
        Outcome::FailedToStart { errno, .. } => format!("failed to start: {errno}"),
        Outcome::Unreaped { errno } => format!("could not be reaped: {errno}"),
    }
}

/// The exit code of a single run: the child's code, 128+N for signal N.
fn single_exit_code(outcome: &Outcome) -> u8 {
    match outcome {
        Outcome::Finished(status) | Outcome::TimedOut { status, .. } => {
            if let Some(code) = status.code() {
                code as u8
            } else if let Some(sig) = status.signal() {
                128u8.saturating_add(sig as u8)
            } else {
                1
            }
        }
        Outcome::FailedToStart { errno, .. } => exit_code_for_start_failure(*errno),
        Outcome::Unreaped { .. } => 125,
    }
}

/// Runs `--prepare` through `/bin/sh -c`, unmeasured; its stdout is discarded, its stderr shown.
/// On failure: the reason, and the signal if coldtrace was asked to stop meanwhile.
fn run_prepare(prepare: &Program, shared: &mut Shared<'_>) -> Result<(), (String, Option<Signal>)> {
    shared.dev_null().map_err(|e| (e.message, None))?;
    let options = SpawnOptions {
        stdout: shared.dev_null_out.as_ref().map(|f| f.as_fd()),
        signal_mask: Some(shared.signals.child_mask),
        ..SpawnOptions::default()
    };
    let limits = RunLimits {
        timeout_ns: None,
        kill_after_ns: 0,
        signals: Some(&shared.signals.fd),
        counters: &[],
        inspect_child: false,
    };
    let result = runner::measure(
        prepare,
        &options,
        &mut shared.stack,
        &mut shared.floor,
        &limits,
        |_| {},
    );
    match (result.outcome.failure_reason(), result.interrupted_by) {
        (None, None) => Ok(()),
        (reason, interrupted) => Err((reason.unwrap_or_else(|| "interrupted".into()), interrupted)),
    }
}
