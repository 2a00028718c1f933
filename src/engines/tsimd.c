/* tsimd.c: the trees-simd engine (one document, trees in SIMD lanes): the generic part, which lays out supernodes and picks the ISA kernel, and the scalar kernel. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/distinct.h"
#include "common/error.h"
#include "engines/common/quant.h"
#include "engines/tsimd.h"
#include "platform/cpu.h"

/* Supernode levels K (tsimd.h): 2 measured fastest of 2 to 5 on a 500 x 64-leaf LightGBM
 * model (depths up to 13; AVX-512, Zen 4), see docs/benchmarks.md. */
#define TSS_LEVELS 2u

typedef struct tss_state {
    tss L;
    tss_kernel kernel;
} tss_state;

static void top_free(tss_top *T) {
    if (!T) return;
    free(T->tslot);
    free(T->toff);
    free(T->tkeys);
    free(T->tsum);
    free(T->nslot);
    free(T->nidx);
    free(T->tbase);
    free(T->mr);
    free(T->wide);
    free(T->wide8);
    free(T->nodes);
    free(T);
}

static void tss_free_layout(tss *L) {
    top_free(L->top);
    free(L->slot_col);
    free(L->slot_miss);
    free(L->slot_zero);
    free(L->root);
    free(L->slot);
    free(L->thr);
    free(L->node);
    free(L->cn);
    free(L->lval);
    free(L->troot);
    free(L->tdepth);
    free(L->tcut);
    free(L->exit);
    free(L->leaves);
    free(L->cnd);
    free(L->slot_j);
    free(L->gaps);
    free(L->gaps_any);
    if (L->qd) tsq_free(L->qd);
    free(L->qd);
}

static void tsimd_free(void *p) {
    tss_state *s = p;
    if (!s) return;
    tss_free_layout(&s->L);
    free(s);
}

/* A node's slot key: its feature and missing rule. */
static uint64_t slot_key(const tsm_node *n) { return (uint64_t)n->feature << 2 | (n->flags & 3u); }

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* The slot of a key among the sorted keys (slot = index + 1: slot 0 is -inf). */
static uint32_t slot_of(const uint64_t *keys, uint32_t n, uint64_t key) {
    uint32_t lo = 0, hi = n;
    while (hi - lo > 1) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (keys[mid] <= key) lo = mid; else hi = mid;
    }
    return lo + 1;
}

/* Supernodes under construction: a work list of (tree node, supernode) still to fill. */
typedef struct builder {
    tss *L;
    const tsm_tree *tree;
    uint32_t leaf0;              /* the tree's first leaf in L->leaves */
    const uint64_t *keys;
    uint32_t n_keys;
    uint64_t cap;                /* supernodes allocated */
    uint32_t *pend_node, *pend_super;
    uint64_t n_pend, pend_cap;
} builder;

static int grow(builder *b) {
    tss *L = b->L;
    if (L->n_super < b->cap) return 1;
    uint64_t cap = b->cap ? b->cap * 2 : 64;
    size_t e = (size_t)cap << L->levels;
    uint32_t *sl = realloc(L->slot, e * sizeof *sl);
    if (sl) L->slot = sl;
    float *th = realloc(L->thr, e * sizeof *th);
    if (th) L->thr = th;
    int32_t *ex = realloc(L->exit, e * sizeof *ex);
    if (ex) L->exit = ex;
    if (!sl || !th || !ex) return 0;
    b->cap = cap;
    return 1;
}

/* A new supernode for internal node c, filled later; its first entry, or -1. */
static int64_t new_super(builder *b, uint32_t c) {
    if (!grow(b)) return -1;
    if (b->n_pend == b->pend_cap) {
        uint64_t cap = b->pend_cap ? b->pend_cap * 2 : 64;
        uint32_t *pn = realloc(b->pend_node, cap * sizeof *pn);
        if (pn) b->pend_node = pn;
        uint32_t *ps = realloc(b->pend_super, cap * sizeof *ps);
        if (ps) b->pend_super = ps;
        if (!pn || !ps) return -1;
        b->pend_cap = cap;
    }
    uint64_t s = b->L->n_super++;
    b->pend_node[b->n_pend] = c;
    b->pend_super[b->n_pend++] = (uint32_t)s;
    return (int64_t)(s << b->L->levels);
}

/* Fill position j (depth d) of supernode entries `e` with tree child reference c. */
static int place(builder *b, size_t e, int32_t c, uint32_t j, uint32_t d) {
    tss *L = b->L;
    const uint32_t K = L->levels, inner = (1u << K) - 1;
    if (d == K) {
        int32_t x;
        if (c < 0)
            x = ~(int32_t)(b->leaf0 + (uint32_t)~c);
        else {
            int64_t s = new_super(b, (uint32_t)c);
            if (s < 0) return 0;
            x = (int32_t)s;
        }
        L->exit[e + j - inner] = x;
        return 1;
    }
    if (c < 0) { /* a leaf above the last level: padding nodes, always left */
        L->slot[e + j] = 0;
        L->thr[e + j] = 0.0f;
    } else {
        const tsm_node *n = &b->tree->nodes[c];
        L->slot[e + j] = slot_of(b->keys, b->n_keys, slot_key(n));
        L->thr[e + j] = n->threshold;
    }
    int32_t l = c < 0 ? c : b->tree->nodes[c].left, r = c < 0 ? c : b->tree->nodes[c].right;
    return place(b, e, l, 2 * j + 1, d + 1) && place(b, e, r, 2 * j + 2, d + 1);
}

static ts_status build_steps(tss *L, const ts_model *m, ts_error *err, const uint64_t *keys, uint32_t nk);
static ts_status build_top(tss *L, const ts_model *m, ts_error *err, const uint64_t *keys, uint32_t nk);

static ts_status build(tss *L, const ts_model *m, ts_error *err) {
    uint64_t n_nodes = 0, n_leaves = 0;
    for (uint32_t t = 0; t < m->n_trees; t++) n_nodes += m->trees[t].n_nodes, n_leaves += m->trees[t].n_leaves;
    /* every supernode holds at least one node: entries < 2^31 */
    if ((n_nodes << TSS_LEVELS_MAX) >= INT32_MAX || n_leaves >= INT32_MAX)
        return ts_fail(err, TS_ERR_LIMIT, "trees-simd: the model has more than 2^25 nodes");
    uint64_t *keys = malloc((n_nodes + 1) * sizeof *keys);
    if (!keys) return ts_fail(err, TS_ERR_NO_MEMORY, "trees-simd: out of memory");
    uint32_t nk = 0;
    for (uint32_t t = 0; t < m->n_trees; t++)
        for (uint32_t i = 0; i < m->trees[t].n_nodes; i++) keys[nk++] = slot_key(&m->trees[t].nodes[i]);
    const size_t nu = ts_distinct_u64(keys, nk);
    if (nu == SIZE_MAX) {
        free(keys);
        return ts_fail(err, TS_ERR_NO_MEMORY, "trees-simd: out of memory");
    }
    const uint32_t u = (uint32_t)nu;
    L->n_slots = u + 1;
    L->n_slots_pad = (L->n_slots + TSS_LANES_MAX - 1) / TSS_LANES_MAX * TSS_LANES_MAX;
    L->slot_col = calloc(L->n_slots_pad, sizeof *L->slot_col);
    L->slot_miss = calloc(L->n_slots_pad, sizeof *L->slot_miss);
    L->slot_zero = calloc(L->n_slots_pad, sizeof *L->slot_zero);
    L->root = malloc(((size_t)m->n_trees + TSS_LANES_MAX) * sizeof *L->root);
    L->leaves = malloc((n_leaves + 1) * sizeof *L->leaves);
    builder b = {L, NULL, 0, keys, u, 0, NULL, NULL, 0, 0};
    ts_status st = TS_OK;
    if (!L->slot_col || !L->slot_miss || !L->slot_zero || !L->root || !L->leaves) goto oom;
    for (uint32_t s = 0; s < L->n_slots_pad; s++) L->slot_miss[s] = -INFINITY;
    for (uint32_t i = 0; i < u; i++) {
        L->slot_col[i + 1] = (uint32_t)(keys[i] >> 2);
        L->slot_miss[i + 1] = keys[i] & TSM_MISSING_LEFT ? -INFINITY : NAN;
        L->slot_zero[i + 1] = (keys[i] & TSM_ZERO_IS_MISSING) != 0;
    }
    uint32_t leaf0 = 0;
    for (uint32_t t = 0; t < m->n_trees; t++) {
        const tsm_tree *tr = &m->trees[t];
        for (uint32_t l = 0; l < tr->n_leaves; l++) L->leaves[leaf0 + l] = tr->weight * tr->leaf_values[l];
        b.tree = tr;
        b.leaf0 = leaf0;
        if (tr->n_nodes == 0) {
            L->root[t] = ~(int32_t)leaf0;
        } else {
            int64_t s = new_super(&b, 0);
            if (s < 0) goto oom;
            L->root[t] = (int32_t)s;
            while (b.n_pend) {
                b.n_pend--;
                uint32_t c = b.pend_node[b.n_pend];
                size_t e = (size_t)b.pend_super[b.n_pend] << L->levels;
                L->slot[e + (1u << L->levels) - 1] = 0;
                L->thr[e + (1u << L->levels) - 1] = 0.0f;
                if (!place(&b, e, (int32_t)c, 0, 0)) goto oom;
            }
        }
        leaf0 += tr->n_leaves;
    }
    for (uint32_t t = m->n_trees; t < m->n_trees + TSS_LANES_MAX; t++) L->root[t] = ~0;
    st = build_steps(L, m, err, keys, u);
    if (st == TS_OK && L->cn && L->top_exits) st = build_top(L, m, err, keys, u);
    if (st != TS_OK) goto done;
    if (!grow(&b)) goto oom; /* at least one supernode allocated */
    L->node = malloc(((size_t)b.cap << L->levels) * sizeof *L->node);
    if (!L->node) goto oom;
    for (size_t e = 0; e < ((size_t)L->n_super << L->levels); e++) {
        uint32_t bits;
        memcpy(&bits, &L->thr[e], sizeof bits);
        L->node[e] = L->slot[e] | (uint64_t)bits << 32;
    }
    goto done;
oom:
    st = ts_fail(err, TS_ERR_NO_MEMORY, "trees-simd: out of memory");
done:
    free(b.pend_node);
    free(b.pend_super);
    free(keys);
    return st;
}

/*
 * Double keys: for a model that compares double inputs with double thresholds
 * (LightGBM), double rows are scored without rounding them to floats (the scorer's
 * fallback, src/scorer/f64.c, which costs more than the walk on wide rows). Each node's
 * key is then k, the index of its double threshold D among its feature's distinct ones
 * (quant.h "Double codes"), and a slot's key the code of the row's value, c = #{D' <
 * snap(v)}: snap(v) <= D iff c <= k, so the step's unsigned compare "k < c: right" is
 * the float step's. A missing value takes 0 (missing goes left: below every k) or the
 * feature's count n (right: above every k <= n - 1), and slot 0 (padding, leaves) keys 0
 * against k = 0: always left. cnd is cn with these keys; L->cnd stays NULL when the
 * model compares floats or its double codes do not exist.
 */
/*
 * Float first: a double row need not be all floats to take the float keys. With u the
 * value v rounded up to a float and d rounded down, and a node of double threshold D
 * whose float is F (the largest float x with snap(x) <= D), u <= F gives snap(v) <=
 * snap(u) <= D (left, as the double compare), and u > F with F < d gives D < v (right,
 * as the double compare); a float key at or below d's (d itself) sends F == d left and
 * decides the other nodes alike. So only the nodes with F == d (the value in the float
 * gap of their threshold: LightGBM's thresholds sit next to the training values, so
 * this is common) need D: L->gaps holds, per (feature, F) whose D are not F, the least
 * and largest such D (the least also over a D equal to F, which d's key would send left
 * and v > d must send right); v <= least: the key of d (all those go left), v > largest:
 * the key of u (all right); between (two thresholds of one float gap on either side of v),
 * or u == -TSM_ZERO_RANGE with v below the zero range (u's key would read it as in the
 * range), the row takes the double keys. Every value of a row of floats has u = d = v.
 * The AVX-512 keys (x86/tsimd_avx512.c tss_keys16_up) do this 16 slots a step, the AVX2
 * keys (x86/tsimd_avx2.c tss_keys8_up) 8, with a filter of the set's keys in L1
 * (gaps_any) before the set; without AVX2 only rows of floats take the float keys
 * (tss_slot_keys_up below), and the set is not kept.
 */
static ts_status build_gaps(tss *L, const tsq *q, ts_error *err) {
    uint64_t n = 0;
    for (uint32_t j = 0; j < q->n_used; j++) n += q->f[j].n_thr;
    uint32_t bits = 4;
    while (((uint64_t)1 << bits) < 2 * n) bits++;
    L->gaps = calloc((size_t)1 << bits, sizeof *L->gaps);
    L->gaps_any = calloc(TSS_GAPS_ANY / 64, sizeof *L->gaps_any);
    if (!L->gaps || !L->gaps_any) return ts_fail(err, TS_ERR_NO_MEMORY, "trees-simd: out of memory");
    L->gaps_bits = bits;
    const uint32_t mask = (1u << bits) - 1;
    for (int pass = 0; pass < 2; pass++) /* the D that are not floats, then those that are */
        for (uint32_t j = 0; j < q->n_used; j++)
            for (uint32_t i = 0; i < q->f[j].n_thr; i++) {
                const double d = q->thr_d[q->f[j].table + i];
                const float f = tsm_threshold_lightgbm(d);
                if (((double)f == d) != pass) continue;
                const uint64_t key = tss_gap_key(j, f);
                uint32_t h = (uint32_t)(tss_gap_mix(key) >> (64 - bits));
                while (L->gaps[h].key && L->gaps[h].key != key) h = (h + 1) & mask;
                if (pass) { /* D == F == d: left for d's key, right for any v > d: so v > lo */
                    if (L->gaps[h].key) L->gaps[h].lo = d < L->gaps[h].lo ? d : L->gaps[h].lo;
                    continue;
                }
                if (!L->gaps[h].key) L->gaps[h] = (tss_gap){key, d, d};
                const uint32_t b = tss_gap_any_bit(key);
                L->gaps_any[b / 64] |= 1ull << (b % 64);
                L->gaps[h].lo = d < L->gaps[h].lo ? d : L->gaps[h].lo;
                L->gaps[h].hi = d > L->gaps[h].hi ? d : L->gaps[h].hi;
            }
    return TS_OK;
}

static ts_status build_double_keys(tss *L, const ts_model *m, uint64_t n, ts_error *err) {
    if (!m->compares_double) return TS_OK;
    tsq *q = calloc(1, sizeof *q);
    if (!q) return ts_fail(err, TS_ERR_NO_MEMORY, "trees-simd: out of memory");
    ts_status st = tsq_build_f64(q, m, err);
    if (st != TS_OK || !q->doubles) {
        if (st == TS_OK) tsq_free(q);
        free(q);
        return st;
    }
    L->qd = q;
    L->cnd = aligned_alloc(64, (n * sizeof *L->cnd + 63) & ~(size_t)63); /* as cn ("Depth steps") */
    L->slot_j = calloc(L->n_slots_pad, sizeof *L->slot_j);
    if (!L->cnd || !L->slot_j) return ts_fail(err, TS_ERR_NO_MEMORY, "trees-simd: out of memory");
    for (uint32_t s = 1; s < L->n_slots; s++) L->slot_j[s] = tsq_feature_of(q, L->slot_col[s]);
    /* float keys serve double rows ("Float first") only where every node's float is
     * LightGBM's float of its double (a loaded LightGBM model's are; a built or
     * hand-made model's need not be) */
    L->f64_floats = 1;
    for (uint32_t t = 0; t < m->n_trees && L->f64_floats; t++) {
        const tsm_tree *tr = &m->trees[t];
        for (uint32_t i = 0; i < tr->n_nodes; i++) {
            double d = tr->thresholds_d ? tr->thresholds_d[i] : (double)tr->nodes[i].threshold;
            if (tr->nodes[i].threshold != tsm_threshold_lightgbm(d)) {
                L->f64_floats = 0;
                break;
            }
        }
    }
    return L->f64_floats ? build_gaps(L, q, err) : TS_OK;
}

/* One document's double keys (above), without a branch on the value: zero-range values
 * search as 0.0, NaN finds code 0 (it is below no threshold), then the missing code is
 * selected where the slot's rule makes the value missing. */
static inline void tss_slot_keys_d(const tss *L, const double *row, uint32_t *k) {
    const tsq *q = L->qd;
    k[0] = 0;
    for (uint32_t s = 1; s < L->n_slots; s++) {
        const double v = row[L->slot_col[s]];
        const uint32_t j = L->slot_j[s], miss = L->slot_miss[s] != L->slot_miss[s] ? q->f[j].n_thr : 0;
        const int zero = fabs(v) <= (double)TSM_ZERO_RANGE;
        const uint32_t c = tsq_code_d(q, j, zero ? 0.0 : v);
        k[s] = (v != v) | (zero & (int)L->slot_zero[s]) ? miss : c;
    }
}

/* A double row's float keys where its values are all floats (or NaN), else 0 (the row
 * takes the double keys). The scalar form of float first (ISA kernels' keys_up, above)
 * stops at the first value that is not a float: looking every such value up in the gap
 * set measured slower than the double codes' binary searches (demo model, one row: 4.44
 * against 3.92 us), where the AVX-512 form, 16 values a step, measured faster, and so
 * did the AVX2 form, 8 (Zen 3, demo model, one row: 3.96 against 4.54 us). */
static inline int tss_slot_keys_up(const tss *L, const double *row, uint32_t *k) {
    k[0] = 0;
    for (uint32_t s = 1; s < L->n_slots; s++) {
        const double v = row[L->slot_col[s]];
        const float r = (float)v;
        if ((double)r != v && v == v) return 0;
        k[s] = tss_slot_key(L, s, r);
    }
    return 1;
}

/*
 * Tree order: the walks from the roots take TSS_PG trees in tree order at a time, so that
 * each row's sum can take a group's leaf values as soon as the group has walked (the
 * additions in tree order, as naive's: the same bits), and a group stops as soon as every
 * lane is at a leaf. A group of trees of depth up to D costs D steps whatever the
 * document's paths, but paths are mostly much shorter than the deepest one (the dev 500
 * x 64 model: depth 9.7 on average, 5.8 steps on the test rows' paths; msn-lgb-1000x256:
 * 22.5 and 5.4); with the check, a group costs the longest of its 16 paths (test rows:
 * 4,030 steps per row instead of 5,780 on the dev model, 6,270 instead of 25,470 on
 * msn-lgb-1000x256). The check (an OR of the 16 entries' deltas, a branch) starts after
 * tcut steps: the first step after which a random walk (each branch taken half the time)
 * of the group's trees is still at a node in at most TSS_CUT_ALIVE of them.
 */
#ifndef TSS_CUT_ALIVE
#define TSS_CUT_ALIVE 0.6
#endif
#define TSS_CUT_DEPTHS 256u /* reach[] kept to this depth (deeper leaves: alive < 2^-256) */

/* The cut of a group of `count` trees whose deepest has depth `depth`, from reach[d]: the
 * sum over its trees' leaves at depth d of 2^-d (a random walk's chance to end there). */
static uint32_t cut_of(const double *reach, uint32_t depth, uint32_t count) {
    double alive = count; /* count * the chance to be at a node after s steps */
    const double limit = TSS_CUT_ALIVE * count;
    for (uint32_t s = 0; s < depth && s < TSS_CUT_DEPTHS; s++) {
        alive -= reach[s];
        if (s >= 1 && alive <= limit) return s;
    }
    return depth < TSS_CUT_DEPTHS ? depth : TSS_CUT_DEPTHS;
}

/*
 * Depth steps: each tree's nodes and leaves as 8-byte entries (tss_cnode), breadth
 * first, a node's two children side by side at e + delta (left) and e + delta + 1
 * (right): the step is e += delta + !(v <= t) (a compare and an add with carry). A leaf
 * (slot 0: -inf, always left; delta 0) steps onto itself, so a tree of depth D ends on
 * its exit leaf after at most D steps, whatever the path, and TSS_PG trees step together
 * with no branch but the check of "Tree order" (above). Trees are laid out in tree order.
 * Returns 0 where a tree's delta or a slot does not fit 16 bits (cn stays NULL).
 */
static ts_status build_steps(tss *L, const ts_model *m, ts_error *err, const uint64_t *keys, uint32_t nk) {
    if (L->n_slots > UINT16_MAX) return TS_OK;
    for (uint32_t t = 0; t < m->n_trees; t++)
        if (m->trees[t].n_nodes + m->trees[t].n_leaves > UINT16_MAX) return TS_OK;
    const size_t ng = ((size_t)m->n_trees + TSS_PG - 1) / TSS_PG;
    L->troot = calloc(ng * TSS_PG + 1, sizeof *L->troot); /* padding: the spare leaf 0 */
    if (!L->troot) return ts_fail(err, TS_ERR_NO_MEMORY, "trees-simd: out of memory");
    /* Each tree's root at the start of a cache line, and the roots of a group in distinct
     * sets of the L1 cache (line index modulo 64): trees of 256 leaves take 4 KiB of
     * entries, so that laid end to end the 16 roots of a group would share one set of 8
     * ways (docs/benchmarks.md). The entries between trees are spare leaves, never read. */
    uint64_t n = 8, used = 0;
    for (uint32_t t = 0; t < m->n_trees; t++) {
        if (t % TSS_PG == 0) used = 0;
        n = (n + 7) & ~(uint64_t)7;
        while (used >> (n / 8 % 64) & 1) n += 8;
        used |= 1ull << (n / 8 % 64);
        L->troot[t] = (uint32_t)n;
        n += m->trees[t].n_nodes + m->trees[t].n_leaves;
        if (n > UINT32_MAX) return TS_OK;
    }
    uint64_t nl = 1; /* leaf values: 0 for the spare leaves, then every tree's, in order */
    for (uint32_t t = 0; t < m->n_trees; t++) nl += m->trees[t].n_leaves;
    tss_cnode *cn = aligned_alloc(64, (n * sizeof *cn + 63) & ~(size_t)63);
    L->lval = aligned_alloc(64, (nl * sizeof *L->lval + 63) & ~(size_t)63);
    L->tdepth = calloc(ng + 1, sizeof *L->tdepth);
    L->tcut = calloc(ng + 1, sizeof *L->tcut);
    uint32_t *queue = malloc(((size_t)UINT16_MAX + 1) * sizeof *queue);   /* one tree's entries */
    uint32_t *qdepth = malloc(((size_t)UINT16_MAX + 1) * sizeof *qdepth);
    double *reach = malloc(TSS_CUT_DEPTHS * sizeof *reach); /* the group's, cut_of */
    if (!cn || !L->lval || !L->tdepth || !L->tcut || !queue || !qdepth || !reach) {
        free(queue);
        free(qdepth);
        free(reach);
        free(cn);
        return ts_fail(err, TS_ERR_NO_MEMORY, "trees-simd: out of memory");
    }
    ts_status st = build_double_keys(L, m, n, err);
    if (st != TS_OK) {
        free(queue);
        free(qdepth);
        free(reach);
        free(cn);
        return st;
    }
    memset(cn, 0, n * sizeof *cn); /* spare leaves: entry 0 and the gaps */
    if (L->cnd) memset(L->cnd, 0, n * sizeof *L->cnd);
    L->lval[0] = 0.0;
    uint32_t li = 1;
    for (uint32_t t = 0; t < m->n_trees; t++) {
        const tsm_tree *tr = &m->trees[t];
        if (t % TSS_PG == 0) memset(reach, 0, TSS_CUT_DEPTHS * sizeof *reach);
        /* breadth first: queue holds child references; entry base + q is queue[q] */
        uint32_t base = L->troot[t], qn = 0;
        qdepth[qn] = 0;
        queue[qn++] = tr->n_nodes ? 0u : (uint32_t)~0; /* ~0 as a reference: leaf 0 */
        for (uint32_t q = 0; q < qn; q++) {
            int32_t c = (int32_t)queue[q];
            if (c < 0) {
                if (qdepth[q] < TSS_CUT_DEPTHS) reach[qdepth[q]] += ldexp(1.0, -(int)qdepth[q]);
                cn[base + q] = (tss_cnode){li, 0, 0}; /* a leaf: its value's index */
                if (L->cnd) L->cnd[base + q] = cn[base + q];
                L->lval[li++] = tr->weight * tr->leaf_values[~c];
            } else {
                const tsm_node *nd = &tr->nodes[c];
                cn[base + q] = (tss_cnode){tss_key(nd->threshold), (uint16_t)slot_of(keys, nk, slot_key(nd)), (uint16_t)(qn - q)};
                if (L->cnd) {
                    const tsq *qd = L->qd;
                    double d = tr->thresholds_d ? tr->thresholds_d[c] : (double)nd->threshold;
                    L->cnd[base + q] = cn[base + q];
                    L->cnd[base + q].thr = tsq_code_d(qd, tsq_feature_of(qd, nd->feature), d);
                }
                qdepth[qn] = qdepth[q] + 1;
                queue[qn++] = (uint32_t)nd->left;
                qdepth[qn] = qdepth[q] + 1;
                queue[qn++] = (uint32_t)nd->right;
            }
        }
        if (tr->depth > L->tdepth[t / TSS_PG]) L->tdepth[t / TSS_PG] = tr->depth;
        if (t % TSS_PG == TSS_PG - 1 || t + 1 == m->n_trees)
            L->tcut[t / TSS_PG] = cut_of(reach, L->tdepth[t / TSS_PG], t % TSS_PG + 1);
    }
    free(queue);
    free(qdepth);
    free(reach);
    L->n_groups = (uint32_t)ng;
    L->n_cn = n;
    L->cn = cn;
    return TS_OK;
}

/*
 * Top levels (tsimd.h "Top levels"): the first TSS_TOPK levels of every tree are stepped
 * by every row, whatever its path; with VBMI they are decided 64 nodes an instruction
 * (x86/tsimd_avx512.c tss_top_exits). Codes are per *keyset*, a feature and its
 * TSM_ZERO_IS_MISSING flag (the slots of one feature that differ only in where missing
 * goes share one): its keys are the distinct threshold keys of its nodes in the top
 * levels (at most 254), and a row's code is 0 when the value is missing for the keyset
 * (its slot key 0 or 0xffffffff), else 1 + the count of keys below the slot key. A node
 * of the keyset's i-th key stores j = i + 1 when missing goes left (right iff code > j:
 * count > i, as the step's key(t) < key(v); missing: 0 > j never) and j = i when missing
 * goes right, its bit set in the tree's mr mask: the kernel subtracts 1 from those
 * nodes' codes (count > i; missing: 0 - 1 = 255 > i). Padding nodes read keyset 0
 * (code 0) against j = 0: left. The row's codes sit in up to four registers of 64: per
 * tree vpermi2b of two (keysets in order of the number of trees that read them, the
 * 127 most read in the first two), one vpcmpub (code > j) into a 64-bit mask, and a
 * 6-level walk of the mask (two 7-bit table lookups); the trees that read a keyset past
 * the first 128 are redone from four registers (vpermi2b twice, a blend on bit 7). The
 * depth steps then start each tree at its exit and a group steps its depth less K.
 * Where a keyset has more than 254 keys or there are more than 255 keysets, the model
 * has no top levels (cn as before). Rows on the double keys (cnd) step from the roots.
 */
typedef struct top_builder {
    tss_top *T;
    const tss *L;
    const tsm_tree *tr;
    uint32_t i;                   /* tree */
    int32_t *refs;                /* TSS_TOP_BYTES: the tree's references at the last level */
    const uint64_t *keys;         /* slot keys (slot_of) */
    uint32_t nk;
    const uint32_t *slot_ks;      /* slot -> keyset (1 .. n_top - 1; 0: not in the top levels) */
    const uint64_t *kp;           /* (keyset << 32 | threshold key), sorted, distinct */
    uint32_t nkp;
} top_builder;

/* lower_bound64, lower_bound32: the first index of the n sorted a[] not below x (the keyset
 * pairs while building, the wide trees of a split's part). */
#define TSS_LOWER_BOUND(name, type)                                                                  \
    static uint32_t name(const type *a, uint32_t n, type x) {                                        \
        uint32_t lo = 0, hi = n;                                                                     \
        while (lo < hi) {                                                                            \
            uint32_t mid = lo + (hi - lo) / 2;                                                       \
            if (a[mid] < x) lo = mid + 1; else hi = mid;                                             \
        }                                                                                            \
        return lo;                                                                                   \
    }
TSS_LOWER_BOUND(lower_bound64, uint64_t)
TSS_LOWER_BOUND(lower_bound32, uint32_t)

static uint32_t top_slot(const top_builder *b, const tsm_node *nd) { return slot_of(b->keys, b->nk, slot_key(nd)); }

/* The slots of a tree's top levels (slot << 32 | threshold key), from reference c at level l. */
static void top_collect(const top_builder *b, int32_t c, uint32_t l, uint64_t *out, uint32_t *n) {
    if (c < 0 || l == TSS_TOPK) return;
    const tsm_node *nd = &b->tr->nodes[c];
    out[(*n)++] = (uint64_t)top_slot(b, nd) << 32 | tss_key(nd->threshold);
    top_collect(b, nd->left, l + 1, out, n);
    top_collect(b, nd->right, l + 1, out, n);
}

/* Node reference c at level l, position q of tree b->i's top bytes (tsimd.h). */
static void top_place(const top_builder *b, int32_t c, uint32_t l, uint32_t q) {
    tss_top *T = b->T;
    const size_t t = (size_t)b->i * TSS_TOP_BYTES;
    if (l == TSS_TOPK) {
        b->refs[q] = c;
        return;
    }
    const size_t pos = t + tss_top_pos(l, q);
    if (c < 0) { /* padding: keyset 0 (code 0) against 0, always left */
        T->nslot[pos] = 0;
        T->nidx[pos] = 0;
        top_place(b, c, l + 1, 2 * q);
        top_place(b, c, l + 1, 2 * q + 1);
        return;
    }
    const tsm_node *nd = &b->tr->nodes[c];
    const uint32_t s = top_slot(b, nd), ks = b->slot_ks[s];
    const uint64_t pk = (uint64_t)ks << 32 | tss_key(nd->threshold);
    const uint32_t i = lower_bound64(b->kp, b->nkp, pk) - lower_bound64(b->kp, b->nkp, (uint64_t)ks << 32);
    const int left = b->L->slot_miss[s] == b->L->slot_miss[s]; /* -inf: missing goes left */
    T->nslot[pos] = (uint8_t)ks;
    T->nidx[pos] = (uint8_t)(i + (uint32_t)left);
    if (!left) T->mr[b->i] |= 1ull << tss_top_pos(l, q);
    top_place(b, nd->left, l + 1, 2 * q);
    top_place(b, nd->right, l + 1, 2 * q + 1);
}

static void *alloc64(size_t n) { return aligned_alloc(64, tss_round64(n ? n : 1)); }

/* A slot's keyset: its feature and zero-is-missing flag. */
static uint64_t keyset_of(const tss *L, uint32_t s) { return (uint64_t)L->slot_col[s] << 1 | L->slot_zero[s]; }

/* slot_ks: the keysets of the slots read in the top levels (pairs: (slot << 32 | key),
 * trees' runs from first[t] to first[t + 1]), numbered from 1 in order of the number of
 * trees that read them; their count + 1 into *n_top. */
static int top_number(const tss *L, const uint64_t *pairs, const uint32_t *first, uint32_t n_trees, uint32_t *slot_ks,
                      uint32_t *n_top) {
    const uint32_t ns = L->n_slots;
    uint64_t *ks = malloc((size_t)ns * sizeof *ks);
    uint32_t *cnt = calloc(ns, sizeof *cnt), *last = malloc((size_t)ns * sizeof *last), *order = malloc((size_t)ns * sizeof *order);
    if (!ks || !cnt || !last || !order) {
        free(ks), free(cnt), free(last), free(order);
        return -1;
    }
    uint32_t nks = 0;
    for (uint32_t s = 1; s < ns; s++) ks[nks++] = keyset_of(L, s);
    qsort(ks, nks, sizeof *ks, cmp_u64);
    uint32_t u = 0;
    for (uint32_t i = 0; i < nks; i++)
        if (u == 0 || ks[i] != ks[u - 1]) ks[u++] = ks[i];
    nks = u;
    for (uint32_t i = 0; i < nks; i++) last[i] = UINT32_MAX;
    for (uint32_t t = 0; t < n_trees; t++) /* trees per keyset */
        for (uint32_t p = first[t]; p < first[t + 1]; p++) {
            const uint32_t k = lower_bound64(ks, nks, keyset_of(L, (uint32_t)(pairs[p] >> 32)));
            if (last[k] != t) last[k] = t, cnt[k]++;
        }
    uint32_t n = 0;
    for (uint32_t k = 0; k < nks; k++)
        if (cnt[k]) order[n++] = k;
    for (uint32_t a = 1; a < n; a++) /* by count, most first (insertion sort: stable) */
        for (uint32_t b = a; b > 0 && cnt[order[b]] > cnt[order[b - 1]]; b--) {
            uint32_t x = order[b];
            order[b] = order[b - 1];
            order[b - 1] = x;
        }
    for (uint32_t r = 0; r < n; r++) last[order[r]] = r + 1; /* rank + 1 */
    for (uint32_t s = 1; s < ns; s++) {
        const uint32_t k = lower_bound64(ks, nks, keyset_of(L, s));
        slot_ks[s] = cnt[k] ? last[k] : 0;
    }
    *n_top = n + 1;
    free(ks), free(cnt), free(last), free(order);
    return 1;
}

/* The keysets' keys (kp: (keyset << 32 | key), sorted, distinct), blocks and block maxima,
 * and a slot reading each; 0 where a keyset has more than 254 keys. */
static int top_keys(tss_top *T, const tss *L, const uint64_t *kp, uint32_t nkp, const uint32_t *slot_ks) {
    const uint32_t n = T->n_top;
    uint32_t *cnt = calloc(n, sizeof *cnt);
    if (!cnt) return -1;
    for (uint32_t p = 0; p < nkp; p++) cnt[kp[p] >> 32]++;
    uint32_t blocks = 0;
    int ok = 1;
    for (uint32_t u = 0; u < n; u++) blocks += cnt[u] / 16 + 1, ok &= cnt[u] <= 254;
    T->tslot = calloc(n, sizeof *T->tslot);
    T->toff = malloc(n * sizeof *T->toff);
    T->tkeys = alloc64((size_t)blocks * 16 * sizeof *T->tkeys);
    T->tsum = alloc64((size_t)n * 16 * sizeof *T->tsum);
    if (!ok || !T->tslot || !T->toff || !T->tkeys || !T->tsum) {
        free(cnt);
        return ok ? -1 : 0;
    }
    memset(T->tkeys, 0xff, (size_t)blocks * 16 * sizeof *T->tkeys);
    memset(T->tsum, 0xff, (size_t)n * 16 * sizeof *T->tsum);
    for (uint32_t s = L->n_slots; s-- > 1;) /* keyset 0 reads slot 0 (key 0: code 0) */
        if (slot_ks[s]) T->tslot[slot_ks[s]] = s;
    for (uint32_t u = 0, blk = 0, p = 0; u < n; p += cnt[u], u++) {
        T->toff[u] = blk;
        for (uint32_t i = 0; i < cnt[u]; i++) T->tkeys[(size_t)blk * 16 + i] = (uint32_t)kp[p + i];
        const uint32_t nb = cnt[u] / 16 + 1;
        for (uint32_t b = 0; b < nb; b++) T->tsum[(size_t)u * 16 + b] = T->tkeys[(size_t)(blk + b) * 16 + 15];
        blk += nb;
    }
    free(cnt);
    return 1;
}

/* Tree b->tr's entries below its top levels, appended at cn + *next: the 64 references
 * of the last level first (position p at entry *next + p), then breadth first as
 * build_steps, but a leaf's entry holds its value (weight * leaf, a double's bits) and a
 * node's delta (up to TSS_TOP_DELTA) its children's kinds (TSS_TOP_LEAF_L, _R: a leaf);
 * the tree's nodes among the 64 into T->nodes. 0 where a delta would not fit. */
static int top_steps(tss *L, const top_builder *b, int32_t *queue, uint32_t *next) {
    const tsm_tree *tr = b->tr;
    const uint32_t base = *next;
    uint32_t qn = 0;
    uint64_t nodes = 0;
    for (uint32_t p = 0; p < TSS_TOP_BYTES; p++) {
        queue[qn++] = b->refs[p];
        nodes |= (uint64_t)(b->refs[p] >= 0) << p;
    }
    b->T->nodes[b->i] = nodes;
    for (uint32_t q = 0; q < qn; q++) {
        const int32_t c = queue[q];
        if (c < 0) {
            const double v = tr->weight * tr->leaf_values[~c];
            memcpy(&L->cn[base + q], &v, sizeof v);
        } else {
            const tsm_node *nd = &tr->nodes[c];
            if (qn - q > TSS_TOP_DELTA) return 0;
            const uint32_t kinds = (nd->left < 0 ? TSS_TOP_LEAF_L : 0) | (nd->right < 0 ? TSS_TOP_LEAF_R : 0);
            L->cn[base + q] = (tss_cnode){tss_key(nd->threshold), (uint16_t)top_slot(b, nd), (uint16_t)((qn - q) | kinds)};
            queue[qn++] = nd->left;
            queue[qn++] = nd->right;
        }
    }
    *next = base + qn;
    return 1;
}

/* The trees' bytes, masks and entries below the top levels; 0 where a delta does not fit. */
static int top_trees(tss *L, const ts_model *m, top_builder *b, int32_t *queue, uint32_t n) {
    tss_top *T = b->T;
    uint32_t next = n;
    for (uint32_t i = 0; i < m->n_trees; i++) {
        b->tr = &m->trees[i];
        b->i = i;
        top_place(b, b->tr->n_nodes ? 0 : ~0, 0, 0);
        T->tbase[i] = next;
        if (!top_steps(L, b, queue, &next)) return 0;
        int wide = 0; /* reads a keyset past the first 128 */
        for (uint32_t k = 0; k < TSS_TOP_BYTES; k++) wide |= T->nslot[(size_t)i * TSS_TOP_BYTES + k] >= 128;
        if (wide) T->wide[T->n_wide++] = i, T->wide8[i / 8] |= (uint8_t)(1u << (i % 8));
    }
    return 1;
}

/* The top levels (above) of the depth-step layout; L->top stays NULL where they do not
 * fit their bytes. keys: the slots' keys (slot_of). The trees' entries below their top
 * levels are appended to cn (top_steps), after the entries from the roots. */
static ts_status build_top(tss *L, const ts_model *m, ts_error *err, const uint64_t *keys, uint32_t nk) {
    uint64_t n = L->n_cn, add = 0;
    uint32_t max_entries = 0;
    for (uint32_t t = 0; t < m->n_trees; t++) {
        const uint32_t e = m->trees[t].n_nodes + m->trees[t].n_leaves;
        add += TSS_TOP_BYTES + e;
        max_entries = e > max_entries ? e : max_entries;
    }
    const uint32_t ntp = L->n_groups * TSS_PG;
    if (n + add > UINT32_MAX || ntp == 0) return TS_OK; /* (no trees: nothing to decide) */
    tss_top *T = calloc(1, sizeof *T);
    uint64_t *pairs = malloc(((size_t)m->n_trees * (TSS_TOP_BYTES - 1) + 1) * sizeof *pairs);
    uint32_t *first = malloc(((size_t)m->n_trees + 1) * sizeof *first);
    uint32_t *slot_ks = calloc(L->n_slots, sizeof *slot_ks);
    int32_t *queue = malloc(((size_t)max_entries + TSS_TOP_BYTES) * sizeof *queue), refs[TSS_TOP_BYTES];
    ts_status st = TS_OK;
    if (!T || !pairs || !first || !slot_ks || !queue) goto oom;
    top_builder b = {T, L, NULL, 0, refs, keys, nk, slot_ks, pairs, 0};
    uint32_t np = 0;
    for (uint32_t t = 0; t < m->n_trees; t++) {
        b.tr = &m->trees[t];
        first[t] = np;
        if (b.tr->n_nodes) top_collect(&b, 0, 0, pairs, &np);
    }
    first[m->n_trees] = np;
    int r = top_number(L, pairs, first, m->n_trees, slot_ks, &T->n_top);
    if (r < 0) goto oom;
    if (T->n_top > 256) goto done;
    for (uint32_t p = 0; p < np; p++) pairs[p] = (uint64_t)slot_ks[pairs[p] >> 32] << 32 | (uint32_t)pairs[p];
    qsort(pairs, np, sizeof *pairs, cmp_u64);
    uint32_t u = 0;
    for (uint32_t i = 0; i < np; i++)
        if (u == 0 || pairs[i] != pairs[u - 1]) pairs[u++] = pairs[i];
    b.nkp = u;
    r = top_keys(T, L, pairs, u, slot_ks);
    if (r < 0) goto oom;
    if (!r) goto done;
    T->n_trees_pad = ntp;
    T->nslot = alloc64((size_t)ntp * TSS_TOP_BYTES);
    T->nidx = alloc64((size_t)ntp * TSS_TOP_BYTES);
    T->mr = calloc(ntp, sizeof *T->mr);
    T->wide = malloc(((size_t)ntp + 1) * sizeof *T->wide);
    T->wide8 = calloc(ntp / 8 + 1, 1);
    T->tbase = calloc(ntp, sizeof *T->tbase); /* padding trees: the spare leaf 0 */
    T->nodes = calloc(ntp, sizeof *T->nodes);
    tss_cnode *cn = alloc64((n + add) * sizeof *cn); /* (64-byte aligned: "Depth steps") */
    if (cn) {
        memcpy(cn, L->cn, n * sizeof *cn);
        free(L->cn);
        L->cn = cn;
    }
    if (!T->nslot || !T->nidx || !T->mr || !T->wide || !T->wide8 || !T->tbase || !T->nodes || !cn) goto oom;
    /* padding trees: every byte 0 (keyset 0 against 0: left), exit position 0 */
    memset(T->nslot, 0, (size_t)ntp * TSS_TOP_BYTES);
    memset(T->nidx, 0, (size_t)ntp * TSS_TOP_BYTES);
    if (!top_trees(L, m, &b, queue, (uint32_t)n)) goto done;
    for (uint32_t x = 0; x < 128; x++) {
        uint32_t j = 0;
        for (uint32_t d = 0; d < 3; d++) j = 2 * j + 1 + ((x >> j) & 1);
        T->walk3[x] = (uint8_t)(j - 7);
    }
    L->top = T;
    T = NULL;
    goto done;
oom:
    st = ts_fail(err, TS_ERR_NO_MEMORY, "trees-simd: out of memory");
done:
    top_free(T);
    free(pairs);
    free(first);
    free(slot_ks);
    free(queue);
    return st;
}

/* The depth-step kernel (scalar, no branch): up to TSS_RB rows at a time, each group of
 * trees through all of them while its entries are in the L1 cache: TSS_PG (16)
 * independent chains of loads, kept in registers. A step: e += delta + (t < v[slot]),
 * the entry read as one 64-bit word and its slot as a 16-bit load of the same entry
 * (x86-64: two loads, a shift, a compare with the slot key in memory, an add with carry;
 * the slot's own load instead of two shifts and a zero-extension of the word measured
 * 3-11% faster on AMD Zen 3, AVX2: the step is latency-bound, see docs/benchmarks.md). */
#if defined(__x86_64__) && defined(__GNUC__)
/* The step, with OR an instruction of its own before the compare, and A its operands. */
#define TSS_STEP_X(E, OR, ...)                                                                   \
    do {                                                                                         \
        uint64_t w_, s_, d_;                                                                     \
        __asm__("movq (%[c],%[e],8), %[w]\n\t"                                                   \
                "movzwl 4(%[c],%[e],8), %k[s]\n\t"                                               \
                "movq %[w], %[d]\n\t"                                                            \
                "shrq $48, %[d]\n\t" OR                                                          \
                "cmpl (%[v],%[s],4), %k[w]\n\t"                                                  \
                "adcq %[d], %[e]"                                                                \
                : [e] "+r"(E), [w] "=&r"(w_), [s] "=&r"(s_), [d] "=&r"(d_) __VA_ARGS__           \
                : [c] "r"(C), [v] "r"(v)                                                         \
                : "cc");                                                                         \
    } while (0)
#define TSS_STEP(E) TSS_STEP_X(E, "", )
/* A step that also ORs the entry's delta into A (0 after a round of them: every lane
 * was at a leaf). */
#define TSS_STEP_ANY(E, A) TSS_STEP_X(E, "orq %[d], %[a]\n\t", , [a] "+r"(A))
#else
#define TSS_STEP_X(E, OR)                                                                        \
    do {                                                                                         \
        const tss_cnode *c_ = &C[E];                                                             \
        OR;                                                                                      \
        E += c_->delta + (c_->thr < v[c_->slot]);                                                \
    } while (0)
#define TSS_STEP(E) TSS_STEP_X(E, (void)0)
#define TSS_STEP_ANY(E, A) TSS_STEP_X(E, A |= c_->delta)
#endif
#define TSS_STEP16_ANY(A)                                                                        \
    do {                                                                                         \
        TSS_STEP_ANY(e0, A); TSS_STEP_ANY(e1, A); TSS_STEP_ANY(e2, A); TSS_STEP_ANY(e3, A);      \
        TSS_STEP_ANY(e4, A); TSS_STEP_ANY(e5, A); TSS_STEP_ANY(e6, A); TSS_STEP_ANY(e7, A);      \
        TSS_STEP_ANY(e8, A); TSS_STEP_ANY(e9, A); TSS_STEP_ANY(e10, A); TSS_STEP_ANY(e11, A);    \
        TSS_STEP_ANY(e12, A); TSS_STEP_ANY(e13, A); TSS_STEP_ANY(e14, A); TSS_STEP_ANY(e15, A);  \
    } while (0)
#define TSS_STEP16()                                                                             \
    do {                                                                                         \
        TSS_STEP(e0); TSS_STEP(e1); TSS_STEP(e2); TSS_STEP(e3);                                  \
        TSS_STEP(e4); TSS_STEP(e5); TSS_STEP(e6); TSS_STEP(e7);                                  \
        TSS_STEP(e8); TSS_STEP(e9); TSS_STEP(e10); TSS_STEP(e11);                                \
        TSS_STEP(e12); TSS_STEP(e13); TSS_STEP(e14); TSS_STEP(e15);                              \
    } while (0)

/* One round of a row's work list (the C step below the top levels): each item A[j] =
 * (tree << 32 | entry) steps to its child by the row's slot keys v, whose entry goes to
 * x[tree]; the items still at a node are kept, in order, at the front of A. Returns how
 * many. Hot loop (top_rows, split_top). */
static inline __attribute__((always_inline)) uint32_t top_round(const uint64_t *C, const uint32_t *v, uint32_t *x,
                                                                uint64_t *A, uint32_t n) {
    uint32_t k = 0;
    for (uint32_t j = 0; j < n; j++) {
        const uint64_t a = A[j], w = C[(uint32_t)a];
        const uint32_t right = (uint32_t)w < v[(w >> 32) & 0xffff], i = (uint32_t)(a >> 32);
        const uint32_t e = (uint32_t)a + ((uint32_t)(w >> 48) & TSS_TOP_DELTA) + right;
        x[i] = e;
        A[k] = (uint64_t)i << 32 | e;
        k += !((w >> (62 + right)) & 1);
    }
    return k;
}

/* R rows' scores from their slot keys V (row r: V + nsp r) by the top levels ("Top
 * levels"): every tree's exit after them (x), then only the trees whose exit is a node
 * step on, in rounds over each row's work list (a step each, the tree kept while its
 * entry is a node: no branch on the path; the R rows' lists in one round, independent
 * chains); then each row's exit leaves' values (in their entries) added in tree order,
 * the R rows' sums side by side. Hot loop. */
static inline __attribute__((always_inline)) void top_rows(const tss *L, const uint32_t *V, size_t nsp, uint32_t R,
                                                          uint32_t *x, double *out) {
    const tss_top *T = L->top;
    const uint64_t *C = (const uint64_t *)L->cn;
    const size_t ntp = T->n_trees_pad;
    const uint32_t nt = L->n_trees;
    uint64_t *A = (uint64_t *)(x + TSS_TOPR * ntp); /* (tree << 32 | entry), per row */
    uint32_t n[TSS_TOPR];
    L->top_exits(L, V, nsp, R, x, A, n);
    for (uint32_t any = 1; any;) {
        any = 0;
        for (uint32_t r = 0; r < R; r++) {
            const uint32_t *v = V + nsp * r;
            uint32_t *xr = x + ntp * r;
            uint64_t *Ar = A + ntp * r;
            n[r] = top_round(C, v, xr, Ar, n[r]);
            any |= n[r];
        }
    }
    double acc[TSS_TOPR];
    for (uint32_t r = 0; r < R; r++) acc[r] = L->base_score;
    for (uint32_t i = 0; i < nt; i++) {
#pragma GCC unroll 16
        for (uint32_t r = 0; r < R; r++) {
            double d;
            memcpy(&d, &C[x[ntp * r + i]], sizeof d);
            acc[r] += d;
        }
    }
    for (uint32_t r = 0; r < R; r++) out[r] = acc[r];
}

/* Calls of more rows: trees in chunks (tsimd.h tss_top_range_fn) that every row takes
 * through the top levels, the steps below them and the sums before the next chunk, so
 * that the rows read a chunk's node bytes and entries from L1 or L2 one after the other;
 * one work list for the chunk's rows, in the order of its trees (8 at a time). A chunk
 * holds 2^lg trees, (rows << lg) <= TSS_CHUNK_ITEMS: 64 trees for 9-16 rows, up to 512
 * for 2 (fewer rows, longer chunks: the rounds' lists stay long). */
#define TSS_CHUNK_ITEMS 1024u
#define TSS_CHUNK_ROWS (2u * TSS_TOPR)
/* Calls of 4 rows or more go by chunks (2 rows measured 1-3% slower by chunks on the dev
 * model, 4 and 8 rows as fast or 3-5% faster, 16 rows 5-10% faster: docs/benchmarks.md) */
#define TSS_CHUNK_MIN 4u

/* R rows' scores (2 TSS_TOPR at most) by chunks of trees (above); as top_rows, each
 * row's leaf values added in tree order (the R sums side by side). Hot loop. */
static inline __attribute__((always_inline)) void top_rows_chunked(const tss *L, const uint32_t *V, size_t nsp,
                                                                  uint32_t R, double *out) {
    const tss_top *T = L->top;
    const uint64_t *C = (const uint64_t *)L->cn;
    uint32_t lg = 3;
    while ((R << (lg + 1)) <= TSS_CHUNK_ITEMS) lg++;
    const uint32_t ntp = T->n_trees_pad, nt = L->n_trees, ch = 1u << lg;
    const uint32_t R1 = R < TSS_TOPR ? R : TSS_TOPR, R2 = R - R1;
    __attribute__((aligned(64))) uint8_t codes[TSS_CHUNK_ROWS * 256];
    uint32_t X[TSS_CHUNK_ITEMS];
    uint64_t A[TSS_CHUNK_ITEMS];
    L->top_codes(L, V, nsp, R1, codes);
    if (R2) L->top_codes(L, V + nsp * TSS_TOPR, nsp, R2, codes + 256 * TSS_TOPR);
    double acc[TSS_CHUNK_ROWS];
    for (uint32_t r = 0; r < R; r++) acc[r] = L->base_score;
    for (uint32_t t0 = 0; t0 < ntp; t0 += ch) {
        const uint32_t t1 = ntp - t0 < ch ? ntp : t0 + ch;
        uint32_t n = 0;
        L->top_range(L, codes, R1, t0, t1, 0, lg, nsp, X, A, &n);
        if (R2) L->top_range(L, codes + 256 * TSS_TOPR, R2, t0, t1, TSS_TOPR, lg, nsp, X, A, &n);
        L->top_steps(L, V, X, A, n);
        const uint32_t te = nt - t0 < ch ? nt - t0 : ch;
        for (uint32_t i = 0; i < te; i++) {
#pragma GCC unroll 16
            for (uint32_t r = 0; r < R; r++) {
                double d;
                memcpy(&d, &C[X[(r << lg) + i]], sizeof d);
                acc[r] += d;
            }
        }
        if (nt <= t1) break;
    }
    for (uint32_t r = 0; r < R; r++) out[r] = acc[r];
}

/* nr rows by top_rows, TSS_TOPR at a time (R a constant in each call). */
static void top_rows_n(const tss *L, const uint32_t *V, size_t nsp, size_t nr, uint32_t *x, double *out) {
    for (size_t r = 0; r < nr;) {
        const size_t m = nr - r;
        if (m >= TSS_CHUNK_ROWS && L->top_range) { /* (R a constant: the R sums in registers) */
            top_rows_chunked(L, V + nsp * r, nsp, TSS_CHUNK_ROWS, out + r);
            r += TSS_CHUNK_ROWS;
        } else if (m >= TSS_CHUNK_MIN && L->top_range) {
            switch (m) { /* R a constant in each case */
#define TSS_CHUNKED(RR) case RR: top_rows_chunked(L, V + nsp * r, nsp, RR, out + r); break
                TSS_CHUNKED(4); TSS_CHUNKED(5); TSS_CHUNKED(6); TSS_CHUNKED(7); TSS_CHUNKED(8); TSS_CHUNKED(9);
                TSS_CHUNKED(10); TSS_CHUNKED(11); TSS_CHUNKED(12); TSS_CHUNKED(13); TSS_CHUNKED(14);
                default: TSS_CHUNKED(15);
#undef TSS_CHUNKED
            }
            r += m;
        } else if (m >= TSS_TOPR) {
            top_rows(L, V + nsp * r, nsp, TSS_TOPR, x, out + r);
            r += TSS_TOPR;
        } else if (m >= 4) {
            top_rows(L, V + nsp * r, nsp, 4, x, out + r);
            r += 4;
        } else if (m >= 2) {
            top_rows(L, V + nsp * r, nsp, 2, x, out + r);
            r += 2;
        } else {
            top_rows(L, V + nsp * r, nsp, 1, x, out + r);
            r += 1;
        }
    }
}

/* The next group's trees' first TSS_PREFETCH_LINES cache lines (their top levels:
 * entries are breadth first, a tree's first 24 entries its levels 0-3 and some of 4)
 * toward L1 while a group steps: a model past the L1 cache (a 500 x 64-leaf model's
 * entries take 500 KiB) otherwise starts every tree's walk on L2 or L3 latencies. */
#define TSS_PREFETCH_LINES 3u
static inline __attribute__((always_inline)) void prefetch_group(const tss_cnode *C, const uint32_t *rt) {
    for (uint32_t k = 0; k < TSS_PG; k++)
        for (uint32_t l = 0; l < TSS_PREFETCH_LINES; l++) __builtin_prefetch((const char *)(C + rt[k]) + 64 * l);
}

/* The value of the leaf at entry E (its index in lval is the entry's thr). */
#define TSS_LEAF(E) lval[C[E].thr]

/* The nr rows whose slot keys are at V (row r's at V + nsp r) through every tree by the
 * entries C ("Tree order"): each group of TSS_PG trees walks row after row while its
 * entries are in the L1 cache, and each row's sum takes the group's leaf values in tree
 * order. Hot loop. */
static inline __attribute__((always_inline)) void walk_rows(const tss *L, const tss_cnode *C, const uint32_t *V,
                                                            size_t nsp, size_t nr, double *out) {
    const uint32_t nt = L->n_trees, ng = (nt + TSS_PG - 1) / TSS_PG;
    const double *lval = L->lval;
    double acc[TSS_RB];
    for (size_t r = 0; r < nr; r++) acc[r] = L->base_score;
    /* the step's asm reads C and V, and says no memory: nothing moves across this */
    __asm__ volatile("" ::: "memory");
    for (uint32_t gi = 0; gi < ng; gi++) {
        const uint32_t *rt = L->troot + (size_t)gi * TSS_PG, depth = L->tdepth[gi], cut = L->tcut[gi];
        const uint32_t n = nt - gi * TSS_PG < TSS_PG ? nt - gi * TSS_PG : TSS_PG;
        if (gi + 1 < ng) prefetch_group(C, rt + TSS_PG);
        for (size_t r = 0; r < nr; r++) {
            const uint32_t *v = V + r * nsp;
            uint64_t e0 = rt[0], e1 = rt[1], e2 = rt[2], e3 = rt[3], e4 = rt[4], e5 = rt[5], e6 = rt[6],
                     e7 = rt[7], e8 = rt[8], e9 = rt[9], e10 = rt[10], e11 = rt[11], e12 = rt[12], e13 = rt[13],
                     e14 = rt[14], e15 = rt[15];
            for (uint32_t d = cut; d > 0; d--) TSS_STEP16();
            for (uint32_t d = depth - cut; d > 0; d--) { /* until every lane is at a leaf */
                uint64_t any = 0;
                TSS_STEP16_ANY(any);
                if (!any) break;
            }
            double a = acc[r];
            if (n == TSS_PG) {
                a += TSS_LEAF(e0); a += TSS_LEAF(e1); a += TSS_LEAF(e2); a += TSS_LEAF(e3);
                a += TSS_LEAF(e4); a += TSS_LEAF(e5); a += TSS_LEAF(e6); a += TSS_LEAF(e7);
                a += TSS_LEAF(e8); a += TSS_LEAF(e9); a += TSS_LEAF(e10); a += TSS_LEAF(e11);
                a += TSS_LEAF(e12); a += TSS_LEAF(e13); a += TSS_LEAF(e14); a += TSS_LEAF(e15);
            } else { /* the last group: its trees only (adding a padding lane's 0 would turn -0 into +0) */
                const uint64_t e[TSS_PG] = {e0, e1, e2, e3, e4, e5, e6, e7, e8, e9, e10, e11, e12, e13, e14, e15};
                for (uint32_t k = 0; k < n; k++) a += TSS_LEAF(e[k]);
            }
            acc[r] = a;
        }
    }
    for (size_t r = 0; r < nr; r++) out[r] = acc[r];
}

/* The walk, for float rows (x, the entries cn) or double rows (xd, the entries cnd). */
static inline __attribute__((always_inline)) void steps_core(const tss *L, const float *x, const double *xd,
                                                             size_t n_rows, size_t stride, double *out,
                                                             void *scratch) {
    const size_t nsp = L->n_slots_pad, nt = L->n_trees;
    uint32_t *V = scratch;
    double *D = (double *)((char *)scratch + tss_round64((size_t)TSS_RB * nsp * sizeof(float)));
    /* the top levels' exits and work lists (top_rows), after the leaf values */
    uint32_t *X = (uint32_t *)((char *)D + tss_round64((size_t)TSS_RB * (nt + 64) * sizeof(double)));
    for (size_t r0 = 0; r0 < n_rows; r0 += TSS_RB) {
        const size_t nr = n_rows - r0 < TSS_RB ? n_rows - r0 : TSS_RB;
        /* double rows: the float keys and entries, float first ("Float first": exact, and
         * cheaper than the codes' searches), unless a row has a value they leave undecided */
        int floats = xd == NULL;
        if (xd && L->f64_floats) {
            floats = 1;
            for (size_t r = 0; r < nr && floats; r++)
                floats = L->keys_up ? L->keys_up(L, xd + (r0 + r) * stride, V + r * nsp)
                                    : tss_slot_keys_up(L, xd + (r0 + r) * stride, V + r * nsp);
        }
        const tss_cnode *C = floats ? L->cn : L->cnd;
        for (size_t r = 0; r < nr; r++) {
            if (!xd && L->keys)
                L->keys(L, x + (r0 + r) * stride, V + r * nsp);
            else if (!xd)
                tss_slot_keys(L, x + (r0 + r) * stride, V + r * nsp);
            else if (!floats)
                tss_slot_keys_d(L, xd + (r0 + r) * stride, V + r * nsp);
        }
        /* float keys: the top levels by byte masks where the ISA has them ("Top levels") */
        if (floats && L->top) {
            top_rows_n(L, V, nsp, nr, X, out + r0);
            continue;
        }
        if (nr == 1) /* (one row: its sum in a register) */
            walk_rows(L, C, V, nsp, 1, out + r0);
        else
            walk_rows(L, C, V, nsp, nr, out + r0);
    }
}

static void tss_steps(const tss *L, const float *x, size_t n_rows, size_t stride, double *out, void *scratch) {
    steps_core(L, x, NULL, n_rows, stride, out, scratch);
}

static void tss_steps_f64(const tss *L, const double *x, size_t n_rows, size_t stride, double *out, void *scratch) {
    steps_core(L, NULL, x, n_rows, stride, out, scratch);
}

/* The scalar kernel: tree by tree, the same layout and steps as the SIMD kernels. */
static void tss_scalar(const tss *L, const float *x, size_t n_rows, size_t stride, double *out, void *scratch) {
    float *v = scratch;
    const uint32_t K = L->levels, inner = (1u << K) - 1;
    for (size_t r = 0; r < n_rows; r++) {
        tss_slot_values(L, x + r * stride, v);
        double acc = L->base_score;
        for (uint32_t t = 0; t < L->n_trees; t++) {
            int32_t e = L->root[t];
            while (e >= 0) {
                uint32_t j = 0;
                for (uint32_t d = 0; d < K; d++) j = 2 * j + 1 + !(v[L->slot[e + j]] <= L->thr[e + j]);
                e = L->exit[e + j - inner];
            }
            acc += L->leaves[~e];
        }
        out[r] = acc;
    }
}

/*
 * Split: one row's trees across threads (engine.h tree_groups, tree_group_first,
 * tree_values; src/scorer/chunk.c adds the values in tree order). A group is TSS_PG
 * consecutive trees. With the top levels (VBMI), groups [g0, g1) go through the ISA's
 * top_exits on a view of the top levels that starts at the range's first tree (each
 * per-tree array offset, the wide trees renumbered), then the row's depth steps, as
 * top_rows does for one row; with depth steps from the roots, TSS_PG trees in tree
 * order step together as walk_rows's groups ("Tree order": until every lane is at a leaf);
 * with the supernode kernels, tree by tree as tss_scalar. Each value is the double the
 * kernels add (the exit leaf's weight * value), so the sum is the same bits.
 */
static uint32_t tsimd_tree_groups(const void *p) {
    const tss_state *s = p;
    return (s->L.n_trees + TSS_PG - 1) / TSS_PG;
}

static uint32_t tsimd_tree_group_first(const void *p, uint32_t g) {
    const tss_state *s = p;
    const uint64_t t = (uint64_t)g * TSS_PG;
    return t < s->L.n_trees ? (uint32_t)t : s->L.n_trees;
}

/* Trees [a, b) (multiples of TSS_PG, b <= n_trees_pad) of one row by the top levels:
 * vals[t - a] for each tree t < n_trees. Scratch as steps_core's: the keys, the wide
 * trees renumbered (in the leaf values' part, which the top levels do not use), then
 * the exits and the work list. */
static void split_top(const tss *L, const float *row, uint32_t a, uint32_t b, double *vals, void *scratch) {
    const tss_top *T = L->top;
    const size_t nsp = L->n_slots_pad, n = b - a;
    uint32_t *V = scratch;
    uint32_t *wide = (uint32_t *)((char *)scratch + tss_round64((size_t)TSS_RB * nsp * sizeof(float)));
    uint32_t *x = (uint32_t *)((char *)wide + tss_round64((size_t)TSS_RB * ((size_t)L->n_trees + 64) * sizeof(double)));
    uint64_t *A = (uint64_t *)(x + n); /* n is a multiple of 16: 64-byte aligned */
    if (L->keys) L->keys(L, row, V);
    else tss_slot_keys(L, row, V);
    tss_top view = *T;
    view.n_trees_pad = (uint32_t)n;
    view.nslot = T->nslot + (size_t)a * TSS_TOP_BYTES;
    view.nidx = T->nidx + (size_t)a * TSS_TOP_BYTES;
    view.mr = T->mr + a;
    view.tbase = T->tbase + a;
    view.nodes = T->nodes + a;
    view.wide8 = T->wide8 + a / 8;
    const uint32_t w0 = lower_bound32(T->wide, T->n_wide, a), w1 = lower_bound32(T->wide, T->n_wide, b);
    for (uint32_t w = w0; w < w1; w++) wide[w - w0] = T->wide[w] - a;
    view.wide = wide;
    view.n_wide = w1 - w0;
    tss Lv = *L;
    Lv.top = &view;
    uint32_t cnt;
    L->top_exits(&Lv, V, nsp, 1, x, A, &cnt);
    const uint64_t *C = (const uint64_t *)L->cn;
    while (cnt) cnt = top_round(C, V, x, A, cnt); /* top_rows' rounds, one row */
    const uint32_t m = (b < L->n_trees ? b : L->n_trees) - a;
    for (uint32_t i = 0; i < m; i++) memcpy(&vals[i], &C[x[i]], sizeof vals[i]);
}

/* Trees [a, b) (multiples of TSS_PG) of one row by depth steps from their roots, TSS_PG
 * in tree order at a time: vals[t - a] for each tree t < n_trees. */
static void split_steps(const tss_state *s, const float *row, uint32_t a, uint32_t b, double *vals, void *scratch) {
    const tss *L = &s->L;
    uint32_t *V = scratch;
    if (L->keys) L->keys(L, row, V);
    else tss_slot_keys(L, row, V);
    const uint32_t *v = V;
    const tss_cnode *C = L->cn;
    /* the step's asm reads C and V, and says no memory: nothing moves across this */
    __asm__ volatile("" ::: "memory");
    for (uint32_t t0 = a; t0 < b; t0 += TSS_PG) {
        const uint32_t *rt = L->troot + t0, depth = L->tdepth[t0 / TSS_PG], cut = L->tcut[t0 / TSS_PG];
        uint64_t e0 = rt[0], e1 = rt[1], e2 = rt[2], e3 = rt[3], e4 = rt[4], e5 = rt[5], e6 = rt[6], e7 = rt[7],
                 e8 = rt[8], e9 = rt[9], e10 = rt[10], e11 = rt[11], e12 = rt[12], e13 = rt[13], e14 = rt[14],
                 e15 = rt[15];
        for (uint32_t d = cut; d > 0; d--) TSS_STEP16();
        for (uint32_t d = depth - cut; d > 0; d--) { /* until every lane is at a leaf */
            uint64_t any = 0;
            TSS_STEP16_ANY(any);
            if (!any) break;
        }
        const uint64_t e[TSS_PG] = {e0, e1, e2, e3, e4, e5, e6, e7, e8, e9, e10, e11, e12, e13, e14, e15};
        const uint32_t n = L->n_trees - t0 < TSS_PG ? L->n_trees - t0 : TSS_PG;
        for (uint32_t k = 0; k < n; k++) vals[t0 - a + k] = L->lval[C[e[k]].thr];
    }
}

/* Trees [a, b) of one row through the supernodes, tree by tree (as tss_scalar). */
static void split_supernodes(const tss *L, const float *row, uint32_t a, uint32_t b, double *vals, void *scratch) {
    float *v = scratch;
    const uint32_t K = L->levels, inner = (1u << K) - 1, end = b < L->n_trees ? b : L->n_trees;
    tss_slot_values(L, row, v);
    for (uint32_t t = a; t < end; t++) {
        int32_t e = L->root[t];
        while (e >= 0) {
            uint32_t j = 0;
            for (uint32_t d = 0; d < K; d++) j = 2 * j + 1 + !(v[L->slot[e + j]] <= L->thr[e + j]);
            e = L->exit[e + j - inner];
        }
        vals[t - a] = L->leaves[~e];
    }
}

static void tsimd_tree_values(const void *p, const float *row, uint32_t g0, uint32_t g1, double *vals,
                              void *scratch) {
    const tss_state *s = p;
    const uint32_t a = g0 * TSS_PG, b = g1 * TSS_PG;
    if (s->kernel == tss_steps && s->L.top)
        split_top(&s->L, row, a, b, vals, scratch);
    else if (s->kernel == tss_steps)
        split_steps(s, row, a, b, vals, scratch);
    else
        split_supernodes(&s->L, row, a, b, vals, scratch);
}

static ts_status tsimd_prepare(const ts_model *m, const tse_config *cfg, void **out, tse_layout *layout,
                               ts_error *err) {
    /* the VBMI kernels (top levels by byte masks) unless lanes is 1 (depth steps from the roots) */
    const tss_kernels *k = tsk_tsimd(cfg->isa, cfg->lanes != 1 && (tsr_cpu_features() & TSR_CPU_AVX512VBMI) != 0);
    const tss_kernels *k_keys = k; /* the ISA of the depth steps' keys and the top levels */
    tss_state *s = calloc(1, sizeof *s);
    if (!s) return ts_fail(err, TS_ERR_NO_MEMORY, "trees-simd: out of memory");
    s->L.base_score = m->base_score;
    s->L.n_trees = m->n_trees;
    s->L.levels = TSS_LEVELS;
    s->L.top_exits = k && cfg->lanes < 8 ? k->top_exits : NULL;
    s->L.top_codes = s->L.top_exits ? k->top_codes : NULL;
    s->L.top_range = s->L.top_exits ? k->top_range : NULL;
    s->L.top_steps = s->L.top_exits ? k->top_steps : NULL;
    ts_status st = build(&s->L, m, err);
    if (st != TS_OK) {
        tsimd_free(s);
        return st;
    }
    /* Depth steps unless the lanes option asks for a SIMD kernel's width (8: AVX2, 16:
     * AVX-512; the best one the ISA allows): measured faster on AMD Zen 4, whose gathers
     * cost about 0.7 ns per element (docs/benchmarks.md). */
    s->kernel = s->L.cn ? tss_steps : tss_scalar;
    if (k) { /* the ISA's key functions for the depth steps */
        s->L.keys = k->keys;
        s->L.keys_up = s->L.gaps ? k->keys_up : NULL;
    }
    if (!s->L.keys_up) { /* the gap set serves only an ISA's float-first keys */
        free(s->L.gaps);
        free(s->L.gaps_any);
        s->L.gaps = NULL;
        s->L.gaps_any = NULL;
    }
    if (cfg->lanes >= 8) {
        if (k && k->lanes > cfg->lanes) k = tsk_tsimd(TS_ISA_AVX2, 0);
        s->kernel = k ? k->kernel : tss_scalar;
    } else {
        k = NULL;
    }
    uint64_t n_nodes = s->L.n_super << s->L.levels;
    /* a thread of its own pays from about 1 ms of work (~4 million entries visited) */
    uint64_t per_row = n_nodes / 8 + 1;
    /* the ISA reported: the SIMD kernel's, else that of the keys and top levels the depth
     * steps use (they ran on AVX-512 VBMI but were reported as scalar) */
    const tss_kernels *k_isa = k ? k : k_keys;
    *layout = (tse_layout){.isa = k_isa ? k_isa->isa : TS_ISA_SCALAR,
                           .scratch_bytes = tss_scratch_bytes(&s->L),
                           .rows_per_chunk = (size_t)((1u << 22) / per_row + 1)};
    *out = s;
    return TS_OK;
}

static void tsimd_score(const void *p, const float *x, size_t n_rows, size_t stride, double *out, void *scratch) {
    const tss_state *s = p;
    s->kernel(&s->L, x, n_rows, stride, out, scratch);
}

/* Double rows by the depth steps on double keys ("Double keys"); 0 where the model
 * compares floats, its double codes do not exist, or another kernel was asked for. */
static int tsimd_score_f64(const void *p, const double *x, size_t n_rows, size_t stride, double *out,
                           void *scratch) {
    const tss_state *s = p;
    if (s->kernel != tss_steps || !s->L.cnd) return 0;
    tss_steps_f64(&s->L, x, n_rows, stride, out, scratch);
    return 1;
}

const tse_engine tse_engine_trees_simd = {
    .id = TS_ENGINE_TREES_SIMD, .name = "trees-simd", .prepare = tsimd_prepare, .score = tsimd_score,
    .free = tsimd_free, .plan_candidate = tse_plan_always, .score_f64 = tsimd_score_f64,
    .tree_groups = tsimd_tree_groups, .tree_group_first = tsimd_tree_group_first, .tree_values = tsimd_tree_values,
};
