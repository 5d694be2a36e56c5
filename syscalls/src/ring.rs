//! Perf records from a ring buffer shared with the kernel: [`PerfRing`] opens a group of events
//! on one CPU (or task), sends all their records into the leader's ring and maps it; [`frame`]
//! cuts the bytes the kernel wrote into records, and [`time_and_raw`] / [`switch_in`] /
//! [`lost_count`] read the kinds a scheduler tracer needs, [`task_record`] the creation and
//! exit of tasks; [`PerfRing::lost`] says how many records the kernel could not write. The framing is pure and total (any bytes give
//! records or `malformed`, never a panic): the fuzz target `perf_records` checks it.
//!
//! The mapping and the `data_head`/`data_tail` protocol are in `raw::ring`, with their proofs.
//!
//! # References
//! [perf_event_open(2)](https://man7.org/linux/man-pages/man2/perf_event_open.2.html), "MMAP
//! layout" and "PERF_RECORD_SAMPLE"; [mmap(2)](https://man7.org/linux/man-pages/man2/mmap.2.html);
//! [ioctl(2)](https://man7.org/linux/man-pages/man2/ioctl.2.html).
#![forbid(unsafe_code)]

use crate::abi::perf::{PerfEventAttr, PERF_FLAG_FD_CLOEXEC};
use crate::errno::Errno;
use crate::perf::{perf_event_open, PerfTarget};
use crate::raw::ring::{self as raw, RingMap};
use alloc::vec::Vec;
use rustix::fd::{AsFd, OwnedFd};

/// The header of every perf record: `u32 type`, `u16 misc`, `u16 size` (header included).
pub const HEADER_BYTES: usize = 8;

/// One record, its header decoded: `kind` is `PERF_RECORD_*`, `body` the bytes after the
/// header (`size - 8` of them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Record<'a> {
    /// `PERF_RECORD_SAMPLE`, `PERF_RECORD_LOST`, …
    pub kind: u32,
    /// `misc`: the CPU mode and flags.
    pub misc: u16,
    /// The record after its header.
    pub body: &'a [u8],
}

/// What [`frame`] made of the bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Framed {
    /// Whole records handed out.
    pub records: u64,
    /// Their bytes, headers included: what may be handed back to the kernel.
    pub bytes: u64,
    /// A header with a size below 8, or a record running past the bytes given: the rest could
    /// not be cut into records (the kernel never publishes such bytes).
    pub malformed: bool,
}

/// A ring's unread bytes: up to the end of its data pages, then from their start.
#[derive(Clone, Copy, Debug)]
pub struct Unread<'a> {
    /// The bytes up to the end of the data pages.
    pub first: &'a [u8],
    /// The bytes that wrapped to their start.
    pub second: &'a [u8],
}

/// A header whose size is below 8, or a record running past the unread bytes: nothing from
/// there on can be cut into records (the kernel never publishes such bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Malformed;

impl<'a> Unread<'a> {
    /// How many bytes are unread.
    pub fn len(&self) -> usize {
        self.first.len() + self.second.len()
    }

    /// Whether nothing is unread.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The record at byte `at` and the offset of the next one; `Ok(None)` at the end. A
    /// record that straddles the end of the data pages is copied into `scratch`, so every body
    /// handed out is contiguous.
    pub fn record_at<'s>(
        &'s self,
        at: usize,
        scratch: &'s mut Vec<u8>,
    ) -> Result<Option<(Record<'s>, usize)>, Malformed> {
        let (first, second, total) = (self.first, self.second, self.len());
        if at >= total {
            return Ok(None);
        }
        let mut header = [0u8; HEADER_BYTES];
        if !copy_out(first, second, at, &mut header) {
            return Err(Malformed);
        }
        let kind = u32::from_ne_bytes([header[0], header[1], header[2], header[3]]);
        let misc = u16::from_ne_bytes([header[4], header[5]]);
        let size = usize::from(u16::from_ne_bytes([header[6], header[7]]));
        if size < HEADER_BYTES || size > total - at {
            return Err(Malformed);
        }
        let (from, to) = (at + HEADER_BYTES, at + size);
        let body: &[u8] = if to <= first.len() {
            &first[from..to]
        } else if from >= first.len() {
            &second[from - first.len()..to - first.len()]
        } else {
            scratch.clear();
            scratch.resize(to - from, 0);
            copy_out(first, second, from, scratch);
            scratch
        };
        Ok(Some((Record { kind, misc, body }, to)))
    }
}

/// Cuts `first` followed by `second` (a ring's unread bytes, wrapped at its end) into records,
/// calling `each` for every whole one in order (see [`Unread::record_at`]). Stops at the first
/// malformed header.
pub fn frame(
    first: &[u8],
    second: &[u8],
    scratch: &mut Vec<u8>,
    mut each: impl FnMut(Record<'_>),
) -> Framed {
    let unread = Unread { first, second };
    let mut framed = Framed::default();
    let mut at = 0usize;
    loop {
        match unread.record_at(at, scratch) {
            Ok(Some((record, next))) => {
                each(record);
                framed.records += 1;
                framed.bytes += (next - at) as u64;
                at = next;
            }
            Ok(None) => break,
            Err(Malformed) => {
                framed.malformed = true;
                break;
            }
        }
    }
    framed
}

/// Copies `out.len()` bytes at `at` of `first` followed by `second` into `out`; `false` when
/// they run past the end.
fn copy_out(first: &[u8], second: &[u8], at: usize, out: &mut [u8]) -> bool {
    let end = match at.checked_add(out.len()) {
        Some(end) if end <= first.len() + second.len() => end,
        _ => return false,
    };
    for (k, slot) in (at..end).zip(out.iter_mut()) {
        *slot = if k < first.len() {
            first[k]
        } else {
            second[k - first.len()]
        };
    }
    true
}

/// The time and the raw tracepoint bytes of a `PERF_RECORD_SAMPLE` body whose event had
/// `sample_type = PERF_SAMPLE_TIME | PERF_SAMPLE_RAW` (and nothing else): `u64 time`,
/// `u32 size`, `size` bytes. `None` when the body is too short for what it announces.
pub fn time_and_raw(body: &[u8]) -> Option<(u64, &[u8])> {
    let time = u64::from_ne_bytes(body.get(..8)?.try_into().ok()?);
    let size = u32::from_ne_bytes(body.get(8..12)?.try_into().ok()?) as usize;
    let raw = body.get(12..12usize.checked_add(size)?)?;
    Some((time, raw))
}

/// A dummy event whose only records are its CPU's context switches, each with the current task
/// and the time on `CLOCK_MONOTONIC` (what [`switch_in`] reads): `context_switch` and
/// `sample_id_all` with `sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME`. Opened enabled, as a
/// group's member must be ([`PerfRing::open`]); such records are written from its open on,
/// whether its leader is enabled or not.
pub fn switch_records_attr() -> PerfEventAttr {
    use crate::abi::perf::{
        attr_flags, ATTR_USE_CLOCKID, CLOCK_MONOTONIC, PERF_COUNT_SW_DUMMY, PERF_SAMPLE_TID,
        PERF_SAMPLE_TIME, PERF_TYPE_SOFTWARE,
    };
    let mut attr = PerfEventAttr::counting(PERF_TYPE_SOFTWARE, PERF_COUNT_SW_DUMMY);
    attr.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME;
    attr.flags = attr_flags::SAMPLE_ID_ALL | attr_flags::CONTEXT_SWITCH | ATTR_USE_CLOCKID;
    attr.clockid = CLOCK_MONOTONIC;
    attr
}

/// The time and the arriving thread of a `PERF_RECORD_SWITCH_CPU_WIDE` written as a task
/// arrives on the CPU, from an event like [`switch_records_attr`] (`sample_id_all`,
/// `sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME`): `u32 next_prev_pid`,
/// `u32 next_prev_tid` (the task it replaced), then `sample_id`: `u32 pid`, `u32 tid` (the
/// arriving task, current when the record is written), `u64 time`. `None` for another kind, a
/// switch out, or a short body.
pub fn switch_in(record: &Record<'_>) -> Option<(u64, u32)> {
    use crate::abi::perf::{PERF_RECORD_MISC_SWITCH_OUT, PERF_RECORD_SWITCH_CPU_WIDE};
    if record.kind != PERF_RECORD_SWITCH_CPU_WIDE || record.misc & PERF_RECORD_MISC_SWITCH_OUT != 0
    {
        return None;
    }
    let tid = u32::from_ne_bytes(record.body.get(12..16)?.try_into().ok()?);
    let time = u64::from_ne_bytes(record.body.get(16..24)?.try_into().ok()?);
    Some((time, tid))
}

/// A dummy event whose only records are the creation and exit of tasks
/// (`PERF_RECORD_FORK`/`_EXIT`, read by [`task_record`]), with their time on
/// `CLOCK_MONOTONIC`: `task` and `inherit`, so that, opened on a process, it follows every task
/// that process creates afterwards and their descendants, each written in the ring of the CPU
/// it happened on (open one per CPU: an inherited event on every CPU, `cpu = -1`, cannot be
/// mapped). `exclude_kernel`, as `perf_event_paranoid` 2 asks of an unprivileged user; the
/// records are written all the same. Opened enabled.
pub fn task_records_attr() -> PerfEventAttr {
    use crate::abi::perf::{
        attr_flags, ATTR_USE_CLOCKID, CLOCK_MONOTONIC, PERF_COUNT_SW_DUMMY, PERF_TYPE_SOFTWARE,
    };
    let mut attr = PerfEventAttr::counting(PERF_TYPE_SOFTWARE, PERF_COUNT_SW_DUMMY);
    attr.flags = attr_flags::TASK
        | attr_flags::INHERIT
        | attr_flags::EXCLUDE_KERNEL
        | attr_flags::EXCLUDE_HV
        | ATTR_USE_CLOCKID;
    attr.clockid = CLOCK_MONOTONIC;
    attr
}

/// A task's creation or exit, from a `PERF_RECORD_FORK` or `PERF_RECORD_EXIT`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TaskRecord {
    /// Created (`PERF_RECORD_FORK`), else exited.
    pub fork: bool,
    /// The task's process (thread group) ID.
    pub pid: u32,
    /// Its thread ID.
    pub tid: u32,
    /// For a creation, the process of the thread that created it; for an exit, the parent
    /// process.
    pub ppid: u32,
    /// The time, ns of the event's clock.
    pub time_ns: u64,
}

/// The task record of a `PERF_RECORD_FORK` or `PERF_RECORD_EXIT` body (`u32 pid, ppid, tid,
/// ptid`, `u64 time`); `None` for another kind or a short body.
pub fn task_record(record: &Record<'_>) -> Option<TaskRecord> {
    use crate::abi::perf::{PERF_RECORD_EXIT, PERF_RECORD_FORK};
    let fork = match record.kind {
        PERF_RECORD_FORK => true,
        PERF_RECORD_EXIT => false,
        _ => return None,
    };
    let word = |at: usize| -> Option<u32> {
        Some(u32::from_ne_bytes(
            record.body.get(at..at + 4)?.try_into().ok()?,
        ))
    };
    Some(TaskRecord {
        fork,
        pid: word(0)?,
        ppid: word(4)?,
        tid: word(8)?,
        time_ns: u64::from_ne_bytes(record.body.get(16..24)?.try_into().ok()?),
    })
}

/// How many samples a `PERF_RECORD_LOST` body (`u64 id`, `u64 lost`) or a
/// `PERF_RECORD_LOST_SAMPLES` body (`u64 lost`) says were dropped; `None` for another kind or
/// a short body.
pub fn lost_count(record: &Record<'_>) -> Option<u64> {
    use crate::abi::perf::{PERF_RECORD_LOST, PERF_RECORD_LOST_SAMPLES};
    let at = match record.kind {
        PERF_RECORD_LOST => 8,
        PERF_RECORD_LOST_SAMPLES => 0,
        _ => return None,
    };
    Some(u64::from_ne_bytes(
        record.body.get(at..at + 8)?.try_into().ok()?,
    ))
}

/// What a ring knows of the records its events could not write ([`PerfRing::lost`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lost {
    /// The kernel's count (`PERF_FORMAT_LOST`, Linux ≥ 6.0): records the group's events failed
    /// to write since the ring was opened, side-band records (switches, task records) included.
    Counted(u64),
    /// An older kernel counts nothing that a reader can ask for; it writes a `PERF_RECORD_LOST`
    /// only once another record fits again, which may never happen. `ring_filled`: some read
    /// since the ring was opened found it too full for one more record of the largest size the
    /// caller named, so records may have been dropped. (The unread bytes only grow between two
    /// reads, so a ring that every read found with room to spare dropped nothing.)
    Uncounted {
        /// A read found less room than the largest record.
        ring_filled: bool,
    },
}

/// A group of perf events on one CPU (or task) whose records all go into the leader's ring,
/// mapped here. Dropping it unmaps the ring and closes the events.
pub struct PerfRing {
    map: RingMap,
    leader: OwnedFd,
    /// The other events of the group, kept open; their records go to the leader's ring.
    members: Vec<OwnedFd>,
    /// A record that wraps the ring's end, copied out.
    scratch: Vec<u8>,
    /// Every event was opened with `PERF_FORMAT_LOST`: a read of it ends with its lost count.
    counts_lost: bool,
    /// The most unread bytes a read has found since the ring was opened.
    fullest: core::cell::Cell<u64>,
}

/// Whether the kernel takes `PERF_FORMAT_LOST`: 0 not known yet, 1 yes, 2 no (`EINVAL`).
static FORMAT_LOST: core::sync::atomic::AtomicU8 = core::sync::atomic::AtomicU8::new(0);

/// Opens `attr` with `PERF_FORMAT_LOST` added where the kernel takes it (probed on the first
/// open: an `EINVAL` that goes away without the flag means a kernel before 6.0). Returns the
/// descriptor and whether the flag is on.
fn open_counting_lost(
    attr: &PerfEventAttr,
    target: PerfTarget<'_>,
    cpu: i32,
    group: Option<rustix::fd::BorrowedFd<'_>>,
) -> Result<(OwnedFd, bool), Errno> {
    use crate::abi::perf::PERF_FORMAT_LOST;
    use core::sync::atomic::Ordering;
    let open =
        |attr: &PerfEventAttr| perf_event_open(attr, target, cpu, group, PERF_FLAG_FD_CLOEXEC);
    let known = FORMAT_LOST.load(Ordering::Acquire);
    let refused = known == 2 || format_lost_refused_for_tests();
    if refused || attr.read_format & PERF_FORMAT_LOST != 0 {
        return open(attr).map(|fd| (fd, !refused));
    }
    let mut with_lost = *attr;
    with_lost.read_format |= PERF_FORMAT_LOST;
    match open(&with_lost) {
        Ok(fd) => {
            FORMAT_LOST.store(1, Ordering::Release);
            Ok((fd, true))
        }
        Err(Errno::INVAL) if known == 0 => {
            let fd = open(attr)?;
            FORMAT_LOST.store(2, Ordering::Release);
            Ok((fd, false))
        }
        Err(e) => Err(e),
    }
}

/// Test builds: whether `PERF_FORMAT_LOST` is to be taken as refused, as by a kernel < 6.0.
fn format_lost_refused_for_tests() -> bool {
    #[cfg(test)]
    if crate::test_hooks::on(&crate::test_hooks::NO_PERF_FORMAT_LOST) {
        return true;
    }
    false
}

impl PerfRing {
    /// Opens `attrs` on `target` and `cpu` as one group (the first is the leader; open it with
    /// `disabled` and the others without, and [`PerfRing::enable`] starts them together),
    /// redirects every member's records into the leader's ring, and maps that ring with
    /// `data_pages` pages of data (a power of two).
    ///
    /// Every event is opened with `PERF_FORMAT_LOST` added to its `read_format` where the
    /// kernel takes it (Linux ≥ 6.0), so that [`PerfRing::lost`] can tell how many records
    /// were dropped even when no later record fits to say so.
    ///
    /// # Errors
    /// `EINVAL` without attributes, for `data_pages` not a power of two, or for an attribute
    /// with `PERF_FORMAT_GROUP` (a read of each event must end with its own lost count); those
    /// of [`perf_event_open`] (`EACCES` for system-wide events without root or CAP_PERFMON,
    /// `ENODEV` for an offline CPU), of `mmap` (`EPERM` past `perf_event_mlock_kb`; `EINVAL`
    /// for an inherited event on every CPU, which cannot be mapped) and of
    /// `PERF_EVENT_IOC_SET_OUTPUT`.
    pub fn open(
        attrs: &[PerfEventAttr],
        target: PerfTarget<'_>,
        cpu: i32,
        data_pages: usize,
    ) -> Result<PerfRing, Errno> {
        use crate::abi::perf::PERF_FORMAT_GROUP;
        let (leader_attr, others) = attrs.split_first().ok_or(Errno::INVAL)?;
        if attrs.iter().any(|a| a.read_format & PERF_FORMAT_GROUP != 0) {
            return Err(Errno::INVAL);
        }
        let (leader, mut counts_lost) = open_counting_lost(leader_attr, target, cpu, None)?;
        let map = RingMap::map(leader.as_fd(), data_pages)?;
        let mut members = Vec::with_capacity(others.len());
        for attr in others {
            let (fd, counted) = open_counting_lost(attr, target, cpu, Some(leader.as_fd()))?;
            counts_lost &= counted;
            raw::set_output(fd.as_fd(), leader.as_fd())?;
            members.push(fd);
        }
        Ok(PerfRing {
            map,
            leader,
            members,
            scratch: Vec::new(),
            counts_lost,
            fullest: core::cell::Cell::new(0),
        })
    }

    /// The records the group could not write since the ring was opened: the kernel's count
    /// where it keeps one (Linux ≥ 6.0, one `read(2)` per event), else whether a read ever
    /// found the ring with less room than `largest_record_bytes` (see [`Lost::Uncounted`]).
    ///
    /// A full ring says nothing in its records until another record fits: the kernel writes
    /// its `PERF_RECORD_LOST` (what [`lost_count`] reads) just before the next record it has
    /// room for. A reader that stops before then, at the end of a run, would read 0.
    ///
    /// # Errors
    /// Those of read(2) on the events (none expected); `EIO` for a read shorter than a count.
    ///
    /// [read(2)]: https://man7.org/linux/man-pages/man2/read.2.html
    pub fn lost(&self, largest_record_bytes: u64) -> Result<Lost, Errno> {
        if !self.counts_lost {
            // The kernel keeps one byte free (`CIRC_SPACE` in `ring_buffer_has_space`): a
            // record fits while the unread bytes and it stay below the ring's size.
            let fullest = self.fullest.get();
            let ring_filled = fullest.saturating_add(largest_record_bytes) >= self.data_bytes();
            return Ok(Lost::Uncounted { ring_filled });
        }
        let mut total = 0u64;
        for event in core::iter::once(&self.leader).chain(&self.members) {
            // value, then up to three optional words, then the lost count (read_format order).
            let mut words = [0u8; 40];
            let n = rustix::io::read(event, &mut words).map_err(Errno::from)?;
            let last = words.get(n.wrapping_sub(8)..n).ok_or(Errno::IO)?;
            let lost = u64::from_ne_bytes(last.try_into().map_err(|_| Errno::IO)?);
            total = total.saturating_add(lost);
        }
        Ok(Lost::Counted(total))
    }

    /// Starts the group: `PERF_EVENT_IOC_ENABLE` on the leader alone. The other events were
    /// opened enabled ([`PerfRing::open`]) and are scheduled with their leader, so one call does
    /// it; with `PERF_IOC_FLAG_GROUP` the kernel would make one call per event, each a
    /// cross-CPU call for an event on another CPU.
    pub fn enable(&self) -> Result<(), Errno> {
        raw::enable(self.leader.as_fd(), true, 0)
    }

    /// Stops the group (the leader, which takes its group off the CPU with it). When it returns,
    /// the events are off every CPU, so every record they wrote is in the ring.
    pub fn disable(&self) -> Result<(), Errno> {
        raw::enable(self.leader.as_fd(), false, 0)
    }

    /// Waits until the CPU of an event opened on one CPU has finished every record it was
    /// writing with interrupts disabled: reads the leader's count ([read(2)] of a perf event),
    /// which the kernel, for an event active on another CPU, does by a call on that CPU and
    /// waits for. A context switch or wake-up (written with interrupts disabled) whose time
    /// precedes the call is in the ring when this returns. Cheaper than [`PerfRing::disable`]
    /// and [`PerfRing::enable`] around a read: one cross-CPU call instead of two, and the group
    /// keeps running.
    ///
    /// # Errors
    /// Those of read(2) on the leader (none expected).
    ///
    /// [read(2)]: https://man7.org/linux/man-pages/man2/read.2.html
    pub fn settle(&self) -> Result<(), Errno> {
        let mut count = [0u8; 64];
        rustix::io::read(&self.leader, &mut count)
            .map(drop)
            .map_err(Errno::from)
    }

    /// How many events the group holds.
    pub fn events(&self) -> usize {
        1 + self.members.len()
    }

    /// The ring's size in bytes.
    pub fn data_bytes(&self) -> u64 {
        self.map.data_size()
    }

    /// The bytes written and not yet consumed, to be walked with [`Unread::record_at`] and
    /// handed back with [`PerfRing::consume`].
    ///
    /// # Errors
    /// `EIO` when the kernel's `data_head` is not within one ring of our tail: a ring written
    /// backwards (`write_backward` in the attributes), which this reader does not read.
    pub fn unread(&self) -> Result<Unread<'_>, Errno> {
        let (first, second) = self.map.unread()?;
        self.saw_unread(first.len() + second.len());
        Ok(Unread { first, second })
    }

    /// Keeps the most unread bytes seen, for [`PerfRing::lost`] without a kernel count.
    fn saw_unread(&self, bytes: usize) {
        self.fullest.set(self.fullest.get().max(bytes as u64));
    }

    /// Hands the first `bytes` of the unread bytes back to the kernel (at most what the last
    /// [`PerfRing::unread`] returned).
    pub fn consume(&mut self, bytes: u64) {
        self.map.consume(bytes);
    }

    /// Hands every whole record written since the last read to `each`, in ring order, then
    /// gives their bytes back to the kernel. Bytes that cannot be cut into records
    /// ([`Framed::malformed`]) are given back too, unread, so that the ring never stalls.
    ///
    /// # Errors
    /// `EIO` when the kernel's `data_head` is not within one ring of our tail: a ring written
    /// backwards (`write_backward` in the attributes), which this reader does not read.
    pub fn read(&mut self, each: impl FnMut(Record<'_>)) -> Result<Framed, Errno> {
        let (first, second) = self.map.unread()?;
        let all = (first.len() + second.len()) as u64;
        self.fullest.set(self.fullest.get().max(all));
        let framed = frame(first, second, &mut self.scratch, each);
        let done = if framed.malformed { all } else { framed.bytes };
        self.map.consume(done);
        Ok(framed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    fn record(kind: u32, body: &[u8]) -> Vec<u8> {
        let size = (HEADER_BYTES + body.len()) as u16;
        let mut bytes = Vec::new();
        bytes.extend_from_slice(&kind.to_ne_bytes());
        bytes.extend_from_slice(&0u16.to_ne_bytes());
        bytes.extend_from_slice(&size.to_ne_bytes());
        bytes.extend_from_slice(body);
        bytes
    }

    fn collect(first: &[u8], second: &[u8]) -> (Vec<(u32, Vec<u8>)>, Framed) {
        let mut seen = Vec::new();
        let mut scratch = Vec::new();
        let framed = frame(first, second, &mut scratch, |r| {
            seen.push((r.kind, r.body.to_vec()))
        });
        (seen, framed)
    }

    #[test]
    fn a_record_wrapping_the_end_reads_as_if_contiguous() {
        let mut bytes = record(9, &[1, 2, 3, 4, 5, 6, 7, 8]);
        bytes.extend(record(2, &[9; 16]));
        let whole = collect(&bytes, &[]);
        assert_eq!(whole.1.records, 2);
        assert!(!whole.1.malformed);
        // Cut at every place: the same records, the same bytes.
        for cut in 0..=bytes.len() {
            let (a, b) = bytes.split_at(cut);
            assert_eq!(collect(a, b), whole, "cut at {cut}");
        }
    }

    #[test]
    fn short_and_overlong_sizes_are_malformed_and_stop_the_framing() {
        let mut bytes = record(9, &[0; 8]);
        let good = bytes.len() as u64;
        bytes.extend_from_slice(&[9, 0, 0, 0, 0, 0, 4, 0]); // size 4 < header
        let (seen, framed) = collect(&bytes, &[]);
        assert_eq!(
            (seen.len(), framed.bytes, framed.malformed),
            (1, good, true)
        );
        let long = record(9, &[0; 8]);
        let (seen, framed) = collect(&long[..12], &[]);
        assert_eq!((seen.len(), framed.malformed), (0, true));
        let (seen, framed) = collect(&[1, 2, 3], &[]);
        assert_eq!((seen.len(), framed.malformed), (0, true));
    }

    #[test]
    fn samples_and_lost_records_decode() {
        let mut body = 77u64.to_ne_bytes().to_vec();
        body.extend_from_slice(&3u32.to_ne_bytes());
        body.extend_from_slice(&[1, 2, 3, 0]);
        assert_eq!(time_and_raw(&body), Some((77, &[1u8, 2, 3][..])));
        assert_eq!(time_and_raw(&body[..13]), None);
        let mut lost = vec![0u8; 8];
        lost.extend_from_slice(&5u64.to_ne_bytes());
        let r = Record {
            kind: crate::abi::perf::PERF_RECORD_LOST,
            misc: 0,
            body: &lost,
        };
        assert_eq!(lost_count(&r), Some(5));
        let r = Record { kind: 9, ..r };
        assert_eq!(lost_count(&r), None);
    }

    #[test]
    fn fork_and_exit_records_decode_and_others_do_not() {
        use crate::abi::perf::{PERF_RECORD_EXIT, PERF_RECORD_FORK};
        let mut body = Vec::new();
        for v in [40u32, 39, 41, 39] {
            body.extend_from_slice(&v.to_ne_bytes());
        }
        body.extend_from_slice(&1234u64.to_ne_bytes());
        let r = Record {
            kind: PERF_RECORD_FORK,
            misc: 0,
            body: &body,
        };
        let fork = TaskRecord {
            fork: true,
            pid: 40,
            tid: 41,
            ppid: 39,
            time_ns: 1234,
        };
        assert_eq!(task_record(&r), Some(fork));
        let exit = Record {
            kind: PERF_RECORD_EXIT,
            ..r
        };
        assert_eq!(task_record(&exit).map(|t| t.fork), Some(false));
        assert_eq!(
            task_record(&Record {
                body: &body[..23],
                ..r
            }),
            None
        );
        assert_eq!(task_record(&Record { kind: 9, ..r }), None);
        let attr = task_records_attr();
        assert_eq!(
            attr.flags & (1 << 13 | 1 << 1 | 1 << 5),
            1 << 13 | 1 << 1 | 1 << 5
        );
        assert_eq!(attr.flags & 1, 0, "opened enabled");
    }

    /// Where the kernel refuses `PERF_FORMAT_LOST` (before 6.0), the ring still tells whether
    /// a read found it too full for one more record: never for a ring read with room to spare,
    /// always for one left to fill.
    #[test]
    fn without_a_kernel_count_a_ring_says_whether_it_filled() {
        use crate::abi::perf::{
            attr_flags, PERF_COUNT_SW_TASK_CLOCK, PERF_SAMPLE_TIME, PERF_TYPE_SOFTWARE,
        };
        let _serial = crate::test_hooks::serial();
        let _old_kernel = crate::test_hooks::Switch::on(&crate::test_hooks::NO_PERF_FORMAT_LOST);
        let mut attr = PerfEventAttr::counting(PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK);
        attr.sample_period = 20_000;
        attr.sample_type = PERF_SAMPLE_TIME;
        attr.flags = attr_flags::DISABLED | attr_flags::EXCLUDE_KERNEL | attr_flags::EXCLUDE_HV;
        let mut ring = PerfRing::open(&[attr], PerfTarget::CallingThread, -1, 1).expect("a ring");
        // Runs `ms` ms on a CPU in user space (the clock is read in the kernel: rarely).
        let spin = |ms: u64| {
            use rustix::time::{clock_gettime, ClockId};
            let cpu_ns = || {
                let t = clock_gettime(ClockId::ThreadCPUTime);
                t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
            };
            let until = cpu_ns() + ms * 1_000_000;
            while cpu_ns() < until {
                for _ in 0..100 {
                    core::hint::black_box(0u64);
                }
            }
        };
        ring.enable().expect("enable");
        for _ in 0..5 {
            spin(1); // about 50 samples of 16 bytes: a fifth of the page
            ring.read(|_| {}).expect("read");
        }
        assert_eq!(ring.lost(16), Ok(Lost::Uncounted { ring_filled: false }));
        // Left unread until a look finds it full (however slowly a loaded or emulated machine
        // takes samples), then read.
        for _ in 0..2000 {
            spin(5);
            if ring.unread().expect("look").len() as u64 + 16 >= ring.data_bytes() {
                break;
            }
        }
        ring.disable().expect("disable");
        ring.read(|_| {}).expect("read");
        assert_eq!(ring.lost(16), Ok(Lost::Uncounted { ring_filled: true }));
    }

    #[test]
    fn a_switch_in_gives_its_time_and_the_arriving_thread() {
        use crate::abi::perf::{PERF_RECORD_MISC_SWITCH_OUT, PERF_RECORD_SWITCH_CPU_WIDE};
        let mut body = Vec::new();
        for v in [1u32, 73, 500, 501] {
            body.extend_from_slice(&v.to_ne_bytes());
        }
        body.extend_from_slice(&99u64.to_ne_bytes());
        let r = Record {
            kind: PERF_RECORD_SWITCH_CPU_WIDE,
            misc: 0,
            body: &body,
        };
        assert_eq!(switch_in(&r), Some((99, 501)));
        let out = Record {
            misc: PERF_RECORD_MISC_SWITCH_OUT,
            ..r
        };
        assert_eq!(switch_in(&out), None, "a switch out");
        let short = Record {
            body: &body[..23],
            ..r
        };
        assert_eq!(switch_in(&short), None);
        assert_eq!(switch_in(&Record { kind: 9, ..r }), None);
    }
}
