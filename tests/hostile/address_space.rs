//! Memory that runs out: under an address-space limit (`ulimit -v`, RLIMIT_AS) coldtrace either
//! finishes or says one line and exits 125 — never std's abort (SIGABRT after "memory
//! allocation of N bytes failed") — and every run it recorded before stays whole.
//!
//! Each case sweeps the limit upwards from the lowest at which the kernel can load coldtrace at
//! all (below it `execve` fails past its point of no return: SIGSEGV before any code of ours),
//! so that the failed allocation falls at many different points of the work.

use super::common::{ct, Output, TempDir};
use super::{assert_one_escaped_line, assert_records_whole, DEADLINE};
use std::os::unix::process::ExitStatusExt;

/// KiB between two limits of a sweep, and how many limits it tries.
const STEP_KIB: u64 = 256;
const LIMITS: u64 = 28;

/// The lowest limit (a multiple of [`STEP_KIB`]) at which coldtrace starts: `--version` is not
/// killed by the kernel's SIGSEGV.
fn lowest_limit_kib(dir: &TempDir) -> u64 {
    (4..=1024)
        .map(|k| k * STEP_KIB)
        .find(|&kib| {
            let out = ct(dir.path(), ["--version"])
                .under_address_space_limit(kib)
                .run_within(DEADLINE);
            out.status.signal() != Some(rustix::process::Signal::SEGV.as_raw())
        })
        .expect("coldtrace does not start under 256 MiB of address space")
}

/// `coldtrace ARGS` in `dir` under [`LIMITS`] limits from the lowest upwards; each outcome is
/// checked, and given to `each` with its limit. Returns how many ended out of memory.
fn sweep(dir: &TempDir, args: &[&str], mut each: impl FnMut(u64, &Output)) -> usize {
    let lowest = lowest_limit_kib(dir);
    let mut out_of_memory = 0;
    for kib in (0..LIMITS).map(|i| lowest + i * STEP_KIB) {
        for out_dir in ["b", "c"] {
            let _ = std::fs::remove_dir_all(dir.join(out_dir));
        }
        let out = ct(dir.path(), args)
            .under_address_space_limit(kib)
            .run_within(DEADLINE);
        match out.code() {
            Some(0) => {}
            Some(125) => {
                assert_one_escaped_line(&out);
                let line = out.stderr_lines()[0];
                assert!(
                    line.starts_with("coldtrace: error: out of memory: ")
                        && line.contains(" KiB (ulimit -v): raise it"),
                    "{}",
                    out.describe()
                );
                out_of_memory += 1;
            }
            _ => panic!("under ulimit -v {kib}: {}", out.describe()),
        }
        each(kib, &out);
    }
    out_of_memory
}

#[test]
fn a_batch_out_of_memory_says_one_line_and_keeps_its_records_whole() {
    let dir = TempDir::new("asrun");
    let mut with_records = 0;
    let ran_out = sweep(
        &dir,
        &["run", "-q", "-n", "3", "-o", "b", "--", "true"],
        |_, out| {
            if dir.join("b/runs.jsonl").exists() {
                let records = assert_records_whole(&dir.join("b"), out.code() == Some(0));
                if out.code() == Some(125) && !records.is_empty() {
                    with_records += 1;
                }
            }
        },
    );
    assert!(
        ran_out > 0,
        "no limit of the sweep ran coldtrace out of memory"
    );
    assert!(
        with_records > 0,
        "memory never ran out after a recorded run"
    );
}

#[test]
fn a_batch_that_ran_out_of_memory_is_read_back_by_report() {
    let dir = TempDir::new("asreport");
    let mut read_back = 0;
    sweep(
        &dir,
        &["run", "-q", "-n", "3", "-o", "b", "--", "true"],
        |kib, out| {
            let recorded = std::fs::read_to_string(dir.join("b/runs.jsonl")).unwrap_or_default();
            if out.code() != Some(125) || recorded.is_empty() || read_back > 0 {
                return;
            }
            let report = ct(dir.path(), ["report", "--json", "b"]).run_within(DEADLINE);
            report.expect_code(0);
            let row = &report.json()["batches"][0];
            assert_eq!(row["complete"], false, "ulimit -v {kib}: {row:#}");
            let counted =
                row["counted"].as_u64().unwrap_or(0) + row["rejected"].as_u64().unwrap_or(0);
            assert_eq!(
                counted,
                recorded.lines().count() as u64,
                "ulimit -v {kib}: {row:#}"
            );
            read_back += 1;
        },
    );
    assert_eq!(read_back, 1, "memory never ran out after a recorded run");
}

#[test]
fn a_comparison_out_of_memory_says_one_line() {
    let dir = TempDir::new("ascmp");
    let args = ["compare", "-q", "-n", "2", "-o", "c", "true", "echo"];
    let ran_out = sweep(&dir, &args, |_, _| {});
    assert!(
        ran_out > 0,
        "no limit of the sweep ran coldtrace out of memory"
    );
}

#[test]
fn time_out_of_memory_says_one_line_not_a_report() {
    let dir = TempDir::new("astime");
    let ran_out = sweep(&dir, &["time", "-f", "%x", "true"], |_, out| {
        if out.code() == Some(0) {
            assert_eq!(out.stderr, "0\n", "{}", out.describe());
        }
    });
    assert!(
        ran_out > 0,
        "no limit of the sweep ran coldtrace out of memory"
    );
}
