//! 10,000 spawns in one process leave no descriptor, no zombie and no memory growth behind.
//! (Its own test binary: it counts this process's fds and reads its VmRSS.)
#![forbid(unsafe_code)]

use coldtrace_syscalls::{find_program, ChildStack, Program, SpawnOptions, WaitEvent};
use std::ffi::CString;

fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd")
        .expect("/proc/self/fd")
        .count()
}

fn vm_rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS")
}

#[test]
fn ten_thousand_spawns_leave_no_fd_zombie_or_memory_growth() {
    let path = find_program(b"true", Some(b"/usr/bin:/bin")).expect("true in PATH");
    let program = Program::new(path, vec![CString::new("true").unwrap()], vec![]);
    let mut stack = ChildStack::new().expect("stack");
    // Warm up allocator and page tables, then take the baseline.
    for _ in 0..100 {
        let child = program
            .spawn(&SpawnOptions::default(), &mut stack)
            .expect("spawn");
        assert_eq!(child.wait(None, None), Ok(WaitEvent::Exited));
        child.reap().expect("reap");
    }
    let (fds_before, rss_before) = (open_fds(), vm_rss_kib());
    for i in 0..10_000 {
        let child = program
            .spawn(&SpawnOptions::default(), &mut stack)
            .expect("spawn");
        // Half through the deadline wait (pidfd + poll), half straight to the reap.
        if i % 2 == 0 {
            assert_eq!(child.wait(None, None), Ok(WaitEvent::Exited));
        }
        let (status, _) = child.reap().expect("reap");
        assert_eq!(status.code(), Some(0));
    }
    let (fds_after, rss_after) = (open_fds(), vm_rss_kib());
    eprintln!("resources: fds {fds_before} -> {fds_after}, VmRSS {rss_before} -> {rss_after} KiB");
    assert_eq!(fds_after, fds_before, "a descriptor leaked");
    assert_eq!(
        rustix::process::wait(rustix::process::WaitOptions::NOHANG).map(|r| r.is_some()),
        Err(rustix::io::Errno::CHILD),
        "a child was left unreaped"
    );
    assert!(
        rss_after <= rss_before + 512,
        "VmRSS grew from {rss_before} to {rss_after} KiB"
    );
}
