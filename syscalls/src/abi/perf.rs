//! `perf_event_open(2)` declarations: `struct perf_event_attr` and its constants, with the
//! layout asserted against `PERF_ATTR_SIZE_VER8`. The call itself is [`crate::perf`].
#![forbid(unsafe_code)]

use core::mem::{align_of, size_of};

/// `PERF_TYPE_HARDWARE`: generalised hardware events (needs a PMU).
pub const PERF_TYPE_HARDWARE: u32 = 0;
/// `PERF_TYPE_SOFTWARE`: events the kernel counts itself (always present).
pub const PERF_TYPE_SOFTWARE: u32 = 1;
/// `PERF_TYPE_HW_CACHE`: cache events; `config` is `cache | op << 8 | result << 16`.
pub const PERF_TYPE_HW_CACHE: u32 = 3;

/// `PERF_COUNT_HW_CPU_CYCLES`.
pub const PERF_COUNT_HW_CPU_CYCLES: u64 = 0;
/// `PERF_COUNT_HW_INSTRUCTIONS`.
pub const PERF_COUNT_HW_INSTRUCTIONS: u64 = 1;
/// `PERF_COUNT_HW_CACHE_REFERENCES`.
pub const PERF_COUNT_HW_CACHE_REFERENCES: u64 = 2;
/// `PERF_COUNT_HW_CACHE_MISSES`.
pub const PERF_COUNT_HW_CACHE_MISSES: u64 = 3;
/// `PERF_COUNT_HW_BRANCH_INSTRUCTIONS`.
pub const PERF_COUNT_HW_BRANCH_INSTRUCTIONS: u64 = 4;
/// `PERF_COUNT_HW_BRANCH_MISSES`.
pub const PERF_COUNT_HW_BRANCH_MISSES: u64 = 5;
/// `PERF_COUNT_HW_BUS_CYCLES`.
pub const PERF_COUNT_HW_BUS_CYCLES: u64 = 6;
/// `PERF_COUNT_HW_STALLED_CYCLES_FRONTEND`.
pub const PERF_COUNT_HW_STALLED_CYCLES_FRONTEND: u64 = 7;
/// `PERF_COUNT_HW_STALLED_CYCLES_BACKEND`.
pub const PERF_COUNT_HW_STALLED_CYCLES_BACKEND: u64 = 8;
/// `PERF_COUNT_HW_REF_CPU_CYCLES`.
pub const PERF_COUNT_HW_REF_CPU_CYCLES: u64 = 9;

/// `PERF_COUNT_HW_CACHE_*` ids, in `enum perf_hw_cache_id` order: L1D, L1I, LL, DTLB, ITLB,
/// BPU, NODE.
pub const PERF_COUNT_HW_CACHE_IDS: [u64; 7] = [0, 1, 2, 3, 4, 5, 6];
/// `PERF_COUNT_HW_CACHE_OP_READ`, `_WRITE`, `_PREFETCH`.
pub const PERF_COUNT_HW_CACHE_OPS: [u64; 3] = [0, 1, 2];
/// `PERF_COUNT_HW_CACHE_RESULT_ACCESS`.
pub const PERF_COUNT_HW_CACHE_RESULT_ACCESS: u64 = 0;
/// `PERF_COUNT_HW_CACHE_RESULT_MISS`.
pub const PERF_COUNT_HW_CACHE_RESULT_MISS: u64 = 1;

/// `PERF_COUNT_SW_CPU_CLOCK` (nanoseconds of the CPU clock while the task ran).
pub const PERF_COUNT_SW_CPU_CLOCK: u64 = 0;

/// `PERF_COUNT_SW_TASK_CLOCK` (nanoseconds on the CPU).
pub const PERF_COUNT_SW_TASK_CLOCK: u64 = 1;
/// `PERF_COUNT_SW_PAGE_FAULTS`.
pub const PERF_COUNT_SW_PAGE_FAULTS: u64 = 2;
/// `PERF_COUNT_SW_CONTEXT_SWITCHES`.
pub const PERF_COUNT_SW_CONTEXT_SWITCHES: u64 = 3;
/// `PERF_COUNT_SW_CPU_MIGRATIONS`.
pub const PERF_COUNT_SW_CPU_MIGRATIONS: u64 = 4;
/// `PERF_COUNT_SW_PAGE_FAULTS_MIN`.
pub const PERF_COUNT_SW_PAGE_FAULTS_MIN: u64 = 5;
/// `PERF_COUNT_SW_PAGE_FAULTS_MAJ`.
pub const PERF_COUNT_SW_PAGE_FAULTS_MAJ: u64 = 6;
/// `PERF_COUNT_SW_ALIGNMENT_FAULTS`.
pub const PERF_COUNT_SW_ALIGNMENT_FAULTS: u64 = 7;
/// `PERF_COUNT_SW_EMULATION_FAULTS`.
pub const PERF_COUNT_SW_EMULATION_FAULTS: u64 = 8;
/// `PERF_COUNT_SW_DUMMY` (counts nothing; perf uses it as a placeholder).
pub const PERF_COUNT_SW_DUMMY: u64 = 9;
/// `PERF_COUNT_SW_BPF_OUTPUT` (counts what BPF programs emit; nothing without one).
pub const PERF_COUNT_SW_BPF_OUTPUT: u64 = 10;
/// `PERF_COUNT_SW_CGROUP_SWITCHES` (Linux ≥ 5.13).
pub const PERF_COUNT_SW_CGROUP_SWITCHES: u64 = 11;

/// `PERF_FORMAT_TOTAL_TIME_ENABLED`: a read also returns the time the event was enabled.
pub const PERF_FORMAT_TOTAL_TIME_ENABLED: u64 = 1 << 0;
/// `PERF_FORMAT_TOTAL_TIME_RUNNING`: a read also returns the time it was on the PMU.
pub const PERF_FORMAT_TOTAL_TIME_RUNNING: u64 = 1 << 1;
/// `PERF_FORMAT_GROUP`: a read of the leader returns every member's value.
pub const PERF_FORMAT_GROUP: u64 = 1 << 3;
/// `PERF_FORMAT_LOST` (Linux ≥ 6.0; older kernels refuse it with `EINVAL`): a read also
/// returns how many records the event failed to write (`lost_samples`, every kind of record).
pub const PERF_FORMAT_LOST: u64 = 1 << 4;

/// `PERF_FLAG_FD_CLOEXEC`: the new descriptor is close-on-exec.
pub const PERF_FLAG_FD_CLOEXEC: u64 = 1 << 3;

/// `PERF_ATTR_SIZE_VER8` (Linux ≥ 6.3, adds `config3`): the size of [`PerfEventAttr`]. Older
/// kernels accept it because the bytes they do not know are zero.
pub const PERF_ATTR_SIZE_VER8: u32 = 136;

/// Bits of [`PerfEventAttr::flags`], the C bitfield that follows `read_format` (in declaration
/// order, bit 0 first, as GCC lays out `__u64 x : 1` fields on little-endian Linux).
pub mod attr_flags {
    /// Start disabled (enable later, e.g. on exec).
    pub const DISABLED: u64 = 1 << 0;
    /// Children created after the open inherit the event.
    pub const INHERIT: u64 = 1 << 1;
    /// Must always be on the PMU.
    pub const PINNED: u64 = 1 << 2;
    /// Only group on the PMU.
    pub const EXCLUSIVE: u64 = 1 << 3;
    /// Do not count user space.
    pub const EXCLUDE_USER: u64 = 1 << 4;
    /// Do not count the kernel.
    pub const EXCLUDE_KERNEL: u64 = 1 << 5;
    /// Do not count the hypervisor.
    pub const EXCLUDE_HV: u64 = 1 << 6;
    /// Do not count when idle.
    pub const EXCLUDE_IDLE: u64 = 1 << 7;
    /// Include mmap data (sampling).
    pub const MMAP: u64 = 1 << 8;
    /// Include comm data (sampling).
    pub const COMM: u64 = 1 << 9;
    /// `sample_freq` instead of `sample_period`.
    pub const FREQ: u64 = 1 << 10;
    /// Per-task counts when inherited (sampling).
    pub const INHERIT_STAT: u64 = 1 << 11;
    /// Enable when the task calls `execve`.
    pub const ENABLE_ON_EXEC: u64 = 1 << 12;
    /// Trace fork/exit (sampling).
    pub const TASK: u64 = 1 << 13;
    /// Wake up on watermark instead of events.
    pub const WATERMARK: u64 = 1 << 14;
    /// Records other than samples carry the sample's `sample_id` fields too (bit 18).
    pub const SAMPLE_ID_ALL: u64 = 1 << 18;
    /// Do not count in the host (bit 19).
    pub const EXCLUDE_HOST: u64 = 1 << 19;
    /// Do not count in guests (bit 20).
    pub const EXCLUDE_GUEST: u64 = 1 << 20;
    /// Write a `PERF_RECORD_SWITCH` (per task) or `PERF_RECORD_SWITCH_CPU_WIDE` (per CPU)
    /// at every context switch (bit 26, Linux ≥ 4.3).
    pub const CONTEXT_SWITCH: u64 = 1 << 26;
}

/// `struct perf_event_attr` (`<linux/perf_event.h>`), the full `PERF_ATTR_SIZE_VER8` layout.
///
/// Unions are represented by their first member; the bitfield is [`PerfEventAttr::flags`]
/// (see [`attr_flags`]). Start from [`PerfEventAttr::counting`] and adjust fields.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PerfEventAttr {
    /// `type`: major type ([`PERF_TYPE_SOFTWARE`], [`PERF_TYPE_HARDWARE`], a PMU's number).
    pub type_: u32,
    /// `size`: how many bytes of this struct the kernel reads. [`crate::perf::perf_event_open`] refuses a
    /// value above `size_of::<PerfEventAttr>()`.
    pub size: u32,
    /// `config`: the event within the type.
    pub config: u64,
    /// `sample_period` / `sample_freq`: 0 for counting.
    pub sample_period: u64,
    /// `sample_type`.
    pub sample_type: u64,
    /// `read_format`: what a `read(2)` returns (`PERF_FORMAT_*`).
    pub read_format: u64,
    /// The bitfield (`disabled`, `inherit`, … see [`attr_flags`]).
    pub flags: u64,
    /// `wakeup_events` / `wakeup_watermark`.
    pub wakeup_events: u32,
    /// `bp_type`.
    pub bp_type: u32,
    /// `bp_addr` / `config1`.
    pub config1: u64,
    /// `bp_len` / `config2`.
    pub config2: u64,
    /// `branch_sample_type`.
    pub branch_sample_type: u64,
    /// `sample_regs_user`.
    pub sample_regs_user: u64,
    /// `sample_stack_user`.
    pub sample_stack_user: u32,
    /// `clockid`.
    pub clockid: i32,
    /// `sample_regs_intr`.
    pub sample_regs_intr: u64,
    /// `aux_watermark`.
    pub aux_watermark: u32,
    /// `sample_max_stack`.
    pub sample_max_stack: u16,
    /// `__reserved_2`: must be 0.
    pub reserved_2: u16,
    /// `aux_sample_size`.
    pub aux_sample_size: u32,
    /// `aux_action` bitfield (was `__reserved_3`): 0.
    pub aux_action: u32,
    /// `sig_data`.
    pub sig_data: u64,
    /// `config3`.
    pub config3: u64,
}

// The kernel's layout: 136 bytes (PERF_ATTR_SIZE_VER8), 8-byte aligned, and the offsets that
// mark each earlier version's end (VER0 = 64 after config1, VER5 = 112 after __reserved_2).
const _: () = assert!(size_of::<PerfEventAttr>() == PERF_ATTR_SIZE_VER8 as usize);
const _: () = assert!(align_of::<PerfEventAttr>() == 8);
const _: () = assert!(core::mem::offset_of!(PerfEventAttr, flags) == 40);
const _: () = assert!(core::mem::offset_of!(PerfEventAttr, config2) == 64);
const _: () = assert!(core::mem::offset_of!(PerfEventAttr, sample_regs_intr) == 96);
const _: () = assert!(core::mem::offset_of!(PerfEventAttr, aux_sample_size) == 112);
const _: () = assert!(core::mem::offset_of!(PerfEventAttr, config3) == 128);

impl PerfEventAttr {
    /// All zero except `type`, `config` and `size`: a counting (not sampling) event.
    pub const fn counting(type_: u32, config: u64) -> PerfEventAttr {
        PerfEventAttr {
            type_,
            size: PERF_ATTR_SIZE_VER8,
            config,
            sample_period: 0,
            sample_type: 0,
            read_format: 0,
            flags: 0,
            wakeup_events: 0,
            bp_type: 0,
            config1: 0,
            config2: 0,
            branch_sample_type: 0,
            sample_regs_user: 0,
            sample_stack_user: 0,
            clockid: 0,
            sample_regs_intr: 0,
            aux_watermark: 0,
            sample_max_stack: 0,
            reserved_2: 0,
            aux_sample_size: 0,
            aux_action: 0,
            sig_data: 0,
            config3: 0,
        }
    }
}

/// `PERF_FLAG_PID_CGROUP`: `pid` is a descriptor of a cgroup directory (per-CPU events only).
pub const PERF_FLAG_PID_CGROUP: u64 = 1 << 2;

/// `PERF_TYPE_TRACEPOINT`: a kernel tracepoint; `config` is its ID (tracefs
/// `events/<system>/<name>/id`).
pub const PERF_TYPE_TRACEPOINT: u32 = 2;

/// `PERF_SAMPLE_TID`: a sample (and, with `sample_id_all`, every other record) carries the
/// current task's `u32 pid, u32 tid`.
pub const PERF_SAMPLE_TID: u64 = 1 << 1;
/// `PERF_SAMPLE_TIME`: a sample carries the time of the event (`u64`, ns of the event's clock).
pub const PERF_SAMPLE_TIME: u64 = 1 << 2;
/// `PERF_SAMPLE_RAW`: a sample carries the tracepoint's raw record (`u32` size, then the bytes
/// laid out as tracefs `events/<system>/<name>/format` says).
pub const PERF_SAMPLE_RAW: u64 = 1 << 10;

/// `use_clockid` (bit 25 of [`PerfEventAttr::flags`]): sample times on
/// [`PerfEventAttr::clockid`] instead of the perf clock.
pub const ATTR_USE_CLOCKID: u64 = 1 << 25;
/// `CLOCK_MONOTONIC`, for [`PerfEventAttr::clockid`].
pub const CLOCK_MONOTONIC: i32 = 1;

/// `PERF_RECORD_EXIT`: a task exited (`u32 pid, ppid, tid, ptid`, `u64 time`: the task, and
/// its parent process), written with `task` in the attributes.
pub const PERF_RECORD_EXIT: u32 = 4;
/// `PERF_RECORD_FORK`: a task was created (`u32 pid, ppid, tid, ptid`, `u64 time`: the new
/// task, and the thread that created it), written with `task` in the attributes.
pub const PERF_RECORD_FORK: u32 = 7;
/// `PERF_RECORD_LOST`: the kernel dropped samples because the ring was full (`u64 id`,
/// `u64 lost`).
pub const PERF_RECORD_LOST: u32 = 2;
/// `PERF_RECORD_SAMPLE`: one sample, laid out by the event's `sample_type`.
pub const PERF_RECORD_SAMPLE: u32 = 9;
/// `PERF_RECORD_LOST_SAMPLES` (Linux ≥ 4.2): samples dropped before reaching the ring (`u64
/// lost`).
pub const PERF_RECORD_LOST_SAMPLES: u32 = 13;

/// `PERF_RECORD_SWITCH_CPU_WIDE` (Linux ≥ 4.3): a context switch on the event's CPU
/// (`u32 next_prev_pid`, `u32 next_prev_tid`: the task switched to when
/// [`PERF_RECORD_MISC_SWITCH_OUT`] is set, else the one switched from; then `sample_id`).
pub const PERF_RECORD_SWITCH_CPU_WIDE: u32 = 15;
/// `PERF_RECORD_MISC_SWITCH_OUT`, in a switch record's `misc`: written as the current task
/// leaves the CPU (without it: as the current task arrives).
pub const PERF_RECORD_MISC_SWITCH_OUT: u16 = 1 << 13;

/// `PERF_EVENT_IOC_ENABLE`, `_IO('$', 0)`: start an event (its group with
/// [`PERF_IOC_FLAG_GROUP`]).
pub const PERF_EVENT_IOC_ENABLE: u32 = 0x2400;
/// `PERF_EVENT_IOC_DISABLE`, `_IO('$', 1)`: stop an event (its group with
/// [`PERF_IOC_FLAG_GROUP`]).
pub const PERF_EVENT_IOC_DISABLE: u32 = 0x2401;
/// `PERF_EVENT_IOC_SET_OUTPUT`, `_IO('$', 5)`: send an event's records to another event's
/// ring (same CPU), given that event's descriptor.
pub const PERF_EVENT_IOC_SET_OUTPUT: u32 = 0x2405;
/// `PERF_IOC_FLAG_GROUP`: an enable or disable applies to the whole group.
pub const PERF_IOC_FLAG_GROUP: usize = 1;

/// Offsets in `struct perf_event_mmap_page`, the first page of a ring mapping: `data_head`
/// (written by the kernel), `data_tail` (written by the reader), `data_offset` and `data_size`
/// (where the data pages start and how many bytes they hold; Linux ≥ 4.1).
pub mod mmap_page {
    /// `data_head`: bytes the kernel has written, ever (wraps modulo the data size).
    pub const DATA_HEAD: usize = 1024;
    /// `data_tail`: bytes the reader has consumed, ever.
    pub const DATA_TAIL: usize = 1032;
    /// `data_offset`: where the data pages start in the mapping.
    pub const DATA_OFFSET: usize = 1040;
    /// `data_size`: the data pages' size in bytes, a power of two.
    pub const DATA_SIZE: usize = 1048;
}
