#!/usr/bin/env bash
# run_fuzzers.sh: build the libFuzzer targets (clang, ASan+UBSan) and fuzz each one for a fixed time.
#
# Usage: scripts/run_fuzzers.sh [SECONDS_PER_TARGET] [TARGET...]
#   SECONDS_PER_TARGET  default 20
#   TARGET              fuzz_lightgbm, fuzz_csv, ... (default: every tests/fuzz/fuzz_*.c)
# Environment: CC (default clang, else clang-14), BUILD_DIR (default <repo>/build-fuzz), JOBS (default 2),
#              KEEP_TMP=1 keeps the temporary corpora even when everything passed.
#
# Each target runs on a COPY of tests/fuzz/corpus/<target>/ plus tests/fuzz/regressions/<target>/
# in a temporary directory (the repository is never written, apart from BUILD_DIR), with
# tests/fuzz/dict/<target>.dict when it exists. Output: one line per target,
#   fuzz_x: ok (N runs, R runs/s)     or     fuzz_x: FAILED (crash file: PATH)
# then "fuzz: N passed, M failed". Exit status 1 when any target failed, 2 when the
# build could not be made. Runs unattended (stdin is not read).
set -u

SECONDS_PER_TARGET=${1:-20}
shift $(( $# > 0 ? 1 : 0 ))
case "$SECONDS_PER_TARGET" in
  ''|*[!0-9]*) echo "run_fuzzers.sh: SECONDS_PER_TARGET must be a whole number, got '$SECONDS_PER_TARGET'" >&2; exit 2 ;;
esac

REPO=$(cd "$(dirname "$0")/.." && pwd)
if [ -z "${CC:-}" ]; then
  CC=clang
  command -v clang >/dev/null 2>&1 || ! command -v clang-14 >/dev/null 2>&1 || CC=clang-14
fi
BUILD_DIR=${BUILD_DIR:-$REPO/build-fuzz}
JOBS=${JOBS:-2}
exec </dev/null

die() { echo "run_fuzzers.sh: $*" >&2; exit 2; }

# ---- toolchain check --------------------------------------------------------------------
command -v "$CC" >/dev/null 2>&1 || die "compiler '$CC' not found; install clang (Debian: apt-get install clang-14 libclang-rt-14-dev) or set CC"
command -v cmake >/dev/null 2>&1 || die "cmake not found (Debian: apt-get install cmake)"
PROBE_DIR=$(mktemp -d "${TMPDIR:-/tmp}/ts-fuzz-probe.XXXXXX") || die "mktemp failed"
printf 'int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n);\nint LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n) { (void)d; (void)n; return 0; }\n' >"$PROBE_DIR/probe.c"
if ! "$CC" -fsanitize=fuzzer,address,undefined "$PROBE_DIR/probe.c" -o "$PROBE_DIR/probe" >"$PROBE_DIR/log" 2>&1; then
  cat "$PROBE_DIR/log" >&2
  rm -rf "$PROBE_DIR"
  die "'$CC -fsanitize=fuzzer,address,undefined' does not work (libFuzzer needs clang): the libFuzzer/sanitizer runtime is missing. On Debian/Ubuntu install it with: apt-get install libclang-rt-14-dev (the package for clang 14; use the one matching your clang version)"
fi
rm -rf "$PROBE_DIR"

# ---- build ------------------------------------------------------------------------------
mapfile -t ALL_TARGETS < <(cd "$REPO/tests/fuzz" && ls fuzz_*.c 2>/dev/null | sed 's/\.c$//')
[ ${#ALL_TARGETS[@]} -gt 0 ] || die "no tests/fuzz/fuzz_*.c targets found"
if [ $# -gt 0 ]; then TARGETS=("$@"); else TARGETS=("${ALL_TARGETS[@]}"); fi
for t in "${TARGETS[@]}"; do
  [ -f "$REPO/tests/fuzz/$t.c" ] || die "unknown target '$t' (have: ${ALL_TARGETS[*]})"
done

# TS_FUZZ=ON instruments the library too (fuzzer-no-link, see CMakeLists.txt). A custom
# build type keeps -O1 -g with asserts on.
WORK=$(mktemp -d "${TMPDIR:-/tmp}/ts-fuzz.XXXXXX") || die "mktemp failed"
echo "fuzz: configuring $BUILD_DIR"
if ! cmake -S "$REPO" -B "$BUILD_DIR" -DCMAKE_C_COMPILER="$CC" -DCMAKE_BUILD_TYPE=Fuzz \
      -DCMAKE_C_FLAGS="-O1 -g" \
      -DTS_FUZZ=ON -DTS_SANITIZE=ON -DTS_TESTS=OFF >"$WORK/configure.log" 2>&1; then
  cat "$WORK/configure.log" >&2
  die "cmake configure failed (log kept in $WORK)"
fi
echo "fuzz: building ${TARGETS[*]}"
if ! cmake --build "$BUILD_DIR" -j "$JOBS" --target "${TARGETS[@]}" >"$WORK/build.log" 2>&1; then
  tail -n 40 "$WORK/build.log" >&2
  die "build failed (full log: $WORK/build.log)"
fi

# ---- fuzz -------------------------------------------------------------------------------
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:symbolize=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
passed=0
failed=0
for t in "${TARGETS[@]}"; do
  dir="$WORK/$t"
  mkdir -p "$dir/corpus" "$dir/artifacts"
  for src in "$REPO/tests/fuzz/corpus/$t" "$REPO/tests/fuzz/regressions/$t"; do
    [ -d "$src" ] && find "$src" -maxdepth 1 -type f -exec cp {} "$dir/corpus/" \;
  done
  dict=()
  [ -f "$REPO/tests/fuzz/dict/$t.dict" ] && dict=("-dict=$REPO/tests/fuzz/dict/$t.dict")
  log="$dir/log.txt"
  "$BUILD_DIR/fuzz/$t" -max_total_time="$SECONDS_PER_TARGET" -max_len=65536 -timeout=10 \
    -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$dir/artifacts/" "${dict[@]}" \
    "$dir/corpus" >"$log" 2>&1
  rc=$?
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1)
  crash=$(find "$dir/artifacts" -type f 2>/dev/null | head -n 1)
  if [ $rc -eq 0 ] && [ -z "$crash" ]; then
    echo "$t: ok (${runs:-?} runs, ${rate:-?} runs/s)"
    passed=$((passed + 1))
  else
    echo "$t: FAILED (exit $rc; crash file: ${crash:-none}; log: $log)"
    grep -E '^(SUMMARY|==[0-9]+==ERROR|fuzz contract violation|.*differ at row)' "$log" | head -n 5 | sed 's/^/    /'
    failed=$((failed + 1))
  fi
done

echo "fuzz: $passed passed, $failed failed"
if [ $failed -eq 0 ] && [ "${KEEP_TMP:-0}" != 1 ]; then
  rm -rf "$WORK"
else
  echo "fuzz: logs, corpora and crash files kept in $WORK"
fi
[ $failed -eq 0 ]
