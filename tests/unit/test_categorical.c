/* test_categorical.c: unit tests of categorical splits and multi-output models: category rules, set sharing, K scores per row in every engine. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "model/forest.h"
#include "treescore.h"

/* Two classes, three features. Class 0: tree 0 (feature 1 in {0, 3, 33} ? 1 : 2) and tree
 * 2 (the same set ? 100 : (feature 2 <= 1.5 ? 200 : 300)); class 1: tree 1 (feature 0 <=
 * 0.5 ? 10 : 20, NaN as 0.0) and tree 3 (a leaf, 0.5). Set words: 9 = {0, 3}, 2 = {33}. */
static const char LGB_MODEL[] =
    "tree\nversion=v4\nnum_class=2\nnum_tree_per_iteration=2\nlabel_index=0\nmax_feature_idx=2\n"
    "objective=multiclass num_class:2\nfeature_names=a b c\nfeature_infos=none none none\n\n"
    "Tree=0\nnum_leaves=2\nnum_cat=1\nsplit_feature=1\nthreshold=0\ndecision_type=1\nleft_child=-1\n"
    "right_child=-2\nleaf_value=1 2\ncat_boundaries=0 2\ncat_threshold=9 2\nis_linear=0\nshrinkage=1\n\n"
    "Tree=1\nnum_leaves=2\nnum_cat=0\nsplit_feature=0\nthreshold=0.5\ndecision_type=2\nleft_child=-1\n"
    "right_child=-2\nleaf_value=10 20\nis_linear=0\nshrinkage=1\n\n"
    "Tree=2\nnum_leaves=3\nnum_cat=1\nsplit_feature=1 2\nthreshold=0 1.5\ndecision_type=1 2\nleft_child=-1 -2\n"
    "right_child=1 -3\nleaf_value=100 200 300\ncat_boundaries=0 2\ncat_threshold=9 2\nis_linear=0\nshrinkage=1\n\n"
    "Tree=3\nnum_leaves=1\nnum_cat=0\nsplit_feature=\nthreshold=\ndecision_type=\nleft_child=\nright_child=\n"
    "leaf_value=0.5\nis_linear=0\nshrinkage=1\n\n"
    "end of trees\n";

/* One tree: feature 0 in {1, 40} goes right (2), others left (-1); NaN left (default). */
static const char XGB_MODEL[] =
    "{\"learner\":{\"gradient_booster\":{\"model\":{\"gbtree_model_param\":{\"num_trees\":\"1\"},\"tree_info\":[0],"
    "\"trees\":[{\"categories\":[1,40],\"categories_nodes\":[0],\"categories_segments\":[0],\"categories_sizes\":[2],"
    "\"default_left\":[1,0,0],\"left_children\":[1,-1,-1],\"right_children\":[2,-1,-1],"
    "\"split_conditions\":[0,-1E0,2E0],\"split_indices\":[0,0,0],\"split_type\":[1,0,0],"
    "\"tree_param\":{\"num_deleted\":\"0\",\"num_feature\":\"2\",\"num_nodes\":\"3\",\"size_leaf_vector\":\"1\"}}]},"
    "\"name\":\"gbtree\"},\"learner_model_param\":{\"base_score\":\"[5E-1]\",\"num_class\":\"0\","
    "\"num_feature\":\"2\",\"num_target\":\"1\"},\"objective\":{\"name\":\"reg:squarederror\"}},\"version\":[3,2,0]}";

/* Three outputs (multi:softprob), one single-leaf tree each, in the order 2, 0, 1. */
static const char XGB_MULTI[] =
    "{\"learner\":{\"gradient_booster\":{\"model\":{\"gbtree_model_param\":{\"num_trees\":\"3\"},\"tree_info\":[2,0,1],"
    "\"trees\":["
    "{\"default_left\":[0],\"left_children\":[-1],\"right_children\":[-1],\"split_conditions\":[3E0],"
    "\"split_indices\":[0],\"tree_param\":{\"num_nodes\":\"1\",\"size_leaf_vector\":\"1\"}},"
    "{\"default_left\":[0],\"left_children\":[-1],\"right_children\":[-1],\"split_conditions\":[1E0],"
    "\"split_indices\":[0],\"tree_param\":{\"num_nodes\":\"1\",\"size_leaf_vector\":\"1\"}},"
    "{\"default_left\":[0],\"left_children\":[-1],\"right_children\":[-1],\"split_conditions\":[2E0],"
    "\"split_indices\":[0],\"tree_param\":{\"num_nodes\":\"1\",\"size_leaf_vector\":\"1\"}}]},"
    "\"name\":\"gbtree\"},\"learner_model_param\":{\"base_score\":\"[1E-1,2E-1,3E-1]\",\"num_class\":\"3\","
    "\"num_feature\":\"1\",\"num_target\":\"1\"},\"objective\":{\"name\":\"multi:softprob\"}},\"version\":[3,2,0]}";

static ts_model *load(const char *text, ts_model_format f) {
    ts_model *m = NULL;
    ts_error err;
    ts_status st = ts_model_load_buffer(text, strlen(text), f, "m", &m, &err);
    CHECK_MSG(st == TS_OK, "load: %s", st ? err.message : "");
    return m;
}

/* Every engine's float and double scores of rows (n x cols) against want (n x k). */
static void check_engines(const ts_model *m, const double *rows, size_t n, size_t cols, const double *want,
                          uint32_t k) {
    float *xf = malloc(n * cols * sizeof *xf);
    double *out = malloc(n * k * sizeof *out);
    for (size_t i = 0; i < n * cols; i++) xf[i] = (float)rows[i];
    for (int e = TS_ENGINE_AUTO; e < TS_ENGINE_COUNT; e++) {
        ts_scorer_options o;
        ts_scorer *s = NULL;
        ts_error err;
        ts_scorer_options_init(&o);
        o.engine = (ts_engine)e;
        o.n_threads = 2;
        o.plan = TS_PLAN_RULE;
        ts_status st = ts_scorer_create(m, &o, &s, &err);
        if (st == TS_ERR_ENGINE_UNAVAILABLE) continue; /* ifelse without a compiler */
        CHECK_MSG(st == TS_OK, "engine %s: %s", ts_engine_name((ts_engine)e), st ? err.message : "");
        if (!s) continue;
        CHECK(ts_scorer_n_outputs(s) == k);
        for (int pass = 0; pass < 2; pass++) {
            memset(out, 0, n * k * sizeof *out);
            st = pass ? ts_scorer_score_f64(s, rows, n, cols, cols, out, &err)
                      : ts_scorer_score(s, xf, n, cols, cols, out, &err);
            CHECK_STATUS(st, TS_OK);
            for (size_t i = 0; i < n * k; i++)
                CHECK_MSG(out[i] == want[i], "engine %s, %s rows: row %zu output %zu: %.17g, expected %.17g",
                          ts_engine_name((ts_engine)e), pass ? "double" : "float", i / k, i % k, out[i], want[i]);
        }
        ts_scorer_free(s);
    }
    free(xf);
    free(out);
}

static void test_lightgbm_rules(void) {
    ts_model *m = load(LGB_MODEL, TS_FORMAT_LIGHTGBM);
    if (!m) return;
    ts_model_info info;
    CHECK_STATUS(ts_model_get_info(m, &info, NULL), TS_OK);
    CHECK(info.n_outputs == 2);
    CHECK(info.n_categorical_splits == 2);
    CHECK(m->n_catsets == 1); /* the two nodes share one set */
    /* feature 1 values and whether LightGBM sends them left (in the set) */
    static const struct { double v; int left; } cases[] = {
        {0, 1},     {3, 1},   {33, 1},     {1, 0},    {32, 0},         {64, 0},          {-0.5, 1},
        {-0.0, 1},  {-1, 0},  {2.5, 0},    {3.7, 1},  {33.9, 1},       {NAN, 0},         {1e10, 0},
        {-1e10, 0}, {1e-40, 1}, {2147483648.0, 0}, {INFINITY, 0}, {-INFINITY, 0}, {-0.999, 1},
    };
    enum { N = sizeof cases / sizeof cases[0] };
    double rows[N * 3], want[N * 2];
    for (size_t i = 0; i < N; i++) {
        CHECK_MSG(tsm_catset_goes_left(m, &m->catsets[0], cases[i].v) == cases[i].left, "value %g", cases[i].v);
        double f0 = i % 3 == 0 ? NAN : (double)i / 10, f2 = (double)(i % 4);
        rows[i * 3 + 0] = f0;
        rows[i * 3 + 1] = cases[i].v;
        rows[i * 3 + 2] = f2;
        double t2 = cases[i].left ? 100 : (f2 <= 1.5 ? 200 : 300);
        want[i * 2 + 0] = (cases[i].left ? 1.0 : 2.0) + t2;
        want[i * 2 + 1] = ((f0 != f0 ? 0.0 : f0) <= 0.5 ? 10.0 : 20.0) + 0.5;
    }
    check_engines(m, rows, N, 3, want, 2);
    ts_model_free(m);
}

static void test_xgboost_rules(void) {
    ts_model *m = load(XGB_MODEL, TS_FORMAT_XGBOOST_JSON);
    if (!m) return;
    static const struct { double v; int right; } cases[] = {
        {1, 1},   {40, 1},   {0, 0},       {NAN, 0},  {-0.5, 0}, {16777216.0, 0}, {40.5, 1}, {1.99, 1},
        {41, 0},  {-1, 0},   {1e10, 0},    {-0.0, 0}, {2, 0},    {INFINITY, 0},   {39.999, 0},
    };
    enum { N = sizeof cases / sizeof cases[0] };
    double rows[N * 2], want[N];
    for (size_t i = 0; i < N; i++) {
        rows[i * 2] = cases[i].v;
        rows[i * 2 + 1] = 0;
        want[i] = 0.5 + (cases[i].right ? 2.0 : -1.0);
    }
    check_engines(m, rows, N, 2, want, 1);
    ts_model_free(m);
}

static void test_xgboost_multi(void) {
    ts_model *m = load(XGB_MULTI, TS_FORMAT_XGBOOST_JSON);
    if (!m) return;
    double rows[4] = {0, 1, NAN, -5}, want[12];
    for (int i = 0; i < 4; i++) {
        want[i * 3 + 0] = (double)0.1f + 1.0; /* base_score values are float32 margins */
        want[i * 3 + 1] = (double)0.2f + 2.0;
        want[i * 3 + 2] = (double)0.3f + 3.0;
    }
    check_engines(m, rows, 4, 1, want, 3);
    ts_model_free(m);
}

/* Malformed category data is a load error, never a crash. */
static void test_bad_categories(void) {
    static const struct { const char *from, *to, *msg; } lgb[] = {
        {"cat_boundaries=0 2\ncat_threshold=9 2\nis_linear=0\nshrinkage=1\n\nTree=1",
         "cat_boundaries=0 3\ncat_threshold=9 2\nis_linear=0\nshrinkage=1\n\nTree=1", "cat_boundaries"},
        {"split_feature=1\nthreshold=0\n", "split_feature=1\nthreshold=1\n", "category set index"},
        {"split_feature=1\nthreshold=0\n", "split_feature=1\nthreshold=0.5\n", "category set index"},
        {"cat_threshold=9 2\nis_linear=0\nshrinkage=1\n\nTree=1", "cat_threshold=9 x\nis_linear=0\nshrinkage=1\n\nTree=1",
         "cat_threshold"},
    };
    for (size_t i = 0; i < sizeof lgb / sizeof lgb[0]; i++) {
        const char *at = strstr(LGB_MODEL, lgb[i].from);
        CHECK(at != NULL);
        if (!at) continue;
        size_t a = (size_t)(at - LGB_MODEL), fl = strlen(lgb[i].from), tl = strlen(lgb[i].to);
        char *t = malloc(sizeof LGB_MODEL + tl);
        memcpy(t, LGB_MODEL, a);
        memcpy(t + a, lgb[i].to, tl);
        strcpy(t + a + tl, LGB_MODEL + a + fl);
        ts_model *m = NULL;
        ts_error err;
        ts_status st = ts_model_load_buffer(t, strlen(t), TS_FORMAT_LIGHTGBM, "bad", &m, &err);
        CHECK_MSG(st != TS_OK && m == NULL && strstr(err.message, lgb[i].msg), "case %zu: %s", i,
                  st ? err.message : "loaded");
        ts_model_free(m);
        free(t);
    }
}

/* Scores of n rows with `threads` threads (float rows, then double rows after them). */
static void score_threads(const ts_model *m, ts_engine e, unsigned threads, const double *xd, const float *xf, size_t n,
                          double *out) {
    ts_scorer_options o;
    ts_scorer *s = NULL;
    ts_error err;
    ts_scorer_options_init(&o);
    o.engine = e;
    o.n_threads = threads;
    ts_status st = ts_scorer_create(m, &o, &s, &err);
    if (st == TS_ERR_ENGINE_UNAVAILABLE) return;
    CHECK_MSG(st == TS_OK, "%s", st ? err.message : "");
    if (!s) return;
    CHECK_STATUS(ts_scorer_score(s, xf, n, 3, 3, out, &err), TS_OK);
    CHECK_STATUS(ts_scorer_score_f64(s, xd, n, 3, 3, out + 2 * n, &err), TS_OK);
    ts_scorer_free(s);
}

/* Large batches across threads give the same bits as one thread (the pool's chunks each
 * expand their rows into their own thread's scratch). */
static void test_threads(void) {
    ts_model *m = load(LGB_MODEL, TS_FORMAT_LIGHTGBM);
    if (!m) return;
    enum { N = 20000 };
    double *xd = malloc(N * 3 * sizeof *xd), *a = calloc(4 * N, sizeof *a), *b = calloc(4 * N, sizeof *b);
    float *xf = malloc(N * 3 * sizeof *xf);
    uint64_t r = 12345;
    for (size_t i = 0; i < N * 3; i++) {
        r = r * 6364136223846793005ull + 1442695040888963407ull;
        double v = (double)(r >> 40) / (double)(1u << 24) * 50.0 - 5.0;
        xd[i] = (r >> 20) % 17 == 0 ? NAN : (i % 3 == 1 ? floor(v) : v);
        xf[i] = (float)xd[i];
    }
    for (int e = TS_ENGINE_NAIVE; e < TS_ENGINE_COUNT; e++) {
        score_threads(m, (ts_engine)e, 1, xd, xf, N, a);
        score_threads(m, (ts_engine)e, 4, xd, xf, N, b);
        CHECK_MSG(memcmp(a, b, 4 * N * sizeof *a) == 0, "engine %s: 4 threads differ from 1",
                  ts_engine_name((ts_engine)e));
    }
    free(xd), free(xf), free(a), free(b);
    ts_model_free(m);
}

/* tsm_model_add_catset shares equal sets through a hash index (a scan of every earlier
 * set made a load of n distinct sets cost O(n^2): minutes for the hundreds of thousands
 * of a big LightGBM model with categorical splits). Equal sets get one index, distinct
 * ones their own, through a rollback of the count (the builder's) and after the sets
 * were renumbered in place (tsm_catsets_changed); 100,000 distinct sets stay distinct. */
static void test_catset_index(void) {
    ts_model *m = tsm_model_new(TS_FORMAT_AUTO);
    CHECK(m != NULL);
    if (!m) return;
    ts_error err;
    uint32_t idx = 0, again = 0, w[3] = {0, 0, 0};
    enum { N = 100000 };
    int ok = 1;
    for (uint32_t i = 0; i < N && ok; i++) {
        w[0] = i * 2654435761u;
        w[1] = i;
        ok = tsm_model_add_catset(m, i % 7, TSM_CAT_EXACT, 0, w, 3, &idx, &err) == TS_OK && idx == i;
    }
    CHECK_MSG(ok && m->n_catsets == N, "%u sets", m->n_catsets);
    for (uint32_t i = 0; i < N && ok; i += 997) {
        w[0] = i * 2654435761u;
        w[1] = i;
        ok = tsm_model_add_catset(m, i % 7, TSM_CAT_EXACT, 0, w, 2, &idx, &err) == TS_OK && idx == i;
        /* another feature, rule or flag is another set */
        ok = ok && tsm_model_add_catset(m, i % 7 + 1, TSM_CAT_EXACT, 0, w, 2, &again, &err) == TS_OK && again != i;
        m->n_catsets--; /* take it off again, as the builder does */
        m->n_cat_words -= m->catsets[m->n_catsets].n_words;
    }
    CHECK(ok && m->n_catsets == N);
    /* renumbered in place: feature 0's sets move to feature 100 (their hashes left as
     * they were: a set whose hash matches but whose content differs is another set) */
    for (uint32_t i = 0; i < m->n_catsets; i++)
        if (m->catsets[i].feature == 0) m->catsets[i].feature = 100;
    tsm_catsets_changed(m);
    w[0] = 0;
    w[1] = 0;
    CHECK_STATUS(tsm_model_add_catset(m, 0, TSM_CAT_EXACT, 0, w, 2, &idx, &err), TS_OK);
    CHECK(idx == N); /* feature 0 has no such set any more */
    ts_model_free(m);
}

int main(void) {
    RUN_TEST(test_lightgbm_rules);
    RUN_TEST(test_xgboost_rules);
    RUN_TEST(test_xgboost_multi);
    RUN_TEST(test_bad_categories);
    RUN_TEST(test_threads);
    RUN_TEST(test_catset_index);
    return check_summary("test_categorical");
}
