//! Spawn-and-reap latency of `/bin/true`, from a small parent and from a parent that has touched
//! a large heap, for three ways of starting a child:
//!
//! - **(a) vfork**: this crate's `Program::spawn` (`clone(CLONE_VM | CLONE_VFORK | SIGCHLD)` on a
//!   reused `ChildStack`) and `Child::reap` (hand-written `wait4` with rusage).
//! - **(b) posix_spawn**: `std::process::Command::new("/bin/true").status()`. std uses glibc's
//!   `posix_spawn`, which is `clone3(CLONE_VM | CLONE_VFORK)` on glibc 2.36.
//! - **(c) fork**: the same `Command` with `.uid(<current uid>)`. Setting a uid makes std give up
//!   on `posix_spawn` and use `fork` + `execve` (its `posix_spawn` fast path refuses uid/gid).
//!   Verified with `strace -f -e trace=clone,clone3,fork,vfork` on the static release build
//!   (kernel 6.18, glibc 2.36, rustc 1.95): path (c) shows `clone(child_stack=NULL,
//!   flags=CLONE_CHILD_CLEARTID|CLONE_CHILD_SETTID|SIGCHLD)`, i.e. glibc's `fork()`, while (a)
//!   shows `clone(child_stack=0x…, flags=CLONE_VM|CLONE_VFORK|SIGCHLD)` and (b)
//!   `clone3({flags=CLONE_VM|CLONE_VFORK, exit_signal=SIGCHLD, …})`. The forked child then calls
//!   `setuid(<uid>)` (and, when running as root, `setgroups(0, NULL)`) before `execve`: two cheap
//!   syscalls that do not depend on the heap. Run with `--paths c` to see path (c) alone.
//!
//! - **(d) clone**: (a) with `SpawnOptions::legacy_clone`: `clone` instead of `clone3`, and the
//!   child asks the kernel about each of the 64 signals instead of the kernel clearing handlers
//!   (`CLONE_CLEAR_SIGHAND`): the path of kernels before 5.5. Not in the default `--paths abc`.
//!
//! Interleaving, to spread the machine's noise (other jobs share its two cores):
//! - the heap sizes alternate in blocks (default 8 of each, 250 rounds per block): small, big,
//!   small, big, … The big heap is allocated and touched before each big block and freed after
//!   it, and the peak RSS is then reset with `echo 5 > /proc/self/clear_refs`, because the vfork
//!   child's max RSS includes the parent's *peak* RSS, which never goes down by itself;
//! - within a block the three paths run round-robin, the starting path rotating each round.
//!
//! Besides the pooled medians, the ratio big/small is also given paired: per block pair (a small
//! block and the big block right after it), then the median of those ratios, which a slow drift
//! of the machine's load cannot fake.
//!
//! Because one fork of a 2 GiB parent costs tens of milliseconds (it copies the page tables),
//! path (c) runs only in every k-th round of the big-heap blocks (at most `--fork-big-runs` runs
//! in all) to keep the default run under two minutes; the other rounds still interleave (a), (b).
//!
//! Child max RSS (`ru_maxrss`, KiB): for (a) it comes from the timed runs' own `wait4`. std's
//! `status()` reaps with `waitpid` and throws the rusage away, so for (b) and (c) the timed runs
//! have none; a few extra, untimed runs per path spawn with `Command::spawn()` and reap the PID
//! with this crate's `wait::wait4` instead, which shows the floor that each path inherits.
//!
//! ```text
//! cargo run --release -p coldtrace-syscalls --example spawn_bench -- [--runs N] [--heap-mib N]
//!     [--fork-big-runs N] [--rss-samples N] [--blocks N] [--paths abc]
//! ```
//! `SPAWN_BENCH_HEAP_MIB` sets the heap size too (the flag wins); `--heap-mib 0` runs the small
//! parent only.
#![forbid(unsafe_code)]

use coldtrace_syscalls::wait::monotonic_ns;
use coldtrace_syscalls::wait::{self as raw, Wait4Options};
use coldtrace_syscalls::{ChildStack, Program, SpawnOptions, WaitStatusKind};
use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::process::Command;

const TRUE: &str = "/bin/true";

#[derive(Clone, Copy, PartialEq, Eq)]
enum Path {
    Vfork,
    PosixSpawn,
    Fork,
    Clone,
}

impl Path {
    const ALL: [Path; 4] = [Path::Vfork, Path::PosixSpawn, Path::Fork, Path::Clone];
    const DEFAULT: [Path; 3] = [Path::Vfork, Path::PosixSpawn, Path::Fork];

    fn label(self) -> &'static str {
        match self {
            Path::Vfork => "(a) coldtrace vfork + wait4",
            Path::PosixSpawn => "(b) std Command (posix_spawn)",
            Path::Fork => "(c) std Command + uid (fork)",
            Path::Clone => "(d) coldtrace clone + 64 queries",
        }
    }

    fn letter(self) -> char {
        match self {
            Path::Vfork => 'a',
            Path::PosixSpawn => 'b',
            Path::Fork => 'c',
            Path::Clone => 'd',
        }
    }
}

struct Config {
    runs: usize,
    heap_mib: usize,
    fork_big_runs: usize,
    rss_samples: usize,
    blocks: usize,
    paths: Vec<Path>,
}

fn usage() -> ! {
    eprintln!(
        "usage: spawn_bench [--runs N (2000)] [--heap-mib N (2048; env SPAWN_BENCH_HEAP_MIB)] \
         [--fork-big-runs N (400)] [--rss-samples N (20)] [--blocks N (8)] [--paths abc]"
    );
    std::process::exit(2)
}

fn parse_args() -> Config {
    let mut config = Config {
        runs: 2000,
        heap_mib: 2048,
        fork_big_runs: 400,
        rss_samples: 20,
        blocks: 8,
        paths: Path::DEFAULT.to_vec(),
    };
    if let Ok(v) = std::env::var("SPAWN_BENCH_HEAP_MIB") {
        config.heap_mib = v.parse().unwrap_or_else(|_| usage());
    }
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let mut value = || args.next().unwrap_or_else(|| usage());
        match flag.as_str() {
            "--runs" => config.runs = value().parse().unwrap_or_else(|_| usage()),
            "--heap-mib" => config.heap_mib = value().parse().unwrap_or_else(|_| usage()),
            "--fork-big-runs" => config.fork_big_runs = value().parse().unwrap_or_else(|_| usage()),
            "--rss-samples" => config.rss_samples = value().parse().unwrap_or_else(|_| usage()),
            "--blocks" => config.blocks = value().parse().unwrap_or_else(|_| usage()),
            "--paths" => {
                let v = value();
                config.paths = Path::ALL
                    .into_iter()
                    .filter(|p| v.contains(p.letter()))
                    .collect();
                if config.paths.is_empty() {
                    usage();
                }
            }
            _ => usage(),
        }
    }
    if config.runs == 0 || config.blocks == 0 {
        usage();
    }
    config
}

/// Everything path (a) needs, prepared once.
struct Vfork {
    program: Program,
    stack: ChildStack,
}

impl Vfork {
    fn new() -> Vfork {
        let path = CString::new(TRUE).expect("no NUL");
        let envp = std::env::vars_os()
            .map(|(k, v)| {
                let mut kv = k.as_bytes().to_vec();
                kv.push(b'=');
                kv.extend_from_slice(v.as_bytes());
                CString::new(kv).expect("environment strings have no NUL")
            })
            .collect();
        let program = Program::new(path.clone(), vec![path], envp);
        let stack = ChildStack::new().expect("mmap child stack");
        Vfork { program, stack }
    }

    /// One spawn + reap (through `clone` and the child's 64 signal queries with `legacy`, else
    /// `clone3`); returns the child's max RSS in KiB.
    fn run(&mut self, legacy: bool) -> u64 {
        let options = SpawnOptions {
            legacy_clone: legacy,
            ..SpawnOptions::default()
        };
        let child = self
            .program
            .spawn(&options, &mut self.stack)
            .expect("spawn");
        let (status, usage) = child.reap().expect("wait4");
        assert_eq!(
            status.kind(),
            WaitStatusKind::Exited { code: 0 },
            "{TRUE}: {status}"
        );
        usage.max_rss_kib
    }
}

fn fork_command(uid: u32) -> Command {
    let mut command = Command::new(TRUE);
    command.uid(uid);
    command
}

/// One timed run of `path`; returns (nanoseconds, child max RSS in KiB if known).
fn timed(path: Path, vfork: &mut Vfork, uid: u32) -> (u64, Option<u64>) {
    let start = monotonic_ns();
    let rss = match path {
        Path::Vfork => Some(vfork.run(false)),
        Path::Clone => Some(vfork.run(true)),
        Path::PosixSpawn => {
            let status = Command::new(TRUE).status().expect("posix_spawn");
            assert!(status.success(), "{TRUE}: {status}");
            None
        }
        Path::Fork => {
            let status = fork_command(uid).status().expect("fork");
            assert!(status.success(), "{TRUE}: {status}");
            None
        }
    };
    (monotonic_ns() - start, rss)
}

/// An untimed run that reaps a std-spawned child with `raw::wait4` to get its max RSS.
fn std_child_rss(mut command: Command) -> u64 {
    let child = command.spawn().expect("spawn");
    let pid = child.id() as i32;
    let (_, status, usage) = raw::wait4(pid, Wait4Options::BLOCK)
        .expect("wait4")
        .expect("reaped");
    assert_eq!(
        status.kind(),
        WaitStatusKind::Exited { code: 0 },
        "{TRUE}: {status}"
    );
    // The std `Child` is dropped without waiting (std never reaps on drop), so its stale PID is
    // never used again.
    drop(child);
    usage.max_rss_kib
}

/// VmRSS and VmHWM of this process, KiB.
fn self_rss() -> (u64, u64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|n| n.parse().ok())
            .unwrap_or(0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

#[derive(Clone, Copy, Default)]
struct Summary {
    runs: usize,
    median_us: f64,
    p10_us: f64,
    p90_us: f64,
}

/// Nearest-rank percentile of sorted samples.
fn percentile(sorted: &[u64], p: f64) -> u64 {
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

fn summarize(samples: &mut [u64]) -> Summary {
    if samples.is_empty() {
        return Summary::default();
    }
    samples.sort_unstable();
    let us = |ns: u64| ns as f64 / 1000.0;
    let median = if samples.len() % 2 == 1 {
        us(samples[samples.len() / 2])
    } else {
        (us(samples[samples.len() / 2 - 1]) + us(samples[samples.len() / 2])) / 2.0
    };
    Summary {
        runs: samples.len(),
        median_us: median,
        p10_us: us(percentile(samples, 10.0)),
        p90_us: us(percentile(samples, 90.0)),
    }
}

fn median_u64(mut v: Vec<u64>) -> Option<u64> {
    v.sort_unstable();
    v.get(v.len() / 2).copied()
}

/// What one heap size accumulates over its blocks.
#[derive(Default)]
struct Acc {
    samples: [Vec<u64>; 4],
    block_medians: [Vec<f64>; 4],
    rss: [Vec<u64>; 4],
    parent_rss: Vec<(u64, u64)>,
    ns: u64,
}

/// Runs one block of `rounds` round-robin rounds into `acc`. `fork_cap`: at most this many runs
/// of the fork path, spread evenly over the block (`None`: every round).
fn block(
    config: &Config,
    acc: &mut Acc,
    rounds: usize,
    fork_cap: Option<usize>,
    rss_samples: usize,
    vfork: &mut Vfork,
    uid: u32,
) {
    acc.parent_rss.push(self_rss());
    let started = monotonic_ns();
    let fork_every = match fork_cap {
        None => 1,
        Some(0) => usize::MAX,
        Some(cap) => rounds.div_ceil(cap).max(1),
    };
    // Warm-up: page cache, std's lazily initialised state, the child stack.
    for _ in 0..3 {
        for &path in &config.paths {
            if path != Path::Fork || fork_cap.is_none() {
                timed(path, vfork, uid);
            }
        }
    }
    let mut samples: [Vec<u64>; 4] = Default::default();
    let n = config.paths.len();
    for round in 0..rounds {
        for i in 0..n {
            let path = config.paths[(round + i) % n];
            if path == Path::Fork && round % fork_every != 0 {
                continue;
            }
            let (ns, rss) = timed(path, vfork, uid);
            samples[path as usize].push(ns);
            if let Some(rss) = rss {
                acc.rss[path as usize].push(rss);
            }
        }
    }
    // Untimed max-RSS probes for the std paths.
    for _ in 0..rss_samples {
        if config.paths.contains(&Path::PosixSpawn) {
            let kib = std_child_rss(Command::new(TRUE));
            acc.rss[Path::PosixSpawn as usize].push(kib);
        }
        if config.paths.contains(&Path::Fork) {
            let kib = std_child_rss(fork_command(uid));
            acc.rss[Path::Fork as usize].push(kib);
        }
    }
    acc.ns += monotonic_ns() - started;
    for (i, mut s) in samples.into_iter().enumerate() {
        if !s.is_empty() {
            acc.block_medians[i].push(summarize(&mut s).median_us);
            acc.samples[i].extend(s);
        }
    }
}

fn median_f64(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

fn main() {
    let config = parse_args();
    let uid = rustix::process::getuid().as_raw();
    let mut vfork = Vfork::new();
    let blocks = config.blocks;
    let rounds = config.runs.div_ceil(blocks);
    let fork_cap = config.fork_big_runs.div_ceil(blocks);
    let rss_samples = config.rss_samples.div_ceil(blocks);
    let big = config.heap_mib > 0;

    println!(
        "spawn_bench: {TRUE}, {} rounds per heap size in {blocks} alternating blocks of {rounds} \
         (small, {} MiB, small, ...); paths round-robin with rotating start; fork path capped at \
         {} runs with the big heap; uid {uid}",
        rounds * blocks,
        config.heap_mib,
        fork_cap * blocks
    );
    let mut small = Acc::default();
    let mut large = Acc::default();
    let mut touch_ns = Vec::new();
    let mut clear_refs_ok = true;
    for _ in 0..blocks {
        block(
            &config,
            &mut small,
            rounds,
            None,
            rss_samples,
            &mut vfork,
            uid,
        );
        if !big {
            continue;
        }
        let started = monotonic_ns();
        let bytes = config.heap_mib << 20;
        let mut heap = vec![0u8; bytes];
        // Touch every page so that the heap is resident (and its page tables exist).
        heap.iter_mut()
            .step_by(rustix::param::page_size())
            .for_each(|b| *b = 1);
        std::hint::black_box(&mut heap);
        touch_ns.push(monotonic_ns() - started);
        block(
            &config,
            &mut large,
            rounds,
            Some(fork_cap),
            rss_samples,
            &mut vfork,
            uid,
        );
        std::hint::black_box(&heap);
        // One mmap: freeing it returns RSS to the small floor. Writing 5 to clear_refs resets
        // the peak (VmHWM) too, which a vfork child would otherwise inherit in the next block.
        drop(heap);
        clear_refs_ok &= std::fs::write("/proc/self/clear_refs", "5").is_ok();
    }

    let heap_label = format!("{} MiB touched", config.heap_mib);
    let mut phases = vec![("small", &mut small)];
    if big {
        phases.push((heap_label.as_str(), &mut large));
    }
    println!();
    for (label, acc) in &phases {
        let rss: Vec<u64> = acc.parent_rss.iter().map(|r| r.0).collect();
        let hwm: Vec<u64> = acc.parent_rss.iter().map(|r| r.1).collect();
        println!(
            "- heap {label}: parent VmRSS {}..{} KiB, VmHWM {}..{} KiB at block starts; {:.1} s \
             in blocks",
            rss.iter().min().unwrap_or(&0),
            rss.iter().max().unwrap_or(&0),
            hwm.iter().min().unwrap_or(&0),
            hwm.iter().max().unwrap_or(&0),
            acc.ns as f64 / 1e9
        );
    }
    if big {
        let touch: Vec<f64> = touch_ns.iter().map(|&ns| ns as f64 / 1e6).collect();
        println!(
            "- allocating and touching the heap: median {:.0} ms per block; peak reset with \
             clear_refs after each big block: {}",
            median_f64(&touch),
            if clear_refs_ok {
                "yes"
            } else {
                "NO (small-heap max RSS keeps the peak)"
            }
        );
    }

    println!();
    println!("| heap | path | runs | median µs | p10 µs | p90 µs | child max_rss_kib (median) |");
    println!("|---|---|---:|---:|---:|---:|---|");
    let mut medians = vec![[0.0f64; 4]; phases.len()];
    for (k, (label, acc)) in phases.iter_mut().enumerate() {
        for &path in &config.paths {
            let i = path as usize;
            let s = summarize(&mut acc.samples[i]);
            medians[k][i] = s.median_us;
            let rss = median_u64(acc.rss[i].clone());
            let cell = match (path, rss) {
                (Path::Vfork | Path::Clone, Some(kib)) => format!("{kib} (timed runs' wait4)"),
                (_, Some(kib)) => format!("n/a from std; {kib} via raw::wait4 on spawn()"),
                (_, None) => "n/a".to_string(),
            };
            println!(
                "| {label} | {} | {} | {:.1} | {:.1} | {:.1} | {cell} |",
                path.label(),
                s.runs,
                s.median_us,
                s.p10_us,
                s.p90_us
            );
        }
    }
    if !big {
        return;
    }

    println!();
    println!(
        "| path | small median µs | big median µs | big/small (pooled) | big/small (paired \
         blocks: median, min..max) |"
    );
    println!("|---|---:|---:|---:|---|");
    for &path in &config.paths {
        let i = path as usize;
        let paired: Vec<f64> = small.block_medians[i]
            .iter()
            .zip(large.block_medians[i].iter())
            .map(|(s, b)| b / s)
            .collect();
        let min = paired.iter().copied().fold(f64::INFINITY, f64::min);
        let max = paired.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        println!(
            "| {} | {:.1} | {:.1} | {:.2} | {:.2}, {:.2}..{:.2} |",
            path.label(),
            medians[0][i],
            medians[1][i],
            medians[1][i] / medians[0][i],
            median_f64(&paired),
            min,
            max
        );
    }

    println!();
    print!("| block |");
    for &path in &config.paths {
        print!(" ({}) small | ({}) big |", path.letter(), path.letter());
    }
    println!();
    println!("|---:|{}", "---:|".repeat(2 * config.paths.len()));
    for b in 0..blocks {
        print!("| {} |", b + 1);
        for &path in &config.paths {
            let i = path as usize;
            let cell = |v: &[f64]| v.get(b).map_or("-".to_string(), |m| format!("{m:.0}"));
            print!(
                " {} | {} |",
                cell(&small.block_medians[i]),
                cell(&large.block_medians[i])
            );
        }
        println!();
    }
    println!("(block medians in µs, in run order: each small block ran right before its big one)");
}
