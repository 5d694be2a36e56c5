//! Everyday commands are process trees (interpreters through shims, compilers that run their
//! passes as processes, runtimes with helper threads, shell pipelines): none goes without a
//! split of its first-run penalty. As root the split is the tree's four states; as another
//! user it is the main thread's, labelled, with the rest of the tree's CPU beside it. Commands
//! that are not installed are said and left out; the shell pipelines and the C compiler are
//! always there (CI installs gcc). Four tree shapes that need nothing more (a pipeline, a
//! wrapper that forks then execs, a helper thread spinning, a shell waiting for two parallel
//! children) pay a first-run penalty built in by construction, so their sentence must split
//! it: by the tree's states, labelled, when traced; by the main thread, labelled with why,
//! under `COLDTRACE_TREE=off` (and as another user).
#![forbid(unsafe_code)]

mod common;

use common::{compile, ct, read_batch, Output, TempDir};
use serde_json::Value;
use std::path::Path;
use std::time::Duration;

fn installed(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|dir| dir.join(program).is_file()))
}

/// The commands, each as `(name, argv)`, with the files they need written into `dir`.
fn commands(dir: &Path) -> Vec<(&'static str, Vec<String>)> {
    std::fs::write(dir.join("hello.c"), "int main(void) { return 0; }\n").unwrap();
    std::fs::write(dir.join("hello.rs"), "fn main() {}\n").unwrap();
    std::fs::write(
        dir.join("Hello.java"),
        "class Hello { public static void main(String[] a) {} }\n",
    )
    .unwrap();
    std::fs::write(dir.join("counter"), "0\n").unwrap();
    let data: Vec<u8> = (0..8u32 << 20)
        .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
        .collect();
    std::fs::write(dir.join("data"), data).unwrap();
    let d = |name: &str| dir.join(name).display().to_string();
    let all: Vec<(&'static str, Vec<String>)> = vec![
        (
            "sh",
            vec![
                "sh".into(),
                "-c".into(),
                "seq 1 20000 | sort -r | uniq | wc -l".into(),
            ],
        ),
        (
            "sh",
            vec![
                "sh".into(),
                "-c".into(),
                format!("n=$(cat {}); echo $((n + 1)) > /dev/null", d("counter")),
            ],
        ),
        (
            "gcc",
            vec![
                "gcc".into(),
                "-c".into(),
                d("hello.c"),
                "-o".into(),
                d("hello.o"),
            ],
        ),
        (
            "python3",
            vec![
                "python3".into(),
                "-c".into(),
                "import json, threading".into(),
            ],
        ),
        ("node", vec!["node".into(), "-e".into(), "1".into()]),
        ("java", vec!["java".into(), d("Hello.java")]),
        (
            "rustc",
            vec!["rustc".into(), "--out-dir".into(), d("rs"), d("hello.rs")],
        ),
        (
            "zstd",
            vec![
                "zstd".into(),
                "-q".into(),
                "-T2".into(),
                "-f".into(),
                d("data"),
                "-o".into(),
                d("data.zst"),
            ],
        ),
        (
            "xz",
            vec![
                "xz".into(),
                "-q".into(),
                "-T2".into(),
                "-k".into(),
                "-f".into(),
                d("data"),
            ],
        ),
    ];
    all.into_iter()
        .filter(|(name, _)| {
            let here = installed(name);
            if !here {
                println!("{name} is not installed here: left out");
            }
            here
        })
        .collect()
}

/// The table's notes as one line each.
fn unfolded(shown: &str) -> String {
    shown.replace("\n    ", " ")
}

/// The sentence under the table that explains the first run, on one line.
fn first_run_sentence(out: &Output) -> String {
    unfolded(&out.shown())
        .lines()
        .find(|l| l.trim_start().starts_with("first run"))
        .unwrap_or_default()
        .trim()
        .to_string()
}

/// Runs `argv` three times and returns batch.json's `first_penalty` and the sentence.
fn penalty_of(tmp: &TempDir, k: usize, argv: &[String]) -> (Value, String) {
    let out_dir = format!("b{k}");
    let mut args: Vec<String> = ["run", "-n", "3", "-o", &out_dir, "--"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    args.extend(argv.iter().cloned());
    let out = ct(tmp.path(), &args).run_within(Duration::from_secs(120));
    out.expect_code(0);
    (
        read_batch(&tmp.join(&out_dir))["first_penalty"].clone(),
        first_run_sentence(&out),
    )
}

#[test]
fn no_everyday_command_goes_without_a_split() {
    let tmp = TempDir::new("everyday");
    let root = rustix::process::geteuid().is_root();
    for (k, (name, argv)) in commands(tmp.path()).iter().enumerate() {
        let (p, sentence) = penalty_of(&tmp, k, argv);
        println!("{name}: {sentence}");
        // Split by the tree, by the one task it was, by the main thread labelled, or no
        // penalty to split.
        assert!(
            [
                "; the tree (",
                ": it was ",
                "; main thread only (",
                " blocked",
                "not distinguishable from the warm runs"
            ]
            .iter()
            .any(|w| sentence.contains(w)),
            "{name}: {sentence}"
        );
        let basis = p["basis"].as_str().unwrap_or_default();
        if root {
            assert_eq!(basis, "tree", "{name}: {p:#}");
            let parts = [
                "on_cpu_ns",
                "queued_ns",
                "uninterruptible_ns",
                "sleeping_ns",
            ];
            let sum: i64 = parts.iter().map(|k| p["tree"][k].as_i64().unwrap()).sum();
            assert_eq!(sum, p["wall_ns"].as_i64().unwrap(), "{name}: {p:#}");
            assert!(p["tree"]["tasks"].as_u64().unwrap() >= 1, "{name}: {p:#}");
        } else {
            assert!(
                basis == "schedstat" || basis == "main thread",
                "{name}: {p:#}"
            );
            assert!(
                p["cpu_ns"].is_i64() && p["blocked_ns"].is_i64(),
                "{name}: {p:#}"
            );
        }
    }
}

/// `busy MARKER FIRST_SPIN_MS FIRST_SLEEP_MS THREAD_SPIN_MS`: a helper thread spins
/// THREAD_SPIN_MS of its own CPU on every run; the first run (MARKER did not exist: it is
/// created) also spins FIRST_SPIN_MS of CPU in the main thread meanwhile, and sleeps
/// FIRST_SLEEP_MS after the helper is done (so the sleep is the same on a busy machine).
const BUSY: &str = r#"
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static unsigned long long cpu_ns(void) {
    struct timespec t; clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec * 1000000000ULL + t.tv_nsec;
}
static void spin_ms(long ms) {
    unsigned long long end = cpu_ns() + ms * 1000000ULL;
    volatile unsigned long x = 0;
    while (cpu_ns() < end) x++;
}
static void *helper(void *ms) { spin_ms((long)ms); return 0; }
int main(int argc, char **argv) {
    if (argc != 5) return 2;
    long thread_ms = atol(argv[4]);
    pthread_t t;
    if (thread_ms > 0 && pthread_create(&t, 0, helper, (void *)thread_ms)) return 3;
    int fd = open(argv[1], O_WRONLY | O_CREAT | O_EXCL, 0644);
    if (fd >= 0) {
        close(fd);
        spin_ms(atol(argv[2]));
    }
    if (thread_ms > 0) pthread_join(t, 0);
    if (fd >= 0) {
        long s = atol(argv[3]);
        struct timespec ts = { s / 1000, (s % 1000) * 1000000L };
        nanosleep(&ts, 0);
    }
    return 0;
}
"#;

/// A tree shape whose first run alone pays a penalty built in by construction, and the part
/// of `first_penalty` that must show it: traced (a `tree` field) and split by the main thread
/// (a field of `first_penalty`, or of its `tree` for the rest of the tree's CPU).
struct Shape {
    name: &'static str,
    argv: Vec<String>,
    min_tasks: u64,
    /// Whether the tree has child processes (else none may be said to have used CPU).
    children: bool,
    traced: (&'static str, f64),
    main_thread: (&'static str, f64),
}

fn shapes(tmp: &TempDir) -> Vec<Shape> {
    let busy = compile(tmp.path(), "busy", BUSY, &["-pthread"])
        .display()
        .to_string();
    let wrapper = tmp.join("wrapper");
    common::write_file(
        &wrapper,
        format!("#!/bin/sh\nn=$({busy} /dev/null 0 0 20; echo 0)\nexec {busy} first 200 0 0\n")
            .as_bytes(),
        0o755,
    );
    let sh = |script: String| vec!["sh".to_string(), "-c".to_string(), script];
    vec![
        Shape {
            name: "a pipeline under sh -c, asleep 300 ms first",
            argv: sh(
                "{ [ -e first ] || { : > first; sleep 0.3; }; seq 1 20000; } \
                      | sort -n | wc -l"
                    .into(),
            ),
            min_tasks: 4,
            children: true,
            traced: ("tree.sleeping_ns", 200.0),
            main_thread: ("blocked_ns", 200.0),
        },
        Shape {
            name: "a wrapper that forks a helper, then execs a program spinning 200 ms first",
            argv: vec![wrapper.display().to_string()],
            min_tasks: 3,
            children: true,
            traced: ("tree.on_cpu_ns", 150.0),
            main_thread: ("cpu_ns", 150.0),
        },
        Shape {
            name: "a helper thread spinning 50 ms, then the main thread asleep 300 ms first",
            argv: vec![
                busy.clone(),
                "first".into(),
                "0".into(),
                "300".into(),
                "50".into(),
            ],
            min_tasks: 2,
            children: false,
            traced: ("tree.sleeping_ns", 200.0),
            main_thread: ("blocked_ns", 200.0),
        },
        Shape {
            name: "sh waiting for two parallel children spinning 150 ms each first",
            argv: sh(format!(
                "{busy} first1 150 0 0 & {busy} first2 150 0 0 & wait"
            )),
            min_tasks: 3,
            children: true,
            traced: ("tree.on_cpu_ns", 120.0),
            main_thread: ("tree.children_cpu_ns", 250.0),
        },
    ]
}

/// `first_penalty`'s field at `path` (`tree.on_cpu_ns`), ms.
fn part_ms(p: &Value, path: &str) -> f64 {
    let v = path.split('.').fold(p, |v, key| &v[key]);
    v.as_f64().unwrap_or(f64::NAN) / 1e6
}

/// Runs `shape` five times in a directory of its own (its first run is the one that pays),
/// traced or with `COLDTRACE_TREE=off`; the printed output, `first_penalty` and the sentence.
/// coldtrace runs in a session of its own ahead of the machine's other sessions (as root). A
/// batch is run again, up to three times, when the machine's load hid what it checks: a warm
/// run slowed so much that the first run did not stand out, or a traced batch whose records
/// may be incomplete (a ring nearly filled: the product then says so and splits by the main
/// thread).
fn run_shape(tmp: &TempDir, k: usize, shape: &Shape, off: bool) -> (Output, Value, String) {
    let mut attempt = 0;
    loop {
        let mode = if off { "off" } else { "on" };
        let dir = tmp.join(format!("s{k}-{mode}-{attempt}"));
        std::fs::create_dir(&dir).unwrap();
        let mut args: Vec<String> = ["run", "-n", "10", "-o", "b", "--"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        args.extend(shape.argv.iter().cloned());
        let mut c = ct(&dir, &args).ahead_of_other_sessions();
        if off {
            c = c.env("COLDTRACE_TREE", "off");
        }
        let out = c.run_within(Duration::from_secs(120));
        out.expect_code(0);
        let p = read_batch(&dir.join("b"))["first_penalty"].clone();
        let why = p["tree"]["unavailable"].as_str().unwrap_or_default();
        let hidden = (!off && why.contains("may be incomplete")) || p["significant"] != true;
        attempt += 1;
        if hidden && attempt < 3 {
            println!(
                "{}: run again: {why} {}",
                shape.name,
                first_run_sentence(&out)
            );
            continue;
        }
        let sentence = first_run_sentence(&out);
        return (out, p, sentence);
    }
}

/// The lines of the sentence as printed: the line that starts it and its indented rest.
fn sentence_lines(out: &Output) -> Vec<String> {
    let lines = out.shown_lines();
    let start = lines
        .iter()
        .position(|l| l.trim_start().starts_with("first run"));
    start.map_or(Vec::new(), |s| {
        let rest = lines[s + 1..].iter().take_while(|l| l.starts_with("    "));
        lines[s..=s].iter().chain(rest).cloned().collect()
    })
}

/// What the penalty `p` of `shape` must say: its basis, the words of its sentence, and the
/// field that shows the penalty built in with its least value, ms.
fn expected(
    shape: &Shape,
    traced: bool,
    off: bool,
    p: &Value,
) -> (&'static str, Vec<String>, (&'static str, f64)) {
    if traced {
        let tasks = p["tree"]["tasks"].as_u64().unwrap_or(0);
        assert!(tasks >= shape.min_tasks, "{} tasks: {p:#}", shape.name);
        let words = [
            format!("; the tree ({tasks} tasks) was "),
            "on a CPU ".into(),
            "uninterruptible (storage, faults, kernel locks) ".into(),
            "waiting for a CPU ".into(),
            "asleep ".into(),
        ];
        return ("tree", words.into(), shape.traced);
    }
    let why = if off {
        "COLDTRACE_TREE=off"
    } else {
        "its states need root or CAP_PERFMON"
    };
    // Counted without the tracepoints, from perf's task records.
    let tasks = p["tree"]["tasks"].as_u64().unwrap_or(0);
    assert!(tasks >= shape.min_tasks, "{} tasks: {p:#}", shape.name);
    let words = [
        format!("; main thread only (the tree ran {tasks} tasks; {why}): "),
        " off CPU".into(),
        " on a CPU".into(),
        " waiting for a CPU".into(),
        "; the rest of the tree used ".into(),
        " in other threads, ".into(),
        " in child processes".into(),
    ];
    ("main thread", words.into(), shape.main_thread)
}

#[test]
fn every_tree_shape_gets_a_labelled_split_traced_and_by_its_main_thread() {
    let tmp = TempDir::new("everyday-shapes");
    let root = rustix::process::geteuid().is_root();
    if !root {
        println!("not root: the tree cannot be traced here, so both batches are split by the main thread");
    }
    for (k, shape) in shapes(&tmp).iter().enumerate() {
        for off in [false, true] {
            let (out, p, sentence) = run_shape(&tmp, k, shape, off);
            let what = format!(
                "{} ({}): {sentence}\n{p:#}",
                shape.name,
                if off { "COLDTRACE_TREE=off" } else { "traced" }
            );
            println!("{what}");
            assert!(
                sentence.starts_with("first run +"),
                "{what}{}",
                out.describe()
            );
            assert!(
                !sentence.contains("not decomposable") && !sentence.contains("not split"),
                "{what}"
            );
            for line in sentence_lines(&out) {
                assert!(
                    line.chars().count() <= 80,
                    "wider than 80 columns: {line:?}\n{what}"
                );
            }
            let (basis, words, (field, at_least)) = expected(shape, root && !off, off, &p);
            assert_eq!(p["basis"], basis, "{what}");
            for words in words {
                assert!(sentence.contains(&words), "{words:?} missing: {what}");
            }
            assert!(
                part_ms(&p, field) >= at_least,
                "{field} below {at_least} ms: {what}"
            );
            if !shape.children {
                assert_eq!(p["tree"]["children_cpu_ns"], 0, "no child process: {what}");
            }
        }
    }
}
