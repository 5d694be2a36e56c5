//! Raw records of the six `sched` tracepoints → scheduler events, with the layouts their
//! format files gave ([`Decoder::new`]). Pure and total: any bytes give an event or `None`,
//! never a panic (the fuzz target `perf_records` checks it).
#![forbid(unsafe_code)]

use crate::measure::tree::format::{read_int, Field, Format};

/// The tracepoints a tree's states are replayed from, in the order they are opened (the first
/// leads each CPU's group).
pub const TRACEPOINTS: [&str; 6] = [
    "sched_switch",
    "sched_wakeup",
    "sched_wakeup_new",
    "sched_process_fork",
    "sched_process_exit",
    "sched_process_exec",
];

/// What a task that leaves a CPU does next, from `sched_switch`'s `prev_state`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OffCpu {
    /// Still runnable (preempted, or it yielded): it waits for a CPU.
    Runnable,
    /// Uninterruptible sleep (`D`): storage, page faults, page locks, kernel mutexes, a vfork
    /// parent.
    Uninterruptible,
    /// Any other sleep (`S`, stopped, parked, idle): timers, pipes, futexes, input.
    Sleeping,
    /// It exited (`X`, `Z`): its last switch.
    Dead,
}

/// One scheduler event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SchedKind {
    /// `sched_switch` on the event's CPU: `prev` leaves it (in `prev_state`), `next` runs.
    Switch {
        /// The task leaving the CPU (0: the idle task).
        prev: i32,
        /// What it does next.
        prev_state: OffCpu,
        /// The task taking the CPU.
        next: i32,
    },
    /// `sched_wakeup` or `sched_wakeup_new`: the task is runnable.
    Wakeup {
        /// The task woken (a thread ID).
        pid: i32,
    },
    /// `sched_process_fork` (threads too): `child` was created by `parent` (thread IDs).
    Fork {
        /// The creating thread.
        parent: i32,
        /// The new thread or process.
        child: i32,
    },
    /// `sched_process_exit`: the task is exiting (its last switch follows).
    Exit {
        /// The exiting thread.
        pid: i32,
    },
    /// `sched_process_exec`: `old_pid` exec'd and is now `pid` (they differ when a thread
    /// other than the leader calls execve: it takes the leader's ID).
    Exec {
        /// The task's ID after the exec.
        pid: i32,
        /// Its ID before.
        old_pid: i32,
    },
    /// `PERF_RECORD_SWITCH_CPU_WIDE`, written by the task arriving on the event's CPU just
    /// after the switch that `sched_switch` records. Where that record is missing — the kernel
    /// may write none while some tasks are current (on this VM, every thread of PID 1; no
    /// record says so), and so none for the switch that ends their turn — this one still
    /// says who took the CPU, and when.
    Arrive {
        /// The task now on the CPU.
        pid: i32,
    },
}

/// A scheduler event, when and where it happened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SchedEvent {
    /// CLOCK_MONOTONIC, ns.
    pub time_ns: u64,
    /// The CPU whose ring held it.
    pub cpu: u32,
    /// What happened.
    pub kind: SchedKind,
}

/// The meaning of `prev_state`'s bits: the letters of `sched_switch`'s `print fmt`.
#[derive(Clone, Debug, PartialEq, Eq)]
struct StateBits {
    /// The bits that hold the state (below the "preempted" bit, which reads as `R+`).
    mask: u64,
    /// Each state bit and what it means.
    bits: Vec<(u64, OffCpu)>,
}

impl StateBits {
    /// From `print fmt`'s `__print_flags` pairs; Linux ≥ 4.14's table when it has none.
    fn of(flags: &[(u64, String)]) -> StateBits {
        let modern: [(u64, &str); 8] = [
            (0x1, "S"),
            (0x2, "D"),
            (0x4, "T"),
            (0x8, "t"),
            (0x10, "X"),
            (0x20, "Z"),
            (0x40, "P"),
            (0x80, "I"),
        ];
        let pairs: Vec<(u64, &str)> = if flags.is_empty() {
            modern.to_vec()
        } else {
            flags.iter().map(|(v, l)| (*v, l.as_str())).collect()
        };
        let highest = pairs.iter().map(|p| p.0).max().unwrap_or(0);
        let preempted = highest.checked_next_power_of_two().map_or(u64::MAX, |p| {
            if p == highest {
                p << 1
            } else {
                p
            }
        });
        let bits = pairs
            .iter()
            .map(|&(value, letter)| {
                let class = match letter {
                    "X" | "Z" | "x" => OffCpu::Dead,
                    "D" => OffCpu::Uninterruptible,
                    "W" => OffCpu::Runnable,
                    _ => OffCpu::Sleeping,
                };
                (value, class)
            })
            .collect();
        StateBits {
            mask: preempted.wrapping_sub(1),
            bits,
        }
    }

    /// What a `prev_state` value means: no state bit is `R` (runnable); otherwise exited
    /// before uninterruptible before waking before any other sleep.
    fn classify(&self, state: i64) -> OffCpu {
        let state = state as u64 & self.mask;
        if state == 0 {
            return OffCpu::Runnable;
        }
        let set = |class| {
            self.bits
                .iter()
                .any(|&(bit, c)| c == class && state & bit != 0)
        };
        [OffCpu::Dead, OffCpu::Uninterruptible, OffCpu::Runnable]
            .into_iter()
            .find(|&c| set(c))
            .unwrap_or(OffCpu::Sleeping)
    }
}

/// The fields of one tracepoint that the decoder reads, and its ID.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Layout {
    id: u64,
    fields: Vec<Field>,
}

impl Layout {
    fn of(format: &Format, names: &[&str]) -> Result<Layout, String> {
        let fields = names
            .iter()
            .map(|n| format.require(n).cloned())
            .collect::<Result<Vec<Field>, String>>()?;
        Ok(Layout {
            id: format.id,
            fields,
        })
    }

    /// Field `k` as a thread ID.
    fn pid(&self, raw: &[u8], k: usize) -> Option<i32> {
        i32::try_from(read_int(raw, self.fields.get(k)?)?).ok()
    }
}

/// Decodes raw `sched` records with the layouts of their format files.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decoder {
    common_type: Field,
    switch: Layout,
    wakeup: Layout,
    wakeup_new: Layout,
    fork: Layout,
    exit: Layout,
    exec: Layout,
    states: StateBits,
}

impl Decoder {
    /// The decoder for `formats`, which must hold every one of [`TRACEPOINTS`] with the fields
    /// it reads. `Err` names the first thing missing.
    pub fn new(formats: &[Format]) -> Result<Decoder, String> {
        let find = |name: &str| {
            formats
                .iter()
                .find(|f| f.name == name)
                .ok_or_else(|| format!("no format for sched/{name}"))
        };
        let switch = find("sched_switch")?;
        Ok(Decoder {
            common_type: switch.require("common_type")?.clone(),
            switch: Layout::of(switch, &["prev_pid", "prev_state", "next_pid"])?,
            wakeup: Layout::of(find("sched_wakeup")?, &["pid"])?,
            wakeup_new: Layout::of(find("sched_wakeup_new")?, &["pid"])?,
            fork: Layout::of(find("sched_process_fork")?, &["parent_pid", "child_pid"])?,
            exit: Layout::of(find("sched_process_exit")?, &["pid"])?,
            exec: Layout::of(find("sched_process_exec")?, &["pid", "old_pid"])?,
            states: StateBits::of(&switch.print_flags()),
        })
    }

    /// The event in the raw record `raw` sampled at `time_ns` on `cpu`; `None` for a record of
    /// another tracepoint or one too short for its fields.
    pub fn decode(&self, time_ns: u64, cpu: u32, raw: &[u8]) -> Option<SchedEvent> {
        let id = read_int(raw, &self.common_type)? as u64;
        let kind = if id == self.switch.id {
            let state = read_int(raw, self.switch.fields.get(1)?)?;
            SchedKind::Switch {
                prev: self.switch.pid(raw, 0)?,
                prev_state: self.states.classify(state),
                next: self.switch.pid(raw, 2)?,
            }
        } else if id == self.wakeup.id {
            SchedKind::Wakeup {
                pid: self.wakeup.pid(raw, 0)?,
            }
        } else if id == self.wakeup_new.id {
            SchedKind::Wakeup {
                pid: self.wakeup_new.pid(raw, 0)?,
            }
        } else if id == self.fork.id {
            SchedKind::Fork {
                parent: self.fork.pid(raw, 0)?,
                child: self.fork.pid(raw, 1)?,
            }
        } else if id == self.exit.id {
            SchedKind::Exit {
                pid: self.exit.pid(raw, 0)?,
            }
        } else if id == self.exec.id {
            SchedKind::Exec {
                pid: self.exec.pid(raw, 0)?,
                old_pid: self.exec.pid(raw, 1)?,
            }
        } else {
            return None;
        };
        Some(SchedEvent { time_ns, cpu, kind })
    }
}

/// The format files of Linux 6.18 (x86_64) for [`TRACEPOINTS`], as tracefs gives them: for
/// tests and the fuzz target, which have no tracefs of their own.
pub const FORMATS_6_18: [&str; 6] = [
    include_str!("../../../tests/data/tracefs-6.18/sched_switch.format"),
    include_str!("../../../tests/data/tracefs-6.18/sched_wakeup.format"),
    include_str!("../../../tests/data/tracefs-6.18/sched_wakeup_new.format"),
    include_str!("../../../tests/data/tracefs-6.18/sched_process_fork.format"),
    include_str!("../../../tests/data/tracefs-6.18/sched_process_exit.format"),
    include_str!("../../../tests/data/tracefs-6.18/sched_process_exec.format"),
];

#[cfg(test)]
mod tests {
    use super::*;

    fn decoder() -> Decoder {
        let formats: Vec<Format> = FORMATS_6_18
            .iter()
            .map(|t| Format::parse(t).unwrap())
            .collect();
        Decoder::new(&formats).unwrap()
    }

    /// A raw `sched_switch` record of Linux 6.18.
    fn switch(prev: i32, state: i64, next: i32) -> Vec<u8> {
        let mut raw = vec![0u8; 64];
        raw[0..2].copy_from_slice(&372u16.to_ne_bytes());
        raw[24..28].copy_from_slice(&prev.to_ne_bytes());
        raw[32..40].copy_from_slice(&state.to_ne_bytes());
        raw[56..60].copy_from_slice(&next.to_ne_bytes());
        raw
    }

    #[test]
    fn switches_carry_the_state_the_print_fmt_names() {
        let d = decoder();
        let state = |s: i64| match d.decode(5, 1, &switch(10, s, 11)).unwrap().kind {
            SchedKind::Switch {
                prev: 10,
                next: 11,
                prev_state,
            } => prev_state,
            other => panic!("{other:?}"),
        };
        assert_eq!(state(0), OffCpu::Runnable);
        assert_eq!(state(0x100), OffCpu::Runnable, "R+: preempted");
        assert_eq!(state(1), OffCpu::Sleeping);
        assert_eq!(state(2), OffCpu::Uninterruptible);
        assert_eq!(state(0x10), OffCpu::Dead);
        assert_eq!(state(0x20), OffCpu::Dead);
        assert_eq!(state(0x80), OffCpu::Sleeping, "I: idle");
        assert_eq!(state(4), OffCpu::Sleeping, "T: stopped");
        assert!(d.decode(5, 1, &switch(1, 0, 2)[..59]).is_none(), "short");
    }

    #[test]
    fn the_other_five_decode_by_their_id() {
        let d = decoder();
        let record = |id: u16, at: &[(usize, i32)]| {
            let mut raw = vec![0u8; 40];
            raw[0..2].copy_from_slice(&id.to_ne_bytes());
            for &(offset, v) in at {
                raw[offset..offset + 4].copy_from_slice(&v.to_ne_bytes());
            }
            d.decode(1, 0, &raw).map(|e| e.kind)
        };
        assert_eq!(record(374, &[(24, 7)]), Some(SchedKind::Wakeup { pid: 7 }));
        assert_eq!(record(373, &[(24, 8)]), Some(SchedKind::Wakeup { pid: 8 }));
        assert_eq!(
            record(366, &[(12, 3), (20, 4)]),
            Some(SchedKind::Fork {
                parent: 3,
                child: 4
            })
        );
        assert_eq!(record(369, &[(24, 9)]), Some(SchedKind::Exit { pid: 9 }));
        assert_eq!(
            record(365, &[(12, 5), (16, 6)]),
            Some(SchedKind::Exec { pid: 5, old_pid: 6 })
        );
        assert_eq!(record(1, &[]), None, "another tracepoint");
    }

    #[test]
    fn old_kernels_state_letters_and_a_missing_format() {
        // Linux 4.4's table: the preempted bit is 2048, "x" is dead, "W" waking.
        let old: Vec<(u64, String)> = [
            (1, "S"),
            (2, "D"),
            (4, "T"),
            (8, "t"),
            (16, "X"),
            (32, "Z"),
            (64, "x"),
            (128, "K"),
            (256, "W"),
            (512, "P"),
            (1024, "N"),
        ]
        .iter()
        .map(|(v, l)| (*v, l.to_string()))
        .collect();
        let bits = StateBits::of(&old);
        assert_eq!(bits.mask, 2047);
        assert_eq!(bits.classify(2048), OffCpu::Runnable);
        assert_eq!(bits.classify(2 | 128), OffCpu::Uninterruptible, "killable");
        assert_eq!(bits.classify(64), OffCpu::Dead);
        assert_eq!(bits.classify(256), OffCpu::Runnable);
        let formats = [Format::parse(FORMATS_6_18[0]).unwrap()];
        assert!(Decoder::new(&formats).unwrap_err().contains("sched_wakeup"));
    }
}
