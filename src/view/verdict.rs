//! The verdict in words: a one-line form ([`one_line`], for a default view and a report's row)
//! and a full form ([`full`], the sentences under a batch's table, in `report`, the picture and
//! the Markdown export). Every view says the verdict with these; what it says was decided in
//! [`crate::record::verdict`].
#![forbid(unsafe_code)]

use crate::record::cause::ColdCause;
use crate::record::verdict::penalty::FirstPenalty;
use crate::record::verdict::{Kind, StateTest, Verdict};
use crate::text::unbreakable;
use crate::view::explain::{human_bytes, human_ns, signed_ns};
use crate::view::lines::Note;

/// The verdict in one line: `first-run penalty +31 ms: storage (86 MiB read from storage)`,
/// `first run not distinguishable from the warm runs at n = 5`, `every counted run started
/// cold: no warm series`, … `None` for a `--cold-cycles` batch (its cycles' lines say it).
pub fn one_line(v: &Verdict) -> Option<String> {
    let line = match v.kind {
        Kind::Penalty => {
            let total = v
                .penalty_ns
                .map_or(String::new(), |p| format!(" {}", signed_ns(p as i64)));
            format!("first-run penalty{total}: {}", states_words(v))
        }
        Kind::NotDistinguishable => format!(
            "first run not distinguishable from the warm runs at n = {}",
            v.counted
        ),
        Kind::EveryRunCold => "every counted run started cold: no warm series".into(),
        Kind::NoFirstRun => "no first run: warm-ups ran before the counted runs".into(),
        Kind::FirstRejected => "no first-run verdict: the first run was rejected".into(),
        Kind::TooFewWarmRuns => format!(
            "first run not distinguishable from the warm runs at n = {}: too few warm runs",
            v.counted
        ),
        Kind::Cycles => return None,
    };
    // Said beside a first run compared with warm runs: what else made it differ.
    let compared = matches!(
        v.kind,
        Kind::Penalty | Kind::NotDistinguishable | Kind::TooFewWarmRuns
    );
    Some(match v.first_wrote_caches.filter(|&n| n > 0 && compared) {
        Some(n) => format!(
            "{line}; it wrote caches the later runs found ({n} new file{})",
            if n == 1 { "" } else { "s" }
        ),
        None => line,
    })
}

/// `storage (86 MiB read from storage), kernel CPU`: the states that stand out.
fn states_words(v: &Verdict) -> String {
    let words: Vec<String> = v
        .states
        .iter()
        .map(|s| match *s {
            "storage" => match v.first_read_bytes {
                Some(b) => format!("storage ({} read)", human_bytes(b)),
                None => "storage".into(),
            },
            "kernel_cpu" => "kernel CPU".into(),
            _ => "time".into(),
        })
        .collect();
    words.join(", ")
}

/// The verdict in full, as notes under a table: the decision with the figures that made it,
/// the split of the first run's time over the reference warm run (`split`, when it has one),
/// the runs left out of the reference and the runs that started cold, and the contention.
pub fn full(v: &Verdict, split: Option<&FirstPenalty>) -> Vec<Note> {
    let mut notes = Vec::new();
    match v.kind {
        Kind::Penalty => {
            notes.push(Note::plain(penalty_words(v)));
            if let Some(p) = split {
                notes.push(Note::plain(crate::view::explain::split_sentence(p)));
            }
        }
        // A single run has nothing to be compared with, and says nothing of it.
        Kind::TooFewWarmRuns if v.reference_runs == 0 => {}
        Kind::NotDistinguishable | Kind::TooFewWarmRuns => {
            notes.push(Note::plain(not_distinguishable_words(v)));
        }
        Kind::EveryRunCold => notes.push(Note::warning(
            "no first-run penalty",
            every_run_cold_words(v),
        )),
        Kind::NoFirstRun if v.counted == 0 => {}
        Kind::NoFirstRun => notes.push(Note::plain(format!(
            "no first run: {}, so every counted run is compared as a warm run",
            v.why
                .as_deref()
                .unwrap_or("warm-ups ran before the counted runs")
        ))),
        Kind::FirstRejected | Kind::Cycles => {}
    }
    if let Some(note) = left_out_note(v) {
        notes.push(note);
    }
    if v.kind != Kind::EveryRunCold {
        notes.extend(cold_runs_notes(v));
    }
    if let Some(ns) = v.contention_to_say() {
        notes.push(Note::plain(format!(
            "the first run waited {} more for a CPU than the reference warm run: the \
             machine's contention, not a cold penalty",
            human_ns(ns)
        )));
    }
    notes
}

/// What made the first run cold (`first_cold_cause`), the note under the verdict's
/// sentences: worded by [`crate::view::cause`]; nothing when there is nothing to name.
pub fn cause(c: &ColdCause) -> Option<Note> {
    crate::view::cause::cause_sentence(c).map(Note::plain)
}

/// `first-run penalty: storage stands out — uninterruptible 71.2 ms, the warm runs at most
/// 0.4 ms (spread 0.3 ms); it read 86 MiB from storage, they at most 0 B`.
fn penalty_words(v: &Verdict) -> String {
    let parts: Vec<String> = v
        .tests
        .iter()
        .filter(|t| t.stands_out)
        .map(|t| test_words(v, t))
        .collect();
    let mut text = format!("first-run penalty: {}", parts.join("; "));
    let time_hides = v
        .tests
        .iter()
        .any(|t| t.state == "time" && t.evidence && !t.stands_out);
    if time_hides {
        text.push_str(
            "; the wall time alone does not stand out of the warm runs' spread: their noise \
             hides it in the total",
        );
    }
    text
}

/// One standing-out state, with its figures: `storage: 70 ms uninterruptible with 86 MiB read
/// from storage, where the warm runs waited at most 400 µs and read at most 0 B`.
fn test_words(v: &Verdict, t: &StateTest) -> String {
    match t.state {
        "storage" => format!(
            "storage: {} uninterruptible with {} read from storage, where the warm runs \
             waited at most {} and read at most {}",
            human_ns(t.first_ns),
            human_bytes(v.first_read_bytes.unwrap_or(0.0)),
            human_ns(t.warm_max_ns),
            human_bytes(v.reference_read_bytes.unwrap_or(0.0))
        ),
        "kernel_cpu" => format!(
            "kernel CPU: {} of system time, the warm runs at most {} (a penalty needs more \
             than {})",
            human_ns(t.first_ns),
            human_ns(t.warm_max_ns),
            human_ns(t.threshold_ns)
        ),
        _ => format!(
            "time: {} less its wait for a CPU, the warm runs' median {} (a penalty needs \
             more than {})",
            human_ns(t.first_ns),
            human_ns(t.warm_median_ns),
            human_ns(t.threshold_ns)
        ),
    }
}

/// `first run 365.6 ms, not distinguishable from the warm runs at n = 5 (278.5–393.4 ms; it
/// read 86 MiB from storage, but its uninterruptible time 1.2 ms is within …): -n 10, or
/// --cold-cycles 5 would decide`.
fn not_distinguishable_words(v: &Verdict) -> String {
    let first = v
        .first_wall_ns
        .map_or("first run".into(), |w| format!("first run {}", human_ns(w)));
    let mut inside = Vec::new();
    if let Some([lo, _, hi]) = v.reference_wall_ns {
        inside.push(format!(
            "{} warm run{} {}",
            v.reference_runs,
            if v.reference_runs == 1 { "" } else { "s" },
            range_text(lo, hi)
        ));
    }
    let storage = v.tests.iter().find(|t| t.state == "storage");
    if let (Some(t), Some(read)) = (storage, v.first_read_bytes.filter(|&b| b > 0.0)) {
        let why = if t.evidence {
            format!(
                "but its uninterruptible time {} is not above the warm runs' {} by more than \
                 their spread",
                human_ns(t.first_ns),
                human_ns(t.warm_max_ns)
            )
        } else {
            format!(
                "less than {} more than the warm runs (at most {}): too little to call storage",
                human_bytes(crate::record::verdict::STORAGE_BYTES),
                human_bytes(v.reference_read_bytes.unwrap_or(0.0))
            )
        };
        inside.push(format!("it read {} from storage, {why}", human_bytes(read)));
    }
    let inside = if inside.is_empty() {
        String::new()
    } else {
        format!(" ({})", inside.join("; "))
    };
    let decide = v
        .decide
        .as_deref()
        .map_or(String::new(), |d| format!(": {d} would decide"));
    let few = if v.kind == Kind::TooFewWarmRuns {
        ", too few warm runs to tell"
    } else {
        ""
    };
    format!(
        "{first}, not distinguishable from the warm runs at n = {}{few}{inside}{decide}",
        v.counted
    )
}

/// `every counted run started cold (after --prepare): there is no warm series to compare the
/// first run with; the first run 177.5 ms, the 4 cold runs after it 156.5–183.6 ms` (without a
/// first run, after warm-ups: `…: there is no warm series; the 4 cold runs 156.5–183.6 ms`).
fn every_run_cold_words(v: &Verdict) -> String {
    let runs = |n: u64| format!("{n} cold run{}", if n == 1 { "" } else { "s" });
    let range = v.reference_wall_ns.map(|[lo, _, hi]| range_text(lo, hi));
    let after = match (v.first_wall_ns, range) {
        (Some(w), Some(range)) => format!(
            " to compare the first run with; the first run {}, the {} after it {range}",
            human_ns(w),
            runs(v.reference_runs)
        ),
        (Some(w), None) => format!(
            " to compare the first run with; the first run {}",
            human_ns(w)
        ),
        (None, Some(range)) => format!("; the {} {range}", runs(v.reference_runs)),
        (None, None) => String::new(),
    };
    let why = v
        .one_cold_cause()
        .map_or(String::new(), |w| format!(" ({w})"));
    format!("every counted run started cold{why}: there is no warm series{after}")
}

/// `left out of the warm reference: run #7 (its cached files were evicted between runs)`.
fn left_out_note(v: &Verdict) -> Option<Note> {
    if v.left_out.is_empty() {
        return None;
    }
    let runs: Vec<String> = v
        .left_out
        .iter()
        .take(4)
        .map(|n| format!("run #{} ({})", n.index, n.why))
        .collect();
    let more = match v.left_out.len().saturating_sub(4) {
        0 => String::new(),
        n => format!(" and {n} more"),
    };
    Some(Note::warning(
        "left out of the warm reference",
        format!("{}{more}", runs.join(", ")),
    ))
}

/// `run #3 started cold: read 3.1 MiB from storage; …`, for runs that started cold without a
/// cold action of coldtrace's before them (at most four, then a count).
fn cold_runs_notes(v: &Verdict) -> Vec<Note> {
    let by_evidence: Vec<_> = v.cold_by_evidence().collect();
    let mut notes: Vec<Note> = by_evidence
        .iter()
        .take(4)
        .map(|c| Note::warning("started cold", format!("run #{}: {}", c.index, c.why)))
        .collect();
    if by_evidence.len() > 4 {
        notes.push(Note::plain(format!(
            "… and {} more runs started cold (verdict.cold_runs in batch.json)",
            by_evidence.len() - 4
        )));
    }
    notes
}

/// `278.5–393.4 ms`: two wall times in one unit, never broken.
pub fn range_text(lo: f64, hi: f64) -> String {
    use crate::record::metrics::Unit;
    let scale = crate::view::units::Scale::for_values(Unit::Ns, [lo, hi]);
    unbreakable(&format!(
        "{}–{} {}",
        scale.cell(lo),
        scale.cell(hi),
        scale.unit
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::verdict::{decide, Figures, First, Setting};

    fn run(index: u64, wall_ms: f64, d_ms: f64, read: f64) -> Figures {
        Figures {
            index,
            wall_ns: Some(wall_ms * 1e6),
            queued_ns: Some(0.0),
            blocked_ns: Some(d_ms * 1e6),
            sys_ns: Some(4e6),
            read_bytes: Some(read),
            steal_ns: None,
            cold_action: false,
        }
    }

    fn verdict(first: Figures) -> Verdict {
        let warm: Vec<Figures> = [100.0, 140.0, 110.0, 125.0]
            .iter()
            .enumerate()
            .map(|(i, &w)| run(i as u64 + 1, w, 0.4, 0.0))
            .collect();
        let setting = Setting {
            tick_ns: 4_000_000,
            ..Setting::default()
        };
        let first = Some(First {
            figures: first,
            counted: true,
        });
        decide(first, &warm, &[], setting)
    }

    fn said(v: &Verdict) -> Vec<String> {
        full(v, None)
            .iter()
            .map(|n| n.plain_text().replace('\u{a0}', " "))
            .collect()
    }

    #[test]
    fn a_penalty_is_said_with_the_evidence_that_made_it_stand_out() {
        let v = verdict(run(0, 148.0, 70.0, 86.0 * 1048576.0));
        assert_eq!(
            one_line(&v).unwrap().replace('\u{a0}', " "),
            "first-run penalty +30.5 ms: storage (86 MiB read)"
        );
        assert_eq!(
            said(&v),
            [
                "first-run penalty: storage: 70 ms uninterruptible with 86 MiB read from \
                 storage, where the warm runs waited at most 400 µs and read at most 0 B"
            ]
        );
    }

    #[test]
    fn nothing_standing_out_is_never_called_no_penalty_beside_a_read() {
        let v = verdict(run(0, 148.0, 0.5, 86.0 * 1048576.0));
        let text = said(&v).join("\n");
        assert_eq!(
            text,
            "first run 148 ms, not distinguishable from the warm runs at n = 5 (4 warm runs \
             100–140 ms; it read 86 MiB from storage, but its uninterruptible time 500 µs is \
             not above the warm runs' 400 µs by more than their spread): -n 10, or \
             --cold-cycles 5 would decide"
        );
        assert!(!text.contains("no penalty") && !text.contains("no first-run penalty"));
        assert_eq!(
            one_line(&v).unwrap(),
            "first run not distinguishable from the warm runs at n = 5"
        );
    }

    #[test]
    fn caches_the_first_run_wrote_are_said_in_the_one_line_beside_any_verdict() {
        let mut v = verdict(run(0, 148.0, 0.5, 0.0));
        v.first_wrote_caches = Some(1);
        assert_eq!(
            one_line(&v).unwrap(),
            "first run not distinguishable from the warm runs at n = 5; it wrote caches the \
             later runs found (1 new file)"
        );
        let mut v = verdict(run(0, 148.0, 70.0, 86.0 * 1048576.0));
        v.first_wrote_caches = Some(3);
        assert!(one_line(&v).unwrap().ends_with(
            ": storage (86\u{a0}MiB read); it wrote caches the later runs found (3 new files)"
        ));
        // None written, or not looked for: nothing said.
        v.first_wrote_caches = Some(0);
        assert!(!one_line(&v).unwrap().contains("caches"));
    }
}
