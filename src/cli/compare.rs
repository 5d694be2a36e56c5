//! `coldtrace compare` (and `run` with a parameter scan): one checked plan per command, and the
//! comparison executed and shown. It parses and dispatches; measuring is the batch's.
#![forbid(unsafe_code)]

use crate::batch::{run_compare, Signals};
use crate::cli::args;
use crate::cli::check::{check_exports, check_run, out_dir};
use crate::cli::commands::{commands, CommandSpec, Given};
use crate::cli::help;
use crate::cli::options::{raw_flags, RawRun};
use crate::cli::output::{exported_error, json_line, Output, TableOut};
use crate::cli::parsed::Command;
use crate::cli::table::Sub;
use crate::cli::usage::{usage, UsageError};
use crate::plan::{ComparePlan, OutputMode};
use crate::view::progress::ProgressLine;
use crate::view::style::use_colour;
use crate::view::terminal::{self, Stream};
use std::ffi::OsString;

/// Parses `coldtrace compare [OPTIONS] 'CMD A' 'CMD B'…`.
pub fn parse_compare(args: Vec<OsString>) -> Result<Command, UsageError> {
    let read = args::read(Sub::Compare, args)?;
    if let Some(kind) = read.help {
        return Ok(Command::Help(help::help(Sub::Compare, kind)));
    }
    if read.version {
        return Ok(Command::Version);
    }
    let specs = commands(&read, Given::Strings(&read.operands))?;
    if specs.len() < 2 {
        return Err(usage(
            "compare needs at least two commands, each one argument (or a parameter scan), e.g. coldtrace compare -n 10 'python3.11 -c \"import json\"' 'python3.12 -c \"import json\"'",
        ));
    }
    comparison(raw_flags(&read, Sub::Compare), specs).map(|plan| Command::Compare(Box::new(plan)))
}

/// One plan per command, interleaved: `compare`'s commands, or the values of `run`'s scan.
pub(crate) fn comparison(raw: RawRun, specs: Vec<CommandSpec>) -> Result<ComparePlan, UsageError> {
    let shuffle_seed = shuffle_seed(raw.shuffle.as_deref())?;
    let out_dir = out_dir(raw.out.as_ref())?;
    let (json, quiet) = (raw.json, raw.quiet);
    let mut plans = Vec::with_capacity(specs.len());
    for (i, spec) in specs.into_iter().enumerate() {
        let shown = spec.name.clone().unwrap_or_else(|| spec.text.clone());
        let mut one = raw.for_command(spec);
        one.out = out_dir.as_ref().map(|d| {
            let dir = d.join("commands").join(format!("{i:02}"));
            ("--out".to_string(), dir.into_os_string())
        });
        one.notices = Vec::new();
        one.label = Some(match &raw.label {
            Some(label) => format!("{label}: {shown}"),
            None => shown,
        });
        // A comparison is always a batch: never inherit the terminal's stdin/stdout.
        if one.stdin.is_none() {
            one.stdin = Some(OsString::from("null"));
        }
        // A comparison is always a batch: its output goes to /dev/null unless told otherwise.
        if one.output.is_none() && !one.keep_output {
            one.output = Some("null".into());
        }
        let mut plan = check_run(one)?;
        plan.in_comparison = true;
        plans.push(plan);
    }
    let exports = check_exports(&raw.exports, out_dir.as_deref())?;
    let view = plans.first().map(|p| p.view.clone()).unwrap_or_default();
    Ok(ComparePlan {
        notices: raw.notices,
        view,
        plans,
        out_dir,
        shuffle_seed,
        json,
        quiet,
        exports,
    })
}

/// `--shuffle SEED`.
fn shuffle_seed(text: Option<&str>) -> Result<Option<u64>, UsageError> {
    text.map(|text| {
        text.parse::<u64>().map_err(|_| {
            usage(format!(
                "--shuffle: expected a whole number (the seed), got '{text}'"
            ))
        })
    })
    .transpose()
}

/// Runs the comparison and shows its table (unless quiet); `--json` goes to stdout.
pub fn execute_compare(plan: &ComparePlan) -> Result<Output, crate::batch::BatchError> {
    let signals = Signals::install()?;
    let on_terminal = plan.plans.iter().any(|p| p.output == OutputMode::Inherit);
    let mut progress = ProgressLine::new(plan.quiet, on_terminal);
    let outcome = run_compare(plan, &signals, &mut progress)?;
    let width = terminal::width(Stream::Stderr);
    let cannot_wait = outcome
        .batches
        .iter()
        .find_map(|b| b.wait_failure.as_deref());
    let stopped = outcome
        .batches
        .iter()
        .zip(&outcome.commands)
        .find_map(|(b, c)| {
            let shown = crate::text::escape_controls(c.name.as_deref().unwrap_or(&c.command));
            crate::view::table::failure_stop(b, &shown, "", use_colour(), width)
        });
    if let Some(message) = cannot_wait {
        // coldtrace's own failure, not a command's: one line, as every error of its own.
        eprintln!(
            "coldtrace: error: {}",
            crate::text::escape_controls(message)
        );
    } else if let Some(stopped) = stopped {
        // An error: said even with -q, instead of a comparison that stopped at its start.
        eprint!("{stopped}");
    } else if !plan.quiet {
        // The notices were said as they came, through the progress line.
        let out = TableOut::of(plan.json, plan.exports.on_stdout(), on_terminal);
        let table =
            crate::view::compare::compare_table(&outcome, &plan.view, out.colour(), out.width());
        out.show(&table);
    }
    // A runner-only build refused every export before the run (check_exports).
    let written = match cfg!(feature = "full") {
        true => crate::view::export::write_compare(&plan.exports, &outcome),
        false => Ok(()),
    };
    let exit_code = match written {
        Ok(()) => outcome.exit_code,
        Err(e) => exported_error(&e),
    };
    Ok(Output {
        stdout: json_line(plan.json, &outcome.json),
        exit_code,
    })
}
