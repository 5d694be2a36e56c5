//! MEASURING.md item 3, reproduced: a vfork-style child inherits its parent's *peak* RSS.
//!
//! Grows this process's heap to 1 GiB (touching every page), frees it, then spawns PROGRAM
//! (a minimal program) through this crate twice and prints the child's `max_rss_kib`:
//! first without resetting this process's high-water mark, then after writing `5` to
//! `/proc/self/clear_refs` (which resets VmHWM to the current RSS).
//!
//! Usage: `cargo run --release --example big_parent -- PROGRAM`
//! Output (one line each): `without_reset max_rss_kib=N vm_hwm_kib=H` and
//! `with_reset max_rss_kib=N vm_hwm_kib=H`, where H is this process's VmHWM right before the
//! spawn.
#![forbid(unsafe_code)]

use coldtrace_syscalls::{ChildStack, Program, SpawnOptions};
use std::ffi::CString;
use std::io::Write;
use std::process::ExitCode;

const HEAP_BYTES: usize = 1 << 30;

fn vm_hwm_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line["VmHWM:".len()..]
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()
}

fn spawn_once(program: &Program, stack: &mut ChildStack) -> Result<u64, String> {
    let child = program
        .spawn(&SpawnOptions::default(), stack)
        .map_err(|e| format!("spawn failed at {:?}: {}", e.stage, e.errno))?;
    let (status, usage) = child.reap().map_err(|e| format!("wait4 failed: {e}"))?;
    if status.code() != Some(0) {
        return Err(format!("the program did not exit 0: {status}"));
    }
    Ok(usage.max_rss_kib)
}

fn show(label: &str, hwm: Option<u64>, max_rss: u64) {
    let hwm = hwm.map_or("unknown".to_string(), |h| h.to_string());
    println!("{label} max_rss_kib={max_rss} vm_hwm_kib={hwm}");
}

fn main() -> ExitCode {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("big_parent: usage: big_parent PROGRAM (a minimal program, e.g. /bin/true)");
        return ExitCode::from(2);
    };
    let Ok(path) = CString::new(path) else {
        eprintln!("big_parent: the program path contains a NUL byte");
        return ExitCode::from(2);
    };
    let program = Program::new(path.clone(), vec![path], Vec::new());
    let mut stack = match ChildStack::new() {
        Ok(stack) => stack,
        Err(e) => {
            eprintln!("big_parent: cannot map the child stack: {e}");
            return ExitCode::from(1);
        }
    };

    // Grow the heap to 1 GiB, touching every page, then give it back.
    let heap = vec![1u8; HEAP_BYTES];
    let checksum: u64 = heap.iter().step_by(4096).map(|&b| u64::from(b)).sum();
    assert_eq!(checksum, (HEAP_BYTES / 4096) as u64);
    drop(heap);

    let hwm_without = vm_hwm_kib();
    let without = spawn_once(&program, &mut stack);
    match without {
        Ok(kib) => show("without_reset", hwm_without, kib),
        Err(e) => {
            eprintln!("big_parent: {e}");
            return ExitCode::from(1);
        }
    }

    let reset = std::fs::OpenOptions::new()
        .write(true)
        .open("/proc/self/clear_refs")
        .and_then(|mut f| f.write_all(b"5"));
    if let Err(e) = reset {
        eprintln!("big_parent: cannot reset the high-water mark via /proc/self/clear_refs: {e}");
        return ExitCode::from(1);
    }
    let hwm_with = vm_hwm_kib();
    match spawn_once(&program, &mut stack) {
        Ok(kib) => show("with_reset", hwm_with, kib),
        Err(e) => {
            eprintln!("big_parent: {e}");
            return ExitCode::from(1);
        }
    }
    ExitCode::SUCCESS
}
