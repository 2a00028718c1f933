/* leaves_avx512.h: one AVX-512 step shared by the byte-code engines' kernels (rapid, oblivious): leaf values of eight documents at a time added to their sums. */
#ifndef TS_ENGINES_COMMON_LEAVES_AVX512_H
#define TS_ENGINES_COMMON_LEAVES_AVX512_H

#ifndef TS_ISA_FILE
#error "leaves_avx512.h is for the AVX-512 kernel files (src/engines/x86/*_avx512.c)"
#endif

#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>

/* acc[l] += v[ix[l]] for the lanes l < n and up to the next multiple of 8, eight at a time, in place (each
 * document's sum gets one addition: the order of the trees is the caller's): the values
 * loaded in pairs into the halves of four registers (vmovsd, vmovhpd), joined, one vaddpd.
 * The compiler is kept from turning the loads into gathers by their being 128-bit loads
 * (vgatherqpd measured slower on Zen 4: docs/benchmarks.md). */
static inline void tsl_add_leaves8(const uint8_t *ix, size_t n, const double *v, double *acc) {
    for (size_t l = 0; l < n; l += 8) {
        __m128d a = _mm_loadh_pd(_mm_load_sd(v + ix[l]), v + ix[l + 1]);
        __m128d b = _mm_loadh_pd(_mm_load_sd(v + ix[l + 2]), v + ix[l + 3]);
        __m128d c = _mm_loadh_pd(_mm_load_sd(v + ix[l + 4]), v + ix[l + 5]);
        __m128d d = _mm_loadh_pd(_mm_load_sd(v + ix[l + 6]), v + ix[l + 7]);
        __m256d lo = _mm256_insertf128_pd(_mm256_castpd128_pd256(a), b, 1);
        __m256d hi = _mm256_insertf128_pd(_mm256_castpd128_pd256(c), d, 1);
        __m512d w = _mm512_insertf64x4(_mm512_castpd256_pd512(lo), hi, 1);
        _mm512_storeu_pd(acc + l, _mm512_add_pd(_mm512_loadu_pd(acc + l), w));
    }
}

#endif /* TS_ENGINES_COMMON_LEAVES_AVX512_H */
