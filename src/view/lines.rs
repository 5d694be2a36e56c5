//! The plain sentences under a table (why the first run was slow, what stayed cached, what was
//! rejected, the context): each a [`Note`], folded to the table's width for a terminal or one
//! list item in Markdown. It lays out text; what to say is decided by the table that calls it.
#![forbid(unsafe_code)]

use crate::text::escape_controls;
use crate::view::style::Style;
use crate::view::units::{fold, shorten};
use std::fmt::Write;

/// What stands before a note's text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Lead {
    /// Nothing.
    None,
    /// `LABEL: `, the label in the warning colour: something that needs a second look.
    Warning(String),
    /// `MARK ` (`✗`), in the warning colour.
    Mark(String),
}

/// One sentence under a table, and lines quoted verbatim under it (a command's stderr).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Note {
    /// Before the text.
    pub lead: Lead,
    /// The sentence.
    pub text: String,
    /// Lines shown as they are (already escaped), each cut to the width.
    pub quoted: Vec<String>,
}

impl Note {
    /// A sentence.
    pub fn plain(text: impl Into<String>) -> Note {
        Note {
            lead: Lead::None,
            text: text.into(),
            quoted: Vec::new(),
        }
    }

    /// `LABEL: TEXT`, the label in the warning colour.
    pub fn warning(label: &str, text: impl Into<String>) -> Note {
        Note {
            lead: Lead::Warning(label.to_string()),
            ..Note::plain(text)
        }
    }

    /// `MARK TEXT`, the mark in the warning colour.
    pub fn marked(mark: &str, text: impl Into<String>) -> Note {
        Note {
            lead: Lead::Mark(mark.to_string()),
            ..Note::plain(text)
        }
    }

    /// The lead as shown (coloured or not).
    fn lead(&self, style: &Style) -> String {
        match &self.lead {
            Lead::None => String::new(),
            Lead::Warning(label) => format!("{}: ", style.warn(label)),
            Lead::Mark(mark) => format!("{} ", style.warn(mark)),
        }
    }

    /// Writes `  LEAD TEXT` folded at `width` (later lines indented by four spaces), then the
    /// quoted lines as `    | line`. The text and the quoted lines are escaped here, whoever
    /// built them: a path, a label or a kernel name in a note cannot break its line or drive
    /// the terminal (escaping twice changes nothing).
    pub fn write(&self, out: &mut String, style: &Style, width: usize) {
        let text = format!("{}{}", self.lead(style), escape_controls(&self.text));
        for line in fold(&text, width, "  ", "    ") {
            let _ = writeln!(out, "{line}");
        }
        for line in &self.quoted {
            let line = format!("    | {}", escape_controls(line));
            let _ = writeln!(out, "{}", shorten(&line, width));
        }
    }

    /// The note as one line of plain text (`LABEL: TEXT`), control characters escaped: what a
    /// picture draws.
    pub fn plain_text(&self) -> String {
        let text = format!("{}{}", self.lead(&Style { on: false }), self.text);
        escape_controls(&text)
    }

    /// Writes the note as one Markdown list item, the quoted lines as a code block under it.
    pub fn markdown(&self, out: &mut String) {
        let text = format!("{}{}", self.lead(&Style { on: false }), self.text);
        let _ = writeln!(out, "- {}", crate::text::markdown_text(&text));
        if !self.quoted.is_empty() {
            out.push('\n');
            for line in &self.quoted {
                let _ = writeln!(out, "      {}", escape_controls(line));
            }
            out.push('\n');
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::view::units::display_width;

    #[test]
    fn every_line_fits_and_later_lines_are_indented() {
        let text = "residency unknown for 38534 of 38534 files: 38534 cachestat refused \
                    with EPERM (no write permission); attribution needs write access or root";
        for width in [40, 80, 120] {
            let mut out = String::new();
            Note::warning("cached before/after unknown", text).write(
                &mut out,
                &Style { on: true },
                width,
            );
            let lines: Vec<&str> = out.lines().collect();
            assert!(lines.len() >= 2, "{out}");
            assert!(lines[0].starts_with("  \x1b[33mcached before/after unknown\x1b[0m: "));
            for line in &lines[1..] {
                assert!(
                    line.starts_with("    ") && !line.starts_with("     "),
                    "{out}"
                );
            }
            for line in &lines {
                assert!(display_width(line) <= width, "{line}");
            }
        }
    }

    #[test]
    fn markdown_is_one_item_with_the_quoted_lines_as_code() {
        let mut out = String::new();
        let note = Note {
            quoted: vec!["Traceback".into()],
            ..Note::marked("✗", "the first run was rejected")
        };
        note.markdown(&mut out);
        assert_eq!(out, "- ✗ the first run was rejected\n\n      Traceback\n\n");
    }
}
