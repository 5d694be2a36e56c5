//! `coldtrace completions bash` sourced in a real bash and asked for completions the way bash
//! asks (COMP_WORDS, COMP_CWORD, then the function `complete -F` names); `coldtrace man`'s
//! page on stdout. The man page rendered by `man -l` and the zsh and fish scripts loaded by
//! their shells are checked in `.ci/run`, which installs them.
#![forbid(unsafe_code)]

mod common;

use common::{ct, write_file, TempDir};
use std::path::Path;
use std::process::Command;

/// What the completion function offers for `words` (the last one is being completed), in
/// `cwd`, with `path_dir` first on PATH.
fn complete(script: &Path, cwd: &Path, path_dir: &Path, words: &[&str]) -> Vec<String> {
    let quoted: Vec<String> = words
        .iter()
        .map(|w| format!("'{}'", w.replace('\'', r"'\''")))
        .collect();
    let program = format!(
        "set -u; source '{}'; [[ $(complete -p coldtrace) == 'complete -F _coldtrace coldtrace' ]] || exit 3; \
         COMP_WORDS=({}); COMP_CWORD={}; _coldtrace; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        script.display(),
        quoted.join(" "),
        words.len() - 1
    );
    let out = Command::new("bash")
        .arg("--norc")
        .arg("-c")
        .arg(&program)
        .current_dir(cwd)
        .env("PATH", format!("{}:/usr/bin:/bin", path_dir.display()))
        .output()
        .expect("bash runs");
    assert!(
        out.status.success(),
        "bash failed ({:?}) for {words:?}: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let mut offered: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| !l.is_empty())
        .map(str::to_owned)
        .collect();
    offered.sort();
    offered
}

#[test]
fn the_bash_script_completes_subcommands_options_and_values() {
    let tmp = TempDir::new("completions");
    let out = ct(tmp.path(), ["completions", "bash"]).run();
    assert_eq!(out.code(), Some(0), "{}", out.describe());
    let script = tmp.join("coldtrace.bash");
    std::fs::write(&script, &out.stdout).unwrap();
    let bin = tmp.join("bin");
    std::fs::create_dir(&bin).unwrap();
    write_file(&bin.join("zzcoldtrace-tool"), b"#!/bin/sh\n", 0o755);
    std::fs::create_dir(tmp.join("batch-a")).unwrap();
    std::fs::write(tmp.join("batch-file"), "").unwrap();
    let c = |words: &[&str]| complete(&script, tmp.path(), &bin, words);

    assert_eq!(c(&["coldtrace", "ru"]), ["run"]);
    assert_eq!(
        c(&["coldtrace", "c"]),
        ["cleanup", "compare", "completions", "context"]
    );
    assert_eq!(c(&["coldtrace", "run", "--warm"]), ["--warmup"]);
    assert_eq!(c(&["coldtrace", "run", "--output", "i"]), ["inherit"]);
    assert_eq!(
        c(&["coldtrace", "run", "-o", "batch"]),
        ["batch-a"],
        "directories only"
    );
    assert_eq!(
        c(&["coldtrace", "run", "--evict", "batch-"]),
        ["batch-a", "batch-file"]
    );
    assert_eq!(
        c(&["coldtrace", "run", "-n", "3", "--", "zzcoldtrace"]),
        ["zzcoldtrace-tool"]
    );
    assert_eq!(
        c(&["coldtrace", "run", "--", "zzcoldtrace-tool", "batch-f"]),
        ["batch-file"]
    );
    assert_eq!(
        c(&["coldtrace", "run", ""]),
        ["--"],
        "run's command goes after --"
    );
    assert_eq!(c(&["coldtrace", "time", "zzcold"]), ["zzcoldtrace-tool"]);
    assert_eq!(c(&["coldtrace", "report", "batch"]), ["batch-a"]);
    assert_eq!(c(&["coldtrace", "report", "--s"]), ["--svg"]);
    assert_eq!(
        c(&["coldtrace", "completions", ""]),
        ["bash", "fish", "zsh"]
    );
    assert_eq!(c(&["coldtrace", "help", "ma"]), ["man"]);
    assert!(
        c(&["coldtrace", "run", "--runs", ""]).is_empty(),
        "a number: nothing to offer"
    );

    // Every option `run --help` lists, and nothing else, is offered after `--`.
    let help = ct(tmp.path(), ["run", "--help"]).run();
    let mut listed: Vec<String> = help
        .stdout
        .lines()
        .filter(|l| l.trim_start().starts_with('-') && l.len() - l.trim_start().len() <= 6)
        .flat_map(|l| {
            l.split([',', ' ', '['])
                .filter(|w| w.starts_with("--") && w.len() > 2)
                .map(str::to_owned)
                .collect::<Vec<_>>()
        })
        .collect();
    listed.sort();
    listed.dedup();
    let offered: Vec<String> = c(&["coldtrace", "run", "--"])
        .into_iter()
        .filter(|w| w.len() > 2)
        .collect();
    // Other names of an option (`--evict-first-only`) are completed, not listed.
    let hidden_aliases: Vec<&str> =
        coldtrace::cli::table::options_of(coldtrace::cli::table::Sub::Run)
            .flat_map(|o| o.aliases.iter().copied())
            .collect();
    assert!(hidden_aliases.contains(&"--evict-first-only"));
    let offered_shown: Vec<String> = offered
        .iter()
        .filter(|w| !hidden_aliases.contains(&w.as_str()))
        .cloned()
        .collect();
    assert_eq!(
        offered_shown, listed,
        "the completions and --help list the same options"
    );
}

#[test]
fn the_man_page_and_bad_shells() {
    let tmp = TempDir::new("man");
    let out = ct(tmp.path(), ["man"]).run();
    assert_eq!(out.code(), Some(0), "{}", out.describe());
    assert!(
        out.stdout.starts_with(".TH COLDTRACE 1 "),
        "{}",
        out.describe()
    );
    assert!(out.stdout.contains("\\fB\\-\\-runs\\fR \\fIN\\fR"));
    let out = ct(tmp.path(), ["man", "extra"]).run();
    assert_eq!(out.code(), Some(125), "{}", out.describe());
    let out = ct(tmp.path(), ["completions", "tcsh"]).run();
    assert_eq!(out.code(), Some(125), "{}", out.describe());
    assert_eq!(
        out.stderr.trim(),
        "coldtrace: error: completions: unknown shell 'tcsh' (choose bash, zsh, fish)"
    );
    let out = ct(tmp.path(), ["completions"]).run();
    assert_eq!(out.code(), Some(125), "{}", out.describe());
    for shell in ["zsh", "fish"] {
        let out = ct(tmp.path(), ["completions", shell]).run();
        assert_eq!(out.code(), Some(0), "{}", out.describe());
        let warmup = if shell == "fish" {
            "-l warmup"
        } else {
            "--warmup"
        };
        assert!(out.stdout.contains(warmup), "{shell}");
    }
}
