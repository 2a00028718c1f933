/* tsimd_avx512.c: the trees-simd kernels for AVX-512: 16 trees per register, four blocks of them stepped together; the slot keys 16 at a time; with TSS_VBMI (tsimd_avx512vbmi.c) the top levels by byte masks. */
#define TS_ISA_FILE /* built with -mavx512f -mavx512cd -mavx512bw -mavx512dq -mavx512vl: see CMakeLists.txt */
#include "engines/tsimd.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#include <math.h>

/*
 * A step of a block: the lanes' entries idx = supernode + j, two vpgatherdq of their
 * (slot, threshold) pairs (L->node), split by two vpermt2d, vgatherdps of the document's slot values, one compare (not v <= t:
 * right), j = 2 j + 1 (+1 under the compare's mask). After K steps, vpgatherdd of the
 * exits; lanes whose exit is a leaf (< 0) keep it and leave the mask. Gathers have tens
 * of cycles of latency: TSS_G blocks (64 trees) step together so that their gathers
 * overlap; a block whose lanes have all stopped is skipped.
 */
#define TSS_G 4

static void tss_values16(const tss *L, const float *row, float *v) {
    const __m512 zr = _mm512_set1_ps(TSM_ZERO_RANGE);
    for (uint32_t s = 0; s < L->n_slots_pad; s += 16) {
        __m512i col = _mm512_loadu_si512(L->slot_col + s);
        __m512 x = _mm512_i32gather_ps(col, row, 4);
        __mmask16 miss = _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
        __mmask16 z = _mm512_test_epi32_mask(_mm512_loadu_si512(L->slot_zero + s), _mm512_set1_epi32(1));
        miss |= _mm512_mask_cmp_ps_mask(z, _mm512_abs_ps(x), zr, _CMP_LE_OQ);
        _mm512_store_ps(v + s, _mm512_mask_mov_ps(x, miss, _mm512_loadu_ps(L->slot_miss + s)));
    }
    v[0] = -INFINITY;
}

static void tss_avx512(const tss *L, const float *x, size_t n_rows, size_t stride, double *out, void *scratch) {
    float *v = scratch;
    int32_t *lv = (int32_t *)((char *)scratch + tss_round64((size_t)L->n_slots_pad * sizeof(float)));
    const uint32_t K = L->levels;
    const __m512i inner = _mm512_set1_epi32((int)((1u << K) - 1)), one = _mm512_set1_epi32(1);
    const __m512i zero = _mm512_setzero_si512();
    const uint32_t nb = (L->n_trees + 15) / 16;
    const int32_t *ex = L->exit;
    const long long *node = (const long long *)L->node;
    const __m512i evens = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i odds = _mm512_add_epi32(evens, one);
    for (size_t r = 0; r < n_rows; r++) {
        tss_values16(L, x + r * stride, v);
        double acc = L->base_score;
        for (uint32_t b0 = 0; b0 < nb; b0 += TSS_G) {
            __m512i e[TSS_G], leaf[TSS_G];
            __mmask16 m[TSS_G];
            const uint32_t ng = nb - b0 < TSS_G ? nb - b0 : TSS_G;
            for (uint32_t g = 0; g < TSS_G; g++) {
                if (g < ng) {
                    const uint32_t t0 = (b0 + g) * 16, cnt = L->n_trees - t0 < 16 ? L->n_trees - t0 : 16;
                    e[g] = _mm512_loadu_si512(L->root + t0);
                    m[g] = _mm512_mask_cmpge_epi32_mask((__mmask16)((1u << cnt) - 1), e[g], zero);
                } else {
                    e[g] = zero;
                    m[g] = 0;
                }
                leaf[g] = e[g];
            }
            for (;;) {
                unsigned any = 0;
                for (uint32_t g = 0; g < TSS_G; g++) any |= m[g];
                if (!any) break;
                __m512i j[TSS_G];
                for (uint32_t g = 0; g < TSS_G; g++) j[g] = zero;
                for (uint32_t d = 0; d < K; d++)
                    for (uint32_t g = 0; g < TSS_G; g++) {
                        if (!m[g]) continue;
                        __m512i idx = _mm512_add_epi32(e[g], j[g]);
                        __m512i n0 = _mm512_mask_i32gather_epi64(zero, (__mmask8)m[g], _mm512_castsi512_si256(idx),
                                                                 node, 8);
                        __m512i n1 = _mm512_mask_i32gather_epi64(zero, (__mmask8)(m[g] >> 8),
                                                                 _mm512_extracti64x4_epi64(idx, 1), node, 8);
                        __m512i s = _mm512_permutex2var_epi32(n0, evens, n1);
                        __m512 t = _mm512_castsi512_ps(_mm512_permutex2var_epi32(n0, odds, n1));
                        __m512 val = _mm512_mask_i32gather_ps(_mm512_setzero_ps(), m[g], s, v, 4);
                        __mmask16 right = _mm512_mask_cmp_ps_mask(m[g], val, t, _CMP_NLE_UQ);
                        __m512i j2 = _mm512_add_epi32(_mm512_add_epi32(j[g], j[g]), one);
                        j[g] = _mm512_mask_add_epi32(j2, right, j2, one);
                    }
                for (uint32_t g = 0; g < TSS_G; g++) {
                    if (!m[g]) continue;
                    __m512i idx = _mm512_add_epi32(e[g], _mm512_sub_epi32(j[g], inner));
                    __m512i nx = _mm512_mask_i32gather_epi32(e[g], m[g], idx, ex, 4);
                    __mmask16 lm = _mm512_mask_cmplt_epi32_mask(m[g], nx, zero);
                    leaf[g] = _mm512_mask_mov_epi32(leaf[g], lm, nx);
                    e[g] = nx;
                    m[g] &= (__mmask16)~lm;
                }
            }
            for (uint32_t g = 0; g < ng; g++) _mm512_store_si512(lv + 16 * g, leaf[g]);
            const uint32_t cnt = L->n_trees - b0 * 16 < 16 * ng ? L->n_trees - b0 * 16 : 16 * ng;
            for (uint32_t i = 0; i < cnt; i++) acc += L->leaves[~lv[i]];
        }
        out[r] = acc;
    }
}

/* tss_key of 16 floats that are not NaN (-0 and +0: one key). */
static inline __m512i keys16(__m512 x) {
    const __m512i b = _mm512_maskz_mov_epi32(_mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_NEQ_UQ), _mm512_castps_si512(x));
    return _mm512_xor_si512(b, _mm512_or_si512(_mm512_srai_epi32(b, 31), _mm512_set1_epi32((int)0x80000000u)));
}

/* Slots s .. s + 15's keys of the values x (tss_slot_key), stored at k + s. */
static inline void store_keys16(const tss *L, uint32_t s, __m512 x, uint32_t *k) {
    __mmask16 miss = _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
    const __mmask16 z = _mm512_test_epi32_mask(_mm512_loadu_si512(L->slot_zero + s), _mm512_set1_epi32(1));
    miss |= _mm512_mask_cmp_ps_mask(z, _mm512_abs_ps(x), _mm512_set1_ps(TSM_ZERO_RANGE), _CMP_LE_OQ);
    const __m512 sm = _mm512_loadu_ps(L->slot_miss + s);
    const __m512i mkey = _mm512_movm_epi32(_mm512_cmp_ps_mask(sm, sm, _CMP_UNORD_Q)); /* right: all ones */
    _mm512_storeu_si512(k + s, _mm512_mask_mov_epi32(keys16(x), miss, mkey));
}

/* tss_slot_keys, 16 slots a gather. */
static void tss_keys16(const tss *L, const float *row, uint32_t *k) {
    for (uint32_t s = 0; s < L->n_slots_pad; s += 16)
        store_keys16(L, s, _mm512_i32gather_ps(_mm512_loadu_si512(L->slot_col + s), row, 4), k);
    k[0] = 0;
}

/* 16 floats from two registers of 8 doubles, rounded as `rounding` says. */
#define TSS_JOIN_PS(a, b, rounding) \
    _mm512_insertf32x8(_mm512_castps256_ps512(_mm512_cvt_roundpd_ps(a, rounding | _MM_FROUND_NO_EXC)), \
                       _mm512_cvt_roundpd_ps(b, rounding | _MM_FROUND_NO_EXC), 1)

/* tsimd.c's tss_slot_keys_up, 16 slots at a time: each value rounded up (u) and down (d)
 * to floats, the keys of u; lanes whose value is not a float and whose (feature, d) has
 * a bit in L->gaps_any (or u is -TSM_ZERO_RANGE) are redone by tss_slot_key_up. */
static int tss_keys16_up(const tss *L, const double *row, uint32_t *k) {
    int ok = 1;
    const uint32_t *any = (const uint32_t *)L->gaps_any; /* bit b: word b / 32, bit b % 32 */
    for (uint32_t s = 0; s < L->n_slots_pad; s += 16) {
        const __m512i col = _mm512_loadu_si512(L->slot_col + s);
        const __m512d v0 = _mm512_i32gather_pd(_mm512_castsi512_si256(col), row, 8);
        const __m512d v1 = _mm512_i32gather_pd(_mm512_extracti64x4_epi64(col, 1), row, 8);
        const __m512 u = TSS_JOIN_PS(v0, v1, _MM_FROUND_TO_POS_INF), d = TSS_JOIN_PS(v0, v1, _MM_FROUND_TO_NEG_INF);
        store_keys16(L, s, u, k);
        __mmask16 odd = _mm512_cmp_ps_mask(u, d, _CMP_NEQ_OQ); /* not a float, not NaN */
        if (!odd) continue;
        /* the gaps_any bit of key (j + 1) << 32 | bits(d) (tss_gap_any_bit), 8 lanes a register */
        const __m512i j1 = _mm512_add_epi32(_mm512_loadu_si512(L->slot_j + s), _mm512_set1_epi32(1));
        const __m512i db = _mm512_castps_si512(d), mix = _mm512_set1_epi64((long long)0x9e3779b97f4a7c15ull);
        /* (extracti64x4 takes a constant lane: the two halves written out) */
#define TSS_ANY_BITS(h) _mm512_cvtepi64_epi32(_mm512_srli_epi64(_mm512_mullo_epi64(                                   \
            _mm512_or_si512(_mm512_slli_epi64(_mm512_cvtepu32_epi64(_mm512_extracti64x4_epi64(j1, h)), 32),             \
                            _mm512_cvtepu32_epi64(_mm512_extracti64x4_epi64(db, h))), mix), 48))
        const __m512i b = _mm512_inserti64x4(_mm512_castsi256_si512(TSS_ANY_BITS(0)), TSS_ANY_BITS(1), 1);
#undef TSS_ANY_BITS
        const __m512i w = _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), odd, _mm512_srli_epi32(b, 5), any, 4);
        __mmask16 redo = _mm512_mask_test_epi32_mask(odd, _mm512_sllv_epi32(_mm512_set1_epi32(1), _mm512_and_si512(b, _mm512_set1_epi32(31))), w);
        redo |= _mm512_mask_cmp_ps_mask(odd, u, _mm512_set1_ps(-TSM_ZERO_RANGE), _CMP_EQ_OQ);
        if (__builtin_expect(redo != 0, 0)) {
            float uu[16], dd[16];
            _mm512_storeu_ps(uu, u);
            _mm512_storeu_ps(dd, d);
            for (; redo; redo &= (__mmask16)(redo - 1)) {
                const uint32_t l = (uint32_t)__builtin_ctz(redo);
                ok &= tss_slot_key_up(L, s + l, row[L->slot_col[s + l]], uu[l], dd[l], &k[s + l]);
            }
        }
    }
    k[0] = 0;
    return ok;
}
#undef TSS_JOIN_PS

#ifdef TSS_VBMI
/*
 * Top levels (tsimd.c "Top levels"), with VBMI: one row's byte code per keyset (0 when
 * its slot key says missing, else 1 + the count of its sorted keys below the key: the
 * block of 16 by the block maxima, then one compare), the codes in registers, and per
 * tree its 64 node bytes' codes by vpermi2b, less 1 on the nodes whose missing values
 * go right, one vpcmpub (code > j: right) into a 64-bit mask, and the walk.
 */
static inline __attribute__((always_inline)) void top_codes(const tss_top *T, const uint32_t *k, size_t ks, uint32_t R,
                                                             uint8_t *c) {
    /* keysets outer, rows inner: a keyset's slot, block maxima and first block read once */
    for (uint32_t u = 0; u < T->n_top; u++) {
        const uint32_t slot = T->tslot[u];
        const __m512i sum = _mm512_load_si512(T->tsum + 16 * (size_t)u);
        const uint32_t *keys = T->tkeys + 16 * (size_t)T->toff[u];
        if (T->tsum[16 * (size_t)u] == 0xffffffffu) { /* up to 15 keys: one block, no maxima */
            const __m512i k0 = _mm512_load_si512(keys);
            for (uint32_t r = 0; r < R; r++) {
                const uint32_t key = k[ks * r + slot];
                const uint32_t n = (uint32_t)__builtin_popcount(_mm512_cmplt_epu32_mask(k0, _mm512_set1_epi32((int)key)));
                c[256 * r + u] = (uint8_t)((1 + n) & (0u - (uint32_t)(key + 1u > 1u)));
            }
            continue;
        }
        for (uint32_t r = 0; r < R; r++) {
            const uint32_t key = k[ks * r + slot];
            const __m512i kv = _mm512_set1_epi32((int)key);
            const uint32_t b = (uint32_t)__builtin_popcount(_mm512_cmplt_epu32_mask(sum, kv));
            const uint32_t n =
                (uint32_t)__builtin_popcount(_mm512_cmplt_epu32_mask(_mm512_load_si512(keys + 16 * b), kv));
            const uint32_t ok = key + 1u > 1u; /* key 0 or 0xffffffff: missing, code 0 (no branch) */
            c[256 * r + u] = (uint8_t)((1 + 16 * b + n) & (0u - ok));
        }
    }
}

/* Trees i0 .. i0 + 7's exits from their masks M (tss_top_walk in 64-bit lanes: the 7-bit
 * table lookups by vpermi2b on every byte, byte 0 of each lane kept) into x; those whose
 * exit is a node (and not wide) appended to the work list A at *n as (i << 32 | entry).
 * tb: the trees' tbase (64-bit lanes), nd: their nodes, keep: not wide, ti: i << 32. */
static inline void walk8_at(__m512i M, __m512i w0, __m512i w1, __m512i tb, __m512i nd, __mmask8 keep, __m512i ti,
                            uint32_t *xs, uint64_t *A, uint32_t *n);
static inline void walk8(uint32_t i0, __m512i M, __m512i w0, __m512i w1, __m512i tb, __m512i nd, __mmask8 keep,
                         __m512i ti, uint32_t *x, uint64_t *A, uint32_t *n) {
    walk8_at(M, w0, w1, tb, nd, keep, ti, x + i0, A, n);
}

/* walk8, the 8 exits stored at xs. */
static inline void walk8_at(__m512i M, __m512i w0, __m512i w1, __m512i tb, __m512i nd, __mmask8 keep, __m512i ti,
                            uint32_t *xs, uint64_t *A, uint32_t *n) {
    /* (an index's bytes 1-7 are 0, and walk3[0] is 0: the looked-up lanes need no mask) */
    const __m512i b7 = _mm512_set1_epi64(127);
    const __m512i a = _mm512_permutex2var_epi8(w0, _mm512_and_si512(M, b7), w1);
    const __m512i a8 = _mm512_slli_epi64(a, 3);
    const __m512i s = _mm512_and_si512(_mm512_srlv_epi64(_mm512_srli_epi64(M, 7), _mm512_sub_epi64(a8, a)), b7);
    const __m512i p = _mm512_add_epi64(a8, _mm512_permutex2var_epi8(w0, s, w1));
    const __m512i e = _mm512_add_epi64(p, tb);
    _mm256_storeu_si256((__m256i *)xs, _mm512_cvtepi64_epi32(e));
    const __mmask8 node = _mm512_mask_test_epi64_mask(keep, _mm512_srlv_epi64(nd, p), _mm512_set1_epi64(1));
    _mm512_storeu_si512(A + *n, _mm512_maskz_compress_epi64(node, _mm512_or_si512(ti, e)));
    *n += (uint32_t)__builtin_popcount(node);
}

/* walk8 for R rows of trees i0 .. i0 + 7 (row r: masks mm[r], x + ntp r, A + ntp r). */
static inline __attribute__((always_inline)) void walk8_rows(const tss_top *T, uint32_t i0, int R,
                                                            uint64_t (*mm)[8], __m512i w0, __m512i w1,
                                                            uint32_t *x, uint64_t *A, uint32_t *n) {
    const size_t ntp = T->n_trees_pad;
    const __m512i tb = _mm512_cvtepu32_epi64(_mm256_loadu_si256((const __m256i *)(T->tbase + i0)));
    const __m512i nd = _mm512_loadu_si512(T->nodes + i0);
    const __mmask8 keep = (__mmask8)~T->wide8[i0 / 8];
    const __m512i ti = _mm512_slli_epi64(
        _mm512_add_epi64(_mm512_set1_epi64(i0), _mm512_setr_epi64(0, 1, 2, 3, 4, 5, 6, 7)), 32);
#pragma GCC unroll 16
    for (int r = 0; r < R; r++)
        walk8(i0, _mm512_load_si512(mm[r]), w0, w1, tb, nd, keep, ti, x + ntp * r, A + ntp * r, &n[r]);
}

/* Tree i's mask from its node bytes, the codes in c0, c1 (W <= 2: keysets < 128) or c0-c3. */
static inline __attribute__((always_inline)) uint64_t top_mask(const tss_top *T, size_t i, int W, __m512i c0, __m512i c1,
                                                              __m512i c2, __m512i c3) {
    const __m512i sb = _mm512_load_si512(T->nslot + i * TSS_TOP_BYTES);
    __m512i cv;
    if (W == 1) {
        cv = _mm512_permutexvar_epi8(sb, c0);
    } else if (W == 2) {
        cv = _mm512_permutex2var_epi8(c0, sb, c1);
    } else {
        const __m512i lo = _mm512_permutex2var_epi8(c0, sb, c1), hi = _mm512_permutex2var_epi8(c2, sb, c3);
        cv = _mm512_mask_blend_epi8(_mm512_movepi8_mask(sb), lo, hi);
    }
    cv = _mm512_mask_sub_epi8(cv, (__mmask64)T->mr[i], cv, _mm512_set1_epi8(1));
    return _mm512_cmpgt_epu8_mask(cv, _mm512_load_si512(T->nidx + i * TSS_TOP_BYTES));
}

/* The masks of trees i0 .. i0 + 7 for R rows (hot loop, inlined in top_walk and
 * top_walk_chunk): row r's codes in c0[r] (and c1[r] when W == 2), its mask of tree
 * i0 + k to mm[r][k]; each tree's node bytes loaded once for the R rows. */
static inline __attribute__((always_inline)) void masks8_rows(const tss_top *T, uint32_t i0, int W, int R,
                                                             const __m512i *c0, const __m512i *c1, __m512i one,
                                                             uint64_t (*mm)[8]) {
    for (uint32_t k = 0; k < 8; k++) {
        const size_t i = i0 + k;
        const __m512i sb = _mm512_load_si512(T->nslot + i * TSS_TOP_BYTES);
        const __m512i ix = _mm512_load_si512(T->nidx + i * TSS_TOP_BYTES);
        const __mmask64 mr = (__mmask64)T->mr[i];
#pragma GCC unroll 16
        for (int r = 0; r < R; r++) {
            __m512i cv = W == 1 ? _mm512_permutexvar_epi8(sb, c0[r]) : _mm512_permutex2var_epi8(c0[r], sb, c1[r]);
            cv = _mm512_mask_sub_epi8(cv, mr, cv, one);
            mm[r][k] = _mm512_cmpgt_epu8_mask(cv, ix);
        }
    }
}

/* The trees' exits for R rows (hot loop): trees outer, rows inner, so that each tree's
 * node bytes are loaded once for the R rows (whose codes stay in registers, or L1):
 * 8 trees' masks per row, then their walk; the trees that read a keyset past 128 again
 * from four registers. Row r: codes + 256 r, x + ntp r, A + ntp r, its list's length n[r]. */
static inline __attribute__((always_inline)) void top_walk(const tss *L, const uint8_t *codes, int W, int R,
                                                          uint32_t *x, uint64_t *A, uint32_t *n) {
    const tss_top *T = L->top;
    const size_t ntp = T->n_trees_pad;
    __m512i c0[TSS_TOPR], c1[TSS_TOPR];
#pragma GCC unroll 16
    for (int r = 0; r < R; r++) {
        c0[r] = _mm512_load_si512(codes + 256 * r);
        c1[r] = _mm512_load_si512(codes + 256 * r + 64);
        n[r] = 0;
    }
    const __m512i w0 = _mm512_loadu_si512(T->walk3), w1 = _mm512_loadu_si512(T->walk3 + 64);
    const __m512i one = _mm512_set1_epi8(1);
    /* masks stored as 64-bit words and read back as one register a round later (read at
     * once, the load waits for the 8 stores: no store forwarding) */
    __attribute__((aligned(64))) uint64_t mm[2][TSS_TOPR][8];
    for (uint32_t i0 = 0; i0 < ntp; i0 += 8) {
        const uint32_t h = (i0 / 8) & 1;
        masks8_rows(T, i0, W, R, c0, c1, one, mm[h]);
        if (i0) walk8_rows(T, i0 - 8, R, mm[h ^ 1], w0, w1, x, A, n);
    }
    const uint32_t last = (uint32_t)ntp - 8;
    walk8_rows(T, last, R, mm[(last / 8) & 1], w0, w1, x, A, n);
    for (int r = 0; r < R && T->n_wide; r++) { /* (W == 1 has none) */
        const uint8_t *c = codes + 256 * r;
        const __m512i d0 = _mm512_load_si512(c), d1 = _mm512_load_si512(c + 64);
        const __m512i d2 = _mm512_load_si512(c + 128), d3 = _mm512_load_si512(c + 192);
        uint32_t *xr = x + ntp * r;
        uint64_t *Ar = A + ntp * r;
        for (uint32_t w = 0; w < T->n_wide; w++) {
            const uint32_t i = T->wide[w], p = tss_top_walk(T, top_mask(T, i, 4, d0, d1, d2, d3));
            xr[i] = T->tbase[i] + p;
            Ar[n[r]] = (uint64_t)i << 32 | xr[i];
            n[r] += (uint32_t)(T->nodes[i] >> p) & 1;
        }
    }
}

/* walk8_rows for a chunk (tsimd.h tss_top_range_fn): rows rt .. rt + R - 1 of the
 * chunk, trees i0 .. i0 + 7 of the chunk from t0 (x index (q << lg) + i - t0). */
static inline __attribute__((always_inline)) void walk8_chunk(const tss_top *T, uint32_t i0, int R, uint64_t (*mm)[8],
                                                             __m512i w0, __m512i w1, uint32_t t0, uint32_t rt,
                                                             uint32_t lg, size_t nsp, uint32_t *x, uint64_t *A,
                                                             uint32_t *n) {
    const __m512i tb = _mm512_cvtepu32_epi64(_mm256_loadu_si256((const __m256i *)(T->tbase + i0)));
    const __m512i nd = _mm512_loadu_si512(T->nodes + i0);
    const __mmask8 keep = (__mmask8)~T->wide8[i0 / 8];
    const __m512i lane = _mm512_setr_epi64(0, 1, 2, 3, 4, 5, 6, 7);
#pragma GCC unroll 16
    for (int r = 0; r < R; r++) {
        const uint32_t xi = ((rt + (uint32_t)r) << lg) + i0 - t0;
        const __m512i ti = _mm512_add_epi64(_mm512_set1_epi64((long long)TSS_ITEM(rt + (uint32_t)r, nsp, xi, 0)),
                                            _mm512_slli_epi64(lane, 32));
        walk8_at(_mm512_load_si512(mm[r]), w0, w1, tb, nd, keep, ti, x + xi, A, n);
    }
}

/* top_walk for a chunk of trees t0 .. t1 - 1 and R rows (tsimd.h tss_top_range_fn; hot
 * loop): 8 trees' masks for the R rows, then their walk, the wide trees redone after. */
static inline __attribute__((always_inline)) void top_walk_chunk(const tss *L, const uint8_t *codes, int W, int R,
                                                                uint32_t t0, uint32_t t1, uint32_t rt, uint32_t lg,
                                                                size_t nsp, uint32_t *x, uint64_t *A, uint32_t *n) {
    const tss_top *T = L->top;
    __m512i c0[TSS_TOPR], c1[TSS_TOPR];
#pragma GCC unroll 16
    for (int r = 0; r < R; r++) {
        c0[r] = _mm512_load_si512(codes + 256 * r);
        c1[r] = _mm512_load_si512(codes + 256 * r + 64);
    }
    const __m512i w0 = _mm512_loadu_si512(T->walk3), w1 = _mm512_loadu_si512(T->walk3 + 64);
    const __m512i one = _mm512_set1_epi8(1);
    __attribute__((aligned(64))) uint64_t mm[2][TSS_TOPR][8];
    for (uint32_t i0 = t0; i0 < t1; i0 += 8) {
        const uint32_t h = (i0 / 8) & 1;
        masks8_rows(T, i0, W, R, c0, c1, one, mm[h]);
        if (i0 > t0) walk8_chunk(T, i0 - 8, R, mm[h ^ 1], w0, w1, t0, rt, lg, nsp, x, A, n);
    }
    walk8_chunk(T, t1 - 8, R, mm[((t1 - 8) / 8) & 1], w0, w1, t0, rt, lg, nsp, x, A, n);
    if (!T->n_wide || T->wide[T->n_wide - 1] < t0) return; /* (W == 1 has none) */
    uint32_t w = 0;
    while (T->wide[w] < t0) w++;
    for (; w < T->n_wide && T->wide[w] < t1; w++) {
        const uint32_t i = T->wide[w];
        for (int r = 0; r < R; r++) {
            const uint8_t *c = codes + 256 * r;
            const uint32_t p = tss_top_walk(T, top_mask(T, i, 4, _mm512_load_si512(c), _mm512_load_si512(c + 64),
                                                        _mm512_load_si512(c + 128), _mm512_load_si512(c + 192)));
            const uint32_t xi = ((rt + (uint32_t)r) << lg) + i - t0;
            x[xi] = T->tbase[i] + p;
            A[*n] = TSS_ITEM(rt + (uint32_t)r, nsp, xi, x[xi]);
            *n += (uint32_t)(T->nodes[i] >> p) & 1;
        }
    }
}

/* tsimd.h tss_top_codes_fn: R <= TSS_TOPR rows' codes (R a constant in each case). */
static void tss_top_codes(const tss *L, const uint32_t *k, size_t ks, uint32_t R, uint8_t *codes) {
    for (uint32_t q = 0; q < R * 256u; q += 64) _mm512_store_si512(codes + q, _mm512_setzero_si512());
    switch (R) {
    case 1: top_codes(L->top, k, ks, 1, codes); break;
    case 2: top_codes(L->top, k, ks, 2, codes); break;
    case 3: top_codes(L->top, k, ks, 3, codes); break;
    case 4: top_codes(L->top, k, ks, 4, codes); break;
    case 5: top_codes(L->top, k, ks, 5, codes); break;
    case 6: top_codes(L->top, k, ks, 6, codes); break;
    case 7: top_codes(L->top, k, ks, 7, codes); break;
    default: top_codes(L->top, k, ks, TSS_TOPR, codes); break;
    }
}

/* tsimd.h tss_top_steps_fn (hot loop): in rounds, each item moved to its child
 * (e + delta + right) and kept (compacted in place) while that child is a node; its entry
 * into x at every step. A step in x86-64 with BMI (19 instructions, against 28 from the C
 * below): the entry w, the slot key's compare (carry: right), a += delta + carry, the x
 * index by bextr, the kept count k += 1 - (the child's leaf bit: w's bit 62 + right). */
static void tss_top_steps(const tss *L, const uint32_t *V, uint32_t *x, uint64_t *A, uint32_t n) {
    const uint64_t *C = (const uint64_t *)L->cn;
    _Static_assert(TSS_TOP_DELTA == 0x3fffu && TSS_TOP_LEAF_L == 0x4000u, "tss_top_steps: the entry's fields");
#if defined(__x86_64__) && defined(__BMI__) && defined(__BMI2__) && defined(__GNUC__)
    const uint64_t cd = 48u | 14u << 8, cx = 32u | TSS_XI_BITS << 8; /* bextr: delta, x index */
#endif
    while (n) {
        uint64_t k = 0;
        const uint64_t *end = A + n;
        for (const uint64_t *p = A; p < end; p++) {
#if defined(__x86_64__) && defined(__BMI__) && defined(__BMI2__) && defined(__GNUC__)
            uint64_t a, e, w, s, t, c;
            __asm__("movq (%[p]), %[a]\n\t"
                    "movl %k[a], %k[e]\n\t"
                    "movq (%[C],%[e],8), %[w]\n\t"
                    "rorxq $32, %[w], %[s]\n\t"
                    "movzwl %w[s], %k[e]\n\t"
                    "movq %[a], %[t]\n\t"
                    "shrq $43, %[t]\n\t"
                    "addq %[t], %[e]\n\t"
                    "bextrq %[cd], %[w], %[t]\n\t"
                    "xorl %k[c], %k[c]\n\t"
                    "cmpl (%[V],%[e],4), %k[w]\n\t"
                    "setb %b[c]\n\t"
                    "adcq %[t], %[a]\n\t"
                    "bextrq %[cx], %[a], %[t]\n\t"
                    "movl %k[a], (%[x],%[t],4)\n\t"
                    "movq %[a], (%[A],%[k],8)\n\t"
                    "shrxq %[c], %[s], %[t]\n\t"
                    "btq $30, %[t]\n\t"
                    "sbbq $-1, %[k]"
                    : [a] "=&r"(a), [e] "=&r"(e), [w] "=&r"(w), [s] "=&r"(s), [t] "=&r"(t), [c] "=&c"(c), [k] "+r"(k)
                    : [p] "r"(p), [C] "r"(C), [V] "r"(V), [x] "r"(x), [A] "r"(A), [cd] "r"(cd), [cx] "r"(cx)
                    : "cc", "memory");
#else
            const uint64_t a = *p, w = C[(uint32_t)a];
            const uint32_t right = (uint32_t)w < V[(uint32_t)(a >> (32 + TSS_XI_BITS)) + (uint16_t)(w >> 32)];
            const uint64_t a2 = a + ((w >> 48) & TSS_TOP_DELTA) + right;
            x[(a2 >> 32) & ((1u << TSS_XI_BITS) - 1)] = (uint32_t)a2;
            A[k] = a2;
            k += !((w >> (62 + right)) & 1);
#endif
        }
        n = (uint32_t)k;
    }
}

#define TSS_TOP_CHUNK(RR)                                                                         \
    do {                                                                                          \
        if (L->top->n_top <= 64)                                                                  \
            top_walk_chunk(L, codes, 1, RR, t0, t1, rt, lg, nsp, x, A, n);                        \
        else                                                                                      \
            top_walk_chunk(L, codes, 2, RR, t0, t1, rt, lg, nsp, x, A, n);                        \
    } while (0)

/* tsimd.h tss_top_range_fn (R <= TSS_TOPR, a constant in each case). */
static void tss_top_range(const tss *L, const uint8_t *codes, uint32_t R, uint32_t t0, uint32_t t1, uint32_t rt,
                          uint32_t lg, size_t nsp, uint32_t *x, uint64_t *A, uint32_t *n) {
    switch (R) {
    case 1: TSS_TOP_CHUNK(1); break;
    case 2: TSS_TOP_CHUNK(2); break;
    case 3: TSS_TOP_CHUNK(3); break;
    case 4: TSS_TOP_CHUNK(4); break;
    case 5: TSS_TOP_CHUNK(5); break;
    case 6: TSS_TOP_CHUNK(6); break;
    case 7: TSS_TOP_CHUNK(7); break;
    default: TSS_TOP_CHUNK(TSS_TOPR); break;
    }
}
#undef TSS_TOP_CHUNK

#define TSS_TOP_WALK(RR)                                                                          \
    do {                                                                                          \
        for (uint32_t q = 0; q < (RR) * 256u; q += 64) _mm512_store_si512(codes + q, _mm512_setzero_si512()); \
        top_codes(L->top, k, ks, RR, codes);                                                      \
        if (L->top->n_top <= 64)                                                                  \
            top_walk(L, codes, 1, RR, x, A, n);                                                   \
        else                                                                                      \
            top_walk(L, codes, 2, RR, x, A, n);                                                   \
    } while (0)

/* R <= TSS_TOPR rows' exits (tsimd.h tss_top_fn): their codes, then the walk (R a constant in each). */
static void tss_top_exits(const tss *L, const uint32_t *k, size_t ks, uint32_t R, uint32_t *x, uint64_t *A,
                          uint32_t *n) {
    __attribute__((aligned(64))) uint8_t codes[TSS_TOPR * 256];
    switch (R) { /* tsimd.c top_rows_n: 1, 2, 4 or TSS_TOPR rows */
    case 1: TSS_TOP_WALK(1); break;
    case 2: TSS_TOP_WALK(2); break;
    case 4: TSS_TOP_WALK(4); break;
    default: TSS_TOP_WALK(TSS_TOPR); break;
    }
}
#undef TSS_TOP_WALK

const tss_kernels tse_tsimd_avx512vbmi = {TS_ISA_AVX512, 16, tss_avx512, tss_keys16, tss_keys16_up, tss_top_exits,
                                           tss_top_codes, tss_top_range, tss_top_steps};
#else
const tss_kernels tse_tsimd_avx512 = {TS_ISA_AVX512, 16, tss_avx512, tss_keys16, tss_keys16_up, NULL, NULL, NULL, NULL};
#endif

#endif
