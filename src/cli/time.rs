//! `coldtrace time`: GNU time 1.9's command line (getopt_long `+af:o:pqvV`) into [`TimeArgs`],
//! and one run through the batch's plan and runner, reported by the view. No spawning here.
#![forbid(unsafe_code)]

use crate::batch::{self, BatchError, Signals, SingleRun, Unobserved};
use crate::cli::output::Output;
use crate::cli::parsed::Command;
pub use crate::cli::parsed::{TimeArgs, TimeFormat};
use crate::cli::table::{self, Sub};
use crate::cli::usage::{usage, UsageError};
use crate::cli::{args, help};
use crate::measure::runner::Outcome;
use crate::plan::{ColdPlan, OutputMode, Plan, StdinMode};
use crate::text::escape_controls;
use crate::view::gnu_time::{self, Ending, Facts, Layout, Usage, DEFAULT_FORMAT};
use coldtrace_syscalls::spawn::ChildStage;
use coldtrace_syscalls::{Errno, ResourceUsage};
use std::ffi::OsString;
use std::fs::File;
use std::io::Write;
use std::os::unix::ffi::OsStringExt;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// Parses `coldtrace time`'s arguments (read against the option table, so GNU time's spellings
/// `-f FMT`, `-fFMT`, `--format=FMT`, `--output=FILE`, bundles like `-qao FILE` all work);
/// `time_env` is the value of the `TIME` variable.
pub fn parse_time(args: Vec<OsString>, time_env: Option<OsString>) -> Result<Command, UsageError> {
    let read = args::read(Sub::Time, args)?;
    if let Some(kind) = read.help {
        return Ok(Command::Help(help::help(Sub::Time, kind)));
    }
    if read.version {
        return Ok(Command::Version);
    }
    if read.operands.is_empty() {
        return Err(usage(format!(
            "time: missing program to run; e.g. coldtrace time -v ls -l ({})",
            table::see_help(Sub::Time)
        )));
    }
    // -f and -p replace each other, the last one given wins; -v wins over both, and over TIME.
    let last_layout = read
        .options
        .iter()
        .rev()
        .find(|o| o.spec.long == "--format" || o.spec.long == "--portability");
    let format = match last_layout {
        _ if read.has("--verbose") => TimeFormat::Verbose,
        Some(o) if o.spec.long == "--portability" => TimeFormat::Posix,
        Some(o) => TimeFormat::Format(o.values[0].clone().into_vec()),
        None => TimeFormat::Format(match time_env {
            Some(format) => format.into_vec(),
            None => DEFAULT_FORMAT.to_vec(),
        }),
    };
    Ok(Command::Time(Box::new(TimeArgs {
        format,
        output_file: read
            .last("--output-file")
            .map(|o| PathBuf::from(&o.values[0])),
        append: read.has("--append"),
        quiet: read.has("--quiet"),
        plan: single_run(read.operands),
    })))
}

/// One measured run, stdio inherited like `time`'s, no batch directory, no table or notices,
/// and none of the /proc reads around the run that only a record would show.
fn single_run(argv: Vec<OsString>) -> Plan {
    Plan {
        notices: Vec::new(),
        program_path: PathBuf::from(&argv[0]),
        text: crate::text::quote(
            &argv
                .iter()
                .map(|a| a.to_string_lossy().into_owned())
                .collect::<Vec<_>>(),
        ),
        argv,
        runs: 1,
        bounds: None,
        name: None,
        parameters: Vec::new(),
        shell: None,
        scripts_through_sh: true,
        warmup: 0,
        out_dir: None,
        json: false,
        output: OutputMode::Inherit,
        stdin: StdinMode::Inherit,
        timeout_ns: None,
        kill_after_ns: 0,
        escalate_after_ns: None,
        survivors: crate::measure::survivors::SurvivorPolicy::Leave,
        setup: None,
        prepare: None,
        conclude: None,
        cleanup: None,
        ignore_failure: crate::plan::IgnoreFailure::No,
        view: crate::plan::MetricView::Compact,
        explain: false,
        label: None,
        quiet: true,
        cold: ColdPlan::default(),
        minimal: true,
        trace_tree: false,
        counters: Vec::new(),
        in_comparison: false,
        exports: crate::plan::Exports::default(),
    }
}

/// Runs the command once through the same plan, batch and runner as `coldtrace run --
/// COMMAND`, then writes GNU time's report to stderr or the `-o` file.
pub fn execute_time(args: &TimeArgs) -> Result<Output, BatchError> {
    // As GNU time, a bad `-o` path is an error of ours and the command does not run; unlike
    // it, the file is not truncated first (see `ReportFile`).
    let mut file = args
        .output_file
        .as_deref()
        .map(|path| ReportFile::check(path, args.append))
        .transpose()?;
    let signals = Signals::install()?;
    let (ending, wall_ns, usage) = match batch::run(&args.plan, &signals, &mut Unobserved) {
        Ok(outcome) => match outcome.single_run {
            Some(run) => ending_of(&args.plan, run)?,
            None => return Err(BatchError::own("the command did not run")),
        },
        Err(BatchError {
            cannot_start: Some(errno),
            ..
        }) => (cannot_run(&args.plan, errno), None, None),
        Err(e) => return Err(e),
    };
    let layout = match &args.format {
        TimeFormat::Format(f) => Layout::Format(f),
        TimeFormat::Posix => Layout::Posix,
        TimeFormat::Verbose => Layout::Verbose,
    };
    let facts = Facts {
        argv: &args.plan.argv,
        wall_ns,
        usage: usage.map(gnu_usage),
        ending,
        page_size_bytes: rustix::param::page_size() as u64,
    };
    let report = gnu_time::render(layout, args.quiet, &facts);
    match &mut file {
        Some(f) => f.write(&report)?,
        // stderr is a courtesy here as everywhere: a closed one does not change the exit code.
        None => {
            let _ = std::io::stderr().write_all(&report);
        }
    }
    Ok(Output {
        stdout: String::new(),
        exit_code: match ending {
            Ending::Exited(code) => code,
            Ending::Signaled(signal) | Ending::Stopped(signal) => {
                128u8.saturating_add(signal as u8)
            }
        },
    })
}

/// How the run ended, its wall time and its usage, as the report needs them.
type Ran = (Ending, Option<u64>, Option<ResourceUsage>);

fn ending_of(plan: &Plan, run: SingleRun) -> Result<Ran, BatchError> {
    let status = match run.outcome {
        // Unmeasured: it ran, so its status is the command's; its times are unknown.
        Outcome::Finished(status)
        | Outcome::TimedOut { status, .. }
        | Outcome::Unmeasured { status } => status,
        // GNU time's "cannot fork": coldtrace could not create the child at all.
        Outcome::FailedToStart {
            stage: ChildStage::Clone,
            errno,
        } => {
            return Err(BatchError::own(format!(
                "cannot create the command's process: {errno}"
            )))
        }
        Outcome::FailedToStart { errno, .. } => return Ok((cannot_run(plan, errno), None, None)),
        Outcome::WaitFailed { .. } | Outcome::Unreaped { .. } => {
            let why = batch::cannot_wait(&run.outcome).unwrap_or_default();
            return Err(BatchError::own(why));
        }
        // GNU time reports a stopped command and exits 128 + the signal (it then leaves the
        // command behind; coldtrace has killed it).
        Outcome::Traced { stop, .. } => {
            return Ok((Ending::Stopped(stop.raw()), run.wall_ns, run.rusage))
        }
    };
    let ending = match (status.code(), status.signal()) {
        (Some(code), _) => Ending::Exited(code as u8),
        (None, Some(signal)) => Ending::Signaled(signal),
        (None, None) => {
            return Err(BatchError::own(format!(
                "unknown status from the command ({:#x})",
                status.to_raw()
            )))
        }
    };
    Ok((ending, run.wall_ns, run.rusage))
}

/// GNU time's line for a command that cannot run; the report then shows it as exited with
/// 127 when the program does not exist and 126 for every other reason, as `execvp` tells them.
fn cannot_run(plan: &Plan, errno: Errno) -> Ending {
    let reason = errno
        .message()
        .map_or_else(|| errno.to_string(), str::to_owned);
    // GNU time's words; the name escaped like every echoed string (the report's %C is not).
    eprintln!(
        "coldtrace time: cannot run {}: {reason}",
        escape_controls(&plan.argv[0].to_string_lossy())
    );
    Ending::Exited(if errno == Errno::NOENT { 127 } else { 126 })
}

fn gnu_usage(u: ResourceUsage) -> Usage {
    Usage {
        user_us: u.user_us,
        sys_us: u.sys_us,
        max_rss_kib: u.max_rss_kib,
        major_faults: u.major_faults,
        minor_faults: u.minor_faults,
        block_in: u.block_in,
        block_out: u.block_out,
        voluntary_switches: u.voluntary_switches,
        involuntary_switches: u.involuntary_switches,
    }
}

/// The `-o FILE` of a run, checked before it and written after it.
///
/// Without `-a`, the file is written as every file coldtrace is told to write (an export, a
/// picture: [`export_file`](crate::record::export_file)): checked before the run, then
/// replaced atomically once the report exists — a temporary file beside it, renamed over it —
/// so an interrupted run leaves the old contents whole, and a symlink to nothing is refused
/// rather than followed to create a file wherever it points. With `-a`, the report is appended
/// (`O_APPEND`, so that runs writing one log at once each add their lines): to the existing
/// file, never creating one through a symlink (`O_EXCL` when there is none yet). A FIFO is
/// opened before the run, as GNU time 1.9 opens every `-o` file: the open waits for a reader
/// and the command runs only once there is one (until then a signal ends coldtrace with its
/// default action, nothing having run), so that the report is never lost for want of a
/// reader after the command ran. Close-on-exec: the command does not inherit it.
enum ReportFile<'a> {
    Replace(&'a Path),
    Open(&'a Path, File),
}

impl<'a> ReportFile<'a> {
    fn check(path: &'a Path, append: bool) -> Result<ReportFile<'a>, BatchError> {
        let target = crate::record::export_file::Target { flag: "-o", path };
        crate::record::export_file::check_all(&[target], &[])
            .map_err(|why| BatchError::own(format!("time: {why}")))?;
        if std::fs::metadata(path).is_ok_and(|m| m.file_type().is_fifo()) {
            return open_fifo(path).map(|file| ReportFile::Open(path, file));
        }
        if !append {
            return Ok(ReportFile::Replace(path));
        }
        let exists = std::fs::symlink_metadata(path).is_ok();
        File::options()
            .append(true)
            .create_new(!exists)
            .open(path)
            .map(|file| ReportFile::Open(path, file))
            .map_err(|e| cannot(path, &e))
    }

    fn write(&mut self, report: &[u8]) -> Result<(), BatchError> {
        match self {
            ReportFile::Replace(path) => {
                let target = crate::record::export_file::Target { flag: "-o", path };
                crate::record::export_file::write(target, |w| w.write_all(report))
                    .map_err(|e| BatchError::own(format!("time: {}", e.message)))
            }
            ReportFile::Open(path, file) => file.write_all(report).map_err(|e| cannot(path, &e)),
        }
    }
}

/// Opens the FIFO at `path` for writing, waiting for a reader as [open(2)] does; what it
/// opened must still be a FIFO (a file put in its place meanwhile is refused, not written).
///
/// [open(2)]: https://man7.org/linux/man-pages/man2/open.2.html
fn open_fifo(path: &Path) -> Result<File, BatchError> {
    let file = File::options()
        .write(true)
        .custom_flags(rustix::fs::OFlags::NOCTTY.bits() as i32)
        .open(path)
        .map_err(|e| cannot(path, &e))?;
    match file.metadata() {
        Ok(meta) if meta.file_type().is_fifo() => Ok(file),
        Ok(_) => Err(BatchError::own(format!(
            "time: {}: was replaced while coldtrace waited for a reader; run again",
            path.display()
        ))),
        Err(e) => Err(cannot(path, &e)),
    }
}

/// `time: FILE: REASON`, as GNU time words a file it cannot open.
fn cannot(path: &Path, e: &std::io::Error) -> BatchError {
    let reason = e
        .raw_os_error()
        .and_then(|n| Errno::from_raw(n).message())
        .map_or_else(|| e.to_string(), str::to_owned);
    BatchError::own(format!("time: {}: {reason}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(list: &[&str]) -> Vec<OsString> {
        list.iter().map(OsString::from).collect()
    }

    fn parsed(list: &[&str], time_env: Option<&str>) -> TimeArgs {
        match parse_time(os(list), time_env.map(OsString::from)) {
            Ok(Command::Time(args)) => *args,
            other => panic!("expected time arguments for {list:?}, got {other:?}"),
        }
    }

    fn error(list: &[&str]) -> String {
        match parse_time(os(list), None) {
            Err(e) => e.0,
            other => panic!("expected an error for {list:?}, got {other:?}"),
        }
    }

    fn format(list: &[&str], time_env: Option<&str>) -> TimeFormat {
        parsed(list, time_env).format
    }

    #[test]
    fn options_stop_at_the_first_non_option() {
        let args = parsed(&["ls", "-l", "-v", "--", "-f"], None);
        assert_eq!(args.plan.argv, os(&["ls", "-l", "-v", "--", "-f"]));
        assert_eq!(args.format, TimeFormat::Format(DEFAULT_FORMAT.to_vec()));
        assert_eq!(parsed(&["-q", "--", "-v"], None).plan.argv, os(&["-v"]));
        assert_eq!(parsed(&["-", "x"], None).plan.argv, os(&["-", "x"]));
        // The command's own --help and -h are the command's.
        assert_eq!(
            parsed(&["ls", "--help"], None).plan.argv,
            os(&["ls", "--help"])
        );
        assert_eq!(
            parsed(&["-q", "ls", "-h"], None).plan.argv,
            os(&["ls", "-h"])
        );
        let plan = parsed(&["true"], None).plan;
        assert!(plan.is_single_run() && plan.quiet && plan.minimal && plan.out_dir.is_none());
        assert_eq!(
            (plan.output, plan.stdin),
            (OutputMode::Inherit, StdinMode::Inherit)
        );
    }

    #[test]
    fn short_options_bundle_and_take_attached_values() {
        let args = parsed(&["-qao", "out.txt", "-f%e %M", "true"], None);
        assert!(args.quiet && args.append);
        assert_eq!(args.output_file, Some(PathBuf::from("out.txt")));
        assert_eq!(args.format, TimeFormat::Format(b"%e %M".to_vec()));
        assert_eq!(
            parsed(&["-o", "-v", "true"], None).output_file,
            Some(PathBuf::from("-v"))
        );
    }

    #[test]
    fn long_options_as_gnu_time_spells_them() {
        let args = parsed(
            &["--format=%x", "--output-file", "f", "--append", "true"],
            None,
        );
        assert_eq!(args.format, TimeFormat::Format(b"%x".to_vec()));
        assert_eq!(args.output_file, Some(PathBuf::from("f")));
        assert!(args.append);
        // GNU time's --help spells it --output=FILE (getopt's prefix of --output-file).
        assert_eq!(
            parsed(&["--output=g", "true"], None).output_file,
            Some(PathBuf::from("g"))
        );
        assert_eq!(format(&["--verbose", "true"], None), TimeFormat::Verbose);
        assert_eq!(format(&["--portability", "true"], None), TimeFormat::Posix);
        assert!(parsed(&["--quiet", "true"], None).quiet);
        assert_eq!(
            format(&["--format", "", "true"], None),
            TimeFormat::Format(Vec::new())
        );
    }

    #[test]
    fn which_format_wins() {
        assert_eq!(
            format(&["true"], Some("%C")),
            TimeFormat::Format(b"%C".to_vec())
        );
        assert_eq!(format(&["true"], Some("")), TimeFormat::Format(Vec::new()));
        assert_eq!(
            format(&["-f", "%x", "true"], Some("%C")),
            TimeFormat::Format(b"%x".to_vec())
        );
        assert_eq!(format(&["-p", "true"], Some("%C")), TimeFormat::Posix);
        assert_eq!(
            format(&["-p", "-f", "X", "true"], None),
            TimeFormat::Format(b"X".to_vec())
        );
        assert_eq!(format(&["-f", "X", "-p", "true"], None), TimeFormat::Posix);
        assert_eq!(
            format(&["-f", "X", "-p", "-f", "Y", "true"], None),
            TimeFormat::Format(b"Y".to_vec())
        );
        for list in [["-v", "-f", "X", "true"], ["-f", "X", "-v", "true"]] {
            assert_eq!(format(&list, Some("Y")), TimeFormat::Verbose, "{list:?}");
        }
        assert_eq!(format(&["-p", "-v", "true"], None), TimeFormat::Verbose);
    }

    #[test]
    fn help_and_version() {
        for list in [
            &["--help"][..],
            &["-h"],
            &["--help", "-x"],
            &["-q", "--help", "ls"],
        ] {
            assert!(
                matches!(parse_time(os(list), None), Ok(Command::Help(_))),
                "{list:?}"
            );
        }
        assert!(matches!(
            parse_time(os(&["-V"]), None),
            Ok(Command::Version)
        ));
    }

    #[test]
    fn usage_errors_are_one_line_naming_the_problem() {
        assert!(error(&[]).starts_with("time: missing program to run;"));
        assert!(error(&["-q"]).starts_with("time: missing program to run;"));
        assert!(error(&["-x", "true"]).contains("'-x'"));
        assert!(error(&["-f"]).contains("needs a value"));
        assert!(error(&["--bogus", "true"]).contains("'--bogus'"));
        assert!(error(&["--quiet=1", "true"]).contains("takes no value"));
        for e in [error(&["-x", "true"]), error(&[]), error(&["-f"])] {
            assert!(
                !e.contains('\n') && e.contains("coldtrace time --help"),
                "{e}"
            );
        }
    }
}
