//! What a batch leaves behind and how it is summarised: the wire types (schema-versioned), the
//! batch directory on disk, metric columns and statistics, and reading batches back (as rows
//! for the table and as series for the picture).
//!
//! Nothing here measures, spawns or renders: records are built from what [`crate::measure`]
//! returned, and the view draws them.
#![forbid(unsafe_code)]

pub mod anomaly;
pub mod artifacts;
pub mod batch;
pub mod boot;
pub mod boots;
pub mod cause;
pub mod columns;
pub mod compare;
pub mod context;
pub mod cycles;
pub mod dir;
pub mod export_file;
pub mod failed;
pub mod find;
pub mod head;
pub mod kept;
pub mod metrics;
pub mod page_ins;
pub mod pick;
pub mod reader;
pub mod run;
pub mod series;
pub mod stats;
pub mod summary;
pub mod tree;
pub mod verdict;
pub mod working_set;

/// Schema name and version of a run record (`runs.jsonl`). Version 8: `page_ins` counts the
/// pages read in, and `page_ins.written` the pages created by writing, which version 6 and 7
/// counted as read in. Version 7: `tree.on_cpu_sum_ns` (the
/// tree's tasks' turns on a CPU, summed), `tree.cpu_ns` (the kernel's CPU time of the same
/// tasks) and `tree.steal_ns` (what the turns hold beyond it: the hypervisor's steal). Version
/// 6: `page_ins` (the page-in ledger: what the run's processes brought into the page cache,
/// split by watched tree). Version 5: `tree.tasks_source`
/// (where `tree.tasks` came from), and `tree.tasks` also where the tree is not traced, from
/// perf's task records. Version 4: `cgroup` (the run's
/// cgroup leaf: the tree's CPU time and stalls) and `tree` (the whole process tree's states over
/// the run, and where its CPU went; absent from the first records of this version, read as
/// unknown). Version 3: `cache.working_set_before`
/// (how much of what the first run brought into the page cache was cached before this run),
/// `mapped_by` in every anomaly, and `runner.spawned_by` (the process that cloned the child,
/// whose memory is the floor: the spawner or coldtrace). Version 2: `survivors` (what the run
/// left running when its command exited, and what became of it), `outcome.tree_killed`
/// (coldtrace killed the whole tree, and why) and the outcome kind `traced`.
pub const RUN_SCHEMA: &str = "coldtrace.run/8";
/// Version 1 of the run record, which `report` still reads.
pub const RUN_SCHEMA_V1: &str = "coldtrace.run/1";
/// Every run record version `report` reads, the newest first.
pub const RUN_SCHEMAS_READ: [&str; 8] = [
    RUN_SCHEMA,
    "coldtrace.run/7",
    "coldtrace.run/6",
    "coldtrace.run/5",
    "coldtrace.run/4",
    "coldtrace.run/3",
    "coldtrace.run/2",
    RUN_SCHEMA_V1,
];

/// Whether `schema` names a run record `report` reads.
pub fn is_run_schema(schema: Option<&str>) -> bool {
    schema.is_some_and(|s| RUN_SCHEMAS_READ.contains(&s))
}

/// Schema name and version of a batch document (`batch.json`). Version 8:
/// `first_cold_cause.wrote_caches` (the files the first run created under the working
/// directory and the watched trees, and which the later runs left as written), the cause
/// `wrote_caches`, and `verdict.first_wrote_caches`. Version 7: `verdict` (each
/// run's role by its evidence, the reference warm set, whether the first run has a penalty and
/// in which states, with the tests' figures; see [`crate::record::verdict`]); `first_penalty`
/// is taken over the reference warm set, and its `significant` is the verdict's. Version 6: `context.cgroup`
/// (the batch's cgroup, or why it has none, and what earlier batches left); `first_penalty.tree`
/// splits the penalty by the whole process tree's states, and `basis` is `tree`, `schedstat`,
/// `main thread` (was `parallel`, with no parts; the first documents of this version may still
/// say so) or `unavailable`. Version 5: `spawner` (the spawner that cloned the measured
/// children: runs, CPU, resident set, or why there was none). Version 4: `first_penalty` names
/// the scheduler tick of the user/sys split (`cpu_tick_ns`, `cpu_tick_source`),
/// `first_cold_cause` names what made the first run cold, `cycles.penalty.per_cycle` is the
/// measured cycles' penalty (and a cycles batch has no `first_penalty`). Version 3:
/// `first_penalty` says whether the first run stands out of the warm runs (`significant`,
/// `rule` and the figures the rule used). Version 2: `summary.first` is the run with role
/// `first` or null when it was rejected (`first_rejected`); version 1 put the next counted run
/// there instead.
pub const BATCH_SCHEMA: &str = "coldtrace.batch/8";
/// Every batch document version `report` reads, the newest first.
pub const BATCH_SCHEMAS_READ: [&str; 8] = [
    BATCH_SCHEMA,
    "coldtrace.batch/7",
    "coldtrace.batch/6",
    "coldtrace.batch/5",
    "coldtrace.batch/4",
    "coldtrace.batch/3",
    "coldtrace.batch/2",
    BATCH_SCHEMA_V1,
];
/// Version 1 of the batch document, which `report` still reads.
pub const BATCH_SCHEMA_V1: &str = "coldtrace.batch/1";
/// Schema name and version of a comparison document (`batch.json` of `compare`).
pub const COMPARE_SCHEMA: &str = "coldtrace.compare/1";
/// Schema name and version of an export (`--export-coldtrace-json FILE`): a batch or a comparison with
/// every run's record.
pub const EXPORT_SCHEMA: &str = "coldtrace.export/1";
/// Schema name and version of `report --json`: the rows of the batches read.
pub const REPORT_SCHEMA: &str = "coldtrace.report/1";
/// Schema name and version of `context --json`.
pub const CONTEXT_SCHEMA: &str = "coldtrace.context/1";
