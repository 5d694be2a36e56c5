//! Dispatch of a parsed command to the module that does it, and what goes to stdout/stderr.
#![forbid(unsafe_code)]

use crate::batch::{self, BatchError, Signals};
use crate::cli::Command;

/// What `main` prints on stdout and exits with.
pub struct AppOutput {
    /// Text for stdout.
    pub stdout: String,
    /// Process exit code.
    pub exit_code: u8,
}

/// Runs a parsed command.
pub fn execute(command: Command) -> Result<AppOutput, BatchError> {
    match command {
        Command::Help(text) => Ok(AppOutput {
            stdout: text.to_string(),
            exit_code: 0,
        }),
        Command::Version => Ok(AppOutput {
            stdout: format!("coldtrace {}\n", env!("CARGO_PKG_VERSION")),
            exit_code: 0,
        }),
        Command::Run(plan) => {
            let signals = Signals::install()?;
            let outcome = batch::run(&plan, &signals)?;
            if !plan.quiet {
                for notice in &outcome.notices {
                    eprintln!("coldtrace: {notice}");
                }
                let argv: Vec<String> = plan
                    .argv
                    .iter()
                    .map(|a| a.to_string_lossy().into_owned())
                    .collect();
                let what = if plan.is_single_run() {
                    "1 run".to_string()
                } else {
                    format!("{} runs", outcome.counts.counted)
                };
                let label = plan
                    .label
                    .as_deref()
                    .map_or(String::new(), |l| format!(" [{l}]"));
                let title = format!("coldtrace: {what} of {}{label}", shell_words(&argv));
                eprint!(
                    "{}",
                    crate::render::table(&outcome, &title, crate::render::use_colour())
                );
            }
            let stdout = if plan.json {
                format!("{}\n", outcome.json)
            } else {
                String::new()
            };
            Ok(AppOutput {
                stdout,
                exit_code: outcome.exit_code,
            })
        }
        Command::Report(_) | Command::Context { .. } => Err(BatchError {
            message: "not built yet".into(),
            exit_code: 125,
        }),
    }
}

/// Quotes words for display the way a shell would need them.
pub fn shell_words(words: &[String]) -> String {
    words
        .iter()
        .map(|w| {
            if !w.is_empty()
                && w.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-_./=:,+@%".contains(&b))
            {
                w.clone()
            } else {
                format!("'{}'", w.replace('\'', r"'\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}
