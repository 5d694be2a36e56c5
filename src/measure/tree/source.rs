//! A batch's source of the tree's figures, as one run sees it: the scheduler's tracepoints
//! (the four states and the tasks, [`TreeTracer`]) where they are allowed, else perf's task
//! records (the tasks alone, [`TaskCounter`]). Both are driven the same way around a run:
//! emptied before the spawn, told the command's first process, read while it runs, read at
//! its end.
#![forbid(unsafe_code)]

use crate::measure::tree::session::{TreeReading, TreeTracer};
use crate::measure::tree::tasks::{TaskCounter, TaskReading};
use std::cell::RefCell;

/// The source a run uses.
#[derive(Clone, Copy)]
pub enum TreeSource<'a> {
    /// The scheduler's tracepoints.
    Traced(&'a RefCell<TreeTracer>),
    /// Perf's task records.
    Counted(&'a RefCell<TaskCounter>),
}

/// What the source saw of one run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TreeResult {
    /// The tracepoints' reading.
    Traced(TreeReading),
    /// The task records' count.
    Counted(TaskReading),
}

impl TreeSource<'_> {
    /// Right before the spawn.
    pub fn begin(self) {
        match self {
            TreeSource::Traced(t) => t.borrow_mut().begin(),
            TreeSource::Counted(c) => c.borrow_mut().begin(),
        }
    }

    /// The command's first process is `root`, spawned at `start_ns`.
    pub fn started(self, root: i32, start_ns: u64) {
        match self {
            TreeSource::Traced(t) => t.borrow_mut().started(root, start_ns),
            TreeSource::Counted(c) => c.borrow_mut().started(root, start_ns),
        }
    }

    /// When the source should next be read while the command runs.
    pub fn next_drain_ns(self) -> Option<u64> {
        match self {
            TreeSource::Traced(t) => t.borrow().next_drain_ns(),
            TreeSource::Counted(c) => c.borrow().next_drain_ns(),
        }
    }

    /// Reads the source if a read is due.
    pub fn drain_if_due(self) {
        match self {
            TreeSource::Traced(t) => t.borrow_mut().drain_if_due(),
            TreeSource::Counted(c) => c.borrow_mut().drain_if_due(),
        }
    }

    /// After the exit was seen at `end_ns`: the run's reading.
    pub fn end(self, end_ns: u64) -> Option<TreeResult> {
        match self {
            TreeSource::Traced(t) => t.borrow_mut().end(end_ns).map(TreeResult::Traced),
            TreeSource::Counted(c) => c.borrow_mut().end(end_ns).map(TreeResult::Counted),
        }
    }

    /// [`TreeSource::end`] where the exit was seen (`Some`), else [`TreeSource::abandon`].
    pub fn end_or_abandon(self, end_ns: Option<u64>) -> Option<TreeResult> {
        match end_ns {
            Some(end) => self.end(end),
            None => {
                self.abandon();
                None
            }
        }
    }

    /// The spawn failed, or waiting did.
    pub fn abandon(self) {
        match self {
            TreeSource::Traced(t) => t.borrow_mut().abandon(),
            TreeSource::Counted(c) => c.borrow_mut().abandon(),
        }
    }
}
