//! The sentences under a batch's table that explain its first run: the penalty over the warm
//! median and its parts, with the evidence. It words what record computed; it computes nothing.
#![forbid(unsafe_code)]

use crate::batch::BatchOutcome;
use crate::plan::ColdWhen;
use crate::record::penalty::{Basis, FirstPenalty};
use crate::view::lines;
use crate::view::style::Style;
use crate::view::units::{human_bytes, human_ns, signed_ns};

/// Every explaining sentence of a batch, each wrapped to 80 columns.
pub fn explain(out: &mut String, outcome: &BatchOutcome, style: &Style) {
    match &outcome.first_penalty {
        Ok(p) => lines::sentence(out, &penalty_sentence(p)),
        Err(why) if outcome.cold_when == Some(ColdWhen::EveryRun) => {
            lines::warning(out, "no first-run penalty", why, style);
        }
        Err(_) => {}
    }
}

/// `first run +153.20 ms over the warm median (run #3): +98.10 ms blocked (76.7 MiB read from
/// storage, 87 major faults, 70.00 ms I/O stall system-wide), +40.00 ms CPU (+17.00 ms sys),
/// +2.00 ms waiting for a CPU`.
pub fn penalty_sentence(p: &FirstPenalty) -> String {
    let head = if p.wall_ns >= 0 {
        format!(
            "first run {} over the warm median (run #{})",
            signed_ns(p.wall_ns),
            p.reference_index
        )
    } else {
        format!(
            "first run {} faster than the warm median (run #{})",
            human_ns(p.wall_ns.unsigned_abs() as f64),
            p.reference_index
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
    let sys = p
        .sys_us
        .filter(|&s| s != 0)
        .map_or(String::new(), |s| format!(" ({} sys)", signed_ns(s * 1000)));
    match (p.basis, p.blocked_ns, p.cpu_ns, p.runqueue_ns) {
        (Basis::Schedstat, Some(blocked), Some(cpu), Some(rq)) => format!(
            "{head}: {} blocked{}, {} CPU{sys}, {} waiting for a CPU",
            signed_ns(blocked),
            in_brackets(&evidence),
            signed_ns(cpu),
            signed_ns(rq)
        ),
        (Basis::Parallel, ..) => format!(
            "{head}; not decomposable: parallel work or work spread over processes \
             (rusage CPU {}){}",
            p.rusage_cpu_ns.map_or("unknown".into(), signed_ns),
            beside(&evidence)
        ),
        _ => format!(
            "{head}; not split: no schedstat (--minimal or unreadable){}",
            beside(&evidence)
        ),
    }
}

/// What the first run did more, in words: storage reads, major faults, I/O stall.
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
    if let Some(us) = e.psi_io_some_us.filter(|&us| us > 0) {
        words.push(format!(
            "{} I/O stall system-wide",
            human_ns(us as f64 * 1e3)
        ));
    }
    words
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::penalty::Evidence;

    fn penalty(basis: Basis) -> FirstPenalty {
        FirstPenalty {
            first_index: 0,
            reference_index: 3,
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
            },
        }
    }

    #[test]
    fn the_parts_are_named_with_their_evidence() {
        let text = penalty_sentence(&penalty(Basis::Schedstat));
        assert_eq!(
            text,
            "first run +153.00 ms over the warm median (run #3): +111.00 ms blocked \
             (76.7 MiB read from storage, 87 major faults, 70.00 ms I/O stall system-wide), \
             +40.00 ms CPU (+17.00 ms sys), +2.00 ms waiting for a CPU"
        );
    }

    #[test]
    fn parallel_work_gives_the_cpu_difference_alone() {
        let mut p = penalty(Basis::Parallel);
        (p.cpu_ns, p.runqueue_ns, p.blocked_ns) = (None, None, None);
        let text = penalty_sentence(&p);
        assert!(text.contains("not decomposable: parallel work"), "{text}");
        assert!(text.contains("rusage CPU +40.00 ms"), "{text}");
        assert!(
            text.ends_with(
                "; evidence: 76.7 MiB read from storage, 87 major faults, \
             70.00 ms I/O stall system-wide"
            ),
            "{text}"
        );
        assert!(!text.contains("blocked") && !text.contains(" -"), "{text}");
    }
}
