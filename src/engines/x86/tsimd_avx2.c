/* tsimd_avx2.c: the trees-simd kernel for AVX2: 8 trees per register, four blocks of them stepped together. */
#define TS_ISA_FILE /* built with -mavx2 -mbmi -mbmi2 -mlzcnt -mpopcnt: see CMakeLists.txt */
#include "engines/tsimd.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#include <math.h>

/* As tsimd_avx512.c, with lane masks in vector registers (all ones: active) and
 * vpgatherdd / vgatherdps of 8 lanes. */
#define TSS_G 4

static void tss_values8(const tss *L, const float *row, float *v) {
    const __m256 zr = _mm256_set1_ps(TSM_ZERO_RANGE), sign = _mm256_set1_ps(-0.0f);
    for (uint32_t s = 0; s < L->n_slots_pad; s += 8) {
        __m256i col = _mm256_loadu_si256((const __m256i *)(L->slot_col + s));
        __m256 x = _mm256_i32gather_ps(row, col, 4);
        __m256 miss = _mm256_cmp_ps(x, x, _CMP_UNORD_Q);
        __m256 z = _mm256_castsi256_ps(
            _mm256_cmpeq_epi32(_mm256_loadu_si256((const __m256i *)(L->slot_zero + s)), _mm256_set1_epi32(1)));
        miss = _mm256_or_ps(miss, _mm256_and_ps(z, _mm256_cmp_ps(_mm256_andnot_ps(sign, x), zr, _CMP_LE_OQ)));
        _mm256_store_ps(v + s, _mm256_blendv_ps(x, _mm256_loadu_ps(L->slot_miss + s), miss));
    }
    v[0] = -INFINITY;
}

static void tss_avx2(const tss *L, const float *x, size_t n_rows, size_t stride, double *out, void *scratch) {
    float *v = scratch;
    int32_t *lv = (int32_t *)((char *)scratch + tss_round64((size_t)L->n_slots_pad * sizeof(float)));
    const uint32_t K = L->levels;
    const __m256i inner = _mm256_set1_epi32((int)((1u << K) - 1)), one = _mm256_set1_epi32(1);
    const __m256i zero = _mm256_setzero_si256();
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const uint32_t nb = (L->n_trees + 7) / 8;
    const int *slot = (const int *)L->slot, *ex = L->exit;
    const float *thr = L->thr;
    for (size_t r = 0; r < n_rows; r++) {
        tss_values8(L, x + r * stride, v);
        double acc = L->base_score;
        for (uint32_t b0 = 0; b0 < nb; b0 += TSS_G) {
            __m256i e[TSS_G], leaf[TSS_G], m[TSS_G];
            int any[TSS_G];
            const uint32_t ng = nb - b0 < TSS_G ? nb - b0 : TSS_G;
            for (uint32_t g = 0; g < TSS_G; g++) {
                if (g < ng) {
                    const uint32_t t0 = (b0 + g) * 8, cnt = L->n_trees - t0 < 8 ? L->n_trees - t0 : 8;
                    e[g] = _mm256_loadu_si256((const __m256i *)(L->root + t0));
                    m[g] = _mm256_andnot_si256(_mm256_cmpgt_epi32(zero, e[g]),
                                               _mm256_cmpgt_epi32(_mm256_set1_epi32((int)cnt), lane));
                } else {
                    e[g] = zero;
                    m[g] = zero;
                }
                leaf[g] = e[g];
                any[g] = !_mm256_testz_si256(m[g], m[g]);
            }
            while (any[0] | any[1] | any[2] | any[3]) {
                __m256i j[TSS_G];
                for (uint32_t g = 0; g < TSS_G; g++) j[g] = zero;
                for (uint32_t d = 0; d < K; d++)
                    for (uint32_t g = 0; g < TSS_G; g++) {
                        if (!any[g]) continue;
                        __m256i idx = _mm256_add_epi32(e[g], j[g]);
                        __m256i s = _mm256_mask_i32gather_epi32(zero, slot, idx, m[g], 4);
                        __m256 t = _mm256_mask_i32gather_ps(_mm256_setzero_ps(), thr, idx, _mm256_castsi256_ps(m[g]), 4);
                        __m256 val = _mm256_mask_i32gather_ps(_mm256_setzero_ps(), v, s, _mm256_castsi256_ps(m[g]), 4);
                        __m256i right = _mm256_castps_si256(_mm256_cmp_ps(val, t, _CMP_NLE_UQ));
                        j[g] = _mm256_sub_epi32(_mm256_add_epi32(_mm256_add_epi32(j[g], j[g]), one), right);
                    }
                for (uint32_t g = 0; g < TSS_G; g++) {
                    if (!any[g]) continue;
                    __m256i idx = _mm256_add_epi32(e[g], _mm256_sub_epi32(j[g], inner));
                    __m256i nx = _mm256_mask_i32gather_epi32(e[g], ex, idx, m[g], 4);
                    __m256i lm = _mm256_and_si256(m[g], _mm256_cmpgt_epi32(zero, nx));
                    leaf[g] = _mm256_blendv_epi8(leaf[g], nx, lm);
                    e[g] = nx;
                    m[g] = _mm256_andnot_si256(lm, m[g]);
                    any[g] = !_mm256_testz_si256(m[g], m[g]);
                }
            }
            for (uint32_t g = 0; g < ng; g++) _mm256_store_si256((__m256i *)(lv + 8 * g), leaf[g]);
            const uint32_t cnt = L->n_trees - b0 * 8 < 8 * ng ? L->n_trees - b0 * 8 : 8 * ng;
            for (uint32_t i = 0; i < cnt; i++) acc += L->leaves[~lv[i]];
        }
        out[r] = acc;
    }
}

const tss_kernels tse_tsimd_avx2 = {TS_ISA_AVX2, 8, tss_avx2, NULL, NULL, NULL, NULL, NULL, NULL};

#endif
