#!/usr/bin/env bash
# counters.sh: paper 001's counters (instructions, branch mispredictions, cache misses per document per tree) per engine, simulated by valgrind's callgrind because perf cannot read counters on the build machine.
# Usage: bench/counters.sh [TREESCORE_BINARY] [MODEL_DIR] [DOCS] > counters.md
#   MODEL_DIR default bench/.cache/lgb_1000x64 (model.txt + test.f32, see bench/make_model.py).
#   Only ts_scorer_score is counted (--toggle-collect); bench calls it twice per engine
#   (warm-up and one repetition) on DOCS documents. The simulated caches are a 48 KiB L1d
#   and, as the "last level", a 2 MiB L2 (this machine's per-core sizes); the branch
#   predictor is callgrind's simple model, so mispredictions are indicative only.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-build/treescore}
dir=${2:-bench/.cache/lgb_1000x64}
docs=${3:-200}
engines=${ENGINES:-naive,ifelse,vpred,block-naive,block-vpred,qs,vqs,rapid}
export TREESCORE_CACHE_DIR=${TREESCORE_CACHE_DIR:-$PWD/bench/.cache/ifelse}
command -v valgrind >/dev/null || { echo "counters.sh: valgrind is not installed" >&2; exit 1; }
trees=$("$bin" info -m "$dir/model.txt" | sed -n 's/^trees: *//p')
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "model $dir ($trees trees), $docs documents, 1 thread; per document per tree:"
echo
echo "| engine | instructions | branch mispredictions | L1d misses | L2 misses |"
echo "|---|---:|---:|---:|---:|"
for e in ${engines//,/ }; do
    "$bin" bench -m "$dir/model.txt" -d "$dir/test.f32" --engines "$e" --rows "$docs" --repeat 1 --threads 1 --quiet \
        >/dev/null 2>&1 || true # warm the ifelse cache outside valgrind
    valgrind --tool=callgrind --callgrind-out-file="$tmp/cg.out" --toggle-collect=ts_scorer_score \
        --branch-sim=yes --cache-sim=yes --D1=49152,12,64 --LL=2097152,16,64 \
        "$bin" bench -m "$dir/model.txt" -d "$dir/test.f32" --engines "$e" --rows "$docs" --repeat 1 --threads 1 \
        --quiet >/dev/null 2>"$tmp/vg.log"
    # events: Ir Dr Dw I1mr D1mr D1mw ILmr DLmr DLmw Bc Bcm Bi Bim
    callgrind_annotate "$tmp/cg.out" 2>/dev/null | awk -v e="$e" -v n=$((2 * docs * trees)) '
        /^Events shown:/ { for (i = 3; i <= NF; i++) col[$i] = i - 2 }
        / PROGRAM TOTALS/ { gsub(",", ""); gsub(/\([^)]*\)/, ""); $0 = $0; for (k in col) v[k] = $(col[k]) }
        END { printf "| %s | %.1f | %.3f | %.3f | %.3f |\n", e, v["Ir"] / n, (v["Bcm"] + v["Bim"]) / n,
                     (v["D1mr"] + v["D1mw"]) / n, (v["DLmr"] + v["DLmw"]) / n }'
done
