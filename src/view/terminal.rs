//! What the terminal allows: its width, and whether escape codes (colour, a redrawn progress
//! line) may be written to it. It asks the terminal and the environment; it draws nothing.
//!
//! Width: `COLUMNS` when set to a number (so a pipe or a test can ask for 120), else the
//! terminal's own (`TIOCGWINSZ`, [tcgetwinsize(3)](https://man7.org/linux/man-pages/man3/tcgetwinsize.3.html)),
//! else 80. Escape codes: only to a terminal, and never with `NO_COLOR` set (<https://no-color.org>)
//! or `TERM=dumb` (a terminal that cannot move the cursor or change colour).
#![forbid(unsafe_code)]

use std::io::IsTerminal;
use std::os::fd::AsFd;

/// The narrowest width a table is laid out for: below it, lines are cut.
pub const MIN_WIDTH: usize = 40;
/// The width when nothing says otherwise (not a terminal, no `COLUMNS`).
pub const DEFAULT_WIDTH: usize = 80;

/// Which of coldtrace's own streams a piece of output goes to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stream {
    /// Tables of `report` and `context`.
    Stdout,
    /// The batch's table, notices, progress.
    Stderr,
}

impl Stream {
    fn is_terminal(self) -> bool {
        match self {
            Stream::Stdout => std::io::stdout().is_terminal(),
            Stream::Stderr => std::io::stderr().is_terminal(),
        }
    }

    fn terminal_columns(self) -> Option<usize> {
        let size = match self {
            Stream::Stdout => rustix::termios::tcgetwinsize(std::io::stdout().as_fd()),
            Stream::Stderr => rustix::termios::tcgetwinsize(std::io::stderr().as_fd()),
        };
        size.ok().map(|s| usize::from(s.ws_col)).filter(|&c| c > 0)
    }
}

/// The width to lay a table out for on `stream`.
pub fn width(stream: Stream) -> usize {
    let from_env = std::env::var("COLUMNS")
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok())
        .filter(|&c| c > 0);
    from_env
        .or_else(|| stream.terminal_columns())
        .unwrap_or(DEFAULT_WIDTH)
        .max(MIN_WIDTH)
}

/// Whether the environment forbids escape codes: `NO_COLOR` set and not empty, or `TERM=dumb`.
pub fn escapes_forbidden() -> bool {
    let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
    let dumb = std::env::var_os("TERM").is_some_and(|t| t == "dumb");
    no_color || dumb
}

/// Whether escape codes may be written to `stream`: a terminal, and nothing forbids them.
pub fn escapes_allowed(stream: Stream) -> bool {
    stream.is_terminal() && !escapes_forbidden()
}

/// Whether a line may be redrawn on `stream` (`\r` and erase-line, no colour): a terminal
/// that can do it (`TERM` not `dumb`); `NO_COLOR` is about colour only.
pub fn redraw_allowed(stream: Stream) -> bool {
    stream.is_terminal() && std::env::var_os("TERM").is_none_or(|t| t != "dumb")
}
