//! The perf ring on a real kernel: samples of the calling thread's task clock (allowed
//! unprivileged under `perf_event_paranoid` 2 when the kernel is excluded) wrap a one-page ring
//! many times and come out whole and in time order; a ring left full drops samples and says
//! how many; an inherited dummy event (no privilege needed) gives the creation and exit of a
//! child and of its children; and, as root with tracefs, system-wide `sched_switch` samples on
//! every CPU see a thread of this process switch out, and the context-switch records of a
//! dummy member of their group see it arrive on a CPU.

#![forbid(unsafe_code)]

use coldtrace_syscalls::perf::{
    attr_flags, PerfEventAttr, PerfTarget, ATTR_USE_CLOCKID, CLOCK_MONOTONIC, PERF_RECORD_SAMPLE,
    PERF_SAMPLE_RAW, PERF_SAMPLE_TIME, PERF_TYPE_SOFTWARE, PERF_TYPE_TRACEPOINT,
};
use coldtrace_syscalls::ring::{lost_count, time_and_raw, PerfRing};
use coldtrace_syscalls::Errno;

/// A sample every 20 µs of this thread's user-space CPU time: `u64 time` only.
fn task_clock_samples() -> PerfEventAttr {
    use coldtrace_syscalls::perf::PERF_COUNT_SW_TASK_CLOCK;
    let mut attr = PerfEventAttr::counting(PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK);
    attr.sample_period = 20_000;
    attr.sample_type = PERF_SAMPLE_TIME;
    attr.flags = attr_flags::DISABLED
        | attr_flags::EXCLUDE_KERNEL
        | attr_flags::EXCLUDE_HV
        | ATTR_USE_CLOCKID;
    attr.clockid = CLOCK_MONOTONIC;
    attr
}

fn spin(ms: u64) {
    let until = std::time::Instant::now() + std::time::Duration::from_millis(ms);
    let mut x = 0u64;
    while std::time::Instant::now() < until {
        x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(1));
    }
}

/// Spins until this thread has run `ms` ms on a CPU (a loaded machine stretches the wall
/// time, not the samples taken).
fn spin_on_cpu(ms: u64) {
    use rustix::time::{clock_gettime, ClockId};
    let cpu_ns = || {
        let t = clock_gettime(ClockId::ThreadCPUTime);
        t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
    };
    let until = cpu_ns() + ms * 1_000_000;
    let mut x = 0u64;
    // The clock is read in the kernel, which the samples exclude: read it rarely.
    while cpu_ns() < until {
        for _ in 0..100_000 {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(1));
        }
    }
}

/// Reads every record: sample times, and the samples said lost.
fn drain(ring: &mut PerfRing) -> (Vec<u64>, u64) {
    let (mut times, mut lost) = (Vec::new(), 0);
    let framed = ring
        .read(|r| {
            if r.kind == PERF_RECORD_SAMPLE {
                let time = u64::from_ne_bytes(r.body[..8].try_into().expect("8 bytes"));
                times.push(time);
            }
            lost += lost_count(&r).unwrap_or(0);
        })
        .expect("read the ring");
    assert!(!framed.malformed, "{framed:?}");
    (times, lost)
}

#[test]
fn samples_wrap_a_one_page_ring_many_times_and_come_out_whole_in_time_order() {
    let mut ring = PerfRing::open(&[task_clock_samples()], PerfTarget::CallingThread, -1, 1)
        .expect("a task-clock ring");
    assert_eq!(ring.data_bytes(), rustix::param::page_size() as u64);
    ring.enable().expect("enable");
    let (mut times, mut lost) = (Vec::new(), 0);
    // 16-byte samples every 20 µs: a 4 KiB ring holds 256 (5 ms); read every ~2 ms.
    for _ in 0..100 {
        spin(2);
        let (t, l) = drain(&mut ring);
        times.extend(t);
        lost += l;
    }
    ring.disable().expect("disable");
    let bytes = times.len() as u64 * 16;
    println!(
        "{} samples ({bytes} bytes through a {}-byte ring), {lost} lost",
        times.len(),
        ring.data_bytes()
    );
    assert!(
        bytes > 10 * ring.data_bytes(),
        "the ring wrapped many times"
    );
    assert!(times.windows(2).all(|w| w[0] <= w[1]), "time order");
    let now = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
    let now_ns = now.tv_sec as u64 * 1_000_000_000 + now.tv_nsec as u64;
    let last = *times.last().expect("samples");
    assert!(
        last <= now_ns && now_ns - last < 1_000_000_000,
        "CLOCK_MONOTONIC times"
    );
}

#[test]
fn a_full_ring_drops_samples_and_says_how_many() {
    let mut ring = PerfRing::open(&[task_clock_samples()], PerfTarget::CallingThread, -1, 1)
        .expect("a task-clock ring");
    ring.enable().expect("enable");
    spin(50); // ~2,500 samples into room for 256
    let (kept, lost_before) = drain(&mut ring);
    spin(5); // with room again, the kernel first says what it dropped
    ring.disable().expect("disable");
    let (after, lost) = drain(&mut ring);
    println!(
        "kept {}, then {} more; lost {}",
        kept.len(),
        after.len(),
        lost_before + lost
    );
    assert!(kept.len() <= 256, "{}", kept.len());
    assert!(lost_before + lost > 0, "{lost_before} + {lost}");
}

/// A ring left full at the end: no record fits after the losses, so the kernel never writes
/// the `PERF_RECORD_LOST` that would say how many were dropped, and the records read say 0.
/// [`PerfRing::lost`] reads the kernel's own count (`PERF_FORMAT_LOST`, Linux ≥ 6.0) instead.
#[test]
fn a_ring_left_full_counts_what_it_dropped_though_no_record_says_so() {
    use coldtrace_syscalls::ring::Lost;
    let mut ring = PerfRing::open(&[task_clock_samples()], PerfTarget::CallingThread, -1, 1)
        .expect("a task-clock ring");
    assert_eq!(ring.lost(16), Ok(initially_lost()), "nothing dropped yet");
    ring.enable().expect("enable");
    // 5,000 samples at most into room for 255: a timer that fires late (a loaded VM) makes
    // fewer — 2,131 of a nominal 2,500 in 50 ms on the 2-CPU VM at load 5 — never more.
    spin_on_cpu(100);
    ring.disable().expect("disable");
    let (kept, said_lost) = drain(&mut ring);
    let lost = ring.lost(16).expect("the lost count");
    println!(
        "kept {}, PERF_RECORD_LOST said {said_lost}, the ring says {lost:?}",
        kept.len()
    );
    assert_eq!(
        said_lost, 0,
        "no record fitted after the losses to report them"
    );
    match (lost, initially_lost()) {
        // Dropped: all but the 255 kept, at least four rings' worth however late the timer.
        (Lost::Counted(n), Lost::Counted(_)) => {
            assert!(n >= 4 * 256, "{n} dropped, {} kept", kept.len())
        }
        (Lost::Uncounted { ring_filled }, Lost::Uncounted { .. }) => {
            assert!(ring_filled, "Linux < 6.0: the ring filled")
        }
        (lost, _) => panic!("{lost:?} on Linux {}", osrelease()),
    }
}

/// The running kernel's release, `6.18.44-…`.
fn osrelease() -> String {
    std::fs::read_to_string("/proc/sys/kernel/osrelease").expect("osrelease")
}

/// What [`PerfRing::lost`] says of a ring that has dropped nothing, on this kernel: a count
/// from Linux 6.0 on (`PERF_FORMAT_LOST`), none before.
fn initially_lost() -> coldtrace_syscalls::ring::Lost {
    use coldtrace_syscalls::ring::Lost;
    let release = osrelease();
    let mut numbers = release
        .split(|c: char| !c.is_ascii_digit())
        .map(|n| n.parse::<u32>());
    match (numbers.next(), numbers.next()) {
        (Some(Ok(major)), Some(Ok(minor))) if (major, minor) < (6, 0) => {
            Lost::Uncounted { ring_filled: false }
        }
        _ => Lost::Counted(0),
    }
}

#[test]
fn a_ring_written_backwards_is_refused_never_read_as_records() {
    // `write_backward` (bit 27 of the bitfield): the kernel moves `data_head` down from 0, and
    // writes below it. The reader's proof holds only for a head at most one ring above its
    // tail, so such a ring must give EIO, never slices the kernel may be writing into.
    let mut attr = task_clock_samples();
    attr.flags |= 1 << 27;
    let mut ring = PerfRing::open(&[attr], PerfTarget::CallingThread, -1, 1)
        .expect("a task-clock ring written backwards");
    ring.enable().expect("enable");
    spin(20);
    ring.disable().expect("disable");
    assert_eq!(ring.unread().err(), Some(Errno::IO));
    let mut records = 0;
    let read = ring.read(|_| records += 1);
    assert_eq!((read, records), (Err(Errno::IO), 0));
}

/// Task records: a dummy event with `task` and `inherit` on this thread, one
/// per CPU, gives the creation and exit of a shell it starts and of the shell's two children.
#[test]
fn task_records_of_an_inherited_dummy_event_follow_a_child_and_its_children() {
    use coldtrace_syscalls::ring::{task_record, task_records_attr};
    let mut rings: Vec<PerfRing> = online_cpus()
        .into_iter()
        .map(|cpu| {
            PerfRing::open(&[task_records_attr()], PerfTarget::CallingThread, cpu, 4)
                .expect("a task-records ring")
        })
        .collect();
    let status = std::process::Command::new("sh")
        .args(["-c", "true & true & wait"])
        .status()
        .expect("sh");
    assert!(status.success());
    let mut records = Vec::new();
    for ring in &mut rings {
        let framed = ring
            .read(|r| records.extend(task_record(&r)))
            .expect("read the ring");
        assert!(!framed.malformed, "{framed:?}");
    }
    let me = std::process::id();
    let shell = records
        .iter()
        .find(|t| t.fork && t.ppid == me && t.pid == t.tid)
        .unwrap_or_else(|| panic!("no creation of the shell: {records:?}"))
        .pid;
    let children: Vec<u32> = records
        .iter()
        .filter(|t| t.fork && t.ppid == shell)
        .map(|t| t.pid)
        .collect();
    assert_eq!(children.len(), 2, "{records:?}");
    for pid in children.iter().chain([&shell]) {
        let exits = records.iter().filter(|t| !t.fork && t.pid == *pid).count();
        assert_eq!(exits, 1, "the exit of {pid}: {records:?}");
    }
}

/// The tracepoint ID of `sched/sched_switch`, from tracefs wherever it is mounted.
fn sched_switch_id() -> Option<u64> {
    ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"]
        .iter()
        .find_map(|d| std::fs::read_to_string(format!("{d}/events/sched/sched_switch/id")).ok())
        .and_then(|s| s.trim().parse().ok())
}

/// `/sys/devices/system/cpu/online`: `0-3,5`.
fn online_cpus() -> Vec<i32> {
    let text = std::fs::read_to_string("/sys/devices/system/cpu/online").expect("online CPUs");
    let mut cpus = Vec::new();
    for part in text.trim().split(',') {
        let (a, b) = part.split_once('-').unwrap_or((part, part));
        cpus.extend(a.parse::<i32>().expect("a CPU")..=b.parse::<i32>().expect("a CPU"));
    }
    cpus
}

/// `sched_switch` samples with their time and raw record, as a group's leader (disabled).
fn sched_switch_leader(id: u64) -> PerfEventAttr {
    let mut attr = PerfEventAttr::counting(PERF_TYPE_TRACEPOINT, id);
    attr.sample_period = 1;
    attr.sample_type = PERF_SAMPLE_TIME | PERF_SAMPLE_RAW;
    attr.flags = attr_flags::DISABLED | ATTR_USE_CLOCKID;
    attr.clockid = CLOCK_MONOTONIC;
    attr
}

/// The group `attrs` on every online CPU, system-wide.
fn on_every_cpu(attrs: &[PerfEventAttr]) -> Vec<PerfRing> {
    online_cpus()
        .into_iter()
        .map(|c| PerfRing::open(attrs, PerfTarget::AllProcesses, c, 16).expect("per CPU"))
        .collect()
}

/// This test's thread ID (`/proc/thread-self` is PID/task/TID).
fn this_tid() -> i32 {
    let link = std::fs::read_link("/proc/thread-self").expect("/proc/thread-self");
    link.file_name()
        .and_then(|n| n.to_str()?.parse().ok())
        .expect("a TID")
}

/// Enables `rings`, sleeps 1 ms 20 times, disables them.
fn sleep_twenty_times_traced(rings: &[PerfRing]) {
    for ring in rings {
        ring.enable().expect("enable");
    }
    for _ in 0..20 {
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    for ring in rings {
        ring.disable().expect("disable");
    }
}

#[test]
fn system_wide_sched_switch_samples_see_this_thread_switch_out() {
    let Some(id) = sched_switch_id() else {
        println!("skipped: tracefs is not mounted or not readable (needs root)");
        return;
    };
    let mut rings = on_every_cpu(&[sched_switch_leader(id)]);
    let tid = this_tid();
    sleep_twenty_times_traced(&rings);
    let mut ours = 0;
    for ring in &mut rings {
        ring.read(|r| {
            let Some((_, raw)) = time_and_raw(r.body).filter(|_| r.kind == PERF_RECORD_SAMPLE)
            else {
                return;
            };
            // sched_switch: prev_pid at 24 (its format file says so on 6.x).
            if raw.len() >= 28 && i32::from_ne_bytes(raw[24..28].try_into().unwrap()) == tid {
                ours += 1;
            }
        })
        .expect("read");
    }
    println!("{ours} switches of this thread out of a CPU");
    assert!(ours >= 20, "{ours}");
}

#[test]
fn context_switch_records_of_a_member_of_a_tracepoint_group_name_the_arriving_thread() {
    use coldtrace_syscalls::ring::{switch_in, switch_records_attr};
    let Some(id) = sched_switch_id() else {
        println!("skipped: tracefs is not mounted or not readable (needs root)");
        return;
    };
    let mut rings = on_every_cpu(&[sched_switch_leader(id), switch_records_attr()]);
    let tid = this_tid() as u32;
    sleep_twenty_times_traced(&rings);
    let (mut arrivals, mut samples) = (0, 0);
    for ring in &mut rings {
        ring.read(|r| {
            samples += u32::from(r.kind == PERF_RECORD_SAMPLE);
            if switch_in(&r).is_some_and(|(_, t)| t == tid) {
                arrivals += 1;
            }
        })
        .expect("read");
    }
    println!("{arrivals} arrivals of this thread on a CPU, {samples} sched_switch samples");
    assert!(arrivals >= 20, "{arrivals}");
    assert!(samples >= 20, "{samples}");
}
