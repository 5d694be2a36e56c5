//! The flags `run` and `compare` share, read as given (stage one), and the parsers of their
//! values (counts, seconds). It reads arguments; turning them into a plan is `run.rs`'s job.
#![forbid(unsafe_code)]

use crate::cli::{usage, UsageError};
use std::ffi::{OsStr, OsString};

/// The largest `-n` / `--warmup` accepted: far beyond any real batch, far below overflow.
pub const MAX_RUNS: u32 = 10_000_000;
/// The largest `--timeout` accepted, in seconds (about 11.5 days).
pub const MAX_TIMEOUT_S: f64 = 1_000_000.0;

/// Whether `-h` or `--help` is among the flags.
pub(crate) fn wants_help(args: &[OsString]) -> bool {
    args.iter().any(|a| a == "-h" || a == "--help")
}

/// The flags before `--` and the words after it, and whether there was a `--`.
pub(crate) fn split_at_separator(args: Vec<OsString>) -> (Vec<OsString>, Vec<OsString>, bool) {
    match args.iter().position(|a| a == "--") {
        Some(i) => (args[..i].to_vec(), args[i + 1..].to_vec(), true),
        None => (args, Vec::new(), false),
    }
}

/// Stage one of `run`: the raw flags, as given.
#[derive(Default, Clone)]
pub(crate) struct RawRun {
    pub(crate) runs: Option<String>,
    pub(crate) warmup: Option<String>,
    pub(crate) out: Option<OsString>,
    pub(crate) json: bool,
    pub(crate) output: Option<String>,
    pub(crate) stdin: Option<OsString>,
    pub(crate) timeout: Option<String>,
    pub(crate) kill_after: Option<String>,
    pub(crate) prepare: Option<String>,
    pub(crate) ignore_failure: bool,
    pub(crate) label: Option<String>,
    pub(crate) quiet: bool,
    pub(crate) evict: Vec<OsString>,
    pub(crate) drop_caches: bool,
    pub(crate) cold_first_only: bool,
    pub(crate) watch: Vec<OsString>,
    pub(crate) counters: bool,
    pub(crate) events: Option<String>,
    pub(crate) minimal: bool,
    pub(crate) command: Vec<OsString>,
}

impl RawRun {
    /// The flags without the command.
    pub(crate) fn clone_flags(&self) -> RawRun {
        RawRun {
            command: Vec::new(),
            ..self.clone()
        }
    }
}

fn missing_value(e: &pico_args::Error) -> Option<String> {
    match e {
        pico_args::Error::OptionWithoutAValue(flag) => Some(format!(
            "option {flag} needs a value; see `coldtrace run --help`"
        )),
        _ => None,
    }
}

/// A pico-args error as a usage error.
pub(crate) fn pico(e: pico_args::Error) -> UsageError {
    usage(missing_value(&e).unwrap_or_else(|| format!("{e}; see `coldtrace run --help`")))
}

/// Stage one: the flags `run` and `compare` share, as given.
pub(crate) fn raw_flags(p: &mut pico_args::Arguments) -> Result<RawRun, UsageError> {
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
pub(crate) fn count(
    flag: &str,
    value: Option<&str>,
    default: u32,
    min: u32,
) -> Result<u32, UsageError> {
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
pub(crate) fn seconds(flag: &str, value: &str) -> Result<u64, UsageError> {
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
