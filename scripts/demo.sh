#!/usr/bin/env bash
# demo.sh: the main job on the bundled example: rank the Yahoo LTR sample's test queries.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-build/treescore}
model=data/example/model.txt
data=data/example/rank.test

echo "== the model ($model)"
"$bin" info -m "$model"
echo
echo "== top 10 of the first 3 test queries (qid, rank, row, score, label)"
"$bin" rank -m "$model" -d "$data" --top 10 --print-queries 3
echo
echo "== engines side by side on the same $(grep -c . "$data") documents"
"$bin" bench -m "$model" -d "$data" --engines naive,qs,vqs,ifelse,vpred,block-naive,block-vpred,rapid,trees-simd,auto --threads 1 --repeat 7
