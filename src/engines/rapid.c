/* rapid.c: RapidScorer on exact feature codes (rapid.h): the layout builder and the engine that picks the ISA kernel (the scalar one in rapid_scalar.c, SIMD ones in x86/). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "engines/common/blocks.h"
#include "engines/rapid.h"
#include "platform/config.h"
#include "platform/cpu.h"
#include "platform/cpu_caches.h"
#include "platform/notes.h"

/* ---- layout ----------------------------------------------------------------------------- */

static void rsl_free(rsl *L) {
    if (!L) return;
    tsq_free(&L->tables.q);
    free(L->blocks);
    free(L->tree_row);
    free(L->row_first);
    free(L->entries);
    free(L->skip_first);
    free(L->skips);
    free(L->leaves);
    free(L->leaf_offset);
    free(L->leaves_f);
    free(L->pairs.block_first);
    free(L->pairs.trees);
    free(L->pairs.row_first);
    free(L->pairs.skip_first);
    free(L->pairs.entries);
    free(L->pairs.skips);
    free(L->pad.entries);
    free(L->pad.skips);
    free(L->pad.skip_first);
    free(L->comp);
    memset(L, 0, sizeof *L);
}

/* The left subtree's leaves [*a, *b) of node i. */
static void left_leaves(const tsm_node *nd, const uint32_t *lo, const uint32_t *hi, uint32_t *a, uint32_t *b) {
    *a = nd->left < 0 ? (uint32_t)~nd->left : lo[nd->left];
    *b = nd->left < 0 ? *a + 1 : hi[nd->left];
}

/* AND mask of byte j that clears leaves [a, b). */
static uint32_t row_mask(uint32_t j, uint32_t a, uint32_t b) {
    uint32_t from = a > 8 * j ? a - 8 * j : 0, to = b < 8 * j + 8 ? b - 8 * j : 8;
    uint8_t m = (uint8_t) ~(((1u << (to - from)) - 1u) << from);
    return 0x01010101u * m;
}

/* k + 1 in every byte, XOR the kernel's flip. */
static uint32_t k_word(uint32_t k, uint32_t flip) { return 0x01010101u * (((k + 1) ^ flip) & 0xFF); }

/* The rows *ra .. *rb of a node whose left leaves are [a, b) in a tree of B rows, and its
 * skip entry's z (rapid.h "Skips"), or 0 when it has plain entries in those rows. */
static uint32_t node_rows(uint32_t a, uint32_t b, uint32_t B, uint32_t *ra, uint32_t *rb) {
    *ra = a / 8, *rb = (b - 1) / 8;
    return B <= RS_SKIP_ROWS && *rb > *ra ? b : 0;
}

/* Tree t's rows, entries and skip entries, from row `row`, entry `*at` and skip entry
 * `*at_skip` on (rapid.h "Entries", "Skips"); count and count_skip hold B + 1 each. */
static uint32_t comp_slot(rsl *L, uint32_t *comp_of, uint32_t slot) {
    if (comp_of[slot] == UINT32_MAX) {
        comp_of[slot] = L->n_comp;
        L->comp[L->n_comp++] = slot;
    }
    return L->tables.q.n_slots + comp_of[slot];
}

static void build_tree(rsl *L, const tsm_tree *tr, const tsm_tree *orig, const uint8_t *flip, uint32_t *comp_of,
                       uint32_t row, uint64_t *at, uint64_t *at_skip, uint32_t *lo,
                       uint32_t *hi, uint32_t *count, uint32_t *count_skip) {
    const uint32_t B = (tr->n_leaves + 7) / 8;
    tsm_tree_leaf_ranges(tr, lo, hi);
    memset(count, 0, (B + 1) * sizeof *count);
    memset(count_skip, 0, (B + 1) * sizeof *count_skip);
    for (uint32_t i = 0; i < tr->n_nodes; i++) {
        uint32_t a, b, ra, rb;
        left_leaves(&tr->nodes[i], lo, hi, &a, &b);
        const uint32_t z = node_rows(a, b, B, &ra, &rb);
        if (z)
            count_skip[ra + 1]++;
        else
            for (uint32_t j = ra; j <= rb; j++) count[j + 1]++;
    }
    for (uint32_t j = 0; j < B; j++) {
        L->row_first[row + j] = (uint32_t)(*at + count[j]);
        L->skip_first[row + j] = (uint32_t)(*at_skip + count_skip[j]);
        count[j + 1] += count[j];
        count_skip[j + 1] += count_skip[j];
    }
    for (uint32_t i = 0; i < tr->n_nodes; i++) {
        const tsm_node *nd = &tr->nodes[i];
        uint32_t a, b, ra, rb, k, slot = tsq_tree_node_slot(&L->tables.q, orig, i, &k);
        if (flip && flip[i]) slot = comp_slot(L, comp_of, slot), k = TSQ_SEGMENT - 1 - k;
        left_leaves(nd, lo, hi, &a, &b);
        const uint32_t z = node_rows(a, b, B, &ra, &rb);
        if (z)
            L->skips[*at_skip + count_skip[ra]++] =
                (rs_skip){{slot * L->lanes, k_word(k, L->tables.flip), row_mask(ra, a, b)}, 0x01010101u * z};
        else
            for (uint32_t j = ra; j <= rb; j++)
                L->entries[*at + count[j]++] = (rs_entry){slot * L->lanes, k_word(k, L->tables.flip), row_mask(j, a, b)};
    }
    *at += count[B - 1];
    *at_skip += count_skip[B - 1];
}

/* Trees per block: the entries of a block fill a quarter of L2 (every group of the
 * document block reads them); cfg->tau when given. */
static uint32_t block_trees(const rsl *L, const tse_config *cfg) {
    uint32_t n = L->n_trees ? L->n_trees : 1, tau = tsb_given_tau(cfg, n);
    if (!tau) {
        double per_tree = ((double)L->n_entries * sizeof(rs_entry) + (double)L->n_skips * sizeof(rs_skip) +
                           (double)L->n_nodes * 8.0) / n + 1.0;
        double t = (double)tsr_cache_sizes()->l2 / 4 / per_tree;
        tau = t < 1 ? 1 : t > n ? n : (uint32_t)t;
        tau = tsb_equal_blocks(n, tau);
    }
    return tau > n ? n : tau;
}

/* Rows, entries and skip entries a tree needs. */
static void count_tree(const tsm_tree *tr, uint32_t *lo, uint32_t *hi, uint64_t *rows, uint64_t *entries,
                       uint64_t *skips) {
    const uint32_t B = (tr->n_leaves + 7) / 8;
    tsm_tree_leaf_ranges(tr, lo, hi);
    *rows += B;
    for (uint32_t i = 0; i < tr->n_nodes; i++) {
        uint32_t a, b, ra, rb;
        left_leaves(&tr->nodes[i], lo, hi, &a, &b);
        const uint32_t z = node_rows(a, b, B, &ra, &rb);
        *skips += z != 0;
        *entries += z ? 0 : rb + 1 - ra;
    }
}

/* Float leaves: a copy of the n leaf values (and 64 more that kernels may read) as floats
 * where each is exactly a float (XGBoost's leaves, ONNX's weights: double(float(v)) == v,
 * which a NaN leaf fails), so that a kernel may look 16 of them up in registers and widen
 * them to the same doubles; else NULL (LightGBM's and scikit-learn's leaves are doubles). */
static float *float_leaves(const double *v, uint64_t n) {
    for (uint64_t i = 0; i < n; i++)
        if ((double)(float)v[i] != v[i]) return NULL;
    float *f = calloc((size_t)n + 64, sizeof *f);
    if (f)
        for (uint64_t i = 0; i < n; i++) f[i] = (float)v[i];
    return f;
}

/* ---- leaf order (rapid.h "Leaf order") ------------------------------------------------------ */

/* The trees reordered by the caller's sample rows: tree t's copy, and per node whether
 * its children were swapped (flip[node_first[t] + i]). All NULL: the model's own order. */
typedef struct rs_order {
    tsm_tree *trees;
    uint8_t *flip;
    uint64_t *node_first;
    uint32_t rows;      /* the sample rows counted */
    uint64_t n_flipped;
} rs_order;

static void order_free(rs_order *o, uint32_t n_trees) {
    for (uint32_t t = 0; o->trees && t < n_trees; t++) free(o->trees[t].nodes), free(o->trees[t].leaf_values);
    free(o->trees), free(o->flip), free(o->node_first);
    memset(o, 0, sizeof *o);
}

/* Sample rows the order is counted on: at most RS_ORDER_ROWS, fewer on big models (rows
 * times internal nodes at most RS_ORDER_WORK: 1,000 trees of 63 nodes count 256 rows,
 * 20,000 trees RS_ORDER_MIN_ROWS); fewer rows than that, no order. */
#define RS_ORDER_ROWS 256u
#define RS_ORDER_MIN_ROWS 64u
#define RS_ORDER_WORK (1u << 24)

/* The rows a group of RS_ORDER_GROUP documents is expected to build in a tree whose
 * leaf l is reached cnt[l] times out of n by the sample, leaf l numbered at[l] (NULL: l):
 * row r is built unless every document exits before it, sum over r of 1 - F(r - 1)^G,
 * F the fraction exiting in rows up to r (the documents taken as independent). */
#define RS_ORDER_GROUP 64
static double expected_rows(const double *cnt, const uint32_t *at, uint32_t n_leaves, double n, double *row_cnt) {
    const uint32_t B = (n_leaves + 7) / 8;
    memset(row_cnt, 0, (size_t)B * sizeof *row_cnt);
    for (uint32_t l = 0; l < n_leaves; l++) row_cnt[(at ? at[l] : l) / 8] += cnt[l];
    double e = 0, below = 0;
    for (uint32_t r = 0; r < B; r++) {
        e += 1.0 - pow(below / n, RS_ORDER_GROUP);
        below += row_cnt[r];
    }
    return e;
}

/* Tree tr reordered into *out (nodes and leaf values; its other fields tr's): node i's
 * children swapped (flip[i] = 1) where its second subtree's leaves are reached more often
 * per leaf than its first's by the rows (cnt: each leaf's count, n rows), then the leaves
 * renumbered left to right; kept as it was (no flip) unless that saves a group of
 * RS_ORDER_GROUP documents RS_ORDER_SAVE rows or more (XGBoost's depth-wise trees,
 * whose every leaf is reached: reordered they measured up to 1.15x slower at 1,000 rows,
 * each swapped node's complement codes for nothing). *saved: the rows saved. 0: out of
 * memory. */
#define RS_ORDER_SAVE 0.25
static int order_tree(const tsm_tree *tr, const double *cnt, double n_rows, tsm_tree *out, uint8_t *flip,
                      double *saved) {
    const uint32_t n = tr->n_nodes, nl = tr->n_leaves;
    double *mass = malloc(((size_t)n + 1) * sizeof *mass), *size = malloc(((size_t)n + 1) * sizeof *size);
    uint32_t *id = malloc((size_t)nl * sizeof *id);
    int32_t *stack = malloc(((size_t)n + 2) * sizeof *stack);
    double *row_cnt = malloc(((size_t)nl / 8 + 1) * sizeof *row_cnt);
    *out = *tr;
    out->nodes = malloc(((size_t)n + 1) * sizeof *out->nodes);
    out->leaf_values = malloc((size_t)nl * sizeof *out->leaf_values);
    out->thresholds_d = NULL; /* (the nodes' codes come from tr: the same node numbers) */
    const int ok = mass && size && id && stack && row_cnt && out->nodes && out->leaf_values;
    *saved = 0;
    if (ok) {
        /* children are numbered after their parents (canonical trees): one pass upwards */
        for (uint32_t i = n; i-- > 0;) {
            const tsm_node *d = &tr->nodes[i];
            const double ma = d->left < 0 ? cnt[~d->left] : mass[d->left], na = d->left < 0 ? 1 : size[d->left];
            const double mb = d->right < 0 ? cnt[~d->right] : mass[d->right], nb = d->right < 0 ? 1 : size[d->right];
            mass[i] = ma + mb, size[i] = na + nb;
            flip[i] = mb * na > ma * nb; /* mb / nb > ma / na; equal (unreached subtrees): kept */
            out->nodes[i] = *d;
            if (flip[i]) out->nodes[i].left = d->right, out->nodes[i].right = d->left;
        }
        /* the new left-to-right numbers: depth first, the first child first */
        uint32_t next = 0, sp = 0;
        stack[sp++] = n ? 0 : ~0;
        while (sp) {
            const int32_t c = stack[--sp];
            if (c < 0) {
                id[~c] = next++;
                continue;
            }
            stack[sp++] = out->nodes[c].right;
            stack[sp++] = out->nodes[c].left;
        }
        for (uint32_t i = 0; i < n; i++) {
            tsm_node *d = &out->nodes[i];
            if (d->left < 0) d->left = ~(int32_t)id[~d->left];
            if (d->right < 0) d->right = ~(int32_t)id[~d->right];
        }
        *saved = expected_rows(cnt, NULL, nl, n_rows, row_cnt) - expected_rows(cnt, id, nl, n_rows, row_cnt);
        if (*saved >= RS_ORDER_SAVE || tsr_config_get()->rapid_order == 1)
            for (uint32_t l = 0; l < nl; l++) out->leaf_values[id[l]] = tr->leaf_values[l];
        else { /* the tree as it was */
            *saved = 0;
            memset(flip, 0, n);
            if (n) memcpy(out->nodes, tr->nodes, (size_t)n * sizeof *out->nodes);
            memcpy(out->leaf_values, tr->leaf_values, (size_t)nl * sizeof *out->leaf_values);
        }
    }
    free(mass), free(size), free(id), free(stack), free(row_cnt);
    return ok;
}

/* The order of m's trees by cfg's sample rows (rapid.h "Leaf order"), or none (o all
 * NULL): no sample, too few rows, or no memory (the model's order is as exact, only
 * slower). */
static void order_build(rs_order *o, const ts_model *m, const tse_config *cfg) {
    memset(o, 0, sizeof *o);
    uint64_t n_nodes = 0;
    uint32_t max_leaves = 1;
    for (uint32_t t = 0; t < m->n_trees; t++) {
        n_nodes += m->trees[t].n_nodes;
        if (m->trees[t].n_leaves > max_leaves) max_leaves = m->trees[t].n_leaves;
    }
    size_t rows = cfg->sample && cfg->sample_stride >= m->n_features ? cfg->sample_rows : 0;
    const uint64_t budget = RS_ORDER_WORK / (n_nodes + 1);
    if (rows > RS_ORDER_ROWS) rows = RS_ORDER_ROWS;
    if (rows > budget) rows = budget > RS_ORDER_MIN_ROWS ? (size_t)budget : RS_ORDER_MIN_ROWS;
    if (rows < RS_ORDER_MIN_ROWS || !n_nodes) return;
    o->node_first = malloc(((size_t)m->n_trees + 1) * sizeof *o->node_first);
    o->flip = calloc((size_t)n_nodes + 1, 1);
    o->trees = calloc(m->n_trees, sizeof *o->trees);
    double *cnt = malloc((size_t)max_leaves * sizeof *cnt);
    int ok = o->node_first && o->flip && o->trees && cnt;
    uint64_t at = 0;
    for (uint32_t t = 0; ok && t < m->n_trees; t++) {
        const tsm_tree *tr = &m->trees[t];
        o->node_first[t] = at;
        memset(cnt, 0, (size_t)tr->n_leaves * sizeof *cnt);
        for (size_t r = 0; r < rows; r++) cnt[tsm_tree_exit_leaf(tr, cfg->sample + r * cfg->sample_stride)] += 1;
        double saved = 0;
        ok = order_tree(tr, cnt, (double)rows, &o->trees[t], o->flip + at, &saved);
        for (uint32_t i = 0; ok && i < tr->n_nodes; i++) o->n_flipped += o->flip[at + i];
        at += tr->n_nodes;
    }
    free(cnt);
    o->rows = (uint32_t)rows;
    if (!ok || !o->n_flipped) order_free(o, m->n_trees);
}

/* Tree t as the layout is built from: its reordered copy, or the model's. */
static const tsm_tree *order_tree_of(const rs_order *o, const ts_model *m, uint32_t t) {
    return o->trees ? &o->trees[t] : &m->trees[t];
}

static ts_status rsl_build(rsl *L, const ts_model *m, const tse_config *cfg, const rs_kernels *k, ts_error *err) {
    memset(L, 0, sizeof *L);
    uint32_t max_leaves = 1, max_nodes = 0;
    uint64_t n_nodes = 0, n_leaves = 0, n_rows = 0, n_entries = 0, n_skips = 0;
    for (uint32_t t = 0; t < m->n_trees; t++) {
        if (m->trees[t].n_leaves > max_leaves) max_leaves = m->trees[t].n_leaves;
        if (m->trees[t].n_nodes > max_nodes) max_nodes = m->trees[t].n_nodes;
        n_nodes += m->trees[t].n_nodes;
        n_leaves += m->trees[t].n_leaves;
    }
    if ((max_leaves + 7) / 8 > RS_MAX_BYTES)
        return ts_fail(err, TS_ERR_UNSUPPORTED, "rapid: a tree has %u leaves, more than the %u rapid supports",
                       max_leaves, RS_MAX_BYTES * 8);
    uint32_t *lo = malloc(((size_t)max_nodes + 1) * sizeof *lo), *hi = malloc(((size_t)max_nodes + 1) * sizeof *hi);
    const size_t max_rows = (size_t)(max_leaves + 7) / 8;
    uint32_t *count = malloc(2 * (max_rows + 1) * sizeof *count), *comp_of = NULL;
    ts_status st = lo && hi && count ? TS_OK : ts_fail(err, TS_ERR_NO_MEMORY, "rapid: out of memory");
    /* the leaf order where the model's rows average RS_PAD_MEAN entries or more (rapid.h
     * "Leaf order": XGBoost's trees, fewer and more skip entries a row, measured slower
     * ordered) */
    rs_order ord = {0};
    uint64_t rows0 = 0, entries0 = 0, skips0 = 0;
    for (uint32_t t = 0; st == TS_OK && t < m->n_trees; t++) count_tree(&m->trees[t], lo, hi, &rows0, &entries0, &skips0);
    const unsigned knob = tsr_config_get()->rapid_order;
    if (st == TS_OK && knob != 2 && (knob == 1 || entries0 >= (uint64_t)RS_PAD_MEAN * rows0)) order_build(&ord, m, cfg);
    for (uint32_t t = 0; st == TS_OK && t < m->n_trees; t++)
        count_tree(order_tree_of(&ord, m, t), lo, hi, &n_rows, &n_entries, &n_skips);
    if (st == TS_OK && (n_entries >= UINT32_MAX || n_skips >= UINT32_MAX || n_rows >= UINT32_MAX || n_leaves >= UINT32_MAX))
        st = ts_fail(err, TS_ERR_LIMIT, "rapid: the model has more than 2^32 rows, entries or leaves");
    if (st == TS_OK) st = tsq_build_f64(&L->tables.q, m, err); /* double codes where the model compares doubles */
    if (st == TS_OK) {
        L->base_score = m->base_score;
        L->n_trees = m->n_trees;
        L->n_nodes = n_nodes;
        L->n_entries = n_entries;
        L->n_skips = n_skips;
        L->max_bytes = (max_leaves + 7) / 8;
        L->tables.flip = k->flip ? 0x80u : 0;
        L->lanes = k->lanes;
        L->tau = block_trees(L, cfg);
        L->n_blocks = (m->n_trees + L->tau - 1) / L->tau;
        L->blocks = calloc((size_t)L->n_blocks + 1, sizeof *L->blocks);
        L->tree_row = malloc(((size_t)m->n_trees + 1) * sizeof *L->tree_row);
        L->row_first = malloc(((size_t)n_rows + 1) * sizeof *L->row_first);
        L->entries = malloc(((size_t)n_entries + 1) * sizeof *L->entries);
        L->skip_first = malloc(((size_t)n_rows + 1) * sizeof *L->skip_first);
        L->skips = malloc(((size_t)n_skips + 1) * sizeof *L->skips);
        L->leaves = calloc((size_t)n_leaves + 64, sizeof *L->leaves); /* kernels may read 64 from any tree's */
        L->leaf_offset = malloc(((size_t)m->n_trees + 1) * sizeof *L->leaf_offset);
        L->comp = malloc(((size_t)L->tables.q.n_slots + 1) * sizeof *L->comp);
        comp_of = malloc(((size_t)L->tables.q.n_slots + 1) * sizeof *comp_of);
        if (!L->comp || !comp_of || !L->blocks || !L->tree_row || !L->row_first || !L->entries || !L->skip_first ||
            !L->skips || !L->leaves || !L->leaf_offset)
            st = ts_fail(err, TS_ERR_NO_MEMORY, "rapid: out of memory preparing %u trees", m->n_trees);
    }
    if (st == TS_OK) {
        uint32_t row = 0;
        uint64_t at = 0, at_skip = 0;
        memset(comp_of, 0xFF, ((size_t)L->tables.q.n_slots + 1) * sizeof *comp_of);
        for (uint32_t t = 0; t < m->n_trees; t++) {
            L->tree_row[t] = row;
            build_tree(L, order_tree_of(&ord, m, t), &m->trees[t], ord.trees ? ord.flip + ord.node_first[t] : NULL,
                       comp_of, row, &at, &at_skip, lo, hi, count, count + max_rows + 1);
            row += (m->trees[t].n_leaves + 7) / 8;
        }
        L->tree_row[m->n_trees] = row;
        L->row_first[row] = (uint32_t)at;
        L->skip_first[row] = (uint32_t)at_skip;
        for (uint32_t b = 0; b < L->n_blocks; b++) {
            L->blocks[b].first_tree = b * L->tau;
            L->blocks[b].n_trees = m->n_trees - b * L->tau < L->tau ? m->n_trees - b * L->tau : L->tau;
        }
        tsm_model_weighted_leaves(m, L->leaves, L->leaf_offset);
        if (ord.trees) /* the same products, in the trees' new leaf order */
            for (uint32_t t = 0; t < m->n_trees; t++)
                for (uint32_t l = 0; l < m->trees[t].n_leaves; l++)
                    L->leaves[L->leaf_offset[t] + l] = ord.trees[t].weight * ord.trees[t].leaf_values[l];
        if (max_leaves <= 64) L->leaves_f = float_leaves(L->leaves, n_leaves);
        if (ord.trees) L->order_rows = ord.rows, L->n_flipped = ord.n_flipped;
    }
    order_free(&ord, m->n_trees);
    free(comp_of);
    free(lo);
    free(hi);
    free(count);
    if (st != TS_OK) rsl_free(L);
    return st;
}

/* ---- pairs (rapid.h "Pairs") -------------------------------------------------------------- */

/* The pair of trees t and t + 1 (n = 2) or the single tree t (n = 1): its pair rows, 0
 * when it stays single. */
static uint32_t pair_rows(const rsl *L, uint32_t t, uint32_t n) {
    if (n < 2) return 0;
    const uint32_t na = L->tree_row[t + 1] - L->tree_row[t], nb = L->tree_row[t + 2] - L->tree_row[t + 1];
    if (na > RS_SKIP_ROWS || nb > RS_SKIP_ROWS) return 0;
    return na > nb ? na : nb;
}

/* [*a, *b) of tree t's row j in `first` (row_first or skip_first), empty past its rows. */
static void tree_row_span(const rsl *L, const uint32_t *first, uint32_t t, uint32_t j, uint32_t *a, uint32_t *b) {
    const uint32_t r = L->tree_row[t] + j;
    *a = *b = 0;
    if (r < L->tree_row[t + 1]) *a = first[r], *b = first[r + 1];
}

static uint32_t max_u32(uint32_t a, uint32_t b) { return a > b ? a : b; }

/* A pair entry of A's entry ea and B's entry eb (either NULL: a no-op, mask 0xFF; its
 * k + 1 is 0, which no code passes, so that the mask alone keeps the row), for the pair
 * codes ("Pairs": slot * RS_PAIR_SLOT, signed compares). */
static rs_pair pair_entry(const rsl *L, const rs_entry *ea, const rs_entry *eb) {
    const uint32_t flip = L->tables.flip;
    const rs_entry none = {ea ? ea->off : eb->off, 0x01010101u * flip, 0xFFFFFFFFu};
    if (!ea) ea = &none;
    if (!eb) eb = &none;
    const uint32_t ka = (ea->k4 ^ flip ^ 0x80u) & 0xFFu, kb = (eb->k4 ^ flip ^ 0x80u) & 0xFFu;
    const uint32_t ma = ea->m4 & 0xFFu, mb = eb->m4 & 0xFFu;
    return (rs_pair){{ea->off / L->lanes * RS_PAIR_SLOT, eb->off / L->lanes * RS_PAIR_SLOT + RS_PAIR_SLOT / 2},
                     (ka | kb << 8) * 0x10001u,
                     (ma | mb << 8) * 0x10001u};
}

/* A no-op pair entry (mask 0xFF in every lane; codes that are always written) and skip
 * (z 0), the padding of padded pair rows. */
static const rs_pair pair_noop = {{0, RS_PAIR_SLOT / 2}, 0, 0xFFFFFFFFu};

/* Pair p's rows from pair row `row`, entry *at and skip *at_skip on (count: 1 counts;
 * *row_max, when not NULL, gets the most entries of a row before padding). With
 * P->padded, every row has RS_PAD_ENTRIES entries and at least RS_PAD_SKIPS
 * skips, the no-ops last. */
static void fill_pair(rsl *L, const rs_ptree *p, uint64_t *at, uint64_t *at_skip, int count, uint32_t *row_max) {
    rs_pairs *P = &L->pairs;
    const uint32_t ta = p->tree, tb = p->tree + 1;
    for (uint32_t j = 0; j < p->n_rows; j++) {
        uint32_t a0, a1, b0, b1, s0, s1, u0, u1;
        tree_row_span(L, L->row_first, ta, j, &a0, &a1);
        tree_row_span(L, L->row_first, tb, j, &b0, &b1);
        tree_row_span(L, L->skip_first, ta, j, &s0, &s1);
        tree_row_span(L, L->skip_first, tb, j, &u0, &u1);
        const uint32_t ne0 = max_u32(a1 - a0, b1 - b0), ns0 = max_u32(s1 - s0, u1 - u0);
        const uint32_t ne = P->padded ? RS_PAD_ENTRIES : ne0;
        const uint32_t ns = P->padded ? max_u32(ns0, RS_PAD_SKIPS) : ns0;
        if (row_max) *row_max = max_u32(*row_max, ne0);
        if (!count) {
            P->row_first[p->row + j] = (uint32_t)*at;
            P->skip_first[p->row + j] = (uint32_t)*at_skip;
            for (uint32_t i = 0; i < ne; i++)
                P->entries[*at + i] = i >= ne0 ? pair_noop
                                               : pair_entry(L, a0 + i < a1 ? &L->entries[a0 + i] : NULL,
                                                            b0 + i < b1 ? &L->entries[b0 + i] : NULL);
            for (uint32_t i = 0; i < ns; i++) {
                const rs_skip *sa = s0 + i < s1 ? &L->skips[s0 + i] : NULL, *sb = u0 + i < u1 ? &L->skips[u0 + i] : NULL;
                P->skips[*at_skip + i] =
                    i >= ns0 ? (rs_pair_skip){pair_noop, 0}
                             : (rs_pair_skip){pair_entry(L, sa ? &sa->e : NULL, sb ? &sb->e : NULL),
                                              ((sa ? sa->z4 & 0xFFu : 0) | (sb ? sb->z4 & 0xFFu : 0) << 8) * 0x10001u};
            }
        }
        *at += ne;
        *at_skip += ns;
    }
}

/* Every pair of the layout counted: *n_trees ptrees, *n_rows rows, *n_entries entries,
 * *n_skips skips (as P->padded says), *row_max (when not NULL) as fill_pair. */
static void count_pairs(rsl *L, uint64_t *n_trees, uint64_t *n_rows, uint64_t *n_entries, uint64_t *n_skips,
                        uint32_t *row_max) {
    *n_trees = *n_rows = *n_entries = *n_skips = 0;
    for (uint32_t b = 0; b < L->n_blocks; b++)
        for (uint32_t t = L->blocks[b].first_tree, end = t + L->blocks[b].n_trees; t < end; t += 2) {
            const rs_ptree p = {t, end - t < 2 ? 1 : 2, 0, pair_rows(L, t, end - t < 2 ? 1 : 2)};
            fill_pair(L, &p, n_entries, n_skips, 1, row_max);
            *n_rows += p.n_rows;
            ++*n_trees;
        }
}

/* Whether the pair rows, or the one-tree rows, are padded (rapid.h "Padded rows"; of
 * n_rows rows holding n_entries entries, at most row_max each): where no row has more than
 * RS_PAD_ENTRIES entries and the rows hold RS_PAD_MEAN entries or more on
 * average (padding costs a third more entries at most; XGBoost's depth-wise trees, rows
 * of 5.3 entries on average, measured no faster padded); TREESCORE_RAPID_PAD_ROWS
 * (tests) 1 forces it where the rows allow, 2 forbids it. */
static int pad_rows(uint64_t n_rows, uint64_t n_entries, uint32_t row_max) {
    if (!n_entries || row_max > RS_PAD_ENTRIES || tsr_config_get()->rapid_pad_rows == 2) return 0;
    return tsr_config_get()->rapid_pad_rows == 1 || n_entries >= (uint64_t)RS_PAD_MEAN * n_rows;
}

/* The pair layout from the built one (rapid.h "Pairs"): counted, then filled. A failed
 * allocation leaves none (calls then take the one-tree path) and reports nothing. */
static void rsl_build_pairs(rsl *L) {
    rs_pairs *P = &L->pairs;
    uint64_t n_trees, n_rows, n_entries, n_skips;
    uint32_t row_max = 0;
    count_pairs(L, &n_trees, &n_rows, &n_entries, &n_skips, &row_max);
    if (pad_rows(n_rows, n_entries, row_max)) {
        P->padded = 1;
        count_pairs(L, &n_trees, &n_rows, &n_entries, &n_skips, NULL);
    }
    if (n_entries >= UINT32_MAX || n_skips >= UINT32_MAX || n_rows >= UINT32_MAX) {
        P->padded = 0;
        return;
    }
    P->block_first = malloc(((size_t)L->n_blocks + 1) * sizeof *P->block_first);
    P->trees = malloc((size_t)(n_trees + 1) * sizeof *P->trees);
    P->row_first = malloc((size_t)(n_rows + 1) * sizeof *P->row_first);
    P->skip_first = malloc((size_t)(n_rows + 1) * sizeof *P->skip_first);
    P->entries = malloc((size_t)(n_entries + 1) * sizeof *P->entries);
    P->skips = malloc((size_t)(n_skips + 1) * sizeof *P->skips);
    if (!P->block_first || !P->trees || !P->row_first || !P->skip_first || !P->entries || !P->skips) {
        free(P->block_first), free(P->trees), free(P->row_first), free(P->skip_first), free(P->entries), free(P->skips);
        memset(P, 0, sizeof *P);
        return;
    }
    uint32_t np = 0, row = 0;
    uint64_t at = 0, at_skip = 0;
    for (uint32_t b = 0; b < L->n_blocks; b++) {
        P->block_first[b] = np;
        for (uint32_t t = L->blocks[b].first_tree, end = t + L->blocks[b].n_trees; t < end; t += 2) {
            const uint32_t n = end - t < 2 ? 1 : 2;
            rs_ptree *p = &P->trees[np++];
            *p = (rs_ptree){t, n, row, pair_rows(L, t, n)};
            fill_pair(L, p, &at, &at_skip, 0, NULL);
            row += p->n_rows;
        }
    }
    P->block_first[L->n_blocks] = np;
    P->row_first[row] = (uint32_t)at;
    P->skip_first[row] = (uint32_t)at_skip;
}

/* The one-tree rows padded (rapid.h rs_padded), from the built layout, where
 * pad_rows says so of its rows (those of trees of at most RS_SKIP_ROWS rows). A
 * failed allocation leaves none and reports nothing. */
static void rsl_build_padded(rsl *L) {
    uint64_t n_rows = 0, n_entries = 0, n_skips = 0;
    uint32_t row_max = 0;
    for (uint32_t t = 0; t < L->n_trees; t++) {
        const uint32_t r0 = L->tree_row[t], nr = L->tree_row[t + 1] - r0;
        if (nr > RS_SKIP_ROWS) continue;
        for (uint32_t r = r0; r < r0 + nr; r++) {
            const uint32_t ne = L->row_first[r + 1] - L->row_first[r], ns = L->skip_first[r + 1] - L->skip_first[r];
            row_max = max_u32(row_max, ne);
            n_entries += ne;
            n_skips += max_u32(ns, RS_PAD_SKIPS);
            n_rows++;
        }
    }
    const uint64_t all_rows = L->tree_row[L->n_trees];
    if (!pad_rows(n_rows, n_entries, row_max) || all_rows * RS_PAD_ENTRIES >= UINT32_MAX || n_skips >= UINT32_MAX)
        return;
    rs_padded *D = &L->pad;
    D->entries = malloc((size_t)(all_rows * RS_PAD_ENTRIES + 1) * sizeof *D->entries);
    D->skips = malloc((size_t)(n_skips + 1) * sizeof *D->skips);
    D->skip_first = malloc((size_t)(all_rows + 1) * sizeof *D->skip_first);
    if (!D->entries || !D->skips || !D->skip_first) {
        free(D->entries), free(D->skips), free(D->skip_first);
        memset(D, 0, sizeof *D);
        return;
    }
    const rs_entry noop = {0, 0, 0xFFFFFFFFu};
    uint32_t at_skip = 0;
    for (uint32_t t = 0; t < L->n_trees; t++) {
        const uint32_t r0 = L->tree_row[t], nr = L->tree_row[t + 1] - r0;
        for (uint32_t r = r0; r < r0 + nr; r++) {
            D->skip_first[r] = at_skip;
            const uint32_t e0 = L->row_first[r], ne = L->row_first[r + 1] - e0;
            const uint32_t s0 = L->skip_first[r], ns = L->skip_first[r + 1] - s0;
            for (uint32_t i = 0; i < RS_PAD_ENTRIES; i++)
                D->entries[(size_t)r * RS_PAD_ENTRIES + i] = nr <= RS_SKIP_ROWS && i < ne ? L->entries[e0 + i] : noop;
            if (nr > RS_SKIP_ROWS) continue; /* (the wide path's rows: empty here) */
            for (uint32_t i = 0; i < max_u32(ns, RS_PAD_SKIPS); i++)
                D->skips[at_skip++] = i < ns ? L->skips[s0 + i] : (rs_skip){noop, 0};
        }
    }
    D->skip_first[all_rows] = at_skip;
}

/* ---- the engine ------------------------------------------------------------------------- */

/* One kernel for every batch size: a group of lanes holding one document costs about
 * what a full group costs, so rapid is slow on tiny batches (the planner times it at the
 * caller's batch size and picks another engine there), but the scalar kernel was slower
 * still (msn-lgb-1000x64, AVX2: one row 250 us against vqs's 28). */
typedef struct rapid_state {
    rsl L;
    uint32_t delta;
    rs_kernel kernel;
    rs_kernel_f64 kernel_f64;
    rs_kernel_f64 kernel_near; /* double rows of a model that compares floats; else NULL */
} rapid_state;

static void rapid_free(void *p) {
    rapid_state *s = p;
    if (!s) return;
    rsl_free(&s->L);
    free(s);
}

#ifdef TSK_X86
/* The GFNI kernel where the CPU has GFNI and TREESCORE_RAPID_UPDATE says gfni, or says
 * nothing (nor "and") and the CPU is Intel's: rapid_avx512.c says why. */
static int rs_use_gfni(void) {
    const uint32_t f = tsr_cpu_features();
    const char *u = tsr_config_get()->rapid_update;
    if (!(f & TSR_CPU_GFNI)) return 0;
    if (u && strcmp(u, "gfni") == 0) return 1;
    if (u && strcmp(u, "and") == 0) return 0;
    return (f & TSR_CPU_INTEL) != 0;
}
#endif

const rs_kernels *rs_kernels_for(ts_isa isa) {
#ifdef TSK_X86
    return tsk_rapid(isa, rs_use_gfni);
#else
    return tsk_rapid(isa, NULL);
#endif
}

/* The quantizer of rs_kernels_for(isa) (quant.h), for the coder (coder.h). */
tsq_quantizer_kind tsq_quantizer_for(ts_isa isa) {
    const rs_kernels *k = rs_kernels_for(isa);
    return (tsq_quantizer_kind){k->isa, k->lanes, k->flip ? 0x80u : 0, k->quantize, k->quantize_near};
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
    const rs_kernels *k = rs_kernels_for(cfg->isa);
    rapid_state *s = calloc(1, sizeof *s);
    if (!s) return ts_fail(err, TS_ERR_NO_MEMORY, "rapid: out of memory");
    ts_status st = rsl_build(&s->L, m, cfg, k, err);
    if (st != TS_OK) {
        free(s);
        return st;
    }
    if (k->pair_lanes) rsl_build_pairs(&s->L);
    rsl_build_padded(&s->L);
    if (s->L.order_rows)
        tsr_note(TSR_NOTE_INFO, "rapid: leaves ordered by %u sample rows (%llu of %llu nodes' children swapped, %u "
                 "complement codes)", s->L.order_rows, (unsigned long long)s->L.n_flipped,
                 (unsigned long long)s->L.n_nodes, s->L.n_comp);
    s->delta = block_docs(cfg, k->lanes);
    s->kernel = k->kernel;
    s->kernel_f64 = k->kernel_f64;
    s->kernel_near = m->compares_double ? NULL : k->kernel_near;
    size_t scratch = rs_scratch_parts(&s->L, s->delta, k->lanes).total;
    size_t chunk = (size_t)(1u << 22) / (s->L.n_nodes + 1) + 1;
    if (chunk < 4 * k->lanes) chunk = 4 * k->lanes; /* the kernel scores 4 groups at once */
    *layout = (tse_layout){k->isa, s->L.tau, s->delta, scratch, chunk, k->lanes};
    *out = s;
    return TS_OK;
}

static void rapid_score(const void *p, const float *x, size_t n_rows, size_t stride, double *out, void *scratch) {
    const rapid_state *s = p;
    s->kernel(&s->L, s->delta, x, n_rows, stride, out, scratch);
}

/* Double rows under double codes (quant.h "Double codes"): the kernel's double
 * quantizer, then the same kernel. Double rows of a model that converts its input to
 * float32 (XGBoost, scikit-learn, ONNX) where the ISA's kernel has kernel_near: each
 * value converted to the nearest float in the quantizer, as the library converts it.
 * 0 otherwise (a model comparing doubles whose float thresholds are out of step with its
 * doubles, or the scalar kernel): the scorer rounds the rows into a buffer first. */
static int rapid_score_f64(const void *p, const double *x, size_t n_rows, size_t stride, double *out, void *scratch) {
    const rapid_state *s = p;
    if (s->L.tables.q.doubles)
        s->kernel_f64(&s->L, s->delta, x, n_rows, stride, out, scratch);
    else if (s->kernel_near)
        s->kernel_near(&s->L, s->delta, x, n_rows, stride, out, scratch);
    else
        return 0;
    return 1;
}

/* The planner times rapid on models where quantizing a document costs little beside
 * scoring it (tse_model_big) and whose trees are not so wide that rows of leaves lose
 * (tse_plan_bitvectors). */
static int rapid_plan_candidate(const ts_model *m, const tse_config *cfg) {
    (void)cfg;
    return tse_model_big(m) && tse_plan_bitvectors(m);
}

const tse_engine tse_engine_rapid = {
    .id = TS_ENGINE_RAPID, .name = "rapid", .prepare = rapid_prepare, .score = rapid_score, .free = rapid_free,
    .plan_candidate = rapid_plan_candidate, .score_f64 = rapid_score_f64,
};
