//! Fuzz body: the human renderers — a batch's table and its Markdown, and what a batch that
//! stopped on its failing first run shows (`coldtrace::view::table`), `report`'s table, notes and Markdown (`coldtrace::view::report`)
//! — on arbitrary figures, titles, labels, paths, failure reasons and stderr tails, and on rows
//! read back from arbitrary `batch.json` and `runs.jsonl` bytes.
//!
//! Invariants: nothing panics (a label over 65,535 characters once did, in a width
//! specifier); with colour off no control character but the newline reaches the output (every
//! user string is escaped); no line of a table is wider than the width it was drawn for.
//!
//! Input: the bytes before the first 0xFE drive the batch table (a cursor of lengths, texts and
//! values), the rest is the reader's input (`batch.json` 0xFF `runs.jsonl`, as the
//! `record_reader` target). Shared by the libFuzzer target (`fuzz/fuzz_targets/renderers.rs`)
//! and the corpus replay under plain `cargo test` (`tests/fuzz_corpus.rs`).
#![forbid(unsafe_code)]

use coldtrace::batch::{BatchOutcome, FailureStop};
use coldtrace::measure::spawner::SpawnerUsage;
use coldtrace::record::batch::{BatchContext, Counts, FailedRun};
use coldtrace::record::columns::{Columns, FirstRun, Row};
use coldtrace::record::failed::FailedRuns;
use coldtrace::record::metrics::{metrics_for, MAX_RSS};
use coldtrace::record::reader::{parse_batch_document, parse_runs, BatchRow};
use coldtrace::record::stats::{ratio, Summary};
use coldtrace::record::summary::{AtFloor, MetricSummary};
use coldtrace::record::verdict::Verdict;
use coldtrace::view::units::display_width;
use coldtrace::view::{report, table};

/// Reads an input front to back; past its end every read is empty or zero.
struct Cursor<'a>(&'a [u8]);

impl Cursor<'_> {
    fn byte(&mut self) -> u8 {
        let Some((&b, rest)) = self.0.split_first() else {
            return 0;
        };
        self.0 = rest;
        b
    }

    /// A text of up to 255 bytes, or (on a length byte of 255) a long one: up to 70,000
    /// characters, more than a width specifier can hold.
    fn text(&mut self) -> String {
        let n = self.byte() as usize;
        if n == 255 {
            let c = char::from_u32(u32::from(self.byte()).max(1)).unwrap_or('x');
            return std::iter::repeat_n(c, 70_000).collect();
        }
        let n = n.min(self.0.len());
        let (text, rest) = self.0.split_at(n);
        self.0 = rest;
        String::from_utf8_lossy(text).into_owned()
    }

    fn some_text(&mut self) -> Option<String> {
        (self.byte() & 1 == 1).then(|| self.text())
    }

    /// A finite value: small, huge, tiny or negative, as a record's figures can be.
    fn value(&mut self) -> f64 {
        let raw = u32::from_le_bytes([self.byte(), self.byte(), self.byte(), self.byte()]);
        let scale = [1.0, 1e-9, 1e3, 1e9, 1e15, 1e300, -1.0, -1e12][(raw & 7) as usize];
        f64::from(raw >> 3) * scale
    }

    fn values(&mut self) -> Vec<f64> {
        let n = self.byte() % 9;
        (0..n).map(|_| self.value()).collect()
    }
}

/// A batch outcome whose every figure and string comes from the input.
fn outcome(c: &mut Cursor<'_>) -> BatchOutcome {
    let events = if c.byte() & 1 == 1 {
        coldtrace::measure::perf::default_events()
    } else {
        Vec::new()
    };
    let metrics = metrics_for(&events);
    let summaries: Vec<MetricSummary> = metrics
        .iter()
        .enumerate()
        .map(|(i, metric)| {
            let first_value = (c.byte() & 1 == 1).then(|| c.value());
            let warm_values = c.values();
            let first = first_value.and_then(|v| Summary::of(&[v]));
            let warm = Summary::of(&warm_values);
            let all: Vec<f64> = first_value.into_iter().chain(warm_values).collect();
            MetricSummary {
                name: metric.name,
                unit: metric.unit.name(),
                first,
                warm,
                all: Summary::of(&all),
                first_to_warm_median: ratio(first.map(|s| s.median), warm.map(|s| s.median)),
                runs_at_floor: (i == MAX_RSS).then(|| AtFloor {
                    first: u64::from(c.byte() & 1),
                    warm: u64::from(c.byte()),
                    all: u64::from(c.byte()),
                }),
            }
        })
        .collect();
    // Counts as a batch keeps them: every recorded run is a warm-up, counted or rejected.
    let (warmup, counted, rejected) = (c.byte() % 4, c.byte(), c.byte());
    let counts = Counts {
        recorded: u64::from(warmup) + u64::from(counted) + u64::from(rejected),
        warmup: u64::from(warmup),
        counted: u64::from(counted),
        rejected: u64::from(rejected),
        failed_counted: u64::from(c.byte() % 4).min(u64::from(counted)),
    };
    let failed: FailedRuns = (0..c.byte() % 8)
        .map(|i| FailedRun {
            index: u64::from(i),
            reason: c.text(),
            stderr_tail: c.some_text(),
            counted: c.byte() & 1 == 1,
        })
        .collect();
    let first = (c.byte() & 3 == 3).then(|| FirstRun {
        row: Row::from_values(c.values()),
        index: 0,
        counted: false,
        failure_reason: c.some_text(),
        at_floor: false,
    });
    let mut context = BatchContext {
        system: Default::default(),
        capabilities: Default::default(),
        environment: Default::default(),
        program: Default::default(),
        coldtrace_version: "0.1.0",
        floor_reset_unavailable: c.some_text(),
        boot_marker: coldtrace::measure::boot_marker::BootMarker {
            first_batch_since_boot: None,
            state_file: None,
            note: c.some_text(),
            last_batch: None,
            at_start: None,
        },
        file_set: None,
        cgroup: None,
    };
    context.system.kernel_release = c.some_text();
    context.system.boot_id = c.some_text();
    let exit_code = c.byte();
    // A stop on the first failed run, from bytes already read (the seeds keep their meaning).
    let failure_stop = failed
        .first()
        .filter(|_| exit_code & 0x80 != 0)
        .map(|f| FailureStop {
            index: f.index,
            warmup: exit_code & 0x40 != 0,
            how: f.reason.clone(),
            exit_code: Some(i32::from(exit_code)),
            stderr_tail: f.stderr_tail.clone(),
            output_shown: exit_code & 0x20 != 0,
        });
    // The verdict on what was read already (no more bytes: the seeds keep their meaning).
    let walls_ns = c.values();
    let verdict = verdict_of(first.as_ref(), &walls_ns, u64::from(warmup));
    let mut outcome = BatchOutcome {
        exit_code,
        json: String::new(),
        document: String::new(),
        records: None,
        columns: Columns::new(metrics.clone()),
        metrics,
        summaries,
        walls_ns,
        verdict,
        first,
        first_paged_in: None,
        survivors: survivors(c),
        first_stayed: None,
        watching: c.byte() & 1 == 1,
        cache_unknown: c.some_text(),
        first_penalty: Err("no warm series"),
        first_cold_cause: None,
        working_set: None,
        cycles: None,
        anomalies: Vec::new(),
        warm_noise: None,
        cold_when: None,
        single_run: None,
        failed,
        counts,
        context,
        interrupted_by: None,
        stopped_reason: c.some_text(),
        out_dir: c.some_text().map(std::path::PathBuf::from),
        notices: (0..c.byte() % 3).map(|_| c.text()).collect(),
        spawner: (c.byte() & 1 == 1).then(|| SpawnerUsage {
            runs: u64::from(c.byte()),
            cpu_ns: (c.byte() & 1 == 1).then(|| c.value().abs() as u64),
            resident_kib: (c.byte() & 1 == 1).then(|| u64::from(c.byte()) * 4),
            unavailable: c.some_text(),
        }),
        single_outcome: c.some_text(),
        start_failure: c.some_text(),
        wait_failure: c.some_text(),
        failure_stop,
    };
    // Last, so that the seeds written before it keep their meaning.
    outcome.first_cold_cause = Some(cold_cause_of(c));
    outcome
}

/// What made the first run cold, decided from arbitrary facts: any actions, any reads and
/// refaults, the kernel's counts in any order (another boot's, a counter that went back).
fn cold_cause_of(c: &mut Cursor<'_>) -> coldtrace::record::cause::ColdCause {
    use coldtrace::measure::cache::CacheHistory;
    let count = |c: &mut Cursor<'_>| (c.byte() & 1 == 1).then(|| c.value().abs() as u64);
    let history = |c: &mut Cursor<'_>| {
        (c.byte() & 1 == 1).then(|| CacheHistory {
            uptime_s: (c.byte() & 1 == 1).then(|| c.value()),
            drop_pagecache: count(c),
            drop_slab: count(c),
            pgsteal_file: count(c),
            pgscan_file: count(c),
        })
    };
    let flags = c.byte();
    let facts = coldtrace::record::cause::ColdFacts {
        evicted: flags & 1 != 0,
        dropped_caches: flags & 2 != 0,
        setup: flags & 4 != 0,
        prepare: flags & 8 != 0,
        stayed_ratio: (flags & 16 != 0).then(|| c.value()),
        resident_ratio_before: (flags & 32 != 0).then(|| c.value()),
        read_bytes: (flags & 64 != 0).then(|| c.value()),
        major_faults: (flags & 128 != 0).then(|| c.value()),
        refaults: count(c),
        page_bytes: u64::from(c.byte()) << 8,
        first_batch_since_boot: (c.byte() & 1 == 1).then(|| c.byte() & 1 == 1),
        at_first: history(c),
        at_start: history(c),
        last_batch: history(c),
        own_drops: u64::from(c.byte()),
        page_ins_evicted_bytes: count(c),
        page_ins_elsewhere_bytes: count(c),
        page_ins_unknown_reason: c.some_text(),
        wrote_caches: (c.byte() & 1 == 1).then(|| coldtrace::record::cause::WroteCaches {
            files: count(c).unwrap_or(0),
            bytes: count(c).unwrap_or(0),
            rewritten_files: count(c).unwrap_or(0),
            paths: c.some_text().into_iter().collect(),
            roots: c.some_text().into_iter().collect(),
            unknown_reason: c.some_text(),
        }),
    };
    coldtrace::record::cause::cold_cause(&facts)
}

/// The verdict on a first run and warm runs of the wall times `walls` (each also its
/// uninterruptible time and its read bytes, whatever they are), as a batch decides it.
fn verdict_of(first: Option<&FirstRun>, walls: &[f64], warmups: u64) -> Verdict {
    use coldtrace::record::verdict::{decide, Figures, First, Setting};
    let figures = |index: u64, v: f64| Figures {
        index,
        wall_ns: Some(v),
        queued_ns: Some(v / 7.0),
        blocked_ns: Some(v / 3.0),
        sys_ns: Some(v / 5.0),
        read_bytes: Some(v * 16.0),
        steal_ns: None,
        cold_action: false,
    };
    let rest: Vec<Figures> = walls
        .iter()
        .enumerate()
        .map(|(i, &v)| figures(i as u64 + 1, v))
        .collect();
    let first = first.map(|f| First {
        figures: Figures::of(&f.row),
        counted: f.counted,
    });
    let setting = Setting {
        warmups,
        tick_ns: 4_000_000,
        ..Setting::default()
    };
    decide(first, &rest, &[], setting)
}

/// Survivors of a few runs, with arbitrary names (a `comm` is whatever a process set).
fn survivors(c: &mut Cursor<'_>) -> coldtrace::batch::SurvivorsSeen {
    let mut seen = coldtrace::batch::SurvivorsSeen::default();
    for run in 0..u64::from(c.byte() % 3) {
        let processes = (0..c.byte() % 7)
            .map(|i| coldtrace::measure::descendants::Proc {
                pid: i32::from(c.byte()) + 2,
                ppid: 1,
                pgid: 1,
                start_ticks: u64::from(i),
                comm: c.text(),
                state: 'S',
            })
            .collect();
        let action = match c.byte() % 3 {
            0 => coldtrace::measure::survivors::SurvivorAction::Left,
            1 => coldtrace::measure::survivors::SurvivorAction::Killed,
            _ => coldtrace::measure::survivors::SurvivorAction::Waited,
        };
        let survivors = coldtrace::measure::survivors::Survivors {
            processes,
            action: Some(action),
            seen_by: Some("descendants"),
            ..Default::default()
        };
        seen.add(run, &survivors);
    }
    seen
}

/// No control character but `\n` (colour is off, so not even ESC).
pub fn check_no_controls(what: &str, text: &str) {
    if let Some(c) = text.chars().find(|&c| c.is_control() && c != '\n') {
        panic!("{what}: a raw control character {c:?} in:\n{text}");
    }
}

/// No line wider than `width` columns.
pub fn check_width(what: &str, text: &str, width: usize) {
    for line in text.lines() {
        assert!(
            display_width(line) <= width,
            "{what}: a line of {} columns at width {width}: {line:?}",
            display_width(line)
        );
    }
}

/// Report rows read from the reader's input, their strings then replaced from the cursor.
fn rows(c: &mut Cursor<'_>, files: &[u8]) -> Vec<BatchRow> {
    let (batch, runs) = match files.iter().position(|&b| b == 0xff) {
        Some(i) => (Some(&files[..i]), &files[i + 1..]),
        None => (None, files),
    };
    let mut row = BatchRow::default();
    if let Some(batch) = batch {
        if parse_batch_document(batch, "batch.json", &mut row).is_err() {
            return Vec::new();
        }
    }
    if parse_runs(runs, "runs.jsonl", &mut row).is_err() {
        return Vec::new();
    }
    row.dir = c.text();
    if c.byte() & 1 == 1 {
        row.label = c.some_text();
        row.kernel = c.some_text();
        row.first_rejected = c.some_text();
        row.notes.extend(c.some_text());
    }
    let copies = 1 + c.byte() as usize % 3;
    vec![row; copies]
}

/// Draws everything and checks every invariant; panics on the first that fails.
pub fn run(data: &[u8]) {
    draw(data);
}

/// What an input reached, for the corpus replay to check its seeds' coverage (the libFuzzer
/// target ignores it).
#[allow(dead_code)]
#[derive(Debug, Default)]
pub struct Reached {
    /// Report rows drawn (0: the reader refused the files, or there were none).
    pub rows: usize,
    /// The longest title or label drawn, in characters.
    pub longest_text: usize,
    /// The width drawn at.
    pub width: usize,
}

/// [`run`], saying what the input reached.
pub fn draw(data: &[u8]) -> Reached {
    let (head, files) = match data.iter().position(|&b| b == 0xfe) {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &[][..]),
    };
    let mut c = Cursor(head);
    let width = 40 + c.byte() as usize % 161;
    // As `coldtrace run` builds it: the command escaped, then fitted to the width.
    let command = coldtrace::text::escape_controls(&c.text());
    let command_chars = command.chars().count();
    let title = table::heading("coldtrace: 2 runs of ", &command, "", width);
    let outcome = outcome(&mut c);
    let view = match outcome.exit_code % 3 {
        0 => coldtrace::plan::MetricView::Compact,
        1 => coldtrace::plan::MetricView::All,
        _ => coldtrace::plan::MetricView::List(vec!["max_rss_kib", "wall_ns", "task-clock"]),
    };
    let told = table::Told::of(&outcome, &view, outcome.exit_code % 2 == 0);
    let drawn = table::table(&outcome, &title, &view, told, false, width);
    check_no_controls("table", &drawn);
    check_width("table", &drawn, width);
    check_no_controls("table markdown", &table::markdown(&outcome, &title));
    if let Some(stopped) = table::failure_stop(&outcome, &command, " [label]", false, width) {
        check_no_controls("stop", &stopped);
        check_width("stop", &stopped, width);
    }
    let rows = rows(&mut c, files);
    let drawn = report::render_table(&rows, width);
    check_no_controls("report", &drawn);
    check_width("report", &drawn, width);
    for note in report::notes(&rows) {
        check_no_controls("report note", &note);
    }
    check_no_controls("report markdown", &report::render_markdown(&rows, &[]));
    let label = rows
        .iter()
        .filter_map(|r| r.label.as_ref())
        .map(|l| l.chars().count());
    Reached {
        rows: rows.len(),
        longest_text: label.chain([command_chars]).max().unwrap_or(0),
        width,
    }
}
