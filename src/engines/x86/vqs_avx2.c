/* vqs_avx2.c: the vQS kernels for AVX2 (8 documents per register; compare masks as vectors, gathers). */
#define TS_ISA_FILE /* built with -mavx2 -mbmi -mbmi2 -mlzcnt: see CMakeLists.txt */
#include "engines/vqs.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#include <string.h>

/*
 * Lanes: 8 floats per ymm register; a set of lanes is a ymm compare result (all ones in
 * a lane that is in the set). A conditional update clears (k AND NOT mask) from the
 * bitvectors: bv & ~(k & ~m) leaves lanes outside k untouched, one vpandn and one
 * vpand, no branch. With 64-bit words the 8 lanes' words fill two registers and the
 * 32-bit lane mask is widened with vpmovsxdq. Exit leaves, with no vector tzcnt in AVX2:
 * the lowest set bit b & -b converted to float is 2^i, so its exponent field minus 127
 * is i (for 64-bit words the two 32-bit halves are converted and the half that holds
 * the bit wins a max); then vgatherdpd/vgatherqpd fetch 4 leaf values at a time.
 */
typedef __m256 vqs_vf;
typedef __m256 vqs_lm;

static inline vqs_vf vqs_load(const float *p) { return _mm256_load_ps(p); }

static inline vqs_lm vqs_split(vqs_vf v, int has_zero, vqs_lm *nan, vqs_lm *zero) {
    *nan = _mm256_cmp_ps(v, v, _CMP_UNORD_Q);
    if (has_zero) {
        __m256 a = _mm256_and_ps(v, _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff)));
        *zero = _mm256_cmp_ps(a, _mm256_set1_ps(TSM_ZERO_RANGE), _CMP_LE_OQ);
    } else {
        *zero = _mm256_setzero_ps();
    }
    return _mm256_andnot_ps(_mm256_or_ps(*nan, *zero), _mm256_castsi256_ps(_mm256_set1_epi32(-1)));
}

static inline vqs_lm vqs_gt(vqs_vf v, vqs_lm act, float t) {
    return _mm256_and_ps(_mm256_cmp_ps(v, _mm256_set1_ps(t), _CMP_GT_OQ), act);
}

static inline int vqs_none(vqs_lm k) { return _mm256_testz_ps(k, k); }

static inline void vqs_and32(uint32_t *bv, vqs_lm k, uint32_t m) {
    __m256i clear = _mm256_andnot_si256(_mm256_set1_epi32((int)m), _mm256_castps_si256(k));
    __m256i *p = (__m256i *)bv;
    _mm256_store_si256(p, _mm256_andnot_si256(clear, _mm256_load_si256(p)));
}

static inline void vqs_and64(uint64_t *bv, vqs_lm k, uint64_t m) {
    __m256i ki = _mm256_castps_si256(k), nm = _mm256_set1_epi64x((long long)~m);
    __m256i k0 = _mm256_cvtepi32_epi64(_mm256_castsi256_si128(ki));
    __m256i k1 = _mm256_cvtepi32_epi64(_mm256_extracti128_si256(ki, 1));
    __m256i *p = (__m256i *)bv;
    _mm256_store_si256(p, _mm256_andnot_si256(_mm256_and_si256(k0, nm), _mm256_load_si256(p)));
    _mm256_store_si256(p + 1, _mm256_andnot_si256(_mm256_and_si256(k1, nm), _mm256_load_si256(p + 1)));
}

/* Per 32-bit lane: the index of the lowest set bit of x (x != 0), or -127 for x == 0. */
static inline __m256i lowest_bit32(__m256i x) {
    __m256i low = _mm256_and_si256(x, _mm256_sub_epi32(_mm256_setzero_si256(), x));
    __m256i e = _mm256_and_si256(_mm256_srli_epi32(_mm256_castps_si256(_mm256_cvtepi32_ps(low)), 23),
                                 _mm256_set1_epi32(0xFF));
    return _mm256_sub_epi32(e, _mm256_set1_epi32(127));
}

static inline void vqs_leaves32(const uint32_t *bv, const double *leaves, double *acc) {
    __m256i idx = lowest_bit32(_mm256_load_si256((const __m256i *)bv));
    __m256d g0 = _mm256_i32gather_pd(leaves, _mm256_castsi256_si128(idx), 8);
    __m256d g1 = _mm256_i32gather_pd(leaves, _mm256_extracti128_si256(idx, 1), 8);
    _mm256_store_pd(acc, _mm256_add_pd(_mm256_load_pd(acc), g0));
    _mm256_store_pd(acc + 4, _mm256_add_pd(_mm256_load_pd(acc + 4), g1));
}

static inline void vqs_leaves64(const uint64_t *bv, const double *leaves, double *acc) {
    /* The lowest set bit of a 64-bit word whose lowest set bit is in lane half h: that
     * half's float exponent says i - 32h; the other half (zero, or above it) loses the max. */
    for (int h = 0; h < 2; h++) {
        __m256i b = _mm256_load_si256((const __m256i *)(bv + 4 * h));
        __m256i low = _mm256_and_si256(b, _mm256_sub_epi64(_mm256_setzero_si256(), b));
        __m256i e = _mm256_and_si256(_mm256_srli_epi32(_mm256_castps_si256(_mm256_cvtepi32_ps(low)), 23),
                                     _mm256_set1_epi32(0xFF));
        /* the low half: e - 127; the high half: e - 127 + 32; a zero half: <= -95 */
        __m256i i = _mm256_sub_epi32(e, _mm256_set_epi32(95, 127, 95, 127, 95, 127, 95, 127));
        i = _mm256_max_epi32(i, _mm256_shuffle_epi32(i, _MM_SHUFFLE(2, 3, 0, 1)));
        i = _mm256_and_si256(i, _mm256_set1_epi64x(0xFFFFFFFF));
        __m256d g = _mm256_i64gather_pd(leaves, i, 8);
        _mm256_store_pd(acc + 4 * h, _mm256_add_pd(_mm256_load_pd(acc + 4 * h), g));
    }
}

#define VQS_LANES 8
#define VQS(name) vqs_avx2_##name
#include "engines/templates/vqs_template.h"

const vqs_kernels tse_vqs_avx2 = {TS_ISA_AVX2, VQS_LANES, vqs_avx2_w32, vqs_avx2_w64, vqs_avx2_wn};

#endif
