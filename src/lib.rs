//! coldtrace: run a command and record exactly how it ran. The crate root declares the modules
//! and two stderr macros; it holds no logic of its own.
//!
//! Data flows one way, and so do the imports: [`cli`] parses arguments into a [`plan::Plan`];
//! [`batch`] runs it, one [`measure::runner`] call per run (spawn → wait → inspect → reap, with
//! the system state around it from the rest of [`measure`]); each run becomes a
//! [`record::run::RunRecord`] streamed to `runs.jsonl` ([`record::artifacts`]); [`record`]
//! summarises the counted runs; [`view`] draws the tables. `report` reads batch directories back
//! ([`record::reader`]). [`text`], [`serialize`] and [`untrusted`] (paths coldtrace did not
//! create, opened without blocking) are leaves that everything may use.
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

pub mod batch;
pub mod boot;
pub mod cleanup;
pub mod cli;
pub mod measure;
pub mod plan;
pub mod record;
pub mod serialize;
pub mod text;
pub mod untrusted;
pub mod view;
