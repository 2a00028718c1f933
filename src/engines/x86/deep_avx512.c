/* deep_avx512.c: the deep engine's top levels for 64 documents per call (deep.h): one 64-bit mask of the documents going right per node from four VPCMPUD, the exits from the masks. */
#include <immintrin.h>
#include <string.h>

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


/*
 * The gathered walk (deep.h): 16 lanes per register, each walking one document; a step
 * gathers the lanes' slots (8 quadwords twice: a gather costs about a cycle per element
 * on Zen 4, so 8-byte elements halve the node's cost against two 4-byte ones; the
 * 16-byte slots take two more), their keys (one VPGATHERDD from the documents' key
 * rows), compares, and moves each lane to its child. The lanes that reach a leaf write
 * their document and leaf slot to the leaf list (VPCOMPRESSD into a register, then a
 * plain store: Zen 4's compress to memory is slow) and take the next documents of the
 * walk (VPEXPANDD of their numbers and start slots). No branch depends on a lane's path.
 * Two registers of lanes are in flight, their steps interleaved, so that one register's
 * gathers wait while the other's run (one register: 1.6x slower; three or four: no
 * faster on Zen 4, 1.16x slower on Intel Emerald Rapids; slots carrying their children's
 * columns, so that a step's two gathers overlap: 1.25x slower there, docs/benchmarks.md
 * "Twenty-third session"). While 32 documents or more are left to start, every lane
 * walks and the steps take no masks ("full"); the walk's end masks the lanes without a document (and steps
 * no register whose lanes are all done: 1.07-1.09x on msn-srf-500x4096). After the
 * walk, each document's leaf value is added to its sum (every document is on the leaf
 * list once: the sums stay naive's, tree by tree).
 */
#define DEEP_GREGS 2

typedef struct glanes {
    __m512i at, doc; /* slot, document */
    __mmask16 act;   /* lanes walking */
} glanes;

/* The walk's constant parts. */
typedef struct gwalk_in {
    const char *sl;                /* the tree's slots */
    const uint32_t *keys, *docs, *starts;
    size_t n;
    uint32_t *ldoc, *lslot;        /* the leaf list (narrow: ldoc only, document | slot << 12) */
} gwalk_in;

/* The lanes of free_ (their children in at) take the walk's next documents: document
 * numbers docs[next ..] (listed; else next, next + 1, ...), start slots starts[next ..]
 * (started; else the root). full: 16 documents or more are left; else the lanes of
 * free_ left without one stop. */
static inline __attribute__((always_inline)) void grefill(glanes *v, __m512i at, __mmask16 free_, const gwalk_in *w,
                                                          const int listed, const int started, const int full,
                                                          size_t *next) {
    __mmask16 take = free_;
    unsigned cnt = (unsigned)__builtin_popcount(free_);
    __m512i nd, ns = _mm512_setzero_si512();
    if (full) {
        nd = listed ? _mm512_loadu_si512(w->docs + *next) : _mm512_setzero_si512();
        if (started) ns = _mm512_loadu_si512(w->starts + *next);
    } else {
        const size_t avail = w->n - *next;
        if (cnt > avail) { /* the walk's last documents, to the lowest lanes of free_ */
#ifdef __BMI2__
            take = (__mmask16)_pdep_u32((1u << avail) - 1, free_);
#else /* (SIMDe's build: scripts/check_avx512_simde.sh) */
            unsigned rest = free_;
            take = 0;
            for (size_t i = 0; i < avail; i++) take = (__mmask16)(take | (rest & (0u - rest))), rest &= rest - 1;
#endif
            cnt = (unsigned)avail;
        }
        v->act = (__mmask16)((v->act & ~free_) | take);
        const __mmask16 lm = (__mmask16)((1u << cnt) - 1);
        nd = listed ? _mm512_maskz_loadu_epi32(lm, w->docs + *next) : _mm512_setzero_si512();
        if (started) ns = _mm512_maskz_loadu_epi32(lm, w->starts + *next);
    }
    if (!listed)
        nd = _mm512_add_epi32(_mm512_set1_epi32((int)*next),
                              _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15));
    v->doc = _mm512_mask_expand_epi32(v->doc, take, nd);
    v->at = started ? _mm512_mask_expand_epi32(at, take, ns) : _mm512_mask_mov_epi32(at, take, ns);
    *next += cnt;
}

/* A gather of 8 quadwords at base + 8 * idx, under mask m unless full. */
static inline __attribute__((always_inline)) __m512i gq(__m256i idx, const char *base, __mmask8 m, const int full) {
    return full ? _mm512_i32gather_epi64(idx, base, 8)
                : _mm512_mask_i32gather_epi64(_mm512_setzero_si512(), m, idx, base, 8);
}

/* One step of the lanes v (hot: inlined with its form constant); *nl: the leaf list's
 * length. */
static inline __attribute__((always_inline)) void gstep(glanes *v, const gwalk_in *w, const int narrow,
                                                        const int listed, const int started, const int full,
                                                        __m512i ncols, size_t *nl, size_t *next) {
    const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i odd = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
    const __mmask16 act = full ? (__mmask16)0xFFFF : v->act;
    const __m512i at = narrow ? v->at : _mm512_add_epi32(v->at, v->at);
    const __m256i at_lo = _mm512_castsi512_si256(at), at_hi = _mm512_extracti64x4_epi64(at, 1);
    const __mmask8 act_lo = (__mmask8)act, act_hi = (__mmask8)(act >> 8);
    const __m512i n_lo = gq(at_lo, w->sl, act_lo, full), n_hi = gq(at_hi, w->sl, act_hi, full);
    const __m512i thr = _mm512_permutex2var_epi32(n_lo, even, n_hi);
    const __m512i cl = _mm512_permutex2var_epi32(n_lo, odd, n_hi);
    __m512i col, left;
    if (narrow) {
        col = _mm512_and_si512(cl, _mm512_set1_epi32(0xFFFF));
        left = _mm512_srli_epi32(cl, 16);
    } else { /* the left child in the slot's second quadword */
        col = cl;
        const __m512i l_lo = gq(at_lo, w->sl + 8, act_lo, full), l_hi = gq(at_hi, w->sl + 8, act_hi, full);
        left = _mm512_permutex2var_epi32(l_lo, even, l_hi);
    }
    const __m512i kidx = _mm512_add_epi32(_mm512_mullo_epi32(v->doc, ncols), col);
    const __m512i k = full ? _mm512_i32gather_epi32(kidx, w->keys, 4)
                           : _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), act, kidx, w->keys, 4);
    const __mmask16 go = _mm512_mask_cmpgt_epu32_mask(act, k, thr);
    const __m512i base = _mm512_and_si512(left, _mm512_set1_epi32(narrow ? 0x3FFF : 0x3FFFFFFF));
    const __m512i child = _mm512_mask_add_epi32(base, go, base, _mm512_set1_epi32(1));
    const __m512i lflag = _mm512_set1_epi32(narrow ? 0x8000 : (int)0x80000000u);
    const __m512i rflag = _mm512_set1_epi32(narrow ? 0x4000 : 0x40000000);
    const __mmask16 leaf = _mm512_mask_test_epi32_mask(act, left, _mm512_mask_blend_epi32(go, lflag, rflag));
    if (narrow) /* documents below 4,096, slots below 16,384 */
        _mm512_storeu_si512(w->ldoc + *nl,
                            _mm512_maskz_compress_epi32(leaf, _mm512_or_si512(v->doc, _mm512_slli_epi32(child, 12))));
    else {
        _mm512_storeu_si512(w->ldoc + *nl, _mm512_maskz_compress_epi32(leaf, v->doc));
        _mm512_storeu_si512(w->lslot + *nl, _mm512_maskz_compress_epi32(leaf, child));
    }
    *nl += (unsigned)__builtin_popcount(leaf);
    grefill(v, child, leaf, w, listed, started, full, next);
}

/* Hot loop (long on purpose): the walk of documents [0, n) through one tree (deep.h
 * deep_kernels.walk), its form, list and start constant once inlined. */
static inline __attribute__((always_inline)) void gwalk(const gwalk_in *w, const int narrow, const int listed,
                                                        const int started, uint32_t n_cols, double *out,
                                                        const char *pf, const char *pf_end, uint32_t pf_lines) {
    const __m512i ncols = _mm512_set1_epi32((int)n_cols), zero = _mm512_setzero_si512();
    const size_t n = w->n;
    glanes v[DEEP_GREGS];
    size_t next = 0, nl = 0;
    for (int g = 0; g < DEEP_GREGS; g++) {
        v[g] = (glanes){zero, zero, 0};
        grefill(&v[g], zero, 0xFFFF, w, listed, started, 0, &next);
    }
    while (n - next >= 16 * DEEP_GREGS) { /* every lane walks, and refills find 16 documents */
        for (int g = 0; g < DEEP_GREGS; g++) gstep(&v[g], w, narrow, listed, started, 1, ncols, &nl, &next);
        for (uint32_t p = 0; p < pf_lines && pf < pf_end; p++, pf += 64) _mm_prefetch(pf, _MM_HINT_T0);
    }
    __mmask16 any = 0;
    for (int g = 0; g < DEEP_GREGS; g++) any |= v[g].act;
    while (any) {
        any = 0;
        for (int g = 0; g < DEEP_GREGS; g++)
            if (v[g].act) { /* (a register whose lanes are all done takes no steps) */
                gstep(&v[g], w, narrow, listed, started, 0, ncols, &nl, &next);
                any |= v[g].act;
            }
    }
    for (size_t i = 0; i < n; i++) {
        const uint32_t e = w->ldoc[i], d = narrow ? e & 0xFFF : e, slot = narrow ? e >> 12 : w->lslot[i];
        double leaf;
        memcpy(&leaf, w->sl + (size_t)slot * (narrow ? 8 : 16), sizeof leaf);
        out[d] += leaf;
    }
}

#define DEEP_GWALK(name, narrow, listed, started)                                                                 \
    static void name(const uint64_t *sl, const uint32_t *keys, uint32_t n_cols, size_t n, const uint32_t *docs,   \
                     const uint32_t *starts, double *out, uint32_t *ldoc, uint32_t *lslot, const char *pf,        \
                     const char *pf_end, uint32_t pf_lines) {                                                     \
        const gwalk_in w = {(const char *)sl, keys, docs, starts, n, ldoc, lslot};                                \
        gwalk(&w, narrow, listed, started, n_cols, out, pf, pf_end, pf_lines);                                    \
    }
DEEP_GWALK(gwalk_narrow_root, 1, 0, 0)
DEEP_GWALK(gwalk_narrow_started, 1, 0, 1)
DEEP_GWALK(gwalk_narrow_listed, 1, 1, 1)
DEEP_GWALK(gwalk_wide_root, 0, 0, 0)
DEEP_GWALK(gwalk_wide_started, 0, 0, 1)
DEEP_GWALK(gwalk_wide_listed, 0, 1, 1)
#undef DEEP_GWALK

/* The walk of one tree: the copy for its form and starts. */
static void walk_avx512(const uint64_t *sl, int narrow, const uint32_t *keys, uint32_t n_cols, size_t n,
                        const uint32_t *docs, const uint32_t *starts, double *out, uint32_t *ldoc, uint32_t *lslot,
                        const char *pf, const char *pf_end, uint32_t pf_lines) {
    const int form = (narrow ? 0 : 3) + (!starts ? 0 : !docs ? 1 : 2);
    static void (*const fn[6])(const uint64_t *, const uint32_t *, uint32_t, size_t, const uint32_t *,
                               const uint32_t *, double *, uint32_t *, uint32_t *, const char *, const char *,
                               uint32_t) = {gwalk_narrow_root, gwalk_narrow_started, gwalk_narrow_listed,
                                            gwalk_wide_root,   gwalk_wide_started,   gwalk_wide_listed};
    fn[form](sl, keys, n_cols, n, docs, starts, out, ldoc, lslot, pf, pf_end, pf_lines);
}

const deep_kernels tse_deep_avx512 = {TS_ISA_AVX512, top_avx512, walk_avx512};
