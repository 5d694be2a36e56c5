//! The help texts of coldtrace and its subcommands.
//! Text only; what the options do is decided in the subcommands' parsers.
#![forbid(unsafe_code)]

/// The top-level help.
pub const HELP: &str = "\
coldtrace — run a command and record exactly how it ran

Usage:
  coldtrace run [OPTIONS] -- COMMAND [ARG...]   measure COMMAND (see `coldtrace run --help`)
  coldtrace compare [OPTIONS] 'CMD A' 'CMD B'…  measure commands interleaved (A B A B …)
  coldtrace report [--json|--markdown] DIR...   compare batch directories
  coldtrace context [--json]                    print this machine's context block
  coldtrace --help | --version

Every run is measured through the kernel's own accounting (wait4's rusage for that run alone),
timed on CLOCK_MONOTONIC from just before the spawn to the moment its exit is seen.

Exit codes (GNU time's conventions):
  single run   the command's exit code; 128+N if it died of signal N
  batch        0 every counted run succeeded; 1 a run was rejected (or --prepare failed)
  127 command not found   126 found but not executable   125 coldtrace's own error
  130 interrupted by SIGINT (128+N for signal N)
";

/// `coldtrace run --help`.
pub const RUN_HELP: &str = "\
coldtrace run — measure a command, once or as a batch

Usage: coldtrace run [OPTIONS] -- COMMAND [ARG...]

No shell is involved: COMMAND is looked up in PATH and executed directly.

Options:
  -n, --runs N            counted runs (default 1)
      --warmup N          runs before the counted ones, recorded but never counted.
                          Warm-ups destroy the cold first run: the first counted run
                          is then warm too.
  -o, --out DIR           batch directory (must not exist or be empty): runs.jsonl,
                          runs/NNN/{stdout,stderr}, batch.json
      --json              print the record (one run) or the batch summary as JSON on stdout
                          (a single run inherits stdout: add --output null to keep them apart)
      --output MODE       child's stdout/stderr: inherit | null | file
                          (default: inherit for one run without --out, file with --out,
                          null for a batch without --out)
      --stdin MODE        null | inherit | FILE (default: inherit for one run, else null)
      --timeout SECONDS   per-run limit: SIGTERM, then SIGKILL after --kill-after
      --kill-after SECONDS  grace period after SIGTERM (default 2)
      --prepare CMD       run `/bin/sh -c CMD` before every run, not measured;
                          if it fails the batch stops
      --ignore-failure    count failed runs too (they are marked failed)
      --label TEXT        stored in every record and shown by `report`
  -q, --quiet             no table, progress or notices on stderr
      --minimal           only wall time, rusage and the floor: skip the /proc reads around
                          each run (system-wide deltas, the child's io/schedstat, boot ID
                          and uptime per run), which cost ~100 µs per run

Cold state (before every counted run, or the first only):
      --evict PATH        drop the page cache of every file under PATH (repeatable;
                          no root needed; PATH is watched too)
      --drop-caches       sync and drop the whole page cache, dentries and inodes (root)
      --cold-first-only   evict / drop before the first counted run only
      --watch PATH        measure page-cache residency of files under PATH before and
                          after every run (repeatable)

Kernel counters (perf_event_open, counted from the command's exec to its exit, its threads
and descendants included; nothing coldtrace does before the exec is counted):
      --counters          task-clock, page-faults, context-switches, cpu-migrations, and the
                          hardware events instructions, cycles, cache-references,
                          cache-misses, branch-misses where the CPU exposes them
      --events LIST       choose them, comma-separated (implies --counters)

Exit codes: a single run exits with the command's code (128+N for signal N);
a batch exits 0 when every counted run succeeded, 1 when any was rejected;
127 not found, 126 not executable, 125 coldtrace's own error, 130 interrupted.
";

/// `coldtrace compare --help`.
pub const COMPARE_HELP: &str = "\
coldtrace compare — several commands in one batch, interleaved

Usage: coldtrace compare [OPTIONS] [--] 'COMMAND A' 'COMMAND B' ...

Each COMMAND is one argument, split into words as a shell would (quotes and backslashes;
no shell is run, so no variables or globs). Runs are interleaved round-robin — A B A B … —
so that drift of the machine lands on every command alike; --shuffle SEED randomises the
order within each round (seeded, reproducible). Each command keeps its own first run and
its own records, artifacts and summary under DIR/commands/NN/; DIR/batch.json adds, for
every metric, each command's warm median divided by the first command's, with a 95%
bootstrap confidence interval (percentile method, 2000 resamples of each command's warm
runs), and a verdict in words only when the interval excludes 1.

Options: every option of `coldtrace run` (-n, --warmup, -o, --json, --output, --stdin,
--timeout, --kill-after, --prepare, --ignore-failure, --label, -q, --evict, --drop-caches,
--cold-first-only, --watch) applies to each command's runs as it does to a single
command's; plus
      --shuffle SEED      random order within each round, from SEED (a whole number)
";

/// `coldtrace report --help`.
pub const REPORT_HELP: &str = "\
coldtrace report — one row per batch directory

Usage: coldtrace report [--json | --markdown] DIR...

Reads complete, interrupted or truncated batches (a cut last line of runs.jsonl is
skipped with a notice). Flags the first batch on each boot and kernel changes.
";

/// `coldtrace context --help`.
pub const CONTEXT_HELP: &str = "\
coldtrace context — the machine's context block

Usage: coldtrace context [--json]

Kernel, boot ID, uptime, CPU, memory, load, and which measurements are available here
(cachestat, PSI, drop_caches permission, task I/O accounting, clear_refs).
";
