#!/usr/bin/env bash
# What a batch's cgroup costs per run: the same batch with and without one, in alternating
# rounds. Without one = in a private mount namespace where the cgroup2 file system is read-only
# (the batch records why it has none), everything else equal. Needs root (unshare, mount).
# Prints per round: the median measured wall time of a run (inside the timed window: the
# CLONE_INTO_CGROUP spawn), and per run the batch's elapsed time and the CPU time of coldtrace
# and its children (wait4's rusage: outside the window too, with the reads of cpu.stat and the
# PSI files after each run).
#
# Usage: tests/bench/cgroup_cost.sh [ROUNDS] [RUNS] [COMMAND...]   (defaults: 5 rounds, 500 runs, true)
set -euo pipefail
cd "$(dirname "$0")/../.."
ROUNDS=${1:-5}
RUNS=${2:-500}
shift 2 2>/dev/null || shift $#
[ $# -gt 0 ] || set -- true
CT=${CARGO_TARGET_DIR:-$PWD/target}/x86_64-unknown-linux-musl/release/coldtrace
[ -x "$CT" ] || { echo "build first: cargo build --release" >&2; exit 1; }
WORK=$(mktemp -d /tmp/coldtrace-cgroup-cost.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
RO='for m in $(awk '"'"'$9 == "cgroup2" {print $5}'"'"' /proc/self/mountinfo); do mount -o remount,bind,ro $m; done'

one() { # $1: with|without; prints the figures of one batch
  local mode=$1 out=$WORK/$1
  shift
  rm -rf "$out"
  local run=("$CT" run -q -n "$RUNS" -o "$out" -- "$@")
  [ "$mode" = with ] || run=(unshare -m --propagation private /bin/sh -c "$RO; exec \"\$@\"" sh "${run[@]}")
  python3 - "$out" "$RUNS" "${run[@]}" <<'PY'
import json, os, statistics, subprocess, sys, time
out, runs, argv = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
t0 = time.monotonic()
p = subprocess.Popen(argv, stderr=subprocess.DEVNULL)
_, status, ru = os.wait4(p.pid, 0)
elapsed = time.monotonic() - t0
walls = [json.loads(l)["wall_ns"] for l in open(out + "/runs.jsonl")]
cg = json.load(open(out + "/batch.json"))["context"]["cgroup"]
cpu = ru.ru_utime + ru.ru_stime
print(f"{statistics.median(walls)/1e3:9.1f} {elapsed*1e6/runs:9.1f} {cpu*1e6/runs:9.1f}  "
      f"{'cgroup' if cg['path'] else 'none: ' + cg['unavailable_reason'][:40]}")
PY
}

echo "date: $(date -u '+%Y-%m-%d %H:%M UTC'); $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); $(nproc) CPUs; kernel $(uname -r)"
echo "command: $*; $RUNS runs per batch, $ROUNDS rounds"
printf '%-8s %-7s %9s %9s %9s\n' round batch 'wall µs' 'elap µs' 'CPU µs'
for r in $(seq 1 "$ROUNDS"); do
  for mode in with without; do
    printf '%-8s %-7s ' "$r" "$mode"
    one "$mode" "$@"
  done
done
