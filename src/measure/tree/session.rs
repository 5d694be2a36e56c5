//! A batch's tree tracer: the six `sched` tracepoints of
//! [`TRACEPOINTS`](crate::measure::tree::decode::TRACEPOINTS) and the CPU's context-switch
//! records (where the kernel wrote no `sched_switch`, they say who took the CPU: see
//! [`SchedKind::Arrive`]) opened system-wide on
//! every online CPU (`pid = -1, cpu = N`: one group and one ring per CPU, see
//! [`coldtrace_syscalls::ring`]), enabled before the batch's first spawn and kept on until its
//! last run is done ([`TreeTracer::stop`]), emptied right before each spawn (what came between
//! two runs is never replayed), read while the command runs and after its exit, and replayed
//! into the tree's four states ([`crate::measure::tree::replay`]).
//!
//! Enabling or disabling a group on another CPU is a call on that CPU that the caller waits for
//! (in a VM, tens of µs of its CPU): once per batch, not twice per run. At a run's end, every
//! record up to the moment the exit was seen must be in the rings, and a record whose time
//! comes before that may still be being written on another CPU. A CPU whose ring already holds
//! a later record has written it (a context switch or wake-up is written whole with interrupts
//! disabled, and a ring's records are published in order); so has every CPU when the records
//! show each task of the tree either gone or running on such a CPU (nothing else could change
//! its state). Otherwise the leaders' counts are read on the CPUs without a later record
//! ([`PerfRing::settle`], one such call each, the guarantee a disable gave) and the rest
//! replayed.
//!
//! Why system-wide: per-task and cgroup-mode tracepoints miss the wake-ups done by processes
//! outside the tree (a FIFO written from outside), and `PERF_RECORD_SWITCH` has no sleep state
//! and no wake-up time. It needs root, or CAP_PERFMON with read access to tracefs.
//!
//! Never silently wrong: a run whose records may be incomplete — a `PERF_RECORD_LOST`, a ring
//! that came within [`FULL_MARGIN_BYTES`] of full between two reads (a loss is only reported at
//! the ring's next write, which may come after the run), a CPU that came online or went
//! offline, a failed read — gets no states, and its reading says why. The rings also fill
//! between runs (a long `--prepare`, a cold action): what the kernel dropped then, it reports
//! in a `PERF_RECORD_LOST` right before the first record it writes after the ring was emptied
//! (a lost record is only reported with the next one written), so such a record, found first
//! in an emptied ring, counts records from before the run, all of them dropped before the ring
//! had room again, before the run's spawn; any other is the run's.
#![forbid(unsafe_code)]

use crate::measure::tree::decode::{Decoder, SchedEvent, SchedKind};
use crate::measure::tree::drains::Drains;
use crate::measure::tree::replay::{Replay, TreeStates, Unreplayable};
use crate::measure::tree::tracefs;
use crate::measure::tree::tracefs::OnlineCpus;
use coldtrace_syscalls::perf::{
    attr_flags, PerfEventAttr, PerfTarget, ATTR_USE_CLOCKID, CLOCK_MONOTONIC, PERF_RECORD_SAMPLE,
    PERF_SAMPLE_RAW, PERF_SAMPLE_TIME, PERF_TYPE_TRACEPOINT,
};
use coldtrace_syscalls::ring::{
    lost_count, switch_in, switch_records_attr, time_and_raw, Malformed, PerfRing, Unread,
};
use coldtrace_syscalls::Errno;
use std::path::PathBuf;

/// Pages of ring per CPU at most (2 MiB: about 23,000 scheduler records, 100 ms of a machine
/// whose other processes switch 230,000 times a second on that CPU), halved down to
/// [`MIN_PAGES`] when the locked-memory limit refuses it.
const PAGES: usize = 512;
/// Pages of ring over all CPUs at most (32 MiB): a machine with many CPUs gets smaller rings.
const ALL_PAGES: usize = 8192;
/// Pages of ring per CPU at least, unless refused (512 KiB).
const FEW_PAGES: usize = 128;
/// The smallest ring tried.
const MIN_PAGES: usize = 8;
/// A ring this close to full when read may have dropped records (the largest record here,
/// `sched_process_exec` with a long file name, is about 4 KiB).
pub const FULL_MARGIN_BYTES: u64 = 8192;
/// Events this close to the moment the rings were read wait for the next read before they are
/// replayed: a record is in its ring microseconds after its time, and the replay needs every
/// CPU's records up to an instant before it moves past it.
const SETTLE_NS: u64 = 5_000_000;

/// What the tracer saw of one run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TreeReading {
    /// The tree's states over the run's wall time, or why they are not known.
    pub states: Result<TreeStates, String>,
    /// Scheduler records read during the run (all CPUs, every process).
    pub records: u64,
    /// Records the kernel said it dropped.
    pub lost: u64,
}

/// One run being traced.
struct RunTrace {
    replay: Option<Replay>,
    records: u64,
    lost: u64,
    /// Why the run's records may be incomplete (the first reason found).
    problem: Option<String>,
    drains: Drains,
}

impl RunTrace {
    fn flag(&mut self, why: impl FnOnce() -> String) {
        if self.problem.is_none() {
            self.problem = Some(why());
        }
    }
}

/// One CPU's group of tracepoints and its ring.
struct CpuRing {
    cpu: u32,
    ring: PerfRing,
    /// The group is enabled.
    on: bool,
    /// Nothing was read from the ring since it was emptied at a run's start: a lost record
    /// found first counts records dropped before that (see the module's note).
    emptied: bool,
}

/// The tracer of a batch (see the module's note).
pub struct TreeTracer {
    attrs: Vec<PerfEventAttr>,
    decoder: Decoder,
    pages: usize,
    rings: Vec<CpuRing>,
    online: OnlineCpus,
    cpus: Vec<u32>,
    /// What the last run's end found of the online CPUs: `Some(true)` changed (or unreadable:
    /// the next run reads them again and follows them), `None` before any run ended.
    cpus_changed: Option<bool>,
    run: Option<RunTrace>,
    /// tracefs was mounted by coldtrace, here.
    pub mounted: Option<PathBuf>,
}

/// The ring size to try first on a machine with `cpus` online CPUs: [`PAGES`], or less so that
/// all rings stay within [`ALL_PAGES`], never below [`FEW_PAGES`]; a power of two.
fn pages_per_cpu(cpus: usize) -> usize {
    let share = (ALL_PAGES / cpus.max(1)).clamp(FEW_PAGES, PAGES);
    1 << share.ilog2()
}

/// Why the tracepoints could not be had, in words.
fn refused(errno: Errno) -> String {
    let paranoid = crate::measure::procfs::read_text("/proc/sys/kernel/perf_event_paranoid", 64)
        .map(|s| format!(", perf_event_paranoid is {}", s.trim()))
        .unwrap_or_default();
    match errno {
        Errno::ACCES | Errno::PERM => format!(
            "system-wide scheduler tracepoints need root or CAP_PERFMON, and ring buffers within \
             perf_event_mlock_kb ({errno}{paranoid})"
        ),
        _ => format!("the scheduler tracepoints could not be opened: {errno}"),
    }
}

impl TreeTracer {
    /// Opens the tracepoints on every online CPU. `Err` says why there is no tree source.
    pub fn open() -> Result<TreeTracer, String> {
        let (tracing, mounted) = tracefs::find_or_mount()?;
        let formats = tracefs::read_formats(&tracing)?;
        let decoder = Decoder::new(&formats)?;
        // The tracepoints, then the CPU's context-switch records: the arriving task's record
        // says who took the CPU where the kernel wrote no `sched_switch` (`SchedKind::Arrive`).
        let attrs = formats
            .iter()
            .enumerate()
            .map(|(k, f)| attr(f.id, k == 0))
            .chain(std::iter::once(switch_records_attr()))
            .collect();
        let mut tracer = TreeTracer {
            attrs,
            decoder,
            pages: PAGES,
            rings: Vec::new(),
            online: OnlineCpus::open(),
            cpus: Vec::new(),
            cpus_changed: None,
            run: None,
            mounted: mounted.then_some(tracing),
        };
        let cpus = tracer.online.read().ok_or("cannot read the online CPUs")?;
        tracer.pages = pages_per_cpu(cpus.len());
        tracer.retarget(&cpus)?;
        Ok(tracer)
    }

    /// Rings for exactly `cpus`: new ones opened, those of offline CPUs closed.
    fn retarget(&mut self, cpus: &[u32]) -> Result<(), String> {
        self.rings.retain(|r| cpus.contains(&r.cpu));
        for &cpu in cpus {
            if self.rings.iter().any(|r| r.cpu == cpu) {
                continue;
            }
            let ring = self.open_ring(cpu)?;
            self.rings.push(CpuRing {
                cpu,
                ring,
                on: false,
                emptied: false,
            });
        }
        self.rings.sort_by_key(|r| r.cpu);
        self.cpus = cpus.to_vec();
        Ok(())
    }

    fn open_ring(&mut self, cpu: u32) -> Result<PerfRing, String> {
        loop {
            let cpu_arg = cpu as i32;
            match PerfRing::open(&self.attrs, PerfTarget::AllProcesses, cpu_arg, self.pages) {
                Ok(ring) => return Ok(ring),
                Err(Errno::PERM | Errno::NOMEM) if self.pages > MIN_PAGES => self.pages /= 2,
                Err(e) => return Err(refused(e)),
            }
        }
    }

    /// Right before a run's spawn (and before the floor is read): follows the online CPUs,
    /// starts the rings not started yet (all of them at the batch's first run), and empties
    /// every ring.
    pub fn begin(&mut self) {
        let mut run = RunTrace {
            replay: None,
            records: 0,
            lost: 0,
            problem: None,
            drains: Drains::default(),
        };
        // The online CPUs are read once a run, at its end; a change found there (or at the
        // open) is followed here.
        if self.cpus_changed != Some(false) {
            match self.online.read() {
                Some(cpus) if cpus == self.cpus => {}
                Some(cpus) => {
                    if let Err(why) = self.retarget(&cpus) {
                        run.flag(|| format!("CPUs came online and could not be traced: {why}"));
                    }
                }
                None => run.flag(|| "cannot read the online CPUs".into()),
            }
        }
        for r in self.rings.iter_mut().filter(|r| !r.on) {
            match r.ring.enable() {
                Ok(()) => r.on = true,
                Err(e) => {
                    let cpu = r.cpu;
                    run.flag(|| format!("cannot enable the tracepoints on CPU {cpu}: {e}"));
                }
            }
        }
        for r in &mut self.rings {
            let unread = r.ring.unread().map_or(0, |u| u.len());
            r.ring.consume(unread as u64);
            r.emptied = true;
        }
        self.run = Some(run);
    }

    /// The command's first process is `root`, spawned at `start_ns` (CLOCK_MONOTONIC, the
    /// start of its wall time).
    pub fn started(&mut self, root: i32, start_ns: u64) {
        if let Some(run) = &mut self.run {
            run.replay = Some(Replay::new(root, start_ns));
            run.drains.start(start_ns);
        }
    }

    /// When the rings should next be read while the command runs (`None`: no run traced).
    pub fn next_drain_ns(&self) -> Option<u64> {
        self.run
            .as_ref()
            .filter(|r| r.replay.is_some())
            .map(|r| r.drains.next_ns())
    }

    /// Reads the rings if a read is due, and replays what has settled.
    pub fn drain_if_due(&mut self) {
        let now = crate::measure::clock::monotonic_ns();
        if self.next_drain_ns().is_none_or(|t| now < t) {
            return;
        }
        let fullest = self.replay_until(now.saturating_sub(SETTLE_NS)).fullest;
        if let Some(run) = &mut self.run {
            run.drains.read_at(now, fullest);
        }
    }

    /// After the exit was seen at `end_ns`: waits until every CPU has written what it was
    /// writing, replays the records up to `end_ns`, and returns the run's reading (`None` when
    /// no run was begun). The rings stay on; the next run empties them.
    pub fn end(&mut self, end_ns: u64) -> Option<TreeReading> {
        let read = self.replay_until(end_ns);
        let tree_on = self
            .run
            .as_ref()
            .and_then(|r| r.replay.as_ref())
            .and_then(Replay::only_on_cpus);
        let written = tree_on.is_some_and(|cpus| cpus.iter().all(|c| read.later.contains(c)));
        if !written {
            self.settle(&read.later);
            self.replay_until(end_ns);
        }
        let mut run = self.run.take()?;
        let online = self.online.read();
        self.cpus_changed = Some(online.as_ref() != Some(&self.cpus));
        if online.is_some_and(|c| c != self.cpus) {
            run.flag(|| "the online CPUs changed during the run".into());
        }
        let states = match (run.problem, run.replay) {
            (Some(why), _) => Err(why),
            (None, None) => Err("the command was never started".into()),
            (None, Some(replay)) => replay.finish(end_ns).map_err(|e| match e {
                Unreplayable::RootNeverCreated => {
                    "no scheduler record shows the command's creation".to_string()
                }
                Unreplayable::TooManyBeforeTheRoot => {
                    "too many scheduler records before the command's creation".to_string()
                }
            }),
        };
        Some(TreeReading {
            states,
            records: run.records,
            lost: run.lost,
        })
    }

    /// Waits until every CPU but `written` has finished the records it was writing.
    fn settle(&mut self, written: &[u32]) {
        for r in self.rings.iter().filter(|r| !written.contains(&r.cpu)) {
            if let Err(e) = r.ring.settle() {
                if let Some(run) = &mut self.run {
                    let cpu = r.cpu;
                    run.flag(|| format!("cannot read the tracepoints on CPU {cpu}: {e}"));
                }
            }
        }
    }

    /// The spawn failed, or waiting did: forgets the run (the next run empties the rings).
    pub fn abandon(&mut self) {
        self.run = None;
    }

    /// After the batch's last run: stops every ring (the next [`TreeTracer::begin`] would
    /// start them again).
    pub fn stop(&mut self) {
        for r in self.rings.iter_mut().filter(|r| r.on) {
            // A group that cannot be disabled records on until the tracer is dropped, and
            // nothing reads it: no run is traced meanwhile.
            r.on = r.ring.disable().is_err();
        }
        self.run = None;
    }

    /// Replays the records of every ring up to `until_ns`, merged in time order (each ring is
    /// in time order already), and gives their bytes back; later records stay in the rings.
    fn replay_until(&mut self, until_ns: u64) -> Read {
        let TreeTracer {
            rings,
            decoder,
            run,
            ..
        } = self;
        let Some(run) = run.as_mut() else {
            return Read::default();
        };
        let mut heads = Vec::with_capacity(rings.len());
        for r in rings.iter() {
            let cpu = r.cpu;
            match r.ring.unread() {
                Ok(unread) => {
                    heads.push(Head::new(cpu, unread, r.ring.data_bytes(), run, r.emptied))
                }
                Err(e) => run.flag(|| format!("reading the ring of CPU {cpu} failed: {e}")),
            }
        }
        let fullest = heads.iter().map(|h| h.fullness).fold(0.0, f64::max);
        for head in &mut heads {
            head.advance(decoder, run);
        }
        while let Some(k) = earliest(&heads, until_ns) {
            let head = &mut heads[k];
            if let (Some(replay), Some((event, _))) = (run.replay.as_mut(), head.next) {
                replay.apply(&event);
            }
            head.take();
            head.advance(decoder, run);
        }
        let later = heads
            .iter()
            .filter(|h| h.next.is_some())
            .map(|h| h.cpu)
            .collect();
        let done: Vec<(u32, usize, bool)> = heads
            .iter()
            .map(|h| (h.cpu, h.settled, h.emptied))
            .collect();
        drop(heads);
        for (cpu, bytes, emptied) in done {
            if let Some(r) = rings.iter_mut().find(|r| r.cpu == cpu) {
                r.ring.consume(bytes as u64);
                r.emptied = emptied;
            }
        }
        Read { fullest, later }
    }

    /// The online CPUs as the last run's end found them, when they were the traced ones
    /// (`None`: changed, unreadable, or no run has ended yet).
    pub fn online_at_end(&self) -> Option<&[u32]> {
        (self.cpus_changed == Some(false)).then_some(&self.cpus[..])
    }

    /// How many pages of ring each CPU has.
    pub fn pages_per_cpu(&self) -> usize {
        self.pages
    }

    /// The traced CPUs.
    pub fn cpus(&self) -> &[u32] {
        &self.cpus
    }
}

/// What a read of the rings found.
#[derive(Default)]
struct Read {
    /// How full the fullest ring was (0–1).
    fullest: f64,
    /// The CPUs whose rings hold an event after the instant replayed up to.
    later: Vec<u32>,
}

/// One ring being read: its unread bytes, how far they are settled (replayed or skipped), and
/// the next scheduler event in them.
struct Head<'a> {
    cpu: u32,
    unread: Unread<'a>,
    /// Bytes before this offset are done with.
    settled: usize,
    /// The next event and the offset after it.
    next: Option<(SchedEvent, usize)>,
    /// A record wrapping the ring's end, copied out.
    scratch: Vec<u8>,
    /// How full the ring was (0–1).
    fullness: f64,
    /// No record was found yet since the ring was emptied at the run's start.
    emptied: bool,
}

impl<'a> Head<'a> {
    fn new(cpu: u32, unread: Unread<'a>, size: u64, run: &mut RunTrace, emptied: bool) -> Head<'a> {
        if unread.len() as u64 + FULL_MARGIN_BYTES > size {
            run.flag(|| {
                format!(
                    "the ring of CPU {cpu} filled up ({} KiB): records may have been lost",
                    size / 1024
                )
            });
        }
        Head {
            cpu,
            unread,
            settled: 0,
            next: None,
            scratch: Vec::new(),
            fullness: unread.len() as f64 / size.max(1) as f64,
            emptied,
        }
    }

    /// The event taken is done with.
    fn take(&mut self) {
        if let Some((_, after)) = self.next.take() {
            self.settled = after;
        }
    }

    /// Finds the next scheduler event from `settled` on, counting samples and lost records on
    /// the way (a lost record found first in an emptied ring is from before the run: see the
    /// module's note); records that are not events are settled as they are passed.
    fn advance(&mut self, decoder: &Decoder, run: &mut RunTrace) {
        while self.next.is_none() {
            match self.unread.record_at(self.settled, &mut self.scratch) {
                Ok(Some((record, after))) => {
                    let before_the_run = std::mem::replace(&mut self.emptied, false);
                    let event = if record.kind == PERF_RECORD_SAMPLE {
                        run.records += 1;
                        time_and_raw(record.body)
                            .and_then(|(time, raw)| decoder.decode(time, self.cpu, raw))
                    } else if let Some((time_ns, tid)) = switch_in(&record) {
                        let kind = SchedKind::Arrive { pid: tid as i32 };
                        Some(SchedEvent {
                            time_ns,
                            cpu: self.cpu,
                            kind,
                        })
                    } else {
                        let lost = lost_count(&record).unwrap_or(0);
                        if lost > 0 && !before_the_run {
                            run.lost += lost;
                            run.flag(|| "the kernel dropped scheduler records".to_string());
                        }
                        None
                    };
                    match event {
                        Some(e) => self.next = Some((e, after)),
                        None => self.settled = after,
                    }
                }
                Ok(None) => return,
                Err(Malformed) => {
                    let cpu = self.cpu;
                    run.flag(|| format!("a malformed record in the ring of CPU {cpu}"));
                    self.settled = self.unread.len();
                    return;
                }
            }
        }
    }
}

/// The head whose next event is the earliest, if that is at or before `until_ns`.
fn earliest(heads: &[Head<'_>], until_ns: u64) -> Option<usize> {
    let mut best: Option<(u64, usize)> = None;
    for (k, head) in heads.iter().enumerate() {
        if let Some((event, _)) = head.next {
            if event.time_ns <= until_ns && best.is_none_or(|(t, _)| event.time_ns < t) {
                best = Some((event.time_ns, k));
            }
        }
    }
    best.map(|(_, k)| k)
}

/// The attribute of the tracepoint `id`: a sample of every event with its time on
/// CLOCK_MONOTONIC and its raw record; the group leader starts disabled.
fn attr(id: u64, leader: bool) -> PerfEventAttr {
    let mut attr = PerfEventAttr::counting(PERF_TYPE_TRACEPOINT, id);
    attr.sample_period = 1;
    attr.sample_type = PERF_SAMPLE_TIME | PERF_SAMPLE_RAW;
    attr.flags = ATTR_USE_CLOCKID | if leader { attr_flags::DISABLED } else { 0 };
    attr.clockid = CLOCK_MONOTONIC;
    attr
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rings_shrink_with_many_cpus_and_stay_powers_of_two() {
        assert_eq!(pages_per_cpu(1), PAGES);
        assert_eq!(pages_per_cpu(2), PAGES);
        assert_eq!(pages_per_cpu(24), 256);
        assert_eq!(pages_per_cpu(64), FEW_PAGES);
        assert_eq!(pages_per_cpu(4096), FEW_PAGES);
        assert_eq!(pages_per_cpu(0), PAGES);
    }
}
