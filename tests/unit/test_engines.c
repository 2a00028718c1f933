/* test_engines.c: every engine equals the IR reference bit for bit on random forests and rows. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "random_forest.h"
#include "engines/common/quant.h"
#include "engines/rapid.h"
#include "model/forest.h"
#include "platform/config.h"
#include "platform/cpu.h"
#include "treescore.h"

#include <xmmintrin.h>

/* Rows are N_FEATURES wide: random_forest.h's default feature count. */
#define N_FEATURES 12

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
    {TS_ENGINE_RAPID, TS_ISA_SCALAR, 0, 0, 1},
    {TS_ENGINE_RAPID, TS_ISA_SCALAR, 2, 9, 2},
    {TS_ENGINE_RAPID, TS_ISA_AVX2, 0, 0, 1},
    {TS_ENGINE_RAPID, TS_ISA_AVX2, 3, 40, 3},
    {TS_ENGINE_RAPID, TS_ISA_AVX512, 0, 0, 1},
    {TS_ENGINE_RAPID, TS_ISA_AVX512, 1, 70, 2},
    {TS_ENGINE_RAPID, TS_ISA_AUTO, TS_BLOCK_ALL, 4096, 1},
    {TS_ENGINE_TREES_SIMD, TS_ISA_SCALAR, 0, 0, 1},
    {TS_ENGINE_TREES_SIMD, TS_ISA_SSE42, 0, 0, 2},
    {TS_ENGINE_TREES_SIMD, TS_ISA_AVX2, 0, 0, 1},
    {TS_ENGINE_TREES_SIMD, TS_ISA_AVX512, 0, 0, 1},
    {TS_ENGINE_TREES_SIMD, TS_ISA_AUTO, 0, 0, 3},
    {TS_ENGINE_OBLIVIOUS, TS_ISA_SCALAR, 0, 0, 1},
    {TS_ENGINE_OBLIVIOUS, TS_ISA_SSE42, 0, 5, 2},
    {TS_ENGINE_OBLIVIOUS, TS_ISA_AVX2, 0, 0, 1},
    {TS_ENGINE_OBLIVIOUS, TS_ISA_AVX2, 0, 40, 3},
    {TS_ENGINE_OBLIVIOUS, TS_ISA_AVX512, 0, 0, 1},
    {TS_ENGINE_OBLIVIOUS, TS_ISA_AVX512, 0, 70, 2},
    {TS_ENGINE_OBLIVIOUS, TS_ISA_AUTO, 0, 4096, 1},
    {TS_ENGINE_DEEP, TS_ISA_AUTO, 0, 0, 1},
    {TS_ENGINE_DEEP, TS_ISA_AUTO, 0, 16, 2},
    {TS_ENGINE_DEEP, TS_ISA_SCALAR, 0, 37, 3},
    {TS_ENGINE_DEEP, TS_ISA_AVX2, 0, 0, 1},
    {TS_ENGINE_DEEP, TS_ISA_AVX512, 0, 0, 1},
    {TS_ENGINE_DEEP, TS_ISA_AVX512, 0, 100, 2},
    {TS_ENGINE_AUTO, TS_ISA_AUTO, 0, 0, 0},
    /* where a CUDA device runs them (docs/gpu.md); elsewhere they refuse and are skipped */
    {TS_ENGINE_GPU_NAIVE, TS_ISA_AUTO, 0, 0, 1},
    {TS_ENGINE_GPU, TS_ISA_AUTO, 0, 0, 2},
};

/* LightGBM's decision on a double input (as tsp_f64_score_row in src/scorer/f64.c): the
 * reference of ts_scorer_score_f64 for a model comparing doubles. */
static double reference_score_f64(const ts_model *m, const double *row) {
    double s = m->base_score;
    for (uint32_t t = 0; t < m->n_trees; t++) {
        const tsm_tree *tr = &m->trees[t];
        int32_t c = tr->n_nodes ? 0 : -1;
        while (c >= 0) {
            const tsm_node *nd = &tr->nodes[c];
            double v = row[nd->feature], d = tr->thresholds_d ? tr->thresholds_d[c] : (double)nd->threshold;
            if (fabs(v) <= (double)TSM_ZERO_RANGE) v = 0.0;
            int missing = v != v || ((nd->flags & TSM_ZERO_IS_MISSING) && v == 0.0);
            c = (missing ? (nd->flags & TSM_MISSING_LEFT) != 0 : v <= d) ? nd->left : nd->right;
        }
        s += tr->weight * tr->leaf_values[~c];
    }
    return s;
}

/* Double rows (the float rows widened) through ts_scorer_score_f64: LightGBM's double
 * decisions, bit for bit (rapid from its double codes, the others through the rounding
 * of src/scorer/f64.c). */
static void check_f64(const ts_model *m, ts_scorer *s, const float *x, size_t n_rows, size_t cols, size_t stride,
                      double *got) {
    double *xd = malloc(n_rows * stride * sizeof *xd), *want = malloc(n_rows * sizeof *want);
    ts_error err;
    for (size_t i = 0; i < n_rows * stride; i++) xd[i] = (double)x[i];
    for (size_t r = 0; r < n_rows; r++) want[r] = reference_score_f64(m, xd + r * stride);
    CHECK_STATUS(ts_scorer_score_f64(s, xd, n_rows, cols, stride, got, &err), TS_OK);
    size_t bad = 0;
    for (size_t r = 0; r < n_rows; r++)
        if (memcmp(&got[r], &want[r], sizeof got[r]) != 0 && bad++ < 3)
            fprintf(stderr, "engine %s isa %s, double rows, row %zu: %.17g != reference %.17g\n",
                    ts_engine_name(ts_scorer_engine(s)), ts_isa_name(ts_scorer_isa(s)), r, got[r], want[r]);
    CHECK_MSG(bad == 0, "engine %s isa %s: %zu of %zu double rows differ", ts_engine_name(ts_scorer_engine(s)),
              ts_isa_name(ts_scorer_isa(s)), bad, n_rows);
    free(xd);
    free(want);
}

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
    ts_status st = ts_scorer_create(m, &o, &s, &err);
    if (st == TS_ERR_ENGINE_UNAVAILABLE && (c->engine == TS_ENGINE_GPU || c->engine == TS_ENGINE_GPU_NAIVE)) return;
    CHECK_STATUS(st, TS_OK);
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
    if (m->compares_double) check_f64(m, s, x, n_rows, cols, stride, got);
    ts_scorer_free(s);
}

/* Set for the second pass of main: only the rapid configurations. */
static int only_rapid;
/* Set by test_many_blocks: its forests are about the blocked engines' splits (ifelse has
 * none), and compiling them through the C compiler took 35 of test_engines' 74 s. ifelse's
 * forests here: every other test, and the real models of tests/conformance. */
static int skip_ifelse;

static void check_engines_on(const ts_model *m, size_t n_rows) {
    const size_t cols = N_FEATURES + 3, stride = cols + 2;
    float *x = malloc(n_rows * stride * sizeof *x);
    double *ref = malloc(n_rows * sizeof *ref), *got = malloc(n_rows * sizeof *got);
    for (size_t i = 0; i < n_rows * stride; i++) x[i] = random_value();
    for (size_t r = 0; r < n_rows; r++) ref[r] = reference_score(m, x + r * stride);
    for (size_t c = 0; c < sizeof configs / sizeof configs[0]; c++)
        if ((!only_rapid || configs[c].engine == TS_ENGINE_RAPID) && !(skip_ifelse && configs[c].engine == TS_ENGINE_IFELSE))
            check_config(m, &configs[c], x, n_rows, cols, stride, ref, got);
    free(x);
    free(ref);
    free(got);
}

static void test_small_forests(void) {
    for (int rep = 0; rep < 20; rep++) {
        ts_model *m = random_model(1 + rnd_below(30), 1, 2 + rnd_below(20), 0);
        check_engines_on(m, 200);
        ts_model_free(m);
    }
}

static void test_one_leaf_trees(void) {
    ts_model *m = random_model(7, 1, 1, 0);
    check_engines_on(m, 10);
    ts_model_free(m);
}

/* Rows around the SIMD widths (4, 8, 16) and block sizes, one row, and 32-leaf trees
 * (vqs's 32-bit words) next to 33-leaf ones (64-bit words). */
static void test_row_counts_and_words(void) {
    static const size_t rows[] = {1, 3, 4, 5, 15, 16, 17, 33, 100};
    ts_model *m32 = random_model(50, 20, 32, 0), *m33 = random_model(50, 30, 33, 0);
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        check_engines_on(m32, rows[i]);
        check_engines_on(m33, rows[i]);
    }
    ts_model_free(m32);
    ts_model_free(m33);
}

/* 520 and 600 rows: rapid's AVX-512 kernel takes 8 groups of 64 documents at once, then
 * the rest (a last group of 8 documents; two groups). */
static void test_64_and_65_leaves(void) {
    ts_model *m = random_model(60, 64, 64, 0);
    check_engines_on(m, 520);
    ts_model_free(m);
    m = random_model(40, 60, 65, 0);
    check_engines_on(m, 300);
    ts_model_free(m);
}

static void test_wide_trees(void) {
    ts_model *m = random_model(25, 100, 300, 0);
    check_engines_on(m, 600);
    ts_model_free(m);
}

static void test_many_blocks(void) {
    skip_ifelse = 1;
    ts_model *m = random_model(9000, 2, 8, 0); /* > 4096 one-word trees: 3 blocks */
    check_engines_on(m, 40);
    ts_model_free(m);
    m = random_model(1100, 129, 256, 0); /* 4 words: 1024 trees per block, 2 blocks */
    check_engines_on(m, 20);
    ts_model_free(m);
    skip_ifelse = 0;
}

/* More than 255 distinct thresholds on a feature: several code segments. Thresholds come
 * from a grid of 600 values (and the model's own), rows hit them exactly, one float step
 * either side, or are NaN / zero-range / +-inf. */
static float wide_grid(uint32_t i) { return (float)((double)i - 300.0) / 7.0f + 0.5f; }

/* rapid (and naive) on n_rows rows of values from wide_grid(0 .. grid_size): each a grid value,
 * one float step either side, or a random value (NaN, zero-range, +-inf among them). */
/* rapid at every ISA level this CPU has, one scorer each (tau trees per block: 0 for the
 * default), every batch size 1 .. max_batch (groups of at most 16 rows search one register
 * of codes, rapid_avx512.c codes64, and take the AVX2 pair layout; partial groups; a full
 * group and a tail) at shifting offsets, float rows and, for a model that compares doubles,
 * the same rows as doubles: bit for bit the reference. */
/* Every other call's scorers get sample rows (x's rows, repeated up to at least 80:
 * rapid orders each tree's leaves by them, rapid.h "Leaf order"), the others none. */
static unsigned rapid_sample_turn;

static void check_rapid_batches_tau(const ts_model *m, const float *x, size_t n_rows, size_t cols, size_t stride,
                                    const double *ref, uint32_t tau, size_t max_batch) {
    static const ts_isa isas[] = {TS_ISA_SCALAR, TS_ISA_AVX2, TS_ISA_AVX512};
    double got[70], *xd = malloc(n_rows * stride * sizeof *xd);
    for (size_t i = 0; i < n_rows * stride; i++) xd[i] = (double)x[i];
    const size_t n_sample = rapid_sample_turn++ % 2 ? (n_rows < 80 ? 80 : n_rows) : 0;
    float *sample = n_sample ? malloc(n_sample * stride * sizeof *sample) : NULL;
    for (size_t r = 0; r < n_sample; r++) memcpy(sample + r * stride, x + r % n_rows * stride, stride * sizeof *x);
    for (size_t i = 0; i < sizeof isas / sizeof isas[0]; i++) {
        if (isas[i] > ts_cpu_isa()) continue;
        ts_scorer_options o;
        ts_scorer_options_init(&o);
        o.engine = TS_ENGINE_RAPID, o.max_isa = isas[i], o.n_threads = 1, o.tau = tau;
        o.sample = sample, o.sample_rows = n_sample, o.sample_stride = stride;
        ts_scorer *s = NULL;
        ts_error err;
        CHECK_STATUS(ts_scorer_create(m, &o, &s, &err), TS_OK);
        if (!s) continue;
        size_t bad = 0, bad_d = 0;
        for (size_t n = 1; n <= max_batch && n <= 70 && n <= n_rows; n++) {
            const size_t first = (n * 11 + tau) % (n_rows - n + 1);
            CHECK_STATUS(ts_scorer_score(s, x + first * stride, n, cols, stride, got, &err), TS_OK);
            for (size_t r = 0; r < n; r++) bad += memcmp(&got[r], &ref[first + r], sizeof got[r]) != 0;
            if (!m->compares_double) continue;
            CHECK_STATUS(ts_scorer_score_f64(s, xd + first * stride, n, cols, stride, got, &err), TS_OK);
            for (size_t r = 0; r < n; r++) {
                const double want = reference_score_f64(m, xd + (first + r) * stride);
                bad_d += memcmp(&got[r], &want, sizeof want) != 0;
            }
        }
        CHECK_MSG(bad == 0 && bad_d == 0,
                  "rapid isa %s tau %u, %zu sample rows, batches 1-%zu: %zu float and %zu double rows differ",
                  ts_isa_name(ts_scorer_isa(s)), tau, n_sample, max_batch, bad, bad_d);
        ts_scorer_free(s);
    }
    free(sample);
    free(xd);
}

/* A forest of caterpillar trees: node i has leaf i on its left and node i + 1 on its
 * right, a LightGBM-like shape whose rows hold about 8 plain entries each (rapid.h "Leaf
 * order": a model rapid orders without the test knob); mirrored, node i + 1 on the left
 * and leaf n - 1 - i on the right, so that nearly every node's left leaves span several
 * rows (skip entries, about one plain entry a row: a model whose order rapid keeps). */
static ts_model *caterpillar_model(uint32_t n_trees, uint32_t n_leaves, int mirrored) {
    ts_model *m = tsm_model_new(TS_FORMAT_LIGHTGBM);
    tsm_node *nodes = malloc(n_leaves * sizeof *nodes);
    double *leaves = malloc(n_leaves * sizeof *leaves);
    ts_error err;
    for (uint32_t t = 0; t < n_trees; t++) {
        for (uint32_t i = 0; i + 1 < n_leaves; i++) {
            random_node(&nodes[i]);
            const int32_t next = i + 2 < n_leaves ? (int32_t)(i + 1) : ~(int32_t)(mirrored ? 0 : i + 1);
            nodes[i].left = mirrored ? next : ~(int32_t)i;
            nodes[i].right = mirrored ? ~(int32_t)(n_leaves - 1 - i) : next;
        }
        for (uint32_t j = 0; j < n_leaves; j++) leaves[j] = (double)(int)rnd_below(2000001) / 1024.0 - 976.0;
        CHECK_STATUS(tsm_model_add_tree(m, n_leaves - 1, nodes, n_leaves, leaves, 1.0, &err), TS_OK);
    }
    return finish_random_model(m, nodes, leaves);
}

/* Whether rapid ordered its leaves for m by `n_sample` rows of x (its report says so,
 * with nodes swapped), and its scores, every row in one call, are ref's. */
static int rapid_ordered(const ts_model *m, const float *x, size_t n_rows, size_t cols, size_t stride,
                         size_t n_sample, const double *ref) {
    ts_scorer_options o;
    ts_scorer_options_init(&o);
    o.engine = TS_ENGINE_RAPID, o.n_threads = 1;
    o.sample = n_sample ? x : NULL, o.sample_rows = n_sample, o.sample_stride = stride;
    ts_scorer *s = NULL;
    ts_error err;
    CHECK_STATUS(ts_scorer_create(m, &o, &s, &err), TS_OK);
    if (!s) return -1;
    const char *rep = ts_scorer_plan_report(s), *at = rep ? strstr(rep, "rapid: leaves ordered by ") : NULL;
    unsigned long long rows = 0, flipped = 0;
    if (at) CHECK(sscanf(at, "rapid: leaves ordered by %llu sample rows (%llu of", &rows, &flipped) == 2 &&
                  rows == n_sample && flipped > 0);
    double *got = malloc(n_rows * sizeof *got);
    CHECK_STATUS(ts_scorer_score(s, x, n_rows, cols, stride, got, &err), TS_OK);
    CHECK(memcmp(got, ref, n_rows * sizeof *got) == 0);
    free(got);
    ts_scorer_free(s);
    return at != NULL;
}

/* rapid's leaf order (rapid.h "Leaf order"): by default on a model whose rows hold 6
 * entries or more on average (caterpillars) given 64 sample rows or more, said in the
 * report with nodes swapped; not below 64 rows, nor without a sample, nor for a model of
 * fewer entries a row (mirrored caterpillars: skip entries), nor with
 * TREESCORE_RAPID_ORDER=2; every order exact (every ISA level, batches 1-70, float and
 * double rows: check_rapid_batches_tau, here and in every other forest test, which run
 * with TREESCORE_RAPID_ORDER=1: ordered whatever the model). Most rows go down the
 * caterpillars' right side (values shifted up), so the order swaps many nodes. */
static void test_rapid_leaf_order(void) {
    const size_t n_rows = 150, cols = N_FEATURES + 3, stride = cols;
    const char *knob = getenv("TREESCORE_RAPID_ORDER");
    char *saved = knob ? strdup(knob) : NULL;
    unsetenv("TREESCORE_RAPID_ORDER");
    tsr_config_reload();
    ts_model *cat = caterpillar_model(30, 64, 0), *bushy = caterpillar_model(30, 64, 1);
    float *x = malloc(n_rows * stride * sizeof *x);
    double ref[150], ref_b[150];
    for (size_t i = 0; i < n_rows * stride; i++) x[i] = i % 3 ? random_value() + 5.0f : random_value();
    for (size_t r = 0; r < n_rows; r++) ref[r] = reference_score(cat, x + r * stride);
    for (size_t r = 0; r < n_rows; r++) ref_b[r] = reference_score(bushy, x + r * stride);
    CHECK(rapid_ordered(cat, x, n_rows, cols, stride, 0, ref) == 0);
    CHECK(rapid_ordered(cat, x, n_rows, cols, stride, 63, ref) == 0);
    CHECK(rapid_ordered(cat, x, n_rows, cols, stride, 64, ref) == 1);
    CHECK(rapid_ordered(cat, x, n_rows, cols, stride, 150, ref) == 1);
    CHECK(rapid_ordered(bushy, x, n_rows, cols, stride, 150, ref_b) == 0);
    setenv("TREESCORE_RAPID_ORDER", "2", 1);
    tsr_config_reload();
    CHECK(rapid_ordered(cat, x, n_rows, cols, stride, 150, ref) == 0);
    unsetenv("TREESCORE_RAPID_ORDER");
    tsr_config_reload();
    rapid_sample_turn = 1; /* the next check takes a sample: ordered by default */
    check_rapid_batches_tau(cat, x, n_rows, cols, stride, ref, 0, 70);
    if (saved) setenv("TREESCORE_RAPID_ORDER", saved, 1);
    tsr_config_reload();
    free(saved);
    free(x);
    ts_model_free(cat);
    ts_model_free(bushy);
}

static void check_rapid_batches(const ts_model *m, const float *x, size_t n_rows, size_t cols, size_t stride,
                                const double *ref) {
    check_rapid_batches_tau(m, x, n_rows, cols, stride, ref, 0, 70);
}

/* rapid's pair layout (rapid.h "Pairs": AVX2, calls of at most 16 rows, two trees per
 * register) with trees of unequal rows side by side (1 to 300 leaves, some deep: a partner
 * past 32 rows leaves the pair single), odd tree counts per block (tau 1, 3, 7 and the
 * default), every batch 1 .. 20, float and double rows, every ISA level. */
static void test_rapid_pairs(void) {
    static const uint32_t taus[] = {0, 1, 3, 7};
    /* the pair rows and the one-tree rows as the model says, padded wherever the trees
     * allow, never padded (rapid.h "Padded rows", rs_padded; trees of at most 64 leaves
     * allow it); padded, every batch up to 70 (the one-tree rows: one group, 17-64 rows,
     * and a call's last group) */
    static const char *const pad[] = {NULL, "1", "2"};
    const size_t n_rows = 120, cols = N_FEATURES + 3, stride = cols + 1;
    for (size_t p = 0; p < sizeof pad / sizeof pad[0]; p++) {
        if (pad[p])
            setenv("TREESCORE_RAPID_PAD_ROWS", pad[p], 1);
        else
            unsetenv("TREESCORE_RAPID_PAD_ROWS");
        tsr_config_reload();
        for (int rep = 0; rep < 5; rep++) { /* rep 3: 150 trees, more pairs in a block than the
                                               kernel defers; rep 4: trees of 64 leaves */
            ts_model *m = rep == 4 ? random_model(60, 10, 64, 64)
                                   : random_model(rep == 0 ? 37 : rep == 3 ? 150 : 20 + rnd_below(30), 1,
                                                  rep >= 2 ? 64 : 300, 5);
            float *x = malloc(n_rows * stride * sizeof *x);
            double ref[120];
            for (size_t i = 0; i < n_rows * stride; i++) x[i] = random_value();
            for (size_t r = 0; r < n_rows; r++) ref[r] = reference_score(m, x + r * stride);
            for (size_t t = 0; t < sizeof taus / sizeof taus[0]; t++)
                check_rapid_batches_tau(m, x, n_rows, cols, stride, ref, taus[t], p == 1 ? 70 : 20);
            free(x);
            ts_model_free(m);
        }
    }
    unsetenv("TREESCORE_RAPID_PAD_ROWS");
    tsr_config_reload();
}

/* A forest of weight-1 trees of 1 to max_leaves leaves whose values are floats (random_tree's
 * k / 1024 - 976, an eighth of them replaced by +-0, +-FLT_MAX, +-FLT_MIN, 2^-60 or 3e30f;
 * tiny: every leaf 0 or 2^-128 instead), and with odd (unless 0) as one leaf of the middle
 * tree; base score base. */
static ts_model *float_leaf_model(uint32_t n_trees, uint32_t max_leaves, double odd, double base, int tiny) {
    static const double specials[] = {0.0, -0.0, FLT_MAX, -FLT_MAX, FLT_MIN, -FLT_MIN, 0x1p-60, (double)3.0e30f};
    ts_model *m = tsm_model_new(TS_FORMAT_LIGHTGBM);
    tsm_node *nodes = malloc(max_leaves * sizeof *nodes);
    double *leaves = malloc(max_leaves * sizeof *leaves);
    ts_error err;
    for (uint32_t t = 0; t < n_trees; t++) {
        const uint32_t L = 1 + rnd_below(max_leaves);
        random_tree(L, t % 5 == 0, nodes, leaves);
        for (uint32_t j = 0; j < L; j++)
            if (tiny)
                leaves[j] = rnd_below(3) ? 0.0 : 0x1p-128;
            else if (rnd_below(8) == 0)
                leaves[j] = specials[rnd_below(8)];
        if (t == n_trees / 2 && odd != 0) leaves[0] = odd;
        CHECK_STATUS(tsm_model_add_tree(m, L - 1, nodes, L, leaves, 1.0, &err), TS_OK);
    }
    m->base_score = base;
    CHECK_STATUS(tsm_model_finish(m, &err), TS_OK);
    free(nodes);
    free(leaves);
    return m;
}

/* rapid at every ISA level, one thread, one call of rows [0, n) (n <= 700) under MXCSR mxcsr (0: the
 * caller's), against ref. */
static void check_rapid_rows(const ts_model *m, const float *x, size_t n, size_t cols, size_t stride,
                             const double *ref, unsigned mxcsr, const char *what) {
    static const ts_isa isas[] = {TS_ISA_SCALAR, TS_ISA_AVX2, TS_ISA_AVX512};
    double got[700];
    for (size_t i = 0; i < sizeof isas / sizeof isas[0]; i++) {
        if (isas[i] > ts_cpu_isa()) continue;
        ts_scorer_options o;
        ts_scorer_options_init(&o);
        o.engine = TS_ENGINE_RAPID, o.max_isa = isas[i], o.n_threads = 1;
        ts_scorer *s = NULL;
        ts_error err;
        CHECK_STATUS(ts_scorer_create(m, &o, &s, &err), TS_OK);
        if (!s) continue;
        const unsigned saved = _mm_getcsr();
        _mm_setcsr(mxcsr ? mxcsr : saved);
        const ts_status st = ts_scorer_score(s, x, n, cols, stride, got, &err);
        _mm_setcsr(saved);
        CHECK_STATUS(st, TS_OK);
        size_t bad = 0;
        for (size_t r = 0; r < n; r++) bad += memcmp(&got[r], &ref[r], sizeof got[r]) != 0;
        CHECK_MSG(bad == 0, "%s: rapid isa %s, %zu rows: %zu differ", what, ts_isa_name(ts_scorer_isa(s)), n, bad);
        ts_scorer_free(s);
    }
}

/*
 * rapid's float leaves (rapid.h leaves_f): a forest whose every leaf value is a float
 * (weights 1: XGBoost's leaves, ONNX's weights) and whose trees have at most 64 leaves
 * takes its deferred leaf values from floats in registers (the GFNI kernel, Intel's: 2
 * groups or more, and the pairs at 16 rows or fewer), widened exactly; a forest with one
 * leaf that is not a float (0.1) keeps the doubles. Every batch 1-70 and calls of 128,
 * 129, 300 and 700 rows, every ISA level, against the reference; and a forest of tiny
 * values (base 0, leaves 0 and 2^-128: a subnormal float, a normal double) under the
 * caller's FTZ and DAZ, which the call does not take (platform/fpenv.h: under DAZ the
 * widening would make them 0).
 */
static void test_float_leaves(void) {
    const size_t n_rows = 700, cols = N_FEATURES + 3, stride = cols;
    static const double odd[] = {0.0, 0.1};
    float *x = malloc(n_rows * stride * sizeof *x);
    double *ref = malloc(n_rows * sizeof *ref);
    for (size_t i = 0; i < n_rows * stride; i++) x[i] = random_value();
    for (size_t v = 0; v < sizeof odd / sizeof odd[0]; v++) {
        ts_model *m = float_leaf_model(v == 0 ? 150 : 40, 64, odd[v], 0.5, 0);
        for (size_t r = 0; r < n_rows; r++) ref[r] = reference_score(m, x + r * stride);
        check_rapid_batches_tau(m, x, n_rows, cols, stride, ref, 0, 70);
        static const size_t big[] = {128, 129, 300, 700};
        for (size_t b = 0; b < sizeof big / sizeof big[0]; b++)
            check_rapid_rows(m, x, big[b], cols, stride, ref, 0, odd[v] == 0 ? "float leaves" : "one leaf not");
        ts_model_free(m);
    }
    /* DAZ: leaves 0 or 2^-128 (FLT_MIN / 4), base 0 */
    ts_model *m = float_leaf_model(60, 64, 0.0, 0.0, 1);
    for (size_t r = 0; r < n_rows; r++) ref[r] = reference_score(m, x + r * stride);
    size_t tiny = 0;
    for (size_t r = 0; r < n_rows; r++) tiny += ref[r] != 0;
    CHECK(tiny > n_rows / 2);
    const unsigned daz = _mm_getcsr() | 0x8040u; /* FTZ and DAZ */
    check_rapid_rows(m, x, 16, cols, stride, ref, daz, "subnormal float leaves, DAZ");
    check_rapid_rows(m, x, 700, cols, stride, ref, daz, "subnormal float leaves, DAZ");
    ts_model_free(m);
    free(x);
    free(ref);
}

static void check_rapid_on_grid(const ts_model *m, size_t n_rows, uint32_t grid_size) {
    const size_t cols = N_FEATURES + 3, stride = cols;
    float *x = malloc(n_rows * stride * sizeof *x);
    double *ref = malloc(n_rows * sizeof *ref), *got = malloc(n_rows * sizeof *got);
    for (size_t i = 0; i < n_rows * stride; i++) {
        float v = wide_grid(rnd_below(grid_size));
        uint32_t r = rnd_below(8);
        x[i] = r == 0 ? nextafterf(v, INFINITY) : r == 1 ? nextafterf(v, -INFINITY) : r == 2 ? random_value() : v;
    }
    for (size_t r = 0; r < n_rows; r++) ref[r] = reference_score(m, x + r * stride);
    for (size_t c = 0; c < sizeof configs / sizeof configs[0]; c++)
        if (configs[c].engine == TS_ENGINE_RAPID || configs[c].engine == TS_ENGINE_NAIVE ||
            configs[c].engine == TS_ENGINE_TREES_SIMD || configs[c].engine == TS_ENGINE_OBLIVIOUS)
            check_config(m, &configs[c], x, n_rows, cols, stride, ref, got);
    check_rapid_batches(m, x, n_rows, cols, stride, ref);
    free(x);
    free(ref);
    free(got);
}

static void test_many_thresholds(void) {
    ts_model *m = random_model(400, 8, 40, 0);
    for (uint32_t t = 0; t < m->n_trees; t++)
        for (uint32_t i = 0; i < m->trees[t].n_nodes; i++) {
            tsm_node *nd = &m->trees[t].nodes[i];
            if (nd->feature >= N_ZERO_FEATURES && rnd_below(4)) nd->threshold = wide_grid(rnd_below(600));
        }
    check_rapid_on_grid(m, 700, 600);
    ts_model_free(m);
}

/* Features of exactly 33 .. 257 distinct thresholds: around quant.h's block tables (more
 * than 32 and at most 256 thresholds: a binary search among 16 pivots, then 15 counted;
 * at 256 the last pivot is a real threshold). Feature f's nodes take its n_f grid values
 * (every other one) in turn, so all of them occur. */
static void test_block_thresholds(void) {
    static const uint32_t counts[N_FEATURES] = {0, 0, 0, 33, 47, 64, 100, 200, 255, 256, 257, 31};
    ts_model *m = random_model(700, 32, 40, 0);
    uint32_t next[N_FEATURES] = {0};
    for (uint32_t t = 0; t < m->n_trees; t++)
        for (uint32_t i = 0; i < m->trees[t].n_nodes; i++) {
            tsm_node *nd = &m->trees[t].nodes[i];
            uint32_t f = nd->feature, n = f < N_FEATURES ? counts[f] : 0;
            if (n) nd->threshold = wide_grid(next[f]++ % n * 2);
        }
    for (uint32_t f = N_ZERO_FEATURES; f < N_FEATURES; f++) CHECK(next[f] >= counts[f]);
    check_rapid_on_grid(m, 900, 520);
    ts_model_free(m);
}

/* Features of 257 .. 1,025 distinct thresholds: around quant.h's chunk tables (ceil(n / 256)
 * block tables whose counts add up, in rapid's AVX-512 float kernel; past 1,024 the
 * binary search), as in test_block_thresholds. */
static void test_chunk_thresholds(void) {
    static const uint32_t counts[N_FEATURES] = {0, 0, 0, 511, 512, 513, 768, 1024, 1025, 300, 257, 0};
    ts_model *m = random_model(1200, 32, 40, 0);
    uint32_t next[N_FEATURES] = {0};
    for (uint32_t t = 0; t < m->n_trees; t++)
        for (uint32_t i = 0; i < m->trees[t].n_nodes; i++) {
            tsm_node *nd = &m->trees[t].nodes[i];
            uint32_t f = nd->feature, n = f < N_FEATURES ? counts[f] : 0;
            if (n) nd->threshold = wide_grid(next[f]++ % n * 2);
        }
    for (uint32_t f = N_ZERO_FEATURES; f < N_FEATURES; f++) CHECK(next[f] >= counts[f]);
    check_rapid_on_grid(m, 700, 2060);
    ts_model_free(m);
}

/* Feature f's k-th threshold (k < bucket_counts[f]) for test_bucket_thresholds: the
 * shapes of real features around quant.h's bucket tables. */
static const uint32_t bucket_counts[N_FEATURES] = {0, 0, 0, 600, 700, 501, 61, 400, 400, 500, 1500, 100};
static float bucket_threshold(uint32_t f, uint32_t k) {
    float run = 1.0f;
    switch (f) {
    case 3: return (float)k + 0.5f;                                /* counts */
    case 4: return (float)(1e-6 * pow(1e13, k / 699.0));            /* 19 decades */
    case 5: return k == 250 ? -0.0f : (float)((double)k - 250.0) / 3.0f; /* either sign, -0.0 among them */
    case 6: /* -0.0, then the 60 least denormals: a bucket per key (+0.0 not in -0.0's) */
        for (uint32_t i = 0; i < k; i++) run = nextafterf(i ? run : 0.0f, INFINITY);
        return k ? run : -0.0f;
    case 7:  /* a run of 8 consecutive floats: no window of 7 holds it, the chunk tables stay */
    case 11: /* the same on 100 thresholds: the block table stays */
    case 8:  /* a run of 7: a window of 7 */
        if (k < (f == 8 ? 7u : 8u)) {
            for (uint32_t i = 0; i < k; i++) run = nextafterf(run, INFINITY);
            return run;
        }
        return (float)k * 3.7f + 10.0f;
    case 9: return (k % 3 == 0 ? -1e30f : k % 3 == 1 ? 1.0f : 1e30f) * (1.0f + (float)k / 1000.0f); /* two gaps */
    default: return (float)k * 0.5f - 100.0f;                       /* 10: past the chunk tables */
    }
}

/* Features of 100 .. 1,500 thresholds shaped as real ones (counts, decades, either sign,
 * -0.0, denormals, runs of consecutive floats, clusters far apart): rapid (AVX2's bucket
 * tables, quant.h "Bucket tables") on rows of the thresholds, their float neighbours and
 * every special value, float and double rows, bit for bit; the features built with bucket
 * tables are those expected (so each path runs: the block and chunk tables of the two
 * features no window holds, and the register table of the 61 denormals and -0.0). */
static void test_bucket_thresholds(void) {
    ts_model *m = random_model(1200, 32, 40, 0);
    uint32_t next[N_FEATURES] = {0};
    for (uint32_t t = 0; t < m->n_trees; t++)
        for (uint32_t i = 0; i < m->trees[t].n_nodes; i++) {
            tsm_node *nd = &m->trees[t].nodes[i];
            const uint32_t f = nd->feature, n = f < N_FEATURES ? bucket_counts[f] : 0;
            if (n) nd->threshold = bucket_threshold(f, next[f]++ % n);
        }
    for (uint32_t f = N_ZERO_FEATURES; f < N_FEATURES; f++) CHECK(next[f] >= bucket_counts[f]);
    tsq q;
    ts_error err;
    CHECK_STATUS(tsq_build(&q, m, &err), TS_OK);
    for (uint32_t j = 0; j < q.n_used; j++) {
        const uint32_t f = q.f[j].column;
        if (f < N_ZERO_FEATURES || f >= N_FEATURES) continue;
        CHECK(q.f[j].n_thr == bucket_counts[f]);
        const int want = f != 7 && f != 11 && bucket_counts[f] > TSQ_REG_MAX; /* 6: a register table */
        CHECK_MSG((q.bk[j].first != UINT32_MAX) == want, "feature %u: bucket table %s", f,
                  q.bk[j].first != UINT32_MAX ? "built" : "missing");
        CHECK_MSG((q.f[j].regs != UINT32_MAX) == (bucket_counts[f] <= TSQ_REG_MAX), "feature %u: register table", f);
    }
    tsq_free(&q);
    const size_t n_rows = 900, cols = N_FEATURES + 3, stride = cols;
    float *x = malloc(n_rows * stride * sizeof *x);
    double *ref = malloc(n_rows * sizeof *ref), *got = malloc(n_rows * sizeof *got);
    for (size_t r = 0; r < n_rows; r++)
        for (size_t c = 0; c < stride; c++) {
            float v = random_value();
            if (c >= N_ZERO_FEATURES && c < N_FEATURES && rnd_below(4)) {
                v = bucket_threshold((uint32_t)c, rnd_below(bucket_counts[c]));
                const uint32_t s = rnd_below(3);
                v = s == 0 ? v : nextafterf(v, s == 1 ? INFINITY : -INFINITY);
            }
            x[r * stride + c] = v;
        }
    for (size_t r = 0; r < n_rows; r++) ref[r] = reference_score(m, x + r * stride);
    for (size_t c = 0; c < sizeof configs / sizeof configs[0]; c++)
        if (configs[c].engine == TS_ENGINE_RAPID || configs[c].engine == TS_ENGINE_NAIVE ||
            configs[c].engine == TS_ENGINE_OBLIVIOUS)
            check_config(m, &configs[c], x, n_rows, cols, stride, ref, got);
    check_rapid_batches(m, x, n_rows, cols, stride, ref);
    free(x);
    free(ref);
    free(got);
    ts_model_free(m);
}

/* A model reading few of the columns it spans (0-3 and 11 of 12): rapid's quantizer copies
 * those columns one by one, where dense models take 16 columns at a time (AVX-512). */
static void test_sparse_columns(void) {
    ts_model *m = random_model(300, 2, 70, 0);
    for (uint32_t t = 0; t < m->n_trees; t++)
        for (uint32_t i = 0; i < m->trees[t].n_nodes; i++) {
            tsm_node *nd = &m->trees[t].nodes[i];
            if (nd->feature >= N_ZERO_FEATURES) nd->feature = nd->feature & 1 ? N_FEATURES - 1 : N_ZERO_FEATURES;
        }
    check_engines_on(m, 200);
    ts_model_free(m);
}

/* A one-thread trees-simd scorer of m at most at isa, of `lanes` lanes (NULL, with a
 * failed check, when it cannot be made). */
static ts_scorer *tsimd_at(const ts_model *m, ts_isa isa, uint32_t lanes, ts_error *err) {
    ts_scorer_options o;
    ts_scorer_options_init(&o);
    o.engine = TS_ENGINE_TREES_SIMD;
    o.max_isa = isa;
    o.lanes = lanes;
    o.n_threads = 1;
    ts_scorer *s = NULL;
    CHECK_STATUS(ts_scorer_create(m, &o, &s, err), TS_OK);
    return s;
}

/* trees-simd's rows split across threads (engine.h tree_values, chunk.c; forced by the
 * test knob TREESCORE_SPLIT_TREES=1): one row a call on 2, 3 and 5 threads, the same
 * bits as the reference, for the kernel at most at isa of `lanes` lanes. */
static void check_tsimd_split(const ts_model *m, ts_isa isa, uint32_t lanes, const float *x, size_t cols,
                              size_t stride, const double *ref) {
    static const unsigned threads[] = {2, 3, 5};
    setenv("TREESCORE_SPLIT_TREES", "1", 1);
    tsr_config_reload();
    for (size_t k = 0; k < sizeof threads / sizeof threads[0]; k++) {
        ts_scorer_options o;
        ts_scorer_options_init(&o);
        o.engine = TS_ENGINE_TREES_SIMD;
        o.max_isa = isa;
        o.lanes = lanes;
        o.n_threads = threads[k];
        ts_scorer *s = NULL;
        ts_error err;
        CHECK_STATUS(ts_scorer_create(m, &o, &s, &err), TS_OK);
        if (!s) continue;
        CHECK_MSG(ts_scorer_splits_trees(s, 1) == (m->n_trees > 16), "trees-simd split: %u trees", m->n_trees);
        size_t bad = 0;
        for (size_t r = 0; r < 24; r++) {
            double got;
            CHECK_STATUS(ts_scorer_score(s, x + r * stride, 1, cols, stride, &got, &err), TS_OK);
            bad += memcmp(&got, &ref[r], sizeof got) != 0;
        }
        CHECK_MSG(bad == 0, "trees-simd split, isa %s lanes %u, %u threads, %u trees: %zu rows differ",
                  ts_isa_name(ts_scorer_isa(s)), lanes, threads[k], m->n_trees, bad);
        /* double rows (the float rows widened), one a call: rounded to floats, then split */
        double *xd = malloc(cols * sizeof *xd);
        for (size_t r = 0; r < 24; r++) {
            double got, want;
            for (size_t j = 0; j < cols; j++) xd[j] = (double)x[r * stride + j];
            want = m->compares_double ? reference_score_f64(m, xd) : ref[r];
            CHECK_STATUS(ts_scorer_score_f64(s, xd, 1, cols, cols, &got, &err), TS_OK);
            bad += memcmp(&got, &want, sizeof got) != 0;
        }
        free(xd);
        CHECK_MSG(bad == 0, "trees-simd split, isa %s lanes %u, %u threads, %u trees: %zu double rows differ",
                  ts_isa_name(ts_scorer_isa(s)), lanes, threads[k], m->n_trees, bad);
        ts_scorer_free(s);
    }
    unsetenv("TREESCORE_SPLIT_TREES");
    tsr_config_reload();
}

/* trees-simd (lanes hold trees): every batch size 1 .. 300 through one scorer per kernel,
 * tree counts around its blocks (8, 16 lanes; 4 blocks stepped together), one-leaf trees
 * among them, and deep unbalanced trees (many supernodes per tree). */
static void test_trees_simd_batches(void) {
    static const uint32_t trees[] = {1, 7, 8, 9, 16, 17, 63, 64, 65, 131};
    static const ts_isa isas[] = {TS_ISA_SCALAR, TS_ISA_AVX2, TS_ISA_AVX512};
    /* 0: depth steps; 8, 16: the supernode kernels (scalar, AVX2, AVX-512 as the level allows) */
    static const uint32_t lanes[] = {0, 8, 16};
    const size_t n_rows = 300, cols = N_FEATURES, stride = cols + 1;
    float *x = malloc(n_rows * stride * sizeof *x);
    double *ref = malloc(n_rows * sizeof *ref), *got = malloc(n_rows * sizeof *got);
    for (size_t t = 0; t < sizeof trees / sizeof trees[0]; t++) {
        ts_model *m = random_model(trees[t], 1, 2 + rnd_below(70), t % 3 ? 3 : 0);
        for (size_t i = 0; i < n_rows * stride; i++) x[i] = random_value();
        for (size_t r = 0; r < n_rows; r++) ref[r] = reference_score(m, x + r * stride);
        for (size_t k = 0; k < 3 * sizeof isas / sizeof isas[0]; k++) {
            ts_error err;
            ts_scorer *s = tsimd_at(m, isas[k % 3], lanes[k / 3], &err);
            if (!s) continue;
            size_t bad = 0;
            for (size_t n = 1; n <= n_rows; n++) {
                size_t first = (n * 7) % (n_rows - n + 1);
                CHECK_STATUS(ts_scorer_score(s, x + first * stride, n, cols, stride, got, &err), TS_OK);
                for (size_t r = 0; r < n; r++)
                    if (memcmp(&got[r], &ref[first + r], sizeof got[r]) != 0) bad++;
            }
            CHECK_MSG(bad == 0, "trees-simd isa %s lanes %u, %u trees: %zu rows differ", ts_isa_name(ts_scorer_isa(s)),
                      lanes[k / 3], m->n_trees, bad);
            ts_scorer_free(s);
            check_tsimd_split(m, isas[k % 3], lanes[k / 3], x, cols, stride, ref);
        }
        check_tsimd_split(m, TS_ISA_AUTO, 1, x, cols, stride, ref); /* depth steps from the roots */
        ts_model_free(m);
    }
    free(x);
    free(ref);
    free(got);
}

/* trees-simd adds only a group's own trees to a row's sum (tsimd.c "Tree order"): on 17
 * and 33 trees (a last group of one tree, its other lanes padding) whose leaves are all
 * -0 from a base score of -0, every row's score is -0, as naive's: adding a padding
 * lane's 0 would give +0. */
static void test_trees_simd_negative_zero(void) {
    static const uint32_t trees[] = {17, 33};
    static const ts_isa isas[] = {TS_ISA_SCALAR, TS_ISA_AVX2, TS_ISA_AVX512};
    const size_t n_rows = 20, cols = N_FEATURES, stride = cols;
    float *x = malloc(n_rows * stride * sizeof *x);
    double got[20];
    const double nz = -0.0;
    for (size_t i = 0; i < n_rows * stride; i++) x[i] = random_value();
    for (size_t t = 0; t < sizeof trees / sizeof trees[0]; t++) {
        ts_model *m = random_model(trees[t], 1, 2 + rnd_below(40), 0);
        m->base_score = nz;
        for (uint32_t k = 0; k < m->n_trees; k++)
            for (uint32_t l = 0; l < m->trees[k].n_leaves; l++) m->trees[k].leaf_values[l] = nz;
        for (size_t i = 0; i < sizeof isas / sizeof isas[0]; i++) {
            ts_error err;
            ts_scorer *s = tsimd_at(m, isas[i], 0, &err);
            if (!s) continue;
            for (size_t n = 1; n <= n_rows; n += 19) {
                CHECK_STATUS(ts_scorer_score(s, x, n, cols, stride, got, &err), TS_OK);
                size_t bad = 0;
                for (size_t r = 0; r < n; r++) bad += memcmp(&got[r], &nz, sizeof nz) != 0;
                CHECK_MSG(bad == 0, "trees-simd isa %s, %u trees of -0 leaves, %zu rows: %zu scores are not -0",
                          ts_isa_name(ts_scorer_isa(s)), m->n_trees, n, bad);
            }
            ts_scorer_free(s);
        }
        ts_model_free(m);
    }
    free(x);
}

/* trees-simd's top levels by byte masks (tsimd.c "Top levels", with VBMI): feature 0's
 * top-level nodes (the first 6 levels) take exactly n_keys thresholds, top_key(0 ..
 * n_keys - 1), missing going either way (254: the most a keyset takes; 255: no top
 * levels); one-leaf trees, trees shallower than 6 levels and deep ones among them. */
static float top_key(uint32_t i) { return (float)i * 0.5f - 60.25f; }

static ts_model *top_model(uint32_t n_trees, uint32_t n_keys) {
    ts_model *m = tsm_model_new(TS_FORMAT_LIGHTGBM);
    const uint32_t max_leaves = 90;
    tsm_node *nodes = malloc(max_leaves * sizeof *nodes);
    double *leaves = malloc(max_leaves * sizeof *leaves);
    int32_t queue[2 * 90];
    uint32_t level[2 * 90], next = 0;
    for (uint32_t t = 0; t < n_trees; t++) {
        const uint32_t L = t % 7 == 3 ? 1 : t % 7 == 5 ? 2 + rnd_below(20) : 1 + rnd_below(max_leaves);
        random_tree(L, t % 5 == 0, nodes, leaves);
        uint32_t qn = 0;
        if (L > 1) queue[qn] = 0, level[qn++] = 0;
        for (uint32_t q = 0; q < qn; q++) { /* the nodes of the first 6 levels */
            tsm_node *nd = &nodes[queue[q]];
            if (next < n_keys && rnd_below(3)) {
                nd->feature = 0;
                nd->threshold = top_key(next++);
                nd->flags = rnd_below(2) ? TSM_MISSING_LEFT : 0;
            } else if (nd->feature == 0) {
                nd->feature = 1 + rnd_below(n_features - 1);
                nd->threshold = random_threshold(nd->feature);
                nd->flags &= TSM_MISSING_LEFT;
            }
            if (level[q] + 1 < 6) {
                if (nd->left >= 0) queue[qn] = nd->left, level[qn++] = level[q] + 1;
                if (nd->right >= 0) queue[qn] = nd->right, level[qn++] = level[q] + 1;
            }
        }
        ts_error err;
        CHECK_STATUS(tsm_model_add_tree(m, L - 1, nodes, L, leaves, 1.0, &err), TS_OK);
    }
    CHECK_MSG(next == n_keys, "top_model: %u of %u keys placed", next, n_keys);
    return finish_random_model(m, nodes, leaves);
}

/* Rows of the top models: feature 0 on its keys, a float step either side, NaN, zeros,
 * or anything; the other features random_value's. */
static float top_value(uint32_t j, uint32_t n_keys) {
    if (j != 0 || rnd_below(5) == 0) return random_value();
    const float k = top_key(rnd_below(n_keys + 1));
    switch (rnd_below(4)) {
    case 0: return nextafterf(k, INFINITY);
    case 1: return nextafterf(k, -INFINITY);
    default: return k;
    }
}

static void test_trees_simd_top(void) {
    /* features: 12 (codes in one register), 100 (two), 200 (more than 128 keysets: the
     * trees that read one past the first 128 redone from four registers) */
    static const struct { uint32_t features, trees, keys; } cases[] = {
        {12, 200, 254}, {12, 200, 255}, {12, 37, 40}, {100, 300, 254}, {200, 400, 120}, {200, 300, 254},
    };
    const uint32_t saved = n_features;
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        n_features = cases[c].features;
        ts_model *m = top_model(cases[c].trees, cases[c].keys);
        const size_t n_rows = 300, cols = n_features, stride = cols + 1;
        float *x = malloc(n_rows * stride * sizeof *x);
        double *ref = malloc(n_rows * sizeof *ref), *got = malloc(n_rows * sizeof *got);
        for (size_t r = 0; r < n_rows; r++)
            for (size_t j = 0; j < stride; j++) x[r * stride + j] = top_value((uint32_t)j, cases[c].keys);
        for (size_t r = 0; r < n_rows; r++) ref[r] = reference_score(m, x + r * stride);
        for (uint32_t lanes = 0; lanes < 2; lanes++) { /* 1: depth steps from the roots */
            ts_error err;
            ts_scorer *s = tsimd_at(m, TS_ISA_AUTO, lanes, &err);
            if (!s) continue;
            size_t bad = 0;
            for (size_t n = 1; n <= n_rows; n += n < 40 ? 1 : 130) {
                const size_t first = (n * 7) % (n_rows - n + 1);
                CHECK_STATUS(ts_scorer_score(s, x + first * stride, n, cols, stride, got, &err), TS_OK);
                for (size_t r = 0; r < n; r++)
                    if (memcmp(&got[r], &ref[first + r], sizeof got[r]) != 0) bad++;
            }
            CHECK_MSG(bad == 0, "trees-simd top levels, lanes %u, %u features, %u keys: %zu rows differ", lanes,
                      n_features, cases[c].keys, bad);
            if (m->compares_double) check_f64(m, s, x, n_rows, cols, stride, got);
            ts_scorer_free(s);
            check_tsimd_split(m, TS_ISA_AUTO, lanes, x, cols, stride, ref);
        }
        free(x);
        free(ref);
        free(got);
        ts_model_free(m);
    }
    n_features = saved;
}

/* An oblivious tree of depth d (CatBoost's SymmetricTree) in heap order: level i's nodes
 * all the split lv[i], node i's children 2i + 1 and 2i + 2, the last level's the leaves;
 * children swapped at random nodes (as CatBoost's one-hot splits swap them), which
 * leaves the tree oblivious. */
static void oblivious_tree(uint32_t d, tsm_node *nodes, double *leaves) {
    tsm_node lv[32];
    const uint32_t n_nodes = (1u << d) - 1;
    for (uint32_t i = 0; i < d; i++) random_node(&lv[i]);
    for (uint32_t i = 0; i < n_nodes; i++) {
        uint32_t level = 0;
        for (uint32_t x = i + 1; x > 1; x >>= 1) level++;
        nodes[i] = lv[level];
        if (level + 1 < d) {
            nodes[i].left = (int32_t)(2 * i + 1);
            nodes[i].right = (int32_t)(2 * i + 2);
        } else {
            nodes[i].left = ~(int32_t)(2 * (i - (n_nodes >> 1)));
            nodes[i].right = ~(int32_t)(2 * (i - (n_nodes >> 1)) + 1);
        }
        if (rnd_below(4) == 0) {
            int32_t c = nodes[i].left;
            nodes[i].left = nodes[i].right;
            nodes[i].right = c;
        }
    }
    for (uint32_t j = 0; j <= n_nodes; j++) leaves[j] = (double)(int)rnd_below(2000001) / 1024.0 - 976.0;
}

/* n_trees oblivious trees of 0 .. max_depth levels (0: one leaf, as CatBoost's bias); with
 * other_every, every other_every-th tree is an ordinary random tree instead; with deep,
 * one more tree of 17 levels at the end (too deep for the byte indexes). */
static ts_model *random_oblivious_model(uint32_t n_trees, uint32_t max_depth, uint32_t other_every, int deep) {
    ts_model *m = tsm_model_new(TS_FORMAT_LIGHTGBM);
    const size_t cap = ((size_t)1 << (deep ? 17 : max_depth)) + 64;
    tsm_node *nodes = malloc(cap * sizeof *nodes);
    double *leaves = malloc(cap * sizeof *leaves);
    for (uint32_t t = 0; t < n_trees; t++) {
        uint32_t n_leaves;
        if (other_every && t % other_every == other_every - 1) {
            n_leaves = 2 + rnd_below(40);
            random_tree(n_leaves, 0, nodes, leaves);
        } else {
            const uint32_t d = rnd_below(max_depth + 1);
            oblivious_tree(d, nodes, leaves);
            n_leaves = 1u << d;
        }
        ts_error err;
        CHECK_STATUS(tsm_model_add_tree(m, n_leaves - 1, n_leaves > 1 ? nodes : NULL, n_leaves, leaves,
                                        rnd_below(3) == 0 ? 0.1 : 1.0, &err),
                     TS_OK);
    }
    if (deep) {
        ts_error err;
        oblivious_tree(17, nodes, leaves);
        CHECK_STATUS(tsm_model_add_tree(m, (1u << 17) - 1, nodes, 1u << 17, leaves, 1.0, &err), TS_OK);
    }
    return finish_random_model(m, nodes, leaves);
}

/* The oblivious engine at every level, through one scorer each, on every batch size 1 .. 300
 * (groups of 8, 32, 64 documents; one row coded lane by lane; blocks of 64 documents); at
 * AVX-512 both kernels (lanes 1: the one without VBMI's byte planes). */
static void check_oblivious_batches(const ts_model *m, const float *x, size_t n_rows, size_t cols, size_t stride,
                                    const double *ref, double *got) {
    static const ts_isa isas[] = {TS_ISA_SCALAR, TS_ISA_AVX2, TS_ISA_AVX512, TS_ISA_AVX512};
    for (size_t k = 0; k < 2 * sizeof isas / sizeof isas[0]; k++) {
        ts_scorer_options o;
        ts_scorer_options_init(&o);
        o.engine = TS_ENGINE_OBLIVIOUS;
        o.max_isa = isas[k % 4];
        o.lanes = k % 4 == 3 ? 1 : 0;
        o.delta = k < 4 ? 0 : 64;
        o.n_threads = 1;
        ts_scorer *s = NULL;
        ts_error err;
        CHECK_STATUS(ts_scorer_create(m, &o, &s, &err), TS_OK);
        if (!s) continue;
        size_t bad = 0;
        for (size_t n = 1; n <= n_rows; n++) {
            size_t first = (n * 7) % (n_rows - n + 1);
            CHECK_STATUS(ts_scorer_score(s, x + first * stride, n, cols, stride, got, &err), TS_OK);
            for (size_t r = 0; r < n; r++)
                if (memcmp(&got[r], &ref[first + r], sizeof got[r]) != 0) bad++;
        }
        CHECK_MSG(bad == 0, "oblivious isa %s lanes %u delta %u, %u trees: %zu rows differ",
                  ts_isa_name(ts_scorer_isa(s)), o.lanes, o.delta, m->n_trees, bad);
        ts_scorer_free(s);
    }
}

/* Oblivious forests (CatBoost's default trees) of depth 0 .. 12: every engine on them, the
 * oblivious engine on every batch size; the planner's candidate rule (only forests whose
 * trees are all oblivious); forests mixing in ordinary trees and trees deeper than 16
 * levels, which the oblivious engine walks node by node, still exact. */
static void test_oblivious_forests(void) {
    static const uint32_t depths[] = {1, 3, 6, 8, 10, 12};
    const size_t n_rows = 300, cols = N_FEATURES, stride = cols + 1;
    float *x = malloc(n_rows * stride * sizeof *x);
    double *ref = malloc(n_rows * sizeof *ref), *got = malloc(n_rows * sizeof *got);
    const tse_config cfg = {.isa = TS_ISA_AUTO, .no_build = 1};
    for (size_t i = 0; i < sizeof depths / sizeof depths[0] + 2; i++) {
        const int mixed = i == sizeof depths / sizeof depths[0], deep = i > sizeof depths / sizeof depths[0];
        const uint32_t d = mixed ? 7 : deep ? 4 : depths[i];
        ts_model *m = random_oblivious_model(d >= 10 ? 12 : 60, d, mixed ? 3 : 0, deep);
        CHECK(tse_engine_oblivious.plan_candidate(m, &cfg) == !(mixed || deep));
        for (size_t k = 0; k < n_rows * stride; k++) x[k] = random_value();
        for (size_t r = 0; r < n_rows; r++) ref[r] = reference_score(m, x + r * stride);
        if (!deep) check_engines_on(m, 300);
        check_oblivious_batches(m, x, n_rows, cols, stride, ref, got);
        ts_model_free(m);
    }
    ts_model *ordinary = random_model(20, 2, 30, 0);
    CHECK(tse_engine_oblivious.plan_candidate(ordinary, &cfg) == 0);
    ts_model_free(ordinary);
    free(x);
    free(ref);
    free(got);
}

static void test_scorer_api(void) {
    ts_model *m = random_model(5, 4, 4, 0);
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
    CHECK(ts_scorer_engine(s) == (ts_cpu_isa() >= TS_ISA_AVX2 ? TS_ENGINE_VQS : TS_ENGINE_VPRED)); /* the rule below AVX2: vpred */
    CHECK(ts_scorer_n_features(s) == m->n_features);
    CHECK_STATUS(ts_scorer_score(s, row, 1, 1, 1, out, &err), TS_ERR_SHAPE);
    CHECK(strstr(err.message, "columns") != NULL);
    CHECK_STATUS(ts_scorer_score(s, row, 1, N_FEATURES, N_FEATURES - 1, out, &err), TS_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(ts_scorer_score(s, NULL, 0, N_FEATURES, N_FEATURES, out, &err), TS_OK);
    CHECK_STATUS(ts_scorer_score(NULL, row, 1, N_FEATURES, N_FEATURES, out, &err), TS_ERR_INVALID_ARGUMENT);
    /* sizes no buffer can have are refused, not read (they used to crash) */
    CHECK_STATUS(ts_scorer_score(s, row, SIZE_MAX, N_FEATURES, N_FEATURES, out, &err), TS_ERR_INVALID_ARGUMENT);
    CHECK(strstr(err.message, "address space") != NULL);
    CHECK_STATUS(ts_scorer_score(s, row, 3, N_FEATURES, (size_t)1 << 62, out, &err), TS_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(ts_scorer_score(s, row, 1, SIZE_MAX, SIZE_MAX, out, &err), TS_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(ts_scorer_score_f64(s, (const double *)row, (size_t)1 << 61, N_FEATURES, N_FEATURES, out, &err),
                 TS_ERR_INVALID_ARGUMENT);
    ts_scorer_free(s);
    ts_scorer_free(NULL);
    {
        /* auto's rule: vqs (or qs without SIMD) up to 64 leaves, vpred for wider trees */
        ts_model *wide = random_model(2, 65, 70, 0);
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
        /* options of another size (not from ts_scorer_options_init, or another version) */
        ts_scorer_options_init(&o);
        CHECK(o.size == sizeof o);
        o.size = sizeof o - sizeof(unsigned);
        CHECK_STATUS(ts_scorer_create(m, &o, &s, &err), TS_ERR_INVALID_ARGUMENT);
        CHECK_MSG(strstr(err.message, "ts_scorer_options_init") != NULL, "%s", err.message);
        ts_model_info info;
        CHECK_STATUS(ts_model_get_info(NULL, &info, &err), TS_ERR_INVALID_ARGUMENT);
        CHECK_MSG(strstr(err.message, "model is NULL") != NULL, "%s", err.message);
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

/* `test_engines PART/PARTS` (ctest runs 1/2 and 2/2 at once: the suite is the longest of
 * make test's unit and ASan stages): the forest tests by position, the k-th run by part
 * k % PARTS + 1, in both passes (the others run in part 1). No argument: every test.
 * The order balances the two halves by their measured times (ASan build, both passes:
 * many_blocks 31 s, chunk 16, bucket 16, rapid_pairs 15, oblivious 12, block 8,
 * trees_simd_batches 7, the rest 0-4 each: about 60 and 65 s; Release about 21 and 28). */
static unsigned part = 1, parts = 1, forest_test_no;
#define RUN_FOREST_TEST(fn)                                                                 \
    do {                                                                                    \
        if (forest_test_no++ % parts == part - 1) RUN_TEST(fn);                             \
    } while (0)

/* The tests that score forests with every configuration (only rapid's with only_rapid). */
static void run_forest_tests(void) {
    forest_test_no = 0;
    RUN_FOREST_TEST(test_many_blocks);
    RUN_FOREST_TEST(test_chunk_thresholds);
    RUN_FOREST_TEST(test_block_thresholds);
    RUN_FOREST_TEST(test_bucket_thresholds);
    RUN_FOREST_TEST(test_many_thresholds);
    RUN_FOREST_TEST(test_rapid_pairs);
    RUN_FOREST_TEST(test_rapid_leaf_order);
    RUN_FOREST_TEST(test_sparse_columns);
    RUN_FOREST_TEST(test_small_forests);
    RUN_FOREST_TEST(test_row_counts_and_words);
    RUN_FOREST_TEST(test_wide_trees);
    RUN_FOREST_TEST(test_64_and_65_leaves);
    RUN_FOREST_TEST(test_float_leaves);
    RUN_FOREST_TEST(test_one_leaf_trees);
    if (only_rapid) return;
    RUN_FOREST_TEST(test_oblivious_forests);
    RUN_FOREST_TEST(test_trees_simd_batches);
    RUN_FOREST_TEST(test_trees_simd_top);
    RUN_FOREST_TEST(test_trees_simd_negative_zero);
}

int main(int argc, char **argv) {
    if (argc > 1 && (sscanf(argv[1], "%u/%u", &part, &parts) != 2 || parts == 0 || part == 0 || part > parts)) {
        fprintf(stderr, "usage: test_engines [PART/PARTS], e.g. 1/2\n");
        return 2;
    }
    /* ifelse compiles every model: into the build tree unless told otherwise */
    setenv("TREESCORE_CACHE_DIR", "cache", 0);
    tsr_config_reload();
    /* auto plans every model: keep its timing short and the wisdom file out of it */
    setenv("TREESCORE_PLAN_MS", "2", 1);
    setenv("TREESCORE_WISDOM", "off", 1);
    tsr_config_reload();
    /* Chunks of 5 rows, so that the thread counts of `configs` really split batches. */
    setenv("TREESCORE_CHUNK_ROWS", "5", 1);
    tsr_config_reload();
    /* rapid's leaf order for every forest given a sample (check_rapid_batches_tau: every
     * other check), whatever its rows (rapid.h "Leaf order") */
    setenv("TREESCORE_RAPID_ORDER", "1", 1);
    tsr_config_reload();
    if (part == 1) {
        RUN_TEST(test_thresholds);
        RUN_TEST(test_invalid_trees);
        RUN_TEST(test_scorer_api);
    }
    run_forest_tests();
    /* rapid has two AVX-512 kernels (rapid_avx512.c: the GFNI update, picked on Intel, and
     * vpandd + vmovdqu8): where the CPU can run both, rapid's tests again with the other. */
    if (ts_cpu_isa() >= TS_ISA_AVX512 && (tsr_cpu_features() & TSR_CPU_GFNI)) {
        const rs_kernels *first = rs_kernels_for(TS_ISA_AVX512);
        setenv("TREESCORE_RAPID_UPDATE", first == &tse_rapid_avx512gf ? "and" : "gfni", 1);
        tsr_config_reload();
        CHECK(rs_kernels_for(TS_ISA_AVX512) != first);
        printf("rapid's other AVX-512 kernel (TREESCORE_RAPID_UPDATE=%s):\n", getenv("TREESCORE_RAPID_UPDATE"));
        only_rapid = 1;
        run_forest_tests();
        unsetenv("TREESCORE_RAPID_UPDATE");
        tsr_config_reload();
    }
    return check_summary("test_engines");
}
