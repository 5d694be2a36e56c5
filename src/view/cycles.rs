//! The sentences under a `--cold-cycles` batch's table: a line per position after the cold
//! action, then the measured cold penalty — each cycle's cold run against its own warm runs,
//! averaged, with its interval — and its parts only when that interval lies above 0. It words
//! what record computed; it computes nothing.
#![forbid(unsafe_code)]

use crate::record::compare::interval_text;
use crate::record::cycles::{CyclePenalty, CyclesSummary, PerCycle, MIN_CYCLES_FOR_INTERVAL};
use crate::record::stats::Summary;
use crate::record::verdict::penalty::Basis;
use crate::text::unbreakable;
use crate::view::explain::{human_bytes, human_ns, signed_ns};
use crate::view::lines::Note;

/// Every line of the cycles: the positions, then the penalty.
pub fn notes(notes: &mut Vec<Note>, c: &CyclesSummary) {
    notes.push(Note::plain(format!(
        "{} cycles of {{ cold action; {} run{} }}, by position after the cold action:",
        c.cycles,
        c.runs_per_cycle,
        if c.runs_per_cycle == 1 { "" } else { "s" }
    )));
    for p in &c.positions {
        let median = |s: Option<Summary>| s.map(|s| s.median);
        // One unbroken line, aligned: no-break spaces throughout.
        notes.push(Note::plain(unbreakable(&format!(
            "  #{} {:<14} {:>2} runs, wall median {}, read {} from storage",
            p.position,
            p.label,
            p.n,
            median(p.wall_ns).map_or("—".into(), human_ns),
            median(p.read_bytes)
                .or(median(p.block_in).map(|b| b * 512.0))
                .map_or("—".into(), human_bytes),
        ))));
    }
    match (&c.penalty, c.penalty_unavailable) {
        (Some(p), _) => notes.push(penalty_note(p)),
        (None, Some(why)) => notes.push(Note::warning("no cold penalty", why)),
        (None, None) => {}
    }
}

/// `1.40× the warm positions' median (#2, #3) [95% CI 1.21–1.63]`.
fn ratio_words(p: &CyclePenalty) -> String {
    let ratio = p.ratio.map_or("—".into(), crate::view::units::ratio);
    let warm: Vec<String> = p.warm_positions.iter().map(|w| format!("#{w}")).collect();
    let interval = match (p.ci_low, p.ci_high, &p.no_interval) {
        (Some(lo), Some(hi), _) => format!(" [95% CI {}]", interval_text(lo, hi)),
        _ => String::new(),
    };
    format!(
        "{ratio} the warm positions' ({}) median wall time{interval}",
        warm.join(", ")
    )
}

/// The measured penalty: the per-cycle mean with its interval and, when it lies above 0, its
/// parts; else what was found and why it is not a penalty.
fn penalty_note(p: &CyclePenalty) -> Note {
    let Some(d) = &p.per_cycle else {
        return Note::plain(format!(
            "cold penalty: position #0's median wall time is {}, {} per run (no cycle had \
             both a counted cold and a counted warm run to pair)",
            ratio_words(p),
            signed_ns(p.difference_ns as i64)
        ));
    };
    let n = d.cycles;
    let what = "each cycle's cold run minus its own median warm run, averaged";
    let (Some(lo), Some(hi)) = (d.ci_low_ns, d.ci_high_ns) else {
        return Note::warning(
            "cold penalty not measured",
            format!(
                "over {n} cycle{} a cold run took {} more on average ({what}), but an \
                 interval needs at least {MIN_CYCLES_FOR_INTERVAL} cycles: use \
                 --cold-cycles {MIN_CYCLES_FOR_INTERVAL} or more",
                if n == 1 { "" } else { "s" },
                signed_ns(d.mean_wall_ns as i64)
            ),
        );
    };
    let interval = format!("95% CI {} to {}", signed(lo), signed(hi));
    if !d.significant {
        return Note::plain(format!(
            "no cold penalty measured over {n} cycles: {} per cold run on average ({what}; \
             {interval} includes 0)",
            signed_ns(d.mean_wall_ns as i64)
        ));
    }
    Note::plain(format!(
        "cold penalty, measured over {n} cycles: {} per cold run ({interval}; {what}), {}{}",
        signed_ns(d.mean_wall_ns as i64),
        ratio_words(p),
        parts(d)
    ))
}

fn signed(ns: f64) -> String {
    signed_ns(ns as i64)
}

/// `: +20 ms blocked (12 MiB read from storage, …), +10 ms CPU, +4 ms waiting for a CPU`, the
/// means of the cycles' parts; or why there are none.
fn parts(d: &PerCycle) -> String {
    let mut evidence = Vec::new();
    if let Some(bytes) = d.read_bytes.filter(|&b| b >= 512.0) {
        evidence.push(format!("{} read from storage", human_bytes(bytes)));
    }
    for (mean, one, many) in [
        (d.major_faults, "major fault", "major faults"),
        (
            d.voluntary_switches,
            "voluntary context switch",
            "voluntary context switches",
        ),
    ] {
        if let Some(n) = mean.map(f64::round).filter(|&n| n >= 1.0) {
            evidence.push(format!("{n:.0} {}", if n == 1.0 { one } else { many }));
        }
    }
    let evidence = if evidence.is_empty() {
        String::new()
    } else {
        format!(" ({})", evidence.join(", "))
    };
    match (d.basis, d.cpu_ns, d.runqueue_ns, d.blocked_ns, d.tree) {
        (Basis::Tree, .., Some(t)) if t.all().is_some() => {
            let [r, q, dd, s] = t.all().unwrap_or_default();
            let mut parts = [
                (r, "on a CPU", String::new()),
                (
                    dd,
                    "uninterruptible (storage, faults, kernel locks)",
                    evidence,
                ),
                (q, "waiting for a CPU", String::new()),
                (s, "asleep", String::new()),
            ];
            parts.sort_by(|a, b| b.0.abs().total_cmp(&a.0.abs()));
            let words: Vec<String> = parts
                .iter()
                .map(|(ns, name, after)| format!("{name} {}{after}", signed(*ns)))
                .collect();
            format!(
                ": the tree was {} (means over the cycles)",
                words.join(", ")
            )
        }
        (Basis::Schedstat, Some(cpu), Some(rq), Some(blocked), _) => format!(
            ": {} blocked{evidence}, {} CPU, {} waiting for a CPU (means over the cycles)",
            signed(blocked),
            signed(cpu),
            signed(rq)
        ),
        (Basis::MainThread, Some(cpu), Some(rq), Some(blocked), _) => format!(
            "; main thread only (the tree did more, and its states are unknown): {} off \
             CPU{evidence}, {} on a CPU, {} waiting for a CPU (means over the cycles; the rest \
             of the tree used {} more CPU)",
            signed(blocked),
            signed(cpu),
            signed(rq),
            d.rusage_cpu_ns
                .zip(Some(cpu))
                .map_or("unknown".into(), |(all, main)| signed(all - main))
        ),
        _ => format!("; not split: no schedstat (--minimal or unreadable){evidence}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn per_cycle(mean_ms: f64, lo_ms: Option<f64>, hi_ms: f64) -> PerCycle {
        PerCycle {
            cycles: 12,
            mean_wall_ns: mean_ms * 1e6,
            ci_low_ns: lo_ms.map(|v| v * 1e6),
            ci_high_ns: lo_ms.map(|_| hi_ms * 1e6),
            no_interval: None,
            significant: lo_ms.is_some_and(|lo| lo > 0.0),
            basis: Basis::Schedstat,
            cpu_ns: Some(10e6),
            runqueue_ns: Some(4e6),
            blocked_ns: Some(mean_ms * 1e6 - 14e6),
            rusage_cpu_ns: Some(10e6),
            read_bytes: Some(12.0 * 1048576.0),
            major_faults: Some(11.6),
            voluntary_switches: Some(80.2),
            tree: None,
        }
    }

    fn penalty(d: PerCycle) -> CyclePenalty {
        CyclePenalty {
            warm_positions: vec![2, 3],
            cold_median_wall_ns: 120e6,
            warm_median_wall_ns: 85e6,
            difference_ns: 35e6,
            ratio: Some(120.0 / 85.0),
            ci_low: Some(1.2),
            ci_high: Some(1.6),
            no_interval: None,
            per_cycle: Some(d),
        }
    }

    fn text(note: Note) -> String {
        let mut out = String::new();
        note.write(&mut out, &crate::view::style::Style { on: false }, 2000);
        out.replace('\u{a0}', " ").trim().to_string()
    }

    #[test]
    fn a_measured_penalty_is_the_headline_with_its_parts() {
        let said = text(penalty_note(&penalty(per_cycle(34.0, Some(18.0), 51.0))));
        assert_eq!(
            said,
            "cold penalty, measured over 12 cycles: +34 ms per cold run (95% CI +18 ms to \
             +51 ms; each cycle's cold run minus its own median warm run, averaged), 1.41× the \
             warm positions' (#2, #3) median wall time [95% CI 1.20–1.60]: +20 ms blocked \
             (12 MiB read from storage, 12 major faults, 80 voluntary context switches), \
             +10 ms CPU, +4 ms waiting for a CPU (means over the cycles)"
        );
    }

    #[test]
    fn a_trees_penalty_over_the_cycles_names_its_four_parts() {
        let mut d = per_cycle(34.0, Some(18.0), 51.0);
        d.basis = Basis::Tree;
        d.tree = Some(crate::record::verdict::tree_penalty::TreeParts {
            on_cpu_ns: Some(10e6),
            queued_ns: Some(4e6),
            uninterruptible_ns: Some(19e6),
            sleeping_ns: Some(1e6),
            tasks: None,
        });
        let said = text(penalty_note(&penalty(d)));
        assert!(
            said.ends_with(
                ": the tree was uninterruptible (storage, faults, kernel locks) +19 ms (12 MiB \
                 read from storage, 12 major faults, 80 voluntary context switches), on a CPU \
                 +10 ms, waiting for a CPU +4 ms, asleep +1 ms (means over the cycles)"
            ),
            "{said}"
        );
        let mut d = per_cycle(34.0, Some(18.0), 51.0);
        d.basis = Basis::MainThread;
        let said = text(penalty_note(&penalty(d)));
        assert!(
            said.contains("; main thread only (the tree did more"),
            "{said}"
        );
        assert!(
            said.contains("(means over the cycles; the rest of the tree used ")
                && said.ends_with(" more CPU)"),
            "{said}"
        );
    }

    #[test]
    fn noise_over_the_cycles_is_no_penalty_and_has_no_parts() {
        let said = text(penalty_note(&penalty(per_cycle(1.1, Some(-3.8), 21.0))));
        assert!(
            said.starts_with("no cold penalty measured over 12 cycles: +1.1 ms per cold run"),
            "{said}"
        );
        assert!(
            said.contains("95% CI -3.8 ms to +21 ms includes 0"),
            "{said}"
        );
        assert!(!said.contains("blocked") && !said.contains("×"), "{said}");
        let mut few = per_cycle(30.0, None, 0.0);
        few.cycles = 3;
        let said = text(penalty_note(&penalty(few)));
        assert!(
            said.contains("an interval needs at least 5 cycles"),
            "{said}"
        );
        assert!(!said.contains("blocked"), "{said}");
    }
}
