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

/* tss_key of 16 floats that are not NaN (-0 and +0: one key). */
static inline __m512i keys16(__m512 x) {
    const __m512i b = _mm512_maskz_mov_epi32(_mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_NEQ_UQ), _mm512_castps_si512(x));
    return _mm512_xor_si512(b, _mm512_or_si512(_mm512_srai_epi32(b, 31), _mm512_set1_epi32((int)0x80000000u)));
}

/* Slots s .. s + 15's keys of the values x (tss_slot_key), stored at k + s. */
static inline void store_keys16(const tss *L, uint32_t s, __m512 x, uint32_t *k) {
    __mmask16 miss = _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
    const __mmask16 z = _mm512_test_epi32_mask(_mm512_loadu_si512(L->slot_zero + s), _mm512_set1_epi32(1));
    miss |= _mm512_mask_cmp_ps_mask(z, _mm512_abs_ps(x), _mm512_set1_ps(TSM_ZERO_RANGE), _CMP_LE_OQ);
    const __m512 sm = _mm512_loadu_ps(L->slot_miss + s);
    const __m512i mkey = _mm512_movm_epi32(_mm512_cmp_ps_mask(sm, sm, _CMP_UNORD_Q)); /* right: all ones */
    _mm512_storeu_si512(k + s, _mm512_mask_mov_epi32(keys16(x), miss, mkey));
}

/* tss_slot_keys, 16 slots a gather. */
static void tss_keys16(const tss *L, const float *row, uint32_t *k) {
    for (uint32_t s = 0; s < L->n_slots_pad; s += 16)
        store_keys16(L, s, _mm512_i32gather_ps(_mm512_loadu_si512(L->slot_col + s), row, 4), k);
    k[0] = 0;
}

/* 16 floats from two registers of 8 doubles, rounded as `rounding` says. */
#define TSS_JOIN_PS(a, b, rounding) \
    _mm512_insertf32x8(_mm512_castps256_ps512(_mm512_cvt_roundpd_ps(a, rounding | _MM_FROUND_NO_EXC)), \
                       _mm512_cvt_roundpd_ps(b, rounding | _MM_FROUND_NO_EXC), 1)

/* tsimd.c's tss_slot_keys_up, 16 slots at a time: each value rounded up (u) and down (d)
 * to floats, the keys of u; lanes whose value is not a float and whose (feature, d) has
 * a bit in L->gaps_any (or u is -TSM_ZERO_RANGE) are redone by tss_slot_key_up. */
static int tss_keys16_up(const tss *L, const double *row, uint32_t *k) {
    int ok = 1;
    const uint32_t *any = (const uint32_t *)L->gaps_any; /* bit b: word b / 32, bit b % 32 */
    for (uint32_t s = 0; s < L->n_slots_pad; s += 16) {
        const __m512i col = _mm512_loadu_si512(L->slot_col + s);
        const __m512d v0 = _mm512_i32gather_pd(_mm512_castsi512_si256(col), row, 8);
        const __m512d v1 = _mm512_i32gather_pd(_mm512_extracti64x4_epi64(col, 1), row, 8);
        const __m512 u = TSS_JOIN_PS(v0, v1, _MM_FROUND_TO_POS_INF), d = TSS_JOIN_PS(v0, v1, _MM_FROUND_TO_NEG_INF);
        store_keys16(L, s, u, k);
        __mmask16 odd = _mm512_cmp_ps_mask(u, d, _CMP_NEQ_OQ); /* not a float, not NaN */
        if (!odd) continue;
        /* the gaps_any bit of key (j + 1) << 32 | bits(d) (tss_gap_any_bit), 8 lanes a register */
        const __m512i j1 = _mm512_add_epi32(_mm512_loadu_si512(L->slot_j + s), _mm512_set1_epi32(1));
        const __m512i db = _mm512_castps_si512(d), mix = _mm512_set1_epi64((long long)0x9e3779b97f4a7c15ull);
        __m256i half[2];
        for (int h = 0; h < 2; h++) {
            const __m512i key = _mm512_or_si512(_mm512_slli_epi64(_mm512_cvtepu32_epi64(_mm512_extracti64x4_epi64(j1, h)), 32),
                                                _mm512_cvtepu32_epi64(_mm512_extracti64x4_epi64(db, h)));
            half[h] = _mm512_cvtepi64_epi32(_mm512_srli_epi64(_mm512_mullo_epi64(key, mix), 48));
        }
        const __m512i b = _mm512_inserti64x4(_mm512_castsi256_si512(half[0]), half[1], 1);
        const __m512i w = _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), odd, _mm512_srli_epi32(b, 5), any, 4);
        __mmask16 redo = _mm512_mask_test_epi32_mask(odd, _mm512_sllv_epi32(_mm512_set1_epi32(1), _mm512_and_si512(b, _mm512_set1_epi32(31))), w);
        redo |= _mm512_mask_cmp_ps_mask(odd, u, _mm512_set1_ps(-TSM_ZERO_RANGE), _CMP_EQ_OQ);
        if (__builtin_expect(redo != 0, 0)) {
            float uu[16], dd[16];
            _mm512_storeu_ps(uu, u);
            _mm512_storeu_ps(dd, d);
            for (; redo; redo &= (__mmask16)(redo - 1)) {
                const uint32_t l = (uint32_t)__builtin_ctz(redo);
                ok &= tss_slot_key_up(L, s + l, row[L->slot_col[s + l]], uu[l], dd[l], &k[s + l]);
            }
        }
    }
    k[0] = 0;
    return ok;
}
#undef TSS_JOIN_PS

const tss_kernels tse_tsimd_avx512 = {TS_ISA_AVX512, 16, tss_avx512, tss_keys16, tss_keys16_up};

#endif
