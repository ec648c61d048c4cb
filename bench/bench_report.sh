#!/usr/bin/env bash
# bench/bench_report: size of the report of a 1024-GPU plan and how long headless Chromium takes to render it.
# Usage: bench/bench_report.sh [path/to/strata]   (needs Debian's chromium: `make setup-browser`)
# Prints the plan and report times, the HTML size, the in-page render time (navigation start → every section
# drawn, from the page's data-render-ms) and the browser's wall time (start-up included), for --dump-dom and a
# 1300x2400 screenshot. Targets (issue 19): < 5 MB and < 5 s.
set -euo pipefail
STRATA=${1:-build/bin/strata}
BROWSER=${STRATA_BROWSER:-$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)}
[ -n "$BROWSER" ] || { echo "bench_report: no chromium installed (make setup-browser)" >&2; exit 1; }
DIR=$(mktemp -d)
trap 'rm -rf "$DIR"' EXIT
now() { date +%s.%N; }
t0=$(now)
"$STRATA" plan --model gpt3-175b --cluster dgx-a100:128 --gbs 1536 --threads 2 --json "$DIR/plan.json" >/dev/null
t1=$(now)
"$STRATA" report --plan "$DIR/plan.json" --out "$DIR/report.html" --quiet >/dev/null
t2=$(now)
bytes=$(stat -c %s "$DIR/report.html")
flags=(--headless --no-sandbox --disable-gpu --disable-dev-shm-usage --no-first-run --user-data-dir="$DIR/profile")
t3=$(now)
timeout 120 "$BROWSER" "${flags[@]}" --dump-dom "file://$DIR/report.html" 2>/dev/null > "$DIR/dom.html"
t4=$(now)
timeout 120 "$BROWSER" "${flags[@]}" --window-size=1300,2400 --screenshot="$DIR/shot.png" "file://$DIR/report.html" \
  >/dev/null 2>&1
t5=$(now)
render_ms=$(grep -o 'data-render-ms="[0-9]*"' "$DIR/dom.html" | grep -o '[0-9]*' || echo "?")
sed -n '1,/<script type="application\/json"/p' "$DIR/dom.html" > "$DIR/drawn.html"  # drawn elements only
rows=$(grep -o 'class="gantt-row"' "$DIR/drawn.html" | wc -l)
boxes=$(grep -o 'class="t ' "$DIR/drawn.html" | wc -l)
echo "plan (gpt3-175b, dgx-a100:128 = 1024 GPUs, gbs 1536, 2 threads): $(echo "$t1 - $t0" | bc) s"
echo "report generation (simulation + sensitivity + HTML):            $(echo "$t2 - $t1" | bc) s"
echo "report size:                                                    $bytes bytes ($(echo "scale=2; $bytes / 1048576" | bc) MiB)"
echo "in-page render time (navigation start -> all sections drawn):   ${render_ms} ms ($rows Gantt rows, $boxes boxes)"
echo "chromium --dump-dom wall time (browser start-up included):      $(echo "$t4 - $t3" | bc) s"
echo "chromium --screenshot wall time (browser start-up included):    $(echo "$t5 - $t4" | bc) s"
