/* vqs_sse42.c: the vQS kernels for SSE4.2 (4 documents per register). */
#define TS_ISA_FILE /* built with -msse4.2 -mpopcnt: see CMakeLists.txt */
#include "engines/vqs.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#include <string.h>

/*
 * Lanes: 4 floats per xmm register; a set of lanes is an xmm compare result, and a
 * conditional update clears (k AND NOT mask) as in the AVX2 kernels (64-bit words: two
 * registers, the lane mask widened with pmovsxdq). Exit leaves: the lowest set bit's
 * index from the float exponent of b & -b, then four scalar loads (SSE has no gather).
 */
typedef __m128 vqs_vf;
typedef __m128 vqs_lm;

static inline vqs_vf vqs_load(const float *p) { return _mm_load_ps(p); }

static inline vqs_lm vqs_split(vqs_vf v, int has_zero, vqs_lm *nan, vqs_lm *zero) {
    *nan = _mm_cmpunord_ps(v, v);
    if (has_zero) {
        __m128 a = _mm_and_ps(v, _mm_castsi128_ps(_mm_set1_epi32(0x7fffffff)));
        *zero = _mm_cmple_ps(a, _mm_set1_ps(TSM_ZERO_RANGE));
    } else {
        *zero = _mm_setzero_ps();
    }
    return _mm_andnot_ps(_mm_or_ps(*nan, *zero), _mm_castsi128_ps(_mm_set1_epi32(-1)));
}

/* cmpgt is ordered: a NaN lane compares false. */
static inline vqs_lm vqs_gt(vqs_vf v, vqs_lm act, float t) { return _mm_and_ps(_mm_cmpgt_ps(v, _mm_set1_ps(t)), act); }

static inline int vqs_none(vqs_lm k) { return _mm_movemask_ps(k) == 0; }

static inline void vqs_and32(uint32_t *bv, vqs_lm k, uint32_t m) {
    __m128i clear = _mm_andnot_si128(_mm_set1_epi32((int)m), _mm_castps_si128(k));
    __m128i *p = (__m128i *)bv;
    _mm_store_si128(p, _mm_andnot_si128(clear, _mm_load_si128(p)));
}

static inline void vqs_and64(uint64_t *bv, vqs_lm k, uint64_t m) {
    __m128i ki = _mm_castps_si128(k), nm = _mm_set1_epi64x((long long)~m);
    __m128i k0 = _mm_cvtepi32_epi64(ki), k1 = _mm_cvtepi32_epi64(_mm_srli_si128(ki, 8));
    __m128i *p = (__m128i *)bv;
    _mm_store_si128(p, _mm_andnot_si128(_mm_and_si128(k0, nm), _mm_load_si128(p)));
    _mm_store_si128(p + 1, _mm_andnot_si128(_mm_and_si128(k1, nm), _mm_load_si128(p + 1)));
}

static inline void vqs_leaves32(const uint32_t *bv, const double *leaves, double *acc) {
    __m128i b = _mm_load_si128((const __m128i *)bv);
    __m128i low = _mm_and_si128(b, _mm_sub_epi32(_mm_setzero_si128(), b));
    __m128i e = _mm_and_si128(_mm_srli_epi32(_mm_castps_si128(_mm_cvtepi32_ps(low)), 23), _mm_set1_epi32(0xFF));
    __m128i idx = _mm_sub_epi32(e, _mm_set1_epi32(127));
    __m128d l01 = _mm_set_pd(leaves[_mm_extract_epi32(idx, 1)], leaves[_mm_cvtsi128_si32(idx)]);
    __m128d l23 = _mm_set_pd(leaves[_mm_extract_epi32(idx, 3)], leaves[_mm_extract_epi32(idx, 2)]);
    _mm_store_pd(acc, _mm_add_pd(_mm_load_pd(acc), l01));
    _mm_store_pd(acc + 2, _mm_add_pd(_mm_load_pd(acc + 2), l23));
}

static inline void vqs_leaves64(const uint64_t *bv, const double *leaves, double *acc) {
    __m128d l01 = _mm_set_pd(leaves[__builtin_ctzll(bv[1])], leaves[__builtin_ctzll(bv[0])]);
    __m128d l23 = _mm_set_pd(leaves[__builtin_ctzll(bv[3])], leaves[__builtin_ctzll(bv[2])]);
    _mm_store_pd(acc, _mm_add_pd(_mm_load_pd(acc), l01));
    _mm_store_pd(acc + 2, _mm_add_pd(_mm_load_pd(acc + 2), l23));
}

#define VQS_LANES 4
#define VQS(name) vqs_sse42_##name
#include "engines/templates/vqs_template.h"

const vqs_kernels tse_vqs_sse42 = {TS_ISA_SSE42, VQS_LANES, vqs_sse42_w32, vqs_sse42_w64, vqs_sse42_wn};

#endif
