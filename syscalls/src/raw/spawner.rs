//! The spawner program's unsafe room (compiled only into the spawner, `../spawner/main.rs`, as
//! its `raw` module; the library does not compile this file): its entry point, its buffers, and
//! the system calls it makes besides the clone — `recvmsg` and `sendmsg` with descriptors,
//! `clock_gettime`, `fcntl`, `close`, `close_range`. The clone and the child are the
//! library's own files, `clone.rs` and `child.rs`, compiled here unchanged.
#![allow(unsafe_code)]

#[path = "child.rs"]
pub(crate) mod child;
#[path = "clone.rs"]
mod clone;

use crate::abi::{self, clone_flags as cf, nr, IoVec, MsgHdr};
use crate::child_plan::{ChildPlan, CloneCall, ExecPointers};
use crate::image::Image;
use crate::protocol::{self, Received, ReplyRight, RequestRights, StartPage};
use crate::protocol::{HEADER, MAX_FDS, START_PAGE};
use crate::{Buffers, Stack, Started, ARENA, POINTERS, STACK};
use crate::abi::errno_of;
use child::{syscall6, ChildInputs};
pub(crate) use crate::clone_args::SignalsBlocked;
pub(crate) use child::sigprocmask;
use core::ffi::{c_char, c_int};
use core::sync::atomic::{AtomicBool, Ordering};

pub(crate) use child::exit_group;

static mut BUFFERS: Buffers = Buffers {
    arena: [0; ARENA],
    pointers: [core::ptr::null(); POINTERS],
    stack: Stack([0; STACK]),
};
static TAKEN: AtomicBool = AtomicBool::new(false);

/// The buffers, once: `None` on a second call.
fn take_buffers() -> Option<&'static mut Buffers> {
    if TAKEN.swap(true, Ordering::AcqRel) {
        return None;
    }
    // SAFETY: no aliasing: `TAKEN` lets exactly one call reach this line, so the returned
    // reference is the only one to `BUFFERS` for the rest of the program (nothing else names
    // it). The static lives for the whole program and is initialised (all zeros).
    Some(unsafe { &mut *core::ptr::addr_of_mut!(BUFFERS) })
}

/// The C runtime's entry (musl's `__libc_start_main` calls it), with four decimal arguments:
/// the socket's descriptor, the PID of the process it clones children for (its parent,
/// coldtrace), the exec pipe's write end and the start page's memfd.
#[no_mangle]
pub extern "C" fn main(argc: c_int, argv: *const *const c_char) -> c_int {
    let mut args = [None; 4];
    if argc >= 5 {
        for (k, arg) in args.iter_mut().enumerate() {
            *arg = argument(argv, k + 1);
        }
    }
    match (args, take_buffers()) {
        ([Some(socket), Some(parent), Some(pipe), Some(page)], Some(buffers)) => {
            crate::serve([socket, pipe, page], parent, buffers)
        }
        _ => exit_group(2),
    }
}

/// `argv[k]` (1 ≤ k ≤ 4; the caller checked `argc ≥ 5`) as a non-negative number.
fn argument(argv: *const *const c_char, k: usize) -> Option<c_int> {
    // SAFETY: valid and aligned: the C runtime passes the `argv` that `execve` built, an array
    // of `argc` pointers (the caller checked `argc >= 5`, and `k <= 4`) followed by a null one.
    let arg = unsafe { *argv.add(k.min(4)) };
    if arg.is_null() {
        return None;
    }
    // SAFETY: `arg` is one of those strings: NUL-terminated, on the initial stack, alive and
    // never written for the whole program.
    let text = unsafe { core::ffi::CStr::from_ptr(arg) };
    protocol::decimal_argument(text.to_bytes())
}

/// `mmap(NULL, 8, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)`: the start page, mapped for the
/// rest of the program; `None` when the call fails. See
/// [mmap(2)](https://man7.org/linux/man-pages/man2/mmap.2.html).
pub(crate) fn map_start_page(fd: c_int) -> Option<&'static StartPage> {
    let args = [0, START_PAGE, abi::PROT_READ_WRITE, abi::MAP_SHARED, fd as usize, 0];
    // SAFETY: integer arguments only; no address is given, so the kernel places the new
    // mapping where nothing of this program lies.
    let ret = unsafe { syscall6(nr::MMAP, args) };
    if errno_of(ret) != 0 {
        return None;
    }
    // SAFETY: valid and aligned: a new mapping starts on a page boundary and spans a page,
    // more than `StartPage`'s 8 bytes (align 4). Initialised: a memfd's bytes, and every bit
    // pattern is a valid atomic. Lives long enough: nothing unmaps it, so `'static`. No
    // aliasing: only shared references to it exist, and its fields are atomics, the type for
    // memory that others write meanwhile (the kernel's `CLONE_PARENT_SETTID` store, coldtrace's
    // own mapping of the memfd, if it ever made one).
    Some(unsafe { &*(ret as *const StartPage) })
}

/// `prctl(PR_SET_NAME, name)`: the name `ps` and `pgrep` show. See
/// [prctl(2)](https://man7.org/linux/man-pages/man2/prctl.2.html).
pub(crate) fn set_name(name: &core::ffi::CStr) {
    let args = [abi::PR_SET_NAME, name.as_ptr() as usize, 0, 0, 0, 0];
    // SAFETY: `name` is a live, NUL-terminated borrowed string the kernel only reads (16 bytes
    // at most).
    let _ = unsafe { syscall6(nr::PRCTL, args) };
}

/// `recvmsg(socket, …, MSG_CMSG_CLOEXEC)` into `header` then `tail` → the message, or an
/// errno. See [recvmsg(2)](https://man7.org/linux/man-pages/man2/recvmsg.2.html),
/// [unix(7)](https://man7.org/linux/man-pages/man7/unix.7.html) (`SCM_RIGHTS`).
pub(crate) fn receive(
    socket: c_int,
    header: &mut [u8; HEADER],
    tail: &mut [u8],
) -> Result<Received, i32> {
    let iov = [
        IoVec {
            base: header.as_mut_ptr() as usize,
            len: HEADER,
        },
        IoVec {
            base: tail.as_mut_ptr() as usize,
            len: tail.len(),
        },
    ];
    let mut control = RequestRights([0; abi::CMSG_HEADER + 4 * MAX_FDS]);
    let mut msg = MsgHdr {
        name: 0,
        namelen: 0,
        iov: iov.as_ptr() as usize,
        iovlen: 2,
        control: control.0.as_mut_ptr() as usize,
        controllen: control.0.len(),
        flags: 0,
    };
    let args = [
        socket as usize,
        &mut msg as *mut MsgHdr as usize,
        abi::MSG_CMSG_CLOEXEC,
        0,
        0,
        0,
    ];
    // SAFETY: valid and aligned: `msg` has the kernel's 64-bit `struct msghdr` layout (asserted
    // in `abi`), and points to two live `iovec`s (the exclusively borrowed `header` and `tail`,
    // with their true lengths) and to the exclusively borrowed, 8-aligned `control` with its
    // true length. No aliasing: all are locals or `&mut` borrows held for this call; the kernel
    // writes at most the given lengths into them and `controllen`/`flags` into `msg`.
    let ret = unsafe { syscall6(nr::RECVMSG, args) };
    match errno_of(ret) {
        0 => {}
        e => return Err(e),
    }
    let truncated = msg.flags & abi::MSG_CTRUNC != 0;
    Ok(Received::new(ret, &control.0, msg.controllen, truncated))
}

/// `sendmsg(socket, bytes, MSG_NOSIGNAL)`, with `right` as `SCM_RIGHTS` when it is a
/// descriptor (≥ 0) → bytes sent, or an errno. See
/// [sendmsg(2)](https://man7.org/linux/man-pages/man2/sendmsg.2.html),
/// [unix(7)](https://man7.org/linux/man-pages/man7/unix.7.html).
pub(crate) fn send(socket: c_int, bytes: &[u8], right: c_int) -> Result<usize, i32> {
    let iov = [IoVec {
        base: bytes.as_ptr() as usize,
        len: bytes.len(),
    }];
    let control = ReplyRight::new(right);
    let (control, controllen) = match right {
        0.. => (control.0.as_ptr() as usize, control.0.len()),
        _ => (0, 0),
    };
    let msg = MsgHdr {
        name: 0,
        namelen: 0,
        iov: iov.as_ptr() as usize,
        iovlen: 1,
        control,
        controllen,
        flags: 0,
    };
    let args = [
        socket as usize,
        &msg as *const MsgHdr as usize,
        abi::MSG_NOSIGNAL,
        0,
        0,
        0,
    ];
    // SAFETY: valid and aligned: `msg` has the kernel's 64-bit `struct msghdr` layout (asserted
    // in `abi`) and points to one live `iovec` (the borrowed `bytes`, its true length) and,
    // with a descriptor, to the live, 8-aligned `control` holding one whole `cmsghdr` and its
    // `int` (its true length, `CMSG_SPACE(4)`). The kernel only reads them, during this call.
    let ret = unsafe { syscall6(nr::SENDMSG, args) };
    match errno_of(ret) {
        0 => Ok(ret),
        e => Err(e),
    }
}

/// `CLOCK_MONOTONIC` in ns ([clock_gettime(2)](https://man7.org/linux/man-pages/man2/clock_gettime.2.html)).
pub(crate) fn monotonic_ns() -> u64 {
    let mut ts = [0i64; 2];
    let args = [abi::CLOCK_MONOTONIC, ts.as_mut_ptr() as usize, 0, 0, 0, 0];
    // SAFETY: `ts` is a live, aligned, exclusively borrowed `struct timespec` (two `i64` on
    // both 64-bit ABIs) that the kernel writes.
    let _ = unsafe { syscall6(nr::CLOCK_GETTIME, args) };
    let [s, ns] = ts;
    (s as u64).wrapping_mul(1_000_000_000).wrapping_add(ns as u64)
}

/// `fcntl(fd, F_DUPFD_CLOEXEC, least)`: a copy numbered ≥ `least`, or an errno.
pub(crate) fn dup_at_least(fd: c_int, least: c_int) -> Result<c_int, i32> {
    let args = [fd as usize, abi::F_DUPFD_CLOEXEC, least as usize, 0, 0, 0];
    // SAFETY: integer arguments only; adds a descriptor to this process's table.
    let ret = unsafe { syscall6(nr::FCNTL, args) };
    match errno_of(ret) {
        0 => Ok(ret as c_int),
        e => Err(e),
    }
}

/// `dup3(fd, to, O_CLOEXEC)` → 0 or an errno.
pub(crate) fn dup_to(fd: c_int, to: c_int) -> i32 {
    let args = [fd as usize, to as usize, abi::O_CLOEXEC, 0, 0, 0];
    // SAFETY: integer arguments only; replaces `to` in this process's table, which no value of
    // the spawner owns (it holds descriptors as plain numbers).
    errno_of(unsafe { syscall6(nr::DUP3, args) })
}

/// `close(fd)`.
pub(crate) fn close(fd: c_int) {
    // SAFETY: integer argument only; the spawner holds descriptors as plain numbers, so none
    // is used after it is closed.
    let _ = unsafe { syscall6(nr::CLOSE, [fd as usize, 0, 0, 0, 0, 0]) };
}

/// `close_range(from, to, 0)` → 0 or an errno.
pub(crate) fn close_range(from: c_int, to: u32) -> i32 {
    let args = [from as usize, to as usize, 0, 0, 0, 0];
    // SAFETY: integer arguments only; as for `close`.
    errno_of(unsafe { syscall6(nr::CLOSE_RANGE, args) })
}

/// Starts `image` on `stack` as a child of this process's parent (`CLONE_PARENT`, whose PID
/// `parent` is: the child checks it after asking for a parent-death signal), sharing
/// this memory until it calls `execve` (`CLONE_VM | CLONE_VFORK`), with a pidfd for it when
/// `with_pidfd` (`CLONE_PIDFD`; a kernel before 5.2 ignores the flag and leaves -1), the
/// child's PID stored in `page` by the kernel before it runs, and `error_pipe` (close-on-exec)
/// for the child to report a failure before `execve` to.
pub(crate) fn spawn(
    image: &Image<'_>,
    plan: &ChildPlan<'_>,
    stack: &mut Stack,
    call: CloneCall,
    with_pidfd: bool,
    parent: c_int,
    blocked: &SignalsBlocked,
    (page, error_pipe): (&StartPage, c_int),
) -> Started {
    let exec = ExecPointers {
        path: image.path(),
        argv: image.argv(),
        envp: image.envp(),
        shell: core::ptr::null(),
        shell_argv: core::ptr::null(),
    };
    let parent = plan.parent_death_signal.map_or(0, |_| parent as usize);
    // SAFETY: the contract of `ChildInputs::new`:
    // - the pointers are an `Image`'s, borrowed for this whole call: its fields are private
    //   and `Image::parse` its only constructor, so they point into the borrowed arena and
    //   pointer buffer at NUL-terminated strings and null-terminated arrays, never mutated
    //   while the image lives; there is no shell (both null);
    // - `plan.vouched` is `Some(0)`: the spawner installs no signal handler, and `execve`
    //   reset every one it could have inherited, so no signal has one (with `clone` the child
    //   resets just `to_default`; with `clone3` the kernel clears handlers anyway).
    let mut inputs = unsafe { ChildInputs::new(exec, plan, call, error_pipe, !0, parent) };
    let region = crate::clone_args::StackRegion::new(&mut stack.0);
    let flags = cf::CLONE_VM | cf::CLONE_PARENT;
    let mut pidfd: c_int = -1;
    let slot = if with_pidfd { Some(&mut pidfd) } else { None };
    let ret = clone::clone_child(&mut inputs, region, flags, slot, Some(&page.pid), blocked);
    let (memory_shared, stage, errno) = inputs.report();
    Started {
        ret,
        // A clone that fails after the kernel made the pidfd (a cgroup it refuses) leaves that
        // number in the slot, released: it is nobody's descriptor.
        pidfd: if errno_of(ret) == 0 { pidfd } else { -1 },
        stage,
        errno,
        memory_shared,
    }
}
