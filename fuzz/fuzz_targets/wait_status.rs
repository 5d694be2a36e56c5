//! libFuzzer entry point for the wait-status decoder; the invariants live in the body, which
//! `syscalls/tests/fuzz_corpus.rs` also replays over the committed corpus.
#![forbid(unsafe_code)]
#![no_main]

#[path = "../bodies/wait_status.rs"]
mod body;

libfuzzer_sys::fuzz_target!(|data: &[u8]| body::run(data));
