//! The comparison document (`DIR/batch.json` of `compare`, schema [`COMPARE_SCHEMA`]) and the
//! statistics behind it: warm medians over the first command's, with bootstrap intervals. Pure.
#![forbid(unsafe_code)]

use crate::record::batch::Counts;
use crate::record::columns::WarmSeries;
use crate::record::metrics::Metric;
use crate::record::stats::{bootstrap_ratio_ci, Summary};
use crate::serialize_struct;

pub use crate::record::COMPARE_SCHEMA;
/// Bootstrap resamples per interval.
pub const RESAMPLES: usize = 2000;
/// Confidence level of the intervals.
pub const LEVEL: f64 = 0.95;

/// One metric of one command, relative to the first command.
#[derive(Clone, Debug)]
pub struct Ratio {
    /// The command (index, 0 = the baseline).
    pub command: u64,
    /// This command's warm median.
    pub warm_median: Option<f64>,
    /// Its warm median ÷ the first command's.
    pub ratio_to_first: Option<f64>,
    /// Lower end of the 95 % percentile-bootstrap interval of that ratio.
    pub ci_low: Option<f64>,
    /// Upper end.
    pub ci_high: Option<f64>,
    /// In words, only when the interval excludes 1.
    pub verdict: Option<String>,
}
serialize_struct!(Ratio {
    command,
    warm_median,
    ratio_to_first,
    ci_low,
    ci_high,
    verdict
});

/// One metric across the commands.
#[derive(Clone, Debug)]
pub struct MetricComparison {
    /// Metric name (as in `summary`).
    pub metric: &'static str,
    /// Its unit.
    pub unit: &'static str,
    /// One entry per command.
    pub commands: Vec<Ratio>,
}
serialize_struct!(MetricComparison {
    metric,
    unit,
    commands
});

/// A command of the comparison.
#[derive(Clone, Debug)]
pub struct CommandEntry {
    /// Index (0 = the baseline).
    pub index: u64,
    /// The command as given.
    pub command: String,
    /// Its `--command-name`.
    pub name: Option<String>,
    /// The parameter values it was made with (`-P`, `-L`).
    pub parameters: Vec<ParameterEntry>,
    /// Its batch directory, relative to the comparison's.
    pub dir: Option<String>,
    /// Its own exit code as a batch.
    pub exit_code: u8,
    /// Its counts.
    pub counts: Counts,
}
serialize_struct!(CommandEntry {
    index,
    command,
    name,
    parameters,
    dir,
    exit_code,
    counts
});

/// A parameter of a scan and this command's value of it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParameterEntry {
    /// `NAME` of `-P NAME …` / `-L NAME …`.
    pub name: String,
    /// The value.
    pub value: String,
}
serialize_struct!(ParameterEntry { name, value });

/// The whole comparison document.
pub struct CompareDocument<'a> {
    pub schema: &'static str,
    pub started_at: &'a str,
    pub finished_at: String,
    pub complete: bool,
    pub interrupted_by: Option<String>,
    pub order: &'static str,
    pub shuffle_seed: Option<u64>,
    pub confidence: String,
    pub commands: &'a [CommandEntry],
    pub comparison: &'a [MetricComparison],
}
serialize_struct!(CompareDocument<'_> {
    schema, started_at, finished_at, complete, interrupted_by, order, shuffle_seed, confidence,
    commands, comparison,
});

fn verdict(metric: &str, ratio: f64, lo: f64, hi: f64, name: &str, base: &str) -> Option<String> {
    let what = match metric {
        "wall_ns" => "wall time",
        "user_us" => "user CPU time",
        "sys_us" => "system CPU time",
        "max_rss_kib" => "max RSS",
        other => other,
    };
    if lo > 1.0 {
        Some(format!(
            "{name}: {what} {ratio:.2}× that of {base} (95% CI {lo:.2}–{hi:.2}): higher"
        ))
    } else if hi < 1.0 {
        Some(format!(
            "{name}: {what} {ratio:.2}× that of {base} (95% CI {lo:.2}–{hi:.2}): lower"
        ))
    } else {
        None
    }
}

/// Compares the commands' warm runs metric by metric.
///
/// `warm[c]` holds command `c`'s warm runs; metric `m` is read from each in `metrics` order,
/// one metric at a time.
pub fn compare_metrics(
    metrics: &[Metric],
    warm: &[&dyn WarmSeries],
    names: &[String],
) -> Vec<MetricComparison> {
    metrics
        .iter()
        .enumerate()
        .map(|(m, metric)| {
            // One metric at a time: the first command's column and one other command's.
            let base_values = warm.first().map_or(Vec::new(), |w| w.metric(m));
            let base = base_values.as_slice();
            let base_median = Summary::of(base).map(|s| s.median);
            let commands = warm
                .iter()
                .enumerate()
                .map(|(c, command)| {
                    let column = command.metric(m);
                    let values = column.as_slice();
                    let warm_median = Summary::of(values).map(|s| s.median);
                    let ratio_to_first = crate::record::stats::ratio(warm_median, base_median);
                    let ci = if c == 0 {
                        None
                    } else {
                        bootstrap_ratio_ci(
                            base,
                            values,
                            RESAMPLES,
                            LEVEL,
                            0x5EED ^ (m as u64) << 8 ^ c as u64,
                        )
                    };
                    let verdict = match (ratio_to_first, ci) {
                        (Some(r), Some((lo, hi))) => {
                            verdict(metric.name, r, lo, hi, &names[c], &names[0])
                        }
                        _ => None,
                    };
                    Ratio {
                        command: c as u64,
                        warm_median,
                        ratio_to_first,
                        ci_low: ci.map(|(lo, _)| lo),
                        ci_high: ci.map(|(_, hi)| hi),
                        verdict,
                    }
                })
                .collect();
            MetricComparison {
                metric: metric.name,
                unit: metric.unit.name(),
                commands,
            }
        })
        .collect()
}
