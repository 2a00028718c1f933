/* vqs_avx512.c: the vQS kernels for AVX-512 (16 documents per register; mask registers, vplzcnt, gathers). */
#define TS_ISA_FILE /* built with -mavx512f -mavx512cd -mavx512bw -mavx512dq -mavx512vl: see CMakeLists.txt */
#include "engines/vqs.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#include <string.h>

/*
 * Lanes: 16 floats per zmm register, and the set of lanes is a __mmask16: a conditional
 * update is one masked AND (vpandd/vpandq with a k register), so lanes where the node
 * is true are left untouched without blending. With 64-bit words the 16 lanes' words
 * fill two registers, updated under the low and high 8 bits of the mask. Exit leaves:
 * isolate the lowest set bit (b & -b), vplzcntd/q gives 31/63 minus its index, and
 * vgatherdpd/vgatherqpd fetch 8 leaf values at a time.
 */
typedef __m512 vqs_vf;
typedef __mmask16 vqs_lm;

static inline vqs_vf vqs_load(const float *p) { return _mm512_load_ps(p); }

static inline vqs_lm vqs_split(vqs_vf v, int has_zero, vqs_lm *nan, vqs_lm *zero) {
    *nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
    *zero = has_zero ? _mm512_cmp_ps_mask(_mm512_abs_ps(v), _mm512_set1_ps(TSM_ZERO_RANGE), _CMP_LE_OQ) : 0;
    return (vqs_lm)~(*nan | *zero);
}

static inline vqs_lm vqs_gt(vqs_vf v, vqs_lm act, float t) {
    return _mm512_mask_cmp_ps_mask(act, v, _mm512_set1_ps(t), _CMP_GT_OQ);
}

static inline int vqs_none(vqs_lm k) { return k == 0; }

static inline void vqs_and32(uint32_t *bv, vqs_lm k, uint32_t m) {
    __m512i b = _mm512_load_si512(bv);
    _mm512_store_si512(bv, _mm512_mask_and_epi32(b, k, b, _mm512_set1_epi32((int)m)));
}

static inline void vqs_and64(uint64_t *bv, vqs_lm k, uint64_t m) {
    __m512i mm = _mm512_set1_epi64((long long)m);
    __m512i b0 = _mm512_load_si512(bv), b1 = _mm512_load_si512(bv + 8);
    _mm512_store_si512(bv, _mm512_mask_and_epi64(b0, (__mmask8)k, b0, mm));
    _mm512_store_si512(bv + 8, _mm512_mask_and_epi64(b1, (__mmask8)(k >> 8), b1, mm));
}

static inline void vqs_leaves32(const uint32_t *bv, const double *leaves, double *acc) {
    __m512i b = _mm512_load_si512(bv);
    __m512i low = _mm512_and_si512(b, _mm512_sub_epi32(_mm512_setzero_si512(), b));
    __m512i idx = _mm512_sub_epi32(_mm512_set1_epi32(31), _mm512_lzcnt_epi32(low));
    __m512d g0 = _mm512_i32gather_pd(_mm512_castsi512_si256(idx), leaves, 8);
    __m512d g1 = _mm512_i32gather_pd(_mm512_extracti64x4_epi64(idx, 1), leaves, 8);
    _mm512_store_pd(acc, _mm512_add_pd(_mm512_load_pd(acc), g0));
    _mm512_store_pd(acc + 8, _mm512_add_pd(_mm512_load_pd(acc + 8), g1));
}

static inline void vqs_leaves64(const uint64_t *bv, const double *leaves, double *acc) {
    const __m512i n63 = _mm512_set1_epi64(63);
    for (int h = 0; h < 2; h++) {
        __m512i b = _mm512_load_si512(bv + 8 * h);
        __m512i low = _mm512_and_si512(b, _mm512_sub_epi64(_mm512_setzero_si512(), b));
        __m512i idx = _mm512_sub_epi64(n63, _mm512_lzcnt_epi64(low));
        __m512d g = _mm512_i64gather_pd(idx, leaves, 8);
        _mm512_store_pd(acc + 8 * h, _mm512_add_pd(_mm512_load_pd(acc + 8 * h), g));
    }
}

#define VQS_LANES 16
#define VQS(name) vqs_avx512_##name
#include "engines/templates/vqs_template.h"

const vqs_kernels tse_vqs_avx512 = {TS_ISA_AVX512, VQS_LANES, vqs_avx512_w32, vqs_avx512_w64, vqs_avx512_wn};

#endif
