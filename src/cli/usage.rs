//! The usage error: one line that names the flag and what is allowed, exit code 125. Every
//! usage error of the command line is made by [`usage`]; it reads and checks no argument itself.
#![forbid(unsafe_code)]

use std::fmt;

/// A usage error: one line, exit code 125.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageError(pub String);

impl fmt::Display for UsageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Every usage error is made here, and stays one line whatever the user typed: control
/// characters in the message (a newline, a tab, an escape inside an echoed argument) are
/// written as Rust escapes (`\n`, `\u{1b}`), so a value quoted back cannot break the line or
/// drive the terminal.
pub(crate) fn usage(message: impl Into<String>) -> UsageError {
    UsageError(crate::text::escape_controls(&message.into()))
}
