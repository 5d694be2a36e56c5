//! The exports written after the runs, one file per format (`--export-json`,
//! `--export-hyperfine-json`, `--export-csv`, `--export-markdown`), each replaced atomically.
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
use crate::record::artifacts::{replace_file, ArtifactError};

/// Writes every export `exports` asks for, of a one-command batch titled `title`.
pub fn write_batch(
    exports: &Exports,
    outcome: &BatchOutcome,
    command: &str,
    title: &str,
) -> Result<(), ArtifactError> {
    let parts = [Part {
        command,
        parameters: Vec::new(),
        outcome,
    }];
    if let Some(path) = &exports.json {
        replace_file(path, |w| json::batch(w, &parts[0]))?;
    }
    if let Some(path) = &exports.markdown {
        replace_file(path, |w| {
            w.write_all(markdown::batch(outcome, title).as_bytes())
        })?;
    }
    write_runs(exports, &parts)
}

/// Writes every export `exports` asks for, of a comparison.
pub fn write_compare(exports: &Exports, outcome: &CompareOutcome) -> Result<(), ArtifactError> {
    let parts: Vec<Part<'_>> = outcome
        .commands
        .iter()
        .zip(&outcome.batches)
        .map(|(c, b)| Part {
            command: c.name.as_deref().unwrap_or(&c.command),
            parameters: c
                .parameters
                .iter()
                .map(|p| (p.name.as_str(), p.value.as_str()))
                .collect(),
            outcome: b,
        })
        .collect();
    if let Some(path) = &exports.json {
        replace_file(path, |w| json::comparison(w, &outcome.json, &parts))?;
    }
    if let Some(path) = &exports.markdown {
        replace_file(path, |w| {
            w.write_all(markdown::comparison(outcome).as_bytes())
        })?;
    }
    write_runs(exports, &parts)
}

/// The exports made of every run: hyperfine's JSON and the CSV.
fn write_runs(exports: &Exports, parts: &[Part<'_>]) -> Result<(), ArtifactError> {
    if let Some(path) = &exports.hyperfine_json {
        replace_file(path, |w| hyperfine::results(w, parts))?;
    }
    if let Some(path) = &exports.csv {
        replace_file(path, |w| csv::runs(w, parts))?;
    }
    Ok(())
}
