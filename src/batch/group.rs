//! The batch's cgroup ([`crate::measure::cgroup`]): made at the first run that can use one,
//! after what earlier batches left was dealt with, and tried once with a child born in it
//! (`coldtrace --version`, output discarded) before any run is; then each run's leaf, given to
//! its spawn. It spawns nothing but that one probe.
#![forbid(unsafe_code)]

use crate::batch::shared::Shared;
use crate::measure::cgroup::{self, BatchGroup, Leaf};
use crate::measure::procfs;
use crate::measure::runner::{self, Outcome, RunLimits};
use crate::measure::survivors::SurvivorPolicy;
use crate::plan::Plan;
use crate::record::batch::{CgroupContext, LeftoverRecord};
use coldtrace_syscalls::spawn::ChildStage;
use coldtrace_syscalls::{Program, SpawnOptions};
use std::ffi::CString;
use std::os::fd::AsFd;

/// The batch's cgroup: not looked for yet, made, or why there is none.
pub(crate) enum GroupState {
    NotYet,
    Made(Box<BatchGroup>),
    Unavailable(String),
}

impl GroupState {
    /// The leaf the next run is born in, once [`Shared::prepare_leaf`] made it.
    pub(crate) fn leaf(&self) -> Option<&Leaf> {
        match self {
            GroupState::Made(g) => g.current_leaf(),
            _ => None,
        }
    }

    /// After run `index`: what its leaf counted ([`BatchGroup::end_run`]).
    pub(crate) fn after_run(&mut self, index: u64, left: bool) -> Option<cgroup::RunGroup> {
        match self {
            GroupState::Made(g) => g.end_run(index, left),
            _ => None,
        }
    }
}

impl Shared<'_> {
    /// The batch's cgroup, made on the first call that can use one (not with `--minimal`),
    /// and what the batch records of it; the first call also deals with what earlier batches
    /// left ([`cgroup::leftovers`]). Never fails: where no cgroup can be had, the reason is
    /// kept and the runs go on without.
    pub(crate) fn cgroup_context(&mut self, plan: &Plan) -> CgroupContext {
        if matches!(self.group, GroupState::NotYet) {
            self.group = if plan.minimal {
                GroupState::Unavailable("not used with --minimal".into())
            } else {
                self.make_group()
            };
        }
        match &self.group {
            GroupState::Made(g) => CgroupContext {
                path: Some(g.path().display().to_string()),
                psi_unavailable_reason: g.psi_unavailable().map(str::to_owned),
                leftover: self.leftover.iter().cloned().map(LeftoverRecord).collect(),
                ..CgroupContext::default()
            },
            GroupState::Unavailable(why) => CgroupContext {
                unavailable_reason: Some(why.clone()),
                leftover: self.leftover.iter().cloned().map(LeftoverRecord).collect(),
                ..CgroupContext::default()
            },
            GroupState::NotYet => CgroupContext::default(),
        }
    }

    /// Makes the leaf run `index` is born in, if the batch has a cgroup and the last leaf
    /// was kept (see [`GroupState::leaf`]). A leaf that cannot be made ends the batch's use of
    /// cgroups, with the reason.
    pub(crate) fn prepare_leaf(&mut self, index: u64) {
        if let GroupState::Made(g) = &mut self.group {
            if let Err(why) = g.leaf(index) {
                self.group = GroupState::Unavailable(why);
            }
        }
    }

    fn make_group(&mut self) -> GroupState {
        let mountinfo = procfs::read_text("/proc/self/mountinfo", 1 << 20).unwrap_or_default();
        let own = procfs::read_text("/proc/self/cgroup", 1 << 16).unwrap_or_default();
        let own = match cgroup::own_directory(&mountinfo, &own) {
            Ok(own) => own,
            Err(why) => return GroupState::Unavailable(why),
        };
        self.leftover = cgroup::leftovers(&own);
        let mut group = match BatchGroup::create(&own) {
            Ok(g) => g,
            Err(why) => return GroupState::Unavailable(why),
        };
        match self.probe(&mut group) {
            Ok(()) => GroupState::Made(Box::new(group)),
            Err(why) => GroupState::Unavailable(why),
        }
    }

    /// One child born in the group's first leaf (`clone3` with `CLONE_INTO_CGROUP`), so that
    /// a kernel, a seccomp filter or a delegation that refuses it is found before the first
    /// run, not by it. Its CPU time is left out of the first run's figures.
    fn probe(&mut self, group: &mut BatchGroup) -> Result<(), String> {
        let dev_null = self.dev_null().map_err(|e| e.message)?.try_clone_to_owned();
        let dev_null = dev_null.map_err(|e| format!("cannot open /dev/null: {e}"))?;
        // A spawn moves system-wide counters: the first run's delta must not include it.
        self.sampler.forget();
        let leaf = group.leaf(0)?;
        let program = Program::new(
            CString::new("/proc/self/exe").unwrap_or_default(),
            vec![
                CString::new("coldtrace").unwrap_or_default(),
                CString::new("--version").unwrap_or_default(),
            ],
            Vec::new(),
        );
        let options = SpawnOptions {
            stdin: Some(dev_null.as_fd()),
            stdout: Some(dev_null.as_fd()),
            stderr: Some(dev_null.as_fd()),
            signal_mask: Some(self.signals.child_mask),
            cgroup: Some(leaf.fd()),
            parent_death_signal: Some(coldtrace_syscalls::Signal::KILL),
            ..SpawnOptions::default()
        };
        let limits = RunLimits {
            timeout_ns: Some(10_000_000_000),
            kill_after_ns: 0,
            escalate_after_ns: None,
            spared: &self.spared,
            survivors: SurvivorPolicy::Kill,
            group: Some(leaf),
            // A request to stop that comes meanwhile stays queued for the batch, which checks
            // for one right before the first run.
            signals: None,
            counters: &[],
            inspect_child: false,
            orphans: Some(&self.signals.subreaper),
            tick: None,
            tree: None,
        };
        // Cloned by coldtrace itself, as the batch's hooks are.
        let via = runner::Via {
            stack: &mut self.stack,
            floor: &mut self.floor,
            spawner: &mut None,
        };
        let result = runner::measure(
            &program,
            &options,
            via,
            &limits,
            &mut crate::measure::waiting::Quietly,
        );
        group.end_run(0, false);
        // Only a failed clone says the group refuses children: a later step failed in a child
        // that was born in it.
        match result.outcome {
            Outcome::FailedToStart {
                stage: ChildStage::Clone,
                errno,
            } => Err(format!(
                "a child cannot be born in it (clone3 with CLONE_INTO_CGROUP: {errno})"
            )),
            _ => Ok(()),
        }
    }
}
