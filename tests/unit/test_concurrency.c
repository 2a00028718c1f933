/* test_concurrency.c: one scorer used by many threads at once gives every thread the single-thread scores. */
#include <pthread.h>
#include <stdlib.h>

#include "check.h"
#include "platform/config.h"
#include "treescore.h"

#define N_THREADS 8
#define N_ROWS 512
#define ROUNDS 20

typedef struct job {
    const ts_scorer *scorer;
    const float *x;
    size_t cols;
    const double *expected;
    int mismatches;
} job;

static void *worker(void *p) {
    job *j = p;
    double out[N_ROWS];
    ts_error err;
    for (int r = 0; r < ROUNDS; r++) {
        /* different batch sizes per round, so threads are at different places */
        size_t batch = r % 3 == 0 ? 1 + (size_t)r % 7 : 1 + (size_t)(r * 37) % N_ROWS;
        for (size_t i = 0; i < N_ROWS; i += batch) {
            size_t n = N_ROWS - i < batch ? N_ROWS - i : batch;
            if (ts_scorer_score(j->scorer, j->x + i * j->cols, n, j->cols, j->cols, out + i, &err) != TS_OK)
                j->mismatches++;
        }
        if (memcmp(out, j->expected, sizeof out) != 0) j->mismatches++;
    }
    return NULL;
}

static void run_engine(const ts_model *m, ts_engine engine, unsigned n_threads) {
    ts_model_info info;
    ts_model_get_info(m, &info, NULL);
    size_t cols = info.n_features;
    float *x = malloc(N_ROWS * cols * sizeof *x);
    double *expected = malloc(N_ROWS * sizeof *expected);
    unsigned seed = 12345;
    for (size_t i = 0; i < N_ROWS * cols; i++) {
        seed = seed * 1103515245u + 12345u;
        x[i] = (seed >> 16) % 17 == 0 ? NAN : (float)((seed >> 8) % 2000) / 100.0f - 5.0f;
    }
    ts_scorer_options o;
    ts_scorer_options_init(&o);
    o.engine = engine;
    o.n_threads = n_threads;
    ts_scorer *s = NULL;
    ts_error err;
    CHECK_STATUS(ts_scorer_create(m, &o, &s, &err), TS_OK);
    if (s) {
        CHECK_STATUS(ts_scorer_score(s, x, N_ROWS, cols, cols, expected, &err), TS_OK);
        pthread_t th[N_THREADS];
        job jobs[N_THREADS];
        for (int t = 0; t < N_THREADS; t++) {
            jobs[t] = (job){s, x, cols, expected, 0};
            CHECK(pthread_create(&th[t], NULL, worker, &jobs[t]) == 0);
        }
        for (int t = 0; t < N_THREADS; t++) {
            pthread_join(th[t], NULL);
            CHECK_MSG(jobs[t].mismatches == 0, "engine %s thread %d: %d mismatching rounds", ts_engine_name(engine), t,
                      jobs[t].mismatches);
        }
    }
    ts_scorer_free(s);
    free(x);
    free(expected);
}

static void test_shared_scorer(void) {
    ts_model *m = NULL;
    ts_error err;
    CHECK_STATUS(ts_model_load_file(TS_TEST_DATA_DIR "/models/lgb_small_lambdarank.txt", TS_FORMAT_AUTO, &m, &err),
                 TS_OK);
    if (!m) return;
    /* Many callers at once, each call also split over the shared pool (tiny chunks, set
     * in main): the pool must serve concurrent batches without mixing them up. */
    for (unsigned threads = 1; threads <= 4; threads += 3) {
        run_engine(m, TS_ENGINE_NAIVE, threads);
        run_engine(m, TS_ENGINE_QS, threads);
        run_engine(m, TS_ENGINE_VQS, threads);
        run_engine(m, TS_ENGINE_RAPID, threads);
        /* auto: an engine per range of rows per call, picked per call */
        run_engine(m, TS_ENGINE_AUTO, threads);
    }
    ts_model_free(m);
}

/* The engines on each thread count, many callers at once, with test knob `knob` at 1. */
static void run_with_knob(const char *knob, const ts_engine *engines, size_t n_engines, const unsigned *threads,
                          size_t n_threads) {
    ts_model *m = NULL;
    ts_error err;
    CHECK_STATUS(ts_model_load_file(TS_TEST_DATA_DIR "/models/lgb_small_lambdarank.txt", TS_FORMAT_AUTO, &m, &err),
                 TS_OK);
    if (!m) return;
    setenv(knob, "1", 1);
    tsr_config_reload();
    for (size_t t = 0; t < n_threads; t++)
        for (size_t e = 0; e < n_engines; e++) run_engine(m, engines[e], threads[t]);
    unsetenv(knob);
    tsr_config_reload();
    ts_model_free(m);
}

/* Calls of fewer rows than threads split each row's trees across the pool (forced by
 * the test knob), from many callers at once: the same bits as one thread. */
static void test_split_trees(void) {
    static const ts_engine engines[] = {TS_ENGINE_NAIVE, TS_ENGINE_VQS, TS_ENGINE_AUTO};
    static const unsigned threads[] = {2, 4, 8};
    run_with_knob("TREESCORE_SPLIT_TREES", engines, 3, threads, 3);
}

/* Contested ranges (scorer/trial.h: TREESCORE_PLAN_TRIAL=1 contests every range with a
 * runner-up): their trials run while many callers score at once (each call takes its
 * turn by an atomic count, the last timed call decides): the same bits throughout. */
static void test_trials(void) {
    static const ts_engine engines[] = {TS_ENGINE_AUTO};
    static const unsigned threads[] = {1, 4};
    run_with_knob("TREESCORE_PLAN_TRIAL", engines, 1, threads, 2);
}

int main(void) {
    setenv("TREESCORE_CHUNK_ROWS", "3", 1);
    tsr_config_reload();
    setenv("TREESCORE_WISDOM", "off", 1);
    setenv("TREESCORE_PLAN_MS", "10", 1);
    tsr_config_reload();
    RUN_TEST(test_shared_scorer);
    RUN_TEST(test_split_trees);
    RUN_TEST(test_trials);
    return check_summary("test_concurrency");
}
