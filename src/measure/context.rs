//! The context of a batch: which machine, which boot, what it could measure, what ran.
//! It reads the machine once per batch; per-run figures are elsewhere in measure.
//!
//! Numbers from different boots or kernels are not comparable without saying so, so every batch
//! records the kernel ([uname(2)]), the boot ID and uptime ([proc_sys_kernel(5)],
//! [proc_uptime(5)]), CPU and memory ([proc_cpuinfo(5)], [proc_meminfo(5)]), load
//! ([proc_loadavg(5)]), the capabilities the measurement depends on, and what the program really
//! is (a `#!` script such as a pyenv shim runs its interpreter).
//!
//! [uname(2)]: https://man7.org/linux/man-pages/man2/uname.2.html
//! [proc_sys_kernel(5)]: https://man7.org/linux/man-pages/man5/proc_sys_kernel.5.html
//! [proc_uptime(5)]: https://man7.org/linux/man-pages/man5/proc_uptime.5.html
//! [proc_cpuinfo(5)]: https://man7.org/linux/man-pages/man5/proc_cpuinfo.5.html
//! [proc_meminfo(5)]: https://man7.org/linux/man-pages/man5/proc_meminfo.5.html
//! [proc_loadavg(5)]: https://man7.org/linux/man-pages/man5/proc_loadavg.5.html
#![forbid(unsafe_code)]

use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// A /proc file's text, opened without blocking (see [`crate::measure::procfs::open`]).
fn read_text(path: &str) -> Option<String> {
    crate::measure::procfs::read_text(path, 1 << 20)
}

fn non_empty(s: &str) -> Option<String> {
    let s = s.trim();
    (!s.is_empty()).then(|| s.to_owned())
}

/// The boot ID ([proc_sys_kernel(5)] `random/boot_id`): a UUID that changes at every boot, so
/// records from different boots (different cache and memory state) can be told apart. Cheap.
///
/// [proc_sys_kernel(5)]: https://man7.org/linux/man-pages/man5/proc_sys_kernel.5.html
pub fn read_boot_id() -> Option<String> {
    read_text("/proc/sys/kernel/random/boot_id").and_then(|s| non_empty(&s))
}

/// Seconds since boot from [proc_uptime(5)] (first field). Cheap.
///
/// [proc_uptime(5)]: https://man7.org/linux/man-pages/man5/proc_uptime.5.html
pub fn read_uptime_s() -> Option<f64> {
    parse_uptime_s(read_text("/proc/uptime")?.as_bytes())
}

/// The first field of `/proc/uptime` text.
pub fn parse_uptime_s(text: &[u8]) -> Option<f64> {
    std::str::from_utf8(text)
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// The trimmed text of `/proc/sys/kernel/random/boot_id`.
pub fn parse_boot_id(text: &[u8]) -> Option<String> {
    non_empty(std::str::from_utf8(text).ok()?)
}

/// The machine and boot a batch ran on.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SystemContext {
    /// `uname -r`.
    pub kernel_release: Option<String>,
    /// `uname -v` (build number and date).
    pub kernel_version: Option<String>,
    /// See [`read_boot_id`].
    pub boot_id: Option<String>,
    /// See [`read_uptime_s`].
    pub uptime_s: Option<f64>,
    /// `model name` of the first CPU in `/proc/cpuinfo` (x86; absent on some architectures).
    pub cpu_model: Option<String>,
    /// Processors listed in `/proc/cpuinfo` (online CPUs).
    pub cpu_count: Option<u64>,
    /// CPUs this process may run on (affinity, cgroup quota): `available_parallelism`.
    pub cpus_available: Option<u64>,
    /// `MemTotal` of `/proc/meminfo`, KiB.
    pub mem_total_kib: Option<u64>,
    /// `MemAvailable` of `/proc/meminfo`, KiB.
    pub mem_available_kib: Option<u64>,
    /// Load average over 1 minute.
    pub load_avg_1m: Option<f64>,
    /// Load average over 5 minutes.
    pub load_avg_5m: Option<f64>,
    /// Load average over 15 minutes.
    pub load_avg_15m: Option<f64>,
    /// `uname -n`.
    pub hostname: Option<String>,
    /// How far below a process's real peak its max RSS can read here, KiB (see
    /// [`crate::measure::rss_resolution`]); `None` before Linux 6.2.
    pub max_rss_resolution_kib: Option<u64>,
}
crate::serialize_struct!(SystemContext {
    kernel_release,
    kernel_version,
    boot_id,
    uptime_s,
    cpu_model,
    cpu_count,
    cpus_available,
    mem_total_kib,
    mem_available_kib,
    load_avg_1m,
    load_avg_5m,
    load_avg_15m,
    hostname,
    max_rss_resolution_kib,
});

impl SystemContext {
    /// Reads everything; a missing file or field is `None`. Once per batch.
    pub fn read() -> SystemContext {
        let uname = rustix::system::uname();
        let text = |c: &std::ffi::CStr| non_empty(&c.to_string_lossy());
        let (cpu_model, cpu_count) = read_text("/proc/cpuinfo")
            .map(|t| parse_cpuinfo(&t))
            .unwrap_or_default();
        let meminfo = read_text("/proc/meminfo").unwrap_or_default();
        let load = read_text("/proc/loadavg").unwrap_or_default();
        let mut loads = load.split_whitespace().map(|w| w.parse::<f64>().ok());
        let kernel_release = text(uname.release());
        let page_kib = rustix::param::page_size() as u64 / 1024;
        let max_rss_resolution_kib = kernel_release.as_deref().zip(cpu_count).and_then(|(r, n)| {
            crate::measure::rss_resolution::max_rss_resolution_kib(r, n, page_kib)
        });
        SystemContext {
            kernel_release,
            kernel_version: text(uname.version()),
            boot_id: read_boot_id(),
            uptime_s: read_uptime_s(),
            cpu_model,
            cpu_count,
            cpus_available: std::thread::available_parallelism()
                .ok()
                .map(|n| n.get() as u64),
            mem_total_kib: meminfo_kib(&meminfo, "MemTotal"),
            mem_available_kib: meminfo_kib(&meminfo, "MemAvailable"),
            load_avg_1m: loads.next().flatten(),
            load_avg_5m: loads.next().flatten(),
            load_avg_15m: loads.next().flatten(),
            hostname: text(uname.nodename()),
            max_rss_resolution_kib,
        }
    }
}

/// The first `model name` and the number of `processor` entries.
fn parse_cpuinfo(text: &str) -> (Option<String>, Option<u64>) {
    let mut model = None;
    let mut count = 0u64;
    for line in text.lines() {
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        match key.trim() {
            "processor" => count += 1,
            "model name" if model.is_none() => model = non_empty(value),
            _ => {}
        }
    }
    (model, (count > 0).then_some(count))
}

/// A `Name:   1234 kB` line of `/proc/meminfo`, in KiB.
fn meminfo_kib(text: &str, name: &str) -> Option<u64> {
    text.lines().find_map(|line| {
        let rest = line.strip_prefix(name)?.strip_prefix(':')?;
        rest.trim().trim_end_matches("kB").trim().parse().ok()
    })
}

/// What this machine lets coldtrace measure, probed without changing anything.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Capabilities {
    /// `cachestat(2)` exists (Linux ≥ 6.5).
    pub cachestat: bool,
    /// Pressure stall information is readable ([proc_pressure(5)]).
    ///
    /// [proc_pressure(5)]: https://man7.org/linux/man-pages/man5/proc_pressure.5.html
    pub psi: bool,
    /// `/proc/sys/vm/drop_caches` can be opened for writing.
    pub drop_caches_permitted: bool,
    /// `/proc/self/io` is readable: per-task I/O accounting ([proc_pid_io(5)]).
    ///
    /// [proc_pid_io(5)]: https://man7.org/linux/man-pages/man5/proc_pid_io.5.html
    pub task_io_accounting: bool,
    /// `/proc/self/clear_refs` can be opened for writing, so the runner's peak RSS can be reset
    /// before each spawn ([proc_pid_clear_refs(5)]). Opened, never written.
    ///
    /// [proc_pid_clear_refs(5)]: https://man7.org/linux/man-pages/man5/proc_pid_clear_refs.5.html
    pub clear_refs_writable: bool,
    /// `/proc/sys/kernel/perf_event_paranoid` ([perf_event_open(2)]).
    ///
    /// [perf_event_open(2)]: https://man7.org/linux/man-pages/man2/perf_event_open.2.html
    pub perf_event_paranoid: Option<i32>,
}
crate::serialize_struct!(Capabilities {
    cachestat,
    psi,
    drop_caches_permitted,
    task_io_accounting,
    clear_refs_writable,
    perf_event_paranoid,
});

impl Capabilities {
    /// Probes each capability.
    pub fn probe() -> Capabilities {
        let writable = |path: &str| crate::measure::procfs::open_for_writing(path).is_ok();
        Capabilities {
            cachestat: crate::measure::cache::cachestat_available(),
            psi: read_text("/proc/pressure/io").is_some_and(|t| t.starts_with("some ")),
            drop_caches_permitted: crate::measure::cache::drop_caches_permitted(),
            task_io_accounting: read_text("/proc/self/io").is_some_and(|t| t.contains("rchar:")),
            clear_refs_writable: writable("/proc/self/clear_refs"),
            perf_event_paranoid: read_text("/proc/sys/kernel/perf_event_paranoid")
                .and_then(|t| t.trim().parse().ok()),
        }
    }
}

/// What a resolved program path really is.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProgramInfo {
    /// The path as resolved (e.g. by a PATH lookup).
    pub path: String,
    /// All symlinks resolved; `None` when that fails.
    pub canonical_path: Option<String>,
    /// The `#!` line without `#!`, trimmed, when the file is a script ([execve(2)]
    /// "Interpreter scripts"; the kernel reads at most 256 bytes of it).
    ///
    /// [execve(2)]: https://man7.org/linux/man-pages/man2/execve.2.html
    pub interpreter: Option<String>,
    /// For `#!/usr/bin/env NAME`, NAME looked up in `PATH` — the program that will really run.
    pub interpreter_resolved: Option<String>,
}
crate::serialize_struct!(ProgramInfo {
    path,
    canonical_path,
    interpreter,
    interpreter_resolved
});

/// The kernel reads at most this much of a script's first line (`BINPRM_BUF_SIZE`).
const SHEBANG_MAX: usize = 256;

impl ProgramInfo {
    /// Inspects `resolved_path`; never fails (what cannot be read is `None`). Uses the current
    /// `PATH` to resolve `env NAME`.
    pub fn inspect(resolved_path: &Path) -> ProgramInfo {
        let path_var = std::env::var_os("PATH");
        ProgramInfo::inspect_with_path(resolved_path, path_var.as_ref().map(|p| p.as_bytes()))
    }

    /// As [`ProgramInfo::inspect`], with an explicit `PATH` (the child's, when it differs).
    pub fn inspect_with_path(resolved_path: &Path, path_var: Option<&[u8]>) -> ProgramInfo {
        let interpreter = read_shebang(resolved_path);
        let interpreter_resolved = interpreter.as_deref().and_then(|line| {
            let name = env_target(line)?;
            let found = coldtrace_syscalls::find_program(name.as_bytes(), path_var).ok()?;
            Some(found.to_string_lossy().into_owned())
        });
        ProgramInfo {
            path: resolved_path.to_string_lossy().into_owned(),
            canonical_path: std::fs::canonicalize(resolved_path)
                .ok()
                .map(|p| p.to_string_lossy().into_owned()),
            interpreter,
            interpreter_resolved,
        }
    }
}

/// The `#!` line of a file, without `#!`, trimmed.
fn read_shebang(path: &Path) -> Option<String> {
    let opened = crate::untrusted::open(path, crate::untrusted::Want::Regular).ok()?;
    let file = std::fs::File::from(opened.fd);
    let mut head = Vec::with_capacity(SHEBANG_MAX);
    file.take(SHEBANG_MAX as u64).read_to_end(&mut head).ok()?;
    let rest = head.strip_prefix(b"#!")?;
    let line = rest.split(|&b| b == b'\n').next().unwrap_or(rest);
    non_empty(&String::from_utf8_lossy(line))
}

/// NAME in `/usr/bin/env [-S] [-options] [VAR=value …] NAME …`, if the interpreter is `env`.
fn env_target(line: &str) -> Option<&str> {
    let mut words = line.split_whitespace();
    let interpreter = words.next()?;
    if Path::new(interpreter).file_name()? != "env" {
        return None;
    }
    words.find(|w| !w.starts_with('-') && !w.contains('='))
}

/// Python environment markers that change what `python3` means.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EnvMarkers {
    /// `VIRTUAL_ENV`, set by a venv's `activate`.
    pub virtual_env: Option<String>,
    /// `CONDA_PREFIX`, set by `conda activate`.
    pub conda_prefix: Option<String>,
}
crate::serialize_struct!(EnvMarkers {
    virtual_env,
    conda_prefix
});

impl EnvMarkers {
    /// Reads the markers from this process's environment (empty values count as unset).
    pub fn read() -> EnvMarkers {
        let var = |name: &str| std::env::var_os(name).and_then(|v| non_empty(&v.to_string_lossy()));
        EnvMarkers {
            virtual_env: var("VIRTUAL_ENV"),
            conda_prefix: var("CONDA_PREFIX"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_lines() {
        assert_eq!(env_target("/usr/bin/env bash"), Some("bash"));
        assert_eq!(env_target("/usr/bin/env -S python3 -u"), Some("python3"));
        assert_eq!(env_target("/usr/bin/env A=1 python3"), Some("python3"));
        assert_eq!(env_target("/bin/sh -e"), None);
    }

    #[test]
    fn cpuinfo_and_meminfo() {
        let (model, count) = parse_cpuinfo(
            "processor\t: 0\nmodel name\t: Foo CPU\n\nprocessor\t: 1\nmodel name\t: Foo CPU\n",
        );
        assert_eq!(model.as_deref(), Some("Foo CPU"));
        assert_eq!(count, Some(2));
        assert_eq!(
            meminfo_kib("MemTotal:       16384 kB\nMemFree: 1 kB\n", "MemTotal"),
            Some(16384)
        );
        assert_eq!(
            meminfo_kib("MemTotal:       16384 kB\n", "MemAvailable"),
            None
        );
    }
}
