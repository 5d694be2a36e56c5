//! The progress line on a terminal (`run i/N, last wall`) and notices as they happen, drawn
//! between runs. It draws a batch's events; it never decides anything about the batch.
#![forbid(unsafe_code)]

use crate::batch::Observer;
use crate::view::units::human_ns;
use std::io::Write;

/// Shows `run i/N, last wall` on a terminal, and notices unless quiet.
pub struct ProgressLine {
    on: bool,
    quiet: bool,
    drawn: bool,
}

impl ProgressLine {
    /// Progress shown only on a terminal and without `--quiet`; notices only without `--quiet`.
    pub fn new(quiet: bool) -> ProgressLine {
        ProgressLine {
            on: !quiet
                && crate::view::terminal::escapes_allowed(crate::view::terminal::Stream::Stderr),
            quiet,
            drawn: false,
        }
    }
}

/// A notice as printed: `coldtrace: ` and the text folded to `width`, indented after the first
/// line.
pub fn notice_text(text: &str, width: usize) -> String {
    let mut out = String::new();
    for line in crate::view::units::fold(text, width, "coldtrace: ", "  ") {
        out.push_str(&line);
        out.push('\n');
    }
    out
}

impl Observer for ProgressLine {
    fn run_finished(&mut self, done: u64, total: u64, last_wall_ns: Option<u64>) {
        if self.on && total > 1 {
            let wall = last_wall_ns.map_or("—".to_string(), |ns| human_ns(ns as f64));
            eprint!("\rcoldtrace: run {done}/{total}  last {wall}   ");
            self.drawn = true;
            let _ = std::io::stderr().flush();
        }
    }

    fn notice(&mut self, text: &str) {
        if !self.quiet {
            let width = crate::view::terminal::width(crate::view::terminal::Stream::Stderr);
            eprint!(
                "{}",
                notice_text(&crate::text::escape_controls(text), width)
            );
        }
    }

    fn finished(&mut self) {
        if self.drawn {
            eprint!("\r\x1b[2K");
            self.drawn = false;
        }
    }
}
