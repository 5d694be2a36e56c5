//! THE unsafe module: every `unsafe` block of coldtrace lives here, in [`child`] or in [`perf`].
//!
//! # Safety — the auditors' inventory
//!
//! Read this module, `child.rs` and `perf.rs` and you have read the whole unsafe boundary. Everything else
//! in the workspace is `#![forbid(unsafe_code)]`. Each block below carries a `// SAFETY:` proof
//! with one point per obligation.
//!
//! | item | what is unsafe | invariants relied on | man page |
//! |---|---|---|---|
//! | [`syscall6`] | inline `syscall` / `svc 0` | registers the kernel clobbers are declared; memory effects are the caller's proof | [syscall(2)] |
//! | [`wait4`] | kernel writes `status` and `rusage` | both are live, aligned, exclusively borrowed locals; `rusage` is read only after a positive return | [wait4(2)] |
//! | [`kill`] | integers only | none (no memory is passed) | [kill(2)] |
//! | [`sigprocmask`] | kernel reads/writes two `u64` sets | both live locals, 8 bytes = `_NSIG / 8` | [rt_sigprocmask(2)] |
//! | [`set_default_disposition`], [`disposition`] | kernel reads/writes a `sigaction` | 64-byte zeroed buffer ≥ the kernel's 32-byte struct; handler at offset 0 | [rt_sigaction(2)] |
//! | [`signalfd`] | kernel reads the mask; new fd is wrapped as owned | mask live; a non-negative return is a fresh fd nobody else owns | [signalfd(2)] |
//! | [`cachestat`] | kernel reads a range and writes counts | both live, aligned, `#[repr(C)]` as in `<linux/mman.h>` | [cachestat(2)] |
//! | [`mincore_resident_pages`] | a temporary read-only shared mapping, `mincore` into a stack buffer | mapping created and destroyed here, never dereferenced; buffer sized for the window | [mmap(2)], [mincore(2)] |
//! | [`child::ChildStack`] | an anonymous mapping used as the child's stack | owned by the value, guard page below, unmapped on drop | [mmap(2)] |
//! | [`child::spawn`] | `clone(CLONE_VM \| CLONE_VFORK \| SIGCHLD)` through the C library's `clone`, and the child | child inputs live in the suspended parent's frame; the child only makes raw syscalls and ends in `execve` or `exit_group` | [clone(2)], [execve(2)], [vfork(2)] |
//! | [`perf::perf_event_open`] | kernel reads `attr.size` bytes of a `perf_event_attr` and may write `size` back (E2BIG); new fd is wrapped as owned | a private, exclusively borrowed copy of the `#[repr(C)]` struct (layout asserted = `PERF_ATTR_SIZE_VER8`, 136 bytes); `size` checked ≤ the struct before the call; a non-negative return is a fresh fd nobody else owns | [perf_event_open(2)] |
//!
//! # Why the C library's `clone` and raw syscalls elsewhere
//! The trampoline is the C library's `clone` (glibc or musl), declared by hand below: it is the
//! code every `posix_spawn` on the system already runs to switch to a new stack, call one function
//! and exit, on every architecture, so nothing returns twice into Rust code and no per-architecture
//! stack-switching assembly needs auditing here. Every other call is a raw system call through
//! [`syscall6`], because the C wrappers set the thread-local `errno`, and a `CLONE_VM` child
//! without `CLONE_SETTLS` shares the parent thread's TLS: the child must not touch it.
//!
//! [syscall(2)]: https://man7.org/linux/man-pages/man2/syscall.2.html
//! [wait4(2)]: https://man7.org/linux/man-pages/man2/wait4.2.html
//! [kill(2)]: https://man7.org/linux/man-pages/man2/kill.2.html
//! [rt_sigprocmask(2)]: https://man7.org/linux/man-pages/man2/sigprocmask.2.html
//! [rt_sigaction(2)]: https://man7.org/linux/man-pages/man2/sigaction.2.html
//! [signalfd(2)]: https://man7.org/linux/man-pages/man2/signalfd.2.html
//! [cachestat(2)]: https://man7.org/linux/man-pages/man2/cachestat.2.html
//! [mmap(2)]: https://man7.org/linux/man-pages/man2/mmap.2.html
//! [mincore(2)]: https://man7.org/linux/man-pages/man2/mincore.2.html
//! [clone(2)]: https://man7.org/linux/man-pages/man2/clone.2.html
//! [execve(2)]: https://man7.org/linux/man-pages/man2/execve.2.html
//! [vfork(2)]: https://man7.org/linux/man-pages/man2/vfork.2.html
//! [perf_event_open(2)]: https://man7.org/linux/man-pages/man2/perf_event_open.2.html
#![allow(unsafe_code)]

pub mod child;
pub mod perf;

use crate::errno::Errno;
use crate::rusage::ResourceUsage;
use crate::signal::{SigSet, Signal};
use crate::status::WaitStatus;
use core::mem::{size_of, MaybeUninit};
use rustix::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

#[cfg(not(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
)))]
compile_error!("coldtrace-syscalls supports Linux on x86_64 and aarch64 only");

/// System call numbers (`asm/unistd_64.h` on x86_64, `asm-generic/unistd.h` on aarch64).
#[allow(missing_docs)]
pub(crate) mod nr {
    #[cfg(target_arch = "x86_64")]
    mod arch {
        pub const RT_SIGACTION: usize = 13;
        pub const RT_SIGPROCMASK: usize = 14;
        pub const MINCORE: usize = 27;
        pub const EXECVE: usize = 59;
        pub const WAIT4: usize = 61;
        pub const FCNTL: usize = 72;
        pub const CHDIR: usize = 80;
        pub const SETPGID: usize = 109;
        pub const KILL: usize = 62;
        pub const EXIT_GROUP: usize = 231;
        pub const DUP3: usize = 292;
        pub const SIGNALFD4: usize = 289;
        pub const CLOSE: usize = 3;
    }
    #[cfg(target_arch = "aarch64")]
    mod arch {
        pub const RT_SIGACTION: usize = 134;
        pub const RT_SIGPROCMASK: usize = 135;
        pub const MINCORE: usize = 232;
        pub const EXECVE: usize = 221;
        pub const WAIT4: usize = 260;
        pub const FCNTL: usize = 25;
        pub const CHDIR: usize = 49;
        pub const SETPGID: usize = 154;
        pub const KILL: usize = 129;
        pub const EXIT_GROUP: usize = 94;
        pub const DUP3: usize = 24;
        pub const SIGNALFD4: usize = 74;
        pub const CLOSE: usize = 57;
    }
    pub use arch::*;
    pub const CLOSE_RANGE: usize = 436;
    pub const CACHESTAT: usize = 451;
}

/// `syscall(nr, a0, …, a5)` — one raw system call; returns the kernel's raw return register.
///
/// Unused arguments are passed as 0; the kernel ignores them.
///
/// # Safety
/// The caller must uphold the kernel's contract for `nr`: every argument that the kernel reads or
/// writes as a pointer must be valid, aligned and live for the call, and the call must not break
/// an invariant that Rust relies on (e.g. unmapping memory that is still borrowed).
#[inline(always)]
#[cfg(target_arch = "x86_64")]
pub(crate) unsafe fn syscall6(nr: usize, args: [usize; 6]) -> usize {
    let ret: usize;
    // SAFETY:
    // - `syscall` clobbers only rax (the result), rcx and r11, all declared; flags are restored.
    // - The kernel does not touch our stack (`nostack`); any memory it reads or writes is named
    //   by the arguments, which this function's contract leaves to the caller.
    unsafe {
        core::arch::asm!(
            "syscall",
            inlateout("rax") nr => ret,
            in("rdi") args[0], in("rsi") args[1], in("rdx") args[2],
            in("r10") args[3], in("r8") args[4], in("r9") args[5],
            lateout("rcx") _, lateout("r11") _,
            options(nostack, preserves_flags),
        );
    }
    ret
}

/// `syscall(nr, a0, …, a5)` — one raw system call; returns the kernel's raw return register.
///
/// # Safety
/// As on x86_64: the caller upholds the kernel's contract for `nr` and its pointer arguments.
#[inline(always)]
#[cfg(target_arch = "aarch64")]
pub(crate) unsafe fn syscall6(nr: usize, args: [usize; 6]) -> usize {
    let ret: usize;
    // SAFETY:
    // - `svc 0` clobbers only x0 (the result); x8 holds the number and is preserved.
    // - Memory effects are named by the arguments and left to the caller by the contract above.
    unsafe {
        core::arch::asm!(
            "svc 0",
            in("x8") nr,
            inlateout("x0") args[0] => ret,
            in("x1") args[1], in("x2") args[2], in("x3") args[3],
            in("x4") args[4], in("x5") args[5],
            options(nostack, preserves_flags),
        );
    }
    ret
}

/// Splits a raw return register into a value or an [`Errno`] (-4095..=-1 are errors).
#[inline(always)]
pub(crate) fn check(ret: usize) -> Result<usize, Errno> {
    if ret > (-4096isize) as usize {
        Err(Errno::from_raw((ret as isize).wrapping_neg() as i32))
    } else {
        Ok(ret)
    }
}

/// `struct timeval` as `wait4` writes it on 64-bit Linux.
#[repr(C)]
#[derive(Clone, Copy)]
struct Timeval {
    tv_sec: i64,
    tv_usec: i64,
}

/// `struct rusage` as the kernel writes it on 64-bit Linux (`<linux/resource.h>`).
#[repr(C)]
#[derive(Clone, Copy)]
struct Rusage {
    ru_utime: Timeval,
    ru_stime: Timeval,
    ru_maxrss: i64,
    ru_ixrss: i64,
    ru_idrss: i64,
    ru_isrss: i64,
    ru_minflt: i64,
    ru_majflt: i64,
    ru_nswap: i64,
    ru_inblock: i64,
    ru_oublock: i64,
    ru_msgsnd: i64,
    ru_msgrcv: i64,
    ru_nsignals: i64,
    ru_nvcsw: i64,
    ru_nivcsw: i64,
}

// The layout the kernel writes on both supported targets: 2 timevals + 14 longs.
const _: () = assert!(size_of::<Timeval>() == 16 && core::mem::align_of::<Timeval>() == 8);
const _: () = assert!(size_of::<Rusage>() == 144 && core::mem::align_of::<Rusage>() == 8);

impl Rusage {
    fn to_usage(self) -> ResourceUsage {
        let us = |t: Timeval| (t.tv_sec.max(0) as u64) * 1_000_000 + t.tv_usec.max(0) as u64;
        let n = |v: i64| v.max(0) as u64;
        ResourceUsage {
            user_us: us(self.ru_utime),
            sys_us: us(self.ru_stime),
            max_rss_kib: n(self.ru_maxrss),
            minor_faults: n(self.ru_minflt),
            major_faults: n(self.ru_majflt),
            block_in: n(self.ru_inblock),
            block_out: n(self.ru_oublock),
            voluntary_switches: n(self.ru_nvcsw),
            involuntary_switches: n(self.ru_nivcsw),
        }
    }
}

/// Options of [`wait4`] (`WNOHANG`, `WUNTRACED`, `WCONTINUED`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Wait4Options(i32);

impl Wait4Options {
    /// Block until the child changes state.
    pub const BLOCK: Wait4Options = Wait4Options(0);
    /// `WNOHANG`: return `None` at once if no child has changed state.
    pub const NOHANG: Wait4Options = Wait4Options(1);
    /// `WUNTRACED`: also report stopped children.
    pub const UNTRACED: Wait4Options = Wait4Options(2);
    /// `WCONTINUED`: also report children resumed by SIGCONT.
    pub const CONTINUED: Wait4Options = Wait4Options(8);

    /// Both sets of options.
    pub const fn union(self, other: Wait4Options) -> Wait4Options {
        Wait4Options(self.0 | other.0)
    }
}

/// `wait4(pid, &status, options, &rusage)` — wait for a child and collect its resource usage.
///
/// `pid` is as in `waitpid(2)`: a PID, `-1` for any child, `0` or `-pgid` for a group.
/// Retries on `EINTR`. Returns `Ok(None)` only with [`Wait4Options::NOHANG`] when no child has
/// changed state. The usage covers the child and its descendants that were waited for.
///
/// # Errors
/// `ECHILD` when there is no such child (or SIGCHLD is ignored, so children are auto-reaped);
/// `EINVAL` for bad options.
///
/// # References
/// [wait4(2)](https://man7.org/linux/man-pages/man2/wait4.2.html)
pub fn wait4(
    pid: i32,
    options: Wait4Options,
) -> Result<Option<(i32, WaitStatus, ResourceUsage)>, Errno> {
    let mut status: i32 = 0;
    let mut usage = MaybeUninit::<Rusage>::uninit();
    loop {
        // SAFETY:
        // - `status` is an initialised, live, aligned `i32` borrowed mutably for the call only.
        // - `usage` is a live, aligned `MaybeUninit<Rusage>` whose layout matches the kernel's
        //   `struct rusage` (asserted above); the kernel only writes it.
        // - Nothing else refers to either during the call.
        let ret = unsafe {
            syscall6(
                nr::WAIT4,
                [
                    pid as isize as usize,
                    &mut status as *mut i32 as usize,
                    options.0 as usize,
                    usage.as_mut_ptr() as usize,
                    0,
                    0,
                ],
            )
        };
        match check(ret) {
            Err(Errno::INTR) => continue,
            Err(e) => return Err(e),
            Ok(0) => return Ok(None),
            Ok(child) => {
                // SAFETY: the return value is positive, and on that path the kernel has copied a
                // full `struct rusage` into `usage` (kernel_wait4 → put_user of the whole struct;
                // a failed copy would have returned EFAULT instead).
                let usage = unsafe { usage.assume_init() };
                return Ok(Some((
                    child as i32,
                    WaitStatus::from_raw(status),
                    usage.to_usage(),
                )));
            }
        }
    }
}

/// How [`sigprocmask`] changes the mask.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MaskHow {
    /// `SIG_BLOCK`: add the set to the mask.
    Block = 0,
    /// `SIG_UNBLOCK`: remove the set from the mask.
    Unblock = 1,
    /// `SIG_SETMASK`: replace the mask.
    SetMask = 2,
}

/// `rt_sigprocmask(how, set, &old)` — change the calling thread's signal mask; returns the old one.
///
/// With `set = None` only reads the mask.
///
/// # References
/// [sigprocmask(2)](https://man7.org/linux/man-pages/man2/sigprocmask.2.html)
#[doc(alias = "rt_sigprocmask")]
pub fn sigprocmask(how: MaskHow, set: Option<SigSet>) -> Result<SigSet, Errno> {
    let new = set.map(SigSet::bits);
    let mut old: u64 = 0;
    let new_ptr = match &new {
        Some(bits) => bits as *const u64 as usize,
        None => 0,
    };
    // SAFETY:
    // - `new` (when given) and `old` are live, aligned `u64` locals; the kernel reads 8 bytes from
    //   the first and writes 8 bytes to the second (sigsetsize = 8 = _NSIG / 8 on Linux).
    // - Nothing else refers to them during the call. Changing the mask is not memory-unsafe.
    let ret = unsafe {
        syscall6(
            nr::RT_SIGPROCMASK,
            [
                how as usize,
                new_ptr,
                &mut old as *mut u64 as usize,
                8,
                0,
                0,
            ],
        )
    };
    check(ret).map(|_| SigSet::from_bits(old))
}

/// `kill(pid, sig)` — send a signal to a process (`pid > 0`) or a process group (`pid < -1`).
///
/// rustix's safe `kill_process` only takes the named standard signals; this takes any number
/// the kernel does (0 probes for existence, 32..=64 are the real-time signals).
///
/// # References
/// [kill(2)](https://man7.org/linux/man-pages/man2/kill.2.html)
pub fn kill(pid: i32, signal: i32) -> Result<(), Errno> {
    // SAFETY: integer arguments only; sending a signal touches no memory of this process
    // (a signal to ourselves is delivered like any other and handled by the signal machinery).
    let ret = unsafe {
        syscall6(
            nr::KILL,
            [pid as isize as usize, signal as isize as usize, 0, 0, 0, 0],
        )
    };
    check(ret).map(|_| ())
}

/// The kernel's `struct sigaction` (32 bytes on x86_64 and aarch64), padded to 64 bytes so that
/// the kernel can never write past it. Only `handler`, at offset 0 on every Linux layout, is read.
#[repr(C)]
pub(crate) struct KernelSigaction {
    pub(crate) handler: usize,
    rest: [u64; 7],
}

impl KernelSigaction {
    /// All zero: `SIG_DFL`, no flags, no restorer, empty mask, on every layout.
    pub(crate) const DEFAULT: KernelSigaction = KernelSigaction {
        handler: 0,
        rest: [0; 7],
    };
}

/// `SIG_DFL` and `SIG_IGN` as handler values.
pub(crate) const SIG_DFL: usize = 0;
pub(crate) const SIG_IGN: usize = 1;

/// What a signal's disposition is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Disposition {
    /// `SIG_DFL`.
    Default,
    /// `SIG_IGN`.
    Ignore,
    /// A handler function is installed.
    Handler,
}

/// `rt_sigaction(sig, NULL, &old)` — read a signal's disposition.
///
/// # References
/// [sigaction(2)](https://man7.org/linux/man-pages/man2/sigaction.2.html)
pub fn disposition(signal: Signal) -> Result<Disposition, Errno> {
    let mut old = KernelSigaction::DEFAULT;
    // SAFETY:
    // - No new action is passed (NULL), so nothing is installed.
    // - `old` is a live, aligned, exclusively borrowed 64-byte buffer, larger than the kernel's
    //   32-byte `struct sigaction` that it writes; sigsetsize = 8 as the kernel requires.
    let ret = unsafe {
        syscall6(
            nr::RT_SIGACTION,
            [
                signal.raw() as usize,
                0,
                &mut old as *mut KernelSigaction as usize,
                8,
                0,
                0,
            ],
        )
    };
    check(ret)?;
    Ok(match old.handler {
        SIG_DFL => Disposition::Default,
        SIG_IGN => Disposition::Ignore,
        _ => Disposition::Handler,
    })
}

/// `rt_sigaction(sig, SIG_DFL, NULL)` — restore a signal's default disposition.
///
/// Used at start-up for SIGCHLD: an inherited `SIG_IGN` makes the kernel auto-reap children, and
/// `wait4` would then fail with `ECHILD` and lose the child's usage.
///
/// # References
/// [sigaction(2)](https://man7.org/linux/man-pages/man2/sigaction.2.html)
pub fn set_default_disposition(signal: Signal) -> Result<(), Errno> {
    // SAFETY:
    // - The action is a live, all-zero `KernelSigaction` (SIG_DFL, no flags, no restorer), read
    //   by the kernel for its 32 bytes; no handler function pointer is installed.
    // - No old action is requested (NULL). sigsetsize = 8 as the kernel requires.
    let ret = unsafe {
        syscall6(
            nr::RT_SIGACTION,
            [
                signal.raw() as usize,
                &KernelSigaction::DEFAULT as *const KernelSigaction as usize,
                0,
                8,
                0,
                0,
            ],
        )
    };
    check(ret).map(|_| ())
}

/// `signalfd4(-1, mask, 8, SFD_CLOEXEC | SFD_NONBLOCK)` — a file descriptor that reads the
/// signals in `mask` (which the caller must block, in every thread, for them to queue there).
///
/// # References
/// [signalfd(2)](https://man7.org/linux/man-pages/man2/signalfd.2.html)
#[doc(alias = "signalfd4")]
pub fn signalfd(mask: SigSet) -> Result<OwnedFd, Errno> {
    const SFD_CLOEXEC: usize = 0o2_000_000;
    const SFD_NONBLOCK: usize = 0o4_000;
    let bits = mask.bits();
    // SAFETY:
    // - `bits` is a live, aligned `u64` that the kernel reads (sizemask = 8); fd -1 asks for a
    //   new descriptor, so no existing descriptor is touched.
    let ret = unsafe {
        syscall6(
            nr::SIGNALFD4,
            [
                (-1isize) as usize,
                &bits as *const u64 as usize,
                8,
                SFD_CLOEXEC | SFD_NONBLOCK,
                0,
                0,
            ],
        )
    };
    let fd = check(ret)? as i32;
    // SAFETY: the kernel just returned `fd` as a new descriptor of this process; no other value
    // owns it, so wrapping it in an `OwnedFd` (closed exactly once, on drop) is sound.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Page-cache state of a file range, in pages (`struct cachestat`, `<linux/mman.h>`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheStat {
    /// Pages in the page cache.
    pub nr_cache: u64,
    /// Dirty pages.
    pub nr_dirty: u64,
    /// Pages under writeback.
    pub nr_writeback: u64,
    /// Pages evicted from the cache.
    pub nr_evicted: u64,
    /// Pages evicted recently (a refault would count as thrashing).
    pub nr_recently_evicted: u64,
}

#[repr(C)]
struct CacheStatRange {
    off: u64,
    len: u64,
}

const _: () = assert!(size_of::<CacheStat>() == 40 && core::mem::align_of::<CacheStat>() == 8);
const _: () = assert!(size_of::<CacheStatRange>() == 16);

/// `cachestat(fd, &range, &stat, 0)` — page-cache residency of `len` bytes from `off` (`len = 0`
/// means to the end of the file), without mapping the file. Linux ≥ 6.5.
///
/// # Errors
/// `ENOSYS` on older kernels; `EPERM` when the caller could not write the file (the kernel then
/// refuses, rather than leak residency); `EBADF` for an `O_PATH` descriptor.
///
/// # References
/// [cachestat(2)](https://man7.org/linux/man-pages/man2/cachestat.2.html)
pub fn cachestat(fd: BorrowedFd<'_>, off: u64, len: u64) -> Result<CacheStat, Errno> {
    let range = CacheStatRange { off, len };
    let mut stat = MaybeUninit::<CacheStat>::uninit();
    // SAFETY:
    // - `range` is a live, aligned `#[repr(C)]` local that the kernel reads; `stat` a live,
    //   aligned `MaybeUninit<CacheStat>` with the kernel's layout (asserted) that it writes.
    // - `fd` is borrowed, so it stays open for the call. flags = 0 as the kernel requires.
    let ret = unsafe {
        syscall6(
            nr::CACHESTAT,
            [
                fd.as_raw_fd() as usize,
                &range as *const CacheStatRange as usize,
                stat.as_mut_ptr() as usize,
                0,
                0,
                0,
            ],
        )
    };
    check(ret)?;
    // SAFETY: cachestat returned 0, and on that path it has copied the whole struct to `stat`.
    Ok(unsafe { stat.assume_init() })
}

/// Counts the resident pages of the first `len` bytes of a file with `mmap` + `mincore(2)`,
/// one window at a time, without ever reading the mapped memory.
///
/// Beware (Linux ≥ 5.2): for a file the caller could not open for writing, `mincore` reports
/// every page as resident. Callers must treat that case as unknown.
///
/// # References
/// [mincore(2)](https://man7.org/linux/man-pages/man2/mincore.2.html),
/// [mmap(2)](https://man7.org/linux/man-pages/man2/mmap.2.html)
#[doc(alias = "mincore")]
pub fn mincore_resident_pages(fd: BorrowedFd<'_>, len: u64) -> Result<u64, Errno> {
    use rustix::mm::{MapFlags, ProtFlags};
    const WINDOW_PAGES: usize = 4096;
    let page = rustix::param::page_size() as u64;
    let mut vec = [0u8; WINDOW_PAGES];
    let mut resident = 0u64;
    let mut off = 0u64;
    while off < len {
        let window = (len - off).min(WINDOW_PAGES as u64 * page) as usize;
        // SAFETY:
        // - A null hint lets the kernel choose fresh addresses, so no existing mapping (and no
        //   Rust-owned memory) is replaced; `off` is a multiple of the page size.
        // - The mapping is read-only and is never dereferenced here; it only feeds mincore.
        let addr = unsafe {
            rustix::mm::mmap(
                core::ptr::null_mut(),
                window,
                ProtFlags::READ,
                MapFlags::SHARED,
                fd,
                off,
            )
        }
        .map_err(Errno::from)?;
        let pages = (window as u64).div_ceil(page) as usize;
        // SAFETY:
        // - `addr..addr+window` is the mapping just created, page aligned.
        // - `vec` is a live local of WINDOW_PAGES bytes ≥ `pages`, the number of bytes the kernel
        //   writes (one per page of the range); nothing else borrows it during the call.
        let ret = unsafe {
            syscall6(
                nr::MINCORE,
                [addr as usize, window, vec.as_mut_ptr() as usize, 0, 0, 0],
            )
        };
        // SAFETY: `addr`/`window` is exactly the mapping created above, owned by this loop and
        // never borrowed or dereferenced, so unmapping it cannot invalidate any Rust reference.
        let unmapped = unsafe { rustix::mm::munmap(addr, window) };
        check(ret)?;
        unmapped.map_err(Errno::from)?;
        resident += vec.iter().take(pages).filter(|&&b| b & 1 != 0).count() as u64;
        off += window as u64;
    }
    Ok(resident)
}
