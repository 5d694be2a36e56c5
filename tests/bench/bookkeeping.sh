#!/bin/sh
# What the cold bookkeeping costs a batch: a 15-run `python3 -c 'import json'` batch plain, with
# `--evict PREFIX --cold-first-only` (PREFIX: the interpreter's installation, sys.base_prefix),
# and with `--watch PREFIX`; and the same with 2 runs, so that what a warm run adds is the
# difference. Rounds are interleaved (plain, evict, watch, then the next round) and medians
# printed, with the load average before and after. Prints Markdown.
#
#   tests/bench/bookkeeping.sh [ROUNDS]          (default 5)
#
# COLDTRACE: the binary (default: the release build of this checkout); BASE: another build run
# beside it in every round (e.g. main's), for a side-by-side comparison. As root, the same is
# measured again as the user nobody (setpriv) on a copy of the prefix that nobody owns (made
# once in /var/tmp/coldtrace-bench-prefix; cachestat only tells a file's owner or writer).
set -eu
ROUNDS=${1:-5}
here=$(cd "$(dirname "$0")/../.." && pwd)
CT=${COLDTRACE:-$here/target/x86_64-unknown-linux-musl/release/coldtrace}
[ -x "$CT" ] || { echo "build first: cargo build --release" >&2; exit 1; }
PREFIX=$(python3 -c 'import sys; print(sys.base_prefix)')
work=$(mktemp -d /var/tmp/coldtrace-bookkeeping.XXXXXX)
chmod 0777 "$work"
trap 'rm -rf "$work"' EXIT

# ms BIN RUNS ARGS... : the batch's wall time (ms), its first cold action's took_ns (ms), and
# the CPU time (user + system, ms) of coldtrace and everything it ran.
ms() {
    bin=$1 runs=$2
    shift 2
    rm -rf "$work/b"
    start=$(date +%s%N)
    /usr/bin/time -o "$work/cpu" -f '%U %S' \
        $AS "$bin" run -q -n "$runs" -o "$work/b" "$@" -- $PYCMD -c 'import json'
    end=$(date +%s%N)
    took=$(sed -n 's/.*"took_ns":\([0-9]*\).*/\1/p' "$work/b/runs.jsonl" | head -1)
    cpu=$(awk '{ printf "%d", ($1 + $2) * 1000 }' "$work/cpu")
    echo "$(( (end - start) / 1000000 )) $(( ${took:-0} / 1000000 )) $cpu"
}

median() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }

# bench LABEL PREFIX: ROUNDS interleaved rounds of every batch, for each build.
bench() {
    label=$1 prefix=$2
    echo "### $label"
    echo
    echo "prefix: $prefix ($(find "$prefix" -type f | wc -l) files); load before: $(cut -d' ' -f1-3 /proc/loadavg)"
    echo
    : > "$work/t"
    r=0
    while [ "$r" -lt "$ROUNDS" ]; do
        for build in new ${BASE:+base}; do
            bin=$CT
            [ "$build" = base ] && bin=$BASE
            for n in 2 15; do
                echo "$build plain $n $(ms "$bin" "$n")" >> "$work/t"
                echo "$build evict $n $(ms "$bin" "$n" --evict "$prefix" --cold-first-only)" >> "$work/t"
                echo "$build watch $n $(ms "$bin" "$n" --watch "$prefix")" >> "$work/t"
            done
        done
        r=$((r + 1))
    done
    echo "| build | plain, 15 runs | --evict --cold-first-only, 15 runs | of which the eviction (took_ns) | (evict − eviction) / plain | --watch, 15 runs | --watch per warm run | --watch per warm run, CPU |"
    echo "|---|---:|---:|---:|---:|---:|---:|---:|"
    for build in new ${BASE:+base}; do
        get() { awk -v b="$build" -v m="$1" -v n="$2" -v c="$3" '$1 == b && $2 == m && $3 == n { print $c }' "$work/t" | median; }
        p2=$(get plain 2 4) p15=$(get plain 15 4) e15=$(get evict 15 4) took=$(get evict 15 5)
        w2=$(get watch 2 4) w15=$(get watch 15 4)
        ratio=$(awk -v e="$e15" -v t="$took" -v p="$p15" 'BEGIN { printf "%.2f×", (e - t) / p }')
        per=$(awk -v a="$w15" -v b="$w2" -v c="$p15" -v d="$p2" 'BEGIN { printf "%.1f ms", ((a - b) - (c - d)) / 13 }')
        cw2=$(get watch 2 6) cw15=$(get watch 15 6) cp2=$(get plain 2 6) cp15=$(get plain 15 6)
        cpu=$(awk -v a="$cw15" -v b="$cw2" -v c="$cp15" -v d="$cp2" 'BEGIN { printf "%.1f ms", ((a - b) - (c - d)) / 13 }')
        echo "| $build | $p15 ms | $e15 ms | $took ms | $ratio | $w15 ms | $per | $cpu |"
    done
    echo
    echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
    echo
}

echo "# bookkeeping"
echo
echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC'); $(uname -r); $(nproc) CPUs; $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"
echo "- coldtrace: $CT${BASE:+; base: $BASE}"
echo "- $ROUNDS interleaved rounds, medians; each batch: run -q -n N -o DIR [--evict|--watch PREFIX] -- PREFIX/bin/python3 -c 'import json'"
echo "- \"--watch per warm run\": ((watch 15 − watch 2) − (plain 15 − plain 2)) / 13, in wall time and in"
echo "  the CPU time of coldtrace and everything it ran (/usr/bin/time: user + system)"
echo
AS=""
PYCMD="$PREFIX/bin/python3"
bench "as $(id -un)" "$PREFIX"
if [ "$(id -u)" = 0 ]; then
    copy=/var/tmp/coldtrace-bench-prefix
    if [ ! -e "$copy/.complete" ]; then
        rm -rf "$copy"
        cp -a "$PREFIX" "$copy"
        chown -R nobody "$copy"
        touch "$copy/.complete"
    fi
    AS="setpriv --reuid=nobody --regid=nogroup --clear-groups -- env LD_LIBRARY_PATH=$copy/lib"
    PYCMD="$copy/bin/python3"
    bench "as nobody (a copy of the prefix that nobody owns)" "$copy"
fi
