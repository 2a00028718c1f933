#!/usr/bin/env bash
# ifelse_compile.sh: what the ifelse engine's compile costs (C size, files, wall time, peak compiler RSS, .so size) and its speed, per bench model, as a markdown table.
# Usage: bench/ifelse_compile.sh [TREESCORE_BINARY]
#   Every model directory bench/.cache/lgb_*x32 and lgb_*x64 that has model.txt and
#   test.f32 is compiled once with a fresh empty cache (TREESCORE_CACHE_DIR), then timed
#   at 1 thread on ROWS documents (default 1000) with REPEAT repetitions (default 3).
#   TREESCORE_CC and TREESCORE_IFELSE_OPT are passed through (compiler, -O level).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-build/treescore}
rows=${ROWS:-1000}
reps=${REPEAT:-3}
[ -x "$bin" ] || { echo "ifelse_compile.sh: no treescore binary at $bin" >&2; exit 1; }
cache=$(mktemp -d "${TMPDIR:-/tmp}/ifelse-compile-XXXXXX")
trap 'rm -rf "$cache"' EXIT

echo "| model | trees x leaves | C source | files | jobs | compile wall | peak compiler RSS (link) | .so | us/doc (1 thread) |"
echo "|---|---|---|---|---|---|---|---|---|"
for dir in $(ls -d bench/.cache/lgb_*x32 bench/.cache/lgb_*x64 2>/dev/null | sort -t_ -k2 -n); do
    [ -f "$dir/model.txt" ] && [ -f "$dir/test.f32" ] || continue
    name=$(basename "$dir")
    mkdir "$cache/$name"
    if ! out=$(TREESCORE_CACHE_DIR="$cache/$name" TREESCORE_VERBOSE=1 "$bin" bench -m "$dir/model.txt" \
        -d "$dir/test.f32" --rows "$rows" --repeat "$reps" --threads 1 --engines ifelse --format tsv --quiet 2>&1); then
        echo "| $name | failed: $(tail -n 1 <<< "$out") |"
        continue
    fi
    miss=$(grep -m1 "ifelse: cache miss" <<< "$out" || true)
    # ifelse: cache miss, T trees in F files (S MB of C), compiled in W s with J jobs at -OX,
    # peak compiler RSS R MB (link L MB), O MB shared object, PATH
    fields=$(sed -E 's/.*miss, ([0-9]+) trees in ([0-9]+) files \(([0-9.]+) MB of C\), compiled in ([0-9.]+) s with ([0-9]+) jobs at (-O.), peak compiler RSS ([0-9]+) MB \(link ([0-9]+) MB\), ([0-9.]+) MB shared object.*/\2|\3 MB|\5|\4 s (\6)|\7 MB (\8 MB)|\9 MB/' <<< "$miss")
    us=$(awk -F'\t' '$1 == "ifelse" { print $4 }' <<< "$out")
    IFS='|' read -r files csize jobs wall rss so <<< "$fields"
    echo "| $name | ${name#lgb_} | $csize | $files | $jobs | $wall | $rss | $so | $us |"
done
