//! libFuzzer entry point for reading perf ring bytes into a process tree's states; the
//! invariants live in the body, which the root crate's `tests/fuzz_corpus.rs` also replays over
//! the committed corpus.
#![forbid(unsafe_code)]
#![no_main]

#[path = "../bodies/perf_records.rs"]
mod body;

libfuzzer_sys::fuzz_target!(|data: &[u8]| body::run(data));
