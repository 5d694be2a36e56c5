#!/usr/bin/env bash
# coldtrace's own CPU per run beside hyperfine's, from rusage rather than perf, so that it can
# be measured as an unprivileged user too (perf_event_paranoid 2 leaves an unprivileged
# `perf stat` only the user-space part of task-clock, and most of a runner's CPU is the
# kernel's). Each contender runs N times /bin/true under /usr/bin/time; its own CPU is its
# user + system time less its children's: for coldtrace the measured commands' (the batch
# document's cpu_us mean × runs) and the spawner's (its cpu_ns) — the spawner's share is
# printed apart; for hyperfine the commands' CPU is taken to be what coldtrace measured of the
# same command in the same round. ROUNDS interleaved rounds, median and range, µs per run.
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

# cpu_us AS... : user + system µs of the command, from /usr/bin/time.
cpu_us() {
    /usr/bin/time -o "$WORK/time" -f '%U %S' "$@" > "$WORK/out" 2>/dev/null
    awk '{ printf "%.0f", ($1 + $2) * 1e6 }' "$WORK/time"
}

# coldtrace BIN ARGS…: "own spawner children" µs per run.
coldtrace() {
    bin=$1
    shift
    total=$(cpu_us $AS "$bin" run -n "$N" -q --json "$@" -- /bin/true)
    python3 - "$WORK/out" "$N" "$total" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1])); n = int(sys.argv[2]); total = float(sys.argv[3])
children = doc["summary"]["cpu_us"]["all"]["mean"] * n
spawner = ((doc.get("spawner") or {}).get("cpu_ns") or 0) / 1000
print("%.1f %.1f %.1f" % ((total - children - spawner) / n, spawner / n, children / n))
PY
}

median_range() {
    sort -n | awk '{ a[NR] = $1 } END { printf "%.1f (%.1f–%.1f)", a[int((NR + 1) / 2)], a[1], a[NR] }'
}

bench() {
    : > "$WORK/t"
    for ((r = 1; r <= ROUNDS; r++)); do
        read -r own sp child < <(coldtrace "$CT")
        echo "ct $own" >> "$WORK/t"
        echo "ct_spawner $sp" >> "$WORK/t"
        echo "ct_total $(awk -v a="$own" -v b="$sp" 'BEGIN { print a + b }')" >> "$WORK/t"
        read -r own _ _ < <(coldtrace "$CT" --minimal)
        echo "min $own" >> "$WORK/t"
        if [ -n "${BASE:-}" ]; then
            read -r own sp _ < <(coldtrace "$BASE")
            echo "base $own" >> "$WORK/t"
            echo "base_total $(awk -v a="$own" -v b="$sp" 'BEGIN { print a + b }')" >> "$WORK/t"
        fi
        total=$(cpu_us $AS "$HYPERFINE" -N --runs "$N" --warmup 0 --output null --style none /bin/true)
        echo "hf $(awk -v t="$total" -v c="$child" -v n="$N" 'BEGIN { print t / n - c }')" >> "$WORK/t"
    done
    hf=$(awk '$1 == "hf" { print $2 }' "$WORK/t" | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }')
    row() {
        local m
        m=$(awk -v k="$2" '$1 == k { print $2 }' "$WORK/t" | median_range)
        local med=${m%% *}
        echo "| $1 | $m | $(awk -v a="$med" -v b="$hf" 'BEGIN { printf "%.2f×", a / b }') |"
    }
    echo "| runner | own CPU per run, µs | ÷ hyperfine |"
    echo "|---|---:|---:|"
    row "hyperfine \`-N\` (its children's CPU as coldtrace measured them)" hf
    row "coldtrace \`run\` (default): its process" ct
    row "coldtrace \`run\` (default): its process and its spawner" ct_total
    row "coldtrace \`run --minimal\` (no spawner)" min
    if [ -n "${BASE:-}" ]; then
        row "BASE \`run\` (default): its process" base
        row "BASE \`run\` (default): its process and its spawner" base_total
    fi
    echo
}

echo "## Own CPU per run from rusage ($N runs of /bin/true, median and range of $ROUNDS interleaved rounds)"
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
