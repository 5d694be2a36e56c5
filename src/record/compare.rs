//! The comparison document (`DIR/batch.json` of `compare`, schema [`COMPARE_SCHEMA`]) and the
//! statistics behind it: warm medians over the first command's, with bootstrap intervals. Pure.
#![forbid(unsafe_code)]

use crate::record::batch::Counts;
use crate::record::columns::WarmSeries;
use crate::record::metrics::Metric;
use crate::record::stats::{bootstrap_ratio_ci, NoInterval, Summary, LEVEL, RESAMPLES};
use crate::serialize_struct;

pub use crate::record::COMPARE_SCHEMA;
/// Warm runs each command needs for an interval: a percentile bootstrap of the median of fewer
/// values can only land on a handful of them, so its "95 %" would be no such thing.
pub const MIN_WARM_FOR_INTERVAL: usize = 5;
/// The metrics a comparison gives a verdict on, with their words: the first three rows of the
/// default table (CPU time as it shows it, user + system).
pub const VERDICT_METRICS: [(&str, &str); 3] = [
    ("wall_ns", "wall time"),
    ("cpu_us", "CPU time"),
    ("max_rss_kib", "max RSS"),
];

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
    /// This command's warm values of the metric.
    pub warm_runs: u64,
    /// Why there is no interval (every command but the first), e.g. too few warm runs.
    pub no_interval: Option<String>,
}
serialize_struct!(Ratio {
    command,
    warm_median,
    ratio_to_first,
    ci_low,
    ci_high,
    verdict,
    warm_runs,
    no_interval
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

/// Command `c`'s warm `values` against the first command's (`base`): its median, the ratio,
/// and the interval when both have enough warm runs (or why there is none).
fn ratio_of(base: &[f64], values: &[f64], c: usize, seed: u64) -> Ratio {
    let warm_median = Summary::of(values).map(|s| s.median);
    let base_median = Summary::of(base).map(|s| s.median);
    let ratio_to_first = crate::record::stats::ratio(warm_median, base_median);
    let (ci, no_interval) = if c == 0 {
        (None, None)
    } else if base.len().min(values.len()) < MIN_WARM_FOR_INTERVAL {
        let reason = format!(
            "too few warm runs ({} and {}): an interval needs {MIN_WARM_FOR_INTERVAL} of each",
            base.len(),
            values.len()
        );
        (None, Some(reason))
    } else {
        match bootstrap_ratio_ci(base, values, RESAMPLES, LEVEL, seed) {
            Ok(ci) => (Some(ci), None),
            Err(NoInterval::ZeroMedian) => (
                None,
                Some("the first command's warm runs have a median of 0 (no ratio)".to_string()),
            ),
            Err(NoInterval::TooFew) => (None, Some("too few warm runs".to_string())),
        }
    };
    Ratio {
        command: c as u64,
        warm_median,
        ratio_to_first,
        ci_low: ci.map(|(lo, _)| lo),
        ci_high: ci.map(|(_, hi)| hi),
        verdict: None,
        warm_runs: values.len() as u64,
        no_interval,
    }
}

/// What a comparison concludes, in lines: each verdict (an interval excluding 1); "no
/// difference" only when every compared interval exists and includes 1; and, when intervals
/// are missing, why. Compared are wall time, CPU time and max RSS of every command against the
/// first, those of them that `shown` (the rows of the table above the lines) — a verdict on a
/// row the reader cannot see would be unreadable. From the document alone, so that `report`
/// says the same as `compare`.
pub fn conclusion(comparison: &[MetricComparison], shown: &dyn Fn(&str) -> bool) -> Vec<String> {
    // In the order of the table's first rows, whatever the document's order.
    let compared: Vec<&MetricComparison> = VERDICT_METRICS
        .iter()
        .filter(|(name, _)| shown(name))
        .filter_map(|(name, _)| comparison.iter().find(|c| c.metric == *name))
        .collect();
    let others = |c: &&MetricComparison| c.commands.iter().skip(1).cloned().collect::<Vec<_>>();
    let mut lines: Vec<String> = compared
        .iter()
        .flat_map(others)
        .filter_map(|r| r.verdict)
        .collect();
    let complete: Vec<&str> = compared
        .iter()
        .filter(|c| others(c).iter().all(|r| r.ci_low.is_some()))
        .map(|c| words(c.metric))
        .collect();
    let missing: Vec<(&str, Ratio)> = compared
        .iter()
        .flat_map(|c| others(c).into_iter().map(|r| (c.metric, r)))
        .filter(|(_, r)| r.ci_low.is_none())
        .collect();
    if lines.is_empty() && !complete.is_empty() {
        lines.push(format!(
            "no difference in {}: every 95% interval includes 1",
            either(&complete)
        ));
    }
    if !missing.is_empty() {
        lines.extend(missing_lines(&compared, &missing));
    }
    lines
}

/// `a`, `a or b`, `a, b or c`.
fn either(words: &[&str]) -> String {
    match words {
        [] => String::new(),
        [one] => (*one).to_string(),
        [rest @ .., last] => format!("{} or {last}", rest.join(", ")),
    }
}

/// Why intervals are missing: too few warm runs (said once, with the counts), else per metric.
fn missing_lines(compared: &[&MetricComparison], missing: &[(&str, Ratio)]) -> Vec<String> {
    let too_few = missing.iter().all(|(_, r)| {
        r.no_interval
            .as_deref()
            .is_some_and(|w| w.starts_with("too few"))
    });
    if too_few {
        let runs: Vec<u64> = compared
            .iter()
            .flat_map(|c| c.commands.iter().map(|r| r.warm_runs))
            .collect();
        let (lo, hi) = (
            runs.iter().min().copied().unwrap_or(0),
            runs.iter().max().copied().unwrap_or(0),
        );
        let n = if lo == hi {
            lo.to_string()
        } else {
            format!("{lo} to {hi}")
        };
        let s = if hi == 1 { "" } else { "s" };
        return vec![format!(
            "{n} warm run{s} per command: too few for an interval ({MIN_WARM_FOR_INTERVAL} are needed: \
             -n {} or more, or a longer --max-time); no verdict",
            MIN_WARM_FOR_INTERVAL + 1
        )];
    }
    let mut lines: Vec<String> = Vec::new();
    for (metric, r) in missing {
        let reason = r.no_interval.as_deref().unwrap_or("not measured");
        let line = format!("no interval for {}: {reason}", words(metric));
        if !lines.contains(&line) {
            lines.push(line);
        }
    }
    lines
}

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

/// The words for `metric` in a verdict.
fn words(metric: &str) -> &str {
    VERDICT_METRICS
        .iter()
        .find(|(name, _)| *name == metric)
        .map_or(metric, |(_, words)| words)
}

/// An interval as words and tables show it: `0.87–1.12`, or `0.87–∞` when unbounded above.
pub fn interval_text(lo: f64, hi: f64) -> String {
    let end = |x: f64| {
        if x.is_infinite() {
            if x > 0.0 { "∞" } else { "−∞" }.to_string()
        } else {
            format!("{x:.2}")
        }
    };
    format!("{}–{}", end(lo), end(hi))
}

fn verdict(metric: &str, ratio: f64, lo: f64, hi: f64, name: &str, base: &str) -> Option<String> {
    let what = words(metric);
    let direction = if lo > 1.0 {
        "higher"
    } else if hi < 1.0 {
        "lower"
    } else {
        return None;
    };
    Some(format!(
        "{name}: {what} {ratio:.2}× that of {base} (95% CI {}): {direction}",
        interval_text(lo, hi)
    ))
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
            let commands = warm
                .iter()
                .enumerate()
                .map(|(c, command)| {
                    let seed = 0x5EED ^ (m as u64) << 8 ^ c as u64;
                    let ratio = ratio_of(base, &command.metric(m), c, seed);
                    let verdict = match (ratio.ratio_to_first, ratio.ci_low, ratio.ci_high) {
                        (Some(r), Some(lo), Some(hi)) => {
                            verdict(metric.name, r, lo, hi, &names[c], &names[0])
                        }
                        _ => None,
                    };
                    Ratio { verdict, ..ratio }
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

/// A comparison document read back (`report DIR`): what `compare` printed, from its record.
#[derive(Clone, Default)]
pub struct ReadComparison {
    /// The commands, in order.
    pub commands: Vec<CommandEntry>,
    /// The metrics the document compares that this coldtrace knows, in document order.
    pub metrics: Vec<Metric>,
    /// Per metric (in `metrics` order), each command's median, ratio and interval.
    pub comparison: Vec<MetricComparison>,
    /// Metrics of the document this coldtrace does not know (left out).
    pub unknown_metrics: Vec<String>,
}

/// The metric named `name`: a field metric, or a perf event.
fn metric_named(name: &str) -> Option<Metric> {
    crate::record::metrics::METRICS
        .iter()
        .copied()
        .find(|m| m.name == name)
        .or_else(|| crate::measure::perf::PerfEvent::parse(name).map(Metric::counter))
}

/// Reads `commands` and `comparison` of a `coldtrace.compare/1` document. A document written
/// before intervals needed [`MIN_WARM_FOR_INTERVAL`] warm runs has no `no_interval`: a missing
/// interval then says so rather than inventing a reason.
pub fn read_document(doc: &serde_json::Value) -> ReadComparison {
    use serde_json::Value;
    let text = |v: &Value, k: &str| {
        v.get(k)
            .and_then(Value::as_str)
            .map(crate::text::escape_controls)
    };
    let num = |v: &Value, k: &str| v.get(k).and_then(Value::as_f64);
    let count = |v: &Value, k: &str| v.get(k).and_then(Value::as_u64).unwrap_or(0);
    let list = |v: &Value, k: &str| {
        v.get(k)
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    let mut read = ReadComparison::default();
    for c in list(doc, "commands") {
        let counts = c.get("counts").cloned().unwrap_or(Value::Null);
        read.commands.push(CommandEntry {
            index: count(&c, "index"),
            command: text(&c, "command").unwrap_or_default(),
            name: text(&c, "name"),
            parameters: list(&c, "parameters")
                .iter()
                .filter_map(|p| {
                    Some(ParameterEntry {
                        name: text(p, "name")?,
                        value: text(p, "value")?,
                    })
                })
                .collect(),
            dir: text(&c, "dir"),
            exit_code: count(&c, "exit_code").min(255) as u8,
            counts: Counts {
                recorded: count(&counts, "recorded"),
                warmup: count(&counts, "warmup"),
                counted: count(&counts, "counted"),
                rejected: count(&counts, "rejected"),
                failed_counted: count(&counts, "failed_counted"),
            },
        });
    }
    for m in list(doc, "comparison") {
        let name = text(&m, "metric").unwrap_or_default();
        let Some(metric) = metric_named(&name) else {
            read.unknown_metrics.push(name);
            continue;
        };
        let commands = list(&m, "commands")
            .iter()
            .map(|r| {
                let ci_low = num(r, "ci_low");
                let command = count(r, "command");
                let no_interval = text(r, "no_interval").or_else(|| {
                    (command > 0 && ci_low.is_none() && r.get("no_interval").is_none())
                        .then(|| "none in batch.json (written by an older coldtrace)".to_string())
                });
                // A lower end without an upper one: unbounded above (written as null).
                let ci_high = num(r, "ci_high").or(ci_low.map(|_| f64::INFINITY));
                Ratio {
                    command,
                    warm_median: num(r, "warm_median"),
                    ratio_to_first: num(r, "ratio_to_first"),
                    ci_low,
                    ci_high,
                    verdict: text(r, "verdict"),
                    warm_runs: count(r, "warm_runs"),
                    no_interval,
                }
            })
            .collect();
        read.comparison.push(MetricComparison {
            metric: metric.name,
            unit: metric.unit.name(),
            commands,
        });
        read.metrics.push(metric);
    }
    read
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::columns::Row;
    use crate::record::metrics::METRICS;

    fn names() -> Vec<String> {
        vec!["a".into(), "b".into()]
    }

    /// Both commands' warm runs, every metric of run `i` of command `c` being `f(c, i)`.
    fn warm(n: usize, f: impl Fn(usize, usize) -> f64) -> Vec<Vec<Row>> {
        (0..2)
            .map(|c| {
                (0..n)
                    .map(|i| Row::from_values(vec![f(c, i); METRICS.len()]))
                    .collect()
            })
            .collect()
    }

    fn compare(w: &[Vec<Row>]) -> Vec<MetricComparison> {
        let refs: Vec<&dyn WarmSeries> = w.iter().map(|r| r as &dyn WarmSeries).collect();
        compare_metrics(METRICS, &refs, &names())
    }

    fn conclude(w: &[Vec<Row>]) -> Vec<String> {
        conclusion(&compare(w), &|_| true)
    }

    #[test]
    fn too_few_warm_runs_give_no_interval_and_no_verdict_but_say_why() {
        // One warm run each, b twice as slow: a ratio, but nothing may be concluded from it.
        let cmp = compare(&warm(1, |c, _| 100.0 * (c + 1) as f64));
        assert_eq!(cmp[0].commands[1].ratio_to_first, Some(2.0));
        assert_eq!(cmp[0].commands[1].ci_low, None);
        assert!(cmp[0].commands[1]
            .no_interval
            .as_deref()
            .unwrap()
            .starts_with("too few"));
        assert_eq!(
            conclusion(&cmp, &|_| true),
            ["1 warm run per command: too few for an interval (5 are needed: -n 6 or more, or a longer --max-time); no verdict"]
        );
        let lines = conclude(&warm(4, |c, i| 100.0 * (c + 1) as f64 + i as f64));
        assert!(lines[0].starts_with("4 warm runs per command"), "{lines:?}");
        assert!(!lines.iter().any(|l| l.contains("no difference")));
    }

    #[test]
    fn a_clear_difference_is_a_verdict_and_no_difference_needs_every_interval() {
        let lines = conclude(&warm(20, |c, i| 100.0 * (c + 1) as f64 + (i % 5) as f64));
        assert!(
            lines
                .iter()
                .any(|l| l.starts_with("b: wall time 1.98× that of a")),
            "{lines:?}"
        );
        assert!(lines.iter().all(|l| !l.contains("no difference")));
        let same = conclude(&warm(20, |_, i| 100.0 + (i * 7 % 11) as f64));
        assert_eq!(
            same,
            ["no difference in wall time, CPU time or max RSS: every 95% interval includes 1"]
        );
    }

    #[test]
    fn a_document_reads_back_to_the_same_conclusion() {
        let comparison = compare(&warm(20, |c, i| 100.0 * (c + 1) as f64 + (i % 5) as f64));
        let doc = serde_json::json!({
            "commands": [{"index": 0, "command": "a", "name": null, "parameters": [],
                          "dir": "commands/00", "exit_code": 0, "counts": {"counted": 21}},
                         {"index": 1, "command": "b", "name": "B\u{1b}", "parameters":
                          [{"name": "n", "value": "2"}], "dir": "commands/01", "exit_code": 0,
                          "counts": {"counted": 21}}],
            "comparison": serde_json::to_value(&comparison).unwrap(),
        });
        let read = read_document(&doc);
        assert_eq!(read.metrics.len(), METRICS.len());
        assert_eq!(
            read.commands[1].name.as_deref(),
            Some("B\\u{1b}"),
            "escaped"
        );
        assert_eq!(read.commands[1].parameters[0].value, "2");
        assert_eq!(
            conclusion(&read.comparison, &|_| true),
            conclusion(&comparison, &|_| true)
        );
        // An older document: null intervals and no reason recorded.
        let old = serde_json::json!({"comparison": [{"metric": "wall_ns", "commands": [
            {"command": 0, "warm_median": 1.0}, {"command": 1, "warm_median": 2.0, "ratio_to_first": 2.0}]},
            {"metric": "frobs", "commands": []}]});
        let read = read_document(&old);
        assert_eq!(read.unknown_metrics, ["frobs"]);
        assert_eq!(
            conclusion(&read.comparison, &|_| true),
            ["no interval for wall time: none in batch.json (written by an older coldtrace)"]
        );
    }

    #[test]
    fn a_missing_interval_is_named_and_the_rest_is_still_said() {
        // Everything equal, but the first command's CPU time is 0 in every run (below the
        // tick).
        let cpu = METRICS.iter().position(|m| m.name == "cpu_us").unwrap();
        let mut w = warm(20, |_, i| 100.0 + (i * 7 % 11) as f64);
        for (i, row) in w[0].iter_mut().enumerate() {
            let mut values: Vec<f64> = (0..METRICS.len()).map(|m| row.get(m).unwrap()).collect();
            values[cpu] = 0.0;
            *row = Row::from_values(values);
            assert_eq!(row.get(cpu), Some(0.0), "run {i}");
        }
        let lines = conclude(&w);
        assert_eq!(
            lines,
            [
                "no difference in wall time or max RSS: every 95% interval includes 1",
                "no interval for CPU time: the first command's warm runs have a median of 0 (no ratio)"
            ]
        );
        // Where the table does not show CPU time, the lines do not speak of it.
        assert_eq!(
            conclusion(&compare(&w), &|m| m != "cpu_us"),
            ["no difference in wall time or max RSS: every 95% interval includes 1"]
        );
        assert_eq!(
            conclusion(&compare(&w), &|m| m == "wall_ns"),
            ["no difference in wall time: every 95% interval includes 1"]
        );
    }

    #[test]
    fn tick_quantised_cpu_times_get_an_interval_not_a_median_of_0() {
        // CPU time in whole 4 ms ticks, 0 in 8 of the first command's 20 runs: its median is
        // 4 ms, so "a median of 0" would be false, whatever some resamples' medians are.
        let cpu = METRICS.iter().position(|m| m.name == "cpu_us").unwrap();
        let mut w = warm(20, |_, i| 100.0 + (i * 7 % 11) as f64);
        for (c, rows) in w.iter_mut().enumerate() {
            for (i, row) in rows.iter_mut().enumerate() {
                let mut values: Vec<f64> =
                    (0..METRICS.len()).map(|m| row.get(m).unwrap()).collect();
                values[cpu] = [0.0, 4000.0, 8000.0, 4000.0, 0.0][(i * 3 + c) % 5];
                *row = Row::from_values(values);
            }
        }
        let cmp = compare(&w);
        let cpu_ratio = &cmp[cpu].commands[1];
        assert_eq!(cmp[cpu].commands[0].warm_median, Some(4000.0));
        let (lo, hi) = (cpu_ratio.ci_low.unwrap(), cpu_ratio.ci_high.unwrap());
        assert!(lo <= 1.0 && 1.0 <= hi, "{lo}–{hi}");
        let lines = conclusion(&cmp, &|_| true);
        assert!(
            lines.iter().all(|l| !l.contains("median of 0")),
            "{lines:?}"
        );
        assert_eq!(
            lines,
            ["no difference in wall time, CPU time or max RSS: every 95% interval includes 1"]
        );
        // An upper end that the resamples leave unbounded is written as null and read back.
        let unbounded = Ratio {
            ci_low: Some(0.5),
            ci_high: Some(f64::INFINITY),
            ..cpu_ratio.clone()
        };
        let json = serde_json::to_value(&unbounded).unwrap();
        assert!(json["ci_high"].is_null() && json["no_interval"].is_null());
        let doc = serde_json::json!({"comparison": [{"metric": "cpu_us", "commands": [
            {"command": 0, "warm_median": 4000.0}, json]}]});
        let read = read_document(&doc);
        assert_eq!(read.comparison[0].commands[1].ci_high, Some(f64::INFINITY));
        assert_eq!(interval_text(0.5, f64::INFINITY), "0.50–∞");
    }
}
