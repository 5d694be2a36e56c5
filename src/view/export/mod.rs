//! The exports written after the runs, one file per format (`--export-json`,
//! `--export-csv`, `--export-markdown` as hyperfine 2.0 writes them; `--export-coldtrace-json`
//! and `--export-csv-runs`, coldtrace's own), each written by
//! [`export_file::write`] (a file replaced atomically, a device or FIFO written through).
//! They render what the batch recorded; running and recording are the batch's job.
#![forbid(unsafe_code)]

pub mod csv;
pub mod hyperfine;
pub mod json;
pub mod markdown;
mod part;

pub use part::Part;

use crate::batch::{BatchOutcome, CompareOutcome};
use crate::plan::Exports;
use crate::record::artifacts::ArtifactError;
use crate::record::compare::MetricComparison;
use crate::record::export_file::{self, Target};
use std::path::Path;

/// Writes every export `exports` asks for, of a one-command batch: `command` as given, its
/// `--command-name`.
pub fn write_batch(
    exports: &Exports,
    outcome: &BatchOutcome,
    command: &str,
    name: Option<&str>,
) -> Result<(), ArtifactError> {
    let parts = [Part {
        command,
        name,
        parameters: Vec::new(),
        outcome,
    }];
    if let Some(path) = &exports.coldtrace_json {
        write_file("--export-coldtrace-json", path, |w| {
            json::batch(w, &parts[0])
        })?;
    }
    write_hyperfine(exports, &parts, None)
}

/// Writes every export `exports` asks for, of a comparison.
pub fn write_compare(exports: &Exports, outcome: &CompareOutcome) -> Result<(), ArtifactError> {
    let parts: Vec<Part<'_>> = outcome
        .commands
        .iter()
        .zip(&outcome.batches)
        .map(|(c, b)| Part {
            command: &c.command,
            name: c.name.as_deref(),
            parameters: c
                .parameters
                .iter()
                .map(|p| (p.name.as_str(), p.value.as_str()))
                .collect(),
            outcome: b,
        })
        .collect();
    if let Some(path) = &exports.coldtrace_json {
        write_file("--export-coldtrace-json", path, |w| {
            json::comparison(w, &outcome.json, &parts)
        })?;
    }
    let wall = outcome.comparison.iter().find(|c| c.metric == "wall_ns");
    write_hyperfine(exports, &parts, wall)
}

/// The exports hyperfine 2.0 has (its JSON, Markdown and summary CSV) and the per-run CSV;
/// `wall` is a comparison's wall time (the ratios and intervals its screen gives).
fn write_hyperfine(
    exports: &Exports,
    parts: &[Part<'_>],
    wall: Option<&MetricComparison>,
) -> Result<(), ArtifactError> {
    if let Some(path) = &exports.hyperfine_json {
        write_file("--export-json", path, |w| hyperfine::results(w, parts))?;
    }
    if let Some(path) = &exports.markdown {
        write_file("--export-markdown", path, |w| {
            w.write_all(markdown::table(parts, wall)?.as_bytes())
        })?;
    }
    if let Some(path) = &exports.csv {
        write_file("--export-csv", path, |w| csv::summary(w, parts))?;
    }
    if let Some(path) = &exports.csv_runs {
        write_file("--export-csv-runs", path, |w| csv::runs(w, parts))?;
    }
    Ok(())
}

/// One export, written safely (see [`export_file::write`]).
fn write_file(
    flag: &str,
    path: &Path,
    write: impl FnOnce(&mut dyn std::io::Write) -> std::io::Result<()>,
) -> Result<(), ArtifactError> {
    export_file::write(Target { flag, path }, write)
}
