//! The human tables (a batch, a single run, an all-rejected batch, a comparison, a report) on
//! fixed data, at 80 and 120 columns and as Markdown, against committed snapshots; and, at every
//! width from 40 to 200, no line wider than the width. After changing a table on purpose,
//! regenerate the snapshots with `COLDTRACE_BLESS=1 cargo test --test view_snapshots`.
#![forbid(unsafe_code)]

use coldtrace::batch::{BatchOutcome, CompareOutcome, FirstPagedIn};
use coldtrace::measure::cache::{PagedFile, PagedIn};
use coldtrace::measure::perf::default_events;
use coldtrace::plan::ColdWhen;
use coldtrace::plan::MetricView;
use coldtrace::record::batch::{BatchContext, Counts, FailedRun};
use coldtrace::record::compare::{CommandEntry, MetricComparison, Ratio};
use coldtrace::record::metrics::{metrics_for, Metric, MAX_RSS};
use coldtrace::view::table::Told;

/// The metrics of a batch that counted the default perf events (`--counters`).
fn metrics() -> Vec<Metric> {
    metrics_for(&default_events())
}
use coldtrace::record::reader::BatchRow;
use coldtrace::record::stats::{ratio, Summary};
use coldtrace::record::summary::{AtFloor, MetricSummary};
use coldtrace::record::verdict::penalty::{Basis, Evidence, FirstPenalty};
use coldtrace::record::verdict::{decide, Figures, First, Setting, Verdict};
use coldtrace::view::units::display_width;
use coldtrace::view::{compare, report, table};
use std::path::Path;

/// Per metric name: the first run's value and the warm runs' values.
fn summaries(data: &[(&str, f64, &[f64])], at_floor: Option<AtFloor>) -> Vec<MetricSummary> {
    metrics()
        .iter()
        .enumerate()
        .map(|(i, metric)| {
            let found = data.iter().find(|(name, _, _)| *name == metric.name);
            let first = found.and_then(|(_, f, _)| Summary::of(&[*f]));
            let warm = found.and_then(|(_, _, w)| Summary::of(w));
            let all: Vec<f64> = found
                .map(|(_, f, w)| std::iter::once(*f).chain(w.iter().copied()).collect())
                .unwrap_or_default();
            MetricSummary {
                name: metric.name,
                unit: metric.unit.name(),
                first,
                warm,
                all: Summary::of(&all),
                first_to_warm_median: ratio(first.map(|s| s.median), warm.map(|s| s.median)),
                runs_at_floor: if i == MAX_RSS { at_floor } else { None },
            }
        })
        .collect()
}

fn context() -> BatchContext {
    let system = coldtrace::measure::context::SystemContext {
        boot_id: Some("9f734434-3a1e-4b2c-9d0e-5f6a7b8c9d0e".into()),
        uptime_s: Some(2031.0),
        kernel_release: Some("6.18.44-fc-v1147".into()),
        cpu_count: Some(2),
        ..Default::default()
    };
    BatchContext {
        system,
        capabilities: Default::default(),
        environment: Default::default(),
        program: Default::default(),
        coldtrace_version: "0.1.0",
        floor_reset_unavailable: None,
        boot_marker: coldtrace::measure::boot_marker::BootMarker {
            first_batch_since_boot: None,
            state_file: None,
            note: None,
            last_batch: None,
            at_start: None,
        },
        file_set: None,
        cgroup: None,
    }
}

fn outcome(summaries: Vec<MetricSummary>, counts: Counts) -> BatchOutcome {
    let walls = summaries[0]
        .first
        .into_iter()
        .map(|s| s.median)
        .chain([208e6, 213e6, 236e6, 191e6])
        .take(counts.counted as usize)
        .collect();
    BatchOutcome {
        exit_code: 0,
        json: String::new(),
        document: String::new(),
        records: None,
        metrics: metrics(),
        summaries,
        walls_ns: walls,
        columns: coldtrace::record::columns::Columns::new(metrics()),
        first: None,
        first_paged_in: None,
        survivors: Default::default(),
        first_stayed: None,
        watching: false,
        cache_unknown: None,
        first_penalty: Err("no warm series"),
        verdict: verdict(None, &[]),
        first_cold_cause: None,
        working_set: None,
        anomalies: Vec::new(),
        warm_noise: None,
        cycles: None,
        cold_when: None,
        single_run: None,
        failed: Default::default(),
        counts,
        context: context(),
        interrupted_by: None,
        stopped_reason: None,
        out_dir: None,
        notices: Vec::new(),
        spawner: None,
        single_outcome: None,
        start_failure: None,
        wait_failure: None,
        failure_stop: None,
    }
}

const PYTHON: &[(&str, f64, &[f64])] = &[
    ("wall_ns", 209.7e6, &[213.99e6, 191.62e6, 236.4e6, 207.1e6]),
    ("user_us", 83370.0, &[91450.0, 86570.0, 110040.0, 90010.0]),
    ("sys_us", 0.0, &[0.0, 0.0, 4000.0, 0.0]),
    ("max_rss_kib", 1126.0, &[1002.0, 1010.0, 1126.0, 1004.0]),
    ("minor_faults", 9482.0, &[9482.0, 9460.0, 9500.0, 9470.0]),
    ("major_faults", 13.0, &[0.0, 0.0, 0.0, 0.0]),
    ("block_in", 27912.0, &[0.0, 0.0, 0.0, 0.0]),
    ("voluntary_switches", 189.0, &[104.0, 101.0, 105.0, 104.0]),
    ("read_bytes", 14290944.0, &[0.0, 0.0, 0.0, 0.0]),
    ("runqueue_wait_ns", 278e3, &[312e3, 223e3, 546e3, 300e3]),
    ("resident_ratio_before", 0.0, &[0.02, 0.02, 0.02, 0.02]),
    ("psi_io_some_us", 838.0, &[426.0, 0.0, 781.0, 0.0]),
    ("cpu_us", 83370.0, &[91450.0, 86570.0, 114040.0, 90010.0]),
    ("task-clock", 104.46e6, &[81.46e6, 80.0e6, 90.1e6, 79.9e6]),
];

/// A run's figures for the verdict: wall and uninterruptible time, ms, and bytes read.
fn figures(index: u64, wall_ms: f64, blocked_ms: f64, read: f64) -> Figures {
    Figures {
        index,
        wall_ns: Some(wall_ms * 1e6),
        queued_ns: Some(0.3e6),
        blocked_ns: Some(blocked_ms * 1e6),
        sys_ns: Some(4e6),
        read_bytes: Some(read),
        steal_ns: None,
        cold_action: false,
    }
}

/// The verdict on a first run (`None`: no run) and the runs after it.
fn verdict(first: Option<Figures>, rest: &[Figures]) -> Verdict {
    let first = first.map(|figures| First {
        figures,
        counted: true,
    });
    let setting = Setting {
        tick_ns: 4_000_000,
        ..Setting::default()
    };
    decide(first, rest, &[], setting)
}

fn cold_batch() -> BatchOutcome {
    let at = AtFloor {
        first: 0,
        warm: 3,
        all: 3,
    };
    let counts = Counts {
        recorded: 5,
        counted: 5,
        ..Counts::default()
    };
    let mut o = outcome(summaries(PYTHON, Some(at)), counts);
    o.out_dir = Some("cold".into());
    o.cold_when = Some(ColdWhen::FirstOnly);
    let file = |path: &str, bytes: u64| PagedFile {
        path: path.into(),
        bytes,
    };
    o.first_paged_in = Some(FirstPagedIn {
        paged: PagedIn {
            top: vec![
                file("/usr/lib/x86_64-linux-gnu/libpython3.11.so.1.0", 5 << 20),
                file("/usr/lib/python3.11/json/decoder.py", 12288),
            ],
            files: 212,
            bytes: 14290944,
            known_files: 900,
        },
        artifact: Some("runs/000/paged_in.tsv".into()),
        read_bytes: 14290944,
        from_ledger: true,
    });
    o.first_penalty = Ok(FirstPenalty {
        first_index: 0,
        reference_index: 3,
        reference: "median",
        first_wall_ns: 253_000_000,
        reference_wall_ns: 100_000_000,
        basis: Basis::Schedstat,
        wall_ns: 153_000_000,
        cpu_ns: Some(40_000_000),
        runqueue_ns: Some(2_000_000),
        blocked_ns: Some(111_000_000),
        rusage_cpu_ns: Some(40_000_000),
        sys_us: Some(17_000),
        evidence: Evidence {
            read_bytes: Some(80_412_672),
            block_in: Some(157_056),
            major_faults: Some(87),
            voluntary_switches: Some(400),
            psi_io_some_us: Some(70_000),
            io_stall_ns: None,
            memory_stall_ns: None,
        },
        // The reference run (100 ms) among warm runs of 95–105 ms: 253 ms stands out.
        stands_out: coldtrace::record::verdict::penalty::stands_out(253e6, &[95e6, 100e6, 105e6]),
        cpu_tick: coldtrace::measure::tick::Tick {
            ns: 4_000_000,
            source: "timer_list",
        },
        tree: coldtrace::record::verdict::tree_penalty::TreePenalty::default(),
    });
    let warm: Vec<Figures> = [(1, 95.0), (2, 105.0), (3, 100.0), (4, 98.0)]
        .iter()
        .map(|&(i, wall)| figures(i, wall, 0.2, 0.0))
        .collect();
    o.verdict = verdict(Some(figures(0, 253.0, 111.2, 80_412_672.0)), &warm);
    o
}

/// Figures of a warm batch: nothing read from storage, no major fault, the first run among the
/// others.
const WARM: &[(&str, f64, &[f64])] = &[
    ("wall_ns", 20.4e6, &[20.9e6, 19.6e6, 21.4e6, 20.1e6]),
    ("user_us", 14370.0, &[14450.0, 14570.0, 14040.0, 14010.0]),
    ("sys_us", 4000.0, &[4000.0, 4000.0, 4000.0, 4000.0]),
    ("max_rss_kib", 9380.0, &[9402.0, 9410.0, 9396.0, 9404.0]),
    ("minor_faults", 1082.0, &[1082.0, 1080.0, 1084.0, 1083.0]),
    ("major_faults", 0.0, &[0.0, 0.0, 0.0, 0.0]),
    ("block_in", 0.0, &[0.0, 0.0, 0.0, 0.0]),
    ("voluntary_switches", 2.0, &[2.0, 2.0, 2.0, 2.0]),
    ("read_bytes", 0.0, &[0.0, 0.0, 0.0, 0.0]),
    ("runqueue_wait_ns", 78e3, &[82e3, 73e3, 56e3, 30e3]),
    ("resident_ratio_before", 0.0, &[0.0, 0.0, 0.0, 0.0]),
    ("psi_io_some_us", 0.0, &[0.0, 0.0, 0.0, 0.0]),
    ("cpu_us", 18370.0, &[18450.0, 18570.0, 18040.0, 18010.0]),
    ("task-clock", 18.46e6, &[18.46e6, 18.5e6, 18.1e6, 17.9e6]),
];

/// An ordinary warm batch: no cold action, nothing disturbed, the first run not told apart.
fn warm_batch() -> BatchOutcome {
    let counts = Counts {
        recorded: 5,
        counted: 5,
        ..Counts::default()
    };
    let mut o = outcome(summaries(WARM, None), counts);
    let rest: Vec<Figures> = [(1, 20.9), (2, 19.6), (3, 21.4), (4, 20.1)]
        .iter()
        .map(|&(i, wall)| figures(i, wall, 0.0, 0.0))
        .collect();
    o.verdict = verdict(Some(figures(0, 20.4, 0.0, 0.0)), &rest);
    o.spawner = Some(coldtrace::measure::spawner::SpawnerUsage {
        runs: 5,
        resident_kib: Some(56),
        cpu_ns: Some(800_000),
        unavailable: None,
    });
    o
}

#[test]
fn a_warm_batch_is_told_in_hyperfines_size_and_a_cold_one_whole() {
    let title = "coldtrace: 5 runs of python3 -c 'import json'";
    let warm = warm_batch();
    let told = Told::of(&warm, &MetricView::Compact, false);
    assert_eq!(told, Told::Brief);
    let brief = table::table(&warm, title, &MetricView::Compact, told, false, 100);
    let lines: Vec<&str> = brief.lines().collect();
    assert_eq!(
        lines.last(),
        Some(&"  first run not distinguishable from the warm runs at n = 5"),
        "{brief}"
    );
    // The title, two header lines, wall, CPU, max RSS, task-clock (these metrics are a
    // batch's with --counters) and the verdict: no zero row, no sentence about coldtrace's
    // own cost.
    assert_eq!(lines.len(), 8, "{brief}");
    assert!(
        !brief.contains("major faults") && !brief.contains("spawner"),
        "{brief}"
    );
    // Asked, everything: the zero rows and coldtrace's cost.
    let asked = Told::of(&warm, &MetricView::Compact, true);
    let all = table::table(&warm, title, &MetricView::Compact, asked, false, 100);
    assert!(
        all.contains("major faults") && all.contains("spawner: 5 children"),
        "{all}"
    );
    assert!(all.lines().count() > lines.len(), "{all}");
    // A cold batch says everything without being asked: the penalty, its split, its cause,
    // what it paged in.
    let cold = cold_batch();
    let told = Told::of(&cold, &MetricView::Compact, false);
    assert_eq!(told, Told::Everything);
    let text = table::table(&cold, title, &MetricView::Compact, told, false, 100);
    let prose = text.split_whitespace().collect::<Vec<_>>().join(" ");
    for said in [
        "first-run penalty: storage",
        "first run +153 ms over the warm median",
        "the first run brought 13.63 MiB of the watched files into the page cache",
        "records: cold/runs.jsonl",
    ] {
        assert!(prose.contains(said), "{said:?} in:\n{text}");
    }
}

fn many_rejected() -> BatchOutcome {
    let counts = Counts {
        recorded: 300,
        counted: 13,
        rejected: 287,
        ..Counts::default()
    };
    let mut o = outcome(summaries(PYTHON, None), counts);
    o.exit_code = 1;
    o.failed = (0..287)
        .map(|i| FailedRun {
            index: i + 13,
            reason: "exited with code 1".into(),
            stderr_tail: Some(format!("Traceback (most recent call last):\nKeyError: {i}")),
            counted: false,
        })
        .collect();
    o.out_dir = Some("flaky".into());
    o
}

fn all_rejected() -> BatchOutcome {
    let counts = Counts {
        recorded: 3,
        rejected: 3,
        ..Counts::default()
    };
    let mut o = outcome(summaries(&[], None), counts);
    o.exit_code = 1;
    o.failed = (0..3)
        .map(|index| FailedRun {
            index,
            reason: "exited with code 1".into(),
            stderr_tail: None,
            counted: false,
        })
        .collect();
    o
}

fn single_run() -> BatchOutcome {
    let data: Vec<(&str, f64, &[f64])> = PYTHON.iter().map(|(n, f, _)| (*n, *f, &[][..])).collect();
    let counts = Counts {
        recorded: 1,
        counted: 1,
        ..Counts::default()
    };
    let mut o = outcome(summaries(&data, None), counts);
    o.single_outcome = Some("exited with code 0".into());
    o
}

fn comparison() -> CompareOutcome {
    let names = [
        "python3 -c 'import json'",
        "python3 -S -c 'import json'",
        "python3 -I -c 'import json; import sys; print(sys.flags)'",
    ];
    let commands = names
        .iter()
        .enumerate()
        .map(|(i, name)| CommandEntry {
            index: i as u64,
            command: name.to_string(),
            name: None,
            parameters: Vec::new(),
            dir: None,
            exit_code: 0,
            counts: Counts {
                recorded: 10,
                counted: 10,
                ..Counts::default()
            },
        })
        .collect();
    let metric =
        |name: &'static str, unit: &'static str, medians: [f64; 3], ci: bool| MetricComparison {
            metric: name,
            unit,
            commands: (0..3)
                .map(|c| {
                    let r = medians[c] / medians[0];
                    Ratio {
                        command: c as u64,
                        warm_median: Some(medians[c]),
                        ratio_to_first: Some(r),
                        ci_low: (c > 0 && ci).then_some(r * 0.9),
                        ci_high: (c > 0 && ci).then_some(r * 1.1),
                        verdict: (c == 1 && name == "wall_ns").then(|| {
                            format!(
                                "{}: wall time {r:.2}× that of {} (95% CI …): lower",
                                names[1], names[0]
                            )
                        }),
                        warm_runs: 9,
                        no_interval: (c > 0 && !ci).then(|| "a median of 0".to_string()),
                    }
                })
                .collect(),
        };
    let comparison = metrics()
        .iter()
        .map(|m| match m.name {
            "wall_ns" => metric(m.name, "ns", [121.78e6, 98.76e6, 130.2e6], true),
            "max_rss_kib" => metric(m.name, "KiB", [13516.0, 9626.0, 1002.0], true),
            "psi_io_some_us" => metric(m.name, "us", [265.0, 75.0, 0.0], false),
            _ => MetricComparison {
                metric: m.name,
                unit: m.unit.name(),
                commands: Vec::new(),
            },
        })
        .collect();
    // Each command's warm wall times (their mean ± σ is under the table).
    let walls: [&[f64]; 3] = [
        &[121.78e6, 119.2e6, 125.1e6, 121.0e6],
        &[98.76e6, 97.1e6, 101.3e6, 98.0e6],
        &[130.2e6, 128.8e6, 166.4e6, 129.9e6],
    ];
    let batches = walls
        .iter()
        .map(|w| {
            let counts = Counts {
                recorded: 10,
                counted: 10,
                ..Counts::default()
            };
            outcome(summaries(&[("wall_ns", w[0] * 1.3, w)], None), counts)
        })
        .collect();
    CompareOutcome {
        exit_code: 0,
        json: String::new(),
        batches,
        commands,
        metrics: metrics(),
        comparison,
        interrupted_by: None,
        sink: "stdout → /dev/null".into(),
    }
}

fn report_rows() -> Vec<BatchRow> {
    let row = |dir: &str, label: Option<&str>, first: f64, warm: f64| BatchRow {
        dir: dir.into(),
        label: label.map(str::to_string),
        kernel: Some("6.18.44-fc-v1147".into()),
        boot_id: Some("9f734434-3a1e".into()),
        uptime_s: Some(1932.0),
        first_wall_ns: Some(first),
        warm_median_wall_ns: Some(warm),
        first_to_warm: Some(first / warm),
        first_major_faults: Some(13),
        first_block_in: Some(27912),
        first_resident_ratio_before: Some(0.0),
        counted: 5,
        complete: true,
        ..BatchRow::default()
    };
    let mut rows = vec![
        row("cold", Some("cold"), 165.39e6, 129.17e6),
        row("warm", Some("warm"), 106.48e6, 110.61e6),
        row(
            "runs/2026-12-03/python3.12-with-a-very-long-directory-name",
            None,
            2.1e9,
            1.9e9,
        ),
    ];
    rows[0].earliest_listed_on_boot = true;
    rows[0].first_batch_since_boot = Some(true);
    rows[0].first_penalty_ns = Some(36.22e6);
    rows[0].verdict = Verdict::brief(
        "penalty",
        5,
        Some(36.22e6),
        &["storage".to_string()],
        (Some(14290944.0), Some(165.39e6)),
    );
    rows[1].verdict = Verdict::brief("not_distinguishable", 5, None, &[], (None, None));
    rows[2].complete = false;
    rows[2].notes = vec!["runs.jsonl: the last line is cut (a crash mid-write); skipped".into()];
    rows
}

const LONG_COMMAND: &str = "python3 -c 'import json, sys; data = json.load(open(\"/usr/share/doc/very/long/path/to/a/file/that/nobody/would/type/twice.json\")); print(len(data), sorted(data)[:10], file=sys.stderr)' --with --many --arguments --that --go --on --and --on --until --the --line --is --far --wider --than --any --terminal";

/// Every table at `width`.
fn render(width: usize) -> String {
    let title = |what: &str, cmd: &str, tail: &str| {
        table::heading(&format!("coldtrace: {what} of "), cmd, tail, width)
    };
    let mut out = String::new();
    // The default view, then every metric (--metrics all).
    out += &table::table(
        &cold_batch(),
        &title("5 runs", "python3 -c 'import json'", " [cold]"),
        &MetricView::Compact,
        Told::Everything,
        false,
        width,
    );
    out += &table::table(
        &cold_batch(),
        &title("5 runs", "python3 -c 'import json'", " [cold]"),
        &MetricView::All,
        Told::Everything,
        false,
        width,
    );
    out += &table::table(
        &many_rejected(),
        &title("13 runs", LONG_COMMAND, ""),
        &MetricView::All,
        Told::Everything,
        false,
        width,
    );
    out += &table::table(
        &all_rejected(),
        &title("no counted run", "false", ""),
        &MetricView::Compact,
        Told::Everything,
        false,
        width,
    );
    out += &table::table(
        &single_run(),
        &title("1 run", "true", ""),
        &MetricView::Compact,
        Told::Everything,
        false,
        width,
    );
    // An ordinary warm batch, told briefly.
    out += &table::table(
        &warm_batch(),
        &title("5 runs", "python3 -c 'import json'", ""),
        &MetricView::Compact,
        Told::of(&warm_batch(), &MetricView::Compact, false),
        false,
        width,
    );
    out += &compare::compare_table(&comparison(), &MetricView::All, false, width);
    out += &report::render_table(&report_rows(), width);
    out
}

fn markdown() -> String {
    let mut out = table::markdown(
        &cold_batch(),
        "coldtrace: 5 runs of python3 -c 'import json'",
    );
    out += "\n";
    out += &table::markdown(&many_rejected(), "coldtrace: 13 runs of a flaky command");
    out += "\n";
    out += &compare::compare_markdown(&comparison());
    out += "\n";
    out += &report::render_markdown(&report_rows(), &[]);
    out
}

fn check(name: &str, text: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name);
    if std::env::var_os("COLDTRACE_BLESS").is_some() {
        std::fs::write(&path, text).expect("write the snapshot");
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        text == expected,
        "{name} changed (regenerate with COLDTRACE_BLESS=1 if on purpose):\n--- now:\n{text}\n--- committed:\n{expected}"
    );
}

#[test]
fn tables_at_80_columns() {
    check("tables-80.txt", &render(80));
}

#[test]
fn tables_at_120_columns() {
    check("tables-120.txt", &render(120));
}

#[test]
fn tables_as_markdown() {
    check("tables.md", &markdown());
}

#[test]
fn no_line_is_wider_than_the_width() {
    for width in 40..=200 {
        for line in render(width).lines() {
            assert!(
                display_width(line) <= width,
                "{} columns at width {width}: {line}",
                display_width(line)
            );
        }
    }
}

#[test]
fn the_rejected_list_is_capped_and_points_to_the_rest() {
    let text = render(80).replace("\n    ", " ");
    assert!(
        text.contains("and 282 more — every one in flaky/runs.jsonl"),
        "{text}"
    );
    assert!(!text.contains("#20 "), "{text}");
    assert!(text.contains("all 3 runs were rejected"), "{text}");
    assert!(!text.contains("0 runs of"), "{text}");
}

#[test]
fn a_microsecond_counter_is_never_shown_in_nanoseconds() {
    let text = render(120);
    assert!(!text.contains(" ns "), "{text}");
    assert!(text
        .lines()
        .any(|l| l.contains("I/O pressure (sys)") && l.contains("µs")));
}

#[test]
fn compare_cells_line_up_with_and_without_an_interval() {
    let text = render(120);
    let rows: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("  wall ") || l.starts_with("  I/O pressure"))
        .collect();
    let wall = rows
        .iter()
        .find(|l| l.contains("0.81×"))
        .expect("the wall row");
    let psi = rows
        .iter()
        .find(|l| l.contains("0.28×"))
        .expect("the PSI row");
    let ratio_end = |l: &str| {
        let at = l.find("0.81×").or_else(|| l.find("0.28×")).unwrap();
        display_width(&l[..at])
    };
    assert_eq!(ratio_end(wall), ratio_end(psi), "\n{wall}\n{psi}");
}

#[test]
fn compare_shows_each_commands_mean_and_sigma_within_the_width() {
    for width in [80, 120] {
        let text = compare::compare_table(&comparison(), &MetricView::All, false, width);
        for line in text.lines() {
            assert!(display_width(line) <= width, "{width}: {line}");
        }
        let at = text
            .find("wall time of the warm runs, mean ± σ:")
            .unwrap_or_else(|| panic!("no mean ± σ at {width}:\n{text}"));
        let lines: Vec<&str> = text[at..].lines().skip(1).take(3).collect();
        assert_eq!(
            lines,
            [
                "    [0] 121.8 ±  2.5 ms",
                "    [1]  98.8 ±  1.8 ms",
                "    [2] 138.8 ± 18.4 ms",
            ],
            "{text}"
        );
    }
}

#[test]
fn markdown_headers_are_one_line_labels() {
    let md = markdown();
    let lines: Vec<&str> = md.lines().collect();
    let headers = lines
        .windows(2)
        .filter(|w| w[1].starts_with("|---"))
        .map(|w| w[0]);
    for header in headers {
        assert!(
            !header.contains("- "),
            "a label split at a hyphen: {header}"
        );
    }
    assert!(md.contains("| rejected | anomalies |"), "{md}");
}

#[test]
fn a_median_of_0_on_one_side_has_no_ratio_and_says_why() {
    // The third command's I/O pressure has a median of 0 against the first's 265 µs: 0× with
    // an interval from 0 to ∞ would be no ratio at all.
    let markdown = markdown();
    for text in [render(80), render(120), markdown.clone()] {
        let psi: Vec<&str> = text
            .lines()
            .filter(|l| l.contains("I/O pressure (sys)") && l.contains("0.28×"))
            .collect();
        assert!(!psi.is_empty(), "{text}");
        for row in psi {
            assert!(
                row.contains("one is 0") && !row.contains("0.00×") && !row.contains('∞'),
                "{row}"
            );
        }
    }
    assert!(markdown.contains("| 0 | — | one is 0 |"), "{markdown}");
}
