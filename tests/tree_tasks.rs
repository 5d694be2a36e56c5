//! The tasks of a run's tree where the tree is not traced (`COLDTRACE_TREE=off`, or a user
//! without privilege): counted from perf's task records, recorded in `tree.tasks` with
//! `tree.tasks_source`, and said in the first run's sentence. Trees of known shape: a shell
//! with two background children, a program with three threads, an exec chain; as root, the
//! tracepoints' count of the same trees must be the same.
#![forbid(unsafe_code)]

mod common;

use common::{ct, read_batch, read_records, Ct, TempDir};
use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

/// `threads`: the main thread starts two threads and waits for them: three tasks.
const THREADS: &str = r#"
#include <pthread.h>
#include <unistd.h>
static void *nap(void *arg) { usleep(2000); return arg; }
int main(void) {
    pthread_t t[2];
    for (int i = 0; i < 2; i++) if (pthread_create(&t[i], 0, nap, 0)) return 2;
    for (int i = 0; i < 2; i++) pthread_join(t[i], 0);
    return 0;
}
"#;

fn root() -> bool {
    rustix::process::geteuid().is_root()
}

/// A directory every user may write in (the batches run as `nobody` write their records).
fn open_dir(tag: &str) -> TempDir {
    let tmp = TempDir::new(tag);
    std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o777)).expect("chmod");
    tmp
}

/// The trees and the tasks each has.
fn shapes(tmp: &TempDir) -> Vec<(Vec<String>, u64)> {
    let threads = common::compile(tmp.path(), "threads", THREADS, &["-pthread"]);
    let sh = |script: &str| vec!["sh".to_string(), "-c".to_string(), script.to_string()];
    vec![
        (sh("true & true & wait"), 3),
        (vec![threads.display().to_string()], 3),
        (sh("exec env sh -c 'exec true'"), 1),
    ]
}

/// How a batch is run: traced where allowed, with `COLDTRACE_TREE=off`, or as `nobody`.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Mode {
    Default,
    Off,
    Nobody,
}

fn modes() -> Vec<Mode> {
    if root() {
        vec![Mode::Default, Mode::Off, Mode::Nobody]
    } else {
        println!("not root: the batches as another user are left out (setpriv needs root)");
        vec![Mode::Default, Mode::Off]
    }
}

fn with_mode(c: Ct, mode: Mode) -> Ct {
    match mode {
        Mode::Default => c,
        Mode::Off => c.env("COLDTRACE_TREE", "off"),
        Mode::Nobody => c.run_as_nobody(),
    }
}

#[test]
fn every_run_records_the_tasks_of_its_tree_traced_or_not() {
    let tmp = open_dir("tree-tasks");
    for (k, (argv, tasks)) in shapes(&tmp).into_iter().enumerate() {
        for mode in modes() {
            let out_dir = tmp.join(format!("b{k}-{mode:?}"));
            let mut args: Vec<String> = ["run", "-n", "3", "-o"]
                .iter()
                .map(|s| s.to_string())
                .collect();
            args.push(out_dir.display().to_string());
            args.push("--".into());
            args.extend(argv.iter().cloned());
            let out = with_mode(ct(tmp.path(), &args), mode).run_within(Duration::from_secs(60));
            out.expect_code(0);
            let traced = mode == Mode::Default && root();
            let source = if traced {
                "sched tracepoints"
            } else {
                "perf task records"
            };
            for r in read_records(&out_dir) {
                let t = &r["tree"];
                let what = format!("{argv:?} ({mode:?}): {t}");
                assert_eq!(r["schema"], coldtrace::record::RUN_SCHEMA, "{what}");
                assert_eq!(t["tasks"], tasks, "{what}");
                assert_eq!(t["tasks_source"], source, "{what}");
                if !traced {
                    assert!(t["source"].is_null() && t["on_cpu_ns"].is_null(), "{what}");
                }
            }
        }
    }
}

#[test]
fn the_first_runs_sentence_says_how_many_tasks_the_tree_ran() {
    let tmp = open_dir("tree-tasks-said");
    let program = common::compile(tmp.path(), "spin-first", common::SPIN_FIRST, &[]);
    for mode in modes()
        .into_iter()
        .filter(|&m| m != Mode::Default || !root())
    {
        let marker = tmp.join(format!("marker-{mode:?}"));
        std::fs::write(&marker, b"first").unwrap();
        std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
        let out_dir = tmp.join(format!("said-{mode:?}"));
        let args: Vec<String> = vec![
            "run".into(),
            "-n".into(),
            "10".into(),
            "-o".into(),
            out_dir.display().to_string(),
            "--".into(),
            "sh".into(),
            "-c".into(),
            "\"$0\" \"$1\" 300; true".into(),
            program.display().to_string(),
            marker.display().to_string(),
        ];
        let c = ct(tmp.path(), &args)
            .ahead_of_other_sessions()
            .env("COLUMNS", "80");
        let out = with_mode(c, mode).run_within(Duration::from_secs(120));
        out.expect_code(0);
        let p = &read_batch(&out_dir)["first_penalty"];
        let what = format!("{mode:?}: {p:#}\n{}", out.describe());
        assert_eq!(p["significant"], true, "{what}");
        assert_eq!(p["basis"], "main thread", "{what}");
        assert_eq!(p["tree"]["tasks"], 2, "{what}");
        let why = if mode == Mode::Off {
            "COLDTRACE_TREE=off"
        } else {
            "its states need root or CAP_PERFMON"
        };
        let shown = out.shown();
        let unfolded = shown.replace("\n    ", " ");
        let said = unfolded
            .lines()
            .find(|l| l.trim_start().starts_with("first run"))
            .unwrap_or_else(|| panic!("no sentence: {what}"));
        println!("{said}");
        assert!(
            said.contains(&format!(
                "; main thread only (the tree ran 2 tasks; {why}): +"
            )),
            "{said}\n{what}"
        );
        for line in shown.lines() {
            assert!(line.chars().count() <= 80, "wider than 80: {line:?}");
        }
    }
}

/// Where the spawner cannot be started (here a file-size limit below its size refuses its
/// memfd), coldtrace clones the runs itself, and the task records it opened on its own thread
/// count them.
#[test]
fn runs_coldtrace_clones_itself_are_counted_too() {
    let tmp = open_dir("tree-tasks-in-process");
    for mode in modes().into_iter().filter(|&m| m != Mode::Default) {
        let args = [
            "run",
            "-n",
            "1",
            "--json",
            "--",
            "sh",
            "-c",
            "true & true & wait",
        ];
        let c = ct(tmp.path(), args).under_file_size_limit(8);
        let out = with_mode(c, mode).run();
        out.expect_code(0);
        let r = out.json();
        let what = format!("{mode:?}: {r}");
        assert_eq!(r["runner"]["spawned_by"], "coldtrace", "{what}");
        assert_eq!(r["tree"]["tasks"], 3, "{what}");
        assert_eq!(r["tree"]["tasks_source"], "perf task records", "{what}");
    }
}
