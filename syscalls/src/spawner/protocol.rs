//! The spawner's protocol, compiled into both ends (the library's `spawner` module and the
//! spawner program): fixed-size records in native byte order on a `SOCK_SEQPACKET` socket, one
//! request and one reply per message.
//!
//! - `DEFINE` (one or more chunks, `DEFINE_FIRST` on the first and `DEFINE_LAST` on the last):
//!   a program as `[argc u32][envc u32] path\0 argv…\0 envp…\0`. Reply: its slot, or `-errno`
//!   (`ENOSPC`: the table is full, send `RESET` and define again; `E2BIG`: it can never fit).
//! - `RESET`: forget every program. Reply: 0.
//! - `START slot`: start that program; `mask` is its signal mask, `flags` say which of stdin,
//!   stdout, stderr and a cgroup directory come with the message (`SCM_RIGHTS`, in that
//!   order), and whether the child leads a new process group; `len` is the signal the child
//!   asks for when its parent dies (`PR_SET_PDEATHSIG`; 0: none). Reply: the child's PID (or
//!   `-errno` when the clone failed), the failed stage and errno (0 when the child reached
//!   `execve`: it has exec'd), whether the child's write reached the spawner's memory, the
//!   `CLOCK_MONOTONIC` time right before the clone, and, when the kernel made one, the child's
//!   pidfd (`SCM_RIGHTS`, `REPLY_PIDFD`).
//!
//! Two things outlive the spawner, for a `START` whose reply never comes (the spawner was
//! killed, or had to be, in the clone's vfork wait, while the child went on to `execve`):
//! - the start page ([`StartPage`]), 8 bytes of a memfd that both ends share: right before each
//!   clone the spawner stores 0 as the PID and the `START`'s number (1, 2, …), and the clone
//!   (`CLONE_PARENT_SETTID`) has the kernel store the child's PID there before the child runs.
//!   Once the spawner is dead, the page says whether the last `START` made a child, and which:
//!   a child of coldtrace's own (`CLONE_PARENT`), never to be started again.
//! - the exec pipe: every child holds its write end (the spawner's descriptor
//!   [`EXEC_PIPE_FD`], close-on-exec) until `execve`, and one that fails before writes its stage
//!   and errno there (8 bytes) as it exits. After such a child has exited, an empty pipe proves
//!   that it reached `execve`.
#![forbid(unsafe_code)]

use crate::abi::{CMSG_HEADER, SCM_RIGHTS, SOL_SOCKET};
use core::sync::atomic::{AtomicI32, AtomicU32};

/// Bytes of a request's header; a `DEFINE` chunk follows it.
pub const HEADER: usize = 24;
/// Bytes of a reply.
pub const REPLY: usize = 24;
/// The largest `DEFINE` chunk.
pub const CHUNK: usize = 32 * 1024;
/// The most descriptors one request carries.
pub const MAX_FDS: usize = 4;

/// The spawner's descriptor of the exec pipe's write end.
pub const EXEC_PIPE_FD: i32 = 3;
/// The spawner's descriptor of its socket.
pub const SOCKET_FD: i32 = 4;

/// The start page as the spawner maps it (`MAP_SHARED`); coldtrace reads its 8 bytes with
/// `pread` (the PID at 0, the number at 4, native byte order).
#[repr(C)]
pub struct StartPage {
    /// The last clone's child, stored by the kernel (0: none yet).
    pub pid: AtomicI32,
    /// The number of the `START` that last reached the clone.
    pub start: AtomicU32,
}

/// Bytes of the start page.
pub const START_PAGE: usize = 8;
const _: () = assert!(core::mem::size_of::<StartPage>() == START_PAGE);

/// Define a program (a chunk of it).
pub const OP_DEFINE: u32 = 1;
/// Forget every program.
pub const OP_RESET: u32 = 2;
/// Start a defined program.
pub const OP_START: u32 = 3;

/// `DEFINE`: the first chunk of a program.
pub const DEFINE_FIRST: u32 = 1;
/// `DEFINE`: the last chunk of a program.
pub const DEFINE_LAST: u32 = 2;

/// `START`: the child leads a new process group.
pub const START_NEW_GROUP: u32 = 1;
/// `START`: the message carries the child's stdin.
pub const START_STDIN: u32 = 2;
/// `START`: the message carries the child's stdout.
pub const START_STDOUT: u32 = 4;
/// `START`: the message carries the child's stderr.
pub const START_STDERR: u32 = 8;
/// `START`: the message carries a cgroup v2 directory the child is born in.
pub const START_CGROUP: u32 = 16;

/// Reply flag: the child's write reached the spawner's memory (`CLONE_VM` really shares it),
/// so a failure before `execve` is reported.
pub const REPLY_MEMORY_SHARED: u32 = 1;
/// Reply flag: the message carries the child's pidfd (`SCM_RIGHTS`), from the clone's
/// `CLONE_PIDFD`.
pub const REPLY_PIDFD: u32 = 2;

/// A request's header.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Request {
    /// `OP_*`.
    pub op: u32,
    /// `START`: the program's slot.
    pub slot: u32,
    /// `DEFINE_*` or `START_*` bits.
    pub flags: u32,
    /// `DEFINE`: the chunk's length in bytes; `START`: the parent-death signal (0: none).
    pub len: u32,
    /// `START`: the child's signal mask.
    pub mask: u64,
}

impl Request {
    /// The header's bytes.
    pub fn encode(&self) -> [u8; HEADER] {
        let mut out = [0u8; HEADER];
        put(&mut out, 0, &self.op.to_ne_bytes());
        put(&mut out, 4, &self.slot.to_ne_bytes());
        put(&mut out, 8, &self.flags.to_ne_bytes());
        put(&mut out, 12, &self.len.to_ne_bytes());
        put(&mut out, 16, &self.mask.to_ne_bytes());
        out
    }

    /// The header in `bytes`.
    pub fn decode(bytes: &[u8; HEADER]) -> Request {
        Request {
            op: word(bytes, 0),
            slot: word(bytes, 4),
            flags: word(bytes, 8),
            len: word(bytes, 12),
            mask: u64::from(word(bytes, 16)) | u64::from(word(bytes, 20)) << 32,
        }
    }
}

/// A reply.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Reply {
    /// `START`: the child's PID, or `-errno` of the clone; `DEFINE`: the slot, or `-errno`.
    pub value: i32,
    /// `START`: the stage that failed in the child (`spawn::ChildStage` numbers), or 0.
    pub stage: u32,
    /// `START`: that stage's errno.
    pub errno: i32,
    /// `REPLY_*` bits.
    pub flags: u32,
    /// `START`: `CLOCK_MONOTONIC` in ns right before the clone.
    pub start_ns: u64,
}

impl Reply {
    /// The reply's bytes.
    pub fn encode(&self) -> [u8; REPLY] {
        let mut out = [0u8; REPLY];
        put(&mut out, 0, &self.value.to_ne_bytes());
        put(&mut out, 4, &self.stage.to_ne_bytes());
        put(&mut out, 8, &self.errno.to_ne_bytes());
        put(&mut out, 12, &self.flags.to_ne_bytes());
        put(&mut out, 16, &self.start_ns.to_ne_bytes());
        out
    }

    /// The reply in `bytes`.
    pub fn decode(bytes: &[u8; REPLY]) -> Reply {
        Reply {
            value: word(bytes, 0) as i32,
            stage: word(bytes, 4),
            errno: word(bytes, 8) as i32,
            flags: word(bytes, 12),
            start_ns: u64::from(word(bytes, 16)) | u64::from(word(bytes, 20)) << 32,
        }
    }

    /// A reply that carries only `-errno`.
    pub fn error(errno: i32) -> Reply {
        Reply {
            value: errno.wrapping_neg(),
            ..Reply::default()
        }
    }
}

fn put(out: &mut [u8], at: usize, bytes: &[u8]) {
    if let Some(dst) = out.get_mut(at..at + bytes.len()) {
        dst.copy_from_slice(bytes);
    }
}

/// The native-endian `u32` at `at` (0 past the end).
fn word(bytes: &[u8], at: usize) -> u32 {
    match bytes.get(at..at + 4) {
        Some(&[a, b, c, d]) => u32::from_ne_bytes([a, b, c, d]),
        _ => 0,
    }
}

/// The program as `DEFINE` carries it: `[argc][envc] path\0 argv…\0 envp…\0`.
pub fn encode_program<'a>(
    path: &'a [u8],
    argv: impl ExactSizeIterator<Item = &'a [u8]>,
    envp: impl ExactSizeIterator<Item = &'a [u8]>,
    out: &mut impl Extend<u8>,
) {
    out.extend((argv.len() as u32).to_ne_bytes());
    out.extend((envp.len() as u32).to_ne_bytes());
    for s in core::iter::once(path).chain(argv).chain(envp) {
        out.extend(s.iter().copied());
        out.extend([0u8]);
    }
}

/// One of the spawner's arguments (`argv[1]` to `argv[4]`, written by coldtrace): a
/// non-negative decimal number, or `None`.
pub fn decimal_argument(text: &[u8]) -> Option<i32> {
    let mut value: i32 = 0;
    for &d in text {
        if !d.is_ascii_digit() || value > 1 << 24 {
            return None;
        }
        value = value * 10 + i32::from(d - b'0');
    }
    Some(value)
}

/// A request's control buffer as `recvmsg` fills it: one `cmsghdr` and up to [`MAX_FDS`]
/// descriptors, 8-aligned as the kernel lays a `cmsghdr` out.
#[repr(C, align(8))]
pub struct RequestRights(pub [u8; CMSG_HEADER + 4 * MAX_FDS]);

/// A reply's control buffer: one `cmsghdr` (`cmsg_len` = `CMSG_LEN(4)`, `SOL_SOCKET`,
/// `SCM_RIGHTS`) and one descriptor, `CMSG_SPACE(4)` bytes, 8-aligned.
#[repr(C, align(8))]
pub struct ReplyRight(pub [u8; CMSG_HEADER + 8]);

impl ReplyRight {
    /// The control message that passes `fd`.
    pub fn new(fd: i32) -> ReplyRight {
        let mut control = ReplyRight([0; CMSG_HEADER + 8]);
        put(&mut control.0, 0, &(CMSG_HEADER + 4).to_ne_bytes());
        put(&mut control.0, 8, &SOL_SOCKET.to_ne_bytes());
        put(&mut control.0, 12, &SCM_RIGHTS.to_ne_bytes());
        put(&mut control.0, CMSG_HEADER, &fd.to_ne_bytes());
        control
    }
}

/// What one `recvmsg` of a request brought.
pub struct Received {
    /// Bytes of the message (header and chunk).
    pub len: usize,
    /// The descriptors that came with it, close-on-exec (`nfds` of them).
    pub fds: [i32; MAX_FDS],
    /// How many of `fds` came.
    pub nfds: usize,
    /// Some were dropped for lack of room (those that came are in `fds`).
    pub truncated: bool,
}

impl Received {
    /// A message of `len` bytes whose control buffer the kernel filled for `used` bytes; the
    /// descriptors are those of an `SCM_RIGHTS` message there.
    pub fn new(len: usize, control: &[u8], used: usize, truncated: bool) -> Received {
        let mut got = Received {
            len,
            fds: [-1; MAX_FDS],
            nfds: 0,
            truncated,
        };
        let word = |at: usize| match control.get(at..at + 4) {
            Some(&[a, b, c, d]) => i32::from_ne_bytes([a, b, c, d]),
            _ => -1,
        };
        let cmsg_len = match control.get(..8) {
            Some(&[a, b, c, d, e, f, g, h]) => usize::from_ne_bytes([a, b, c, d, e, f, g, h]),
            _ => 0,
        };
        let rights = word(8) == SOL_SOCKET && word(12) == SCM_RIGHTS;
        if used < CMSG_HEADER || !rights || cmsg_len < CMSG_HEADER {
            return got;
        }
        let count = ((cmsg_len.min(used) - CMSG_HEADER) / 4).min(MAX_FDS);
        for (i, slot) in got.fds.iter_mut().enumerate().take(count) {
            *slot = word(CMSG_HEADER + 4 * i);
        }
        got.nfds = count;
        got
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_come_back_as_they_went() {
        let req = Request {
            op: OP_START,
            slot: 7,
            flags: START_STDIN | START_NEW_GROUP,
            len: 0,
            mask: 0x8000_0000_0001_0002,
        };
        assert_eq!(Request::decode(&req.encode()), req);
        let reply = Reply {
            value: -2,
            stage: 8,
            errno: 13,
            flags: REPLY_MEMORY_SHARED,
            start_ns: u64::MAX - 5,
        };
        assert_eq!(Reply::decode(&reply.encode()), reply);
        assert_eq!(Reply::error(24).value, -24);
    }

    #[test]
    fn a_reply_right_is_read_back_as_one_descriptor() {
        let control = ReplyRight::new(17);
        let got = Received::new(24, &control.0, control.0.len(), false);
        assert_eq!((got.nfds, got.fds[0]), (1, 17));
        // Fewer bytes than a header, or a message of another type, carry none.
        assert_eq!(
            Received::new(24, &control.0, CMSG_HEADER - 1, false).nfds,
            0
        );
        let mut other = ReplyRight::new(17);
        other.0[12] = 2;
        assert_eq!(Received::new(24, &other.0, other.0.len(), true).nfds, 0);
    }

    #[test]
    fn arguments_are_non_negative_decimal_numbers() {
        assert_eq!(decimal_argument(b"4"), Some(4));
        assert_eq!(decimal_argument(b"123456"), Some(123456));
        for bad in [&b"-1"[..], b"3a", b" 3", b"99999999999"] {
            assert_eq!(decimal_argument(bad), None, "{bad:?}");
        }
    }
}
