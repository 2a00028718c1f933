/* quant.c: builds the exact feature codes of a model (quant.h): sorted distinct thresholds per feature and their search tables. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "engines/common/quant.h"

typedef struct pair {
    uint32_t feature;
    uint32_t zero;   /* the node has TSM_ZERO_IS_MISSING */
    uint32_t rule;   /* its slot rule (TSQ_MISSING_RIGHT | TSQ_ZERO_MISSING) */
    float t;         /* the node's float threshold */
    double key;      /* what codes are defined on: t, or the double threshold (tsq_build_f64) */
} pair;

static uint32_t rule_of(const tsm_node *nd) {
    return (nd->flags & TSM_MISSING_LEFT ? 0 : TSQ_MISSING_RIGHT) | (nd->flags & TSM_ZERO_IS_MISSING ? TSQ_ZERO_MISSING : 0);
}

static int pair_cmp(const void *a, const void *b) {
    const pair *x = a, *y = b;
    if (x->feature != y->feature) return x->feature < y->feature ? -1 : 1;
    return x->key < y->key ? -1 : x->key > y->key; /* -0.0 == 0.0: one threshold */
}

void tsq_free(tsq *q) {
    if (!q) return;
    free(q->f);
    free(q->thr);
    free(q->blk);
    free(q->slots);
    free(q->slot_first);
    free(q->slot_of);
    free(q->thr_d);
    free(q->blk_d);
    free(q->thr_n);
    memset(q, 0, sizeof *q);
}

static uint32_t steps_for(uint32_t n) {
    uint32_t s = 1;
    while ((1u << s) <= n) s++; /* 2^s > n: at least one +inf */
    return s;
}

/* Node i's double threshold (the float one widened when the tree keeps none). */
static double node_d(const tsm_tree *t, uint32_t i) {
    return t->thresholds_d ? t->thresholds_d[i] : (double)t->nodes[i].threshold;
}

/* Every node's (feature, threshold), sorted by key (the double thresholds when doubles);
 * *n_out pairs. NULL when out of memory. */
static pair *sorted_pairs(const ts_model *m, int doubles, size_t *n_out) {
    size_t n = 0;
    for (uint32_t t = 0; t < m->n_trees; t++) n += m->trees[t].n_nodes;
    pair *p = malloc((n + 1) * sizeof *p);
    if (!p) return NULL;
    size_t k = 0;
    for (uint32_t t = 0; t < m->n_trees; t++)
        for (uint32_t i = 0; i < m->trees[t].n_nodes; i++) {
            const tsm_node *nd = &m->trees[t].nodes[i];
            p[k++] = (pair){nd->feature, (nd->flags & TSM_ZERO_IS_MISSING) != 0, rule_of(nd), nd->threshold,
                            doubles ? node_d(&m->trees[t], i) : (double)nd->threshold};
        }
    qsort(p, n, sizeof *p, pair_cmp);
    *n_out = n;
    return p;
}

static int blocked(uint32_t n_thr) { return n_thr > TSQ_BLOCK_MIN && n_thr <= TSQ_BLOCK_MAX; }
/* Chunk tables (quant.h "Chunk tables"): their count, 0 for none. */
static uint32_t chunks_of(uint32_t n_thr) {
    return n_thr > TSQ_BLOCK_MAX && n_thr <= TSQ_CHUNK_MAX ? (n_thr + TSQ_BLOCK_MAX - 1) / TSQ_BLOCK_MAX : 0;
}

/* Count the features and table entries of sorted pairs (and the largest feature). */
static void count_tables(tsq *q, const pair *p, size_t n, size_t *entries, size_t *slots, size_t *blk) {
    size_t i = 0;
    *entries = 0;
    q->n_used = q->max_thr = 0;
    while (i < n) {
        uint32_t f = p[i].feature, distinct = 0;
        size_t j = i;
        for (; j < n && p[j].feature == f; j++)
            if (j == i || p[j].key != p[j - 1].key) distinct++;
        i = j;
        (void)f;
        q->n_used++;
        *slots += 4 * (size_t)((distinct + TSQ_SEGMENT - 1) / TSQ_SEGMENT);
        if (distinct > q->max_thr) q->max_thr = distinct;
        *entries += (size_t)1 << steps_for(distinct);
        if (blocked(distinct)) *blk += TSQ_BLOCK_FLOATS;
        *blk += (size_t)chunks_of(distinct) * TSQ_BLOCK_FLOATS;
    }
}

/* Feature f's block table (quant.h "Block tables") at b, from its sorted thresholds t
 * (float, then the same for doubles). */
static void fill_blocks(const tsq_feature *f, const float *t, float *b) {
    for (uint32_t i = 0; i < 16; i++) {
        b[i] = 16 * i + 15 < f->n_thr ? t[16 * i + 15] : INFINITY;
        for (uint32_t k = 0; k < 15; k++) b[16 + 16 * k + i] = 16 * i + k < f->n_thr ? t[16 * i + k] : INFINITY;
    }
}

static void fill_blocks_d(const tsq_feature *f, const double *t, double *b) {
    for (uint32_t i = 0; i < 16; i++) {
        b[i] = 16 * i + 15 < f->n_thr ? t[16 * i + 15] : INFINITY;
        for (uint32_t k = 0; k < 15; k++) b[16 + 16 * k + i] = 16 * i + k < f->n_thr ? t[16 * i + k] : INFINITY;
    }
}

/* Feature f's gap floats (quant.h "Gap floats") from its float and double thresholds. */
static void fill_gap_floats(const tsq_feature *f, const float *t, const double *td, float *n) {
    for (uint32_t k = 0; k < (1u << f->steps); k++)
        n[k] = k < f->n_thr && (double)t[k] != td[k] ? nextafterf(t[k], INFINITY) : NAN;
}

/* Returns 0 when double codes (q->thr_d set) cannot be used: a float threshold out of
 * step with its double (quant.h "Double codes"). */
static int fill_tables(tsq *q, const pair *p, size_t n) {
    uint32_t j = 0, table = 0, blk = 0;
    q->n_slots = 0;
    for (size_t i = 0; i < n; j++) {
        tsq_feature *f = &q->f[j];
        *f = (tsq_feature){p[i].feature, 0, 0, table, 0, UINT32_MAX, UINT32_MAX, 0};
        float *t = q->thr + table;
        double *td = q->thr_d ? q->thr_d + table : NULL;
        uint32_t rules = 0;
        for (; i < n && p[i].feature == f->column; i++) {
            const int same = i > 0 && p[i - 1].feature == f->column && p[i].key == p[i - 1].key;
            if (td && i > 0 && p[i - 1].feature == f->column && (same ? p[i].t != p[i - 1].t : p[i].t < p[i - 1].t))
                return 0;
            if (!same) {
                if (td) td[f->n_thr] = p[i].key;
                t[f->n_thr++] = p[i].t;
            }
            f->has_zero |= p[i].zero;
            rules |= 1u << p[i].rule;
        }
        q->slot_first[j] = q->n_slots;
        for (uint32_t r = 0; r < 4; r++) {
            q->slot_of[j][r] = UINT32_MAX;
            if (!(rules >> r & 1)) continue;
            q->slot_of[j][r] = q->n_slots;
            for (uint32_t base = 0; base < f->n_thr; base += TSQ_SEGMENT) q->slots[q->n_slots++] = (tsq_slot){j, r, base};
        }
        f->steps = steps_for(f->n_thr);
        for (uint32_t k = f->n_thr; k < (1u << f->steps); k++) t[k] = INFINITY;
        for (uint32_t k = f->n_thr; td && k < (1u << f->steps); k++) td[k] = INFINITY;
        if (td) fill_gap_floats(f, t, td, q->thr_n + table);
        for (uint32_t k = 0; td && k < f->n_thr; k++) f->snap |= t[k] >= -TSM_ZERO_RANGE && t[k] < TSM_ZERO_RANGE;
        table += 1u << f->steps;
        if (blocked(f->n_thr)) {
            f->blocks = blk;
            fill_blocks(f, t, q->blk + blk);
            if (td) fill_blocks_d(f, td, q->blk_d + blk);
            blk += TSQ_BLOCK_FLOATS;
        }
        if (chunks_of(f->n_thr)) {
            f->chunks = blk;
            for (uint32_t c = 0; c < chunks_of(f->n_thr); c++, blk += TSQ_BLOCK_FLOATS) {
                const uint32_t first = c * TSQ_BLOCK_MAX, left = f->n_thr - first;
                const tsq_feature part = {f->column, left < TSQ_BLOCK_MAX ? left : TSQ_BLOCK_MAX, 0, 0, 0, 0, 0, 0};
                fill_blocks(&part, t + first, q->blk + blk);
            }
        }
    }
    q->slot_first[q->n_used] = q->n_slots;
    for (uint32_t k = 0; q->thr_n && k < 16; k++) q->thr_n[table + k] = NAN;
    return 1;
}

static ts_status build(tsq *q, const ts_model *m, int doubles, ts_error *err) {
    memset(q, 0, sizeof *q);
    size_t n = 0, entries = 0, slots = 0, blk = 0;
    pair *p = sorted_pairs(m, doubles, &n);
    if (!p) return ts_fail(err, TS_ERR_NO_MEMORY, "out of memory sorting thresholds for feature codes");
    count_tables(q, p, n, &entries, &slots, &blk);
    ts_status st = TS_OK;
    {
        q->f = malloc(((size_t)q->n_used + 1) * sizeof *q->f);
        q->thr = malloc((entries + 1) * sizeof *q->thr);
        q->slots = malloc((slots + 1) * sizeof *q->slots);
        q->slot_first = malloc(((size_t)q->n_used + 1) * sizeof *q->slot_first);
        q->slot_of = malloc(((size_t)q->n_used + 1) * sizeof *q->slot_of);
        q->blk = aligned_alloc(64, (blk + 16) * sizeof *q->blk); /* 16: a multiple of 64 bytes */
        if (doubles) {
            q->thr_d = malloc((entries + 1) * sizeof *q->thr_d);
            q->thr_n = malloc((entries + 16) * sizeof *q->thr_n); /* 16 may be read from any feature's */
            q->blk_d = aligned_alloc(64, (blk + 8) * sizeof *q->blk_d); /* 8: a multiple of 64 bytes */
        }
        if (q->f && q->thr && q->slots && q->slot_first && q->slot_of && q->blk && (!doubles || (q->thr_d && q->blk_d && q->thr_n))) {
            q->doubles = fill_tables(q, p, n) && doubles;
        } else
            st = ts_fail(err, TS_ERR_NO_MEMORY, "out of memory for feature code tables");
    }
    free(p);
    if (st != TS_OK) tsq_free(q);
    else if (doubles && !q->doubles) {
        tsq_free(q);
        return build(q, m, 0, err);
    }
    return st;
}

ts_status tsq_build(tsq *q, const ts_model *m, ts_error *err) { return build(q, m, 0, err); }

ts_status tsq_build_f64(tsq *q, const ts_model *m, ts_error *err) { return build(q, m, m->compares_double, err); }

uint32_t tsq_feature_of(const tsq *q, uint32_t column) {
    uint32_t lo = 0, hi = q->n_used;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (q->f[mid].column < column)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < q->n_used && q->f[lo].column == column ? lo : UINT32_MAX;
}

uint32_t tsq_node_slot(const tsq *q, const tsm_node *node, uint32_t *k) {
    uint32_t j = tsq_feature_of(q, node->feature), index = tsq_index(q, j, node->threshold);
    *k = index % TSQ_SEGMENT;
    return q->slot_of[j][rule_of(node)] + index / TSQ_SEGMENT;
}

uint32_t tsq_tree_node_slot(const tsq *q, const tsm_tree *t, uint32_t i, uint32_t *k) {
    if (!q->doubles) return tsq_node_slot(q, &t->nodes[i], k);
    const tsm_node *node = &t->nodes[i];
    uint32_t j = tsq_feature_of(q, node->feature), index = tsq_code_d(q, j, node_d(t, i));
    *k = index % TSQ_SEGMENT;
    return q->slot_of[j][rule_of(node)] + index / TSQ_SEGMENT;
}

uint32_t tsq_index(const tsq *q, uint32_t j, float t) {
    /* The code of t itself: the thresholds below it, which is its index. */
    return tsq_code(q, j, t);
}
