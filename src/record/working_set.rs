//! The first run's working set cached before the later runs, summarised apart for the runs made
//! cold and the warm runs (`batch.json`'s `working_set`). Pure: rows in, a summary out.
#![forbid(unsafe_code)]

use crate::record::columns::{Row, WarmSeries, POSITION, WORKING_SET_RATIO};
use crate::record::stats::Summary;
use crate::serialize_struct;

/// What the first run brought into the page cache, and how much of it was cached before the
/// runs after it.
#[derive(Clone, Debug, PartialEq)]
pub struct WorkingSetSummary {
    /// Files the first run brought into the page cache.
    pub files: u64,
    /// The bytes it brought in.
    pub paged_bytes: u64,
    /// The share cached before each run made cold after the first (`null`: none).
    pub cold: Option<Summary>,
    /// The share cached before each warm run (`null`: none).
    pub warm: Option<Summary>,
}
serialize_struct!(WorkingSetSummary {
    files,
    paged_bytes,
    cold,
    warm
});

/// The summary over `rows` (every counted run after the first): with `every_run_cold` all of
/// them were made cold, else those at position 0 of a cycle. `None` without a working set.
pub fn summarise(
    files: u64,
    paged_bytes: u64,
    rows: &dyn WarmSeries,
    every_run_cold: bool,
) -> Option<WorkingSetSummary> {
    if files == 0 {
        return None;
    }
    let (mut cold, mut warm) = (Vec::new(), Vec::new());
    rows.each_row(&mut |row: &Row| {
        let Some(ratio) = row.get(WORKING_SET_RATIO) else {
            return;
        };
        if every_run_cold || row.get(POSITION) == Some(0.0) {
            cold.push(ratio);
        } else {
            warm.push(ratio);
        }
    });
    Some(WorkingSetSummary {
        files,
        paged_bytes,
        cold: Summary::of(&cold),
        warm: Summary::of(&warm),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(position: Option<u64>, ratio: f64) -> Row {
        let mut values = vec![f64::NAN; WORKING_SET_RATIO + 1];
        values[WORKING_SET_RATIO] = ratio;
        values[POSITION] = position.map_or(f64::NAN, |p| p as f64);
        Row::from_values(values)
    }

    #[test]
    fn cold_and_warm_runs_are_summarised_apart() {
        let rows = [
            row(Some(1), 1.0),
            row(Some(0), 0.0),
            row(Some(1), 0.98),
            row(Some(0), 0.02),
        ];
        let s = summarise(70, 12 << 20, &rows, false).unwrap();
        assert_eq!((s.cold.unwrap().n, s.cold.unwrap().max), (2, 0.02));
        assert_eq!((s.warm.unwrap().n, s.warm.unwrap().min), (2, 0.98));
        let every = summarise(70, 12 << 20, &rows[..2].to_vec(), true).unwrap();
        assert_eq!((every.cold.unwrap().n, every.warm), (2, None));
        assert_eq!(summarise(0, 0, &rows, false), None);
    }
}
