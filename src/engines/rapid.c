/* rapid.c: RapidScorer on exact feature codes (rapid.h): the layout builder, the scalar kernel, and the engine that picks the ISA kernel. */
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "engines/rapid.h"
#include "platform/cpu_caches.h"

/* ---- layout ----------------------------------------------------------------------------- */

enum { KIND_SHORT = 0, KIND_LONG = 1, KIND_MISS = 2, KIND_ZERO = 3 };

/* One node as an entry of a block's lists, before sorting. */
typedef struct rs_item {
    uint32_t slot, kind, k;
    uint32_t tree;       /* local to the block */
    uint32_t lo, hi;     /* the left subtree's leaves [lo, hi) */
    uint32_t seq;        /* insertion order (tree order): keeps the sort deterministic */
} rs_item;

static int item_cmp(const void *a, const void *b) {
    const rs_item *x = a, *y = b;
    if (x->slot != y->slot) return x->slot < y->slot ? -1 : 1;
    if (x->kind != y->kind) return x->kind < y->kind ? -1 : 1;
    if (x->k != y->k) return x->k < y->k ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static void rsl_free(rsl *L) {
    if (!L) return;
    tsq_free(&L->q);
    free(L->blocks);
    free(L->features);
    free(L->entries);
    free(L->leaves);
    free(L->leaf_offset);
    memset(L, 0, sizeof *L);
}

/* Leaf range [lo, hi) of every node's subtree (nodes in preorder: children after parents). */
static void subtree_ranges(const tsm_tree *t, uint32_t *lo, uint32_t *hi) {
    for (uint32_t i = t->n_nodes; i-- > 0;) {
        const tsm_node *n = &t->nodes[i];
        lo[i] = n->left < 0 ? (uint32_t)~n->left : lo[n->left];
        hi[i] = n->right < 0 ? (uint32_t)~n->right + 1 : hi[n->right];
    }
}

/* AND mask of a byte that clears its bits [a, b), 0 <= a < b <= 8. */
static uint8_t clear_bits(uint32_t a, uint32_t b) { return (uint8_t) ~(((1u << (b - a)) - 1u) << a); }

static rs_entry make_entry(const rsl *L, const rs_item *it) {
    uint32_t fb = it->lo / 8, lb = (it->hi - 1) / 8;
    rs_entry e = {(uint16_t)(it->tree * L->bytes + fb), (uint16_t)it->k, 0, 0xFF, (uint16_t)(lb - fb + 1)};
    if (fb == lb) {
        e.first = clear_bits(it->lo % 8, (it->hi - 1) % 8 + 1);
    } else {
        e.first = clear_bits(it->lo % 8, 8);
        e.last = clear_bits(0, (it->hi - 1) % 8 + 1);
    }
    return e;
}

/* The items of trees [first, first + n): one scan item per node (short or long), one missing item when NaN
 * goes right, one zero item when the feature has zero-is-missing nodes and 0.0 goes right. */
static size_t collect_items(const rsl *L, const ts_model *m, uint32_t first, uint32_t n, rs_item *it, uint32_t *lo,
                            uint32_t *hi) {
    size_t k = 0;
    for (uint32_t t = first; t < first + n; t++) {
        const tsm_tree *tr = &m->trees[t];
        subtree_ranges(tr, lo, hi);
        for (uint32_t i = 0; i < tr->n_nodes; i++) {
            const tsm_node *nd = &tr->nodes[i];
            uint32_t slot = tsq_slot(&L->q, nd->feature);
            uint32_t llo = nd->left < 0 ? (uint32_t)~nd->left : lo[nd->left];
            uint32_t lhi = nd->left < 0 ? llo + 1 : hi[nd->left];
            rs_item base = {slot, KIND_SHORT, tsq_index(&L->q, slot, nd->threshold), t - first, llo, lhi, 0};
            if ((lhi - 1) / 8 - llo / 8 + 1 > 2) base.kind = KIND_LONG;
            base.seq = (uint32_t)k;
            it[k++] = base;
            if (!(nd->flags & TSM_MISSING_LEFT)) {
                base.kind = KIND_MISS;
                base.seq = (uint32_t)k;
                it[k++] = base;
            }
            if (L->q.f[slot].has_zero && !tsm_node_goes_left(nd, 0.0f)) {
                base.kind = KIND_ZERO;
                base.seq = (uint32_t)k;
                it[k++] = base;
            }
        }
    }
    return k;
}

typedef struct rs_counts {
    size_t entries, features;   /* filled so far */
} rs_counts;

static void sentinel(rsl *L, rs_counts *c) { L->entries[c->entries++] = (rs_entry){0, RS_SENTINEL_K, 0xFF, 0xFF, 1}; }

/* Append one block's sorted items (by slot, then short, long, missing and zero items,
 * then k) as its features and their lists (rapid.h). */
static void emit_block(rsl *L, rs_block *blk, const rs_item *it, size_t n, rs_counts *c) {
    rs_feature *fs = L->features + c->features;
    uint32_t nf = 0;
    for (size_t i = 0; i < n;) {
        rs_feature *f = &fs[nf++];
        const uint32_t slot = it[i].slot;
        *f = (rs_feature){slot, 0, 0, 0, 0, 0, 0, L->q.f[slot].has_zero};
        uint32_t *begin[2] = {&f->short_begin, &f->long_begin};
        for (uint32_t kind = KIND_SHORT; kind <= KIND_LONG; kind++) {
            *begin[kind] = (uint32_t)c->entries;
            for (; i < n && it[i].slot == slot && it[i].kind == kind; i++) L->entries[c->entries++] = make_entry(L, &it[i]);
            sentinel(L, c);
        }
        f->miss_begin = (uint32_t)c->entries;
        for (; i < n && it[i].slot == slot && it[i].kind == KIND_MISS; i++) L->entries[c->entries++] = make_entry(L, &it[i]);
        f->miss_end = f->zero_begin = (uint32_t)c->entries;
        for (; i < n && it[i].slot == slot && it[i].kind == KIND_ZERO; i++) L->entries[c->entries++] = make_entry(L, &it[i]);
        f->zero_end = (uint32_t)c->entries;
    }
    blk->features = fs;
    blk->n_features = nf;
    c->features += nf;
}

typedef struct rs_build {
    rs_item *items;
    uint32_t *lo, *hi;
} rs_build;

static ts_status build_blocks(rsl *L, const ts_model *m, rs_build *b) {
    rs_counts c = {0, 0};
    for (uint32_t i = 0; i < L->n_blocks; i++) {
        rs_block *blk = &L->blocks[i];
        blk->first_tree = i * L->tau;
        blk->n_trees = m->n_trees - blk->first_tree < L->tau ? m->n_trees - blk->first_tree : L->tau;
        size_t n = collect_items(L, m, blk->first_tree, blk->n_trees, b->items, b->lo, b->hi);
        qsort(b->items, n, sizeof *b->items, item_cmp);
        emit_block(L, blk, b->items, n, &c);
    }
    return TS_OK;
}

static void fill_leaves(rsl *L, const ts_model *m) {
    uint32_t off = 0;
    for (uint32_t t = 0; t < m->n_trees; t++) {
        const tsm_tree *tr = &m->trees[t];
        L->leaf_offset[t] = off;
        for (uint32_t l = 0; l < tr->n_leaves; l++) L->leaves[off + l] = tr->weight * tr->leaf_values[l];
        off += tr->n_leaves;
    }
}

/* Trees per block: one group's leaf vectors (tau * bytes * lanes) fill half of L1. */
static uint32_t block_trees(const ts_model *m, const tse_config *cfg, uint32_t bytes, uint32_t lanes) {
    uint32_t n = m->n_trees ? m->n_trees : 1, tau;
    if (cfg->tau == TS_BLOCK_ALL)
        tau = n;
    else if (cfg->tau)
        tau = cfg->tau;
    else {
        size_t per = (size_t)bytes * lanes, l1 = tsr_cache_sizes()->l1d;
        tau = (uint32_t)(l1 / 2 / per);
        if (tau < 1) tau = 1;
        uint32_t n_blocks = (n + tau - 1) / tau; /* blocks of equal size */
        tau = (n + n_blocks - 1) / n_blocks;
    }
    if (tau > RS_MAX_ROWS / bytes) tau = RS_MAX_ROWS / bytes; /* 16-bit rows */
    return tau > n ? n : tau < 1 ? 1 : tau;
}

static ts_status rsl_build(rsl *L, const ts_model *m, const tse_config *cfg, uint32_t lanes, ts_error *err) {
    memset(L, 0, sizeof *L);
    uint32_t max_leaves = 1, max_nodes = 0;
    uint64_t n_nodes = 0, n_leaves = 0;
    for (uint32_t t = 0; t < m->n_trees; t++) {
        if (m->trees[t].n_leaves > max_leaves) max_leaves = m->trees[t].n_leaves;
        if (m->trees[t].n_nodes > max_nodes) max_nodes = m->trees[t].n_nodes;
        n_nodes += m->trees[t].n_nodes;
        n_leaves += m->trees[t].n_leaves;
    }
    if ((max_leaves + 7) / 8 > RS_MAX_BYTES)
        return ts_fail(err, TS_ERR_UNSUPPORTED, "rapid: a tree has %u leaves, more than the %u rapid supports",
                       max_leaves, RS_MAX_BYTES * 8);
    if (5 * n_nodes + 1 >= UINT32_MAX || n_leaves >= UINT32_MAX)
        return ts_fail(err, TS_ERR_LIMIT, "rapid: the model has more than 2^32 list entries or leaves");
    ts_status st = tsq_build(&L->q, m, err);
    if (st != TS_OK) return st;
    L->base_score = m->base_score;
    L->n_trees = m->n_trees;
    L->n_nodes = n_nodes;
    L->bytes = (max_leaves + 7) / 8;
    L->tau = block_trees(m, cfg, L->bytes, lanes);
    L->n_blocks = (m->n_trees + L->tau - 1) / L->tau;
    /* at most 3 entries per node, and 2 sentinels per feature of a block (a feature of a
     * block has a node there) */
    size_t ne = (size_t)(5 * n_nodes) + 1;
    size_t block_items = (size_t)3 * max_nodes * L->tau + 1;
    L->blocks = calloc((size_t)L->n_blocks + 1, sizeof *L->blocks);
    L->features = calloc((size_t)n_nodes + 1, sizeof *L->features);
    L->entries = malloc(ne * sizeof *L->entries);
    L->leaves = malloc(((size_t)n_leaves + 1) * sizeof *L->leaves);
    L->leaf_offset = malloc(((size_t)m->n_trees + 1) * sizeof *L->leaf_offset);
    rs_build b = {malloc(block_items * sizeof(rs_item)), malloc(((size_t)max_nodes + 1) * sizeof(uint32_t)),
                  malloc(((size_t)max_nodes + 1) * sizeof(uint32_t))};
    if (!L->blocks || !L->features || !L->entries || !L->leaves || !L->leaf_offset || !b.items ||
        !b.lo || !b.hi)
        st = ts_fail(err, TS_ERR_NO_MEMORY, "rapid: out of memory preparing %u trees", m->n_trees);
    if (st == TS_OK) st = build_blocks(L, m, &b);
    if (st == TS_OK) fill_leaves(L, m);
    free(b.items);
    free(b.lo);
    free(b.hi);
    if (st != TS_OK) rsl_free(L);
    return st;
}

/* ---- the scalar kernel ------------------------------------------------------------------ */

/* Eight lanes, one byte each in a uint64_t: a compare result is 0xFF in the failed lanes. */
typedef uint64_t rs_bm;
#define RS_ONES 0x0101010101010101ull

static inline rs_bm rs_from_lanes(uint64_t m) {
    rs_bm c = 0;
    for (int l = 0; l < 8; l++)
        if (m >> l & 1) c |= 0xFFull << (8 * l);
    return c;
}

static inline void rs_and(uint8_t *row, rs_bm c, uint8_t m) {
    uint64_t v;
    memcpy(&v, row, 8);
    v &= ~(c & ~(RS_ONES * m));
    memcpy(row, &v, 8);
}

static inline rs_bm rs_gt8(const uint8_t *codes, uint32_t k) {
    rs_bm c = 0;
    for (int l = 0; l < 8; l++)
        if (codes[l] > k) c |= 0xFFull << (8 * l);
    return c;
}

static inline rs_bm rs_gt16(const uint16_t *codes, uint32_t k) {
    rs_bm c = 0;
    for (int l = 0; l < 8; l++)
        if (codes[l] > k) c |= 0xFFull << (8 * l);
    return c;
}

static void rs_leaves(const uint8_t *bv, uint32_t n_trees, uint32_t bytes, const double *leaves, const uint32_t *off,
                      double *acc) {
    for (uint32_t t = 0; t < n_trees; t++) {
        const uint8_t *b = bv + (size_t)t * bytes * 8;
        for (size_t l = 0; l < 8; l++) {
            size_t j = 0;
            while (b[j * 8 + l] == 0) j++;
            acc[l] += leaves[off[t] + j * 8 + (size_t)__builtin_ctz(b[j * 8 + l])];
        }
    }
}

#define RS_LANES 8
#include "engines/rapid_scalar_quantize.h"
#define RS_CODE_T uint8_t
#define RS_GT rs_gt8
#define RS_QUANTIZE rs_scalar_quantize8
#define RS(name) rs_scalar8_##name
#include "engines/rapid_template.h"
#undef RS
#undef RS_CODE_T
#undef RS_GT
#undef RS_QUANTIZE
#define RS_CODE_T uint16_t
#define RS_GT rs_gt16
#define RS_QUANTIZE rs_scalar_quantize16
#define RS(name) rs_scalar16_##name
#include "engines/rapid_template.h"
#undef RS
#undef RS_CODE_T
#undef RS_GT
#undef RS_QUANTIZE
#undef RS_LANES

const rs_kernels tse_rapid_scalar = {TS_ISA_SCALAR, 8, rs_scalar8_kernel, rs_scalar16_kernel};

/* ---- the engine ------------------------------------------------------------------------- */

/* Batches of at most SMALL_ROWS[i] rows use the kernel of level i below the best (a group
 * of 64 lanes holding one document does the work of a whole group for it). */
typedef struct rapid_state {
    rsl L;
    uint32_t delta;
    rs_kernel kernel;
    uint32_t lanes;
    rs_kernel small;         /* the scalar kernel for batches of at most 8 rows, or NULL */
} rapid_state;

static void rapid_free(void *p) {
    rapid_state *s = p;
    if (!s) return;
    rsl_free(&s->L);
    free(s);
}

static const rs_kernels *kernels_for(ts_isa isa) {
#ifdef TS_HAVE_RAPID_X86
    if (isa >= TS_ISA_AVX512) return &tse_rapid_avx512;
    if (isa >= TS_ISA_AVX2) return &tse_rapid_avx2;
#else
    (void)isa;
#endif
    return &tse_rapid_scalar;
}

/* Documents per document block: 1,024 by default (the block's lists are read once per
 * tree block for all its groups), a multiple of the lanes. */
static uint32_t block_docs(const tse_config *cfg, uint32_t lanes) {
    uint32_t d = cfg->delta ? cfg->delta : 1024;
    if (d > RS_MAX_DELTA) d = RS_MAX_DELTA;
    return (d + lanes - 1) / lanes * lanes;
}

static ts_status rapid_prepare(const ts_model *m, const tse_config *cfg, void **out, tse_layout *layout,
                               ts_error *err) {
    const rs_kernels *k = kernels_for(cfg->isa);
    rapid_state *s = calloc(1, sizeof *s);
    if (!s) return ts_fail(err, TS_ERR_NO_MEMORY, "rapid: out of memory");
    ts_status st = rsl_build(&s->L, m, cfg, k->lanes, err);
    if (st != TS_OK) {
        free(s);
        return st;
    }
    s->lanes = k->lanes;
    s->delta = block_docs(cfg, k->lanes);
    s->kernel = s->L.q.code_bits == 8 ? k->k8 : k->k16;
    if (k != &tse_rapid_scalar)
        s->small = s->L.q.code_bits == 8 ? tse_rapid_scalar.k8 : tse_rapid_scalar.k16;
    size_t scratch = rs_scratch_parts(&s->L, s->delta, k->lanes).total;
    size_t small = rs_scratch_parts(&s->L, s->delta, 8).total;
    if (s->small && small > scratch) scratch = small;
    size_t chunk = (size_t)(1u << 22) / (s->L.n_nodes + 1) + 1;
    if (chunk < 2 * k->lanes) chunk = 2 * k->lanes;
    *layout = (tse_layout){k->isa, s->L.tau, s->delta, scratch, chunk, k->lanes};
    *out = s;
    return TS_OK;
}

static void rapid_score(const void *p, const float *x, size_t n_rows, size_t stride, double *out, void *scratch) {
    const rapid_state *s = p;
    if (s->small && n_rows <= 8)
        s->small(&s->L, s->delta, x, n_rows, stride, out, scratch);
    else
        s->kernel(&s->L, s->delta, x, n_rows, stride, out, scratch);
}

/* The planner times rapid on models where quantizing a document costs little beside
 * scoring it: at least 1,000 nodes (below that a document's codes cost about as much as
 * its trees). */
static int rapid_plan_candidate(const ts_model *m, const tse_config *cfg) {
    (void)cfg;
    uint64_t nodes = 0;
    for (uint32_t t = 0; t < m->n_trees; t++) nodes += m->trees[t].n_nodes;
    return nodes >= 1000;
}

const tse_engine tse_engine_rapid = {
    .id = TS_ENGINE_RAPID, .name = "rapid", .prepare = rapid_prepare, .score = rapid_score, .free = rapid_free,
    .plan_candidate = rapid_plan_candidate,
};
