/* qs_layout.c: builds the QuickScorer layout (tree blocks, sorted per-feature lists, leaf masks) shared by qs and vqs. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "engines/common/blocks.h"
#include "engines/common/qs_layout.h"
#include "platform/cpu_caches.h"

void qsl_free(qsl *L) {
    if (!L) return;
    free(L->blocks);
    free(L->features);
    free(L->used);
    free(L->threshold);
    free(L->word);
    free(L->mask32);
    free(L->mask64);
    free(L->span);
    free(L->mask_last);
    free(L->leaves);
    free(L->leaf_offset);
    memset(L, 0, sizeof *L);
}

uint32_t qsl_words64(const ts_model *m) {
    uint32_t max_leaves = 1;
    for (uint32_t t = 0; t < m->n_trees; t++)
        if (m->trees[t].n_leaves > max_leaves) max_leaves = m->trees[t].n_leaves;
    uint32_t words = (max_leaves + 63) / 64;
    return words > QSL_MAX_WORDS ? 0 : words;
}

/* ---- entries before sorting ------------------------------------------------------- */

/* One node as a list entry. kind orders the three lists of a feature. */
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

static uint64_t range_mask(uint32_t lo, uint32_t hi) {
    /* ~(bits lo .. hi-1), with 0 <= lo < hi <= 64 */
    uint64_t bits = (hi - lo == 64) ? ~0ULL : ((1ULL << (hi - lo)) - 1) << lo;
    return ~bits;
}

/* The words entry `at` clears for leaves [lo, hi) of local tree t. */
static void set_clear(qsl *L, uint32_t at, uint32_t t, uint32_t lo, uint32_t hi) {
    uint32_t wlo = lo >> 6, whi = (hi - 1) >> 6;
    L->word[at] = (uint16_t)(t * L->words + wlo);
    if (L->word_bits == 32) {
        L->mask32[at] = (uint32_t)range_mask(lo, hi);
        return;
    }
    if (L->words == 1) {
        L->mask64[at] = range_mask(lo, hi);
        return;
    }
    L->span[at] = (uint16_t)(whi - wlo + 1);
    if (wlo == whi) {
        L->mask64[at] = range_mask(lo & 63, ((hi - 1) & 63) + 1);
        L->mask_last[at] = ~0ULL;
    } else {
        L->mask64[at] = range_mask(lo & 63, 64);
        L->mask_last[at] = range_mask(0, ((hi - 1) & 63) + 1);
    }
}

/* Collect the entries of trees [first, first + n) into e (capacity checked by caller),
 * then QSL_SENTINELS sentinels per feature seen. mark[] holds, per feature, the last
 * block stamp that saw it. */
static size_t collect_entries(const ts_model *m, uint32_t first, uint32_t n, const uint8_t *zero_feature,
                              qs_entry *e, uint32_t *lo, uint32_t *hi, uint32_t *mark, uint32_t stamp) {
    size_t k = 0;
    for (uint32_t t = first; t < first + n; t++) {
        const tsm_tree *tr = &m->trees[t];
        tsm_tree_leaf_ranges(tr, lo, hi);
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
        for (int s = 0; s < QSL_SENTINELS; s++) {
            e[k] = (qs_entry){f, KIND_SCAN, INFINITY, 0, 0, 0, (uint32_t)k};
            k++;
        }
    }
    return k;
}

typedef struct qs_build {
    const ts_model *m;
    qsl *L;
    const uint8_t *zero_feature;
    const uint32_t *slot_of;        /* per column: index in L->used */
    qs_entry *scratch;
    uint32_t *lo, *hi;
    uint32_t *mark;                 /* per feature: stamp of the last block that saw it */
    size_t n_entries, n_features;   /* filled so far */
} qs_build;

static void store_entry(qsl *L, uint32_t at, const qs_entry *e) {
    L->threshold[at] = e->threshold;
    if (e->hi > e->lo) {
        set_clear(L, at, e->tree, e->lo, e->hi);
        return;
    }
    L->word[at] = 0; /* a sentinel: a no-op if ever applied */
    if (L->mask32) L->mask32[at] = ~0u;
    if (L->mask64) L->mask64[at] = ~0ULL;
    if (L->span) L->span[at] = 1;
    if (L->mask_last) L->mask_last[at] = ~0ULL;
}

/* Sort the block's entries and append them and its feature table to the layout. */
static void build_block(qs_build *b, qsl_block *blk) {
    qsl *L = b->L;
    uint32_t stamp = (uint32_t)(blk - L->blocks) + 1;
    size_t k = collect_entries(b->m, blk->first_tree, blk->n_trees, b->zero_feature, b->scratch, b->lo, b->hi,
                               b->mark, stamp);
    qsort(b->scratch, k, sizeof *b->scratch, entry_cmp);
    qsl_feature *fs = L->features + b->n_features, *f = NULL;
    uint32_t nf = 0;
    for (size_t i = 0; i < k; i++) {
        const qs_entry *e = &b->scratch[i];
        uint32_t at = (uint32_t)(b->n_entries + i);
        if (!f || f->feature != e->feature) {
            f = &fs[nf++];
            *f = (qsl_feature){e->feature, b->slot_of[e->feature], at, at, at, at, at, at,
                               b->zero_feature[e->feature]};
        }
        if (e->kind == KIND_SCAN) f->scan_end = f->miss_begin = f->miss_end = f->zero_begin = f->zero_end = at + 1;
        if (e->kind == KIND_MISS) f->miss_end = f->zero_begin = f->zero_end = at + 1;
        if (e->kind == KIND_ZERO) f->zero_end = at + 1;
        store_entry(L, at, e);
    }
    blk->features = fs;
    blk->n_features = nf;
    b->n_entries += k;
    b->n_features += nf;
}

/* Entries a tree contributes at most: one scan, one missing, one zero per node, and a
 * block has at most QSL_SENTINELS sentinels per node. */
static uint64_t max_entries(const tsm_tree *t) { return (3ull + QSL_SENTINELS) * t->n_nodes; }

static ts_status alloc_layout(qsl *L, const ts_model *m, uint64_t n_entries, uint64_t n_leaves) {
    size_t ne = (size_t)n_entries + 1;
    L->blocks = calloc((size_t)L->n_blocks + 1, sizeof *L->blocks);
    L->features = calloc(ne, sizeof *L->features);
    L->used = calloc((size_t)m->n_features + 1, sizeof *L->used);
    L->threshold = malloc(ne * sizeof *L->threshold);
    L->word = malloc(ne * sizeof *L->word);
    if (L->word_bits == 32)
        L->mask32 = malloc(ne * sizeof *L->mask32);
    else
        L->mask64 = malloc(ne * sizeof *L->mask64);
    if (L->words > 1) {
        L->span = malloc(ne * sizeof *L->span);
        L->mask_last = malloc(ne * sizeof *L->mask_last);
    }
    L->leaves = malloc(((size_t)n_leaves + 1) * sizeof *L->leaves);
    L->leaf_offset = malloc(((size_t)m->n_trees + 1) * sizeof *L->leaf_offset);
    if (!L->blocks || !L->features || !L->used || !L->threshold || !L->word || !(L->mask32 || L->mask64) ||
        (L->words > 1 && (!L->span || !L->mask_last)) || !L->leaves || !L->leaf_offset)
        return TS_ERR_NO_MEMORY;
    return TS_OK;
}

/* Per column: whether a Zero-missing node reads it (zero_feature, zeroed by the
 * caller), and its slot among the columns splits read (slot_of; L->used lists them). */
static void mark_features(qsl *L, const ts_model *m, uint8_t *zero_feature, uint32_t *slot_of) {
    const uint32_t unused = UINT32_MAX;
    for (uint32_t f = 0; f <= m->n_features; f++) slot_of[f] = unused;
    for (uint32_t t = 0; t < m->n_trees; t++)
        for (uint32_t i = 0; i < m->trees[t].n_nodes; i++) {
            const tsm_node *nd = &m->trees[t].nodes[i];
            if (nd->flags & TSM_ZERO_IS_MISSING) zero_feature[nd->feature] = 1;
            slot_of[nd->feature] = 0; /* read: numbered below */
        }
    L->n_used = 0;
    for (uint32_t f = 0; f < m->n_features; f++)
        if (slot_of[f] != unused) {
            slot_of[f] = L->n_used;
            L->used[L->n_used++] = f;
        }
}

static ts_status build_blocks(qsl *L, const ts_model *m, uint32_t max_nodes) {
    qs_build b = {m, L, NULL, NULL, NULL, NULL, NULL, NULL, 0, 0};
    uint8_t *zero_feature = calloc((size_t)m->n_features + 1, 1);
    uint32_t *slot_of = malloc(((size_t)m->n_features + 1) * sizeof *slot_of);
    b.mark = calloc((size_t)m->n_features + 1, sizeof *b.mark);
    uint64_t block_entries = (3ull + QSL_SENTINELS) * max_nodes * L->tau; /* bound for one block */
    b.scratch = malloc(((size_t)block_entries + 1) * sizeof *b.scratch);
    b.lo = malloc(((size_t)max_nodes + 1) * sizeof *b.lo);
    b.hi = malloc(((size_t)max_nodes + 1) * sizeof *b.hi);
    ts_status st = (zero_feature && slot_of && b.mark && b.scratch && b.lo && b.hi) ? TS_OK : TS_ERR_NO_MEMORY;
    if (st == TS_OK) {
        mark_features(L, m, zero_feature, slot_of);
        b.zero_feature = zero_feature;
        b.slot_of = slot_of;
        for (uint32_t i = 0; i < L->n_blocks; i++) {
            qsl_block *blk = &L->blocks[i];
            blk->first_tree = i * L->tau;
            blk->n_trees = m->n_trees - blk->first_tree < L->tau ? m->n_trees - blk->first_tree : L->tau;
            build_block(&b, blk);
        }
        tsm_model_weighted_leaves(m, L->leaves, L->leaf_offset);
    }
    free(zero_feature);
    free(slot_of);
    free(b.mark);
    free(b.scratch);
    free(b.lo);
    free(b.hi);
    return st;
}

ts_status qsl_build(qsl *L, const ts_model *m, uint32_t tau, uint32_t word_bits, ts_error *err) {
    memset(L, 0, sizeof *L);
    uint32_t max_nodes = 0;
    uint64_t n_entries = 0, n_leaves = 0, n_nodes = 0;
    for (uint32_t t = 0; t < m->n_trees; t++) {
        if (m->trees[t].n_nodes > max_nodes) max_nodes = m->trees[t].n_nodes;
        n_entries += max_entries(&m->trees[t]);
        n_leaves += m->trees[t].n_leaves;
        n_nodes += m->trees[t].n_nodes;
    }
    uint32_t words = qsl_words64(m);
    if (words == 0)
        return ts_fail(err, TS_ERR_UNSUPPORTED, "a tree has more than %u leaves, the most QuickScorer supports",
                       QSL_MAX_WORDS * 64);
    if (n_entries >= UINT32_MAX || n_leaves >= UINT32_MAX)
        return ts_fail(err, TS_ERR_LIMIT, "the model has more than 2^32 nodes or leaves (QuickScorer's limit)");
    L->base_score = m->base_score;
    L->n_trees = m->n_trees;
    L->n_nodes = n_nodes;
    L->word_bits = word_bits == 32 && words == 1 ? 32 : 64;
    L->words = words;
    if (tau < 1) tau = 1;
    if (tau > QSL_MAX_BLOCK_WORDS / words) tau = QSL_MAX_BLOCK_WORDS / words;
    if (m->n_trees && tau > m->n_trees) tau = m->n_trees;
    L->tau = tau;
    L->n_blocks = (m->n_trees + tau - 1) / tau;
    ts_status st = alloc_layout(L, m, n_entries, n_leaves);
    if (st == TS_OK) st = build_blocks(L, m, max_nodes);
    if (st != TS_OK) {
        qsl_free(L);
        return ts_fail(err, st, "out of memory preparing %u trees for QuickScorer", m->n_trees);
    }
    return TS_OK;
}

/* ---- block sizes ------------------------------------------------------------------ */

void qsl_block_sizes(const ts_model *m, const tse_config *cfg, const qsl_sizing *z, uint32_t *tau_out,
                     uint32_t *delta_out) {
    const tsr_caches *c = tsr_cache_sizes();
    uint64_t nodes = 0, leaves = 0;
    for (uint32_t t = 0; t < m->n_trees; t++) {
        nodes += m->trees[t].n_nodes;
        leaves += m->trees[t].n_leaves;
    }
    uint32_t n_trees = m->n_trees ? m->n_trees : 1;
    /* Bytes a tree block reads per tree: its list entries and its leaf values. */
    double per_tree = ((double)nodes * (double)z->entry_bytes + (double)leaves * 8.0) / n_trees + 1.0;
    uint32_t delta = cfg->delta ? cfg->delta : z->default_delta;
    if (delta > QSL_MAX_DELTA) delta = QSL_MAX_DELTA; /* more documents per block gain nothing */
    delta = (delta + z->lanes - 1) / z->lanes * z->lanes;
    uint32_t tau = tsb_given_tau(cfg, n_trees);
    if (!tau) {
        /* A block's lists fill at most half of L2; the bitvectors of the documents
         * scored together fill the engine's budget. */
        double by_lists = (double)c->l2 / 2 / per_tree;
        double bits = z->bits_in_l1 ? (double)c->l1d * z->bits_share : (double)c->l2 * z->bits_share;
        double by_bits = bits / ((double)z->bv_bytes_per_tree * (z->bits_in_l1 ? z->lanes : delta));
        double t = by_lists < by_bits ? by_lists : by_bits;
        tau = t < 16 ? 16 : t > n_trees ? n_trees : (uint32_t)t;
        /* Blocks of equal size: 1,000 trees in two blocks of 500, not 751 + 249. */
        tau = tsb_equal_blocks(n_trees, tau);
    }
    *tau_out = tau > n_trees ? n_trees : tau;
    *delta_out = delta;
}
