#![forbid(unsafe_code)]
//! The batch context against what the machine says through other tools.

use coldtrace::measure::context::{
    read_boot_id, read_uptime_s, Capabilities, EnvMarkers, ProgramInfo, SystemContext,
};
use std::path::{Path, PathBuf};
use std::process::Command;

fn command_output(program: &str, args: &[&str]) -> Option<String> {
    let out = Command::new(program).args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

fn is_uuid(s: &str) -> bool {
    let groups: Vec<&str> = s.split('-').collect();
    groups.iter().map(|g| g.len()).eq([8, 4, 4, 4, 12])
        && groups
            .iter()
            .all(|g| g.chars().all(|c| c.is_ascii_hexdigit()))
}

#[test]
fn system_context_is_real() {
    let ctx = SystemContext::read();
    eprintln!("{}", serde_json::to_string(&ctx).unwrap());
    let boot_id = ctx.boot_id.as_deref().unwrap();
    assert!(is_uuid(boot_id), "{boot_id}");
    assert_eq!(
        read_boot_id().as_deref(),
        Some(boot_id),
        "stable within a boot"
    );
    if let Some(release) = command_output("uname", &["-r"]) {
        assert_eq!(ctx.kernel_release.as_deref(), Some(release.as_str()));
    }
    if let Some(host) = command_output("uname", &["-n"]) {
        assert_eq!(ctx.hostname.as_deref(), Some(host.as_str()));
    }
    assert!(ctx.kernel_version.is_some());
    let uptime = ctx.uptime_s.unwrap();
    assert!(uptime > 0.0);
    assert!(read_uptime_s().unwrap() >= uptime);
    let cpus = ctx.cpu_count.unwrap();
    if let Some(nproc) = command_output("nproc", &["--all"]) {
        assert_eq!(cpus.to_string(), nproc);
    }
    assert!((1..=cpus).contains(&ctx.cpus_available.unwrap()));
    if cfg!(target_arch = "x86_64") {
        assert!(ctx.cpu_model.is_some());
    }
    let total = ctx.mem_total_kib.unwrap();
    assert!(total > 64 * 1024);
    assert!(ctx.mem_available_kib.unwrap() <= total);
    assert!(ctx.load_avg_1m.unwrap() >= 0.0);
    assert!(ctx.load_avg_5m.is_some() && ctx.load_avg_15m.is_some());
}

#[test]
fn capabilities_probe() {
    let caps = Capabilities::probe();
    eprintln!("{}", serde_json::to_string(&caps).unwrap());
    assert!(
        caps.task_io_accounting,
        "/proc/self/io is readable on this machine"
    );
    assert_eq!(caps.psi, Path::new("/proc/pressure/io").exists());
    let paranoid = std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .ok()
        .and_then(|t| t.trim().parse::<i32>().ok());
    assert_eq!(caps.perf_event_paranoid, paranoid);
    assert_eq!(
        caps.cachestat,
        coldtrace::measure::cache::cachestat_available()
    );
    if rustix::process::geteuid().is_root() {
        assert!(caps.clear_refs_writable);
    }
}

#[test]
fn pyenv_like_shim_resolves_its_interpreter() {
    let dir = std::env::temp_dir().join(format!("coldtrace-ctx-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let shim = dir.join("python3");
    std::fs::write(
        &shim,
        "#!/usr/bin/env bash\nset -e\nexec python3.11 \"$@\"\n",
    )
    .unwrap();
    let link = dir.join("py-link");
    let _ = std::fs::remove_file(&link);
    std::os::unix::fs::symlink(&shim, &link).unwrap();

    let info = ProgramInfo::inspect_with_path(&link, Some(b"/nonexistent:/usr/bin:/bin"));
    assert_eq!(info.path, link.to_string_lossy());
    assert_eq!(
        info.canonical_path.as_deref(),
        Some(&*shim.canonicalize().unwrap().to_string_lossy())
    );
    assert_eq!(info.interpreter.as_deref(), Some("/usr/bin/env bash"));
    let bash = info.interpreter_resolved.as_deref().unwrap();
    assert!(bash == "/usr/bin/bash" || bash == "/bin/bash", "{bash}");

    // A binary has no interpreter; a missing file has no canonical path.
    let info = ProgramInfo::inspect(Path::new("/bin/sh"));
    assert_eq!((info.interpreter, info.interpreter_resolved), (None, None));
    let info = ProgramInfo::inspect(Path::new("/nonexistent/prog"));
    assert_eq!((info.canonical_path, info.interpreter), (None, None));

    // A direct interpreter is recorded but not looked up.
    let script = dir.join("script.sh");
    std::fs::write(&script, "#! /bin/sh -e  \necho\n").unwrap();
    let info = ProgramInfo::inspect(&script);
    assert_eq!(info.interpreter.as_deref(), Some("/bin/sh -e"));
    assert_eq!(info.interpreter_resolved, None);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_real_python3_on_path() {
    let Some(found) = command_output("sh", &["-c", "command -v python3"]) else {
        eprintln!("no python3 on PATH");
        return;
    };
    let info = ProgramInfo::inspect(&PathBuf::from(&found));
    eprintln!("{}", serde_json::to_string(&info).unwrap());
    if found.contains("/.pyenv/shims/") {
        // pyenv shims are bash scripts run through env.
        assert_eq!(info.interpreter.as_deref(), Some("/usr/bin/env bash"));
        assert!(info
            .interpreter_resolved
            .as_deref()
            .unwrap()
            .ends_with("/bash"));
    }
}

#[test]
fn env_markers_are_the_environment() {
    let markers = EnvMarkers::read();
    let var = |n: &str| std::env::var(n).ok().filter(|v| !v.trim().is_empty());
    assert_eq!(markers.virtual_env, var("VIRTUAL_ENV"));
    assert_eq!(markers.conda_prefix, var("CONDA_PREFIX"));
}
