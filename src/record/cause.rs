//! What made the first run cold, from what coldtrace did and saw: its own `--evict` or
//! `--drop-caches` (and whether that was verified), a `--setup`/`--prepare` hook that ran
//! before it (and whether it wrote `drop_caches`), the machine having reclaimed the pages (file
//! refaults during the run), a `drop_caches` by someone else, a boot since which nothing had
//! read the pages — or unknown. Pure: facts in, a cause out; it reads and renders nothing.
//!
//! Why refaults: `workingset_refault_file` counts file pages read back in that the kernel had
//! evicted earlier (it keeps a shadow entry for each page it reclaims). A first run that reads
//! from storage while refaults rise read pages that had been cached and were reclaimed — by
//! memory pressure, or, on a VM like the one this was written on, by a kernel access monitor
//! (kdamond with a `pageout` scheme) that pages out page cache left idle for a while (see
//! docs/cold-states.md for a measured case). Refaults are system-wide, so they are evidence
//! beside the run's own storage reads, never alone. Pages dropped by `posix_fadvise` (`--evict`)
//! or `drop_caches` leave no shadow entry, so reading them back is no refault (six cycles of
//! `--evict` and `cat` of a 64 MiB file here: 64 MiB read each cycle, 0 refaults).
//!
//! Why the kernel's counts and not the state directory: `drop_pagecache` and `drop_slab` in
//! `/proc/vmstat` count every write to `drop_caches` since boot
//! ([`crate::measure::cache::CacheHistory`]). A batch compares them with the counts the state
//! file kept when the last batch of this boot ended, and with its own at its start and right
//! before its first run: a drop by hand between two batches, a drop by a `--prepare` command,
//! and "not read since boot" (no drop at all since boot) are told from those. An empty state
//! directory (a container, a CI job, a new user) knows of no earlier batch; it never makes a
//! batch "first since boot" by itself: with drops counted since boot, what made the run cold is
//! a drop at a time not known.
#![forbid(unsafe_code)]

use crate::measure::cache::{CacheChange, CacheHistory};
use crate::serialize_struct;

/// Evicted files still cached right after the eviction, as a share, above which `--evict` is
/// not verified.
pub const STAYED_VERIFIED_BELOW: f64 = 0.01;

/// What coldtrace knows of the first run and what came before it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ColdFacts {
    /// `--evict` ran right before the first run.
    pub evicted: bool,
    /// The share of the evicted files still cached right after the eviction.
    pub stayed_ratio: Option<f64>,
    /// `--drop-caches` ran right before the first run.
    pub dropped_caches: bool,
    /// The share of the watched files cached right before the first run.
    pub resident_ratio_before: Option<f64>,
    /// A `--setup` command ran before the first run.
    pub setup: bool,
    /// A `--prepare` command ran right before the first run.
    pub prepare: bool,
    /// Bytes the first run read from storage (`/proc/PID/io`, or rusage blocks × 512).
    pub read_bytes: Option<f64>,
    /// The first run's major faults.
    pub major_faults: Option<f64>,
    /// File pages refaulted system-wide during the first run.
    pub refaults: Option<u64>,
    /// The size of a page, in bytes (refaults count pages).
    pub page_bytes: u64,
    /// The first coldtrace batch since boot (`None`: not known).
    pub first_batch_since_boot: Option<bool>,
    /// The kernel's counts of drops and reclaim right before the first run (after its
    /// `--prepare` and coldtrace's cold action).
    pub at_first: Option<CacheHistory>,
    /// The same when the batch started (before its `--setup`).
    pub at_start: Option<CacheHistory>,
    /// The same when the last coldtrace batch of this boot ended, as the state file kept them
    /// (`None`: no batch of this boot recorded).
    pub last_batch: Option<CacheHistory>,
    /// Writes of `3` to `drop_caches` coldtrace made itself from the batch's start to the first
    /// run (`--drop-caches`).
    pub own_drops: u64,
    /// What the first run brought into the page cache from the `--evict` roots, bytes (the
    /// page-in ledger; `None`: no ledger or no split).
    pub page_ins_evicted_bytes: Option<u64>,
    /// And from elsewhere.
    pub page_ins_elsewhere_bytes: Option<u64>,
    /// Why there is no such split (no ledger, or a file system it cannot place).
    pub page_ins_unknown_reason: Option<String>,
    /// The files the first run created under the working directory and the watched trees
    /// (`None`: not looked for, as with `--minimal`).
    pub wrote_caches: Option<WroteCaches>,
}

/// The files a first run created under the command's working directory and the watched trees
/// (`first_cold_cause.wrote_caches`): those every later run left as the first run wrote them
/// are caches the later runs found (`__pycache__`, ccache, a JIT cache), and the first run was
/// slower for writing them, not for a cold page cache; those a later run wrote again are
/// outputs every run writes.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct WroteCaches {
    /// Files the first run created that no later run wrote again, removed or replaced.
    pub files: u64,
    /// Their bytes.
    pub bytes: u64,
    /// Files the first run created that a later run wrote again, removed or replaced.
    pub rewritten_files: u64,
    /// The first of the files kept, largest first (at most [`PATHS`]), relative to the
    /// working directory where under it (the first of `roots`), else whole.
    pub paths: Vec<String>,
    /// The roots looked in: the working directory, then the watched trees.
    pub roots: Vec<String>,
    /// Why what it created is not wholly known (the search's bound, a file system without
    /// birth times); `None`: every directory under the roots was read.
    pub unknown_reason: Option<String>,
}
serialize_struct!(WroteCaches {
    files,
    bytes,
    rewritten_files,
    paths,
    roots,
    unknown_reason
});

/// The paths of the files a first run wrote that `first_cold_cause.wrote_caches` names.
pub const PATHS: usize = 5;

impl ColdFacts {
    /// The first run read from storage: its own bytes or major faults.
    fn read_from_storage(&self) -> bool {
        self.read_bytes.is_some_and(|b| b > 0.0) || self.major_faults.is_some_and(|n| n > 0.0)
    }

    /// The refaults during the first run are enough to be its own: at least
    /// [`REFAULTS_OF_WHAT_IT_READ`] of the pages it read (its bytes read in pages, or its major
    /// faults, whichever is more). Refaults are system-wide, and on a machine that pages out idle
    /// cache other processes refault a few pages every second.
    fn refaults_are_its_own(&self) -> bool {
        let Some(refaults) = self.refaults.filter(|&n| n > 0) else {
            return false;
        };
        let page = self.page_bytes.max(1) as f64;
        let pages_read =
            (self.read_bytes.unwrap_or(0.0) / page).max(self.major_faults.unwrap_or(0.0));
        refaults as f64 >= REFAULTS_OF_WHAT_IT_READ * pages_read
    }
}

/// The share of the first run's pages read that must have refaulted system-wide during it to
/// name reclaim as the cause.
pub const REFAULTS_OF_WHAT_IT_READ: f64 = 0.5;

/// The cause, as `batch.json`'s `first_cold_cause` records it.
#[derive(Clone, Debug, PartialEq)]
pub struct ColdCause {
    /// `evict`, `drop_caches` (coldtrace's own), `setup`, `prepare` (a hook that wrote
    /// `drop_caches`, or that ran before a run nothing else explains), `reclaim`,
    /// `drop_caches_outside` (a write to `drop_caches` not coldtrace's), `boot` (nothing dropped
    /// since boot: the pages had not been read since), `unknown` (read from storage, nothing
    /// seen that explains it), `wrote_caches` (no storage read, and it created files the
    /// later runs left as written: its own writes, not a cold cache), or `none` (no cold
    /// action, no drop by a hook, no storage read, no cache written: nothing to name).
    pub cause: &'static str,
    /// For coldtrace's own action, whether it is verified (`null`: cannot be told); for a hook,
    /// whether it wrote `drop_caches`.
    pub verified: Option<bool>,
    /// How, in words.
    pub verification: Option<String>,
    /// Bytes the first run read from storage.
    pub read_bytes: Option<f64>,
    /// Its major faults.
    pub major_faults: Option<f64>,
    /// File pages refaulted system-wide during it.
    pub workingset_refault_file: Option<u64>,
    /// The first coldtrace batch since boot.
    pub first_batch_since_boot: Option<bool>,
    /// The kernel's counts since boot at the first run (`seconds`: the uptime).
    pub since_boot: Option<CacheChange>,
    /// From the end of the last coldtrace batch of this boot to this batch's start (`null`:
    /// none recorded).
    pub since_last_batch: Option<CacheChange>,
    /// From this batch's start to the first run, less coldtrace's own `--drop-caches`: its
    /// `--setup` and `--prepare` commands', or another process's.
    pub before_first_run: Option<CacheChange>,
    /// For `drop_caches_outside`, where the write was seen: `last_batch` (since the last
    /// batch), `batch` (during this batch, before the first run), `boot` (since boot, when is
    /// not known: no batch of this boot recorded).
    pub dropped_since: Option<&'static str>,
    /// With `--evict`: what the first run brought into the page cache from the evicted roots
    /// (all `--evict` is credited with), and from elsewhere, bytes, from the page-in ledger;
    /// `null` without it.
    pub from_evicted_bytes: Option<u64>,
    /// See [`ColdCause::from_evicted_bytes`].
    pub from_elsewhere_bytes: Option<u64>,
    /// With `--evict` and no split: why (the ledger needs root or CAP_PERFMON).
    pub split_unknown_reason: Option<String>,
    /// A second cause: `elsewhere` when at least [`ELSEWHERE_BYTES`] and as much as came from the
    /// evicted roots came from files coldtrace did not evict (something else had made them
    /// cold); `null` otherwise.
    pub second: Option<&'static str>,
    /// What made that rest cold, where the evidence says: `reclaim` (file pages refaulted during
    /// the run, at least half as many as the pages from elsewhere: `--evict` leaves no shadow
    /// entry, so they are not the evicted files'), or `drop_caches_outside` (as the cause of
    /// that name, with `dropped_since`); `null` otherwise.
    pub second_cause: Option<&'static str>,
    /// The files the first run created under the working directory and the watched trees, and
    /// which of them the later runs left as written (`null`: not looked for).
    pub wrote_caches: Option<WroteCaches>,
}
serialize_struct!(ColdCause {
    cause,
    verified,
    verification,
    read_bytes,
    major_faults,
    workingset_refault_file,
    first_batch_since_boot,
    since_boot,
    since_last_batch,
    before_first_run,
    dropped_since,
    from_evicted_bytes,
    from_elsewhere_bytes,
    split_unknown_reason,
    second,
    second_cause,
    wrote_caches
});

/// Bytes brought in from outside the evicted roots from which they are a second cause (beside
/// at least as many from the evicted roots).
pub const ELSEWHERE_BYTES: u64 = 1 << 20;

/// The kernel's counts over the windows before the first run.
#[derive(Clone, Copy, Debug, Default)]
struct Windows {
    since_boot: Option<CacheChange>,
    since_last_batch: Option<CacheChange>,
    before_first_run: Option<CacheChange>,
}

impl Windows {
    fn of(f: &ColdFacts) -> Windows {
        let between = |later: Option<CacheHistory>, earlier: Option<CacheHistory>| {
            Some(later?.since(&earlier?))
        };
        Windows {
            since_boot: f.at_first.map(|h| h.since_boot()),
            since_last_batch: between(f.at_start, f.last_batch),
            before_first_run: between(f.at_first, f.at_start).map(|c| c.less_own(f.own_drops)),
        }
    }

    /// Where a write to `drop_caches` that was not coldtrace's was seen, if one was: since
    /// the last batch, during this batch, or — with no batch of this boot recorded — since
    /// boot.
    fn outside_drop(&self, hooks: bool) -> Option<&'static str> {
        let dropped = |c: Option<CacheChange>| c.and_then(|c| c.drops()).is_some_and(|n| n > 0);
        if dropped(self.since_last_batch) {
            Some("last_batch")
        } else if !hooks && dropped(self.before_first_run) {
            Some("batch")
        } else if self.since_last_batch.is_none() && dropped(self.since_boot) {
            Some("boot")
        } else {
            None
        }
    }
}

/// What made the first run cold, in order of what coldtrace knows best: its own action, a hook
/// that wrote `drop_caches`, reclaim it saw, a `drop_caches` not its own, a hook it cannot see
/// into, a boot since which nothing was dropped; else unknown. A first run that read nothing
/// from storage and created files the later runs left as written is named for those caches
/// (`wrote_caches`); one that did neither names nothing. Beside any other cause, the caches it
/// wrote are kept in `wrote_caches` for the sentence to say too.
pub fn cold_cause(f: &ColdFacts) -> ColdCause {
    let read = f.read_from_storage();
    let w = Windows::of(f);
    let hook = match (f.prepare, f.setup) {
        (true, _) => Some("prepare"),
        (false, true) => Some("setup"),
        (false, false) => None,
    };
    let hook_dropped = w.before_first_run.and_then(|c| c.drops()).map(|n| n > 0);
    let outside = w.outside_drop(hook.is_some());
    let (cause, verified, verification) = if f.evicted {
        let (verified, words) = evict_verified(f);
        ("evict", verified, words)
    } else if f.dropped_caches {
        let (verified, words) = drop_verified(f);
        ("drop_caches", verified, words)
    } else if let Some(hook) = hook.filter(|_| hook_dropped == Some(true)) {
        (hook, Some(true), None)
    } else if !read && f.wrote_caches.as_ref().is_some_and(|w| w.files > 0) {
        ("wrote_caches", None, None)
    } else if !read {
        ("none", None, None)
    } else if f.refaults_are_its_own() {
        ("reclaim", None, None)
    } else if outside.is_some() {
        ("drop_caches_outside", None, None)
    } else if let Some(hook) = hook {
        (hook, hook_dropped.map(|_| false), None)
    } else if w.since_boot.and_then(|c| c.drops()) == Some(0) {
        ("boot", None, None)
    } else {
        ("unknown", None, None)
    };
    let split = (cause == "evict")
        .then_some((f.page_ins_evicted_bytes, f.page_ins_elsewhere_bytes))
        .filter(|(e, o)| e.is_some() || o.is_some());
    let (from_evicted, from_elsewhere) = split.unwrap_or((None, None));
    let elsewhere = from_elsewhere.unwrap_or(0);
    let second = (elsewhere >= ELSEWHERE_BYTES && elsewhere >= from_evicted.unwrap_or(0))
        .then_some("elsewhere");
    let second_cause = second.and_then(|_| {
        let pages = elsewhere as f64 / f.page_bytes.max(1) as f64;
        if f.refaults
            .is_some_and(|n| n as f64 >= REFAULTS_OF_WHAT_IT_READ * pages)
        {
            Some("reclaim")
        } else {
            outside.map(|_| "drop_caches_outside")
        }
    });
    let dropped = cause == "drop_caches_outside" || second_cause == Some("drop_caches_outside");
    ColdCause {
        cause,
        verified,
        verification,
        read_bytes: f.read_bytes,
        major_faults: f.major_faults,
        workingset_refault_file: f.refaults,
        first_batch_since_boot: f.first_batch_since_boot,
        since_boot: w.since_boot,
        since_last_batch: w.since_last_batch,
        before_first_run: w.before_first_run,
        dropped_since: outside.filter(|_| dropped),
        from_evicted_bytes: from_evicted.or(split.map(|_| 0)),
        from_elsewhere_bytes: from_elsewhere.or(split.map(|_| 0)),
        split_unknown_reason: f
            .page_ins_unknown_reason
            .clone()
            .filter(|_| cause == "evict" && split.is_none()),
        second,
        second_cause,
        wrote_caches: f.wrote_caches.clone(),
    }
}

fn percent(ratio: f64) -> String {
    format!("{:.1} %", ratio * 100.0)
}

/// `--evict` is verified when (nearly) nothing of the evicted files stayed cached.
fn evict_verified(f: &ColdFacts) -> (Option<bool>, Option<String>) {
    match f.stayed_ratio {
        Some(r) if r < STAYED_VERIFIED_BELOW => (
            Some(true),
            Some(format!("{} of the evicted files stayed cached", percent(r))),
        ),
        Some(r) => (
            Some(false),
            Some(format!("{} of the evicted files stayed cached", percent(r))),
        ),
        None => (None, Some("what stayed cached is unknown".into())),
    }
}

/// `--drop-caches` is verified by the watched files' residency right before the run, else by
/// the run reading from storage.
fn drop_verified(f: &ColdFacts) -> (Option<bool>, Option<String>) {
    match (f.resident_ratio_before, f.read_from_storage()) {
        (Some(r), _) => (
            Some(r < STAYED_VERIFIED_BELOW),
            Some(format!(
                "{} of the watched files cached before it",
                percent(r)
            )),
        ),
        (None, true) => (
            Some(true),
            Some("it read from storage (no --watch to measure the cache)".into()),
        ),
        (None, false) => (
            None,
            Some("no storage read and no --watch: dentries and inodes only, or nothing".into()),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(bytes: f64) -> ColdFacts {
        ColdFacts {
            read_bytes: Some(bytes),
            major_faults: Some(0.0),
            page_bytes: 4096,
            ..ColdFacts::default()
        }
    }

    #[test]
    fn coldtraces_own_action_comes_first_and_is_verified() {
        let f = ColdFacts {
            evicted: true,
            stayed_ratio: Some(0.0),
            refaults: Some(500),
            ..read(1e6)
        };
        let c = cold_cause(&f);
        assert_eq!((c.cause, c.verified), ("evict", Some(true)));
        let stayed = cold_cause(&ColdFacts {
            stayed_ratio: Some(0.12),
            ..f.clone()
        });
        assert_eq!(stayed.verified, Some(false));
        assert_eq!(
            stayed.verification.as_deref(),
            Some("12.0 % of the evicted files stayed cached")
        );
        let dropped = ColdFacts {
            dropped_caches: true,
            ..read(0.0)
        };
        assert_eq!(cold_cause(&dropped).cause, "drop_caches");
        assert_eq!(cold_cause(&dropped).verified, None);
        let watched = ColdFacts {
            resident_ratio_before: Some(0.0),
            ..dropped.clone()
        };
        assert_eq!(cold_cause(&watched).verified, Some(true));
    }

    fn counts(uptime_s: f64, drops: u64, steal: u64) -> Option<CacheHistory> {
        CacheHistory::counted(uptime_s, drops, steal)
    }

    /// A first run that read 75 MB, 11 minutes after boot, with `drops` since boot and a
    /// state directory that knows of no batch of this boot.
    fn cold_read(drops: u64) -> ColdFacts {
        ColdFacts {
            refaults: Some(0),
            at_start: counts(660.0, drops, 0),
            at_first: counts(661.0, drops, 0),
            first_batch_since_boot: Some(true),
            ..read(75e6)
        }
    }

    #[test]
    fn reclaim_is_named_by_the_runs_own_refaults_never_by_another_processs() {
        let reclaim = ColdFacts {
            refaults: Some(19_683),
            ..cold_read(3)
        };
        let c = cold_cause(&reclaim);
        assert_eq!(
            (c.cause, c.workingset_refault_file),
            ("reclaim", Some(19_683))
        );
        // Another process's few refaults beside a large read are not its own: 75 MB is about
        // 18,311 pages of 4 KiB, and reclaim needs half of them refaulted.
        let few = ColdFacts {
            refaults: Some(9_155),
            ..cold_read(0)
        };
        let c = cold_cause(&few);
        assert_eq!((c.cause, c.workingset_refault_file), ("boot", Some(9_155)));
        assert_eq!(
            cold_cause(&ColdFacts {
                refaults: Some(9_156),
                ..few.clone()
            })
            .cause,
            "reclaim"
        );
        // A read seen only as major faults counts a page each.
        let faults = ColdFacts {
            major_faults: Some(40.0),
            refaults: Some(20),
            ..read(0.0)
        };
        assert_eq!(cold_cause(&faults).cause, "reclaim");
        // Refaults alone (another process's) name nothing: the run read nothing itself.
        let quiet = ColdFacts {
            refaults: Some(900),
            ..read(0.0)
        };
        assert_eq!(cold_cause(&quiet).cause, "none");
    }

    #[test]
    fn a_new_state_directory_never_makes_a_batch_cold_from_the_boot_by_itself() {
        // A fresh COLDTRACE_STATE_DIR 11 minutes after boot, after drop_caches by hand: the
        // drop since boot is the cause, at a time not known.
        let c = cold_cause(&cold_read(1));
        assert_eq!(
            (c.cause, c.dropped_since),
            ("drop_caches_outside", Some("boot"))
        );
        assert_eq!(c.since_boot.unwrap().drop_pagecache, Some(1));
        assert_eq!(c.since_boot.unwrap().seconds, Some(661.0));
        assert_eq!(c.since_last_batch, None);
        // Nothing dropped since boot: the pages had not been read since.
        let c = cold_cause(&cold_read(0));
        assert_eq!((c.cause, c.dropped_since), ("boot", None));
        // Without the kernel's counts, nothing is claimed of the boot.
        let c = cold_cause(&ColdFacts {
            at_first: None,
            at_start: None,
            ..cold_read(0)
        });
        assert_eq!(c.cause, "unknown");
    }

    #[test]
    fn a_drop_by_hand_is_told_from_the_last_batch_and_from_one_before_it() {
        // The last batch of this boot ended with 3 drops counted; one more since, by hand.
        let by_hand = ColdFacts {
            last_batch: counts(600.0, 3, 0),
            first_batch_since_boot: Some(false),
            ..cold_read(4)
        };
        let c = cold_cause(&by_hand);
        assert_eq!(
            (c.cause, c.dropped_since),
            ("drop_caches_outside", Some("last_batch"))
        );
        let since = c.since_last_batch.unwrap();
        assert_eq!((since.seconds, since.drop_pagecache), (Some(60.0), Some(1)));
        // No drop since the last batch, some before it: what made it cold is not known.
        let before = ColdFacts {
            last_batch: counts(600.0, 4, 0),
            ..by_hand.clone()
        };
        assert_eq!(cold_cause(&before).cause, "unknown");
        // A drop during the batch, before the first run, by another process (no hook).
        let during = ColdFacts {
            at_first: counts(661.0, 5, 0),
            ..before.clone()
        };
        let c = cold_cause(&during);
        assert_eq!(
            (c.cause, c.dropped_since),
            ("drop_caches_outside", Some("batch"))
        );
        // coldtrace's own --drop-caches is its own cause, never another's.
        let own = ColdFacts {
            dropped_caches: true,
            own_drops: 1,
            ..during.clone()
        };
        let c = cold_cause(&own);
        assert_eq!((c.cause, c.dropped_since), ("drop_caches", None));
        assert_eq!(c.before_first_run.unwrap().drop_pagecache, Some(0));
    }

    #[test]
    fn a_hook_is_named_for_what_it_wrote_to_drop_caches() {
        // --prepare 'echo 3 > /proc/sys/vm/drop_caches': verified by the kernel's count, even
        // when the run read nothing (dentries and inodes only).
        let prepare = ColdFacts {
            prepare: true,
            at_first: counts(661.0, 1, 0),
            ..cold_read(0)
        };
        let c = cold_cause(&prepare);
        assert_eq!((c.cause, c.verified), ("prepare", Some(true)));
        assert_eq!(
            cold_cause(&ColdFacts {
                read_bytes: Some(0.0),
                ..prepare.clone()
            })
            .cause,
            "prepare"
        );
        assert_eq!(
            cold_cause(&ColdFacts {
                prepare: false,
                setup: true,
                ..prepare.clone()
            })
            .cause,
            "setup"
        );
        // A hook that wrote nothing to drop_caches: named only when nothing else explains the
        // read, and said so; never when nothing was read.
        let quiet = ColdFacts {
            prepare: true,
            ..cold_read(0)
        };
        let c = cold_cause(&quiet);
        assert_eq!((c.cause, c.verified), ("prepare", Some(false)));
        let reclaim = ColdFacts {
            refaults: Some(19_683),
            ..quiet.clone()
        };
        assert_eq!(cold_cause(&reclaim).cause, "reclaim");
        let nothing = ColdFacts {
            read_bytes: Some(0.0),
            ..quiet.clone()
        };
        assert_eq!(cold_cause(&nothing).cause, "none");
        // A drop by hand before the batch comes before a hook that dropped nothing.
        let by_hand = ColdFacts {
            last_batch: counts(600.0, 0, 0),
            ..cold_read(1)
        };
        let c = cold_cause(&ColdFacts {
            prepare: true,
            ..by_hand.clone()
        });
        assert_eq!(
            (c.cause, c.dropped_since),
            ("drop_caches_outside", Some("last_batch"))
        );
    }
}
