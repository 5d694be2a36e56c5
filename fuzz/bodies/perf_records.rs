//! Fuzz body: invariants of reading a perf ring's bytes into a process tree's states — the
//! framing of records (`coldtrace_syscalls::ring::frame`), the sample layout
//! (`time_and_raw`, `switch_in`, `lost_count`), the `sched` tracepoint decoder
//! (`coldtrace::measure::tree::decode`, with Linux 6.18's format files) and the replay of the
//! events into R, Q, D and S (`coldtrace::measure::tree::replay`).
//!
//! Shared by the libFuzzer target (`fuzz/fuzz_targets/perf_records.rs`) and the corpus replay
//! under plain `cargo test` (the root crate's `tests/fuzz_corpus.rs`). It uses only std,
//! `coldtrace` and `coldtrace_syscalls`, so it compiles in both.
#![forbid(unsafe_code)]

use coldtrace::measure::tree::decode::{Decoder, SchedEvent, SchedKind, FORMATS_6_18};
use coldtrace::measure::tree::format::Format;
use coldtrace::measure::tree::replay::Replay;
use coldtrace_syscalls::perf::PERF_RECORD_SAMPLE;
use coldtrace_syscalls::ring::{frame, lost_count, switch_in, time_and_raw, Framed};

/// The input: byte 0 says where the ring wraps (its share of the rest, /255), bytes 1–4 the
/// root's ID; the rest is the ring's unread bytes in order.
pub fn run(data: &[u8]) {
    let (Some(&cut), Some(root)) = (data.first(), data.get(1..5)) else {
        return;
    };
    let root = i32::from_ne_bytes(root.try_into().expect("4 bytes"));
    let bytes = &data[5..];
    let at = bytes.len() * usize::from(cut) / 255;
    let (first, second) = bytes.split_at(at);

    // The framing: the wrapped reading is the contiguous one.
    let (wrapped, framed) = records(first, second);
    let (whole, framed_whole) = records(bytes, &[]);
    assert_eq!(wrapped, whole, "cut at {at}");
    assert_eq!(framed, framed_whole);
    let sizes: u64 = whole.iter().map(|(_, body)| 8 + body.len() as u64).sum();
    assert_eq!(framed.bytes, sizes);
    assert_eq!(framed.records, whole.len() as u64);
    assert!(framed.bytes <= bytes.len() as u64);
    if !framed.malformed {
        assert_eq!(framed.bytes, bytes.len() as u64, "whole records only");
    }

    // Samples into events, events into states.
    let formats: Vec<Format> = FORMATS_6_18
        .iter()
        .map(|t| Format::parse(t).expect("a format"))
        .collect();
    let decoder = Decoder::new(&formats).expect("the decoder");
    let mut events: Vec<SchedEvent> = Vec::new();
    for (kind, body) in &whole {
        let record = coldtrace_syscalls::ring::Record {
            kind: *kind,
            misc: 0,
            body,
        };
        let lost = lost_count(&record);
        if let Some((time_ns, tid)) = switch_in(&record) {
            assert!(body.len() >= 24);
            let kind = SchedKind::Arrive { pid: tid as i32 };
            events.push(SchedEvent {
                time_ns,
                cpu: 0,
                kind,
            });
        }
        if *kind != PERF_RECORD_SAMPLE {
            continue;
        }
        assert_eq!(lost, None);
        if let Some((time, raw)) = time_and_raw(body) {
            assert!(12 + raw.len() <= body.len());
            events.extend(decoder.decode(time, 0, raw));
        }
    }
    check_replay(root, &mut events);
}

fn records(first: &[u8], second: &[u8]) -> (Vec<(u32, Vec<u8>)>, Framed) {
    let mut out = Vec::new();
    let mut scratch = Vec::new();
    let framed = frame(first, second, &mut scratch, |r| {
        out.push((r.kind, r.body.to_vec()))
    });
    (out, framed)
}

/// The events, in time order, from the first one's time: when the root's creation is among
/// them, the four states add up to the window exactly, the tree has at least the root, and
/// its tasks' turns on a CPU cover R but for the spawner's moment.
fn check_replay(root: i32, events: &mut [SchedEvent]) {
    events.sort_by_key(|e| (e.time_ns, e.cpu));
    let (Some(start), Some(last)) = (events.first(), events.last()) else {
        return;
    };
    let (start, end) = (start.time_ns, last.time_ns.saturating_add(1_000));
    let mut replay = Replay::new(root, start);
    for e in events.iter() {
        replay.apply(e);
    }
    let created = events
        .iter()
        .any(|e| matches!(e.kind, SchedKind::Fork { child, .. } if child == root));
    match replay.finish(end) {
        Ok(states) => {
            assert!(created, "states without the root's creation");
            assert_eq!(states.total_ns(), end - start, "{states:?}");
            assert!(states.tasks >= 1);
            // Every instant of R after the root's creation is in some task's turn.
            assert!(states.on_cpu_sum_ns + states.spawn_ns >= states.on_cpu_ns);
        }
        Err(_) => assert!(!created || events.len() > 100_000),
    }
}
