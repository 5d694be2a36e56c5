//! The end of one command's batch: the summary, `batch.json` written atomically, the exit code,
//! and the outcome handed to rendering. It summarises what was recorded; it runs nothing.
#![forbid(unsafe_code)]

use crate::batch::command::CommandBatch;
use crate::batch::error::BatchError;
use crate::batch::outcome::{describe, single_exit_code, BatchOutcome};
use crate::batch::program::{cannot_start, exit_code_for_failed_start};
use crate::measure::spawner::SpawnerUsage;
use crate::measure::tick::Tick;
use crate::plan::ColdWhen;
use crate::record::anomaly::{noise, series_anomalies, Noise, RunAnomaly};
use crate::record::batch::{BatchDocument, ConfigRecord, FirstRejected};
use crate::record::cause::{cold_cause, ColdCause, ColdFacts};
use crate::record::columns::{AllRows, Covered, WarmSeries};
use crate::record::cycles::{self, CyclesSummary};
use crate::record::metrics::metric_index;
use crate::record::run;
use crate::record::summary::SummaryMap;
use crate::record::verdict::penalty::FirstPenalty;
use crate::record::verdict::{self, Setting, Verdict};
use crate::record::working_set::{self, WorkingSetSummary};

/// What the batch's records say about its first run and its warm series.
struct Findings {
    first_rejected: Option<FirstRejected>,
    penalty: Result<FirstPenalty, &'static str>,
    verdict: Verdict,
    anomalies: Vec<RunAnomaly>,
    warm_noise: Option<Noise>,
    cycles: Option<CyclesSummary>,
    cause: Option<ColdCause>,
    working_set: Option<WorkingSetSummary>,
}

impl Findings {
    fn of(batch: &CommandBatch<'_>, tick: Tick) -> Findings {
        let (columns, plan, runs_per_cycle) = (&batch.columns, batch.plan, batch.target_runs);
        let first_rejected = columns.first().filter(|f| !f.counted).map(|f| {
            let reason = f.failure_reason.as_deref().unwrap_or("not counted");
            FirstRejected {
                index: f.index,
                reason: reason.to_string(),
            }
        });
        let cold_every_run = plan.cold.when == Some(ColdWhen::EveryRun);
        let mut anomalies = series_anomalies(columns);
        anomalies.extend(batch.not_cold.iter().cloned());
        anomalies.sort_by_key(|a| a.index);
        let setting = Setting {
            warmups: u64::from(plan.warmup),
            cycles: plan.cold.when.and_then(ColdWhen::cycles).is_some(),
            prepare: plan.prepare.is_some(),
            cold_every_run,
            cold_first: plan.cold.when.is_some(),
            tick_ns: tick.ns,
        };
        let no_tree = batch.tree_why.as_deref();
        let (mut verdict, penalty) = verdict::of_rows(
            columns.first(),
            &AllRows(columns),
            &anomalies,
            setting,
            tick,
            no_tree,
        );
        let cause = batch.cold_facts().map(|f| cold_cause(&f));
        verdict.first_wrote_caches = cause
            .as_ref()
            .and_then(|c| c.wrote_caches.as_ref())
            .map(|w| w.files);
        let covered = Covered {
            columns,
            first_apart: verdict.first_index.is_some(),
            uncovered: &verdict.uncovered(),
        };
        Findings {
            first_rejected,
            penalty,
            warm_noise: noise(&covered.column(0)),
            verdict,
            anomalies,
            cycles: plan
                .cold
                .when
                .and_then(ColdWhen::cycles)
                .map(|m| cycles::summarise(columns.first(), &AllRows(columns), m, runs_per_cycle)),
            cause,
            working_set: batch.working_set.as_ref().and_then(|ws| {
                let (files, bytes) = ws.first_run();
                working_set::summarise(files, bytes, &AllRows(columns), cold_every_run)
            }),
        }
    }
}

impl CommandBatch<'_> {
    /// Writes `batch.json` (atomically) and returns what the caller renders; `spawner` is what
    /// the batch's spawner cost, once stopped.
    pub fn finish(self, spawner: Option<SpawnerUsage>) -> Result<BatchOutcome, BatchError> {
        let plan = self.plan;
        let tick = Tick::read();
        let found = Findings::of(&self, tick);
        let v = &found.verdict;
        let summaries = self
            .columns
            .summarise(tick.ns, v.first_index.is_some(), &v.uncovered());
        let complete =
            self.interrupted_by.is_none() && self.stopped_reason.is_none() && self.is_done();
        let document = BatchDocument {
            schema: crate::record::BATCH_SCHEMA,
            label: plan.label.as_deref(),
            started_at: &self.started_at,
            finished_at: crate::measure::clock::rfc3339_utc_now(),
            complete,
            interrupted_by: run::signal_name(self.interrupted_by),
            stopped_reason: self.stopped_reason.as_deref(),
            context: &self.context,
            config: ConfigRecord::of(plan, &self.argv, self.target_runs),
            counts: self.counts,
            failed_runs: &self.failed,
            failed_runs_omitted: self.failed.omitted(),
            first_rejected: found.first_rejected,
            first_penalty: found.penalty.as_ref().ok(),
            first_penalty_unavailable: found.penalty.as_ref().err().copied(),
            verdict: &found.verdict,
            first_cold_cause: found.cause.as_ref(),
            working_set: found.working_set.as_ref(),
            anomalies: &found.anomalies,
            warm_noise: found.warm_noise.as_ref(),
            cycles: found.cycles.as_ref(),
            spawner: spawner.as_ref(),
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
        let exit_code = self.exit_code();
        let json = if plan.is_single_run() && self.counts.recorded == 1 {
            String::from_utf8_lossy(&self.line).trim_end().to_string()
        } else {
            document_json.clone()
        };
        Ok(BatchOutcome {
            exit_code,
            json,
            document: document_json,
            records: self.kept,
            walls_ns: self.columns.walls_ns(),
            metrics: self.columns.metrics().to_vec(),
            first: self.columns.first().cloned(),
            columns: self.columns,
            cold_when: plan.cold.when,
            first_penalty: found.penalty,
            verdict: found.verdict,
            first_cold_cause: found.cause,
            working_set: found.working_set,
            anomalies: found.anomalies,
            warm_noise: found.warm_noise,
            cycles: found.cycles,
            watching: !plan.cold.watch.is_empty(),
            cache_unknown: self.cache_unknown,
            first_paged_in: self.first_paged_in,
            survivors: self.survivors,
            first_stayed: self.first_stayed.map(|s| {
                let roots = plan.cold.evict.iter();
                (s, roots.map(|p| p.display().to_string()).collect())
            }),
            summaries,
            failed: self.failed,
            counts: self.counts,
            context: self.context,
            interrupted_by: self.interrupted_by,
            stopped_reason: self.stopped_reason,
            out_dir: self.dir.map(|d| d.root().to_path_buf()),
            notices: self.notices,
            spawner,
            single_outcome: self.single.map(|s| describe(&s.outcome)),
            single_run: self.single,
            failure_stop: self.failure_stop,
            start_failure: self
                .start_failure
                .map(|(_, errno)| cannot_start(&self.argv[0], errno)),
            wait_failure: self.wait_failure,
        })
    }

    /// What coldtrace did before the first counted run and saw during it (`None` without a
    /// counted first run).
    fn cold_facts(&self) -> Option<ColdFacts> {
        let first = self.columns.first().filter(|f| f.counted)?;
        let at = |name: &str| first.row.get(metric_index(name));
        let cold_first = self.plan.cold.when.is_some();
        Some(ColdFacts {
            evicted: cold_first && !self.plan.cold.evict.is_empty(),
            stayed_ratio: self
                .first_stayed
                .as_ref()
                .and_then(|s| s.residency.resident_ratio),
            dropped_caches: cold_first && self.plan.cold.drop_caches,
            resident_ratio_before: at("resident_ratio_before"),
            setup: self.plan.setup.is_some(),
            prepare: self.plan.prepare.is_some(),
            read_bytes: at("read_bytes").or(at("block_in").map(|b| b * 512.0)),
            major_faults: at("major_faults"),
            refaults: self.first_refaults,
            page_ins_evicted_bytes: self.first_page_in_split.as_ref().ok().and_then(|s| s.0),
            page_ins_elsewhere_bytes: self.first_page_in_split.as_ref().ok().and_then(|s| s.1),
            page_ins_unknown_reason: self.first_page_in_split.as_ref().err().cloned(),
            page_bytes: rustix::param::page_size() as u64,
            wrote_caches: self.wrote_caches(),
            first_batch_since_boot: self.context.boot_marker.first_batch_since_boot,
            at_first: self.first_history.map(|(h, _)| h),
            at_start: self.context.boot_marker.at_start,
            last_batch: self.context.boot_marker.last_batch,
            own_drops: self.first_history.map_or(0, |(_, own)| own),
        })
    }

    /// The process exit code (GNU time's conventions, see the README's exit codes).
    fn exit_code(&self) -> u8 {
        if let Some(sig) = self.interrupted_by {
            128u8.saturating_add(sig.raw() as u8)
        } else if let Some((stage, errno)) = self.start_failure {
            exit_code_for_failed_start(stage, errno)
        } else if self.wait_failure.is_some() {
            125
        } else if let Some(single) = self.single.filter(|_| self.plan.is_single_run()) {
            single_exit_code(&single.outcome)
        } else if self.counts.rejected > 0
            || self.stopped_reason.is_some()
            || self.cleanup_failure.is_some()
        {
            1
        } else {
            0
        }
    }
}
