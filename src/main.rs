//! `coldtrace`: thin — parse, run, map to an exit code, one error line on failure.
//! Nothing but that: every decision is in the library (`cli` and below).
#![forbid(unsafe_code)]

use coldtrace::cli;
use coldtrace::text::escape_controls;
use std::fmt::Write as _;
use std::io::Write;
use std::process::ExitCode;

// Out of memory (an address-space limit, a refused overcommit), std would abort with SIGABRT
// after its own line; coldtrace says one line of its own and exits 125 like any error of its
// own. Every run recorded before then is already whole in runs.jsonl (each line one write).
#[global_allocator]
static ALLOCATOR: coldtrace_syscalls::ExitOnNull =
    coldtrace_syscalls::ExitOnNull::new(say_out_of_memory, 125);

/// Writes the out-of-memory line to stderr without allocating: formatted into a buffer on the
/// stack, written with one write(2).
fn say_out_of_memory(size: usize) {
    let mut line = StackLine::default();
    let _ = write!(
        line,
        "coldtrace: error: out of memory: {size} bytes could not be allocated"
    );
    let limit = rustix::process::getrlimit(rustix::process::Resource::As).current;
    let _ = match limit {
        Some(bytes) => write!(
            line,
            " under an address-space limit of {} KiB (ulimit -v): raise it",
            bytes / 1024
        ),
        None => write!(line, ": free some memory"),
    };
    let _ = writeln!(line, "; records already written are kept");
    let _ = rustix::io::write(rustix::stdio::stderr(), line.text());
}

/// A line of at most 256 bytes on the stack (the rest is cut).
struct StackLine {
    bytes: [u8; 256],
    len: usize,
}

impl Default for StackLine {
    fn default() -> Self {
        StackLine {
            bytes: [0; 256],
            len: 0,
        }
    }
}

impl StackLine {
    fn text(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}

impl std::fmt::Write for StackLine {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        let room = &mut self.bytes[self.len..];
        let n = s.len().min(room.len());
        room[..n].copy_from_slice(&s.as_bytes()[..n]);
        self.len += n;
        Ok(())
    }
}

// A closed or full stderr must not abort coldtrace (std's `eprintln!` panics): ignore the error.
macro_rules! eprintln {
    ($($arg:tt)*) => {{ let _ = writeln!(std::io::stderr(), $($arg)*); }};
}

fn main() -> ExitCode {
    let mut argv = std::env::args_os();
    let invoked = argv.next();
    let args: Vec<_> = argv.collect();
    let command = match cli::parse_invoked(invoked.as_deref(), args) {
        Ok(command) => command,
        Err(e) => {
            eprintln!("coldtrace: error: {e}");
            return ExitCode::from(125);
        }
    };
    match cli::execute(command) {
        Ok(output) => {
            if !output.stdout.is_empty() {
                let mut stdout = std::io::stdout().lock();
                // A closed pipe (`coldtrace … --json | head`) is not an error of ours.
                if let Err(e) = stdout
                    .write_all(output.stdout.as_bytes())
                    .and_then(|()| stdout.flush())
                {
                    if e.kind() != std::io::ErrorKind::BrokenPipe {
                        eprintln!("coldtrace: error: cannot write to stdout: {e}");
                        return ExitCode::from(125);
                    }
                }
            }
            ExitCode::from(output.exit_code)
        }
        Err(e) => {
            // Paths and names in the message are the user's: one line, whatever they hold.
            eprintln!("coldtrace: error: {}", escape_controls(&e.message));
            ExitCode::from(e.exit_code)
        }
    }
}
