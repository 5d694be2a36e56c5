#![doc = include_str!("../README.md")]
#![no_std]
#![deny(unsafe_code)]
#![warn(missing_docs)]

#[cfg(not(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
)))]
compile_error!("coldtrace-syscalls supports Linux on x86_64 and aarch64 only");

extern crate alloc;
#[cfg(feature = "std")]
extern crate std;

pub mod abi;
pub mod cache;
mod child_plan;
mod child_signals;
pub mod errno;
pub mod perf;
pub mod raw;
pub mod rusage;
pub mod signal;
pub mod spawn;
pub mod status;
pub mod wait;

#[cfg(test)]
mod storm_tests;

pub use errno::Errno;
pub use rusage::ResourceUsage;
pub use signal::{SigSet, Signal};
pub use spawn::{find_program, Child, ChildStack, Program, SpawnError, SpawnOptions};
pub use status::{WaitStatus, WaitStatusKind};
pub use wait::{OrphanSweep, SignalFd, Subreaper, WaitEvent};
