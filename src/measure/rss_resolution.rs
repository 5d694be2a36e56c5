//! How finely the kernel's max RSS resolves: since Linux 6.2 a process's resident-set counters
//! (file, anonymous and shared-memory pages) are per-CPU counters ([percpu_counter]), and the
//! high-water mark that becomes `ru_maxrss` reads only their folded, global part
//! (`get_mm_rss` → `percpu_counter_read_positive`). Each CPU keeps up to `batch − 1` pages of
//! each counter unfolded, `batch` being `max(32, 2 × online CPUs)`, so a max RSS can read that
//! much below the truth: a program that touches a few dozen pages reads 0. Pure; the caller
//! gives the kernel release and the CPU count.
//!
//! [percpu_counter]: https://docs.kernel.org/core-api/percpu_counter.html
#![forbid(unsafe_code)]

/// The resident-set counters that make up RSS: `MM_FILEPAGES`, `MM_ANONPAGES`,
/// `MM_SHMEMPAGES`.
const RSS_COUNTERS: u64 = 3;

/// The most a max RSS can read below the process's real peak, in KiB, on a kernel of `release`
/// (`uname -r`) with `cpus` online CPUs and pages of `page_kib` KiB: counters × CPUs ×
/// (`max(32, 2 × CPUs)` − 1) pages. `None` before Linux 6.2 (counters cached per thread, a
/// bound not worked out here) and when the release cannot be read.
pub fn max_rss_resolution_kib(release: &str, cpus: u64, page_kib: u64) -> Option<u64> {
    let mut numbers = release
        .split(|c: char| !c.is_ascii_digit())
        .map(|n| n.parse::<u64>().ok());
    let (major, minor) = (numbers.next()??, numbers.next()??);
    if (major, minor) < (6, 2) || cpus == 0 {
        return None;
    }
    let batch = (2 * cpus).max(32);
    Some(RSS_COUNTERS * cpus * (batch - 1) * page_kib)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_cpu_hides_a_batch_of_each_counter_since_6_2() {
        // This project's VM: 2 CPUs, 4 KiB pages: 3 × 2 × 31 pages.
        assert_eq!(max_rss_resolution_kib("6.18.44-fc-v1272", 2, 4), Some(744));
        // From 16 CPUs on the batch grows with them: 3 × 64 × 127 pages.
        assert_eq!(
            max_rss_resolution_kib("6.2.0", 64, 4),
            Some(3 * 64 * 127 * 4)
        );
        assert_eq!(max_rss_resolution_kib("6.1.112-1", 2, 4), None);
        assert_eq!(max_rss_resolution_kib("5.15.0-91-generic", 8, 4), None);
        assert_eq!(max_rss_resolution_kib("garbage", 2, 4), None);
        assert_eq!(max_rss_resolution_kib("6.8", 0, 4), None);
    }
}
