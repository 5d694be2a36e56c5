//! `coldtrace`: thin — parse, run, map to an exit code, one error line on failure.
//! Nothing but that: every decision is in the library (`cli` and below).
#![forbid(unsafe_code)]

use coldtrace::cli;
use coldtrace::text::escape_controls;
use std::io::Write;
use std::process::ExitCode;

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
