#![forbid(unsafe_code)]
//! `PerfSession` against real children spawned with vfork semantics: counters opened on the
//! runner before the spawn, inherited, enabled at the child's exec, read after its exit —
//! compared with the child's wait4 rusage.
//!
//! Every test takes `SERIAL`: one counts `/proc/self/fd` (process-wide), and the others compare
//! CPU time with rusage, which is cleaner without sibling tests competing for the 2 CPUs.

use coldtrace::measure::perf::{default_events, CounterReading, PerfEvent, PerfSession};
use coldtrace_syscalls::{
    find_program, ChildStack, Program, ResourceUsage, SpawnOptions, WaitEvent, WaitStatus,
};
use std::ffi::CString;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    SERIAL
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Busy loop for the shell: ~0.2–0.4 s of pure user-space arithmetic in dash, no forks.
const SH_BUSY: &str = "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done";

fn program(argv: &[&str]) -> Program {
    let path = find_program(argv[0].as_bytes(), None).expect("find_program");
    let argv = argv.iter().map(|a| CString::new(*a).unwrap()).collect();
    Program::new(
        path,
        argv,
        vec![CString::new("PATH=/usr/bin:/bin").unwrap()],
    )
}

struct Run {
    readings: Vec<CounterReading>,
    status: WaitStatus,
    usage: ResourceUsage,
}

impl Run {
    fn get(&self, event: PerfEvent) -> &CounterReading {
        self.readings
            .iter()
            .find(|r| r.event == event.name())
            .unwrap_or_else(|| panic!("no reading for {}", event.name()))
    }

    fn value(&self, event: PerfEvent) -> f64 {
        let r = self.get(event);
        r.value
            .unwrap_or_else(|| panic!("{} not measured: {r:?}", r.event))
    }
}

fn spin(d: Duration) {
    let start = Instant::now();
    let mut x = 0u64;
    while start.elapsed() < d {
        x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
    }
}

/// Opens a session, optionally spins in the parent, spawns `argv`, and reads the counters
/// after the exit — before reaping (`read_before_reap`) or after.
fn run(
    argv: &[&str],
    events: &[PerfEvent],
    parent_busy: Duration,
    read_before_reap: bool,
    stack: &mut ChildStack,
) -> Run {
    let prog = program(argv);
    let session = PerfSession::open_before_spawn(events, None);
    spin(parent_busy);
    let child = prog.spawn(&SpawnOptions::default(), stack).expect("spawn");
    let (readings, status, usage) = if read_before_reap {
        match child.wait(None, None).expect("wait") {
            WaitEvent::Exited => {}
            other => panic!("unexpected {other:?}"),
        }
        let readings = session.read_after_exit();
        let (status, usage) = child.reap().expect("reap");
        (readings, status, usage)
    } else {
        let (status, usage) = child.reap().expect("reap");
        (session.read_after_exit(), status, usage)
    };
    assert_eq!(status.code(), Some(0), "{argv:?}: {status:?}");
    Run {
        readings,
        status,
        usage,
    }
}

fn within(actual: f64, expected: f64, rel: f64, abs: f64) -> bool {
    (actual - expected).abs() <= (expected.abs() * rel).max(abs)
}

#[test]
fn software_counts_agree_with_rusage() {
    let _s = serial();
    let mut stack = ChildStack::new().unwrap();
    for read_before_reap in [false, true] {
        for argv in [&["sh", "-c", SH_BUSY][..], &["true"][..]] {
            let r = run(
                argv,
                &default_events(),
                Duration::ZERO,
                read_before_reap,
                &mut stack,
            );
            let u = &r.usage;
            let cpu_ns = (u.user_us + u.sys_us) as f64 * 1000.0;
            let faults = (u.minor_faults + u.major_faults) as f64;
            let switches = (u.voluntary_switches + u.involuntary_switches) as f64;
            let task_clock = r.value(PerfEvent::TASK_CLOCK);
            let pf = r.value(PerfEvent::PAGE_FAULTS);
            let cs = r.get(PerfEvent::CONTEXT_SWITCHES).value;
            if cs.is_none() {
                eprintln!("context-switches: {:?}", r.get(PerfEvent::CONTEXT_SWITCHES));
            }
            eprintln!(
                "{argv:?} read_before_reap={read_before_reap}: task-clock {:.3} ms vs user+sys \
                 {:.3} ms; page-faults {pf} vs {faults}; context-switches {cs:?} vs {switches}; \
                 cpu-migrations {:?}; status {:?}",
                task_clock / 1e6,
                cpu_ns / 1e6,
                r.get(PerfEvent::CPU_MIGRATIONS).value,
                r.status,
            );
            for reading in &r.readings {
                assert_eq!(reading.exclude_kernel.is_some(), reading.value.is_some());
                assert_eq!(
                    reading.value.is_none(),
                    reading.unavailable_reason.is_some()
                );
            }
            let t = r.get(PerfEvent::TASK_CLOCK);
            assert_eq!(t.unit, "ns");
            assert!(!t.multiplexed, "{t:?}");
            // Measured on Linux 6.18 (see the commit message): task-clock within 0.5 ms of
            // user+sys for ~0.25 s shells, and 0.1–0.3 ms below it for /bin/true (the counters
            // start at exec, rusage at clone); page-faults exactly rusage − 1 and
            // context-switches rusage − 1 or − 2, every time (the child's fault and switch
            // before exec, and the final switch after exit, which perf no longer sees).
            // task-clock runs on perf's clock, which (unlike rusage's runtime) does not subtract
            // time stolen by the hypervisor: on a loaded host it read 4.1 ms above user+sys for
            // a 30 ms child. So it is bounded below by rusage (less what precedes exec) and above
            // by the time the event was enabled, which it can never exceed.
            let enabled = t.time_enabled_ns.expect("time_enabled") as f64;
            assert!(
                task_clock >= cpu_ns - 2e6 && task_clock <= enabled,
                "task-clock {task_clock} ns vs rusage {cpu_ns} ns, enabled {enabled} ns"
            );
            let user_only = r.get(PerfEvent::PAGE_FAULTS).exclude_kernel == Some(true);
            if user_only {
                // Unprivileged fallback: faults taken in kernel mode are not counted.
                assert!(
                    pf <= faults && within(pf, faults, 0.15, 10.0),
                    "page-faults {pf} vs rusage {faults}"
                );
                let cs = r.get(PerfEvent::CONTEXT_SWITCHES);
                assert!(
                    cs.value.is_none() && cs.unavailable_reason.is_some(),
                    "{cs:?}"
                );
            } else {
                assert!(
                    pf <= faults && faults - pf <= 5.0,
                    "page-faults {pf} vs rusage {faults}"
                );
                let cs = r.value(PerfEvent::CONTEXT_SWITCHES);
                assert!(
                    cs <= switches && switches - cs <= 5.0,
                    "context-switches {cs} vs rusage {switches}"
                );
            }
        }
    }
}

#[test]
fn busy_parent_between_open_and_spawn_is_not_counted() {
    let _s = serial();
    let mut stack = ChildStack::new().unwrap();
    let events = [PerfEvent::TASK_CLOCK, PerfEvent::PAGE_FAULTS];
    let quiet = run(&["true"], &events, Duration::ZERO, false, &mut stack);
    let busy = run(
        &["true"],
        &events,
        Duration::from_millis(300),
        false,
        &mut stack,
    );
    let (q, b) = (
        quiet.value(PerfEvent::TASK_CLOCK),
        busy.value(PerfEvent::TASK_CLOCK),
    );
    eprintln!(
        "/bin/true task-clock: quiet parent {:.3} ms, parent spun 300 ms: {:.3} ms; \
         time_enabled {:?} ns",
        q / 1e6,
        b / 1e6,
        busy.get(PerfEvent::TASK_CLOCK).time_enabled_ns
    );
    // /bin/true takes well under 5 ms of CPU; the parent's 300 ms would dominate if counted.
    assert!(
        b < 20e6,
        "parent's spin leaked into the child's task-clock: {b} ns"
    );
    let enabled = busy.get(PerfEvent::TASK_CLOCK).time_enabled_ns.unwrap();
    assert!(
        enabled < 20_000_000,
        "enabled {enabled} ns includes the spin"
    );
}

#[test]
fn descendants_are_folded_in() {
    let _s = serial();
    let mut stack = ChildStack::new().unwrap();
    // The outer shell forks a grandchild shell for the busy loop (the trailing `true` keeps
    // dash from exec'ing it in place) and waits for it.
    let nested = format!("sh -c '{SH_BUSY}'; true");
    let r = run(
        &["sh", "-c", &nested],
        &[PerfEvent::TASK_CLOCK],
        Duration::ZERO,
        false,
        &mut stack,
    );
    let u = &r.usage;
    let cpu_ns = (u.user_us + u.sys_us) as f64 * 1000.0;
    let tc = r.value(PerfEvent::TASK_CLOCK);
    eprintln!(
        "nested: task-clock {:.3} ms vs rusage (incl. waited-for descendants) {:.3} ms",
        tc / 1e6,
        cpu_ns / 1e6
    );
    assert!(cpu_ns > 50e6, "the busy grandchild ran: {cpu_ns}");
    // Folded in, the grandchild's CPU is in the count: at least rusage's, less what precedes
    // the outer shell's exec (as in `software_counts_agree_with_rusage`). Not within 10 % of it
    // from above: task-clock runs on perf's clock, which does not subtract the time the
    // hypervisor stole or interrupts took while the shells ran, as rusage's runtime does, and
    // a loaded host steals more than 10 % of a 0.3 s loop. Above, it is bounded by the time
    // the event was enabled, which it can never exceed.
    let enabled = r
        .get(PerfEvent::TASK_CLOCK)
        .time_enabled_ns
        .expect("time_enabled") as f64;
    assert!(
        tc >= cpu_ns - 2e6 && tc <= enabled,
        "task-clock {tc} ns vs rusage {cpu_ns} ns, enabled {enabled} ns"
    );
}

#[test]
fn hardware_events_are_measured_or_explained() {
    let _s = serial();
    let mut stack = ChildStack::new().unwrap();
    let hw: Vec<PerfEvent> = default_events()
        .into_iter()
        .filter(|e| e.is_hardware())
        .collect();
    let r = run(
        &["sh", "-c", SH_BUSY],
        &hw,
        Duration::ZERO,
        false,
        &mut stack,
    );
    for reading in &r.readings {
        eprintln!(
            "{}: value {:?}, multiplexed {}, reason {:?}",
            reading.event, reading.value, reading.multiplexed, reading.unavailable_reason
        );
        assert_eq!(reading.unit, "count");
        match (reading.value, &reading.unavailable_reason) {
            (Some(v), None) => {
                assert!(v > 0.0, "{reading:?}");
                assert!(reading.raw_value.is_some() && reading.time_running_ns > Some(0));
            }
            (None, Some(reason)) => {
                assert!(!reason.is_empty());
                assert!(reading.raw_value.is_none());
            }
            _ => panic!("inconsistent reading {reading:?}"),
        }
    }
    // Instructions of a busy shell are never 0 where a PMU exists.
    let ins = r.get(PerfEvent::INSTRUCTIONS);
    if let Some(v) = ins.value {
        assert!(v > 1e6, "{ins:?}");
    }
}

#[test]
fn without_a_child_nothing_is_counted() {
    let _s = serial();
    let session =
        PerfSession::open_before_spawn(&[PerfEvent::TASK_CLOCK, PerfEvent::TASK_CLOCK], None);
    assert_eq!(session.events().count(), 1, "duplicates are opened once");
    spin(Duration::from_millis(20));
    let readings = session.read_after_exit();
    assert_eq!(readings.len(), 1);
    let r = &readings[0];
    assert_eq!((r.value, r.time_enabled_ns), (None, Some(0)), "{r:?}");
    assert!(r
        .unavailable_reason
        .as_deref()
        .unwrap()
        .starts_with("never enabled"));
}

fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").unwrap().count()
}

#[test]
fn no_descriptor_leaks_over_1000_runs() {
    let _s = serial();
    let mut stack = ChildStack::new().unwrap();
    let prog = program(&["true"]);
    let events = default_events();
    // One warm-up run, so that lazily opened descriptors (none expected) are not blamed.
    drop(PerfSession::open_before_spawn(&events, None).read_after_exit());
    let before = open_fds();
    for i in 0..1000 {
        let session = PerfSession::open_before_spawn(&events, None);
        let child = prog.spawn(&SpawnOptions::default(), &mut stack).unwrap();
        let (status, _) = child.reap().unwrap();
        assert_eq!(status.code(), Some(0));
        if i % 2 == 0 {
            let readings = session.read_after_exit();
            assert!(readings[0].value.is_some());
        } else {
            drop(session); // the path that never reads must close too
        }
    }
    assert_eq!(open_fds(), before);
}

#[test]
fn every_event_of_the_catalogue_is_measured_or_explained() {
    let _s = serial();
    let mut stack = ChildStack::new().unwrap();
    let all: Vec<PerfEvent> = PerfEvent::all().collect();
    let r = run(
        &["sh", "-c", SH_BUSY],
        &all,
        Duration::ZERO,
        false,
        &mut stack,
    );
    assert_eq!(r.readings.len(), all.len());
    for reading in &r.readings {
        match (reading.value, &reading.unavailable_reason) {
            (Some(v), None) => assert!(v >= 0.0 && reading.raw_value.is_some(), "{reading:?}"),
            (None, Some(reason)) => assert!(!reason.is_empty() && reading.raw_value.is_none()),
            _ => panic!("inconsistent reading {reading:?}"),
        }
    }
    // Software events never need a PMU: each is measured here (or refused with a reason when
    // perf_event_paranoid forbids kernel counting, as for context-switches).
    for event in all.iter().filter(|e| !e.is_hardware()) {
        let reading = r.get(*event);
        assert!(
            reading.value.is_some()
                || reading
                    .unavailable_reason
                    .as_deref()
                    .is_some_and(|w| w.contains("perf_event_paranoid")),
            "{reading:?}"
        );
    }
    // minor-faults + major-faults is page-faults, all three counted in the same run.
    let by_name = |name: &str| r.get(PerfEvent::parse(name).unwrap()).value;
    if let (Some(all_faults), Some(minor), Some(major)) = (
        by_name("page-faults"),
        by_name("minor-faults"),
        by_name("major-faults"),
    ) {
        assert_eq!(minor + major, all_faults, "{minor} + {major}");
        assert!(all_faults > 0.0);
    }
    assert_eq!(by_name("dummy"), Some(0.0), "dummy counts nothing");
}
