/* test_planner.c: TS_ENGINE_AUTO's planner: rule, timing, the wisdom file, and exact scores whatever it picks. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "platform/config.h"
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
    CHECK(ts_scorer_engine(s) == (ts_cpu_isa() > TS_ISA_SCALAR ? TS_ENGINE_VQS : TS_ENGINE_QS));
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
    FILE *f = fopen(wisdom, "r");
    char line[512] = {0};
    CHECK(f && fgets(line, sizeof line, f));
    if (f) fclose(f);
    char *name = strstr(line, " 200 1 ");
    CHECK(name != NULL);
    if (!name) return;
    /* replace the engine (second to last field) with naive, then with nonsense */
    char *last = strrchr(line, ' ');
    *last = '\0';
    char *eng = strrchr(line, ' ');
    *eng = '\0';
    f = fopen(wisdom, "a");
    fprintf(f, "garbage line\n\ntreescore-wisdom-1 short\n%s naive 1.0\n%s warp-drive 0.1\n", line, line);
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
    FILE *f = fopen(wisdom, "r");
    char line[512] = {0};
    CHECK(f && fgets(line, sizeof line, f));
    if (f) fclose(f);
    char *fields[16];
    int n = 0;
    for (char *tok = strtok(line, " \n"); tok && n < 16; tok = strtok(NULL, " \n")) fields[n++] = tok;
    CHECK_MSG(n == 13 && strcmp(fields[0], "treescore-wisdom-3") == 0, "%d fields", n);
    if (n != 13) return;
    /* batch 333: only a line of another candidate set (bit 1 << 0 alone), so it is timed;
     * batch 334: a line of today's set, so it is recalled */
    f = fopen(wisdom, "a");
    for (int b = 333; b <= 334; b++) {
        for (int i = 0; i < 10; i++) fprintf(f, "%s ", i == 3 ? (b == 333 ? "333" : "334") : fields[i]);
        fprintf(f, "%s naive 1.0\n", b == 333 ? "1" : fields[10]);
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

static void test_bad_plan(const ts_model *m) {
    ts_scorer_options o;
    ts_scorer_options_init(&o);
    o.plan = (ts_plan)7;
    ts_scorer *s = NULL;
    ts_error err;
    CHECK_STATUS(ts_scorer_create(m, &o, &s, &err), TS_ERR_INVALID_ARGUMENT);
    CHECK(s == NULL && strstr(err.message, "plan") != NULL);
}

int main(void) {
    CHECK(mkdtemp(dir) != NULL);
    snprintf(wisdom, sizeof wisdom, "%s/wisdom", dir);
    setenv("TREESCORE_WISDOM", wisdom, 1);
    setenv("TREESCORE_PLAN_MS", "20", 1);
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
        test_bad_plan(m);
    }
    ts_model_free(m);
    unlink(wisdom);
    rmdir(dir);
    return check_summary("test_planner");
}
