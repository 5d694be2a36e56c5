#!/usr/bin/env bash
# The picture of `coldtrace report --svg/--html`, rendered by a real browser (headless Chromium)
# from real batches made here: a cold-evicted first run of a Python import with warm runs after
# it, a batch with warm-ups and rejected runs, and a comparison of two commands.
#
# Usage: tests/bench/picture.sh OUT_DIR
#   writes OUT_DIR/report.html, OUT_DIR/report.png (the whole page, every batch), and
#   OUT_DIR/cold.svg, OUT_DIR/cold.png (the cold batch alone: the README's picture, committed
#   as tests/bench/picture.png). Needs chromium (apt-get install -y chromium) and python3.
# Environment: COLDTRACE (default: the release binary under ./target).
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=$(realpath -m "${1:?usage: tests/bench/picture.sh OUT_DIR}")
BIN=$(realpath "${COLDTRACE:-target/x86_64-unknown-linux-musl/release/coldtrace}")
WORK=$(mktemp -d /tmp/coldtrace-picture.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$OUT"
log() { printf 'picture.sh: %s\n' "$*" >&2; }

# Headless Chromium, isolated: a fresh profile, no background traffic, and every request sent
# to a proxy that does not exist, so a page that needed the network would render blank here.
shoot() { # FILE PNG WIDTH HEIGHT
  local profile; profile=$(mktemp -d "$WORK/profile.XXXXXX")
  chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync \
    --proxy-server=http://127.0.0.1:9 --hide-scrollbars --user-data-dir="$profile" \
    --screenshot="$2" --window-size="$3,$4" "file://$1" >"$WORK/chromium.log" 2>&1 ||
    { cat "$WORK/chromium.log" >&2; return 1; }
  [ -s "$2" ] || { log "chromium wrote no screenshot"; cat "$WORK/chromium.log" >&2; return 1; }
}

# The height of an SVG document (its height attribute), to size the window to it.
svg_height() { sed -n 's/^<svg [^>]* height="\([0-9.]*\)".*/\1/p' "$1" | head -1 | cut -d. -f1; }

cd "$WORK"
PREFIX=$(python3 -c 'import sys; print(sys.base_prefix)')
# The interpreter itself, not a wrapper script (pyenv's shim is a bash script that execs it).
PYTHON=$(python3 -c 'import sys; print(sys.executable)')
log "batches in $WORK"
"$BIN" run -q -n 15 -o cold --label "Python's files evicted" \
  --evict "$PREFIX" --cold-first-only -- "$PYTHON" -c 'import json, email, http.client'
cat > every-fourth.sh <<'SH'
#!/bin/sh
# fails on calls 3, 7, 11, ... (a counter beside it), and sleeps a little otherwise
c="$(dirname "$0")/.count"; n=$(cat "$c" 2>/dev/null || echo 0); echo $((n + 1)) > "$c"
[ $((n % 4)) -ne 3 ] && sleep 0.0$((n % 3 + 1))
SH
chmod +x every-fourth.sh
"$BIN" run -q -n 20 --warmup 2 -o mixed --label "warm-ups and rejected runs" -- ./every-fourth.sh ||
  [ $? -eq 1 ] # rejected runs make the batch exit 1
"$BIN" compare -q -n 12 -o cmp "$PYTHON -c pass" "$PYTHON -S -c pass" 'sleep 0.02'

"$BIN" report --html "$OUT/report.html" cold mixed cmp >/dev/null
"$BIN" report --svg "$OUT/cold.svg" cold >/dev/null
"$BIN" report --svg "$WORK/all.svg" cold mixed cmp >/dev/null
shoot "$OUT/report.html" "$OUT/report.png" 1040 "$(($(svg_height "$WORK/all.svg") + 260))"
shoot "$OUT/cold.svg" "$OUT/cold.png" 960 "$(svg_height "$OUT/cold.svg")"
log "wrote $OUT/report.html, report.png, cold.svg, cold.png"
