//! Stage two of `run`'s flags (and of each command of a comparison): the raw flags checked and
//! combined into a [`Plan`], `--out` and the exports checked before anything runs. It checks
//! and builds plans; it reads no argv (that is `options.rs`) and runs nothing.
#![forbid(unsafe_code)]

use crate::cli::args;
use crate::cli::options::{count, seconds, RawRun};
use crate::cli::table::Sub;
use crate::cli::usage::{usage, usage_fitting, UsageError};
use crate::measure::perf::{default_events, PerfEvent};
use crate::measure::survivors::SurvivorPolicy;
use crate::plan::{
    ColdPlan, ColdWhen, Exports, IgnoreFailure, MetricView, OutputMode, Plan, RunBounds, StdinMode,
    TREE_VAR,
};
use crate::text::escape_controls;
use std::ffi::OsString;
use std::path::PathBuf;

/// Stage two: the raw flags checked and combined into a plan.
pub(crate) fn check_run(raw: RawRun) -> Result<Plan, UsageError> {
    let (runs, bounds) = run_count(&raw)?;
    let warmup = count("-w/--warmup", raw.warmup.as_deref(), 0, 0)?;
    let out_dir = out_dir(raw.out.as_ref())?;
    let cold = cold_plan(&raw)?;
    let cycles = cold.when.and_then(ColdWhen::cycles);
    if cycles.is_some() && bounds.is_some() {
        return Err(usage(
            "--cold-cycles needs -n K, the runs in each cycle (a count chosen by time cannot be repeated per cycle)",
        ));
    }
    let single = runs == 1 && warmup == 0 && bounds.is_none() && cycles.is_none_or(|m| m == 1);
    let output = output_mode(
        raw.output.as_deref(),
        raw.keep_output,
        out_dir.is_some(),
        single,
    )?;
    let stdin = stdin_mode(raw.stdin.clone(), single)?;
    let timeout_ns = raw
        .timeout
        .as_deref()
        .map(|v| seconds("--timeout", v))
        .transpose()?;
    let kill_after_ns = match raw.kill_after.as_deref() {
        Some(v) => seconds("--kill-after", v)?,
        None => 2_000_000_000,
    };
    for (flag, cmd) in [
        ("--setup", &raw.setup),
        ("--prepare", &raw.prepare),
        ("--conclude", &raw.conclude),
        ("--cleanup", &raw.cleanup),
    ] {
        if cmd.as_ref().is_some_and(|c| c.is_empty()) {
            return Err(usage(format!("{flag}: expected a shell command, got ''")));
        }
    }
    let counters = perf_events(raw.events.as_deref(), raw.counters)?;
    let view = metric_view(raw.metrics.as_deref(), &counters, raw.sub)?;
    let exports = check_exports(&raw.exports, out_dir.as_deref())?;
    let program_name = raw.command[0].clone();
    if program_name.is_empty() {
        return Err(usage(
            "the command is an empty string; put a program name after `--`",
        ));
    }
    Ok(Plan {
        notices: raw.notices,
        program_path: PathBuf::from(&program_name),
        argv: raw.command,
        text: raw.text,
        runs,
        bounds,
        name: raw.name,
        parameters: raw.parameters,
        shell: raw.shell,
        scripts_through_sh: false,
        warmup,
        out_dir,
        json: raw.json,
        output,
        stdin,
        timeout_ns,
        kill_after_ns,
        escalate_after_ns: raw.kill_after.is_some().then_some(kill_after_ns),
        survivors: survivor_policy(raw.survivors.as_deref())?,
        setup: raw.setup,
        prepare: raw.prepare,
        conclude: raw.conclude,
        cleanup: raw.cleanup,
        ignore_failure: ignore_failure(raw.ignore_failure.as_ref())?,
        view,
        explain: raw.explain,
        label: raw.label,
        quiet: raw.quiet,
        cold,
        counters,
        minimal: raw.minimal,
        trace_tree: trace_tree(raw.tree.as_deref())?,
        in_comparison: false,
        exports,
    })
}

/// `--export-* FILE`, checked before anything runs (see [`crate::record::export_file`]):
/// each one writable as it will be written, no two naming one file, none inside the batch
/// directory `out_dir` (a batch must not end in a file that cannot be written, nor write an
/// export over its own records).
pub(crate) fn check_exports(
    exports: &Exports,
    out_dir: Option<&std::path::Path>,
) -> Result<Exports, UsageError> {
    let targets = exports.targets();
    if let (false, Some(target)) = (cfg!(feature = "full"), targets.first()) {
        return Err(super::runner_only(target.flag));
    }
    for target in &targets {
        if target.path.as_os_str().is_empty() || target.path.file_name().is_none() {
            let shown = escape_controls(&target.path.display().to_string());
            let flag = target.flag;
            return Err(usage(format!(
                "{flag}: expected a file name, got '{shown}'; e.g. {flag} results.out"
            )));
        }
    }
    let batch_dirs: Vec<&std::path::Path> = out_dir.into_iter().collect();
    crate::record::export_file::check_all(&targets, &batch_dirs).map_err(usage)?;
    Ok(exports.clone())
}

/// `-o/--out DIR`, checked: an empty path would put the batch's files in the current
/// directory, and GNU time's habits (`-o null`) are not directories.
pub(crate) fn out_dir(
    value: Option<&(String, std::ffi::OsString)>,
) -> Result<Option<PathBuf>, UsageError> {
    let Some((spelled, dir)) = value else {
        return Ok(None);
    };
    if dir.is_empty() {
        return Err(usage(format!(
            "{spelled}: expected a directory path, got ''; give a new or empty directory (-o/--out)"
        )));
    }
    args::check_out_dir(spelled, dir)?;
    Ok(Some(PathBuf::from(dir)))
}

/// `-n N` exactly, or else a count chosen by time within [`RunBounds`] (`-m`, `-M`,
/// `--max-time`), with hyperfine's defaults and its rule for `-M` alone.
fn run_count(raw: &RawRun) -> Result<(u32, Option<RunBounds>), UsageError> {
    let min = count("-m/--min-runs", raw.min_runs.as_deref(), 0, 1)?;
    let max = count("-M/--max-runs", raw.max_runs.as_deref(), 0, 1)?;
    let budget_ns = raw
        .max_time
        .as_deref()
        .map(|v| seconds("--max-time", v))
        .transpose()?;
    let by_time_given = raw.min_runs.is_some() || raw.max_runs.is_some() || budget_ns.is_some();
    if let Some((spelled, text)) = &raw.runs {
        if let Some(habit) = args::runs_habit(spelled, text) {
            return Err(habit);
        }
        if by_time_given {
            return Err(usage(format!(
                "{spelled} {text} fixes the number of runs; -m/--min-runs, -M/--max-runs and --max-time choose it by time: give one or the other"
            )));
        }
        let runs = count("-n/--runs", Some(text), 1, 1)?;
        return Ok((runs, None));
    }
    let max = raw.max_runs.is_some().then_some(max);
    let min = match (raw.min_runs.is_some(), max) {
        (true, _) => min,
        // hyperfine: an explicit maximum below the default minimum lowers the minimum.
        (false, Some(max)) => RunBounds::DEFAULT_MIN.min(max),
        (false, None) => RunBounds::DEFAULT_MIN,
    };
    if let Some(max) = max.filter(|max| min > *max) {
        return Err(usage(format!(
            "-m/--min-runs {min} is above -M/--max-runs {max}: no count satisfies both"
        )));
    }
    let bounds = RunBounds {
        min,
        max,
        budget_ns: budget_ns.unwrap_or(RunBounds::DEFAULT_BUDGET_NS),
    };
    Ok((min, Some(bounds)))
}

/// `--output` and `--keep-output`, or the default: inherit for one run (`-n 1`), else
/// `/dev/null` — with or without `--out` (where records go changes nothing measured).
/// `--survivors leave|kill|wait` (default: leave).
fn survivor_policy(value: Option<&str>) -> Result<SurvivorPolicy, UsageError> {
    match value {
        None => Ok(SurvivorPolicy::Leave),
        Some(v) => SurvivorPolicy::parse(v).ok_or_else(|| {
            usage(format!(
                "--survivors: expected leave, kill or wait, got '{}'",
                crate::text::escape_controls(v)
            ))
        }),
    }
}

/// [`TREE_VAR`]: unset, empty or `on` traces the tree where allowed; `off` does not.
fn trace_tree(value: Option<&std::ffi::OsStr>) -> Result<bool, UsageError> {
    match value.map(|v| v.to_string_lossy()) {
        None => Ok(true),
        Some(v) if v.is_empty() || v == "on" => Ok(true),
        Some(v) if v == "off" => Ok(false),
        Some(v) => Err(usage(format!(
            "{TREE_VAR}: expected on or off, got '{}'; unset it to trace the tree where allowed",
            escape_controls(&v)
        ))),
    }
}

fn output_mode(
    value: Option<&std::ffi::OsStr>,
    keep: bool,
    has_out: bool,
    single: bool,
) -> Result<OutputMode, UsageError> {
    if keep {
        if !has_out {
            return Err(usage(
                "--keep-output needs -o DIR: every run's stdout and stderr go to DIR/runs/NNN/",
            ));
        }
        return match value {
            None => Ok(OutputMode::Keep),
            Some(_) => Err(usage(
                "--keep-output and --output: choose one (--keep-output keeps stdout and stderr in DIR/runs/NNN/)",
            )),
        };
    }
    let Some(value) = value else {
        return Ok(if single {
            OutputMode::Inherit
        } else {
            OutputMode::Null
        });
    };
    match value.to_str() {
        Some("inherit") => Ok(OutputMode::Inherit),
        Some("null") => Ok(OutputMode::Null),
        Some("pipe") => Ok(OutputMode::Pipe),
        Some("") => Err(usage(
            "--output: expected null, pipe, inherit or a file name, got ''",
        )),
        // coldtrace's earlier `--output file` (outputs under -o DIR) is --keep-output now.
        Some("file") => Err(usage(
            "--output file: to keep every run's output under -o DIR use --keep-output; to write stdout to a file named 'file' use --output ./file",
        )),
        _ => output_file(value),
    }
}

/// `--output FILE`: a file name in a directory that exists, not a directory.
fn output_file(value: &std::ffi::OsStr) -> Result<OutputMode, UsageError> {
    let path = PathBuf::from(value);
    let shown = escape_controls(&path.display().to_string());
    if path.is_dir() || path.file_name().is_none() {
        return Err(usage(format!(
            "--output {shown}: is a directory; give a file name (or null, pipe, inherit)"
        )));
    }
    let parent = path.parent().filter(|p| !p.as_os_str().is_empty());
    if parent.is_some_and(|p| !p.is_dir()) {
        return Err(usage(format!(
            "--output {shown}: its directory does not exist; create it first"
        )));
    }
    Ok(OutputMode::File(path))
}

/// `-i`, `-i=all-non-zero` or `-i=CODES` (hyperfine 2.0's comma-separated exit codes).
fn ignore_failure(given: Option<&Option<String>>) -> Result<IgnoreFailure, UsageError> {
    let Some(value) = given else {
        return Ok(IgnoreFailure::No);
    };
    match value.as_deref().map(str::trim) {
        None | Some("" | "all-non-zero") => Ok(IgnoreFailure::All),
        Some(list) => list
            .split(',')
            .map(|code| code.trim().parse::<i32>().ok().filter(|c| (0..=255).contains(c)))
            .collect::<Option<Vec<i32>>>()
            .map(IgnoreFailure::Codes)
            .ok_or_else(|| {
                usage(format!(
                    "-i/--ignore-failure: expected all-non-zero or exit codes 0-255 separated by commas (e.g. -i=1,2), got '{}'",
                    escape_controls(list)
                ))
            }),
    }
}

/// `--stdin`, or its default: inherit for one run, else `/dev/null`.
fn stdin_mode(value: Option<OsString>, single: bool) -> Result<StdinMode, UsageError> {
    match value {
        None if single => Ok(StdinMode::Inherit),
        None => Ok(StdinMode::Null),
        Some(s) if s == "null" => Ok(StdinMode::Null),
        Some(s) if s == "inherit" => Ok(StdinMode::Inherit),
        Some(s) if s.is_empty() => Err(usage(
            "--stdin: expected null, inherit or a file path, got ''",
        )),
        Some(path) => Ok(StdinMode::File(PathBuf::from(path))),
    }
}

/// `--evict`, `--drop-caches`, `--cold-first-only`, `--watch` (evicted paths are watched too).
fn cold_plan(raw: &RawRun) -> Result<ColdPlan, UsageError> {
    for path in raw.evict.iter().chain(raw.watch.iter()) {
        if path.is_empty() {
            return Err(usage("--evict/--watch: expected a path, got ''"));
        }
    }
    let evict: Vec<PathBuf> = raw.evict.iter().map(PathBuf::from).collect();
    if raw.cold_first_only && evict.is_empty() && !raw.drop_caches {
        return Err(usage(
            "--cold-first-only needs --evict PATH or --drop-caches",
        ));
    }
    let cycles = cold_cycles(raw)?;
    let when = if evict.is_empty() && !raw.drop_caches {
        None
    } else if let Some(m) = cycles {
        Some(ColdWhen::Cycles(m))
    } else if raw.cold_first_only {
        Some(ColdWhen::FirstOnly)
    } else {
        Some(ColdWhen::EveryRun)
    };
    let mut watch: Vec<PathBuf> = evict.clone();
    for path in raw.watch.iter().map(PathBuf::from) {
        if !watch.contains(&path) {
            watch.push(path);
        }
    }
    Ok(ColdPlan {
        evict,
        drop_caches: raw.drop_caches,
        when,
        watch,
    })
}

/// `--cold-cycles M`: a whole number ≥ 1, with a cold action to repeat and not with
/// `--cold-first-only`.
fn cold_cycles(raw: &RawRun) -> Result<Option<u32>, UsageError> {
    let Some(text) = raw.cold_cycles.as_deref() else {
        return Ok(None);
    };
    let m = count("--cold-cycles", Some(text), 1, 1)?;
    if raw.evict.is_empty() && !raw.drop_caches {
        return Err(usage(
            "--cold-cycles needs --evict PATH or --drop-caches: the cold action each cycle repeats",
        ));
    }
    if raw.cold_first_only {
        return Err(usage(
            "--cold-cycles and --cold-first-only: choose one (a cycle is one cold run, then warm runs)",
        ));
    }
    Ok(Some(m))
}

/// `--metrics all|LIST`, each name a metric of the batch (its short name, its full name, or a
/// perf event the batch counts).
fn metric_view(
    given: Option<&str>,
    counters: &[PerfEvent],
    sub: Sub,
) -> Result<MetricView, UsageError> {
    use crate::record::metrics::{find, metrics_for};
    let Some(list) = given else {
        return Ok(MetricView::Compact);
    };
    if list.trim() == "all" {
        return Ok(MetricView::All);
    }
    let metrics = metrics_for(counters);
    let mut names = Vec::new();
    for name in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        let Some(metric) = find(&metrics, name) else {
            return Err(not_a_metric(name, sub));
        };
        if !names.contains(&metric.name) {
            names.push(metric.name);
        }
    }
    if names.is_empty() {
        return Err(usage(
            "--metrics: expected all or a list of metrics, got ''",
        ));
    }
    Ok(MetricView::List(names))
}

/// `--metrics NAME` where NAME is no metric of the batch: a perf event that is not counted, or
/// an unknown name (with the nearest name, or where the names are listed), in one line.
fn not_a_metric(name: &str, sub: Sub) -> UsageError {
    if PerfEvent::parse(name).is_some() {
        return usage_fitting(
            name,
            &[
                &|e| format!("--metrics {e}: not counted; add --events {e}"),
                &|e| format!("--metrics {e}: count it with --events"),
            ],
        );
    }
    let names = crate::record::metrics::every_name();
    let see = crate::cli::table::see_help(sub);
    match args::nearest(name, names.iter().map(|n| (*n, *n))) {
        Some(near) => usage_fitting(
            name,
            &[
                &|m| format!("--metrics: unknown metric '{m}'; did you mean {near}?"),
                &|m| format!("unknown metric '{m}'; did you mean {near}?"),
            ],
        ),
        None => usage_fitting(
            name,
            &[
                &|m| format!("--metrics: unknown metric '{m}'; {see}"),
                &|m| format!("unknown metric '{m}'; {see}"),
            ],
        ),
    }
}

/// `--events LIST` (implies `--counters`), or the default events with `--counters`.
fn perf_events(list: Option<&str>, counters: bool) -> Result<Vec<PerfEvent>, UsageError> {
    let Some(list) = list else {
        return Ok(if counters {
            default_events()
        } else {
            Vec::new()
        });
    };
    let mut events = Vec::new();
    for name in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let event = PerfEvent::parse(name).ok_or_else(|| args::unknown_event(name))?;
        if !events.contains(&event) {
            events.push(event);
        }
    }
    if events.is_empty() {
        return Err(usage(
            "--events: expected a comma-separated list of events, got ''",
        ));
    }
    Ok(events)
}
