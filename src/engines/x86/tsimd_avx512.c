/* tsimd_avx512.c: the trees-simd kernel for AVX-512: 16 trees per register, four blocks of them stepped together. */
#define TS_ISA_FILE /* built with -mavx512f -mavx512cd -mavx512bw -mavx512dq -mavx512vl: see CMakeLists.txt */
#include "engines/tsimd.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#include <math.h>

/*
 * A step of a block: the lanes' entries idx = supernode + j, two vpgatherdq of their
 * (slot, threshold) pairs (L->node), split by two vpermt2d, vgatherdps of the document's slot values, one compare (not v <= t:
 * right), j = 2 j + 1 (+1 under the compare's mask). After K steps, vpgatherdd of the
 * exits; lanes whose exit is a leaf (< 0) keep it and leave the mask. Gathers have tens
 * of cycles of latency: TSS_G blocks (64 trees) step together so that their gathers
 * overlap; a block whose lanes have all stopped is skipped.
 */
#define TSS_G 4

static void tss_values16(const tss *L, const float *row, float *v) {
    const __m512 zr = _mm512_set1_ps(TSM_ZERO_RANGE);
    for (uint32_t s = 0; s < L->n_slots_pad; s += 16) {
        __m512i col = _mm512_loadu_si512(L->slot_col + s);
        __m512 x = _mm512_i32gather_ps(col, row, 4);
        __mmask16 miss = _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
        __mmask16 z = _mm512_test_epi32_mask(_mm512_loadu_si512(L->slot_zero + s), _mm512_set1_epi32(1));
        miss |= _mm512_mask_cmp_ps_mask(z, _mm512_abs_ps(x), zr, _CMP_LE_OQ);
        _mm512_store_ps(v + s, _mm512_mask_mov_ps(x, miss, _mm512_loadu_ps(L->slot_miss + s)));
    }
    v[0] = -INFINITY;
}

static void tss_avx512(const tss *L, const float *x, size_t n_rows, size_t stride, double *out, void *scratch) {
    float *v = scratch;
    int32_t *lv = (int32_t *)((char *)scratch + tss_round64((size_t)L->n_slots_pad * sizeof(float)));
    const uint32_t K = L->levels;
    const __m512i inner = _mm512_set1_epi32((int)((1u << K) - 1)), one = _mm512_set1_epi32(1);
    const __m512i zero = _mm512_setzero_si512();
    const uint32_t nb = (L->n_trees + 15) / 16;
    const int32_t *ex = L->exit;
    const long long *node = (const long long *)L->node;
    const __m512i evens = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i odds = _mm512_add_epi32(evens, one);
    for (size_t r = 0; r < n_rows; r++) {
        tss_values16(L, x + r * stride, v);
        double acc = L->base_score;
        for (uint32_t b0 = 0; b0 < nb; b0 += TSS_G) {
            __m512i e[TSS_G], leaf[TSS_G];
            __mmask16 m[TSS_G];
            const uint32_t ng = nb - b0 < TSS_G ? nb - b0 : TSS_G;
            for (uint32_t g = 0; g < TSS_G; g++) {
                if (g < ng) {
                    const uint32_t t0 = (b0 + g) * 16, cnt = L->n_trees - t0 < 16 ? L->n_trees - t0 : 16;
                    e[g] = _mm512_loadu_si512(L->root + t0);
                    m[g] = _mm512_mask_cmpge_epi32_mask((__mmask16)((1u << cnt) - 1), e[g], zero);
                } else {
                    e[g] = zero;
                    m[g] = 0;
                }
                leaf[g] = e[g];
            }
            for (;;) {
                unsigned any = 0;
                for (uint32_t g = 0; g < TSS_G; g++) any |= m[g];
                if (!any) break;
                __m512i j[TSS_G];
                for (uint32_t g = 0; g < TSS_G; g++) j[g] = zero;
                for (uint32_t d = 0; d < K; d++)
                    for (uint32_t g = 0; g < TSS_G; g++) {
                        if (!m[g]) continue;
                        __m512i idx = _mm512_add_epi32(e[g], j[g]);
                        __m512i n0 = _mm512_mask_i32gather_epi64(zero, (__mmask8)m[g], _mm512_castsi512_si256(idx),
                                                                 node, 8);
                        __m512i n1 = _mm512_mask_i32gather_epi64(zero, (__mmask8)(m[g] >> 8),
                                                                 _mm512_extracti64x4_epi64(idx, 1), node, 8);
                        __m512i s = _mm512_permutex2var_epi32(n0, evens, n1);
                        __m512 t = _mm512_castsi512_ps(_mm512_permutex2var_epi32(n0, odds, n1));
                        __m512 val = _mm512_mask_i32gather_ps(_mm512_setzero_ps(), m[g], s, v, 4);
                        __mmask16 right = _mm512_mask_cmp_ps_mask(m[g], val, t, _CMP_NLE_UQ);
                        __m512i j2 = _mm512_add_epi32(_mm512_add_epi32(j[g], j[g]), one);
                        j[g] = _mm512_mask_add_epi32(j2, right, j2, one);
                    }
                for (uint32_t g = 0; g < TSS_G; g++) {
                    if (!m[g]) continue;
                    __m512i idx = _mm512_add_epi32(e[g], _mm512_sub_epi32(j[g], inner));
                    __m512i nx = _mm512_mask_i32gather_epi32(e[g], m[g], idx, ex, 4);
                    __mmask16 lm = _mm512_mask_cmplt_epi32_mask(m[g], nx, zero);
                    leaf[g] = _mm512_mask_mov_epi32(leaf[g], lm, nx);
                    e[g] = nx;
                    m[g] &= (__mmask16)~lm;
                }
            }
            for (uint32_t g = 0; g < ng; g++) _mm512_store_si512(lv + 16 * g, leaf[g]);
            const uint32_t cnt = L->n_trees - b0 * 16 < 16 * ng ? L->n_trees - b0 * 16 : 16 * ng;
            for (uint32_t i = 0; i < cnt; i++) acc += L->leaves[~lv[i]];
        }
        out[r] = acc;
    }
}

const tss_kernels tse_tsimd_avx512 = {TS_ISA_AVX512, 16, tss_avx512};

#endif
