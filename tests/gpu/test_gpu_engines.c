/* test_gpu_engines.c: the engines gpu and gpu-naive through the public API. Where no
 * CUDA device can run them (a build without CUDA, or no GPU) both must refuse with
 * TS_ERR_ENGINE_UNAVAILABLE and say what is missing, and auto must never pick them;
 * on a GPU they must equal naive bit for bit: random forests with NaN and on-threshold
 * values, trees of 1 to 300 leaves, every batch size from 1 to 300 and large batches
 * (several slices of the pinned-buffer pipeline), row strides wider than the model. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../unit/random_forest.h"
#include "platform/config.h"

static int have_gpu;

static void score_with(const ts_model *m, ts_engine e, const float *x, size_t n, size_t cols, size_t stride,
                       double *out) {
    ts_scorer_options o;
    ts_scorer_options_init(&o);
    o.engine = e;
    o.n_threads = 2;
    ts_scorer *s = NULL;
    ts_error err;
    CHECK_STATUS(ts_scorer_create(m, &o, &s, &err), TS_OK);
    if (!s) return;
    CHECK(ts_scorer_engine(s) == e);
    CHECK_STATUS(ts_scorer_score(s, x, n, cols, stride, out, &err), TS_OK);
    ts_scorer_free(s);
}

static void check_model(const ts_model *m, size_t n, const char *what) {
    size_t cols = m->n_features, stride = cols + 3;
    float *x = malloc((n * stride + 1) * sizeof *x);
    double *ref = malloc((n + 1) * sizeof *ref), *got = malloc((n + 1) * sizeof *got);
    for (size_t i = 0; i < n * stride; i++) x[i] = random_value();
    score_with(m, TS_ENGINE_NAIVE, x, n, cols, stride, ref);
    static const ts_engine gpus[] = {TS_ENGINE_GPU_NAIVE, TS_ENGINE_GPU};
    for (int g = 0; g < 2; g++) {
        /* every prefix of the batch up to 300 rows, then the whole batch */
        for (size_t k = 1; k <= n; k = k < 300 ? k + 1 : (k == n ? n + 1 : n)) {
            for (size_t r = 0; r < k; r++) got[r] = -1.0;
            score_with(m, gpus[g], x, k, cols, stride, got);
            size_t bad = 0;
            for (size_t r = 0; r < k; r++)
                if (memcmp(&got[r], &ref[r], sizeof got[r]) != 0 && bad++ < 3)
                    fprintf(stderr, "%s, %s, %zu rows: row %zu: %.17g != naive %.17g\n", what, ts_engine_name(gpus[g]),
                            k, r, got[r], ref[r]);
            CHECK_MSG(bad == 0, "%s, %s, %zu rows: %zu differ", what, ts_engine_name(gpus[g]), k, bad);
            if (k == n) break;
        }
    }
    free(x), free(ref), free(got);
}

static void test_refused_or_exact(void) {
    char desc[256];
    have_gpu = ts_gpu_info(desc, sizeof desc);
    fprintf(stderr, "gpu: %s\n", desc);
    CHECK(strlen(desc) > 0);
    n_features = 14;
    ts_model *m = random_model(20, 1, 70, 4);
    if (!have_gpu) {
        CHECK(strncmp(desc, "none: ", 6) == 0);
        static const ts_engine gpus[] = {TS_ENGINE_GPU_NAIVE, TS_ENGINE_GPU};
        for (int g = 0; g < 2; g++) {
            ts_scorer_options o;
            ts_scorer_options_init(&o);
            o.engine = gpus[g];
            ts_scorer *s = NULL;
            ts_error err;
            CHECK_STATUS(ts_scorer_create(m, &o, &s, &err), TS_ERR_ENGINE_UNAVAILABLE);
            CHECK(s == NULL);
            CHECK_MSG(strstr(err.message, ts_engine_name(gpus[g])) &&
                          (strstr(err.message, "needs CUDA") || strstr(err.message, "needs a CUDA device")),
                      "message: %s", err.message);
        }
        ts_model_free(m);
        return;
    }
    check_model(m, 300, "20 trees of 1..70 leaves");
    ts_model_free(m);
}

/* auto never times or picks a GPU engine (plan_candidate NULL), GPU or not. */
static void test_auto_never_gpu(void) {
    n_features = 8;
    ts_model *m = random_model(10, 2, 16, 0);
    for (uint32_t batch = 1; batch <= 1000; batch *= 10) {
        ts_scorer_options o;
        ts_scorer_options_init(&o);
        o.batch_hint = batch;
        ts_scorer *s = NULL;
        ts_error err;
        CHECK_STATUS(ts_scorer_create(m, &o, &s, &err), TS_OK);
        if (!s) continue;
        for (size_t n = 1; n <= 4096; n *= 4) {
            ts_engine e = ts_scorer_engine_for(s, n);
            CHECK(e != TS_ENGINE_GPU && e != TS_ENGINE_GPU_NAIVE);
        }
        ts_scorer_free(s);
    }
    ts_model_free(m);
}

static void test_on_gpu(void) {
    if (!have_gpu) return;
    n_features = 20;
    ts_model *m = tsm_model_new(TS_FORMAT_LIGHTGBM);
    tsm_node *nodes = malloc(300 * sizeof *nodes);
    double *leaves = malloc(300 * sizeof *leaves);
    for (uint32_t L = 1; L <= 300; L++) {
        random_tree(L, L % 3 == 0, nodes, leaves);
        ts_error err;
        CHECK_STATUS(tsm_model_add_tree(m, L - 1, nodes, L, leaves, 1.0, &err), TS_OK);
    }
    m = finish_random_model(m, nodes, leaves);
    check_model(m, 1000, "trees of 1..300 leaves");
    ts_model_free(m);
    /* Large batches: several 8 MiB slices through the two streams. */
    n_features = 136;
    m = random_model(200, 2, 64, 0);
    check_model(m, 200003, "200 trees, 136 features");
    ts_model_free(m);
}

/* The same without the split launch (TREESCORE_GPU_NO_SPLIT=1: the default splits the
 * trees across blocks for launches below a full wave, then sums their exits in tree
 * order), and with the launch shapes forced to 32 and 512 threads per block. */
static void test_on_gpu_no_split_and_shapes(void) {
    if (!have_gpu) return;
    static const char *const knobs[][2] = {{"TREESCORE_GPU_NO_SPLIT", "1"},
                                           {"TREESCORE_GPU_THREADS", "32"},
                                           {"TREESCORE_GPU_THREADS", "512"}};
    for (size_t i = 0; i < sizeof knobs / sizeof knobs[0]; i++) {
        setenv(knobs[i][0], knobs[i][1], 1);
        tsr_config_reload();
        n_features = 30;
        ts_model *m = random_model(300, 1, 100, 0);
        check_model(m, 2000, knobs[i][0]);
        ts_model_free(m);
        unsetenv(knobs[i][0]);
        tsr_config_reload();
    }
}

int main(void) {
    RUN_TEST(test_refused_or_exact);
    RUN_TEST(test_auto_never_gpu);
    RUN_TEST(test_on_gpu);
    RUN_TEST(test_on_gpu_no_split_and_shapes);
    return check_summary("test_gpu_engines");
}
