//! One run and what surrounds it: the timed window (spawn → exit seen → inspect the zombie →
//! reap), the runner's floor, system samples, perf counters, page-cache residency and eviction,
//! /proc reads, the machine's context, clocks. It measures; it never records or renders.
#![forbid(unsafe_code)]

pub mod boot_marker;
pub mod cache;
pub mod cgroup;
pub mod clock;
pub mod context;
pub mod created;
pub mod descendants;
pub mod floor;
pub mod page_ins;
pub mod perf;
pub mod perf_events;
pub mod procfs;
pub mod rss_resolution;
pub mod runner;
pub mod spawner;
pub mod survivors;
pub mod system;
pub mod tick;
pub mod tree;
pub mod waiting;
pub mod zombie;
