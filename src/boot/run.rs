//! `coldtrace boot run`, what the unit (or an init script) calls at each boot: the guards,
//! then this boot's batch — a `coldtrace run` process with the armed options, environment and
//! working directory, into `DIR/boot-NN-<boot id>/` — then the `--control` batch, `boot.json`
//! beside the batch, and what comes next: disarm after the last boot or a failure, a reboot
//! when asked and boots remain.
//!
//! The guards, in order: the lock (one `boot run` at a time); the state (a damaged one
//! disarms); the kernel command line (`coldtrace.disarm` disarms); the previous boot (a batch
//! that started and never ended disarms); the user (the one who armed); the arming boot (its
//! batch waits for the next boot). Then the count of boots started is incremented, and the
//! boot marked as running, durably, before the batch starts.
#![forbid(unsafe_code)]

use crate::boot::disarm::disarm_because;
use crate::boot::spawn::{self, Ended, Spawn};
use crate::boot::store::{Found, StateDir};
use crate::boot::{events, facts, unit, Places, Said};
use crate::record::boot::{
    boot_dir_name, control_dir_name, BatchEnd, BootFacts, BootPlan, BootState, FileStamp, Ran,
    Running, FACTS_SCHEMA,
};
use std::path::Path;

fn said(lines: Vec<String>, exit_code: u8) -> Said {
    Said {
        text: lines.join("\n") + "\n",
        exit_code,
    }
}

/// `coldtrace boot run`.
pub fn boot_run(places: &Places) -> Said {
    let Some(boot_id) = crate::measure::context::read_boot_id() else {
        return said(
            vec!["boot run: the boot ID is unreadable (no /proc?)".into()],
            125,
        );
    };
    let dir = match StateDir::open(&places.state_dir) {
        Ok(Some(dir)) => dir,
        Ok(None) => return not_armed(places),
        Err(e) => return said(vec![format!("boot run: {e}")], 125),
    };
    let _lock = match dir.lock() {
        Ok(Some(lock)) => lock,
        Ok(None) => {
            return said(
                vec!["boot run: another coldtrace boot run holds the lock; nothing done".into()],
                125,
            )
        }
        Err(e) => return said(vec![format!("boot run: {e}")], 125),
    };
    let state = match dir.read() {
        Found::Missing => return not_armed(places),
        Found::Damaged(why) => {
            let why = format!("{} is damaged ({why})", dir.shown("state.json"));
            return said(disarm_because(places, None, &why), 1);
        }
        Found::Armed(state) => *state,
    };
    let cmdline = facts::kernel_cmdline().unwrap_or_default();
    if let Some(why) = guard(&state, &cmdline) {
        return said(disarm_because(places, Some(&state), &why), 1);
    }
    if state.armed_boot_id.as_deref() == Some(&boot_id) {
        return said(
            vec!["boot run: armed on this boot; its batches start at the next boot".into()],
            0,
        );
    }
    if state.ran.last().is_some_and(|r| r.boot_id == boot_id) {
        return said(
            vec!["boot run: this boot has run its batch already; nothing done".into()],
            125,
        );
    }
    run_this_boot(places, &dir, state, &boot_id, cmdline)
}

/// Nothing armed: a unit left behind (its state removed by hand) removes itself.
fn not_armed(places: &Places) -> Said {
    let done = crate::boot::disarm::remove_everything(places, None);
    let mut lines = vec![format!(
        "boot run: not armed (no state in {}); nothing to run",
        places.state_dir.display()
    )];
    lines.extend(done.removed.iter().map(|p| format!("  removed {p}")));
    lines.extend(done.failed.iter().map(|f| format!("  NOT removed: {f}")));
    said(lines, 0)
}

/// Why this boot must disarm instead of running, if it must.
pub fn guard(state: &BootState, cmdline: &str) -> Option<String> {
    if facts::asks_to_disarm(cmdline) {
        return Some(format!(
            "the kernel command line holds {}",
            facts::DISARM_WORD
        ));
    }
    if let Some(r) = &state.running {
        return Some(format!(
            "boot {} (boot ID {}) started its batch at {} and never ended it — the machine \
             stopped, rebooted or was killed mid-batch; disarmed instead of running again",
            r.boot, r.boot_id, r.started_at
        ));
    }
    let me = rustix::process::geteuid().as_raw();
    if state.plan.uid != me {
        return Some(format!(
            "armed by uid {}, run by uid {me}: refused",
            state.plan.uid
        ));
    }
    (state.boots_left() == 0).then(|| format!("all {} boots have run", state.plan.boots))
}

/// Marks this boot as running (durably), runs its batches and says what comes next.
fn run_this_boot(
    places: &Places,
    dir: &StateDir,
    mut state: BootState,
    boot_id: &str,
    cmdline: String,
) -> Said {
    let boot = state.boots_started + 1;
    let out_dir = Path::new(&state.plan.out_dir).to_path_buf();
    let batch_dir = out_dir.join(boot_dir_name(boot, boot_id));
    let started_at = crate::measure::clock::rfc3339_utc_now();
    state.boots_started = boot;
    state.running = Some(Running {
        boot,
        boot_id: boot_id.to_string(),
        started_at: started_at.clone(),
        uptime_s: crate::measure::context::read_uptime_s(),
        dir: batch_dir.display().to_string(),
    });
    if let Err(e) = dir.write(&state) {
        let why = format!("the state cannot be updated before the batch ({e})");
        return said(disarm_because(places, Some(&state), &why), 1);
    }
    let mut started = events::now("started");
    started.boot = Some(boot);
    started.dir = Some(batch_dir.display().to_string());
    let _ = events::append(&out_dir, &started);
    eprintln!(
        "coldtrace boot: boot {boot} of {}: the batch starts → {}",
        state.plan.boots,
        batch_dir.display()
    );
    let batch = batch(&state.plan, &batch_dir);
    let control = match (&batch.failure, state.plan.control_after_s) {
        (None, Some(after_s)) => {
            std::thread::sleep(std::time::Duration::from_secs_f64(after_s));
            Some(self::batch(
                &state.plan,
                &out_dir.join(control_dir_name(boot, boot_id)),
            ))
        }
        _ => None,
    };
    let (program_files, libraries_note) = program_files(&state.plan);
    let facts = BootFacts {
        schema: FACTS_SCHEMA,
        boot,
        boots: state.plan.boots,
        boot_id: boot_id.to_string(),
        kernel_release: crate::measure::context::SystemContext::read().kernel_release,
        kernel_cmdline: Some(cmdline),
        started_at,
        batch,
        control,
        program_files,
        libraries_note,
    };
    write_facts(&batch_dir, &facts);
    next(places, dir, state, &facts)
}

/// Runs one batch into `dir`, with the machine read before and after.
fn batch(plan: &BootPlan, dir: &Path) -> BatchEnd {
    let before = facts::instant();
    let mut argv = vec![plan.coldtrace.clone(), "run".into()];
    argv.extend(plan.run_options.iter().cloned());
    argv.extend(["-o".to_string(), dir.display().to_string(), "--".into()]);
    argv.extend(plan.argv.iter().cloned());
    let ended = spawn::run(&Spawn {
        path: &plan.coldtrace,
        argv: &argv,
        env: &plan.env,
        cwd: Some(&plan.cwd),
        stdout: None,
    });
    let after = facts::instant();
    let failure = match &ended {
        Ended::Code(0) => None,
        Ended::Code(1) => Some("coldtrace run exited 1: a run failed or was rejected".into()),
        Ended::Code(125) => Some("coldtrace run exited 125: its own error (see above)".into()),
        Ended::Code(126) => Some("coldtrace run exited 126: the command is not executable".into()),
        Ended::Code(127) => Some("coldtrace run exited 127: the command was not found".into()),
        Ended::Code(c) => Some(format!("coldtrace run exited {c}")),
        Ended::Not(why) => Some(format!("coldtrace run did not exit: {why}")),
    };
    BatchEnd {
        dir: dir.display().to_string(),
        exit_code: ended.code(),
        failure,
        before,
        after,
    }
}

fn write_facts(batch_dir: &Path, facts: &BootFacts) {
    if !batch_dir.is_dir() {
        return;
    }
    let text = serde_json::to_string_pretty(facts).unwrap_or_default() + "\n";
    if let Err(e) = std::fs::write(batch_dir.join("boot.json"), text) {
        eprintln!(
            "coldtrace boot: cannot write {}/boot.json: {e}",
            batch_dir.display()
        );
    }
}

/// After the batches: the state updated, then disarm (a failure, the last boot) or go on
/// (with a reboot when asked).
fn next(places: &Places, dir: &StateDir, mut state: BootState, facts: &BootFacts) -> Said {
    let failure = facts
        .batch
        .failure
        .clone()
        .or_else(|| facts.control.as_ref().and_then(|c| c.failure.clone()));
    let boot = facts.boot;
    state.running = None;
    state.ran.push(Ran {
        boot,
        boot_id: facts.boot_id.clone(),
        dir: facts.batch.dir.clone(),
        exit_code: facts.batch.exit_code,
        control_exit_code: facts.control.as_ref().and_then(|c| c.exit_code),
        ended_at: crate::measure::clock::rfc3339_utc_now(),
    });
    let mut ended = events::now("ended");
    ended.boot = Some(boot);
    ended.dir = Some(facts.batch.dir.clone());
    ended.exit_code = facts.batch.exit_code;
    ended.why.clone_from(&failure);
    let _ = events::append(Path::new(&state.plan.out_dir), &ended);
    if let Some(failure) = failure {
        let why = format!("boot {boot}'s batch failed ({failure}); no reboot");
        return said(disarm_because(places, Some(&state), &why), 1);
    }
    if state.boots_left() == 0 {
        let why = format!("all {} boots have run", state.plan.boots);
        return said(disarm_because(places, Some(&state), &why), 0);
    }
    if let Err(e) = dir.write(&state) {
        let why = format!("the state cannot be updated after boot {boot} ({e}); no reboot");
        return said(disarm_because(places, Some(&state), &why), 1);
    }
    let mut lines = vec![format!(
        "boot {boot} of {} done: {}; {} boot{} left",
        state.plan.boots,
        facts.batch.dir,
        state.boots_left(),
        if state.boots_left() == 1 { "" } else { "s" }
    )];
    if state.plan.reboot {
        // Said before the reboot, which leaves no time to say anything after it.
        eprintln!("coldtrace boot: {}; rebooting", lines[0]);
        lines.push(reboot(&state.plan, boot));
    }
    said(lines, 0)
}

/// Reboots as asked: `--reboot=COMMAND` through `/bin/sh -c`, else `systemctl reboot` under
/// systemd, else `reboot`. What it did, in a line.
fn reboot(plan: &BootPlan, boot: u64) -> String {
    let argv: Vec<String> = match (&plan.reboot_command, unit::systemd_runs()) {
        (Some(cmd), _) => vec!["/bin/sh".into(), "-c".into(), cmd.clone()],
        (None, true) => vec!["systemctl".into(), "reboot".into()],
        (None, false) => vec!["reboot".into()],
    };
    let mut event = events::now("rebooting");
    event.boot = Some(boot);
    event.why = Some(crate::text::quote(&argv));
    let _ = events::append(Path::new(&plan.out_dir), &event);
    let path_var = plan
        .env
        .iter()
        .find_map(|e| e.strip_prefix("PATH="))
        .unwrap_or("/usr/sbin:/usr/bin:/sbin:/bin");
    let path = match coldtrace_syscalls::find_program(argv[0].as_bytes(), Some(path_var.as_bytes()))
    {
        Ok(p) => p.to_string_lossy().into_owned(),
        Err(e) => return format!("cannot reboot: {} not found ({e}); still armed", argv[0]),
    };
    let ended = spawn::run(&Spawn {
        path: &path,
        argv: &argv,
        env: &plan.env,
        cwd: Some("/"),
        stdout: None,
    });
    match ended {
        Ended::Code(0) => format!("rebooting: {}", crate::text::quote(&argv)),
        other => format!(
            "the reboot command {} failed ({other:?}); still armed for the next boot",
            crate::text::quote(&argv)
        ),
    }
}

/// The stamps of the files the command runs from: its executable, its `#!` interpreter, and
/// the libraries the dynamic loader would map (`LOADER --list`); why the libraries are not
/// there when they are not.
fn program_files(plan: &BootPlan) -> (Vec<FileStamp>, Option<String>) {
    let path_var = plan.env.iter().find_map(|e| e.strip_prefix("PATH="));
    let first = &plan.argv[0];
    let exe = if first.contains('/') {
        Path::new(&plan.cwd).join(first)
    } else {
        match coldtrace_syscalls::find_program(first.as_bytes(), path_var.map(str::as_bytes)) {
            Ok(p) => p.to_string_lossy().into_owned().into(),
            Err(e) => return (Vec::new(), Some(format!("{first} not found ({e})"))),
        }
    };
    let info =
        crate::measure::context::ProgramInfo::inspect_with_path(&exe, path_var.map(str::as_bytes));
    let mut files = vec![facts::stamp("executable", &exe)];
    let interpreter = info.interpreter_resolved.clone().or_else(|| {
        let line = info.interpreter.as_deref()?;
        line.split_whitespace().next().map(str::to_owned)
    });
    if let Some(i) = &interpreter {
        files.push(facts::stamp("interpreter", Path::new(i)));
    }
    let elf = interpreter.map_or(exe, Into::into);
    let Some(loader) = facts::elf_interpreter(&elf) else {
        return (files, Some("a static program: no libraries to list".into()));
    };
    let argv = [loader.clone(), "--list".into(), elf.display().to_string()];
    match spawn::output(Spawn {
        path: &loader,
        argv: &argv,
        env: &plan.env,
        cwd: Some(&plan.cwd),
        stdout: None,
    }) {
        Ok(text) => {
            let libraries = facts::parse_loader_list(&text);
            files.extend(
                libraries
                    .iter()
                    .map(|l| facts::stamp("library", Path::new(l))),
            );
            (files, None)
        }
        Err(why) => (files, Some(format!("{loader} --list: {why}"))),
    }
}
