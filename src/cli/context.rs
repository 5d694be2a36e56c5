//! `coldtrace context [--json]`: its arguments, and the machine's context block shown.
//! It dispatches; reading the machine is measure's, drawing it the view's.
#![forbid(unsafe_code)]

use crate::cli::options::wants_help;
use crate::cli::{help, usage, Command, Output, UsageError};
use crate::record::context::ContextDocument;
use std::ffi::OsString;

/// Parses `coldtrace context [--json]`.
pub fn parse_context(args: Vec<OsString>) -> Result<Command, UsageError> {
    if wants_help(&args) {
        return Ok(Command::Help(help::CONTEXT_HELP));
    }
    let mut p = pico_args::Arguments::from_vec(args);
    let json = p.contains("--json");
    if let Some(extra) = p.finish().first() {
        return Err(usage(format!(
            "context takes only --json, got '{}'",
            extra.to_string_lossy()
        )));
    }
    Ok(Command::Context { json })
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
        crate::view::context::render_context(&context)
    };
    Output {
        stdout,
        exit_code: 0,
    }
}
