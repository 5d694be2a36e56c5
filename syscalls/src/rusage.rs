//! [`ResourceUsage`]: what `wait4(2)` reports about a reaped child, in units named by the fields.
#![forbid(unsafe_code)]

/// The fields of `struct rusage` that Linux maintains for a reaped child and its waited-for
/// descendants (`getrusage(2)`). The fields Linux always leaves at zero (`ru_ixrss`, `ru_idrss`,
/// `ru_isrss`, `ru_nswap`, `ru_msgsnd`, `ru_msgrcv`, `ru_nsignals`) are deliberately absent, so
/// that nobody reports them as measurements.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct ResourceUsage {
    /// User CPU time, microseconds (`ru_utime`; tick-sampled by the kernel).
    pub user_us: u64,
    /// System CPU time, microseconds (`ru_stime`; tick-sampled by the kernel).
    pub sys_us: u64,
    /// Peak resident set size, KiB (`ru_maxrss`): the maximum over the child and its waited-for
    /// descendants, not the peak of the tree, and at least the runner's own high-water RSS when
    /// the child was created with vfork semantics (the kernel folds it in at exec).
    pub max_rss_kib: u64,
    /// Page faults served without I/O (`ru_minflt`).
    pub minor_faults: u64,
    /// Page faults on mapped pages that needed I/O (`ru_majflt`).
    pub major_faults: u64,
    /// 512-byte blocks read from storage (`ru_inblock`); cache hits are not counted.
    pub block_in: u64,
    /// 512-byte blocks written to storage (`ru_oublock`).
    pub block_out: u64,
    /// Voluntary context switches (`ru_nvcsw`): the child blocked, e.g. on I/O.
    pub voluntary_switches: u64,
    /// Involuntary context switches (`ru_nivcsw`): the child was preempted.
    pub involuntary_switches: u64,
}

impl ResourceUsage {
    /// The maintained fields of the kernel's `struct rusage` (negative values, which the kernel
    /// never writes, read as 0).
    pub(crate) fn from_kernel(ru: &crate::abi::Rusage) -> ResourceUsage {
        let us = |t: crate::abi::Timeval| {
            (t.tv_sec.max(0) as u64)
                .saturating_mul(1_000_000)
                .saturating_add(t.tv_usec.max(0) as u64)
        };
        let n = |v: i64| v.max(0) as u64;
        ResourceUsage {
            user_us: us(ru.ru_utime),
            sys_us: us(ru.ru_stime),
            max_rss_kib: n(ru.ru_maxrss),
            minor_faults: n(ru.ru_minflt),
            major_faults: n(ru.ru_majflt),
            block_in: n(ru.ru_inblock),
            block_out: n(ru.ru_oublock),
            voluntary_switches: n(ru.ru_nvcsw),
            involuntary_switches: n(ru.ru_nivcsw),
        }
    }
}
