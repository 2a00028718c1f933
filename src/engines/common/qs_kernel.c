/* qs_kernel.c: the scalar QuickScorer kernel on the shared layout (qs_layout.h): one document at a time, 64-bit words; the qs engine's kernel and the vqs engine's fallback. */
#include <string.h>

#include "engines/common/qs_layout.h"

/*
 * The layout and its invariants are in qs_layout.h. This file scores it one document
 * at a time with 64-bit words: the qs engine's kernel, and the vqs engine's on CPUs
 * without SIMD and for batches too small for its registers (vqs scores several
 * documents per SIMD register otherwise). Moved out of qs.c so that vqs uses no file of
 * another engine.
 *
 * BlockWise-QS (paper 001, section 5): documents in blocks of delta, trees in blocks of
 * tau. For a block of documents, each tree block is applied to all of them, feature by
 * feature (a feature's list is then read once from memory for delta documents), and
 * its exit leaves are added to their scores before the next tree block. The scores
 * live in `out` meanwhile: each document's sum still runs over the trees in order.
 *
 * The scan: because thresholds ascend, v > thr[i+3] proves entries i..i+3 all false,
 * so the scan applies four masks per test, then finishes one by one (4 measured best:
 * 22% faster than one by one at 1,000 trees x 64 leaves; 8 was slower). The +inf
 * sentinels end every list, so no bounds check is needed.
 */

/* Rows worth a thread of their own: about 2^22 list entries of work (~1 ms). */
size_t qsl_rows_per_chunk(const qsl *L) { return (size_t)((1u << 22) / (L->n_nodes + 1) + 1); }

size_t qsl_scratch_bytes(const qsl *L, uint32_t delta) { return (size_t)delta * L->tau * L->words * sizeof(uint64_t); }

/* The kernels below are ordinary functions specialized by a constant argument (xxHash's
 * style): `kind` says how the bitvectors are laid out, each named block function passes
 * its own constant, and the compiler, inlining the QS_INLINE functions, keeps only that
 * kind's code. */
#if defined(__GNUC__) || defined(__clang__)
#define QS_INLINE static inline __attribute__((always_inline))
#else
#define QS_INLINE static inline
#endif

/* One 32-bit word per tree (vqs's layouts of trees of up to 32 leaves, when vqs scores a
 * batch too small for its registers), one 64-bit word, or L->words 64-bit words. */
enum { QS_W32 = 0, QS_W64 = 1, QS_WN = 2 };

/* The layout's lists, copied into locals once per tree block. */
typedef struct qs_lists {
    const float *thr;            /* thresholds, ascending per feature, +inf sentinels */
    const uint16_t *word;        /* the entry's first word within the document's bitvectors */
    const uint16_t *span;        /* words the entry touches (QS_WN) */
    const uint32_t *mask32;      /* QS_W32 masks */
    const uint64_t *mask64;      /* QS_W64 / QS_WN first-word masks */
    const uint64_t *mask_last;   /* QS_WN last-word masks (a no-op mask when span is 1) */
} qs_lists;

/* Apply list entry j to one document's bitvectors b: AND its mask into its word (QS_WN:
 * the first word's mask, the last word's mask, zeros in between). */
QS_INLINE void qs_apply(const int kind, const qs_lists *ls, void *b, uint32_t j) {
    if (kind == QS_W32) {
        ((uint32_t *)b)[ls->word[j]] &= ls->mask32[j];
    } else if (kind == QS_W64) {
        ((uint64_t *)b)[ls->word[j]] &= ls->mask64[j];
    } else {
        uint64_t *p = (uint64_t *)b + ls->word[j];
        uint32_t n = ls->span[j];
        p[0] &= ls->mask64[j];
        p[n - 1] &= ls->mask_last[j];
        if (__builtin_expect(n > 2, 0)) /* rare: an entry spanning three words or more */
            for (uint32_t k = 1; k + 1 < n; k++) p[k] = 0;
    }
}

/* The scan of one feature for one document (the hot loop): apply the false nodes of its
 * value. NaN and zero-range values take their precomputed lists. */
QS_INLINE void qs_scan_feature(const int kind, const qs_lists *ls, const qsl_feature *qf, const float *row, void *b) {
    const float *thr = ls->thr;
    float v = row[qf->feature];
    uint32_t i, end;
    if (v != v) {
        i = qf->miss_begin;
        end = qf->miss_end;
    } else if (qf->has_zero && v >= -TSM_ZERO_RANGE && v <= TSM_ZERO_RANGE) {
        i = qf->zero_begin;
        end = qf->zero_end;
    } else {
        /* Thresholds ascend: if v passes thr[i+3], entries i..i+3 are all false. */
        for (i = qf->scan_begin; v > thr[i + 3]; i += 4) {
            qs_apply(kind, ls, b, i);
            qs_apply(kind, ls, b, i + 1);
            qs_apply(kind, ls, b, i + 2);
            qs_apply(kind, ls, b, i + 3);
        }
        for (; v > thr[i]; i++) qs_apply(kind, ls, b, i);
        return;
    }
    for (; i < end; i++) qs_apply(kind, ls, b, i);
}

/* Documents [0, nd) of a document block through one tree block; document d's
 * bitvectors at bv + d * tau * words (words of the kind's size). */
QS_INLINE void qs_mask_block(const int kind, const qsl *L, const qsl_block *blk, const float *x, size_t stride,
                             size_t nd, void *bv) {
    const qs_lists ls = {L->threshold, L->word, L->span, L->mask32, L->mask64, L->mask_last};
    const size_t word_bytes = kind == QS_W32 ? sizeof(uint32_t) : sizeof(uint64_t);
    const size_t words = kind == QS_WN ? L->words : 1;
    const size_t per_doc = (size_t)L->tau * words * word_bytes; /* bytes */
    char *base = bv;
    for (size_t d = 0; d < nd; d++) memset(base + d * per_doc, 0xFF, (size_t)blk->n_trees * words * word_bytes);
    for (uint32_t f = 0; f < blk->n_features; f++) {
        const qsl_feature *qf = &blk->features[f];
        for (size_t d = 0; d < nd; d++) qs_scan_feature(kind, &ls, qf, x + d * stride, base + d * per_doc);
    }
}

static inline uint32_t exit_leaf(const uint64_t *bv) {
    uint32_t w = 0;
    while (bv[w] == 0) w++; /* never runs past: the exit leaf's bit is always set */
    return w * 64 + (uint32_t)__builtin_ctzll(bv[w]);
}

/* Add the block's exit leaves to the documents' scores, trees in order. */
QS_INLINE void qs_add_leaves(const int kind, const qsl *L, const qsl_block *blk, size_t nd, const void *bv,
                             double *out) {
    const uint32_t *off = L->leaf_offset + blk->first_tree;
    const size_t words = kind == QS_WN ? L->words : 1;
    const size_t per_doc = (size_t)L->tau * words;
    for (size_t d = 0; d < nd; d++) {
        double score = out[d];
        for (uint32_t t = 0; t < blk->n_trees; t++) {
            uint32_t leaf;
            if (kind == QS_W32)
                leaf = (uint32_t)__builtin_ctz(((const uint32_t *)bv)[d * per_doc + t]);
            else if (kind == QS_W64)
                leaf = (uint32_t)__builtin_ctzll(((const uint64_t *)bv)[d * per_doc + t]);
            else
                leaf = exit_leaf((const uint64_t *)bv + d * per_doc + (size_t)t * words);
            score += L->leaves[off[t] + leaf];
        }
        out[d] = score;
    }
}

/* One function per kind for each step (so that profiles tell them apart). */
static void mask_block_w32(const qsl *L, const qsl_block *blk, const float *x, size_t stride, size_t nd, void *bv) {
    qs_mask_block(QS_W32, L, blk, x, stride, nd, bv);
}
static void mask_block_1w(const qsl *L, const qsl_block *blk, const float *x, size_t stride, size_t nd, void *bv) {
    qs_mask_block(QS_W64, L, blk, x, stride, nd, bv);
}
static void mask_block_nw(const qsl *L, const qsl_block *blk, const float *x, size_t stride, size_t nd, void *bv) {
    qs_mask_block(QS_WN, L, blk, x, stride, nd, bv);
}
static void add_block_leaves_w32(const qsl *L, const qsl_block *blk, size_t nd, const void *bv, double *out) {
    qs_add_leaves(QS_W32, L, blk, nd, bv, out);
}
static void add_block_leaves_1w(const qsl *L, const qsl_block *blk, size_t nd, const void *bv, double *out) {
    qs_add_leaves(QS_W64, L, blk, nd, bv, out);
}
static void add_block_leaves_nw(const qsl *L, const qsl_block *blk, size_t nd, const void *bv, double *out) {
    qs_add_leaves(QS_WN, L, blk, nd, bv, out);
}

void qsl_score(const qsl *L, uint32_t delta, const float *x, size_t n_rows, size_t stride, double *out,
                     uint64_t *bv) {
    for (size_t d0 = 0; d0 < n_rows; d0 += delta) {
        size_t nd = n_rows - d0 < delta ? n_rows - d0 : delta;
        const float *xb = x + d0 * stride;
        for (size_t d = 0; d < nd; d++) out[d0 + d] = L->base_score;
        for (uint32_t b = 0; b < L->n_blocks; b++) {
            const qsl_block *blk = &L->blocks[b];
            if (L->word_bits == 32) {
                mask_block_w32(L, blk, xb, stride, nd, bv);
                add_block_leaves_w32(L, blk, nd, bv, out + d0);
                continue;
            }
            if (L->words == 1) {
                mask_block_1w(L, blk, xb, stride, nd, bv);
                add_block_leaves_1w(L, blk, nd, bv, out + d0);
            } else {
                mask_block_nw(L, blk, xb, stride, nd, bv);
                add_block_leaves_nw(L, blk, nd, bv, out + d0);
            }
        }
    }
}

/* One document's exit-leaf values of a block's trees, in tree order, into vals. */
QS_INLINE void qs_leaf_values(const int kind, const qsl *L, const qsl_block *blk, const void *bv, double *vals) {
    const uint32_t *off = L->leaf_offset + blk->first_tree;
    const size_t words = kind == QS_WN ? L->words : 1;
    for (uint32_t t = 0; t < blk->n_trees; t++) {
        uint32_t leaf;
        if (kind == QS_W32)
            leaf = (uint32_t)__builtin_ctz(((const uint32_t *)bv)[t]);
        else if (kind == QS_W64)
            leaf = (uint32_t)__builtin_ctzll(((const uint64_t *)bv)[t]);
        else
            leaf = exit_leaf((const uint64_t *)bv + (size_t)t * words);
        vals[t] = L->leaves[off[t] + leaf];
    }
}

uint32_t qsl_group_first(const qsl *L, uint32_t g) {
    return g < L->n_blocks ? L->blocks[g].first_tree : L->n_trees;
}

void qsl_tree_values(const qsl *L, const float *x, uint32_t b0, uint32_t b1, double *vals, void *bv) {
    for (uint32_t b = b0; b < b1 && b < L->n_blocks; b++) {
        const qsl_block *blk = &L->blocks[b];
        double *v = vals + (blk->first_tree - L->blocks[b0].first_tree);
        if (L->word_bits == 32) {
            mask_block_w32(L, blk, x, 0, 1, bv);
            qs_leaf_values(QS_W32, L, blk, bv, v);
        } else if (L->words == 1) {
            mask_block_1w(L, blk, x, 0, 1, bv);
            qs_leaf_values(QS_W64, L, blk, bv, v);
        } else {
            mask_block_nw(L, blk, x, 0, 1, bv);
            qs_leaf_values(QS_WN, L, blk, bv, v);
        }
    }
}

/* tree_values of qs and vqs: their states start with the layout. */
uint32_t qsl_hook_tree_groups(const void *state) { return ((const qsl *)state)->n_blocks; }
uint32_t qsl_hook_tree_group_first(const void *state, uint32_t g) { return qsl_group_first(state, g); }
void qsl_hook_tree_values(const void *state, const float *x, uint32_t g0, uint32_t g1, double *vals, void *scratch) {
    qsl_tree_values(state, x, g0, g1, vals, scratch);
}
