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
./scripts/setup_venv.sh
req=bench/requirements.txt
stamp=.venv/.bench-requirements.sha256
want=$(sha256sum "$req" | cut -d' ' -f1)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
    echo "bench: installing the peers (bench/requirements.txt)" >&2
    .venv/bin/python -m pip install --quiet --disable-pip-version-check -r "$req"
    echo "$want" > "$stamp"
fi
make --no-print-directory build
export TREESCORE_LIB=${TREESCORE_LIB:-$PWD/build/libtreescore.so}
.venv/bin/python bench/zoo.py "--$mode"
out=bench/results/peers-$mode-$(date +%Y%m%d-%H%M%S).json
.venv/bin/python bench/peers.py --batches 1,10,100,1000,10000 --threads 1,all --out "$out"
if [ -x bench/report ]; then
    .venv/bin/python bench/report "$out"
fi
