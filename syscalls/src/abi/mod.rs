//! The kernel's ABI as plain declarations: system call numbers, flags, and the layouts of the
//! structs the kernel reads or writes, each with compile-time size and offset assertions.
//!
//! Nothing here is unsafe, and nothing here calls the kernel: [`crate::raw`] does, with these
//! declarations, so that an auditor of the unsafe room reads only unsafe operations and their
//! proofs. Numbers are from `asm/unistd_64.h` (x86_64) and `asm-generic/unistd.h` (aarch64);
//! calls added after Linux 5.0 have one number on every architecture.
#![forbid(unsafe_code)]

pub mod perf;

use core::mem::{align_of, offset_of, size_of};

/// The errno of a raw system call return register (-4095..=-1 are errors, as the kernel's ABI
/// defines), or 0. Inlined into the vfork child, so wrapping arithmetic only.
#[inline(always)]
pub(crate) fn errno_of(ret: usize) -> i32 {
    if ret > (-4096isize) as usize {
        (ret as isize).wrapping_neg() as i32
    } else {
        0
    }
}

/// System call numbers.
#[allow(missing_docs)]
pub mod nr {
    #[cfg(target_arch = "x86_64")]
    mod arch {
        pub const CLOSE: usize = 3;
        pub const RT_SIGACTION: usize = 13;
        pub const RT_SIGPROCMASK: usize = 14;
        pub const MINCORE: usize = 27;
        pub const GETPID: usize = 39;
        pub const TGKILL: usize = 234;
        pub const EXECVE: usize = 59;
        pub const WAIT4: usize = 61;
        pub const KILL: usize = 62;
        pub const FCNTL: usize = 72;
        pub const CHDIR: usize = 80;
        pub const SETPGID: usize = 109;
        pub const EXIT_GROUP: usize = 231;
        pub const WAITID: usize = 247;
        pub const SIGNALFD4: usize = 289;
        pub const DUP3: usize = 292;
        pub const PERF_EVENT_OPEN: usize = 298;
        pub const CLONE: usize = 56;
        pub const WRITE: usize = 1;
        pub const OPENAT: usize = 257;
        pub const GETDENTS64: usize = 217;
        pub const PRLIMIT64: usize = 302;
        pub const PRCTL: usize = 157;
        pub const GETPPID: usize = 110;
        pub const RECVMSG: usize = 47;
        pub const SENDMSG: usize = 46;
        pub const CLOCK_GETTIME: usize = 228;
        pub const MMAP: usize = 9;
    }
    #[cfg(target_arch = "aarch64")]
    mod arch {
        pub const CLOSE: usize = 57;
        pub const RT_SIGACTION: usize = 134;
        pub const RT_SIGPROCMASK: usize = 135;
        pub const MINCORE: usize = 232;
        pub const GETPID: usize = 172;
        pub const TGKILL: usize = 131;
        pub const EXECVE: usize = 221;
        pub const WAIT4: usize = 260;
        pub const KILL: usize = 129;
        pub const FCNTL: usize = 25;
        pub const CHDIR: usize = 49;
        pub const SETPGID: usize = 154;
        pub const EXIT_GROUP: usize = 94;
        pub const WAITID: usize = 95;
        pub const SIGNALFD4: usize = 74;
        pub const DUP3: usize = 24;
        pub const PERF_EVENT_OPEN: usize = 241;
        pub const CLONE: usize = 220;
        pub const WRITE: usize = 64;
        pub const OPENAT: usize = 56;
        pub const GETDENTS64: usize = 61;
        pub const PRLIMIT64: usize = 261;
        pub const PRCTL: usize = 167;
        pub const GETPPID: usize = 173;
        pub const RECVMSG: usize = 212;
        pub const SENDMSG: usize = 211;
        pub const CLOCK_GETTIME: usize = 113;
        pub const MMAP: usize = 222;
    }
    pub use arch::*;
    pub const PIDFD_SEND_SIGNAL: usize = 424;
    pub const CLONE3: usize = 435;
    pub const CLOSE_RANGE: usize = 436;
    pub const CACHESTAT: usize = 451;
}

/// `clone(2)` and `clone3(2)` flags (`<linux/sched.h>`), and the exit signal that `clone`
/// takes in the low byte of its flags (`clone3` in [`CloneArgs::exit_signal`]).
pub mod clone_flags {
    /// The child shares the parent's memory until it calls `execve`.
    pub const CLONE_VM: u64 = 0x0000_0100;
    /// The kernel allocates a pidfd for the child and stores it through `parent_tid` (`clone`)
    /// or [`super::CloneArgs::pidfd`] (Linux ≥ 5.2; older kernels ignore the bit of `clone`
    /// and leave the slot untouched).
    pub const CLONE_PIDFD: u64 = 0x0000_1000;
    /// The parent is suspended until the child calls `execve` or exits.
    pub const CLONE_VFORK: u64 = 0x0000_4000;
    /// The child's parent is the caller's parent (the spawner's children are coldtrace's);
    /// it inherits the caller's exit signal (`clone3` wants `exit_signal = 0` with it).
    pub const CLONE_PARENT: u64 = 0x0000_8000;
    /// The kernel stores the child's PID through `parent_tid` (`clone`: the same argument as
    /// `CLONE_PIDFD`'s slot, so one or the other) before the child runs.
    pub const CLONE_PARENT_SETTID: u64 = 0x0010_0000;
    /// `clone3` only (Linux ≥ 5.5): every signal with a handler is reset to `SIG_DFL` in the
    /// child by the kernel, before it runs; ignored signals stay ignored.
    pub const CLONE_CLEAR_SIGHAND: u64 = 0x1_0000_0000;
    /// `clone3` only (Linux ≥ 5.7): the child is born in the cgroup v2 directory whose
    /// descriptor is [`super::CloneArgs::cgroup`].
    pub const CLONE_INTO_CGROUP: u64 = 0x2_0000_0000;
    /// The signal sent to the parent when the child exits.
    pub const SIGCHLD: u64 = 17;
}

/// `struct clone_args` of `clone3(2)` (`<linux/sched.h>`), up to `cgroup`
/// (`CLONE_ARGS_SIZE_VER2`, 88 bytes). A kernel that knows a shorter struct accepts this one as
/// long as the fields it does not know are zero.
#[repr(C)]
#[derive(Clone, Copy, Default)]
#[allow(missing_docs)]
pub struct CloneArgs {
    pub flags: u64,
    pub pidfd: u64,
    pub child_tid: u64,
    pub parent_tid: u64,
    pub exit_signal: u64,
    pub stack: u64,
    pub stack_size: u64,
    pub tls: u64,
    pub set_tid: u64,
    pub set_tid_size: u64,
    pub cgroup: u64,
}

const _: () = assert!(size_of::<CloneArgs>() == 88 && align_of::<CloneArgs>() == 8);
const _: () = assert!(offset_of!(CloneArgs, stack) == 40 && offset_of!(CloneArgs, cgroup) == 80);

/// `struct rlimit64` as `prlimit64(2)` writes it.
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct Rlimit64 {
    /// The soft limit.
    pub cur: u64,
    /// The hard limit.
    pub max: u64,
}

const _: () = assert!(size_of::<Rlimit64>() == 16);

/// `RLIMIT_NOFILE`: one more than the highest descriptor number that can be opened.
pub const RLIMIT_NOFILE: usize = 7;
/// `openat(2)`: the current directory as the base of a relative path (unused for absolute).
pub const AT_FDCWD: isize = -100;
/// `open(2)` flags for listing a directory: `O_RDONLY | O_DIRECTORY | O_CLOEXEC`. `O_DIRECTORY`
/// is 0o200000 on x86_64 and 0o40000 on aarch64.
#[cfg(target_arch = "x86_64")]
pub const O_DIRECTORY_CLOEXEC: usize = 0o200_0000 | 0o20_0000;
/// `open(2)` flags for listing a directory: `O_RDONLY | O_DIRECTORY | O_CLOEXEC`.
#[cfg(target_arch = "aarch64")]
pub const O_DIRECTORY_CLOEXEC: usize = 0o200_0000 | 0o4_0000;
/// The offset of `d_reclen` and of `d_name` in `struct linux_dirent64` (`getdents64(2)`).
pub const DIRENT64_RECLEN: usize = 16;
/// The offset of `d_name` in `struct linux_dirent64`.
pub const DIRENT64_NAME: usize = 19;

/// `prctl(2)`: the signal the caller gets when its parent thread exits.
pub const PR_SET_PDEATHSIG: usize = 1;
/// `execve(2)`'s "Exec format error": the file is no executable the kernel knows (a script
/// without a `#!` line).
pub const ENOEXEC: i32 = 8;
/// `fcntl(2)`: set the descriptor flags (`FD_CLOEXEC`).
pub const F_SETFD: usize = 2;
/// `fcntl(2)`: a copy of the descriptor at the lowest free number ≥ the argument, close-on-exec.
pub const F_DUPFD_CLOEXEC: usize = 1030;
/// `O_CLOEXEC` (`dup3(2)`, `open(2)`): the same on x86_64 and aarch64.
pub const O_CLOEXEC: usize = 0o200_0000;
/// `clock_gettime(2)`: the clock coldtrace times runs with.
pub const CLOCK_MONOTONIC: usize = 1;
/// `prctl(2)`: set the calling thread's name (`comm`, 15 bytes and a NUL).
pub const PR_SET_NAME: usize = 15;
/// `mmap(2)`: `PROT_READ | PROT_WRITE`.
pub const PROT_READ_WRITE: usize = 3;
/// `mmap(2)`: `MAP_SHARED`.
pub const MAP_SHARED: usize = 1;

/// `struct iovec` (`<linux/uio.h>`): one buffer of `readv`/`recvmsg`.
#[repr(C)]
pub struct IoVec {
    /// The buffer's first byte.
    pub base: usize,
    /// Its length in bytes.
    pub len: usize,
}

const _: () = assert!(size_of::<IoVec>() == 16);

/// `struct msghdr` of `recvmsg(2)` and `sendmsg(2)` (`<linux/socket.h>`, 64-bit): addresses as integers.
#[repr(C)]
pub struct MsgHdr {
    /// The sender's address buffer (0: none).
    pub name: usize,
    /// Its length.
    pub namelen: u32,
    /// The buffers the data is scattered into.
    pub iov: usize,
    /// How many.
    pub iovlen: usize,
    /// The ancillary data buffer (`SCM_RIGHTS` descriptors).
    pub control: usize,
    /// Its length; the kernel writes back how much it used.
    pub controllen: usize,
    /// Written by the kernel: `MSG_CTRUNC` when descriptors did not fit.
    pub flags: i32,
}

const _: () = assert!(size_of::<MsgHdr>() == 56);
const _: () = assert!(offset_of!(MsgHdr, iov) == 16);
const _: () = assert!(offset_of!(MsgHdr, control) == 32);
const _: () = assert!(offset_of!(MsgHdr, flags) == 48);

/// `sizeof(struct cmsghdr)` (64-bit): `cmsg_len` (8), `cmsg_level` (4), `cmsg_type` (4); the
/// data follows, 8-byte aligned.
pub const CMSG_HEADER: usize = 16;
/// `SOL_SOCKET`, the level of `SCM_RIGHTS`.
pub const SOL_SOCKET: i32 = 1;
/// `SCM_RIGHTS`: descriptors passed over a Unix socket.
pub const SCM_RIGHTS: i32 = 1;
/// `recvmsg(2)` flag: received descriptors are close-on-exec.
pub const MSG_CMSG_CLOEXEC: usize = 0x4000_0000;
/// `sendmsg(2)` flag: a closed peer is `EPIPE`, without `SIGPIPE`.
pub const MSG_NOSIGNAL: usize = 0x4000;
/// `msg_flags` bit: some ancillary data was discarded for lack of room.
pub const MSG_CTRUNC: i32 = 8;
/// `signalfd4(2)` flags.
pub const SFD_CLOEXEC: usize = 0o2_000_000;
/// `signalfd4(2)` flags.
pub const SFD_NONBLOCK: usize = 0o4_000;
/// `pidfd_send_signal(2)` flag (Linux ≥ 6.9): to the process group of the pidfd's process.
pub const PIDFD_SIGNAL_PROCESS_GROUP: usize = 1 << 2;
/// `waitid(2)` id types.
pub const P_ALL: usize = 0;
/// `waitid(2)` id type: a pidfd (Linux ≥ 5.4).
pub const P_PIDFD: usize = 3;
/// `waitid(2)`: do not block.
pub const WNOHANG: usize = 1;
/// `waitid(2)`: report exited children.
pub const WEXITED: usize = 4;
/// `waitid(2)`: leave the child waitable.
pub const WNOWAIT: usize = 0x0100_0000;

/// `struct timeval` as `wait4` writes it on 64-bit Linux.
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct Timeval {
    /// Seconds.
    pub tv_sec: i64,
    /// Microseconds.
    pub tv_usec: i64,
}

/// `struct rusage` as the kernel writes it on 64-bit Linux (`<linux/resource.h>`): two
/// timevals and fourteen longs, with no padding, so every bit pattern is a valid value.
#[repr(C)]
#[derive(Clone, Copy, Default)]
#[allow(missing_docs)]
pub struct Rusage {
    pub ru_utime: Timeval,
    pub ru_stime: Timeval,
    pub ru_maxrss: i64,
    pub ru_ixrss: i64,
    pub ru_idrss: i64,
    pub ru_isrss: i64,
    pub ru_minflt: i64,
    pub ru_majflt: i64,
    pub ru_nswap: i64,
    pub ru_inblock: i64,
    pub ru_oublock: i64,
    pub ru_msgsnd: i64,
    pub ru_msgrcv: i64,
    pub ru_nsignals: i64,
    pub ru_nvcsw: i64,
    pub ru_nivcsw: i64,
}

const _: () = assert!(size_of::<Timeval>() == 16 && align_of::<Timeval>() == 8);
const _: () = assert!(size_of::<Rusage>() == 144 && align_of::<Rusage>() == 8);
const _: () = assert!(offset_of!(Rusage, ru_maxrss) == 32 && offset_of!(Rusage, ru_nivcsw) == 136);

/// Options of `wait4` (`WNOHANG`, `WUNTRACED`, `WCONTINUED`).
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

    /// The bits the kernel takes.
    pub const fn bits(self) -> i32 {
        self.0
    }
}

/// How `rt_sigprocmask` changes the mask.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MaskHow {
    /// `SIG_BLOCK`: add the set to the mask.
    Block = 0,
    /// `SIG_UNBLOCK`: remove the set from the mask.
    Unblock = 1,
    /// `SIG_SETMASK`: replace the mask.
    SetMask = 2,
    /// Test builds only: a value the kernel refuses with EINVAL.
    #[cfg(test)]
    #[doc(hidden)]
    Invalid = 3,
}

/// The kernel's `struct sigaction` (32 bytes on x86_64 and aarch64: handler, flags, restorer,
/// mask), padded to 64 bytes so that the kernel can never write past it. Only `handler`, at
/// offset 0 on every Linux layout, is read.
#[repr(C)]
pub struct KernelSigaction {
    /// `sa_handler`: `SIG_DFL` (0), `SIG_IGN` (1) or a function's address.
    pub handler: usize,
    rest: [u64; 7],
}

impl KernelSigaction {
    /// All zero: `SIG_DFL`, no flags, no restorer, empty mask, on every layout.
    pub const DEFAULT: KernelSigaction = KernelSigaction {
        handler: 0,
        rest: [0; 7],
    };
}

const _: () = assert!(size_of::<KernelSigaction>() == 64 && align_of::<KernelSigaction>() == 8);

/// `SIG_DFL` as a handler value.
pub const SIG_DFL: usize = 0;
/// `SIG_IGN` as a handler value.
pub const SIG_IGN: usize = 1;

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

/// `struct cachestat_range`: the byte range `cachestat` looks at.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct CacheStatRange {
    /// First byte.
    pub off: u64,
    /// Length in bytes; 0 means to the end of the file.
    pub len: u64,
}

const _: () = assert!(size_of::<CacheStat>() == 40 && align_of::<CacheStat>() == 8);
const _: () = assert!(size_of::<CacheStatRange>() == 16 && align_of::<CacheStatRange>() == 8);

/// `siginfo_t` as `waitid` fills it: 128 bytes; the kernel stores `si_signo`, `si_errno`,
/// `si_code` (words 0–2) and `si_pid`, `si_uid`, `si_status` (words 4–6) one by one.
pub type SigInfoWords = [i32; 32];
/// The index of `si_pid` in [`SigInfoWords`] (byte offset 16 on 64-bit Linux).
pub const SI_PID_WORD: usize = 4;
