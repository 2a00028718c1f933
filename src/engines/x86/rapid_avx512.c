/* rapid_avx512.c: the rapid kernels for AVX-512BW: 64 documents per register of bytes, compares into mask registers, one vpternlog per row cleared. */
#define TS_ISA_FILE /* built with -mavx512f -mavx512cd -mavx512bw -mavx512dq -mavx512vl: see CMakeLists.txt */
#include "engines/rapid.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#include <limits.h>
#include <math.h>

/*
 * A compare result is a vector of 64 bytes (0xFF where the document failed the node),
 * made once per merged node from the compare's mask register (vpmovm2b), so that each
 * row an entry touches costs a load, one vpternlogd (row & (~failed | mask)) and a store.
 * Exit leaves: rows are scanned with vptestmb until every lane has met its first non-zero
 * byte; the leaf is 8 * row + the lowest set bit of that byte (two vpshufb lookups on
 * nibbles); vgatherdpd fetches 8 leaf values at a time into 8 registers of scores that
 * stay in registers across the block's trees.
 */
typedef __m512i rs_bm;

static inline rs_bm rs_from_lanes(uint64_t m) { return _mm512_movm_epi8((__mmask64)m); }

static inline void rs_and(uint8_t *row, rs_bm c, uint8_t m) {
    __m512i p = _mm512_load_si512(row);
    _mm512_store_si512(row, _mm512_ternarylogic_epi32(p, c, _mm512_set1_epi8((char)m), 0xB0));
}

static inline rs_bm rs_gt8(const uint8_t *codes, uint32_t k) {
    return _mm512_movm_epi8(_mm512_cmpgt_epu8_mask(_mm512_load_si512(codes), _mm512_set1_epi8((char)k)));
}

static inline rs_bm rs_gt16(const uint16_t *codes, uint32_t k) {
    __m512i kk = _mm512_set1_epi16((short)k);
    uint64_t lo = _mm512_cmpgt_epu16_mask(_mm512_load_si512(codes), kk);
    uint64_t hi = _mm512_cmpgt_epu16_mask(_mm512_load_si512(codes + 32), kk);
    return _mm512_movm_epi8((__mmask64)(lo | hi << 32));
}

static void rs_leaves(const uint8_t *bv, uint32_t n_trees, uint32_t bytes, const double *leaves, const uint32_t *off,
                      double *acc) {
    const __m512i lut_lo = _mm512_broadcast_i32x4(_mm_setr_epi8(0, 0, 1, 0, 2, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0));
    const __m512i lut_hi = _mm512_broadcast_i32x4(_mm_setr_epi8(0, 4, 5, 0, 6, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0));
    const __m512i nib = _mm512_set1_epi8(0x0F), zero = _mm512_setzero_si512();
    __m512d a[8];
    for (int h = 0; h < 8; h++) a[h] = _mm512_load_pd(acc + 8 * h);
    for (uint32_t t = 0; t < n_trees; t++) {
        const uint8_t *b = bv + (size_t)t * bytes * 64;
        __m512i idx = zero, byt = zero;
        __mmask64 found = 0;
        for (uint32_t j = 0; j < bytes; j++) {
            __m512i v = _mm512_load_si512(b + (size_t)j * 64);
            __mmask64 nz = _mm512_test_epi8_mask(v, v) & ~found;
            idx = _mm512_mask_mov_epi8(idx, nz, _mm512_set1_epi8((char)(j * 8)));
            byt = _mm512_mask_mov_epi8(byt, nz, v);
            found |= nz;
            if (found == ~(__mmask64)0) break;
        }
        __m512i low = _mm512_and_si512(byt, _mm512_sub_epi8(zero, byt));
        __m512i bit = _mm512_or_si512(_mm512_shuffle_epi8(lut_lo, _mm512_and_si512(low, nib)),
                                      _mm512_shuffle_epi8(lut_hi, _mm512_and_si512(_mm512_srli_epi16(low, 4), nib)));
        __m512i leaf = _mm512_add_epi8(idx, bit);
        const double *lv = leaves + off[t];
        for (int q = 0; q < 4; q++) {
            __m512i i32 = _mm512_cvtepu8_epi32(_mm512_extracti32x4_epi32(leaf, q));
            a[2 * q] = _mm512_add_pd(a[2 * q], _mm512_i32gather_pd(_mm512_castsi512_si256(i32), lv, 8));
            a[2 * q + 1] = _mm512_add_pd(a[2 * q + 1], _mm512_i32gather_pd(_mm512_extracti64x4_epi64(i32, 1), lv, 8));
        }
    }
    for (int h = 0; h < 8; h++) _mm512_store_pd(acc + 8 * h, a[h]);
}

/* Codes of 16 lanes of one feature (rows base + lane * stride; lanes outside `valid` read
 * -inf: code 0, neither NaN nor zero range), with their NaN and zero-range lanes. Few
 * thresholds: one compare each; more: a branch-free binary search, a gather per step. */
static inline __m512i codes16(const tsq_feature *f, const float *thr, const float *base, __m512i vidx,
                              __mmask16 valid, __mmask16 *nan, __mmask16 *zero) {
    __m512 v = _mm512_mask_i32gather_ps(_mm512_set1_ps(-INFINITY), valid, vidx, base, 4);
    __m512i pos = _mm512_setzero_si512();
    const float *t = thr + f->table;
    if (f->n_thr <= 12) {
        const __m512i one = _mm512_set1_epi32(1);
        for (uint32_t i = 0; i < f->n_thr; i++)
            pos = _mm512_mask_add_epi32(pos, _mm512_cmp_ps_mask(_mm512_set1_ps(t[i]), v, _CMP_LT_OQ), pos, one);
    } else {
        for (uint32_t s = (1u << f->steps) >> 1; s; s >>= 1) {
            __m512 tv = _mm512_i32gather_ps(_mm512_add_epi32(pos, _mm512_set1_epi32((int)s - 1)), t, 4);
            pos = _mm512_mask_add_epi32(pos, _mm512_cmp_ps_mask(tv, v, _CMP_LT_OQ), pos, _mm512_set1_epi32((int)s));
        }
    }
    *nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
    *zero = f->has_zero ? _mm512_cmp_ps_mask(_mm512_abs_ps(v), _mm512_set1_ps(TSM_ZERO_RANGE), _CMP_LE_OQ) : 0;
    return _mm512_maskz_mov_epi32((__mmask16)~*zero, pos);
}

/* One group of 64 documents (nd of them real) into codes of CODE_T (8 or 16 bits). */
#define RS_QUANTIZE_AVX512(NAME, CODE_T, STORE, SCALAR)                                           \
    static void NAME(const tsq *q, const float *x, size_t stride, size_t nd, CODE_T *codes, uint32_t *maxc, \
                     uint64_t *nan, uint64_t *zero) {                                             \
        if (stride > (size_t)INT_MAX / 64) { SCALAR(q, x, stride, nd, codes, maxc, nan, zero); return; } \
        const __m512i vidx = _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, \
                                                                  14, 15), _mm512_set1_epi32((int)stride)); \
        for (uint32_t j = 0; j < q->n_used; j++) {                                                \
            const tsq_feature *f = &q->f[j];                                                      \
            __m512i vmax = _mm512_setzero_si512();                                                \
            uint64_t nm = 0, zm = 0;                                                              \
            for (size_t c = 0; c < 4; c++) {                                                      \
                __m512i pos = _mm512_setzero_si512();                                             \
                if (16 * c < nd) {                                                                \
                    size_t left = nd - 16 * c;                                                    \
                    __mmask16 valid = left >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << left) - 1); \
                    __mmask16 n16, z16;                                                           \
                    pos = codes16(f, q->thr, x + 16 * c * stride + f->column, vidx, valid, &n16, &z16); \
                    nm |= (uint64_t)n16 << (16 * c);                                              \
                    zm |= (uint64_t)z16 << (16 * c);                                              \
                    vmax = _mm512_max_epu32(vmax, pos);                                           \
                }                                                                                 \
                STORE(codes + (size_t)j * 64 + 16 * c, pos);                                      \
            }                                                                                     \
            maxc[j] = _mm512_reduce_max_epu32(vmax);                                              \
            nan[j] = nm;                                                                          \
            zero[j] = zm;                                                                         \
        }                                                                                         \
    }
#define STORE8(p, v) _mm_store_si128((__m128i *)(p), _mm512_cvtepi32_epi8(v))
#define STORE16(p, v) _mm256_store_si256((__m256i *)(p), _mm512_cvtepi32_epi16(v))

/* Rows further apart than INT_MAX / 64 floats cannot be gathered with 32-bit indices:
 * those groups are quantized lane by lane. */
#define RS_LANES 64
#include "engines/rapid_scalar_quantize.h"
RS_QUANTIZE_AVX512(rs_quantize8, uint8_t, STORE8, rs_scalar_quantize8)
RS_QUANTIZE_AVX512(rs_quantize16, uint16_t, STORE16, rs_scalar_quantize16)


#define RS_CODE_T uint8_t
#define RS_GT rs_gt8
#define RS_QUANTIZE rs_quantize8
#define RS(name) rs_avx512_8_##name
#include "engines/rapid_template.h"
#undef RS
#undef RS_CODE_T
#undef RS_GT
#undef RS_QUANTIZE
#define RS_CODE_T uint16_t
#define RS_GT rs_gt16
#define RS_QUANTIZE rs_quantize16
#define RS(name) rs_avx512_16_##name
#include "engines/rapid_template.h"

const rs_kernels tse_rapid_avx512 = {TS_ISA_AVX512, 64, rs_avx512_8_kernel, rs_avx512_16_kernel};

#endif
