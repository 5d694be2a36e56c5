//! The sentences under a batch's table that explain its first run: the penalty over the warm
//! median and its parts, with the evidence. It words what record computed; it computes nothing.
#![forbid(unsafe_code)]

use crate::batch::{BatchOutcome, FirstPagedIn};
use crate::measure::cache::{PagedFile, Stayed};
use crate::record::anomaly::{RunAnomaly, RULE_OUTLIER};
use crate::record::metrics::Unit;
use crate::record::verdict::penalty::{Basis, FirstPenalty};
use crate::record::verdict::tree_penalty::TreePenalty;
use crate::text::unbreakable;
use crate::view::lines::Note;
use crate::view::units;

/// A figure that is never broken across lines.
pub(crate) fn human_bytes(bytes: f64) -> String {
    unbreakable(&units::human_bytes(bytes))
}

pub(crate) fn human_ns(ns: f64) -> String {
    unbreakable(&units::human_ns(ns))
}

pub(crate) fn signed_ns(ns: i64) -> String {
    unbreakable(&units::signed_ns(ns))
}

/// What the runs the table's columns cover are called: `cold` where every counted run started
/// cold (the verdict's kind says so: a cold action before each, or a `--prepare` that drops
/// the caches), else `warm`.
pub fn rest_word(outcome: &BatchOutcome) -> &'static str {
    match outcome.verdict.kind {
        crate::record::verdict::Kind::EveryRunCold => "cold",
        _ => "warm",
    }
}

/// Every explaining sentence of a batch, as notes under its table.
pub fn notes(outcome: &BatchOutcome) -> Vec<Note> {
    let mut notes = Vec::new();
    let rest = rest_word(outcome);
    notes.extend(crate::view::verdict::full(
        &outcome.verdict,
        outcome.first_penalty.as_ref().ok(),
    ));
    if let Some(cycles) = &outcome.cycles {
        crate::view::cycles::notes(&mut notes, cycles);
    } else if let Some(cause) = outcome.first_cold_cause.as_ref() {
        notes.extend(crate::view::verdict::cause(cause));
    }
    if let Some((stayed, roots)) = &outcome.first_stayed {
        if stayed.residency.resident_bytes.is_some_and(|b| b > 0) {
            notes.push(Note::warning("not cold", stayed_sentence(stayed, roots)));
        }
    }
    if let Some(first) = &outcome.first_paged_in {
        notes.push(Note::plain(paged_in_sentence(first)));
    }
    if let Some(ws) = &outcome.working_set {
        notes.extend(crate::view::cause::working_set_sentence(ws, rest).map(Note::plain));
    }
    // A run the verdict left out of the warm reference is said once, in its note; a storage
    // read the verdict names a run for (it started cold) is not said again as its anomaly.
    let left_out = &outcome.verdict.left_out;
    let said = notes.clone();
    let anomalies: Vec<RunAnomaly> = outcome
        .anomalies
        .iter()
        .filter(|a| !left_out.iter().any(|l| l.index == a.index))
        .filter(|a| a.anomaly.kind != "storage_reads" || !names_run(&said, a.index))
        .cloned()
        .collect();
    anomaly_notes(&mut notes, &anomalies, rest);
    notes.extend(noise_note(outcome));
    notes
}

/// `warm series noisy: …`, judged over the runs after the first (batch.json's `warm_noise`),
/// whatever they were.
pub fn noise_note(outcome: &BatchOutcome) -> Option<Note> {
    let rest = rest_word(outcome);
    let noise = outcome.warm_noise.as_ref()?;
    // A figure is never broken across lines: "(> 10 %)", not "(> 10⏎ %)".
    let rule = noise
        .rule
        .replace("warm wall", &format!("{rest} wall"))
        .replace(" %", "\u{a0}%");
    Some(Note::warning(&format!("{rest} series noisy"), rule))
}

/// Whether a batch has something to explain about its first run: a penalty, a cold action,
/// watched files (what the first run paged in was asked for), a first run that read 1 MiB or
/// more from storage (what made it cold is said), a run the verdict left out of the warm
/// reference or found cold, a disturbed run. Its table then says everything under it; an
/// ordinary warm batch gets the verdict in one line (`--explain` says everything always).
pub fn something_to_explain(outcome: &BatchOutcome) -> bool {
    let v = &outcome.verdict;
    let read_cold = v
        .first_read_bytes
        .is_some_and(|b| b >= crate::record::verdict::COLD_READ_BYTES);
    v.kind == crate::record::verdict::Kind::Penalty
        || read_cold
        || outcome.cold_when.is_some()
        || outcome.watching
        || outcome.cycles.is_some()
        || !v.left_out.is_empty()
        || !v.cold_runs.is_empty()
        || !outcome.anomalies.is_empty()
}

/// Whether one of `notes` names run `index` (`run #3`, not `run #30`).
fn names_run(notes: &[Note], index: u64) -> bool {
    let name = format!("run #{index}");
    notes.iter().any(|n| {
        n.text
            .match_indices(&name)
            .any(|(at, _)| !n.text[at + name.len()..].starts_with(|c: char| c.is_ascii_digit()))
    })
}

/// Anomalies shown one a line, at most this many (the rest are counted; all are in batch.json).
const ANOMALIES_SHOWN: usize = 4;

/// `rest`: what the runs after the first are (`warm`, or `cold` when every run started cold).
fn anomaly_notes(notes: &mut Vec<Note>, anomalies: &[RunAnomaly], rest: &str) {
    for a in anomalies.iter().take(ANOMALIES_SHOWN) {
        let label = match a.anomaly.kind {
            "not_cold" => "not cold",
            _ => "disturbed",
        };
        notes.push(Note::warning(label, anomaly_sentence(a, rest)));
    }
    if anomalies.len() > ANOMALIES_SHOWN {
        notes.push(Note::plain(format!(
            "… and {} more (anomalies in batch.json)",
            anomalies.len() - ANOMALIES_SHOWN
        )));
    }
}

/// `warm run #3 read 3.1 MiB from storage while the warm median is 0: something evicted pages
/// during the batch`. `rest` names the runs after the first: `warm`, or `cold` in a batch with
/// a cold action before every counted run.
pub fn anomaly_sentence(a: &RunAnomaly, rest: &str) -> String {
    let (x, reference) = (a.anomaly.value, a.anomaly.reference);
    let against = if a.anomaly.rule == RULE_OUTLIER {
        format!("beyond the {rest} runs' outlier bound, median")
    } else {
        format!("while the {rest} median is")
    };
    match (a.anomaly.kind, a.anomaly.metric) {
        ("not_cold", _) => crate::view::cause::not_cold_sentence(a),
        ("cached_before_fell", _) => format!(
            "{rest} run #{} started with {} of the watched files cached, {} fewer than the run \
             before left: something evicted pages between runs",
            a.index,
            human_bytes(x),
            human_bytes(reference - x)
        ),
        (_, "major_faults") => format!(
            "{rest} run #{} took {x:.0} major fault{} {against} {reference:.0}: pages it needed \
             were not cached (something evicted them, or no earlier run read them)",
            a.index,
            if x == 1.0 { "" } else { "s" }
        ),
        _ => format!(
            "{rest} run #{} read {} from storage {against} {}: pages it needed were not cached \
             (something evicted them, or no earlier run read them)",
            a.index,
            human_bytes(x * 512.0),
            human_bytes(reference * 512.0)
        ),
    }
}

/// `12 % of /usr/lib/python3.11 stayed cached after the eviction (3 files): libpython3.11.so
/// 5.1 MiB, mapped by another process (pid 812, python3); …`.
pub fn stayed_sentence(stayed: &Stayed, roots: &[String]) -> String {
    let ratio = stayed.residency.resident_ratio.map_or("some".into(), |r| {
        unbreakable(&units::human(Unit::Ratio, r))
    });
    let shown: Vec<String> = stayed
        .top
        .iter()
        .map(|f| {
            let name = f
                .path
                .file_name()
                .map_or(f.path.to_string_lossy(), |n| n.to_string_lossy());
            format!(
                "{} {}, {}",
                crate::text::escape_controls(&name),
                human_bytes(f.bytes as f64),
                f.reason
            )
        })
        .collect();
    let more = if stayed.files > stayed.top.len() as u64 {
        "; …"
    } else {
        ""
    };
    format!(
        "{ratio} of {} stayed cached after the eviction ({} file{}): {}{more}",
        crate::text::escape_controls(&roots.join(", ")),
        stayed.files,
        if stayed.files == 1 { "" } else { "s" },
        shown.join("; ")
    )
}

/// `the first run brought 13.6 MiB of the watched files into the page cache (212 files):
/// libpython3.11.so 5.1 MiB, _json.so 200 KiB, …; every file in runs/000/paged_in.tsv`.
pub fn paged_in_sentence(first: &FirstPagedIn) -> String {
    let p = &first.paged;
    if p.known_files == 0 {
        return "the first run's paged-in files are unknown: no watched file's residency was \
                known before and after it"
            .into();
    }
    if p.files == 0 {
        let read = human_bytes(first.read_bytes as f64);
        return match (first.read_bytes, first.from_ledger) {
            (0, _) => "the first run brought none of the watched files into the page cache".into(),
            (_, true) => format!(
                "the first run brought none of the watched files into the page cache: the \
                 {read} it read from storage came from files outside them"
            ),
            // Residency is a net change: pages evicted while the run ran and read back by it
            // leave none, though it read them from storage.
            (_, false) => format!(
                "the watched files' residency did not grow during the first run, though it \
                 read {read} from storage: from files outside them, or from watched pages \
                 evicted while it ran (by it, another process or reclaim) and read back, which \
                 residency before and after does not show (the page-in ledger, with root, \
                 tells which)"
            ),
        };
    }
    let shown: Vec<&PagedFile> = p.top.iter().take(5).collect();
    let names: Vec<String> = shown
        .iter()
        .map(|f| format!("{} {}", short_name(f, &shown), human_bytes(f.bytes as f64)))
        .collect();
    let more = if p.files > shown.len() as u64 {
        ", …"
    } else {
        ""
    };
    let all = first
        .artifact
        .as_ref()
        .map_or(String::new(), |a| format!("; every file in {a}"));
    format!(
        "the first run brought {} of the watched files into the page cache ({} file{}): {}{more}{all}",
        human_bytes(p.bytes as f64),
        p.files,
        if p.files == 1 { "" } else { "s" },
        names.join(", ")
    )
}

/// A file's name, with its directory when another shown file has the same name
/// (`json/__init__.py`).
fn short_name(file: &PagedFile, shown: &[&PagedFile]) -> String {
    let name = |f: &PagedFile| {
        f.path
            .file_name()
            .map_or(f.path.to_string_lossy(), |n| n.to_string_lossy())
            .into_owned()
    };
    let own = name(file);
    let clash = shown.iter().filter(|f| name(f) == own).count() > 1;
    let parent = file.path.parent().and_then(|p| p.file_name());
    let text = match (clash, parent) {
        (true, Some(dir)) => format!("{}/{own}", dir.to_string_lossy()),
        _ => own,
    };
    crate::text::escape_controls(&text)
}

/// `first run +153.2 ms over the warm median (run #3): +98.1 ms blocked (76.69 MiB read from
/// storage, 87 major faults, 70 ms I/O stall system-wide), +40 ms CPU (+17 ms sys), +2 ms
/// waiting for a CPU`.
pub fn split_sentence(p: &FirstPenalty) -> String {
    let reference = if p.reference == "median" {
        format!("the warm median (run #{})", p.reference_index)
    } else {
        format!(
            "warm run #{} (the lower of the two around the median)",
            p.reference_index
        )
    };
    let head = if p.wall_ns >= 0 {
        format!("first run {} over {reference}", signed_ns(p.wall_ns))
    } else {
        format!(
            "first run {} faster than {reference}",
            human_ns(p.wall_ns.unsigned_abs() as f64)
        )
    };
    let evidence = evidence_words(p);
    let in_brackets = |words: &[String]| {
        if words.is_empty() {
            String::new()
        } else {
            format!(" ({})", words.join(", "))
        }
    };
    let beside = |words: &[String]| {
        if words.is_empty() {
            String::new()
        } else {
            format!("; evidence: {}", words.join(", "))
        }
    };
    let sys = sys_words(p);
    match (p.basis, p.blocked_ns, p.cpu_ns, p.runqueue_ns) {
        (Basis::Tree, ..) => {
            // rusage's system time is summed over the tree's tasks, R is their union: beside
            // R of several tasks it says whose it is (ΔR −18 ms, sys ≈ +18 ms is no mistake).
            let sys = match p.tree.tasks {
                Some(n) if n > 1 => sys_part(p).map(|s| format!("the whole tree's {s}")),
                _ => sys_part(p),
            };
            format!("{head}{}", tree_words(&p.tree, &evidence, sys))
        }
        (Basis::Schedstat, Some(blocked), Some(cpu), Some(rq)) => format!(
            "{head}: {} blocked{}, {} CPU{sys}, {} waiting for a CPU",
            signed_ns(blocked),
            in_brackets(&evidence),
            signed_ns(cpu),
            signed_ns(rq)
        ),
        (Basis::MainThread, Some(blocked), Some(cpu), Some(rq)) => format!(
            "{head}; main thread only ({}): {} off CPU{}, {} on a CPU, {} waiting for a CPU; \
             {}",
            why_main_thread(&p.tree),
            signed_ns(blocked),
            in_brackets(&evidence),
            signed_ns(cpu),
            signed_ns(rq),
            elsewhere_words(p)
        ),
        _ => format!(
            "{head}; not split: no schedstat (--minimal or unreadable){}",
            beside(&evidence)
        ),
    }
}

/// `; the tree (9 tasks) was on a CPU +259 ms, uninterruptible (storage, faults, kernel locks)
/// +150 ms (97 MiB read from storage, 97 major faults), waiting for a CPU +12 ms, asleep +3 ms`:
/// the four parts, the largest first (a single task is not called a tree); beside "on a CPU",
/// the hypervisor's extra steal and the system time (`sys`).
fn tree_words(t: &TreePenalty, evidence: &[String], sys: Option<String>) -> String {
    let in_brackets = |words: Vec<String>| {
        if words.is_empty() {
            String::new()
        } else {
            format!(" ({})", words.join("; "))
        }
    };
    // Summed over the tasks, the steal can exceed R's difference where they ran at once.
    let steal = t.steal_to_say().map(|ns| match t.on_cpu_ns {
        Some(r) if ns < r => format!("of which ~{} hypervisor steal", human_ns(ns as f64)),
        _ => format!("all of it hypervisor steal, ~{}", human_ns(ns as f64)),
    });
    let evidence = match evidence {
        [] => String::new(),
        words => in_brackets(vec![words.join(", ")]),
    };
    let named = [
        (
            t.on_cpu_ns,
            "on a CPU",
            in_brackets(steal.into_iter().chain(sys).collect()),
        ),
        (
            t.uninterruptible_ns,
            "uninterruptible (storage, faults, kernel locks)",
            evidence,
        ),
        (t.queued_ns, "waiting for a CPU", String::new()),
        (t.sleeping_ns, "asleep", String::new()),
    ];
    let mut parts: Vec<(i64, String)> = named
        .into_iter()
        .filter_map(|(ns, name, after)| {
            let ns = ns?;
            Some((ns, format!("{name} {}{after}", signed_ns(ns))))
        })
        .collect();
    parts.sort_by_key(|(ns, _)| std::cmp::Reverse(ns.unsigned_abs()));
    let words: Vec<String> = parts.into_iter().map(|(_, w)| w).collect();
    let who = match t.tasks {
        Some(n) if n > 1 => format!("; the tree ({n} tasks) was "),
        _ => ": it was ".to_string(),
    };
    format!("{who}{}", words.join(", "))
}

/// Why only the main thread's split is given, in a few words, after how many tasks the first
/// run's tree ran when that is known: `the tree ran 7 tasks; its states need root or
/// CAP_PERFMON`.
fn why_main_thread(t: &TreePenalty) -> String {
    let whose = if t.tasks.is_some() {
        "its"
    } else {
        "the tree's"
    };
    let why = match t.unavailable.as_deref() {
        Some(why) if why.contains("CAP_PERFMON") => {
            format!("{whose} states need root or CAP_PERFMON")
        }
        Some(why) => why.to_string(),
        None => format!("{whose} states are unknown"),
    };
    match t.tasks {
        Some(n) => format!(
            "the tree ran {n} task{}; {why}",
            if n == 1 { "" } else { "s" }
        ),
        None => why,
    }
}

/// `the rest of the tree used +45 ms more CPU (+12 ms in other threads, +33 ms in child
/// processes; the whole tree's sys ≈ +28 ms: tick-sampled, 4 ms tick)`: rusage's system time
/// covers the whole tree, so it goes here, not beside the main thread's CPU.
fn elsewhere_words(p: &FirstPenalty) -> String {
    let t = &p.tree;
    let sys = sys_part(p).map(|s| format!("the whole tree's {s}"));
    let Some(elsewhere) = t.cpu_elsewhere_ns else {
        let sys = sys.map_or(String::new(), |s| format!(" ({s})"));
        return format!("the rest of the tree's CPU is unknown{sys}");
    };
    let mut inside: Vec<String> = Vec::new();
    if let (Some(threads), Some(children)) = (t.other_threads_cpu_ns, t.children_cpu_ns) {
        inside.push(format!(
            "{} in other threads, {} in child processes",
            signed_ns(threads),
            signed_ns(children)
        ));
    }
    inside.extend(sys);
    let split = if inside.is_empty() {
        String::new()
    } else {
        format!(" ({})", inside.join("; "))
    };
    // A first run whose other tasks used less CPU than the reference's says "less", not
    // "-12 ms more".
    let used = if elsewhere < 0 {
        format!("{} less", human_ns(elsewhere.unsigned_abs() as f64))
    } else {
        format!("{} more", signed_ns(elsewhere))
    };
    format!("the rest of the tree used {used} CPU{split}")
}

/// The system-time part of the CPU difference, as rusage's tick-sampled split allows: left
/// out within two ticks (`sys ≈ +28 ms`, with the tick, beyond).
fn sys_words(p: &FirstPenalty) -> String {
    sys_part(p).map_or(String::new(), |s| format!(" ({s})"))
}

/// `sys ≈ +28 ms: tick-sampled, 4 ms tick`, or `None` within two ticks.
fn sys_part(p: &FirstPenalty) -> Option<String> {
    let tick = p.cpu_tick;
    let sys_ns = p.sys_us.map(|us| us * 1000)?;
    if sys_ns.unsigned_abs() <= 2 * tick.ns {
        return None;
    }
    let tick_words = match tick.source {
        "assumed" => format!("tick unknown, at most {}", human_ns(tick.ns as f64)),
        _ => format!("{} tick", human_ns(tick.ns as f64)),
    };
    Some(format!(
        "sys ≈ {}: tick-sampled, {tick_words}",
        signed_ns(round_to(sys_ns, 1_000_000))
    ))
}

/// `ns` rounded to a multiple of `step`.
fn round_to(ns: i64, step: i64) -> i64 {
    (ns as f64 / step as f64).round() as i64 * step
}

/// What the first run did more, in words: storage reads, major faults, voluntary context
/// switches (each one a wait), I/O stall.
fn evidence_words(p: &FirstPenalty) -> Vec<String> {
    let e = &p.evidence;
    let mut words = Vec::new();
    let read = e.read_bytes.or(e.block_in.map(|b| b * 512));
    if let Some(bytes) = read.filter(|&b| b > 0) {
        words.push(format!("{} read from storage", human_bytes(bytes as f64)));
    }
    if let Some(n) = e.major_faults.filter(|&n| n > 0) {
        words.push(format!("{n} major fault{}", if n == 1 { "" } else { "s" }));
    }
    if let Some(n) = e.voluntary_switches.filter(|&n| n > 0) {
        words.push(format!(
            "{n} voluntary context switch{}",
            if n == 1 { "" } else { "es" }
        ));
    }
    // The tree's own stall (its cgroup's PSI) where there is one: the system-wide figure
    // also counts every other process's waits.
    match (e.io_stall_ns, e.psi_io_some_us) {
        (Some(ns), _) if ns > 0 => {
            words.push(format!("{} I/O stall of its cgroup", human_ns(ns as f64)));
        }
        (Some(_), _) => {}
        (None, Some(us)) if us > 0 => words.push(format!(
            "{} I/O stall system-wide",
            human_ns(us as f64 * 1e3)
        )),
        _ => {}
    }
    if let Some(ns) = e.memory_stall_ns.filter(|&ns| ns > 0) {
        words.push(format!(
            "{} memory stall of its cgroup",
            human_ns(ns as f64)
        ));
    }
    words
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::verdict::penalty::{Evidence, StandsOut};

    /// The sentence as printed (no-break spaces are printed as spaces).
    fn plain(text: String) -> String {
        text.replace('\u{a0}', " ")
    }

    fn penalty(basis: Basis) -> FirstPenalty {
        FirstPenalty {
            first_index: 0,
            reference_index: 3,
            reference: "median",
            first_wall_ns: 253_000_000,
            reference_wall_ns: 100_000_000,
            basis,
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
            stands_out: StandsOut {
                significant: true,
                warm_runs: 5,
                warm_min_wall_ns: Some(90e6),
                warm_median_wall_ns: Some(100e6),
                warm_max_wall_ns: Some(110e6),
                threshold_wall_ns: Some(130e6),
            },
            cpu_tick: crate::measure::tick::Tick {
                ns: 4_000_000,
                source: "timer_list",
            },
            tree: TreePenalty::default(),
        }
    }

    #[test]
    fn the_parts_are_named_with_their_evidence() {
        let text = plain(split_sentence(&penalty(Basis::Schedstat)));
        assert_eq!(
            text,
            "first run +153 ms over the warm median (run #3): +111 ms blocked \
             (76.69 MiB read from storage, 87 major faults, 400 voluntary context switches, \
             70 ms I/O stall system-wide), +40 ms CPU (sys ≈ +17 ms: tick-sampled, 4 ms \
             tick), +2 ms waiting for a CPU"
        );
    }

    #[test]
    fn the_trees_own_stalls_replace_the_system_wide_one() {
        let mut p = penalty(Basis::Schedstat);
        p.evidence.io_stall_ns = Some(52_000_000);
        p.evidence.memory_stall_ns = Some(3_000_000);
        let text = plain(split_sentence(&p));
        assert!(
            text.contains(
                "400 voluntary context switches, 52 ms I/O stall of its cgroup, 3 ms memory \
                 stall of its cgroup)"
            ),
            "{text}"
        );
        assert!(!text.contains("system-wide"), "{text}");
        // No stall of its own: nothing said, not the system's figure instead.
        p.evidence.io_stall_ns = Some(0);
        p.evidence.memory_stall_ns = Some(0);
        let text = plain(split_sentence(&p));
        assert!(text.contains("switches), +40 ms CPU"), "{text}");
    }

    #[test]
    fn a_system_time_within_two_ticks_is_left_out_and_an_unknown_tick_is_said() {
        let mut p = penalty(Basis::Schedstat);
        p.sys_us = Some(-8_000);
        let text = plain(split_sentence(&p));
        assert!(text.contains("+40 ms CPU, +2 ms waiting"), "{text}");
        p.sys_us = Some(27_600);
        p.cpu_tick = crate::measure::tick::Tick {
            ns: 10_000_000,
            source: "assumed",
        };
        let text = plain(split_sentence(&p));
        assert!(
            text.contains("(sys ≈ +28 ms: tick-sampled, tick unknown, at most 10 ms)"),
            "{text}"
        );
    }

    #[test]
    fn the_top_five_files_are_named_with_their_directory_when_names_clash() {
        let file = |path: &str, bytes: u64| PagedFile {
            path: path.into(),
            bytes,
        };
        let first = FirstPagedIn {
            paged: crate::measure::cache::PagedIn {
                top: vec![
                    file("/p/lib/libpython3.11.so.1.0", 5 << 20),
                    file("/p/json/__init__.py", 8192),
                    file("/p/email/__init__.py", 4096),
                ],
                files: 212,
                bytes: 13 << 20,
                known_files: 900,
            },
            artifact: Some("runs/000/paged_in.tsv".into()),
            read_bytes: 13 << 20,
            from_ledger: false,
        };
        assert_eq!(
            plain(paged_in_sentence(&first)),
            "the first run brought 13 MiB of the watched files into the page cache \
             (212 files): libpython3.11.so.1.0 5 MiB, json/__init__.py 8 KiB, \
             email/__init__.py 4 KiB, …; every file in runs/000/paged_in.tsv"
        );
    }

    #[test]
    fn no_watched_file_gained_beside_a_read_says_where_the_read_went_or_why_it_cannot() {
        let none = |read_bytes: u64, from_ledger: bool| FirstPagedIn {
            paged: crate::measure::cache::PagedIn {
                top: Vec::new(),
                files: 0,
                bytes: 0,
                known_files: 900,
            },
            artifact: None,
            read_bytes,
            from_ledger,
        };
        assert_eq!(
            plain(paged_in_sentence(&none(0, false))),
            "the first run brought none of the watched files into the page cache"
        );
        assert_eq!(
            plain(paged_in_sentence(&none(300 << 10, true))),
            "the first run brought none of the watched files into the page cache: the 300 KiB \
             it read from storage came from files outside them"
        );
        assert!(
            plain(paged_in_sentence(&none(300 << 10, false))).starts_with(
                "the watched files' residency did not grow during the first run, though it read \
             300 KiB from storage: from files outside them, or from watched pages evicted while \
             it ran"
            )
        );
    }

    #[test]
    fn a_tree_is_named_with_its_four_parts_the_largest_first() {
        let mut p = penalty(Basis::Tree);
        p.wall_ns = 424_000_000;
        p.evidence.voluntary_switches = None;
        p.evidence.psi_io_some_us = None;
        p.evidence.read_bytes = Some(97 << 20);
        p.evidence.major_faults = Some(97);
        p.tree = TreePenalty {
            source: crate::record::verdict::tree_penalty::BY_TREE,
            on_cpu_ns: Some(259_000_000),
            uninterruptible_ns: Some(150_000_000),
            queued_ns: Some(12_000_000),
            sleeping_ns: Some(3_000_000),
            tasks: Some(9),
            ..TreePenalty::default()
        };
        assert_eq!(
            plain(split_sentence(&p)),
            "first run +424 ms over the warm median (run #3); the tree (9 tasks) was on a CPU \
             +259 ms (the whole tree's sys ≈ +17 ms: tick-sampled, 4 ms tick), uninterruptible \
             (storage, faults, kernel locks) +150 ms (97 MiB read from storage, 97 major \
             faults), waiting for a CPU +12 ms, asleep +3 ms"
        );
        // One task is not a tree, and its system time is its own.
        p.tree.tasks = Some(1);
        let text = plain(split_sentence(&p));
        assert!(
            text.contains(": it was on a CPU +259 ms (sys ≈ +17 ms: tick-sampled"),
            "{text}"
        );
        // A part that shrank is said with its sign.
        p.tree.sleeping_ns = Some(-300_000_000);
        p.sys_us = None;
        let text = plain(split_sentence(&p));
        assert!(
            text.starts_with("first run +424 ms over the warm median (run #3): it was asleep -300 ms, on a CPU +259 ms"),
            "{text}"
        );
    }

    #[test]
    fn on_a_cpu_says_the_hypervisors_extra_steal() {
        let mut p = penalty(Basis::Tree);
        p.wall_ns = 90_000_000;
        p.evidence = Default::default();
        p.tree = TreePenalty {
            source: crate::record::verdict::tree_penalty::BY_TREE,
            on_cpu_ns: Some(80_000_000),
            uninterruptible_ns: Some(6_000_000),
            queued_ns: Some(3_000_000),
            sleeping_ns: Some(1_000_000),
            tasks: Some(3),
            steal_ns: Some(68_000_000),
            ..TreePenalty::default()
        };
        let text = plain(split_sentence(&p));
        assert!(
            text.contains(
                "; the tree (3 tasks) was on a CPU +80 ms (of which ~68 ms hypervisor steal; \
                 the whole tree's sys ≈ +17 ms: tick-sampled, 4 ms tick), uninterruptible"
            ),
            "{text}"
        );
        // As much steal as R's difference or more (tasks that ran at once), and without sys.
        p.sys_us = None;
        p.tree.steal_ns = Some(95_000_000);
        let text = plain(split_sentence(&p));
        assert!(
            text.contains("on a CPU +80 ms (all of it hypervisor steal, ~95 ms), uninter"),
            "{text}"
        );
        // Below a millisecond, or unknown: nothing said.
        for steal in [Some(900_000), None] {
            p.tree.steal_ns = steal;
            let text = plain(split_sentence(&p));
            assert!(text.contains("on a CPU +80 ms, uninterruptible"), "{text}");
        }
    }

    #[test]
    fn without_tree_states_the_main_threads_split_is_labelled_and_the_rest_given() {
        let mut p = penalty(Basis::MainThread);
        p.sys_us = None;
        p.evidence.voluntary_switches = None;
        p.evidence.psi_io_some_us = None;
        p.tree = TreePenalty {
            source: crate::record::verdict::tree_penalty::BY_MAIN_THREAD,
            unavailable: Some(
                "cannot read /sys/kernel/tracing/events/sched (permission denied): the tree's \
                 states need root, or CAP_PERFMON and read access to tracefs"
                    .into(),
            ),
            cpu_elsewhere_ns: Some(45_000_000),
            other_threads_cpu_ns: Some(12_000_000),
            children_cpu_ns: Some(33_000_000),
            ..TreePenalty::default()
        };
        let text = plain(split_sentence(&p));
        assert_eq!(
            text,
            "first run +153 ms over the warm median (run #3); main thread only (the tree's \
             states need root or CAP_PERFMON): +111 ms off CPU (76.69 MiB read from storage, \
             87 major faults), +40 ms on a CPU, +2 ms waiting for a CPU; the rest of the tree \
             used +45 ms more CPU (+12 ms in other threads, +33 ms in child processes)"
        );
        // The tasks counted without the tracepoints (perf's task records) are said first.
        p.tree.tasks = Some(7);
        let counted = plain(split_sentence(&p));
        assert_eq!(
            counted,
            text.replace(
                "(the tree's states need",
                "(the tree ran 7 tasks; its states need"
            )
        );
        p.tree.unavailable = Some("COLDTRACE_TREE=off".into());
        let off = plain(split_sentence(&p));
        assert!(
            off.contains("; main thread only (the tree ran 7 tasks; COLDTRACE_TREE=off): +111"),
            "{off}"
        );
        p.tree.tasks = None;
        p.tree.cpu_elsewhere_ns = Some(-12_000_000);
        p.tree.other_threads_cpu_ns = Some(-11_000_000);
        p.tree.children_cpu_ns = Some(-1_000_000);
        let text = plain(split_sentence(&p));
        assert!(
            text.ends_with(
                "; the rest of the tree used 12 ms less CPU (-11 ms in other threads, -1 ms in \
                 child processes)"
            ),
            "{text}"
        );
    }
}
