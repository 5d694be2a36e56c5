#!/usr/bin/env bash
# What the progress line's ticks cost a long run: the same batch of `sleep 1.5` on a
# pseudo-terminal (progress drawn, four ticks a second after the first second of every run) and
# off one (no line, no tick), interleaved in rounds. Prints the warm medians side by side.
#
# Usage: tests/bench/progress_ticks.sh [ROUNDS] [RUNS]   (defaults: 5 rounds of 5 runs)
# Needs util-linux `script`. Uses the release binary (built if missing).
set -euo pipefail
cd "$(dirname "$0")/../.."
ROUNDS=${1:-5}
RUNS=${2:-5}
BIN=${CARGO_TARGET_DIR:-$PWD/target}/x86_64-unknown-linux-musl/release/coldtrace
[ -x "$BIN" ] || cargo build --release >&2
WORK=$(mktemp -d /tmp/coldtrace-ticks.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
median() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["summary"]["wall_ns"]["warm"]["median"])' "$1"; }

echo "| round | on a terminal (ticks), warm median ns | off a terminal, warm median ns | difference µs |"
echo "|---:|---:|---:|---:|"
for r in $(seq 1 "$ROUNDS"); do
  script -qfec "stty cols 80 rows 24; $BIN run -n $RUNS -o $WORK/tty$r -- sleep 1.5" /dev/null \
    </dev/null >/dev/null
  "$BIN" run -n "$RUNS" -q -o "$WORK/plain$r" -- sleep 1.5
  t=$(median "$WORK/tty$r/batch.json")
  p=$(median "$WORK/plain$r/batch.json")
  python3 -c "import sys; t,p=float(sys.argv[1]),float(sys.argv[2]); print(f'| {sys.argv[3]} | {t:.0f} | {p:.0f} | {(t-p)/1e3:+.1f} |')" "$t" "$p" "$r"
done
