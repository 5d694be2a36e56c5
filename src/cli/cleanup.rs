//! `coldtrace cleanup [--dry-run] [--cgroup DIR]`: its arguments, and what `crate::cleanup`
//! found and did, printed; the exit code says whether anything of coldtrace's was left.
#![forbid(unsafe_code)]

use crate::cleanup::Asked;
use crate::cli::args;
use crate::cli::help;
use crate::cli::output::Output;
use crate::cli::parsed::Command;
use crate::cli::table::Sub;
use crate::cli::usage::{usage, UsageError};
use std::ffi::OsString;
use std::path::PathBuf;

/// Parses `coldtrace cleanup [--dry-run] [--cgroup DIR]`.
pub fn parse_cleanup(args: Vec<OsString>) -> Result<Command, UsageError> {
    let read = args::read(Sub::Cleanup, args)?;
    if let Some(kind) = read.help {
        return Ok(Command::Help(help::help(Sub::Cleanup, kind)));
    }
    if read.version {
        return Ok(Command::Version);
    }
    if let Some(extra) = read.operands.first() {
        return Err(usage(format!(
            "cleanup takes no operand, got '{}'; it finds what coldtrace left by itself \
             (--cgroup DIR narrows where it looks for groups)",
            extra.to_string_lossy()
        )));
    }
    let cgroup = match read
        .last("--cgroup")
        .and_then(|o| o.values.first().cloned())
    {
        Some(dir) if dir.is_empty() => {
            return Err(usage("--cgroup: expected a cgroup directory, got ''"))
        }
        Some(dir) => Some(PathBuf::from(dir)),
        None => None,
    };
    Ok(Command::Cleanup(Asked {
        dry_run: read.has("--dry-run"),
        cgroup,
    }))
}

/// Cleans up, prints a line for each thing and the summary; one error line and exit 1 when
/// something of coldtrace's could not be removed.
pub fn execute_cleanup(asked: &Asked) -> Output {
    let things = crate::cleanup::cleanup(asked);
    let width = crate::view::terminal::width(crate::view::terminal::Stream::Stdout);
    let stdout = crate::cleanup::said::lines(&things, asked.dry_run, width);
    let exit_code = match crate::cleanup::said::failure(&things) {
        Some(line) => {
            eprintln!("coldtrace: error: {}", crate::text::escape_controls(&line));
            1
        }
        None => 0,
    };
    Output { stdout, exit_code }
}
