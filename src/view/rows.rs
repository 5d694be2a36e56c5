//! Which metric rows a table shows (`--metrics`): the compact default — wall time, CPU time, max
//! RSS, major faults, storage read, then what was asked for besides (the residency of watched
//! files, the perf events) — every metric with a value (`all`), or a list in its order. It
//! chooses rows; the tables draw them.
#![forbid(unsafe_code)]

use crate::plan::MetricView;
use crate::record::metrics::{is_residency, Metric, Source, COMPACT};

/// Whether metric `i` was measured at all, and whether it has a figure worth a row (the
/// tables' own rule: e.g. not all zero).
pub struct Values<'a> {
    pub measured: &'a dyn Fn(usize) -> bool,
    pub worth_a_row: &'a dyn Fn(usize) -> bool,
}

/// The positions in `metrics` of the rows to show, in order. `watching`: files are watched, so
/// the residency rows are always shown. The compact rows are shown whatever their values (the
/// same five every time), a listed metric too (a dash where it was not measured).
pub fn rows(
    metrics: &[Metric],
    view: &MetricView,
    watching: bool,
    values: &Values<'_>,
) -> Vec<usize> {
    let has_value = values.worth_a_row;
    let at = |name: &str| metrics.iter().position(|m| m.name == name);
    match view {
        MetricView::All => {
            let mut all: Vec<usize> = (0..metrics.len()).filter(|&i| has_value(i)).collect();
            // CPU time beside its two parts (it follows every field metric in the record's
            // order, so that their positions stay).
            let cpu = at("cpu_us").filter(|c| all.contains(c));
            let after = at("sys_us").and_then(|sys| all.iter().position(|&i| i == sys));
            if let (Some(cpu), Some(p)) = (cpu, after) {
                all.retain(|&i| i != cpu);
                all.insert(p + 1, cpu);
            }
            all
        }
        MetricView::List(names) => names.iter().filter_map(|n| at(n)).collect(),
        MetricView::Compact => {
            let mut shown: Vec<usize> = COMPACT
                .iter()
                .filter_map(|name| match (*name, at(name)) {
                    // Without the child's I/O (--minimal, no /proc), what it read is its
                    // block input.
                    ("read_bytes", Some(i)) if !(values.measured)(i) => at("block_in"),
                    (_, found) => found,
                })
                .collect();
            let asked = (0..metrics.len()).filter(|&i| {
                let m = &metrics[i];
                (watching && is_residency(m.name))
                    || (matches!(m.source, Source::Counter) && has_value(i))
            });
            shown.extend(asked);
            shown
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::metrics::{metrics_for, METRICS};

    fn names(metrics: &[Metric], rows: &[usize]) -> Vec<&'static str> {
        rows.iter().map(|&i| metrics[i].name).collect()
    }

    #[test]
    fn the_compact_view_and_what_was_asked_for() {
        let events = crate::measure::perf::default_events();
        let metrics = metrics_for(&events);
        let every = |_: usize| true;
        let all = Values {
            measured: &every,
            worth_a_row: &every,
        };
        let shown = rows(&metrics, &MetricView::Compact, true, &all);
        let shown = names(&metrics, &shown);
        assert_eq!(
            &shown[..7],
            [
                "wall_ns",
                "cpu_us",
                "max_rss_kib",
                "major_faults",
                "read_bytes",
                "resident_ratio_before",
                "resident_ratio_after"
            ]
        );
        assert_eq!(shown.len(), 7 + events.len());
        // Without the child's I/O, its block input stands for what it read; a read of 0 is
        // still a read, and shown as one.
        let read = METRICS.iter().position(|m| m.name == "read_bytes").unwrap();
        let no_io = |i: usize| i != read;
        let unread = Values {
            measured: &no_io,
            worth_a_row: &no_io,
        };
        let shown = rows(METRICS, &MetricView::Compact, false, &unread);
        assert_eq!(names(METRICS, &shown)[4], "block_in");
        let zero = Values {
            measured: &every,
            worth_a_row: &no_io,
        };
        let shown = rows(METRICS, &MetricView::Compact, false, &zero);
        assert_eq!(names(METRICS, &shown)[4], "read_bytes");
        let list = MetricView::List(vec!["max_rss_kib", "wall_ns"]);
        assert_eq!(
            names(METRICS, &rows(METRICS, &list, false, &all)),
            ["max_rss_kib", "wall_ns"]
        );
        let every_row = names(METRICS, &rows(METRICS, &MetricView::All, false, &all));
        assert_eq!(every_row.len(), METRICS.len());
        assert_eq!(&every_row[..4], ["wall_ns", "user_us", "sys_us", "cpu_us"]);
        let some = names(METRICS, &rows(METRICS, &MetricView::All, false, &zero));
        assert!(!some.contains(&"read_bytes"), "{some:?}");
    }
}
