//! `--export-markdown FILE`: the table of a batch or a comparison, whole (nothing shortened),
//! and the notes under it as a list. The tables themselves are drawn by `table.rs` and
//! `compare.rs`; this names the export.
#![forbid(unsafe_code)]

pub use crate::view::compare::compare_markdown as comparison;
pub use crate::view::table::markdown as batch;
