/* vpred_layout.c: builds the VPred node arrays and key columns, turns rows into keys, and runs the branch-free kernel. */
#include "engines/common/vpred_layout.h"

#include <stdlib.h>
#include <string.h>

#include "common/distinct.h"
#include "common/error.h"
#include "platform/cpu_caches.h"

#if defined(__GNUC__) || defined(__clang__)
#define VPL_ALWAYS_INLINE static inline __attribute__((always_inline))
#else
#define VPL_ALWAYS_INLINE static inline
#endif

#if defined(__clang__)
#define VPL_UNROLL _Pragma("clang loop unroll(full)")
#elif defined(__GNUC__)
#define VPL_UNROLL _Pragma("GCC unroll 64")
#else
#define VPL_UNROLL
#endif

/* Makes the compiler keep p in a register as it is: GCC otherwise folds a tree's base
 * index into every node address (nodes + (base + i) * 8: two more instructions per
 * step) instead of indexing one tree pointer. */
#if defined(__GNUC__) || defined(__clang__)
#define VPL_OPAQUE(p) __asm__("" : "+r"(p))
#else
#define VPL_OPAQUE(p) ((void)0)
#endif

/* ---- keys ------------------------------------------------------------------------- */

/* The order-preserving map of a non-NaN float to uint32: sign bit set for x >= +0.0,
 * every bit flipped for negatives. x + 0.0f turns -0.0 into +0.0 (IEEE round to
 * nearest) so that the two zeros, equal as floats, get one key. */
static inline uint32_t key_of(float x) {
    x += 0.0f;
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u ^ ((0u - (u >> 31)) | 0x80000000u);
}

/* Column code: feature * 4 + rule, rule bit 0 = missing goes left, bit 1 = zero is
 * missing. Features are below TSM_MAX_FEATURES = 2^24, so codes fit 26 bits. */
static uint32_t column_code(const tsm_node *n) {
    uint32_t rule = ((n->flags & TSM_MISSING_LEFT) ? 1u : 0u) | ((n->flags & TSM_ZERO_IS_MISSING) ? 2u : 0u);
    return n->feature * 4u + rule;
}

/* The distinct column codes of all nodes, sorted (so that key rows read features in
 * ascending order). *codes_out is malloc'ed; NULL with n 0 when there are no nodes. */
static ts_status collect_codes(const ts_model *m, uint64_t n_internal, uint32_t **codes_out, uint32_t *n_out) {
    *codes_out = NULL;
    *n_out = 0;
    if (n_internal == 0) return TS_OK;
    uint32_t *codes = malloc((size_t)n_internal * sizeof *codes);
    if (!codes) return TS_ERR_NO_MEMORY;
    size_t k = 0;
    for (uint32_t t = 0; t < m->n_trees; t++)
        for (uint32_t i = 0; i < m->trees[t].n_nodes; i++) codes[k++] = column_code(&m->trees[t].nodes[i]);
    const size_t u = ts_distinct_u32(codes, k);
    if (u == SIZE_MAX) {
        free(codes);
        return TS_ERR_NO_MEMORY;
    }
    *codes_out = codes;
    *n_out = (uint32_t)u;
    return TS_OK;
}

static uint32_t column_of(const uint32_t *codes, uint32_t n, uint32_t code) {
    uint32_t lo = 0, hi = n; /* codes[lo..hi) holds code */
    while (hi - lo > 1) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (codes[mid] <= code) lo = mid;
        else hi = mid;
    }
    return lo;
}

static void fill_columns(vpl *L, const uint32_t *codes) {
    uint32_t zlo = key_of(-TSM_ZERO_RANGE), zhi = key_of(TSM_ZERO_RANGE);
    for (uint32_t c = 0; c < L->n_cols; c++) {
        uint32_t rule = codes[c] & 3u;
        L->cols[c].feature = codes[c] >> 2;
        L->cols[c].missing_key = (rule & 1u) ? 0u : UINT32_MAX;
        L->cols[c].zero_lo = (rule & 2u) ? zlo : 0u;
        L->cols[c].zero_span = (rule & 2u) ? zhi - zlo + 1u : 0u;
    }
}

/* ---- trees ------------------------------------------------------------------------ */

/* Per-tree work arrays of build_tree: the IR reference and level of every slot, and
 * the tree's nodes in the wide form. */
typedef struct bfs_work {
    int32_t *ref;
    uint32_t *level;
    vpl_node16 *tmp;
} bfs_work;

/* Lay tree `tr` out breadth first in w->tmp[0 .. 2 * n_leaves - 1) and its leaf values
 * in values[] at the same indices: slot 0 is the root, the children of an internal slot
 * take the next two free slots, so siblings are adjacent. Returns the depth (the level
 * of the last slot: levels never decrease). */
static uint32_t build_tree(const vpl *L, const uint32_t *codes, const tsm_tree *tr, double *values, bfs_work *w) {
    uint32_t n_slots = 2 * tr->n_leaves - 1, next = 1;
    w->ref[0] = tr->n_nodes ? 0 : -1;
    w->level[0] = 0;
    for (uint32_t s = 0; s < n_slots; s++) {
        int32_t ref = w->ref[s];
        if (ref < 0) {
            w->tmp[s] = (vpl_node16){UINT32_MAX, 0, s, 0};
            values[s] = tr->weight * tr->leaf_values[~ref];
            continue;
        }
        const tsm_node *n = &tr->nodes[ref];
        uint32_t c = column_of(codes, L->n_cols, column_code(n));
        w->tmp[s] = (vpl_node16){key_of(n->threshold), c * L->lanes, next, 0};
        values[s] = 0.0;
        w->ref[next] = n->left;
        w->ref[next + 1] = n->right;
        w->level[next] = w->level[next + 1] = w->level[s] + 1;
        next += 2;
    }
    return w->level[n_slots - 1];
}

static void store_tree(vpl *L, uint32_t base, uint32_t n_slots, const vpl_node16 *tmp) {
    if (!L->narrow) {
        memcpy((vpl_node16 *)L->nodes + base, tmp, n_slots * sizeof *tmp);
        return;
    }
    vpl_node8 *dst = (vpl_node8 *)L->nodes + base;
    for (uint32_t s = 0; s < n_slots; s++) dst[s] = (vpl_node8){tmp[s].thr, (uint16_t)tmp[s].col, (uint16_t)tmp[s].left};
}

static ts_status build_trees(vpl *L, const ts_model *m, const uint32_t *codes, uint32_t max_leaves) {
    bfs_work w;
    size_t max_slots = 2 * (size_t)max_leaves;
    w.ref = malloc(max_slots * sizeof *w.ref);
    w.level = malloc(max_slots * sizeof *w.level);
    w.tmp = malloc(max_slots * sizeof *w.tmp);
    ts_status st = w.ref && w.level && w.tmp ? TS_OK : TS_ERR_NO_MEMORY;
    uint32_t base = 0;
    for (uint32_t t = 0; st == TS_OK && t < m->n_trees; t++) {
        const tsm_tree *tr = &m->trees[t];
        uint32_t n_slots = 2 * tr->n_leaves - 1;
        L->trees[t].base = base;
        L->trees[t].depth = build_tree(L, codes, tr, L->values + base, &w);
        store_tree(L, base, n_slots, w.tmp);
        L->steps += L->trees[t].depth;
        base += n_slots;
    }
    free(w.ref);
    free(w.level);
    free(w.tmp);
    return st;
}

void vpl_free(vpl *L) {
    free(L->trees);
    free(L->nodes);
    free(L->values);
    free(L->cols);
    memset(L, 0, sizeof *L);
}

static ts_status alloc_layout(vpl *L) {
    size_t node_size = L->narrow ? sizeof(vpl_node8) : sizeof(vpl_node16);
    L->trees = malloc(((size_t)L->n_trees + 1) * sizeof *L->trees);
    L->nodes = malloc(((size_t)L->n_nodes + 1) * node_size);
    L->values = malloc(((size_t)L->n_nodes + 1) * sizeof *L->values);
    L->cols = malloc(((size_t)L->n_cols + 1) * sizeof *L->cols);
    return L->trees && L->nodes && L->values && L->cols ? TS_OK : TS_ERR_NO_MEMORY;
}

ts_status vpl_build(vpl *L, const ts_model *m, uint32_t lanes, const char *engine, ts_error *err) {
    memset(L, 0, sizeof *L);
    uint64_t n_internal = 0, n_leaves = 0;
    uint32_t max_leaves = 1;
    for (uint32_t t = 0; t < m->n_trees; t++) {
        n_internal += m->trees[t].n_nodes;
        n_leaves += m->trees[t].n_leaves;
        if (m->trees[t].n_leaves > max_leaves) max_leaves = m->trees[t].n_leaves;
    }
    if (n_internal + n_leaves >= UINT32_MAX)
        return ts_fail(err, TS_ERR_LIMIT, "%s: the model has more than 2^32 nodes and leaves", engine);
    L->base_score = m->base_score;
    L->n_trees = m->n_trees;
    L->n_nodes = n_internal + n_leaves;
    L->lanes = lanes < 1 ? 1 : lanes > VPL_MAX_LANES ? VPL_MAX_LANES : lanes;
    uint32_t *codes = NULL;
    ts_status st = collect_codes(m, n_internal, &codes, &L->n_cols);
    L->narrow = 2 * (uint64_t)max_leaves - 1 <= VPL_NARROW_MAX && (uint64_t)L->n_cols * L->lanes <= VPL_NARROW_MAX;
    if (st == TS_OK) st = alloc_layout(L);
    if (st == TS_OK) {
        fill_columns(L, codes);
        st = build_trees(L, m, codes, max_leaves);
    }
    free(codes);
    if (st != TS_OK) {
        vpl_free(L);
        return ts_fail(err, st, "%s: out of memory preparing %u trees", engine, m->n_trees);
    }
    return TS_OK;
}

size_t vpl_row_bytes(const vpl *L) { return (size_t)(L->n_cols ? L->n_cols : 1) * sizeof(uint32_t); }

/* vpl_keys of float rows, or of double rows (f64, a constant) each value converted to
 * the nearest float. */
static inline __attribute__((always_inline)) void keys_any(const vpl *L, const void *x, size_t n_rows, size_t stride,
                                                            uint32_t *keys, const int f64) {
    const uint32_t lanes = L->lanes, n_cols = L->n_cols, padded = vpl_padded(L, (uint32_t)n_rows);
    const vpl_column *cols = L->cols;
    for (size_t j = 0; j < n_rows; j++) {
        const float *row = (const float *)x + j * stride;
        const double *row_d = (const double *)x + j * stride;
        uint32_t *dst = keys + j;
        for (uint32_t c = 0; c < n_cols; c++, dst += lanes) {
            const vpl_column *col = &cols[c];
            float v = f64 ? (float)row_d[col->feature] : row[col->feature];
            uint32_t k = key_of(v);
            /* all ones when v is missing for this column (no branch: NaN may be common) */
            uint32_t missing = 0u - ((uint32_t)(v != v) | (uint32_t)(k - col->zero_lo < col->zero_span));
            *dst = (k & ~missing) | (col->missing_key & missing);
        }
    }
    /* Lanes scored only to be dropped (see vpl_run) get lane 0's keys. */
    for (uint32_t j = (uint32_t)n_rows; j < padded; j++)
        for (uint32_t c = 0; c < L->n_cols; c++) keys[(size_t)c * lanes + j] = keys[(size_t)c * lanes];
}

void vpl_keys(const vpl *L, const float *x, size_t n_rows, size_t stride, uint32_t *keys) {
    keys_any(L, x, n_rows, stride, keys, 0);
}

void vpl_keys_f64(const vpl *L, const double *x, size_t n_rows, size_t stride, uint32_t *keys) {
    keys_any(L, x, n_rows, stride, keys, 1);
}

/* ---- the kernel ------------------------------------------------------------------- */

/*
 * The kernels are ordinary functions specialized by constant arguments (xxHash's style):
 * `narrow` picks the node type (vpl_node8 or vpl_node16), `unroll` whether the lane
 * loops are unrolled, and the lane count n is a constant in the instances below, so
 * that the lane loops unroll and idx[] lives in registers.
 */

/* The nodes of the tree starting at node `base`. */
VPL_ALWAYS_INLINE const void *tree_nodes(const int narrow, const void *nodes, uint32_t base) {
    return narrow ? (const void *)((const vpl_node8 *)nodes + base) : (const void *)((const vpl_node16 *)nodes + base);
}

/* Node i of a tree: its key column, threshold and left child. */
VPL_ALWAYS_INLINE void node_at(const int narrow, const void *nd, uint32_t i, uint32_t *col, uint32_t *thr,
                               uint32_t *left) {
    if (narrow) {
        const vpl_node8 *p = (const vpl_node8 *)nd + i;
        *col = p->col, *thr = p->thr, *left = p->left;
    } else {
        const vpl_node16 *p = (const vpl_node16 *)nd + i;
        *col = p->col, *thr = p->thr, *left = p->left;
    }
}

/* One step down from node idx for the document whose keys start at k (lane 0's key of
 * a column at k[col]): the index of the child it goes to. */
VPL_ALWAYS_INLINE uint32_t step(const int narrow, const void *nd, uint32_t idx, const uint32_t *k) {
    uint32_t col, thr, left;
    node_at(narrow, nd, idx, &col, &thr, &left);
    uint32_t right = k[col] > thr;
    return left + right;
}

/* n documents through trees [t0, t1). The depth loop runs the same count for every
 * document: its branch depends on the tree, not on the data. */
VPL_ALWAYS_INLINE void run_lanes(const int narrow, const int unroll, const vpl *L, uint32_t t0, uint32_t t1,
                                 const uint32_t *restrict keys, uint32_t n, double *restrict out) {
    double acc[VPL_MAX_LANES];
    uint32_t idx[VPL_MAX_LANES];
    const void *restrict nodes = L->nodes;
    const double *restrict values = L->values;
    for (uint32_t j = 0; j < n; j++) acc[j] = out[j];
    for (uint32_t t = t0; t < t1; t++) {
        const void *nd = tree_nodes(narrow, nodes, L->trees[t].base);
        VPL_OPAQUE(nd);
        const uint32_t depth = L->trees[t].depth;
        /* Step 1 from the root, which all lanes share (a leaf root: depth 0). */
        uint32_t root_col, root_thr, root_left;
        node_at(narrow, nd, 0, &root_col, &root_thr, &root_left);
        for (uint32_t j = 0; j < n; j++) idx[j] = depth ? root_left + ((keys + j)[root_col] > root_thr) : 0;
        for (uint32_t s = 1; s < depth; s++) {
            if (unroll) {
                VPL_UNROLL for (uint32_t j = 0; j < n; j++) idx[j] = step(narrow, nd, idx[j], keys + j);
            } else {
                for (uint32_t j = 0; j < n; j++) idx[j] = step(narrow, nd, idx[j], keys + j);
            }
        }
        const double *v = values + L->trees[t].base;
        VPL_OPAQUE(v);
        for (uint32_t j = 0; j < n; j++) acc[j] += v[idx[j]];
    }
    for (uint32_t j = 0; j < n; j++) out[j] = acc[j];
}

typedef void (*vpl_fixed_fn)(const vpl *L, uint32_t t0, uint32_t t1, const uint32_t *keys, double *out);

/* The instances of 1, 2, 4, 8, 16 and 32 lanes, for each node type. */
static void run_1_narrow(const vpl *L, uint32_t t0, uint32_t t1, const uint32_t *keys, double *out) {
    run_lanes(1, 1, L, t0, t1, keys, 1, out);
}
static void run_2_narrow(const vpl *L, uint32_t t0, uint32_t t1, const uint32_t *keys, double *out) {
    run_lanes(1, 1, L, t0, t1, keys, 2, out);
}
static void run_4_narrow(const vpl *L, uint32_t t0, uint32_t t1, const uint32_t *keys, double *out) {
    run_lanes(1, 1, L, t0, t1, keys, 4, out);
}
static void run_8_narrow(const vpl *L, uint32_t t0, uint32_t t1, const uint32_t *keys, double *out) {
    run_lanes(1, 1, L, t0, t1, keys, 8, out);
}
static void run_16_narrow(const vpl *L, uint32_t t0, uint32_t t1, const uint32_t *keys, double *out) {
    run_lanes(1, 1, L, t0, t1, keys, 16, out);
}
static void run_32_narrow(const vpl *L, uint32_t t0, uint32_t t1, const uint32_t *keys, double *out) {
    run_lanes(1, 1, L, t0, t1, keys, 32, out);
}
static void run_1_wide(const vpl *L, uint32_t t0, uint32_t t1, const uint32_t *keys, double *out) {
    run_lanes(0, 1, L, t0, t1, keys, 1, out);
}
static void run_2_wide(const vpl *L, uint32_t t0, uint32_t t1, const uint32_t *keys, double *out) {
    run_lanes(0, 1, L, t0, t1, keys, 2, out);
}
static void run_4_wide(const vpl *L, uint32_t t0, uint32_t t1, const uint32_t *keys, double *out) {
    run_lanes(0, 1, L, t0, t1, keys, 4, out);
}
static void run_8_wide(const vpl *L, uint32_t t0, uint32_t t1, const uint32_t *keys, double *out) {
    run_lanes(0, 1, L, t0, t1, keys, 8, out);
}
static void run_16_wide(const vpl *L, uint32_t t0, uint32_t t1, const uint32_t *keys, double *out) {
    run_lanes(0, 1, L, t0, t1, keys, 16, out);
}
static void run_32_wide(const vpl *L, uint32_t t0, uint32_t t1, const uint32_t *keys, double *out) {
    run_lanes(0, 1, L, t0, t1, keys, 32, out);
}

static const vpl_fixed_fn fixed_narrow[6] = {run_1_narrow, run_2_narrow, run_4_narrow,
                                             run_8_narrow, run_16_narrow, run_32_narrow};
static const vpl_fixed_fn fixed_wide[6] = {run_1_wide, run_2_wide, run_4_wide, run_8_wide, run_16_wide, run_32_wide};

/* Any lane count (not unrolled). */
static void run_any_narrow(const vpl *L, uint32_t t0, uint32_t t1, const uint32_t *keys, uint32_t n, double *out) {
    run_lanes(1, 0, L, t0, t1, keys, n, out);
}
static void run_any_wide(const vpl *L, uint32_t t0, uint32_t t1, const uint32_t *keys, uint32_t n, double *out) {
    run_lanes(0, 0, L, t0, t1, keys, n, out);
}

static int fixed_index(uint32_t n) {
    return n == 1 ? 0 : n == 2 ? 1 : n == 4 ? 2 : n == 8 ? 3 : n == 16 ? 4 : n == 32 ? 5 : -1;
}

/* The instance that scores the first of m remaining documents of a group, where room
 * lanes (>= m) have keys: a power of two up to 32, rounded up (the extra lanes scored
 * and dropped) when m is at least 1.5 times the power of two below it. Measured at
 * 1,000 x 32 leaves, us per document: 1 lane 16.4, 2: 13.4, 4: 9.3, 8: 6.5, 16: 5.2,
 * 32: 5.7; the kernel with a run-time count is slower (3 lanes 14.7, 12: 7.9, 14: 7.7,
 * 24: 7.1), so 3 documents are scored as 4, 12 as 16, 9 as 8 + 1. */
static uint32_t piece(uint32_t m, uint32_t room) {
    uint32_t p = 1;
    while (p * 2 <= m && p < 32) p *= 2;
    if (m > p && (m - p) * 2 >= p && p < 32 && p * 2 <= room) return p * 2;
    return p;
}

uint32_t vpl_padded(const vpl *L, uint32_t n) {
    if (n == L->lanes) return n;
    uint32_t j = 0;
    while (j < n) j += piece(n - j, L->lanes - j);
    return j;
}

/* Documents [j, n) of a partial group in instances of 1 .. 32 lanes (see piece). */
static void run_pieces(const vpl *L, uint32_t t0, uint32_t t1, const uint32_t *keys, uint32_t n, double *out) {
    const vpl_fixed_fn *fixed = L->narrow ? fixed_narrow : fixed_wide;
    for (uint32_t j = 0; j < n;) {
        uint32_t p = piece(n - j, L->lanes - j);
        vpl_fixed_fn fn = fixed[fixed_index(p)];
        if (j + p <= n)
            fn(L, t0, t1, keys + j, out + j);
        else {
            double tmp[32] = {0};
            for (uint32_t k = j; k < n; k++) tmp[k - j] = out[k];
            fn(L, t0, t1, keys + j, tmp);
            for (uint32_t k = j; k < n; k++) out[k] = tmp[k - j];
        }
        j += p;
    }
}

void vpl_run(const vpl *L, uint32_t t0, uint32_t t1, const uint32_t *keys, uint32_t n, double *out) {
    int k = fixed_index(n);
    if (k >= 0)
        (L->narrow ? fixed_narrow : fixed_wide)[k](L, t0, t1, keys, out);
    else if (n < L->lanes)
        run_pieces(L, t0, t1, keys, n, out);
    else if (L->narrow) /* v not a power of two: what the caller asked for */
        run_any_narrow(L, t0, t1, keys, n, out);
    else
        run_any_wide(L, t0, t1, keys, n, out);
}

/* ---- tree by tree over groups (SDSD) --------------------------------------------- */

/* One tree over `n_groups` full groups of N lanes (N a compile-time constant): group g's
 * keys at keys + g * group_keys, its sums at out + g * N. The tree's arrays stay in L1
 * while the groups go through it; its root is read once for all groups. Only the
 * common lane counts have an instance: calling the general kernel per tree and group
 * instead was 8% slower (block-vpred, 1,000 x 64 leaves, 16 lanes). */
VPL_ALWAYS_INLINE void tree_groups(const int narrow, const uint32_t N, const vpl *L, uint32_t t,
                                   const uint32_t *restrict keys, size_t n_groups, size_t group_keys,
                                   double *restrict out) {
    const void *nd = tree_nodes(narrow, L->nodes, L->trees[t].base);
    const double *v = L->values + L->trees[t].base;
    VPL_OPAQUE(nd);
    VPL_OPAQUE(v);
    const uint32_t depth = L->trees[t].depth;
    uint32_t root_col, root_thr, root_left;
    node_at(narrow, nd, 0, &root_col, &root_thr, &root_left);
    const uint32_t *k = keys;
    double *o = out;
    for (size_t g = 0; g < n_groups; g++, k += group_keys, o += N) {
        const uint32_t *root_keys = k + root_col;
        uint32_t idx[VPL_MAX_LANES];
        /* A leaf root (depth 0) has left 0 and a threshold no key passes: idx is 0. */
        VPL_UNROLL for (uint32_t j = 0; j < N; j++) idx[j] = root_left + (root_keys[j] > root_thr);
        for (uint32_t s = 1; s < depth; s++) {
            VPL_UNROLL for (uint32_t j = 0; j < N; j++) idx[j] = step(narrow, nd, idx[j], k + j);
        }
        VPL_UNROLL for (uint32_t j = 0; j < N; j++) o[j] += v[idx[j]];
    }
}
static void tree_groups_8_narrow(const vpl *L, uint32_t t, const uint32_t *keys, size_t n_groups, size_t group_keys,
                                double *out) {
    tree_groups(1, 8, L, t, keys, n_groups, group_keys, out);
}
static void tree_groups_16_narrow(const vpl *L, uint32_t t, const uint32_t *keys, size_t n_groups, size_t group_keys,
                                double *out) {
    tree_groups(1, 16, L, t, keys, n_groups, group_keys, out);
}
static void tree_groups_32_narrow(const vpl *L, uint32_t t, const uint32_t *keys, size_t n_groups, size_t group_keys,
                                double *out) {
    tree_groups(1, 32, L, t, keys, n_groups, group_keys, out);
}
static void tree_groups_8_wide(const vpl *L, uint32_t t, const uint32_t *keys, size_t n_groups, size_t group_keys,
                                double *out) {
    tree_groups(0, 8, L, t, keys, n_groups, group_keys, out);
}
static void tree_groups_16_wide(const vpl *L, uint32_t t, const uint32_t *keys, size_t n_groups, size_t group_keys,
                                double *out) {
    tree_groups(0, 16, L, t, keys, n_groups, group_keys, out);
}
static void tree_groups_32_wide(const vpl *L, uint32_t t, const uint32_t *keys, size_t n_groups, size_t group_keys,
                                double *out) {
    tree_groups(0, 32, L, t, keys, n_groups, group_keys, out);
}

typedef void (*vpl_tree_groups_fn)(const vpl *L, uint32_t t, const uint32_t *keys, size_t n_groups,
                                   size_t group_keys, double *out);

static vpl_tree_groups_fn tree_groups_fn(const vpl *L) {
    switch (L->lanes) {
    case 8: return L->narrow ? tree_groups_8_narrow : tree_groups_8_wide;
    case 16: return L->narrow ? tree_groups_16_narrow : tree_groups_16_wide;
    case 32: return L->narrow ? tree_groups_32_narrow : tree_groups_32_wide;
    default: return NULL;
    }
}

void vpl_run_trees_over_groups(const vpl *L, uint32_t t0, uint32_t t1, const uint32_t *keys, size_t n, double *out) {
    const size_t group_keys = vpl_row_bytes(L) / sizeof(uint32_t) * L->lanes;
    const vpl_tree_groups_fn fn = tree_groups_fn(L);
    size_t full = fn ? n / L->lanes : 0;
    for (uint32_t t = t0; t < t1; t++) {
        if (full) fn(L, t, keys, full, group_keys, out);
        for (size_t r = full * L->lanes, g = full; r < n; r += L->lanes, g++) {
            uint32_t m = n - r < L->lanes ? (uint32_t)(n - r) : L->lanes;
            vpl_run(L, t, t + 1, keys + g * group_keys, m, out + r);
        }
    }
}

/* ---- tuning rules ------------------------------------------------------------------- */

uint64_t vpl_model_bytes(const vpl *L) {
    return L->n_nodes * ((L->narrow ? sizeof(vpl_node8) : sizeof(vpl_node16)) + sizeof(double));
}

/* Measured on LightGBM models of 300 x 255 to 20,000 x 64 leaves (1 thread, 2 MiB L2):
 * 16 lanes are the fastest, by 20-40% over 8 and 2-15% over 32 (64: 15-30% slower),
 * except unblocked on models whose arrays exceed 8 times L2 (10,000 and 20,000 x 64
 * leaves: 20 and 40 MB), where 32 lanes (more loads in flight to L3) win by 2-3%.
 * Blocked (block-vpred: one tree in L1 over all groups of a document block), 16 lanes
 * win too (1,000 x 64: 8 lanes 30% slower, 32 lanes 14%). */
uint32_t vpl_default_lanes(const ts_model *m, int blocked) {
    uint64_t slots = 0;
    for (uint32_t t = 0; t < m->n_trees; t++) slots += 2 * (uint64_t)m->trees[t].n_leaves - 1;
    return !blocked && slots * 16 > 8 * (uint64_t)tsr_cache_sizes()->l2 ? 32 : 16;
}
