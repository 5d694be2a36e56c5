//! The flags `run` and `compare` share, as given (stage one), and the parsers of their values
//! (counts, seconds). It collects what `args.rs` read; turning it into a plan is `check.rs`'s.
#![forbid(unsafe_code)]

use crate::cli::args::Read;
use crate::cli::commands::CommandSpec;
use crate::cli::table::Sub;
use crate::cli::usage::{usage, UsageError};
use std::ffi::OsString;
use std::path::PathBuf;

pub use crate::plan::MAX_RUNS;
/// The largest `--timeout` accepted, in seconds (about 11.5 days).
pub const MAX_TIMEOUT_S: f64 = 1_000_000.0;

/// Stage one of `run`: the raw flags, as given.
#[derive(Clone)]
pub(crate) struct RawRun {
    /// The subcommand given (`run` with a parameter scan is a comparison, but its help is run's).
    pub(crate) sub: Sub,
    /// `-n/--runs`, and how it was spelled (for the hint about hyperfine's `-n`).
    pub(crate) runs: Option<(String, String)>,
    pub(crate) warmup: Option<String>,
    pub(crate) min_runs: Option<String>,
    pub(crate) max_runs: Option<String>,
    pub(crate) max_time: Option<String>,
    pub(crate) out: Option<(String, OsString)>,
    pub(crate) json: bool,
    pub(crate) output: Option<OsString>,
    pub(crate) keep_output: bool,
    pub(crate) stdin: Option<OsString>,
    pub(crate) timeout: Option<String>,
    pub(crate) kill_after: Option<String>,
    pub(crate) survivors: Option<String>,
    pub(crate) setup: Option<OsString>,
    pub(crate) prepare: Option<OsString>,
    pub(crate) conclude: Option<OsString>,
    pub(crate) cleanup: Option<OsString>,
    pub(crate) name: Option<String>,
    pub(crate) parameters: Vec<(String, String)>,
    /// `--shell` as given (`None` for none): the command's argv already runs through it.
    pub(crate) shell: Option<String>,
    pub(crate) shuffle: Option<String>,
    /// `-i` (`Some(None)`), `-i=CODES` (`Some(Some(CODES))`).
    pub(crate) ignore_failure: Option<Option<String>>,
    pub(crate) label: Option<String>,
    pub(crate) quiet: bool,
    pub(crate) evict: Vec<OsString>,
    pub(crate) drop_caches: bool,
    pub(crate) cold_first_only: bool,
    pub(crate) cold_cycles: Option<String>,
    pub(crate) watch: Vec<OsString>,
    pub(crate) counters: bool,
    pub(crate) events: Option<String>,
    pub(crate) minimal: bool,
    /// `COLDTRACE_TREE` as set in the environment ([`crate::plan::TREE_VAR`]).
    pub(crate) tree: Option<OsString>,
    /// `--metrics`: the table's rows.
    pub(crate) metrics: Option<String>,
    /// `--explain`: every sentence under the table.
    pub(crate) explain: bool,
    /// `--export-json`, `--export-coldtrace-json`, `--export-csv`, `--export-markdown`.
    pub(crate) exports: crate::plan::Exports,
    /// What to say once about how the flags were read.
    pub(crate) notices: Vec<String>,
    pub(crate) command: Vec<OsString>,
    /// The command as the user gave it (their string, or their words quoted).
    pub(crate) text: String,
}

impl RawRun {
    /// These flags for one command, with what belongs to that command alone.
    pub(crate) fn for_command(&self, spec: CommandSpec) -> RawRun {
        RawRun {
            command: spec.argv,
            text: spec.text,
            setup: spec.setup,
            prepare: spec.prepare,
            conclude: spec.conclude,
            cleanup: spec.cleanup,
            name: spec.name,
            parameters: spec.parameters,
            ..self.clone()
        }
    }
}

/// Stage one: the flags `run` and `compare` share, as read against the table.
pub(crate) fn raw_flags(read: &Read, sub: Sub) -> RawRun {
    let first = |long: &str| read.last(long).and_then(|o| o.values.first().cloned());
    let all = |long: &str| -> Vec<OsString> {
        read.all(long)
            .filter_map(|o| o.values.first().cloned())
            .collect()
    };
    RawRun {
        sub,
        runs: read.last("--runs").map(|o| (o.spelled.clone(), o.text())),
        warmup: read.text("--warmup"),
        min_runs: read.text("--min-runs"),
        max_runs: read.text("--max-runs"),
        max_time: read.text("--max-time"),
        out: read
            .last("--out")
            .map(|o| (o.spelled.clone(), o.values[0].clone())),
        json: read.has("--json"),
        output: first("--output"),
        keep_output: read.has("--keep-output"),
        stdin: first("--stdin"),
        timeout: read.text("--timeout"),
        kill_after: read.text("--kill-after"),
        survivors: read.text("--survivors"),
        // One per command: assigned by `commands.rs` (`for_command`).
        setup: None,
        prepare: None,
        conclude: None,
        cleanup: None,
        name: None,
        parameters: Vec::new(),
        shell: read.text("--shell").filter(|s| s != "none"),
        shuffle: read.text("--shuffle"),
        ignore_failure: read
            .last("--ignore-failure")
            .map(|o| o.values.first().map(|v| v.to_string_lossy().into_owned())),
        label: read.text("--label"),
        quiet: read.has("--quiet"),
        evict: all("--evict"),
        drop_caches: read.has("--drop-caches"),
        cold_first_only: read.has("--cold-first-only"),
        cold_cycles: read.text("--cold-cycles"),
        watch: all("--watch"),
        counters: read.has("--counters"),
        events: read.text("--events"),
        minimal: read.has("--minimal"),
        tree: std::env::var_os(crate::plan::TREE_VAR),
        metrics: read.text("--metrics"),
        explain: read.has("--explain"),
        exports: crate::plan::Exports {
            coldtrace_json: first("--export-coldtrace-json").map(PathBuf::from),
            hyperfine_json: first("--export-json").map(PathBuf::from),
            csv: first("--export-csv").map(PathBuf::from),
            csv_runs: first("--export-csv-runs").map(PathBuf::from),
            markdown: first("--export-markdown").map(PathBuf::from),
        },
        notices: notices(read),
        command: Vec::new(),
        text: String::new(),
    }
}

/// What `--export-json` says while a user of coldtrace 0.1 may still expect its old document:
/// one line of at most 80 columns after `coldtrace: `.
pub(crate) const EXPORT_JSON_MOVED: &str =
    "--export-json is hyperfine's now, coldtrace's --export-coldtrace-json";

/// What to say once: how repeated flags were read, and that a shell's cost is not subtracted.
fn notices(read: &Read) -> Vec<String> {
    let mut notices = read.notices.clone();
    if let Some(shell) = read.text("--shell").filter(|s| s != "none") {
        let shell = if shell == "default" {
            "sh".into()
        } else {
            shell
        };
        notices.push(crate::text::escape_controls(&format!(
            "each command runs through `{shell} -c`: its times and counts include the shell's own start-up and exit (coldtrace does not subtract them)"
        )));
    }
    // coldtrace 0.1's --export-json wrote coldtrace's own document; said for one release.
    if read
        .all("--export-json")
        .any(|o| o.spelled == "--export-json")
    {
        notices.push(EXPORT_JSON_MOVED.to_string());
    }
    notices
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::args;

    #[test]
    fn export_json_says_once_where_coldtraces_own_document_went() {
        let said = |words: &[&str]| {
            let words = words.iter().map(std::ffi::OsString::from).collect();
            notices(&args::read(Sub::Run, words).unwrap())
        };
        let moved = said(&["--export-json", "x", "--", "true"]);
        assert_eq!(moved, [EXPORT_JSON_MOVED]);
        assert!(said(&["--export-hyperfine-json", "x", "--", "true"]).is_empty());
        assert!("coldtrace: ".len() + EXPORT_JSON_MOVED.chars().count() <= 80);
    }
}
