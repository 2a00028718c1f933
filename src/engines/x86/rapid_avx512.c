/* rapid_avx512.c: the rapid kernels for AVX-512BW: 64 documents per register of bytes, compares into mask registers. */
#define TS_ISA_FILE /* built with -mavx512f -mavx512cd -mavx512bw -mavx512dq -mavx512vl: see CMakeLists.txt */
#include "engines/rapid.h"
#include "engines/common/leaves_avx512.h"
#include "engines/x86/rapid_rows256.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#include <math.h>

/*
 * An entry is a 32-bit broadcast of k + 1 and of the mask, then per group of documents
 * vpcmpub (k + 1 <= code: the lanes that fail) into a mask register and a masked move of
 * (row AND the mask): the other lanes keep their row byte. Exit leaves: per row, vptestmb
 * finds the non-zero bytes, and the lanes meeting their first take the row number and
 * the byte (masked moves); the lowest set bit comes from two vpshufb lookups on nibbles;
 * the leaf values come from a table in registers (vpermt2pd) for trees of up to 64
 * leaves, from scalar loads for wider ones (vgatherdpd measured slower than both on
 * Zen 4).
 */
typedef __m512i rs_v;

/* dst{k} = src for bytes, in place. GCC 12 writes a merge-masked move to a new register
 * and copies it back, one more instruction per use in the entry and exit-row loops
 * (msn-lgb-1000x256: 4.00 -> 3.60 us/doc without the copies, Zen 4); the asm keeps it in
 * place. Without AVX-512 in the compiler (the SIMDe test build) the intrinsic stands in. */
#ifdef __AVX512BW__
#define RS_MASK_MOV8(dst, k, src) __asm__("vmovdqu8 %2, %0%{%1%}" : "+v"(dst) : "Yk"(k), "v"(src))
#define RS_MASK_MAX8(dst, k, src) __asm__("vpmaxub %2, %0, %0%{%1%}" : "+v"(dst) : "Yk"(k), "v"(src))
#else
#define RS_MASK_MOV8(dst, k, src) ((dst) = _mm512_mask_mov_epi8((dst), (k), (src)))
#define RS_MASK_MAX8(dst, k, src) ((dst) = _mm512_mask_max_epu8((dst), (k), (dst), (src)))
#endif

static inline rs_v rs_ones(void) { return _mm512_set1_epi8(-1); }

typedef __m512i rs_kv, rs_mv;
static inline rs_kv rs_k(const rs_entry *e) { return _mm512_set1_epi32((int)e->k4); }
static inline rs_mv rs_m(const rs_entry *e) { return _mm512_set1_epi32((int)e->m4); }

/* k1 = k + 1: a lane fails where k1 <= code, and ANDs the mask into its row byte. */
static inline rs_v rs_update8(const rsl *L, rs_v row, const uint8_t *codes, rs_kv k1, rs_mv m) {
    (void)L;
    const __mmask64 fail = _mm512_cmple_epu8_mask(k1, _mm512_load_si512(codes));
    RS_MASK_MOV8(row, fail, _mm512_and_si512(row, m));
    return row;
}

static inline rs_v rs_zeros(void) { return _mm512_setzero_si512(); }
static inline rs_kv rs_z(const rs_skip *s) { return _mm512_set1_epi32((int)s->z4); }

/* As in the AVX2 kernel: 0xFF << (skip - 8 j) from a table. */
static inline rs_v rs_row_start(rs_v skip, uint32_t j) {
    const __m512i below = _mm512_broadcast_i32x4(_mm_setr_epi8(-1, -2, -4, -8, -16, -32, -64, -128, 0, 0, 0, 0, 0, 0, 0, 0));
    __m512i t = _mm512_subs_epu8(skip, _mm512_set1_epi8((char)(8 * j)));
    return _mm512_shuffle_epi8(below, _mm512_adds_epu8(t, _mm512_set1_epi8(0x70)));
}

static inline void rs_update_skip(const rsl *L, rs_v *row, rs_v *skip, const uint8_t *codes, rs_kv k1, rs_mv m,
                                  rs_kv z) {
    (void)L;
    const __mmask64 fail = _mm512_cmple_epu8_mask(k1, _mm512_load_si512(codes));
    rs_v r = *row, s = *skip;
    RS_MASK_MOV8(r, fail, _mm512_and_si512(r, m));
    RS_MASK_MAX8(s, fail, z);
    *row = r, *skip = s;
}

typedef struct rs_exit {
    __m512i idx, byt;
    __mmask64 left; /* the lanes that have met only zero rows */
} rs_exit;

static inline void rs_exit_init(rs_exit *x) {
    x->idx = x->byt = _mm512_setzero_si512();
    x->left = ~(__mmask64)0;
}

static inline int rs_exit_row(rs_exit *x, rs_v row, uint32_t j) {
    const __mmask64 now = _mm512_mask_test_epi8_mask(x->left, row, row);
    const __m512i at = _mm512_set1_epi8((char)(j * 8));
    __m512i idx = x->idx, byt = x->byt;
    RS_MASK_MOV8(idx, now, at);
    RS_MASK_MOV8(byt, now, row);
    x->idx = idx, x->byt = byt;
    x->left = _kxor_mask64(x->left, now);
    return x->left == 0;
}


/* Each lane's exit leaf: 8 * row + the lowest set bit of its byte (two vpshufb lookups on
 * nibbles). */
static inline __m512i exit_leaves(const rs_exit *x) {
    const __m512i lut_lo = _mm512_broadcast_i32x4(_mm_setr_epi8(0, 0, 1, 0, 2, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0));
    const __m512i lut_hi = _mm512_broadcast_i32x4(_mm_setr_epi8(0, 4, 5, 0, 6, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0));
    const __m512i nib = _mm512_set1_epi8(0x0F);
    __m512i low = _mm512_and_si512(x->byt, _mm512_sub_epi8(_mm512_setzero_si512(), x->byt));
    __m512i bit = _mm512_or_si512(_mm512_shuffle_epi8(lut_lo, _mm512_and_si512(low, nib)),
                                  _mm512_shuffle_epi8(lut_hi, _mm512_and_si512(_mm512_srli_epi16(low, 4), nib)));
    return _mm512_add_epi8(x->idx, bit);
}

static inline void rs_exit_add(const rs_exit *x, const double *lv, uint32_t rows, double *acc, uint32_t lanes) {
    const __m512i leaf = exit_leaves(x);
    if (rows <= 8) {
        /* the quarter index of vextracti32x4 is an immediate: four copies, not a loop
         * (clang does not unroll one at -O1 and then rejects the variable) */
        const __m128i part[4] = {_mm512_extracti32x4_epi32(leaf, 0), _mm512_extracti32x4_epi32(leaf, 1),
                                 _mm512_extracti32x4_epi32(leaf, 2), _mm512_extracti32x4_epi32(leaf, 3)};
        /* up to 64 leaves: their values in 8 registers, looked up with one vpermt2pd per 16
         * leaves the tree has and blends on bits 4 and 5 of the index; measured 1.6-2.8x
         * faster than vgatherdpd on Zen 4 */
        const __m512d l0 = _mm512_loadu_pd(lv), l1 = _mm512_loadu_pd(lv + 8), l2 = _mm512_loadu_pd(lv + 16),
                      l3 = _mm512_loadu_pd(lv + 24), l4 = _mm512_loadu_pd(lv + 32), l5 = _mm512_loadu_pd(lv + 40),
                      l6 = _mm512_loadu_pd(lv + 48), l7 = _mm512_loadu_pd(lv + 56);
        for (int q = 0; q < 4; q++)
            for (int h = 0; h < 2; h++) {
                if ((uint32_t)(16 * q + 8 * h) >= lanes) return;
                __m512i i = _mm512_cvtepu8_epi64(h ? _mm_srli_si128(part[q], 8) : part[q]);
                __m512d v = _mm512_permutex2var_pd(l0, i, l1); /* leaves 0 .. 15 */
                if (rows > 2) { /* and 16 .. 31 */
                    __mmask8 b4 = _mm512_test_epi64_mask(i, _mm512_set1_epi64(16));
                    v = _mm512_mask_blend_pd(b4, v, _mm512_permutex2var_pd(l2, i, l3));
                    if (rows > 4) { /* and 32 .. 63 */
                        __m512d w = _mm512_mask_blend_pd(b4, _mm512_permutex2var_pd(l4, i, l5),
                                                         _mm512_permutex2var_pd(l6, i, l7));
                        v = _mm512_mask_blend_pd(_mm512_test_epi64_mask(i, _mm512_set1_epi64(32)), v, w);
                    }
                }
                double *a = acc + 16 * q + 8 * h;
                _mm512_store_pd(a, _mm512_add_pd(_mm512_load_pd(a), v));
            }
        return;
    }
    /* wider trees: the values lane by lane (scalar loads measured 2% faster than
     * vgatherdpd on Zen 4's 256-leaf models) */
    uint8_t ix[64] __attribute__((aligned(64)));
    _mm512_store_si512(ix, leaf);
    tsl_add_leaves8(ix, lanes, lv, acc);
}

/* Deferred exits (rapid_template.h), for the GFNI kernel below (Intel's CPUs: gathers
 * measured slower than register lookups and scalar loads on Zen 4, which takes the first
 * kernel): block_g of 2 groups or more keeps 16 trees' exit leaves, then adds their values
 * eight documents at a time, one vgatherdpd per tree, the sums in a register (tree order:
 * naive's bits). Intel Emerald Rapids, 1,000 rows, libs_ab: 8-11% faster than each tree's
 * values added at its exit (msn-sgb-500x64 0.81 -> 0.73 us/doc, dev 500 x 64 0.70 ->
 * 0.62, msn-lgb-1000x256 3.30 -> 2.99); 32 trees a flush: no faster. One group (block1,
 * calls of at most 64 rows) keeps rs_exit_add: gathers there measured 4-13% slower than
 * its lookups in registers. */

static inline void rs_exit_store(const rs_exit *x, uint8_t *ix) { _mm512_store_si512(ix, exit_leaves(x)); }

static inline void rs_leaves_flush(const double *const *lv, const uint8_t *ix, size_t step, uint32_t n, double *acc,
                                   uint32_t lanes) {
    for (size_t l = 0; l < lanes; l += 8) {
        __m512d a = _mm512_load_pd(acc + l);
        for (uint32_t q = 0; q < n; q++) {
            const __m256i i = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(ix + q * step + l)));
            a = _mm512_add_pd(a, _mm512_i32gather_pd(i, lv[q], 8));
        }
        _mm512_store_pd(acc + l, a);
    }
}

/* Float leaves (rapid.h leaves_f: every value a float, at most 64 leaves a tree): tree by
 * tree, its 64 values in four registers, 16 documents' values by two vpermt2ps and a blend
 * on bit 5 of the index, widened to doubles (exactly: they were doubles of floats) and
 * added to the sums in memory, so each document's sum takes the trees in order as
 * rs_leaves_flush's (naive's bits). */
static inline void rs_leaves_flush_f(const float *const *lv, const uint8_t *ix, size_t step, uint32_t n, double *acc,
                                     uint32_t lanes) {
    const __m512i b5 = _mm512_set1_epi32(32);
    for (uint32_t q = 0; q < n; q++) {
        const float *t = lv[q];
        const __m512 t0 = _mm512_loadu_ps(t), t1 = _mm512_loadu_ps(t + 16), t2 = _mm512_loadu_ps(t + 32),
                     t3 = _mm512_loadu_ps(t + 48);
        const uint8_t *x = ix + q * step;
        for (uint32_t l = 0; l < lanes; l += 16) {
            const __m512i i = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(x + l)));
            const __m512 v = _mm512_mask_blend_ps(_mm512_test_epi32_mask(i, b5), _mm512_permutex2var_ps(t0, i, t1),
                                                  _mm512_permutex2var_ps(t2, i, t3));
            const __m512d lo = _mm512_cvtps_pd(_mm512_castps512_ps256(v));
            const __m512d hi = _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
            _mm512_store_pd(acc + l, _mm512_add_pd(_mm512_load_pd(acc + l), lo));
            _mm512_store_pd(acc + l + 8, _mm512_add_pd(_mm512_load_pd(acc + l + 8), hi));
        }
    }
}

static inline void rs_store_row(uint8_t *p, rs_v row) { _mm512_storeu_si512(p, row); }

/* Pairs (rapid.h "Pairs") in 32-byte registers, byte 2i tree A's document i, 2i + 1 tree
 * B's: an entry is a vpor of the two trees' copies of codes (one a load operand), a
 * compare into a vector and one vpternlogd (row AND (pass OR m)), three instructions for
 * two trees, on the three vector ports that 256-bit instructions have (512-bit ones have
 * two), where the 64 lanes of the kernel above take two or three on two ports for one tree
 * whatever the count of documents. */
/* rs_pv, its start and its exits: rapid_rows256.h (the exits by vector masks: at 16 rows
 * 6-10% faster here than by mask registers and masked moves, dev 1.96 -> 1.78 us/doc,
 * msn-lgb-1000x64 3.92 -> 3.67) */
static inline __attribute__((always_inline)) rs_pv rs_pair_update(rs_pv row, const uint8_t *pc, const rs_pair *p,
                                                                   const int one_load) {
    return _mm256_ternarylogic_epi32(row, rs256_pair_pass(pc, p, one_load), _mm256_set1_epi32((int)p->m), 0xE0); /* a & (b | c) */
}

static inline __attribute__((always_inline)) void rs_pair_update_skip(rs_pv *row, rs_pv *skip, const uint8_t *pc,
                                                                      const rs_pair_skip *s, const int one_load) {
    const __m256i pass = rs256_pair_pass(pc, &s->e, one_load);
    *row = _mm256_ternarylogic_epi32(*row, pass, _mm256_set1_epi32((int)s->e.m), 0xE0);
    *skip = _mm256_max_epu8(*skip, _mm256_andnot_si256(pass, _mm256_set1_epi32((int)s->z)));
}

static inline void rs_pair_codes(const uint8_t *codes, uint32_t n_slots, uint32_t x80, uint8_t *pc) {
    rs256_pair_codes(codes, 64, n_slots, x80, pc);
}

/* code + 1 in the lanes where t < v. */
static inline __m512i add_below(__m512i code, __m512 t, __m512 v) {
    return _mm512_mask_add_epi32(code, _mm512_cmp_ps_mask(t, v, _CMP_LT_OQ), code, _mm512_set1_epi32(1));
}

/* quant.h "Block tables", for the 64 values of a group at once (four registers side by
 * side: the binary search is a chain of dependent permutes, the counts chains of masked
 * adds): the lane's block b' among the pivots, then the 15 thresholds of its block, then
 * T[255] (n = 256). */
/* The lanes' blocks b' among the pivots P of a block table (a binary search of dependent
 * permutes, four registers side by side). Here and below, nv (a constant once inlined: 1
 * or 4) is the registers that hold rows: a group of at most 16 rows searches one, and
 * the others are left 0. */
static inline __attribute__((always_inline)) void blocks_of64(__m512 piv, const __m512 v[4], __m512i b[4], const int nv) {
    for (int c = 0; c < 4; c++) b[c] = _mm512_setzero_si512();
    for (int s = 8; s; s >>= 1)
        for (int c = 0; c < nv; c++) {
            __m512 p = _mm512_permutexvar_ps(_mm512_add_epi32(b[c], _mm512_set1_epi32(s - 1)), piv);
            b[c] = _mm512_mask_add_epi32(b[c], _mm512_cmp_ps_mask(p, v[c], _CMP_LT_OQ), b[c], _mm512_set1_epi32(s));
        }
}

static inline __attribute__((always_inline)) void codes_blocked64(const float *blk, uint32_t sz, const __m512 v[4],
                                                                  __m512i code[4], const int nv) {
    const __m512 piv = _mm512_load_ps(blk);
    __m512i b[4];
    blocks_of64(piv, v, b, nv);
    for (int c = 0; c < 4; c++) code[c] = _mm512_mullo_epi32(b[c], _mm512_set1_epi32((int)sz));
    for (uint32_t k = 0; k + 1 < sz; k++) {
        const __m512 u = _mm512_load_ps(blk + 16 + 16 * k);
        for (int c = 0; c < nv; c++) code[c] = add_below(code[c], _mm512_permutexvar_ps(b[c], u), v[c]);
    }
    for (int c = 0; c < nv; c++) code[c] = add_below(code[c], _mm512_set1_ps(blk[15]), v[c]);
}

/* As codes_blocked64, with the largest threshold below each lane's value (NaN where
 * there is none): the pivot before the lane's block, then each of the block's thresholds
 * below the value, then P[15] (one masked move per compare: measured cheaper than a
 * gather of thr_n[c - 1] afterwards on Zen 4, dev model f64/f32 1.13 against 1.16). */
static inline __attribute__((always_inline)) void codes_blocked64_last(const float *blk, uint32_t sz, const __m512 v[4],
                                                                       __m512i code[4], __m512 last[4], const int nv) {
    const __m512 piv = _mm512_load_ps(blk);
    __m512i b[4];
    blocks_of64(piv, v, b, nv);
    for (int c = 0; c < 4; c++) {
        code[c] = _mm512_mullo_epi32(b[c], _mm512_set1_epi32((int)sz));
        /* b' > 0: P[b' - 1] < v; b' = 0: none yet */
        last[c] = _mm512_mask_permutexvar_ps(_mm512_set1_ps(NAN), _mm512_cmpgt_epi32_mask(b[c], _mm512_setzero_si512()),
                                             _mm512_sub_epi32(b[c], _mm512_set1_epi32(1)), piv);
    }
    for (uint32_t k = 0; k + 1 < sz; k++) {
        const __m512 u = _mm512_load_ps(blk + 16 + 16 * k);
        for (int c = 0; c < nv; c++) {
            const __m512 tv = _mm512_permutexvar_ps(b[c], u);
            const __mmask16 m = _mm512_cmp_ps_mask(tv, v[c], _CMP_LT_OQ);
            code[c] = _mm512_mask_add_epi32(code[c], m, code[c], _mm512_set1_epi32(1));
            last[c] = _mm512_mask_mov_ps(last[c], m, tv);
        }
    }
    for (int c = 0; c < nv; c++) {
        const __m512 tv = _mm512_set1_ps(blk[15]);
        const __mmask16 m = _mm512_cmp_ps_mask(tv, v[c], _CMP_LT_OQ);
        code[c] = _mm512_mask_add_epi32(code[c], m, code[c], _mm512_set1_epi32(1));
        last[c] = _mm512_mask_mov_ps(last[c], m, tv);
    }
}

/* Natural codes of 16 values v of feature f by a linear scan of its thresholds. */
static inline __m512i codes16(const tsq *q, const tsq_feature *f, __m512 v) {
    const __m512i one = _mm512_set1_epi32(1);
    const float *thr = q->thr;
    __m512i pos = _mm512_setzero_si512();
    const float *t = thr + f->table;
    /* The thresholds in ascending order, four at a time, until no lane is above the last:
     * the cost follows the largest code of the 16 lanes, not the feature's threshold count
     * (as in the AVX2 kernel, where a binary search with gathers measured slower);
     * features of more than TSQ_BLOCK_MIN thresholds take the block table above. */
    uint32_t i = 0;
    for (; i + 4 <= f->n_thr; i += 4) {
        pos = _mm512_mask_add_epi32(pos, _mm512_cmp_ps_mask(_mm512_set1_ps(t[i]), v, _CMP_LT_OQ), pos, one);
        pos = _mm512_mask_add_epi32(pos, _mm512_cmp_ps_mask(_mm512_set1_ps(t[i + 1]), v, _CMP_LT_OQ), pos, one);
        pos = _mm512_mask_add_epi32(pos, _mm512_cmp_ps_mask(_mm512_set1_ps(t[i + 2]), v, _CMP_LT_OQ), pos, one);
        __mmask16 c3 = _mm512_cmp_ps_mask(_mm512_set1_ps(t[i + 3]), v, _CMP_LT_OQ);
        pos = _mm512_mask_add_epi32(pos, c3, pos, one);
        if (!c3) break; /* no lane above t[i + 3]: none above any later */
    }
    if (i + 4 > f->n_thr)
        for (; i < f->n_thr; i++)
            pos = _mm512_mask_add_epi32(pos, _mm512_cmp_ps_mask(_mm512_set1_ps(t[i]), v, _CMP_LT_OQ), pos, one);
    return pos;
}

/* Natural codes of 16 values v of feature f by a binary search of its padded table
 * (quant.h "Search tables"), one gather of 16 thresholds per step, four registers in step
 * so that their gathers overlap: for features of more than TSQ_BLOCK_MAX thresholds
 * (scikit-learn's trees: hundreds to thousands per feature), where the linear scan costs
 * as much as the largest code of the lanes. NaN and the padding lanes (-inf) stay at 0:
 * no threshold is below them. */
static inline void codes64_search(const tsq *q, const tsq_feature *f, const __m512 v[4], size_t nd, __m512i nat[4]) {
    const float *t = q->thr + f->table;
    const size_t nv = (nd + 15) / 16;
    for (size_t c = 0; c < 4; c++) nat[c] = _mm512_setzero_si512();
    for (uint32_t s = (1u << f->steps) >> 1; s; s >>= 1) {
        const __m512i step = _mm512_set1_epi32((int)s), off = _mm512_set1_epi32((int)s - 1);
        for (size_t c = 0; c < nv; c++) {
            __m512 tv = _mm512_i32gather_ps(_mm512_add_epi32(nat[c], off), t, 4);
            nat[c] = _mm512_mask_add_epi32(nat[c], _mm512_cmp_ps_mask(tv, v[c], _CMP_LT_OQ), nat[c], step);
        }
    }
}

#define RS_LANES 64

/* 16 x 16 floats transposed in registers (unpacks, then 128-bit lane shuffles). */
static inline void transpose16(__m512 r[16]) {
    __m512 t[16];
    for (int i = 0; i < 8; i++) {
        t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    for (int i = 0; i < 4; i++) {
        r[4 * i] = _mm512_shuffle_ps(t[4 * i], t[4 * i + 2], _MM_SHUFFLE(1, 0, 1, 0));
        r[4 * i + 1] = _mm512_shuffle_ps(t[4 * i], t[4 * i + 2], _MM_SHUFFLE(3, 2, 3, 2));
        r[4 * i + 2] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], _MM_SHUFFLE(1, 0, 1, 0));
        r[4 * i + 3] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], _MM_SHUFFLE(3, 2, 3, 2));
    }
    for (int h = 0; h < 2; h++)
        for (int i = 0; i < 4; i++) {
            t[8 * h + i] = _mm512_shuffle_f32x4(r[8 * h + i], r[8 * h + 4 + i], 0x88);
            t[8 * h + 4 + i] = _mm512_shuffle_f32x4(r[8 * h + i], r[8 * h + 4 + i], 0xdd);
        }
    for (int i = 0; i < 8; i++) {
        r[i] = _mm512_shuffle_f32x4(t[i], t[8 + i], 0x88);
        r[8 + i] = _mm512_shuffle_f32x4(t[i], t[8 + i], 0xdd);
    }
}

/* Columns c0 .. c0 + n - 1 (n <= 16; the rows are at least that wide) of the group's rows
 * into out[k * 64 + lane], lanes nd .. up to a multiple of 16 -inf; columns past n, and
 * lanes from the next multiple of 16 on, left unwritten (load64 reads no further). Measured
 * on msn-lgb-500x64 (Zen 4) against the scalar copy of the template: see design.md. */
static void rs_columns16(const float *x, size_t stride, size_t nd, uint32_t c0, uint32_t n, float *out) {
    const __mmask16 cols = (__mmask16)((1u << n) - 1);
    for (size_t l0 = 0; l0 < nd; l0 += 16) {
        __m512 r[16];
        for (size_t i = 0; i < 16; i++)
            r[i] = l0 + i < nd ? _mm512_maskz_loadu_ps(cols, x + (l0 + i) * stride + c0) : _mm512_set1_ps(-INFINITY);
        transpose16(r);
        for (size_t k = 0; k < 16; k++) _mm512_store_ps(out + k * 64 + l0, r[k]);
    }
}
#define RS_COLUMNS16 1

/* Feature j's slots from its natural codes of a group (four registers of 16 dwords): each
 * slot's missing code in its NaN (or zero-range) lanes, minus the segment's base, clamped
 * to 0 .. 255, stored as the slot's 64 bytes. Shared by the float and double quantizers. */
static inline void store_slot_codes(const tsq *q, uint32_t j, const __m512i nat[4], const __mmask16 nan[4],
                                    const __mmask16 zero[4], uint8_t *codes) {
    const tsq_feature *f = &q->f[j];
    for (uint32_t s = q->slot_first[j]; s < q->slot_first[j + 1]; s++) {
        const tsq_slot *sl = &q->slots[s];
        const __m512i miss = _mm512_set1_epi32(sl->rule & TSQ_MISSING_RIGHT ? (int)f->n_thr : 0);
        const __m512i base = _mm512_set1_epi32((int)sl->base);
        for (size_t c = 0; c < 4; c++) {
            __mmask16 m = sl->rule & TSQ_ZERO_MISSING ? (__mmask16)(nan[c] | zero[c]) : nan[c];
            __m512i code = _mm512_max_epi32(_mm512_sub_epi32(_mm512_mask_mov_epi32(nat[c], m, miss), base),
                                            _mm512_setzero_si512());
            _mm_store_si128((__m128i *)(codes + (size_t)s * 64 + 16 * c), _mm512_cvtusepi32_epi8(code));
        }
    }
}

/* Natural codes of the registers v[0 .. nv) of feature f by its bucket table (quant.h
 * "Bucket tables", as the AVX2 kernel's codes_bucketed): the bucket's first code by a
 * gather, then the window's binary search, a gather per step, the registers stepped
 * together (their gathers' latencies overlap). For features of more than TSQ_BLOCK_MAX
 * thresholds, in place of the chunk tables (about 20 permutes and compares per 256
 * thresholds, port 5 on Intel) or the binary search: Intel Emerald Rapids, libs_ab, 1,000
 * rows, msn-sgb-500x64 (scikit-learn's hundreds of thresholds per feature) 6-8% faster.
 * Features of 33-256 thresholds keep their block tables: buckets there measured 11%
 * slower on the demo model (its float rows at 768 rows), within noise on the dev model and
 * msn-lgb-1000x64. Not measured on AMD Zen 4. */
static inline __attribute__((always_inline)) void codes_bucketed64(const tsq *q, const tsq_feature *f,
                                                                   const tsq_bucket *b, const __m512 v[4],
                                                                   __m512i nat[4], const int nv) {
    const __m512i lo0 = _mm512_set1_epi32((int)b->gap_lo[0]), hi0 = _mm512_set1_epi32((int)b->gap_hi[0]);
    const __m512i lo1 = _mm512_set1_epi32((int)b->gap_lo[1]), hi1 = _mm512_set1_epi32((int)b->gap_hi[1]);
    const __m512i kmin = _mm512_set1_epi32((int)b->kmin), last = _mm512_set1_epi32((int)b->last);
    const __m128i shift = _mm_cvtsi32_si128((int)b->shift);
    const int *tab = (const int *)(const void *)(q->bkt + b->first);
    for (int c = 0; c < 4; c++) nat[c] = _mm512_setzero_si512();
    for (int c = 0; c < nv; c++) {
        const __m512i s = _mm512_castps_si512(v[c]);
        const __m512i key = _mm512_xor_si512(s, _mm512_or_si512(_mm512_srai_epi32(s, 31), _mm512_set1_epi32(INT32_MIN)));
        const __m512i in0 = _mm512_sub_epi32(_mm512_min_epu32(_mm512_max_epu32(key, lo0), hi0), lo0);
        const __m512i in1 = _mm512_sub_epi32(_mm512_min_epu32(_mm512_max_epu32(key, lo1), hi1), lo1);
        const __m512i col = _mm512_sub_epi32(key, _mm512_add_epi32(in0, in1));
        const __m512i bkt = _mm512_min_epu32(_mm512_srl_epi32(_mm512_sub_epi32(_mm512_max_epu32(col, kmin), kmin), shift), last);
        nat[c] = _mm512_and_si512(_mm512_i32gather_epi32(bkt, tab, 2), _mm512_set1_epi32(0xFFFF));
    }
    const float *t = q->thr + f->table;
    for (uint32_t w = (1u << b->win) >> 1; w; w >>= 1) {
        const __m512i sv = _mm512_set1_epi32((int)w);
        for (int c = 0; c < nv; c++) {
            const __m512 p = _mm512_i32gather_ps(nat[c], t + w - 1, 4);
            nat[c] = _mm512_mask_add_epi32(nat[c], _mm512_cmp_ps_mask(p, v[c], _CMP_LT_OQ), nat[c], sv);
        }
    }
}

/* The rounds of the search below: pos += s (s = m / 2 .. 1) in the lanes whose entry
 * pos + s - 1 of the table (m entries, in registers t0, t1 as LOOKUP reads them) is
 * below the value. */
#define RS_PERM_STEP(LOOKUP)                                                                        \
    for (uint32_t s = m >> 1; s; s >>= 1) {                                                        \
        const __m512i off = _mm512_set1_epi32((int)s - 1), sv = _mm512_set1_epi32((int)s);           \
        for (int c = 0; c < nv; c++) {                                                             \
            const __m512i i = _mm512_add_epi32(nat[c], off);                                        \
            const __m512 p = LOOKUP;                                                               \
            nat[c] = _mm512_mask_add_epi32(nat[c], _mm512_cmp_ps_mask(p, v[c], _CMP_LT_OQ), nat[c], sv); \
        }                                                                                          \
    }

/* Natural codes of the registers v[0 .. nv) of a feature of at most 31 thresholds (its
 * search table of at most 2^RS_PERM_STEPS entries) by the branch-free binary search of
 * that table (quant.h "Search tables": 2^steps entries, +inf past n) held in one or two
 * registers, one permute and a compare per step, the registers stepped together. In
 * place of the linear scan (a compare per threshold up to the lanes' largest code), which
 * only a feature of exactly 32 thresholds keeps (a search table of 64 entries, no block
 * table); the double quantizer takes it too, its gap floats looked up by permutes. Intel
 * Emerald Rapids, libs_ab, rapid at 768-1,000 rows: the demo model (118 of its 191
 * features have at most 16 thresholds) 1.5x faster on float rows (0.51 -> 0.34 us/doc),
 * 1.3x on double rows (0.61 -> 0.45); the dev model 7-9%, msn-lgb-1000x64 4%;
 * scikit-learn's GradientBoosting within noise. From 33 thresholds the block tables
 * instead, since their blocks have ceil(n / 16) thresholds (quant.h "Block tables": four
 * binary steps and at most three counting permutes up to 64 thresholds, against six steps
 * of two permutes and a blend): float rows of the dev model 2-5% faster, msn-lgb-1000x64
 * 1-4%, the demo 2-4%; double rows the same within noise (docs/benchmarks.md "Twentieth
 * session"). */
#define RS_PERM_STEPS 5
static inline __attribute__((always_inline)) void codes_perm64(const tsq *q, const tsq_feature *f, const __m512 v[4],
                                                               __m512i nat[4], const int nv) {
    const float *t = q->thr + f->table;
    const uint32_t m = 1u << f->steps; /* 2 .. 2^RS_PERM_STEPS entries */
    _Static_assert(RS_PERM_STEPS <= 5, "codes_perm64: at most two registers");
    const __m512 inf = _mm512_set1_ps(INFINITY);
    const __mmask16 m0 = (__mmask16)(m >= 16 ? 0xFFFFu : (1u << m) - 1);
    const __m512 t0 = _mm512_mask_mov_ps(inf, m0, _mm512_maskz_loadu_ps(m0, t));
    for (int c = 0; c < 4; c++) nat[c] = _mm512_setzero_si512();
    if (m <= 16) {
        RS_PERM_STEP(_mm512_permutexvar_ps(i, t0))
    } else {
        const __m512 t1 = _mm512_loadu_ps(t + 16);
        RS_PERM_STEP(_mm512_permutex2var_ps(t0, i, t1))
    }
}
#undef RS_PERM_STEP

/* Feature j's natural codes of a group's 64 values v (lanes >= nd -inf), by the feature's
 * kind of table (quant.h). */
static inline __attribute__((always_inline)) void codes64_nv(const tsq *q, const tsq_feature *f, const __m512 v[4], size_t nd,
                                                             __m512i nat[4], const int nv) {
    const tsq_bucket *b = &q->bk[f - q->f];
    if (b->first != UINT32_MAX && f->blocks == UINT32_MAX) { /* (more than TSQ_BLOCK_MAX thresholds: see codes_bucketed64) */
        codes_bucketed64(q, f, b, v, nat, nv);
        return;
    }
    if (f->steps <= RS_PERM_STEPS) {
        codes_perm64(q, f, v, nat, nv);
        return;
    }
    if (f->blocks != UINT32_MAX)
        codes_blocked64(q->blk + f->blocks, tsq_block_size(f->n_thr), v, nat, nv);
    else if (f->chunks != UINT32_MAX) /* quant.h "Chunk tables": the chunks' counts added */
        for (uint32_t c = 0, n = (f->n_thr + TSQ_BLOCK_MAX - 1) / TSQ_BLOCK_MAX; c < n; c++) {
            __m512i part[4];
            codes_blocked64(q->blk + f->chunks + (size_t)c * TSQ_BLOCK_FLOATS, 16, v, part, nv);
            for (size_t k = 0; k < 4; k++) nat[k] = c ? _mm512_add_epi32(nat[k], part[k]) : part[k];
        }
    else if (f->n_thr > TSQ_BLOCK_MAX)
        codes64_search(q, f, v, nd, nat);
    else
        for (size_t c = 0; c < 4; c++) nat[c] = 16 * c < nd ? codes16(q, f, v[c]) : _mm512_setzero_si512();
}

/* codes64_nv for a group of nd rows: one register's searches for at most 16 (the lanes
 * from 16 on hold -inf: code 0, as the searches would give), four above. */
static inline __attribute__((always_inline)) void codes64(const tsq *q, const tsq_feature *f, const __m512 v[4], size_t nd, __m512i nat[4]) {
    if (nd <= 16)
        codes64_nv(q, f, v, nd, nat, 1);
    else
        codes64_nv(q, f, v, nd, nat, 4);
}

/* The group's 64 values of a feature from its column (registers from lane nd on -inf:
 * col may hold nothing there), with their NaN and zero-range lanes. */
static inline void load64(const float *col, size_t nd, __m512 v[4], __mmask16 nan[4], __mmask16 zero[4]) {
    for (size_t c = 0; c < 4; c++) {
        v[c] = 16 * c < nd ? _mm512_load_ps(col + 16 * c) : _mm512_set1_ps(-INFINITY); /* -inf: code 0 */
        nan[c] = _mm512_cmp_ps_mask(v[c], v[c], _CMP_UNORD_Q);
        zero[c] = _mm512_cmp_ps_mask(_mm512_abs_ps(v[c]), _mm512_set1_ps(TSM_ZERO_RANGE), _CMP_LE_OQ);
    }
}

/* Feature j's slots for one group of 64 documents: its natural codes once, then each
 * slot's: the slot's missing code in its NaN (or zero-range) lanes, minus the segment's
 * base, clamped to 0 .. 255. */
static void rs_code_feature(const tsq_tables *T, uint32_t j, const float *col, size_t nd, uint8_t *codes) {
    const tsq *q = &T->q;
    __m512i nat[4];
    __mmask16 nan[4], zero[4];
    __m512 v[4];
    load64(col, nd, v, nan, zero); /* the transposes fill the lanes up to a multiple of 16 from nd */
    codes64(q, &q->f[j], v, nd, nat);
    store_slot_codes(q, j, nat, nan, zero, codes);
}

/* ---- double codes (quant.h "Double codes", "Gap floats") ---- */

/* Lanes `fix` of 16 coded from floats, coded from their doubles x[l * stride] instead
 * (tsq_slot_code_d's natural code and zero range). */
static void fix_lanes(const tsq *q, uint32_t j, __mmask16 fix, const double *x, size_t stride, __m512i *nat,
                      __mmask16 *zero) {
    uint32_t n[16] __attribute__((aligned(64)));
    _mm512_store_si512(n, *nat);
    for (; fix; fix &= (__mmask16)(fix - 1)) {
        const unsigned l = (unsigned)__builtin_ctz(fix);
        const double v = x[l * stride];
        const int z = v >= -(double)TSM_ZERO_RANGE && v <= (double)TSM_ZERO_RANGE;
        n[l] = tsq_code_d(q, j, z ? 0.0 : v);
        *zero = z ? (__mmask16)(*zero | (1u << l)) : (__mmask16)(*zero & ~(1u << l));
    }
    *nat = _mm512_load_si512(n);
}

/* Feature j's slots for one group of 64 double values (tsq_slot_code_d), float first
 * (quant.h "Gap floats"): col holds the values rounded up to floats (u; rs_columns_f64),
 * x the doubles (x[lane * stride]). The float codes of u, as for float rows; then the
 * lanes whose u is the gap float of their largest threshold below (thr_n[c - 1] == u: a
 * permute of the feature's gap floats up to 31 thresholds, the float after the block
 * search's largest F below u for block tables, a gather above), and for
 * features with zero-is-missing nodes (or `snap`) those at u = -Z, take their codes from
 * the doubles (rare: values in the float gap of a threshold). So a double costs a float
 * (and its rounding, in the transpose) plus about five instructions per 16 lanes. */
static inline __attribute__((always_inline)) void rs_code_feature_f64(const tsq_tables *T, uint32_t j, const float *col,
                                                                    size_t nd, const double *x, size_t stride,
                                                                    uint8_t *codes) {
    const tsq *q = &T->q;
    const tsq_feature *f = &q->f[j];
    const uint32_t n = f->n_thr;
    const size_t nv = (nd + 15) / 16;
    const __m512i one = _mm512_set1_epi32(1);
    __m512i nat[4];
    __mmask16 nan[4], zero[4], fix[4] = {0, 0, 0, 0};
    __m512 v[4];
    load64(col, nd, v, nan, zero);
    if (f->snap) /* zero-range lanes coded as 0.0 (quant.h "Gap floats") */
        for (size_t c = 0; c < 4; c++) v[c] = _mm512_mask_mov_ps(v[c], zero[c], _mm512_setzero_ps());
    if (f->blocks != UINT32_MAX && f->steps > RS_PERM_STEPS) {
        /* the block search's largest F below u, and the float after it (bits + 1 away from
         * zero; a false alarm where that F is its D: harmless) */
        __m512 last[4];
        if (nd <= 16)
            codes_blocked64_last(q->blk + f->blocks, tsq_block_size(n), v, nat, last, 1);
        else
            codes_blocked64_last(q->blk + f->blocks, tsq_block_size(n), v, nat, last, 4);
        for (size_t c = 0; c < nv; c++) {
            const __m512i bits = _mm512_castps_si512(last[c]);
            const __m512 next = _mm512_castsi512_ps(_mm512_add_epi32(bits, _mm512_or_si512(_mm512_srai_epi32(bits, 31), one)));
            fix[c] = _mm512_cmp_ps_mask(next, v[c], _CMP_EQ_OQ);
        }
    } else {
        codes64(q, f, v, nd, nat);
        /* thr_n[c - 1]: a permute of the gap floats of up to 32 thresholds (two registers,
         * NaN past them; from 33 up to 256 the block tables above), a gather above;
         * for c = 0 any entry (every F >= u there, so no gap float is u) */
        const float *gap = q->thr_n + f->table;
        const __m512 none = _mm512_set1_ps(NAN);
        __m512 g[2];
        for (uint32_t r = 0; r < 2; r++) { /* g[r]: gap[16 r ..), NaN from n on */
            const uint32_t k = n > 16 * r ? n - 16 * r : 0;
            const __mmask16 m = (__mmask16)(k >= 16 ? 0xFFFFu : (1u << k) - 1);
            g[r] = m && n <= 32 ? _mm512_mask_mov_ps(none, m, _mm512_maskz_loadu_ps(m, gap + 16 * r)) : none;
        }
        for (size_t c = 0; c < nv; c++) {
            const __m512i at = _mm512_sub_epi32(nat[c], one);
            const __m512 gv = n <= 16   ? _mm512_permutexvar_ps(at, g[0])
                              : n <= 32 ? _mm512_permutex2var_ps(g[0], at, g[1])
                                        : _mm512_i32gather_ps(_mm512_max_epi32(at, _mm512_setzero_si512()), gap, 4);
            fix[c] = _mm512_cmp_ps_mask(gv, v[c], _CMP_EQ_OQ);
        }
    }
    if (f->has_zero || f->snap) /* u = -Z: v may lie below the zero range (v[] snapped: from col) */
        for (size_t c = 0; c < nv; c++)
            fix[c] |= _mm512_cmp_ps_mask(_mm512_load_ps(col + 16 * c), _mm512_set1_ps(-TSM_ZERO_RANGE), _CMP_EQ_OQ);
    if (__builtin_expect((fix[0] | fix[1] | fix[2] | fix[3]) != 0, 0))
        for (size_t c = 0; c < nv; c++) {
            const __mmask16 rows = (__mmask16)(nd - 16 * c >= 16 ? 0xFFFFu : (1u << (nd - 16 * c)) - 1);
            if (fix[c] & rows) fix_lanes(q, j, fix[c] & rows, x + 16 * c * stride, stride, &nat[c], &zero[c]);
        }
    store_slot_codes(q, j, nat, nan, zero, codes);
}

/* 8 doubles to floats: up, the float u at or above each; else the nearest float (what
 * a library that converts its input to float32 computes: (float)v). */
static inline __m256 cvt8(__m512d x, const int up) {
    return up ? _mm512_cvt_roundpd_ps(x, _MM_FROUND_TO_POS_INF | _MM_FROUND_NO_EXC)
              : _mm512_cvt_roundpd_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}

/* As rs_columns16, from double rows, each value converted to a float on its way (up:
 * rounded up, u of quant.h "Gap floats"; else to nearest): columns c0 .. c0 + n - 1
 * (n <= 16) of the group's rows into out[k * 64 + lane], lanes nd .. up to a multiple of
 * 16 -inf; columns past n, and lanes from the next multiple of 16 on, left unwritten (a
 * single row costs one transpose). */
static inline __attribute__((always_inline)) void rs_columns_f64(const double *x, size_t stride, size_t nd,
                                                                 uint32_t c0, uint32_t n, float *out, const int up) {
    const __mmask8 lo = (__mmask8)(n >= 8 ? 0xFFu : (1u << n) - 1), hi = (__mmask8)(n > 8 ? (1u << (n - 8)) - 1 : 0);
    for (size_t l0 = 0; l0 < nd; l0 += 16) {
        __m512 r[16];
        for (size_t i = 0; i < 16; i++) {
            const double *p = x + (l0 + i) * stride + c0;
            r[i] = l0 + i < nd ? _mm512_insertf32x8(_mm512_castps256_ps512(cvt8(_mm512_maskz_loadu_pd(lo, p), up)),
                                                    cvt8(_mm512_maskz_loadu_pd(hi, p + 8), up), 1)
                               : _mm512_set1_ps(-INFINITY);
        }
        transpose16(r);
        for (size_t k = 0; k < 16; k++) _mm512_store_ps(out + k * 64 + l0, r[k]);
    }
}
#define RS_COLUMNS_F64 16
#define RS_F64_UP 1

/* One column of the group's double rows (x: its value in row 0), each value converted to
 * a float on its way (up: rounded up, else to nearest), into out[lane], lanes nd .. up to
 * a multiple of 16 -inf: 8 rows a gather (7 * stride fits an int: RS_COLUMN_F64_STRIDE).
 * The GFNI kernel's quantizer (Intel) takes it where the used features are less than 80%
 * of the columns they span (RS_COLUMNS_F64_MIN), the other's (AMD) below 50%: Intel
 * Emerald Rapids, libs_ab, rapid, double rows: the demo model (191 of 300 columns) at 768
 * rows 0.41-0.43 -> 0.36-0.40 us/doc, at 16, 64, 256 rows 1.03 -> 0.92, 0.67 -> 0.62, 0.43
 * -> 0.39, 38,400 rows streamed from memory 0.53 the same (a prefetch of the next run's
 * lines, as the transposes', made it 1.13x slower in cache); inlined (rs_code_feature_f64
 * too: a call per column measured 1.5x slower); on the msn models (135 of 135 columns)
 * the transposes stay: gathers there measured the same in cache and up to 6% slower from
 * memory (docs/benchmarks.md "Twenty-sixth session"). Not measured on AMD Zen 4, whose
 * gathers are slower (about 0.7 ns per element). */
static inline __attribute__((always_inline)) void rs_column_f64(const double *x, size_t stride, size_t nd, float *out,
                                                              const int up) {
    const __m256i rows = _mm256_mullo_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), _mm256_set1_epi32((int)stride));
    const __m512d none = _mm512_set1_pd(-INFINITY);
    for (size_t l = 0; l < nd; l += 16) {
        const size_t k = nd - l;
        const __mmask8 m0 = (__mmask8)(k >= 8 ? 0xFFu : (1u << k) - 1), m1 = (__mmask8)(k >= 16 ? 0xFFu : k > 8 ? (1u << (k - 8)) - 1 : 0);
        const __m512d a = m0 == 0xFF ? _mm512_i32gather_pd(rows, x + l * stride, 8)
                                     : _mm512_mask_i32gather_pd(none, m0, rows, x + l * stride, 8);
        const __m512d b = m1 == 0xFF ? _mm512_i32gather_pd(rows, x + (l + 8) * stride, 8)
                          : m1       ? _mm512_mask_i32gather_pd(none, m1, rows, x + (l + 8) * stride, 8)
                                     : none;
        _mm512_store_ps(out + l, _mm512_insertf32x8(_mm512_castps256_ps512(cvt8(a, up)), cvt8(b, up), 1));
    }
}
#define RS_COLUMN_F64 1
#define RS_COLUMN_F64_STRIDE (INT32_MAX / 8)

#define RS_UPDATE rs_update8
#define RS_GROUPS 8
#define RS_PAIRS 1
#define RS(name) rs_avx512_##name
#include "engines/templates/rapid_template.h"
#undef RS_UPDATE
#undef RS

const rs_kernels tse_rapid_avx512 = {TS_ISA_AVX512, 64, 0, rs_avx512_kernel, rs_avx512_quantize, rs_avx512_kernel_f64,
                                     RS_PAIR_LANES, rs_avx512_kernel_near, rs_avx512_quantize_near};

/*
 * The GFNI kernel: the same, but an entry ANDs its mask with one masked GF2P8AFFINEQB
 * (x -> A x over GF(2) per byte, A the diagonal matrix of the mask's bits: x AND mask),
 * which masks bytes, where the kernel above needs a vpandd and a masked vmovdqu8: two
 * vector uops per entry and group instead of three (a compare and the update). Measured
 * on Intel Emerald Rapids: msn-lgb-1000x256 4.2 -> 3.8 us/doc, msn-lgb-1000x64 1.40 ->
 * 1.30; on AMD Zen 4 the instruction measured slower than vpandd + vmovdqu8 in a
 * microbenchmark (1.97 against 1.75 cycles per entry and group), so rapid.c picks this
 * kernel on Intel CPUs with GFNI only (TREESCORE_RAPID_UPDATE overrides).
 */

/* rs_gf_and[m]: the matrix of x AND m: row i of A (byte 7 - i of the qword) is bit i. */
#define RS_GF_AND(m)                                                                                             \
    ((((uint64_t)(m)&1u) << 56) | (((uint64_t)(m)&2u) << 48) | (((uint64_t)(m)&4u) << 40) |                    \
     (((uint64_t)(m)&8u) << 32) | (((uint64_t)(m)&16u) << 24) | (((uint64_t)(m)&32u) << 16) |                  \
     (((uint64_t)(m)&64u) << 8) | ((uint64_t)(m)&128u))
#define RS_GF4(m) RS_GF_AND(m), RS_GF_AND((m) + 1), RS_GF_AND((m) + 2), RS_GF_AND((m) + 3)
#define RS_GF16(m) RS_GF4(m), RS_GF4((m) + 4), RS_GF4((m) + 8), RS_GF4((m) + 12)
#define RS_GF64(m) RS_GF16(m), RS_GF16((m) + 16), RS_GF16((m) + 32), RS_GF16((m) + 48)
static const uint64_t rs_gf_and[256] = {RS_GF64(0), RS_GF64(64), RS_GF64(128), RS_GF64(192)};
_Static_assert(RS_GF_AND(0xFF) == 0x0102040810204080ull, "the identity matrix of GF2P8AFFINEQB");

/* dst{k} = A dst per byte, in place (as RS_MASK_MOV8). */
#ifdef __AVX512BW__
#define RS_MASK_GF8(dst, k, a) __asm__("vgf2p8affineqb $0, %2, %0, %0%{%1%}" : "+v"(dst) : "Yk"(k), "v"(a))
#else
#define RS_MASK_GF8(dst, k, a) ((dst) = _mm512_mask_gf2p8affine_epi64_epi8((dst), (k), (dst), (a), 0))
#endif

static inline rs_mv rs_gf_m(const rs_entry *e) { return _mm512_set1_epi64((long long)rs_gf_and[e->m4 & 0xFFu]); }

static inline rs_v rs_gf_update8(const rsl *L, rs_v row, const uint8_t *codes, rs_kv k1, rs_mv a) {
    (void)L;
    const __mmask64 fail = _mm512_cmple_epu8_mask(k1, _mm512_load_si512(codes));
    RS_MASK_GF8(row, fail, a);
    return row;
}

static inline void rs_gf_update_skip(const rsl *L, rs_v *row, rs_v *skip, const uint8_t *codes, rs_kv k1,
                                     rs_mv a, rs_kv z) {
    (void)L;
    const __mmask64 fail = _mm512_cmple_epu8_mask(k1, _mm512_load_si512(codes));
    rs_v r = *row, s = *skip;
    RS_MASK_GF8(r, fail, a);
    RS_MASK_MAX8(s, fail, z);
    *row = r, *skip = s;
}

#define RS_UPDATE rs_gf_update8
#define RS_MASK rs_gf_m
#define RS_UPDATE_SKIP rs_gf_update_skip
#define RS_QUANTIZE rs_avx512_quantize
#define RS_COLUMNS_F64_MIN 80 /* its own double quantizers: rs_column_f64 says why */
#define RS_GROUPS 8
/* With one or two groups (a batch of up to 128 documents) the chain of vgf2p8affineqb
 * through a row (5 cycles a link on Emerald Rapids) is the bound: those take vpandd +
 * vmovdqu8 (at batch 100, alternated binaries: msn-lgb-1000x256 6.62-6.91 us/doc -> 6.49-
 * 6.59, msn-xgb-1000x64 1.86-1.91 -> 1.75-1.97). */
#define RS_FEW 4
#define RS_MASK_FEW rs_m
#define RS_UPDATE_FEW rs_update8
#define RS_UPDATE_SKIP_FEW rs_update_skip
#define RS_BLOCK_DEFER 16 /* "Deferred exits" above */
#define RS_FLUSH_FLOAT 1
#define RS_PAIRS 1
#define RS(name) rs_avx512gf_##name
#include "engines/templates/rapid_template.h"

const rs_kernels tse_rapid_avx512gf = {TS_ISA_AVX512, 64, 0, rs_avx512gf_kernel, rs_avx512_quantize,
                                       rs_avx512gf_kernel_f64, RS_PAIR_LANES, rs_avx512gf_kernel_near,
                                       rs_avx512gf_quantize_near};

#endif
