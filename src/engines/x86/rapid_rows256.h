/* rapid_rows256.h: rapid's rows of 32 byte lanes (a row's start below a skip, the exit leaves) and its pair codes, shared by the AVX2 kernels and the AVX-512 kernels' pairs (rapid.h "Pairs"). */
#ifndef TS_ENGINES_X86_RAPID_ROWS256_H
#define TS_ENGINES_X86_RAPID_ROWS256_H

#ifndef TS_ISA_FILE
#error "rapid_rows256.h is for the x86 kernel files built with AVX2 (src/engines/x86/rapid_*.c)"
#endif

#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "engines/rapid.h"

/* The lane's leaves of row j below its skip, t = skip - 8 j (saturated), cleared: 0xFF << t
 * from a table, t + 0x70 (saturated) as its index so that t >= 16 sets bit 7 (vpshufb
 * gives 0) and t = 8 .. 15 read zeros. */
static inline __m256i rs256_row_start(__m256i skip, uint32_t j) {
    const __m256i below = _mm256_broadcastsi128_si256(
        _mm_setr_epi8(-1, -2, -4, -8, -16, -32, -64, -128, 0, 0, 0, 0, 0, 0, 0, 0));
    __m256i t = _mm256_subs_epu8(skip, _mm256_set1_epi8((char)(8 * j)));
    return _mm256_shuffle_epi8(below, _mm256_adds_epu8(t, _mm256_set1_epi8(0x70)));
}

/* The exit leaves of a tree (or a pair) being found, by vector masks (blends; the SIMDe
 * build that checks the AVX-512 kernels has no 256-bit byte tests into mask registers). */
typedef struct rs256_exit {
    __m256i idx, byt, left; /* left: 0xFF in the lanes that have met only zero rows */
} rs256_exit;

static inline void rs256_exit_init(rs256_exit *x) {
    x->idx = x->byt = _mm256_setzero_si256();
    x->left = _mm256_set1_epi8(-1);
}

/* Row j (rows in order) for the lanes that had only zero rows so far; 1 when every lane has one. */
static inline int rs256_exit_row(rs256_exit *x, __m256i row, uint32_t j) {
    __m256i now = _mm256_andnot_si256(_mm256_cmpeq_epi8(row, _mm256_setzero_si256()), x->left);
    x->idx = _mm256_blendv_epi8(x->idx, _mm256_set1_epi8((char)(j * 8)), now);
    x->byt = _mm256_blendv_epi8(x->byt, row, now);
    x->left = _mm256_andnot_si256(now, x->left);
    return _mm256_testz_si256(x->left, x->left);
}

/* Each lane's exit leaf: 8 * row + the lowest set bit of its byte (two vpshufb lookups on
 * nibbles). */
static inline __m256i rs256_exit_leaves(const rs256_exit *x) {
    const __m256i lut_lo = _mm256_broadcastsi128_si256(_mm_setr_epi8(0, 0, 1, 0, 2, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0));
    const __m256i lut_hi = _mm256_broadcastsi128_si256(_mm_setr_epi8(0, 4, 5, 0, 6, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0));
    const __m256i nib = _mm256_set1_epi8(0x0F);
    __m256i low = _mm256_and_si256(x->byt, _mm256_sub_epi8(_mm256_setzero_si256(), x->byt));
    __m256i bit = _mm256_or_si256(_mm256_shuffle_epi8(lut_lo, _mm256_and_si256(low, nib)),
                                  _mm256_shuffle_epi8(lut_hi, _mm256_and_si256(_mm256_srli_epi16(low, 4), nib)));
    return _mm256_add_epi8(x->idx, bit);
}

/* A pair's exit leaves (byte 2i tree A's, 2i + 1 tree B's) unzipped: A's 16 at ix, B's
 * at ix + 16. */
static inline void rs256_pair_exit_store(const rs256_exit *x, uint8_t *ix) {
    const __m128i odd_even = _mm_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15);
    const __m256i v = _mm256_shuffle_epi8(rs256_exit_leaves(x), _mm256_broadcastsi128_si256(odd_even));
    _mm256_store_si256((__m256i *)ix, _mm256_permute4x64_epi64(v, 0xD8)); /* qwords 0, 2, 1, 3 */
}

/* A pair entry's passing lanes: A's even copy OR B's odd copy of the pair codes pc, below
 * its k word (signed: the pair codes and k are XOR 0x80). one_load (a constant): both
 * offsets by one 8-byte load (rapid.h "Padded rows": their unrolled rows take it, 4-12%
 * faster there; in the rows' loops it measured up to 19% slower on XGBoost's trees). */
static inline __attribute__((always_inline)) __m256i rs256_pair_pass(const uint8_t *pc, const rs_pair *p,
                                                                     const int one_load) {
    size_t a = p->off[0], b = p->off[1];
    if (one_load) {
        uint64_t o;
        memcpy(&o, p->off, sizeof o);
        __asm__("" : "+r"(o)); /* (else the compiler loads the halves apart) */
        a = (uint32_t)o, b = o >> 32;
    }
    const __m256i c = _mm256_or_si256(_mm256_load_si256((const __m256i *)(pc + a)),
                                      _mm256_load_si256((const __m256i *)(pc + b)));
    return _mm256_cmpgt_epi8(_mm256_set1_epi32((int)p->k), c);
}

/* A group's codes (the first 16 lanes of each slot's `lanes`) into the pair codes: each
 * slot's 16 codes XOR x80 in both halves, spread to the even bytes (its even copy) and to
 * the odd ones (its odd copy). */
static inline void rs256_pair_codes(const uint8_t *codes, size_t lanes, uint32_t n_slots, uint32_t x80, uint8_t *pc) {
    const __m256i flip = _mm256_set1_epi8((char)x80);
    const __m256i ev = _mm256_setr_epi8(0, -1, 1, -1, 2, -1, 3, -1, 4, -1, 5, -1, 6, -1, 7, -1, 8, -1, 9, -1, 10, -1,
                                        11, -1, 12, -1, 13, -1, 14, -1, 15, -1);
    const __m256i od = _mm256_setr_epi8(-1, 0, -1, 1, -1, 2, -1, 3, -1, 4, -1, 5, -1, 6, -1, 7, -1, 8, -1, 9, -1, 10,
                                        -1, 11, -1, 12, -1, 13, -1, 14, -1, 15);
    for (uint32_t s = 0; s < n_slots; s++) {
        const __m128i c = _mm_load_si128((const __m128i *)(codes + lanes * s));
        const __m256i v = _mm256_xor_si256(_mm256_broadcastsi128_si256(c), flip);
        _mm256_store_si256((__m256i *)(pc + RS_PAIR_SLOT * s), _mm256_shuffle_epi8(v, ev));
        _mm256_store_si256((__m256i *)(pc + RS_PAIR_SLOT * s + 32), _mm256_shuffle_epi8(v, od));
    }
}

/* The pair rows as rapid_template.h's RS_PAIRS takes them (each kernel file adds its
 * rs_pair_update, rs_pair_update_skip and rs_pair_codes). */
typedef __m256i rs_pv;
static inline rs_pv rs_pv_zeros(void) { return _mm256_setzero_si256(); }
static inline rs_pv rs_pv_start(rs_pv skip, uint32_t j) { return rs256_row_start(skip, j); }
typedef rs256_exit rs_pexit;
static inline void rs_pexit_init(rs_pexit *x) { rs256_exit_init(x); }
static inline int rs_pexit_row(rs_pexit *x, rs_pv row, uint32_t j) { return rs256_exit_row(x, row, j); }
static inline void rs_pexit_store(const rs_pexit *x, uint8_t *ix) { rs256_pair_exit_store(x, ix); }

#endif /* TS_ENGINES_X86_RAPID_ROWS256_H */
