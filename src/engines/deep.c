/* deep.c: the deep-tree engine: a block of documents walks each tree in turn, 32 gathered walks (AVX-512) or 16 scalar ones interleaved, a lane refilled with the next document as soon as its walk ends. */
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "engines/common/blocks.h"
#include "engines/common/kernels.h"
#include "engines/deep.h"
#include "engines/engine.h"
#include "engines/common/vpred_layout.h"
#include "platform/config.h"
#include "platform/cpu_caches.h"

/*
 * Fully grown forests (scikit-learn's RandomForest and ExtraTrees: thousands of leaves,
 * 20 to 60 levels, most documents leaving after a dozen) defeat the other engines:
 * QuickScorer's bitvectors and rapid's rows grow with the leaves, and vpred pads every
 * walk to the tree's depth (a tree of depth 44 costs 44 steps to a document whose leaf
 * is at depth 11). deep walks each document only down its own path:
 *
 *   for each block of delta documents          (their keys, vpred_layout.h, made once)
 *     for each tree, in order
 *       with AVX-512, blocks of 256 documents or more: the tree's top K = 4 levels
 *       decided for all of them, 64 at a time ("Top levels" below): each document's
 *       start slot below them (or its leaf, added at once)
 *       with AVX-512, the gathered walk (x86/deep_avx512.c, deep.h "The walk"): 32
 *       lanes in two registers, a step gathering the lanes' slots and keys, a lane
 *       that reaches a leaf writing it to a leaf list and taking the next document
 *       of the block (no branch on a document's path); then each listed leaf added
 *       to its document's sum
 *       else 16 lanes, each walking one document: a step loads the lane's node (8 bytes,
 *       "Slots") and its key, and moves to the left child or the one after it; a
 *       lane that reaches a leaf adds it to its document's sum and starts the next
 *       document of the block at its start slot, or (no top levels) at the root's
 *       child it goes to (the root is held in registers: no load of it on the walk).
 *
 * The scalar walk (16 lanes; the gathered one is x86/deep_avx512.c's). The 16 walks are
 * independent load chains, so their latencies overlap (software
 * pipelining across documents, as VPred does, without VPred's padding); the tree being
 * walked stays in L1/L2 while the whole block goes through it, and the block's keys in
 * L2 (delta sized so that they take three quarters of L2: deep_delta). The last walks of a tree, when no
 * document is left to refill a lane, finish one lane at a time. The 16 lanes are
 * written out (lane_step inlined with a constant lane): their state sits at fixed
 * places on the stack, which Zen 4 renames, where a loop over the lanes kept it in
 * arrays indexed by the lane and put a store-to-load forwarding on every step's chain
 * (1.12x slower on msn-srf-500x4096).
 *
 * Scores: out[d] starts at base_score and every tree adds weight * leaf value in tree
 * order (a document gets exactly one leaf per tree before the next tree starts, from
 * the top levels or from the walk), so the sums are naive's bit for bit.
 */

/*
 * Slots. A tree is vpred_layout.h's slots (siblings adjacent, the right child after the
 * left) laid out again heavy subtree first (relayout_heavy), each slot 8 bytes in the narrow form: an internal node is
 * {threshold key, column, left child | flags}, a leaf is its value (the double weight *
 * leaf value) in place, so a tree of 4,096 leaves is 64 KiB, half of vpl's nodes and
 * values. A node's flags say which of its children are leaves: DEEP8_LEFT_LEAF,
 * DEEP8_RIGHT_LEAF (the left child field keeps 14 bits: trees of up to 16,384 slots and
 * 65,536 columns; the wide form, 16-byte slots with 30-bit children, takes the others).
 * A tree that is a single leaf is one leaf slot, its root. A document goes right at a
 * node iff its key in the node's column is above thr (vpred_layout.h "keys").
 */
typedef struct deep_node8 {
    uint32_t thr;
    uint16_t col;
    uint16_t left;   /* left child's slot | DEEP8_LEFT_LEAF | DEEP8_RIGHT_LEAF */
} deep_node8;
typedef struct deep_node16 {
    uint32_t thr, col, left, unused;
} deep_node16;
#define DEEP8_LEFT_LEAF 0x8000u
#define DEEP8_RIGHT_LEAF 0x4000u
#define DEEP8_MAX_SLOTS 0x4000u
#define DEEP16_LEFT_LEAF 0x80000000u
#define DEEP16_RIGHT_LEAF 0x40000000u

/* Documents walking one tree at once (lanes). */
#define DEEP_LANES 16u

/* Most documents per block (keys in scratch: delta * row bytes). */
#define DEEP_MAX_DELTA 4096u

_Static_assert(DEEP_MAX_DELTA <= DEEP_WALK_MAX_DOCS, "the gathered walk's leaf list holds 12-bit documents");
_Static_assert(sizeof(deep_node8) == sizeof(double) && sizeof(deep_node16) == 2 * sizeof(double), "slot sizes");

/* Top levels: the levels decided before the walk by default, and an exit's flag for a
 * leaf (deep.h, "Top levels" below). */
#define DEEP_TOP_DEFAULT 4u
#define DEEP_EXIT_LEAF 0x80000000u
/* Fewest documents of a block whose top levels are decided first (in smaller blocks the
 * walk waits on the tree's lines more than on its steps: batch 100 measured 1.05-1.1x
 * slower with them). TREESCORE_DEEP_TOP (tests) takes them for every block. */
#define DEEP_TOP_MIN_DOCS 256u

typedef struct deep_state {
    vpl L;            /* built for one lane: its columns and keys (its nodes and values are
                         freed once the slots are made) */
    int narrow;       /* 8-byte slots (else 16) */
    uint64_t *slots;  /* tree t's at slot_base[t] (in 8-byte units) */
    uint64_t *slot_base;
    uint32_t delta;
    uint32_t top;     /* K: the top levels decided before the walk (0: none) */
    uint32_t top_min; /* in blocks of at least top_min documents */
    const deep_kernels *kern; /* the SIMD top levels and walk, or NULL: the scalar ones */
    int gathered;       /* the kernel's walk (else the 16 scalar walks) */
    uint32_t *top_col;  /* per tree 2^K - 1: node h's column in a row of keys */
    uint32_t *top_off;  /* per tree 2^K - 1: node h's column copy * 64 (the kernel's col) */
    uint32_t *top_thr;  /* per tree 2^K - 1: node h's threshold key */
    uint32_t *top_exit; /* per tree 2^K: exit e's slot, | DEEP_EXIT_LEAF for a leaf */
    uint8_t *top_leafy; /* per tree: 1 if some exit is a leaf */
    uint32_t n_tcols;   /* the columns top nodes read (the kernel's column copies) */
    uint32_t *tcols;
    int near;           /* the model converts its input to float32: double rows scored
                           from (float)v (deep_score_f64) */
} deep_state;

/* Slot i of a tree: an internal node's column, threshold key and left child with its
 * flags (narrow or wide form). */
#define DEEP_NODE(sl, narrow, i, col_, thr_, left_)                                       \
    do {                                                                               \
        if (narrow) {                                                                  \
            const deep_node8 *p_ = (const deep_node8 *)(sl) + (i);                     \
            col_ = p_->col, thr_ = p_->thr, left_ = p_->left;                          \
        } else {                                                                       \
            const deep_node16 *p_ = (const deep_node16 *)(sl) + (i);                   \
            col_ = p_->col, thr_ = p_->thr, left_ = p_->left;                          \
        }                                                                              \
    } while (0)

static void deep_free(void *p) {
    deep_state *s = p;
    if (!s) return;
    vpl_free(&s->L);
    free(s->slots);
    free(s->slot_base);
    free(s->top_col);
    free(s->top_off);
    free(s->top_thr);
    free(s->top_exit);
    free(s->top_leafy);
    free(s->tcols);
    free(s);
}

/* Documents per block: cfg->delta, else the documents whose keys fill three quarters of
 * L2 (on msn-srf-500x4096, 1,013 documents with the top levels' copies: a batch of 1,000
 * is one block, 1.05-1.08x two blocks of 500, which half of L2 gave; at 3,000 rows per
 * call blocks of 1,000 or 1,500 beat blocks of 679 or 3,000). */
static uint32_t deep_delta(const tse_config *cfg, size_t row_bytes) {
    size_t d = cfg->delta ? cfg->delta : tsr_cache_sizes()->l2 * 3 / 4 / (row_bytes ? row_bytes : 1);
    return d < DEEP_LANES ? DEEP_LANES : d > DEEP_MAX_DELTA ? DEEP_MAX_DELTA : (uint32_t)d;
}

/* vpl's node of slot i: column, threshold key, left child (its own index for a leaf). */
static void vpl_slot(const vpl *L, uint64_t i, uint32_t *col, uint32_t *thr, uint32_t *left) {
    if (L->narrow) {
        const vpl_node8 *p = (const vpl_node8 *)L->nodes + i;
        *col = p->col, *thr = p->thr, *left = p->left;
    } else {
        const vpl_node16 *p = (const vpl_node16 *)L->nodes + i;
        *col = p->col, *thr = p->thr, *left = p->left;
    }
}

/* Tree t's slots from vpl's nodes and values (n slots from vpl slot b), into dst. */
static void make_slots(const vpl *L, int narrow, uint64_t b, uint32_t n, uint64_t *dst) {
    for (uint32_t i = 0; i < n; i++) {
        uint32_t col, thr, left, c1, t1, l1, c2, t2, l2;
        vpl_slot(L, b + i, &col, &thr, &left);
        if (left == i) { /* a leaf: its value in place */
            memcpy(narrow ? dst + i : dst + 2 * (size_t)i, &L->values[b + i], sizeof(double));
            if (!narrow) dst[2 * (size_t)i + 1] = 0;
            continue;
        }
        vpl_slot(L, b + left, &c1, &t1, &l1);
        vpl_slot(L, b + left + 1, &c2, &t2, &l2);
        const int ll = l1 == left, rl = l2 == left + 1;
        if (narrow) {
            deep_node8 nd = {thr, (uint16_t)col,
                             (uint16_t)(left | (ll ? DEEP8_LEFT_LEAF : 0) | (rl ? DEEP8_RIGHT_LEAF : 0))};
            memcpy(dst + i, &nd, sizeof nd);
        } else {
            deep_node16 nd = {thr, col, left | (ll ? DEEP16_LEFT_LEAF : 0) | (rl ? DEEP16_RIGHT_LEAF : 0), 0};
            memcpy(dst + 2 * (size_t)i, &nd, sizeof nd);
        }
    }
}

/* Slot i's left child field, flags included (narrow or wide form). */
static uint32_t left_field(const uint64_t *sl, int narrow, uint32_t i) {
    if (narrow) {
        deep_node8 nd;
        memcpy(&nd, sl + i, sizeof nd);
        return nd.left;
    }
    deep_node16 nd;
    memcpy(&nd, sl + 2 * (size_t)i, sizeof nd);
    return nd.left;
}

static void set_left_field(uint64_t *sl, int narrow, uint32_t i, uint32_t v) {
    if (narrow) {
        deep_node8 nd;
        memcpy(&nd, sl + i, sizeof nd);
        nd.left = (uint16_t)v;
        memcpy(sl + i, &nd, sizeof nd);
    } else {
        deep_node16 nd;
        memcpy(&nd, sl + 2 * (size_t)i, sizeof nd);
        nd.left = v;
        memcpy(sl + 2 * (size_t)i, &nd, sizeof nd);
    }
}

/*
 * Heavy path first: a tree's n slots (n > 1; breadth first from make_slots, parents
 * before children) laid out again in depth-first order of sibling pairs, the child with
 * more leaves first: the root, its children's pair, the larger child's children's pair,
 * ... so that a walk down the larger subtrees (in a fully grown tree the larger subtree
 * holds more of the training rows: the likelier way) stays within few cache lines, four
 * steps per line. On msn-srf-500x4096 (1,000 test rows, 50 trees) 66% of the steps take
 * the child of more leaves (67% the child of more training rows: scikit-learn's counts
 * would buy nothing more); about 1% faster than breadth first. The pairs of two leaves
 * (which no step reads: a leaf is known from its parent's flags; only its value is read)
 * go after all the others, so that the lines the walk reads hold more nodes: 1.02x for
 * both walks on msn-srf-500x4096. src -> dst; work holds 4n uint32.
 */
static void relayout_heavy(const uint64_t *src, uint64_t *dst, uint32_t n, int narrow, uint32_t *work) {
    const uint32_t mask = narrow ? DEEP8_MAX_SLOTS - 1 : 0x3FFFFFFFu;
    const uint32_t lflag = narrow ? DEEP8_LEFT_LEAF : DEEP16_LEFT_LEAF;
    const uint32_t rflag = narrow ? DEEP8_RIGHT_LEAF : DEEP16_RIGHT_LEAF;
    uint32_t *inner = work, *leaves = work + n, *pos = work + 2 * (size_t)n, *stack = work + 3 * (size_t)n;
    memset(inner, 0, n * sizeof *inner);
    inner[0] = 1;
    for (uint32_t i = 0; i < n; i++)
        if (inner[i]) {
            const uint32_t f = left_field(src, narrow, i), l = f & mask;
            inner[l] = !(f & lflag), inner[l + 1] = !(f & rflag);
        }
    for (uint32_t i = n; i-- > 0;) {
        const uint32_t l = left_field(src, narrow, i) & mask;
        leaves[i] = inner[i] ? leaves[l] + leaves[l + 1] : 1;
    }
    uint32_t sp = 0, next = 1, n_def = 0; /* pairs of two leaves deferred to the end: stack[n - 1 - k] */
    pos[0] = 0;
    stack[sp++] = 0;
    while (sp) {
        const uint32_t i = stack[--sp], l = left_field(src, narrow, i) & mask;
        if (!inner[l] && !inner[l + 1]) {
            stack[n - 1 - n_def++] = l;
            continue;
        }
        pos[l] = next, pos[l + 1] = next + 1, next += 2;
        const uint32_t heavy = leaves[l + 1] > leaves[l] ? l + 1 : l, light = heavy == l ? l + 1 : l;
        if (inner[light]) stack[sp++] = light;
        if (inner[heavy]) stack[sp++] = heavy;
    }
    for (uint32_t k = 0; k < n_def; k++) {
        const uint32_t l = stack[n - 1 - k];
        pos[l] = next, pos[l + 1] = next + 1, next += 2;
    }
    const size_t w = narrow ? 1 : 2;
    for (uint32_t i = 0; i < n; i++) {
        memcpy(dst + w * pos[i], src + w * i, w * sizeof *dst);
        if (inner[i]) {
            const uint32_t f = left_field(src, narrow, i);
            set_left_field(dst, narrow, pos[i], (f & ~mask) | pos[f & mask]);
        }
    }
}

/* The slots of every tree (deep_state "Slots"); vpl's nodes and values freed after. */
static ts_status build_slots(deep_state *s, const ts_model *m) {
    vpl *L = &s->L;
    uint32_t max_slots = 1;
    for (uint32_t t = 0; t < m->n_trees; t++)
        if (2 * m->trees[t].n_leaves - 1 > max_slots) max_slots = 2 * m->trees[t].n_leaves - 1;
    s->narrow = max_slots <= DEEP8_MAX_SLOTS && L->n_cols <= 65536u;
    const uint64_t words = s->narrow ? 1 : 2;
    s->slots = malloc((L->n_nodes + 1) * words * sizeof *s->slots);
    s->slot_base = malloc(((size_t)m->n_trees + 1) * sizeof *s->slot_base);
    if (!s->slots || !s->slot_base) return TS_ERR_NO_MEMORY;
    uint64_t *tmp = malloc((size_t)max_slots * words * sizeof *tmp);
    uint32_t *work = malloc((size_t)max_slots * 4 * sizeof *work);
    if (!tmp || !work) {
        free(tmp);
        free(work);
        return TS_ERR_NO_MEMORY;
    }
    for (uint32_t t = 0; t < m->n_trees; t++) {
        const uint32_t n = 2 * m->trees[t].n_leaves - 1;
        s->slot_base[t] = L->trees[t].base * words;
        make_slots(L, s->narrow, L->trees[t].base, n, n > 1 ? tmp : s->slots + s->slot_base[t]);
        if (n > 1) relayout_heavy(tmp, s->slots + s->slot_base[t], n, s->narrow, work);
    }
    free(tmp);
    free(work);
    s->slot_base[m->n_trees] = L->n_nodes * words;
    free(L->nodes);
    free(L->values);
    L->nodes = NULL;
    L->values = NULL;
    return TS_OK;
}

/*
 * Top levels. Every document of a block walks the top levels of every tree, so they are
 * decided first, for all the block's documents, before the walk (deep.h): tree t's top
 * K levels as a complete binary tree in heap order, a leaf met above level K padded with
 * nodes that always go left down to level K, and its 2^K exits: the slot of the node at
 * level K a document reaches (where its walk starts) or the leaf (its value added at
 * once; the document takes no lane). With AVX-512, 64 documents per node in four
 * compares (x86/deep_avx512.c) from a copy of their keys column by column (only the
 * columns top nodes read); else each document steps down the K levels without a branch,
 * the documents of a group level by level (independent chains; only where
 * TREESCORE_DEEP_TOP asks: it measured slower than the walk's own steps).
 *
 * What it buys is small (docs/benchmarks.md, issue 25 fourth session): the walk's
 * steps through the top levels were already cheap (their nodes in L1, no walk ends
 * there, so the exit branch is predicted), about 0.6 ns against 4 ns for a step below
 * them. K = 4 measured 1.03-1.05x faster than none on msn-srf-500x4096; K = 6 0.9x
 * (63 nodes and 133 of the 135 columns copied, the copies pushing keys out of L2).
 */

/* Tree t's top levels from its slots (a tree of more than one slot: its root internal):
 * columns, threshold keys and exits into col, thr (2^K - 1) and ex (2^K). */
static void build_top(const deep_state *s, uint32_t t, uint32_t *col, uint32_t *thr, uint32_t *ex) {
    const uint64_t *sl = s->slots + s->slot_base[t];
    const uint32_t inner = (1u << s->top) - 1;
    const uint32_t mask = s->narrow ? DEEP8_MAX_SLOTS - 1 : 0x3FFFFFFFu;
    const uint32_t lflag = s->narrow ? DEEP8_LEFT_LEAF : DEEP16_LEFT_LEAF;
    const uint32_t rflag = s->narrow ? DEEP8_RIGHT_LEAF : DEEP16_RIGHT_LEAF;
    uint32_t at[2u << DEEP_TOP_MAX];
    uint8_t leaf[2u << DEEP_TOP_MAX];
    at[0] = 0, leaf[0] = s->slot_base[t + 1] - s->slot_base[t] == (s->narrow ? 1u : 2u);
    for (uint32_t h = 0; h < inner; h++) {
        if (leaf[h]) { /* padding: always left, the leaf below it */
            col[h] = 0, thr[h] = UINT32_MAX;
            at[2 * h + 1] = at[2 * h + 2] = at[h], leaf[2 * h + 1] = leaf[2 * h + 2] = 1;
            continue;
        }
        uint32_t c, th, left;
        DEEP_NODE(sl, s->narrow, at[h], c, th, left);
        col[h] = c, thr[h] = th;
        at[2 * h + 1] = left & mask, at[2 * h + 2] = (left & mask) + 1;
        leaf[2 * h + 1] = (left & lflag) != 0, leaf[2 * h + 2] = (left & rflag) != 0;
    }
    for (uint32_t e = 0; e <= inner; e++) ex[e] = at[inner + e] | (leaf[inner + e] ? DEEP_EXIT_LEAF : 0);
}

/* The top levels of every tree (s->top > 0), and the columns they read, copied for the
 * kernel (top_off). */
static ts_status build_tops(deep_state *s) {
    const uint32_t nt = s->L.n_trees, inner = (1u << s->top) - 1, n_cols = s->L.n_cols;
    s->top_col = malloc(((size_t)nt * inner + 1) * sizeof *s->top_col);
    s->top_off = malloc(((size_t)nt * inner + 1) * sizeof *s->top_off);
    s->top_thr = malloc(((size_t)nt * inner + 1) * sizeof *s->top_thr);
    s->top_exit = malloc(((size_t)nt * (inner + 1) + 32) * sizeof *s->top_exit); /* (the kernel reads 16 or 32) */
    s->top_leafy = malloc((size_t)nt + 1);
    s->tcols = malloc(((size_t)n_cols + 1) * sizeof *s->tcols);
    uint32_t *copy = malloc(((size_t)n_cols + 1) * sizeof *copy); /* column -> its copy + 1 */
    if (!s->top_col || !s->top_off || !s->top_thr || !s->top_exit || !s->top_leafy || !s->tcols || !copy) {
        free(copy);
        return TS_ERR_NO_MEMORY;
    }
    memset(copy, 0, ((size_t)n_cols + 1) * sizeof *copy);
    memset(s->top_exit + (size_t)nt * (inner + 1), 0, 32 * sizeof *s->top_exit);
    s->n_tcols = 0;
    for (uint32_t t = 0; t < nt; t++) {
        uint32_t *col = s->top_col + (size_t)t * inner, *thr = s->top_thr + (size_t)t * inner;
        const uint32_t *ex = s->top_exit + (size_t)t * (inner + 1);
        build_top(s, t, col, thr, s->top_exit + (size_t)t * (inner + 1));
        s->top_leafy[t] = 0;
        for (uint32_t e = 0; e <= inner; e++) s->top_leafy[t] |= (ex[e] & DEEP_EXIT_LEAF) != 0;
        for (uint32_t h = 0; h < inner; h++) {
            if (thr[h] != UINT32_MAX && !copy[col[h]]) s->tcols[s->n_tcols] = col[h], copy[col[h]] = ++s->n_tcols;
            s->top_off[(size_t)t * inner + h] = copy[col[h]] ? (copy[col[h]] - 1) * DEEP_GROUP : 0;
        }
    }
    free(copy);
    return TS_OK;
}

/* The levels decided before the walk: TREESCORE_DEEP_TOP (test builds), else the default
 * where a kernel decides them (the scalar steps measured slower than the walk's own, and
 * no top levels is the default there); none for a model without splits. */
static uint32_t deep_top_levels(const deep_state *s, ts_isa isa) {
    const int knob = tsr_config_get()->deep_top;
    return s->L.n_cols == 0 ? 0 : knob >= 0 ? (uint32_t)knob : tsk_deep(isa) ? DEEP_TOP_DEFAULT : 0;
}

/* Bytes of a block's scratch parts, each a multiple of 64: keys, the top columns'
 * copies (ck, groups of 64 documents), the walk's list of documents and start slots. */
static size_t round64(size_t b) { return (b + 63) & ~(size_t)63; }
static size_t ck_bytes(const deep_state *s) {
    return s->kern && s->top ? (size_t)(s->delta + DEEP_GROUP - 1) / DEEP_GROUP * s->n_tcols * DEEP_GROUP * 4 : 0;
}

/* Bytes of the walk's list of documents, and of its start slots (whole groups of 64). */
static size_t list_bytes(const deep_state *s) {
    return (size_t)(s->delta + DEEP_GROUP - 1) / DEEP_GROUP * DEEP_GROUP * 4;
}

/* Bytes of the gathered walk's leaf list (deep.h: n + 16 entries), each of its two parts. */
static size_t leaf_list_bytes(const deep_state *s) { return s->gathered ? round64(((size_t)s->delta + 16) * 4) : 0; }

static ts_status deep_prepare(const ts_model *m, const tse_config *cfg, void **out, tse_layout *layout, ts_error *err) {
    deep_state *s = calloc(1, sizeof *s);
    if (!s) return ts_fail(err, TS_ERR_NO_MEMORY, "deep: out of memory");
    ts_status st = vpl_build(&s->L, m, 1, "deep", err);
    if (st != TS_OK) {
        free(s);
        return st;
    }
    if (build_slots(s, m) != TS_OK) {
        deep_free(s);
        return ts_fail(err, TS_ERR_NO_MEMORY, "deep: out of memory preparing %u trees", m->n_trees);
    }
    s->near = !m->compares_double;
    s->top = deep_top_levels(s, cfg->isa);
    s->top_min = tsr_config_get()->deep_top >= 0 ? 0 : DEEP_TOP_MIN_DOCS;
    s->kern = tsk_deep(cfg->isa);
    if (s->top && build_tops(s) != TS_OK) {
        deep_free(s);
        return ts_fail(err, TS_ERR_NO_MEMORY, "deep: out of memory preparing %u trees", m->n_trees);
    }
    const size_t row_bytes = vpl_row_bytes(&s->L);
    s->delta = deep_delta(cfg, row_bytes + (s->kern && s->top ? (size_t)s->n_tcols * 4 : 0)); /* keys, copies */
    s->gathered = s->kern && s->kern->walk && cfg->lanes != 1 && (uint64_t)s->delta * s->L.n_cols < (1ull << 31);
    if (!s->top && !s->gathered) s->kern = NULL; /* (the scalar walk from the root: no kernel) */
    size_t chunk = tsb_rows_per_chunk(s->L.steps / 2, 0.6);
    const size_t scratch = round64(row_bytes * s->delta) + ck_bytes(s) + 2 * list_bytes(s) + 2 * leaf_list_bytes(s);
    *layout = (tse_layout){s->kern ? s->kern->isa : TS_ISA_SCALAR, 0, s->delta, scratch, chunk ? chunk : 1,
                           s->gathered ? 2 * DEEP_LANES : DEEP_LANES};
    *out = s;
    return TS_OK;
}


/* The leaf value in slot i. */
static inline double leaf_at(const uint64_t *sl, const int narrow, uint32_t i) {
    double v;
    memcpy(&v, narrow ? sl + i : sl + 2 * (size_t)i, sizeof v);
    return v;
}

/* The step from a node (column col, threshold thr, left child and flags `left`) for the
 * key k: the child's slot, in *leaf whether it is a leaf. */
static inline uint32_t step(const int narrow, uint32_t k, uint32_t thr, uint32_t left, uint32_t *leaf) {
    const uint32_t go = k > thr;
    if (narrow) {
        *leaf = (left >> (15 - go)) & 1u;
        return (left & (DEEP8_MAX_SLOTS - 1)) + go;
    }
    *leaf = (left >> (31 - go)) & 1u;
    return (left & 0x3FFFFFFFu) + go;
}

/* One document's walk from internal node i to its leaf, alone; returns the leaf's value. */
static inline double walk_one(const uint64_t *sl, const int narrow, const uint32_t *k, uint32_t i) {
    for (;;) {
        uint32_t col, thr, left, leaf;
        DEEP_NODE(sl, narrow, i, col, thr, left);
        i = step(narrow, k[col], thr, left, &leaf);
        if (leaf) return leaf_at(sl, narrow, i);
    }
}

/* The walks in flight of walk_tree: lane l walks document doc[l] (keys kp[l]) and is
 * at slot at[l]. */
typedef struct deep_lanes {
    uint32_t doc[DEEP_LANES], at[DEEP_LANES];
    const uint32_t *kp[DEEP_LANES];
    uint32_t root_col, root_thr, root_left; /* the root, when neither of its children is a leaf */
    int root_step;                          /* 1: a lane starts a document at the root's child */
} deep_lanes;

/* Where a walk of keys k starts: the root's child it goes to (the root is in w, and no
 * load of it is on the walk's chain), or the root. */
static inline uint32_t lane_start(const deep_lanes *w, const uint32_t *k) {
    return w->root_step ? w->root_left + (k[w->root_col] > w->root_thr) : 0;
}

/* One step of lane l (a constant once inlined, so that the lane's state sits at a fixed
 * place on the stack); a lane that reaches a leaf adds it to its document's sum and
 * takes document *next, prefetching pf_lines lines of the next tree. Returns 1 when no
 * document was left to take. */
static inline int lane_step(deep_lanes *w, const uint32_t l, const uint64_t *sl, const int narrow,
                            const uint32_t *keys, size_t n_cols, size_t n, size_t *next, double *out,
                            const char **pf, const char *pf_end, uint32_t pf_lines, const int listed,
                            const uint32_t *docs, const uint32_t *starts) {
    uint32_t col, thr, left, leaf;
    DEEP_NODE(sl, narrow, w->at[l], col, thr, left);
    const uint32_t i = step(narrow, w->kp[l][col], thr, left, &leaf);
    if (!leaf) {
        w->at[l] = i;
        return 0;
    }
    out[w->doc[l]] += leaf_at(sl, narrow, i);
    for (uint32_t p = 0; p < pf_lines && *pf < pf_end; p++, *pf += 64) __builtin_prefetch(*pf);
    if (*next == n) return 1;
    if (listed) { /* the list's next document (docs NULL: document next), from its start slot */
        const uint32_t d = docs ? docs[*next] : (uint32_t)*next;
        w->doc[l] = d, w->kp[l] = keys + (size_t)d * n_cols, w->at[l] = starts[(*next)++];
        return 0;
    }
    w->doc[l] = (uint32_t)*next;
    w->kp[l] = keys + (*next)++ * n_cols;
    w->at[l] = lane_start(w, w->kp[l]);
    return 0;
}

/* Hot loop (long on purpose): documents [0, n) of a block through one tree (slots sl,
 * root internal), DEEP_LANES walks in flight, a lane that reaches a leaf adding it to
 * its document's sum and taking the next document (lane_step; the lanes written out,
 * each at its own place). (Branch free, with selects instead of the exit branch, it
 * measured slower: more instructions per step.) Each document started prefetches
 * pf_lines cache lines of the next tree from *pf on. listed: the walks are documents
 * docs[0 .. n) (docs NULL: 0 .. n), each from its slot starts[i] (below the top
 * levels), instead. */
static inline __attribute__((always_inline)) void walk_tree(const uint64_t *sl, const int narrow, const uint32_t *keys,
                                                           size_t n_cols, size_t n, double *out, const char *pf,
                                                           const char *pf_end, uint32_t pf_lines, const int listed,
                                                           const uint32_t *docs, const uint32_t *starts) {
    if (n < DEEP_LANES) {
        for (size_t d = 0; d < n; d++)
            if (listed) {
                const size_t r = docs ? docs[d] : d;
                out[r] += walk_one(sl, narrow, keys + r * n_cols, starts[d]);
            } else
                out[d] += walk_one(sl, narrow, keys + d * n_cols, 0);
        return;
    }
    deep_lanes w;
    uint32_t col, thr, left, leaf_flags; /* the root's */
    DEEP_NODE(sl, narrow, 0, col, thr, left);
    w.root_col = col, w.root_thr = thr, w.root_left = left;
    leaf_flags = narrow ? DEEP8_LEFT_LEAF | DEEP8_RIGHT_LEAF : DEEP16_LEFT_LEAF | DEEP16_RIGHT_LEAF;
    w.root_step = !(w.root_left & leaf_flags);
    w.root_left &= ~leaf_flags;
    for (uint32_t l = 0; l < DEEP_LANES; l++) {
        w.doc[l] = listed && docs ? docs[l] : l, w.kp[l] = keys + (size_t)w.doc[l] * n_cols;
        w.at[l] = listed ? starts[l] : lane_start(&w, w.kp[l]);
    }
    size_t next = DEEP_LANES;
    uint32_t done = DEEP_LANES; /* the lane that found no document left */
#define DEEP_LANE(l)                                                                               \
    if (lane_step(&w, l, sl, narrow, keys, n_cols, n, &next, out, &pf, pf_end, pf_lines, listed, docs, starts)) { \
        done = l;                                                                                  \
        goto drain;                                                                                \
    }
    for (;;) {
        DEEP_LANE(0) DEEP_LANE(1) DEEP_LANE(2) DEEP_LANE(3) DEEP_LANE(4) DEEP_LANE(5) DEEP_LANE(6) DEEP_LANE(7)
        DEEP_LANE(8) DEEP_LANE(9) DEEP_LANE(10) DEEP_LANE(11) DEEP_LANE(12) DEEP_LANE(13) DEEP_LANE(14) DEEP_LANE(15)
    }
#undef DEEP_LANE
drain:
    for (uint32_t l = 0; l < DEEP_LANES; l++)
        if (l != done) out[w.doc[l]] += walk_one(sl, narrow, keys + (size_t)w.doc[l] * n_cols, w.at[l]);
}

/* walk_tree with its form and start constant, one copy each (no test of them on a step). */
#define DEEP_WALK(name, narrow, listed)                                                                         \
    static void name(const uint64_t *sl, const uint32_t *keys, size_t n_cols, size_t n, double *out,             \
                     const char *pf, const char *pf_end, uint32_t pf_lines, const uint32_t *docs,                \
                     const uint32_t *starts) {                                                                   \
        walk_tree(sl, narrow, keys, n_cols, n, out, pf, pf_end, pf_lines, listed, docs, starts);                \
    }
DEEP_WALK(walk_narrow_root, 1, 0)
DEEP_WALK(walk_narrow_listed, 1, 1)
DEEP_WALK(walk_wide_root, 0, 0)
DEEP_WALK(walk_wide_listed, 0, 1)
#undef DEEP_WALK

/* Tree t's top levels for documents [0, n) of a block: a document whose exit is a leaf
 * gets its value, the others go to the walk's list (*docs, starts); returns its length.
 * With the kernel, ck holds the top columns' copies of the block's groups; where no exit
 * of the tree is a leaf and K <= 5, the kernel writes the start slots itself and *docs is
 * set to NULL (every document in order). */
static size_t top_levels(const deep_state *s, uint32_t t, const uint32_t *keys, const uint32_t *ck, size_t n,
                         double *out, uint32_t **docs_io, uint32_t *starts) {
    const size_t n_cols = s->L.n_cols, inner = ((size_t)1 << s->top) - 1;
    const uint32_t *col = s->top_col + t * inner, *thr = s->top_thr + t * inner, *ex = s->top_exit + t * (inner + 1);
    const uint64_t *sl = s->slots + s->slot_base[t];
    uint32_t *docs = *docs_io;
    size_t m = 0;
    if (s->kern && s->top <= 5 && !s->top_leafy[t]) {
        uint8_t e[DEEP_GROUP];
        for (size_t d0 = 0; d0 < n; d0 += DEEP_GROUP)
            s->kern->top(ck + d0 * s->n_tcols, s->top_off + t * inner, thr, s->top, e, ex, starts + d0);
        *docs_io = NULL;
        return n;
    }
    for (size_t d0 = 0; d0 < n; d0 += DEEP_GROUP) {
        const size_t g = n - d0 < DEEP_GROUP ? n - d0 : DEEP_GROUP;
        uint32_t h[DEEP_GROUP];
        if (s->kern) {
            uint8_t e[DEEP_GROUP];
            s->kern->top(ck + d0 * s->n_tcols, s->top_off + t * inner, thr, s->top, e, NULL, NULL);
            for (size_t j = 0; j < g; j++) h[j] = e[j];
        } else { /* the group level by level: each document's step is independent */
            for (size_t j = 0; j < g; j++) h[j] = 0;
            for (uint32_t l = 0; l < s->top; l++)
                for (size_t j = 0; j < g; j++) {
                    const uint32_t x = h[j];
                    h[j] = 2 * x + 1 + (keys[(d0 + j) * n_cols + col[x]] > thr[x]);
                }
            for (size_t j = 0; j < g; j++) h[j] -= (uint32_t)inner;
        }
        for (size_t j = 0; j < g; j++) {
            const uint32_t v = ex[h[j]];
            if (v & DEEP_EXIT_LEAF)
                out[d0 + j] += leaf_at(sl, s->narrow, v & ~DEEP_EXIT_LEAF);
            else
                docs[m] = (uint32_t)(d0 + j), starts[m++] = v;
        }
    }
    return m;
}

/* The top columns' copies of documents [0, n) for the kernel: group g's column copy c
 * at ck[(g * n_tcols + c) * 64 + j], lanes past n zero. */
static void copy_top_columns(const deep_state *s, const uint32_t *keys, size_t n, uint32_t *ck) {
    const size_t n_cols = s->L.n_cols, nc = s->n_tcols;
    for (size_t d0 = 0; d0 < n; d0 += DEEP_GROUP) {
        uint32_t *g = ck + d0 * nc;
        const size_t m = n - d0 < DEEP_GROUP ? n - d0 : DEEP_GROUP;
        for (size_t j = 0; j < m; j++) {
            const uint32_t *k = keys + (d0 + j) * n_cols;
            for (size_t c = 0; c < nc; c++) g[c * DEEP_GROUP + j] = k[s->tcols[c]];
        }
        for (size_t c = 0; c < nc; c++)
            for (size_t j = m; j < DEEP_GROUP; j++) g[c * DEEP_GROUP + j] = 0;
    }
}

/* A block of n rows (float rows, or double rows: f64). */
static void deep_block(const deep_state *s, const void *x, size_t n, size_t stride, double *out, void *scratch,
                       const int f64) {
    const vpl *L = &s->L;
    const size_t n_cols = vpl_row_bytes(L) / sizeof(uint32_t);
    uint32_t *keys = scratch;
    uint32_t *ck = (uint32_t *)((char *)scratch + round64(vpl_row_bytes(L) * s->delta));
    uint32_t *docs = (uint32_t *)((char *)ck + ck_bytes(s)), *starts = docs + list_bytes(s) / 4;
    uint32_t *ldoc = starts + list_bytes(s) / 4, *lslot = ldoc + leaf_list_bytes(s) / 4;
    for (size_t r = 0; r < n; r++) {
        if (f64)
            vpl_keys_f64(L, (const double *)x + r * stride, 1, stride, keys + r * n_cols);
        else
            vpl_keys(L, (const float *)x + r * stride, 1, stride, keys + r * n_cols);
        out[r] = L->base_score;
    }
    const int top = s->top && n >= s->top_min;
    if (s->kern && top) copy_top_columns(s, keys, n, ck);
    for (uint32_t t = 0; t < L->n_trees; t++) {
        const uint64_t *sl = s->slots + s->slot_base[t];
        if (s->slot_base[t + 1] - s->slot_base[t] == (s->narrow ? 1u : 2u)) { /* a single leaf */
            const double v = leaf_at(sl, s->narrow, 0);
            for (size_t r = 0; r < n; r++) out[r] += v;
            continue;
        }
        const char *pf = (const char *)(s->slots + s->slot_base[t + 1]);
        const char *pf_end = (const char *)(s->slots + s->slot_base[t + 2 <= L->n_trees ? t + 2 : L->n_trees]);
        const size_t lines = (size_t)(pf_end - pf) / 64 + 1;
        const uint32_t pf_lines = (uint32_t)((lines + n - 1) / n);
        uint32_t *list = docs;
        const size_t m = top ? top_levels(s, t, keys, ck, n, out, &list, starts) : n;
        if (s->gathered) { /* pf_lines per pass of 32 lanes: a document takes 4 steps or more */
            const size_t passes = n / 8 ? n / 8 : 1;
            s->kern->walk(sl, s->narrow, keys, (uint32_t)n_cols, m, top ? list : NULL, top ? starts : NULL, out, ldoc,
                          lslot, pf, pf_end, (uint32_t)((lines + passes - 1) / passes));
        } else if (top)
            (s->narrow ? walk_narrow_listed : walk_wide_listed)(sl, keys, n_cols, m, out, pf, pf_end, pf_lines, list,
                                                                 starts);
        else
            (s->narrow ? walk_narrow_root : walk_wide_root)(sl, keys, n_cols, n, out, pf, pf_end, pf_lines, NULL, NULL);
    }
}

static void deep_rows(const deep_state *s, const void *x, size_t n_rows, size_t stride, double *out, void *scratch,
                      const int f64) {
    /* blocks of equal size (1,000 rows and delta 970: two of 500, not 970 and 30, since
     * every block reads every tree) */
    const size_t blocks = (n_rows + s->delta - 1) / s->delta, size = blocks ? (n_rows + blocks - 1) / blocks : 0;
    const size_t width = f64 ? sizeof(double) : sizeof(float);
    for (size_t r0 = 0; r0 < n_rows; r0 += size) {
        size_t n = n_rows - r0 < size ? n_rows - r0 : size;
        deep_block(s, (const char *)x + r0 * stride * width, n, stride, out + r0, scratch, f64);
    }
}

static void deep_score(const void *p, const float *x, size_t n_rows, size_t stride, double *out, void *scratch) {
    deep_rows(p, x, n_rows, stride, out, scratch, 0);
}

/* Double rows of a model that converts its input to float32 (scikit-learn's forests,
 * XGBoost, ONNX): their keys from (float)v, so a call is scored in the engine's own
 * blocks, not 64 rows at a time from a float copy (a 500-tree forest of 4,096 leaves
 * per tree, 1,000 rows: 4x slower so); 0 for a model that compares doubles. */
static int deep_score_f64(const void *p, const double *x, size_t n_rows, size_t stride, double *out, void *scratch) {
    const deep_state *s = p;
    if (!s->near) return 0;
    deep_rows(s, x, n_rows, stride, out, scratch, 1);
    return 1;
}

/* A candidate of auto for forests of deep trees: more than 256 leaves per tree on
 * average (elsewhere rapid, vqs and trees-simd are faster, and timing deep would only
 * lengthen the planning). */
static int deep_plan_candidate(const ts_model *m, const tse_config *cfg) {
    (void)cfg;
    return tse_model_deep(m);
}

const tse_engine tse_engine_deep = {
    .id = TS_ENGINE_DEEP, .name = "deep", .prepare = deep_prepare, .score = deep_score, .free = deep_free,
    .plan_candidate = deep_plan_candidate, .score_f64 = deep_score_f64,
};
