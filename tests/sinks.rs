//! Where a command's output goes (`--output null|pipe|inherit|FILE`, `--keep-output`), on the
//! binary: the same with or without `-o DIR`, named in the table's title, and seen by a
//! command that behaves differently on `/dev/null` (GNU grep writes nothing there).
#![forbid(unsafe_code)]

mod common;

use common::{ct, read_records, TempDir};
use serde_json::Value;

/// A corpus of 20 files of 100 lines, each line holding "the" (2,000 matching lines).
fn corpus(dir: &TempDir) {
    std::fs::create_dir(dir.join("corpus")).unwrap();
    for i in 0..20 {
        let text: String = (0..100)
            .map(|n| format!("the quick brown fox {i} {n}\n"))
            .collect();
        std::fs::write(dir.join(format!("corpus/f{i:02}.txt")), text).unwrap();
    }
}

/// What `grep -r the corpus` wrote (`/proc/PID/io` wchar) in each of 3 runs, with `flags`,
/// with `-o DIR` (read from runs.jsonl) or without it (read from --export-coldtrace-json).
fn written(dir: &TempDir, flags: &[&str], with_out: bool, tag: &str) -> Vec<Value> {
    let export = format!("{tag}.json");
    let mut args = vec!["run", "-q", "-n", "3"];
    if with_out {
        args.extend(["-o", tag]);
    } else {
        args.extend(["--export-coldtrace-json", &export]);
    }
    args.extend_from_slice(flags);
    args.extend(["--", "grep", "-r", "the", "corpus"]);
    let out = ct(dir.path(), args).run();
    out.expect_code(0);
    let records = if with_out {
        read_records(&dir.join(tag))
    } else {
        let text = std::fs::read_to_string(dir.join(&export)).unwrap();
        let doc: Value = serde_json::from_str(&text).unwrap();
        doc["runs"].as_array().unwrap().clone()
    };
    records
        .iter()
        .map(|r| r["child_io"]["wchar"].clone())
        .collect()
}

#[test]
fn a_command_that_notices_dev_null_does_the_same_work_with_and_without_out() {
    let dir = TempDir::new("grep-sink");
    corpus(&dir);
    let matched = std::process::Command::new("grep")
        .args(["-r", "the", "corpus"])
        .current_dir(dir.path())
        .output()
        .unwrap()
        .stdout
        .len() as u64;
    // Every line matches: each printed with its file's name and a colon.
    let expected: u64 = (0..20)
        .map(|i| {
            let name = format!("corpus/f{i:02}.txt");
            std::fs::metadata(dir.join(&name)).unwrap().len() + 100 * (name.len() as u64 + 1)
        })
        .sum();
    assert_eq!(matched, expected, "grep -r prints every line of the corpus");
    // The default, with or without -o: /dev/null, where GNU grep writes nothing at all.
    let default = written(&dir, &[], false, "null");
    assert_eq!(default, written(&dir, &[], true, "null-o"));
    assert!(default.iter().all(|w| w == 0), "{default:?}");
    // hyperfine's pipe and a file: grep writes every match, with or without -o.
    for (flags, tag) in [
        (&["--output", "pipe"][..], "pipe"),
        (&["--output", "o.txt"], "file"),
    ] {
        let alone = written(&dir, flags, false, tag);
        assert_eq!(
            alone,
            written(&dir, flags, true, &format!("{tag}-o")),
            "{flags:?}"
        );
        assert!(alone.iter().all(|w| w == matched), "{flags:?}: {alone:?}");
    }
    // The file holds the last run's output (emptied before every run).
    assert_eq!(std::fs::metadata(dir.join("o.txt")).unwrap().len(), matched);
    // --keep-output: every run's stdout under runs/NNN/.
    let kept = written(&dir, &["--keep-output"], true, "kept");
    assert!(kept.iter().all(|w| w == matched), "{kept:?}");
    for i in 0..3 {
        let file = dir.join(format!("kept/runs/{i:03}/stdout"));
        assert_eq!(std::fs::metadata(&file).unwrap().len(), matched, "{file:?}");
    }
    // -o alone keeps the records only.
    assert!(!dir.join("null-o/runs").exists());
}

#[test]
fn a_failed_runs_stderr_tail_is_kept_whatever_the_sink() {
    let dir = TempDir::new("tail-sink");
    let script = "echo out; echo \"the reason $$\" >&2; exit 3";
    for flags in [&[][..], &["--output", "pipe"], &["--output", "o.txt"]] {
        let mut args = vec!["run", "-n", "3"];
        args.extend_from_slice(flags);
        args.extend(["--", "sh", "-c", script]);
        let out = ct(dir.path(), args).run();
        out.expect_code(1);
        assert!(
            out.stderr.contains("| the reason "),
            "{flags:?}{}",
            out.describe()
        );
        assert!(!out.stdout.contains("out"), "{flags:?}{}", out.describe());
    }
    // A pipe reader that is still draining when coldtrace ends holds nothing up: a command
    // that writes more than a pipe holds finishes, and so does coldtrace.
    let out = ct(
        dir.path(),
        [
            "run",
            "-q",
            "-n",
            "2",
            "--output",
            "pipe",
            "--",
            "head",
            "-c",
            "5000000",
            "/dev/zero",
        ],
    )
    .run_within(std::time::Duration::from_secs(30));
    out.expect_code(0);
}
