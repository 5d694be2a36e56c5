//! The cold states coldtrace was made to tell apart, on the built binary: a dentry/inode-cold
//! first run (kernel CPU, nothing read from storage), a page-cache-cold one (waiting on
//! storage, with the bytes read), and an evicted batch whose later runs were not cold because
//! another process keeps the files mapped. `drop_caches` needs root: that part says why it is
//! skipped off root (CI runs as root).
#![forbid(unsafe_code)]

mod common;

use common::{ct, read_batch, read_records, write_file, TempDir};
use serde_json::Value;
use std::path::Path;
use std::time::Duration;

/// stderr with every run of whitespace made one space: sentences under the table are wrapped.
fn prose(stderr: &str) -> String {
    stderr.split_whitespace().collect::<Vec<_>>().join(" ")
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
    tree(&root, 100, 1000);
    // Dentries and inodes dropped (`echo 2`) before the first run only; `du` stats every entry.
    let out = ct(
        tmp.path(),
        [
            "run",
            "-n",
            "5",
            "-o",
            "b",
            "--prepare",
            "[ -e m ] || { : > m; sync; echo 2 > /proc/sys/vm/drop_caches; }",
            "--",
            "du",
            "-s",
            root.to_str().unwrap(),
        ],
    )
    .run_within(Duration::from_secs(300));
    out.expect_code(0);
    let batch = read_batch(&tmp.join("b"));
    let p = &batch["first_penalty"];
    assert_eq!(p["significant"], true, "{p}{}", out.describe());
    assert_eq!(p["basis"], "schedstat", "{p}");
    // Kernel CPU: the CPU part is larger than the blocked part, and it is system time.
    let (cpu, blocked) = (f64_of(p, "cpu_ns"), f64_of(p, "blocked_ns"));
    assert!(cpu > blocked, "more CPU than blocked: {p}");
    assert!(
        f64_of(p, "sys_us") * 1e3 > cpu / 2.0,
        "mostly system time: {p}"
    );
    // Nothing worth the name from storage: dropping an inode drops its few cached pages (du's
    // own locale files), never the tree's.
    let read = f64_of(&p["evidence"], "read_bytes");
    assert!(read < 4.0 * 1048576.0, "no storage reads to speak of: {p}");
    assert_eq!(batch["first_cold_cause"]["cause"], "prepare", "{batch:#}");
    let said = prose(&out.stderr);
    assert!(said.contains("first run +"), "{}", out.stderr);
    assert!(
        said.contains("the first run followed a --prepare command"),
        "{}",
        out.stderr
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
    assert_eq!(d["basis"], "schedstat", "{d}");
    // Waiting on storage: on this VM the host caches the disk, so populating the page cache
    // costs about as much CPU as the wait (a 256 MiB cat: +91 ms blocked, +117 ms CPU); the
    // wait is a large part either way, where a dentry-cold run has none.
    assert!(
        f64_of(d, "blocked_ns") > 0.2 * f64_of(d, "mean_wall_ns"),
        "waiting on storage: {d}"
    );
    assert_eq!(batch["first_cold_cause"]["cause"], "evict", "{batch:#}");
    let said = prose(&out.stderr);
    // The mean read is about the file's 256 MiB (a cycle can read a little less when the
    // machine's reclaim took some readahead back).
    let evidence = said
        .split_once("blocked (")
        .map_or("", |(_, rest)| rest.split(')').next().unwrap_or(""));
    assert!(
        said.contains("cold penalty, measured over 6 cycles: +")
            && evidence.contains("MiB read from storage"),
        "{}",
        out.stderr
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
    let said = prose(&out.stderr);
    assert!(
        said.contains(
            "not cold: run #1 was made cold but was not: 100 % of what the first run brought \
             into the page cache was cached before it; mapped by pid"
        ),
        "{}",
        out.stderr
    );
    // report counts them with the batch's other anomalies.
    let report = ct(tmp.path(), ["report", "--json", "b"]).run();
    report.expect_code(0);
    assert_eq!(report.json()["batches"][0]["anomalies"], 3);
}
