//! Everyday commands are process trees (interpreters through shims, compilers that run their
//! passes as processes, runtimes with helper threads, shell pipelines): none goes without a
//! split of its first-run penalty. As root the split is the tree's four states; as another
//! user it is the main thread's, labelled, with the rest of the tree's CPU beside it. Commands
//! that are not installed are said and left out; the shell pipelines and the C compiler are
//! always there (CI installs gcc).
#![forbid(unsafe_code)]

mod common;

use common::{ct, read_batch, TempDir};
use serde_json::Value;
use std::path::Path;

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

/// Runs `argv` three times and returns batch.json's `first_penalty` and the sentence.
fn penalty_of(tmp: &TempDir, k: usize, argv: &[String]) -> (Value, String) {
    let out_dir = format!("b{k}");
    let mut args: Vec<String> = ["run", "-n", "3", "-o", &out_dir, "--"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    args.extend(argv.iter().cloned());
    let out = ct(tmp.path(), &args).run_within(std::time::Duration::from_secs(120));
    out.expect_code(0);
    let sentence = unfolded(&out.shown())
        .lines()
        .find(|l| l.trim_start().starts_with("first run"))
        .unwrap_or_default()
        .trim()
        .to_string();
    (
        read_batch(&tmp.join(&out_dir))["first_penalty"].clone(),
        sentence,
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
                "no first-run penalty to explain"
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
