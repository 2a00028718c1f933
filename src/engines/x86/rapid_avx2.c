/* rapid_avx2.c: the rapid kernels for AVX2: 32 documents per register of bytes, codes stored sign-flipped for signed byte compares. */
#define TS_ISA_FILE /* built with -mavx2 -mbmi -mbmi2 -mlzcnt -mpopcnt: see CMakeLists.txt */
#include "engines/rapid.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#include <limits.h>
#include <math.h>

/*
 * AVX2 has no unsigned byte compare: codes are stored XOR 0x80 (16-bit codes XOR
 * 0x8000), so that vpcmpgtb/vpcmpgtw on them order the codes as unsigned numbers. A
 * compare result is a vector of 32 bytes (0xFF where the document failed); a row is
 * cleared with vpandn twice (row & ~(failed & ~mask)). Exit leaves: rows are scanned
 * with compares and blends until every lane has met its first non-zero byte, then
 * vgatherdpd fetches 4 leaf values at a time.
 */
typedef __m256i rs_bm;

static inline rs_bm rs_from_lanes(uint64_t m) {
    const __m256i shuf = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 3,
                                          3, 3, 3, 3, 3, 3, 3);
    const __m256i bits = _mm256_set1_epi64x((long long)0x8040201008040201ull);
    __m256i v = _mm256_shuffle_epi8(_mm256_set1_epi32((int)(uint32_t)m), shuf);
    return _mm256_cmpeq_epi8(_mm256_and_si256(v, bits), bits);
}

static inline void rs_and(uint8_t *row, rs_bm c, uint8_t m) {
    __m256i p = _mm256_load_si256((const __m256i *)row);
    __m256i clear = _mm256_andnot_si256(_mm256_set1_epi8((char)m), c);
    _mm256_store_si256((__m256i *)row, _mm256_andnot_si256(clear, p));
}

static inline rs_bm rs_gt8(const uint8_t *codes, uint32_t k) {
    return _mm256_cmpgt_epi8(_mm256_load_si256((const __m256i *)codes), _mm256_set1_epi8((char)(k ^ 0x80)));
}

static inline rs_bm rs_gt16(const uint16_t *codes, uint32_t k) {
    __m256i kk = _mm256_set1_epi16((short)(k ^ 0x8000));
    __m256i lo = _mm256_cmpgt_epi16(_mm256_load_si256((const __m256i *)codes), kk);
    __m256i hi = _mm256_cmpgt_epi16(_mm256_load_si256((const __m256i *)(codes + 16)), kk);
    return _mm256_permute4x64_epi64(_mm256_packs_epi16(lo, hi), 0xD8);
}

static void rs_leaves(const uint8_t *bv, uint32_t n_trees, uint32_t bytes, const double *leaves, const uint32_t *off,
                      double *acc) {
    const __m256i lut_lo = _mm256_setr_epi8(0, 0, 1, 0, 2, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 2, 0, 0, 0, 3,
                                            0, 0, 0, 0, 0, 0, 0);
    const __m256i lut_hi = _mm256_setr_epi8(0, 4, 5, 0, 6, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0, 0, 4, 5, 0, 6, 0, 0, 0, 7,
                                            0, 0, 0, 0, 0, 0, 0);
    const __m256i nib = _mm256_set1_epi8(0x0F), zero = _mm256_setzero_si256(), ones = _mm256_set1_epi8(-1);
    __m256d a[8];
    for (int h = 0; h < 8; h++) a[h] = _mm256_load_pd(acc + 4 * h);
    for (uint32_t t = 0; t < n_trees; t++) {
        const uint8_t *b = bv + (size_t)t * bytes * 32;
        __m256i idx = zero, byt = zero, left = ones;
        for (uint32_t j = 0; j < bytes; j++) {
            __m256i v = _mm256_load_si256((const __m256i *)(b + (size_t)j * 32));
            __m256i now = _mm256_andnot_si256(_mm256_cmpeq_epi8(v, zero), left);
            idx = _mm256_blendv_epi8(idx, _mm256_set1_epi8((char)(j * 8)), now);
            byt = _mm256_blendv_epi8(byt, v, now);
            left = _mm256_andnot_si256(now, left);
            if (_mm256_testz_si256(left, left)) break;
        }
        __m256i low = _mm256_and_si256(byt, _mm256_sub_epi8(zero, byt));
        __m256i bit = _mm256_or_si256(_mm256_shuffle_epi8(lut_lo, _mm256_and_si256(low, nib)),
                                      _mm256_shuffle_epi8(lut_hi, _mm256_and_si256(_mm256_srli_epi16(low, 4), nib)));
        __m256i leaf = _mm256_add_epi8(idx, bit);
        const double *lv = leaves + off[t];
        __m128i half[2] = {_mm256_castsi256_si128(leaf), _mm256_extracti128_si256(leaf, 1)};
        for (int q = 0; q < 4; q++) {
            __m128i part = q & 1 ? _mm_srli_si128(half[q >> 1], 8) : half[q >> 1];
            __m256i i32 = _mm256_cvtepu8_epi32(part);
            a[2 * q] = _mm256_add_pd(a[2 * q], _mm256_i32gather_pd(lv, _mm256_castsi256_si128(i32), 8));
            a[2 * q + 1] = _mm256_add_pd(a[2 * q + 1], _mm256_i32gather_pd(lv, _mm256_extracti128_si256(i32, 1), 8));
        }
    }
    for (int h = 0; h < 8; h++) _mm256_store_pd(acc + 4 * h, a[h]);
}

/* Codes of 8 lanes of one feature (rows base + lane * stride, lanes of `valid` real; the
 * others read -inf), with their NaN and zero-range lanes as bit masks. */
static inline __m256i codes8(const tsq_feature *f, const float *thr, const float *base, __m256i vidx, __m256 valid,
                             uint32_t *nan, uint32_t *zero) {
    __m256 v = _mm256_mask_i32gather_ps(_mm256_set1_ps(-INFINITY), base, vidx, valid, 4);
    __m256i pos = _mm256_setzero_si256();
    const float *t = thr + f->table;
    if (f->n_thr <= 12) {
        for (uint32_t i = 0; i < f->n_thr; i++)
            pos = _mm256_sub_epi32(pos, _mm256_castps_si256(_mm256_cmp_ps(_mm256_set1_ps(t[i]), v, _CMP_LT_OQ)));
    } else {
        for (uint32_t s = (1u << f->steps) >> 1; s; s >>= 1) {
            __m256 tv = _mm256_i32gather_ps(t, _mm256_add_epi32(pos, _mm256_set1_epi32((int)s - 1)), 4);
            __m256i lt = _mm256_castps_si256(_mm256_cmp_ps(tv, v, _CMP_LT_OQ));
            pos = _mm256_add_epi32(pos, _mm256_and_si256(lt, _mm256_set1_epi32((int)s)));
        }
    }
    *nan = (uint32_t)_mm256_movemask_ps(_mm256_cmp_ps(v, v, _CMP_UNORD_Q));
    *zero = 0;
    if (f->has_zero) {
        __m256 absv = _mm256_andnot_ps(_mm256_set1_ps(-0.0f), v);
        __m256 z = _mm256_cmp_ps(absv, _mm256_set1_ps(TSM_ZERO_RANGE), _CMP_LE_OQ);
        *zero = (uint32_t)_mm256_movemask_ps(z);
        pos = _mm256_andnot_si256(_mm256_castps_si256(z), pos);
    }
    return pos;
}

/* The codes of 32 lanes (4 registers of 8 dwords) of one slot, in lane order. */
static inline void store8(uint8_t *p, const __m256i *c) {
    __m256i a = _mm256_packus_epi32(c[0], c[1]), b = _mm256_packus_epi32(c[2], c[3]);
    __m256i bytes = _mm256_permutevar8x32_epi32(_mm256_packus_epi16(a, b), _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
    _mm256_store_si256((__m256i *)p, _mm256_xor_si256(bytes, _mm256_set1_epi8((char)0x80)));
}

static inline void store16(uint16_t *p, const __m256i *c) {
    const __m256i flip = _mm256_set1_epi16((short)0x8000);
    __m256i a = _mm256_permute4x64_epi64(_mm256_packus_epi32(c[0], c[1]), 0xD8);
    __m256i b = _mm256_permute4x64_epi64(_mm256_packus_epi32(c[2], c[3]), 0xD8);
    _mm256_store_si256((__m256i *)p, _mm256_xor_si256(a, flip));
    _mm256_store_si256((__m256i *)(p + 16), _mm256_xor_si256(b, flip));
}

#define RS_LANES 32
#define RS_FLIP8 0x80
#define RS_FLIP16 0x8000
#include "engines/rapid_scalar_quantize.h"

/* One group of 32 documents (nd of them real). */
#define RS_QUANTIZE_AVX2(NAME, CODE_T, STORE, SCALAR)                                             \
    static void NAME(const tsq *q, const float *x, size_t stride, size_t nd, CODE_T *codes, uint32_t *maxc, \
                     uint64_t *nan, uint64_t *zero) {                                             \
        if (stride > (size_t)INT_MAX / 32) { SCALAR(q, x, stride, nd, codes, maxc, nan, zero); return; } \
        const __m256i iota = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);                           \
        const __m256i vidx = _mm256_mullo_epi32(iota, _mm256_set1_epi32((int)stride));            \
        for (uint32_t j = 0; j < q->n_used; j++) {                                                \
            const tsq_feature *f = &q->f[j];                                                      \
            __m256i pos[4], vmax = _mm256_setzero_si256();                                        \
            uint64_t nm = 0, zm = 0;                                                              \
            for (size_t c = 0; c < 4; c++) {                                                      \
                pos[c] = _mm256_setzero_si256();                                                  \
                if (8 * c >= nd) continue;                                                        \
                __m256 valid = _mm256_castsi256_ps(                                               \
                    _mm256_cmpgt_epi32(_mm256_set1_epi32((int)(nd - 8 * c)), iota));              \
                uint32_t n8, z8;                                                                  \
                pos[c] = codes8(f, q->thr, x + 8 * c * stride + f->column, vidx, valid, &n8, &z8); \
                nm |= (uint64_t)n8 << (8 * c);                                                    \
                zm |= (uint64_t)z8 << (8 * c);                                                    \
                vmax = _mm256_max_epu32(vmax, pos[c]);                                            \
            }                                                                                     \
            STORE(codes + (size_t)j * 32, pos);                                                   \
            __m128i m4 = _mm_max_epu32(_mm256_castsi256_si128(vmax), _mm256_extracti128_si256(vmax, 1)); \
            m4 = _mm_max_epu32(m4, _mm_shuffle_epi32(m4, 0x4E));                                  \
            m4 = _mm_max_epu32(m4, _mm_shuffle_epi32(m4, 0xB1));                                  \
            maxc[j] = (uint32_t)_mm_cvtsi128_si32(m4);                                            \
            nan[j] = nm;                                                                          \
            zero[j] = zm;                                                                         \
        }                                                                                         \
    }
RS_QUANTIZE_AVX2(rs_quantize8, uint8_t, store8, rs_scalar_quantize8)
RS_QUANTIZE_AVX2(rs_quantize16, uint16_t, store16, rs_scalar_quantize16)

#define RS_CODE_T uint8_t
#define RS_GT rs_gt8
#define RS_QUANTIZE rs_quantize8
#define RS(name) rs_avx2_8_##name
#include "engines/rapid_template.h"
#undef RS
#undef RS_CODE_T
#undef RS_GT
#undef RS_QUANTIZE
#define RS_CODE_T uint16_t
#define RS_GT rs_gt16
#define RS_QUANTIZE rs_quantize16
#define RS(name) rs_avx2_16_##name
#include "engines/rapid_template.h"

const rs_kernels tse_rapid_avx2 = {TS_ISA_AVX2, 32, rs_avx2_8_kernel, rs_avx2_16_kernel};

#endif
