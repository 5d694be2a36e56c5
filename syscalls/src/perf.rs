//! `perf_event_open(2)` with borrowed descriptors: what to count ([`PerfTarget`]) and the group
//! leader are typed, so no integer can stand for a descriptor the caller does not hold.
#![forbid(unsafe_code)]

pub use crate::abi::perf::*;
use crate::errno::Errno;
use core::mem::size_of;
use rustix::fd::{AsRawFd, BorrowedFd, OwnedFd};

/// Whom a counter counts (the `pid` argument of `perf_event_open`).
#[derive(Clone, Copy, Debug)]
pub enum PerfTarget<'a> {
    /// The calling thread (`pid = 0`) and, with `INHERIT`, the children it creates afterwards.
    CallingThread,
    /// The process or thread with this ID (> 0).
    Process(i32),
    /// Every process on one CPU (`pid = -1`; needs a CPU ≥ 0 and usually privilege).
    AllProcesses,
    /// The processes of a cgroup, by a descriptor of its directory (`PERF_FLAG_PID_CGROUP`,
    /// added here; needs a CPU ≥ 0).
    Cgroup(BorrowedFd<'a>),
}

/// `perf_event_open(attr, pid, cpu, group_fd, flags)` — open a performance counter; returns
/// its descriptor.
///
/// `cpu = -1` counts on any CPU. `group = None` makes a new group leader; `Some(leader)` joins
/// the leader's group (the descriptor is borrowed for the call only). Pass
/// [`PERF_FLAG_FD_CLOEXEC`] in `flags` unless the descriptor must survive `execve`.
///
/// # Errors
/// `EINVAL` also when `attr.size` exceeds `size_of::<PerfEventAttr>()` (refused here: the
/// kernel would read past the struct), for `PERF_FLAG_PID_CGROUP` in `flags` (use
/// [`PerfTarget::Cgroup`]) and for a [`PerfTarget::Process`] ≤ 0. From the kernel:
/// `ENOENT`/`EOPNOTSUPP`/`ENODEV` when the event (e.g. a hardware one without a PMU) does not
/// exist; `EACCES`/`EPERM` when `perf_event_paranoid` forbids it; `E2BIG` for a size the kernel
/// does not accept; `EMFILE`.
///
/// # References
/// [perf_event_open(2)](https://man7.org/linux/man-pages/man2/perf_event_open.2.html)
pub fn perf_event_open(
    attr: &PerfEventAttr,
    target: PerfTarget<'_>,
    cpu: i32,
    group: Option<BorrowedFd<'_>>,
    flags: u64,
) -> Result<OwnedFd, Errno> {
    if attr.size as usize > size_of::<PerfEventAttr>() || flags & PERF_FLAG_PID_CGROUP != 0 {
        return Err(Errno::INVAL);
    }
    let (pid, flags) = match target {
        PerfTarget::CallingThread => (0, flags),
        PerfTarget::Process(pid) if pid > 0 => (pid, flags),
        PerfTarget::Process(_) => return Err(Errno::INVAL),
        PerfTarget::AllProcesses => (-1, flags),
        PerfTarget::Cgroup(fd) => (fd.as_raw_fd(), flags | PERF_FLAG_PID_CGROUP),
    };
    let group_fd = group.map_or(-1, |fd| fd.as_raw_fd());
    // The kernel may write `size` back (E2BIG), so it gets a private copy, never `attr`.
    let mut copy = *attr;
    crate::raw::perf::perf_event_open(&mut copy, pid, cpu, group_fd, flags)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task_clock() -> PerfEventAttr {
        let mut attr = PerfEventAttr::counting(PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK);
        attr.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
        attr.flags = attr_flags::DISABLED | attr_flags::EXCLUDE_KERNEL | attr_flags::EXCLUDE_HV;
        attr
    }

    fn open(attr: &PerfEventAttr, group: Option<BorrowedFd<'_>>) -> Result<OwnedFd, Errno> {
        perf_event_open(
            attr,
            PerfTarget::CallingThread,
            -1,
            group,
            PERF_FLAG_FD_CLOEXEC,
        )
    }

    #[test]
    fn oversized_size_and_a_hand_passed_cgroup_flag_are_refused_before_the_kernel() {
        let mut attr = task_clock();
        attr.size = PERF_ATTR_SIZE_VER8 + 8;
        assert_eq!(open(&attr, None).err(), Some(Errno::INVAL));
        let attr = task_clock();
        let flags = PERF_FLAG_FD_CLOEXEC | PERF_FLAG_PID_CGROUP;
        let r = perf_event_open(&attr, PerfTarget::CallingThread, -1, None, flags);
        assert_eq!(r.err(), Some(Errno::INVAL));
        let r = perf_event_open(&attr, PerfTarget::Process(0), -1, None, 0);
        assert_eq!(r.err(), Some(Errno::INVAL));
    }

    #[test]
    fn the_kernel_writes_its_size_back_on_e2big() {
        // Size 32 is below PERF_ATTR_SIZE_VER0: the kernel rejects it and writes its own size
        // into `attr.size` — the reason the public function passes a private copy.
        let mut attr = task_clock();
        attr.size = 32;
        let err =
            crate::raw::perf::perf_event_open(&mut attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC).err();
        assert_eq!(err, Some(Errno::TOOBIG));
        assert!(attr.size >= 64, "kernel wrote back {}", attr.size);
        // The public function leaves the caller's struct alone.
        let mut shared = task_clock();
        shared.size = 32;
        let before = shared;
        let _ = open(&shared, None);
        assert_eq!(shared, before);
    }

    #[test]
    fn a_software_counter_opens_reads_three_words_and_leads_a_group() {
        use rustix::fd::AsFd;
        let attr = task_clock();
        let leader = open(&attr, None).expect("task-clock");
        let mut buf = [0u8; 24];
        let n = rustix::io::read(&leader, &mut buf).expect("read");
        assert_eq!(n, 24);
        // Disabled and never enabled: value, enabled and running are all 0.
        assert_eq!(buf, [0u8; 24]);
        // A member joins through the borrowed leader.
        let member = open(&attr, Some(leader.as_fd())).expect("a group member");
        assert_ne!(member.as_raw_fd(), leader.as_raw_fd());
    }
}
