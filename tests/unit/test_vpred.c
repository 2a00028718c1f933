/* test_vpred.c: vpred, block-naive, block-vpred and deep equal the IR reference (and naive) bit for bit on hostile forests and rows. */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "engines/common/vpred_layout.h"
#include "model/forest.h"
#include "platform/config.h"
#include "platform/cpu_caches.h"
#include "random_forest.h"
#include "treescore.h"

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
    {TS_ENGINE_DEEP, 0, 0, 0, 1},
    {TS_ENGINE_DEEP, 0, 0, 16, 4},
    {TS_ENGINE_DEEP, 0, 0, 1000, 1},
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
    if (c->engine == TS_ENGINE_DEEP) { /* documents per block only, at least its 16 lanes */
        CHECK_MSG(tau == 0 && delta >= 16 && (c->delta < 16 || delta == c->delta), "deep: tau %u delta %u", tau, delta);
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
        /* (deep's top levels: its AVX-512 kernel where the CPU has AVX-512) */
        CHECK(ts_scorer_isa(s) == TS_ISA_SCALAR || configs[c].engine == TS_ENGINE_DEEP);
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
    ts_model_get_info(m, &info, NULL);
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

/* One deep scorer (TREESCORE_DEEP_TOP set; lanes 1: the 16 scalar walks, else the
 * gathered walk where the CPU has AVX-512) against ref on n_rows rows, in calls of several
 * sizes. */
static void check_deep_scorer(const ts_model *m, const char *level, ts_isa isa, uint32_t delta, uint32_t lanes,
                              const float *x, const double *ref, double *got, size_t n_rows, size_t cols) {
    static const size_t batch_sizes[] = {333, 1, 63, 65, 130};
    ts_scorer_options o;
    ts_scorer_options_init(&o);
    o.engine = TS_ENGINE_DEEP, o.max_isa = isa, o.delta = delta, o.n_threads = 1, o.lanes = lanes;
    ts_scorer *s = NULL;
    ts_error err;
    CHECK_STATUS(ts_scorer_create(m, &o, &s, &err), TS_OK);
    if (!s) return;
    const int kernel = isa == TS_ISA_AVX512 && ts_cpu_isa() >= TS_ISA_AVX512 && (level[0] != '0' || lanes != 1);
    CHECK_MSG(ts_scorer_isa(s) == (kernel ? TS_ISA_AVX512 : TS_ISA_SCALAR), "deep top %s isa %s lanes %u", level,
              ts_isa_name(ts_scorer_isa(s)), lanes);
    for (size_t b = 0; b < sizeof batch_sizes / sizeof batch_sizes[0]; b++) {
        for (size_t r = 0; r < n_rows; r++) got[r] = -12345.0;
        for (size_t r = 0; r < n_rows; r += batch_sizes[b]) {
            const size_t n = n_rows - r < batch_sizes[b] ? n_rows - r : batch_sizes[b];
            CHECK_STATUS(ts_scorer_score(s, x + r * cols, n, cols, cols, got + r, &err), TS_OK);
        }
        size_t bad = 0;
        for (size_t r = 0; r < n_rows; r++) bad += memcmp(&got[r], &ref[r], sizeof ref[r]) != 0;
        CHECK_MSG(bad == 0, "deep top %s isa %s delta %u lanes %u batch %zu: %zu of %zu rows differ", level,
                  ts_isa_name(ts_scorer_isa(s)), delta, lanes, batch_sizes[b], bad, n_rows);
    }
    ts_scorer_free(s);
}

/*
 * deep's top levels (deep.c "Top levels"), K = 0 to 8 levels (TREESCORE_DEEP_TOP, the K
 * of levels_mask), with the scalar steps and the AVX-512 kernel where the CPU has it, and
 * below them the gathered walk and the scalar one (lanes 1): trees shallower than K
 * (padding below leaves), one-leaf trees, chains deeper than 8, rows on thresholds and
 * NaN both ways (random_value), batches that are not multiples of the kernel's 64
 * documents, blocks of 64, 100 and the default (the gathered walk's refills with 32
 * documents or more left and its last ones, lanes without a document). Any exit planted
 * wrong (a swapped pair, an off-by-one slot) changes some rows' scores here.
 */
static void check_deep_top(const ts_model *m, unsigned levels_mask) {
    const size_t n_rows = 333, cols = n_features + 1;
    float *x = malloc(n_rows * cols * sizeof *x);
    double *ref = malloc(n_rows * sizeof *ref), *got = malloc(n_rows * sizeof *got);
    for (size_t i = 0; i < n_rows * cols; i++) x[i] = random_value();
    for (size_t r = 0; r < n_rows; r++) ref[r] = reference_score(m, x + r * cols);
    static const char *levels[] = {"0", "1", "2", "3", "4", "5", "6", "7", "8"};
    static const ts_isa isas[] = {TS_ISA_SCALAR, TS_ISA_AVX2, TS_ISA_AVX512};
    static const uint32_t deltas[] = {0, 64, 100};
    for (size_t k = 0; k < sizeof levels / sizeof levels[0]; k++) {
        if (!(levels_mask >> k & 1)) continue;
        setenv("TREESCORE_DEEP_TOP", levels[k], 1);
        tsr_config_reload();
        for (size_t i = 0; i < sizeof isas / sizeof isas[0]; i++)
            for (size_t d = 0; d < sizeof deltas / sizeof deltas[0]; d++)
                for (uint32_t lanes = 0; lanes < (isas[i] == TS_ISA_AVX512 ? 2u : 1u); lanes++)
                    check_deep_scorer(m, levels[k], isas[i], deltas[d], lanes, x, ref, got, n_rows, cols);
    }
    unsetenv("TREESCORE_DEEP_TOP");
    tsr_config_reload();
    free(x);
    free(ref);
    free(got);
}

static void test_deep_top_levels(void) {
    ts_model *m = random_model(40, 1, 300, 3);
    check_deep_top(m, 0x1FF); /* every K */
    ts_model_free(m);
    m = random_model(2, 17000, 18000, 0); /* 16-byte slots (more than 16,384 slots a tree) */
    check_deep_top(m, 1u << 0 | 1u << 2 | 1u << 5 | 1u << 8);
    ts_model_free(m);
}

/* block-vpred called directly with exactly layout.scratch_bytes of scratch (so that
 * the sanitizers see any overrun): the keys of a chunk of document blocks fit it, a
 * batch of several chunks (the last one partial, with a partial block and group) gets
 * the reference's bits, and the default blocks keep to their share of L2. */
static void check_bvp_direct(const ts_model *m, uint32_t lanes, uint32_t tau, uint32_t delta, size_t n_rows) {
    const tse_engine *e = &tse_engine_block_vpred;
    tse_config cfg = {.isa = TS_ISA_SCALAR, .tau = tau, .delta = delta, .lanes = lanes};
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
    tsr_config_reload();
    RUN_TEST(test_names);
    RUN_TEST(test_no_trees);
    RUN_TEST(test_one_leaf_trees);
    RUN_TEST(test_small_forests);
    RUN_TEST(test_deep_trees);
    RUN_TEST(test_wide_trees);
    RUN_TEST(test_wide_layout);
    RUN_TEST(test_many_trees);
    RUN_TEST(test_block_vpred_chunks);
    RUN_TEST(test_deep_top_levels);
    RUN_TEST(test_f64);
    RUN_TEST(test_concurrent_callers);
    return check_summary("test_vpred");
}
