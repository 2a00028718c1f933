#!/bin/bash
# measure_batches.sh [BIN]: issue 23's figures, one thread: the dev model at batch 1, 16, 1000 (auto beside every engine), float32 against float64 rows on the demo and dev models, alternated.
cd "$(dirname "$0")/.."
B=${1:-build/treescore}
M=bench/.cache/lgb_500x64   # bench/make_model.py --trees 500 --leaves 64
echo "== CPU"; lscpu | grep -E "Model name|Flags" | cut -c1-120 | head -2; uptime
echo "== dev 500x64: batch 1, 16, 1000 (auto vs today's engines)"
for b in 1 16 1000; do $B bench -m $M/model.txt -d $M/test.f32 --rows 3000 --batch $b --threads 1 --engines auto,qs,vqs,vpred,ifelse,rapid,block-vpred,trees-simd -r 7 2>&1 | grep -E "^(auto|qs|vqs|vpred|ifelse|rapid|block|trees)" | awk -v b=$b '{print "b" b, $1, $5, $6}'; done
echo "== demo model f32/f64, batch 1 and 1000 (auto), alternated"
for i in 1 2 3; do for d in f32 f64; do for b in 1 1000; do echo -n "demo $d b$b: "; $B bench -m data/example/model.txt -d data/example/rank.test --batch $b --threads 1 --dtype $d --engines auto -r 7 2>&1 | grep -E "^auto" | awk '{print $5, $6}'; done; done; done
echo "== dev f32/f64 (auto)"
for i in 1 2; do for d in f32 f64; do for b in 1 1000; do echo -n "dev $d b$b: "; $B bench -m $M/model.txt -d $M/test.f32 --rows 3000 --batch $b --threads 1 --dtype $d --engines auto -r 7 2>&1 | grep -E "^auto" | awk '{print $5, $6}'; done; done; done
