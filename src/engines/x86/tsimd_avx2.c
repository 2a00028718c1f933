/* tsimd_avx2.c: the trees-simd kernel for AVX2: 8 trees per register, four blocks of them stepped together. */
#define TS_ISA_FILE /* built with -mavx2 -mbmi -mbmi2 -mlzcnt -mpopcnt: see CMakeLists.txt */
#include "engines/tsimd.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#include <math.h>

/* As tsimd_avx512.c, with lane masks in vector registers (all ones: active) and
 * vpgatherdd / vgatherdps of 8 lanes. */
#define TSS_G 4

/* All ones in the lanes of slots s .. s + 7 whose value x is missing for the slot: NaN,
 * or in the zero range where the slot's rule says so. */
static inline __m256 missing8(const tss *L, uint32_t s, __m256 x) {
    const __m256 zr = _mm256_set1_ps(TSM_ZERO_RANGE), sign = _mm256_set1_ps(-0.0f);
    const __m256 z = _mm256_castsi256_ps(
        _mm256_cmpeq_epi32(_mm256_loadu_si256((const __m256i *)(L->slot_zero + s)), _mm256_set1_epi32(1)));
    return _mm256_or_ps(_mm256_cmp_ps(x, x, _CMP_UNORD_Q),
                        _mm256_and_ps(z, _mm256_cmp_ps(_mm256_andnot_ps(sign, x), zr, _CMP_LE_OQ)));
}

static void tss_values8(const tss *L, const float *row, float *v) {
    for (uint32_t s = 0; s < L->n_slots_pad; s += 8) {
        __m256i col = _mm256_loadu_si256((const __m256i *)(L->slot_col + s));
        __m256 x = _mm256_i32gather_ps(row, col, 4);
        _mm256_store_ps(v + s, _mm256_blendv_ps(x, _mm256_loadu_ps(L->slot_miss + s), missing8(L, s, x)));
    }
    v[0] = -INFINITY;
}

/* tss_key of 8 floats that are not NaN (-0 and +0: one key). */
static inline __m256i keys8(__m256 x) {
    const __m256i b = _mm256_castps_si256(_mm256_and_ps(_mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_NEQ_UQ), x));
    return _mm256_xor_si256(b, _mm256_or_si256(_mm256_srai_epi32(b, 31), _mm256_set1_epi32((int)0x80000000u)));
}

/* Slots s .. s + 7's keys of the values x (tss_slot_key), stored at k + s. */
static inline void store_keys8(const tss *L, uint32_t s, __m256 x, uint32_t *k) {
    const __m256 miss = missing8(L, s, x);
    const __m256 sm = _mm256_loadu_ps(L->slot_miss + s);
    const __m256 mkey = _mm256_cmp_ps(sm, sm, _CMP_UNORD_Q); /* missing goes right: all ones */
    _mm256_storeu_si256((__m256i *)(k + s),
                        _mm256_castps_si256(_mm256_blendv_ps(_mm256_castsi256_ps(keys8(x)), mkey, miss)));
}

/* row[c[0..7]]: scalar loads and inserts, 3-5% faster than vgatherdps for one row of the
 * dev model on Zen 3. */
static inline __m256 load8f(const float *row, const uint32_t *c) {
    __m128 a = _mm_load_ss(row + c[0]), b = _mm_load_ss(row + c[4]);
    a = _mm_insert_ps(a, _mm_load_ss(row + c[1]), 0x10);
    b = _mm_insert_ps(b, _mm_load_ss(row + c[5]), 0x10);
    a = _mm_insert_ps(a, _mm_load_ss(row + c[2]), 0x20);
    b = _mm_insert_ps(b, _mm_load_ss(row + c[6]), 0x20);
    a = _mm_insert_ps(a, _mm_load_ss(row + c[3]), 0x30);
    b = _mm_insert_ps(b, _mm_load_ss(row + c[7]), 0x30);
    return _mm256_insertf128_ps(_mm256_castps128_ps256(a), b, 1);
}

/* tss_slot_keys (the depth steps' keys), 8 slots at a time. */
static void tss_keys8(const tss *L, const float *row, uint32_t *k) {
    for (uint32_t s = 0; s < L->n_slots_pad; s += 8)
        store_keys8(L, s, load8f(row, L->slot_col + s), k);
    k[0] = 0;
}

/* The low 32 bits of each 64-bit lane (a compare's all-ones or zero). */
static inline __m128i lo32x4(__m256i x) {
    const __m256i p = _mm256_permutevar8x32_epi32(x, _mm256_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6));
    return _mm256_castsi256_si128(p);
}

/* 4 doubles rounded to floats up (*u) and down (*d), exactly (AVX2 has no directed
 * rounding of cvtpd2ps): r, the nearest float, is one of the two, and the other is r's
 * neighbour toward v (a float's neighbour: its bits + 1 away from zero, - 1 toward
 * it; a value rounded to r = +-0 or +-inf has its neighbour on the side of v, so that
 * the rule holds there too); NaN: r itself. */
static inline void round_ud4(__m256d v, __m128 *u, __m128 *d) {
    const __m128 r = _mm256_cvtpd_ps(v);
    const __m256d rd = _mm256_cvtps_pd(r);
    const __m128i lt = lo32x4(_mm256_castpd_si256(_mm256_cmp_pd(rd, v, _CMP_LT_OQ)));
    const __m128i gt = lo32x4(_mm256_castpd_si256(_mm256_cmp_pd(rd, v, _CMP_GT_OQ)));
    const __m128i b = _mm_castps_si128(r), step = _mm_or_si128(_mm_srai_epi32(b, 31), _mm_set1_epi32(1));
    const __m128i up = _mm_add_epi32(b, step), down = _mm_sub_epi32(b, step); /* next up, next down */
    *u = _mm_castsi128_ps(_mm_blendv_epi8(b, up, lt));
    *d = _mm_castsi128_ps(_mm_blendv_epi8(b, down, gt));
}

/* tss_gap_any_bit of the keys (j1 << 32 | db), 8 lanes: the top 16 bits of the low 64
 * bits of key * the mix constant, from 32-bit products (AVX2 has no 64-bit multiply):
 * those top 32 bits are hi32(db klo) + lo32(j1 klo) + lo32(db khi), modulo 2^32. */
static inline __m256i any_bits8(__m256i j1, __m256i db) {
    const uint64_t K = 0x9e3779b97f4a7c15ull;
    const __m256i klo = _mm256_set1_epi32((int)(uint32_t)K), khi = _mm256_set1_epi32((int)(uint32_t)(K >> 32));
    const __m256i pe = _mm256_mul_epu32(db, klo), po = _mm256_mul_epu32(_mm256_srli_epi64(db, 32), klo);
    const __m256i hi = _mm256_blend_epi32(_mm256_srli_epi64(pe, 32), po, 0xAA);
    const __m256i t = _mm256_add_epi32(hi, _mm256_add_epi32(_mm256_mullo_epi32(j1, klo), _mm256_mullo_epi32(db, khi)));
    return _mm256_srli_epi32(t, 16);
}

/* row[c[0..3]]: pairs of scalar loads, 12-18% faster than vgatherdpd for the keys of
 * double rows on Zen 3 (demo model, one row). */
static inline __m256d load4d(const double *row, const uint32_t *c) {
    const __m128d a = _mm_loadh_pd(_mm_load_sd(row + c[0]), row + c[1]);
    const __m128d b = _mm_loadh_pd(_mm_load_sd(row + c[2]), row + c[3]);
    return _mm256_insertf128_pd(_mm256_castpd128_pd256(a), b, 1);
}

/* tsimd.c's tss_slot_keys_up, 8 slots at a time: each value rounded up (u) and down (d)
 * to floats, the keys of u; lanes whose value is not a float and whose (feature, d) has
 * a bit in L->gaps_any (or u is -TSM_ZERO_RANGE) are redone by tss_slot_key_up. */
static int tss_keys8_up(const tss *L, const double *row, uint32_t *k) {
    int ok = 1;
    const int *any = (const int *)L->gaps_any; /* bit b: 32-bit word b / 32, bit b % 32 */
    for (uint32_t s = 0; s < L->n_slots_pad; s += 8) {
        __m128 u0, d0, u1, d1;
        round_ud4(load4d(row, L->slot_col + s), &u0, &d0);
        round_ud4(load4d(row, L->slot_col + s + 4), &u1, &d1);
        const __m256 u = _mm256_set_m128(u1, u0), d = _mm256_set_m128(d1, d0);
        store_keys8(L, s, u, k);
        const __m256 oddv = _mm256_cmp_ps(u, d, _CMP_NEQ_OQ); /* not a float, not NaN */
        if (_mm256_testz_ps(oddv, oddv)) continue;
        /* the gaps_any bit of each lane's (feature, d) (tss_gap_any_bit), its word gathered */
        const __m256i j1 = _mm256_add_epi32(_mm256_loadu_si256((const __m256i *)(L->slot_j + s)), _mm256_set1_epi32(1));
        const __m256i b = any_bits8(j1, _mm256_castps_si256(d));
        const __m256i w = _mm256_mask_i32gather_epi32(_mm256_setzero_si256(), any, _mm256_srli_epi32(b, 5),
                                                      _mm256_castps_si256(oddv), 4);
        const __m256i hit = _mm256_slli_epi32(_mm256_srlv_epi32(w, _mm256_and_si256(b, _mm256_set1_epi32(31))), 31);
        const __m256 zr = _mm256_cmp_ps(u, _mm256_set1_ps(-TSM_ZERO_RANGE), _CMP_EQ_OQ);
        uint32_t redo = (uint32_t)_mm256_movemask_ps(_mm256_and_ps(oddv, _mm256_or_ps(_mm256_castsi256_ps(hit), zr)));
        if (__builtin_expect(redo != 0, 0)) {
            float uu[8], dd[8];
            _mm256_storeu_ps(uu, u);
            _mm256_storeu_ps(dd, d);
            for (; redo; redo &= redo - 1) {
                const uint32_t l = (uint32_t)__builtin_ctz(redo);
                ok &= tss_slot_key_up(L, s + l, row[L->slot_col[s + l]], uu[l], dd[l], &k[s + l]);
            }
        }
    }
    k[0] = 0;
    return ok;
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

const tss_kernels tse_tsimd_avx2 = {TS_ISA_AVX2, 8, tss_avx2, tss_keys8, tss_keys8_up, NULL, NULL, NULL, NULL};

#endif
