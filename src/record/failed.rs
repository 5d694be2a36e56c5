//! The failed runs a batch keeps in memory and lists in `batch.json` ([`FailedRuns`]): the
//! first few and the most recent ones, whatever the length of the batch. Every failed run is in
//! `runs.jsonl` with its `failure_reason`; this list is for the table and the summary. Data
//! only; deciding what failed is the batch's.
#![forbid(unsafe_code)]

use crate::record::batch::FailedRun;
use std::collections::VecDeque;

/// Failed runs, bounded: the first [`FailedRuns::FIRST`] and the last [`FailedRuns::LAST`], in
/// index order; the ones between are counted in [`FailedRuns::omitted`]. Only the last
/// [`FailedRuns::TAILS`] keep their stderr tail. At most a few hundred KiB, however many runs
/// fail (100,000 failed runs once held 36 MiB here, and the floor of every later run with them).
#[derive(Clone, Debug, Default)]
pub struct FailedRuns {
    first: Vec<FailedRun>,
    last: VecDeque<FailedRun>,
    omitted: u64,
}

impl FailedRuns {
    /// How many of the first failed runs are kept (the table names them).
    pub const FIRST: usize = 5;
    /// How many of the most recent failed runs are kept.
    pub const LAST: usize = 100;
    /// How many of the most recent keep their stderr tail (4 KiB at most each).
    pub const TAILS: usize = 16;

    /// Adds the next failed run (indices rise).
    pub fn push(&mut self, run: FailedRun) {
        if self.first.len() < Self::FIRST {
            self.first.push(run);
        } else {
            self.last.push_back(run);
            if self.last.len() > Self::LAST {
                self.last.pop_front();
                self.omitted += 1;
            }
        }
        // The run that just left the most recent TAILS keeps no tail.
        let kept = self.first.len() + self.last.len();
        if let Some(older) = kept.checked_sub(Self::TAILS + 1) {
            let run = match older.checked_sub(self.first.len()) {
                None => self.first.get_mut(older),
                Some(i) => self.last.get_mut(i),
            };
            if let Some(run) = run {
                run.stderr_tail = None;
            }
        }
    }

    /// The kept runs in index order: the first ones, then the most recent.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &FailedRun> + '_ {
        self.first.iter().chain(self.last.iter())
    }

    /// The first failed run.
    pub fn first(&self) -> Option<&FailedRun> {
        self.first.first()
    }

    /// The most recent failed run.
    pub fn last(&self) -> Option<&FailedRun> {
        self.last.back().or_else(|| self.first.last())
    }

    /// Every failed run, the omitted ones included.
    pub fn total(&self) -> u64 {
        (self.first.len() + self.last.len()) as u64 + self.omitted
    }

    /// How many failed runs between the first and the last kept ones are not listed (they are
    /// in `runs.jsonl`).
    pub fn omitted(&self) -> u64 {
        self.omitted
    }

    /// Whether no run failed.
    pub fn is_empty(&self) -> bool {
        self.first.is_empty()
    }
}

impl FromIterator<FailedRun> for FailedRuns {
    fn from_iter<I: IntoIterator<Item = FailedRun>>(runs: I) -> Self {
        let mut all = FailedRuns::default();
        for run in runs {
            all.push(run);
        }
        all
    }
}

impl serde::Serialize for FailedRuns {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.iter())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(index: u64) -> FailedRun {
        FailedRun {
            index,
            reason: format!("exited with code {index}"),
            stderr_tail: Some("tail".into()),
            counted: false,
        }
    }

    #[test]
    fn the_first_and_the_last_are_kept_and_the_rest_counted() {
        let runs: FailedRuns = (0..10_000).map(run).collect();
        assert_eq!(runs.total(), 10_000);
        assert_eq!(runs.omitted(), 10_000 - 105);
        let kept: Vec<u64> = runs.iter().map(|r| r.index).collect();
        assert_eq!(kept[..5], [0, 1, 2, 3, 4]);
        assert_eq!(kept[5], 10_000 - 100);
        assert_eq!(kept.len(), 105);
        assert_eq!(runs.last().map(|r| r.index), Some(9_999));
        let tails = runs.iter().filter(|r| r.stderr_tail.is_some()).count();
        assert_eq!(tails, FailedRuns::TAILS);
        assert!(runs.iter().rev().take(16).all(|r| r.stderr_tail.is_some()));
    }

    #[test]
    fn a_few_are_all_kept_with_the_last_sixteen_tails() {
        let runs: FailedRuns = (0..20).map(run).collect();
        assert_eq!((runs.total(), runs.omitted()), (20, 0));
        let tails: Vec<u64> = runs
            .iter()
            .filter(|r| r.stderr_tail.is_some())
            .map(|r| r.index)
            .collect();
        assert_eq!(tails, (4..20).collect::<Vec<_>>());
        let json = serde_json::to_value(&runs).unwrap();
        assert_eq!(json.as_array().map(Vec::len), Some(20));
    }
}
