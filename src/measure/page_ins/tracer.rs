//! The rings of the page-in ledger: its three tracepoints (a page added, a folio dirtied, a
//! block I/O submitted: see [`super::layout`]) opened in cgroup mode on one cgroup leaf as one
//! group per online CPU, sharing that CPU's ring, kept enabled while the leaf serves runs;
//! emptied right before a spawn, read while the command runs ([`PageInTracer::drain`]) and
//! after its reap ([`PageInTracer::end`]). Each read puts every CPU's records in time order
//! before they are counted: which pages were created by writing is told by what a thread did
//! next ([`super::origin`]), and a thread may move between CPUs. Between those, nothing but
//! memory is touched: no system call per run but one read of the online CPUs at its end,
//! shared with the tree tracer's.
#![forbid(unsafe_code)]

use super::layout::{Event, Layout, BLOCK_IO, DIRTIED, TRACEPOINT};
use super::origin::PageOrigins;
use super::{Ledger, PageIns};
use crate::measure::tree::tracefs::{self, OnlineCpus};
use coldtrace_syscalls::perf::{
    PerfEventAttr, PerfTarget, ATTR_USE_CLOCKID, CLOCK_MONOTONIC, PERF_RECORD_SAMPLE,
    PERF_SAMPLE_RAW, PERF_SAMPLE_TIME, PERF_TYPE_TRACEPOINT,
};
use coldtrace_syscalls::ring::{lost_count, time_and_raw, PerfRing};
use coldtrace_syscalls::Errno;
use rustix::fd::BorrowedFd;
use std::path::PathBuf;

/// Pages of ring per CPU (512 KiB: about 6,000 records of 72 to 88 bytes, read at least every
/// 20 ms while the command runs), halved down to [`MIN_PAGES`] when the locked-memory limit
/// refuses it.
const PAGES: usize = 128;
/// The smallest ring tried.
const MIN_PAGES: usize = 8;
/// A ring this close to full when read may have dropped records (a record is at most 88 bytes).
const FULL_MARGIN_BYTES: u64 = 1024;

/// One CPU's event and ring.
struct CpuRing {
    cpu: u32,
    ring: PerfRing,
    /// Nothing was read from it since it was emptied at a run's start: a lost record found
    /// first reports records dropped before (the kernel reports a loss with the next record it
    /// writes).
    emptied: bool,
}

/// The run being read: its ledger, the origins still to tell, why it is incomplete (the first
/// reason found), and the records of the current read, to be put in time order.
#[derive(Default)]
struct Run {
    ins: PageIns,
    origins: PageOrigins,
    problem: Option<String>,
    events: Vec<(u64, u32, Event)>,
}

/// The ledger's events on one cgroup leaf (see the module's note).
pub struct PageInTracer {
    layout: Layout,
    /// The three tracepoints' events, the insertions' first (the group's leader).
    attrs: [PerfEventAttr; 3],
    pages: usize,
    rings: Vec<CpuRing>,
    online: OnlineCpus,
    cpus: Vec<u32>,
    run: Option<Run>,
    /// The online CPUs changed: the rings follow them at the next run.
    retarget: bool,
    /// tracefs was mounted by coldtrace, here.
    pub mounted: Option<PathBuf>,
}

/// Why the events could not be had, in words.
fn refused(errno: Errno) -> String {
    match errno {
        Errno::ACCES | Errno::PERM => format!(
            "the page-in tracepoint needs root or CAP_PERFMON, and ring buffers within \
             perf_event_mlock_kb ({errno})"
        ),
        _ => format!("the page-in tracepoint could not be opened: {errno}"),
    }
}

impl PageInTracer {
    /// Opens the tracepoint on every online CPU for the cgroup leaf open as `dir`. `Err` says
    /// why there is no ledger.
    pub fn open(dir: BorrowedFd<'_>) -> Result<PageInTracer, String> {
        let (tracing, mounted) = tracefs::find_or_mount()?;
        let format = |(system, name): (&str, &str)| tracefs::read_format(&tracing, system, name);
        let added = format(TRACEPOINT)?;
        let dirtied = format(DIRTIED[0]).or_else(|e| format(DIRTIED[1]).map_err(|_| e))?;
        let layout = Layout::of(&added, &dirtied, &format(BLOCK_IO)?)?;
        let attrs = layout.ids.map(|id| {
            let mut attr = PerfEventAttr::counting(PERF_TYPE_TRACEPOINT, id);
            attr.sample_period = 1;
            attr.sample_type = PERF_SAMPLE_TIME | PERF_SAMPLE_RAW;
            attr.flags = ATTR_USE_CLOCKID;
            attr.clockid = CLOCK_MONOTONIC;
            attr
        });
        let mut tracer = PageInTracer {
            layout,
            attrs,
            pages: PAGES,
            rings: Vec::new(),
            online: OnlineCpus::open(),
            cpus: Vec::new(),
            run: None,
            retarget: false,
            mounted: mounted.then_some(tracing),
        };
        let cpus = tracer.online.read().ok_or("cannot read the online CPUs")?;
        tracer.follow(&cpus, dir)?;
        Ok(tracer)
    }

    /// Rings for exactly `cpus`: new ones opened, those of offline CPUs closed.
    fn follow(&mut self, cpus: &[u32], dir: BorrowedFd<'_>) -> Result<(), String> {
        self.rings.retain(|r| cpus.contains(&r.cpu));
        for &cpu in cpus {
            if self.rings.iter().any(|r| r.cpu == cpu) {
                continue;
            }
            let ring = loop {
                let target = PerfTarget::Cgroup(dir);
                match PerfRing::open(&self.attrs, target, cpu as i32, self.pages) {
                    Ok(ring) => break ring,
                    Err(Errno::PERM | Errno::NOMEM) if self.pages > MIN_PAGES => self.pages /= 2,
                    Err(e) => return Err(refused(e)),
                }
            };
            self.rings.push(CpuRing {
                cpu,
                ring,
                emptied: false,
            });
        }
        self.cpus = cpus.to_vec();
        Ok(())
    }

    /// Right before a run's spawn: follows the online CPUs if they changed (`dir` is the leaf
    /// the tracer was opened on) and empties every ring.
    pub fn begin(&mut self, dir: BorrowedFd<'_>) {
        let mut problem = None;
        if std::mem::take(&mut self.retarget) {
            match self.online.read() {
                Some(cpus) => {
                    if let Err(why) = self.follow(&cpus, dir) {
                        problem = Some(format!("CPUs came online and could not be traced: {why}"));
                    }
                }
                None => problem = Some("cannot read the online CPUs".to_string()),
            }
        }
        for r in &mut self.rings {
            let _ = r.ring.read(|_| {});
            r.emptied = true;
        }
        let began = rustix::time::clock_gettime(rustix::time::ClockId::RealtimeCoarse);
        let began_unix_ns = (began.tv_sec.max(0) as u64)
            .saturating_mul(1_000_000_000)
            .saturating_add(began.tv_nsec as u64);
        self.run = Some(Run {
            ins: PageIns {
                began_unix_ns,
                ..PageIns::default()
            },
            problem,
            ..Run::default()
        });
    }

    /// Reads what the rings hold into the run's ledger (while the command runs, so that no
    /// ring fills up).
    pub fn drain(&mut self) {
        let PageInTracer {
            rings, layout, run, ..
        } = self;
        let Some(run) = run.as_mut() else {
            return;
        };
        for r in rings.iter_mut() {
            read_ring(r, layout, run);
        }
        // Stable: a CPU's records of one instant keep the order the CPU wrote them in.
        run.events.sort_by_key(|e| e.0);
        let Run {
            ins,
            origins,
            events,
            ..
        } = run;
        for (_, task, event) in events.drain(..) {
            match event {
                Event::Added(added) => origins.added(task, added, ins),
                Event::Dirtied { ino, index } => origins.dirtied(task, ino, index, ins),
                Event::ReadIo => origins.read_io(task),
            }
        }
    }

    /// After the reap: the run's ledger (`None` when no run was begun). `online` is the online
    /// CPUs as the tree tracer read them at the run's end, when it did (one read serves both);
    /// else they are read here. The events stay on; the next run empties the rings.
    pub fn end(&mut self, online: Option<&[u32]>) -> Option<Ledger> {
        self.drain();
        let Run {
            ins, mut problem, ..
        } = self.run.take()?;
        let changed = match online {
            Some(cpus) => cpus != self.cpus,
            None => self.online.read().is_none_or(|c| c != self.cpus),
        };
        if changed {
            self.retarget = true;
            problem.get_or_insert_with(|| "the online CPUs changed during the run".to_string());
        }
        Some(match problem {
            None => Ok(ins),
            Some(why) => Err(why),
        })
    }

    /// The spawn failed, or waiting did: forgets the run.
    pub fn abandon(&mut self) {
        self.run = None;
    }
}

/// Reads one ring's records into the run's events; a loss, a ring near full or a failed read is
/// said in its problem.
fn read_ring(r: &mut CpuRing, layout: &Layout, run: &mut Run) {
    let Run {
        problem, events, ..
    } = run;
    let cpu = r.cpu;
    let size = r.ring.data_bytes();
    match r.ring.unread() {
        Ok(unread) if unread.len() as u64 + FULL_MARGIN_BYTES > size => {
            problem.get_or_insert_with(|| {
                format!(
                    "the page-in ring of CPU {cpu} filled up ({} KiB): records may have been lost",
                    size / 1024
                )
            });
        }
        Ok(_) => {}
        Err(e) => {
            problem.get_or_insert_with(|| format!("reading the page-in ring of CPU {cpu}: {e}"));
            return;
        }
    }
    let emptied = &mut r.emptied;
    let framed = r.ring.read(|record| {
        let before_the_run = std::mem::replace(emptied, false);
        if record.kind == PERF_RECORD_SAMPLE {
            if let Some((time, (task, event))) =
                time_and_raw(record.body).and_then(|(time, raw)| Some((time, layout.decode(raw)?)))
            {
                events.push((time, task, event));
            }
        } else if lost_count(&record).is_some_and(|n| n > 0) && !before_the_run {
            problem.get_or_insert_with(|| "the kernel dropped page-in records".to_string());
        }
    });
    match framed {
        Ok(f) if f.malformed => {
            problem.get_or_insert_with(|| {
                format!("a malformed record in the page-in ring of CPU {cpu}")
            });
        }
        Ok(_) => {}
        Err(e) => {
            problem.get_or_insert_with(|| format!("reading the page-in ring of CPU {cpu}: {e}"));
        }
    }
}
