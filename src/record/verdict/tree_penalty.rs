//! The first-run penalty split by the whole process tree's states (`first_penalty.tree`): the
//! differences of R, Q, D and S between the first run and the reference warm run, which add up
//! to the penalty's wall time exactly; or, where either run has no states (no tree source, or
//! records that may be incomplete), why not, and how much more CPU the tree spent outside the
//! main thread (its other threads, its children), so that the main thread's split is labelled
//! for what it is. Pure arithmetic on two rows.
#![forbid(unsafe_code)]

use crate::record::columns::{Row, ON_CPU_NS, TREE};
use crate::record::metrics::metric_index;
use crate::serialize_struct;

/// `first_penalty.tree.source` when the split is the tree's states.
pub const BY_TREE: &str = "sched tracepoints";
/// `first_penalty.tree.source` when only the main thread's split is known.
pub const BY_MAIN_THREAD: &str = "main thread";

/// One run's tree figures, from its row.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct TreeFigures {
    /// R, Q, D, S, ns (all or none).
    pub states: Option<[i64; 4]>,
    /// Tasks the tree had.
    pub tasks: Option<u64>,
    /// The run was traced (its states may still be missing: incomplete records).
    pub traced: bool,
    /// rusage CPU less the main thread's, ns.
    pub elsewhere_ns: Option<i64>,
    /// The process's other threads' CPU, ns.
    pub threads_ns: Option<i64>,
    /// The waited-for descendants' CPU, ns.
    pub children_ns: Option<i64>,
    /// What the hypervisor stole from the tasks' turns on a CPU, ns.
    pub steal_ns: Option<i64>,
}

impl TreeFigures {
    /// The figures of a row.
    pub fn of(row: &Row) -> TreeFigures {
        let at = |k: usize| row.get(TREE + k).map(|v| v as i64);
        let states = (|| Some([at(0)?, at(1)?, at(2)?, at(3)?]))();
        let rusage = |name: &str| row.get(metric_index(name));
        let cpu = rusage("user_us")
            .zip(rusage("sys_us"))
            .map(|(u, s)| (u + s) * 1000.0);
        let main = row.get(ON_CPU_NS);
        TreeFigures {
            states,
            tasks: row.get_u64(TREE + 4),
            traced: row.get(TREE + 5).is_some(),
            elsewhere_ns: cpu.zip(main).map(|(c, m)| (c - m) as i64),
            threads_ns: at(6),
            children_ns: at(7),
            steal_ns: at(8),
        }
    }
}

/// `first_penalty.tree`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TreePenalty {
    /// [`BY_TREE`] when both runs' states are known, else [`BY_MAIN_THREAD`].
    pub source: &'static str,
    /// Why the tree's states do not split the penalty (`None` when they do).
    pub unavailable: Option<String>,
    /// Extra time some task of the tree was on a CPU (ΔR).
    pub on_cpu_ns: Option<i64>,
    /// Extra time none was on a CPU and some waited for one (ΔQ).
    pub queued_ns: Option<i64>,
    /// Extra time none was runnable and some was in uninterruptible sleep (ΔD).
    pub uninterruptible_ns: Option<i64>,
    /// Extra time all were asleep (ΔS). The four add up to `first_penalty.wall_ns`.
    pub sleeping_ns: Option<i64>,
    /// Tasks of the first run's tree.
    pub tasks: Option<u64>,
    /// Tasks of the reference run's tree.
    pub reference_tasks: Option<u64>,
    /// Extra CPU outside the main thread (rusage less schedstat), ns.
    pub cpu_elsewhere_ns: Option<i64>,
    /// Of which, in the process's other threads (10 ms ticks), ns.
    pub other_threads_cpu_ns: Option<i64>,
    /// Of which, in the descendants it waited for, ns.
    pub children_cpu_ns: Option<i64>,
    /// Extra time the hypervisor stole from the tree's tasks while they were on a CPU (the
    /// runs' `tree.steal_ns`): of ΔR, what was not the command's, ns.
    pub steal_ns: Option<i64>,
}
serialize_struct!(TreePenalty {
    source,
    unavailable,
    on_cpu_ns,
    queued_ns,
    uninterruptible_ns,
    sleeping_ns,
    tasks,
    reference_tasks,
    cpu_elsewhere_ns,
    other_threads_cpu_ns,
    children_cpu_ns,
    steal_ns
});

/// The least extra steal said beside "on a CPU": below it, a few µs per context switch of
/// the tree are the switches' timing, not the hypervisor (docs/tree-explanation.md).
pub const STEAL_SAID_NS: i64 = 1_000_000;

impl TreePenalty {
    /// The extra steal to say beside ΔR: where the first run was longer on a CPU and the
    /// hypervisor stole at least [`STEAL_SAID_NS`] more from it, that steal, else `None`.
    pub fn steal_to_say(&self) -> Option<i64> {
        let steal = self.steal_ns.filter(|&s| s >= STEAL_SAID_NS)?;
        (self.on_cpu_ns? > 0).then_some(steal)
    }
}

/// The first-run penalty split by the process tree's states (ΔR, ΔQ, ΔD, ΔS, ns), as a report
/// row and a cycles' mean hold it; each `null` when unknown.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct TreeParts {
    /// Extra time some task of the tree was on a CPU.
    pub on_cpu_ns: Option<f64>,
    /// Extra time some waited for a CPU (none on one).
    pub queued_ns: Option<f64>,
    /// Extra time some was in uninterruptible sleep (none runnable).
    pub uninterruptible_ns: Option<f64>,
    /// Extra time all were asleep.
    pub sleeping_ns: Option<f64>,
    /// Tasks of the first run's tree.
    pub tasks: Option<u64>,
}
serialize_struct!(TreeParts {
    on_cpu_ns,
    queued_ns,
    uninterruptible_ns,
    sleeping_ns,
    tasks
});

impl TreeParts {
    /// R, Q, D, S, when all four are known.
    pub fn all(&self) -> Option<[f64; 4]> {
        Some([
            self.on_cpu_ns?,
            self.queued_ns?,
            self.uninterruptible_ns?,
            self.sleeping_ns?,
        ])
    }
}

/// `a − b` where both are known.
pub(crate) fn minus(a: Option<i64>, b: Option<i64>) -> Option<i64> {
    Some(a? - b?)
}

/// The tree's share of the penalty of `first` (run `first_index`) over `reference` (run
/// `reference_index`). `no_source` is why the batch has no tree source, when it has none.
pub fn tree_penalty(
    (first, first_index): (&TreeFigures, u64),
    (reference, reference_index): (&TreeFigures, u64),
    no_source: Option<&str>,
) -> TreePenalty {
    let mut p = TreePenalty {
        source: BY_MAIN_THREAD,
        tasks: first.tasks,
        reference_tasks: reference.tasks,
        cpu_elsewhere_ns: minus(first.elsewhere_ns, reference.elsewhere_ns),
        other_threads_cpu_ns: minus(first.threads_ns, reference.threads_ns),
        children_cpu_ns: minus(first.children_ns, reference.children_ns),
        steal_ns: minus(first.steal_ns, reference.steal_ns),
        ..TreePenalty::default()
    };
    match (first.states, reference.states) {
        (Some(f), Some(r)) => {
            p.source = BY_TREE;
            p.on_cpu_ns = Some(f[0] - r[0]);
            p.queued_ns = Some(f[1] - r[1]);
            p.uninterruptible_ns = Some(f[2] - r[2]);
            p.sleeping_ns = Some(f[3] - r[3]);
        }
        _ => {
            let incomplete = [(first, first_index), (reference, reference_index)]
                .into_iter()
                .find(|(f, _)| f.traced && f.states.is_none());
            p.unavailable = Some(match (incomplete, no_source) {
                (Some((_, index)), _) => format!(
                    "the scheduler records of run #{index} may be incomplete (its record's \
                     tree.unavailable says why)"
                ),
                (None, Some(why)) => why.to_string(),
                (None, None) => "the runs were not traced".to_string(),
            });
        }
    }
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    fn traced(states: [i64; 4], tasks: u64) -> TreeFigures {
        TreeFigures {
            states: Some(states),
            tasks: Some(tasks),
            traced: true,
            elsewhere_ns: Some(5),
            threads_ns: Some(2),
            children_ns: Some(3),
            steal_ns: Some(1_000),
        }
    }

    #[test]
    fn the_four_differences_add_up_to_the_wall_difference() {
        let first = traced([300, 20, 170, 10], 9);
        let reference = traced([41, 8, 20, 7], 7);
        let p = tree_penalty((&first, 0), (&reference, 3), None);
        assert_eq!(p.source, BY_TREE);
        let parts = [
            p.on_cpu_ns,
            p.queued_ns,
            p.uninterruptible_ns,
            p.sleeping_ns,
        ];
        assert_eq!(parts, [Some(259), Some(12), Some(150), Some(3)]);
        assert_eq!(parts.iter().flatten().sum::<i64>(), 500 - 76);
        assert_eq!(
            (p.tasks, p.reference_tasks, p.unavailable),
            (Some(9), Some(7), None)
        );
    }

    #[test]
    fn the_extra_steal_is_said_beside_a_longer_time_on_a_cpu_and_never_guessed() {
        let ms = 1_000_000;
        let mut first = traced([304 * ms, 0, 0, 0], 3);
        first.steal_ns = Some(70 * ms);
        let mut reference = traced([236 * ms, 0, 0, 0], 3);
        reference.steal_ns = Some(2 * ms);
        let p = tree_penalty((&first, 0), (&reference, 3), None);
        assert_eq!((p.on_cpu_ns, p.steal_ns), (Some(68 * ms), Some(68 * ms)));
        assert_eq!(p.steal_to_say(), Some(68 * ms));
        // A few µs per switch are the switches' timing; a shorter time on a CPU says none.
        reference.steal_ns = Some(70 * ms - 600_000);
        let p = tree_penalty((&first, 0), (&reference, 3), None);
        assert_eq!((p.steal_ns, p.steal_to_say()), (Some(600_000), None));
        let p = tree_penalty((&reference, 3), (&first, 0), None);
        assert_eq!(p.steal_to_say(), None);
        // Either run's steal unknown (no cgroup, a tree of several tasks): unknown, not 0.
        reference.steal_ns = None;
        let p = tree_penalty((&first, 0), (&reference, 3), None);
        assert_eq!((p.steal_ns, p.steal_to_say()), (None, None));
    }

    #[test]
    fn without_states_it_says_why_and_keeps_the_cpu_elsewhere() {
        let mut first = traced([0; 4], 1);
        first.states = None;
        first.elsewhere_ns = Some(50);
        let reference = traced([0; 4], 1);
        let p = tree_penalty((&first, 0), (&reference, 4), None);
        assert_eq!(p.source, BY_MAIN_THREAD);
        assert!(p.unavailable.unwrap().contains("run #0 may be incomplete"));
        assert_eq!(p.cpu_elsewhere_ns, Some(45));
        let untraced = TreeFigures {
            traced: false,
            states: None,
            ..first
        };
        let p = tree_penalty((&untraced, 0), (&untraced, 1), Some("needs root"));
        assert_eq!(p.unavailable.as_deref(), Some("needs root"));
        assert_eq!(p.on_cpu_ns, None);
    }
}
