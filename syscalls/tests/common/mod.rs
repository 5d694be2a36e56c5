//! Helpers shared by the integration tests that spawn real processes (a module, not a test
//! binary: files in `tests/` subdirectories are not compiled on their own).
#![forbid(unsafe_code)]
// Each test binary uses a different subset of these helpers.
#![allow(dead_code)]

use coldtrace_syscalls::{ChildStack, Program, SpawnError, SpawnOptions, WaitStatus};
use std::ffi::CString;
use std::fs::File;
use std::os::fd::AsFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

/// The search path given to children that run shell scripts.
pub const CHILD_PATH: &str = "PATH=/usr/bin:/bin";

/// A fresh directory under the system temp dir, removed (with its contents) on drop.
pub struct TempDir {
    path: PathBuf,
}

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let name = format!("coldtrace-{tag}-{}-{n}", std::process::id());
        let path = std::env::temp_dir().join(name);
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir(&path).unwrap_or_else(|e| panic!("mkdir {}: {e}", path.display()));
        TempDir { path }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn join(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }

    /// The directory as a C string, for `SpawnOptions::cwd`.
    pub fn cpath(&self) -> CString {
        path_cstring(&self.path)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

pub fn cstring(s: &str) -> CString {
    CString::new(s).expect("test strings contain no NUL")
}

pub fn path_cstring(path: &Path) -> CString {
    CString::new(path.as_os_str().as_bytes()).expect("test paths contain no NUL")
}

pub fn cstrings(list: &[&str]) -> Vec<CString> {
    list.iter().map(|s| cstring(s)).collect()
}

/// `path` with the given argv (argv\[0\] included) and exactly the given environment.
pub fn program(path: &str, argv: &[&str], env: &[&str]) -> Program {
    Program::new(cstring(path), cstrings(argv), cstrings(env))
}

/// `/bin/sh -c script sh args...` with `PATH` and `LC_ALL=C` only.
pub fn sh(script: &str, args: &[&str]) -> Program {
    let mut argv = vec!["sh", "-c", script, "sh"];
    argv.extend_from_slice(args);
    program("/bin/sh", &argv, &[CHILD_PATH, "LC_ALL=C"])
}

/// What a finished child left behind.
pub struct Output {
    pub status: WaitStatus,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
}

impl Output {
    pub fn stdout_text(&self) -> String {
        String::from_utf8_lossy(&self.stdout).into_owned()
    }

    /// A description for assertion messages.
    pub fn describe(&self) -> String {
        format!(
            "status {:?}; stdout {:?}; stderr {:?}",
            self.status,
            String::from_utf8_lossy(&self.stdout),
            String::from_utf8_lossy(&self.stderr)
        )
    }
}

/// Runs `program` to completion with stdin from /dev/null and stdout/stderr captured in files
/// of `dir`; every other option is taken from `options`.
pub fn run_in(
    dir: &TempDir,
    program: &Program,
    options: &SpawnOptions<'_>,
    stack: &mut ChildStack,
) -> Result<Output, SpawnError> {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let out_path = dir.join(&format!("stdout-{n}"));
    let err_path = dir.join(&format!("stderr-{n}"));
    let stdin = File::open("/dev/null").expect("open /dev/null");
    let stdout = File::create(&out_path).expect("create stdout file");
    let stderr = File::create(&err_path).expect("create stderr file");
    let options = SpawnOptions {
        stdin: Some(stdin.as_fd()),
        stdout: Some(stdout.as_fd()),
        stderr: Some(stderr.as_fd()),
        ..*options
    };
    let child = program.spawn(&options, stack)?;
    let (status, _usage) = child.reap().expect("reap a child we spawned");
    let output = Output {
        status,
        stdout: std::fs::read(&out_path).expect("read stdout file"),
        stderr: std::fs::read(&err_path).expect("read stderr file"),
    };
    let _ = std::fs::remove_file(&out_path);
    let _ = std::fs::remove_file(&err_path);
    Ok(output)
}

/// [`run_in`] with default options in a throw-away directory, panicking on a spawn error.
pub fn run(program: &Program) -> Output {
    let dir = TempDir::new("run");
    let mut stack = ChildStack::new().expect("map a child stack");
    run_in(&dir, program, &SpawnOptions::default(), &mut stack)
        .unwrap_or_else(|e| panic!("spawn {:?}: {e:?}", program.path()))
}

/// The signals 1..=31 by number, written from signal(7) (x86_64 and aarch64 numbering).
pub const SIGNAL_7_TABLE: [(i32, &str); 31] = [
    (1, "SIGHUP"),
    (2, "SIGINT"),
    (3, "SIGQUIT"),
    (4, "SIGILL"),
    (5, "SIGTRAP"),
    (6, "SIGABRT"),
    (7, "SIGBUS"),
    (8, "SIGFPE"),
    (9, "SIGKILL"),
    (10, "SIGUSR1"),
    (11, "SIGSEGV"),
    (12, "SIGUSR2"),
    (13, "SIGPIPE"),
    (14, "SIGALRM"),
    (15, "SIGTERM"),
    (16, "SIGSTKFLT"),
    (17, "SIGCHLD"),
    (18, "SIGCONT"),
    (19, "SIGSTOP"),
    (20, "SIGTSTP"),
    (21, "SIGTTIN"),
    (22, "SIGTTOU"),
    (23, "SIGURG"),
    (24, "SIGXCPU"),
    (25, "SIGXFSZ"),
    (26, "SIGVTALRM"),
    (27, "SIGPROF"),
    (28, "SIGWINCH"),
    (29, "SIGIO"),
    (30, "SIGPWR"),
    (31, "SIGSYS"),
];

/// The signal(7) name of a standard signal.
pub fn signal_7_name(n: i32) -> &'static str {
    SIGNAL_7_TABLE
        .iter()
        .find(|(m, _)| *m == n)
        .map(|(_, name)| *name)
        .expect("1..=31")
}
