//! What a subcommand's execution hands back to `main` ([`Output`]): its stdout and exit code,
//! and how `--json` and a failed export shape them; where a table of results goes
//! ([`TableOut`]). It runs and draws nothing.
#![forbid(unsafe_code)]

use crate::record::artifacts::ArtifactError;
use crate::text::escape_controls;

/// What `main` prints on stdout and exits with.
pub struct Output {
    /// Text for stdout.
    pub stdout: String,
    /// Process exit code.
    pub exit_code: u8,
}

/// `--json` output: the document and a newline, or nothing.
pub(crate) fn json_line(wanted: bool, json: &str) -> String {
    if wanted {
        format!("{json}\n")
    } else {
        String::new()
    }
}

/// An export that could not be written: one line, exit 125; the records are already on disk
/// (with `-o`) and the JSON still goes to stdout.
pub(crate) fn exported_error(e: &ArtifactError) -> u8 {
    eprintln!("coldtrace: error: {}", escape_controls(&e.message));
    125
}

/// Where a table of results goes: stdout, as hyperfine's results do (`coldtrace run … >
/// out.txt` keeps it), unless stdout is taken — by `--json`'s document, an export to
/// `/dev/stdout`, or the command's own output (`--output inherit`, a single run's default) —
/// then stderr, with nothing more said. Progress, notices and errors are stderr's always.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TableOut {
    pub(crate) stream: crate::view::terminal::Stream,
}

impl TableOut {
    /// For a batch that prints `--json`, exports to stdout (`exports_there`) or lets its
    /// command write to the terminal.
    pub(crate) fn of(json: bool, exports_there: bool, command_on_terminal: bool) -> TableOut {
        use crate::view::terminal::Stream;
        TableOut {
            stream: if json || exports_there || command_on_terminal {
                Stream::Stderr
            } else {
                Stream::Stdout
            },
        }
    }

    /// The width to lay the table out for.
    pub(crate) fn width(self) -> usize {
        crate::view::terminal::width(self.stream)
    }

    /// Whether to colour it.
    pub(crate) fn colour(self) -> bool {
        crate::view::terminal::escapes_allowed(self.stream)
    }

    /// Writes `text`; a failure is ignored (the table is a courtesy: the records are written).
    pub(crate) fn show(self, text: &str) {
        use std::io::Write;
        match self.stream {
            crate::view::terminal::Stream::Stderr => eprint!("{text}"),
            crate::view::terminal::Stream::Stdout => {
                let mut out = std::io::stdout().lock();
                let _ = out.write_all(text.as_bytes()).and_then(|()| out.flush());
            }
        }
    }
}
