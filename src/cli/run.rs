//! `coldtrace run`: its flags read (stage one, `options.rs`) and checked into a [`Plan`] (stage
//! two, `check.rs`), and the command executed and shown. It parses and dispatches; checking is
//! `check.rs`'s, measuring the batch's, drawing the view's.
#![forbid(unsafe_code)]

use crate::batch::{self, Signals};
use crate::cli::check::check_run;
use crate::cli::commands::{commands, Given};
use crate::cli::options::raw_flags;
use crate::cli::output::{exported_error, json_line, Output, TableOut};
use crate::cli::parsed::Command;
use crate::cli::table::Sub;
use crate::cli::usage::{usage, UsageError};
use crate::cli::{args, compare, help};
use crate::plan::{OutputMode, Plan};
use crate::text::escape_controls;
use crate::view::export;
use crate::view::progress::ProgressLine;
use crate::view::style::use_colour;
use crate::view::table;
use crate::view::terminal::{self, Stream};
use crate::view::units::shorten;
use std::ffi::OsString;

/// Parses `coldtrace run [OPTIONS] -- COMMAND [ARG...]`; with a parameter scan it is an
/// interleaved comparison of the scanned commands.
pub fn parse_run(args: Vec<OsString>) -> Result<Command, UsageError> {
    let read = args::read(Sub::Run, args)?;
    if let Some(kind) = read.help {
        return Ok(Command::Help(help::help(Sub::Run, kind)));
    }
    if read.version {
        return Ok(Command::Version);
    }
    if read.operands.is_empty() {
        return Err(usage(if read.separator {
            "no command after `--`; e.g. coldtrace run -n 5 -- python3 -c 'import json'"
        } else {
            "no command; e.g. coldtrace run -n 5 -- python3 -c 'import json'"
        }));
    }
    let one_string = one_command_string(&read);
    let given = match one_string {
        Some(_) => Given::Strings(&read.operands),
        None => Given::Words(&read.operands),
    };
    let mut specs = commands(&read, given)?;
    let mut raw = raw_flags(&read, Sub::Run);
    if let Some(text) = one_string {
        let words: Vec<String> = specs[0]
            .argv
            .iter()
            .map(|w| w.to_string_lossy().into_owned())
            .collect();
        raw.notices.push(escape_controls(&format!(
            "'{text}' is one argument: run as the words {}, split as `compare` splits a command (no shell: -S runs it through sh)",
            crate::text::quote(&words)
        )));
    }
    if specs.len() > 1 {
        // Each value of the scan is a command of a comparison.
        return compare::comparison(raw, specs).map(|plan| Command::Compare(Box::new(plan)));
    }
    if raw.shuffle.is_some() {
        return Err(usage(
            "--shuffle orders the commands of a comparison; one command has nothing to shuffle",
        ));
    }
    let spec = specs.remove(0);
    check_run(raw.for_command(spec)).map(|plan| Command::Run(Box::new(plan)))
}

/// The one command string of `run 'sleep 0.1'` (or `run -- 'sleep 0.1'`), hyperfine's habit:
/// a single operand with a space in it that names no file, without `--shell` (which takes it
/// whole). `compare` splits such a string into words, and so does `run`.
fn one_command_string(read: &args::Read) -> Option<String> {
    let [only] = read.operands.as_slice() else {
        return None;
    };
    let text = only.to_string_lossy();
    // A space, as typed in `'sleep 0.1'`; a name with a newline or a tab is a name.
    let blank = text.trim().contains(' ');
    let shell = read.text("--shell").is_some_and(|s| s != "none");
    (blank && !shell && !std::path::Path::new(only).exists()).then(|| text.into_owned())
}

/// Runs the plan and shows its table (unless quiet) where [`TableOut`] says; `--json` goes to
/// stdout.
pub fn execute_run(plan: &Plan) -> Result<Output, crate::batch::BatchError> {
    let signals = Signals::install()?;
    let on_terminal = plan.output == OutputMode::Inherit;
    let mut progress = ProgressLine::new(plan.quiet, on_terminal);
    let outcome = batch::run(plan, &signals, &mut progress)?;
    // As the user wrote it (with --shell, the string the shell runs).
    let command = escape_controls(&plan.text);
    let label = |max: usize| {
        plan.label.as_deref().map_or(String::new(), |l| {
            format!(" [{}]", shorten(&escape_controls(l), max))
        })
    };
    let errors = terminal::width(Stream::Stderr);
    let stopped = table::failure_stop(&outcome, &command, &label(40), use_colour(), errors);
    if let (Some(message), 0) = (&outcome.start_failure, outcome.counts.counted) {
        // Nothing ran: one line, like a PATH lookup failure, not an empty table.
        eprintln!("coldtrace: error: {}", escape_controls(message));
    } else if let Some(message) = &outcome.wait_failure {
        // coldtrace's own failure, not the command's: one line, as every error of its own.
        eprintln!("coldtrace: error: {}", escape_controls(message));
    } else if let Some(stopped) = stopped {
        // An error, like a command that cannot start: said even with -q.
        eprint!("{stopped}");
    } else if !plan.quiet {
        // The notices were said as they came, through the progress line.
        let out = TableOut::of(plan.json, plan.exports.on_stdout(), on_terminal);
        let width = out.width();
        let tail = format!(" · {}", escape_controls(&plan.output.shown()));
        let tail = format!("{}{tail}", label(40));
        let lead = format!("coldtrace: {} of ", runs_done(plan, &outcome));
        let title = table::heading(&lead, &command, &tail, width);
        let told = table::Told::of(&outcome, &plan.view, plan.explain);
        out.show(&table::table(
            &outcome,
            &title,
            &plan.view,
            told,
            out.colour(),
            width,
        ));
    }
    let name = plan.name.as_deref().map(escape_controls);
    // A runner-only build refused every export before the run (check_exports).
    let written = match cfg!(feature = "full") {
        true => export::write_batch(&plan.exports, &outcome, &command, name.as_deref()),
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

/// `1 run`, `12 runs`, `1 counted run` (a batch of one), `no counted run`; with rejected runs
/// every run made and how many were rejected (`6 runs (1 rejected)`: `-n 6` said "5 runs").
fn runs_done(plan: &Plan, outcome: &batch::BatchOutcome) -> String {
    let counts = &outcome.counts;
    if counts.rejected > 0 && !plan.is_single_run() {
        let made = counts.counted + counts.rejected;
        let plural = if made == 1 { "" } else { "s" };
        return format!("{made} run{plural} ({} rejected)", counts.rejected);
    }
    match counts.counted {
        _ if plan.is_single_run() => "1 run".to_string(),
        0 => "no counted run".to_string(),
        1 => "1 counted run".to_string(),
        n => format!("{n} runs"),
    }
}
