//! What a subcommand's parser returns: [`Command`], with `report`'s and `time`'s arguments.
//! Plain data: it parses, checks and runs nothing.
#![forbid(unsafe_code)]

use crate::plan::{ComparePlan, Plan};
use std::path::PathBuf;

/// What the user asked for.
#[derive(Debug)]
pub enum Command {
    /// `coldtrace run …`
    Run(Box<Plan>),
    /// `coldtrace compare …`
    Compare(Box<ComparePlan>),
    /// `coldtrace report DIR…`
    Report(ReportArgs),
    /// `coldtrace time …`: a drop-in for GNU time.
    Time(Box<TimeArgs>),
    /// `coldtrace boot arm|run|status|disarm`
    Boot(crate::cli::boot::BootAction),
    /// `coldtrace cleanup`
    Cleanup(crate::cleanup::Asked),
    /// `coldtrace context`
    Context {
        /// `--json`
        json: bool,
    },
    /// Text to print on stdout: `--help` (top level or a subcommand's), the man page, a
    /// completion script.
    Help(String),
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
    /// `--svg FILE`: the picture as SVG.
    pub svg: Option<PathBuf>,
    /// `--html FILE`: the picture on an HTML page.
    pub html: Option<PathBuf>,
}

/// Which report `coldtrace time` prints.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TimeFormat {
    /// GNU time's default, `TIME`, or `-f FORMAT`: a format string.
    Format(Vec<u8>),
    /// `-p`.
    Posix,
    /// `-v` (wins over `-f`, `-p` and `TIME`, in any order).
    Verbose,
}

/// `coldtrace time`'s arguments.
#[derive(Clone, Debug)]
pub struct TimeArgs {
    /// The report's layout.
    pub format: TimeFormat,
    /// `-o FILE`: where the report goes (stderr otherwise).
    pub output_file: Option<PathBuf>,
    /// `-a`: append to the file rather than truncate it.
    pub append: bool,
    /// `-q`: no line about an abnormal end.
    pub quiet: bool,
    /// One run of the command, as `coldtrace run -- COMMAND` would make it, with everything
    /// inherited and nothing recorded.
    pub plan: Plan,
}
