/* test_f64.c: ts_scorer_score_f64 equals LightGBM's double-precision decisions on crowded float gaps. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h> /* _mm_getcsr, _mm_setcsr */
#endif

#include "check.h"
#include "model/forest.h"
#include "treescore.h"

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint64_t rnd(void) {
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    return rng * 2685821657736338717ull;
}
static uint32_t below(uint32_t n) { return (uint32_t)(rnd() % n); }

#define N_FEAT 6
#define ZERO_FEAT 5 /* the one feature with LightGBM missing type Zero */
enum { MT_NONE, MT_ZERO, MT_NAN };

/* Per feature, values around which thresholds and inputs crowd. */
static const double bases[N_FEAT][3] = {
    {0.988973, 0.5, 0.1},
    {123456789.0, 123456701.0, 1e8},
    {12345.6789, 12345.67891, -4.25},
    {1.5e-35, -1.5e-35, 1e-30},
    {-3.3333333333, 7.1, 1e30},
    {0.25, 2.0000001, 3.0},
};

/* A double near a base: the base, its double neighbours, or a point inside the float32
 * gap around it, so several thresholds share one gap. */
static double near_base(uint32_t f) {
    double b = bases[f][below(3)];
    float lo = (float)b;
    if ((double)lo > b) lo = nextafterf(lo, -INFINITY);
    double gap = (double)nextafterf(lo, INFINITY) - (double)lo;
    switch (below(5)) {
    case 0: return b;
    case 1: return nextafter(b, INFINITY);
    case 2: return nextafter(b, -INFINITY);
    case 3: return (double)lo + gap * (double)(1 + below(15)) / 16.0; /* up to 57 distinct per feature */
    default: return (double)lo;
    }
}

typedef struct ref_node {
    double t;
    int mt, default_left;
} ref_node;

typedef struct ref_tree {
    uint32_t n;
    tsm_node nodes[16];
    ref_node ref[16];
    double leaves[17];
} ref_tree;

static ref_tree trees[200];

/* LightGBM's NumericalDecision on a double input, after its predictor's zero snapping. */
static int ref_left(const ref_node *r, double v) {
    if (fabs(v) <= (double)TSM_ZERO_RANGE) v = 0.0;
    if (v != v && r->mt != MT_NAN) v = 0.0;
    if ((r->mt == MT_ZERO && fabs(v) <= (double)TSM_ZERO_RANGE) || (r->mt == MT_NAN && v != v)) return r->default_left;
    return v <= r->t;
}

static double ref_score(uint32_t n_trees, const double *x) {
    double s = 0.0;
    for (uint32_t t = 0; t < n_trees; t++) {
        int32_t c = trees[t].n ? 0 : -1;
        while (c >= 0) {
            const tsm_node *nd = &trees[t].nodes[c];
            c = ref_left(&trees[t].ref[c], x[nd->feature]) ? nd->left : nd->right;
        }
        s += trees[t].leaves[~c];
    }
    return s;
}

/* Features past N_FEAT (test_double_codes): pools of double thresholds, taken in turn so
 * that every one occurs: 300 (several code segments), 100 (a block table), and 24 around
 * the zero range; each pool crowds pairs of thresholds into single float gaps. */
#define N_POOL 3
static const uint32_t pool_size[N_POOL] = {300, 100, 24};
static double pools[N_POOL][300];
static uint32_t pool_next[N_POOL];
static uint32_t n_feat_used = N_FEAT;

static void make_pools(void) {
    for (uint32_t p = 0; p < 2; p++)
        for (uint32_t i = 0; i < pool_size[p]; i += 2) {
            double b = (p ? -40.0 : -1000.0) + (double)i * (p ? 0.8125 : 6.75) + 0.1;
            float lo = (float)b;
            if ((double)lo > b) lo = nextafterf(lo, -INFINITY);
            double gap = (double)nextafterf(lo, INFINITY) - (double)lo;
            pools[p][i] = (double)lo + gap / 4; /* two thresholds inside one float gap */
            pools[p][i + 1] = (double)lo + gap * 3 / 4;
        }
    static const double z[24] = {-3e-35, -1.5e-35, -(double)TSM_ZERO_RANGE, -1e-35, -5e-36, -1e-300, -0.0, 0.0, 1e-300,
                                 5e-36, 1e-35, 1.0000000000000001e-35, (double)TSM_ZERO_RANGE, 1.00000002e-35,
                                 1.5e-35, 3e-35, 1e-34, 1e-30, -1e-30, 0.5, -0.5, 2.0, 2.0000000000000004, -2.0};
    for (uint32_t i = 0; i < 24; i++) pools[2][i] = z[i];
}

static double pool_threshold(uint32_t p) { return pools[p][pool_next[p]++ % pool_size[p]]; }

/* An input near pool p's thresholds: one of them, a double step either side, the float
 * floor of its gap, a point between the two thresholds of a gap, the next float up. */
static double near_pool(uint32_t p) {
    double t = pools[p][below(pool_size[p])];
    float lo = (float)t;
    if ((double)lo > t) lo = nextafterf(lo, -INFINITY);
    switch (below(6)) {
    case 0: return t;
    case 1: return nextafter(t, INFINITY);
    case 2: return nextafter(t, -INFINITY);
    case 3: return (double)lo;
    case 4: return (double)lo + ((double)nextafterf(lo, INFINITY) - (double)lo) / 2;
    default: return (double)nextafterf(lo, INFINITY);
    }
}

/* make_tree's leaf values are multiples of 1/8 times this: 1, sums exact in any rounding
 * mode; 0.1 for test_caller_fp_state, whose sums round. */
static double leaf_scale = 1.0;

/* A chain-and-branch tree of n internal nodes (node i's right child is node i+1). */
static void make_tree(ref_tree *rt, uint32_t n) {
    rt->n = n;
    for (uint32_t i = 0; i < n; i++) {
        /* half the nodes on the pools when they are in use, pool 0 most */
        const uint32_t pick = below(8);
        uint32_t f = n_feat_used > N_FEAT && pick < 4 ? N_FEAT + (pick < 2 ? 0 : pick - 1) : below(N_FEAT);
        double t = f < N_FEAT ? near_base(f) : pool_threshold(f - N_FEAT);
        ref_node r = {t, f == ZERO_FEAT ? MT_ZERO : (below(2) ? MT_NAN : MT_NONE), (int)below(2)};
        uint32_t flags = 0;
        if (r.mt == MT_NONE) flags = 0.0 <= r.t ? TSM_MISSING_LEFT : 0;
        if (r.mt == MT_NAN) flags = r.default_left ? TSM_MISSING_LEFT : 0;
        if (r.mt == MT_ZERO) flags = TSM_ZERO_IS_MISSING | (r.default_left ? TSM_MISSING_LEFT : 0);
        rt->ref[i] = r;
        rt->nodes[i] = (tsm_node){tsm_threshold_lightgbm(r.t), f, ~(int32_t)i, i + 1 < n ? (int32_t)(i + 1) : ~(int32_t)n,
                                  flags};
    }
    for (uint32_t l = 0; l <= n; l++) rt->leaves[l] = ((double)below(1000) / 8.0 - 60.0) * leaf_scale;
}

static double random_input(uint32_t f) {
    if (f >= N_FEAT && below(8) > 1) return near_pool(f - N_FEAT);
    switch (below(8)) {
    case 0: return NAN;
    case 1: return 0.0;
    case 2: { /* around the zero range */
        static const double z[] = {1e-36, -1e-36, (double)TSM_ZERO_RANGE, -(double)TSM_ZERO_RANGE};
        double v = z[below(4)];
        return below(2) ? v : nextafter(v, below(2) ? INFINITY : -INFINITY);
    }
    default: return f < N_FEAT ? near_base(f) : near_pool(f - N_FEAT);
    }
}

/* n_trees of up to 15 nodes on N_FEAT features: 3 trees give features of a few
 * thresholds, 40 of about 30, 150 of 40-57 (rapid's double codes look up a feature's gap
 * floats differently up to 16, up to 32, up to 64 and above). */
static void crowded_gaps(uint32_t n_trees) {
    const uint32_t n_rows = 3000, cols = N_FEAT + 1;
    ts_model *m = tsm_model_new(TS_FORMAT_LIGHTGBM);
    ts_error err;
    for (uint32_t t = 0; t < n_trees; t++) {
        make_tree(&trees[t], 1 + below(15));
        double td[16];
        for (uint32_t i = 0; i < trees[t].n; i++) td[i] = trees[t].ref[i].t;
        CHECK_STATUS(tsm_model_add_tree_d(m, trees[t].n, trees[t].nodes, td, trees[t].n + 1, trees[t].leaves, 1.0, &err),
                     TS_OK);
    }
    CHECK_STATUS(tsm_model_finish(m, &err), TS_OK);
    /* The chain trees are already canonical (preorder, leaves in order), so trees[] is
     * also the reference's view of them. */
    double *x = malloc((size_t)n_rows * cols * sizeof *x), *ref = malloc(n_rows * sizeof *ref);
    double *got = malloc(n_rows * sizeof *got), *as_float = malloc(n_rows * sizeof *as_float);
    float *xf = malloc((size_t)n_rows * cols * sizeof *xf);
    for (uint32_t r = 0; r < n_rows; r++) {
        for (uint32_t j = 0; j < cols; j++) x[r * cols + j] = random_input(j % N_FEAT);
        ref[r] = ref_score(n_trees, x + r * cols);
    }
    for (size_t i = 0; i < (size_t)n_rows * cols; i++) xf[i] = (float)x[i];
    static const ts_engine engines[] = {TS_ENGINE_NAIVE, TS_ENGINE_QS, TS_ENGINE_RAPID, TS_ENGINE_TREES_SIMD,
                                        TS_ENGINE_OBLIVIOUS, TS_ENGINE_DEEP};
    for (size_t e = 0; e < sizeof engines / sizeof engines[0]; e++) {
        ts_scorer_options o;
        ts_scorer_options_init(&o);
        o.engine = engines[e];
        ts_scorer *s = NULL;
        CHECK_STATUS(ts_scorer_create(m, &o, &s, &err), TS_OK);
        if (!s) continue;
        CHECK_STATUS(ts_scorer_score_f64(s, x, n_rows, cols, cols, got, &err), TS_OK);
        uint32_t bad = 0, differs_as_float = 0;
        for (uint32_t r = 0; r < n_rows; r++)
            if (memcmp(&got[r], &ref[r], sizeof ref[r]) != 0 && bad++ < 3)
                fprintf(stderr, "%s row %u: %.17g != %.17g\n", ts_engine_name(engines[e]), r, got[r], ref[r]);
        CHECK_MSG(bad == 0, "%s: %u of %u rows differ from LightGBM's double decisions", ts_engine_name(engines[e]), bad,
                  n_rows);
        /* the test means something only if float32 rounding would have changed scores */
        CHECK_STATUS(ts_scorer_score(s, xf, n_rows, cols, cols, as_float, &err), TS_OK);
        for (uint32_t r = 0; r < n_rows; r++) differs_as_float += as_float[r] != ref[r];
        CHECK_MSG(differs_as_float > n_rows / (n_trees < 10 ? 100 : 20), "%u trees: only %u rows differ under float32 rounding",
                  n_trees, differs_as_float);
        ts_scorer_free(s);
    }
    ts_model_free(m);
    free(x);
    free(ref);
    free(got);
    free(as_float);
    free(xf);
}

static void test_crowded_gaps(void) {
    crowded_gaps(3);
    crowded_gaps(10);
    crowded_gaps(40);
    crowded_gaps(150);
}

/* rapid's double codes (engines/common/quant.h "Double codes") and trees-simd's double keys at every ISA level this CPU has
 * and every batch size from 1 to 300, on the crowded gaps plus features of 300 and 100
 * thresholds (code segments, block tables; pairs in one float gap) and one of thresholds
 * around the zero range: bit for bit LightGBM's double decisions, and naive's double path
 * (src/scorer/f64.c's rounding and exact traversal). */
/* The model of test_double_codes (n_trees trees on the crowded gaps and the pools) and
 * n_rows rows of cols = N_FEAT + N_POOL + 1 values around them, with LightGBM's double
 * decisions (ref). NULL model on a failed check. */
static ts_model *double_codes_model(uint32_t n_trees, uint32_t n_rows, double **x, double **ref) {
    const uint32_t cols = N_FEAT + N_POOL + 1;
    make_pools();
    n_feat_used = N_FEAT + N_POOL;
    ts_model *m = tsm_model_new(TS_FORMAT_LIGHTGBM);
    ts_error err;
    for (uint32_t t = 0; t < n_trees; t++) {
        make_tree(&trees[t], 1 + below(15));
        double td[16];
        for (uint32_t i = 0; i < trees[t].n; i++) td[i] = trees[t].ref[i].t;
        CHECK_STATUS(tsm_model_add_tree_d(m, trees[t].n, trees[t].nodes, td, trees[t].n + 1, trees[t].leaves, 1.0, &err),
                     TS_OK);
    }
    n_feat_used = N_FEAT;
    CHECK_STATUS(tsm_model_finish(m, &err), TS_OK);
    for (uint32_t p = 0; p < N_POOL; p++) CHECK(pool_next[p] >= pool_size[p]);
    *x = malloc((size_t)n_rows * cols * sizeof **x), *ref = malloc(n_rows * sizeof **ref);
    for (uint32_t r = 0; r < n_rows; r++) {
        for (uint32_t j = 0; j < cols; j++) (*x)[r * cols + j] = random_input(j % (N_FEAT + N_POOL));
        (*ref)[r] = ref_score(n_trees, *x + r * cols);
    }
    return m;
}

static void test_double_codes(void) {
    const uint32_t n_trees = 200, n_rows = 600, cols = N_FEAT + N_POOL + 1;
    double *x = NULL, *ref = NULL;
    ts_model *m = double_codes_model(n_trees, n_rows, &x, &ref);
    ts_error err;
    double *got = malloc(n_rows * sizeof *got), *naive = malloc(n_rows * sizeof *naive);
    double *xf = malloc((size_t)40 * cols * sizeof *xf), *reff = malloc(40 * sizeof *reff);
    ts_scorer_options o;
    ts_scorer_options_init(&o);
    o.engine = TS_ENGINE_NAIVE;
    ts_scorer *s = NULL;
    CHECK_STATUS(ts_scorer_create(m, &o, &s, &err), TS_OK);
    if (s) CHECK_STATUS(ts_scorer_score_f64(s, x, n_rows, cols, cols, naive, &err), TS_OK);
    CHECK(memcmp(naive, ref, n_rows * sizeof *ref) == 0);
    ts_scorer_free(s);
    static const ts_isa isas[] = {TS_ISA_SCALAR, TS_ISA_AVX2, TS_ISA_AVX512};
    for (size_t i = 0; i < 2 * sizeof isas / sizeof isas[0]; i++) {
        if (isas[i % 3] > ts_cpu_isa()) continue;
        /* rapid's double codes; trees-simd's double keys (its depth steps at any level) */
        o.engine = i < 3 ? TS_ENGINE_RAPID : TS_ENGINE_TREES_SIMD;
        const char *name = ts_engine_name(o.engine);
        o.max_isa = isas[i % 3];
        o.n_threads = 1;
        s = NULL;
        CHECK_STATUS(ts_scorer_create(m, &o, &s, &err), TS_OK);
        if (!s) continue;
        if (i < 3) CHECK(ts_scorer_isa(s) == isas[i]);
        uint32_t bad = 0;
        for (uint32_t n = 1; n <= 300; n++) { /* rows [r0, r0 + n) */
            const uint32_t r0 = (n * 7) % (n_rows - n + 1);
            CHECK_STATUS(ts_scorer_score_f64(s, x + (size_t)r0 * cols, n, cols, cols, got, &err), TS_OK);
            for (uint32_t r = 0; r < n; r++)
                if (memcmp(&got[r], &ref[r0 + r], sizeof *got) != 0 && bad++ < 3)
                    fprintf(stderr, "%s %s batch %u row %u: %.17g != %.17g\n", name, ts_isa_name(isas[i % 3]), n, r0 + r,
                            got[r], ref[r0 + r]);
        }
        CHECK_MSG(bad == 0, "%s %s: %u rows differ from LightGBM's double decisions", name, ts_isa_name(isas[i % 3]), bad);
        /* rows whose values are all floats (trees-simd: the float keys' path), batches 1 .. 40 */
        for (uint32_t n = 1; n <= 40; n++) {
            for (uint32_t r = 0; r < n; r++) {
                for (uint32_t j = 0; j < cols; j++) xf[r * cols + j] = (double)(float)x[(size_t)r * cols + j];
                reff[r] = ref_score(n_trees, xf + (size_t)r * cols);
            }
            CHECK_STATUS(ts_scorer_score_f64(s, xf, n, cols, cols, got, &err), TS_OK);
            for (uint32_t r = 0; r < n; r++)
                if (memcmp(&got[r], &reff[r], sizeof *got) != 0 && bad++ < 3)
                    fprintf(stderr, "%s %s float rows batch %u row %u: %.17g != %.17g\n", name, ts_isa_name(isas[i % 3]),
                            n, r, got[r], reff[r]);
        }
        CHECK_MSG(bad == 0, "%s %s: %u float rows differ from LightGBM's double decisions", name,
                  ts_isa_name(isas[i % 3]), bad);
        ts_scorer_free(s);
    }
    ts_model_free(m);
    free(x);
    free(ref);
    free(got);
    free(naive);
    free(xf);
    free(reff);
}

/* A one-thread rapid scorer of m at most at isa (NULL, with a failed check, when it
 * cannot be made). */
static ts_scorer *rapid_at(const ts_model *m, ts_isa isa, ts_error *err) {
    ts_scorer_options o;
    ts_scorer_options_init(&o);
    o.engine = TS_ENGINE_RAPID;
    o.max_isa = isa;
    o.n_threads = 1;
    ts_scorer *s = NULL;
    CHECK_STATUS(ts_scorer_create(m, &o, &s, err), TS_OK);
    return s;
}

/* The same trees (test_double_codes') with their features on every third column, so that
 * the used columns are fewer than half of those they span: rapid's double quantizers
 * then copy the used columns out of the rows one by one (rapid_template.h) instead of
 * transposing runs of columns. Every ISA level, batches 1 to 150 and 600. */
static void test_double_codes_sparse(void) {
    const uint32_t n_trees = 200, n_rows = 600, used = N_FEAT + N_POOL, spread = 3, cols = spread * used + 1;
    ts_model *m = tsm_model_new(TS_FORMAT_LIGHTGBM);
    ts_error err;
    for (uint32_t t = 0; t < n_trees; t++) {
        tsm_node nodes[16];
        double td[16];
        for (uint32_t i = 0; i < trees[t].n; i++) {
            nodes[i] = trees[t].nodes[i];
            nodes[i].feature *= spread;
            td[i] = trees[t].ref[i].t;
        }
        CHECK_STATUS(tsm_model_add_tree_d(m, trees[t].n, nodes, td, trees[t].n + 1, trees[t].leaves, 1.0, &err), TS_OK);
    }
    CHECK_STATUS(tsm_model_finish(m, &err), TS_OK);
    double *x = malloc((size_t)n_rows * cols * sizeof *x), *ref = malloc(n_rows * sizeof *ref);
    double *got = malloc(n_rows * sizeof *got), row[N_FEAT + N_POOL];
    for (uint32_t r = 0; r < n_rows; r++) {
        for (uint32_t j = 0; j < used; j++) row[j] = random_input(j);
        for (uint32_t c = 0; c < cols; c++) x[(size_t)r * cols + c] = c % spread == 0 && c / spread < used ? row[c / spread] : NAN;
        ref[r] = ref_score(n_trees, row);
    }
    static const ts_isa isas[] = {TS_ISA_SCALAR, TS_ISA_AVX2, TS_ISA_AVX512};
    for (size_t i = 0; i < sizeof isas / sizeof isas[0]; i++) {
        if (isas[i] > ts_cpu_isa()) continue;
        ts_scorer *s = rapid_at(m, isas[i], &err);
        if (!s) continue;
        uint32_t bad = 0;
        for (uint32_t n = 1; n <= 151; n++) { /* rows [r0, r0 + n); 151: all of them */
            const uint32_t nn = n <= 150 ? n : n_rows, r0 = (n * 7) % (n_rows - nn + 1);
            CHECK_STATUS(ts_scorer_score_f64(s, x + (size_t)r0 * cols, nn, cols, cols, got, &err), TS_OK);
            for (uint32_t r = 0; r < nn; r++)
                if (memcmp(&got[r], &ref[r0 + r], sizeof *got) != 0 && bad++ < 3)
                    fprintf(stderr, "rapid sparse %s batch %u row %u: %.17g != %.17g\n", ts_isa_name(isas[i]), nn, r0 + r,
                            got[r], ref[r0 + r]);
        }
        CHECK_MSG(bad == 0, "rapid sparse %s: %u rows differ from LightGBM's double decisions", ts_isa_name(isas[i]), bad);
        ts_scorer_free(s);
    }
    ts_model_free(m);
    free(x);
    free(ref);
    free(got);
}

/* Float thresholds inside LightGBM's zero range, as models built in memory may have them
 * (LightGBM's own never do), under double inputs around -Z, 0 and Z: rapid codes the
 * zero range as 0.0 there, and the doubles just below -Z from the doubles (quant.h "Gap
 * floats", `snap`). Every ISA level, batches 1 to 70. */
static void test_zero_range_floats(void) {
    static const float thr[] = {-TSM_ZERO_RANGE, -0.0f, 0.0f, 1e-40f, -1e-40f, 5e-36f, -5e-36f, TSM_ZERO_RANGE, -1e-30f};
    const double zd = (double)TSM_ZERO_RANGE;
    const double vals[] = {nextafter(-zd, -INFINITY), -zd, nextafter(-zd, INFINITY), -1e-36, -0.0, 0.0, 1e-36, 1e-40,
                           nextafter(1e-40, INFINITY), zd, nextafter(zd, INFINITY), nextafter(zd, -INFINITY), -1e-30,
                           1e-30, NAN, nextafter(-1e-30, -INFINITY), nextafter((double)-1e-30f, INFINITY)};
    const uint32_t n_trees = 30, n_rows = 2000, cols = 2;
    ts_model *m = tsm_model_new(TS_FORMAT_LIGHTGBM);
    ts_error err;
    for (uint32_t t = 0; t < n_trees; t++) {
        ref_tree *rt = &trees[t];
        rt->n = 1 + below(6);
        double td[16];
        for (uint32_t i = 0; i < rt->n; i++) {
            const float f = thr[below(sizeof thr / sizeof thr[0])];
            rt->ref[i] = (ref_node){(double)f, below(2) ? MT_NAN : MT_NONE, (int)below(2)};
            uint32_t flags = rt->ref[i].mt == MT_NONE ? (0.0 <= (double)f ? TSM_MISSING_LEFT : 0)
                                                      : (rt->ref[i].default_left ? TSM_MISSING_LEFT : 0);
            rt->nodes[i] = (tsm_node){f, below(2), ~(int32_t)i, i + 1 < rt->n ? (int32_t)(i + 1) : ~(int32_t)rt->n, flags};
            td[i] = (double)f;
        }
        for (uint32_t l = 0; l <= rt->n; l++) rt->leaves[l] = (double)below(1000) / 8.0 - 60.0;
        CHECK_STATUS(tsm_model_add_tree_d(m, rt->n, rt->nodes, td, rt->n + 1, rt->leaves, 1.0, &err), TS_OK);
    }
    CHECK_STATUS(tsm_model_finish(m, &err), TS_OK);
    double *x = malloc((size_t)n_rows * cols * sizeof *x), *ref = malloc(n_rows * sizeof *ref);
    double *got = malloc(n_rows * sizeof *got);
    for (uint32_t r = 0; r < n_rows; r++) {
        for (uint32_t j = 0; j < cols; j++) x[r * cols + j] = vals[below(sizeof vals / sizeof vals[0])];
        ref[r] = ref_score(n_trees, x + r * cols);
    }
    static const ts_isa isas[] = {TS_ISA_SCALAR, TS_ISA_AVX2, TS_ISA_AVX512};
    for (size_t i = 0; i < sizeof isas / sizeof isas[0]; i++) {
        if (isas[i] > ts_cpu_isa()) continue;
        ts_scorer *s = rapid_at(m, isas[i], &err);
        if (!s) continue;
        uint32_t bad = 0;
        for (uint32_t n = 1; n <= 70; n++) {
            const uint32_t r0 = (n * 13) % (n_rows - n + 1);
            CHECK_STATUS(ts_scorer_score_f64(s, x + (size_t)r0 * cols, n, cols, cols, got, &err), TS_OK);
            for (uint32_t r = 0; r < n; r++)
                if (memcmp(&got[r], &ref[r0 + r], sizeof *got) != 0 && bad++ < 3)
                    fprintf(stderr, "rapid zero range %s batch %u row %u: %.17g != %.17g\n", ts_isa_name(isas[i]), n,
                            r0 + r, got[r], ref[r0 + r]);
        }
        CHECK_MSG(bad == 0, "rapid zero range %s: %u rows differ from LightGBM's double decisions", ts_isa_name(isas[i]),
                  bad);
        ts_scorer_free(s);
    }
    ts_model_free(m);
    free(x);
    free(ref);
    free(got);
}

#if defined(__x86_64__) || defined(__i386__)
/* The caller's floating-point state does not change a score, and is left as it was
 * (platform/fpenv.h): rounding down, up and toward zero, each with flush-to-zero and
 * denormals-are-zero on, set by the caller before the call. The model's leaf values are
 * tenths of multiples of 1/8, so that its sums round: under the caller's rounding mode
 * they would differ from LightGBM's, which add in tree order under the default one, as
 * ref_score does and every engine must. (Flush-to-zero and denormals-are-zero could only
 * matter below 2^-126, where LightGBM's rows read zero: |x| <= 1e-35 is zero to it.)
 * Every engine with a double path, at every ISA level of this CPU, batches 1 to 40 and
 * 300, on one thread and on two (the pool's helpers, which may have been started under
 * such a state). */
/* ts_scorer_score_f64 of every engine at every ISA level on m under the caller's states
 * above: the scores must be ref's, and the state left as it was. */
static void check_fp_states(const char *what, const ts_model *m, const double *x, const double *ref, uint32_t n_rows,
                            uint32_t cols) {
    double *got = malloc(n_rows * sizeof *got);
    static const ts_engine engines[] = {TS_ENGINE_NAIVE, TS_ENGINE_QS,        TS_ENGINE_RAPID,
                                        TS_ENGINE_TREES_SIMD, TS_ENGINE_OBLIVIOUS, TS_ENGINE_DEEP};
    static const ts_isa isas[] = {TS_ISA_SCALAR, TS_ISA_AVX2, TS_ISA_AVX512};
    static const unsigned modes[] = {0x2000u, 0x4000u, 0x6000u}; /* MXCSR RC: down, up, toward zero */
    const unsigned saved = _mm_getcsr();
    ts_error err;
    for (size_t e = 0; e < sizeof engines / sizeof engines[0]; e++)
        for (size_t i = 0; i < sizeof isas / sizeof isas[0]; i++) {
            if (isas[i] > ts_cpu_isa()) continue;
            ts_scorer_options o;
            ts_scorer_options_init(&o);
            o.engine = engines[e], o.max_isa = isas[i], o.n_threads = 1 + (e + i) % 2;
            ts_scorer *s = NULL;
            CHECK_STATUS(ts_scorer_create(m, &o, &s, &err), TS_OK);
            if (!s) continue;
            uint32_t bad = 0, changed = 0;
            for (size_t k = 0; k < sizeof modes / sizeof modes[0]; k++) {
                const unsigned state = (saved & ~0x6000u) | modes[k] | 0x8040u; /* and FTZ, DAZ */
                for (uint32_t n = 1; n <= 41; n++) {
                    const uint32_t len = n == 41 || n > n_rows ? n_rows : n, r0 = (n * 7) % (n_rows - len + 1);
                    _mm_setcsr(state);
                    ts_status st = ts_scorer_score_f64(s, x + (size_t)r0 * cols, len, cols, cols, got, &err);
                    const unsigned after = _mm_getcsr();
                    _mm_setcsr(saved);
                    CHECK_STATUS(st, TS_OK);
                    changed += (after & ~0x3Fu) != (state & ~0x3Fu); /* the flags may gather */
                    for (uint32_t r = 0; r < len; r++)
                        if (memcmp(&got[r], &ref[r0 + r], sizeof *got) != 0 && bad++ < 3)
                            fprintf(stderr, "%s: %s %s rounding %zu batch %u row %u (%.17g): %.17g != %.17g\n", what,
                                    ts_engine_name(engines[e]), ts_isa_name(isas[i]), k, len, r0 + r, x[(size_t)(r0 + r) * cols],
                                    got[r], ref[r0 + r]);
                }
            }
            CHECK_MSG(bad == 0, "%s: %s %s: %u rows differ under the caller's states", what, ts_engine_name(engines[e]),
                      ts_isa_name(isas[i]), bad);
            CHECK_MSG(changed == 0, "%s: %s %s: the caller's MXCSR changed by %u calls", what,
                      ts_engine_name(engines[e]), ts_isa_name(isas[i]), changed);
            ts_scorer_free(s);
        }
    free(got);
}

static void test_caller_fp_state(void) {
    const uint32_t n_trees = 120, n_rows = 300;
    double *x = NULL, *ref = NULL;
    leaf_scale = 0.1;
    ts_model *m = double_codes_model(n_trees, n_rows, &x, &ref);
    leaf_scale = 1.0;
    check_fp_states("crowded gaps", m, x, ref, n_rows, N_FEAT + N_POOL + 1);
    ts_model_free(m);
    free(x);
    free(ref);
}
#endif

/* ---- models that compare floats: double rows rounded to nearest ---------------------- */

/* A model that converts its input to float32 first (XGBoost, scikit-learn, ONNX: not
 * compares_double) scores a double row as the float row (float)x, to nearest: engines
 * that read the doubles themselves (rapid's kernel_near) must round each value so,
 * whatever the caller's rounding mode. Features get 3 to 300 distinct float thresholds
 * (rapid's quantizer codes up to 4, 31, 64 and more thresholds differently); the inputs
 * crowd where rounding decides: halfway between two adjacent floats (ties to even), a
 * double either side of halfway, past FLT_MAX (to infinity or to FLT_MAX), below the
 * smallest subnormal, NaN. */
#define NEAR_FEAT 5
static const uint32_t near_count[NEAR_FEAT] = {3, 20, 40, 100, 300};
static float near_thr[NEAR_FEAT][300];

static void near_thresholds(void) {
    static const float base[NEAR_FEAT] = {0.75f, 12345.678f, -3.0e-39f, 3.0e38f, 1.0f};
    for (uint32_t f = 0; f < NEAR_FEAT; f++) {
        float t = base[f];
        for (uint32_t i = 0; i < near_count[f]; i++) { /* runs of adjacent floats, then a jump */
            near_thr[f][i] = t;
            t = below(4) ? nextafterf(t, INFINITY) : t + fabsf(t) / 64.0f + 1e-40f;
        }
    }
}

static double near_input(uint32_t f) {
    const float a = near_thr[f][below(near_count[f])], b = nextafterf(a, INFINITY);
    const double mid = ((double)a + (double)b) / 2.0;
    switch (below(12)) {
    case 0: return NAN;
    case 1: return (double)a;
    case 2: return nextafter(mid, INFINITY);
    case 3: return nextafter(mid, -INFINITY);
    case 4: return (below(2) ? 1.0 : -1.0) * (below(2) ? 3.4028235677973366e38 : 3.40282357e38 * (1 + below(3)));
    case 5: return (below(2) ? 1.0 : -1.0) * ldexp(1.0, -150 - (int)below(3)) * (1.0 + below(2) / 4.0);
    default: return mid; /* ties to even: half go up, half down */
    }
}

/* A random split on the NEAR_FEAT features, feature f on column spread * f. */
static tsm_node near_split(uint32_t spread) {
    const uint32_t f = below(NEAR_FEAT);
    return (tsm_node){near_thr[f][below(near_count[f])], spread * f, 0, 0, below(2) ? TSM_MISSING_LEFT : 0};
}

/* The nodes of an oblivious tree of depth d - level (every node of a level the same
 * split, level[i]) in preorder from nodes[*n], leaves numbered from *leaf; its root. */
static int32_t oblivious_nodes(const tsm_node *level, uint32_t at, uint32_t d, tsm_node *nodes, uint32_t *n,
                               uint32_t *leaf) {
    if (at == d) return ~(int32_t)(*leaf)++;
    const uint32_t i = (*n)++;
    nodes[i] = level[at];
    nodes[i].left = oblivious_nodes(level, at + 1, d, nodes, n, leaf);
    nodes[i].right = oblivious_nodes(level, at + 1, d, nodes, n, leaf);
    return (int32_t)i;
}

/* n_trees chains of up to 15 nodes (oblivious: CatBoost's trees of 1 to 6 levels) on the
 * NEAR_FEAT features, feature f on column spread * f; rows of cols values, x as doubles
 * and xf = (float)x. */
static ts_model *near_model(uint32_t n_trees, int oblivious, uint32_t spread, uint32_t n_rows, uint32_t cols, double *x,
                            float *xf) {
    ts_model *m = tsm_model_new(oblivious ? TS_FORMAT_CATBOOST : TS_FORMAT_XGBOOST_JSON);
    ts_error err;
    near_thresholds();
    for (uint32_t t = 0; t < n_trees; t++) {
        tsm_node nodes[63], level[6];
        double leaves[64];
        uint32_t n = 1 + below(15), leaf = 0;
        if (oblivious) {
            const uint32_t d = 1 + below(6);
            for (uint32_t i = 0; i < d; i++) level[i] = near_split(spread);
            n = 0;
            oblivious_nodes(level, 0, d, nodes, &n, &leaf);
        } else
            for (uint32_t i = 0; i < n; i++) {
                nodes[i] = near_split(spread);
                nodes[i].left = ~(int32_t)i, nodes[i].right = i + 1 < n ? (int32_t)(i + 1) : ~(int32_t)n;
            }
        for (uint32_t l = 0; l <= n; l++) leaves[l] = (double)below(1000) / 8.0 - 60.0;
        CHECK_STATUS(tsm_model_add_tree(m, n, nodes, n + 1, leaves, 1.0, &err), TS_OK);
    }
    CHECK_STATUS(tsm_model_finish(m, &err), TS_OK);
    CHECK(!m->compares_double);
    for (size_t i = 0; i < (size_t)n_rows * cols; i++) {
        x[i] = i % cols % spread == 0 && i % cols / spread < NEAR_FEAT ? near_input((uint32_t)(i % cols / spread))
                                                                      : (double)below(100) - 50.5;
        xf[i] = (float)x[i];
    }
    return m;
}

/* Every engine that reads doubles (and the default scorer) against naive on (float)x:
 * dense columns and every third column (rapid's run and column-by-column copies), every
 * ISA level, batches 1 to 150 and 600; and on x86 under the caller's rounding modes.
 * Chains (rapid, deep) and oblivious trees (the oblivious engine, through the coder). */
static void test_float_models_near(void) {
    const uint32_t n_trees = 300, n_rows = 600;
    for (uint32_t v = 0; v < 4; v++) {
        const int oblivious = v >= 2;
        const uint32_t spread = v % 2 ? 3 : 1, cols = spread * (NEAR_FEAT - 1) + 2;
        double *x = malloc((size_t)n_rows * cols * sizeof *x), *ref = malloc(n_rows * sizeof *ref),
               *got = malloc(n_rows * sizeof *got), *alt = malloc(n_rows * sizeof *alt);
        float *xf = malloc((size_t)n_rows * cols * sizeof *xf);
        ts_model *m = near_model(n_trees, oblivious, spread, n_rows, cols, x, xf);
        ts_error err;
        ts_scorer_options o;
        ts_scorer_options_init(&o);
        o.engine = TS_ENGINE_NAIVE;
        ts_scorer *s = NULL;
        CHECK_STATUS(ts_scorer_create(m, &o, &s, &err), TS_OK);
        if (s) CHECK_STATUS(ts_scorer_score(s, xf, n_rows, cols, cols, ref, &err), TS_OK);
        /* the test means something only if rounding toward zero would change scores */
        uint32_t differs = 0;
        for (size_t i = 0; i < (size_t)n_rows * cols; i++)
            if (fabs((double)xf[i]) > fabs(x[i])) xf[i] = nextafterf(xf[i], 0.0f);
        if (s) CHECK_STATUS(ts_scorer_score(s, xf, n_rows, cols, cols, alt, &err), TS_OK);
        for (uint32_t r = 0; r < n_rows; r++) differs += alt[r] != ref[r];
        CHECK_MSG(differs > n_rows / 4, "only %u of %u rows differ when rounded toward zero", differs, n_rows);
        ts_scorer_free(s);
        static const ts_engine engines[] = {TS_ENGINE_RAPID, TS_ENGINE_TREES_SIMD, TS_ENGINE_QS, TS_ENGINE_AUTO,
                                            TS_ENGINE_OBLIVIOUS, TS_ENGINE_DEEP};
        static const ts_isa isas[] = {TS_ISA_SCALAR, TS_ISA_AVX2, TS_ISA_AVX512};
        for (size_t e = 0; e < sizeof engines / sizeof engines[0]; e++)
            for (size_t i = 0; i < sizeof isas / sizeof isas[0]; i++) {
                if (isas[i] > ts_cpu_isa() || (engines[e] == TS_ENGINE_OBLIVIOUS && !oblivious)) continue;
                o.engine = engines[e], o.max_isa = isas[i], o.n_threads = 1;
                s = NULL;
                CHECK_STATUS(ts_scorer_create(m, &o, &s, &err), TS_OK);
                if (!s) continue;
                uint32_t bad = 0;
                for (uint32_t n = 1; n <= 151; n++) { /* rows [r0, r0 + n); 151: all of them */
                    const uint32_t len = n == 151 ? n_rows : n, r0 = (n * 7) % (n_rows - len + 1);
                    CHECK_STATUS(ts_scorer_score_f64(s, x + (size_t)r0 * cols, len, cols, cols, got, &err), TS_OK);
                    for (uint32_t r = 0; r < len; r++)
                        if (memcmp(&got[r], &ref[r0 + r], sizeof *got) != 0 && bad++ < 3)
                            fprintf(stderr, "%s %s case %u batch %u row %u: %.17g != %.17g\n",
                                    ts_engine_name(engines[e]), ts_isa_name(isas[i]), v, len, r0 + r, got[r],
                                    ref[r0 + r]);
                }
                CHECK_MSG(bad == 0, "%s %s case %u: %u rows differ from (float)x's scores", ts_engine_name(engines[e]),
                          ts_isa_name(isas[i]), v, bad);
                ts_scorer_free(s);
            }
#if defined(__x86_64__) || defined(__i386__)
        static const char *const what[] = {"float chains, dense", "float chains, sparse", "oblivious, dense",
                                           "oblivious, sparse"};
        check_fp_states(what[v], m, x, ref, n_rows, cols);
#endif
        ts_model_free(m);
        free(x), free(ref), free(got), free(alt), free(xf);
    }
}

/* XGBoost models convert double inputs to float32 first: score_f64 == score on (float)x. */
static void test_float_models_cast(void) {
    ts_model *m = NULL;
    ts_error err;
    CHECK_STATUS(ts_model_load_file(TS_TEST_DATA_DIR "/models/xgb_small_logistic.json", TS_FORMAT_AUTO, &m, &err), TS_OK);
    if (!m) return;
    ts_scorer *s = NULL;
    CHECK_STATUS(ts_scorer_create(m, NULL, &s, &err), TS_OK);
    uint32_t cols = ts_scorer_n_features(s), n = 500;
    double *x = malloc((size_t)n * cols * sizeof *x), *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b);
    float *xf = malloc((size_t)n * cols * sizeof *xf);
    for (size_t i = 0; i < (size_t)n * cols; i++) {
        x[i] = below(10) == 0 ? NAN : (double)below(100000) / 997.0 - 20.0;
        xf[i] = (float)x[i];
    }
    CHECK_STATUS(ts_scorer_score_f64(s, x, n, cols, cols, a, &err), TS_OK);
    CHECK_STATUS(ts_scorer_score(s, xf, n, cols, cols, b, &err), TS_OK);
    CHECK(memcmp(a, b, n * sizeof *a) == 0);
    CHECK_STATUS(ts_scorer_score_f64(s, x, n, cols - 1, cols, a, &err), cols ? TS_ERR_SHAPE : TS_OK);
    ts_scorer_free(s);
    ts_model_free(m);
    free(x);
    free(a);
    free(b);
    free(xf);
}

int main(void) {
    RUN_TEST(test_crowded_gaps);
    RUN_TEST(test_double_codes);
    RUN_TEST(test_double_codes_sparse);
    RUN_TEST(test_zero_range_floats);
    RUN_TEST(test_float_models_cast);
    RUN_TEST(test_float_models_near);
#if defined(__x86_64__) || defined(__i386__)
    RUN_TEST(test_caller_fp_state);
#endif
    return check_summary("test_f64");
}
