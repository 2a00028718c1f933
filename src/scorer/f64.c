/* f64.c: rounding double rows to the floats that score exactly, and the exact double traversal. */
#include "scorer/f64.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"

/* LightGBM's kZeroThreshold as the double it compares with. */
#define ZERO_D ((double)TSM_ZERO_RANGE)

typedef struct f64_feature {
    uint32_t feature;
    uint32_t begin, end;   /* its sorted distinct double thresholds in tsp_f64.thr */
    /* Bloom filter of the float gaps holding a threshold of this feature (bit
     * bloom_bit(float floor)): a clear bit proves the gap empty without touching the
     * hash table, and the filters of all features stay in L1. */
    uint64_t bloom[4];
} f64_feature;

/* The thresholds of one feature whose float floor (largest float <= t) is `lo`: those
 * in the float gap [lo, next float). Found by hashing (feature, lo), so a value whose
 * gap holds no threshold (nearly all) costs one probe. */
typedef struct gap_entry {
    uint32_t feature;      /* UINT32_MAX: empty slot */
    uint32_t lo_bits;
    uint32_t first, count; /* in tsp_f64.thr */
} gap_entry;

typedef struct f64_node {
    double threshold;      /* the file's double threshold */
    uint32_t feature;
    int32_t left, right;   /* as in the IR */
    uint32_t flags;
} f64_node;

typedef struct f64_tree {
    uint32_t node_offset, leaf_offset, n_nodes;
} f64_tree;

struct tsp_f64 {
    uint32_t n_used;
    f64_feature *used;     /* features read by some split, ascending */
    double *thr;
    gap_entry *gaps;       /* open addressing, gap_mask + 1 slots */
    uint32_t gap_mask;
    int can_fail;          /* some row may be unrepresentable: the traversal below exists */
    double base_score;
    uint32_t n_trees;
    f64_tree *trees;
    f64_node *nodes;
    double *leaves;        /* weight * leaf value */
};

void tsp_f64_free(tsp_f64 *f) {
    if (!f) return;
    free(f->used);
    free(f->thr);
    free(f->gaps);
    free(f->trees);
    free(f->nodes);
    free(f->leaves);
    free(f);
}

/* ---- prepare ---------------------------------------------------------------------- */

typedef struct thr_pair {
    uint32_t feature;
    double t;
} thr_pair;

static int pair_cmp(const void *a, const void *b) {
    const thr_pair *x = a, *y = b;
    if (x->feature != y->feature) return x->feature < y->feature ? -1 : 1;
    return x->t < y->t ? -1 : x->t > y->t;
}

static double node_threshold_d(const tsm_tree *t, uint32_t i) {
    return t->thresholds_d ? t->thresholds_d[i] : (double)t->nodes[i].threshold;
}

/* Sorted distinct thresholds per used feature; can_fail when two share a float gap or
 * one sits in the gap at an edge of the zero range. */
static ts_status build_thresholds(tsp_f64 *f, const ts_model *m, ts_error *err) {
    size_t n = 0, k = 0;
    for (uint32_t t = 0; t < m->n_trees; t++) n += m->trees[t].n_nodes;
    thr_pair *p = malloc((n + 1) * sizeof *p);
    f->thr = malloc((n + 1) * sizeof *f->thr);
    f->used = malloc((n + 1) * sizeof *f->used);
    if (!p || !f->thr || !f->used) {
        free(p);
        return ts_fail(err, TS_ERR_NO_MEMORY, "out of memory preparing double inputs");
    }
    for (uint32_t t = 0; t < m->n_trees; t++)
        for (uint32_t i = 0; i < m->trees[t].n_nodes; i++)
            p[k++] = (thr_pair){m->trees[t].nodes[i].feature, node_threshold_d(&m->trees[t], i)};
    qsort(p, n, sizeof *p, pair_cmp);
    const float zlo = nextafterf(-TSM_ZERO_RANGE, -INFINITY);
    size_t out = 0;
    for (size_t i = 0; i < n; i++) {
        if (i > 0 && p[i].feature == p[i - 1].feature && p[i].t == p[i - 1].t) continue;
        if (f->n_used == 0 || f->used[f->n_used - 1].feature != p[i].feature)
            f->used[f->n_used++] = (f64_feature){p[i].feature, (uint32_t)out, (uint32_t)out, {0, 0, 0, 0}};
        f64_feature *u = &f->used[f->n_used - 1];
        float lo = tsm_threshold_le_double(p[i].t);
        if (u->end > u->begin && tsm_threshold_le_double(f->thr[u->end - 1]) == lo) f->can_fail = 1;
        if (lo == TSM_ZERO_RANGE || lo == zlo) f->can_fail = 1;
        f->thr[out++] = p[i].t;
        u->end = (uint32_t)out;
    }
    free(p);
    return TS_OK;
}

static uint32_t float_bits(float x) {
    uint32_t b;
    memcpy(&b, &x, sizeof b);
    return b;
}

static inline uint32_t bloom_bit(uint32_t lo_bits) { return (lo_bits * 0x9E3779B1u) >> 24; }

static uint32_t gap_hash(uint32_t feature, uint32_t lo_bits) {
    uint64_t k = ((uint64_t)feature << 32 | lo_bits) * 0x9E3779B97F4A7C15ull;
    return (uint32_t)(k >> 32);
}

static const gap_entry *gap_find(const tsp_f64 *f, uint32_t feature, float lo) {
    uint32_t bits = float_bits(lo);
    for (uint32_t h = gap_hash(feature, bits) & f->gap_mask;; h = (h + 1) & f->gap_mask) {
        const gap_entry *g = &f->gaps[h];
        if (g->feature == UINT32_MAX) return NULL;
        if (g->feature == feature && g->lo_bits == bits) return g;
    }
}

/* One entry per (feature, float floor) group of the sorted thresholds. */
static ts_status build_gaps(tsp_f64 *f, ts_error *err) {
    uint32_t n = f->n_used ? f->used[f->n_used - 1].end : 0, cap = 16;
    while (cap < 2 * n + 2) cap *= 2;
    f->gaps = malloc(cap * sizeof *f->gaps);
    if (!f->gaps) return ts_fail(err, TS_ERR_NO_MEMORY, "out of memory preparing double inputs");
    f->gap_mask = cap - 1;
    for (uint32_t i = 0; i < cap; i++) f->gaps[i].feature = UINT32_MAX;
    for (uint32_t u = 0; u < f->n_used; u++)
        for (uint32_t i = f->used[u].begin; i < f->used[u].end;) {
            uint32_t j = i + 1, bits = float_bits(tsm_threshold_le_double(f->thr[i]));
            while (j < f->used[u].end && float_bits(tsm_threshold_le_double(f->thr[j])) == bits) j++;
            uint32_t h = gap_hash(f->used[u].feature, bits) & f->gap_mask;
            while (f->gaps[h].feature != UINT32_MAX) h = (h + 1) & f->gap_mask;
            f->gaps[h] = (gap_entry){f->used[u].feature, bits, i, j - i};
            uint32_t b = bloom_bit(bits);
            f->used[u].bloom[b >> 6] |= 1ull << (b & 63);
            i = j;
        }
    return TS_OK;
}

/* The exact double traversal: every tree with its double thresholds. */
static ts_status build_traversal(tsp_f64 *f, const ts_model *m, ts_error *err) {
    size_t n_nodes = 0, n_leaves = 0;
    for (uint32_t t = 0; t < m->n_trees; t++) {
        n_nodes += m->trees[t].n_nodes;
        n_leaves += m->trees[t].n_leaves;
    }
    f->n_trees = m->n_trees;
    f->trees = malloc(((size_t)m->n_trees + 1) * sizeof *f->trees);
    f->nodes = malloc((n_nodes + 1) * sizeof *f->nodes);
    f->leaves = malloc((n_leaves + 1) * sizeof *f->leaves);
    if (!f->trees || !f->nodes || !f->leaves) return ts_fail(err, TS_ERR_NO_MEMORY, "out of memory preparing double inputs");
    uint32_t no = 0, lo = 0;
    for (uint32_t t = 0; t < m->n_trees; t++) {
        const tsm_tree *tr = &m->trees[t];
        f->trees[t] = (f64_tree){no, lo, tr->n_nodes};
        for (uint32_t i = 0; i < tr->n_nodes; i++) {
            const tsm_node *nd = &tr->nodes[i];
            f->nodes[no + i] = (f64_node){node_threshold_d(tr, i), nd->feature, nd->left, nd->right, nd->flags};
        }
        for (uint32_t l = 0; l < tr->n_leaves; l++) f->leaves[lo + l] = tr->weight * tr->leaf_values[l];
        no += tr->n_nodes;
        lo += tr->n_leaves;
    }
    return TS_OK;
}

ts_status tsp_f64_prepare(const ts_model *m, tsp_f64 **out, ts_error *err) {
    *out = NULL;
    if (!m->compares_double) return TS_OK;
    tsp_f64 *f = calloc(1, sizeof *f);
    if (!f) return ts_fail(err, TS_ERR_NO_MEMORY, "out of memory preparing double inputs");
    f->base_score = m->base_score;
    ts_status st = build_thresholds(f, m, err);
    if (st == TS_OK) st = build_gaps(f, err);
    if (st == TS_OK && f->can_fail) st = build_traversal(f, m, err);
    if (st != TS_OK) {
        tsp_f64_free(f);
        return st;
    }
    *out = f;
    return TS_OK;
}

/* ---- rounding --------------------------------------------------------------------- */

static int in_zero_range(float x) { return x >= -TSM_ZERO_RANGE && x <= TSM_ZERO_RANGE; }

/* The next float up or down from x (x not NaN; nonzero here, as |v| > 1e-35): one step
 * of the bit pattern, as nextafterf but inline (it is on the per-value path). */
static inline float float_step(float x, int up) {
    uint32_t b = float_bits(x);
    b = ((x > 0) == (up != 0)) ? b + 1 : b - 1;
    memcpy(&x, &b, sizeof x);
    return x;
}

/* The float for v on the right side of every threshold of u (see f64.h); 0 if none. */
static int round_value(const tsp_f64 *f, const f64_feature *u, double v, float *out) {
    if (v != v) {
        *out = NAN;
        return 1;
    }
    if (fabs(v) <= ZERO_D) { /* LightGBM compares such values as 0.0 */
        *out = 0.0f;
        return 1;
    }
    float near = (float)v;
    if ((double)near == v) {
        *out = near;
        return 1;
    }
    float lo = (double)near < v ? near : float_step(near, 0);
    float hi = float_step(lo, 1);
    /* the thresholds in [lo, hi), if any */
    uint32_t b = bloom_bit(float_bits(lo));
    const gap_entry *g = (u->bloom[b >> 6] >> (b & 63)) & 1 ? gap_find(f, u->feature, lo) : NULL;
    int need_lo = 0, need_hi = 0;
    for (uint32_t i = g ? g->first : 0, end = g ? g->first + g->count : 0; i < end; i++) {
        if (f->thr[i] < v) need_hi = 1;
        else need_lo = 1;
    }
    if (need_lo && need_hi) return 0;
    if (need_lo) {
        *out = lo;
        return !in_zero_range(lo);
    }
    if (need_hi) {
        *out = hi;
        return !in_zero_range(hi);
    }
    *out = in_zero_range(near) ? (in_zero_range(lo) ? hi : lo) : near;
    return 1;
}

int tsp_f64_round_row(const tsp_f64 *f, const double *in, float *out) {
    for (uint32_t i = 0; i < f->n_used; i++) {
        const f64_feature *u = &f->used[i];
        if (!round_value(f, u, in[u->feature], &out[u->feature])) return 0;
    }
    return 1;
}

/* ---- exact traversal ------------------------------------------------------------------ */

double tsp_f64_score_row(const tsp_f64 *f, const double *row) {
    double score = f->base_score;
    for (uint32_t t = 0; t < f->n_trees; t++) {
        const f64_tree *tr = &f->trees[t];
        const f64_node *nodes = f->nodes + tr->node_offset;
        int32_t c = tr->n_nodes ? 0 : -1;
        while (c >= 0) {
            const f64_node *n = &nodes[c];
            double v = row[n->feature];
            if (fabs(v) <= ZERO_D) v = 0.0; /* LightGBM's predictor drops such values */
            int missing = v != v || ((n->flags & TSM_ZERO_IS_MISSING) && v == 0.0);
            int left = missing ? (n->flags & TSM_MISSING_LEFT) != 0 : v <= n->threshold;
            c = left ? n->left : n->right;
        }
        score += f->leaves[tr->leaf_offset + (uint32_t)~c];
    }
    return score;
}
