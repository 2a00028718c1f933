/* catboost_core.c: CatBoost's model arrays to the forest IR (catboost_core.h has the semantics). */
#include "io/catboost_core.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "io/json.h"
#include "model/derived.h"
#include "model/forest.h"

void tscb_model_clear(tscb_model *cb) {
    for (uint32_t i = 0; i < cb->n_floats; i++) {
        free(cb->floats[i].borders);
        free(cb->floats[i].name);
    }
    free(cb->floats);
    free(cb->tree_sizes);
    free(cb->tree_starts);
    free(cb->splits);
    free(cb->steps);
    free(cb->node_leaf);
    free(cb->leaves);
    free(cb->bias);
    for (uint32_t i = 0; i < cb->n_cats; i++) {
        free(cb->cats[i].onehot);
        free(cb->cats[i].name);
    }
    free(cb->cats);
    for (uint32_t i = 0; i < cb->n_ctrs; i++) {
        free(cb->ctrs[i].elems);
        free(cb->ctrs[i].borders);
        free(cb->ctrs[i].table_id);
    }
    free(cb->ctrs);
    for (uint32_t i = 0; i < cb->n_tables; i++) {
        free(cb->tables[i].id);
        free(cb->tables[i].keys);
        free(cb->tables[i].values);
    }
    free(cb->tables);
    memset(cb, 0, sizeof *cb);
}

void tscb_elems_order(tscb_elem *e, uint32_t n) {
    for (uint32_t i = 1; i < n; i++) { /* insertion sort by kind: stable */
        tscb_elem x = e[i];
        uint32_t j = i;
        for (; j > 0 && e[j - 1].kind > x.kind; j--) e[j] = e[j - 1];
        e[j] = x;
    }
}

void tscb_params_objective(struct tsj_parser *p, char out[64]) {
    char key[TSJ_KEY_MAX], k2[TSJ_KEY_MAX];
    int has, has2, truncated;
    tsj_type t;
    if (tsj_object_begin(p) != TS_OK) return;
    while (tsj_object_next(p, key, &has) == TS_OK && has) {
        if (strcmp(key, "loss_function") || tsj_peek(p, &t) != TS_OK || t != TSJ_OBJECT) {
            if (tsj_skip(p) != TS_OK) return;
            continue;
        }
        if (tsj_object_begin(p) != TS_OK) return;
        while (tsj_object_next(p, k2, &has2) == TS_OK && has2) {
            if (!strcmp(k2, "type") && tsj_peek(p, &t) == TS_OK && t == TSJ_STRING) {
                char buf[64];
                if (tsj_string_prefix(p, buf, sizeof buf, &truncated) != TS_OK) return;
                for (char *s = buf; *s; s++)
                    if ((unsigned char)*s < 0x20 || *s == 0x7f) *s = '?';
                memcpy(out, buf, sizeof buf);
                return;
            }
            if (tsj_skip(p) != TS_OK) return;
        }
        return;
    }
}

/* The number of elements of the array the parser is at (consumed); 0 when it is not one. */
static uint32_t array_length(struct tsj_parser *p) {
    tsj_type t;
    int has;
    uint32_t n = 0;
    if (tsj_peek(p, &t) != TS_OK || t != TSJ_ARRAY) {
        (void)tsj_skip(p);
        return 0;
    }
    if (tsj_array_begin(p) != TS_OK) return 0;
    while (tsj_array_next(p, &has) == TS_OK && has) {
        if (tsj_skip(p) != TS_OK) return 0;
        if (n < UINT32_MAX) n++;
    }
    return n;
}

void tscb_class_params(struct tsj_parser *p, uint32_t *n_names, uint32_t *n_labels) {
    char key[TSJ_KEY_MAX];
    int has;
    if (tsj_object_begin(p) != TS_OK) return;
    while (tsj_object_next(p, key, &has) == TS_OK && has) {
        if (!strcmp(key, "class_names")) {
            uint32_t n = array_length(p);
            if (n > *n_names) *n_names = n;
        } else if (!strcmp(key, "classes_count")) {
            long long n = 0;
            if (tsj_read_int(p, "classes_count", 0, UINT32_MAX, &n) != TS_OK) return;
            if ((uint32_t)n > *n_names) *n_names = (uint32_t)n;
        } else if (!strcmp(key, "class_to_label"))
            *n_labels = array_length(p);
        else if (tsj_skip(p) != TS_OK)
            return;
    }
}

/*
 * Categorical features
 * --------------------
 * CatBoost binarizes a document into its binary features in this order
 * (TModelTrees::CalcBinFeatures; a split_index counts them): every border of every float
 * feature, then every one-hot value of every categorical feature (OneHotFeatures, in
 * feature order), then every border of every CTR feature (CtrFeatures, in their order).
 * A categorical value is the hash of its text, h = CityHash64(text) & 0xffffffff
 * (CalcCatFeatureHash; cityhash.c); an integer category is the text of its decimal value.
 *   One-hot split (feature j, value v): true when h == v.
 *   CTR split (CTR c, border b): true when ctr_c(h) > b in float, where ctr_c(h) is
 *   computed from c's table (catboost/libs/model/ctr_provider.h, static_ctr_provider.cpp,
 *   TModelCtr::Calc, all in float): the row whose key is the projection hash
 *   CalcHash(0, (ui64)(i64)(i32)h) = M * (M * h') mod 2^64 (M = 0x4906ba494954cb65,
 *   h' the sign-extended hash) gives the counts, and
 *       Calc(num, den) = ((num + PriorNum) / (den + PriorDenom) + Shift) * Scale
 *   with (num, den) = (class 1, class 0 + class 1) for Borders of 2 classes; (classes above
 *   TargetBorderIdx, all) for Borders of more; (class TargetBorderIdx, all) for Buckets;
 *   (sum, count) for the mean value CTRs; (count, CounterDenominator) for Counter and
 *   FeatureFreq. A category without a row (never seen) gets the table's emptyVal (below).
 * Since M is odd the key is invertible: each row names one category hash.
 * The categories the model knows for feature j are its one-hot values, the values of the
 * one-hot conditions of CTR projections, and the hashes feature j takes in the keys of
 * every CTR table (below); sorted ascending they get the ids 0 .. n-1 (tsm_catmap), and
 * the caller passes ids (ts_model_category_id). Every split on feature j alone is then
 * decided by the id: a category set over the ids, rule TSM_CAT_LIGHTGBM (in the set goes
 * left; NaN, negatives and ids not in the set go right). The node's right child is the
 * side an unseen category takes (the one-hot split's false side; for a CTR split, the side
 * of CatBoost's value for a key not in the table > b), and the set holds the known ids
 * that go the other way: so NaN and every id the model does not know score as CatBoost
 * scores a category it never saw.
 * That value (emptyVal in static_ctr_provider.cpp) is Calc(0, CounterDenominator) for
 * Counter and FeatureFreq, Calc(0, 0) for the others.
 *
 * CTRs over combinations. A CTR's projection (TFeatureCombination) may hold several
 * categorical features, binarized float conditions (float feature f, border b: x > b with
 * f's NaN treatment, as a float split) and one-hot conditions (categorical feature j,
 * value v: h == v). CatBoost hashes a row's projection (ctr_provider.h CalcHashes) as
 *     key = 0; key = CalcHash(key, (ui64)(i32)h_j) for each categorical feature in order;
 *     then key = CalcHash(key, bit) for each float condition, then each one-hot condition
 * with CalcHash(a, b) = M * (a + M * b), and looks the key up in the CTR's table. Such a
 * value depends on several columns, so it is no split of one column: each CTR over a
 * combination becomes a derived value column of the model (model/derived.h: the
 * projection as elements reading the input columns, the table's keys in an open-addressing
 * index, the CTR's value per row and for a key not in the table), and its splits nodes
 * "value > border goes right" on that column (TSM_DERIVED); the scorer computes the
 * columns of each row before the engines run (scorer.c, derive_f32).
 * The caller passes ids, not hashes; an id maps back to its hash (catmap), so for known
 * categories the key is CatBoost's exactly. An unknown category (NaN id) has lost its hash,
 * but needs none: the key CatBoost computes from its real hash holds, at that feature's
 * place, a hash that no training row had (every training category of j that any table
 * holds is known to the catmap: below), so it is not a key of the table (but for a 64-bit
 * collision of keys, which CatBoost itself would not tell apart either) and CatBoost takes
 * the table's emptyVal: a row with an unknown category in any categorical element of the
 * projection takes that value (tsm_ctrtab_row). Unknown categories in a one-hot condition
 * give 0 (the condition's value is known).
 * Knowing every category of every key: the key of a projection of N elements is linear in
 * the elements' values, key = sum_i M^(N + 1 - i) v_i mod 2^64, so with all values but one
 * categorical v_p known, v_p = (key - A) M^-(N + 1 - p), and only the right A makes that a
 * sign-extended 32-bit value (a wrong one with probability 2^-32). A projection of one
 * categorical feature and k conditions is decoded over the 2^k condition bits; one of
 * n > 1 categorical features over the rows of the table of the same projection less one
 * categorical feature: CatBoost builds a combination by adding a categorical feature to
 * the projection of a CTR split already in the same tree (greedy_tensor_search.cpp), so
 * that table is in the model, and every training row's other values are one of its rows.
 * When that table is not there, or lost rows (ctr_leaf_count_limit keeps the most frequent
 * keys of each table), the candidates are the product of the known categories of the other
 * positions with the condition bits, up to 2^22 of them. The candidates A are sorted, and
 * each key finds its own by a binary search for the window of width 2^32 around
 * key * M^-(N + 1 - p). A key that decodes to no candidate is refused (the ids could not
 * give CatBoost's key: ctr_leaf_count_limit without store_all_simple_ctr can drop a
 * category from every table but keep it in a combination's keys).
 */

enum { BIN_FLOAT = 0, BIN_ONEHOT = 1, BIN_CTR = 2 };

/* A binary feature: one border of one float feature, one one-hot value or one CTR border. */
typedef struct bin_split {
    uint32_t kind;    /* BIN_* */
    uint32_t feature; /* index into cb->floats, cb->cats or cb->ctrs */
    float border;
    uint32_t value;   /* one-hot: the category hash */
} bin_split;

/* Per categorical feature: its known hashes (ids). */
typedef struct cat_ids {
    uint32_t *hashes;
    uint32_t n, cap;
} cat_ids;

/* Per CTR: the value of each id of its feature, and of an unseen category. */
typedef struct ctr_vals {
    float *of_id;
    float unseen;
} ctr_vals;

typedef struct build {
    const tscb_model *cb;
    const char *name;
    ts_error *err;
    ts_model *m;
    bin_split *bins;
    size_t n_bins;
    tsm_node *nodes;    /* scratch for one tree */
    double *values;     /* scratch: leaf values of one output */
    uint32_t *leaf_at;  /* non-symmetric: the leaf value index of each IR leaf */
    int32_t *ir_of;     /* non-symmetric: IR index of each node of the tree, -1 when not met */
    size_t *stack;
    cat_ids *ids;       /* n_cats */
    ctr_vals *ctrv;     /* n_ctrs */
    uint32_t *words;    /* scratch bitset */
    struct tab_dec *decs; /* the tables the CTRs use, decoded (n_decs) */
    uint32_t n_decs;
    uint32_t *dec_of;   /* per CTR: its table's index in decs */
    uint32_t *derived_of; /* per CTR over a combination: its derived column (model/derived.h) */
} build;

static const uint64_t CB_HASH_MULT = 0x4906ba494954cb65ULL;

/* The category hash of a single-feature projection hash, or -1 when key is none. */
static int64_t key_category(uint64_t key) {
    uint64_t inv = CB_HASH_MULT; /* Newton's iteration for the inverse mod 2^64 of an odd M */
    for (int i = 0; i < 6; i++) inv *= 2 - CB_HASH_MULT * inv;
    uint64_t h = key * inv * inv;
    if (h != (uint64_t)(int64_t)(int32_t)(uint32_t)h) return -1;
    return (int64_t)(uint32_t)h;
}

static float ctr_calc(const tscb_ctr *c, float num, float den) {
    float ctr = (num + c->prior_num) / (den + c->prior_denom);
    return (ctr + c->shift) * c->scale;
}

static int cmp_u32(const void *a, const void *b) {
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

static ts_status add_known(build *b, cat_ids *ci, uint32_t h) {
    if (ci->n == ci->cap) {
        uint32_t cap = ci->cap ? 2 * ci->cap : 16;
        uint32_t *p = realloc(ci->hashes, (size_t)cap * sizeof *p);
        if (!p) return ts_fail(b->err, TS_ERR_NO_MEMORY, "%s: out of memory", b->name);
        ci->hashes = p;
        ci->cap = cap;
    }
    ci->hashes[ci->n++] = h;
    return TS_OK;
}

static const tscb_ctr_table *ctr_table(const tscb_model *cb, const tscb_ctr *c) {
    for (uint32_t t = 0; t < cb->n_tables; t++)
        if (c->table_id && !strcmp(cb->tables[t].id, c->table_id)) return &cb->tables[t];
    return NULL;
}

/* The id of hash h among ci's (sorted) hashes, or -1. */
static int64_t id_of(const uint32_t *hashes, uint32_t n, uint32_t h) {
    uint32_t lo = 0, hi = n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (hashes[mid] < h) lo = mid + 1;
        else hi = mid;
    }
    return lo < n && hashes[lo] == h ? (int64_t)lo : -1;
}

/* The value of CTR c at table row r. */
static float ctr_row_value(const tscb_ctr *c, const tscb_ctr_table *t, size_t r) {
    const double *v = t->values + r * (t->stride - 1);
    uint32_t k = t->stride - 1;
    switch (c->type) {
    case TSCB_CTR_BINARIZED_MEAN:
    case TSCB_CTR_FLOAT_MEAN: return ctr_calc(c, (float)v[0], (float)(int64_t)v[1]);
    case TSCB_CTR_COUNTER:
    case TSCB_CTR_FEATURE_FREQ: return ctr_calc(c, (float)(int64_t)v[0], (float)t->counter_denominator);
    case TSCB_CTR_BUCKETS: {
        int64_t total = 0;
        for (uint32_t j = 0; j < k; j++) total += (int64_t)v[j];
        return ctr_calc(c, (float)(int64_t)v[c->target_border_idx], (float)total);
    }
    default: {
        if (k > 2) {
            int64_t good = 0, total = 0;
            for (uint32_t j = 0; j <= c->target_border_idx; j++) total += (int64_t)v[j];
            for (uint32_t j = c->target_border_idx + 1; j < k; j++) good += (int64_t)v[j];
            return ctr_calc(c, (float)good, (float)(total + good));
        }
        return ctr_calc(c, (float)(int64_t)v[1], (float)((int64_t)v[0] + (int64_t)v[1]));
    }
    }
}

/* ---- CTR tables: the categories their keys hash ------------------------------------ */

/* A table the CTRs use, with the categories of each of its rows (decoded from the keys).
 * The key of a projection of N elements with values v_0 .. v_{N-1} (CatBoost's CalcHash
 * chain from 0, model/derived.h) is sum_i M^(N + 1 - i) * v_i mod 2^64: linear in the
 * values. So with every element known but one categorical value v_p, v_p = (key - A) *
 * M^-(N + 1 - p), and it must be a sign-extended 32-bit hash: a wrong A gives a 64-bit
 * value that is one with probability 2^-32. */
typedef struct tab_dec {
    const tscb_ctr_table *t;
    const tscb_ctr *c;          /* its first CTR: the projection */
    uint32_t first_ctr;
    uint32_t n_cat, n_cond;     /* categorical elements (first), conditions (after) */
    uint32_t *tuples;           /* per row: n_cat hashes, then the condition bits (bit j: condition j) */
    int decoded;
    uint64_t failed_key;        /* a key no candidate explains */
} tab_dec;

/* Most conditions (float and one-hot) in a projection, and candidates tried per table. */
#define MAX_CONDS 20
#define MAX_CANDIDATES ((size_t)1 << 22)

typedef struct cand {
    uint64_t w;                 /* A * M^-(N + 1 - p) */
    uint32_t src;               /* the base row, or the condition bits */
} cand;

static int cmp_cand(const void *a, const void *b) {
    uint64_t x = ((const cand *)a)->w, y = ((const cand *)b)->w;
    return x < y ? -1 : x > y;
}

static uint64_t mult_inverse(void) {
    uint64_t inv = CB_HASH_MULT; /* Newton's iteration for the inverse mod 2^64 of an odd M */
    for (int i = 0; i < 6; i++) inv *= 2 - CB_HASH_MULT * inv;
    return inv;
}

static uint64_t pow_u64(uint64_t x, uint32_t e) {
    uint64_t r = 1;
    for (; e; e >>= 1, x *= x)
        if (e & 1) r *= x;
    return r;
}

static uint64_t sext(uint32_t h) { return (uint64_t)(int64_t)(int32_t)h; }

/* The first candidate w with key * M^-e - w a sign-extended 32-bit value (cands sorted by
 * w), or -1; *v gets that value. */
static int64_t find_cand(const cand *cs, size_t n, uint64_t u, uint32_t *v) {
    if (n == 0) return -1;
    uint64_t lo = u - ((uint64_t)1 << 31);
    size_t a = 0, z = n;
    while (a < z) {
        size_t mid = a + (z - a) / 2;
        if (cs[mid].w < lo) a = mid + 1;
        else z = mid;
    }
    for (size_t k = 0; k < n; k++) { /* the window [lo, lo + 2^32) may wrap past 2^64 */
        size_t i = (a + k) % n;
        if (cs[i].w - lo >= ((uint64_t)1 << 32)) return -1;
        *v = (uint32_t)(u - cs[i].w);
        return (int64_t)i;
    }
    return -1;
}

/* Two conditions are the same (kind, feature, border or value). */
static int same_cond(const tscb_elem *x, const tscb_elem *y) {
    return x->kind == y->kind && x->feature == y->feature &&
           (x->kind == TSCB_ELEM_ONEHOT ? x->value == y->value : memcmp(&x->border, &y->border, sizeof x->border) == 0);
}

/* base's categorical features are d's without position p, and its conditions d's (map[j]:
 * base's condition of d's condition j). */
static int is_base(const tab_dec *d, const tab_dec *base, uint32_t p, uint32_t *map) {
    if (base->n_cat + 1 != d->n_cat || base->n_cond != d->n_cond || !base->decoded) return 0;
    for (uint32_t i = 0, k = 0; i < d->n_cat; i++)
        if (i != p && d->c->elems[i].feature != base->c->elems[k++].feature) return 0;
    for (uint32_t j = 0; j < d->n_cond; j++) {
        map[j] = UINT32_MAX;
        for (uint32_t q = 0; q < base->n_cond && map[j] == UINT32_MAX; q++)
            if (same_cond(&d->c->elems[d->n_cat + j], &base->c->elems[base->n_cat + q])) map[j] = q;
        if (map[j] == UINT32_MAX) return 0;
    }
    return 1;
}

/* Condition bits of a base row in d's order. */
static uint32_t remap_bits(uint32_t bits, const uint32_t *map, uint32_t n) {
    uint32_t r = 0;
    for (uint32_t j = 0; j < n; j++) r |= ((bits >> map[j]) & 1u) << j;
    return r;
}

/* Where the candidates for position p come from: the rows of a table over the projection
 * less p (base, its conditions map[j]); else the product of the known categories of every
 * other categorical position (sets[i], sizes[i]); either with the condition bits (2^n_cond
 * values, when not the base's). */
typedef struct cand_src {
    const tab_dec *base;
    const uint32_t *map;
    const uint32_t *const *sets;
    const uint32_t *sizes;
    size_t n;
} cand_src;

/* Candidate r's values into tu (every categorical position but p, and the condition bits). */
static void cand_tuple(const tab_dec *d, uint32_t p, const cand_src *c, size_t r, uint32_t *tu) {
    if (c->base) {
        const uint32_t *bt = c->base->tuples + r * (c->base->n_cat + 1);
        for (uint32_t q = 0, k = 0; q < d->n_cat; q++)
            if (q != p) tu[q] = bt[k++];
        tu[d->n_cat] = remap_bits(bt[c->base->n_cat], c->map, d->n_cond);
        return;
    }
    tu[d->n_cat] = (uint32_t)(r & (((size_t)1 << d->n_cond) - 1));
    r >>= d->n_cond;
    for (uint32_t q = 0; q < d->n_cat; q++) {
        if (q == p) continue;
        tu[q] = c->sets[q][r % c->sizes[q]];
        r /= c->sizes[q];
    }
}

/* Decode every row of d, solving for categorical position p over the candidates of c;
 * *ok = 0 (and no tuples) when some key has none. */
static ts_status decode_rows(build *b, tab_dec *d, uint32_t p, const cand_src *c, int *ok) {
    uint32_t N = d->n_cat + d->n_cond, W = d->n_cat + 1;
    uint64_t pw[TSCB_MAX_CATS_PER_CTR + MAX_CONDS];
    for (uint32_t i = 0; i < N; i++) pw[i] = pow_u64(CB_HASH_MULT, N + 1 - i);
    uint64_t inv_p = pow_u64(mult_inverse(), N + 1 - p);
    cand *cs = malloc((c->n ? c->n : 1) * sizeof *cs);
    uint32_t *tu = malloc(((size_t)d->t->n_rows + 1) * W * sizeof *tu);
    if (!cs || !tu) {
        free(cs);
        free(tu);
        return ts_fail(b->err, TS_ERR_NO_MEMORY, "%s: out of memory", b->name);
    }
    uint32_t *tmp = tu + (size_t)d->t->n_rows * W;
    for (size_t r = 0; r < c->n; r++) {
        cand_tuple(d, p, c, r, tmp);
        uint64_t a = 0;
        for (uint32_t j = 0; j < d->n_cond; j++)
            if ((tmp[d->n_cat] >> j) & 1u) a += pw[d->n_cat + j];
        for (uint32_t i = 0; i < d->n_cat; i++)
            if (i != p) a += pw[i] * sext(tmp[i]);
        cs[r] = (cand){a * inv_p, (uint32_t)r};
    }
    qsort(cs, c->n, sizeof *cs, cmp_cand);
    *ok = 1;
    for (size_t r = 0; r < d->t->n_rows && *ok; r++) {
        uint32_t *row = tu + r * W, v = 0;
        memset(row, 0, W * sizeof *row);
        if (d->t->keys[r] == UINT64_MAX) continue; /* an empty bucket */
        int64_t i = find_cand(cs, c->n, d->t->keys[r] * inv_p, &v);
        if (i < 0) {
            *ok = 0;
            d->failed_key = d->t->keys[r];
            break;
        }
        cand_tuple(d, p, c, cs[i].src, row);
        row[p] = v;
    }
    free(cs);
    if (!*ok) {
        free(tu);
        return TS_OK;
    }
    d->tuples = tu;
    d->decoded = 1;
    return TS_OK;
}

/* The known categories of every feature so far, sorted and without repeats. */
static void dedup_known(build *b) {
    for (uint32_t j = 0; j < b->cb->n_cats; j++) {
        cat_ids *ci = &b->ids[j];
        if (ci->n == 0) continue;
        qsort(ci->hashes, ci->n, sizeof *ci->hashes, cmp_u32);
        uint32_t w = 1;
        for (uint32_t k = 1; k < ci->n; k++)
            if (ci->hashes[k] != ci->hashes[w - 1]) ci->hashes[w++] = ci->hashes[k];
        ci->n = w;
    }
}

/* Decode d over the product of the known categories of its other categorical positions
 * (a combination whose base table is not in the model, or lost rows to
 * ctr_leaf_count_limit), when that product is small enough. */
static ts_status decode_product(build *b, tab_dec *d, uint32_t p, int *ok) {
    const uint32_t *sets[TSCB_MAX_CATS_PER_CTR];
    uint32_t sizes[TSCB_MAX_CATS_PER_CTR];
    size_t n = (size_t)1 << d->n_cond;
    *ok = 0;
    for (uint32_t q = 0; q < d->n_cat; q++) {
        if (q == p) continue;
        const cat_ids *ci = &b->ids[d->c->elems[q].feature];
        sets[q] = ci->hashes;
        sizes[q] = ci->n;
        if (ci->n == 0 || n > MAX_CANDIDATES / ci->n) return TS_OK;
        n *= ci->n;
    }
    cand_src c = {NULL, NULL, sets, sizes, n};
    return decode_rows(b, d, p, &c, ok);
}

/* Decode d: one categorical element over its condition bits; more from a table over the
 * same projection less one categorical feature (CatBoost grows a combination from a CTR
 * split of the same tree, whose table the model keeps: every training row's other
 * categories are a row of it), else over the product of the known categories. */
static ts_status decode_table(build *b, tab_dec *d) {
    int ok = 0;
    if (d->n_cat == 1) {
        cand_src c = {NULL, NULL, NULL, NULL, (size_t)1 << d->n_cond};
        TS_TRY(decode_rows(b, d, 0, &c, &ok));
    }
    uint32_t map[MAX_CONDS];
    for (uint32_t i = 0; i < b->n_decs && !ok && d->n_cat > 1; i++)
        for (uint32_t p = 0; p < d->n_cat && !ok; p++)
            if (is_base(d, &b->decs[i], p, map)) {
                cand_src c = {&b->decs[i], map, NULL, NULL, b->decs[i].t->n_rows};
                TS_TRY(decode_rows(b, d, p, &c, &ok));
            }
    if (!ok && d->n_cat > 1) {
        dedup_known(b);
        for (uint32_t p = 0; p < d->n_cat && !ok; p++) TS_TRY(decode_product(b, d, p, &ok));
    }
    if (ok) {
        for (size_t r = 0; r < d->t->n_rows; r++) /* its categories are known from now on */
            for (uint32_t i = 0; i < d->n_cat && d->t->keys[r] != UINT64_MAX; i++)
                TS_TRY(add_known(b, &b->ids[d->c->elems[i].feature], d->tuples[r * (d->n_cat + 1) + i]));
        return TS_OK;
    }
    if (d->n_cat == 1 && d->n_cond == 0)
        return ts_fail(b->err, TS_ERR_PARSE, "%s: CTR %u: table key %llu is not the hash of one category", b->name,
                       d->first_ctr, (unsigned long long)d->failed_key);
    return ts_fail(b->err, TS_ERR_UNSUPPORTED,
                   "%s: CTR %u: a CTR over a combination of %u categorical features and %u conditions whose table key "
                   "%llu is not the hash of categories the model's other tables name: an input category's id cannot "
                   "give CatBoost's key exactly (models trained with ctr_leaf_count_limit can have such keys)",
                   b->name, d->first_ctr, d->n_cat, d->n_cond, (unsigned long long)d->failed_key);
}

/* Check a CTR's projection and the table it names; the table's tab_dec. */
static ts_status check_ctr(build *b, uint32_t i) {
    const tscb_model *cb = b->cb;
    const tscb_ctr *c = &cb->ctrs[i];
    uint32_t n_cat = 0;
    for (uint32_t k = 0; k < c->n_elems; k++) {
        const tscb_elem *e = &c->elems[k];
        uint32_t lim = e->kind == TSCB_ELEM_FLOAT ? cb->n_floats : cb->n_cats;
        if (e->feature < 0 || (uint32_t)e->feature >= lim || (k > 0 && e->kind < c->elems[k - 1].kind))
            return ts_fail(b->err, TS_ERR_PARSE, "%s: CTR %u: element %u names %s feature %d of the model's %u (or is out "
                           "of order)", b->name, i, k, e->kind == TSCB_ELEM_FLOAT ? "float" : "categorical",
                           (int)e->feature, lim);
        if (e->kind == TSCB_ELEM_FLOAT && e->border != e->border)
            return ts_fail(b->err, TS_ERR_PARSE, "%s: CTR %u: element %u: border NaN", b->name, i, k);
        if (e->kind == TSCB_ELEM_ONEHOT) TS_TRY(add_known(b, &b->ids[e->feature], e->value));
        n_cat += e->kind == TSCB_ELEM_CAT;
    }
    if (n_cat == 0 || c->n_elems - n_cat > MAX_CONDS)
        return ts_fail(b->err, TS_ERR_UNSUPPORTED, "%s: CTR %u: a projection of %u categorical features and %u "
                       "conditions (1 or more, and at most %d conditions, are read)", b->name, i, n_cat,
                       c->n_elems - n_cat, MAX_CONDS);
    if (c->cat >= 0 && (c->n_elems != 1 || c->cat != c->elems[0].feature))
        return ts_fail(b->err, TS_ERR_PARSE, "%s: CTR %u: inconsistent projection", b->name, i);
    for (uint32_t k = 0; k < c->n_borders; k++)
        if (c->borders[k] != c->borders[k])
            return ts_fail(b->err, TS_ERR_PARSE, "%s: CTR %u: border %u is NaN", b->name, i, k);
    const tscb_ctr_table *t = ctr_table(cb, c);
    if (!t)
        return ts_fail(b->err, TS_ERR_PARSE, "%s: CTR %u: no table '%.80s' in ctr_data", b->name, i,
                       c->table_id ? c->table_id : "");
    /* values per row: a count (Counter, FeatureFreq); sum and count (mean values); a
     * count per class (Borders, Buckets) */
    uint32_t need = c->type == TSCB_CTR_COUNTER || c->type == TSCB_CTR_FEATURE_FREQ ? 1 : 2;
    if (t->stride < 1 + need || ((c->type == TSCB_CTR_BORDERS || c->type == TSCB_CTR_BUCKETS) &&
                                 c->target_border_idx >= t->stride - 1))
        return ts_fail(b->err, TS_ERR_PARSE, "%s: CTR %u: table '%.80s' has rows of %u values, too few for its "
                       "type and target border %u", b->name, i, t->id, t->stride - 1, c->target_border_idx);
    if (t->n_rows >= UINT32_MAX / 2)
        return ts_fail(b->err, TS_ERR_LIMIT, "%s: CTR %u: a table of %zu rows", b->name, i, t->n_rows);
    for (uint32_t k = 0; k < b->n_decs; k++)
        if (b->decs[k].t == t) {
            const tscb_ctr *o = b->decs[k].c;
            int same = o->n_elems == c->n_elems;
            for (uint32_t e = 0; same && e < c->n_elems; e++)
                same = o->elems[e].kind == c->elems[e].kind && o->elems[e].feature == c->elems[e].feature &&
                       (o->elems[e].kind == TSCB_ELEM_CAT || same_cond(&o->elems[e], &c->elems[e]));
            if (!same)
                return ts_fail(b->err, TS_ERR_PARSE, "%s: CTRs %u and %u name one table over two projections", b->name,
                               b->decs[k].first_ctr, i);
            b->dec_of[i] = k;
            return TS_OK;
        }
    b->dec_of[i] = b->n_decs;
    b->decs[b->n_decs++] = (tab_dec){t, c, i, n_cat, c->n_elems - n_cat, NULL, 0, 0};
    return TS_OK;
}

/* Every table decoded (fewest categorical features first), every category of every key
 * known to its feature. */
static ts_status decode_tables(build *b) {
    for (uint32_t n = 1; n <= TSCB_MAX_CATS_PER_CTR; n++)
        for (uint32_t k = 0; k < b->n_decs; k++)
            if (b->decs[k].n_cat == n) TS_TRY(decode_table(b, &b->decs[k]));
    for (uint32_t k = 0; k < b->n_decs; k++) {
        const tab_dec *d = &b->decs[k];
        if (!d->decoded)
            return ts_fail(b->err, TS_ERR_LIMIT, "%s: CTR %u: a projection of %u categorical features (at most %d are "
                           "read)", b->name, d->first_ctr, d->n_cat, TSCB_MAX_CATS_PER_CTR);
    }
    return TS_OK;
}

/* The value of CTR c for a key not in its table: CatBoost's emptyVal (Counter and
 * FeatureFreq: Calc(0, CounterDenominator); the others Calc(0, 0)). */
static float ctr_unseen(const tscb_ctr *c, const tscb_ctr_table *t) {
    if (c->type == TSCB_CTR_COUNTER || c->type == TSCB_CTR_FEATURE_FREQ)
        return ctr_calc(c, 0.0f, (float)t->counter_denominator);
    return ctr_calc(c, 0.0f, 0.0f);
}

/* A model table (model/derived.h) for decoded table d, and a derived column for each of
 * its CTRs. */
static ts_status add_ctrtab(build *b, uint32_t k) {
    const tscb_model *cb = b->cb;
    const tab_dec *d = &b->decs[k];
    ts_model *m = b->m;
    tsm_ctrtab *tab = &m->ctrtabs[m->n_ctrtabs];
    memset(tab, 0, sizeof *tab);
    tab->elems = calloc(d->c->n_elems, sizeof *tab->elems);
    if (!tab->elems) return ts_fail(b->err, TS_ERR_NO_MEMORY, "%s: out of memory", b->name);
    uint32_t ti = m->n_ctrtabs++;
    tab->n_elems = d->c->n_elems;
    for (uint32_t i = 0; i < d->c->n_elems; i++) {
        const tscb_elem *e = &d->c->elems[i];
        tsm_elem *x = &tab->elems[i];
        if (e->kind == TSCB_ELEM_FLOAT) {
            const tscb_float *f = &cb->floats[e->feature];
            *x = (tsm_elem){TSM_ELEM_FLOAT, (uint32_t)f->flat_index, 0, 0, e->border,
                            f->has_nans && f->nan_treatment == TSCB_NAN_AS_TRUE && e->border < INFINITY};
        } else {
            *x = (tsm_elem){e->kind == TSCB_ELEM_CAT ? TSM_ELEM_CAT : TSM_ELEM_ONEHOT,
                            (uint32_t)cb->cats[e->feature].flat_index, (uint32_t)e->feature, e->value, 0.0f, 0};
        }
    }
    ts_status st = tsm_ctrtab_set_keys(tab, d->t->keys, (uint32_t)d->t->n_rows, b->err);
    if (st != TS_OK) {
        ts_error_prefix(b->err, "%s: CTR %u", b->name, d->first_ctr);
        return st;
    }
    tab->first = m->n_derived;
    for (uint32_t i = 0; i < cb->n_ctrs; i++) {
        if (b->dec_of[i] != k) continue;
        const tscb_ctr *c = &cb->ctrs[i];
        tsm_derived *dv = &m->derived[m->n_derived];
        dv->tab = ti;
        dv->values = malloc((d->t->n_rows + 1) * sizeof *dv->values);
        if (!dv->values) return ts_fail(b->err, TS_ERR_NO_MEMORY, "%s: out of memory", b->name);
        b->derived_of[i] = m->n_derived++;
        for (size_t r = 0; r < d->t->n_rows; r++) dv->values[r] = ctr_row_value(c, d->t, r);
        dv->values[d->t->n_rows] = ctr_unseen(c, d->t);
        tab->count++;
    }
    if (tab->count) tsm_ctrtab_set_first(tab, m->derived[tab->first].values);
    return TS_OK;
}

/* The categorical features: known hashes per feature (one-hot values, and the categories
 * of every table's keys), each single-feature CTR's value per id, and the derived value
 * columns of the CTRs over combinations. */
static ts_status check_categorical(build *b) {
    const tscb_model *cb = b->cb;
    if (cb->n_cats == 0 && cb->n_ctrs == 0) return TS_OK;
    b->ids = calloc(cb->n_cats ? cb->n_cats : 1, sizeof *b->ids);
    b->ctrv = calloc(cb->n_ctrs ? cb->n_ctrs : 1, sizeof *b->ctrv);
    b->decs = calloc(cb->n_ctrs ? cb->n_ctrs : 1, sizeof *b->decs);
    b->dec_of = calloc(cb->n_ctrs ? cb->n_ctrs : 1, sizeof *b->dec_of);
    b->derived_of = calloc(cb->n_ctrs ? cb->n_ctrs : 1, sizeof *b->derived_of);
    if (!b->ids || !b->ctrv || !b->decs || !b->dec_of || !b->derived_of)
        return ts_fail(b->err, TS_ERR_NO_MEMORY, "%s: out of memory", b->name);
    for (uint32_t j = 0; j < cb->n_cats; j++) {
        const tscb_cat *f = &cb->cats[j];
        if (f->flat_index < 0 || (uint32_t)f->flat_index >= TSM_MAX_FEATURES)
            return ts_fail(b->err, f->flat_index < 0 ? TS_ERR_PARSE : TS_ERR_LIMIT,
                           "%s: categorical feature %u: flat index %d is outside [0, %u)", b->name, j,
                           (int)f->flat_index, TSM_MAX_FEATURES);
        for (uint32_t i = 0; i < cb->n_floats; i++)
            if (cb->floats[i].flat_index == f->flat_index)
                return ts_fail(b->err, TS_ERR_PARSE, "%s: column %d is both float feature %u and categorical feature %u",
                               b->name, (int)f->flat_index, i, j);
        for (uint32_t k = 0; k < f->n_onehot; k++) TS_TRY(add_known(b, &b->ids[j], f->onehot[k]));
    }
    for (uint32_t i = 0; i < cb->n_ctrs; i++) TS_TRY(check_ctr(b, i));
    TS_TRY(decode_tables(b));
    dedup_known(b);
    for (uint32_t j = 0; j < cb->n_cats; j++) {
        const cat_ids *ci = &b->ids[j];
        const uint32_t w = ci->n;
        if (w > (1u << 24)) /* ids are passed as floats: exact up to 2^24 */
            return ts_fail(b->err, TS_ERR_LIMIT, "%s: categorical feature %u: %u known categories (the limit is %u)",
                           b->name, j, w, 1u << 24);
    }
    for (uint32_t i = 0; i < cb->n_ctrs; i++) {
        const tscb_ctr *c = &cb->ctrs[i];
        if (c->cat < 0) continue; /* a combination: a derived column */
        const tscb_ctr_table *t = b->decs[b->dec_of[i]].t;
        const cat_ids *ci = &b->ids[c->cat];
        ctr_vals *cv = &b->ctrv[i];
        cv->unseen = ctr_unseen(c, t);
        cv->of_id = malloc((ci->n ? ci->n : 1) * sizeof *cv->of_id);
        if (!cv->of_id) return ts_fail(b->err, TS_ERR_NO_MEMORY, "%s: out of memory", b->name);
        for (uint32_t k = 0; k < ci->n; k++) cv->of_id[k] = cv->unseen;
        for (size_t r = 0; r < t->n_rows; r++) {
            if (t->keys[r] == UINT64_MAX) continue;
            int64_t id = id_of(ci->hashes, ci->n, (uint32_t)key_category(t->keys[r]));
            if (id >= 0) cv->of_id[id] = ctr_row_value(c, t, r);
        }
    }
    uint32_t n_comb = 0;
    for (uint32_t i = 0; i < cb->n_ctrs; i++) n_comb += cb->ctrs[i].cat < 0;
    if (n_comb) {
        b->m->ctrtabs = calloc(b->n_decs, sizeof *b->m->ctrtabs);
        b->m->derived = calloc(n_comb, sizeof *b->m->derived);
        if (!b->m->ctrtabs || !b->m->derived) return ts_fail(b->err, TS_ERR_NO_MEMORY, "%s: out of memory", b->name);
        for (uint32_t k = 0; k < b->n_decs; k++)
            if (b->decs[k].c->cat < 0) TS_TRY(add_ctrtab(b, k));
    }
    size_t words = 1;
    for (uint32_t j = 0; j < cb->n_cats; j++)
        if (b->ids[j].n / 32 + 1 > words) words = b->ids[j].n / 32 + 1;
    b->words = malloc(words * sizeof *b->words);
    if (!b->words) return ts_fail(b->err, TS_ERR_NO_MEMORY, "%s: out of memory", b->name);
    return TS_OK;
}

/* The IR node of a one-hot or CTR binary feature; *swap when its children must be
 * exchanged (the true side left: unseen categories take the false side). */
static ts_status categorical_node(build *b, const bin_split *s, tsm_node *nd, int *swap) {
    const tscb_model *cb = b->cb;
    uint32_t j = s->kind == BIN_ONEHOT ? s->feature : (uint32_t)cb->ctrs[s->feature].cat;
    cat_ids *ci = &b->ids[j];
    int unseen_true = s->kind == BIN_CTR ? b->ctrv[s->feature].unseen > s->border : 0;
    uint32_t n_words = ci->n / 32 + 1;
    memset(b->words, 0, n_words * sizeof *b->words);
    for (uint32_t k = 0; k < ci->n; k++) {
        int t = s->kind == BIN_ONEHOT ? ci->hashes[k] == s->value : b->ctrv[s->feature].of_id[k] > s->border;
        if (t != unseen_true) b->words[k / 32] |= 1u << (k % 32);
    }
    uint32_t index;
    TS_TRY(tsm_model_add_catset(b->m, (uint32_t)cb->cats[j].flat_index, TSM_CAT_LIGHTGBM, 0, b->words, n_words, &index,
                                b->err));
    nd->feature = (uint32_t)cb->cats[j].flat_index;
    nd->threshold = (float)index;
    nd->flags = TSM_CATEGORICAL;
    *swap = !unseen_true;
    return TS_OK;
}

/* The IR node of binary feature `bin` (its children are set by the caller, then exchanged
 * when *swap). */
static ts_status split_node(build *b, uint32_t tree, int32_t bin, tsm_node *nd, int *swap) {
    *swap = 0;
    if (bin < 0 || (size_t)bin >= b->n_bins)
        return ts_fail(b->err, TS_ERR_PARSE, "%s: tree %u: split %d is not one of the model's %zu binary features (float "
                       "borders, one-hot values, CTR borders)", b->name, tree, (int)bin, b->n_bins);
    const bin_split *s = &b->bins[bin];
    if (s->kind == BIN_CTR && b->cb->ctrs[s->feature].cat < 0) { /* a CTR over a combination: its derived column */
        nd->feature = b->derived_of[s->feature];
        nd->threshold = s->border;
        nd->flags = TSM_DERIVED | TSM_MISSING_LEFT; /* value > border goes right (the bit is set) */
        return TS_OK;
    }
    if (s->kind != BIN_FLOAT) return categorical_node(b, s, nd, swap);
    const tscb_float *f = &b->cb->floats[s->feature];
    /* x > border goes right (the bit is set); NaN is +inf (true) only for AsTrue with HasNans */
    int nan_true = f->has_nans && f->nan_treatment == TSCB_NAN_AS_TRUE && s->border < INFINITY;
    nd->feature = (uint32_t)f->flat_index;
    nd->threshold = s->border;
    nd->flags = nan_true ? 0u : TSM_MISSING_LEFT;
    return TS_OK;
}

static ts_status check_features(build *b) {
    const tscb_model *cb = b->cb;
    size_t total = 0;
    for (uint32_t i = 0; i < cb->n_floats; i++) {
        const tscb_float *f = &cb->floats[i];
        if (f->flat_index < 0 || (uint32_t)f->flat_index >= TSM_MAX_FEATURES)
            return ts_fail(b->err, f->flat_index < 0 ? TS_ERR_PARSE : TS_ERR_LIMIT,
                           "%s: float feature %u: flat index %d is outside [0, %u)", b->name, i, (int)f->flat_index,
                           TSM_MAX_FEATURES);
        if (f->nan_treatment < TSCB_NAN_AS_IS || f->nan_treatment > TSCB_NAN_AS_TRUE)
            return ts_fail(b->err, TS_ERR_PARSE, "%s: float feature %u: unknown NanValueTreatment %d", b->name, i,
                           f->nan_treatment);
        for (uint32_t k = 0; k < f->n_borders; k++) {
            if (f->borders[k] != f->borders[k])
                return ts_fail(b->err, TS_ERR_PARSE, "%s: float feature %u: border %u is NaN", b->name, i, k);
            if (k > 0 && f->borders[k] < f->borders[k - 1])
                return ts_fail(b->err, TS_ERR_PARSE,
                               "%s: float feature %u: borders %u and %u descend (%.9g > %.9g); CatBoost's binarization "
                               "needs them ascending",
                               b->name, i, k - 1, k, (double)f->borders[k - 1], (double)f->borders[k]);
        }
        total += f->n_borders;
    }
    for (uint32_t i = 0; i < cb->n_cats; i++) total += cb->cats[i].n_onehot;
    for (uint32_t i = 0; i < cb->n_ctrs; i++) total += cb->ctrs[i].n_borders;
    b->n_bins = total;
    if (total == 0) return TS_OK;
    b->bins = malloc(total * sizeof *b->bins);
    if (!b->bins) return ts_fail(b->err, TS_ERR_NO_MEMORY, "%s: out of memory", b->name);
    size_t j = 0;
    for (uint32_t i = 0; i < cb->n_floats; i++)
        for (uint32_t k = 0; k < cb->floats[i].n_borders; k++)
            b->bins[j++] = (bin_split){BIN_FLOAT, i, cb->floats[i].borders[k], 0};
    for (uint32_t i = 0; i < cb->n_cats; i++)
        for (uint32_t k = 0; k < cb->cats[i].n_onehot; k++)
            b->bins[j++] = (bin_split){BIN_ONEHOT, i, 0.0f, cb->cats[i].onehot[k]};
    for (uint32_t i = 0; i < cb->n_ctrs; i++)
        for (uint32_t k = 0; k < cb->ctrs[i].n_borders; k++)
            b->bins[j++] = (bin_split){BIN_CTR, i, cb->ctrs[i].borders[k], 0};
    return TS_OK;
}

/* Add the tree just described (nodes, n_nodes, and a value index per leaf via `value_of`)
 * once per output. */
static ts_status add_outputs(build *b, uint32_t tree, uint32_t n_nodes, uint32_t n_leaves, const uint32_t *first) {
    uint32_t dim = b->cb->dim;
    for (uint32_t k = 0; k < dim; k++) {
        for (uint32_t j = 0; j < n_leaves; j++) b->values[j] = b->cb->leaves[first[j] + k];
        ts_status st = tsm_model_add_tree(b->m, n_nodes, n_nodes ? b->nodes : NULL, n_leaves, b->values, 1.0, b->err);
        if (st != TS_OK) {
            ts_error_prefix(b->err, "%s: CatBoost tree %u", b->name, tree);
            return st;
        }
        b->m->trees[b->m->n_trees - 1].output = k;
    }
    return TS_OK;
}

static ts_status oblivious_trees(build *b) {
    const tscb_model *cb = b->cb;
    size_t split_at = 0, leaf_at = 0;
    uint32_t dim = cb->dim;
    uint32_t max_depth = 0;
    for (uint32_t t = 0; t < cb->n_trees; t++) {
        int32_t d = cb->tree_sizes[t];
        if (d < 0 || d > TSCB_MAX_DEPTH)
            return ts_fail(b->err, d < 0 ? TS_ERR_PARSE : TS_ERR_LIMIT, "%s: tree %u: depth %d is outside [0, %d]",
                           b->name, t, (int)d, TSCB_MAX_DEPTH);
        if ((uint32_t)d > max_depth) max_depth = (uint32_t)d;
        /* what the trees claim must be in the file before anything of that size is allocated */
        size_t values = ((size_t)1 << d) * dim;
        if (values > cb->n_leaves - leaf_at || (size_t)d > cb->n_splits - split_at)
            return ts_fail(b->err, TS_ERR_PARSE,
                           "%s: tree %u: depth %d needs %zu leaf values and %d splits, more than the model lists "
                           "after the trees before it (%zu values, %zu splits in all)",
                           b->name, t, (int)d, values, (int)d, cb->n_leaves, cb->n_splits);
        leaf_at += values;
        split_at += (size_t)d;
    }
    split_at = leaf_at = 0;
    size_t leaves_max = (size_t)1 << max_depth;
    b->nodes = malloc(leaves_max * sizeof *b->nodes);
    b->values = malloc(leaves_max * sizeof *b->values);
    uint32_t *first = malloc(leaves_max * sizeof *first);
    b->leaf_at = first;
    if (!b->nodes || !b->values || !first) return ts_fail(b->err, TS_ERR_NO_MEMORY, "%s: out of memory", b->name);
    for (uint32_t t = 0; t < cb->n_trees; t++) {
        uint32_t d = (uint32_t)cb->tree_sizes[t];
        if (cb->tree_starts && cb->tree_starts[t] >= 0 && (size_t)cb->tree_starts[t] != split_at)
            return ts_fail(b->err, TS_ERR_PARSE, "%s: tree %u starts at split %d, expected %zu (the splits of the trees "
                           "before it)", b->name, t, (int)cb->tree_starts[t], split_at);
        if (split_at + d > cb->n_splits)
            return ts_fail(b->err, TS_ERR_PARSE, "%s: tree %u: its %u splits run past the %zu of the model", b->name, t, d,
                           cb->n_splits);
        size_t n_leaves = (size_t)1 << d;
        if (leaf_at > cb->n_leaves || n_leaves * dim > cb->n_leaves - leaf_at)
            return ts_fail(b->err, TS_ERR_PARSE, "%s: tree %u: its %zu leaf values run past the %zu of the model", b->name,
                           t, n_leaves * dim, cb->n_leaves);
        /* heap order: node i at level L tests split d-1-L; children 2i+1, 2i+2; the last
         * level's children are leaves, left to right = CatBoost's leaf index */
        uint32_t n_nodes = (uint32_t)n_leaves - 1;
        for (uint32_t i = 0; i < n_nodes; i++) {
            uint32_t level = 0;
            for (uint32_t x = i + 1; x > 1; x >>= 1) level++;
            tsm_node *nd = &b->nodes[i];
            int swap;
            TS_TRY(split_node(b, t, cb->splits[split_at + d - 1 - level], nd, &swap));
            if (level + 1 < d) {
                nd->left = (int32_t)(2 * i + 1);
                nd->right = (int32_t)(2 * i + 2);
            } else {
                uint32_t j = 2 * (i - (n_nodes >> 1));
                nd->left = ~(int32_t)j;
                nd->right = ~(int32_t)(j + 1);
            }
            if (swap) {
                int32_t x = nd->left;
                nd->left = nd->right;
                nd->right = x;
            }
        }
        for (uint32_t j = 0; j < n_leaves; j++) first[j] = (uint32_t)(leaf_at + (size_t)j * dim);
        TS_TRY(add_outputs(b, t, n_nodes, (uint32_t)n_leaves, first));
        split_at += d;
        leaf_at += n_leaves * dim;
    }
    if (split_at != cb->n_splits)
        return ts_fail(b->err, TS_ERR_PARSE, "%s: the trees use %zu splits of the %zu listed", b->name, split_at,
                       cb->n_splits);
    if (leaf_at != cb->n_leaves)
        return ts_fail(b->err, TS_ERR_PARSE, "%s: the trees use %zu leaf values of the %zu listed", b->name, leaf_at,
                       cb->n_leaves);
    return TS_OK;
}

/* A leaf exit at node n: its value index, checked. */
static ts_status leaf_exit(build *b, uint32_t tree, size_t n, uint32_t *n_leaves, int32_t *ref) {
    uint32_t v = b->cb->node_leaf[n];
    if ((size_t)v > b->cb->n_leaves || b->cb->dim > b->cb->n_leaves - v)
        return ts_fail(b->err, TS_ERR_PARSE, "%s: tree %u: node %zu: leaf value index %u is outside the %zu leaf values",
                       b->name, tree, n, v, b->cb->n_leaves);
    b->leaf_at[*n_leaves] = v;
    *ref = ~(int32_t)*n_leaves;
    ++*n_leaves;
    return TS_OK;
}

static ts_status nonsymmetric_trees(build *b) {
    const tscb_model *cb = b->cb;
    if (cb->n_node_leaf != cb->n_steps || cb->n_splits != cb->n_steps)
        return ts_fail(b->err, TS_ERR_PARSE, "%s: %zu step nodes, %zu node leaf ids and %zu splits (expected as many)",
                       b->name, cb->n_steps, cb->n_node_leaf, cb->n_splits);
    size_t max_size = 1;
    for (uint32_t t = 0; t < cb->n_trees; t++) {
        int32_t s = cb->tree_starts[t], z = cb->tree_sizes[t];
        if (s < 0 || z < 1 || (size_t)s > cb->n_steps || (size_t)z > cb->n_steps - (size_t)s)
            return ts_fail(b->err, TS_ERR_PARSE, "%s: tree %u: nodes [%d, %d + %d) are outside the %zu nodes", b->name, t,
                           (int)s, (int)s, (int)z, cb->n_steps);
        if ((size_t)z > max_size) max_size = (size_t)z;
    }
    if (max_size > TSM_MAX_LEAVES)
        return ts_fail(b->err, TS_ERR_LIMIT, "%s: a tree of %zu nodes (the limit is %u)", b->name, max_size,
                       TSM_MAX_LEAVES);
    b->nodes = malloc(max_size * sizeof *b->nodes);
    b->values = malloc((max_size + 1) * sizeof *b->values);
    b->leaf_at = malloc((max_size + 1) * sizeof *b->leaf_at);
    b->ir_of = malloc(max_size * sizeof *b->ir_of);
    b->stack = malloc(max_size * sizeof *b->stack);
    if (!b->nodes || !b->values || !b->leaf_at || !b->ir_of || !b->stack)
        return ts_fail(b->err, TS_ERR_NO_MEMORY, "%s: out of memory", b->name);
    for (uint32_t t = 0; t < cb->n_trees; t++) {
        size_t s = (size_t)cb->tree_starts[t], z = (size_t)cb->tree_sizes[t];
        uint32_t n_nodes = 0, n_leaves = 0;
        for (size_t i = 0; i < z; i++) b->ir_of[i] = -1;
        const uint16_t *st = cb->steps;
        if (st[2 * s] == 0 && st[2 * s + 1] == 0) { /* a one-leaf tree */
            int32_t ref;
            TS_TRY(leaf_exit(b, t, s, &n_leaves, &ref));
            TS_TRY(add_outputs(b, t, 0, n_leaves, b->leaf_at));
            continue;
        }
        size_t top = 0;
        b->ir_of[0] = (int32_t)n_nodes++;
        b->stack[top++] = s;
        while (top > 0) {
            size_t n = b->stack[--top];
            tsm_node *nd = &b->nodes[b->ir_of[n - s]];
            int swap;
            TS_TRY(split_node(b, t, cb->splits[n], nd, &swap));
            for (int side = 0; side < 2; side++) {
                uint16_t diff = st[2 * n + (size_t)side];
                int32_t ref = 0;
                if (diff == 0) {
                    TS_TRY(leaf_exit(b, t, n, &n_leaves, &ref));
                } else {
                    size_t c = n + diff;
                    if (c >= s + z)
                        return ts_fail(b->err, TS_ERR_PARSE, "%s: tree %u: node %zu steps to node %zu, outside the tree's "
                                       "nodes [%zu, %zu)", b->name, t, n, c, s, s + z);
                    if (b->ir_of[c - s] != -1)
                        return ts_fail(b->err, TS_ERR_PARSE, "%s: tree %u: node %zu is reached twice", b->name, t, c);
                    if (st[2 * c] == 0 && st[2 * c + 1] == 0) {
                        b->ir_of[c - s] = -2; /* met, as a leaf */
                        TS_TRY(leaf_exit(b, t, c, &n_leaves, &ref));
                    } else {
                        ref = (int32_t)n_nodes;
                        b->ir_of[c - s] = (int32_t)n_nodes++;
                        b->stack[top++] = c;
                    }
                }
                if (side == 0)
                    nd->left = ref;
                else
                    nd->right = ref;
            }
            if (swap) {
                int32_t x = nd->left;
                nd->left = nd->right;
                nd->right = x;
            }
        }
        TS_TRY(add_outputs(b, t, n_nodes, n_leaves, b->leaf_at));
    }
    return TS_OK;
}

/* The category ids of every categorical feature, into the model (a feature no split
 * reads too: its column holds categories all the same, and callers map them). */
static ts_status add_catmaps(build *b) {
    uint32_t n = b->ids ? b->cb->n_cats : 0;
    if (n == 0) return TS_OK;
    b->m->catmaps = calloc(n, sizeof *b->m->catmaps);
    if (!b->m->catmaps) return ts_fail(b->err, TS_ERR_NO_MEMORY, "%s: out of memory", b->name);
    for (uint32_t j = 0; j < b->cb->n_cats; j++) {
        cat_ids *ci = &b->ids[j];
        tsm_catmap *cm = &b->m->catmaps[b->m->n_catmaps++];
        cm->feature = (uint32_t)b->cb->cats[j].flat_index;
        cm->n = ci->n;
        cm->hashes = ci->hashes; /* moved */
        ci->hashes = NULL;
    }
    return TS_OK;
}

ts_status tscb_build(const tscb_model *cb, ts_model_format format, const char *name, ts_model **out, ts_error *err) {
    build b;
    memset(&b, 0, sizeof b);
    b.cb = cb;
    b.name = name;
    b.err = err;
    *out = NULL;
    ts_status st = TS_OK;
    if (cb->dim < 1 || cb->dim > TSM_MAX_OUTPUTS)
        return ts_fail(err, cb->dim < 1 ? TS_ERR_PARSE : TS_ERR_LIMIT, "%s: ApproxDimension %u is outside [1, %u]", name,
                       cb->dim, TSM_MAX_OUTPUTS);
    if (cb->n_trees > TSM_MAX_TREES / cb->dim)
        return ts_fail(err, TS_ERR_LIMIT, "%s: %u trees of %u outputs are above the limit of %u trees", name, cb->n_trees,
                       cb->dim, TSM_MAX_TREES);
    if (!(cb->scale == 1.0))
        return ts_fail(err, TS_ERR_UNSUPPORTED,
                       "%s: scale %.17g: models with a scale other than 1 (set_scale_and_bias, sum_models with weights) "
                       "are not supported: CatBoost computes scale * (sum of leaves) + bias, which a sum of per-tree "
                       "values cannot reproduce bit for bit",
                       name, cb->scale);
    if (cb->n_class_labels && cb->n_class_names > cb->n_class_labels)
        return ts_fail(err, TS_ERR_UNSUPPORTED,
                       "%s: the model has %u classes (class_names, classes_count) but scores %u of them "
                       "(class_to_label): classes absent from the training labels get no score, and CatBoost's "
                       "predict writes them -inf (a probability of 0) in their own column; not supported: train with "
                       "labels of every class, or without those class_names or classes_count",
                       name, cb->n_class_names, cb->n_class_labels);
    if (cb->n_bias != cb->dim)
        return ts_fail(err, TS_ERR_PARSE, "%s: %u bias values for ApproxDimension %u", name, cb->n_bias, cb->dim);
    for (uint32_t k = 0; k < cb->n_bias; k++)
        if (!isfinite(cb->bias[k])) return ts_fail(err, TS_ERR_PARSE, "%s: bias %u is not finite", name, k);
    b.m = tsm_model_new(format);
    if (!b.m) return ts_fail(err, TS_ERR_NO_MEMORY, "%s: out of memory", name);
    ts_model *m = b.m;
    if (cb->dim > 1) st = tsm_model_set_outputs(m, cb->dim, err);
    if (st == TS_OK) st = check_features(&b);
    if (st == TS_OK) st = check_categorical(&b);
    if (st == TS_OK) st = cb->oblivious ? oblivious_trees(&b) : nonsymmetric_trees(&b);
    if (st == TS_OK) {
        int zero_bias = 1;
        for (uint32_t k = 0; k < cb->dim; k++) zero_bias &= cb->bias[k] == 0.0;
        if (cb->n_trees == 0) { /* CatBoost fills the scores with the bias */
            for (uint32_t k = 0; k < cb->dim; k++) {
                if (m->output_base) m->output_base[k] = cb->bias[k];
            }
            m->base_score = cb->bias[0];
        } else if (!zero_bias) { /* sum + bias[k], after every tree: one more one-leaf tree per output */
            for (uint32_t k = 0; k < cb->dim && st == TS_OK; k++) {
                st = tsm_model_add_tree(m, 0, NULL, 1, &cb->bias[k], 1.0, err);
                if (st == TS_OK) m->trees[m->n_trees - 1].output = k;
            }
        }
    }
    if (st == TS_OK) st = add_catmaps(&b);
    if (st == TS_OK) {
        int32_t top = -1;
        for (uint32_t i = 0; i < cb->n_floats; i++)
            if (cb->floats[i].flat_index > top) top = cb->floats[i].flat_index;
        for (uint32_t i = 0; i < cb->n_cats; i++)
            if (cb->cats[i].flat_index > top) top = cb->cats[i].flat_index;
        m->n_features_declared = (uint32_t)(top + 1);
        /* names when every column 0 .. top is a named feature */
        uint32_t n_cols = (uint32_t)(top + 1), named = 0;
        const char **names = n_cols ? calloc(n_cols, sizeof *names) : NULL;
        if (n_cols && !names) st = ts_fail(err, TS_ERR_NO_MEMORY, "%s: out of memory", name);
        for (uint32_t i = 0; names && i < cb->n_floats; i++)
            if (cb->floats[i].name && cb->floats[i].name[0] && !names[cb->floats[i].flat_index]) {
                names[cb->floats[i].flat_index] = cb->floats[i].name;
                named++;
            }
        for (uint32_t i = 0; names && i < cb->n_cats; i++)
            if (cb->cats[i].name && cb->cats[i].name[0] && !names[cb->cats[i].flat_index]) {
                names[cb->cats[i].flat_index] = cb->cats[i].name;
                named++;
            }
        for (uint32_t i = 0; names && named == n_cols && i < n_cols && st == TS_OK; i++)
            st = tsm_model_add_feature_name(m, names[i], strlen(names[i]), err);
        free(names);
        if (st == TS_OK) {
            memcpy(m->objective, cb->objective, sizeof m->objective);
            m->objective[sizeof m->objective - 1] = '\0';
            st = tsm_model_finish(m, err);
            if (st != TS_OK) ts_error_prefix(err, "%s", name);
        }
    }
    free(b.bins);
    free(b.nodes);
    free(b.values);
    free(b.leaf_at);
    free(b.ir_of);
    free(b.stack);
    for (uint32_t j = 0; b.ids && j < cb->n_cats; j++) free(b.ids[j].hashes);
    free(b.ids);
    for (uint32_t i = 0; b.ctrv && i < cb->n_ctrs; i++) free(b.ctrv[i].of_id);
    free(b.ctrv);
    free(b.words);
    for (uint32_t k = 0; k < b.n_decs; k++) free(b.decs[k].tuples);
    free(b.decs);
    free(b.dec_of);
    free(b.derived_of);
    if (st != TS_OK) {
        ts_model_free(m);
        return st;
    }
    *out = m;
    return TS_OK;
}

/* ---- category ids (public) --------------------------------------------------------- */

static const tsm_catmap *catmap_of(const ts_model *m, uint32_t column) {
    for (uint32_t i = 0; m && i < m->n_catmaps; i++)
        if (m->catmaps[i].feature == column) return &m->catmaps[i];
    return NULL;
}

int ts_model_is_categorical(const ts_model *model, uint32_t column) { return catmap_of(model, column) != NULL; }

ts_status ts_model_category_hash_id(const ts_model *model, uint32_t column, uint32_t hash, float *id, ts_error *err) {
    if (!model || !id) return ts_fail(err, TS_ERR_INVALID_ARGUMENT, "ts_model_category_hash_id: model or id is NULL");
    const tsm_catmap *cm = catmap_of(model, column);
    if (!cm)
        return ts_fail(err, TS_ERR_INVALID_ARGUMENT, "column %u is not a hashed categorical column of the model", column);
    int64_t k = id_of(cm->hashes, cm->n, hash);
    *id = k < 0 ? NAN : (float)k;
    return TS_OK;
}

ts_status ts_model_category_id(const ts_model *model, uint32_t column, const char *text, size_t len, float *id,
                               ts_error *err) {
    if (!text && len) return ts_fail(err, TS_ERR_INVALID_ARGUMENT, "ts_model_category_id: text is NULL");
    return ts_model_category_hash_id(model, column, tscb_category_hash(text ? text : "", len), id, err);
}
