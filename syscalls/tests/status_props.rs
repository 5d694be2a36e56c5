//! Properties of the pure wait-status decoder: totality over every `i32`, the round trip of
//! every word the kernel produces, agreement with std's decoder, and the signal names.
#![forbid(unsafe_code)]

mod common;

use coldtrace_syscalls::{Signal, WaitStatus, WaitStatusKind};
use proptest::prelude::*;
use std::os::unix::process::ExitStatusExt;
use std::process::{Command, ExitStatus};

/// Every kind the kernel can report, each exactly once: Exited 0..=255, Signaled 1..=126 with
/// and without core, Stopped 1..=255, Continued.
fn every_valid_kind() -> Vec<WaitStatusKind> {
    let mut kinds = Vec::new();
    kinds.extend((0..=255u8).map(|code| WaitStatusKind::Exited { code }));
    for n in 1..=126 {
        for core_dumped in [false, true] {
            kinds.push(WaitStatusKind::Signaled {
                signal: Signal::from_raw(n),
                core_dumped,
            });
        }
    }
    kinds.extend((1..=255).map(|n| WaitStatusKind::Stopped {
        signal: Signal::from_raw(n),
    }));
    kinds.push(WaitStatusKind::Continued);
    kinds
}

fn valid_kind() -> impl Strategy<Value = WaitStatusKind> {
    prop_oneof![
        any::<u8>().prop_map(|code| WaitStatusKind::Exited { code }),
        (1..=126i32, any::<bool>()).prop_map(|(n, core_dumped)| WaitStatusKind::Signaled {
            signal: Signal::from_raw(n),
            core_dumped
        }),
        (1..=255i32).prop_map(|n| WaitStatusKind::Stopped {
            signal: Signal::from_raw(n)
        }),
        Just(WaitStatusKind::Continued),
    ]
}

/// Every accessor agrees with std's decoder (the libc macros) on `raw`.
fn assert_agrees_with_std(raw: i32) {
    let ours = WaitStatus::from_raw(raw);
    let std = ExitStatus::from_raw(raw);
    assert_eq!(ours.code(), std.code(), "code() of {raw:#x}");
    assert_eq!(ours.signal(), std.signal(), "signal() of {raw:#x}");
    assert_eq!(
        ours.core_dumped(),
        std.core_dumped(),
        "core_dumped() of {raw:#x}"
    );
    assert_eq!(
        ours.stopped_signal(),
        std.stopped_signal(),
        "stopped_signal() of {raw:#x}"
    );
    assert_eq!(ours.continued(), std.continued(), "continued() of {raw:#x}");
}

/// What must hold for any word: no panic, the raw round trip, `kind` is injective (its
/// `to_raw` gives the word back), and `Display` agrees with `kind`.
fn assert_total(raw: i32) {
    let status = WaitStatus::from_raw(raw);
    assert_eq!(status.to_raw(), raw);
    let kind = status.kind();
    assert_eq!(
        kind.to_raw(),
        raw,
        "{kind:?} does not encode back to {raw:#x}"
    );
    let text = status.to_string();
    let debug = format!("{status:?}");
    assert!(
        debug.contains(&text),
        "Debug {debug:?} lacks Display {text:?}"
    );
    match kind {
        WaitStatusKind::Exited { code } => assert_eq!(text, format!("exited with code {code}")),
        WaitStatusKind::Signaled {
            signal,
            core_dumped: false,
        } => {
            assert_eq!(text, format!("killed by {signal}"))
        }
        WaitStatusKind::Signaled {
            signal,
            core_dumped: true,
        } => {
            assert_eq!(text, format!("killed by {signal} (core dumped)"))
        }
        WaitStatusKind::Stopped { signal } => assert_eq!(text, format!("stopped by {signal}")),
        WaitStatusKind::Continued => assert_eq!(text, "continued"),
        WaitStatusKind::Unknown { raw: inner } => {
            assert_eq!(inner, raw);
            assert_eq!(text, format!("unknown wait status {raw:#x}"));
        }
    }
}

/// The named kinds agree with the accessors: a kind is only as specific as the macros allow.
fn assert_kind_matches_accessors(raw: i32) {
    let status = WaitStatus::from_raw(raw);
    match status.kind() {
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

#[test]
fn every_valid_kind_round_trips() {
    let kinds = every_valid_kind();
    assert_eq!(kinds.len(), 256 + 126 * 2 + 255 + 1);
    let mut words: Vec<i32> = kinds.iter().map(|k| k.to_raw()).collect();
    for (kind, &raw) in kinds.iter().zip(&words) {
        assert_eq!(WaitStatus::from_raw(raw).kind(), *kind, "word {raw:#x}");
        assert!(!matches!(kind, WaitStatusKind::Unknown { .. }));
    }
    // Distinct kinds are distinct words: the encoding is injective.
    words.sort_unstable();
    words.dedup();
    assert_eq!(words.len(), kinds.len());
}

#[test]
fn named_kinds_are_exactly_the_kernel_words() {
    // Over 0..=0xffff, a word gets a named kind if and only if it is one of the kernel's words.
    let mut kernel_words: Vec<i32> = every_valid_kind().iter().map(|k| k.to_raw()).collect();
    kernel_words.sort_unstable();
    for raw in 0..=0xffff {
        let named = !matches!(
            WaitStatus::from_raw(raw).kind(),
            WaitStatusKind::Unknown { .. }
        );
        assert_eq!(
            named,
            kernel_words.binary_search(&raw).is_ok(),
            "word {raw:#x}"
        );
    }
}

#[test]
fn agrees_with_std_exhaustively_over_16_bits() {
    for raw in 0..=0xffff {
        assert_agrees_with_std(raw);
        assert_total(raw);
        assert_kind_matches_accessors(raw);
    }
}

#[test]
fn edge_words_are_total() {
    let edges = [
        i32::MIN,
        i32::MIN + 1,
        -1,
        -0x100,
        -0xffff,
        0x7f,
        0x80,
        0xff,
        0x17f,
        0xff7f,
        0xffff,
        0x1_0000,
        0x1_007f,
        0x1_ffff,
        i32::MAX,
    ];
    for raw in edges {
        assert_total(raw);
        assert_agrees_with_std(raw);
        assert_kind_matches_accessors(raw);
    }
    // Words with bits above the low 16 are never produced by the kernel.
    assert_eq!(
        WaitStatus::from_raw(0x1_0000).kind(),
        WaitStatusKind::Unknown { raw: 0x1_0000 }
    );
    assert_eq!(
        WaitStatus::from_raw(-1).kind(),
        WaitStatusKind::Unknown { raw: -1 }
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4096))]

    #[test]
    fn total_over_every_i32(raw in any::<i32>()) {
        assert_total(raw);
        assert_kind_matches_accessors(raw);
        if raw & !0xffff != 0 {
            prop_assert_eq!(WaitStatus::from_raw(raw).kind(), WaitStatusKind::Unknown { raw });
        }
    }

    #[test]
    fn agrees_with_std_over_every_i32(raw in any::<i32>()) {
        assert_agrees_with_std(raw);
    }

    #[test]
    fn valid_kinds_round_trip(kind in valid_kind()) {
        let raw = kind.to_raw();
        prop_assert_eq!(WaitStatus::from_raw(raw).kind(), kind);
        prop_assert_eq!(raw & !0xffff, 0, "kernel words fit in 16 bits");
        assert_agrees_with_std(raw);
    }
}

/// Signal names for 1..=31 from the shell's `kill -l N`, where a shell knows them.
/// dash (Debian's /bin/sh) does not name 16 (SIGSTKFLT) and prints the number instead; those
/// numbers are left out, so the caller falls back to the signal(7) table for them.
fn shell_signal_names() -> Option<(String, Vec<(i32, String)>)> {
    let script =
        "i=1; while [ $i -le 31 ]; do printf '%s %s\\n' $i \"$(kill -l $i)\"; i=$((i+1)); done";
    for shell in ["/bin/bash", "/usr/bin/bash", "/bin/sh"] {
        if !std::path::Path::new(shell).exists() {
            continue;
        }
        let Ok(out) = Command::new(shell)
            .arg("-c")
            .arg(script)
            .env_clear()
            .output()
        else {
            continue;
        };
        if !out.status.success() {
            continue;
        }
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let names = text
            .lines()
            .filter_map(|line| {
                let (n, name) = line.split_once(' ')?;
                let n: i32 = n.parse().ok()?;
                let name = name.trim().trim_start_matches("SIG");
                // A shell that does not know a signal prints its number back.
                if name.is_empty() || name.bytes().all(|b| b.is_ascii_digit()) {
                    return None;
                }
                Some((n, format!("SIG{name}")))
            })
            .collect();
        return Some((shell.to_string(), names));
    }
    None
}

#[test]
fn standard_signal_names_match_the_shell_and_signal_7() {
    let table = common::SIGNAL_7_TABLE;
    match shell_signal_names() {
        Some((shell, names)) => {
            eprintln!(
                "signal names: {} of 31 from `{shell} -c 'kill -l N'`",
                names.len()
            );
            assert!(
                names.len() >= 30,
                "{shell} named only {} signals: {names:?}",
                names.len()
            );
            for (n, name) in &names {
                // The two independent sources agree with each other...
                assert_eq!(
                    common::signal_7_name(*n),
                    name,
                    "signal(7) table vs {shell}"
                );
            }
        }
        None => eprintln!("no shell to run `kill -l`; using the signal(7) table alone"),
    }
    for (n, name) in table {
        let signal = Signal::from_raw(n);
        // ... and with ours, in every place a name shows.
        assert_eq!(signal.name(), Some(name), "name of {n}");
        assert_eq!(signal.to_string(), name, "Display of {n}");
        assert_eq!(
            WaitStatus::from_raw(n).to_string(),
            format!("killed by {name}")
        );
        assert_eq!(
            WaitStatus::from_raw(n | 0x80).to_string(),
            format!("killed by {name} (core dumped)")
        );
        assert_eq!(
            WaitStatus::from_raw((n << 8) | 0x7f).to_string(),
            format!("stopped by {name}")
        );
    }
    // Outside the standard range there is no name, and Display says what the number is.
    assert_eq!(Signal::from_raw(0).name(), None);
    assert_eq!(Signal::from_raw(32).name(), None);
    assert_eq!(Signal::from_raw(32).to_string(), "SIGRT+0");
    assert_eq!(Signal::from_raw(64).to_string(), "SIGRT+32");
    assert_eq!(Signal::from_raw(65).to_string(), "signal 65");
    assert_eq!(Signal::from_raw(126).to_string(), "signal 126");
}
