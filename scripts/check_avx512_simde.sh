#!/usr/bin/env bash
# check_avx512_simde.sh: on a CPU without AVX-512, run test_engines and test_f64 with the AVX-512 kernels (vqs, rapid, trees-simd, oblivious, deep) compiled through SIMDe and the CPU check claiming AVX-512.
#
#   scripts/check_avx512_simde.sh [BUILD_DIR] [--link-only]   (default build; needs its object files)
#
# --link-only compiles and links the tests without running them: make test does that on
# CPUs with AVX-512, so that a kernel SIMDe cannot compile is caught on every machine.
#
# make test runs it when this CPU lacks AVX-512, so that every kernel is tested on every
# machine (libdeflate's run_tests.sh masks CPU features one by one for the same reason;
# masking cannot add a level the CPU lacks, emulation can). SIMDe (libsimde-dev) maps the
# _mm512_* intrinsics to portable code; tests/simde/avx512_shims.h adds those it lacks.
# Only x86/*_avx512.c and platform/cpu.c are rebuilt; every other object is the build's.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
build=${1:-build}
link_only=${2:-}
objdir=$build/CMakeFiles/ts_objects.dir
[ -d "$objdir" ] || { echo "check_avx512_simde: no $objdir (build first)"; exit 1; }
[ -f /usr/include/simde/x86/avx512.h ] || { echo "check_avx512_simde: needs libsimde-dev (apt-get install libsimde-dev)"; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cflags=(-std=gnu11 -O1 -w -Wno-psabi -I"$root/include" -I"$root/src" -DTS_TEST_KNOBS=1)
for k in vqs rapid tsimd oblivious deep; do
    gcc "${cflags[@]}" -include "$root/tests/simde/avx512_shims.h" -c "src/engines/x86/${k}_avx512.c" -o "$work/${k}_avx512.o"
done
# trees-simd's VBMI kernels (the top levels by byte masks: vpermi2b, vpcmpub) through SIMDe too
gcc "${cflags[@]}" -include "$root/tests/simde/avx512_shims.h" -c src/engines/x86/tsimd_avx512vbmi.c -o "$work/tsimd_avx512vbmi.o"
# The CPU check claims AVX-512 (TREESCORE_ISA still caps it, so the tests' levels apply).
pattern='v = (int)apply_env_cap(tsr_isa_of_features(tsr_cpu_features()));'
grep -qF "$pattern" src/platform/cpu.c || { echo "check_avx512_simde: src/platform/cpu.c changed: update the pattern"; exit 1; }
# It claims GFNI and VBMI too, so that test_engines runs both of rapid's AVX-512 kernels (the
# GFNI update through SIMDe's gfni.h), oblivious's VBMI kernel and trees-simd's.
features='return v & ~DETECTED;'
grep -qF "$features" src/platform/cpu.c || { echo "check_avx512_simde: src/platform/cpu.c changed: update the pattern"; exit 1; }
sed -e "s/$(printf '%s' "$pattern" | sed 's/[][\.*^$/()]/\\&/g')/v = (int)apply_env_cap(TS_ISA_AVX512);/" \
    -e "s/$features/return (v \& ~DETECTED) | TSR_CPU_GFNI | TSR_CPU_AVX512VBMI;/" src/platform/cpu.c >"$work/cpu.c"
gcc "${cflags[@]}" -Isrc/platform -c "$work/cpu.c" -o "$work/cpu.o"
# (objects whose source is gone, left by an older build of a moved file, are not linked)
mapfile -t objs < <(find "$objdir" -name '*.o' ! -name "rapid_avx512.c.o" ! -name "vqs_avx512.c.o" ! -name "tsimd_avx512.c.o" ! -name "tsimd_avx512vbmi.c.o" ! -name "oblivious_avx512.c.o" ! -name "deep_avx512.c.o" ! -name "cpu.c.o" |
    while read -r o; do src=${o#"$objdir"/}; [ -f "${src%.o}" ] && echo "$o"; done)
# A CUDA build's GPU engines: their CUDA object and runtime, as CMakeLists.txt links them.
libs=()
if [ -d "$build/CMakeFiles/ts_cuda_objects.dir" ]; then
    mapfile -t -O "${#objs[@]}" objs < <(find "$build/CMakeFiles/ts_cuda_objects.dir" -name '*.o')
    cudart=$(sed -n 's/^CUDA_cudart_static_LIBRARY:[A-Z]*=//p' "$build/CMakeCache.txt")
    libs=("$cudart" -lstdc++ -lrt -ldl -lpthread)
fi
# test_engines (every engine, every kernel) and test_f64 (the double quantizers and
# trees-simd's float-first keys of double rows), the last summary line the verdict.
for t in test_engines test_f64; do
    gcc "${cflags[@]}" -Itests/unit -DTS_TEST_DATA_DIR="\"$root/tests/data\"" "tests/unit/$t.c" "${objs[@]}" "$work"/*.o -o "$work/$t" -lm -lpthread -ldl "${libs[@]}"
done
if [ "$link_only" = --link-only ]; then echo "check_avx512_simde: test_engines and test_f64 built through SIMDe (not run)"; exit 0; fi
echo "test_engines and test_f64 with the AVX-512 kernels through SIMDe (at once, one core each):"
# Each one's failures and its summary line ("test_x: N checks passed, M failed"); the exit
# status is 1 when either failed.
rc=0
(cd "$work" && ./test_engines >test_engines.log 2>&1) & engines=$!
(cd "$work" && ./test_f64 >test_f64.log 2>&1) || rc=1
wait "$engines" || rc=1
for t in test_engines test_f64; do grep -v ' ok$' "$work/$t.log" | tail -n 40; done
exit "$rc"
