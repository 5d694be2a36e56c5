//! `coldtrace boot` on this machine, without rebooting it: arming into a state and unit
//! directory of the test's own, `boot run` on a state made to look as if the machine had
//! rebooted since (another boot ID where the state names this one), the guards that disarm
//! (a failed or missing command, a previous boot whose batch never ended, a damaged state),
//! and `boot disarm` from every partial state. The real boots are `tests/boot_vm.rs`'s.
#![forbid(unsafe_code)]

mod common;

use common::{ct, read_records, Output, TempDir};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// The state, unit and results directories of one test.
struct Box_ {
    tmp: TempDir,
}

impl Box_ {
    fn new(tag: &str) -> Box_ {
        Box_ {
            tmp: TempDir::new(tag),
        }
    }
    fn places(&self) -> Vec<String> {
        let p = |n: &str| self.tmp.join(n).display().to_string();
        vec![
            "--state-dir".into(),
            p("state"),
            "--unit-dir".into(),
            p("units"),
        ]
    }
    fn boot(&self, action: &str, rest: &[&str]) -> Output {
        let mut args = vec!["boot".to_string(), action.into()];
        args.extend(self.places());
        args.extend(rest.iter().map(|s| s.to_string()));
        ct(self.tmp.path(), args).run()
    }
    fn state_path(&self) -> PathBuf {
        self.tmp.join("state/state.json")
    }
    fn state(&self) -> Value {
        serde_json::from_str(&std::fs::read_to_string(self.state_path()).unwrap()).unwrap()
    }
    /// Makes the state look as if it was armed, and its boots run, on other boots.
    fn as_if_rebooted(&self) {
        let mut s = self.state();
        s["armed_boot_id"] = "00000000-0000-0000-0000-0000000000a0".into();
        for r in s["ran"].as_array_mut().unwrap() {
            r["boot_id"] = "00000000-0000-0000-0000-0000000000b0".into();
        }
        std::fs::write(self.state_path(), s.to_string()).unwrap();
    }
    fn unit(&self) -> PathBuf {
        self.tmp.join("units/coldtrace-boot.service")
    }
    fn link(&self) -> PathBuf {
        self.tmp
            .join("units/multi-user.target.wants/coldtrace-boot.service")
    }
    fn events(&self) -> Vec<Value> {
        std::fs::read_to_string(self.tmp.join("res/boots.jsonl"))
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }
    fn nothing_left(&self) {
        assert!(
            !self.tmp.join("state").exists(),
            "the state directory is gone"
        );
        assert!(!self.unit().exists() && std::fs::symlink_metadata(self.link()).is_err());
    }
}

fn this_boot() -> String {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .unwrap()
        .trim()
        .to_string()
}

/// Arms two boots of `true` and checks what arming left: the unit, its link, the state and its
/// modes; arming again is refused; on the arming boot nothing runs.
fn arm_two_boots(b: &Box_) {
    let out = b.boot(
        "arm",
        &["--boots", "2", "-o", "res", "-n", "3", "--", "true"],
    );
    out.expect_code(0);
    assert!(
        out.stdout
            .contains("armed: true at each of the next 2 boots"),
        "{}",
        out.describe()
    );
    let unit = std::fs::read_to_string(b.unit()).unwrap();
    assert!(unit.contains(" boot run --state-dir "), "{unit}");
    assert_eq!(std::fs::read_link(b.link()).unwrap(), b.unit());
    let state = b.state();
    assert_eq!(
        state["plan"]["run_options"],
        serde_json::json!(["--runs", "3"])
    );
    assert_eq!(state["armed_boot_id"], this_boot().as_str());
    use std::os::unix::fs::PermissionsExt;
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(
        (mode(&b.state_path()), mode(&b.tmp.join("state"))),
        (0o600, 0o700)
    );
    // Arming again is refused while armed.
    b.boot("arm", &["-o", "res", "--", "true"]).expect_code(125);
    // On the arming boot nothing runs.
    let out = b.boot("run", &[]);
    out.expect_code(0);
    assert!(
        out.stdout.contains("armed on this boot"),
        "{}",
        out.describe()
    );
    assert_eq!(b.state()["boots_started"], 0);
}

#[test]
fn armed_boots_run_one_batch_each_then_disarm_with_a_record_of_each() {
    let b = Box_::new("boot-arm");
    arm_two_boots(&b);

    b.as_if_rebooted();
    let out = b.boot("run", &[]);
    out.expect_code(0);
    assert!(
        out.stdout.contains("boot 1 of 2 done"),
        "{}",
        out.describe()
    );
    let first = b.tmp.join(format!("res/boot-01-{}", this_boot()));
    assert_eq!(read_records(&first).len(), 3);
    let facts: Value =
        serde_json::from_str(&std::fs::read_to_string(first.join("boot.json")).unwrap()).unwrap();
    assert_eq!(facts["boot"], 1);
    assert!(facts["batch"]["before"]["page_cache_kib"]
        .as_u64()
        .is_some());
    assert_eq!(facts["program_files"][0]["role"], "executable");
    let s = b.state();
    assert_eq!(
        (s["boots_started"].as_u64(), s["running"].is_null()),
        (Some(1), true)
    );
    // The same boot does not run twice.
    b.boot("run", &[]).expect_code(125);

    b.as_if_rebooted();
    let out = b.boot("run", &[]);
    out.expect_code(0);
    assert!(
        out.stdout.contains("disarmed: all 2 boots have run"),
        "{}",
        out.describe()
    );
    b.nothing_left();
    let kinds: Vec<Value> = b.events().iter().map(|e| e["event"].clone()).collect();
    assert_eq!(
        kinds,
        ["armed", "started", "ended", "started", "ended", "disarmed"].map(Value::from)
    );
    report_shows_the_boots(&b);
    // Not armed: boot run says so and does nothing.
    let out = b.boot("run", &[]);
    out.expect_code(0);
    assert!(out.stdout.contains("not armed"), "{}", out.describe());
}

/// `report` on the results of two boots: side by side, with the interval and why it disarmed.
fn report_shows_the_boots(b: &Box_) {
    let out = ct(b.tmp.path(), ["report", "res"])
        .env("COLUMNS", "80")
        .run();
    out.expect_code(0);
    assert!(
        out.stdout.contains("boots of res: 2 boots of 2 armed"),
        "{}",
        out.stdout
    );
    assert!(out.stdout.contains("95 % interval"), "{}", out.stdout);
    assert!(
        out.stdout.contains("disarmed: all 2 boots have run"),
        "{}",
        out.stdout
    );
    let json = ct(b.tmp.path(), ["report", "--json", "res"]).run().json();
    let boots = &json["boots"][0];
    assert_eq!(boots["rows"].as_array().unwrap().len(), 2);
    assert_eq!(boots["penalty"]["boots"], 2);
    // The picture has the boots' panel, and is well-formed XML.
    ct(
        b.tmp.path(),
        [
            "report",
            "--svg",
            "boots.svg",
            "--html",
            "boots.html",
            "res",
        ],
    )
    .run()
    .expect_code(0);
    let svg = std::fs::read_to_string(b.tmp.join("boots.svg")).unwrap();
    roxmltree::Document::parse(&svg).expect("well-formed SVG");
    assert!(svg.contains("boots of res: the first run after each boot"));
    let html = std::fs::read_to_string(b.tmp.join("boots.html")).unwrap();
    assert!(html.contains("boots of res: the first run after each boot"));
}

#[test]
fn a_failed_command_disarms_with_a_record_of_why_and_never_reboots() {
    let b = Box_::new("boot-fail");
    let marker = b.tmp.join("rebooted");
    let reboot = format!("--reboot=touch {}", marker.display());
    let arm = [
        "--boots",
        "3",
        reboot.as_str(),
        "-o",
        "res",
        "-n",
        "2",
        "--",
    ];
    let mut args = arm.to_vec();
    args.extend(["sh", "-c", "exit 3"]);
    b.boot("arm", &args).expect_code(0);
    b.as_if_rebooted();
    let out = b.boot("run", &[]);
    out.expect_code(1);
    assert!(
        out.stdout
            .contains("boot 1's batch failed (coldtrace run exited 1"),
        "{}",
        out.describe()
    );
    assert!(!marker.exists(), "no reboot after a failure");
    b.nothing_left();
    let events = b.events();
    let last = events.last().unwrap();
    assert_eq!(last["event"], "disarmed");
    assert!(last["why"].as_str().unwrap().contains("failed"), "{last}");

    // A command gone by the next boot: exit 127, disarmed, no reboot.
    let b = Box_::new("boot-missing");
    let script = b.tmp.join("workload.sh");
    common::write_file(&script, b"#!/bin/sh\nexit 0\n", 0o755);
    let mut args = arm.to_vec();
    let shown = script.display().to_string();
    args.push(&shown);
    b.boot("arm", &args).expect_code(0);
    std::fs::remove_file(&script).unwrap();
    b.as_if_rebooted();
    let out = b.boot("run", &[]);
    out.expect_code(1);
    assert!(
        out.stdout.contains("exited 127: the command was not found"),
        "{}",
        out.describe()
    );
    assert!(!marker.exists());
    b.nothing_left();
}

#[test]
fn a_successful_boot_reboots_only_when_asked_and_while_boots_remain() {
    let b = Box_::new("boot-reboot");
    let marker = b.tmp.join("rebooted");
    let reboot = format!("--reboot=echo x >> {}", marker.display());
    b.boot(
        "arm",
        &[
            "--boots", "2", &reboot, "-o", "res", "-n", "2", "--", "true",
        ],
    )
    .expect_code(0);
    b.as_if_rebooted();
    let out = b.boot("run", &[]);
    out.expect_code(0);
    assert!(
        out.stdout.contains("rebooting: /bin/sh -c"),
        "{}",
        out.describe()
    );
    assert_eq!(std::fs::read_to_string(&marker).unwrap(), "x\n");
    b.as_if_rebooted();
    b.boot("run", &[]).expect_code(0);
    assert_eq!(
        std::fs::read_to_string(&marker).unwrap(),
        "x\n",
        "no reboot after the last boot"
    );
}

#[test]
fn a_boot_whose_batch_never_ended_disarms_instead_of_running_again() {
    let b = Box_::new("boot-killed");
    b.boot(
        "arm",
        &[
            "--boots", "3", "--reboot", "-o", "res", "-n", "2", "--", "true",
        ],
    )
    .expect_code(0);
    // What a machine killed mid-batch leaves: boot 1 marked running.
    let mut s = b.state();
    s["armed_boot_id"] = "00000000-0000-0000-0000-0000000000a0".into();
    s["boots_started"] = 1.into();
    s["running"] = serde_json::json!({
        "boot": 1, "boot_id": "00000000-0000-0000-0000-0000000000b1",
        "started_at": "2026-12-06T01:00:00.000Z", "uptime_s": 9.5,
        "dir": b.tmp.join("res/boot-01-x").display().to_string()
    });
    std::fs::write(b.state_path(), s.to_string()).unwrap();
    let status = b.boot("status", &[]);
    assert!(
        status
            .stdout
            .contains("started 2026-12-06T01:00:00.000Z and not ended — it never will"),
        "{}",
        status.describe()
    );
    let out = b.boot("run", &[]);
    out.expect_code(1);
    assert!(out
        .stdout
        .contains("boot 1 (boot ID 00000000-0000-0000-0000-0000000000b1)"));
    assert!(out.stdout.contains("never ended it"), "{}", out.describe());
    b.nothing_left();
    assert!(!b.tmp.join(format!("res/boot-02-{}", this_boot())).exists());
}

#[test]
fn disarm_removes_everything_from_any_partial_state_and_says_what() {
    let arm = |b: &Box_| {
        b.boot("arm", &["-o", "res", "-n", "2", "--", "true"])
            .expect_code(0);
    };
    // Unit removed by hand: status says partial; disarm removes the state.
    let b = Box_::new("boot-partial-unit");
    arm(&b);
    // Without --unit-dir, status looks where the state says the unit was installed.
    let state = b.tmp.join("state").display().to_string();
    let status = ct(b.tmp.path(), ["boot", "status", "--state-dir", &state]).run();
    status.expect_code(0);
    let shown = format!("present: {}", b.unit().display());
    assert!(status.stdout.contains(&shown), "{}", status.describe());
    std::fs::remove_file(b.unit()).unwrap();
    let status = b.boot("status", &[]);
    status.expect_code(1);
    assert!(
        status.stdout.contains("a partial state"),
        "{}",
        status.describe()
    );
    let out = b.boot("disarm", &[]);
    out.expect_code(0);
    assert!(
        out.stdout.contains("removed ") && out.stdout.contains("state.json"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("multi-user.target.wants"),
        "{}",
        out.stdout
    );
    b.nothing_left();
    // State removed by hand: the unit and its link go.
    let b = Box_::new("boot-partial-state");
    arm(&b);
    std::fs::remove_file(b.state_path()).unwrap();
    let out = b.boot("disarm", &[]);
    assert!(
        out.stdout.contains("coldtrace-boot.service"),
        "{}",
        out.stdout
    );
    b.nothing_left();
    // A damaged state: disarm removes it; boot run disarms too.
    for action in ["disarm", "run"] {
        let b = Box_::new("boot-damaged");
        arm(&b);
        std::fs::write(b.state_path(), b"{\"schema\": \"coldtrace.boot-state/1\", ").unwrap();
        std::fs::write(b.tmp.join("state/.state.json.99.tmp"), b"half").unwrap();
        let out = b.boot(action, &[]);
        assert!(
            out.stdout.contains("damaged") && out.stdout.contains(".tmp"),
            "{}",
            out.stdout
        );
        b.nothing_left();
    }
    // Nothing armed: disarm says so, and succeeds.
    let b = Box_::new("boot-nothing");
    let out = b.boot("disarm", &[]);
    out.expect_code(0);
    assert!(
        out.stdout.starts_with("nothing to remove: not armed"),
        "{}",
        out.stdout
    );
}

#[test]
fn a_state_another_user_could_write_is_refused() {
    let b = Box_::new("boot-hostile");
    std::fs::create_dir(b.tmp.join("elsewhere")).unwrap();
    std::os::unix::fs::symlink(b.tmp.join("elsewhere"), b.tmp.join("state")).unwrap();
    let out = b.boot("arm", &["-o", "res", "--", "true"]);
    out.expect_code(125);
    assert!(
        out.stderr
            .contains("state: a symlink; the state directory must be reached without one"),
        "{}",
        out.describe()
    );
    std::fs::remove_file(b.tmp.join("state")).unwrap();
    std::fs::create_dir(b.tmp.join("state")).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(b.tmp.join("state"), std::fs::Permissions::from_mode(0o777)).unwrap();
    let out = b.boot("arm", &["-o", "res", "--", "true"]);
    out.expect_code(125);
    assert!(
        out.stderr.contains("writable by its group or others"),
        "{}",
        out.describe()
    );
}

#[test]
fn arming_checks_the_run_as_run_would_and_names_boot_only_options() {
    let b = Box_::new("boot-checks");
    let out = b.boot("arm", &["-o", "res", "-n", "0", "--", "true"]);
    out.expect_code(125);
    assert!(
        out.stderr.contains("-n/--runs: expected a whole number"),
        "{}",
        out.describe()
    );
    let out = b.boot("arm", &["-o", "res", "--", "no-such-command-anywhere"]);
    out.expect_code(125);
    assert!(
        out.stderr.contains("no-such-command-anywhere: "),
        "{}",
        out.describe()
    );
    let out = b.boot("arm", &["-o", "res", "--boots", "0", "--", "true"]);
    assert!(out
        .stderr
        .contains("--boots: expected a whole number from 1 to 1000"));
    let out = b.boot("status", &["--boots", "2"]);
    out.expect_code(125);
    assert!(out
        .stderr
        .contains("--boots is an option of `coldtrace boot arm`"));
    let out = b.boot(
        "arm",
        &[
            "--dry-run",
            "-o",
            "res",
            "--after",
            "nfs.mount",
            "--",
            "true",
        ],
    );
    out.expect_code(0);
    assert!(out
        .stdout
        .contains("After=local-fs.target remote-fs.target nfs.mount\n"));
    assert!(
        !b.tmp.join("state").exists() && !b.unit().exists(),
        "a dry run writes nothing"
    );
}

#[test]
fn arming_warns_when_another_user_could_replace_what_runs_at_boot() {
    use std::os::unix::fs::PermissionsExt;
    let b = Box_::new("boot-loose");
    let loose = b.tmp.join("loose");
    std::fs::create_dir(&loose).unwrap();
    std::fs::copy(env!("CARGO_BIN_EXE_coldtrace"), loose.join("coldtrace")).unwrap();
    std::fs::set_permissions(&loose, std::fs::Permissions::from_mode(0o777)).unwrap();
    let out = std::process::Command::new(loose.join("coldtrace"))
        .current_dir(b.tmp.path())
        .args(["boot", "arm"])
        .args(b.places())
        .args(["-o", "res", "--", "true"])
        .env("COLDTRACE_STATE_DIR", "")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{out:?}");
    assert!(
        text.contains("warning: ") && text.contains("can be changed by another user"),
        "{text}"
    );
    // Installed where only its user writes, no warning.
    let b = Box_::new("boot-tight");
    let out = b.boot("arm", &["-o", "res", "--", "true"]);
    assert!(!out.stdout.contains("warning: "), "{}", out.stdout);
}

#[test]
fn a_change_of_the_command_between_boots_is_flagged_by_report() {
    let b = Box_::new("boot-change");
    let script = b.tmp.join("workload.sh");
    common::write_file(&script, b"#!/bin/sh\nexit 0\n", 0o755);
    let shown = script.display().to_string();
    b.boot(
        "arm",
        &["--boots", "2", "-o", "res", "-n", "3", "--", &shown],
    )
    .expect_code(0);
    b.as_if_rebooted();
    b.boot("run", &[]).expect_code(0);
    // Replaced between the boots: a new file (another inode), longer.
    std::fs::remove_file(&script).unwrap();
    common::write_file(&script, b"#!/bin/sh\n# updated\nexit 0\n", 0o755);
    b.as_if_rebooted();
    let out = b.boot("run", &[]);
    assert!(
        out.stdout.contains("all 2 boots have run"),
        "{}",
        out.describe()
    );
    let report = ct(b.tmp.path(), ["report", "res"])
        .env("COLUMNS", "100")
        .run();
    // As a person reads it: the folded lines joined.
    let text = report
        .stdout
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    // The freed inode may be given to the new file: its size and mtime differ whatever.
    let said = format!("changed before boot 2: {shown} changed (");
    let after = text
        .split(&said)
        .nth(1)
        .unwrap_or_else(|| panic!("{}", report.stdout));
    let what = after.split(')').next().unwrap();
    assert!(what.contains("size") && what.contains("mtime"), "{what}");
}
