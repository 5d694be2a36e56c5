//! Emphasis on a terminal: bold and warning colours, only where colour is wanted.
//! It decorates strings; deciding what to say is the tables' job.
#![forbid(unsafe_code)]

/// Whether to colour stderr: a terminal, `NO_COLOR` unset or empty, `TERM` not `dumb`.
pub fn use_colour() -> bool {
    crate::view::terminal::escapes_allowed(crate::view::terminal::Stream::Stderr)
}

/// Bold and warning colour, or plain text when colour is off.
pub struct Style {
    /// Whether to emit escape codes.
    pub on: bool,
}

impl Style {
    /// Bold.
    pub fn bold(&self, s: &str) -> String {
        if self.on {
            format!("\x1b[1m{s}\x1b[0m")
        } else {
            s.to_string()
        }
    }

    /// Yellow, for what needs a second look.
    pub fn warn(&self, s: &str) -> String {
        if self.on {
            format!("\x1b[33m{s}\x1b[0m")
        } else {
            s.to_string()
        }
    }

    /// The warning that a batch was interrupted by `signal`.
    pub fn interrupted(&self, signal: coldtrace_syscalls::Signal) -> String {
        self.warn(&format!(
            "interrupted by {signal}: the summary covers the runs that finished"
        ))
    }
}
