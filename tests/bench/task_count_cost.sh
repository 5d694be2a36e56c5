#!/usr/bin/env bash
# What counting an untraced tree's tasks (perf task records) costs per run: ROUNDS alternating
# batches of RUNS spawns of /bin/true by two builds, BEFORE (without the count) and AFTER, with
# COLDTRACE_TREE=off as root and as the user nobody; each one line: coldtrace's own CPU per run
# (perf stat --no-inherit task-clock: coldtrace alone), its spawner's CPU per run (batch.json
# spawner.cpu_ns), the command's median CPU (rusage user + sys), and the tasks recorded; then
# per side the median and range over the rounds and the median of the paired differences.
#
# Usage: tests/bench/task_count_cost.sh BEFORE AFTER [ROUNDS] [RUNS]   (defaults: 5, 2000)
# Needs root (for setpriv and the nobody batches), perf and python3.
set -euo pipefail
BEFORE=$1 AFTER=$2 ROUNDS=${3:-5} N=${4:-2000}
W=$(mktemp -d /tmp/coldtrace-task-cost.XXXXXX)
trap 'rm -rf "$W"' EXIT
chmod 777 "$W"
cp "$BEFORE" "$W/before"; cp "$AFTER" "$W/after"; chmod 755 "$W/before" "$W/after"
date -u; uptime; grep -m1 'model name' /proc/cpuinfo; uname -r
one() { # BUILD MODE
  local out=$W/out-$1-$2 as=()
  [ "$2" = nobody ] && as=(setpriv --reuid=65534 --regid=65534 --clear-groups --)
  perf stat -x, --no-inherit -e task-clock -o "$W/perf" -- "${as[@]}" \
    env COLDTRACE_TREE=off COLDTRACE_STATE_DIR= "$W/$1" run -n "$N" -q -o "$out" -- /bin/true
  python3 - "$W/perf" "$out" "$N" "$1" "$2" <<'PY' | tee -a "$W/lines"
import json, statistics, sys
perf, out, n, build, mode = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]
own = [float(l.split(',')[0]) for l in open(perf) if 'task-clock' in l][0] * 1000 / n
spawner = ((json.load(open(out + '/batch.json')).get('spawner') or {}).get('cpu_ns') or 0) / 1e3 / n
runs = [json.loads(l) for l in open(out + '/runs.jsonl')]
cmd = statistics.median(r['rusage']['user_us'] + r['rusage']['sys_us'] for r in runs)
tasks = sorted({str((r.get('tree') or {}).get('tasks')) for r in runs})
print(f"{build} {mode} {own:.1f} {spawner:.1f} {cmd:.0f} tasks={','.join(tasks)}")
PY
  rm -rf "$out"
}
for ((r = 1; r <= ROUNDS; r++)); do
  for mode in off nobody; do one before $mode; one after $mode; done
done
python3 - "$W/lines" <<'PY'
import statistics as st, sys
rows = [l.split() for l in open(sys.argv[1])]
names = ['own CPU µs/run', 'spawner CPU µs/run', 'command CPU µs (median)']
for mode in ['off', 'nobody']:
    for k, name in enumerate(names):
        side = {b: [float(r[2 + k]) for r in rows if r[0] == b and r[1] == mode] for b in ['before', 'after']}
        diff = [a - b for a, b in zip(side['after'], side['before'])]
        fmt = lambda v: f"{st.median(v):.1f} ({min(v):.1f}–{max(v):.1f})"
        print(f"{mode} | {name} | {fmt(side['before'])} | {fmt(side['after'])} | {st.median(diff):+.1f} ({min(diff):+.1f} to {max(diff):+.1f})")
PY
