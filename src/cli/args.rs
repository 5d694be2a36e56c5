//! argv read against the option table, forgivingly: every rule about how a flag may be written
//! and every hint for a habit from hyperfine or GNU time lives here. Values are checked later.
//!
//! # How the words are read
//! One left-to-right walk over the arguments, driven by [`table`](crate::cli::table): it is
//! the only way to tell a value from a flag (`--label --json` labels the batch "--json"), which
//! pico-args cannot do alone, because it looks a key up anywhere in the argument list. The walk
//! accepts `--opt value`, `--opt=value`, `-n 5`, `-n5`, `-n=5`, bundled switches (`-qi`) and a
//! long option's aliases, and resolves each to its declaration. It then hands pico-args a
//! canonical argument list — each option as its long name followed by one value per key, in
//! the order given — and pico-args extracts every occurrence from the front of that list
//! (`contains`, `opt_value_from_os_str`), so its first-match search always lands on the key the
//! walk put there. What the walk refuses, it refuses with one line that says what to do:
//! - an unknown option, with the nearest name ("did you mean --warmup?"), the subcommand that
//!   does take it, or what replaces a hyperfine or GNU time flag;
//! - a missing value ("needs a value"), a value given to a switch;
//! - a word before `--` in `run` (where `time` habits put the command), but for one last
//!   word with no `--` at all: hyperfine's `run 'sleep 0.1'`, one command string.
//!
//! A single-valued option given twice is not an error: the last value wins and coldtrace says
//! so once. The hints about values (`-n abc`, `-o null`, a quoted command that is not found)
//! are here too, called from the subcommands' checks.
#![forbid(unsafe_code)]

use crate::cli::table::{self, Layout, OptSpec, Repeat, Sub};
use crate::cli::usage::{usage, UsageError};
use crate::measure::perf::{Kind, PerfEvent};
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;

/// One option as given: its declaration, how it was spelled, its values.
#[derive(Clone, Debug)]
pub(crate) struct Occurrence {
    /// The declaration.
    pub spec: &'static OptSpec,
    /// As the user wrote it (`-n`, `--runs`, `--evict-first-only`).
    pub spelled: String,
    /// Its values, as many as the declaration names.
    pub values: Vec<OsString>,
}

impl Occurrence {
    /// The first value, lossily as text.
    pub fn text(&self) -> String {
        self.values
            .first()
            .map(|v| v.to_string_lossy().into_owned())
            .unwrap_or_default()
    }
}

/// Which help was asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HelpKind {
    /// `-h`: the common options, one line each, on one screen.
    Short,
    /// `--help`: with each option's details.
    Long,
}

/// The arguments of one subcommand, read.
#[derive(Debug, Default)]
pub(crate) struct Read {
    /// The options, in the order given (a repeated single-valued one only at its last place).
    pub options: Vec<Occurrence>,
    /// The words that are not options (for `run`: the command after `--`).
    pub operands: Vec<OsString>,
    /// Whether a `--` was seen.
    pub separator: bool,
    /// `-h` or `--help`.
    pub help: Option<HelpKind>,
    /// `-V` or `--version`.
    pub version: bool,
    /// What to say once about how the flags were read (a repeated option).
    pub notices: Vec<String>,
}

impl Read {
    /// The last occurrence of the option `long` (dashes included).
    pub fn last(&self, long: &str) -> Option<&Occurrence> {
        debug_assert!(
            table::options().any(|o| o.long == long),
            "{long} is not declared"
        );
        self.options.iter().rev().find(|o| o.spec.long == long)
    }

    /// Whether the switch `long` was given.
    pub fn has(&self, long: &str) -> bool {
        self.last(long).is_some()
    }

    /// The last value of `long`, lossily as text.
    pub fn text(&self, long: &str) -> Option<String> {
        self.last(long).map(Occurrence::text)
    }

    /// Every occurrence of `long`, in order.
    pub fn all<'a>(&'a self, long: &'a str) -> impl Iterator<Item = &'a Occurrence> + 'a {
        self.options.iter().filter(move |o| o.spec.long == long)
    }
}

/// Reads the arguments of `sub` (without the subcommand's name).
pub(crate) fn read(sub: Sub, args: Vec<OsString>) -> Result<Read, UsageError> {
    let help = asks_for_help(&args, table::subcommand(sub).layout);
    match walk(sub, &args) {
        Ok(mut read) => {
            read.help = read.help.or(help);
            extract(&mut read)?;
            Ok(read)
        }
        // `coldtrace run --bogus --help` shows the help, not the complaint.
        Err(_) if help.is_some() => Ok(Read {
            help,
            ..Read::default()
        }),
        Err(e) => Err(e),
    }
}

/// `-h` or `--help` among the words before `--` (and, where the command follows the options,
/// before the command: `coldtrace time ls --help` runs `ls --help`).
fn asks_for_help(args: &[OsString], layout: Layout) -> Option<HelpKind> {
    let command_follows = layout == Layout::CommandAfterOptions;
    let before = args
        .iter()
        .take_while(|a| *a != "--")
        .take_while(|a| !command_follows || (a.len() > 1 && a.as_bytes()[0] == b'-'));
    let mut kind = None;
    for a in before {
        if a == "--help" {
            return Some(HelpKind::Long);
        }
        if a == "-h" {
            kind = Some(HelpKind::Short);
        }
    }
    kind
}

/// The walk: every word resolved to an option, a value or an operand.
fn walk(sub: Sub, args: &[OsString]) -> Result<Read, UsageError> {
    let layout = table::subcommand(sub).layout;
    let mut read = Read::default();
    let mut i = 0;
    while i < args.len() {
        let word = args[i].as_bytes();
        i += 1;
        if word == b"--" {
            read.separator = true;
            read.operands.extend(args[i..].iter().cloned());
            break;
        }
        if word.starts_with(b"--") {
            let found = long_option(sub, word)?;
            let occurrence = with_values(sub, found, args, &mut i)?;
            push(&mut read, occurrence);
        } else if word.len() > 1 && word[0] == b'-' {
            for found in short_options(sub, word)? {
                let occurrence = with_values(sub, found, args, &mut i)?;
                push(&mut read, occurrence);
            }
        } else {
            match layout {
                // `run 'sleep 0.1'`, hyperfine's habit: one command string, the last word,
                // with no `--` anywhere (split later as `compare` splits its strings).
                Layout::Separator if i == args.len() && read.operands.is_empty() => {
                    read.operands.push(args[i - 1].clone());
                }
                Layout::Separator => return Err(stray_word(sub, args, i - 1)),
                Layout::Free => read.operands.push(args[i - 1].clone()),
                Layout::CommandAfterOptions => {
                    read.operands.extend(args[i - 1..].iter().cloned());
                    break;
                }
            }
        }
    }
    read.notices = repeated_notices(&read.options);
    keep_last(&mut read.options);
    Ok(read)
}

/// An option found in a word, before its values are taken.
struct Found {
    spec: &'static OptSpec,
    spelled: String,
    /// The value attached to the word (`--runs=3`, `-n3`).
    attached: Option<OsString>,
}

/// `--name` or `--name=value`.
fn long_option(sub: Sub, word: &[u8]) -> Result<Found, UsageError> {
    let (name, attached) = match word.iter().position(|&b| b == b'=') {
        Some(eq) => (
            &word[..eq],
            Some(OsStr::from_bytes(&word[eq + 1..]).to_os_string()),
        ),
        None => (word, None),
    };
    let spelled = String::from_utf8_lossy(name).into_owned();
    let spec = table::find_long(sub, &spelled).ok_or_else(|| unknown_option(sub, &spelled))?;
    if spec.is_switch() && spec.optional_value.is_none() && attached.is_some() {
        return Err(usage(format!(
            "{spelled} takes no value, got '{}'; {}",
            String::from_utf8_lossy(word),
            table::see_help(sub)
        )));
    }
    Ok(Found {
        spec,
        spelled,
        attached,
    })
}

/// `-n`, `-n5`, `-n=5`, or bundled switches `-qi` (a value-taking letter ends the bundle).
fn short_options(sub: Sub, word: &[u8]) -> Result<Vec<Found>, UsageError> {
    let text = String::from_utf8_lossy(&word[1..]).into_owned();
    let word_text = format!("-{text}");
    let mut found = Vec::new();
    for (at, c) in text.char_indices() {
        let spelled = format!("-{c}");
        let Some(spec) = table::find_short(sub, c) else {
            return Err(if at == 0 {
                // `-runs 5` is a long option with one dash: name the whole word.
                let single = text.chars().count() == 1 || table::find_foreign(&spelled).is_some();
                unknown_option(sub, if single { &spelled } else { &word_text })
            } else {
                usage(format!(
                    "unknown option '{spelled}' in '-{text}'; {}",
                    table::see_help(sub)
                ))
            });
        };
        if let Some((_, value)) = spec.implied.iter().find(|(i, _)| *i == c) {
            // `-S` is `--shell default`: it takes no value, and the bundle goes on.
            found.push(Found {
                spec,
                spelled,
                attached: Some(OsString::from(value)),
            });
            continue;
        }
        let rest = &word[1 + at + c.len_utf8()..];
        if spec.is_switch() {
            // `-i=1,2`: a value only after `=` (hyperfine's rule), which ends the bundle.
            let value = rest
                .strip_prefix(b"=")
                .filter(|_| spec.optional_value.is_some());
            found.push(Found {
                spec,
                spelled,
                attached: value.map(|v| OsStr::from_bytes(v).to_os_string()),
            });
            if value.is_some() {
                break;
            }
            continue;
        }
        let rest = rest.strip_prefix(b"=").unwrap_or(rest);
        found.push(Found {
            spec,
            spelled,
            attached: (!rest.is_empty()).then(|| OsStr::from_bytes(rest).to_os_string()),
        });
        break;
    }
    Ok(found)
}

/// Takes the option's values: the attached one first, then the following words.
fn with_values(
    sub: Sub,
    found: Found,
    args: &[OsString],
    i: &mut usize,
) -> Result<Occurrence, UsageError> {
    let wanted = found.spec.values.len();
    let mut values: Vec<OsString> = found.attached.into_iter().collect();
    while values.len() < wanted {
        // `--` is never a value: `run --label -- cmd` forgot the label.
        match args.get(*i).filter(|a| *a != "--") {
            Some(value) => {
                values.push(value.clone());
                *i += 1;
            }
            None => return Err(missing_value(sub, found.spec, &found.spelled, values.len())),
        }
    }
    Ok(Occurrence {
        spec: found.spec,
        spelled: found.spelled,
        values,
    })
}

fn missing_value(sub: Sub, spec: &OptSpec, spelled: &str, got: usize) -> UsageError {
    let names = spec.values.join(" ");
    // GNU time's -p (POSIX output) takes no value; coldtrace's -p is hyperfine's --prepare.
    let habit = if spelled == "-p" {
        " (GNU time's -p is `coldtrace time -p`)"
    } else {
        ""
    };
    usage(if spec.values.len() == 1 {
        format!(
            "option {spelled} needs a value ({names}){habit}; {}",
            table::see_help(sub)
        )
    } else {
        format!(
            "option {spelled} needs {} values ({names}), got {got}; {}",
            spec.values.len(),
            table::see_help(sub)
        )
    })
}

fn push(read: &mut Read, occurrence: Occurrence) {
    match occurrence.spec.long {
        "--help" => {
            let kind = if occurrence.spelled == "-h" {
                HelpKind::Short
            } else {
                HelpKind::Long
            };
            read.help = Some(read.help.map_or(kind, |k| k.max_with(kind)));
        }
        "--version" => read.version = true,
        _ => read.options.push(occurrence),
    }
}

impl HelpKind {
    fn max_with(self, other: HelpKind) -> HelpKind {
        if self == HelpKind::Long || other == HelpKind::Long {
            HelpKind::Long
        } else {
            HelpKind::Short
        }
    }
}

/// One notice per single-valued option given more than once: which values, which one is used.
fn repeated_notices(options: &[Occurrence]) -> Vec<String> {
    let mut notices = Vec::new();
    let mut said: Vec<&str> = Vec::new();
    for o in options {
        if o.spec.repeat != Repeat::LastWins || o.spec.is_switch() || said.contains(&o.spec.long) {
            continue;
        }
        let given: Vec<String> = options
            .iter()
            .filter(|x| x.spec.long == o.spec.long)
            .map(|x| format!("'{}'", x.text()))
            .collect();
        if given.len() > 1 {
            said.push(o.spec.long);
            let times = match given.len() {
                2 => "twice".to_string(),
                n => format!("{n} times"),
            };
            notices.push(crate::text::escape_controls(&format!(
                "{} given {times} ({}): the last one, {}, is used",
                o.spec.display_name(),
                given.join(", "),
                given[given.len() - 1]
            )));
        }
    }
    notices
}

/// Drops every occurrence of a single-valued option (and of a switch) but its last.
fn keep_last(options: &mut Vec<Occurrence>) {
    let mut i = 0;
    while i < options.len() {
        let o = &options[i];
        let later = options[i + 1..].iter().any(|x| x.spec.long == o.spec.long);
        if later && (o.spec.repeat == Repeat::LastWins || o.spec.is_switch()) {
            options.remove(i);
        } else {
            i += 1;
        }
    }
}

/// pico-args extracts every occurrence, in order, from the canonical list (see the module
/// documentation); anything it leaves behind would be a bug of the walk.
fn extract(read: &mut Read) -> Result<(), UsageError> {
    let mut canonical: Vec<OsString> = Vec::new();
    // A switch has no value; one with an optional value (`-i=1,2`) is read as a valued option.
    for o in &read.options {
        if o.values.is_empty() {
            canonical.push(o.spec.long.into());
        }
        for value in &o.values {
            canonical.push(o.spec.long.into());
            canonical.push(value.clone());
        }
    }
    let mut p = pico_args::Arguments::from_vec(canonical);
    let os = |s: &OsStr| -> Result<OsString, String> { Ok(s.to_os_string()) };
    for o in &mut read.options {
        if o.values.is_empty() {
            let present = p.contains(o.spec.long);
            debug_assert!(present, "{} lost on the way to pico-args", o.spec.long);
            continue;
        }
        let mut values = Vec::with_capacity(o.values.len());
        for _ in 0..o.values.len() {
            let value = p
                .opt_value_from_os_str(o.spec.long, os)
                .map_err(|e| usage(format!("{}: {e}", o.spelled)))?;
            values.extend(value);
        }
        o.values = values;
    }
    let left = p.finish();
    debug_assert!(left.is_empty(), "pico-args left {left:?}");
    Ok(())
}

/// A word before `--` in `run`: where `time` and hyperfine habits put the command.
fn stray_word(sub: Sub, args: &[OsString], at: usize) -> UsageError {
    let text = args[at].to_string_lossy();
    if args[at..].iter().any(|a| a == "--") {
        usage(format!(
            "unexpected argument '{text}' before `--`; options go before `--`, the command after it"
        ))
    } else {
        usage(format!(
            "put the command after `--`: coldtrace {} [OPTIONS] -- {text} ... (no `--` found)",
            table::subcommand(sub).name
        ))
    }
}

/// An option `sub` does not take: another subcommand's, another tool's, or a typo.
fn unknown_option(sub: Sub, spelled: &str) -> UsageError {
    let name = table::subcommand(sub).name;
    // A hyperfine or GNU time flag first: its hint names the equivalent (`-f` is `coldtrace
    // time -f`), which says more than the subcommand that happens to take the same letter.
    let hint = if let Some(foreign) = table::find_foreign(spelled) {
        format!("coldtrace {name} has no {spelled}: {}", foreign.instead)
    } else if let Some(other) = other_subcommand(sub, spelled) {
        // What to do is in the words (give it to `other`); naming `sub` too, or adding `see
        // --help`, would take the line past 80 columns.
        return usage(format!("{spelled} is an option of `coldtrace {other}`"));
    } else if let Some(near) = nearest_option(sub, spelled) {
        format!("unknown option '{spelled}' (did you mean {near}?)")
    } else {
        format!("unknown option '{spelled}'")
    };
    usage(format!("{hint}; {}", table::see_help(sub)))
}

/// The subcommand that takes `spelled`, if `sub` does not.
fn other_subcommand(sub: Sub, spelled: &str) -> Option<&'static str> {
    table::subcommands()
        .filter(|s| s.sub != sub)
        .find(|s| lookup(s.sub, spelled).is_some())
        .map(|s| s.name)
}

fn lookup(sub: Sub, spelled: &str) -> Option<&'static OptSpec> {
    match spelled.strip_prefix("--") {
        Some(_) => table::find_long(sub, spelled),
        None => {
            let mut chars = spelled.chars().skip(1);
            match (chars.next(), chars.next()) {
                (Some(c), None) => table::find_short(sub, c),
                _ => None,
            }
        }
    }
}

/// The declared long name nearest to `spelled`: a unique one it is a prefix of, or one within
/// a small edit distance (1 for short names, 2 from five letters on; a swap counts as one).
fn nearest_option(sub: Sub, spelled: &str) -> Option<&'static str> {
    let typed = spelled.trim_start_matches('-');
    if typed.chars().count() < 2 {
        return None;
    }
    let names: Vec<&'static str> = table::options_of(sub)
        .flat_map(|o| std::iter::once(o.long).chain(o.aliases.iter().copied()))
        .collect();
    nearest(typed, names.iter().map(|n| (&n[2..], *n)))
}

/// The candidate nearest to `typed` (see [`nearest_option`]); the first one on a tie.
pub(crate) fn nearest<'a>(
    typed: &str,
    candidates: impl Iterator<Item = (&'a str, &'a str)> + Clone,
) -> Option<&'a str> {
    if typed.len() >= 3 {
        let mut prefixed = candidates
            .clone()
            .filter(|(name, _)| name.starts_with(typed));
        if let (Some((_, only)), None) = (prefixed.next(), prefixed.next()) {
            return Some(only);
        }
    }
    let limit = if typed.chars().count() >= 5 { 2 } else { 1 };
    candidates
        .map(|(name, shown)| (edit_distance(typed, name), shown))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, shown)| shown)
}

/// The optimal-string-alignment distance: insertions, deletions, substitutions and swaps of
/// two neighbours each cost one (`warmpu` is one from `warmup`).
pub(crate) fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut rows = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in rows.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in rows[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut d = (rows[i - 1][j] + 1)
                .min(rows[i][j - 1] + 1)
                .min(rows[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                d = d.min(rows[i - 2][j - 2] + 1);
            }
            rows[i][j] = d;
        }
    }
    rows[a.len()][b.len()]
}

/// The word after `coldtrace` that is no subcommand: the nearest one, every one, and for a
/// program name how to measure it.
pub(crate) fn unknown_subcommand(word: &str) -> UsageError {
    let names: Vec<&'static str> = table::subcommands().map(|s| s.name).collect();
    let all = names.join(", ");
    let near = nearest(word, names.iter().map(|n| (*n, *n)));
    usage(match near {
        Some(near) => format!(
            "unknown subcommand '{word}' (did you mean {near}?); the subcommands are {all}"
        ),
        None => format!(
            "unknown subcommand '{word}'; the subcommands are {all} (to measure a command: coldtrace run -- {word} ...)"
        ),
    })
}

/// An option before the subcommand (`coldtrace -n 5 -- cmd`, hyperfine's and time's order).
pub(crate) fn option_before_subcommand(word: &str) -> UsageError {
    let spelled = word.split('=').next().unwrap_or(word);
    let taker = table::subcommands().find(|s| lookup(s.sub, spelled).is_some());
    usage(match taker {
        Some(s) => format!(
            "options go after the subcommand: coldtrace {} {word} ... (see `coldtrace {} --help`)",
            s.name, s.name
        ),
        None => format!("unknown option '{word}' before the subcommand; see `coldtrace --help`"),
    })
}

/// `-n NAME`, hyperfine's habit (its `-n` names a command), when the value is no number: the
/// pointed error that says which flag names a command here.
pub(crate) fn runs_habit(spelled: &str, value: &str) -> Option<UsageError> {
    let a_name = value.chars().any(char::is_alphabetic);
    (spelled == "-n" && a_name).then(|| {
        usage(crate::text::escape_controls(&format!(
            "-n {value}: coldtrace's -n is the number of runs (--runs, e.g. -n 10); to name a command as hyperfine's -n NAME does, use --command-name {}",
            crate::text::quote(&[value.to_string()])
        )))
    })
}

/// An `--events` name that is no perf event: the nearest name (case aside, or within a small
/// edit distance), else every name.
pub(crate) fn unknown_event(name: &str) -> UsageError {
    let lower = name.to_lowercase();
    let folded: Vec<(String, &'static str)> =
        PerfEvent::names().map(|n| (n.to_lowercase(), n)).collect();
    let near = folded
        .iter()
        .find(|(n, _)| *n == lower)
        .map(|(_, shown)| *shown)
        .or_else(|| nearest(&lower, folded.iter().map(|(n, shown)| (n.as_str(), *shown))));
    if let Some(near) = near {
        return usage(format!(
            "--events: unknown event '{name}' (did you mean {near}?)"
        ));
    }
    let of = |kind: Kind| -> Vec<&'static str> {
        PerfEvent::all()
            .filter(|e| e.kind() == kind)
            .map(PerfEvent::name)
            .collect()
    };
    usage(format!(
        "--events: unknown event '{name}'; software: {}; hardware: {}; cache: {{L1-dcache,\
         L1-icache,LLC,dTLB,iTLB,branch,node}}-{{loads,load-misses,stores,store-misses,\
         prefetches,prefetch-misses}}",
        of(Kind::Software).join(", "),
        of(Kind::Hardware).join(", ")
    ))
}

/// Refuses an `--out` that is GNU time's `-o FILE` habit (`-o null`, `-o /dev/null`, `-o -`)
/// rather than a batch directory, before anything creates a directory of that name.
pub(crate) fn check_out_dir(spelled: &str, dir: &OsStr) -> Result<(), UsageError> {
    let habit = [
        "null",
        "/dev/null",
        "-",
        "/dev/stdout",
        "/dev/stderr",
        "inherit",
        "pipe",
    ];
    let text = dir.to_string_lossy();
    if habit.contains(&text.as_ref()) {
        return Err(usage(format!(
            "{spelled} {text}: -o/--out is coldtrace's batch directory, not GNU time's -o FILE; \
             to discard the command's output use --output null; for GNU time's report in a file \
             use `coldtrace time -o FILE` (a directory really named {text}: --out ./{text})"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(list: &[&str]) -> Vec<OsString> {
        list.iter().map(OsString::from).collect()
    }

    fn values(read: &Read, long: &str) -> Vec<String> {
        read.all(long).map(Occurrence::text).collect()
    }

    fn error(sub: Sub, list: &[&str]) -> String {
        match read(sub, os(list)) {
            Err(e) => e.0,
            Ok(r) => panic!("expected an error, got {r:?}"),
        }
    }

    #[test]
    fn every_spelling_of_a_value_gives_the_same_value() {
        for spelling in [
            &["--runs", "3"][..],
            &["--runs=3"],
            &["-n", "3"],
            &["-n3"],
            &["-n=3"],
        ] {
            let r = read(Sub::Run, os(spelling)).unwrap();
            assert_eq!(r.text("--runs").as_deref(), Some("3"), "{spelling:?}");
        }
        let r = read(Sub::Run, os(&["--out=d", "--label=a=b", "--timeout=1.5"])).unwrap();
        assert_eq!(r.text("--out").as_deref(), Some("d"));
        assert_eq!(r.text("--label").as_deref(), Some("a=b"));
        assert_eq!(r.text("--timeout").as_deref(), Some("1.5"));
        let r = read(Sub::Compare, os(&["--shuffle=1", "a", "b"])).unwrap();
        assert_eq!(r.text("--shuffle").as_deref(), Some("1"));
        assert_eq!(r.operands, os(&["a", "b"]));
    }

    #[test]
    fn a_value_that_looks_like_a_flag_is_still_the_value() {
        let r = read(
            Sub::Run,
            os(&["--label", "--json", "--out", "--out", "--", "x"]),
        )
        .unwrap();
        assert_eq!(r.text("--label").as_deref(), Some("--json"));
        assert_eq!(r.text("--out").as_deref(), Some("--out"));
        assert!(!r.has("--json"));
        assert_eq!(r.operands, os(&["x"]));
        let r = read(Sub::Run, os(&["--label=", "--", "x"])).unwrap();
        assert_eq!(r.text("--label").as_deref(), Some(""));
    }

    #[test]
    fn bundled_switches_and_aliases() {
        let r = read(Sub::Run, os(&["-qn5", "--evict-first-only", "--", "x"])).unwrap();
        assert!(r.has("--quiet") && r.has("--cold-first-only"));
        assert_eq!(r.text("--runs").as_deref(), Some("5"));
        assert!(error(Sub::Run, &["-qz", "--", "x"]).starts_with("unknown option '-z' in '-qz'"));
        assert!(error(Sub::Run, &["-timeout", "2", "--", "x"])
            .starts_with("unknown option '-timeout' (did you mean --timeout?)"));
    }

    #[test]
    fn a_repeated_single_value_keeps_the_last_and_says_so_once() {
        let r = read(Sub::Run, os(&["-n", "2", "--runs=3", "-n", "4", "--", "x"])).unwrap();
        assert_eq!(values(&r, "--runs"), ["4"]);
        assert_eq!(
            r.notices,
            ["-n/--runs given 3 times ('2', '3', '4'): the last one, '4', is used"]
        );
        let r = read(Sub::Run, os(&["--label", "a", "--label", "b", "--", "x"])).unwrap();
        assert_eq!(r.text("--label").as_deref(), Some("b"));
        assert_eq!(r.notices.len(), 1);
        assert!(r.notices[0].starts_with("--label given twice ('a', 'b')"));
        // Repeatable options and switches say nothing.
        let r = read(
            Sub::Run,
            os(&["--evict", "a", "--evict", "b", "-q", "-q", "--", "x"]),
        )
        .unwrap();
        assert_eq!(values(&r, "--evict"), ["a", "b"]);
        assert!(r.notices.is_empty());
    }

    #[test]
    fn implied_shorts_and_hyperfines_short_names() {
        let r = read(Sub::Compare, os(&["-S", "a", "b"])).unwrap();
        assert_eq!(r.text("--shell").as_deref(), Some("default"));
        assert_eq!(r.operands, os(&["a", "b"]));
        let r = read(Sub::Compare, os(&["-Ni", "-w3", "-r", "4", "a", "b"])).unwrap();
        assert_eq!(r.text("--shell").as_deref(), Some("none"));
        assert!(r.has("--ignore-failure"));
        assert_eq!(r.text("--warmup").as_deref(), Some("3"));
        assert_eq!(r.text("--runs").as_deref(), Some("4"));
        let r = read(Sub::Run, os(&["--shell=bash --norc", "--", "x"])).unwrap();
        assert_eq!(r.text("--shell").as_deref(), Some("bash --norc"));
        let r = read(
            Sub::Compare,
            os(&["-P", "n", "1", "3", "-L", "x", "a,b", "c {n}"]),
        )
        .unwrap();
        assert_eq!(
            r.last("--parameter-scan").unwrap().values,
            os(&["n", "1", "3"])
        );
        assert_eq!(
            r.last("--parameter-list").unwrap().values,
            os(&["x", "a,b"])
        );
        assert_eq!(r.operands, os(&["c {n}"]));
        let r = read(Sub::Compare, os(&["-p", "a", "-p", "b", "x", "y"])).unwrap();
        assert_eq!(values(&r, "--prepare"), ["a", "b"]);
        assert!(
            r.notices.is_empty(),
            "--prepare is one per command: {:?}",
            r.notices
        );
        assert!(error(Sub::Run, &["-P", "n", "1"])
            .starts_with("option -P needs 3 values (NAME MIN MAX), got 2"));
        assert!(
            error(Sub::Run, &["-p", "--", "x"]).contains("GNU time's -p is `coldtrace time -p`")
        );
    }

    #[test]
    fn missing_values_and_values_given_to_switches() {
        assert_eq!(
            error(Sub::Run, &["--label"]),
            "option --label needs a value (TEXT); see `coldtrace run --help`"
        );
        assert!(error(Sub::Run, &["--label", "--", "x"]).contains("needs a value"));
        assert!(error(Sub::Run, &["-n"]).starts_with("option -n needs a value (N)"));
        assert!(error(Sub::Run, &["--json=yes", "--", "x"])
            .starts_with("--json takes no value, got '--json=yes'"));
    }

    #[test]
    fn unknown_options_get_the_nearest_name_or_their_home() {
        assert_eq!(
            error(Sub::Run, &["--warmpu", "2", "--", "x"]),
            "unknown option '--warmpu' (did you mean --warmup?); see `coldtrace run --help`"
        );
        assert!(error(Sub::Run, &["--runz=2", "--", "x"]).contains("did you mean --runs?"));
        assert!(
            error(Sub::Run, &["--ignore", "--", "x"]).contains("did you mean --ignore-failure?")
        );
        assert!(
            error(Sub::Run, &["--markdown", "--", "x"])
                == "--markdown is an option of `coldtrace report`"
        );
        assert!(error(Sub::Run, &["--export-asciidoc", "f", "--", "x"])
            .starts_with("coldtrace run has no --export-asciidoc: --export-markdown FILE"));
        assert!(error(Sub::Run, &["-f", "%e", "--", "x"]).contains("coldtrace time -f FORMAT"));
        let far = error(Sub::Run, &["--frobnicate", "--", "x"]);
        assert_eq!(
            far,
            "unknown option '--frobnicate'; see `coldtrace run --help`"
        );
        assert!(error(Sub::Report, &["--markdwn", "d"]).contains("did you mean --markdown?"));
    }

    #[test]
    fn an_option_of_another_subcommand_is_one_line_that_fits_80_columns() {
        // Every option some subcommand takes, given to each subcommand that does not take it,
        // as the terminal shows it after `coldtrace: error: `.
        let mut widest = (0, String::new());
        for opt in table::options() {
            for sub in table::subcommands().filter(|s| !opt.taken_by(s.sub)) {
                if table::find_foreign(opt.long).is_some() {
                    continue;
                }
                let line = format!("coldtrace: error: {}", unknown_option(sub.sub, opt.long).0);
                assert!(line.contains(opt.long) && !line.contains('\n'), "{line}");
                let width = line.chars().count();
                if width > widest.0 {
                    widest = (width, line);
                }
            }
        }
        assert!(widest.0 <= 80, "{} columns: {}", widest.0, widest.1);
    }

    #[test]
    fn the_edit_distance_counts_a_swap_as_one() {
        assert_eq!(edit_distance("warmpu", "warmup"), 1);
        assert_eq!(edit_distance("runs", "runs"), 0);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(
            nearest(
                "comapre",
                [("run", "run"), ("compare", "compare")].into_iter()
            ),
            Some("compare")
        );
        assert_eq!(nearest("xyz", [("run", "run")].into_iter()), None);
    }

    #[test]
    fn words_before_the_separator_of_run() {
        assert!(error(Sub::Run, &["ls", "-l"]).contains("put the command after `--`"));
        let r = read(Sub::Run, os(&["-n", "2", "sleep 0.1"])).unwrap();
        assert_eq!((r.operands, r.separator), (os(&["sleep 0.1"]), false));
        assert!(error(Sub::Run, &["-n", "2", "true", "--", "x"])
            .starts_with("unexpected argument 'true' before `--`"));
        let r = read(Sub::Run, os(&["--", "x", "--json", "--"])).unwrap();
        assert_eq!(r.operands, os(&["x", "--json", "--"]));
        assert!(!r.has("--json") && r.separator);
    }

    #[test]
    fn help_wins_over_a_complaint_and_short_help_is_short() {
        assert_eq!(
            read(Sub::Run, os(&["--bogus", "--help"])).unwrap().help,
            Some(HelpKind::Long)
        );
        assert_eq!(
            read(Sub::Run, os(&["-h"])).unwrap().help,
            Some(HelpKind::Short)
        );
        // After `--` it is the command's own flag.
        assert_eq!(
            read(Sub::Run, os(&["--", "ls", "--help"])).unwrap().help,
            None
        );
    }

    #[test]
    fn subcommand_and_misplaced_option_messages() {
        let e = unknown_subcommand("comapre").0;
        assert_eq!(
            e,
            "unknown subcommand 'comapre' (did you mean compare?); the subcommands are run, compare, report, boot, context, time, man, completions, cleanup"
        );
        assert!(unknown_subcommand("python3")
            .0
            .contains("coldtrace run -- python3 ..."));
        assert!(option_before_subcommand("-n")
            .0
            .contains("coldtrace run -n ..."));
        assert!(option_before_subcommand("--bogus")
            .0
            .starts_with("unknown option '--bogus'"));
    }

    #[test]
    fn unknown_events_get_the_nearest_perf_name() {
        assert_eq!(
            unknown_event("majorfaults").0,
            "--events: unknown event 'majorfaults' (did you mean major-faults?)"
        );
        assert!(unknown_event("Instructions")
            .0
            .contains("did you mean instructions?"));
        assert!(unknown_event("l1-dcache-loads")
            .0
            .contains("did you mean L1-dcache-loads?"));
        assert!(unknown_event("dtlb-load-miss")
            .0
            .contains("did you mean dTLB-load-misses?"));
        let all = unknown_event("zzzzzzzz").0;
        assert!(
            all.contains("alignment-faults") && all.contains("ref-cycles"),
            "{all}"
        );
        assert!(!all.contains('\n'));
    }

    #[test]
    fn value_hints() {
        let e = runs_habit("-n", "fast").unwrap().0;
        assert!(e.contains("use --command-name fast"), "{e}");
        assert!(runs_habit("--runs", "fast").is_none());
        assert!(
            runs_habit("-n", "0").is_none(),
            "a number: the range error says it"
        );
        let e = check_out_dir("-o", OsStr::new("null")).unwrap_err().0;
        assert!(
            e.contains("not GNU time's -o FILE") && e.contains("--output null"),
            "{e}"
        );
        assert!(check_out_dir("-o", OsStr::new("results")).is_ok());
        assert!(check_out_dir("-o", OsStr::new("./null")).is_ok());
    }
}
