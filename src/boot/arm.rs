//! `coldtrace boot arm`: the plan saved (what `coldtrace run` would execute: argv, working
//! directory, environment, user, options) in the state directory, and the unit installed that
//! runs `boot run` at each of the next boots — or, where systemd is not the init, the one
//! command an init script must run. Any step that fails undoes the ones before it.
#![forbid(unsafe_code)]

use crate::boot::store::{Found, StateDir};
use crate::boot::unit::{self, UnitText};
use crate::boot::{events, Places, Said};
use crate::record::boot::{BootPlan, BootState, STATE_SCHEMA};
use std::path::{Path, PathBuf};

/// What `boot arm` was asked, checked by the command line.
#[derive(Clone, Debug, PartialEq)]
pub struct ArmArgs {
    /// Where the state and the unit go.
    pub places: Places,
    /// `--boots`.
    pub boots: u64,
    /// `-o DIR`, as given.
    pub out_dir: PathBuf,
    /// `--reboot` (`Some(None)`) or `--reboot=COMMAND`.
    pub reboot: Option<Option<String>>,
    /// `--after` units.
    pub after: Vec<String>,
    /// `--control SECONDS`.
    pub control_after_s: Option<f64>,
    /// `--start-timeout`.
    pub start_timeout_s: u64,
    /// `--dry-run`.
    pub dry_run: bool,
    /// `coldtrace run`'s options, canonical, without `-o`.
    pub run_options: Vec<String>,
    /// The command.
    pub argv: Vec<String>,
}

fn utf8(what: &str, text: std::ffi::OsString) -> Result<String, String> {
    text.into_string().map_err(|t| {
        format!(
            "{what} {} is not UTF-8 text, which the saved plan (JSON) cannot hold",
            crate::text::escape_controls(&t.to_string_lossy())
        )
    })
}

/// The plan from the arguments and this process's directory, environment and user.
fn plan_of(args: &ArmArgs) -> Result<BootPlan, String> {
    let cwd = std::env::current_dir().map_err(|e| format!("the working directory: {e}"))?;
    let cwd = utf8("the working directory", cwd.into_os_string())?;
    let env = std::env::vars_os()
        .map(|(k, v)| {
            let name = utf8("the environment variable", k)?;
            let value = utf8(&format!("the value of {name}"), v)?;
            Ok(format!("{name}={value}"))
        })
        .collect::<Result<Vec<_>, String>>()?;
    let exe = std::env::current_exe()
        .and_then(std::fs::canonicalize)
        .map_err(|e| format!("cannot name coldtrace's own executable for the unit: {e}"))?;
    let out_dir = Path::new(&cwd).join(&args.out_dir);
    Ok(BootPlan {
        argv: args.argv.clone(),
        run_options: args.run_options.clone(),
        cwd,
        env,
        uid: rustix::process::getuid().as_raw(),
        gid: rustix::process::getgid().as_raw(),
        out_dir: utf8("-o", out_dir.into_os_string())?,
        boots: args.boots,
        reboot: args.reboot.is_some(),
        reboot_command: args.reboot.clone().flatten(),
        control_after_s: args.control_after_s,
        after: args.after.clone(),
        start_timeout_s: args.start_timeout_s,
        coldtrace: utf8("coldtrace's path", exe.into_os_string())?,
    })
}

/// Refuses a command that `run` would not find now (with `--shell` the shell runs it, and
/// finds it or not, at each boot).
fn check_command(plan: &BootPlan) -> Result<(), String> {
    let first = &plan.argv[0];
    if first.contains('/') || plan.run_options.iter().any(|o| o == "--shell") {
        return Ok(());
    }
    let path = plan.env.iter().find_map(|e| e.strip_prefix("PATH="));
    coldtrace_syscalls::find_program(first.as_bytes(), path.map(str::as_bytes))
        .map(|_| ())
        .map_err(|e| format!("{first}: {e} in PATH; nothing armed"))
}

/// Whether a unit is installed: where systemd runs, or where `--unit-dir` names a place.
fn installs_unit(places: &Places) -> bool {
    places.unit_dir_given || unit::systemd_runs()
}

fn unit_text(places: &Places, plan: &BootPlan) -> String {
    UnitText {
        exec: &places.boot_run_command(&plan.coldtrace),
        after: &plan.after,
        start_timeout_s: plan.start_timeout_s,
        boots: plan.boots,
    }
    .render()
}

/// Refuses to arm over a state that is there already.
fn check_not_armed(places: &Places) -> Result<(), String> {
    let Some(dir) = StateDir::open(&places.state_dir)? else {
        return Ok(());
    };
    match dir.read() {
        Found::Missing => Ok(()),
        Found::Armed(state) => Err(format!(
            "already armed ({} of {} boots started, results in {}): `coldtrace boot status` \
             shows the plan; `coldtrace boot disarm` first to arm anew",
            state.boots_started, state.plan.boots, state.plan.out_dir
        )),
        Found::Damaged(why) => Err(format!(
            "{}: a damaged state is in the way ({why}); `coldtrace boot disarm` removes it",
            dir.shown(crate::boot::store::STATE_FILE)
        )),
    }
}

/// Arms, or with `--dry-run` says what arming would install.
///
/// # Errors
/// One line: already armed, a place that cannot be written (arming needs root for the
/// default places), a plan that cannot be saved.
pub fn arm(args: &ArmArgs) -> Result<Said, String> {
    let plan = plan_of(args)?;
    check_not_armed(&args.places)?;
    check_command(&plan)?;
    let with_unit = installs_unit(&args.places);
    let command = args.places.boot_run_command(&plan.coldtrace);
    let init_line = crate::text::quote(&command);
    if args.dry_run {
        return Ok(Said {
            text: dry_run_text(args, &plan, with_unit, &init_line),
            exit_code: 0,
        });
    }
    let out_dir = PathBuf::from(&plan.out_dir);
    let out_dir = out_dir.as_path();
    std::fs::create_dir_all(out_dir).map_err(|e| format!("-o {}: {e}", out_dir.display()))?;
    let state_dir = StateDir::create(&args.places.state_dir).map_err(|e| needs_root(&e))?;
    let mut state = BootState {
        schema: STATE_SCHEMA.into(),
        armed_at: crate::measure::clock::rfc3339_utc_now(),
        armed_boot_id: crate::measure::context::read_boot_id(),
        plan,
        unit: None,
        wants_link: None,
        boots_started: 0,
        running: None,
        ran: Vec::new(),
    };
    if with_unit {
        let (unit, link) = unit::paths(&args.places.unit_dir);
        state.unit = Some(unit.display().to_string());
        state.wants_link = Some(link.display().to_string());
    }
    // The state first, then the unit: a unit never runs without its state; either failing
    // undoes both.
    let installed = state_dir.write(&state).and_then(|()| match with_unit {
        true => {
            unit::install(&args.places.unit_dir, &unit_text(&args.places, &state.plan)).map(|_| ())
        }
        false => Ok(()),
    });
    if let Err(e) = installed {
        crate::boot::disarm::remove_everything(&args.places, Some(&state));
        return Err(needs_root(&e));
    }
    reload_systemd(&args.places);
    let mut armed = events::now("armed");
    armed.why = Some(format!(
        "{} boots: {}",
        state.plan.boots,
        crate::text::quote(&state.plan.argv)
    ));
    let _ = events::append(out_dir, &armed);
    let mut text = armed_text(&state, &args.places, &init_line);
    if let Some(warning) = writable_by_others(Path::new(&state.plan.coldtrace)) {
        text.push_str(&warning);
    }
    Ok(Said { text, exit_code: 0 })
}

/// A warning when the program that will run at each boot, as the user who armed, can be
/// replaced by another user: the executable or its directory owned by someone else, or
/// writable by group or others.
fn writable_by_others(exe: &Path) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let me = rustix::process::geteuid().as_raw();
    let loose = |p: &Path| {
        std::fs::metadata(p)
            .map(|m| m.uid() != me || m.mode() & 0o022 != 0)
            .unwrap_or(false)
    };
    let dir = exe.parent().unwrap_or(Path::new("/"));
    (loose(exe) || loose(dir)).then(|| {
        format!(
            "warning: {} (or its directory) can be changed by another user than uid {me}, \
             and runs at each boot as uid {me}: install coldtrace where only that user can \
             write (e.g. /usr/local/bin), or disarm\n",
            exe.display()
        )
    })
}

/// Asks a running systemd to read its units again, when the unit is in its own directory.
pub fn reload_systemd(places: &Places) {
    if unit::systemd_runs() && !places.unit_dir_given {
        let argv = ["systemctl".to_string(), "daemon-reload".into()];
        if let Ok(path) = coldtrace_syscalls::find_program(b"systemctl", Some(b"/usr/bin:/bin")) {
            let env = ["PATH=/usr/sbin:/usr/bin:/sbin:/bin".to_string()];
            let _ = crate::boot::spawn::run(&crate::boot::spawn::Spawn {
                path: &path.to_string_lossy(),
                argv: &argv,
                env: &env,
                cwd: None,
                stdout: None,
            });
        }
    }
}

fn needs_root(e: &str) -> String {
    if e.contains("Permission denied") && !rustix::process::geteuid().is_root() {
        format!(
            "{e}; arming needs root for the default places (sudo coldtrace boot arm …), or \
             --state-dir and --unit-dir of your own"
        )
    } else {
        e.to_string()
    }
}

fn dry_run_text(args: &ArmArgs, plan: &BootPlan, with_unit: bool, init_line: &str) -> String {
    let (unit_path, link) = unit::paths(&args.places.unit_dir);
    let mut out = String::from("boot arm --dry-run: nothing was written.\n\n");
    if with_unit {
        out.push_str(&format!(
            "The unit, {} (linked from {}):\n\n{}\n",
            unit_path.display(),
            link.display(),
            unit_text(&args.places, plan)
        ));
    } else {
        out.push_str(&no_systemd_text(init_line));
        out.push('\n');
    }
    let state = args.places.state_dir.join(crate::boot::store::STATE_FILE);
    out.push_str(&format!(
        "The plan, in {}:\n{}",
        state.display(),
        crate::boot::status::plan_lines(plan)
    ));
    out
}

fn no_systemd_text(init_line: &str) -> String {
    format!(
        "systemd is not this machine's init (no /run/systemd/system): no unit is installed.\n\
         An init script must run this once per boot, after the file systems are mounted:\n\n    \
         {init_line}\n\n\
         (When nothing is armed it says so and does nothing.)\n"
    )
}

fn armed_text(state: &BootState, places: &Places, init_line: &str) -> String {
    let plan = &state.plan;
    let mut out = format!(
        "armed: {} at each of the next {} boot{}\n  results: {}/boot-NN-<boot id>/\n  \
         state:   {}\n",
        crate::text::quote(&plan.argv),
        plan.boots,
        if plan.boots == 1 { "" } else { "s" },
        plan.out_dir,
        places
            .state_dir
            .join(crate::boot::store::STATE_FILE)
            .display()
    );
    match (&state.unit, &state.wants_link) {
        (Some(unit), Some(link)) => {
            out.push_str(&format!("  unit:    {unit}\n           {link}\n"));
        }
        _ => out.push_str(&no_systemd_text(init_line)),
    }
    out.push_str(match (plan.reboot, plan.boots) {
        (true, _) => "Reboot to start; each boot reboots the next while boots remain.\n",
        (false, 1) => "It runs at the next boot.\n",
        (false, _) => "Reboot to start; every boot after runs one batch until none remain.\n",
    });
    out.push_str("coldtrace boot status shows it; coldtrace boot disarm removes it.\n");
    out
}
