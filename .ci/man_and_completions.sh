#!/usr/bin/env bash
# The man page rendered by man -l, and the zsh and fish completion scripts loaded by their own
# shells (bash's is tested under cargo test, tests/completions.rs). Needs man-db, groff, zsh and
# fish (.ci/run installs them). Usage: .ci/man_and_completions.sh COLDTRACE_BINARY
set -euo pipefail
BIN=$(realpath "$1")
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
fail() { printf 'FAIL: %s\n' "$*" >&2; exit 1; }

# man -l renders the roff with groff's warnings on; none may be printed, every line fits 80
# columns, and every option the page declares (.TP entries) is in the rendered text.
"$BIN" man > "$WORK/coldtrace.1"
MANWIDTH=80 man --warnings -l "$WORK/coldtrace.1" 2>"$WORK/man.err" | col -b > "$WORK/man.txt"
[ ! -s "$WORK/man.err" ] || { cat "$WORK/man.err" >&2; fail "man -l printed warnings"; }
grep -q '^NAME' "$WORK/man.txt" || fail "no NAME section in the rendered page"
grep -q 'coldtrace - run a command and record exactly how it ran' "$WORK/man.txt" ||
  fail "the NAME line is not rendered"
long=$(awk 'length > 80' "$WORK/man.txt" | head -1)
[ -z "$long" ] || fail "a rendered line is over 80 columns: $long"
options=$(grep -A1 '^\.TP' "$WORK/coldtrace.1" | grep -o '\\fB\\-\\-[a-z-]*' | sed 's/^\\fB\\-\\-/--/' | sort -u)
[ -n "$options" ] || fail "no option entry found in the roff"
for option in $options; do
  grep -q -- "$option" "$WORK/man.txt" || fail "$option is not in the rendered page"
done
echo "man -l: $(wc -l < "$WORK/man.txt") lines, no warnings, $(echo "$options" | wc -l) options rendered"

# zsh: the script parses, and once sourced after compinit it is the completer of coldtrace.
"$BIN" completions zsh > "$WORK/_coldtrace"
zsh -n "$WORK/_coldtrace" || fail "zsh cannot parse the zsh script"
got=$(zsh -f -c "autoload -U compinit && compinit -u -d '$WORK/zcompdump'; source '$WORK/_coldtrace'; print -r -- \$_comps[coldtrace]")
[ "$got" = _coldtrace ] || fail "zsh: coldtrace's completer is '$got', not _coldtrace"
echo "zsh: parses; compdef registers _coldtrace"

# fish: asked for completions with complete -C, as the shell asks on Tab.
"$BIN" completions fish > "$WORK/coldtrace.fish"
fish --no-execute "$WORK/coldtrace.fish" || fail "fish cannot parse the fish script"
mkdir -p "$WORK/ask/batch-a"
ask() { (cd "$WORK/ask" && fish -c "source '$WORK/coldtrace.fish'; complete -C '$1'" | cut -f1 | sort | tr '\n' ' '); }
[ "$(ask 'coldtrace ru')" = "run " ] || fail "fish: 'coldtrace ru' gives '$(ask 'coldtrace ru')'"
[ "$(ask 'coldtrace run --warm')" = "--warmup " ] || fail "fish: --warm gives '$(ask 'coldtrace run --warm')'"
[ "$(ask 'coldtrace completions ')" = "bash fish zsh " ] || fail "fish: completions gives '$(ask 'coldtrace completions ')'"
[ "$(ask 'coldtrace run --output ')" = "batch-a/ inherit null pipe " ] || fail "fish: --output gives '$(ask 'coldtrace run --output ')'"
case "$(ask 'coldtrace run -- ls')" in *"ls "*) ;; *) fail "fish: no command after --" ;; esac
[ "$(ask 'coldtrace report batch')" = "batch-a/ " ] || fail "fish: report's directories"
echo "fish: parses; complete -C gives subcommands, options, values and directories"
