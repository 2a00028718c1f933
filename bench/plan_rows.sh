#!/bin/bash
# plan_rows.sh [BIN] [N]: issue 23: the planner's picks per range of rows per call on synthetic rows (no sample) beside those on the data's rows (-d), N fresh plans each (no wisdom), one thread, on the dev and zoo models.
cd "$(dirname "$0")/.."
B=${1:-build/treescore}
N=${2:-3}
Z=bench/.cache/zoo
MODELS=${MODELS:-"bench/.cache/lgb_500x64/model.txt:bench/.cache/lgb_500x64/test.f32 $Z/models/msn-lgb-1000x64/model.txt:$Z/data/msn/test.f32 $Z/models/msn-lgb-1000x256/model.txt:$Z/data/msn/test.f32 $Z/models/msn-xgb-1000x64/model.json:$Z/data/msn/test.f32"}
picks() { # the plan table's engines, one word per range
  awk '/^plan: rows per call/ { on = 1; next } on && /^  [0-9]/ { sub(/,$/, "", $2); s = s " " $2; next } on { on = 0 } END { print s }'
}
for md in $MODELS; do
  m=${md%%:*}; d=${md##*:}
  [ -f "$m" ] || { echo "skip $m (not built)"; continue; }
  name=$(basename "$(dirname "$m")")
  echo "$name (ranges: $($B info -m "$m" --plan --planner rule --threads 1 | awk '/^plan: rows per call/ { on = 1; next } on && /^  [0-9]/ { s = s " " $1 } END { print s }'))"
  for k in $(seq "$N"); do
    s=$(TREESCORE_WISDOM=off $B info -m "$m" --plan --threads 1 | picks)
    r=$(TREESCORE_WISDOM=off $B info -m "$m" -d "$d" --plan --threads 1 2>&1 | picks)
    printf '  synthetic:%s\n  data:     %s\n' "$s" "$r"
  done
done
