//! One run of a batch as a list of named steps: prepare, cold action, wire the streams,
//! measure, record. It sequences the steps and builds each run's record from what they return;
//! the other steps' work lives in their own files, and it draws nothing (an [`Observer`] is told).
#![forbid(unsafe_code)]

use crate::batch::around::Around;
use crate::batch::capture::Kept;
use crate::batch::command::CommandBatch;
use crate::batch::error::{BatchError, NotRun};
use crate::batch::group::GroupState;
use crate::batch::outcome::{describe, FailureStop, SingleRun, Step};
use crate::batch::page_ins::PageInEvents;
use crate::batch::progress::{Observer, RunEnd, RunStart};
use crate::batch::shared::{tree_source, Shared};
use crate::batch::wiring::{spawn_options, RunIo, Sinks};
use crate::measure::cache;
use crate::measure::cache::{CacheHistory, PagedFile, Residency};
use crate::measure::cgroup::Leaf;
use crate::measure::clock;
use crate::measure::context::ProgramInfo;
use crate::measure::runner::{self, Outcome, RunLimits, RunResult};
use crate::measure::survivors::SurvivorAction;
use crate::measure::system::{SystemDelta, SystemSampler, SystemSnapshot};
use crate::measure::waiting::WhileWaiting;
use crate::plan::{ColdWhen, IgnoreFailure};
use crate::record::anomaly::{RunAnomaly, RunFacts};
use crate::record::artifacts;
use crate::record::batch::CgroupContext;
use crate::record::batch::FailedRun;
use crate::record::run::{
    self, Anomaly, ArtifactPaths, CacheRecord, ColdAction, CyclePosition, OutcomeRecord, Role,
    RunRecord, RusageRecord, Slot,
};
use crate::record::tree::{cpu_by_place, TreeRecord};
use coldtrace_syscalls::Signal;

/// A run as measured, with the context sampled around it.
struct Measured {
    result: RunResult,
    started_at: String,
    boot_id: Option<String>,
    uptime_s: Option<f64>,
    cache: Option<CacheRecord>,
    paged_in: Option<Vec<PagedFile>>,
    page_ins: Option<crate::record::page_ins::PageInsRecord>,
    system_delta: Option<SystemDelta>,
    /// Why the run's tree was not traced (no tree source here).
    tree_why: Option<String>,
}

/// The context sampled right before a run.
struct Before {
    started_at: String,
    boot_id: Option<String>,
    uptime_s: Option<f64>,
    /// The system's counters and when they were read (`None` with `--minimal`).
    system: Option<(SystemSnapshot, u64)>,
}

/// What a run's record takes from its batch and its place in it.
struct RecordBase<'a> {
    label: Option<&'a str>,
    argv: &'a [String],
    program: &'a ProgramInfo,
    cwd: Option<&'a str>,
    index: u64,
    role: Role,
    slot: Option<Slot>,
    cycle: Option<CyclePosition>,
    counted: bool,
}

impl<'a> RecordBase<'a> {
    /// The record of a run measured as `measured`.
    fn record(
        self,
        cold_action: Option<ColdAction>,
        measured: Measured,
        kept: Option<&(Kept, Kept)>,
    ) -> RunRecord<'a> {
        let result = measured.result;
        let rusage = result.rusage;
        RunRecord {
            schema: crate::record::RUN_SCHEMA,
            index: self.index,
            role: self.role,
            label: self.label,
            started_at: measured.started_at,
            boot_id: measured.boot_id,
            uptime_s: measured.uptime_s,
            argv: self.argv,
            program: self.program,
            cwd: self.cwd,
            outcome: OutcomeRecord(result.outcome, result.tree_killed),
            counted: self.counted,
            failure_reason: result.outcome.failure_reason(),
            wall_ns: result.wall_ns,
            rusage: rusage.map(RusageRecord),
            max_rss_at_floor: result.floor.at_floor(rusage.map(|u| u.max_rss_kib)),
            runner: result.floor,
            child_io: result.child_io,
            sched: result.sched,
            tree: result.sched.is_some().then(|| {
                let cpu = cpu_by_place(result.sched, result.stat, rusage);
                // A leaf that processes outlived the run counted them after it too.
                let cgroup_cpu_ns = (result.survivors.count() == 0)
                    .then(|| result.cgroup.as_ref()?.cpu_ns[0])
                    .flatten();
                let why = measured.tree_why.as_deref();
                TreeRecord::of(result.tree.as_ref(), why, cpu, cgroup_cpu_ns)
            }),
            cache: measured.cache,
            paged_in: measured.paged_in.map(run::PagedInList),
            page_ins: measured.page_ins,
            cold_action,
            anomalies: Vec::new(),
            system_delta: measured.system_delta,
            interrupted_by: run::signal_name(result.interrupted_by),
            stopped_by: run::signal_name(result.stopped_by),
            orphans_reaped: result.orphans_reaped,
            survivors: run::SurvivorsRecord(result.survivors),
            cgroup: run::CgroupRecord(result.cgroup),
            artifacts: kept.map(|(out, err)| ArtifactPaths {
                stdout: out.path.clone(),
                stderr: err.path.clone(),
                stdout_bytes: out.bytes,
                stderr_bytes: err.bytes,
                stdout_cut_at: out.cut_at,
                stderr_cut_at: err.cut_at,
            }),
            slot: self.slot,
            cycle: self.cycle,
            counters: result.counters,
        }
    }
}

/// The observer, as the waiting loop sees it: a stopped child is a notice, ticks are
/// `running`.
struct Watching<'o> {
    observer: &'o mut dyn Observer,
    timeout: bool,
}

impl WhileWaiting for Watching<'_> {
    fn stopped(&mut self, sig: Signal) {
        let or = if self.timeout { " or to time out" } else { "" };
        self.observer.notice(&format!(
            "the command was stopped by {sig}; waiting for it to be continued (SIGCONT){or}"
        ));
    }

    fn wants_ticks(&self) -> bool {
        self.observer.wants_ticks()
    }

    fn tick(&mut self, running_ns: u64) {
        self.observer.running(running_ns);
    }
}

impl CommandBatch<'_> {
    /// Runs the next run of the plan: prepare, cold state, the measured run, its record. A
    /// signal that asks to stop is acted on between these steps and right before the spawn:
    /// the batch stops without starting the run.
    pub fn run_next(
        &mut self,
        shared: &mut Shared<'_>,
        slot: Option<Slot>,
        observer: &mut dyn Observer,
    ) -> Result<Step, BatchError> {
        match self.try_run_next(shared, slot, observer) {
            Ok(step) => Ok(step),
            Err(NotRun::Interrupted(sig)) => {
                self.interrupted_by.get_or_insert(sig);
                Ok(Step::Stop)
            }
            Err(NotRun::Failed(e)) => Err(e),
        }
    }

    fn try_run_next(
        &mut self,
        shared: &mut Shared<'_>,
        slot: Option<Slot>,
        observer: &mut dyn Observer,
    ) -> Result<Step, NotRun> {
        if !self.setup_done && self.setup(shared) == Step::Stop {
            return Ok(Step::Stop);
        }
        let index = self.next_index;
        let role = self.role_of(index);
        let run = RunStart {
            command: slot.map_or(0, |s| s.command as usize),
            index,
            role,
            cold: self.cold_due(role),
        };
        observer.run_started(&run);
        self.around_ns = 0;
        if let Some(stop) = self.around_step(shared, Around::Prepare, index) {
            return Ok(stop);
        }
        let cold_action = self.cold_action(role, shared.signals, observer)?;
        if cold_action.is_some() {
            shared.sampler.forget();
            self.say_cold_reach(shared);
        }
        if cold_action.as_ref().is_some_and(|a| a.dropped_caches) {
            shared.own_drops += 1;
        }
        if role == Role::First && !self.plan.minimal {
            // What dropped or reclaimed pages before it: its cause is told from these.
            self.first_history = Some((CacheHistory::read(), shared.own_drops));
            self.note_first_began();
        }
        self.walk_watched(shared.signals, observer)?;
        let io = self.wire_io(shared, index)?;
        // A run that never started leaves nothing: its output was never more than two memfds.
        let measured = self
            .measure_run(shared, &io, observer)
            .map_err(NotRun::Interrupted)?;
        self.search_created(role);
        // Output that cannot be kept (a full disk) stops the batch — after the run's record is
        // written (its `artifacts` null): what was measured is never lost with it.
        let none_left_alive = measured.result.no_descendant_left;
        let (kept, unkept) = match (io.capture, &self.dir) {
            (Some(capture), Some(dir)) => match capture.finish(dir, none_left_alive) {
                Ok((out, err, spare)) => {
                    self.spare_memfds = spare;
                    self.note_cut_output(index, &out, &err);
                    (Some((out, err)), None)
                }
                Err(e) => (None, Some(e)),
            },
            _ => (None, None),
        };
        if unkept.is_some()
            || kept
                .as_ref()
                .is_some_and(|(out, err)| out.path.is_some() || err.path.is_some())
        {
            // Artifact files were written: the next run's system delta starts afresh.
            shared.sampler.forget();
        }
        let wall_ns = measured.result.wall_ns;
        let counted_before = self.counts.counted;
        let step = self.record_run(index, role, slot, cold_action, measured, kept)?;
        if self.start_failure.is_none() {
            self.notices.extend(self.script_notice.take());
        }
        if let Some(e) = unkept {
            return Err(e.into());
        }
        observer.run_finished(&RunEnd {
            run,
            wall_ns,
            counted: self.counts.counted > counted_before,
        });
        self.say_notices(observer);
        // After the record is on disk, outside the timed window; not after an interruption.
        let concluded = match self.interrupted_by {
            None => self.around_step(shared, Around::Conclude, index),
            Some(_) => None,
        };
        self.note_cost(role, wall_ns.map(|w| w.saturating_add(self.around_ns)));
        Ok(concluded.unwrap_or(step))
    }

    /// Tells `observer` the notices it has not been told yet (the first ones before any run).
    pub fn say_notices(&mut self, observer: &mut dyn Observer) {
        for notice in &self.notices[self.notices_said..] {
            observer.notice(notice);
        }
        self.notices_said = self.notices.len();
    }

    /// The role of the run with `index`: a warm-up, the first counted run, a run right after a
    /// cold action (a later cycle's position 0, or any run after the first when the plan makes
    /// every counted run cold: none of those is warm), or a warm run.
    pub(super) fn role_of(&self, index: u64) -> Role {
        let warmup = u64::from(self.plan.warmup);
        let every_run_cold = self.plan.cold.when == Some(ColdWhen::EveryRun);
        match (index.checked_sub(warmup), self.cycle_of(index)) {
            (None, _) => Role::Warmup,
            (Some(0), _) => Role::First,
            (Some(_), Some(c)) if c.position == 0 => Role::Cold,
            (Some(_), _) if every_run_cold => Role::Cold,
            (Some(_), _) => Role::Warm,
        }
    }

    /// Where the run with `index` sits in `--cold-cycles` (`None` without cycles, and for
    /// warm-ups).
    pub(super) fn cycle_of(&self, index: u64) -> Option<CyclePosition> {
        self.plan.cold.when?.cycles()?;
        let counted = index.checked_sub(u64::from(self.plan.warmup))?;
        let k = u64::from(self.target_runs.max(1));
        Some(CyclePosition {
            cycle: counted / k,
            position: counted % k,
        })
    }

    /// The measured run and what is sampled right around it (outside its timed window); the
    /// signal instead, when one asks to stop before the spawn.
    fn measure_run(
        &mut self,
        shared: &mut Shared<'_>,
        io: &RunIo,
        observer: &mut dyn Observer,
    ) -> Result<Measured, Signal> {
        let plan = self.plan;
        if !plan.minimal || plan.is_single_run() {
            // The spawner clones measured children (their floor is its few pages); a batch
            // with `--minimal` keeps the cheaper in-process clone and coldtrace's own floor. A
            // single run (`time`, `-n 1`) has no per-run cost to save, only its floor.
            shared.want_spawner();
        }
        // The cgroup's one probe spawn comes before the watched files are probed.
        self.prepare_cgroup(shared);
        if !plan.minimal {
            shared.open_tree(plan.trace_tree);
            shared.follow_page_ins();
        }
        // Before the streams are borrowed for the spawn; only their wiring comes between. The
        // working set's descriptors stay open where the spawner clones the children (a clone
        // by coldtrace would copy them).
        self.keep_open = shared.spawner.is_some();
        let residency_before = self.watch_before(shared.signals, observer)?;
        let sinks = Sinks {
            dev_null_in: shared.dev_null_in.as_ref(),
            dev_null_out: shared.dev_null_out.as_ref(),
            stdout_pipe: shared.stdout_pipe.as_ref(),
            stdout_file: self.stdout_file.as_ref(),
            stderr_sink: self.stderr_sink.as_ref(),
        };
        let leaf = shared.group.leaf();
        let mut options = spawn_options(plan, io, sinks, shared.signals);
        options.cgroup = leaf.map(Leaf::fd);
        // A discarded stderr is trimmed to its tail while the command writes it; a captured
        // output is moved to its artifact in steps. The page-in ledger's rings are read as
        // often, so that none fills up — only while the command runs: an exit is seen when the
        // tick returns, and the read after the reap takes what is left outside the timed window.
        let sink = self.stderr_sink.as_ref();
        let spill = io.capture.as_ref().zip(self.dir.as_ref());
        let page_ins = PageInEvents::tracer(&shared.page_ins);
        let bound = move |exited: &dyn Fn() -> bool| {
            if let Some(sink) = sink {
                sink.trim();
            }
            if let Some((capture, dir)) = spill {
                capture.spill(dir, exited);
            }
            let tracer = page_ins.filter(|_| !exited());
            if let Some(mut tracer) = tracer.and_then(|t| t.try_borrow_mut().ok()) {
                tracer.drain();
            }
        };
        let bounded = sink.is_some() || spill.is_some() || page_ins.is_some();
        let limits = RunLimits {
            timeout_ns: plan.timeout_ns,
            kill_after_ns: plan.kill_after_ns,
            escalate_after_ns: plan.escalate_after_ns,
            spared: &shared.spared,
            survivors: plan.survivors,
            group: leaf,
            signals: Some(&shared.signals.fd),
            counters: &plan.counters,
            inspect_child: !plan.minimal,
            orphans: Some(&shared.signals.subreaper),
            tick: bounded.then_some(&bound as &runner::Tick<'_>),
            tree: tree_source(&shared.tree, &shared.tasks).filter(|_| !plan.minimal),
        };
        let before = self.sample_before(shared.boot_id.as_ref(), &mut shared.sampler);
        // The last moment to stop without starting the run.
        if let Some(sig) = shared.signals.pending_interrupt() {
            return Err(sig);
        }
        let mut watching = Watching {
            observer,
            timeout: plan.timeout_ns.is_some(),
        };
        if let (Some(tracer), Some(leaf)) = (page_ins, leaf) {
            tracer.borrow_mut().begin(leaf.fd());
        }
        let via = runner::Via {
            stack: &mut shared.stack,
            floor: &mut shared.floor,
            spawner: &mut shared.spawner,
        };
        let mut result = runner::measure(&self.program, &options, via, &limits, &mut watching);
        let ledger = shared.end_page_ins();
        // Asked to stop while the spawner was starting it, and nothing was started.
        if let (Outcome::FailedToStart { .. }, Some(sig)) = (result.outcome, result.interrupted_by)
        {
            return Err(sig);
        }
        self.take_survivors(shared, &mut result);
        Ok(self.after_run(shared, result, before, residency_before, ledger))
    }

    /// What is sampled right after the reaping (outside the timed window): the system's
    /// counters, the watched files' residency, and a signal that came meanwhile.
    fn after_run(
        &mut self,
        shared: &mut Shared<'_>,
        mut result: RunResult,
        before: Before,
        residency_before: Option<Residency>,
        ledger: Option<crate::measure::page_ins::Ledger>,
    ) -> Measured {
        let plan = self.plan;
        let system_after = (!plan.minimal).then(|| shared.sampler.after_run());
        // A signal during the probes after the run is this run's: the batch stops after it.
        let caught = std::cell::Cell::new(None);
        let stop_and_keep = || {
            let sig = shared.signals.pending_interrupt();
            caught.set(caught.get().or(sig));
            sig
        };
        let page_ins = ledger.as_ref().and_then(|l| l.as_ref().ok());
        let read_bytes = (result.child_io.and_then(|io| io.read_bytes))
            .or(result.rusage.map(|u| u.block_in.saturating_mul(512)))
            .unwrap_or(0);
        let (cache, paged_in) = self
            .watch_after(residency_before, page_ins, read_bytes, &stop_and_keep)
            .unzip();
        if let Some(sig) = caught.get() {
            result.interrupted_by.get_or_insert(sig);
        }
        if self.watches_files() {
            shared.sampler.forget();
        }
        let page_ins = self.page_ins_record(ledger, shared.page_ins_why());
        Measured {
            result,
            started_at: before.started_at,
            boot_id: before.boot_id,
            uptime_s: before.uptime_s,
            cache,
            paged_in,
            page_ins,
            tree_why: shared.tree_why().map(str::to_string),
            system_delta: match (&before.system, &system_after) {
                (Some((before, from_ns)), Some((after, to_ns))) => {
                    Some(SystemDelta::between(before, after).over(to_ns.saturating_sub(*from_ns)))
                }
                _ => None,
            },
        }
    }

    /// The batch's cgroup at its first run (recorded in its context, with what earlier batches
    /// left; what was killed of it said once), and the leaf this run is born in.
    fn prepare_cgroup(&mut self, shared: &mut Shared<'_>) {
        if self.context.cgroup.is_none() {
            let fresh = matches!(shared.group, GroupState::NotYet);
            let context = shared.cgroup_context(self.plan);
            if fresh {
                self.say_leftovers(&context);
            }
            self.context.cgroup = Some(context);
        }
        shared.prepare_leaf(self.next_index);
    }

    /// Says what a coldtrace killed mid-batch left running in its cgroup, killed now (what a
    /// finished batch left on purpose, it said itself: it is only recorded).
    fn say_leftovers(&mut self, context: &CgroupContext) {
        use crate::batch::outcome::{named_processes, processes_count};
        use crate::measure::cgroup::LeftoverAction;
        for l in context.leftover.iter().map(|l| &l.0) {
            let done = match &l.action {
                LeftoverAction::Left => continue,
                LeftoverAction::Killed => "killed".to_string(),
                LeftoverAction::NotKilled(still) => format!(
                    "a kill did not end {} (frozen, or in an uninterruptible sleep): left",
                    named_processes(still, 5).unwrap_or_default()
                ),
                LeftoverAction::NotKilledBefore => {
                    "an earlier kill did not end them: left, not killed again".into()
                }
            };
            let Some(named) = named_processes(&l.processes, 5) else {
                continue;
            };
            let how = processes_count(l.processes.len());
            self.notices.push(format!(
                "a coldtrace killed mid-batch left {how} running in {}: {named}; {done}",
                l.group
            ));
        }
    }

    /// Counts what the run left running; what is left running is spared by later runs, and
    /// said once in the batch. A request to stop that ended a wait for them stops the batch.
    /// The run's leaf counted its tree's CPU and stalls.
    fn take_survivors(&mut self, shared: &mut Shared<'_>, result: &mut RunResult) {
        let survivors = &result.survivors;
        let index = self.next_index;
        let left = survivors.action == Some(SurvivorAction::Left);
        result.cgroup = shared.group.after_run(index, left);
        self.survivors.add(index, survivors);
        if let Some(sig) = survivors.interrupted_by {
            result.interrupted_by.get_or_insert(sig);
        }
        if survivors.action != Some(SurvivorAction::Left) {
            return;
        }
        shared.spared.extend(survivors.keys());
        if self.survivors.runs == 1 {
            if let Some(named) = crate::batch::outcome::named_processes(&survivors.processes, 5) {
                self.notices.push(format!(
                    "run #{index} left {} running after its command exited: {named}; left \
                     running (--survivors kill or wait ends them)",
                    crate::batch::outcome::processes_count(survivors.count())
                ));
            }
        }
    }

    /// The context sampled right before the spawn, outside the timed window (only the start
    /// time with `--minimal`).
    fn sample_before(&self, boot_id: Option<&String>, sampler: &mut SystemSampler) -> Before {
        let minimal = self.plan.minimal;
        let boot_id = if minimal { None } else { boot_id.cloned() };
        // /proc/uptime is CLOCK_BOOTTIME; reading the clock (vDSO) costs no system call.
        let uptime_s = (!minimal).then(clock::boottime_s);
        let started_at = clock::rfc3339_utc_now();
        if self.watches_files() {
            // This run's walk of the watched files lies between the last run and this one.
            sampler.forget();
        }
        let system = (!minimal).then(|| sampler.before_run());
        Before {
            started_at,
            boot_id,
            uptime_s,
            system,
        }
    }

    /// Builds the run's record, appends it to `runs.jsonl`, and accounts for it.
    fn record_run(
        &mut self,
        index: u64,
        role: Role,
        slot: Option<Slot>,
        cold_action: Option<ColdAction>,
        measured: Measured,
        kept: Option<(Kept, Kept)>,
    ) -> Result<Step, BatchError> {
        let outcome = measured.result.outcome;
        let wall_ns = measured.result.wall_ns;
        let interrupted_by = measured.result.interrupted_by;
        let single = SingleRun {
            outcome,
            wall_ns,
            rusage: measured.result.rusage,
        };
        let counted = self.is_counted(role, &measured.result);
        if measured.tree_why.is_some() {
            self.tree_why.clone_from(&measured.tree_why);
        }
        let failure_reason = outcome.failure_reason();
        let base = RecordBase {
            label: self.plan.label.as_deref(),
            argv: &self.argv,
            program: &self.context.program,
            cwd: self.cwd.as_deref(),
            index,
            role,
            slot,
            cycle: self.cycle_of(index),
            counted,
        };
        let mut record = base.record(cold_action, measured, kept.as_ref());
        record.anomalies = self.online.check(&RunFacts::of(&record));
        name_what_kept_it_cached(
            self.working_set_before.as_ref(),
            &mut self.not_cold,
            index,
            &mut record.anomalies,
        );
        if role == Role::First {
            (self.first_refaults, self.first_page_in_split) = first_run_evidence(&record);
        }
        if index == 0 {
            let notes = Self::unavailable_counters(&record);
            self.notices.extend(notes);
        }
        if self.dir.is_some() || self.kept.is_some() || self.plan.is_single_run() {
            write_line(&mut self.line, &mut self.dir, &mut self.kept, &record)?;
        }
        if self.cache_unknown.is_none() {
            self.cache_unknown = record.cache.as_ref().and_then(|c| {
                c.before
                    .unknown_reason
                    .clone()
                    .or_else(|| c.after.unknown_reason.clone())
            });
        }
        self.next_index += 1;
        self.last_wall_ns = wall_ns;
        self.counts.recorded += 1;
        if role == Role::Warmup {
            self.counts.warmup += 1;
        }
        // The run with role `first` is kept whatever became of it (a rejected one is shown,
        // never replaced by a warm run); of the others, only counted warm runs.
        self.columns.push(&record);
        if counted {
            self.counts.counted += 1;
        }
        let stops = interrupted_by.is_none() && self.stops_on(index, role, &outcome);
        if let Some(reason) = failure_reason {
            let stderr = kept.and_then(|(_, err)| err.file);
            self.account_failure(index, role, &outcome, reason, counted, stderr, stops);
        }
        if stops {
            self.stop_on_failure(index, role, &outcome);
            return Ok(Step::Stop);
        }
        Ok(self.next_step(single, interrupted_by))
    }

    /// Whether a run that ended as `outcome` is accepted: it succeeded, or `-i` counts its
    /// failure.
    fn accepted(&self, outcome: &Outcome) -> bool {
        let exit_code = match outcome {
            Outcome::Finished(status) => status.code(),
            _ => None,
        };
        outcome.succeeded() || self.plan.ignore_failure.counts(exit_code)
    }

    /// Whether a run of `role` that ended as `result` goes into the statistics.
    fn is_counted(&self, role: Role, result: &RunResult) -> bool {
        // A single run is reported like `time` reports it, success or not; a batch rejects failures.
        let ran =
            result.rusage.is_some() && !matches!(result.outcome, Outcome::FailedToStart { .. });
        // A run that was not measured has nothing to count, whatever `-i` says.
        let measured = !matches!(result.outcome, Outcome::Unmeasured { .. });
        role != Role::Warmup
            && measured
            && (self.accepted(&result.outcome) || (self.plan.is_single_run() && ran))
    }

    /// Whether the batch stops after run `index` (as hyperfine does): the first counted run or
    /// the first warm-up failed, without `-i` (with it the batch never stops on a failure: a
    /// failure it does not count is rejected). A failed start stops the batch on its own
    /// ([`CommandBatch::next_step`]); a single run is reported like `time` reports it.
    fn stops_on(&self, index: u64, role: Role, outcome: &Outcome) -> bool {
        let first = role == Role::First || (role == Role::Warmup && index == 0);
        first
            && self.plan.ignore_failure == IgnoreFailure::No
            && !self.plan.is_single_run()
            && !matches!(
                outcome,
                Outcome::FailedToStart { .. }
                    | Outcome::Unmeasured { .. }
                    | Outcome::Unreaped { .. }
                    | Outcome::WaitFailed { .. }
            )
            && !outcome.succeeded()
    }

    /// Stops the batch after the failing run `index`: why, and the run, for the view.
    fn stop_on_failure(&mut self, index: u64, role: Role, outcome: &Outcome) {
        let what = if role == Role::Warmup {
            "the first warm-up"
        } else {
            "the first counted run"
        };
        let how = describe(outcome);
        self.stopped_reason = Some(format!(
            "{what} (#{index}) {how}: stopped after it (-i/--ignore-failure counts failing runs)"
        ));
        let stderr_tail = self
            .failed
            .last()
            .filter(|f| f.index == index)
            .and_then(|f| f.stderr_tail.clone());
        self.failure_stop = Some(FailureStop {
            index,
            warmup: role == Role::Warmup,
            how,
            exit_code: match outcome {
                Outcome::Finished(status) => status.code(),
                _ => None,
            },
            stderr_tail,
            output_shown: self.plan.output == crate::plan::OutputMode::Inherit,
        });
    }

    /// Lists a failed run (rejected, or counted with `--ignore-failure`) with its stderr tail;
    /// a failed warm-up only when it did not start or `stops` the batch.
    #[allow(clippy::too_many_arguments)]
    fn account_failure(
        &mut self,
        index: u64,
        role: Role,
        outcome: &Outcome,
        reason: String,
        counted: bool,
        stderr_file: Option<std::fs::File>,
        stops: bool,
    ) {
        let failed_start = matches!(outcome, Outcome::FailedToStart { .. });
        if self.plan.is_single_run() || (role == Role::Warmup && !failed_start && !stops) {
            return;
        }
        let tail = match (stderr_file, &mut self.stderr_sink) {
            (Some(mut file), _) => Some(artifacts::tail(&mut file, 5)),
            (None, Some(sink)) => Some(sink.tail(5)),
            (None, None) => None,
        }
        .filter(|t| !t.is_empty());
        if counted {
            self.counts.failed_counted += 1;
        } else {
            self.counts.rejected += 1;
        }
        // Bounded: the first and the most recent, only the most recent with their tails.
        self.failed.push(FailedRun {
            index,
            reason,
            stderr_tail: tail,
            counted,
        });
    }

    /// Whether the batch goes on after a run that ended as `run.outcome`.
    fn next_step(
        &mut self,
        run: SingleRun,
        interrupted_by: Option<coldtrace_syscalls::Signal>,
    ) -> Step {
        if self.plan.is_single_run() {
            self.single = Some(run);
        }
        if let Outcome::FailedToStart { stage, errno } = run.outcome {
            self.start_failure = Some((stage, errno));
            self.stopped_reason = Some(format!(
                "{}; the batch stops",
                crate::batch::program::cannot_start(&self.argv[0], errno)
            ));
            return Step::Stop;
        }
        if let Some(why) = crate::batch::cannot_wait(&run.outcome) {
            // Every later run would end the same way, each leaving a zombie: stop, -i or not.
            self.stopped_reason = Some(why.clone());
            self.wait_failure = Some(why);
            return Step::Stop;
        }
        if let Some(sig) = interrupted_by {
            self.interrupted_by = Some(sig);
            return Step::Stop;
        }
        Step::Continue
    }
}

/// For a run made cold that was not (`not_cold` among `anomalies`): the process that maps the
/// working set's most cached file, when one is found (every `/proc/PID/maps` is read, so only
/// then); each such anomaly is also kept in `kept`, for `batch.json`.
fn name_what_kept_it_cached(
    working_set: Option<&cache::WorkingSetResidency>,
    kept: &mut Vec<RunAnomaly>,
    index: u64,
    anomalies: &mut [Anomaly],
) {
    for a in anomalies.iter_mut().filter(|a| a.kind == "not_cold") {
        let largest = working_set.and_then(|w| w.largest.as_ref());
        a.mapped_by = largest.and_then(|&(_, dev, ino, _)| cache::mapped_by(dev, ino));
        kept.push(RunAnomaly {
            index,
            anomaly: a.clone(),
        });
    }
}

/// What the first run's cause is told from: its refaults and the split of its page-ins.
type FirstRunEvidence = (Option<u64>, Result<(Option<u64>, Option<u64>), String>);

/// The first run's [`FirstRunEvidence`] from its record.
fn first_run_evidence(record: &RunRecord) -> FirstRunEvidence {
    let refaults = record
        .system_delta
        .as_ref()
        .and_then(|d| d.workingset_refault_file);
    let split = match &record.page_ins {
        None => Err("no page-in ledger with --minimal".into()),
        Some(p) => match (&p.unknown_reason, &p.split_unknown_reason) {
            (Some(why), _) | (None, Some(why)) => Err(why.clone()),
            (None, None) => Ok((p.evicted.map(|e| e.bytes), p.elsewhere.map(|e| e.bytes))),
        },
    };
    (refaults, split)
}

/// Writes the record as one line into `line` and appends it to `runs.jsonl` and the exports'
/// store. Only where one of those, or a single run's JSON, takes it: a batch without -o would
/// write it for nothing.
fn write_line(
    line: &mut Vec<u8>,
    dir: &mut Option<crate::record::artifacts::BatchDir>,
    kept: &mut Option<crate::record::kept::KeptRecords>,
    record: &RunRecord,
) -> Result<(), BatchError> {
    line.clear();
    // Serialising plain data into memory cannot fail.
    let _ = serde_json::to_writer(&mut *line, record);
    line.push(b'\n');
    if let Some(d) = dir {
        d.append_record(line)?;
    }
    if let Some(kept) = kept {
        kept.push(line);
    }
    Ok(())
}
