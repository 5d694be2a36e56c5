//! What made the first run cold, from what coldtrace did and saw: its own `--evict` or
//! `--drop-caches` (and whether that was verified), a `--setup`/`--prepare` hook that ran
//! before it, the machine having reclaimed the pages (file refaults during the run), the first
//! batch since boot — or unknown. Pure: facts in, a cause out; it reads and renders nothing.
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
#![forbid(unsafe_code)]

use crate::serialize_struct;

/// Evicted files still cached right after the eviction, as a share, above which `--evict` is
/// not verified.
pub const STAYED_VERIFIED_BELOW: f64 = 0.01;

/// What coldtrace knows of the first run and what came before it.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
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
    /// What the first run brought into the page cache from the `--evict` roots, bytes (the
    /// page-in ledger; `None`: no ledger or no split).
    pub page_ins_evicted_bytes: Option<u64>,
    /// And from elsewhere.
    pub page_ins_elsewhere_bytes: Option<u64>,
}

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
    /// `evict`, `drop_caches`, `setup`, `prepare`, `reclaim`, `first_batch_since_boot`,
    /// `unknown` (read from storage, nothing seen that explains it), or `none` (no cold action
    /// and no storage read: nothing to name).
    pub cause: &'static str,
    /// For coldtrace's own action: whether it is verified (`null`: cannot be told).
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
    /// With `--evict`: what the first run brought into the page cache from the evicted roots
    /// (all `--evict` is credited with), and from elsewhere, bytes, from the page-in ledger;
    /// `null` without it.
    pub from_evicted_bytes: Option<u64>,
    /// See [`ColdCause::from_evicted_bytes`].
    pub from_elsewhere_bytes: Option<u64>,
    /// A second cause: `elsewhere` when at least [`ELSEWHERE_BYTES`] and as much as came from the
    /// evicted roots came from files coldtrace did not evict (something else had made them
    /// cold); `null` otherwise.
    pub second: Option<&'static str>,
}
serialize_struct!(ColdCause {
    cause,
    verified,
    verification,
    read_bytes,
    major_faults,
    workingset_refault_file,
    first_batch_since_boot,
    from_evicted_bytes,
    from_elsewhere_bytes,
    second
});

/// Bytes brought in from outside the evicted roots from which they are a second cause (beside
/// at least as many from the evicted roots).
pub const ELSEWHERE_BYTES: u64 = 1 << 20;

/// What made the first run cold, in order of what coldtrace knows best: its own action, a hook
/// it ran, reclaim it saw, a new boot; else unknown (or nothing, when nothing was read).
pub fn cold_cause(f: &ColdFacts) -> ColdCause {
    let read = f.read_from_storage();
    let (cause, verified, verification) = if f.evicted {
        let (verified, words) = evict_verified(f);
        ("evict", verified, words)
    } else if f.dropped_caches {
        let (verified, words) = drop_verified(f);
        ("drop_caches", verified, words)
    } else if f.setup {
        ("setup", None, None)
    } else if f.prepare {
        ("prepare", None, None)
    } else if read && f.refaults_are_its_own() {
        ("reclaim", None, None)
    } else if read && f.first_batch_since_boot == Some(true) {
        ("first_batch_since_boot", None, None)
    } else if read {
        ("unknown", None, None)
    } else {
        ("none", None, None)
    };
    let split = (cause == "evict")
        .then_some((f.page_ins_evicted_bytes, f.page_ins_elsewhere_bytes))
        .filter(|(e, o)| e.is_some() || o.is_some());
    let (from_evicted, from_elsewhere) = split.unwrap_or((None, None));
    let elsewhere = from_elsewhere.unwrap_or(0);
    let second = (elsewhere >= ELSEWHERE_BYTES && elsewhere >= from_evicted.unwrap_or(0))
        .then_some("elsewhere");
    ColdCause {
        cause,
        verified,
        verification,
        read_bytes: f.read_bytes,
        major_faults: f.major_faults,
        workingset_refault_file: f.refaults,
        first_batch_since_boot: f.first_batch_since_boot,
        from_evicted_bytes: from_evicted.or(split.map(|_| 0)),
        from_elsewhere_bytes: from_elsewhere.or(split.map(|_| 0)),
        second,
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
            ..f
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
            ..dropped
        };
        assert_eq!(cold_cause(&watched).verified, Some(true));
    }

    #[test]
    fn hooks_then_reclaim_then_a_new_boot_then_unknown() {
        let hook = ColdFacts {
            prepare: true,
            refaults: Some(19_683),
            ..read(75e6)
        };
        assert_eq!(cold_cause(&hook).cause, "prepare");
        let reclaim = ColdFacts {
            prepare: false,
            first_batch_since_boot: Some(true),
            ..hook
        };
        let c = cold_cause(&reclaim);
        assert_eq!(
            (c.cause, c.workingset_refault_file),
            ("reclaim", Some(19_683))
        );
        let boot = ColdFacts {
            refaults: Some(0),
            ..reclaim
        };
        assert_eq!(cold_cause(&boot).cause, "first_batch_since_boot");
        let unknown = ColdFacts {
            first_batch_since_boot: Some(false),
            ..boot
        };
        assert_eq!(cold_cause(&unknown).cause, "unknown");
        // Another process's few refaults beside a large read are not its own: 75 MB is about
        // 18,311 pages of 4 KiB, and reclaim needs half of them refaulted.
        let few = ColdFacts {
            refaults: Some(9_155),
            ..unknown
        };
        let c = cold_cause(&few);
        assert_eq!(
            (c.cause, c.workingset_refault_file),
            ("unknown", Some(9_155))
        );
        assert_eq!(
            cold_cause(&ColdFacts {
                refaults: Some(9_156),
                ..few
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
}
