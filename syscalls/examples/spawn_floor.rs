//! The overhead floor of spawn + reap: nothing but `/bin/true` spawned through this crate
//! (vfork semantics) and reaped with `wait4`, N times.
//!
//! Usage: `cargo run --release --example spawn_floor -- [N] [PROGRAM]` (default 1000 runs of
//! `/bin/true`). Prints `runs=N median_us=… mean_us=…`, each iteration timed on
//! CLOCK_MONOTONIC from just before the spawn to just after `wait4` returns.
#![forbid(unsafe_code)]

use coldtrace_syscalls::wait::monotonic_ns;
use coldtrace_syscalls::{ChildStack, Program, SpawnOptions};
use std::ffi::CString;
use std::process::ExitCode;

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let runs: usize = match args.next().map(|a| a.parse()) {
        None => 1000,
        Some(Ok(n)) if n > 0 => n,
        Some(_) => {
            eprintln!("spawn_floor: usage: spawn_floor [RUNS > 0] [PROGRAM]");
            return ExitCode::from(2);
        }
    };
    let path = args.next().unwrap_or_else(|| "/bin/true".to_string());
    let Ok(path) = CString::new(path) else {
        eprintln!("spawn_floor: the program path contains a NUL byte");
        return ExitCode::from(2);
    };
    let program = Program::new(path.clone(), vec![path], Vec::new());
    let mut stack = match ChildStack::new() {
        Ok(stack) => stack,
        Err(e) => {
            eprintln!("spawn_floor: cannot map the child stack: {e}");
            return ExitCode::from(1);
        }
    };
    let options = SpawnOptions::default();
    let mut times_ns: Vec<u64> = Vec::with_capacity(runs);
    for _ in 0..runs {
        let start = monotonic_ns();
        let child = match program.spawn(&options, &mut stack) {
            Ok(child) => child,
            Err(e) => {
                eprintln!("spawn_floor: spawn failed at {:?}: {}", e.stage, e.errno);
                return ExitCode::from(1);
            }
        };
        match child.reap() {
            Ok((status, _usage)) if status.code() == Some(0) => {}
            Ok((status, _)) => {
                eprintln!("spawn_floor: the program did not exit 0: {status}");
                return ExitCode::from(1);
            }
            Err(e) => {
                eprintln!("spawn_floor: wait4 failed: {e}");
                return ExitCode::from(1);
            }
        }
        times_ns.push(monotonic_ns().saturating_sub(start));
    }
    let mean_us = times_ns.iter().sum::<u64>() as f64 / runs as f64 / 1e3;
    times_ns.sort_unstable();
    let median_us = if runs % 2 == 1 {
        times_ns[runs / 2] as f64 / 1e3
    } else {
        (times_ns[runs / 2 - 1] + times_ns[runs / 2]) as f64 / 2e3
    };
    println!("runs={runs} median_us={median_us:.1} mean_us={mean_us:.1}");
    ExitCode::SUCCESS
}
