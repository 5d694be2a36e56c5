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

/// What `main` prints before every usage error, on the same line.
const ERROR_PREFIX: &str = "coldtrace: error: ";

/// The columns a usage error's line fits, [`ERROR_PREFIX`] included.
const WIDTH: usize = 80;

/// A usage error that quotes `given`, something the user typed: the first of `forms` (each a
/// message made around the quoted text) whose line fits 80 columns, or, when none does, the
/// last one with `given` shortened with `…` until it fits.
pub(crate) fn usage_fitting(given: &str, forms: &[&dyn Fn(&str) -> String]) -> UsageError {
    use crate::view::units::{display_width, shorten};
    let given = crate::text::escape_controls(given);
    let fits = |message: &str| display_width(ERROR_PREFIX) + display_width(message) <= WIDTH;
    if let Some(message) = forms.iter().map(|form| form(&given)).find(|m| fits(m)) {
        return usage(message);
    }
    let Some(last) = forms.last() else {
        return usage(given);
    };
    let around = display_width(&last(""));
    let room = WIDTH
        .saturating_sub(display_width(ERROR_PREFIX) + around)
        .max(2);
    usage(last(&shorten(&given, room)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_quoted_text_too_long_for_the_line_is_shortened_to_fit() {
        let form = |s: &str| format!("unknown thing '{s}'; see the help");
        let short = usage_fitting("abc", &[&form]);
        assert_eq!(short.0, "unknown thing 'abc'; see the help");
        let long = usage_fitting(&"x".repeat(200), &[&form]);
        assert_eq!(
            ERROR_PREFIX.len() + long.0.chars().count(),
            80,
            "{}",
            long.0
        );
        assert!(long.0.contains("xx…'; see the help"), "{}", long.0);
    }

    #[test]
    fn the_first_form_that_fits_is_chosen() {
        let wide = |s: &str| {
            format!(
                "{s}: a long explanation of what went wrong {}",
                "-".repeat(40)
            )
        };
        let narrow = |s: &str| format!("{s}: wrong");
        assert_eq!(usage_fitting("v", &[&wide, &narrow]).0, "v: wrong");
        assert!(usage_fitting("v", &[&narrow, &wide]).0 == "v: wrong");
    }
}
