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
    free(q->bk);
    free(q->bkt);
    memset(q, 0, sizeof *q);
}

static uint32_t steps_for(uint32_t n) {
    uint32_t s = 1;
    while ((1u << s) <= n) s++; /* 2^s > n: at least one +inf */
    return s;
}

/* A feature's search table entries: 2^steps, then TSQ_TABLE_PAD (quant.h). */
static uint32_t table_entries(uint32_t n) { return (1u << steps_for(n)) + TSQ_TABLE_PAD; }

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
/* Features with register tables (quant.h "Register tables"). */
static int regged(uint32_t n_thr) { return n_thr > TSQ_REG_MIN && n_thr <= TSQ_REG_MAX; }
/* Features with bucket tables (quant.h "Bucket tables"). */
static int bucketed(uint32_t n_thr) { return n_thr > TSQ_REG_MAX && n_thr <= UINT16_MAX; }

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
        *entries += table_entries(distinct);
        if (blocked(distinct)) *blk += TSQ_BLOCK_FLOATS;
        if (regged(distinct)) *blk += TSQ_REG_FLOATS;
        *blk += (size_t)chunks_of(distinct) * TSQ_BLOCK_FLOATS;
    }
}

/* A two-level table of m pivots (quant.h "Block tables": m = 16; "Register tables": m =
 * 8) of blocks of sz thresholds at b, from the sorted thresholds t[0 .. n): the pivots,
 * then m - 1 tables of m (float, then the same for doubles). */
static void fill_blocks(uint32_t n, uint32_t m, uint32_t sz, const float *t, float *b) {
    for (uint32_t i = 0; i < m; i++) {
        b[i] = sz * i + sz - 1 < n ? t[sz * i + sz - 1] : INFINITY;
        for (uint32_t k = 0; k + 1 < m; k++) b[m + m * k + i] = k + 1 < sz && sz * i + k < n ? t[sz * i + k] : INFINITY;
    }
}

static void fill_blocks_d(uint32_t n, uint32_t m, uint32_t sz, const double *t, double *b) {
    for (uint32_t i = 0; i < m; i++) {
        b[i] = sz * i + sz - 1 < n ? t[sz * i + sz - 1] : INFINITY;
        for (uint32_t k = 0; k + 1 < m; k++) b[m + m * k + i] = k + 1 < sz && sz * i + k < n ? t[sz * i + k] : INFINITY;
    }
}

/* Feature f's gap floats (quant.h "Gap floats") from its float and double thresholds. */
static void fill_gap_floats(const tsq_feature *f, const float *t, const double *td, uint32_t size, float *n) {
    for (uint32_t k = 0; k < size; k++)
        n[k] = k < f->n_thr && (double)t[k] != td[k] ? nextafterf(t[k], INFINITY) : NAN;
}

/* The collapsed key of a key (quant.h "Bucket tables"): the two gaps' keys taken out. */
static uint32_t collapsed(const tsq_bucket *b, uint32_t key) {
    uint32_t out = key;
    for (int g = 0; g < 2; g++) {
        const uint32_t c = key < b->gap_lo[g] ? b->gap_lo[g] : key;
        out -= (c > b->gap_hi[g] ? b->gap_hi[g] : c) - b->gap_lo[g];
    }
    return out;
}

/* The bucket of a key: what the kernels compute, in integers. */
static uint32_t bucket_of(const tsq_bucket *b, uint32_t key) {
    const uint32_t c = collapsed(b, key), d = ((c < b->kmin ? b->kmin : c) - b->kmin) >> b->shift;
    return d > b->last ? b->last : d;
}

/* A threshold's key: 0.0's for -0.0 (the two compare equal). */
static uint32_t threshold_key(float t) {
    uint32_t bits;
    if (t == 0.0f) t = 0.0f;
    memcpy(&bits, &t, sizeof bits);
    return tsq_key(bits);
}

/* The thresholds t[0 .. n) per bucket of b into count[0 .. b->last]; the most in one. */
static uint32_t per_bucket(const tsq_bucket *b, const float *t, uint32_t n, uint32_t *count) {
    memset(count, 0, ((size_t)b->last + 1) * sizeof *count);
    uint32_t most = 0;
    for (uint32_t i = 0; i < n; i++) {
        const uint32_t c = ++count[bucket_of(b, threshold_key(t[i]))];
        if (c > most) most = c;
    }
    return most;
}

/* b with buckets of 2^shift collapsed keys from the least threshold's on. */
static tsq_bucket with_shift(tsq_bucket b, uint32_t span, uint32_t shift) {
    b.shift = shift;
    b.last = span >> shift;
    return b;
}

/* The bucket tables being built: q->bkt grown as they are added (count: scratch of
 * TSQ_BUCKETS_MOST), `used` entries so far, room for `cap`. */
typedef struct bucket_tables {
    uint16_t **tab;
    size_t used, cap;
    uint32_t *count;
} bucket_tables;

/* Room for `need` entries (and the 2 after them a 32-bit gather of the last reads); 0 when
 * out of memory (the feature then keeps its block or chunk tables). */
static int bucket_room(bucket_tables *T, size_t need) {
    if (need + 2 <= T->cap) return 1;
    size_t cap = T->cap ? 2 * T->cap : 4096;
    while (cap < need + 2) cap *= 2;
    uint16_t *p = realloc(*T->tab, cap * sizeof *p);
    if (!p) return 0;
    *T->tab = p;
    T->cap = cap;
    return 1;
}

/* The bucket table of a feature's sorted thresholds t[0 .. n) (quant.h "Bucket tables"),
 * added to T; b->first stays UINT32_MAX when more than 2^TSQ_WINDOW_MAX - 1 thresholds
 * share a bucket of every table of at most TSQ_BUCKETS_MOST buckets. */
static void fill_buckets(tsq_bucket *b, const float *t, uint32_t n, bucket_tables *T) {
    uint32_t *count = T->count;
    uint32_t wide[2] = {0, 0}, gap[2] = {0, 0};
    *b = (tsq_bucket){UINT32_MAX, 0, 0, 0, {0, 0}, {0, 0}, 0};
    for (uint32_t i = 1; i < n; i++) { /* the two widest gaps between thresholds' keys */
        const uint32_t w = threshold_key(t[i]) - threshold_key(t[i - 1]);
        const int g = w > wide[0] ? 0 : w > wide[1] ? 1 : 2;
        if (g == 0) wide[1] = wide[0], gap[1] = gap[0];
        if (g < 2) wide[g] = w, gap[g] = i;
    }
    /* each left a bucket's width wide (the other keys over TSQ_BUCKETS_MAX), so that the
     * thresholds either side of it do not share a bucket */
    const uint32_t rest = threshold_key(t[n - 1]) - threshold_key(t[0]) - wide[0] - wide[1];
    const uint32_t keep = rest / TSQ_BUCKETS_MAX > 1 ? rest / TSQ_BUCKETS_MAX : 1;
    for (int g = 0; g < 2; g++)
        if (wide[g] > keep + 1) {
            b->gap_lo[g] = threshold_key(t[gap[g] - 1]) + keep;
            b->gap_hi[g] = threshold_key(t[gap[g]]) - 1;
        }
    b->kmin = collapsed(b, threshold_key(t[0]));
    const uint32_t span = collapsed(b, threshold_key(t[n - 1])) - b->kmin;
    /* the narrowest window (up to 2^TSQ_WINDOW_MAX - 1) of TSQ_BUCKETS_MAX buckets, else
     * of up to TSQ_BUCKETS_MOST (the thresholds of many decades spaced evenly crowd the
     * highest) */
    uint32_t shift = 0, most = n, win = 0;
    for (uint32_t limit = TSQ_BUCKETS_MAX; limit <= TSQ_BUCKETS_MOST && most > (1u << TSQ_WINDOW_MAX) - 1; limit *= 2) {
        for (shift = 0; (span >> shift) >= limit;) shift++;
        *b = with_shift(*b, span, shift);
        most = per_bucket(b, t, n, count);
    }
    while ((1u << win) - 1 < most) win++;
    if (win > TSQ_WINDOW_MAX) return;
    /* then the fewest buckets with windows as narrow (less to cache) */
    for (tsq_bucket wider; shift < 31; shift++) {
        wider = with_shift(*b, span, shift + 1);
        if (per_bucket(&wider, t, n, count) > (1u << win) - 1) break;
    }
    *b = with_shift(*b, span, shift);
    if (!bucket_room(T, T->used + b->last + 1)) {
        b->first = UINT32_MAX;
        return;
    }
    per_bucket(b, t, n, count);
    b->win = win;
    b->first = (uint32_t)T->used;
    uint16_t *tab = *T->tab + T->used;
    for (uint32_t k = 0, below = 0; k <= b->last; k++) {
        tab[k] = (uint16_t)below;
        below += count[k];
    }
    T->used += b->last + 1;
    tab[b->last + 1] = tab[b->last + 2] = 0; /* read by a 32-bit gather of the last entry */
}

/* Returns 0 when double codes (q->thr_d set) cannot be used: a float threshold out of
 * step with its double (quant.h "Double codes"). */
static int fill_tables(tsq *q, const pair *p, size_t n, uint32_t *count) {
    uint32_t j = 0, table = 0, blk = 0;
    bucket_tables bt = {&q->bkt, 0, 0, count};
    q->n_slots = 0;
    for (size_t i = 0; i < n; j++) {
        tsq_feature *f = &q->f[j];
        *f = (tsq_feature){p[i].feature, 0, 0, table, 0, UINT32_MAX, UINT32_MAX, 0, UINT32_MAX};
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
        const uint32_t size = table_entries(f->n_thr);
        for (uint32_t k = f->n_thr; k < size; k++) t[k] = INFINITY;
        for (uint32_t k = f->n_thr; td && k < size; k++) td[k] = INFINITY;
        if (td) fill_gap_floats(f, t, td, size, q->thr_n + table);
        for (uint32_t k = 0; td && k < f->n_thr; k++) f->snap |= t[k] >= -TSM_ZERO_RANGE && t[k] < TSM_ZERO_RANGE;
        q->bk[j] = (tsq_bucket){UINT32_MAX, 0, 0, 0, {0, 0}, {0, 0}, 0};
        if (bucketed(f->n_thr)) fill_buckets(&q->bk[j], t, f->n_thr, &bt);
        table += size;
        if (blocked(f->n_thr)) {
            f->blocks = blk;
            fill_blocks(f->n_thr, 16, tsq_block_size(f->n_thr), t, q->blk + blk);
            if (td) fill_blocks_d(f->n_thr, 16, tsq_block_size(f->n_thr), td, q->blk_d + blk);
            blk += TSQ_BLOCK_FLOATS;
        }
        if (regged(f->n_thr)) {
            f->regs = blk;
            fill_blocks(f->n_thr, 8, (f->n_thr + 7) / 8, t, q->blk + blk); /* "Register tables" */
            blk += TSQ_REG_FLOATS;
        }
        if (chunks_of(f->n_thr)) {
            f->chunks = blk;
            for (uint32_t c = 0; c < chunks_of(f->n_thr); c++, blk += TSQ_BLOCK_FLOATS) {
                const uint32_t first = c * TSQ_BLOCK_MAX, left = f->n_thr - first;
                fill_blocks(left < TSQ_BLOCK_MAX ? left : TSQ_BLOCK_MAX, 16, 16, t + first, q->blk + blk);
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
        q->bk = malloc(((size_t)q->n_used + 1) * sizeof *q->bk);
        q->blk = aligned_alloc(64, (blk + 16) * sizeof *q->blk); /* 16: a multiple of 64 bytes */
        if (doubles) {
            q->thr_d = malloc((entries + 1) * sizeof *q->thr_d);
            q->thr_n = malloc((entries + 16) * sizeof *q->thr_n); /* 16 may be read from any feature's */
            q->blk_d = aligned_alloc(64, (blk + 8) * sizeof *q->blk_d); /* 8: a multiple of 64 bytes */
        }
        uint32_t *count = malloc(TSQ_BUCKETS_MOST * sizeof *count);
        if (q->f && q->thr && q->slots && q->slot_first && q->slot_of && q->blk && q->bk && count &&
            (!doubles || (q->thr_d && q->blk_d && q->thr_n))) {
            q->doubles = fill_tables(q, p, n, count) && doubles;
        } else
            st = ts_fail(err, TS_ERR_NO_MEMORY, "out of memory for feature code tables");
        free(count);
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
