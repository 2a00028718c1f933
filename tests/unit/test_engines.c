/* test_engines.c: every engine equals the IR reference bit for bit on random forests and rows. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "model/forest.h"
#include "treescore.h"

/* xorshift64*: deterministic, independent of the C library's rand(). */
static uint64_t rng_state = 88172645463325252ull;
static uint64_t rnd(void) {
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 2685821657736338717ull;
}
static uint32_t rnd_below(uint32_t n) { return (uint32_t)(rnd() % n); }

#define N_FEATURES 12
#define ZERO_FEATURE 3 /* the one feature whose nodes may be zero-is-missing */

/* Threshold values per feature come from a small grid, so rows often hit them exactly. */
static const float grid[] = {-3.5f, -1.0f, -1.0000001f, -1e-30f, 0.0f, 1e-30f, 0.25f, 0.5f, 1.0f, 2.0f, 7.0f, 100.0f};
#define GRID_N (sizeof grid / sizeof grid[0])

static float random_threshold(uint32_t feature) {
    float t = grid[rnd_below(GRID_N)];
    /* The zero feature must not have thresholds inside [-Z, Z) (tsm_model_finish). */
    if (feature == ZERO_FEATURE && t >= -TSM_ZERO_RANGE && t < TSM_ZERO_RANGE) t = 0.5f;
    return t;
}

static float random_value(void) {
    switch (rnd_below(8)) {
    case 0: return NAN;
    case 1: return grid[rnd_below(GRID_N)];
    case 2: return nextafterf(grid[rnd_below(GRID_N)], INFINITY);
    case 3: return nextafterf(grid[rnd_below(GRID_N)], -INFINITY);
    case 4: {
        static const float z[] = {0.0f, -0.0f, 1e-36f, -1e-36f, 1e-35f, -1e-35f, 1e-40f};
        return z[rnd_below(7)];
    }
    case 5: return rnd_below(2) ? INFINITY : -INFINITY;
    default: return (float)((double)rnd_below(2000000) / 1000.0 - 1000.0) / 100.0f;
    }
}

/* Build one random tree with n_leaves leaves into (nodes, leaves), with shuffled internal
 * node numbering (root kept at 0) and shuffled leaf numbering. */
static void random_tree(uint32_t n_leaves, tsm_node *nodes, double *leaves) {
    uint32_t n_nodes = n_leaves - 1;
    /* Grow: start with one leaf slot; repeatedly split a random leaf slot. Slots are
     * child references in a "natural" numbering: node i created i-th, leaf j j-th. */
    uint32_t *perm_node = malloc((n_nodes + 1) * sizeof *perm_node);
    uint32_t *perm_leaf = malloc(n_leaves * sizeof *perm_leaf);
    int32_t **slots = malloc(n_leaves * sizeof *slots); /* pointers to child fields that hold a leaf */
    int32_t root_ref = ~0;
    uint32_t n_slots = 1, made_nodes = 0;
    slots[0] = &root_ref;
    for (uint32_t i = 0; i < n_nodes; i++) {
        uint32_t k = rnd_below(n_slots);
        int32_t *slot = slots[k];
        tsm_node *nd = &nodes[made_nodes];
        nd->feature = rnd_below(N_FEATURES);
        nd->threshold = random_threshold(nd->feature);
        nd->flags = rnd_below(2) ? TSM_MISSING_LEFT : 0;
        if (nd->feature == ZERO_FEATURE && rnd_below(2)) nd->flags |= TSM_ZERO_IS_MISSING;
        *slot = (int32_t)made_nodes++;
        nd->left = ~0;
        nd->right = ~0;
        slots[k] = &nd->left;
        slots[n_slots++] = &nd->right;
    }
    /* Assign leaf ids in slot order (arbitrary), then values. */
    for (uint32_t j = 0; j < n_slots; j++) *slots[j] = ~(int32_t)j;
    for (uint32_t j = 0; j < n_leaves; j++) leaves[j] = (double)(int)rnd_below(2000001) / 1024.0 - 976.0;
    /* Shuffle internal numbering except the root, and leaf numbering. */
    for (uint32_t i = 0; i < n_nodes; i++) perm_node[i] = i;
    for (uint32_t i = n_nodes; i > 2; i--) {
        uint32_t j = 1 + rnd_below(i - 1), tmp = perm_node[i - 1];
        perm_node[i - 1] = perm_node[j];
        perm_node[j] = tmp;
    }
    for (uint32_t j = 0; j < n_leaves; j++) perm_leaf[j] = j;
    for (uint32_t j = n_leaves; j > 1; j--) {
        uint32_t k = rnd_below(j), tmp = perm_leaf[j - 1];
        perm_leaf[j - 1] = perm_leaf[k];
        perm_leaf[k] = tmp;
    }
    tsm_node *copy = malloc((n_nodes + 1) * sizeof *copy);
    double *lcopy = malloc(n_leaves * sizeof *lcopy);
    for (uint32_t i = 0; i < n_nodes; i++) copy[i] = nodes[i];
    for (uint32_t j = 0; j < n_leaves; j++) lcopy[j] = leaves[j];
    for (uint32_t i = 0; i < n_nodes; i++) {
        tsm_node nd = copy[i];
        nd.left = nd.left >= 0 ? (int32_t)perm_node[nd.left] : ~(int32_t)perm_leaf[~nd.left];
        nd.right = nd.right >= 0 ? (int32_t)perm_node[nd.right] : ~(int32_t)perm_leaf[~nd.right];
        nodes[perm_node[i]] = nd;
    }
    for (uint32_t j = 0; j < n_leaves; j++) leaves[perm_leaf[j]] = lcopy[j];
    free(copy);
    free(lcopy);
    free(perm_node);
    free(perm_leaf);
    free(slots);
}

static ts_model *random_model(uint32_t n_trees, uint32_t min_leaves, uint32_t max_leaves) {
    ts_model *m = tsm_model_new(TS_FORMAT_LIGHTGBM);
    tsm_node *nodes = malloc(max_leaves * sizeof *nodes);
    double *leaves = malloc(max_leaves * sizeof *leaves);
    for (uint32_t t = 0; t < n_trees; t++) {
        uint32_t L = min_leaves + rnd_below(max_leaves - min_leaves + 1);
        random_tree(L, nodes, leaves);
        double w = rnd_below(3) == 0 ? 0.1 : 1.0;
        ts_error err;
        CHECK_STATUS(tsm_model_add_tree(m, L - 1, nodes, L, leaves, w, &err), TS_OK);
    }
    m->base_score = 0.5;
    ts_error err;
    CHECK_STATUS(tsm_model_finish(m, &err), TS_OK);
    free(nodes);
    free(leaves);
    return m;
}

static double reference_score(const ts_model *m, const float *row) {
    double s = m->base_score;
    for (uint32_t t = 0; t < m->n_trees; t++) {
        const tsm_tree *tr = &m->trees[t];
        s += tr->weight * tr->leaf_values[tsm_tree_exit_leaf(tr, row)];
    }
    return s;
}

/* One scorer configuration under test. */
typedef struct config {
    ts_engine engine;
    ts_isa isa;
    uint32_t tau, delta;
    unsigned threads;
} config;

/* Every engine, every ISA level (levels above this CPU's are lowered by the library,
 * which then tests the best one again), odd and extreme block sizes, and threads. */
static const config configs[] = {
    {TS_ENGINE_NAIVE, TS_ISA_AUTO, 0, 0, 1},
    {TS_ENGINE_NAIVE, TS_ISA_AUTO, 0, 0, 3},
    {TS_ENGINE_QS, TS_ISA_AUTO, 0, 0, 1},
    {TS_ENGINE_QS, TS_ISA_AUTO, 1, 1, 1},
    {TS_ENGINE_QS, TS_ISA_AUTO, 7, 5, 2},
    {TS_ENGINE_QS, TS_ISA_AUTO, TS_BLOCK_ALL, 3, 1},
    {TS_ENGINE_VQS, TS_ISA_SCALAR, 0, 0, 1},
    {TS_ENGINE_VQS, TS_ISA_SSE42, 0, 0, 1},
    {TS_ENGINE_VQS, TS_ISA_SSE42, 3, 9, 2},
    {TS_ENGINE_VQS, TS_ISA_AVX2, 0, 0, 1},
    {TS_ENGINE_VQS, TS_ISA_AVX2, 5, 17, 3},
    {TS_ENGINE_VQS, TS_ISA_AVX512, 0, 0, 1},
    {TS_ENGINE_VQS, TS_ISA_AVX512, 1, 1, 1},
    {TS_ENGINE_VQS, TS_ISA_AVX512, TS_BLOCK_ALL, 40, 2},
    {TS_ENGINE_VQS, TS_ISA_AUTO, 0, 0, 0},
    {TS_ENGINE_VPRED, TS_ISA_AUTO, 0, 0, 1},
    {TS_ENGINE_VPRED, TS_ISA_AUTO, 0, 0, 3},
    {TS_ENGINE_BLOCK_NAIVE, TS_ISA_AUTO, 0, 0, 1},
    {TS_ENGINE_BLOCK_NAIVE, TS_ISA_AUTO, 3, 7, 2},
    {TS_ENGINE_BLOCK_VPRED, TS_ISA_AUTO, 0, 0, 1},
    {TS_ENGINE_BLOCK_VPRED, TS_ISA_AUTO, 2, 5, 3},
    {TS_ENGINE_IFELSE, TS_ISA_AUTO, 0, 0, 2},
    {TS_ENGINE_AUTO, TS_ISA_AUTO, 0, 0, 0},
};

static void check_config(const ts_model *m, const config *c, const float *x, size_t n_rows, size_t cols,
                         size_t stride, const double *ref, double *got) {
    ts_scorer_options o;
    ts_scorer_options_init(&o);
    o.engine = c->engine;
    o.max_isa = c->isa;
    o.tau = c->tau;
    o.delta = c->delta;
    o.n_threads = c->threads;
    ts_scorer *s = NULL;
    ts_error err;
    CHECK_STATUS(ts_scorer_create(m, &o, &s, &err), TS_OK);
    if (!s) return;
    CHECK(ts_scorer_isa(s) <= ts_cpu_isa());
    for (size_t r = 0; r < n_rows; r++) got[r] = -12345.0;
    CHECK_STATUS(ts_scorer_score(s, x, n_rows, cols, stride, got, &err), TS_OK);
    size_t bad = 0;
    uint32_t tau, delta;
    ts_scorer_blocking(s, &tau, &delta);
    for (size_t r = 0; r < n_rows; r++)
        if (memcmp(&got[r], &ref[r], sizeof got[r]) != 0 && bad++ < 3)
            fprintf(stderr, "engine %s isa %s tau %u delta %u threads %u row %zu: %.17g != reference %.17g\n",
                    ts_engine_name(ts_scorer_engine(s)), ts_isa_name(ts_scorer_isa(s)), tau, delta,
                    ts_scorer_n_threads(s), r, got[r], ref[r]);
    CHECK_MSG(bad == 0, "engine %s isa %s: %zu of %zu rows differ (%u trees)", ts_engine_name(ts_scorer_engine(s)),
              ts_isa_name(ts_scorer_isa(s)), bad, n_rows, m->n_trees);
    ts_scorer_free(s);
}

static void check_engines_on(const ts_model *m, size_t n_rows) {
    const size_t cols = N_FEATURES + 3, stride = cols + 2;
    float *x = malloc(n_rows * stride * sizeof *x);
    double *ref = malloc(n_rows * sizeof *ref), *got = malloc(n_rows * sizeof *got);
    for (size_t i = 0; i < n_rows * stride; i++) x[i] = random_value();
    for (size_t r = 0; r < n_rows; r++) ref[r] = reference_score(m, x + r * stride);
    for (size_t c = 0; c < sizeof configs / sizeof configs[0]; c++)
        check_config(m, &configs[c], x, n_rows, cols, stride, ref, got);
    free(x);
    free(ref);
    free(got);
}

static void test_small_forests(void) {
    for (int rep = 0; rep < 20; rep++) {
        ts_model *m = random_model(1 + rnd_below(30), 1, 2 + rnd_below(20));
        check_engines_on(m, 200);
        ts_model_free(m);
    }
}

static void test_one_leaf_trees(void) {
    ts_model *m = random_model(7, 1, 1);
    check_engines_on(m, 10);
    ts_model_free(m);
}

/* Rows around the SIMD widths (4, 8, 16) and block sizes, one row, and 32-leaf trees
 * (vqs's 32-bit words) next to 33-leaf ones (64-bit words). */
static void test_row_counts_and_words(void) {
    static const size_t rows[] = {1, 3, 4, 5, 15, 16, 17, 33, 100};
    ts_model *m32 = random_model(50, 20, 32), *m33 = random_model(50, 30, 33);
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        check_engines_on(m32, rows[i]);
        check_engines_on(m33, rows[i]);
    }
    ts_model_free(m32);
    ts_model_free(m33);
}

static void test_64_and_65_leaves(void) {
    ts_model *m = random_model(60, 64, 64);
    check_engines_on(m, 300);
    ts_model_free(m);
    m = random_model(40, 60, 65);
    check_engines_on(m, 300);
    ts_model_free(m);
}

static void test_wide_trees(void) {
    ts_model *m = random_model(25, 100, 300);
    check_engines_on(m, 300);
    ts_model_free(m);
}

static void test_many_blocks(void) {
    ts_model *m = random_model(9000, 2, 8); /* > 4096 one-word trees: 3 blocks */
    check_engines_on(m, 40);
    ts_model_free(m);
    m = random_model(1100, 129, 256); /* 4 words: 1024 trees per block, 2 blocks */
    check_engines_on(m, 20);
    ts_model_free(m);
}

static void test_scorer_api(void) {
    ts_model *m = random_model(5, 4, 4);
    ts_error err;
    ts_scorer *s = NULL;
    float row[N_FEATURES + 1] = {0};
    double out[2];
    CHECK_STATUS(ts_scorer_create(NULL, NULL, &s, &err), TS_ERR_INVALID_ARGUMENT);
    CHECK(s == NULL);
    ts_scorer_options rule;
    ts_scorer_options_init(&rule);
    rule.plan = TS_PLAN_RULE;
    CHECK_STATUS(ts_scorer_create(m, &rule, &s, &err), TS_OK);
    CHECK(ts_scorer_engine(s) == (ts_cpu_isa() > TS_ISA_SCALAR ? TS_ENGINE_VQS : TS_ENGINE_QS));
    CHECK(ts_scorer_n_features(s) == m->n_features);
    CHECK_STATUS(ts_scorer_score(s, row, 1, 1, 1, out, &err), TS_ERR_SHAPE);
    CHECK(strstr(err.message, "columns") != NULL);
    CHECK_STATUS(ts_scorer_score(s, row, 1, N_FEATURES, N_FEATURES - 1, out, &err), TS_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(ts_scorer_score(s, NULL, 0, N_FEATURES, N_FEATURES, out, &err), TS_OK);
    CHECK_STATUS(ts_scorer_score(NULL, row, 1, N_FEATURES, N_FEATURES, out, &err), TS_ERR_INVALID_ARGUMENT);
    ts_scorer_free(s);
    ts_scorer_free(NULL);
    {
        /* auto's rule: vqs (or qs without SIMD) up to 64 leaves, vpred for wider trees */
        ts_model *wide = random_model(2, 65, 70);
        CHECK_STATUS(ts_scorer_create(wide, &rule, &s, &err), TS_OK);
        CHECK(ts_scorer_engine(s) == TS_ENGINE_VPRED);
        ts_scorer_free(s);
        ts_model_free(wide);
    }
    ts_model_free(NULL);

    /* LightGBM random forests: the raw score stays the plain sum. */
    m->average_output = 1;
    CHECK_STATUS(ts_scorer_create(m, NULL, &s, &err), TS_OK);
    CHECK_STATUS(ts_scorer_score(s, row, 1, N_FEATURES, N_FEATURES, out, &err), TS_OK);
    CHECK_SAME_DOUBLE(out[0], reference_score(m, row));
    ts_scorer_free(s);

    ts_engine e;
    CHECK_STATUS(ts_engine_from_name("qs", &e), TS_OK);
    CHECK(e == TS_ENGINE_QS);
    CHECK_STATUS(ts_engine_from_name("nope", &e), TS_ERR_INVALID_ARGUMENT);
    CHECK(strcmp(ts_engine_name(TS_ENGINE_NAIVE), "naive") == 0);
    CHECK_STATUS(ts_engine_from_name("vqs", &e), TS_OK);
    CHECK(e == TS_ENGINE_VQS);
    {
        /* bad options are refused, not ignored */
        ts_scorer_options o;
        ts_scorer_options_init(&o);
        o.reserved[0] = 1;
        CHECK_STATUS(ts_scorer_create(m, &o, &s, &err), TS_ERR_INVALID_ARGUMENT);
        ts_scorer_options_init(&o);
        o.max_isa = (ts_isa)99;
        CHECK_STATUS(ts_scorer_create(m, &o, &s, &err), TS_ERR_INVALID_ARGUMENT);
    }
    CHECK(ts_version_number() == TS_VERSION_NUMBER);
    CHECK(strcmp(ts_version_string(), TS_VERSION_STRING) == 0);
    ts_model_free(m);
}

static void test_invalid_trees(void) {
    ts_model *m = tsm_model_new(TS_FORMAT_LIGHTGBM);
    ts_error err;
    double leaves[3] = {1, 2, 3};
    /* node 0's right child points back at node 0: a cycle */
    tsm_node cyc[2] = {{0.5f, 0, 1, 0, 0}, {0.5f, 1, ~0, ~1, 0}};
    CHECK_STATUS(tsm_model_add_tree(m, 2, cyc, 3, leaves, 1.0, &err), TS_ERR_INVALID_MODEL);
    CHECK(strstr(err.message, "tree 0") != NULL);
    tsm_node twice[2] = {{0.5f, 0, 1, ~0, 0}, {0.5f, 1, ~0, ~1, 0}}; /* leaf 0 twice, leaf 2 never */
    CHECK_STATUS(tsm_model_add_tree(m, 2, twice, 3, leaves, 1.0, &err), TS_ERR_INVALID_MODEL);
    tsm_node nan_thr[1] = {{NAN, 0, ~0, ~1, 0}};
    CHECK_STATUS(tsm_model_add_tree(m, 1, nan_thr, 2, leaves, 1.0, &err), TS_ERR_INVALID_MODEL);
    tsm_node ok[1] = {{0.5f, 0, ~1, ~0, 0}};
    CHECK_STATUS(tsm_model_add_tree(m, 1, ok, 2, leaves, 1.0, &err), TS_OK);
    /* canonical form: leaves renumbered left to right */
    CHECK(m->trees[0].nodes[0].left == ~0 && m->trees[0].leaf_values[0] == 2.0);
    CHECK_STATUS(tsm_model_add_tree(m, 1, ok, 3, leaves, 1.0, &err), TS_ERR_INVALID_MODEL);
    m->n_features_declared = 0;
    CHECK_STATUS(tsm_model_finish(m, &err), TS_OK);
    CHECK(m->n_features == 1);
    ts_model_free(m);
}

static void test_thresholds(void) {
    /* largest float not above a double */
    CHECK(tsm_threshold_le_double(0.1) == nextafterf(0.1f, -INFINITY) || (double)tsm_threshold_le_double(0.1) <= 0.1);
    CHECK((double)tsm_threshold_le_double(0.1) <= 0.1 &&
          (double)nextafterf(tsm_threshold_le_double(0.1), INFINITY) > 0.1);
    CHECK(tsm_threshold_le_double(1.0) == 1.0f);
    CHECK(tsm_threshold_le_double(1e300) == 3.40282347e38f);
    CHECK(tsm_threshold_le_double(INFINITY) == INFINITY);
    CHECK(tsm_threshold_le_double(-INFINITY) == -INFINITY);
    CHECK(tsm_threshold_lt_float(1.0f) == nextafterf(1.0f, 0.0f));
    /* LightGBM snapping: the zero range moves as one block */
    CHECK(tsm_threshold_lightgbm(1.0000000180025095e-35) == TSM_ZERO_RANGE);
    CHECK(tsm_threshold_lightgbm(0.0) == TSM_ZERO_RANGE);
    CHECK(tsm_threshold_lightgbm(-1e-40) == nextafterf(-TSM_ZERO_RANGE, -INFINITY));
    CHECK(tsm_threshold_lightgbm(0.5) == 0.5f);
}

int main(void) {
    /* ifelse compiles every model: into the build tree unless told otherwise */
    setenv("TREESCORE_CACHE_DIR", "cache", 0);
    /* auto plans every model: keep its timing short and the wisdom file out of it */
    setenv("TREESCORE_PLAN_MS", "2", 1);
    setenv("TREESCORE_WISDOM", "off", 1);
    /* Chunks of 5 rows, so that the thread counts of `configs` really split batches. */
    setenv("TREESCORE_CHUNK_ROWS", "5", 1);
    RUN_TEST(test_thresholds);
    RUN_TEST(test_invalid_trees);
    RUN_TEST(test_scorer_api);
    RUN_TEST(test_one_leaf_trees);
    RUN_TEST(test_row_counts_and_words);
    RUN_TEST(test_small_forests);
    RUN_TEST(test_64_and_65_leaves);
    RUN_TEST(test_wide_trees);
    RUN_TEST(test_many_blocks);
    return check_summary("test_engines");
}
