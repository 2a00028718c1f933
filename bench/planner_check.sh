#!/bin/bash
# planner_check.sh [BIN]: issue 23's planner check: for each model and each batch size (BATCHES, default 1 4 11 48 1000: one in each of the ranges 1, 2-5, 8-15, 32-63, 128+), auto (planning afresh on the data's rows: no wisdom) beside every CPU engine, one thread; prints auto's engine, auto's time over the fastest engine's and its pick's (that engine's own row in the same run: free of the noise between two instances of one engine), and how many cells are within 5%.
cd "$(dirname "$0")/.."
B=${1:-build/treescore}
Z=bench/.cache/zoo
MODELS="bench/.cache/lgb_500x64/model.txt:bench/.cache/lgb_500x64/test.f32 $Z/models/msn-lgb-1000x64/model.txt:$Z/data/msn/test.f32 $Z/models/msn-lgb-1000x256/model.txt:$Z/data/msn/test.f32 $Z/models/msn-xgb-1000x64/model.json:$Z/data/msn/test.f32"
for md in $MODELS; do
  m=${md%%:*}; d=${md##*:}
  [ -f "$m" ] || { echo "skip $m (not built)"; continue; }
  for b in ${BATCHES:-1 4 11 48 1000}; do
    TREESCORE_WISDOM=off $B bench -m "$m" -d "$d" --rows 2000 --batch $b --threads 1 \
      --engines auto,naive,qs,vqs,ifelse,vpred,block-naive,block-vpred,rapid,trees-simd -r 5 2>&1 |
      awk -v m="$(basename "$(dirname "$m")")" -v b=$b '
        /^[a-z-]+ +(scalar|sse4.2|avx2|avx512) / { t[$1] = $5; if ($1 != "auto" && (best == "" || $5 < t[best])) best = $1 }
        /chose/ { match($0, /auto \(chose [a-z-]+/); ch = substr($0, RSTART + 12, RLENGTH - 12) }
        END { printf "%-18s batch %5d  auto %9.4f (%s)  fastest %-11s %9.4f  auto/fastest %.3f  pick/fastest %.3f\n", m, b, t["auto"], ch, best, t[best], t["auto"] / t[best], t[ch] / t[best] }'
  done
done | awk '{ print } $NF + 0 > 0 { n++; if ($(NF - 2) <= 1.05) ok++; if ($NF <= 1.05) okp++ } END { printf "%d of %d cells: auto within 5%% of the fastest engine; %d of %d: auto'"'"'s pick (timed as itself in the same run) within 5%%\n", ok, n, okp, n }'

