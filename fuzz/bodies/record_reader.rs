//! Fuzz body: invariants of the batch-directory reader behind `coldtrace report`
//! (`coldtrace::record::reader::parse_batch_document` and `parse_runs`, which `read_batch` calls on the
//! bytes of `batch.json` and `runs.jsonl`) for arbitrary file contents.
//!
//! Shared by the libFuzzer target (`fuzz/fuzz_targets/record_reader.rs`) and the corpus replay
//! under plain `cargo test` (the root crate's `tests/fuzz_corpus.rs`). It uses only std and
//! `coldtrace`, so it compiles in both crates.

use coldtrace::record::reader::{parse_batch_document, parse_runs, BatchRow, ReportError};

/// The byte that separates the two files in an input. It never occurs in UTF-8, so a real
/// `batch.json` and `runs.jsonl` joined by it split back exactly.
pub const SEPARATOR: u8 = 0xff;

/// `(batch.json, runs.jsonl)` of an input: split at the first 0xFF byte. Without one the whole
/// input is `runs.jsonl` and there is no `batch.json` (an interrupted batch).
pub fn files(data: &[u8]) -> (Option<&[u8]>, &[u8]) {
    match data.iter().position(|&b| b == SEPARATOR) {
        Some(i) => (Some(&data[..i]), &data[i + 1..]),
        None => (None, data),
    }
}

/// Reads the two files as `read_batch` does and checks every invariant; panics on the first
/// that fails.
pub fn run(data: &[u8]) {
    let (batch, runs) = files(data);
    let mut row = BatchRow::default();
    if let Some(batch) = batch {
        if let Err(e) = parse_batch_document(batch, "batch.json", &mut row) {
            check_error(&e, "batch.json", line_count(batch));
            return;
        }
    }
    let lines = line_count(runs);
    match parse_runs(runs, "runs.jsonl", &mut row) {
        Err(e) => check_error(&e, "runs.jsonl", lines),
        Ok(()) => check_row(&row, runs, lines),
    }
}

/// Lines as the reader counts them: pieces ending in `\n`, plus a last piece without one.
pub fn line_count(bytes: &[u8]) -> u64 {
    bytes.split_inclusive(|&b| b == b'\n').count() as u64
}

/// An error is one line, starts with the file's name and names a line N with 1 ≤ N ≤ lines
/// (for `batch.json` a JSON document's last line may be one without bytes: N ≤ lines + 1).
pub fn check_error(e: &ReportError, file: &str, lines: u64) {
    let message = &e.0;
    assert!(
        !message.contains('\n'),
        "error of more than one line: {message:?}"
    );
    let rest = message
        .strip_prefix(file)
        .and_then(|r| r.strip_prefix(": line "))
        .unwrap_or_else(|| panic!("error does not name {file} and a line: {message:?}"));
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    let n: u64 = digits
        .parse()
        .unwrap_or_else(|_| panic!("no line number in {message:?}"));
    let max = if file == "batch.json" {
        lines + 1
    } else {
        lines
    };
    assert!(
        n >= 1 && n <= max,
        "line {n} of a {lines}-line {file}: {message:?}"
    );
    assert!(
        rest[digits.len()..].starts_with(": ") && rest.len() > digits.len() + 2,
        "nothing said after the line number: {message:?}"
    );
}

/// What a row read without error must satisfy.
pub fn check_row(row: &BatchRow, runs: &[u8], lines: u64) {
    assert!(
        row.counted + row.rejected <= lines,
        "{} counted + {} rejected runs from {lines} lines",
        row.counted,
        row.rejected
    );
    if let Some(r) = row.first_to_warm {
        assert!(r.is_finite(), "first/warm ratio {r}");
        assert!(row.first_wall_ns.is_some() && row.warm_median_wall_ns.is_some());
    }
    if let Some(m) = row.warm_median_wall_ns {
        assert!(m.is_finite(), "warm median {m}");
    }
    for note in &row.notes {
        assert!(
            !note.is_empty() && !note.contains('\n'),
            "a note is not one line: {note:?}"
        );
    }
    // A skipped line is the last one, and only when it has no `\n`.
    let cut = row.notes.iter().find(|n| n.contains("cut short"));
    if let Some(note) = cut {
        assert!(!runs.ends_with(b"\n"), "{note} but the file ends with \\n");
        assert_eq!(
            note,
            &format!("runs.jsonl line {lines} is cut short (skipped)")
        );
    }
    assert_eq!(
        runs.is_empty(),
        row.notes.iter().any(|n| n == "runs.jsonl is empty"),
        "the empty-file note and the file disagree"
    );
}
