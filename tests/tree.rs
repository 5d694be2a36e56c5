//! The states of a run's whole process tree (`tree` in every record): traced from the
//! scheduler's tracepoints as root, they add up to the wall time, count every task, and see a
//! sleep ended by a process outside the tree; without privilege the record says why there are
//! none and still says where the CPU went.
#![forbid(unsafe_code)]

mod common;

use common::{ct, read_records, TempDir};
use serde_json::Value;
use std::time::{Duration, Instant};

/// The ping-pong's switches fill every CPU's ring, whoever traces it: the test that runs it
/// runs alone, the other tests of this file side by side. (When two of them did not wait for
/// it, the ping-pong once made 24,569 records in 313 ms and its cgroup waited 44 ms for a CPU:
/// too few to fill a ring between two reads. Alone it makes 130,000–150,000.)
static PING_PONG_ALONE: std::sync::RwLock<()> = std::sync::RwLock::new(());

fn beside_others() -> std::sync::RwLockReadGuard<'static, ()> {
    PING_PONG_ALONE.read().unwrap_or_else(|e| e.into_inner())
}

/// Whether the tree can be traced here (root); the reason printed when not.
fn traced_here() -> bool {
    let root = rustix::process::geteuid().is_root();
    if !root {
        println!("skipped: tracing the scheduler's tracepoints needs root (CI runs as root)");
    }
    root
}

fn ms(v: &Value) -> f64 {
    v.as_f64().unwrap_or(f64::NAN) / 1e6
}

/// R, Q, D, S of a record, ms, after checking they add up to its wall time.
fn states(r: &Value) -> [f64; 4] {
    let t = &r["tree"];
    assert_eq!(t["source"], "sched tracepoints", "{r}");
    assert!(t["unavailable"].is_null(), "{r}");
    let parts: Vec<u64> = [
        "on_cpu_ns",
        "queued_ns",
        "uninterruptible_ns",
        "sleeping_ns",
    ]
    .iter()
    .map(|k| t[k].as_u64().unwrap_or_else(|| panic!("tree.{k} in {r}")))
    .collect();
    assert_eq!(
        parts.iter().sum::<u64>(),
        r["wall_ns"].as_u64().unwrap(),
        "{r}"
    );
    [0, 1, 2, 3].map(|k| parts[k] as f64 / 1e6)
}

#[test]
fn the_four_states_add_up_to_the_wall_time_and_every_task_is_counted() {
    if !traced_here() {
        return;
    }
    let _beside = beside_others();
    let dir = TempDir::new("tree-sum");
    // sh, a cat, then a background sleep that sh waits for: three processes. While the sleep
    // sleeps nothing of the tree runs or waits for a CPU, however busy the machine is.
    let script = "cat /etc/hostname >/dev/null; sleep 0.05 & wait";
    ct(
        dir.path(),
        ["run", "-n", "3", "-o", "b", "--", "sh", "-c", script],
    )
    .run()
    .expect_code(0);
    for r in read_records(&dir.join("b")) {
        let [on_cpu, _, _, sleeping] = states(&r);
        assert!(sleeping >= 40.0, "the 50 ms sleep is S: {r}");
        assert!(on_cpu > 0.0, "{r}");
        assert!(r["tree"]["tasks"].as_u64().unwrap() >= 3, "{r}");
        assert_eq!(r["tree"]["lost_records"], 0, "{r}");
    }
}

#[test]
fn a_fifo_written_from_outside_the_tree_is_seen_as_sleep() {
    if !traced_here() {
        return;
    }
    let _beside = beside_others();
    let dir = TempDir::new("tree-fifo");
    let fifo = dir.join("fifo");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status();
    assert!(made.is_ok_and(|s| s.success()), "mkfifo");
    let path = fifo.display().to_string();
    let reader = ["sh", "-c", "read line < \"$0\"", &path];
    let c = ct(
        dir.path(),
        [&["run", "-n", "1", "-o", "b", "--"][..], &reader[..]].concat(),
    )
    .ahead_of_other_sessions();
    let shown = c.shown();
    let started = Instant::now();
    let mut cmd = c.cmd;
    let child = cmd.spawn().expect("spawn coldtrace");
    // The command waits in its open of the FIFO for a writer before the writer's pause begins,
    // however late a loaded machine starts it; had the writer come first, nothing would wait.
    let until = Instant::now() + Duration::from_secs(20);
    while !waits_for_a_writer(&reader) {
        assert!(
            Instant::now() < until,
            "the command never opened the FIFO: {shown}"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    // The writer is not in the tree: its write is the only thing that wakes the command.
    std::thread::sleep(Duration::from_millis(400));
    std::fs::write(&fifo, b"x\n").expect("the write to the FIFO");
    let out = common::finish(child, shown, started, Duration::from_secs(20));
    out.expect_code(0);
    let r = &read_records(&dir.join("b"))[0];
    let [on_cpu, queued, uninterruptible, sleeping] = states(r);
    println!("R {on_cpu:.1} Q {queued:.1} D {uninterruptible:.1} S {sleeping:.1} ms");
    assert!(sleeping >= 250.0, "the wait for the writer is S: {r}");
    assert!(uninterruptible < 50.0 && on_cpu < 50.0, "{r}");
    assert!(ms(&r["wall_ns"]) - sleeping < 100.0, "{r}");
}

/// Whether a process running exactly `argv` sleeps in the open of a FIFO, waiting for the other
/// end (`/proc/PID/wchan`).
fn waits_for_a_writer(argv: &[&str]) -> bool {
    common::processes_running(argv).iter().any(|p| {
        std::fs::read_to_string(p.join("wchan"))
            .is_ok_and(|w| matches!(w.trim_end(), "wait_for_partner" | "fifo_open"))
    })
}

#[test]
fn without_privilege_the_record_says_why_and_where_the_cpu_went() {
    if !rustix::process::geteuid().is_root() {
        println!("skipped: the unprivileged case is run as root through setpriv");
        return;
    }
    let _beside = beside_others();
    let dir = TempDir::new("tree-nobody");
    std::fs::set_permissions(
        dir.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o777),
    )
    .expect("chmod");
    let out = std::process::Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .arg(common::BIN)
        .args([
            "run",
            "-n",
            "1",
            "--json",
            "--",
            "sh",
            "-c",
            "sleep 0.01 & wait",
        ])
        .current_dir(dir.path())
        .env("COLDTRACE_STATE_DIR", "")
        .output()
        .expect("setpriv");
    assert!(out.status.success(), "{out:?}");
    let r: Value = serde_json::from_slice(&out.stdout).expect("a record");
    let t = &r["tree"];
    assert!(t["source"].is_null(), "{r}");
    let why = t["unavailable"].as_str().unwrap_or_default();
    assert!(
        why.contains("root or CAP_PERFMON") || why.contains("tracefs") || why.contains("/sys/"),
        "{why}"
    );
    assert!(t["on_cpu_ns"].is_null(), "{r}");
    // The shell and its sleep, counted from perf's task records, which need no privilege.
    assert_eq!(t["tasks"], 2, "{r}");
    assert_eq!(t["tasks_source"], "perf task records", "{r}");
    let main = t["main_thread_cpu_ns"].as_u64().expect("main thread CPU");
    let children = t["children_cpu_ns"].as_u64().expect("children CPU");
    let threads = t["other_threads_cpu_ns"].as_u64().expect("threads CPU");
    let u = &r["rusage"];
    let rusage_ns = (u["user_us"].as_u64().unwrap() + u["sys_us"].as_u64().unwrap()) * 1000;
    assert_eq!(main + threads + children, rusage_ns, "{r}");
}

#[test]
fn minimal_runs_have_no_tree() {
    let _beside = beside_others();
    let dir = TempDir::new("tree-minimal");
    let out = ct(
        dir.path(),
        ["run", "-n", "1", "--minimal", "--json", "--", "true"],
    )
    .run();
    out.expect_code(0);
    assert!(out.json()["tree"].is_null(), "{}", out.describe());
}

/// Two processes passing a byte back and forth through pipes for `argv[1]` ms: hundreds of
/// thousands of context switches a second. Each closes the ends it does not use, so the child
/// sees the end of its pipe and exits when the parent does.
const PING_PONG: &str = r#"
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
int main(int argc, char **argv) {
    int a[2], b[2];
    char c = 0;
    if (pipe(a) || pipe(b)) return 2;
    if (fork() == 0) {
        close(a[1]);
        close(b[0]);
        while (read(a[0], &c, 1) == 1) if (write(b[1], &c, 1) != 1) break;
        _exit(0);
    }
    close(a[0]);
    close(b[1]);
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    long ms = atol(argv[1]);
    do {
        if (write(a[1], &c, 1) != 1 || read(b[0], &c, 1) != 1) return 3;
        clock_gettime(CLOCK_MONOTONIC, &t);
    } while ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 < ms);
    return 0;
}
"#;

/// As root: this file's other tests held off, a directory, and the ping-pong built in it.
fn ping_pong_alone(
    name: &str,
) -> Option<(
    std::sync::RwLockWriteGuard<'static, ()>,
    TempDir,
    std::path::PathBuf,
)> {
    if !traced_here() {
        return None;
    }
    let alone = PING_PONG_ALONE.write().unwrap_or_else(|e| e.into_inner());
    let dir = TempDir::new(name);
    let program = common::compile(dir.path(), "pingpong", PING_PONG, &[]);
    Some((alone, dir, program))
}

#[test]
fn a_run_whose_records_overflow_the_rings_has_no_states_and_says_why() {
    let Some((_alone, dir, program)) = ping_pong_alone("tree-overflow") else {
        return;
    };
    let run = ct(
        dir.path(),
        [
            "run",
            "-n",
            "1",
            "--json",
            "--",
            program.to_str().unwrap(),
            "3000",
        ],
    );
    let command = run.shown();
    let started = Instant::now();
    let mut cmd = run.cmd;
    let child = cmd.spawn().expect("coldtrace starts");
    // coldtrace stopped for 2 s while the ping-pong switches on: nothing reads the rings, and
    // 2 MiB a CPU holds about 23,000 records. Left to itself coldtrace reads them often enough
    // on a quiet machine (the premise of this test held only under load).
    let coldtrace = rustix::process::Pid::from_child(&child);
    std::thread::sleep(Duration::from_millis(300));
    rustix::process::kill_process(coldtrace, rustix::process::Signal::STOP).unwrap();
    std::thread::sleep(Duration::from_secs(2));
    rustix::process::kill_process(coldtrace, rustix::process::Signal::CONT).unwrap();
    let out = common::finish(child, command, started, Duration::from_secs(30));
    out.expect_code(0);
    let r = out.json();
    let t = &r["tree"];
    let records = t["records"].as_u64().unwrap();
    println!(
        "{records} records, lost {}: {}",
        t["lost_records"], t["unavailable"]
    );
    assert!(records > 5_000, "the ping-pong made enough switches: {r}");
    let why = t["unavailable"].as_str().unwrap_or_default();
    assert!(
        why.contains("filled up") || why.contains("dropped"),
        "the split is said to be incomplete: {r}"
    );
    for part in [
        "on_cpu_ns",
        "queued_ns",
        "uninterruptible_ns",
        "sleeping_ns",
    ] {
        assert!(t[part].is_null(), "{part} is not given: {r}");
    }
}

/// The rings stay on between runs: a `--prepare` whose switches fill them (the kernel drops
/// records and says so with the first record it writes once there is room again) costs no run
/// its states, and no run counts those records as its own lost ones.
#[test]
fn records_dropped_between_runs_cost_no_run_its_states() {
    let Some((_alone, dir, program)) = ping_pong_alone("tree-gap") else {
        return;
    };
    let prepare = format!("{} 300", program.display());
    let out = ct(
        dir.path(),
        [
            "run",
            "-n",
            "3",
            "-o",
            "out",
            "--prepare",
            &prepare,
            "--",
            "sleep",
            "0.01",
        ],
    )
    .run();
    out.expect_code(0);
    let runs = read_records(&dir.path().join("out"));
    assert_eq!(runs.len(), 3, "{}", out.describe());
    // The first run's --prepare comes before the rings are made; the others' fill them.
    for r in &runs {
        let [_, _, _, s] = states(r);
        assert!(s >= 9.0, "the sleep is S: {r}");
        assert_eq!(r["tree"]["lost_records"], 0, "{r}");
    }
}
