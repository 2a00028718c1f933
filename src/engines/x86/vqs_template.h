/* vqs_template.h: the vQS kernels, written once and instantiated per ISA by vqs_{sse42,avx2,avx512}.c. */
#include <math.h>
/*
 * No include guard: included once per ISA file, after it has defined
 *   VQS_LANES            documents per register
 *   VQS(name)            the ISA's name for a kernel function (name##_avx2, ...)
 *   vqs_vf, vqs_lm       a register of VQS_LANES floats, and a set of lanes
 * and these static inline primitives (lanes are documents of one group):
 *   vqs_vf vqs_load(const float *p)              VQS_LANES floats, aligned to their size
 *   vqs_lm vqs_split(vqs_vf v, int has_zero, vqs_lm *nan, vqs_lm *zero)
 *                                                lanes to scan (neither NaN nor |v| <= Z when
 *                                                has_zero), and the NaN and zero-range lanes
 *   vqs_lm vqs_gt(vqs_vf v, vqs_lm act, float t) lanes of act where v > t
 *   int    vqs_none(vqs_lm k)                    k is empty
 *   void   vqs_and32(uint32_t *bv, vqs_lm k, uint32_t m)   bv[l] &= m for l in k
 *   void   vqs_and64(uint64_t *bv, vqs_lm k, uint64_t m)   bv[l] &= m for l in k
 *   void   vqs_leaves32(const uint32_t *bv, const double *leaves, double *acc)
 *   void   vqs_leaves64(const uint64_t *bv, const double *leaves, double *acc)
 *                                                acc[l] += leaves[ctz(bv[l])] for all lanes
 *
 * The kernels are ordinary functions specialized by a constant argument (xxHash's
 * style): `kind` says how the bitvectors are laid out, and each of the three entry
 * points at the end passes its own constant, so that the compiler, inlining the
 * VQS_INLINE functions, keeps only that kind's code. Compiler messages and debugger
 * steps land on the lines below. The scan loops are the hot loops of vqs.
 */
#ifndef VQS_INLINE
#if defined(__GNUC__) || defined(__clang__)
#define VQS_INLINE static inline __attribute__((always_inline))
#else
#define VQS_INLINE static inline
#endif
#endif

/* Bitvector layouts: one 32-bit word per tree and lane (trees of <= 32 leaves), one
 * 64-bit word (33..64 leaves), or L->words 64-bit words (wider trees). */
enum { VQS_W32 = 0, VQS_W64 = 1, VQS_WN = 2 };

/* The layout's lists, copied into locals once per tree block (they live in registers
 * through the scan loops: stores to the bitvectors could alias anything in memory). */
typedef struct vqs_lists {
    const float *thr;            /* thresholds, ascending per feature, +inf sentinels */
    const uint16_t *word;        /* the entry's first word within its group */
    const uint16_t *span;        /* words the entry touches (VQS_WN) */
    const uint32_t *mask32;      /* VQS_W32 masks */
    const uint64_t *mask64;      /* VQS_W64 / VQS_WN first-word masks */
    const uint64_t *mask_last;   /* VQS_WN last-word masks */
} vqs_lists;

/* Transpose the block's rows [0, nd) into xt (see vqs.h). Padding lanes read -inf,
 * which passes no threshold (-inf > t is false for every t) and is neither NaN nor in
 * the zero range, so they add no work to the scans. */
static void VQS(transpose)(const qsl *L, const float *x, size_t stride, size_t nd, size_t ng, float *xt) {
    const uint32_t nu = L->n_used;
    for (size_t g = 0; g < ng; g++) {
        float *dst = xt + g * nu * VQS_LANES;
        for (size_t l = 0; l < VQS_LANES; l++) {
            size_t d = g * VQS_LANES + l;
            if (d >= nd) {
                for (uint32_t j = 0; j < nu; j++) dst[(size_t)j * VQS_LANES + l] = -INFINITY;
                continue;
            }
            const float *row = x + d * stride;
            for (uint32_t j = 0; j < nu; j++) dst[(size_t)j * VQS_LANES + l] = row[L->used[j]];
        }
    }
}

/* Apply list entry j to the lanes k of one group's bitvectors bg: AND the entry's mask
 * into its word (VQS_WN: the first word's mask, zeros in the middle words, the last
 * word's mask). */
VQS_INLINE void VQS(apply)(const int kind, const vqs_lists *ls, void *bg, uint32_t j, vqs_lm k) {
    if (kind == VQS_W32) {
        vqs_and32((uint32_t *)bg + (size_t)ls->word[j] * VQS_LANES, k, ls->mask32[j]);
    } else if (kind == VQS_W64) {
        vqs_and64((uint64_t *)bg + (size_t)ls->word[j] * VQS_LANES, k, ls->mask64[j]);
    } else {
        uint64_t *p = (uint64_t *)bg + (size_t)ls->word[j] * VQS_LANES;
        uint32_t n = ls->span[j];
        vqs_and64(p, k, ls->mask64[j]);
        if (n > 1) {
            if (__builtin_expect(n > 2, 0)) /* rare: an entry spanning three words or more */
                for (uint32_t w = 1; w + 1 < n; w++) vqs_and64(p + (size_t)w * VQS_LANES, k, 0);
            vqs_and64(p + (size_t)(n - 1) * VQS_LANES, k, ls->mask_last[j]);
        }
    }
}

/* Apply the lists of one feature (values v) to one group: the scan (four entries per
 * test of the last, as in qs; the +inf sentinels end it), then the NaN and zero-range
 * lanes' lists. */
VQS_INLINE void VQS(scan_feature)(const int kind, const vqs_lists *ls, const qsl_feature *qf, vqs_vf v, void *bg) {
    const float *thr = ls->thr;
    vqs_lm nan, zero;
    vqs_lm act = vqs_split(v, qf->has_zero, &nan, &zero);
    uint32_t i = qf->scan_begin;
    for (;;) {
        vqs_lm k3 = vqs_gt(v, act, thr[i + 3]);
        if (vqs_none(k3)) break;
        VQS(apply)(kind, ls, bg, i, vqs_gt(v, act, thr[i]));
        VQS(apply)(kind, ls, bg, i + 1, vqs_gt(v, act, thr[i + 1]));
        VQS(apply)(kind, ls, bg, i + 2, vqs_gt(v, act, thr[i + 2]));
        VQS(apply)(kind, ls, bg, i + 3, k3);
        i += 4;
    }
    for (;;) {
        vqs_lm k = vqs_gt(v, act, thr[i]);
        if (vqs_none(k)) break;
        VQS(apply)(kind, ls, bg, i, k);
        i++;
    }
    if (!vqs_none(nan))
        for (uint32_t j = qf->miss_begin; j < qf->miss_end; j++) VQS(apply)(kind, ls, bg, j, nan);
    if (qf->has_zero && !vqs_none(zero))
        for (uint32_t j = qf->zero_begin; j < qf->zero_end; j++) VQS(apply)(kind, ls, bg, j, zero);
}

/* Add the exit leaves of trees [0, n_trees) of group g (bitvectors bg) to its scores. */
VQS_INLINE void VQS(add_leaves)(const int kind, const qsl *L, const qsl_block *blk, const void *bg, double *a) {
    const uint32_t *off = L->leaf_offset + blk->first_tree;
    for (uint32_t t = 0; t < blk->n_trees; t++) {
        const double *leaves = L->leaves + off[t];
        if (kind == VQS_W32) {
            vqs_leaves32((const uint32_t *)bg + (size_t)t * VQS_LANES, leaves, a);
        } else if (kind == VQS_W64) {
            vqs_leaves64((const uint64_t *)bg + (size_t)t * VQS_LANES, leaves, a);
        } else { /* lane by lane */
            const uint64_t *b = (const uint64_t *)bg + (size_t)t * L->words * VQS_LANES;
            for (size_t l = 0; l < VQS_LANES; l++) {
                size_t w = 0;
                while (b[w * VQS_LANES + l] == 0) w++; /* the exit leaf's bit is always set */
                a[l] += leaves[w * 64 + (size_t)__builtin_ctzll(b[w * VQS_LANES + l])];
            }
        }
    }
}

/* One tree block for ng groups: reset the groups' bitvectors, scan every feature of
 * the block for every group, add the exit leaves. */
VQS_INLINE void VQS(block)(const int kind, const qsl *L, const qsl_block *blk, size_t ng, const float *xt,
                           double *acc, void *bv) {
    const vqs_lists ls = {L->threshold, L->word, L->span, L->mask32, L->mask64, L->mask_last};
    const size_t word_bytes = kind == VQS_W32 ? sizeof(uint32_t) : sizeof(uint64_t);
    const size_t words = kind == VQS_WN ? L->words : 1;
    const size_t group = (size_t)L->tau * words * VQS_LANES; /* words per group */
    char *base = bv;
    for (size_t g = 0; g < ng; g++)
        memset(base + g * group * word_bytes, 0xFF, (size_t)blk->n_trees * words * VQS_LANES * word_bytes);
    for (uint32_t f = 0; f < blk->n_features; f++) {
        const qsl_feature *qf = &blk->features[f];
        for (size_t g = 0; g < ng; g++) {
            vqs_vf v = vqs_load(xt + (g * L->n_used + qf->slot) * VQS_LANES);
            VQS(scan_feature)(kind, &ls, qf, v, base + g * group * word_bytes);
        }
    }
    for (size_t g = 0; g < ng; g++) VQS(add_leaves)(kind, L, blk, base + g * group * word_bytes, acc + g * VQS_LANES);
}

/* One tree block function per kind (separate functions, so that profiles tell them apart). */
static void VQS(block_w32)(const qsl *L, const qsl_block *blk, size_t ng, const float *xt, double *acc, void *bv) {
    VQS(block)(VQS_W32, L, blk, ng, xt, acc, bv);
}
static void VQS(block_w64)(const qsl *L, const qsl_block *blk, size_t ng, const float *xt, double *acc, void *bv) {
    VQS(block)(VQS_W64, L, blk, ng, xt, acc, bv);
}
static void VQS(block_wn)(const qsl *L, const qsl_block *blk, size_t ng, const float *xt, double *acc, void *bv) {
    VQS(block)(VQS_WN, L, blk, ng, xt, acc, bv);
}

/* The loop over document blocks: transpose, scores to base, each tree block's masks
 * and leaves, then the scores out. */
VQS_INLINE void VQS(document_blocks)(const int kind, const qsl *L, uint32_t delta, const float *x, size_t n_rows,
                                     size_t stride, double *out, void *scratch) {
    float *xt = scratch;
    double *acc = (double *)((char *)scratch + vqs_acc_offset(L, delta));
    void *bv = (char *)scratch + vqs_bv_offset(L, delta);
    for (size_t d0 = 0; d0 < n_rows; d0 += delta) {
        size_t nd = n_rows - d0 < delta ? n_rows - d0 : delta;
        size_t ng = (nd + VQS_LANES - 1) / VQS_LANES;
        VQS(transpose)(L, x + d0 * stride, stride, nd, ng, xt);
        for (size_t d = 0; d < ng * VQS_LANES; d++) acc[d] = L->base_score;
        for (uint32_t b = 0; b < L->n_blocks; b++) {
            if (kind == VQS_W32) VQS(block_w32)(L, &L->blocks[b], ng, xt, acc, bv);
            else if (kind == VQS_W64) VQS(block_w64)(L, &L->blocks[b], ng, xt, acc, bv);
            else VQS(block_wn)(L, &L->blocks[b], ng, xt, acc, bv);
        }
        for (size_t d = 0; d < nd; d++) out[d0 + d] = acc[d];
    }
}

static void VQS(w32)(const qsl *L, uint32_t delta, const float *x, size_t n_rows, size_t stride, double *out,
                     void *scratch) {
    VQS(document_blocks)(VQS_W32, L, delta, x, n_rows, stride, out, scratch);
}

static void VQS(w64)(const qsl *L, uint32_t delta, const float *x, size_t n_rows, size_t stride, double *out,
                     void *scratch) {
    VQS(document_blocks)(VQS_W64, L, delta, x, n_rows, stride, out, scratch);
}

static void VQS(wn)(const qsl *L, uint32_t delta, const float *x, size_t n_rows, size_t stride, double *out,
                    void *scratch) {
    VQS(document_blocks)(VQS_WN, L, delta, x, n_rows, stride, out, scratch);
}
