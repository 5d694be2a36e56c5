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
mod clone_args;
pub mod errno;
mod exec_image;
mod owners;
mod parent_side;
pub mod perf;
pub mod raw;
pub mod ring;
pub mod rusage;
pub mod signal;
mod sigset;
pub mod spawn;
pub mod spawner;
pub mod status;
pub mod wait;

#[cfg(test)]
mod race_tests;
#[cfg(test)]
mod storm_tests;
#[cfg(test)]
mod test_hooks;

pub use errno::Errno;
#[cfg(feature = "std")]
pub use raw::alloc::ExitOnNull;
pub use rusage::ResourceUsage;
pub use signal::{SigSet, Signal};
pub use spawn::{
    find_program, Child, ChildStack, HandledSignals, Program, ReapError, SpawnError, SpawnOptions,
};
pub use status::{WaitStatus, WaitStatusKind};
pub use wait::{OrphanSweep, SignalFd, Subreaper, WaitEvent};
