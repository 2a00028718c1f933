/* tsimd_avx512vbmi.c: the trees-simd kernels for AVX-512 with VBMI: tsimd_avx512.c's, and every tree's top levels decided by byte masks (vpermb, vpermi2b, vpcmpub). */
#define TS_ISA_FILE /* built with the AVX-512 flags and -mavx512vbmi: see CMakeLists.txt */
#define TSS_VBMI 1
#include "engines/x86/tsimd_avx512.c"
