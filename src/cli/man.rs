//! `coldtrace man`: the manual page, coldtrace(1) in roff (man(7) macros), generated from the
//! option table like every `--help`, so the two cannot drift. Text only; no option is named here.
//!
//! Layout: NAME, SYNOPSIS (every subcommand's usage), DESCRIPTION, SUBCOMMANDS (each one's
//! summary, about and epilogue), OPTIONS by category (each option once, with the subcommands
//! that take it), SEE ALSO.
#![forbid(unsafe_code)]

use crate::cli::help;
use crate::cli::parsed::Command;
use crate::cli::table::{self, Category, OptSpec, Sub};
use crate::cli::usage::{usage, UsageError};
use std::ffi::OsString;
use std::fmt::Write;

/// Parses `coldtrace man` (no operand).
pub fn parse_man(args: Vec<OsString>) -> Result<Command, UsageError> {
    let read = crate::cli::args::read(Sub::Man, args)?;
    if let Some(kind) = read.help {
        return Ok(Command::Help(help::help(Sub::Man, kind)));
    }
    if read.version {
        return Ok(Command::Version);
    }
    if let Some(extra) = read.operands.first() {
        return Err(usage(format!(
            "man takes no operand, got '{}'; read the page with man -l <(coldtrace man)",
            extra.to_string_lossy()
        )));
    }
    Ok(Command::Help(page()))
}

/// Text made safe in roff: a backslash is `\e`, a hyphen-minus `\-` (so that option names
/// are typed and searched as ASCII hyphens), and a line that would start with `.` or `'` (a
/// request) is protected with `\&`.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\e"),
            '-' => out.push_str("\\-"),
            c => out.push(c),
        }
    }
    if out.starts_with('.') || out.starts_with('\'') {
        out.insert_str(0, "\\&");
    }
    out
}

/// `text` with `` `code` `` spans in bold, the rest escaped.
fn prose(text: &str) -> String {
    let mut out = String::new();
    for (i, part) in text.split('`').enumerate() {
        if i % 2 == 1 {
            let _ = write!(out, "\\fB{}\\fR", escape(part));
        } else {
            out.push_str(&escape(part));
        }
    }
    if out.starts_with("\\fB") || out.starts_with("\\&") {
        out
    } else if out.starts_with('.') || out.starts_with('\'') {
        format!("\\&{out}")
    } else {
        out
    }
}

/// The whole page.
pub fn page() -> String {
    let mut out = format!(
        ".TH COLDTRACE 1 \"\" \"coldtrace {}\" \"User Commands\"\n",
        env!("CARGO_PKG_VERSION")
    );
    out.push_str(".SH NAME\ncoldtrace \\- run a command and record exactly how it ran\n");
    out.push_str(".SH SYNOPSIS\n.nf\n");
    for s in table::subcommands() {
        let _ = writeln!(
            out,
            "\\fBcoldtrace {}\\fR {}",
            s.name,
            escape(usage_rest(s.usage))
        );
    }
    out.push_str("\\fBcoldtrace help\\fR [\\fISUBCOMMAND\\fR]\n.fi\n");
    let _ = writeln!(out, ".SH DESCRIPTION\n{}", prose(table::ABOUT));
    out.push_str(".SH SUBCOMMANDS\n");
    for s in table::subcommands() {
        let _ = writeln!(out, ".SS \"coldtrace {}\"\n{}.", s.name, prose(s.summary));
        let _ = writeln!(out, ".PP\n{}", prose(s.about));
        if !s.epilogue.is_empty() {
            let _ = writeln!(out, ".PP\n{}", prose(s.epilogue));
        }
    }
    out.push_str(".SH OPTIONS\n");
    for category in Category::ALL {
        let options: Vec<&OptSpec> = table::options()
            .filter(|o| o.category == category)
            .collect();
        if options.is_empty() {
            continue;
        }
        let _ = writeln!(out, ".SS \"{}\"", escape(category.title()));
        for o in options {
            out.push_str(&entry(o));
        }
    }
    out.push_str(
        ".SH SEE ALSO\n\\fBtime\\fR(1), \\fBperf\\-stat\\fR(1), \\fBhyperfine\\fR(1), \
         \\fBgetrusage\\fR(2), \\fBwait4\\fR(2), \\fBcachestat\\fR(2), \\fBproc\\fR(5)\n",
    );
    out
}

/// The usage line without the subcommand's name.
fn usage_rest(usage: &str) -> &str {
    usage.split_once(' ').map_or("", |(_, rest)| rest)
}

/// One option: `.TP`, its names in bold and values in italics, then its description and the
/// subcommands that take it.
fn entry(o: &OptSpec) -> String {
    let mut names: Vec<String> = o.shorts.iter().map(|c| format!("\\fB\\-{c}\\fR")).collect();
    names.extend(o.implied.iter().map(|(c, _)| format!("\\fB\\-{c}\\fR")));
    names.push(format!("\\fB{}\\fR", escape(o.long)));
    let mut line = names.join(", ");
    for value in o.values {
        let _ = write!(line, " \\fI{}\\fR", escape(value));
    }
    if let Some(value) = o.optional_value {
        let _ = write!(line, "[=\\fI{}\\fR]", escape(value));
    }
    let subs: Vec<&str> = o
        .subcommands
        .iter()
        .map(|&s| table::subcommand(s).name)
        .collect();
    let taken = if o.subcommands.len() == table::subcommands().count() {
        "every subcommand".to_string()
    } else {
        subs.join(", ")
    };
    let mut text = prose(o.description);
    if !o.choices.is_empty() {
        let _ = write!(text, " One of: {}.", escape(&o.choices.join(", ")));
    }
    format!(".TP\n{line}\n{text} ({})\n", escape(&taken))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The requests the page may use (man(7)): anything else at the start of a line is a bug.
    const REQUESTS: [&str; 7] = [".TH", ".SH", ".SS", ".PP", ".TP", ".nf", ".fi"];

    #[test]
    fn every_line_is_a_known_request_or_text_that_cannot_be_taken_for_one() {
        let text = page();
        assert!(text.starts_with(".TH COLDTRACE 1 "));
        for line in text.lines() {
            if line.starts_with('.') {
                let request = line.split(' ').next().unwrap_or("");
                assert!(REQUESTS.contains(&request), "unknown request: {line}");
            }
            assert!(
                !line.starts_with('\''),
                "a line taken for a request: {line}"
            );
            assert!(
                !line.is_empty(),
                "a blank line is a paragraph break in roff"
            );
            for (i, _) in line.match_indices('\\') {
                let next = line[i + 1..].chars().next().unwrap_or(' ');
                assert!(
                    "-efB&IR\\".contains(next),
                    "unknown escape \\{next} in {line}"
                );
            }
        }
        for section in [
            "NAME",
            "SYNOPSIS",
            "DESCRIPTION",
            "SUBCOMMANDS",
            "OPTIONS",
            "SEE ALSO",
        ] {
            assert!(text.contains(&format!(".SH {section}\n")), "{section}");
        }
    }

    #[test]
    fn every_option_and_subcommand_of_the_table_is_on_the_page() {
        let text = page();
        for o in table::options() {
            let long = format!("\\fB{}\\fR", escape(o.long));
            let at = text.find(&long).unwrap_or_else(|| panic!("no {}", o.long));
            assert!(
                text[..at].rfind(".TP\n").is_some(),
                "{} is not an entry",
                o.long
            );
            for c in o.shorts {
                assert!(text.contains(&format!("\\fB\\-{c}\\fR")), "-{c}");
            }
            assert!(
                text.contains(&prose(o.description)),
                "{}'s description",
                o.long
            );
        }
        for s in table::subcommands() {
            assert!(
                text.contains(&format!(".SS \"coldtrace {}\"", s.name)),
                "{}",
                s.name
            );
        }
        assert!(text.contains("One of: null, pipe, inherit."));
    }

    #[test]
    fn roff_specials_are_escaped() {
        assert_eq!(escape("--runs"), "\\-\\-runs");
        assert_eq!(escape("a\\b"), "a\\eb");
        assert_eq!(escape(".hidden"), "\\&.hidden");
        assert_eq!(prose("use `-o DIR` here"), "use \\fB\\-o DIR\\fR here");
        assert_eq!(prose("'quoted"), "\\&'quoted");
    }
}
