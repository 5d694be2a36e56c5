//! The root crate's fuzz target bodies under plain `cargo test`: each body in `fuzz/bodies/`
//! runs over every file of its committed corpus in `fuzz/corpus/<target>/`, so stable CI checks
//! the same invariants the fuzzer does, on the inputs that matter (seeds and minimised crashes).
//! Same shape as `syscalls/tests/fuzz_corpus.rs` (which replays `wait_status`).
#![forbid(unsafe_code)]

use std::path::{Path, PathBuf};

#[path = "../fuzz/bodies/argv.rs"]
mod argv;
#[path = "../fuzz/bodies/perf_records.rs"]
mod perf_records;
#[path = "../fuzz/bodies/record_reader.rs"]
mod record_reader;
#[path = "../fuzz/bodies/renderers.rs"]
mod renderers;

fn corpus_dir(target: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/corpus")
        .join(target)
}

/// The corpus files of `target`, sorted by name; hidden files (libFuzzer's scratch) are skipped.
fn corpus(target: &str) -> Vec<(String, Vec<u8>)> {
    let dir = corpus_dir(target);
    let entries = std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("read {}: {e}", dir.display()));
    let mut files: Vec<(String, Vec<u8>)> = entries
        .map(|entry| entry.expect("corpus entry"))
        .filter(|entry| entry.file_type().is_ok_and(|t| t.is_file()))
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .filter(|name| !name.starts_with('.'))
        .map(|name| {
            let data = std::fs::read(dir.join(&name)).expect("read corpus file");
            (name, data)
        })
        .collect();
    files.sort();
    files
}

/// Runs `body` over every corpus file of `target`; names the file that failed. Returns the
/// inputs, so that a test can also check what the corpus covers.
fn replay(target: &str, body: fn(&[u8])) -> Vec<(String, Vec<u8>)> {
    let files = corpus(target);
    assert!(
        !files.is_empty(),
        "the corpus {} is empty",
        corpus_dir(target).display()
    );
    for (name, data) in &files {
        let result = std::panic::catch_unwind(|| body(data));
        assert!(
            result.is_ok(),
            "fuzz body `{target}` failed on corpus file {name} ({:?})",
            String::from_utf8_lossy(data)
        );
    }
    files
}

#[test]
fn argv_corpus() {
    use coldtrace::cli::{parse, Command};
    let files = replay("argv", argv::run);
    // The seeds reach every kind of answer, so the replay checks each branch of the body.
    let answers: Vec<String> = files
        .iter()
        .map(|(_, data)| match parse(argv::argv(data)) {
            Err(_) => "error",
            Ok(Command::Run(_)) => "run",
            Ok(Command::Compare(_)) => "compare",
            Ok(Command::Report(_)) => "report",
            Ok(Command::Context { .. }) => "context",
            Ok(Command::Time(_)) => "time",
            Ok(Command::Boot(_)) => "boot",
            Ok(Command::Cleanup(_)) => "cleanup",
            Ok(Command::Help(_)) => "help",
            Ok(Command::Version) => "version",
        })
        .map(String::from)
        .collect();
    for kind in [
        "error", "run", "compare", "report", "context", "time", "help", "version", "boot",
        "cleanup",
    ] {
        assert!(
            answers.iter().any(|a| a == kind),
            "no seed parses as {kind}: {answers:?}"
        );
    }
}

#[test]
fn record_reader_corpus() {
    use coldtrace::record::reader::{parse_batch_document, parse_runs, BatchRow};
    let files = replay("record_reader", record_reader::run);
    // The seeds reach a good read, a skipped cut line, and errors from both files.
    let mut seen = (false, false, false, false);
    for (_, data) in &files {
        let (batch, runs) = record_reader::files(data);
        let mut row = BatchRow::default();
        if let Some(batch) = batch {
            if parse_batch_document(batch, "batch.json", &mut row).is_err() {
                seen.2 = true;
                continue;
            }
        }
        match parse_runs(runs, "runs.jsonl", &mut row) {
            Ok(()) if row.counted > 0 && row.first_to_warm.is_some() => seen.0 = true,
            Ok(()) => {}
            Err(_) => seen.3 = true,
        }
        if row.notes.iter().any(|n| n.contains("cut short")) {
            seen.1 = true;
        }
    }
    assert_eq!(
        seen,
        (true, true, true, true),
        "(good, cut, batch error, runs error)"
    );
}

#[test]
fn argv_body_rejects_what_it_should() {
    // The body's own checks can fail: a two-line message, a blank one, a leading space.
    let args = argv::argv(b"x");
    for bad in ["two\nlines", "", " leading"] {
        let caught = std::panic::catch_unwind(|| argv::check_error(&args, bad));
        assert!(caught.is_err(), "check_error accepted {bad:?}");
    }
    argv::check_error(&args, "one line");
    assert_eq!(argv::argv(b""), Vec::<std::ffi::OsString>::new());
    assert_eq!(argv::argv(b"a\0\0b").len(), 3);
}

#[test]
fn record_reader_body_rejects_what_it_should() {
    use coldtrace::record::reader::ReportError;
    let err = |s: &str| ReportError(s.to_string());
    let fails = |e: ReportError, file: &'static str, lines: u64| {
        std::panic::catch_unwind(move || record_reader::check_error(&e, file, lines)).is_err()
    };
    assert!(fails(err("runs.jsonl: line 3: x"), "runs.jsonl", 2));
    assert!(fails(err("runs.jsonl: line 0: x"), "runs.jsonl", 2));
    assert!(fails(err("runs.jsonl: line 1: x\ny"), "runs.jsonl", 2));
    assert!(fails(err("batch.json: line 1: x"), "runs.jsonl", 2));
    assert!(!fails(err("runs.jsonl: line 2: x"), "runs.jsonl", 2));
    assert_eq!(
        record_reader::files(b"a\xffb\xffc"),
        (Some(&b"a"[..]), &b"b\xffc"[..])
    );
}

#[test]
fn renderers_corpus() {
    let files = replay("renderers", renderers::run);
    // The seeds reach report rows, a text longer than a width specifier holds, and both the
    // narrowest and a wide table.
    let reached: Vec<renderers::Reached> = files.iter().map(|(_, d)| renderers::draw(d)).collect();
    assert!(reached.iter().any(|r| r.rows > 0), "{reached:?}");
    assert!(
        reached.iter().any(|r| r.longest_text > 65_535),
        "{reached:?}"
    );
    assert!(reached.iter().any(|r| r.width == 40), "{reached:?}");
    assert!(reached.iter().any(|r| r.width >= 120), "{reached:?}");
}

#[test]
fn renderers_body_rejects_what_it_should() {
    let fails = |f: fn()| std::panic::catch_unwind(f).is_err();
    assert!(fails(|| renderers::check_no_controls("t", "a\x1b[2Jb")));
    assert!(fails(|| renderers::check_no_controls("t", "a\rb")));
    assert!(!fails(|| renderers::check_no_controls("t", "a\nb")));
    assert!(fails(|| renderers::check_width("t", "12345", 4)));
    assert!(!fails(|| renderers::check_width("t", "1234\n12", 4)));
}

#[test]
fn perf_records_corpus() {
    use coldtrace_syscalls::ring::{frame, lost_count};
    let files = replay("perf_records", perf_records::run);
    // The seeds reach a real tree's creation, a lost-records report and a malformed size.
    let (mut created, mut lost, mut malformed) = (false, false, false);
    for (_, data) in files.iter().filter(|(_, d)| d.len() > 5) {
        let root = i32::from_ne_bytes(data[1..5].try_into().unwrap());
        let fork_of_root = |body: &[u8]| {
            // sched_process_fork (ID 366 on 6.18): child_pid at raw offset 20.
            body.len() >= 12 + 24
                && u16::from_ne_bytes([body[12], body[13]]) == 366
                && i32::from_ne_bytes(body[32..36].try_into().unwrap()) == root
        };
        let framed = frame(&data[5..], &[], &mut Vec::new(), |r| {
            created |= r.kind == 9 && fork_of_root(r.body);
            lost |= lost_count(&r).is_some_and(|n| n > 0);
        });
        malformed |= framed.malformed;
    }
    assert!(created && lost && malformed, "{created} {lost} {malformed}");
}
