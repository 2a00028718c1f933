/* oblivious_avx512.c: the oblivious kernels for AVX-512BW: 64 documents per register of byte codes, a level is one vpcmpub into a mask register and a masked byte add; leaf values from registers of doubles, or (with OB_VBMI: oblivious_avx512vbmi.c) from byte planes. */
#ifndef TS_ISA_FILE
#define TS_ISA_FILE /* built with -mavx512f -mavx512cd -mavx512bw -mavx512dq -mavx512vl: see CMakeLists.txt */
#endif
#include "engines/oblivious.h"
#include "engines/common/leaves_avx512.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

#define OB_LANES 64
#ifdef OB_VBMI
#define OB(name) ob_avx512vbmi_##name
#else
#define OB(name) ob_avx512_##name
#endif

/*
 * A level: vpcmpub (code > k: the documents that go right) into a mask register, then
 * idx = idx + idx and +1 in the lanes of the mask: after d levels every byte holds its
 * document's leaf. Leaf values: trees of up to 64 leaves keep them in registers (one
 * vpermpd / vpermt2pd per 8 documents and 16 leaves, blends on bits 4 and 5 of the index,
 * as rapid's exit leaves); deeper ones load them one by one.
 */

/* The leaf indexes of the group at c (levels lv[0 .. d), d <= 8, k broadcast in kv). */
static inline __m512i ob_index(const uint8_t *c, const uint32_t *off, const __m512i *kv, uint32_t d) {
    const __m512i one = _mm512_set1_epi8(1);
    __m512i idx = _mm512_setzero_si512();
    for (uint32_t i = 0; i < d; i++) {
        const __mmask64 right = _mm512_cmpgt_epu8_mask(_mm512_load_si512(c + off[i]), kv[i]);
        idx = _mm512_add_epi8(idx, idx);
        idx = _mm512_mask_add_epi8(idx, right, idx, one);
    }
    return idx;
}

/* acc[l] += v[idx[l]] for the lanes l < 8 * chunks, the values in registers l0 .. l7 (d <= 6
 * levels; d is a constant where this is inlined). */
static inline __attribute__((always_inline)) void ob_add_regs(__m512i idx, const __m512d *lr, const int d,
                                                              size_t chunks, double *acc) {
    const __m128i part[4] = {_mm512_extracti32x4_epi32(idx, 0), _mm512_extracti32x4_epi32(idx, 1),
                             _mm512_extracti32x4_epi32(idx, 2), _mm512_extracti32x4_epi32(idx, 3)};
    for (int q = 0; q < 4; q++)
        for (int h = 0; h < 2; h++) {
            if ((size_t)(2 * q + h) >= chunks) return;
            const __m512i i = _mm512_cvtepu8_epi64(h ? _mm_srli_si128(part[q], 8) : part[q]);
            __m512d v;
            if (d <= 3)
                v = _mm512_permutexvar_pd(i, lr[0]);
            else {
                v = _mm512_permutex2var_pd(lr[0], i, lr[1]); /* leaves 0 .. 15 */
                if (d >= 5) { /* and 16 .. 31 */
                    const __mmask8 b4 = _mm512_test_epi64_mask(i, _mm512_set1_epi64(16));
                    v = _mm512_mask_blend_pd(b4, v, _mm512_permutex2var_pd(lr[2], i, lr[3]));
                    if (d >= 6) { /* and 32 .. 63 */
                        const __m512d w = _mm512_mask_blend_pd(b4, _mm512_permutex2var_pd(lr[4], i, lr[5]),
                                                               _mm512_permutex2var_pd(lr[6], i, lr[7]));
                        v = _mm512_mask_blend_pd(_mm512_test_epi64_mask(i, _mm512_set1_epi64(32)), v, w);
                    }
                }
            }
            double *a = acc + 16 * q + 8 * h;
            _mm512_store_pd(a, _mm512_add_pd(_mm512_load_pd(a), v));
        }
}

/* Trees of 1 .. 6 levels (d a constant where inlined): the values in registers, loaded
 * once for every group. */
static inline __attribute__((always_inline)) void ob_sym_small(const double *v, const uint8_t *codes, size_t step,
                                                               size_t ng, size_t last, const uint32_t *off,
                                                               const __m512i *kv, const int d, double *acc) {
    __m512d lr[8];
    for (int r = 0; r < 8; r++) lr[r] = r < (1 << d) / 8 + (d < 3) ? _mm512_loadu_pd(v + 8 * r) : _mm512_setzero_pd();
    for (size_t g = 0; g < ng; g++)
        ob_add_regs(ob_index(codes + g * step, off, kv, (uint32_t)d), lr, d, g + 1 == ng ? (last + 7) / 8 : 8,
                    acc + g * 64);
}

#ifdef OB_VBMI
/*
 * Byte planes (oblivious.h): plane j's lookup gives byte j of 64 documents' values; the 8
 * planes' results are transposed into doubles by unpacks (bytes to words to dwords to
 * qwords), which work inside 128-bit lanes: result register r holds, in lane k, the
 * documents whose bytes sat at 16k + 2r and 16k + 2r + 1. So the indexes are first put in
 * that order (one vpermb with PERM: position 16k + 2r + h takes document 8r + 2k + h),
 * and register r comes out holding documents 8r .. 8r + 7 in order.
 */
static const uint8_t PERM[64] __attribute__((aligned(64))) = {
    0,  1,  8,  9,  16, 17, 24, 25, 32, 33, 40, 41, 48, 49, 56, 57, 2,  3,  10, 11, 18, 19,
    26, 27, 34, 35, 42, 43, 50, 51, 58, 59, 4,  5,  12, 13, 20, 21, 28, 29, 36, 37, 44, 45,
    52, 53, 60, 61, 6,  7,  14, 15, 22, 23, 30, 31, 38, 39, 46, 47, 54, 55, 62, 63};

/* acc[8 r .. 8 r + 8) += the values of planes p[0 .. 8) for r < chunks. */
static inline __attribute__((always_inline)) void ob_add_planes(const __m512i *p, size_t chunks, double *acc) {
    __m512i a[8], b[8], c[8];
    for (int j = 0; j < 4; j++) {
        a[2 * j] = _mm512_unpacklo_epi8(p[2 * j], p[2 * j + 1]);
        a[2 * j + 1] = _mm512_unpackhi_epi8(p[2 * j], p[2 * j + 1]);
    }
    for (int h = 0; h < 2; h++) /* bytes 0-3 from a[h], a[2 + h]; bytes 4-7 from a[4 + h], a[6 + h] */
        for (int q = 0; q < 2; q++) {
            const __m512i x = a[4 * q + h], y = a[4 * q + 2 + h];
            b[4 * q + 2 * h] = _mm512_unpacklo_epi16(x, y);
            b[4 * q + 2 * h + 1] = _mm512_unpackhi_epi16(x, y);
        }
    for (int r = 0; r < 4; r++) {
        c[2 * r] = _mm512_unpacklo_epi32(b[r], b[4 + r]);
        c[2 * r + 1] = _mm512_unpackhi_epi32(b[r], b[4 + r]);
    }
    for (size_t r = 0; r < chunks; r++) {
        double *s = acc + 8 * r;
        _mm512_store_pd(s, _mm512_add_pd(_mm512_load_pd(s), _mm512_castsi512_pd(c[r])));
    }
}

/* Trees of 1 .. 8 levels from byte planes (d a constant where inlined). */
static inline __attribute__((always_inline)) void ob_sym_planes(const uint8_t *pl, const uint8_t *codes, size_t step,
                                                                size_t ng, size_t last, const uint32_t *off,
                                                                const __m512i *kv, const int d, double *acc) {
    const __m512i perm = _mm512_load_si512(PERM);
    __m512i t0[8], t1[8];
    if (d <= 7)
        for (int j = 0; j < 8; j++) {
            t0[j] = _mm512_load_si512(pl + (size_t)j * ob_plane_bytes((uint32_t)d));
            t1[j] = d == 7 ? _mm512_load_si512(pl + (size_t)j * 128 + 64) : t0[j];
        }
    for (size_t g = 0; g < ng; g++) {
        const __m512i idx = _mm512_permutexvar_epi8(perm, ob_index(codes + g * step, off, kv, (uint32_t)d));
        __m512i p[8];
        if (d <= 6)
            for (int j = 0; j < 8; j++) p[j] = _mm512_permutexvar_epi8(idx, t0[j]);
        else if (d == 7)
            for (int j = 0; j < 8; j++) p[j] = _mm512_permutex2var_epi8(t0[j], idx, t1[j]);
        else {
            const __mmask64 high = _mm512_movepi8_mask(idx); /* bit 7: leaves 128 .. 255 */
            for (int j = 0; j < 8; j++) {
                const uint8_t *q = pl + (size_t)j * 256;
                const __m512i lo = _mm512_permutex2var_epi8(_mm512_load_si512(q), idx, _mm512_load_si512(q + 64));
                const __m512i hi =
                    _mm512_permutex2var_epi8(_mm512_load_si512(q + 128), idx, _mm512_load_si512(q + 192));
                p[j] = _mm512_mask_blend_epi8(high, lo, hi);
            }
        }
        ob_add_planes(p, g + 1 == ng ? (last + 7) / 8 : 8, acc + g * 64);
    }
}
#endif /* OB_VBMI */

static void ob_sym(const obl *L, const ob_tree *T, const uint8_t *codes, size_t step, size_t ng, size_t last,
                   double *acc) {
    const uint32_t d = T->depth;
    const ob_level *lv = L->levels + T->first;
    const double *v = L->leaves + T->leaf;
    if (d == 0) {
        const __m512d c = _mm512_set1_pd(v[0]);
        for (size_t i = 0; i < ng * 64; i += 8) _mm512_store_pd(acc + i, _mm512_add_pd(_mm512_load_pd(acc + i), c));
        return;
    }
    uint32_t off[OB_MAX_DEPTH];
    __m512i kv[OB_MAX_DEPTH];
    for (uint32_t i = 0; i < d; i++) off[i] = lv[i].off, kv[i] = _mm512_set1_epi8((char)lv[i].k);
#ifdef OB_VBMI
    const uint8_t *pl = L->planes + (size_t)T->plane * 64;
    switch (d) {
    case 1: ob_sym_planes(pl, codes, step, ng, last, off, kv, 1, acc); return;
    case 2: ob_sym_planes(pl, codes, step, ng, last, off, kv, 2, acc); return;
    case 3: ob_sym_planes(pl, codes, step, ng, last, off, kv, 3, acc); return;
    case 4: ob_sym_planes(pl, codes, step, ng, last, off, kv, 4, acc); return;
    case 5: ob_sym_planes(pl, codes, step, ng, last, off, kv, 5, acc); return;
    case 6: ob_sym_planes(pl, codes, step, ng, last, off, kv, 6, acc); return;
    case 7: ob_sym_planes(pl, codes, step, ng, last, off, kv, 7, acc); return;
    case 8: ob_sym_planes(pl, codes, step, ng, last, off, kv, 8, acc); return;
    default: break;
    }
#endif
    switch (d) {
    case 1: ob_sym_small(v, codes, step, ng, last, off, kv, 1, acc); return;
    case 2: ob_sym_small(v, codes, step, ng, last, off, kv, 2, acc); return;
    case 3: ob_sym_small(v, codes, step, ng, last, off, kv, 3, acc); return;
    case 4: ob_sym_small(v, codes, step, ng, last, off, kv, 4, acc); return;
    case 5: ob_sym_small(v, codes, step, ng, last, off, kv, 5, acc); return;
    case 6: ob_sym_small(v, codes, step, ng, last, off, kv, 6, acc); return;
    default: break;
    }
    uint8_t ix[64] __attribute__((aligned(64))), hi[64] __attribute__((aligned(64)));
    if (d <= 8) {
        for (size_t g = 0; g < ng; g++) {
            _mm512_store_si512(ix, ob_index(codes + g * step, off, kv, d));
            tsl_add_leaves8(ix, g + 1 == ng ? last : 64, v, acc + g * 64);
        }
        return;
    }
    for (size_t g = 0; g < ng; g++) { /* 9 .. 16 levels: the index's high byte, then its low byte */
        _mm512_store_si512(hi, ob_index(codes + g * step, off, kv, d - 8));
        _mm512_store_si512(ix, ob_index(codes + g * step, off + (d - 8), kv + (d - 8), 8));
        ob_add_deep(v, hi, ix, g + 1 == ng ? last : 64, acc + g * 64);
    }
}

#include "engines/templates/oblivious_template.h"

#ifdef OB_VBMI
const ob_kernels tse_oblivious_avx512vbmi = {TS_ISA_AVX512, OB_LANES, ob_avx512vbmi_kernel, 1, ob_avx512vbmi_kernel_near};
#else
const ob_kernels tse_oblivious_avx512 = {TS_ISA_AVX512, OB_LANES, ob_avx512_kernel, 0, ob_avx512_kernel_near};
#endif

#endif
