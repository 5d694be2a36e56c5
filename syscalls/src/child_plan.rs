//! What a spawn hands to the unsafe room about the child's process state: plain numbers and
//! borrowed slices, core only (no allocation, no owned descriptor), so that the spawner program
//! (`spawner/main.rs`) compiles this file as it is; and the pure steps the child runs on them
//! (which descriptors it keeps, the number in a `/proc/self/fd` entry), which follow the
//! child's rules (`raw/child.rs`): `#[inline(always)]`, wrapping arithmetic, slice patterns,
//! no call into `core` — `tests/child_disassembly.rs` checks them inside `child_entry`.
#![forbid(unsafe_code)]

use core::ffi::{c_char, c_int, CStr};

#[cfg(target_endian = "big")]
compile_error!("the child reads getdents64 records as little-endian");

/// The pointers `execve` takes, and the shell's where the image asked for one: each a
/// NUL-terminated string or a null-terminated array of them (`shell` and `shell_argv` null
/// where there is none). Plain numbers until `ChildInputs::new` (`raw/child.rs`), whose
/// `# Safety` asks for exactly that of them.
pub(crate) struct ExecPointers {
    pub path: *const c_char,
    pub argv: *const *const c_char,
    pub envp: *const *const c_char,
    pub shell: *const c_char,
    pub shell_argv: *const *const c_char,
}

/// The child's process state apart from the image, as plain numbers and borrowed data. No
/// value here can make the spawn unsound: descriptors are numbers in the child's own table.
pub(crate) struct ChildPlan<'a> {
    /// Descriptors to `dup3` onto 0, 1, 2 (-1: inherit).
    pub stdio: [c_int; 3],
    /// Sorted descriptors ≥ 3 to keep (their close-on-exec flag is cleared).
    pub keep: &'a [c_int],
    /// How to close every other descriptor above 2.
    pub closing: Closing<'a>,
    pub cwd: Option<&'a CStr>,
    pub new_process_group: bool,
    /// The mask the program starts with (`None`: the caller's).
    pub mask: Option<u64>,
    /// Signals put back to `SIG_DFL` whatever their disposition (SIGPIPE, which Rust's runtime
    /// ignores before `main`).
    pub to_default: u64,
    /// On the `clone` path: the caller vouched that only these signals have handlers.
    pub vouched: Option<u64>,
    /// The signal the child asks for when the thread that cloned it exits
    /// (`PR_SET_PDEATHSIG`); the parent's PID to check it against is read at the clone.
    pub parent_death_signal: Option<c_int>,
}

/// How the child closes the descriptors it must not inherit.
#[derive(Clone, Copy)]
pub(crate) enum Closing<'a> {
    /// `close_range(from, to, 0)` for each inclusive range (the gaps between kept ones).
    Ranges(&'a [[usize; 2]]),
    /// `close_range` is refused: the child lists this directory (`/proc/self/fd`) and closes
    /// what it finds; where it cannot be opened, every number below its `RLIMIT_NOFILE`.
    Scan(&'a CStr),
}

/// Which system call starts the child.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum CloneCall {
    /// `clone3` with `CLONE_CLEAR_SIGHAND` (and `CLONE_INTO_CGROUP` with this descriptor).
    Clone3 { cgroup: Option<c_int> },
    /// `clone`; the child resets handled signals itself.
    Clone,
}

/// Whether `fd` is one of the sorted `keep`.
#[inline(always)]
pub(crate) fn kept(keep: &[c_int], fd: usize) -> bool {
    let mut rest = keep;
    while let [k, tail @ ..] = rest {
        if *k as usize == fd {
            return true;
        }
        rest = tail;
    }
    false
}

/// Whether the child keeps `fd` open: stdio, the error pipe, a kept descriptor.
#[inline(always)]
pub(crate) fn skip(fd: usize, keep: &[c_int], error_pipe: c_int) -> bool {
    fd < 3 || fd == error_pipe as usize || kept(keep, fd)
}

/// The inclusive range `from..=to` less `pipe` (the error pipe's descriptor; -1: none), as two
/// ranges, either of which may be empty (`from > to`).
#[inline(always)]
pub(crate) fn around(from: usize, to: usize, pipe: c_int) -> [[usize; 2]; 2] {
    let p = pipe as usize;
    if pipe >= 0 && from <= p && p <= to {
        [[from, p.wrapping_sub(1)], [p.wrapping_add(1), to]]
    } else {
        [[from, to], [1, 0]]
    }
}

/// A buffer for `getdents64` records, aligned as the kernel lays them out.
#[repr(C, align(8))]
pub(crate) struct DirBuffer(pub [u8; 512]);

/// The length of the `getdents64` record at the start of `rest` (`d_reclen`: bytes 16 and
/// 17, little-endian), or `None` when `rest` is shorter than a record's fixed part.
#[inline(always)]
pub(crate) fn record_length(rest: &[u8]) -> Option<usize> {
    match rest {
        [_, _, _, _, _, _, _, _, _, _, _, _, _, _, _, _, lo, hi, _, ..] => {
            Some(*lo as usize | (*hi as usize) << 8)
        }
        _ => None,
    }
}

/// `rest` without its first `n` bytes (empty when it is shorter), one byte at a time: a
/// slice index would bring a panic path into the child.
#[inline(always)]
pub(crate) fn after(mut rest: &[u8], mut n: usize) -> &[u8] {
    while n > 0 {
        match rest {
            [_, tail @ ..] => rest = tail,
            [] => break,
        }
        n = n.wrapping_sub(1);
    }
    rest
}

/// The decimal descriptor number in the name of the record at the start of `record`, or -1
/// (`.`, `..`, anything else).
#[inline(always)]
pub(crate) fn descriptor_number(record: &[u8]) -> i64 {
    let mut name = match record {
        [_, _, _, _, _, _, _, _, _, _, _, _, _, _, _, _, _, _, _, name @ ..] => name,
        _ => return -1,
    };
    let (mut fd, mut digits) = (0i64, 0u32);
    while let [d, tail @ ..] = name {
        if *d == 0 {
            break;
        }
        if *d < b'0' || *d > b'9' || digits >= 10 {
            return -1;
        }
        fd = fd
            .wrapping_mul(10)
            .wrapping_add((*d).wrapping_sub(b'0') as i64);
        digits = digits.wrapping_add(1);
        name = tail;
    }
    if digits == 0 {
        -1
    } else {
        fd
    }
}

#[cfg(test)]
mod tests {
    use super::{after, around, record_length};

    #[test]
    fn a_range_is_closed_around_the_error_pipe_only_when_it_holds_it() {
        assert_eq!(around(3, 10, 5), [[3, 4], [6, 10]]);
        assert_eq!(around(3, 10, 3), [[3, 2], [4, 10]]);
        assert_eq!(around(3, 10, 11), [[3, 10], [1, 0]]);
        assert_eq!(around(3, 10, -1), [[3, 10], [1, 0]]);
    }

    #[test]
    fn records_are_walked_by_their_length_and_never_past_the_end() {
        let mut bytes = [0u8; 24];
        bytes[16] = 0x18;
        assert_eq!(record_length(&bytes), Some(24));
        bytes[17] = 1;
        assert_eq!(record_length(&bytes), Some(280));
        assert_eq!(record_length(&bytes[..18]), None);
        assert_eq!(after(&bytes, 20), &bytes[20..]);
        assert!(after(&bytes, 280).is_empty());
    }
}
