//! libFuzzer entry point for the human renderers (a batch's table, `report`'s table, their
//! Markdown); the invariants live in the body, which the root crate's `tests/fuzz_corpus.rs` also
//! replays over the committed corpus.
#![forbid(unsafe_code)]
#![no_main]

#[path = "../bodies/renderers.rs"]
mod body;

libfuzzer_sys::fuzz_target!(|data: &[u8]| body::run(data));
