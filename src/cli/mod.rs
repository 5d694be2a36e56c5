//! The command line: each subcommand's arguments parsed in two stages (raw flags, then a
//! checked plan) and executed. Only `main` uses this module; nothing here is used below it.
//!
//! Every usage error is one line that names the flag and what is allowed, and maps to exit
//! code 125.
#![forbid(unsafe_code)]

pub mod args;
mod boot;
mod check;
mod cleanup;
mod commands;
mod compare;
mod completions;
mod context;
pub mod help;
mod man;
mod options;
mod output;
mod parsed;
mod report;
mod run;
mod scan;
pub mod table;
pub mod time;
mod usage;
mod version;

pub use boot::BootAction;
pub use options::{MAX_RUNS, MAX_TIMEOUT_S};
pub use output::Output;
pub use parsed::{Command, ReportArgs};
pub use usage::UsageError;

use crate::batch::BatchError;
use std::ffi::OsString;
use usage::usage;

/// Parses the arguments of a coldtrace invoked as `program` (argv\[0\]): installed or linked
/// as `time`, it is `coldtrace time` (a drop-in for `/usr/bin/time`, as GNU time is called).
pub fn parse_invoked(
    program: Option<&std::ffi::OsStr>,
    args: Vec<OsString>,
) -> Result<Command, UsageError> {
    let name = program.and_then(|p| std::path::Path::new(p).file_name());
    if name.is_some_and(|n| n == "time") {
        return time::parse_time(args, std::env::var_os("TIME"));
    }
    parse(args)
}

/// Parses the whole argument list (without argv\[0\]).
pub fn parse(args: Vec<OsString>) -> Result<Command, UsageError> {
    let Some(first) = args.first() else {
        return Err(usage(
            "no subcommand; try `coldtrace run -- COMMAND` or `coldtrace --help`",
        ));
    };
    let first = first.to_string_lossy().into_owned();
    let rest = args[1..].to_vec();
    match first.as_str() {
        "-h" => Ok(Command::Help(help::top_short_help())),
        "--help" => Ok(Command::Help(help::top_help())),
        "help" => help_for(&rest),
        "-V" | "--version" => Ok(Command::Version),
        "run" => run::parse_run(rest),
        "boot" => boot::parse_boot(rest),
        "cleanup" => cleanup::parse_cleanup(rest),
        "compare" => compare::parse_compare(rest),
        "report" | "man" | "completions" if !cfg!(feature = "full") => {
            Err(runner_only(&format!("`coldtrace {first}`")))
        }
        "report" => report::parse_report(rest),
        "context" => context::parse_context(rest),
        "time" => time::parse_time(rest, std::env::var_os("TIME")),
        "man" => man::parse_man(rest),
        "completions" => completions::parse_completions(rest),
        other if other.starts_with('-') => Err(args::option_before_subcommand(other)),
        other => Err(args::unknown_subcommand(other)),
    }
}

/// What a runner-only build (`--no-default-features`) leaves out: `report`, `man`,
/// `completions` and the `--export-*` files. Its code is then unreachable (`cfg!` is a
/// constant), so the linker drops it.
pub(crate) fn runner_only(what: &str) -> UsageError {
    usage(format!(
        "{what} is not in this runner-only build (it records and runs only); use a full build \
         (the default features) to read, draw or export the records it writes"
    ))
}

/// `coldtrace help [SUBCOMMAND]`.
fn help_for(rest: &[OsString]) -> Result<Command, UsageError> {
    let Some(name) = rest.first() else {
        return Ok(Command::Help(help::top_help()));
    };
    let name = name.to_string_lossy();
    table::subcommands()
        .find(|s| s.name == name)
        .map(|s| Command::Help(help::help(s.sub, args::HelpKind::Long)))
        .ok_or_else(|| args::unknown_subcommand(&name))
}

/// Runs a parsed command.
pub fn execute(command: Command) -> Result<Output, BatchError> {
    crate::batch::hold_file_size_signal();
    match command {
        Command::Help(text) => Ok(Output {
            stdout: text.to_string(),
            exit_code: 0,
        }),
        Command::Version => Ok(Output {
            stdout: version::line(),
            exit_code: 0,
        }),
        Command::Run(plan) => {
            say_notices(&plan.notices, plan.quiet);
            run::execute_run(&plan)
        }
        Command::Compare(plan) => {
            say_notices(&plan.notices, plan.quiet);
            compare::execute_compare(&plan)
        }
        Command::Report(_) if !cfg!(feature = "full") => {
            Err(BatchError::own(runner_only("`coldtrace report`").0))
        }
        Command::Report(args) => report::execute_report(&args),
        Command::Time(args) => time::execute_time(&args),
        Command::Boot(action) => Ok(boot::execute_boot(&action)),
        Command::Context { json } => Ok(context::execute_context(json)),
        Command::Cleanup(asked) => Ok(cleanup::execute_cleanup(&asked)),
    }
}

/// What to say once, before anything runs, about how the flags were read.
fn say_notices(notices: &[String], quiet: bool) {
    if !quiet {
        let width = crate::view::terminal::width(crate::view::terminal::Stream::Stderr);
        for notice in notices {
            eprint!("{}", crate::view::progress::notice_text(notice, width));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::Plan;
    use crate::plan::{ColdWhen, OutputMode, StdinMode};
    use std::path::PathBuf;

    fn args(list: &[&str]) -> Vec<OsString> {
        list.iter().map(OsString::from).collect()
    }

    fn plan(list: &[&str]) -> Plan {
        match parse(args(list)) {
            Ok(Command::Run(plan)) => *plan,
            other => panic!("expected a plan, got {other:?}"),
        }
    }

    fn error(list: &[&str]) -> String {
        match parse(args(list)) {
            Err(e) => e.0,
            other => panic!("expected an error, got {other:?}"),
        }
    }

    #[test]
    fn defaults_follow_the_single_run_and_batch_rules() {
        // Without -n the count is chosen by time (hyperfine's rule); -n 1 is `time`'s run.
        let by_time = plan(&["run", "--", "true"]);
        assert_eq!(
            (
                by_time.bounds.map(|b| b.min),
                by_time.output.clone(),
                by_time.stdin.clone()
            ),
            (Some(10), OutputMode::Null, StdinMode::Null)
        );
        let single = plan(&["run", "-n", "1", "--", "true"]);
        assert!(single.is_single_run());
        assert_eq!(
            (single.runs, single.output.clone(), single.stdin.clone()),
            (1, OutputMode::Inherit, StdinMode::Inherit)
        );
        let batch = plan(&["run", "-n", "5", "--", "true"]);
        assert_eq!(
            (batch.output.clone(), batch.stdin.clone()),
            (OutputMode::Null, StdinMode::Null)
        );
        // -o keeps records only: what the command writes to goes where it goes without it.
        let out = plan(&["run", "-n", "5", "-o", "d", "--", "true"]);
        assert_eq!(out.output, OutputMode::Null);
        let single = plan(&["run", "-n", "1", "-o", "d", "--", "true"]);
        assert_eq!(single.output, OutputMode::Inherit);
        let kept = plan(&["run", "-n", "5", "-o", "d", "--keep-output", "--", "true"]);
        assert_eq!(kept.output, OutputMode::Keep);
        for (given, mode) in [
            ("pipe", OutputMode::Pipe),
            ("inherit", OutputMode::Inherit),
            ("out.txt", OutputMode::File("out.txt".into())),
        ] {
            assert_eq!(plan(&["run", "--output", given, "--", "true"]).output, mode);
        }
        assert!(error(&["run", "--keep-output", "--", "x"]).contains("needs -o DIR"));
        assert!(error(&[
            "run",
            "-o",
            "d",
            "--keep-output",
            "--output",
            "pipe",
            "--",
            "x"
        ])
        .contains("choose one"));
        assert!(error(&["run", "--output", "file", "--", "x"]).contains("use --keep-output"));
        assert!(error(&["run", "--output", "/", "--", "x"]).contains("is a directory"));
        assert!(error(&["run", "--output", "/no/such/dir/f", "--", "x"])
            .contains("its directory does not exist"));
        assert_eq!(
            plan(&["run", "--timeout", "1.5", "--", "x"]).timeout_ns,
            Some(1_500_000_000)
        );
    }

    #[test]
    fn command_keeps_its_own_flags() {
        let p = plan(&[
            "run",
            "-n",
            "2",
            "--",
            "python3",
            "-c",
            "import json",
            "--",
            "-n",
        ]);
        assert_eq!(p.argv, args(&["python3", "-c", "import json", "--", "-n"]));
        assert_eq!(p.runs, 2);
    }

    #[test]
    fn bad_values_name_the_flag() {
        assert!(
            error(&["run", "-n", "0", "--", "x"]).starts_with("-n/--runs: expected a whole number")
        );
        assert!(error(&["run", "--runs", "abc", "--", "x"]).contains("got 'abc'"));
        assert!(error(&["run", "-n", "-1", "--", "x"]).contains("got '-1'"));
        assert!(error(&["run", "-n", "99999999999999999999", "--", "x"]).contains("-n/--runs"));
        assert!(error(&["run", "--timeout", "-1", "--", "x"]).starts_with("--timeout:"));
        assert!(error(&["run", "--timeout", "nan", "--", "x"]).starts_with("--timeout:"));
        assert!(error(&["run", "--bogus", "--", "x"]).contains("unknown option '--bogus'"));
        assert!(error(&["run", "--"]).starts_with("no command after `--`"));
        assert!(error(&["run", "true", "x"]).contains("put the command after `--`"));
        assert!(error(&["run", "--label"]).contains("needs a value"));
        assert!(error(&["run", "--", ""]).contains("empty string"));
        assert!(error(&["frobnicate"]).contains("unknown subcommand"));
    }

    #[test]
    fn echoed_values_stay_on_one_line() {
        assert_eq!(
            error(&["run", "--runs", "1\n2", "--", "x"]),
            "-n/--runs: expected a whole number from 1 to 10000000, got '1\\n2'"
        );
        assert_eq!(
            error(&["run", "-n", "a\nb", "--", "x"]),
            "-n a\\nb: coldtrace's -n is the number of runs (--runs, e.g. -n 10); to name a command as hyperfine's -n NAME does, use --command-name 'a\\nb'"
        );
        assert!(error(&["frob\t\u{1b}[2J"]).contains("'frob\\t\\u{1b}[2J'"));
    }

    #[test]
    fn help_and_version() {
        let help_of = |list: &[&str]| match parse(args(list)) {
            Ok(Command::Help(text)) => text,
            other => panic!("expected help, got {other:?}"),
        };
        assert_eq!(help_of(&["--help"]), help::top_help());
        assert_eq!(help_of(&["-h"]), help::top_short_help());
        assert_eq!(
            help_of(&["run", "--help"]),
            help::help(table::Sub::Run, args::HelpKind::Long)
        );
        assert_eq!(
            help_of(&["run", "-h"]),
            help::help(table::Sub::Run, args::HelpKind::Short)
        );
        assert_eq!(
            help_of(&["help", "compare"]),
            help::help(table::Sub::Compare, args::HelpKind::Long)
        );
        assert!(matches!(parse(args(&["--version"])), Ok(Command::Version)));
        assert!(matches!(parse(args(&["run", "-V"])), Ok(Command::Version)));
    }

    #[test]
    fn evicted_paths_are_watched() {
        let p = plan(&[
            "run", "--evict", "/a", "--watch", "/b", "--watch", "/a", "--", "x",
        ]);
        assert_eq!(p.cold.watch, vec![PathBuf::from("/a"), PathBuf::from("/b")]);
        assert_eq!(p.cold.when, Some(ColdWhen::EveryRun));
    }
}
