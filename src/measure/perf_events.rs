//! The perf events coldtrace can count, by the names `perf list` gives them: every software
//! event, the generalised hardware events and the cache events. A catalogue: nothing is opened.
//!
//! Hardware and cache events need a PMU; where the CPU (or the hypervisor) exposes none, opening
//! them fails and the reading says why (see [`crate::measure::perf`]). The names and aliases
//! are perf's (`tools/perf/util/parse-events.c`), so `--events` takes what `perf stat -e` takes
//! for these types.
#![forbid(unsafe_code)]

use coldtrace_syscalls::perf::{
    PERF_COUNT_HW_BRANCH_INSTRUCTIONS, PERF_COUNT_HW_BRANCH_MISSES, PERF_COUNT_HW_BUS_CYCLES,
    PERF_COUNT_HW_CACHE_IDS, PERF_COUNT_HW_CACHE_MISSES, PERF_COUNT_HW_CACHE_OPS,
    PERF_COUNT_HW_CACHE_REFERENCES, PERF_COUNT_HW_CACHE_RESULT_ACCESS,
    PERF_COUNT_HW_CACHE_RESULT_MISS, PERF_COUNT_HW_CPU_CYCLES, PERF_COUNT_HW_INSTRUCTIONS,
    PERF_COUNT_HW_REF_CPU_CYCLES, PERF_COUNT_HW_STALLED_CYCLES_BACKEND,
    PERF_COUNT_HW_STALLED_CYCLES_FRONTEND, PERF_COUNT_SW_ALIGNMENT_FAULTS,
    PERF_COUNT_SW_BPF_OUTPUT, PERF_COUNT_SW_CGROUP_SWITCHES, PERF_COUNT_SW_CONTEXT_SWITCHES,
    PERF_COUNT_SW_CPU_CLOCK, PERF_COUNT_SW_CPU_MIGRATIONS, PERF_COUNT_SW_DUMMY,
    PERF_COUNT_SW_EMULATION_FAULTS, PERF_COUNT_SW_PAGE_FAULTS, PERF_COUNT_SW_PAGE_FAULTS_MAJ,
    PERF_COUNT_SW_PAGE_FAULTS_MIN, PERF_COUNT_SW_TASK_CLOCK, PERF_TYPE_HARDWARE,
    PERF_TYPE_HW_CACHE, PERF_TYPE_SOFTWARE,
};

/// The three kinds of event coldtrace opens.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// Counted by the kernel itself: always present.
    Software,
    /// A generalised hardware event: needs a PMU.
    Hardware,
    /// A cache event (`PERF_TYPE_HW_CACHE`): needs a PMU that maps it.
    Cache,
}

/// One counter, named as `perf stat -e` names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PerfEvent {
    name: &'static str,
    kind: Kind,
    config: u64,
}

const fn sw(name: &'static str, config: u64) -> PerfEvent {
    PerfEvent {
        name,
        kind: Kind::Software,
        config,
    }
}

const fn hw(name: &'static str, config: u64) -> PerfEvent {
    PerfEvent {
        name,
        kind: Kind::Hardware,
        config,
    }
}

/// `PREFIX-loads`, `-load-misses`, `-stores`, `-store-misses`, `-prefetches`,
/// `-prefetch-misses` of one cache, in perf's spelling.
macro_rules! cache {
    ($prefix:literal, $id:expr) => {
        [
            cache_event(
                concat!($prefix, "-loads"),
                $id,
                0,
                PERF_COUNT_HW_CACHE_RESULT_ACCESS,
            ),
            cache_event(
                concat!($prefix, "-load-misses"),
                $id,
                0,
                PERF_COUNT_HW_CACHE_RESULT_MISS,
            ),
            cache_event(
                concat!($prefix, "-stores"),
                $id,
                1,
                PERF_COUNT_HW_CACHE_RESULT_ACCESS,
            ),
            cache_event(
                concat!($prefix, "-store-misses"),
                $id,
                1,
                PERF_COUNT_HW_CACHE_RESULT_MISS,
            ),
            cache_event(
                concat!($prefix, "-prefetches"),
                $id,
                2,
                PERF_COUNT_HW_CACHE_RESULT_ACCESS,
            ),
            cache_event(
                concat!($prefix, "-prefetch-misses"),
                $id,
                2,
                PERF_COUNT_HW_CACHE_RESULT_MISS,
            ),
        ]
    };
}

const fn cache_event(name: &'static str, id: usize, op: usize, result: u64) -> PerfEvent {
    PerfEvent {
        name,
        kind: Kind::Cache,
        config: PERF_COUNT_HW_CACHE_IDS[id] | PERF_COUNT_HW_CACHE_OPS[op] << 8 | result << 16,
    }
}

const SOFTWARE: [PerfEvent; 12] = [
    PerfEvent::TASK_CLOCK,
    PerfEvent::PAGE_FAULTS,
    PerfEvent::CONTEXT_SWITCHES,
    PerfEvent::CPU_MIGRATIONS,
    sw("cpu-clock", PERF_COUNT_SW_CPU_CLOCK),
    sw("minor-faults", PERF_COUNT_SW_PAGE_FAULTS_MIN),
    sw("major-faults", PERF_COUNT_SW_PAGE_FAULTS_MAJ),
    sw("alignment-faults", PERF_COUNT_SW_ALIGNMENT_FAULTS),
    sw("emulation-faults", PERF_COUNT_SW_EMULATION_FAULTS),
    sw("cgroup-switches", PERF_COUNT_SW_CGROUP_SWITCHES),
    sw("dummy", PERF_COUNT_SW_DUMMY),
    sw("bpf-output", PERF_COUNT_SW_BPF_OUTPUT),
];

const HARDWARE: [PerfEvent; 10] = [
    PerfEvent::INSTRUCTIONS,
    PerfEvent::CYCLES,
    PerfEvent::CACHE_REFERENCES,
    PerfEvent::CACHE_MISSES,
    PerfEvent::BRANCH_MISSES,
    hw("branch-instructions", PERF_COUNT_HW_BRANCH_INSTRUCTIONS),
    hw("bus-cycles", PERF_COUNT_HW_BUS_CYCLES),
    hw(
        "stalled-cycles-frontend",
        PERF_COUNT_HW_STALLED_CYCLES_FRONTEND,
    ),
    hw(
        "stalled-cycles-backend",
        PERF_COUNT_HW_STALLED_CYCLES_BACKEND,
    ),
    hw("ref-cycles", PERF_COUNT_HW_REF_CPU_CYCLES),
];

const CACHES: [[PerfEvent; 6]; 7] = [
    cache!("L1-dcache", 0),
    cache!("L1-icache", 1),
    cache!("LLC", 2),
    cache!("dTLB", 3),
    cache!("iTLB", 4),
    cache!("branch", 5),
    cache!("node", 6),
];

/// perf's other names for events: alias → name.
const ALIASES: [(&str, &str); 7] = [
    ("faults", "page-faults"),
    ("cs", "context-switches"),
    ("migrations", "cpu-migrations"),
    ("cpu-cycles", "cycles"),
    ("branches", "branch-instructions"),
    ("idle-cycles-frontend", "stalled-cycles-frontend"),
    ("idle-cycles-backend", "stalled-cycles-backend"),
];

impl PerfEvent {
    /// `task-clock`: nanoseconds the task was on a CPU.
    pub const TASK_CLOCK: PerfEvent = sw("task-clock", PERF_COUNT_SW_TASK_CLOCK);
    /// `page-faults`: minor + major page faults.
    pub const PAGE_FAULTS: PerfEvent = sw("page-faults", PERF_COUNT_SW_PAGE_FAULTS);
    /// `context-switches`.
    pub const CONTEXT_SWITCHES: PerfEvent = sw("context-switches", PERF_COUNT_SW_CONTEXT_SWITCHES);
    /// `cpu-migrations`.
    pub const CPU_MIGRATIONS: PerfEvent = sw("cpu-migrations", PERF_COUNT_SW_CPU_MIGRATIONS);
    /// `instructions` retired.
    pub const INSTRUCTIONS: PerfEvent = hw("instructions", PERF_COUNT_HW_INSTRUCTIONS);
    /// `cycles`.
    pub const CYCLES: PerfEvent = hw("cycles", PERF_COUNT_HW_CPU_CYCLES);
    /// `cache-references`, usually last-level cache.
    pub const CACHE_REFERENCES: PerfEvent = hw("cache-references", PERF_COUNT_HW_CACHE_REFERENCES);
    /// `cache-misses`, usually last-level cache.
    pub const CACHE_MISSES: PerfEvent = hw("cache-misses", PERF_COUNT_HW_CACHE_MISSES);
    /// `branch-misses`.
    pub const BRANCH_MISSES: PerfEvent = hw("branch-misses", PERF_COUNT_HW_BRANCH_MISSES);

    /// Every event: software, hardware, then cache events.
    pub fn all() -> impl Iterator<Item = PerfEvent> + Clone {
        SOFTWARE
            .into_iter()
            .chain(HARDWARE)
            .chain(CACHES.into_iter().flatten())
    }

    /// perf's name for the event (`"task-clock"`).
    pub const fn name(self) -> &'static str {
        self.name
    }

    /// The event named `name` by perf, or by one of perf's aliases (`faults`, `cs`,
    /// `migrations`, `cpu-cycles`, `branches`, `idle-cycles-*`). `None` for anything else.
    pub fn parse(name: &str) -> Option<PerfEvent> {
        let name = ALIASES
            .iter()
            .find(|(alias, _)| *alias == name)
            .map_or(name, |(_, real)| real);
        Self::all().find(|e| e.name == name)
    }

    /// Every name `parse` takes, aliases included (for suggestions and completions).
    pub fn names() -> impl Iterator<Item = &'static str> + Clone {
        Self::all()
            .map(PerfEvent::name)
            .chain(ALIASES.iter().map(|(alias, _)| *alias))
    }

    /// `"ns"` for the clocks, `"count"` for the others.
    pub const fn unit(self) -> &'static str {
        match (self.kind, self.config) {
            (Kind::Software, PERF_COUNT_SW_TASK_CLOCK | PERF_COUNT_SW_CPU_CLOCK) => "ns",
            _ => "count",
        }
    }

    /// Software, hardware or cache.
    pub const fn kind(self) -> Kind {
        self.kind
    }

    /// Whether the event needs a hardware PMU.
    pub const fn is_hardware(self) -> bool {
        !matches!(self.kind, Kind::Software)
    }

    /// Whether the kernel raises the event only in kernel context (from the scheduler), so that
    /// with `exclude_kernel = 1` it would always count 0. Verified for context-switches
    /// (`tests/perf.rs`, run unprivileged: 0 against 109 in rusage); cpu-migrations and
    /// cgroup-switches are raised the same way (`perf_sw_event_sched`), by reading the kernel,
    /// not measured.
    pub const fn occurs_only_in_kernel(self) -> bool {
        matches!(
            (self.kind, self.config),
            (
                Kind::Software,
                PERF_COUNT_SW_CONTEXT_SWITCHES
                    | PERF_COUNT_SW_CPU_MIGRATIONS
                    | PERF_COUNT_SW_CGROUP_SWITCHES
            )
        )
    }

    /// `(type, config)` for `perf_event_attr`.
    pub const fn type_config(self) -> (u32, u64) {
        let type_ = match self.kind {
            Kind::Software => PERF_TYPE_SOFTWARE,
            Kind::Hardware => PERF_TYPE_HARDWARE,
            Kind::Cache => PERF_TYPE_HW_CACHE,
        };
        (type_, self.config)
    }
}

/// What `--counters` counts: the four scheduler/fault software events and five hardware ones.
pub fn default_events() -> Vec<PerfEvent> {
    vec![
        PerfEvent::TASK_CLOCK,
        PerfEvent::PAGE_FAULTS,
        PerfEvent::CONTEXT_SWITCHES,
        PerfEvent::CPU_MIGRATIONS,
        PerfEvent::INSTRUCTIONS,
        PerfEvent::CYCLES,
        PerfEvent::CACHE_REFERENCES,
        PerfEvent::CACHE_MISSES,
        PerfEvent::BRANCH_MISSES,
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_round_trip() {
        let names: Vec<&str> = PerfEvent::all().map(PerfEvent::name).collect();
        assert_eq!(names.len(), 12 + 10 + 42);
        for (i, name) in names.iter().enumerate() {
            assert!(!names[..i].contains(name), "{name} twice");
            assert_eq!(PerfEvent::parse(name).map(PerfEvent::name), Some(*name));
        }
        let configs: Vec<(u32, u64)> = PerfEvent::all().map(PerfEvent::type_config).collect();
        for (i, c) in configs.iter().enumerate() {
            assert!(!configs[..i].contains(c), "{c:?} twice");
        }
    }

    #[test]
    fn aliases_and_the_perf_spelling_of_cache_events() {
        assert_eq!(PerfEvent::parse("cs"), Some(PerfEvent::CONTEXT_SWITCHES));
        assert_eq!(PerfEvent::parse("faults"), Some(PerfEvent::PAGE_FAULTS));
        assert_eq!(PerfEvent::parse("cpu-cycles"), Some(PerfEvent::CYCLES));
        assert_eq!(
            PerfEvent::parse("branches").map(PerfEvent::name),
            Some("branch-instructions")
        );
        assert_eq!(PerfEvent::parse("Instructions"), None);
        assert_eq!(PerfEvent::parse(""), None);
        // perf's encoding: L1D = 0, read = 0, miss = 1; LLC = 2, write = 1, access = 0.
        let miss = PerfEvent::parse("L1-dcache-load-misses").unwrap();
        assert_eq!(miss.type_config(), (3, 0x1_00_00));
        let llc = PerfEvent::parse("LLC-stores").unwrap();
        assert_eq!(llc.type_config(), (3, 0x00_01_02));
        assert_eq!(
            PerfEvent::parse("node-prefetch-misses")
                .unwrap()
                .type_config(),
            (3, 0x1_02_06)
        );
    }

    #[test]
    fn units_kinds_and_kernel_only_events() {
        assert_eq!(PerfEvent::TASK_CLOCK.unit(), "ns");
        assert_eq!(PerfEvent::parse("cpu-clock").unwrap().unit(), "ns");
        assert_eq!(PerfEvent::parse("major-faults").unwrap().unit(), "count");
        assert!(PerfEvent::BRANCH_MISSES.is_hardware() && !PerfEvent::CPU_MIGRATIONS.is_hardware());
        assert!(PerfEvent::parse("dTLB-loads").unwrap().is_hardware());
        assert!(PerfEvent::CONTEXT_SWITCHES.occurs_only_in_kernel());
        assert!(!PerfEvent::PAGE_FAULTS.occurs_only_in_kernel());
        assert_eq!(default_events().len(), 9);
    }
}
