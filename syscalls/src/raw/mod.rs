//! THE unsafe room: every `unsafe` of coldtrace is in this directory, and nothing else is here.
//! Its files: `mod.rs` (system calls of the parent: waiting, signals, page-cache residency),
//! `child.rs` (everything that runs in the vfork child, and the raw system call), `clone.rs`
//! (the one call of the trampoline, shared by the library and the spawner), `spawn.rs` (the
//! parent's side of the clone: the child's stack, the vouched signals), `perf.rs` and `ring.rs`
//! (a perf event and its ring buffer shared with the kernel), `spawner.rs` (the spawner
//! program's own room, compiled only into it), `alloc.rs` (the allocator that ends a program on
//! a null block) and, in unit-test builds, `test_support.rs`. Declarations are in
//! [`crate::abi`]; the clone's arguments and the types its proof rests on in
//! `crate::clone_args`; the safe steps around the calls in [`crate::parent_side`]; safe fronts
//! with the full documentation in [`crate::spawn`], [`crate::wait`], [`crate::signal`],
//! [`crate::cache`], [`crate::perf`] and [`crate::ring`].
//!
//! The auditors' inventory — every unsafe item, one row each, and why it holds — is this
//! module's page: `inventory.md`, beside this file.
#![doc = include_str!("inventory.md")]
#![allow(unsafe_code)]

#[cfg(feature = "std")]
pub mod alloc;
mod child;
mod clone;
pub(crate) mod perf;
pub(crate) mod ring;
pub mod spawn;
#[cfg(test)]
pub(crate) mod test_support;

pub(crate) use child::{sigaction_default, sigaction_query, sigprocmask, syscall6};

use crate::abi::{self, nr, CacheStat, CacheStatRange, Rusage, SigInfoWords};
use crate::errno::{check, Errno};
use core::mem::MaybeUninit;
use rustix::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

/// One `wait4(pid, &status, options, &rusage)`: `Ok(None)` for 0 (WNOHANG, nothing yet).
pub(crate) fn wait4(pid: i32, options: i32) -> Result<Option<(i32, i32, Rusage)>, Errno> {
    let mut status: i32 = 0;
    let mut usage = MaybeUninit::<Rusage>::uninit();
    let (st, ru) = (
        &mut status as *mut i32 as usize,
        usage.as_mut_ptr() as usize,
    );
    let args = [pid as isize as usize, st, options as usize, ru, 0, 0];
    // SAFETY:
    // - Valid and aligned: `status` is a live `i32`; `usage` a live `MaybeUninit<Rusage>` whose
    //   layout is the kernel's 64-bit `struct rusage` (asserted in `abi`).
    // - No aliasing: both are locals borrowed for this call only; the kernel only writes them.
    let ret = unsafe { syscall6(nr::WAIT4, args) };
    match check(ret)? {
        0 => Ok(None),
        child => {
            // SAFETY: initialised before read: on a positive return the kernel has done
            // `copy_to_user(ru, &r, sizeof(struct rusage))` of the whole struct
            // (`SYSCALL_DEFINE4(wait4)` in kernel/exit.c; a failed copy returns EFAULT). `Rusage` is fourteen `i64` and two
            // timevals of two `i64`: no padding, and every bit pattern is a valid value.
            let usage = unsafe { usage.assume_init() };
            Ok(Some((child as i32, status, usage)))
        }
    }
}

/// One `waitid(P_ALL, 0, &info, WEXITED | WNOHANG | WNOWAIT, NULL)`: the PID of an exited
/// child, left waitable, or `None`.
pub(crate) fn waitid_exited_any() -> Result<Option<i32>, Errno> {
    let mut info: SigInfoWords = [0; 32];
    let options = abi::WEXITED | abi::WNOHANG | abi::WNOWAIT;
    let args = [abi::P_ALL, 0, info.as_mut_ptr() as usize, options, 0, 0];
    // SAFETY: `info` is a live, aligned, zero-initialised 128-byte local (`sizeof(siginfo_t)`),
    // borrowed for the call only; the kernel writes six `int` fields into it with put_user
    // (`SYSCALL_DEFINE5(waitid)` in kernel/exit.c).
    check(unsafe { syscall6(nr::WAITID, args) })?;
    Ok(Some(info[abi::SI_PID_WORD]).filter(|&pid| pid > 0))
}

/// One `waitid(P_PIDFD, pidfd, &info, WEXITED | WNOHANG | WNOWAIT, &rusage)`: the resource
/// usage of an exited child, left waitable, or `None` while it runs.
///
/// waitid(2) documents the raw call's fifth argument, not that `WNOWAIT` still fills it. The
/// kernel does: `wait_task_zombie()` in kernel/exit.c, on its `WNOWAIT` path, calls
/// `getrusage(p, RUSAGE_BOTH, wo->wo_rusage)` on the zombie, the same call its reaping path
/// makes for `wait4`, so the two agree; `SYSCALL_DEFINE5(waitid)` copies it out only when a
/// child was found (`info` says so). Read in Linux 6.1.192 and 6.12.118.
pub(crate) fn waitid_pidfd_usage(pidfd: BorrowedFd<'_>) -> Result<Option<Rusage>, Errno> {
    let mut info: SigInfoWords = [0; 32];
    let mut usage = Rusage::default();
    let options = abi::WEXITED | abi::WNOHANG | abi::WNOWAIT;
    let (fd, inf, ru) = (
        pidfd.as_raw_fd() as usize,
        info.as_mut_ptr() as usize,
        &mut usage as *mut Rusage as usize,
    );
    let args = [abi::P_PIDFD, fd, inf, options, ru, 0];
    // SAFETY: valid and aligned: `info` is a live, zero-initialised 128-byte local
    // (`sizeof(siginfo_t)`) and `usage` a live, initialised `Rusage` with the kernel's 64-bit
    // `struct rusage` layout (asserted in `abi`); no aliasing: both are locals borrowed for
    // this call only, which the kernel only writes; `pidfd` is borrowed, so open.
    check(unsafe { syscall6(nr::WAITID, args) })?;
    Ok((info[abi::SI_PID_WORD] > 0).then_some(usage))
}

/// `kill(pid, sig)` for one process (`pid > 0`). 0 (the caller's group) and -1 (every
/// process it may signal) are refused with `EINVAL`: no safe caller can reach them.
pub(crate) fn kill(pid: i32, signal: i32) -> Result<(), Errno> {
    if pid <= 0 {
        return Err(Errno::INVAL);
    }
    kill_unchecked(pid, signal)
}

/// `kill(-pgid, sig)` for one process group (`pgid > 1`); anything else is `EINVAL`.
pub(crate) fn kill_group(pgid: i32, signal: i32) -> Result<(), Errno> {
    if pgid <= 1 {
        return Err(Errno::INVAL);
    }
    kill_unchecked(pgid.wrapping_neg(), signal)
}

fn kill_unchecked(pid: i32, signal: i32) -> Result<(), Errno> {
    let args = [pid as isize as usize, signal as usize, 0, 0, 0, 0];
    // SAFETY: integer arguments only; sending a signal touches no memory of this process (one
    // to ourselves is handled by the signal machinery like any other).
    check(unsafe { syscall6(nr::KILL, args) })?;
    Ok(())
}

/// `pidfd_send_signal(pidfd, sig, NULL, flags)`.
pub(crate) fn pidfd_send_signal(fd: BorrowedFd<'_>, sig: i32, flags: usize) -> Result<(), Errno> {
    let args = [fd.as_raw_fd() as usize, sig as usize, 0, flags, 0, 0];
    // SAFETY: `fd` is borrowed, so open for the call; info = NULL, so no memory is passed.
    check(unsafe { syscall6(nr::PIDFD_SEND_SIGNAL, args) })?;
    Ok(())
}

/// `close_range(u32::MAX, u32::MAX, 0)`: whether the call is allowed here, closing nothing.
pub(crate) fn close_range_probe() -> Result<(), Errno> {
    let last = u32::MAX as usize;
    // SAFETY: integer arguments only. Descriptor 4294967295 is never open (the kernel caps
    // descriptors below fs.nr_open ≤ 2^30), so the call closes nothing any value owns.
    check(unsafe { syscall6(nr::CLOSE_RANGE, [last, last, 0, 0, 0, 0]) })?;
    Ok(())
}

/// `signalfd4(-1, &mask, 8, SFD_CLOEXEC | SFD_NONBLOCK)`.
pub(crate) fn signalfd(mask: u64) -> Result<OwnedFd, Errno> {
    let flags = abi::SFD_CLOEXEC | abi::SFD_NONBLOCK;
    let args = [usize::MAX, &mask as *const u64 as usize, 8, flags, 0, 0];
    // SAFETY: `mask` is a live, aligned `u64` the kernel reads (sizemask = 8); fd -1 asks for
    // a new descriptor, so no existing one is touched.
    let fd = check(unsafe { syscall6(nr::SIGNALFD4, args) })? as i32;
    // SAFETY: the kernel just returned `fd` as a new descriptor of this process that no other
    // value owns, so the `OwnedFd` closes it exactly once.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// `cachestat(fd, &range, &stat, 0)`.
pub(crate) fn cachestat(fd: BorrowedFd<'_>, range: CacheStatRange) -> Result<CacheStat, Errno> {
    let mut stat = MaybeUninit::<CacheStat>::uninit();
    let (range_ptr, stat_ptr) = (&range as *const CacheStatRange as usize, stat.as_mut_ptr());
    let args = [
        fd.as_raw_fd() as usize,
        range_ptr,
        stat_ptr as usize,
        0,
        0,
        0,
    ];
    // SAFETY: `range` is a live, aligned `#[repr(C)]` local the kernel reads; `stat` a live,
    // aligned `MaybeUninit` with the kernel's layout (asserted in `abi`) that it writes. `fd`
    // is borrowed, so open for the call. flags = 0 as the kernel requires.
    check(unsafe { syscall6(nr::CACHESTAT, args) })?;
    // SAFETY: initialised before read: on success the kernel has copied the whole struct
    // (`copy_to_user(cstat, &cs, sizeof(struct cachestat))` in `SYSCALL_DEFINE4(cachestat)`,
    // mm/filemap.c); five `u64`, so every bit pattern is valid.
    Ok(unsafe { stat.assume_init() })
}

/// Maps `window` bytes of `fd` at `off` (page aligned) read-only, lets `mincore` fill `vec`
/// (one byte per page; `vec` must hold them), and unmaps the window.
pub(crate) fn mincore_window(
    fd: BorrowedFd<'_>,
    off: u64,
    window: usize,
    vec: &mut [u8],
) -> Result<(), Errno> {
    use rustix::mm::{mmap, munmap, MapFlags, ProtFlags};
    if window == 0 || vec.len() < window.div_ceil(rustix::param::page_size()) {
        return Err(Errno::INVAL);
    }
    let (null, read, shared) = (core::ptr::null_mut(), ProtFlags::READ, MapFlags::SHARED);
    // SAFETY: a null hint lets the kernel choose fresh addresses, so no existing mapping (and
    // no Rust-owned memory) is replaced. The mapping is read-only and never dereferenced.
    let addr = unsafe { mmap(null, window, read, shared, fd, off) }.map_err(Errno::from)?;
    let args = [addr as usize, window, vec.as_mut_ptr() as usize, 0, 0, 0];
    // SAFETY: `addr..addr+window` is the page-aligned mapping just created; `vec` is a live,
    // exclusively borrowed buffer of at least one byte per page of it (checked above), the
    // bytes the kernel writes.
    let ret = unsafe { syscall6(nr::MINCORE, args) };
    // SAFETY: `addr`/`window` is exactly the mapping created above, owned here and never
    // borrowed or dereferenced, so unmapping it invalidates no Rust reference.
    let unmapped = unsafe { munmap(addr, window) };
    check(ret)?;
    unmapped.map_err(Errno::from)
}
