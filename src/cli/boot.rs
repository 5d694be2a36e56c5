//! `coldtrace boot arm|run|status|disarm`: the action word, then the options read against the
//! table (`boot arm` takes every option of `run` besides its own), checked into what
//! `crate::boot` does. `boot arm`'s run options are checked here by `run`'s own parser, so
//! that a plan that `run` would refuse is refused at arming, not at the next boot.
#![forbid(unsafe_code)]

use crate::boot::arm::ArmArgs;
use crate::boot::{store, unit, Places, Said};
use crate::cli::args::{self, Read};
use crate::cli::help;
use crate::cli::output::Output;
use crate::cli::parsed::Command;
use crate::cli::table::{Sub, BOOT_ACTIONS};
use crate::cli::usage::{usage, UsageError};
use std::ffi::OsString;
use std::path::PathBuf;

/// What `coldtrace boot` was asked.
#[derive(Clone, Debug, PartialEq)]
pub enum BootAction {
    /// `boot arm`.
    Arm(Box<ArmArgs>),
    /// `boot run`.
    Run(Places),
    /// `boot status`.
    Status(Places),
    /// `boot disarm`.
    Disarm(Places),
}

/// The most boots one arming runs.
pub const MAX_BOOTS: u64 = 1000;
/// The longest `--control` wait, seconds (a day).
pub const MAX_CONTROL_S: f64 = 86_400.0;

/// Options that only `boot arm` takes (the others are `run`'s, or `--state-dir`,
/// `--unit-dir`, `--help`, `--version`).
const ARM_ONLY: &[&str] = &[
    "--boots",
    "--out",
    "--reboot",
    "--after",
    "--control",
    "--start-timeout",
    "--dry-run",
];

/// Parses `coldtrace boot ACTION [OPTIONS] [-- COMMAND [ARG...]]`.
pub fn parse_boot(args: Vec<OsString>) -> Result<Command, UsageError> {
    let first = args.first().map(|a| a.to_string_lossy().into_owned());
    let Some(action) = first.filter(|a| BOOT_ACTIONS.contains(&a.as_str())) else {
        let read = args::read(Sub::Boot, args.clone())?;
        if let Some(kind) = read.help {
            return Ok(Command::Help(help::help(Sub::Boot, kind)));
        }
        if read.version {
            return Ok(Command::Version);
        }
        return Err(usage(format!(
            "boot: name an action first: {} (e.g. coldtrace boot arm -o results -n 5 -- \
             COMMAND)",
            BOOT_ACTIONS.join(", ")
        )));
    };
    let read = args::read(Sub::Boot, args[1..].to_vec())?;
    if let Some(kind) = read.help {
        return Ok(Command::Help(help::help(Sub::Boot, kind)));
    }
    if read.version {
        return Ok(Command::Version);
    }
    let places = places(&read)?;
    if action == "arm" {
        return arm(&read, places).map(|a| Command::Boot(BootAction::Arm(Box::new(a))));
    }
    if let Some(o) = read
        .options
        .iter()
        .find(|o| !matches!(o.spec.long, "--state-dir" | "--unit-dir"))
    {
        return Err(usage(format!(
            "boot {action}: {} is an option of `coldtrace boot arm`; `boot {action}` takes \
             --state-dir and --unit-dir only",
            o.spelled
        )));
    }
    if !read.operands.is_empty() {
        return Err(usage(format!(
            "boot {action} takes no command; the command is armed with `coldtrace boot arm \
             -o DIR -- COMMAND`"
        )));
    }
    Ok(Command::Boot(match action.as_str() {
        "run" => BootAction::Run(places),
        "status" => BootAction::Status(places),
        _ => BootAction::Disarm(places),
    }))
}

/// A directory option's value, absolute (the unit runs from `/`).
fn directory(read: &Read, flag: &str, default: &str) -> Result<(PathBuf, bool), UsageError> {
    let Some(value) = read.last(flag).and_then(|o| o.values.first().cloned()) else {
        return Ok((PathBuf::from(default), false));
    };
    if value.is_empty() {
        return Err(usage(format!("{flag}: expected a directory path, got ''")));
    }
    let path = PathBuf::from(value);
    let cwd = std::env::current_dir().map_err(|e| usage(format!("{flag}: {e}")))?;
    Ok((cwd.join(path), true))
}

fn places(read: &Read) -> Result<Places, UsageError> {
    let (state_dir, _) = directory(read, "--state-dir", store::DEFAULT_STATE_DIR)?;
    let (unit_dir, unit_dir_given) = directory(read, "--unit-dir", unit::DEFAULT_UNIT_DIR)?;
    Ok(Places {
        state_dir,
        unit_dir,
        unit_dir_given,
    })
}

fn text(value: &OsString, flag: &str) -> Result<String, UsageError> {
    value.to_str().map(str::to_owned).ok_or_else(|| {
        usage(format!(
            "{flag}: the value is not UTF-8 text, which the saved plan (JSON) cannot hold"
        ))
    })
}

/// `coldtrace run`'s options as given, each in its long name (`-n 5` is `--runs 5`,
/// `-i=1,2` is `--ignore-failure=1,2`).
fn run_options(read: &Read) -> Result<Vec<String>, UsageError> {
    let mut words = Vec::new();
    for o in &read.options {
        let long = o.spec.long;
        if ARM_ONLY.contains(&long) || !o.spec.taken_by(Sub::Run) {
            continue;
        }
        let values = o
            .values
            .iter()
            .map(|v| text(v, long))
            .collect::<Result<Vec<_>, _>>()?;
        match (o.spec.optional_value, values.as_slice()) {
            (Some(_), [value]) => words.push(format!("{long}={value}")),
            _ => {
                words.push(long.to_string());
                words.extend(values);
            }
        }
    }
    Ok(words)
}

fn number<T: std::str::FromStr>(
    read: &Read,
    flag: &str,
    hint: &str,
) -> Result<Option<T>, UsageError> {
    let Some(value) = read.text(flag) else {
        return Ok(None);
    };
    value
        .parse()
        .map(Some)
        .map_err(|_| usage(format!("{flag}: expected {hint}, got '{value}'")))
}

fn arm(read: &Read, places: Places) -> Result<ArmArgs, UsageError> {
    let boots_hint = format!("a whole number from 1 to {MAX_BOOTS}");
    let boots: u64 = number(read, "--boots", &boots_hint)?.unwrap_or(3);
    if !(1..=MAX_BOOTS).contains(&boots) {
        return Err(usage(format!(
            "--boots: expected {boots_hint}, got '{boots}'"
        )));
    }
    let control_hint = format!("a number of seconds from 0 to {MAX_CONTROL_S}");
    let control_after_s: Option<f64> = number(read, "--control", &control_hint)?;
    if control_after_s.is_some_and(|s| !(0.0..=MAX_CONTROL_S).contains(&s)) {
        return Err(usage(format!("--control: expected {control_hint}")));
    }
    let timeout_hint = "a whole number of seconds from 1 to 604800";
    let start_timeout_s: u64 = number(read, "--start-timeout", timeout_hint)?.unwrap_or(3600);
    if !(1..=604_800).contains(&start_timeout_s) {
        return Err(usage(format!("--start-timeout: expected {timeout_hint}")));
    }
    let Some(out) = read.last("--out").and_then(|o| o.values.first().cloned()) else {
        return Err(usage(
            "boot arm: -o DIR is required: where each boot's batch goes (DIR/boot-NN-<boot id>/)",
        ));
    };
    if out.is_empty() {
        return Err(usage("-o/--out: expected a directory path, got ''"));
    }
    if read.operands.is_empty() {
        return Err(usage(
            "boot arm: no command; e.g. coldtrace boot arm -o results -n 5 -- python3 -c 'import json'",
        ));
    }
    let argv = read
        .operands
        .iter()
        .map(|a| text(a, "the command"))
        .collect::<Result<Vec<_>, _>>()?;
    let reboot = read
        .last("--reboot")
        .map(|o| o.values.first().map(|v| text(v, "--reboot")).transpose())
        .transpose()?;
    let after = read
        .all("--after")
        .map(|o| {
            o.values
                .first()
                .map_or(Ok(String::new()), |v| text(v, "--after"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    if let Some(bad) = after
        .iter()
        .find(|u| u.is_empty() || u.contains(char::is_whitespace))
    {
        return Err(usage(format!(
            "--after: expected one unit name without blanks (remote-fs.target), got '{bad}'"
        )));
    }
    let run_options = run_options(read)?;
    check_as_run(&run_options, &PathBuf::from(&out), &argv)?;
    Ok(ArmArgs {
        places,
        boots,
        out_dir: PathBuf::from(out),
        reboot,
        after,
        control_after_s,
        start_timeout_s,
        dry_run: read.has("--dry-run"),
        run_options,
        argv,
    })
}

/// Refuses what `coldtrace run` would refuse, with run's own message.
fn check_as_run(
    options: &[String],
    out: &std::path::Path,
    argv: &[String],
) -> Result<(), UsageError> {
    let mut words: Vec<OsString> = options.iter().map(OsString::from).collect();
    words.push("-o".into());
    words.push(out.join("boot-00-check").into_os_string());
    words.push("--".into());
    words.extend(argv.iter().map(OsString::from));
    crate::cli::run::parse_run(words).map(|_| ())
}

/// Runs a boot action.
pub fn execute_boot(action: &BootAction) -> Output {
    let said = match action {
        BootAction::Arm(args) => crate::boot::arm::arm(args).unwrap_or_else(|e| Said {
            text: String::new(),
            exit_code: error(&format!("boot arm: {e}")),
        }),
        BootAction::Run(places) => crate::boot::run::boot_run(places),
        BootAction::Status(places) => crate::boot::status::status(places),
        BootAction::Disarm(places) => crate::boot::disarm::disarm(places),
    };
    Output {
        stdout: said.text,
        exit_code: said.exit_code,
    }
}

fn error(message: &str) -> u8 {
    eprintln!(
        "coldtrace: error: {}",
        crate::text::escape_controls(message)
    );
    125
}
