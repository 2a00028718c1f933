#!/usr/bin/env bash
# vqs_tables.sh: the measurements of docs/benchmarks.md for QuickScorer, BlockWise-QS, vQS per ISA and threads, in one run.
# Usage: bench/vqs_tables.sh [TREESCORE_BINARY] > tables.tsv   (makes missing models first; see bench/make_model.py)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-build/treescore}
py=${PYTHON:-.venv/bin/python}
reps=${REPS:-5}
# trees leaves training-rows documents-timed
models="1000 32 5000 10000
1000 64 20000 10000
10000 64 5000 2000
20000 64 5000 1000"
echo "$models" | while read -r trees leaves train rows; do
    dir=bench/.cache/lgb_${trees}x${leaves}
    [ -f "$dir/model.txt" ] || "$py" bench/make_model.py --trees "$trees" --leaves "$leaves" --rows "$train" --threads 1 >&2
    echo "# ${trees} trees x ${leaves} leaves, ${rows} documents, 1 thread, ${reps} repetitions"
    "$bin" bench -m "$dir/model.txt" -d "$dir/test.f32" --rows "$rows" --threads 1 --repeat "$reps" --format tsv \
        --engines qs:tau=all:delta=1,qs,vqs:isa=sse4.2,vqs:isa=avx2,vqs
    echo "# ${trees} trees x ${leaves} leaves, 10000 documents, threads"
    "$bin" bench -m "$dir/model.txt" -d "$dir/test.f32" --rows 10000 --repeat "$reps" --format tsv \
        --engines vqs:threads=1,vqs:threads=2,qs:threads=1,qs:threads=2
done
