//! The commands of a `run` or a `compare`: a parameter scan expanded, `{NAME}` replaced, the
//! shell applied, and each command given its name and its `--setup`/`--prepare`/`--conclude`/
//! `--cleanup`. It builds descriptions of commands; checking them into plans is `check.rs`'s job.
#![forbid(unsafe_code)]

use crate::cli::args::Read;
use crate::cli::scan::{self, Binding, MAX_COMMANDS};
use crate::cli::usage::{usage, usage_fitting, UsageError};
use std::ffi::OsString;

/// One command to measure, with what belongs to it alone.
#[derive(Clone, Debug, Default)]
pub(crate) struct CommandSpec {
    /// What is executed (through the shell, with `--shell`).
    pub argv: Vec<OsString>,
    /// The command as the user sees it: their string, or their words quoted.
    pub text: String,
    /// `--command-name`, parameters replaced.
    pub name: Option<String>,
    /// The parameter values it was made with.
    pub parameters: Binding,
    /// `--setup`, `--prepare`, `--conclude`, `--cleanup` for this command, parameters replaced.
    pub setup: Option<OsString>,
    pub prepare: Option<OsString>,
    pub conclude: Option<OsString>,
    pub cleanup: Option<OsString>,
}

/// How the commands were given.
pub(crate) enum Given<'a> {
    /// `run -- COMMAND ARG...`: one command as words.
    Words(&'a [OsString]),
    /// `compare 'CMD A' 'CMD B'`: each command one string, split as a shell would (as bytes:
    /// never decoded).
    Strings(&'a [OsString]),
}

/// The commands, expanded over the parameter scan (each value, every command: the commands
/// vary fastest, as in hyperfine).
pub(crate) fn commands(read: &Read, given: Given<'_>) -> Result<Vec<CommandSpec>, UsageError> {
    let bindings = scan::bindings(read)?;
    let scanned = bindings.iter().any(|b| !b.is_empty());
    let shell = shell_words(read)?;
    // `-N`/`--shell none` given: the user asked for words, syntax and all.
    let words_asked = read.text("--shell").is_some();
    let count = match given {
        Given::Words(_) => 1,
        Given::Strings(texts) => texts.len(),
    };
    if bindings.len().saturating_mul(count) > MAX_COMMANDS {
        return Err(usage(format!(
            "the scan makes more than {MAX_COMMANDS} commands; scan fewer values"
        )));
    }
    let mut specs = Vec::with_capacity(bindings.len() * count);
    for binding in &bindings {
        for i in 0..count {
            let (argv, text) = match &given {
                Given::Words(words) => from_words(words, binding, shell.as_deref()),
                Given::Strings(texts) => {
                    let how = match &shell {
                        Some(shell) => Split::Through(shell),
                        None if words_asked => Split::Words,
                        None => Split::WordsWithoutSyntax,
                    };
                    // One string (`run 'sleep 0.1'`) is "the command".
                    let index = (count > 1).then_some(i);
                    from_string(&texts[i], index, binding, how)?
                }
            };
            specs.push(CommandSpec {
                argv,
                text,
                parameters: binding.clone(),
                ..CommandSpec::default()
            });
        }
    }
    assign_names(read, &mut specs, scanned)?;
    assign_helpers(read, &mut specs)?;
    Ok(specs)
}

/// `--shell`: `None` to execute directly (the default and `-N`), else the shell's words.
fn shell_words(read: &Read) -> Result<Option<Vec<String>>, UsageError> {
    let Some(shell) = read.text("--shell") else {
        return Ok(None);
    };
    match shell.as_str() {
        "none" => Ok(None),
        "default" => Ok(Some(vec!["sh".into()])),
        text => {
            let words = crate::text::split(text).map_err(|e| usage(format!("--shell: {e}")))?;
            if words.is_empty() {
                return Err(usage(
                    "--shell: expected a shell, e.g. --shell bash, got ''",
                ));
            }
            Ok(Some(words))
        }
    }
}

/// `run`'s words, parameters replaced; through the shell as one string.
fn from_words(
    words: &[OsString],
    binding: &Binding,
    shell: Option<&[String]>,
) -> (Vec<OsString>, String) {
    let argv: Vec<OsString> = words
        .iter()
        .map(|w| scan::substitute_os(w, binding))
        .collect();
    let lossy: Vec<String> = argv
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let text = crate::text::quote(&lossy);
    match shell {
        // `run -S -- 'sleep 0.1; echo'` is one string already (passed as given); several
        // words are quoted back.
        Some(shell) => {
            let script = if argv.len() == 1 {
                argv[0].clone()
            } else {
                OsString::from(&text)
            };
            let shown = script.to_string_lossy().into_owned();
            (through(shell, &script), shown)
        }
        None => (argv, text),
    }
}

/// How a command string becomes a command.
enum Split<'a> {
    /// Handed whole to this shell.
    Through(&'a [String]),
    /// Split into words, syntax and all (`-N`, `--shell none` given).
    Words,
    /// Split into words; shell syntax in it is refused (the default).
    WordsWithoutSyntax,
}

/// `compare`'s string, parameters replaced, split into words (or handed to the shell).
fn from_string(
    given: &std::ffi::OsStr,
    index: Option<usize>,
    binding: &Binding,
    how: Split<'_>,
) -> Result<(Vec<OsString>, String), UsageError> {
    use std::os::unix::ffi::{OsStrExt, OsStringExt};
    let exact = scan::substitute_os(given, binding);
    let text = exact.to_string_lossy().into_owned();
    match how {
        Split::Through(shell) => return Ok((through(shell, &exact), text)),
        Split::WordsWithoutSyntax => {
            let which = match index {
                None => "the command".to_string(),
                Some(i) => format!("command {}", i + 1),
            };
            refuse_shell_syntax(&exact, &text, &which)?;
        }
        Split::Words => {}
    }
    let words = crate::text::split_bytes(exact.as_bytes())
        .map_err(|e| usage(format!("command {}: {e}", index.unwrap_or(0) + 1)))?;
    if words.is_empty() {
        return Err(usage(format!(
            "command {} is empty; give each command as one non-empty argument",
            index.unwrap_or(0) + 1
        )));
    }
    Ok((words.into_iter().map(OsString::from_vec).collect(), text))
}

/// A command string that a shell would have read differently from coldtrace's splitting — a
/// pipe, a redirection, a variable, a glob, `~` — stops before anything runs, with the fix:
/// run as words, `ls | wc -l` would give `|` to `ls`, fail, and look like a failing command.
fn refuse_shell_syntax(exact: &std::ffi::OsStr, text: &str, which: &str) -> Result<(), UsageError> {
    use std::os::unix::ffi::OsStrExt;
    let Some(syntax) = crate::text::shell_syntax(exact.as_bytes()) else {
        return Ok(());
    };
    let fix = "add -S (or --shell bash)";
    let full = |c: &str| {
        format!(
            "{syntax} in '{c}' is shell syntax, and coldtrace runs no shell unless asked: {fix}"
        )
    };
    let short = |c: &str| format!("{syntax} in '{c}' is shell syntax: {fix}");
    let nameless = |_: &str| format!("{syntax} in {which} is shell syntax: {fix}");
    Err(usage_fitting(text, &[&full, &short, &nameless]))
}

fn through(shell: &[String], script: &std::ffi::OsStr) -> Vec<OsString> {
    shell
        .iter()
        .map(OsString::from)
        .chain([OsString::from("-c"), script.to_os_string()])
        .collect()
}

/// `--command-name`: without a scan one per command in order (fewer leave the rest unnamed);
/// with a scan once for all (parameters replaced) or exactly once per command (hyperfine's).
fn assign_names(read: &Read, specs: &mut [CommandSpec], scanned: bool) -> Result<(), UsageError> {
    let names: Vec<String> = read.all("--command-name").map(|o| o.text()).collect();
    let fits = if scanned {
        names.len() <= 1 || names.len() == specs.len()
    } else {
        names.len() <= specs.len()
    };
    if !fits {
        return Err(usage(format!(
            "--command-name given {} times for {} commands: {}",
            names.len(),
            specs.len(),
            if scanned {
                "give it once (for every value) or once per command"
            } else {
                "give it at most once per command"
            }
        )));
    }
    for (i, spec) in specs.iter_mut().enumerate() {
        let name = names.get(i).or(if scanned { names.first() } else { None });
        spec.name = name.map(|n| scan::substitute(n, &spec.parameters));
    }
    Ok(())
}

/// The commands around the runs: `--prepare`/`--conclude` once for all or once per command
/// (hyperfine's rule), `--setup`/`--cleanup` once for all; parameters replaced in each.
fn assign_helpers(read: &Read, specs: &mut [CommandSpec]) -> Result<(), UsageError> {
    // Shell commands are passed to `sh -c` as given, byte for byte.
    let exact = |o: &crate::cli::args::Occurrence| o.values.first().cloned().unwrap_or_default();
    let per_command = |long: &str| -> Result<Vec<OsString>, UsageError> {
        let given: Vec<OsString> = read.all(long).map(exact).collect();
        if given.len() > 1 && given.len() != specs.len() {
            return Err(usage(format!(
                "{long} given {} times for {} command{}: give it once (for every command) or once per command",
                given.len(),
                specs.len(),
                if specs.len() == 1 { "" } else { "s" }
            )));
        }
        Ok(given)
    };
    let prepare = per_command("--prepare")?;
    let conclude = per_command("--conclude")?;
    let setup = read.last("--setup").map(exact);
    let cleanup = read.last("--cleanup").map(exact);
    for (i, spec) in specs.iter_mut().enumerate() {
        let pick = |list: &[OsString]| list.get(i).or(list.first()).cloned();
        let replace = |s: Option<OsString>| s.map(|s| scan::substitute_os(&s, &spec.parameters));
        spec.prepare = replace(pick(&prepare));
        spec.conclude = replace(pick(&conclude));
        spec.setup = replace(setup.clone());
        spec.cleanup = replace(cleanup.clone());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::args;
    use crate::cli::table::Sub;

    fn specs(sub: Sub, list: &[&str]) -> Result<Vec<CommandSpec>, UsageError> {
        let words: Vec<OsString> = list.iter().map(OsString::from).collect();
        let read = args::read(sub, words)?;
        match sub {
            Sub::Run => commands(&read, Given::Words(&read.operands)),
            _ => commands(&read, Given::Strings(&read.operands)),
        }
    }

    fn argv(spec: &CommandSpec) -> Vec<String> {
        spec.argv
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn a_scan_of_run_makes_one_command_per_value() {
        let s = specs(Sub::Run, &["-P", "n", "1", "3", "--", "sleep", "0.0{n}"]).unwrap();
        let all: Vec<Vec<String>> = s.iter().map(argv).collect();
        assert_eq!(
            all,
            [["sleep", "0.01"], ["sleep", "0.02"], ["sleep", "0.03"]]
        );
        assert_eq!(s[1].text, "sleep 0.02");
        assert_eq!(s[2].parameters, [("n".to_string(), "3".to_string())]);
    }

    #[test]
    fn a_scan_of_compare_varies_the_commands_fastest() {
        let s = specs(Sub::Compare, &["-L", "v", "a,b", "echo {v}", "printf {v}"]).unwrap();
        let texts: Vec<&str> = s.iter().map(|c| c.text.as_str()).collect();
        assert_eq!(texts, ["echo a", "printf a", "echo b", "printf b"]);
    }

    #[test]
    fn names_and_helpers_follow_hyperfines_counts() {
        let s = specs(
            Sub::Compare,
            &[
                "-P",
                "n",
                "1",
                "2",
                "--command-name",
                "n={n}",
                "-p",
                "p{n}",
                "-s",
                "s{n}",
                "x {n}",
            ],
        )
        .unwrap();
        assert_eq!(s[1].name.as_deref(), Some("n=2"));
        assert_eq!(s[1].prepare.as_deref(), Some("p2".as_ref()));
        assert_eq!(s[0].setup.as_deref(), Some("s1".as_ref()));
        let s = specs(Sub::Compare, &["-C", "c1", "-C", "c2", "a", "b"]).unwrap();
        assert_eq!(s[1].conclude.as_deref(), Some("c2".as_ref()));
        let e = specs(Sub::Compare, &["-p", "1", "-p", "2", "a", "b", "c"])
            .unwrap_err()
            .0;
        assert!(
            e.starts_with("--prepare given 2 times for 3 commands"),
            "{e}"
        );
        let e = specs(Sub::Run, &["-p", "1", "-p", "2", "--", "x"])
            .unwrap_err()
            .0;
        assert!(
            e.starts_with("--prepare given 2 times for 1 command:"),
            "{e}"
        );
        let s = specs(Sub::Compare, &["--command-name", "first", "a", "b"]).unwrap();
        assert_eq!(
            (s[0].name.as_deref(), s[1].name.as_deref()),
            (Some("first"), None)
        );
        let e = specs(
            Sub::Compare,
            &[
                "--command-name",
                "1",
                "--command-name",
                "2",
                "--command-name",
                "3",
                "a",
                "b",
            ],
        );
        assert!(e.unwrap_err().0.contains("at most once per command"));
    }

    #[test]
    fn the_shell_gets_the_command_as_one_string() {
        let s = specs(Sub::Compare, &["-S", "sleep 0.1; true", "b"]).unwrap();
        assert_eq!(argv(&s[0]), ["sh", "-c", "sleep 0.1; true"]);
        let s = specs(Sub::Run, &["--shell", "bash --norc", "--", "echo", "a b"]).unwrap();
        assert_eq!(argv(&s[0]), ["bash", "--norc", "-c", "echo 'a b'"]);
        let s = specs(Sub::Run, &["-N", "--", "echo", "a b"]).unwrap();
        assert_eq!(argv(&s[0]), ["echo", "a b"]);
        assert!(specs(Sub::Run, &["--shell=", "--", "x"]).is_err());
    }
}
