#!/usr/bin/env bash
# tests/docs/doc_examples: runs every example command of the documentation as written and fails when one exits
# non-zero (issue 40: the documented first run must work). Examples are the lines starting `strata ` inside the
# ```sh blocks of README.md and docs/*.md (a trailing `\` continues a line), and the `Example:`/`Examples:`
# lines of every sub-command's --help. Each file's (or sub-command's) examples run in order in one fresh
# directory holding a link to examples/, so a block can make the plan.json its next line reads.
# Markers, on the line before a command inside a ```sh block:
#   # doc-test: skip REASON    the command is not run (REASON names the issue or the missing user file)
# A command that needs a tool (--screenshot: Chromium; --backend slurm without --slurm-dry-run: Slurm) is skipped
# with a message where the tool is absent, except under CI=true, where that is a failure (CI installs them).
# Usage: doc_examples.sh STRATA_BINARY SOURCE_DIR
set -uo pipefail
STRATA=$(readlink -f "$1")
SRC=$(readlink -f "$2")
WORK=$(mktemp -d /tmp/strata-doc-examples.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$WORK/bin"
ln -s "$STRATA" "$WORK/bin/strata"  # strata finds strata-exec beside the file the link points to
export PATH="$WORK/bin:$PATH"
RAN=0 SKIPPED=0 FAILED=0

missing_tool() {
  case "$1" in
    *--screenshot*)
      command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 ||
        command -v google-chrome >/dev/null 2>&1 || echo chromium ;;
  esac
  case "$1" in
    *"--backend slurm"*) [[ "$1" == *--slurm-dry-run* ]] || command -v sbatch >/dev/null 2>&1 || echo slurm ;;
  esac
}

# run_one SOURCE DIR COMMAND SKIP_REASON
run_one() {
  local src=$1 dir=$2 cmd=$3 skip=$4 tool
  if [ -n "$skip" ]; then
    echo "SKIP ($skip): $src: $cmd"
    SKIPPED=$((SKIPPED + 1))
    return
  fi
  tool=$(missing_tool "$cmd")
  if [ -n "$tool" ]; then
    if [ "${CI:-}" = "true" ]; then
      echo "FAIL: $src: $cmd: needs $tool, which CI must install (scripts/setup)"
      FAILED=$((FAILED + 1))
    else
      echo "SKIP (no $tool here): $src: $cmd"
      SKIPPED=$((SKIPPED + 1))
    fi
    return
  fi
  RAN=$((RAN + 1))
  local t0=$SECONDS rc
  (cd "$dir" && timeout 300 bash -c "$cmd") >"$WORK/out.txt" 2>&1 </dev/null
  rc=$?
  if [ $rc -ne 0 ]; then
    echo "FAIL (exit $rc): $src: $cmd"
    tail -n 15 "$WORK/out.txt" | sed 's/^/    /'
    FAILED=$((FAILED + 1))
  else
    echo "ok ($((SECONDS - t0)) s): $src: $cmd"
  fi
}

new_dir() {
  local d
  d=$(mktemp -d "$WORK/run.XXXXXX")
  ln -s "$SRC/examples" "$d/examples"
  echo "$d"
}

# The ```sh blocks of one Markdown file: "SKIP<TAB>REASON" or "CMD<TAB>COMMAND" lines.
md_commands() {
  awk '
    /^```/ { if (inb) { inb = 0 } else { inb = ($0 ~ /^```sh[ \t]*$/) } skip = ""; buf = ""; next }
    !inb { next }
    { buf = buf $0 }
    buf ~ /\\$/ { sub(/[ \t]*\\$/, " ", buf); next }
    {
      line = buf; buf = ""
      sub(/^[ \t]+/, "", line)
      if (line ~ /^# doc-test: skip/) { skip = line; sub(/^# doc-test: skip[ \t]*/, "", skip); next }
      if (line ~ /^strata /) { printf "%s\t%s\n", (skip == "" ? "-" : skip), line; skip = "" }
    }' "$1"
}

# The example lines of one sub-command's --help: after "Example:"/"Examples:", lines starting `strata `
# (several on one line are separated by "; "), a trailing `\` joining the next line.
help_commands() {
  "$STRATA" "$1" --help 2>/dev/null | awk '
    /^[ \t]*Examples?:/ { inex = 1; sub(/^[ \t]*Examples?:[ \t]*/, ""); if ($0 ~ /^[ \t]*$/) next }
    inex && /^[ \t]*$/ { inex = 0; next }
    !inex { next }
    { sub(/^[ \t]+/, "") }
    cont != "" { $0 = cont " " $0; cont = "" }
    /\\$/ { sub(/[ \t]*\\$/, ""); cont = $0; next }
    /^strata / { n = split($0, parts, /; /); for (i = 1; i <= n; i++) if (parts[i] ~ /^strata /) print parts[i]; next }
    { inex = 0 }'
}

for md in "$SRC/README.md" "$SRC"/docs/*.md; do
  dir=""
  while IFS=$'\t' read -r skip cmd; do
    [ -z "$dir" ] && dir=$(new_dir)
    [ "$skip" = "-" ] && skip=""
    run_one "${md#"$SRC"/}" "$dir" "$cmd" "$skip"
  done < <(md_commands "$md")
done

# The sub-command names: the list's entries are indented by two spaces (their multi-line descriptions, which may
# quote a `strata ...` example, continue deeper or start with "strata").
subs=$("$STRATA" --help | awk 'toupper($0) ~ /^SUBCOMMANDS:/ { on = 1; next }
  on && /^  [a-z][a-z-]*( |$)/ && $1 != "strata" && !seen[$1]++ { print $1 }')
[ -n "$subs" ] || { echo "FAIL: no sub-commands found in strata --help"; exit 1; }
for sub in $subs; do
  dir=""
  while IFS= read -r cmd; do
    [ -z "$dir" ] && dir=$(new_dir)
    run_one "strata $sub --help" "$dir" "$cmd" ""
  done < <(help_commands "$sub")
done

echo "doc examples: $RAN ran, $SKIPPED skipped, $FAILED failed"
[ $RAN -ge 20 ] || { echo "FAIL: only $RAN examples found (the extraction broke?)"; exit 1; }
[ $FAILED -eq 0 ]
