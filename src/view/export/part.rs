//! One command's part of an export ([`Part`]): how the command is shown, its `-P`/`-L` values,
//! its batch outcome, and its records read back one by one. Every format file takes parts; this
//! file writes no format and no file.
#![forbid(unsafe_code)]

use crate::batch::BatchOutcome;
use std::io;

/// One command's part of an export: how it is shown, its batch and its records.
pub struct Part<'a> {
    /// The command as given (its words quoted as a shell would, or its string), escaped.
    pub command: &'a str,
    /// Its `--command-name`, escaped.
    pub name: Option<&'a str>,
    /// Its `-P`/`-L` values.
    pub parameters: Vec<(&'a str, &'a str)>,
    /// Its outcome.
    pub outcome: &'a BatchOutcome,
}

impl Part<'_> {
    /// How the command is shown: its name, else its words.
    pub fn shown(&self) -> &str {
        self.name.unwrap_or(self.command)
    }

    /// When its batch started (`batch.json`'s `started_at`).
    pub fn started_at(&self) -> Option<String> {
        let doc: serde_json::Value = serde_json::from_str(&self.outcome.document).ok()?;
        doc["started_at"].as_str().map(str::to_owned)
    }

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
