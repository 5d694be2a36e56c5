//! libFuzzer entry point for the batch-directory reader behind `coldtrace report`; the
//! invariants live in the body, which the root crate's `tests/fuzz_corpus.rs` also replays over
//! the committed corpus.
#![forbid(unsafe_code)]
#![no_main]

#[path = "../bodies/record_reader.rs"]
mod body;

libfuzzer_sys::fuzz_target!(|data: &[u8]| body::run(data));
