#!/usr/bin/env bash
# The max-RSS ladder: what each runner reports as the max RSS of small programs, side by side.
#
# Programs: no C library at all (`_start` → exit_group), static glibc, static musl and dynamic
# glibc `int main`, each allocating and touching 0, 1, 2, 4 and 8 MiB (argv[1] MiB).
# Runners: GNU time (`/usr/bin/time -f %M`, fork + exec), a bare C vfork spawner built twice
# (dynamic glibc, as `cc` builds it; static musl, the leanest C parent), coldtrace (`run`,
# rusage.max_rss_kib; "≤F" when its record marks the figure as at or below the runner's floor)
# and hyperfine (`-N`, memory_peak_resident) when one is found.
# Each cell is the median of REPS runs. The first lines say when, where and with what.
#
# Usage: tests/bench/rss_ladder.sh            (from the repository root)
# Environment: REPS (default 5); CT (a coldtrace binary; default: built with
#   `cargo build --release` into CARGO_TARGET_DIR, default ./target); HYPERFINE (default:
#   hyperfine on PATH; hyperfine 2.0 builds with `cargo +nightly install hyperfine@2.0.0
#   --locked --root /tmp/hf`); MIBS (default "0 1 2 4 8").
# Needs: cc, GNU time at /usr/bin/time, python3; musl-gcc (Debian: musl-tools) for the static
# musl rows and the lean spawner (skipped, and said, without it). x86_64 or aarch64.
#
# Reading it: ru_maxrss is the kernel's *approximate* RSS (per-CPU counters folded in batches
# of 32 pages, so it lags the true peak by up to 31 pages per counter per CPU; /proc/PID/status
# and statm sum the counters exactly on this project's kernel, 6.18), and a vfork-style runner's
# whole resident set is folded into the child's figure at execve. docs/lean-runner.md explains
# both.
set -euo pipefail

REPS=${REPS:-5}
MIBS=${MIBS:-"0 1 2 4 8"}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
log() { printf 'rss_ladder: %s\n' "$*" >&2; }
have() { command -v "$1" >/dev/null 2>&1; }
median() { sort -n | awk '{v[NR]=$1} END{if(NR==0){print "n/a"; exit} print (NR%2 ? v[(NR+1)/2] : int((v[NR/2]+v[NR/2+1])/2))}'; }

for tool in cc python3; do have "$tool" || { log "needs $tool"; exit 2; }; done
[ -x /usr/bin/time ] || { log "needs GNU time at /usr/bin/time"; exit 2; }
MUSL=""
if have musl-gcc; then MUSL=musl-gcc; else log "no musl-gcc (apt-get install musl-tools): static musl rows and the musl spawner skipped"; fi
HYPERFINE=${HYPERFINE:-}
if [ -z "$HYPERFINE" ] && have hyperfine; then HYPERFINE=$(command -v hyperfine); fi
if [ -z "${CT:-}" ]; then
  (cd "$ROOT" && cargo build --release --locked --quiet)
  TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
  CT=$(ls "$TARGET_DIR"/*/release/coldtrace 2>/dev/null | head -1)
fi
[ -x "$CT" ] || { log "no coldtrace binary (set CT)"; exit 2; }

# ---------------------------------------------------------------------------------------------
# The programs and the C spawner
cat >"$WORK/nolibc.c" <<'EOF'
/* No C library: _start reads argv[1] (MiB), maps and touches that much, exits. */
static long sys6(long n, long a, long b, long c, long d, long e, long f) {
    long r;
#if defined(__x86_64__)
    register long r10 __asm__("r10") = d, r8 __asm__("r8") = e, r9 __asm__("r9") = f;
    __asm__ volatile("syscall" : "=a"(r) : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
                     : "rcx", "r11", "memory");
#elif defined(__aarch64__)
    register long x8 __asm__("x8") = n, x0 __asm__("x0") = a, x1 __asm__("x1") = b,
        x2 __asm__("x2") = c, x3 __asm__("x3") = d, x4 __asm__("x4") = e, x5 __asm__("x5") = f;
    __asm__ volatile("svc 0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4), "r"(x5) : "memory");
    r = x0;
#endif
    return r;
}
#if defined(__x86_64__)
enum { NR_MMAP = 9, NR_EXIT_GROUP = 231 };
__asm__(".globl _start\n_start:\n mov %rsp,%rdi\n and $-16,%rsp\n call start_c\n hlt\n");
#elif defined(__aarch64__)
enum { NR_MMAP = 222, NR_EXIT_GROUP = 94 };
__asm__(".globl _start\n_start:\n mov x0,sp\n bl start_c\n");
#endif
__attribute__((used)) void start_c(long *sp) {
    long mib = 0;
    if (sp[0] > 1)
        for (char *p = ((char **)(sp + 1))[1]; *p >= '0' && *p <= '9'; p++) mib = mib * 10 + (*p - '0');
    if (mib) {
        char *m = (char *)sys6(NR_MMAP, 0, mib << 20, 3, 0x22, -1, 0);
        for (long i = 0; i < (mib << 20); i += 4096) ((volatile char *)m)[i] = 1;
    }
    sys6(NR_EXIT_GROUP, 0, 0, 0, 0, 0, 0);
    for (;;) {}
}
EOF
cat >"$WORK/cmain.c" <<'EOF'
#include <stdlib.h>
#include <string.h>
int main(int argc, char **argv) {
    long mib = argc > 1 ? atol(argv[1]) : 0;
    if (mib) {
        char *m = malloc(mib << 20);
        if (!m) return 1;
        memset(m, 1, mib << 20);
        __asm__ volatile("" : : "r"(m) : "memory");
    }
    return 0;
}
EOF
cat >"$WORK/spawner.c" <<'EOF'
/* A bare vfork spawner: vfork + execve + wait4; prints the child's ru_maxrss (KiB). */
#define _GNU_SOURCE
#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
int main(int argc, char **argv) {
    if (argc < 2) return 2;
    pid_t pid = vfork();
    if (pid == 0) { execv(argv[1], argv + 1); _exit(127); }
    int status;
    struct rusage ru;
    if (pid < 0 || wait4(pid, &status, 0, &ru) != pid) return 1;
    printf("%ld\n", ru.ru_maxrss);
    return !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}
EOF
cd "$WORK"
cc -O2 -static -nostdlib -fno-stack-protector -fno-pie -no-pie -o nolibc nolibc.c
cc -O2 -o dynamic_glibc cmain.c
PROGRAMS="nolibc dynamic_glibc"
if cc -O2 -static -o static_glibc cmain.c 2>/dev/null; then PROGRAMS="nolibc static_glibc dynamic_glibc"
else log "no static glibc (libc.a): static glibc rows skipped"; fi
if [ -n "$MUSL" ]; then
  $MUSL -O2 -static -o static_musl cmain.c
  PROGRAMS="$PROGRAMS static_musl"
  $MUSL -O2 -static -o spawner_musl spawner.c
fi
cc -O2 -o spawner_glibc spawner.c

# ---------------------------------------------------------------------------------------------
# One cell each: REPS runs, the median (and, for coldtrace, how many runs were marked ≤F)
gnu_time() { for _ in $(seq "$REPS"); do /usr/bin/time -f %M "$@" 2>&1 >/dev/null | tail -1; done | median; }
spawner() { local s=$1; shift; for _ in $(seq "$REPS"); do "./$s" "$@"; done | median; }
# coldtrace_cell [--minimal] PROGRAM ARGS: the default clones through the spawner, --minimal
# in-process (coldtrace's own resident set is the floor).
coldtrace_cell() {
  local opts=()
  if [ "$1" = --minimal ]; then opts=(--minimal); shift; fi
  rm -rf "$WORK/ct"
  "$CT" run -q -n "$REPS" "${opts[@]}" -o "$WORK/ct" -- "$@" 2>/dev/null || true
  python3 - "$WORK/ct/runs.jsonl" "$REPS" <<'PY'
import json, sys
import os
runs = [json.loads(l) for l in open(sys.argv[1])] if os.path.exists(sys.argv[1]) else []
rss = sorted(r["rusage"]["max_rss_kib"] for r in runs if r.get("rusage"))
floor = sorted(r["runner"]["vm_hwm_kib"] or 0 for r in runs if r.get("runner"))
marked = sum(1 for r in runs if r.get("max_rss_at_floor"))
med = lambda v: v[len(v) // 2] if v else "n/a"
mark = f" ≤F×{marked}" if marked else ""
print(f"{med(rss)}{mark}|{med(floor)}")
PY
}
hyperfine_cell() {
  [ -n "$HYPERFINE" ] || { echo "—"; return; }
  local cmd
  cmd=$(printf '%q ' "$@")
  "$HYPERFINE" -N --runs "$REPS" --warmup 0 --output null --export-json "$WORK/hf.json" "$cmd" \
    >/dev/null 2>&1 || { echo "n/a"; return; }
  python3 - "$WORK/hf.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["results"][0]
# hyperfine 2.0 (JSON schema 2): measurements[i].memory_peak_resident.value, bytes.
vals = sorted(int(m["memory_peak_resident"]["value"]) // 1024
              for m in r.get("measurements", []) if m.get("memory_peak_resident"))
print(vals[len(vals) // 2] if vals else "n/a")
PY
}

# ---------------------------------------------------------------------------------------------
echo "## max RSS ladder (KiB, median of $REPS runs each)"
echo
echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC'); kernel $(uname -r); $(nproc) CPUs;" \
  "$(awk -F': ' '/model name/{print $2; exit}' /proc/cpuinfo)"
echo "- load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
GNU_TIME_VERSION=$(dpkg-query -W -f '${Version}' time 2>/dev/null || /usr/bin/time --version 2>&1 | head -1)
echo "- coldtrace: $CT ($(stat -c %s "$CT") bytes); GNU time: $GNU_TIME_VERSION"
if [ -n "$HYPERFINE" ]; then echo "- hyperfine: $("$HYPERFINE" --version) ($HYPERFINE)"; else echo "- hyperfine: not found"; fi
echo "- command: tests/bench/rss_ladder.sh (REPS=$REPS)"
echo
echo "| program | MiB | GNU time | C vfork (glibc dyn) | C vfork (musl static) | coldtrace | its floor (spawner) | coldtrace --minimal | its floor (coldtrace) | hyperfine |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
for prog in $PROGRAMS; do
  for mib in $MIBS; do
    log "$prog $mib MiB"
    g=$(gnu_time "./$prog" "$mib")
    sg=$(spawner spawner_glibc "./$prog" "$mib")
    sm="—"; [ -n "$MUSL" ] && sm=$(spawner spawner_musl "./$prog" "$mib")
    IFS='|' read -r ct floor <<<"$(coldtrace_cell "./$prog" "$mib")"
    IFS='|' read -r ctm floorm <<<"$(coldtrace_cell --minimal "./$prog" "$mib")"
    hf=$(hyperfine_cell "./$prog" "$mib")
    echo "| $prog | $mib | $g | $sg | $sm | $ct | $floor | $ctm | $floorm | $hf |"
  done
done
echo
echo "\"≤F×k\": k of the $REPS coldtrace records marked the max RSS as at or below the floor: the"
echo "resident set of the process that cloned the child, exact from /proc (the spawner's after the"
echo "child's execve; with --minimal, coldtrace's own right before the spawn)."
