//! The states of a command's whole process tree over each run: on a CPU, waiting for one,
//! in uninterruptible sleep, asleep (R, Q, D, S), from the scheduler's own tracepoints.
//!
//! Layouts come from tracefs format files ([`format`]); raw records become events
//! ([`decode`]); a run's events are replayed into the four states ([`replay`]).
#![forbid(unsafe_code)]

pub mod decode;
pub mod drains;
pub mod format;
pub mod mounted;
pub mod replay;
pub mod session;
pub mod source;
pub mod tasks;
pub mod tracefs;
