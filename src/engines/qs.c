/* qs.c: QuickScorer (Lucchese et al., SIGIR 2015) and its BlockWise variant: the scalar kernel, one document at a time. */
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "engines/qs.h"

/*
 * The layout and its invariants are in qs_layout.h. This file scores it one document
 * at a time with 64-bit words (the vqs engine scores several per SIMD register, and
 * falls back to this kernel on CPUs without SIMD).
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

typedef struct qs_state {
    qsl L;
    uint32_t delta;
} qs_state;

static void qs_free(void *p) {
    qs_state *s = p;
    if (!s) return;
    qsl_free(&s->L);
    free(s);
}

/* Rows worth a thread of their own: about 2^22 list entries of work (~1 ms). */
size_t qs_rows_per_chunk(const qsl *L) { return (size_t)((1u << 22) / (L->n_nodes + 1) + 1); }

static ts_status qs_prepare(const ts_model *m, const tse_config *cfg, void **out, tse_layout *layout, ts_error *err) {
    qs_state *s = calloc(1, sizeof *s);
    if (!s) return ts_fail(err, TS_ERR_NO_MEMORY, "qs: out of memory");
    uint32_t words = qsl_words64(m), tau, delta;
    if (words == 0) words = 1; /* qsl_build reports the error */
    /* Measured on this project's 10,000 and 20,000 x 64-leaf models (docs/benchmarks.md):
     * blocks whose lists fill about half of L2, and 32 documents whose bitvectors fill
     * at most a quarter of it, are 1.4-1.5x faster than one block of all trees, one
     * document at a time; the optimum is flat from 500 to 2,000 trees, 16 to 64 docs. */
    const qsl_sizing z = {4 + 2 + 8, (size_t)words * 8, 1, 32, 0, 0.25};
    qsl_block_sizes(m, cfg, &z, &tau, &delta);
    ts_status st = qsl_build(&s->L, m, tau, 64, err);
    if (st != TS_OK) {
        free(s);
        return st;
    }
    s->delta = delta;
    *layout = (tse_layout){TS_ISA_SCALAR, s->L.tau, delta, qs_scratch_bytes(&s->L, delta),
                           qs_rows_per_chunk(&s->L), 0};
    *out = s;
    return TS_OK;
}

size_t qs_scratch_bytes(const qsl *L, uint32_t delta) { return (size_t)delta * L->tau * L->words * sizeof(uint64_t); }

/* The scan of one feature for one document (hot loop, long on purpose): apply the false
 * nodes of value v. APPLY(j) applies entry j. NaN and zero-range values take their
 * precomputed lists. */
#define QS_SCAN_FEATURE(APPLY)                                                              \
    do {                                                                                    \
        float v = row[qf->feature];                                                         \
        uint32_t i, end;                                                                    \
        if (v != v) {                                                                       \
            i = qf->miss_begin;                                                             \
            end = qf->miss_end;                                                             \
        } else if (qf->has_zero && v >= -TSM_ZERO_RANGE && v <= TSM_ZERO_RANGE) {           \
            i = qf->zero_begin;                                                             \
            end = qf->zero_end;                                                             \
        } else {                                                                            \
            /* Thresholds ascend: if v passes thr[i+3], entries i..i+3 are all false. */    \
            for (i = qf->scan_begin; v > thr[i + 3]; i += 4) {                              \
                APPLY(i);                                                                   \
                APPLY(i + 1);                                                               \
                APPLY(i + 2);                                                               \
                APPLY(i + 3);                                                               \
            }                                                                               \
            for (; v > thr[i]; i++) APPLY(i);                                               \
            break;                                                                          \
        }                                                                                   \
        for (; i < end; i++) APPLY(i);                                                      \
    } while (0)

/* Documents [0, nd) of a document block through one tree block, one word per tree
 * (WORD_T uint64_t with mask64, or uint32_t with mask32 for vqs's layouts of trees of
 * up to 32 leaves, when vqs scores a batch too small for its registers); document d's
 * bitvectors at bv + d * tau. Then the exit leaves are added to the scores. */
#define QS_BLOCK_1W(MASK_NAME, LEAVES_NAME, WORD_T, MASK, CTZ)                              \
    static void MASK_NAME(const qsl *L, const qsl_block *blk, const float *x, size_t stride, size_t nd, \
                          WORD_T *bv) {                                                     \
        const float *thr = L->threshold;                                                    \
        const uint16_t *word = L->word;                                                     \
        const WORD_T *mask = L->MASK;                                                       \
        for (size_t d = 0; d < nd; d++) memset(bv + d * L->tau, 0xFF, (size_t)blk->n_trees * sizeof *bv); \
        for (uint32_t f = 0; f < blk->n_features; f++) {                                    \
            const qsl_feature *qf = &blk->features[f];                                      \
            for (size_t d = 0; d < nd; d++) {                                               \
                const float *row = x + d * stride;                                          \
                WORD_T *b = bv + d * L->tau;                                                \
                QS_SCAN_FEATURE(QS_APPLY_1W);                                               \
            }                                                                               \
        }                                                                                   \
    }                                                                                       \
    static void LEAVES_NAME(const qsl *L, const qsl_block *blk, size_t nd, const WORD_T *bv, double *out) { \
        const uint32_t *off = L->leaf_offset + blk->first_tree;                             \
        for (size_t d = 0; d < nd; d++) {                                                   \
            const WORD_T *b = bv + d * L->tau;                                              \
            double score = out[d];                                                          \
            for (uint32_t t = 0; t < blk->n_trees; t++) score += L->leaves[off[t] + (uint32_t)CTZ(b[t])]; \
            out[d] = score;                                                                 \
        }                                                                                   \
    }
#define QS_APPLY_1W(j) (b[word[j]] &= mask[j])
QS_BLOCK_1W(mask_block_1w, add_block_leaves_1w, uint64_t, mask64, __builtin_ctzll)
QS_BLOCK_1W(mask_block_w32, add_block_leaves_w32, uint32_t, mask32, __builtin_ctz)
#undef QS_APPLY_1W
#undef QS_BLOCK_1W

/* The same with W > 1 words per tree: the first word's AND, the last word's AND (a
 * no-op mask when span is 1), and zeros in between. */
static void mask_block_nw(const qsl *L, const qsl_block *blk, const float *x, size_t stride, size_t nd,
                          uint64_t *bv) {
    const float *thr = L->threshold;
    const uint16_t *word = L->word, *span = L->span;
    const uint64_t *mask = L->mask64, *mask_last = L->mask_last;
    const size_t per_doc = (size_t)L->tau * L->words;
    for (size_t d = 0; d < nd; d++) memset(bv + d * per_doc, 0xFF, (size_t)blk->n_trees * L->words * sizeof *bv);
    for (uint32_t f = 0; f < blk->n_features; f++) {
        const qsl_feature *qf = &blk->features[f];
        for (size_t d = 0; d < nd; d++) {
            const float *row = x + d * stride;
            uint64_t *b = bv + d * per_doc;
#define APPLY_NW(j)                                                                         \
    do {                                                                                    \
        uint64_t *p = b + word[j];                                                          \
        uint32_t n = span[j];                                                               \
        p[0] &= mask[j];                                                                    \
        p[n - 1] &= mask_last[j];                                                           \
        for (uint32_t k = 1; k + 1 < n; k++) p[k] = 0;                                      \
    } while (0)
            QS_SCAN_FEATURE(APPLY_NW);
#undef APPLY_NW
        }
    }
}

static inline uint32_t exit_leaf(const uint64_t *bv) {
    uint32_t w = 0;
    while (bv[w] == 0) w++; /* never runs past: the exit leaf's bit is always set */
    return w * 64 + (uint32_t)__builtin_ctzll(bv[w]);
}

/* Add the block's exit leaves to the documents' scores, trees in order (W > 1). */
static void add_block_leaves_nw(const qsl *L, const qsl_block *blk, size_t nd, const uint64_t *bv, double *out) {
    const uint32_t *off = L->leaf_offset + blk->first_tree;
    const size_t per_doc = (size_t)L->tau * L->words;
    for (size_t d = 0; d < nd; d++) {
        const uint64_t *b = bv + d * per_doc;
        double score = out[d];
        for (uint32_t t = 0; t < blk->n_trees; t++) score += L->leaves[off[t] + exit_leaf(b + (size_t)t * L->words)];
        out[d] = score;
    }
}

void qs_score_layout(const qsl *L, uint32_t delta, const float *x, size_t n_rows, size_t stride, double *out,
                     uint64_t *bv) {
    for (size_t d0 = 0; d0 < n_rows; d0 += delta) {
        size_t nd = n_rows - d0 < delta ? n_rows - d0 : delta;
        const float *xb = x + d0 * stride;
        for (size_t d = 0; d < nd; d++) out[d0 + d] = L->base_score;
        for (uint32_t b = 0; b < L->n_blocks; b++) {
            const qsl_block *blk = &L->blocks[b];
            if (L->word_bits == 32) {
                mask_block_w32(L, blk, xb, stride, nd, (uint32_t *)bv);
                add_block_leaves_w32(L, blk, nd, (const uint32_t *)bv, out + d0);
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

static void qs_score(const void *p, const float *x, size_t n_rows, size_t stride, double *out, void *scratch) {
    const qs_state *s = p;
    qs_score_layout(&s->L, s->delta, x, n_rows, stride, out, scratch);
}

const tse_engine tse_engine_qs = {TS_ENGINE_QS, "qs", qs_prepare, qs_score, qs_free};
