//! The cold states coldtrace was made to tell apart, on the built binary: a dentry/inode-cold
//! first run (kernel CPU, nothing read from storage), a page-cache-cold one (waiting on
//! storage, with the bytes read), and an evicted batch whose later runs were not cold because
//! another process keeps the files mapped. `drop_caches` needs root: that part says why it is
//! skipped off root (CI runs as root).
#![forbid(unsafe_code)]

mod common;

use common::{
    ct, figure_after, figure_before, prose, read_batch, read_records, write_file, TempDir,
};
use serde_json::Value;
use std::path::Path;
use std::time::Duration;

/// The note under the table that starts with `start`, its folded lines joined, as prose.
fn note(stderr: &str, start: &str) -> String {
    let unfolded = stderr.replace("\n    ", " ");
    let line = unfolded
        .lines()
        .map(str::trim)
        .find(|l| l.starts_with(start))
        .unwrap_or_else(|| panic!("no note starting {start:?} in: {stderr}"));
    prose(line)
}

fn f64_of(v: &Value, key: &str) -> f64 {
    v[key]
        .as_f64()
        .unwrap_or_else(|| panic!("{key} is not a number: {v}"))
}

fn disk_backed(tmp: &TempDir) {
    assert_eq!(
        coldtrace::measure::cache::is_tmpfs(tmp.path()),
        Some(false),
        "{} is on tmpfs: these cold states need a disk-backed temporary directory",
        tmp.path().display()
    );
}

/// One test at a time: dropping dentries and inodes drops the other tests' files' cached pages.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn alone() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

/// `dirs` directories of `files` empty files each under `root`.
fn tree(root: &Path, dirs: usize, files: usize) {
    for d in 0..dirs {
        let dir = root.join(format!("d{d}"));
        std::fs::create_dir_all(&dir).unwrap();
        for f in 0..files {
            std::fs::File::create(dir.join(format!("f{f}"))).unwrap();
        }
    }
}

#[test]
fn a_dentry_cold_first_run_is_kernel_cpu_with_no_storage_reads() {
    if !rustix::process::geteuid().is_root() {
        eprintln!("skipped: writing /proc/sys/vm/drop_caches needs root (CI runs as root)");
        return;
    }
    let _alone = alone();
    let tmp = TempDir::new("dentry-cold");
    disk_backed(&tmp);
    let root = tmp.join("tree");
    let made = std::time::Instant::now();
    tree(&root, 100, 1000);
    eprintln!(
        "cold_shapes: 100,000 empty files made in {:?}",
        made.elapsed()
    );
    // Dentries and inodes dropped (`echo 2`) before the first run only; `du` stats every entry.
    // The tree's metadata blocks (directories, inode tables) stay in the block device's page
    // cache, unless the machine reclaimed them while the tree was made (a kdamond pages out
    // what was idle for a minute): one walk between two drops reads them back first, so the
    // first run is cold in its dentries and inodes alone.
    let prepare = format!(
        "[ -e m ] || {{ : > m; sync; echo 2 > /proc/sys/vm/drop_caches; du -s {0} >/dev/null; \
         echo 2 > /proc/sys/vm/drop_caches; }}",
        root.display()
    );
    let out = ct(
        tmp.path(),
        [
            "run",
            "-n",
            "10",
            "-o",
            "b",
            "--prepare",
            &prepare,
            "--",
            "du",
            "-s",
            root.to_str().unwrap(),
        ],
    )
    .ahead_of_other_sessions()
    .run_within(Duration::from_secs(300));
    out.expect_code(0);
    let batch = read_batch(&tmp.join("b"));
    let p = &batch["first_penalty"];
    assert_eq!(p["significant"], true, "{p}{}", out.describe());
    // `du` is one task: split by its tree's states as root (the main thread's parts beside
    // them), by its schedstat otherwise.
    let by_tree = p["basis"] == "tree";
    assert!(by_tree || p["basis"] == "schedstat", "{p}");
    // Kernel CPU: the CPU part is larger than the blocked part, and it is system time.
    let (cpu, blocked) = (f64_of(p, "cpu_ns"), f64_of(p, "blocked_ns"));
    assert!(cpu > blocked, "more CPU than blocked: {p}");
    let (cpu, blocked) = if by_tree {
        let t = &p["tree"];
        (f64_of(t, "on_cpu_ns"), f64_of(t, "uninterruptible_ns"))
    } else {
        (cpu, blocked)
    };
    assert!(cpu > blocked, "more CPU than uninterruptible: {p}");
    assert!(
        f64_of(p, "sys_us") * 1e3 > cpu / 2.0,
        "mostly system time: {p}"
    );
    // Nothing worth the name from storage: dropping an inode drops its few cached pages (du's
    // own locale files), never the tree's.
    let read = f64_of(&p["evidence"], "read_bytes");
    assert!(read < 1048576.0, "no storage reads to speak of: {p}");
    assert_eq!(batch["first_cold_cause"]["cause"], "prepare", "{batch:#}");
    // What a person reads: the penalty is CPU, most of it system time, next to a blocked part
    // and a storage read that are small beside it.
    let said = prose(&out.shown());
    let penalty = &note(&out.shown(), "first run +");
    eprintln!("cold_shapes: dentry-cold: {penalty}");
    // `+290 ms CPU`, `+4 ms blocked`; by the tree `on a CPU +290 ms`, `kernel locks) +0 ns`.
    let part = |schedstat: &str, tree: &str| {
        let said = if by_tree {
            figure_after(penalty, tree)
        } else {
            figure_before(penalty, schedstat)
        };
        said.unwrap_or_else(|| panic!("no {schedstat:?} or {tree:?} in: {penalty}"))
    };
    let (cpu_said, blocked_said) = (part(" CPU", "on a CPU"), part(" blocked", "kernel locks)"));
    assert!(
        (cpu_said - cpu).abs() <= cpu * 0.01 && blocked_said < cpu_said / 4.0,
        "CPU, not blocked: {penalty}"
    );
    let sys_said = figure_after(penalty, "sys ≈")
        .unwrap_or_else(|| panic!("the system time is named: {penalty}"));
    assert!(sys_said > cpu_said / 2.0, "mostly system time: {penalty}");
    // At most a few pages of du's own files, whose inodes went with the drop.
    let read_said = figure_before(penalty, " read from storage").unwrap_or(0.0);
    assert!(read_said < 1048576.0, "no storage reads: {penalty}");
    assert!(
        said.contains("the first run followed a --prepare command"),
        "{}",
        out.describe()
    );
}

#[test]
fn a_page_cache_cold_run_waits_on_storage_with_the_bytes_read() {
    let _alone = alone();
    let tmp = TempDir::new("page-cache-cold");
    disk_backed(&tmp);
    let file = tmp.join("data.bin");
    {
        use std::io::Write;
        let mut out = std::fs::File::create(&file).unwrap();
        let chunk: Vec<u8> = (0..1u32 << 20)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8)
            .collect();
        for _ in 0..256 {
            out.write_all(&chunk).unwrap();
        }
        out.sync_all().unwrap();
    }
    let f = file.to_str().unwrap();
    // Six cycles of { evict; cat, cat, cat } of 256 MiB: the cold runs against their own
    // cycle's warm run (on a VM whose host caches the disk a cold read is fast: the file is
    // large so that what it costs stands out of a loaded machine's noise).
    let out = ct(
        tmp.path(),
        [
            "run",
            "-n",
            "3",
            "--cold-cycles",
            "6",
            "-o",
            "b",
            "--evict",
            f,
            "--",
            "cat",
            f,
        ],
    )
    .ahead_of_other_sessions()
    .run_within(Duration::from_secs(300));
    out.expect_code(0);
    let batch = read_batch(&tmp.join("b"));
    let d = &batch["cycles"]["penalty"]["per_cycle"];
    let runs: Vec<String> = read_records(&tmp.join("b"))
        .iter()
        .map(|r| {
            format!(
                "{} {} {} {}",
                r["index"], r["role"], r["counted"], r["wall_ns"]
            )
        })
        .collect();
    assert_eq!(d["cycles"], 6, "{d}: {runs:#?}{}", out.describe());
    // Every cold run read the whole file; the mean difference says so.
    assert!(f64_of(d, "read_bytes") >= (255u64 << 20) as f64, "{d}");
    assert_eq!(d["significant"], true, "{d}{}", out.describe());
    // `cat` is one task: split by its tree's states as root, by its schedstat otherwise.
    let by_tree = d["basis"] == "tree";
    assert!(by_tree || d["basis"] == "schedstat", "{d}");
    // Waiting on storage: on this VM the host caches the disk, so populating the page cache
    // costs about as much CPU as the wait (a 256 MiB cat: +91 ms blocked, +117 ms CPU); the
    // wait is a large part either way, where a dentry-cold run has none. By the tree, the wait
    // is uninterruptible sleep.
    let wait = if by_tree {
        f64_of(&d["tree"], "uninterruptible_ns")
    } else {
        f64_of(d, "blocked_ns")
    };
    assert!(
        wait > 0.2 * f64_of(d, "mean_wall_ns"),
        "waiting on storage: {d}"
    );
    assert_eq!(batch["first_cold_cause"]["cause"], "evict", "{batch:#}");
    // What a person reads: the measured penalty, a blocked part that is a large share of it,
    // with the file's 256 MiB read from storage (the mean over the cycles: a cycle can read a
    // little less when the machine's reclaim took some readahead back).
    let penalty = &note(&out.shown(), "cold penalty, measured over 6 cycles: +");
    eprintln!("cold_shapes: page-cache-cold: {penalty}");
    let total = figure_after(penalty, "measured over 6 cycles:").unwrap();
    // `+91 ms blocked (…)`; by the tree `uninterruptible (storage, faults, kernel locks) +91 ms
    // (…)`.
    let (blocked, evidence) = if by_tree {
        let words = "kernel locks)";
        let (_, after) = penalty.split_once(words).unwrap_or_default();
        let evidence = after.split_once(" (").map_or("", |(_, e)| e);
        (
            figure_after(penalty, words),
            evidence.split(')').next().unwrap_or(""),
        )
    } else {
        let evidence = penalty.split_once(" blocked (").map_or("", |(_, e)| e);
        (
            figure_before(penalty, " blocked ("),
            evidence.split(')').next().unwrap_or(""),
        )
    };
    let blocked = blocked.unwrap_or_else(|| panic!("a blocked part: {penalty}"));
    assert!(
        (total - f64_of(d, "mean_wall_ns")).abs() <= total * 0.01 && blocked > 0.2 * total,
        "waiting on storage: {penalty}"
    );
    let read = figure_before(evidence, " read from storage")
        .unwrap_or_else(|| panic!("the bytes read: {penalty}"));
    assert!(read >= (255u64 << 20) as f64, "{penalty}");
    assert!(
        evidence.contains("voluntary context switch"),
        "the waits are counted: {penalty}"
    );
}

#[test]
fn evicted_runs_of_files_another_process_maps_are_flagged_not_cold() {
    let _alone = alone();
    let tmp = TempDir::new("not-cold");
    disk_backed(&tmp);
    let file = tmp.join("data.bin");
    std::fs::write(&file, vec![9u8; 8 << 20]).unwrap();
    std::fs::File::open(&file).unwrap().sync_all().unwrap();
    // After the first run, a process maps the file and touches every page, so the evictions
    // before the later runs cannot drop it; it exits by itself after 30 s.
    let mapper = tmp.join("mapper.py");
    write_file(
        &mapper,
        b"import mmap, sys, time\nf = open(sys.argv[1], 'rb')\n\
          m = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)\n\
          sum(m[i] for i in range(0, len(m), 4096))\nopen(sys.argv[2], 'w').close()\n\
          time.sleep(30)\n",
        0o644,
    );
    let conclude = format!(
        "[ -e started ] && exit 0; : > started; python3 {} {} ready </dev/null >/dev/null 2>&1 & \
         while [ ! -e ready ]; do sleep 0.05; done",
        mapper.display(),
        file.display()
    );
    let f = file.to_str().unwrap();
    let out = ct(
        tmp.path(),
        [
            "run",
            "-n",
            "4",
            "-o",
            "b",
            "--evict",
            f,
            "--conclude",
            &conclude,
            "--",
            "cat",
            f,
        ],
    )
    .run_within(Duration::from_secs(120));
    out.expect_code(0);
    let runs = read_records(&tmp.join("b"));
    assert!(
        runs[0]["child_io"]["read_bytes"].as_u64().unwrap() >= 8 << 20,
        "the first run was cold: {}",
        runs[0]
    );
    let batch = read_batch(&tmp.join("b"));
    let flagged: Vec<u64> = batch["anomalies"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["anomaly"]["kind"] == "not_cold")
        .map(|a| a["index"].as_u64().unwrap())
        .collect();
    assert_eq!(flagged, [1, 2, 3], "{batch:#}");
    for run in &runs[1..] {
        let ws = &run["cache"]["working_set_before"];
        assert_eq!(ws["resident_ratio"], 1.0, "fully cached before: {run}");
        assert_eq!(ws["paged_bytes"], 8 << 20, "{ws}");
        let anomaly = &run["anomalies"][0];
        assert_eq!(anomaly["metric"], "working_set_ratio_before", "{run}");
        let mapped = anomaly["mapped_by"].as_str().unwrap_or_default();
        assert!(
            mapped.starts_with("pid ") && mapped.contains("python3"),
            "{anomaly}"
        );
    }
    let said = prose(&out.shown());
    assert!(
        said.contains(
            "not cold: run #1 was made cold but was not: 100 % of what the first run brought \
             into the page cache was cached before it; mapped by pid"
        ),
        "{}",
        out.describe()
    );
    // report counts them with the batch's other anomalies.
    let report = ct(tmp.path(), ["report", "--json", "b"]).run();
    report.expect_code(0);
    assert_eq!(report.json()["batches"][0]["anomalies"], 3);
}
