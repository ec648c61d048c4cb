#!/usr/bin/env bash
# Golden test: runs every case of tests/golden/cases.txt with the given strata binary, normalises the output and
# compares it byte for byte with tests/golden/expected/NAME.out. See tests/golden/README.md.
#
# Usage: bash tests/golden/golden.sh STRATA_BINARY [--update] [--only REGEX]
#   --update      rewrite expected/NAME.out from the current output (then review `git diff tests/golden`)
#   --only REGEX  run only the cases whose name matches the extended regular expression REGEX
#
# Each case line is NAME<TAB>ARGS; the harness runs `"$STRATA" ARGS` with /bin/sh from the repository root, stdin
# from /dev/null, stdout and stderr merged; {out} in ARGS is replaced by a fresh, single-quoted scratch directory;
# later commands of a case line call the binary as "$STRATA" (exported). The recorded output is the normalised
# text, then "[no newline at end of output]" if the text does not end with a newline, then "exit: N".
set -euo pipefail
export LC_ALL=C

usage() {
  echo "usage: bash tests/golden/golden.sh STRATA_BINARY [--update] [--only REGEX]" >&2
  exit 2
}

[ $# -ge 1 ] || usage
binary=$1
shift
update=0
only=
while [ $# -gt 0 ]; do
  case $1 in
    --update) update=1 ;;
    --only)
      [ $# -ge 2 ] || usage
      only=$2
      shift
      ;;
    *) usage ;;
  esac
  shift
done

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
cases=$here/cases.txt
expected_dir=$here/expected

case $binary in
  /*) ;;
  *) binary=$PWD/$binary ;;
esac
if [ ! -x "$binary" ] || [ -d "$binary" ]; then
  echo "golden.sh: $binary is not an executable file" >&2
  exit 2
fi
export STRATA=$binary
# A hung case fails after this many seconds instead of hanging the test (every case takes well under 3 s).
case_timeout=${GOLDEN_TIMEOUT:-60}
use_timeout=0
if command -v timeout > /dev/null 2>&1; then use_timeout=1; fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/strata-golden.XXXXXX")
trap 'rm -rf -- "$tmp"' EXIT

# The volatile-output normaliser: the ONLY rewrites applied before comparing (keep this list minimal; README.md).
#   1. `plan`'s search summary line "search: ..., 0.087 s": the trailing wall-clock seconds -> "<T> s".
#   2. `plan --per-stage`'s "per-stage gain over the best uniform plan: ...; search 24.169 s, ..." -> "search <T> s,".
#   3. The plan file's (`--json`) wall-clock search time: "search_time_s": 0.0178 -> "search_time_s": <T>.
normalise() {
  sed -E \
    -e '/^search:/ s/[0-9][0-9.]* s$/<T> s/' \
    -e '/^per-stage gain over the best uniform plan:/ s/; search [0-9][0-9.]* s,/; search <T> s,/' \
    -e 's/"search_time_s": *[-+0-9.eE]+/"search_time_s": <T>/g' \
    "$1"
}

# run_case NAME ARGS OUTFILE: run one case and write its normalised record to OUTFILE.
run_case() {
  local name=$1 args=$2 outfile=$3
  local scratch=$tmp/scratch/$name
  rm -rf -- "$scratch"
  mkdir -p -- "$scratch"
  local cmd="\"\$STRATA\" ${args//\{out\}/\'$scratch\'}"
  local raw=$tmp/raw.txt rc=0
  if [ "$use_timeout" = 1 ]; then
    (cd "$root" && timeout "$case_timeout" /bin/sh -c "$cmd" < /dev/null > "$raw" 2>&1) || rc=$?
  else
    (cd "$root" && /bin/sh -c "$cmd" < /dev/null > "$raw" 2>&1) || rc=$?
  fi
  normalise "$raw" > "$outfile"
  if [ -s "$outfile" ] && [ -n "$(tail -c 1 "$outfile")" ]; then
    printf '\n[no newline at end of output]\n' >> "$outfile"
  fi
  printf 'exit: %s\n' "$rc" >> "$outfile"
  rm -rf -- "$scratch"
}

passed=0
failed=0
failed_names=()
declare -A seen=()
lineno=0
mkdir -p -- "$expected_dir"
while IFS= read -r line <&3 || [ -n "$line" ]; do
  lineno=$((lineno + 1))
  case $line in
    '' | '#'*) continue ;;
  esac
  if [[ $line != *$'\t'* ]]; then
    echo "golden.sh: cases.txt:$lineno: no TAB between NAME and ARGS" >&2
    exit 2
  fi
  name=${line%%$'\t'*}
  args=${line#*$'\t'}
  if [[ ! $name =~ ^[A-Za-z0-9_.-]+$ ]] || [ -z "$args" ]; then
    echo "golden.sh: cases.txt:$lineno: bad case name '$name' or empty ARGS" >&2
    exit 2
  fi
  if [ -n "${seen[$name]+x}" ]; then
    echo "golden.sh: cases.txt:$lineno: duplicate case name '$name'" >&2
    exit 2
  fi
  seen[$name]=1
  if [ -n "$only" ] && [[ ! $name =~ $only ]]; then continue; fi

  actual=$tmp/$name.out
  run_case "$name" "$args" "$actual"
  expected=$expected_dir/$name.out
  if [ "$update" = 1 ]; then
    if [ -f "$expected" ] && cmp -s "$expected" "$actual"; then
      echo "unchanged $name"
    else
      cp -- "$actual" "$expected"
      echo "updated   $name"
    fi
    passed=$((passed + 1))
  elif [ ! -f "$expected" ]; then
    echo "FAIL $name: no expected/$name.out (run with --update to create it)"
    failed=$((failed + 1))
    failed_names+=("$name")
  elif cmp -s "$expected" "$actual"; then
    echo "ok   $name"
    passed=$((passed + 1))
  else
    echo "FAIL $name: output differs from expected/$name.out (first 40 lines of the diff):"
    diff -u --label "expected/$name.out" --label "actual/$name.out" "$expected" "$actual" > "$tmp/diff.txt" || true
    head -n 40 "$tmp/diff.txt"
    failed=$((failed + 1))
    failed_names+=("$name")
  fi
done 3< "$cases"

# Expected files with no case line: removed by --update, reported otherwise.
if [ -z "$only" ]; then
  for f in "$expected_dir"/*.out; do
    [ -e "$f" ] || continue
    n=$(basename "$f" .out)
    if [ -z "${seen[$n]+x}" ]; then
      if [ "$update" = 1 ]; then
        rm -f -- "$f"
        echo "removed   $n (no longer in cases.txt)"
      else
        echo "warning: expected/$n.out has no case in cases.txt (--update removes it)"
      fi
    fi
  done
fi

if [ "$failed" -gt 0 ]; then
  echo "failed cases: ${failed_names[*]}"
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
