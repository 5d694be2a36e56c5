#!/usr/bin/env bash
# Checks what .ci/release produced, as a user would get it: the checksums, each tarball's and
# each .deb's contents (owners, modes, the binary's ELF machine, statically linked), the
# documents in each tarball (every relative link of them resolving inside it), and, on an
# amd64 Debian machine as root, the amd64 .deb installed with dpkg -i: coldtrace --version and
# run on a real command, man coldtrace, the completions found where bash-completion, zsh and fish
# look, then the package removed. The aarch64 binary is checked as a file only (no emulator here).
# Needs dpkg, lintian, readelf (binutils), man-db, groff, bash-completion, zsh and fish (.ci/run
# installs them). Usage: .ci/release_check.sh DIST_DIR
set -euo pipefail
DIST=$(realpath "$1")
cd "$(dirname "$0")/.."
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
fail() { printf 'FAIL: %s\n' "$*" >&2; exit 1; }

VERSION=$(cargo pkgid -p coldtrace | sed 's/.*[#@]//')
COMMIT=$([ -e .git ] && git rev-parse --short HEAD || echo unknown)

# Every artefact has its checksum beside it, and SHA256SUMS lists them all.
(cd "$DIST" && sha256sum --quiet -c -- *.sha256 SHA256SUMS) ||
  fail "a checksum does not match"
echo "checksums: $(ls "$DIST"/*.sha256 | wc -l) files match, and SHA256SUMS"

# ELF machine of a binary: the arch as readelf names it; statically linked (no loader asked for).
check_elf() {
  local bin=$1 machine=$2 header segments
  header=$(readelf -h "$bin")
  grep -q "Machine: *$machine\$" <<<"$header" || fail "$bin: $(grep Machine <<<"$header"), expected $machine"
  segments=$(readelf -lW "$bin")
  ! grep -q INTERP <<<"$segments" || fail "$bin asks for a dynamic loader"
}

# The documents of an unpacked tarball (TOP): README.md, CONTRIBUTING.md and docs/ as in the
# source tree, and every relative link of every shipped Markdown file resolving inside TOP (so
# that they read offline); besides the binary, man page, completions and licences, TOP holds
# nothing that no document links to.
. .ci/links.sh
check_documents() {
  local top=$1 tarball=$2 file path links=0 docs
  docs=$(cd "$top" && find . -type f ! -name coldtrace ! -name coldtrace.1 ! -path './complete/*' \
    ! -name 'LICENSE-*' -printf '%P\n' | sort)
  for file in README.md CONTRIBUTING.md $(find docs -type f | sort); do
    cmp -s "$file" "$top/$file" || fail "$tarball: $file is missing or not the source tree's"
  done
  local -A linked=([README.md]=1 [CONTRIBUTING.md]=1)
  while IFS= read -r file; do linked[$file]=1; done < <(find docs -type f)
  while IFS= read -r file; do
    [[ $file == *.md ]] || continue
    while IFS= read -r path; do
      links=$((links + 1))
      case $path in ../*) fail "$tarball: $file links to $path, outside the tarball" ;; esac
      [ -e "$top/$path" ] || fail "$tarball: $file links to $path, which it does not hold"
      linked[$path]=1
    done < <(linked_paths "$top" "$file")
  done <<<"$docs"
  while IFS= read -r file; do
    [ -n "${linked[$file]:-}" ] || fail "$tarball holds $file, which no document links to"
  done <<<"$docs"
  echo "$(basename "$tarball"): $(wc -l <<<"$docs") documents; their $links relative links all resolve inside it"
}

for arch in x86_64:amd64:'Advanced Micro Devices X86-64' aarch64:arm64:AArch64; do
  IFS=: read -r cpu debarch machine <<<"$arch"
  name=coldtrace-$VERSION-$cpu-unknown-linux-musl
  tarball=$DIST/$name.tar.gz
  listing=$(tar -tvzf "$tarball")
  # Every member under one directory; the binary, man page, completions and licences; the
  # documents (checked below); nothing else.
  ! tar -tzf "$tarball" | grep -v "^$name/" | grep -q . || fail "$tarball: a member outside $name/"
  for member in coldtrace coldtrace.1 LICENSE-APACHE LICENSE-MIT README.md CONTRIBUTING.md \
      complete/_coldtrace complete/coldtrace.bash complete/coldtrace.fish; do
    grep -qxF "$name/$member" <(tar -tzf "$tarball") || fail "$tarball has no $member"
  done
  ! awk '$2 != "0/0"' <<<"$listing" | grep -q . || fail "$tarball: a member is not owned by 0/0"
  grep -q "^-rwxr-xr-x 0/0 .* $name/coldtrace\$" <<<"$listing" || fail "$tarball: coldtrace is not 0755"
  mkdir -p "$WORK/$cpu"
  tar -xzf "$tarball" -C "$WORK/$cpu"
  check_elf "$WORK/$cpu/$name/coldtrace" "$machine"
  check_documents "$WORK/$cpu/$name" "$tarball"

  deb=$DIST/coldtrace_${VERSION}_$debarch.deb
  for field in Package:coldtrace Version:"$VERSION" Architecture:"$debarch"; do
    [ "$(dpkg-deb -f "$deb" "${field%%:*}")" = "${field#*:}" ] || fail "$deb: ${field%%:*} is not ${field#*:}"
  done
  files=$(dpkg-deb -c "$deb" | awk '$1 !~ /^d/ { print $6 }')
  [ "$files" = "$(printf '%s\n' ./usr/bin/coldtrace ./usr/share/bash-completion/completions/coldtrace \
    ./usr/share/doc/coldtrace/changelog.gz ./usr/share/doc/coldtrace/copyright \
    ./usr/share/fish/vendor_completions.d/coldtrace.fish ./usr/share/lintian/overrides/coldtrace \
    ./usr/share/man/man1/coldtrace.1.gz ./usr/share/zsh/vendor-completions/_coldtrace)" ] ||
    fail "$deb holds: $(tr '\n' ' ' <<<"$files")"
  # Debian's own checker: no error (its warnings and notes are shown).
  said=$(lintian --tag-display-limit 0 "$deb" 2>&1 | grep -v '^running with root privileges' || true)
  ! grep -q '^E:' <<<"$said" || fail "lintian finds errors in $deb: $said"
  echo "lintian $debarch: ${said:-nothing to say}"
  ! dpkg-deb -c "$deb" | awk '$2 != "root/root"' | grep -q . || fail "$deb: a file is not root's"
  dpkg-deb -x "$deb" "$WORK/deb-$debarch"
  first=$(gzip -dc "$WORK/deb-$debarch/usr/share/doc/coldtrace/changelog.gz" | head -1)
  [ "$first" = "coldtrace ($VERSION) unstable; urgency=medium" ] || fail "$deb: its changelog begins '$first'"
  check_elf "$WORK/deb-$debarch/usr/bin/coldtrace" "$machine"
  cmp -s "$WORK/deb-$debarch/usr/bin/coldtrace" "$WORK/$cpu/$name/coldtrace" ||
    fail "the $debarch .deb and the $cpu tarball hold different binaries"
  echo "$cpu: tarball and $debarch .deb hold the same static $machine binary ($(stat -c %s "$WORK/$cpu/$name/coldtrace") bytes), man page, completions, licences"
done
echo "aarch64: built and inspected, not run (no aarch64 CPU or emulator here)"

# The README's steps for one account, run as written in a fresh home (no ~/.local yet): the
# lines of its install block after "# or, for your account alone", with this version.
home=$WORK/home
mkdir -p "$home"
cp "$DIST/coldtrace-$VERSION-x86_64-unknown-linux-musl.tar.gz"* "$home/"
steps=$(sed -n '/^# or, for your account alone/,/^```$/p' README.md | grep -v -e '^#' -e '^```' |
  sed "s/0\.1\.0/$VERSION/g")
[ "$(wc -l <<<"$steps")" -ge 3 ] || fail "README: no install steps for one account found: $steps"
(cd "$home" && HOME=$home bash -euo pipefail -c "$steps") >/dev/null || fail "the README's steps failed: $steps"
got=$("$home/.local/bin/coldtrace" --version)
[ -f "$home/.local/share/man/man1/coldtrace.1" ] || fail "the README's steps installed no man page"
echo "README's steps in a fresh home: $got"

# Installed as a user installs it.
[ "$(id -u)" = 0 ] || fail "installing the .deb needs root"
[ "$(dpkg --print-architecture)" = amd64 ] || fail "installing needs an amd64 machine; this one is $(dpkg --print-architecture)"
deb=$DIST/coldtrace_${VERSION}_amd64.deb
dpkg -i "$deb" >/dev/null
trap 'dpkg -r coldtrace >/dev/null 2>&1 || true; rm -rf "$WORK"' EXIT
[ "$(command -v coldtrace)" = /usr/bin/coldtrace ] || fail "coldtrace on PATH is '$(command -v coldtrace)', not /usr/bin/coldtrace"
for path in $(dpkg -L coldtrace); do
  [ -e "$path" ] || fail "$path is listed by dpkg but not installed (a dpkg path-exclude in /etc/dpkg/dpkg.cfg.d?)"
done
got=$(coldtrace --version)
[ "$got" = "coldtrace $VERSION (commit $COMMIT, x86_64-unknown-linux-musl, full build)" ] ||
  fail "installed coldtrace --version: $got"

# A real command, three runs: every record exited 0, and every run's stdout as the command wrote it.
rc=0
(cd "$WORK" && coldtrace run -n 3 -o batch --keep-output -- gzip -c /usr/share/doc/coldtrace/copyright >run.out 2>run.err) || rc=$?
[ "$rc" = 0 ] || { cat "$WORK/run.err" >&2; fail "coldtrace run exited $rc"; }
[ "$(wc -l < "$WORK/batch/runs.jsonl")" = 3 ] || fail "runs.jsonl does not hold 3 records"
[ "$(grep -c '"outcome":{"kind":"exited","code":0}' "$WORK/batch/runs.jsonl")" = 3 ] || fail "a run did not exit 0"
for run in 000 001 002; do
  gzip -dc "$WORK/batch/runs/$run/stdout" | cmp -s - /usr/share/doc/coldtrace/copyright ||
    fail "run $run's stdout is not the gzipped copyright file"
done
# The table is the result, on stdout (as hyperfine's); stderr keeps progress and notices only.
grep -q '^coldtrace: 3 runs of gzip -c ' "$WORK/run.out" ||
  fail "no table on stdout: $(head -3 "$WORK/run.out")"
! grep -q '^coldtrace: 3 runs of ' "$WORK/run.err" || fail "the table is on stderr too"
echo "installed: coldtrace --version is '$got'; coldtrace run: 3 runs of gzip recorded, outputs intact"

# man coldtrace finds the installed page.
[ "$(man -w coldtrace)" = /usr/share/man/man1/coldtrace.1.gz ] || fail "man -w coldtrace: $(man -w coldtrace 2>&1)"
page=$(MANWIDTH=80 man coldtrace 2>&1 | col -b)
grep -q 'coldtrace - run a command and record exactly how it ran' <<<"$page" || fail "man coldtrace: $(head -5 <<<"$page")"
grep -q -- '--cold-first-only' <<<"$page" || fail "man coldtrace has no --cold-first-only"
echo "man coldtrace: $(wc -l <<<"$page") lines from /usr/share/man/man1/coldtrace.1.gz"

# Each shell finds the completions where it looks by itself.
complete=$(bash -c 'source /usr/share/bash-completion/bash_completion && _completion_loader coldtrace; complete -p coldtrace') ||
  fail "bash-completion does not load coldtrace's completions"
got=$(zsh -f -c "autoload -U compinit && compinit -u -d '$WORK/zcompdump'; print -r -- \$_comps[coldtrace]")
[ "$got" = _coldtrace ] || fail "zsh: coldtrace's completer is '$got', not _coldtrace"
got=$(cd "$WORK" && HOME=$WORK fish -c 'complete -C "coldtrace ru"' | cut -f1)
[ "$got" = run ] || fail "fish: 'coldtrace ru' completes to '$got'"
echo "completions: bash-completion loads '$complete'; zsh's compinit and fish find theirs"

dpkg -r coldtrace >/dev/null
! [ -e /usr/bin/coldtrace ] || fail "dpkg -r left /usr/bin/coldtrace"
! dpkg -s coldtrace 2>/dev/null | grep -q '^Status: install ok installed' || fail "coldtrace is still installed"
echo "removed: dpkg -r coldtrace leaves no /usr/bin/coldtrace"
