//! `Spawner` against what it cannot do the way `Program::spawn` does, so it must say so
//! (`SpawnerFailure::Unsupported`, and the caller spawns in-process): a script that is to run
//! through `/bin/sh` (the spawner has no shell fallback), and a parent-death signal asked from a
//! thread other than the one that started the spawner (its children are the starting thread's
//! children, so the kernel's signal would follow that thread, not the one that asked).
//!
//! The spawner program is built here as coldtrace's build script builds it (one `rustc` call).
#![forbid(unsafe_code)]

mod common;

use coldtrace_syscalls::spawner::{ReplyWatch, Spawner, SpawnerFailure};
use coldtrace_syscalls::{
    Child, ChildStack, Program, Signal, SpawnOptions, WaitEvent, WaitStatusKind,
};
use common::{program, TempDir};
use std::path::Path;
use std::process::Command;
use std::sync::{Mutex, MutexGuard, OnceLock};

static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    SERIAL
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The spawner program's bytes, built once (src/build.rs's flags).
fn spawner_program() -> &'static [u8] {
    static BYTES: OnceLock<Vec<u8>> = OnceLock::new();
    BYTES.get_or_init(|| {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let out = root.join("../target/spawner-for-tests/coldtrace-spawner");
        std::fs::create_dir_all(out.parent().expect("a directory")).expect("make the directory");
        let triple = format!("{}-unknown-linux-musl", std::env::consts::ARCH);
        let status = Command::new("rustc")
            .args(["--edition", "2021", "--crate-type", "bin", "--crate-name"])
            .arg("coldtrace_spawner")
            .args(["--target", &triple])
            .args([
                "-C",
                "opt-level=z",
                "-C",
                "panic=abort",
                "-C",
                "codegen-units=1",
            ])
            .args(["-C", "relocation-model=static", "-l", "c"])
            .arg("-o")
            .arg(&out)
            .arg(root.join("src/spawner/main.rs"))
            .status()
            .expect("run rustc");
        assert!(status.success(), "rustc on the spawner failed");
        std::fs::read(&out).expect("the spawner program")
    })
}

/// Through `spawner`, or in-process where it answers `Unsupported`, as a caller does.
fn spawn_through(spawner: &Mutex<Spawner>, program: &Program, options: &SpawnOptions<'_>) -> Child {
    let mut watch = ReplyWatch::default();
    let tried = spawner
        .lock()
        .expect("the spawner")
        .spawn(program, options, &mut watch);
    match tried {
        Ok(spawned) => spawned.child,
        Err(SpawnerFailure::Unsupported) => program
            .spawn(options, &mut ChildStack::new().expect("a stack"))
            .expect("spawn in-process"),
        Err(e) => panic!("spawn through the spawner: {e:?}"),
    }
}

#[test]
fn a_script_to_run_through_sh_is_left_to_the_caller() {
    let _serial = serial();
    let mut stack = ChildStack::new().expect("a stack");
    let mut spawner = Spawner::start(spawner_program(), &mut stack).expect("start the spawner");
    let dir = TempDir::new("spawner-script");
    let script = dir.join("script");
    std::fs::write(&script, "exit 7\n").expect("write the script");
    let mode = std::os::unix::fs::PermissionsExt::from_mode(0o755);
    std::fs::set_permissions(&script, mode).expect("chmod");
    let asked = program(script.to_str().expect("a path"), &["script"], &[]).scripts_through_shell();
    let tried = spawner.spawn(&asked, &SpawnOptions::default(), &mut ReplyWatch::default());
    assert!(
        matches!(tried, Err(SpawnerFailure::Unsupported)),
        "the spawner has no shell fallback: {:?}",
        tried.map(|spawned| spawned.child.reap())
    );
    let (status, _) = spawner.stop().expect("stop the spawner");
    assert_eq!(status.code(), Some(0));
}

/// The documented rule holds through a spawner: the signal follows the thread that asked for
/// the child. A worker asks for `sleep 60` with SIGKILL at its parent's death, then exits;
/// the sleep must die with it, although the spawner was started by a thread that lives on.
#[test]
fn through_a_spawner_the_parent_death_signal_follows_the_thread_that_asked() {
    let _serial = serial();
    let mut stack = ChildStack::new().expect("a stack");
    let spawner = Mutex::new(Spawner::start(spawner_program(), &mut stack).expect("start"));
    let child = std::thread::scope(|scope| {
        scope
            .spawn(|| {
                let options = SpawnOptions {
                    parent_death_signal: Some(Signal::KILL),
                    ..SpawnOptions::default()
                };
                spawn_through(
                    &spawner,
                    &program("/bin/sleep", &["sleep", "60"], &[]),
                    &options,
                )
            })
            .join()
            .expect("the asking thread")
    });
    let deadline = coldtrace_syscalls::wait::monotonic_ns() + 10_000_000_000;
    let event = child.wait(None, Some(deadline)).expect("wait");
    if event != WaitEvent::Exited {
        let _ = child.signal(Signal::KILL);
    }
    let (status, _) = child.reap().expect("reap");
    assert!(
        event == WaitEvent::Exited
            && matches!(status.kind(), WaitStatusKind::Signaled { signal, .. } if signal == Signal::KILL),
        "the sleep should die with the thread that asked for it: {event:?}, {status:?}"
    );
    let (status, _) = spawner
        .into_inner()
        .expect("the spawner")
        .stop()
        .expect("stop");
    assert_eq!(status.code(), Some(0));
}
