//! The help texts, generated from the option table: `-h` the common options on one 80×24
//! screen, `--help` every option with its details. Text only; meanings are in `table.rs`.
#![forbid(unsafe_code)]

use crate::cli::args::HelpKind;
use crate::cli::table::{self, Category, OptSpec, Sub};
use std::fmt::Write;

/// Human output fits this many columns.
const WIDTH: usize = 80;
/// Where the one-line help starts in `-h`.
const HELP_COLUMN: usize = 26;
/// The indent of an option's details in `--help`.
const DETAIL_INDENT: usize = 10;

/// The top-level `-h`: the subcommands, where to start and where the rest is, on one 80×24
/// screen ([`top_help`] has every usage line and the exit codes).
pub fn top_short_help() -> String {
    let mut out = String::from(
        "coldtrace — run a command and record exactly how it ran\n\n\
         Usage: coldtrace SUBCOMMAND [OPTIONS] [ARG...]\n       \
         coldtrace help SUBCOMMAND | --help | --version\n\nSubcommands:\n",
    );
    for s in table::subcommands() {
        let _ = writeln!(out, "  {:<13}{}", s.name, s.summary);
    }
    out.push_str(
        "\nStart with:\n  \
         coldtrace run -n 10 -- COMMAND [ARG...]\n  \
         coldtrace compare -n 10 'COMMAND A' 'COMMAND B'\n\n",
    );
    out.push_str(&wrap(
        "`coldtrace SUBCOMMAND -h` lists its common options, `--help` all of them; \
         `coldtrace --help` adds every subcommand's usage and the exit codes.",
        0,
    ));
    out
}

/// The top-level `--help`: every subcommand's usage, what coldtrace does, the exit codes.
pub fn top_help() -> String {
    let mut out =
        String::from("coldtrace — run a command and record exactly how it ran\n\nUsage:\n");
    for s in table::subcommands() {
        let _ = writeln!(out, "  coldtrace {}", s.usage);
    }
    out.push_str("  coldtrace help SUBCOMMAND | --help | --version\n\nSubcommands:\n");
    for s in table::subcommands() {
        let _ = writeln!(out, "  {:<13}{}", s.name, s.summary);
    }
    out.push('\n');
    let about = format!(
        "{} `coldtrace SUBCOMMAND --help` lists a subcommand's options.",
        table::ABOUT
    );
    out.push_str(&wrap(&about, 0));
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

/// `-h` of a subcommand with many options: its usage and its common options, one line each
/// (cut with `…` where a help text is longer), then where the rest are.
fn short_help(sub: Sub, common: &[&str]) -> String {
    let spec = table::subcommand(sub);
    let mut out = format!(
        "coldtrace {} — {}\n\nUsage: coldtrace {}\n\nCommon options:\n",
        spec.name, spec.summary, spec.usage
    );
    let all: Vec<&OptSpec> = table::options_of(sub).collect();
    for long in common {
        if let Some(o) = all.iter().find(|o| o.long == *long) {
            let names = names(o);
            let line = if names.chars().count() + 2 <= HELP_COLUMN {
                format!("{names:<HELP_COLUMN$}{}", o.help)
            } else {
                format!("{names}  {}", o.help)
            };
            let _ = writeln!(out, "{}", crate::view::units::shorten(&line, WIDTH));
        }
    }
    let _ = writeln!(
        out,
        "\n{} more options, the exit codes and the details: coldtrace {} --help",
        all.len() - common.len(),
        spec.name
    );
    out
}

/// The help of `sub`: `-h` its common options (one screen), `--help` every option with its
/// details.
pub fn help(sub: Sub, kind: HelpKind) -> String {
    if let (HelpKind::Short, Some(common)) = (kind, common(sub)) {
        return short_help(sub, common);
    }
    let spec = table::subcommand(sub);
    let mut out = format!(
        "coldtrace {} — {}\n\nUsage: coldtrace {}\n\n",
        spec.name, spec.summary, spec.usage
    );
    out.push_str(&wrap(spec.about, 0));
    for category in Category::ALL {
        let options: Vec<&OptSpec> = table::options_of(sub)
            .filter(|o| o.category == category)
            .collect();
        if options.is_empty() {
            continue;
        }
        let _ = writeln!(out, "\n{}:", category.title());
        for o in options {
            match kind {
                HelpKind::Short => out.push_str(&short_entry(o)),
                HelpKind::Long => out.push_str(&long_entry(o)),
            }
        }
    }
    if !spec.epilogue.is_empty() {
        out.push('\n');
        out.push_str(&wrap(spec.epilogue, 0));
    }
    if kind == HelpKind::Short {
        out.push_str("\n(--help shows each option's details)\n");
    }
    out
}

/// The option's names, aligned as in most tools: a long-only option is indented past `-x, `.
fn names(o: &OptSpec) -> String {
    let pad = if o.shorts.is_empty() { "    " } else { "" };
    format!("  {pad}{}", o.synopsis())
}

/// `  -n, --runs N            counted runs (default 1)`, the help on the next line when the
/// names are too long for the column.
fn short_entry(o: &OptSpec) -> String {
    let names = names(o);
    let help = wrap(o.help, HELP_COLUMN);
    let help = help.trim_start();
    if names.chars().count() + 2 <= HELP_COLUMN {
        format!("{names:<HELP_COLUMN$}{help}")
    } else {
        format!("{names}\n{:HELP_COLUMN$}{help}", "")
    }
}

/// The names, then the description indented below them.
fn long_entry(o: &OptSpec) -> String {
    format!("{}\n{}", names(o), wrap(o.description, DETAIL_INDENT))
}

/// `text` wrapped at [`WIDTH`] columns, every line indented by `indent`, ending in a newline.
pub(crate) fn wrap(text: &str, indent: usize) -> String {
    let mut out = String::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        let fits = indent + line.chars().count() + 1 + word.chars().count() <= WIDTH;
        if !line.is_empty() && !fits {
            let _ = writeln!(out, "{:indent$}{line}", "");
            line.clear();
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() {
        let _ = writeln!(out, "{:indent$}{line}", "");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn every_text() -> Vec<(String, String)> {
        let mut texts = vec![
            ("top".to_string(), top_help()),
            ("top -h".to_string(), top_short_help()),
        ];
        for s in table::subcommands() {
            for kind in [HelpKind::Short, HelpKind::Long] {
                texts.push((format!("{} {kind:?}", s.name), help(s.sub, kind)));
            }
        }
        texts
    }

    #[test]
    fn every_line_fits_80_columns() {
        for (name, text) in every_text() {
            for line in text.lines() {
                assert!(line.chars().count() <= WIDTH, "{name}: {line:?}");
            }
        }
    }

    #[test]
    fn short_help_fits_one_screen_and_names_its_common_options() {
        let top = top_short_help();
        assert!(
            top.lines().count() <= SCREEN_LINES,
            "coldtrace -h: {} lines",
            top.lines().count()
        );
        assert!(top.lines().all(|l| l.chars().count() <= WIDTH), "{top}");
        for s in table::subcommands() {
            assert!(
                top.contains(&format!("  {:<13}{}", s.name, s.summary)),
                "{top}"
            );
        }
        for s in table::subcommands() {
            let text = help(s.sub, HelpKind::Short);
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
                assert!(text.contains(&o.synopsis()), "{} -h: {long}", s.name);
            }
            let rest = table::options_of(s.sub).count() - common.len();
            assert!(text.contains(&format!("{rest} more options")), "{text}");
        }
    }

    #[test]
    fn every_help_lists_every_option_its_subcommand_takes() {
        for s in table::subcommands() {
            let kinds: &[HelpKind] = match common(s.sub) {
                Some(_) => &[HelpKind::Long],
                None => &[HelpKind::Short, HelpKind::Long],
            };
            for &kind in kinds {
                let text = help(s.sub, kind);
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
        let compare = help(Sub::Compare, HelpKind::Long);
        assert!(compare.contains("--shuffle SEED") && compare.contains("--evict PATH"));
        assert!(!help(Sub::Run, HelpKind::Short).contains("--markdown"));
    }

    #[test]
    fn the_top_help_names_every_subcommand() {
        let text = top_help();
        for s in table::subcommands() {
            assert!(
                text.contains(&format!("coldtrace {}", s.usage)),
                "{}",
                s.name
            );
        }
    }

    #[test]
    fn wrap_breaks_between_words_and_indents() {
        assert_eq!(wrap("a b", 2), "  a b\n");
        let long = "word ".repeat(40);
        let wrapped = wrap(&long, 4);
        assert!(wrapped.lines().count() > 1);
        assert!(wrapped
            .lines()
            .all(|l| l.starts_with("    word") && l.len() <= WIDTH));
    }
}
