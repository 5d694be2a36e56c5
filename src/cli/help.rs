//! The help texts, generated from the option table: `-h` the common options on one 80×24
//! screen, `--help` every option with its details. Text only; meanings are in `table.rs`.
//! Every text is wrapped at spaces to the terminal's width ([`help_width`]); a word is never
//! cut.
#![forbid(unsafe_code)]

use crate::cli::args::HelpKind;
use crate::cli::table::{self, Category, OptSpec, Sub};
use crate::view::units::display_width;
use std::fmt::Write;

/// The width `-h` is made to fit on one screen.
pub const SCREEN_WIDTH: usize = 80;
/// The widest a help text is wrapped to: longer lines are hard to read, whatever the terminal.
pub const MAX_WIDTH: usize = 100;
/// Where the one-line help starts in `-h`.
const HELP_COLUMN: usize = 26;
/// The indent of an option's details in `--help`.
const DETAIL_INDENT: usize = 10;

/// The width help is wrapped to: stdout's terminal width (`COLUMNS` when set; 80 when it is no
/// terminal), at most [`MAX_WIDTH`].
pub fn help_width() -> usize {
    use crate::view::terminal::{width, Stream};
    width(Stream::Stdout).min(MAX_WIDTH)
}

/// The top-level `-h` at the terminal's width (see [`top_short_help_at`]).
pub fn top_short_help() -> String {
    top_short_help_at(help_width())
}

/// The top-level `--help` at the terminal's width (see [`top_help_at`]).
pub fn top_help() -> String {
    top_help_at(help_width())
}

/// The help of `sub` at the terminal's width (see [`help_at`]).
pub fn help(sub: Sub, kind: HelpKind) -> String {
    help_at(sub, kind, help_width())
}

/// The top-level `-h`: the subcommands, where to start and where the rest is, on one 80×24
/// screen ([`top_help_at`] has every usage line and the exit codes).
pub fn top_short_help_at(width: usize) -> String {
    let mut out = String::from(
        "coldtrace — run a command and record exactly how it ran\n\n\
         Usage: coldtrace SUBCOMMAND [OPTIONS] [ARG...]\n       \
         coldtrace help SUBCOMMAND | --help | --version\n\nSubcommands:\n",
    );
    out.push_str(&subcommand_lines(width));
    out.push_str(
        "\nStart with:\n  \
         coldtrace run -n 10 -- COMMAND [ARG...]\n  \
         coldtrace compare -n 10 'COMMAND A' 'COMMAND B'\n\n",
    );
    out.push_str(&wrap(
        "`coldtrace SUBCOMMAND -h` lists its common options, `--help` all of them; \
         `coldtrace --help` adds every subcommand's usage and the exit codes.",
        0,
        width,
    ));
    out
}

/// Each subcommand's name and summary, the summary wrapped beside the names.
fn subcommand_lines(width: usize) -> String {
    table::subcommands()
        .map(|s| hang(&format!("  {:<13}", s.name), s.summary, 15, width))
        .collect()
}

/// The top-level `--help`: every subcommand's usage, what coldtrace does, the exit codes.
pub fn top_help_at(width: usize) -> String {
    let mut out =
        String::from("coldtrace — run a command and record exactly how it ran\n\nUsage:\n");
    for s in table::subcommands() {
        let _ = writeln!(out, "  coldtrace {}", s.usage);
    }
    out.push_str("  coldtrace help SUBCOMMAND | --help | --version\n\nSubcommands:\n");
    out.push_str(&subcommand_lines(width));
    out.push('\n');
    let about = format!(
        "{} `coldtrace SUBCOMMAND --help` lists a subcommand's options.",
        table::ABOUT
    );
    out.push_str(&wrap(&about, 0, width));
    out.push_str(
        "\nExit codes (GNU time's conventions):\n  \
         single run   the command's exit code; 128+N if it died of signal N\n  \
         batch        0 every counted run succeeded; 1 a run rejected, --prepare failed\n  \
         127 command not found   126 found but not executable   125 coldtrace's error\n  \
         130 interrupted by SIGINT (128+N for signal N)\n",
    );
    out
}

/// A screen: `-h` fits in this many lines.
pub const SCREEN_LINES: usize = 24;

/// The options `-h` shows for `sub` when all of them would not fit one screen: the ones most
/// runs need (`--help` lists every option).
fn common(sub: Sub) -> Option<&'static [&'static str]> {
    match sub {
        Sub::Run => Some(&[
            "--runs",
            "--warmup",
            "--out",
            "--json",
            "--output",
            "--quiet",
            "--timeout",
            "--prepare",
            "--evict",
            "--drop-caches",
            "--cold-first-only",
            "--watch",
            "--counters",
            "--export-json",
            "--export-csv",
            "--help",
        ]),
        Sub::Compare => Some(&[
            "--runs",
            "--warmup",
            "--command-name",
            "--parameter-scan",
            "--shuffle",
            "--out",
            "--json",
            "--quiet",
            "--prepare",
            "--evict",
            "--drop-caches",
            "--counters",
            "--export-json",
            "--export-markdown",
            "--help",
        ]),
        Sub::Boot => Some(&[
            "--boots",
            "--out",
            "--reboot",
            "--after",
            "--control",
            "--dry-run",
            "--state-dir",
            "--runs",
            "--watch",
            "--help",
        ]),
        Sub::Time => Some(&[
            "--format",
            "--portability",
            "--verbose",
            "--output-file",
            "--append",
            "--quiet",
            "--help",
        ]),
        _ => None,
    }
}

/// `-h` of a subcommand with many options: its usage and its common options, one line each at
/// 80 columns (wrapped below its names where narrower), then where the rest are.
fn short_help(sub: Sub, common: &[&str], width: usize) -> String {
    let spec = table::subcommand(sub);
    let mut out = heading(spec, width);
    out.push_str("\nCommon options:\n");
    let all: Vec<&OptSpec> = table::options_of(sub).collect();
    for long in common {
        if let Some(o) = all.iter().find(|o| o.long == *long) {
            let names = names(o);
            let lead = if display_width(&names) + 2 <= HELP_COLUMN {
                format!("{names:<HELP_COLUMN$}")
            } else {
                format!("{names}  ")
            };
            out.push_str(&hang(&lead, o.help, HELP_COLUMN, width));
        }
    }
    out.push('\n');
    let more = format!(
        "{} more options, the exit codes and the details: coldtrace {} --help",
        all.len() - common.len(),
        spec.name
    );
    out.push_str(&wrap(&more, 0, width));
    out
}

/// The help of `sub`, wrapped to `width`: `-h` its common options (one screen), `--help` every
/// option with its details.
pub fn help_at(sub: Sub, kind: HelpKind, width: usize) -> String {
    if let (HelpKind::Short, Some(common)) = (kind, common(sub)) {
        return short_help(sub, common, width);
    }
    let spec = table::subcommand(sub);
    let mut out = heading(spec, width);
    out.push('\n');
    out.push_str(&wrap(spec.about, 0, width));
    for category in Category::ALL {
        let options: Vec<&OptSpec> = table::options_of(sub)
            .filter(|o| o.category == category)
            .collect();
        if options.is_empty() {
            continue;
        }
        out.push('\n');
        out.push_str(&wrap(&format!("{}:", category.title()), 0, width));
        for o in options {
            match kind {
                HelpKind::Short => out.push_str(&short_entry(o, width)),
                HelpKind::Long => out.push_str(&long_entry(o, width)),
            }
        }
    }
    if !spec.epilogue.is_empty() {
        out.push('\n');
        out.push_str(&wrap(spec.epilogue, 0, width));
    }
    if kind == HelpKind::Short {
        out.push_str("\n(--help shows each option's details)\n");
    }
    out
}

/// A subcommand's title and usage line, wrapped to `width`.
fn heading(spec: &table::SubSpec, width: usize) -> String {
    let title = format!("coldtrace {} — {}", spec.name, spec.summary);
    let usage = format!("coldtrace {}", spec.usage);
    format!(
        "{}\n{}",
        wrap(&title, 0, width),
        hang("Usage: ", &usage, 7, width)
    )
}

/// The option's names, aligned as in most tools: a long-only option is indented past `-x, `.
fn names(o: &OptSpec) -> String {
    let pad = if o.shorts.is_empty() { "    " } else { "" };
    format!("  {pad}{}", o.synopsis())
}

/// `  -n, --runs N            counted runs (default 1)`, the help on the next line when the
/// names are too long for the column.
fn short_entry(o: &OptSpec, width: usize) -> String {
    let names = names(o);
    if display_width(&names) + 2 <= HELP_COLUMN {
        hang(
            &format!("{names:<HELP_COLUMN$}"),
            o.help,
            HELP_COLUMN,
            width,
        )
    } else {
        format!("{names}\n{}", wrap(o.help, HELP_COLUMN, width))
    }
}

/// The names, then the description indented below them.
fn long_entry(o: &OptSpec, width: usize) -> String {
    format!(
        "{}\n{}",
        names(o),
        wrap(o.description, DETAIL_INDENT, width)
    )
}

/// `text` wrapped at spaces to `width` columns, every line indented by `indent`, ending in a
/// newline.
pub(crate) fn wrap(text: &str, indent: usize, width: usize) -> String {
    hang(&" ".repeat(indent), text, indent, width)
}

/// `text` wrapped at spaces to `width` columns after `lead` on the first line and `indent`
/// spaces on the others, ending in a newline. A word is never cut: one longer than a line has
/// a line of its own.
fn hang(lead: &str, text: &str, indent: usize, width: usize) -> String {
    if text.trim().is_empty() && lead.trim().is_empty() {
        return String::new();
    }
    let mut out = String::new();
    let mut line = lead.to_string();
    let mut empty = true;
    for word in text.split_whitespace() {
        let fits = display_width(&line) + usize::from(!empty) + display_width(word) <= width;
        if !empty && !fits {
            let _ = writeln!(out, "{line}");
            line = " ".repeat(indent);
            empty = true;
        }
        if !empty {
            line.push(' ');
        }
        line.push_str(word);
        empty = false;
    }
    let _ = writeln!(out, "{}", line.trim_end());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every help text at `width`, named.
    fn every_text(width: usize) -> Vec<(String, String)> {
        let mut texts = vec![
            ("top".to_string(), top_help_at(width)),
            ("top -h".to_string(), top_short_help_at(width)),
        ];
        for s in table::subcommands() {
            for kind in [HelpKind::Short, HelpKind::Long] {
                texts.push((format!("{} {kind:?}", s.name), help_at(s.sub, kind, width)));
            }
        }
        texts
    }

    #[test]
    fn every_line_fits_the_width_it_is_wrapped_to() {
        for width in [SCREEN_WIDTH, MAX_WIDTH] {
            for (name, text) in every_text(width) {
                for line in text.lines() {
                    assert!(display_width(line) <= width, "{name} at {width}: {line:?}");
                }
            }
        }
    }

    #[test]
    fn no_word_is_ever_cut_at_any_width() {
        for width in [40, 60, SCREEN_WIDTH, MAX_WIDTH, 160] {
            for (name, text) in every_text(width) {
                let words: std::collections::HashSet<&str> = text.split_whitespace().collect();
                for s in table::subcommands() {
                    for o in table::options_of(s.sub) {
                        let kind = name.strip_prefix(s.name).map(str::trim);
                        let wanted = match kind {
                            Some("Long") => o.description,
                            Some("Short")
                                if text
                                    .lines()
                                    .any(|l| l.trim_start().starts_with(&o.synopsis())) =>
                            {
                                o.help
                            }
                            _ => continue,
                        };
                        for word in wanted.split_whitespace() {
                            assert!(words.contains(word), "{name} at {width}: {word:?}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn short_help_fits_one_screen_and_names_its_common_options() {
        let top = top_short_help_at(SCREEN_WIDTH);
        assert!(
            top.lines().count() <= SCREEN_LINES,
            "coldtrace -h: {} lines",
            top.lines().count()
        );
        for s in table::subcommands() {
            assert!(
                top.contains(&format!("  {:<13}{}", s.name, s.summary)),
                "{top}"
            );
        }
        for s in table::subcommands() {
            let text = help_at(s.sub, HelpKind::Short, SCREEN_WIDTH);
            assert!(
                text.lines().count() <= SCREEN_LINES,
                "{} -h: {} lines",
                s.name,
                text.lines().count()
            );
            let Some(common) = common(s.sub) else {
                continue;
            };
            for long in common {
                let o = table::options_of(s.sub).find(|o| o.long == *long);
                let o = o.unwrap_or_else(|| panic!("{}: {long} is not an option", s.name));
                // One line each at 80 columns: the whole help beside the names.
                let shown = text.lines().find(|l| l.contains(&o.synopsis()));
                let shown = shown.unwrap_or_else(|| panic!("{} -h: {long}", s.name));
                assert!(shown.ends_with(o.help), "{} -h: {shown:?}", s.name);
            }
            let rest = table::options_of(s.sub).count() - common.len();
            assert!(text.contains(&format!("{rest} more options")), "{text}");
        }
        let run = help_at(Sub::Run, HelpKind::Short, SCREEN_WIDTH);
        assert!(run.contains("--drop-caches"), "{run}");
    }

    #[test]
    fn every_help_lists_every_option_its_subcommand_takes() {
        for s in table::subcommands() {
            let kinds: &[HelpKind] = match common(s.sub) {
                Some(_) => &[HelpKind::Long],
                None => &[HelpKind::Short, HelpKind::Long],
            };
            for &kind in kinds {
                let text = help_at(s.sub, kind, SCREEN_WIDTH);
                for o in table::options_of(s.sub) {
                    assert!(
                        text.contains(&o.synopsis()),
                        "{} {kind:?}: {}",
                        s.name,
                        o.long
                    );
                    let wanted = if kind == HelpKind::Short {
                        o.help
                    } else {
                        o.description
                    };
                    let first_words: String = wanted
                        .split_whitespace()
                        .take(3)
                        .collect::<Vec<_>>()
                        .join(" ");
                    assert!(text.contains(&first_words), "{}: {}", s.name, o.long);
                }
            }
        }
        let compare = help_at(Sub::Compare, HelpKind::Long, SCREEN_WIDTH);
        assert!(compare.contains("--shuffle SEED") && compare.contains("--evict PATH"));
        assert!(!help_at(Sub::Run, HelpKind::Short, SCREEN_WIDTH).contains("--markdown"));
    }

    #[test]
    fn the_top_help_names_every_subcommand() {
        let text = top_help_at(SCREEN_WIDTH);
        for s in table::subcommands() {
            assert!(
                text.contains(&format!("coldtrace {}", s.usage)),
                "{}",
                s.name
            );
        }
    }

    #[test]
    fn wrap_breaks_between_words_indents_and_keeps_long_words_whole() {
        assert_eq!(wrap("a b", 2, 80), "  a b\n");
        assert_eq!(wrap("", 2, 80), "");
        let long = "word ".repeat(40);
        let wrapped = wrap(&long, 4, 60);
        assert!(wrapped.lines().count() > 1);
        assert!(wrapped
            .lines()
            .all(|l| l.starts_with("    word") && l.len() <= 60));
        let whole = "x".repeat(30);
        assert_eq!(
            hang("lead ", &format!("a {whole} b"), 2, 20),
            format!("lead a\n  {whole}\n  b\n")
        );
    }
}
