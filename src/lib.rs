//! coldtrace: run a command and record exactly how it ran.
//!
//! Data flows one way: [`cli`] parses arguments into a [`plan::Plan`]; [`batch`] runs it, one
//! [`runner`] call per run (spawn → wait → inspect → reap, with the system state around it from
//! [`cache`], [`counters`] and [`context`]); each run becomes a [`record::RunRecord`] streamed to
//! `runs.jsonl` by [`artifacts`]; [`metrics`] and [`stats`] summarise the counted runs;
//! [`render`] draws the table. `report` reads batch directories back. No module reaches back up
//! that chain.
//!
//! All unsafe code lives in the `coldtrace-syscalls` crate (`syscalls/src/raw/`); this crate
//! forbids it.
#![forbid(unsafe_code)]

// Human output on stderr is a courtesy: std's `eprint!`/`eprintln!` panic when stderr is closed
// or full (`2>/dev/full`, `2>&1 | true`), which would abort a batch and lose its records. These
// shadow std's macros in every module of the crate and ignore the write error instead.
macro_rules! eprint {
    ($($arg:tt)*) => {{ use std::io::Write as _; let _ = write!(std::io::stderr(), $($arg)*); }};
}
macro_rules! eprintln {
    ($($arg:tt)*) => {{ use std::io::Write as _; let _ = writeln!(std::io::stderr(), $($arg)*); }};
}

pub mod app;
pub mod artifacts;
pub mod batch;
pub mod cache;
pub mod cli;
pub mod compare;
pub mod context;
pub mod counters;
pub mod floor;
pub mod json;
pub mod metrics;
pub mod perf;
pub mod plan;
pub mod procfs;
pub mod record;
pub mod render;
pub mod report;
pub mod runner;
pub mod stats;
pub mod time;
pub mod words;
