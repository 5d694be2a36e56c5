//! What the kernel has counted since boot that takes pages out of the page cache, read at one
//! instant: writes to `/proc/sys/vm/drop_caches` (`drop_pagecache` counts those with bit 1 set,
//! `drop_slab` those with bit 2: `echo 3` adds one to each) and reclaim (`pgsteal_file`, the file
//! pages reclaimed, and `pgscan_file`, those scanned to find them — memory pressure, a cgroup's
//! limit or `memory.reclaim`), from [proc_vmstat(5)], with the time since boot.
//!
//! Two readings of one boot tell what happened between them: a `drop_caches` by hand between
//! two batches, one by a `--prepare` command before a run. These are counts of events, not
//! times, and they are machine-wide. What they do not count: `posix_fadvise` (`--evict`,
//! `vmtouch -e`), a file's truncation, and the pageout of a kernel access monitor (DAMON's
//! `pageout` scheme reclaims without `pgsteal`: on this project's 2-CPU VM, 2026-12-06, kernel
//! 6.18.44, `pgsteal_file` stayed 0 over two hours while 2 million file pages refaulted) — a
//! refault is what shows that.
//!
//! [proc_vmstat(5)]: https://man7.org/linux/man-pages/man5/proc_vmstat.5.html
#![forbid(unsafe_code)]

/// The counters at one instant (`None`: not in this kernel's `/proc/vmstat`, or unreadable).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct CacheHistory {
    /// Seconds since boot when read (`CLOCK_BOOTTIME`, as `/proc/uptime`).
    pub uptime_s: Option<f64>,
    /// Writes to `drop_caches` that dropped the page cache (bit 1), since boot.
    pub drop_pagecache: Option<u64>,
    /// Writes to `drop_caches` that dropped dentries and inodes (bit 2), since boot. An inode
    /// dropped takes its file's cached pages with it.
    pub drop_slab: Option<u64>,
    /// File pages reclaimed since boot (Linux ≥ 5.8; memcg limit reclaim included).
    pub pgsteal_file: Option<u64>,
    /// File pages scanned by reclaim since boot.
    pub pgscan_file: Option<u64>,
}
crate::serialize_struct!(CacheHistory {
    uptime_s,
    drop_pagecache,
    drop_slab,
    pgsteal_file,
    pgscan_file
});

/// What changed between two readings of one boot (`None` where either lacks the counter, or
/// where the later reading is below the earlier: not of one boot, or not in order).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct CacheChange {
    /// Seconds between the readings.
    pub seconds: Option<f64>,
    /// Writes to `drop_caches` with bit 1 (the page cache).
    pub drop_pagecache: Option<u64>,
    /// Writes to `drop_caches` with bit 2 (dentries and inodes).
    pub drop_slab: Option<u64>,
    /// File pages reclaimed.
    pub pgsteal_file: Option<u64>,
    /// File pages scanned by reclaim.
    pub pgscan_file: Option<u64>,
}
crate::serialize_struct!(CacheChange {
    seconds,
    drop_pagecache,
    drop_slab,
    pgsteal_file,
    pgscan_file
});

impl CacheChange {
    /// Writes to `drop_caches` (either bit) in the window; `None` when not counted.
    pub fn drops(&self) -> Option<u64> {
        match (self.drop_pagecache, self.drop_slab) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or(0).max(b.unwrap_or(0))),
        }
    }

    /// The change less `own` writes of `3` (both bits) that coldtrace made itself.
    pub fn less_own(self, own: u64) -> CacheChange {
        let less = |n: Option<u64>| n.map(|n| n.saturating_sub(own));
        CacheChange {
            drop_pagecache: less(self.drop_pagecache),
            drop_slab: less(self.drop_slab),
            ..self
        }
    }
}

impl CacheHistory {
    /// Reads `/proc/vmstat` and the boot-time clock now. Never fails: what cannot be read is
    /// `None`.
    pub fn read() -> CacheHistory {
        // Opened as every /proc file is: a FIFO bind-mounted over it must not block the batch.
        let text =
            crate::measure::procfs::read_text("/proc/vmstat", usize::MAX).unwrap_or_default();
        let text = text.as_bytes();
        Self::parse(text, Some(crate::measure::clock::boottime_s()))
    }

    /// The counters of `/proc/vmstat` text ("name value" lines), read at `uptime_s`.
    pub fn parse(vmstat: &[u8], uptime_s: Option<f64>) -> CacheHistory {
        let mut h = CacheHistory {
            uptime_s,
            ..CacheHistory::default()
        };
        for line in String::from_utf8_lossy(vmstat).lines() {
            let mut words = line.split_ascii_whitespace();
            let (Some(name), Some(value)) = (words.next(), words.next()) else {
                continue;
            };
            let slot = match name {
                "drop_pagecache" => &mut h.drop_pagecache,
                "drop_slab" => &mut h.drop_slab,
                "pgsteal_file" => &mut h.pgsteal_file,
                "pgscan_file" => &mut h.pgscan_file,
                _ => continue,
            };
            *slot = value.parse().ok();
        }
        h
    }

    /// What changed from `earlier` to this reading (both of this boot).
    pub fn since(&self, earlier: &CacheHistory) -> CacheChange {
        let d = |now: Option<u64>, then: Option<u64>| now?.checked_sub(then?);
        CacheChange {
            seconds: (|| Some(self.uptime_s? - earlier.uptime_s?))().filter(|s| *s >= 0.0),
            drop_pagecache: d(self.drop_pagecache, earlier.drop_pagecache),
            drop_slab: d(self.drop_slab, earlier.drop_slab),
            pgsteal_file: d(self.pgsteal_file, earlier.pgsteal_file),
            pgscan_file: d(self.pgscan_file, earlier.pgscan_file),
        }
    }

    /// The counts since boot, as a change from nothing at boot.
    pub fn since_boot(&self) -> CacheChange {
        self.since(&CacheHistory {
            uptime_s: Some(0.0),
            drop_pagecache: Some(0),
            drop_slab: Some(0),
            pgsteal_file: Some(0),
            pgscan_file: Some(0),
        })
    }
}

#[cfg(test)]
impl CacheHistory {
    /// A reading for tests: `drops` writes of `3` to `drop_caches` and `reclaimed` file pages
    /// since boot, `uptime_s` after it.
    pub(crate) fn counted(uptime_s: f64, drops: u64, reclaimed: u64) -> Option<CacheHistory> {
        Some(CacheHistory {
            uptime_s: Some(uptime_s),
            drop_pagecache: Some(drops),
            drop_slab: Some(drops),
            pgsteal_file: Some(reclaimed),
            pgscan_file: Some(reclaimed),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_counters_are_read_by_name_and_compared_within_a_boot() {
        let text = b"nr_free_pages 9\npgsteal_file 7168\npgscan_file 7200\ndrop_pagecache 26\n\
                     drop_slab 61\npgsteal_anon 4\n";
        let then = CacheHistory::parse(text, Some(100.0));
        assert_eq!(
            (then.drop_pagecache, then.drop_slab, then.pgsteal_file),
            (Some(26), Some(61), Some(7168))
        );
        let now = CacheHistory {
            uptime_s: Some(160.5),
            drop_pagecache: Some(27),
            drop_slab: Some(63),
            ..then
        };
        let change = now.since(&then);
        assert_eq!(change.seconds, Some(60.5));
        assert_eq!(
            (change.drop_pagecache, change.drop_slab),
            (Some(1), Some(2))
        );
        assert_eq!(change.drops(), Some(2));
        assert_eq!(change.pgsteal_file, Some(0));
        // One echo 3 by coldtrace itself leaves the echo 2 of someone else.
        let other = change.less_own(1);
        assert_eq!((other.drop_pagecache, other.drop_slab), (Some(0), Some(1)));
        // Readings out of order (another boot's, or a later one) say nothing.
        assert_eq!(then.since(&now).drop_pagecache, None);
        assert_eq!(then.since(&now).seconds, None);
        // A kernel without the counters (before Linux 4.x for drop_*, 5.8 for *_file).
        let old = CacheHistory::parse(b"pgpgin 5\n", Some(1.0));
        assert_eq!(old.since_boot().drops(), None);
    }

    #[test]
    fn this_kernel_counts_drops_and_file_reclaim() {
        let h = CacheHistory::read();
        assert!(
            h.drop_pagecache.is_some() && h.drop_slab.is_some() && h.pgsteal_file.is_some(),
            "{h:?}"
        );
        assert!(h.uptime_s.is_some_and(|s| s > 0.0));
    }
}
