/* test_vpred.c: vpred, block-naive and block-vpred equal the IR reference (and naive) bit for bit on hostile forests and rows. */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "runtime/cache.h"
#include "engines/vpred_layout.h"
#include "model/forest.h"
#include "treescore.h"

/* xorshift64*: deterministic, independent of the C library's rand(). */
static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint64_t rnd(void) {
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 2685821657736338717ull;
}
static uint32_t rnd_below(uint32_t n) { return (uint32_t)(rnd() % n); }

/* Features of the forests being built (wide keys need many). Features below
 * N_ZERO_FEATURES may have zero-is-missing nodes. */
static uint32_t n_features = 12;
#define N_ZERO_FEATURES 3

/* Thresholds come from a small grid (with -0.0 and +-inf), so rows often hit them. */
static const float grid[] = {-INFINITY, -3.5f, -1.0f, -1.0000001f, -1e-30f, -0.0f, 0.0f, 1e-30f, 0.25f,
                             0.5f,      1.0f,  2.0f,  7.0f,        100.0f, INFINITY};
#define GRID_N (sizeof grid / sizeof grid[0])

static float random_threshold(uint32_t feature) {
    float t = grid[rnd_below(GRID_N)];
    /* A zero-is-missing feature has no threshold inside [-Z, Z) (tsm_model_finish). */
    if (feature < N_ZERO_FEATURES && t >= -TSM_ZERO_RANGE && t < TSM_ZERO_RANGE) t = TSM_ZERO_RANGE;
    return t;
}

static float random_value(void) {
    switch (rnd_below(8)) {
    case 0: return NAN;
    case 1: return grid[rnd_below(GRID_N)];
    case 2: return nextafterf(grid[rnd_below(GRID_N)], INFINITY);
    case 3: return nextafterf(grid[rnd_below(GRID_N)], -INFINITY);
    case 4: {
        static const float z[] = {0.0f, -0.0f, 1e-36f, -1e-36f, 1e-35f, -1e-35f, 1e-40f, -1e-40f, 1.0000001e-35f};
        return z[rnd_below(sizeof z / sizeof z[0])];
    }
    case 5: return rnd_below(2) ? INFINITY : -INFINITY;
    default: return (float)((double)rnd_below(2000000) / 1000.0 - 1000.0) / 100.0f;
    }
}

static void random_node(tsm_node *nd) {
    nd->feature = rnd_below(n_features);
    nd->threshold = random_threshold(nd->feature);
    nd->flags = rnd_below(2) ? TSM_MISSING_LEFT : 0;
    if (nd->feature < N_ZERO_FEATURES && rnd_below(2)) nd->flags |= TSM_ZERO_IS_MISSING;
}

/* One random tree of n_leaves leaves: split random leaf slots (or, when deep, nearly
 * always the newest one, which makes long unbalanced chains), then number the internal
 * nodes (root kept at 0) and the leaves in a shuffled order. */
static void random_tree(uint32_t n_leaves, int deep, tsm_node *nodes, double *leaves) {
    uint32_t n_nodes = n_leaves - 1;
    uint32_t *perm_node = malloc((n_nodes + 1) * sizeof *perm_node);
    uint32_t *perm_leaf = malloc(n_leaves * sizeof *perm_leaf);
    int32_t **slots = malloc(n_leaves * sizeof *slots);
    int32_t root_ref = ~0;
    uint32_t n_slots = 1;
    slots[0] = &root_ref;
    for (uint32_t i = 0; i < n_nodes; i++) {
        uint32_t k = deep && rnd_below(10) ? n_slots - 1 - rnd_below(n_slots > 1 ? 2 : 1) : rnd_below(n_slots);
        tsm_node *nd = &nodes[i];
        random_node(nd);
        *slots[k] = (int32_t)i;
        nd->left = ~0;
        nd->right = ~0;
        slots[k] = rnd_below(2) ? &nd->left : &nd->right;
        slots[n_slots++] = slots[k] == &nd->left ? &nd->right : &nd->left;
    }
    for (uint32_t j = 0; j < n_slots; j++) *slots[j] = ~(int32_t)j;
    for (uint32_t j = 0; j < n_leaves; j++) leaves[j] = (double)(int)rnd_below(2000001) / 1024.0 - 976.0;
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

/* n_trees trees of min..max leaves; every `deep_every`-th tree (0: none) is deep. */
static ts_model *random_model(uint32_t n_trees, uint32_t min_leaves, uint32_t max_leaves, uint32_t deep_every) {
    ts_model *m = tsm_model_new(TS_FORMAT_LIGHTGBM);
    tsm_node *nodes = malloc(max_leaves * sizeof *nodes);
    double *leaves = malloc(max_leaves * sizeof *leaves);
    for (uint32_t t = 0; t < n_trees; t++) {
        uint32_t L = min_leaves + rnd_below(max_leaves - min_leaves + 1);
        random_tree(L, deep_every && t % deep_every == 0, nodes, leaves);
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
    uint32_t lanes, tau, delta;
    unsigned threads;
} config;

static const config configs[] = {
    {TS_ENGINE_NAIVE, 0, 0, 0, 1},
    {TS_ENGINE_VPRED, 0, 0, 0, 1},
    {TS_ENGINE_VPRED, 1, 0, 0, 4},
    {TS_ENGINE_VPRED, 3, 0, 0, 1},
    {TS_ENGINE_VPRED, 16, 0, 0, 4},
    {TS_ENGINE_VPRED, 32, 0, 0, 1},
    {TS_ENGINE_VPRED, 64, 0, 0, 1},
    {TS_ENGINE_BLOCK_NAIVE, 0, 0, 0, 1},
    {TS_ENGINE_BLOCK_NAIVE, 0, 1, 1, 4},
    {TS_ENGINE_BLOCK_NAIVE, 0, 7, 5, 1},
    {TS_ENGINE_BLOCK_NAIVE, 0, TS_BLOCK_ALL, 1000, 4},
    {TS_ENGINE_BLOCK_NAIVE, 0, 1, 1000, 1},
    {TS_ENGINE_BLOCK_VPRED, 0, 0, 0, 1},
    {TS_ENGINE_BLOCK_VPRED, 0, 0, 0, 4},
    {TS_ENGINE_BLOCK_VPRED, 1, 1, 1, 1},
    {TS_ENGINE_BLOCK_VPRED, 3, 7, 5, 4},
    {TS_ENGINE_BLOCK_VPRED, 16, TS_BLOCK_ALL, 1000, 1},
    {TS_ENGINE_BLOCK_VPRED, 32, 7, 1, 4},
    {TS_ENGINE_BLOCK_VPRED, 16, 1, 5, 1},
    {TS_ENGINE_BLOCK_VPRED, 32, TS_BLOCK_ALL, 5, 1},
    {TS_ENGINE_BLOCK_VPRED, 4, 3, 4, 1}, /* key chunks of 16 blocks of 4 rows: batches of several */
};

static ts_scorer *make_scorer(const ts_model *m, const config *c) {
    ts_scorer_options o;
    ts_scorer_options_init(&o);
    o.engine = c->engine;
    o.lanes = c->lanes;
    o.tau = c->tau;
    o.delta = c->delta;
    o.n_threads = c->threads;
    ts_scorer *s = NULL;
    ts_error err;
    CHECK_STATUS(ts_scorer_create(m, &o, &s, &err), TS_OK);
    return s;
}

/* The block sizes a scorer reports: the ones asked for (delta rounded up to whole
 * groups of lanes by block-vpred), else some from the cache sizes. */
static void check_blocking(const ts_model *m, const ts_scorer *s, const config *c) {
    uint32_t tau, delta;
    ts_scorer_blocking(s, &tau, &delta);
    if (c->engine == TS_ENGINE_VPRED || c->engine == TS_ENGINE_NAIVE) {
        CHECK(tau == 0 && delta == 0);
        return;
    }
    uint32_t n_trees = m->n_trees ? m->n_trees : 1;
    uint32_t want_tau = c->tau == TS_BLOCK_ALL || c->tau > n_trees ? n_trees : c->tau;
    CHECK_MSG(c->tau == 0 ? tau >= 1 && tau <= n_trees : tau == want_tau, "tau %u (asked %u)", tau, c->tau);
    CHECK(delta >= 1);
    if (c->engine == TS_ENGINE_BLOCK_NAIVE && c->delta) CHECK(delta == c->delta);
    if (c->engine == TS_ENGINE_BLOCK_VPRED && c->lanes) CHECK(delta % c->lanes == 0);
    /* block-vpred caps a block's keys at 16 MiB: only the wide-row test reaches that. */
    if (c->engine == TS_ENGINE_BLOCK_VPRED && c->lanes && c->delta && n_features < 1000)
        CHECK_MSG(delta >= c->delta && delta - c->delta < c->lanes, "delta %u (asked %u, lanes %u)", delta, c->delta,
                  c->lanes);
}

/* Score rows [0, n_rows) in batches of `batch` rows and compare with ref. */
static void check_batches(const ts_model *m, const ts_scorer *s, const float *x, size_t n_rows, size_t cols,
                          size_t stride, size_t batch, const double *ref, double *got) {
    ts_error err;
    for (size_t r = 0; r < n_rows; r++) got[r] = -12345.0;
    for (size_t r = 0; r < n_rows; r += batch) {
        size_t n = n_rows - r < batch ? n_rows - r : batch;
        CHECK_STATUS(ts_scorer_score(s, x + r * stride, n, cols, stride, got + r, &err), TS_OK);
    }
    size_t bad = 0;
    for (size_t r = 0; r < n_rows; r++)
        if (memcmp(&got[r], &ref[r], sizeof got[r]) != 0 && bad++ < 3)
            fprintf(stderr, "engine %s batch %zu row %zu: %.17g != reference %.17g\n",
                    ts_engine_name(ts_scorer_engine(s)), batch, r, got[r], ref[r]);
    CHECK_MSG(bad == 0, "engine %s, %u trees, batch %zu: %zu of %zu rows differ", ts_engine_name(ts_scorer_engine(s)),
              m->n_trees, batch, bad, n_rows);
}

static const size_t batches[] = {1, 3, 17, 100, 1000000};

static void check_engines_on(const ts_model *m, size_t n_rows) {
    const size_t cols = n_features + 3, stride = cols + 2;
    float *x = malloc(n_rows * stride * sizeof *x);
    double *ref = malloc(n_rows * sizeof *ref), *got = malloc(n_rows * sizeof *got);
    for (size_t i = 0; i < n_rows * stride; i++) x[i] = random_value();
    for (size_t r = 0; r < n_rows; r++) ref[r] = reference_score(m, x + r * stride);
    for (size_t c = 0; c < sizeof configs / sizeof configs[0]; c++) {
        ts_scorer *s = make_scorer(m, &configs[c]);
        if (!s) continue;
        CHECK(ts_scorer_engine(s) == configs[c].engine);
        CHECK(ts_scorer_isa(s) == TS_ISA_SCALAR);
        check_blocking(m, s, &configs[c]);
        for (size_t b = 0; b < sizeof batches / sizeof batches[0]; b++)
            check_batches(m, s, x, n_rows, cols, stride, batches[b], ref, got);
        ts_scorer_free(s);
    }
    free(x);
    free(ref);
    free(got);
}

static void test_small_forests(void) {
    for (int rep = 0; rep < 12; rep++) {
        uint32_t n_trees = 1 + rnd_below(30), max_leaves = 2 + rnd_below(20); /* in this order */
        ts_model *m = random_model(n_trees, 1, max_leaves, 0);
        check_engines_on(m, 120);
        ts_model_free(m);
    }
}

static void test_one_leaf_trees(void) {
    ts_model *m = random_model(7, 1, 1, 0);
    check_engines_on(m, 20);
    ts_model_free(m);
    m = random_model(20, 1, 3, 0); /* one-leaf trees between small ones */
    check_engines_on(m, 40);
    ts_model_free(m);
}

static void test_no_trees(void) {
    ts_model *m = random_model(0, 1, 1, 0);
    check_engines_on(m, 5);
    ts_model_free(m);
}

/* The layout's own view: depths as the IR counts them, the node form it picks. */
static void check_layout(const ts_model *m, uint32_t lanes, int narrow) {
    vpl L;
    ts_error err;
    CHECK_STATUS(vpl_build(&L, m, lanes, "test", &err), TS_OK);
    CHECK_MSG(L.narrow == narrow, "lanes %u: narrow %d, expected %d", lanes, L.narrow, narrow);
    uint64_t steps = 0;
    for (uint32_t t = 0; t < m->n_trees; t++) {
        CHECK_MSG(L.trees[t].depth == m->trees[t].depth, "tree %u: depth %u, IR says %u", t, L.trees[t].depth,
                  m->trees[t].depth);
        steps += m->trees[t].depth;
    }
    CHECK(L.steps == steps);
    vpl_free(&L);
}

/* Chains of depth 20 and more next to bushy trees: leaves reached early are absorbing
 * for the remaining steps. */
static void test_deep_trees(void) {
    ts_model *m = random_model(30, 20, 60, 2);
    ts_model_info info;
    ts_model_get_info(m, &info);
    CHECK_MSG(info.depth_max >= 20, "deepest tree %u", info.depth_max);
    check_layout(m, 16, 1);
    check_engines_on(m, 150);
    ts_model_free(m);
}

static void test_wide_trees(void) {
    ts_model *m = random_model(12, 300, 520, 0);
    check_engines_on(m, 150);
    ts_model_free(m);
}

/* The wide node form: a tree of more than 32,768 leaves (more than 65,536 slots), and
 * keys of more than 65,536 per group (many features times many lanes). */
static void test_wide_layout(void) {
    ts_model *m = random_model(3, 33000, 34000, 0);
    check_layout(m, 1, 0);
    check_engines_on(m, 40);
    ts_model_free(m);
    uint32_t saved = n_features;
    n_features = 6000;
    m = random_model(40, 200, 300, 0);
    check_layout(m, 1, 1);
    check_layout(m, 32, 0);
    check_engines_on(m, 60);
    ts_model_free(m);
    n_features = saved;
}

/* Many trees (several tree blocks by default) and rows of several document blocks. */
static void test_many_trees(void) {
    ts_model *m = random_model(1500, 2, 40, 50);
    check_engines_on(m, 200);
    ts_model_free(m);
}

/* block-vpred called directly with exactly layout.scratch_bytes of scratch (so that
 * the sanitizers see any overrun): the keys of a chunk of document blocks fit it, a
 * batch of several chunks (the last one partial, with a partial block and group) gets
 * the reference's bits, and the default blocks keep to their share of L2. */
static void check_bvp_direct(const ts_model *m, uint32_t lanes, uint32_t tau, uint32_t delta, size_t n_rows) {
    const tse_engine *e = &tse_engine_block_vpred;
    tse_config cfg = {TS_ISA_SCALAR, tau, delta, lanes};
    void *state = NULL;
    tse_layout lay;
    ts_error err;
    CHECK_STATUS(e->prepare(m, &cfg, &state, &lay, &err), TS_OK);
    vpl L;
    CHECK_STATUS(vpl_build(&L, m, lay.lanes, "test", &err), TS_OK);
    size_t block_bytes = vpl_row_bytes(&L) * lay.delta;
    CHECK(lay.delta % lay.lanes == 0);
    CHECK_MSG(lay.scratch_bytes % block_bytes == 0 && lay.scratch_bytes / block_bytes >= 1 &&
                  lay.scratch_bytes / block_bytes <= 16,
              "scratch %zu for blocks of %zu bytes", lay.scratch_bytes, block_bytes);
    CHECK(lay.scratch_bytes <= (block_bytes > (16u << 20) ? block_bytes : (16u << 20)));
    const tsr_caches *c = tsr_cache_sizes();
    if (delta == 0 && lay.delta > lay.lanes) CHECK(block_bytes <= c->l2 / 16 + vpl_row_bytes(&L) * lay.lanes);
    if (tau == 0 && lay.tau > 1 && m->n_trees) {
        double per_tree = (double)vpl_model_bytes(&L) / m->n_trees;
        CHECK_MSG(per_tree * (lay.tau - 1) <= (double)c->l2 / 4, "tau %u trees of %.0f bytes", lay.tau, per_tree);
    }
    size_t cols = m->n_features + 1;
    float *x = malloc(n_rows * cols * sizeof *x);
    double *got = malloc(n_rows * sizeof *got);
    void *scratch = malloc(lay.scratch_bytes);
    for (size_t i = 0; i < n_rows * cols; i++) x[i] = random_value();
    e->score(state, x, n_rows, cols, got, scratch);
    size_t bad = 0;
    for (size_t r = 0; r < n_rows; r++) {
        double want = reference_score(m, x + r * cols);
        if (memcmp(&got[r], &want, sizeof want) != 0) bad++;
    }
    CHECK_MSG(bad == 0, "block-vpred direct, lanes %u tau %u delta %u: %zu of %zu rows differ", lay.lanes, lay.tau,
              lay.delta, bad, n_rows);
    free(x);
    free(got);
    free(scratch);
    vpl_free(&L);
    e->free(state);
}

static void test_block_vpred_chunks(void) {
    ts_model *m = random_model(50, 2, 30, 7);
    check_bvp_direct(m, 16, 0, 0, 300);
    check_bvp_direct(m, 16, 7, 16, 16 * 16 * 2 + 37); /* 16 blocks a chunk: 3 chunks */
    check_bvp_direct(m, 5, 9, 3, 333);                /* delta rounded up to 5 */
    check_bvp_direct(m, 1, TS_BLOCK_ALL, 1, 40);
    ts_model_free(m);
    /* Wide key rows: fewer blocks a chunk (16 MiB of keys at most). */
    uint32_t saved = n_features;
    n_features = 6000;
    m = random_model(40, 200, 300, 0);
    check_bvp_direct(m, 16, 0, 0, 50);
    check_bvp_direct(m, 16, 5, 128, 700);
    ts_model_free(m);
    n_features = saved;
}

/* The double-input entry point feeds the engines converted rows: same bits as naive. */
static void test_f64(void) {
    ts_model *m = random_model(40, 2, 40, 4);
    const size_t n_rows = 64, cols = n_features;
    double *x = malloc(n_rows * cols * sizeof *x), *ref = malloc(n_rows * sizeof *ref),
           *got = malloc(n_rows * sizeof *got);
    for (size_t i = 0; i < n_rows * cols; i++) x[i] = rnd_below(3) ? (double)random_value() : (double)random_value() * 1.0000001;
    config naive = {TS_ENGINE_NAIVE, 0, 0, 0, 1};
    ts_scorer *s = make_scorer(m, &naive);
    ts_error err;
    CHECK_STATUS(ts_scorer_score_f64(s, x, n_rows, cols, cols, ref, &err), TS_OK);
    ts_scorer_free(s);
    for (size_t c = 0; c < sizeof configs / sizeof configs[0]; c++) {
        s = make_scorer(m, &configs[c]);
        if (!s) continue;
        CHECK_STATUS(ts_scorer_score_f64(s, x, n_rows, cols, cols, got, &err), TS_OK);
        CHECK_MSG(memcmp(got, ref, n_rows * sizeof *got) == 0, "engine %s: f64 scores differ from naive",
                  ts_engine_name(configs[c].engine));
        ts_scorer_free(s);
    }
    free(x);
    free(ref);
    free(got);
    ts_model_free(m);
}

/* One scorer, several calling threads at once, odd batch sizes per thread. */
typedef struct job {
    const ts_scorer *s;
    const float *x;
    size_t n_rows, cols;
    const double *ref;
    int bad;
} job;

static void *worker(void *p) {
    job *j = p;
    double *out = malloc(j->n_rows * sizeof *out);
    ts_error err;
    for (size_t batch = 1; batch < 60; batch += 7) {
        for (size_t r = 0; r < j->n_rows; r += batch) {
            size_t n = j->n_rows - r < batch ? j->n_rows - r : batch;
            if (ts_scorer_score(j->s, j->x + r * j->cols, n, j->cols, j->cols, out + r, &err) != TS_OK) j->bad++;
        }
        if (memcmp(out, j->ref, j->n_rows * sizeof *out) != 0) j->bad++;
    }
    free(out);
    return NULL;
}

static void test_concurrent_callers(void) {
    ts_model *m = random_model(60, 2, 64, 5);
    const size_t n_rows = 200, cols = n_features;
    float *x = malloc(n_rows * cols * sizeof *x);
    double *ref = malloc(n_rows * sizeof *ref);
    for (size_t i = 0; i < n_rows * cols; i++) x[i] = random_value();
    for (size_t r = 0; r < n_rows; r++) ref[r] = reference_score(m, x + r * cols);
    static const config cs[] = {{TS_ENGINE_VPRED, 0, 0, 0, 2},
                                {TS_ENGINE_BLOCK_NAIVE, 0, 7, 5, 2},
                                {TS_ENGINE_BLOCK_VPRED, 0, 7, 20, 2}};
    for (size_t c = 0; c < sizeof cs / sizeof cs[0]; c++) {
        ts_scorer *s = make_scorer(m, &cs[c]);
        if (!s) continue;
        pthread_t th[4];
        job jobs[4];
        for (int t = 0; t < 4; t++) {
            jobs[t] = (job){s, x, n_rows, cols, ref, 0};
            pthread_create(&th[t], NULL, worker, &jobs[t]);
        }
        for (int t = 0; t < 4; t++) {
            pthread_join(th[t], NULL);
            CHECK_MSG(jobs[t].bad == 0, "engine %s: thread %d saw %d bad batches", ts_engine_name(cs[c].engine), t,
                      jobs[t].bad);
        }
        ts_scorer_free(s);
    }
    free(x);
    free(ref);
    ts_model_free(m);
}

static void test_names(void) {
    ts_engine e;
    CHECK_STATUS(ts_engine_from_name("vpred", &e), TS_OK);
    CHECK(e == TS_ENGINE_VPRED);
    CHECK_STATUS(ts_engine_from_name("block-naive", &e), TS_OK);
    CHECK(e == TS_ENGINE_BLOCK_NAIVE);
    CHECK_STATUS(ts_engine_from_name("block-vpred", &e), TS_OK);
    CHECK(e == TS_ENGINE_BLOCK_VPRED);
    CHECK(strcmp(ts_engine_name(TS_ENGINE_BLOCK_VPRED), "block-vpred") == 0);
}

int main(void) {
    /* Chunks of 5 rows, so that n_threads 4 really splits batches. */
    setenv("TREESCORE_CHUNK_ROWS", "5", 1);
    RUN_TEST(test_names);
    RUN_TEST(test_no_trees);
    RUN_TEST(test_one_leaf_trees);
    RUN_TEST(test_small_forests);
    RUN_TEST(test_deep_trees);
    RUN_TEST(test_wide_trees);
    RUN_TEST(test_wide_layout);
    RUN_TEST(test_many_trees);
    RUN_TEST(test_block_vpred_chunks);
    RUN_TEST(test_f64);
    RUN_TEST(test_concurrent_callers);
    return check_summary("test_vpred");
}
