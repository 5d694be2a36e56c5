#!/usr/bin/env bash
# What tracing the whole process tree costs coldtrace per run: ROUNDS alternating pairs of
# batches of RUNS spawns of /bin/true, traced (as root) and with COLDTRACE_TREE=off, each one
# line: coldtrace's own CPU per run (perf stat --no-inherit task-clock: coldtrace alone, not its
# children), the runs' median wall time, the children's CPU per run (rusage), the scheduler
# records read per run, and how many runs got the tree's states.
#
# Usage: tests/bench/tree_cost.sh [BINARY] [ROUNDS] [RUNS]   (defaults: the release build, 5, 2000)
# Needs root (without it both sides are untraced) and perf.
set -euo pipefail
cd "$(dirname "$0")/../.."
CT=${1:-${CARGO_TARGET_DIR:-target}/x86_64-unknown-linux-musl/release/coldtrace}
ROUNDS=${2:-5}
N=${3:-2000}
[ -x "$CT" ] || { echo "tree_cost.sh: build it first: cargo build --release ($CT)" >&2; exit 1; }
W=$(mktemp -d /tmp/coldtrace-tree-cost.XXXXXX)
trap 'rm -rf "$W"' EXIT
date -u; uptime; grep -m1 'model name' /proc/cpuinfo; uname -r
one() { # MODE ROUND
  local mode=$1 r=$2 dir=$W/$1-$2 env=()
  [ "$mode" = off ] && env=(env COLDTRACE_TREE=off)
  perf stat -x, --no-inherit -e task-clock -o "$W/perf-$mode-$r" \
    "${env[@]}" "$CT" run -q -n "$N" -o "$dir" -- /bin/true
  python3 - "$dir" "$W/perf-$mode-$r" "$mode" <<'PY'
import json, sys, statistics
d, perf, mode = sys.argv[1:]
runs = [json.loads(l) for l in open(d + '/runs.jsonl')]
n = len(runs)
wall = statistics.median(r['wall_ns'] for r in runs) / 1e3
child = sum(r['rusage']['user_us'] + r['rusage']['sys_us'] for r in runs) / n
tree = [r['tree'] for r in runs if r.get('tree')]
records = [t['records'] for t in tree if t.get('records') is not None]
traced = sum(1 for t in tree if t.get('on_cpu_ns') is not None)
clock = next(float(p[0]) for p in (l.strip().split(',') for l in open(perf))
             if len(p) > 2 and p[2] == 'task-clock')
print(f"{mode:6} runs={n} own_cpu_us_per_run={clock * 1e3 / n:.1f} "
      f"median_wall_us={wall:.1f} child_cpu_us_per_run={child:.1f} "
      f"records_per_run={(statistics.mean(records) if records else 0):.1f} traced_runs={traced}")
PY
}
for r in $(seq 1 "$ROUNDS"); do one traced "$r"; one off "$r"; done
uptime
