/* qs.c: QuickScorer (Lucchese et al., SIGIR 2015): feature-major threshold scan over leaf bitvectors. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "engines/engine.h"

/*
 * The algorithm (paper 001, Algorithm 1)
 * --------------------------------------
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
 * Trees of any size: W = ceil(max leaves / 64) 64-bit words per tree. An entry names the
 * first bitvector word its node touches (tree * W + word, within the block) and the AND
 * mask for that word. The left subtree's leaves are contiguous, so with W > 1 a node may
 * also clear following words: `span` words in all, the middle ones entirely, the last
 * with `mask_last`. Most nodes of a wide tree are deep, with small left subtrees, so
 * span is usually 1 and the update is the same single AND as with W == 1.
 *
 * Sentinels: every feature's scan list ends with QS_SENTINELS entries of threshold +inf,
 * which no value passes (v > +inf is false for every v, NaN included), so the hot loop
 * needs no bounds check; their tree and mask are never applied. Because thresholds
 * ascend, v > thr[i+3] proves entries i..i+3 all false, so the scan applies four masks
 * per test, then finishes one by one (4 measured best: 22% faster than one by one at
 * 1,000 trees x 64 leaves; 8 was slower).
 *
 * Tree blocks: the bitvectors of all trees of a block must fit QS_BV_WORDS words on
 * the stack (32 KiB: L1-resident and no heap use per call), so models with more trees
 * are split into blocks of consecutive trees, each with its own sorted lists. Scores
 * are added per block in tree order, so the sum is the same as the reference's.
 */

#define QS_BV_WORDS 4096u
/* +inf entries closing each scan list: the unrolled scan looks QS_SENTINELS - 1 entries
 * ahead, and must find a sentinel there rather than the next feature's thresholds. */
#define QS_SENTINELS 4
#define QS_MAX_WORDS QS_BV_WORDS /* a single tree must fit a block: 262,144 leaves */

typedef struct qs_feature {
    uint32_t feature;               /* column read */
    uint32_t scan_begin, scan_end;  /* entries with thresholds ascending */
    uint32_t miss_begin, miss_end;  /* entries applied when the value is NaN */
    uint32_t zero_begin, zero_end;  /* entries applied when |value| <= Z (has_zero only) */
    uint32_t has_zero;
} qs_feature;

typedef struct qs_block {
    uint32_t first_tree, n_trees;
    uint32_t n_features;
    qs_feature *features;           /* into qs_state.features */
} qs_block;

typedef struct qs_state {
    double base_score;
    uint32_t n_trees;
    uint32_t words;                 /* 64-bit words per tree bitvector */
    uint32_t n_blocks;
    qs_block *blocks;
    qs_feature *features;           /* all blocks' features */
    /* Entries of all lists, struct-of-arrays (paper's layout): */
    float *threshold;
    uint16_t *word;                 /* first bitvector word touched, in the block (< QS_BV_WORDS) */
    uint64_t *mask;                 /* AND mask for that word */
    uint16_t *span;                 /* words > 1: words touched (>= 1) */
    uint64_t *mask_last;            /* words > 1: AND mask of the last word when span > 1 */
    double *leaves;                 /* weight * leaf value, per tree at leaf_offset[t] */
    uint32_t *leaf_offset;
} qs_state;

static void qs_free(void *p) {
    qs_state *s = p;
    if (!s) return;
    free(s->blocks);
    free(s->features);
    free(s->threshold);
    free(s->word);
    free(s->mask);
    free(s->span);
    free(s->mask_last);
    free(s->leaves);
    free(s->leaf_offset);
    free(s);
}

/* ---- prepare ---------------------------------------------------------------------- */

/* One node as a list entry, before sorting. kind orders the three lists of a feature. */
enum { KIND_SCAN = 0, KIND_MISS = 1, KIND_ZERO = 2 };

typedef struct qs_entry {
    uint32_t feature;
    uint32_t kind;
    float threshold;
    uint32_t tree;     /* local to block */
    uint32_t lo, hi;   /* left-subtree leaf range */
    uint32_t seq;      /* insertion order: makes the sort deterministic */
} qs_entry;

static int entry_cmp(const void *a, const void *b) {
    const qs_entry *x = a, *y = b;
    if (x->feature != y->feature) return x->feature < y->feature ? -1 : 1;
    if (x->kind != y->kind) return x->kind < y->kind ? -1 : 1;
    if (x->threshold != y->threshold) return x->threshold < y->threshold ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Leaf range [lo, hi) of each node's subtree. Nodes are in preorder, so children have
 * larger indices than parents and a reverse pass sees children first. */
static void subtree_ranges(const tsm_tree *t, uint32_t *lo, uint32_t *hi) {
    for (uint32_t i = t->n_nodes; i-- > 0;) {
        const tsm_node *n = &t->nodes[i];
        lo[i] = n->left < 0 ? (uint32_t)~n->left : lo[n->left];
        hi[i] = n->right < 0 ? (uint32_t)~n->right + 1 : hi[n->right];
    }
}

static uint64_t range_mask(uint32_t lo, uint32_t hi) {
    /* ~(bits lo .. hi-1), with 0 <= lo < hi <= 64 */
    uint64_t bits = (hi - lo == 64) ? ~0ULL : ((1ULL << (hi - lo)) - 1) << lo;
    return ~bits;
}

/* The words entry `at` clears for leaves [lo, hi) of local tree t. */
static void set_clear(qs_state *s, uint32_t at, uint32_t t, uint32_t lo, uint32_t hi) {
    uint32_t wlo = lo >> 6, whi = (hi - 1) >> 6;
    s->word[at] = (uint16_t)(t * s->words + wlo);
    if (s->words == 1) {
        s->mask[at] = range_mask(lo, hi);
        return;
    }
    s->span[at] = (uint16_t)(whi - wlo + 1);
    if (wlo == whi) {
        s->mask[at] = range_mask(lo & 63, ((hi - 1) & 63) + 1);
        s->mask_last[at] = ~0ULL;
    } else {
        s->mask[at] = range_mask(lo & 63, 64);
        s->mask_last[at] = range_mask(0, ((hi - 1) & 63) + 1);
    }
}

/* Collect the entries of trees [first, first + n) into e (capacity checked by caller),
 * then one sentinel per feature seen. mark[] holds, per feature, the last block stamp
 * that saw it. */
static size_t collect_entries(const ts_model *m, uint32_t first, uint32_t n, const uint8_t *zero_feature,
                              qs_entry *e, uint32_t *lo, uint32_t *hi, uint32_t *mark, uint32_t stamp) {
    size_t k = 0;
    for (uint32_t t = first; t < first + n; t++) {
        const tsm_tree *tr = &m->trees[t];
        subtree_ranges(tr, lo, hi);
        for (uint32_t i = 0; i < tr->n_nodes; i++) {
            const tsm_node *nd = &tr->nodes[i];
            uint32_t llo = nd->left < 0 ? (uint32_t)~nd->left : lo[nd->left];
            uint32_t lhi = nd->left < 0 ? llo + 1 : hi[nd->left];
            qs_entry base = {nd->feature, KIND_SCAN, nd->threshold, t - first, llo, lhi, 0};
            base.seq = (uint32_t)k;
            e[k++] = base;
            if (!(nd->flags & TSM_MISSING_LEFT)) {
                base.kind = KIND_MISS;
                base.seq = (uint32_t)k;
                e[k++] = base;
            }
            if (zero_feature[nd->feature] && !tsm_node_goes_left(nd, 0.0f)) {
                base.kind = KIND_ZERO;
                base.seq = (uint32_t)k;
                e[k++] = base;
            }
        }
    }
    /* Sentinels come last in insertion order, so they sort after any real +inf threshold. */
    const size_t n_real = k;
    for (size_t i = 0; i < n_real; i++) {
        uint32_t f = e[i].feature;
        if (e[i].kind != KIND_SCAN || mark[f] == stamp) continue;
        mark[f] = stamp;
        for (int s = 0; s < QS_SENTINELS; s++) {
            e[k] = (qs_entry){f, KIND_SCAN, INFINITY, 0, 0, 1, (uint32_t)k};
            k++;
        }
    }
    return k;
}

typedef struct qs_build {
    const ts_model *m;
    qs_state *s;
    const uint8_t *zero_feature;
    qs_entry *scratch;
    uint32_t *lo, *hi;
    uint32_t *mark;                 /* per feature: stamp of the last block that saw it */
    size_t n_entries, n_features;   /* filled so far */
} qs_build;

/* Sort the block's entries and append them and its feature table to the state. */
static void build_block(qs_build *b, qs_block *blk) {
    qs_state *s = b->s;
    uint32_t stamp = (uint32_t)(blk - b->s->blocks) + 1;
    size_t k = collect_entries(b->m, blk->first_tree, blk->n_trees, b->zero_feature, b->scratch, b->lo, b->hi,
                               b->mark, stamp);
    qsort(b->scratch, k, sizeof *b->scratch, entry_cmp);
    blk->features = s->features + b->n_features;
    blk->n_features = 0;
    qs_feature *f = NULL;
    for (size_t i = 0; i < k; i++) {
        const qs_entry *e = &b->scratch[i];
        uint32_t at = (uint32_t)(b->n_entries + i);
        if (!f || f->feature != e->feature) {
            f = &blk->features[blk->n_features++];
            *f = (qs_feature){e->feature, at, at, at, at, at, at, b->zero_feature[e->feature]};
        }
        if (e->kind == KIND_SCAN) f->scan_end = f->miss_begin = f->miss_end = f->zero_begin = f->zero_end = at + 1;
        if (e->kind == KIND_MISS) f->miss_end = f->zero_begin = f->zero_end = at + 1;
        if (e->kind == KIND_ZERO) f->zero_end = at + 1;
        s->threshold[at] = e->threshold;
        set_clear(s, at, e->tree, e->lo, e->hi);
    }
    b->n_entries += k;
    b->n_features += blk->n_features;
}

/* Entries a tree contributes at most: one scan, one missing, one zero per node, and a
 * block has at most QS_SENTINELS sentinels per node. */
static uint64_t max_entries(const tsm_tree *t) { return (3ull + QS_SENTINELS) * t->n_nodes; }

static ts_status qs_alloc(qs_state *s, const ts_model *m, uint64_t n_entries, uint64_t n_leaves) {
    size_t ne = (size_t)n_entries + 1;
    s->blocks = calloc((size_t)s->n_blocks + 1, sizeof *s->blocks);
    s->features = calloc(ne, sizeof *s->features);
    s->threshold = malloc(ne * sizeof *s->threshold);
    s->word = malloc(ne * sizeof *s->word);
    s->mask = malloc(ne * sizeof *s->mask);
    if (s->words > 1) {
        s->span = malloc(ne * sizeof *s->span);
        s->mask_last = malloc(ne * sizeof *s->mask_last);
    }
    s->leaves = malloc(((size_t)n_leaves + 1) * sizeof *s->leaves);
    s->leaf_offset = malloc(((size_t)m->n_trees + 1) * sizeof *s->leaf_offset);
    if (!s->blocks || !s->features || !s->threshold || !s->word || !s->mask || (s->words > 1 && (!s->span || !s->mask_last)) ||
        !s->leaves || !s->leaf_offset)
        return TS_ERR_NO_MEMORY;
    return TS_OK;
}

static ts_status qs_prepare(const ts_model *m, const ts_scorer_options *opts, void **out, ts_error *err) {
    (void)opts;
    uint32_t max_leaves = 1, max_nodes = 0;
    uint64_t n_entries = 0, n_leaves = 0;
    for (uint32_t t = 0; t < m->n_trees; t++) {
        if (m->trees[t].n_leaves > max_leaves) max_leaves = m->trees[t].n_leaves;
        if (m->trees[t].n_nodes > max_nodes) max_nodes = m->trees[t].n_nodes;
        n_entries += max_entries(&m->trees[t]);
        n_leaves += m->trees[t].n_leaves;
    }
    uint32_t words = (max_leaves + 63) / 64;
    if (words > QS_MAX_WORDS)
        return ts_fail(err, TS_ERR_UNSUPPORTED, "qs: a tree has %u leaves; qs supports up to %u", max_leaves,
                       QS_MAX_WORDS * 64);
    if (n_entries >= UINT32_MAX || n_leaves >= UINT32_MAX)
        return ts_fail(err, TS_ERR_LIMIT, "qs: the model has more than 2^32 nodes or leaves");

    qs_state *s = calloc(1, sizeof *s);
    if (!s) return ts_fail(err, TS_ERR_NO_MEMORY, "qs: out of memory");
    s->base_score = m->base_score;
    s->n_trees = m->n_trees;
    s->words = words;
    uint32_t per_block = QS_BV_WORDS / words;
    s->n_blocks = (m->n_trees + per_block - 1) / per_block;

    qs_build b = {m, s, NULL, NULL, NULL, NULL, NULL, 0, 0};
    uint8_t *zero_feature = calloc((size_t)m->n_features + 1, 1);
    b.mark = calloc((size_t)m->n_features + 1, sizeof *b.mark);
    uint64_t block_entries = (3ull + QS_SENTINELS) * max_nodes * per_block; /* bound for one block */
    if (block_entries > n_entries) block_entries = n_entries;
    b.scratch = malloc(((size_t)block_entries + 1) * sizeof *b.scratch);
    b.lo = malloc(((size_t)max_nodes + 1) * sizeof *b.lo);
    b.hi = malloc(((size_t)max_nodes + 1) * sizeof *b.hi);
    ts_status st = (zero_feature && b.mark && b.scratch && b.lo && b.hi) ? qs_alloc(s, m, n_entries, n_leaves) : TS_ERR_NO_MEMORY;
    if (st == TS_OK) {
        for (uint32_t t = 0; t < m->n_trees; t++)
            for (uint32_t i = 0; i < m->trees[t].n_nodes; i++)
                if (m->trees[t].nodes[i].flags & TSM_ZERO_IS_MISSING) zero_feature[m->trees[t].nodes[i].feature] = 1;
        b.zero_feature = zero_feature;
        for (uint32_t i = 0; i < s->n_blocks; i++) {
            qs_block *blk = &s->blocks[i];
            blk->first_tree = i * per_block;
            blk->n_trees = m->n_trees - blk->first_tree < per_block ? m->n_trees - blk->first_tree : per_block;
            build_block(&b, blk);
        }
        uint32_t off = 0;
        for (uint32_t t = 0; t < m->n_trees; t++) {
            const tsm_tree *tr = &m->trees[t];
            s->leaf_offset[t] = off;
            for (uint32_t l = 0; l < tr->n_leaves; l++) s->leaves[off + l] = tr->weight * tr->leaf_values[l];
            off += tr->n_leaves;
        }
    }
    free(zero_feature);
    free(b.mark);
    free(b.scratch);
    free(b.lo);
    free(b.hi);
    if (st != TS_OK) {
        qs_free(s);
        return ts_fail(err, st, "qs: out of memory preparing %u trees", m->n_trees);
    }
    *out = s;
    return TS_OK;
}

/* ---- score ------------------------------------------------------------------------ */

/* The scan of one feature (hot loop, long on purpose): apply the false nodes of value v.
 * APPLY(j) applies entry j. NaN and zero-range values take their precomputed lists. */
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

/* One document through one block, one 64-bit word per tree. */
static void score_block_1w(const qs_state *s, const qs_block *blk, const float *row, uint64_t *bv) {
    const float *thr = s->threshold;
    const uint16_t *word = s->word;
    const uint64_t *mask = s->mask;
    memset(bv, 0xFF, (size_t)blk->n_trees * sizeof *bv);
#define APPLY_1W(j) (bv[word[j]] &= mask[j])
    for (uint32_t f = 0; f < blk->n_features; f++) {
        const qs_feature *qf = &blk->features[f];
        QS_SCAN_FEATURE(APPLY_1W);
    }
#undef APPLY_1W
}

/* One document through one block, W > 1 words per tree: the first word's AND, the last
 * word's AND (a no-op mask when span is 1), and zeros in between. */
static void score_block_nw(const qs_state *s, const qs_block *blk, const float *row, uint64_t *bv) {
    const float *thr = s->threshold;
    const uint16_t *word = s->word, *span = s->span;
    const uint64_t *mask = s->mask, *mask_last = s->mask_last;
    memset(bv, 0xFF, (size_t)blk->n_trees * s->words * sizeof *bv);
#define APPLY_NW(j)                                                                         \
    do {                                                                                    \
        uint64_t *p = bv + word[j];                                                         \
        uint32_t n = span[j];                                                               \
        p[0] &= mask[j];                                                                    \
        p[n - 1] &= mask_last[j];                                                           \
        for (uint32_t k = 1; k + 1 < n; k++) p[k] = 0;                                      \
    } while (0)
    for (uint32_t f = 0; f < blk->n_features; f++) {
        const qs_feature *qf = &blk->features[f];
        QS_SCAN_FEATURE(APPLY_NW);
    }
#undef APPLY_NW
}

static inline uint32_t exit_leaf(const uint64_t *bv) {
    uint32_t w = 0;
    while (bv[w] == 0) w++; /* never runs past: the exit leaf's bit is always set */
    return w * 64 + (uint32_t)__builtin_ctzll(bv[w]);
}

static void qs_score(const void *p, const float *x, size_t n_rows, size_t stride, double *out) {
    const qs_state *s = p;
    uint64_t bv[QS_BV_WORDS] __attribute__((aligned(64)));
    for (size_t r = 0; r < n_rows; r++) {
        const float *row = x + r * stride;
        double score = s->base_score;
        for (uint32_t b = 0; b < s->n_blocks; b++) {
            const qs_block *blk = &s->blocks[b];
            const double *leaves = s->leaves;
            const uint32_t *off = s->leaf_offset + blk->first_tree;
            if (s->words == 1) {
                score_block_1w(s, blk, row, bv);
                for (uint32_t t = 0; t < blk->n_trees; t++)
                    score += leaves[off[t] + (uint32_t)__builtin_ctzll(bv[t])];
            } else {
                score_block_nw(s, blk, row, bv);
                for (uint32_t t = 0; t < blk->n_trees; t++)
                    score += leaves[off[t] + exit_leaf(bv + (size_t)t * s->words)];
            }
        }
        out[r] = score;
    }
}

const tse_engine tse_engine_qs = {TS_ENGINE_QS, "qs", qs_prepare, qs_score, qs_free};
