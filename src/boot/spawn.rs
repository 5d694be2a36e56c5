//! Starting the processes `boot run` needs — the batch (`coldtrace run`, with the armed
//! environment and working directory), the dynamic loader's library list, a reboot — through
//! the same vfork-and-execve spawner as every run, and waiting for them. Unmeasured.
#![forbid(unsafe_code)]

use coldtrace_syscalls::{ChildStack, Program, SpawnOptions};
use std::ffi::CString;
use std::os::fd::AsFd;

/// How a process ended: its exit code, or why it has none.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ended {
    /// It exited with this code.
    Code(i32),
    /// It did not exit (a signal, a failed start): why.
    Not(String),
}

impl Ended {
    /// The exit code, if it exited.
    pub fn code(&self) -> Option<i32> {
        match self {
            Ended::Code(c) => Some(*c),
            Ended::Not(_) => None,
        }
    }
}

fn c_string(text: &str) -> Result<CString, String> {
    CString::new(text).map_err(|_| format!("{text:?} holds a NUL byte"))
}

/// What to start.
pub struct Spawn<'a> {
    /// The program's path (not looked up).
    pub path: &'a str,
    /// argv, argv\[0\] included.
    pub argv: &'a [String],
    /// The environment, `NAME=value`.
    pub env: &'a [String],
    /// The working directory (`None`: this one).
    pub cwd: Option<&'a str>,
    /// Where its stdout goes (`None`: inherited).
    pub stdout: Option<std::os::fd::BorrowedFd<'a>>,
}

/// Starts it and waits until it ends.
pub fn run(spawn: &Spawn<'_>) -> Ended {
    let built = (|| {
        let path = c_string(spawn.path)?;
        let argv = spawn
            .argv
            .iter()
            .map(|a| c_string(a))
            .collect::<Result<_, _>>()?;
        let env = spawn
            .env
            .iter()
            .map(|e| c_string(e))
            .collect::<Result<_, _>>()?;
        let cwd = spawn.cwd.map(c_string).transpose()?;
        Ok::<_, String>((Program::new(path, argv, env), cwd))
    })();
    let (program, cwd) = match built {
        Ok(built) => built,
        Err(why) => return Ended::Not(why),
    };
    let mut stack = match ChildStack::new() {
        Ok(stack) => stack,
        Err(e) => return Ended::Not(format!("cannot map a stack to spawn from: {e}")),
    };
    let options = SpawnOptions {
        cwd: cwd.as_deref(),
        stdout: spawn.stdout,
        ..SpawnOptions::default()
    };
    let child = match program.spawn(&options, &mut stack) {
        Ok(child) => child,
        Err(e) => {
            return Ended::Not(format!(
                "cannot start {}: {} ({:?})",
                spawn.path, e.errno, e.stage
            ))
        }
    };
    match child.reap() {
        Ok((status, _)) => match (status.code(), status.signal()) {
            (Some(code), _) => Ended::Code(code),
            (None, Some(sig)) => Ended::Not(format!(
                "killed by {}",
                coldtrace_syscalls::Signal::from_raw(sig)
            )),
            (None, None) => Ended::Not(format!("ended with wait status {status:?}")),
        },
        Err(e) => Ended::Not(e.to_string()),
    }
}

/// Runs it with its stdout caught (at most 1 MiB), for a list to read.
pub fn output(spawn: Spawn<'_>) -> Result<String, String> {
    use std::io::Read;
    let (reader, writer) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)
        .map_err(|e| format!("pipe: {e}"))?;
    let reading = std::thread::spawn(move || {
        let mut text = Vec::new();
        let _ = std::fs::File::from(reader)
            .take(1 << 20)
            .read_to_end(&mut text);
        text
    });
    let ended = run(&Spawn {
        stdout: Some(writer.as_fd()),
        ..spawn
    });
    drop(writer);
    let text = reading.join().unwrap_or_default();
    match ended {
        Ended::Code(0) => Ok(String::from_utf8_lossy(&text).into_owned()),
        Ended::Code(c) => Err(format!("exited {c}")),
        Ended::Not(why) => Err(why),
    }
}
