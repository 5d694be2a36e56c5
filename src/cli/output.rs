//! What a subcommand's execution hands back to `main` ([`Output`]): its stdout and exit code,
//! and how `--json` and a failed export shape them. It runs and draws nothing.
#![forbid(unsafe_code)]

use crate::record::artifacts::ArtifactError;
use crate::text::escape_controls;

/// What `main` prints on stdout and exits with.
pub struct Output {
    /// Text for stdout.
    pub stdout: String,
    /// Process exit code.
    pub exit_code: u8,
}

/// `--json` output: the document and a newline, or nothing.
pub(crate) fn json_line(wanted: bool, json: &str) -> String {
    if wanted {
        format!("{json}\n")
    } else {
        String::new()
    }
}

/// An export that could not be written: one line, exit 125; the records are already on disk
/// (with `-o`) and the JSON still goes to stdout.
pub(crate) fn exported_error(e: &ArtifactError) -> u8 {
    eprintln!("coldtrace: error: {}", escape_controls(&e.message));
    125
}
