//! The program a batch runs: argv\[0\] resolved through PATH in the parent, its arguments and
//! environment as C strings, and the exit codes of a start failure. No spawning here.
#![forbid(unsafe_code)]

use crate::batch::error::BatchError;
use crate::plan::Plan;
use coldtrace_syscalls::spawn::ChildStage;
use coldtrace_syscalls::{find_program, Errno, Program};
use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;

/// Exit code for a program that cannot be started (GNU time's convention).
pub fn exit_code_for_start_failure(errno: Errno) -> u8 {
    if errno == Errno::NOENT || errno == Errno::NOTDIR {
        127
    } else {
        126
    }
}

/// Exit code for a run that did not start: 125 when coldtrace itself could not create the
/// child (`clone` failed, e.g. EMFILE for the pidfd, EAGAIN at the process limit; or its own
/// signal mask could not be restored after the clone), else as
/// [`exit_code_for_start_failure`].
pub(crate) fn exit_code_for_failed_start(stage: ChildStage, errno: Errno) -> u8 {
    if matches!(stage, ChildStage::Clone | ChildStage::RestoreCallerMask) {
        125
    } else {
        exit_code_for_start_failure(errno)
    }
}

/// Why `program` did not start, in one line, with what to do when the reason is a script
/// without a `#!` line (ENOEXEC: the kernel cannot run it; a shell would, as execvp does, but
/// coldtrace runs no shell unless asked).
pub(crate) fn cannot_start(program: &str, errno: Errno) -> String {
    let hint = if errno == Errno::NOEXEC {
        "; a script needs a #! line (#!/bin/sh), or a shell to run it: -S, or sh SCRIPT"
    } else {
        ""
    };
    format!("{program}: cannot start: {errno}{hint}")
}

pub(crate) fn lossy(s: &std::ffi::OsStr) -> String {
    s.to_string_lossy().into_owned()
}

fn cstring(bytes: &[u8], what: &str) -> Result<CString, BatchError> {
    CString::new(bytes).map_err(|_| {
        BatchError::own(format!(
            "{what} contains a NUL byte, which no program can receive"
        ))
    })
}

/// Builds the program: resolves argv\[0\] through PATH in the parent.
pub(crate) fn resolve(plan: &Plan) -> Result<Program, BatchError> {
    let name = plan.argv[0].as_bytes();
    let path_var = std::env::var_os("PATH");
    let path = find_program(name, path_var.as_ref().map(|p| p.as_bytes())).map_err(|errno| {
        BatchError {
            message: match errno {
                Errno::NOENT => format!(
                    "{}: command not found (searched PATH)",
                    lossy(&plan.argv[0])
                ),
                Errno::ACCES => format!(
                    "{}: found but not executable (a directory, or no execute permission)",
                    lossy(&plan.argv[0])
                ),
                other => format!("{}: cannot run: {other}", lossy(&plan.argv[0])),
            },
            exit_code: exit_code_for_start_failure(errno),
            cannot_start: Some(errno),
        }
    })?;
    let mut argv = Vec::with_capacity(plan.argv.len());
    for arg in &plan.argv {
        argv.push(cstring(arg.as_bytes(), "an argument")?);
    }
    let program = Program::new(path, argv, environment()?);
    Ok(
        if plan.scripts_through_sh && !starts_as_a_program(program.path()) {
            program.scripts_through_shell()
        } else {
            program
        },
    )
}

/// Whether the file at `path` starts as one the kernel runs itself: an ELF image or a `#!`
/// line. Another (a script without `#!`) is run through `/bin/sh` where the plan says so,
/// in-process (the spawner cannot); unreadable, it is left to `execve`.
fn starts_as_a_program(path: &std::ffi::CStr) -> bool {
    use std::io::Read;
    let path = std::path::Path::new(std::ffi::OsStr::from_bytes(path.to_bytes()));
    let mut head = [0u8; 4];
    let read = std::fs::File::open(path).and_then(|mut f| f.read(&mut head));
    match read {
        Ok(n) => head[..n].starts_with(b"\x7fELF") || head[..n].starts_with(b"#!"),
        Err(_) => true,
    }
}

/// coldtrace's own environment, passed to the command exactly, as `KEY=VALUE` C strings.
fn environment() -> Result<Vec<CString>, BatchError> {
    std::env::vars_os()
        .map(|(k, v)| {
            let mut kv = k.as_bytes().to_vec();
            kv.push(b'=');
            kv.extend_from_slice(v.as_bytes());
            cstring(&kv, "an environment variable")
        })
        .collect()
}

/// `/bin/sh -c COMMAND` (for `--setup`, `--prepare`, `--conclude`, `--cleanup`: `flag`), with
/// coldtrace's environment.
pub(crate) fn sh_program(command: &std::ffi::OsStr, flag: &str) -> Result<Program, BatchError> {
    // The shell command as given, byte for byte.
    let argv = vec![
        cstring(b"sh", "")?,
        cstring(b"-c", "")?,
        cstring(command.as_bytes(), flag)?,
    ];
    Ok(Program::new(cstring(b"/bin/sh", "")?, argv, environment()?))
}
