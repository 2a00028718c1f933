#!/usr/bin/env bash
# run_fuzzers.sh: build the libFuzzer targets (clang, ASan+UBSan) and fuzz each one for a fixed time.
#
# Usage: scripts/run_fuzzers.sh [SECONDS_PER_TARGET] [TARGET...]
#   SECONDS_PER_TARGET  default 20
#   TARGET              fuzz_lightgbm, fuzz_csv, ... (default: every tests/fuzz/fuzz_*.c)
# Environment: CC (default clang, else clang-14), BUILD_DIR (default <repo>/build-fuzz), JOBS (default 2:
#              the build's jobs), FUZZ_JOBS (targets fuzzed at once; default JOBS),
#              KEEP_TMP=1 keeps the temporary corpora even when everything passed,
#              RUNS=N stops a target after N executions (when that comes before SECONDS_PER_TARGET),
#              SKIP_BUILD=1 fuzzes the targets already built in BUILD_DIR (no configure or build),
#              MERGE=1 (the long runs that grow the committed corpora) merges what a target grew
#              back into tests/fuzz/corpus/<target>/, minimized (libFuzzer -merge=1), when it passed.
# A long run, one target at a time: MERGE=1 RUNS=2000000 scripts/run_fuzzers.sh 900 fuzz_csv
#
# Each target runs on a COPY of tests/fuzz/corpus/<target>/ plus tests/fuzz/regressions/<target>/
# in a temporary directory (the repository is never written, apart from BUILD_DIR and MERGE=1), with
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
# build type keeps -O1 with asserts on; -gline-tables-only gives a crash's file:line
# (OSS-Fuzz's choice) and builds faster than -g (three targets: 89 s against 100 s).
WORK=$(mktemp -d "${TMPDIR:-/tmp}/ts-fuzz.XXXXXX") || die "mktemp failed"
echo "fuzz: configuring $BUILD_DIR"
if ! cmake -S "$REPO" -B "$BUILD_DIR" -DCMAKE_C_COMPILER="$CC" -DCMAKE_BUILD_TYPE=Fuzz \
      -DCMAKE_C_FLAGS="-O1 -gline-tables-only" \
      -DTS_FUZZ=ON -DTS_SANITIZE=ON -DTS_TESTS=OFF >"$WORK/configure.log" 2>&1; then
  cat "$WORK/configure.log" >&2
  die "cmake configure failed (log kept in $WORK)"
fi
echo "fuzz: building ${TARGETS[*]}"
if [ "${SKIP_BUILD:-0}" = 1 ]; then
  for t in "${TARGETS[@]}"; do [ -x "$BUILD_DIR/fuzz/$t" ] || die "SKIP_BUILD=1 but $BUILD_DIR/fuzz/$t is not built"; done
elif ! cmake --build "$BUILD_DIR" -j "$JOBS" --target "${TARGETS[@]}" >"$WORK/build.log" 2>&1; then
  tail -n 40 "$WORK/build.log" >&2
  die "build failed (full log: $WORK/build.log)"
fi

# ---- fuzz -------------------------------------------------------------------------------
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:symbolize=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
# One target: fuzz it in $WORK/<target>, then write its line (and "ok"/"failed") to
# $WORK/<target>/result.txt. Up to FUZZ_JOBS targets run at once (default: JOBS; each
# libFuzzer process is single-threaded, so on 2 cores two targets take the time of one).
fuzz_one() {
  local t=$1
  local dir="$WORK/$t"
  mkdir -p "$dir/corpus" "$dir/regressions" "$dir/artifacts"
  [ -d "$REPO/tests/fuzz/corpus/$t" ] && find "$REPO/tests/fuzz/corpus/$t" -maxdepth 1 -type f -exec cp {} "$dir/corpus/" \;
  [ -d "$REPO/tests/fuzz/regressions/$t" ] && find "$REPO/tests/fuzz/regressions/$t" -maxdepth 1 -type f -exec cp {} "$dir/regressions/" \;
  local dict=()
  [ -f "$REPO/tests/fuzz/dict/$t.dict" ] && dict=("-dict=$REPO/tests/fuzz/dict/$t.dict")
  local log="$dir/log.txt" out="$dir/result.txt"
  local runs_arg=()
  [ -n "${RUNS:-}" ] && runs_arg=("-runs=$RUNS")
  "$BUILD_DIR/fuzz/$t" -max_total_time="$SECONDS_PER_TARGET" "${runs_arg[@]}" -max_len=65536 -timeout=10 \
    -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$dir/artifacts/" "${dict[@]}" \
    "$dir/corpus" "$dir/regressions" >"$log" 2>&1
  local rc=$?
  local runs rate cov crash
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -n 1 | sed 's/cov: //')
  crash=$(find "$dir/artifacts" -type f 2>/dev/null | head -n 1)
  : >"$out"
  if [ $rc -eq 0 ] && [ -z "$crash" ] && [ "${MERGE:-0}" = 1 ]; then
    # the committed corpus becomes the minimized union of what it had and what grew
    # (regression inputs stay in tests/fuzz/regressions/ and are not copied in)
    # (libFuzzer's merge keeps every input with a new feature, often many hundreds; the
    # committed set is the named seeds (files not named by a SHA-1, as libFuzzer names
    # what it finds) plus a greedy cover of the remaining edges, the control file's COV
    # lines, up to 400 files or the committed corpus's count if larger: scripts/fuzz_cover.py)
    (cd "$dir/corpus" && ls | grep -Ev '^[0-9a-f]{40}$') >"$dir/seeds.txt"
    local had=0
    [ -d "$REPO/tests/fuzz/corpus/$t" ] && had=$(find "$REPO/tests/fuzz/corpus/$t" -maxdepth 1 -type f | wc -l)
    local merged="$dir/merged"
    mkdir -p "$merged"
    if "$BUILD_DIR/fuzz/$t" -merge=1 -merge_control_file="$dir/merge.ctl" -max_len=65536 -timeout=10 \
         -rss_limit_mb=2048 "$merged" "$dir/corpus" >"$dir/merge.txt" 2>&1 &&
       python3 "$REPO/scripts/fuzz_cover.py" --keep "$had" "$dir/merge.ctl" "$dir/seeds.txt" >"$dir/cover.txt" && [ -s "$dir/cover.txt" ]; then
      local dest="$REPO/tests/fuzz/corpus/$t"
      mkdir -p "$dest"
      find "$dest" -maxdepth 1 -type f -delete
      while IFS= read -r f; do cp "$f" "$dest/"; done <"$dir/cover.txt"
      echo "$t: corpus merged into tests/fuzz/corpus/$t ($(ls "$dest" | wc -l) files)" >>"$out"
    else
      echo "$t: merge failed (log: $dir/merge.txt); corpus left as it was" >>"$out"
    fi
  fi
  if [ $rc -eq 0 ] && [ -z "$crash" ]; then
    echo "$t: ok (${runs:-?} runs, ${rate:-?} runs/s, cov ${cov:-?} edges)" >>"$out"
    echo ok >"$dir/status"
  else
    echo "$t: FAILED (exit $rc; crash file: ${crash:-none}; log: $log)" >>"$out"
    grep -E '^(SUMMARY|==[0-9]+==ERROR|fuzz contract violation|.*differ at row)' "$log" | head -n 5 | sed 's/^/    /' >>"$out"
    echo failed >"$dir/status"
  fi
}

FUZZ_JOBS=${FUZZ_JOBS:-$JOBS}
case "$FUZZ_JOBS" in ''|*[!0-9]*|0) FUZZ_JOBS=1 ;; esac
running=0
for t in "${TARGETS[@]}"; do
  if [ "$running" -ge "$FUZZ_JOBS" ]; then wait -n; running=$((running - 1)); fi
  fuzz_one "$t" &
  running=$((running + 1))
done
wait
passed=0
failed=0
for t in "${TARGETS[@]}"; do  # the lines in the targets' order, whatever order they ended in
  cat "$WORK/$t/result.txt" 2>/dev/null || echo "$t: FAILED (no result: the run was cut short)"
  if [ "$(cat "$WORK/$t/status" 2>/dev/null)" = ok ]; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
done

echo "fuzz: $passed passed, $failed failed"
if [ $failed -eq 0 ] && [ "${KEEP_TMP:-0}" != 1 ]; then
  rm -rf "$WORK"
else
  echo "fuzz: logs, corpora and crash files kept in $WORK"
fi
[ $failed -eq 0 ]
