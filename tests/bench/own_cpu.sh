#!/usr/bin/env bash
# coldtrace's own CPU per run, side by side with hyperfine and a bare C loop, in one script run.
#
# Each contender runs N times `/bin/true`; its own CPU is `perf stat --no-inherit -e task-clock`
# on its process (the measured /bin/true children are not counted). coldtrace's spawner is a
# child too, so --no-inherit leaves it out: its CPU (user + system from its wait4, recorded in
# the batch document as `spawner.cpu_ns`) is added to coldtrace's, and printed apart.
# ROUNDS rounds, interleaved (floor, hyperfine, coldtrace, coldtrace with COLDTRACE_TREE=off,
# coldtrace --minimal, …); the table gives each contender's median and range over the rounds,
# in µs per run. As root the default traces the process tree: the row with the tracing off
# and the paired difference give the tracing's own share.
#
# Usage: tests/bench/own_cpu.sh            (from anywhere; prints Markdown on stdout)
# Environment: N (runs per contender and round, default 2000), ROUNDS (default 5), CT (a
#   coldtrace binary; default: `cargo build --release`), HYPERFINE (default: hyperfine on PATH,
#   else /tmp/hf/bin/hyperfine; hyperfine 2.0 builds with
#   `cargo +nightly install hyperfine@2.0.0 --locked --root /tmp/hf`), BASE (optional: another
#   coldtrace build, e.g. main's before a change; its default run joins every round, so the
#   two builds are compared side by side under the same load).
# Needs: perf (perf stat must work here), cc, python3.
set -euo pipefail

N=${N:-2000}
ROUNDS=${ROUNDS:-5}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
log() { printf 'own_cpu: %s\n' "$*" >&2; }
have() { command -v "$1" >/dev/null 2>&1; }

for tool in perf cc python3; do have "$tool" || { log "needs $tool"; exit 2; }; done
perf stat -x, -e task-clock true >/dev/null 2>&1 || { log "perf stat does not work here"; exit 2; }
HYPERFINE=${HYPERFINE:-}
if [ -z "$HYPERFINE" ]; then
  if have hyperfine; then HYPERFINE=$(command -v hyperfine)
  elif [ -x /tmp/hf/bin/hyperfine ]; then HYPERFINE=/tmp/hf/bin/hyperfine; fi
fi
if [ -z "${CT:-}" ]; then
  (cd "$ROOT" && cargo build --release --locked --quiet)
  CT=$(ls "${CARGO_TARGET_DIR:-$ROOT/target}"/*/release/coldtrace | head -1)
fi
cc -O2 -o "$WORK/floor" "$ROOT/tests/bench/floor.c"

# task-clock of the command's own process, µs per run.
own_us() {
  perf stat -x, --no-inherit -e task-clock -o "$WORK/perf" "$@" >"$WORK/stdout" 2>/dev/null
  awk -F, -v n="$N" '/task-clock/ { printf "%.2f", $1 * 1000 / n }' "$WORK/perf"
}
# The spawner's CPU from the batch document coldtrace printed, µs per run (0 without one).
spawner_us() {
  python3 - "$WORK/stdout" "$N" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
s = doc.get("spawner") or {}
print("%.2f" % ((s.get("cpu_ns") or 0) / 1000 / int(sys.argv[2])))
PY
}

declare -A SERIES
add() { SERIES[$1]+="$2 "; }
for ((r = 1; r <= ROUNDS; r++)); do
  log "round $r of $ROUNDS"
  add floor "$(own_us "$WORK/floor" "$N" /bin/true)"
  if [ -n "$HYPERFINE" ]; then
    add hyperfine "$(own_us "$HYPERFINE" -N --runs "$N" --warmup 0 --output null --style none /bin/true)"
  fi
  own=$(own_us "$CT" run -n "$N" -q --json -- /bin/true)
  sp=$(spawner_us)
  CGROUP=$(python3 -c 'import json, sys; c = (json.load(open(sys.argv[1])).get("context") or {}).get("cgroup") or {}; print("on" if c.get("path") else "off")' "$WORK/stdout")
  add ct_own "$own"; add ct_spawner "$sp"; both=$(awk -v a="$own" -v b="$sp" 'BEGIN { printf "%.2f", a + b }'); add ct "$both"
  own=$(own_us env COLDTRACE_TREE=off "$CT" run -n "$N" -q --json -- /bin/true)
  sp=$(spawner_us)
  off=$(awk -v a="$own" -v b="$sp" 'BEGIN { printf "%.2f", a + b }')
  add ct_off "$off"; add ct_tree "$(awk -v a="$both" -v b="$off" 'BEGIN { printf "%.2f", a - b }')"
  own=$(own_us "$CT" run -n "$N" -q --json --minimal -- /bin/true)
  add ctmin "$own"
  if [ -n "${BASE:-}" ]; then
    own=$(own_us "$BASE" run -n "$N" -q --json -- /bin/true)
    sp=$(spawner_us)
    add base_own "$own"; add base_spawner "$sp"
    add base "$(awk -v a="$own" -v b="$sp" 'BEGIN { printf "%.2f", a + b }')"
  fi
done

stat() {
  tr ' ' '\n' <<<"${SERIES[$1]:-}" | awk 'NF' | sort -g | awk '
    { v[NR] = $1 } END {
      if (NR == 0) { print "n/a"; exit }
      m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
      printf "%.1f (%.1f–%.1f)", m, v[1], v[NR] }'
}
median_of() { stat "$1" | cut -d' ' -f1; }
ratio() { awk -v a="$(median_of "$1")" -v b="$(median_of hyperfine)" 'BEGIN { if (b > 0 && a != "n/a") printf "%.2f×", a / b; else print "—" }'; }

echo "## coldtrace's own CPU per run (µs; median and range of $ROUNDS interleaved rounds)"
echo
echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC'); kernel $(uname -r); $(nproc) CPUs;" \
  "$(awk -F': ' '/model name/{print $2; exit}' /proc/cpuinfo)"
echo "- load average at start of the table: $(cut -d' ' -f1-3 /proc/loadavg) (other work on the machine disturbs these figures)"
echo "- coldtrace: $CT ($(wc -c <"$CT") bytes, $("$CT" --version | head -1))"
if [ -n "$HYPERFINE" ]; then echo "- hyperfine: $("$HYPERFINE" --version) ($HYPERFINE)"; else echo "- hyperfine: not found"; fi
echo "- command: N=$N ROUNDS=$ROUNDS tests/bench/own_cpu.sh; each: \`perf stat -x, --no-inherit -e task-clock\` over $N runs of /bin/true"
echo
echo "| runner | own CPU per run | ÷ hyperfine |"
echo "|---|---:|---:|"
echo "| C vfork floor loop (\`tests/bench/floor.c\`) | $(stat floor) | $(ratio floor) |"
echo "| hyperfine \`-N --runs $N\` | $(stat hyperfine) | 1.00× |"
echo "| coldtrace \`run\` (default): itself + its spawner | $(stat ct) | $(ratio ct) |"
echo "| … of which coldtrace's process | $(stat ct_own) | |"
echo "| … of which the spawner | $(stat ct_spawner) | |"
echo "| coldtrace \`run\` with \`COLDTRACE_TREE=off\`: itself + its spawner | $(stat ct_off) | $(ratio ct_off) |"
echo "| … the tree's tracing (default − off, paired by round) | $(stat ct_tree) | |"
echo "| coldtrace \`run --minimal\` (no spawner) | $(stat ctmin) | $(ratio ctmin) |"
if [ -n "${BASE:-}" ]; then
  echo "| BASE \`run\` (default; $BASE): itself + its spawner | $(stat base) | $(ratio base) |"
  echo "| … of which its process | $(stat base_own) | |"
  echo "| … of which its spawner | $(stat base_spawner) | |"
fi
echo
if [ "${CGROUP:-off}" = on ]; then
  echo "The default run made its per-batch cgroup (each run born in a leaf of it): its cost is in"
  echo "coldtrace's and the spawner's figures (the spawner's clone puts each child in the leaf);"
  echo "tests/bench/cgroup_cost.sh measures its share."
else
  echo "No per-batch cgroup was made here: no share of its is counted."
fi
if [ "$(id -u)" = 0 ]; then
  echo "As root the default run traces the process tree (the scheduler's tracepoints): its share"
  echo "is the paired difference above."
else
  echo "Not root: the default run could not trace the process tree (it needs root or CAP_PERFMON)."
fi
