//! `--export-coldtrace-json FILE`: coldtrace's own export (schema `coldtrace.export/1`), the batch
//! document and every run's record as written, in one JSON document. Streamed, record by record:
//! it copies the documents as they were written, and changes, computes and opens nothing.
//!
//! Not hyperfine's schema (that is `--export-json`): it has no place for the first
//! run, warm-ups, faults, block I/O, the child's I/O or the cold state, which are what
//! coldtrace records.
#![forbid(unsafe_code)]

use crate::view::export::part::Part;
use std::io::{self, Write};

/// `"batch": DOCUMENT, "runs": [RECORD, ...]` of one command.
fn batch_and_runs(w: &mut dyn Write, part: &Part<'_>) -> io::Result<()> {
    write!(
        w,
        "\"batch\": {},\n\"runs\": [",
        part.outcome.document.trim_end()
    )?;
    let mut first = true;
    if let Some(kept) = &part.outcome.records {
        kept.for_each(|line| {
            let sep = if first { "\n" } else { ",\n" };
            first = false;
            write!(w, "{sep}{line}")
        })?;
    }
    write!(w, "\n]")
}

/// The export of a one-command batch.
pub fn batch(w: &mut dyn Write, part: &Part<'_>) -> io::Result<()> {
    write!(w, "{{\n\"schema\": \"{}\",\n", crate::record::EXPORT_SCHEMA)?;
    batch_and_runs(w, part)?;
    writeln!(w, "\n}}")
}

/// The export of a comparison: its document, then each command's batch and runs.
pub fn comparison(w: &mut dyn Write, document: &str, parts: &[Part<'_>]) -> io::Result<()> {
    write!(
        w,
        "{{\n\"schema\": \"{}\",\n\"comparison\": {},\n\"commands\": [",
        crate::record::EXPORT_SCHEMA,
        document.trim_end()
    )?;
    for (i, part) in parts.iter().enumerate() {
        write!(w, "{}\n{{", if i == 0 { "" } else { "," })?;
        batch_and_runs(w, part)?;
        write!(w, "}}")?;
    }
    writeln!(w, "\n]\n}}")
}
