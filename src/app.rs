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
            if let (Some(message), 0) = (&outcome.start_failure, outcome.counts.counted) {
                // Nothing ran: one line, like a PATH lookup failure, not an empty table.
                eprintln!("coldtrace: error: {message}");
            } else if !plan.quiet {
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
                let title = format!(
                    "coldtrace: {what} of {}{label}",
                    shorten(&crate::words::quote(&argv), 160)
                );
                eprint!(
                    "{}",
                    crate::render::table(&outcome, &title, crate::render::use_colour())
                );
            }
            let stdout = json_line(plan.json, &outcome.json);
            Ok(AppOutput {
                stdout,
                exit_code: outcome.exit_code,
            })
        }
        Command::Compare(plan) => {
            let signals = Signals::install()?;
            let outcome = crate::compare::run(&plan, &signals)?;
            if !plan.quiet {
                let mut said: Vec<&str> = Vec::new();
                for notice in outcome.batches.iter().flat_map(|b| b.notices.iter()) {
                    if !said.contains(&notice.as_str()) {
                        eprintln!("coldtrace: {notice}");
                        said.push(notice);
                    }
                }
                eprint!(
                    "{}",
                    crate::render::compare_table(&outcome, crate::render::use_colour())
                );
            }
            let stdout = json_line(plan.json, &outcome.json);
            Ok(AppOutput {
                stdout,
                exit_code: outcome.exit_code,
            })
        }
        Command::Report(args) => {
            let rows = crate::report::read_all(&args.dirs).map_err(|e| BatchError {
                message: e.0,
                exit_code: 125,
            })?;
            let stdout = if args.json {
                format!(
                    "{}\n",
                    serde_json::to_string_pretty(&rows).unwrap_or_default()
                )
            } else if args.markdown {
                crate::report::render_markdown(&rows)
            } else {
                crate::report::render_table(&rows)
            };
            Ok(AppOutput {
                stdout,
                exit_code: 0,
            })
        }
        Command::Context { json } => {
            let context = ContextBlock {
                system: crate::context::SystemContext::read(),
                capabilities: crate::context::Capabilities::probe(),
                environment: crate::context::EnvMarkers::read(),
                coldtrace_version: env!("CARGO_PKG_VERSION"),
            };
            let stdout = if json {
                format!(
                    "{}\n",
                    serde_json::to_string_pretty(&context).unwrap_or_default()
                )
            } else {
                render_context(&context)
            };
            Ok(AppOutput {
                stdout,
                exit_code: 0,
            })
        }
    }
}

/// `coldtrace context`: what `batch.json` records as its context, without running anything.
struct ContextBlock {
    system: crate::context::SystemContext,
    capabilities: crate::context::Capabilities,
    environment: crate::context::EnvMarkers,
    coldtrace_version: &'static str,
}
crate::serialize_struct!(ContextBlock {
    system,
    capabilities,
    environment,
    coldtrace_version
});

fn render_context(c: &ContextBlock) -> String {
    use std::fmt::Write;
    let s = &c.system;
    let q = |v: &Option<String>| v.clone().unwrap_or_else(|| "?".into());
    let kib = |v: Option<u64>| v.map_or("?".into(), |k| crate::render::human_kib(k as f64));
    let yes = |b: bool| if b { "yes" } else { "no" };
    let cap = &c.capabilities;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "kernel        {} {}",
        q(&s.kernel_release),
        q(&s.kernel_version)
    );
    let _ = writeln!(out, "boot id       {}", q(&s.boot_id));
    let _ = writeln!(
        out,
        "uptime        {}",
        s.uptime_s.map_or("?".into(), crate::render::human_uptime)
    );
    let _ = writeln!(
        out,
        "cpu           {} × {}",
        s.cpu_count.map_or("?".into(), |n| n.to_string()),
        q(&s.cpu_model)
    );
    let _ = writeln!(
        out,
        "memory        {} total, {} available",
        kib(s.mem_total_kib),
        kib(s.mem_available_kib)
    );
    let _ = writeln!(
        out,
        "load          {}",
        match (s.load_avg_1m, s.load_avg_5m, s.load_avg_15m) {
            (Some(a), Some(b), Some(c)) => format!("{a:.2} {b:.2} {c:.2}"),
            _ => "?".into(),
        }
    );
    let _ = writeln!(out, "cachestat     {}", yes(cap.cachestat));
    let _ = writeln!(out, "PSI           {}", yes(cap.psi));
    let _ = writeln!(
        out,
        "drop_caches   {}",
        if cap.drop_caches_permitted {
            "permitted"
        } else {
            "not permitted (needs root)"
        }
    );
    let _ = writeln!(out, "task I/O acct {}", yes(cap.task_io_accounting));
    let _ = writeln!(
        out,
        "clear_refs    {}",
        if cap.clear_refs_writable {
            "writable (the RSS floor is reset before each spawn)"
        } else {
            "not writable"
        }
    );
    let _ = writeln!(
        out,
        "perf paranoid {}",
        cap.perf_event_paranoid
            .map_or("?".into(), |p| p.to_string())
    );
    if let Some(v) = &c.environment.virtual_env {
        let _ = writeln!(out, "VIRTUAL_ENV   {v}");
    }
    if let Some(v) = &c.environment.conda_prefix {
        let _ = writeln!(out, "CONDA_PREFIX  {v}");
    }
    out
}

/// `--json` output: the document and a newline, or nothing.
fn json_line(wanted: bool, json: &str) -> String {
    if wanted {
        format!("{json}\n")
    } else {
        String::new()
    }
}

/// At most `max` characters of `text`, with `…` when cut.
pub fn shorten(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        text.to_string()
    } else {
        let mut cut: String = text.chars().take(max).collect();
        cut.push('…');
        cut
    }
}
