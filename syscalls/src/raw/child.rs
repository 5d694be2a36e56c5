//! Everything that runs in the vfork child, and nothing else: the trampoline that starts it on
//! its own stack, `child_entry`, every step up to `execve`, and the raw system call it makes
//! them with (which the parent uses too). This file imports only plain data and pure functions
//! (`abi::errno_of`; `child_plan`: which descriptors are kept, a `getdents64` record's length
//! and the number in its name, a range split around the error pipe), so an auditor reads the
//! whole child here and there; it is core only, so that the spawner program
//! (`../spawner/main.rs`) compiles the same file.
//!
//! The child shares the parent's memory (`CLONE_VM`) and runs while the parent's thread is
//! suspended (`CLONE_VFORK`). It makes raw system calls only — no allocation, lock, panic path,
//! `Drop`, TLS, `errno`, nor any call into `core` (wrapping arithmetic, slice patterns, no
//! indexing), which `syscalls/tests/child_disassembly.rs` checks in the shipped optimisation and
//! in a debug build — and ends in `execve` or `exit_group(127)`. Errors are plain errno numbers
//! (0 = success); every function below `child_entry` is inlined into it.
#![allow(unsafe_code)]

use crate::abi::errno_of;
use crate::abi::{self, nr, KernelSigaction, MaskHow, Rlimit64, SIG_DFL, SIG_IGN};
use crate::child_plan::{after, around, descriptor_number, record_length, skip, DirBuffer};
use crate::child_plan::{ChildPlan, CloneCall, Closing, ExecPointers};
use core::ffi::{c_char, c_int, c_void, CStr};
use core::marker::PhantomData;

/// `syscall(nr, a0, …, a5)` — one raw system call; returns the kernel's raw return register.
///
/// # Safety
/// The caller upholds the kernel's contract for `nr`: every argument the kernel reads or writes
/// as a pointer is valid, aligned and live for the call, and the call breaks no invariant Rust
/// relies on (e.g. unmapping memory that is still borrowed).
#[inline(always)]
pub(crate) unsafe fn syscall6(nr: usize, args: [usize; 6]) -> usize {
    let [a0, a1, a2, a3, a4, a5] = args;
    let ret: usize;
    // SAFETY: x86_64's `syscall` clobbers only rax (the result), rcx and r11; aarch64's `svc 0`
    // only x0 (the result). All are declared; flags are preserved; the kernel does not use our
    // stack (`nostack`). Memory named by the arguments is the caller's proof (the contract).
    unsafe {
        #[cfg(target_arch = "x86_64")]
        core::arch::asm!(
            "syscall",
            inlateout("rax") nr => ret,
            in("rdi") a0, in("rsi") a1, in("rdx") a2, in("r10") a3, in("r8") a4, in("r9") a5,
            lateout("rcx") _, lateout("r11") _,
            options(nostack, preserves_flags),
        );
        #[cfg(target_arch = "aarch64")]
        core::arch::asm!(
            "svc 0",
            in("x8") nr, inlateout("x0") a0 => ret,
            in("x1") a1, in("x2") a2, in("x3") a3, in("x4") a4, in("x5") a5,
            options(nostack, preserves_flags),
        );
    }
    ret
}

/// `rt_sigprocmask(how, set, old, 8)` → 0 or an errno.
#[inline(always)]
pub(crate) fn sigprocmask(how: MaskHow, set: Option<&u64>, old: &mut u64) -> i32 {
    let new_ptr = match set {
        Some(bits) => bits as *const u64 as usize,
        None => 0,
    };
    let args = [how as usize, new_ptr, old as *mut u64 as usize, 8, 0, 0];
    // SAFETY: `set` (when given) and `old` are references, so live, aligned `u64`s; the kernel
    // reads 8 bytes from the first and writes 8 to the exclusively borrowed second (sigsetsize
    // = 8 = _NSIG / 8). Changing the mask touches no memory.
    errno_of(unsafe { syscall6(nr::RT_SIGPROCMASK, args) })
}

/// `rt_sigaction(sig, NULL, old, 8)` → 0 or an errno; `old.handler` is then the disposition.
#[inline(always)]
pub(crate) fn sigaction_query(signal: usize, old: &mut KernelSigaction) -> i32 {
    let args = [signal, 0, old as *mut KernelSigaction as usize, 8, 0, 0];
    // SAFETY: no new action (NULL), so nothing is installed; `old` is an exclusively borrowed
    // 64-byte struct, larger than the 32-byte `struct sigaction` the kernel writes.
    errno_of(unsafe { syscall6(nr::RT_SIGACTION, args) })
}

/// `rt_sigaction(sig, SIG_DFL, NULL, 8)` → 0 or an errno.
#[inline(always)]
pub(crate) fn sigaction_default(signal: usize) -> i32 {
    let action = KernelSigaction::DEFAULT;
    let act = &action as *const KernelSigaction as usize;
    let args = [signal, act, 0, 8, 0, 0];
    // SAFETY: `action` is a live, all-zero `KernelSigaction` (SIG_DFL, no flags, no restorer)
    // that the kernel reads for 32 bytes; no handler address is installed; no old action asked.
    errno_of(unsafe { syscall6(nr::RT_SIGACTION, args) })
}

/// Who puts the parent's signal handlers out of the child's way: derived from the clone call
/// in [`ChildInputs::new`], never chosen apart from it (`ClearedByKernel` is true of `clone3`
/// alone).
#[derive(Clone, Copy)]
enum Handlers {
    /// `clone3` with `CLONE_CLEAR_SIGHAND`: the kernel reset every handled signal before the
    /// child ran.
    ClearedByKernel,
    /// The child asks the kernel about each of the 64 signals and resets the handled ones.
    Query,
    /// The caller vouched that only these signals have handlers: the child resets them.
    Vouched(u64),
}

/// What the child reads, and the places it writes (`reached`, `failed_*`), in the parent's
/// frame. Made only by [`ChildInputs::new`], whose contract its fields keep (they are private
/// to this file).
pub(super) struct ChildInputs<'a> {
    exec: ExecPointers,
    cwd: *const c_char,
    /// The directory listed by [`Closing::Scan`] (`/proc/self/fd`), or null.
    scan_dir: *const c_char,
    plan: &'a ChildPlan<'a>,
    call: CloneCall,
    mask: u64,
    handlers: Handlers,
    /// The PID of the process that made the clone (read just before it), which the child
    /// compares with its parent's after `PR_SET_PDEATHSIG`; 0 without that option.
    parent_pid: usize,
    /// The write end of the close-on-exec error pipe, or -1 when the parent reads the failure
    /// from `failed_*` (its memory is really shared).
    error_pipe: c_int,
    /// Set to 1 by the child first thing: the parent sees it only if memory is really shared.
    reached: u32,
    failed_stage: u32,
    failed_errno: i32,
    /// The strings the pointers point to are borrowed for `'a`.
    _strings: PhantomData<&'a CStr>,
}

impl<'a> ChildInputs<'a> {
    /// The inputs of one spawn through `call` (built in the parent): the image's pointers, the
    /// plan, the error pipe's write end (-1: none), the caller's mask (the child's, unless the
    /// plan names one), and the PID the child's parent must have (see `parent_pid`; 0
    /// without a parent-death signal). Who resets the signal handlers follows from `call`:
    /// the kernel with `clone3`, the child with `clone` (all 64 queried, or just the vouched
    /// set of `plan.vouched`).
    ///
    /// # Safety
    /// - Every pointer of `exec` is that of a NUL-terminated string, or a null-terminated
    ///   array of such pointers, alive and unchanged for `'a` (the child passes them to
    ///   `execve` while the parent is suspended in the frame that holds them);
    /// - `plan.vouched`, when it is `Some(set)`, names every signal that has a handler in this
    ///   process, until the child has called `execve`: with `clone`, a handler outside it would
    ///   run in the child, on this process's memory.
    pub(super) unsafe fn new(
        exec: ExecPointers,
        plan: &'a ChildPlan<'a>,
        call: CloneCall,
        error_pipe: c_int,
        caller_mask: u64,
        parent_pid: usize,
    ) -> ChildInputs<'a> {
        let handlers = match (call, plan.vouched) {
            (CloneCall::Clone3 { .. }, _) => Handlers::ClearedByKernel,
            (CloneCall::Clone, Some(set)) => Handlers::Vouched(set),
            (CloneCall::Clone, None) => Handlers::Query,
        };
        ChildInputs {
            exec,
            cwd: plan.cwd.map_or(core::ptr::null(), CStr::as_ptr),
            scan_dir: match plan.closing {
                Closing::Scan(dir) => dir.as_ptr(),
                Closing::Ranges(_) => core::ptr::null(),
            },
            plan,
            call,
            mask: plan.mask.unwrap_or(caller_mask),
            handlers,
            parent_pid,
            error_pipe,
            reached: 0,
            failed_stage: 0,
            failed_errno: 0,
            _strings: PhantomData,
        }
    }

    /// The system call that starts the child, as [`ChildInputs::new`] was told.
    pub(super) fn call(&self) -> CloneCall {
        self.call
    }

    /// What the child wrote before `execve`: whether it ran on this memory (its marker
    /// reached the parent), and the stage and errno of a failure (0 and 0 without one).
    pub(super) fn report(&self) -> (bool, u32, i32) {
        (self.reached == 1, self.failed_stage, self.failed_errno)
    }
}

/// Starts a child with `clone` or `clone3` (system call `nr`, arguments `args`): in the parent
/// it returns the raw return register (the child's PID or `-errno`); the child, on the stack
/// the arguments name, calls `child_entry(inputs)`, which never returns.
///
/// The shape of musl's `__clone`, with the function and its argument in registers that the
/// system call leaves alone instead of on the new stack. In the child the kernel returns 0 in
/// rax/x0 with every other register as the parent had it at the system call (x86_64's
/// `syscall` overwrites rcx and r11 in both), and the stack pointer at the top of the new stack.
///
/// # Safety
/// - `nr` is `clone` or `clone3`, and `args` ask for a new stack (`clone`: its top as
///   `newsp`; `clone3`: `stack`, `stack_size`) whose top is 16-byte aligned, that is writable,
///   larger than `child_entry`'s deepest frame, and that nothing else uses until the child has
///   called `execve` or exited;
/// - the flags include `CLONE_VFORK`, so this thread is suspended until then, and `inputs`
///   points to a `ChildInputs` that lives in the suspended frame and that nothing else touches
///   meanwhile (with `CLONE_VM` the child reads and writes it; without, it gets a copy);
/// - every pointer in `args` (the pidfd slot, the `clone3` struct) is valid for the call.
#[inline(always)]
pub(super) unsafe fn clone_into_child(
    nr: usize,
    args: [usize; 5],
    inputs: *mut ChildInputs<'_>,
) -> usize {
    let [a0, a1, a2, a3, a4] = args;
    let ret: usize;
    // SAFETY: the caller's contract above. The parent's path through this block is the system
    // call alone: it changes rax/x0 (the result), rcx and r11 (x86_64), all declared, and the
    // flags (not declared preserved). The child's path never leaves the block: it clears the
    // frame pointer (and aarch64's link register) so that nothing walks into the parent's
    // frames, moves `inputs` into the first argument register, and calls `child_entry`, which
    // ends in `execve` or `exit_group`; the trap after the call is never reached. The child's
    // call pushes onto the new stack only, never onto this thread's stack, nor into its x86_64
    // red zone (`nostack`; the kernel does not touch user stacks on a system call either).
    // Alignment: the new top is 16-byte aligned, so x86_64's `call` enters `child_entry` with
    // rsp ≡ 8 (mod 16) as the ABI wants at a function's entry, and aarch64's `bl` leaves sp
    // 16-byte aligned, which the hardware checks. What the compiler may assume afterwards:
    // the block returns (the parent's path, so no `noreturn`), and without `nomem`/`readonly`
    // it may have read and written any memory whose address escaped — `inputs` (passed in),
    // the `clone_args` and pidfd slot (their addresses exposed by the casts to `usize`) — so
    // the stores that built them happen before it and the child's writes are read after it.
    // The child runs on the parent's thread pointer (no CLONE_SETTLS) and touches no
    // thread-local state.
    unsafe {
        #[cfg(target_arch = "x86_64")]
        core::arch::asm!(
            "syscall",
            "test rax, rax",
            "jnz 2f",
            "xor ebp, ebp",
            "mov rdi, r9",
            "call {entry}",
            "ud2",
            "2:",
            entry = sym child_entry,
            inlateout("rax") nr => ret,
            in("rdi") a0, in("rsi") a1, in("rdx") a2, in("r10") a3, in("r8") a4,
            in("r9") inputs,
            lateout("rcx") _, lateout("r11") _,
            options(nostack),
        );
        #[cfg(target_arch = "aarch64")]
        core::arch::asm!(
            "svc 0",
            "cbnz x0, 2f",
            "mov x29, xzr",
            "mov x30, xzr",
            "mov x0, x6",
            "bl {entry}",
            "udf #0",
            "2:",
            entry = sym child_entry,
            in("x8") nr,
            inlateout("x0") a0 => ret,
            in("x1") a1, in("x2") a2, in("x3") a3, in("x4") a4,
            in("x6") inputs,
            options(nostack),
        );
    }
    ret
}

/// The child's entry point, called by [`clone_into_child`] on the child's stack.
extern "C" fn child_entry(arg: *mut c_void) -> ! {
    // SAFETY: `arg` is the `*mut ChildInputs` that `raw::spawn` passed to the clone: non-null,
    // aligned, alive while this child runs (the parent is suspended in that frame), and the
    // only reference to it meanwhile. `transmute` rather than `&mut *`: a debug build inserts a
    // null check with a panic path at a raw-pointer reborrow, and the child must have none.
    #[allow(clippy::transmute_ptr_to_ref)]
    let c = unsafe { core::mem::transmute::<*mut c_void, &mut ChildInputs<'_>>(arg) };
    c.reached = 1;
    let (stage, errno) = prepare_and_exec(c);
    c.failed_errno = errno;
    c.failed_stage = stage;
    if c.error_pipe >= 0 {
        let report = [stage, errno as u32];
        let args = [
            c.error_pipe as usize,
            &report as *const [u32; 2] as usize,
            8,
            0,
            0,
            0,
        ];
        // SAFETY: `report` is a live 8-byte local the kernel reads; the descriptor is the pipe's
        // write end in the child's own table. 8 bytes ≤ PIPE_BUF: one atomic write.
        let _ = unsafe { syscall6(nr::WRITE, args) };
    }
    exit_group(127)
}

/// `stage!(n, errno)`: returns `(n, errno)` from `prepare_and_exec` unless `errno` is 0.
macro_rules! stage {
    ($n:expr, $errno:expr) => {
        let e = $errno;
        if e != 0 {
            return ($n, e);
        }
    };
}

/// Returns only on failure, with (stage, errno); on success `execve` replaces the image.
/// Stages as in `spawn::ChildStage`: 10 parent-death signal (first, to keep its window
/// short), 2 signals, 3 setpgid, 4 chdir, 5 dup3, 6 descriptors, 7 mask, 8 execve (where the
/// file has no executable format and a shell was given, the shell's `execve` follows; if that
/// fails too, the file's ENOEXEC is reported).
#[inline(always)]
fn prepare_and_exec(c: &ChildInputs<'_>) -> (u32, i32) {
    if let Some(signal) = c.plan.parent_death_signal {
        stage!(10, parent_death_signal(signal as usize, c.parent_pid));
    }
    stage!(2, reset_signals(c.handlers, c.plan.to_default));
    if c.plan.new_process_group {
        // SAFETY: integer arguments only; moves the child alone into a new process group.
        stage!(3, errno_of(unsafe { syscall6(nr::SETPGID, [0; 6]) }));
    }
    if c.cwd as usize != 0 {
        let args = [c.cwd as usize, 0, 0, 0, 0, 0];
        // SAFETY: `cwd` is the pointer of a NUL-terminated `&CStr` of the plan, which the
        // suspended parent's frame borrows for the spawn; the kernel only reads it.
        stage!(4, errno_of(unsafe { syscall6(nr::CHDIR, args) }));
    }
    let [fd0, fd1, fd2] = c.plan.stdio;
    stage!(5, dup3(fd0, 0));
    stage!(5, dup3(fd1, 1));
    stage!(5, dup3(fd2, 2));
    stage!(6, close_descriptors(c, c.plan.keep));
    stage!(7, sigprocmask(MaskHow::SetMask, Some(&c.mask), &mut 0));
    let args = [
        c.exec.path as usize,
        c.exec.argv as usize,
        c.exec.envp as usize,
        0,
        0,
        0,
    ];
    // SAFETY: `path` is NUL-terminated; `argv` and `envp` are NULL-terminated arrays of
    // NUL-terminated strings, alive and unchanged while the parent is suspended: the contract
    // of `ChildInputs::new`, whose callers pass an `ExecImage`'s pointers (built only by
    // `new`, never mutated) in the library, the spawner's `Image`'s (built only by
    // `Image::parse`, never mutated) in the spawner. The kernel only reads them.
    let errno = errno_of(unsafe { syscall6(nr::EXECVE, args) });
    if errno == abi::ENOEXEC && c.exec.shell as usize != 0 {
        let (shell, shell_argv) = (c.exec.shell as usize, c.exec.shell_argv as usize);
        let args = [shell, shell_argv, c.exec.envp as usize, 0, 0, 0];
        // SAFETY: `shell` is NUL-terminated and `shell_argv` a NULL-terminated array of
        // NUL-terminated strings, alive and unchanged while the parent is suspended (the
        // contract of `ChildInputs::new`: a `&'static CStr` and the array `or_through_shell`
        // built, owned by the same `ExecImage`); `envp` as above. The kernel only reads them.
        // A second `execve` is a raw system call like the first: no allocation here.
        let _ = unsafe { syscall6(nr::EXECVE, args) };
    }
    (8, errno)
}

/// `prctl(PR_SET_PDEATHSIG, signal)`, then the race it leaves: a parent that died before the
/// `prctl` sends nothing, and the child has been reparented (to a subreaper or init). So when
/// `getppid()` is no longer `parent`, the child sends itself `signal` with `kill`, as the
/// kernel would have a moment later: SIGKILL ends it at once; a blocked signal stays pending
/// until the mask of stage 7, exactly like a signal sent by the kernel. (A real-time signal
/// may then arrive twice, if the parent died between the two calls.)
#[inline(always)]
fn parent_death_signal(signal: usize, parent: usize) -> i32 {
    let args = [abi::PR_SET_PDEATHSIG, signal, 0, 0, 0, 0];
    // SAFETY: integer arguments only; sets an attribute of the child itself (EINVAL for a
    // number that is not a signal).
    let e = errno_of(unsafe { syscall6(nr::PRCTL, args) });
    if e != 0 {
        return e;
    }
    // SAFETY: no arguments; returns the PID of the child's parent (0 outside its namespace).
    let now = unsafe { syscall6(nr::GETPPID, [0; 6]) };
    if now != parent {
        // SAFETY: no arguments; returns the child's own PID.
        let me = unsafe { syscall6(nr::GETPID, [0; 6]) };
        // SAFETY: integer arguments only; `me` is this child's positive PID, so the signal
        // reaches the child alone.
        let _ = unsafe { syscall6(nr::KILL, [me, signal, 0, 0, 0, 0]) };
    }
    0
}

/// Resets every handled signal, and those of `to_default`, to `SIG_DFL`; ignored ones stay
/// ignored (as `posix_spawn` and shells do). SIGKILL and SIGSTOP cannot be changed.
#[inline(always)]
fn reset_signals(handlers: Handlers, to_default: u64) -> i32 {
    let (mut sig, mut bit) = (1usize, 1u64);
    while sig <= 64 {
        if sig != 9 && sig != 19 {
            let mut reset = to_default & bit != 0;
            match handlers {
                Handlers::ClearedByKernel => {}
                Handlers::Vouched(set) => reset = reset || set & bit != 0,
                Handlers::Query => {
                    let mut old = KernelSigaction::DEFAULT;
                    let e = sigaction_query(sig, &mut old);
                    if e != 0 {
                        return e;
                    }
                    reset = reset || (old.handler != SIG_DFL && old.handler != SIG_IGN);
                }
            }
            let e = if reset { sigaction_default(sig) } else { 0 };
            if e != 0 {
                return e;
            }
        }
        sig = sig.wrapping_add(1);
        bit = bit.wrapping_add(bit);
    }
    0
}

/// `dup3(fd, target, 0)` when `fd >= 0`: installs `fd` (≥ 3, checked by the parent) as 0/1/2.
#[inline(always)]
fn dup3(fd: c_int, target: usize) -> i32 {
    if fd < 0 {
        return 0;
    }
    // SAFETY: integer arguments only; replaces 0/1/2 in the child's own descriptor table.
    errno_of(unsafe { syscall6(nr::DUP3, [fd as usize, target, 0, 0, 0, 0]) })
}

/// `close(fd)`, ignoring the result (EBADF for a descriptor that is not open is harmless).
#[inline(always)]
fn close(fd: usize) {
    // SAFETY: integer argument only; closes a descriptor of the child's own table, which no
    // code running in the child uses.
    let _ = unsafe { syscall6(nr::CLOSE, [fd, 0, 0, 0, 0, 0]) };
}

/// Clears close-on-exec on every kept descriptor, then closes every other one above 2 except
/// the error pipe (close-on-exec, so `execve` closes it): `close_range` over the gaps between
/// kept ones, or each descriptor found in `/proc/self/fd`.
#[inline(always)]
fn close_descriptors(c: &ChildInputs<'_>, keep: &[c_int]) -> i32 {
    let error_pipe = c.error_pipe;
    let mut rest = keep;
    while let [fd, tail @ ..] = rest {
        let args = [*fd as usize, abi::F_SETFD, 0, 0, 0, 0];
        // SAFETY: integer arguments only; clears a flag of the child's own descriptor.
        let e = errno_of(unsafe { syscall6(nr::FCNTL, args) });
        if e != 0 {
            return e;
        }
        rest = tail;
    }
    match c.plan.closing {
        Closing::Ranges(mut rest) => {
            while let [[from, to], tail @ ..] = rest {
                let [[a, b], [c, d]] = around(*from, *to, error_pipe);
                let e = match close_range(a, b) {
                    0 => close_range(c, d),
                    e => e,
                };
                if e != 0 {
                    return e;
                }
                rest = tail;
            }
            0
        }
        Closing::Scan(_) => close_listed(c.scan_dir, keep, error_pipe),
    }
}

/// `close_range(from, to, 0)`; nothing for an empty range.
#[inline(always)]
fn close_range(from: usize, to: usize) -> i32 {
    if from > to {
        return 0;
    }
    // SAFETY: integer arguments only; closes descriptors of the child's own table, none of
    // which code running in the child uses.
    errno_of(unsafe { syscall6(nr::CLOSE_RANGE, [from, to, 0, 0, 0, 0]) })
}

/// Closes every descriptor above 2 that is listed in `dir` (`/proc/self/fd`, listed after the
/// clone, so nothing another thread opened meanwhile is missed) and not kept; without the
/// directory, every number below the soft `RLIMIT_NOFILE` (a descriptor above a lowered limit
/// then stays open: the one case this cannot see).
#[inline(always)]
fn close_listed(dir: *const c_char, keep: &[c_int], error_pipe: c_int) -> i32 {
    let args = [
        abi::AT_FDCWD as usize,
        dir as usize,
        abi::O_DIRECTORY_CLOEXEC,
        0,
        0,
        0,
    ];
    // SAFETY: `dir` is the pointer of a NUL-terminated `&CStr` of the plan, borrowed by the
    // suspended parent's frame; the kernel only reads it. The new descriptor is the child's.
    let opened = unsafe { syscall6(nr::OPENAT, args) };
    if errno_of(opened) != 0 {
        let mut limit = Rlimit64 { cur: 0, max: 0 };
        let out = &mut limit as *mut Rlimit64 as usize;
        // SAFETY: `limit` is a live, exclusively borrowed local with the kernel's layout
        // (asserted in `abi`), which the kernel writes; no new limit is passed (NULL).
        let e = errno_of(unsafe { syscall6(nr::PRLIMIT64, [0, abi::RLIMIT_NOFILE, 0, out, 0, 0]) });
        if e != 0 {
            return e;
        }
        let mut fd = 3usize;
        while (fd as u64) < limit.cur && fd <= i32::MAX as usize {
            if !skip(fd, keep, error_pipe) {
                close(fd);
            }
            fd = fd.wrapping_add(1);
        }
        return 0;
    }
    let mut buffer = DirBuffer([0; 512]);
    loop {
        let args = [opened, &mut buffer as *mut DirBuffer as usize, 512, 0, 0, 0];
        // SAFETY: `buffer` is a live, exclusively borrowed 512-byte local that the kernel fills
        // with whole records (at most 512 bytes); `opened` is the directory opened above.
        let n = unsafe { syscall6(nr::GETDENTS64, args) };
        if errno_of(n) != 0 || n == 0 {
            close(opened);
            return errno_of(n);
        }
        let (mut rest, mut left): (&[u8], usize) = (&buffer.0, n);
        while left >= abi::DIRENT64_NAME {
            let Some(reclen) = record_length(rest) else {
                break;
            };
            let fd = descriptor_number(rest);
            if fd >= 0 && fd as usize != opened && !skip(fd as usize, keep, error_pipe) {
                close(fd as usize);
            }
            if reclen == 0 || reclen > left {
                break;
            }
            left = left.wrapping_sub(reclen);
            rest = after(rest, reclen);
        }
    }
}

/// `exit_group(status)`: ends the child (or the spawner) without running any Rust code.
#[inline(always)]
pub(crate) fn exit_group(status: c_int) -> ! {
    // SAFETY: integer argument only; the call does not return.
    let _ = unsafe { syscall6(nr::EXIT_GROUP, [status as usize, 0, 0, 0, 0, 0]) };
    #[allow(clippy::empty_loop)]
    loop {}
}
