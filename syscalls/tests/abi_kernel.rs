//! Every system call number, flag and struct layout of `coldtrace_syscalls::abi` against the
//! kernel's own headers as `linux-raw-sys` translates them (bindgen over the UAPI headers of
//! one Linux release). The comparisons are `const` assertions: they are checked when this file
//! compiles, for the target it compiles for. The test below compiles it for the other
//! architecture too (`cargo check --target`, nothing to link or run), so x86_64 and aarch64
//! are both checked from either machine.
//!
//! Not in `linux-raw-sys`, so checked by their size assertions in `abi` only:
//! `perf_event_attr` (and its flags), `PIDFD_SIGNAL_PROCESS_GROUP`, the 128-byte `siginfo_t`
//! word index of `si_pid`.
#![forbid(unsafe_code)]

use coldtrace_syscalls::abi::{self, clone_flags as cf, nr};
use core::mem::{align_of, offset_of, size_of};
use linux_raw_sys::general as k;
use linux_raw_sys::net as n;

/// `$ours == $kernel` for each pair, as integers.
macro_rules! same {
    ($($ours:expr => $kernel:expr),* $(,)?) => {
        $(const _: () = assert!($ours as u64 == $kernel as u64, stringify!($ours));)*
    };
}

same! {
    nr::CLOSE => k::__NR_close,
    nr::RT_SIGACTION => k::__NR_rt_sigaction,
    nr::RT_SIGPROCMASK => k::__NR_rt_sigprocmask,
    nr::MINCORE => k::__NR_mincore,
    nr::GETPID => k::__NR_getpid,
    nr::TGKILL => k::__NR_tgkill,
    nr::EXECVE => k::__NR_execve,
    nr::WAIT4 => k::__NR_wait4,
    nr::KILL => k::__NR_kill,
    nr::FCNTL => k::__NR_fcntl,
    nr::CHDIR => k::__NR_chdir,
    nr::SETPGID => k::__NR_setpgid,
    nr::EXIT_GROUP => k::__NR_exit_group,
    nr::WAITID => k::__NR_waitid,
    nr::SIGNALFD4 => k::__NR_signalfd4,
    nr::DUP3 => k::__NR_dup3,
    nr::PERF_EVENT_OPEN => k::__NR_perf_event_open,
    nr::CLONE => k::__NR_clone,
    nr::WRITE => k::__NR_write,
    nr::OPENAT => k::__NR_openat,
    nr::GETDENTS64 => k::__NR_getdents64,
    nr::PRLIMIT64 => k::__NR_prlimit64,
    nr::PRCTL => k::__NR_prctl,
    nr::GETPPID => k::__NR_getppid,
    nr::RECVMSG => k::__NR_recvmsg,
    nr::SENDMSG => k::__NR_sendmsg,
    nr::CLOCK_GETTIME => k::__NR_clock_gettime,
    nr::MMAP => k::__NR_mmap,
    nr::PIDFD_SEND_SIGNAL => k::__NR_pidfd_send_signal,
    nr::CLONE3 => k::__NR_clone3,
    nr::CLOSE_RANGE => k::__NR_close_range,
    nr::CACHESTAT => k::__NR_cachestat,
}

same! {
    cf::CLONE_VM => k::CLONE_VM,
    cf::CLONE_PIDFD => k::CLONE_PIDFD,
    cf::CLONE_VFORK => k::CLONE_VFORK,
    cf::CLONE_PARENT => k::CLONE_PARENT,
    cf::CLONE_PARENT_SETTID => k::CLONE_PARENT_SETTID,
    cf::CLONE_CLEAR_SIGHAND => k::CLONE_CLEAR_SIGHAND,
    cf::CLONE_INTO_CGROUP => k::CLONE_INTO_CGROUP,
    cf::SIGCHLD => k::SIGCHLD,
    abi::F_SETFD => k::F_SETFD,
    abi::ENOEXEC => linux_raw_sys::errno::ENOEXEC,
    abi::PR_SET_PDEATHSIG => linux_raw_sys::prctl::PR_SET_PDEATHSIG,
    abi::F_DUPFD_CLOEXEC => k::F_DUPFD_CLOEXEC,
    abi::O_CLOEXEC => k::O_CLOEXEC,
    abi::CLOCK_MONOTONIC => k::CLOCK_MONOTONIC,
    abi::PR_SET_NAME => linux_raw_sys::prctl::PR_SET_NAME,
    abi::PROT_READ_WRITE => k::PROT_READ | k::PROT_WRITE,
    abi::MAP_SHARED => k::MAP_SHARED,
    abi::SOL_SOCKET => n::SOL_SOCKET,
    abi::SCM_RIGHTS => n::SCM_RIGHTS,
    abi::MSG_CMSG_CLOEXEC => n::MSG_CMSG_CLOEXEC,
    abi::MSG_CTRUNC => n::MSG_CTRUNC,
    abi::MSG_NOSIGNAL => n::MSG_NOSIGNAL,
    abi::CMSG_HEADER => size_of::<n::cmsghdr>(),
    size_of::<abi::MsgHdr>() => size_of::<n::msghdr>(),
    offset_of!(abi::MsgHdr, iov) => offset_of!(n::msghdr, msg_iov),
    offset_of!(abi::MsgHdr, control) => offset_of!(n::msghdr, msg_control),
    offset_of!(abi::MsgHdr, controllen) => offset_of!(n::msghdr, msg_controllen),
    offset_of!(abi::MsgHdr, flags) => offset_of!(n::msghdr, msg_flags),
    size_of::<abi::IoVec>() => size_of::<k::iovec>(),
    abi::SFD_CLOEXEC => k::O_CLOEXEC,
    abi::SFD_NONBLOCK => k::O_NONBLOCK,
    abi::P_ALL => k::P_ALL,
    abi::WNOHANG => k::WNOHANG,
    abi::WEXITED => k::WEXITED,
    abi::WNOWAIT => k::WNOWAIT,
    abi::SIG_DFL => 0u32,
    abi::SIG_IGN => 1u32,
    abi::RLIMIT_NOFILE => k::RLIMIT_NOFILE,
    abi::O_DIRECTORY_CLOEXEC => k::O_RDONLY | k::O_DIRECTORY | k::O_CLOEXEC,
    abi::DIRENT64_RECLEN => offset_of!(k::linux_dirent64, d_reclen),
    abi::DIRENT64_NAME => offset_of!(k::linux_dirent64, d_name),
    abi::Wait4Options::NOHANG.bits() => k::WNOHANG,
    abi::Wait4Options::UNTRACED.bits() => k::WUNTRACED,
    abi::Wait4Options::CONTINUED.bits() => k::WCONTINUED,
    abi::MaskHow::Block => k::SIG_BLOCK,
    abi::MaskHow::Unblock => k::SIG_UNBLOCK,
    abi::MaskHow::SetMask => k::SIG_SETMASK,
}
const _: () = assert!(abi::AT_FDCWD == k::AT_FDCWD as isize);

/// Size, alignment and the offset of every field, ours against the kernel's.
macro_rules! layout {
    ($ours:ty => $kernel:ty { $($a:ident => $b:ident),* $(,)? }) => {
        const _: () = assert!(size_of::<$ours>() == size_of::<$kernel>(), stringify!($ours));
        const _: () = assert!(align_of::<$ours>() == align_of::<$kernel>(), stringify!($ours));
        $(const _: () = assert!(
            offset_of!($ours, $a) == offset_of!($kernel, $b),
            concat!(stringify!($ours), ".", stringify!($a))
        );)*
    };
}

layout!(abi::Timeval => k::__kernel_old_timeval { tv_sec => tv_sec, tv_usec => tv_usec });
layout!(abi::Rusage => k::rusage {
    ru_utime => ru_utime, ru_stime => ru_stime, ru_maxrss => ru_maxrss, ru_ixrss => ru_ixrss,
    ru_idrss => ru_idrss, ru_isrss => ru_isrss, ru_minflt => ru_minflt, ru_majflt => ru_majflt,
    ru_nswap => ru_nswap, ru_inblock => ru_inblock, ru_oublock => ru_oublock,
    ru_msgsnd => ru_msgsnd, ru_msgrcv => ru_msgrcv, ru_nsignals => ru_nsignals,
    ru_nvcsw => ru_nvcsw, ru_nivcsw => ru_nivcsw,
});
layout!(abi::CloneArgs => k::clone_args {
    flags => flags, pidfd => pidfd, child_tid => child_tid, parent_tid => parent_tid,
    exit_signal => exit_signal, stack => stack, stack_size => stack_size, tls => tls,
    set_tid => set_tid, set_tid_size => set_tid_size, cgroup => cgroup,
});
layout!(abi::Rlimit64 => k::rlimit64 { cur => rlim_cur, max => rlim_max });
layout!(abi::CacheStat => k::cachestat {
    nr_cache => nr_cache, nr_dirty => nr_dirty, nr_writeback => nr_writeback,
    nr_evicted => nr_evicted, nr_recently_evicted => nr_recently_evicted,
});
layout!(abi::CacheStatRange => k::cachestat_range { off => off, len => len });

// `KernelSigaction` is the kernel's `struct sigaction` padded to 64 bytes: the handler at the
// same offset, and room for all of it.
const _: () = assert!(offset_of!(k::kernel_sigaction, sa_handler_kernel) == 0);
const _: () = assert!(size_of::<abi::KernelSigaction>() >= size_of::<k::kernel_sigaction>());
// `siginfo_t` as `waitid` fills it: 128 bytes.
const _: () = assert!(size_of::<abi::SigInfoWords>() == size_of::<k::siginfo>());

/// The other architecture, checked by compiling this file for it.
#[test]
fn the_abi_matches_the_kernel_headers_on_the_other_architecture_too() {
    let other = if cfg!(target_arch = "x86_64") {
        "aarch64-unknown-linux-musl"
    } else {
        "x86_64-unknown-linux-musl"
    };
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let out = std::process::Command::new(env!("CARGO"))
        .current_dir(&root)
        .args(["check", "--locked", "--offline", "-p", "coldtrace-syscalls"])
        .args(["--test", "abi_kernel", "--target", other])
        .arg("--target-dir")
        .arg(root.join("target").join("abi-other-arch"))
        .env_remove("RUSTFLAGS")
        .output()
        .expect("run cargo check");
    assert!(
        out.status.success(),
        "the abi does not match the kernel headers for {other} (rustup target add {other}):\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
