#![forbid(unsafe_code)]
//! Residency and eviction on real files of a disk-backed directory.

use coldtrace::measure::cache::{
    aggregate, cachestat_available, choose_method, is_tmpfs, CacheError, FileProbe, FileSet,
    Method, UnknownReason, OVERLAYFS_MAGIC,
};
use std::io::{Read, Write};
use std::path::PathBuf;

/// A scratch directory removed on drop.
struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A fresh directory on a disk-backed filesystem (tmpfs pages cannot be evicted: they are the
/// file), or `None` with the reason printed.
fn disk_scratch(tag: &str) -> Option<Scratch> {
    let candidates = [
        PathBuf::from("/var/tmp"),
        PathBuf::from(env!("CARGO_TARGET_TMPDIR")),
        std::env::temp_dir(),
    ];
    for base in candidates {
        if is_tmpfs(&base).unwrap_or(true) {
            eprintln!("{} is tmpfs, not usable for eviction tests", base.display());
            continue;
        }
        let dir = base.join(format!("coldtrace-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        match std::fs::create_dir_all(&dir) {
            Ok(()) => return Some(Scratch(dir)),
            Err(e) => eprintln!("{} not writable: {e}", base.display()),
        }
    }
    eprintln!("no disk-backed writable directory: eviction/residency tests skipped");
    None
}

#[test]
fn evict_then_read_64_mib() {
    let Some(scratch) = disk_scratch("evict") else {
        return;
    };
    let path = scratch.0.join("big.bin");
    let mut file = std::fs::File::create(&path).unwrap();
    let chunk: Vec<u8> = (0..1 << 20).map(|i| (i % 251) as u8).collect();
    for _ in 0..64 {
        file.write_all(&chunk).unwrap();
    }
    file.sync_all().unwrap();
    drop(file);

    let set = FileSet::collect(std::slice::from_ref(&path)).unwrap();
    assert_eq!(set.len(), 1);
    assert_eq!(set.total_bytes(), 64 << 20);

    let report = set.evict();
    assert_eq!(
        (report.files, report.failed, report.bytes),
        (1, 0, 64 << 20),
        "{report:?}"
    );
    let cold = set.residency();
    assert_eq!(
        cold.method,
        if cachestat_available() {
            "cachestat"
        } else {
            "mincore"
        }
    );
    assert_eq!(cold.unknown_files, 0, "{cold:?}");
    let ratio = cold.resident_ratio.unwrap();
    assert!(ratio < 0.05, "after eviction {ratio}");

    let mut buf = Vec::new();
    std::fs::File::open(&path)
        .unwrap()
        .read_to_end(&mut buf)
        .unwrap();
    let warm = set.residency();
    let ratio = warm.resident_ratio.unwrap();
    assert!(ratio > 0.95, "after reading {ratio}");
    assert!(warm.resident_bytes.unwrap() <= 64 << 20);
    if cold.method == "cachestat" {
        assert_eq!(warm.dirty_bytes, Some(0));
    }
    let json = serde_json::to_string(&warm).unwrap();
    assert!(json.starts_with(r#"{"method":""#), "{json}");
}

#[test]
fn eviction_writes_back_dirty_pages_first() {
    let Some(scratch) = disk_scratch("dirty") else {
        return;
    };
    let path = scratch.0.join("dirty.bin");
    std::fs::write(&path, vec![7u8; 8 << 20]).unwrap(); // no fsync: pages are dirty
    let set = FileSet::collect(std::slice::from_ref(&path)).unwrap();
    let report = set.evict();
    assert_eq!(report.failed, 0, "{report:?}");
    let r = set.residency();
    assert!(r.resident_ratio.unwrap() < 0.05, "{r:?}");
}

#[test]
fn symlinks_and_dedupe() {
    let Some(scratch) = disk_scratch("links") else {
        return;
    };
    let root = scratch.0.join("tree");
    let outside = scratch.0.join("outside");
    std::fs::create_dir_all(root.join("sub")).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(root.join("a.txt"), b"hello").unwrap();
    std::fs::write(root.join("sub/b.txt"), b"world!").unwrap();
    std::fs::write(outside.join("c.txt"), b"outside, via a file symlink").unwrap();
    std::fs::write(outside.join("d.txt"), b"outside, only via the dir symlink").unwrap();
    std::os::unix::fs::symlink(outside.join("c.txt"), root.join("link-to-c")).unwrap();
    std::os::unix::fs::symlink(root.join("a.txt"), root.join("link-to-a")).unwrap();
    std::os::unix::fs::symlink(&outside, root.join("link-to-outside")).unwrap();
    std::os::unix::fs::symlink(root.join("missing"), root.join("dangling")).unwrap();
    std::fs::hard_link(root.join("sub/b.txt"), root.join("b-hard")).unwrap();

    // The tree twice, and one of its files again as a root: still each file once.
    let set = FileSet::collect(&[root.clone(), root.clone(), root.join("a.txt")]).unwrap();
    let mut contents: Vec<String> = set
        .files()
        .iter()
        .map(|f| std::fs::read_to_string(&f.path).unwrap())
        .collect();
    contents.sort();
    assert_eq!(contents, ["hello", "outside, via a file symlink", "world!"]);
    assert_eq!(set.skipped_dir_symlinks(), 1);
    assert_eq!(set.unreadable(), 1, "the dangling symlink");
    assert!(set.first_unreadable().unwrap().contains("dangling"));
    assert_eq!(set.total_bytes(), 5 + 6 + 27);

    // A root that is a symlink to a directory is followed.
    let via_link = FileSet::collect(&[root.join("link-to-outside")]).unwrap();
    assert_eq!(via_link.len(), 2);

    // Residency of tiny files: a fully cached 5-byte file is one page, ratio stays ≤ 1.
    let r = set.residency();
    assert_eq!(r.files, 3);
    assert!(
        r.resident_ratio.is_some_and(|x| (0.0..=1.0).contains(&x)),
        "{r:?}"
    );
}

#[test]
fn missing_root_names_the_path() {
    let missing = PathBuf::from("/nonexistent/coldtrace/root");
    let err = FileSet::collect(&[PathBuf::from("/etc/hostname"), missing.clone()]).unwrap_err();
    assert!(matches!(&err, CacheError::MissingRoot { path } if *path == missing));
    let message = err.to_string();
    assert!(message.contains("/nonexistent/coldtrace/root"), "{message}");
    assert!(!message.contains('\n'));
}

#[test]
fn any_unknown_file_means_no_figure() {
    let known = FileProbe::Known {
        cached_pages: 1,
        dirty_pages: Some(0),
        method: Method::Cachestat,
    };
    let r = aggregate(
        "cachestat",
        4096,
        [
            (4096, known),
            (100, FileProbe::Unknown(UnknownReason::CachestatDenied)),
            (100, FileProbe::Unknown(UnknownReason::CachestatDenied)),
            (
                100,
                FileProbe::Unknown(UnknownReason::Open(coldtrace::untrusted::OpenError::Os(
                    coldtrace_syscalls::Errno::ACCES,
                ))),
            ),
        ],
    );
    assert_eq!(r.resident_bytes, None);
    assert_eq!(r.resident_ratio, None);
    assert_eq!(r.dirty_bytes, None);
    assert_eq!(r.unknown_files, 3);
    assert_eq!(r.files, 4);
    assert_eq!(r.total_bytes, 4396);
    let reason = r.unknown_reason.unwrap();
    assert!(reason.contains("3 of 4 files"), "{reason}");
    assert!(
        reason.contains("2 cachestat refused with EPERM"),
        "{reason}"
    );
    assert!(reason.contains("1 open failed"), "{reason}");
}

#[test]
fn aggregation_caps_at_the_page_rounded_size() {
    let r = aggregate(
        "mincore",
        4096,
        [
            // A 100-byte file: one page at most, even if the probe claims more.
            (
                100,
                FileProbe::Known {
                    cached_pages: 5,
                    dirty_pages: None,
                    method: Method::Mincore,
                },
            ),
            (
                8192,
                FileProbe::Known {
                    cached_pages: 1,
                    dirty_pages: None,
                    method: Method::Mincore,
                },
            ),
        ],
    );
    assert_eq!(r.resident_bytes, Some(4096 + 4096));
    assert_eq!(r.resident_ratio, Some(8192.0 / 12288.0));
    assert_eq!(r.dirty_bytes, None, "mincore does not know dirty pages");
    assert_eq!(r.unknown_reason, None);
    assert_eq!(r.method, "mincore");
    let empty = aggregate("cachestat", 4096, []);
    assert_eq!(
        (empty.resident_bytes, empty.resident_ratio),
        (Some(0), None)
    );
}

#[test]
fn overlayfs_and_kernels_without_cachestat_use_mincore() {
    const EXT4: rustix::fs::FsWord = 0xEF53;
    assert_eq!(choose_method(Some(EXT4), true), Method::Cachestat);
    assert_eq!(choose_method(None, true), Method::Cachestat);
    assert_eq!(choose_method(Some(OVERLAYFS_MAGIC), true), Method::Mincore);
    assert_eq!(choose_method(Some(EXT4), false), Method::Mincore);
    // A set spanning both kinds of file system says so.
    let probe = |method| FileProbe::Known {
        cached_pages: 1,
        dirty_pages: None,
        method,
    };
    let r = aggregate(
        "cachestat",
        4096,
        [
            (4096, probe(Method::Cachestat)),
            (4096, probe(Method::Mincore)),
        ],
    );
    assert_eq!(r.method, "cachestat+mincore");
}
