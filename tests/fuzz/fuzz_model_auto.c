/* fuzz_model_auto.c: libFuzzer target for format detection + all loaders, and a differential fuzzer of the engines. */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/*
 * The input is loaded with TS_FORMAT_AUTO. When a model loads, rows are built from the
 * model's own thresholds (each exactly, one ulp above and below), the special values
 * LightGBM and XGBoost treat specially (NaN, +-0, +-1e-35, +-inf) and random floats,
 * and then scored by the naive engine, the QuickScorer engines (qs, and vqs at a random
 * ISA level, both with random block sizes), vpred, block-naive and block-vpred (random
 * lanes and blocks), rapid (random ISA level and blocks) and a reference sum computed
 * here from tsm_tree_exit_leaf. All must
 * agree bit for bit (two NaNs of any payload count as equal); any difference aborts.
 * (ifelse is left out: a compile per input would starve the fuzzer; its own tests and
 * the conformance suite cover it.)
 */

#define MAX_CELLS (1u << 22) /* floats per scoring batch: 16 MiB */
#define MAX_ROWS 37u

/* xorshift64*, seeded from the input so every input gives its own rows. */
static uint64_t rng_next(uint64_t *s) {
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 0x2545F4914F6CDD1DULL;
}

static uint64_t seed_of(const uint8_t *data, size_t size) {
    uint64_t h = 0xcbf29ce484222325ULL; /* FNV-1a */
    for (size_t i = 0; i < size; i++) h = (h ^ data[i]) * 0x100000001b3ULL;
    return h ? h : 1;
}

/* A random node of a random tree, or NULL when the model has no internal node. */
static const tsm_node *random_node(const ts_model *m, uint64_t *s) {
    if (m->n_trees == 0) return NULL;
    for (int tries = 0; tries < 4; tries++) {
        const tsm_tree *t = &m->trees[rng_next(s) % m->n_trees];
        if (t->n_nodes) return &t->nodes[rng_next(s) % t->n_nodes];
    }
    return NULL;
}

/* A value near a threshold (t, one ulp above, one ulp below). */
static float near_threshold(float t, uint64_t *s) {
    switch (rng_next(s) % 3) {
    case 0: return t;
    case 1: return nextafterf(t, INFINITY);
    default: return nextafterf(t, -INFINITY);
    }
}

static float special_value(const ts_model *m, uint64_t *s) {
    uint64_t k = rng_next(s) % 12;
    switch (k) {
    case 0: return NAN;
    case 1: return 0.0f;
    case 2: return -0.0f;
    case 3: return 1e-35f;
    case 4: return -1e-35f;
    case 5: return nextafterf(1e-35f, INFINITY);
    case 6: return -nextafterf(1e-35f, INFINITY);
    case 7: return INFINITY;
    case 8: return -INFINITY;
    case 9: {
        uint32_t bits = (uint32_t)rng_next(s);
        float f;
        memcpy(&f, &bits, sizeof f);
        return f != f ? 1.0f : f;
    }
    default: {
        const tsm_node *n = random_node(m, s);
        return n ? near_threshold(n->threshold, s) : 0.5f;
    }
    }
}

/* A value next to what node n tests: its threshold, or for a category set a category
 * around the set's range (negative, fractional and past the bitset included). */
static float near_value(const tsm_node *n, uint64_t *s) {
    if (!(n->flags & TSM_CATEGORICAL)) return near_threshold(n->threshold, s);
    float c = (float)((int)(rng_next(s) % 80) - 4);
    return rng_next(s) % 4 == 0 ? c + 0.5f : c;
}

/* Fills the rows: each cell a special value, then each row gets a few cells set next
 * to the threshold of a random node on that node's own feature. */
static void build_rows(const ts_model *m, float *x, size_t n_rows, size_t stride, size_t n_cols, uint64_t *s) {
    for (size_t r = 0; r < n_rows; r++) {
        float *row = x + r * stride;
        for (size_t c = 0; c < stride; c++) row[c] = c < n_cols ? special_value(m, s) : NAN;
        for (int k = 0; k < 16; k++) {
            const tsm_node *n = random_node(m, s);
            if (n && !(n->flags & TSM_DERIVED) && n->feature < n_cols) row[n->feature] = near_value(n, s);
        }
    }
}

/* Whether row value v goes left at node i: category sets by their rule (on the float
 * widened, or on the double for a library comparing doubles), numbers by x <= t. */
static int ref_left_f(const ts_model *m, const tsm_node *n, float v) {
    if (n->flags & TSM_CATEGORICAL) return tsm_catset_goes_left(m, &m->catsets[(uint32_t)n->threshold], (double)v);
    return tsm_node_goes_left(n, v);
}

/* The value node n tests: its column's, or its derived column's (model/derived.h: the
 * table row of the row's projection). */
static float node_value(const ts_model *m, const tsm_node *n, const float *row) {
    if (!(n->flags & TSM_DERIVED)) return row[n->feature];
    const tsm_derived *d = &m->derived[n->feature];
    return d->values[tsm_ctrtab_row(&m->ctrtabs[d->tab], m->catmaps, row)];
}

/* The base of output k (forest.h: output_base when there are several). */
static double ref_base(const ts_model *m, uint32_t k) {
    return m->n_outputs > 1 ? m->output_base[k] : m->base_score;
}

/* The definition of the score (forest.h): score k = base k + the terms of output k's
 * trees, in tree order. */
static double reference_score(const ts_model *m, const float *row, uint32_t k) {
    double sum = ref_base(m, k);
    for (uint32_t t = 0; t < m->n_trees; t++) {
        const tsm_tree *tr = &m->trees[t];
        if (tr->output != k) continue;
        int32_t c = tr->n_nodes ? 0 : -1;
        while (c >= 0) c = ref_left_f(m, &tr->nodes[c], node_value(m, &tr->nodes[c], row)) ? tr->nodes[c].left : tr->nodes[c].right;
        sum += tr->weight * tr->leaf_values[~c];
    }
    return sum;
}

/* Double rows as the library sees them: LightGBM compares in double with the file's
 * thresholds (after dropping |x| <= 1e-35 to 0) and decides categories on the double;
 * the others convert to float first. */
static int left_f64(const ts_model *m, const tsm_node *n, double t, double v) {
    if (n->flags & TSM_CATEGORICAL) return tsm_catset_goes_left(m, &m->catsets[(uint32_t)n->threshold], v);
    if (fabs(v) <= (double)TSM_ZERO_RANGE) v = 0.0;
    if (v != v || ((n->flags & TSM_ZERO_IS_MISSING) && v == 0.0)) return (n->flags & TSM_MISSING_LEFT) != 0;
    return v <= t;
}

static double reference_score_f64(const ts_model *m, const double *row, float *tmp, size_t n_cols, uint32_t k) {
    if (!m->compares_double) {
        for (size_t c = 0; c < n_cols; c++) tmp[c] = (float)row[c];
        return reference_score(m, tmp, k);
    }
    double sum = ref_base(m, k);
    for (uint32_t t = 0; t < m->n_trees; t++) {
        const tsm_tree *tr = &m->trees[t];
        if (tr->output != k) continue;
        int32_t c = tr->n_nodes ? 0 : -1;
        while (c >= 0) {
            const tsm_node *n = &tr->nodes[c];
            double thr = tr->thresholds_d ? tr->thresholds_d[c] : (double)n->threshold;
            c = left_f64(m, n, thr, row[n->feature]) ? n->left : n->right;
        }
        sum += tr->weight * tr->leaf_values[~c];
    }
    return sum;
}

/* A double next to a node's double threshold: on it, a double step away, inside its
 * float gap, or on the float threshold. */
static double near_threshold_d(const tsm_tree *tr, uint32_t i, uint64_t *s) {
    double t = tr->thresholds_d ? tr->thresholds_d[i] : (double)tr->nodes[i].threshold;
    double lo = (double)tr->nodes[i].threshold, hi = (double)nextafterf(tr->nodes[i].threshold, INFINITY);
    switch (rng_next(s) % 6) {
    case 0: return t;
    case 1: return nextafter(t, INFINITY);
    case 2: return nextafter(t, -INFINITY);
    case 3: return lo + (hi - lo) / (double)(2 + rng_next(s) % 6);
    case 4: return lo;
    default: return (t + hi) / 2;
    }
}

static void build_rows_f64(const ts_model *m, const float *x, double *xd, size_t n_rows, size_t stride,
                           size_t n_cols, uint64_t *s) {
    for (size_t i = 0; i < n_rows * stride; i++) xd[i] = (double)x[i];
    if (m->n_trees == 0) return;
    for (size_t r = 0; r < n_rows; r++)
        for (int k = 0; k < 16; k++) {
            const tsm_tree *tr = &m->trees[rng_next(s) % m->n_trees];
            if (tr->n_nodes == 0) continue;
            uint32_t i = (uint32_t)(rng_next(s) % tr->n_nodes);
            if (tr->nodes[i].feature < n_cols) xd[r * stride + tr->nodes[i].feature] = near_threshold_d(tr, i, s);
        }
}

static int same_bits(double a, double b) {
    if (a != a && b != b) return 1;
    return memcmp(&a, &b, sizeof a) == 0;
}

/* isa, tau, delta and lanes as for ts_scorer_options (0: defaults). */
static ts_scorer *make_scorer_l(const ts_model *m, ts_engine engine, ts_isa isa, uint32_t tau, uint32_t delta,
                                uint32_t lanes) {
    ts_scorer_options o;
    ts_scorer_options_init(&o);
    o.engine = engine;
    o.n_threads = 1;
    o.max_isa = isa;
    o.tau = tau;
    o.delta = delta;
    o.lanes = lanes;
    ts_scorer *sc = NULL;
    ts_error err;
    memset(&err, 0, sizeof err);
    ts_status st = ts_scorer_create(m, &o, &sc, &err);
    if (st != TS_OK) {
        if (sc) fuzz_die("scorer not NULL after a failed create", &err);
        fuzz_check_error(st, &err, 0);
        return NULL;
    }
    if (ts_scorer_engine(sc) != engine) fuzz_die("scorer runs another engine than asked", NULL);
    if (ts_scorer_n_features(sc) != m->n_features) fuzz_die("scorer n_features != model n_features", NULL);
    return sc;
}

static ts_scorer *make_scorer(const ts_model *m, ts_engine engine, ts_isa isa, uint32_t tau, uint32_t delta) {
    return make_scorer_l(m, engine, isa, tau, delta, 0);
}

static void score_or_die(const ts_scorer *sc, const float *x, size_t n_rows, size_t n_cols, size_t stride,
                         double *out) {
    ts_error err;
    memset(&err, 0, sizeof err);
    if (ts_scorer_score(sc, x, n_rows, n_cols, stride, out, &err) != TS_OK)
        fuzz_die("ts_scorer_score failed on a valid batch", &err);
}

static void report_diff(const char *what, size_t row, double a, double b) {
    unsigned long long ba, bb;
    memcpy(&ba, &a, sizeof ba);
    memcpy(&bb, &b, sizeof bb);
    fprintf(stderr, "%s differ at score %zu (row-major): %.17g (%016llx) vs %.17g (%016llx)\n", what, row, a, ba, b, bb);
    abort();
}

static void differential(const ts_model *m, const uint8_t *data, size_t size) {
    size_t n_cols = (size_t)m->n_features + 1; /* one extra column must be ignored */
    uint64_t s = seed_of(data, size);
    size_t stride = n_cols + rng_next(&s) % 3;
    size_t n_rows = 1 + rng_next(&s) % MAX_ROWS;
    if (stride * n_rows > MAX_CELLS) n_rows = MAX_CELLS / stride;
    if (n_rows == 0) return;
    ts_scorer *naive = make_scorer(m, TS_ENGINE_NAIVE, TS_ISA_AUTO, 0, 0);
    ts_scorer *qs = make_scorer(m, TS_ENGINE_QS, TS_ISA_AUTO, (uint32_t)(rng_next(&s) % 4), (uint32_t)(rng_next(&s) % 4));
    /* vqs at a random ISA level (lowered to this CPU's) and small random blocks. */
    ts_scorer *vqs = make_scorer(m, TS_ENGINE_VQS, (ts_isa)(1 + rng_next(&s) % (TS_ISA_COUNT - 1)),
                                 (uint32_t)(rng_next(&s) % 4), (uint32_t)(rng_next(&s) % 40));
    /* The walks of the other papers, with random lanes and blocks, and rapid at a random
     * ISA level with random blocks; trees-simd, deep and oblivious at a random ISA level
     * with their own lanes (they score any model: oblivious walks the trees that are not). */
    enum { N_WALKS = 7, FIRST_ANY_ISA = 3, FIRST_OWN_LANES = 4 }; /* indexes into walk_ids */
    static const ts_engine walk_ids[N_WALKS] = {TS_ENGINE_VPRED,      TS_ENGINE_BLOCK_NAIVE, TS_ENGINE_BLOCK_VPRED,
                                                TS_ENGINE_RAPID,      TS_ENGINE_TREES_SIMD,  TS_ENGINE_DEEP,
                                                TS_ENGINE_OBLIVIOUS};
    ts_scorer *walks[N_WALKS];
    int walks_ok = 1;
    for (int w = 0; w < N_WALKS; w++) {
        const int own_lanes = w >= FIRST_OWN_LANES, any_isa = w >= FIRST_ANY_ISA;
        ts_isa isa = any_isa ? (ts_isa)(1 + rng_next(&s) % (TS_ISA_COUNT - 1)) : TS_ISA_AUTO;
        walks[w] = make_scorer_l(m, walk_ids[w], isa, (uint32_t)(rng_next(&s) % 4), (uint32_t)(rng_next(&s) % 40),
                                 own_lanes ? 0 : (uint32_t)(rng_next(&s) % 34));
        walks_ok &= walks[w] != NULL;
    }
    const uint32_t K = m->n_outputs; /* scores per row, row-major */
    double *c = malloc(n_rows * K * sizeof *c);
    float *x = malloc(n_rows * stride * sizeof *x);
    double *a = malloc(n_rows * K * sizeof *a), *b = malloc(n_rows * K * sizeof *b);
    if (naive && qs && vqs && walks_ok && x && a && b && c) {
        build_rows(m, x, n_rows, stride, n_cols, &s);
        score_or_die(naive, x, n_rows, n_cols, stride, a);
        score_or_die(qs, x, n_rows, n_cols, stride, b);
        score_or_die(vqs, x, n_rows, n_cols, stride, c);
        for (size_t i = 0; i < n_rows * K; i++) {
            double ref = reference_score(m, x + (i / K) * stride, (uint32_t)(i % K));
            if (!same_bits(a[i], ref)) report_diff("naive and reference scores", i, a[i], ref);
            if (!same_bits(a[i], b[i])) report_diff("naive and qs scores", i, a[i], b[i]);
            if (!same_bits(a[i], c[i])) report_diff("naive and vqs scores", i, a[i], c[i]);
        }
        for (int w = 0; w < N_WALKS; w++) {
            score_or_die(walks[w], x, n_rows, n_cols, stride, b);
            for (size_t i = 0; i < n_rows * K; i++)
                if (!same_bits(a[i], b[i])) report_diff(ts_engine_name(walk_ids[w]), i, a[i], b[i]);
        }
        /* The same with double rows (ts_scorer_score_f64), against the library's rule. */
        double *xd = malloc(n_rows * stride * sizeof *xd);
        float *tmp = malloc(stride * sizeof *tmp);
        ts_error err;
        if (xd && tmp) {
            build_rows_f64(m, x, xd, n_rows, stride, n_cols, &s);
            if (ts_scorer_score_f64(naive, xd, n_rows, n_cols, stride, a, &err) != TS_OK ||
                ts_scorer_score_f64(qs, xd, n_rows, n_cols, stride, b, &err) != TS_OK)
                fuzz_die("ts_scorer_score_f64 failed on a valid batch", &err);
            for (size_t i = 0; i < n_rows * K; i++) {
                double ref = reference_score_f64(m, xd + (i / K) * stride, tmp, n_cols, (uint32_t)(i % K));
                if (!same_bits(a[i], ref)) report_diff("naive f64 and double reference scores", i, a[i], ref);
                if (!same_bits(a[i], b[i])) report_diff("naive and qs f64 scores", i, a[i], b[i]);
            }
            /* every other engine's double rows (rapid, deep, oblivious and trees-simd read
             * them in place: engine.h score_f64) */
            for (int w = 0; w <= N_WALKS; w++) {
                if (ts_scorer_score_f64(w < N_WALKS ? walks[w] : vqs, xd, n_rows, n_cols, stride, b, &err) != TS_OK)
                    fuzz_die("ts_scorer_score_f64 failed on a valid batch", &err);
                for (size_t i = 0; i < n_rows * K; i++)
                    if (!same_bits(a[i], b[i]))
                        report_diff(w < N_WALKS ? ts_engine_name(walk_ids[w]) : "vqs f64", i, a[i], b[i]);
            }
        }
        free(xd);
        free(tmp);
    }
    free(x);
    free(a);
    free(b);
    free(c);
    ts_scorer_free(naive);
    ts_scorer_free(qs);
    ts_scorer_free(vqs);
    for (int w = 0; w < N_WALKS; w++) ts_scorer_free(walks[w]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    ts_model *m = (ts_model *)(uintptr_t)1;
    ts_error err;
    memset(&err, 0, sizeof err);
    ts_status st = ts_model_load_buffer(data, size, TS_FORMAT_AUTO, FUZZ_NAME, &m, &err);
    if (st != TS_OK) {
        if (m != NULL) fuzz_die("*out not NULL after a failed load", &err);
        fuzz_check_error(st, &err, fuzz_count_lines(data, size));
        fuzz_check_named(st, &err);
        return 0;
    }
    if (!m) fuzz_die("TS_OK but *out is NULL", NULL);
    fuzz_check_model(m);
    differential(m, data, size);
    ts_model_free(m);
    return 0;
}
