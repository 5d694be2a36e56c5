//! Fuzz body: invariants of the command-line parser `coldtrace::cli::parse` for arbitrary argv.
//!
//! Shared by the libFuzzer target (`fuzz/fuzz_targets/argv.rs`) and the corpus replay under
//! plain `cargo test` (the root crate's `tests/fuzz_corpus.rs`). It uses only std and
//! `coldtrace`, so it compiles in both crates.
#![forbid(unsafe_code)]

use coldtrace::cli::{parse, Command, UsageError};
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;

/// The argv (without argv\[0\]) the input stands for: the bytes split on NUL, each piece one
/// argument of arbitrary bytes (a NUL cannot occur in a real argument). The empty input is the
/// empty argv, so `coldtrace` with no arguments is reachable too.
pub fn argv(data: &[u8]) -> Vec<OsString> {
    if data.is_empty() {
        return Vec::new();
    }
    data.split(|&b| b == 0)
        .map(|piece| OsStr::from_bytes(piece).to_os_string())
        .collect()
}

/// Parses the argv of `data` twice and checks every invariant; panics on the first that fails.
pub fn run(data: &[u8]) {
    let args = argv(data);
    let first = parse(args.clone());
    check(&args, &first);
    // Deterministic: the same argv gives the same answer, down to the last field.
    let second = parse(args.clone());
    assert_eq!(
        format!("{first:?}"),
        format!("{second:?}"),
        "parse is not deterministic for {args:?}"
    );
}

/// What any answer of `parse` must satisfy.
pub fn check(args: &[OsString], result: &Result<Command, UsageError>) {
    match result {
        Err(UsageError(message)) => check_error(args, message),
        Ok(Command::Run(plan)) => {
            assert!(plan.runs >= 1, "runs = 0 for {args:?}");
            assert!(!plan.argv.is_empty(), "empty command for {args:?}");
            assert!(!plan.argv[0].is_empty(), "empty argv[0] for {args:?}");
        }
        Ok(Command::Compare(compare)) => {
            assert!(
                compare.plans.len() >= 2,
                "a comparison of {} command(s) for {args:?}",
                compare.plans.len()
            );
            for plan in &compare.plans {
                assert!(plan.runs >= 1, "runs = 0 for {args:?}");
                assert!(!plan.argv.is_empty() && !plan.argv[0].is_empty());
            }
        }
        Ok(Command::Report(report)) => assert!(!report.dirs.is_empty(), "{args:?}"),
        Ok(Command::Time(time)) => {
            // One run, and the command exactly as given: the tail of the arguments.
            assert!(time.plan.is_single_run(), "{args:?}");
            assert!(!time.plan.argv.is_empty(), "empty command for {args:?}");
            assert!(args.ends_with(&time.plan.argv), "{args:?}");
        }
        Ok(Command::Boot(coldtrace::cli::BootAction::Arm(arm))) => {
            // A plan with a command, a count in range, and run's options run itself accepts.
            assert!(!arm.argv.is_empty() && !arm.argv[0].is_empty(), "{args:?}");
            assert!((1..=1000).contains(&arm.boots), "{args:?}");
            assert!(!arm.out_dir.as_os_str().is_empty(), "{args:?}");
        }
        Ok(Command::Cleanup(asked)) => {
            // --cgroup is never empty; no operand reaches it.
            assert!(
                asked
                    .cgroup
                    .as_ref()
                    .is_none_or(|d| !d.as_os_str().is_empty()),
                "{args:?}"
            );
        }
        Ok(Command::Boot(_) | Command::Context { .. } | Command::Help(_) | Command::Version) => {}
    }
}

/// A usage error is printed as one line after `coldtrace: `: exactly one line, not empty, not
/// starting with whitespace, whatever bytes the user passed.
pub fn check_error(args: &[OsString], message: &str) {
    assert!(!message.is_empty(), "empty error message for {args:?}");
    assert!(
        !message.contains('\n'),
        "error message of more than one line for {args:?}: {message:?}"
    );
    assert!(
        !message.starts_with(char::is_whitespace),
        "error message starts with whitespace for {args:?}: {message:?}"
    );
}
