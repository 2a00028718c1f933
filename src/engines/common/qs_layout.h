/* qs_layout.h: the QuickScorer data layout (per tree block: per-feature sorted threshold lists with leaf masks), shared by qs and vqs. */
#ifndef TS_ENGINES_QS_LAYOUT_H
#define TS_ENGINES_QS_LAYOUT_H

#include <stdint.h>

#include "engines/engine.h"

/*
 * The layout (paper 001, Algorithm 1 and section 3; BlockWise-QS in section 5)
 * ---------------------------------------------------------------------------
 * Each tree keeps a bitvector with one bit per leaf, leaf i at bit i (leaves numbered
 * left to right, as the IR guarantees), all ones at the start of a document. A "false
 * node" is one whose test sends the document right; ANDing the tree's bitvector with
 * the node's mask clears the leaves of its left subtree. After all false nodes of all
 * trees are applied, the exit leaf of each tree is its lowest set bit (the paper's
 * "leftmost" leaf; Theorem 1). The false nodes are found without visiting trees: for
 * each feature, the nodes testing it are sorted by threshold ascending, and for a value
 * v exactly the prefix with threshold < v is false (v > t means "not v <= t").
 *
 * Missing values: a NaN stops the scan at once (NaN > t is false), so the nodes that
 * must send NaN right are kept in a per-feature "missing" list applied instead of the
 * scan. Features with LightGBM "Zero" nodes also get a "zero" list: the nodes that send
 * any value of [-Z, Z] right; tsm_model_finish guarantees no threshold splits that range
 * there, so every value of it takes the same path as 0.0f.
 *
 * Words: a bitvector is `words` words of `word_bits` (32 or 64) bits. 32-bit words are
 * used only when every tree has at most 32 leaves (then words == 1): vqs packs twice as
 * many documents per register. Trees wider than 64 leaves take W = ceil(leaves / 64)
 * 64-bit words. An entry names the first word its node touches (tree * W + word, within
 * the block) and the AND mask for that word. The left subtree's leaves are contiguous,
 * so with W > 1 a node may also clear following words: `span` words in all, the middle
 * ones entirely, the last with `mask_last`.
 *
 * Sentinels: every feature's scan list ends with QSL_SENTINELS entries of threshold
 * +inf, which no value passes (v > +inf is false for every v, NaN included), so hot
 * loops need no bounds check; their word is 0 and their mask all ones (harmless if
 * ever applied).
 *
 * Tree blocks (BlockWise-QS): consecutive trees in blocks of `tau` (the last may be
 * shorter), each block with its own sorted lists, so that one block's lists and the
 * bitvectors of a few documents stay in cache while those documents are scored. Word
 * indices are 16-bit, so tau * W <= QSL_MAX_BLOCK_WORDS. Scores are added per block in
 * tree order, so every block size gives the reference's sum, bit for bit.
 */

#define QSL_SENTINELS 4
#define QSL_MAX_BLOCK_WORDS 65536u
#define QSL_MAX_WORDS 4096u /* one tree: 262,144 leaves */
#define QSL_MAX_DELTA 4096u /* documents per block: larger values are lowered to it */

typedef struct qsl_feature {
    uint32_t feature;               /* column read */
    uint32_t slot;                  /* its index in qsl.used (vqs's transposed rows) */
    uint32_t scan_begin, scan_end;  /* entries with thresholds ascending, then the sentinels */
    uint32_t miss_begin, miss_end;  /* entries applied when the value is NaN */
    uint32_t zero_begin, zero_end;  /* entries applied when |value| <= Z (has_zero only) */
    uint32_t has_zero;
} qsl_feature;

typedef struct qsl_block {
    uint32_t first_tree, n_trees;
    uint32_t n_features;
    const qsl_feature *features;    /* into qsl.features, ascending columns */
} qsl_block;

typedef struct qsl {
    double base_score;
    uint32_t n_trees;
    uint32_t word_bits;             /* 32 or 64 */
    uint32_t words;                 /* words per tree bitvector (1 when word_bits is 32) */
    uint32_t tau;                   /* trees per block */
    uint32_t n_blocks;
    qsl_block *blocks;
    qsl_feature *features;          /* all blocks' features */
    uint32_t n_used;                /* columns any split reads */
    uint32_t *used;                 /* ... ascending */
    uint64_t n_nodes;               /* internal nodes of all trees */
    /* Entries of all lists, struct-of-arrays (the paper's layout): */
    float *threshold;
    uint16_t *word;                 /* first word touched, in the block: tree * words + w */
    uint32_t *mask32;               /* word_bits 32: AND mask */
    uint64_t *mask64;               /* word_bits 64: AND mask of the first word */
    uint16_t *span;                 /* words > 1: words touched (>= 1) */
    uint64_t *mask_last;            /* words > 1: AND mask of the last word (all ones if span 1) */
    double *leaves;                 /* weight * leaf value, per tree at leaf_offset[t] */
    uint32_t *leaf_offset;
} qsl;

/* Words of the widest tree for word_bits 64, or 0 if it exceeds QSL_MAX_WORDS. */
uint32_t qsl_words64(const ts_model *m);
/* Build the layout of m in blocks of tau trees (1 <= tau; lowered to fit 16-bit word
 * indices) with word_bits 32 (every tree <= 32 leaves) or 64. */
ts_status qsl_build(qsl *L, const ts_model *m, uint32_t tau, uint32_t word_bits, ts_error *err);
void qsl_free(qsl *L);

/* How an engine wants its blocks sized (qsl_block_sizes). */
typedef struct qsl_sizing {
    size_t entry_bytes;         /* bytes of one list entry (threshold, word, mask) */
    size_t bv_bytes_per_tree;   /* bytes of one document's bitvector of one tree */
    uint32_t lanes;             /* documents scored together; delta is a multiple */
    uint32_t default_delta;     /* documents per block when not given */
    int bits_in_l1;             /* 1: the bitvectors of one group of `lanes` documents
                                   fill bits_share of L1; 0: those of all delta
                                   documents fill bits_share of L2 */
    double bits_share;
} qsl_sizing;

/* Block sizes tau (trees) and delta (documents): a non-zero cfg->tau / cfg->delta is
 * kept (TS_BLOCK_ALL = all trees; delta at most QSL_MAX_DELTA, rounded up to whole
 * lanes), else derived from the cache sizes: a block's lists (entries and leaf values)
 * fill at most half of L2, and its bitvectors the share z asks for. */
void qsl_block_sizes(const ts_model *m, const tse_config *cfg, const qsl_sizing *z, uint32_t *tau,
                     uint32_t *delta);

/* The scalar kernel (qs_kernel.c): the qs engine's, and the vqs engine's without SIMD and
 * for small batches. Score rows with a layout (32- or 64-bit words), delta documents per
 * block; bv is scratch of qsl_scratch_bytes(L, delta) bytes. */
void qsl_score(const qsl *L, uint32_t delta, const float *x, size_t n_rows, size_t stride, double *out,
               uint64_t *bv);
size_t qsl_scratch_bytes(const qsl *L, uint32_t delta);
/* Rows worth a thread of their own for this layout. */
size_t qsl_rows_per_chunk(const qsl *L);
/* tree_values over the layout's tree blocks (the groups): one document's exit-leaf
 * values of blocks [b0, b1), bv of qsl_scratch_bytes(L, 1) bytes at least. The engine
 * hooks (qsl_hook_*) take a state whose first member is its qsl (qs's and vqs's). */
uint32_t qsl_group_first(const qsl *L, uint32_t g);
void qsl_tree_values(const qsl *L, const float *x, uint32_t b0, uint32_t b1, double *vals, void *bv);
uint32_t qsl_hook_tree_groups(const void *state);
uint32_t qsl_hook_tree_group_first(const void *state, uint32_t g);
void qsl_hook_tree_values(const void *state, const float *x, uint32_t g0, uint32_t g1, double *vals, void *scratch);

#endif /* TS_ENGINES_QS_LAYOUT_H */
