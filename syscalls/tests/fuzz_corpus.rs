//! The fuzz target bodies under plain `cargo test`: each body in `fuzz/bodies/` runs over every
//! file of its committed corpus in `fuzz/corpus/<target>/`, so stable CI checks the same
//! invariants the fuzzer does, on the inputs that matter (seeds and minimised crashes).
//!
//! To add a target: put its body in `fuzz/bodies/<name>.rs` (a `pub fn run(data: &[u8])` that
//! uses std and the crate under test only), include it below with `#[path]`, and add a test
//! calling `replay("<name>", <name>::run)`. A body for the root crate belongs in the root
//! crate's `tests/fuzz_corpus.rs` with the same shape.
#![forbid(unsafe_code)]

use std::path::{Path, PathBuf};

#[path = "../../fuzz/bodies/wait_status.rs"]
mod wait_status;

fn corpus_dir(target: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fuzz/corpus")
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
            "fuzz body `{target}` failed on corpus file {name} ({data:02x?})"
        );
    }
    files
}

#[test]
fn wait_status_corpus() {
    use coldtrace_syscalls::{WaitStatus, WaitStatusKind};
    let files = replay("wait_status", wait_status::run);
    // The seeds cover every kind, so the replay checks each branch of the decoder.
    let kinds: Vec<WaitStatusKind> = files
        .iter()
        .filter(|(_, data)| data.len() == 4)
        .map(|(_, data)| {
            WaitStatus::from_raw(i32::from_le_bytes([data[0], data[1], data[2], data[3]])).kind()
        })
        .collect();
    let covered = |pred: fn(&WaitStatusKind) -> bool| kinds.iter().any(pred);
    assert!(
        covered(|k| matches!(k, WaitStatusKind::Exited { .. })),
        "{kinds:?}"
    );
    assert!(covered(|k| matches!(
        k,
        WaitStatusKind::Signaled {
            core_dumped: false,
            ..
        }
    )));
    assert!(covered(|k| matches!(
        k,
        WaitStatusKind::Signaled {
            core_dumped: true,
            ..
        }
    )));
    assert!(covered(|k| matches!(k, WaitStatusKind::Stopped { .. })));
    assert!(covered(|k| matches!(k, WaitStatusKind::Continued)));
    assert!(covered(|k| matches!(k, WaitStatusKind::Unknown { .. })));
}

#[test]
fn wait_status_body_accepts_any_length() {
    // Short and unaligned inputs are zero-padded words, not errors.
    for data in [
        &b""[..],
        b"\x8b",
        b"\xff\xff",
        b"\x7f\x13\x00",
        b"\x00\x01\x00\x00\x0b",
    ] {
        wait_status::run(data);
    }
}
