/* oblivious_avx2.c: the oblivious kernel for AVX2: 32 documents per register of byte codes (stored XOR 0x80 for the signed compare), a level is one vpcmpgtb and two byte adds. */
#define TS_ISA_FILE /* built with -mavx2 -mbmi -mbmi2 -mlzcnt -mpopcnt: see CMakeLists.txt */
#include "engines/oblivious.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

#define OB_LANES 32
#define OB(name) ob_avx2_##name

/* The leaf indexes of the group at c: per level, vpcmpgtb gives 0xFF (-1) in the lanes that
 * go right (codes and k XOR 0x80: the signed compare is the unsigned one), so
 * idx = 2 idx - mask. */
static inline __m256i ob_index(const uint8_t *c, const ob_level *lv, uint32_t d) {
    __m256i idx = _mm256_setzero_si256();
    for (uint32_t i = 0; i < d; i++) {
        const __m256i right =
            _mm256_cmpgt_epi8(_mm256_load_si256((const __m256i *)(c + lv[i].off)), _mm256_set1_epi8((char)lv[i].k));
        idx = _mm256_sub_epi8(_mm256_add_epi8(idx, idx), right);
    }
    return idx;
}

/* acc[l] += v[ix[l]] for the lanes l < n (and up to the next multiple of 4), four at a time. */
static inline void ob_add_loads(const uint8_t *ix, const double *v, size_t n, double *acc) {
    for (size_t l = 0; l < n; l += 4) {
        __m128d a = _mm_loadh_pd(_mm_load_sd(v + ix[l]), v + ix[l + 1]);
        __m128d b = _mm_loadh_pd(_mm_load_sd(v + ix[l + 2]), v + ix[l + 3]);
        __m256d w = _mm256_insertf128_pd(_mm256_castpd128_pd256(a), b, 1);
        _mm256_store_pd(acc + l, _mm256_add_pd(_mm256_load_pd(acc + l), w));
    }
}

static void ob_sym(const obl *L, const ob_tree *T, const uint8_t *codes, size_t step, size_t ng, size_t last,
                   double *acc) {
    const uint32_t d = T->depth;
    const ob_level *lv = L->levels + T->first;
    const double *v = L->leaves + T->leaf;
    if (d == 0) {
        const __m256d c = _mm256_set1_pd(v[0]);
        for (size_t i = 0; i < ng * 32; i += 4) _mm256_store_pd(acc + i, _mm256_add_pd(_mm256_load_pd(acc + i), c));
        return;
    }
    uint8_t ix[32] __attribute__((aligned(32))), hi[32] __attribute__((aligned(32)));
    for (size_t g = 0; g < ng; g++) {
        const uint8_t *c = codes + g * step;
        const size_t n = g + 1 == ng ? last : 32;
        if (d <= 8) {
            _mm256_store_si256((__m256i *)ix, ob_index(c, lv, d));
            ob_add_loads(ix, v, n, acc + g * 32);
        } else { /* 9 .. 16 levels: the index's high byte, then its low byte */
            _mm256_store_si256((__m256i *)hi, ob_index(c, lv, d - 8));
            _mm256_store_si256((__m256i *)ix, ob_index(c, lv + (d - 8), 8));
            ob_add_deep(v, hi, ix, n, acc + g * 32);
        }
    }
}

#include "engines/templates/oblivious_template.h"

const ob_kernels tse_oblivious_avx2 = {TS_ISA_AVX2, OB_LANES, ob_avx2_kernel, 0, ob_avx2_kernel_near};

#endif
