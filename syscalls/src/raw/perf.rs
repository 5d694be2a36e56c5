//! The one `perf_event_open(2)` call. The struct, its constants and the safe front are in
//! [`crate::abi::perf`] and [`crate::perf`]; a counter is read with a plain safe `read(2)`.
//!
//! The one surprise for an auditor: the kernel does not only read the attribute struct. When it
//! rejects the size it **writes** its own `sizeof(struct perf_event_attr)` back into
//! `attr->size` (`perf_copy_attr()` in kernel/events/core.c, at `err_size`:
//! `put_user(sizeof(*attr), &uattr->size)`), so the struct is lent mutably, and the safe front
//! passes a private copy, never the caller's.
#![allow(unsafe_code)]

use super::syscall6;
use crate::abi::nr;
use crate::abi::perf::PerfEventAttr;
use crate::errno::{check, Errno};
use core::mem::size_of;
use rustix::fd::{FromRawFd, OwnedFd};

/// `perf_event_open(attr, pid, cpu, group_fd, flags)` on a struct lent mutably. `pid` is a PID,
/// 0, -1, or a cgroup descriptor that the caller borrows for the call; `group_fd` is -1 or a
/// descriptor the caller borrows for the call.
pub(crate) fn perf_event_open(
    attr: &mut PerfEventAttr,
    pid: i32,
    cpu: i32,
    group_fd: i32,
    flags: u64,
) -> Result<OwnedFd, Errno> {
    if attr.size as usize > size_of::<PerfEventAttr>() {
        return Err(Errno::INVAL);
    }
    let attr_ptr = attr as *mut PerfEventAttr as usize;
    let (pid, cpu, group) = (pid as isize as usize, cpu as isize, group_fd as isize);
    let args = [
        attr_ptr,
        pid,
        cpu as usize,
        group as usize,
        flags as usize,
        0,
    ];
    // SAFETY:
    // - Pointer valid and aligned: `attr` is a live, exclusively borrowed `#[repr(C)]` struct
    //   whose layout is asserted in `abi::perf`; the kernel reads `attr.size` bytes, checked
    //   above to be within it.
    // - No aliasing: the kernel's one write is `size` on E2BIG, through the exclusive borrow; any
    //   `u32` is a valid `size`. It keeps no pointer into `attr` after the call.
    // - Lives long enough: no memory of ours is written later either, since the kernel writes
    //   samples only into a ring buffer, and none exists until the caller mmaps the fd.
    // - `pid`, `group_fd` are descriptors the caller borrows for this call (or plain numbers);
    //   the kernel only looks them up.
    let ret = unsafe { syscall6(nr::PERF_EVENT_OPEN, args) };
    let fd = check(ret)? as i32;
    // SAFETY: "perf_event_open() returns the new file descriptor" (RETURN VALUE): a descriptor
    // of this process that nothing else owns, so the `OwnedFd` closes it exactly once.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}
