//! `coldtrace report DIR…`: its arguments, and the batches read back and shown as a table,
//! Markdown or JSON. It dispatches; reading is the record reader's, drawing the view's.
#![forbid(unsafe_code)]

use crate::batch::BatchError;
use crate::cli::args;
use crate::cli::table::Sub;
use crate::cli::{help, usage, Command, Output, UsageError};
use std::ffi::OsString;
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
    let read = args::read(Sub::Report, args)?;
    if let Some(kind) = read.help {
        return Ok(Command::Help(help::help(Sub::Report, kind)));
    }
    if read.version {
        return Ok(Command::Version);
    }
    let json = read.has("--json");
    let markdown = read.has("--markdown");
    if json && markdown {
        return Err(usage("report: choose one of --json and --markdown"));
    }
    let dirs: Vec<PathBuf> = read.operands.iter().map(PathBuf::from).collect();
    if dirs.iter().any(|d| d.as_os_str().is_empty()) {
        return Err(usage(
            "report: a batch directory path is empty (''); give a directory coldtrace wrote",
        ));
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
    let rows = crate::record::reader::read_all(&args.dirs).map_err(|e| BatchError::own(e.0))?;
    let stdout = if args.json {
        format!(
            "{}\n",
            serde_json::to_string_pretty(&rows).unwrap_or_default()
        )
    } else if args.markdown {
        crate::view::report::render_markdown(&rows)
    } else {
        // The notes are about reading, not the batches: stderr, so that the table can be piped.
        for note in crate::view::report::notes(&rows) {
            eprintln!("coldtrace: note: {note}");
        }
        let width = crate::view::terminal::width(crate::view::terminal::Stream::Stdout);
        crate::view::report::render_table(&rows, width)
    };
    Ok(Output {
        stdout,
        exit_code: 0,
    })
}
