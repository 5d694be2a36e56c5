//! The progress line as a person sees it: coldtrace under a pseudo-terminal (util-linux
//! `script`, an 80×24 pty), its output replayed on a small screen model (carriage return, erase
//! line, newline; colours ignored), read while runs are held open and after they end. Each run
//! blocks reading a FIFO until the test releases it, so every state is waited for, never timed.
//! Also: nothing but plain lines with `TERM=dumb`, `-q`, or off a terminal; the line without
//! colour with `NO_COLOR`; an eviction named while it runs.
#![forbid(unsafe_code)]

mod common;

use common::{ct, TempDir, BIN};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long any awaited state may take to appear (a liveness limit, not a measurement).
const PATIENCE: Duration = Duration::from_secs(60);

/// The terminal's lines after `bytes`: `\r` returns to column 0, `\n` starts a new line,
/// `ESC [ 2 K` erases the line, other escape sequences (colour) change nothing visible.
fn screen(bytes: &[u8]) -> Vec<String> {
    let text = String::from_utf8_lossy(bytes);
    let mut lines: Vec<Vec<char>> = vec![Vec::new()];
    let mut col = 0;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        let line = lines.last_mut().unwrap();
        match c {
            '\r' => col = 0,
            '\n' => {
                lines.push(Vec::new());
                col = 0;
            }
            '\x1b' => {
                let mut seq = String::new();
                for e in chars.by_ref() {
                    seq.push(e);
                    if e.is_ascii_alphabetic() && e != '[' {
                        break;
                    }
                }
                if seq == "[2K" {
                    line.clear();
                }
            }
            c => {
                while line.len() < col {
                    line.push(' ');
                }
                if col < line.len() {
                    line[col] = c;
                } else {
                    line.push(c);
                }
                col += 1;
            }
        }
    }
    lines.into_iter().map(|l| l.into_iter().collect()).collect()
}

/// coldtrace running under `script` in `dir`, its pty 80×24, its output collected as it comes.
struct OnTerminal {
    child: Child,
    output: Arc<Mutex<Vec<u8>>>,
    shown: String,
}

/// `ARGS` as one shell word each.
fn quoted(args: &[&str]) -> String {
    args.iter()
        .map(|a| format!("'{}'", a.replace('\'', r"'\''")))
        .collect::<Vec<_>>()
        .join(" ")
}

impl OnTerminal {
    fn start(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> OnTerminal {
        let inner = format!(
            "stty cols 80 rows 24; exec {} {}",
            quoted(&[BIN]),
            quoted(args)
        );
        let mut cmd = Command::new("script");
        cmd.args(["-qfec", &inner, "/dev/null"])
            .current_dir(dir)
            .env_remove("NO_COLOR")
            .env_remove("COLUMNS")
            .env("TERM", "xterm")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd
            .spawn()
            .expect("util-linux `script` runs coldtrace under a pseudo-terminal");
        let output = Arc::new(Mutex::new(Vec::new()));
        let mut stdout = child.stdout.take().unwrap();
        let sink = Arc::clone(&output);
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = stdout.read(&mut buf) {
                if n == 0 {
                    break;
                }
                sink.lock().unwrap().extend_from_slice(&buf[..n]);
            }
        });
        OnTerminal {
            child,
            output,
            shown: format!("script -qfec {inner:?} /dev/null"),
        }
    }

    fn bytes(&self) -> Vec<u8> {
        self.output.lock().unwrap().clone()
    }

    fn screen(&self) -> Vec<String> {
        screen(&self.bytes())
    }

    /// Waits until a line of the screen satisfies `test`; returns that line.
    fn await_line(&self, what: &str, test: impl Fn(&str) -> bool) -> String {
        let start = Instant::now();
        loop {
            if let Some(line) = self.screen().into_iter().find(|l| test(l)) {
                return line;
            }
            assert!(
                start.elapsed() < PATIENCE,
                "never saw {what} on the screen of {}:\n{}",
                self.shown,
                self.screen().join("\n")
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Waits for the end; the final screen.
    fn finish(mut self) -> (i32, Vec<String>, Vec<u8>) {
        let start = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                // The reader thread drains what is left.
                std::thread::sleep(Duration::from_millis(100));
                return (status.code().unwrap_or(-1), self.screen(), self.bytes());
            }
            if start.elapsed() > PATIENCE {
                let _ = self.child.kill();
                panic!("{} did not end:\n{}", self.shown, self.screen().join("\n"));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for OnTerminal {
    /// A failed test leaves nothing behind: `script` killed, its pty hangs up, coldtrace ends.
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// A FIFO each run of [`held`] blocks on until [`release`] writes a line.
fn fifo(dir: &TempDir) -> PathBuf {
    let path = dir.join("gate");
    let made = Command::new("mkfifo").arg(&path).status().expect("mkfifo");
    assert!(made.success());
    path
}

/// `read x < FIFO` until a line is read: a run that opens the FIFO while the previous
/// release's writer is still closing sees end-of-file, and opens it again.
fn held(fifo: &Path, var: &str) -> String {
    format!("until read {var} < {}; do :; done", fifo.display())
}

/// Lets the run that is reading `fifo` end (retries until a reader has it open).
fn release(fifo: &Path) {
    use std::os::unix::fs::OpenOptionsExt;
    let start = Instant::now();
    loop {
        // O_NONBLOCK: opening for writing fails (ENXIO) until a reader is there.
        let opened = std::fs::OpenOptions::new()
            .write(true)
            .custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32)
            .open(fifo);
        if let Ok(mut f) = opened {
            f.write_all(b"go\n").unwrap();
            return;
        }
        assert!(
            start.elapsed() < PATIENCE,
            "no run opened {}",
            fifo.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn is_progress(line: &str) -> bool {
    line.contains('▕') && line.contains('▏')
}

#[test]
fn the_line_shows_each_run_its_role_the_estimate_and_the_time_left() {
    let tmp = TempDir::new("tty-progress");
    let gate = fifo(&tmp);
    let cold = tmp.join("cold");
    std::fs::create_dir(&cold).unwrap();
    std::fs::write(cold.join("f"), b"some bytes").unwrap();
    let cold_arg = cold.display().to_string();
    let script = held(&gate, "x");
    let t = OnTerminal::start(
        tmp.path(),
        &[
            "run",
            "-n",
            "4",
            "--label",
            "a",
            "--label",
            "b",
            "--warmup",
            "1",
            "--evict",
            &cold_arg,
            "--cold-first-only",
            "--",
            "sh",
            "-c",
            &script,
        ],
        &[],
    );
    // From the start of the first run, before anything finished, under the notice.
    let line = t.await_line("the first draw", |l| {
        is_progress(l) && l.contains("1/5 warm-up")
    });
    assert!(line.starts_with("coldtrace ▕░"), "{line}");
    assert!(!line.contains("ETA"), "nothing finished yet: {line}");
    let screen = t.screen();
    let notice = screen
        .iter()
        .position(|l| l.contains("--label given twice"))
        .expect("the notice is said before the runs");
    let bar = screen.iter().position(|l| is_progress(l)).unwrap();
    assert!(notice < bar, "{screen:#?}");
    // A long run is redrawn from the waiting loop: its running time moves.
    let first_tick = t.await_line("a tick", |l| is_progress(l) && l.contains(" s"));
    t.await_line("a later tick", |l| {
        is_progress(l) && l.contains(" s") && l != first_tick
    });
    // One release at a time, each after the next run is on the screen: a second line written
    // before the released reader is gone would go to that reader and be lost.
    release(&gate);
    t.await_line("the cold first run", |l| l.contains("2/5 first (cold)"));
    release(&gate);
    let line = t.await_line("a warm run with the first run's time", |l| {
        l.contains("3/5 warm") && l.contains("first ")
    });
    assert!(line.contains("ETA "), "{line}");
    release(&gate);
    t.await_line("the fourth run", |l| l.contains("4/5 warm"));
    release(&gate);
    let line = t.await_line("the estimate of two warm runs", |l| {
        l.contains("5/5 warm") && l.contains(" ± ")
    });
    assert!(line.contains("mean ") && line.contains("ETA "), "{line}");
    assert!(line.chars().count() < 80, "{line}");
    release(&gate);
    let (code, screen, bytes) = t.finish();
    assert_eq!(code, 0, "{}", screen.join("\n"));
    // The line is cleared: the table stands where it was.
    assert!(
        !screen.iter().any(|l| is_progress(l)),
        "{}",
        screen.join("\n")
    );
    let title = screen
        .iter()
        .position(|l| l.contains("coldtrace: 4 runs of sh -c"))
        .expect("the table");
    assert!(
        screen[title + 2].trim_start().starts_with("metric"),
        "{}",
        screen.join("\n")
    );
    for line in &screen {
        assert!(line.chars().count() <= 80, "{line}");
    }
    assert!(bytes.windows(4).any(|w| w == b"\x1b[2K"), "it did draw");
}

#[test]
fn a_comparison_names_the_command_whose_run_it_is() {
    let tmp = TempDir::new("tty-compare");
    let gate = fifo(&tmp);
    let a = format!("sh -c '{}'", held(&gate, "x"));
    let b = format!("sh -c '{}'", held(&gate, "y"));
    let t = OnTerminal::start(tmp.path(), &["compare", "-n", "2", &a, &b], &[]);
    let line = t.await_line("command 0", |l| is_progress(l) && l.contains("1/4 first"));
    assert!(line.starts_with("[0] sh -c 'until read x"), "{line}");
    release(&gate);
    let line = t.await_line("command 1", |l| is_progress(l) && l.contains("2/4 first"));
    assert!(line.starts_with("[1] sh -c 'until read y"), "{line}");
    release(&gate);
    let line = t.await_line("command 0 again", |l| l.contains("3/4 warm"));
    assert!(
        line.starts_with("[0] ") && line.contains("first "),
        "{line}"
    );
    release(&gate);
    t.await_line("command 1 again", |l| l.contains("4/4 warm"));
    release(&gate);
    let (code, screen, _) = t.finish();
    assert_eq!(code, 0, "{}", screen.join("\n"));
    assert!(!screen.iter().any(|l| is_progress(l)));
    assert!(screen.iter().any(|l| l.contains("2 commands compared")));
}

/// Everything coldtrace wrote to the pty for a quick batch, with `env` and `args`.
fn quick(args: &[&str], env: &[(&str, &str)]) -> (Vec<String>, Vec<u8>) {
    let tmp = TempDir::new("tty-quick");
    let mut all = vec!["run", "-n", "3"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--", "true"]);
    let (code, screen, bytes) = OnTerminal::start(tmp.path(), &all, env).finish();
    assert_eq!(code, 0, "{}", screen.join("\n"));
    (screen, bytes)
}

/// Whether `bytes` set a colour or bold (`ESC [ … m`).
fn has_colour(bytes: &[u8]) -> bool {
    let text = String::from_utf8_lossy(bytes);
    text.split('\x1b').skip(1).any(|seq| {
        let body: String = seq
            .chars()
            .take_while(|c| !c.is_ascii_alphabetic())
            .collect();
        seq[body.len()..].starts_with('m') && body.starts_with('[')
    })
}

#[test]
fn a_dumb_terminal_gets_no_escape_code_and_no_color_an_uncoloured_line() {
    let (_, bytes) = quick(&[], &[]);
    assert!(
        has_colour(&bytes),
        "a capable terminal gets the line and bold"
    );
    let (screen, bytes) = quick(&[], &[("TERM", "dumb")]);
    assert!(
        !bytes.contains(&0x1b),
        "{}",
        String::from_utf8_lossy(&bytes)
    );
    assert!(!screen.iter().any(|l| is_progress(l)));
    assert!(screen.iter().any(|l| l.contains("3 runs of true")));
    // NO_COLOR is about colour: the line is drawn (and cleared), as hyperfine keeps its bar.
    let (screen, bytes) = quick(&[], &[("NO_COLOR", "1")]);
    let text = String::from_utf8_lossy(&bytes);
    assert!(!has_colour(&bytes), "{text:?}");
    assert!(
        text.contains("coldtrace ▕") && text.contains("1/3 first"),
        "{text:?}"
    );
    assert!(screen.iter().any(|l| l.contains("3 runs of true")));
}

#[test]
fn an_eviction_is_named_on_the_line_while_it_runs() {
    let tmp = TempDir::new("tty-evict");
    std::fs::create_dir(tmp.join("cold")).unwrap();
    std::fs::write(tmp.join("cold/f"), b"some bytes").unwrap();
    let args = ["run", "-n", "3", "--evict", "cold", "--", "true"];
    let (code, screen, bytes) = OnTerminal::start(tmp.path(), &args, &[]).finish();
    assert_eq!(code, 0, "{}", screen.join("\n"));
    let text = String::from_utf8_lossy(&bytes);
    // The tree is walked once, at the first run; each eviction counts its files.
    assert!(
        text.contains(" 1/3 first (cold) · walking 0 files "),
        "{text:?}"
    );
    assert!(
        text.contains(" 1/3 first (cold) · evicting 0/1 files "),
        "{text:?}"
    );
    assert!(text.contains(" 2/3 cold · evicting 0/1 files "), "{text:?}");
    assert_eq!(text.matches("walking").count(), 1, "{text:?}");
}

#[test]
fn quiet_prints_nothing_on_the_terminal() {
    let (_, bytes) = quick(&["-q"], &[]);
    assert!(bytes.is_empty(), "{}", String::from_utf8_lossy(&bytes));
}

#[test]
fn off_a_terminal_there_is_no_line_and_no_escape() {
    let tmp = TempDir::new("no-tty");
    let out = ct(
        tmp.path(),
        ["run", "-n", "3", "-n", "3", "--", "sleep", "1.2"],
    )
    .run();
    out.expect_code(0);
    assert!(
        !out.stderr.contains('\r') && !out.stderr.contains('\x1b') && !out.stderr.contains('▕'),
        "{}",
        out.describe()
    );
    assert!(
        out.stderr.contains("-n/--runs given twice"),
        "{}",
        out.describe()
    );
    // The table is the result, on stdout, with no escape either.
    assert!(
        out.stdout.starts_with("coldtrace: 3 runs of sleep"),
        "{}",
        out.describe()
    );
    assert!(!out.stdout.contains('\x1b'), "{}", out.describe());
}

#[test]
fn the_screen_model_overwrites_and_erases() {
    assert_eq!(
        screen(b"abc\rX\n\x1b[1mbold\x1b[0m\rgone\x1b[2Kkept\r\x1b[2Knew"),
        ["Xbc", "new"]
    );
    assert_eq!(screen(b"gone\x1b[2Kkept"), ["    kept"]);
}
