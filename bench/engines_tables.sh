#!/usr/bin/env bash
# engines_tables.sh: issue 4's tables for docs/benchmarks.md: every engine on 1,000-20,000 trees x 32/64 leaves, one thread, in paper 001 Table 2's style.
# Usage: bench/engines_tables.sh [TREESCORE_BINARY] > tables.md
#   Makes missing models first (bench/make_model.py; 20,000 x 64 trains in about 6 minutes).
#   ifelse compiles each model once into TREESCORE_CACHE_DIR (default bench/.cache/ifelse):
#   its compile time is reported by bench/ifelse_compile.sh, not here.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-build/treescore}
py=${PYTHON:-.venv/bin/python}
reps=${REPS:-5}
export TREESCORE_CACHE_DIR=${TREESCORE_CACHE_DIR:-$PWD/bench/.cache/ifelse}
engines=qs,naive,ifelse,vpred,block-naive,block-vpred,vqs,rapid
# trees leaves documents-timed
models="1000 32 5000
1000 64 5000
5000 32 2000
5000 64 2000
10000 32 1000
10000 64 1000
20000 32 1000
20000 64 1000"
echo "cpu: $("$bin" -V | sed -n 's/^cpu: //p'); $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //')"
echo
echo "| model | $(echo "$engines" | sed 's/,/ | /g') |"
echo "|---|$(echo "$engines" | sed 's/[^,]*/---:/g; s/,/|/g')|"
prep=$(mktemp)
trap 'rm -f "$prep"' EXIT
echo "$models" | while read -r trees leaves rows; do
    dir=bench/.cache/lgb_${trees}x${leaves}
    [ -f "$dir/model.txt" ] || "$py" bench/make_model.py --trees "$trees" --leaves "$leaves" --rows 5000 --threads 1 >&2
    tsv=$("$bin" bench -m "$dir/model.txt" -d "$dir/test.f32" --rows "$rows" --threads 1 --repeat "$reps" \
        --format tsv --quiet --engines "$engines" 2>"$prep.err")
    sed -n "s/^# prepare ms[^:]*:/${trees} x ${leaves}:/p" "$prep.err" >>"$prep"
    # rows of the tsv: engine isa threads median min max speedup(vs qs, the first engine)
    echo "$tsv" | awk -v name="${trees} x ${leaves}" -F'\t' '
        NR == 1 { next }
        { cell[NR - 1] = sprintf("%.2f (%.2fx)", $4, $7); n = NR - 1 }
        END { printf "| %s |", name; for (i = 1; i <= n; i++) printf " %s |", cell[i]; printf "\n" }'
done
rm -f "$prep.err"
echo
echo "Microseconds per document (median of $reps repetitions, one thread) and, in parentheses, the speedup over qs (BlockWise-QS, the first column)."
echo
echo "Prepare milliseconds (ts_scorer_create; ifelse: generating and compiling, unless the cache had it):"
echo
sed 's/^/    /' "$prep"
