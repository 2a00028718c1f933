#!/usr/bin/env bash
# tests/gpu/run.sh: the GPU engines on a machine with an NVIDIA GPU, in one command
# (docs/gpu.md): builds with CUDA, runs the GPU and engine tests on the real device,
# the conformance suite with --engine gpu and gpu-naive, then the benchmark (paper
# 003's grid: 1,000-20,000 trees x 32/64/256 leaves, batches of 1,000 to 1,000,000
# documents, kernel only and end to end, beside the best CPU engine on every core), and
# writes everything to one results file. Meant to finish in under 10 minutes; each
# stage has a time limit and the benchmark drops its largest models when time runs out.
#
#   tests/gpu/run.sh [RESULTS_FILE]      (default: build-gpu-run/gpu-results.txt)
#
# Environment: TS_GPU_BUILD (build directory, default build-gpu-run), PYTHON (the
# conformance suite's interpreter, default .venv/bin/python, else python3),
# TS_GPU_BUDGET_S (total seconds, default 570), TS_GPU_QUICK=1 (one small model only),
# TS_GPU_CTEST (ctest -R regex), TS_GPU_CONFORMANCE_S (its time limit), TS_GPU_THREADS_STAGE=0
# (no CPU threads stage), GPU_KINDS (gpu_bench --kinds for the real model), TS_GPU_ROWS
# (its batch sizes), TS_GPU_SWEEP_ROWS (the sweep's batch sizes, space-separated),
# TS_GPU_SWEEP_KINDS, TS_GPU_CONFORMANCE=0 (no conformance stage).
# Exit status: 0 when every stage that ran passed, 1 otherwise (the file says which).
set -u -o pipefail
cd "$(dirname "$0")/../.." || exit 1
REPO=$(pwd)
BUILD=${TS_GPU_BUILD:-build-gpu-run}
mkdir -p "$BUILD"
RESULTS=${1:-$BUILD/gpu-results.txt}
BUDGET=${TS_GPU_BUDGET_S:-570}
START=$(date +%s)
JOBS=$(nproc 2>/dev/null || echo 4)
FAILED=()
: >"$RESULTS"

log() { printf '%s\n' "$*" | tee -a "$RESULTS"; }
elapsed() { echo $(($(date +%s) - START)); }
left() { echo $((BUDGET - $(elapsed))); }
# spent NAME MIN_S: true (and NAME noted as skipped) when less than MIN_S of the budget is left.
spent() {
    [ "$(left)" -ge "$2" ] && return 1
    log "## $1: SKIPPED (time budget spent at $(elapsed) s)"
    FAILED+=("$1 (skipped)")
}
# stage NAME LIMIT_S CMD...: runs CMD with a time limit, its output into the results file.
stage() {
    local name=$1 limit=$2 rc
    shift 2
    spent "$name" 20 && return 1
    [ "$limit" -gt "$(left)" ] && limit=$(left)
    log "## $name (limit ${limit} s, at $(elapsed) s)"
    # through bash -c, so that CMD may be one of the exported functions below
    timeout --kill-after=10 "$limit" bash -c '"$@"' stage "$@" 2>&1 | tee -a "$RESULTS"
    rc=${PIPESTATUS[0]}
    if [ "$rc" -ne 0 ]; then
        log "## $name: FAILED (exit status $rc$([ "$rc" -eq 124 ] && echo ', time limit'))"
        FAILED+=("$name")
        return 1
    fi
    log "## $name: ok ($(elapsed) s)"
}

log "# treescore GPU run, $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
log "# commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD 2>/dev/null || echo ' (modified)')"
log "# host $(hostname), $JOBS CPUs: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
if command -v nvidia-smi >/dev/null; then
    nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv,noheader 2>&1 |
        sed 's/^/# gpu /' | tee -a "$RESULTS"
else
    log "# nvidia-smi not found"
fi

# 1. Build with CUDA (the configure step must find nvcc).
configure() {
    cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DTS_TESTS=ON -DTS_TEST_KNOBS=ON -DTS_CUDA=ON >"$BUILD/configure.log" 2>&1 ||
        { cat "$BUILD/configure.log"; return 1; }
    grep 'treescore: ' "$BUILD/configure.log"
    grep -q 'CUDA engines gpu and gpu-naive built' "$BUILD/configure.log" ||
        { echo "nvcc not found: put the CUDA toolkit's bin on PATH (or set CUDACXX)"; return 1; }
}
export BUILD
export -f configure
# only what the stages below run (the fuzzers and other unit tests are not needed here)
TARGETS="treescore gpu_bench test_gpu_engines test_gpu_emu test_engines test_f64 test_categorical test_wide_model test_concurrency"
if ! stage configure 120 configure || ! stage build 300 cmake --build "$BUILD" -j"$JOBS" --target $TARGETS; then
    log "# build failed: nothing else can run"
    exit 1
fi
TS="$BUILD/treescore"
stage "treescore info" 30 "$TS" info -m tests/data/models/xgb_small_logistic.json

# 2. The unit tests that score with every engine (test_gpu_engines: gpu and gpu-naive
# against naive on the device; test_categorical and test_wide_model loop over every
# engine id, the GPU ones included) and the emulated kernels.
stage "ctest (gpu, engines)" 240 ctest --test-dir "$BUILD" -j"$JOBS" --output-on-failure --timeout 200 \
    -R "${TS_GPU_CTEST:-gpu|test_engines|test_f64|test_categorical|test_wide_model|test_concurrency}"

# 3. The benchmark, on gpu_bench's tables (us per document, kernel only and end to end,
# beside a CPU engine: rapid on every core, the fastest CPU engine on large batches,
# timed on up to 20,000 rows of each batch). First a real model: the 500 LightGBM trees
# of bench/.cache/lgb_500x64 (bench/make_model.py; git-ignored, so carried to the GPU
# machine) repeated 40 times (bench/repeat_trees.py): 20,000 x 64 leaves, the shape of
# issue 26's targets, with real thresholds (at most 255 per feature, as histogram
# trainers make them). Then paper 003's grid on synthetic forests of exactly TREES x
# LEAVES on 136 features, whose thresholds are uniform random (thousands per feature:
# the byte-code kernels' worst case), smallest first, so that a spent budget drops the
# largest. GPU_KINDS: which kernels (gpu_bench --kinds; gpu:qs and gpu:codes were 3-4x
# slower than gpu:walk on the first H100 run, docs/gpu.md).
BENCH="$BUILD/tests/gpu_bench"
ROWS=${TS_GPU_ROWS:-1000,10000,100000,1000000}
SHAPES="20000x64 1000x32 1000x64 1000x256 5000x32 5000x64 5000x256 20000x32 20000x256"
KINDS=${GPU_KINDS:-gpu,gpu:nosplit,gpu:walk,gpu:walk-codes,gpu-naive}
[ "${TS_GPU_QUICK:-0}" = 1 ] && SHAPES="1000x64" ROWS=1000,100000
first=1
# bench_model LABEL LIMIT GPU_BENCH_ARGS...: one gpu_bench run, its table into the results.
bench_model() {
    local label=$1 limit=$2 rc
    shift 2
    spent "benchmark $label" 45 && return
    [ "$limit" -gt $(($(left) - 15)) ] && limit=$(($(left) - 15))
    timeout --kill-after=10 "$limit" "$BENCH" "$@" --cpu-engine rapid --cpu-threads "$JOBS" --cpu-rows 20000 \
        >"$BUILD/bench-$label.tsv" 2>"$BUILD/bench-$label.err"
    rc=$?
    if [ $first = 1 ]; then head -1 "$BUILD/bench-$label.tsv" | tee -a "$RESULTS"; first=0; fi
    tail -n +2 "$BUILD/bench-$label.tsv" | tee -a "$RESULTS"
    sed 's/^/# /' "$BUILD/bench-$label.err" | tee -a "$RESULTS"
    if [ $rc -ne 0 ]; then
        log "# benchmark $label: FAILED (exit status $rc$([ $rc -eq 3 ] && echo ': scores differ from naive')$([ $rc -eq 124 ] && echo ': time limit'))"
        FAILED+=("benchmark $label")
    fi
}
log "## benchmark (us per document; speedup_vs_cpu: the CPU engine's end-to-end time over this engine's)"
DEV=bench/.cache/lgb_500x64
PY3=${PYTHON:-python3}
M20K=""
if [ -f "$DEV/model.txt" ] && [ -f "$DEV/test.f32" ] && [ "${TS_GPU_QUICK:-0}" != 1 ]; then
    M20K="$BUILD/m20k.txt"
    "$PY3" bench/repeat_trees.py "$DEV/model.txt" 20000 "$M20K" | tee -a "$RESULTS"
    bench_model m20k-real 120 --model "$M20K" --rows "$ROWS" --reps 2 --kinds "$KINDS"
    # 4. Launch settings (gpu_bench --sweep): the walk kernels on that model under other
    # threads per block, tree-block sizes and slice sizes.
    for n in ${TS_GPU_SWEEP_ROWS:-200000}; do
        bench_model "sweep-m20k-$n" 90 --model "$M20K" --rows "$n" --reps 2 --sweep \
            --kinds "${TS_GPU_SWEEP_KINDS:-gpu:walk,gpu:walk-codes}"
    done
fi

# 5. One document on that 20,000-tree model across 1 to JOBS threads (issue 23: threads
# across trees; the CPU only).
if [ -n "$M20K" ] && [ "${TS_GPU_THREADS_STAGE:-1}" = 1 ]; then
    specs=""
    for t in 1 2 4 8 16 "$JOBS"; do
        [ "$t" -gt "$JOBS" ] && continue
        case ",$specs," in *",auto:threads=$t,"*) continue ;; esac
        specs="$specs${specs:+,}auto:threads=$t"
    done
    stage "one row, 20,000 trees, threads across trees" 90 "$TS" bench -m "$M20K" -d "$DEV/test.f32" \
        --engines "$specs" --batch 1 --rows 300 --repeat 7 --planner rule --quiet
fi

# 6. The conformance suite with the GPU engines (trains its models with LightGBM and
# XGBoost unless tests/conformance/.cache already has them); files whose libraries the
# interpreter lacks (CatBoost, skl2onnx, the treescore package) are left out, by name.
PY=${PYTHON:-}
[ -z "$PY" ] && [ -x .venv/bin/python ] && PY=.venv/bin/python
[ -z "$PY" ] && PY=python3
if [ "${TS_GPU_CONFORMANCE:-1}" = 0 ]; then
    log "## conformance: not run (TS_GPU_CONFORMANCE=0)"
elif "$PY" -c 'import pytest, numpy, lightgbm, xgboost' 2>/dev/null; then
    XDIST=()
    "$PY" -c 'import xdist' 2>/dev/null && XDIST=(-n 8)
    FILES=()
    for f in tests/conformance/test_*.py; do
        case $f in
        */test_catboost*) "$PY" -c 'import catboost' 2>/dev/null || { log "# $f left out: no catboost"; continue; } ;;
        */test_onnx*) "$PY" -c 'import skl2onnx, onnxmltools, onnxruntime' 2>/dev/null || { log "# $f left out: no skl2onnx/onnxmltools"; continue; } ;;
        esac
        if grep -q '^ *import treescore' "$f" && ! "$PY" -c 'import treescore' 2>/dev/null; then
            log "# $f left out: no treescore package"
            continue
        fi
        FILES+=("$f")
    done
    TS_BIN="$REPO/$TS" TS_ENGINES=gpu,gpu-naive stage "conformance (gpu, gpu-naive)" ${TS_GPU_CONFORMANCE_S:-200} \
        "$PY" -m pytest -q -p no:cacheprovider "${XDIST[@]}" "${FILES[@]}" tests/cli/test_gpu_cli.py
else
    log "## conformance: SKIPPED ($PY lacks pytest, numpy, lightgbm or xgboost: scripts/setup_venv.sh)"
    FAILED+=("conformance (skipped)")
fi

# 7. Paper 003's grid on synthetic forests (the engine gpu, its walk, gpu-naive).
for shape in $SHAPES; do
    trees=${shape%x*} leaves=${shape#*x}
    reps=3
    [ "$trees" -ge 20000 ] && reps=2
    bench_model "$shape" 150 --synthetic "$trees" "$leaves" 136 --rows "$ROWS" --reps $reps --kinds gpu,gpu-naive
done

log "# done in $(elapsed) s"
if [ ${#FAILED[@]} -ne 0 ]; then
    log "# NOT PASSED: ${FAILED[*]}"
    exit 1
fi
log "# every stage passed"
