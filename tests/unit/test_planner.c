/* test_planner.c: TS_ENGINE_AUTO's planner: rule, timing, the wisdom file, and exact scores whatever it picks. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "builder_trees.h"
#include "check.h"
#include "platform/config.h"
#include "scorer/planner.h"
#include "treescore.h"

#ifndef TS_TEST_DATA_DIR
#define TS_TEST_DATA_DIR "tests/data"
#endif

static char dir[] = "/tmp/ts_planner_XXXXXX";
static char wisdom[256];

static ts_scorer *make(const ts_model *m, ts_engine e, ts_plan plan, uint32_t batch) {
    ts_scorer_options o;
    ts_scorer_options_init(&o);
    o.engine = e;
    o.plan = plan;
    o.batch_hint = batch;
    o.n_threads = 1;
    ts_scorer *s = NULL;
    ts_error err;
    ts_status st = ts_scorer_create(m, &o, &s, &err);
    CHECK_MSG(st == TS_OK, "scorer: %s", err.message);
    return s;
}

/* Rows of the model's width: a mix of zeros, small counts and NaN. */
static float *rows(uint32_t n_rows, uint32_t width) {
    float *x = malloc((size_t)n_rows * width * sizeof *x);
    uint32_t z = 7;
    for (size_t i = 0; i < (size_t)n_rows * width; i++) {
        z = z * 1103515245u + 12345u;
        uint32_t r = (z >> 16) & 1023;
        x[i] = r < 20 ? NAN : (float)(r % 37) * 0.25f;
    }
    return x;
}

static void check_same_scores(const ts_model *m, ts_scorer *s) {
    ts_scorer *ref = make(m, TS_ENGINE_NAIVE, TS_PLAN_DEFAULT, 0);
    uint32_t w = ts_scorer_n_features(ref), n = 100;
    float *x = rows(n, w);
    double *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b);
    ts_error err;
    CHECK_STATUS(ts_scorer_score(s, x, n, w, w, a, &err), TS_OK);
    CHECK_STATUS(ts_scorer_score(ref, x, n, w, w, b, &err), TS_OK);
    CHECK(memcmp(a, b, n * sizeof *a) == 0);
    ts_scorer_free(ref);
    free(x);
    free(a);
    free(b);
}

/* The wisdom file's first line (with its newline), or "" when it has none. */
static void first_wisdom_line(char *line, size_t size) {
    FILE *f = fopen(wisdom, "r");
    line[0] = '\0';
    CHECK(f && fgets(line, (int)size, f));
    if (f) fclose(f);
}

static size_t count_lines(const char *path) {
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    size_t n = 0;
    for (int c; (c = fgetc(f)) != EOF;) n += c == '\n';
    fclose(f);
    return n;
}

static void test_rule(const ts_model *m) {
    ts_scorer *s = make(m, TS_ENGINE_AUTO, TS_PLAN_RULE, 0);
    CHECK(strstr(ts_scorer_plan_report(s), "rule of thumb") != NULL);
    CHECK(ts_scorer_engine(s) == (ts_cpu_isa() >= TS_ISA_AVX2 ? TS_ENGINE_VQS : TS_ENGINE_VPRED)); /* the rule below AVX2: vpred */
    ts_scorer_free(s);
    CHECK(count_lines(wisdom) == 0);
}

static void test_measure_then_wisdom(const ts_model *m) {
    ts_scorer *s = make(m, TS_ENGINE_AUTO, TS_PLAN_MEASURE, 200);
    const char *r = ts_scorer_plan_report(s);
    CHECK_MSG(strstr(r, "measured:") && strstr(r, "<- fastest") && strstr(r, "remembered in"), "report: %s", r);
    CHECK(ts_scorer_engine(s) != TS_ENGINE_AUTO);
    check_same_scores(m, s);
    ts_engine first = ts_scorer_engine(s);
    ts_scorer_free(s);
    CHECK(count_lines(wisdom) == 1);

    /* The same key: the wisdom file answers, nothing is timed or written. */
    s = make(m, TS_ENGINE_AUTO, TS_PLAN_DEFAULT, 200);
    CHECK_MSG(strncmp(ts_scorer_plan_report(s), "wisdom:", 7) == 0, "report: %s", ts_scorer_plan_report(s));
    CHECK(ts_scorer_engine(s) == first);
    check_same_scores(m, s);
    ts_scorer_free(s);
    CHECK(count_lines(wisdom) == 1);

    /* Another batch size is another key. */
    s = make(m, TS_ENGINE_AUTO, TS_PLAN_MEASURE, 1);
    CHECK(strstr(ts_scorer_plan_report(s), "measured: 1 synthetic rows") != NULL);
    ts_scorer_free(s);
    CHECK(count_lines(wisdom) == 2);
}

/* Lines that do not parse, or name an engine that does not exist, are ignored; a valid
 * later line for the key wins over an earlier one. */
static void test_wisdom_garbage(const ts_model *m) {
    char line[512];
    first_wisdom_line(line, sizeof line);
    char *name = strstr(line, " 200 1 ");
    CHECK(name != NULL);
    if (!name) return;
    /* replace the engine (third to last field, before SPLIT and US) with naive, then with
     * nonsense; a SPLIT other than 0 or 1 is refused too */
    for (int i = 0; i < 3; i++) *strrchr(line, ' ') = '\0';
    FILE *f = fopen(wisdom, "a");
    fprintf(f, "garbage line\n\ntreescore-wisdom-1 short\n%s naive 0 1.0\n%s warp-drive 0 0.1\n%s qs 7 0.1\n", line,
            line, line);
    fclose(f);
    ts_scorer *s = make(m, TS_ENGINE_AUTO, TS_PLAN_MEASURE, 200);
    CHECK_MSG(strstr(ts_scorer_plan_report(s), "wisdom:") != NULL, "report: %s", ts_scorer_plan_report(s));
    CHECK(ts_scorer_engine(s) == TS_ENGINE_NAIVE);
    ts_scorer_free(s);
}

/* An answer is tied to the candidates timed: a line whose candidate set (the field
 * before the engine) differs from today's, e.g. written before ifelse was compiled, is
 * not reused. */
static void test_wisdom_candidates(const ts_model *m) {
    char line[512];
    first_wisdom_line(line, sizeof line);
    char *fields[16];
    int n = 0;
    for (char *tok = strtok(line, " \n"); tok && n < 16; tok = strtok(NULL, " \n")) fields[n++] = tok;
    CHECK_MSG(n == 14 && strcmp(fields[0], "treescore-wisdom-4") == 0, "%d fields", n);
    if (n != 14) return;
    /* batch 333: only a line of another candidate set (bit 1 << 0 alone), so it is timed;
     * batch 334: a line of today's set, so it is recalled */
    FILE *f = fopen(wisdom, "a");
    for (int b = 333; b <= 334; b++) {
        for (int i = 0; i < 10; i++) fprintf(f, "%s ", i == 3 ? (b == 333 ? "333" : "334") : fields[i]);
        fprintf(f, "%s naive 0 1.0\n", b == 333 ? "1" : fields[10]);
    }
    fclose(f);
    ts_scorer *s = make(m, TS_ENGINE_AUTO, TS_PLAN_MEASURE, 333);
    CHECK_MSG(strstr(ts_scorer_plan_report(s), "measured:") != NULL, "report: %s", ts_scorer_plan_report(s));
    ts_scorer_free(s);
    s = make(m, TS_ENGINE_AUTO, TS_PLAN_MEASURE, 334);
    CHECK_MSG(strstr(ts_scorer_plan_report(s), "wisdom:") != NULL, "report: %s", ts_scorer_plan_report(s));
    CHECK(ts_scorer_engine(s) == TS_ENGINE_NAIVE);
    ts_scorer_free(s);
}

static void test_wisdom_off(const ts_model *m) {
    setenv("TREESCORE_WISDOM", "off", 1);
    tsr_config_reload();
    ts_scorer *s = make(m, TS_ENGINE_AUTO, TS_PLAN_MEASURE, 64);
    CHECK(strstr(ts_scorer_plan_report(s), "not remembered") != NULL);
    ts_scorer_free(s);
    setenv("TREESCORE_WISDOM", wisdom, 1);
    tsr_config_reload();
    /* An explicit engine says so. */
    s = make(m, TS_ENGINE_QS, TS_PLAN_DEFAULT, 0);
    CHECK(strcmp(ts_scorer_plan_report(s), "engine requested\n") == 0);
    ts_scorer_free(s);
    CHECK(strcmp(ts_scorer_plan_report(NULL), "no scorer") == 0);
}

/* Rows of the caller: used (and said so), keyed apart from synthetic ones; a sample
 * narrower than the model is refused. */
static void test_caller_sample(const ts_model *m) {
    ts_scorer *ref = make(m, TS_ENGINE_NAIVE, TS_PLAN_DEFAULT, 0);
    uint32_t w = ts_scorer_n_features(ref);
    ts_scorer_free(ref);
    float *x = rows(7, w + 3);
    ts_scorer_options o;
    ts_scorer_options_init(&o);
    o.plan = TS_PLAN_MEASURE;
    o.batch_hint = 50;
    o.n_threads = 1;
    o.sample = x;
    o.sample_rows = 7;
    o.sample_stride = w + 3;
    ts_scorer *s = NULL;
    ts_error err;
    size_t before = count_lines(wisdom);
    CHECK_STATUS(ts_scorer_create(m, &o, &s, &err), TS_OK);
    CHECK_MSG(strstr(ts_scorer_plan_report(s), "50 of the caller's rows") != NULL, "report: %s",
              ts_scorer_plan_report(s));
    check_same_scores(m, s);
    ts_scorer_free(s);
    CHECK(count_lines(wisdom) == before + 1);
    o.sample_stride = w - 1;
    CHECK_STATUS(ts_scorer_create(m, &o, &s, &err), TS_ERR_INVALID_ARGUMENT);
    CHECK(s == NULL && strstr(err.message, "sample") != NULL);
    free(x);
}

/* A bad sample (no rows, or rows narrower than the model) is refused by every scorer:
 * whatever the plan (TREESCORE_PLAN=rule once made it pass), the engine (rapid orders its
 * leaves by the sample: an explicit engine reads it too) and the model's shape (a model
 * with category sets or K outputs once ignored a sample of 0 rows that a plain model
 * refused). */
static void test_bad_sample_always(const ts_model *m) {
    ts_scorer *ref = make(m, TS_ENGINE_NAIVE, TS_PLAN_DEFAULT, 0);
    uint32_t w = ts_scorer_n_features(ref);
    ts_scorer_free(ref);
    float *x = rows(7, w);
    ts_error err;
    for (int plan = TS_PLAN_MEASURE; plan <= TS_PLAN_RULE; plan++) {
        ts_scorer_options o;
        ts_scorer_options_init(&o);
        o.plan = (ts_plan)plan;
        o.batch_hint = 50;
        o.n_threads = 1;
        o.sample = x;
        o.sample_rows = 7;
        o.sample_stride = w - 1;
        ts_scorer *s = (ts_scorer *)&o;
        CHECK_STATUS(ts_scorer_create(m, &o, &s, &err), TS_ERR_INVALID_ARGUMENT);
        CHECK(s == NULL && strstr(err.message, "sample") != NULL);
        o.sample_rows = 0;
        o.sample_stride = w;
        CHECK_STATUS(ts_scorer_create(m, &o, &s, &err), TS_ERR_INVALID_ARGUMENT);
        CHECK(s == NULL && strstr(err.message, "sample") != NULL);
        o.engine = TS_ENGINE_NAIVE; /* an explicit engine: refused the same */
        CHECK_STATUS(ts_scorer_create(m, &o, &s, &err), TS_ERR_INVALID_ARGUMENT);
        CHECK(s == NULL && strstr(err.message, "sample") != NULL);
        o.sample_rows = 7; /* a good one: taken */
        CHECK_STATUS(ts_scorer_create(m, &o, &s, &err), TS_OK);
        ts_scorer_free(s);
    }
    /* a model with a category set (the general path) */
    ts_model_builder *b = NULL;
    ts_model *cm = NULL;
    CHECK_STATUS(ts_model_builder_create(2, 2, &b, &err), TS_OK);
    const int64_t L[3] = {1, -1, -1}, R[3] = {2, -1, -1}, F[3] = {1, 0, 0}, CS[3] = {0, -1, -1};
    const double T[3] = {0, 0, 0}, V[3] = {0, 1.0, 2.0};
    const uint8_t C[3] = {TS_CMP_IN, 0, 0};
    const uint32_t words[1] = {0x6};
    ts_tree_arrays a = tb_arrays(3, L, R, F, T, V);
    tb_one_category_set(&a, C, CS, words);
    CHECK_STATUS(ts_model_builder_add_tree(b, &a, &err), TS_OK);
    CHECK_STATUS(ts_model_builder_finish(b, &cm, &err), TS_OK);
    ts_model_builder_free(b);
    ts_scorer_options o;
    ts_scorer_options_init(&o);
    o.plan = TS_PLAN_MEASURE;
    o.sample = x;
    o.sample_rows = 0;
    o.sample_stride = 2;
    ts_scorer *s = NULL;
    CHECK_STATUS(ts_scorer_create(cm, &o, &s, &err), TS_ERR_INVALID_ARGUMENT);
    CHECK(s == NULL);
    o.sample_rows = 7;
    CHECK_STATUS(ts_scorer_create(cm, &o, &s, &err), TS_OK);
    ts_scorer_free(s);
    ts_model_free(cm);
    free(x);
}

/* The default (batch_hint 0): an engine per range of rows per call, the table in the
 * report, one wisdom line per range, and the same bits as naive for every batch size
 * 1..300 on 1 to 4 threads whichever engine each call uses. */
static void test_ranges(const ts_model *m) {
    ts_scorer *ref = make(m, TS_ENGINE_NAIVE, TS_PLAN_DEFAULT, 0);
    uint32_t w = ts_scorer_n_features(ref), n = 300;
    float *x = rows(n, w);
    double *want = malloc(n * sizeof *want), *got = malloc(n * sizeof *got);
    ts_error err;
    CHECK_STATUS(ts_scorer_score(ref, x, n, w, w, want, &err), TS_OK);
    size_t before = count_lines(wisdom);
    for (ts_plan plan = TS_PLAN_MEASURE; plan <= TS_PLAN_RULE; plan++)
        for (unsigned threads = 1; threads <= 4; threads++) {
            ts_scorer_options o;
            ts_scorer_options_init(&o);
            o.plan = plan;
            o.n_threads = threads;
            ts_scorer *s = NULL;
            CHECK_STATUS(ts_scorer_create(m, &o, &s, &err), TS_OK);
            if (!s) continue;
            const char *r = ts_scorer_plan_report(s);
            CHECK_MSG(strstr(r, "plan: rows per call -> engine\n") && strstr(r, "\n  1 ") && strstr(r, "\n  2-5 ") &&
                          strstr(r, "\n  6-7 ") && strstr(r, "\n  8-15 ") && strstr(r, "\n  16 ") && strstr(r, "\n  17-23 ") && strstr(r, "\n  24-31 ") &&
                          strstr(r, "\n  32-63 ") && strstr(r, "\n  64-127 ") &&
                          strstr(r, "\n  128+ "),
                      "report: %s", r);
            CHECK(ts_scorer_engine_for(s, 1000) == ts_scorer_engine(s));
            for (uint32_t b = 1; b <= n; b++) {
                memset(got, 0, n * sizeof *got);
                for (uint32_t i = 0; i < n; i += b) {
                    uint32_t k = n - i < b ? n - i : b;
                    CHECK_STATUS(ts_scorer_score(s, x + (size_t)i * w, k, w, w, got + i, &err), TS_OK);
                }
                CHECK_MSG(memcmp(got, want, n * sizeof *got) == 0, "batch %u, %u threads, engine %s", b, threads,
                          ts_engine_name(ts_scorer_engine_for(s, b)));
            }
            ts_scorer_free(s);
        }
    /* measured on 1 to 4 threads: TSP_RANGES (10) ranges each, once (then the wisdom file answers);
     * batch 1 on 1 thread was remembered by test_measure_then_wisdom */
    CHECK_MSG(count_lines(wisdom) == before + 4 * TSP_RANGES - 1, "%zu lines, %zu before", count_lines(wisdom), before);
    /* batch_hint: one range, one engine for every call */
    ts_scorer *s = make(m, TS_ENGINE_AUTO, TS_PLAN_MEASURE, 5);
    CHECK(strstr(ts_scorer_plan_report(s), "batch_hint: one engine for every call") != NULL);
    for (size_t b = 1; b <= 1000; b *= 10) CHECK(ts_scorer_engine_for(s, b) == ts_scorer_engine(s));
    ts_scorer_free(s);
    ts_scorer_free(ref);
    free(x);
    free(want);
    free(got);
}

/* A row's trees split across threads (TREESCORE_SPLIT_TREES=1 forces it wherever the
 * engine can): the same bits as the whole row on one thread, for every engine offering
 * it, every thread count 1..8, rows 1..9 per call (fewer than threads: split), models
 * with and without a base score, one-leaf trees included (xgb dart). */
static uint32_t ts_model_n_trees_(const ts_model *m) {
    ts_model_info i;
    ts_model_get_info(m, &i, NULL);
    return i.n_trees;
}

static void test_split_trees(void) {
    const char *models[] = {"lgb_small_lambdarank.txt", "xgb_small_dart.json", "xgb_small_logistic.json",
                            "rankeval_LightGBM.model.txt"};
    setenv("TREESCORE_SPLIT_TREES", "1", 1);
    tsr_config_reload();
    for (size_t mi = 0; mi < sizeof models / sizeof models[0]; mi++) {
        char path[512];
        snprintf(path, sizeof path, "%s/models/%s", TS_TEST_DATA_DIR, models[mi]);
        ts_model *m = NULL;
        ts_error err;
        CHECK_STATUS(ts_model_load_file(path, TS_FORMAT_AUTO, &m, &err), TS_OK);
        if (!m) continue;
        ts_scorer *ref = make(m, TS_ENGINE_NAIVE, TS_PLAN_DEFAULT, 0);
        uint32_t w = ts_scorer_n_features(ref), n = 9;
        float *x = rows(n, w);
        double want[9], got[9];
        CHECK_STATUS(ts_scorer_score(ref, x, n, w, w, want, &err), TS_OK);
        const ts_engine engines[] = {TS_ENGINE_NAIVE, TS_ENGINE_QS, TS_ENGINE_VQS, TS_ENGINE_AUTO};
        for (size_t e = 0; e < sizeof engines / sizeof engines[0]; e++)
            for (unsigned threads = 1; threads <= 8; threads++) {
                ts_scorer_options o;
                ts_scorer_options_init(&o);
                o.engine = engines[e];
                o.n_threads = threads;
                o.tau = engines[e] == TS_ENGINE_QS || engines[e] == TS_ENGINE_VQS ? 3 : 0; /* several groups */
                ts_scorer *s = NULL;
                CHECK_STATUS(ts_scorer_create(m, &o, &s, &err), TS_OK);
                if (!s) continue;
                if (engines[e] != TS_ENGINE_AUTO && ts_model_n_trees_(m) > 3) /* qs: several blocks of 3 */
                    CHECK_MSG(ts_scorer_splits_trees(s, 1) == (threads > 1),
                              "%s %s %u", models[mi], ts_engine_name(engines[e]), threads);
                for (uint32_t b = 1; b <= n; b++) {
                    memset(got, 0, sizeof got);
                    for (uint32_t i = 0; i < n; i += b) {
                        uint32_t k = n - i < b ? n - i : b;
                        CHECK_STATUS(ts_scorer_score(s, x + (size_t)i * w, k, w, w, got + i, &err), TS_OK);
                    }
                    CHECK_MSG(memcmp(got, want, sizeof got) == 0, "%s: engine %s, %u threads, batch %u", models[mi],
                              ts_engine_name(engines[e]), threads, b);
                }
                ts_scorer_free(s);
            }
        ts_scorer_free(ref);
        free(x);
        ts_model_free(m);
    }
    unsetenv("TREESCORE_SPLIT_TREES");
    tsr_config_reload();
}

static void test_bad_plan(const ts_model *m) {
    ts_scorer_options o;
    ts_scorer_options_init(&o);
    o.plan = (ts_plan)7;
    ts_scorer *s = NULL;
    ts_error err;
    CHECK_STATUS(ts_scorer_create(m, &o, &s, &err), TS_ERR_INVALID_ARGUMENT);
    CHECK(s == NULL && strstr(err.message, "plan") != NULL);
}

/* The ranges' table: tsp_range_of puts every row count in the range tsp_range_first
 * says, and each range's timed batch in its own range. */
static void test_range_table(void) {
    CHECK(tsp_range_first[0] == 1);
    for (size_t n = 1; n <= 300; n++) {
        unsigned r = tsp_range_of(n);
        CHECK_MSG(r < TSP_RANGES && tsp_range_first[r] <= n && (r + 1 == TSP_RANGES || n < tsp_range_first[r + 1]),
                  "%zu rows: range %u", n, r);
    }
    for (unsigned r = 0; r < TSP_RANGES; r++) CHECK_MSG(tsp_range_of(tsp_range_batch[r]) == r, "range %u", r);
}

/* A call that splits its rows' trees across the threads runs the one-row range's
 * engine (ts_scorer_score: pick[0]), so that is the engine ts_scorer_engine_for names
 * for it: it named the call's own range's engine instead (32 rows on 64 threads:
 * "rapid" while trees-simd ran). A forest of 200 trees x 31 splits, the rule plan,
 * splitting forced by the test knob. */
static void test_split_engine_for(void) {
    ts_model *m = tb_complete_forest(200, 31, 20, 12345);
    ts_error err;
    if (!m) return;
    setenv("TREESCORE_SPLIT_TREES", "1", 1);
    tsr_config_reload();
    ts_scorer_options o;
    ts_scorer_options_init(&o);
    o.plan = TS_PLAN_RULE;
    o.n_threads = 64;
    ts_scorer *s = NULL;
    CHECK_STATUS(ts_scorer_create(m, &o, &s, &err), TS_OK);
    for (size_t n = 1; s && n <= 100; n++)
        if (ts_scorer_splits_trees(s, n))
            CHECK_MSG(ts_scorer_engine_for(s, n) == ts_scorer_engine_for(s, 1), "%zu rows split with %s but "
                      "ts_scorer_engine_for says %s", n, ts_engine_name(ts_scorer_engine_for(s, 1)),
                      ts_engine_name(ts_scorer_engine_for(s, n)));
    ts_scorer_free(s);
    ts_model_free(m);
    unsetenv("TREESCORE_SPLIT_TREES");
    tsr_config_reload();
}

/* A scorer of more threads than CPUs splits a call's trees only below the CPU count
 * (and over that many threads): past it the threads would take turns on the cores (64
 * threads on 2 CPUs, 63 rows of a 20,000-tree model: 330 us/row against 42). qs on a
 * model of 207,900 nodes, which the rule splits. */
static void test_split_capped_at_cpus(void) {
    ts_model *m = tb_complete_forest(3300, 63, 16, 777);
    ts_error err;
    if (!m) return;
    unsigned cpus = ts_cpu_count();
    ts_scorer_options o;
    ts_scorer_options_init(&o);
    o.engine = TS_ENGINE_QS;
    o.n_threads = 4 * cpus + 8;
    ts_scorer *s = NULL;
    CHECK_STATUS(ts_scorer_create(m, &o, &s, &err), TS_OK);
    for (size_t n = 1; s && n <= o.n_threads; n++)
        CHECK_MSG(ts_scorer_splits_trees(s, n) == (cpus >= 2 && n < cpus), "%zu rows, %u threads, %u CPUs: %s", n,
                  o.n_threads, cpus, ts_scorer_splits_trees(s, n) ? "split" : "whole");
    ts_scorer_free(s);
    ts_model_free(m);
}

/* Forests of more than TSE_BITVECTOR_LEAVES leaves per tree: the planner times neither
 * QuickScorer's engines nor rapid (their prepare alone took seconds on a forest of
 * 4,096-leaf trees, and they lose there), the rule never picks rapid, and the scores stay
 * naive's. */
static void test_wide_forest_candidates(void) {
    ts_model *m = tb_complete_forest(4, 599, 20, 11); /* 600 leaves per tree */
    CHECK(m != NULL);
    if (!m) return;
    ts_scorer *s = make(m, TS_ENGINE_AUTO, TS_PLAN_MEASURE, 1000);
    const char *r = ts_scorer_plan_report(s);
    CHECK(strstr(r, "  qs ") == NULL && strstr(r, "  vqs ") == NULL && strstr(r, "  rapid ") == NULL);
    CHECK(strstr(r, "  deep ") != NULL);
    CHECK(strstr(r, "  naive ") == NULL && strstr(r, "  block-naive ") == NULL); /* deep walks their paths */
    check_same_scores(m, s);
    ts_scorer_free(s);
    for (uint32_t b = 1; b <= 64; b++) {
        char why[256];
        CHECK(tsp_plan_rule(m, ts_cpu_isa(), b, why, sizeof why) != TS_ENGINE_RAPID);
    }
    ts_model *narrow = tb_complete_forest(4, 255, 20, 11); /* 256 leaves: still timed */
    CHECK(narrow != NULL);
    if (narrow) {
        s = make(narrow, TS_ENGINE_AUTO, TS_PLAN_MEASURE, 1000);
        CHECK(strstr(ts_scorer_plan_report(s), "  qs ") != NULL);
        CHECK(strstr(ts_scorer_plan_report(s), "  naive ") != NULL && strstr(ts_scorer_plan_report(s), "  deep ") == NULL);
        ts_scorer_free(s);
    }
    ts_model_free(narrow);
    ts_model_free(m);
}

/* Contested ranges (scorer/trial.h), every range with a runner-up contested
 * (TREESCORE_PLAN_TRIAL=1): the report and the wisdom line name the runner-up, a scorer
 * planned from the wisdom file runs the trials too, every call's scores are naive's
 * bits during and after the trials (four threads calling at once), and each range ends
 * on one of its two engines. TREESCORE_PLAN_TRIAL=2: none. */
typedef struct trial_job {
    const ts_scorer *s;
    const float *x;
    const double *want;
    uint32_t w, n, b;
    int bad;
} trial_job;

static void *trial_worker(void *p) {
    trial_job *j = p;
    double *got = malloc(j->n * sizeof *got);
    ts_error err;
    for (int rep = 0; rep < 3 && got; rep++)
        for (uint32_t i = 0; i + j->b <= j->n; i += j->b)
            if (ts_scorer_score(j->s, j->x + (size_t)i * j->w, j->b, j->w, j->w, got + i, &err) != TS_OK ||
                memcmp(got + i, j->want + i, j->b * sizeof *got) != 0)
                j->bad++;
    free(got);
    return NULL;
}

static void test_trials(const ts_model *m) {
    setenv("TREESCORE_PLAN_TRIAL", "1", 1);
    tsr_config_reload();
    ts_scorer *ref = make(m, TS_ENGINE_NAIVE, TS_PLAN_DEFAULT, 0);
    const uint32_t w = ts_scorer_n_features(ref), n = 360;
    float *x = rows(n, w);
    double *want = malloc(n * sizeof *want);
    ts_error err;
    CHECK_STATUS(ts_scorer_score(ref, x, n, w, w, want, &err), TS_OK);
    const uint32_t sizes[] = {1, 3, 7, 11, 16, 20, 27, 45, 90, 180};
    for (int round = 0; round < 2; round++) { /* timed, then answered by the wisdom file */
        ts_scorer *s = make(m, TS_ENGINE_AUTO, round == 0 ? TS_PLAN_MEASURE : TS_PLAN_DEFAULT, 0);
        const char *r = ts_scorer_plan_report(s);
        CHECK_MSG(strstr(r, "(its first calls decide)") != NULL, "report: %s", r);
        CHECK_MSG(strstr(r, round == 0 ? "on synthetic rows: the range's first" : "the runner-up on synthetic rows"),
                  "report: %s", r);
        for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
            pthread_t th[4];
            trial_job jobs[4];
            for (int t = 0; t < 4; t++) {
                jobs[t] = (trial_job){s, x, want, w, n, sizes[k], 0};
                CHECK(pthread_create(&th[t], NULL, trial_worker, &jobs[t]) == 0);
            }
            for (int t = 0; t < 4; t++) {
                pthread_join(th[t], NULL);
                CHECK_MSG(jobs[t].bad == 0, "batch %u: %d calls differ from naive", sizes[k], jobs[t].bad);
            }
            CHECK(ts_scorer_engine_for(s, sizes[k]) != TS_ENGINE_AUTO);
        }
        ts_scorer_free(s);
    }
    FILE *f = fopen(wisdom, "r");
    char line[512];
    int alts = 0;
    while (f && fgets(line, sizeof line, f)) alts += strstr(line, " alt=") != NULL;
    if (f) fclose(f);
    CHECK_MSG(alts > 0, "no wisdom line names a runner-up");
    setenv("TREESCORE_PLAN_TRIAL", "2", 1);
    tsr_config_reload();
    ts_scorer *s = make(m, TS_ENGINE_AUTO, TS_PLAN_MEASURE, 0);
    CHECK_MSG(strstr(ts_scorer_plan_report(s), "first calls decide") == NULL, "report: %s", ts_scorer_plan_report(s));
    check_same_scores(m, s);
    ts_scorer_free(s);
    ts_scorer_free(ref);
    free(x);
    free(want);
}

/* A wisdom line's alt= field naming no other candidate engine is ignored, not the line. */
static void test_wisdom_alt_field(const ts_model *m) {
    char line[512];
    first_wisdom_line(line, sizeof line);
    char *nl = strchr(line, '\n');
    if (nl) *nl = '\0';
    char *alt = strstr(line, " alt=");
    if (alt) *alt = '\0';
    char *batch = strstr(line, " 200 1 ");
    CHECK(batch != NULL);
    if (!batch) return;
    /* the same key, the engine naive (in the candidate set), then two bad alt= fields */
    for (int i = 0; i < 3; i++) *strrchr(line, ' ') = '\0';
    FILE *f = fopen(wisdom, "a");
    fprintf(f, "%s naive 0 1.0 alt=warp-drive\n%s naive 0 1.0 alt=naive\n", line, line);
    fclose(f);
    ts_scorer *s = make(m, TS_ENGINE_AUTO, TS_PLAN_MEASURE, 200);
    const char *r = ts_scorer_plan_report(s);
    CHECK_MSG(strstr(r, "wisdom:") != NULL && strstr(r, "trial:") == NULL, "report: %s", r);
    CHECK(ts_scorer_engine(s) == TS_ENGINE_NAIVE);
    ts_scorer_free(s);
}

int main(void) {
    test_range_table();
    test_split_capped_at_cpus();
    CHECK(mkdtemp(dir) != NULL);
    snprintf(wisdom, sizeof wisdom, "%s/wisdom", dir);
    setenv("TREESCORE_WISDOM", wisdom, 1);
    setenv("TREESCORE_PLAN_MS", "20", 1);
    setenv("TREESCORE_PLAN_TRIAL", "2", 1); /* wisdom lines of 14 fields, one engine per range (test_trials: 1) */
    unsetenv("TREESCORE_PLAN");
    tsr_config_reload();
    ts_model *m = NULL;
    ts_error err;
    CHECK_STATUS(ts_model_load_file(TS_TEST_DATA_DIR "/models/lgb_small_lambdarank.txt", TS_FORMAT_AUTO, &m, &err),
                 TS_OK);
    if (m) {
        test_rule(m);
        test_measure_then_wisdom(m);
        test_wisdom_garbage(m);
        test_wisdom_candidates(m);
        test_wisdom_off(m);
        test_caller_sample(m);
        test_bad_sample_always(m);
        test_bad_plan(m);
        setenv("TREESCORE_PLAN_TRIAL", "1", 1); /* runners-up read from the wisdom file; the ranges' calls run their trials */
        tsr_config_reload();
        test_wisdom_alt_field(m);
        test_ranges(m);
        test_trials(m);
    }
    test_split_trees();
    test_split_engine_for();
    test_wide_forest_candidates();
    ts_model_free(m);
    unlink(wisdom);
    rmdir(dir);
    return check_summary("test_planner");
}
