//! What a batch leaves behind and how it is summarised: the wire types (schema-versioned), the
//! batch directory on disk, metric columns and statistics, and reading batches back.
//!
//! Nothing here measures, spawns or renders: records are built from what [`crate::measure`]
//! returned, and the view draws them.
#![forbid(unsafe_code)]

pub mod artifacts;
pub mod batch;
pub mod columns;
pub mod compare;
pub mod context;
pub mod metrics;
pub mod reader;
pub mod run;
pub mod stats;
pub mod summary;

/// Schema name and version of a run record (`runs.jsonl`).
pub const RUN_SCHEMA: &str = "coldtrace.run/1";
/// Schema name and version of a batch document (`batch.json`).
pub const BATCH_SCHEMA: &str = "coldtrace.batch/1";
/// Schema name and version of a comparison document (`batch.json` of `compare`).
pub const COMPARE_SCHEMA: &str = "coldtrace.compare/1";
