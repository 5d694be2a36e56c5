//! "cached before" and "cached after" on the built binary: always shown when files are watched
//! (0 % included), right on overlayfs (where cachestat sees no pages), and unknown — never 0 %
//! or 100 % — for files the user may not write.
#![forbid(unsafe_code)]

mod common;

use coldtrace::measure::cache::FileSet;
use common::{ct, read_records, TempDir, BIN};
use serde_json::Value;
use std::path::Path;
use std::process::Command;

fn row<'a>(stderr: &'a str, label: &str) -> Option<&'a str> {
    stderr
        .lines()
        .find(|l| l.trim_start().starts_with(label))
        .map(str::trim)
}

#[test]
fn cached_before_and_after_are_shown_also_when_zero() {
    let tmp = TempDir::new("shown-zero");
    let file = tmp.join("F");
    std::fs::write(&file, vec![3u8; 4 << 20]).unwrap();
    let f = file.to_str().unwrap();
    for runs in ["1", "2"] {
        let out = ct(
            tmp.path(),
            ["run", "-n", runs, "--evict", f, "--", "cat", f],
        )
        .run_within(std::time::Duration::from_secs(60));
        out.expect_code(0);
        let shown = out.shown();
        let before = row(&shown, "cached before")
            .unwrap_or_else(|| panic!("no cached before row{}", out.describe()));
        let after = row(&shown, "cached after")
            .unwrap_or_else(|| panic!("no cached after row{}", out.describe()));
        if coldtrace::measure::cache::is_tmpfs(tmp.path()) == Some(false) {
            // `cached before  %  0 …`: the row's unit, then the first run's figure.
            let first = |row: &str| -> (String, String) {
                let cells: Vec<&str> = row.split_whitespace().collect();
                (cells[2].to_string(), cells[3].to_string())
            };
            assert_eq!(
                first(before),
                ("%".into(), "0".into()),
                "{}",
                out.describe()
            );
            assert_eq!(
                first(after),
                ("%".into(), "100".into()),
                "{}",
                out.describe()
            );
        }
    }
}

/// Runs `script` in a private mount namespace (`unshare -m`) in which `DIR/merged` is an
/// overlay of `DIR/lower`. Panics with what is missing when no overlay can be mounted here.
fn in_overlay(dir: &Path, script: &str) -> std::process::Output {
    for d in ["lower", "upper", "work", "merged"] {
        std::fs::create_dir_all(dir.join(d)).unwrap();
    }
    let mount = format!(
        "mount -t overlay overlay -o lowerdir={0}/lower,upperdir={0}/upper,workdir={0}/work \
         {0}/merged || exit 97\n{script}",
        dir.display()
    );
    let mut unshare = Command::new("unshare");
    if rustix::process::geteuid().as_raw() != 0 {
        unshare.arg("-r");
    }
    let out = unshare
        .args(["-m", "sh", "-c", &mount])
        .current_dir(dir)
        .env("CT", BIN)
        .output()
        .expect("unshare (util-linux) runs");
    assert_ne!(
        out.status.code(),
        Some(97),
        "cannot mount an overlayfs here (needs root or unprivileged user namespaces): {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

#[test]
fn overlayfs_residency_comes_from_mincore_because_cachestat_sees_no_pages() {
    let tmp = TempDir::new("overlay");
    let lower = tmp.join("lower");
    std::fs::create_dir_all(&lower).unwrap();
    std::fs::write(lower.join("f"), vec![9u8; 8 << 20]).unwrap();
    // Written back below the overlay: through it, a lower layer's dirty pages are never
    // written back (overlayfs syncs the upper layer only), so they could not be evicted.
    std::fs::File::open(lower.join("f"))
        .unwrap()
        .sync_all()
        .unwrap();
    // Read through the overlay (cached), measure; then evict and read it cold. Another
    // process on the machine may drop the page cache (`drop_caches`, memory pressure) between
    // a read and coldtrace's measurement: each step is taken again until the file is wholly
    // cached after it, seen below the overlay (cachestat on the lower file, whose pages the
    // overlay's reads fill). Nothing but the step's own `cat` reads the file, so pages cached
    // after the step were cached when coldtrace measured.
    let whole_below = || {
        FileSet::collect(&[lower.join("f")])
            .unwrap()
            .residency()
            .resident_ratio
            == Some(1.0)
    };
    let step = |name: &str, script: &str| -> Value {
        let mut seen = Vec::new();
        for attempt in 0..5 {
            let dir = format!("{name}{attempt}");
            let out = in_overlay(tmp.path(), &script.replace("DIR", &dir));
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            let cache = read_records(&tmp.join(&dir))[0]["cache"].clone();
            if whole_below() {
                return cache;
            }
            seen.push(cache);
        }
        panic!("{name}: the file left the cache after every attempt: {seen:?}");
    };
    let warm = step(
        "warm",
        "cat merged/f > /dev/null\n\
         \"$CT\" run -q -o DIR --watch merged/f -- true\n",
    );
    assert_eq!(warm["before"]["method"], "mincore", "{warm}");
    assert_eq!(
        warm["before"]["resident_ratio"], 1.0,
        "cached, seen: {warm}"
    );
    let cold = step(
        "cold",
        "\"$CT\" run -q -o DIR --evict merged/f -- cat merged/f\n",
    );
    assert_eq!(cold["before"]["resident_ratio"], 0.0, "evicted: {cold}");
    assert_eq!(cold["after"]["resident_ratio"], 1.0, "read back in: {cold}");
}

#[test]
fn files_the_user_may_not_write_are_unknown_with_the_reason_never_a_figure() {
    // /etc/passwd is root's and world-readable: an unprivileged user may read it, not write it.
    let target = "/etc/passwd";
    let tmp = TempDir::new("eperm");
    let _ = Command::new("chmod")
        .args(["0777", tmp.path().to_str().unwrap()])
        .status();
    let mut cmd = if rustix::process::geteuid().as_raw() == 0 {
        let mut c = Command::new("setpriv");
        c.args([
            "--reuid=nobody",
            "--regid=nogroup",
            "--clear-groups",
            "--",
            BIN,
        ]);
        c
    } else {
        Command::new(BIN)
    };
    let out = cmd
        .args([
            "run", "-n", "2", "-o", "b", "--watch", target, "--", "cat", target,
        ])
        .current_dir(tmp.path())
        .env("COLDTRACE_STATE_DIR", "")
        .output()
        .expect("run coldtrace as an unprivileged user");
    // What the terminal shows: the notices on stderr, the table on stdout.
    let stderr = String::from_utf8_lossy(&out.stderr) + String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let records = read_records(&tmp.join("b"));
    for r in &records {
        let before = &r["cache"]["before"];
        assert_eq!(
            before["resident_ratio"],
            Value::Null,
            "never a figure: {before}"
        );
        assert_eq!(before["resident_bytes"], Value::Null, "{before}");
        assert_eq!(before["unknown_files"], 1, "{before}");
        assert!(
            before["unknown_reason"].as_str().unwrap().contains("EPERM")
                || before["unknown_reason"]
                    .as_str()
                    .unwrap()
                    .contains("mincore"),
            "{before}"
        );
    }
    let before = row(&stderr, "cached before").expect("the row is shown");
    assert!(
        before.contains("unknown") && !before.contains('%'),
        "{before}"
    );
    assert!(stderr.contains("write access"), "{stderr}");
}

/// The sentences under the table, wrapping undone.
fn prose(stderr: &str) -> String {
    stderr.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn stayed(dir: &Path) -> Value {
    read_records(dir)[0]["cold_action"]["stayed_cached"].clone()
}

#[test]
fn an_eviction_on_tmpfs_is_said_not_to_have_made_the_file_cold() {
    let shm = Path::new("/dev/shm");
    assert_eq!(
        coldtrace::measure::cache::is_tmpfs(shm),
        Some(true),
        "this test needs /dev/shm to be a tmpfs"
    );
    let tmp = TempDir::new("evict-tmpfs");
    let file = shm.join(format!("coldtrace-test-{}", std::process::id()));
    std::fs::write(&file, vec![1u8; 1 << 20]).unwrap();
    let f = file.to_str().unwrap();
    let out = ct(
        tmp.path(),
        ["run", "-n", "2", "-o", "b", "--evict", f, "--", "cat", f],
    )
    .run();
    let _ = std::fs::remove_file(&file);
    out.expect_code(0);
    let s = stayed(&tmp.join("b"));
    assert_eq!(s["resident_ratio"], 1.0, "{s}");
    assert_eq!(s["top"][0]["path"], f, "{s}");
    assert!(
        s["top"][0]["reason"].as_str().unwrap().contains("tmpfs"),
        "{s}"
    );
    let text = prose(&out.shown());
    assert!(
        text.contains(&format!(
            "not cold: 100 % of {f} stayed cached after the eviction"
        )) && text.contains("on tmpfs or ramfs, where nothing can be evicted"),
        "{}",
        out.describe()
    );
}

#[test]
fn an_eviction_of_a_file_another_process_maps_names_that_process() {
    let tmp = TempDir::new("evict-mapped");
    let file = tmp.join("mapped.bin");
    std::fs::write(&file, vec![2u8; 4 << 20]).unwrap();
    std::fs::File::open(&file).unwrap().sync_all().unwrap();
    let f = file.to_str().unwrap();
    // A process that maps the file, touches every page, says so and waits for its stdin.
    let mut holder = Command::new("/usr/bin/python3")
        .args([
            "-c",
            "import mmap, sys\nf = open(sys.argv[1], 'rb')\n\
             m = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)\n\
             s = sum(m[i] for i in range(0, len(m), 4096))\nprint('ready', flush=True)\n\
             sys.stdin.read()",
            f,
        ])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("python3 maps the file");
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(holder.stdout.take().unwrap()),
        &mut line,
    )
    .unwrap();
    assert_eq!(line.trim(), "ready");
    let out = ct(
        tmp.path(),
        ["run", "-n", "2", "-o", "b", "--evict", f, "--", "true"],
    )
    .run();
    drop(holder.stdin.take());
    let _ = holder.wait();
    out.expect_code(0);
    let s = stayed(&tmp.join("b"));
    assert!(s["resident_bytes"].as_u64().unwrap() > 0, "{s}");
    let reason = s["top"][0]["reason"].as_str().unwrap();
    assert_eq!(
        reason,
        format!("mapped by another process (pid {}, python3)", holder.id()),
        "{s}"
    );
    assert!(
        prose(&out.shown()).contains("stayed cached after the eviction (1 file): mapped.bin"),
        "{}",
        out.describe()
    );
}

#[test]
fn report_says_when_cached_before_covers_different_file_sets() {
    let tmp = TempDir::new("report-sets");
    for (name, size) in [("a", 8192), ("b", 4096)] {
        std::fs::create_dir(tmp.join(name)).unwrap();
        std::fs::write(tmp.join(name).join("f"), vec![0u8; size]).unwrap();
    }
    let batch = |out: &str, watch: &str| {
        let w = tmp.join(watch);
        ct(
            tmp.path(),
            [
                "run",
                "-q",
                "-n",
                "2",
                "-o",
                out,
                "--watch",
                w.to_str().unwrap(),
                "--",
                "true",
            ],
        )
        .run()
        .expect_code(0);
    };
    batch("one", "a");
    batch("two", "a");
    batch("three", "b");
    let fingerprint =
        |d: &str| common::read_batch(&tmp.join(d))["context"]["file_set"]["fingerprint"].clone();
    assert_eq!(
        fingerprint("one"),
        fingerprint("two"),
        "the same set, the same fingerprint"
    );
    assert_ne!(fingerprint("one"), fingerprint("three"));
    let same = ct(tmp.path(), ["report", "one", "two"]).run();
    assert!(
        !same.stdout.contains("different file sets"),
        "{}",
        same.stdout
    );
    let mixed = ct(tmp.path(), ["report", "one", "two", "three"]).run();
    mixed.expect_code(0);
    let text = prose(&mixed.stdout);
    assert!(
        text.contains("cached before covers 2 different file sets"),
        "{}",
        mixed.stdout
    );
    assert!(
        text.contains(&format!("[a] {} (1 file,", tmp.join("a").display()))
            && text.contains(&format!("[b] {} (1 file,", tmp.join("b").display())),
        "{}",
        mixed.stdout
    );
    let rows: Vec<&str> = mixed
        .stdout
        .lines()
        .filter(|l| l.starts_with("three"))
        .collect();
    assert!(rows[0].contains("[b]"), "{}", mixed.stdout);
}

#[test]
fn the_file_set_fingerprint_tells_apart_same_named_paths_and_sizes() {
    let tmp = TempDir::new("fingerprint-paths");
    for (dir, size) in [("x", 3usize), ("y", 64 << 10)] {
        std::fs::create_dir(tmp.join(dir)).unwrap();
        std::fs::write(tmp.join(dir).join("DATA"), vec![1u8; size]).unwrap();
    }
    // `--watch DATA` (a relative path) from two directories: two different files.
    let batch = |cwd: &str, out: &str, watch: &str| {
        let out_dir = tmp.join(out);
        ct(
            &tmp.join(cwd),
            [
                "run",
                "-q",
                "-n",
                "2",
                "-o",
                out_dir.to_str().unwrap(),
                "--watch",
                watch,
                "--",
                "true",
            ],
        )
        .run()
        .expect_code(0);
    };
    let fingerprint = |d: &str| {
        let set = common::read_batch(&tmp.join(d))["context"]["file_set"].clone();
        let f = set["fingerprint"].as_str().unwrap().to_string();
        assert!(
            f.len() == 16 && f.bytes().all(|b| b.is_ascii_hexdigit()),
            "{set}"
        );
        f
    };
    batch("x", "in-x", "DATA");
    batch("y", "in-y", "DATA");
    batch("x", "in-x-again", "./DATA");
    assert_ne!(fingerprint("in-x"), fingerprint("in-y"));
    assert_eq!(
        fingerprint("in-x"),
        fingerprint("in-x-again"),
        "the same file, named the same way after making it absolute"
    );
    let mixed = ct(tmp.path(), ["report", "in-x", "in-y"]).run();
    mixed.expect_code(0);
    assert!(
        prose(&mixed.stdout).contains("cached before covers 2 different file sets"),
        "{}",
        mixed.stdout
    );
    // The same path, another size: another set.
    std::fs::write(tmp.join("x/DATA"), vec![1u8; 8192]).unwrap();
    batch("x", "in-x-grown", "DATA");
    assert_ne!(fingerprint("in-x"), fingerprint("in-x-grown"));
}

#[test]
fn a_watched_file_removed_during_the_batch_leaves_the_figures_known() {
    // The first run deletes a file of the watched tree, walked at its start: every later
    // check leaves it out instead of calling the whole tree unknown.
    let tmp = TempDir::new("removed");
    let dir = tmp.join("tree");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("kept"), vec![1u8; 8192]).unwrap();
    std::fs::write(dir.join("removed"), vec![2u8; 4096]).unwrap();
    let script = format!(
        "rm -f '{}'; cat '{}' > /dev/null",
        dir.join("removed").display(),
        dir.join("kept").display()
    );
    let out = ct(
        tmp.path(),
        [
            "run",
            "-n",
            "3",
            "-o",
            "b",
            "--watch",
            dir.to_str().unwrap(),
            "--",
            "sh",
            "-c",
            &script,
        ],
    )
    .run_within(std::time::Duration::from_secs(60));
    out.expect_code(0);
    let runs = read_records(&tmp.join("b"));
    assert_eq!(
        runs[0]["cache"]["before"]["files"], 2,
        "{}",
        runs[0]["cache"]
    );
    for r in &runs {
        let cache = &r["cache"];
        assert_eq!(cache["after"]["files"], 1, "{cache}");
        for when in ["before", "after"] {
            assert_eq!(cache[when]["unknown_files"], 0, "{when}: {cache}");
            assert!(cache[when]["resident_ratio"].is_number(), "{when}: {cache}");
        }
    }
}

/// A run that evicts a watched file and reads it back, as root (with the page-in ledger) and
/// as `nobody` (without): one mark per view of the same read.
#[test]
fn a_watched_file_a_run_evicts_and_reads_back_is_not_said_to_be_brought_in_by_none() {
    if !rustix::process::geteuid().is_root() {
        eprintln!("skipped: the page-in ledger and running as nobody need root");
        return;
    }
    let tmp = TempDir::new("evicts-itself");
    if coldtrace::measure::cache::is_tmpfs(tmp.path()) != Some(false) {
        eprintln!(
            "skipped: {} is on tmpfs, where nothing is read from storage",
            tmp.path().display()
        );
        return;
    }
    let file = tmp.join("f");
    std::fs::write(&file, vec![7u8; 400 << 10]).unwrap();
    std::fs::File::open(&file).unwrap().sync_all().unwrap();
    for p in [tmp.path(), file.as_path()] {
        std::os::unix::fs::chown(p, Some(65534), Some(65534)).unwrap();
    }
    // Each run drops the file's pages (as vmtouch -e does) and reads it back: the residency
    // before and after is the same, though it read the file from storage.
    let script = "dd if=f iflag=nocache count=0 status=none; cat f > /dev/null";
    let args = [
        "run", "-n", "3", "--watch", "f", "-o", "b", "--", "sh", "-c", script,
    ];
    let said = |nobody: bool| {
        let _ = std::fs::remove_dir_all(tmp.join("b"));
        let c = ct(tmp.path(), args);
        let out = if nobody { c.run_as_nobody() } else { c }
            .run_within(std::time::Duration::from_secs(60));
        out.expect_code(0);
        // As nobody, /proc/PID/io is not readable: rusage's blocks say it.
        let first = &read_records(&tmp.join("b"))[0];
        let read = (first["child_io"]["read_bytes"].as_u64())
            .or(first["rusage"]["block_in"].as_u64().map(|b| b * 512));
        (prose(&out.shown()), read, out.describe())
    };
    let (text, read, described) = said(true);
    assert!(
        read >= Some(400 << 10),
        "the first run read the file it evicted back from storage{described}"
    );
    // Without the ledger, residency is all there is, and its net change is none.
    assert!(
        text.contains("the watched files' residency did not grow during the first run, though it read 400 KiB from storage"),
        "{described}"
    );
    assert!(
        !text.contains("brought none of the watched files"),
        "{described}"
    );
    // With it, the file is named.
    let (text, _, described) = said(false);
    assert!(
        text.contains("the first run brought 400 KiB of the watched files into the page cache (1 file): f 400 KiB"),
        "{described}"
    );
}
