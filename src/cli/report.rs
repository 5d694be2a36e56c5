//! `coldtrace report DIR…`: its arguments (into [`ReportArgs`]), and the batches read back and shown as a table,
//! Markdown or JSON. It dispatches; reading is the record reader's, drawing the view's.
#![forbid(unsafe_code)]

use crate::batch::BatchError;
use crate::cli::args;
use crate::cli::help;
use crate::cli::output::Output;
use crate::cli::parsed::{Command, ReportArgs};
use crate::cli::table::Sub;
use crate::cli::usage::{usage, UsageError};
use crate::record::compare::ReadComparison;
use crate::view::compare::CompareView;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// Parses `coldtrace report [--json|--markdown] DIR...`.
pub fn parse_report(args: Vec<OsString>) -> Result<Command, UsageError> {
    let read = args::read(Sub::Report, args)?;
    if let Some(kind) = read.help {
        return Ok(Command::Help(help::help(Sub::Report, kind)));
    }
    if read.version {
        return Ok(Command::Version);
    }
    let json = read.has("--json");
    let markdown = read.has("--markdown");
    if json && markdown {
        return Err(usage("report: choose one of --json and --markdown"));
    }
    let dirs: Vec<PathBuf> = read.operands.iter().map(PathBuf::from).collect();
    if dirs.iter().any(|d| d.as_os_str().is_empty()) {
        return Err(usage(
            "report: a batch directory path is empty (''); give a directory coldtrace wrote",
        ));
    }
    if dirs.is_empty() {
        return Err(usage(
            "report: give at least one batch directory, e.g. coldtrace report cold/ warm/",
        ));
    }
    let file = |flag: &str| -> Result<Option<PathBuf>, UsageError> {
        let value = read.last(flag).and_then(|o| o.values.first().cloned());
        match value {
            Some(f) if f.is_empty() => Err(usage(format!(
                "report: {flag} needs a file name (got ''), e.g. {flag} picture.{}",
                &flag[2..]
            ))),
            other => Ok(other.map(PathBuf::from)),
        }
    };
    Ok(Command::Report(ReportArgs {
        dirs,
        json,
        markdown,
        svg: file("--svg")?,
        html: file("--html")?,
    }))
}

/// The longest list of directories `report -` reads from stdin.
const LIST_LIMIT: u64 = 64 << 20;

/// The batch directories the operands name: `-` is a list read from stdin (one path a line),
/// and a directory that is no batch stands for every batch below it.
fn batch_dirs(operands: &[PathBuf]) -> Result<crate::record::find::Found, BatchError> {
    let mut expanded = Vec::new();
    for operand in operands {
        if operand.as_os_str() == "-" {
            use std::io::Read;
            let mut list = Vec::new();
            std::io::stdin()
                .take(LIST_LIMIT + 1)
                .read_to_end(&mut list)
                .map_err(|e| {
                    BatchError::own(format!("report -: cannot read the list on stdin: {e}"))
                })?;
            if list.len() as u64 > LIST_LIMIT {
                return Err(BatchError::own(format!(
                    "report -: the list on stdin is longer than {} MiB",
                    LIST_LIMIT >> 20
                )));
            }
            expanded.extend(crate::record::find::operands_from_list(&list));
        } else {
            expanded.push(operand.clone());
        }
    }
    if expanded.is_empty() {
        return Err(BatchError::own(
            "report -: the list on stdin names no directory; give one path a line",
        ));
    }
    crate::record::find::batch_dirs(&expanded).map_err(|e| BatchError::own(e.0))
}

/// Reads the batches and renders them. What cannot be read is passed over, named on stderr
/// (and in `--json` and `--markdown`), and makes the exit code 1; nothing readable at all is
/// coldtrace's one-line error (125).
pub fn execute_report(args: &ReportArgs) -> Result<Output, BatchError> {
    let found = batch_dirs(&args.dirs)?;
    check_pictures(args, &found.dirs)?;
    let args = &ReportArgs {
        dirs: found.dirs,
        ..args.clone()
    };
    let (rows, unread) = crate::record::reader::read_all(&args.dirs);
    let (comparisons, lost) = crate::record::reader::read_comparisons(&args.dirs);
    let skipped: Vec<String> = found
        .skipped
        .into_iter()
        .chain(unread)
        .chain(lost)
        .collect();
    if rows.is_empty() {
        let why = skipped.first().cloned();
        return Err(BatchError::own(
            why.unwrap_or_else(|| "no batch could be read".into()),
        ));
    }
    for line in crate::view::report::skipped_lines(&skipped) {
        eprintln!("coldtrace: skipped {line}");
    }
    let boots = crate::record::boots::series(&rows);
    let width = crate::view::terminal::width(crate::view::terminal::Stream::Stdout);
    let mut stdout = if args.json {
        let document = crate::record::reader::ReportDocument {
            schema: crate::record::REPORT_SCHEMA,
            batches: &rows,
            skipped: &skipped,
            boots: (!boots.is_empty()).then_some(boots.as_slice()),
        };
        format!(
            "{}\n",
            serde_json::to_string_pretty(&document).unwrap_or_default()
        )
    } else if args.markdown {
        crate::view::report::render_markdown(&rows, &skipped)
            + &crate::view::boots::render_markdown(&boots)
    } else {
        // The notes are about reading, not the batches: stderr, so that the table can be piped.
        for note in crate::view::report::notes(&rows) {
            eprintln!("coldtrace: note: {note}");
        }
        crate::view::report::render_table(&rows, width)
            + &crate::view::boots::render_text(&boots, width)
    };
    if !args.json {
        stdout.push_str(&comparisons_text(&comparisons, args.markdown));
    }
    if args.svg.is_some() || args.html.is_some() {
        draw(args, &boots)?;
    }
    Ok(Output {
        stdout,
        exit_code: if skipped.is_empty() { 0 } else { 1 },
    })
}

/// Each comparison's ratios, intervals and conclusion under the rows (`--json` has them in
/// `DIR/batch.json` already).
fn comparisons_text(comparisons: &[(String, ReadComparison)], markdown: bool) -> String {
    let width = crate::view::terminal::width(crate::view::terminal::Stream::Stdout);
    let mut out = String::new();
    for (dir, read) in comparisons {
        let view = CompareView {
            commands: &read.commands,
            metrics: &read.metrics,
            comparison: &read.comparison,
            rows: crate::plan::MetricView::All,
        };
        let title = format!(
            "comparison {}: {} commands, interleaved",
            crate::text::escape_controls(dir),
            read.commands.len()
        );
        if markdown {
            out.push_str(&format!("\n**{}**\n", crate::text::markdown_text(&title)));
            out.push_str(&crate::view::compare::markdown_ratios(&view));
        } else {
            out.push('\n');
            out.push_str(&crate::view::compare::comparison_section(
                &view, &title, false, width,
            ));
        }
    }
    out
}

/// `--svg FILE` and `--html FILE`: the batches read again as series (streamed), drawn, and
/// each file replaced atomically (a browser reloading it never sees half a picture).
fn draw(args: &ReportArgs, boots: &[crate::record::boots::BootSeries]) -> Result<(), BatchError> {
    let pictures = crate::record::reader::read_pictures(&args.dirs);
    if let Some(path) = &args.svg {
        write_file(
            "--svg",
            path,
            &crate::view::picture::render_svg(&pictures, boots),
        )?;
    }
    if let Some(path) = &args.html {
        let dirs: Vec<String> = args.dirs.iter().map(|d| d.display().to_string()).collect();
        let html = crate::view::picture::html::render_html(&pictures, &dirs, boots);
        write_file("--html", path, &html)?;
    }
    Ok(())
}

fn write_file(flag: &str, path: &Path, text: &str) -> Result<(), BatchError> {
    let target = crate::record::export_file::Target { flag, path };
    crate::record::export_file::write(target, |w| w.write_all(text.as_bytes()))
        .map_err(|e| BatchError::own(e.message))
}

/// `--svg` and `--html`, checked before any batch is read: writable, not one file, and not
/// inside a batch directory being read.
fn check_pictures(args: &ReportArgs, dirs: &[PathBuf]) -> Result<(), BatchError> {
    let named = [("--svg", &args.svg), ("--html", &args.html)];
    let targets: Vec<crate::record::export_file::Target<'_>> = named
        .into_iter()
        .filter_map(|(flag, path)| {
            Some(crate::record::export_file::Target {
                flag,
                path: path.as_deref()?,
            })
        })
        .collect();
    let dirs: Vec<&Path> = dirs.iter().map(PathBuf::as_path).collect();
    crate::record::export_file::check_all(&targets, &dirs).map_err(BatchError::own)
}
