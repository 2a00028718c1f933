/* test_builder.c: the public model builder (ts_model_builder): every comparison and input type against a direct evaluation of the arrays, every engine bit for bit, and its validation errors. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "builder_trees.h"
#include "check.h"
#include "treescore.h"

/* Engines compared (ifelse compiles C for each model: test_ifelse covers it; the GPU
 * engines have their own tests). */
static const ts_engine ENGINES[] = {TS_ENGINE_NAIVE, TS_ENGINE_QS, TS_ENGINE_VQS, TS_ENGINE_VPRED,
                                    TS_ENGINE_BLOCK_NAIVE, TS_ENGINE_BLOCK_VPRED, TS_ENGINE_RAPID, TS_ENGINE_OBLIVIOUS,
                                    TS_ENGINE_TREES_SIMD, TS_ENGINE_DEEP};
#define N_ENGINES (sizeof ENGINES / sizeof ENGINES[0])

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint64_t rnd(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}
static uint32_t rndu(uint32_t n) { return (uint32_t)(rnd() % n); }
static double rndd(void) { return (double)(rnd() >> 11) / 9007199254740992.0; }

/* ---- a tree in scikit-learn's arrays, and its direct evaluation -------------------- */

#define MAX_NODES 512
#define MAX_K 3
#define CAT_WORDS 2

typedef struct utree {
    uint32_t n;
    int64_t left[MAX_NODES], right[MAX_NODES], feature[MAX_NODES], cat_set[MAX_NODES];
    double threshold[MAX_NODES], values[MAX_NODES * MAX_K];
    uint8_t cmp[MAX_NODES], miss[MAX_NODES];
    uint32_t cat_words[MAX_NODES * CAT_WORDS];
    uint32_t n_sets;
    uint32_t n_values, output;
    double weight;
    ts_input_type input;
} utree;

/* Thresholds of a feature come from a small pool so that rows can sit on them. */
#define N_FEATURES 6
static double pool[N_FEATURES][8];

static void make_pool(int input) {
    for (int f = 0; f < N_FEATURES; f++)
        for (int i = 0; i < 8; i++) {
            double v = (rndd() - 0.5) * 8.0;
            if (i == 0) v = (double)(float)v;                       /* exactly a float */
            if (i == 1) v = nextafter((double)(float)v, INFINITY);  /* just above a float */
            if (i == 2) v = nextafter((double)(float)v, -INFINITY); /* just below a float */
            if (i == 3) v = floor(v) + 0.5;                         /* categorical-ish, and a midpoint */
            if (i == 4 && f == 0) v = input ? 1e-30 : 0.0;          /* near zero (float32: 0.0 itself) */
            if (i == 5 && f == 1) v = INFINITY;
            if (i == 6 && f == 1) v = -INFINITY;
            pool[f][i] = v;
        }
}

/* Random shape: node ids shuffled (the root stays 0). */
static void random_tree(utree *t, uint32_t n_internal, uint32_t K, ts_input_type input, int categorical) {
    uint32_t n = 2 * n_internal + 1, perm[MAX_NODES];
    for (uint32_t i = 0; i < n; i++) perm[i] = i;
    for (uint32_t i = n - 1; i > 1; i--) {
        uint32_t j = 1 + rndu(i);
        uint32_t x = perm[i];
        perm[i] = perm[j];
        perm[j] = x;
    }
    /* grow: logical node 0 is the root; split random logical leaves */
    int64_t L[MAX_NODES], R[MAX_NODES];
    uint32_t leaves[MAX_NODES], n_leaves = 1, next = 1;
    leaves[0] = 0;
    L[0] = R[0] = -1;
    for (uint32_t s = 0; s < n_internal; s++) {
        uint32_t li = rndu(n_leaves), node = leaves[li];
        L[node] = next;
        R[node] = next + 1;
        L[next] = R[next] = L[next + 1] = R[next + 1] = -1;
        leaves[li] = next;
        leaves[n_leaves++] = next + 1;
        next += 2;
    }
    memset(t, 0, sizeof *t);
    t->n = n;
    t->n_values = K;
    t->output = 0;
    t->weight = rndu(4) == 0 ? 0.5 : 1.0;
    t->input = input;
    t->n_sets = categorical ? 4 : 0;
    for (uint32_t s = 0; s < t->n_sets * CAT_WORDS; s++) t->cat_words[s] = (uint32_t)rnd();
    for (uint32_t i = 0; i < n; i++) {
        uint32_t p = perm[i];
        t->left[p] = L[i] < 0 ? -1 : (int64_t)perm[L[i]];
        t->right[p] = R[i] < 0 ? -1 : (int64_t)perm[R[i]];
        t->feature[p] = rndu(N_FEATURES);
        t->threshold[p] = pool[t->feature[p]][rndu(8)];
        t->cmp[p] = (uint8_t)rndu(categorical ? 6 : 4);
        t->miss[p] = (uint8_t)rndu(2);
        t->cat_set[p] = rndu(4);
        if (input == TS_INPUT_FLOAT64 && t->cmp[p] <= TS_CMP_GT) {
            double D = (t->cmp[p] == TS_CMP_LT || t->cmp[p] == TS_CMP_GE) ? nextafter(t->threshold[p], -INFINITY)
                                                                          : t->threshold[p];
            if (D >= -1e-35 && D < 1e-35) t->threshold[p] = 0.25; /* refused: tested apart */
        }
        for (uint32_t k = 0; k < K; k++) t->values[p * K + k] = L[i] < 0 ? (rndd() - 0.5) * 100.0 : NAN;
    }
}

static void to_arrays(const utree *t, ts_tree_arrays *a) {
    ts_tree_arrays_init(a);
    a->n_nodes = t->n;
    a->children_left = t->left;
    a->children_right = t->right;
    a->feature = t->feature;
    a->threshold = t->threshold;
    a->compares = t->cmp;
    a->missing_left = t->miss;
    a->input = t->input;
    a->values = t->values;
    a->n_values = t->n_values;
    a->output = t->output;
    a->weight = t->weight;
    if (t->n_sets) {
        a->category_set = t->cat_set;
        a->category_words = t->cat_words;
        a->n_category_sets = t->n_sets;
        a->category_set_words = CAT_WORDS;
    }
}

/* The tree's leaf (user node) for a row, by the documented semantics. x is the row's
 * value as the caller holds it: as_double says whether it is a double row. */
static uint32_t eval_tree(const utree *t, const double *x, int as_double) {
    uint32_t i = 0;
    while (t->left[i] != -1) {
        double v = x[t->feature[i]];
        if (!as_double || t->input == TS_INPUT_FLOAT32) v = (double)(float)v;
        int go_left;
        if (t->cmp[i] >= TS_CMP_IN) {
            int member = 0;
            if (v == v && v >= 0 && v < 16777216.0) {
                uint32_t c = (uint32_t)v; /* exact: 2.5 is no category */
                member = (double)c == v && c / 32 < CAT_WORDS &&
                         ((t->cat_words[t->cat_set[i] * CAT_WORDS + c / 32] >> (c % 32)) & 1u);
            }
            go_left = t->cmp[i] == TS_CMP_IN ? member : !member;
        } else if (v != v) {
            go_left = t->miss[i];
        } else {
            double th = t->threshold[i];
            switch (t->cmp[i]) {
            case TS_CMP_LE: go_left = v <= th; break;
            case TS_CMP_LT: go_left = v < th; break;
            case TS_CMP_GE: go_left = v >= th; break;
            default: go_left = v > th; break;
            }
        }
        i = (uint32_t)(go_left ? t->left[i] : t->right[i]);
    }
    return i;
}

/* Rows on, just above and below the pool's thresholds (as floats and as doubles), NaN,
 * zeros, categories. */
static void make_rows(double *x, uint32_t n_rows) {
    for (uint32_t r = 0; r < n_rows; r++)
        for (int f = 0; f < N_FEATURES; f++) {
            double t = pool[f][rndu(8)];
            if (!isfinite(t)) t = 1.0;
            double v;
            switch (rndu(10)) {
            case 0: v = t; break;
            case 1: v = nextafter(t, INFINITY); break;
            case 2: v = nextafter(t, -INFINITY); break;
            case 3: v = (double)nextafterf((float)t, INFINITY); break;
            case 4: v = (double)nextafterf((float)t, -INFINITY); break;
            case 5: v = NAN; break;
            case 6: v = (double)rndu(70); break; /* categories, some outside the sets */
            case 7: v = rndu(3) == 0 ? -0.5 : rndu(2) ? (double)rndu(70) + 0.5 : 0.0; break; /* 2.5: none */
            case 8: v = (double)(float)t; break;
            default: v = (rndd() - 0.5) * 10.0; break;
            }
            x[(size_t)r * N_FEATURES + f] = v;
        }
}

/* Build `n_trees` random trees into a model and compare every engine with the direct
 * evaluation on float and double rows. */
static void check_random_model(uint32_t n_trees, uint32_t K, ts_input_type input, int categorical, ts_aggregation agg) {
    static utree trees[12];
    make_pool(input == TS_INPUT_FLOAT64);
    ts_model_builder *b = NULL;
    ts_error err;
    CHECK_STATUS(ts_model_builder_create(N_FEATURES, K, &b, &err), TS_OK);
    if (!b) return;
    double base[MAX_K];
    for (uint32_t k = 0; k < K; k++) base[k] = rndd() - 0.5;
    CHECK_STATUS(ts_model_builder_set_base_scores(b, base, K, &err), TS_OK);
    CHECK_STATUS(ts_model_builder_set_aggregation(b, agg, &err), TS_OK);
    for (uint32_t t = 0; t < n_trees; t++) {
        uint32_t nv = (K > 1 && rndu(2)) ? K : 1;
        random_tree(&trees[t], rndu(60), nv, input, categorical);
        if (nv == 1) trees[t].output = rndu(K);
        ts_tree_arrays a;
        to_arrays(&trees[t], &a);
        ts_status st = ts_model_builder_add_tree(b, &a, &err);
        CHECK_MSG(st == TS_OK, "tree %u: %s", t, err.message);
    }
    ts_model *m = NULL;
    CHECK_STATUS(ts_model_builder_finish(b, &m, &err), TS_OK);
    ts_model_builder_free(b);
    if (!m) return;

    enum { ROWS = 300 };
    static double xd[ROWS * N_FEATURES], ref_f[ROWS * MAX_K], ref_d[ROWS * MAX_K], got[ROWS * MAX_K];
    static float xf[ROWS * N_FEATURES];
    make_rows(xd, ROWS);
    for (size_t i = 0; i < (size_t)ROWS * N_FEATURES; i++) xf[i] = (float)xd[i];
    static double xfd[ROWS * N_FEATURES]; /* the float rows, widened */
    for (size_t i = 0; i < (size_t)ROWS * N_FEATURES; i++) xfd[i] = (double)xf[i];
    for (uint32_t r = 0; r < ROWS; r++)
        for (uint32_t k = 0; k < K; k++) {
            double sf = base[k], sd = base[k];
            for (uint32_t t = 0; t < n_trees; t++) {
                const utree *u = &trees[t];
                if (u->n_values == 1 && u->output != k) continue;
                uint32_t kk = u->n_values == 1 ? 0 : k;
                sf += u->weight * u->values[eval_tree(u, xfd + (size_t)r * N_FEATURES, 0) * u->n_values + kk];
                sd += u->weight * u->values[eval_tree(u, xd + (size_t)r * N_FEATURES, 1) * u->n_values + kk];
            }
            ref_f[r * K + k] = sf;
            ref_d[r * K + k] = sd;
        }
    for (size_t e = 0; e < N_ENGINES; e++) {
        ts_scorer_options o;
        ts_scorer_options_init(&o);
        o.engine = ENGINES[e];
        o.n_threads = 1;
        ts_scorer *s = NULL;
        ts_status st = ts_scorer_create(m, &o, &s, &err);
        CHECK_MSG(st == TS_OK, "%s: %s", ts_engine_name(ENGINES[e]), err.message);
        if (!s) continue;
        CHECK(ts_scorer_n_outputs(s) == K);
        for (int dbl = 0; dbl < 2; dbl++) {
            st = dbl ? ts_scorer_score_f64(s, xd, ROWS, N_FEATURES, N_FEATURES, got, &err)
                     : ts_scorer_score(s, xf, ROWS, N_FEATURES, N_FEATURES, got, &err);
            CHECK_MSG(st == TS_OK, "%s", err.message);
            const double *ref = dbl ? ref_d : ref_f;
            uint32_t bad = 0;
            for (uint32_t i = 0; i < ROWS * K; i++)
                if (memcmp(&got[i], &ref[i], sizeof got[i]) != 0) {
                    if (bad++ < 3)
                        fprintf(stderr, "%s %s row %u output %u: %.17g != %.17g\n", ts_engine_name(ENGINES[e]),
                                dbl ? "f64" : "f32", i / K, i % K, got[i], ref[i]);
                }
            CHECK_MSG(bad == 0, "%s (%s rows, input %s, K %u, cat %d): %u scores differ", ts_engine_name(ENGINES[e]),
                      dbl ? "double" : "float", input ? "float64" : "float32", K, categorical, bad);
        }
        ts_scorer_free(s);
    }
    for (uint32_t k = 0; k < K; k++) {
        double d = 0;
        CHECK_STATUS(ts_model_output_divisor(m, k, &d, &err), TS_OK);
        double want = 1.0;
        if (agg == TS_AGG_MEAN) {
            want = 0;
            for (uint32_t t = 0; t < n_trees; t++) want += trees[t].n_values > 1 || trees[t].output == k;
            if (want == 0) want = 1;
        }
        CHECK_SAME_DOUBLE(d, want);
    }
    ts_model_info info;
    CHECK_STATUS(ts_model_get_info(m, &info, &err), TS_OK);
    CHECK(info.n_outputs == K);
    CHECK(info.average_output == (agg == TS_AGG_MEAN));
    CHECK(info.n_features == N_FEATURES);
    ts_model_free(m);
}

static void test_random_models(void) {
    for (int round = 0; round < 20; round++) {
        check_random_model(1 + rndu(8), 1, TS_INPUT_FLOAT32, 0, TS_AGG_SUM);
        check_random_model(1 + rndu(8), 1, TS_INPUT_FLOAT64, 0, TS_AGG_SUM);
        check_random_model(1 + rndu(8), 3, TS_INPUT_FLOAT32, 0, TS_AGG_MEAN);
        check_random_model(1 + rndu(8), 2, TS_INPUT_FLOAT64, 0, TS_AGG_SUM);
        check_random_model(1 + rndu(8), 1, TS_INPUT_FLOAT32, 1, TS_AGG_SUM);
        check_random_model(1 + rndu(8), 3, TS_INPUT_FLOAT64, 1, TS_AGG_MEAN);
    }
}

/* ---- normalization at the edges -------------------------------------------------------- */

/* One stump: "x OP t" on feature 0, left leaf 1.0, right leaf 2.0; scores of xs. */
static void stump_scores(ts_compare op, ts_input_type input, double t, const double *xs, int n, int as_double,
                         double *out) {
    int64_t L[3] = {1, -1, -1}, R[3] = {2, -1, -1}, F[3] = {0, 0, 0};
    double T[3] = {t, 0, 0}, V[3] = {0, 1.0, 2.0};
    ts_tree_arrays a = tb_arrays(3, L, R, F, T, V);
    a.compare = op;
    a.input = input;
    ts_model_builder *b = NULL;
    ts_model *m = NULL;
    ts_scorer *s = NULL;
    ts_error err;
    ts_model_builder_create(1, 1, &b, &err);
    CHECK_STATUS(ts_model_builder_add_tree(b, &a, &err), TS_OK);
    CHECK_STATUS(ts_model_builder_finish(b, &m, &err), TS_OK);
    ts_model_builder_free(b);
    ts_scorer_options o;
    ts_scorer_options_init(&o);
    o.engine = TS_ENGINE_NAIVE;
    CHECK_STATUS(ts_scorer_create(m, &o, &s, &err), TS_OK);
    float xf[16];
    for (int i = 0; i < n; i++) xf[i] = (float)xs[i];
    if (as_double) ts_scorer_score_f64(s, xs, (size_t)n, 1, 1, out, &err);
    else ts_scorer_score(s, xf, (size_t)n, 1, 1, out, &err);
    ts_scorer_free(s);
    ts_model_free(m);
}

static void test_edges(void) {
    static const ts_compare ops[] = {TS_CMP_LE, TS_CMP_LT, TS_CMP_GE, TS_CMP_GT};
    const double ts[] = {0.1, -0.1, 1.0, 3.0000001, INFINITY, -INFINITY, 1e300, -1e300, (double)FLT_MAX, 0.5};
    for (size_t o = 0; o < 4; o++)
        for (size_t ti = 0; ti < sizeof ts / sizeof ts[0]; ti++)
            for (int input = 0; input < 2; input++) {
                double t = ts[ti];
                double xs[12] = {t, nextafter(t, INFINITY), nextafter(t, -INFINITY), (double)(float)t,
                                 (double)nextafterf((float)t, INFINITY), (double)nextafterf((float)t, -INFINITY),
                                 INFINITY, -INFINITY, 0.0, NAN, (double)FLT_MAX, -(double)FLT_MAX};
                for (int dbl = 0; dbl < 2; dbl++) {
                    double out[12];
                    stump_scores(ops[o], (ts_input_type)input, t, xs, 12, dbl, out);
                    for (int i = 0; i < 12; i++) {
                        double v = xs[i];
                        if (!dbl || input == TS_INPUT_FLOAT32) v = (double)(float)v;
                        int left;
                        switch (ops[o]) {
                        case TS_CMP_LE: left = v <= t; break;
                        case TS_CMP_LT: left = v < t; break;
                        case TS_CMP_GE: left = v >= t; break;
                        default: left = v > t; break;
                        }
                        CHECK_MSG(out[i] == (left ? 1.0 : 2.0), "op %d input %d t %.17g x %.17g (%s row): got %g",
                                  (int)ops[o], input, t, xs[i], dbl ? "double" : "float", out[i]);
                    }
                }
            }
}

/* ---- validation ------------------------------------------------------------------------ */

static ts_status add_raw(ts_model_builder *b, uint32_t n, const int64_t *L, const int64_t *R, const int64_t *F,
                         const double *T, ts_error *err) {
    static const double V[8] = {0};
    ts_tree_arrays a = tb_arrays(n, L, R, F, T, V);
    return ts_model_builder_add_tree(b, &a, err);
}

#define EXPECT_ERR(call, status, text)                                                                 \
    do {                                                                                              \
        ts_error e_;                                                                                  \
        memset(&e_, 0, sizeof e_);                                                                    \
        ts_status s_ = (call);                                                                        \
        (void)e_;                                                                                     \
        CHECK_MSG(s_ == (status), "%s: got %s (%s)", #call, ts_status_name(s_), err.message);         \
        CHECK_MSG(strstr(err.message, text) != NULL, "message '%s' lacks '%s'", err.message, text);   \
    } while (0)

static void test_errors(void) {
    ts_model_builder *b = NULL;
    ts_error err;
    CHECK_STATUS(ts_model_builder_create(0, 1, &b, &err), TS_ERR_INVALID_ARGUMENT);
    CHECK(b == NULL);
    CHECK_STATUS(ts_model_builder_create(3, 0, &b, &err), TS_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(ts_model_builder_create(3, 2, &b, &err), TS_OK);
    const int64_t F[5] = {0, 1, 2, 0, 0};
    const double T[5] = {0.5, 0.5, 0.5, 0.5, 0.5};
    /* a good tree first: errors name the next tree index, 1 */
    {
        const int64_t L[3] = {1, -1, -1}, R[3] = {2, -1, -1};
        CHECK_STATUS(add_raw(b, 3, L, R, F, T, &err), TS_OK);
    }
    {
        const int64_t L[5] = {1, 3, -1, 1, -1}, R[5] = {2, 4, -1, -1, -1}; /* node 3: one child */
        EXPECT_ERR(add_raw(b, 5, L, R, F, T, &err), TS_ERR_INVALID_MODEL, "tree 1: node 3 has one child -1");
    }
    {
        const int64_t L[5] = {1, 3, -1, -1, -1}, R[5] = {2, 1, -1, -1, -1}; /* node 1 -> itself */
        EXPECT_ERR(add_raw(b, 5, L, R, F, T, &err), TS_ERR_INVALID_MODEL, "tree 1: node 1 is reached twice");
    }
    {
        const int64_t L[5] = {1, 0, -1, -1, -1}, R[5] = {2, 3, -1, -1, -1}; /* back to the root */
        EXPECT_ERR(add_raw(b, 5, L, R, F, T, &err), TS_ERR_INVALID_MODEL, "tree 1: node 1: left child is the root");
    }
    {
        const int64_t L[5] = {1, -1, -1, -1, -1}, R[5] = {2, -1, -1, -1, -1}; /* 3, 4 unreachable */
        EXPECT_ERR(add_raw(b, 5, L, R, F, T, &err), TS_ERR_INVALID_MODEL, "tree 1: node 3 is not reachable");
    }
    {
        const int64_t L[3] = {1, -1, -1}, R[3] = {7, -1, -1};
        EXPECT_ERR(add_raw(b, 3, L, R, F, T, &err), TS_ERR_INVALID_MODEL, "tree 1: node 0: right child 7 is out of range");
    }
    {
        const int64_t L[3] = {1, -1, -1}, R[3] = {2, -1, -1}, F9[3] = {9, 0, 0};
        EXPECT_ERR(add_raw(b, 3, L, R, F9, T, &err), TS_ERR_INVALID_MODEL, "tree 1: node 0 tests feature 9");
    }
    {
        const int64_t L[3] = {1, -1, -1}, R[3] = {2, -1, -1};
        const double Tn[3] = {NAN, 0, 0};
        EXPECT_ERR(add_raw(b, 3, L, R, F, Tn, &err), TS_ERR_INVALID_MODEL, "tree 1: node 0 has a NaN threshold");
    }
    {
        const int64_t L[3] = {1, -1, -1}, R[3] = {2, -1, -1};
        const double V[9] = {0, 1, 2, 3, 4, 5, 6, 7, 8};
        ts_tree_arrays a = tb_arrays(3, L, R, F, T, V);
        a.n_values = 3; /* the model has 2 outputs */
        EXPECT_ERR(ts_model_builder_add_tree(b, &a, &err), TS_ERR_INVALID_ARGUMENT, "tree 1: 3 values per leaf");
        a.n_values = 1;
        a.output = 2;
        EXPECT_ERR(ts_model_builder_add_tree(b, &a, &err), TS_ERR_INVALID_ARGUMENT, "tree 1: adds to output 2");
        a.output = 1;
        a.input = TS_INPUT_FLOAT64;
        EXPECT_ERR(ts_model_builder_add_tree(b, &a, &err), TS_ERR_INVALID_ARGUMENT, "one input type per model");
        a.input = TS_INPUT_FLOAT32;
        const double Vinf[3] = {0, INFINITY, 1};
        a.values = Vinf;
        EXPECT_ERR(ts_model_builder_add_tree(b, &a, &err), TS_ERR_INVALID_MODEL, "tree 1: leaf node 1 has a non-finite value");
        a.values = V;
        a.size = 8;
        EXPECT_ERR(ts_model_builder_add_tree(b, &a, &err), TS_ERR_INVALID_ARGUMENT, "call ts_tree_arrays_init");
        a.size = sizeof a;
        uint8_t c[3] = {TS_CMP_IN, 0, 0};
        a.compares = c;
        EXPECT_ERR(ts_model_builder_add_tree(b, &a, &err), TS_ERR_INVALID_MODEL, "tree 1: node 0: category set -1");
        c[0] = 9;
        EXPECT_ERR(ts_model_builder_add_tree(b, &a, &err), TS_ERR_INVALID_ARGUMENT, "tree 1: node 0: unknown comparison 9");
        a.compares = NULL;
        CHECK_STATUS(ts_model_builder_add_tree(b, &a, &err), TS_OK); /* the failed ones left nothing behind */
    }
    double base2[2] = {1, 2};
    CHECK_STATUS(ts_model_builder_set_base_scores(b, base2, 1, &err), TS_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(ts_model_builder_set_base_scores(b, base2, 2, &err), TS_OK);
    const char *names[3] = {"a", "b", "c"};
    CHECK_STATUS(ts_model_builder_set_feature_names(b, names, 2, &err), TS_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(ts_model_builder_set_feature_names(b, names, 3, &err), TS_OK);
    CHECK_STATUS(ts_model_builder_set_aggregation(b, (ts_aggregation)7, &err), TS_ERR_INVALID_ARGUMENT);
    ts_model *m = NULL;
    CHECK_STATUS(ts_model_builder_finish(b, &m, &err), TS_OK);
    CHECK(m != NULL);
    ts_model_info info;
    ts_model_get_info(m, &info, NULL);
    CHECK(info.n_trees == 2);
    CHECK(info.n_outputs == 2);
    CHECK(info.format == TS_FORMAT_AUTO);
    CHECK(strcmp(ts_model_feature_name(m, 2), "c") == 0);
    ts_model *m2 = NULL;
    EXPECT_ERR(ts_model_builder_finish(b, &m2, &err), TS_ERR_INVALID_ARGUMENT, "was finished");
    CHECK(m2 == NULL);
    EXPECT_ERR(add_raw(b, 1, F, F, F, T, &err), TS_ERR_INVALID_ARGUMENT, "was finished");
    ts_model_builder_free(b);
    ts_model_free(m);
    ts_model_builder_free(NULL);

    /* float64 thresholds in the double path's zero range are refused; no trees at all too */
    CHECK_STATUS(ts_model_builder_create(1, 1, &b, &err), TS_OK);
    {
        const int64_t L[3] = {1, -1, -1}, R[3] = {2, -1, -1}, F0[3] = {0, 0, 0};
        const double T0[3] = {0.0, 0, 0}, V[3] = {0, 1, 2};
        ts_tree_arrays a = tb_arrays(3, L, R, F0, T0, V);
        a.input = TS_INPUT_FLOAT64;
        EXPECT_ERR(ts_model_builder_add_tree(b, &a, &err), TS_ERR_UNSUPPORTED, "tree 0: node 0: float64 threshold 0");
        a.input = TS_INPUT_FLOAT32; /* float32 input: x <= 0.0 is exact */
        EXPECT_ERR(ts_model_builder_finish(b, &m, &err), TS_ERR_INVALID_MODEL, "no trees");
        CHECK_STATUS(ts_model_builder_add_tree(b, &a, &err), TS_OK);
        CHECK_STATUS(ts_model_builder_finish(b, &m, &err), TS_OK);
        ts_model_free(m);
    }
    ts_model_builder_free(b);
}

/* A chain of 200,000 nodes (a fully grown tree on sorted data looks like this): no
 * recursion anywhere. */
static void test_deep_chain(void) {
    enum { DEPTH = 100000, N = 2 * DEPTH + 1 };
    int64_t *L = malloc(N * sizeof *L), *R = malloc(N * sizeof *R), *F = calloc(N, sizeof *F);
    double *T = calloc(N, sizeof *T), *V = calloc(N, sizeof *V);
    if (!L || !R || !F || !T || !V) return;
    for (uint32_t d = 0; d < DEPTH; d++) { /* node 2d tests x <= d, its left is a leaf */
        L[2 * d] = 2 * d + 1;
        R[2 * d] = 2 * d + 2;
        L[2 * d + 1] = R[2 * d + 1] = -1;
        T[2 * d] = d;
        V[2 * d + 1] = d;
    }
    L[N - 1] = R[N - 1] = -1;
    V[N - 1] = -1;
    ts_tree_arrays a = tb_arrays(N, L, R, F, T, V);
    ts_model_builder *b = NULL;
    ts_model *m = NULL;
    ts_scorer *s = NULL;
    ts_error err;
    ts_model_builder_create(1, 1, &b, &err);
    CHECK_STATUS(ts_model_builder_add_tree(b, &a, &err), TS_OK);
    CHECK_STATUS(ts_model_builder_finish(b, &m, &err), TS_OK);
    ts_scorer_options o;
    ts_scorer_options_init(&o);
    o.engine = TS_ENGINE_NAIVE;
    CHECK_STATUS(ts_scorer_create(m, &o, &s, &err), TS_OK);
    float x[3] = {0.5f, 777.0f, 1e9f};
    double out[3];
    CHECK_STATUS(ts_scorer_score(s, x, 3, 1, 1, out, &err), TS_OK);
    CHECK(out[0] == 1.0 && out[1] == 777.0 && out[2] == -1.0);
    ts_scorer_free(s);
    ts_model_free(m);
    ts_model_builder_free(b);
    free(L);
    free(R);
    free(F);
    free(T);
    free(V);
}

/* A model that gives two of the features it reads one name cannot be mapped to columns
 * by name: both features would read the one column of that name (a silent change of
 * the scores: 3 became 2 here). ts_model_map_features refuses it, naming both. */
static void test_map_duplicate_names(void) {
    ts_model_builder *b = NULL;
    ts_model *m = NULL;
    ts_error err;
    const int64_t L[3] = {1, -1, -1}, R[3] = {2, -1, -1}, F0[3] = {0, 0, 0}, F1[3] = {1, 0, 0};
    const double T[3] = {0.5, 0, 0}, V[3] = {0, 1.0, 2.0};
    CHECK_STATUS(ts_model_builder_create(3, 1, &b, &err), TS_OK);
    ts_tree_arrays a;
    ts_tree_arrays_init(&a);
    a.n_nodes = 3;
    a.children_left = L;
    a.children_right = R;
    a.threshold = T;
    a.values = V;
    a.feature = F0;
    CHECK_STATUS(ts_model_builder_add_tree(b, &a, &err), TS_OK);
    a.feature = F1;
    CHECK_STATUS(ts_model_builder_add_tree(b, &a, &err), TS_OK);
    const char *names[3] = {"a", "a", "c"};
    CHECK_STATUS(ts_model_builder_set_feature_names(b, names, 3, &err), TS_OK);
    CHECK_STATUS(ts_model_builder_finish(b, &m, &err), TS_OK);
    ts_model_builder_free(b);
    const char *cols[3] = {"a", "b", "c"};
    EXPECT_ERR(ts_model_map_features(m, cols, 3, &err), TS_ERR_SHAPE, "features 0 and 1");
    /* unchanged: feature 1 still reads column 1 */
    ts_scorer *s = NULL;
    CHECK_STATUS(ts_scorer_create(m, NULL, &s, &err), TS_OK);
    const float x[3] = {0.4f, 0.6f, 0.0f};
    double out = 0;
    CHECK_STATUS(ts_scorer_score(s, x, 1, 3, 3, &out, &err), TS_OK);
    CHECK_SAME_DOUBLE(out, 3.0);
    ts_scorer_free(s);
    /* a duplicate name no split reads is harmless */
    const char *cols2[3] = {"a", "x", "c"};
    ts_model_free(m);
    CHECK_STATUS(ts_model_builder_create(3, 1, &b, &err), TS_OK);
    a.feature = F0;
    CHECK_STATUS(ts_model_builder_add_tree(b, &a, &err), TS_OK);
    const char *names2[3] = {"a", "c", "c"};
    CHECK_STATUS(ts_model_builder_set_feature_names(b, names2, 3, &err), TS_OK);
    CHECK_STATUS(ts_model_builder_finish(b, &m, &err), TS_OK);
    ts_model_builder_free(b);
    CHECK_STATUS(ts_model_map_features(m, cols2, 3, &err), TS_OK);
    ts_model_free(m);
}

/* A tree that fails after one of its categorical nodes was read left nothing of the
 * tree but its category set: the model then "read" that set's column (a spurious
 * TS_ERR_SHAPE naming it from ts_model_map_features, a wider row, the general path). A
 * failing tree now leaves the model exactly as it was. */
static void test_failed_tree_leaves_no_category_set(void) {
    ts_model_builder *b = NULL;
    ts_model *m = NULL;
    ts_error err;
    CHECK_STATUS(ts_model_builder_create(3, 1, &b, &err), TS_OK);
    const int64_t L[3] = {1, -1, -1}, R[3] = {2, -1, -1}, F[3] = {0, 0, 0};
    const double T[3] = {0.5, 0, 0}, V[3] = {0, 1.0, 2.0};
    ts_tree_arrays a = tb_arrays(3, L, R, F, T, V);
    CHECK_STATUS(ts_model_builder_add_tree(b, &a, &err), TS_OK);
    /* node 0: a category set on feature 2; node 1: a NaN threshold, which fails */
    const int64_t L2[5] = {1, 3, -1, -1, -1}, R2[5] = {2, 4, -1, -1, -1}, F2[5] = {2, 1, 0, 0, 0};
    const int64_t CS[5] = {0, 0, 0, 0, 0};
    const double T2[5] = {0, NAN, 0, 0, 0}, V2[5] = {0};
    const uint8_t C2[5] = {TS_CMP_IN, TS_CMP_LE, 0, 0, 0};
    const uint32_t W[1] = {1};
    ts_tree_arrays a2 = tb_arrays(5, L2, R2, F2, T2, V2);
    tb_one_category_set(&a2, C2, CS, W);
    EXPECT_ERR(ts_model_builder_add_tree(b, &a2, &err), TS_ERR_INVALID_MODEL, "NaN threshold");
    const char *names[3] = {"a", "b", "c"};
    CHECK_STATUS(ts_model_builder_set_feature_names(b, names, 3, &err), TS_OK);
    CHECK_STATUS(ts_model_builder_finish(b, &m, &err), TS_OK);
    ts_model_builder_free(b);
    ts_model_info info;
    CHECK_STATUS(ts_model_get_info(m, &info, &err), TS_OK);
    CHECK(info.n_trees == 1 && info.n_features_used == 1 && info.n_categorical_splits == 0);
    /* only "a" is read: a row of that column alone is enough */
    const char *cols[1] = {"a"};
    CHECK_STATUS(ts_model_map_features(m, cols, 1, &err), TS_OK);
    ts_scorer *s = NULL;
    CHECK_STATUS(ts_scorer_create(m, NULL, &s, &err), TS_OK);
    CHECK(ts_scorer_n_features(s) == 1);
    const float x[2] = {0.4f, 0.6f};
    double out[2] = {0, 0};
    CHECK_STATUS(ts_scorer_score(s, x, 2, 1, 1, out, &err), TS_OK);
    CHECK_SAME_DOUBLE(out[0], 1.0);
    CHECK_SAME_DOUBLE(out[1], 2.0);
    ts_scorer_free(s);
    ts_model_free(m);
}

int main(void) {
    RUN_TEST(test_edges);
    RUN_TEST(test_errors);
    RUN_TEST(test_random_models);
    RUN_TEST(test_deep_chain);
    RUN_TEST(test_map_duplicate_names);
    RUN_TEST(test_failed_tree_leaves_no_category_set);
    return check_summary("test_builder");
}
