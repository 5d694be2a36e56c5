//! `coldtrace report DIR…`: its arguments, and the batches read back and shown as a table,
//! Markdown or JSON. It dispatches; reading is the record reader's, drawing the view's.
#![forbid(unsafe_code)]

use crate::batch::BatchError;
use crate::cli::options::wants_help;
use crate::cli::{help, usage, Command, Output, UsageError};
use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

/// Arguments of `coldtrace report`.
#[derive(Debug, Clone)]
pub struct ReportArgs {
    /// Batch directories, in the order given.
    pub dirs: Vec<PathBuf>,
    /// Machine-readable output.
    pub json: bool,
    /// A Markdown table.
    pub markdown: bool,
}

/// Parses `coldtrace report [--json|--markdown] DIR...`.
pub fn parse_report(args: Vec<OsString>) -> Result<Command, UsageError> {
    if wants_help(&args) {
        return Ok(Command::Help(help::REPORT_HELP));
    }
    let mut p = pico_args::Arguments::from_vec(args);
    let json = p.contains("--json");
    let markdown = p.contains("--markdown");
    if json && markdown {
        return Err(usage("report: choose one of --json and --markdown"));
    }
    let mut dirs = Vec::new();
    for arg in p.finish() {
        if arg.as_bytes().starts_with(b"-") {
            return Err(usage(format!(
                "unknown option '{}' for report; see `coldtrace report --help`",
                arg.to_string_lossy()
            )));
        }
        dirs.push(PathBuf::from(arg));
    }
    if dirs.is_empty() {
        return Err(usage(
            "report: give at least one batch directory, e.g. coldtrace report cold/ warm/",
        ));
    }
    Ok(Command::Report(ReportArgs {
        dirs,
        json,
        markdown,
    }))
}

/// Reads the batches and renders them.
pub fn execute_report(args: &ReportArgs) -> Result<Output, BatchError> {
    let rows = crate::record::reader::read_all(&args.dirs).map_err(|e| BatchError {
        message: e.0,
        exit_code: 125,
    })?;
    let stdout = if args.json {
        format!(
            "{}\n",
            serde_json::to_string_pretty(&rows).unwrap_or_default()
        )
    } else if args.markdown {
        crate::view::report::render_markdown(&rows)
    } else {
        crate::view::report::render_table(&rows)
    };
    Ok(Output {
        stdout,
        exit_code: 0,
    })
}
