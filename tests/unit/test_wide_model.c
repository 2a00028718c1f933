/* test_wide_model.c: a model declaring 16,777,216 features that splits on a few of them is
 * prepared (default options: the planner times the engines) and scores exactly, float and
 * double rows, every engine, within 2 GiB of address space (issue 15, item 4). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "check.h"
#include "model/forest.h"
#include "treescore.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define SANITIZED 1
#endif
#endif

#define WIDE ((size_t)1 << 24)
#define N_ROWS 3

/* Two numerical splits on small ids, one on a large id, a categorical split (categories 1
 * and 2 go left) on another large id; tests/cli/test_wide_model.py has the same model. */
static const char model_text[] =
    "tree\nversion=v4\nnum_class=1\nnum_tree_per_iteration=1\nlabel_index=0\nmax_feature_idx=16777215\n"
    "objective=regression\n\n"
    "Tree=0\nnum_leaves=3\nnum_cat=0\nsplit_feature=2 5\nthreshold=0.5 -1.25\ndecision_type=2 10\n"
    "left_child=1 -1\nright_child=-3 -2\nleaf_value=0.25 -1.5 3\n\n"
    "Tree=1\nnum_leaves=2\nnum_cat=0\nsplit_feature=16777000\nthreshold=0.75\ndecision_type=0\n"
    "left_child=-1\nright_child=-2\nleaf_value=0.125 -0.5\n\n"
    "Tree=2\nnum_leaves=2\nnum_cat=1\nsplit_feature=16777001\nthreshold=0\ndecision_type=1\n"
    "left_child=-1\nright_child=-2\nleaf_value=1 -2\ncat_boundaries=0 1\ncat_threshold=6\n\n"
    "end of trees\n";

/* Row values (feature, value) and the scores LightGBM gives them (the trees by hand). */
typedef struct cell {
    uint32_t f;
    double v;
} cell;
static const cell cells[N_ROWS][5] = {
    {{2, 0.1}, {5, -2.0}, {16777001, 1.0}, {9, 7.0}, {0, 0.0}},
    {{2, 0.7}, {16777000, 1.0}, {16777001, 2.5}, {16777215, 4.0}, {0, 0.0}},
    {{5, 0.3}, {16777000, 0.75}, {16777001, 3.0}, {100000, -1.0}, {0, 0.0}},
};
static const double expected[N_ROWS] = {0.25 + 0.125 + 1.0, 3.0 - 0.5 + 1.0, -1.5 + 0.125 - 2.0};

static ts_model *load(void) {
    ts_model *m = NULL;
    ts_error err;
    ts_status st = ts_model_load_buffer(model_text, sizeof model_text - 1, TS_FORMAT_LIGHTGBM, "wide", &m, &err);
    CHECK_MSG(st == TS_OK, "%s", err.message);
    return m;
}

static float *xf;  /* N_ROWS rows of WIDE floats (64 MiB each) */
static double *xd; /* the same as doubles (128 MiB each) */

static void fill_rows(void) {
    xf = calloc(N_ROWS * WIDE, sizeof *xf);
    xd = calloc(N_ROWS * WIDE, sizeof *xd);
    CHECK(xf && xd);
    for (size_t r = 0; xf && xd && r < N_ROWS; r++)
        for (const cell *c = cells[r]; c->f || c->v != 0.0; c++) {
            xf[r * WIDE + c->f] = (float)c->v;
            xd[r * WIDE + c->f] = c->v;
        }
}

/* Scores the rows through both entry points and compares with the expected scores. */
static void check_scorer(const ts_scorer *s, const char *what) {
    double out[N_ROWS];
    ts_error err;
    CHECK(ts_scorer_n_features(s) == WIDE);
    ts_status st = ts_scorer_score(s, xf, N_ROWS, WIDE, WIDE, out, &err);
    CHECK_MSG(st == TS_OK, "%s: %s", what, err.message);
    for (int r = 0; st == TS_OK && r < N_ROWS; r++) CHECK_MSG(out[r] == expected[r], "%s f32 row %d: %.17g", what, r, out[r]);
    st = ts_scorer_score_f64(s, xd, N_ROWS, WIDE, WIDE, out, &err);
    CHECK_MSG(st == TS_OK, "%s: %s", what, err.message);
    for (int r = 0; st == TS_OK && r < N_ROWS; r++) CHECK_MSG(out[r] == expected[r], "%s f64 row %d: %.17g", what, r, out[r]);
    /* rows wider than the model (stride past n_cols) */
    st = ts_scorer_score(s, xf, 1, WIDE, WIDE * 2, out, &err);
    CHECK_MSG(st == TS_OK && out[0] == expected[0], "%s: one row, wide stride", what);
}

static void test_default_options(void) {
    ts_model *m = load();
    if (!m) return;
    ts_model_info info;
    CHECK(ts_model_get_info(m, &info, NULL) == TS_OK && info.n_features == WIDE && info.n_features_used == 4);
    ts_scorer *s = NULL;
    ts_error err;
    ts_status st = ts_scorer_create(m, NULL, &s, &err);
    CHECK_MSG(st == TS_OK, "ts_scorer_create(default options): %s", err.message);
    if (s) check_scorer(s, "auto");
    ts_scorer_free(s);
    /* the planner timing the caller's rows, full width */
    ts_scorer_options o;
    ts_scorer_options_init(&o);
    o.sample = xf;
    o.sample_rows = N_ROWS;
    o.sample_stride = WIDE;
    st = ts_scorer_create(m, &o, &s, &err);
    CHECK_MSG(st == TS_OK, "ts_scorer_create(sample): %s", err.message);
    if (s) check_scorer(s, "auto with sample");
    ts_scorer_free(s);
    ts_model_free(m);
}

static void test_every_engine(void) {
    ts_model *m = load();
    if (!m) return;
    for (int e = TS_ENGINE_NAIVE; e < TS_ENGINE_COUNT; e++) {
        if (e == TS_ENGINE_IFELSE) continue; /* compiles: slow, and covered by its own tests */
        ts_scorer_options o;
        ts_scorer_options_init(&o);
        o.engine = (ts_engine)e;
        ts_scorer *s = NULL;
        ts_error err;
        ts_status st = ts_scorer_create(m, &o, &s, &err);
        if (st == TS_ERR_ENGINE_UNAVAILABLE) continue;
        CHECK_MSG(st == TS_OK, "%s: %s", ts_engine_name((ts_engine)e), err.message);
        if (s) check_scorer(s, ts_engine_name((ts_engine)e));
        ts_scorer_free(s);
    }
    ts_model_free(m);
}

/* tsm_model_renumber, which the scorer applies to its views of such a model: the model
 * then reads 4 columns. */
static void test_renumber(void) {
    ts_model *m = load();
    if (!m) return;
    uint32_t *ids = NULL, n = 0;
    CHECK(tsm_used_features(m, &ids, &n, NULL) == TS_OK);
    CHECK(n == 4 && ids[0] == 2 && ids[1] == 5 && ids[2] == 16777000 && ids[3] == 16777001);
    CHECK(tsm_features_are_sparse(m->n_features, n));
    CHECK(!tsm_features_are_sparse(136, 40) && !tsm_features_are_sparse(5000, 1000));
    tsm_model_renumber(m, ids, n, m->n_features);
    CHECK(m->n_features == 4 && m->n_features_declared == 0 && m->catsets[0].feature == 3);
    ts_scorer *s = NULL;
    CHECK(ts_scorer_create(m, NULL, &s, NULL) == TS_OK);
    double out[N_ROWS], row[N_ROWS][4];
    for (int r = 0; r < N_ROWS; r++)
        for (uint32_t j = 0; j < 4; j++) row[r][j] = xd[(size_t)r * WIDE + ids[j]];
    CHECK(s && ts_scorer_score_f64(s, &row[0][0], N_ROWS, 4, 4, out, NULL) == TS_OK);
    for (int r = 0; s && r < N_ROWS; r++) CHECK_SAME_DOUBLE(out[r], expected[r]);
    ts_scorer_free(s);
    free(ids);
    ts_model_free(m);
}

/* The CLI's way (cli_choose_columns): ts_scorer_columns_for names the columns the scorer
 * reads, and a scorer created with packed_columns scores rows of those alone, every
 * engine, float and double rows: the same scores, the model unchanged. The model above
 * has a categorical split (the general path); a copy without it takes the plain path on
 * a renumbered view. */
static void check_packed(ts_model *m, const double *want) {
    uint32_t *ids = NULL, n = 0;
    ts_error err;
    CHECK(ts_scorer_columns_for(m, &ids, &n, &err) == TS_OK);
    CHECK(n == 4 && ids && ids[0] == 2 && ids[1] == 5 && ids[2] == 16777000 && ids[3] == 16777001);
    if (!ids) return;
    float rf[N_ROWS][4];
    double rd[N_ROWS][4];
    for (int r = 0; r < N_ROWS; r++)
        for (uint32_t j = 0; j < 4; j++) {
            rf[r][j] = xf[(size_t)r * WIDE + ids[j]];
            rd[r][j] = xd[(size_t)r * WIDE + ids[j]];
        }
    for (int e = TS_ENGINE_AUTO; e < TS_ENGINE_COUNT; e++) {
        if (e == TS_ENGINE_IFELSE || e == TS_ENGINE_GPU || e == TS_ENGINE_GPU_NAIVE) continue;
        ts_scorer_options o;
        ts_scorer_options_init(&o);
        o.engine = (ts_engine)e;
        o.n_threads = 2;
        o.packed_columns = 1;
        o.sample = &rf[0][0];
        o.sample_rows = N_ROWS;
        o.sample_stride = 4;
        ts_scorer *s = NULL;
        ts_status st = ts_scorer_create(m, &o, &s, &err);
        CHECK_MSG(st == TS_OK, "engine %s, packed: %s", ts_engine_name((ts_engine)e), err.message);
        if (st != TS_OK) continue;
        CHECK(ts_scorer_n_features(s) == 4);
        double out[N_ROWS];
        CHECK(ts_scorer_score(s, &rf[0][0], N_ROWS, 4, 4, out, &err) == TS_OK);
        for (int r = 0; r < N_ROWS; r++) CHECK_SAME_DOUBLE(out[r], want[r]);
        CHECK(ts_scorer_score_f64(s, &rd[0][0], N_ROWS, 4, 4, out, &err) == TS_OK);
        for (int r = 0; r < N_ROWS; r++) CHECK_SAME_DOUBLE(out[r], want[r]);
        CHECK(ts_scorer_score(s, &rf[0][0], N_ROWS, 3, 3, out, &err) == TS_ERR_SHAPE); /* 4 columns */
        ts_scorer_free(s);
    }
    ts_model_info info;
    CHECK(ts_model_get_info(m, &info, NULL) == TS_OK && info.n_features == WIDE); /* not renumbered */
    free(ids);
}

static void test_packed_columns(void) {
    ts_model *m = load();
    if (!m) return;
    check_packed(m, expected);
    ts_model_free(m);
    /* tree 2 as a numerical split on the same column: no category set, so the model
     * takes the plain path */
    char text[sizeof model_text];
    memcpy(text, model_text, sizeof model_text);
    char *cat = strstr(text, "Tree=2\n");
    CHECK(cat != NULL);
    if (!cat) return;
    const char tail[] = "Tree=2\nnum_leaves=2\nnum_cat=0\nsplit_feature=16777001\nthreshold=1.5\ndecision_type=2\n"
                        "left_child=-1\nright_child=-2\nleaf_value=1 -2\n\nend of trees\n";
    CHECK((size_t)(cat - text) + sizeof tail <= sizeof text);
    memcpy(cat, tail, sizeof tail);
    ts_error err;
    ts_status st = ts_model_load_buffer(text, strlen(text), TS_FORMAT_LIGHTGBM, "wide-plain", &m, &err);
    CHECK_MSG(st == TS_OK, "%s", err.message);
    if (st != TS_OK) return;
    /* tree 2 is now x <= 1.5 on 16777001: rows 1.0 (left), 2.5 and 3.0 (right) */
    const double want[N_ROWS] = {0.25 + 0.125 + 1.0, 3.0 - 0.5 - 2.0, -1.5 + 0.125 - 2.0};
    check_packed(m, want);
    ts_model_free(m);
}

int main(void) {
    setenv("TREESCORE_WISDOM", "off", 1); /* the planner times, and remembers nothing */
    setenv("TREESCORE_PLAN_MS", "50", 1);
#ifdef SANITIZED
    /* a sanitizer build cannot run under RLIMIT_AS (its shadow memory): the same scores
     * are checked without the limit, which the release build's run enforces */
    printf("test_wide_model: sanitizer build, no address-space limit\n");
#else
    struct rlimit lim = {(rlim_t)2 << 30, (rlim_t)2 << 30};
    CHECK(setrlimit(RLIMIT_AS, &lim) == 0);
#endif
    fill_rows();
    if (xf && xd) {
        RUN_TEST(test_default_options);
        RUN_TEST(test_every_engine);
        RUN_TEST(test_renumber);
        RUN_TEST(test_packed_columns);
    }
    free(xf);
    free(xd);
    return check_summary("test_wide_model");
}
