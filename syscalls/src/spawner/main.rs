//! The spawner: a tiny static program that starts coldtrace's children, so that what a child
//! inherits at `execve` (the old address space's high-water RSS, folded into its `ru_maxrss`)
//! is this program's few pages rather than coldtrace's resident set.
//!
//! coldtrace runs it once per batch from a memfd, with its end of a `SOCK_SEQPACKET` socket as
//! descriptor `argv[1]` and every signal blocked, and sends requests (`protocol.rs`): programs
//! to keep in a table, and "start slot k with these descriptors and this mask". Each child is
//! created with `CLONE_PARENT | CLONE_VM | CLONE_VFORK`: its parent is coldtrace, which waits
//! for it, reads its `/proc` and reaps it with `wait4` as for a child it cloned itself; the
//! spawner only clones and answers (the PID, a failure before `execve`, the clock before the
//! clone). It ends when the socket reaches end-of-file (coldtrace closed it, or died).
//!
//! Built by coldtrace's build script with one `rustc` call (`no_std`, static musl, non-PIE),
//! from this file, `image.rs`, `protocol.rs` and the library's own `abi`, `child_plan.rs`,
//! `clone_args.rs`, `raw/child.rs`, `raw/clone.rs` and `raw/spawner.rs` (its unsafe room).
#![no_std]
#![no_main]
#![deny(unsafe_code)]
// The library's `abi` and `child.rs` are compiled whole; the spawner uses part of them.
#![allow(dead_code)]

#[path = "../abi/mod.rs"]
mod abi;
#[path = "../child_plan.rs"]
mod child_plan;
#[path = "../clone_args.rs"]
mod clone_args;
mod image;
mod protocol;
#[path = "../raw/spawner.rs"]
mod raw;

use child_plan::{ChildPlan, CloneCall, Closing};
use core::ffi::c_int;
use core::sync::atomic::Ordering;
use protocol::{Received, Reply, Request, HEADER};

#[panic_handler]
fn panic(_: &core::panic::PanicInfo<'_>) -> ! {
    raw::exit_group(101)
}

/// The descriptor the socket is moved to.
const SOCKET: c_int = protocol::SOCKET_FD;
/// The descriptor the exec pipe's write end is moved to: below the socket, so that the child's
/// one `close_range` above its stdio leaves it alone without a second call.
const EXEC_PIPE: c_int = protocol::EXEC_PIPE_FD;
/// The table's most programs.
const SLOTS: usize = 256;
/// `SIGPIPE`'s bit: Rust's runtime ignores it in coldtrace, and the spawner inherits that.
const SIGPIPE: u64 = 1 << (13 - 1);
/// The errors of `clone3`, or of `CLONE_PIDFD`, that mean "not here" (an old kernel, a
/// seccomp filter).
const CLONE3_REFUSED: [i32; 5] = [38, 1, 22, 7, 13];
const EINVAL: i32 = 22;
const ENOSPC: i32 = 28;
const E2BIG: i32 = 7;
const EPROTO: i32 = 71;

/// Bytes of the program table (only the pages a `DEFINE` writes become resident).
const ARENA: usize = 8 << 20;
/// Pointers of one argv + envp.
const POINTERS: usize = 128 * 1024;
/// Bytes of the children's stack.
const STACK: usize = 64 * 1024;

/// The spawner's memory (the room's one `static mut`): in `.bss`, so a page is resident only
/// once written.
struct Buffers {
    arena: [u8; ARENA],
    pointers: [*const core::ffi::c_char; POINTERS],
    stack: Stack,
}

/// The children's stack, 16-byte aligned.
#[repr(C, align(16))]
struct Stack([u8; STACK]);

/// What a clone gave: the raw return register, the failed stage and errno the child wrote,
/// whether its write reached this process's memory, and the child's pidfd (-1: none, and
/// always after a failed clone).
struct Started {
    ret: usize,
    pidfd: c_int,
    stage: u32,
    errno: i32,
    memory_shared: bool,
}

/// The program table: each program's bytes in the arena, and the one being defined.
struct Table {
    slots: [(usize, usize); SLOTS],
    count: usize,
    used: usize,
    defining: Option<usize>,
}

/// What the spawner keeps between requests.
struct State {
    table: Table,
    call: CloneCall,
    closing: Closing<'static>,
    /// The last child's pidfd until its reply carries it (-1: none).
    pidfd: c_int,
    /// `CLONE_PIDFD` is asked for (until a clone refuses it).
    pidfds: bool,
    /// The PID of this program's parent, and so of every child's (`CLONE_PARENT`).
    parent: c_int,
    /// `close_range` works here: one call releases a request's descriptors.
    close_range: bool,
    /// Every signal is blocked in this (the only) thread.
    blocked: raw::SignalsBlocked,
    /// The start page, and the number of the last `START` received.
    page: &'static protocol::StartPage,
    starts: u32,
}

/// Every descriptor above the socket's: the child keeps 0, 1, 2 only.
static ABOVE_STDIO: [[usize; 2]; 1] = [[3, u32::MAX as usize]];

/// Serves requests until the socket ends; called by the entry point with the descriptors of
/// its socket, exec pipe and start page (see `protocol.rs`), and the buffers.
fn serve(fds: [c_int; 3], parent: c_int, buffers: &'static mut Buffers) -> ! {
    // Every signal stays blocked for the spawner's life: the rule each clone rests on.
    let Ok(blocked) = raw::SignalsBlocked::block() else {
        raw::exit_group(4)
    };
    raw::set_name(c"coldtrace-spawn");
    let [socket, pipe, page] = fds;
    let Some(page) = raw::map_start_page(page) else {
        raw::exit_group(4)
    };
    settle(socket, pipe);
    // The top of the children's stack, written once: no child takes a fault on it.
    let stack = &mut buffers.stack.0;
    let top = stack.len() - 8192;
    stack[top..].fill(1);
    let closing = if raw::close_range(c_int::MAX, u32::MAX) == 0 {
        Closing::Ranges(&ABOVE_STDIO)
    } else {
        Closing::Scan(c"/proc/self/fd")
    };
    let mut state = State {
        table: Table {
            slots: [(0, 0); SLOTS],
            count: 0,
            used: 0,
            defining: None,
        },
        call: CloneCall::Clone3 { cgroup: None },
        closing,
        pidfd: -1,
        pidfds: true,
        parent,
        close_range: matches!(closing, Closing::Ranges(_)),
        blocked,
        page,
        starts: 0,
    };
    loop {
        let mut header = [0u8; HEADER];
        let tail = buffers.arena.get_mut(state.table.used..).unwrap_or(&mut []);
        let got = match raw::receive(SOCKET, &mut header, tail) {
            Ok(got) if got.len == 0 => raw::exit_group(0),
            Ok(got) => got,
            Err(4) => continue,
            Err(_) => raw::exit_group(0),
        };
        let request = Request::decode(&header);
        let mut reply = answer(&request, &got, &mut state, buffers);
        let pidfd = core::mem::replace(&mut state.pidfd, -1);
        if pidfd >= 0 {
            reply.flags |= protocol::REPLY_PIDFD;
        }
        let sent = raw::send(SOCKET, &reply.encode(), pidfd);
        release(&got, pidfd, state.close_range);
        if sent.is_err() {
            raw::exit_group(0);
        }
    }
}

/// Closes what a request left open: the descriptors that came with it and the child's pidfd.
/// Between requests this program holds no descriptor above the socket's (the copies `start`
/// made are closed by it), so where `close_range` works one call closes them all, instead of
/// one `close` each (up to five a run).
fn release(got: &Received, pidfd: c_int, close_range: bool) {
    let received = got.fds.iter().take(got.nfds);
    // One put where this program's own 0, 1 or 2 was closed lies below the range.
    for &fd in received.clone().filter(|&&fd| (0..EXEC_PIPE).contains(&fd)) {
        raw::close(fd);
    }
    if close_range && raw::close_range(SOCKET + 1, u32::MAX) == 0 {
        return;
    }
    for &fd in received.chain([pidfd].iter()).filter(|&&fd| fd > SOCKET) {
        raw::close(fd);
    }
}

/// Moves the exec pipe to descriptor 3 and the socket to 4 (close-on-exec both: the children's
/// copies go at their `execve`) and closes everything else above 2 (the memfds this program was
/// started from and mapped, if they are still open). Copies above 4 are made first, so that
/// neither move overwrites the other descriptor.
fn settle(socket: c_int, pipe: c_int) {
    let above = SOCKET + 1;
    let (Ok(socket), Ok(pipe)) = (raw::dup_at_least(socket, above), raw::dup_at_least(pipe, above))
    else {
        raw::exit_group(3)
    };
    if raw::dup_to(pipe, EXEC_PIPE) != 0 || raw::dup_to(socket, SOCKET) != 0 {
        raw::exit_group(3);
    }
    if raw::close_range(above, u32::MAX) != 0 {
        for fd in above..1024 {
            raw::close(fd);
        }
    }
}

/// The reply to one request.
fn answer(request: &Request, got: &Received, state: &mut State, b: &mut Buffers) -> Reply {
    let chunk = got.len.saturating_sub(HEADER);
    if got.len < HEADER || got.truncated {
        return Reply::error(EPROTO);
    }
    match request.op {
        protocol::OP_DEFINE if chunk == request.len as usize => define(request, chunk, state),
        protocol::OP_RESET => {
            state.table.count = 0;
            state.table.used = 0;
            state.table.defining = None;
            Reply::default()
        }
        protocol::OP_START => {
            state.starts = state.starts.wrapping_add(1);
            start(request, got, state, b)
        }
        _ => Reply::error(EINVAL),
    }
}

/// Appends a chunk (already received into the arena) to the program being defined.
fn define(request: &Request, chunk: usize, state: &mut State) -> Reply {
    let table = &mut state.table;
    if request.flags & protocol::DEFINE_FIRST != 0 {
        table.defining = Some(table.used);
    }
    let Some(from) = table.defining else {
        return Reply::error(EPROTO);
    };
    if table.used + chunk > ARENA || (chunk == 0 && request.flags & protocol::DEFINE_LAST == 0)
    {
        table.defining = None;
        let whole = table.used + chunk - from;
        return Reply::error(if whole > ARENA / 2 { E2BIG } else { ENOSPC });
    }
    if table.used + chunk == ARENA && request.flags & protocol::DEFINE_LAST == 0 {
        table.defining = None;
        return Reply::error(ENOSPC);
    }
    table.used += chunk;
    if request.flags & protocol::DEFINE_LAST == 0 {
        return Reply::default();
    }
    table.defining = None;
    if table.count == SLOTS {
        table.used = from;
        return Reply::error(ENOSPC);
    }
    table.slots[table.count] = (from, table.used);
    table.count += 1;
    Reply {
        value: (table.count - 1) as i32,
        ..Reply::default()
    }
}

/// Starts the program of `request.slot` with the descriptors that came with the request.
fn start(request: &Request, got: &Received, state: &mut State, b: &mut Buffers) -> Reply {
    let Some(&(from, to)) = state.table.slots[..state.table.count].get(request.slot as usize)
    else {
        return Reply::error(EINVAL);
    };
    let Some(image) = image::Image::parse(&b.arena[from..to], &mut b.pointers) else {
        return Reply::error(EINVAL);
    };
    let mut fds = got.fds.iter().take(got.nfds).copied();
    let (mut stdio, mut lifted) = ([-1 as c_int; 3], [-1 as c_int; 3]);
    for (i, (slot, copy)) in stdio.iter_mut().zip(lifted.iter_mut()).enumerate() {
        if request.flags & (protocol::START_STDIN << i) != 0 {
            match fds.next() {
                Some(fd) if fd >= 3 => *slot = fd,
                Some(fd) => match raw::dup_at_least(fd, 3) {
                    // One below 3 was put where this program's own 0, 1 or 2 is closed:
                    // installing it could clobber another, so a copy above 2 is installed.
                    Ok(high) => (*slot, *copy) = (high, high),
                    Err(e) => return close_all(&lifted, Reply::error(e)),
                },
                None => return close_all(&lifted, Reply::error(EPROTO)),
            }
        }
    }
    let cgroup = match request.flags & protocol::START_CGROUP {
        0 => None,
        _ => Some(fds.next()),
    };
    let call = match (cgroup, state.call) {
        (Some(None), _) => return close_all(&lifted, Reply::error(EPROTO)),
        (Some(Some(fd)), CloneCall::Clone3 { .. }) => CloneCall::Clone3 { cgroup: Some(fd) },
        (Some(Some(_)), CloneCall::Clone) => return close_all(&lifted, Reply::error(EINVAL)),
        (None, call) => call,
    };
    let plan = ChildPlan {
        stdio,
        keep: &[],
        closing: state.closing,
        cwd: None,
        new_process_group: request.flags & protocol::START_NEW_GROUP != 0,
        mask: Some(request.mask),
        to_default: SIGPIPE,
        vouched: Some(0),
        parent_death_signal: match request.len {
            0 => None,
            signal => Some(signal as c_int),
        },
    };
    let reply = clone_with_fallback(&image, &plan, &mut b.stack, call, state);
    close_all(&lifted, reply)
}

/// Closes the copies made for a start (the received descriptors are closed by `serve`).
fn close_all(copies: &[c_int; 3], reply: Reply) -> Reply {
    for &fd in copies.iter().filter(|&&fd| fd >= 0) {
        raw::close(fd);
    }
    reply
}

/// The clone, falling back to `clone` for good where `clone3` is refused (not for a cgroup),
/// then to no pidfd for good where `clone` refuses `CLONE_PIDFD` (coldtrace opens one itself).
fn clone_with_fallback(
    image: &image::Image<'_>,
    plan: &ChildPlan<'_>,
    stack: &mut Stack,
    mut call: CloneCall,
    state: &mut State,
) -> Reply {
    loop {
        // In this order: a page that names this START has no PID of an earlier one.
        state.page.pid.store(0, Ordering::Relaxed);
        state.page.start.store(state.starts, Ordering::Release);
        let start_ns = raw::monotonic_ns();
        let (pidfds, parent, page) = (state.pidfds, state.parent, (state.page, EXEC_PIPE));
        let started = raw::spawn(image, plan, stack, call, pidfds, parent, &state.blocked, page);
        let errno = abi::errno_of(started.ret);
        if errno != 0 && CLONE3_REFUSED.contains(&errno) {
            if call == (CloneCall::Clone3 { cgroup: None }) {
                call = CloneCall::Clone;
                state.call = CloneCall::Clone;
                continue;
            }
            if call == CloneCall::Clone && state.pidfds {
                state.pidfds = false;
                continue;
            }
        }
        if errno != 0 {
            return Reply {
                value: errno.wrapping_neg(),
                stage: 1,
                errno,
                flags: 0,
                start_ns,
            };
        }
        state.pidfd = started.pidfd;
        return Reply {
            value: started.ret as i32,
            stage: started.stage,
            errno: started.errno,
            flags: if started.memory_shared {
                protocol::REPLY_MEMORY_SHARED
            } else {
                0
            },
            start_ns,
        };
    }
}
