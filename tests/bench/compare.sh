#!/usr/bin/env bash
# coldtrace vs its floor and its peers: per-run overhead, coldtrace's own peak RSS, accuracy of
# CPU/wall time on known work, and the footprint of three builds. Prints ONE Markdown report.
#
# Usage: tests/bench/compare.sh [ROUNDS] [RUNS]      (defaults: 5 rounds of 1000 runs)
# Environment: CARGO_TARGET_DIR (default ./target); HYPERFINE (default: hyperfine on PATH). Needs
# cargo, cc, GNU time at /usr/bin/time; hyperfine and perf are used when present. The peer is
# hyperfine 2.0: `cargo +nightly install hyperfine@2.0.0 --locked --root /tmp/hf` and
# HYPERFINE=/tmp/hf/bin/hyperfine (Debian's package is 1.15; the report names the version used).
# Build output goes to stderr; the report goes to stdout:
#     tests/bench/compare.sh > tests/bench/compare.out.md
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
SCRIPT_START=$(date +%s)
ROUNDS=${1:-5}
RUNS=${2:-1000}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
WORK=$(mktemp -d /tmp/coldtrace-compare.XXXXXX)
trap 'rm -rf "$WORK"' EXIT

log() { printf 'compare.sh: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }
have() { command -v "$1" >/dev/null 2>&1; }

have cc || die "cc is missing (apt-get install gcc): the workloads and the C floor are C programs"
[ -x /usr/bin/time ] || die "GNU time is missing at /usr/bin/time (apt-get install time)"
HYPERFINE=${HYPERFINE:-}
if [ -z "$HYPERFINE" ] && have hyperfine; then HYPERFINE=$(command -v hyperfine); fi
if [ -z "$HYPERFINE" ]; then
  log "hyperfine is missing (cargo +nightly install hyperfine@2.0.0 --locked); its row will say n/a"
fi
PERF_OK=
if have perf && perf stat -x, -e task-clock true >/dev/null 2>&1; then PERF_OK=1; else
  log "perf stat does not work here; its columns will say n/a"
fi

# ------------------------------------------------------------------------------------------
# Build everything (stderr only)
MUSL=x86_64-unknown-linux-musl
GNU=x86_64-unknown-linux-gnu
log "building: release musl (default), examples, glibc-static, glibc-dynamic"
cargo build --release --quiet --bin coldtrace >&2
cargo build --release --quiet -p coldtrace-syscalls --example spawn_floor >&2
cargo build --release --quiet --target $GNU --bin coldtrace >&2
# .cargo/config.toml links glibc builds with +crt-static; RUSTFLAGS (even empty) takes precedence
# over target.<triple>.rustflags, so RUSTFLAGS='' gives the dynamic build. Its own target dir
# keeps the static one from being overwritten. The linkage is checked with `file` below.
RUSTFLAGS='' cargo build --release --quiet --target $GNU --bin coldtrace \
  --target-dir "$CARGO_TARGET_DIR/gnu-dynamic" >&2
CT=$CARGO_TARGET_DIR/$MUSL/release/coldtrace
CT_GNU_STATIC=$CARGO_TARGET_DIR/$GNU/release/coldtrace
CT_GNU_DYN=$CARGO_TARGET_DIR/gnu-dynamic/$GNU/release/coldtrace
SF=$CARGO_TARGET_DIR/$MUSL/release/examples/spawn_floor
for b in "$CT" "$CT_GNU_STATIC" "$CT_GNU_DYN" "$SF"; do [ -x "$b" ] || die "not built: $b"; done

cc -O2 -o "$WORK/floor" tests/bench/floor.c
cc -O2 -o "$WORK/steps" tests/bench/steps.c
printf 'int main(void){return 0;}\n' >"$WORK/minimal.c"
printf '#include <unistd.h>\nint main(void){return write(1, "hi\\n", 3) != 3;}\n' >"$WORK/hello.c"
cc -O2 -o "$WORK/hello" "$WORK/hello.c"
cc -O2 -o "$WORK/minimal" "$WORK/minimal.c"
cc -O2 -static -o "$WORK/minimal-static" "$WORK/minimal.c"
cat >"$WORK/busy.c" <<'EOF'
/* Known work: spin until this process has used 200 ms of CPU time. */
#include <time.h>
int main(void) {
    struct timespec t;
    do clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t); while (t.tv_sec == 0 && t.tv_nsec < 200000000L);
    return 0;
}
EOF
cc -O2 -o "$WORK/busy" "$WORK/busy.c"

# ------------------------------------------------------------------------------------------
# Helpers
now_ns() { date +%s%N; }
# elapsed_ns CMD...: wall time of CMD (its output discarded), fails if CMD fails.
elapsed_ns() {
  local s e
  s=$(now_ns)
  "$@" >/dev/null 2>&1 || die "failed: $*"
  e=$(now_ns)
  echo $((e - s))
}
median() { sort -n | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }
minmax() { sort -n | awk 'NR==1{lo=$1} {hi=$1} END {printf "%s–%s", lo, hi}'; }
# json_field FILE FIELD: every numeric value of "FIELD": in FILE, one a line.
json_field() { grep -o "\"$2\":[0-9]*" "$1" | cut -d: -f2; }

shell_time_loop() {
  local i
  for ((i = 0; i < RUNS; i++)); do /usr/bin/time -f '' /bin/true 2>/dev/null; done
}
coldtrace_plain() { "$CT" run -n "$RUNS" -q -- /bin/true; }
coldtrace_minimal() { "$CT" run -n "$RUNS" -q --minimal -- /bin/true; }
# The default without the tree's states: as root the default traces the scheduler's
# tracepoints (docs/tree-explanation.md); an unprivileged user has no tree source, so the same
# command as user nobody is the default less the tree tracer.
UNTRACED=
if [ "$(id -u)" = 0 ] && have setpriv; then UNTRACED=1; fi
coldtrace_untraced() {
  HOME=/nonexistent setpriv --reuid=65534 --regid=65534 --clear-groups -- \
    "$CT" run -n "$RUNS" -q -- /bin/true
}
coldtrace_out() { "$CT" run -n "$RUNS" -q -o "$WORK/out" -- /bin/true; }
# Every run writes a line: each run's runs/NNN/stdout is made.
coldtrace_out_hello() { "$CT" run -n "$RUNS" -q -o "$WORK/out" -- "$WORK/hello"; }
coldtrace_hello() { "$CT" run -n "$RUNS" -q -- "$WORK/hello"; }
# The same on tmpfs, to separate coldtrace's own cost from the file system's metadata cost.
SHM=
if [ "$(stat -f -c %T /dev/shm 2>/dev/null)" = tmpfs ]; then SHM=$(mktemp -d /dev/shm/coldtrace-compare.XXXXXX); fi
trap 'rm -rf "$WORK" ${SHM:+"$SHM"}' EXIT
coldtrace_out_tmpfs() { "$CT" run -n "$RUNS" -q -o "$SHM/out" -- /bin/true; }
hyperfine_run() { "$HYPERFINE" -N --runs "$RUNS" --warmup 0 --style none /bin/true; }

CONTENDERS=(cfloor step1 step2 step3 step4 sf ct ctnotree ctmin ctout ctshm cthello ctouthello hf shloop)
declare -A NAME=(
  [cfloor]="**floor**: C loop of vfork + execve + wait4 (\`tests/bench/floor.c\`)"
  [step1]="C, step 1: clone with a pidfd instead of vfork (\`tests/bench/steps.c 1\`)"
  [step2]="C, step 2: + ppoll on the pidfd and a signalfd, waitid before wait4, an orphan waitid, signals blocked around the clone"
  [step3]="C, step 3: + the child resets 3 signals, installs stdio (dup3), close_range, passes the environment"
  [step4]="C, step 4: + per run two record writes, a stderr-sink truncate + seek, one small /proc pread"
  [sf]="syscalls crate loop (\`spawn_floor\` example: spawn + wait4, every signal queried)"
  [ct]="\`coldtrace run -n $RUNS -q -- /bin/true\` (no artifacts)"
  [ctnotree]="same as user nobody (setpriv): no tree source, so the default less the tree tracer (root only)"
  [ctmin]="\`coldtrace run -n $RUNS -q --minimal -- /bin/true\` (no artifacts, no /proc reads around runs)"
  [ctout]="\`coldtrace run -n $RUNS -q -o DIR -- /bin/true\` (artifacts)"
  [ctshm]="same with DIR on tmpfs (/dev/shm)"
  [cthello]="\`coldtrace run -n $RUNS -q -- hello\` (a C program writing one line; no artifacts)"
  [ctouthello]="\`coldtrace run -n $RUNS -q -o DIR -- hello\` (every run's stdout kept: runs/NNN/stdout)"
  [hf]="\`hyperfine -N --runs $RUNS --warmup 0 /bin/true\`"
  [shloop]="$RUNS × \`/usr/bin/time -f '' /bin/true\` in a bash loop"
)
declare -A CMD=(
  [sf]="$SF $RUNS" [cfloor]="$WORK/floor $RUNS"
  [step1]="$WORK/steps 1 $RUNS" [step2]="$WORK/steps 2 $RUNS" [step3]="$WORK/steps 3 $RUNS"
  [step4]="$WORK/steps 4 $RUNS" [ct]=coldtrace_plain [ctnotree]=coldtrace_untraced
  [ctmin]=coldtrace_minimal [ctout]=coldtrace_out
  [ctshm]=coldtrace_out_tmpfs [cthello]=coldtrace_hello [ctouthello]=coldtrace_out_hello
  [hf]=hyperfine_run [shloop]=shell_time_loop
)
declare -A SAMPLES

# ------------------------------------------------------------------------------------------
# 1. Per-run overhead, interleaved rounds
log "overhead: $ROUNDS rounds × ${#CONTENDERS[@]} contenders × $RUNS runs"
for ((r = 1; r <= ROUNDS; r++)); do
  for c in "${CONTENDERS[@]}"; do
    if [ "$c" = hf ] && [ -z "$HYPERFINE" ]; then continue; fi
    if [ "$c" = ctshm ] && [ -z "$SHM" ]; then continue; fi
    if [ "$c" = ctnotree ] && [ -z "$UNTRACED" ]; then continue; fi
    rm -rf "$WORK/out" ${SHM:+"$SHM/out"} # outside the timed command
    # shellcheck disable=SC2086
    ns=$(elapsed_ns ${CMD[$c]})
    SAMPLES[$c]+="$(awk -v n="$ns" -v k="$RUNS" 'BEGIN{printf "%.1f", n/k/1000}') "
  done
  log "round $r done"
done
declare -A MED RANGE ROUND_RATIO
for c in "${CONTENDERS[@]}"; do
  if [ -z "${SAMPLES[$c]:-}" ]; then MED[$c]=n/a; RANGE[$c]=n/a; ROUND_RATIO[$c]=n/a; continue; fi
  MED[$c]=$(tr ' ' '\n' <<<"${SAMPLES[$c]}" | grep . | median)
  RANGE[$c]=$(tr ' ' '\n' <<<"${SAMPLES[$c]}" | grep . | minmax)
  # Each round's figure over the floor's in the same round, then the median of those: drift
  # that moves a whole round cancels out, which the ratio of two medians does not do.
  ROUND_RATIO[$c]=$(paste -d' ' <(tr ' ' '\n' <<<"${SAMPLES[$c]}" | grep .) \
    <(tr ' ' '\n' <<<"${SAMPLES[cfloor]}" | grep .) | awk '{printf "%.4f\n", $1 / $2}' |
    median | awk '{printf "%.2f", $1}')
done
# The inner per-iteration medians of the floor loops, for reference (one extra run each).
SF_INNER=$("$SF" "$RUNS")
C_INNER=$("$WORK/floor" "$RUNS")

# ------------------------------------------------------------------------------------------
# 2. coldtrace's own peak RSS over N
log "coldtrace's own peak RSS over N"
PEAK_ROWS=""
for n in 10 100 1000 10000 100000; do
  rm -rf "$WORK/peak"
  /usr/bin/time -o "$WORK/peak.time" -f %M "$CT" run -n "$n" -q -o "$WORK/peak" -- /bin/true
  hwm=$(json_field "$WORK/peak/runs.jsonl" vm_hwm_kib | sort -n | tail -1)
  first=$(json_field "$WORK/peak/runs.jsonl" vm_hwm_kib | sed -n 1p)
  recs=$(wc -l <"$WORK/peak/runs.jsonl")
  PEAK_ROWS+="| $n | $recs | $first | $hwm | $(tail -1 "$WORK/peak.time") |"$'\n'
done

# ------------------------------------------------------------------------------------------
# 2b. report over a fleet's records: 10,000 batch directories of 100 records each (hard links
# of one real batch, ten hosts' batch.json), read by one `report` walking the directory.
log "report over 10,000 batches × 100 records"
rm -rf "$WORK/fleet-src" "$WORK/fleet"
"$CT" run -q -n 100 -o "$WORK/fleet-src" -- /bin/true
mkdir -p "$WORK/fleet"
for h in $(seq -w 1 10); do
  mkdir -p "$WORK/fleet/host$h"
  sed "s/\"hostname\": \"[^\"]*\"/\"hostname\": \"host$h\"/" "$WORK/fleet-src/batch.json" >"$WORK/fleet/host$h.json"
  for i in $(seq -w 1 1000); do
    mkdir "$WORK/fleet/host$h/b$i"
    ln "$WORK/fleet-src/runs.jsonl" "$WORK/fleet/host$h/b$i/runs.jsonl"
    ln "$WORK/fleet/host$h.json" "$WORK/fleet/host$h/b$i/batch.json"
  done
done
REPORT_ROWS=""
for r in 1 2 3; do
  /usr/bin/time -o "$WORK/report.time" -f '%e %M %U %S' "$CT" report "$WORK/fleet" >"$WORK/report.out"
  read -r e m u sy <"$WORK/report.time"
  REPORT_ROWS+="| $r | $e | $(awk -v e="$e" 'BEGIN{printf "%.0f", 1000000/e}') | $u | $sy | $m |"$'\n'
done
REPORT_LINES=$(wc -l <"$WORK/report.out")
rm -rf "$WORK/fleet" "$WORK/fleet-src"

# ------------------------------------------------------------------------------------------
# 3. Accuracy on known work
log "accuracy: busy 200 ms CPU, sleep 0.2"
ACC_ROUNDS=3
accuracy_rows() { # label argv...
  local label=$1; shift
  local ct_cpu=() ct_wall=() gt_cpu=() gt_wall=() pf_cpu=() pf_wall=() i rec
  for ((i = 0; i < ACC_ROUNDS; i++)); do
    rec=$("$CT" run -n 1 --json -q --output null -- "$@")
    local u s w
    u=$(grep -o '"user_us":[0-9]*' <<<"$rec" | cut -d: -f2)
    s=$(grep -o '"sys_us":[0-9]*' <<<"$rec" | cut -d: -f2)
    w=$(grep -o '"wall_ns":[0-9]*' <<<"$rec" | cut -d: -f2)
    ct_cpu+=("$(awk -v u="$u" -v s="$s" 'BEGIN{printf "%.1f", (u+s)/1000}')")
    ct_wall+=("$(awk -v w="$w" 'BEGIN{printf "%.1f", w/1e6}')")
    /usr/bin/time -o "$WORK/acc.time" -f '%U %S %e' "$@" >/dev/null 2>&1
    read -r gu gs ge <"$WORK/acc.time"
    gt_cpu+=("$(awk -v u="$gu" -v s="$gs" 'BEGIN{printf "%.1f", (u+s)*1000}')")
    gt_wall+=("$(awk -v e="$ge" 'BEGIN{printf "%.1f", e*1000}')")
    if [ -n "$PERF_OK" ]; then
      perf stat -x, -e task-clock,duration_time -o "$WORK/acc.perf" "$@" >/dev/null 2>&1
      pf_cpu+=("$(awk -F, '$3=="task-clock"{printf "%.1f", $1}' "$WORK/acc.perf")")
      pf_wall+=("$(awk -F, '$3=="duration_time"{printf "%.1f", $1/1e6}' "$WORK/acc.perf")")
    fi
  done
  med() { printf '%s\n' "$@" | median; }
  local pc=n/a pw=n/a
  if [ -n "$PERF_OK" ]; then pc=$(med "${pf_cpu[@]}"); pw=$(med "${pf_wall[@]}"); fi
  printf '| %s | CPU (ms) | %s | %s | %s |\n' "$label" "$(med "${ct_cpu[@]}")" "$(med "${gt_cpu[@]}")" "$pc"
  printf '| %s | wall (ms) | %s | %s | %s |\n' "$label" "$(med "${ct_wall[@]}")" "$(med "${gt_wall[@]}")" "$pw"
}
ACC_BUSY=$(accuracy_rows "busy loop, 200 ms CPU (expected CPU ≈ wall ≈ 200)" "$WORK/busy")
ACC_SLEEP=$(accuracy_rows "\`sleep 0.2\` (expected CPU ≈ 1, wall ≈ 200)" sleep 0.2)

# ------------------------------------------------------------------------------------------
# 4. Footprint: sizes, inherited floor per build, dependency tree, empty root
log "footprint"
floor_of() { # binary → "median max_rss_kib (vm_hwm median)"
  rm -rf "$WORK/floor-batch"
  "$1" run -n 5 -q -o "$WORK/floor-batch" -- "$WORK/minimal"
  local m h
  m=$(json_field "$WORK/floor-batch/runs.jsonl" max_rss_kib | median)
  h=$(json_field "$WORK/floor-batch/runs.jsonl" vm_hwm_kib | median)
  echo "$m | $h"
}
linkage() { if file "$1" | grep -q 'dynamically linked'; then echo dynamic; else echo static; fi; }
GT_MIN=$(for i in 1 2 3 4 5; do /usr/bin/time -f %M "$WORK/minimal" 2>&1 >/dev/null | tail -1; done | median)
FOOT_ROWS=""
for pair in "musl static (default)|$CT" "glibc static (+crt-static)|$CT_GNU_STATIC" "glibc dynamic|$CT_GNU_DYN"; do
  label=${pair%%|*}; bin=${pair#*|}
  FOOT_ROWS+="| $label | $(stat -c %s "$bin") | $(linkage "$bin") | $(floor_of "$bin") | $GT_MIN |"$'\n'
done
TREE=$(cargo tree -e normal -p coldtrace 2>/dev/null)
TREE_ALL=$(cargo tree -e normal --target all -p coldtrace 2>/dev/null)

# Empty root: only the binary and a static workload.
EMPTY_ROOT_OUT=""
in_root() { # root cmd... (with ROOT_METHOD)
  if [ "$ROOT_METHOD" = unshare ]; then unshare --mount --root "$@"; else chroot "$@"; fi
}
summarize() { # rc output
  if [ "$1" -eq 0 ]; then
    echo "exit 0; outcome $(grep -o '"outcome":{[^}]*}' <<<"$2"), max_rss_kib $(grep -o '"max_rss_kib":[0-9]*' <<<"$2" | cut -d: -f2), runner $(grep -o '"runner":{[^}]*}' <<<"$2"), stderr/notices: $(grep -v '^{' <<<"$2" | tr '\n' ' ' | cut -c1-200)"
  else
    echo "FAILS: exit $1: $(cut -c1-300 <<<"$2" | tr '\n' ' ')"
  fi
}
empty_root() { # label binary
  local root="$WORK/root-$RANDOM" out rc v
  mkdir -p "$root"
  cp "$2" "$root/coldtrace"
  cp "$WORK/minimal-static" "$root/minimal-static"
  set +e
  v=$(in_root "$root" /coldtrace --version 2>&1); rc=$?
  EMPTY_ROOT_OUT+="- **$1**, $ROOT_METHOD into a dir holding only \`/coldtrace\` and \`/minimal-static\`:"$'\n'
  EMPTY_ROOT_OUT+="  - \`/coldtrace --version\`: $( [ $rc -eq 0 ] && echo "exit 0, \"$v\"" || echo "FAILS: exit $rc: $(tr '\n' ' ' <<<"$v" | cut -c1-200)")"$'\n'
  out=$(in_root "$root" /coldtrace run -n 1 --json -q -- /minimal-static 2>&1); rc=$?
  EMPTY_ROOT_OUT+="  - \`/coldtrace run -n 1 --json -q -- /minimal-static\`: $(summarize $rc "$out")"$'\n'
  # The same with only a /dev/null device node added.
  mkdir -p "$root/dev" && mknod -m 666 "$root/dev/null" c 1 3 2>/dev/null
  if [ -c "$root/dev/null" ]; then
    out=$(in_root "$root" /coldtrace run -n 1 --json -q -- /minimal-static 2>&1); rc=$?
    EMPTY_ROOT_OUT+="  - same, with \`/dev/null\` (a device node) added: $(summarize $rc "$out")"$'\n'
  fi
  set -e
  rm -rf "$root"
}
# Pick the method once, with the static C program alone (no coldtrace involved).
mkdir -p "$WORK/probe-root" && cp "$WORK/minimal-static" "$WORK/probe-root/"
if unshare --mount --root "$WORK/probe-root" /minimal-static 2>/dev/null; then ROOT_METHOD=unshare
elif have chroot && chroot "$WORK/probe-root" /minimal-static 2>/dev/null; then ROOT_METHOD=chroot
else ROOT_METHOD=none; fi
if [ "$ROOT_METHOD" = none ]; then
  EMPTY_ROOT_OUT="- n/a: neither \`unshare --mount --root\` nor \`chroot\` works here (needs root / CAP_SYS_CHROOT)"$'\n'
else
empty_root "musl static (default)" "$CT"
empty_root "glibc static" "$CT_GNU_STATIC"
empty_root "glibc dynamic" "$CT_GNU_DYN"
fi

# ------------------------------------------------------------------------------------------
# The report
ratio() { if [ "$1" = n/a ]; then echo n/a; else awk -v a="$1" -v b="${MED[cfloor]}" 'BEGIN{printf "%.2f", a/b}'; fi; }
ART=$(awk -v a="${MED[ctout]}" -v b="${MED[ct]}" 'BEGIN{printf "%.1f", a-b}')
ART_HELLO=$(awk -v a="${MED[ctouthello]}" -v b="${MED[cthello]}" 'BEGIN{printf "%.1f", a-b}')
ART_SHM=n/a
[ "${MED[ctshm]}" = n/a ] || ART_SHM=$(awk -v a="${MED[ctshm]}" -v b="${MED[ct]}" 'BEGIN{printf "%.1f", a-b}')
TREE_COST=n/a
[ "${MED[ctnotree]}" = n/a ] || TREE_COST=$(awk -v a="${MED[ct]}" -v b="${MED[ctnotree]}" 'BEGIN{printf "%.1f", a-b}')
ART_FS="$(stat -f -c %T "$WORK" | sed 's/ext2\/ext3/ext2\/3\/4/') ($(dirname "$WORK"))"
cat <<EOF
# coldtrace: overhead, own peak RSS, accuracy, footprint

- Date (UTC): $(date -u '+%Y-%m-%d %H:%M:%S')
- Machine: kernel $(uname -r), $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')
- coldtrace: $("$CT" --version 2>&1 | sed -n 1p), commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet -- . ':!tests/bench/compare.out.md' 2>/dev/null || echo ' (dirty tree)')
- Tools: $(rustc --version); $(cargo --version); $(cc --version | sed -n 1p); GNU time $(/usr/bin/time --version 2>&1 | sed -n 1p | sed 's/^time (GNU Time) //') (Debian package $(dpkg-query -W -f '${Version}' time 2>/dev/null || echo '?')); $([ -n "$HYPERFINE" ] && "$HYPERFINE" --version || echo 'hyperfine: n/a'); $(have perf && perf --version || echo 'perf: n/a')
- Reproduce: \`cd $ROOT && CARGO_TARGET_DIR=$CARGO_TARGET_DIR tests/bench/compare.sh $ROUNDS $RUNS > tests/bench/compare.out.md\`

## Per-run overhead: $RUNS runs of \`/bin/true\`, $ROUNDS interleaved rounds

Per-run cost = total elapsed wall time of the whole command (process start-up included) ÷ $RUNS,
median over rounds. Ratios to the floor (the C vfork + execve + wait4 loop), measured in the
same rounds: of the medians, and the median of each round's ratio (contender ÷ floor in that
round), which a drift of this shared machine that moves a whole round does not move.

| contender | per-run µs (median) | range over rounds | ratio of medians | median of round ratios |
|---|---:|---|---:|---:|
EOF
for c in "${CONTENDERS[@]}"; do
  printf '| %s | %s | %s | %s | %s |\n' "${NAME[$c]}" "${MED[$c]}" "${RANGE[$c]}" \
    "$(ratio "${MED[$c]}")" "${ROUND_RATIO[$c]}"
done
cat <<EOF

- Artifacts (\`-o DIR\`): each run's stdout and stderr are caught in two memfds (the last
  run's, when it wrote nothing and left no process alive) and become
  \`runs/NNN/{stdout,stderr}\` only when the run wrote to them; a runs.jsonl line per run,
  batch.json at the end. For \`/bin/true\` (writes nothing) \`-o DIR\` costs
  **$ART µs per run** with DIR on $ART_FS and **$ART_SHM µs per run** on tmpfs (artifacts
  row − no-artifacts row); for \`hello\` (one line to stdout every run: one directory and one
  file made per run) **$ART_HELLO µs per run** on $ART_FS.
- The tree's states (six \`sched\` tracepoints on every CPU, enabled around each run and read
  after it; root only): **$TREE_COST µs per run** (the default as root − the same as user
  nobody, who has no tree source). The rings are opened once per batch, not per run.
- The C steps (\`tests/bench/steps.c\`) add a runner's duties to the floor loop one at a time,
  without coldtrace: what keeping coldtrace's promises costs at the least (pidfd waiting that
  a signal can interrupt, no leaked descriptors, a child with default signal handling and the
  caller's environment, a record per run). \`--minimal\` does what step 4 does, plus its own
  bookkeeping.
- Inner per-iteration figures of the floor loops (spawn → wait4 returned, one extra run each):
  C floor \`$C_INNER\`; spawn_floor \`$SF_INNER\`.
- hyperfine row: $([ -n "$HYPERFINE" ] && "$HYPERFINE" --version || echo n/a), per-run cost from its total elapsed time
  (it also does its own statistics and shell-less spawning through Rust's std::process).
- The \`/usr/bin/time\` row subtracts nothing: each iteration includes bash forking and exec'ing
  GNU time, GNU time forking and exec'ing \`/bin/true\`, both dynamic-linker start-ups, and the loop.

## coldtrace's own peak RSS over N (with \`-o\`)

| N | records | runner.vm_hwm_kib of the first record | max runner.vm_hwm_kib over records | \`/usr/bin/time -f %M\` of coldtrace itself (KiB) |
|---:|---:|---:|---:|---:|
$PEAK_ROWS
(runner.vm_hwm_kib is read right before each spawn, after resetting the high-water mark; GNU
time's %M is coldtrace's lifetime peak, start-up, summary and batch.json included.)

## \`report\` over a fleet's records: 10,000 batch directories, 1,000,000 records

One \`coldtrace report DIR\` walking 10,000 batch directories (ten hosts × 1,000 batches of 100
records of \`/bin/true\`, hard links of one real batch; $REPORT_LINES lines of output), three times:

| round | elapsed s | records/s | user s | sys s | peak RSS KiB |
|---:|---:|---:|---:|---:|---:|
$REPORT_ROWS
## Accuracy on known work (median of $ACC_ROUNDS runs per tool)

coldtrace: rusage user_us+sys_us, wall_ns. GNU time: %U+%S, %e (10 ms resolution).
perf: \`perf stat -x, -e task-clock,duration_time\`.

| work | metric | coldtrace | GNU time | perf stat |
|---|---|---:|---:|---:|
$ACC_BUSY
$ACC_SLEEP

## Footprint

| build | size (bytes) | linkage | inherited floor: max_rss_kib of a minimal C program (median of 5) | runner.vm_hwm_kib (median) | GNU time %M, same program (median of 5) |
|---|---:|---|---:|---:|---:|
$FOOT_ROWS
\`cargo tree -e normal -p coldtrace\` (what the default musl build compiles and links):

\`\`\`
$TREE
\`\`\`

\`cargo tree -e normal --target all -p coldtrace\` also lists target-gated entries that no Linux
build compiles: windows-sys (rustix/errno on Windows) and serde_derive under serde_core, which
serde declares under a never-true \`cfg\` only to keep the two crates' versions in lockstep:

\`\`\`
$TREE_ALL
\`\`\`

Empty root:

$EMPTY_ROOT_OUT
The script took $(( $(date +%s) - SCRIPT_START )) s.
EOF
