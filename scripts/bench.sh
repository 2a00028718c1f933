#!/usr/bin/env bash
# bench.sh: `make bench` / `make bench-quick`: install the peers, build, make the model zoo, run treescore against its peers, write the report.
# Usage: scripts/bench.sh quick|full
#   quick: the zoo's small models (about 5 minutes to train on 2 cores, then about 15
#          minutes of timing); full: every model (about 17 hours of training; see
#          bench/zoo.py --full --estimate). Results: bench/results/peers-*.json, and
#          docs/benchmarks.md's peers section when bench/report exists.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-quick}
case "$mode" in quick | full) ;; *) echo "bench.sh: quick or full, not '$mode'" >&2; exit 2 ;; esac
./scripts/setup_venv.sh   # tests/ and bench/requirements.txt: the peers
make --no-print-directory build
export TREESCORE_LIB=${TREESCORE_LIB:-$PWD/build/libtreescore.so}
.venv/bin/python bench/zoo.py "--$mode"
out=bench/results/peers-$mode-$(date +%Y%m%d-%H%M%S).json
# quick: a compiled peer gets 10 minutes per model (lleaves on big models takes longer)
budget=$([ "$mode" = quick ] && echo 600 || echo 3600)
.venv/bin/python bench/peers.py --set "$mode" --batches 1,10,100,1000,10000 --threads 1,all \
    --latency 100,1000 --compile-timeout "$budget" --out "$out"
if [ -x bench/report ]; then
    .venv/bin/python bench/report "$out"
fi
