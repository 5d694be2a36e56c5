//! What a person sees: the tables of a batch, a comparison, a report and the context, the
//! picture (SVG, HTML), the progress line, human units. Renderers take outcomes and records;
//! they never run anything.
#![forbid(unsafe_code)]

pub mod boots;
pub mod cause;
pub mod compare;
pub mod context;
pub mod cycles;
pub mod explain;
pub mod export;
pub mod gnu_time;
pub mod grid;
pub mod lines;
pub mod picture;
pub mod progress;
pub mod report;
pub mod rows;
pub mod style;
pub mod table;
pub mod terminal;
pub mod units;
pub mod verdict;
