//! Shared helpers for the integration tests: a temporary directory, running the built binary
//! with a deadline, and reading records back.
#![allow(dead_code)] // each test file uses a different subset
#![forbid(unsafe_code)]

use serde_json::Value;
use std::ffi::OsString;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The binary under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_coldtrace");

/// A fresh directory under the system temp dir, removed (with its contents) on drop.
pub struct TempDir(PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let path = std::env::temp_dir().join(format!(
            "coldtrace-test-{tag}-{}-{n}-{nanos}",
            std::process::id()
        ));
        std::fs::create_dir(&path).expect("create temp dir");
        TempDir(path)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }

    pub fn join(&self, p: impl AsRef<Path>) -> PathBuf {
        self.0.join(p)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// What a finished coldtrace run produced.
pub struct Output {
    pub command: String,
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
    pub elapsed: Duration,
}

impl Output {
    /// The exit code (`None` if coldtrace itself died of a signal).
    pub fn code(&self) -> Option<i32> {
        self.status.code()
    }

    /// Everything a failing assertion should show.
    pub fn describe(&self) -> String {
        format!(
            "\n--- command: {}\n--- status: {:?} (after {:.2?})\n--- stdout:\n{}\n--- stderr:\n{}\n---",
            self.command,
            self.status,
            self.elapsed,
            truncate(&self.stdout),
            truncate(&self.stderr)
        )
    }

    /// stdout parsed as exactly one JSON value.
    pub fn json(&self) -> Value {
        serde_json::from_str(self.stdout.trim())
            .unwrap_or_else(|e| panic!("stdout is not one JSON value ({e}){}", self.describe()))
    }

    /// Lines of stderr.
    pub fn stderr_lines(&self) -> Vec<&str> {
        self.stderr.lines().collect()
    }

    /// Everything a terminal shows: stderr (notices, errors, progress) then stdout (the table
    /// of results, on stdout unless `--json` or `--output inherit` took it).
    pub fn shown(&self) -> String {
        format!("{}{}", self.stderr, self.stdout)
    }

    /// Lines of [`Output::shown`].
    pub fn shown_lines(&self) -> Vec<String> {
        self.shown().lines().map(str::to_owned).collect()
    }

    /// Asserts the exit code.
    pub fn expect_code(&self, code: i32) -> &Self {
        assert_eq!(
            self.code(),
            Some(code),
            "unexpected exit code{}",
            self.describe()
        );
        self
    }
}

fn truncate(s: &str) -> String {
    const KEEP: usize = 2000;
    if s.len() <= 2 * KEEP {
        return s.to_string();
    }
    let mut head = KEEP;
    while !s.is_char_boundary(head) {
        head -= 1;
    }
    let mut tail = s.len() - KEEP;
    while !s.is_char_boundary(tail) {
        tail += 1;
    }
    format!(
        "{}\n… ({} bytes in all, middle cut) …\n{}",
        &s[..head],
        s.len(),
        &s[tail..]
    )
}

/// Printed text (what the terminal shows: [`Output::shown`]) with every run of whitespace made
/// one space: sentences under the table are wrapped.
pub fn prose(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A printed figure in its base unit (ns for a duration, bytes for a size): `+264.0` `ms`.
pub fn figure(number: &str, unit: &str) -> f64 {
    let x: f64 = number
        .trim_start_matches(['(', '+'])
        .parse()
        .unwrap_or_else(|_| panic!("not a number: {number:?}"));
    let scale = match unit.trim_end_matches([':', ',', ')']) {
        "ns" | "B" => 1.0,
        "µs" => 1e3,
        "KiB" => 1024.0,
        "ms" => 1e6,
        "MiB" => 1048576.0,
        "s" => 1e9,
        "GiB" => 1073741824.0,
        other => panic!("unit {other:?} of {number}"),
    };
    x * scale
}

/// The figure printed right before `words` in `sentence` (`+1.023 ms blocked`), if `words` is
/// there.
pub fn figure_before(sentence: &str, words: &str) -> Option<f64> {
    let (before, _) = sentence.split_once(words)?;
    let mut tokens = before.split_whitespace().rev();
    let unit = tokens.next()?;
    Some(figure(tokens.next()?, unit))
}

/// The figure printed right after `words` (`sys ≈ ` `+243 ms`).
pub fn figure_after(sentence: &str, words: &str) -> Option<f64> {
    let (_, after) = sentence.split_once(words)?;
    let mut tokens = after.split_whitespace();
    let number = tokens.next()?;
    Some(figure(number, tokens.next()?))
}

/// A coldtrace invocation under construction.
pub struct Ct {
    pub cmd: Command,
    shown: Vec<String>,
}

/// `coldtrace ARGS...` in `cwd`.
pub fn ct<I, S>(cwd: &Path, args: I) -> Ct
where
    I: IntoIterator<Item = S>,
    S: Into<OsString>,
{
    let mut cmd = Command::new(BIN);
    let mut shown = vec!["coldtrace".to_string()];
    for a in args {
        let a: OsString = a.into();
        let text = a.to_string_lossy();
        shown.push(if text.len() > 200 {
            format!("<{} bytes>", text.len())
        } else {
            text.into_owned()
        });
        cmd.arg(a);
    }
    cmd.current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .env_remove("NO_COLOR")
        // No boot marker in the user's state directory: a test that needs one sets its own.
        .env("COLDTRACE_STATE_DIR", "");
    shown.insert(0, format!("(cd {} &&", cwd.display()));
    Ct { cmd, shown }
}

/// Puts a session's autogroup at nice −20, then runs the command it is given.
const AHEAD_SCRIPT: &str = "echo -20 > /proc/self/autogroup 2>/dev/null; exec \"$0\" \"$@\"";

impl Ct {
    /// Runs coldtrace (and so every run) in a session of its own whose scheduler autogroup has
    /// nice −20 (`setsid`, `/proc/self/autogroup`; root), so that a loaded machine's other
    /// sessions do not fill its runs with waits for a CPU. A thread's own nice value would not
    /// do: with autogroups, the scheduler shares the CPUs between sessions first. Off root the
    /// autogroup keeps nice 0. Call it right after [`ct`] (it keeps the arguments, directory
    /// and environment, and gives stdin /dev/null again).
    pub fn ahead_of_other_sessions(self) -> Ct {
        self.wrapped(
            "setsid",
            &["sh", "-c", AHEAD_SCRIPT],
            "setsid (autogroup nice -20)",
        )
    }

    /// Runs coldtrace as the unprivileged user `nobody` (UID and GID 65534, no supplementary
    /// groups: `setpriv`; the caller must be root). Call it right after [`ct`] (it keeps the
    /// arguments, directory and environment); the directory must be writable by that user.
    pub fn run_as_nobody(self) -> Ct {
        let setpriv = ["--reuid=65534", "--regid=65534", "--clear-groups", "--"];
        self.wrapped("setpriv", &setpriv, "setpriv (as nobody)")
    }

    /// Runs coldtrace under a file-size limit of `kib` KiB (`ulimit -f`): one below the
    /// spawner's size keeps coldtrace from starting it (it then clones every run itself).
    pub fn under_file_size_limit(self, kib: u64) -> Ct {
        let script = format!("ulimit -f {kib}; exec \"$0\" \"$@\"");
        self.wrapped("sh", &["-c", &script], &format!("(ulimit -f {kib})"))
    }

    /// Runs coldtrace under an address-space limit of `kib` KiB (`ulimit -v`, RLIMIT_AS).
    pub fn under_address_space_limit(self, kib: u64) -> Ct {
        let script = format!("ulimit -v {kib}; exec \"$0\" \"$@\"");
        self.wrapped("sh", &["-c", &script], &format!("(ulimit -v {kib})"))
    }

    /// The same command run by `program ARGS…` (which ends by executing it), in the same
    /// directory and environment, stdin /dev/null; `shown` in its description.
    fn wrapped(self, program: &str, args: &[&str], shown: &str) -> Ct {
        let old = self.cmd;
        let mut cmd = Command::new(program);
        cmd.args(args).arg(old.get_program()).args(old.get_args());
        if let Some(dir) = old.get_current_dir() {
            cmd.current_dir(dir);
        }
        for (key, value) in old.get_envs() {
            match value {
                Some(v) => cmd.env(key, v),
                None => cmd.env_remove(key),
            };
        }
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut description = self.shown;
        description.insert(1, shown.into());
        Ct {
            cmd,
            shown: description,
        }
    }

    /// The command's stdin is `path` (instead of /dev/null).
    pub fn stdin_from(mut self, path: &Path) -> Ct {
        let file = std::fs::File::open(path).expect("open the stdin file");
        self.cmd.stdin(file);
        self.shown.push(format!("< {}", path.display()));
        self
    }

    /// The variable `key` set to `value` in coldtrace's environment.
    pub fn env(mut self, key: &str, value: &str) -> Ct {
        self.cmd.env(key, value);
        self.shown.insert(1, format!("{key}={value}"));
        self
    }

    pub fn shown(&self) -> String {
        format!("{})", self.shown.join(" "))
    }

    /// Runs to completion, killing coldtrace if it takes longer than `limit`.
    pub fn run_within(mut self, limit: Duration) -> Output {
        let command = self.shown();
        let started = Instant::now();
        let child = self
            .cmd
            .spawn()
            .unwrap_or_else(|e| panic!("cannot spawn {command}: {e}"));
        finish(child, command, started, limit)
    }

    /// Runs to completion within 30 s.
    pub fn run(self) -> Output {
        self.run_within(Duration::from_secs(30))
    }
}

/// Collects stdout/stderr of a spawned child and waits for it, killing it after `limit`.
pub fn finish(mut child: Child, command: String, started: Instant, limit: Duration) -> Output {
    let mut out = child.stdout.take();
    let mut err = child.stderr.take();
    let out_reader = std::thread::spawn(move || {
        let mut buf = Vec::new();
        if let Some(o) = out.as_mut() {
            let _ = o.read_to_end(&mut buf);
        }
        buf
    });
    let err_reader = std::thread::spawn(move || {
        let mut buf = Vec::new();
        if let Some(e) = err.as_mut() {
            let _ = e.read_to_end(&mut buf);
        }
        buf
    });
    let status = loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            break status;
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let status = child.wait().expect("wait");
            // Readers may block on a pipe kept open by a grandchild: do not join them.
            panic!(
                "{command} did not finish within {limit:?} (killed; status {status:?}): it hung"
            );
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let elapsed = started.elapsed();
    // A daemonised grandchild may keep the pipes open: give the readers a moment, no more.
    let join = |h: std::thread::JoinHandle<Vec<u8>>| -> String {
        let until = Instant::now() + Duration::from_secs(10);
        while !h.is_finished() && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(10));
        }
        if h.is_finished() {
            String::from_utf8_lossy(&h.join().unwrap_or_default()).into_owned()
        } else {
            "<pipe still held open by a descendant>".to_string()
        }
    };
    Output {
        command,
        status,
        stdout: join(out_reader),
        stderr: join(err_reader),
        elapsed,
    }
}

/// Every line of `DIR/runs.jsonl`, parsed (panics with the line on a bad one).
pub fn read_records(dir: &Path) -> Vec<Value> {
    let path = dir.join("runs.jsonl");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    text.lines()
        .enumerate()
        .map(|(i, line)| {
            serde_json::from_str(line).unwrap_or_else(|e| {
                panic!("{} line {}: not JSON ({e}): {line}", path.display(), i + 1)
            })
        })
        .collect()
}

/// `DIR/batch.json`, parsed.
pub fn read_batch(dir: &Path) -> Value {
    let path = dir.join("batch.json");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("{} is not JSON ({e}): {text}", path.display()))
}

/// Whether `v` looks like `2026-12-03T07:00:00.000Z` (RFC 3339, UTC, with a fraction or not).
pub fn is_rfc3339_utc(v: &str) -> bool {
    let b = v.as_bytes();
    let digits =
        |r: std::ops::Range<usize>| r.clone().all(|i| b.get(i).is_some_and(u8::is_ascii_digit));
    b.len() >= 20
        && digits(0..4)
        && b[4] == b'-'
        && digits(5..7)
        && b[7] == b'-'
        && digits(8..10)
        && b[10] == b'T'
        && digits(11..13)
        && b[13] == b':'
        && digits(14..16)
        && b[16] == b':'
        && digits(17..19)
        && v.ends_with('Z')
        && (b.len() == 20 || (b[19] == b'.' && digits(20..b.len() - 1) && b.len() > 21))
}

/// Writes an executable (or not) file.
pub fn write_file(path: &Path, contents: &[u8], mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, contents).expect("write file");
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
}

/// `(target triple dir name or None, target dir)` of the debug binary cargo built for us.
fn target_layout() -> (Option<String>, PathBuf) {
    let debug_exe = Path::new(env!("CARGO_BIN_EXE_coldtrace"));
    let profile_dir = debug_exe.parent().expect("binary has a parent dir");
    let base = profile_dir.parent().expect("profile dir has a parent");
    let name = base
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    if name.contains("-linux-") {
        let target_dir = base
            .parent()
            .expect("triple dir has a parent")
            .to_path_buf();
        (Some(name), target_dir)
    } else {
        (None, base.to_path_buf())
    }
}

/// Cargo arguments that select the same target and target dir as this test binary.
pub fn cargo_target_args(cmd: &mut Command) {
    let (triple, target_dir) = target_layout();
    if let Some(triple) = triple {
        cmd.arg("--target").arg(triple);
    }
    cmd.arg("--target-dir").arg(target_dir);
}

/// The shipped (release) binary, built once per test binary. Max RSS must be measured through
/// it: the debug binary's larger text raises the floor a vfork child inherits.
pub fn shipped_binary() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        let mut cmd = Command::new(env!("CARGO"));
        cmd.args(["build", "--release", "--quiet", "--bin", "coldtrace"])
            .current_dir(env!("CARGO_MANIFEST_DIR"));
        cargo_target_args(&mut cmd);
        let status = cmd.status().expect("cannot run cargo build --release");
        assert!(status.success(), "cargo build --release failed: {status}");
        // The release binary sits next to the debug one: …/debug/coldtrace → …/release/coldtrace.
        let debug_exe = Path::new(env!("CARGO_BIN_EXE_coldtrace"));
        let profile_dir = debug_exe.parent().unwrap();
        let release = profile_dir
            .parent()
            .unwrap()
            .join("release")
            .join(debug_exe.file_name().unwrap());
        assert!(
            release.is_file(),
            "release binary not found at {}",
            release.display()
        );
        release
    })
}

/// `spin-first MARKER MS`: spins MS ms of CPU when it can remove MARKER (the first run only).
pub const SPIN_FIRST: &str = r#"
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
static unsigned long long cpu_ns(void) {
    struct timespec t; clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return t.tv_sec * 1000000000ULL + t.tv_nsec;
}
int main(int argc, char **argv) {
    if (argc != 3) return 2;
    if (unlink(argv[1]) == 0) {
        unsigned long long end = cpu_ns() + atol(argv[2]) * 1000000ULL;
        volatile unsigned long x = 0;
        while (cpu_ns() < end) x++;
    }
    return 0;
}
"#;

/// `cc -O2 EXTRA -o DIR/NAME DIR/NAME.c`; a missing compiler fails with what to install.
pub fn compile(dir: &Path, name: &str, source: &str, extra: &[&str]) -> PathBuf {
    let src = dir.join(format!("{name}.c"));
    let out = dir.join(name);
    std::fs::write(&src, source).expect("write C source");
    let result = Command::new("cc")
        .args(["-O2"])
        .args(extra)
        .arg("-o")
        .arg(&out)
        .arg(&src)
        .output();
    match result {
        Err(e) => panic!(
            "cannot run `cc` ({e}): a C compiler is needed to build the workloads; install one \
             with `apt-get install gcc`"
        ),
        Ok(o) if !o.status.success() => panic!(
            "cc failed on {}: {}",
            src.display(),
            String::from_utf8_lossy(&o.stderr)
        ),
        Ok(_) => out,
    }
}

/// A file of `mib` MiB in `tmp` (the same varied 1 MiB block repeated), synced to storage so
/// that an eviction can make it cold; its path.
pub fn data_file(tmp: &TempDir, name: &str, mib: usize) -> String {
    let path = tmp.join(name);
    let block: Vec<u8> = (0..1 << 20).map(|i| (i * 31 % 251) as u8).collect();
    let mut all = Vec::with_capacity(mib << 20);
    for _ in 0..mib {
        all.extend_from_slice(&block);
    }
    std::fs::write(&path, all).unwrap();
    std::fs::File::open(&path).unwrap().sync_all().unwrap();
    path.display().to_string()
}

/// Whether the process of `/proc/PID` directory `proc_dir` runs exactly `argv`: it has exec'd
/// (a fork still running its parent's program has the parent's command line).
pub fn runs_exactly(proc_dir: &Path, argv: &[&str]) -> bool {
    let wanted: Vec<u8> = argv
        .iter()
        .flat_map(|a| [a.as_bytes(), b"\0"].concat())
        .collect();
    std::fs::read(proc_dir.join("cmdline")).is_ok_and(|c| c == wanted)
}

/// The `/proc/PID` directories of the processes that run exactly `argv` (see [`runs_exactly`]).
pub fn processes_running(argv: &[&str]) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| runs_exactly(p, argv))
        .collect()
}
