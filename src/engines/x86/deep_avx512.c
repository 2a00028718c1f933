/* deep_avx512.c: the deep engine's top levels for 64 documents per call (deep.h): one 64-bit mask of the documents going right per node from four VPCMPUD, the exits from the masks. */
#include <immintrin.h>

#include "engines/common/kernels.h"
#include "engines/deep.h"

/*
 * Hot loop (long on purpose). Node h's mask m_h: bit j set iff document j goes right
 * at h (four compares of 16 keys against the broadcast threshold key). The documents
 * that reach h: reach[0] = all, reach[2h + 1] = reach[h] & ~m_h, reach[2h + 2] =
 * reach[h] & m_h; those that go right at level l: right[l] = OR of reach[h] & m_h over
 * h of level l. A document's exit has bit K - 1 - l set iff it is in right[l]: K masked
 * byte adds build the 64 exits in one register.
 */
static void top_avx512(const uint32_t *ck, const uint32_t *col, const uint32_t *thr, uint32_t k, uint8_t *exits,
                       const uint32_t *ex, uint32_t *starts) {
    uint64_t reach[1u << DEEP_TOP_MAX];
    __m512i e = _mm512_setzero_si512();
    reach[0] = ~(uint64_t)0;
    for (uint32_t l = 0, h = 0; l < k; l++) {
        uint64_t right = 0;
        for (uint32_t end = 2 * h + 1; h < end; h++) {
            const uint32_t *c = ck + col[h];
            const __m512i t = _mm512_set1_epi32((int)thr[h]);
            const __mmask16 m0 = _mm512_cmpgt_epu32_mask(_mm512_loadu_si512(c), t);
            const __mmask16 m1 = _mm512_cmpgt_epu32_mask(_mm512_loadu_si512(c + 16), t);
            const __mmask16 m2 = _mm512_cmpgt_epu32_mask(_mm512_loadu_si512(c + 32), t);
            const __mmask16 m3 = _mm512_cmpgt_epu32_mask(_mm512_loadu_si512(c + 48), t);
            const uint64_t m = (uint64_t)m0 | (uint64_t)m1 << 16 | (uint64_t)m2 << 32 | (uint64_t)m3 << 48;
            const uint64_t r = reach[h];
            right |= r & m;
            if (l + 1 < k) reach[2 * h + 1] = r & ~m, reach[2 * h + 2] = r & m;
        }
        e = _mm512_mask_add_epi8(e, (__mmask64)right, e, _mm512_set1_epi8((char)(1u << (k - 1 - l))));
    }
    _mm512_storeu_si512(exits, e);
    if (!starts) return;
    /* starts[j] = ex[exits[j]] (k <= 5: 32 exits at most, two registers of them) */
    const __m512i t0 = _mm512_loadu_si512(ex), t1 = k == 5 ? _mm512_loadu_si512(ex + 16) : t0;
    _mm512_storeu_si512(starts, _mm512_permutex2var_epi32(t0, _mm512_cvtepu8_epi32(_mm512_extracti32x4_epi32(e, 0)), t1));
    _mm512_storeu_si512(starts + 16, _mm512_permutex2var_epi32(t0, _mm512_cvtepu8_epi32(_mm512_extracti32x4_epi32(e, 1)), t1));
    _mm512_storeu_si512(starts + 32, _mm512_permutex2var_epi32(t0, _mm512_cvtepu8_epi32(_mm512_extracti32x4_epi32(e, 2)), t1));
    _mm512_storeu_si512(starts + 48, _mm512_permutex2var_epi32(t0, _mm512_cvtepu8_epi32(_mm512_extracti32x4_epi32(e, 3)), t1));
}

const deep_kernels tse_deep_avx512 = {TS_ISA_AVX512, top_avx512};
