//! The sentences on coldness: what made the first run cold (`first_cold_cause`) with what it
//! read from storage, how much of what it read was cached before the later runs, and which
//! runs made cold were not. They word what record found; they compute nothing.
#![forbid(unsafe_code)]

use crate::record::anomaly::RunAnomaly;
use crate::record::cause::ColdCause;
use crate::record::stats::Summary;
use crate::record::working_set::WorkingSetSummary;
use crate::view::explain::human_bytes;

/// `the first run was made cold by coldtrace's --evict (verified: 0.0 % of the evicted files
/// stayed cached); it read 12.31 MiB from storage (12 major faults)`; `None` when there is
/// nothing to name (no cold action, no hook, nothing read from storage).
pub fn cause_sentence(c: &ColdCause) -> Option<String> {
    let checked = |what: &str| match (c.verified, &c.verification) {
        (Some(true), Some(how)) => format!("coldtrace's {what} (verified: {how})"),
        (Some(false), Some(how)) => format!("coldtrace's {what} (not verified: {how})"),
        (None, Some(how)) => format!("coldtrace's {what} (cannot be verified: {how})"),
        _ => format!("coldtrace's {what}"),
    };
    let head = match c.cause {
        "evict" => format!("the first run was made cold by {}", checked("--evict")),
        "drop_caches" => format!(
            "the first run was made cold by {}",
            checked("--drop-caches")
        ),
        "setup" | "prepare" => format!(
            "the first run followed a --{} command (what it did to the caches is not \
             recorded)",
            c.cause
        ),
        "reclaim" => format!(
            "the machine had reclaimed the first run's pages: {} file pages refaulted \
             system-wide during it (workingset_refault_file)",
            c.workingset_refault_file.unwrap_or(0)
        ),
        "first_batch_since_boot" => format!(
            "the first run is the first coldtrace batch's since boot, and what it read had not \
             been reclaimed ({})",
            refault_words(c)
        ),
        "unknown" => format!(
            "what made the first run cold is unknown: no cold action, hook, reclaim ({}) or \
             new boot was seen (its pages were not cached this boot, or were dropped by \
             something that leaves no trace, such as drop_caches)",
            refault_words(c)
        ),
        _ => return None,
    };
    Some(format!("{head}{}{}", read_words(c), split_words(c)))
}

/// `; of what it brought into the page cache, 4 KiB came from the evicted files, and 200 MiB
/// from files coldtrace did not evict: something else had made those cold too (…)`: what
/// `--evict` is credited with, from the page-in ledger; nothing without it.
fn split_words(c: &ColdCause) -> String {
    let (Some(evicted), Some(elsewhere)) = (c.from_evicted_bytes, c.from_elsewhere_bytes) else {
        return String::new();
    };
    let evicted = human_bytes(evicted as f64);
    match (c.second, elsewhere) {
        (Some(_), _) => format!(
            "; of what it brought into the page cache, {evicted} came from the evicted files \
             and {} from files coldtrace did not evict: something else had made those cold \
             too (a drop_caches, reclaim, another process)",
            human_bytes(elsewhere as f64)
        ),
        (None, 0) => {
            format!("; all it brought into the page cache, {evicted}, came from the evicted files")
        }
        (None, _) => format!(
            "; of what it brought into the page cache, {evicted} came from the evicted files \
             and {} from elsewhere",
            human_bytes(elsewhere as f64)
        ),
    }
}

/// Why the refaults during the first run name no reclaim: `no refault`, or `12 file pages
/// refaulted system-wide, fewer than half of the pages it read`.
fn refault_words(c: &ColdCause) -> String {
    match c.workingset_refault_file {
        Some(0) => "no refault".into(),
        Some(n) => format!(
            "{n} file page{} refaulted system-wide, fewer than half of the pages it read",
            if n == 1 { "" } else { "s" }
        ),
        None => "refaults not read".into(),
    }
}

/// `; it read 12.31 MiB from storage (12 major faults)`, or `; it read nothing from storage`.
fn read_words(c: &ColdCause) -> String {
    let faults = c
        .major_faults
        .filter(|&n| n > 0.0)
        .map_or(String::new(), |n| {
            format!(" ({n:.0} major fault{})", if n == 1.0 { "" } else { "s" })
        });
    match c.read_bytes {
        Some(b) if b > 0.0 => format!("; it read {} from storage{faults}", human_bytes(b)),
        Some(_) if !faults.is_empty() => format!("; it read from storage{faults}"),
        Some(_) => "; it read nothing from storage".into(),
        None => String::new(),
    }
}

/// `cached before: 0 % of the 12.31 MiB the first run brought into the page cache (70 files)
/// before the 4 cold runs (at most 0.3 %); 100 % before the 15 warm runs`; `None` when no run
/// after the first was measured.
pub fn working_set_sentence(ws: &WorkingSetSummary, rest: &str) -> Option<String> {
    let part = |s: Option<Summary>, what: &str| {
        s.map(|s| {
            let spread = if s.min < s.max {
                let low = percent(s.min);
                format!(" ({}–{})", low.trim_end_matches("\u{a0}%"), percent(s.max))
            } else {
                String::new()
            };
            format!(
                "{} before the {} {what} run{}{spread}",
                percent(s.median),
                s.n,
                if s.n == 1 { "" } else { "s" }
            )
        })
    };
    let parts: Vec<String> = [part(ws.cold, "cold"), part(ws.warm, rest)]
        .into_iter()
        .flatten()
        .collect();
    (!parts.is_empty()).then(|| {
        format!(
            "of the {} the first run brought into the page cache ({} file{}), cached: {}",
            human_bytes(ws.paged_bytes as f64),
            ws.files,
            if ws.files == 1 { "" } else { "s" },
            parts.join("; ")
        )
    })
}

/// `45 %`, `0.3 %`, never broken across lines; `0 %` and `100 %` only when exactly so (99.96 %
/// is `99.9 %`, not a "100 %" beside a range that says otherwise).
fn percent(ratio: f64) -> String {
    let p = ratio * 100.0;
    let text = match p {
        _ if p == 0.0 || p == 100.0 => format!("{p:.0} %"),
        _ if p > 99.0 && p < 100.0 => format!("{:.1} %", (p * 10.0).floor() / 10.0),
        _ if p > 0.0 && p < 0.1 => "<0.1 %".into(),
        _ if p >= 10.0 => format!("{p:.0} %"),
        _ => format!("{p:.1} %"),
    };
    crate::text::unbreakable(&text)
}

/// `run #2 was made cold but was not: 100 % of what the first run brought into the page cache
/// was cached before it (mapped by pid 812 (python3))`, or `…: it read nothing from storage
/// while the first run read 12.31 MiB`.
pub fn not_cold_sentence(a: &RunAnomaly) -> String {
    let x = &a.anomaly;
    let mapped = x
        .mapped_by
        .as_ref()
        .map_or(String::new(), |m| format!("; mapped by {m}"));
    match x.metric {
        "working_set_ratio_before" => format!(
            "run #{} was made cold but was not: {} of what the first run brought into the page \
             cache was cached before it{mapped}",
            a.index,
            percent(x.value)
        ),
        _ => format!(
            "run #{} was made cold but was not: it read nothing from storage while the first \
             run read {}{mapped}",
            a.index,
            human_bytes(x.reference)
        ),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_percentage_is_one_unbroken_figure_and_never_rounds_to_all_or_nothing() {
        let shown = |r: f64| percent(r).replace('\u{a0}', " ");
        assert_eq!(shown(0.0), "0 %");
        assert_eq!(shown(1.0), "100 %");
        assert_eq!(shown(0.9996), "99.9 %");
        assert_eq!(shown(0.0004), "<0.1 %");
        assert_eq!(shown(0.45), "45 %");
        assert_eq!(shown(0.034), "3.4 %");
        assert!(
            !percent(0.0).contains(' '),
            "a line may not break inside 0 %"
        );
    }

    use super::*;

    fn cause(name: &'static str) -> ColdCause {
        ColdCause {
            cause: name,
            verified: None,
            verification: None,
            read_bytes: Some(75_182_080.0),
            major_faults: Some(85.0),
            workingset_refault_file: Some(19_683),
            first_batch_since_boot: Some(false),
            from_evicted_bytes: None,
            from_elsewhere_bytes: None,
            second: None,
        }
    }

    fn plain(text: Option<String>) -> String {
        text.unwrap().replace('\u{a0}', " ")
    }

    #[test]
    fn each_cause_is_named_with_what_the_run_read() {
        assert_eq!(
            plain(cause_sentence(&cause("reclaim"))),
            "the machine had reclaimed the first run's pages: 19683 file pages refaulted \
             system-wide during it (workingset_refault_file); it read 71.70 MiB from storage \
             (85 major faults)"
        );
        let mut evict = cause("evict");
        (evict.verified, evict.verification) = (
            Some(true),
            Some("0.0 % of the evicted files stayed cached".into()),
        );
        evict.read_bytes = Some(0.0);
        evict.major_faults = Some(0.0);
        assert_eq!(
            plain(cause_sentence(&evict)),
            "the first run was made cold by coldtrace's --evict (verified: 0.0 % of the \
             evicted files stayed cached); it read nothing from storage"
        );
        for hook in ["setup", "prepare"] {
            assert_eq!(
                plain(cause_sentence(&cause(hook))),
                format!(
                    "the first run followed a --{hook} command (what it did to the caches is \
                     not recorded); it read 71.70 MiB from storage (85 major faults)"
                )
            );
        }
        let mut boot = cause("first_batch_since_boot");
        boot.workingset_refault_file = Some(0);
        assert_eq!(
            plain(cause_sentence(&boot)),
            "the first run is the first coldtrace batch's since boot, and what it read had not \
             been reclaimed (no refault); it read 71.70 MiB from storage (85 major faults)"
        );
        let mut unknown = cause("unknown");
        unknown.workingset_refault_file = Some(12);
        let unknown = plain(cause_sentence(&unknown));
        assert!(
            unknown.starts_with(
                "what made the first run cold is unknown: no cold action, hook, reclaim (12 \
                 file pages refaulted system-wide, fewer than half of the pages it read) or new \
                 boot was seen"
            ) && unknown.ends_with("; it read 71.70 MiB from storage (85 major faults)"),
            "{unknown}"
        );
        assert!(cause_sentence(&cause("none")).is_none());
    }

    #[test]
    fn evict_is_credited_only_with_what_came_from_the_evicted_files() {
        let facts = |evicted: u64, elsewhere: u64| crate::record::cause::ColdFacts {
            evicted: true,
            stayed_ratio: Some(0.0),
            read_bytes: Some(200e6),
            page_bytes: 4096,
            page_ins_evicted_bytes: Some(evicted),
            page_ins_elsewhere_bytes: Some(elsewhere),
            ..Default::default()
        };
        // A hand drop_caches, then --evict of one 4 KiB file: the rest came from elsewhere.
        let c = crate::record::cause::cold_cause(&facts(4096, 200 << 20));
        assert_eq!((c.cause, c.second), ("evict", Some("elsewhere")));
        let said = plain(cause_sentence(&c));
        assert!(
            said.ends_with(
                "; of what it brought into the page cache, 4 KiB came from the evicted files \
                 and 200 MiB from files coldtrace did not evict: something else had made \
                 those cold too (a drop_caches, reclaim, another process)"
            ),
            "{said}"
        );
        // All of it from the evicted roots: --evict alone.
        let c = crate::record::cause::cold_cause(&facts(12 << 20, 0));
        assert_eq!(c.second, None);
        assert!(plain(cause_sentence(&c)).ends_with(
            "; all it brought into the page cache, 12 MiB, came from the evicted files"
        ));
        // A little from elsewhere beside much from the evicted roots: said, not a cause.
        let c = crate::record::cause::cold_cause(&facts(36 << 20, 2 << 20));
        assert_eq!(c.second, None);
        // Without the ledger, no split is claimed.
        let mut f = facts(0, 0);
        (f.page_ins_evicted_bytes, f.page_ins_elsewhere_bytes) = (None, None);
        let c = crate::record::cause::cold_cause(&f);
        assert_eq!((c.from_evicted_bytes, c.second), (None, None));
        assert!(!plain(cause_sentence(&c)).contains("evicted files came"));
    }

    #[test]
    fn the_working_set_and_the_runs_that_were_not_cold_are_said() {
        let summary = |values: &[f64]| Summary::of(values);
        let ws = WorkingSetSummary {
            files: 70,
            paged_bytes: 12 << 20,
            cold: summary(&[0.0, 0.003, 0.0, 1.0]),
            warm: summary(&[1.0; 15]),
        };
        assert_eq!(
            working_set_sentence(&ws, "warm")
                .unwrap()
                .replace('\u{a0}', " "),
            "of the 12 MiB the first run brought into the page cache (70 files), cached: \
             0.1 % before the 4 cold runs (0–100 %); 100 % before the 15 warm runs"
        );
        let not_cold = RunAnomaly {
            index: 2,
            anomaly: crate::record::run::Anomaly {
                kind: "not_cold",
                metric: "working_set_ratio_before",
                value: 1.0,
                reference: 0.5,
                rule: crate::record::anomaly::RULE_NOT_COLD_CACHED,
                mapped_by: Some("pid 812 (python3)".into()),
            },
        };
        assert_eq!(
            not_cold_sentence(&not_cold).replace('\u{a0}', " "),
            "run #2 was made cold but was not: 100 % of what the first run brought into the \
             page cache was cached before it; mapped by pid 812 (python3)"
        );
    }
}
