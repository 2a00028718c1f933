/* rapid_avx2.c: the rapid kernels for AVX2: 32 documents per register of bytes, codes stored sign-flipped for signed byte compares. */
#define TS_ISA_FILE /* built with -mavx2 -mbmi -mbmi2 -mlzcnt -mpopcnt: see CMakeLists.txt */
#include "engines/rapid.h"
#include "engines/x86/rapid_rows256.h"
#include "platform/fpenv.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#include <math.h>

/*
 * AVX2 has no unsigned byte compare: codes and k are stored XOR 0x80 (rsl.flip), so
 * that vpcmpgtb orders them as unsigned numbers. An
 * entry is a 32-bit broadcast of k + 1 and of the mask, then per group of documents
 * vpcmpgtb (k + 1 > code: the lanes that pass, with the codes from memory), vpor with
 * the mask and vpand into the row. Exit leaves: per row, the lanes meeting their first non-zero byte take the row
 * number and the byte (blends); the lowest set bit comes from two vpshufb lookups on
 * nibbles; the leaf values come in pairs of scalar loads, added four at a time.
 */
typedef __m256i rs_v;

static inline rs_v rs_ones(void) { return _mm256_set1_epi8(-1); }

typedef __m256i rs_kv, rs_mv;
static inline rs_kv rs_k(const rs_entry *e) { return _mm256_set1_epi32((int)e->k4); }
static inline rs_mv rs_m(const rs_entry *e) { return _mm256_set1_epi32((int)e->m4); }

/* k1 = k + 1: a lane passes where k1 > code, and keeps its row byte (row & (pass | m)). */
static inline rs_v rs_update8(const rsl *L, rs_v row, const uint8_t *codes, rs_kv k1, rs_mv m) {
    (void)L;
    __m256i pass = _mm256_cmpgt_epi8(k1, _mm256_load_si256((const __m256i *)codes));
    return _mm256_and_si256(row, _mm256_or_si256(pass, m));
}

static inline rs_v rs_zeros(void) { return _mm256_setzero_si256(); }
static inline rs_kv rs_z(const rs_skip *s) { return _mm256_set1_epi32((int)s->z4); }

/* rs_row_start: rapid_rows256.h */
static inline rs_v rs_row_start(rs_v skip, uint32_t j) { return rs256_row_start(skip, j); }

static inline void rs_update_skip(const rsl *L, rs_v *row, rs_v *skip, const uint8_t *codes, rs_kv k1, rs_mv m,
                                  rs_kv z) {
    (void)L;
    __m256i pass = _mm256_cmpgt_epi8(k1, _mm256_load_si256((const __m256i *)codes));
    *row = _mm256_and_si256(*row, _mm256_or_si256(pass, m));
    *skip = _mm256_max_epu8(*skip, _mm256_andnot_si256(pass, z));
}

/* Exits: rapid_rows256.h. */
typedef rs256_exit rs_exit;
static inline void rs_exit_init(rs_exit *x) { rs256_exit_init(x); }
static inline int rs_exit_row(rs_exit *x, rs_v row, uint32_t j) { return rs256_exit_row(x, row, j); }
static inline __m256i exit_leaves(const rs_exit *x) { return rs256_exit_leaves(x); }

/* Four leaf values, from lv at ix[0 .. 3]. */
static inline __m256d leaves4(const double *lv, const uint8_t *ix) {
    __m128d lo = _mm_loadh_pd(_mm_load_sd(lv + ix[0]), lv + ix[1]);
    __m128d hi = _mm_loadh_pd(_mm_load_sd(lv + ix[2]), lv + ix[3]);
    return _mm256_insertf128_pd(_mm256_castpd128_pd256(lo), hi, 1);
}

static inline void rs_exit_add(const rs_exit *x, const double *lv, uint32_t rows, double *acc, uint32_t lanes) {
    (void)rows; /* the values in pairs of scalar loads (vmovsd, vmovhpd): 2-4% faster than
                 * 4-lane vgatherdpd on Zen 4 (msn 64 and 256 leaves) */
    uint8_t ix[32] __attribute__((aligned(32)));
    _mm256_store_si256((__m256i *)ix, exit_leaves(x));
    /* leaves4's loads written out: through the call GCC 12 keeps this loop rolled in
     * block4 (unrolled 8 times here), and rapid measured 5-7% slower at 1,000 rows */
    for (size_t l = 0; l < lanes; l += 4) {
        __m128d lo = _mm_loadh_pd(_mm_load_sd(lv + ix[l]), lv + ix[l + 1]);
        __m128d hi = _mm_loadh_pd(_mm_load_sd(lv + ix[l + 2]), lv + ix[l + 3]);
        __m256d v = _mm256_insertf128_pd(_mm256_castpd128_pd256(lo), hi, 1);
        _mm256_store_pd(acc + l, _mm256_add_pd(_mm256_load_pd(acc + l), v));
    }
}

/* Deferred exits (rapid_template.h): 16 trees' exits kept, then their leaf values added. */
#define RS_BLOCK_DEFER 16

static inline void rs_exit_store(const rs_exit *x, uint8_t *ix) {
    _mm256_store_si256((__m256i *)ix, exit_leaves(x));
}

static inline void rs_leaves_flush(const double *const *lv, const uint8_t *ix, size_t step, uint32_t n, double *acc,
                                   uint32_t lanes) {
    for (size_t l = 0; l < lanes; l += 4) {
        __m256d a = _mm256_load_pd(acc + l);
        for (uint32_t q = 0; q < n; q++) a = _mm256_add_pd(a, leaves4(lv[q], ix + q * step + l));
        _mm256_store_pd(acc + l, a);
    }
}

/* Pairs (rapid.h "Pairs"): byte 2i tree A's document i, byte 2i + 1 tree B's. An entry:
 * the codes by one vpor of A's even copy and B's odd copy (one of them a load operand),
 * its k and m words broadcast by loads, a compare, a vpor and a vpand: four vector
 * instructions for two trees, where the earlier layout (A in the low 16 lanes, B in the
 * high 16) took six (two vpshufb spreading one word, a vinserti128). */
/* rs_pv, its start and its exits: rapid_rows256.h */
static inline __attribute__((always_inline)) rs_pv rs_pair_update(rs_pv row, const uint8_t *pc, const rs_pair *p,
                                                                   const int one_load) {
    return _mm256_and_si256(row, _mm256_or_si256(rs256_pair_pass(pc, p, one_load), _mm256_set1_epi32((int)p->m)));
}

static inline __attribute__((always_inline)) void rs_pair_update_skip(rs_pv *row, rs_pv *skip, const uint8_t *pc,
                                                                      const rs_pair_skip *s, const int one_load) {
    const __m256i pass = rs256_pair_pass(pc, &s->e, one_load);
    *row = _mm256_and_si256(*row, _mm256_or_si256(pass, _mm256_set1_epi32((int)s->e.m)));
    *skip = _mm256_max_epu8(*skip, _mm256_andnot_si256(pass, _mm256_set1_epi32((int)s->z)));
}

static inline void rs_pair_codes(const uint8_t *codes, uint32_t n_slots, uint32_t x80, uint8_t *pc) {
    rs256_pair_codes(codes, 32, n_slots, x80, pc);
}

#define RS_PAIRS 1

static inline void rs_store_row(uint8_t *p, rs_v row) { _mm256_storeu_si256((__m256i *)p, row); }

/* t[idx] for 8 lanes from a table of 16 floats (two registers). */
static inline __m256 lookup16(const float *t, __m256i idx) {
    __m256 lo = _mm256_permutevar8x32_ps(_mm256_load_ps(t), idx);
    __m256 hi = _mm256_permutevar8x32_ps(_mm256_load_ps(t + 8), idx);
    return _mm256_blendv_ps(lo, hi, _mm256_castsi256_ps(_mm256_slli_epi32(idx, 28))); /* bit 3 of idx */
}

/* All ones in the lanes where t < v. */
static inline __m256i below(__m256 t, __m256 v) { return _mm256_castps_si256(_mm256_cmp_ps(t, v, _CMP_LT_OQ)); }

/* The code of 8 values v in one block table (quant.h "Block tables"), the 16-entry
 * tables looked up two registers at a time. */
static inline __m256i codes_blocked8(const float *blk, uint32_t sz, __m256 v) {
    __m256i b = _mm256_setzero_si256();
    for (int s = 8; s; s >>= 1) {
        __m256 p = lookup16(blk, _mm256_add_epi32(b, _mm256_set1_epi32(s - 1)));
        b = _mm256_add_epi32(b, _mm256_and_si256(below(p, v), _mm256_set1_epi32(s)));
    }
    __m256i code = _mm256_mullo_epi32(b, _mm256_set1_epi32((int)sz));
    for (uint32_t k = 0; k + 1 < sz; k++) code = _mm256_sub_epi32(code, below(lookup16(blk + 16 + 16 * k, b), v));
    return _mm256_sub_epi32(code, below(_mm256_set1_ps(blk[15]), v));
}

/* The code of 8 values v of a feature of n thresholds by its register table rt (quant.h
 * "Register tables"): the block among 8 pivots by a binary search of three permutes,
 * then the block's other s - 1 thresholds counted with a permute each. */
static inline __m256i codes_reg8(const float *rt, uint32_t n, __m256 v) {
    const uint32_t s = (n + 7) / 8;
    const __m256 piv = _mm256_load_ps(rt);
    __m256i b = _mm256_setzero_si256();
    for (int st = 4; st; st >>= 1) {
        const __m256 p = _mm256_permutevar8x32_ps(piv, _mm256_add_epi32(b, _mm256_set1_epi32(st - 1)));
        b = _mm256_add_epi32(b, _mm256_and_si256(below(p, v), _mm256_set1_epi32(st)));
    }
    __m256i code = _mm256_mullo_epi32(b, _mm256_set1_epi32((int)s));
    for (uint32_t k = 0; k + 1 < s; k++)
        code = _mm256_sub_epi32(code, below(_mm256_permutevar8x32_ps(_mm256_load_ps(rt + 8 + 8 * k), b), v));
    return _mm256_sub_epi32(code, below(_mm256_set1_ps(rt[7]), v));
}

/* The code of 8 values v of feature f by the branch-free binary search of its padded
 * table (quant.h "Search tables"), a gather per step: for features past the chunk
 * tables, where a linear scan would cost as many compares as the largest code. */
static inline __m256i codes_search8(const tsq *q, const tsq_feature *f, __m256 v) {
    const float *t = q->thr + f->table;
    __m256i pos = _mm256_setzero_si256();
    for (uint32_t s = (1u << f->steps) >> 1; s; s >>= 1) {
        const __m256 p = _mm256_i32gather_ps(t, _mm256_add_epi32(pos, _mm256_set1_epi32((int)s - 1)), 4);
        pos = _mm256_add_epi32(pos, _mm256_and_si256(below(p, v), _mm256_set1_epi32((int)s)));
    }
    return pos;
}

/* The lanes of v that are NaN and in the zero range (as lane vectors). */
static inline void missing8(__m256 v, __m256i *nan, __m256i *zero) {
    *nan = _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_UNORD_Q));
    __m256 absv = _mm256_andnot_ps(_mm256_set1_ps(-0.0f), v);
    *zero = _mm256_castps_si256(_mm256_cmp_ps(absv, _mm256_set1_ps(TSM_ZERO_RANGE), _CMP_LE_OQ));
}

/* 1 with *code set when feature f's thresholds settle all 8 lanes of v at once: none
 * above the first threshold (code 0), or all above the last (code n); else 0. */
static inline int settled8(const tsq *q, const tsq_feature *f, __m256 v, __m256i *code) {
    const __m256 all = _mm256_castsi256_ps(_mm256_set1_epi32(-1));
    if (_mm256_testz_ps(_mm256_castsi256_ps(below(_mm256_set1_ps(q->thr[f->table]), v)), all)) {
        *code = _mm256_setzero_si256();
        return 1;
    }
    if (_mm256_testc_ps(_mm256_castsi256_ps(below(_mm256_set1_ps(q->thr[f->table + f->n_thr - 1]), v)), all)) {
        *code = _mm256_set1_epi32((int)f->n_thr);
        return 1;
    }
    return 0;
}

/* Natural codes of 8 values v of feature f, with the lanes that are NaN and in the zero
 * range (as lane vectors). Features with a bucket table take codes32's path instead
 * (quant.h "Bucket tables"). */
static inline __m256i codes8(const tsq *q, const tsq_feature *f, __m256 v, __m256i *nan, __m256i *zero) {
    missing8(v, nan, zero);
    /* quant.h "Block tables", as in the AVX-512 kernel. A block or chunk table no lane is
     * above the first threshold of (U_0[0]) counts 0 in every lane (and so do a feature's
     * later chunks); one every lane is above the last threshold of (P[15], +inf in a table
     * of fewer than 256) counts 256 (a block table: n): the 8 lanes often share a range of
     * a feature's values (zeros, small counts), and the two tests cost far less than a
     * table's lookups (GradientBoosting msn-sgb-500x64, 63 features of 2 chunks: rapid
     * 1.08-1.09x faster at 1,000 rows, Zen 3). */
    const __m256 all = _mm256_castsi256_ps(_mm256_set1_epi32(-1));
    if (f->regs != UINT32_MAX) {
        __m256i code;
        return settled8(q, f, v, &code) ? code : codes_reg8(q->blk + f->regs, f->n_thr, v);
    }
    if (f->blocks != UINT32_MAX) {
        __m256i code;
        return settled8(q, f, v, &code) ? code : codes_blocked8(q->blk + f->blocks, tsq_block_size(f->n_thr), v);
    }
    if (f->chunks != UINT32_MAX) { /* quant.h "Chunk tables": the chunks' counts added */
        __m256i code = _mm256_setzero_si256();
        for (uint32_t c = 0, n = (f->n_thr + TSQ_BLOCK_MAX - 1) / TSQ_BLOCK_MAX; c < n; c++) {
            const float *b = q->blk + f->chunks + (size_t)c * TSQ_BLOCK_FLOATS;
            if (_mm256_testz_ps(_mm256_castsi256_ps(below(_mm256_set1_ps(b[16]), v)), all)) break;
            if (_mm256_testc_ps(_mm256_castsi256_ps(below(_mm256_set1_ps(b[15]), v)), all))
                code = _mm256_add_epi32(code, _mm256_set1_epi32((int)TSQ_BLOCK_MAX));
            else
                code = _mm256_add_epi32(code, codes_blocked8(b, 16, v));
        }
        return code;
    }
    if (f->n_thr > TSQ_BLOCK_MAX) return codes_search8(q, f, v);
    const float *thr = q->thr;
    __m256i pos = _mm256_setzero_si256();
    const float *t = thr + f->table;
    /* The thresholds in ascending order, four at a time, until no lane is above the last:
     * the cost follows the largest code of the 8 lanes, not the feature's threshold count
     * (AVX2 gathers for a binary search measured slower on Zen 3 up to 128 thresholds);
     * features of more than TSQ_BLOCK_MIN thresholds take the tables above. */
    uint32_t i = 0;
    for (; i + 4 <= f->n_thr; i += 4) {
        __m256 c0 = _mm256_cmp_ps(_mm256_set1_ps(t[i]), v, _CMP_LT_OQ);
        __m256 c1 = _mm256_cmp_ps(_mm256_set1_ps(t[i + 1]), v, _CMP_LT_OQ);
        __m256 c2 = _mm256_cmp_ps(_mm256_set1_ps(t[i + 2]), v, _CMP_LT_OQ);
        __m256 c3 = _mm256_cmp_ps(_mm256_set1_ps(t[i + 3]), v, _CMP_LT_OQ);
        __m256i sum = _mm256_add_epi32(_mm256_add_epi32(_mm256_castps_si256(c0), _mm256_castps_si256(c1)),
                                       _mm256_add_epi32(_mm256_castps_si256(c2), _mm256_castps_si256(c3)));
        pos = _mm256_sub_epi32(pos, sum);
        if (_mm256_testz_ps(c3, c3)) break; /* no lane above t[i + 3]: none above any later */
    }
    if (i + 4 > f->n_thr)
        for (; i < f->n_thr; i++)
            pos = _mm256_sub_epi32(pos, _mm256_castps_si256(_mm256_cmp_ps(_mm256_set1_ps(t[i]), v, _CMP_LT_OQ)));
    return pos;
}

/* 32 lanes' codes (4 registers of 8 signed dwords) in lane order, clamped to 0 .. 255
 * (packus saturates), XOR the flip. */
static inline void store8(uint8_t *p, const __m256i *c, uint32_t flip) {
    __m256i a = _mm256_packus_epi32(c[0], c[1]), b = _mm256_packus_epi32(c[2], c[3]);
    __m256i bytes = _mm256_permutevar8x32_epi32(_mm256_packus_epi16(a, b), _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
    _mm256_store_si256((__m256i *)p, _mm256_xor_si256(bytes, _mm256_set1_epi8((char)flip)));
}

#define RS_LANES 32

/* Feature j's slots from its natural codes of a group (four registers of 8 dwords): each
 * slot's missing code in its NaN (or zero-range) lanes, minus the segment's base, clamped
 * to 0 .. 255 by the saturating packs, stored as the slot's 32 bytes. Shared by the float
 * and double quantizers. */
static inline void store_slot_codes(const tsq_tables *T, uint32_t j, const __m256i nat[4], const __m256i nan[4],
                                    const __m256i zero[4], uint8_t *codes) {
    const tsq *q = &T->q;
    const tsq_feature *f = &q->f[j];
    __m256i out[4];
    for (uint32_t s = q->slot_first[j]; s < q->slot_first[j + 1]; s++) {
        const tsq_slot *sl = &q->slots[s];
        const __m256i miss = _mm256_set1_epi32(sl->rule & TSQ_MISSING_RIGHT ? (int)f->n_thr : 0);
        const __m256i base = _mm256_set1_epi32((int)sl->base);
        for (size_t c = 0; c < 4; c++) {
            __m256i m = sl->rule & TSQ_ZERO_MISSING ? _mm256_or_si256(nan[c], zero[c]) : nan[c];
            out[c] = _mm256_sub_epi32(_mm256_blendv_epi8(nat[c], miss, m), base);
        }
        store8(codes + (size_t)s * 32, out, T->flip);
    }
}

/* Natural codes of the registers v[c] for c in live[0 .. n) of feature f by its bucket
 * table (quant.h "Bucket tables"): the bucket's first code by a gather, then the window's
 * binary search, a gather per step, the registers stepped together (their gathers'
 * latencies overlap). */
static inline void codes_bucketed(const tsq *q, const tsq_feature *f, const tsq_bucket *b, const __m256 v[4],
                                  const uint32_t live[4], uint32_t n, __m256i nat[4]) {
    const __m256i lo0 = _mm256_set1_epi32((int)b->gap_lo[0]), hi0 = _mm256_set1_epi32((int)b->gap_hi[0]);
    const __m256i lo1 = _mm256_set1_epi32((int)b->gap_lo[1]), hi1 = _mm256_set1_epi32((int)b->gap_hi[1]);
    const __m256i kmin = _mm256_set1_epi32((int)b->kmin), last = _mm256_set1_epi32((int)b->last);
    const __m128i shift = _mm_cvtsi32_si128((int)b->shift);
    const int *tab = (const int *)(const void *)(q->bkt + b->first);
    for (uint32_t i = 0; i < n; i++) {
        const __m256i s = _mm256_castps_si256(v[live[i]]);
        const __m256i key = _mm256_xor_si256(s, _mm256_or_si256(_mm256_srai_epi32(s, 31), _mm256_set1_epi32(INT32_MIN)));
        const __m256i in0 = _mm256_sub_epi32(_mm256_min_epu32(_mm256_max_epu32(key, lo0), hi0), lo0);
        const __m256i in1 = _mm256_sub_epi32(_mm256_min_epu32(_mm256_max_epu32(key, lo1), hi1), lo1);
        const __m256i col = _mm256_sub_epi32(key, _mm256_add_epi32(in0, in1));
        const __m256i bkt = _mm256_min_epu32(_mm256_srl_epi32(_mm256_sub_epi32(_mm256_max_epu32(col, kmin), kmin), shift), last);
        nat[live[i]] = _mm256_and_si256(_mm256_i32gather_epi32(tab, bkt, 2), _mm256_set1_epi32(0xFFFF));
    }
    const float *t = q->thr + f->table;
    for (uint32_t s = (1u << b->win) >> 1; s; s >>= 1) {
        const __m256i sv = _mm256_set1_epi32((int)s);
        for (uint32_t i = 0; i < n; i++) {
            const uint32_t c = live[i];
            const __m256 p = _mm256_i32gather_ps(t + s - 1, nat[c], 4);
            nat[c] = _mm256_add_epi32(nat[c], _mm256_and_si256(below(p, v[c]), sv));
        }
    }
}

/* The natural codes of a group's registers (nd lanes) of feature f with their NaN and
 * zero-range lanes: by its bucket table where it has one (registers below its first
 * threshold or above its last settled by two tests, as in codes8), else codes8. */
static inline void codes32(const tsq *q, uint32_t j, const __m256 v[4], size_t nd, __m256i nat[4], __m256i nan[4],
                           __m256i zero[4]) {
    const tsq_feature *f = &q->f[j];
    const tsq_bucket *b = &q->bk[j];
    if (b->first == UINT32_MAX) {
        for (size_t c = 0; c < 4; c++) {
            nat[c] = nan[c] = zero[c] = _mm256_setzero_si256();
            if (8 * c < nd) nat[c] = codes8(q, f, v[c], &nan[c], &zero[c]);
        }
        return;
    }
    uint32_t live[4], n = 0;
    for (uint32_t c = 0; c < 4; c++) {
        nat[c] = nan[c] = zero[c] = _mm256_setzero_si256();
        if (8 * c >= nd) continue;
        missing8(v[c], &nan[c], &zero[c]);
        if (!settled8(q, f, v[c], &nat[c])) live[n++] = c;
    }
    if (n) codes_bucketed(q, f, b, v, live, n, nat);
}

/* Feature j's slots for one group of 32 documents: its natural codes once, then each
 * slot's: the slot's missing code in its NaN (or zero-range) lanes, minus the segment's
 * base, clamped to 0 .. 255 by the saturating packs. */
static void rs_code_feature(const tsq_tables *T, uint32_t j, const float *col, size_t nd, uint8_t *codes) {
    const tsq *q = &T->q;
    __m256i nat[4], nan[4], zero[4];
    __m256 v[4];
    for (size_t c = 0; c < 4; c++) v[c] = 8 * c < nd ? _mm256_load_ps(col + 8 * c) : _mm256_setzero_ps();
    codes32(q, j, v, nd, nat, nan, zero);
    store_slot_codes(T, j, nat, nan, zero, codes);
}

/* ---- double codes (quant.h "Double codes", "Gap floats") ---- */

/* thr_n[at] for 8 lanes of feature f (at = c - 1 from -1 on: -1 reads some entry, a false
 * alarm at worst, which the doubles then settle): a permute up to 8 thresholds, two and a
 * blend up to 16 (tsq pads thr_n so that 16 can be read from any feature's), a gather
 * above. */
static inline __m256 gap_floats8(const float *gap, uint32_t n, __m256i at) {
    if (n <= 8) return _mm256_permutevar8x32_ps(_mm256_loadu_ps(gap), at);
    if (n <= 16) {
        const __m256 lo = _mm256_permutevar8x32_ps(_mm256_loadu_ps(gap), at);
        const __m256 hi = _mm256_permutevar8x32_ps(_mm256_loadu_ps(gap + 8), at);
        return _mm256_blendv_ps(lo, hi, _mm256_castsi256_ps(_mm256_slli_epi32(at, 28))); /* bit 3 of at */
    }
    return _mm256_i32gather_ps(gap, _mm256_max_epi32(at, _mm256_setzero_si256()), 4);
}

/* Feature j's slots for one group of 32 double values (tsq_slot_code_d), float first as
 * in the AVX-512 kernel (quant.h "Gap floats"): col holds the values rounded up to floats
 * (u), x the doubles (x[lane * stride]); the float codes of u, then the lanes whose u is
 * the gap float of their largest threshold below, or -Z on a zero-is-missing (or `snap`)
 * feature, coded from their doubles (rare). */
static void rs_code_feature_f64(const tsq_tables *T, uint32_t j, const float *col, size_t nd, const double *x,
                                size_t stride, uint8_t *codes) {
    const tsq *q = &T->q;
    const tsq_feature *f = &q->f[j];
    const float *gap = q->thr_n + f->table;
    __m256i nat[4], nan[4], zero[4];
    __m256 u[4];
    uint32_t fix = 0;
    /* the four registers' codes first, then their gap floats: the gathers' latencies
     * overlap one another instead of each waiting behind the next register's codes */
    for (size_t c = 0; c < 4; c++) {
        /* (conditional, as rs_code_feature's: an unconditional copy was compiled by GCC 12
         * as a copy of 16 bytes at a time into the stack, and each 32-byte load of it waited
         * for a failed store forwarding: 6% of the demo model's double rows, Intel) */
        u[c] = 8 * c < nd ? _mm256_load_ps(col + 8 * c) : _mm256_setzero_ps();
        if (8 * c < nd && f->snap) /* zero-range lanes coded as 0.0 (quant.h "Gap floats") */
            u[c] = _mm256_andnot_ps(_mm256_cmp_ps(_mm256_andnot_ps(_mm256_set1_ps(-0.0f), u[c]), _mm256_set1_ps(TSM_ZERO_RANGE), _CMP_LE_OQ), u[c]);
    }
    codes32(q, j, u, nd, nat, nan, zero);
    for (size_t c = 0; c < 4 && 8 * c < nd; c++) {
        const __m256 g = gap_floats8(gap, f->n_thr, _mm256_sub_epi32(nat[c], _mm256_set1_epi32(1)));
        __m256 m = _mm256_cmp_ps(g, u[c], _CMP_EQ_OQ);
        if (f->has_zero || f->snap)
            m = _mm256_or_ps(m, _mm256_cmp_ps(_mm256_load_ps(col + 8 * c), _mm256_set1_ps(-TSM_ZERO_RANGE), _CMP_EQ_OQ));
        fix |= (uint32_t)_mm256_movemask_ps(m) << (8 * c);
    }
    if (nd < 32) fix &= (1u << nd) - 1;
    if (__builtin_expect(fix != 0, 0)) {
        int32_t n[32] __attribute__((aligned(32))), z[32] __attribute__((aligned(32)));
        for (size_t c = 0; c < 4; c++) {
            _mm256_store_si256((__m256i *)(n + 8 * c), nat[c]);
            _mm256_store_si256((__m256i *)(z + 8 * c), zero[c]);
        }
        for (; fix; fix &= fix - 1) {
            const unsigned l = (unsigned)__builtin_ctz(fix);
            const double v = x[l * stride];
            const int in = v >= -(double)TSM_ZERO_RANGE && v <= (double)TSM_ZERO_RANGE;
            n[l] = (int32_t)tsq_code_d(q, j, in ? 0.0 : v);
            z[l] = in ? -1 : 0;
        }
        for (size_t c = 0; c < 4; c++) {
            nat[c] = _mm256_load_si256((const __m256i *)(n + 8 * c));
            zero[c] = _mm256_load_si256((const __m256i *)(z + 8 * c));
        }
    }
    store_slot_codes(T, j, nat, nan, zero, codes);
}
#define RS_F64_UP 1

/* The rounding of the double quantizers' conversions while a group is quantized (the
 * template's RS_ROUNDING): toward +inf (up: then vcvtpd2ps alone rounds up, 2 uops per 4
 * values instead of ~11 for a conversion to nearest, its check and a step up; 9% of
 * rapid's time on the demo model's double rows at 256 rows, Zen 3), else to nearest
 * ((float)v, for a model that converts its input to float32), in fpenv.h's canonical
 * state otherwise (flush-to-zero and denormals-are-zero off: exact as tsq_round_up;
 * exceptions masked) even where no public call set it; the caller's MXCSR, its flags
 * included, restored after. The conversions are volatile asm, so that the compiler keeps
 * them between the two MXCSR writes (it knows nothing of the rounding mode); nothing
 * else in the quantizer rounds. */
static inline uint32_t rs_round_begin(const int up) {
    uint32_t old, mode;
    __asm__ volatile("vstmxcsr %0" : "=m"(old));
    mode = (old & ~(uint32_t)(TSR_MXCSR_MODE | TSR_MXCSR_FLAGS)) | TSR_MXCSR_CANON | (up ? TSR_MXCSR_ROUND_UP : 0);
    __asm__ volatile("vldmxcsr %0" : : "m"(mode));
    return old;
}
static inline void rs_round_end(uint32_t old) { __asm__ volatile("vldmxcsr %0" : : "m"(old)); }
#define RS_ROUNDING 1

/* 4 doubles to floats by MXCSR's rounding, between rs_round_begin and rs_round_end. */
static inline __m128 cvt_up4(__m256d x) {
    __m128 u;
    __asm__ volatile("vcvtpd2ps %1, %0" : "=x"(u) : "x"(x));
    return u;
}

/* One column of the group's double rows (x: its value in row 0), converted by
 * rs_round_begin's rounding (up: toward +inf), into out[lane], lanes nd .. up to a
 * multiple of 16 -inf: 4 rows a gather (3 * stride fits an int: rapid_template.h checks). */
static void rs_column_f64(const double *x, size_t stride, size_t nd, float *out, const int up) {
    (void)up; /* MXCSR's */
    const __m128i rows = _mm_setr_epi32(0, (int)stride, 2 * (int)stride, 3 * (int)stride);
    for (size_t l = 0; l < ((nd + 15) & ~(size_t)15); l += 4) {
        __m256d v = _mm256_set1_pd(-INFINITY);
        if (l + 4 <= nd)
            v = _mm256_i32gather_pd(x + l * stride, rows, 8);
        else if (l < nd)
            v = _mm256_mask_i32gather_pd(v, x + l * stride, rows,
                                         _mm256_castsi256_pd(_mm256_cmpgt_epi64(_mm256_set1_epi64x((long long)(nd - l)),
                                                                                _mm256_setr_epi64x(0, 1, 2, 3))), 8);
        _mm_store_ps(out + l, cvt_up4(v));
    }
}
#define RS_COLUMN_F64 1
#define RS_COLUMN_F64_STRIDE (INT32_MAX / 4)

/* 8 x 8 floats transposed in registers (unpacks, shuffles, 128-bit lane swaps). */
static inline void transpose8(__m256 r[8]) {
    __m256 t[8];
    for (int i = 0; i < 4; i++) {
        t[2 * i] = _mm256_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm256_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    for (int i = 0; i < 2; i++) {
        r[4 * i] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], _MM_SHUFFLE(1, 0, 1, 0));
        r[4 * i + 1] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], _MM_SHUFFLE(3, 2, 3, 2));
        r[4 * i + 2] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], _MM_SHUFFLE(1, 0, 1, 0));
        r[4 * i + 3] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], _MM_SHUFFLE(3, 2, 3, 2));
    }
    for (int i = 0; i < 4; i++) {
        t[i] = _mm256_permute2f128_ps(r[i], r[4 + i], 0x20);
        t[4 + i] = _mm256_permute2f128_ps(r[i], r[4 + i], 0x31);
    }
    for (int i = 0; i < 8; i++) r[i] = t[i];
}

/* Columns c0 .. c0 + n - 1 (n <= 8) of the group's double rows, converted as
 * rs_column_f64's, into out[k * 32 + lane], lanes nd .. up to a multiple of 8 -inf, 8 rows
 * an 8 x 8 transpose; columns past n, and lanes from the next multiple of 8 on, left
 * unwritten. */
static void rs_columns_f64(const double *x, size_t stride, size_t nd, uint32_t c0, uint32_t n, float *out,
                           const int up) {
    (void)up; /* MXCSR's */
    const __m256i lane = _mm256_setr_epi64x(0, 1, 2, 3);
    const __m256i lo = _mm256_cmpgt_epi64(_mm256_set1_epi64x((long long)n), lane);
    const __m256i hi = _mm256_cmpgt_epi64(_mm256_set1_epi64x((long long)n - 4), lane);
    for (size_t l0 = 0; l0 < nd; l0 += 8) {
        __m256 r[8];
        for (size_t i = 0; i < 8; i++) {
            const double *p = x + (l0 + i) * stride + c0;
            r[i] = l0 + i < nd ? _mm256_set_m128(cvt_up4(_mm256_maskload_pd(p + 4, hi)), cvt_up4(_mm256_maskload_pd(p, lo)))
                               : _mm256_set1_ps(-INFINITY);
        }
        transpose8(r);
        for (size_t k = 0; k < 8; k++) _mm256_store_ps(out + k * 32 + l0, r[k]);
    }
}
#define RS_COLUMNS_F64 8

/* Columns c0 .. c0 + n - 1 (n <= 16) of the group's float rows into out[k * 32 + lane],
 * lanes nd .. up to a multiple of 8 -inf: 8 rows of 8 columns an 8 x 8 transpose (the
 * rows are at least c0 + n wide: masked loads); columns past n, and lanes from the next
 * multiple of 8 on, left unwritten. Replaces the template's copy of one value at a time
 * (a scalar load and store per value: a quarter of the quantizer on msn-lgb-1000x64). */
static void rs_columns16(const float *x, size_t stride, size_t nd, uint32_t c0, uint32_t n, float *out) {
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    for (uint32_t h = 0; h < n; h += 8) {
        const __m256i cols = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)(n - h)), lane);
        for (size_t l0 = 0; l0 < nd; l0 += 8) {
            __m256 r[8];
            for (size_t i = 0; i < 8; i++)
                r[i] = l0 + i < nd ? _mm256_maskload_ps(x + (l0 + i) * stride + c0 + h, cols) : _mm256_set1_ps(-INFINITY);
            transpose8(r);
            for (size_t k = 0; k < 8; k++) _mm256_store_ps(out + (h + k) * 32 + l0, r[k]);
        }
    }
}
#define RS_COLUMNS16 1

#define RS_UPDATE rs_update8
#define RS(name) rs_avx2_##name
#include "engines/templates/rapid_template.h"

const rs_kernels tse_rapid_avx2 = {TS_ISA_AVX2, 32, 1, rs_avx2_kernel, rs_avx2_quantize, rs_avx2_kernel_f64,
                                   RS_PAIR_LANES, rs_avx2_kernel_near, rs_avx2_quantize_near};

#endif
