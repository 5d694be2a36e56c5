//! Fuzz body: invariants of `WaitStatus` for arbitrary status words.
//!
//! Shared by the libFuzzer target (`fuzz/fuzz_targets/wait_status.rs`) and the corpus replay
//! under plain `cargo test` (`syscalls/tests/fuzz_corpus.rs`). It uses only std and
//! `coldtrace_syscalls`, so it compiles in both crates.
#![forbid(unsafe_code)]

use coldtrace_syscalls::{WaitStatus, WaitStatusKind};
use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;

/// The input is read as little-endian `i32` words, 4 bytes each; a short last chunk is
/// zero-padded, so every input, the empty one included, is valid.
pub fn run(data: &[u8]) {
    for chunk in data.chunks(4) {
        let mut word = [0u8; 4];
        word[..chunk.len()].copy_from_slice(chunk);
        check(i32::from_le_bytes(word));
    }
}

/// Every invariant of the decoder for one word. Panics (which the fuzzer reports) on the first
/// one that does not hold.
pub fn check(raw: i32) {
    let status = WaitStatus::from_raw(raw);
    // Raw round trip.
    assert_eq!(status.to_raw(), raw);

    // Kind: total, and the kind encodes back to exactly this word (for Unknown trivially; for
    // the named kinds this says the decoder is injective and `to_raw` is its inverse).
    let kind = status.kind();
    assert_eq!(
        kind.to_raw(),
        raw,
        "{kind:?} does not encode back to {raw:#x}"
    );
    if !matches!(kind, WaitStatusKind::Unknown { .. }) {
        assert_eq!(WaitStatus::from_raw(kind.to_raw()).kind(), kind);
        assert_eq!(
            raw & !0xffff,
            0,
            "a named kind from a word above 16 bits: {raw:#x}"
        );
    }

    // Display and Debug never panic, and Debug shows Display.
    let text = status.to_string();
    assert!(format!("{status:?}").contains(&text));

    // Agreement with std (the C library's macros) on every accessor.
    let std = ExitStatus::from_raw(raw);
    assert_eq!(status.code(), std.code(), "code() of {raw:#x}");
    assert_eq!(status.signal(), std.signal(), "signal() of {raw:#x}");
    assert_eq!(
        status.core_dumped(),
        std.core_dumped(),
        "core_dumped() of {raw:#x}"
    );
    assert_eq!(
        status.stopped_signal(),
        std.stopped_signal(),
        "stopped_signal() of {raw:#x}"
    );
    assert_eq!(
        status.continued(),
        std.continued(),
        "continued() of {raw:#x}"
    );

    // A named kind is consistent with the accessors.
    match kind {
        WaitStatusKind::Exited { code } => assert_eq!(status.code(), Some(i32::from(code))),
        WaitStatusKind::Signaled {
            signal,
            core_dumped,
        } => {
            assert_eq!(status.signal(), Some(signal.raw()));
            assert_eq!(status.core_dumped(), core_dumped);
        }
        WaitStatusKind::Stopped { signal } => {
            assert_eq!(status.stopped_signal(), Some(signal.raw()))
        }
        WaitStatusKind::Continued => assert!(status.continued()),
        WaitStatusKind::Unknown { .. } => {}
    }
}
