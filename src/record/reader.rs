//! Batch directories read back (`runs.jsonl`, `batch.json`) into one row per batch, across
//! batches and boots, for `report`, and into series of runs for its picture (`runs.jsonl`
//! streamed line by line). It only reads: it never spawns and never renders.
//!
//! The per-run records in `runs.jsonl` are the source of truth (they survive a `kill -9`);
//! `batch.json`, when present, adds the context (kernel) and the label. A cut last line — what a
//! crash mid-write leaves — is skipped with a notice; any other malformed line is an error that
//! names the file and the line.
#![forbid(unsafe_code)]

use crate::record::anomaly::RunAnomaly;
use crate::record::compare::ReadComparison;
use crate::record::head::RecordHead;
use crate::record::pick::{Fields, Leaf};
use crate::record::series::{
    Compared, Comparison, CyclesPenalty, PagedIn, Penalty, Picture, RunPoint, Series,
};
use crate::record::stats::{ratio, Summary};
use crate::record::verdict::{self, Figures, Verdict};
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

/// `report --json`'s document: the rows under a schema name.
pub struct ReportDocument<'a> {
    /// [`crate::record::REPORT_SCHEMA`].
    pub schema: &'static str,
    /// One row per batch, in the order given.
    pub batches: &'a [BatchRow],
    /// What was not read, each `DIR: why`.
    pub skipped: &'a [String],
    /// The boots of armed plans side by side (absent when no batch was run by `boot run`).
    pub boots: Option<&'a [crate::record::boots::BootSeries]>,
}
serialize_struct!(ReportDocument<'_> {
    schema,
    batches,
    skipped
} optional { boots });

/// One row: a batch as `report` sees it.
#[derive(Clone, Debug, Default)]
pub struct BatchRow {
    /// The directory.
    pub dir: String,
    /// The machine's host name (batch.json's `context.system.hostname`): batches gathered
    /// from many machines are grouped by host first.
    pub host: Option<String>,
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
    /// Median wall time of the warm runs: batch.json's `summary.wall_ns.warm.median`, over the
    /// runs the verdict says the table covers (`None` where every run started cold); for a
    /// batch without a verdict, of the records with role `warm`.
    pub warm_median_wall_ns: Option<f64>,
    /// The first run over the warm median (batch.json's `first_to_warm_median`; `None` where
    /// no run was first).
    pub first_to_warm: Option<f64>,
    /// Major faults of the run with role `first`.
    pub first_major_faults: Option<u64>,
    /// Block input (512-byte blocks) of the run with role `first`.
    pub first_block_in: Option<u64>,
    /// The fingerprint of the watched file set that the residency covers (batch.json's
    /// `context.file_set`; `null` for batches that predate it or watched nothing).
    pub file_set: Option<String>,
    /// That set's roots, as given, and its number of files.
    pub file_set_roots: Vec<String>,
    /// Files in that set.
    pub file_set_files: Option<u64>,
    /// Residency of the watched files before the run with role `first`.
    pub first_resident_ratio_before: Option<f64>,
    /// Counted runs.
    pub counted: u64,
    /// Rejected runs.
    pub rejected: u64,
    /// Disturbed warm runs' anomalies (batch.json's, else the records'); `None` for batches of
    /// versions that did not look.
    pub anomalies: Option<u64>,
    /// The `batch.json` schema, when there is one (`coldtrace.batch/1` to `/6`).
    pub batch_schema: Option<String>,
    /// Whether the batch finished (`batch.json` present and complete).
    pub complete: bool,
    /// The batch's own record: the first coldtrace batch since boot (`None`: not recorded —
    /// the marker was off or unknown, or the batch predates it).
    pub first_batch_since_boot: Option<bool>,
    /// The earliest of the listed batches on its boot (all `report` can know by itself).
    pub earliest_listed_on_boot: bool,
    /// The first run's penalty as the verdict gives it (`verdict.penalty_ns`, only where it
    /// found one), or a `--cold-cycles` batch's measured penalty (`cycles.penalty.per_cycle`).
    pub first_penalty_ns: Option<f64>,
    /// The verdict on the batch's first run: batch.json's (the fields a row says), or for a
    /// batch written before it, decided from `runs.jsonl` by the same function.
    pub verdict: Option<Verdict>,
    /// The group of batches on one boot and one kernel it is shown in (0, 1, … in time order).
    pub group: u64,
    /// The kernel differs from the previous listed batch's.
    pub kernel_changed: bool,
    /// batch.json's `config.warmup` (0 without batch.json).
    pub warmups: u64,
    /// batch.json's `config.prepare` was set.
    pub prepare: bool,
    /// A `--cold-cycles` batch.
    pub cycles: bool,
    /// A cold action came before the first counted run (batch.json's `config.cold_when`).
    pub cold_first: bool,
    /// Things noticed while reading (a cut last line, no batch.json, no warm run).
    pub notes: Vec<String>,
    /// batch.json's `config.cold_when` is `every_counted_run`: no run of the batch is warm,
    /// whatever role its records give the runs after the first (before coldtrace gave them
    /// role `cold`, they said `warm`). Not in `report --json` (its `notes` say it).
    pub every_run_cold: bool,
}

serialize_struct!(BatchRow {
    dir,
    host,
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
    file_set,
    file_set_roots,
    file_set_files,
    first_resident_ratio_before,
    counted,
    rejected,
    anomalies,
    batch_schema,
    complete,
    first_batch_since_boot,
    earliest_listed_on_boot,
    first_penalty_ns,
    verdict,
    group,
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
    let missing = "no batch.json (the batch did not finish)";
    if let Some(bytes) = read_document(&batch_path, missing, &mut row.notes)? {
        parse_batch_document(&bytes, &batch_path.display().to_string(), &mut row)?;
    }
    let (reader, name) = open_runs(dir)?;
    read_runs(reader, &name, &mut row)?;
    Ok(row)
}

/// A `batch.json`, read up to [`BATCH_DOCUMENT_LIMIT`]; `None` with a note in `notes` when it
/// is missing (`missing` says what that means) or too large.
fn read_document(
    path: &Path,
    missing: &str,
    notes: &mut Vec<String>,
) -> Result<Option<Vec<u8>>, ReportError> {
    match untrusted::read_bounded(path, BATCH_DOCUMENT_LIMIT) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(OpenError::Os(e)) if e == Errno::NOENT => {
            notes.push(missing.into());
            Ok(None)
        }
        Err(OpenError::TooLarge { limit }) => {
            notes.push(format!(
                "batch.json is larger than {} MiB: not read (label, kernel and completion unknown)",
                limit >> 20
            ));
            Ok(None)
        }
        Err(e) => Err(unreadable(path, e)),
    }
}

/// `DIR/runs.jsonl` opened for streaming (a regular file, opened without blocking), and its
/// name for messages.
fn open_runs(dir: &Path) -> Result<(impl io::BufRead, String), ReportError> {
    let runs_path = dir.join("runs.jsonl");
    let opened =
        untrusted::open(&runs_path, Want::Record).map_err(|e| unreadable(&runs_path, e))?;
    let reader = ChunkReader::new(fs::File::from(opened.fd));
    Ok((reader, runs_path.display().to_string()))
}

thread_local! {
    /// One read buffer per thread, reused for every `runs.jsonl` it reads: a fresh 64 KiB
    /// buffer per batch cost an `mmap`/`munmap` pair each, and with several reading threads
    /// every `munmap` is a TLB shootdown on the other CPUs (10,000 batches: 9,500 of each).
    static CHUNK: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// A buffered reader whose buffer is the thread's [`CHUNK`], taken for its life and given back
/// when dropped.
struct ChunkReader {
    file: fs::File,
    buf: Vec<u8>,
    pos: usize,
    filled: usize,
}

impl ChunkReader {
    fn new(file: fs::File) -> ChunkReader {
        let mut buf = CHUNK.with(|c| c.take());
        if buf.len() < 64 * 1024 {
            buf.resize(64 * 1024, 0);
        }
        ChunkReader {
            file,
            buf,
            pos: 0,
            filled: 0,
        }
    }
}

impl Drop for ChunkReader {
    fn drop(&mut self) {
        let buf = std::mem::take(&mut self.buf);
        CHUNK.with(|c| c.replace(buf));
    }
}

impl Read for ChunkReader {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let available = io::BufRead::fill_buf(self)?;
        let n = available.len().min(out.len());
        out[..n].copy_from_slice(&available[..n]);
        io::BufRead::consume(self, n);
        Ok(n)
    }
}

impl BufRead for ChunkReader {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        if self.pos >= self.filled {
            self.filled = self.file.read(&mut self.buf)?;
            self.pos = 0;
        }
        Ok(&self.buf[self.pos..self.filled])
    }

    fn consume(&mut self, amount: usize) {
        self.pos = (self.pos + amount).min(self.filled);
    }
}

/// Parses the bytes of a `batch.json` into `row` (label, kernel, whether the batch finished).
/// `name` is how errors name the file (`read_batch` passes its path).
///
/// # Errors
/// Not valid JSON, or not a `coldtrace.batch/1` to `/6` document: one line naming `name` and a
/// line.
pub fn parse_batch_document(
    bytes: &[u8],
    name: &str,
    row: &mut BatchRow,
) -> Result<(), ReportError> {
    let doc = BatchFields::pick(bytes)
        .map_err(|e| ReportError(format!("{name}: line {}: not valid JSON ({e})", e.line())))?;
    let schema = doc.str(BatchFields::SCHEMA);
    let known = crate::record::BATCH_SCHEMAS_READ;
    if !schema.is_some_and(|s| known.contains(&s)) {
        return Err(ReportError(format!(
            "{name}: line 1: not a coldtrace batch document (schema is not {})",
            known.join(", ")
        )));
    }
    row.batch_schema = schema.map(str::to_owned);
    boot_and_penalty(&doc, row);
    row.anomalies = doc.array(BatchFields::ANOMALIES).map(|a| a.len() as u64);
    row.label = doc.string(BatchFields::LABEL);
    row.kernel = doc.string(BatchFields::KERNEL);
    row.complete = doc.bool(BatchFields::COMPLETE).unwrap_or(false);
    if !row.complete {
        let why = doc
            .str(BatchFields::INTERRUPTED_BY)
            .map(|s| format!("interrupted by {}", one_line(s)));
        row.notes
            .push(why.unwrap_or_else(|| "stopped early".into()));
    }
    Ok(())
}

/// The fields of a `batch.json` a row needs, picked without building the document
/// (see [`crate::record::pick`]), and their indices in the [`Fields`] picked.
struct BatchFields;

impl BatchFields {
    const PATHS: [&'static [&'static str]; 26] = [
        &["schema"],
        &["anomalies"],
        &["label"],
        &["context", "system", "kernel_release"],
        &["complete"],
        &["interrupted_by"],
        &["context", "system", "hostname"],
        &["context", "system", "boot_id"],
        &["context", "system", "uptime_s"],
        &["context", "boot_marker", "first_batch_since_boot"],
        &["config", "warmup"],
        &["config", "cold_when"],
        &["context", "file_set", "fingerprint"],
        &["context", "file_set", "files"],
        &["context", "file_set", "roots"],
        &["cycles", "penalty", "per_cycle", "mean_wall_ns"],
        &["config", "prepare"],
        &["verdict", "kind"],
        &["verdict", "counted"],
        &["verdict", "penalty_ns"],
        &["verdict", "states"],
        &["verdict", "first_read_bytes"],
        &["verdict", "first_wall_ns"],
        &["summary", "wall_ns", "warm", "median"],
        &["summary", "wall_ns", "first_to_warm_median"],
        &["verdict", "first_wrote_caches"],
    ];
    const SCHEMA: usize = 0;
    const ANOMALIES: usize = 1;
    const LABEL: usize = 2;
    const KERNEL: usize = 3;
    const COMPLETE: usize = 4;
    const INTERRUPTED_BY: usize = 5;
    const HOSTNAME: usize = 6;
    const BOOT_ID: usize = 7;
    const UPTIME_S: usize = 8;
    const FIRST_BATCH_SINCE_BOOT: usize = 9;
    const WARMUP: usize = 10;
    const COLD_WHEN: usize = 11;
    const FINGERPRINT: usize = 12;
    const FILES: usize = 13;
    const ROOTS: usize = 14;
    const CYCLES_PENALTY_NS: usize = 15;
    const PREPARE: usize = 16;
    /// `verdict`'s kind, counted, penalty_ns, states, first_read_bytes, first_wall_ns.
    const VERDICT: usize = 17;
    /// The table's warm median wall time and first/warm ratio, over the runs it covers.
    const WARM_MEDIAN: usize = 23;
    const FIRST_TO_WARM: usize = 24;
    /// `verdict.first_wrote_caches`, which its one line says too.
    const WROTE_CACHES: usize = 25;

    fn pick(bytes: &[u8]) -> Result<Fields<'_>, serde_json::Error> {
        crate::record::pick::pick(bytes, &Self::PATHS)
    }
}

/// The fields of `verdict` a row says (its one line), `None` for a document without one.
fn verdict_fields(doc: &Fields<'_>) -> Option<Verdict> {
    let at = |k: usize| BatchFields::VERDICT + k;
    let states = doc.array(at(3)).map_or(Vec::new(), |a| {
        a.iter()
            .filter_map(Leaf::as_str)
            .map(str::to_owned)
            .collect()
    });
    let brief = Verdict::brief(
        doc.str(at(0))?,
        doc.u64(at(1)).unwrap_or(0),
        doc.f64(at(2)),
        &states,
        (doc.f64(at(4)), doc.f64(at(5))),
    )?;
    Some(Verdict {
        first_wrote_caches: doc.u64(BatchFields::WROTE_CACHES),
        ..brief
    })
}

/// What batch.json knows of the boot (also for `--minimal` batches, whose records have no boot
/// ID) and the first-run penalty it computed.
fn boot_and_penalty(doc: &Fields<'_>, row: &mut BatchRow) {
    row.host = doc.str(BatchFields::HOSTNAME).map(one_line);
    row.boot_id = doc.string(BatchFields::BOOT_ID);
    row.uptime_s = doc.f64(BatchFields::UPTIME_S);
    row.first_batch_since_boot = doc.bool(BatchFields::FIRST_BATCH_SINCE_BOOT);
    row.verdict = verdict_fields(doc);
    // The figures the batch's table gave, over the runs the verdict says they cover (none
    // where every run started cold); a batch without a verdict has them from its records.
    if let Some(v) = &row.verdict {
        let warm = v.kind != verdict::Kind::EveryRunCold;
        row.warm_median_wall_ns = doc.f64(BatchFields::WARM_MEDIAN).filter(|_| warm);
        row.first_to_warm = doc.f64(BatchFields::FIRST_TO_WARM).filter(|_| warm);
    }
    row.warmups = doc.u64(BatchFields::WARMUP).unwrap_or(0);
    row.prepare = doc.str(BatchFields::PREPARE).is_some();
    row.cold_first = doc.str(BatchFields::COLD_WHEN).is_some();
    row.cycles = doc.f64(BatchFields::CYCLES_PENALTY_NS).is_some()
        || doc.str(BatchFields::COLD_WHEN) == Some("first_run_of_each_cycle");
    // A `--cold-cycles` batch's measured penalty is its cycles'; any other's, the verdict's.
    row.first_penalty_ns = doc.f64(BatchFields::CYCLES_PENALTY_NS).or(row
        .verdict
        .as_ref()
        .filter(|v| v.kind == verdict::Kind::Penalty)
        .and_then(|v| v.penalty_ns));
    row.every_run_cold = doc.str(BatchFields::COLD_WHEN) == Some("every_counted_run");
    row.file_set = doc.str(BatchFields::FINGERPRINT).map(one_line);
    row.file_set_files = doc.u64(BatchFields::FILES);
    row.file_set_roots = doc.array(BatchFields::ROOTS).map_or(Vec::new(), |roots| {
        roots
            .iter()
            .filter_map(Leaf::as_str)
            .map(one_line)
            .collect()
    });
}

/// Parses the bytes of a `runs.jsonl` into `row`: boot, start, counted and rejected runs, the
/// first run's figures and the warm median. A cut last line (no `\n`, not valid JSON) is
/// skipped with a note; `name` is how errors name the file.
///
/// # Errors
/// Any other malformed line, or a record whose schema is not `coldtrace.run/1` to `/4`: one line
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
    reader: impl io::BufRead,
    name: &str,
    row: &mut BatchRow,
) -> Result<(), ReportError> {
    let mut runs = Runs::default();
    read_lines(reader, name, |line| runs.take(line, name, row))?;
    runs.finish(row);
    Ok(())
}

/// Hands every line of `reader` (with its `\n`, if any) to `each` until it says stop: memory
/// is one line, at most [`RECORD_LINE_LIMIT`]. A line that lies whole in the reader's buffer is
/// handed over where it lies; only a line cut by the buffer's end (or the last one, without
/// `\n`) is gathered into a line of its own. A fleet's report reads a million lines: on one CPU
/// it took 4.5 s this way, 6.0 s copying every line (medians of 5, interleaved).
///
/// # Errors
/// A read error, a line longer than the limit, or `each`'s error.
fn read_lines(
    mut reader: impl io::BufRead,
    name: &str,
    mut each: impl FnMut(&[u8]) -> Result<Flow, ReportError>,
) -> Result<(), ReportError> {
    let mut line = Vec::new();
    let mut line_no = 0u64;
    let failed = |line_no: u64, e: &io::Error| {
        ReportError(format!(
            "{name}: line {}: {}",
            line_no + 1,
            crate::record::artifacts::explain(e)
        ))
    };
    loop {
        let buffered = reader.fill_buf().map_err(|e| failed(line_no, &e))?;
        if buffered.is_empty() {
            return Ok(());
        }
        if let Some(end) = memchr_newline(buffered) {
            line_no += 1;
            let flow = each(&buffered[..=end])?;
            reader.consume(end + 1);
            if flow == Flow::Stop {
                return Ok(());
            }
            continue;
        }
        line.clear();
        let n = (&mut reader)
            .take(RECORD_LINE_LIMIT + 1)
            .read_until(b'\n', &mut line)
            .map_err(|e| failed(line_no, &e))?;
        if n == 0 {
            return Ok(());
        }
        line_no += 1;
        if line.len() as u64 > RECORD_LINE_LIMIT {
            return Err(ReportError(format!(
                "{name}: line {line_no}: longer than {} MiB, not a record coldtrace wrote",
                RECORD_LINE_LIMIT >> 20
            )));
        }
        if each(&line)? == Flow::Stop {
            return Ok(());
        }
    }
}

/// Where the first `\n` of `bytes` is, eight bytes at a time. A record line is about 1.3 KiB,
/// and a byte loop at this crate's `opt-level = "z"` made a million-record report take 5.5 s
/// on one CPU against 4.5 s (medians of 5, interleaved).
fn memchr_newline(bytes: &[u8]) -> Option<usize> {
    const ONES: u64 = u64::from_ne_bytes([0x01; 8]);
    const HIGHS: u64 = u64::from_ne_bytes([0x80; 8]);
    const NEWLINES: u64 = u64::from_ne_bytes([b'\n'; 8]);
    let mut words = bytes.chunks_exact(8);
    let mut start = 0;
    for word in &mut words {
        let mut eight = [0u8; 8];
        eight.copy_from_slice(word);
        let x = u64::from_ne_bytes(eight) ^ NEWLINES;
        // A zero byte in `x` (a `\n` in the word) sets its high bit here; no other byte can
        // make this non-zero without a zero byte at or before it.
        if x.wrapping_sub(ONES) & !x & HIGHS != 0 {
            break;
        }
        start += 8;
    }
    bytes[start..]
        .iter()
        .position(|&b| b == b'\n')
        .map(|i| start + i)
}

/// One line of `runs.jsonl` (with its `\n`, if any) as a record; `None` for a cut last line
/// (no `\n`, not valid JSON: what a crash mid-write leaves), with a note in `notes`.
///
/// # Errors
/// Any other malformed line, or a record whose schema is not `coldtrace.run/1` to `/4`: one line naming
/// `name` and the line number (1-based).
fn record_line(
    line: &[u8],
    line_no: u64,
    name: &str,
    notes: &mut Vec<String>,
) -> Result<Option<Value>, ReportError> {
    let record: Value = match serde_json::from_slice(line) {
        Ok(v) => v,
        Err(_) if line.last() != Some(&b'\n') => {
            notes.push(format!("runs.jsonl line {line_no} is cut short (skipped)"));
            return Ok(None);
        }
        Err(e) => {
            return Err(ReportError(format!(
                "{name}: line {line_no}: not a valid record ({e}); the file is damaged"
            )))
        }
    };
    if !crate::record::is_run_schema(record.get("schema").and_then(Value::as_str)) {
        return Err(ReportError(format!(
            "{name}: line {line_no}: not a coldtrace run record (schema is not {})",
            crate::record::RUN_SCHEMAS_READ.join(" or ")
        )));
    }
    Ok(Some(record))
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
    /// Counted runs after the first that started cold (role `cold`, or any in a batch with a
    /// cold action before every counted run).
    cold_after_first: u64,
    /// Anomalies the records flagged as they ended (`None`: records without the field).
    anomalies: Option<u64>,
    /// For a batch whose batch.json has no verdict: every counted run's figures, to decide it.
    old: Option<OldRuns>,
}

/// The scheduler tick of the kernel `report` runs on, read once: an older batch's verdict is
/// decided with it (the batch did not record its own).
fn this_kernels_tick_ns() -> u64 {
    static TICK: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *TICK.get_or_init(|| crate::measure::tick::Tick::read().ns)
}

/// What a verdict is decided from, gathered from the records of a batch written before the
/// verdict was stored.
#[derive(Default)]
pub struct OldRuns {
    first: Option<verdict::First>,
    rest: Vec<Figures>,
    disturbed: Vec<RunAnomaly>,
}

impl OldRuns {
    /// The verdict, by the same function as a batch's own, with what batch.json said of the
    /// batch in `row` (warm-ups, cycles, `--prepare`, a cold action before every run).
    fn decide(self, row: &BatchRow) -> Verdict {
        let setting = verdict::Setting {
            warmups: row.warmups,
            cycles: row.cycles,
            prepare: row.prepare,
            cold_every_run: row.every_run_cold,
            cold_first: row.cold_first,
            tick_ns: this_kernels_tick_ns(),
        };
        verdict::decide(self.first, &self.rest, &self.disturbed, setting)
    }

    /// One record: the first run, or a counted run after it (with its own anomalies).
    fn take(&mut self, record: &Value) {
        let role = record.get("role").and_then(Value::as_str);
        let counted = record.get("counted").and_then(Value::as_bool) == Some(true);
        let figures = Figures::of_json(record);
        match role {
            Some("first") => self.first = Some(verdict::First { figures, counted }),
            Some("warm" | "cold") if counted => {
                let flagged = record.get("anomalies").and_then(Value::as_array);
                for a in flagged.into_iter().flatten() {
                    let kind = match a.get("kind").and_then(Value::as_str) {
                        Some("cached_before_fell") => "cached_before_fell",
                        Some("not_cold") => "not_cold",
                        _ => "storage_reads",
                    };
                    self.disturbed.push(RunAnomaly {
                        index: figures.index,
                        anomaly: crate::record::run::Anomaly {
                            kind,
                            metric: "block_in",
                            value: figures.read_bytes.unwrap_or(0.0) / 512.0,
                            reference: 0.0,
                            rule: "",
                            mapped_by: None,
                        },
                    });
                }
                self.rest.push(figures);
            }
            _ => {}
        }
    }
}

impl Runs {
    /// One line (with its `\n`, if any) into `row`.
    fn take(&mut self, line: &[u8], name: &str, row: &mut BatchRow) -> Result<Flow, ReportError> {
        self.line_no += 1;
        // Most lines give a row five fields: parse only those (see `head.rs`). The first line
        // (start, boot, label) and the run with role `first` (its figures) are read whole, and
        // so is anything the quick parse does not expect, which then gets the precise error.
        if self.line_no == 1 && row.verdict.is_none() {
            self.old = Some(OldRuns::default());
        }
        if let Some(old) = self.old.as_mut() {
            if let Some(record) = record_line(line, self.line_no, name, &mut Vec::new())? {
                old.take(&record);
            }
        }
        if self.line_no > 1 {
            if let Some(head) = RecordHead::parse(line) {
                if crate::record::is_run_schema(head.schema) && head.role != Some("first") {
                    self.tally(&head, row);
                    return Ok(Flow::Next);
                }
            }
        }
        let Some(record) = record_fields(line, self.line_no, name, &mut row.notes)? else {
            return Ok(Flow::Stop);
        };
        // From the first record (batch.json's context may have given the boot already).
        if self.line_no == 1 {
            row.started_at = record.string(RecordFields::STARTED_AT);
            if let Some(boot) = record.string(RecordFields::BOOT_ID) {
                row.boot_id = Some(boot);
                row.uptime_s = record.f64(RecordFields::UPTIME_S).or(row.uptime_s);
            }
        }
        if row.label.is_none() {
            row.label = record.string(RecordFields::LABEL);
        }
        let head = RecordHead {
            schema: record.str(RecordFields::SCHEMA),
            role: record.str(RecordFields::ROLE),
            counted: record.bool(RecordFields::COUNTED),
            wall_ns: record.f64(RecordFields::WALL_NS),
            anomalies: record
                .array(RecordFields::ANOMALIES)
                .map(|a| a.len() as u64),
        };
        if head.role == Some("first") {
            first_figures(&record, head.counted.unwrap_or(false), row);
        }
        self.tally(&head, row);
        Ok(Flow::Next)
    }

    /// What every record adds to the row: counted or rejected, flagged, its wall time.
    fn tally(&mut self, head: &RecordHead<'_>, row: &mut BatchRow) {
        let role = head.role.unwrap_or("");
        let counted = head.counted.unwrap_or(false);
        if role != "warmup" && !counted {
            row.rejected += 1;
        }
        if let Some(flagged) = head.anomalies {
            *self.anomalies.get_or_insert(0) += flagged;
        }
        if counted {
            row.counted += 1;
            match role {
                "first" => {}
                "cold" => self.cold_after_first += 1,
                _ if row.every_run_cold => self.cold_after_first += 1,
                _ => self.warm_walls.extend(head.wall_ns),
            }
        }
    }

    /// After the last line: the warm median, the ratio and the notes.
    fn finish(self, row: &mut BatchRow) {
        if self.line_no == 0 {
            row.notes.push("runs.jsonl is empty".into());
        }
        if self.old.is_some() || row.batch_schema.is_none() {
            row.warm_median_wall_ns = Summary::of(&self.warm_walls).map(|s| s.median);
            if row.first_rejected.is_none() {
                row.first_to_warm = ratio(row.first_wall_ns, row.warm_median_wall_ns);
            }
        }
        if self.warm_walls.is_empty() && self.cold_after_first > 0 {
            row.notes.push(format!(
                "no warm run: the {} counted run{} after the first started cold (a cold action \
                 before each), so there is no warm median and no first-run penalty",
                self.cold_after_first,
                if self.cold_after_first == 1 { "" } else { "s" }
            ));
        }
        if let Some(old) = self.old {
            let decided = old.decide(row);
            if row.first_penalty_ns.is_none() && decided.kind == verdict::Kind::Penalty {
                row.first_penalty_ns = decided.penalty_ns;
            }
            row.verdict = Some(decided);
        }
        note_promoted_first(row);
        // batch.json's count judges the whole warm series; the records', what was known as each
        // run ended (an unfinished batch has only those).
        if row.anomalies.is_none() {
            row.anomalies = self.anomalies;
        }
    }
}

/// The figures of the run with role `first`, counted or rejected (a rejected one is shown as
/// such, never replaced by the next counted run).
fn first_figures(record: &Fields<'_>, counted: bool, row: &mut BatchRow) {
    row.first_wall_ns = record.f64(RecordFields::WALL_NS);
    row.first_major_faults = record.u64(RecordFields::MAJOR_FAULTS);
    row.first_block_in = record.u64(RecordFields::BLOCK_IN);
    row.first_resident_ratio_before = record.f64(RecordFields::RESIDENT_RATIO_BEFORE);
    if !counted {
        let reason = record
            .string(RecordFields::FAILURE_REASON)
            .unwrap_or_else(|| "not counted".into());
        let index = record
            .u64(RecordFields::INDEX)
            .map_or(String::new(), |i| format!("#{i}: "));
        row.first_rejected = Some(one_line(&format!("{index}{reason}")));
    }
}

/// The fields of a record a row takes from its first line and from the run with role
/// `first`, picked without building the record (see [`crate::record::pick`]), and their
/// indices in the [`Fields`] picked.
struct RecordFields;

impl RecordFields {
    const PATHS: [&'static [&'static str]; 14] = [
        &["schema"],
        &["role"],
        &["counted"],
        &["wall_ns"],
        &["anomalies"],
        &["started_at"],
        &["boot_id"],
        &["uptime_s"],
        &["label"],
        &["rusage", "major_faults"],
        &["rusage", "block_in"],
        &["cache", "before", "resident_ratio"],
        &["failure_reason"],
        &["index"],
    ];
    const SCHEMA: usize = 0;
    const ROLE: usize = 1;
    const COUNTED: usize = 2;
    const WALL_NS: usize = 3;
    const ANOMALIES: usize = 4;
    const STARTED_AT: usize = 5;
    const BOOT_ID: usize = 6;
    const UPTIME_S: usize = 7;
    const LABEL: usize = 8;
    const MAJOR_FAULTS: usize = 9;
    const BLOCK_IN: usize = 10;
    const RESIDENT_RATIO_BEFORE: usize = 11;
    const FAILURE_REASON: usize = 12;
    const INDEX: usize = 13;
}

/// As [`record_line`], with only the fields of [`RecordFields`] picked. A line the picker
/// cannot take goes through [`record_line`], which gives the cut-line note or the precise error.
fn record_fields<'de>(
    line: &'de [u8],
    line_no: u64,
    name: &str,
    notes: &mut Vec<String>,
) -> Result<Option<Fields<'de>>, ReportError> {
    let record = match crate::record::pick::pick(line, &RecordFields::PATHS) {
        Ok(found) => found,
        Err(_) => {
            return match record_line(line, line_no, name, notes)? {
                None => Ok(None),
                // A whole parse takes every line the picker takes (a JSON object or not JSON).
                Some(_) => Err(ReportError(format!(
                    "{name}: line {line_no}: not a coldtrace run record (not a JSON object)"
                ))),
            };
        }
    };
    if !crate::record::is_run_schema(record.str(RecordFields::SCHEMA)) {
        return Err(ReportError(format!(
            "{name}: line {line_no}: not a coldtrace run record (schema is not {})",
            crate::record::RUN_SCHEMAS_READ.join(" or ")
        )));
    }
    Ok(Some(record))
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
/// order of their start times. A batch that cannot be read (damaged, or not a batch) is left
/// out and named, with why, in the second list; the others are read all the same.
pub fn read_all(dirs: &[PathBuf]) -> (Vec<BatchRow>, Vec<String>) {
    let mut batches = Vec::new();
    let mut skipped = Vec::new();
    for dir in dirs {
        match comparison_members(dir) {
            Ok(Some(members)) => batches.extend(members),
            Ok(None) => batches.push(dir.clone()),
            Err(e) => skipped.push(e.0),
        }
    }
    let mut rows = Vec::with_capacity(batches.len());
    for read in read_in_parallel(&batches) {
        match read {
            Ok(row) => rows.push(row),
            Err(e) => skipped.push(e.0),
        }
    }
    (grouped(rows), skipped)
}

/// [`read_batch`] of every directory, on as many threads as there are CPUs (at most 8): the
/// batches are independent, and parsing their records is the whole cost of a fleet's report.
/// Each thread holds one line at a time; the rows come back in the order of `dirs`, each read
/// or why not.
fn read_in_parallel(dirs: &[PathBuf]) -> Vec<Result<BatchRow, ReportError>> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Mutex;
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, 8)
        .min(dirs.len().max(1));
    if threads == 1 {
        return dirs.iter().map(|d| read_batch(d)).collect();
    }
    let next = AtomicUsize::new(0);
    let slots: Mutex<Vec<Option<Result<BatchRow, ReportError>>>> =
        Mutex::new((0..dirs.len()).map(|_| None).collect());
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(dir) = dirs.get(i) else { break };
                let read = read_batch(dir);
                if let Ok(mut slots) = slots.lock() {
                    slots[i] = Some(read);
                }
            });
        }
    });
    let slots = slots.into_inner().unwrap_or_default();
    slots
        .into_iter()
        .map(|slot| slot.unwrap_or_else(|| Err(ReportError("a batch was not read".into()))))
        .collect()
}

/// Every comparison directory among `dirs`, its document read back (`DIR/batch.json`): the
/// ratios, intervals and conclusion `compare` printed. A comparison that did not finish has
/// no document, and is left out (its rows say so); one whose document cannot be read, or that
/// lost a command's batch (its directory under `commands/` is gone), is named in the second
/// list.
pub fn read_comparisons(dirs: &[PathBuf]) -> (Vec<(String, ReadComparison)>, Vec<String>) {
    let mut found = Vec::new();
    let mut skipped = Vec::new();
    for dir in dirs {
        let members = match comparison_members(dir) {
            Ok(Some(members)) => members,
            // Not a comparison, or named by read_all already.
            Ok(None) | Err(_) => continue,
        };
        let path = dir.join("batch.json");
        let mut notes = Vec::new();
        let missing = "no batch.json (the comparison did not finish): no intervals";
        let doc = match read_document(&path, missing, &mut notes) {
            Ok(Some(bytes)) => compare_document(&bytes, &path),
            Ok(None) => continue,
            Err(e) => Err(e),
        };
        match doc {
            Ok(doc) => {
                skipped.extend(lost_commands(dir, &doc, &members));
                found.push((
                    dir.display().to_string(),
                    crate::record::compare::read_document(&doc),
                ));
            }
            Err(e) => skipped.push(e.0),
        }
    }
    (found, skipped)
}

/// `DIR/commands/NN: missing …` for each command the comparison document names whose batch
/// directory is not there.
fn lost_commands(dir: &Path, doc: &Value, members: &[PathBuf]) -> Vec<String> {
    let commands = doc.get("commands").and_then(Value::as_array);
    commands
        .into_iter()
        .flatten()
        .filter_map(|c| {
            let rel = str_at(c, &["dir"])?;
            let path = dir.join(&rel);
            if members.contains(&path) {
                return None;
            }
            let shown = str_at(c, &["name"]).or_else(|| str_at(c, &["command"]));
            Some(format!(
                "{}: missing, the batch of command {} ({}) of this comparison: its row is not \
                 shown, its ratios are as the comparison recorded them",
                path.display(),
                u64_at(c, &["index"]).unwrap_or_default(),
                one_line(&shown.unwrap_or_default())
            ))
        })
        .collect()
}

/// The rows in time order, grouped by boot and kernel (groups in the order of their earliest
/// batch), each marked with its group, whether it is the earliest listed on its boot, and
/// whether its kernel differs from the batch before it in time.
pub fn grouped(mut rows: Vec<BatchRow>) -> Vec<BatchRow> {
    rows.sort_by(|a, b| a.started_at.cmp(&b.started_at));
    let mut groups: Vec<(Option<String>, Option<String>, Option<String>)> = Vec::new();
    let mut seen_boots: Vec<String> = Vec::new();
    let mut previous_kernel: Option<String> = None;
    for row in &mut rows {
        let key = (row.host.clone(), row.boot_id.clone(), row.kernel.clone());
        row.group = match groups.iter().position(|g| *g == key) {
            Some(i) => i as u64,
            None => {
                groups.push(key);
                groups.len() as u64 - 1
            }
        };
        if let Some(boot) = &row.boot_id {
            if !seen_boots.contains(boot) {
                seen_boots.push(boot.clone());
                row.earliest_listed_on_boot = true;
            }
        }
        if let (Some(prev), Some(kernel)) = (&previous_kernel, &row.kernel) {
            row.kernel_changed = prev != kernel;
        }
        if row.kernel.is_some() {
            previous_kernel = row.kernel.clone();
        }
    }
    rows.sort_by_key(|r| r.group);
    rows
}

/// The most buckets of runs a batch's strip keeps: about one per pixel column of the picture.
pub const PICTURE_BUCKETS: usize = 512;
/// A comparison of more commands than this draws its commands side by side only (their own
/// strips would make a page each); their batches are then kept at a few buckets each.
pub const PICTURE_COMMAND_STRIPS: usize = 12;

/// Reads every directory for the picture: a batch as its runs in order, a comparison as its
/// commands side by side. `runs.jsonl` is read line by line, never whole. What cannot be read
/// is left out of the picture (the table names it).
pub fn read_pictures(dirs: &[PathBuf]) -> Vec<Picture> {
    let mut pictures = Vec::new();
    for dir in dirs {
        let picture = match comparison_members(dir) {
            Ok(Some(members)) => read_comparison(dir, &members).map(Picture::Comparison),
            Ok(None) => read_series(dir, PICTURE_BUCKETS).map(|s| Picture::Batch(Box::new(s))),
            Err(e) => Err(e),
        };
        pictures.extend(picture.ok());
    }
    pictures
}

/// A comparison directory: each member batch, named and compared as `DIR/batch.json`
/// (`coldtrace.compare/1`) says, when it is there.
fn read_comparison(dir: &Path, members: &[PathBuf]) -> Result<Comparison, ReportError> {
    let mut comparison = Comparison {
        dir: dir.display().to_string(),
        ..Comparison::default()
    };
    let doc_path = dir.join("batch.json");
    let missing = "no batch.json (the comparison did not finish): no intervals";
    let doc = match read_document(&doc_path, missing, &mut comparison.notes)? {
        Some(bytes) => Some(compare_document(&bytes, &doc_path)?),
        None => None,
    };
    comparison.confidence = doc.as_ref().and_then(|d| str_at(d, &["confidence"]));
    let cap = if members.len() > PICTURE_COMMAND_STRIPS {
        8
    } else {
        PICTURE_BUCKETS
    };
    for (position, member) in members.iter().enumerate() {
        // A member that cannot be read is left out (the table names it).
        let Ok(series) = read_series(member, cap) else {
            continue;
        };
        comparison
            .commands
            .push(compared(doc.as_ref(), member, position, series));
    }
    Ok(comparison)
}

fn compare_document(bytes: &[u8], path: &Path) -> Result<Value, ReportError> {
    let name = path.display();
    let doc: Value = serde_json::from_slice(bytes)
        .map_err(|e| ReportError(format!("{name}: line {}: not valid JSON ({e})", e.line())))?;
    if doc.get("schema").and_then(Value::as_str) != Some(crate::record::COMPARE_SCHEMA) {
        return Err(ReportError(format!(
            "{name}: line 1: not a coldtrace comparison document (schema is not {})",
            crate::record::COMPARE_SCHEMA
        )));
    }
    Ok(doc)
}

/// The member batch at `member`, with its name, parameters, ratio and interval from the
/// comparison document (matched by its directory, `commands/NN`).
fn compared(doc: Option<&Value>, member: &Path, position: usize, series: Series) -> Compared {
    let leaf = member.file_name().map(|n| n.to_string_lossy().into_owned());
    let entry = doc
        .and_then(|d| d.get("commands"))
        .and_then(Value::as_array)
        .and_then(|commands| {
            commands.iter().find(|c| {
                let dir = c.get("dir").and_then(Value::as_str).unwrap_or("");
                leaf.as_deref()
                    .is_some_and(|l| dir.rsplit('/').next() == Some(l))
            })
        });
    let index = entry.and_then(|e| u64_at(e, &["index"]));
    let name = entry
        .and_then(|e| str_at(e, &["name"]).or_else(|| str_at(e, &["command"])))
        .map_or_else(|| series.command.clone(), |n| one_line(&n));
    let parameters = entry
        .and_then(|e| e.get("parameters"))
        .and_then(Value::as_array)
        .map(|ps| {
            ps.iter()
                .filter_map(|p| {
                    Some((
                        one_line(&str_at(p, &["name"])?),
                        one_line(&str_at(p, &["value"])?),
                    ))
                })
                .collect()
        })
        .unwrap_or_default();
    let wall = doc
        .and_then(|d| d.get("comparison"))
        .and_then(Value::as_array)
        .and_then(|ms| {
            ms.iter()
                .find(|m| str_at(m, &["metric"]).as_deref() == Some("wall_ns"))
        })
        .and_then(|m| m.get("commands"))
        .and_then(Value::as_array)
        .and_then(|cs| {
            let index = index.unwrap_or(position as u64);
            cs.iter().find(|c| u64_at(c, &["command"]) == Some(index))
        });
    let ratio = wall.and_then(|w| f64_at(w, &["ratio_to_first"]));
    let interval = wall.and_then(|w| Some((f64_at(w, &["ci_low"])?, f64_at(w, &["ci_high"])?)));
    Compared {
        name,
        parameters,
        series,
        ratio,
        interval,
    }
}

/// One batch directory as its runs in order: `batch.json` (when present) for the label and the
/// first-run penalty, then `runs.jsonl` streamed.
pub fn read_series(dir: &Path, cap: usize) -> Result<Series, ReportError> {
    let mut series = Series::new(dir.display().to_string(), cap);
    let batch_path = dir.join("batch.json");
    let missing = "no batch.json (the batch did not finish)";
    let mut row = BatchRow::default();
    if let Some(bytes) = read_document(&batch_path, missing, &mut series.notes)? {
        parse_batch_document(&bytes, &batch_path.display().to_string(), &mut row)?;
        let doc: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        series.verdict = doc.get("verdict").and_then(Verdict::from_json);
        series.penalty = doc.get("first_penalty").and_then(penalty);
        series.penalty_unavailable =
            str_at(&doc, &["first_penalty_unavailable"]).map(|s| one_line(&s));
        series.cycles = doc.get("cycles").and_then(cycles_penalty);
        series.flagged = flagged_runs(&doc);
        series.noise = str_at(&doc, &["warm_noise", "rule"]).map(|r| one_line(&r));
        series.title = row.label.clone().unwrap_or_default();
        series.notes.append(&mut row.notes);
    }
    let (reader, name) = open_runs(dir)?;
    let mut old = series.verdict.is_none().then(OldRuns::default);
    stream_runs(reader, &name, &mut series, old.as_mut())?;
    if let Some(old) = old {
        series.verdict = Some(old.decide(&row));
    }
    series.title = match (series.title.is_empty(), series.command.is_empty()) {
        (false, false) if series.title != series.command => {
            format!("{} — {}", series.title, series.command)
        }
        (false, _) => series.title.clone(),
        (true, false) => series.command.clone(),
        (true, true) => series.dir.clone(),
    };
    Ok(series)
}

/// `runs.jsonl` line by line into `series`: memory is one line and the series' buckets.
///
/// # Errors
/// As [`read_runs`].
pub fn stream_runs(
    reader: impl io::BufRead,
    name: &str,
    series: &mut Series,
    mut old: Option<&mut OldRuns>,
) -> Result<(), ReportError> {
    let mut line_no = 0u64;
    read_lines(reader, name, |line| {
        line_no += 1;
        let Some(record) = record_line(line, line_no, name, &mut series.notes)? else {
            return Ok(Flow::Stop);
        };
        if series.command.is_empty() {
            series.command = title_of(&record);
        }
        if series.paged_in.is_none() && str_at(&record, &["role"]).as_deref() == Some("first") {
            series.paged_in = paged_in(&record);
        }
        series.push(&run_point(&record, &series.flagged));
        if let Some(old) = old.as_mut() {
            old.take(&record);
        }
        Ok(Flow::Next)
    })?;
    if line_no == 0 {
        series.notes.push("runs.jsonl is empty".into());
    }
    Ok(())
}

/// The command of a record, quoted as a shell would take it back, on one line.
fn title_of(record: &Value) -> String {
    let argv: Vec<String> = record
        .get("argv")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|w| w.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    one_line(&crate::text::quote(&argv))
}

fn run_point(record: &Value, flagged: &[(u64, String)]) -> RunPoint {
    let role = record.get("role").and_then(Value::as_str).unwrap_or("");
    let index = u64_at(record, &["index"]).unwrap_or(0);
    let own = record
        .get("anomalies")
        .and_then(Value::as_array)
        .and_then(|a| a.first())
        .map(anomaly_words);
    let judged = || {
        flagged
            .iter()
            .find(|(i, _)| *i == index)
            .map(|(_, w)| w.clone())
    };
    RunPoint {
        index,
        first: role == "first",
        warmup: role == "warmup",
        cold: role == "cold",
        counted: record
            .get("counted")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        wall_ns: f64_at(record, &["wall_ns"]),
        disturbed: own.or_else(judged),
        failure_reason: str_at(record, &["failure_reason"]).map(|s| one_line(&s)),
        uptime_s: f64_at(record, &["uptime_s"]),
    }
}

/// An anomaly (`{kind, metric, value, reference, rule}`) in a few words, on one line.
fn anomaly_words(a: &Value) -> String {
    let field = |k: &str| str_at(a, &[k]).unwrap_or_default();
    let number = |k: &str| f64_at(a, &[k]).map_or("?".into(), |v| format!("{v:.0}"));
    one_line(&format!(
        "{} {} (vs {}: {})",
        field("metric"),
        number("value"),
        number("reference"),
        field("rule")
    ))
}

/// The runs batch.json's `anomalies` flags (`[{index, anomaly}]`), first reason of each.
fn flagged_runs(doc: &Value) -> Vec<(u64, String)> {
    let mut flagged: Vec<(u64, String)> = Vec::new();
    let list = doc.get("anomalies").and_then(Value::as_array);
    for entry in list.into_iter().flatten() {
        let (Some(index), Some(anomaly)) = (u64_at(entry, &["index"]), entry.get("anomaly")) else {
            continue;
        };
        if !flagged.iter().any(|(i, _)| *i == index) {
            flagged.push((index, anomaly_words(anomaly)));
        }
    }
    flagged
}

/// The files of a record's `paged_in` (largest first, at most [`PAGED_IN_DRAWN`]) and its
/// totals; `None` when the record lists none.
fn paged_in(record: &Value) -> Option<PagedIn> {
    let listed = record.get("paged_in").and_then(Value::as_array)?;
    let files: Vec<(String, u64)> = listed
        .iter()
        .filter_map(|f| Some((one_line(&str_at(f, &["path"])?), u64_at(f, &["bytes"])?)))
        .take(PAGED_IN_DRAWN)
        .collect();
    (!files.is_empty()).then(|| PagedIn {
        files,
        total_files: u64_at(record, &["cache", "paged_in_files"]),
        total_bytes: u64_at(record, &["cache", "paged_in_bytes"]),
    })
}

/// The most paged-in files the picture draws.
pub const PAGED_IN_DRAWN: usize = 10;

/// `cycles` of a batch document: its penalty, `None` when there is none.
fn cycles_penalty(v: &Value) -> Option<CyclesPenalty> {
    let p = v.get("penalty").filter(|p| p.is_object())?;
    let pair = |lo: Option<f64>, hi: Option<f64>| lo.zip(hi);
    let per = p.get("per_cycle").filter(|c| c.is_object());
    let at = |path: &[&str]| per.and_then(|c| f64_at(c, path));
    let parts = match (at(&["cpu_ns"]), at(&["runqueue_ns"]), at(&["blocked_ns"])) {
        (Some(c), Some(r), Some(b)) => Some([c, r, b]),
        _ => None,
    };
    Some(CyclesPenalty {
        cycles: u64_at(v, &["cycles"]).unwrap_or(0),
        runs_per_cycle: u64_at(v, &["runs_per_cycle"]).unwrap_or(0),
        cold_median_ns: f64_at(p, &["cold_median_wall_ns"])?,
        warm_median_ns: f64_at(p, &["warm_median_wall_ns"])?,
        ratio: f64_at(p, &["ratio"]),
        ratio_interval: pair(f64_at(p, &["ci_low"]), f64_at(p, &["ci_high"])),
        per_cycle_ns: at(&["mean_wall_ns"]),
        per_cycle_n: per.and_then(|c| u64_at(c, &["cycles"])).unwrap_or(0),
        per_cycle_interval: pair(at(&["ci_low_ns"]), at(&["ci_high_ns"])),
        no_interval: str_at(p, &["no_interval"])
            .or_else(|| per.and_then(|c| str_at(c, &["no_interval"])))
            .map(|s| one_line(&s)),
        parts,
    })
}

/// `first_penalty` of a batch document; `None` when it is null or lacks its wall times.
fn penalty(v: &Value) -> Option<Penalty> {
    Some(Penalty {
        first_index: u64_at(v, &["first_index"])?,
        reference_index: u64_at(v, &["reference_index"])?,
        first_wall_ns: f64_at(v, &["first_wall_ns"])?,
        reference_wall_ns: f64_at(v, &["reference_wall_ns"])?,
        wall_ns: f64_at(v, &["wall_ns"])?,
        cpu_ns: f64_at(v, &["cpu_ns"]),
        runqueue_ns: f64_at(v, &["runqueue_ns"]),
        blocked_ns: f64_at(v, &["blocked_ns"]),
        basis: str_at(v, &["basis"]).map_or_else(|| "unknown".into(), |b| one_line(&b)),
        tree: (|| {
            let part = |k: &str| f64_at(v, &["tree", k]);
            Some([
                part("on_cpu_ns")?,
                part("queued_ns")?,
                part("uninterruptible_ns")?,
                part("sleeping_ns")?,
            ])
        })(),
        tree_tasks: u64_at(v, &["tree", "tasks"]),
        tree_unavailable: str_at(v, &["tree", "unavailable"]).map(|s| one_line(&s)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A document holding, at every path of `paths`, the path itself as a string.
    fn document_naming(paths: &[&[&str]]) -> String {
        let mut doc = serde_json::Map::new();
        for path in paths {
            let mut at = &mut doc;
            for key in &path[..path.len() - 1] {
                at = at
                    .entry(key.to_string())
                    .or_insert_with(|| Value::Object(serde_json::Map::new()))
                    .as_object_mut()
                    .unwrap();
            }
            at.insert(
                path[path.len() - 1].to_string(),
                Value::from(path.join(".")),
            );
        }
        Value::Object(doc).to_string()
    }

    #[test]
    fn every_field_index_names_its_path() {
        let text = document_naming(&BatchFields::PATHS);
        let doc = BatchFields::pick(text.as_bytes()).unwrap();
        for (i, want) in [
            (BatchFields::SCHEMA, "schema"),
            (BatchFields::ANOMALIES, "anomalies"),
            (BatchFields::LABEL, "label"),
            (BatchFields::KERNEL, "context.system.kernel_release"),
            (BatchFields::COMPLETE, "complete"),
            (BatchFields::INTERRUPTED_BY, "interrupted_by"),
            (BatchFields::HOSTNAME, "context.system.hostname"),
            (BatchFields::BOOT_ID, "context.system.boot_id"),
            (BatchFields::UPTIME_S, "context.system.uptime_s"),
            (
                BatchFields::FIRST_BATCH_SINCE_BOOT,
                "context.boot_marker.first_batch_since_boot",
            ),
            (BatchFields::WARMUP, "config.warmup"),
            (BatchFields::COLD_WHEN, "config.cold_when"),
            (BatchFields::FINGERPRINT, "context.file_set.fingerprint"),
            (BatchFields::FILES, "context.file_set.files"),
            (BatchFields::ROOTS, "context.file_set.roots"),
            (
                BatchFields::CYCLES_PENALTY_NS,
                "cycles.penalty.per_cycle.mean_wall_ns",
            ),
            (BatchFields::PREPARE, "config.prepare"),
            (BatchFields::VERDICT, "verdict.kind"),
            (BatchFields::VERDICT + 3, "verdict.states"),
            (BatchFields::VERDICT + 5, "verdict.first_wall_ns"),
            (BatchFields::WARM_MEDIAN, "summary.wall_ns.warm.median"),
            (
                BatchFields::FIRST_TO_WARM,
                "summary.wall_ns.first_to_warm_median",
            ),
        ] {
            assert_eq!(doc.str(i), Some(want), "batch field {i}");
        }
        let text = document_naming(&RecordFields::PATHS);
        let record = crate::record::pick::pick(text.as_bytes(), &RecordFields::PATHS).unwrap();
        for (i, want) in [
            (RecordFields::SCHEMA, "schema"),
            (RecordFields::ROLE, "role"),
            (RecordFields::COUNTED, "counted"),
            (RecordFields::WALL_NS, "wall_ns"),
            (RecordFields::ANOMALIES, "anomalies"),
            (RecordFields::STARTED_AT, "started_at"),
            (RecordFields::BOOT_ID, "boot_id"),
            (RecordFields::UPTIME_S, "uptime_s"),
            (RecordFields::LABEL, "label"),
            (RecordFields::MAJOR_FAULTS, "rusage.major_faults"),
            (RecordFields::BLOCK_IN, "rusage.block_in"),
            (
                RecordFields::RESIDENT_RATIO_BEFORE,
                "cache.before.resident_ratio",
            ),
            (RecordFields::FAILURE_REASON, "failure_reason"),
            (RecordFields::INDEX, "index"),
        ] {
            assert_eq!(record.str(i), Some(want), "record field {i}");
        }
    }
}
