//! `coldtrace compare`: its commands split into words and checked into one plan each, and the
//! comparison executed and shown. It parses and dispatches; measuring is the batch's.
#![forbid(unsafe_code)]

use crate::batch::{run_compare, Signals};
use crate::cli::args;
use crate::cli::options::{raw_flags, RawRun};
use crate::cli::run::check_run;
use crate::cli::table::Sub;
use crate::cli::{help, json_line, usage, Command, Output, UsageError};
use crate::plan::ComparePlan;
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
    let shuffle_seed = read
        .text("--shuffle")
        .map(|text| {
            text.parse::<u64>().map_err(|_| {
                usage(format!(
                    "--shuffle: expected a whole number (the seed), got '{text}'"
                ))
            })
        })
        .transpose()?;
    let raw = raw_flags(&read);
    let commands: Vec<String> = read
        .operands
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    if commands.len() < 2 {
        return Err(usage(
            "compare needs at least two commands, each one argument, e.g. coldtrace compare -n 10 'python3.11 -c \"import json\"' 'python3.12 -c \"import json\"'",
        ));
    }
    let out_dir = crate::cli::run::out_dir(raw.out.as_ref())?;
    let (json, quiet) = (raw.json, raw.quiet);
    let mut plans = Vec::with_capacity(commands.len());
    for (i, text) in commands.iter().enumerate() {
        let words =
            crate::text::split(text).map_err(|e| usage(format!("command {}: {e}", i + 1)))?;
        if words.is_empty() {
            return Err(usage(format!(
                "command {} is empty; give each command as one non-empty argument",
                i + 1
            )));
        }
        let mut one = RawRun {
            command: words.into_iter().map(OsString::from).collect(),
            ..raw.clone_flags()
        };
        one.out = out_dir.as_ref().map(|d| {
            let dir = d.join("commands").join(format!("{i:02}"));
            ("--out".to_string(), dir.into_os_string())
        });
        one.notices = Vec::new();
        one.label = Some(match &raw.label {
            Some(label) => format!("{label}: {text}"),
            None => text.clone(),
        });
        // A comparison is always a batch: never inherit the terminal's stdin/stdout.
        if one.stdin.is_none() {
            one.stdin = Some(OsString::from("null"));
        }
        if one.output.is_none() && out_dir.is_none() {
            one.output = Some("null".into());
        }
        let mut plan = check_run(one)?;
        plan.in_comparison = true;
        plans.push(plan);
    }
    Ok(Command::Compare(Box::new(ComparePlan {
        notices: raw.notices,
        plans,
        out_dir,
        shuffle_seed,
        json,
        quiet,
    })))
}

/// Runs the comparison and shows its table (unless quiet); `--json` goes to stdout.
pub fn execute_compare(plan: &ComparePlan) -> Result<Output, crate::batch::BatchError> {
    let signals = Signals::install()?;
    let mut progress = ProgressLine::new(plan.quiet);
    let outcome = run_compare(plan, &signals, &mut progress)?;
    if !plan.quiet {
        let width = terminal::width(Stream::Stderr);
        let mut said: Vec<&str> = Vec::new();
        for notice in outcome.batches.iter().flat_map(|b| b.notices.iter()) {
            if !said.contains(&notice.as_str()) {
                let text = crate::text::escape_controls(notice);
                eprint!("{}", crate::view::progress::notice_text(&text, width));
                said.push(notice);
            }
        }
        eprint!(
            "{}",
            crate::view::compare::compare_table(&outcome, use_colour(), width)
        );
    }
    Ok(Output {
        stdout: json_line(plan.json, &outcome.json),
        exit_code: outcome.exit_code,
    })
}
