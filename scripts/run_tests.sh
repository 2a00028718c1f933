#!/usr/bin/env bash
# run_tests.sh: `make test`: install test dependencies, build (-Werror), run unit, conformance
# (also per instruction set and single-threaded), CLI, benchmark smoke and sanitizer tests and the fuzzers,
# then print one pass/fail count for everything.
set -uo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
jobs=$(nproc 2>/dev/null || echo 2)
results=$(mktemp -d)
trap 'rm -rf "$results"' EXIT
failed_stages=()

# Each stage's wall time is printed when the next begins (the 20-minute budget on 2 cores:
# docs/testing.md), and the whole run's at the summary.
stage_name=""
stage_t0=$SECONDS
stage() {
    [ -n "$stage_name" ] && printf '(%s: %d s)\n' "$stage_name" $((SECONDS - stage_t0))
    stage_name="$*" stage_t0=$SECONDS
    printf '\n==== %s (at %d s)\n' "$*" "$SECONDS"
}
fail_stage() { failed_stages+=("$1"); echo "stage failed: $1"; }

# --- dependencies: Debian packages (clang and its runtime for fuzzing), pinned Python packages
stage "dependencies"
need_apt=()
command -v cmake >/dev/null || need_apt+=(cmake)
command -v clang >/dev/null || need_apt+=(clang)
if command -v clang >/dev/null && ! echo 'int LLVMFuzzerTestOneInput(const char*d,unsigned long n){(void)d;(void)n;return 0;}' |
    clang -x c -fsanitize=fuzzer,address - -o "$results/fuzzcheck" 2>/dev/null; then
    need_apt+=(libclang-rt-14-dev)
fi
python3 -c 'import venv, ensurepip' 2>/dev/null || need_apt+=(python3-venv)
# Without AVX-512 here, its kernels run through SIMDe (scripts/check_avx512_simde.sh);
# with it, they are still built through SIMDe, so that a machine without stays green.
avx512=$(grep -qw avx512bw /proc/cpuinfo 2>/dev/null && echo yes || echo no)
[ -f /usr/include/simde/x86/avx512.h ] || need_apt+=(libsimde-dev)
if [ ${#need_apt[@]} -gt 0 ]; then
    echo "installing Debian packages: ${need_apt[*]}"
    if [ "$(id -u)" = 0 ]; then
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}" >/dev/null ||
            fail_stage "apt-get install ${need_apt[*]}"
    else
        sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}" >/dev/null ||
            fail_stage "apt-get install ${need_apt[*]}"
    fi
fi
# The pinned Python packages (downloads and unpacking, about a core) install while the
# release build and its unit tests run (they need none of them); the Python stages wait.
venv_t0=$SECONDS
./scripts/setup_venv.sh >"$results/setup-venv.log" 2>&1 &
venv_pid=$!
py=$root/.venv/bin/python
# pytest runs its tests on every core (pytest-xdist, tests/requirements.txt; the suites are
# mostly one Python process each, waiting on one treescore or trainer at a time): TS_PYTEST_JOBS
# overrides, 1 runs them in one process as before
pyjobs=${TS_PYTEST_JOBS:-$jobs}
case "$pyjobs" in ''|*[!0-9]*|0) pyjobs=1 ;; esac
[ "$pyjobs" -gt 8 ] && pyjobs=8
# The trainers (OpenMP) beside a second pytest worker: passive waiting, or spinning threads
# starve each other (a 1,000-tree XGBoost fit: 128 s instead of 5 on 2 cores).
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-PASSIVE}
# ifelse's compiled models and the planner's wisdom file go to the build tree, not $HOME.
export TREESCORE_CACHE_DIR=$root/build/cache

# --- the layer order of docs/design.md: no #include points up, io formats stay apart,
# getenv only in src/platform/config.c (seconds; before the build, so it fails fast)
stage "layering (scripts/check_layers.py)"
python3 scripts/check_layers.py || fail_stage "layering"

# --- release build with warnings as errors, unit tests
stage "build (Release, -Wall -Wextra -Werror)"
if cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DTS_WERROR=ON -DTS_TESTS=ON -DTS_TEST_KNOBS=ON -DTS_SANITIZE=OFF -DTS_FUZZ=OFF -DTS_TSAN=OFF >/dev/null && cmake --build build -j "$jobs" >"$results/build.log" 2>&1; then
    stage "unit tests (ctest)"
    (cd build && ctest --output-on-failure -j "$jobs" --output-junit "$results/ctest.xml") || fail_stage "unit tests"
else
    cat "$results/build.log"; fail_stage "build"
fi

# --- the AVX-512 kernels (vqs, rapid, trees-simd) through SIMDe: run where this CPU has no
# AVX-512, built (a 3 s check) where it has
if [ "$avx512" = no ] && [ -d build/CMakeFiles/ts_objects.dir ]; then
    stage "AVX-512 kernels through SIMDe (this CPU has none): test_engines"
    ./scripts/check_avx512_simde.sh build >"$results/simde.log" 2>&1; simde_rc=$?
    tail -n 40 "$results/simde.log"
    [ "$simde_rc" = 0 ] || fail_stage "AVX-512 kernels through SIMDe"
elif [ -d build/CMakeFiles/ts_objects.dir ]; then
    stage "AVX-512 kernels through SIMDe: built (they run natively here)"
    ./scripts/check_avx512_simde.sh build --link-only >"$results/simde.log" 2>&1 ||
        { tail -20 "$results/simde.log"; fail_stage "AVX-512 kernels through SIMDe (build)"; }
fi

# --- the Python package: pip install . into .venv (scikit-build-core from tests/requirements.txt,
# no build isolation, the CMake tree kept in build/python so a rebuild is incremental), before
# the conformance stage, some of whose tests score DataFrames through it (test_catboost_ctr.py)
if wait "$venv_pid"; then
    printf '(python packages, beside the build and unit tests: %d s)\n' $((SECONDS - venv_t0))
else
    cat "$results/setup-venv.log"; fail_stage "python packages (tests/requirements.txt)"
fi
pyx=()
[ "$pyjobs" -gt 1 ] && "$py" -c 'import xdist' 2>/dev/null && pyx=(-n "$pyjobs")

stage "python package: pip install ."
pkg_ok=yes
"$py" -m pip install --quiet --disable-pip-version-check --no-build-isolation \
    --config-settings=build-dir=build/python . >"$results/pip-package.log" 2>&1 ||
    { cat "$results/pip-package.log"; fail_stage "python package (pip install .)"; pkg_ok=no; }

# --- conformance (real LightGBM/XGBoost models) and CLI behaviour, on the release binary
stage "conformance and CLI tests (pytest)"
TS_BIN=$root/build/treescore "$py" -m pytest -q -p no:cacheprovider "${pyx[@]}" tests/conformance tests/cli \
    --junitxml="$results/pytest.xml" || fail_stage "conformance/CLI tests"

# --- the Python package's tests
stage "python package (pytest python/tests, tests/fuzz/py_input_fuzz.py ${TS_PY_FUZZ_SECONDS:-15} s)"
if [ "$pkg_ok" = yes ]; then
    TS_BIN=$root/build/treescore "$py" -m pytest -q -p no:cacheprovider "${pyx[@]}" python/tests \
        --junitxml="$results/pytest-python.xml" || fail_stage "python package tests"
    # the input layer's fuzz target (atheris), bounded; a finding is written to $results
    "$py" tests/fuzz/py_input_fuzz.py -max_total_time="${TS_PY_FUZZ_SECONDS:-15}" -rss_limit_mb=4096 \
        -artifact_prefix="$results/py_input_fuzz-" >"$results/py_input_fuzz.log" 2>&1 ||
        { tail -40 "$results/py_input_fuzz.log"; fail_stage "python input fuzzing (tests/fuzz/py_input_fuzz.py)"; }
fi

# --- the examples as the README runs them: the Dask example on the bundled model (two local
# worker processes, the package installed above; about 10 s)
stage "examples (examples/dask_predict.py data/example/model.txt)"
timeout 300 "$py" examples/dask_predict.py data/example/model.txt || fail_stage "examples (Dask)"

# --- the benchmark suite's smoke test: tiny zoo models, every peer loads and agrees, the report renders
stage "benchmark smoke test (bench/zoo.py --smoke, bench/peers.py --check-only, bench/report)"
# (one process: its session fixture builds one smoke zoo in build/zoo-smoke)
TREESCORE_LIB=$root/build/libtreescore.so "$py" -m pytest -q -p no:cacheprovider tests/bench \
    --junitxml="$results/pytest-bench.xml" || fail_stage "benchmark smoke test"

# --- the vqs, rapid and oblivious kernels of each instruction set below this CPU's best (the run above used the
# best; at sse4.2 only vqs has a kernel of its own: rapid and oblivious take their scalar
# ones, which the scalar level ran), then with one thread per batch the engines whose
# one-thread path differs (rapid's blocks, trees-simd's split of a row's trees, auto's
# plan): TREESCORE_ISA caps the level the library detects, TS_THREADS makes tshelpers pass
# --threads to every `treescore score`. Every engine at every thread count: test_engines.
stage "conformance per ISA level (vqs, rapid, oblivious), and with --threads 1"
if [ -x build/treescore ]; then
    # "cpu: avx512 (this build can use scalar, sse4.2, avx2, avx512), 2 threads"
    levels=$(env -u TREESCORE_ISA build/treescore -V | sed -n 's/^cpu: .*can use \([^)]*\)).*/\1/p' | tr -d ' ' | tr ',' ' ')
    best=${levels##* }
    echo "instruction sets: ${levels:-unknown} (the main run used ${best:-the default})"
    [ -n "$levels" ] || fail_stage "treescore -V printed no cpu line"
    # A full conformance run takes about 10 s (models cached); should one take over 60 s,
    # the remaining levels run only the LightGBM/XGBoost files.
    conf=(tests/conformance)
    for lvl in $levels; do
        [ "$lvl" = "$best" ] && continue
        t0=$SECONDS
        engines=vqs,rapid,oblivious
        [ "$lvl" = sse4.2 ] && engines=vqs
        TS_BIN=$root/build/treescore TS_ENGINES=$engines TREESCORE_ISA=$lvl "$py" -m pytest -q -p no:cacheprovider "${pyx[@]}" \
            "${conf[@]}" --junitxml="$results/pytest-isa-$lvl.xml" || fail_stage "conformance ($engines, TREESCORE_ISA=$lvl)"
        if [ $((SECONDS - t0)) -gt 60 ]; then
            conf=(tests/conformance/test_lightgbm.py tests/conformance/test_xgboost.py
                  tests/conformance/test_real_models.py tests/conformance/test_double_input.py)
        fi
    done
    TS_BIN=$root/build/treescore TS_THREADS=1 TS_ENGINES=rapid,trees-simd,auto "$py" -m pytest -q -p no:cacheprovider "${pyx[@]}" tests/conformance \
        --junitxml="$results/pytest-threads1.xml" || fail_stage "conformance (--threads 1)"
else
    fail_stage "conformance per ISA level: no build/treescore"
fi

# --- the same unit and bad-input tests under AddressSanitizer + UndefinedBehaviorSanitizer;
# the conformance and CLI tests with naive (the loaders and readers), rapid, trees-simd and
# auto (the default's engines): every engine's kernels run under the sanitizers in ctest
# (test_engines, test_vpred: hostile forests, every ISA level, 1-300 rows)
stage "ASan+UBSan build and tests"
# -g1: line tables only (the reports' file:line), 59 s to build against 79 with -g
if cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DTS_SANITIZE=ON -DTS_WERROR=ON -DTS_TESTS=ON -DTS_TEST_KNOBS=ON -DCMAKE_C_FLAGS=-O1 -DCMAKE_C_FLAGS_DEBUG=-g1 >/dev/null &&
    cmake --build build-asan -j "$jobs" >"$results/build-asan.log" 2>&1; then
    (cd build-asan && ctest --output-on-failure -j "$jobs" --output-junit "$results/ctest-asan.xml") || fail_stage "unit tests (ASan+UBSan)"
    # TREESCORE_PLAN_TRIAL=1: every auto range with a runner-up contested (src/scorer/trial.h),
    # so that the trials run under the sanitizers whatever the timings say
    TS_BIN=$root/build-asan/treescore TS_ENGINES=naive,rapid,trees-simd,auto TREESCORE_PLAN_TRIAL=1 ASAN_OPTIONS=detect_leaks=1 "$py" -m pytest -q -p no:cacheprovider "${pyx[@]}" \
        tests/conformance tests/cli --junitxml="$results/pytest-asan.xml" || fail_stage "conformance/CLI tests (ASan+UBSan)"
else
    cat "$results/build-asan.log"; fail_stage "ASan+UBSan build"
fi

# --- concurrent scoring on one scorer under ThreadSanitizer
stage "ThreadSanitizer: one scorer, many threads; the thread pool; the 64-thread stress test"
if cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=Debug -DTS_TSAN=ON -DTS_WERROR=ON -DTS_TESTS=ON -DTS_TEST_KNOBS=ON -DCMAKE_C_FLAGS=-O1 -DCMAKE_C_FLAGS_DEBUG=-g1 >/dev/null &&
    cmake --build build-tsan -j "$jobs" --target test_concurrency test_runtime test_stress >"$results/build-tsan.log" 2>&1; then
    (cd build-tsan && ctest --output-on-failure -R 'test_concurrency|test_runtime|test_stress' --output-junit "$results/ctest-tsan.xml") ||
        fail_stage "concurrency test (TSan)"
else
    cat "$results/build-tsan.log"; fail_stage "ThreadSanitizer build"
fi

# --- fuzz every parser for a short bounded time
stage "fuzzing (libFuzzer, ${TS_FUZZ_SECONDS:-10} s per target)"
./scripts/run_fuzzers.sh "${TS_FUZZ_SECONDS:-10}" | tee "$results/fuzz.log" || fail_stage "fuzzing"

# --- one count for everything
stage "summary"
"$py" scripts/count_results.py "$results" "${#failed_stages[@]}" "${failed_stages[@]}"
