//! A perf ring buffer shared with the kernel: the one mapping of a perf event's descriptor, the
//! `data_head`/`data_tail` protocol with its memory ordering, and the `ioctl`s that enable,
//! disable and redirect events. The safe front, with the documentation and the framing of
//! records, is [`crate::ring`].
//!
//! The protocol, as the kernel states it (`perf_output_put_handle()` in
//! kernel/events/ring_buffer.c) with the reader's side done here:
//!
//! ```text
//!   kernel                          reader (RingMap)
//!   if (LOAD ->data_tail) {         LOAD ->data_head    Acquire       (C)
//!                 (A)               LOAD $data          the slices
//!     STORE $data                   STORE ->data_tail   Release       (D)
//!     smp_wmb()   (B)
//!     STORE ->data_head
//!   }
//! ```
//!
//! (B) pairs with (C): every byte below a `data_head` we loaded was written before it and is
//! visible to us. (A) pairs with (D): the kernel writes over a byte only after it has loaded a
//! `data_tail` past it, and every read of ours that precedes the Release store of that tail
//! happens before it. A ring mapped writable is never overwritten: when it is full the kernel
//! drops records, counts them, and writes a `PERF_RECORD_LOST` once another record fits.
//!
//! The kernel's diagram asks for `smp_rmb()` at (C) and `smp_mb()` at (D). An Acquire load and
//! a Release store suffice: (C) needs the loads of the data ordered after the load of the
//! head, which Acquire gives; (D) needs the loads of the data ordered before the store of the
//! tail, which Release gives (a full barrier would also order later loads, which nothing here
//! needs). It is what the kernel's own reader does: `ring_buffer_read_head()` in
//! tools/include/linux/ring_buffer.h is `smp_load_acquire(&base->data_head)` on x86_64 and
//! aarch64, `ring_buffer_write_tail()` is `smp_store_release(&base->data_tail, tail)`, and its
//! comment says so ("we could also use smp_store_release() in B and D as well as
//! smp_load_acquire() in C"). Read in Linux 6.1.192 and 6.12.118.
#![allow(unsafe_code)]

use crate::abi::perf::mmap_page::{DATA_HEAD, DATA_OFFSET, DATA_SIZE, DATA_TAIL};
use crate::abi::perf::{PERF_EVENT_IOC_DISABLE, PERF_EVENT_IOC_ENABLE, PERF_EVENT_IOC_SET_OUTPUT};
use crate::errno::Errno;
use core::cell::Cell;
use core::ffi::c_void;
use core::ptr::NonNull;
use core::sync::atomic::{AtomicU64, Ordering};
use rustix::fd::BorrowedFd;
// `Opcode` is `u32` in rustix's raw backend and `c_ulong` in its libc one (Miri's).
use rustix::ioctl::{IntegerSetter, Opcode};

/// The mapping of one perf event's ring: a metadata page (`struct perf_event_mmap_page`), then
/// `data_size` bytes of records. Owned: unmapped on drop.
///
/// The one invariant everything below rests on: **this value is the ring's only reader**, the
/// only one that moves `data_tail`. It holds because [`RingMap::map`] is only called by
/// [`crate::ring::PerfRing::open`] on an event it has just opened (so the kernel makes a new
/// ring for this mapping), perf mappings are `VM_DONTCOPY` (no forked child inherits them),
/// and any other mapping of the same event would need an `unsafe` `mmap` of its own.
pub(crate) struct RingMap {
    /// The start of the mapping (the metadata page), page aligned.
    base: NonNull<c_void>,
    /// Bytes mapped: one page plus the data pages.
    len: usize,
    /// Where the data pages start, from `base`.
    data_offset: usize,
    /// Bytes of data, a power of two.
    data_size: u64,
    /// What this reader has consumed: the value last stored to `data_tail`.
    tail: u64,
    /// The `data_head` last loaded by [`RingMap::unread`]: [`RingMap::consume`] never goes past
    /// it.
    head: Cell<u64>,
}

/// `ioctl(fd, PERF_EVENT_IOC_ENABLE | _DISABLE, flags)`.
pub(crate) fn enable(fd: BorrowedFd<'_>, on: bool, flags: usize) -> Result<(), Errno> {
    const ON: Opcode = PERF_EVENT_IOC_ENABLE as Opcode;
    const OFF: Opcode = PERF_EVENT_IOC_DISABLE as Opcode;
    if on {
        // SAFETY: ENABLE takes an integer (the flags), so no memory is passed.
        let request = unsafe { IntegerSetter::<ON>::new_usize(flags) };
        // SAFETY: `fd` is borrowed, so open for the call; the request passes no pointer.
        unsafe { rustix::ioctl::ioctl(fd, request) }.map_err(Errno::from)
    } else {
        // SAFETY: DISABLE takes an integer (the flags), so no memory is passed.
        let request = unsafe { IntegerSetter::<OFF>::new_usize(flags) };
        // SAFETY: `fd` is borrowed, so open for the call; the request passes no pointer.
        unsafe { rustix::ioctl::ioctl(fd, request) }.map_err(Errno::from)
    }
}

/// `ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, target)`: `fd`'s records go to `target`'s ring.
pub(crate) fn set_output(fd: BorrowedFd<'_>, target: BorrowedFd<'_>) -> Result<(), Errno> {
    use rustix::fd::AsRawFd;
    const SET_OUTPUT: Opcode = PERF_EVENT_IOC_SET_OUTPUT as Opcode;
    let target = target.as_raw_fd() as usize;
    // SAFETY: SET_OUTPUT takes an integer, a descriptor number; `target` is borrowed, so open
    // for the call, and the kernel only looks it up (it takes its own reference to the ring).
    let request = unsafe { IntegerSetter::<SET_OUTPUT>::new_usize(target) };
    // SAFETY: `fd` is borrowed, so open for the call; the request passes no pointer.
    unsafe { rustix::ioctl::ioctl(fd, request) }.map_err(Errno::from)
}

impl RingMap {
    /// Maps the ring of the perf event `fd`: one metadata page and `data_pages` pages of data
    /// (a power of two), readable and writable (so that the kernel honours `data_tail`).
    ///
    /// # Errors
    /// `EINVAL` for a `data_pages` that is not a power of two, or a metadata page whose
    /// `data_offset`/`data_size` do not describe the mapping; mmap's errors (`EPERM` past
    /// `perf_event_mlock_kb` without CAP_IPC_LOCK, `EINVAL` for an event that cannot be mapped).
    pub(crate) fn map(fd: BorrowedFd<'_>, data_pages: usize) -> Result<RingMap, Errno> {
        use rustix::mm::{mmap, munmap, MapFlags, ProtFlags};
        let page = rustix::param::page_size();
        if !data_pages.is_power_of_two() {
            return Err(Errno::INVAL);
        }
        let len = data_pages
            .checked_add(1)
            .and_then(|n| n.checked_mul(page))
            .ok_or(Errno::INVAL)?;
        let prot = ProtFlags::READ | ProtFlags::WRITE;
        // SAFETY: a null hint lets the kernel choose fresh addresses, so no existing mapping
        // (and no Rust-owned memory) is replaced. The mapping is owned by the `RingMap` made
        // below (or unmapped here on error) and read only through its methods.
        let base = unsafe { mmap(core::ptr::null_mut(), len, prot, MapFlags::SHARED, fd, 0) }
            .map_err(Errno::from)?;
        let base = NonNull::new(base).ok_or(Errno::INVAL)?;
        let expected = (page as u64, (data_pages * page) as u64);
        let found = (header(base, DATA_OFFSET), header(base, DATA_SIZE));
        // Linux < 4.1 leaves both 0: the data then starts at the second page.
        if found != expected && found != (0, 0) {
            // SAFETY: exactly the mapping made above, owned here and never borrowed.
            let unmapped = unsafe { munmap(base.as_ptr(), len) };
            unmapped.map_err(Errno::from)?;
            return Err(Errno::INVAL);
        }
        Ok(RingMap {
            base,
            len,
            data_offset: page,
            data_size: expected.1,
            tail: 0,
            head: Cell::new(0),
        })
    }

    /// The address of the `u64` field at `offset` of the metadata page.
    fn field(&self, offset: usize) -> *mut u64 {
        self.base.as_ptr().wrapping_byte_add(offset).cast()
    }

    /// `data_head` or `data_tail` as the atomic the protocol reads and writes.
    fn atomic(&self, offset: usize) -> &AtomicU64 {
        // SAFETY:
        // - Valid and aligned: `offset` is `DATA_HEAD` or `DATA_TAIL`, 8-byte aligned (the
        //   alignment of `AtomicU64` on x86_64 and aarch64) inside the live first page.
        // - Lives long enough: the reference borrows `self`, which owns the mapping.
        // - No mixed accesses: the kernel reads and writes these fields only with
        //   READ_ONCE/WRITE_ONCE and `smp_store_release` of a whole aligned `u64` (single-copy
        //   atomic on both architectures), and this module touches them only through here.
        unsafe { AtomicU64::from_ptr(self.field(offset)) }
    }

    /// The bytes written and not yet consumed, in ring order: up to the end of the data pages,
    /// then from their start (empty unless the unread bytes wrap). `EIO` when the kernel's
    /// `data_head` is behind our tail or more than a ring ahead of it (a ring written backwards,
    /// `write_backward`, whose head moves down from 0; the ring is then left alone).
    pub(crate) fn unread(&self) -> Result<(&[u8], &[u8]), Errno> {
        // (C): every byte below this head is written and visible before the loads below.
        let head = self.atomic(DATA_HEAD).load(Ordering::Acquire);
        let available = head.wrapping_sub(self.tail);
        if available > self.data_size {
            return Err(Errno::IO);
        }
        self.head.set(head);
        let start = (self.tail & (self.data_size - 1)) as usize;
        let first = (available as usize).min(self.data_size as usize - start);
        let second = available as usize - first;
        let data = self
            .base
            .as_ptr()
            .wrapping_byte_add(self.data_offset)
            .cast::<u8>();
        // SAFETY:
        // - Valid and aligned: `data + start .. + first` lies in the data pages of the live
        //   mapping (`start + first ≤ data_size`, the data pages end at `len`); `u8` has
        //   alignment 1.
        // - Lives long enough: the slice borrows `self`, which owns the mapping.
        // - Initialised before read: these bytes lie between `data_tail` and the `data_head`
        //   loaded with Acquire above; the kernel wrote them before its `smp_wmb()` and store
        //   of that head (B), so they are written and visible.
        // - No aliasing: the kernel writes a forward ring only at or past `data_head` and below
        //   `data_tail + data_size` (A): never these bytes while `data_tail` stays put, and only
        //   `consume` moves it, which takes `&mut self`, so no slice survives the move. (A ring
        //   written backwards, `write_backward`, writes below its head; its head is then below
        //   our tail, `available` exceeds `data_size`, and no slice is made: the EIO above.)
        //   This value is the ring's only reader (the type's invariant).
        let first = unsafe { core::slice::from_raw_parts(data.wrapping_add(start), first) };
        // SAFETY: the same as above for the wrapped part, `data .. data + second`, with
        // `second ≤ start` (the unread bytes are at most `data_size`), so it is in the data
        // pages and disjoint from `first`.
        let second = unsafe { core::slice::from_raw_parts(data, second) };
        Ok((first, second))
    }

    /// Hands `bytes` of the unread records back to the kernel (at most what the last
    /// [`RingMap::unread`] returned).
    pub(crate) fn consume(&mut self, bytes: u64) {
        let head = self.head.get();
        self.tail = self
            .tail
            .wrapping_add(bytes.min(head.wrapping_sub(self.tail)));
        // (D): the reads of the consumed bytes (the slices, now gone with the `&self` borrow)
        // come before the kernel can see the new tail and write over them.
        self.atomic(DATA_TAIL).store(self.tail, Ordering::Release);
    }

    /// The size of the data pages in bytes.
    pub(crate) fn data_size(&self) -> u64 {
        self.data_size
    }
}

/// A field of the metadata page at `base` that the kernel wrote before `mmap` returned.
fn header(base: NonNull<c_void>, offset: usize) -> u64 {
    let field = base.as_ptr().wrapping_byte_add(offset).cast::<u64>();
    // SAFETY:
    // - Valid and aligned: `offset` is `DATA_OFFSET` or `DATA_SIZE`, 8-byte aligned and inside
    //   the first page of the mapping just made at `base`, which the caller still holds.
    // - Initialised before read: the kernel fills both (`perf_event_init_userpage()` in
    //   kernel/events/core.c) before `mmap` returns, on a page it zeroed; any 8 bytes are a
    //   valid `u64`.
    // - No aliasing: the kernel does not write these fields after the mapping is made, and no
    //   reference into the mapping exists yet.
    unsafe { field.read_volatile() }
}

impl Drop for RingMap {
    fn drop(&mut self) {
        // SAFETY: `base`/`len` is exactly the mapping made in `map`, owned by this value; every
        // slice into it borrowed `self`, so none is alive while it is dropped.
        let _ = unsafe { rustix::mm::munmap(self.base.as_ptr(), self.len) };
    }
}
