//! The front door from the outside: how a hyperfine or GNU time user's first commands are read
//! (`--opt=value`, repeated options, typos, quoted commands, `-o FILE` habits), on the binary.
#![forbid(unsafe_code)]

mod common;

use common::{ct, read_records, TempDir};

#[test]
fn gnu_style_equals_values_are_accepted_everywhere() {
    let dir = TempDir::new("equals");
    let out = ct(
        dir.path(),
        [
            "run",
            "--runs=3",
            "--out=b",
            "--label=eq",
            "--timeout=5",
            "--",
            "true",
        ],
    )
    .run();
    out.expect_code(0);
    let records = read_records(&dir.join("b"));
    assert_eq!(records.len(), 3, "{}", out.describe());
    assert!(
        records.iter().all(|r| r["label"] == "eq"),
        "{}",
        out.describe()
    );
    let out = ct(
        dir.path(),
        ["compare", "--shuffle=1", "-n2", "-q", "true", "true"],
    )
    .run();
    out.expect_code(0);
}

#[test]
fn a_repeated_option_uses_the_last_value_and_says_so_once() {
    let dir = TempDir::new("repeat");
    let out = ct(
        dir.path(),
        ["run", "-n", "2", "-n", "3", "-o", "b", "--", "true"],
    )
    .run();
    out.expect_code(0);
    assert_eq!(read_records(&dir.join("b")).len(), 3, "{}", out.describe());
    let said: Vec<&str> = out
        .stderr_lines()
        .into_iter()
        .filter(|l| l.contains("given twice"))
        .collect();
    assert_eq!(
        said,
        ["coldtrace: -n/--runs given twice ('2', '3'): the last one, '3', is used"],
        "{}",
        out.describe()
    );
    let out = ct(
        dir.path(),
        [
            "run", "-n", "1", "--label", "a", "--label", "b", "--json", "--output", "null", "--",
            "true",
        ],
    )
    .run();
    out.expect_code(0);
    assert_eq!(out.json()["label"], "b", "{}", out.describe());
    // -q: nothing on stderr, the last value still wins.
    let out = ct(
        dir.path(),
        ["run", "-q", "-n", "1", "-n", "2", "--", "true"],
    )
    .run();
    out.expect_code(0);
    assert_eq!(out.stderr, "", "{}", out.describe());
}

#[test]
fn one_quoted_command_is_split_as_compare_splits_it_and_said_once() {
    let dir = TempDir::new("quoted");
    let said = |out: &common::Output| {
        let text = out.stderr.split_whitespace().collect::<Vec<_>>().join(" ");
        text.matches("'sleep 0.01' is one argument: run as the words sleep 0.01, split as `compare` splits a command (no shell")
            .count()
    };
    // hyperfine's `hyperfine 'sleep 0.1'`: with `--` or without it.
    for (args, out_dir) in [
        (&["run", "-n", "2", "-o", "a", "--", "sleep 0.01"][..], "a"),
        (&["run", "-n", "2", "-o", "b", "sleep 0.01"][..], "b"),
    ] {
        let out = ct(dir.path(), args).run();
        out.expect_code(0);
        assert_eq!(said(&out), 1, "{}", out.describe());
        let records = read_records(&dir.join(out_dir));
        assert_eq!(records.len(), 2);
        assert_eq!(records[0]["argv"], serde_json::json!(["sleep", "0.01"]));
    }
    // A parameter scan of one such string: every value split alike.
    let out = ct(
        dir.path(),
        [
            "run",
            "-n",
            "1",
            "-q",
            "-P",
            "n",
            "1",
            "2",
            "-o",
            "s",
            "--",
            "sleep 0.0{n}",
        ],
    )
    .run();
    out.expect_code(0);
    let scanned = read_records(&dir.join("s/commands/01"));
    assert_eq!(scanned[0]["argv"], serde_json::json!(["sleep", "0.02"]));
    // A file whose name has a blank is that file, not words; more than one word before `--`
    // is still `time`'s habit, refused.
    common::write_file(&dir.join("my prog"), b"#!/bin/sh\nexit 0\n", 0o755);
    let out = ct(dir.path(), ["run", "-n", "1", "-o", "f", "--", "./my prog"]).run();
    out.expect_code(0);
    assert_eq!(said(&out), 0, "{}", out.describe());
    assert_eq!(
        read_records(&dir.join("f"))[0]["argv"],
        serde_json::json!(["./my prog"])
    );
    let out = ct(dir.path(), ["run", "sleep", "0.01"]).run();
    out.expect_code(125);
    assert!(
        out.stderr.contains("put the command after `--`"),
        "{}",
        out.describe()
    );
}

#[test]
fn shell_syntax_in_a_command_string_stops_before_anything_runs_and_names_dash_s() {
    let dir = TempDir::new("syntax");
    // Split into words, each of these would run something else than a shell runs: `touch` would
    // make files named `made;`, `|`, `$HOME`…, `echo` print the literal words.
    for (args, syntax) in [
        (&["compare", "-o", "c", "touch made; true", "true"][..], ';'),
        (&["compare", "-o", "c", "ls | wc -l", "ls"][..], '|'),
        (&["compare", "-o", "c", "true", "touch made $HOME"][..], '$'),
        (&["compare", "-o", "c", "touch made *", "true"][..], '*'),
        (&["run", "-o", "c", "touch made > f"][..], '>'),
        (&["run", "-o", "c", "--", "touch ~/made"][..], '~'),
        (
            &[
                "run",
                "-o",
                "c",
                "-P",
                "v",
                "1",
                "2",
                "--",
                "touch made{v} &",
            ][..],
            '&',
        ),
    ] {
        let out = ct(dir.path(), args).run();
        out.expect_code(125);
        let lines = out.stderr_lines();
        assert_eq!(lines.len(), 1, "{}", out.describe());
        let line = lines[0];
        assert!(
            line.starts_with(&format!("coldtrace: error: {syntax} in ")),
            "{line}"
        );
        assert!(
            line.contains("shell syntax") && line.contains("-S"),
            "{line}"
        );
        assert!(!line.contains("-i"), "{line}");
        assert!(line.chars().count() <= 80, "{line}");
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert!(left.is_empty(), "something ran: {left:?}{}", out.describe());
    }
    // Quoted, the same characters are the words a shell would give too; -S runs the pipe
    // through sh; -N asks for the words, syntax and all.
    let out = ct(
        dir.path(),
        [
            "compare",
            "-n",
            "2",
            "-q",
            "echo 'a|b; $HOME *'",
            "echo \\$x\\*",
        ],
    )
    .run();
    out.expect_code(0);
    let out = ct(
        dir.path(),
        ["compare", "-S", "-n", "2", "-q", "ls | wc -l", "ls"],
    )
    .run();
    out.expect_code(0);
    let out = ct(
        dir.path(),
        [
            "compare", "-N", "-n", "2", "-q", "-o", "n", "echo *", "true",
        ],
    )
    .run();
    out.expect_code(0);
    let records = read_records(&dir.join("n/commands/00"));
    assert_eq!(records[0]["argv"], serde_json::json!(["echo", "*"]));
}

#[test]
fn a_script_found_in_path_and_the_reach_of_a_cold_action_are_said_once() {
    let dir = TempDir::new("said-once");
    std::fs::create_dir(dir.join("bin")).unwrap();
    // A shim, as pyenv's `python3` is: a bash script that execs the real program.
    common::write_file(
        &dir.join("bin/shimmed"),
        b"#!/usr/bin/env sh\nexec true \"$@\"\n",
        0o755,
    );
    common::write_file(&dir.join("evicted"), &[1; 8192], 0o644);
    let path = format!(
        "{}:{}",
        dir.join("bin").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = ct(
        dir.path(),
        ["run", "-n", "2", "--evict", "evicted", "--", "shimmed"],
    )
    .env("PATH", &path)
    .run();
    out.expect_code(0);
    let lines = out.stderr_lines();
    let said = |wanted: &str| lines.iter().filter(|l| **l == wanted).count();
    let shim = format!(
        "coldtrace: shimmed is a sh script ({})",
        dir.join("bin/shimmed").display()
    );
    // A long path folds the line: read as prose.
    let prose = common::prose(&out.stderr);
    assert_eq!(prose.matches(&shim).count(), 1, "{}", out.describe());
    let evict = "coldtrace: --evict drops the files' cached pages for every process on the host";
    assert_eq!(said(evict), 1, "{}", out.describe());
    assert!(evict.chars().count() <= 80);
    // A path given is a file the user chose: nothing to say about it.
    let given = dir.join("bin/shimmed");
    let out = ct(
        dir.path(),
        ["run", "-n", "2", "--", given.to_str().unwrap()],
    )
    .run();
    out.expect_code(0);
    assert!(!out.stderr.contains("script"), "{}", out.describe());
}

#[test]
fn typos_get_the_nearest_name() {
    let dir = TempDir::new("typos");
    let out = ct(dir.path(), ["comapre", "a", "b"]).run();
    out.expect_code(125);
    assert!(
        out.stderr.contains("did you mean compare?")
            && out
                .stderr
                .contains("the subcommands are run, compare, report, boot, context"),
        "{}",
        out.describe()
    );
    let out = ct(dir.path(), ["run", "--warmpu", "2", "--", "true"]).run();
    out.expect_code(125);
    assert!(
        out.stderr.contains("did you mean --warmup?"),
        "{}",
        out.describe()
    );
}

/// `--metrics NAME` with a NAME that is no metric: exit 125, one line of at most 80 columns
/// that quotes NAME (shortened if it cannot fit) and says what to do; the help it points to
/// lists the names.
#[test]
fn an_unknown_metric_is_one_line_that_fits_80_columns_and_says_what_to_do() {
    let dir = TempDir::new("metric");
    let long = "a_metric_name_nobody_has_ever_heard_of_and_never_will";
    let cases: [(&[&str], &str, &str); 5] = [
        (
            &["run", "--metrics", "bogus", "--", "true"],
            "'bogus'",
            "see `coldtrace run --help`",
        ),
        (
            &["compare", "--metrics", "bogus", "true", "false"],
            "'bogus'",
            "see `coldtrace compare --help`",
        ),
        (
            &["run", "-n", "2", "--metrics", "wall,max_rs", "--", "true"],
            "'max_rs'",
            "did you mean max_rss?",
        ),
        (
            &["run", "--metrics", long, "--", "true"],
            "'a_metric_name",
            "see `coldtrace run --help`",
        ),
        (
            &["run", "--metrics", "instructions", "--", "true"],
            "instructions",
            "--events",
        ),
    ];
    for (args, names, what_to_do) in cases {
        let out = ct(dir.path(), args).run();
        out.expect_code(125);
        let lines = out.stderr_lines();
        assert!(
            lines.len() == 1 && lines[0].chars().count() <= 80,
            "one line of at most 80 columns{}",
            out.describe()
        );
        assert!(
            lines[0].starts_with("coldtrace: error: ")
                && lines[0].contains(names)
                && lines[0].contains(what_to_do),
            "{}",
            out.describe()
        );
        assert!(out.stdout.is_empty(), "{}", out.describe());
    }
    for sub in ["run", "compare"] {
        let help = ct(dir.path(), [sub, "--help"]).run();
        help.expect_code(0);
        assert!(
            ["wall", "max_rss", "major_faults", "runqueue_wait"]
                .iter()
                .all(|name| help.stdout.contains(name)),
            "`coldtrace {sub} --help` lists the metrics{}",
            help.describe()
        );
    }
}

#[test]
fn dash_n_with_a_name_explains_hyperfines_dash_n() {
    let dir = TempDir::new("dash-n");
    let out = ct(dir.path(), ["compare", "-n", "fast", "true", "true"]).run();
    out.expect_code(125);
    assert_eq!(
        out.stderr,
        "coldtrace: error: -n fast: coldtrace's -n is the number of runs (--runs, e.g. -n 10); \
         to name a command as hyperfine's -n NAME does, use --command-name fast\n",
        "{}",
        out.describe()
    );
    let out = ct(dir.path(), ["run", "-n", "my cmd", "--", "true"]).run();
    out.expect_code(125);
    assert!(
        out.stderr.contains("use --command-name 'my cmd'"),
        "{}",
        out.describe()
    );
}

#[test]
fn dash_o_null_creates_nothing_and_says_what_dash_o_is() {
    let dir = TempDir::new("o-null");
    let out = ct(
        dir.path(),
        ["run", "-n", "1", "-o", "null", "--", "echo", "hi"],
    )
    .run();
    out.expect_code(125);
    let ctx = out.describe();
    assert!(
        !dir.join("null").exists(),
        "a directory 'null' was created{ctx}"
    );
    assert!(out.stderr.contains("not GNU time's -o FILE"), "{ctx}");
    assert!(out.stderr.contains("--output null"), "{ctx}");
    assert!(out.stderr.contains("coldtrace time -o FILE"), "{ctx}");
    assert_eq!(out.stdout, "", "the command ran{ctx}");
}

/// The README's migration section, from its heading to the next `## `.
fn migration_section() -> String {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md"))
        .expect("README.md");
    let start = readme
        .find("## Coming from hyperfine 2.0 or GNU time 1.9")
        .expect("the migration section");
    let rest = &readme[start + 3..];
    rest[..rest.find("\n## ").unwrap_or(rest.len())].to_string()
}

#[test]
fn the_migration_table_names_every_foreign_flag_and_every_time_option() {
    use coldtrace::cli::table::{self, Sub};
    let section = migration_section();
    for foreign in table::foreign() {
        assert!(
            section.contains(foreign.flag),
            "{} is refused with a hint but missing from the README's migration table",
            foreign.flag
        );
    }
    for o in table::options_of(Sub::Time) {
        if o.long == "--help" || o.long == "--version" {
            continue;
        }
        let short = o.shorts.first().map(|c| format!("coldtrace time -{c}"));
        assert!(
            short.is_some_and(|s| section.contains(&s)),
            "`coldtrace time`'s {} is missing from the GNU time rows",
            o.long
        );
    }
    // hyperfine's flags that coldtrace takes under the same name.
    for flag in [
        "-w",
        "--min-runs",
        "--max-runs",
        "-r",
        "--setup",
        "--prepare",
        "--conclude",
        "--cleanup",
        "--parameter-scan",
        "--parameter-step-size",
        "--parameter-list",
        "--shell",
        "-N",
        "--ignore-failure",
        "--command-name",
    ] {
        let spec = table::find_long(Sub::Run, flag).or_else(|| {
            flag.strip_prefix('-')
                .and_then(|c| c.chars().next())
                .and_then(|c| table::find_short(Sub::Run, c))
        });
        assert!(spec.is_some(), "coldtrace run does not take {flag}");
        assert!(
            section.contains(flag),
            "{flag} is missing from the migration table"
        );
    }
    // Every export, hyperfine's and coldtrace's own, under every name it is taken by.
    for o in table::options_of(Sub::Run).filter(|o| o.long.starts_with("--export")) {
        for name in std::iter::once(&o.long).chain(o.aliases) {
            assert!(
                section.contains(&format!("`{name} FILE`"))
                    || section.contains(&format!("`{name}`")),
                "{name} is missing from the migration table"
            );
        }
    }
}

#[test]
fn every_dash_h_fits_one_80_by_24_screen_and_dash_dash_help_has_the_rest() {
    let dir = TempDir::new("dash-h");
    let subs = [
        "",
        "run",
        "compare",
        "report",
        "context",
        "time",
        "man",
        "completions",
    ];
    for sub in subs {
        let args: Vec<&str> = [sub, "-h"].into_iter().filter(|a| !a.is_empty()).collect();
        let out = ct(dir.path(), args).env("COLUMNS", "80").run();
        out.expect_code(0);
        let lines: Vec<&str> = out.stdout.lines().collect();
        assert!(
            lines.len() <= 24,
            "{sub} -h: {} lines{}",
            lines.len(),
            out.describe()
        );
        for line in &lines {
            assert!(line.chars().count() <= 80, "{sub} -h: {line:?}");
        }
    }
    // Wider or narrower, every help is wrapped between words to the width, never cut.
    for columns in ["160", "60"] {
        let out = ct(dir.path(), ["run", "--help"])
            .env("COLUMNS", columns)
            .run();
        out.expect_code(0);
        let width: usize = columns.parse::<usize>().unwrap().min(100);
        let words = out.stdout.split_whitespace().collect::<Vec<_>>().join(" ");
        for wanted in [
            "Exactly N counted runs of each command. Without it the count is chosen as hyperfine chooses it",
            "Evict (--evict) or drop caches (--drop-caches) before the first counted run only: one cold run, then a warm series.",
        ] {
            assert!(words.contains(wanted), "{wanted}{}", out.describe());
        }
        assert!(
            out.stdout.lines().all(|l| l.chars().count() <= width),
            "{}",
            out.describe()
        );
    }
    let top = ct(dir.path(), ["-h"]).run();
    for sub in &subs[1..] {
        assert!(
            top.stdout.contains(&format!("  {sub} ")),
            "{}",
            top.describe()
        );
    }
    let long = ct(dir.path(), ["--help"]).run();
    long.expect_code(0);
    for wanted in [
        "coldtrace run [OPTIONS] -- COMMAND",
        "Exit codes",
        "125 coldtrace's error",
    ] {
        assert!(long.stdout.contains(wanted), "{wanted}{}", long.describe());
    }
}

#[test]
fn the_title_names_where_the_output_went_with_or_without_out() {
    let dir = TempDir::new("sink-title");
    let cases: [(&[&str], &str); 7] = [
        (&["run", "-n", "2", "--", "true"], "stdout → /dev/null"),
        (
            &["run", "-n", "2", "-o", "a", "--", "true"],
            "stdout → /dev/null",
        ),
        (
            &["run", "-n", "2", "--output", "pipe", "--", "true"],
            "stdout → pipe",
        ),
        (
            &["run", "-n", "2", "--output", "f.txt", "--", "true"],
            "stdout → f.txt",
        ),
        (
            &["run", "-n", "2", "-o", "k", "--keep-output", "--", "true"],
            "output kept in runs/",
        ),
        (
            &["compare", "-n", "2", "true", "true"],
            "stdout → /dev/null",
        ),
        (
            &["compare", "-n", "2", "--output=pipe", "true", "true"],
            "stdout → pipe",
        ),
    ];
    for (args, sink) in cases {
        let out = ct(dir.path(), args.iter().copied()).run();
        out.expect_code(0);
        let title = out.stdout.lines().next().unwrap_or_default().to_string();
        assert!(
            title.ends_with(&format!(" · {sink}")),
            "{args:?}{}",
            out.describe()
        );
        assert!(
            !out.stderr.contains("discarded"),
            "{args:?}{}",
            out.describe()
        );
    }
}

#[test]
fn a_script_without_a_shebang_line_says_how_to_run_it() {
    let dir = TempDir::new("noexec");
    common::write_file(&dir.join("script"), b"echo hi\n", 0o755);
    for args in [
        &["run", "-n", "1", "--", "./script"][..],
        &["run", "-n", "3", "--", "./script"],
    ] {
        let out = ct(dir.path(), args).run();
        out.expect_code(126);
        assert!(
            out.stderr.contains("Exec format error")
                && out.stderr.contains(
                    "a script needs a #! line (#!/bin/sh), or a shell to run it: -S, or sh SCRIPT"
                ),
            "{}",
            out.describe()
        );
        assert_eq!(out.stderr.lines().count(), 1, "{}", out.describe());
    }
    // The hint works: through sh, it runs.
    let out = ct(dir.path(), ["run", "-n", "2", "-q", "-S", "--", "./script"]).run();
    out.expect_code(0);
}

#[test]
fn report_walks_past_a_commands_folder_that_is_no_comparison() {
    let dir = TempDir::new("report-commands");
    ct(
        dir.path(),
        ["run", "-q", "-n", "2", "-o", "work/batch", "--", "true"],
    )
    .run()
    .expect_code(0);
    // A source tree beside the batch, with its own `commands/` folder.
    std::fs::create_dir_all(dir.join("work/tool/src/commands/deploy")).unwrap();
    std::fs::write(dir.join("work/tool/src/commands/deploy/mod.rs"), "").unwrap();
    let out = ct(dir.path(), ["report", "work"]).run();
    out.expect_code(0);
    assert!(out.stdout.contains("work/batch"), "{}", out.describe());
    assert_eq!(
        out.stderr,
        "",
        "nothing skipped, nothing said{}",
        out.describe()
    );
}

/// `coldtrace time -o FILE` writes FILE as coldtrace writes every file it is told to: the old
/// contents stay whole until the report replaces them (a run that is killed truncates
/// nothing), and a symlink to nothing is refused before the run instead of followed.
#[test]
fn time_dash_o_never_truncates_first_nor_writes_through_a_dangling_symlink() {
    let dir = TempDir::new("time-o");
    std::fs::write(dir.join("report"), "the last report\n").unwrap();
    // The command reads the file while it runs: it still holds the last report.
    let out = ct(
        dir.path(),
        [
            "time",
            "-o",
            "report",
            "-f",
            "%x",
            "sh",
            "-c",
            "cat report > seen",
        ],
    )
    .run();
    out.expect_code(0);
    let seen = std::fs::read_to_string(dir.join("seen")).unwrap();
    assert_eq!(seen, "the last report\n", "{}", out.describe());
    let report = std::fs::read_to_string(dir.join("report")).unwrap();
    assert_eq!(report, "0\n", "{}", out.describe());
    // A symlink to nothing: one line, exit 125, the command not run, nothing made.
    std::os::unix::fs::symlink(dir.join("elsewhere"), dir.join("link")).unwrap();
    for append in [false, true] {
        let mut args = vec!["time", "-o", "link"];
        if append {
            args.push("-a");
        }
        args.extend(["touch", "ran"]);
        let out = ct(dir.path(), &args).run();
        out.expect_code(125);
        assert!(
            out.stderr_lines().len() == 1 && out.stderr.contains("link: is a symlink to nothing"),
            "{}",
            out.describe()
        );
        assert!(
            !dir.join("elsewhere").exists() && !dir.join("ran").exists(),
            "{}",
            out.describe()
        );
    }
    // -a appends to the file, through a symlink to it as every writer follows one.
    std::os::unix::fs::symlink("report", dir.join("to-report")).unwrap();
    let out = ct(
        dir.path(),
        ["time", "-a", "-o", "to-report", "-f", "[%x]", "true"],
    )
    .run();
    out.expect_code(0);
    let report = std::fs::read_to_string(dir.join("report")).unwrap();
    assert_eq!(report, "0\n[0]\n", "{}", out.describe());
}
