//! One command's part of an export ([`Part`]): how the command is shown, its `-P`/`-L` values,
//! its batch outcome, and its records read back one by one. Every format file takes parts; this
//! file writes no format and no file.
#![forbid(unsafe_code)]

use crate::batch::BatchOutcome;
use std::io;

/// One command's part of an export: how it is shown, its batch and its records.
pub struct Part<'a> {
    /// The command as shown (its name, or its words).
    pub command: &'a str,
    /// Its `-P`/`-L` values.
    pub parameters: Vec<(&'a str, &'a str)>,
    /// Its outcome.
    pub outcome: &'a BatchOutcome,
}

impl Part<'_> {
    /// Calls `each` with every record of this command, parsed.
    pub fn each_record(
        &self,
        mut each: impl FnMut(&serde_json::Value) -> io::Result<()>,
    ) -> io::Result<()> {
        let Some(kept) = &self.outcome.records else {
            return Ok(());
        };
        kept.for_each(|line| match serde_json::from_str(line) {
            Ok(record) => each(&record),
            // A line coldtrace wrote itself: it parses; skip it rather than fail the export.
            Err(_) => Ok(()),
        })
    }
}
