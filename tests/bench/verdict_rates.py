#!/usr/bin/env python3
"""How often the verdict finds a real first-run penalty, and how often it claims one that is not
there: everyday commands run as cold batches (their files evicted with --evict, or the whole
page cache dropped with --drop-caches, before the first run only) and as warm batches (no cold
action; some beside two busy loops, so that the machine's contention is in the sample). Ground
truth is by construction: a cold batch whose first run read at least 1 MiB from storage has a
penalty to find; a warm batch has none to claim.

Prints counts and 95 % Wilson bounds (not a timed test; nothing is asserted). Needs root for
--drop-caches and for the tree's states. Usage:

    cargo build --release
    python3 tests/bench/verdict_rates.py [--warm 200] [--cold-rounds 3] [--runs 5]
        [--bin target/x86_64-unknown-linux-musl/release/coldtrace] > out.md
"""
import argparse
import json
import math
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time

HOME = os.path.expanduser("~")
PYENV = f"{HOME}/.pyenv/versions/3.11.7"
PYENV_LIB = f"{PYENV}/lib/python3.11"

# name, argv, the paths --evict empties (what the command reads), whether --drop-caches is used
# for it too (it drops every cache of the machine: a few commands only).
COMMANDS = [
    ("python3 import json", ["python3", "-c", "import json"],
     ["/usr/lib/python3.11", "/usr/lib/x86_64-linux-gnu/libpython3.11.so.1.0",
      "/usr/bin/python3.11"], True),
    ("python3 import email, http.client", ["python3", "-c", "import email, http.client"],
     ["/usr/lib/python3.11", "/usr/lib/x86_64-linux-gnu/libpython3.11.so.1.0",
      "/usr/bin/python3.11"], False),
    ("pyenv shim python -c pass", [f"{HOME}/.pyenv/shims/python3", "-c", "pass"],
     [f"{HOME}/.pyenv/libexec", f"{HOME}/.pyenv/shims", f"{PYENV}/bin", PYENV_LIB], True),
    ("pyenv python import requests", [f"{PYENV}/bin/python3", "-c", "import requests"],
     [PYENV_LIB, f"{PYENV}/bin", f"{PYENV}/lib/libpython3.11.so.1.0"], False),
    ("pyenv python import yaml", [f"{PYENV}/bin/python3", "-c", "import yaml"],
     [PYENV_LIB, f"{PYENV}/bin"], False),
    ("pyenv pip --version", [f"{PYENV}/bin/python3", "-m", "pip", "--version"],
     [PYENV_LIB, f"{PYENV}/bin"], False),
    ("perl -MPOSIX", ["perl", "-MPOSIX", "-e", "1"],
     ["/usr/lib/x86_64-linux-gnu/perl", "/usr/lib/x86_64-linux-gnu/perl-base",
      "/usr/share/perl", "/usr/lib/x86_64-linux-gnu/libperl.so.5.36.0", "/usr/bin/perl"],
     False),
    ("git status", ["git", "-C", "/work/main", "status", "--short"],
     ["/usr/local/bin/git", "/usr/local/libexec/git-core"], False),
    ("gcc -c hello.c", ["gcc", "-c", "-o", "/dev/null", "HELLO_C"],
     ["/usr/lib/gcc", "/usr/libexec/gcc", "/usr/bin/x86_64-linux-gnu-gcc-12",
      "/usr/include/stdio.h"], False),
    ("node -e 0", ["node", "-e", "0"], ["/usr/bin/node"], True),
    ("sqlite3 select 1", ["sqlite3", ":memory:", "select 1"],
     ["/usr/bin/sqlite3", "/usr/lib/x86_64-linux-gnu/libsqlite3.so.0"], False),
    ("jq --version", ["jq", "--version"],
     ["/usr/bin/jq", "/usr/lib/x86_64-linux-gnu/libjq.so.1",
      "/usr/lib/x86_64-linux-gnu/libonig.so.5"], False),
    ("man -w ls", ["man", "-w", "ls"],
     ["/usr/bin/man", "/usr/lib/man-db", "/usr/share/man/man1"], False),
    ("find /usr/share/doc", ["find", "/usr/share/doc", "-name", "*.gz"],
     ["/usr/bin/find"], True),
]

MIB = 1 << 20


def wilson(k, n, z=1.96):
    """The 95 % Wilson interval of k successes in n."""
    if n == 0:
        return (0.0, 1.0)
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return (max(0.0, centre - half), min(1.0, centre + half))


def batch(binary, out, argv, runs, cold, workdir):
    """One batch; its verdict and the first run's read bytes (None when it did not finish)."""
    args = [binary, "run", "-q", "-n", str(runs), "-o", out]
    if cold is not None:
        kind, paths = cold
        args.append("--cold-first-only")
        if kind == "evict":
            for p in paths:
                if os.path.exists(p):
                    args += ["--evict", p]
        else:
            args.append("--drop-caches")
    args.append("--")
    args += argv
    done = subprocess.run(args, cwd=workdir, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, timeout=600)
    try:
        with open(os.path.join(out, "batch.json")) as f:
            doc = json.load(f)
    except (OSError, ValueError):
        sys.stderr.write(f"no batch.json: {' '.join(args)}: {done.stderr[-300:]!r}\n")
        return None
    shutil.rmtree(out, ignore_errors=True)
    return doc.get("verdict")


def warm_up(argv, workdir):
    """Runs the command twice outside coldtrace, so that what it reads is cached: a warm batch
    has, by construction, no first-run penalty to find."""
    for _ in range(2):
        subprocess.run(argv, cwd=workdir, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, timeout=600)


def busy_loops(n):
    return [subprocess.Popen(["sh", "-c", "while :; do :; done"]) for _ in range(n)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default="target/x86_64-unknown-linux-musl/release/coldtrace")
    ap.add_argument("--warm", type=int, default=210, help="warm batches in all")
    ap.add_argument("--cold-rounds", type=int, default=3)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--keep", help="append every batch's verdict to this JSON-lines file")
    a = ap.parse_args()
    keep = open(a.keep, "a") if a.keep else None
    binary = os.path.abspath(a.bin)
    work = tempfile.mkdtemp(prefix="verdict-rates-")
    hello = os.path.join(work, "hello.c")
    with open(hello, "w") as f:
        f.write("#include <stdio.h>\nint main(void) { puts(\"hi\"); return 0; }\n")
    commands = [(n, [hello if w == "HELLO_C" else w for w in argv], paths, drop)
                for (n, argv, paths, drop) in COMMANDS]
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    seq = 0
    cold_rows = []  # (name, how, read, kind, states)
    for r in range(a.cold_rounds):
        for name, argv, paths, drop in commands:
            hows = [("evict", paths)] + ([("drop", None)] if drop and r == 0 else [])
            for how in hows:
                seq += 1
                v = batch(binary, os.path.join(work, f"b{seq}"), argv, a.runs, how, work)
                if keep and v is not None:
                    keep.write(json.dumps({"name": name, "cold": how[0], "verdict": v}) + "\n")
                    keep.flush()
                if v is not None:
                    cold_rows.append((name, how[0], v.get("first_read_bytes") or 0,
                                      v["kind"], v.get("states", [])))
    warm_rows = []  # (name, contended, kind, states, contention_ns)
    per = max(1, a.warm // len(commands))
    for i in range(per):
        contended = i % 3 == 2
        loops = busy_loops(2) if contended else []
        try:
            for name, argv, _, _ in commands:
                seq += 1
                warm_up(argv, work)
                v = batch(binary, os.path.join(work, f"b{seq}"), argv, a.runs, None, work)
                if keep and v is not None:
                    keep.write(json.dumps({"name": name, "cold": None, "contended": contended,
                                           "verdict": v}) + "\n")
                    keep.flush()
                if v is not None:
                    warm_rows.append((name, contended, v["kind"], v.get("states", []),
                                      v.get("contention_ns")))
        finally:
            for p in loops:
                p.kill()
                p.wait()
    shutil.rmtree(work, ignore_errors=True)
    report(a, started, cold_rows, warm_rows)


def report(a, started, cold_rows, warm_rows):
    load = open("/proc/loadavg").read().split()[:3]
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo")
                if l.startswith("model name")), "?")
    print(f"# verdict error rates\n")
    print(f"{started}, {os.cpu_count()}-CPU {cpu} VM, kernel {platform.release()}, "
          f"load {' '.join(load)} at the end; `python3 tests/bench/verdict_rates.py "
          f"--warm {a.warm} --cold-rounds {a.cold_rounds} --runs {a.runs}` "
          f"(`run -n {a.runs}` per batch)\n")
    print("## Cold batches (first run made cold; found = verdict `penalty`)\n")
    print("| command | how | batches | first read ≥ 1 MiB | found | states found |")
    print("|---|---|---:|---:|---:|---|")
    names = []
    for row in cold_rows:
        if (row[0], row[1]) not in names:
            names.append((row[0], row[1]))
    for name, how in names:
        rows = [r for r in cold_rows if (r[0], r[1]) == (name, how)]
        real = [r for r in rows if r[2] >= MIB]
        found = [r for r in real if r[3] == "penalty"]
        states = sorted({s for r in found for s in r[4]})
        print(f"| {name} | {how} | {len(rows)} | {len(real)} | {len(found)} | "
              f"{', '.join(states)} |")
    real = [r for r in cold_rows if r[2] >= MIB]
    found = sum(1 for r in real if r[3] == "penalty")
    lo, hi = wilson(found, len(real))
    print(f"\n**Found: {found} of {len(real)} cold batches whose first run read ≥ 1 MiB "
          f"({100 * found / max(1, len(real)):.1f} %; 95 % Wilson {100 * lo:.1f}–{100 * hi:.1f} %).**")
    missed = [r for r in real if r[3] != "penalty"]
    for r in missed:
        print(f"- missed: {r[0]} ({r[1]}), read {r[2] / MIB:.1f} MiB, verdict {r[3]}")
    print("\n## Warm batches (no cold action; claimed = verdict `penalty`)\n")
    print("| sample | batches | claimed | 95 % Wilson |")
    print("|---|---:|---:|---|")
    for label, keep in [("quiet (other sessions' load only)", False),
                        ("beside two busy loops", True)]:
        rows = [r for r in warm_rows if r[1] == keep]
        k = sum(1 for r in rows if r[2] == "penalty")
        lo, hi = wilson(k, len(rows))
        print(f"| {label} | {len(rows)} | {k} | {100 * lo:.1f}–{100 * hi:.1f} % |")
    k = sum(1 for r in warm_rows if r[2] == "penalty")
    lo, hi = wilson(k, len(warm_rows))
    print(f"| **all** | {len(warm_rows)} | {k} | {100 * lo:.1f}–{100 * hi:.1f} % |")
    for r in warm_rows:
        if r[2] == "penalty":
            print(f"- claimed: {r[0]}{' (contended)' if r[1] else ''}: {', '.join(r[3])}")
    kinds = {}
    for r in warm_rows:
        kinds[r[2]] = kinds.get(r[2], 0) + 1
    print(f"\nWarm verdicts by kind: {kinds}")


if __name__ == "__main__":
    main()
