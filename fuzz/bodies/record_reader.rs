//! Fuzz body: invariants of the batch-directory reader behind `coldtrace report`
//! (`coldtrace::record::reader::parse_batch_document` and `parse_runs`, which `read_batch` calls on the
//! bytes of `batch.json` and `runs.jsonl`) for arbitrary file contents, and the field picker
//! they read documents with (`coldtrace::record::pick`) against `serde_json::Value`.
//!
//! Shared by the libFuzzer target (`fuzz/fuzz_targets/record_reader.rs`) and the corpus replay
//! under plain `cargo test` (the root crate's `tests/fuzz_corpus.rs`). It uses only std,
//! `coldtrace` and `serde_json` (a dependency of both crates), so it compiles in both.
#![forbid(unsafe_code)]

use coldtrace::record::pick::{pick, Leaf};
use coldtrace::record::reader::{parse_batch_document, parse_runs, BatchRow, ReportError};
use serde_json::Value;

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
    if let Some(batch) = batch {
        picks_agree_with_the_whole_parse(batch);
    }
    if let Some(line) = runs.split(|&b| b == b'\n').next() {
        picks_agree_with_the_whole_parse(line);
    }
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
    // (By the note's whole form: other notes quote the input, which may say "cut short".)
    let cut = row
        .notes
        .iter()
        .find(|n| n.starts_with("runs.jsonl line ") && n.ends_with(" is cut short (skipped)"));
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

/// The paths `report` picks out of a `batch.json` and a record, and one that is never there.
const READER_PATHS: [&[&str]; 8] = [
    &["schema"],
    &["context", "system", "kernel_release"],
    &["context", "file_set", "roots"],
    &["first_penalty", "wall_ns"],
    &["rusage", "major_faults"],
    &["cache", "before", "resident_ratio"],
    &["anomalies"],
    &["no", "such", "field"],
];

/// `pick` (what `report` reads documents with) against `serde_json::Value` (the whole parse):
/// a document that parses whole as an object is picked without error, and every path gives
/// what the `Value` holds there — the reader's own paths and paths to the document's leaves.
pub fn picks_agree_with_the_whole_parse(doc: &[u8]) {
    let Ok(whole) = serde_json::from_slice::<Value>(doc) else {
        return;
    };
    let mut paths: Vec<Vec<String>> = READER_PATHS
        .iter()
        .map(|p| p.iter().map(|k| k.to_string()).collect())
        .collect();
    // Leaves of the document (not objects), so that no path is a prefix of another.
    leaf_paths(&whole, &mut Vec::new(), &mut paths);
    paths.truncate(READER_PATHS.len() + 12);
    // Drop any path that is a prefix of another, or has one (the reader's against the leaves).
    let mut kept: Vec<Vec<String>> = Vec::new();
    for p in paths {
        if !kept.iter().any(|q| q.starts_with(&p) || p.starts_with(q)) {
            kept.push(p);
        }
    }
    let refs: Vec<Vec<&str>> = kept
        .iter()
        .map(|p| p.iter().map(String::as_str).collect())
        .collect();
    let slices: Vec<&[&str]> = refs.iter().map(Vec::as_slice).collect();
    let picked = pick(doc, &slices);
    if !whole.is_object() {
        assert!(
            picked.is_err(),
            "a document that is not an object is refused"
        );
        return;
    }
    let picked = picked.unwrap_or_else(|e| panic!("parses whole but not picked: {e}"));
    for (path, got) in slices.iter().zip(picked.leaves()) {
        let want = path.iter().try_fold(&whole, |v, k| v.get(k));
        assert!(
            same(got.as_ref(), want),
            "{path:?}: picked {got:?}, whole parse {want:?}"
        );
    }
}

fn leaf_paths(v: &Value, prefix: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
    if let Value::Object(map) = v {
        for (k, child) in map {
            prefix.push(k.clone());
            if child.is_object() && prefix.len() < 4 {
                leaf_paths(child, prefix, out);
            } else if !child.is_object() {
                out.push(prefix.clone());
            }
            prefix.pop();
        }
    }
}

/// Whether a picked leaf is what the `Value` holds (objects are only marked as such).
fn same(got: Option<&Leaf<'_>>, want: Option<&Value>) -> bool {
    match (got, want) {
        (None, None) => true,
        (Some(Leaf::Null), Some(Value::Null)) => true,
        (Some(Leaf::Bool(a)), Some(Value::Bool(b))) => a == b,
        (Some(Leaf::Str(a)), Some(Value::String(b))) => a == b,
        (Some(Leaf::Object), Some(Value::Object(_))) => true,
        (Some(Leaf::Array(a)), Some(Value::Array(b))) => {
            a.len() == b.len() && a.iter().zip(b).all(|(x, y)| same(Some(x), Some(y)))
        }
        (Some(n), Some(Value::Number(m))) => {
            n.as_u64() == m.as_u64()
                && n.as_f64().map(f64::to_bits) == m.as_f64().map(f64::to_bits)
                && matches!(n, Leaf::U64(_) | Leaf::I64(_) | Leaf::F64(_))
        }
        _ => false,
    }
}
