#!/usr/bin/env bash
# coldtrace's own CPU per run beside hyperfine's, measured without perf, so that it can be
# measured as an unprivileged user too (perf_event_paranoid 2 leaves an unprivileged
# `perf stat` only the user-space part of task-clock, and most of a runner's CPU is the
# kernel's). Each contender runs N times /bin/true under self_cpu (tests/bench/self_cpu.c,
# built here): its own CPU is its main thread's time on a CPU from its zombie's
# /proc/PID/schedstat, which leaves out every child it ran (both runners are single-threaded).
# coldtrace's spawner is a child, and its CPU is coldtrace's own work: it is added from the
# batch document (spawner.cpu_ns, from the spawner's wait4), and printed apart.
# ROUNDS interleaved rounds, median and range, µs per run; the ratios are of medians.
#
# Until 2026-12-06 05:00 UTC the script took user + system from rusage less the children's
# CPU, and for hyperfine the children's CPU was what coldtrace had measured of the same
# command: under load the command's CPU moved more than hyperfine's own (hyperfine's figure
# ranged 32-222 µs in one set of rounds), so the ratios did not carry.
#
# Usage: tests/bench/own_cpu_rusage.sh   (prints Markdown; as root it measures again as nobody)
# Environment: N (default 2000), ROUNDS (default 5), CT (default: this checkout's release
#   build), HYPERFINE (default /tmp/hf/bin/hyperfine: cargo +nightly install
#   hyperfine@2.0.0 --locked --root /tmp/hf), BASE (another coldtrace build beside it).
set -euo pipefail
N=${N:-2000}
ROUNDS=${ROUNDS:-5}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
CT=${CT:-$ROOT/target/x86_64-unknown-linux-musl/release/coldtrace}
HYPERFINE=${HYPERFINE:-/tmp/hf/bin/hyperfine}
WORK=$(mktemp -d)
chmod 0777 "$WORK"
trap 'rm -rf "$WORK"' EXIT
[ -x "$CT" ] && [ -x "$HYPERFINE" ] || { echo "needs $CT and $HYPERFINE" >&2; exit 2; }

cc -O2 -o "$WORK/self_cpu" "$ROOT/tests/bench/self_cpu.c"

# self_us COMMAND…: the command's own CPU (its main thread, no children), µs; its standard
# output in $WORK/out.
self_us() {
    rm -f "$WORK/self"
    $AS "$WORK/self_cpu" "$WORK/self" "$@" > "$WORK/out" 2>/dev/null
    awk '{ printf "%.1f", $1 / 1000 }' "$WORK/self"
}

# coldtrace BIN ARGS…: "own spawner" µs per run.
coldtrace() {
    bin=$1
    shift
    own=$(self_us "$bin" run -n "$N" -q --json "$@" -- /bin/true)
    python3 - "$WORK/out" "$N" "$own" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1])); n = int(sys.argv[2]); own = float(sys.argv[3])
spawner = ((doc.get("spawner") or {}).get("cpu_ns") or 0) / 1000
print("%.1f %.1f" % (own / n, spawner / n))
PY
}

median_range() {
    sort -n | awk '{ a[NR] = $1 } END { printf "%.1f (%.1f–%.1f)", a[int((NR + 1) / 2)], a[1], a[NR] }'
}

bench() {
    : > "$WORK/t"
    for ((r = 1; r <= ROUNDS; r++)); do
        read -r own sp < <(coldtrace "$CT")
        echo "ct $own" >> "$WORK/t"
        echo "ct_spawner $sp" >> "$WORK/t"
        echo "ct_total $(awk -v a="$own" -v b="$sp" 'BEGIN { print a + b }')" >> "$WORK/t"
        read -r own _ < <(coldtrace "$CT" --minimal)
        echo "min $own" >> "$WORK/t"
        if [ -z "$AS" ]; then
            # As root the default also traces the process tree: the same without it.
            read -r own sp < <(COLDTRACE_TREE=off coldtrace "$CT")
            echo "ct_notree $own" >> "$WORK/t"
            echo "ct_notree_total $(awk -v a="$own" -v b="$sp" 'BEGIN { print a + b }')" >> "$WORK/t"
        fi
        if [ -n "${BASE:-}" ]; then
            read -r own sp < <(coldtrace "$BASE")
            echo "base $own" >> "$WORK/t"
            echo "base_total $(awk -v a="$own" -v b="$sp" 'BEGIN { print a + b }')" >> "$WORK/t"
        fi
        own=$(self_us "$HYPERFINE" -N --runs "$N" --warmup 0 --output null --style none /bin/true)
        echo "hf $(awk -v t="$own" -v n="$N" 'BEGIN { print t / n }')" >> "$WORK/t"
    done
    hf=$(awk '$1 == "hf" { print $2 }' "$WORK/t" | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }')
    # The ratio of the medians, and the median of each round's ratio to that round's hyperfine.
    row() {
        local m
        m=$(awk -v k="$2" '$1 == k { print $2 }' "$WORK/t" | median_range)
        local med=${m%% *}
        local paired
        paired=$(awk -v k="$2" '$1 == "hf" { h[++nh] = $2 } $1 == k { v[++nv] = $2 }
            END { for (i = 1; i <= nv; i++) print v[i] / h[i] }' "$WORK/t" |
            sort -n | awk '{ a[NR] = $1 } END { printf "%.2f×", a[int((NR + 1) / 2)] }')
        echo "| $1 | $m | $(awk -v a="$med" -v b="$hf" 'BEGIN { printf "%.2f×", a / b }') | $paired |"
    }
    echo "| runner | own CPU per run, µs | ÷ hyperfine (medians) | ÷ hyperfine (per round) |"
    echo "|---|---:|---:|---:|"
    row "hyperfine \`-N\`" hf
    row "coldtrace \`run\` (default): its process" ct
    row "coldtrace \`run\` (default): its process and its spawner" ct_total
    row "coldtrace \`run --minimal\` (no spawner)" min
    if [ -z "$AS" ]; then
        row "coldtrace \`run\` with \`COLDTRACE_TREE=off\`: its process" ct_notree
        row "coldtrace \`run\` with \`COLDTRACE_TREE=off\`: its process and its spawner" ct_notree_total
    fi
    if [ -n "${BASE:-}" ]; then
        row "BASE \`run\` (default): its process" base
        row "BASE \`run\` (default): its process and its spawner" base_total
    fi
    echo
}

echo "## Own CPU per run ($N runs of /bin/true, median and range of $ROUNDS interleaved rounds)"
echo
echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC'); kernel $(uname -r); $(nproc) CPUs; $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"
echo "- coldtrace: $CT${BASE:+; BASE: $BASE}; hyperfine: $("$HYPERFINE" --version)"
echo "- load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
AS=""
echo "### as $(id -un)"
echo
bench
if [ "$(id -u)" = 0 ]; then
    AS="setpriv --reuid=nobody --regid=nogroup --clear-groups --"
    cd "$WORK"
    echo "### as nobody"
    echo
    bench
fi
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
