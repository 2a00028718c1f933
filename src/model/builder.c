/* builder.c: ts_model_builder, the public API that builds a forest IR from arrays (scikit-learn's layout). */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "model/forest.h"

/*
 * Normalization (the rules are in treescore.h, "Building a model in memory")
 * ---------------------------------------------------------------------------
 * Every numerical test becomes (F, D, negate): the IR's "x <= F" on floats (and
 * "x <= D" on doubles for TS_INPUT_FLOAT64 trees, kept in thresholds_d), with the user's
 * children swapped when negate is set (the test is true iff NOT (x <= F)). NaN is handled
 * apart (the missing flag), so only ordered values matter:
 *   float x, double t:  x <= t  iff  x <= le(t)        le(t): the largest float <= t
 *                       x <  t  iff  x <= lt(t)        lt(t): the largest float <  t
 *                       (exact because x is a float: the floats <= t are those <= le(t));
 *                       x >  t  iff  !(x <= le(t));    x >= t  iff  !(x <= lt(t)).
 *   double x, double t: the same with doubles (lt(t) = nextafter(t, -inf)), and F =
 *                       le(D) serves float rows (a float x is the double x).
 * x < -inf is never true: no float is <= lt(-inf), so it is written !(x <= +inf) (every
 * non-NaN x goes to the false child), and x >= -inf as x <= +inf.
 */

struct ts_model_builder {
    ts_model *m;
    uint32_t n_features, n_outputs;
    int input;             /* -1 until the first tree, then its ts_input_type */
    ts_aggregation agg;
    uint32_t n_added;      /* trees added (a K-valued tree counts once) */
    int spent;             /* finished: only free is allowed */
};

/* LightGBM's zero range as the double-row path of the scorer applies it (f64.c, quant.h). */
#define ZERO_D ((double)TSM_ZERO_RANGE)
/* Categories below 2^24 (the XGBoost rule's valid range): bitset words. */
#define MAX_CAT_WORDS (1u << 19)

void ts_tree_arrays_init(ts_tree_arrays *t) {
    if (!t) return;
    memset(t, 0, sizeof *t);
    t->size = sizeof *t;
    t->compare = TS_CMP_LE;
    t->input = TS_INPUT_FLOAT32;
    t->n_values = 1;
    t->weight = 1.0;
}

ts_status ts_model_builder_create(uint32_t n_features, uint32_t n_outputs, ts_model_builder **out, ts_error *err) {
    if (!out) return ts_fail(err, TS_ERR_INVALID_ARGUMENT, "ts_model_builder_create: out is NULL");
    *out = NULL;
    if (n_features == 0 || n_features > TSM_MAX_FEATURES)
        return ts_fail(err, TS_ERR_INVALID_ARGUMENT, "ts_model_builder_create: %u features (1 to %u are supported)",
                       n_features, TSM_MAX_FEATURES);
    if (n_outputs == 0 || n_outputs > TSM_MAX_OUTPUTS)
        return ts_fail(err, TS_ERR_INVALID_ARGUMENT, "ts_model_builder_create: %u outputs (1 to %u are supported)",
                       n_outputs, TSM_MAX_OUTPUTS);
    ts_model_builder *b = calloc(1, sizeof *b);
    if (!b) return ts_fail(err, TS_ERR_NO_MEMORY, "out of memory");
    b->m = tsm_model_new(TS_FORMAT_AUTO);
    if (!b->m) {
        free(b);
        return ts_fail(err, TS_ERR_NO_MEMORY, "out of memory");
    }
    b->m->n_features_declared = n_features;
    if (n_outputs > 1) {
        ts_status st = tsm_model_set_outputs(b->m, n_outputs, err);
        if (st != TS_OK) {
            ts_model_free(b->m);
            free(b);
            return st;
        }
    }
    b->n_features = n_features;
    b->n_outputs = n_outputs;
    b->input = -1;
    b->agg = TS_AGG_SUM;
    *out = b;
    return TS_OK;
}

void ts_model_builder_free(ts_model_builder *b) {
    if (!b) return;
    ts_model_free(b->m);
    free(b);
}

static ts_status usable(const ts_model_builder *b, const char *fn, ts_error *err) {
    if (!b) return ts_fail(err, TS_ERR_INVALID_ARGUMENT, "%s: builder is NULL", fn);
    if (b->spent) return ts_fail(err, TS_ERR_INVALID_ARGUMENT, "%s: the builder was finished", fn);
    return TS_OK;
}

/* ---- one node's test ------------------------------------------------------------- */

static float le_float(double t) { return tsm_threshold_le_double(t); }

/* The largest float below t (t > -inf). */
static float lt_float(double t) {
    float f = tsm_threshold_le_double(t);
    return (double)f == t ? nextafterf(f, -INFINITY) : f;
}

/* The numerical test of a node as (F, D, negate). Returns 0 when the test cannot be
 * stored exactly (a TS_INPUT_FLOAT64 threshold in the zero range of the double path). */
static int normalize(ts_compare op, ts_input_type input, double t, float *F, double *D, int *negate) {
    int lt = op == TS_CMP_LT || op == TS_CMP_GE;
    *negate = op == TS_CMP_GT || op == TS_CMP_GE;
    if (lt && t == -INFINITY) { /* x < -inf: never true */
        *F = INFINITY;
        *D = INFINITY;
        *negate = !*negate;
        return 1;
    }
    if (input == TS_INPUT_FLOAT32) {
        *F = lt ? lt_float(t) : le_float(t);
        *D = (double)*F;
        return 1;
    }
    *D = lt ? nextafter(t, -INFINITY) : t;
    *F = le_float(*D);
    return !(*D >= -ZERO_D && *D < ZERO_D);
}

/* ---- validation ------------------------------------------------------------------ */

static ts_status check_arrays(const ts_model_builder *b, const ts_tree_arrays *t, uint32_t ti, ts_error *err) {
    if (t->size != sizeof *t)
        return ts_fail(err, TS_ERR_INVALID_ARGUMENT, "tree %u: ts_tree_arrays.size is %zu, expected %zu "
                       "(call ts_tree_arrays_init)", ti, t->size, sizeof *t);
    if (t->n_nodes == 0) return ts_fail(err, TS_ERR_INVALID_ARGUMENT, "tree %u: no nodes", ti);
    if (t->n_nodes > 2 * TSM_MAX_LEAVES - 1)
        return ts_fail(err, TS_ERR_LIMIT, "tree %u: %u nodes (at most %u)", ti, t->n_nodes, 2 * TSM_MAX_LEAVES - 1);
    if (!t->children_left || !t->children_right || !t->values)
        return ts_fail(err, TS_ERR_INVALID_ARGUMENT, "tree %u: children_left, children_right and values are required", ti);
    if (t->n_nodes > 1 && (!t->feature || !t->threshold))
        return ts_fail(err, TS_ERR_INVALID_ARGUMENT, "tree %u: feature and threshold are required", ti);
    if (t->input != TS_INPUT_FLOAT32 && t->input != TS_INPUT_FLOAT64)
        return ts_fail(err, TS_ERR_INVALID_ARGUMENT, "tree %u: unknown input type %d", ti, (int)t->input);
    if (b->input >= 0 && (int)t->input != b->input)
        return ts_fail(err, TS_ERR_INVALID_ARGUMENT, "tree %u: input type %s, but the model's earlier trees use %s "
                       "(one input type per model)", ti, t->input == TS_INPUT_FLOAT64 ? "float64" : "float32",
                       b->input == TS_INPUT_FLOAT64 ? "float64" : "float32");
    if ((unsigned)t->compare > TS_CMP_NOT_IN)
        return ts_fail(err, TS_ERR_INVALID_ARGUMENT, "tree %u: unknown comparison %d", ti, (int)t->compare);
    if (t->n_values != 1 && t->n_values != b->n_outputs)
        return ts_fail(err, TS_ERR_INVALID_ARGUMENT, "tree %u: %u values per leaf, but the model has %u outputs "
                       "(give 1 or %u)", ti, t->n_values, b->n_outputs, b->n_outputs);
    if (t->n_values == 1 && t->output >= b->n_outputs)
        return ts_fail(err, TS_ERR_INVALID_ARGUMENT, "tree %u: adds to output %u, but the model has %u", ti,
                       t->output, b->n_outputs);
    if (!isfinite(t->weight)) return ts_fail(err, TS_ERR_INVALID_ARGUMENT, "tree %u: non-finite weight", ti);
    if (t->n_category_sets && (!t->category_words || t->category_set_words == 0))
        return ts_fail(err, TS_ERR_INVALID_ARGUMENT, "tree %u: %u category sets without words", ti, t->n_category_sets);
    if (t->category_set_words > MAX_CAT_WORDS)
        return ts_fail(err, TS_ERR_LIMIT, "tree %u: category sets of %u words (at most %u: categories below 2^24)", ti,
                       t->category_set_words, MAX_CAT_WORDS);
    return TS_OK;
}

/* Every node reached exactly once from node 0; *n_internal counts the tests. */
static ts_status check_structure(const ts_tree_arrays *t, uint32_t ti, uint32_t *n_internal, ts_error *err) {
    uint32_t n = t->n_nodes, *stack = malloc((size_t)n * sizeof *stack);
    uint8_t *seen = calloc(n, 1);
    ts_status st = TS_OK;
    if (!stack || !seen) {
        st = ts_fail(err, TS_ERR_NO_MEMORY, "tree %u: out of memory", ti);
        goto done;
    }
    uint32_t internal = 0;
    for (uint32_t i = 0; i < n; i++) {
        int64_t l = t->children_left[i], r = t->children_right[i];
        if ((l == -1) != (r == -1)) {
            st = ts_fail(err, TS_ERR_INVALID_MODEL, "tree %u: node %u has one child -1 and the other %lld (a leaf "
                         "has both -1)", ti, i, (long long)(l == -1 ? r : l));
            goto done;
        }
        if (l == -1) continue;
        internal++;
        for (int side = 0; side < 2; side++) {
            int64_t c = side ? r : l;
            if (c < 0 || c >= (int64_t)n) {
                st = ts_fail(err, TS_ERR_INVALID_MODEL, "tree %u: node %u: %s child %lld is out of range (%u nodes)",
                             ti, i, side ? "right" : "left", (long long)c, n);
                goto done;
            }
            if (c == 0) {
                st = ts_fail(err, TS_ERR_INVALID_MODEL, "tree %u: node %u: %s child is the root (a cycle)", ti, i,
                             side ? "right" : "left");
                goto done;
            }
        }
    }
    /* Each node is pushed at most once (seen is set on push), so the stack holds n. */
    uint32_t sp = 0;
    stack[sp++] = 0;
    seen[0] = 1;
    while (sp) {
        uint32_t i = stack[--sp];
        if (t->children_left[i] == -1) continue;
        for (int side = 0; side < 2; side++) {
            uint32_t c = (uint32_t)(side ? t->children_right[i] : t->children_left[i]);
            if (seen[c]) {
                st = ts_fail(err, TS_ERR_INVALID_MODEL, "tree %u: node %u is reached twice (from node %u: a cycle "
                             "or a shared subtree)", ti, c, i);
                goto done;
            }
            seen[c] = 1;
            stack[sp++] = c;
        }
    }
    for (uint32_t i = 0; i < n; i++)
        if (!seen[i]) {
            st = ts_fail(err, TS_ERR_INVALID_MODEL, "tree %u: node %u is not reachable from the root", ti, i);
            goto done;
        }
    *n_internal = internal;
done:
    free(stack);
    free(seen);
    return st;
}

/* ---- adding a tree ---------------------------------------------------------------- */

typedef struct tree_ir {
    uint32_t n_nodes, n_leaves;
    int32_t *ref;        /* user node -> IR reference (>= 0 node, < 0 leaf ~c) */
    uint32_t *leaf_of;   /* IR leaf -> user node */
    tsm_node *nodes;
    double *thr_d;       /* TS_INPUT_FLOAT64 only */
    double *leaves;
} tree_ir;

static void tree_ir_free(tree_ir *r) {
    free(r->ref);
    free(r->leaf_of);
    free(r->nodes);
    free(r->thr_d);
    free(r->leaves);
}

/* The IR nodes of tree t (numbering: internal nodes and leaves each in user order). */
static ts_status build_nodes(ts_model_builder *b, const ts_tree_arrays *t, uint32_t ti, tree_ir *r, ts_error *err) {
    uint32_t n = t->n_nodes;
    r->ref = malloc((size_t)n * sizeof *r->ref);
    r->leaf_of = malloc((size_t)r->n_leaves * sizeof *r->leaf_of);
    r->nodes = r->n_nodes ? malloc((size_t)r->n_nodes * sizeof *r->nodes) : NULL;
    r->thr_d = r->n_nodes && t->input == TS_INPUT_FLOAT64 ? malloc((size_t)r->n_nodes * sizeof *r->thr_d) : NULL;
    r->leaves = malloc((size_t)r->n_leaves * sizeof *r->leaves);
    if (!r->ref || !r->leaf_of || (r->n_nodes && !r->nodes) || !r->leaves ||
        (r->n_nodes && t->input == TS_INPUT_FLOAT64 && !r->thr_d))
        return ts_fail(err, TS_ERR_NO_MEMORY, "tree %u: out of memory", ti);
    uint32_t ni = 0, nl = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (t->children_left[i] == -1) {
            for (uint32_t k = 0; k < t->n_values; k++)
                if (!isfinite(t->values[(size_t)i * t->n_values + k]))
                    return ts_fail(err, TS_ERR_INVALID_MODEL, "tree %u: leaf node %u has a non-finite value", ti, i);
            r->leaf_of[nl] = i;
            r->ref[i] = ~(int32_t)nl++;
        } else {
            r->ref[i] = (int32_t)ni++;
        }
    }
    for (uint32_t i = 0; i < n; i++) {
        if (t->children_left[i] == -1) continue;
        tsm_node *o = &r->nodes[r->ref[i]];
        int64_t f = t->feature[i];
        if (f < 0 || f >= (int64_t)b->n_features)
            return ts_fail(err, TS_ERR_INVALID_MODEL, "tree %u: node %u tests feature %lld, but the model has %u", ti,
                           i, (long long)f, b->n_features);
        unsigned op = t->compares ? t->compares[i] : (unsigned)t->compare;
        int32_t left = r->ref[t->children_left[i]], right = r->ref[t->children_right[i]];
        o->feature = (uint32_t)f;
        if (op == TS_CMP_IN || op == TS_CMP_NOT_IN) {
            /* The exact rule (XGBoost's, but 2.5 is no category): members go right; NaN
             * (TSM_MISSING_LEFT), x < 0, x >= 2^24, non-integers and other categories
             * left. NOT_IN is that rule; IN swaps the children. */
            int64_t s = t->category_set ? t->category_set[i] : -1;
            if (s < 0 || s >= (int64_t)t->n_category_sets)
                return ts_fail(err, TS_ERR_INVALID_MODEL, "tree %u: node %u: category set %lld out of range (%u sets)",
                               ti, i, (long long)s, t->n_category_sets);
            uint32_t idx;
            TS_TRY(tsm_model_add_catset(b->m, (uint32_t)f, TSM_CAT_EXACT, TSM_MISSING_LEFT,
                                        t->category_words + (size_t)s * t->category_set_words, t->category_set_words,
                                        &idx, err));
            o->threshold = (float)idx;
            o->flags = TSM_CATEGORICAL;
            o->left = op == TS_CMP_NOT_IN ? left : right;
            o->right = op == TS_CMP_NOT_IN ? right : left;
            if (r->thr_d) r->thr_d[r->ref[i]] = (double)idx;
            continue;
        }
        if (op > TS_CMP_GT)
            return ts_fail(err, TS_ERR_INVALID_ARGUMENT, "tree %u: node %u: unknown comparison %u", ti, i, op);
        double thr = t->threshold[i];
        if (thr != thr) return ts_fail(err, TS_ERR_INVALID_MODEL, "tree %u: node %u has a NaN threshold", ti, i);
        float F;
        double D;
        int neg;
        if (!normalize((ts_compare)op, t->input, thr, &F, &D, &neg))
            return ts_fail(err, TS_ERR_UNSUPPORTED, "tree %u: node %u: float64 threshold %.17g lies in [-1e-35, 1e-35), "
                           "where the double-row path treats |x| <= 1e-35 as 0.0; such a test cannot be scored "
                           "exactly for every double input", ti, i, thr);
        int mleft = t->missing_left ? t->missing_left[i] != 0 : 0;
        o->threshold = F;
        o->left = neg ? right : left;
        o->right = neg ? left : right;
        o->flags = (mleft ^ neg) ? TSM_MISSING_LEFT : 0;
        if (r->thr_d) r->thr_d[r->ref[i]] = D;
    }
    return TS_OK;
}

ts_status ts_model_builder_add_tree(ts_model_builder *b, const ts_tree_arrays *t, ts_error *err) {
    TS_TRY(usable(b, "ts_model_builder_add_tree", err));
    if (!t) return ts_fail(err, TS_ERR_INVALID_ARGUMENT, "ts_model_builder_add_tree: tree is NULL");
    uint32_t ti = b->n_added, internal = 0;
    TS_TRY(check_arrays(b, t, ti, err));
    TS_TRY(check_structure(t, ti, &internal, err));
    tree_ir r = {0};
    r.n_nodes = internal;
    r.n_leaves = t->n_nodes - internal;
    /* On any failure the trees of this call already appended are taken off again, and
     * so are the category sets its nodes appended (build_nodes adds them as it goes;
     * new sets only ever go at the end, so the counts restore the model). */
    uint32_t trees0 = b->m->n_trees, catsets0 = b->m->n_catsets;
    size_t cat_words0 = b->m->n_cat_words;
    ts_status st = build_nodes(b, t, ti, &r, err);
    uint32_t copies = t->n_values;
    for (uint32_t k = 0; st == TS_OK && k < copies; k++) {
        for (uint32_t l = 0; l < r.n_leaves; l++) r.leaves[l] = t->values[(size_t)r.leaf_of[l] * t->n_values + k];
        st = tsm_model_add_tree_d(b->m, r.n_nodes, r.nodes, r.thr_d, r.n_leaves, r.leaves, t->weight, err);
        if (st == TS_OK) b->m->trees[b->m->n_trees - 1].output = copies == 1 ? t->output : k;
    }
    tree_ir_free(&r);
    if (st != TS_OK) {
        while (b->m->n_trees > trees0) {
            tsm_tree *x = &b->m->trees[--b->m->n_trees];
            free(x->nodes);
            free(x->leaf_values);
            free(x->thresholds_d);
        }
        b->m->n_catsets = catsets0;
        b->m->n_cat_words = cat_words0;
        return st;
    }
    b->input = (int)t->input;
    b->n_added++;
    return TS_OK;
}

/* ---- the rest ----------------------------------------------------------------------- */

ts_status ts_model_builder_set_aggregation(ts_model_builder *b, ts_aggregation agg, ts_error *err) {
    TS_TRY(usable(b, "ts_model_builder_set_aggregation", err));
    if (agg != TS_AGG_SUM && agg != TS_AGG_MEAN)
        return ts_fail(err, TS_ERR_INVALID_ARGUMENT, "ts_model_builder_set_aggregation: unknown aggregation %d", (int)agg);
    b->agg = agg;
    return TS_OK;
}

ts_status ts_model_builder_set_base_scores(ts_model_builder *b, const double *base, uint32_t n, ts_error *err) {
    TS_TRY(usable(b, "ts_model_builder_set_base_scores", err));
    if (!base || n != b->n_outputs)
        return ts_fail(err, TS_ERR_INVALID_ARGUMENT, "ts_model_builder_set_base_scores: %u base scores for %u outputs",
                       base ? n : 0, b->n_outputs);
    for (uint32_t k = 0; k < n; k++)
        if (!isfinite(base[k]))
            return ts_fail(err, TS_ERR_INVALID_ARGUMENT, "ts_model_builder_set_base_scores: base score %u is not finite", k);
    if (b->m->output_base) memcpy(b->m->output_base, base, n * sizeof *base);
    b->m->base_score = base[0];
    return TS_OK;
}

ts_status ts_model_builder_set_feature_names(ts_model_builder *b, const char *const *names, uint32_t n,
                                             ts_error *err) {
    TS_TRY(usable(b, "ts_model_builder_set_feature_names", err));
    if (!names || n != b->n_features)
        return ts_fail(err, TS_ERR_INVALID_ARGUMENT, "ts_model_builder_set_feature_names: %u names for %u features",
                       names ? n : 0, b->n_features);
    for (uint32_t i = 0; i < n; i++)
        if (!names[i]) return ts_fail(err, TS_ERR_INVALID_ARGUMENT, "ts_model_builder_set_feature_names: name %u is NULL", i);
    ts_model *m = b->m;
    for (uint32_t i = 0; i < m->n_feature_names; i++) free(m->feature_names[i]);
    free(m->feature_names);
    m->feature_names = NULL;
    m->n_feature_names = 0;
    for (uint32_t i = 0; i < n; i++) TS_TRY(tsm_model_add_feature_name(m, names[i], strlen(names[i]), err));
    return TS_OK;
}

ts_status ts_model_builder_finish(ts_model_builder *b, ts_model **out, ts_error *err) {
    if (out) *out = NULL;
    TS_TRY(usable(b, "ts_model_builder_finish", err));
    if (!out) return ts_fail(err, TS_ERR_INVALID_ARGUMENT, "ts_model_builder_finish: out is NULL");
    if (b->m->n_trees == 0) return ts_fail(err, TS_ERR_INVALID_MODEL, "ts_model_builder_finish: the model has no trees");
    ts_model *m = b->m;
    m->compares_double = b->input == TS_INPUT_FLOAT64;
    m->average_output = b->agg == TS_AGG_MEAN;
    TS_TRY(tsm_model_finish(m, err));
    b->m = NULL;
    b->spent = 1;
    *out = m;
    return TS_OK;
}

ts_status ts_model_output_divisor(const ts_model *m, uint32_t k, double *divisor, ts_error *err) {
    if (!m || !divisor)
        return ts_fail(err, TS_ERR_INVALID_ARGUMENT, "ts_model_output_divisor: %s is NULL", m ? "divisor" : "model");
    uint32_t K = m->n_outputs ? m->n_outputs : 1;
    if (k >= K) return ts_fail(err, TS_ERR_INVALID_ARGUMENT, "ts_model_output_divisor: output %u of %u", k, K);
    if (!m->average_output) {
        *divisor = 1.0;
        return TS_OK;
    }
    uint32_t n = 0;
    for (uint32_t t = 0; t < m->n_trees; t++) n += m->trees[t].output == k;
    *divisor = n ? (double)n : 1.0;
    return TS_OK;
}
