//! One command's batch: its state between runs (records, counts, failures, the stderr sink)
//! and the checks made before its first run. It holds state and checks; it runs no step of a
//! run and imports no step file (the steps extend [`CommandBatch`] from `step.rs` and beside it).
#![forbid(unsafe_code)]

use crate::batch::error::{stdin_error, BatchError};
use crate::batch::outcome::SurvivorsSeen;
use crate::batch::outcome::{FirstPagedIn, SingleRun};
use crate::batch::program::{lossy, resolve, sh_program};
use crate::batch::shared::Shared;
use crate::batch::signals::Signals;
use crate::batch::sink::{StderrSink, StdoutFile};
use crate::measure::cache::{self, FileSet, FileTable, Residency, Stayed};
use crate::measure::context::{Capabilities, EnvMarkers, ProgramInfo, SystemContext};
use crate::measure::page_ins::FileKeys;
use crate::plan::{ColdWhen, OutputMode, Plan, StdinMode};
use crate::record::anomaly::OnlineCheck;
use crate::record::artifacts::BatchDir;
use crate::record::batch::{BatchContext, Counts};
use crate::record::columns::Columns;
use crate::record::failed::FailedRuns;
use crate::record::metrics::metrics_for;
use crate::record::run::{Role, RunRecord};
use crate::untrusted::{self, Want};
use coldtrace_syscalls::spawn::ChildStage;
use coldtrace_syscalls::{Errno, Program, Signal};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// One command's batch: its records, artifacts, statistics and document.
pub struct CommandBatch<'p> {
    pub(super) plan: &'p Plan,
    pub(super) program: Program,
    /// `--setup`, `--prepare`, `--conclude`, `--cleanup`, built once.
    pub(super) around: AroundPrograms,
    /// The wall time of the commands around the current run (for the cost of a run).
    pub(super) around_ns: u64,
    pub(super) setup_done: bool,
    /// Why `--cleanup` failed (the batch is complete, and exits 1).
    pub(super) cleanup_failure: Option<String>,
    /// Counted runs to make: `plan.runs`, or as chosen by time once a run's cost is known.
    pub(super) target_runs: u32,
    pub(super) runs_chosen: bool,
    /// The cost the count chosen by time is fitted to (see [`CommandBatch::note_cost`]): a
    /// run's wall time plus its `--prepare` and `--conclude`.
    pub(super) cost_ns: Option<u64>,
    /// The last warm-up's cost, for a batch whose first counted run is made cold.
    pub(super) warmup_cost_ns: Option<u64>,
    pub(super) argv: Vec<String>,
    pub(super) cwd: Option<String>,
    pub(super) stdin_file_path: Option<PathBuf>,
    pub(super) dir: Option<BatchDir>,
    pub(super) context: BatchContext,
    pub(super) started_at: String,
    pub(super) stderr_sink: Option<StderrSink>,
    /// `--output FILE`, opened before the first run.
    pub(super) stdout_file: Option<StdoutFile>,
    /// The last run's two empty memfds, when it left no process alive (see `capture.rs`).
    pub(super) spare_memfds: Option<crate::batch::capture::SpareMemfds>,
    /// Every record line, for the exports (only when one is asked for).
    pub(super) kept: Option<crate::record::kept::KeptRecords>,
    pub(super) columns: Columns,
    pub(super) counts: Counts,
    pub(super) failed: FailedRuns,
    pub(super) interrupted_by: Option<Signal>,
    pub(super) stopped_reason: Option<String>,
    /// The failing first run (or first warm-up) that stopped the batch.
    pub(super) failure_stop: Option<crate::batch::outcome::FailureStop>,
    pub(super) start_failure: Option<(ChildStage, Errno)>,
    /// coldtrace could not wait for or reap a run: why (the batch stopped after it).
    pub(super) wait_failure: Option<String>,
    pub(super) single: Option<SingleRun>,
    /// The current record's JSON line, reused: no allocation per run.
    pub(super) line: Vec<u8>,
    pub(super) next_index: u64,
    pub(super) last_wall_ns: Option<u64>,
    pub(super) notices: Vec<String>,
    /// How many of `notices` the observer has been told.
    pub(super) notices_said: usize,
    /// That the command is a script, said once a run of it has started (not before an error
    /// that nothing could start).
    pub(super) script_notice: Option<String>,
    /// Why some watched files' residency is unknown, the first time it was.
    pub(super) cache_unknown: Option<String>,
    /// The watched files, walked once at the first run (`None` before, and without
    /// `--watch`/`--evict`).
    pub(super) table: Option<FileTable>,
    /// The last whole check of the watched files and the run it was made for.
    pub(super) checked: Option<(Residency, u64)>,
    /// The whole check the cold action made right before the current run.
    pub(super) fresh_check: Option<Residency>,
    /// The current run checks the whole tree (see `watch.rs`).
    pub(super) run_whole: bool,
    /// The working set's descriptors may stay open (the children are not cloned by coldtrace).
    pub(super) keep_open: bool,
    /// The current run's page-in ledger's files found in the walk: path, under `--evict`.
    pub(super) located: crate::batch::page_ins::Located,
    /// Page-in ledger files looked for in the walk and not found there.
    pub(super) outside: FileKeys,
    /// Page-in ledger files not in the walk, on a device of the walked files: created in a
    /// watched tree since its walk, or elsewhere (see `watch.rs`).
    pub(super) suspects: Vec<crate::measure::page_ins::FileKey>,
    /// Why the page-in ledger's files cannot be put in the watched trees (`None` inside: they
    /// can; `None`: not walked yet).
    pub(super) split_unknown: Option<Option<String>>,
    /// The slow steps said once already.
    pub(super) slow_said: Vec<&'static str>,
    /// What the first run brought into the page cache.
    pub(super) first_paged_in: Option<FirstPagedIn>,
    /// Judges each run as it ends against the runs before it.
    pub(super) online: OnlineCheck,
    /// Whether the eviction's shortfall (files not evicted, nothing to evict) was said.
    pub(super) evict_said: bool,
    /// Whether a run's kept output was cut, and that was said.
    pub(super) cut_said: bool,
    /// What stayed cached after the first eviction.
    pub(super) first_stayed: Option<Stayed>,
    /// The processes runs left running when their commands exited, and what became of them.
    pub(super) survivors: SurvivorsSeen,
    /// File pages refaulted system-wide during the first counted run.
    pub(super) first_refaults: Option<u64>,
    /// The files the first run created under the working directory and the watched trees.
    pub(super) first_created: crate::batch::created::FirstCreated,
    /// The kernel's counts of drops and reclaim right before the first run, and how many of
    /// those drops coldtrace made itself by then.
    pub(super) first_history: Option<(crate::measure::cache::CacheHistory, u64)>,
    /// The first run's page-ins from the `--evict` roots and from elsewhere, bytes, or why
    /// there is no such split (no ledger: no privilege, `--minimal`; a file system whose
    /// device the page cache names otherwise).
    pub(super) first_page_in_split: Result<(Option<u64>, Option<u64>), String>,
    /// What the first run brought into the page cache, grown by later runs.
    pub(super) working_set: Option<crate::measure::cache::WorkingSet>,
    /// That set's residency right before the current run.
    pub(super) working_set_before: Option<crate::measure::cache::WorkingSetResidency>,
    /// Runs made cold that were not, as they ended (for `batch.json`'s anomalies).
    pub(super) not_cold: Vec<crate::record::anomaly::RunAnomaly>,
    /// Why the runs' process trees were not traced (no tree source here).
    pub(super) tree_why: Option<String>,
}

/// A command's plan checked against the system before anything is created or run: the program
/// resolved, the commands around the runs built, the cold-state paths walked, `--stdin`
/// examined.
pub struct Checked<'p> {
    plan: &'p Plan,
    program: Program,
    around: AroundPrograms,
    stdin_file_path: Option<PathBuf>,
    stdout_file: Option<StdoutFile>,
}

impl<'p> Checked<'p> {
    /// Checks everything that can be checked before a run (program, `--prepare` and the others, cold-state
    /// paths, stdin). Creates nothing: a comparison checks every command before it creates
    /// any directory, so a command that cannot run leaves nothing behind.
    pub fn check(plan: &'p Plan) -> Result<Checked<'p>, BatchError> {
        let program = resolve(plan)?;
        let around = AroundPrograms::of(plan)?;
        check_cold_state(plan)?;
        let stdin_file_path = check_stdin(plan)?;
        // `--output FILE` is opened (made) last: a check that fails leaves no file behind.
        let stdout_file = match &plan.output {
            OutputMode::File(path) => Some(StdoutFile::open(path).map_err(BatchError::own)?),
            _ => None,
        };
        Ok(Checked {
            plan,
            program,
            around,
            stdin_file_path,
            stdout_file,
        })
    }

    /// The batch's state, writing in `dir` (if any).
    pub fn open(
        self,
        dir: Option<BatchDir>,
        shared: &Shared<'_>,
    ) -> Result<CommandBatch<'p>, BatchError> {
        let Checked {
            plan,
            program,
            around,
            stdin_file_path,
            stdout_file,
        } = self;
        let argv: Vec<String> = plan.argv.iter().map(|a| lossy(a)).collect();
        // A working directory that was deleted (or cannot be named) is unknown: null.
        let cwd = std::env::current_dir()
            .ok()
            .map(|p| p.display().to_string());
        let notices = first_notices(shared);
        let context = batch_context(&program, shared);
        let script_notice = script_notice(&argv, &context.program);
        // Every output that is neither the terminal nor kept: stderr's tail in memory.
        let stderr_sink = match plan.output {
            OutputMode::Inherit | OutputMode::Keep => None,
            _ => StderrSink::create(),
        };

        Ok(CommandBatch {
            plan,
            program,
            around,
            around_ns: 0,
            setup_done: false,
            cleanup_failure: None,
            target_runs: first_target(plan),
            runs_chosen: plan.bounds.is_none(),
            cost_ns: None,
            warmup_cost_ns: None,
            argv,
            cwd,
            stdin_file_path,
            dir,
            context,
            started_at: crate::measure::clock::rfc3339_utc_now(),
            stderr_sink,
            stdout_file,
            spare_memfds: None,
            kept: plan
                .exports
                .needs_records()
                .then(crate::record::kept::KeptRecords::new),
            columns: Columns::new(metrics_for(&plan.counters)),
            counts: Counts::default(),
            failed: FailedRuns::default(),
            interrupted_by: None,
            stopped_reason: None,
            failure_stop: None,
            start_failure: None,
            wait_failure: None,
            single: None,
            line: Vec::with_capacity(16 * 1024),
            next_index: 0,
            last_wall_ns: None,
            notices,
            notices_said: 0,
            script_notice,
            cache_unknown: None,
            table: None,
            checked: None,
            fresh_check: None,
            run_whole: false,
            keep_open: false,
            located: Default::default(),
            outside: Default::default(),
            suspects: Vec::new(),
            split_unknown: None,
            slow_said: Vec::new(),
            first_paged_in: None,
            online: OnlineCheck::default(),
            evict_said: false,
            cut_said: false,
            first_stayed: None,
            survivors: SurvivorsSeen::default(),
            first_refaults: None,
            first_created: Default::default(),
            first_history: None,
            first_page_in_split: Err("the first run was not traced".into()),
            working_set: None,
            working_set_before: None,
            not_cold: Vec::new(),
            tree_why: None,
        })
    }
}

/// The counted runs planned before the count is chosen: `plan.runs` (`-n`, or the minimum);
/// at least 2 when the count waits for the first warm run after a cold first run (see
/// [`CommandBatch::note_cost`]) and `-M` allows it, so that the batch does not end before.
fn first_target(plan: &Plan) -> u32 {
    let waits_for_warm = plan.cold.when == Some(ColdWhen::FirstOnly) && plan.warmup == 0;
    match plan.bounds {
        Some(bounds) if waits_for_warm => plan.runs.max(2).min(bounds.max.unwrap_or(u32::MAX)),
        _ => plan.runs,
    }
}

impl<'p> CommandBatch<'p> {
    /// Checks everything that can be checked before a run (see [`Checked::check`]), then
    /// claims the batch directory `out_dir` (see [`BatchDir::create`]) — unless a signal asked
    /// coldtrace to stop meanwhile: then nothing is created.
    pub fn new(
        plan: &'p Plan,
        out_dir: Option<&Path>,
        shared: &Shared<'_>,
    ) -> Result<Self, BatchError> {
        let checked = Checked::check(plan)?;
        stopped_before_anything(shared.signals)?;
        let dir = out_dir.map(BatchDir::create).transpose()?;
        checked.open(dir, shared)
    }

    /// The command as a person reads it: its `--command-name`, or its words quoted as a
    /// shell would; escaped.
    pub fn shown_command(&self) -> String {
        let words = || crate::text::quote(&self.argv);
        crate::text::escape_controls(&self.plan.name.clone().unwrap_or_else(words))
    }

    /// Whether every run of the plan has been done.
    pub fn is_done(&self) -> bool {
        self.next_index >= self.total_runs()
    }

    /// Runs to make, warm-ups included (as far as the count is known yet).
    pub fn total_runs(&self) -> u64 {
        u64::from(self.target_runs) * u64::from(self.plan.cycles()) + u64::from(self.plan.warmup)
    }

    /// The cost of a run of the series (its wall time and the commands around it), once known:
    /// what the count chosen by time is fitted to.
    pub fn cost_ns(&self) -> Option<u64> {
        self.cost_ns
    }

    /// Notes the cost of the run just made, whose role was `role`. hyperfine's rule fits the
    /// count to the first counted run; but a first run made cold alone (`--cold-first-only`)
    /// costs what the cold state costs, not what the series will (a 30 ms command whose cold
    /// first run takes 140 ms got 21 runs, 0.8 s, for a 3 s budget). Then the cost is the last
    /// warm-up's, or, without warm-ups, the first warm run's.
    pub(super) fn note_cost(&mut self, role: Role, cost_ns: Option<u64>) {
        let cold_first = self.plan.cold.when == Some(ColdWhen::FirstOnly);
        match role {
            Role::Warmup if cold_first => self.warmup_cost_ns = cost_ns.or(self.warmup_cost_ns),
            Role::First if cold_first => self.cost_ns = self.warmup_cost_ns,
            Role::First => self.cost_ns = cost_ns,
            Role::Warm if self.cost_ns.is_none() => self.cost_ns = cost_ns,
            _ => {}
        }
    }

    /// Chooses the number of counted runs by time, once, for a first run that cost `cost_ns`
    /// (nothing to do when `-n` fixed it).
    pub fn choose_runs(&mut self, cost_ns: u64) {
        if let (Some(bounds), false) = (self.plan.bounds, self.runs_chosen) {
            self.target_runs = bounds.runs_for(cost_ns, crate::plan::MAX_RUNS);
            self.runs_chosen = true;
        }
    }

    /// Whether the number of counted runs is known.
    pub fn runs_chosen(&self) -> bool {
        self.runs_chosen
    }

    /// Whether the next run continues a `--cold-cycles` cycle (it is not the cycle's first).
    pub fn mid_cycle(&self) -> bool {
        !self.is_done()
            && self
                .cycle_of(self.next_index)
                .is_some_and(|c| c.position != 0)
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
    pub(super) fn unavailable_counters(record: &RunRecord<'_>) -> Vec<String> {
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
}

/// The commands around the runs, each `/bin/sh -c CMD`, built before the first run.
pub(super) struct AroundPrograms {
    pub(super) setup: Option<Program>,
    pub(super) prepare: Option<Program>,
    pub(super) conclude: Option<Program>,
    pub(super) cleanup: Option<Program>,
}

impl AroundPrograms {
    fn of(plan: &Plan) -> Result<AroundPrograms, BatchError> {
        let build = |cmd: &Option<std::ffi::OsString>, flag: &str| {
            cmd.as_deref().map(|c| sh_program(c, flag)).transpose()
        };
        Ok(AroundPrograms {
            setup: build(&plan.setup, "--setup")?,
            prepare: build(&plan.prepare, "--prepare")?,
            conclude: build(&plan.conclude, "--conclude")?,
            cleanup: build(&plan.cleanup, "--cleanup")?,
        })
    }
}

/// Refuses a cold state that cannot be established (before anything runs): `--drop-caches`
/// without the right, a root of `--evict` or `--watch` that is missing, unreadable or neither a
/// file nor a directory. The trees below the roots are walked once, at the first run (where
/// the progress line can say how far the walk has come).
fn check_cold_state(plan: &Plan) -> Result<(), BatchError> {
    if plan.cold.drop_caches {
        // Why it cannot: not root, or root with a read-only /proc/sys (a container), or none.
        cache::check_drop_caches().map_err(|e| BatchError::own(e.to_string()))?;
    }
    for (flag, roots) in [("--evict", &plan.cold.evict), ("--watch", &plan.cold.watch)] {
        FileSet::check_roots(roots).map_err(|e| BatchError::own(format!("{flag}: {e}")))?;
    }
    Ok(())
}

/// The error of a signal that asked coldtrace to stop before anything was created (exit
/// 128+N).
pub(crate) fn stopped_before_anything(signals: &Signals) -> Result<(), BatchError> {
    match signals.pending_interrupt() {
        Some(sig) => Err(BatchError {
            message: format!("interrupted by {sig} before the first run; nothing ran"),
            exit_code: 128u8.saturating_add(sig.raw() as u8),
            cannot_start: None,
        }),
        None => Ok(()),
    }
}

/// The `--stdin FILE` path, examined now without opening it (it is opened afresh for every
/// run, and a FIFO's writer may be waiting for that open): a regular file, a FIFO or a
/// character device, readable.
fn check_stdin(plan: &Plan) -> Result<Option<PathBuf>, BatchError> {
    match &plan.stdin {
        StdinMode::File(path) => {
            untrusted::examine(path, Want::Input).map_err(|e| stdin_error(path, &e))?;
            Ok(Some(path.clone()))
        }
        _ => Ok(None),
    }
}

/// What the batch document says about the machine, the program and coldtrace, read once
/// before the first run.
fn batch_context(program: &Program, shared: &Shared<'_>) -> BatchContext {
    let program_path =
        Path::new(std::ffi::OsStr::from_bytes(program.path().to_bytes())).to_path_buf();
    BatchContext {
        cgroup: None,
        system: SystemContext::read(),
        capabilities: Capabilities::probe(),
        environment: EnvMarkers::read(),
        program: ProgramInfo::inspect(&program_path),
        coldtrace_version: env!("CARGO_PKG_VERSION"),
        floor_reset_unavailable: shared.floor.unavailable_reason().map(str::to_owned),
        boot_marker: shared.boot_marker().clone(),
        // Known once the watched files are walked, at the first run.
        file_set: None,
    }
}

/// That a command named by a bare name (found in `PATH`) is a script — a pyenv shim, a
/// wrapper: what is timed is its interpreter too, which the record names
/// (`program.interpreter`) and the screen says once. A path given is a file the user chose.
fn script_notice(argv: &[String], program: &ProgramInfo) -> Option<String> {
    let given = argv.first().filter(|g| !g.contains('/'))?;
    let line = program.interpreter.as_deref()?;
    let runner = match &program.interpreter_resolved {
        Some(resolved) => resolved.as_str(),
        None => line.split_whitespace().next()?,
    };
    let runner = Path::new(runner).file_name()?.to_string_lossy();
    let text = format!("{given} is a {runner} script ({})", program.path);
    Some(crate::text::escape_controls(&text))
}

/// What to say once, before the runs.
fn first_notices(shared: &Shared<'_>) -> Vec<String> {
    let mut notices = Vec::new();
    if let Some(reason) = shared.floor.unavailable_reason() {
        notices.push(format!(
            "{reason}: coldtrace's peak RSS cannot be reset before each spawn; the recorded floor is unreset"
        ));
    }
    notices
}
