//! Batch directories read back (`runs.jsonl`, `batch.json`) into one row per batch, across
//! batches and boots, for `report`. It only reads: it never spawns and never renders.
//!
//! The per-run records in `runs.jsonl` are the source of truth (they survive a `kill -9`);
//! `batch.json`, when present, adds the context (kernel) and the label. A cut last line — what a
//! crash mid-write leaves — is skipped with a notice; any other malformed line is an error that
//! names the file and the line.
#![forbid(unsafe_code)]

use crate::record::stats::{ratio, Summary};
use crate::serialize_struct;
use crate::untrusted::{self, OpenError, Want};
use coldtrace_syscalls::Errno;
use serde_json::Value;
use std::fs;
use std::io::{self, BufRead, Read};
use std::path::{Path, PathBuf};

/// A batch directory that cannot be read: one line naming the file (and line).
#[derive(Debug)]
pub struct ReportError(pub String);

impl std::fmt::Display for ReportError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// One row: a batch as `report` sees it.
#[derive(Clone, Debug, Default)]
pub struct BatchRow {
    /// The directory.
    pub dir: String,
    /// `--label` of the batch.
    pub label: Option<String>,
    /// Kernel release (from `batch.json`).
    pub kernel: Option<String>,
    /// Boot ID at the first run.
    pub boot_id: Option<String>,
    /// Uptime at the first run, seconds.
    pub uptime_s: Option<f64>,
    /// Start time of the first run.
    pub started_at: Option<String>,
    /// Wall time of the run with role `first` (also when it was rejected).
    pub first_wall_ns: Option<f64>,
    /// Why the run with role `first` was rejected (`None`: it was counted, or there was none).
    pub first_rejected: Option<String>,
    /// Median wall time of the warm runs.
    pub warm_median_wall_ns: Option<f64>,
    /// `first_wall_ns / warm_median_wall_ns`.
    pub first_to_warm: Option<f64>,
    /// Major faults of the run with role `first`.
    pub first_major_faults: Option<u64>,
    /// Block input (512-byte blocks) of the run with role `first`.
    pub first_block_in: Option<u64>,
    /// Residency of the watched files before the run with role `first`.
    pub first_resident_ratio_before: Option<f64>,
    /// Counted runs.
    pub counted: u64,
    /// Rejected runs.
    pub rejected: u64,
    /// The `batch.json` schema, when there is one (`coldtrace.batch/1` or `/2`).
    pub batch_schema: Option<String>,
    /// Whether the batch finished (`batch.json` present and complete).
    pub complete: bool,
    /// The first of the listed batches on its boot.
    pub first_on_boot: bool,
    /// The kernel differs from the previous listed batch's.
    pub kernel_changed: bool,
    /// Things noticed while reading (a cut last line, no batch.json).
    pub notes: Vec<String>,
}

serialize_struct!(BatchRow {
    dir,
    label,
    kernel,
    boot_id,
    uptime_s,
    started_at,
    first_wall_ns,
    first_rejected,
    warm_median_wall_ns,
    first_to_warm,
    first_major_faults,
    first_block_in,
    first_resident_ratio_before,
    counted,
    rejected,
    batch_schema,
    complete,
    first_on_boot,
    kernel_changed,
    notes,
});

fn u64_at(v: &Value, path: &[&str]) -> Option<u64> {
    path.iter().try_fold(v, |v, k| v.get(k))?.as_u64()
}

fn f64_at(v: &Value, path: &[&str]) -> Option<f64> {
    path.iter().try_fold(v, |v, k| v.get(k))?.as_f64()
}

fn str_at(v: &Value, path: &[&str]) -> Option<String> {
    path.iter()
        .try_fold(v, |v, k| v.get(k))?
        .as_str()
        .map(str::to_owned)
}

fn one_line(text: &str) -> String {
    crate::text::escape_controls(text)
}

/// A comparison directory (`coldtrace compare -o DIR`) holds one batch per command under
/// `commands/NN/`; `report` shows one row per command. `None` for an ordinary batch.
fn comparison_members(dir: &Path) -> Result<Option<Vec<PathBuf>>, ReportError> {
    let commands = dir.join("commands");
    if dir.join("runs.jsonl").exists() || !commands.is_dir() {
        return Ok(None);
    }
    let mut members: Vec<PathBuf> = fs::read_dir(&commands)
        .map_err(|e| {
            ReportError(format!(
                "{}: {}",
                commands.display(),
                crate::record::artifacts::explain(&e)
            ))
        })?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|p| p.is_dir())
        .collect();
    members.sort();
    if members.is_empty() {
        return Err(ReportError(format!(
            "{}: a comparison directory without any command batch",
            dir.display()
        )));
    }
    Ok(Some(members))
}

/// The largest `batch.json` read: coldtrace's own are tens of KiB (failed runs add ~100 bytes
/// each); a larger one is left unread with a note, never held in memory.
pub const BATCH_DOCUMENT_LIMIT: u64 = 64 << 20;
/// The longest line of `runs.jsonl` read: a record is a few KiB; its argv is at most the
/// kernel's argument limit (6 MiB), escaped.
pub const RECORD_LINE_LIMIT: u64 = 64 << 20;

fn unreadable(path: &Path, e: OpenError) -> ReportError {
    let why = crate::record::artifacts::explain(&e.into_io());
    ReportError(format!("{}: {why}", path.display()))
}

/// Reads one batch directory. Its files are opened without blocking and must be regular
/// files (a FIFO or a device planted there is an error, not a hang or an endless read); lines
/// and documents are read up to a limit.
pub fn read_batch(dir: &Path) -> Result<BatchRow, ReportError> {
    let shown = dir.display().to_string();
    let meta = fs::metadata(dir).map_err(|e| {
        ReportError(format!(
            "{shown}: {}",
            crate::record::artifacts::explain(&e)
        ))
    })?;
    if !meta.is_dir() {
        return Err(ReportError(format!(
            "{shown}: not a batch directory (expected a directory with runs.jsonl)"
        )));
    }
    let mut row = BatchRow {
        dir: shown.clone(),
        ..BatchRow::default()
    };
    let batch_path = dir.join("batch.json");
    match untrusted::read_bounded(&batch_path, BATCH_DOCUMENT_LIMIT) {
        Ok(bytes) => parse_batch_document(&bytes, &batch_path.display().to_string(), &mut row)?,
        Err(OpenError::Os(e)) if e == Errno::NOENT => {
            row.notes
                .push("no batch.json (the batch did not finish)".into());
        }
        Err(OpenError::TooLarge { limit }) => row.notes.push(format!(
            "batch.json is larger than {} MiB: not read (label, kernel and completion unknown)",
            limit >> 20
        )),
        Err(e) => return Err(unreadable(&batch_path, e)),
    }
    let runs_path = dir.join("runs.jsonl");
    let opened =
        untrusted::open(&runs_path, Want::Regular).map_err(|e| unreadable(&runs_path, e))?;
    let reader = io::BufReader::with_capacity(64 * 1024, fs::File::from(opened.fd));
    read_runs(reader, &runs_path.display().to_string(), &mut row)?;
    Ok(row)
}

/// Parses the bytes of a `batch.json` into `row` (label, kernel, whether the batch finished).
/// `name` is how errors name the file (`read_batch` passes its path).
///
/// # Errors
/// Not valid JSON, or not a `coldtrace.batch/1` or `/2` document: one line naming `name` and a
/// line.
pub fn parse_batch_document(
    bytes: &[u8],
    name: &str,
    row: &mut BatchRow,
) -> Result<(), ReportError> {
    let doc: Value = serde_json::from_slice(bytes)
        .map_err(|e| ReportError(format!("{name}: line {}: not valid JSON ({e})", e.line())))?;
    let schema = doc.get("schema").and_then(Value::as_str);
    let known = [crate::record::BATCH_SCHEMA, crate::record::BATCH_SCHEMA_V1];
    if !schema.is_some_and(|s| known.contains(&s)) {
        return Err(ReportError(format!(
            "{name}: line 1: not a coldtrace batch document (schema is not {} or {})",
            crate::record::BATCH_SCHEMA,
            crate::record::BATCH_SCHEMA_V1
        )));
    }
    row.batch_schema = schema.map(str::to_owned);
    row.label = str_at(&doc, &["label"]);
    row.kernel = str_at(&doc, &["context", "system", "kernel_release"]);
    row.complete = doc
        .get("complete")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    if !row.complete {
        let why =
            str_at(&doc, &["interrupted_by"]).map(|s| format!("interrupted by {}", one_line(&s)));
        row.notes
            .push(why.unwrap_or_else(|| "stopped early".into()));
    }
    Ok(())
}

/// Parses the bytes of a `runs.jsonl` into `row`: boot, start, counted and rejected runs, the
/// first run's figures and the warm median. A cut last line (no `\n`, not valid JSON) is
/// skipped with a note; `name` is how errors name the file.
///
/// # Errors
/// Any other malformed line, or a record whose schema is not `coldtrace.run/1`: one line
/// naming `name` and the line number (1-based).
pub fn parse_runs(bytes: &[u8], name: &str, row: &mut BatchRow) -> Result<(), ReportError> {
    let mut runs = Runs::default();
    for line in bytes.split_inclusive(|&b| b == b'\n') {
        if runs.take(line, name, row)? == Flow::Stop {
            break;
        }
    }
    runs.finish(row);
    Ok(())
}

/// As [`parse_runs`], reading `runs.jsonl` line by line: memory is one line (at most
/// [`RECORD_LINE_LIMIT`]) and the warm wall times, however long the file.
///
/// # Errors
/// As [`parse_runs`]; a read error, or a line longer than the limit.
pub fn read_runs(
    mut reader: impl io::BufRead,
    name: &str,
    row: &mut BatchRow,
) -> Result<(), ReportError> {
    let mut runs = Runs::default();
    let mut line = Vec::new();
    loop {
        line.clear();
        let n = (&mut reader)
            .take(RECORD_LINE_LIMIT + 1)
            .read_until(b'\n', &mut line)
            .map_err(|e| {
                ReportError(format!(
                    "{name}: line {}: {}",
                    runs.line_no + 1,
                    crate::record::artifacts::explain(&e)
                ))
            })?;
        if n == 0 {
            break;
        }
        if line.len() as u64 > RECORD_LINE_LIMIT {
            return Err(ReportError(format!(
                "{name}: line {}: longer than {} MiB, not a record coldtrace wrote",
                runs.line_no + 1,
                RECORD_LINE_LIMIT >> 20
            )));
        }
        if runs.take(&line, name, row)? == Flow::Stop {
            break;
        }
    }
    runs.finish(row);
    Ok(())
}

#[derive(PartialEq)]
enum Flow {
    Next,
    Stop,
}

/// `runs.jsonl` as it is read: the line count and the warm runs' wall times.
#[derive(Default)]
struct Runs {
    line_no: u64,
    warm_walls: Vec<f64>,
}

impl Runs {
    /// One line (with its `\n`, if any) into `row`.
    fn take(&mut self, line: &[u8], name: &str, row: &mut BatchRow) -> Result<Flow, ReportError> {
        self.line_no += 1;
        let line_no = self.line_no;
        let complete_line = line.last() == Some(&b'\n');
        let record: Value = match serde_json::from_slice(line) {
            Ok(v) => v,
            Err(_) if !complete_line => {
                row.notes
                    .push(format!("runs.jsonl line {line_no} is cut short (skipped)"));
                return Ok(Flow::Stop);
            }
            Err(e) => {
                return Err(ReportError(format!(
                    "{name}: line {line_no}: not a valid record ({e}); the file is damaged"
                )))
            }
        };
        if record.get("schema").and_then(Value::as_str) != Some(crate::record::RUN_SCHEMA) {
            return Err(ReportError(format!(
                "{name}: line {line_no}: not a coldtrace run record (schema is not {})",
                crate::record::RUN_SCHEMA
            )));
        }
        let role = record.get("role").and_then(Value::as_str).unwrap_or("");
        let counted = record
            .get("counted")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        if row.boot_id.is_none() {
            row.boot_id = str_at(&record, &["boot_id"]);
            row.uptime_s = f64_at(&record, &["uptime_s"]);
            row.started_at = str_at(&record, &["started_at"]);
        }
        if row.label.is_none() {
            row.label = str_at(&record, &["label"]);
        }
        if role != "warmup" && !counted {
            row.rejected += 1;
        }
        if role == "first" {
            first_figures(&record, counted, row);
        }
        if counted {
            row.counted += 1;
            if role != "first" {
                self.warm_walls.extend(f64_at(&record, &["wall_ns"]));
            }
        }
        Ok(Flow::Next)
    }

    /// After the last line: the warm median, the ratio and the notes.
    fn finish(self, row: &mut BatchRow) {
        if self.line_no == 0 {
            row.notes.push("runs.jsonl is empty".into());
        }
        row.warm_median_wall_ns = Summary::of(&self.warm_walls).map(|s| s.median);
        if row.first_rejected.is_none() {
            row.first_to_warm = ratio(row.first_wall_ns, row.warm_median_wall_ns);
        }
        note_promoted_first(row);
    }
}

/// The figures of the run with role `first`, counted or rejected (a rejected one is shown as
/// such, never replaced by the next counted run).
fn first_figures(record: &Value, counted: bool, row: &mut BatchRow) {
    row.first_wall_ns = f64_at(record, &["wall_ns"]);
    row.first_major_faults = u64_at(record, &["rusage", "major_faults"]);
    row.first_block_in = u64_at(record, &["rusage", "block_in"]);
    row.first_resident_ratio_before = f64_at(record, &["cache", "before", "resident_ratio"]);
    if !counted {
        let reason = str_at(record, &["failure_reason"]).unwrap_or_else(|| "not counted".into());
        let index = u64_at(record, &["index"]).map_or(String::new(), |i| format!("#{i}: "));
        row.first_rejected = Some(one_line(&format!("{index}{reason}")));
    }
}

/// A `coldtrace.batch/1` document whose first run was rejected put the next counted run in its
/// summary's `first`: say so (this row's first column comes from runs.jsonl and is not promoted).
fn note_promoted_first(row: &mut BatchRow) {
    if row.first_rejected.is_some()
        && row.batch_schema.as_deref() == Some(crate::record::BATCH_SCHEMA_V1)
    {
        row.notes.push(
            "batch.json is coldtrace.batch/1: its summary's first is a warm run promoted over \
             the rejected first run (the first column here is the rejected run itself)"
                .into(),
        );
    }
}

/// Reads every directory, then marks the first batch of each boot and kernel changes, in the
/// order of their start times.
pub fn read_all(dirs: &[PathBuf]) -> Result<Vec<BatchRow>, ReportError> {
    let mut rows = Vec::new();
    for dir in dirs {
        match comparison_members(dir)? {
            Some(members) => {
                for member in members {
                    rows.push(read_batch(&member)?);
                }
            }
            None => rows.push(read_batch(dir)?),
        }
    }
    let mut order: Vec<usize> = (0..rows.len()).collect();
    order.sort_by(|&a, &b| rows[a].started_at.cmp(&rows[b].started_at));
    let mut seen_boots: Vec<String> = Vec::new();
    let mut previous_kernel: Option<String> = None;
    for i in order {
        let row = &mut rows[i];
        if let Some(boot) = &row.boot_id {
            if !seen_boots.contains(boot) {
                seen_boots.push(boot.clone());
                row.first_on_boot = true;
            }
        }
        if let (Some(prev), Some(kernel)) = (&previous_kernel, &row.kernel) {
            row.kernel_changed = prev != kernel;
        }
        if row.kernel.is_some() {
            previous_kernel = row.kernel.clone();
        }
    }
    Ok(rows)
}
