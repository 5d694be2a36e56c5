#![forbid(unsafe_code)]
//! Times `FileSet::collect`, `residency` and `evict` on a tree of ~10,000 small files on a
//! disk-backed directory, and on the Python installation (`sys.base_prefix`) if there is one;
//! and a batch's bookkeeping: `FileTable::walk` (the one walk of a batch), `FileTable::check`
//! (every file's residency, then and now, without walking) and the eviction's check (each file
//! evicted and probed with one open).
//!
//! `cargo run --release --example cache_bench [ROUNDS]`; prints a Markdown table (median of
//! ROUNDS, default 7). The tree is kept in /var/tmp/coldtrace-bench-tree for later runs.

use coldtrace::measure::cache::{cachestat_available, is_tmpfs, FileSet, FileTable};
use std::path::{Path, PathBuf};
use std::time::Duration;

const TREE: &str = "/var/tmp/coldtrace-bench-tree";
const DIRS: usize = 100;
const FILES_PER_DIR: usize = 100;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let rounds: usize = match std::env::args().nth(1) {
        Some(n) => n.parse()?,
        None => 7,
    };
    let base = Path::new("/var/tmp");
    if is_tmpfs(base).unwrap_or(true) {
        return Err(
            "/var/tmp is tmpfs (or statfs failed): eviction would be meaningless there".into(),
        );
    }
    let tree = PathBuf::from(TREE);
    build_tree(&tree)?;

    let (now, release) = (utc_now(), rustix::system::uname());
    println!("# cache_bench\n");
    println!("- date: {now}");
    println!("- uname -r: {}", release.release().to_string_lossy());
    println!(
        "- method: {}",
        if cachestat_available() {
            "cachestat"
        } else {
            "mincore"
        }
    );
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!(
        "- /proc/loadavg at start: {} (2-core VM shared with other builds)",
        load.trim()
    );
    println!("- rounds: {rounds} (median shown); each round warms every file by reading it,");
    println!("  then times residency, evict, and residency again (cold)");
    println!("- every figure is the thread's CPU time (user + system), not wall time\n");
    println!("| tree | files | MiB | collect ms | residency ms | evict ms | residency after evict ms | ratio before → after | table walk ms | table check ms | table evict + check ms |");
    println!("|---|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|");
    bench(&tree, rounds)?;
    match python_prefix() {
        Some(dir) => bench(&dir, rounds)?,
        None => println!("\n(no python3 prefix found)"),
    }
    Ok(())
}

fn bench(root: &Path, rounds: usize) -> Result<(), Box<dyn std::error::Error>> {
    let (mut collect, mut residency, mut evict, mut cold) = (vec![], vec![], vec![], vec![]);
    let (mut walk, mut check, mut evict_check) = (vec![], vec![], vec![]);
    let roots = [root.to_path_buf()];
    let mut ratios = (None, None);
    let mut last = None;
    for _ in 0..rounds {
        let t = Cpu::now();
        let set = FileSet::collect(&[root.to_path_buf()])?;
        collect.push(t.elapsed());
        // Warm the files so that the eviction has work to do.
        for f in set.files() {
            let _ = std::fs::read(&f.path);
        }
        let t = Cpu::now();
        let before = set.residency();
        residency.push(t.elapsed());
        let t = Cpu::now();
        let report = set.evict();
        evict.push(t.elapsed());
        let t = Cpu::now();
        let after = set.residency();
        cold.push(t.elapsed());
        if report.failed > 0 {
            eprintln!(
                "evict: {} failed, first: {:?}",
                report.failed, report.first_error
            );
        }
        ratios = (before.resident_ratio, after.resident_ratio);
        // A batch's bookkeeping: one walk into the table, a whole check (each file's residency
        // then and now), and the eviction with the check that follows it (one open each).
        let t = Cpu::now();
        let mut table = FileTable::walk(&roots, &roots, &|| None, &|_| {})?;
        walk.push(t.elapsed());
        for f in set.files() {
            let _ = std::fs::read(&f.path);
        }
        let t = Cpu::now();
        let _ = table.check(false, &|| None, &mut |_| {}, &|_| {});
        check.push(t.elapsed());
        let t = Cpu::now();
        let _ = table.check(true, &|| None, &mut |_| {}, &|_| {});
        evict_check.push(t.elapsed());
        last = Some(set);
    }
    let set = last.ok_or("no rounds")?;
    let ratio = |r: Option<f64>| r.map_or("unknown".to_owned(), |r| format!("{:.1}%", r * 100.0));
    println!(
        "| {} | {} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {} → {} | {:.1} | {:.1} | {:.1} |",
        root.display(),
        set.len(),
        set.total_bytes() as f64 / (1 << 20) as f64,
        median_ms(&mut collect),
        median_ms(&mut residency),
        median_ms(&mut evict),
        median_ms(&mut cold),
        ratio(ratios.0),
        ratio(ratios.1),
        median_ms(&mut walk),
        median_ms(&mut check),
        median_ms(&mut evict_check),
    );
    Ok(())
}

/// This thread's CPU time (user and system, `CLOCK_THREAD_CPUTIME_ID`): what the step cost
/// coldtrace, whatever else the machine runs (its wall time grows with the load).
struct Cpu(Duration);

impl Cpu {
    fn now() -> Cpu {
        let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
        Cpu(Duration::new(t.tv_sec as u64, t.tv_nsec as u32))
    }

    fn elapsed(&self) -> Duration {
        Cpu::now().0.saturating_sub(self.0)
    }
}

fn median_ms(samples: &mut [Duration]) -> f64 {
    samples.sort();
    samples
        .get(samples.len() / 2)
        .map_or(f64::NAN, |d| d.as_secs_f64() * 1e3)
}

/// 100 directories × 100 files of 1–8 KiB, written once and fsynced by `sync`.
fn build_tree(tree: &Path) -> std::io::Result<()> {
    let marker = tree.with_extension("complete");
    if marker.exists() {
        return Ok(());
    }
    for d in 0..DIRS {
        let dir = tree.join(format!("d{d:03}"));
        std::fs::create_dir_all(&dir)?;
        for f in 0..FILES_PER_DIR {
            let len = 1024 * (1 + (d * FILES_PER_DIR + f) % 8);
            std::fs::write(dir.join(format!("f{f:03}.bin")), vec![b'c'; len])?;
        }
    }
    rustix::fs::sync();
    std::fs::write(marker, b"")
}

fn python_prefix() -> Option<PathBuf> {
    let out = std::process::Command::new("python3")
        .args(["-c", "import sys; print(sys.base_prefix)"])
        .output()
        .ok()?;
    let path = PathBuf::from(String::from_utf8(out.stdout).ok()?.trim());
    (out.status.success() && path.is_dir()).then_some(path)
}

/// `YYYY-MM-DD HH:MM:SS UTC` from the system clock (civil-from-days, proleptic Gregorian).
fn utc_now() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let (days, rem) = ((secs / 86_400) as i64, secs % 86_400);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02} UTC",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}
