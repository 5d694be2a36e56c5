# Relative links of Markdown files, for .ci/release (which ships the documents and what they
# link to) and .ci/release_check.sh (which checks that every one resolves in the tarball).
# Sourced, not run.

# relative_links FILE: each relative link target of the Markdown FILE, one a line, as written
# (relative to FILE's directory), without its #fragment: every `](target)` outside fenced code
# blocks, as tests/docs.rs reads them; web and mail links and links within FILE left out.
relative_links() {
  awk '/^[[:space:]]*```/ { fenced = !fenced; next } !fenced' "$1" |
    grep -oE '\]\([^)]*\)' |
    sed -e 's/^](//' -e 's/)$//' -e 's/#.*//' |
    grep -v -e '://' -e '^mailto:' -e '^$' |
    sort -u || true
}

# linked_paths ROOT FILE: each relative link target of ROOT/FILE as a path relative to ROOT
# (`../` resolved); a target outside ROOT is printed as it resolves, starting with `../`.
linked_paths() {
  local root=$1 file=$2 dir target
  dir=$(dirname "$file")
  relative_links "$root/$file" | while IFS= read -r target; do
    realpath -m --relative-to="$root" "$root/$dir/$target"
  done
}
