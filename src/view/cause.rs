//! The sentences on coldness: what made the first run cold (`first_cold_cause`) with what it
//! read from storage, how much of what it read was cached before the later runs, and which
//! runs made cold were not. They word what record found; they compute nothing.
#![forbid(unsafe_code)]

use crate::measure::cache::CacheChange;
use crate::record::anomaly::RunAnomaly;
use crate::record::cause::{ColdCause, WroteCaches};
use crate::record::stats::Summary;
use crate::record::working_set::WorkingSetSummary;
use crate::view::explain::human_bytes;
use crate::view::units::human_uptime;

/// `the first run was made cold by coldtrace's --evict (verified: 0.0 % of the evicted files
/// stayed cached); it read 12.31 MiB from storage (12 major faults)`; `None` when there is
/// nothing to name (no cold action, no drop by a hook, nothing read from storage).
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
        "setup" | "prepare" => hook_words(c),
        "reclaim" => format!(
            "the machine had reclaimed the first run's pages: {} file pages refaulted \
             system-wide during it (workingset_refault_file){}",
            c.workingset_refault_file.unwrap_or(0),
            reclaimed_words(c)
        ),
        "drop_caches_outside" => outside_words(c),
        "boot" => format!(
            "nothing had read what the first run read since the machine booted{}: no \
             drop_caches since boot and {}{}",
            c.since_boot
                .and_then(|b| b.seconds)
                .map_or(String::new(), |s| format!(" {} ago", human_uptime(s))),
            match c.workingset_refault_file {
                Some(0) => "no refault".into(),
                _ => format!("too few refaults for reclaim ({})", refault_words(c)),
            },
            if c.first_batch_since_boot == Some(true) {
                "; it is the first coldtrace batch since boot"
            } else {
                ""
            }
        ),
        "unknown" => format!(
            "what made the first run cold is unknown: no cold action, hook, reclaim ({}) or \
             drop_caches {} was seen{}",
            refault_words(c),
            if c.since_last_batch.is_some() {
                "since the last coldtrace batch"
            } else {
                "since boot"
            },
            unknown_words(c)
        ),
        "wrote_caches" => {
            let w = c.wrote_caches.as_ref()?;
            format!(
                "the first run wrote caches the later runs found: {}",
                wrote_words(w)
            )
        }
        _ => return None,
    };
    let also = match &c.wrote_caches {
        Some(w) if w.files > 0 && c.cause != "wrote_caches" => {
            format!(
                "; it also wrote caches the later runs found: {}",
                wrote_words(w)
            )
        }
        _ => String::new(),
    };
    Some(format!("{head}{}{}{also}", read_words(c), split_words(c)))
}

/// `it created __pycache__/mymod.cpython-311.pyc (1 file, 230 B) under /tmp/p, and no later
/// run wrote it again: work of its own the later runs did not repeat, not a cold page cache`,
/// with the outputs it also created and what is not known of it.
fn wrote_words(w: &WroteCaches) -> String {
    let files = |n: u64| format!("{n} file{}", if n == 1 { "" } else { "s" });
    // A path that is not whole is the working directory's, the first root.
    let relative = w.paths.iter().filter(|p| !p.starts_with('/')).count();
    let under = match (w.roots.first(), relative) {
        (Some(cwd), n) if n > 0 && n == w.paths.len() => format!(" under {cwd}"),
        (Some(cwd), n) if n > 0 => format!(" (relative paths under {cwd})"),
        _ => String::new(),
    };
    let named = match w.files.saturating_sub(w.paths.len() as u64) {
        0 => w.paths.join(", "),
        n => format!("{} and {n} more", w.paths.join(", ")),
    };
    let rewritten = match w.rewritten_files {
        0 => String::new(),
        n => format!(
            "; {} it created were written again by later runs: outputs, not caches",
            files(n)
        ),
    };
    let unknown = w
        .unknown_reason
        .as_ref()
        .map_or(String::new(), |why| format!(" (not wholly known: {why})"));
    format!(
        "it created {named} ({}, {}){under}, and no later run wrote {} again: work of its own \
         the later runs did not repeat, not a cold page cache{rewritten}{unknown}",
        files(w.files),
        human_bytes(w.bytes as f64),
        if w.files == 1 { "it" } else { "them" }
    )
}

/// What a write to `drop_caches` dropped, by the bits the kernel counted: `the page cache`,
/// `dentries and inodes`, or both; with the counters, `(drop_pagecache +1, drop_slab +1)`.
fn dropped_words(d: &CacheChange, sign: &str) -> (String, String) {
    let (page, slab) = (d.drop_pagecache.unwrap_or(0), d.drop_slab.unwrap_or(0));
    let what = match (page > 0, slab > 0) {
        (true, true) => "the page cache, dentries and inodes",
        (true, false) => "the page cache",
        // An inode dropped takes its file's cached pages with it.
        _ => "dentries and inodes, and with each inode its file's cached pages",
    };
    let counts: Vec<String> = [("drop_pagecache", page), ("drop_slab", slab)]
        .iter()
        .filter(|(_, n)| *n > 0)
        .map(|(name, n)| format!("{name} {sign}{n}"))
        .collect();
    (what.into(), counts.join(", "))
}

/// `the first run followed a --prepare command that wrote drop_caches: the page cache,
/// dentries and inodes (drop_pagecache +1, drop_slab +1)`, or one that wrote none.
fn hook_words(c: &ColdCause) -> String {
    let hook = c.cause;
    match (c.verified, c.before_first_run) {
        (Some(true), Some(d)) => {
            let (what, counts) = dropped_words(&d, "+");
            format!(
                "the first run followed a --{hook} command that wrote drop_caches: {what} \
                 ({counts})"
            )
        }
        (Some(false), _) => format!(
            "the first run followed a --{hook} command, which wrote nothing to drop_caches \
             (what else it did to the caches is not recorded)"
        ),
        _ => format!(
            "the first run followed a --{hook} command (what it did to the caches is not \
             recorded)"
        ),
    }
}

/// `the page cache was dropped outside coldtrace: drop_caches was written since the last
/// coldtrace batch ended, 3m12s before this one (drop_pagecache +1, drop_slab +1)`.
fn outside_words(c: &ColdCause) -> String {
    let window = match c.dropped_since {
        Some("last_batch") => c.since_last_batch,
        Some("batch") => c.before_first_run,
        _ => c.since_boot,
    };
    let Some(d) = window else {
        return "the page cache was dropped outside coldtrace".into();
    };
    let (what, counts) = dropped_words(
        &d,
        if c.dropped_since == Some("boot") {
            ""
        } else {
            "+"
        },
    );
    let were = if what == "the page cache" {
        "was"
    } else {
        "were"
    };
    let when = match c.dropped_since {
        Some("last_batch") => format!(
            "since the last coldtrace batch of this boot ended{}",
            d.seconds.map_or(String::new(), |s| format!(
                ", {} before this one",
                human_uptime(s)
            ))
        ),
        Some("batch") => "during this batch, before the first run, by another process".into(),
        _ => format!(
            "{} since boot{}, when is not known: no coldtrace batch of this boot is recorded \
             in the state directory",
            times(d.drops().unwrap_or(0)),
            d.seconds
                .map_or(String::new(), |s| format!(" {} ago", human_uptime(s)))
        ),
    };
    format!("{what} {were} dropped outside coldtrace: drop_caches was written {when} ({counts})")
}

/// `once`, `twice`, `26 times`.
fn times(n: u64) -> String {
    match n {
        1 => "once".into(),
        2 => "twice".into(),
        n => format!("{n} times"),
    }
}

/// `; 7168 file pages were reclaimed since the last coldtrace batch (pgsteal_file)`, where
/// the kernel counted reclaim (a reclaim by a kernel access monitor counts none).
fn reclaimed_words(c: &ColdCause) -> String {
    match c.since_last_batch.and_then(|d| d.pgsteal_file) {
        Some(n) if n > 0 => {
            format!("; {n} file pages were reclaimed since the last coldtrace batch (pgsteal_file)")
        }
        _ => String::new(),
    }
}

/// Why the cause is unknown, with what the kernel's counts do say: drops before the last
/// batch, or none counted at all.
fn unknown_words(c: &ColdCause) -> String {
    let before = c.since_boot.and_then(|b| b.drops()).filter(|&n| n > 0);
    match (c.since_last_batch, before) {
        (Some(_), Some(n)) => format!(
            " (drop_caches was written {} since boot, each before the last coldtrace batch: \
             its pages may not have been read since; or something that leaves no trace \
             evicted them, such as posix_fadvise)",
            times(n)
        ),
        _ => " (its pages were evicted by something that leaves no trace, such as \
               posix_fadvise, or the kernel's counts were not read)"
            .into(),
    }
}

/// `; of what it brought into the page cache, 4 KiB came from the evicted files, and 200 MiB
/// from files coldtrace did not evict: something else had made those cold too (…)`: what
/// `--evict` is credited with, from the page-in ledger; nothing without it.
fn split_words(c: &ColdCause) -> String {
    let (Some(evicted), Some(elsewhere)) = (c.from_evicted_bytes, c.from_elsewhere_bytes) else {
        return c
            .split_unknown_reason
            .as_ref()
            .map_or(String::new(), |why| {
                format!("; which of what it read came from the evicted files is not known ({why})")
            });
    };
    let evicted = human_bytes(evicted as f64);
    match (c.second, elsewhere) {
        (Some(_), _) => format!(
            "; of what it brought into the page cache, {evicted} came from the evicted files \
             and {} from files coldtrace did not evict: something else had made those cold \
             too {}",
            human_bytes(elsewhere as f64),
            match c.second_cause {
                Some("reclaim") => format!(
                    "— the machine had reclaimed them: {} file pages refaulted system-wide \
                     during it",
                    c.workingset_refault_file.unwrap_or(0)
                ),
                Some("drop_caches_outside") => format!("— {}", outside_words(c)),
                _ => "(a drop_caches, reclaim, another process)".into(),
            }
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
    use crate::measure::cache::CacheHistory;
    use crate::record::cause::{cold_cause, ColdFacts};

    fn cause(name: &'static str) -> ColdCause {
        ColdCause {
            cause: name,
            verified: None,
            verification: None,
            read_bytes: Some(75_182_080.0),
            major_faults: Some(85.0),
            workingset_refault_file: Some(19_683),
            first_batch_since_boot: Some(false),
            since_boot: None,
            since_last_batch: None,
            before_first_run: None,
            dropped_since: None,
            from_evicted_bytes: None,
            from_elsewhere_bytes: None,
            split_unknown_reason: None,
            second: None,
            second_cause: None,
            wrote_caches: None,
        }
    }

    fn plain(text: Option<String>) -> String {
        text.unwrap().replace('\u{a0}', " ")
    }

    fn counts(uptime_s: f64, drops: u64, steal: u64) -> Option<CacheHistory> {
        CacheHistory::counted(uptime_s, drops, steal)
    }

    /// The sentence for a first run that read 71.70 MiB, 11 minutes after boot, with the
    /// kernel's counts `at_start` and `at_first`, and `last_batch` from the state file.
    fn said(f: ColdFacts) -> String {
        let f = ColdFacts {
            read_bytes: Some(75_182_080.0),
            major_faults: Some(85.0),
            refaults: f.refaults.or(Some(0)),
            page_bytes: 4096,
            ..f
        };
        plain(cause_sentence(&cold_cause(&f)))
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
        // Without the page-in ledger, the split is said to be unknown.
        evict.split_unknown_reason = Some("the page-in tracepoint needs root".into());
        assert!(plain(cause_sentence(&evict)).ends_with(
            "; it read nothing from storage; which of what it read came from the evicted files \
             is not known (the page-in tracepoint needs root)"
        ));
        assert!(cause_sentence(&cause("none")).is_none());
    }

    #[test]
    fn caches_the_first_run_wrote_are_its_cause_or_said_beside_one() {
        let pyc = crate::record::cause::WroteCaches {
            files: 1,
            bytes: 230,
            rewritten_files: 0,
            paths: vec!["__pycache__/mymod.cpython-311.pyc".into()],
            roots: vec!["/tmp/p".into()],
            unknown_reason: None,
        };
        let quiet = ColdFacts {
            wrote_caches: Some(pyc.clone()),
            ..ColdFacts {
                read_bytes: Some(0.0),
                major_faults: Some(0.0),
                page_bytes: 4096,
                ..ColdFacts::default()
            }
        };
        let c = cold_cause(&quiet);
        assert_eq!(c.cause, "wrote_caches");
        assert_eq!(
            plain(cause_sentence(&c)),
            "the first run wrote caches the later runs found: it created \
             __pycache__/mymod.cpython-311.pyc (1 file, 230 B) under /tmp/p, and no later run \
             wrote it again: work of its own the later runs did not repeat, not a cold page \
             cache; it read nothing from storage"
        );
        // A file found in a watched tree outside the working directory is named whole.
        let both = ColdFacts {
            wrote_caches: Some(crate::record::cause::WroteCaches {
                files: 3,
                paths: vec![
                    "__pycache__/mymod.cpython-311.pyc".into(),
                    "/opt/lib/__pycache__/x.cpython-311.pyc".into(),
                ],
                ..pyc.clone()
            }),
            ..quiet.clone()
        };
        assert!(
            plain(cause_sentence(&cold_cause(&both))).contains(
                "it created __pycache__/mymod.cpython-311.pyc, \
                 /opt/lib/__pycache__/x.cpython-311.pyc and 1 more (3 files, 230 B) (relative \
                 paths under /tmp/p), and no later run wrote them again"
            ),
            "{}",
            plain(cause_sentence(&cold_cause(&both)))
        );
        // Files every later run wrote again are outputs: nothing to name.
        let outputs = ColdFacts {
            wrote_caches: Some(crate::record::cause::WroteCaches {
                files: 0,
                bytes: 0,
                rewritten_files: 1,
                paths: Vec::new(),
                ..pyc.clone()
            }),
            ..quiet.clone()
        };
        assert_eq!(cold_cause(&outputs).cause, "none");
        // Beside a cold cache, said after it.
        let read = said(ColdFacts {
            wrote_caches: Some(pyc),
            ..ColdFacts::default()
        });
        assert!(
            read.starts_with("what made the first run cold is unknown")
                && read.ends_with(
                    "(85 major faults); it also wrote caches the later runs found: it created \
                     __pycache__/mymod.cpython-311.pyc (1 file, 230 B) under /tmp/p, and no \
                     later run wrote it again: work of its own the later runs did not repeat, \
                     not a cold page cache"
                ),
            "{read}"
        );
    }

    #[test]
    fn reclaim_names_what_the_kernel_counted_since_the_last_batch() {
        let f = ColdFacts {
            refaults: Some(19_683),
            last_batch: counts(600.0, 3, 100),
            at_start: counts(660.0, 3, 7268),
            at_first: counts(661.0, 3, 7268),
            ..ColdFacts::default()
        };
        assert_eq!(
            said(f),
            "the machine had reclaimed the first run's pages: 19683 file pages refaulted \
             system-wide during it (workingset_refault_file); 7168 file pages were reclaimed \
             since the last coldtrace batch (pgsteal_file); it read 71.70 MiB from storage \
             (85 major faults)"
        );
    }

    #[test]
    fn a_drop_not_coldtraces_is_named_with_where_it_was_seen() {
        let by_hand = ColdFacts {
            last_batch: counts(468.0, 26, 0),
            at_start: counts(660.0, 27, 0),
            at_first: counts(661.0, 27, 0),
            ..ColdFacts::default()
        };
        assert_eq!(
            said(by_hand.clone()),
            "the page cache, dentries and inodes were dropped outside coldtrace: drop_caches \
             was written since the last coldtrace batch of this boot ended, 3m12s before this \
             one (drop_pagecache +1, drop_slab +1); it read 71.70 MiB from storage (85 major \
             faults)"
        );
        // The same with a new state directory: since boot, at a time not known.
        assert_eq!(
            said(ColdFacts {
                last_batch: None,
                first_batch_since_boot: Some(true),
                ..by_hand.clone()
            }),
            "the page cache, dentries and inodes were dropped outside coldtrace: drop_caches \
             was written 27 times since boot 11m01s ago, when is not known: no coldtrace \
             batch of this boot is recorded in the state directory (drop_pagecache 27, \
             drop_slab 27); it read 71.70 MiB from storage (85 major faults)"
        );
        // echo 1 by another process during the batch.
        let mut echo1 = counts(661.0, 27, 0).unwrap();
        echo1.drop_pagecache = Some(28);
        assert_eq!(
            said(ColdFacts {
                last_batch: counts(468.0, 27, 0),
                at_first: Some(echo1),
                ..by_hand.clone()
            }),
            "the page cache was dropped outside coldtrace: drop_caches was written during \
             this batch, before the first run, by another process (drop_pagecache +1); it \
             read 71.70 MiB from storage (85 major faults)"
        );
        // Nothing since the last batch, some before it.
        let unknown = said(ColdFacts {
            last_batch: counts(468.0, 27, 0),
            refaults: Some(12),
            ..by_hand
        });
        assert_eq!(
            unknown,
            "what made the first run cold is unknown: no cold action, hook, reclaim (12 file \
             pages refaulted system-wide, fewer than half of the pages it read) or \
             drop_caches since the last coldtrace batch was seen (drop_caches was written 27 \
             times since boot, each before the last coldtrace batch: its pages may not have \
             been read since; or something that leaves no trace evicted them, such as \
             posix_fadvise); it read 71.70 MiB from storage (85 major faults)"
        );
    }

    #[test]
    fn a_boot_and_a_hook_are_named_from_the_kernels_counts() {
        let boot = ColdFacts {
            at_start: counts(660.0, 0, 0),
            at_first: counts(661.0, 0, 0),
            first_batch_since_boot: Some(true),
            ..ColdFacts::default()
        };
        assert_eq!(
            said(boot.clone()),
            "nothing had read what the first run read since the machine booted 11m01s ago: \
             no drop_caches since boot and no refault; it is the first coldtrace batch since \
             boot; it read 71.70 MiB from storage (85 major faults)"
        );
        let mut echo2 = counts(661.0, 0, 0).unwrap();
        echo2.drop_slab = Some(2);
        assert_eq!(
            said(ColdFacts {
                prepare: true,
                at_first: Some(echo2),
                ..boot.clone()
            }),
            "the first run followed a --prepare command that wrote drop_caches: dentries and \
             inodes, and with each inode its file's cached pages (drop_slab +2); it read 71.70 \
             MiB from storage (85 major faults)"
        );
        assert_eq!(
            said(ColdFacts {
                setup: true,
                ..boot
            }),
            "the first run followed a --setup command, which wrote nothing to drop_caches \
             (what else it did to the caches is not recorded); it read 71.70 MiB from storage \
             (85 major faults)"
        );
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
        // A drop by hand since the last batch, or reclaim, made the rest cold: said.
        let by_hand = crate::record::cause::ColdFacts {
            last_batch: counts(468.0, 26, 0),
            at_start: counts(660.0, 27, 0),
            at_first: counts(661.0, 27, 0),
            ..facts(4096, 200 << 20)
        };
        let c = crate::record::cause::cold_cause(&by_hand);
        assert_eq!(
            (c.second_cause, c.dropped_since),
            (Some("drop_caches_outside"), Some("last_batch"))
        );
        let said = plain(cause_sentence(&c));
        assert!(
            said.ends_with(
                "something else had made those cold too — the page cache, dentries and inodes \
                 were dropped outside coldtrace: drop_caches was written since the last \
                 coldtrace batch of this boot ended, 3m12s before this one (drop_pagecache +1, \
                 drop_slab +1)"
            ),
            "{said}"
        );
        let reclaimed = crate::record::cause::ColdFacts {
            refaults: Some(30_000),
            ..by_hand
        };
        let c = crate::record::cause::cold_cause(&reclaimed);
        assert_eq!((c.second_cause, c.dropped_since), (Some("reclaim"), None));
        assert!(plain(cause_sentence(&c)).ends_with(
            "something else had made those cold too — the machine had reclaimed them: 30000 \
             file pages refaulted system-wide during it"
        ));
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
