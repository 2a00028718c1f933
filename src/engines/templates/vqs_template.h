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
 * The loops below are the hot loops of vqs: long on purpose.
 */

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

/* Apply the lists of one feature to one group: the scan (four entries per test of the
 * last, as in qs; the +inf sentinels end it), then the NaN and zero-range lanes' lists.
 * APPLY(j, k) applies entry j to the lanes k. */
#define VQS_SCAN_FEATURE(APPLY)                                                             \
    do {                                                                                    \
        vqs_lm nan, zero;                                                                   \
        vqs_lm act = vqs_split(v, qf->has_zero, &nan, &zero);                               \
        uint32_t i = qf->scan_begin;                                                        \
        for (;;) {                                                                          \
            vqs_lm k3 = vqs_gt(v, act, thr[i + 3]);                                         \
            if (vqs_none(k3)) break;                                                        \
            APPLY(i, vqs_gt(v, act, thr[i]));                                               \
            APPLY(i + 1, vqs_gt(v, act, thr[i + 1]));                                       \
            APPLY(i + 2, vqs_gt(v, act, thr[i + 2]));                                       \
            APPLY(i + 3, k3);                                                               \
            i += 4;                                                                         \
        }                                                                                   \
        for (;;) {                                                                          \
            vqs_lm k = vqs_gt(v, act, thr[i]);                                              \
            if (vqs_none(k)) break;                                                         \
            APPLY(i, k);                                                                    \
            i++;                                                                            \
        }                                                                                   \
        if (!vqs_none(nan))                                                                 \
            for (uint32_t j = qf->miss_begin; j < qf->miss_end; j++) APPLY(j, nan);         \
        if (qf->has_zero && !vqs_none(zero))                                                \
            for (uint32_t j = qf->zero_begin; j < qf->zero_end; j++) APPLY(j, zero);        \
    } while (0)

/* The loop over document blocks shared by the three kernels: transpose, scores to
 * base, each tree block's masks and leaves (MASK_AND_ADD(blk, ng, xt, acc, bv)), then
 * the scores out. */
#define VQS_DOCUMENT_BLOCKS(MASK_AND_ADD)                                                   \
    do {                                                                                    \
        float *xt = scratch;                                                                \
        double *acc = (double *)((char *)scratch + vqs_acc_offset(L, delta));               \
        void *bv = (char *)scratch + vqs_bv_offset(L, delta);                               \
        for (size_t d0 = 0; d0 < n_rows; d0 += delta) {                                     \
            size_t nd = n_rows - d0 < delta ? n_rows - d0 : delta;                          \
            size_t ng = (nd + VQS_LANES - 1) / VQS_LANES;                                   \
            VQS(transpose)(L, x + d0 * stride, stride, nd, ng, xt);                         \
            for (size_t d = 0; d < ng * VQS_LANES; d++) acc[d] = L->base_score;             \
            for (uint32_t b = 0; b < L->n_blocks; b++) MASK_AND_ADD(&L->blocks[b], ng, xt, acc, bv); \
            for (size_t d = 0; d < nd; d++) out[d0 + d] = acc[d];                           \
        }                                                                                   \
    } while (0)

/* One word per tree and lane (word_bits 32: WORD_T uint32_t, MASK mask32, LEAVES
 * vqs_leaves32, and VQS_AND_1W defined as vqs_and32; word_bits 64 with the 64-bit
 * ones): reset the groups' bitvectors, scan every feature of the block for every
 * group, add the exit leaves. */
#define VQS_BLOCK_1W(NAME, WORD_T, MASK, LEAVES)                                       \
    static void VQS(NAME)(const qsl *L, const qsl_block *blk, size_t ng, const float *xt, double *acc, \
                          WORD_T *bv) {                                                     \
        const float *thr = L->threshold;                                                    \
        const uint16_t *word = L->word;                                                     \
        const WORD_T *mask = L->MASK;                                                       \
        const size_t group = (size_t)L->tau * VQS_LANES; /* words per group */              \
        for (size_t g = 0; g < ng; g++)                                                     \
            memset(bv + g * group, 0xFF, (size_t)blk->n_trees * VQS_LANES * sizeof *bv);    \
        for (uint32_t f = 0; f < blk->n_features; f++) {                                    \
            const qsl_feature *qf = &blk->features[f];                                      \
            for (size_t g = 0; g < ng; g++) {                                               \
                vqs_vf v = vqs_load(xt + (g * L->n_used + qf->slot) * VQS_LANES);           \
                WORD_T *bg = bv + g * group;                                                \
                VQS_SCAN_FEATURE(VQS_APPLY_1W);                                             \
            }                                                                               \
        }                                                                                   \
        const uint32_t *off = L->leaf_offset + blk->first_tree;                             \
        for (size_t g = 0; g < ng; g++)                                                     \
            for (uint32_t t = 0; t < blk->n_trees; t++)                                     \
                LEAVES(bv + g * group + (size_t)t * VQS_LANES, L->leaves + off[t], acc + g * VQS_LANES); \
    }
#define VQS_APPLY_1W(j, k) VQS_AND_1W(bg + (size_t)word[j] * VQS_LANES, (k), mask[j])

#define VQS_AND_1W vqs_and32
VQS_BLOCK_1W(block_w32, uint32_t, mask32, vqs_leaves32)
#undef VQS_AND_1W
#define VQS_AND_1W vqs_and64
VQS_BLOCK_1W(block_w64, uint64_t, mask64, vqs_leaves64)
#undef VQS_AND_1W
#undef VQS_APPLY_1W
#undef VQS_BLOCK_1W

/* word_bits 64, W > 1 words per tree: the first word's AND, zeros in the middle words,
 * the last word's AND; exit leaves found lane by lane. */
static void VQS(block_wn)(const qsl *L, const qsl_block *blk, size_t ng, const float *xt, double *acc,
                          uint64_t *bv) {
    const float *thr = L->threshold;
    const uint16_t *word = L->word, *span = L->span;
    const uint64_t *mask = L->mask64, *mask_last = L->mask_last;
    const size_t W = L->words, group = (size_t)L->tau * W * VQS_LANES;
    for (size_t g = 0; g < ng; g++) memset(bv + g * group, 0xFF, (size_t)blk->n_trees * W * VQS_LANES * sizeof *bv);
    for (uint32_t f = 0; f < blk->n_features; f++) {
        const qsl_feature *qf = &blk->features[f];
        for (size_t g = 0; g < ng; g++) {
            vqs_vf v = vqs_load(xt + (g * L->n_used + qf->slot) * VQS_LANES);
            uint64_t *bg = bv + g * group;
#define APPLY_WN(j, k)                                                                      \
    do {                                                                                    \
        uint64_t *p = bg + (size_t)word[j] * VQS_LANES;                                     \
        vqs_lm kk = (k);                                                                    \
        uint32_t n = span[j];                                                               \
        vqs_and64(p, kk, mask[j]);                                                          \
        if (n > 1) {                                                                        \
            for (uint32_t w = 1; w + 1 < n; w++) vqs_and64(p + (size_t)w * VQS_LANES, kk, 0); \
            vqs_and64(p + (size_t)(n - 1) * VQS_LANES, kk, mask_last[j]);                   \
        }                                                                                   \
    } while (0)
            VQS_SCAN_FEATURE(APPLY_WN);
#undef APPLY_WN
        }
    }
    const uint32_t *off = L->leaf_offset + blk->first_tree;
    for (size_t g = 0; g < ng; g++)
        for (uint32_t t = 0; t < blk->n_trees; t++) {
            const uint64_t *b = bv + g * group + (size_t)t * W * VQS_LANES;
            const double *leaves = L->leaves + off[t];
            double *a = acc + g * VQS_LANES;
            for (size_t l = 0; l < VQS_LANES; l++) {
                size_t w = 0;
                while (b[w * VQS_LANES + l] == 0) w++; /* the exit leaf's bit is always set */
                a[l] += leaves[w * 64 + (size_t)__builtin_ctzll(b[w * VQS_LANES + l])];
            }
        }
}

static void VQS(w32)(const qsl *L, uint32_t delta, const float *x, size_t n_rows, size_t stride, double *out,
                     void *scratch) {
#define MASK_AND_ADD_W32(blk, ng, xt, acc, bv) VQS(block_w32)(L, blk, ng, xt, acc, (uint32_t *)(bv))
    VQS_DOCUMENT_BLOCKS(MASK_AND_ADD_W32);
#undef MASK_AND_ADD_W32
}

static void VQS(w64)(const qsl *L, uint32_t delta, const float *x, size_t n_rows, size_t stride, double *out,
                     void *scratch) {
#define MASK_AND_ADD_W64(blk, ng, xt, acc, bv) VQS(block_w64)(L, blk, ng, xt, acc, (uint64_t *)(bv))
    VQS_DOCUMENT_BLOCKS(MASK_AND_ADD_W64);
#undef MASK_AND_ADD_W64
}

static void VQS(wn)(const qsl *L, uint32_t delta, const float *x, size_t n_rows, size_t stride, double *out,
                    void *scratch) {
#define MASK_AND_ADD_WN(blk, ng, xt, acc, bv) VQS(block_wn)(L, blk, ng, xt, acc, (uint64_t *)(bv))
    VQS_DOCUMENT_BLOCKS(MASK_AND_ADD_WN);
#undef MASK_AND_ADD_WN
}

#undef VQS_SCAN_FEATURE
#undef VQS_DOCUMENT_BLOCKS
