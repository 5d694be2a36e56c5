//! `coldtrace context [--json]`: its arguments, and the machine's context block shown.
//! It dispatches; reading the machine is measure's, drawing it the view's.
#![forbid(unsafe_code)]

use crate::cli::args;
use crate::cli::help;
use crate::cli::output::Output;
use crate::cli::parsed::Command;
use crate::cli::table::Sub;
use crate::cli::usage::{usage, UsageError};
use crate::record::context::ContextDocument;
use std::ffi::OsString;

/// Parses `coldtrace context [--json]`.
pub fn parse_context(args: Vec<OsString>) -> Result<Command, UsageError> {
    let read = args::read(Sub::Context, args)?;
    if let Some(kind) = read.help {
        return Ok(Command::Help(help::help(Sub::Context, kind)));
    }
    if read.version {
        return Ok(Command::Version);
    }
    if let Some(extra) = read.operands.first() {
        return Err(usage(format!(
            "context takes only --json, got '{}'",
            extra.to_string_lossy()
        )));
    }
    Ok(Command::Context {
        json: read.has("--json"),
    })
}

/// Reads the context and renders it.
pub fn execute_context(json: bool) -> Output {
    let context = ContextDocument::read();
    let stdout = if json {
        format!(
            "{}\n",
            serde_json::to_string_pretty(&context).unwrap_or_default()
        )
    } else {
        crate::view::context::render_context(
            &context,
            crate::view::terminal::width(crate::view::terminal::Stream::Stdout),
        )
    };
    Output {
        stdout,
        exit_code: 0,
    }
}
