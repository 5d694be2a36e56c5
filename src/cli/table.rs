//! The option table: one declaration per option and per subcommand, the only place where a flag
//! is named. The parser (`args.rs`), every `-h`/`--help` text (`help.rs`), the man page and the
//! shell completions are generated from it, so they cannot drift. Declarations only: no parsing.
//!
//! An option is declared once, with its long name, short names, value names, the subcommands
//! that take it, a one-line help, a longer description and a category. Two entries may share a
//! long name only when no subcommand takes both (`--json` means a different thing to `report`
//! than to `run`); a test checks that. [`options`] and [`subcommands`] walk the whole table for
//! generators outside the parser.
#![forbid(unsafe_code)]

/// A subcommand.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Sub {
    /// `coldtrace run`
    Run,
    /// `coldtrace compare`
    Compare,
    /// `coldtrace report`
    Report,
    /// `coldtrace context`
    Context,
    /// `coldtrace time`: GNU time's drop-in.
    Time,
    /// `coldtrace man`: the manual page, generated from this table.
    Man,
    /// `coldtrace completions SHELL`: completion scripts, generated from this table.
    Completions,
    /// `coldtrace boot arm|run|status|disarm`: a batch at each of the next boots.
    Boot,
    /// `coldtrace cleanup`: removes what coldtrace left behind.
    Cleanup,
}

/// How a subcommand's arguments are laid out, which decides what a word that is not an option
/// means.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// Options, then `--`, then the command and its arguments (`run`): a word before `--` is
    /// an error, because it is where `time`-style habits put the command; one last word with
    /// no `--` at all is hyperfine's one command string (`run 'sleep 0.1'`).
    Separator,
    /// Options and operands in any order; `--` ends the options (`compare`, `report`).
    Free,
    /// Options, then the command: the first operand ends the options, as in GNU time.
    CommandAfterOptions,
}

/// What an option does when it is given more than once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Repeat {
    /// One value: the last one given is used, and coldtrace says so once.
    LastWins,
    /// Every occurrence counts (`--evict A --evict B`).
    Many,
}

/// Where an option is listed in the help and the man page.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Category {
    /// What is run and how often.
    Runs,
    /// What goes where: records, artifacts, the command's streams, messages.
    Output,
    /// Limits and commands around each run.
    AroundRuns,
    /// Cold state: eviction, dropping caches, residency.
    ColdState,
    /// Kernel perf counters.
    Counters,
    /// Several commands: names, parameter scans, shell, order.
    Commands,
    /// `boot arm`: which boots, what happens at each.
    Boots,
    /// What `report` or `context` prints.
    Format,
    /// `--help`, `--version`.
    General,
}

impl Category {
    /// Every category, in the order of the help text.
    pub const ALL: [Category; 9] = [
        Category::Boots,
        Category::Runs,
        Category::Commands,
        Category::Output,
        Category::AroundRuns,
        Category::ColdState,
        Category::Counters,
        Category::Format,
        Category::General,
    ];

    /// The heading in the help text and the man page.
    pub const fn title(self) -> &'static str {
        match self {
            Category::Runs => "Runs",
            Category::Output => "Records and output",
            Category::AroundRuns => "Around each run",
            Category::ColdState => "Cold state (before every counted run, or the first only)",
            Category::Counters => "Kernel counters (perf_event_open, from exec to exit)",
            Category::Commands => "Commands (a comparison, a parameter scan)",
            Category::Boots => "Boots (boot arm; --state-dir and --unit-dir: every action)",
            Category::Format => "Format",
            Category::General => "General",
        }
    }
}

/// One option.
#[derive(Debug)]
pub struct OptSpec {
    /// The long name, dashes included (`"--runs"`): the key the parser hands pico-args.
    pub long: &'static str,
    /// Short names (`['n', 'r']` for `-n` and `-r`).
    pub shorts: &'static [char],
    /// Short names that stand for the option with a value and take none themselves
    /// (`('S', "default")`: `-S` is `--shell default`, as in hyperfine 2.0).
    pub implied: &'static [(char, &'static str)],
    /// Other long names accepted for it, not shown in the help (`"--evict-first-only"`).
    pub aliases: &'static [&'static str],
    /// The names of its values, in order; empty for a switch.
    pub values: &'static [&'static str],
    /// A switch that may carry a value attached with `=` (`-i=1,2`, `--ignore-failure=1,2`,
    /// hyperfine's `require_equals`): the value's name.
    pub optional_value: Option<&'static str>,
    /// The words its value may be, when it is one of a few (shells complete them); empty
    /// when it is free (a number, a path).
    pub choices: &'static [&'static str],
    /// What happens when it is given twice.
    pub repeat: Repeat,
    /// The subcommands that take it.
    pub subcommands: &'static [Sub],
    /// Where it is listed.
    pub category: Category,
    /// One line (the `-h` text and the completions' description).
    pub help: &'static str,
    /// More (the `--help` text and the man page): defaults, interactions, caveats.
    pub description: &'static str,
}

impl OptSpec {
    /// Whether `sub` takes this option.
    pub fn taken_by(&self, sub: Sub) -> bool {
        self.subcommands.contains(&sub)
    }

    /// Whether the option takes no value.
    pub fn is_switch(&self) -> bool {
        self.values.is_empty()
    }

    /// `-n, -r, --runs N`, as the help and the man page show it.
    pub fn synopsis(&self) -> String {
        let mut names: Vec<String> = self
            .shorts
            .iter()
            .chain(self.implied.iter().map(|(c, _)| c))
            .map(|c| format!("-{c}"))
            .collect();
        names.push(self.long.to_string());
        let mut text = names.join(", ");
        for value in self.values {
            text.push(' ');
            text.push_str(value);
        }
        if let Some(value) = self.optional_value {
            text.push_str(&format!("[={value}]"));
        }
        text
    }

    /// How the option is named in messages: `-n/--runs`, or `--warmup`.
    pub fn display_name(&self) -> String {
        match self.shorts.first() {
            Some(c) => format!("-{c}/{}", self.long),
            None => self.long.to_string(),
        }
    }
}

/// One subcommand: what the help and the man page say about it, and how its words are laid out.
#[derive(Debug)]
pub struct SubSpec {
    /// Which one.
    pub sub: Sub,
    /// Its name on the command line.
    pub name: &'static str,
    /// The usage line after `coldtrace `.
    pub usage: &'static str,
    /// One line: what it does.
    pub summary: &'static str,
    /// The paragraphs after the usage line.
    pub about: &'static str,
    /// The paragraphs after the options (exit codes).
    pub epilogue: &'static str,
    /// What an operand means.
    pub layout: Layout,
    /// What its operands are, for the shells' completions.
    pub operands: Operands,
}

/// What a subcommand's operands are (shells complete them accordingly).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operands {
    /// None.
    Nothing,
    /// A command and its arguments (after `--` for [`Layout::Separator`]).
    Command,
    /// Command strings, one argument each (`compare`).
    CommandStrings,
    /// Directories (`report`).
    Directories,
    /// One of these words.
    Words(&'static [&'static str]),
}

/// Every option of `run` is one of `boot arm` too: the batch it runs at each boot is a run
/// (its `-o` is the one exception, declared apart).
const RUN_COMPARE: &[Sub] = &[Sub::Run, Sub::Compare, Sub::Boot];
const RUN_COMPARE_ONLY: &[Sub] = &[Sub::Run, Sub::Compare];
const BOOT: &[Sub] = &[Sub::Boot];
const ALL_SUBS: &[Sub] = &[
    Sub::Run,
    Sub::Compare,
    Sub::Report,
    Sub::Context,
    Sub::Time,
    Sub::Man,
    Sub::Completions,
    Sub::Boot,
    Sub::Cleanup,
];
const TIME: &[Sub] = &[Sub::Time];
const CLEANUP: &[Sub] = &[Sub::Cleanup];

/// `Some(name)` for a declared optional value, `None` without one.
macro_rules! optional_value {
    () => {
        None
    };
    ($value:literal) => {
        Some($value)
    };
}

/// Declares an option; `aliases`, `implied`, `optional_value` and `choices` may be left out. A brace-delimited macro call,
/// so that rustfmt leaves the table as written.
macro_rules! opt {
    {
        long: $long:literal,
        $(aliases: [$($alias:literal),*],)?
        short: [$($short:literal),*],
        $(implied: [$(($ic:literal, $iv:literal)),*],)?
        values: [$($value:literal),*],
        $(optional_value: $optional:literal,)?
        $(choices: [$($choice:literal),*],)?
        repeat: $repeat:ident,
        subs: $subs:expr,
        category: $category:ident,
        help: $help:literal,
        description: $description:literal $(,)?
    } => {
        OptSpec {
            long: concat!("--", $long),
            shorts: &[$($short),*],
            implied: &[$($(($ic, $iv)),*)?],
            aliases: &[$($(concat!("--", $alias)),*)?],
            values: &[$($value),*],
            optional_value: optional_value!($($optional)?),
            choices: &[$($($choice),*)?],
            repeat: Repeat::$repeat,
            subcommands: $subs,
            category: Category::$category,
            help: $help,
            description: $description,
        }
    };
}

/// Every option, in the order of the help text within each category.
static OPTIONS: &[OptSpec] = &[
    opt! {
        long: "boots", short: [], values: ["K"], repeat: LastWins,
        subs: BOOT, category: Boots,
        help: "a batch at each of the next K boots (default 3)",
        description: "The number of boots whose batch runs (default 3, at most 1000): the \
            count left is decremented before each boot's batch starts, and after the K-th \
            coldtrace disarms itself (the unit and the state removed).",
    },
    opt! {
        long: "out", short: ['o'], values: ["DIR"], repeat: LastWins,
        subs: BOOT, category: Boots,
        help: "each boot's batch in DIR/boot-NN-<boot id>/ (required)",
        description: "The directory that holds one batch directory per boot, \
            DIR/boot-NN-<boot id>/ (NN from 01), and boots.jsonl, one line per event (armed, a \
            boot's batch started or ended, disarmed and why). Made at arming when missing; it \
            must be on storage that outlives a reboot. `coldtrace report DIR` shows the boots \
            side by side.",
    },
    opt! {
        long: "reboot", short: [], values: [], optional_value: "COMMAND", repeat: LastWins,
        subs: BOOT, category: Boots,
        help: "reboot after a boot's batch while boots remain",
        description: "After a boot's batch (and its --control batch) succeeded and boots \
            remain, reboot: `systemctl reboot` under systemd, else `reboot`; with =COMMAND, \
            `/bin/sh -c COMMAND` instead (a fleet's own way: `--reboot='shutdown -r +1'`). \
            Never the default, and never after a failed batch, an interrupted one or the \
            last boot.",
    },
    opt! {
        long: "after", short: [], values: ["UNIT"], repeat: Many,
        subs: BOOT, category: Boots,
        help: "start after UNIT too: a mount, a GPU's modules",
        description: "Order the boot unit after UNIT as well (After= and Wants=), for what the \
            command needs: a network mount (remote-fs.target is there by default, with \
            local-fs.target), network-online.target, a GPU's module loader. Repeatable.",
    },
    opt! {
        long: "control", short: [], values: ["SECONDS"], repeat: LastWins,
        subs: BOOT, category: Boots,
        help: "a second batch SECONDS later: the settled system",
        description: "After each boot's batch, wait SECONDS, then run the same batch again \
            into DIR/boot-NN-<boot id>-control/: a fresh process on a system that has \
            settled, the other shape of a first run, to hold against the one right after \
            boot.",
    },
    opt! {
        long: "start-timeout", short: [], values: ["SECONDS"], repeat: LastWins,
        subs: BOOT, category: Boots,
        help: "the unit's TimeoutStartSec: the longest a boot's batches may take (3600)",
        description: "How long systemd lets a boot's batches (with --control's wait) run \
            before it stops them (the unit's TimeoutStartSec, default 3600). A batch stopped \
            so never finished: the next boot disarms instead of running again.",
    },
    opt! {
        long: "dry-run", short: [], values: [], repeat: LastWins,
        subs: BOOT, category: Boots,
        help: "print what arming would install; change nothing",
        description: "Check everything arming checks and print the systemd unit and the \
            saved plan that it would install, without writing anything.",
    },
    opt! {
        long: "state-dir", short: [], values: ["DIR"], repeat: LastWins,
        subs: BOOT, category: Boots,
        help: "the armed state (default /var/lib/coldtrace/boot)",
        description: "The directory of the armed state (state.json, owned by the user who \
            armed, mode 0600, in a directory of mode 0700 that is no symlink): default \
            /var/lib/coldtrace/boot. Give the same to every action; the unit passes it to \
            `boot run`.",
    },
    opt! {
        long: "unit-dir", short: [], values: ["DIR"], repeat: LastWins,
        subs: BOOT, category: Boots,
        help: "where the unit is installed (default /etc/systemd/system)",
        description: "The directory the unit coldtrace-boot.service goes to, with its \
            link in multi-user.target.wants/: default /etc/systemd/system.",
    },
    opt! {
        long: "runs", short: ['n', 'r'], values: ["N"], repeat: LastWins,
        subs: RUN_COMPARE, category: Runs,
        help: "exactly N counted runs (default: by time, at least 10)",
        description: "Exactly N counted runs of each command. Without it the count is chosen \
            as hyperfine chooses it: see --max-time. -n 1 is one run like `time`: it \
            inherits the terminal's stdin and output and exits with the command's code. \
            hyperfine's -r; coldtrace's -n too (hyperfine's -n NAME is --command-name NAME).",
    },
    opt! {
        long: "warmup", short: ['w'], values: ["N"], repeat: LastWins,
        subs: RUN_COMPARE, category: Runs,
        help: "runs before the counted ones, recorded, never counted",
        description: "Warm-up runs before the counted ones: recorded in runs.jsonl with role \
            \"warmup\", never in the statistics. Warm-ups destroy the cold first run: the first \
            counted run is then warm too.",
    },
    opt! {
        long: "min-runs", short: ['m'], values: ["N"], repeat: LastWins,
        subs: RUN_COMPARE, category: Runs,
        help: "at least N counted runs; the count is chosen by time (default 10)",
        description: "At least N counted runs when the count is chosen by time (the \
            default without -n): 10 unless given.",
    },
    opt! {
        long: "max-runs", short: ['M'], values: ["N"], repeat: LastWins,
        subs: RUN_COMPARE, category: Runs,
        help: "at most N counted runs; the count is chosen by time (no limit)",
        description: "At most N counted runs when the count is chosen by time (no limit by \
            default); below 10 it also lowers the default minimum, as in hyperfine.",
    },
    opt! {
        long: "max-time", short: [], values: ["SECONDS"], repeat: LastWins,
        subs: RUN_COMPARE, category: Runs,
        help: "the time budget that chooses the run count (default 3)",
        description: "The time budget that chooses the number of counted runs, hyperfine's \
            rule: after the first counted run, as many runs as fit in SECONDS (default 3) at \
            the cost of that run (its wall time, plus its --prepare and --conclude), but at \
            least --min-runs (10) and at most --max-runs. With --cold-first-only the cold \
            first run's cost is not the series': the count is fitted to the last warm-up, or \
            without one to the first warm run. In a comparison every command gets the same \
            number of rounds, fitted to the slowest command's run.",
    },
    opt! {
        long: "ignore-failure", short: ['i'], values: [], optional_value: "CODES",
        repeat: LastWins, subs: RUN_COMPARE, category: Runs,
        help: "count failed runs too (=CODES: only these exit codes, e.g. -i=1,2)",
        description: "Count runs that exited non-zero or died of a signal; each keeps its \
            failure_reason. With =CODES (hyperfine 2.0's list, e.g. --ignore-failure=1,2; \
            =all-non-zero is the same as none) only an exit with one of those codes is \
            counted, and any other failing run is rejected. Without -i, a failing first \
            counted run (or first warm-up) stops the batch at once, as in hyperfine, with its \
            exit status and the last lines of its stderr (exit 1); a later failing run is \
            rejected: recorded, listed with the last lines of its stderr, left out of the \
            statistics, and the batch exits 1.",
    },
    opt! {
        long: "command-name", short: [], values: ["NAME"], repeat: Many,
        subs: RUN_COMPARE, category: Commands,
        help: "a name per command (repeatable)",
        description: "Name the commands in the table, the records (as their label) and \
            batch.json: once for every command, or once per command in order (a parameter \
            scan counts each value as a command). {NAME} of a parameter scan is replaced. \
            hyperfine's -n NAME.",
    },
    opt! {
        long: "parameter-scan", short: ['P'], values: ["NAME", "MIN", "MAX"], repeat: LastWins,
        subs: RUN_COMPARE, category: Commands,
        help: "one command per value MIN..=MAX of {NAME}",
        description: "A parameter scan: one command per value from MIN to MAX (whole numbers, \
            step 1; with -D any decimals), with {NAME} replaced by the value in the command, \
            --command-name, --prepare, --conclude, --setup and --cleanup. `run -P n 1 3 -- \
            sleep 0.{n}` runs an interleaved comparison of sleep 0.1, sleep 0.2 and sleep 0.3; \
            with `compare`, every command is scanned.",
    },
    opt! {
        long: "parameter-step-size", short: ['D'], values: ["DELTA"], repeat: LastWins,
        subs: RUN_COMPARE, category: Commands,
        help: "the step of -P (default 1; decimals allowed)",
        description: "The step of --parameter-scan: -P d 0.3 0.7 -D 0.2 gives 0.3, 0.5 and \
            0.7, computed in decimal, not in floating point.",
    },
    opt! {
        long: "parameter-list", short: ['L'], values: ["NAME", "VALUES"], repeat: Many,
        subs: RUN_COMPARE, category: Commands,
        help: "one command per value of the comma-separated VALUES (repeatable)",
        description: "A parameter list: one command per value of VALUES (comma-separated; \
            \\, is a comma inside a value), {NAME} replaced as with -P. Given several times, \
            every combination is a command.",
    },
    opt! {
        long: "shell", short: [], implied: [('S', "default"), ('N', "none")],
        values: ["SHELL"], repeat: LastWins,
        subs: RUN_COMPARE, category: Commands,
        help: "run each command string through SHELL -c (-S: sh; -N: none, the default)",
        description: "Run each command through SHELL -c COMMAND (SHELL may carry arguments: \
            \"bash --norc\"); -S is --shell default (sh), -N is --shell none, the default: \
            coldtrace executes the command directly, and a command string with shell syntax \
            (a pipe, a redirection, $VAR, a glob, outside quotes) stops before anything runs \
            unless -N is given (then it runs as words). coldtrace does not subtract the \
            shell's own cost: each run's times and counts include the shell's start-up and \
            exit.",
    },
    opt! {
        long: "shuffle", short: [], values: ["SEED"], repeat: LastWins,
        subs: RUN_COMPARE, category: Commands,
        help: "random order within each round, from SEED",
        description: "Randomise the order of the commands within each round of a comparison, \
            reproducibly from SEED; without it every round runs A B C ... in the order given.",
    },
    opt! {
        long: "out", short: ['o'], values: ["DIR"], repeat: LastWins,
        subs: RUN_COMPARE_ONLY, category: Output,
        help: "the batch directory: records and batch.json",
        description: "The batch directory: a new one, or an empty directory of your own (a \
            non-empty one is refused with the next free name, e.g. DIR-2). runs.jsonl (one \
            record per run), batch.json, and with --keep-output runs/NNN/{stdout,stderr}; \
            what is measured is the same with or without it. A comparison keeps each \
            command's batch under DIR/commands/NN/. This is not GNU time's -o FILE: that one is \
            `coldtrace time -o FILE`.",
    },
    opt! {
        long: "json", short: [], values: [], repeat: LastWins,
        subs: RUN_COMPARE, category: Output,
        help: "the record (-n 1) or the batch document on stdout",
        description: "Print the record of a single run, or the batch document, as JSON on \
            stdout after the command has finished. stdout is the JSON's alone: the command's \
            own stdout goes to the terminal through stderr, and so does the table.",
    },
    opt! {
        long: "export-json", aliases: ["export-hyperfine-json"], short: [], values: ["FILE"],
        repeat: LastWins, subs: RUN_COMPARE, category: Output,
        help: "hyperfine's JSON export (its scripts read it), to FILE",
        description: "After the runs, write hyperfine 2.0's export document to FILE, field for \
            field (schema_version 2, metadata, primary_metric, results), for hyperfine's own \
            scripts and the tools that read it: per command its measurements (each run's wall, \
            CPU, user and system time, peak memory, perf counters with --counters, exit code) \
            and their summary (count, mean, stddev, median, min, max), over the counted runs \
            (the first run included, warm-ups and rejected runs left out). \
            --export-hyperfine-json is the same. coldtrace's own document, with the first run, \
            faults, block I/O and the cold state, is --export-coldtrace-json (what \
            --export-json wrote in coldtrace 0.1: a notice says so).",
    },
    opt! {
        long: "export-coldtrace-json", short: [], values: ["FILE"], repeat: LastWins,
        subs: RUN_COMPARE, category: Output,
        help: "coldtrace's JSON: the batch document and every run's record, to FILE",
        description: "After the runs, write one JSON document to FILE (replaced atomically \
            if it exists): schema coldtrace.export/1, the batch document (batch.json) under \
            \"batch\" and every run's record (runs.jsonl) under \"runs\"; for a comparison \
            the comparison document, then each command's batch and runs. coldtrace's own \
            schema: hyperfine's has no place for faults, block I/O, the first run or the cold \
            state (--export-json writes that one).",
    },
    opt! {
        long: "export-csv", short: [], values: ["FILE"], repeat: LastWins,
        subs: RUN_COMPARE, category: Output,
        help: "hyperfine's summary CSV (a row per command), to FILE",
        description: "After the runs, write hyperfine 2.0's summary CSV to FILE: one row per \
            command, its wall time and peak memory as time_wall_clock_unit, _mean, _stddev, \
            _median, _min, _max (seconds) and the same for memory_peak_resident (bytes), over \
            the counted runs, then parameter_NAME per scanned parameter. Every run's every \
            number: --export-csv-runs.",
    },
    opt! {
        long: "export-csv-runs", short: [], values: ["FILE"], repeat: LastWins,
        subs: RUN_COMPARE, category: Output,
        help: "one row per run, every number of the record, to FILE",
        description: "After the runs, write a CSV file: one row per recorded run (warm-ups and \
            rejected runs included, marked by role and counted), one column per number of the \
            record, headed by its place in it (rusage.user_us); a column no run has a value \
            in is left out, an absent value is an empty cell.",
    },
    opt! {
        long: "export-markdown", short: [], values: ["FILE"], repeat: LastWins,
        subs: RUN_COMPARE, category: Output,
        help: "hyperfine's Markdown table (wall time), to FILE",
        description: "After the runs, write hyperfine 2.0's Markdown table to FILE: Command, \
            Mean Wall Time (mean ± σ of the counted runs, one unit for the table), Change and \
            Factor against the first command.",
    },
    opt! {
        long: "output", short: [], values: ["WHERE"], choices: ["null", "pipe", "inherit"],
        repeat: LastWins,
        subs: RUN_COMPARE, category: Output,
        help: "command's stdout: null (default), pipe, inherit, FILE",
        description: "Where the command's stdout goes, as in hyperfine: null (/dev/null, the \
            default of a batch), pipe (through a pipe that coldtrace reads and discards: \
            some programs, GNU grep among them, do less work when their output is \
            /dev/null), inherit (the terminal, with stderr: the default of -n 1), or FILE \
            (emptied before every run, so it ends holding the last run's output). Except \
            with inherit, stderr goes to memory, of which the last 64 KiB are kept for a \
            failed run's reason. The same with or without -o: the table's title names it.",
    },
    opt! {
        long: "keep-output", short: [], values: [], repeat: LastWins,
        subs: RUN_COMPARE, category: Output,
        help: "keep every run's stdout and stderr in -o DIR/runs/NNN/",
        description: "Keep every run's stdout and stderr under the batch directory, \
            runs/NNN/stdout and runs/NNN/stderr (made only for a stream the run wrote to). \
            Needs -o DIR; the command writes to in-memory files (not /dev/null), moved to \
            runs/NNN/ as it writes and after it exits. Without it -o keeps the records only.",
    },
    opt! {
        long: "stdin", short: [], values: ["MODE"], choices: ["null", "inherit"],
        repeat: LastWins,
        subs: RUN_COMPARE, category: Output,
        help: "null | inherit | FILE (default: inherit for one run, else null)",
        description: "Where the command's stdin comes from: null (/dev/null), inherit, or a \
            FILE opened afresh for every run. Default: inherit for one run, /dev/null for a \
            batch.",
    },
    opt! {
        long: "metrics", short: [], values: ["LIST"], repeat: LastWins,
        subs: RUN_COMPARE, category: Output,
        help: "the table's rows: all, or a list (default: wall,cpu,max_rss,major_faults,read_bytes)",
        description: "Which metrics the table shows (every one is recorded whatever it \
            shows): by default wall time, CPU time (user + sys), max RSS, major faults and \
            what was read from storage, then the residency of watched files and the perf \
            events counted; `all` every metric that has a value, with the sparkline of the \
            runs and the context; or a comma-separated list in its order, by the names \
            wall, cpu, user, sys, max_rss, minor_faults, major_faults, block_in, block_out, \
            voluntary_switches, involuntary_switches, read_bytes, rchar, runqueue_wait, \
            resident_ratio_before, resident_ratio_after, pgmajfault, psi_io_some, \
            cpu_usage, io_stall_some, memory_stall_some, or a perf event counted with \
            --counters or --events.",
    },
    opt! {
        long: "explain", short: [], values: [], repeat: LastWins,
        subs: &[Sub::Run], category: Output,
        help: "every sentence under the table, not only the verdict",
        description: "Say everything under the table: the first run's verdict in full, with \
            the split of its time, what made it cold, what it paged in, the runs left out of \
            the warm reference, coldtrace's own cost. Without it an ordinary warm batch \
            gets hyperfine's size of answer: the table (rows that are 0 in every run left \
            out) and the verdict in one line; a batch with something to explain (a \
            first-run penalty, a cold action, watched files, a disturbed run) says everything \
            anyway, and so does --metrics all.",
    },
    opt! {
        long: "label", short: [], values: ["TEXT"], repeat: LastWins,
        subs: RUN_COMPARE, category: Output,
        help: "a label stored in every record and shown by `report`",
        description: "A free-text label, stored in every record and in batch.json, shown by \
            `report`.",
    },
    opt! {
        long: "quiet", short: ['q'], values: [], repeat: LastWins,
        subs: RUN_COMPARE, category: Output,
        help: "no table, progress or notices",
        description: "Print nothing but errors (and --json's document): no table, no \
            progress line, no notices.",
    },
    opt! {
        long: "minimal", short: [], values: [], repeat: LastWins,
        subs: RUN_COMPARE, category: Output,
        help: "only wall time, rusage and the floor: skip the /proc reads around runs",
        description: "Record only the wall time, rusage and the floor: skip the /proc reads \
            around each run (system-wide deltas, the child's io/schedstat, boot ID and uptime \
            per run), which cost about 100-200 µs per run.",
    },
    opt! {
        long: "setup", short: ['s'], values: ["CMD"], repeat: LastWins,
        subs: RUN_COMPARE, category: AroundRuns,
        help: "`/bin/sh -c CMD` once per command, before its runs",
        description: "Run `/bin/sh -c CMD` once for each command before its first run \
            (warm-ups included), not measured. In a comparison every command's setup runs \
            before the first round, in command order. If it fails the batch stops and exits 1.",
    },
    opt! {
        long: "prepare", short: ['p'], values: ["CMD"], repeat: Many,
        subs: RUN_COMPARE, category: AroundRuns,
        help: "`/bin/sh -c CMD` before every run, not measured",
        description: "Run `/bin/sh -c CMD` before every run (warm-ups included), outside the \
            measured run; its stdout is discarded, its stderr shown. Give it once for every \
            command or once per command, in order. If it fails the batch stops and exits 1.",
    },
    opt! {
        long: "conclude", short: ['C'], values: ["CMD"], repeat: Many,
        subs: RUN_COMPARE, category: AroundRuns,
        help: "`/bin/sh -c CMD` after every run, not measured (once, or per command)",
        description: "Run `/bin/sh -c CMD` after every run (warm-ups included), after its \
            record is written and outside the measured run; once for every command or once \
            per command. If it fails the batch stops and exits 1.",
    },
    opt! {
        long: "cleanup", short: ['c'], values: ["CMD"], repeat: LastWins,
        subs: RUN_COMPARE, category: AroundRuns,
        help: "`/bin/sh -c CMD` once per command, after its last run",
        description: "Run `/bin/sh -c CMD` once for each command after its last run, not \
            measured (in a comparison, after the last round, in command order); not after an \
            interruption. If it fails, coldtrace says so and exits 1; the records stay.",
    },
    opt! {
        long: "timeout", short: [], values: ["SECONDS"], repeat: LastWins,
        subs: RUN_COMPARE, category: AroundRuns,
        help: "per-run limit: SIGTERM, SIGKILL after --kill-after",
        description: "A limit per run, in seconds (decimals allowed): the command runs in its \
            own process group, which gets SIGTERM when the limit is reached, then SIGKILL after \
            --kill-after. The run is recorded as timed_out and rejected.",
    },
    opt! {
        long: "kill-after", short: [], values: ["SECONDS"], repeat: LastWins,
        subs: RUN_COMPARE, category: AroundRuns,
        help: "grace period after SIGTERM (default 2); alone: after a forwarded stop",
        description: "The grace period between the timeout's SIGTERM and SIGKILL, in seconds \
            (default 2). Given, it also bounds a request to stop: that many seconds after \
            coldtrace passed a SIGTERM, SIGINT, SIGHUP… on to the command, the command's whole \
            tree is killed with SIGKILL (a second request kills it at once, with or without \
            this option).",
    },
    opt! {
        long: "survivors", short: [], values: ["leave|kill|wait"], repeat: LastWins,
        subs: RUN_COMPARE, category: AroundRuns,
        help: "processes left running by a command that exited: leave (default), kill, wait",
        description: "What to do with the processes a command leaves running when it exits \
            (a daemon, a background job): leave them running and name them (the default; \
            later runs leave them alone), kill them with SIGKILL, or wait until they have \
            exited (--timeout bounds the wait). Recorded in each run's survivors. After a \
            --timeout or a second request to stop, the whole tree is killed whatever this \
            says.",
    },
    opt! {
        long: "evict", short: [], values: ["PATH"], repeat: Many,
        subs: RUN_COMPARE, category: ColdState,
        help: "drop the page cache of the files under PATH (no root)",
        description: "Drop the page cache of every regular file under PATH with \
            posix_fadvise(POSIX_FADV_DONTNEED), dirty pages written back first; no root \
            needed. Repeatable. Evicted paths are watched too (see --watch).",
    },
    opt! {
        long: "drop-caches", short: [], values: [], repeat: LastWins,
        subs: RUN_COMPARE, category: ColdState,
        help: "drop the whole page cache, dentries and inodes (root)",
        description: "`sync; echo 3 > /proc/sys/vm/drop_caches`: the whole page cache, \
            dentries and inodes. Needs root; refused before anything runs otherwise.",
    },
    opt! {
        long: "cold-first-only", aliases: ["evict-first-only"], short: [], values: [],
        repeat: LastWins, subs: RUN_COMPARE, category: ColdState,
        help: "evict / drop before the first counted run only",
        description: "Evict (--evict) or drop caches (--drop-caches) before the first counted \
            run only: one cold run, then a warm series.",
    },
    opt! {
        long: "cold-cycles", short: [], values: ["M"], repeat: LastWins,
        subs: RUN_COMPARE, category: ColdState,
        help: "M cycles of { evict / drop; -n K runs }: a cold penalty with an interval",
        description: "Repeat M times: evict (--evict) or drop caches (--drop-caches), then run \
            the command -n K times. Every position after the cold action gets M samples — \
            position 0 cold, 1 lightly cached, the rest warm — summarised per position, with \
            the penalty of position 0 over the warm positions and its 95 % bootstrap interval \
            (M ≥ 5). Needs -n; in a comparison the cycles are interleaved across commands.",
    },
    opt! {
        long: "watch", short: [], values: ["PATH"], repeat: Many,
        subs: RUN_COMPARE, category: ColdState,
        help: "page-cache residency under PATH before/after each run",
        description: "Measure how much of the files under PATH is in the page cache right \
            before and right after every run (cachestat(2), or mmap + mincore(2) before Linux \
            6.5). Repeatable. Where the kernel cannot tell, the value is null with a reason, \
            never a false 100 %.",
    },
    opt! {
        long: "counters", short: [], values: [], repeat: LastWins,
        subs: RUN_COMPARE, category: Counters,
        help: "count the default perf events for every run",
        description: "Count task-clock, page-faults, context-switches, cpu-migrations and, \
            where the CPU exposes them, instructions, cycles, cache-references, cache-misses \
            and branch-misses, for the command and its descendants, from its exec to its exit; \
            nothing coldtrace does is counted. An event that cannot be opened is null with its \
            reason, never 0.",
    },
    opt! {
        long: "events", short: [], values: ["LIST"], repeat: LastWins,
        subs: RUN_COMPARE, category: Counters,
        help: "choose the perf events, comma-separated (implies --counters)",
        description: "Choose the perf events, comma-separated, by the names of `perf list` \
            (implies --counters). Software events, always available: task-clock, cpu-clock, \
            page-faults (faults), minor-faults, major-faults, context-switches (cs), \
            cpu-migrations (migrations), cgroup-switches, alignment-faults, emulation-faults, \
            dummy, bpf-output. Hardware events, where the CPU exposes a PMU: instructions, \
            cycles (cpu-cycles), cache-references, cache-misses, branch-instructions \
            (branches), branch-misses, bus-cycles, stalled-cycles-frontend, \
            stalled-cycles-backend, ref-cycles. Cache events, where the PMU maps them: \
            L1-dcache, L1-icache, LLC, dTLB, iTLB, branch or node, followed by -loads, \
            -load-misses, -stores, -store-misses, -prefetches or -prefetch-misses \
            (L1-dcache-load-misses). An event the machine cannot count (no PMU, \
            perf_event_paranoid) is recorded as null with the reason, never as 0; an unknown \
            name gets the nearest one suggested.",
    },
    opt! {
        long: "json", short: [], values: [], repeat: LastWins,
        subs: &[Sub::Report], category: Format,
        help: "the rows as JSON",
        description: "Print the rows as one JSON array on stdout.",
    },
    opt! {
        long: "markdown", short: [], values: [], repeat: LastWins,
        subs: &[Sub::Report], category: Format,
        help: "the rows as a Markdown table",
        description: "Print the rows as a Markdown table on stdout.",
    },
    opt! {
        long: "svg", short: [], values: ["FILE"], repeat: LastWins,
        subs: &[Sub::Report], category: Format,
        help: "also draw the batches as an SVG picture in FILE",
        description: "Also draw every batch as an SVG picture in FILE (replaced atomically if \
            it exists): the wall time of every run in order, the first run, warm-ups, disturbed \
            and rejected runs marked; the warm runs' distribution; the first-run penalty's \
            parts; and for a comparison or a parameter scan each command's warm runs side by \
            side with the 95% interval of its ratio to the first. Hand-written SVG, nothing \
            loaded from the network.",
    },
    opt! {
        long: "html", short: [], values: ["FILE"], repeat: LastWins,
        subs: &[Sub::Report], category: Format,
        help: "also draw the batches on a self-contained HTML page in FILE",
        description: "As --svg, on an HTML page (FILE replaced atomically if it exists): the \
            same picture inline, one figure per directory, with no script and nothing loaded \
            from the network, so it shows the same offline.",
    },
    opt! {
        long: "json", short: [], values: [], repeat: LastWins,
        subs: &[Sub::Context], category: Format,
        help: "the context block as JSON",
        description: "Print the context block as one JSON document on stdout.",
    },
    opt! {
        long: "format", short: ['f'], values: ["FORMAT"], repeat: LastWins,
        subs: TIME, category: Format,
        help: "use FORMAT (GNU time's % conversions)",
        description: "Use FORMAT instead of GNU time's default format or the TIME variable: \
            GNU time's % conversions and its \\n \\t \\\\ escapes, listed below. -f and -p replace \
            each other (the last one given wins).",
    },
    opt! {
        long: "portability", short: ['p'], values: [], repeat: LastWins,
        subs: TIME, category: Format,
        help: "POSIX output: real %e, user %U, sys %S",
        description: "POSIX 1003.2's three lines, `real %e`, `user %U` and `sys %S`, and never a \
            line about a non-zero exit or a signal.",
    },
    opt! {
        long: "verbose", short: ['v'], values: [], repeat: LastWins,
        subs: TIME, category: Format,
        help: "every field, one per line, with its name",
        description: "GNU time's 23 lines, one per field with its name; wins over -f, -p and \
            TIME, in any order.",
    },
    opt! {
        long: "output-file", aliases: ["output"], short: ['o'], values: ["FILE"],
        repeat: LastWins, subs: TIME, category: Output,
        help: "write the report to FILE instead of stderr",
        description: "Write the report to FILE instead of stderr. FILE is checked before the \
            command runs; if it cannot be written, nothing runs (exit 125), as with GNU time. \
            Unlike GNU time, FILE is not truncated first: the report replaces it atomically once \
            it exists (a temporary file beside it, renamed over it), so a killed run leaves the \
            old contents whole; a symlink to nothing is refused, and the command does not \
            inherit FILE's descriptor.",
    },
    opt! {
        long: "append", short: ['a'], values: [], repeat: LastWins,
        subs: TIME, category: Output,
        help: "with -o, append to FILE instead of overwriting it",
        description: "With -o FILE: append the report to FILE instead of overwriting it.",
    },
    opt! {
        long: "quiet", short: ['q'], values: [], repeat: LastWins,
        subs: TIME, category: Output,
        help: "no line about a non-zero exit or a signal",
        description: "Leave out the line `Command exited with non-zero status N` or `Command \
            terminated by signal N` before the report.",
    },
    opt! {
        long: "dry-run", short: ['n'], values: [], repeat: LastWins,
        subs: CLEANUP, category: General,
        help: "say what would be removed; remove nothing",
        description: "Look at everything cleanup would and say, one line each, what it \
            would remove (and kill) and what it would leave and why, without removing, \
            killing or unmounting anything.",
    },
    opt! {
        long: "cgroup", short: [], values: ["DIR"], repeat: LastWins,
        subs: CLEANUP, category: General,
        help: "look for groups below DIR only (default: every cgroup v2 group)",
        description: "Look for the groups batches left below the cgroup directory DIR only \
            (its whole subtree), instead of the whole cgroup v2 hierarchy.",
    },
    opt! {
        long: "help", short: ['h'], values: [], repeat: LastWins,
        subs: ALL_SUBS, category: General,
        help: "this help (-h: the common options; --help: all)",
        description: "Print the help: -h the common options, one line each, on one 80×24 \
            screen; --help every option with its details.",
    },
    opt! {
        long: "version", short: ['V'], values: [], repeat: LastWins,
        subs: ALL_SUBS, category: General,
        help: "print the version, commit, target and build",
        description: "Print one line and exit: coldtrace's version, the git commit it was \
            built from (unknown when built outside a git checkout), the target it was built \
            for, and whether it is the full or the runner-only build.",
    },
];

/// Where a flag that coldtrace does not take comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// hyperfine 2.0.
    Hyperfine,
    /// GNU time 1.9.
    GnuTime,
}

/// A flag of hyperfine or GNU time that coldtrace does not take, and what to use instead: the
/// parser says it for an unknown option, and the README's migration table lists the same.
#[derive(Debug)]
pub struct Foreign {
    /// The flag as the other tool spells it (`--export-json`, `-f`).
    pub flag: &'static str,
    /// Whose flag it is.
    pub origin: Origin,
    /// coldtrace's equivalent, or why there is none.
    pub instead: &'static str,
}

const EXPORTS: &str = "--export-markdown FILE writes hyperfine's Markdown table; \
                       --export-json and --export-csv FILE its JSON and CSV";

/// Flags of hyperfine 2.0 and GNU time 1.9 that coldtrace does not take.
static FOREIGN: &[Foreign] = &[
    Foreign {
        flag: "--export-asciidoc",
        origin: Origin::Hyperfine,
        instead: EXPORTS,
    },
    Foreign {
        flag: "--export-orgmode",
        origin: Origin::Hyperfine,
        instead: EXPORTS,
    },
    Foreign {
        flag: "--show-output",
        origin: Origin::Hyperfine,
        instead: "--output inherit, or -o DIR --keep-output to keep every run's stdout and \
                  stderr in files",
    },
    Foreign {
        flag: "--input",
        origin: Origin::Hyperfine,
        instead: "--stdin null|inherit|FILE",
    },
    Foreign {
        flag: "--style",
        origin: Origin::Hyperfine,
        instead: "-q for no table, progress or notices; colour follows NO_COLOR and the \
                  terminal",
    },
    Foreign {
        flag: "--time-unit",
        origin: Origin::Hyperfine,
        instead: "units are chosen per value; the JSON is always in the unit its field names \
                  (wall_ns, user_us)",
    },
    Foreign {
        flag: "-u",
        origin: Origin::Hyperfine,
        instead: "units are chosen per value; the JSON is always in the unit its field names",
    },
    Foreign {
        flag: "--sort",
        origin: Origin::Hyperfine,
        instead: "compare lists commands in the order given, each against the first",
    },
    Foreign {
        flag: "--reference",
        origin: Origin::Hyperfine,
        instead: "the first command of `coldtrace compare` is the reference",
    },
    Foreign {
        flag: "--env",
        origin: Origin::Hyperfine,
        instead: "set the variable for coldtrace itself (VAR=x coldtrace run ...): the command \
                  gets coldtrace's environment exactly",
    },
    Foreign {
        flag: "-f",
        origin: Origin::GnuTime,
        instead: "GNU time's -f FORMAT is `coldtrace time -f FORMAT`",
    },
    Foreign {
        flag: "--format",
        origin: Origin::GnuTime,
        instead: "GNU time's --format FORMAT is `coldtrace time -f FORMAT`",
    },
    Foreign {
        flag: "-a",
        origin: Origin::GnuTime,
        instead: "GNU time's -a (append to -o FILE) is `coldtrace time -a -o FILE`",
    },
    Foreign {
        flag: "--append",
        origin: Origin::GnuTime,
        instead: "GNU time's --append is `coldtrace time -a -o FILE`",
    },
    Foreign {
        flag: "-v",
        origin: Origin::GnuTime,
        instead: "GNU time's -v report is `coldtrace time -v`; `run --explain` says all it knows",
    },
    Foreign {
        flag: "--verbose",
        origin: Origin::GnuTime,
        instead: "GNU time's --verbose report is `coldtrace time -v`",
    },
    Foreign {
        flag: "--portability",
        origin: Origin::GnuTime,
        instead: "GNU time's POSIX report is `coldtrace time -p`",
    },
];

/// Every foreign flag (for the README's migration table and its test).
pub fn foreign() -> impl Iterator<Item = &'static Foreign> {
    FOREIGN.iter()
}

/// The foreign flag spelled `flag`, if any.
pub fn find_foreign(flag: &str) -> Option<&'static Foreign> {
    FOREIGN.iter().find(|f| f.flag == flag)
}

/// The text every usage error of a subcommand ends with.
pub(crate) fn see_help(sub: Sub) -> String {
    format!("see `coldtrace {} --help`", subcommand(sub).name)
}

static SUBCOMMANDS: &[SubSpec] = &[
    SubSpec {
        sub: Sub::Run,
        name: "run",
        usage: "run [OPTIONS] -- COMMAND [ARG...]",
        summary: "measure COMMAND: runs chosen by time, or exactly -n N",
        about: "No shell is involved: COMMAND is looked up in PATH and executed directly \
                (\"not found\", 127, and \"not executable\", 126, are told apart before \
                anything runs). Without -n the number of runs is chosen by time, as hyperfine \
                does (at least 10, about 3 s: see --max-time); -n 1 is one run like `time` \
                (the command's exit code, the terminal's stdin and output). One command \
                string with blanks (`run 'sleep 0.1'`, with or without --) is split into words \
                as `compare` splits it, without a shell, and coldtrace says so (shell syntax \
                in it stops before anything runs: -S runs it through sh). Every run is \
                measured through the kernel's own accounting (wait4's rusage for that run \
                alone), timed on CLOCK_MONOTONIC from just before the spawn to the moment its \
                exit is seen.",
        epilogue: "Exit codes: a single run (-n 1) exits with the command's code (128+N if it \
                   died of signal N); a batch exits 0 when every counted run succeeded, 1 when a run \
                   was rejected or --prepare failed; 127 not found, 126 not executable, 125 \
                   coldtrace's own error, 128+N interrupted by signal N (130 for SIGINT).",
        layout: Layout::Separator,
        operands: Operands::Command,
    },
    SubSpec {
        sub: Sub::Compare,
        name: "compare",
        usage: "compare [OPTIONS] [--] 'COMMAND A' 'COMMAND B'...",
        summary: "measure several commands interleaved (A B A B ...)",
        about: "Each COMMAND is one argument, split into words as a shell would (quotes and \
                backslashes; no shell is run: a command with shell syntax - a pipe, \
                redirection, variable or glob outside quotes - stops before anything runs, \
                with the fix, -S or --shell bash). Runs are interleaved \
                round-robin - A B A B ... - so that drift of the machine lands on every command \
                alike. Each command keeps its own first run, records, artifacts and summary \
                under DIR/commands/NN/; DIR/batch.json adds, for every metric, each command's \
                warm median divided by the first command's, with a 95% percentile-bootstrap \
                interval (2000 resamples of each command's warm runs), and a verdict in words \
                only when the interval excludes 1. Every option of `run` applies to each \
                command's runs as it does to a single command's.",
        epilogue: "Exit codes: 0 when every counted run of every command succeeded, 1 when a \
                   run was rejected, 125 coldtrace's own error, 128+N interrupted by signal N.",
        layout: Layout::Free,
        operands: Operands::CommandStrings,
    },
    SubSpec {
        sub: Sub::Report,
        name: "report",
        usage: "report [--json | --markdown] [--svg FILE] [--html FILE] DIR...",
        summary: "compare batch directories (across boots too)",
        about: "One row per batch directory (one per command for a comparison directory). A \
                DIR that is no batch stands for every batch below it (records gathered from \
                many machines); - reads the directories from stdin, one a line. Reads \
                complete, interrupted or truncated batches: a cut last line of runs.jsonl is \
                skipped with a notice. Groups batches by host, boot and kernel.",
        epilogue: "Exit 1: some input passed over (named on stderr); 125: none readable.",
        layout: Layout::Free,
        operands: Operands::Directories,
    },
    SubSpec {
        sub: Sub::Boot,
        name: "boot",
        usage: "boot arm|run|status|disarm [OPTIONS] [-- COMMAND [ARG...]]",
        summary: "a batch at each of the next boots: arm, run, status, disarm",
        about: "`boot arm -o DIR [--boots K] [RUN OPTIONS] -- COMMAND` saves what `run` would \
                execute (argv, working directory, environment, user, options) in a state \
                file and installs a oneshot systemd unit that runs `coldtrace boot run` at \
                each of the next K boots; each boot's batch goes to DIR/boot-NN-<boot id>/. \
                At boot there is no login session: no XDG_RUNTIME_DIR, no D-Bus of a user. \
                `boot status` shows the plan and what ran, `boot disarm` removes the unit and \
                the state from any state, partial or damaged, and says what it removed. A \
                boot whose batch never finished, a failed or missing command, or the word \
                coldtrace.disarm on the kernel's command line disarms, with a line in \
                DIR/boots.jsonl saying why, and never reboots. Without systemd, arming says \
                so and prints the one command an init script must run.",
        epilogue: "Exit codes: 0 done (boot run: not armed, or the batch succeeded); 1 boot \
                   run's batch failed or a guard disarmed; 125 coldtrace's own error.",
        layout: Layout::Separator,
        operands: Operands::Words(BOOT_ACTIONS),
    },
    SubSpec {
        sub: Sub::Context,
        name: "context",
        usage: "context [--json]",
        summary: "this machine's context block and capabilities",
        about: "Kernel, boot ID, uptime, CPU, memory, load, and which measurements are \
                available here (cachestat, PSI, drop_caches permission, task I/O accounting, \
                clear_refs, perf_event_paranoid).",
        epilogue: "",
        layout: Layout::Free,
        operands: Operands::Nothing,
    },
    SubSpec {
        sub: Sub::Time,
        name: "time",
        usage: "time [-f FORMAT] [-o FILE] [-a] [-p] [-v] [-q] COMMAND [ARG...]",
        summary: "a drop-in for GNU time 1.9 (/usr/bin/time)",
        about: "Runs COMMAND once, stdin, stdout and stderr inherited, through the same runner \
                as `coldtrace run`, then writes GNU time 1.9's report to stderr (or -o FILE): \
                its options, TIME variable, default format, -v and -p layouts, % conversions, \
                escapes and exit codes, to the character. Only values differ, where GNU \
                time's are off: times are measured and rounded, not truncated to 10 ms; no \
                forked child's copy-on-write faults are counted; max RSS is not inflated by \
                the runner. Options end at the first word that is not one, so `coldtrace time \
                ls -l` times `ls -l`.",
        epilogue: "Conversions: %e %E elapsed time (seconds, [h:]m:ss), %U %S user and system \
                   CPU seconds, %P CPU share, %M max RSS (KiB), %F %R major and minor page \
                   faults, %w %c voluntary and involuntary context switches, %I %O file system \
                   inputs and outputs (512-byte blocks), %x exit status, %C the command, %Z \
                   page size, %% a percent sign; %t %K %D %p %X %W %s %r %k print 0 (Linux \
                   never fills them). Exit codes: the command's; 128+N if it died of signal \
                   N; 127 not found and 126 not executable, after the report, as GNU time; \
                   125 coldtrace's own error.",
        layout: Layout::CommandAfterOptions,
        operands: Operands::Command,
    },
    SubSpec {
        sub: Sub::Man,
        name: "man",
        usage: "man",
        summary: "print the manual page (roff): man -l <(coldtrace man)",
        about: "Prints coldtrace(1) in roff, generated from the same option table as every \
                --help, so the two cannot disagree. Read it with `man -l <(coldtrace man)`, or \
                install it with `coldtrace man > /usr/local/share/man/man1/coldtrace.1`.",
        epilogue: "",
        layout: Layout::Free,
        operands: Operands::Nothing,
    },
    SubSpec {
        sub: Sub::Completions,
        name: "completions",
        usage: "completions bash|zsh|fish",
        summary: "print a shell's completion script",
        about: "Prints the completion script of a shell, generated from the option table: \
                subcommands, each one's options, the values of those that take one of a few \
                words, directories for DIR and files for FILE or PATH. Load it with \
                `source <(coldtrace completions bash)`, `source <(coldtrace completions zsh)` \
                or `coldtrace completions fish | source`.",
        epilogue: "",
        layout: Layout::Free,
        operands: Operands::Words(SHELLS),
    },
    SubSpec {
        sub: Sub::Cleanup,
        name: "cleanup",
        usage: "cleanup [--dry-run] [--cgroup DIR]",
        summary: "remove what coldtrace left behind, and say what",
        about: "Removes what coldtrace left outside -o and says, a line each, what it \
                removed or left and why: groups (cgroup coldtrace-PID-START) of batches \
                killed mid-batch, their processes killed (only if marked as coldtrace's, \
                this user's, their batch ended); the tracefs mount a batch recorded making; \
                the state directory, and with it what the next batch compares with (the \
                first batch since boot, what dropped the page cache since the last one). An \
                armed `coldtrace boot` plan is said, never disarmed. What needs root is said.",
        epilogue: "Exit codes: 0 done (what is not coldtrace's is left and said); 1 \
                   something coldtrace left could not be removed (said, with why); 125 \
                   coldtrace's own error.",
        layout: Layout::Free,
        operands: Operands::Nothing,
    },
];

/// The actions of `coldtrace boot`.
pub const BOOT_ACTIONS: &[&str] = &["arm", "run", "status", "disarm"];

/// The shells `coldtrace completions` writes for.
pub const SHELLS: &[&str] = &["bash", "zsh", "fish"];

/// What coldtrace is, in one paragraph (the top-level help and the man page's description).
pub const ABOUT: &str = "Every run is measured through the kernel's own accounting (wait4's \
                         rusage for that run alone), timed on CLOCK_MONOTONIC from just before \
                         the spawn to the moment its exit is seen.";

/// Every option of every subcommand, in table order (for the man page and completions).
pub fn options() -> impl Iterator<Item = &'static OptSpec> {
    OPTIONS.iter()
}

/// The options `sub` takes, in table order.
pub fn options_of(sub: Sub) -> impl Iterator<Item = &'static OptSpec> {
    OPTIONS.iter().filter(move |o| o.taken_by(sub))
}

/// Every subcommand, in the order of the top-level help.
pub fn subcommands() -> impl Iterator<Item = &'static SubSpec> {
    SUBCOMMANDS.iter()
}

/// The declaration of `sub`.
pub fn subcommand(sub: Sub) -> &'static SubSpec {
    SUBCOMMANDS
        .iter()
        .find(|s| s.sub == sub)
        .unwrap_or(&SUBCOMMANDS[0])
}

/// The option `long` (dashes included) of `sub`, by its long name or an alias.
pub fn find_long(sub: Sub, long: &str) -> Option<&'static OptSpec> {
    options_of(sub).find(|o| o.long == long || o.aliases.contains(&long))
}

/// The option `-c` of `sub` (a short name, or one that implies a value).
pub fn find_short(sub: Sub, c: char) -> Option<&'static OptSpec> {
    options_of(sub).find(|o| o.shorts.contains(&c) || o.implied.iter().any(|(i, _)| *i == c))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_subcommand_takes_two_options_of_the_same_name() {
        for sub in subcommands() {
            let mut names: Vec<String> = Vec::new();
            for o in options_of(sub.sub) {
                let own = o.shorts.iter().map(|c| format!("-{c}")).chain(
                    std::iter::once(&o.long)
                        .chain(o.aliases)
                        .map(|l| l.to_string()),
                );
                for name in own {
                    assert!(!names.contains(&name), "{} takes {name} twice", sub.name);
                    names.push(name);
                }
            }
        }
    }

    #[test]
    fn every_option_is_taken_by_a_subcommand_and_says_something() {
        for o in options() {
            assert!(!o.subcommands.is_empty(), "{} is taken by nothing", o.long);
            assert!(
                !o.help.is_empty() && !o.description.is_empty(),
                "{}",
                o.long
            );
            assert!(
                !o.help.contains('\n'),
                "{}: the one-line help has a newline",
                o.long
            );
            assert!(
                o.long.len() > 3 && o.long.starts_with("--") && !o.long.contains('='),
                "{}",
                o.long
            );
        }
    }

    #[test]
    fn metrics_names_every_metric_it_takes_and_no_other() {
        use crate::record::metrics::{short_name, METRICS};
        let o = find_long(Sub::Run, "--metrics").expect("--metrics");
        let list = o
            .description
            .split("by the names ")
            .nth(1)
            .and_then(|rest| rest.split(", or a perf event").next())
            .expect("the names in the description");
        let mut said: Vec<&str> = list.split(", ").map(str::trim).collect();
        let mut names: Vec<&str> = METRICS.iter().map(|m| short_name(m.name)).collect();
        said.sort_unstable();
        names.sort_unstable();
        assert_eq!(said, names, "{}", o.description);
        let default = o.help.split("default: ").nth(1).expect("the default");
        let compact: Vec<&str> = crate::record::metrics::COMPACT
            .iter()
            .map(|n| short_name(n))
            .collect();
        assert_eq!(default.trim_end_matches(')'), compact.join(","));
    }

    #[test]
    fn lookups_find_longs_aliases_and_shorts_of_the_right_subcommand() {
        assert_eq!(
            find_long(Sub::Run, "--runs").map(|o| o.long),
            Some("--runs")
        );
        assert_eq!(
            find_long(Sub::Run, "--evict-first-only").map(|o| o.long),
            Some("--cold-first-only")
        );
        assert_eq!(find_short(Sub::Run, 'n').map(|o| o.long), Some("--runs"));
        assert!(find_long(Sub::Run, "--markdown").is_none());
        assert!(find_long(Sub::Report, "--markdown").is_some());
        let report_json = find_long(Sub::Report, "--json").unwrap();
        assert!(report_json.taken_by(Sub::Report) && !report_json.taken_by(Sub::Run));
        assert_eq!(
            find_short(Sub::Run, 'n').unwrap().synopsis(),
            "-n, -r, --runs N"
        );
        assert_eq!(find_short(Sub::Run, 'S').map(|o| o.long), Some("--shell"));
        assert_eq!(
            find_short(Sub::Run, 'N').unwrap().synopsis(),
            "-S, -N, --shell SHELL"
        );
    }
}
