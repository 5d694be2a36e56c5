#![forbid(unsafe_code)]
//! What `/proc/PID/io` and `/proc/PID/schedstat` say about a finished, not yet reaped child
//! (a zombie) on this kernel — verified against children doing known work.

use coldtrace::measure::cache::FileSet;
use coldtrace::measure::system::{SystemDelta, SystemSnapshot};
use coldtrace::measure::zombie::{ChildIo, ChildSched};
use coldtrace_syscalls::wait::{wait4, Wait4Options};
use coldtrace_syscalls::ResourceUsage;
use rustix::process::{waitid, Pid, WaitId, WaitIdOptions};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// What was seen of one child: its state and counters as a zombie, then its rusage at reaping.
struct Seen {
    state: Option<char>,
    io: Option<ChildIo>,
    sched: Option<ChildSched>,
    usage: ResourceUsage,
}

/// Runs `cmd`, waits for it to exit without reaping it, reads its /proc files, then reaps it
/// with wait4.
fn run_and_inspect(cmd: &mut Command) -> Seen {
    let child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .spawn()
        .expect("spawn");
    let pid = child.id() as i32;
    loop {
        match waitid(
            WaitId::Pid(Pid::from_raw(pid).unwrap()),
            WaitIdOptions::EXITED | WaitIdOptions::NOWAIT,
        ) {
            Err(rustix::io::Errno::INTR) => continue,
            other => {
                other.expect("waitid");
                break;
            }
        }
    }
    let state = std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            s.rsplit_once(") ")
                .and_then(|(_, rest)| rest.chars().next())
        });
    let io = ChildIo::read(pid);
    let sched = ChildSched::read(pid);
    let (_, status, usage) = wait4(pid, Wait4Options::BLOCK)
        .expect("wait4")
        .expect("reaped");
    assert_eq!(status.code(), Some(0), "{status:?}");
    drop(child); // already reaped; dropping a std Child never waits
    Seen {
        state,
        io,
        sched,
        usage,
    }
}

fn disk_dir(tag: &str) -> Option<PathBuf> {
    let base = PathBuf::from("/var/tmp");
    let tmpfs = coldtrace::measure::cache::is_tmpfs(&base).unwrap_or(true);
    if tmpfs {
        eprintln!("/var/tmp is tmpfs: read_bytes checks skipped");
        return None;
    }
    let dir = base.join(format!("coldtrace-counters-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).ok()?;
    Some(dir)
}

fn make_file(dir: &Path, name: &str, len: usize) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, vec![b'x'; len]).unwrap();
    std::fs::File::open(&path).unwrap().sync_all().unwrap();
    path
}

#[test]
fn zombie_io_counts_the_childs_reads_and_writes() {
    let Some(dir) = disk_dir("io") else { return };
    const LEN: usize = 16 << 20;
    let input = make_file(&dir, "input.bin", LEN);
    FileSet::collect(std::slice::from_ref(&input))
        .unwrap()
        .evict();

    // Cold read: storage bytes and read-call bytes both at least the file.
    let seen = run_and_inspect(Command::new("cat").arg(&input));
    eprintln!(
        "cold cat: state {:?} io {:?} sched {:?}",
        seen.state, seen.io, seen.sched
    );
    assert_eq!(seen.state, Some('Z'));
    let io = seen.io.expect("/proc/PID/io of a zombie is readable");
    assert!(io.rchar.unwrap() >= LEN as u64);
    assert!(
        io.read_bytes.unwrap() >= LEN as u64 * 9 / 10,
        "cold read_bytes {io:?}"
    );
    assert!(io.syscr.unwrap() > 0);
    // rusage agrees: inblock is read_bytes / 512 (the same task counter).
    assert_eq!(seen.usage.block_in, io.read_bytes.unwrap() / 512);

    // Warm read: rchar again, but no storage I/O.
    let seen = run_and_inspect(Command::new("cat").arg(&input));
    let io = seen.io.unwrap();
    eprintln!("warm cat: io {io:?}");
    assert!(io.rchar.unwrap() >= LEN as u64);
    assert!(
        io.read_bytes.unwrap() < LEN as u64 / 10,
        "warm read_bytes {io:?}"
    );

    // Writes: wchar, and write_bytes counted when the pages are dirtied (before any writeback).
    let out = dir.join("out.bin");
    let seen = run_and_inspect(Command::new("dd").args([
        "if=/dev/zero",
        &format!("of={}", out.display()),
        "bs=1M",
        "count=4",
        "status=none",
    ]));
    let io = seen.io.unwrap();
    eprintln!("dd write: io {io:?} block_out {}", seen.usage.block_out);
    assert!(io.wchar.unwrap() >= 4 << 20);
    assert!(io.syscw.unwrap() >= 4);
    assert!(io.write_bytes.unwrap() >= 4 << 20, "{io:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn zombie_io_includes_reaped_descendants() {
    // sh runs cat as its own child and reaps it, then exits: does the zombie sh's io include
    // cat's reads? (The kernel folds a reaped child's counters into the parent's signal
    // struct, which /proc/PID/io sums.)
    const LEN: usize = 4 << 20;
    let dir = std::env::temp_dir().join(format!("coldtrace-desc-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let input = make_file(&dir, "input.bin", LEN);
    let script = format!("cat '{}' >/dev/null; true", input.display());
    let seen = run_and_inspect(Command::new("/bin/sh").args(["-c", &script]));
    let io = seen.io.unwrap();
    let sched = seen.sched.unwrap();
    eprintln!(
        "sh -c 'cat; true': io {io:?} sched {sched:?} usage {:?}",
        seen.usage
    );
    // Finding: rchar/wchar of the zombie shell include the reaped cat's 4 MiB (sh itself read
    // and wrote only a few KiB), while its schedstat is the shell's own time only.
    assert!(io.rchar.unwrap() >= LEN as u64, "{io:?}");
    assert!(io.wchar.unwrap() >= LEN as u64, "{io:?}");
    let rusage_ns = (seen.usage.user_us + seen.usage.sys_us) * 1000;
    assert!(
        sched.on_cpu_ns.unwrap() <= rusage_ns + 1_000_000,
        "{sched:?} vs {rusage_ns}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// When run as the helper child (env var set), burn CPU on 2 spawned threads while the main
/// thread (and libtest's test thread, if any) only waits.
#[test]
fn helper_busy_threads() {
    if std::env::var_os("COLDTRACE_BUSY_THREADS").is_none() {
        return;
    }
    // Spin until this thread has used 100 ms of CPU (not wall time: the machine is shared).
    let spin = || {
        let cpu_ns = || {
            let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
            t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
        };
        let mut x = 0u64;
        while cpu_ns() < 100_000_000 {
            for _ in 0..10_000 {
                x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
            }
        }
        x
    };
    let threads: Vec<_> = (0..2).map(|_| std::thread::spawn(spin)).collect();
    for t in threads {
        t.join().unwrap();
    }
}

#[test]
fn zombie_schedstat_is_the_main_threads_cpu_time() {
    // A single-threaded busy child: on_cpu_ns ≈ user + sys of wait4 (which is tick-sampled).
    let seen = run_and_inspect(
        Command::new("/bin/sh").args(["-c", "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done"]),
    );
    let sched = seen.sched.expect("schedstat of a zombie is readable");
    let rusage_ns = (seen.usage.user_us + seen.usage.sys_us) * 1000;
    eprintln!("busy sh: sched {sched:?} rusage user+sys {rusage_ns} ns");
    let on_cpu = sched.on_cpu_ns.unwrap();
    assert!(on_cpu > 50_000_000, "{sched:?}");
    assert!(sched.timeslices.unwrap() >= 1);
    assert!(sched.runqueue_wait_ns.is_some());
    assert!(
        on_cpu.abs_diff(rusage_ns) < rusage_ns / 5 + 20_000_000,
        "{on_cpu} vs {rusage_ns}"
    );

    // A child whose main thread idles while two threads spin: schedstat (the main thread's own
    // line; exited threads are gone from /proc/PID/task of a zombie) misses them, rusage has them.
    let exe = std::env::current_exe().unwrap();
    let seen = run_and_inspect(
        Command::new(exe)
            .args(["--exact", "helper_busy_threads", "--test-threads=1"])
            .env("COLDTRACE_BUSY_THREADS", "1"),
    );
    let sched = seen.sched.unwrap();
    let rusage_ns = (seen.usage.user_us + seen.usage.sys_us) * 1000;
    eprintln!("2 busy threads: sched {sched:?} rusage user+sys {rusage_ns} ns");
    assert!(sched.on_cpu_ns.unwrap() > 0);
    assert!(rusage_ns >= 200_000_000, "the threads ran: {rusage_ns}");
    assert!(
        sched.on_cpu_ns.unwrap() * 4 < rusage_ns,
        "{sched:?} vs {rusage_ns}"
    );
}

#[test]
fn system_snapshot_reads_and_deltas() {
    let before = SystemSnapshot::read();
    let after = SystemSnapshot::read();
    eprintln!("snapshot {after:?}");
    assert!(before.pgmajfault.is_some() && before.pgpgin.is_some());
    assert!(before.workingset_refault_file.is_some());
    assert_eq!(before.psi_cpu_full_us, None);
    if std::path::Path::new("/proc/pressure/io").exists() {
        assert!(before.psi_io_some_us.is_some() && before.psi_memory_full_us.is_some());
    }
    let d = SystemDelta::between(&before, &after);
    assert!(d.pgmajfault.is_some());
    assert_eq!(d.psi_cpu_full_us, None);
    let json = serde_json::to_string(&d).unwrap();
    assert!(json.contains(r#""psi_cpu_full_us":null"#), "{json}");
}
