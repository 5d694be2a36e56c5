//! The command line: pico-args in two stages — raw flags, then a checked [`Plan`].
//!
//! Every error is one line that names the flag and what is allowed, and maps to exit code 125.
#![forbid(unsafe_code)]

use crate::plan::{ColdPlan, ColdWhen, ComparePlan, OutputMode, Plan, StdinMode};
use std::ffi::{OsStr, OsString};
use std::fmt;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

/// The largest `-n` / `--warmup` accepted: far beyond any real batch, far below overflow.
pub const MAX_RUNS: u32 = 10_000_000;
/// The largest `--timeout` accepted, in seconds (about 11.5 days).
pub const MAX_TIMEOUT_S: f64 = 1_000_000.0;

/// What the user asked for.
#[derive(Debug)]
pub enum Command {
    /// `coldtrace run …`
    Run(Box<Plan>),
    /// `coldtrace compare …`
    Compare(Box<ComparePlan>),
    /// `coldtrace report DIR…`
    Report(ReportArgs),
    /// `coldtrace context`
    Context {
        /// `--json`
        json: bool,
    },
    /// `--help` text to print (top level or a subcommand's).
    Help(&'static str),
    /// `--version`.
    Version,
}

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

/// A usage error: one line, exit code 125.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageError(pub String);

impl fmt::Display for UsageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Every usage error is made here, and stays one line whatever the user typed: control
/// characters in the message (a newline, a tab, an escape inside an echoed argument) are
/// written as Rust escapes (`\n`, `\u{1b}`), so a value quoted back cannot break the line or
/// drive the terminal.
fn usage(message: impl Into<String>) -> UsageError {
    UsageError(crate::words::escape_controls(&message.into()))
}

/// The top-level help.
pub const HELP: &str = "\
coldtrace — run a command and record exactly how it ran

Usage:
  coldtrace run [OPTIONS] -- COMMAND [ARG...]   measure COMMAND (see `coldtrace run --help`)
  coldtrace compare [OPTIONS] 'CMD A' 'CMD B'…  measure commands interleaved (A B A B …)
  coldtrace report [--json|--markdown] DIR...   compare batch directories
  coldtrace context [--json]                    print this machine's context block
  coldtrace --help | --version

Every run is measured through the kernel's own accounting (wait4's rusage for that run alone),
timed on CLOCK_MONOTONIC from just before the spawn to the moment its exit is seen.

Exit codes (GNU time's conventions):
  single run   the command's exit code; 128+N if it died of signal N
  batch        0 every counted run succeeded; 1 a run was rejected (or --prepare failed)
  127 command not found   126 found but not executable   125 coldtrace's own error
  130 interrupted by SIGINT (128+N for signal N)
";

/// `coldtrace run --help`.
pub const RUN_HELP: &str = "\
coldtrace run — measure a command, once or as a batch

Usage: coldtrace run [OPTIONS] -- COMMAND [ARG...]

No shell is involved: COMMAND is looked up in PATH and executed directly.

Options:
  -n, --runs N            counted runs (default 1)
      --warmup N          runs before the counted ones, recorded but never counted.
                          Warm-ups destroy the cold first run: the first counted run
                          is then warm too.
  -o, --out DIR           batch directory (must not exist or be empty): runs.jsonl,
                          runs/NNN/{stdout,stderr}, batch.json
      --json              print the record (one run) or the batch summary as JSON on stdout
                          (a single run inherits stdout: add --output null to keep them apart)
      --output MODE       child's stdout/stderr: inherit | null | file
                          (default: inherit for one run without --out, file with --out,
                          null for a batch without --out)
      --stdin MODE        null | inherit | FILE (default: inherit for one run, else null)
      --timeout SECONDS   per-run limit: SIGTERM, then SIGKILL after --kill-after
      --kill-after SECONDS  grace period after SIGTERM (default 2)
      --prepare CMD       run `/bin/sh -c CMD` before every run, not measured;
                          if it fails the batch stops
      --ignore-failure    count failed runs too (they are marked failed)
      --label TEXT        stored in every record and shown by `report`
  -q, --quiet             no table, progress or notices on stderr
      --minimal           only wall time, rusage and the floor: skip the /proc reads around
                          each run (system-wide deltas, the child's io/schedstat, boot ID
                          and uptime per run), which cost ~100 µs per run

Cold state (before every counted run, or the first only):
      --evict PATH        drop the page cache of every file under PATH (repeatable;
                          no root needed; PATH is watched too)
      --drop-caches       sync and drop the whole page cache, dentries and inodes (root)
      --cold-first-only   evict / drop before the first counted run only
      --watch PATH        measure page-cache residency of files under PATH before and
                          after every run (repeatable)

Kernel counters (perf_event_open, counted from the command's exec to its exit, its threads
and descendants included; nothing coldtrace does before the exec is counted):
      --counters          task-clock, page-faults, context-switches, cpu-migrations, and the
                          hardware events instructions, cycles, cache-references,
                          cache-misses, branch-misses where the CPU exposes them
      --events LIST       choose them, comma-separated (implies --counters)

Exit codes: a single run exits with the command's code (128+N for signal N);
a batch exits 0 when every counted run succeeded, 1 when any was rejected;
127 not found, 126 not executable, 125 coldtrace's own error, 130 interrupted.
";

/// `coldtrace compare --help`.
pub const COMPARE_HELP: &str = "\
coldtrace compare — several commands in one batch, interleaved

Usage: coldtrace compare [OPTIONS] [--] 'COMMAND A' 'COMMAND B' ...

Each COMMAND is one argument, split into words as a shell would (quotes and backslashes;
no shell is run, so no variables or globs). Runs are interleaved round-robin — A B A B … —
so that drift of the machine lands on every command alike; --shuffle SEED randomises the
order within each round (seeded, reproducible). Each command keeps its own first run and
its own records, artifacts and summary under DIR/commands/NN/; DIR/batch.json adds, for
every metric, each command's warm median divided by the first command's, with a 95%
bootstrap confidence interval (percentile method, 2000 resamples of each command's warm
runs), and a verdict in words only when the interval excludes 1.

Options: every option of `coldtrace run` (-n, --warmup, -o, --json, --output, --stdin,
--timeout, --kill-after, --prepare, --ignore-failure, --label, -q, --evict, --drop-caches,
--cold-first-only, --watch) applies to each command's runs as it does to a single
command's; plus
      --shuffle SEED      random order within each round, from SEED (a whole number)
";

/// `coldtrace report --help`.
pub const REPORT_HELP: &str = "\
coldtrace report — one row per batch directory

Usage: coldtrace report [--json | --markdown] DIR...

Reads complete, interrupted or truncated batches (a cut last line of runs.jsonl is
skipped with a notice). Flags the first batch on each boot and kernel changes.
";

/// `coldtrace context --help`.
pub const CONTEXT_HELP: &str = "\
coldtrace context — the machine's context block

Usage: coldtrace context [--json]

Kernel, boot ID, uptime, CPU, memory, load, and which measurements are available here
(cachestat, PSI, drop_caches permission, task I/O accounting, clear_refs).
";

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
        "-h" | "--help" | "help" => Ok(Command::Help(HELP)),
        "-V" | "--version" => Ok(Command::Version),
        "run" => parse_run(rest),
        "compare" => parse_compare(rest),
        "report" => parse_report(rest),
        "context" => parse_context(rest),
        other if other.starts_with('-') => Err(usage(format!(
            "unknown option '{other}' before the subcommand; see `coldtrace --help`"
        ))),
        other => Err(usage(format!(
            "unknown subcommand '{other}'; expected run, report or context (see `coldtrace --help`)"
        ))),
    }
}

fn wants_help(args: &[OsString]) -> bool {
    args.iter().any(|a| a == "-h" || a == "--help")
}

/// Stage one of `run`: the raw flags, as given.
#[derive(Default, Clone)]
struct RawRun {
    runs: Option<String>,
    warmup: Option<String>,
    out: Option<OsString>,
    json: bool,
    output: Option<String>,
    stdin: Option<OsString>,
    timeout: Option<String>,
    kill_after: Option<String>,
    prepare: Option<String>,
    ignore_failure: bool,
    label: Option<String>,
    quiet: bool,
    evict: Vec<OsString>,
    drop_caches: bool,
    cold_first_only: bool,
    watch: Vec<OsString>,
    counters: bool,
    events: Option<String>,
    minimal: bool,
    command: Vec<OsString>,
}

fn parse_run(args: Vec<OsString>) -> Result<Command, UsageError> {
    let split = args.iter().position(|a| a == "--");
    let (flags, command) = match split {
        Some(i) => (args[..i].to_vec(), args[i + 1..].to_vec()),
        None => (args, Vec::new()),
    };
    if wants_help(&flags) {
        return Ok(Command::Help(RUN_HELP));
    }
    let raw = raw_run(flags, command, split.is_some())?;
    check_run(raw).map(|plan| Command::Run(Box::new(plan)))
}

fn missing_value(e: &pico_args::Error) -> Option<String> {
    match e {
        pico_args::Error::OptionWithoutAValue(flag) => Some(format!(
            "option {flag} needs a value; see `coldtrace run --help`"
        )),
        _ => None,
    }
}

fn pico(e: pico_args::Error) -> UsageError {
    usage(missing_value(&e).unwrap_or_else(|| format!("{e}; see `coldtrace run --help`")))
}

fn raw_run(
    flags: Vec<OsString>,
    command: Vec<OsString>,
    had_separator: bool,
) -> Result<RawRun, UsageError> {
    let mut p = pico_args::Arguments::from_vec(flags);
    let mut raw = raw_flags(&mut p)?;
    let leftover = p.finish();
    if let Some(first) = leftover.first() {
        let text = first.to_string_lossy();
        return Err(if text.starts_with('-') {
            usage(format!(
                "unknown option '{text}'; see `coldtrace run --help`"
            ))
        } else if had_separator {
            usage(format!("unexpected argument '{text}' before `--`; options go before `--`, the command after it"))
        } else {
            usage(format!(
                "put the command after `--`: coldtrace run [OPTIONS] -- {text} ... (no `--` found)"
            ))
        });
    }
    if command.is_empty() {
        return Err(usage(if had_separator {
            "no command after `--`; e.g. coldtrace run -n 5 -- python3 -c 'import json'"
        } else {
            "no command; e.g. coldtrace run -n 5 -- python3 -c 'import json'"
        }));
    }
    raw.command = command;
    Ok(raw)
}

impl RawRun {
    /// The flags without the command.
    fn clone_flags(&self) -> RawRun {
        RawRun {
            command: Vec::new(),
            ..self.clone()
        }
    }
}

/// Stage one: the flags `run` and `compare` share, as given.
fn raw_flags(p: &mut pico_args::Arguments) -> Result<RawRun, UsageError> {
    let string = |p: &mut pico_args::Arguments,
                  keys: pico_args::Keys|
     -> Result<Option<String>, UsageError> {
        p.opt_value_from_os_str(keys, |s: &OsStr| -> Result<String, String> {
            Ok(s.to_string_lossy().into_owned())
        })
        .map_err(pico)
    };
    let os = |p: &mut pico_args::Arguments,
              keys: pico_args::Keys|
     -> Result<Option<OsString>, UsageError> {
        p.opt_value_from_os_str(keys, |s: &OsStr| -> Result<OsString, String> {
            Ok(s.to_os_string())
        })
        .map_err(pico)
    };
    let mut raw = RawRun {
        runs: string(p, ["-n", "--runs"].into())?,
        warmup: string(p, "--warmup".into())?,
        out: os(p, ["-o", "--out"].into())?,
        json: p.contains("--json"),
        output: string(p, "--output".into())?,
        stdin: os(p, "--stdin".into())?,
        timeout: string(p, "--timeout".into())?,
        kill_after: string(p, "--kill-after".into())?,
        prepare: string(p, "--prepare".into())?,
        ignore_failure: p.contains("--ignore-failure"),
        label: string(p, "--label".into())?,
        quiet: p.contains(["-q", "--quiet"]),
        drop_caches: p.contains("--drop-caches"),
        cold_first_only: p.contains("--cold-first-only") || p.contains("--evict-first-only"),
        counters: p.contains("--counters"),
        minimal: p.contains("--minimal"),
        events: string(p, "--events".into())?,
        ..RawRun::default()
    };
    while let Some(path) = os(p, "--evict".into())? {
        raw.evict.push(path);
    }
    while let Some(path) = os(p, "--watch".into())? {
        raw.watch.push(path);
    }
    Ok(raw)
}

/// Parses a count flag: a whole number in `min..=MAX_RUNS`.
fn count(flag: &str, value: Option<&str>, default: u32, min: u32) -> Result<u32, UsageError> {
    let Some(text) = value else {
        return Ok(default);
    };
    let bad = || {
        usage(format!(
            "{flag}: expected a whole number from {min} to {MAX_RUNS}, got '{text}'"
        ))
    };
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad());
    }
    match text.parse::<u64>() {
        Ok(n) if n >= u64::from(min) && n <= u64::from(MAX_RUNS) => Ok(n as u32),
        _ => Err(bad()),
    }
}

/// Parses a duration flag in seconds: a finite decimal number > 0.
fn seconds(flag: &str, value: &str) -> Result<u64, UsageError> {
    let bad = || {
        usage(format!(
            "{flag}: expected a number of seconds greater than 0 and at most {MAX_TIMEOUT_S}, got '{value}'"
        ))
    };
    let ok_chars = !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit() || b == b'.');
    let s: f64 = if ok_chars {
        value.parse().map_err(|_| bad())?
    } else {
        return Err(bad());
    };
    if !(s > 0.0 && s <= MAX_TIMEOUT_S) {
        return Err(bad());
    }
    Ok((s * 1e9).round() as u64)
}

fn check_run(raw: RawRun) -> Result<Plan, UsageError> {
    let runs = count("-n/--runs", raw.runs.as_deref(), 1, 1)?;
    let warmup = count("--warmup", raw.warmup.as_deref(), 0, 0)?;
    let out_dir = raw.out.map(PathBuf::from);
    let single = runs == 1 && warmup == 0;
    let output = match raw.output.as_deref() {
        None if out_dir.is_some() => OutputMode::File,
        None if single => OutputMode::Inherit,
        None => OutputMode::Null,
        Some("inherit") => OutputMode::Inherit,
        Some("null") => OutputMode::Null,
        Some("file") if out_dir.is_some() => OutputMode::File,
        Some("file") => {
            return Err(usage(
                "--output file needs --out DIR (the files go under the batch directory)",
            ))
        }
        Some(other) => {
            return Err(usage(format!(
                "--output: expected inherit, null or file, got '{other}'"
            )))
        }
    };
    let stdin = match raw.stdin {
        None if single => StdinMode::Inherit,
        None => StdinMode::Null,
        Some(s) if s == "null" => StdinMode::Null,
        Some(s) if s == "inherit" => StdinMode::Inherit,
        Some(s) if s.is_empty() => {
            return Err(usage(
                "--stdin: expected null, inherit or a file path, got ''",
            ))
        }
        Some(path) => StdinMode::File(PathBuf::from(path)),
    };
    let timeout_ns = raw
        .timeout
        .as_deref()
        .map(|v| seconds("--timeout", v))
        .transpose()?;
    let kill_after_ns = match raw.kill_after.as_deref() {
        Some(v) => seconds("--kill-after", v)?,
        None => 2_000_000_000,
    };
    if raw.prepare.as_deref() == Some("") {
        return Err(usage("--prepare: expected a shell command, got ''"));
    }
    for path in raw.evict.iter().chain(raw.watch.iter()) {
        if path.is_empty() {
            return Err(usage("--evict/--watch: expected a path, got ''"));
        }
    }
    let evict: Vec<PathBuf> = raw.evict.into_iter().map(PathBuf::from).collect();
    if raw.cold_first_only && evict.is_empty() && !raw.drop_caches {
        return Err(usage(
            "--cold-first-only needs --evict PATH or --drop-caches",
        ));
    }
    let when = if evict.is_empty() && !raw.drop_caches {
        None
    } else if raw.cold_first_only {
        Some(ColdWhen::FirstOnly)
    } else {
        Some(ColdWhen::EveryRun)
    };
    let mut watch: Vec<PathBuf> = evict.clone();
    for path in raw.watch.into_iter().map(PathBuf::from) {
        if !watch.contains(&path) {
            watch.push(path);
        }
    }
    let counters = match (&raw.events, raw.counters) {
        (Some(list), _) => {
            let mut events = Vec::new();
            for name in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
                let event = crate::perf::PerfEvent::parse(name).ok_or_else(|| {
                    let known: Vec<&str> = crate::perf::PerfEvent::ALL
                        .iter()
                        .map(|e| e.name())
                        .collect();
                    usage(format!(
                        "--events: unknown event '{name}'; known: {}",
                        known.join(", ")
                    ))
                })?;
                if !events.contains(&event) {
                    events.push(event);
                }
            }
            if events.is_empty() {
                return Err(usage(
                    "--events: expected a comma-separated list of events, got ''",
                ));
            }
            events
        }
        (None, true) => crate::perf::default_events(),
        (None, false) => Vec::new(),
    };
    let program_name = raw.command[0].clone();
    if program_name.is_empty() {
        return Err(usage(
            "the command is an empty string; put a program name after `--`",
        ));
    }
    Ok(Plan {
        program_path: PathBuf::from(&program_name),
        argv: raw.command,
        runs,
        warmup,
        out_dir,
        json: raw.json,
        output,
        stdin,
        timeout_ns,
        kill_after_ns,
        prepare: raw.prepare,
        ignore_failure: raw.ignore_failure,
        label: raw.label,
        quiet: raw.quiet,
        cold: ColdPlan {
            evict,
            drop_caches: raw.drop_caches,
            when,
            watch,
        },
        counters,
        minimal: raw.minimal,
    })
}

fn parse_compare(args: Vec<OsString>) -> Result<Command, UsageError> {
    let split = args.iter().position(|a| a == "--");
    let (flags, after) = match split {
        Some(i) => (args[..i].to_vec(), args[i + 1..].to_vec()),
        None => (args, Vec::new()),
    };
    if wants_help(&flags) {
        return Ok(Command::Help(COMPARE_HELP));
    }
    let mut p = pico_args::Arguments::from_vec(flags);
    let shuffle: Option<String> = p
        .opt_value_from_os_str("--shuffle", |s: &OsStr| -> Result<String, String> {
            Ok(s.to_string_lossy().into_owned())
        })
        .map_err(pico)?;
    let shuffle_seed = shuffle
        .map(|text| {
            text.parse::<u64>().map_err(|_| {
                usage(format!(
                    "--shuffle: expected a whole number (the seed), got '{text}'"
                ))
            })
        })
        .transpose()?;
    let raw = raw_flags(&mut p)?;
    let mut commands = Vec::new();
    for arg in p.finish().into_iter().chain(after) {
        let text = arg.to_string_lossy().into_owned();
        if split.is_none() && text.starts_with('-') {
            return Err(usage(format!(
                "unknown option '{text}'; see `coldtrace compare --help`"
            )));
        }
        commands.push(text);
    }
    if commands.len() < 2 {
        return Err(usage(
            "compare needs at least two commands, each one argument, e.g. coldtrace compare -n 10 'python3.11 -c \"import json\"' 'python3.12 -c \"import json\"'",
        ));
    }
    let out_dir = raw.out.clone().map(PathBuf::from);
    let (json, quiet) = (raw.json, raw.quiet);
    let mut plans = Vec::with_capacity(commands.len());
    for (i, text) in commands.iter().enumerate() {
        let words =
            crate::words::split(text).map_err(|e| usage(format!("command {}: {e}", i + 1)))?;
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
        one.out = out_dir
            .as_ref()
            .map(|d| d.join("commands").join(format!("{i:02}")).into_os_string());
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
        plans.push(check_run(one)?);
    }
    Ok(Command::Compare(Box::new(ComparePlan {
        plans,
        out_dir,
        shuffle_seed,
        json,
        quiet,
    })))
}

fn parse_report(args: Vec<OsString>) -> Result<Command, UsageError> {
    if wants_help(&args) {
        return Ok(Command::Help(REPORT_HELP));
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

fn parse_context(args: Vec<OsString>) -> Result<Command, UsageError> {
    if wants_help(&args) {
        return Ok(Command::Help(CONTEXT_HELP));
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

#[cfg(test)]
mod tests {
    use super::*;

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
        let single = plan(&["run", "--", "true"]);
        assert_eq!(
            (single.runs, single.output, single.stdin.clone()),
            (1, OutputMode::Inherit, StdinMode::Inherit)
        );
        let batch = plan(&["run", "-n", "5", "--", "true"]);
        assert_eq!(
            (batch.output, batch.stdin.clone()),
            (OutputMode::Null, StdinMode::Null)
        );
        let out = plan(&["run", "-n", "5", "-o", "d", "--", "true"]);
        assert_eq!(out.output, OutputMode::File);
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
        assert!(error(&["run", "-n", "abc", "--", "x"]).contains("got 'abc'"));
        assert!(error(&["run", "-n", "-1", "--", "x"]).contains("got '-1'"));
        assert!(error(&["run", "-n", "99999999999999999999", "--", "x"]).contains("-n/--runs"));
        assert!(error(&["run", "--timeout", "-1", "--", "x"]).starts_with("--timeout:"));
        assert!(error(&["run", "--timeout", "nan", "--", "x"]).starts_with("--timeout:"));
        assert!(error(&["run", "--bogus", "--", "x"]).contains("unknown option '--bogus'"));
        assert!(error(&["run", "--"]).starts_with("no command after `--`"));
        assert!(error(&["run", "true"]).contains("put the command after `--`"));
        assert!(error(&["run", "--output", "file", "--", "x"]).contains("needs --out"));
        assert!(error(&["run", "--label"]).contains("needs a value"));
        assert!(error(&["run", "--", ""]).contains("empty string"));
        assert!(error(&["frobnicate"]).contains("unknown subcommand"));
    }

    #[test]
    fn echoed_values_stay_on_one_line() {
        assert_eq!(
            error(&["run", "-n", "1\n2", "--", "x"]),
            "-n/--runs: expected a whole number from 1 to 10000000, got '1\\n2'"
        );
        assert!(error(&["frob\t\u{1b}[2J"]).contains("'frob\\t\\u{1b}[2J'"));
    }

    #[test]
    fn help_and_version() {
        assert!(matches!(parse(args(&["--help"])), Ok(Command::Help(HELP))));
        assert!(matches!(
            parse(args(&["run", "--help"])),
            Ok(Command::Help(RUN_HELP))
        ));
        assert!(matches!(parse(args(&["--version"])), Ok(Command::Version)));
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
