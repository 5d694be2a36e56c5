//! The audited unsafe core of coldtrace.
//!
//! This crate starts a program with vfork semantics, waits for it with a hand-written
//! [`wait4(2)`](https://man7.org/linux/man-pages/man2/wait4.2.html) binding that collects the
//! child's own resource usage, and decodes wait statuses totally. It is `no_std` (it needs
//! `alloc` for argument vectors) and usable on its own.
//!
//! # Where the unsafe lives
//! Every `unsafe` block of the whole project is in [`raw`]: this root denies unsafe code, that
//! module alone allows it, and every other module forbids it. `raw` opens with an inventory for
//! auditors: each unsafe item, the invariants it relies on and its man page.
//!
//! # Layout
//! - [`status`]: [`WaitStatus`], a total decoder of the kernel's wait status (pure, safe).
//! - [`errno`]: [`Errno`], a transparent newtype over the kernel's error numbers.
//! - [`signal`]: [`Signal`] names and [`SigSet`], the kernel's 64-bit signal set.
//! - [`rusage`]: [`ResourceUsage`], the fields of `struct rusage` that Linux maintains.
//! - [`spawn`]: the safe builder of a child's inputs, PATH lookup, and [`spawn::Child`].
//! - [`wait`]: waiting with a deadline, looking at a zombie before reaping it, signalling.
//! - [`raw`]: the unsafe module.
#![no_std]
#![deny(unsafe_code)]
#![warn(missing_docs)]

extern crate alloc;
#[cfg(feature = "std")]
extern crate std;

pub mod errno;
pub mod raw;
pub mod rusage;
pub mod signal;
pub mod spawn;
pub mod status;
pub mod wait;

pub use errno::Errno;
pub use rusage::ResourceUsage;
pub use signal::{SigSet, Signal};
pub use spawn::{find_program, Child, ChildStack, Program, SpawnError, SpawnOptions};
pub use status::{WaitStatus, WaitStatusKind};
pub use wait::{SignalFd, WaitEvent};
