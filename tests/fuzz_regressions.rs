//! Bugs against the fuzz bodies' invariants, each a named test with a sentence on the bug it
//! caught; the corpus files `fuzz/corpus/<target>/regress-*` replay the same inputs through the
//! full fuzz body as well. Each test says whether the fuzzer found it or review did.
#![forbid(unsafe_code)]

use coldtrace::cli::{parse, UsageError};
use coldtrace::record::reader::{parse_batch_document, parse_runs, BatchRow};
use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;

fn args(list: &[&[u8]]) -> Vec<OsString> {
    list.iter()
        .map(|a| OsString::from_vec(a.to_vec()))
        .collect()
}

fn usage_error(list: &[&[u8]]) -> String {
    match parse(args(list)) {
        Err(UsageError(message)) => message,
        Ok(other) => panic!("expected a usage error, got {other:?}"),
    }
}

/// Found by `argv` (`compare -n\xff…\n\x10 …`): an unknown option was quoted back verbatim, so
/// a newline in the argument split the "one line" usage error in two (and an escape sequence
/// would have reached the terminal). Every usage error now writes control characters as
/// escapes.
#[test]
fn argv_newline_in_echoed_option_stays_one_line() {
    let message = usage_error(&[b"compare", b"-x\n\x10", b"a", b"b"]);
    assert_eq!(
        message,
        "unknown option '-x\\n\\u{10}'; see `coldtrace compare --help`"
    );
    // The same holds for every place that quotes a value back.
    for list in [
        &[&b"run"[..], b"-n", b"5\n", b"--", b"x"][..],
        &[b"run", b"--timeout", b"\r1", b"--", b"x"],
        &[b"run", b"--output", b"/no\nsuch/f", b"--", b"x"],
        &[b"run", b"--events", b"cycles,in\nstructions", b"--", b"x"],
        &[b"compare", b"--shuffle", b"1\n", b"a", b"b"],
        &[b"report", b"-\n"],
        &[b"context", b"\n"],
        &[b"run\n"],
        &[b"run", b"x\ny", b"z"],
    ] {
        let message = usage_error(list);
        assert!(!message.contains(char::is_control), "{list:?}: {message:?}");
    }
}

fn read_runs(bytes: &[u8]) -> BatchRow {
    let mut row = BatchRow::default();
    parse_runs(bytes, "runs.jsonl", &mut row).expect("valid runs.jsonl");
    row
}

/// Found by review, not by the fuzzer (3 minutes did not reach it), and caught by the
/// `record_reader` body's "first/warm is finite" check: a first run of 1e300 ns over a warm
/// median of 1e-300 ns overflowed to an infinite ratio, which `report` printed as `inf×`.
/// `stats::ratio` now gives no ratio when the quotient is not finite.
#[test]
fn record_reader_first_to_warm_overflow_is_no_ratio() {
    let row = read_runs(
        b"{\"schema\":\"coldtrace.run/1\",\"role\":\"first\",\"counted\":true,\"wall_ns\":1e300}\n\
          {\"schema\":\"coldtrace.run/1\",\"role\":\"warm\",\"counted\":true,\"wall_ns\":1e-300}\n",
    );
    assert_eq!(row.counted, 2);
    assert_eq!(row.first_wall_ns, Some(1e300));
    assert_eq!(row.first_to_warm, None);
}

/// Found by review, caught by the body's "warm median is finite" check: the median of an even
/// count added the two middle values before halving, so two warm runs of 1.7e308 ns had an
/// infinite median. `Summary::of` now halves each value first (the same result whenever the sum
/// does not overflow).
#[test]
fn record_reader_warm_median_of_huge_values_is_finite() {
    let row = read_runs(
        b"{\"schema\":\"coldtrace.run/1\",\"role\":\"first\",\"counted\":true,\"wall_ns\":1}\n\
          {\"schema\":\"coldtrace.run/1\",\"role\":\"warm\",\"counted\":true,\"wall_ns\":1.7e308}\n\
          {\"schema\":\"coldtrace.run/1\",\"role\":\"warm\",\"counted\":true,\"wall_ns\":1.7e308}\n",
    );
    assert_eq!(row.warm_median_wall_ns, Some(1.7e308));
    assert!(row.first_to_warm.is_some_and(f64::is_finite));
}

/// Found by review (the fuzzer did not reach it in its runs), caught by the body's "every note
/// is one line" check: `interrupted_by` from a damaged `batch.json` went into the note verbatim,
/// so a `\n` in it split `report`'s `note: DIR: …` line in two. Control characters in it are
/// now written as escapes.
#[test]
fn record_reader_newline_in_interrupted_by_stays_one_note_line() {
    let mut row = BatchRow::default();
    parse_batch_document(
        br#"{"schema":"coldtrace.batch/1","complete":false,"interrupted_by":"SIG\nINT\u001b"}"#,
        "batch.json",
        &mut row,
    )
    .expect("a valid batch document");
    assert_eq!(row.notes, ["interrupted by SIG\\nINT\\u{1b}"]);
}

/// Found by `renderers` (a cache note holding NUL and ESC bytes): the notes under a batch's
/// table were written as their builders made them, so a string that reached a note unescaped
/// (a path in the boot marker's note, a kernel name, a residency reason) reached the terminal
/// raw. `Note::write` and `Note::markdown` now escape their text and quoted lines themselves.
#[test]
fn renderers_control_characters_in_a_note_are_escaped() {
    use coldtrace::view::lines::Note;
    use coldtrace::view::style::Style;
    let note = Note {
        quoted: vec!["tail\u{1b}]0;x\u{7}".into()],
        ..Note::plain("cached before/after: \0\u{1b}[2J")
    };
    let mut out = String::new();
    note.write(&mut out, &Style { on: false }, 80);
    note.markdown(&mut out);
    assert!(!out.chars().any(|c| c.is_control() && c != '\n'), "{out:?}");
    assert!(
        out.contains("\\u{0}\\u{1b}[2J") && out.contains("tail\\u{1b}]0;x\\u{7}"),
        "{out}"
    );
}

/// Found by `record_reader` after 2.2 million executions (the fuzz body's mistake, not the
/// reader's): the body took any note containing "cut short" for the reader's cut-last-line
/// note, so a batch.json whose `interrupted_by` said "cut short" failed its check. The body
/// now recognises that note by its whole form; the reader quotes the text as given, one line.
#[test]
fn record_reader_a_quoted_cut_short_is_not_the_cut_line_note() {
    let mut row = BatchRow::default();
    let batch =
        br#"{"schema":"coldtrace.batch/1","complete":false,"interrupted_by":"SIG\n=cut short"}"#;
    parse_batch_document(batch, "batch.json", &mut row).expect("a batch document");
    let runs =
        b"{\"schema\":\"coldtrace.run/1\",\"index\":0,\"role\":\"first\",\"counted\":true}\n";
    parse_runs(runs, "runs.jsonl", &mut row).expect("valid runs.jsonl");
    assert!(
        row.notes
            .contains(&"interrupted by SIG\\n=cut short".to_string()),
        "{:?}",
        row.notes
    );
    assert!(!row
        .notes
        .iter()
        .any(|n| n.ends_with("is cut short (skipped)")));
}
