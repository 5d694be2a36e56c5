//! `coldtrace cleanup`: what coldtrace leaves outside `-o`, found, removed where it is
//! provably coldtrace's, and each thing said — removed, left and why. Between `cli` (which
//! parses and prints) and what it looks at: the cgroup groups of batches killed mid-batch
//! ([`groups`], by the rules batches themselves keep: `crate::measure::cgroup::standing`), the
//! tracefs mount a batch made ([`tracefs`], by the record `crate::measure::tree::mounted`
//! keeps), the state directory ([`state`]) and, never touched, an armed `coldtrace boot` plan
//! ([`boot`]). [`said`] writes the lines.
#![forbid(unsafe_code)]

pub mod boot;
pub mod groups;
pub mod said;
pub mod state;
pub mod tracefs;

use std::path::PathBuf;

/// What `coldtrace cleanup` was asked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Asked {
    /// `--dry-run`: say, change nothing.
    pub dry_run: bool,
    /// `--cgroup DIR`: look for groups below DIR only.
    pub cgroup: Option<PathBuf>,
}

/// What became of a thing found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fate {
    /// Removed (killed, unmounted).
    Removed,
    /// `--dry-run`: would be removed.
    WouldRemove,
    /// Left, and rightly: not coldtrace's, in use by a batch that runs, or kept on purpose.
    Left,
    /// coldtrace's, and could not be removed: the exit code says so.
    NotRemoved,
}

/// One thing found, its fate and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Thing {
    /// What kind of thing: `group`, `tracefs`, `state`, `boot plan`.
    pub kind: &'static str,
    /// Where it is.
    pub path: String,
    /// What became of it.
    pub fate: Fate,
    /// Why, in words.
    pub why: String,
}

impl Thing {
    fn new(kind: &'static str, path: impl Into<String>, fate: Fate, why: String) -> Thing {
        Thing {
            kind,
            path: path.into(),
            fate,
            why,
        }
    }
}

/// Everything cleanup finds, in order: groups, the tracefs mount, the state, a boot plan.
pub fn cleanup(asked: &Asked) -> Vec<Thing> {
    let state_dir = crate::measure::boot_marker::state_dir();
    let mut things = groups::groups(asked.cgroup.as_deref(), asked.dry_run);
    let (mount, keep_record) = tracefs::tracefs(state_dir.as_deref().ok(), asked.dry_run);
    things.extend(mount);
    things.extend(state::state(state_dir, keep_record, asked.dry_run));
    things.extend(boot::boot());
    things
}

/// `PID (comm)`, comma-separated.
fn processes(list: &[crate::measure::descendants::Proc]) -> String {
    let named: Vec<String> = list
        .iter()
        .map(|p| format!("{} ({})", p.pid, p.comm))
        .collect();
    named.join(", ")
}

/// Whether this process runs as root (the effective user).
fn root() -> bool {
    rustix::process::geteuid().is_root()
}
